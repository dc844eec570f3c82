"""One scoring rule everywhere (issue 36): the end-to-end validity table reads the questions every qrels judges, as
``deltap evaluate`` / ``compare`` do, so their means agree; a mined question whose candidates are all undecided (no
judgement) is left out and named, never scored 0."""

import numpy as np
import pytest

from deltap.endtoend.config import EndToEndConfig
from deltap.endtoend.judged import judged_by_all, note_left_out
from deltap.endtoend.results import summarize
from deltap.endtoend.systems import System
from deltap.endtoend.validity import metric_validity
from deltap.evaluation import evaluate
from deltap.evaluation.ranking import EvaluationWarning

CASES = ["q1", "q2", "q3", "q4"]
# q4 was mined but every candidate stayed undecided: the mined qrels do not hold it at all
MINED = {"q1": {"a": 2, "x": 0}, "q2": {"b": 1}, "q3": {"c": 0}}
GOLD = {q: {d: 1} for q, d in zip(CASES, "abcd", strict=True)}
SYSTEMS = [
    System("good", "retriever", {"q1": ["a", "x"], "q2": ["b"], "q3": ["c"], "q4": ["d"]}),
    System("bad", "retriever", {"q1": ["x", "z"], "q2": ["z"], "q3": ["z"], "q4": ["z"]}),
]


def _result():  # type: ignore[no-untyped-def]
    values = np.array([[0.9, 0.1], [0.8, 0.3], [0.5, 0.4], [0.7, 0.2]])
    return summarize(CASES, [s.name for s in SYSTEMS], values, EndToEndConfig(k=2, n_resamples=50), [])


def test_the_validity_table_uses_the_questions_every_qrels_judges() -> None:
    judgements = {"gold": GOLD, "deltap": MINED}
    judged, left_out = judged_by_all(_result(), judgements)
    assert left_out == ["q4"] and [CASES[i] for i in judged.complete] == ["q1", "q2", "q3"]
    validity = metric_validity(judged, SYSTEMS, judgements, ["ndcg@2"], n_resamples=50)
    note_left_out(validity, left_out, judgements)
    assert validity["cases"] == 3 and validity["questions_left_out"] == ["q4"]
    assert any("1 question(s) left out of the validity table" in n and "q4" in n for n in validity["notes"])
    # the table's mean on the mined qrels is deltap evaluate's mean on the same qrels (q3: judged, no relevant: 0)
    row = next(r for r in validity["rows"] if r["qrels"] == "deltap")
    for system in SYSTEMS:
        run = {q: {d: float(10 - i) for i, d in enumerate(system.top(q, 2))} for q in MINED}
        with pytest.warns(EvaluationWarning, match="'q3'"):  # named, as compare names it
            expected = evaluate(MINED, run, ["ndcg@2"], n_resamples=0).mean("ndcg@2")
        assert row["means"][system.name] == pytest.approx(expected, abs=1e-12)


def test_a_qrels_that_judges_nothing_cuts_nothing() -> None:
    judged, left_out = judged_by_all(_result(), {"gold": {}, "deltap": MINED})
    assert left_out == ["q4"]
    judged, left_out = judged_by_all(_result(), {"gold": GOLD})
    assert left_out == [] and judged.complete == [0, 1, 2, 3]
