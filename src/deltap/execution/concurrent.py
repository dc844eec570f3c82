"""Mining several cases at once (one driver thread per case in flight, results in input order), and stopping a run.

Each case's procedure stays the same synchronous code (a look waits for its whole batch, then decides over its
trials in index order); running ``limit`` of them side by side only changes *when* a case's calls are made, never
what they are, so the results are the same for any ``limit``.

**Stopping.** A run stops when the user interrupts it (Ctrl-C, ``SIGTERM``: the command line calls
:func:`request_stop` and a ``KeyboardInterrupt`` reaches the main thread) or when a case fails. Every wait for a
solver call gives up at once (:func:`wait_or_stop` raises :class:`Cancelled`): the calls in flight are abandoned,
never waited for and never logged (a trial is logged only once its call has returned to the driver), so the trial
log holds exactly the trials whose calls finished, and a resumed run asks the abandoned ones again under the same
seeds — the same trials an uninterrupted run makes.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from typing import Any, TypeVar

__all__ = ["Cancelled", "DaemonPool", "clear_stop", "map_cases", "request_stop", "stop_requested", "wait_or_stop"]

T = TypeVar("T")
R = TypeVar("R")

#: how long a stopped run waits for its case threads to notice the stop (they give up their waits within 0.1 s)
STOP_GRACE_SECONDS = 3.0

_STOP = threading.Event()


class Cancelled(Exception):
    """Raised in a case thread whose run was stopped (another case failed, or the user interrupted)."""


def request_stop() -> None:
    """Ask every run of this process to stop: waits for solver calls give up (:class:`Cancelled`), the calls in
    flight are abandoned. The command line calls it on Ctrl-C and ``SIGTERM``; a new run clears it
    (:func:`clear_stop`)."""
    _STOP.set()


def stop_requested() -> bool:
    """Whether :func:`request_stop` was called since the last :func:`clear_stop`."""
    return _STOP.is_set()


def clear_stop() -> None:
    """Forget a stop request (an executor starting a new run calls it)."""
    _STOP.clear()


def wait_or_stop(done: threading.Event, stop: threading.Event | None = None, step: float = 0.1) -> None:
    """Wait until ``done`` is set; raise :class:`Cancelled` as soon as a stop is requested (:func:`request_stop`, or
    ``stop``). In the main thread a ``KeyboardInterrupt`` arrives during the wait as well (lock waits are
    interruptible), so nothing ever waits for a call that was abandoned."""
    while not done.wait(step):
        if _STOP.is_set() or (stop is not None and stop.is_set()):
            raise Cancelled()


class DaemonPool:
    """``workers`` daemon threads that run submitted callables, results as :class:`~concurrent.futures.Future`.

    Unlike :class:`concurrent.futures.ThreadPoolExecutor`, whose threads the interpreter joins at exit, a stopped run
    can walk away from these: a call abandoned in one of them (a solver call, a checker) never holds the process
    back. Work not started when :meth:`shutdown` is called is cancelled.

    Args:
        workers: Threads (at least 1).
        name: Thread name prefix.
    """

    def __init__(self, workers: int, name: str = "deltap-worker") -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True) for i in range(max(1, workers))
        ]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on a free thread."""
        if self._closed:
            raise RuntimeError("DaemonPool.submit after shutdown()")
        future: Future[R] = Future()
        self._queue.put((future, fn, args))
        return future

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn(x) for x in items`` on the pool's threads, in input order (the first error is raised)."""
        futures = [self.submit(fn, x) for x in items]
        return (f.result() for f in futures)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """No more work: queued work is cancelled, idle threads end; running ones are not waited for."""
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)


def map_cases(fn: Callable[[T], R], items: Sequence[T], limit: int, stop: threading.Event | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with up to ``limit`` calls running at once (threads), in input order.

    ``limit <= 1`` runs in the calling thread, one after the other (no thread at all). Otherwise the first exception
    stops the run: ``stop`` is set (case threads check it between batches and raise :class:`Cancelled`), cases not
    yet started never start, and the exception is raised here once the running ones have returned. A
    ``KeyboardInterrupt`` in the calling thread stops the whole process's run (:func:`request_stop`: the case
    threads give up their calls within a fraction of a second) and is raised here without waiting for calls in
    flight.
    """
    if limit <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    stop = stop or threading.Event()
    out: list[R | None] = [None] * len(items)
    pool = DaemonPool(min(limit, len(items)), "deltap-case")

    def one(i: int) -> None:
        if stop.is_set() or _STOP.is_set():
            raise Cancelled()
        out[i] = fn(items[i])

    futures: list[Future[None]] = [pool.submit(one, i) for i in range(len(items))]
    try:
        wait(futures, return_when=FIRST_EXCEPTION)
        if any(f.done() and not f.cancelled() and f.exception() is not None for f in futures):
            stop.set()
            for f in futures:
                f.cancel()
            wait(futures)
            errors = [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
            raise next((e for e in errors if not isinstance(e, Cancelled)), errors[0])
    except BaseException as exc:
        stop.set()
        if not isinstance(exc, Exception):  # an interrupt: the whole run stops, calls in flight are abandoned
            request_stop()
        for f in futures:
            f.cancel()
        _settle(futures)
        raise
    finally:
        pool.shutdown()
    return out  # type: ignore[return-value]


def _settle(futures: Sequence[Future[None]]) -> None:
    """Give the case threads of a stopped run a moment to give up (they do within ~0.1 s), never more than
    :data:`STOP_GRACE_SECONDS`; a ``KeyboardInterrupt`` during this wait is not waited on either."""
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    try:
        for f in futures:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                f.exception(timeout=left)
            except Exception:  # noqa: BLE001 - cancelled or timed out: nothing more to wait for
                continue
    except KeyboardInterrupt:
        return
