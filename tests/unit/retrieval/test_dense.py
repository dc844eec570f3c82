"""Dense retrieval over real Qdrant engines (Edge and qdrant-client local mode) with the instant hashing embedder.

Congruence between the two engines, determinism, persistence, filters, resumable indexing, the embedding cache,
index/embedder mismatch and the bad-input cases. The real MiniLM model is exercised in tests/integration.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.retrieval import build_retriever, open_index
from deltap.retrieval.cache import EmbeddingCache, text_hash
from deltap.retrieval.dense import DenseRetriever, index_corpus
from deltap.retrieval.embedders import HashingEmbedder, load_embedder
from deltap.retrieval.factory import open_store
from deltap.retrieval.stores import EdgeStore, IndexMismatchError, QdrantClientStore

WORDS = "lift drag wing flap stall agent tool session memory runner event plate flow shock nozzle".split()


def make_corpus(n: int = 24, seed: int = 0, name: str = "toy") -> Corpus:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        words = rng.choice(WORDS, size=6)
        docs.append(
            Document(
                f"doc-{i}",
                text=" ".join(words),
                title=f"Title {i}",
                metadata={"document_section": ["aero", "api", "fluids"][i % 3], "heading": f"H{i}", "rank": i},
            )
        )
    return Corpus(docs, name=name)


QUERIES = ["lift and drag of a wing", "agent tool session", "shock in a nozzle flow", "memory runner event", "stall"]


class CountingEmbedder(HashingEmbedder):
    """Hashing embedder that counts documents embedded and can fail after a number of calls (an interruption)."""

    def __init__(self, fail_after_calls: int | None = None) -> None:
        super().__init__(64)
        self.embedded = 0
        self.calls = 0
        self.fail_after_calls = fail_after_calls

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_after_calls is not None and self.calls >= self.fail_after_calls:
            raise KeyboardInterrupt("simulated interruption")
        self.calls += 1
        self.embedded += len(texts)
        return super().embed_documents(texts)


@pytest.fixture()
def cache(tmp_path: Path) -> EmbeddingCache:
    with EmbeddingCache(tmp_path / "cache") as c:
        yield c


def _index(corpus: Corpus, store: EdgeStore | QdrantClientStore, embedder, cache: EmbeddingCache, **kw):  # type: ignore[no-untyped-def]
    return index_corpus(corpus, store, embedder, cache=cache, **kw)


# --------------------------------------------------------------------------------------------------- congruence
def test_edge_and_qdrant_client_local_mode_agree(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(30)
    emb = HashingEmbedder(64)
    edge = EdgeStore(tmp_path / "edge", "c")
    local = QdrantClientStore("c", path=tmp_path / "local")
    _index(corpus, edge, emb, cache)
    _index(corpus, local, emb, cache)
    with DenseRetriever(edge, emb) as a, DenseRetriever(local, emb) as b:
        for flt in (None, {"document_section": "api"}, {"rank": [1, 2, 3, 4, 5, 6]}):
            ra, rb = a.search_batch(QUERIES, k=7, filter=flt), b.search_batch(QUERIES, k=7, filter=flt)
            for ha, hb in zip(ra, rb, strict=True):
                assert [h.doc_id for h in ha] == [h.doc_id for h in hb]
                assert [h.score for h in ha] == pytest.approx([h.score for h in hb], abs=1e-6)
                assert [h.metadata for h in ha] == [h.metadata for h in hb]


def test_scores_are_cosine_similarities(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(12)
    emb = HashingEmbedder(64)
    store = EdgeStore(tmp_path / "s", "c")
    _index(corpus, store, emb, cache)
    with DenseRetriever(store, emb) as r:
        hits = r.search(QUERIES[0], k=12)
    docs = emb.embed_documents([d.full_text for d in corpus])
    q = emb.embed_queries([QUERIES[0]])[0]
    expected = {d.doc_id: float(docs[i] @ q) for i, d in enumerate(corpus)}
    assert {h.doc_id: h.score for h in hits} == pytest.approx(expected, abs=1e-5)
    assert [h.rank for h in hits] == list(range(1, 13))


# --------------------------------------------------------------------------------------------------- determinism, ties
def test_repeat_search_is_identical(tmp_path: Path, cache: EmbeddingCache) -> None:
    retriever = build_retriever("dense", make_corpus(), store=tmp_path / "s", embedder="hash:64", cache_dir=cache.dir)
    first = retriever.search_batch(QUERIES, k=10)
    for _ in range(3):
        assert retriever.search_batch(QUERIES, k=10) == first
    assert [retriever.search(q, k=10) for q in QUERIES] == first
    # ...and what they repeat is the exact cosine ranking (ties by corpus position), computed here with numpy.
    corpus = make_corpus()
    emb = HashingEmbedder(64)
    doc_vecs = emb.embed_documents([d.full_text for d in corpus])
    ids = [d.doc_id for d in corpus]
    for q, hits in zip(QUERIES, first, strict=True):
        sims = doc_vecs @ emb.embed_queries([q])[0]
        order = sorted(range(len(ids)), key=lambda i: (-round(float(sims[i]), 5), i))[:10]
        assert [h.doc_id for h in hits] == [ids[i] for i in order], q
        assert [h.score for h in hits] == pytest.approx([float(sims[i]) for i in order], abs=1e-5)


def test_ties_are_broken_by_corpus_position(tmp_path: Path, cache: EmbeddingCache) -> None:
    # 30 identical documents: more ties than the retriever's over-fetch margin; order must follow the corpus
    docs = [Document(f"z{29 - i:02d}", text="identical wing text") for i in range(30)]
    docs.insert(7, Document("other", text="agent tool"))
    corpus = Corpus(docs)
    r = build_retriever("dense", corpus, store=tmp_path / "s", embedder="hash:64", cache_dir=cache.dir)
    hits = r.search("wing", k=5)
    assert [h.doc_id for h in hits] == ["z29", "z28", "z27", "z26", "z25"]
    assert len({h.score for h in hits}) == 1


# --------------------------------------------------------------------------------------------------- persistence, metadata
def test_reopen_index_and_metadata_roundtrip(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = Corpus(
        [
            Document(
                "a",
                text="wing lift",
                title="A",
                metadata={"document_section": "aero", "tags": ["x", "y"], "doc_id": "a"},
            ),
            Document("b", text="agent tool", metadata={"nested": {"k": [1, 2]}, "flag": False, "ratio": 0.25}),
            Document("c", text="session memory"),
        ]
    )
    r = build_retriever("dense", corpus, store=tmp_path / "s", embedder="hash:64", cache_dir=cache.dir)
    before = r.search_batch(["wing", "agent", "memory"], k=3)
    r.close()
    del r
    reopened = open_index(str(tmp_path / "s"))  # embedder read from the index; the only collection picked
    after = reopened.search_batch(["wing", "agent", "memory"], k=3)
    assert after == before
    by_id = {h.doc_id: h for hits in after for h in hits}
    for doc in corpus:
        assert dict(by_id[doc.doc_id].metadata) == dict(doc.metadata)  # exactly, nothing added, nothing lost
    hit, doc = reopened.search_documents("wing", k=1)[0]
    assert (hit.doc_id, doc.title, doc.text) == ("a", "A", "wing lift")
    reopened.close()


def test_search_timings_come_from_the_clock(
    tmp_path: Path, cache: EmbeddingCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``last_embed_seconds`` is the time around the embedding call, ``last_search_seconds`` the rest (fake clock)."""
    import deltap.retrieval.dense as dense

    r = build_retriever("dense", make_corpus(8), store=tmp_path / "s", embedder="hash:64", cache_dir=cache.dir)
    ticks = iter([10.0, 10.25, 11.0])  # before embedding, after embedding, after the store query and ranking
    monkeypatch.setattr(dense, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    r.search_batch(QUERIES[:2], k=3)
    assert (r.last_embed_seconds, r.last_search_seconds) == (0.25, 0.75)
    r.search_batch([], k=3)  # nothing searched: nothing timed
    assert (r.last_embed_seconds, r.last_search_seconds) == (0.0, 0.0)
    r.close()


def test_filters_pass_through_to_qdrant(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(24)
    r = build_retriever("dense", corpus, store=tmp_path / "s", embedder="hash:64", cache_dir=cache.dir)
    hits = r.search("lift wing agent", k=24, filter={"document_section": "api"})
    assert {h.doc_id for h in hits} == {d.doc_id for d in corpus if d.metadata["document_section"] == "api"}
    assert {h.doc_id for h in r.search("lift", 5, filter={"doc_id": ["doc-3", "doc-4"]})} == {"doc-3", "doc-4"}
    assert [h.doc_id for h in r.search("lift", 5, filter={"rank": 7})] == ["doc-7"]
    with pytest.raises(DeltapError, match="unknown filter field.*secton"):
        r.search("lift", 5, filter={"secton": "api"})


# --------------------------------------------------------------------------------------------------- resumable indexing
def test_interrupted_index_resumes_without_duplicates(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(30)
    store_dir = tmp_path / "s"
    crashing = CountingEmbedder(fail_after_calls=2)
    interrupted = EdgeStore(store_dir, "deltap")
    with pytest.raises(KeyboardInterrupt):
        _index(corpus, interrupted, crashing, cache, batch_size=8)
    interrupted.close()  # what `deltap index` does on Ctrl-C (and a process exit does anyway)
    partial = EdgeStore(store_dir, "deltap")
    assert partial.count() == 16  # two whole batches, nothing half-written
    assert partial.read_info().complete is False  # type: ignore[union-attr]
    partial.close()
    with pytest.raises(DeltapError, match="incomplete .*16 of 30"):
        open_index(str(store_dir), embedder=CountingEmbedder())
    resumed = CountingEmbedder()
    report = _index(corpus, EdgeStore(store_dir, "deltap"), resumed, cache, batch_size=8)
    assert (report.added, report.unchanged, report.embedded, report.cached) == (14, 16, 14, 0)
    assert resumed.embedded == 14
    r = open_index(str(store_dir), embedder=CountingEmbedder())
    assert r.count == 30 and r.info.complete
    ids = [h.doc_id for h in r.search("lift drag wing agent", k=30)]
    assert sorted(ids) == sorted(corpus.ids)  # every document once
    r.close()


def test_reindex_embeds_only_new_or_changed(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(20)
    emb = CountingEmbedder()
    store = EdgeStore(tmp_path / "s", "deltap")
    _index(corpus, store, emb, cache)
    assert emb.embedded == 20
    again = _index(corpus, store, emb, cache)
    assert (again.unchanged, again.embedded, emb.embedded) == (20, 0, 20)
    docs = list(corpus)
    docs[3] = Document("doc-3", text="a brand new text about nozzles", metadata=docs[3].metadata)
    docs[5] = Document("doc-5", text=docs[5].text, title=docs[5].title, metadata={"document_section": "moved"})
    docs = [d for d in docs if d.doc_id != "doc-9"] + [Document("doc-new", text="fresh document")]
    changed = _index(Corpus(docs), store, emb, cache)
    # doc-5's text is unchanged: its vector comes from the cache; doc-9 is gone, so later positions shift
    assert (changed.added, changed.removed) == (1, 1)
    assert changed.embedded == 2 and emb.embedded == 22
    assert store.count() == 20
    with DenseRetriever(store, emb) as r:
        hit = r.search("nozzles", k=1, filter={"doc_id": "doc-5"})[0]
        assert hit.metadata == {"document_section": "moved"}
        assert r.info.metadata_fields == ["document_section", "heading", "rank"]


def test_embedding_cache_is_shared_across_indexes(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(10)
    emb = CountingEmbedder()
    _index(corpus, EdgeStore(tmp_path / "one", "c"), emb, cache)
    report = _index(corpus, EdgeStore(tmp_path / "two", "c"), emb, cache)
    assert (report.embedded, report.cached, emb.embedded) == (0, 10, 10)
    # The cache holds exactly the corpus vectors, under the text hash, for this embedder only.
    texts = [d.full_text for d in corpus]
    hashes = [text_hash(t) for t in texts]
    vectors = cache.get_many(emb.name, [*hashes, text_hash("never embedded"), hashes[0]])
    assert set(vectors) == set(hashes)
    expected = HashingEmbedder(64).embed_documents(texts)
    for h, vec in zip(hashes, expected, strict=True):
        np.testing.assert_array_equal(vectors[h], vec.astype(np.float32))
    assert cache.get_many("another-model", hashes) == {}
    assert cache.get_many(emb.name, []) == {}


# --------------------------------------------------------------------------------------------------- refusals and errors
def test_index_built_with_another_embedder_is_refused(tmp_path: Path, cache: EmbeddingCache) -> None:
    corpus = make_corpus(5)
    _index(corpus, EdgeStore(tmp_path / "s", "deltap"), HashingEmbedder(64), cache)
    with pytest.raises(
        IndexMismatchError, match="built with embedder deltap/hashing-64 \\(64 dimensions\\), not deltap/hashing-32"
    ):
        _index(corpus, EdgeStore(tmp_path / "s", "deltap"), HashingEmbedder(32), cache)
    with pytest.raises(IndexMismatchError, match="deltap/hashing-64"):
        open_index(str(tmp_path / "s"), embedder="hash:32")


def test_reserved_metadata_keys_are_refused_before_writing(tmp_path: Path, cache: EmbeddingCache) -> None:
    bad = Corpus([Document("a", text="x"), Document("b", text="y", metadata={"doc_id": "not-b"})])
    with pytest.raises(DeltapError, match="doc_id='not-b'"):
        _index(bad, EdgeStore(tmp_path / "s", "c"), HashingEmbedder(8), cache)
    assert not (tmp_path / "s").exists()
    with pytest.raises(DeltapError, match="reserved"):
        _index(
            Corpus([Document("a", text="x", metadata={"_deltap": 1})]),
            EdgeStore(tmp_path / "s", "c"),
            HashingEmbedder(8),
            cache,
        )


def test_missing_index_path_and_collection(tmp_path: Path) -> None:
    with pytest.raises(DeltapError, match="index not found: .*nowhere does not exist"):
        open_index(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DeltapError, match="no collection 'deltap'.*holds no deltap index"):
        open_index(str(tmp_path / "empty"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(DeltapError, match="is a file"):
        open_index(str(tmp_path / "file"))
    with pytest.raises(DeltapError, match="bad collection name"):
        EdgeStore(tmp_path, "../escape")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_qdrant_url_that_does_not_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(DeltapError, match=f"Qdrant at {url} does not answer"):
        open_index(url)
    monkeypatch.setenv("QDRANT_URL", url)
    with pytest.raises(DeltapError, match="does not answer"):
        open_store(None)
    monkeypatch.delenv("QDRANT_URL")
    with pytest.raises(DeltapError, match="set QDRANT_URL"):
        open_store(None)
    with pytest.raises(DeltapError, match="does not answer"):
        build_retriever("dense", make_corpus(3), url=url, embedder="hash:8", cache_dir=tmp_path / "c")


def test_dense_bad_queries(tmp_path: Path, cache: EmbeddingCache) -> None:
    r = build_retriever("dense", make_corpus(5), store=tmp_path / "s", embedder="hash:16", cache_dir=cache.dir)
    for query, k in (("", 3), ("  ", 3), ("lift", 0), ("lift", -1)):
        with pytest.raises(DeltapError):
            r.search(query, k)
    assert len(r.search("lift", k=100)) == 5  # k beyond the corpus: every document once


def test_in_memory_dense_and_hybrid(tmp_path: Path) -> None:
    corpus = make_corpus(12)
    dense = build_retriever("dense", corpus, embedder="hash:64", cache_dir=tmp_path / "c")
    hybrid = build_retriever("hybrid", corpus, embedder="hash:64", cache_dir=tmp_path / "c", rrf_k=10)
    assert dense.search("lift wing", 3) == dense.search("lift wing", 3)
    fused = hybrid.search("lift wing", 12)
    assert {h.doc_id for h in fused} <= set(corpus.ids)
    assert hybrid.name.startswith("rrf(k=10:bm25")


def test_load_embedder_specs(tmp_path: Path) -> None:
    assert load_embedder("hash:32").dimension == 32
    assert load_embedder("deltap/hashing-48").name == "deltap/hashing-48"
    emb = HashingEmbedder(8)
    assert load_embedder(emb) is emb
    with pytest.raises(DeltapError, match="unknown embedder 'nope'"):
        load_embedder("nope")
    with pytest.raises(DeltapError, match="bad hashing embedder"):
        load_embedder("hash:x")
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(DeltapError, match="not a sentence-transformers model folder"):
        load_embedder(str(tmp_path / "not-a-model"))


def test_index_held_by_another_process_is_a_clear_error(
    tmp_path: Path, cache: EmbeddingCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    build_retriever("dense", make_corpus(4), store=tmp_path / "s", embedder="hash:16", cache_dir=cache.dir).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from deltap.retrieval import open_index; r = open_index({str(tmp_path / 's')!r}); print('open', flush=True); input()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        monkeypatch.setenv("DELTAP_INDEX_WAIT", "0.5")
        with pytest.raises(
            DeltapError, match=r"is being read by another process \(pid \d+: .*waited 0.5 s.*Qdrant server"
        ):
            open_index(str(tmp_path / "s"))
    finally:
        holder.communicate("\n", timeout=30)
    assert open_index(str(tmp_path / "s")).count == 4  # released when the holder exits
