"""The ``grader`` answer grammar (issue 34): the default reading of string_match and multiple_choice.

The issue-24 attack and right-answer tables (tests/unit/checkers/test_answer_grammar.py) hold for it too (outcomes;
the rule names differ where the grader reads more), plus the rules of docs/answer-grammar.md, one example each. The
labelled reply corpus (tests/data/replies, tests/unit/checkers/test_reply_corpus.py) is the larger measure.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltap.cases import Case, CheckerSpec
from deltap.checkers import is_unreadable, make_checker
from deltap.checkers.grader import Context, qualifier_agrees, read_identifier, read_option
from deltap.checkers.reply import clean_reply, code_names, declared_answer, number_value
from tests.unit.checkers import test_answer_grammar as old

CASE = Case("c", "q")
OPTIONS = old.OPTIONS


def _sm(expected: str, **params: object):  # type: ignore[no-untyped-def]
    return make_checker(CheckerSpec("string_match", {"answers": [expected], **params}))


def _mc(correct: str, options: dict[str, str] | None = None, **params: object):  # type: ignore[no-untyped-def]
    spec = {"correct": correct, "options": options or OPTIONS, **params}
    return make_checker(CheckerSpec("multiple_choice", spec))


# -- the issue-24 tables hold -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("expected", "reply", "rule"), old.STRING_ATTACKS)
def test_issue_24_string_attacks_still_fail(expected: str, reply: str, rule: str) -> None:
    assert _sm(expected).check(CASE, reply).outcome == "fail", reply


@pytest.mark.parametrize(("expected", "reply"), old.STRING_RIGHT)
def test_issue_24_right_answers_still_pass(expected: str, reply: str) -> None:
    result = _sm(expected).check(CASE, reply)
    assert result.outcome == "pass", (reply, result.detail)


@pytest.mark.parametrize(("correct", "reply", "rule"), old.CHOICE_ATTACKS)
def test_issue_24_choice_attacks_still_fail(correct: str, reply: str, rule: str) -> None:
    assert _mc(correct).check(CASE, reply).outcome == "fail", reply


@pytest.mark.parametrize(("correct", "reply"), old.CHOICE_RIGHT)
def test_issue_24_right_options_still_pass(correct: str, reply: str) -> None:
    result = _mc(correct).check(CASE, reply)
    assert result.outcome == "pass", (reply, result.detail)


@old.SETTINGS
@given(names=old._two_names, template=st.sampled_from(old.WITH_ANOTHER))
def test_property_the_right_answer_with_another_candidate_fails(names: tuple[str, str], template: str) -> None:
    a, b = names
    reply = template.format(a=a, b=b)
    assert _sm(a).check(CASE, reply).outcome == "fail", reply


@old.SETTINGS
@given(names=old._two_names, template=st.sampled_from(old.RIGHT_ALONE + ["Sure! It's `{a}`.", "### Answer\n`{a}`"]))
def test_property_the_right_answer_alone_passes(names: tuple[str, str], template: str) -> None:
    a, _ = names
    reply = template.format(a=a)
    assert _sm(a).check(CASE, reply).outcome == "pass", reply


@old.SETTINGS
@given(names=old._two_names, template=st.sampled_from(old.NEGATED + ["`{a}` won't help here.", "Avoid `{a}`."]))
def test_property_a_negated_or_rejected_right_answer_fails(names: tuple[str, str], template: str) -> None:
    a, _ = names
    reply = template.format(a=a)
    assert _sm(a).check(CASE, reply).outcome == "fail", reply


@old.SETTINGS
@given(pair=st.tuples(old._letters, old._letters).filter(lambda t: t[0] != t[1]))
def test_property_options(pair: tuple[str, str]) -> None:
    c, w = pair
    for template in old.CHOICE_RIGHT_ALONE + ["{c}\n\nOption {w} is wrong because it does something else."]:
        reply = template.format(c=c, w=w, text=OPTIONS[c])
        assert _mc(c).check(CASE, reply).outcome == "pass", reply
    for template in old.CHOICE_WITH_ANOTHER + ["I'm not sure between {c} and {w}.", "I don't know. Maybe {c}."]:
        reply = template.format(c=c, w=w)
        assert _mc(c).check(CASE, reply).outcome == "fail", reply


@pytest.mark.parametrize("kind", ["string_match", "multiple_choice"])
@given(reply=st.text(max_size=200))
def test_property_any_reply_gets_a_verdict(kind: str, reply: str) -> None:
    checker = _sm("run_async") if kind == "string_match" else _mc("B")
    assert checker.check(CASE, reply).outcome in ("pass", "fail")


# -- the rules of docs/answer-grammar.md, one example each -------------------------------------------------------

JSON_Q = Case(
    "j", "How do I turn a Python dictionary into a text string?", ("json.dumps",), CheckerSpec("string_match")
)
SORT_Q = Case("s", "Which keyword argument of json.dumps sorts dictionary keys?", ("json.dumps",))
AGENT_Q = Case("a", "What is the mandatory parameter required by the `BaseAgent` constructor?", ("x.BaseAgent",))


# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
RULES_S10 = [
    ("lead-in", CASE, "nsmallest", "Sure! The function you're looking for is `nsmallest`.", "pass"),
    ("residue", CASE, "nsmallest", "nsmallest<|im_end|>", "pass"),
    ("role-label", CASE, "dedent", "assistant: dedent", "pass"),
    ("reasoning-block", CASE, "heapify", "<think>maybe heappush?</think>\n`heapify`", "pass"),
    ("heading", CASE, "sort_keys", "### Answer\n`sort_keys`", "pass"),
    ("bold-label", CASE, "nsmallest", "**Answer**\n\nnsmallest", "pass"),
    ("restated", SORT_Q, "sort_keys", "You asked about `json.dumps`.\n\nIt is `sort_keys`.", "pass"),
    ("call-keyword", SORT_Q, "sort_keys", "`json.dumps(data, sort_keys=True)`", "pass"),
    ("call-other-keyword", SORT_Q, "sort_keys", "`json.dumps(data, indent=2)`", "fail"),
    ("deco", CASE, "total_ordering", "```python\n@functools.total_ordering\nclass V: ...\n```", "pass"),
    ("imp", CASE, "nsmallest", "```python\nfrom heapq import nsmallest\nnsmallest(3, xs)\n```", "pass"),
    ("name-value", CASE, "128", "`maxsize=128`", "pass"),
    ("thousands", CASE, "2598960", "There are **2,598,960** hands.", "pass"),
    ("rejected", CASE, "nsmallest", "`nsmallest` won't help here; sort and slice.", "fail"),
    ("not-what-you-want", CASE, "dedent", "`dedent` is not what you want; use `indent`.", "fail"),
    ("contrast", CASE, "indent", "While `dedent` strips, the one you want is `indent`.", "pass"),
    ("deprecated", CASE, "quote", "`quote` is deprecated; use `join`.", "fail"),
    ("hedge", CASE, "nsmallest", "I'm not sure, maybe `nsmallest`?", "fail"),
    ("contradicting-qualifier", JSON_Q, "dumps", "`pickle.dumps(d)`", "fail"),
    ("agreeing-qualifier", JSON_Q, "dumps", "`json.dumps(d)`", "pass"),
    ("call-of-another-class", AGENT_Q, "name", "`LlmAgent(name='x', model='m')`", "fail"),
    ("explanation", CASE, "nsmallest", "`nsmallest`. For the largest there is `nlargest`.", "pass"),
    ("declared", CASE, "chain", "Answer: itertools.chain", "pass"),
    ("declared-wins", CASE, "chain", "Use `chain`.\n\nAnswer: `product`", "fail"),
]
# fmt: on


FILL = {"A": "wrap", "B": "fill", "C": "shorten", "D": "indent"}


# one row an example: (id, case, options, key, reply, outcome)
# fmt: off
OPTION_RULES_S10 = [
    ("letter-then-explanation", CASE, FILL, "B", "B\n\nExplanation: option A describes `wrap`.", "pass"),
    ("bold-then-other-option", CASE, FILL, "B", "**B** — Option A returns a list.", "pass"),
    ("elimination", CASE, FILL, "B", "I'd eliminate A, C and D, which leaves B.", "pass"),
    ("declared-letter-and-text", CASE, FILL, "B", "Answer: b) fill", "pass"),
    ("letter-with-another-options-text", CASE, FILL, "B", "B) wrap", "fail"),
    ("wrong-letter-names-key", CASE, FILL, "A", "D\n\nOption A would only hold for lists.", "fail"),
    ("hedge-between", CASE, FILL, "B", "I'm not sure between A and B.", "fail"),
    ("option-text", CASE, FILL, "B", "fill", "pass"),
    ("echo", CASE, FILL, "B", "A. wrap\nB. fill\nC. shorten", "fail"),
    ("alternative", CASE, FILL, "B", "Probably A, but it could be B.", "fail"),
]
# fmt: on


def test_an_echo_and_an_empty_reply_are_unreadable_a_wrong_one_is_not() -> None:
    checker = _mc("B", FILL)
    assert is_unreadable(checker.check(CASE, "A. wrap\nB. fill\nC. shorten\nD. indent").detail)
    assert is_unreadable(checker.check(CASE, "").detail)
    assert not is_unreadable(checker.check(CASE, "C").detail)
    assert is_unreadable(_sm("x_y").check(CASE, "I will think about this question.").detail)
    assert not is_unreadable(_sm("x_y").check(CASE, "`y_z`").detail)


def test_the_protocol_grammar_reads_only_a_declared_answer() -> None:
    sm = _sm("sort_keys", grammar="protocol")
    assert sm.id.endswith("grammar=protocol)")
    assert sm.check(CASE, "Answer: sort_keys").passed
    assert is_unreadable(sm.check(CASE, "`sort_keys`").detail)
    mc = _mc("B", FILL, grammar="protocol")
    assert mc.check(CASE, "fill does it.\nAnswer: B").passed
    assert is_unreadable(mc.check(CASE, "B").detail)


def test_the_text_layer() -> None:
    assert clean_reply("<|im_start|>assistant\nX<|im_end|>\n<|im_start|>user\nmore") == "X"
    assert declared_answer("Because.\n\n**Answer:** `B`") == "`B`"
    assert declared_answer('{"answer": "C"}') == "C"
    assert declared_answer("no line here") is None
    assert number_value("2,598,960") == 2598960 and number_value("1e-9") == 1e-9 and number_value("1,5,7") is None
    # a decimal comma (session 13, grader8: ``0,6`` in a French reply; until then ``1,5`` read as no number)
    assert number_value("1,5") == 1.5 and number_value("0,60") == 0.6 and number_value("1,500") == 1500
    assert number_value("10⁻⁹") == 1e-9 and number_value("1 × 10^-9") == 1e-9 and number_value("10**3") == 1000
    names = code_names("json.dumps(data, sort_keys=True)")
    assert names is not None and names.calls == [("json.dumps", ("sort_keys",))]
    deco = code_names("@total_ordering")
    assert deco is not None and deco.decorators == ["total_ordering"]


def test_qualifiers_agree_with_the_gold_documents_or_the_question() -> None:
    ctx = Context(("dumps",), gold=("json.dumps",))
    assert qualifier_agrees("json", "dumps", ctx) and not qualifier_agrees("pickle", "dumps", ctx)
    method = Context(("ratio",), gold=("difflib.SequenceMatcher.ratio",))
    assert qualifier_agrees("matcher", "ratio", method) and not qualifier_agrees("str", "ratio", method)
    no_gold = Context(("BaseAgent",))
    assert qualifier_agrees("google.adk.agents", "BaseAgent", no_gold)
    asked = Context(("split",), question="Which shlex function splits a command line?")
    assert not qualifier_agrees("str", "split", asked) and qualifier_agrees("shlex", "split", asked)


def test_readings_name_their_rule() -> None:
    ctx = Context(("nsmallest",))
    assert read_identifier("`nlargest` or `nsmallest`", ctx).rule == "several"
    assert read_identifier("`nsmallest` won't help.", ctx).rule == "rejected"
    assert read_identifier("I don't know.", ctx).rule == "hedge"
    assert read_option("A, B", FILL).rule == "several"
    assert read_option("", FILL).unreadable


# -- session 11: alternatives, retractions, tables, conclusions (written before the rules) ------------------------

HEAPQ_Q = Case("h", "Which heapq function pops the smallest item and then pushes a new one?", ("heapq.heapreplace",))
WIDTH_Q = Case("w", "What is the default value of the width parameter of textwrap.fill?", ("textwrap.fill",))


# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
RULES_S11 = [
    # an equal alternative is a hedge, unless every name offered is accepted
    ("alt-as-well", CASE, "heapify", "Use `heapify`. `heappush` in a loop works just as well.", "fail"),
    ("alt-either", CASE, "shorten", "`shorten` or `fill`; either does the job.", "fail"),
    ("alt-also-works", CASE, "quote", "`quote(s)`; `join([s])` also works.", "fail"),
    ("alt-equally", CASE, "dumps", "`json.dumps(d)` — `repr(d)` would do equally well.", "fail"),
    ("alt-worse-is-not-equal", CASE, "nsmallest", "Use `nsmallest`. `sorted(xs)[:10]` also works, but it sorts everything.", "pass"),
    ("alt-same-function", CASE, "shorten", "`shorten(t, 40)` or `shorten(t, 40, placeholder='…')`, either works.", "pass"),
    ("alt-same-name", CASE, "nsmallest", "`nsmallest` (or `heapq.nsmallest`) — either works.", "pass"),
    ("alt-about-inputs", CASE, "dedent", "`dedent` — it handles tabs or spaces either way.", "pass"),
    # a retraction takes the answer back; a later committed answer is the one read
    ("retract-to-other", CASE, "dedent", "`dedent`... hmm, actually no — use `str.lstrip` on each line.", "fail"),
    ("retract-to-right", HEAPQ_Q, "heapreplace", "`heappushpop`. Wait, no — that pushes first. It's `heapreplace`.", "pass"),
    ("retract-thats-wrong", CASE, "isqrt", "`math.isqrt(n)` — wait, that's wrong, use `int(math.sqrt(n))`.", "fail"),
    ("retract-to-nothing", CASE, "tee", "`tee(it, n)`. Hmm, actually no, I'm not sure that's right.", "fail"),
    ("retract-i-mean", CASE, "model", "The `model` parameter — sorry, I mean `llm`.", "fail"),
    ("actually-adds", CASE, "cmp_to_key", "`cmp_to_key(f)`. Actually, `cmp_to_key` also works with `min`.", "pass"),
    ("actually-key-argument", CASE, "nsmallest", "`nsmallest(3, xs)`. Actually, it also takes a `key` argument.", "pass"),
    ("wait-is-a-note", CASE, "merge", "`heapq.merge(*fs)`. Wait — each input must already be sorted.", "pass"),
    ("no-about-another", CASE, "fsum", "`math.fsum(v)`. No, the builtin `sum` is not accurate enough.", "pass"),
    # a table is read as a table
    ("table-marked-row", HEAPQ_Q, "heapreplace", "| Function | Pops first? |\n|---|---|\n| `heappushpop` | ✗ |\n| `heapreplace` | ✓ |", "pass"),
    ("table-marked-other-row", HEAPQ_Q, "heapreplace", "| Function | Right? |\n|---|---|\n| `heapreplace` | ✗ |\n| `heappushpop` | ✓ |", "fail"),
    ("table-answer-column", CASE, "quote", "| Task | Answer |\n|---|---|\n| escape one string | `shlex.quote` |", "pass"),
    ("table-key-value", CASE, "get_close_matches", "| Property | Value |\n|---|---|\n| Function | `get_close_matches` |\n| Returns | a list |", "pass"),
    ("table-parameter-row", WIDTH_Q, "70", "| Parameter | Default |\n|---|---|\n| `width` | 70 |\n| `tabsize` | 8 |", "pass"),
    ("table-parameter-row-wrong", WIDTH_Q, "70", "| Parameter | Default |\n|---|---|\n| `width` | 80 |\n| `tabsize` | 70 |", "fail"),
    ("table-unmarked-list", CASE, "shorten", "| Function | Does |\n|---|---|\n| `wrap` | lines |\n| `fill` | a string |\n| `shorten` | cuts |", "fail"),
    ("table-then-conclusion", CASE, "indent", "| Function | Does |\n|---|---|\n| `dedent` | strips |\n| `indent` | prefixes |\n\nSo: `indent`.", "pass"),
    ("table-hedged-cell", CASE, "shorten", "| Question | Answer |\n|---|---|\n| truncate | `shorten` or `fill` |", "fail"),
    ("table-every-row-marked", CASE, "fsum", "| Function | Accurate? |\n|---|---|\n| `fsum` | ✓ |\n| `sum` | ✓ |", "fail"),
    # reasoning read by its conclusion
    ("conclusion-so-the-function-is", CASE, "get_close_matches", "You could write Levenshtein yourself, or use a SequenceMatcher-based ratio. So the function is `difflib.get_close_matches(typo, cmds)`.", "pass"),
    ("conclusion-therefore", CASE, "capwords", "`str.title()` breaks on apostrophes. Therefore `string.capwords`.", "pass"),
    ("conclusion-that-makes-it", CASE, "SequentialAgent", "A `LoopAgent` repeats. That makes it `SequentialAgent`.", "pass"),
    ("conclusion-leaves", CASE, "shorten", "`wrap` and `fill` don't truncate. That leaves `shorten`.", "pass"),
    ("conclusion-wrong", CASE, "isqrt", "`isqrt` returns an int, `sqrt` a float. So the function is `math.sqrt`.", "fail"),
    ("so-is-a-consequence", HEAPQ_Q, "heapreplace", "Use `heapreplace`. So if the heap is empty, it raises `IndexError`.", "pass"),
    ("that-makes-usage", CASE, "Runner", "`Runner`. That makes `runner.run_async(...)` the call you use.", "pass"),
    ("so-a-consequence-naming-others", CASE, "BaseAgent", "`BaseAgent`. So every `LlmAgent` is a `BaseAgent` too.", "pass"),
]
# fmt: on


# one row an example: (id, case, options, key, reply, outcome)
# fmt: off
OPTION_RULES_S11 = [
    ("alt", CASE, FILL, "B", "B (fill). A would also work if you join the lines — either is fine.", "fail"),
    ("alt-worse", CASE, FILL, "B", "B — `fill`. `wrap` plus a join works too, but B is the dedicated one.", "pass"),
    ("retract-to-right", CASE, FILL, "B", "A. Hmm, actually no — `wrap` returns a list. B.", "pass"),
    ("retract-to-wrong", CASE, FILL, "B", "B. Wait, no — I mixed them up, it's A.", "fail"),
    ("actually-note", CASE, FILL, "B", "B. Actually, it's worth noting that A returns a list.", "pass"),
    ("e1", CASE, FILL, "B", "A, wrap... hmm, actually wrap returns a list, so it is the other one. Final: B.", "pass"),
    ("ellipsis-actually", CASE, FILL, "B", "B, fill... hmm, actually fill joins the lines. Final: A.", "fail"),
    ("ellipsis-keeps", CASE, FILL, "B", "B... hmm, actually B is right, fill returns one string.", "pass"),
    ("ellipsis-no-option", CASE, FILL, "B", "A... no, that returns a list. So it has to be B.", "pass"),
    ("has-to-be", CASE, FILL, "B", "A returns a list, C truncates and D indents; so it has to be B.", "pass"),
    ("must-be-wrong", CASE, FILL, "B", "B is the obvious guess, but it joins lines. It must be A.", "fail"),
    ("final", CASE, FILL, "B", "A and C and D describe other helpers. Final: B", "pass"),
    ("final-wrong", CASE, FILL, "B", "A, C and D are not it. Final answer: C", "fail"),
    ("table", CASE, FILL, "B", "| Option | Verdict |\n|---|---|\n| A wrap | ✗ |\n| B fill | ✓ |", "pass"),
    ("table-wrong", CASE, FILL, "B", "| Option | Verdict |\n|---|---|\n| A wrap | ✓ |\n| B fill | ✗ |", "fail"),
]
# fmt: on


# -- session 11: refinements from attacks2.yaml (its replies were written before these refinements) ---------------

ISCLOSE_Q = Case("i", "How do I test whether two floats are equal up to a rounding error?", ("math.isclose",))


# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
RULES_S11_ATTACKS2 = [
    ("alt-scoped-to-another-situation", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`. For numpy arrays, `numpy.isclose` does the same.", "pass"),
    ("alt-unscoped", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`. `numpy.isclose` does the same.", "fail"),
    ("alt-the-answers-own-method", CASE, "chain", "`itertools.chain(a, b)`; `itertools.chain.from_iterable([a, b])` works too.", "pass"),
    ("correction-of-a-detail", CASE, "heapify", "`heapq.heapify(x)`. Correction: it returns None, so don't assign it.", "pass"),
    ("correction-of-the-answer", CASE, "comb", "`math.perm(n, k)`. Correction: `math.comb(n, k)`.", "pass"),
    ("table-marked-column", HEAPQ_Q, "heapreplace", "| | `heappushpop` | `heapreplace` |\n|---|---|---|\n| Order | push, pop | pop, push |\n| Right for you | no | yes |", "pass"),
    ("it-depends", CASE, "nsmallest", "In short: it depends — `nsmallest` for small n, `sorted` for large n.", "fail"),
]
# fmt: on


def test_the_fallback_reads_only_an_answer_of_a_trusted_shape() -> None:
    from deltap.checkers.fallback import one_candidate, shape

    assert [shape(a) for a in ("2598960", "SequentialAgent", "after_agent_callback", "json.dumps", "quote")] == [
        "number",
        "class",
        "identifier",
        "identifier",
        "word",
    ]
    same = Context(("quote",)).same
    assert one_candidate("Put it in double quotes: quote it.", ("quote",), "How do I quote a name?", same) is None
    same = Context(("BaseLlm",)).same
    assert one_candidate("`BaseLLM` is the one.", ("BaseLlm",), "What is the base?", same) is None  # case differs
    assert one_candidate("`BaseLlm` is the one.", ("BaseLlm",), "What is the base?", same) == "BaseLlm"


def test_the_table_layer() -> None:
    from deltap.checkers.tables import cell_mark, tables, without_tables

    text = "Here:\n\n| Function | Right? |\n|---|---|\n| `a_b` | ✗ no |\n| **`c_d`** | ✓ |\n\nDone."
    (t,) = tables(text)
    assert t.header == ("Function", "Right?")
    assert [r.cells[0] for r in t.rows] == ["`a_b`", "**`c_d`**"]
    assert [r.mark for r in t.rows] == ["negative", "positive"] and t.rows[1].bold
    assert text[t.rows[1].starts[0] :].startswith("**`c_d`**")
    blank = without_tables(text, [t])
    assert len(blank) == len(text) and "a_b" not in blank and blank.endswith("Done.")
    assert cell_mark("yes") == "positive" and cell_mark("no — slow") == "negative" and cell_mark("no sorting") == ""
    assert tables("a | b\nnot a table") == [] and tables("| a | b |\n| c | d |") == []
    assert tables("| `x|y` | z |\n|---|---|\n| 1 | 2 |")[0].header == ("`x|y`", "z")


def test_a_long_reply_is_read_in_linear_time() -> None:
    """A 6,000-character reply with 120 retraction cues and a 300-mention reply took 5 s each before the sentences were
    cached and each stretch between retractions read once; now they take well under a tenth of that (bound generous
    for a shared machine)."""
    import time

    ctx = Context(("nsmallest",), question="Which heapq function finds the n smallest?", gold=("heapq.nsmallest",))
    para = "Use `heapq.heapify`, or `sorted(xs)[:n]`; hmm, actually no. Wait, no, that is wrong. So `heapq.nsmallest`. "
    many = "Use `nsmallest`. " + " ".join(f"Also `f_{i}` is nice." for i in range(300))
    # session 12 (grader5): 300 names weighed with ``but`` and 300 code lines after the answer (0.17 s and 0.08 s)
    weighed = " ".join(f"You could use `f_{i}`, but honestly just use `g_{i}` instead." for i in range(300))
    code = "Use `nsmallest(3, xs)`.\n\n" + "\n".join(f"    out.write_{i}(line)" for i in range(300))
    start = time.perf_counter()
    assert read_identifier(para * 40, ctx).rule == "ok"
    assert read_identifier(many, ctx).rule == "ok"
    assert read_identifier(weighed, ctx).rule == "wrong"
    assert read_identifier(code, ctx).rule == "ok"
    assert time.perf_counter() - start < 2.5


def test_a_very_long_reply_is_read_to_its_end() -> None:
    """Session 13 (grader7): the grader's work grows linearly with the reply (each mention's sentence, the mentions
    before or after it, its line are found by binary search over indexes built once, not by a pass over the whole
    reply); what matters here is that a reply of a thousand sentences and more is still read as a whole: what its last
    sentence says decides. (The figures, before and after: docs/notes/issue-34.md, session 13.)"""
    ctx = Context(("nsmallest",), question="Which heapq function finds the n smallest?", gold=("heapq.nsmallest",))
    filler = " ".join(f"Sentence {i} says nothing about `f_{i}`, which is only an example." for i in range(1000))
    weighed = " ".join(f"You could use `f_{i}`, but honestly just use `g_{i}` instead." for i in range(1000))
    one_line = "Use `nsmallest`. " + " ".join(
        f"This sentence number {i} says nothing much about heaps." for i in range(1000)
    )
    assert read_identifier("Use `nsmallest`. " + filler, ctx).rule == "ok"
    assert read_identifier(filler + " So the function is `heapq.nsmallest`.", ctx).answer == "heapq.nsmallest"
    assert read_identifier(one_line, ctx).rule == "ok"
    assert read_identifier(one_line + " `heapq.nlargest` works just as well.", ctx).rule == "alternatives"
    assert read_identifier(weighed, ctx).rule == "wrong"
    assert read_identifier(weighed + " Go with `nsmallest`, though.", ctx).rule == "wrong"
    code = "Use `nsmallest(3, xs)`.\n\n" + "\n".join(f"    out.write_{i}(line)" for i in range(1000))
    assert read_identifier(code, ctx).rule == "ok"
    discussion = "B. " + " ".join(f"Option A is not it in case {i}, and C is wrong too." for i in range(1000))
    assert read_option(discussion, FILL).answer == "B"
    assert read_option(discussion + " A would also work — either is fine.", FILL).rule == "alternatives"


# -- session 11 (grader3): the kinds of fresh4's misses, one rule each ----------------------------------------------

ROWS = (
    "| Need | Function |\n|---|---|\n| a list of lines | `wrap` |\n| one string | `fill` |\n| cut short | `shorten` |"
)
FNMATCH_Q = Case("f", "Which fnmatch function matches including case?", ("fnmatch.fnmatchcase",))


# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
RULES_FRESH4 = [
    ("ellipsis-no", CASE, "bisect_left", "`bisect.bisect_right(a, x)`... no, that lands after equal values. You want `bisect.bisect_left(a, x)`.", "pass"),
    ("ellipsis-no-2", CASE, "bisect_left", "`bisect_left(a, x)`... no, you want `bisect_right(a, x)`.", "fail"),
    ("ellipsis-retracted", CASE, "tee", "`tee(it, n)`... hmm, actually no, I'm not sure.", "fail"),
    ("ellipsis-detail", CASE, "tee", "`tee(it, n)`... hmm, actually it also takes an iterator.", "pass"),
    ("wrap-negation-carried-over", FNMATCH_Q, "fnmatchcase", "Just use `fnmatch.fnmatch(name, pattern)`; it is case-sensitive on all platforms, so you don't need the\n`fnmatchcase` variant.", "fail"),
    ("wrap-contrast-carried-over", FNMATCH_Q, "fnmatchcase", "Call `fnmatch.fnmatchcase(name, pattern)`: it never normalises case on any platform, unlike plain\n`fnmatch.fnmatch`, which follows the operating system.", "pass"),
    ("wrap-no-lone-name-line", CASE, "Session", "**Session** — its `events` list holds every Event of the conversation, and `state` holds the key/value\n`memory`.", "pass"),
    ("short-lines-stay-a-list", CASE, "fill", "`wrap`\n`fill`", "fail"),
    ("the-one-that-is", CASE, "ParallelAgent", "`SequentialAgent` runs them one by one, so it does not fit. The one that runs them at once is `ParallelAgent`.", "pass"),
    ("the-one-that-is-wrong", CASE, "ParallelAgent", "`ParallelAgent` runs them at once. The one that runs them in order is `SequentialAgent`.", "fail"),
    ("number-word", CASE, "70", "Seventy characters.", "pass"),
    ("number-word-small", CASE, "3", "It keeps three matches by default.", "pass"),
    ("number-word-wrong", CASE, "70", "Eighty characters.", "fail"),
    ("digits-win", CASE, "70", "Twenty-five, I think, or 80.", "fail"),
    ("one-is-a-pronoun", CASE, "1", "The one you want is the first.", "fail"),
    ("tick", CASE, "fill", "- `wrap` — a list of lines\n- `fill` — one string ✅\n- `shorten`", "pass"),
    ("tick-2", CASE, "fill", "- `wrap` — a list of lines ✓\n- `fill` — one string\n- `shorten`", "fail"),
    ("every-item-ticked", CASE, "fill", "- `wrap` ✅\n- `fill` ✅", "fail"),
    ("tick-first", CASE, "fill", "- `fill` ✔ one string\n- `wrap` a list", "pass"),
    ("row-named", CASE, "fill", ROWS + "\n\nFor one string, it's the second row.", "pass"),
    ("row-named-wrong", CASE, "fill", ROWS + "\n\nYou want the last row.", "fail"),
    ("row-named-last", CASE, "shorten", ROWS + "\n\nUse the last row.", "pass"),
    ("no-row-named", CASE, "fill", ROWS + "\n\nAll three work on text.", "fail"),
    ("double-negative", CASE, "tee", "There's no reason not to use `itertools.tee(it, n)` here.", "pass"),
    ("cant-go-wrong", CASE, "tee", "You can't go wrong with `tee`; it is built for this.", "pass"),
    ("single-negative", CASE, "tee", "Never use `tee` here; a list will do.", "fail"),
    ("plain-negative", CASE, "tee", "Don't use `tee(it, n)` here.", "fail"),
    ("tempted-then-turned-down", CASE, "heapify", "You might reach for `heapq.heapify`, but it is slow. Push each item with `heapq.heappush`.", "fail"),
    ("tempted-by-another", CASE, "heapify", "It's tempting to use `sorted(xs)`, but that sorts everything; call `heapq.heapify(xs)`.", "pass"),
    ("no-but", CASE, "heapify", "You might reach for `heapq.heapify(xs)`: it is O(n).", "pass"),
    ("legacy", CASE, "total_ordering", "`@total_ordering` is effectively legacy now; the modern answer is `@dataclass(order=True)`.", "fail"),
    ("another-is-outdated", CASE, "total_ordering", "`cmp` is long outdated; decorate the class with `@functools.total_ordering`.", "pass"),
    ("a-list-after-a-long-line-stays-a-list", CASE, "fill", "The function that returns one string with the paragraph wrapped to width is this one.\n`fill`\n`wrap`", "fail"),
]
# fmt: on


# -- session 12 (grader4): the kinds of fresh5's misses, one rule each (written before the rules) -------------------

EVAL_Q = Case(
    "e",
    "Which method is the primary entry point for running a programmatic evaluation of an agent?",
    ("google.adk.evaluation.agent_evaluator.AgentEvaluator",),
)
CALLBACK_Q = Case(
    "cb",
    "Which parameter on `BaseAgent` defines a callback that executes after the agent's `run_async` method is called?",
    ("google.adk.agents.BaseAgent",),
)
MODEL_Q = Case("m", "Which parameter specifies the model for an `LlmAgent`?", ("google.adk.agents.LlmAgent",))
CONFIG_Q = Case(
    "g",
    "What parameter can I pass to configure LLM generation parameters like temperature and safety settings?",
    ("google.adk.agents.LlmAgent",),
)
SUM_Q = Case("s", "Which math function returns an accurate floating point sum?", ("math.fsum",))
SNIPPET = "```python\nroot = LlmAgent(\n    name='root',\n    after_agent_callback=log_state,\n)\n```\n"

# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
FRESH5_IDENTIFIER_KINDS = [
    # agent wrappers: a final-answer tool call declares the answer
    ("wrapper-call", CASE, "chain", 'final_answer("itertools.chain")', "pass"),
    ("wrapper-call-wrong", CASE, "chain", 'final_answer("itertools.product")', "fail"),
    ("wrapper-call-in-code", CASE, "merge", '```py\nout = list(heapq.merge(a, b))\nfinal_answer("heapq.merge")\n```', "pass"),
    ("wrapper-xml", CASE, "split", "<final_answer>shlex.split</final_answer>", "pass"),
    ("wrapper-xml-wrong", CASE, "split", "<final_answer>shlex.join</final_answer>", "fail"),
    ("wrapper-json", CASE, "merge", '{"tool": "final_answer", "arguments": {"answer": "heapq.merge", "confidence": 0.9}}', "pass"),
    ("wrapper-json-string-arguments", CASE, "merge", '{"name": "final_answer", "arguments": "{\\"answer\\": \\"heapq.merge\\"}"}', "pass"),
    ("wrapper-json-react", CASE, "merge", '{"action": "Final Answer", "action_input": "heapq.merge"}', "pass"),
    ("wrapper-json-wrong", CASE, "merge", '{"tool": "final_answer", "arguments": {"answer": "heapq.heappush"}}', "fail"),
    ("wrapper-json-another-tool", CASE, "merge", '{"tool": "search_docs", "arguments": {"query": "heapq merge"}}', "fail"),
    ("wrapper-react-finish", CASE, "merge", "Thought: the inputs are sorted.\nFinish[heapq.merge]", "pass"),
    # the answer's owner, named before the answer as its method, is context, not another answer
    ("owner-then-its-method", EVAL_Q, "evaluate", "Use the `AgentEvaluator` class:\n\n```python\nawait AgentEvaluator.evaluate(agent_module='a', eval_dataset_file_path_or_dir='t.json')\n```", "pass"),
    ("owner-alone", EVAL_Q, "evaluate", "Use the `AgentEvaluator` class.", "fail"),
    ("owner-then-another-method", EVAL_Q, "evaluate", "Use the `AgentEvaluator` class: `AgentEvaluator.evaluate_eval_set(...)`.", "fail"),
    # a parameter question: a snippet's call is context, its keyword arguments are what it shows
    ("param-snippet-then-prose", CALLBACK_Q, "after_agent_callback", SNIPPET + "`after_agent_callback` runs once `run_async` has finished.", "pass"),
    ("param-snippet-then-another", CALLBACK_Q, "after_agent_callback", SNIPPET + "But the one you want is `before_agent_callback`.", "fail"),
    ("param-snippet-without-it", CALLBACK_Q, "after_agent_callback", "```python\nroot = LlmAgent(name='root', before_agent_callback=log_state)\n```", "fail"),
    ("param-one-keyword", CALLBACK_Q, "after_agent_callback", "`LlmAgent(after_agent_callback=log_state)`", "pass"),
    # what the answer takes or returns is a description of it, not an alternative
    ("takes-a-or-b", MODEL_Q, "model", "It's the `model` parameter; it takes a model name string or a `BaseLlm` instance.", "pass"),
    ("or-maybe-another", MODEL_Q, "model", "It's the `model` parameter, or maybe `llm`.", "fail"),
    # a negation covers the names joined to the negated one
    ("negated-list", CONFIG_Q, "generate_content_config", "Pass `generate_content_config`. Don't put `tools` or `system_instruction` in there.", "pass"),
    ("negated-list-holds-the-answer", CONFIG_Q, "generate_content_config", "Don't put `tools` or `generate_content_config` in there; use `model`.", "fail"),
    ("list-not-negated", CONFIG_Q, "generate_content_config", "Pass `generate_content_config` or `system_instruction`.", "fail"),
    # a number stated for another subject, when the reply gives one for the asked subject
    ("number-of-another-subject", WIDTH_Q, "70", "`textwrap.wrap` defaults to 70, but `textwrap.fill` uses 80.", "fail"),
    ("number-of-the-asked-subject", WIDTH_Q, "70", "`TextWrapper` in my project is set to 100, but `textwrap.fill` defaults to 70.", "pass"),
    ("number-with-no-asked-subject", CASE, "2598960", "`math.comb(52, 5)` is 2598960.", "pass"),
    # rejected by what it does not give
    ("wont-give-anything", SUM_Q, "fsum", "`math.fsum` won't give you anything extra here. Stick with `sum()`.", "fail"),
    ("isnt-worth-it", SUM_Q, "fsum", "`math.fsum` isn't worth it for ten floats; use `sum`.", "fail"),
    ("wont-give-errors", SUM_Q, "fsum", "`math.fsum` won't give you rounding errors; use it.", "pass"),
    ("another-wont-buy-anything", SUM_Q, "fsum", "`sum` won't buy you anything here; use `math.fsum`.", "pass"),
    # an identifier in another case after its first letter is another identifier (all lower case carries no case)
    ("case-mixed", CASE, "BaseLlm", "`BaseLLM` — every model integration subclasses it.", "fail"),
    ("case-mid-word", CASE, "BaseTool", "all tools inherit from Basetool; subclass it.", "fail"),
    ("case-all-lower", CASE, "BaseTool", "all tools inherit from basetool; subclass it.", "pass"),
    ("case-first-letter", CASE, "dedent", "Dedent is the one you want.", "pass"),
    # an equal alternative: "also defensible"
    ("alt-also-defensible", CASE, "fill", "Use `fill`; `wrap` is also defensible.", "fail"),
]
# fmt: on


HEAP = {
    "A": "Pop the smallest item, then push the new item",
    "B": "Push item on the heap, then pop and return the smallest item",
    "C": "Push the item and return nothing",
    "D": "Return the largest item without changing the heap",
}
CONFIG = {"A": "register", "B": "generate_content_config", "C": "model", "D": "static_instruction"}
CALLBACK = {"A": "static_instruction", "B": "model", "C": "after_agent_callback", "D": "run_async"}
PLUGIN = {"A": "PluginManager", "B": "ToolContext", "C": "BasePlugin", "D": "BaseSessionService"}

# one row an example: (id, case, options, key, reply, outcome)
# fmt: off
FRESH5_OPTION_KINDS = [
    ("letter-with-anothers-long-text", CASE, HEAP, "B", "B: Pop the smallest item, then push the new item", "fail"),
    ("letter-with-its-own-long-text", CASE, HEAP, "B", "B: Push item on the heap, then pop and return the smallest item", "pass"),
    ("letter-and-text-then-another", CASE, CONFIG, "B", "The answer is B: generate_content_config and C: model because the model has the temperature", "fail"),
    ("letter-and-text-then-explanation", CASE, CONFIG, "B", "The answer is B: generate_content_config, because the model reads it.", "pass"),
    ("text-restated-from-the-question", CALLBACK_Q, CALLBACK, "C", "La respuesta correcta es la C (`after_agent_callback`): se ejecuta cuando termina `run_async`.", "pass"),
    ("restated-text-does-not-hide-a-choice", CALLBACK_Q, CALLBACK, "C", "It runs after `run_async`: `model`.", "fail"),
    ("also-defensible", CASE, PLUGIN, "C", "I'd go with C (BasePlugin), though A (PluginManager) is also defensible since it hooks into the runner.", "fail"),
    ("another-explained", CASE, PLUGIN, "C", "I'd go with C (BasePlugin); A (PluginManager) only runs the plugins.", "pass"),
]
# fmt: on


# -- session 12 (grader5): the kinds of fresh6's misses, one general rule each (written before the rules) ----------

MERGE_Q = Case("mg", "Which heapq function merges sorted inputs into one sorted output?", ("heapq.merge",))
URL_Q = Case("u", "Which urllib.parse function splits a URL into five parts?", ("urllib.parse.urlsplit",))
RUNNER_Q = Case("r", "Which method of `Runner` runs the agent asynchronously?", ("google.adk.runners.Runner",))
REGISTRY_Q = Case("rg", "Which method adds a new tool class to the `ToolRegistry`?", ("x.ToolRegistry",))
SUBCLASS_Q = Case("sc", "Which class do custom tools subclass?", ("google.adk.tools.BaseTool",))
BEFORE_Q = Case("bm", "Which parameter sets a callback that runs before the model is called?", ("x.LlmAgent",))
LOWEST_Q = Case("lo", "I need the ten lowest of a million numbers. Which function should I call?", ("heapq.nsmallest",))
CAPS_Q = Case("cw", "How do I capitalise every word of a sentence?", ("string.capwords",))
SHLEX_Q = Case("sh", "How do I split a command line into arguments the way a shell does?", ("shlex.split",))
QUOTE_Q = Case("q", "How do I make a file name safe to paste into a shell command?", ("shlex.quote",))
RATIO_Q = Case("ra", "Which method gives the similarity of two sequences as a float?", ("difflib.SequenceMatcher",))
CONTEXT_Q = Case("cx", "What is the `ToolContext` object?", ("google.adk.tools.ToolContext",))
TEE_Q = Case("t", "Which itertools function returns n independent iterators from one iterable?", ("itertools.tee",))
PUSHPOP_Q = Case("pp", "Which heapq function pushes an item and then pops the smallest?", ("heapq.heappushpop",))

# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
FRESH6_IDENTIFIER_KINDS = [
    # a later code line that only uses the answer's result is usage, not another answer
    ("code-uses-the-result", MERGE_Q, "merge", "`heapq.merge(a, b)` does it lazily.\n\n```python\nfor row in heapq.merge(a, b):\n    sink.append(row)\n```", "pass"),
    ("indented-code-uses-the-result", MERGE_Q, "merge", "Use `heapq.merge(a, b)`; it is lazy.\n\n    import heapq\n    for row in heapq.merge(a, b):\n        sink.append(row)\n\nEdit: `key=` came in 3.5.", "pass"),
    ("repl-prints-the-result", URL_Q, "urlsplit", ">>> parse.urlsplit(url)\nSplitResult(scheme='https', netloc='example.org', path='/')", "pass"),
    ("code-offers-another-after-or", MERGE_Q, "merge", "```python\nout = list(heapq.merge(a, b))\n```\nor\n```python\nout = sorted(a + b)\n```", "fail"),
    ("code-only-another", MERGE_Q, "merge", "```python\nfor row in sorted(itertools.chain(a, b)):\n    sink.append(row)\n```", "fail"),
    # the answer sentence's subject is the answer: what it takes / accepts / expects / returns describes it
    ("subject-accepts", BEFORE_Q, "before_model_callback", "The `before_model_callback` parameter accepts a function that receives a `CallbackContext` and an `LlmRequest`.", "pass"),
    ("subject-argument-takes", MODEL_Q, "model", "```python\nLlmAgent(name='a', model='gemini-2.0-flash')\n```\nThe `model` argument expects a model name or a `LiteLlm` wrapper.", "pass"),
    ("subject-then-alternative", MODEL_Q, "model", "The `model` argument, or `llm` in older versions, takes a model name.", "fail"),
    ("subject-is-another", MODEL_Q, "model", "The `llm` argument takes a model name or a `BaseLlm` instance.", "fail"),
    # a preamble before an explicit answer heading is context: the answer is read below the heading
    ("heading-after-preamble", SHLEX_Q, "split", "`str.split()` and `re.split()` both ignore quoting.\n\n## Answer\n\n`shlex.split(cmd)`", "pass"),
    ("bold-heading-after-preamble", LOWEST_Q, "nsmallest", "People reach for `sorted()` or `list.sort()`.\n\n**Answer**\n\n`heapq.nsmallest(10, xs)`", "pass"),
    ("heading-wrong-after-preamble", SHLEX_Q, "split", "`shlex.split` is one idea.\n\n### Answer\n`str.split()`", "fail"),
    ("solution-heading-over-code", SHLEX_Q, "split", "Use `shlex.split`.\n\nSolution:\n```python\nsubprocess.run(args)\n```", "pass"),
    ("heading-with-two", SHLEX_Q, "split", "Two ways.\n\n### Answer\n`shlex.split` or `str.split`", "fail"),
    # a setup step (subclass / inherit from / import / create X, then ...) is context when the question asks for a method
    ("setup-step-then-method", REGISTRY_Q, "register", "Subclass `BaseTool`, give it a `name`, then call `ToolRegistry.register(MyTool)`.", "pass"),
    ("setup-import-then-method", RUNNER_Q, "run_async", "Import `InMemoryRunner`, build it with your agent, then iterate over `runner.run_async(...)`.", "pass"),
    ("setup-step-alone", REGISTRY_Q, "register", "Subclass `BaseTool` and give it a `name`.", "fail"),
    ("setup-step-then-wrong-method", REGISTRY_Q, "register", "Subclass `BaseTool`, then call `ToolRegistry.resolve(MyTool)`.", "fail"),
    ("subclass-asked-for", SUBCLASS_Q, "BaseTool", "Subclass `BaseTool` and implement `run_async`.", "pass"),
    # a name set aside by an appraisal-but clause that goes on to recommend another
    ("tempting-but-use-another", CAPS_Q, "capwords", "`str.title()` seems like the obvious choice but it mangles apostrophes. Go with `string.capwords(s)`.", "pass"),
    ("could-use-but-go-with-another", LOWEST_Q, "nsmallest", "You could call `heapq.nsmallest(10, xs)`, but honestly I wouldn't bother: `sorted(xs)[:10]` is simpler. Go with sorted.", "fail"),
    ("would-work-but-use-another", SUM_Q, "fsum", "`math.fsum` would work, but for ten floats just use `sum`.", "fail"),
    ("could-use-but-another-for-another-case", MERGE_Q, "merge", "You could use `heapq.merge(a, b)`, but use `sorted(a + b)` if the lists are small.", "pass"),
    ("works-but-a-keyword", MERGE_Q, "merge", "`heapq.merge` works on sorted inputs, but use `key=` for a custom order.", "pass"),
    ("could-use-but-a-note", LOWEST_Q, "nsmallest", "You could use `heapq.nsmallest(10, xs)`, but note that it returns a list, not a generator.", "pass"),
    ("looks-like-overkill-but-right", LOWEST_Q, "nsmallest", "`heapq.nsmallest(10, xs)` looks like overkill, but it is the right call: it never sorts the whole list.", "pass"),
    # after a retraction, the retracted name explained again is the reason, not a new answer; a denial concludes nothing
    ("retracted-then-explained", TEE_Q, "tee", "Maybe itertools.tee... hmm, no: tee shares one buffer, so its copies are not independent. There is no such function; use `list()`.", "fail"),
    ("retracted-then-denial", PUSHPOP_Q, "heappushpop", "`heappushpop`... wait, no, heappushpop does the opposite order. So the answer is: heapq has no function for that.", "fail"),
    ("retracted-then-affirmed-again", PUSHPOP_Q, "heappushpop", "`heappushpop`... hmm, no, wait. Yes: `heappushpop` is the right one here.", "pass"),
    ("retracted-another-then-answer", PUSHPOP_Q, "heappushpop", "`heapreplace`... no, wait, heapreplace pops first. It's `heappushpop`.", "pass"),
    # a quoted question is the question: its names are restated; a refusal below it answers nothing
    ("quoted-question-then-refusal", MERGE_Q, "merge", "> Which heapq function merges sorted inputs into one sorted output? (heapq.merge?)\n\nSorry, I can't check that without the documentation.", "fail"),
    ("quoted-question-then-answer", MERGE_Q, "merge", "> Which heapq function merges sorted inputs into one sorted output?\n\n`heapq.merge` does that.", "pass"),
    ("quoted-docs-hold-the-answer", MERGE_Q, "merge", "The docs say:\n\n> heapq.merge(*iterables): merge several sorted inputs into a single sorted output.\n\nSo use that.", "pass"),
    # a name inside a refusal ("I'm not familiar with X", "I've never heard of X") is not an answer
    ("refusal-names-it", CONTEXT_Q, "ToolContext", "I've never heard of a `ToolContext` object in that library. Which framework is it?", "fail"),
    ("refusal-names-merge", MERGE_Q, "merge", "I'm not familiar with `heapq.merge`, sorry.", "fail"),
    ("refusal-then-answer", CONTEXT_Q, "ToolContext", "I'm not familiar with every field, but `ToolContext` is the object a tool function receives to reach state and artifacts.", "pass"),
    # an accepted word used as English (plural noun, "in quotes") is no answer
    ("english-quotes", QUOTE_Q, "quote", "Wrap it in single quotes: `rm 'my file.txt'`. Nothing else is needed.", "fail"),
    ("english-double-quotes", QUOTE_Q, "quote", "Just put double quotes around the name.", "fail"),
    ("plain-word-with-a-keyword", MERGE_Q, "merge", "heapq has merge with a key argument since 3.5.", "pass"),
    ("english-a-double-quote", QUOTE_Q, "quote", "Escape each inner double quote with a backslash.", "fail"),
    ("quote-the-function", QUOTE_Q, "quote", "Pass it through `shlex.quote(name)` first.", "pass"),
    # a method written on an instance or with a bare dot belongs to that object: not a module's function
    ("bare-dot-method", SHLEX_Q, "split", "Call `.split()` on the string: it splits on whitespace.", "fail"),
    ("instance-method-of-str", SHLEX_Q, "split", "`args = cmdline.split()` splits it like the shell.", "fail"),
    ("bare-dot-method-of-a-class", RATIO_Q, "ratio", "Build a `SequenceMatcher(None, a, b)` and call `.ratio()` on it.", "pass"),
]
# fmt: on

RUNNER_OPTIONS = {"A": "BaseToolset", "B": "Runner", "C": "GlobalInstructionPlugin", "D": "ParallelAgent"}

# one row an example: (id, case, options, key, reply, outcome)
# fmt: off
FRESH6_OPTION_KINDS = [
    # a letter whose clause is about another option (its one-word text as the subject) contradicts itself
    ("letter-then-anothers-subject", CASE, RUNNER_OPTIONS, "C", "C: the Runner does that for every call.", "fail"),
    ("letter-then-anothers-backticked", CASE, PLUGIN, "C", "C - `PluginManager` handles it.", "fail"),
    ("letter-then-its-own-subject", CASE, RUNNER_OPTIONS, "C", "C — the GlobalInstructionPlugin adds it to every call.", "pass"),
    ("letter-then-elimination", CASE, RUNNER_OPTIONS, "C", "C — Runner only runs agents; GlobalInstructionPlugin is the one that adds it.", "pass"),
    ("letter-then-because-another", CASE, RUNNER_OPTIONS, "C", "C, because the Runner only executes agents.", "pass"),
    ("letter-then-unlike-another", CASE, RUNNER_OPTIONS, "C", "C — unlike the Runner, it changes every request.", "pass"),
]
# fmt: on


# -- session 12 (grader6): the kinds of fresh7's misses, one general rule each (written before the rules) ----------

EXC_Q = Case("ex", "Which exception does int() raise when the string is not a number?", ("builtins.ValueError",))
STATE_Q = Case("st", "Which class gives a callback access to the session state?", ("x.CallbackContext",))
ROOT_Q = Case("rt", "What is the base class of every tool?", ("google.adk.tools.base_tool.BaseTool",))
LOOP_Q = Case("lp", "Which class runs its sub-agents again and again until a condition?", ("x.LoopAgent",))
LIMIT_Q = Case("li", "What is the default maximum line length of textwrap.fill?", ("textwrap.fill",))
PARTIAL_Q = Case("pa", "Which functools function fixes some arguments of a function?", ("functools.partial",))
SPLIT_Q = Case("sp", "Which shlex function splits a string like a shell?", ("shlex.split",))
MODEL_ARG_Q = Case("ma", "Which parameter sets the model of an agent?", ("x.LlmAgent",))
ORDER_Q = Case("or", "How many ways can 3 people stand in a row of 3?", ())
PLUGIN_Q = Case("pl", "Which class is the base of all plugins?", ("google.adk.plugins.base_plugin.BasePlugin",))

# one row an example: (id, case, accepted answer, reply, outcome)
# fmt: off
FRESH7_IDENTIFIER_KINDS = [
    # an exception question answered by code alone: the class an ``except`` clause catches
    ("except-clause", EXC_Q, "ValueError", "```python\ntry:\n    n = int(s)\nexcept ValueError:\n    n = 0\n```", "pass"),
    ("except-clause-another", EXC_Q, "ValueError", "```python\ntry:\n    n = int(s)\nexcept TypeError:\n    n = 0\n```", "fail"),
    # a class question answered by code alone: a parameter's type annotation
    ("annotation-answers-class", STATE_Q, "CallbackContext", "```python\ndef before(cb: CallbackContext) -> None:\n    cb.state['seen'] = cb.state.get('seen', 0) + 1\n```", "pass"),
    ("annotation-another-class", STATE_Q, "CallbackContext", "```python\ndef before(tc: ToolContext) -> None:\n    tc.state['seen'] = tc.state.get('seen', 0) + 1\n```", "fail"),
    # a tree drawing: its children are the hierarchy under the root, the root is what it shows
    ("tree-root", ROOT_Q, "BaseTool", "```\nBaseTool\n├── FunctionTool\n└── AgentTool\n```", "pass"),
    ("tree-root-another", ROOT_Q, "BaseTool", "```\nFunctionTool\n├── LongRunningFunctionTool\n└── AgentTool\n```", "fail"),
    # a YAML / config block: a key's value is the answer
    ("yaml-value", LOOP_Q, "LoopAgent", "Agent config:\n\n```yaml\nagent_class: LoopAgent\nname: retry\nmax_iterations: 3\n```", "pass"),
    ("yaml-value-another", LOOP_Q, "LoopAgent", "Agent config:\n\n```yaml\nagent_class: SequentialAgent\nname: retry\n```", "fail"),
    # a REPL session for a number question: the value it prints
    ("repl-prints-number", LIMIT_Q, "70", "```\n>>> import textwrap\n>>> textwrap.TextWrapper().width\n70\n```", "pass"),
    ("repl-prints-another-number", LIMIT_Q, "70", "```\n>>> import textwrap\n>>> textwrap.TextWrapper().width\n80\n```", "fail"),
    # a call that "no longer works" is the old way; the fix that follows is the answer
    ("no-longer-works-then-fix", PARTIAL_Q, "partial", "`apply(f, args)` no longer works in Python 3. What we use is `functools.partial(f, 1)`.", "pass"),
    ("answer-no-longer-works", PARTIAL_Q, "partial", "`functools.partial` no longer works here; use `lambda x: f(1, x)`.", "fail"),
    # the module where the answer lives, named before it, is its place, not another answer
    ("module-path-then-class", PLUGIN_Q, "BasePlugin", "See `google.adk.plugins.base_plugin`; the class there, `BasePlugin`, is what every plugin extends.", "pass"),
    ("module-path-then-another", PLUGIN_Q, "BasePlugin", "See `google.adk.plugins.base_plugin`; the class you extend is `PluginManager`.", "fail"),
    # ``or with `x` `` describes how the answer works (a parameter), not another answer
    ("or-with-a-parameter", SPLIT_Q, "split", "Use `shlex.split`; it splits on whitespace, or with `posix=False` keeps the quotes.", "pass"),
    ("or-another-function", SPLIT_Q, "split", "Use `shlex.split`, or `str.split` if there are no quotes.", "fail"),
    # ``either a X or a `Y` instance``: the kinds of value the answer takes
    ("either-a-or-an-instance", MODEL_ARG_Q, "model", "`model` — either a model-name string or a `LiteLlm` instance.", "pass"),
    ("either-two-parameters", MODEL_ARG_Q, "model", "Either `model` or `llm`.", "fail"),
    # a list of candidates, then one sentence that picks one of them
    ("list-then-pick", SPLIT_Q, "split", "- `shlex.split()` — shell-like\n- `str.split()` — whitespace only\n- `re.split()` — by pattern\n\nFor shell syntax use `shlex.split()`.", "pass"),
    ("list-then-pick-another", SPLIT_Q, "split", "- `shlex.split()` — shell-like\n- `str.split()` — whitespace only\n\nFor this use `str.split()`.", "fail"),
    ("list-without-pick", SPLIT_Q, "split", "- `shlex.split()` — shell-like\n- `str.split()` — whitespace only", "fail"),
    # numbers: dot grouping (1.234.567) and a derivation whose last result is the answer
    ("dot-grouped-number", ORDER_Q, "1234567", "Es sind 1.234.567 Möglichkeiten bei 3 Personen.", "pass"),
    ("derivation-ends-in-answer", ORDER_Q, "6", "3 × 2 × 1 = 6.", "pass"),
    ("derivation-longer", ORDER_Q, "6", "There are 3 choices for the first place, then 2, then 1: 3 × 2 = 6 ordered pairs of the first two, times 1 = 6.", "pass"),
    ("derivation-ends-in-another", ORDER_Q, "6", "3 × 3 × 3 = 27.", "fail"),
    # written after the rules, against over-reach (counted apart)
    ("except-clause-not-asked", PARTIAL_Q, "partial", "```python\ntry:\n    g = functools.partial(f, 1)\nexcept TypeError:\n    g = f\n```", "pass"),
    ("except-clause-beside-wrong-call", PARTIAL_Q, "partial", "```python\ntry:\n    g = functools.reduce(f, xs)\nexcept partial:\n    pass\n```", "fail"),
    ("derivation-then-hedge", ORDER_Q, "6", "3 × 2 × 1 = 6, or 27 if repeats are allowed.", "fail"),
    ("list-then-use-both", SPLIT_Q, "split", "- `shlex.split()` — shell-like\n- `str.split()` — whitespace only\n\nUse `shlex.split()` or `str.split()`.", "fail"),
]
# fmt: on

BASE_OPTIONS = {"A": "Runner", "B": "Event", "C": "BasePlugin", "D": "Session"}
SEARCH_OPTIONS = {"A": "Event", "B": "BaseToolset", "C": "GoogleSearchTool", "D": "Session"}
METHOD_OPTIONS = {"A": "append_event", "B": "find_agent", "C": "name", "D": "close"}
PUSH_OPTIONS = {
    "A": "Remove the first item, then insert the new item",
    "B": "Insert the item into the list, then remove and return the first item",
    "C": "Insert the item and return nothing",
}

# one row an example: (id, case, options, key, reply, outcome)
# fmt: off
FRESH7_OPTION_KINDS = [
    # a bold letter closing a discussion that names the other options
    ("bold-letter-after-discussion", CASE, BASE_OPTIONS, "C", "Runner runs agents and Event is a record; Session holds history. Plugins derive from BasePlugin. **C**", "pass"),
    ("bold-letter-another-after-discussion", CASE, BASE_OPTIONS, "C", "Runner runs agents and Event is a record; BasePlugin is for plugins. **A**", "fail"),
    # ``X it is.`` after an elimination
    ("it-is-after-elimination", CASE, SEARCH_OPTIONS, "C", "Event and Session are not tools, and BaseToolset only groups tools. GoogleSearchTool it is.", "pass"),
    ("it-is-another", CASE, SEARCH_OPTIONS, "C", "Event and Session are not tools. BaseToolset it is.", "fail"),
    # a sentence opening with the article ``A`` is no choice of option A
    ("article-a-then-letter", CASE, BASE_OPTIONS, "D", "A Session holds every event of the conversation: D.", "pass"),
    ("article-a-then-another-letter", CASE, BASE_OPTIONS, "D", "A Runner drives the conversation: A.", "fail"),
    # ``Y is equally involved``: an equal alternative
    ("equally-involved", CASE, METHOD_OPTIONS, "A", "A, append_event — though B, find_agent, is equally responsible for it.", "fail"),
    ("equally-not-involved", CASE, METHOD_OPTIONS, "A", "A, append_event — B, find_agent, only looks agents up.", "pass"),
    # the key option's text paraphrased without a letter
    ("paraphrased-key-text", CASE, PUSH_OPTIONS, "B", "It inserts the item into the list, then removes and returns the first item.", "pass"),
    ("paraphrased-another-text", CASE, PUSH_OPTIONS, "B", "It removes the first item, then inserts the new item.", "fail"),
    # written after the rules, against over-reach (counted apart)
    ("paraphrased-both-orders", CASE, PUSH_OPTIONS, "B", "Either it inserts the item into the list and then removes and returns the first item, or it removes the first item and then inserts the new item.", "fail"),
    ("closing-letter-after-hedge", CASE, BASE_OPTIONS, "C", "Not sure between Runner and BasePlugin. **C**", "fail"),
    ("it-is-negated-before", CASE, SEARCH_OPTIONS, "C", "GoogleSearchTool? Not it. BaseToolset it is.", "fail"),
]
# fmt: on


# -- every table above, one test each for identifiers and options ------------------------------------------------

#: the identifier tables by the session (and set) their rules came from; a test id is ``<table>-<row id>``
# -- session 12 (lead): the kinds of fresh8's misses, written before the rules ---------------------------------------
CTX_Q = Case(
    "ic", "What is the `InvocationContext` object?", ("google.adk.agents.invocation_context.InvocationContext",)
)
SUM8_Q = Case("fs", "Which math function adds floats without losing precision?", ("math.fsum",))
HANDS_Q = Case("hd", "How many 5-card hands can be dealt from a 52-card deck?", ())
# fmt: off
FRESH8_IDENTIFIER_KINDS = [
    # a method named with a builtin type as its owner in prose: the type's method, not the module's function
    ("type-owner-possessive", SPLIT_Q, "split", "Call the string's split method: `parts = line.split()`.", "fail"),
    ("type-owner-method-of", SPLIT_Q, "split", "It is the split method of str, e.g. `line.split()`.", "fail"),
    ("type-owner-list", SUM8_Q, "fsum", "Just use the list's sum: `sum(values)`.", "fail"),
    ("module-owner-possessive", SPLIT_Q, "split", "Use shlex's split function: `shlex.split(line)`.", "pass"),
    ("string-module-owner", CAPS_Q, "capwords", "Use the string module's capwords: `string.capwords(s)`.", "pass"),
    # a reply that says it has no information about the name: the name is the subject of a refusal
    ("no-information-about", CTX_Q, "InvocationContext", "Sorry, I don't have any information about `InvocationContext` in that library. Can you paste its docs?", "fail"),
    ("no-knowledge-of", CTX_Q, "InvocationContext", "I have no knowledge of an `InvocationContext` type there; which version are you on?", "fail"),
    ("dont-know-about", CTX_Q, "InvocationContext", "I don't know about `InvocationContext`, could you share the code?", "fail"),
    ("no-info-then-answer", CTX_Q, "InvocationContext", "I don't have the docs open, but `InvocationContext` is the object that carries one invocation's session, agent and services.", "pass"),
    ("information-about-it-is", CTX_Q, "InvocationContext", "`InvocationContext` holds all the information about one invocation: session, agent, services.", "pass"),
    # a number question answered by a code line whose comment gives the result
    ("result-in-comment", HANDS_Q, "2598960", "```python\nmath.comb(52, 5)  # 2598960\n```", "pass"),
    ("arrow-result-in-comment", HANDS_Q, "2598960", "```python\n>>> from math import comb\ncomb(52, 5)  # -> 2598960\n```", "pass"),
    ("wrong-result-in-comment", HANDS_Q, "2598960", "```python\nmath.perm(52, 5)  # 311875200\n```", "fail"),
]
# fmt: on


# -- session 12 (lead): the kinds of fresh9's misses, written before the rules ---------------------------------------
LLM_BASE_Q = Case("lb", "What is the core interface for all LLM integrations?", ("google.adk.models.base_llm.BaseLlm",))
RUN_Q = Case("rn", "Which class is the primary entry point for running an agent?", ("google.adk.runners.Runner",))
# fmt: off
FRESH9_IDENTIFIER_KINDS = [
    # names given as examples (``such as X or Y``, ``e.g. X``, ``like X``) illustrate the answer: no alternatives
    ("such-as-examples", LLM_BASE_Q, "BaseLlm", "`BaseLlm` — every wrapper such as `Gemini` or `LiteLlm` subclasses it.", "pass"),
    ("eg-examples", LLM_BASE_Q, "BaseLlm", "`BaseLlm`; concrete models (e.g. `Gemini`, `Claude`) extend it.", "pass"),
    ("such-as-is-the-answer", LLM_BASE_Q, "BaseLlm", "Use a model class such as `Gemini` or `LiteLlm`; `BaseLlm` is only abstract.", "fail"),
    # ``pass X as `param` ``: for a parameter question the parameter is what ``as`` names
    ("pass-value-as-param", CONFIG_Q, "generate_content_config", "Pass a `types.GenerateContentConfig` as `generate_content_config`.", "pass"),
    ("pass-value-as-other-param", CONFIG_Q, "generate_content_config", "Pass a `types.GenerateContentConfig` as `config`.", "fail"),
    # the module path in parentheses right after the answer says where it lives
    ("module-in-parentheses", PLUGIN_Q, "BasePlugin", "Subclass `BasePlugin` (`google.adk.plugins.base_plugin`) and register it.", "pass"),
    ("module-in-parentheses-another", PLUGIN_Q, "BasePlugin", "Subclass `PluginManager` (`google.adk.plugins.plugin_manager`) and register it.", "fail"),
    # the answer's own call's arguments are its arguments, not alternatives
    ("own-call-arguments", HEAPQ_Q, "heapreplace", "Use **`heapq.heapreplace(heap, item)`**. It pops the smallest first, then pushes the new item.", "pass"),
    ("own-call-argument-named-again", HEAPQ_Q, "heapreplace", "Use `heapq.heapreplace(heap, item)`. The value returned may be larger than `item`.", "pass"),
    ("another-call-named-after", HEAPQ_Q, "heapreplace", "Use `heapq.heapreplace(heap, item)`, or maybe `heappushpop`.", "fail"),
    # a bold first bullet, then bullets that describe it (a verb first, or a method of it at work)
    ("bullets-describe-bold-first", RUN_Q, "Runner", "- **`Runner`** (`google.adk.runners.Runner`)\n- Takes the root agent and a session service\n- `run_async()` drives the event loop", "pass"),
    ("bullets-of-candidates", RUN_Q, "Runner", "- `Runner`\n- `InMemoryRunner`\n- `App`", "fail"),
]
# fmt: on


# -- session 12 (lead): the kinds of fresh10's misses, written before the rules --------------------------------------
CACHE_Q = Case("lc", "What is the default maxsize of functools.lru_cache?", ("functools.lru_cache",))
TOOL_Q = Case(
    "ft", "What's the easiest way to create a tool from a Python function?", ("google.adk.tools.FunctionTool",)
)
# fmt: off
FRESH10_IDENTIFIER_KINDS = [
    # names the reply presents as settings of the answer (``adjust `rel_tol` or `abs_tol` ``) are its parameters,
    # wherever they come again (``use `abs_tol` when comparing against 0``)
    ("settings-named-again", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`; tune `rel_tol` or `abs_tol` if needed (use `abs_tol` near zero).", "pass"),
    ("setting-then-another-function", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`; set `rel_tol` if needed, or use `numpy.allclose` instead.", "fail"),
    # for a question that asks for no parameter, a `name=value` setting (no call named) is how the answer is used
    ("setting-before-the-class", TOOL_Q, "FunctionTool", "Just put it in `tools=[my_function]`; ADK wraps it in a `FunctionTool` for you.", "pass"),
    ("setting-before-another-class", TOOL_Q, "FunctionTool", "Just put it in `tools=[my_function]`; ADK wraps it in an `AgentTool` for you.", "fail"),
    # (fresh4's last wrong pass, same session) a number given as an example (``such as 128``) is no answer
    ("number-as-example-only", CACHE_Q, "128", "By default `maxsize` is None (unbounded); you can pass a bound such as 128.", "fail"),
    ("number-then-example", CACHE_Q, "128", "It defaults to 128; a larger power of two, e.g. 1024, also works.", "pass"),
    ("number-example-of-the-answer", CACHE_Q, "128", "The default is 128 entries, like most caches of that kind.", "pass"),
]
# fmt: on


# -- session 12 (lead): the kinds of fresh12's misses, written before the rules --------------------------------------
FILE_Q = Case("cf", "Which file does Larkspur read its settings from?", ())
# fmt: off
FRESH12_IDENTIFIER_KINDS = [
    # a retrieval bot's citation of a source file or page is where the answer comes from, not an answer
    ("cited-source-file", SUBCLASS_Q, "BaseTool", "According to tools/base_tool.py (retrieved), custom tools subclass `BaseTool`.", "pass"),
    ("cited-page-in-brackets", SUBCLASS_Q, "BaseTool", 'From the docs [adk-docs/tools/index.md]: "Every tool extends BaseTool." So subclass `BaseTool`.', "pass"),
    ("cited-file-alone", SUBCLASS_Q, "BaseTool", "Citing base_tool.py: custom tools subclass `BaseTool`.", "pass"),
    ("cited-source-then-another", SUBCLASS_Q, "BaseTool", "Citing tools/base_tool.py: subclass `FunctionTool` for custom tools.", "fail"),
    # (written after the rule, from the suite's Markdown example: counted apart) a file that is the answer asked for
    ("file-is-the-answer", FILE_Q, "larkspur.toml", "Larkspur reads `larkspur.toml` in the working directory.", "pass"),
    ("file-another-than-the-answer", FILE_Q, "larkspur.toml", "Larkspur reads `settings.toml` in the working directory.", "fail"),
    # an agent's final step written as a bracketed tag
    ("bracketed-final-answer", PARTIAL_Q, "partial", "[final_answer] functools.partial", "pass"),
    ("bracketed-final-answer-another", PARTIAL_Q, "partial", "[final_answer] functools.reduce", "fail"),
]
# fmt: off
FRESH13_IDENTIFIER_KINDS = [
    # "use either X or Y … pick whichever you like": a hedge between two
    ("either-or-pick-whichever", SUM8_Q, "fsum", "You can use either `math.fsum()` or the built-in `sum()`; both are fine, so pick whichever you like.", "fail"),
    ("either-or-plain-names", SUM8_Q, "fsum", "You can use either math.fsum() or the built-in sum(); both give the total, so pick whichever you like.", "fail"),
    # (written with the rule) a builtin called, ``sum()``, is a name even where the question says "sum" in English
    ("builtin-call-restated-word", SUM_Q, "fsum", "You can use either math.fsum() or the built-in sum(); so pick whichever you like.", "fail"),
    ("builtin-word-restated", SUM_Q, "fsum", "Use math.fsum(): a plain sum of floats loses precision.", "pass"),
    ("either-or-then-recommend", SUM8_Q, "fsum", "Use `math.fsum()`; plain `sum()` loses precision, so don't pick it for this.", "pass"),
    # an agent's steps: the final step's answer (a ``final_answer:`` step line, JSON lines with a final step)
    ("step-line-final-answer", PARTIAL_Q, "partial", 'Step 1 — tool: docs.search(query="fix arguments")\nStep 2 — final_answer: "functools.partial"', "pass"),
    ("json-lines-final-step", PARTIAL_Q, "partial", '{"step": "tool_call", "tool": "doc_search", "input": "fix args"}\n{"step": "final_answer", "content": "functools.partial"}', "pass"),
    ("json-lines-final-step-another", PARTIAL_Q, "partial", '{"step": "tool_call", "tool": "doc_search", "input": "fix args"}\n{"step": "final_answer", "content": "functools.reduce"}', "fail"),
]
# fmt: on
# fmt: on


# -- session 13 (grader7): the kinds of the corpus's last misses, written before the rules ---------------------------
PREFIX_Q = Case("pf", "Which textwrap function adds a prefix to selected lines?", ("textwrap.indent",))
ITER_Q = Case("it", "Which parameter limits the number of iterations for a `LoopAgent`?", ("x.LoopAgent",))
ITER_OPTIONS = {"A": "max_iterations", "B": "name", "C": "model", "D": "evaluate"}
LOOP_SNIPPET = '```python\nLoopAgent(name="l", sub_agents=[a], max_iterations=3)\n```\n'
AUDIT = '```python\nagent = LlmAgent(\n    name="a",\n    model="gemini-2.0-flash",\n    {kwarg}=audit,  # executes after run_async\n)\n```'
# fmt: off
GRADER7_IDENTIFIER_KINDS = [
    # an accepted word between ``the`` and the kind of thing it is (``the model parameter``) names it
    ("kind-noun-after-word", MODEL_Q, "model", "The setting you need is the model parameter; give it a string or a BaseLlm instance.", "pass"),
    ("kind-noun-argument", MODEL_Q, "model", "It's the model argument. Pass a name like gemini-2.0-flash to it.", "pass"),
    ("kind-noun-then-called", MODEL_Q, "model", "The model parameter is called `llm`; pass it a model name.", "fail"),
    ("kind-noun-another-word", MODEL_Q, "model", "Use the llm_config parameter and put a BaseLlm in it.", "fail"),
    # names offered for another job (``to read it back use X or Y``) are no alternatives to the answer
    ("purpose-scoped-pair", SORT_Q, "sort_keys", "Pass sort_keys=True to json.dumps. To write straight to a file use json.dump, and to read it back use json.load or json.loads.", "pass"),
    ("purpose-same-job", SORT_Q, "sort_keys", "Pass sort_keys=True. To sort the output you could also use sorted(d.items()) or OrderedDict.", "fail"),
    # ``…, and the one taking … is X`` concludes
    ("the-one-participle-after-and", PREFIX_Q, "indent", "dedent strips margins, fill rewraps paragraphs, and the one taking a `prefix` and an optional `predicate` is indent.", "pass"),
    ("the-one-participle-wrong", PREFIX_Q, "indent", "dedent strips margins, and the one taking a `prefix` and an optional `predicate` is fill.", "fail"),
    # a number after ``=`` that the expression goes on from (``52! / …``) is no result
    ("factorial-after-equals", HANDS_Q, "2598960", "You can deal **2,598,960** hands, i.e. C(52, 5) = 52! / (5! × 47!).", "pass"),
    ("factorial-wrong-count", HANDS_Q, "2598960", "There are **311,875,200** ordered hands: 52! / 47! = 311,875,200.", "fail"),
    # a parameter question: the one keyword argument of a snippet whose comment says what the question asks
    ("commented-kwarg", CALLBACK_Q, "after_agent_callback", AUDIT.format(kwarg="after_agent_callback"), "pass"),
    ("commented-kwarg-wrong", CALLBACK_Q, "after_agent_callback", AUDIT.format(kwarg="before_agent_callback"), "fail"),
    # a bare ``wait`` takes the answer back when another answer follows it
    ("wait-then-other", PARTIAL_Q, "partial", "`functools.reduce` — wait, that folds a sequence. `functools.partial(f, 1)`.", "pass"),
    ("wait-then-other-wrong", PARTIAL_Q, "partial", "`functools.partial(f, 1)` — wait, that only fixes arguments. `functools.reduce(f, xs)`.", "fail"),
    ("wait-note", PARTIAL_Q, "partial", "`functools.partial(f, 1)`. Wait — if you need keyword arguments too, `partial` takes them as well.", "pass"),
    # a comparative answer cue (``so the better tool …: X``, ``the cleaner choice is X``)
    ("better-tool-colon", CAPS_Q, "capwords", "`str.title()` mangles apostrophes, so the better tool splits on whitespace and capitalises each word: `string.capwords(s)`.", "pass"),
    ("better-tool-colon-wrong", CAPS_Q, "capwords", "`string.capwords` only splits on spaces, so the safer tool handles every case: `str.title()`.", "fail"),
    ("cleaner-choice-is", CAPS_Q, "capwords", "str.title() breaks on apostrophes; the cleaner choice is string.capwords(s).", "pass"),
]
# written after the rules, against over-reach (counted apart: by the rules' author)
GRADER7_AFTER_RULES = [
    ("kind-noun-negated", MODEL_Q, "model", "Don't use the model parameter for that; use `llm`.", "fail"),
    ("kind-noun-no-parameter-question", CAPS_Q, "capwords", "Use the capwords argument of str.title().", "fail"),
    ("purpose-same-task-other-verb", SORT_Q, "sort_keys", "Use `sort_keys=True`. To make it sorted you could also use `sorted(d.items())` or `OrderedDict`.", "fail"),
    ("the-one-after-an-answer", HEAPQ_Q, "heapreplace", "Use `heappushpop`, and the one popping first is `heapreplace`.", "fail"),
    ("wait-names-in-its-clause", MERGE_Q, "merge", "`heapq.merge(*fs)`. Wait — you'll want `sorted()` if they're unsorted.", "pass"),
    ("wait-double-check", PARTIAL_Q, "partial", "`functools.partial(f, 1)`. Wait, let me double-check the docs. Yes: `functools.partial`.", "pass"),
    ("wait-then-scoped-other", MERGE_Q, "merge", "`heapq.merge(*fs)`. Wait — that needs sorted input. For small lists, `sorted(a + b)` is simpler.", "pass"),
    ("wait-for-verb", MERGE_Q, "merge", "`heapq.merge(*fs)`; wait for each file to close before you call `sorted()` on nothing.", "pass"),
    ("better-tool-no-colon", CAPS_Q, "capwords", "`string.capwords(s)` is the simpler tool here; `str.title()` breaks on apostrophes.", "pass"),
    ("commented-kwargs-two-comments", CALLBACK_Q, "after_agent_callback", '```python\nagent = LlmAgent(\n    name="a",  # executes after run_async\n    after_agent_callback=audit,  # executes after run_async\n)\n```', "fail"),
]
# the one-candidate fallback (deltap.checkers.fallback), for replies no rule reads: written with it (counted apart)
SEQ_Q = Case("sq", "Which class runs its sub-agents one after another?", ("x.SequentialAgent",))
RECURSION_Q = Case("rc", "What is the default recursion limit of CPython?", ())
SHELL = "```\n$ python -c 'import sys; print(sys.getrecursionlimit())'\n{n}\n```"
GRADER7_FALLBACK = [
    ("one-class-in-json", SEQ_Q, "SequentialAgent", '```json\n{"agent_class": "SequentialAgent", "name": "p"}\n```', "pass"),
    ("two-classes-in-json", SEQ_Q, "SequentialAgent", '```json\n{"agent_class": "SequentialAgent", "retry": "LoopAgent"}\n```', "fail"),
    ("another-class-in-json", SEQ_Q, "SequentialAgent", '```json\n{"agent_class": "LoopAgent", "name": "p"}\n```', "fail"),
    ("one-number-printed", RECURSION_Q, "1000", SHELL.format(n=1000), "pass"),
    ("another-number-printed", RECURSION_Q, "1000", SHELL.format(n=3000), "fail"),
    ("one-number-then-another", RECURSION_Q, "1000", SHELL.format(n=1000) + "\nor 3000 on some builds", "fail"),
    ("one-number-negated", RECURSION_Q, "1000", SHELL.format(n="# not 1000 here"), "fail"),
]
GRADER7_OPTION_KINDS = [
    # a line that opens with an arrow gives the result of what is above it
    ("arrow-line-after-code", ITER_Q, ITER_OPTIONS, "A", LOOP_SNIPPET + "→ A", "pass"),
    ("arrow-line-wrong", ITER_Q, ITER_OPTIONS, "A", LOOP_SNIPPET + "→ B", "fail"),
    ("arrows-inline-then-pick", CASE, FILL, "B", "wrap → A, fill → B. I'd pick B.", "pass"),
    ("arrows-inline-then-pick-other", CASE, FILL, "B", "fill → B, wrap → A. I'd pick A.", "fail"),
    # written after the rule, against over-reach (counted apart)
    ("arrow-lines-echo", CASE, FILL, "B", "→ A wrap\n→ B fill", "fail"),
    ("arrow-mid-line", CASE, FILL, "B", "fill joins the lines -> B", "pass"),
]
# session 13 (grader8): the kinds of fresh14-16's misses, each a general rule; examples written with the rules by
# their author (counted apart), none of them a reply of those sets
TOL_Q = Case("tl", "What is the default rel_tol of math.isclose?", ("math.isclose",))
CUTOFF_Q = Case("co", "What is the default cutoff of difflib.get_close_matches?", ("difflib.get_close_matches",))
FIND_Q = Case("fa", "Which method finds an agent by name in the agent tree?", ("google.adk.agents.BaseAgent",))
JSONERR_Q = Case("je", "Which exception does json.loads raise on malformed input?", ("json.JSONDecodeError",))
B64_Q = Case("b6", "How do I base64-encode bytes for use in a URL?", ("base64.urlsafe_b64encode",))
SESSION_Q = Case("se", "What class holds the whole history of a conversation?", ("google.adk.sessions.Session",))
PRODUCT_Q = Case("pr", "Which itertools function gives the cartesian product?", ("itertools.product",))
TOOLS_Q = Case("to", "Which parameter attaches tools to an `LlmAgent`?", ("google.adk.agents.LlmAgent",))
SHORT_Q = Case("sc", "Which plugin callback method can return a value to skip the agent?", ("x.BasePlugin",))
OVERRIDE = "```python\nclass P(BasePlugin):\n{methods}```"
BEFORE_DEF = "    async def before_agent_callback(self, **kw):\n        return types.Content()\n"
AFTER_DEF = "    async def after_agent_callback(self, **kw):\n        return None\n"
# fmt: off
GRADER8_IDENTIFIER_KINDS = [
    # numbers in words with scales, a spoken power of ten, 10⁻⁹, a decimal comma, the result at a formula's end
    ("words-with-scales", HANDS_Q, "2598960", "There are two million, five hundred ninety-eight thousand, nine hundred sixty hands.", "pass"),
    ("words-with-scales-wrong", HANDS_Q, "2598960", "There are two million, five hundred ninety-eight thousand hands.", "fail"),
    ("words-one-thousand", RECURSION_Q, "1000", "By default it's one thousand. You can raise it, but be careful.", "pass"),
    ("words-two-numbers", RECURSION_Q, "1000", "Somewhere between two and three thousand.", "fail"),
    ("spoken-power", TOL_Q, "1e-09", "By default it is one times ten to the minus nine.", "pass"),
    ("spoken-power-wrong", TOL_Q, "1e-09", "By default it is ten to the minus six.", "fail"),
    ("superscript-power", TOL_Q, "1e-09", "rel_tol defaults to 10⁻⁹, i.e. 0.000000001.", "pass"),
    ("superscript-power-wrong", TOL_Q, "1e-09", "rel_tol defaults to 10⁻⁶.", "fail"),
    ("decimal-comma", CUTOFF_Q, "0.6", "Par défaut, `cutoff` vaut 0,6 : le reste est ignoré.", "pass"),
    ("decimal-comma-wrong", CUTOFF_Q, "0.6", "Par défaut, `cutoff` vaut 0,8 : le reste est ignoré.", "fail"),
    ("latex-result", HANDS_Q, "2598960", "$$\\binom{52}{5} = \\frac{52 \\times 51 \\times 50 \\times 49 \\times 48}{120} = 2598960$$", "pass"),
    ("latex-result-wrong", HANDS_Q, "2598960", "$$\\frac{52!}{47!} = 311875200$$", "fail"),
    # a later value given for the same thing supersedes or hedges the answer; a value the user sets does not
    ("value-now-another", RECURSION_Q, "1000", "It returns **1000**.\n\n> Note: since 3.12 the default is now **3000**.", "fail"),
    ("value-can-be-another", RECURSION_Q, "1000", "It is usually 1000, but on some systems it can be 10000.", "fail"),
    ("value-the-user-sets", RECURSION_Q, "1000", "It is 1000, but you can raise it with setrecursionlimit so it can be 10000.", "pass"),
    # a constant after ``or`` is what the answer returns; parameters after ``optionally with`` (or ``ajuster … ou``) are settings
    ("returns-or-none", FIND_Q, "find_agent", "Call `find_agent(name)`; it returns the matching agent or `None`.", "pass"),
    ("or-another-method", FIND_Q, "find_agent", "Call `find_agent(name)` or `find_sub_agent(name)`.", "fail"),
    ("optionally-with-parameters", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`, optionally with `rel_tol` or `abs_tol`.", "pass"),
    ("optionally-another-function", ISCLOSE_Q, "isclose", "Use `math.isclose(a, b)`, or optionally `numpy.allclose`.", "fail"),
    ("settings-in-french", ISCLOSE_Q, "isclose", "Utilisez `math.isclose(a, b)`. Vous pouvez ajuster `rel_tol` ou `abs_tol`.", "pass"),
    # ``or`` and ``either works`` in other languages
    ("or-in-spanish", PUSHPOP_Q, "heappushpop", "Puedes usar `heapq.heappushpop()` o `heapq.heapreplace()`.", "fail"),
    ("either-in-spanish", PUSHPOP_Q, "heappushpop", "Usa `heapq.heappushpop()`; `heapq.heapreplace()` es parecida, cualquiera te sirve.", "fail"),
    ("spanish-negated-other", PUSHPOP_Q, "heappushpop", "Usa `heapq.heappushpop()` (no `heapreplace`, que saca primero).", "pass"),
    # a name qualified through the real standard-library submodule that defines it
    ("real-submodule", JSONERR_Q, "JSONDecodeError", "It's `json.decoder.JSONDecodeError` (also `json.JSONDecodeError`).", "pass"),
    ("invented-submodule", JSONERR_Q, "JSONDecodeError", "It's `json.encoder.JSONDecodeError`.", "fail"),
    # a bold description of the code after it, a cited document's title: neither is a candidate
    ("bold-description-via", B64_Q, "urlsafe_b64encode", "Use **URL-safe Base64 encoding** via `base64.urlsafe_b64encode()`.", "pass"),
    ("bold-description-via-wrong", B64_Q, "urlsafe_b64encode", "Use **URL-safe Base64 encoding** via `base64.b64encode()`.", "fail"),
    ("cited-title", QUOTE_Q, "quote", "According to **shlex — Simple lexical analysis**:\n\nSo `shlex.quote()` is the function you need.", "pass"),
    ("cited-title-wrong", QUOTE_Q, "quote", "According to **shlex — Simple lexical analysis**:\n\nSo `shlex.split()` is the function you need.", "fail"),
    # structured output: a key that names the answer's role declares its value
    ("json-role-key", AGENT_Q, "name", '{"required_parameter": "name", "type": "str"}', "pass"),
    ("json-role-key-wrong", AGENT_Q, "name", '{"required_parameter": "model", "type": "str"}', "fail"),
    # a class's name as written, after ``the``
    ("class-after-the", SESSION_Q, "Session", "That's the Session. It keeps the list of events.", "pass"),
    ("class-after-the-other", SESSION_Q, "Session", "That's the Runner. It keeps the session going.", "fail"),
    # a repetition loop cut off mid-name
    ("loop-cut-off", PRODUCT_Q, "product", "The answer is itertools.product. " * 3 + "The answer is itertools.pro", "pass"),
    ("cut-off-new-sentence", PRODUCT_Q, "product", "The answer is itertools.combinations. Actually the answer is itertools.pro", "fail"),
    # ```X` instances`` (plural, no article) is the kind of value the answer takes
    ("typed-plural", TOOLS_Q, "tools", "The parameter is `tools`. It takes functions, `BaseTool` instances, or `BaseToolset` instances.", "pass"),
    ("another-parameter-after-or", TOOLS_Q, "tools", "The parameter is `tools`, or maybe `toolsets`.", "fail"),
    # ``… may be simpler in that case``: another situation
    ("in-that-case", TEE_Q, "tee", "`itertools.tee(it, 2)`.\n\nAnd if one copy runs far ahead, `list()` may be simpler in that case.", "pass"),
    ("may-be-simpler", TEE_Q, "tee", "Use `itertools.tee`, though `list()` may be simpler.", "fail"),
    # the one method a code reply overrides, for a question about a method
    ("override-method", SHORT_Q, "before_agent_callback", OVERRIDE.format(methods=BEFORE_DEF), "pass"),
    ("override-two-methods", SHORT_Q, "before_agent_callback", OVERRIDE.format(methods=BEFORE_DEF + AFTER_DEF), "fail"),
    ("override-other-method", SHORT_Q, "before_agent_callback", OVERRIDE.format(methods=AFTER_DEF), "fail"),
    # wrong passes: ``X exists, but … it won't …``; a name the reply says it does not know, named again
    ("exists-but-wont-help", MERGE_Q, "merge", "`heapq.merge()` exists, but it's a wrapper, so for big inputs it won't save memory. A better approach is chunking.", "fail"),
    ("exists-but-note", MERGE_Q, "merge", "`heapq.merge()` exists for exactly this, but note that the inputs must be sorted.", "pass"),
    ("unfamiliar-named-again", CTX_Q, "InvocationContext", "I'm not familiar with an `InvocationContext` object. Where did you see `InvocationContext`?", "fail"),
    ("could-not-find-about", CTX_Q, "InvocationContext", "I couldn't find any article about `InvocationContext` in the knowledge base.", "fail"),
]
# written after the rules, against over-reach (counted apart: by the rules' author; the first two failed on the first
# draft, which was narrowed: a `but` clause that says X won't do the job rejects X only beside another way
# recommended, and thinking again retracts only when another answer follows)
GRADER8_AFTER_RULES = [
    ("exists-but-caveat", MERGE_Q, "merge", "`heapq.merge()` exists for this, but it doesn't work on unsorted input.", "pass"),
    ("come-to-think-note", MERGE_Q, "merge", "Use `heapq.merge()`. Come to think of it, it needs sorted inputs, which you have.", "pass"),
    ("thinking-again-other", MERGE_Q, "merge", "Use `heapq.merge()`. Thinking about it again, `sorted()` is simpler.", "fail"),
    ("value-of-another-parameter", TOL_Q, "1e-09", "rel_tol is 1e-09 by default; abs_tol could be 0.0 or larger.", "pass"),
    ("value-set-later", TOL_Q, "1e-09", "The default rel_tol is 1e-09, though it can be 1e-06 after you change it.", "pass"),
    ("words-beside-digits", TOL_Q, "1e-09", "rel_tol defaults to 1e-09, which is ten to the minus nine.", "pass"),
    ("json-config-field", SEQ_Q, "SequentialAgent", '{"agent_class": "LoopAgent", "name": "p"}', "fail"),
    ("class-named-by-question", Case("dm", "Where is the data model for a `Session` defined?", ("x.Session",)), "Session", "The data model for a Session is in the BaseSessionService class.", "fail"),
]
GRADER8_OPTION_KINDS = [
    # ``thinking about it again`` takes the choice back
    ("thinking-again-take-back", CASE, FILL, "B", "I'd go with **B) fill** — although, thinking about it again, wrap is what you want. Final answer: **A) wrap**.", "fail"),
    ("thinking-again-same", CASE, FILL, "B", "I'd go with B. Thinking about it again: yes, B.", "pass"),
    ("thinking-again-to-key", CASE, FILL, "B", "I'd go with A — although, thinking about it again, the string is wanted. Final answer: B.", "pass"),
]
GROUP_Q = Case("gb", "Which itertools class returns consecutive keys and groups from an iterable?", ("itertools.groupby",))
LRU_Q = Case("lr", "What is the default maxsize of functools.lru_cache?", ("functools.lru_cache",))
# session 13 (grader9): the kinds of fresh17-19's misses, written with the rules by their author (counted apart)
GRADER9_IDENTIFIER_KINDS = [
    # an e-mail's greeting and sign-off name people, not alternatives
    ("sign-off-name", RUN_Q, "Runner", "Hi team,\n\nThe entry point is the Runner class.\n\nThanks,\nMei", "pass"),
    ("sign-off-initial", TEE_Q, "tee", "Hello,\n\nitertools.tee(it, 2) does it.\n\nCheers,\nR.", "pass"),
    ("sign-off-two-lines", MERGE_Q, "merge", "Hi Priya,\n\nUse heapq.merge.\n\nBest regards,\nMarcus\nPython Support Team", "pass"),
    ("sign-off-wrong", MERGE_Q, "merge", "Hi Priya,\n\nUse sorted().\n\nBest regards,\nMarcus", "fail"),
    ("sign-off-code-line-kept", MERGE_Q, "merge", "Use heapq.merge.\n\nThanks,\nheapq.nsmallest", "fail"),
    # names joined by ``+`` / ``&`` are a list
    ("plus-joined", AGENT_Q, "name", "`name` + `description` are both required", "fail"),
    ("amp-joined", AGENT_Q, "name", "`name` & `description`", "fail"),
    ("plus-english", AGENT_Q, "name", "Pass `name` + an instruction string.", "pass"),
    # a name you might think of, turned down with ``but``, and named again in the same sentence: still turned down
    ("might-think-but-again", GROUP_Q, "groupby", "You might think it's `groupby`, but groupby needs sorted input. What you want here is `itertools.batched`.", "fail"),
    ("might-think-no-but", GROUP_Q, "groupby", "You'd think it's something fancy, but it is just `groupby`.", "pass"),
    # ``Actually wait`` takes the answer back
    ("actually-wait", LRU_Q, "128", "128. Actually wait — the default changed, so it is effectively None. Yeah, None.", "fail"),
    ("wait-note", LRU_Q, "128", "128. Wait — only when you call it with parentheses.", "pass"),
    # ``either one``, ``whichever you prefer``, ``both give …`` make two ways equal; ``not 100% sure`` disclaims
    ("either-one-dash", TEE_Q, "tee", "Probably `itertools.tee`, though you could also just do `copy.copy(it)`, so either one — I'm not sure.", "fail"),
    ("one-of-two-ways", QUOTE_Q, "quote", "Either wrap it in double quotes yourself, or call `shlex.quote(name)`; both give you one argument, so use whichever you prefer.", "fail"),
    ("one-of-two-ways-picked", QUOTE_Q, "quote", "Use `shlex.quote(name)` or do it by hand; both work, but quote is safer.", "pass"),
    ("not-100-sure", TEE_Q, "tee", "I'm not 100% sure, but `itertools.tee`.", "fail"),
    # Jupyter's ``Out[3]:`` counts cells
    ("jupyter-out", HANDS_Q, "2598960", "```python\ncomb(52, 5)\n```\nOut[3]: `2598960`", "pass"),
    ("jupyter-out-wrong", HANDS_Q, "2598960", "Out[3]: `2598961`", "fail"),
    # a last paragraph that picks one of the candidates weighed above it concludes
    ("closing-pick", LOWEST_Q, "nsmallest", "**Option 1: `sorted(nums)[:10]`**\n- Pro: obvious\n\n**Option 2: `heapq.nsmallest(10, nums)`**\n- Pro: O(n log 10)\n\nSince you don't want to sort the whole list, call `heapq.nsmallest(10, nums)`.", "pass"),
    ("closing-pick-go-with", CAPS_Q, "capwords", "`str.title()`:\n- + built in\n\n`string.capwords()`:\n- + splits on whitespace\n\nGo with `string.capwords(sentence)`.", "pass"),
    ("closing-pick-wrong", CAPS_Q, "capwords", "`str.title()`:\n- + built in\n\n`string.capwords()`:\n- + splits on whitespace\n\nGo with `str.title()`.", "fail"),
    # ``without <task>:`` qualifies the task; the colon then gives the name
    ("without-task-colon", Case("bl", "Which bisect function gives the insertion point before equal values?", ("bisect.bisect_left",)), "bisect_left", "You want the insertion point before any equal values, without actually inserting: `bisect.bisect_left(a, x)`.", "pass"),
    ("not-recommended-colon", Case("bl", "Which bisect function gives the insertion point before equal values?", ("bisect.bisect_left",)), "bisect_left", "Not recommended: `bisect.bisect_left(a, x)`.", "fail"),
    # numbers that complete a name (``PEP 8``) or that the reply sets aside at once (``not 72``) leave words read
    ("numbered-name-and-words", LIMIT_Q, "70", "It's seventy characters — not 72 like PEP 8 docstrings, not the 80 of old terminals.", "pass"),
    ("numbered-name-python", LIMIT_Q, "70", "Since Python 3.9 it is 70.", "pass"),
    ("words-beside-other-digits", LIMIT_Q, "70", "It's eighty, not 70.", "fail"),
    # a derivation's result announced in words, or followed by what it counts
    ("which-gives-result", HANDS_Q, "2598960", "C(52, 5) = 311,875,200 / 120\n\nwhich gives **2 598 960** different hands.", "pass"),
    ("result-then-noun", HANDS_Q, "2598960", "C(52, 5) = 52! / (5! · 47!) = 2,598,960 different hands.", "pass"),
    ("result-then-noun-wrong", HANDS_Q, "2598960", "C(52, 5) = 52! / (5! · 47!) = 2,598,961 different hands.", "fail"),
    # beside the value given with the question's keyword, another keyword's value is another setting
    ("other-keyword-value", CUTOFF_Q, "0.6", "`cutoff=0.6` (and `n=3`).", "pass"),
    ("same-keyword-two-values", CUTOFF_Q, "0.6", "`cutoff=0.6` or `cutoff=0.7`.", "fail"),
    ("other-keyword-only", CUTOFF_Q, "0.6", "`n=3` (and `cutoff=0.8`).", "fail"),
    # a plain word heading a section is its title
    ("changelog-heading", PREFIX_Q, "indent", "### Changed\n- Quoted excerpts now use `textwrap.indent(text, \"> \")`.", "pass"),
    ("changelog-heading-wrong", PREFIX_Q, "indent", "### Changed\n- Quoted excerpts now use `textwrap.dedent(text)`.", "fail"),
]
GRADER9_OPTION_KINDS = [
    ("option-number", CASE, FILL, "B", "Option 2", "pass"),
    ("option-number-wrong", CASE, FILL, "B", "Option 3", "fail"),
    ("option-number-alternative", CASE, FILL, "B", "Option 2, or maybe option 4", "fail"),
    ("none-of-them", CASE, FILL, "B", "A returns a list, C cuts the text and D adds a prefix, so none of them gives one string: **B**.", "pass"),
    ("code-answer-restated", Case("m", "Which parameter specifies the model?"), {"A": "output_key", "B": "model"}, "B", "The parameter is `model`, e.g. `model=\"gemini\"`.", "pass"),
    ("restated-word-plain", Case("m", "Which parameter specifies the model?"), {"A": "output_key", "B": "model"}, "B", "It specifies the model.", "fail"),
]
# session 13 (grader10), from fresh20-22: written with the rules by their author (counted apart)
GRADER10_IDENTIFIER_KINDS = [
    # ``It's tempting to say X, but …`` turns X down
    ("tempting-to-say", HEAPQ_Q, "heapreplace", "It's tempting to say heapreplace, but that one is the legacy helper; what you actually want here is heappushpop.", "fail"),
    ("tempting-to-say-other", PUSHPOP_Q, "heappushpop", "It's tempting to say heapreplace, but that one is the legacy helper; what you actually want here is heappushpop.", "pass"),
    # ``You'll see X …, but that's really …`` sets X aside
    ("seen-set-aside", HEAPQ_Q, "heapreplace", "You'll see `heapreplace` in the docs, but that's really the pop-first one; use heappushpop.", "fail"),
    ("seen-with-a-note", PUSHPOP_Q, "heappushpop", "You'll see `heappushpop` does exactly this, but note it returns the item.", "pass"),
    # ``… actually that undercounts`` takes the value back
    ("actually-undercounts", HANDS_Q, "2598960", "2,598,960... actually that undercounts, since order matters: 311,875,200.", "fail"),
    ("actually-confirms", HANDS_Q, "2598960", "There are 2,598,960 hands, and that is actually the count.", "pass"),
    # ``call split on the string``: the string's own method
    ("split-on-the-string", SHLEX_Q, "split", "Just call split on the string:\n\n```python\nargs = command_line.split()\n```", "fail"),
    ("shlex-split-on-the-string", SHLEX_Q, "split", "Call shlex.split on the string.", "pass"),
    # a closing list of cited sources offers no alternatives
    ("references-list", LOWEST_Q, "nsmallest", "Use `heapq.nsmallest(10, nums)` [1].\n\nReferences\n[1] heapq.nlargest, Python 3 documentation", "pass"),
    ("sources-list", ISCLOSE_Q, "isclose", "Use **`math.isclose(a, b)`** [1].\n\n**Sources**\n1. docs.python.org — math\n2. peps.python.org — PEP 485", "pass"),
    ("sources-list-wrong", ISCLOSE_Q, "isclose", "Compare with `==` [1].\n\nSources\n1. math.isclose, docs.python.org", "fail"),
    ("sources-word-in-prose", LOWEST_Q, "nsmallest", "Use heapq.nsmallest or sorted(nums)[:10].\nSources differ on which is faster.", "fail"),
    # a bot's name in a sign-off
    ("sign-off-bot", STATE_Q, "CallbackContext", "CallbackContext is what your callbacks receive.\n\nCheers,\nDevBot", "pass"),
    # a ticket's or scratchpad's label line
    ("label-resolution", QUOTE_Q, "quote", "Resolution:\nPlease use shlex.quote() on the name.", "pass"),
    ("label-scratchpad", HANDS_Q, "2598960", "Scratchpad:\nC(52,5) = 311,875,200 / 120\n        = 2,598,960", "pass"),
]
GRADER10_OPTION_KINDS = [
    ("not-listed", CASE, FILL, "B", "Strictly speaking you want `textwrap.dedent`, which isn't listed. The closest option is B.", "fail"),
    ("none-quite-right", CASE, FILL, "B", "None of these is quite right. I'd not pick any of A-D.", "fail"),
    ("none-of-them-then-choice", CASE, FILL, "B", "A returns a list and C cuts the text, so none of them gives one string: **B**.", "pass"),
]
# session 14 (lead), from fresh23-25 (replies to prompts that ask for the protocol line): written with the rules by
# their author (counted apart)
SESSION_Q = Case("se", "Where does the ADK define the data model for a `Session`?", ("google.adk.sessions.session.Session",))
LIMIT_N_Q = Case("rl", "What is the default recursion limit of CPython?", ())
LRU_Q = Case("lr", "Which functools decorator caches a function's results?", ("functools.lru_cache",))
DEDENT_Q = Case("dd", "Which textwrap function removes common leading whitespace?", ("textwrap.dedent",))
PROTOCOL_IDENTIFIER_KINDS = [
    # a declared answer offers one answer: a second one after "or" (in parentheses, translated, after "/") is a hedge
    ("declared-or-in-parentheses", LRU_Q, "lru_cache", "**Answer:** `lru_cache` (or `cache`)", "fail"),
    ("declared-or-maybe", DEDENT_Q, "dedent", "Answer: dedent, or maybe indent", "fail"),
    ("declared-oder", DEDENT_Q, "dedent", "Antwort: dedent oder indent", "fail"),
    ("declared-ou", DEDENT_Q, "dedent", "Réponse : dedent ou indent", "fail"),
    ("declared-or-its-qualified-form", DEDENT_Q, "dedent", "Answer: dedent (or textwrap.dedent)", "pass"),
    ("declared-or-a-clause", DEDENT_Q, "dedent", "Answer: dedent (or use indent to add a prefix instead)", "pass"),
    ("declared-alias-of", DEDENT_Q, "dedent", "Answer: `dedent` (an alias of nothing else).", "pass"),
    ("declared-or-under-a-condition", LRU_Q, "lru_cache", "Answer: lru_cache (or cache on Python 3.9+)", "fail"),
    ("declared-or-in-a-clause", LRU_Q, "lru_cache", "Answer: lru_cache (or wrap it by hand)", "pass"),
    # the protocol line's label translated
    ("declared-antwort", DEDENT_Q, "dedent", "Die Funktion entfernt gemeinsame Einrückung.\n\nAntwort: dedent", "pass"),
    ("declared-respuesta-wrong", DEDENT_Q, "dedent", "La función es indent... no.\n\nRespuesta final: indent", "fail"),
    ("declared-chinese", DEDENT_Q, "dedent", "答案：dedent", "pass"),
    # a LaTeX box is a declared answer, its separators as printed
    ("boxed-grouped", HANDS_Q, "2598960", "Final Answer: $\\boxed{2{,}598{,}960}$", "pass"),
    ("boxed-alone", HANDS_Q, "2598960", "$\\binom{52}{5} = \\boxed{2598960}$", "pass"),
    ("boxed-escaped-underscore", Case("os", "Which parameter makes an LlmAgent return structured output?", ("x.LlmAgent",)), "output_schema", "Set a Pydantic model as the schema.\n\n$\\boxed{output\\_schema}$", "pass"),
    ("boxed-wrong", HANDS_Q, "2598960", "$52 \\cdot 51 \\cdot 50 \\cdot 49 \\cdot 48 = \\boxed{311875200}$", "fail"),
    # a dotted path ending in lower case names the module, not the class
    ("module-path-for-class", SESSION_Q, "Session", "Answer: google.adk.sessions.session", "fail"),
    ("class-path-for-class", SESSION_Q, "Session", "Answer: google.adk.sessions.session.Session", "pass"),
    ("class-lower-case-bare", SESSION_Q, "Session", "Answer: session", "pass"),
    # a trailing "I can't give a definite number" disclaims the number
    ("cannot-give-definite", LIMIT_N_Q, "1000", "It is typically around 1000, but I can't give a definite number.", "fail"),
    ("definite-number", LIMIT_N_Q, "1000", "It is 1000 by default; sys.setrecursionlimit changes it.", "pass"),
    # an English word after an indefinite article and an adjective is the noun
    ("a-literal-quote", QUOTE_Q, "quote", "Wrap it in single quotes and write each inner one as a literal quote.", "fail"),
    ("the-quote-function", QUOTE_Q, "quote", "Use the shlex quote function: quote(name).", "pass"),
]
# session 14 (lead): an attack on the declared-alternative rule, written after it by its author (counted apart):
# four of its wrong rows passed on the rule as first written (the alternative followed by a comma or a condition)
NSMALL_Q = Case("ns", "Which heapq function finds the n smallest elements?", ("heapq.nsmallest",))
PROTOCOL_ATTACKS = [
    ("or-depending-on", NSMALL_Q, "nsmallest", "Answer: nsmallest or nlargest depending on order", "fail"),
    ("or-comma-if", NSMALL_Q, "nsmallest", "Answer: nsmallest (or nlargest, if you negate)", "fail"),
    ("or-whichever", NSMALL_Q, "nsmallest", "Answer: nsmallest or nlargest, whichever fits", "fail"),
    ("or-unless", NSMALL_Q, "nsmallest", "Answer: nsmallest (or nlargest unless sorted)", "fail"),
    ("or-the-same-called", NSMALL_Q, "nsmallest", "Answer: nsmallest (or heapq.nsmallest(n, it) to call it)", "pass"),
    ("or-more-precisely", NSMALL_Q, "nsmallest", "Answer: nsmallest or, more precisely, heapq.nsmallest", "pass"),
    ("or-use-a-clause", NSMALL_Q, "nsmallest", "Answer: nsmallest (or use a sort for tiny inputs)", "pass"),
    # another name called just as good after the declared answer
    ("works-too", NSMALL_Q, "nsmallest", "Answer: nsmallest; `sorted(x)[:n]` works too", "fail"),
    ("also-works-but-slower", NSMALL_Q, "nsmallest", "Answer: nsmallest (`sorted()` also works, but slower)", "pass"),
]
PROTOCOL_OPTION_ATTACKS = [
    ("would-also-work", CASE, FILL, "B", "Answer: B — A would also work", "fail"),
    ("also-works-after-a-stop", CASE, FILL, "B", "Answer: B. A would also work.", "fail"),
    ("text-also-works", CASE, FILL, "B", "Answer: B — fill; wrap also works", "fail"),
    ("the-key-alone", CASE, FILL, "B", "Answer: B — fill", "pass"),
]
# fmt: on


IDENTIFIER_RULES = {
    "s10": RULES_S10,
    "s11": RULES_S11,
    "s11-attacks2": RULES_S11_ATTACKS2,
    "fresh4": RULES_FRESH4,
    "fresh5": FRESH5_IDENTIFIER_KINDS,
    "fresh6": FRESH6_IDENTIFIER_KINDS,
    "fresh7": FRESH7_IDENTIFIER_KINDS,
    "fresh8": FRESH8_IDENTIFIER_KINDS,
    "fresh9": FRESH9_IDENTIFIER_KINDS,
    "fresh10": FRESH10_IDENTIFIER_KINDS,
    "fresh12": FRESH12_IDENTIFIER_KINDS,
    "fresh13": FRESH13_IDENTIFIER_KINDS,
    "grader7": GRADER7_IDENTIFIER_KINDS,
    "grader7-after": GRADER7_AFTER_RULES,
    "grader7-fallback": GRADER7_FALLBACK,
    "grader8": GRADER8_IDENTIFIER_KINDS,
    "grader8-after": GRADER8_AFTER_RULES,
    "grader9": GRADER9_IDENTIFIER_KINDS,
    "grader10": GRADER10_IDENTIFIER_KINDS,
    "protocol14": PROTOCOL_IDENTIFIER_KINDS,
    "protocol14-attacks": PROTOCOL_ATTACKS,
}
OPTION_RULES = {
    "s10": OPTION_RULES_S10,
    "s11": OPTION_RULES_S11,
    "fresh5": FRESH5_OPTION_KINDS,
    "fresh6": FRESH6_OPTION_KINDS,
    "fresh7": FRESH7_OPTION_KINDS,
    "grader7": GRADER7_OPTION_KINDS,
    "grader8": GRADER8_OPTION_KINDS,
    "grader9": GRADER9_OPTION_KINDS,
    "grader10": GRADER10_OPTION_KINDS,
    "protocol14-attacks": PROTOCOL_OPTION_ATTACKS,
}


@pytest.mark.parametrize(
    ("case", "expected", "reply", "outcome"),
    [pytest.param(*row[1:], id=f"{table}-{row[0]}") for table, rows in IDENTIFIER_RULES.items() for row in rows],
)
def test_identifier_rule(case: Case, expected: str, reply: str, outcome: str) -> None:
    result = _sm(expected).check(case, reply)
    assert result.outcome == outcome, (reply, result.detail)


@pytest.mark.parametrize(
    ("case", "options", "correct", "reply", "outcome"),
    [pytest.param(*row[1:], id=f"{table}-{row[0]}") for table, rows in OPTION_RULES.items() for row in rows],
)
def test_option_rule(case: Case, options: dict[str, str], correct: str, reply: str, outcome: str) -> None:
    result = _mc(correct, options).check(case, reply)
    assert result.outcome == outcome, (reply, result.detail)


def test_the_rule_tables_keep_every_example() -> None:
    """The tables were one test each until session 12 (99 identifier and 25 option examples), plus session 12's 35
    and 8 (grader4), 44 and 6 (grader5), 25 and 10 (grader6), 13, 12, 7, 8 and 8 identifier examples (lead, fresh8's, fresh9's, fresh10's, fresh12's and fresh13's kinds); none
    may be lost, and every id is unique."""
    ids = [f"{t}-{r[0]}" for t, rows in IDENTIFIER_RULES.items() for r in rows]
    option_ids = [f"{t}-{r[0]}" for t, rows in OPTION_RULES.items() for r in rows]
    assert len(ids) >= 99 + 35 + 44 + 25 + 13 + 12 + 7 + 8 + 8 + 18 and len(option_ids) >= 25 + 8 + 6 + 10 + 4
    assert len(ids) >= 290 + 46 and len(option_ids) >= 58 + 3  # the tables at session 13 (grader7), + grader8's rows
    assert len(set(ids)) == len(ids) and len(set(option_ids)) == len(option_ids)


def test_a_private_submodule_is_never_imported_to_check_a_qualifier() -> None:
    """``unittest.__main__`` would run the test runner and exit the process: a private or dunder submodule is never
    imported, so it never counts as the gold's real module (the lead, session 13)."""
    from deltap.checkers.grader import _submodule_defines

    assert not _submodule_defines("unittest.__main__", "unittest", "main")
    assert not _submodule_defines("json._private", "json", "JSONDecodeError")
    assert _submodule_defines("json.decoder", "json", "JSONDecodeError")
