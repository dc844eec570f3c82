"""The in-process executor (the default): solver calls in this process, on one shared pool of threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.execution.base import Batch, Result, solve_batch
from deltap.solvers.base import is_thread_safe

if TYPE_CHECKING:
    from deltap.solvers.base import Solver

__all__ = ["InProcessExecutor"]


class InProcessExecutor:
    """Solver calls in this process: at most ``workers`` at once, shared by every case being mined.

    With ``workers=1`` every call is made in the calling thread, one after the other: exactly how ``mine()`` ran
    before executors existed. With more, one pool of ``workers`` threads serves every batch of every case in flight,
    so a run of many cases keeps ``workers`` calls in flight (network-bound solvers: hosted LLMs, a vLLM server)
    even while some cases sit at a look boundary.

    A solver that declares ``thread_safe = False`` (the local llama.cpp model: one KV cache, CPU-bound) gets one
    batch at a time, whole (its ``answer_many``/``score_many`` walk the batch's prefix trie), and :attr:`slots` is 1:
    mining several cases at once would only interleave their prompts in its prefix cache.

    Args:
        workers: Most solver calls in flight.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise DeltapError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)
        self.slots = 1
        self._solver: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._serial = threading.Lock()  # held around every batch of a solver that is not thread-safe

    def start(self, solver: Solver) -> None:
        self._solver = solver
        safe = is_thread_safe(solver)
        self.slots = self.workers if safe else 1
        if safe and self.workers > 1 and self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="deltap-call")

    def run(self, batch: Batch) -> list[Result]:
        if self._solver is None:
            raise RuntimeError("InProcessExecutor.run before start()")
        if self._pool is None:
            if is_thread_safe(self._solver):
                return solve_batch(self._solver, batch)
            with self._serial:
                return solve_batch(self._solver, batch)
        return solve_batch(self._solver, batch, self._pool.map)

    def release(self, case_id: str) -> None:
        """Nothing to release: every case shares the one pool."""

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def describe(self) -> dict[str, Any]:
        return {"executor": "inprocess", "workers": self.workers, "slots": self.slots}
