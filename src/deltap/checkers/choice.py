"""Multiple-choice checker: robust option-letter extraction, then equality with the correct letter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict, declared, unreadable
from deltap.checkers.extract import extract_choice
from deltap.checkers.grader import read_option
from deltap.checkers.grammar import DEFAULT_GRAMMAR, grammar_param, read_choice
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["MultipleChoiceChecker", "build"]


class MultipleChoiceChecker:
    """Pass when the reply unambiguously chooses the correct option.

    ``grammar="grader"`` (the default) reads the reply the way a careful grader would
    (:func:`~deltap.checkers.grader.read_option`, rules in ``docs/answer-grammar.md``): a declared ``Answer:`` letter
    first, strictly; else a conclusion (``so it's A``, ``which leaves B``, ``the answer is C``); else the option the
    reply opens with — explanations of the other options after it are explanations; a hedge between options, several
    options, a negated option and a letter carrying another option's text fail; an echo of the option list, or no
    option at all, is ``unreadable``; a verdict read from the declared letter ends its detail with `` (declared)``
    (``correct option (declared)``, ``chose B, correct is A (declared)``). ``grammar="protocol"`` reads only a
    declared ``Answer:`` line.

    ``grammar="strict"`` (issue 24) reads exactly one option or fails, by
    :func:`~deltap.checkers.grammar.read_choice`: an echo of the option list, several letters (``A, B, C or D``,
    ``Answer: A or C``) and a negated letter (``not B``) fail, the article ``a`` is never option A, and ``A is
    wrong, C is right`` chooses C. A failure's ``detail`` starts with the rule (``echo``, ``several``,
    ``negated``, ``no answer``) and ``info["rule"]`` holds it. ``grammar="lenient"`` is the checker before issue
    24 (:func:`~deltap.checkers.extract.extract_choice`). A reply naming no option fails (it is a wrong answer, not
    an infrastructure error).

    Args:
        correct: The correct option key.
        options: ``letter -> text``.
        grammar: ``grader``, ``protocol``, ``strict`` or ``lenient``; the checker id names it.
    """

    def __init__(self, correct: str, options: Mapping[str, str], grammar: str = DEFAULT_GRAMMAR) -> None:
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
        if self.grammar in ("grader", "protocol"):
            got = read_option(answer, self.options, protocol=self.grammar == "protocol", question=case.query)
            if got.unreadable:
                return unreadable(declared(got.detail, False), None, rule=got.rule)
            if got.answer is None:
                return Verdict("fail", None, declared(got.detail, got.declared), {"rule": got.rule})
            if got.answer == self.correct:
                return Verdict("pass", got.answer, declared("correct option", got.declared))
            wrong = f"chose {got.answer}, correct is {self.correct}"
            return Verdict("fail", got.answer, declared(wrong, got.declared), {"rule": "wrong"})
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
    (letter -> text), ``grammar`` (``grader``)."""
    return MultipleChoiceChecker(
        str(params.get("correct", "")), params.get("options") or {}, str(params.get("grammar", DEFAULT_GRAMMAR))
    )
