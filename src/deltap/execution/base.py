"""The executor contract: a batch of one case's prepared requests in, one result per request out (in order).

What crosses the seam is plain data: :class:`Batch` holds :class:`~deltap.solvers.base.SolveRequest` values (the
question and the documents already in the case's canonical order, the trial seed in ``extra``), so a batch can be
pickled to another process or machine. Nothing that decides a trial — its seed, its inclusion vector, whether a
deterministic solver already answered its prompt — is left to the executor; nothing the executor returns is logged
until the driver has it (the trial log has one writer).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Union

from deltap.outcomes import outcome_kind
from deltap.solvers.base import Answer, Score, SolveRequest, SolverError
from deltap.solvers.concurrency import Mapper, answer_all, score_all

if TYPE_CHECKING:
    from deltap.solvers.base import Solver

__all__ = ["Batch", "Executor", "Result", "SolverSpec", "solve_batch"]

#: what a request becomes: an answer (``pass``), a score (``logprob``) or the infrastructure error it ended with
Result = Union[Answer, Score, SolverError]  # noqa: UP007 - a runtime alias, evaluated on Python 3.10 too


@dataclass(frozen=True)
class Batch:
    """The requests of one look of one case.

    Args:
        case_id: The case (executors keep a case on one solver replica: its KV prefix cache).
        outcome: ``pass`` (each request is answered) or ``logprob`` (each request scores ``reference``).
        requests: The prepared requests, in trial order.
        reference: The reference answer scored by ``logprob``.
    """

    case_id: str
    outcome: str
    requests: tuple[SolveRequest, ...]
    reference: str = ""

    def __len__(self) -> int:
        return len(self.requests)


class Executor(Protocol):
    """Runs batches of solver calls (see :mod:`deltap.execution`).

    ``slots`` is how many batches it runs at once to good effect (after :meth:`start`): the driver mines that many
    cases concurrently unless told otherwise. ``run`` is called from several driver threads at once and must be
    thread-safe; it returns one result per request, in request order, and never raises for a failed call (that is
    a :class:`~deltap.solvers.base.SolverError` in the request's slot).
    """

    slots: int

    def start(self, solver: Solver) -> None:
        """Get ready to run batches for ``solver`` (the driver's instance: its id is the run's solver id)."""
        ...

    def run(self, batch: Batch) -> list[Result]:
        """Answer or score every request of ``batch``."""
        ...

    def release(self, case_id: str) -> None:
        """``case_id`` sends no more batches for now: the replica it was kept on may take another case."""
        ...

    def close(self) -> None:
        """Stop every worker this executor started (a closed executor can be started again)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ran the calls, for the run summary (not a result: it never enters the dataset)."""
        ...


def solve_batch(solver: Any, batch: Batch, mapper: Mapper[Any, Any] = map) -> list[Result]:
    """Every result of ``batch`` from ``solver``, in request order (errors as values): the solvers' own batching
    (:func:`deltap.solvers.concurrency.answer_all` / :func:`~deltap.solvers.concurrency.score_all`), with ``mapper``
    for solvers without a batch method (``map``: one after the other; a thread pool's ``map``: concurrently)."""
    if not outcome_kind(batch.outcome).answered:
        return list(score_all(solver, batch.requests, batch.reference, mapper))
    return list(answer_all(solver, batch.requests, mapper))


@dataclass(frozen=True)
class SolverSpec:
    """A picklable recipe for a solver: what a remote worker builds its own replica from (loading a model once).

    Args:
        kind: A :func:`deltap.solvers.make_solver` kind (``local``, ``openai``, ``gemini``, ``simulated``) or
            ``"package.module:factory"`` for any other solver class or function.
        options: Keyword arguments of the constructor (picklable values).
    """

    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Solver:
        """A new solver from the recipe."""
        if ":" in self.kind:
            module, _, name = self.kind.partition(":")
            factory = getattr(importlib.import_module(module), name)
            return factory(**dict(self.options))
        from deltap.solvers import make_solver

        return make_solver(self.kind, **dict(self.options))
