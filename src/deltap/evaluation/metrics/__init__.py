"""IR metrics, one algorithm per file; :data:`METRICS` maps each canonical name to its implementation."""

from __future__ import annotations

from deltap.evaluation.metrics.average_precision import AveragePrecision
from deltap.evaluation.metrics.base import Metric
from deltap.evaluation.metrics.hit_rate import HitRate
from deltap.evaluation.metrics.judged import Judged
from deltap.evaluation.metrics.ndcg import NDCG
from deltap.evaluation.metrics.precision import Precision
from deltap.evaluation.metrics.r_precision import RPrecision
from deltap.evaluation.metrics.recall import Recall
from deltap.evaluation.metrics.reciprocal_rank import ReciprocalRank
from deltap.evaluation.metrics.set_recall import SetRecall
from deltap.evaluation.metrics.signed_utility import SignedUtility

__all__ = [
    "METRICS",
    "NDCG",
    "AveragePrecision",
    "HitRate",
    "Judged",
    "Metric",
    "Precision",
    "RPrecision",
    "Recall",
    "ReciprocalRank",
    "SetRecall",
    "SignedUtility",
]

#: canonical name -> metric implementation
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        HitRate(),
        Recall(),
        Precision(),
        ReciprocalRank(),
        NDCG(),
        AveragePrecision(),
        RPrecision(),
        SetRecall(),
        SignedUtility(),
        Judged(),
    )
}
