"""Bounded-concurrency helpers: many solver calls at once, results in input order, errors as values."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from deltap.solvers.base import Answer, Score, SolveRequest, SolverError

__all__ = ["asolve_many", "score_many", "solve_many"]


def _answer_one(solver: Any, request: SolveRequest) -> Answer | SolverError:
    try:
        return solver.answer(request)
    except SolverError as exc:
        return exc


def solve_many(solver: Any, requests: Sequence[SolveRequest], concurrency: int = 4) -> list[Answer | SolverError]:
    """Answer every request with at most ``concurrency`` calls in flight (threads).

    Returns one entry per request, in input order: the :class:`Answer`, or the :class:`SolverError` that request
    ended with (one failing call never cancels the others). Any other exception is a bug and propagates.
    A solver with ``answer_many`` (the local one: single model, prefix reuse) is handed the whole batch instead,
    since threads cannot speed up one CPU-bound model.

    Args:
        solver: Any :class:`~deltap.solvers.base.Solver`.
        requests: The requests.
        concurrency: Maximum simultaneous calls (network-bound backends: 4-16).
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    batch = getattr(solver, "answer_many", None)
    if callable(batch):
        return list(batch(list(requests)))
    if concurrency == 1 or len(requests) <= 1:
        return [_answer_one(solver, r) for r in requests]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(requests))) as pool:
        return list(pool.map(lambda r: _answer_one(solver, r), requests))


def score_many(
    solver: Any, requests: Sequence[SolveRequest], reference: str | Sequence[str], concurrency: int = 4
) -> list[Score | SolverError]:
    """:func:`solve_many` for :meth:`~deltap.solvers.base.Solver.score` (one reference, or one per request)."""
    refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
    if len(refs) != len(requests):
        raise ValueError(f"score_many: {len(requests)} requests but {len(refs)} references")
    batch = getattr(solver, "score_many", None)
    if callable(batch):
        return list(batch(list(requests), refs))

    def one(pair: tuple[SolveRequest, str]) -> Score | SolverError:
        try:
            return solver.score(*pair)
        except SolverError as exc:
            return exc

    pairs = list(zip(requests, refs, strict=False))
    if concurrency == 1 or len(pairs) <= 1:
        return [one(p) for p in pairs]
    with ThreadPoolExecutor(max_workers=min(concurrency, len(pairs))) as pool:
        return list(pool.map(one, pairs))


async def asolve_many(solver: Any, requests: Sequence[SolveRequest], concurrency: int = 4) -> list[Answer | SolverError]:
    """Async :func:`solve_many`: at most ``concurrency`` calls in flight (``asyncio.Semaphore`` + worker threads)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    sem = asyncio.Semaphore(concurrency)

    async def one(r: SolveRequest) -> Answer | SolverError:
        async with sem:
            return await asyncio.to_thread(_answer_one, solver, r)

    return list(await asyncio.gather(*(one(r) for r in requests)))
