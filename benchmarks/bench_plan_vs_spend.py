"""The plan (``deltap mine --plan``) against what the run then spent (issue 27).

Rebuilds the plan of a finished run directory from its own pools (stored in ``trials.sqlite``: the same pools the
plan draws before the run, since they are a function of the seed and the retriever), its configuration (the log's
``meta``) and the local solver's tokenizer (no completion call), then prints predicted vs spent: calls, prompt tokens
and solver seconds, with the ratios.

    python benchmarks/bench_plan_vs_spend.py RUN_DIR --demo                       # a `deltap demo` run (OUT/run)
    python benchmarks/bench_plan_vs_spend.py RUN_DIR --cases Q.yaml --corpus C    # a `deltap mine` run

Run it under the shared lock (it loads the local model).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--demo", action="store_true")
    ap.add_argument("--cases", type=Path)
    ap.add_argument("--corpus", type=Path)
    args = ap.parse_args()

    from deltap.mining.config import MiningConfig
    from deltap.mining.plan import plan_calls
    from deltap.solvers import make_solver

    con = sqlite3.connect(f"file:{args.run_dir / 'trials.sqlite'}?mode=ro", uri=True)
    meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}
    pools = {
        c: [d["doc_id"] for d in json.loads(p)["candidates"]]
        for c, p in con.execute("SELECT case_id, pool_json FROM pools")
    }
    con.close()
    from dataclasses import fields

    names = {f.name for f in fields(MiningConfig)}
    cfg = MiningConfig(**{k: v for k, v in meta.items() if k in names})
    if args.demo:
        from deltap.demo import build_demo_corpus, load_demo_cases

        corpus = build_demo_corpus()
        cases = [c for c in load_demo_cases(corpus) if c.case_id in pools]
    else:
        from deltap.loaders import load_cases, load_corpus

        corpus = load_corpus(args.corpus)
        cases = [c for c in load_cases(args.cases, corpus=corpus, on_missing="skip") if c.case_id in pools]
    solver = make_solver("local")
    plan = plan_calls(cases, {c: [corpus[d] for d in ids] for c, ids in pools.items()}, cfg, solver)
    spend = json.loads((args.run_dir / "run.json").read_text())["spend"]
    p = plan.to_dict()
    secs = p["seconds"] or {"min": float("nan"), "max": float("nan")}
    rows = [
        ("calls", f"{p['calls_floor']}–{p['calls_ceiling']}", spend["calls"], spend["calls"] / p["calls_ceiling"]),
        ("prompt tokens", f"~{p['tokens_in_expected']:,} (≤{p['tokens_in_max']:,}) at the ceiling", spend["tokens_in"],
         spend["tokens_in"] / p["tokens_in_expected"] if spend["tokens_in"] else float("nan")),
        ("prompt tokens per call", f"~{p['tokens_in_expected'] / p['calls_ceiling']:,.0f}",
         round(spend["tokens_in"] / spend["calls"]) if spend["calls"] and spend["tokens_in"] else None,
         (spend["tokens_in"] / spend["calls"]) / (p["tokens_in_expected"] / p["calls_ceiling"]) if spend["calls"] and spend["tokens_in"] else float("nan")),
        ("solver seconds", f"{secs['min']:,.0f}–{secs['max']:,.0f}", spend["solver_seconds"], spend["solver_seconds"] / secs["max"]),
    ]  # fmt: skip
    # the pilot's judgement on this run's own preflight trials (what `--pilot` would have asked first)
    from deltap.mining.pilot import PilotCase, assess_pilot

    con = sqlite3.connect(f"file:{args.run_dir / 'trials.sqlite'}?mode=ro", uri=True)
    pre: dict[str, dict[str, list[float]]] = {}
    for cid, kind, value in con.execute(
        "SELECT case_id, kind, value FROM trials WHERE kind IN ('preflight_none', 'preflight_all')"
    ):
        if value is not None:
            pre.setdefault(cid, {}).setdefault(kind, []).append(float(value))
    con.close()
    sampled = [
        PilotCase(c, tuple(v.get("preflight_none", ())), tuple(v.get("preflight_all", ())))
        for c, v in sorted(pre.items())
    ]
    verdict = assess_pilot(sampled, 2 * len(sampled), cfg.outcome, cfg.policy().min_effect, cfg.budget, len(cases))
    print(verdict.message)
    print(f"{len(cases)} cases, {cfg.outcome}, budget {cfg.budget}, solver {plan.solver}")
    print(f"{'figure':<24} {'plan':<36} {'spent':>12} {'spent/plan':>10}")
    for name, planned, spent, ratio in rows:
        print(f"{name:<24} {planned:<36} {spent!s:>12} {ratio:>10.2f}")


if __name__ == "__main__":
    main()
