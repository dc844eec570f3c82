"""Mining statistics benchmark: label precision, recall, null FPR and calls per case with known truth.

Scenario S1 of issue #6 (20 candidates, effects +0.4/+0.3, base 0.1, 1,000 replications) for the seed's naive
design, fixed-N regression + BH (with the seed's independent coin-flip inclusion and with deltap's orthogonal
blocks), and deltap's adaptive design, plus extra scenarios. Vectorised with numpy; the full
run takes a few minutes on 2 cores.

    python benchmarks/bench_simulation.py                 # the full table (1,000 replications)
    python benchmarks/bench_simulation.py -r 200 --quick  # a smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from deltap.mining.simulation import MIXTURES, SCENARIOS, run_design, run_mixture

# "/bernoulli": the seed's design (independent coin flips per candidate and trial); no suffix: deltap's default
# orthogonal blocks (randomised Paley-Hadamard, see deltap.mining.design). "/zero", "/placebo": the null effects are
# tested against (default: zero for pass, placebo for logprob; deltap.mining.empirical_null). "@q": another FDR level.
PLAN: list[tuple[str, list[str]]] = [
    ("S1", ["naive:10", "naive:128",
            "fixed:96/bernoulli", "fixed:128/bernoulli", "fixed:144/bernoulli", "fixed:160/bernoulli",
            "fixed:96", "fixed:112", "fixed:128",
            "adaptive/bernoulli", "adaptive", "adaptive:112", "adaptive:160",
            "fixed:128/bernoulli@0.04", "fixed:128@0.04", "adaptive@0.04", "fixed:128@0.03", "adaptive@0.03"]),
    ("mixed", ["naive:128", "fixed:96/bernoulli", "fixed:128/bernoulli", "fixed:96", "fixed:128", "adaptive/bernoulli",
               "adaptive", "adaptive:192"]),
    ("harmful", ["naive:128", "fixed:128/bernoulli", "fixed:128", "adaptive"]),
    ("interaction", ["fixed:128/bernoulli", "fixed:128", "adaptive"]),
    ("saturated", ["fixed:128", "adaptive"]),
    ("logprob", ["fixed:128/bernoulli", "fixed:128", "adaptive"]),
    ("logprob_text", ["naive:128", "fixed:128/zero", "fixed:128/placebo", "adaptive/zero", "adaptive"]),
    ("logprob_sparse", ["fixed:128/zero", "fixed:128/placebo", "adaptive/zero", "adaptive"]),
    ("m60", ["fixed:128/bernoulli", "fixed:128", "fixed:160", "adaptive", "adaptive:160"]),
    ("null", ["fixed:128", "adaptive"]),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-r", "--replications", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="S1 only")
    ap.add_argument("--dataset-size", type=int, default=40, help="cases per dataset (the BH family, as in deltap mine)")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args()
    plan = PLAN[:1] if args.quick else PLAN
    rows = []
    t0 = time.perf_counter()
    print(f"# bench_simulation: {args.replications} replications, seed {args.seed}, BH over datasets of "
          f"{args.dataset_size} cases, {platform.machine()} {platform.python_version()}")
    print()
    print("| scenario | design | precision | FDR | recall | null FPR | harmful recall | calls/case | skipped | s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, designs in plan:
        for d in designs:
            if name in MIXTURES:
                r = run_mixture(MIXTURES[name], d, args.replications, args.seed, dataset_size=args.dataset_size)
            else:
                r = run_design(SCENARIOS[name], d, args.replications, args.seed, dataset_size=args.dataset_size)
            rows.append(r.row())
            f = lambda x: "—" if x != x else f"{x:.3f}"  # noqa: E731
            print(f"| {name} | {d} | {f(r.precision)} | {f(r.fdr)} | {f(r.recall)} | {r.null_fpr:.4f} | {f(r.harmful_recall)} "
                  f"| {r.calls_mean:.1f} | {r.skipped:.2f} | {r.seconds:.1f} |", flush=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
