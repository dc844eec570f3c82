"""Set recall at K: how much of a winning coalition the top K contains."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric
from deltap.evaluation.metrics.recall import recall_at_k
from deltap.evaluation.ranking import Ranking


class SetRecall(Metric):
    r"""Set recall at K: the fraction of the query's winning coalition found in the top K.

    A winning coalition is a set of documents that together let the solver succeed (mined by deltap: documents that
    only help together). With coalitions :math:`C_1, \dots, C_m` recorded for a query, the best one counts:

    .. math:: \mathrm{set\_recall@K}(q) = \max_j \frac{|C_j \cap \mathrm{top}_K(q)|}{|C_j|}

    With no coalition recorded, the relevant set (grade >= ``rel``) is the coalition, which makes the value equal to
    ``recall@K`` for that query. Pass coalitions to :func:`deltap.evaluate` as ``{query_id: [{doc_id, ...}, ...]}``.

    Reference: the deltap design, §7 (coalitions); recall as in Manning et al. (2008), §8.3.
    """

    name = "set_recall"
    label = "set_recall"
    aliases = ("setrecall", "coalition_recall")
    cutoff = "required"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        assert k is not None  # guaranteed by cutoff = "required"
        out = recall_at_k(ranking, k, int(params.get("rel", 1)))
        coal = ranking.coalitions
        if coal is None or len(coal.query) == 0:
            return out
        found = np.bincount(coal.member_coalition, weights=coal.member_rank <= k, minlength=len(coal.query))
        best = np.full(ranking.n_queries, -1.0)
        np.maximum.at(best, coal.query, found / coal.size)
        return np.where(best >= 0, best, out)
