"""Checkers and answer extraction on real-looking model output."""

from __future__ import annotations

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.checkers.base import CheckResult
from deltap.checkers.extract import extract_choice, extract_code, identifier_candidates, normalize_identifier
from deltap.errors import DeltapError

CASE = Case("c", "q")
OPTIONS = {"A": "BaseAgent", "B": "LlmAgent", "C": "SequentialAgent", "D": "Runner"}


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param("BaseAgent", "pass", id="bare"),
        pytest.param("`BaseAgent`", "pass", id="backticks"),
        pytest.param("  baseagent.  ", "pass", id="case-and-punctuation"),
        pytest.param("The answer is `BaseAgent`.", "pass", id="sentence"),
        pytest.param("Answer: BaseAgent\nIt is the root of all agents.", "pass", id="trailing-text"),
        pytest.param("```\nBaseAgent\n```", "pass", id="code-fence"),
        pytest.param('{"answer": "BaseAgent"}', "pass", id="json"),
        pytest.param("google.adk.agents.base_agent.BaseAgent", "pass", id="qualified-answer"),
        pytest.param("**BaseAgent**", "pass", id="markdown-bold"),
        pytest.param("BaseAgent()", "pass", id="call-parens"),
        pytest.param("LlmAgent", "fail", id="wrong"),
        pytest.param("The foundational class is:\n\n```python\nclass GoogleAdkBaseAgent:", "fail", id="real-smollm-miss"),
        pytest.param("", "fail", id="empty"),
        pytest.param("BaseAgentFactory", "fail", id="longer-name"),
    ],
)
def test_string_match(reply: str, outcome: str) -> None:
    checker = make_checker(CheckerSpec("string_match", {"answers": ["BaseAgent"]}))
    assert checker.check(CASE, reply).outcome == outcome


def test_string_match_options() -> None:
    qualified = make_checker(CheckerSpec("string_match", {"answers": ["google.adk.agents.BaseAgent"]}))
    assert qualified.check(CASE, "BaseAgent").passed  # bare answer for a qualified expectation
    exact = make_checker(CheckerSpec("string_match", {"answers": ["google.adk.agents.BaseAgent"], "qualified": "exact"}))
    assert not exact.check(CASE, "BaseAgent").passed
    sensitive = make_checker(CheckerSpec("string_match", {"answers": ["name"], "case_sensitive": True}))
    assert sensitive.check(CASE, "`name`").passed and not sensitive.check(CASE, "Name").passed
    with pytest.raises(DeltapError, match="at least one"):
        make_checker(CheckerSpec("string_match", {"answers": []}))


def test_normalization_rules() -> None:
    assert normalize_identifier("  `Run_Async()`. ") == "run_async"
    assert identifier_candidates("The answer is `output_key`.")[0] == "output_key"
    assert identifier_candidates('{"answer": "x"}')[0] == "x"
    assert identifier_candidates("   ") == []


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        pytest.param("C", "C", id="bare"),
        pytest.param("(C)", "C", id="parens"),
        pytest.param("C.", "C", id="dot"),
        pytest.param("c", "C", id="lowercase-alone"),
        pytest.param("Answer: C", "C", id="answer-colon"),
        pytest.param("The answer is (C) because it runs in order.", "C", id="sentence"),
        pytest.param("The correct option is **B**.", "B", id="bold"),
        pytest.param("C) SequentialAgent", "C", id="letter-and-text"),
        pytest.param('{"answer": "D"}', "D", id="json"),
        pytest.param("SequentialAgent", "C", id="option-text"),
        pytest.param("Either (A) or (C).", None, id="ambiguous"),
        pytest.param("I am not sure about this one.", None, id="no-letter-in-prose"),
        pytest.param("", None, id="empty"),
        pytest.param("E", None, id="not-an-option"),
    ],
)
def test_extract_choice(reply: str, letter: str | None) -> None:
    assert extract_choice(reply, OPTIONS) == letter


def test_multiple_choice_checker() -> None:
    checker = make_checker(CheckerSpec("multiple_choice", {"correct": "C", "options": OPTIONS}))
    assert checker.check(CASE, "The answer is C.") == CheckResult("pass", "C", "correct option")
    wrong = checker.check(CASE, "B")
    assert wrong.outcome == "fail" and wrong.extracted == "B"
    assert checker.check(CASE, "no idea").outcome == "fail"
    with pytest.raises(DeltapError, match="not an option"):
        make_checker(CheckerSpec("multiple_choice", {"correct": "E", "options": OPTIONS}))


def test_regex_checker() -> None:
    checker = make_checker(CheckerSpec("regex", {"pattern": r"run_async\b", "ignore_case": True}))
    assert checker.check(CASE, "Use RUN_ASYNC here").passed
    assert not checker.check(CASE, "run_asynchronously").passed
    full = make_checker(CheckerSpec("regex", {"pattern": r"\d+", "mode": "fullmatch"}))
    assert full.check(CASE, " 42 ").passed and not full.check(CASE, "42 apples").passed
    with pytest.raises(DeltapError, match="invalid pattern"):
        make_checker(CheckerSpec("regex", {"pattern": "("}))


def always_yes(case: Case, answer: str) -> bool:
    return True


def half(case: Case, answer: str) -> tuple[bool, str]:
    return (answer == "ok", "compared to ok")


def crashes(case: Case, answer: str) -> bool:
    raise RuntimeError("boom")


def returns_junk(case: Case, answer: str) -> int:
    return 3


def test_python_callable_checker() -> None:
    mod = __name__
    assert make_checker(CheckerSpec("python", {"callable": f"{mod}:always_yes"})).check(CASE, "x").passed
    pair = make_checker(CheckerSpec("python", {"callable": f"{mod}:half"}))
    assert pair.check(CASE, "ok") == CheckResult("pass", None, "compared to ok")
    assert pair.check(CASE, "no").outcome == "fail"
    crash = make_checker(CheckerSpec("python", {"callable": f"{mod}:crashes"})).check(CASE, "x")
    assert crash.outcome == "error" and "RuntimeError: boom" in crash.detail  # a checker crash is never a fail
    assert make_checker(CheckerSpec("python", {"callable": f"{mod}:returns_junk"})).check(CASE, "x").outcome == "error"
    for bad, msg in [("nocolon", "module:function"), ("no_such_mod_xyz:f", "cannot import"), (f"{mod}:missing", "no attribute")]:
        with pytest.raises(DeltapError, match=msg):
            make_checker(CheckerSpec("python", {"callable": bad}))


def test_make_checker_rejects_none_and_unknown() -> None:
    with pytest.raises(DeltapError, match="no checker"):
        make_checker(CheckerSpec("none"))
    with pytest.raises(DeltapError, match="unknown checker kind"):
        make_checker(CheckerSpec("telepathy"))  # type: ignore[arg-type]
    with pytest.raises(DeltapError, match="test_file"):
        make_checker(CheckerSpec("pytest", {"module_name": "m"}))


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        pytest.param("```python\nx = 1\n```\nExplanation.", "x = 1\n", id="python-fence"),
        pytest.param("Short: ```\ny\n```\n```python\nx = 1\nz = 2\n```", "x = 1\nz = 2\n", id="prefers-python-tag"),
        pytest.param("x = 1", "x = 1\n", id="no-fence"),
        pytest.param("```python\nx = 1\n", "x = 1\n", id="unclosed-fence"),
        pytest.param("  ", None, id="empty"),
    ],
)
def test_extract_code(reply: str, code: str | None) -> None:
    assert extract_code(reply) == code
