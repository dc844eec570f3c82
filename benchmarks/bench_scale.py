"""Scale-out benchmark (issue #16): the in-process and Ray executors against latency-bound solvers, and the rate
limiter against a rate-limited fake OpenAI server.

1. **Throughput.** The same mining job (simulated solver that sleeps ``--latency`` per call, so the workers are
   latency-bound, not CPU-bound; coalition checks off, so every run makes the same calls) with the in-process
   executor and with Ray at 1, 2, 4, 8 workers (as many cases in flight): calls/s, speed-up over the same executor
   with 1 worker, and its share of the ideal (= workers). Ray's replicas are started before the timed run (their
   start-up is reported apart: a real run pays it once).
2. **Executor overhead per trial.** The job with a solver that does not sleep: wall time per trial in-process
   (the driver's own work: rendering, hashing, checking, the SQLite append) and with Ray (the same plus a round trip
   per batch); their difference is Ray's overhead per trial.
3. **Rate limit.** A fake OpenAI-compatible server on 127.0.0.1 (``tests/fake_openai.py``) that allows
   ``--rpm`` requests a minute and answers 429 + ``Retry-After`` beyond it; ``deltap mine`` with the OpenAI solver
   at 8 calls in flight, with the limiter (``requests_per_minute``) and without: achieved rate, refused requests,
   failed trials.

Run (under the heavy lock): ``PYTHONPATH=src python benchmarks/bench_scale.py`` (about 6 minutes on 2 cores);
``--quick`` for a 1-minute smoke run.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/fake_openai.py

from deltap.cases import Case, CheckerSpec  # noqa: E402
from deltap.documents import Corpus, Document  # noqa: E402
from deltap.execution.base import SolverSpec  # noqa: E402
from deltap.execution.local import InProcessExecutor  # noqa: E402
from deltap.mining.config import MiningConfig  # noqa: E402
from deltap.mining.engine import mine  # noqa: E402
from deltap.solvers.simulated import SimulatedTruth  # noqa: E402


def make_job(n_cases: int) -> tuple[list[Case], Corpus, dict[str, Any]]:
    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(40)])
    cases = [
        Case(
            f"c{j:02d}",
            f"q{j}",
            gold_doc_ids=("d00", "d01"),
            checker=CheckerSpec("string_match", {"answers": [f"a{j}"]}),
            reference_answer=f"a{j}",
        )
        for j in range(n_cases)
    ]
    truth = {c.case_id: SimulatedTruth(0.1, {"d00": 0.5, "d01": 0.3}) for c in cases}
    return cases, corpus, {"truth": truth, "answers": {c.case_id: c.reference_answer for c in cases}, "seed": 3}


def start_ray() -> Any:
    import ray

    import deltap
    from deltap.execution.ray_cluster import RAY_ENV

    os.environ.update(RAY_ENV)
    src = str(Path(deltap.__file__).resolve().parents[1])  # Ray's workers import this checkout's deltap
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return time.perf_counter() - t0


def run_once(kind: str, workers: int, latency: float, n_cases: int, cfg: MiningConfig, out: Path) -> dict[str, Any]:
    from deltap.execution.ray_cluster import RayExecutor

    cases, corpus, options = make_job(n_cases)
    spec = SolverSpec("simulated", {**options, "latency": latency})
    solver = spec.build()
    startup = 0.0
    if kind == "ray":
        executor: Any = RayExecutor(spec, workers=workers)
        t0 = time.perf_counter()
        executor.start(solver)  # replicas up before the timed run
        startup = time.perf_counter() - t0
    else:
        executor = InProcessExecutor(workers)
    t0 = time.perf_counter()
    res = mine(cases, corpus, solver, out=out, config=cfg, executor=executor, cases_in_flight=workers)
    wall = time.perf_counter() - t0
    con = sqlite3.connect(out / "trials.sqlite")
    trials = int(con.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    con.close()
    return {
        "executor": kind,
        "workers": workers,
        "latency": latency,
        "calls": res.run["calls"],
        "trials": trials,
        "wall": wall,
        "startup": startup,
    }


def throughput(
    latencies: list[float],
    workers: list[int],
    cases_for: dict[float, int],
    cfg_for: dict[float, MiningConfig],
    tmp: Path,
) -> list[dict[str, Any]]:
    rows = []
    for latency in latencies:
        for kind in ("inprocess", "ray"):
            base = None
            for n in workers:
                r = run_once(kind, n, latency, cases_for[latency], cfg_for[latency], tmp / f"{kind}-{latency}-{n}")
                base = base or r["wall"]
                r["speedup"] = base / r["wall"]
                r["efficiency"] = r["speedup"] / n
                rows.append(r)
                print(
                    f"  {kind:9s} latency {latency * 1000:4.0f} ms  workers {n}: {r['calls']} calls in {r['wall']:.2f} s "
                    f"({r['calls'] / r['wall']:.1f} calls/s, speed-up {r['speedup']:.2f} = {r['efficiency']:.0%} of ideal; "
                    f"replicas started in {r['startup']:.2f} s)",
                    flush=True,
                )
    return rows


def overhead(tmp: Path, n_cases: int, cfg: MiningConfig, repeats: int = 3) -> dict[str, float]:
    out: dict[str, float] = {}
    for kind in ("inprocess", "ray"):
        best = float("inf")
        for rep in range(repeats):
            r = run_once(kind, 1, 0.0, n_cases, cfg, tmp / f"overhead-{kind}-{rep}")
            best = min(best, r["wall"] / r["trials"])
        out[kind] = best
        print(f"  {kind:9s}: {best * 1000:.3f} ms per trial (best of {repeats}, {r['trials']} trials)", flush=True)
    return out


def rate_limit(tmp: Path, rpm: float, n_cases: int, cfg: MiningConfig) -> list[dict[str, Any]]:
    from tests.fake_openai import FakeOpenAIServer

    from deltap.execution.ray_cluster import RayExecutor
    from deltap.solvers.retry import RetryPolicy

    rows = []
    cases, corpus, _ = make_job(n_cases)
    for label, limited, kind in (
        ("in-process, limiter", True, "inprocess"),
        ("Ray 4×2, limiter actor", True, "ray"),
        ("in-process, no limiter", False, "inprocess"),
    ):
        with FakeOpenAIServer(latency=0.05, requests_per_minute=rpm) as server:
            options: dict[str, Any] = {"model": "m", "base_url": server.url}
            if limited:
                options["requests_per_minute"] = rpm
            if kind == "inprocess":  # the retry policy is not picklable into a spec with its sleep; default one on Ray
                options["retry"] = RetryPolicy(max_attempts=6, base_delay=0.2, max_delay=5.0)
            spec = SolverSpec("openai", options)
            solver = spec.build()
            executor: Any = RayExecutor(spec, workers=4, calls_per_worker=2) if kind == "ray" else InProcessExecutor(8)
            if kind == "ray":
                executor.start(solver)
            out = tmp / f"rate-{label.replace(' ', '_').replace(',', '')}"
            t0 = time.perf_counter()
            res = mine(cases, corpus, solver, out=out, config=cfg, executor=executor, cases_in_flight=8)
            wall = time.perf_counter() - t0
            con = sqlite3.connect(out / "trials.sqlite")
            errors = int(con.execute("SELECT COUNT(*) FROM trials WHERE outcome = 'error'").fetchone()[0])
            con.close()
            acc = server.accepted
            span = acc[-1] - acc[0] if len(acc) > 1 else float("nan")
            row = {
                "label": label,
                "calls": res.run["calls"],
                "accepted": len(acc),
                "refused": len(server.refused),
                "rate": (len(acc) - 1) / span * 60 if span == span and span > 0 else float("nan"),
                "errors": errors,
                "wall": wall,
            }
            rows.append(row)
            print(
                f"  {label:24s}: {row['calls']} calls, {row['accepted']} answered, {row['refused']} refused (429), "
                f"{row['rate']:.0f} requests/min achieved (limit {rpm:.0f}), {errors} failed trials, {wall:.1f} s",
                flush=True,
            )
    return rows


def markdown(
    tp: list[dict[str, Any]], oh: dict[str, float], rl: list[dict[str, Any]], rpm: float, ray_init: float
) -> str:
    lines = [
        "| latency | executor | workers | calls | wall s | calls/s | speed-up | of ideal | replicas start s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in tp:
        lines.append(
            f"| {r['latency'] * 1000:.0f} ms | {r['executor']} | {r['workers']} | {r['calls']} | {r['wall']:.2f} | "
            f"{r['calls'] / r['wall']:.1f} | {r['speedup']:.2f} | {r['efficiency']:.0%} | "
            f"{r['startup']:.2f} |"
            if r["executor"] == "ray"
            else f"| {r['latency'] * 1000:.0f} ms | {r['executor']} | {r['workers']} | {r['calls']} | {r['wall']:.2f} | "
            f"{r['calls'] / r['wall']:.1f} | {r['speedup']:.2f} | {r['efficiency']:.0%} | — |"
        )
    lines += [
        "",
        f"Ray cluster start (`ray.init(num_cpus=2)`): {ray_init:.1f} s.",
        "",
        "| executor | wall per trial, solver that does not sleep |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v * 1000:.3f} ms |" for k, v in oh.items()]
    lines.append(f"| Ray's overhead per trial | {(oh['ray'] - oh['inprocess']) * 1000:.3f} ms |")
    lines += [
        "",
        f"| run (limit {rpm:.0f} requests/min) | calls | answered | refused (429) | achieved requests/min | failed trials | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['label']} | {r['calls']} | {r['accepted']} | {r['refused']} | {r['rate']:.0f} | {r['errors']} | {r['wall']:.1f} |"
        for r in rl
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller job (a smoke run, about a minute)")
    parser.add_argument("--rpm", type=float, default=600.0, help="the fake server's limit (requests/min)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    workers = [1, 2, 4, 8]
    if args.quick:
        latencies, cases_for = [0.05], {0.05: 8}
    else:
        latencies, cases_for = [0.05, 0.5], {0.05: 16, 0.5: 8}
    cfg_for = {
        0.05: MiningConfig(budget=32, first_look=16, batch=8, n_placebo=3, coalitions=False, seed=1),
        0.5: MiningConfig(budget=8, first_look=8, batch=8, n_placebo=3, coalitions=False, seed=1),
    }
    ray_init = start_ray()
    print(f"Ray started in {ray_init:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("1. throughput (latency-bound)", flush=True)
        tp = throughput(latencies, workers, cases_for, cfg_for, tmp)
        print("2. executor overhead per trial", flush=True)
        oh = overhead(tmp, 8, MiningConfig(budget=64, first_look=16, batch=16, n_placebo=3, seed=1))
        print("3. rate limit", flush=True)
        rl = rate_limit(
            tmp, args.rpm, 4 if args.quick else 8, MiningConfig(budget=32, n_placebo=3, coalitions=False, seed=1)
        )
    print()
    print(markdown(tp, oh, rl, args.rpm, ray_init))


if __name__ == "__main__":
    main()
