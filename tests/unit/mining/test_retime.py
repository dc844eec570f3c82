"""Issue 36 item 1, session 12: the run's time again once a case has ended (``RunPlan.retime``) — the time spent so
far plus the calls still to come, each at what this session's own calls of its phase cost (design trials with the
local model's prefix reuse in them); with hand-made plans and fake solvers only (no timings are checked)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deltap.mining.plan import CasePlan, RunPlan, plan_time_line, trial_phase
from deltap.trials.pace import MIN_SPREAD, CallTime, Measurement, call_units
from deltap.trials.planning import Pace


def _case(cid: str, logged: dict[str, int] | None = None) -> CasePlan:
    return CasePlan(cid, 4, {"preflight": 2, "design": 10, "coalition": 2}, 4, 100, 500, 300.0, 0, logged or {})


def _flat(seconds: float, n: int = 8) -> Measurement:
    m = Measurement.of([CallTime(seconds)] * n, "fake", None, scaled=False)
    assert m is not None
    return m


def test_trial_kinds_map_to_the_plans_phases() -> None:
    assert [trial_phase(k) for k in ("preflight_none", "preflight_all", "design", "coalition", None)] == [
        "preflight", "preflight", "design", "coalition", "",
    ]  # fmt: skip


def test_the_time_again_is_the_time_spent_plus_the_calls_left_at_their_phases_pace() -> None:
    plan = RunPlan("fake", "exact", [_case("a"), _case("b"), _case("c", logged={"preflight": 2, "design": 3})])
    plan.pace = Pace((1.0, 1.0), "x", workers=1)
    trials, pre = _flat(2.0), _flat(10.0)
    # this session: a's preflight and 10 design calls (a ended), b's preflight only, c (resumed) one more trial
    made = [CallTime(1, kind="preflight_none", case="a"), CallTime(1, kind="preflight_all", case="a")]
    made += [CallTime(1, kind="design", case="a")] * 10 + [CallTime(1, kind="preflight_none", case="b")]
    made += [CallTime(1, kind="design", case="c")]
    r = plan.retime(100.0, made, {"a"}, trials, pre)
    # a: ended, its 2 coalition checks left; b: 1 preflight + 10 + 2 left, floor 4 - 1; c: 6 + 2 left, floor 0
    assert r.calls_left == (3, 2 + 13 + 8)
    t_lo, t_hi = trials.seconds_per_call()
    p_lo, p_hi = pre.seconds_per_call()
    assert t_hi == pytest.approx(2.0 * MIN_SPREAD) and p_hi == pytest.approx(10.0 * MIN_SPREAD)
    assert r.seconds[0] == pytest.approx(100.0 + 1 * p_lo + 2 * t_lo)  # b's floor: its preflight call, then trials
    assert r.seconds[1] == pytest.approx(100.0 + 1 * p_hi + 22 * t_hi)
    assert plan.retimed is r and plan.pace_lines() == [r.line()]
    line = r.line()
    assert line.startswith("       time 1:") and "(re-timed at 1:40 from 8 trials:" in line and len(line) <= 80
    # calls in flight: the time left is shared by the workers; a request limit bounds it from below
    plan.pace = Pace((1.0, 1.0), "x", workers=2, rpm=6.0)
    r2 = plan.retime(100.0, made, {"a"}, trials, pre)
    assert r2.seconds[0] == pytest.approx(100.0 + max((p_lo + 2 * t_lo) / 2, 60.0 * 3 / 6.0))
    assert r2.seconds[1] == pytest.approx(100.0 + max((p_hi + 22 * t_hi) / 2, 60.0 * 23 / 6.0))


def test_design_trials_take_their_own_measured_pace_scaled_to_each_cases_tokens() -> None:
    # the local model's prefix reuse: trials cost a third of what their tokens given say, preflight calls the full
    trials = Measurement.of([CallTime(call_units(300, 0) / 3, 300, 0)] * 8, "llama_cpp:x", 2, scaled=True)
    pre = Measurement.of([CallTime(call_units(n, 0), n, 0) for n in (100, 500)] * 4, "llama_cpp:x", 2, scaled=True)
    assert trials is not None and pre is not None
    big = CasePlan("big", 4, {"preflight": 0, "design": 10, "coalition": 0}, 0, 100, 1500, 900.0, 0)
    plan = RunPlan("llama_cpp:x", "exact", [big])
    r = plan.retime(0.0, [], set(), trials, pre)
    assert r.seconds[1] == pytest.approx(10 * trials.seconds_per_call(900.0, 0)[1])
    assert r.seconds[1] == pytest.approx(10 * call_units(900, 0) / 3 * MIN_SPREAD)  # three times the size, scaled


def test_the_spent_time_is_set_against_the_retimed_range_too() -> None:
    pvs = {"seconds": {"wall_since_plan": 212.0, "printed_min": 54.0, "printed_max": 386.0, "wall_in_range": "inside",
                       "retimed": {"at": 33.0, "printed_min": 150.0, "printed_max": 240.0, "wall_in_range": "inside"}}}  # fmt: skip
    line = plan_time_line(pvs)
    assert line == "time 3:32 from the plan on, inside its 0:54–6:26, inside 2:30–4:00 (re-timed at 0:33)"
    assert len("  " + str(line)) <= 90


def test_mine_retimes_once_at_the_first_cases_end(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine
    from tests.unit.mining.test_spend_plan_export import TokenSolver, _case, _truths

    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(40)])
    cfg = MiningConfig(budget=16, n_placebo=4, pilot=0)
    events: list[dict[str, Any]] = []
    res = mine([_case(c) for c in "abc"], corpus, TokenSolver(_truths(*"abc")), out=tmp_path / "run", config=cfg,
               progress=events.append)  # fmt: skip
    paced = [i for i, e in enumerate(events) if e.get("phase") == "pace"]
    assert len(paced) == 2  # the first calls, then once at the first case's end
    first_end = next(i for i, e in enumerate(events) if e.get("status") not in (None, "running", "preflight"))
    assert paced[1] == first_end + 1
    plan = events[paced[1]]["plan"]
    assert plan.retimed is not None and plan.retimed.cases_ended == 1 and plan.retimed.trials >= 6
    assert plan.pace_lines() == [plan.retimed.line()]
    seconds = res.run["plan_vs_spent"]["seconds"]
    assert seconds["retimed"]["wall_in_range"] in ("inside", "below", "above")
    assert seconds["retimed"]["calls_left"]["ceiling"] <= plan.ceiling()
    assert "re-timed at" in str(plan_time_line(res.run["plan_vs_spent"]))
