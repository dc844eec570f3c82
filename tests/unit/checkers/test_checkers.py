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
        pytest.param(
            "The foundational class is:\n\n```python\nclass GoogleAdkBaseAgent:", "fail", id="real-smollm-miss"
        ),
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
    exact = make_checker(
        CheckerSpec("string_match", {"answers": ["google.adk.agents.BaseAgent"], "qualified": "exact"})
    )
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
    for bad, msg in [
        ("nocolon", "module:function"),
        ("no_such_mod_xyz:f", "cannot import"),
        (f"{mod}:missing", "no attribute"),
    ]:
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


# ---------------------------------------------------------------------------------------------------------------
# Exact results and messages of every checker (issue 19, mutation testing): what a user reads in a trial's detail
# and in an error is part of the behaviour, so it is pinned whole, not by a substring.


def test_multiple_choice_results_are_exact() -> None:
    checker = make_checker(CheckerSpec("multiple_choice", {"correct": "C", "options": OPTIONS}))
    assert checker.id == "multiple_choice(grammar=grader)"
    assert checker.check(CASE, "C") == CheckResult("pass", "C", "correct option")
    assert checker.check(CASE, "B") == CheckResult("fail", "B", "chose B, correct is C", {"rule": "wrong"})
    assert checker.check(CASE, "no idea") == CheckResult(
        "fail", None, "hedge: the reply disclaims knowing the answer and names no option", {"rule": "hedge"}
    )
    assert checker.check(CASE, "nothing") == CheckResult(
        "fail",
        None,
        "unreadable: no answer: no option letter or option text in the reply",
        {"rule": "no answer", "unreadable": True},
    )
    empty = CheckResult("fail", None, "unreadable: empty answer", {"rule": "empty", "unreadable": True})
    assert checker.check(CASE, "") == empty
    assert checker.check(CASE, "   ") == empty
    assert checker.check(CASE, None) == empty  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param(
            {"correct": "A"}, "multiple_choice checker needs params['options'] (letter -> text)", id="no-options"
        ),
        pytest.param(
            {"options": OPTIONS},
            "multiple_choice checker: correct answer '' is not an option key ['A', 'B', 'C', 'D']",
            id="no-correct",
        ),
        pytest.param(
            {"correct": "E", "options": OPTIONS},
            "multiple_choice checker: correct answer 'E' is not an option key ['A', 'B', 'C', 'D']",
            id="correct-not-an-option",
        ),
    ],
)
def test_multiple_choice_spec_errors(params: dict, message: str) -> None:
    with pytest.raises(DeltapError) as info:
        make_checker(CheckerSpec("multiple_choice", params))
    assert str(info.value) == message


def test_regex_checker_defaults_and_results() -> None:
    from deltap.checkers.regex import RegexChecker

    default = RegexChecker(r"run_async")
    assert default.mode == "search" and default.id == "regex('run_async',mode=search,ignore_case=False)"
    assert default.check(CASE, "call run_async now") == CheckResult("pass", "run_async", "pattern matched")
    assert default.check(CASE, "call RUN_ASYNC now") == CheckResult("fail", None, "pattern did not match")
    assert default.check(CASE, "  ") == CheckResult("fail", None, "empty answer")
    spec = make_checker(CheckerSpec("regex", {"pattern": "run_async"}))
    assert spec.id == default.id  # the spec's defaults are the class's: search, case-sensitive
    assert not spec.check(CASE, "RUN_ASYNC").passed
    loose = make_checker(CheckerSpec("regex", {"pattern": "run_async", "ignore_case": True}))
    assert loose.check(CASE, "RUN_ASYNC") == CheckResult("pass", "RUN_ASYNC", "pattern matched")


def test_regex_fullmatch_never_matches_an_answer_cleaned_to_nothing() -> None:
    # "x*" matches the empty string: a reply that is only decoration ("``", "...") cleans to "" and must still fail.
    checker = make_checker(CheckerSpec("regex", {"pattern": "x*", "mode": "fullmatch"}))
    for reply in ("``", "...", '""', "**"):
        assert checker.check(CASE, reply) == CheckResult("fail", None, "pattern did not match"), reply
    assert checker.check(CASE, "`xx`.") == CheckResult("pass", "xx", "pattern matched")


def _re_error(pattern: str) -> str:
    """Python's own message for an invalid pattern (its wording varies between versions)."""
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        return str(exc)
    raise AssertionError(pattern)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(CheckerSpec("regex", {}), "regex checker needs params['pattern']", id="regex-no-pattern"),
        pytest.param(
            CheckerSpec("regex", {"pattern": "x", "mode": "match"}),
            "regex checker: mode must be 'search' or 'fullmatch', got 'match'",
            id="regex-mode",
        ),
        pytest.param(
            CheckerSpec("regex", {"pattern": "("}),
            f"regex checker: invalid pattern '(': {_re_error('(')}",
            id="regex-invalid",
        ),
        pytest.param(
            CheckerSpec("python", {}),
            "python checker: params['callable'] must be 'module:function', got ''",
            id="python-none",
        ),
        pytest.param(
            CheckerSpec("string_match", {}),
            "string_match checker needs at least one non-empty accepted answer (params['answers'])",
            id="string-match-none",
        ),
        pytest.param(
            CheckerSpec("pytest", {"module_name": "m"}), "pytest checker needs params['test_file']", id="pytest-no-test"
        ),
        pytest.param(
            CheckerSpec("pytest", {"test_file": "t.py"}),
            "pytest checker needs params['module_name']",
            id="pytest-no-module",
        ),
        pytest.param(
            CheckerSpec("none"),
            "this case has no checker (kind 'none', e.g. a BEIR query): it can be evaluated but not mined by 'pass'; "
            "give it a reference answer and use the 'logprob' outcome, or add a checker",
            id="none",
        ),
    ],
)
def test_make_checker_error_messages(spec: CheckerSpec, message: str) -> None:
    with pytest.raises(DeltapError) as info:
        make_checker(spec)
    assert str(info.value) == message


def test_make_checker_string_match_params() -> None:
    one = make_checker(CheckerSpec("string_match", {"answers": "BaseAgent"}))  # a single answer as a string
    assert (
        one.answers == ("BaseAgent",) and one.id == "string_match(case_sensitive=False,qualified=either,grammar=grader)"
    )
    both = make_checker(
        CheckerSpec(
            "string_match", {"answers": ["a.B"], "case_sensitive": True, "qualified": "exact", "grammar": "lenient"}
        )
    )
    assert both.id == "string_match(case_sensitive=True,qualified=exact,grammar=lenient)"


def test_make_checker_pytest_params(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from deltap.checkers.pytest_checker import PytestChecker
    from deltap.checkers.sandbox import SandboxLimits

    test_file, fixed, support = tmp_path / "test_m.py", tmp_path / "m.py", tmp_path / "data.txt"
    for f in (test_file, fixed, support):
        f.write_text("x = 1\n")
    plain = make_checker(CheckerSpec("pytest", {"test_file": str(test_file), "module_name": "m"}))
    assert isinstance(plain, PytestChecker)
    assert plain.test_file == test_file and plain.module_name == "m" and plain.fixed_file is None
    assert plain.support_files == [] and plain.limits == SandboxLimits() and plain.candidate_process == "auto"
    shared = make_checker(
        CheckerSpec("pytest", {"test_file": str(test_file), "module_name": "m", "candidate_process": "shared"})
    )
    assert shared.candidate_process == "shared"
    full = make_checker(
        CheckerSpec(
            "pytest",
            {
                "test_file": str(test_file),
                "module_name": "m",
                "fixed_file": str(fixed),
                "support_files": [str(support)],
                "wall_seconds": "12.5",
                "cpu_seconds": 7,
                "memory_mb": 300,
                "max_processes": 9,
                "disk_mb": 5,
                "cpus": "0.5",
            },
        )
    )
    assert full.fixed_file == fixed and full.support_files == [support]
    assert full.limits == SandboxLimits(
        wall_seconds=12.5, cpu_seconds=7, memory_bytes=300 * 2**20, max_processes=9, disk_bytes=5 * 2**20, cpus=0.5
    )
    assert isinstance(full.limits.cpu_seconds, int) and isinstance(full.limits.wall_seconds, float)


CONSTANT = 3


class _Namespace:
    @staticmethod
    def check(case: Case, answer: str) -> bool:
        return answer == "yes"


class _CallableObject:
    def __call__(self, case: Case, answer: str) -> bool:
        return True

    def __repr__(self) -> str:
        return "<judge>"


def wrong_pair(case: Case, answer: str) -> tuple[str, str]:
    return ("yes", "not a bool")


def triple(case: Case, answer: str) -> tuple[bool, str, str]:
    return (True, "a", "b")


def gives_result(case: Case, answer: str) -> CheckResult:
    return CheckResult("fail", "x", "custom", {"k": 1})


def test_python_callable_results_are_exact() -> None:
    from deltap.checkers.python_callable import CallableChecker

    mod = __name__
    crash = make_checker(CheckerSpec("python", {"callable": f"{mod}:crashes"}))
    assert crash.id == f"python({mod}:crashes)"
    assert crash.check(CASE, "x") == CheckResult("error", None, f"checker {mod}:crashes raised RuntimeError: boom")
    assert make_checker(CheckerSpec("python", {"callable": f"{mod}:half"})).check(CASE, "no") == CheckResult(
        "fail", None, "compared to ok"
    )
    assert make_checker(CheckerSpec("python", {"callable": f"{mod}:always_yes"})).check(CASE, "x") == CheckResult(
        "pass", None, ""
    )
    assert CallableChecker(lambda c, a: False).check(CASE, "x") == CheckResult("fail", None, "")
    assert make_checker(CheckerSpec("python", {"callable": f"{mod}:gives_result"})).check(CASE, "x") == gives_result(
        CASE, "x"
    )
    for name, kind in (("returns_junk", "int"), ("wrong_pair", "tuple"), ("triple", "tuple")):
        got = make_checker(CheckerSpec("python", {"callable": f"{mod}:{name}"})).check(CASE, "x")
        assert got == CheckResult(
            "error", None, f"checker {mod}:{name} returned {kind}; expected bool, (bool, str) or Verdict"
        )
    nested = make_checker(CheckerSpec("python", {"callable": f"{mod}:_Namespace.check"}))  # a dotted attribute path
    assert nested.check(CASE, "yes").passed and not nested.check(CASE, "no").passed
    # a callable given directly is named by its module and qualified name (or its repr when it has none)
    assert CallableChecker(always_yes).id == f"python({mod}:always_yes)"
    assert CallableChecker(_CallableObject()).id == f"python({mod}:<judge>)"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(5, "python checker: params['callable'] must be 'module:function', got 5", id="not-a-string"),
        pytest.param(
            "nocolon", "python checker: params['callable'] must be 'module:function', got 'nocolon'", id="no-colon"
        ),
        pytest.param(
            "no_such_mod_xyz:f",
            "python checker: cannot import 'no_such_mod_xyz' (No module named 'no_such_mod_xyz'); is it on sys.path?",
            id="no-module",
        ),
        pytest.param(
            f"{__name__}:missing", f"python checker: {__name__!r} has no attribute 'missing'", id="no-attribute"
        ),
        pytest.param(
            f"{__name__}:_Namespace.nope",
            f"python checker: {__name__!r} has no attribute '_Namespace.nope'",
            id="no-nested",
        ),
        pytest.param(
            f"{__name__}:CONSTANT", f"python checker: '{__name__}:CONSTANT' is not callable", id="not-callable"
        ),
    ],
)
def test_load_callable_errors(spec: object, message: str) -> None:
    from deltap.checkers.python_callable import load_callable

    with pytest.raises(DeltapError) as info:
        load_callable(spec)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        pytest.param('{"answer": "X"}', "X", id="json-x"),
        pytest.param("X…", "X", id="x-ellipsis"),
        pytest.param("(X).", "X", id="x-parens"),
        pytest.param('{"answer": "wx"}', "WX", id="json-two-letter-key"),
        pytest.param('{"answer": "Q"}', None, id="json-not-a-key"),
        pytest.param('{"answer": "W X"}', None, id="json-two-keys"),
    ],
)
def test_extract_choice_with_an_option_x_and_a_two_letter_key(reply: str, letter: str | None) -> None:
    # "X" is the letter a decoration-stripping bug would eat (strip("XX...")); "WX" a key longer than one letter.
    assert extract_choice(reply, {"W": "first", "X": "second", "WX": "both", "Y": "third"}) == letter


def by_case(case: Case, answer: str) -> bool:
    return case.case_id == answer


def test_callable_checker_passes_the_case_and_names_callables_without_a_module() -> None:
    from deltap.checkers.python_callable import CallableChecker, load_callable

    assert CallableChecker({}.__setitem__).id == "python(?:dict.__setitem__)"  # a method-wrapper has no __module__
    checker = make_checker(CheckerSpec("python", {"callable": f"{__name__}:by_case"}))
    assert (
        checker.check(CASE, "c") == CheckResult("pass", None, "") and not checker.check(CASE, "d").passed
    )  # fn(case, answer)
    with pytest.raises(DeltapError) as info:
        load_callable(f"{__name__}:always_yes:extra")  # the first colon splits module from attribute
    assert str(info.value) == f"python checker: {__name__!r} has no attribute 'always_yes:extra'"
