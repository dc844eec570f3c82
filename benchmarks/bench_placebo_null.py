"""Placebo-null benchmark, end to end through ``deltap.mine()`` with the simulated solver (the engine's own code path).

Each replication is one dataset of ``--cases`` cases (default 10) mined from scratch with the ``logprob`` outcome:
2 gold documents per case with real effects (+4.0/+3.0 nats, the ``logprob_sparse`` scenario of the simulation),
retrieved documents from a stand-in retriever, and ``--placebos`` placebo documents per case. Every document's text
also moves the log-probability of the reference answer — not relevance, just "any text moves a greedy model":
sparse and heavy-tailed as measured on SmolLM2 (a fifth of the documents, N(0, 1.5²) nats; the rest nothing). In the
``tilted`` scenario the documents on the case's topic (its retrieved documents and the retriever's ranks 21-100) move
it ``--tilt`` times more than random corpus text, which breaks the assumption "retrieved nulls behave like random
placebos" unless the placebos are drawn from the same topic (``--placebo-kind similar``).

Reported per configuration (R replications):

* FDR: mean over datasets of (null documents labelled relevant or harmful) / (documents labelled), and the share of
  datasets with a false label;
* recall: gold documents labelled relevant;
* fresh-null rejection: fresh null documents (new draws of the text effect of a retrieved document, with the run's
  median standard error) tested against the run's fitted null in the relevant direction, rejected at the p-value
  BH used in that run (q·R₊/M) — divided by that p-value (≤ 1 = valid, > 1 = the null is too narrow where BH uses
  it; one look, no repeated-p-value penalty);
* the placebo check's outcome (share of runs where it fails) and the share of runs told "too few placebos".

    python benchmarks/bench_placebo_null.py -r 40                      # default table
    python benchmarks/bench_placebo_null.py -r 10 --placebos 2 --only sparse
    python benchmarks/bench_placebo_null.py -r 20 --s1                 # item 8: S1 (pass) verdicts and intervals
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from deltap.cases import Case
from deltap.documents import Corpus, Document
from deltap.mining import empirical_null
from deltap.mining.engine import mine
from deltap.mining.results import PlaceboCalibrationWarning
from deltap.retrieval.base import Hit
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

N_DOCS = 400
GOLD_EFFECTS = (4.0, 3.0)
SHARE, SCALE, NOISE, BASE = 0.2, 1.5, 0.3, -6.0
TOPIC = 100  # ranks 1..TOPIC of a case's ranking are on its topic


@dataclass
class World:
    """One dataset's planted truth: corpus, cases, per-case ranking and text effects."""

    corpus: Corpus
    cases: list[Case]
    truths: dict[str, SimulatedTruth]
    rankings: dict[str, list[str]]
    gold: dict[str, tuple[str, ...]]
    topic: dict[str, set[str]]


def make_world(rng: np.random.Generator, n_cases: int, tilt: float) -> World:
    ids = [f"doc{i:03d}" for i in range(N_DOCS)]
    corpus = Corpus([Document(d, f"text of {d} " * int(rng.integers(3, 30))) for d in ids])
    cases, truths, rankings, golds, topics = [], {}, {}, {}, {}
    for c in range(n_cases):
        cid = f"case{c:02d}"
        perm = [ids[i] for i in rng.permutation(N_DOCS)]
        gold = tuple(perm[:2])
        ranking = perm[2:]  # the retriever's ranking of the non-gold documents (gold handled by the pool)
        topic = set(ranking[:TOPIC])
        scale = np.array([SCALE * (tilt if d in topic else 1.0) for d in ids])
        moved = rng.random(N_DOCS) < SHARE
        text = np.where(moved, scale * rng.standard_normal(N_DOCS), 0.0)
        effects = {d: float(e) for d, e in zip(ids, text, strict=True) if e != 0.0}
        for g, e in zip(gold, GOLD_EFFECTS, strict=True):
            effects[g] = effects.get(g, 0.0) + e
        cases.append(Case(cid, f"question {cid}", gold_doc_ids=gold, reference_answer=f"answer {cid}"))
        truths[cid] = SimulatedTruth(BASE, effects)
        rankings[cid], golds[cid], topics[cid] = ranking, gold, topic
    return World(corpus, cases, truths, rankings, golds, topics)


class RankedRetriever:
    """Stand-in retriever: each case's planted ranking (gold first, then its topic)."""

    def __init__(self, world: World) -> None:
        self.by_query = {c.query: [*world.gold[c.case_id], *world.rankings[c.case_id]] for c in world.cases}

    def search(self, query: str, k: int = 10, filter: Any = None) -> list[Hit]:
        return [Hit(d, float(-i), i + 1) for i, d in enumerate(self.by_query[query][:k])]


def one_run(seed: int, args: argparse.Namespace, tilt: float, kind: str, n_placebo: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    world = make_world(rng, args.cases, tilt)
    k = args.candidates - 2 - n_placebo
    solver = SimulatedSolver(world.truths, outcome="logprob", noise=NOISE, seed=seed)
    extra = {"placebo_kind": kind} if kind != "random" else {}  # (runs on the code before issue 14 too)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlaceboCalibrationWarning)
        res = mine(
            world.cases,
            world.corpus,
            solver,
            outcome="logprob",
            budget=args.budget,
            seed=seed,
            k=k,
            n_placebo=n_placebo,
            coalitions=False,
            retriever=RankedRetriever(world),
            **extra,
        )
    labelled = false = gold_rel = gold_n = 0
    ses: list[float] = []
    M = 0
    for pair in res.dataset.pairs:
        gold = set(world.gold[pair["id"]])
        for c in pair["candidates"]:
            M += 1
            se = (c.get("regression_effect") or {}).get("se")
            if se is not None:
                ses.append(float(se))
            is_label = c["verdict"] in ("relevant", "harmful")
            labelled += is_label
            if c["doc_id"] in gold:
                gold_n += 1
                gold_rel += c["verdict"] == "relevant"
            elif is_label:
                false += 1
    check = res.run["placebo"]
    null = check.get("null") or {}
    # BH's threshold of the relevant family in this run: q·R₊/M (R₊ = candidates with a q-value ≤ q and a positive
    # effect; every rejection of this scenario is on that side)
    R = sum(
        1
        for p in res.dataset.pairs
        for c in p["candidates"]
        if c.get("q_value") is not None
        and c["q_value"] <= args.q
        and (c.get("regression_effect") or {}).get("coef", 0) > 0
    )
    threshold = args.q * max(R, 1) / M
    # fresh retrieved-like null documents against the run's fitted null, at BH's p-value of this run
    fresh = 20000
    scale = SCALE * tilt
    theta = np.where(rng.random(fresh) < SHARE, scale * rng.standard_normal(fresh), 0.0)
    se = float(np.median(ses)) if ses else 0.05
    est = theta + se * rng.standard_normal(fresh)
    p_fresh = _p_values(est, np.full(fresh, se), args.budget - args.candidates - 1, null)
    return {
        "fdp": false / labelled if labelled else 0.0,
        "any_false": false > 0,
        "recall": gold_rel / gold_n if gold_n else 0.0,
        "fresh_ratio": float(np.mean((p_fresh <= threshold) & (est > 0))) / threshold,  # the relevant family
        "check_failed": bool(check.get("check", {}).get("failed", check.get("warning", False))),
        "too_few": bool(null.get("too_few", False)),
        "calls": res.run["calls"] / len(world.cases),
        "placebo_fpr": float(check.get("fpr", 0.0)),
    }


def _p_values(est: np.ndarray, se: np.ndarray, df: int, null: dict[str, Any]) -> np.ndarray:
    """One-sided p-values (in the direction of each estimate) of one-look tests against the run's null."""
    if hasattr(empirical_null, "null_p_value"):
        return np.asarray(empirical_null.null_p_value(est, se, df, null))
    from scipy import stats

    if null.get("used") != "placebo":
        z = empirical_null.null_z(est, se, df)
    else:
        z = empirical_null.null_z(
            est, se, df, null["center"], null["spread"], null.get("tail_weight", 0.0), null.get("tail_spread", 0.0)
        )
    return np.asarray(stats.norm.sf(np.abs(z)))


def s1_run(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Item 8 of issue 14: S1's shape (pass, +0.4/+0.3 of 20 candidates, base 0.1) through mine(), 10 cases."""
    from deltap.cases import CheckerSpec

    corpus = Corpus([Document(f"d{i:03d}", f"text {i}") for i in range(200)])
    cases = [
        Case(
            f"s{c}",
            f"question s{c}",
            gold_doc_ids=("d000", "d001"),
            checker=CheckerSpec("string_match", {"answers": [f"ans-s{c}"]}),
            reference_answer=f"ans-s{c}",
        )
        for c in range(args.cases)
    ]
    truths = {c.case_id: SimulatedTruth(0.1, {"d000": 0.4, "d001": 0.3}) for c in cases}
    solver = SimulatedSolver(truths, answers={c.case_id: c.reference_answer or "" for c in cases}, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlaceboCalibrationWarning)
        res = mine(cases, corpus, solver, budget=args.budget, seed=seed, n_placebo=18, coalitions=False)
    rows = [c for p in res.dataset.pairs for c in p["candidates"]]
    me = float(res.dataset.metadata["min_effect"])
    rel = [c for c in rows if c["verdict"] == "relevant"]
    false = sum(1 for c in rel + [c for c in rows if c["verdict"] == "harmful"] if c["doc_id"] not in ("d000", "d001"))
    labelled = len(rel) + sum(c["verdict"] == "harmful" for c in rows)

    def low(c: dict[str, Any]) -> float:
        vi = c.get("verdict_interval")
        return float(vi["low"]) if vi and vi.get("low") is not None else float(c.get("ci_low") or -1.0)

    nulls = [c for c in rows if c["doc_id"] not in ("d000", "d001")]
    return {
        "fdp": false / labelled if labelled else 0.0,
        "recall": sum(c["doc_id"] in ("d000", "d001") for c in rel) / (2 * len(cases)),
        "irrelevant": sum(c["verdict"] == "irrelevant" for c in nulls) / len(nulls),
        "low_below_0": sum(low(c) <= 0 for c in rel) / len(rel) if rel else 0.0,
        "low_below_min": sum(low(c) < me for c in rel) / len(rel) if rel else 0.0,
        "dp_low_below_min": sum(float(c.get("ci_low") or -1) < me for c in rel) / len(rel) if rel else 0.0,
        "calls": res.run["calls"] / len(cases),
    }


def s1_table(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    runs = [s1_run(args.seed * 100003 + i, args) for i in range(args.replications)]
    mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    print(
        "| S1 (pass) through mine() | FDR | recall | nulls labelled irrelevant | relevant with interval low ≤ 0 | "
        "relevant with interval low < min_effect | relevant with Newcombe ci_low < min_effect | calls/case | s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {args.replications} datasets of {args.cases} cases | {mean['fdp']:.3f} | {mean['recall']:.3f} | {mean['irrelevant']:.3f} | "
        f"{mean['low_below_0']:.3f} | {mean['low_below_min']:.3f} | {mean['dp_low_below_min']:.3f} | {mean['calls']:.1f} | "
        f"{time.perf_counter() - t0:.0f} |",
        flush=True,
    )


PLAN = [  # (scenario, tilt, placebo kind, placebos per case)
    ("sparse", 1.0, "random", 2),
    ("sparse", 1.0, "random", 3),
    ("sparse", 1.0, "random", 5),
    ("sparse", 1.0, "random", 8),
    ("tilted", 1.75, "random", 5),
    ("tilted", 1.75, "similar", 5),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-r", "--replications", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--candidates", type=int, default=20, help="candidates per case (2 gold + retrieved + placebos)")
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--q", type=float, default=0.05)
    ap.add_argument("--only", help="run only this scenario (sparse or tilted)")
    ap.add_argument("--placebos", type=int, help="run only this placebo count")
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--s1", action="store_true", help="the S1 (pass) table of verdicts and intervals instead (item 8)")
    args = ap.parse_args()
    if args.s1:
        s1_table(args)
        return
    plan = [
        p for p in PLAN if (args.only is None or p[0] == args.only) and (args.placebos is None or p[3] == args.placebos)
    ]
    print(
        f"# bench_placebo_null: {args.replications} datasets of {args.cases} cases x {args.candidates} candidates, "
        f"budget {args.budget}, q {args.q}, seed {args.seed}, {platform.machine()} {platform.python_version()}"
    )
    print()
    print(
        "| scenario | placebos | per case | FDR | P(any false) | recall | fresh-null ratio (median, 90%) | check failed | too few | calls/case | s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name, tilt, kind, n_p in plan:
        t0 = time.perf_counter()
        runs = [one_run(args.seed * 100003 + i, args, tilt, kind, n_p) for i in range(args.replications)]
        fr = np.array([r["fresh_ratio"] for r in runs])
        row = {
            "scenario": name,
            "kind": kind,
            "placebos_per_case": n_p,
            "replications": len(runs),
            "fdr": float(np.mean([r["fdp"] for r in runs])),
            "p_any_false": float(np.mean([r["any_false"] for r in runs])),
            "recall": float(np.mean([r["recall"] for r in runs])),
            "fresh_ratio_median": float(np.median(fr)),
            "fresh_ratio_p90": float(np.quantile(fr, 0.9)),
            "check_failed": float(np.mean([r["check_failed"] for r in runs])),
            "too_few": float(np.mean([r["too_few"] for r in runs])),
            "calls": float(np.mean([r["calls"] for r in runs])),
            "seconds": round(time.perf_counter() - t0, 1),
        }
        rows.append(row)
        print(
            f"| {name} | {kind} | {n_p} | {row['fdr']:.3f} | {row['p_any_false']:.2f} | {row['recall']:.3f} | "
            f"{row['fresh_ratio_median']:.2f}, {row['fresh_ratio_p90']:.2f} | {row['check_failed']:.2f} | "
            f"{row['too_few']:.2f} | {row['calls']:.1f} | {row['seconds']:.0f} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
