"""The answer first: one to three short sentences saying which system is better, by how much, how sure, and what would
settle it.

Every command that compares systems (``deltap compare`` / ``evaluate``, ``deltap endtoend``, ``deltap demo``) and both
reports end or start with these lines, built here from the same numbers the tables show:

* **which and by how much**: the system with the highest mean on the first metric, its mean beside the runner-up's;
* **how sure**: a system is *shown better* than another only when their paired test (Holm-corrected over the
  family the command tests) is at or below α; otherwise the line says none is shown better;
* **what would settle it**: the number of questions a paired test (two-sided α = 0.05, 80% power) needs to detect the
  observed difference between the first two, from the spread of their per-question differences:
  ``n ≈ (1.96 + 0.84)² · s.d.² / Δ²`` (the normal approximation; a reader can redo it from the printed s.d.).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Contrast", "clause_lines", "headline", "questions_to_settle"]

#: (z_{1-α/2} + z_{power})² for a two-sided α = 0.05 and 80% power
_Z2 = (1.959964 + 0.841621) ** 2


@dataclass(frozen=True)
class Contrast:
    """A paired comparison of two systems on the headline metric.

    Attributes:
        a, b: The systems (the difference is ``a − b``).
        diff: Mean of ``a`` minus mean of ``b``.
        p: The test's p-value after the command's multiple-testing correction (``None``: not tested).
        sd: Standard deviation of the per-question differences (``None``: unknown).
    """

    a: str
    b: str
    diff: float
    p: float | None = None
    sd: float | None = None


def questions_to_settle(diff: float, sd: float | None) -> int | None:
    """Questions a paired test (α = 0.05 two-sided, 80% power) needs to detect ``diff`` given the per-question
    ``sd`` of the differences (``None`` when there is no difference or no spread to speak of)."""
    if sd is None or not math.isfinite(sd) or not math.isfinite(diff) or diff == 0 or sd <= 0:
        return None
    return max(2, math.ceil(_Z2 * sd * sd / (diff * diff)))


def _p(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "not tested"
    return "corrected p < 0.001" if p < 0.001 else f"corrected p = {p:.2g}"


def _tests_of(top: str, ranked: Sequence[tuple[str, float]], contrasts: Sequence[Contrast]) -> str:
    """The tests made of ``top`` against the others (``vs bm25: corrected p = 0.45``), or ``not tested``: a
    comparison tests each run against its baseline only, so the first two may not have been tested together."""
    tested = [(o, c) for o, _ in ranked[1:] if (c := _find(contrasts, top, o)) is not None and c.p is not None]
    if not tested:
        return f"{top} and {ranked[1][0]} not tested against each other"
    return "; ".join(f"{top} vs {o}: {_p(c.p)}" for o, c in tested[:2])


def _find(contrasts: Sequence[Contrast], a: str, b: str) -> Contrast | None:
    for c in contrasts:
        if (c.a, c.b) == (a, b):
            return c
        if (c.a, c.b) == (b, a):
            return Contrast(a, b, -c.diff, c.p, c.sd)
    return None


def headline(
    what: str,
    n: int,
    means: Mapping[str, float | None],
    contrasts: Sequence[Contrast],
    *,
    alpha: float = 0.05,
    fmt: str = ".3f",
    unit: str = "",
    test: str = "paired test, Holm-corrected",
    short: str | None = None,
) -> list[str]:
    """One to three sentences: which system is best on ``what`` and whether it is shown better, then (when it is not)
    how many questions would settle the difference between the first two.

    Args:
        what: The metric in words (``"nDCG@10"``, ``"mean log-probability of the answer"``).
        n: Questions the means are over.
        means: Per system, the mean (``None`` when it has none).
        contrasts: The paired tests the command made (any direction; untested pairs may carry only ``diff``/``sd``).
        alpha: Significance level the tests are read at.
        fmt: Number format of the means and differences.
        unit: Appended to differences (``" nats"``).
        test: How the p-values were made, in words.
        short: The metric's short name for the "would settle" sentence (default ``what``).
    """
    ranked = sorted(((s, m) for s, m in means.items() if m is not None and math.isfinite(m)), key=lambda x: -x[1])
    if not ranked:
        return [f"No system has a {what} to compare."]
    names = ", ".join(s for s, _ in ranked)
    top, top_mean = ranked[0]
    if len(ranked) == 1:
        return [f"{top}: {what} {top_mean:{fmt}} over {n} questions (nothing to compare it with)."]
    second, second_mean = ranked[1]
    shown = []
    for other, _ in ranked[1:]:
        c = _find(contrasts, top, other)
        if c is not None and c.p is not None and c.p <= alpha and c.diff > 0:
            shown.append((other, c))
    lines: list[str] = []
    if len(shown) == len(ranked) - 1:
        c = shown[0][1]
        lines.append(
            f"{top} is better than {'every other system' if len(ranked) > 2 else second} on {what}: "
            f"{top_mean:{fmt}} vs {second} {second_mean:{fmt}} (+{c.diff:{fmt}}{unit}, {_p(c.p)}, {test}), "
            f"over {n} questions."
        )
        return lines
    c = _find(contrasts, top, second) or Contrast(top, second, top_mean - second_mean)
    if shown:
        beaten = ", ".join(o for o, _ in shown)
        lines.append(
            f"{top} ranks first on {what} ({top_mean:{fmt}}) and is shown better than {beaten} ({test}), but not "
            f"than {second} ({second_mean:{fmt}}, {_p(c.p)}), over {n} questions."
        )
    elif c.diff == 0:
        tied = [s for s, m in ranked if m == top_mean]
        who = "they all tie" if len(tied) == len(ranked) else f"{', '.join(tied[:-1])} and {tied[-1]} tie"
        lines.append(f"None of {names} is shown better on {what} over {n} questions: {who} at {top_mean:{fmt}}.")
    else:
        listed = ", ".join(f"{s} {m:{fmt}}" for s, m in ranked[:4]) + (", …" if len(ranked) > 4 else "")
        lines.append(
            f"None of {names} is shown better on {what} over {n} questions: {listed}{unit} "
            f"({_tests_of(top, ranked, contrasts)})."
        )
    need = questions_to_settle(c.diff, c.sd)
    if need is not None and c.sd is not None:
        more = "" if need > n else "; this many are here, so the correction for testing several pairs or chance hid it"
        lines.append(
            f"About {need} questions would settle the difference of {abs(c.diff):{fmt}}{unit} in {short or what} "
            f"between {top} and {second} (paired test, α 0.05, 80% power, per-question s.d. {c.sd:{fmt}}{more})."
        )
    return lines


def clause_lines(text: str, width: int = 100) -> list[str]:
    """A long sentence as short lines, for terminals and reports: its lead (up to the first ``": "`` outside
    brackets) on a line of its own, then one ``- `` line per ``"; "``-separated clause outside brackets, each wrapped
    at ``width`` with a hanging indent. Only the layout changes: every word of ``text`` is kept, in order."""
    import textwrap

    parts: list[str] = []
    depth, start, lead = 0, 0, ""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and not lead and not parts and text.startswith(": ", i):
            lead, start = text[: i + 1], i + 2
            i += 2
            continue
        elif depth == 0 and text.startswith("; ", i):
            parts.append(text[start:i])
            start = i + 2
            i += 2
            continue
        i += 1
    parts.append(text[start:])
    out = [lead] if lead else []
    bullet = "- " if lead or len(parts) > 1 else ""
    for part in parts:
        out += textwrap.wrap(bullet + part, width, subsequent_indent=" " * len(bullet)) or [bullet.rstrip()]
    return out
