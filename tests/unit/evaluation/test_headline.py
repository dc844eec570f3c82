"""The answer first (issue 36): which system is better, by how much, how sure, and how many questions would settle it;
and the shared notes of a comparison printed once."""

import math
import warnings

import numpy as np
import pytest

from deltap.evaluation import compare
from deltap.evaluation.headline import Contrast, clause_lines, headline, questions_to_settle


def test_questions_to_settle_is_the_paired_normal_approximation() -> None:
    # n = (z_.975 + z_.80)^2 sd^2 / diff^2 = 7.849 * 0.354^2 / 0.125^2 = 62.95 -> 63
    assert questions_to_settle(0.125, 0.354) == 63
    assert questions_to_settle(0.0, 0.3) is None and questions_to_settle(0.1, 0.0) is None
    assert questions_to_settle(0.1, None) is None and questions_to_settle(math.nan, 0.2) is None


def test_none_shown_better_names_the_leader_and_what_would_settle_it() -> None:
    lines = headline(
        "nDCG@10", 6, {"bm25": 0.2, "dense": 0.5, "hybrid": 0.4},
        [Contrast("dense", "bm25", 0.3, 0.4, 0.6), Contrast("hybrid", "bm25", 0.2, 0.5, 0.5),
         Contrast("dense", "hybrid", 0.1, None, 0.4)],
    )  # fmt: skip
    assert lines[0] == (
        "None of dense, hybrid, bm25 is shown better on nDCG@10 over 6 questions: dense 0.500, hybrid 0.400, "
        "bm25 0.200 (dense vs bm25: corrected p = 0.4)."
    )
    assert lines[1].startswith("About 126 questions would settle the difference of 0.100 in nDCG@10 between dense")


def test_a_system_shown_better_than_every_other() -> None:
    lines = headline(
        "success", 40, {"a": 0.8, "b": 0.5}, [Contrast("b", "a", -0.3, 0.001, 0.4)], test="randomization test"
    )
    assert lines == [
        "a is better than b on success: 0.800 vs b 0.500 (+0.300, corrected p = 0.001, randomization test), over 40 questions."
    ]


def test_compare_ends_with_the_answer_and_prints_a_shared_note_once() -> None:
    rng = np.random.default_rng(0)
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(30)} | {"empty": {"x": 0}}
    runs = {
        "good": {q: {f"d{q[1:]}": 2.0, "x": 1.0} for q in qrels},
        "noisy": {q: {f"d{q[1:]}": float(rng.random()), "x": 0.5} for q in qrels},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare(qrels, runs, ["ndcg@10"], baseline="good")
    text = result.to_compact()
    assert sum("have no relevant document" in n for n in result.notes) == 1  # the same note for both runs: once
    tail = " ".join(text.split()[-50:])
    assert "Scoring rule: a question the qrels judge without a relevant document" in tail  # last: the rule
    assert "questions would settle" in text or "is better than" in text
    assert result.to_dict()["headline"] == result.headline()
    assert result.to_dict()["systems"]["noisy"]["tests"]["ndcg@10"]["sd_delta"] == pytest.approx(
        float(np.std(result.results["noisy"]["ndcg@10"] - result.results["good"]["ndcg@10"], ddof=1))
    )


def test_clause_lines_keep_every_word() -> None:
    text = "Over 4 systems and 8 questions: first clause (with; inner [a; b]); second: part; third."
    lines = clause_lines(text, width=30)
    assert lines[0] == "Over 4 systems and 8 questions:"

    def squash(t: str) -> str:
        return "".join(t.split()).replace(";", "")

    assert squash("".join(x.removeprefix("- ") for x in lines)) == squash(text)  # only the layout changes
    assert lines[1:] == [
        "- first clause (with; inner",
        "  [a; b])",
        "- second: part",
        "- third.",
    ]  # no split in brackets
