"""``deltap index`` and ``deltap search`` in-process (hashing embedder; the real model runs in tests/integration)."""

from __future__ import annotations

import itertools
import json
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from deltap.cli.retrieval_cmd import parse_filters
from deltap.documents import Document, write_corpus_jsonl
from tests.helpers import run_cli


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    words = ["lift", "drag", "agents", "tools", "sessions", "memory", "runners", "events"]
    docs = [
        Document(
            f"d{i}",
            text=f"text number {i} about {w}",
            title=f"T{i}",
            metadata={"document_section": "api" if i % 2 else "guide", "n": i},
        )
        for i, w in enumerate(words)
    ]
    return write_corpus_jsonl(docs, tmp_path / "corpus.jsonl")


def test_index_then_search(
    tmp_path: Path, corpus_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    cache = tmp_path / "cache"
    code, out, _ = run_cli(
        capsys, "index", str(corpus_file), "--store", str(store), "--embedder", "hash", "--cache-dir", str(cache)
    )
    assert code == 0
    assert "8 added, 0 updated, 0 unchanged, 0 removed; 8 embedded" in out
    code, out, _ = run_cli(
        capsys, "index", str(corpus_file), "--store", str(store), "--embedder", "hash", "--cache-dir", str(cache)
    )
    assert code == 0 and "0 added, 0 updated, 8 unchanged, 0 removed; 0 embedded" in out

    import deltap.retrieval.dense as dense

    ticks = itertools.count()  # a fake clock: every reading is 0.5 s after the previous one
    monkeypatch.setattr(dense, "time", SimpleNamespace(perf_counter=lambda: 0.5 * next(ticks)))
    code, out, err = run_cli(capsys, "search", str(store), "agents", "-k", "2", "--json")
    monkeypatch.undo()
    assert code == 0, err
    result = json.loads(out)
    assert [h["rank"] for h in result["hits"]] == [1, 2]
    top = result["hits"][0]
    assert top["doc_id"] == "d2" and top["section"] == "guide" and top["title"] == "T2"
    assert top["preview"] == "text number 2 about agents"
    assert top["metadata"] == {"document_section": "guide", "n": 2}
    assert (result["embed_ms"], result["search_ms"]) == (500.0, 500.0)  # the retriever's timings, in ms

    code, out, _ = run_cli(
        capsys, "search", str(store), "agents", "-k", "3", "--filter", "document_section=api", "--json"
    )
    assert code == 0
    assert {h["metadata"]["document_section"] for h in json.loads(out)["hits"]} == {"api"}
    code, out, _ = run_cli(capsys, "search", str(store), "text", "--filter", "n=3", "--filter", "n=5", "--json")
    assert sorted(h["doc_id"] for h in json.loads(out)["hits"]) == ["d3", "d5"]

    code, out, _ = run_cli(capsys, "search", str(store), "sessions memory", "-k", "3")
    assert code == 0
    assert "d4" in out and "text number 4 about sessions" in out and "rank" in out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["search", "{store}", "   "], "the query is empty", id="blank-query"),
        pytest.param(["search", "{store}", "x", "-k", "0"], "k must be a positive integer", id="k-zero"),
        pytest.param(
            ["search", "{store}", "x", "--filter", "colour=red"], "unknown filter field.*colour", id="unknown-field"
        ),
        pytest.param(["search", "{store}", "x", "--filter", "novalue"], "expected key=value", id="bad-filter"),
        pytest.param(["search", "{tmp}/nowhere", "x"], "index not found", id="missing-index"),
        pytest.param(["search", "http://127.0.0.1:{port}", "x"], "does not answer", id="dead-url"),
        pytest.param(
            ["index", "{corpus}", "--store", "http://127.0.0.1:{port}", "--embedder", "hash"],
            "does not answer",
            id="index-dead-url",
        ),
        pytest.param(
            ["index", "{tmp}/missing.jsonl", "--store", "{tmp}/new", "--embedder", "hash"],
            "corpus not found",
            id="missing-corpus",
        ),
        pytest.param(
            ["index", "{corpus}", "--store", "{store}", "--embedder", "hash:32"],
            "built with embedder deltap/hashing-384",
            id="mismatch",
        ),
        pytest.param(
            ["index", "{corpus}", "--store", "{tmp}/new", "--embedder", "bogus"],
            "unknown embedder 'bogus'",
            id="bad-embedder",
        ),
        pytest.param(
            ["index", "{corpus}", "--store", "{tmp}/new", "--embedder", "cohere"], "COHERE_API_KEY", id="no-cohere-key"
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: list[str],
    message: str,
    tmp_path: Path,
    corpus_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("QDRANT_URL", raising=False)
    store = tmp_path / "store"
    assert (
        run_cli(
            capsys,
            "index",
            str(corpus_file),
            "--store",
            str(store),
            "--embedder",
            "hash",
            "--cache-dir",
            str(tmp_path / "c"),
        )[0]
        == 0
    )
    fields = {"store": str(store), "tmp": str(tmp_path), "corpus": str(corpus_file), "port": str(_closed_port())}
    code, out, err = run_cli(capsys, *[a.format(**fields) for a in args])
    assert code == 2
    assert err.startswith("error: ")
    import re

    assert re.search(message, err), err
    assert not (tmp_path / "new").exists()  # nothing written for a failed run


def test_parse_filters() -> None:
    assert parse_filters(["a=1", "b=true", "c=x y", 'd="2"', "a=2", "e=1.5"]) == {
        "a": [1, 2],
        "b": True,
        "c": "x y",
        "d": "2",
        "e": "1.5",
    }
