"""Normalized discounted cumulative gain (graded)."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric, by_query_then_grade_desc, group_position
from deltap.evaluation.ranking import NOT_RETRIEVED, Ranking


class NDCG(Metric):
    r"""Normalized discounted cumulative gain at K, with graded gains.

    .. math::
        \mathrm{DCG@K}(q) = \sum_{i=1}^{\min(K, n)} \frac{g(d_i)}{\log_2(i + 1)}, \qquad
        \mathrm{nDCG@K}(q) = \frac{\mathrm{DCG@K}(q)}{\mathrm{IDCG@K}(q)}

    with IDCG@K the DCG@K of the judged documents sorted by decreasing grade. Gains follow trec_eval by default:
    ``g(d) = grade(d)`` (``gain=linear``); ``gain=exp`` uses ``2^grade − 1`` (Burges et al., 2005). Without K the
    whole run and all judged documents count (trec_eval's ``ndcg``); 0 when the query has no relevant document.
    Every grade > 0 contributes its gain (the relevance level does not apply), as in trec_eval.

    Reference: Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", ACM TOIS 20(4), 2002;
    trec_eval 9 ``m_ndcg_cut.c``.
    """

    name = "ndcg"
    label = "ndcg"
    aliases = ("ndcg_cut", "n_dcg")
    cutoff = "optional"
    params = {"gain": ("linear", "exp")}

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        n = ranking.n_queries
        grade = ranking.grade.astype(np.float64)
        gain = np.exp2(grade) - 1.0 if params.get("gain", "linear") == "exp" else grade
        cut = NOT_RETRIEVED - 1 if k is None else k
        got = ranking.rank <= cut
        dcg = np.bincount(
            ranking.query[got], weights=gain[got] / np.log2(ranking.rank[got].astype(np.float64) + 1.0), minlength=n
        )
        order = by_query_then_grade_desc(ranking.query, ranking.grade)
        q_sorted = ranking.query[order]
        pos = group_position(q_sorted)
        keep = pos <= cut
        idcg = np.bincount(
            q_sorted[keep], weights=gain[order][keep] / np.log2(pos[keep].astype(np.float64) + 1.0), minlength=n
        )
        return np.divide(dcg, idcg, out=np.zeros(n), where=idcg > 0)

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        if params.get("gain", "linear") != "linear":
            return None
        return ("ndcg", "ndcg") if k is None else (f"ndcg_cut.{k}", f"ndcg_cut_{k}")
