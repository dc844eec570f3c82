"""Many solver calls at once: results in request order, failures as values.

One implementation of "a batch of requests → one result each": a solver that is a
:class:`~deltap.solvers.base.BatchAnswerer` / :class:`~deltap.solvers.base.BatchScorer` (the local model: one
prompt-prefix walk per batch) gets the whole batch; any other is called once per request through a ``mapper`` —
``map`` (one after the other), a thread pool's ``map`` (concurrently). :func:`solve_many` / :func:`score_many` run
their own pool; the mining executors (:mod:`deltap.execution`) pass theirs to :func:`answer_all` / :func:`score_all`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from deltap.solvers.base import Answer, BatchAnswerer, BatchScorer, Score, SolveRequest, SolverError

__all__ = ["Mapper", "answer_all", "asolve_many", "score_all", "score_many", "solve_many"]

T = TypeVar("T")
R = TypeVar("R")
#: ``map``, or a thread pool's ``map``: how the calls of one batch are made
Mapper = Callable[[Callable[[T], R], Iterable[T]], Iterator[R]]


def _answer_one(solver: Any, request: SolveRequest) -> Answer | SolverError:
    try:
        return solver.answer(request)
    except SolverError as exc:
        return exc


def answer_all(
    solver: Any, requests: Sequence[SolveRequest], mapper: Mapper[Any, Any] = map
) -> list[Answer | SolverError]:
    """One :class:`Answer` or :class:`SolverError` per request, in order; any other exception is a bug and
    propagates. A :class:`~deltap.solvers.base.BatchAnswerer` gets the whole batch (more than one request)."""
    requests = list(requests)
    if isinstance(solver, BatchAnswerer) and len(requests) > 1:
        return list(solver.answer_many(requests))
    return list(mapper(lambda r: _answer_one(solver, r), requests))


def score_all(
    solver: Any, requests: Sequence[SolveRequest], reference: str | Sequence[str], mapper: Mapper[Any, Any] = map
) -> list[Score | SolverError]:
    """:func:`answer_all` for :meth:`~deltap.solvers.base.Solver.score` (one reference, or one per request)."""
    requests = list(requests)
    refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
    if len(refs) != len(requests):
        raise ValueError(f"score_many: {len(requests)} requests but {len(refs)} references")
    if isinstance(solver, BatchScorer) and len(requests) > 1:
        return list(solver.score_many(requests, reference if isinstance(reference, str) else refs))

    def one(pair: tuple[SolveRequest, str]) -> Score | SolverError:
        try:
            return solver.score(*pair)
        except SolverError as exc:
            return exc

    return list(mapper(one, list(zip(requests, refs, strict=True))))


def solve_many(solver: Any, requests: Sequence[SolveRequest], concurrency: int = 4) -> list[Answer | SolverError]:
    """Answer every request with at most ``concurrency`` calls in flight (threads).

    Returns one entry per request, in input order: the :class:`Answer`, or the :class:`SolverError` that request
    ended with (one failing call never cancels the others). Any other exception is a bug and propagates.
    A :class:`~deltap.solvers.base.BatchAnswerer` (the local one: single model, prefix reuse) is handed the whole
    batch instead, since threads cannot speed up one CPU-bound model.

    Args:
        solver: Any :class:`~deltap.solvers.base.Solver`.
        requests: The requests.
        concurrency: Maximum simultaneous calls (network-bound backends: 4-16).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if isinstance(solver, BatchAnswerer):
        return list(solver.answer_many(list(requests)))
    if concurrency == 1 or len(requests) <= 1:
        return answer_all(solver, requests)
    with ThreadPoolExecutor(max_workers=min(concurrency, len(requests))) as pool:
        return answer_all(solver, requests, pool.map)


def score_many(
    solver: Any, requests: Sequence[SolveRequest], reference: str | Sequence[str], concurrency: int = 4
) -> list[Score | SolverError]:
    """:func:`solve_many` for :meth:`~deltap.solvers.base.Solver.score` (one reference, or one per request)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
    if isinstance(solver, BatchScorer):
        if len(refs) != len(requests):
            raise ValueError(f"score_many: {len(requests)} requests but {len(refs)} references")
        return list(solver.score_many(list(requests), refs))
    if concurrency == 1 or len(requests) <= 1:
        return score_all(solver, requests, reference)
    with ThreadPoolExecutor(max_workers=min(concurrency, len(requests))) as pool:
        return score_all(solver, requests, reference, pool.map)


async def asolve_many(
    solver: Any, requests: Sequence[SolveRequest], concurrency: int = 4
) -> list[Answer | SolverError]:
    """Async :func:`solve_many`: at most ``concurrency`` calls in flight (``asyncio.Semaphore`` + worker threads)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    sem = asyncio.Semaphore(concurrency)

    async def one(r: SolveRequest) -> Answer | SolverError:
        async with sem:
            return await asyncio.to_thread(_answer_one, solver, r)

    return list(await asyncio.gather(*(one(r) for r in requests)))
