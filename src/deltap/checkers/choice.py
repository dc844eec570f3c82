"""Multiple-choice checker: robust option-letter extraction, then equality with the correct letter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict
from deltap.checkers.extract import extract_choice
from deltap.checkers.grammar import grammar_param, read_choice
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["MultipleChoiceChecker", "build"]


class MultipleChoiceChecker:
    """Pass when the reply unambiguously chooses the correct option.

    ``grammar="strict"`` (the default) reads exactly one option or fails, by
    :func:`~deltap.checkers.grammar.read_choice`: an echo of the option list, several letters (``A, B, C or D``,
    ``Answer: A or C``) and a negated letter (``not B``) fail, the article ``a`` is never option A, and ``A is
    wrong, C is right`` chooses C. A failure's ``detail`` starts with the rule (``echo``, ``several``,
    ``negated``, ``no answer``) and ``info["rule"]`` holds it. ``grammar="lenient"`` is the checker before issue
    24 (:func:`~deltap.checkers.extract.extract_choice`). A reply naming no option fails (it is a wrong answer, not
    an infrastructure error).

    Args:
        correct: The correct option key.
        options: ``letter -> text``.
        grammar: ``strict`` or ``lenient``; the checker id names it.
    """

    def __init__(self, correct: str, options: Mapping[str, str], grammar: str = "strict") -> None:
        if not options:
            raise DeltapError("multiple_choice checker needs params['options'] (letter -> text)")
        if correct not in options:
            raise DeltapError(
                f"multiple_choice checker: correct answer {correct!r} is not an option key {sorted(options)}"
            )
        self.correct = correct
        self.options = dict(options)
        self.grammar = grammar_param(grammar, "multiple_choice")
        self.id = checker_id("multiple_choice", grammar=self.grammar)

    def check(self, case: Case, answer: str) -> Verdict:
        if self.grammar == "lenient":
            return self._check_lenient(answer)
        reading = read_choice(answer, self.options)
        if reading.answer is None:
            return Verdict("fail", None, reading.detail, {"rule": reading.rule})
        if reading.answer == self.correct:
            return Verdict("pass", reading.answer, "correct option")
        return Verdict("fail", reading.answer, f"chose {reading.answer}, correct is {self.correct}", {"rule": "wrong"})

    def _check_lenient(self, answer: str) -> Verdict:
        letter = extract_choice(answer, self.options)  # None for an empty (or None) reply
        if letter is None:
            why = "empty answer" if not (answer or "").strip() else "no unambiguous option letter in the answer"
            return Verdict("fail", None, why)
        if letter == self.correct:
            return Verdict("pass", letter, "correct option")
        return Verdict("fail", letter, f"chose {letter}, correct is {self.correct}")


def build(params: Mapping[str, Any]) -> MultipleChoiceChecker:
    """The ``multiple_choice`` kind's factory (:mod:`deltap.checker_kinds`): ``correct`` (the letter), ``options``
    (letter -> text), ``grammar`` (``strict``)."""
    return MultipleChoiceChecker(
        str(params.get("correct", "")), params.get("options") or {}, str(params.get("grammar", "strict"))
    )
