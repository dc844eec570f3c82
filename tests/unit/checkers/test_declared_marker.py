"""A verdict read from the reply's declared answer says so (issue 34, session 14): its detail ends `` (declared)``.

Passes and wrong answers both, on the ``grader`` and ``protocol`` grammars; exactly one marker, at the end; never on an
unreadable verdict (it counts as unreadable) nor on the ``strict`` / ``lenient`` grammars (they read no answer line).
"""

from __future__ import annotations

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import DECLARED, is_declared, is_unreadable, make_checker
from deltap.checkers.base import clip_detail, declared
from deltap.checkers.reply import clean_reply, declared_answer
from tests.unit.checkers.test_reply_corpus import CASES, SETS, _replies

_STRING = Case(
    "s",
    "Which heapq function returns the n smallest elements?",
    checker=CheckerSpec("string_match", {"answers": ["nsmallest"]}),
)
_OPTIONS = {"A": "wrap", "B": "fill", "C": "dedent", "D": "indent"}
_CHOICE = Case(
    "m",
    "Which textwrap function returns one string?",
    checker=CheckerSpec("multiple_choice", {"correct": "B", "options": _OPTIONS}),
    benchmark_type="multiple_choice",
    metadata={"options": _OPTIONS},
)


def _verdict(case: Case, reply: str, grammar: str = "grader") -> tuple[str, str]:
    spec = CheckerSpec(case.checker.kind, {**dict(case.checker.params), "grammar": grammar})
    v = make_checker(spec).check(case, reply)
    return v.status, v.detail


@pytest.mark.parametrize("grammar", ["grader", "protocol"])
@pytest.mark.parametrize(
    ("case", "reply", "status", "detail"),
    [
        (_STRING, "It keeps a heap.\n\nAnswer: nsmallest", "pass", "matched 'nsmallest' (declared)"),
        (_STRING, '{"answer": "heapq.nsmallest"}', "pass", "matched 'nsmallest' (declared)"),
        (
            _STRING,
            "Answer: nlargest",
            "fail",
            "wrong: the answer 'nlargest' matches none of ['nsmallest'] (declared)",
        ),
        (
            _STRING,
            "I'm not sure.\nAnswer: nsmallest",
            "fail",
            "hedge: the reply disclaims knowing the answer before declaring it (declared)",
        ),
        (
            _STRING,
            "Answer: nsmallest or nlargest",
            "fail",
            "several: the reply lists ['nsmallest', 'nlargest'] (declared)",
        ),
        (_CHOICE, "fill joins the lines.\nAnswer: B", "pass", "correct option (declared)"),
        (_CHOICE, "Answer: A", "fail", "chose A, correct is B (declared)"),
        (_CHOICE, "Answer: A or B", "fail", "several: the declared answer names options A, B (declared)"),
    ],
)
def test_a_declared_answer_marks_the_verdict(case: Case, reply: str, status: str, detail: str, grammar: str) -> None:
    got = _verdict(case, reply, grammar)
    assert got == (status, detail)
    assert is_declared(got[1]) and got[1].count(DECLARED) == 1


@pytest.mark.parametrize(
    ("case", "reply", "status", "detail"),
    [
        (_STRING, "Sure! Use `nsmallest`.", "pass", "matched 'nsmallest'"),
        (_STRING, "nlargest", "fail", "wrong: the answer 'nlargest' matches none of ['nsmallest']"),
        (_CHOICE, "B", "pass", "correct option"),
        (_CHOICE, "A", "fail", "chose A, correct is B"),
    ],
)
def test_an_answer_read_by_the_grammar_is_not_marked(case: Case, reply: str, status: str, detail: str) -> None:
    got = _verdict(case, reply)
    assert got == (status, detail) and not is_declared(got[1])


@pytest.mark.parametrize(
    ("case", "reply", "grammar"),
    [
        (_STRING, "Answer: ???", "grader"),  # a declared line that names nothing: unreadable, not declared
        (_CHOICE, "Answer: Z", "grader"),
        (_STRING, "`nsmallest`", "protocol"),  # no line under the protocol grammar
        (_STRING, "", "grader"),
    ],
)
def test_an_unreadable_verdict_is_never_marked(case: Case, reply: str, grammar: str) -> None:
    status, detail = _verdict(case, reply, grammar)
    assert status == "fail" and is_unreadable(detail)
    assert DECLARED not in detail and not is_declared(detail)


@pytest.mark.parametrize("grammar", ["strict", "lenient"])
def test_the_older_grammars_do_not_mark(grammar: str) -> None:
    assert _verdict(_STRING, "Answer: nsmallest", grammar)[1] == "matched 'nsmallest'"
    assert not is_declared(_verdict(_CHOICE, "Answer: B", grammar)[1])


def test_the_marker_helpers() -> None:
    # the grader's own detail may carry the marker inside: it moves to the end, once
    assert declared("answer 'x' (declared) (concluded)") == "answer 'x' (concluded) (declared)"
    assert declared("matched 'x' (declared)", False) == "matched 'x'"
    assert declared("unreadable: no answer", True) == "unreadable: no answer"
    assert is_declared("correct option (declared)")
    assert not is_declared("correct option") and not is_declared("") and not is_declared(None)
    assert not is_declared("unreadable: nothing (declared)")
    # a trial log keeps 500 characters of a detail: the marker survives the cut
    long = declared("wrong: " + "x" * 600)
    assert len(clip_detail(long, 500)) == 500 and is_declared(clip_detail(long, 500))
    assert clip_detail("wrong: " + "y" * 600, 500) == ("wrong: " + "y" * 600)[:500]
    assert clip_detail("short (declared)", 500) == "short (declared)"


def test_on_the_whole_reply_corpus_the_marker_says_whether_the_reply_declared_an_answer() -> None:
    """Every labelled reply of ``tests/data/replies``: under ``grader`` and ``protocol``, a verdict is marked exactly
    when the reply has a declared answer (:func:`deltap.checkers.reply.declared_answer`) and is readable; at most one
    marker, at the end; the ``strict`` grammar never marks. Counts pin the corpus (a reply added shows here)."""
    marked = {"grader": 0, "protocol": 0}
    bad: list[str] = []
    for name in SETS:
        for r in _replies(name):
            case, reply = CASES[r["case"]], str(r["reply"])
            has = declared_answer(clean_reply(reply)) is not None
            for grammar in ("grader", "protocol", "strict"):
                _, detail = _verdict(case, reply, grammar)
                ok = detail.count(DECLARED) <= 1 and (DECLARED not in detail or detail.endswith(DECLARED))
                if grammar == "strict":
                    ok = ok and not is_declared(detail)
                else:
                    ok = ok and is_declared(detail) == (has and not is_unreadable(detail))
                    marked[grammar] += is_declared(detail)
                if not ok:
                    bad.append(f"{name} {grammar}: {reply[:80]!r} -> {detail!r}")
    assert not bad, "\n".join(bad[:20])
    assert marked["grader"] == marked["protocol"] > 200  # 269 when written (session 14)
