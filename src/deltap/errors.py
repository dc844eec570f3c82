"""Error types shared by every part of deltap.

Every error raised for bad user input is a :class:`DeltapError`; the CLI turns it into a one-line message and a
non-zero exit code instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class DeltapError(Exception):
    """Base class of every error deltap raises on purpose (bad input, unreachable service, ...)."""


class FormatError(DeltapError):
    """A file does not have the expected shape.

    The message names the file, the 1-based line when known, what was found and what was expected.
    """

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.detail = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class MissingIdsError(DeltapError):
    """Ids referenced (by qrels, cases, runs...) that the corpus or query set does not contain."""

    def __init__(self, what: str, ids: Iterable[str], where: str, hint: str = "") -> None:
        self.ids = sorted(set(ids))
        shown = ", ".join(self.ids[:20]) + (f", ... ({len(self.ids)} in all)" if len(self.ids) > 20 else "")
        msg = f"{len(self.ids)} {what} not found in {where}: {shown}"
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class DuplicateIdsError(DeltapError):
    """The same id appears more than once where ids must be unique."""

    def __init__(self, what: str, ids: Iterable[str], where: str) -> None:
        self.ids = sorted(set(ids))
        shown = ", ".join(self.ids[:20]) + (f", ... ({len(self.ids)} in all)" if len(self.ids) > 20 else "")
        super().__init__(f"duplicate {what} in {where}: {shown}")


def json_error_detail(exc: ValueError) -> str:
    """What a :class:`json.JSONDecodeError` found, as a whole phrase with its column.

    ``exc.msg`` alone can stop mid-phrase ("Unterminated string starting at"): the position is a separate field.
    """
    msg = str(getattr(exc, "msg", exc))
    col = getattr(exc, "colno", None)
    if col is None:
        return msg
    return f"{msg} column {col}" if msg.endswith(" at") else f"{msg} at column {col}"
