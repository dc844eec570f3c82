"""The strict answer grammar (issue 24, ``grammar="strict"``): a reply passes only when it commits to exactly one answer.

Since issue 34 the checkers' default is the ``grader`` grammar (tests/unit/checkers/test_grader.py, which runs these
tables on it too); the strict grammar stays for the runs judged by it, so these tests pin ``grammar="strict"``.

The attack tables are the issue's held-out wrong replies (every one was accepted by the checkers before issue 24)
plus their mirror images: the same phrasing with the right answer in the place that counts must pass. Everything
goes through :func:`deltap.checkers.make_checker` with the default params, so these tests run (and fail) on the
code before the grammar existed. Property-based tests (hypothesis) generate replies around generated names.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker

CASE = Case("c", "q")
OPTIONS = {"A": "BaseAgent", "B": "LlmAgent", "C": "SequentialAgent", "D": "Runner"}


def _sm(expected: str, **params: object):  # type: ignore[no-untyped-def]
    return make_checker(CheckerSpec("string_match", {"answers": [expected], "grammar": "strict", **params}))


def _mc(correct: str, **params: object):  # type: ignore[no-untyped-def]
    spec = {"correct": correct, "options": OPTIONS, "grammar": "strict", **params}
    return make_checker(CheckerSpec("multiple_choice", spec))


# -- string_match: wrong replies a small model really writes, each accepted before issue 24 ----------------------

STRING_ATTACKS = [
    pytest.param("BaseAgent", "LlmAgent or google.adk.agents.BaseAgent", "several", id="or-expected-last"),
    pytest.param("BaseAgent", "LlmAgent or BaseAgent", "several", id="or-expected-last-bare"),
    pytest.param("BaseAgent", "I don't know. Perhaps LlmAgent, agents.BaseAgent", "hedge", id="hedge-list"),
    pytest.param("BaseAgent", "I don't know. Perhaps BaseAgent", "hedge", id="hedge-one"),
    pytest.param("BaseAgent", "maybe LlmAgent or agents.BaseAgent", "several", id="maybe-or"),
    pytest.param("BaseAgent", "It is definitely not BaseAgent", "negated", id="negation"),
    pytest.param("BaseAgent", "the answer is not `BaseAgent`; it is LlmAgent", "wrong", id="first-backtick-negated"),
    pytest.param("5", "2.5", "wrong", id="number-tail"),
    pytest.param("128", "0.128", "wrong", id="number-fraction-tail"),
    pytest.param("0", "The default is 1.0", "wrong", id="number-in-sentence"),
    pytest.param("BaseAgent", "`LlmAgent`, `SequentialAgent` or `BaseAgent`", "several", id="backticked-list"),
    pytest.param("BaseAgent", "- LlmAgent\n- BaseAgent\n- Runner", "several", id="bullet-list"),
    pytest.param("BaseAgent", "Possible answers:\n- LlmAgent\n- BaseAgent", "several", id="bullet-list-after-colon"),
    pytest.param(
        "BaseAgent", "Agents include LlmAgent, SequentialAgent, BaseAgent and Runner.", "several", id="buried"
    ),
    pytest.param("BaseAgent", "BaseAgent. Or maybe LlmAgent.", "alternatives", id="later-alternative"),
    pytest.param("BaseAgent", '{"answer": "LlmAgent or BaseAgent"}', "several", id="json-two"),
    pytest.param("name", "name or description", "several", id="plain-words-or"),
    pytest.param("name", "name, description", "several", id="plain-words-comma"),
    pytest.param("BaseAgent", "BaseAgent is wrong here", "negated", id="negated-after"),
]


@pytest.mark.parametrize(("expected", "reply", "rule"), STRING_ATTACKS)
def test_string_match_attacks_fail_with_the_rule_named(expected: str, reply: str, rule: str) -> None:
    result = _sm(expected).check(CASE, reply)
    assert result.outcome == "fail", (reply, result.detail)
    assert result.info.get("rule") == rule and result.detail.startswith(rule), result.detail


STRING_RIGHT = [
    pytest.param("0.6", "0.60", id="number-trailing-zero"),
    pytest.param("1e-09", "1e-9", id="number-exponent"),
    pytest.param("3", "3.0", id="number-float-int"),
    pytest.param("0.6", "The default is `0.60`.", id="number-in-sentence"),
    pytest.param("BaseAgent", "The answer is `BaseAgent`.", id="answer-is"),
    pytest.param("BaseAgent", "`BaseAgent` \u2014 it is the base class of all agents", id="explanation-after-dash"),
    pytest.param(
        "BaseAgent", "BaseAgent. It is the base class of LlmAgent and SequentialAgent.", id="explanation-sentence"
    ),
    pytest.param("BaseAgent", '{"answer": "BaseAgent"}', id="json"),
    pytest.param("BaseAgent", "```\nBaseAgent\n```", id="fence"),
    pytest.param("BaseAgent", "BaseAgent()", id="call"),
    pytest.param("BaseAgent", "**BaseAgent**", id="bold"),
    pytest.param("BaseAgent", "google.adk.agents.BaseAgent", id="qualified-tail"),
    pytest.param("LlmAgent", "the answer is not `BaseAgent`; it is LlmAgent", id="negated-then-right"),
    pytest.param("BaseAgent", "It is not LlmAgent but BaseAgent", id="not-x-but-y"),
    pytest.param("BaseAgent", "Use BaseAgent instead of LlmAgent", id="instead-of"),
    pytest.param("BaseAgent", "LlmAgent is wrong, BaseAgent is right", id="wrong-then-right"),
    pytest.param(
        "BaseAgent", "The BaseAgent class is the foundational class of all agents in the ADK.", id="acronym-is-prose"
    ),
    pytest.param("name", "The mandatory parameter is `name`.", id="plain-word-backticked"),
    pytest.param("name", "The mandatory parameter is name.", id="plain-word"),
    pytest.param("ans-a", "The answer is ans-a.", id="hyphenated-answer"),
    pytest.param(
        "BaseAgent",
        "Answer: BaseAgent\nYou can subclass it, or use LlmAgent for a model-backed agent.",
        id="or-inside-later-prose",
    ),
    pytest.param("BaseAgent", "Maybe BaseAgent.", id="tentative-single"),
    pytest.param("BaseAgent", "- BaseAgent", id="single-bullet"),
    pytest.param("BaseAgent", "No, it is BaseAgent.", id="interjection-no"),
    pytest.param("BaseAgent", "There is no LlmAgent here; BaseAgent is it.", id="negated-other-then-right"),
]


@pytest.mark.parametrize(("expected", "reply"), STRING_RIGHT)
def test_string_match_right_answers_in_natural_phrasings_pass(expected: str, reply: str) -> None:
    result = _sm(expected).check(CASE, reply)
    assert result.outcome == "pass", (reply, result.detail)


@pytest.mark.parametrize(
    ("expected", "reply"),
    [
        pytest.param("5", "2.5", id="number-tail"),
        pytest.param("0", "The default is 1.0", id="number-in-sentence"),
        pytest.param(
            "BaseAgent", "The base class is: `google.adk.agents.BaseAgent` or `LlmAgent`", id="qualified-in-list"
        ),
        pytest.param("5", "The version is 2.5", id="number-tail-in-sentence"),
        pytest.param("BaseAgent", "I use pkg.LlmAgent, not my.BaseAgent", id="tail-rule-not-over-a-line"),
    ],
)
def test_qualified_tail_rule_is_for_one_dotted_identifier_only(expected: str, reply: str) -> None:
    assert _sm(expected).check(CASE, reply).outcome == "fail"


def test_lenient_keeps_the_old_behaviour_and_the_id_says_which_grammar_ran() -> None:
    strict, lenient = _sm("BaseAgent"), _sm("BaseAgent", grammar="lenient")
    assert strict.id == "string_match(case_sensitive=False,qualified=either,grammar=strict)"
    assert lenient.id == "string_match(case_sensitive=False,qualified=either,grammar=lenient)"
    # the old behaviour, attacks included
    assert lenient.check(CASE, "LlmAgent or google.adk.agents.BaseAgent").outcome == "pass"
    assert _sm("5", grammar="lenient").check(CASE, "2.5").outcome == "pass"
    assert strict.check(CASE, "LlmAgent or google.adk.agents.BaseAgent").outcome == "fail"
    mc_strict, mc_lenient = _mc("A"), _mc("A", grammar="lenient")
    assert (mc_strict.id, mc_lenient.id) == ("multiple_choice(grammar=strict)", "multiple_choice(grammar=lenient)")
    assert mc_lenient.check(CASE, "A) BaseAgent B) LlmAgent C) SequentialAgent").outcome == "pass"
    assert mc_strict.check(CASE, "A) BaseAgent B) LlmAgent C) SequentialAgent").outcome == "fail"


@pytest.mark.parametrize("kind", ["string_match", "multiple_choice"])
def test_a_bad_grammar_is_a_one_line_error(kind: str) -> None:
    from deltap.errors import DeltapError

    params = {"answers": ["x"]} if kind == "string_match" else {"correct": "A", "options": OPTIONS}
    with pytest.raises(
        DeltapError, match=rf"^{kind}: grammar must be one of grader, protocol, strict, lenient, got 'loose'$"
    ):
        make_checker(CheckerSpec(kind, {**params, "grammar": "loose"}))  # type: ignore[arg-type]


# -- multiple_choice: one option or fail -------------------------------------------------------------------------

CHOICE_ATTACKS = [
    pytest.param("A", "A) BaseAgent B) LlmAgent C) SequentialAgent D) Runner", "echo", id="echo-inline"),
    pytest.param("A", "A) BaseAgent\nB) LlmAgent\nC) SequentialAgent\nD) Runner", "echo", id="echo-lines"),
    pytest.param("B", "A. BaseAgent\nB. LlmA", "echo", id="echo-cut-off-by-max-tokens"),
    pytest.param("A", "A, B, C or D", "several", id="all-letters"),
    pytest.param("A", "Answer: A or C", "several", id="answer-two-letters"),
    pytest.param("A", "A is wrong, C is right", "wrong", id="wrong-then-right"),
    pytest.param("A", "The answer is a function that runs its sub-agents in order: (C)", "wrong", id="article-a"),
    pytest.param("B", "not B", "negated", id="negated-letter"),
    pytest.param("B", "The answer is not B.", "negated", id="negated-after-cue"),
    pytest.param("C", "Either (A) or (C).", "several", id="either-or"),
]


@pytest.mark.parametrize(("correct", "reply", "rule"), CHOICE_ATTACKS)
def test_multiple_choice_attacks_fail_with_the_rule_named(correct: str, reply: str, rule: str) -> None:
    result = _mc(correct).check(CASE, reply)
    assert result.outcome == "fail", (reply, result.detail)
    assert result.info.get("rule") == rule, result.detail


CHOICE_RIGHT = [
    pytest.param("C", "A is wrong, C is right", id="wrong-then-right"),
    pytest.param("C", "The answer is a function that runs its sub-agents in order: (C)", id="article-a"),
    pytest.param("C", "The answer is not B, it is C.", id="negated-then-right"),
    pytest.param("C", "A) BaseAgent B) LlmAgent C) SequentialAgent D) Runner\nAnswer: C", id="echo-then-answer"),
    pytest.param("C", "C) SequentialAgent", id="one-marker-with-its-text"),
    pytest.param("A", "A", id="bare-a"),
    pytest.param("A", "a", id="bare-lowercase-a"),
    pytest.param("A", "answer: a", id="answer-lowercase-a"),
    pytest.param("A", "The answer is A because it is the base class.", id="answer-is-a-capital"),
    pytest.param("A", "A function cannot be an agent, so the answer is (A).", id="article-then-letter"),
    pytest.param("C", "I think C", id="pronoun-i"),
    pytest.param("C", "The answer is C because A is slower.", id="explanation-names-another"),
    pytest.param("C", "**C**", id="bold"),
    pytest.param("C", '{"answer": "C"}', id="json"),
    pytest.param("C", "SequentialAgent", id="option-text"),
    pytest.param("C", "No, the answer is C.", id="interjection-no"),
]


@pytest.mark.parametrize(("correct", "reply"), CHOICE_RIGHT)
def test_multiple_choice_right_answers_pass(correct: str, reply: str) -> None:
    result = _mc(correct).check(CASE, reply)
    assert result.outcome == "pass", (reply, result.detail)


# -- property-based tests ----------------------------------------------------------------------------------------

_camel = st.builds(
    lambda parts: "".join(p.capitalize() for p in parts),
    st.lists(st.text(string.ascii_lowercase, min_size=2, max_size=6), min_size=2, max_size=3),
)
_snake = st.builds("_".join, st.lists(st.text(string.ascii_lowercase, min_size=2, max_size=6), min_size=2, max_size=3))
_name = st.one_of(_camel, _snake)
_two_names = st.tuples(_name, _name).filter(
    lambda t: t[0].lower() != t[1].lower() and t[0].lower() not in t[1].lower() and t[1].lower() not in t[0].lower()
)

RIGHT_ALONE = [
    "{a}",
    "`{a}`",
    "**{a}**",
    "The answer is `{a}`.",
    "Answer: {a}",
    '{{"answer": "{a}"}}',
    "```\n{a}\n```",
    "{a}()",
    "`{a}` \u2014 that is the one to use.",
    "It is {a}.",
]
WITH_ANOTHER = [
    "{b} or {a}",
    "{a} or {b}",
    "{b}, {a}",
    "`{b}`, `{a}`",
    "maybe {b} or {a}",
    "I don't know. Perhaps {b}, {a}",
    "- {b}\n- {a}",
    "Either `{a}` or `{b}`.",
    "The answer is {b} or {a}.",
    "{a}. Or maybe {b}.",
]
NEGATED = ["It is definitely not {a}", "not `{a}`", "The answer is not {a}.", "{a} is wrong", "Definitely not {a}."]
# derandomize: the same examples every run (seeded, as the house style wants); a failure is replayable as is
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(names=_two_names, template=st.sampled_from(RIGHT_ALONE))
def test_property_the_right_answer_alone_passes(names: tuple[str, str], template: str) -> None:
    a, _ = names
    reply = template.format(a=a)
    assert _sm(a).check(CASE, reply).outcome == "pass", reply


@SETTINGS
@given(names=_two_names, template=st.sampled_from(WITH_ANOTHER))
def test_property_the_right_answer_with_another_candidate_fails(names: tuple[str, str], template: str) -> None:
    a, b = names
    reply = template.format(a=a, b=b)
    assert _sm(a).check(CASE, reply).outcome == "fail", reply


@SETTINGS
@given(names=_two_names, template=st.sampled_from(NEGATED))
def test_property_a_negated_right_answer_fails(names: tuple[str, str], template: str) -> None:
    a, _ = names
    reply = template.format(a=a)
    assert _sm(a).check(CASE, reply).outcome == "fail", reply


@SETTINGS
@given(
    x=st.decimals(min_value=-1000, max_value=1000, allow_nan=False, allow_infinity=False, places=3),
    y=st.integers(0, 999),
)
def test_property_numbers_compare_as_numbers(x: object, y: int) -> None:
    from decimal import Decimal

    d = Decimal(str(x))
    padded = f"{d:.6f}"  # the same number with trailing zeros
    assert _sm(str(d)).check(CASE, padded).outcome == "pass", (d, padded)
    other = d + Decimal(y + 1) / 7  # a different number
    shown = f"{other:.4f}"
    if Decimal(shown) != d:
        assert _sm(str(d)).check(CASE, shown).outcome == "fail", (d, shown)


_letters = st.sampled_from(sorted(OPTIONS))
CHOICE_RIGHT_ALONE = [
    "{c}",
    "({c})",
    "**{c}**",
    "Answer: {c}",
    "The answer is {c}.",
    "The answer is ({c}).",
    '{{"answer": "{c}"}}',
    "{c}) {text}",
    "I would pick {c}.",
    "{w} is wrong, {c} is right",
    "Not {w}, it is {c}.",
]
CHOICE_WITH_ANOTHER = [
    "{c} or {w}",
    "{w} or {c}",
    "Answer: {c} or {w}",
    "{w}, {c}",
    "Either ({c}) or ({w}).",
    "({w}) and ({c})",
]


@SETTINGS
@given(pair=st.tuples(_letters, _letters).filter(lambda t: t[0] != t[1]), template=st.sampled_from(CHOICE_RIGHT_ALONE))
def test_property_the_right_option_alone_passes(pair: tuple[str, str], template: str) -> None:
    c, w = pair
    reply = template.format(c=c, w=w, text=OPTIONS[c])
    assert _mc(c).check(CASE, reply).outcome == "pass", reply


@SETTINGS
@given(pair=st.tuples(_letters, _letters).filter(lambda t: t[0] != t[1]), template=st.sampled_from(CHOICE_WITH_ANOTHER))
def test_property_the_right_option_with_another_fails(pair: tuple[str, str], template: str) -> None:
    c, w = pair
    reply = template.format(c=c, w=w)
    assert _mc(c).check(CASE, reply).outcome == "fail", reply


@SETTINGS
@given(
    correct=_letters,
    order=st.permutations(sorted(OPTIONS)),
    sep=st.sampled_from([" ", "\n", "  ", "; "]),
    k=st.integers(2, 4),
)
def test_property_an_echoed_option_list_fails(correct: str, order: list[str], sep: str, k: int) -> None:
    shown = sorted(order[:k]) if correct in order[:k] else sorted([correct, *order[: k - 1]])
    reply = sep.join(f"{letter}) {OPTIONS[letter]}" for letter in shown)
    assert _mc(correct).check(CASE, reply).outcome == "fail", reply


@SETTINGS
@given(
    correct=_letters,
    template=st.sampled_from(
        ["not {c}", "Not {c}.", "The answer is not {c}.", "{c} is wrong.", "It is definitely not ({c})"]
    ),
)
def test_property_a_negated_right_option_fails(correct: str, template: str) -> None:
    reply = template.format(c=correct)
    assert _mc(correct).check(CASE, reply).outcome == "fail", reply


QUESTION = Case("q", "What is the mandatory parameter required by the `BaseAgent` constructor?")


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param(
            "The mandatory parameter required by the `BaseAgent` constructor is `name`.", "pass", id="restated"
        ),
        pytest.param("The BaseAgent constructor requires name.", "pass", id="restated-plain"),
        pytest.param("`BaseAgent` or `name`", "fail", id="restated-in-a-list-still-counts"),
        pytest.param("The `BaseAgent` constructor requires `name` and `description`.", "fail", id="two-new-names"),
        pytest.param("The `LlmAgent` constructor requires `name`.", "fail", id="a-name-not-in-the-question"),
    ],
)
def test_names_the_question_mentions_are_restated_not_answered(reply: str, outcome: str) -> None:
    assert _sm("name").check(QUESTION, reply).outcome == outcome, _sm("name").check(QUESTION, reply).detail


@settings(max_examples=300, deadline=None, derandomize=True)
@given(reply=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200), expected=_name)
def test_property_any_reply_gets_a_verdict_never_an_exception(reply: str, expected: str) -> None:
    assert _sm(expected).check(CASE, reply).outcome in ("pass", "fail")
    assert _mc("B").check(CASE, reply).outcome in ("pass", "fail")


@settings(max_examples=300, deadline=None, derandomize=True)
@given(reply=st.text(alphabet="ABCDabcd()[]*`'\" .,:;-\nornotisAnswer", max_size=80))
def test_property_option_replies_from_the_option_alphabet_get_a_verdict(reply: str) -> None:
    result = _mc("B").check(CASE, reply)
    assert result.outcome in ("pass", "fail")
    if result.outcome == "pass":
        assert result.extracted == "B"


def test_an_unmarked_accepted_answer_beside_a_restated_marked_name_passes() -> None:
    question = Case("q", "What is the default value of `max_tokens`?")
    assert _sm("1024").check(question, "The default `max_tokens` is 1024.").outcome == "pass"
    assert _sm("1024").check(question, "The default `max_tokens` is 1024 or 2048.").outcome == "fail"
    assert _sm("LlmAgent").check(CASE, "Well, maybe, LlmAgent").outcome == "pass"  # interjections are not names


@pytest.mark.parametrize(
    ("expected", "reply", "outcome"),
    [
        pytest.param("Barack Obama", "Barack Obama, in 2008.", "pass", id="year-beside-a-name"),
        pytest.param("Barack Obama", "Barack Obama was the 44th president.", "pass", id="ordinal"),
        pytest.param("Barack Obama", "Barack Obama or Joe Biden", "fail", id="two-names"),
        pytest.param("2008", "In 2008, under Barack Obama.", "pass", id="number-expected-beside-prose"),
        pytest.param("2008", "In 2008 or 2012.", "fail", id="two-numbers"),
        pytest.param("3", "Larkspur retries a failed job 3 times by default.", "pass", id="qa-number"),
        pytest.param("7431", "The default port is 7431, or 8080 behind the proxy.", "fail", id="qa-number-alternative"),
    ],
)
def test_free_text_answers(expected: str, reply: str, outcome: str) -> None:
    result = _sm(expected).check(CASE, reply)
    assert result.outcome == outcome, result.detail


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        pytest.param("The mandatory parameter is `name: typing.Optional[str]`.", "pass", id="annotated"),
        pytest.param("The mandatory parameter is `name: str = 'agent'`.", "pass", id="annotated-default"),
        pytest.param("Pass `name='agent'`.", "pass", id="keyword"),
        pytest.param("The mandatory parameter is `description: str`.", "fail", id="annotated-other"),
        pytest.param("`name: str` or `description: str`", "fail", id="two-declarations"),
    ],
)
def test_a_marked_declaration_names_its_parameter(reply: str, outcome: str) -> None:
    assert _sm("name").check(CASE, reply).outcome == outcome


@pytest.mark.parametrize(
    "reply, outcome",
    [
        ("BaseAgent\nLlmAgent\nRunner", "fail"),
        ("`BaseAgent`\n`LlmAgent`", "fail"),
        ("Answer: BaseAgent\nLlmAgent", "fail"),
        ("BaseAgent\n\nLlmAgent extends it.", "pass"),
        ("BaseAgent\nIt is the base class of every agent.", "pass"),
        ("BaseAgent\nBaseAgent", "pass"),
    ],
)
def test_one_bare_name_per_line_is_a_list(reply: str, outcome: str) -> None:
    """A list without bullets (one name per line) names several answers; an explanation after the name does not."""
    from deltap.checkers.string_match import StringMatchChecker

    result = StringMatchChecker(["BaseAgent"], grammar="strict").check(None, reply)  # type: ignore[arg-type]
    assert result.outcome == outcome, result.detail
    if outcome == "fail":
        assert result.detail.startswith("several"), result.detail


@pytest.mark.parametrize(
    "reply, outcome",
    [
        ("run_async? run_live?", "fail"),
        ("run_async. run_live.", "fail"),
        ("run_async. It runs the agent.", "pass"),
        ("run_async. run_async is the coroutine.", "pass"),
        ("run_async!", "pass"),
    ],
)
def test_a_later_clause_that_is_only_another_name_is_an_alternative(reply: str, outcome: str) -> None:
    from deltap.checkers.string_match import StringMatchChecker

    result = StringMatchChecker(["run_async"], grammar="strict").check(None, reply)  # type: ignore[arg-type]
    assert result.outcome == outcome, result.detail
    if outcome == "fail":
        assert result.detail.startswith("alternatives"), result.detail
