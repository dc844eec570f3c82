"""Check-suite parsing (errors with file:line), threshold calibration, percentiles, the starter suite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deltap.check import percentile, propose_threshold
from deltap.check.suite import DEFAULT_OUT_OF_SCOPE, load_suite, parse_suite, starter_suite_yaml
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError, FormatError

GOOD = """\
top_k: 3
score_threshold: 0.4
latency: {p95_embed_search_ms: 250}
determinism: {score_tolerance: 1.0e-6, reopen: false}
gates: {latency: false}
index: {store: ./idx, collection: rag_embedding}
in_scope:
  - id: a
    query: How do nodes talk?
    expected_sections: [module-01]
  - query: Launch files
    expected_chunk_ids: module-01/launch.md#0
    expected_snippets: ["ros2 launch"]
    match: all
out_of_scope:
  - What is the capital of France?
  - {id: cookies, query: cookie recipe}
"""


def test_good_suite(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(GOOD, encoding="utf-8")
    s = load_suite(path)
    assert s.top_k == 3 and s.score_threshold == 0.4 and s.pass_rate == 0.8
    assert s.p95_embed_search_ms == 250 and s.p95_end_to_end_ms == 500
    assert s.score_tolerance == 1e-6 and s.reopen is False
    assert s.gates == frozenset({"relevance", "out_of_scope", "metadata", "determinism"})
    assert (s.store, s.collection) == ("./idx", "rag_embedding")
    assert [q.query_id for q in s.in_scope] == ["a", "in-2"]
    assert s.in_scope[1].expected_chunk_ids == ("module-01/launch.md#0",)
    assert s.in_scope[1].match == "all"
    assert [(q.query_id, q.query) for q in s.out_of_scope] == [
        ("out-1", "What is the capital of France?"),
        ("cookies", "cookie recipe"),
    ]


def test_json_suite_equivalent(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(GOOD)
    (tmp_path / "suite.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(GOOD, encoding="utf-8")
    a, b = load_suite(tmp_path / "suite.json"), load_suite(tmp_path / "suite.yaml")
    assert (a.in_scope, a.out_of_scope, a.top_k, a.gates) == (b.in_scope, b.out_of_scope, b.top_k, b.gates)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        pytest.param(
            "in_scope:\n  - query: q\n    expect_sections: [a]\n", 2, "unknown key(s) expect_sections", id="typo-key"
        ),
        pytest.param(
            "in_scope:\n  - id: x\n    query: q\n", 2, "in_scope[0] (x) has no expectation", id="no-expectation"
        ),
        pytest.param("in_scope:\n  - expected_sections: [a]\n", 2, "'query' must be a non-empty string", id="no-query"),
        pytest.param(
            "out_of_scope:\n  - q\n  - 3\n", 1, "out_of_scope[1]: the query must be a non-empty", id="oos-number"
        ),
        pytest.param("out_of_scope: [q]\ntop_k: 0\n", 1, "top_k must be an integer >= 1", id="top-k"),
        pytest.param("out_of_scope: [q]\npass_rate: 1.5\n", 1, "pass_rate must be in (0, 1]", id="pass-rate"),
        pytest.param("out_of_scope: [q]\ngates: {speed: false}\n", 2, "unknown key(s) speed", id="bad-gate"),
        pytest.param("out_of_scope: [q]\nlatency: {p95_end_to_end_ms: fast}\n", 2, "must be a number", id="latency"),
        pytest.param(
            "in_scope:\n- query: q\n  expected_sections: [a]\n  match: some\n", 2, "match must be", id="match"
        ),
        pytest.param(
            "in_scope:\n  - {id: a, query: q, expected_sections: [s]}\n  - {id: a, query: r, expected_sections: [s]}\n",
            3,
            "duplicate query id 'a'",
            id="dup-id",
        ),  # fmt: skip
        pytest.param("in_scope:\n  - query: [unclosed\n", 3, "invalid YAML", id="yaml-syntax"),
        pytest.param("- a\n- b\n", None, "a suite must be a mapping", id="list"),
    ],
)
def test_suite_errors_name_file_and_line(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError) as info:
        load_suite(path)
    assert message in str(info.value)
    assert info.value.path == str(path)
    assert info.value.line == line


def test_malformed_json_suite(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text('{\n  "in_scope": [\n    {"query": "q",}\n  ]\n}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=r"suite\.json:3: invalid JSON"):
        load_suite(path)


def test_missing_and_empty_suite(tmp_path: Path) -> None:
    with pytest.raises(DeltapError, match="does not exist; write one or run `deltap init-check"):
        load_suite(tmp_path / "nope.yaml")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n", encoding="utf-8")
    with pytest.raises(FormatError, match="the suite is empty"):
        load_suite(tmp_path / "empty.yaml")
    with pytest.raises(FormatError, match="the suite has no queries"):
        parse_suite({"top_k": 5})


@pytest.mark.parametrize("q", [0, 25, 50, 95, 99, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    rng = np.random.default_rng(7)
    xs = list(rng.exponential(10.0, size=37))
    assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), abs=1e-12)


def test_percentile_small_values() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0], 95) == 10.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], 95) == pytest.approx(10.5)


def test_threshold_separable_is_midpoint() -> None:
    cal = propose_threshold([0.6, 0.7, 0.55], [0.1, 0.3, 0.2])
    assert cal["threshold"] == pytest.approx(0.425)
    assert cal["separable"] and cal["youden_j"] == 1.0 and cal["margin"] == pytest.approx(0.125)


def test_threshold_overlap_maximises_youden() -> None:
    # in: 0.5 0.6 0.7 0.8 ; out: 0.1 0.2 0.55 -> best cut keeps 3/4 in and rejects 3/3 out (J = 0.75) at 0.575,
    # or keeps 4/4 and rejects 2/3 (J = 0.667) at 0.35; J decides.
    cal = propose_threshold([0.5, 0.6, 0.7, 0.8], [0.1, 0.2, 0.55])
    assert not cal["separable"]
    assert cal["threshold"] == pytest.approx(0.575)
    assert (cal["in_kept"], cal["out_rejected"]) == (3, 3)
    assert cal["youden_j"] == pytest.approx(0.75)


def test_threshold_needs_both_sides() -> None:
    with pytest.raises(DeltapError, match="needs both in-scope and out-of-scope"):
        propose_threshold([0.5], [])


def _corpus() -> Corpus:
    docs = []
    for section, headings in (("s-a", ["A1", "A2", "A3", "A4"]), ("s-b", ["B1"])):
        for i, h in enumerate(headings):
            for j in range(2):  # two chunks per heading: only one query per heading
                docs.append(
                    Document(f"{section}/{i}#{j}", f"text {h}", "Page", {"document_section": section, "heading": h})
                )
    return Corpus(docs)


def test_starter_suite() -> None:
    text = starter_suite_yaml(_corpus(), per_section=2, corpus_path="corpus.jsonl")
    assert text == starter_suite_yaml(_corpus(), per_section=2, corpus_path="corpus.jsonl")  # deterministic
    import yaml

    s = parse_suite(yaml.safe_load(text), source="starter")
    assert [(q.query_id, q.query, q.expected_sections) for q in s.in_scope] == [
        ("s-a-1", "A1 (Page)", ("s-a",)),
        ("s-a-2", "A3 (Page)", ("s-a",)),  # spread over the section's headings
        ("s-b-1", "B1 (Page)", ("s-b",)),
    ]
    assert [q.query for q in s.out_of_scope] == list(DEFAULT_OUT_OF_SCOPE)
    assert s.score_threshold is None and s.corpus == "corpus.jsonl"
    assert "# from chunk s-a/0#0" in text and "--calibrate" in text


def test_starter_suite_needs_sections() -> None:
    with pytest.raises(DeltapError, match="no document has a 'document_section'"):
        starter_suite_yaml(Corpus([Document("d", "t")]))
    with pytest.raises(DeltapError, match="corpus is empty"):
        starter_suite_yaml(Corpus([]))
