"""The solver contract: a blind LLM that answers a question given a subset of documents.

The solver never sees where a document came from (gold / retrieved / placebo): a :class:`SolveRequest` carries only
the question, the documents in canonical order, the benchmark type and its options.

Beyond :class:`Solver`, a backend declares what else it can do by implementing a capability protocol (callers test
``isinstance(solver, Capability)``, never probe attributes): :class:`BatchAnswerer` / :class:`BatchScorer` (a whole
batch at once: the local model walks the batch's prompt prefixes once), :class:`ContextWindow` (counts a request's
prompt tokens against its window: mining fits every pool inside it) and :class:`ReferenceTokens`,
:class:`TextScorer` (log-probability of a
continuation of raw text). Two traits are declared as class attributes with a default: ``deterministic`` (greedy
decoding: the same prompt always gets the same answer; default ``False``) and ``thread_safe`` (may be called from
several threads at once; default ``True``), read by :func:`is_deterministic` and :func:`is_thread_safe`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from deltap.documents import Document

__all__ = [
    "Answer",
    "BatchAnswerer",
    "BatchScorer",
    "CallCancelled",
    "Cancellable",
    "ContextWindow",
    "ReferenceTokens",
    "Score",
    "SolveRequest",
    "Solver",
    "SolverError",
    "TextScorer",
    "is_deterministic",
    "is_thread_safe",
    "solver_id",
]


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
    """Log-probability of a reference answer given the prompt (the ``logprob`` outcome): ``n_tokens`` reference
    tokens scored, ``prompt_tokens`` the input tokens the call took in all (what a run spends)."""

    logprob: float
    n_tokens: int
    latency: float = 0.0
    solver_id: str = ""
    #: input tokens the call evaluated (prompt and reference; ``None``: the backend did not count them)
    prompt_tokens: int | None = None


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


@runtime_checkable
class BatchAnswerer(Protocol):
    """A solver that answers a whole batch at once (results in request order, failures as values)."""

    def answer_many(self, requests: Sequence[SolveRequest]) -> list[Answer | SolverError]:
        """One :class:`Answer` or :class:`SolverError` per request."""
        ...


@runtime_checkable
class BatchScorer(Protocol):
    """A solver that scores a whole batch at once (one reference for all, or one per request)."""

    def score_many(self, requests: Sequence[SolveRequest], reference: str | Sequence[str]) -> list[Score | SolverError]:
        """One :class:`Score` or :class:`SolverError` per request."""
        ...


@runtime_checkable
class ContextWindow(Protocol):
    """A solver that knows its context window and counts tokens the way it will evaluate them.

    Attributes:
        n_ctx: The window, in tokens.
        max_tokens: Answer tokens kept free per benchmark type (``pass`` outcome).
    """

    n_ctx: int
    max_tokens: Mapping[str, int]

    def tokens(self, request: SolveRequest) -> list[int]:
        """The prompt tokens of ``request`` (chat template applied)."""
        ...


@runtime_checkable
class ReferenceTokens(Protocol):
    """A scoring solver that counts the tokens of a reference answer as it scores them (``logprob`` outcome: the
    room a :class:`ContextWindow` keeps free for them)."""

    def reference_tokens(self, reference: str) -> list[int]:
        """The tokens of ``reference``."""
        ...


@runtime_checkable
class TextScorer(Protocol):
    """Scores raw text: the log-probability of ``continuation`` after ``prompt`` (an OpenAI-compatible server's
    completions endpoint with ``echo``, or the local model), used to check a chat endpoint's scores."""

    def score_text(self, prompt: str, continuation: str) -> float:
        """Sum of the log-probabilities of ``continuation``'s tokens, in nats."""
        ...


class CallCancelled(Exception):
    """A call ended by :meth:`Cancellable.cancel` (a stopped run walked away from it): never a trial's outcome."""


@runtime_checkable
class Cancellable(Protocol):
    """Can abandon the call in flight: the executor calls :meth:`cancel` when a stopped run walks away from a batch
    (the local llama.cpp solver aborts its decode within milliseconds instead of finishing the batch on a daemon
    thread)."""

    def cancel(self) -> None:
        """End the call (and the rest of the batch) in flight as soon as possible, raising; its results are not
        used. The next call starts afresh."""
        ...


def is_deterministic(solver: object) -> bool:
    """The solver's declared ``deterministic`` trait (default ``False``)."""
    return bool(getattr(solver, "deterministic", False))


def is_thread_safe(solver: object) -> bool:
    """The solver's declared ``thread_safe`` trait (default ``True``; the local llama.cpp solver: one model and one
    KV cache, declares ``False``)."""
    return bool(getattr(solver, "thread_safe", True))


def solver_id(solver: object) -> str:
    """The solver's ``id`` (backend, model and decoding parameters), or its class name when it has none."""
    return str(getattr(solver, "id", type(solver).__name__))
