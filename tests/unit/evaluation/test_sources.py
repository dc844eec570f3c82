"""Judgements with side information from a deltap verified dataset YAML and from qrels JSONL."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from deltap.evaluation import EvaluationWarning, evaluate, load_judgements


def test_dataset_yaml_gives_qrels_queries_coalitions_and_harmful(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    data = {
        "metadata": {"tool": "deltap"},
        "pairs": [
            {
                "id": "c1",
                "query": "how do I add a tool?",
                "coalition": ["a", "b"],
                "candidates": [
                    {"doc_id": "a", "grade": 2, "empirical_relevance": "YES"},
                    {"doc_id": "b", "grade": 1, "empirical_relevance": "YES"},
                    {"doc_id": "x", "grade": 0, "empirical_relevance": "HARMFUL"},
                    {"doc_id": "u", "grade": None, "empirical_relevance": "UNDECIDED"},
                ],
            },
            {"id": "c2", "query": "q2", "candidates": [{"doc_id": "z", "grade": 1}]},
        ],
    }
    path = tmp_path / "retrieval_dataset.yaml"
    path.write_text(yaml.safe_dump(data))
    j = load_judgements(path)
    assert j.qrels == {"c1": {"a": 2, "b": 1, "x": 0}, "c2": {"z": 1}}
    assert j.queries == {"c1": "how do I add a tool?", "c2": "q2"}
    assert j.coalitions == {"c1": [frozenset({"a", "b"})]}
    assert j.harmful == {"c1": {"x"}}
    run = {"c1": {"a": 3.0, "x": 2.0, "b": 1.0}, "c2": {"z": 1.0}}
    result = evaluate(j.qrels, run, ["set_recall@2", "recall@2"], coalitions=j.coalitions, n_resamples=0)
    assert result.per_query()["c1"] == {"set_recall@2": 0.5, "recall@2": 0.5}


def test_jsonl_coalitions_accept_one_or_several_sets(tmp_path: Path) -> None:
    path = tmp_path / "qrels.jsonl"
    records = [
        {"query_id": "1", "query": "a", "relevant_docs": {"d1": 1, "d2": 1}, "coalition": ["d1", "d2"]},
        {"query_id": "2", "query": "b", "relevant_docs": {"d3": 1}, "coalition": [["d3"], ["d4", "d5"]]},
        {"query_id": "3", "query": "c", "relevant_docs": {"d6": 0}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    j = load_judgements(path)
    assert j.coalitions == {"1": [frozenset({"d1", "d2"})], "2": [frozenset({"d3"}), frozenset({"d4", "d5"})]}
    assert j.queries == {"1": "a", "2": "b", "3": "c"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        result = evaluate(
            path, {"1": {"d1": 1.0}, "2": {"d5": 2.0, "d4": 1.0}}, ["set_recall@2"], coalitions=j.coalitions
        )
    assert result.per_query()["2"]["set_recall@2"] == 1.0
    assert result.per_query()["3"]["set_recall@2"] == 0.0  # no relevant document: 0, warned
