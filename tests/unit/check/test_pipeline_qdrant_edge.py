"""``check_pipeline`` on a real Qdrant Edge store built by ``deltap`` with the hashing embedder (no fake retriever).

The check opens the store itself, reopens it for the determinism gate and compares hit metadata with the ingested
corpus. Clocks are fake (the check's ``clock`` and the retriever's timer), so no figure depends on the machine.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deltap.check import PipelineCheckResult, check_pipeline
from deltap.corpora.markdown import build_markdown_corpus
from deltap.documents import Corpus
from deltap.retrieval import build_retriever
from tests.unit.check.test_pipeline import BOOK, SUITE


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("book")
    for rel, text in BOOK.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return build_markdown_corpus(root, base_url="https://book.example/", chunk_size=400, chunk_overlap=50)


def _index(corpus: Corpus, path: Path) -> Path:
    build_retriever("dense", corpus, store=path / "store", embedder="hash:256", cache_dir=path / "cache").close()
    return path / "store"


def _check(
    store: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch, suite: dict[str, Any] | None = None, **kw: Any
) -> PipelineCheckResult:
    import deltap.retrieval.dense as dense

    ticks = itertools.count()
    monkeypatch.setattr(dense, "time", SimpleNamespace(perf_counter=lambda: 0.001 * next(ticks)))  # 1 ms per reading
    outer = itertools.count()
    return check_pipeline(dict(suite or SUITE), store=store, corpus=corpus, clock=lambda: 0.002 * next(outer), **kw)


def _status(report: PipelineCheckResult) -> dict[str, str]:
    return {c.criterion: c.status for c in report.criteria}


def test_every_gate_passes_on_a_real_edge_store(book: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _check(_index(book, tmp_path), book, monkeypatch)
    assert set(_status(report).values()) == {"PASS"} and report.exit_code == 0, report.summary()
    by = {c.criterion: c for c in report.criteria}
    assert by["in-scope hit@3"].figure.startswith("5/5 queries = 100%")
    assert {q["query_id"]: q["first_rank"] for q in report.queries if q.get("first_rank")} == {
        "nodes": 1,
        "gazebo": 1,
        "urdf": 1,
        "nav": 1,
        "init": 1,
    }
    assert "0 problems; vs ingested corpus" in by["metadata integrity"].figure
    assert "7 queries x 6 runs (incl. after reopening): 0 differ" in by["determinism"].figure
    assert by["latency p95 embed+search"].figure.startswith("p95 2.0 ms")  # 1 ms embedding + 1 ms store, fake timer
    assert by["latency p95 end-to-end"].figure.startswith("p95 2.0 ms")  # one tick of the check's clock


def test_metadata_changed_at_ingestion_fails_the_metadata_gate(
    book: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = list(book)
    broken = docs[0]
    docs[0] = replace(broken, metadata={**broken.metadata, "document_section": "wrong-section"})
    report = _check(_index(Corpus(docs), tmp_path), book, monkeypatch, skip=["latency"])
    st = _status(report)
    assert st["metadata integrity"] == "FAIL" and report.exit_code == 1
    assert {k: v for k, v in st.items() if k != "metadata integrity"} == {
        "in-scope hit@3": "PASS",
        "out-of-scope below threshold": "PASS",
        "determinism": "PASS",
        "latency p95 embed+search": "SKIP",
        "latency p95 end-to-end": "SKIP",
    }
    assert f"hit {broken.doc_id!r} 'document_section' is 'wrong-section' but ingestion stored" in report.failures()


def test_in_scope_query_off_the_corpus_fails_on_a_real_store(
    book: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = {
        **SUITE,
        "in_scope": [{"id": "wrong", "query": "what is a ROS node process", "expected_sections": ["module-03-nav"]}],
    }
    report = _check(_index(book, tmp_path), book, monkeypatch, suite, skip=["latency", "determinism"])
    assert _status(report)["in-scope hit@3"] == "FAIL"
    assert report.queries[0]["missing"] == ["section 'module-03-nav'"]
