"""The mining progress display: calls against a ceiling that is really spent, an honest rate and time left, whole
case ids, and every line inside 80 columns."""

from __future__ import annotations

import io

import pytest

from deltap.mining.config import MiningConfig
from deltap.mining.engine import mine
from deltap.mining.progress import CallPlan, MiningProgress, planned_calls


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _event(
    case: str, index: int, trials: int, calls: int, status: str = "running", open_: int = 3, budget: int = 20
) -> dict:
    return {
        "case_id": case,
        "case_index": index,
        "cases": 2,
        "trials": trials,
        "budget": budget,
        "open": open_,
        "calls": calls,
        "status": status,
    }


def test_planned_calls_is_preflight_trials_and_coalition() -> None:
    # A stochastic solver: `preflight` calls with no document and with all; coalition checks stop at twice
    # verify_trials (two coalitions' worth); the confirming subsets are design trials inside the budget.
    plan = planned_calls(MiningConfig(budget=25, preflight=2, verify_trials=4))
    assert plan == CallPlan(preflight=4, design=25, coalition=8)
    assert plan.per_case == 37
    assert plan.describe() == "≤37 solver calls (4 preflight, ≤25 trials, ≤8 coalition check)"
    assert planned_calls(MiningConfig(budget=25, preflight=2, coalitions=False)).per_case == 29
    # A deterministic solver never asks a prompt twice: one preflight call each, one call per coalition check.
    det = planned_calls(MiningConfig(budget=25, preflight=2, verify_trials=4), deterministic=True)
    assert det == CallPlan(preflight=2, design=25, coalition=4)
    assert det.describe() == "≤31 solver calls (2 preflight, ≤25 trials, ≤4 coalition check)"


def test_planned_calls_bounds_what_mine_really_spends() -> None:
    from deltap.cases import Case, CheckerSpec
    from deltap.documents import Corpus, Document
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

    docs = [Document(f"d{i:02d}", f"text {i}") for i in range(30)]
    cases = [
        Case(
            f"c{j}",
            f"question {j}",
            gold_doc_ids=("d00", "d01"),
            reference_answer=f"ans-c{j}",
            checker=CheckerSpec("string_match", {"answers": [f"ans-c{j}"]}),
        )
        for j in range(3)
    ]
    truths = {c.case_id: SimulatedTruth(0.2, {"d00": 0.6, "d01": 0.5}) for c in cases}
    for det in (False, True):
        cfg = MiningConfig(budget=24, preflight=2, verify_trials=4, n_placebo=3, seed=3)
        solver = SimulatedSolver(
            truths, answers={c.case_id: f"ans-{c.case_id}" for c in cases}, seed=1, deterministic=det
        )
        res = mine(cases, Corpus(docs), solver, config=cfg)
        plan = planned_calls(cfg, deterministic=det)
        for pair in res.dataset.pairs:
            kinds = pair["metadata"]["calls_by_kind"]
            assert kinds["preflight"] <= plan.preflight and kinds["design"] <= plan.design
            assert kinds["coalition"] <= plan.coalition and pair["metadata"]["calls"] <= plan.per_case


def test_ceiling_shrinks_when_a_case_stops_early_and_ends_at_the_calls_made() -> None:
    clock = Clock()
    cfg = MiningConfig(budget=20, preflight=2, verify_trials=4)
    bar = MiningProgress(2, enabled=False, config=cfg, clock=clock)
    with bar:
        assert bar.ceiling() == 2 * (4 + 20 + 8)  # nothing spent yet: the whole plan
        bar(_event("s:a", 0, 0, 0, status="preflight"))
        bar(_event("s:a", 0, 8, 12))
        assert bar.ceiling() == 12 + 12 + (4 + 20) + 2 * 8
        bar(_event("s:a", 0, 12, 16, open_=2))
        assert bar.lines()[-1].endswith("trials 12 of ≤20, 2 candidates undecided")
        bar(_event("s:a", 0, 12, 16, status="budget_exhausted", open_=0))  # stopped at 12 of 20 trials
        assert "2 candidates undecided" in bar.lines()[-1]  # the final event's open=0 is not "all decided"
        assert bar.ceiling() == 16 + (4 + 20) + 2 * 8
        bar(_event("s:b", 1, 0, 16, status="preflight"))
        bar(_event("s:b", 1, 20, 40, status="budget_exhausted", open_=0))
        assert bar.phase == "dataset" and bar.ceiling() == 40 + 2 * 8
        bar({"phase": "coalition", "case_id": "s:a", "calls": 44})
        bar({"phase": "coalition", "case_id": "s:b", "calls": 44})  # b had nothing to verify
        assert bar.ceiling() == bar.calls == 44
    assert bar.phase == "done" and "44 (done)" in bar.lines()[0]


def test_rate_and_time_left_come_from_this_run() -> None:
    clock = Clock()
    bar = MiningProgress(2, enabled=False, config=MiningConfig(budget=20, preflight=2, verify_trials=4), clock=clock)
    with bar:
        assert bar.seconds_per_call() is None and bar.seconds_left() is None
        assert "after the first calls" in "\n".join(bar.lines())
        clock.now += 6.0
        bar(_event("s:a", 0, 8, 12))
        assert bar.seconds_per_call() == pytest.approx(0.5)
        assert bar.seconds_left() == pytest.approx(0.5 * (bar.ceiling() - 12))
        text = "\n".join(bar.lines())
        assert "0.50 s/call" in text and "≤0:26 left" in text  # 0.5 s × 52 calls at most


def test_lines_fit_80_columns_and_never_cut_the_case_id() -> None:
    from rich.console import Console

    long_id = "stdlib:" + "json_dumps_with_indent_and_sorted_keys_question_" * 2
    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=False, color_system=None)
    bar = MiningProgress(2, enabled=True, console=console, config=MiningConfig(budget=20), clock=Clock())
    with bar:
        bar(_event(long_id, 0, 8, 12, open_=5))
        lines = [ln for ln in bar.lines() if long_id not in ln]
        assert all(len(ln) <= 80 for ln in lines), lines
        start = len(buf.getvalue())
        console.print(bar)
        shown = buf.getvalue()[start:]
    assert all(len(ln) <= 80 for ln in shown.splitlines())
    assert long_id in shown.replace("\n", "")  # wrapped, not cut with an ellipsis
    assert "…" not in shown
    assert "5 candidates undecided" in shown and "trials 8 of ≤20" in shown


def test_a_real_run_ends_with_the_calls_it_logged(tmp_path) -> None:
    from deltap.cases import Case, CheckerSpec
    from deltap.documents import Corpus, Document
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

    docs = [Document(f"d{i}", f"text number {i} " * 3) for i in range(12)]
    corpus = Corpus(docs)
    cases = [
        Case(f"c{i}", f"question {i}?", ("d0",), CheckerSpec("string_match", {"answers": ["x"]}), reference_answer="x")
        for i in range(2)
    ]
    truth = {c.case_id: SimulatedTruth(0.1, {"d0": 0.6}) for c in cases}
    solver = SimulatedSolver(truth, {c.case_id: "x" for c in cases}, outcome="pass", seed=1)
    cfg = MiningConfig(budget=24, first_look=8, batch=8, n_placebo=3, k=0, seed=2)
    events: list[dict] = []
    bar = MiningProgress(len(cases), enabled=False, config=cfg)
    with bar:
        result = mine(
            cases, corpus, solver, out=tmp_path / "run", config=cfg, progress=lambda e: (events.append(e), bar(e))
        )
    assert bar.calls == result.run["calls"] == result.run["calls_this_process"]
    assert bar.ceiling() == bar.calls  # the bar ends full, at the figure the report shows
    assert events[0]["phase"] == "plan" and events[0]["calls"] == 0  # the plan comes first, before any call
    assert events[1]["status"] == "preflight"  # the display names the case before its first batch


def test_a_log_gets_plain_lines_at_a_steady_interval_and_at_each_case_end() -> None:
    import time

    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None)
    clock = Clock()
    bar = MiningProgress(2, console=console, config=MiningConfig(budget=20), clock=clock, interval=0.05)
    with bar:
        bar(_event("c0", 0, 8, 12))
        clock.now += 30
        deadline = time.monotonic() + 10
        while buf.getvalue().count("progress ") < 2 and time.monotonic() < deadline:  # the ticker's own lines
            time.sleep(0.01)
        bar(_event("c0", 0, 20, 22, status="mined", open_=0))
        bar(_event("c1", 1, 20, 44, status="mined", open_=0))
    lines = buf.getvalue().splitlines()
    assert all("\x1b" not in ln and "━" not in ln for ln in lines)  # no redraw, no bar: plain lines a log keeps
    ticks = [ln for ln in lines if ln.startswith("progress ")]
    assert len(ticks) >= 2
    assert ticks[0] == "progress 0:30 elapsed · calls 12 of ≤70 · cases 0 of 2 done · 2.50 s/call · ≤2:25 left"
    assert "progress 0:30 elapsed · calls 22 of ≤" in buf.getvalue() and " · case c0 ended: mined\n" in buf.getvalue()
    assert lines[-1] == "progress 0:30 elapsed · calls 44 of ≤44 · cases 2 of 2 done · 0.68 s/call · done"


def test_a_terminal_keeps_the_live_display() -> None:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    bar = MiningProgress(2, console=console, config=MiningConfig(budget=20), clock=Clock(), interval=0.01)
    with bar:
        assert bar._live is not None and bar._plain is None
