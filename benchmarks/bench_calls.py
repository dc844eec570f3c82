"""Calls per label: the trade-off between solver calls per case and label quality on the simulation's S1.

Every design runs ``deltap mine``'s own per-case procedure (preflight, looks, stopping rule), dataset step (null,
weighted BH, verdicts) and coalition checks on the simulated solver, and counts every call ``mine`` makes
(preflight + design trials + coalition checks). Fixed designs (one look at N trials, no preflight, no coalition
checks) against the adaptive design at several budgets, look schedules and coalition-check sizes.

    python benchmarks/bench_calls.py -r 400 --dataset-size 10        # the table in benchmarks/README.md
    python benchmarks/bench_calls.py -r 400 --only "adaptive:72, learned, verify 3"   # one row
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from deltap.mining.config import MiningConfig
from deltap.mining.simulation import SCENARIOS, run_design

#: (label, design, config overrides). ``fixed:N``: one look at N trials; ``adaptive:B``: the engine at budget B.
GRID: list[tuple[str, str, dict[str, float]]] = [
    ("fixed:48", "fixed:48", {}),
    ("fixed:64", "fixed:64", {}),
    ("fixed:72", "fixed:72", {}),
    ("fixed:90", "fixed:90", {}),
    ("fixed:64, learned gold weight", "fixed:64", {"gold_weight_learned": True}),
    (
        "adaptive:90, verify 6 (the default, spelled out)",
        "adaptive:90",
        {"verify_trials": 6, "gold_weight_learned": False},
    ),
    ("adaptive:72, verify 6", "adaptive:72", {"verify_trials": 6, "gold_weight_learned": False}),
    ("adaptive:64, verify 3", "adaptive:64", {"verify_trials": 3, "gold_weight_learned": False}),
    ("adaptive:72, verify 3", "adaptive:72", {"verify_trials": 3, "gold_weight_learned": False}),
    ("adaptive:90, verify 3, futility 0.1", "adaptive:90", {"verify_trials": 3, "futility_power": 0.1}),
    ("adaptive:90, learned gold weight", "adaptive:90", {"verify_trials": 6, "gold_weight_learned": True}),
    ("adaptive:64, learned gold weight", "adaptive:64", {"verify_trials": 6, "gold_weight_learned": True}),
    ("adaptive:64, learned, verify 3", "adaptive:64", {"verify_trials": 3, "gold_weight_learned": True}),
    ("adaptive:68, learned, verify 3", "adaptive:68", {"verify_trials": 3, "gold_weight_learned": True}),
    ("adaptive:72, learned, verify 3", "adaptive:72", {"verify_trials": 3, "gold_weight_learned": True}),
    (
        "adaptive:72, learned, verify 3, futility 0.05",
        "adaptive:72",
        {"verify_trials": 3, "gold_weight_learned": True, "futility_power": 0.05},
    ),
    (
        "adaptive:72, learned, verify 3, looks 42+10",
        "adaptive:72",
        {"verify_trials": 3, "gold_weight_learned": True, "first_look": 42, "batch": 10},
    ),
    ("adaptive:76, learned, verify 3", "adaptive:76", {"verify_trials": 3, "gold_weight_learned": True}),
    ("adaptive:80, learned, verify 3", "adaptive:80", {"verify_trials": 3, "gold_weight_learned": True}),
    ("adaptive (the current default)", "adaptive", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-r", "--replications", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenario", default="S1")
    ap.add_argument("--dataset-size", type=int, default=10)
    ap.add_argument("--only", action="append", help="only these grid labels (repeatable)")
    a = ap.parse_args()
    sc = SCENARIOS[a.scenario]
    print(f"scenario {sc.name}, {a.replications} replications, seed {a.seed}, datasets of {a.dataset_size} cases")
    print("| design | calls/case (preflight + design + coalition) | precision | FDR | recall | null FPR | s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, design, over in GRID:
        if a.only and label not in a.only:
            continue
        t0 = time.perf_counter()
        cfg = replace(MiningConfig(), **over)
        r = run_design(sc, design, a.replications, a.seed, cfg, a.dataset_size)
        k = r.calls_by_kind
        print(
            f"| {label} | {r.calls_mean:.1f} ({k['preflight']:.1f} + {k['design']:.1f} + {k['coalition']:.1f}) | "
            f"{r.precision:.3f} | {r.fdr:.3f} | {r.recall:.3f} | {r.null_fpr:.4f} | {time.perf_counter() - t0:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
