"""Markdown tables in a reply, as a grader reads them (issue 34, session 11).

Chat models answer with tables: a comparison whose last column marks the right row (``✓`` / ``✗``, ``yes`` /
``no``, a bold row), a one-row table under an ``Answer`` or ``Function`` header, a ``Property | Value`` table with a
``Function`` row, a ``Parameter | Default`` table. :func:`tables` finds them (a header row, a ``|---|`` separator and
the rows under it) and says, per row, which cells it has and how the reply marks it; the decisions (which row or
cell is the answer) are :mod:`deltap.checkers.grader`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ANSWER_HEADER", "LABEL_ROW", "Row", "Table", "cell_mark", "tables", "without_tables"]

_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_END = r"(?=\s*(?:$|[\u2014\u2013,.;:!()\-]))"
_POSITIVE = re.compile(
    r"[\u2713\u2714\u2705\u2611\u2b50]|^\s*(?:yes|correct|recommended|this\s+one)" + _END + r"|\u2190|<-+\s*$", re.I
)
_NEGATIVE = re.compile(
    r"[\u2717\u2718\u274c\u2716\u26d4\U0001f6ab]|^\s*(?:no|wrong|incorrect|not\s+recommended|avoid)" + _END, re.I
)

#: a column header that holds the answer (``| Task | Answer |``)
ANSWER_HEADER = re.compile(
    r"^\W*(?:(?:final\s+|correct\s+|short\s+)?answer|solution|recommend(?:ed|ation)?|use)\W*$", re.I
)
#: the first cell of a ``Property | Value`` row that holds the answer (``| Function | `get_close_matches` |``)
LABEL_ROW = re.compile(
    r"^\W*(?:answer|function|method|class|name|solution|parameter|argument|api|tool|call|decorator|option|choice)"
    r"(?:\s+(?:to\s+use|name|you\s+want))?\W*$",
    re.I,
)


@dataclass(frozen=True)
class Row:
    """One data row: its cells (text as written, stripped), where each starts in the reply, and its mark."""

    cells: tuple[str, ...]
    starts: tuple[int, ...]
    mark: str  # positive | negative | "" (none)
    bold: bool  # the first cell is bold (``| **`shorten`** | … |``)


@dataclass(frozen=True)
class Table:
    """A Markdown table of a reply: ``start``/``end`` in the reply, the header cells and the data rows."""

    start: int
    end: int
    header: tuple[str, ...]
    rows: tuple[Row, ...]

    def column(self, pattern: re.Pattern[str]) -> int | None:
        """The index of the first header cell ``pattern`` matches."""
        return next((i for i, h in enumerate(self.header) if pattern.match(_plain(h))), None)


def _plain(cell: str) -> str:
    return cell.strip().strip("*_`").strip()


def _cells(line: str, offset: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The cells of a table line and the reply offsets where their text starts (pipes inside backticks are text)."""
    body_start = line.index("|") + 1
    body_end = line.rstrip().rfind("|")
    cells: list[str] = []
    starts: list[int] = []
    i, cur, tick = body_start, body_start, False
    while i <= body_end:
        ch = line[i] if i < body_end else "|"
        if ch == "`":
            tick = not tick
        elif ch == "|" and not tick:
            raw = line[cur:i]
            lead = len(raw) - len(raw.lstrip())
            cells.append(raw.strip())
            starts.append(offset + cur + lead)
            cur = i + 1
        i += 1
    return tuple(cells), tuple(starts)


def cell_mark(cell: str) -> str:
    """``positive`` when a cell marks its row (or column) right (``✓``, ``yes``), ``negative`` when it marks it wrong
    (``✗``, ``no``), else ``""``."""
    text = _plain(cell)
    if _NEGATIVE.search(text):
        return "negative"
    if _POSITIVE.search(text):
        return "positive"
    return ""


def _mark(cells: tuple[str, ...]) -> str:
    """The row's mark: ``negative`` when a cell after the first is, else ``positive`` when one is, else ``""``."""
    marks = [cell_mark(c) for c in cells[1:]]
    return "negative" if "negative" in marks else "positive" if "positive" in marks else ""


def tables(text: str) -> list[Table]:
    """The Markdown tables of ``text``, in order: a row of cells, a ``|---|---|`` separator and the rows under it
    (lines that start and end with ``|``)."""
    lines: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    out: list[Table] = []
    i = 0
    while i + 1 < len(lines):
        start, head = lines[i]
        if not (_ROW.match(head) and _SEPARATOR.match(lines[i + 1][1]) and "|" in lines[i + 1][1]):
            i += 1
            continue
        header, _ = _cells(head, start)
        rows: list[Row] = []
        j = i + 2
        while j < len(lines) and _ROW.match(lines[j][1]):
            cells, starts = _cells(lines[j][1], lines[j][0])
            first = cells[0] if cells else ""
            bold = first.startswith("**") and first.endswith("**") and len(first) > 4
            rows.append(Row(cells, starts, _mark(cells), bold))
            j += 1
        end = lines[j - 1][0] + len(lines[j - 1][1])
        out.append(Table(start, end, header, tuple(rows)))
        i = j
    return out


def without_tables(text: str, found: list[Table]) -> str:
    """``text`` with its tables blanked out (spaces, so every other offset stays where it was)."""
    out = list(text)
    for t in found:
        for k in range(t.start, t.end):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)
