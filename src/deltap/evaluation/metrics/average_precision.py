"""Average precision (MAP when averaged), optionally cut at K."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, group_position, hits_within
from deltap.evaluation.ranking import Ranking


class AveragePrecision(Metric):
    r"""Average precision; its mean over queries is MAP.

    .. math:: \mathrm{AP@K}(q) = \frac{1}{|\mathrm{rel}(q)|} \sum_{i \le K,\ d_i \in \mathrm{rel}(q)} P@i(q)

    The denominator counts *all* relevant documents, retrieved or not (trec_eval's ``map`` and ``map_cut_K``);
    0 when the query has none. Relevant = grade >= ``rel`` (default 1).

    Reference: Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR 2000; trec_eval 9 ``m_map.c``.
    """

    name = "map"
    label = "MAP"
    aliases = ("ap", "average_precision", "map_cut")
    cutoff = "optional"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        rel = int(params.get("rel", 1))
        mask = hits_within(ranking, k, rel)
        q = ranking.query[mask]
        precision_at_hit = group_position(q) / ranking.rank[mask].astype(np.float64)
        total = np.bincount(q, weights=precision_at_hit, minlength=ranking.n_queries)
        num_rel = ranking.num_rel(rel)
        return np.divide(total, num_rel, out=np.zeros(ranking.n_queries), where=num_rel > 0)

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return ("map", "map") if k is None else (f"map_cut.{k}", f"map_cut_{k}")
