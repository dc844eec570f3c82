"""Issue 36 item 1: a plan's time from the solver measured on the machine at hand (``deltap.trials.pace``) — the
arithmetic (scaling by tokens, spread, overhead), a resumed run's log, the cache, threads, and the words that say
where a figure comes from; with fake and simulated solvers only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deltap.trials.pace import (
    FEW_CALLS_SPREAD,
    MEASURE_AFTER,
    MIN_SPREAD,
    CallTime,
    CallTimer,
    Measurement,
    call_units,
    from_log,
    recall,
    remember,
    solver_threads,
    table_seconds,
    table_source,
)
from deltap.trials.planning import LOCAL_GENERATED_TOKENS_PER_S, LOCAL_PROMPT_TOKENS_PER_S, plan_pace


def test_a_measurement_is_a_slowdown_against_the_table_scaled_to_the_plans_tokens() -> None:
    # every call 3× slower than the table's middle rates: the typical slowdown is 3 whatever the call's size
    calls = [CallTime(3 * call_units(n, 0), n, 0) for n in (200, 400, 800, 1600, 400, 600)]
    m = Measurement.of(calls, "llama_cpp:x", 2, scaled=True)
    assert m is not None and m.scaled and m.calls == 6
    assert m.per_unit[1] == pytest.approx(3.0)
    # identical slowdowns: the narrowest range, ±25% (the machine's load moves during a run)
    assert m.per_unit[0] == pytest.approx(3.0 / MIN_SPREAD) and m.per_unit[2] == pytest.approx(3.0 * MIN_SPREAD)
    lo, hi = m.seconds_per_call(1000, 0)
    assert hi == pytest.approx(3 * call_units(1000, 0) * MIN_SPREAD)
    # the fastest: the scaled figure, or the measured calls' own lower quartile when that is lower (prefix reuse)
    raw_q25 = sorted(c.seconds for c in calls)[1] + 0.25 * (
        sorted(c.seconds for c in calls)[2] - sorted(c.seconds for c in calls)[1]
    )
    assert m.seconds_low == pytest.approx(raw_q25, abs=1e-4)
    assert lo == pytest.approx(min(3 * call_units(1000, 0) / MIN_SPREAD, raw_q25), abs=1e-4)
    assert m.seconds_per_call(2000, 0)[1] == pytest.approx(2 * hi)  # twice the tokens, twice the time
    # generated tokens weigh what the table says they weigh
    gen = 10 / (sum(LOCAL_GENERATED_TOKENS_PER_S) / 2)
    assert m.seconds_per_call(1000, 10)[1] - hi == pytest.approx(3 * gen * MIN_SPREAD)


def test_the_spread_is_the_calls_quartiles_when_wider_and_wide_from_a_few_calls() -> None:
    units = call_units(500, 0)
    slowdowns = [1.0, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0]
    m = Measurement.of([CallTime(s * units, 500, 0) for s in slowdowns], "llama_cpp:x", 2, scaled=True)
    assert m is not None
    assert m.per_unit[1] == pytest.approx(sum(slowdowns) / len(slowdowns))  # ratio of sums (equal sizes: the mean)
    assert m.per_unit[0] == pytest.approx(1.75)  # the 25th percentile, below typical / 1.25
    assert m.per_unit[2] == pytest.approx(8.0)  # the 75th percentile, above typical × 1.25
    few = Measurement.of([CallTime(2.0, 500, 0), CallTime(2.0, 500, 0)], "llama_cpp:x", 2, scaled=True)
    assert few is not None
    assert few.per_unit[2] / few.per_unit[1] == pytest.approx(FEW_CALLS_SPREAD)
    assert few.per_unit[1] / few.per_unit[0] == pytest.approx(FEW_CALLS_SPREAD)


def test_the_fastest_figure_is_what_the_cheap_calls_cost() -> None:
    # the first calls of a mining run: prompts without documents (cheap) and with every candidate (expensive);
    # its design trials reuse the cached prefix and cost about half their prompt: the bottom must allow it
    calls = [CallTime(1.0, 80, 0), CallTime(18.0, 1700, 0), CallTime(0.6, 80, 0), CallTime(24.0, 2000, 0),
             CallTime(1.0, 80, 0), CallTime(19.0, 2000, 0)]  # fmt: skip
    m = Measurement.of(calls, "llama_cpp:x", 2, scaled=True)
    assert m is not None and m.seconds_low == pytest.approx(1.0)
    lo, hi = m.seconds_per_call(1150, 0)
    assert lo == pytest.approx(1.0) and hi > 10.0  # a design trial of 1,150 tokens given: 1-… s
    unscaled = Measurement.of(calls, "hosted", None, scaled=False)
    assert unscaled is not None and unscaled.seconds_per_call()[0] == pytest.approx(unscaled.per_unit[0])


def test_an_unscaled_solver_is_seconds_per_call_and_wall_time_adds_an_overhead() -> None:
    calls = [CallTime(0.5, 100, 10), CallTime(0.5, 9000, 10)] * 3
    m = Measurement.of(calls, "hosted", None, scaled=False, wall_seconds=6 * 0.5 + 6 * 0.2)
    assert m is not None and not m.scaled
    assert m.overhead == pytest.approx(0.2)
    assert m.seconds_per_call(100, 0) == m.seconds_per_call(50_000, 500)  # tokens do not move a hosted call
    assert m.seconds_per_call()[0] == pytest.approx(0.5 / MIN_SPREAD + 0.2)
    assert m.typical_seconds() == pytest.approx(0.7)
    # calls without token counts cannot be scaled; calls that took no time are no measurement
    assert not Measurement.of([CallTime(1.0)] * 6, "llama_cpp:x", 2, scaled=True).scaled  # type: ignore[union-attr]
    assert Measurement.of([CallTime(0.0, 10, 0)], "x", None, scaled=False) is None


def test_a_resumed_run_measures_its_logs_latest_calls() -> None:
    units = call_units(400, 0)
    old = [(10.0 * units, 400, 0, 100.0 + i) for i in range(10)]  # slow, long ago
    new = [(2.0 * units, 400, 0, 1000.0 + i) for i in range(8)]  # the latest
    cached = [(0.0, 400, 0, 2000.0)]  # answered from an earlier answer: no latency, no call
    m = from_log(old + new + cached, "llama_cpp:x", 2, scaled=True, recent=8)
    assert m is not None and m.calls == 8 and m.per_unit[1] == pytest.approx(2.0)
    assert m.when == 1007.0 and "in the trial log" in m.origin
    assert from_log([], "x", None, scaled=False) is None


def test_the_timer_counts_wall_time_from_the_first_call() -> None:
    now = [0.0]
    timer = CallTimer(clock=lambda: now[0])
    timer.begin()
    for _ in range(4):
        now[0] += 1.5
        timer.add(CallTime(1.0, 300, 0))
    m = timer.measurement("llama_cpp:x", 1, scaled=True)
    assert m is not None and m.calls == 4 and m.overhead == pytest.approx(0.5) and m.threads == 1
    assert m.origin == "of this run"


def test_the_cache_keeps_the_last_measurement_per_solver_and_threads(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "pace.json"
    m = Measurement.of([CallTime(2.0, 500, 0)] * 6, "llama_cpp:x", 2, scaled=True, when=1_800_000_000.0, load=1.3)
    assert m is not None
    assert recall("llama_cpp:x", 2, path) is None  # no file yet
    remember(m, path)
    back = recall("llama_cpp:x", 2, path)
    assert back is not None and back.per_unit == pytest.approx(m.per_unit) and back.load == 1.3
    assert back.origin.startswith("of an earlier run (kept in the cache, pace.json)")
    assert recall("llama_cpp:x", 1, path) is None  # another thread count: another machine, in effect
    assert recall("llama_cpp:y", 2, path) is None
    other = Measurement.of([CallTime(4.0, 500, 0)] * 6, "llama_cpp:x", 1, scaled=True)
    remember(other, path)  # a second key keeps the first
    assert set(json.loads(path.read_text())) == {"llama_cpp:x|threads=2", "llama_cpp:x|threads=1"}
    path.write_text("{not json")
    assert recall("llama_cpp:x", 2, path) is None  # unreadable: no measurement, no error


class _Local:
    """A stand-in of the local model for the table: a context window and a ``llama_cpp:`` id."""

    id = "llama_cpp:fake:greedy"
    n_ctx = 4096
    max_tokens: dict[str, int] = {}
    deterministic = True

    def __init__(self, n_threads: int) -> None:
        self.n_threads = n_threads

    def tokens(self, request: Any) -> list[int]:
        return [0] * 10


def test_the_table_is_scaled_by_the_threads_the_solver_has() -> None:
    two, one = table_seconds(1000, 0, threads=2, cores=2), table_seconds(1000, 0, threads=1, cores=2)
    assert one == pytest.approx((2 * two[0], 2 * two[1]))
    assert two == pytest.approx((1000 / LOCAL_PROMPT_TOKENS_PER_S[1], 1000 / LOCAL_PROMPT_TOKENS_PER_S[0]))
    assert table_seconds(1000, 0, threads=8, cores=2) == pytest.approx(two)  # no more than the cores
    assert solver_threads(_Local(1)) == 1 and solver_threads(object()) is None
    pace = plan_pace(_Local(1), None, 1, None, 1000.0, 0.0)
    assert pace.seconds_per_call == pytest.approx(one) and "n_threads=1" in pace.source and "× 2" in pace.source
    assert plan_pace(_Local(2), None, 1, None, 1000.0, 0.0).seconds_per_call == pytest.approx(two)


def test_the_words_say_where_the_figure_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    source = table_source(2, cores=2)
    assert source.startswith("no measurement yet: a 2-core table estimate") and "may be off by 2-6×" in source
    m = Measurement.of([CallTime(2.0, 500, 0)] * 6, "llama_cpp:x", 2, scaled=True, load=1.3)
    assert m is not None
    text = m.source(800)
    assert text.startswith("measured 2.00 s/call (1.60-2.50) on this machine at ")
    assert ", load 1.3, n_threads=2, over 6 call(s) of this run" in text
    assert text.endswith("500 prompt tokens/call measured, scaled to the plan's 800")
    pace = plan_pace(_Local(2), None, 1, None, 800.0, 0.0, measured=m)
    assert pace.source == text and pace.measurement is m
    assert pace.seconds_per_call == pytest.approx(m.seconds_per_call(800, 0))
    assert plan_pace(_Local(2), 3.0, 1, None, 800.0, 0.0, measured=m).source == "given (--latency)"
    d = pace.to_dict()
    assert d["latency_measured"]["calls"] == 6 and d["latency_source"] == text


def test_mine_retimes_its_plan_on_its_first_calls_and_keeps_the_figure(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine
    from deltap.trials.pace import pace_cache_path
    from tests.unit.mining.test_spend_plan_export import TokenSolver, _case, _truths

    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(40)])
    cfg = MiningConfig(budget=16, n_placebo=4, pilot=0)
    events: list[dict[str, Any]] = []
    solver = TokenSolver(_truths("a", "b"))
    res = mine([_case("a"), _case("b")], corpus, solver, out=tmp_path / "run", config=cfg, progress=events.append)
    phases = [e.get("phase") for e in events]
    assert phases[0] == "plan" and "pace" in phases
    paced = events[phases.index("pace")]
    assert paced["calls"] >= MEASURE_AFTER
    plan = paced["plan"]
    assert plan.pace.measurement is not None and plan.pace.source.startswith("measured ")
    assert "of this run" in plan.pace.source
    assert any(line.startswith("       measured ") for line in plan.time_brief())
    kept = json.loads(pace_cache_path().read_text())  # the whole session's calls, for the next plan
    key = f"{solver.id}|threads=-"
    assert list(kept) == [key] and kept[key]["calls"] == res.run["calls"]
    pvs = res.run["plan_vs_spent"]["seconds"]
    assert pvs["wall_in_range"] in ("inside", "below", "above") and pvs["wall_since_plan"] >= 0


def test_a_plan_reads_the_cache_and_a_resumed_plan_its_log_writing_nothing(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine
    from deltap.mining.plan import plan_mine
    from deltap.trials.pace import pace_cache_path
    from tests.unit.mining.test_spend_plan_export import TokenSolver, _case, _truths

    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(40)])
    cfg = MiningConfig(budget=16, n_placebo=4, pilot=0, k=0)
    solver = TokenSolver(_truths("a", "b"))
    fresh = plan_mine([_case("a")], corpus, solver, cfg)
    assert fresh.pace.seconds_per_call is None  # not the local model, nothing measured: unknown
    assert not pace_cache_path().exists()  # a plan writes nothing
    kept = Measurement.of([CallTime(0.25)] * 6, solver.id, None, scaled=False, load=0.5)
    assert kept is not None
    remember(kept)
    before = pace_cache_path().read_bytes()
    planned = plan_mine([_case("a")], corpus, solver, cfg)
    assert planned.pace.seconds_per_call == pytest.approx(kept.seconds_per_call())
    assert "of an earlier run (kept in the cache" in planned.pace.source
    assert pace_cache_path().read_bytes() == before
    # a run directory with calls in its log: the log's latest calls are the measurement
    mine([_case("a")], corpus, solver, out=tmp_path / "run", config=cfg)
    resumed = plan_mine([_case("a"), _case("b")], corpus, solver, cfg, out=tmp_path / "run")
    assert "in the trial log" in resumed.pace.source


def test_the_time_spent_is_set_against_the_range_the_run_printed() -> None:
    from deltap.mining.plan import plan_time_line, plan_vs_spent_lines

    pvs = {"seconds": {"wall_since_plan": 363.0, "printed_min": 174.1, "printed_max": 735.2, "wall_in_range": "inside"}}
    assert plan_time_line(pvs) == "time 6:03 from the plan on, inside its 2:54–12:15"
    assert plan_vs_spent_lines(pvs)[-1].endswith(str(plan_time_line(pvs)))
    assert plan_time_line({"seconds": {"ratio": 0.5}}) is None and plan_time_line(None) is None
