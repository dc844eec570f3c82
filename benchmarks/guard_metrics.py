"""Metric speed guard: deltap's speed-up over pytrec_eval at a quick size, against a stored reference.

Runs the metric benchmark (``bench_metrics.py``: the same synthetic data, metrics and agreement check) at a quick
size, from dicts and from TREC files, and prints deltap's speed-up over pytrec_eval for each. A speed-up more than
``--tolerance`` (25 %) below the one stored in ``benchmarks/reference/metrics.json`` fails the run with one line
naming the benchmark; so does a disagreement with pytrec_eval above 1e-9.

A ratio of two tools timed on the same machine in the same minutes travels between machines far better than a time,
and the best of several timings shrugs off a noisy neighbour: each tool runs in ``--rounds`` fresh processes
(the tools alternating), each timing ``--inner`` evaluations of the same input, and the fastest evaluation counts.

The reference is kept per path deltap runs (``deltap --version`` tells): ``accelerated`` (the compiled inner loops
the install built) and ``pure Python`` (no compiler at install, or ``DELTAP_ACCEL=0``). Every line printed names the
path, and the ratios are compared with that path's reference: an install whose build failed is compared with the
pure-Python reference and says so, rather than failing as a regression or passing as accelerated unnoticed.

Usage::

    python benchmarks/guard_metrics.py                     # CI: check against the reference of the path in use
    python benchmarks/guard_metrics.py --update            # store this path's ratios as its reference
    DELTAP_ACCEL=0 python benchmarks/guard_metrics.py ...  # the same for the pure-Python path
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_metrics as bench  # noqa: E402  (the benchmark this guard runs)

REFERENCE = HERE / "reference" / "metrics.json"
NAME = "benchmarks/bench_metrics.py"
INPUTS = {"dict": "from dicts", "file": "from TREC files"}
#: The paths deltap runs (``deltap.evaluation.accel.MODES``), each with its own reference.
MODES = ("accelerated", "pure Python")


def _timed(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One worker process: the fastest of ``args.inner`` evaluations, and the means of the last one."""
    if name.endswith("-dict"):
        with open(args.pickle, "rb") as fh:
            qrels, run = pickle.load(fh)
    if name.startswith("deltap"):
        import pyarrow.compute  # noqa: F401  (imports are one-time costs, left out of every tool's timing)
        import pyarrow.csv  # noqa: F401

        import deltap.evaluation.trec_fast  # noqa: F401
        from deltap.evaluation import evaluate
        from deltap.evaluation.accel import accelerator_mode

        def once() -> dict[str, float]:
            source = (qrels, run) if name == "deltap-dict" else (Path(args.qrels), Path(args.run))
            return evaluate(*source, bench.DELTAP_METRICS, n_resamples=0).means

    else:
        import pytrec_eval

        def once() -> dict[str, float]:
            if name == "pytrec-dict":
                q, r = qrels, run
            else:
                with open(args.qrels) as fh:
                    q = pytrec_eval.parse_qrel(fh)
                with open(args.run) as fh:
                    r = pytrec_eval.parse_run(fh)
            return bench._means_pytrec(pytrec_eval.RelevanceEvaluator(q, bench.PYTREC_MEASURES).evaluate(r))

    best = float("inf")
    means: dict[str, float] = {}
    for _ in range(args.inner):
        t = time.perf_counter()
        means = once()
        best = min(best, time.perf_counter() - t)
    return {"seconds": best, "means": means, "mode": accelerator_mode() if name.startswith("deltap") else None}


def measure(args: argparse.Namespace, folder: Path, mode: str) -> dict[str, float]:
    """``{input: pytrec_eval's best time / deltap's best time}``, deltap on the path ``mode``; exits naming the
    benchmark on a disagreement, or when a deltap worker ran another path."""
    qrels_path, run_path = bench.data_files(folder, args.queries, args.depth, args.seed)
    pickled = folder / "dicts.pickle"
    with pickled.open("wb") as fh:
        pickle.dump(bench.generate(args.queries, args.depth, args.seed), fh, protocol=pickle.HIGHEST_PROTOCOL)
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.rounds):
        for source in INPUTS:
            for tool in ("deltap", "pytrec"):
                name = f"{tool}-{source}"
                cmd = [sys.executable, __file__, "--worker", name, "--inner", str(args.inner), "--pickle", str(pickled)]
                cmd += ["--qrels", str(qrels_path), "--run", str(run_path)]
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"}
                )
                if proc.returncode != 0:
                    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                    raise SystemExit(f"{NAME} (metric speed guard): the {name} worker failed: {tail}")
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                if tool == "deltap" and out["mode"] != mode:
                    raise SystemExit(f"{NAME} (metric speed guard): the {name} worker ran {out['mode']}, not {mode}")
                if name not in best or out["seconds"] < best[name]["seconds"]:
                    best[name] = out
    ratios = {}
    for source in INPUTS:
        deltap, pytrec = best[f"deltap-{source}"], best[f"pytrec-{source}"]
        diff = max(abs(deltap["means"][m] - pytrec["means"][m]) for m in bench.DELTAP_METRICS)
        if diff > 1e-9:
            raise SystemExit(
                f"{NAME} (metric speed guard): deltap {INPUTS[source]} disagrees with pytrec_eval by {diff:.1e}"
            )
        ratios[source] = pytrec["seconds"] / deltap["seconds"]
        print(
            f"metric speed guard ({mode}), {args.queries:,} queries × {args.depth} {INPUTS[source]}: deltap "
            f"{deltap['seconds']:.3f} s, pytrec_eval {pytrec['seconds']:.3f} s: {ratios[source]:.2f}× "
            f"(agreement {diff:.0e})"
        )
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, help="Queries (default: the reference's size).")
    parser.add_argument("--depth", type=int, help="Results per query (default: the reference's).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, help="Fresh processes per tool (default: the reference's).")
    parser.add_argument("--inner", type=int, help="Evaluations timed per process (default: the reference's).")
    parser.add_argument("--tolerance", type=float, default=0.25, help="Largest drop of a ratio that passes (0.25).")
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--update", action="store_true", help="Store the measured ratios as the reference.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pickle", help=argparse.SUPPRESS)
    parser.add_argument("--qrels", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_timed(args.worker, args)))
        return
    from deltap.evaluation.accel import accelerator_mode, accelerator_status

    mode = accelerator_mode()
    print(f"metric speed guard: deltap runs {accelerator_status()}")
    stored: dict[str, Any] = json.loads(args.reference.read_text()) if args.reference.is_file() else {}
    reference = reference_for(stored, mode)
    if reference is None and not args.update:
        raise SystemExit(
            f"{NAME} (metric speed guard): no {mode} reference in {_shown(args.reference)}; run with --update"
        )
    size = stored.get("size", {})
    for key, default in (("queries", 20_000), ("depth", 100), ("rounds", 2), ("inner", 3)):
        if getattr(args, key) is None:
            setattr(args, key, int(size.get(key, default)))
    with tempfile.TemporaryDirectory(prefix="deltap-guard-metrics-") as tmp:
        ratios = measure(args, Path(tmp), mode)
    if args.update:
        store(args, stored, mode, ratios)
        return
    if {k: getattr(args, k) for k in ("queries", "depth")} != {k: size.get(k) for k in ("queries", "depth")}:
        print("note: not the reference's size; the ratios are not compared")
        return
    assert reference is not None
    failure = verdict(ratios, reference, args.tolerance, f"{_shown(args.reference)}, {mode}")
    if failure:
        raise SystemExit(failure)
    print(
        f"metric speed guard passed ({mode}): no ratio below {1 - args.tolerance:.0%} of "
        f"{args.reference.name}'s {mode} reference"
    )


def reference_for(stored: dict[str, Any], mode: str) -> dict[str, float] | None:
    """The stored ratios of path ``mode`` (``{input: ratio}``), or ``None``. A reference written before the
    accelerator (one ratio per input, no path) is the pure-Python one."""
    ratios = stored.get("ratio", {})
    if ratios and all(isinstance(v, int | float) for v in ratios.values()):
        return {k: float(v) for k, v in ratios.items()} if mode == "pure Python" else None
    found = ratios.get(mode)
    return {k: float(v) for k, v in found.items()} if found else None


def store(args: argparse.Namespace, stored: dict[str, Any], mode: str, ratios: dict[str, float]) -> None:
    """Write ``ratios`` as path ``mode``'s reference, keeping the other path's when it was measured at this size."""
    size = {k: getattr(args, k) for k in ("queries", "depth", "rounds", "inner")}
    same_size = stored.get("size") == size
    per_mode = {m: r for m in MODES if same_size and (r := reference_for(stored, m)) is not None}
    measured = stored.get("measured") if same_size and isinstance(stored.get("measured"), dict) else {}
    per_mode[mode] = {k: round(v, 2) for k, v in ratios.items()}
    measured[mode] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record = {
        "benchmark": NAME,
        "size": size,
        "ratio": per_mode,
        "measured": measured,
        "note": "pytrec_eval's best time / deltap's best time, per path deltap runs (accelerated: the compiled "
        "accelerator; pure Python: not built, or DELTAP_ACCEL=0); the guard fails below (1 - tolerance) x the "
        "reference of the path in use",
    }
    args.reference.parent.mkdir(parents=True, exist_ok=True)
    args.reference.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    print(f"stored in {args.reference} ({mode})")


def _shown(path: Path) -> str:
    return str(path.relative_to(HERE.parent)) if path.resolve().is_relative_to(HERE.parent) else str(path)


def verdict(ratios: dict[str, float], stored: dict[str, float], tolerance: float, reference: str) -> str | None:
    """The one line that fails the run when a ratio is more than ``tolerance`` below its stored value, else ``None``."""
    drops = [
        f"{INPUTS[source]} {ratio:.2f}× vs {float(stored[source]):.2f}× stored ({ratio / float(stored[source]) - 1:+.0%})"
        for source, ratio in ratios.items()
        if ratio < (1 - tolerance) * float(stored[source])
    ]
    if not drops:
        return None
    return (
        f"{NAME}: deltap's speed-up over pytrec_eval dropped more than {tolerance:.0%}: "
        + "; ".join(drops)
        + f" (reference {reference})"
    )


if __name__ == "__main__":
    main()
