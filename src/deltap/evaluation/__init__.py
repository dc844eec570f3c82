"""Evaluation: IR metrics against qrels, retriever comparison with significance tests, failure analysis.

* :func:`evaluate` — one run: per-query values, means, bootstrap confidence intervals (:mod:`.scores`).
* :func:`compare` — several runs: a :class:`Comparison` with paired tests against a baseline, Holm-corrected
  (:mod:`.comparison`); :func:`score_runs` does one or the other from the settings objects (:mod:`.settings`).
* :func:`analyze_failures` — why relevant documents missed the top K (vocabulary mismatch, specificity gap,
  distractor overlap), with the evidence (:mod:`.failures`).
* :func:`load_judgements` — qrels with their side information (:mod:`deltap.judgements`); :func:`retrieve_runs` —
  runs built by retrievers (:mod:`.sources`).
* :func:`parse_metric` — ``"ndcg@10"`` → :class:`Measure`.
* :func:`accelerator_status` — whether :func:`evaluate` runs its compiled inner loops or pure Python
  (:mod:`.accel`).
* :func:`audit_qrels` — the benchmark's gold documents against the mined verdicts, and the relevant documents the
  gold misses (:mod:`.audit`).

Names are lazy: ``import deltap.evaluation.settings`` (what the CLI needs for its defaults) does not load numpy or
scipy; using :func:`evaluate` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltap._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "Comparison": "deltap.evaluation.comparison",
    "compare": "deltap.evaluation.comparison",
    "score_runs": "deltap.evaluation.comparison",
    "EvalResult": "deltap.evaluation.scores",
    "evaluate": "deltap.evaluation.scores",
    "Failure": "deltap.evaluation.failures",
    "FailureAnalysis": "deltap.evaluation.failures",
    "analyze_failures": "deltap.evaluation.failures",
    "DEFAULT_METRICS": "deltap.evaluation.measures",
    "Measure": "deltap.evaluation.measures",
    "parse_metric": "deltap.evaluation.measures",
    "parse_metrics": "deltap.evaluation.measures",
    "EvaluationWarning": "deltap.evaluation.ranking",
    "ComparisonSettings": "deltap.evaluation.settings",
    "EvaluationSettings": "deltap.evaluation.settings",
    "RetrievalSettings": "deltap.evaluation.settings",
    "Judgements": "deltap.judgements",
    "load_judgements": "deltap.judgements",
    "retrieve_runs": "deltap.evaluation.sources",
    "QrelsAudit": "deltap.evaluation.audit",
    "audit_qrels": "deltap.evaluation.audit",
    "SignedGains": "deltap.judgements",
    "accelerator_status": "deltap.evaluation.accel",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from deltap.evaluation.accel import accelerator_status
    from deltap.evaluation.audit import QrelsAudit, audit_qrels
    from deltap.evaluation.comparison import Comparison, compare, score_runs
    from deltap.evaluation.failures import Failure, FailureAnalysis, analyze_failures
    from deltap.evaluation.measures import DEFAULT_METRICS, Measure, parse_metric, parse_metrics
    from deltap.evaluation.ranking import EvaluationWarning
    from deltap.evaluation.scores import EvalResult, evaluate
    from deltap.evaluation.settings import ComparisonSettings, EvaluationSettings, RetrievalSettings
    from deltap.evaluation.sources import retrieve_runs
    from deltap.judgements import Judgements, SignedGains, load_judgements
