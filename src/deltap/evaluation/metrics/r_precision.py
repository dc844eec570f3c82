"""R-precision."""

from __future__ import annotations

import numpy as np

from deltap.evaluation.metrics.base import Metric
from deltap.evaluation.ranking import Ranking


class RPrecision(Metric):
    r"""R-precision: precision at rank R, where R is the number of relevant documents of the query.

    .. math:: \mathrm{Rprec}(q) = \frac{|\mathrm{rel}(q) \cap \mathrm{top}_{R}(q)|}{R}, \quad R = |\mathrm{rel}(q)|

    0 when the query has no relevant document. Relevant = grade >= ``rel`` (default 1). trec_eval's ``Rprec``.

    Reference: Buckley & Voorhees, "Retrieval system evaluation", in *TREC: Experiment and Evaluation in
    Information Retrieval* (2005).
    """

    name = "rprec"
    label = "R-prec"
    aliases = ("r-prec", "r_prec", "r-precision", "r_precision", "rprecision")
    cutoff = "none"

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        rel = int(params.get("rel", 1))
        num_rel = ranking.num_rel(rel)
        mask = (ranking.grade >= rel) & (ranking.rank <= num_rel[ranking.query])
        found = np.bincount(ranking.query[mask], minlength=ranking.n_queries)
        return np.divide(found, num_rel, out=np.zeros(ranking.n_queries), where=num_rel > 0)

    def trec_eval(self, k: int | None, params: dict[str, int | str]) -> tuple[str, str] | None:
        return ("Rprec", "Rprec")
