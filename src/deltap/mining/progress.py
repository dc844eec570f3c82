"""Progress bars for ``deltap mine`` and ``deltap demo``, fed by the mining engine's ``progress`` callback."""

from __future__ import annotations

from typing import Any

__all__ = ["MiningProgress"]


class MiningProgress:
    """Rich progress bars fed by the mining engine's progress callback: one for the cases, one for the current case."""

    def __init__(self, n_cases: int, enabled: bool = True, console: Any = None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self.cases = self.progress.add_task("cases ", total=n_cases, info="")
        self.trials = self.progress.add_task("trials", total=1, info="")
        self.current: str | None = None

    def __enter__(self) -> MiningProgress:
        self.progress.start()
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:  # the engine reports batches, not the end of the last case
            self.progress.update(self.cases, completed=self.progress.tasks[self.cases].total)
        self.progress.stop()

    def __call__(self, event: dict[str, Any]) -> None:
        case_id = str(event.get("case_id", ""))
        if case_id != self.current:
            self.current = case_id
            self.progress.reset(self.trials, total=max(1, int(event.get("budget") or 1)))
        # cases before this one are finished; this one too when the engine reports its final status (a skip)
        done = int(event.get("case_index", 0)) + (1 if event.get("status") not in (None, "running") else 0)
        short = case_id.split(":", 1)[-1]
        self.progress.update(
            self.trials,
            completed=int(event.get("trials") or 0),
            info=f"{short[:24]} · {event.get('open', '?')} open",
        )
        self.progress.update(self.cases, completed=min(done, int(event.get("cases") or done)),
                             info=f"{event.get('calls', 0)} calls")
