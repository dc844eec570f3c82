"""What every plan shares: the pace (seconds per call given, or the local model's throughput, or unknown), the one time
range, and the one writer of the cost and time lines that ``deltap mine --plan`` and ``deltap endtoend --plan`` print."""

from __future__ import annotations

import pytest

from deltap.errors import DeltapError
from deltap.trials.planning import Pace, clock_text, cost_lines, plan_pace, time_lines, time_range
from deltap.trials.prices import Prices

PRICES = Prices(0.15, 0.6, "list price of gpt-4o-mini (2025-01)")


def test_the_cost_lines() -> None:
    assert cost_lines((1.234, 2.5), PRICES) == [
        "cost    ~$1.23 (≤$2.50) at $0.15/$0.6 per M in/out",
        "        prices: list price of gpt-4o-mini (2025-01)",
    ]
    assert cost_lines((1.0, 1.0), PRICES)[0] == "cost    ~$1.00 at $0.15/$0.6 per M in/out"  # exact: no range
    assert (
        cost_lines(None, PRICES)
        == cost_lines((1.0, 2.0), None)
        == ["cost    no prices: give --price-in/--price-out (USD per million tokens)"]
    )


def test_the_time_lines() -> None:
    pace = Pace((0.5, 0.8), "given (--latency)", 2, 30.0)
    assert time_lines((245.0, 3723.0), pace, " left") == [
        "time    4:05–1:02:03 left (0.50–0.80 s/call, 2 worker(s), ≤30/min)",
        "        latency: given (--latency)",
    ]
    assert time_lines((60.0, 120.0), Pace(None, "", 1, 10.0)) == ["time    1:00–2:00 (1 worker(s), ≤10/min)"]
    assert time_lines(None, Pace()) == ["time    unknown: give --latency (seconds per call) or --rpm"]


def test_one_time_range() -> None:
    assert time_range(10, 20, (1.0, 2.0), 2, None) == (5.0, 20.0)
    assert time_range(10, 20, (1.0, 2.0), 2, 6.0) == (100.0, 200.0)  # the rpm is the floor of the time
    assert time_range(10, 20, None, 1, None) is None
    assert Pace((1.0, 2.0), "", 2).seconds(10, 20) == (5.0, 20.0)
    assert clock_text(59.6) == "1:00" and clock_text(-3) == "0:00" and clock_text(3600) == "1:00:00"


def test_the_pace_of_a_plan() -> None:
    assert plan_pace(object(), 1.5, 3, None, 100.0) == Pace((1.5, 1.5), "given (--latency)", 3, None)
    assert plan_pace(object(), None, 1, 60.0, 100.0) == Pace(None, "", 1, 60.0)  # not the local model: unknown
    with pytest.raises(DeltapError, match=r"--latency must be seconds per call \(>= 0\), got -1"):
        plan_pace(object(), -1.0, 1, None)


def test_both_plans_print_the_same_cost_and_time_lines() -> None:
    from deltap.endtoend.plan import EndToEndPlan, SystemPlan
    from deltap.mining.plan import CasePlan, RunPlan

    pace = Pace((0.5, 0.5), "given (--latency)", 1, None)
    calls = {"preflight": 0, "design": 10, "coalition": 0}
    mining = RunPlan("s", "exact", [CasePlan("c", 3, calls, 10, 100, 100, 100.0, 20)], pace=pace, prices=PRICES)
    e2e = EndToEndPlan("s", "exact", 1, 1, [SystemPlan("bm25", 10, 0, 0, 1000, 200, 3)], pace=pace, prices=PRICES)
    shared = [*cost_lines((mining.cost() or (0.0, 0.0))[0:2], PRICES), *time_lines(mining.seconds(), pace)]
    assert all(line in mining.lines() for line in shared)
    assert all(line in e2e.lines() for line in shared)  # the same calls, tokens and pace: the very same lines
