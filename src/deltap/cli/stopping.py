"""Ctrl-C and ``SIGTERM`` on the command line: stop within a few seconds, say what was kept, exit 130.

:func:`signals` (entered by :func:`deltap.cli.app.main` around every command) turns the first ``SIGINT`` or
``SIGTERM`` into a stop request for every run of the process (:func:`deltap.execution.concurrent.request_stop`:
waits for solver calls give up, the calls in flight are abandoned, nothing half-done is logged) and a
``KeyboardInterrupt`` in the main thread, which unwinds the command through its ``finally`` blocks (the trial log
is closed, the executor stopped). A second signal exits at once (the trial log is SQLite in WAL mode: every trial
already committed stays, nothing half-written counts).

A long command wraps its work in :func:`stopped`, which turns the interrupt into :class:`Stopped` with one line
saying what is kept (``stopped: 412 trials logged in runs/x/trials.sqlite; resume with the same command``); ``main``
prints it and exits with 130.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["EXIT_STOPPED", "Stopped", "logged_trials", "signals", "stopped", "trials_line"]

#: the exit code of a stopped command (128 + SIGINT, as a shell reports an interrupted program)
EXIT_STOPPED = 130


class Stopped(Exception):
    """A command stopped by Ctrl-C or ``SIGTERM``; the message is the one line to print."""


@contextlib.contextmanager
def signals() -> Iterator[None]:
    """Handle ``SIGINT`` and ``SIGTERM`` while the command runs (see the module docstring); the previous handlers
    come back afterwards. Outside the main thread (a test calling ``main``) nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from deltap.execution.concurrent import request_stop

    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        if len(received) > 1:  # the second signal: no more waiting for anything
            sys.stderr.write("\nstopped at once (second interrupt); rerun the same command to resume\n")
            sys.stderr.flush()
            os._exit(EXIT_STOPPED)
        request_stop()
        raise KeyboardInterrupt

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for sig in previous:
            if previous[sig] is not signal.SIG_IGN:  # `nohup`/background jobs that ignore a signal keep ignoring it
                signal.signal(sig, handler)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def logged_trials(path: Path) -> int | None:
    """Trials in the trial log at ``path`` (``None``: no log there)."""
    if not Path(path).is_file():
        return None
    from deltap.errors import DeltapError
    from deltap.trials.log import TrialLogReader

    try:
        with TrialLogReader(path) as reader:
            return sum(reader.outcome_counts().values())
    except DeltapError:
        return None


def trials_line(*logs: Path | None) -> str:
    """``stopped: 412 trials logged in runs/x/trials.sqlite; resume with the same command`` over the logs that
    exist (``None``: no log, e.g. a run kept in memory)."""
    found = [(p, n) for p in logs if p is not None and (n := logged_trials(p)) is not None]
    if not found:
        return "stopped before the first trial was logged; rerun the same command to start"
    where = " and ".join(f"{n:,} trial{'s' if n != 1 else ''} logged in {p}" for p, n in found)
    return f"stopped: {where}; resume with the same command"


@contextlib.contextmanager
def stopped(message: Callable[[], str]) -> Iterator[None]:
    """Turn an interrupt of the block into :class:`Stopped` with ``message()`` (called after the block has unwound,
    so the trial log it counts is closed)."""
    try:
        yield
    except KeyboardInterrupt:
        raise Stopped(message()) from None
