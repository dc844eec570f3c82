"""Precision at K."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, hits_within
from deltap.evaluation.ranking import Ranking


class Precision(Metric):
    r"""Precision at K: the fraction of the top K that is relevant.

    .. math:: P@K(q) = \frac{|\mathrm{rel}(q) \cap \mathrm{top}_K(q)|}{K}

    The denominator is always K, even when the run returned fewer than K documents (trec_eval's ``P_K``).
    Relevant = grade >= ``rel`` (default 1).

    Reference: Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), §8.4.
    """

    name = "precision"
    label = "P"
    aliases = ("p", "prec", "precision_at_k")
    cutoff = "required"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        assert k is not None  # guaranteed by cutoff = "required"
        found = np.bincount(
            ranking.query[hits_within(ranking, k, int(params.get("rel", 1)))], minlength=ranking.n_queries
        )
        return found / float(k)

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return (f"P.{k}", f"P_{k}")
