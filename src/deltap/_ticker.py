"""Progress for output that is not a terminal: one plain line at a steady interval, never a redraw.

A long command writing to a file, a pipe or a CI log shows nothing with a terminal display (rich redraws in place,
and off a terminal it draws once, at the end). :class:`PlainTicker` prints one plain line every ``interval`` seconds
(``$DELTAP_PROGRESS_EVERY``, default 30) and whenever asked (a case's end); :class:`CountProgress` is the display of
one counted step (``embedding 320 of 735 documents``): a bar on a terminal, plain lines off it. The mining and
end-to-end displays (:mod:`deltap.mining.progress`, :mod:`deltap.endtoend.progress`) build on the ticker.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["PLAIN_INTERVAL", "BarOrLines", "CountProgress", "PlainTicker", "clock_text", "plain_interval"]

#: seconds between two plain progress lines (a run writing to a file or a pipe); ``$DELTAP_PROGRESS_EVERY`` overrides
PLAIN_INTERVAL = 30.0


def plain_interval() -> float:
    """``$DELTAP_PROGRESS_EVERY`` (seconds, > 0) or :data:`PLAIN_INTERVAL`; a value that is not a positive number is
    ignored."""
    raw = os.environ.get("DELTAP_PROGRESS_EVERY", "").strip()
    try:
        value = float(raw) if raw else PLAIN_INTERVAL
    except ValueError:
        return PLAIN_INTERVAL
    return value if value > 0 else PLAIN_INTERVAL


class PlainTicker:
    """One plain progress line at a steady interval, for output that is not a terminal (a log file, a pipe, CI).

    A daemon thread writes ``line()`` every ``interval`` seconds; :meth:`emit` writes one at once (a case's end, with
    a note after the figures). Every line starts with the same word (``progress``), so a log can be grepped.
    Nothing is redrawn: every line is a new line a log keeps.

    Args:
        line: The current progress as one line (called from the ticker's thread: it must only read state).
        write: Where a line goes (e.g. ``console.print``).
        interval: Seconds between lines (default :func:`plain_interval`).
    """

    def __init__(self, line: Callable[[], str], write: Callable[[str], None], interval: float | None = None) -> None:
        self.line, self.write = line, write
        self.interval = plain_interval() if interval is None else float(interval)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> PlainTicker:
        self._thread = threading.Thread(target=self._run, name="deltap-progress", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.emit()

    def emit(self, note: str = "") -> None:
        """Write the current line now, ``note`` at its end (e.g. ``case c3 ended: mined``)."""
        with self._lock:
            self.write(self.line() + (f" · {note}" if note else ""))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._thread = None


def clock_text(seconds: float) -> str:
    """``2:05`` / ``1:02:05``: a duration as a clock."""
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class BarOrLines:
    """What every deltap progress display shares: a rich bar on a terminal, a :class:`PlainTicker` off it.

    A subclass sets ``enabled``, ``_console`` and ``_interval`` and calls :meth:`_open` from ``__enter__`` (with how to
    build its bar and its plain line) and :meth:`_close` from ``__exit__``.
    """

    enabled: bool
    _console: Any
    _interval: float | None
    _bar: Any = None
    _task: Any = None
    _plain: PlainTicker | None = None

    def _open(self, make_bar: Callable[[Any], tuple[Any, Any]], line: Callable[[], str]) -> None:
        """Start the display: ``make_bar(console)`` gives ``(rich Progress, its task)`` on a terminal; off it, ``line``
        is printed every interval."""
        if not self.enabled:
            return
        from rich.console import Console

        console = self._console if self._console is not None else Console(stderr=True)
        if console.is_terminal:
            self._bar, self._task = make_bar(console)
            self._bar.start()
        else:
            write = lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
            self._plain = PlainTicker(line, write, self._interval).start()

    def _close(self, done: bool) -> None:
        """Stop the display; off a terminal, a last line ending ``done`` when the work ended well."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._plain is not None:
            self._plain.stop()
            if done:
                self._plain.emit("done")
            self._plain = None


class CountProgress(BarOrLines):
    """The display of one counted step (``embedding``, ``documents``): a rich bar with the time left on a terminal,
    a plain line every ``interval`` seconds off it (``progress 1:10 elapsed · embedding 320 of 735 documents · ~1:30
    left``).

    Call it as ``progress(done, total)`` (the shape of :func:`deltap.retrieval.dense.index_corpus`'s callback).

    Args:
        label: What is being done (``embedding``).
        unit: What is counted (``documents``).
        console: The :class:`rich.console.Console` (default: stderr).
        enabled: ``False`` shows nothing.
        transient: Erase the terminal bar when done.
        interval: Seconds between two plain lines (default :func:`plain_interval`).
    """

    def __init__(
        self,
        label: str,
        unit: str,
        console: Any = None,
        *,
        enabled: bool = True,
        transient: bool = True,
        interval: float | None = None,
    ) -> None:
        self.label, self.unit, self.enabled, self.transient = label, unit, enabled, transient
        self.done, self.total = 0, 0
        self.started = time.monotonic()
        self._console, self._interval = console, interval
        self._bar, self._task, self._plain = None, None, None

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        text = f"progress {clock_text(elapsed)} elapsed · {self.label} {self.done:,} of {self.total:,} {self.unit}"
        if 0 < self.done < self.total:
            text += f" · ~{clock_text(elapsed / self.done * (self.total - self.done))} left"
        return text

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = int(done), int(total)
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total)

    def __enter__(self) -> CountProgress:
        self.started = time.monotonic()

        def bar(console: Any) -> tuple[Any, Any]:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            progress = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                transient=self.transient, console=console)  # fmt: skip
            return progress, progress.add_task(self.label, total=None)

        self._open(bar, self.line)
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._close(exc_type is None and bool(self.total))
