"""The in-process executor (the default): solver calls in this process, on daemon threads the driver can walk away
from when the run is stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.execution.base import Batch, Result, solve_batch
from deltap.execution.concurrent import Cancelled, DaemonPool, clear_stop, stop_requested, wait_or_stop
from deltap.outcomes import outcome_kind
from deltap.solvers.base import BatchAnswerer, BatchScorer, Cancellable, is_thread_safe

if TYPE_CHECKING:
    from deltap.solvers.base import Solver

__all__ = ["InProcessExecutor"]

#: how long :meth:`InProcessExecutor.close` waits for abandoned calls of a solver that can cancel them (they end in
#: milliseconds once cancelled; waiting lets the process exit with no native code still running in a thread)
CANCEL_GRACE_SECONDS = 2.0


class InProcessExecutor:
    """Solver calls in this process: at most ``workers`` at once, shared by every case being mined.

    With ``workers=1`` every batch's calls are made one after the other, on one call thread. With more, one pool of
    ``workers`` threads serves every batch of every case in flight, so a run of many cases keeps ``workers`` calls in flight
    (network-bound solvers: hosted LLMs, a vLLM server) even while some cases sit at a look boundary.

    A solver that declares ``thread_safe = False`` (the local llama.cpp model: one KV cache, CPU-bound) gets one
    batch at a time, whole (its ``answer_many``/``score_many`` walk the batch's prefix trie), and :attr:`slots` is 1:
    mining several cases at once would only interleave their prompts in its prefix cache.

    **Stopping.** Solver code runs on the executor's daemon threads (one for a solver that is not thread-safe, or
    ``workers``) while the driver waits for it; the wait gives up at once when the run is stopped (Ctrl-C,
    ``SIGTERM``: :func:`~deltap.execution.concurrent.request_stop`). The calls are then abandoned: their results are
    never returned (so never logged), a :class:`~deltap.solvers.base.Cancellable` solver is told to cancel the call
    in flight (the llama.cpp solver aborts its decode within milliseconds), and nothing waits for a call that cannot
    be cancelled (an HTTP request runs out on its daemon thread).

    Args:
        workers: Most solver calls in flight.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise DeltapError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)
        self.slots = 1
        self._solver: Any = None
        self._calls: DaemonPool | None = None  # where solver code runs (one thread for a solver that is not safe)
        self._abandoned: list[Future[Any]] = []

    def start(self, solver: Solver) -> None:
        clear_stop()  # a new run: an earlier run's stop request is spent
        self._solver = solver
        safe = is_thread_safe(solver)
        self.slots = self.workers if safe else 1
        if self._calls is None:
            self._calls = DaemonPool(self.slots, "deltap-call")

    def _whole(self, batch: Batch) -> list[Result]:
        if stop_requested():  # queued behind an abandoned batch: never start after a stop
            raise Cancelled()
        return solve_batch(self._solver, batch)

    def run(self, batch: Batch) -> list[Result]:
        if stop_requested():
            raise Cancelled()
        if self._solver is None or self._calls is None:
            raise RuntimeError("InProcessExecutor.run before start()")
        batches_itself = isinstance(
            self._solver, BatchScorer if not outcome_kind(batch.outcome).answered else BatchAnswerer
        )
        if self.slots == 1 or (batches_itself and len(batch) > 1):  # the whole batch on one call thread
            return list(self._wait(self._calls.submit(self._whole, batch)))
        return solve_batch(self._solver, batch, self._fan_out)  # each call on the pool, waited for here

    def _fan_out(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        assert self._calls is not None
        futures = [self._calls.submit(fn, x) for x in items]
        return iter([self._wait(f, futures) for f in futures])

    def _wait(self, future: Future[Any], siblings: Sequence[Future[Any]] = ()) -> Any:
        """The future's result, waited for in steps that give up at once when the run stops (or, in the main thread,
        on a ``KeyboardInterrupt``): the call is then abandoned."""
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        try:
            wait_or_stop(done)
        except BaseException:  # stopped (Cancelled) or interrupted (KeyboardInterrupt in the main thread)
            self._abandon([future, *siblings])
            raise
        return future.result()

    def _abandon(self, futures: Sequence[Future[Any]]) -> None:
        """Walk away from calls in flight: their results are dropped; a cancellable solver stops its call."""
        for f in futures:
            if not f.cancel():  # running (or done): nothing more to do with it
                self._abandoned.append(f)
        if isinstance(self._solver, Cancellable):
            self._solver.cancel()

    def release(self, case_id: str) -> None:
        """Nothing to release: every case shares the one pool."""

    def close(self) -> None:
        if self._abandoned and isinstance(self._solver, Cancellable):  # cancelled calls end in milliseconds
            futures_wait(self._abandoned, timeout=CANCEL_GRACE_SECONDS)
        self._abandoned = [f for f in self._abandoned if not f.done()]
        if self._calls is not None:
            self._calls.shutdown()
            self._calls = None

    def describe(self) -> dict[str, Any]:
        return {"executor": "inprocess", "workers": self.workers, "slots": self.slots}
