"""The metric speed guard's verdict (``benchmarks/guard_metrics.py``, run by ``.ci/run``; issue 37): one line naming
the benchmark when a ratio drops more than the tolerance below the stored reference, nothing otherwise."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def guard():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("guard_metrics", BENCHMARKS / "guard_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_drop_within_the_tolerance_passes(guard) -> None:  # type: ignore[no-untyped-def]
    assert guard.verdict({"dict": 4.0, "file": 3.8}, {"dict": 5.2, "file": 5.0}, 0.25, "ref.json") is None
    assert guard.verdict({"dict": 9.0, "file": 9.0}, {"dict": 5.2, "file": 5.0}, 0.25, "ref.json") is None


def test_a_larger_drop_fails_with_one_line_naming_the_benchmark(guard) -> None:  # type: ignore[no-untyped-def]
    line = guard.verdict({"dict": 3.0, "file": 4.9}, {"dict": 5.0, "file": 5.0}, 0.25, "benchmarks/reference/m.json")
    assert line == (
        "benchmarks/bench_metrics.py: deltap's speed-up over pytrec_eval dropped more than 25%: "
        "from dicts 3.00× vs 5.00× stored (-40%) (reference benchmarks/reference/m.json)"
    )
    assert "\n" not in line
    both = guard.verdict({"dict": 1.0, "file": 1.0}, {"dict": 5.0, "file": 5.0}, 0.25, "r")
    assert "from dicts" in both and "from TREC files" in both


def test_the_committed_reference_is_read_by_the_guard(guard) -> None:  # type: ignore[no-untyped-def]
    stored = json.loads((BENCHMARKS / "reference" / "metrics.json").read_text())
    assert stored["benchmark"] == guard.NAME == "benchmarks/bench_metrics.py"
    assert {"queries", "depth", "rounds", "inner"} <= set(stored["size"])
    for mode in guard.MODES:  # a reference per path deltap runs: the accelerated one faster than pure Python
        ratios = guard.reference_for(stored, mode)
        assert ratios is not None and set(ratios) == set(guard.INPUTS) and all(r > 1 for r in ratios.values())
    fast, pure = (guard.reference_for(stored, m) for m in guard.MODES)
    assert fast["dict"] > pure["dict"]


def test_the_paths_match_the_accelerators(guard) -> None:  # type: ignore[no-untyped-def]
    from deltap.evaluation import accel

    assert guard.MODES == accel.MODES


def test_a_reference_from_before_the_accelerator_is_the_pure_python_one(guard) -> None:  # type: ignore[no-untyped-def]
    legacy = {"ratio": {"dict": 4.72, "file": 6.65}}
    assert guard.reference_for(legacy, "pure Python") == {"dict": 4.72, "file": 6.65}
    assert guard.reference_for(legacy, "accelerated") is None
    per_mode = {"ratio": {"accelerated": {"dict": 7.0, "file": 6.5}}}
    assert guard.reference_for(per_mode, "accelerated") == {"dict": 7.0, "file": 6.5}
    assert guard.reference_for(per_mode, "pure Python") is None and guard.reference_for({}, "accelerated") is None


def test_update_keeps_the_other_paths_reference_at_the_same_size(guard, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    args = argparse.Namespace(queries=20_000, depth=100, rounds=2, inner=3, reference=tmp_path / "m.json")
    size = {"queries": 20_000, "depth": 100, "rounds": 2, "inner": 3}
    stored = {"size": size, "ratio": {"dict": 4.7, "file": 6.6}, "measured": "then"}
    guard.store(args, stored, "accelerated", {"dict": 7.123, "file": 6.5})
    written = json.loads(args.reference.read_text())
    assert written["ratio"] == {"pure Python": {"dict": 4.7, "file": 6.6}, "accelerated": {"dict": 7.12, "file": 6.5}}
    assert set(written["measured"]) == {"accelerated"} and written["size"] == size
    guard.store(args, {**written, "size": {**size, "queries": 5}}, "pure Python", {"dict": 5.0, "file": 6.0})
    assert json.loads(args.reference.read_text())["ratio"] == {"pure Python": {"dict": 5.0, "file": 6.0}}
