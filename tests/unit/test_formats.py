"""Round trips and bad-input errors for every file format of the foundation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deltap.cases import read_queries_jsonl, write_queries_jsonl
from deltap.documents import Corpus, Document, read_corpus_jsonl, write_corpus_jsonl
from deltap.errors import DuplicateIdsError, FormatError
from deltap.judgements import detect_qrels_format, load_qrels
from deltap.qrels import (
    QrelsRecord,
    load_run,
    read_beir_qrels,
    read_qrels_jsonl,
    read_trec_qrels,
    read_trec_run,
    write_beir_qrels,
    write_qrels_jsonl,
    write_trec_qrels,
    write_trec_run,
)

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1}, "q 2": {"d9": 3}} | {"q3": {"d-1": 1}}
RUN = {"q1": {"d1": 1.5, "d2": 1.5, "d3": -0.25}, "q3": {"d-1": 3.0e-7}}


def test_corpus_jsonl_round_trip(tmp_path: Path) -> None:
    docs = [
        Document("a", "alpha text", "Alpha", {"section": "s1", "n": 1}),
        Document("b", "beta ünïcode", "", {}),
        Document("c", "", "only title"),
    ]
    path = write_corpus_jsonl(docs, tmp_path / "corpus.jsonl")
    corpus = read_corpus_jsonl(path)
    assert [d.doc_id for d in corpus] == ["a", "b", "c"]
    assert list(corpus) == docs
    assert corpus["a"].metadata == {"section": "s1", "n": 1}
    assert corpus.position("c") == 2


def test_corpus_rejects_duplicates_and_is_immutable() -> None:
    with pytest.raises(DuplicateIdsError, match="duplicate document ids in x: a"):
        Corpus([Document("a", "1"), Document("b", "2"), Document("a", "3")], name="x")
    doc = Document("a", "t", metadata={"k": [1]})
    with pytest.raises(TypeError):
        doc.metadata["k"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("{not json", "invalid JSON", id="bad-json"),
        pytest.param("[1, 2]", "expected a JSON object", id="not-object"),
        pytest.param('{"text": "no id"}', 'missing or empty "_id"', id="no-id"),
        pytest.param('{"_id": "x", "text": 5}', "must be strings", id="text-not-string"),
        pytest.param('{"_id": "x", "text": "t", "metadata": []}', '"metadata" must be a JSON object', id="bad-metadata"),
    ],
)
def test_corpus_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "ok", "text": "fine"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=expected) as info:
        read_corpus_jsonl(path)
    assert info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: ")


def test_queries_jsonl_round_trip(tmp_path: Path) -> None:
    queries = {"1": "first query", "x-2": "second"}
    assert read_queries_jsonl(write_queries_jsonl(queries, tmp_path / "q.jsonl")) == queries


def test_beir_qrels_round_trip(tmp_path: Path) -> None:
    path = write_beir_qrels(QRELS, tmp_path / "qrels" / "test.tsv")
    assert path.read_text().splitlines()[0] == "query-id\tcorpus-id\tscore"
    assert read_beir_qrels(path) == QRELS
    assert detect_qrels_format(path) == "beir"
    assert load_qrels(tmp_path, split="test") == QRELS


def test_trec_qrels_round_trip(tmp_path: Path) -> None:
    qrels = {q: d for q, d in QRELS.items() if " " not in q}
    path = write_trec_qrels(qrels, tmp_path / "qrels.trec")
    assert path.read_text().splitlines()[0] == "q1 0 d1 2"
    assert read_trec_qrels(path) == qrels
    assert load_qrels(path) == qrels


def test_trec_run_round_trip_ranks_by_score_then_doc_id(tmp_path: Path) -> None:
    path = write_trec_run(RUN, tmp_path / "run.trec", tag="bm25")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d1 1 1.5 bm25"
    assert lines[1] == "q1 Q0 d2 2 1.5 bm25"
    assert lines[2].startswith("q1 Q0 d3 3 -0.25")
    back = read_trec_run(path)
    assert back == RUN
    assert load_run(path) == RUN


def test_run_json(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    assert load_run(path) == RUN
    path.write_text(json.dumps({"q1": {"d1": float("nan")}}).replace("NaN", "NaN"))
    with pytest.raises(FormatError, match="finite number"):
        load_run(path)


def test_qrels_jsonl_round_trip_and_empty_lines(tmp_path: Path) -> None:
    records = [
        QrelsRecord("q1", "what is x", {"d1": 2, "d2": 0}, "x is y"),
        QrelsRecord("q2", "", {"d3": 1}),
    ]
    path = write_qrels_jsonl(records, tmp_path / "qrels.jsonl")
    text = path.read_text()
    assert '"reference_answer"' in text.splitlines()[0] and '"reference_answer"' not in text.splitlines()[1]
    path.write_text("\n" + text.replace("\n", "\n\n"))
    back = read_qrels_jsonl(path)
    assert [(r.query_id, r.query, r.relevant_docs, r.reference_answer) for r in back] == [
        ("q1", "what is x", {"d1": 2, "d2": 0}, "x is y"),
        ("q2", "", {"d3": 1}, None),
    ]
    assert load_qrels(path) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}


@pytest.mark.parametrize(
    ("content", "reader", "expected", "line"),
    [
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\t1.5\n", read_beir_qrels, "integer >= 0", 2, id="beir-float-grade"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\t-1\n", read_beir_qrels, "integer >= 0", 2, id="beir-negative"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\n", read_beir_qrels, "3 tab-separated", 2, id="beir-columns"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", read_beir_qrels, "duplicate pair", 3, id="beir-dupe"),
        pytest.param("q1 0 d1 1\nq1 0 d2\n", read_trec_qrels, "4 columns", 2, id="trec-columns"),
        pytest.param("q1 0 d1 high\n", read_trec_qrels, "integer >= 0", 1, id="trec-grade"),
        pytest.param("q1 Q0 d1 1 nan run\n", read_trec_run, "finite", 1, id="run-nan"),
        pytest.param("q1 Q0 d1 1 abc run\n", read_trec_run, "must be a number", 1, id="run-text-score"),
        pytest.param("q1 Q0 d1 1 2.0 run\nq1 Q0 d1 2 1.0 run\n", read_trec_run, "duplicate pair", 2, id="run-dupe"),
        pytest.param('{"query_id": "q", "relevant_docs": {"d": 1.5}}\n', read_qrels_jsonl, "integer >= 0", 1, id="jsonl-grade"),
        pytest.param('{"query_id": "q", "relevant_docs": []}\n', read_qrels_jsonl, "relevant_docs", 1, id="jsonl-docs"),
        pytest.param('{"query_id": "q", "relevant_docs": {}}\n{"query_id": "q", "relevant_docs": {}}\n', read_qrels_jsonl, "duplicate query_id", 2, id="jsonl-dupe"),
        pytest.param('\n\n{"relevant_docs": {}}\n', read_qrels_jsonl, "query_id", 3, id="jsonl-no-id"),
    ],
)
def test_bad_lines_are_errors_with_file_and_line(tmp_path: Path, content: str, reader, expected: str, line: int) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "input.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FormatError, match=expected) as info:
        reader(path)
    assert info.value.line == line
    assert info.value.path == str(path)


def test_integer_like_grades_accepted(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"query_id": 7, "relevant_docs": {"d": 2.0, "e": "1"}}\n')
    rec = read_qrels_jsonl(path)[0]
    assert rec.query_id == "7" and rec.relevant_docs == {"d": 2, "e": 1}
    assert not math.isnan(float(rec.relevant_docs["d"]))
