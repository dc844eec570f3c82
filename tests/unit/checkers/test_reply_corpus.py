"""The labelled reply corpus (issue 34, item 3): the checkers score replies as a person does.

``tests/data/replies/`` holds replies of the local model and replies in hosted chat models' styles, each with the
verdict a person gives it (written before the grammar of issue 34), and a fresh set written after the grammar, blind
to it. The goal: right answers failed <= 2 %, wrong answers passed 0 (``benchmarks/bench_checkers.py`` prints the
full table).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker

DATA = Path(__file__).resolve().parents[2] / "data" / "replies"


def _cases() -> dict[str, Case]:
    raw = yaml.safe_load((DATA / "cases.yaml").read_text(encoding="utf-8"))["cases"]
    out = {}
    for case_id, c in raw.items():
        gold = tuple(c.get("gold") or ())
        if c["kind"] == "string_match":
            spec = CheckerSpec("string_match", {"answers": list(c["answers"])})
            out[case_id] = Case(case_id, c["question"], gold, spec, c["answers"][0], "api_understanding")
        else:
            options = {str(k): str(v) for k, v in c["options"].items()}
            spec = CheckerSpec("multiple_choice", {"correct": c["correct"], "options": options})
            out[case_id] = Case(
                case_id, c["question"], gold, spec, c["correct"], "multiple_choice", {"options": options}
            )
    return out


CASES = _cases()


def _replies(name: str) -> list[dict[str, Any]]:
    path = DATA / f"{name}.yaml"
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["replies"]) if path.exists() else []


def _errors(name: str, grammar: str = "grader") -> tuple[list[str], list[str], int, int]:
    """Right answers failed and wrong answers passed (as ``case: reply`` lines), and how many right / wrong."""
    right_failed, wrong_passed, right, wrong = [], [], 0, 0
    for r in _replies(name):
        case = CASES[r["case"]]
        spec = CheckerSpec(case.checker.kind, {**dict(case.checker.params), "grammar": grammar})
        verdict = make_checker(spec).check(case, str(r["reply"]))
        line = f"{r['case']}: {r['reply']!r} -> {verdict.status} ({verdict.detail})"
        if r["verdict"] == "pass":
            right += 1
            if not verdict.passed:
                right_failed.append(line)
        else:
            wrong += 1
            if verdict.passed:
                wrong_passed.append(line)
    return right_failed, wrong_passed, right, wrong


#: every set of replies; all but the two attack sets are training sets now (their misses were read while writing rules)
SETS = (
    "local",
    "localbench",
    "hosted",
    "fresh",
    "fresh2",
    "fresh3",
    "fresh4",
    "fresh5",
    "fresh6",
    "fresh7",
    "fresh8",
    "fresh9",
    "fresh10",
    "fresh11",
    "fresh12",
    "fresh13",
    "classes",
    "attacks",
    "attacks2",
)


def test_every_reply_names_a_known_case_and_a_verdict() -> None:
    for name in SETS:
        for r in _replies(name):
            assert r["case"] in CASES, r
            assert r["verdict"] in ("pass", "fail"), r
            assert isinstance(r["reply"], str)


@pytest.mark.parametrize("name", ["local", "localbench", "hosted", "fresh", "fresh2", "fresh3", "classes"])
def test_the_grader_reading_meets_the_goal_on_the_corpus(name: str) -> None:
    """Right answers failed <= 2 %, wrong answers passed 0. The fresh sets were written blind to the rules of their
    day and measured once (benchmarks/README.md keeps those figures); the rules were then revised on their misses,
    so here they are training sets like the others. ``classes`` (session 11) holds the four kinds of reply fresh3's
    misses stood for — equal alternatives, retractions, tables, conclusions — labelled before their rules."""
    right_failed, wrong_passed, right, wrong = _errors(name)
    if not right + wrong:
        pytest.skip(f"no {name} set")
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_third_fresh_set_scores_as_a_person_does() -> None:
    """fresh3 (80 replies, written blind to session 10's rules) measured 2/41 right failed and 2/39 wrong passed
    before session 11's rules (benchmarks/README.md); it is a training set since, and scores 0/0."""
    right_failed, wrong_passed, right, wrong = _errors("fresh3")
    assert (right, wrong) == (41, 39)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert not right_failed, "right answers failed:\n" + "\n".join(right_failed)


def test_the_fourth_fresh_set_scores_as_a_person_does() -> None:
    """fresh4 (147 replies, written blind) was measured once by the lead at 10/75 right failed and 5/72 wrong passed
    (13.3 %/6.9 %) before it was used for rules; session 11 (helper "grader3") revised the rules on the kinds of its
    misses, so it is a training set since (no blind figure exists for those rules). One miss is left, a kind no rule
    reads yet: a small model's rambling where the answer ``model`` is a common word next to another name (right,
    fails); an option's text paraphrased without its letter is read since session 12 (grader6), and a number offered
    only as an example (``such as 128``, beside a wrong default) is no answer since session 12 (lead)."""
    right_failed, wrong_passed, right, wrong = _errors("fresh4")
    assert (right, wrong) == (75, 72)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 1, "right answers failed:\n" + "\n".join(right_failed)


def test_the_fifth_fresh_set_scores_as_a_person_does() -> None:
    """fresh5 (168 replies, written blind) was measured once by the lead at 8/90 right failed and 6/78 wrong passed
    (8.9 %/7.7 %) before it was used for rules; session 12 (helper "grader4") revised the rules on the kinds of its
    misses, so it is a training set since (no blind figure exists for those rules)."""
    right_failed, wrong_passed, right, wrong = _errors("fresh5")
    assert (right, wrong) == (90, 78)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_sixth_fresh_set_scores_as_a_person_does() -> None:
    """fresh6 (252 replies, written blind) was measured once by the lead on grader4's rules at 6/130 right failed and
    7/122 wrong passed (4.6 %/5.7 %; 9/130 and 9/122 on the rules before grader4) before it was used for rules;
    session 12 (helper "grader5") revised the rules on the kinds of its misses, so it is a training set since (no
    blind figure exists for those rules)."""
    right_failed, wrong_passed, right, wrong = _errors("fresh6")
    assert (right, wrong) == (130, 122)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_seventh_fresh_set_scores_as_a_person_does() -> None:
    """fresh7 (194 replies, written blind) was measured once by the lead on grader5's rules at 16/99 right failed and
    1/95 wrong passed (16.2 %/1.1 %; the same right-failed count on grader4's and session 11's rules) before it was
    used for rules; session 12 (helper "grader6") revised the rules on the kinds of its misses, so it is a training
    set since (no blind figure exists for those rules)."""
    right_failed, wrong_passed, right, wrong = _errors("fresh7")
    assert (right, wrong) == (99, 95)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_eighth_fresh_set_scores_as_a_person_does() -> None:
    """fresh8 (153 replies, written blind) was measured once by the lead on grader6's rules at 1/78 right failed and
    2/75 wrong passed (1.3 %/2.7 %; 2/78 and 2/75 on grader5's) before it was used for rules; the lead then revised
    the rules on the kinds of its three misses (session 12), so it is a training set since."""
    right_failed, wrong_passed, right, wrong = _errors("fresh8")
    assert (right, wrong) == (78, 75)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_ninth_fresh_set_scores_as_a_person_does() -> None:
    """fresh9 (242 replies, written blind) was measured once by the lead on the rules after fresh8's kinds at 5/127
    right failed and 0/115 wrong passed (3.9 %/0.0 %) before it was used for rules; the lead then revised the rules on
    the kinds of its misses (session 12), so it is a training set since."""
    right_failed, wrong_passed, right, wrong = _errors("fresh9")
    assert (right, wrong) == (127, 115)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_tenth_fresh_set_scores_as_a_person_does() -> None:
    """fresh10 (161 replies, written blind) was measured once by the lead on the rules after fresh9's kinds at 2/89
    right failed and 0/72 wrong passed (2.2 %/0.0 %) before it was used for rules; the lead then revised the rules on
    the kinds of its two misses (session 12), so it is a training set since."""
    right_failed, wrong_passed, right, wrong = _errors("fresh10")
    assert (right, wrong) == (89, 72)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_eleventh_fresh_set_scores_as_a_person_does() -> None:
    """fresh11 (168 replies, written blind) was measured once by the lead on session 12's final rules at 1/88 right
    failed and 0/80 wrong passed (1.1 %/0.0 %; the same after the last rule, a number given only as an example, which
    came from fresh4). Registered to hold that figure; its one miss (an 8B model's drift naming `json.loads` after
    the answer) is not read as a kind."""
    right_failed, wrong_passed, right, wrong = _errors("fresh11")
    assert (right, wrong) == (88, 80)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 0.02 * right, "right answers failed:\n" + "\n".join(right_failed)


def test_the_twelfth_fresh_set_scores_as_a_person_does() -> None:
    """fresh12 (192 replies, written blind) was measured once by the lead on session 12's final rules at 7/102 right
    failed and 0/90 wrong passed (6.9 %/0.0 %; retrieval bots citing source files were most of it) before it was used
    for rules; the lead then read two of its kinds, so it is a training set since. Two right answers still fail,
    kinds no rule reads: a signature shown after "the one taking `prefix` plus an optional `predicate` … is indent",
    and "`str.title()` also capitalizes after apostrophes …, so the cleaner tool … `string.capwords(…)`"."""
    right_failed, wrong_passed, right, wrong = _errors("fresh12")
    assert (right, wrong) == (102, 90)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 2, "right answers failed:\n" + "\n".join(right_failed)


def test_the_thirteenth_fresh_set_scores_as_a_person_does() -> None:
    """fresh13 (165 replies, written blind) was measured once by the lead on the rules after fresh12's kinds at 5/86
    right failed and 1/79 wrong passed (5.8 %/1.3 %) before it was used for rules; the lead then read three of its
    kinds (an agent's step lines and JSON-lines steps, a builtin called where the question says its name in
    English), so it is a training set since. Three right answers still fail, kinds no rule reads: a number with its
    derivation after it (``**2,598,960** … C(52, 5) = 52! / …``), a keyword argument in a snippet with its comment,
    and an option letter after a code line (``→ A``)."""
    right_failed, wrong_passed, right, wrong = _errors("fresh13")
    assert (right, wrong) == (86, 79)
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 3, "right answers failed:\n" + "\n".join(right_failed)


def test_the_attacks_on_session_11s_rules() -> None:
    """``attacks.yaml``: replies that look like an alternative, a retraction, a table or a conclusion but should go
    the other way, labelled before the rules (counted apart). No wrong answer passes; one right answer fails, a
    known miss: ```json.loads` — wait, you're going the other way. `json.dumps(d)` `` (a bare ``wait`` is not read
    as a retraction, because ``X. Wait — make sure the inputs are sorted`` is not one)."""
    right_failed, wrong_passed, right, wrong = _errors("attacks")
    assert right + wrong >= 40
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 1, "right answers failed:\n" + "\n".join(right_failed)


def test_the_second_attack_on_session_11s_rules() -> None:
    """``attacks2.yaml`` (30 replies written after the rules by their author, labelled before a checker ran on them;
    first measured 5/24 right failed and 1/6 wrong passed (benchmarks/README.md), then four of its
    kinds of miss were mended): no wrong answer passes; one right answer fails, a known miss: ``That leaves
    `heappushpop` and `heapreplace`; the one that pops first is `heapreplace`.`` (``the one that … is X`` is not read
    as a conclusion, because after an answer it is usually an explanation of another name). Session 11's grader3 read
    ``The one that … is X`` opening a sentence as a conclusion (a kind of fresh4's misses), which mends it: 0/24."""
    right_failed, wrong_passed, right, wrong = _errors("attacks2")
    assert right + wrong == 30
    assert not wrong_passed, "wrong answers passed:\n" + "\n".join(wrong_passed)
    assert len(right_failed) <= 1, "right answers failed:\n" + "\n".join(right_failed)
