"""Progress of an end-to-end run (``deltap endtoend``, the demo's end-to-end step), fed by
:func:`~deltap.endtoend.engine.end_to_end`'s ``progress`` callback (after each case: ``done``, ``cases``, ``calls``).

On a terminal: a bar over the cases with the solver calls against their ceiling and the time elapsed (erased when
the run ends). Sent to a file or a pipe: one plain line every ``interval`` seconds (``$DELTAP_PROGRESS_EVERY``,
default 30) and at each case's end (:class:`~deltap._ticker.PlainTicker`)::

    progress 1:10 elapsed · calls 30 of ≤120 · cases 6 of 24 done · 2.33 s/call · ≤3:30 left · 28/30 declared

With the ``pass`` outcome both end with how the checker read this process's replies, as ``deltap mine``'s display
does: those read from a declared ``Answer:`` line and those it found no answer in (``28/30 declared, 1 unreadable``;
``3/30 unreadable`` without declared ones), each once there is one (:mod:`deltap.mining.readability`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from deltap._ticker import BarOrLines, clock_text

__all__ = ["EndToEndProgress"]


class EndToEndProgress(BarOrLines):
    """The progress display of an end-to-end run (see the module docstring).

    Args:
        cases: Cases the run evaluates.
        ceiling: The most solver calls the run can make (:func:`~deltap.endtoend.engine.call_ceiling`, plus the
            single-document calls when asked).
        console: The :class:`rich.console.Console` to draw on (default: stderr).
        enabled: ``False`` shows nothing.
        interval: Seconds between two plain lines off a terminal (default
            :func:`~deltap._ticker.plain_interval`).
        clock: Seconds, monotonic (injectable for tests).
    """

    def __init__(
        self,
        cases: int,
        ceiling: int,
        console: Any = None,
        *,
        enabled: bool = True,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cases, self.ceiling, self.enabled = int(cases), int(ceiling), enabled
        self.done = 0
        self.calls = 0
        self.replies = self.declared = self.unreadable = 0  # replies a checker judged in this process, and how read
        self.clock = clock
        self.started = clock()
        self._console, self._interval = console, interval
        self._bar, self._task, self._plain = None, None, None
        self._state = threading.Lock()

    def plain_line(self) -> str:
        """The progress as one plain line."""
        with self._state:
            elapsed = self.clock() - self.started
            parts = [
                f"progress {clock_text(elapsed)} elapsed",
                f"calls {self.calls:,} of ≤{self.ceiling:,}",
                f"cases {self.done} of {self.cases} done",
            ]
            if self.calls:
                rate = elapsed / self.calls
                parts.append(f"{rate:.2f} s/call")
                if self.done < self.cases:
                    parts.append(f"≤{clock_text(rate * max(0, self.ceiling - self.calls))} left")
            reading = self.reading_text()
            return " · ".join([*parts, reading] if reading else parts)

    def reading_text(self) -> str:
        """How the checker read this process's replies, short (``28/30 declared, 1 unreadable``: the format of
        ``deltap mine``'s display), ``""`` while both counts are zero."""
        parts = [f"{self.declared}/{self.replies} declared"] if self.declared else []
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable" if parts else f"{self.unreadable}/{self.replies} unreadable")
        return ", ".join(parts)

    def __call__(self, event: dict[str, Any]) -> None:
        with self._state:
            self.done = int(event.get("done", self.done))
            self.calls = max(self.calls, int(event.get("calls") or 0))
            if "replies" in event:
                self.replies = max(self.replies, int(event.get("replies") or 0))
                self.declared = max(self.declared, int(event.get("declared") or 0))
                self.unreadable = max(self.unreadable, int(event.get("unreadable") or 0))
            reading = self.reading_text()
        if self._bar is not None:
            calls = f"{self.calls}/≤{self.ceiling} calls" + (f" · {reading}" if reading else "")
            self._bar.update(self._task, completed=self.done, calls=calls)
        if self._plain is not None:
            self._plain.emit(f"case {event.get('case_id', '')} done")

    def __enter__(self) -> EndToEndProgress:
        self.started = self.clock()

        def bar(console: Any) -> tuple[Any, Any]:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            progress = Progress(TextColumn("cases"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[calls]}"),
                                TimeElapsedColumn(), console=console, transient=True)  # fmt: skip
            return progress, progress.add_task("cases", total=self.cases, calls=f"0/≤{self.ceiling} calls")

        self._open(bar, self.plain_line)
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._close(exc_type is None)
