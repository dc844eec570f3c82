"""Recall at K."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, hits_within
from deltap.evaluation.ranking import Ranking


def recall_at_k(ranking: Ranking, k: int | None, rel: int) -> np.ndarray:
    """Per-query recall@K (0 for queries without relevant documents, as trec_eval)."""
    found = np.bincount(ranking.query[hits_within(ranking, k, rel)], minlength=ranking.n_queries)
    num_rel = ranking.num_rel(rel)
    return np.divide(found, num_rel, out=np.zeros(ranking.n_queries), where=num_rel > 0)


class Recall(Metric):
    r"""Recall at K: the fraction of a query's relevant documents found in its top K.

    .. math:: \mathrm{recall@K}(q) = \frac{|\mathrm{rel}(q) \cap \mathrm{top}_K(q)|}{|\mathrm{rel}(q)|}

    Relevant = grade >= ``rel`` (default 1); 0 when the query has no relevant document (trec_eval's rule).
    trec_eval's ``recall_K``. Not to be confused with the design's "Recall@K", which is ``hit_rate@K``.

    Reference: Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), §8.3.
    """

    name = "recall"
    label = "recall"
    aliases = ("r", "recall_at_k")
    cutoff = "required"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        return recall_at_k(ranking, k, int(params.get("rel", 1)))

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return (f"recall.{k}", f"recall_{k}")
