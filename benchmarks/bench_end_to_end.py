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
4. ``--phase relabel`` (no solver call, no model): a finished mined + end-to-end run (``--out``: the folder holding
   ``run/``, or a run directory) relabelled with :func:`deltap.relabel` into ``--scratch`` — its own options (checked:
   the same dataset), the on-topic null with the learned gold weight, and the graded labels (the library's when the
   relabelled dataset carries them; otherwise a zero-call prototype here: a normal-normal empirical-Bayes shrinkage of
   each candidate's regression effect toward its source group, with and without the gold flag, clearly marked) — and
   the validity table of every variant (:func:`deltap.endtoend.validity.revalidate`: the end-to-end success read back
   from ``endtoend/``), pooled and within questions, with each qrels' difference from gold. ``--cases``/``--corpus``
   give the benchmark (default: the bundled stdlib one).

Run: ``python benchmarks/bench_end_to_end.py --phase simulated``; then, under the heavy lock, ``--phase mine`` and
``--phase endtoend``; then ``--phase relabel``. Results: benchmarks/README.md, "End-to-end truth".
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
        exact, wins, within_wins, rows_all, signed_over_erag = 0, 0, 0, [], [0, 0]
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
            within_wins += int(all((c.get("tau_within_diff_ci") or [None])[0] is not None and c["tau_within_diff_ci"][0] > 0
                                   for c in deltap_vs_gold))  # fmt: skip
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
        print(
            f"within questions (fair systems): deltap-qrels tau above gold's, interval > 0, every metric: {within_wins}/{replications}"
        )
        if single_doc:
            print(f"signed utility above eRAG precision, interval > 0: tau {signed_over_erag[0]}/{replications}, "
                  f"r {signed_over_erag[1]}/{replications}")  # fmt: skip
        keys = list(rows_all[0])
        print(
            f"{'metric':<18} {'qrels':<18} {'tau (mean over reps)':>20} {'r (mean)':>9} {'tau within':>10} {'r centred':>9}"
        )
        for key in keys:
            means = [np.mean([r[key][f] for r in rows_all if r[key].get(f) is not None] or [np.nan])
                     for f in ("tau", "r", "tau_within", "r_centred")]  # fmt: skip
            print(
                f"{key[0]:<18} {key[1]:<18} {means[0]:>+20.3f} {means[1]:>+9.3f} {means[2]:>+10.3f} {means[3]:>+9.3f}"
            )


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


# -- --phase relabel: every labelling of a finished run, judged by the end-to-end success it already measured ------


def _eb_fit(b: np.ndarray, se: np.ndarray) -> tuple[float, float]:
    """Normal-normal empirical Bayes: ``b_i ~ N(mu, tau2 + se_i^2)``, ``(mu, tau2)`` by maximum likelihood."""
    from scipy.optimize import minimize_scalar

    def nll(log_tau2: float) -> float:
        v = np.exp(log_tau2) + se**2
        mu = float(np.sum(b / v) / np.sum(1 / v))
        return float(0.5 * np.sum(np.log(v) + (b - mu) ** 2 / v))

    if len(b) < 3:
        return float(np.mean(b)) if len(b) else 0.0, 0.0
    opt = minimize_scalar(nll, bounds=(np.log(1e-8), np.log(1e4 * (np.var(b) + 1e-12))), method="bounded")
    tau2 = float(np.exp(opt.x))
    v = tau2 + se**2
    return float(np.sum(b / v) / np.sum(1 / v)), tau2


def prototype_graded(dataset, gold_prior: bool):  # type: ignore[no-untyped-def]
    """PROTOTYPE (zero calls, not the library's model): each candidate's regression effect shrunk toward its source
    group by a normal-normal empirical-Bayes fit (groups: gold / retrieved non-gold / placebo with the gold flag;
    candidate / placebo without it). Returns ``(graded qrels, signed gains)``: grades 1-3 for a positive posterior
    mean (below half the minimum effect, below it, above it), 0 otherwise; gains = the posterior means."""
    from scipy.stats import norm

    min_effect = float(dataset.metadata.get("min_effect") or 0.5)
    rows = []
    for p in dataset.pairs:
        for c in p["candidates"]:
            eff = c.get("regression_effect") or {}
            if eff.get("coef") is None or not eff.get("se"):
                continue
            src = set(c.get("source") or [])
            if src == {"placebo"}:
                group = "placebo"
            elif gold_prior:
                group = "gold" if "gold" in src else "retrieved"
            else:
                group = "candidate"
            rows.append((str(p["id"]), str(c["doc_id"]), group, float(eff["coef"]), float(eff["se"])))
    qrels: dict[str, dict[str, int]] = {str(p["id"]): {} for p in dataset.pairs}
    gains: dict[str, dict[str, float]] = {}
    fits = {}
    for group in {r[2] for r in rows}:
        sel = [r for r in rows if r[2] == group]
        fits[group] = _eb_fit(np.array([r[3] for r in sel]), np.array([r[4] for r in sel]))
    for cid, did, group, b, se in rows:
        mu, tau2 = fits[group]
        w = tau2 / (tau2 + se**2)
        mean, sd = mu + w * (b - mu), float(np.sqrt(w * se**2))
        lfsr = float(norm.cdf(-abs(mean) / sd)) if sd > 0 else 0.0
        grade = 0 if mean <= 0 else (1 if mean < min_effect / 2 else 2 if mean < min_effect else 3)
        qrels[cid][did] = grade
        gains.setdefault(cid, {})[did] = mean
        del lfsr  # the prototype's grades use the posterior mean only
    return qrels, gains, fits


def _library_graded(dataset, prior: str):  # type: ignore[no-untyped-def]
    """The library's graded labels of a relabelled dataset (``graded: {gold|no_gold: {utility, grade}}`` per
    candidate, issue 35 item 1), or ``None`` when the dataset has none: ``(qrels, gains, ungated qrels)``, the last
    a variant whose grades come from the utility alone (every positive utility graded, no lfsr gate), with the
    library's grade step."""
    qrels: dict[str, dict[str, int]] = {}
    ungated: dict[str, dict[str, int]] = {}
    gains: dict[str, dict[str, float]] = {}
    step = float(((dataset.metadata.get("graded") or {}).get("grade_mapping") or {}).get("step") or 0.1)
    found = False
    for p in dataset.pairs:
        qrels[str(p["id"])], ungated[str(p["id"])] = {}, {}
        for c in p["candidates"]:
            g = (c.get("graded") or {}).get(prior)
            if not isinstance(g, dict) or g.get("utility") is None:
                continue
            found = True
            u = float(g["utility"])
            qrels[str(p["id"])][str(c["doc_id"])] = int(g.get("grade") or 0)
            ungated[str(p["id"])][str(c["doc_id"])] = max(1, round(u / step)) if u > 0 else 0
            gains.setdefault(str(p["id"]), {})[str(c["doc_id"])] = u
    return (qrels, gains, ungated) if found else None


def load_benchmark(cases_path: Path | None, corpus_path: Path | None) -> list:  # type: ignore[type-arg]
    """The benchmark's cases: ``cases_path`` over ``corpus_path``, or the bundled stdlib benchmark."""
    if cases_path is None:
        return _inputs(Path("."))[1]
    from deltap import load_cases, load_corpus

    return load_cases(cases_path, load_corpus(corpus_path), on_missing="skip")


def relabel_phase(out: Path, scratch: Path, cases: list, k: int) -> None:  # type: ignore[type-arg]
    import shutil
    import warnings

    from deltap import relabel
    from deltap.cli.endtoend_cmd import validity_table
    from deltap.dataset import dataset_qrels, dataset_signed_gains, read_dataset
    from deltap.endtoend.validity import revalidate
    from deltap.judgements import SignedGains
    from deltap.run_layout import RunDir

    warnings.simplefilter("ignore")
    run = out / "run" if (out / "run" / "trials.sqlite").is_file() else out
    gold = {c.case_id: {d: 1 for d in c.gold_doc_ids} for c in cases if c.gold_doc_ids}
    if scratch.exists():
        shutil.rmtree(scratch)
    t0 = time.perf_counter()
    same = relabel(run, scratch / "same")
    topic = relabel(run, scratch / "topic", null="topic", gold_weight_learned=True)
    seconds = time.perf_counter() - t0
    original = read_dataset(RunDir(run).dataset)
    identical = (RunDir(run).qrels_trec.read_text() == RunDir(scratch / "same").qrels_trec.read_text()
                 and [c["verdict"] for p in original.pairs for c in p["candidates"]]
                 == [c["verdict"] for p in same.dataset.pairs for c in p["candidates"]])  # fmt: skip
    print(f"relabelled {run} twice in {seconds:.1f} s, {same.run['relabel']['calls'] + topic.run['relabel']['calls']} solver calls; "
          f"the run's own options (today's defaults for those it left unset) give back its verdicts and qrels: {identical}")  # fmt: skip
    for name, res in (("as mined", same), ("topic null + learned gold weight", topic)):
        print(f"  {name}: verdicts {res.run['verdicts']}, null {res.run['relabel']['null']}, "
              f"changed {res.run['relabel']['verdicts_changed'] or 'nothing'}")  # fmt: skip
    judgements: dict[str, dict[str, dict[str, int]]] = {"gold": gold, "deltap": dataset_qrels(original)}
    judgements["deltap topic"] = dataset_qrels(topic.dataset)
    gains: dict[str, object] = {"deltap topic (signed)": SignedGains(*dataset_signed_gains(topic.dataset)[:2])}
    for prior, label in (("gold", "graded, gold prior"), ("no_gold", "graded, no gold prior")):
        lib = _library_graded(same.dataset, prior)
        if lib is not None:
            judgements[label], gains[f"{label} (signed)"] = lib[0], lib[1]
            judgements[f"{label}, ungated grades"] = lib[2]  # a variant: why the lfsr gate matters (see README)
            continue
        q, g, fits = prototype_graded(original, prior == "gold")
        judgements[f"{label} PROTO"], gains[f"{label} PROTO (signed)"] = q, g
        print(
            f"  PROTOTYPE graded labels ({label}; the library's are not in this dataset): group fits "
            + ", ".join(f"{grp} mean {mu:+.2f} sd {np.sqrt(t2):.2f}" for grp, (mu, t2) in sorted(fits.items()))
        )
    metrics = [f"ndcg@{k}", f"hit_rate@{k}", f"recall@{k}"]
    v = revalidate(run / "endtoend", judgements, metrics, dataset_path=RunDir(run).dataset, gains=gains)
    print(validity_table(v))
    for n in v["notes"]:
        print("note:", n)
    _headline(v, f"ndcg@{k}")


def _headline(v: dict, metric: str) -> None:  # type: ignore[type-arg]
    """The compact table: each labelling's within-question figures and its difference from gold ``metric`` (paired
    over questions)."""

    def f(x: object) -> str:
        return "—" if x is None else f"{x:+.2f}"

    def ci(c: object) -> str:
        return "" if not c or c[0] is None else f" [{c[0]:+.2f}, {c[1]:+.2f}]"  # type: ignore[index]

    print(
        f"\n| labels | metric | τ within questions | questions tying every system | question-centred r | τ within − gold {metric} |"
    )
    print("|---|---|---|---|---|---|")
    for r in v["rows"]:
        m, q = r["metric"], r["qrels"]
        if m != metric and not m.startswith(("signed_utility@", "erag_precision@")):
            continue
        c = next((c for c in v["comparisons"] if c["qrels_a"] == q and c["metric"].startswith(m)), None)
        diff = f"{f(c['tau_within_diff'])}{ci(c['tau_within_diff_ci'])}" if c and q != "gold" else ""
        print(f"| {q} | {m} | {f(r['tau_within'])}{ci(r['tau_within_ci'])} | {r['ties']} of {r['questions']} | "
              f"{f(r['r_centred'])}{ci(r['r_centred_ci'])} | {diff} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--phase",
        choices=("simulated", "mine", "endtoend", "real", "relabel"),
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
    ap.add_argument("--scratch", type=Path, default=None, help="relabel: where the relabelled runs go (replaced)")
    ap.add_argument(
        "--cases-file", type=Path, default=None, help="relabel: the benchmark (default: the bundled stdlib one)"
    )
    ap.add_argument("--corpus", type=Path, default=None, help="relabel: the corpus of --cases-file")
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
    elif args.phase == "relabel":
        scratch = args.scratch or Path("/tmp") / f"relabel-{args.out.name}"
        relabel_phase(args.out, scratch, load_benchmark(args.cases_file, args.corpus), args.k)
    elif args.phase == "endtoend":
        endtoend_phase(args.out, args.k, args.outcome, args.controls.split(","), bool(args.single_doc))
    else:
        mine_phase(args.out, args.limit, args.budget, args.first)
        endtoend_phase(args.out, args.k, args.outcome, args.controls.split(","), bool(args.single_doc))


if __name__ == "__main__":
    main()
