"""Round trips and bad-input errors for every file format of the foundation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from deltap.cases import read_queries_jsonl, write_queries_jsonl
from deltap.documents import Corpus, Document, read_corpus_jsonl, write_corpus_jsonl
from deltap.errors import DeltapError, DuplicateIdsError, FormatError
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
        pytest.param(
            '{"_id": "x", "text": "t", "metadata": []}', '"metadata" must be a JSON object', id="bad-metadata"
        ),
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
        pytest.param(
            "query-id\tcorpus-id\tscore\nq1\td1\t1.5\n", read_beir_qrels, "integer >= 0", 2, id="beir-float-grade"
        ),
        pytest.param(
            "query-id\tcorpus-id\tscore\nq1\td1\t-1\n", read_beir_qrels, "integer >= 0", 2, id="beir-negative"
        ),
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\n", read_beir_qrels, "3 tab-separated", 2, id="beir-columns"),
        pytest.param(
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", read_beir_qrels, "duplicate pair", 3, id="beir-dupe"
        ),
        pytest.param("q1 0 d1 1\nq1 0 d2\n", read_trec_qrels, "4 columns", 2, id="trec-columns"),
        pytest.param("q1 0 d1 high\n", read_trec_qrels, "integer >= 0", 1, id="trec-grade"),
        pytest.param("q1 Q0 d1 1 nan run\n", read_trec_run, "finite", 1, id="run-nan"),
        pytest.param("q1 Q0 d1 1 abc run\n", read_trec_run, "must be a number", 1, id="run-text-score"),
        pytest.param("q1 Q0 d1 1 2.0 run\nq1 Q0 d1 2 1.0 run\n", read_trec_run, "duplicate pair", 2, id="run-dupe"),
        pytest.param(
            '{"query_id": "q", "relevant_docs": {"d": 1.5}}\n', read_qrels_jsonl, "integer >= 0", 1, id="jsonl-grade"
        ),
        pytest.param('{"query_id": "q", "relevant_docs": []}\n', read_qrels_jsonl, "relevant_docs", 1, id="jsonl-docs"),
        pytest.param(
            '{"query_id": "q", "relevant_docs": {}}\n{"query_id": "q", "relevant_docs": {}}\n',
            read_qrels_jsonl,
            "duplicate query_id",
            2,
            id="jsonl-dupe",
        ),
        pytest.param('\n\n{"relevant_docs": {}}\n', read_qrels_jsonl, "query_id", 3, id="jsonl-no-id"),
    ],
)
def test_bad_lines_are_errors_with_file_and_line(
    tmp_path: Path, content: str, reader, expected: str, line: int
) -> None:  # type: ignore[no-untyped-def]
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


# ---------------------------------------------------------------------------------------------------------------
# qrels and runs: exact bytes written, exact values read, exact messages (issue 19, mutation testing).


def _format_error(tmp_path: Path, content: str | bytes, reader, name: str = "input.txt") -> FormatError:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(FormatError) as info:
        reader(path)
    return info.value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("0", 0, id="zero"),
        pytest.param(" 3 ", 3, id="padded-string"),
        pytest.param(2147483647, 2**31 - 1, id="max-grade"),
        pytest.param(4.0, 4, id="integral-float"),
        pytest.param(True, None, id="bool"),
        pytest.param(2.5, None, id="fraction"),
        pytest.param("2.0", None, id="float-string"),
        pytest.param(None, None, id="none"),
    ],
)
def test_grade_parsing(tmp_path: Path, value: object, expected: int | None) -> None:
    from deltap.qrels import _grade

    if expected is not None:
        got = _grade(value, tmp_path, 4)  # type: ignore[arg-type]
        assert got == expected and type(got) is int
        return
    with pytest.raises(FormatError) as info:
        _grade(value, tmp_path, 4)  # type: ignore[arg-type]
    assert str(info.value) == f"{tmp_path}:4: relevance grade must be an integer >= 0, got {value!r}"


@pytest.mark.parametrize("value", [-1, 2**31, "-2"])
def test_grade_range(tmp_path: Path, value: object) -> None:
    from deltap.qrels import MAX_GRADE, _grade

    assert MAX_GRADE == 2**31 - 1
    with pytest.raises(FormatError) as info:
        _grade(value, tmp_path, 2)  # type: ignore[arg-type]
    assert (
        str(info.value) == f"{tmp_path}:2: relevance grade must be an integer >= 0 and <= {MAX_GRADE}, got {int(value)}"
    )  # type: ignore[call-overload]


def test_beir_qrels_reading_rules(tmp_path: Path) -> None:
    path = tmp_path / "q.tsv"
    # a header in any of its spellings on line 1, CRLF endings, blank lines and padded cells are accepted
    for header in ("query-id\tcorpus-id\tscore", " Query_ID \tdoc\tgrade", "QID\tx\ty"):
        path.write_bytes(f"{header}\r\n\r\n q1 \t d1 \t 2 \r\n\t\t\nq2\td1\t0\n".replace("\t\t\n", "\n").encode())
        assert read_beir_qrels(path) == {"q1": {"d1": 2}, "q2": {"d1": 0}}
    path.write_text("q1\td1\t1\n")  # no header at all
    assert read_beir_qrels(path) == {"q1": {"d1": 1}}
    # a header line anywhere but line 1 is data: its "score" is not a grade
    err = _format_error(tmp_path, "q1\td1\t1\nquery-id\tcorpus-id\tscore\n", read_beir_qrels)
    assert err.line == 2 and err.detail == "relevance grade must be an integer >= 0, got 'score'"
    err = _format_error(tmp_path, "q1\td1\t1\td2\n", read_beir_qrels)
    assert err.detail == "expected 3 tab-separated columns (query-id, corpus-id, score), got 4"
    for line in (" \td1\t1\n", "q1\t \t1\n"):
        err = _format_error(tmp_path, "query-id\tcorpus-id\tscore\n" + line, read_beir_qrels)
        assert (err.line, err.detail) == (2, "empty query-id or corpus-id")
    err = _format_error(tmp_path, "q\td\t1\nq\td\t1\n", read_beir_qrels)
    assert str(err) == f"{tmp_path / 'input.txt'}:2: duplicate pair (query 'q', doc 'd')"


def test_trec_qrels_and_run_reading_rules(tmp_path: Path) -> None:
    path = tmp_path / "q.trec"
    path.write_text("\n  q1   x  d1 3\n\nq1 0 d2 0\n")  # the second column is ignored; blank lines skipped
    assert read_trec_qrels(path) == {"q1": {"d1": 3, "d2": 0}}
    assert (
        _format_error(tmp_path, "q1 0 d1 1 9\n", read_trec_qrels).detail
        == "expected 4 columns 'qid 0 docid grade', got 5"
    )
    path.write_text("\nq1 Q0 d1 1 -2.5 tag\n\nq1 Q0 d2 2 1e-3 tag\n")
    run = read_trec_run(path)
    assert run == {"q1": {"d1": -2.5, "d2": 0.001}} and type(run["q1"]["d1"]) is float
    assert (
        _format_error(tmp_path, "q1 Q0 d1 1 2\n", read_trec_run).detail
        == "expected 6 columns 'qid Q0 docid rank score tag', got 5"
    )
    assert _format_error(tmp_path, "q1 Q0 d1 1 x run\n", read_trec_run).detail == "score must be a number, got 'x'"
    assert _format_error(tmp_path, "q1 Q0 d1 1 inf run\n", read_trec_run).detail == "score must be finite, got 'inf'"


def test_writers_produce_exact_text(tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 2, "d2": 0.0}, "q2": {"d3": 1}}
    assert (
        write_beir_qrels(qrels, tmp_path / "a.tsv").read_text()
        == "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td3\t1\n"
    )  # type: ignore[arg-type]
    assert write_trec_qrels(qrels, tmp_path / "a.trec").read_text() == "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"  # type: ignore[arg-type]
    run = {"q1": {"b": 1, "a": 1.0, "c": 2.5, "d": -1e-300}}
    text = write_trec_run(run, tmp_path / "r.trec").read_text()  # the default tag, ties by ascending doc id
    assert text == "q1 Q0 c 1 2.5 deltap\nq1 Q0 a 2 1.0 deltap\nq1 Q0 b 3 1.0 deltap\nq1 Q0 d 4 -1e-300 deltap\n"


@pytest.mark.parametrize(
    ("writer", "table", "message"),
    [
        pytest.param(write_beir_qrels, {"q 1": {"d": 1}}, None, id="beir-space-inside-is-fine"),
        pytest.param(
            write_beir_qrels,
            {"q1": {" d": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): ' d'; rename them",
            id="beir-edge-space",
        ),
        pytest.param(
            write_beir_qrels,
            {"q1": {"d\t": 1, "": 1}},
            "2 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): '', 'd\\t'; rename them",
            id="beir-tab-empty",
        ),
        pytest.param(
            write_beir_qrels,
            {"q\n": {"d": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): 'q\\n'; rename them",
            id="beir-newline",
        ),
        pytest.param(
            write_beir_qrels,
            {"q\r": {"d": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): 'q\\r'; rename them",
            id="beir-cr",
        ),
        pytest.param(
            write_beir_qrels,
            {"q": {"a\tb": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): 'a\\tb'; rename them",
            id="beir-inner-tab",
        ),
        pytest.param(
            write_beir_qrels,
            {"q": {"a\nb": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): 'a\\nb'; rename them",
            id="beir-inner-newline",
        ),
        pytest.param(
            write_beir_qrels,
            {"q": {"a\rb": 1}},
            "1 id(s) cannot be written as BEIR TSV (empty, or with whitespace the reader would split on): 'a\\rb'; rename them",
            id="beir-inner-cr",
        ),
        pytest.param(
            write_trec_qrels,
            {"q 1": {"d": 1}},
            "1 id(s) cannot be written as TREC qrels (empty, or with whitespace the reader would split on): 'q 1'; rename them",
            id="trec-space",
        ),
        pytest.param(
            write_trec_qrels,
            {"q": {"": 1}},
            "1 id(s) cannot be written as TREC qrels (empty, or with whitespace the reader would split on): ''; rename them",
            id="trec-empty",
        ),
        pytest.param(
            write_trec_run,
            {"q": {"a\u00a0b": 1.0}},
            "1 id(s) cannot be written as TREC run (empty, or with whitespace the reader would split on): 'a\\xa0b'; rename them",
            id="run-nbsp",
        ),
    ],
)
def test_writers_refuse_ids_the_reader_would_split(tmp_path: Path, writer, table: dict, message: str | None) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "out"
    if message is None:
        writer(table, path)
        return
    with pytest.raises(DeltapError) as info:
        writer(table, path)
    assert str(info.value) == f"{path}: {message}"
    assert not path.exists()


def test_id_refusal_lists_ten_sorted_and_counts_all(tmp_path: Path) -> None:
    table = {f"q {i:02d}": {"d": 1} for i in range(12)} | {"q 03": {"d x": 1}}
    with pytest.raises(DeltapError) as info:
        write_trec_qrels(table, tmp_path / "t")
    shown = ", ".join(repr(f"q {i:02d}") for i in range(10))
    assert str(info.value) == (
        f"{tmp_path / 't'}: 13 id(s) cannot be written as TREC qrels (empty, or with whitespace the reader would split "
        f"on): 'd x', {shown.rsplit(', ', 1)[0]}; rename them"
    )


def test_run_tag_must_be_one_word(tmp_path: Path) -> None:
    for tag in ("", "two words", "tab\t"):
        with pytest.raises(DeltapError) as info:
            write_trec_run({"q": {"d": 1.0}}, tmp_path / "r", tag=tag)
        assert str(info.value) == f"{tmp_path / 'r'}: the run tag {tag!r} must be one word without whitespace"


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        pytest.param("[1]", "expected a JSON object, got list", id="list"),
        pytest.param(
            "{bad",
            "invalid JSON (Expecting property name enclosed in double quotes at column 2); expected one qrels record per line",
            id="bad-json",
        ),
        pytest.param('{"query_id": true, "relevant_docs": {}}', 'missing or empty "query_id" (a string)', id="bool-id"),
        pytest.param('{"query_id": "", "relevant_docs": {}}', 'missing or empty "query_id" (a string)', id="empty-id"),
        pytest.param('{"query_id": 1.5, "relevant_docs": {}}', 'missing or empty "query_id" (a string)', id="float-id"),
        pytest.param(
            '{"query_id": "q", "relevant_docs": [["d", 1]]}',
            '"relevant_docs" must be an object {doc_id: grade}',
            id="docs-list",
        ),
        pytest.param(
            '{"query_id": "q", "relevant_docs": {}, "reference_answer": 3}',
            '"reference_answer" must be a string when present',
            id="ref",
        ),
        pytest.param('{"query_id": "q", "relevant_docs": {}, "query": ["x"]}', '"query" must be a string', id="query"),
        pytest.param(
            '{"query_id": "q", "relevant_docs": {"d": -1}}',
            "relevance grade must be an integer >= 0 and <= 2147483647, got -1",
            id="grade",
        ),
    ],
)
def test_qrels_jsonl_errors_are_exact(tmp_path: Path, line: str, detail: str) -> None:
    err = _format_error(tmp_path, '{"query_id": "ok", "relevant_docs": {}}\n' + line + "\n", read_qrels_jsonl)
    assert str(err) == f"{tmp_path / 'input.txt'}:2: {detail}"


def test_qrels_jsonl_fields_and_unicode(tmp_path: Path) -> None:
    rec = QrelsRecord("q1", "què?", {"d1": 1}, None, {"coalition": ["d1"], "note": "ü"})
    path = write_qrels_jsonl([rec], tmp_path / "q.jsonl")
    assert (
        path.read_text(encoding="utf-8")
        == '{"query_id": "q1", "query": "què?", "relevant_docs": {"d1": 1}, "coalition": ["d1"], "note": "ü"}\n'
    )
    assert read_qrels_jsonl(path) == [rec]
    path.write_text('{"query_id": 12, "relevant_docs": {"7": "2"}}\n')
    assert read_qrels_jsonl(path) == [QrelsRecord("12", "", {"7": 2}, None, {})]


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        pytest.param("q.yaml", "", "dataset", id="yaml"),
        pytest.param("Q.YML", "", "dataset", id="yml-upper"),
        pytest.param("q.jsonl", "q 0 d 1\n", "jsonl", id="jsonl"),
        pytest.param("q.json", "", "jsonl", id="json"),
        pytest.param("q.txt", "\n  \nq\td\t1\n", "beir", id="tabs-after-blank-lines"),
        pytest.param("q.txt", "q\td\t1\r\n", "beir", id="tabs-crlf"),
        pytest.param("q.txt", "q\t0\td\t1\n", "trec", id="four-tab-columns"),
        pytest.param("q.txt", "q 0 d 1\n", "trec", id="spaces"),
        pytest.param("q.txt", "", "trec", id="empty"),
        pytest.param("q.txt", "\n\n", "trec", id="blank"),
    ],
)
def test_detect_qrels_format(tmp_path: Path, name: str, content: str, fmt: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    assert detect_qrels_format(path) == fmt
    assert detect_qrels_format(tmp_path) == "beir"  # a folder is a BEIR dataset


def test_load_qrels_dispatch_and_errors(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [2]})
    assert load_qrels(frame) == {"q": {"d": 2}}
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "dev.tsv").write_text("q\td\t1\n")
    assert load_qrels(tmp_path, split="dev") == {"q": {"d": 1}}
    trec = tmp_path / "x.jsonl"
    trec.write_text("q 0 d 3\n")
    assert load_qrels(trec, fmt="trec") == {"q": {"d": 3}}  # a forced format wins over the name
    with pytest.raises(FileNotFoundError) as nf:
        load_qrels(tmp_path / "nope.tsv")
    assert str(nf.value) == f"qrels file not found: {tmp_path / 'nope.tsv'}"
    with pytest.raises(ValueError) as bad:
        load_qrels(trec, fmt="csv")  # type: ignore[arg-type]
    assert str(bad.value) == "unknown qrels format 'csv'"
    empty = tmp_path / "e.jsonl"
    empty.write_text('{"query_id": "q", "relevant_docs": {}}\n')
    with pytest.raises(FormatError) as info:
        load_qrels(empty)
    assert (
        str(info.value) == f"{empty}: no judgements in the file (an empty qrels file): every measure would be undefined"
    )
    zero = tmp_path / "z.trec"
    zero.write_text("q 0 d 0\n")
    assert load_qrels(zero) == {"q": {"d": 0}}  # a grade-0 judgement is a judgement


def test_load_run_json_and_frames(tmp_path: Path) -> None:
    import pandas as pd

    assert load_run(pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [0.5]})) == {"q": {"d": 0.5}}
    path = tmp_path / "run.JSON"
    path.write_text('{"q": {"d": 3, "e": -1.5}}')
    run = load_run(path)
    assert run == {"q": {"d": 3.0, "e": -1.5}} and type(run["q"]["d"]) is float
    for content, detail in (
        ("[1]", "expected a JSON object {query_id: {doc_id: score}}"),
        ('{"q": [1]}', "expected a JSON object {query_id: {doc_id: score}}"),
        ('{"q": {"d": true}}', "score of ('q', 'd') must be a finite number, got True"),
        ('{"q": {"d": "1"}}', "score of ('q', 'd') must be a finite number, got '1'"),
        ('{"q": {"d": Infinity}}', "score of ('q', 'd') must be a finite number, got inf"),
    ):
        path.write_text(content)
        with pytest.raises(FormatError) as info:
            load_run(path)
        assert str(info.value) == f"{path}: {detail}"
    with pytest.raises(FileNotFoundError) as nf:
        load_run(tmp_path / "none.trec")
    assert str(nf.value) == f"run file not found: {tmp_path / 'none.trec'}"


def test_more_reader_messages_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    cases = [
        ("query-id\tcorpus-id\tscore\n \td\t1\n", read_beir_qrels, "2: empty query-id or corpus-id"),
        (
            "q\td\t\n",
            read_beir_qrels,
            "1: relevance grade must be an integer >= 0, got ''",
        ),  # an empty last cell is a cell
        ("q\td\t2X\n", read_beir_qrels, "1: relevance grade must be an integer >= 0, got '2X'"),
        ("q 0 d 1\nq 0 d 2\n", read_trec_qrels, "2: duplicate pair (query 'q', doc 'd')"),
        ("q Q0 d 1 2.0\n", read_trec_run, "1: expected 6 columns 'qid Q0 docid rank score tag', got 5"),
    ]
    for content, reader, message in cases:
        assert str(_format_error(tmp_path, content, reader)) == f"{path}:{message}"
    run = tmp_path / "run.json"
    run.write_text('{"q": {"d": 1,}}')
    with pytest.raises(FormatError) as info:
        load_run(run)
    assert str(info.value).startswith(f"{run}:1: invalid JSON (")


def test_qrels_jsonl_reference_answer_is_not_an_extra_field(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"query_id": "q", "relevant_docs": {"d": 1}, "reference_answer": "A", "note": 1}\n')
    assert read_qrels_jsonl(path) == [QrelsRecord("q", "", {"d": 1}, "A", {"note": 1})]


def test_load_qrels_reads_the_test_split_of_a_folder_by_default(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q\td\t2\n")
    (tmp_path / "qrels" / "dev.tsv").write_text("q\td\t1\n")
    assert load_qrels(tmp_path) == {"q": {"d": 2}}


# ---------------------------------------------------------------------------------------------------------------
# load_judgements: qrels plus the side information each source records (deltap.judgements).


def test_judgements_of_a_beir_folder_split_and_files_without_side_information(tmp_path: Path) -> None:
    from deltap.judgements import Judgements, load_judgements

    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "dev.tsv").write_text("q1\td1\t2\nq1\td2\t0\n")
    (tmp_path / "qrels" / "test.tsv").write_text("q9\td9\t1\n")
    write_queries_jsonl({"q1": "first", "q9": "ninth"}, tmp_path / "queries.jsonl")
    j = load_judgements(tmp_path, split="dev")
    assert j == Judgements({"q1": {"d1": 2, "d2": 0}}, {"q1": "first", "q9": "ninth"}, {}, {}, str(tmp_path))
    assert j.n_judgements == 2 and j.judged_docs == {"d1", "d2"}
    assert load_judgements(tmp_path).qrels == {"q9": {"d9": 1}}  # the test split by default
    (tmp_path / "queries.jsonl").unlink()
    assert load_judgements(tmp_path).queries == {}  # a BEIR folder without queries.jsonl: qrels only
    trec = tmp_path / "q.trec"
    trec.write_text("q 0 d 1\n")
    assert load_judgements(trec) == Judgements({"q": {"d": 1}}, source=str(trec))
    tsv = tmp_path / "q.tsv"
    tsv.write_text("q\td\t3\n")
    assert load_judgements(tsv) == Judgements({"q": {"d": 3}}, source=str(tsv))  # a BEIR file, not a folder
    for missing in (tmp_path / "missing.jsonl", tmp_path / "missing"):  # named like a format, or not at all
        with pytest.raises(FileNotFoundError) as info:
            load_judgements(missing)
        assert str(info.value) == f"qrels file not found: {missing}"


def test_judgements_of_qrels_jsonl(tmp_path: Path) -> None:
    from deltap.judgements import load_judgements

    path = tmp_path / "q.jsonl"
    records = [
        {
            "query_id": "1",
            "query": "a",
            "relevant_docs": {"d1": 1},
            "coalitions": [["d1", "d2"], ["d3"]],
            "coalition": ["x"],
        },
        {"query_id": "2", "relevant_docs": {"d3": 1}, "coalition": ["d3", "d4"]},
        {"query_id": "3", "query": "", "relevant_docs": {"d5": 1}, "coalition": [[], ["d5"]]},
        {"query_id": "4", "query": "d", "relevant_docs": {"d6": 1}, "coalitions": []},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    j = load_judgements(path)
    assert j.queries == {"1": "a", "4": "d"}  # an empty query is no query
    assert j.coalitions == {
        "1": [frozenset({"d1", "d2"}), frozenset({"d3"})],
        "2": [frozenset({"d3", "d4"})],
        "3": [frozenset({"d5"})],
    }
    assert j.harmful == {} and j.source == str(path)


def test_judgements_of_a_dataset_yaml(tmp_path: Path) -> None:
    import yaml

    from deltap.judgements import load_judgements

    pairs = [
        {
            "id": 1,
            "query": "q one",
            "coalitions": [["a"], ["b", "c"]],
            "coalition": ["z"],
            "candidates": [
                {"doc_id": "a", "grade": 2},
                {"fqn": "m.B", "grade": 0, "verdict": "Harmful"},
                {"doc_id": "c", "grade": 0, "empirical_relevance": "harmful"},
                {"doc_id": "d", "grade": 0, "verdict": "irrelevant"},
            ],
        },
        {"id": "p2", "query": "", "coalition": ["e"], "candidates": [{"doc_id": "e", "grade": 1}]},
        {"id": "p3", "candidates": [{"doc_id": "f", "grade": 1, "empirical_relevance": "NO"}]},
    ]
    path = tmp_path / "retrieval_dataset.yaml"
    path.write_text(yaml.safe_dump({"pairs": pairs}))
    j = load_judgements(path)
    assert j.queries == {"1": "q one"}
    assert j.coalitions == {"1": [frozenset({"a"}), frozenset({"b", "c"})], "p2": [frozenset({"e"})]}
    assert j.harmful == {"1": {"m.B", "c"}}
    assert j.qrels == {"1": {"a": 2, "m.B": 0, "c": 0, "d": 0}, "p2": {"e": 1}, "p3": {"f": 1}}
