"""Cases from any QA dataset: question-answer JSONL / YAML, a BEIR folder whose queries carry answers, a seed-004
qrels JSONL; malformed files name file and line; the docs/examples/qa example loads and mines end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from deltap.cases import CheckerSpec, read_qa_jsonl
from deltap.cli.app import main
from deltap.corpora.markdown import build_markdown_corpus
from deltap.dataset import read_dataset
from deltap.errors import DeltapError, DuplicateIdsError, FormatError
from deltap.loaders import load_cases

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "qa"


def _jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_qa_jsonl(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "qa.jsonl",
        {"id": "q1", "question": "Port?", "answers": ["7431", "port 7431"], "gold_ids": ["a", "b"], "topic": "net"},
        {"query_id": 2, "query": "Retries?", "answer": 3, "relevant_docs": {"r": 2, "x": 0}},
        {"_id": "q3", "text": "Config?", "reference_answer": "larkspur.toml"},
    )
    cases = load_cases(path)
    assert [c.case_id for c in cases] == ["q1", "2", "q3"]
    q1, q2, q3 = cases
    assert q1.checker == CheckerSpec("string_match", {"answers": ["7431", "port 7431"]})
    assert q1.reference_answer == "7431" and q1.gold_doc_ids == ("a", "b") and q1.benchmark_type == "qa"
    assert dict(q1.metadata) == {"topic": "net"}
    assert q2.query == "Retries?" and q2.checker.params["answers"] == ["3"] and q2.gold_doc_ids == ("r",)
    assert q2.metadata["grades"] == {"r": 2, "x": 0}
    assert q3.checker.params["answers"] == ["larkspur.toml"] and q3.gold_doc_ids == ()


@pytest.mark.parametrize("shape", ["list", "questions"])
def test_qa_yaml(tmp_path: Path, shape: str) -> None:
    items = [
        {"id": "q1", "question": "Port?", "answers": "7431", "gold_ids": ["server.md#0"]},
        {"id": "q2", "question": "Retries?", "answers": ["3", "three"], "metadata": {"answer": "3 times"}},
    ]
    path = tmp_path / "qa.yaml"
    path.write_text(yaml.safe_dump(items if shape == "list" else {"questions": items}), encoding="utf-8")
    cases = load_cases(path)
    assert [c.checker.params["answers"] for c in cases] == [["7431"], ["3", "three", "3 times"]]
    assert cases[0].gold_doc_ids == ("server.md#0",)


def _beir(tmp_path: Path, queries: list[dict[str, object]]) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    _jsonl(root / "corpus.jsonl", {"_id": "d1", "text": "one"}, {"_id": "d2", "text": "two"})
    _jsonl(root / "queries.jsonl", *queries)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td2\t1\nq4\td1\t1\n")
    return root


def test_beir_folder_with_reference_answers(tmp_path: Path) -> None:
    root = _beir(
        tmp_path,
        [
            {"_id": "q1", "text": "first?", "reference_answer": "one"},
            {"_id": "q2", "text": "second?", "answers": ["two", "2"]},
            {"_id": "q3", "text": "third?", "metadata": {"answer": "three"}},
            {"_id": "q4", "text": "no answer"},
        ],
    )
    cases = {c.case_id: c for c in load_cases(root)}
    assert cases["q1"].checker == CheckerSpec("string_match", {"answers": ["one"]})
    assert cases["q2"].checker.params["answers"] == ["two", "2"] and cases["q2"].reference_answer == "two"
    assert cases["q3"].checker.params["answers"] == ["three"] and cases["q3"].benchmark_type == "qa"
    assert cases["q4"].checker == CheckerSpec("none") and cases["q4"].benchmark_type == "beir"
    assert cases["q1"].gold_doc_ids == ("d1",)


def test_seed_004_qrels_jsonl(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "qrels.jsonl",
        {"query_id": "q1", "query": "How?", "relevant_docs": {"doc-7": 2, "doc-9": 1}},
        {"query_id": "q2", "query": "Why?", "relevant_docs": {"doc-3": 1}, "reference_answer": "because"},
    )
    q1, q2 = load_cases(path)
    assert q1.checker == CheckerSpec("none") and q1.gold_doc_ids == ("doc-7", "doc-9")
    assert q2.checker == CheckerSpec("string_match", {"answers": ["because"]}) and q2.reference_answer == "because"
    assert q2.metadata["grades"] == {"doc-3": 1}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        pytest.param(['{"question": "x?", "answers": ["a"]}'], r"qa.jsonl:1: question #1 needs an 'id'", id="no-id"),
        pytest.param(
            ['{"id": "q1", "answers": ["a"]}'], r"qa.jsonl:1: question 'q1' needs a 'question'", id="no-question"
        ),
        pytest.param(
            ['{"id": "q0", "question": "x?", "answers": "a"}', '{"id": "q1", "question": "x?"}'],
            r"qa.jsonl:2: question 'q1' has no answer",
            id="no-answer",
        ),
        pytest.param(
            ['{"id": "q1", "question": "x?", "answers": [{"a": 1}]}'],
            r"qa.jsonl:1: 'answers' of 'q1' must be a string",
            id="answer-dict",
        ),
        pytest.param(
            ['{"id": "q1", "question": "x?", "answer": true}'],
            r"qa.jsonl:1: 'answer' of 'q1' must be a string",
            id="answer-bool",
        ),
        pytest.param(
            ['{"id": "q1", "question": "x?", "answers": ["a"], "gold_ids": [1, 2]}'],
            r"qa.jsonl:1: gold documents of 'q1' must be a list of strings",
            id="gold-not-strings",
        ),
        pytest.param(
            ['{"id": "q1", "question": "x?", "answers": ["a"], "relevant_docs": {"d": "high"}}'],
            r"qa.jsonl:1: 'relevant_docs' of 'q1': grade of 'd' must be an integer",
            id="bad-grade",
        ),
        pytest.param(['{"id": "q1", "question": "x?", "answers": ["a"]}', "{not json"], r"qa.jsonl:2:", id="bad-json"),
        pytest.param(['["q1", "x?"]'], r"qa.jsonl:1:", id="not-an-object"),
    ],
)
def test_malformed_qa_jsonl_names_file_and_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = _jsonl(tmp_path / "qa.jsonl", *lines)
    with pytest.raises(FormatError, match=message):
        load_cases(path)


def test_duplicate_ids_and_empty_file(tmp_path: Path) -> None:
    rec = {"id": "q1", "question": "x?", "answers": ["a"]}
    with pytest.raises(DuplicateIdsError, match="q1"):
        read_qa_jsonl(_jsonl(tmp_path / "dup.jsonl", rec, rec))
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(FormatError, match="no question"):
        read_qa_jsonl(tmp_path / "empty.jsonl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "- id: q1\n  question: x?\n  answers: [a]\n- id: q2\n  question: y?\n",
            r"qa.yaml:4: question 'q2' has no answer",
            id="no-answer-line",
        ),
        pytest.param("questions: 3\n", r"expected a list of questions", id="not-a-list"),
        pytest.param("- id: q1\n  question: [x\n", r"qa.yaml:\d+: invalid YAML", id="bad-yaml"),
        pytest.param(
            "- id: q1\n  question: x?\n  answers: [yes]\n", r"'answers' of 'q1' must be a string", id="yaml-bool"
        ),
    ],
)
def test_malformed_qa_yaml(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "qa.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=message):
        load_cases(path)


def test_qrels_jsonl_without_query_text(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "qrels.jsonl", {"query_id": "q1", "relevant_docs": {"d": 1}, "reference_answer": "a"})
    with pytest.raises(FormatError, match=r"qrels.jsonl:1: record 'q1' has no 'query' text"):
        load_cases(path)


def test_cli_mine_bad_qa_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path / "qa.jsonl", {"id": "q1", "question": "x?"})
    corpus = _jsonl(tmp_path / "corpus.jsonl", {"_id": "d1", "text": "one"})
    with pytest.raises(SystemExit) as exc:
        main(["mine", str(path), "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--solver", "simulated"])
    err = capsys.readouterr().err
    assert exc.value.code != 0 and "Traceback" not in err
    assert "qa.jsonl:1: question 'q1' has no answer" in err and len(err.strip().splitlines()) == 1


def test_docs_example_loads_and_mines_with_the_simulated_solver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = build_markdown_corpus(EXAMPLE / "pages")
    cases = load_cases(EXAMPLE / "questions.jsonl", corpus=corpus)
    assert len(cases) == 3 and all(c.checker.kind == "string_match" for c in cases)
    assert {c.case_id: c.gold_doc_ids for c in cases} == {
        "port": ("server.md#0",), "retries": ("retries.md#0",), "config": ("install.md#1",),
    }  # fmt: skip
    corpus_path = tmp_path / "corpus.jsonl"
    main(["corpus", "markdown", str(EXAMPLE / "pages"), "-o", str(corpus_path)])
    main(["mine", str(EXAMPLE / "questions.jsonl"), "--corpus", str(corpus_path), "--out", str(tmp_path / "run"),
          "--solver", "simulated", "--retriever", "bm25", "--k", "3", "--placebo", "1"])  # fmt: skip
    capsys.readouterr()
    dataset = read_dataset(tmp_path / "run" / "retrieval_dataset.yaml")
    assert [p["id"] for p in dataset.pairs] == ["port", "retries", "config"]
    for pair in dataset.pairs:
        gold = [c for c in pair["candidates"] if "gold" in c["source"]]
        assert len(gold) == 1 and gold[0]["verdict"] == "relevant", pair["id"]
        assert pair["reference_answer"] == {"port": "7431", "retries": "3", "config": "larkspur.toml"}[pair["id"]]


def test_unknown_gold_id_in_a_qa_file(tmp_path: Path) -> None:
    corpus = build_markdown_corpus(EXAMPLE / "pages")
    path = _jsonl(tmp_path / "qa.jsonl", {"id": "q1", "question": "x?", "answers": ["a"], "gold_ids": ["nope.md#0"]})
    with pytest.raises(DeltapError, match="nope.md#0"):
        load_cases(path, corpus=corpus)
