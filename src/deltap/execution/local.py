"""The in-process executor (the default): solver calls in this process, on daemon threads the driver can walk away
from when the run is stopped."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.execution.base import Batch, Result, solve_batch
from deltap.execution.concurrent import Cancelled, DaemonPool, clear_stop, stop_requested, wait_or_stop
from deltap.solvers.base import Cancellable, is_thread_safe

if TYPE_CHECKING:
    from deltap.solvers.base import Solver

__all__ = ["InProcessExecutor"]

#: how long :meth:`InProcessExecutor.close` waits for abandoned calls of a solver that can cancel them (they end in
#: milliseconds once cancelled; waiting lets the process exit with no native code still running in a thread)
CANCEL_GRACE_SECONDS = 2.0


class InProcessExecutor:
    """Solver calls in this process: at most ``workers`` at once, shared by every case being mined.

    With ``workers=1`` every batch's calls are made one after the other. With more, one pool of ``workers`` threads
    serves every batch of every case in flight, so a run of many cases keeps ``workers`` calls in flight
    (network-bound solvers: hosted LLMs, a vLLM server) even while some cases sit at a look boundary.

    A solver that declares ``thread_safe = False`` (the local llama.cpp model: one KV cache, CPU-bound) gets one
    batch at a time, whole (its ``answer_many``/``score_many`` walk the batch's prefix trie), and :attr:`slots` is 1:
    mining several cases at once would only interleave their prompts in its prefix cache.

    **Stopping.** Each batch runs on a daemon thread while the driver waits for it; the wait gives up at once when
    the run is stopped (Ctrl-C, ``SIGTERM``: :func:`~deltap.execution.concurrent.request_stop`). The batch is then
    abandoned: its results are never returned (so never logged), a :class:`~deltap.solvers.base.Cancellable`
    solver is told to cancel the call in flight (the llama.cpp solver aborts its decode within milliseconds), and
    nothing waits for a call that cannot be cancelled (an HTTP request runs out on its daemon thread).

    Args:
        workers: Most solver calls in flight.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise DeltapError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)
        self.slots = 1
        self._solver: Any = None
        self._pool: DaemonPool | None = None
        self._serial = threading.Lock()  # held around every batch of a solver that is not thread-safe
        self._abandoned: list[threading.Thread] = []

    def start(self, solver: Solver) -> None:
        clear_stop()  # a new run: an earlier run's stop request is spent
        self._solver = solver
        safe = is_thread_safe(solver)
        self.slots = self.workers if safe else 1
        if safe and self.workers > 1 and self._pool is None:
            self._pool = DaemonPool(self.workers, "deltap-call")

    def _solve(self, batch: Batch) -> list[Result]:
        if self._pool is None:
            if is_thread_safe(self._solver):
                return solve_batch(self._solver, batch)
            with self._serial:
                if stop_requested():  # queued behind an abandoned batch: never start after a stop
                    raise Cancelled()
                return solve_batch(self._solver, batch)
        return solve_batch(self._solver, batch, self._pool.map)

    def run(self, batch: Batch) -> list[Result]:
        if self._solver is None:
            raise RuntimeError("InProcessExecutor.run before start()")
        if stop_requested():
            raise Cancelled()
        done = threading.Event()
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["results"] = self._solve(batch)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting driver
                box["error"] = exc
            finally:
                done.set()

        thread = threading.Thread(target=work, name=f"deltap-batch-{batch.case_id}", daemon=True)
        thread.start()
        try:
            wait_or_stop(done)
        except BaseException:  # stopped (Cancelled) or interrupted (KeyboardInterrupt in the main thread)
            self._abandon(thread)
            raise
        if "error" in box:
            raise box["error"]
        return list(box["results"])

    def _abandon(self, thread: threading.Thread) -> None:
        """Walk away from a batch in flight: its results are dropped; a cancellable solver stops its call."""
        self._abandoned.append(thread)
        if isinstance(self._solver, Cancellable):
            self._solver.cancel()

    def release(self, case_id: str) -> None:
        """Nothing to release: every case shares the one pool."""

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self._abandoned and isinstance(self._solver, Cancellable):  # cancelled calls end in milliseconds
            deadline = time.monotonic() + CANCEL_GRACE_SECONDS
            for thread in self._abandoned:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._abandoned = [t for t in self._abandoned if t.is_alive()]

    def describe(self) -> dict[str, Any]:
        return {"executor": "inprocess", "workers": self.workers, "slots": self.slots}
