"""deltap: retrieval ground truth proven by task success.

A document is relevant to a question when putting it in an LLM's context measurably raises the probability that a
real checker accepts the answer: ΔP = P(success | doc in) − P(success | doc out).

The public API mirrors the CLI. Names are imported lazily (no heavy imports, no side effects at import time).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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
    "load_qrels": "deltap.qrels",
    "load_run": "deltap.qrels",
    # retrieval contract
    "Hit": "deltap.retrieval.base",
    "Retriever": "deltap.retrieval.base",
    # solver and checker contracts
    "Solver": "deltap.solvers.base",
    "SolveRequest": "deltap.solvers.base",
    "Answer": "deltap.solvers.base",
    "Checker": "deltap.checkers.base",
    "CheckResult": "deltap.checkers.base",
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deltap' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from deltap.cases import Case, CheckerSpec
    from deltap.checkers.base import Checker, CheckResult
    from deltap.documents import Corpus, Document
    from deltap.errors import DeltapError, DuplicateIdsError, FormatError, MissingIdsError
    from deltap.loaders import load_beir, load_cases, load_corpus
    from deltap.qrels import Qrels, Run, load_qrels, load_run
    from deltap.retrieval.base import Hit, Retriever
    from deltap.solvers.base import Answer, Solver, SolveRequest
