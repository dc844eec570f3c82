"""The tilt (issue 28): how much more retrieved non-gold documents move the outcome than random placebos.

Three modes:

    python benchmarks/bench_tilt.py sim -r 400 --dataset-size 10     # logprob_tilted at topic scales 1-1.75
    python benchmarks/bench_tilt.py runs RUN_DIR [RUN_DIR ...]         # the tilt of finished runs
    python benchmarks/bench_tilt.py auto -r 400 --dataset-size 10    # the rule of --null auto (issue 35 item 6)

``auto`` runs the engine's own code path (:func:`deltap.mining.simulation.run_design`) on tilted and untilted
scenarios, with and without a relevant document the gold misses, for the placebo null, ``--null topic
--gold-weight-learned`` and ``--null auto`` under each rule given by ``--rule ALPHA:TILT`` (tilted when the tilt
test's p < ALPHA or the tilt estimate >= TILT; ``0:inf`` never switches, ``1:0`` always does).

``sim`` mines simulated datasets through ``mine()`` (the engine, :func:`deltap.mining.simulation.engine_inputs`) of
``logprob_tilted`` with its topic scale replaced (1 = no tilt, as ``logprob_sparse``), one dataset per seed, and
prints the tilt ``run.json`` reports (median and quartiles over datasets), how often it is ``large`` (the warning),
and the FDR at q = 0.05 from the planted truth. ``runs`` reads each run's ``retrieval_dataset.yaml`` and prints the
spread of the estimated effects by source with 90% bootstrap intervals (:func:`deltap.mining.tilt.run_tilt`).
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from deltap.dataset import read_dataset
from deltap.mining.engine import mine
from deltap.mining.simulation import SCENARIOS, design_config, engine_inputs
from deltap.mining.tilt import SOURCE_GROUPS, run_tilt


def _sim(replications: int, dataset_size: int, scales: list[float], seed: int) -> None:
    print(
        "| topic scale | datasets × cases | tilt median (IQR) | permutation p < 0.05 | large (warned) | FDR | recall | s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scale in scales:
        sc = replace(SCENARIOS["logprob_tilted"], name=f"tilted_{scale:g}", topic_scale=scale)
        truth = sc.truth()
        ratios, pvals, large, fdps = [], [], [], []
        tp = relevant = 0
        t0 = time.perf_counter()
        for k in range(replications // dataset_size):
            cases, corpus, solver, retriever = engine_inputs(sc, dataset_size, seed + k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = mine(cases, corpus, solver, retriever=retriever, config=design_config(sc, "adaptive", seed + k))
            t = res.run["tilt"]
            ratios.append(t["ratio"] if t["ratio"] is not None else np.inf)
            pvals.append(t["p_value"])
            large.append(t["large"])
            false = labels = 0
            for pair in res.dataset.pairs:
                for c in pair["candidates"]:
                    j = int(c["doc_id"][1:])
                    rel = c["verdict"] == "relevant"
                    labels += rel
                    false += rel and truth[j] != 1
                    tp += rel and truth[j] == 1
                relevant += int((truth == 1).sum())
            fdps.append(false / max(labels, 1))
        r = np.array(ratios)
        print(
            f"| {scale:g} | {len(r)} × {dataset_size} | {np.median(r):.2f} ({np.quantile(r, 0.25):.2f}-{np.quantile(r, 0.75):.2f}) "
            f"| {np.mean(np.array(pvals) < 0.05):.0%} | {np.mean(large):.0%} | {np.mean(fdps):.3f} | {tp / relevant:.3f} "
            f"| {time.perf_counter() - t0:.0f} |",
            flush=True,
        )


def _runs(paths: list[Path], exclude_relevant: bool = False) -> None:
    for path in paths:
        ds = read_dataset(path / "retrieval_dataset.yaml" if path.is_dir() else path)
        unit = "nats" if ds.metadata.get("outcome") == "logprob" else "probability"
        rows = [(c.get("source") or [], c) for pair in ds.pairs for c in pair["candidates"]]
        if exclude_relevant:  # sensitivity: the tilt without the non-gold documents the run labelled relevant
            dropped = [r for r in rows if "gold" not in r[0] and r[1].get("verdict") == "relevant"]
            rows = [r for r in rows if not ("gold" not in r[0] and r[1].get("verdict") == "relevant")]
            print(f"{path}: {len(dropped)} non-gold candidate(s) labelled relevant left out")
        t = run_tilt(rows, unit, seed=int(ds.metadata.get("seed") or 0))
        print(
            f"{path}: {len(ds.pairs)} cases, outcome {ds.metadata.get('outcome')}, solver {ds.metadata.get('solver')}"
        )
        for src in SOURCE_GROUPS:
            s = t.spreads[src]
            print(
                f"  {src:9s} n {s.n:3d}  excess spread {s.spread:.3f} {unit} (90% {s.low:.3f}-{s.high:.3f}), mean |effect - centre| {s.mean_abs:.3f}"
            )
        print(f"  {t.message}")
        print(f"  large: {t.large}")


AUTO_SCENARIOS = ("logprob_sparse", "logprob_tilted", "logprob_missed", "logprob_tilted_missed")


def _auto(replications: int, dataset_size: int, rules: list[str], seed: int, scenarios: list[str]) -> None:
    import deltap.mining.tilt as tilt_mod
    from deltap.mining.simulation import run_design

    print("| scenario | design | rule (p < α or tilt ≥ t) | FDR | recall | recall, gold misses | null FPR | s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    f = lambda x: "—" if x != x else f"{x:.3f}"  # noqa: E731
    for name in scenarios:
        runs: list[tuple[str, str]] = [("adaptive/placebo", "—"), ("adaptive/topic/lw", "—")]
        runs += [("adaptive/auto", rule) for rule in rules]
        for design, rule in runs:
            if rule != "—":
                a, t = rule.split(":")
                tilt_mod.AUTO_ALPHA, tilt_mod.AUTO_TILT = float(a), float(t)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = run_design(SCENARIOS[name], design, replications, seed, dataset_size=dataset_size)
            print(
                f"| {name} | {design} | {rule} | {f(r.fdr)} | {f(r.recall)} | {f(r.recall_outside_gold)} "
                f"| {r.null_fpr:.4f} | {r.seconds:.0f} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("sim")
    s.add_argument("-r", "--replications", type=int, default=400)
    s.add_argument("--dataset-size", type=int, default=10)
    s.add_argument("--scale", type=float, action="append", default=None)
    s.add_argument("--seed", type=int, default=3)
    r = sub.add_parser("runs")
    r.add_argument("paths", nargs="+", type=Path)
    r.add_argument(
        "--exclude-relevant",
        action="store_true",
        help="leave out non-gold candidates the run labelled relevant (the tilt counts them; a sensitivity check)",
    )
    a = sub.add_parser("auto")
    a.add_argument("-r", "--replications", type=int, default=400)
    a.add_argument("--dataset-size", type=int, default=10)
    a.add_argument("--seed", type=int, default=3)
    a.add_argument("--rule", action="append", default=None, help="ALPHA:TILT (repeatable)")
    a.add_argument("--scenario", action="append", default=None)
    args = ap.parse_args()
    if args.mode == "auto":
        _auto(
            args.replications,
            args.dataset_size,
            args.rule or ["0.05:1.35"],
            args.seed,
            args.scenario or list(AUTO_SCENARIOS),
        )
    elif args.mode == "sim":
        _sim(args.replications, args.dataset_size, args.scale or [1.0, 1.25, 1.5, 1.75], args.seed)
    else:
        _runs(args.paths, args.exclude_relevant)


if __name__ == "__main__":
    main()
