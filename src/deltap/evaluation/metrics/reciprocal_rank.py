"""Reciprocal rank (MRR when averaged), optionally cut at K."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, group_starts, hits_within
from deltap.evaluation.ranking import Ranking


class ReciprocalRank(Metric):
    r"""Reciprocal rank of the first relevant document; its mean over queries is MRR.

    .. math:: \mathrm{RR@K}(q) = \begin{cases} 1/\mathrm{rank}_1(q) & \mathrm{rank}_1(q) \le K \\ 0 & \text{otherwise}\end{cases}

    where :math:`\mathrm{rank}_1(q)` is the rank of the highest-ranked relevant document (grade >= ``rel``). Without
    K, the whole run counts (trec_eval's ``recip_rank``); 0 when no relevant document is retrieved.

    Reference: Voorhees, "The TREC-8 Question Answering Track Report", TREC 1999.
    """

    name = "mrr"
    label = "MRR"
    aliases = ("recip_rank", "rr", "reciprocal_rank")
    cutoff = "optional"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        mask = hits_within(ranking, k, int(params.get("rel", 1)))
        q = ranking.query[mask]
        out = np.zeros(ranking.n_queries)
        first = group_starts(q)  # entries are sorted by (query, rank): a query's first entry is its best
        out[q[first]] = 1.0 / ranking.rank[mask][first]
        return out

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return ("recip_rank", "recip_rank") if k is None else None
