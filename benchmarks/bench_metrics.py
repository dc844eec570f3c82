"""Metric speed: deltap vs pytrec_eval vs ranx, from in-memory dicts and from TREC files.

Synthetic data: ``--queries`` queries × ``--depth`` results (scores rounded to 4 decimals, so ties occur), 5 judged
documents per query (grades 0-3, three of them retrieved). Metrics: ndcg@10, recall@100, P@10, MRR, MAP.

Every measurement runs in a fresh subprocess, so memory peaks do not mix and ranx's first call pays its numba JIT
(numba may still load compiled code from its on-disk cache; "warm" is a second call in the same process).
Times count everything from the given input to the per-query numbers:

* from dicts: the tool's own conversion of the dicts (pytrec_eval's ``RelevanceEvaluator``, ranx's ``Qrels``/``Run``
  construction, deltap's array layout) plus the evaluation;
* from files: reading the TREC qrels and run files too (pytrec_eval's ``parse_qrel``/``parse_run`` dict building).
  The driver reads both files through just before each file worker starts, so every tool reads them from the page
  cache: a cold read (the 336 MB run file evicted by other work) would otherwise land on whichever tool runs first.

Memory is the peak resident-set growth during the timed part (Linux ``VmHWM`` after resetting it).
Means are cross-checked: deltap's must equal pytrec_eval's to 1e-9.

deltap runs its compiled accelerator when the install built it (``deltap --version`` says so; the first line printed
here too). When it is in use, deltap is also timed with ``DELTAP_ACCEL=0`` (rows "deltap (pure Python)", workers
``deltap-pure-dict``/``deltap-pure-file``) in the same rounds, and both paths' means must be identical.

Usage::

    python benchmarks/bench_metrics.py                      # 100,000 × 100 (the table in benchmarks/README.md)
    python benchmarks/bench_metrics.py --queries 2000       # quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DELTAP_METRICS = ["ndcg@10", "recall@100", "P@10", "MRR", "MAP"]
PYTREC_MEASURES = {"ndcg_cut.10", "recall.100", "P.10", "recip_rank", "map"}
PYTREC_KEYS = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "P@10": "P_10", "MRR": "recip_rank", "MAP": "map"}
RANX_METRICS = {"ndcg@10": "ndcg@10", "recall@100": "recall@100", "P@10": "precision@10", "MRR": "mrr", "MAP": "map"}
N_DOCS = 1 << 20

WORKERS = ["deltap-dict", "pytrec-dict", "ranx-dict", "deltap-file", "pytrec-file", "ranx-file"]
#: deltap again on its pure-Python path (``DELTAP_ACCEL=0``), when the accelerator is in use
PURE_WORKERS = ["deltap-pure-dict", "deltap-pure-file"]


# ------------------------------------------------------------------------------------------------ data


def generate(n_queries: int, depth: int, seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Deterministic synthetic qrels and run (see the module docstring)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, N_DOCS, n_queries)
    step = rng.integers(0, N_DOCS // 2, n_queries) * 2 + 1  # odd: distinct docs within a query
    docs = (base[:, None] + np.arange(depth)[None, :] * step[:, None]) % N_DOCS
    scores = np.round(rng.random((n_queries, depth)), 4)
    picked = np.argsort(rng.random((n_queries, depth)), axis=1)[:, :3]
    judged_in = np.take_along_axis(docs, picked, axis=1)
    judged_out = (docs[:, :2] + N_DOCS // 2 + 1) % N_DOCS  # never in the run? (checked below)
    grades = rng.integers(0, 4, (n_queries, 5))
    qids = [f"q{i}" for i in range(n_queries)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i, q in enumerate(qids):
        d = [f"d{x}" for x in docs[i].tolist()]
        run[q] = dict(zip(d, scores[i].tolist(), strict=True))
        judged = [f"d{x}" for x in judged_in[i].tolist()] + [f"d{x}" for x in judged_out[i].tolist()]
        qrels[q] = dict(zip(judged, grades[i].tolist(), strict=True))
        if not any(g > 0 for g in qrels[q].values()):
            qrels[q][judged[0]] = 1
    return qrels, run


def data_files(folder: Path, n_queries: int, depth: int, seed: int) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"q{n_queries}-d{depth}-s{seed}"
    qrels_path, run_path = folder / f"{stem}.qrels", folder / f"{stem}.run"
    if not (qrels_path.is_file() and run_path.is_file()):
        qrels, run = generate(n_queries, depth, seed)
        with qrels_path.open("w") as fh:
            for q, docs in qrels.items():
                fh.write("".join(f"{q} 0 {d} {g}\n" for d, g in docs.items()))
        with run_path.open("w") as fh:
            for q, docs in run.items():
                ranked = sorted(docs.items(), key=lambda kv: -kv[1])
                fh.write("".join(f"{q} Q0 {d} {r} {s!r} bench\n" for r, (d, s) in enumerate(ranked, start=1)))
    return qrels_path, run_path


# ------------------------------------------------------------------------------------------------ memory


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> int:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    return _status("VmRSS")


# ------------------------------------------------------------------------------------------------ workers


def _means_pytrec(result: dict[str, dict[str, float]]) -> dict[str, float]:
    return {m: float(np.mean([row[k] for row in result.values()])) for m, k in PYTREC_KEYS.items()}


def worker(name: str, args: argparse.Namespace) -> dict[str, Any]:
    qrels_path, run_path = Path(args.qrels), Path(args.run)
    out: dict[str, Any] = {"name": name}
    if name.endswith("-dict"):
        qrels, run = generate(args.queries, args.depth, args.seed)
    if name.startswith("deltap"):
        import pyarrow.compute  # noqa: F401  (imports are one-time costs, left out of every tool's timing)
        import pyarrow.csv  # noqa: F401

        import deltap.evaluation  # noqa: F401
        import deltap.evaluation.trec_fast  # noqa: F401
        from deltap.evaluation.accel import accelerator_mode

        out["mode"] = accelerator_mode()
        name = name.replace("-pure", "")  # the same work; the driver set DELTAP_ACCEL=0
    base = _reset_peak()
    if name == "deltap-dict":
        from deltap.evaluation import evaluate

        t = time.perf_counter()
        res = evaluate(qrels, run, DELTAP_METRICS, n_resamples=0)
        out["seconds"] = time.perf_counter() - t
        out["means"] = res.means
    elif name == "deltap-file":
        from deltap.evaluation import evaluate

        t = time.perf_counter()
        res = evaluate(qrels_path, run_path, DELTAP_METRICS, n_resamples=0)
        out["seconds"] = time.perf_counter() - t
        out["means"] = res.means
    elif name == "pytrec-dict":
        import pytrec_eval

        t = time.perf_counter()
        result = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
        out["seconds"] = time.perf_counter() - t
        out["means"] = _means_pytrec(result)
    elif name == "pytrec-file":
        import pytrec_eval

        t = time.perf_counter()
        with qrels_path.open() as fh:
            q = pytrec_eval.parse_qrel(fh)
        with run_path.open() as fh:
            r = pytrec_eval.parse_run(fh)
        result = pytrec_eval.RelevanceEvaluator(q, PYTREC_MEASURES).evaluate(r)
        out["seconds"] = time.perf_counter() - t
        out["means"] = _means_pytrec(result)
    elif name.startswith("ranx"):
        import warnings

        warnings.simplefilter("ignore")
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate

        def load() -> tuple[Any, Any]:
            if name == "ranx-dict":
                return Qrels(qrels), Run(run)
            return Qrels.from_file(str(qrels_path), kind="trec"), Run.from_file(str(run_path), kind="trec")

        t = time.perf_counter()
        rq, rr = load()
        t_load = time.perf_counter() - t
        t2 = time.perf_counter()
        scores = ranx_evaluate(rq, rr, list(RANX_METRICS.values()), make_comparable=True)
        out["seconds"] = time.perf_counter() - t
        out["eval_cold"] = time.perf_counter() - t2
        out["load"] = t_load
        t = time.perf_counter()
        rq, rr = load()
        scores = ranx_evaluate(rq, rr, list(RANX_METRICS.values()), make_comparable=True)
        out["seconds_warm"] = time.perf_counter() - t
        out["means"] = {m: float(scores[k]) for m, k in RANX_METRICS.items()}
    else:
        raise SystemExit(f"unknown worker {name}")
    out["peak_mb"] = max(0, _status("VmHWM") - base) / 2**20
    return out


# ------------------------------------------------------------------------------------------------ driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default="/tmp/deltap-bench-metrics", help="Where the TREC files are written.")
    parser.add_argument(
        "--only",
        help=f"Comma-separated workers to run (default: all of {', '.join(WORKERS)}, and {', '.join(PURE_WORKERS)} "
        "when the accelerator is in use).",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="Rounds (fresh processes, tools alternating); the median is reported."
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--qrels", help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return

    from deltap.evaluation.accel import accelerator_mode, accelerator_status

    accelerated = accelerator_mode() == "accelerated"
    names = args.only.split(",") if args.only else WORKERS + (PURE_WORKERS if accelerated else [])
    qrels_path, run_path = data_files(Path(args.data), args.queries, args.depth, args.seed)
    lines = args.queries * args.depth
    print(f"{args.queries:,} queries × {args.depth} results = {lines:,} run lines; metrics {', '.join(DELTAP_METRICS)}")
    print(f"deltap metric evaluation: {accelerator_status()}")
    samples = _rounds(args, names, qrels_path, run_path)
    results = {name: sorted(outs, key=lambda o: o["seconds"])[len(outs) // 2] for name, outs in samples.items()}
    if args.repeat > 1:
        print(f"(median of {args.repeat} fresh-process rounds per tool)")
    _table(results)
    _agreement(results)


def _rounds(args: argparse.Namespace, names: list[str], qrels_path: Path, run_path: Path) -> dict[str, list[dict]]:
    """Every worker ``args.repeat`` times, each in a fresh process, the tools alternating within a round (so slow
    phases of the machine hit all of them)."""
    samples: dict[str, list[dict[str, Any]]] = {}
    for rep in range(args.repeat):
        for name in names:
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                name,
                "--queries",
                str(args.queries),
                "--depth",
                str(args.depth),
            ]
            cmd += ["--seed", str(args.seed), "--qrels", str(qrels_path), "--run", str(run_path)]
            env = {**os.environ, "PYTHONWARNINGS": "ignore"}
            if name in PURE_WORKERS:
                env["DELTAP_ACCEL"] = "0"
            if name.endswith("-file"):
                _warm(qrels_path, run_path)
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(f"{name} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            samples.setdefault(name, []).append(out)
            print(f"  round {rep + 1}: {name}: {out['seconds']:.2f} s", file=sys.stderr)
    return samples


def _warm(*paths: Path) -> None:
    """Read ``paths`` through (into the page cache), so the next file worker's time is not a disk's."""
    for path in paths:
        with path.open("rb") as fh:
            while fh.read(1 << 24):
                pass


def _table(results: dict[str, dict[str, Any]]) -> None:
    """The Markdown table (speed-up of deltap: that row's time over deltap's, deltap on its default path) and one
    line per input: deltap's speed-up over pytrec_eval, on each path timed."""

    def ratio(a: str, b: str) -> str:
        if a in results and b in results:
            return f"{results[b]['seconds'] / results[a]['seconds']:.2f}×"
        return "—"

    print()
    print("| input | tool | time (s) | peak memory (MB) | speed-up of deltap |")
    print("|---|---|---:|---:|---:|")
    for source in ("dict", "file"):
        for tool in ("deltap", "deltap-pure", "pytrec", "ranx"):
            key = f"{tool}-{source}"
            if key not in results:
                continue
            r = results[key]
            label = {"pytrec": "pytrec_eval", "ranx": "ranx (first call, JIT)"}.get(tool, f"deltap ({r.get('mode')})")
            speed = "" if tool == "deltap" else ratio(f"deltap-{source}", key)
            print(f"| {source} | {label} | {r['seconds']:.2f} | {r['peak_mb']:.0f} | {speed} |")
            if tool == "ranx":
                base = results.get(f"deltap-{source}")
                sp = f"{r['seconds_warm'] / base['seconds']:.2f}×" if base else "—"
                print(f"| {source} | ranx (second call, warm) | {r['seconds_warm']:.2f} | | {sp} |")
    print()
    for source, words in (("file", "from TREC files"), ("dict", "from dicts")):
        paths = [f"{ratio(key, f'pytrec-{source}')} ({results[key].get('mode')})"
                 for key in (f"deltap-{source}", f"deltap-pure-{source}") if key in results]  # fmt: skip
        if paths and f"pytrec-{source}" in results:
            print(f"deltap {words} vs pytrec_eval {words}: {'; '.join(paths)}")


def _agreement(results: dict[str, dict[str, Any]]) -> None:
    """deltap's means against pytrec_eval's (1e-9, else exit), ranx's shown; both deltap paths identical."""
    ref = results.get("pytrec-dict") or results.get("pytrec-file")
    if ref:
        for key in ("deltap-dict", "deltap-pure-dict", "deltap-file", "deltap-pure-file"):
            if key in results:
                diff = max(abs(results[key]["means"][m] - ref["means"][m]) for m in DELTAP_METRICS)
                print(f"max |mean difference| {key} vs pytrec_eval: {diff:.2e}")
                if diff > 1e-9:
                    raise SystemExit(f"{key} disagrees with pytrec_eval by {diff}")
        for key in ("ranx-dict", "ranx-file"):
            if key in results:
                diff = max(abs(results[key]["means"][m] - ref["means"][m]) for m in DELTAP_METRICS)
                print(f"max |mean difference| {key} vs pytrec_eval: {diff:.2e} (ranx breaks ties differently)")
    for source in ("dict", "file"):
        a, b = results.get(f"deltap-{source}"), results.get(f"deltap-pure-{source}")
        if a and b:
            if a["means"] != b["means"]:
                raise SystemExit(f"deltap's two paths differ from {source}s: {a['means']} vs {b['means']}")
            print(f"deltap {source}: the {a.get('mode')} and {b.get('mode')} means are identical (bit for bit)")


if __name__ == "__main__":
    main()
