"""Stopping a run in-process: every wait for a solver call gives up at once, the calls in flight are abandoned (never
returned, never logged), a cancellable solver is told to cancel, and nothing holds the process back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from deltap.execution.base import Batch
from deltap.execution.concurrent import Cancelled, DaemonPool, clear_stop, map_cases, request_stop, stop_requested
from deltap.execution.local import InProcessExecutor
from deltap.solvers.base import Answer, SolveRequest


@pytest.fixture(autouse=True)
def _no_stop_left() -> Iterator[None]:
    clear_stop()
    yield
    clear_stop()


class Blocking:
    """A solver whose calls block until released (a call in flight for as long as the test wants)."""

    thread_safe = True

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.cancelled = 0
        self.calls = 0

    def answer(self, request: SolveRequest) -> Answer:
        self.calls += 1
        self.started.set()
        self.release.wait(30)
        return Answer(text="x")

    def cancel(self) -> None:  # a Cancellable solver
        self.cancelled += 1
        self.release.set()


def _batch(n: int = 3) -> Batch:
    return Batch("c", "pass", tuple(SolveRequest(case_id="c", question=f"q{i}") for i in range(n)))


@pytest.mark.parametrize("workers", [1, 3])
def test_a_stop_request_abandons_the_batch_in_flight_at_once(workers: int) -> None:
    solver = Blocking()
    ex = InProcessExecutor(workers)
    ex.start(solver)
    outcome: dict[str, object] = {}

    def driver() -> None:  # a case thread of the run
        try:
            outcome["results"] = ex.run(_batch())
        except BaseException as exc:  # noqa: BLE001
            outcome["error"] = exc

    t = threading.Thread(target=driver)
    t.start()
    assert solver.started.wait(10)
    request_stop()
    stopped = time.monotonic()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - stopped < 1.0  # gave up within a step of its wait
    assert isinstance(outcome.get("error"), Cancelled) and "results" not in outcome  # nothing to log
    assert solver.cancelled == 1  # the cancellable solver was told
    ex.close()
    with pytest.raises(Cancelled):  # no new batch starts after a stop
        ex.run(_batch())
    ex.start(solver)  # a new run clears the stop
    assert not stop_requested()
    solver.release.set()
    assert len(ex.run(_batch())) == 3
    ex.close()


class Uncancellable(Blocking):
    """Its calls cannot be cancelled (an HTTP request, say)."""

    cancel = None  # type: ignore[assignment]


def test_a_call_that_cannot_be_cancelled_does_not_hold_the_stop_back() -> None:
    from deltap.solvers.base import Cancellable

    solver = Uncancellable()
    assert not isinstance(solver, Cancellable)
    ex = InProcessExecutor(1)
    ex.start(solver)
    box: dict[str, object] = {}
    t = threading.Thread(target=lambda: box.setdefault("e", _run_catching(ex)))
    t.start()
    assert solver.started.wait(10)
    request_stop()
    t.join(5)
    started = time.monotonic()
    ex.close()  # does not wait for the call, which is still blocked
    assert time.monotonic() - started < 0.5 and isinstance(box["e"], Cancelled)
    solver.release.set()


def _run_catching(ex: InProcessExecutor) -> BaseException | None:
    try:
        ex.run(_batch(1))
    except BaseException as exc:  # noqa: BLE001
        return exc
    return None


def test_map_cases_stops_every_case_thread_and_never_joins_a_stuck_one() -> None:
    release = threading.Event()
    entered = threading.Barrier(4)  # three case threads and this test

    def case(i: int) -> int:
        entered.wait(10)
        while not release.wait(0.05):
            if stop_requested():
                raise Cancelled()
        return i

    errors: list[BaseException] = []

    def main() -> None:
        try:
            map_cases(case, list(range(6)), 3)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=main)
    t.start()
    entered.wait(10)
    request_stop()  # what the signal handler does; the KeyboardInterrupt reaches only the main thread
    t.join(5)
    assert not t.is_alive() and errors and isinstance(errors[0], Cancelled)


def test_daemon_pool_threads_do_not_hold_the_interpreter() -> None:
    pool = DaemonPool(2, "t")
    assert all(th.daemon for th in pool._threads)
    assert list(pool.map(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]
    running = threading.Barrier(3)
    blocked = [pool.submit(lambda: (running.wait(10), time.sleep(30))) for _ in range(2)]
    running.wait(10)  # both threads are busy
    queued = [pool.submit(lambda: 1)]
    pool.shutdown()  # returns at once; work not started is cancelled
    assert queued[-1].cancelled() and not any(b.done() for b in blocked)
