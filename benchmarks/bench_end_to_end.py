"""End-to-end truth (issue 26 item 6): which system makes the model succeed, and which qrels predict it.

1. ``--phase simulated`` (seconds, no model): the planted scenario of :mod:`deltap.endtoend.planted` — a simulated
   solver with planted utilities, gold sets that hold a planted distractor — mined by ``mine()`` and run end to end,
   over ``--replications`` seeds: does measured success rank the planted systems exactly as their true utility, and do
   metrics on deltap's mined qrels (and ``signed_utility@K`` when the library has it) predict success better than the
   same metrics on the gold qrels?
2. ``--phase mine`` (heavy: run under ``flock /tmp/deltap-heavy.lock``): mine every question of the bundled stdlib
   benchmark with the local SmolLM2-135M (logprob outcome, dense candidates) into ``--out/run``; resumable, so
   ``--limit N`` splits it into short jobs.
3. ``--phase endtoend`` (heavy): bm25, dense, hybrid and the controls none, gold, mined, all — each one's top ``--k``
   in the prompt, fresh seeds, the local model — and the validity table. Writes ``--out/run/endtoend/``.

Run: ``python benchmarks/bench_end_to_end.py --phase simulated``; then, under the heavy lock, ``--phase mine`` and
``--phase endtoend``. Results: benchmarks/README.md, "End-to-end truth".
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def simulated(replications: int, n_cases: int, single_doc: bool = True) -> None:
    from deltap.endtoend.planted import PAIR_SYSTEM, PLANTED_SYSTEMS, planted_scenario, run_planted

    scenarios = [("distractors in gold (additive effects)", 0.0)]
    if single_doc:  # the non-additive case: a pair that helps only together (eRAG's blind spot)
        scenarios.append(("distractors in gold + a non-additive pair (coalition +0.6)", 0.6))
    for title, coalition in scenarios:
        print(f"\n=== {title} ===")
        exact, wins, rows_all, signed_over_erag = 0, 0, [], [0, 0]
        t0 = time.perf_counter()
        planted_names = {**PLANTED_SYSTEMS, **(PAIR_SYSTEM if coalition else {})}
        for rep in range(replications):
            scenario = planted_scenario(n_cases, seed=rep, coalition=coalition)
            out = run_planted(
                scenario, seed=rep, out=Path(tempfile.mkdtemp()) / "run", single_doc=single_doc
            )  # a folder: signed_utility reads the dataset
            res = out["result"]
            planted = [s for s in out["systems"] if s.name in planted_names]
            truth = scenario.true_utility(planted, 2).mean(axis=0)
            measured = np.array([res.summary[s.name]["mean"] for s in planted])
            exact += int(list(np.argsort(-truth)) == list(np.argsort(-measured)))
            rows = {(r["metric"], r["qrels"]): r for r in res.validity["rows"]}
            deltap_vs_gold = [c for c in res.validity["comparisons"] if c["b"] == "the benchmark's gold qrels"]
            wins += int(all(c["tau_diff_ci"][0] is not None and c["tau_diff_ci"][0] > 0 for c in deltap_vs_gold))
            for c in res.validity["comparisons"]:
                if c["a"] == "the signed utility" and c["b"].startswith("the single-document"):
                    signed_over_erag[0] += int(c["tau_diff_ci"][0] is not None and c["tau_diff_ci"][0] > 0)
                    signed_over_erag[1] += int(c["r_diff_ci"][0] is not None and c["r_diff_ci"][0] > 0)
            rows_all.append(rows)
            if rep == 0:
                print(res.table())
                print(f"verdicts of the mining run: {out['mining'].run['verdicts']}")
                if single_doc:
                    pair = [s for s in out["systems"] if s.name == "pair"]
                    if pair:
                        erag_p = rows[("erag_precision@2", "single-doc (eRAG)")]["means"]
                        signed = rows[("signed_utility@2", "deltap (signed)")]["means"]
                        print(f"pair system: success {res.summary['pair']['mean']:.3f}, erag_precision@2 {erag_p['pair']:.3f} "
                              f"(none {erag_p['none']:.3f}, distractor {erag_p['distractor']:.3f}), signed_utility@2 "
                              f"{signed['pair']:+.3f}")  # fmt: skip
        n_sys = len(rows_all[0][next(iter(rows_all[0]))]["means"])
        print(
            f"{replications} replications × {n_cases} cases, {n_sys} systems, 8 repeats: {time.perf_counter() - t0:.1f} s"
        )
        print(f"measured success ranks the {len(planted_names)} planted systems exactly as their true utility: {exact}/{replications}")  # fmt: skip
        print(f"deltap-qrels tau above gold-qrels tau, the whole interval > 0, every metric: {wins}/{replications}")
        if single_doc:
            print(f"signed utility above eRAG precision, interval > 0: tau {signed_over_erag[0]}/{replications}, "
                  f"r {signed_over_erag[1]}/{replications}")  # fmt: skip
        keys = list(rows_all[0])
        print(f"{'metric':<18} {'qrels':<18} {'tau (mean over reps)':>20} {'r (mean)':>9}")
        for key in keys:
            taus = [r[key]["tau"] for r in rows_all if r[key]["tau"] is not None]
            rs = [r[key]["r"] for r in rows_all if r[key]["r"] is not None]
            print(f"{key[0]:<18} {key[1]:<18} {np.mean(taus):>+20.3f} {np.mean(rs):>+9.3f}")


def _inputs(out: Path):  # type: ignore[no-untyped-def]
    from deltap.demo import build_demo_corpus, load_demo_cases

    corpus = build_demo_corpus()
    return corpus, load_demo_cases(corpus)


_SOLVER: list[object] = []


def _solver() -> object:
    """The local model, loaded once per process."""
    from deltap.solvers import make_solver

    if not _SOLVER:
        _SOLVER.append(make_solver("local"))
    return _SOLVER[0]


def mine_phase(out: Path, limit: int | None, budget: int, first: int | None = None) -> None:
    from deltap.demo import DemoConfig, _build_dense
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine

    corpus, cases = _inputs(out)
    if limit:  # a spread: the paraphrased questions first, round-robin over the modules (the demo's order)
        from deltap.demo import select_cases

        cases = select_cases(cases, limit)
    if first:  # the first N in the benchmark's own order (a prefix of the full run: its logged trials are reused)
        cases = cases[:first]
    t0 = time.perf_counter()
    dense = _build_dense(corpus, out, DemoConfig(out=out, progress=False))
    solver = _solver()
    cfg = MiningConfig(outcome="logprob", budget=budget, seed=0, k=3, n_placebo=2, preflight=2, first_look=max(4, budget // 2),
                       batch=4, coalitions=False)  # fmt: skip
    res = mine(cases, corpus, solver, out=out / "run", config=cfg, retriever=dense)
    print(f"mined {len(cases)} cases in {time.perf_counter() - t0:.0f} s: {res.run['calls']} calls "
          f"({res.run.get('calls_this_process')} now), verdicts {res.run['verdicts']}, statuses {res.run['cases_by_status']}")  # fmt: skip


def endtoend_phase(out: Path, k: int, outcome: str, controls: list[str], single_doc: bool = False) -> None:
    from deltap.demo import DemoConfig, _build_dense
    from deltap.endtoend import CONTROLS, EndToEndConfig, evaluate_end_to_end
    from deltap.endtoend.systems import System, control_systems

    corpus, cases = _inputs(out)
    from deltap.dataset import read_dataset

    mined = {case.case_id for case in read_dataset(out / "run" / "retrieval_dataset.yaml").cases}
    cases = [c for c in cases if c.case_id in mined]
    dense = _build_dense(corpus, out, DemoConfig(out=out, progress=False))
    from deltap.retrieval import build_retriever
    from deltap.retrieval.hybrid import HybridRetriever

    bm25 = build_retriever("bm25", corpus)
    retrievers = {"bm25": bm25, "dense": dense, "hybrid": HybridRetriever(corpus, [bm25, dense])}
    systems = []
    for name, r in retrievers.items():
        hits = r.search_batch([c.query for c in cases], k=k)
        systems.append(
            System(name, "retriever", {c.case_id: [h.doc_id for h in row] for c, row in zip(cases, hits, strict=True)})
        )
    systems += control_systems(
        [c for c in CONTROLS if c in controls], cases, read_dataset(out / "run" / "retrieval_dataset.yaml")
    )
    solver = _solver()
    t0 = time.perf_counter()
    cfg = EndToEndConfig(k=k, outcome=outcome, seed=0, single_doc=single_doc)
    sub = out / "run" if outcome == "logprob" else out / f"run-{outcome}"
    if outcome != "logprob":  # its own results folder beside the logprob one
        import shutil

        sub.mkdir(parents=True, exist_ok=True)
        for f in ("retrieval_dataset.yaml", "run.json"):
            shutil.copy(out / "run" / f, sub / f)
    res = evaluate_end_to_end(
        sub, cases, corpus, solver, config=cfg, systems=systems, metrics=[f"ndcg@{k}", f"hit_rate@{k}", f"recall@{k}"]
    )
    print(f"{len(cases)} cases × {len(systems)} systems in {time.perf_counter() - t0:.0f} s: {res.run['calls']} calls, "
          f"{res.run['cached']} identical prompts answered once, {res.run['calls_this_process']} now")  # fmt: skip
    print(res.table())
    from deltap.cli.endtoend_cmd import validity_table

    print(validity_table(res.validity))
    for n in res.validity["notes"]:
        print("note:", n)
    print(res.validity["summary"])
    print(json.dumps({p["a"] + " - " + p["b"]: round(p["p_holm"], 4) for p in res.pairs if p["p_holm"] <= 0.05}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--phase",
        choices=("simulated", "mine", "endtoend", "real"),
        default="simulated",
        help="real = mine then endtoend in one process (one model load)",
    )
    ap.add_argument("--controls", default="none,gold,mined,all", help="endtoend: the control systems")
    ap.add_argument("--out", type=Path, default=Path("bench-e2e"))
    ap.add_argument("--replications", type=int, default=5)
    ap.add_argument("--cases", type=int, default=60, help="simulated: cases per replication")
    ap.add_argument("--limit", type=int, default=None, help="mine: only the first N questions (resumable)")
    ap.add_argument("--first", type=int, default=None, help="mine: only the first N questions in file order")
    ap.add_argument("--budget", type=int, default=12, help="mine: design trials per question")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--outcome", default="logprob", choices=("logprob", "pass"))
    ap.add_argument(
        "--single-doc",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="eRAG's single-document utility (default: on for simulated, off for endtoend)",
    )
    args = ap.parse_args()
    if args.phase == "simulated":
        simulated(args.replications, args.cases, args.single_doc is not False)
    elif args.phase == "mine":
        mine_phase(args.out, args.limit, args.budget, args.first)
    elif args.phase == "endtoend":
        endtoend_phase(args.out, args.k, args.outcome, args.controls.split(","), bool(args.single_doc))
    else:
        mine_phase(args.out, args.limit, args.budget, args.first)
        endtoend_phase(args.out, args.k, args.outcome, args.controls.split(","), bool(args.single_doc))


if __name__ == "__main__":
    main()
