"""deltap: retrieval ground truth proven by task success.

A document is relevant to a question when putting it in an LLM's context measurably raises the probability that a
real checker accepts the answer: ΔP = P(success | doc in) − P(success | doc out).

The public API mirrors the CLI. Names are imported lazily (no heavy imports, no side effects at import time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltap._lazy import lazy_exports
from deltap._version import __version__

# public name -> module that defines it
_LAZY: dict[str, str] = {
    # core types and errors
    "Document": "deltap.documents",
    "Corpus": "deltap.documents",
    "Case": "deltap.cases",
    "CheckerSpec": "deltap.cases",
    "Qrels": "deltap.qrels",
    "Run": "deltap.qrels",
    "DeltapError": "deltap.errors",
    "FormatError": "deltap.errors",
    "MissingIdsError": "deltap.errors",
    "DuplicateIdsError": "deltap.errors",
    # loading and writing
    "load_corpus": "deltap.loaders",
    "load_cases": "deltap.loaders",
    "load_beir": "deltap.loaders",
    "load_qrels": "deltap.judgements",
    "load_run": "deltap.qrels",
    "run_to_dataframe": "deltap.frames",
    "qrels_to_dataframe": "deltap.frames",
    # retrieval contract
    "Hit": "deltap.retrieval.base",
    "Retriever": "deltap.retrieval.base",
    "build_retriever": "deltap.retrieval.factory",
    "open_index": "deltap.retrieval.factory",
    # solver and checker contracts
    "Solver": "deltap.solvers.base",
    "SolveRequest": "deltap.solvers.base",
    "Answer": "deltap.solvers.base",
    "Score": "deltap.solvers.base",
    "SolverError": "deltap.solvers.base",
    "make_solver": "deltap.solvers",
    "solve_many": "deltap.solvers",
    "render_prompt": "deltap.solvers.prompts",
    "Checker": "deltap.checkers.base",
    "CheckResult": "deltap.checkers.base",
    "Verdict": "deltap.checkers.base",
    "make_checker": "deltap.checkers",
    # evaluation
    "evaluate": "deltap.evaluation",
    "compare": "deltap.evaluation",
    "Comparison": "deltap.evaluation",
    "EvalResult": "deltap.evaluation",
    "Measure": "deltap.evaluation",
    "parse_metric": "deltap.evaluation",
    "analyze_failures": "deltap.evaluation",
    "FailureAnalysis": "deltap.evaluation",
    "EvaluationWarning": "deltap.evaluation",
    "SignedGains": "deltap.evaluation",
    "audit_qrels": "deltap.evaluation",
    "QrelsAudit": "deltap.evaluation",
    # reports and the demo
    "load_run_dir": "deltap.report",
    "write_html_report": "deltap.report",
    "write_markdown_report": "deltap.report",
    "run_demo": "deltap.demo",
    "DemoConfig": "deltap.demo",
    # pipeline check
    "check_pipeline": "deltap.check",
    "PipelineCheckResult": "deltap.check",
    # end-to-end evaluation
    "evaluate_end_to_end": "deltap.endtoend",
    "EndToEndConfig": "deltap.endtoend",
    "EndToEndResult": "deltap.endtoend",
    # mining
    "mine": "deltap.mining.engine",
    "relabel": "deltap.mining.relabel",
    "MiningConfig": "deltap.mining.config",
    "MiningResult": "deltap.mining.results",
    "PlaceboCalibrationWarning": "deltap.mining.results",
    "simulate": "deltap.mining.simulation",
    "SimulatedSolver": "deltap.solvers.simulated",
    "SimulatedTruth": "deltap.solvers.simulated",
    "VerifiedDataset": "deltap.dataset",
    "read_dataset": "deltap.dataset",
    "write_dataset": "deltap.dataset",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, extra=["__version__"])


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from deltap.cases import Case, CheckerSpec
    from deltap.check import PipelineCheckResult, check_pipeline
    from deltap.checkers import make_checker
    from deltap.checkers.base import Checker, CheckResult, Verdict
    from deltap.dataset import VerifiedDataset, read_dataset, write_dataset
    from deltap.demo import DemoConfig, run_demo
    from deltap.documents import Corpus, Document
    from deltap.endtoend import EndToEndConfig, EndToEndResult, evaluate_end_to_end
    from deltap.errors import DeltapError, DuplicateIdsError, FormatError, MissingIdsError
    from deltap.evaluation import (
        Comparison,
        EvalResult,
        EvaluationWarning,
        FailureAnalysis,
        Measure,
        QrelsAudit,
        SignedGains,
        analyze_failures,
        audit_qrels,
        compare,
        evaluate,
        parse_metric,
    )
    from deltap.frames import qrels_to_dataframe, run_to_dataframe
    from deltap.judgements import load_qrels
    from deltap.loaders import load_beir, load_cases, load_corpus
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine
    from deltap.mining.relabel import relabel
    from deltap.mining.results import MiningResult, PlaceboCalibrationWarning
    from deltap.mining.simulation import simulate
    from deltap.qrels import Qrels, Run, load_run
    from deltap.report import load_run_dir, write_html_report, write_markdown_report
    from deltap.retrieval.base import Hit, Retriever
    from deltap.retrieval.factory import build_retriever, open_index
    from deltap.solvers import make_solver, solve_many
    from deltap.solvers.base import Answer, Score, Solver, SolveRequest, SolverError
    from deltap.solvers.prompts import render_prompt
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
