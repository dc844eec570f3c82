"""Mining several cases at once: one driver thread per case in flight, results in input order.

Each case's procedure stays the same synchronous code (a look waits for its whole batch, then decides over its
trials in index order); running ``limit`` of them side by side only changes *when* a case's calls are made, never
what they are, so the results are the same for any ``limit``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

__all__ = ["Cancelled", "map_cases"]

T = TypeVar("T")
R = TypeVar("R")


class Cancelled(Exception):
    """Raised in a case thread whose run was stopped (another case failed, or the user interrupted)."""


def map_cases(fn: Callable[[T], R], items: Sequence[T], limit: int, stop: threading.Event | None = None) -> list[R]:
    """``[fn(x) for x in items]`` with up to ``limit`` calls running at once (threads), in input order.

    ``limit <= 1`` runs in the calling thread, one after the other (no thread at all). Otherwise the first exception
    stops the run: ``stop`` is set (case threads check it between batches and raise :class:`Cancelled`), cases not
    yet started never start, and the exception is raised here once the running ones have returned. A
    ``KeyboardInterrupt`` in the calling thread does the same.
    """
    if limit <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    stop = stop or threading.Event()
    out: list[R | None] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="deltap-case") as pool:

        def one(i: int) -> None:
            if stop.is_set():
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
        except BaseException:
            stop.set()
            for f in futures:
                f.cancel()
            raise
    return out  # type: ignore[return-value]
