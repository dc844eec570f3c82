"""The context-window fit: which documents to leave out so the prompt fits the solver's window — one rule for every
trial of a case.

Asked once per case (mining: the every-candidate prompt; end to end: each system's list), before any trial, so no
trial can overflow: every other subset's prompt is shorter. Documents are dropped in the caller's order of
expendability (mining: retrieved candidates from the worst rank, then placebos, then gold; end to end: from the worst
rank) until the prompt with every remaining document, in prompt order, plus the answer's room fits the window. The
answer's room is the solver's ``max_tokens`` for the case's benchmark type (``pass``) or the reference answer's
tokens (``logprob``).

Only a :class:`~deltap.solvers.base.ContextWindow` solver (it says its window and counts a request's prompt tokens,
as the local llama.cpp solver does) is fitted; for any other :func:`fit_window` returns ``None`` and an overflow
becomes the trial's outcome (``overflow``) instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from deltap.outcomes import outcome_kind
from deltap.solvers.base import ContextWindow, ReferenceTokens
from deltap.trials.request import request_from_case

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Document

__all__ = ["WindowFit", "answer_reserve", "fit_window"]


@dataclass(frozen=True)
class WindowFit:
    """What :func:`fit_window` kept.

    Attributes:
        kept: Positions of the documents kept (into the documents given, in their order).
        dropped: Positions dropped, in the order they were dropped.
        window: The solver's context window (tokens).
        reserve: Tokens kept free for the answer (or the scored reference).
        tokens: Prompt tokens with every kept document (0 when none is kept).
    """

    kept: list[int]
    dropped: list[int] = field(default_factory=list)
    window: int = 0
    reserve: int = 0
    tokens: int = 0


def answer_reserve(case: Case, solver: ContextWindow, outcome: str) -> int:
    """Tokens the answer needs room for: the solver's ``max_tokens`` of the case's benchmark type (else its largest)
    for an answered outcome, the reference answer's tokens for a scored one."""
    if outcome_kind(outcome).answered:
        mt = dict(solver.max_tokens or {})
        return int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    ref = case.reference_answer
    return len(solver.reference_tokens(ref)) if isinstance(solver, ReferenceTokens) and ref else 0


def fit_window(
    case: Case,
    documents: Sequence[Document],
    solver: object,
    outcome: str,
    drop_order: Sequence[int] | None = None,
) -> WindowFit | None:
    """Drop documents until the prompt with the rest fits the solver's window.

    Args:
        case: The case (its question, benchmark type, reference answer).
        documents: The documents in prompt order (a subset keeps their relative order).
        solver: Fitted when it is a :class:`~deltap.solvers.base.ContextWindow`; else ``None`` is returned.
        outcome: ``pass`` or ``logprob`` (what the answer's room is).
        drop_order: Positions of ``documents`` in the order they may be dropped (default: the last first); a
            document not listed is never dropped.

    Returns:
        A :class:`WindowFit`, or ``None`` when the solver has no window to fit or there is no document.
    """
    if not isinstance(solver, ContextWindow) or not documents:
        return None
    window, reserve = int(solver.n_ctx), answer_reserve(case, solver, outcome)
    base = request_from_case(case)
    kept = list(range(len(documents)))
    todo = list(drop_order) if drop_order is not None else kept[::-1]

    def size() -> int:
        return len(solver.tokens(replace(base, documents=tuple(documents[i] for i in kept)))) if kept else 0

    dropped: list[int] = []
    tokens = size()
    while kept and tokens + reserve > window and todo:
        gone = todo.pop(0)
        if gone in kept:
            kept.remove(gone)
            dropped.append(gone)
            tokens = size()
    return WindowFit(kept, dropped, window, reserve, tokens)
