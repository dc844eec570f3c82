"""Mining statistics benchmark: label precision, recall, null FPR and calls per case with known truth.

Every design except ``naive`` runs deltap mine's own per-case procedure (:func:`deltap.mining.procedure.run_case`),
dataset step and coalition search on the simulated solver, and counts every call deltap mine makes (preflight,
design trials, coalition checks). Scenario S1 of issue #6 (20 candidates, effects +0.4/+0.3, base 0.1) for the
seed's naive design, fixed-N regression + BH, and deltap's adaptive default, plus the other scenarios.

    python benchmarks/bench_simulation.py -r 400          # the table in benchmarks/README.md
    python benchmarks/bench_simulation.py -r 100 --quick  # S1 only
    python benchmarks/bench_simulation.py -r 400 --graded # graded labels vs verdicts vs raw estimates (issue 35)

``--graded`` mines each scenario of :data:`GRADED_PLAN` with the default design through the engine's own procedure and
labelling step (:func:`deltap.mining.simulation.run_graded`) and prints, per score (graded utility under each prior,
the verdict as +1/0/−1, the raw regression effect, the raw ΔP), how well it orders the true effects within each case
(Kendall τ-b and pairwise concordance, means over cases) and over the dataset (Spearman), the graded intervals'
coverage, and how far the placebos shrink.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from deltap.mining.config import MiningConfig
from deltap.mining.simulation import GRADED_SCORES, MIXTURES, SCENARIOS, run_design, run_graded, run_mixture

# "/bernoulli": independent coin flips per candidate and trial; no suffix: deltap's orthogonal blocks. "/zero",
# "/placebo", "/topic", "/auto": the null (default: zero for pass, placebo for logprob); "/lw": learned gold weight. "/gwW": prior weight W of gold candidates in
# the weighted BH step (default 8; gw1 = unweighted). "adaptive:B": budget B (default 90). "@q": another FDR level.
PLAN: list[tuple[str, list[str]]] = [
    (
        "S1",
        [
            "naive:10",
            "naive:128",
            "fixed:96/gw1",
            "fixed:128/gw1",
            "fixed:84",
            "fixed:96",
            "adaptive:128/gw1",
            "adaptive/gw1",
            "adaptive/gw4",
            "adaptive",
            "adaptive:128",
        ],
    ),
    ("mixed", ["fixed:96/gw1", "fixed:128/gw1", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    ("harmful", ["fixed:128/gw1", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    ("interaction", ["fixed:128/gw1", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    ("saturated", ["adaptive:128/gw1", "adaptive"]),
    ("logprob", ["fixed:128/gw1", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    ("logprob_text", ["fixed:128/zero", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    (
        "logprob_sparse",
        [
            "fixed:128/zero",
            "fixed:96",
            "adaptive:128/gw1",
            "adaptive",
            "adaptive/topic",
            "adaptive/topic/lw",
            "adaptive/auto",
        ],
    ),
    (
        "logprob_tilted",
        ["fixed:96", "adaptive", "adaptive/topic", "adaptive/topic/lw", "adaptive/topic/gw32", "adaptive/auto"],
    ),
    ("logprob_missed", ["adaptive/placebo", "adaptive/topic/lw", "adaptive/auto"]),
    ("logprob_tilted_missed", ["adaptive/placebo", "adaptive/topic/lw", "adaptive/auto"]),
    ("logprob_tilted_similar", ["fixed:96", "adaptive"]),
    ("m60", ["fixed:128/gw1", "fixed:96", "adaptive:128/gw1", "adaptive"]),
    ("null", ["fixed:96", "adaptive:128/gw1", "adaptive"]),
]


#: the scenarios of ``--graded``: weak effects (issue 35), the strong sparse SmolLM2 shape, S1 (pass), the tilted one
GRADED_PLAN = ("logprob_weak", "logprob_sparse", "S1", "logprob_tilted")


def _graded(replications: int, seed: int, dataset_size: int, scenarios: list[str] | None) -> None:
    f = lambda x: "—" if x != x else f"{x:.3f}"  # noqa: E731
    print("| scenario | score | τ-b within case | pairwise concordance | Spearman (pooled) |")
    print("|---|---|---:|---:|---:|")
    rows = []
    for name in scenarios or GRADED_PLAN:
        # the coalition search changes no label: left out for speed
        r = run_graded(SCENARIOS[name], "adaptive", replications, seed, MiningConfig(coalitions=False), dataset_size)
        rows.append(r)
        for score in GRADED_SCORES:
            print(
                f"| {name} | {score} | {f(r.tau[score])} | {f(r.pairs[score])} | {f(r.spearman[score])} |", flush=True
            )
    print()
    print(
        "| scenario | coverage, gold prior (by group) | coverage, no-gold prior (by group) | placebo |raw| → |utility| "
        "gold / no-gold (true) | s |"
    )
    print("|---|---|---|---|---:|")
    for r in rows:
        by = {p: ", ".join(f"{g} {v:.3f}" for g, v in r.coverage_by_group[p].items()) for p in r.coverage_by_group}
        pl = r.placebo_abs
        print(
            f"| {r.scenario} | {f(r.coverage['gold'])} ({by['gold']}) | {f(r.coverage['no_gold'])} ({by['no_gold']}) "
            f"| {f(pl['regression effect'])} → {f(pl['gold'])} / {f(pl['no_gold'])} ({f(r.placebo_true_abs)}) "
            f"| {r.seconds:.0f} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-r", "--replications", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="S1 only")
    ap.add_argument("--scenario", action="append", help="only these scenarios (repeatable)")
    ap.add_argument("--dataset-size", type=int, default=40, help="cases per dataset (the BH family, as in deltap mine)")
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--graded", action="store_true", help="graded labels vs verdicts vs raw estimates (issue 35)")
    args = ap.parse_args()
    if args.graded:
        print(f"# bench_simulation --graded: {args.replications} replications, seed {args.seed}, datasets of "
              f"{args.dataset_size} cases, {platform.machine()} {platform.python_version()}\n")  # fmt: skip
        t0 = time.perf_counter()
        _graded(args.replications, args.seed, args.dataset_size, args.scenario)
        print(f"\ntotal {time.perf_counter() - t0:.0f}s")
        return
    plan = PLAN[:1] if args.quick else [p for p in PLAN if not args.scenario or p[0] in args.scenario]
    rows = []
    t0 = time.perf_counter()
    print(
        f"# bench_simulation: {args.replications} replications, seed {args.seed}, BH over datasets of "
        f"{args.dataset_size} cases, {platform.machine()} {platform.python_version()}"
    )
    print()
    print(
        "| scenario | design | precision | FDR | recall | null FPR | harmful recall | calls/case (preflight + design + coalition) | skipped | coalitions with a null | s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, designs in plan:
        for d in designs:
            if name in MIXTURES:
                r = run_mixture(MIXTURES[name], d, args.replications, args.seed, dataset_size=args.dataset_size)
            else:
                r = run_design(SCENARIOS[name], d, args.replications, args.seed, dataset_size=args.dataset_size)
            rows.append(r.row())
            f = lambda x: "—" if x != x else f"{x:.3f}"  # noqa: E731
            k = r.calls_by_kind
            split = f" ({k['preflight']:.1f} + {k['design']:.1f} + {k['coalition']:.1f})" if k else ""
            print(
                f"| {name} | {d} | {f(r.precision)} | {f(r.fdr)} | {f(r.recall)} | {r.null_fpr:.4f} | {f(r.harmful_recall)} "
                f"| {r.calls_mean:.1f}{split} | {r.skipped:.2f} | {f(r.coalition_null_share)} | {r.seconds:.1f} |",
                flush=True,
            )
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
