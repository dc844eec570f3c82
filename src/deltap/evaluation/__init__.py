"""Evaluation: IR metrics against qrels, retriever comparison with significance tests, failure analysis.

* :func:`evaluate` — one run: per-query values, means, bootstrap confidence intervals.
* :func:`compare` — several runs: a :class:`Report` with paired tests against a baseline (Holm-corrected).
* :func:`analyze_failures` — why relevant documents missed the top K (vocabulary mismatch, specificity gap,
  distractor overlap), with the evidence.
* :func:`parse_metric` — ``"ndcg@10"`` → :class:`Measure`.

Importing this package loads numpy and scipy; ``import deltap`` does not (its names are lazy).
"""

# Eager on purpose: the submodules ``evaluate`` and ``compare`` share their function's name, and a lazy
# ``__getattr__`` would hand out the module once the submodule had been imported.
from deltap.evaluation.compare import Report, compare
from deltap.evaluation.evaluate import EvalResult, evaluate
from deltap.evaluation.failures import Failure, FailureReport, analyze_failures
from deltap.evaluation.measures import DEFAULT_METRICS, Measure, parse_metric, parse_metrics
from deltap.evaluation.ranking import EvaluationWarning
from deltap.evaluation.sources import Judgements, load_judgements

__all__ = [
    "DEFAULT_METRICS",
    "EvalResult",
    "EvaluationWarning",
    "Failure",
    "FailureReport",
    "Judgements",
    "Measure",
    "Report",
    "analyze_failures",
    "compare",
    "evaluate",
    "load_judgements",
    "parse_metric",
    "parse_metrics",
]
