"""The verified dataset file and its qrels exports."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.dataset import (
    VerifiedDataset,
    dataset_qrels,
    read_dataset,
    read_dataset_qrels,
    write_dataset,
    write_dataset_qrels,
)
from deltap.errors import FormatError
from deltap.judgements import load_qrels
from deltap.qrels import read_qrels_jsonl


def _dataset() -> VerifiedDataset:
    cand = lambda d, v, er, g: {  # noqa: E731
        "doc_id": d,
        "fqn": d,
        "text": "t",
        "source": ["gold"],
        "empirical_relevance": er,
        "verdict": v,
        "grade": g,
    }
    return VerifiedDataset(
        {"tool": "deltap", "q": 0.05},
        [
            {
                "id": "q1",
                "query": "Which class?",
                "reference_answer": "Runner",
                "coalition": ["a", "b"],
                "candidates": [
                    cand("a", "relevant", "YES", 3),
                    cand("b", "relevant", "YES", 1),
                    cand("c", "irrelevant", "NO", 0),
                    cand("d", "undecided", "UNDECIDED", None),
                ],
            },
            {
                "id": "q2",
                "query": "Nothing?",
                "reference_answer": None,
                "coalition": None,
                "candidates": [cand("e", "undecided", "UNDECIDED", None)],
            },
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
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: x, empirical_relevance: MAYBE}]\n", "MAYBE", id="bad-er"
        ),
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


# ---------------------------------------------------------------------------------------------------------------
# Exact files, values and messages (issue 19, mutation testing).


def test_plain_makes_numpy_and_tuples_yaml_safe() -> None:
    import numpy as np

    from deltap.dataset import _plain

    got = _plain(
        {
            1: (np.int64(3), np.float64(0.5), float("nan"), np.bool_(True)),
            "k": [{"x": np.float32(0.25)}],
            "s": "t",
            "f": 1.5,
        }
    )
    assert got == {"1": [3, 0.5, None, True], "k": [{"x": 0.25}], "s": "t", "f": 1.5}
    assert type(got["1"][0]) is int and type(got["1"][1]) is float and type(got["1"][3]) is bool


def test_written_yaml_is_exact(tmp_path: Path) -> None:
    import numpy as np

    text = "ü " + "word " * 30  # longer than YAML's default width of 80: folded at 120 instead
    ds = VerifiedDataset(
        {"z": 1, "a": np.float64(0.5)},
        [{"id": "q", "candidates": [{"doc_id": "d", "text": text.strip(), "grade": np.int64(2)}]}],
    )
    assert write_dataset(ds, tmp_path / "d.yaml").read_text(encoding="utf-8") == (
        "metadata:\n  z: 1\n  a: 0.5\npairs:\n- id: q\n  candidates:\n  - doc_id: d\n"
        "    text: ü word word word word word word word word word word word word word word word word word word word word word word\n"
        "      word word word word word word word word\n"
        "    grade: 2\n"
    )
    assert VerifiedDataset().to_dict() == {"metadata": {}, "pairs": []}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "- 1\n", "expected a mapping with a 'pairs:' list (a deltap retrieval_dataset.yaml)", id="not-mapping"
        ),
        pytest.param(
            "metadata: {}\n", "expected a mapping with a 'pairs:' list (a deltap retrieval_dataset.yaml)", id="no-pairs"
        ),
        pytest.param("pairs:\n  - 3\n", "pair #1 needs an 'id'", id="pair-not-mapping"),
        pytest.param("pairs:\n  - id: a\n    candidates: []\n  - id: null\n", "pair #2 needs an 'id'", id="null-id"),
        pytest.param("pairs:\n  - id: 1\n    candidates: []\n  - id: '1'\n", "duplicate pair id '1'", id="dup-str-int"),
        pytest.param("pairs:\n  - id: a\n", "pair 'a' needs a 'candidates' list", id="no-candidates"),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [x]\n",
            "a candidate of pair 'a' has neither 'doc_id' nor 'fqn'",
            id="cand-str",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: ''}]\n",
            "a candidate of pair 'a' has neither 'doc_id' nor 'fqn'",
            id="empty-doc-id",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{fqn: m.X, empirical_relevance: MAYBE}]\n",
            "candidate 'm.X' of 'a': empirical_relevance 'MAYBE' is not one of ('YES', 'NO', 'HARMFUL', 'UNDECIDED')",
            id="bad-er",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: x, fqn: m.X, empirical_relevance: 3}]\n",
            "candidate 'x' of 'a': empirical_relevance 3 is not one of ('YES', 'NO', 'HARMFUL', 'UNDECIDED')",
            id="bad-er-doc-id-first",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: x, fqn: m.X, grade: true}]\n",
            "candidate 'x' of 'a': grade must be an integer >= 0 or null, got True",
            id="bool-grade",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{fqn: m.X, grade: 2.5}]\n",
            "candidate 'm.X' of 'a': grade must be an integer >= 0 or null, got 2.5",
            id="grade-fqn-only",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: x, grade: 1.0}]\n",
            "candidate 'x' of 'a': grade must be an integer >= 0 or null, got 1.0",
            id="float-grade",
        ),
        pytest.param(
            "pairs:\n  - id: a\n    candidates: [{doc_id: x, grade: -1}]\n",
            "candidate 'x' of 'a': grade must be an integer >= 0 or null, got -1",
            id="negative-grade",
        ),
        pytest.param("metadata: [1]\npairs: []\n", "'metadata' must be a mapping", id="metadata-list"),
    ],
)
def test_read_dataset_messages_are_exact(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        read_dataset(path)
    assert str(info.value) == f"{path}: {message}"


def test_invalid_yaml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("pairs:\n  - id: a\n    candidates: [\n")
    with pytest.raises(FormatError) as info:
        read_dataset(path)
    assert str(info.value) == f"{path}:4: invalid YAML: expected the node content, but found '<stream end>'"
    path.write_text("pairs: \x07\n")  # a reader error: no line, no "problem", a two-line str naming "<unicode string>"
    with pytest.raises(FormatError) as info:
        read_dataset(path)
    assert str(info.value) == f"{path}: invalid YAML: unacceptable character #x0007: special characters are not allowed"


def test_read_dataset_accepts_every_valid_form(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "pairs:\n  - id: 5\n    candidates:\n"
        "      - {doc_id: a, empirical_relevance: YES, grade: 0}\n"  # YAML 1.1 reads YES/NO as booleans
        "      - {doc_id: b, empirical_relevance: NO}\n"
        "      - {doc_id: c, empirical_relevance: harmful}\n"
        "      - {doc_id: d, empirical_relevance: null, grade: null}\n"
    )
    ds = read_dataset(path)
    assert ds.metadata == {}
    assert [c["empirical_relevance"] for c in ds.pairs[0]["candidates"]] == ["YES", "NO", "harmful", None]
    assert dataset_qrels(ds) == {"5": {"a": 0, "b": 0, "c": 0}}


def test_grades_from_candidates() -> None:
    from deltap.dataset import _grade_of

    assert _grade_of({"grade": 3, "empirical_relevance": "NO"}) == 3  # an explicit grade wins
    assert _grade_of({"grade": 0}) == 0
    assert _grade_of({"grade": None, "empirical_relevance": "YES"}) is None  # graded file: null = undecided
    assert _grade_of({"empirical_relevance": "yes"}) == 1  # seed schema: YES = 1, NO/HARMFUL = 0
    assert _grade_of({"empirical_relevance": "Harmful"}) == 0
    assert _grade_of({"empirical_relevance": "NO"}) == 0
    assert _grade_of({"empirical_relevance": "UNDECIDED"}) is None
    assert _grade_of({}) is None


def test_qrels_records_carry_query_answer_and_coalitions() -> None:
    from deltap.dataset import dataset_qrels_records
    from deltap.qrels import QrelsRecord

    ds = VerifiedDataset(
        {},
        [
            {"id": "first", "candidates": [{"doc_id": "u", "grade": None}]},  # ungraded: skipped, not the end
            {"id": 1, "candidates": [{"fqn": "m.A", "grade": 2}], "coalitions": [("m.A",), ["m.A", "m.B"]]},
            {
                "id": "x",
                "query": "q?",
                "reference_answer": "A",
                "coalition": ("m.A",),
                "candidates": [{"doc_id": "d", "fqn": "m.D", "grade": 1}],
            },
            {"id": "none", "candidates": [{"doc_id": "e", "grade": None}]},
        ],
    )
    assert dataset_qrels(ds) == {"1": {"m.A": 2}, "x": {"d": 1}}  # doc_id before fqn; ungraded pairs left out
    assert dataset_qrels_records(ds) == [
        QrelsRecord("1", "", {"m.A": 2}, None, {"coalitions": [["m.A"], ["m.A", "m.B"]]}),
        QrelsRecord("x", "q?", {"d": 1}, "A", {"coalition": ["m.A"]}),
    ]


def test_qrels_exports_with_and_without_provenance(tmp_path: Path) -> None:
    import json

    import numpy as np

    paths = write_dataset_qrels(
        _dataset(), tmp_path / "with", {"solver": "sim", "seed": np.int64(3), "q": float("nan")}
    )
    assert set(paths) == {"beir", "trec", "jsonl", "provenance"}
    assert paths["provenance"] == tmp_path / "with" / "qrels" / "provenance.json"
    assert paths["provenance"].read_text() == '{\n  "q": null,\n  "seed": 3,\n  "solver": "sim"\n}\n'
    lines = paths["jsonl"].read_text().splitlines()  # numpy values made plain here too (json.dumps crashed on them)
    assert len(lines) == 1 and json.loads(lines[0])["provenance"] == {"solver": "sim", "seed": 3, "q": None}
    bare = write_dataset_qrels(_dataset(), tmp_path / "bare")
    assert set(bare) == {"beir", "trec", "jsonl"} and not (tmp_path / "bare" / "qrels" / "provenance.json").exists()
    assert "provenance" not in read_qrels_jsonl(bare["jsonl"])[0].extra
    assert bare["beir"] == tmp_path / "bare" / "qrels" / "test.tsv" and bare["trec"] == tmp_path / "bare" / "qrels.trec"
    assert bare["jsonl"] == tmp_path / "bare" / "qrels.jsonl"
