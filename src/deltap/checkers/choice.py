"""Multiple-choice checker: robust option-letter extraction, then equality with the correct letter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltap.checkers.base import CheckResult
from deltap.checkers.extract import extract_choice
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["MultipleChoiceChecker"]


class MultipleChoiceChecker:
    """Pass when the reply unambiguously chooses the correct option.

    The letter is found by :func:`~deltap.checkers.extract.extract_choice` (``C``, ``(C)``, ``Answer: C``, ``The
    answer is C.``, JSON, or the exact text of an option). A reply naming no option, or two different ones, fails
    (it is a wrong answer, not an infrastructure error).

    Args:
        correct: The correct option key.
        options: ``letter -> text``.
    """

    def __init__(self, correct: str, options: Mapping[str, str]) -> None:
        if not options:
            raise DeltapError("multiple_choice checker needs params['options'] (letter -> text)")
        if correct not in options:
            raise DeltapError(f"multiple_choice checker: correct answer {correct!r} is not an option key {sorted(options)}")
        self.correct = correct
        self.options = dict(options)
        self.id = "multiple_choice"

    def check(self, case: Case, answer: str) -> CheckResult:
        letter = extract_choice(answer, self.options)  # None for an empty (or None) reply
        if letter is None:
            why = "empty answer" if not (answer or "").strip() else "no unambiguous option letter in the answer"
            return CheckResult("fail", None, why)
        if letter == self.correct:
            return CheckResult("pass", letter, "correct option")
        return CheckResult("fail", letter, f"chose {letter}, correct is {self.correct}")
