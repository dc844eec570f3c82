"""Failure buckets on a hand-built corpus where each failure has one known cause."""

from __future__ import annotations

import pytest

from deltap.documents import Corpus, Document
from deltap.evaluation import analyze_failures

CORPUS = Corpus(
    [
        Document("rel_vocab", "automobile engine overheating remedies"),
        Document("rel_dist", "boundary layer separation on swept wings measured"),
        Document("dist", "boundary layer separation swept wings theory"),
        Document("rel_spec", "pressure data"),
        Document("n1", "pressure tables"),
        Document("n2", "pressure charts"),
        Document("n3", "wind tunnel results"),
        Document("ok", "heat transfer in slabs"),
        Document("bad", "heat transfer for pipes"),
    ]
)
QUERIES = {
    "vocab": "car motor running hot fix",
    "distract": "boundary layer separation swept wings",
    "spec": "pressure",
    "hit": "heat transfer slabs",
    "harm": "heat transfer slabs",
}
QRELS = {
    "vocab": {"rel_vocab": 1},
    "distract": {"rel_dist": 2},
    "spec": {"rel_spec": 1},
    "hit": {"ok": 1},
    "harm": {"ok": 1},
}
RUN = {
    "vocab": {"n3": 3.0, "n1": 2.0, "rel_vocab": 0.1},
    "distract": {"dist": 5.0, "n3": 1.0, "rel_dist": 0.5},
    "spec": {"n1": 1.00, "n2": 0.99, "rel_spec": 0.98},
    "hit": {"ok": 2.0, "bad": 1.0},
    "harm": {"bad": 2.0, "n3": 1.5, "ok": 1.0},
}


def test_each_failure_lands_in_its_bucket_with_evidence() -> None:
    report = analyze_failures(QRELS, {"bm25": RUN}, QUERIES, CORPUS, k=2, harmful={"harm": {"bad"}})
    by_query = {f.query_id: f for f in report.failures}
    assert set(by_query) == {"vocab", "distract", "spec", "harm"}  # "hit" found its document
    assert by_query["vocab"].bucket == "vocabulary_mismatch"
    assert by_query["vocab"].evidence["best_relevant_coverage"] == 0.0
    assert by_query["distract"].bucket == "distractor_overlap"
    assert by_query["distract"].evidence["distractor"] == "dist"
    assert by_query["distract"].evidence["distractor_rank"] == 1
    assert by_query["spec"].bucket == "specificity_gap"
    assert by_query["spec"].evidence["query_terms"] == 1
    assert by_query["harm"].bucket == "distractor_overlap"
    assert by_query["harm"].evidence["harmful_in_top_k"] == ["bad"]
    counts = report.counts()["bm25"]
    assert counts == {"vocabulary_mismatch": 1, "distractor_overlap": 2, "specificity_gap": 1, "unexplained": 0}
    assert report.n_queries == {"bm25": 5}
    table = report.to_table()
    assert "failures (no relevant doc in top K)" in table and "4/5" in table
    assert report.to_dict()["counts"]["bm25"]["distractor_overlap"] == 2


def test_counts_per_retriever() -> None:
    perfect = {q: dict.fromkeys(docs, 10.0) for q, docs in QRELS.items()}
    report = analyze_failures(QRELS, {"bm25": RUN, "oracle": perfect}, QUERIES, CORPUS, k=2)
    assert sum(report.counts()["oracle"].values()) == 0
    assert sum(report.counts()["bm25"].values()) == 4


def test_missing_query_text_is_an_error() -> None:
    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match="no text"):
        analyze_failures(QRELS, {"bm25": RUN}, {"hit": "x"}, CORPUS, k=2)
