"""The solver contract: a blind LLM that answers a question given a subset of documents.

The solver never sees where a document came from (gold / retrieved / placebo): a :class:`SolveRequest` carries only
the question, the documents in canonical order, the benchmark type and its options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from deltap.documents import Document

__all__ = ["Answer", "Score", "SolveRequest", "Solver", "SolverError"]


@dataclass(frozen=True)
class SolveRequest:
    """What a solver is asked.

    Args:
        case_id: For logging and caching only; never rendered into the prompt.
        question: The question text.
        documents: The context documents, already in canonical order.
        benchmark_type: Selects the answer instruction (identifier, option letter, fixed source file...).
        options: Multiple-choice options (letter -> text), when any.
        extra: Anything a custom template needs (e.g. the unfixed source for ``fix_error``).
    """

    case_id: str
    question: str
    documents: tuple[Document, ...] = ()
    benchmark_type: str = "api_understanding"
    options: Mapping[str, str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """A solver's reply.

    Args:
        text: The answer text (as the model produced it).
        usage: Token counts (``prompt_tokens``, ``completion_tokens``, and for local models ``prompt_tokens_evaluated``).
        latency: Wall seconds of the call.
        raw: The backend's raw response (JSON-serialisable) for the trial log.
        solver_id: Solver id with model and parameters.
    """

    text: str
    usage: Mapping[str, int] = field(default_factory=dict)
    latency: float = 0.0
    raw: Any = None
    solver_id: str = ""


@dataclass(frozen=True)
class Score:
    """Log-probability of a reference answer given the prompt (the ``logprob`` outcome)."""

    logprob: float
    n_tokens: int
    latency: float = 0.0
    solver_id: str = ""


class SolverError(Exception):
    """Infrastructure failure of a solver call (timeout, refused, malformed after retries): an ``error`` outcome."""


@runtime_checkable
class Solver(Protocol):
    """A blind solver. ``id`` identifies backend, model and decoding parameters."""

    id: str

    def answer(self, request: SolveRequest) -> Answer:
        """Answer the request. Raises :class:`SolverError` on infrastructure failure."""
        ...

    def score(self, request: SolveRequest, reference: str) -> Score:
        """Log-probability of ``reference`` as the answer. Raises ``NotImplementedError`` where unsupported."""
        ...
