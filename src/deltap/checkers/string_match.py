"""String-match checker for identifier answers (``api_understanding``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict, declared, unreadable
from deltap.checkers.extract import clean_identifier, identifier_candidates, normalize_identifier
from deltap.checkers.grader import Context, read_identifier
from deltap.checkers.grammar import DEFAULT_GRAMMAR, grammar_param, read_answer, same_answer
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["StringMatchChecker", "build"]


class StringMatchChecker:
    """Pass when the reply names one of the accepted answers — and nothing else.

    ``grammar="grader"`` (the default) reads the reply the way a careful grader would
    (:func:`~deltap.checkers.grader.read_identifier`, rules in ``docs/answer-grammar.md``): a declared ``Answer:`` line
    first, strictly; else the sentence that asserts the answer, past lead-ins, headings, restated questions and chat
    residue, code read as code, rejections and hedges read as such, and a qualifier checked against the question and
    the case's gold documents (``pickle.dumps`` is not ``json.dumps``). A reply whose answer could not be located
    fails with a detail starting ``unreadable:`` (:func:`~deltap.checkers.base.is_unreadable`); a verdict read from
    the declared answer ends its detail with `` (declared)`` (:func:`~deltap.checkers.base.is_declared`: ``matched
    'nsmallest' (declared)``). ``grammar="protocol"`` reads only a declared ``Answer:`` line.

    ``grammar="strict"`` (issue 24) reads the reply by the answer grammar of :mod:`deltap.checkers.grammar`:
    the answer span (JSON ``answer``, the text after ``answer is``, else the first line) must commit to exactly one
    candidate name, not negated, not hedged with ``I don't know``, and not followed by an alternative; numbers are
    compared as numbers and the qualified-tail rule applies only between two dotted identifiers. A failure's
    ``detail`` starts with the rule that failed it (``several``, ``negated``, ``hedge``, ``alternatives``,
    ``no answer``, ``wrong``) and ``info["rule"]`` holds it.

    ``grammar="lenient"`` is the checker before issue 24, unchanged: normalization (see
    :func:`~deltap.checkers.extract.normalize_identifier`): whitespace, quotes, backticks, Markdown emphasis, a
    trailing ``()`` and trailing punctuation are removed; comparison is case-insensitive unless ``case_sensitive``
    (both grammars). Candidates are pulled from the reply by
    :func:`~deltap.checkers.extract.identifier_candidates` (JSON ``answer``, ``answer is X``, the first backticked
    span, the first line and its first token) so ``The answer is `BaseAgent`.`` passes for ``BaseAgent``.

    Qualified vs bare identifiers (``qualified="either"``, the default; in the strict grammar only between two
    dotted identifiers): one name may be the other's tail cut at a
    ``.`` — ``google.adk.agents.BaseAgent`` passes for the expected ``BaseAgent``, and ``BaseAgent`` or
    ``agents.BaseAgent`` pass for the expected ``google.adk.agents.BaseAgent``; ``pkg.NotBaseAgent``,
    ``google.adk.MyBaseAgent`` and ``other.BaseAgent`` (for a qualified expectation) fail. With ``qualified="exact"``
    the dotted forms must be equal.

    Args:
        answers: Accepted answers (at least one).
        case_sensitive: Compare with case.
        qualified: ``either`` or ``exact`` (see above).
        grammar: ``grader``, ``protocol``, ``strict`` or ``lenient``; the checker id names it.
    """

    def __init__(
        self,
        answers: Sequence[str],
        case_sensitive: bool = False,
        qualified: str = "either",
        grammar: str = DEFAULT_GRAMMAR,
    ) -> None:
        accepted = [str(a) for a in answers if str(a).strip()]
        if not accepted:
            raise DeltapError("string_match checker needs at least one non-empty accepted answer (params['answers'])")
        if qualified not in ("either", "exact"):
            raise DeltapError(f"string_match: qualified must be 'either' or 'exact', got {qualified!r}")
        self.answers = tuple(accepted)
        self.case_sensitive = case_sensitive
        self.qualified = qualified
        self.grammar = grammar_param(grammar, "string_match")
        self.id = checker_id("string_match", case_sensitive=case_sensitive, qualified=qualified, grammar=self.grammar)

    def _norm(self, s: str) -> str:
        return clean_identifier(s) if self.case_sensitive else normalize_identifier(s)

    def _match(self, candidate: str, expected: str) -> bool:
        if candidate == expected:
            return True
        if self.qualified == "either":
            # One names a qualified tail of the other, cut at a "." (never a raw suffix: pkg.NotBaseAgent is not
            # BaseAgent).
            return candidate.endswith("." + expected) or expected.endswith("." + candidate)
        return False

    def check(self, case: Case, answer: str) -> Verdict:
        if self.grammar == "lenient":
            return self._check_lenient(answer)
        if self.grammar in ("grader", "protocol"):
            return self._check_grader(case, answer)
        reading = read_answer(
            answer, self.answers, self.case_sensitive, self.qualified, getattr(case, "query", "") or ""
        )
        if reading.answer is None:
            extracted = reading.candidates[0] if reading.candidates else None
            return Verdict("fail", extracted, reading.detail, {"rule": reading.rule})
        for e in self.answers:
            if same_answer(reading.answer, e, self.case_sensitive, self.qualified):
                return Verdict("pass", reading.answer, f"matched {self._norm(e)!r}")
        return Verdict(
            "fail",
            reading.answer,
            f"wrong: the answer {reading.answer!r} matches none of {list(self.answers)}",
            {"rule": "wrong"},
        )

    def _check_grader(self, case: Case | None, answer: str) -> Verdict:
        ctx = Context(
            self.answers,
            self.case_sensitive,
            self.qualified,
            str(getattr(case, "query", "") or ""),
            tuple(getattr(case, "gold_doc_ids", ()) or ()),
        )
        reading = read_identifier(answer, ctx, protocol=self.grammar == "protocol")
        if reading.unreadable:  # never marked: it counts as unreadable
            return unreadable(declared(reading.detail, False), None, rule=reading.rule)
        if reading.rule == "ok":
            matched = next(
                (e for e in self.answers if same_answer(str(reading.answer), e, self.case_sensitive, self.qualified)),
                self.answers[0],
            )
            return Verdict("pass", reading.answer, declared(f"matched {self._norm(matched)!r}", reading.declared))
        detail = declared(reading.detail, False)  # the marker goes once, at the end (deltap.checkers.base.DECLARED)
        if reading.rule == "wrong":
            detail = f"{detail} matches none of {list(self.answers)}"
        return Verdict("fail", reading.answer, declared(detail, reading.declared), {"rule": reading.rule})

    def _check_lenient(self, answer: str) -> Verdict:
        candidates = identifier_candidates(answer or "")
        if not candidates:
            return Verdict("fail", None, "empty answer")
        expected = [self._norm(a) for a in self.answers]
        for c in candidates:
            nc = self._norm(c)
            for e in expected:
                if self._match(nc, e):
                    return Verdict("pass", c.strip(), f"matched {e!r}")
        return Verdict(
            "fail", candidates[0].strip(), f"none of {[c.strip() for c in candidates][:4]} matches {list(self.answers)}"
        )


def build(params: Mapping[str, Any]) -> StringMatchChecker:
    """The ``string_match`` kind's factory (:mod:`deltap.checker_kinds`): ``answers`` (a string or a list),
    ``case_sensitive`` (False), ``qualified`` (``either``), ``grammar`` (``grader``)."""
    answers = params.get("answers")
    if isinstance(answers, str):
        answers = [answers]
    return StringMatchChecker(
        answers or [],
        bool(params.get("case_sensitive", False)),
        str(params.get("qualified", "either")),
        str(params.get("grammar", DEFAULT_GRAMMAR)),
    )
