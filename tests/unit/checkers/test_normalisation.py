"""The checker normalisation table: every decoration a model puts around a right answer passes, every near miss fails.

One row per (reply, expected outcome), for string match (bare and qualified expectations), multiple choice and regex.
A checker that strips only ``.``, or matches qualified names by raw suffix (``pkg.NotBaseAgent`` ends with
``BaseAgent``), fails rows here.
"""

from __future__ import annotations

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.checkers.extract import clean_identifier, extract_choice, normalize_identifier

CASE = Case("c", "q")

# Decorations of a right answer ``X``: each must pass wherever ``X`` passes.
DECORATIONS = [
    pytest.param("{}", id="bare"),
    pytest.param("{}.", id="period"),
    pytest.param("{},", id="comma"),
    pytest.param("{}!", id="exclamation"),
    pytest.param("{}?", id="question"),
    pytest.param("{};", id="semicolon"),
    pytest.param("{}:", id="colon"),
    pytest.param("{}...", id="ellipsis"),
    pytest.param("{}\u2026", id="unicode-ellipsis"),
    pytest.param("'{}'", id="single-quotes"),
    pytest.param('"{}"', id="double-quotes"),
    pytest.param("\u201c{}\u201d", id="curly-double-quotes"),
    pytest.param("\u2018{}\u2019", id="curly-single-quotes"),
    pytest.param("`{}`", id="backticks"),
    pytest.param("`{}`.", id="backticks-period"),
    pytest.param('"{}",', id="quotes-comma"),
    pytest.param("**{}**", id="bold"),
    pytest.param("**{}**!", id="bold-exclamation"),
    pytest.param("{}()", id="call-parens"),
    pytest.param("`{}()`.", id="call-in-backticks-period"),
    pytest.param("{}(name='x')", id="call-arguments"),
    pytest.param("  {}  \n", id="whitespace"),
    pytest.param("The answer is `{}`.", id="sentence-backticks"),
    pytest.param("The answer is {}!", id="sentence-exclamation"),
    pytest.param("Answer: {},", id="answer-colon-comma"),
    pytest.param('{{"answer": "{}"}}', id="json"),
    pytest.param("```\n{}\n```", id="fence"),
]


def _string_match(expected: str, **params: object) -> object:
    return make_checker(CheckerSpec("string_match", {"answers": [expected], **params}))


@pytest.mark.parametrize("template", DECORATIONS)
@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        pytest.param("BaseAgent", "BaseAgent", id="bare-for-bare"),
        pytest.param("BaseAgent", "google.adk.agents.BaseAgent", id="qualified-for-bare"),
        pytest.param("google.adk.agents.BaseAgent", "BaseAgent", id="bare-for-qualified"),
        pytest.param("google.adk.agents.BaseAgent", "google.adk.agents.BaseAgent", id="qualified-for-qualified"),
        pytest.param("google.adk.agents.BaseAgent", "agents.BaseAgent", id="partly-qualified"),
        pytest.param("BaseAgent", "baseagent", id="lower-case"),
    ],
)
def test_string_match_accepts_decorated_right_answers(expected: str, answer: str, template: str) -> None:
    reply = template.format(answer)
    result = _string_match(expected).check(CASE, reply)  # type: ignore[attr-defined]
    assert result.outcome == "pass", (reply, result.detail)


@pytest.mark.parametrize("template", DECORATIONS)
@pytest.mark.parametrize(
    ("expected", "answer"),
    [
        pytest.param("BaseAgent", "pkg.NotBaseAgent", id="qualified-suffix-not-at-dot"),
        pytest.param("BaseAgent", "google.adk.MyBaseAgent", id="qualified-prefixed-name"),
        pytest.param("BaseAgent", "NotBaseAgent", id="prefixed-name"),
        pytest.param("BaseAgent", "BaseAgentFactory", id="longer-name"),
        pytest.param("BaseAgent", "BaseAgent.run", id="member-of-right-class"),
        pytest.param("BaseAgent", "Base", id="shorter-name"),
        pytest.param("BaseAgent", "LlmAgent", id="other-class"),
        pytest.param("google.adk.agents.BaseAgent", "google.adk.agents.NotBaseAgent", id="qualified-near-miss"),
        pytest.param("google.adk.agents.BaseAgent", "NotBaseAgent", id="bare-near-miss-for-qualified"),
        pytest.param("google.adk.agents.BaseAgent", "other.BaseAgent", id="other-module-same-name"),
        pytest.param("google.adk.agents.BaseAgent", "gents.BaseAgent", id="module-suffix-not-at-dot"),
        pytest.param("google.adk.agents.BaseAgent", "xgoogle.adk.agents.BaseAgent", id="longer-qualified"),
    ],
)
def test_string_match_rejects_near_misses(expected: str, answer: str, template: str) -> None:
    reply = template.format(answer)
    result = _string_match(expected).check(CASE, reply)  # type: ignore[attr-defined]
    assert result.outcome == "fail", (reply, result.detail)


@pytest.mark.parametrize(
    ("expected", "reply", "outcome"),
    [
        pytest.param("google.adk.agents.BaseAgent", "google.adk.agents.BaseAgent.", "pass", id="same-qualified"),
        pytest.param("google.adk.agents.BaseAgent", "BaseAgent", "fail", id="bare"),
        pytest.param("google.adk.agents.BaseAgent", "agents.BaseAgent", "fail", id="partly-qualified"),
        pytest.param("BaseAgent", "google.adk.agents.BaseAgent", "fail", id="qualified-for-bare"),
        pytest.param("BaseAgent", "`BaseAgent`!", "pass", id="bare-decorated"),
    ],
)
def test_string_match_exact_qualified(expected: str, reply: str, outcome: str) -> None:
    assert _string_match(expected, qualified="exact").check(CASE, reply).outcome == outcome  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param("BaseAgent,", "pass", id="comma"),
        pytest.param("`BaseAgent`!", "pass", id="backticks-exclamation"),
        pytest.param("baseagent", "fail", id="wrong-case"),
        pytest.param("google.adk.agents.BaseAgent.", "pass", id="qualified"),
        pytest.param("pkg.NotBaseAgent", "fail", id="near-miss"),
    ],
)
def test_string_match_case_sensitive(reply: str, outcome: str) -> None:
    assert _string_match("BaseAgent", case_sensitive=True).check(CASE, reply).outcome == outcome  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        pytest.param("BaseAgent,", "BaseAgent", id="comma"),
        pytest.param("BaseAgent!", "BaseAgent", id="exclamation"),
        pytest.param("BaseAgent?;:", "BaseAgent", id="several"),
        pytest.param("\u201cBaseAgent\u201d.", "BaseAgent", id="curly"),
        pytest.param("`run_async(ctx)`.", "run_async", id="call"),
        pytest.param("__init__", "__init__", id="dunder-kept"),
        pytest.param("a.b.C", "a.b.C", id="inner-dots-kept"),
        pytest.param("  two   words ", "two words", id="inner-space-collapsed"),
    ],
)
def test_clean_identifier(text: str, clean: str) -> None:
    assert clean_identifier(text) == clean
    assert normalize_identifier(text) == clean.lower()


OPTIONS = {"A": "BaseAgent", "B": "LlmAgent", "C": "SequentialAgent", "D": "Runner"}


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        pytest.param("C", "C", id="bare"),
        pytest.param("C.", "C", id="period"),
        pytest.param("C,", "C", id="comma"),
        pytest.param("C!", "C", id="exclamation"),
        pytest.param("C;", "C", id="semicolon"),
        pytest.param("C:", "C", id="colon"),
        pytest.param("(C)", "C", id="parens"),
        pytest.param("(C).", "C", id="parens-period"),
        pytest.param("[C]", "C", id="brackets"),
        pytest.param("`C`", "C", id="backticks"),
        pytest.param("'C'", "C", id="quotes"),
        pytest.param("\u201cC\u201d", "C", id="curly-quotes"),
        pytest.param("**C**", "C", id="bold"),
        pytest.param("**C.**", "C", id="bold-period"),
        pytest.param("c", "C", id="lower-case-bare"),
        pytest.param("Answer: C", "C", id="answer-colon"),
        pytest.param("The answer is C!", "C", id="sentence-exclamation"),
        pytest.param("The answer is (C).", "C", id="sentence-parens"),
        pytest.param("C) SequentialAgent", "C", id="letter-and-text"),
        pytest.param("C, SequentialAgent", "C", id="letter-comma-text"),
        pytest.param('{"answer": "C"}', "C", id="json"),
        pytest.param("SequentialAgent", "C", id="option-text"),
        pytest.param("`SequentialAgent`.", "C", id="option-text-decorated"),
        pytest.param("Answer: A. Answer: C", None, id="contradiction"),
        pytest.param("E", None, id="not-an-option"),
        pytest.param("CD", None, id="two-letter-word"),
        pytest.param("Cat", None, id="word-starting-with-letter"),
        pytest.param("I think so", None, id="prose"),
        pytest.param("", None, id="empty"),
    ],
)
def test_choice_table(reply: str, letter: str | None) -> None:
    assert extract_choice(reply, OPTIONS) == letter
    checker = make_checker(CheckerSpec("multiple_choice", {"correct": "C", "options": OPTIONS}))
    assert checker.check(CASE, reply).outcome == ("pass" if letter == "C" else "fail")


# Prose, JSON and fences are the string-match checker's job: a full match of a sentence fails by design.
REGEX_DECORATIONS = [p for p in DECORATIONS if not str(p.values[0]).startswith(("The answer", "Answer", "{{", "```"))]


@pytest.mark.parametrize("template", REGEX_DECORATIONS)
def test_regex_fullmatch_tolerates_decorations(template: str) -> None:
    checker = make_checker(CheckerSpec("regex", {"pattern": r"(?:[\w.]+\.)?BaseAgent", "mode": "fullmatch"}))
    reply = template.format("google.adk.agents.BaseAgent")
    result = checker.check(CASE, reply)  # type: ignore[attr-defined]
    assert result.outcome == "pass", (reply, result.detail)


@pytest.mark.parametrize(
    ("pattern", "mode", "reply", "outcome"),
    [
        pytest.param(r"(?:[\w.]+\.)?BaseAgent", "fullmatch", "pkg.NotBaseAgent", "fail", id="fullmatch-near-miss"),
        pytest.param(
            r"(?:[\w.]+\.)?BaseAgent", "fullmatch", "google.adk.MyBaseAgent.", "fail", id="fullmatch-prefixed"
        ),
        pytest.param(
            r"(?:[\w.]+\.)?BaseAgent", "fullmatch", "BaseAgent is the answer", "fail", id="fullmatch-sentence"
        ),
        pytest.param(r"\d+\.", "fullmatch", "42.", "pass", id="fullmatch-pattern-with-own-period"),
        pytest.param(r"42", "fullmatch", "42.", "pass", id="fullmatch-trailing-period"),
        pytest.param(r"42", "fullmatch", "420", "fail", id="fullmatch-longer"),
        pytest.param(r"\bBaseAgent\b", "search", "Use `BaseAgent`, then run it.", "pass", id="search-in-sentence"),
        pytest.param(r"\bBaseAgent\b", "search", "Use pkg.NotBaseAgent", "fail", id="search-near-miss"),
        pytest.param(r"\bBaseAgent\b", "search", "google.adk.MyBaseAgent!", "fail", id="search-prefixed"),
        pytest.param(r"baseagent", "search", "BaseAgent", "fail", id="search-case"),
        pytest.param(r"x*", "search", "", "fail", id="empty-reply-matching-pattern"),
        pytest.param(r"x*", "search", "   ", "fail", id="blank-reply-matching-pattern"),
    ],
)
def test_regex_table(pattern: str, mode: str, reply: str, outcome: str) -> None:
    checker = make_checker(CheckerSpec("regex", {"pattern": pattern, "mode": mode}))
    assert checker.check(CASE, reply).outcome == outcome  # type: ignore[attr-defined]


def test_regex_ignore_case() -> None:
    checker = make_checker(CheckerSpec("regex", {"pattern": "baseagent", "ignore_case": True}))
    assert checker.check(CASE, "`BaseAgent`.").outcome == "pass"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("reply", "first"),
    [
        pytest.param('{"answer": "BaseAgent"}', "BaseAgent", id="answer"),
        pytest.param('{"final_answer": "BaseAgent"}', "BaseAgent", id="final_answer"),
        pytest.param('{"identifier": "BaseAgent"}', "BaseAgent", id="identifier"),
        pytest.param('{"option": "C"}', "C", id="option"),
        pytest.param('{"choice": "C"}', "C", id="choice"),
        pytest.param('{"letter": "C"}', "C", id="letter"),
        pytest.param('{"answer": 42}', "42", id="integer"),
        pytest.param('```json\n{"answer": "BaseAgent"}\n```', "BaseAgent", id="fenced-json"),
        pytest.param('{"reason": "x", "answer": "BaseAgent"}', "BaseAgent", id="answer-not-first-key"),
    ],
)
def test_json_answer_keys(reply: str, first: str) -> None:
    from deltap.checkers.extract import identifier_candidates

    assert identifier_candidates(reply)[0] == first


@pytest.mark.parametrize(
    ("reply", "candidates"),
    [
        pytest.param("BaseAgent", ["BaseAgent"], id="single-token"),
        pytest.param("The answer is `BaseAgent`.", ["BaseAgent", "The answer is `BaseAgent`.", "The"], id="answer-is"),
        pytest.param("Use `Runner` first\nthen more", ["Runner", "Use `Runner` first", "Use"], id="backtick-then-line"),
        pytest.param('{"answer": ["x"]}', ['{"answer": ["x"]}', '{"answer":'], id="json-list-ignored"),
        pytest.param("[1, 2]", ["[1, 2]", "[1,"], id="json-not-object"),
        pytest.param("{not json", ["{not json", "{not"], id="broken-json"),
        pytest.param("\n\n", [], id="blank"),
        pytest.param("```\n\n```", [], id="empty-fence"),
        pytest.param("Answer: Foo", ["Foo", "Answer: Foo", "Answer:"], id="two-tokens"),
    ],
)
def test_identifier_candidates_order(reply: str, candidates: list[str]) -> None:
    from deltap.checkers.extract import identifier_candidates

    assert identifier_candidates(reply) == candidates


def test_check_results_carry_the_match_and_the_reason() -> None:
    checker = _string_match("google.adk.agents.BaseAgent")
    ok = checker.check(CASE, "The answer is `agents.BaseAgent`.")  # type: ignore[attr-defined]
    assert (ok.outcome, ok.extracted, ok.detail) == (
        "pass",
        "agents.BaseAgent",
        "matched 'google.adk.agents.baseagent'",
    )
    bad = checker.check(CASE, "pkg.NotBaseAgent")  # type: ignore[attr-defined]
    assert (bad.outcome, bad.extracted) == ("fail", "pkg.NotBaseAgent")
    assert bad.detail == "wrong: the answer 'pkg.NotBaseAgent' matches none of ['google.adk.agents.BaseAgent']"
    empty = checker.check(CASE, "   ")  # type: ignore[attr-defined]
    assert (empty.outcome, empty.extracted, empty.detail) == ("fail", None, "unreadable: empty answer")
    assert checker.id == "string_match(case_sensitive=False,qualified=either,grammar=grader)"  # type: ignore[attr-defined]
    prose = _string_match("X").check(CASE, "one two three four five\nsix")  # type: ignore[attr-defined]
    assert prose.detail == "wrong: the answer 'six' matches none of ['X']"  # a line of its own is an answer
    words = _string_match("X").check(CASE, "one two three four five")  # type: ignore[attr-defined]
    assert words.detail == "unreadable: no answer: no candidate name in 'one two three four five'"
    lenient = _string_match("X", grammar="lenient").check(CASE, "one two three four five\nsix")  # type: ignore[attr-defined]
    assert lenient.detail == "none of ['one two three four five', 'one'] matches ['X']"
    choice = make_checker(CheckerSpec("multiple_choice", {"correct": "C", "options": OPTIONS}))
    assert choice.check(CASE, "").detail == "unreadable: empty answer"
    assert choice.check(CASE, "nothing at all").detail == (
        "unreadable: no answer: no option letter or option text in the reply"
    )
    assert choice.check(CASE, "no idea at all").detail.startswith("hedge:")
    assert choice.check(CASE, "B").detail == "chose B, correct is C"
    regex = make_checker(CheckerSpec("regex", {"pattern": r"Base\w+", "mode": "fullmatch"}))
    assert regex.check(CASE, "`BaseAgent`.").extracted == "BaseAgent"  # type: ignore[attr-defined]
    assert regex.check(CASE, "").detail == "empty answer"  # type: ignore[attr-defined]
    assert regex.check(CASE, "nope").detail == "pattern did not match"  # type: ignore[attr-defined]
    assert regex.id == "regex('Base\\\\w+',mode=fullmatch,ignore_case=False)"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        pytest.param({"answers": ["  "]}, "at least one non-empty accepted answer", id="blank-answer"),
        pytest.param(
            {"answers": ["x"], "qualified": "suffix"},
            "qualified must be 'either' or 'exact', got 'suffix'",
            id="bad-qualified",
        ),
    ],
)
def test_string_match_rejects_bad_params(params: dict[str, object], message: str) -> None:
    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match=message):
        make_checker(CheckerSpec("string_match", params))


def test_regex_rejects_bad_mode() -> None:
    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match="mode must be 'search' or 'fullmatch', got 'prefix'"):
        make_checker(CheckerSpec("regex", {"pattern": "x", "mode": "prefix"}))
    with pytest.raises(DeltapError, match="needs params\\['pattern'\\]"):
        make_checker(CheckerSpec("regex", {"pattern": ""}))


def test_string_match_defaults_and_detail_limits() -> None:
    from deltap.checkers.string_match import StringMatchChecker
    from deltap.errors import DeltapError

    default = StringMatchChecker(["google.adk.agents.BaseAgent"])  # case-insensitive, qualified="either"
    assert default.check(CASE, "baseagent").passed and default.check(CASE, "AGENTS.BASEAGENT").passed
    assert default.id == "string_match(case_sensitive=False,qualified=either,grammar=grader)"
    assert default.check(CASE, None).detail == "unreadable: empty answer"  # type: ignore[arg-type]
    # At most four candidates are named in a (lenient) failure (this reply has five).
    reply = '{"answer": "Foo", "x": "answer is Qux `Bar`"}'
    detail = StringMatchChecker(["X"], grammar="lenient").check(CASE, reply).detail
    assert detail == f"none of {['Foo', 'Qux', 'Bar', reply]} matches ['X']"
    with pytest.raises(
        DeltapError,
        match=r"^string_match checker needs at least one non-empty accepted answer \(params\['answers'\]\)$",
    ):
        StringMatchChecker([" "])


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        pytest.param(
            "```\nan untagged block\nlonger than the code\n```\n```python\nx = 1\n```",
            "x = 1\n",
            id="python-tag-beats-longer-untagged",
        ),
        pytest.param("```\nan untagged block\nlonger\n```\n```py\nx = 1\n```", "x = 1\n", id="py-tag"),
        pytest.param("```\nan untagged block\nlonger\n```\n```python3\nx = 1\n```", "x = 1\n", id="python3-tag"),
        pytest.param(
            "```\nan untagged block\nlonger\n```\n```Python\nx = 1\n```", "x = 1\n", id="tag-case-insensitive"
        ),
        pytest.param("```text\nplain words here, longer\n```\n```python\nx = 1\n```", "x = 1\n", id="other-tag-loses"),
        pytest.param(
            "```python\nb = 1\n```\n```python\na = 1\nc = 2\n```", "a = 1\nc = 2\n", id="longest-not-last-or-max"
        ),
        pytest.param("```python\n    x = 1\n```", "    x = 1\n", id="indentation-kept"),
        pytest.param("```python\nX = 1\n```", "X = 1\n", id="leading-X-kept"),
        pytest.param("  x = 1", "  x = 1\n", id="no-fence-indentation-kept"),
        pytest.param("X = 1\n\n", "X = 1\n", id="no-fence-newlines-trimmed"),
    ],
)
def test_extract_code_table(reply: str, code: str) -> None:
    from deltap.checkers.extract import extract_code

    assert extract_code(reply) == code


@pytest.mark.parametrize(
    ("reply", "options", "letter"),
    [
        pytest.param("C", ["A", "B", "C"], "C", id="options-as-letters"),
        pytest.param("SequentialAgent", ["A", "B", "C"], None, id="letters-have-no-text"),
        pytest.param('{"answer": "C."}', OPTIONS, "C", id="json-letter-with-period"),
        pytest.param('{"answer": "(C)"}', OPTIONS, "C", id="json-letter-in-parens"),
        pytest.param("c.", OPTIONS, "C", id="lower-case-with-period"),
        pytest.param("2", {"A": "1", "B": "2"}, "B", id="single-character-option-text"),
        pytest.param("I pick **C** here.", OPTIONS, "C", id="bold-in-prose"),
        pytest.param("I pick (C) here.", OPTIONS, "C", id="parens-in-prose"),
        pytest.param("answer: c", OPTIONS, "C", id="lower-case-after-answer"),
        pytest.param("(c) is right", OPTIONS, None, id="lower-case-in-parens-is-prose"),
        pytest.param("(a) no, (C)", OPTIONS, "C", id="lower-case-paren-skipped-not-stopping"),
        pytest.param("option B", {"A": "option B", "B": "other"}, "B", id="explicit-letter-beats-option-text"),
    ],
)
def test_choice_details(reply: str, options: object, letter: str | None) -> None:
    assert extract_choice(reply, options) == letter  # type: ignore[arg-type]
