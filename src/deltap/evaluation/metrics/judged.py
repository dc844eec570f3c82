"""Judged at K: the share of the top K the qrels judge at all."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from deltap.evaluation.metrics.base import Metric
from deltap.evaluation.ranking import Ranking


class Judged(Metric):
    r"""Judged at K: the fraction of the top K documents that carry a judgement, of any grade (0 included).

    .. math:: \mathrm{judged@K}(q) = \frac{|\{d \in \mathrm{top}_K(q) : d \text{ judged}\}|}{K}

    The denominator is K, as for P@K (a run shorter than K loses the missing slots). On a deltap verified dataset
    the judged documents are the *decided* ones (relevant, irrelevant, harmful): undecided candidates carry no
    grade. A metric that counts unjudged documents as 0 — every metric, and ``signed_utility@K`` most visibly —
    says little about a run whose judged@K is low; deltap prints judged@K beside ``signed_utility@K``.

    Reference: ir_measures ``Judged@k``; Sakai & Kando, "On information retrieval metrics designed for evaluation
    with incomplete relevance assessments", Information Retrieval 11(5), 2008.
    """

    name = "judged"
    label = "judged"
    aliases = ("judged_at",)
    cutoff = "required"
    params: ClassVar[dict[str, tuple[str, ...] | None]] = {}
    needs: ClassVar[frozenset[str]] = frozenset({"judged"})

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        assert k is not None  # guaranteed by cutoff = "required"
        j = ranking.judged
        if j is None:
            raise ValueError("judged@K needs the ranks of every judged document (build_ranking(..., judged=qrels))")
        got = j.rank <= k
        return np.bincount(j.query[got], minlength=ranking.n_queries) / float(k)
