"""Hit rate at K (success@K): the design's "Recall@K"."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, hits_within
from deltap.evaluation.ranking import Ranking


class HitRate(Metric):
    r"""Hit rate at K, also called success@K: 1 if any relevant document is in the top K, else 0.

    .. math:: \mathrm{hit\_rate@K}(q) = \mathbb{1}\left[\,|\mathrm{rel}(q) \cap \mathrm{top}_K(q)| > 0\,\right]

    This is what the deltap design (and the seed project) calls "Recall@K"; it is **not** the classical recall,
    which is ``recall@K`` (:class:`~deltap.evaluation.metrics.recall.Recall`). Relevant = grade >= ``rel``
    (default 1). trec_eval's ``success_K``.

    Reference: trec_eval 9 ``m_success.c``; Craswell, "Success at n", Encyclopedia of Database Systems (2009).
    """

    name = "hit_rate"
    label = "hit_rate"
    aliases = ("success", "hits", "hit", "hitrate", "success_rate")
    cutoff = "required"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        mask = hits_within(ranking, k, int(params.get("rel", 1)))
        counts = np.bincount(ranking.query[mask], minlength=ranking.n_queries)
        return (counts > 0).astype(np.float64)

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return (f"success.{k}", f"success_{k}")
