"""The verified dataset file and its qrels exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.dataset import Dataset, dataset_qrels, read_dataset, read_dataset_qrels, write_dataset, write_dataset_qrels
from deltap.errors import FormatError
from deltap.judgements import load_qrels
from deltap.qrels import read_qrels_jsonl


def _dataset() -> Dataset:
    cand = lambda d, v, er, g: {"doc_id": d, "fqn": d, "text": "t", "source": ["gold"], "empirical_relevance": er, "verdict": v, "grade": g}  # noqa: E731
    return Dataset(
        {"tool": "deltap", "q": 0.05},
        [
            {"id": "q1", "query": "Which class?", "reference_answer": "Runner", "coalition": ["a", "b"],
             "candidates": [cand("a", "relevant", "YES", 3), cand("b", "relevant", "YES", 1), cand("c", "irrelevant", "NO", 0), cand("d", "undecided", "UNDECIDED", None)]},
            {"id": "q2", "query": "Nothing?", "reference_answer": None, "coalition": None,
             "candidates": [cand("e", "undecided", "UNDECIDED", None)]},
        ],
    )


def test_roundtrip_and_qrels(tmp_path: Path) -> None:
    path = write_dataset(_dataset(), tmp_path / "retrieval_dataset.yaml")
    again = read_dataset(path)
    assert again.pairs == _dataset().pairs
    assert read_dataset_qrels(path) == {"q1": {"a": 3, "b": 1, "c": 0}}
    assert load_qrels(path) == {"q1": {"a": 3, "b": 1, "c": 0}}  # deltap.qrels dispatches .yaml here


def test_all_qrels_formats_agree(tmp_path: Path) -> None:
    paths = write_dataset_qrels(_dataset(), tmp_path, {"tool": "deltap", "solver": "sim"})
    expected = dataset_qrels(_dataset())
    assert load_qrels(paths["beir"]) == expected
    assert load_qrels(paths["trec"]) == expected
    assert load_qrels(paths["jsonl"]) == expected
    rec = read_qrels_jsonl(paths["jsonl"])[0]
    assert rec.reference_answer == "Runner" and rec.extra["coalition"] == ["a", "b"]
    assert rec.extra["provenance"]["solver"] == "sim"
    assert (tmp_path / "qrels" / "provenance.json").is_file()


def test_seed_schema_without_grades_maps_yes_no(tmp_path: Path) -> None:
    path = tmp_path / "seed.yaml"
    path.write_text(
        "pairs:\n  - id: x\n    query: q\n    candidates:\n"
        "      - {fqn: a.B, empirical_relevance: YES}\n      - {fqn: a.C, empirical_relevance: NO}\n"
        "      - {fqn: a.D, empirical_relevance: UNDECIDED}\n"
    )
    assert read_dataset_qrels(path) == {"x": {"a.B": 1, "a.C": 0}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("pairs: 3\n", "pairs", id="pairs-not-list"),
        pytest.param("pairs:\n  - query: q\n    candidates: []\n", "needs an 'id'", id="no-id"),
        pytest.param("pairs:\n  - id: a\n    candidates: []\n  - id: a\n    candidates: []\n", "duplicate", id="dup"),
        pytest.param("pairs:\n  - id: a\n    candidates: [{doc_id: x, empirical_relevance: MAYBE}]\n", "MAYBE", id="bad-er"),
        pytest.param("pairs:\n  - id: a\n    candidates: [{doc_id: x, grade: -1}]\n", "grade", id="bad-grade"),
        pytest.param("pairs:\n  - id: a\n    candidates: [{text: x}]\n", "neither", id="no-doc-id"),
        pytest.param("pairs: [\n", "invalid YAML", id="bad-yaml"),
    ],
)
def test_bad_files_are_rejected_with_a_clear_message(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(FormatError, match=message):
        read_dataset(path)
