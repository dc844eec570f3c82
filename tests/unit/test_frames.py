"""Runs and qrels round-trip through pandas DataFrames in the shape ir_measures and ranx use."""

from __future__ import annotations

import math

import pytest

import deltap
from deltap.errors import DeltapError

pd = pytest.importorskip("pandas")

RUN = {"q1": {"d1": 2.5, "d2": 1.0, "d3": 1.0}, "2": {"d9": 0.25}}
QRELS = {"q1": {"d1": 2, "d4": 0}, "2": {"d9": 1}}


def test_run_round_trip_keeps_every_score_and_the_trec_order() -> None:
    df = deltap.run_to_dataframe(RUN)
    assert list(df.columns) == ["query_id", "doc_id", "score"]
    assert df.values.tolist() == [["q1", "d1", 2.5], ["q1", "d3", 1.0], ["q1", "d2", 1.0], ["2", "d9", 0.25]]
    assert deltap.load_run(df) == RUN


def test_qrels_round_trip_with_integer_grades() -> None:
    df = deltap.qrels_to_dataframe(QRELS)
    assert list(df.columns) == ["query_id", "doc_id", "relevance"]
    assert str(df["relevance"].dtype) == "int64"
    assert deltap.load_qrels(df) == QRELS


def test_frames_evaluate_like_the_dicts_they_came_from() -> None:
    run_df, qrels_df = deltap.run_to_dataframe(RUN), deltap.qrels_to_dataframe(QRELS)
    a = deltap.evaluate(QRELS, RUN, ["ndcg@10", "MRR@10"], n_resamples=0)
    b = deltap.evaluate(qrels_df, run_df, ["ndcg@10", "MRR@10"], n_resamples=0)
    assert a.means == b.means and a.means["ndcg@10"] > 0


def test_aliases_and_numeric_ids_as_ranx_and_pandas_produce_them() -> None:
    df = pd.DataFrame({"q_id": [1, 1, 2], "docno": ["a", "b", "c"], "score": [0.5, 0.25, 1.0]})
    assert deltap.load_run(df) == {"1": {"a": 0.5, "b": 0.25}, "2": {"c": 1.0}}
    qdf = pd.DataFrame({"qid": [1.0, 2.0], "doc_id": ["a", "c"], "rel": [1, 0]})  # float ids after a merge with NaN
    assert deltap.load_qrels(qdf) == {"1": {"a": 1}, "2": {"c": 0}}


@pytest.mark.parametrize(
    ("frame", "loader", "message"),
    [
        pytest.param(
            {"query": ["q"], "doc_id": ["d"], "score": [1.0]}, "run", "no query id column", id="no-query-column"
        ),
        pytest.param(
            {"query_id": ["q"], "doc_id": ["d"], "score": [math.nan]},
            "run",
            "row 0: score of ('q', 'd') must be a finite",
            id="nan-score",
        ),
        pytest.param(
            {"query_id": ["q", "q"], "doc_id": ["d", "d"], "score": [1.0, 2.0]},
            "run",
            "row 1: ('q', 'd') appears twice",
            id="duplicate-pair",
        ),
        pytest.param(
            {"query_id": ["q"], "doc_id": ["d"], "relevance": [0.5]},
            "qrels",
            "must be an integer, got 0.5",
            id="fractional-grade",
        ),
        pytest.param({"query_id": ["q"], "doc_id": ["d"]}, "qrels", "no relevance grade column", id="no-grade-column"),
    ],
)
def test_bad_frames_are_rejected_with_the_row(frame: dict, loader: str, message: str) -> None:
    load = deltap.load_run if loader == "run" else deltap.load_qrels
    with pytest.raises(DeltapError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load(pd.DataFrame(frame))


def test_the_callers_run_is_not_changed() -> None:
    run = {"q": {"b": 1.0, "a": 1.0}}
    deltap.run_to_dataframe(run)
    assert list(run["q"]) == ["b", "a"]
