"""The numbers behind the report's figures: hit rate / recall curves, convergence, binomial intervals.

Kept apart from the drawing code (:mod:`deltap.report.plots`) so they can be tested as values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ConvergencePoint",
    "convergence",
    "hit_at_k",
    "ranked_ids",
    "recall_curve",
    "wilson_interval",
]


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    With p̂ = s/n: centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z·sqrt(p̂(1−p̂)/n + z²/4n²) / (1 + z²/n).
    Good coverage for small n and for proportions near 0 or 1, unlike the Wald interval (Wilson 1927,
    "Probable inference, the law of succession, and statistical inference", JASA 22:209-212; Brown, Cai & DasGupta
    2001, "Interval estimation for a binomial proportion", Statistical Science 16:101-133).

    Args:
        successes: Number of successes, 0 <= successes <= n.
        n: Number of trials; ``n == 0`` gives the uninformative interval (0, 1).
        z: Normal quantile (default 95 %).
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be within [0, n], got {successes} of {n}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """Document ids of one run row, best first; ties by doc id, descending (trec_eval's order)."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def _relevant(qrels: Mapping[str, Mapping[str, int]], qid: str) -> set[str]:
    return {d for d, g in qrels.get(qid, {}).items() if g > 0}


def hit_at_k(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], k: int) -> dict[str, int]:
    """Per-query hit@K ("Recall@K" of the seed design, also called success@K).

    hit@K(q) = 1 if any document with grade > 0 is among the top K of the run for q, else 0. Queries of ``qrels``
    without a relevant document score 0, and so do queries absent from ``run`` (like trec_eval ``-c``): the same
    rule as ``deltap evaluate`` (:data:`deltap.evaluation.ranking.EMPTY_QUERY_RULE`), so the report's means equal
    the evaluation's. Keys follow the order of ``qrels``.
    """
    out: dict[str, int] = {}
    for qid in qrels:
        rel = _relevant(qrels, qid)
        top = ranked_ids(run.get(qid, {}))[:k]
        out[qid] = int(any(d in rel for d in top))
    return out


def recall_curve(
    qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]], ks: Sequence[int]
) -> dict[str, list[float]]:
    """Mean hit@K and mean recall@K for each K in ``ks``.

    recall@K(q) = |relevant ∩ top K| / |relevant| (Manning, Raghavan & Schütze 2008, *Introduction to Information
    Retrieval*, §8.3), 0 for a query without a relevant document; means are over every query of ``qrels`` (the rule
    of :func:`hit_at_k`).

    Returns:
        ``{"hit_rate": [...], "recall": [...]}``, one value per K (empty lists when no query has a relevant doc).
    """
    queries = list(qrels)
    if not any(_relevant(qrels, q) for q in queries):
        return {"hit_rate": [], "recall": []}
    rankings = {q: ranked_ids(run.get(q, {})) for q in queries}
    hit_rate: list[float] = []
    recall: list[float] = []
    for k in ks:
        hits = 0
        rec = 0.0
        for q in queries:
            rel = _relevant(qrels, q)
            found = sum(d in rel for d in rankings[q][:k])
            hits += found > 0
            rec += found / len(rel) if rel else 0.0
        hit_rate.append(hits / len(queries))
        recall.append(rec / len(queries))
    return {"hit_rate": hit_rate, "recall": recall}


@dataclass(frozen=True)
class ConvergencePoint:
    """Mean hit@K over the first ``n_cases`` cases, with its 95 % Wilson interval."""

    n_cases: int
    mean: float
    low: float
    high: float


def convergence(per_query: Mapping[str, int], order: Sequence[str] | None = None) -> list[ConvergencePoint]:
    """Dataset-level mean hit@K as cases are added, in dataset order.

    The seed design's convergence check: if the running mean still moves by more than its interval width when the
    last cases are added, the dataset is too small to rank retrievers by this metric.

    Args:
        per_query: ``{query_id: 0/1}`` from :func:`hit_at_k`.
        order: Case order (the dataset's); ids absent from ``per_query`` are skipped. Defaults to its key order.
    """
    ids = [q for q in (order if order is not None else list(per_query)) if q in per_query]
    points: list[ConvergencePoint] = []
    hits = 0
    for n, qid in enumerate(ids, start=1):
        hits += per_query[qid]
        low, high = wilson_interval(hits, n)
        points.append(ConvergencePoint(n_cases=n, mean=hits / n, low=low, high=high))
    return points
