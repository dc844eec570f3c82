"""API-symbol and Python-package corpus builders, and the real-data loaders (ADK, Cranfield)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from deltap.corpora.api_symbols import read_api_symbols, render_symbol
from deltap.corpora.python_package import build_python_corpus
from deltap.errors import DeltapError, FormatError, MissingIdsError
from deltap.loaders import load_beir, load_cases, load_corpus

SYMBOLS = """
- id: pkg.mod.Widget
  name: Widget
  type: CLASS
  docstring: "A widget.\\n\\nLonger text."
  constructor_signature: 'def __init__(self, size: int = 1):'
  aliases: [pkg.Widget]
  methods:
  - signature: 'def grow(self, by: int) -> None:'
    docstring: "Grow the widget.\\nMore."
  inherited_methods:
    Base:
    - signature: 'def close(self):'
- id: pkg.mod.helper
  type: FUNCTION
  signature: 'def helper(x):'
"""


def test_api_symbols_render_readably(tmp_path: Path) -> None:
    path = tmp_path / "symbols.yaml"
    path.write_text(SYMBOLS)
    corpus = read_api_symbols(path)
    widget = corpus["pkg.mod.Widget"]
    assert widget.text.splitlines()[:3] == [
        "Class pkg.mod.Widget",
        "Signature: def __init__(self, size: int = 1):",
        "A widget.",
    ]
    assert "  def grow(self, by: int) -> None:\n    Grow the widget." in widget.text
    assert "Inherited methods from Base: close" in widget.text
    assert widget.metadata["aliases"] == ["pkg.Widget"] and widget.title == "Widget"
    assert corpus["pkg.mod.helper"].text == "Function pkg.mod.helper\nSignature: def helper(x):"
    assert render_symbol({"id": "m", "type": "MODULE"}) == "Module m"


def test_api_symbols_duplicates_kept_with_warning_or_error(tmp_path: Path) -> None:
    path = tmp_path / "symbols.yaml"
    path.write_text(SYMBOLS + "- id: pkg.mod.helper\n  type: FUNCTION\n")
    corpus = read_api_symbols(path)
    assert len(corpus.notes) == 1 and "pkg.mod.helper -> pkg.mod.helper~2" in corpus.notes[0]
    assert corpus["pkg.mod.helper~2"].metadata["duplicate_of"] == "pkg.mod.helper"
    from deltap.errors import DuplicateIdsError

    with pytest.raises(DuplicateIdsError):
        read_api_symbols(path, on_duplicate="error")


def test_api_symbols_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "symbols.yaml"
    path.write_text("- id: a\n- name: no-id\n")
    with pytest.raises(FormatError, match="symbol #2 has no string 'id'"):
        read_api_symbols(path)
    path.write_text("- id: [unclosed\n")
    with pytest.raises(FormatError, match="invalid YAML") as info:
        read_api_symbols(path)
    assert info.value.line is not None


def test_adk_corpus_yields_1927_documents(adk_dir: Path) -> None:
    corpus = load_corpus(adk_dir / "corpus_ranked_targets.yaml")
    assert len(corpus) == 1927
    assert "google.adk.sessions.schemas.v0.StorageEvent.long_running_tool_ids~2" in corpus.notes[0]
    agent = corpus["google.adk.agents.llm_agent.LlmAgent"]
    assert agent.text.startswith("Class google.adk.agents.llm_agent.LlmAgent\nSignature: def __init__(")
    cases = load_cases(adk_dir / "api_understanding.yaml", corpus=corpus, on_missing="skip")
    assert len(cases) == 41
    assert all(c.gold_doc_ids for c in cases)
    assert all(g in corpus for c in cases for g in c.gold_doc_ids)
    with pytest.raises(MissingIdsError, match="gold document ids not found"):
        load_cases(adk_dir / "api_understanding.yaml", corpus=load_corpus(adk_dir / "corpus_ranked_targets.yaml"))


def test_cranfield_beir_counts(cranfield_dir: Path) -> None:
    data = load_beir(cranfield_dir)
    assert (len(data.corpus), len(data.queries), data.n_judgements) == (1400, 225, 1612)
    assert set(data.qrels) <= set(data.queries)
    cases = load_cases(cranfield_dir)
    assert len(cases) == 225 and cases[0].case_id == "1" and cases[0].benchmark_type == "beir"


def test_beir_missing_ids_listed_or_skipped(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td404\t1\nq9\td1\t1\n")
    with pytest.raises(MissingIdsError, match="query ids in qrels not found .*: q9"):
        load_beir(tmp_path)
    data = load_beir(tmp_path, on_missing="skip")
    assert data.qrels == {"q1": {"d1": 1}}
    with pytest.raises(FileNotFoundError, match="has no qrels/dev.tsv"):
        load_beir(tmp_path, split="dev")


def test_python_package_corpus() -> None:
    corpus = build_python_corpus(["json", "json.decoder", "itertools"])
    assert "json" in corpus and corpus["json"].metadata["type"] == "MODULE"
    loads = corpus["json.loads"]
    assert loads.metadata["type"] == "FUNCTION"
    assert loads.text.startswith("Function json.loads\nSignature: def loads(s, *, cls=None")
    assert "Deserialize" in loads.text
    # json.JSONDecoder is defined in json.decoder (also listed): documented there, aliased from json.
    assert "json.JSONDecoder" not in corpus
    assert corpus["json.decoder.JSONDecoder"].metadata["aliases"] == ["json.JSONDecoder"]
    assert corpus["json.decoder.JSONDecoder.decode"].metadata["type"] == "METHOD"
    assert corpus["itertools.groupby"].metadata["type"] == "CLASS"
    again = build_python_corpus(["json", "json.decoder", "itertools"])
    assert [d.doc_id for d in again] == [d.doc_id for d in corpus]


def test_python_package_corpus_only_imports_named_modules() -> None:
    assert "xml.dom.minidom" not in sys.modules or True  # may be imported by others; check our own effect below
    before = set(sys.modules)
    build_python_corpus(["colorsys"])
    new = {m for m in set(sys.modules) - before if not m.startswith("deltap")}
    assert new <= {"colorsys"}


def test_python_package_corpus_errors() -> None:
    with pytest.raises(DeltapError, match="cannot import module 'no_such_module_xyz'"):
        build_python_corpus(["no_such_module_xyz"])
    with pytest.raises(DeltapError, match="no module names"):
        build_python_corpus([])
