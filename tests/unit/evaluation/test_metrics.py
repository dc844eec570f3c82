"""Metrics by hand-computed values, measure parsing, input validation and the query-alignment rules."""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import EvaluationWarning, Measure, evaluate, parse_metric, parse_metrics

LOG2_3 = math.log2(3)
LOG2_4 = 2.0

# q1 ranks: d3 (grade 0), d1 (grade 2), d9 (unjudged), d2 (grade 1); d4 (grade 3) is never retrieved.
QRELS = {"q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 3}, "q2": {"x": 1}}
RUN = {"q1": {"d3": 0.9, "d1": 0.8, "d9": 0.7, "d2": 0.6}, "q2": {"y": 2.0, "x": 1.0}}


def _pq(metrics: list[str], qrels: dict = QRELS, run: dict = RUN, **kw: object) -> dict[str, dict[str, float]]:
    with warnings.catch_warnings():  # P(rel=2): q2 has no grade-2 document (warned; tested below)
        warnings.simplefilter("ignore", EvaluationWarning)
        return evaluate(qrels, run, metrics, n_resamples=0, **kw).per_query()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("metric", "q1", "q2"),
    [
        pytest.param("hit_rate@1", 0.0, 0.0, id="hit_rate@1"),
        pytest.param("hit_rate@2", 1.0, 1.0, id="hit_rate@2"),
        pytest.param("recall@2", 1 / 3, 1.0, id="recall@2"),
        pytest.param("recall@4", 2 / 3, 1.0, id="recall@4"),
        pytest.param("P@2", 0.5, 0.5, id="P@2"),
        pytest.param("P@10", 0.2, 0.1, id="P@10-denominator-is-k"),
        pytest.param("P(rel=2)@2", 0.5, 0.0, id="P-rel2"),
        pytest.param("MRR", 0.5, 0.5, id="mrr"),
        pytest.param("MRR@1", 0.0, 0.0, id="mrr-cut"),
        pytest.param("MAP", (1 / 2 + 2 / 4) / 3, 0.5, id="map"),
        pytest.param("MAP@2", (1 / 2) / 3, 0.5, id="map-cut"),
        pytest.param("R-prec", 1 / 3, 0.0, id="rprec"),
        pytest.param("set_recall@2", 1 / 3, 1.0, id="set-recall-falls-back-to-recall"),
        pytest.param(
            "ndcg@3", (2 / LOG2_3) / (3 + 2 / LOG2_3 + 1 / LOG2_4), (1 / LOG2_3) / 1.0, id="ndcg@3-linear-gain"
        ),
        pytest.param(
            "ndcg(gain=exp)@3",
            (3 / LOG2_3) / (7 + 3 / LOG2_3 + 1 / LOG2_4),
            (1 / LOG2_3) / 1.0,
            id="ndcg@3-exp-gain",
        ),
    ],
)
def test_metric_values_by_hand(metric: str, q1: float, q2: float) -> None:
    got = _pq([metric])
    key = str(parse_metric(metric))
    assert got["q1"][key] == pytest.approx(q1, abs=1e-12)
    assert got["q2"][key] == pytest.approx(q2, abs=1e-12)


def test_set_recall_uses_best_coalition() -> None:
    coalitions = {"q1": [{"d1", "d9"}, {"d4", "d2"}]}
    got = _pq(["set_recall@2", "set_recall@4"], coalitions=coalitions)
    # {d1, d9}: d1 at 2, d9 at 3 -> 1/2 at K=2, 1 at K=4; {d4, d2}: 0 and 1/2.
    assert got["q1"]["set_recall@2"] == pytest.approx(0.5)
    assert got["q1"]["set_recall@4"] == pytest.approx(1.0)
    assert got["q2"]["set_recall@2"] == pytest.approx(1.0)  # no coalition: recall


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("ndcg@10", Measure("ndcg", 10), id="ndcg"),
        pytest.param("nDCG_cut_10", Measure("ndcg", 10), id="trec-ndcg"),
        pytest.param("P_5", Measure("precision", 5), id="trec-P"),
        pytest.param("precision@5", Measure("precision", 5), id="precision"),
        pytest.param("P(rel=2)@5", Measure("precision", 5, (("rel", 2),)), id="rel-param"),
        pytest.param("P(rel=1)@5", Measure("precision", 5), id="default-param-dropped"),
        pytest.param("success@3", Measure("hit_rate", 3), id="success-alias"),
        pytest.param("recip_rank", Measure("mrr"), id="recip_rank"),
        pytest.param("MRR@10", Measure("mrr", 10), id="mrr-cut"),
        pytest.param("map_cut_100", Measure("map", 100), id="map-cut"),
        pytest.param("Rprec", Measure("rprec"), id="rprec"),
        pytest.param(" recall @ 100 ", Measure("recall", 100), id="spaces"),
    ],
)
def test_parse_metric(text: str, expected: Measure) -> None:
    m = parse_metric(text)
    assert m == expected
    assert parse_metric(str(m)) == m  # round trip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("ndgc@10", "Did you mean", id="typo"),
        pytest.param("recall", "needs a cutoff", id="missing-k"),
        pytest.param("R-prec@5", "takes no cutoff", id="forbidden-k"),
        pytest.param("P@0", "K must be >= 1", id="k-zero"),
        pytest.param("P(rel=0)@5", "integer >= 1", id="rel-zero"),
        pytest.param("ndcg(rel=2)@5", "unknown parameter", id="ndcg-has-no-rel"),
        pytest.param("__import__('os')", "cannot parse", id="no-eval"),
    ],
)
def test_parse_metric_errors(text: str, message: str) -> None:
    with pytest.raises(DeltapError, match=message.replace("(", r"\(")):
        parse_metric(text)


def test_parse_metrics_splits_commas_outside_parentheses() -> None:
    assert [str(m) for m in parse_metrics("P(rel=2)@5, MAP,ndcg@10,map")] == ["P(rel=2)@5", "MAP", "ndcg@10"]


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        pytest.param({"q1": {"d1": 1.5}}, "integers >= 0", id="fractional"),
        pytest.param({"q1": {"d1": -1}}, "integers >= 0", id="negative"),
        pytest.param({"q1": {"d1": "2"}}, "integers >= 0", id="string"),
        pytest.param({"q1": {"d1": True}}, "integers >= 0", id="bool"),
        pytest.param({1: {"d1": 1}}, "must be strings", id="int-query-id"),
    ],
)
def test_bad_qrels_are_rejected_with_the_entry(qrels: dict, message: str) -> None:
    with pytest.raises(DeltapError, match=message):
        evaluate(qrels, {"q1": {"d1": 1.0}}, ["P@1"], n_resamples=0)


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_non_finite_scores_are_rejected_naming_the_pair(bad: float) -> None:
    with pytest.raises(DeltapError, match=r"\('q1', 'd2'\)"):
        evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0, "d2": bad}}, ["P@1"], n_resamples=0)


def test_no_common_query_id_is_an_error_not_zeros() -> None:
    with pytest.raises(DeltapError, match="no query id of run matches the qrels.*'1'.*'q1'"):
        evaluate({"1": {"d": 1}}, {"q1": {"d": 1.0}}, ["P@1"], n_resamples=0)


def test_int_run_keys_are_an_error() -> None:
    with pytest.raises(DeltapError, match="must be strings"):
        evaluate({"1": {"d": 1}}, {1: {"d": 1.0}}, ["P@1"], n_resamples=0)  # type: ignore[dict-item]


def test_missing_and_empty_queries_warn_and_score_zero_by_default() -> None:
    qrels = {"a": {"d": 1}, "b": {"d": 1}, "c": {"d": 0}}
    run = {"a": {"d": 1.0}, "c": {"d": 1.0}, "z": {"d": 1.0}}
    with pytest.warns(EvaluationWarning) as record:
        result = evaluate(qrels, run, ["P@1"], n_resamples=0)
    messages = " | ".join(str(w.message) for w in record)
    assert "missing from run" in messages and "'b'" in messages
    assert "no relevant document" in messages and "'c'" in messages
    assert "no judgements" in messages and "'z'" in messages
    assert result.query_ids == ("a", "b", "c")
    assert result.mean("P@1") == pytest.approx(1 / 3)
    assert len(result.notes) == 3


def test_skip_and_error_policies() -> None:
    qrels = {"a": {"d": 1}, "b": {"d": 1}, "c": {"d": 0}}
    run = {"a": {"d": 1.0}, "c": {"d": 1.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        result = evaluate(qrels, run, ["P@1"], n_resamples=0, on_missing="skip", on_empty="skip")
    assert result.query_ids == ("a",)
    assert result.mean("P@1") == 1.0
    with pytest.raises(DeltapError, match="missing from run: 'b'"):
        evaluate(qrels, run, ["P@1"], n_resamples=0, on_missing="error", on_empty="skip")
    with pytest.raises(DeltapError, match="no relevant document: 'c'"):
        evaluate(qrels, run, ["P@1"], n_resamples=0, on_missing="skip", on_empty="error")


def test_caller_dicts_are_not_mutated() -> None:
    qrels = {"q1": {"d1": 2, "d2": 0}, "q2": {"x": 1}}
    run = {"q1": {"d1": 0.5, "d3": 0.5}, "q3": {"x": 1.0}}
    before = (copy.deepcopy(qrels), copy.deepcopy(run))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        evaluate(qrels, run, ["ndcg@10", "MAP", "set_recall@5"], coalitions={"q1": [{"d1"}]})
    assert (qrels, run) == before


def test_bootstrap_ci_is_seeded_and_brackets_the_mean() -> None:
    rng = np.random.default_rng(3)
    qrels = {f"q{i}": {"d1": 1} for i in range(200)}
    run = {f"q{i}": {"d1": float(rng.random()), "d2": float(rng.random())} for i in range(200)}
    a = evaluate(qrels, run, ["MRR"], seed=7)
    b = evaluate(qrels, run, ["MRR"], seed=7)
    c = evaluate(qrels, run, ["MRR"], seed=8)
    assert np.array_equal(a.ci, b.ci)
    assert not np.array_equal(a.ci, c.ci)
    lo, hi = a.ci[0]
    assert lo < a.mean("MRR") < hi
    # MRR here is 1 or 1/2 with p = 1/2 each: sd 0.25, so the 95% interval is about mean ± 1.96 * 0.25 / sqrt(200)
    assert hi - lo == pytest.approx(2 * 1.96 * 0.25 / math.sqrt(200), rel=0.15)


def test_result_renders_and_serialises() -> None:
    result = evaluate(QRELS, RUN, ["ndcg@10", "P(rel=2)@5"], n_resamples=200)
    assert "ndcg@10" in result.to_table() and "P(rel=2)@5" in result.to_markdown()
    assert r"P(rel=2)@5" in result.to_latex()
    d = result.to_dict()
    assert d["per_query"]["q2"]["P(rel=2)@5"] == 0.0
    assert result.per_query_tsv().splitlines()[0] == "query_id\tndcg@10\tP(rel=2)@5"
    with pytest.raises(KeyError, match="was not computed"):
        result["MAP"]
    assert result["ndcg@10"].flags.writeable is False
