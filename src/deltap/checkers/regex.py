"""Regular-expression checker."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict
from deltap.checkers.extract import clean_identifier
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["RegexChecker", "build"]


class RegexChecker:
    """Pass when ``pattern`` matches the reply.

    Args:
        pattern: A Python regular expression.
        mode: ``search`` (anywhere, the default) or ``fullmatch``: the whole stripped reply, or failing that the
            reply cleaned as :func:`~deltap.checkers.extract.clean_identifier` cleans an identifier (surrounding
            quotes, backticks and ``*``, a trailing call ``(...)`` and sentence punctuation removed), so ``42.``
            passes for ``42``. An empty reply always fails.
        ignore_case: Compile with ``re.IGNORECASE``.
    """

    def __init__(self, pattern: str, mode: str = "search", ignore_case: bool = False) -> None:
        if mode not in ("search", "fullmatch"):
            raise DeltapError(f"regex checker: mode must be 'search' or 'fullmatch', got {mode!r}")
        try:
            self.regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise DeltapError(f"regex checker: invalid pattern {pattern!r}: {exc}") from None
        self.mode = mode
        self.id = checker_id("regex", repr(pattern), mode=mode, ignore_case=ignore_case)

    def check(self, case: Case, answer: str) -> Verdict:
        text = (answer or "").strip()
        if not text:  # a pattern that matches the empty string (``x*``) must not pass an empty reply
            return Verdict("fail", None, "empty answer")
        if self.mode == "fullmatch":
            m = self.regex.fullmatch(text)
            if m is None:
                cleaned = clean_identifier(text)
                m = self.regex.fullmatch(cleaned) if cleaned and cleaned != text else None
        else:
            m = self.regex.search(text)
        if m:
            return Verdict("pass", m.group(0), "pattern matched")
        return Verdict("fail", None, "pattern did not match")


def build(params: Mapping[str, Any]) -> RegexChecker:
    """The ``regex`` kind's factory (:mod:`deltap.checker_kinds`): ``pattern``, ``mode`` (``search``),
    ``ignore_case`` (False)."""
    if not params.get("pattern"):
        raise DeltapError("regex checker needs params['pattern']")
    return RegexChecker(
        str(params["pattern"]), str(params.get("mode", "search")), bool(params.get("ignore_case", False))
    )
