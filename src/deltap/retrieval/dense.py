"""Dense retrieval: documents embedded once into a Qdrant collection, queries embedded and searched by cosine.

* :func:`index_corpus` writes (or brings up to date) an index: only new or changed documents are embedded (and
  those come from the :class:`~deltap.retrieval.cache.EmbeddingCache` when their text was embedded before), points
  are upserted in batches under deterministic ids, documents no longer in the corpus are deleted, and the index is
  marked complete only at the end — an interrupted run leaves whole batches, and the next run finishes the job
  without duplicates. The build holds the index's lock (:mod:`deltap.retrieval.stores`): another process is refused
  in one line until it ends.
* :class:`DenseRetriever` searches an index; it records the time spent embedding the query and searching the store
  of the last call (``last_embed_seconds``, ``last_search_seconds``).

Every hit's metadata is the document's metadata exactly as it was at indexing time.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.retrieval._common import check_filter, metadata_fields, rank, validate_queries
from deltap.retrieval.base import Hit, validate_query
from deltap.retrieval.cache import EmbeddingCache
from deltap.retrieval.embedders import Embedder
from deltap.retrieval.stores import RESERVED, IndexInfo, StoredHit, VectorStore

__all__ = ["DenseRetriever", "IndexReport", "content_hash", "index_corpus", "stored_document"]


def content_hash(doc: Document) -> str:
    """SHA-256 of a document's title, text and metadata (a change in any of them re-indexes the document)."""
    blob = json.dumps([doc.title, doc.text, dict(doc.metadata)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _payload(doc: Document, position: int) -> dict[str, Any]:
    meta = dict(doc.metadata)
    if RESERVED in meta:
        raise DeltapError(f"document {doc.doc_id!r}: metadata key {RESERVED!r} is reserved by deltap; rename it")
    own_id = "doc_id" in meta
    if own_id and meta["doc_id"] != doc.doc_id:
        raise DeltapError(
            f"document {doc.doc_id!r}: its metadata has doc_id={meta['doc_id']!r}, which would shadow the document id "
            "in the index payload; rename that metadata key"
        )
    return {
        **meta,
        "doc_id": doc.doc_id,
        RESERVED: {
            "title": doc.title,
            "text": doc.text,
            "hash": content_hash(doc),
            "position": position,
            "doc_id_in_metadata": own_id,
        },
    }


def _metadata(payload: Mapping[str, Any]) -> dict[str, Any]:
    reserved = payload.get(RESERVED) or {}
    meta = {k: v for k, v in payload.items() if k not in (RESERVED, "doc_id")}
    if reserved.get("doc_id_in_metadata"):
        meta["doc_id"] = payload["doc_id"]
    return meta


def stored_document(payload: Mapping[str, Any]) -> Document:
    """The :class:`Document` a stored payload was made from (text, title and metadata as indexed)."""
    reserved = payload.get(RESERVED) or {}
    return Document(
        doc_id=str(payload["doc_id"]),
        text=str(reserved.get("text", "")),
        title=str(reserved.get("title", "")),
        metadata=_metadata(payload),
    )


@dataclass
class IndexReport:
    """What one :func:`index_corpus` run did.

    Attributes:
        added: Documents new to the index.
        updated: Documents whose content or position changed.
        unchanged: Documents already indexed as they are.
        removed: Documents deleted because they are no longer in the corpus.
        embedded: Vectors computed by the embedder in this run.
        cached: Vectors read from the embedding cache.
        seconds: Wall-clock time.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed; "
            f"{self.embedded} embedded, {self.cached} from cache, {self.seconds:.1f} s"
        )


def index_corpus(
    corpus: Corpus,
    store: VectorStore,
    embedder: Embedder,
    *,
    cache: EmbeddingCache,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> IndexReport:
    """Bring ``store`` in line with ``corpus`` (see the module docstring).

    Args:
        corpus: Documents to index; their order is the tie-breaker recorded in each point.
        store: Target collection (created when missing).
        embedder: Model; must match the one the collection was built with.
        cache: Embedding cache.
        batch_size: Documents per embedding call and per upsert.
        progress: Called as ``progress(done, total)`` over the documents that need writing.

    Raises:
        IndexMismatchError: the collection was built with another embedder.
        DeltapError: reserved metadata keys.
    """
    start = time.perf_counter()
    if batch_size <= 0:
        raise DeltapError(f"batch_size must be positive, got {batch_size}")
    docs = list(corpus)
    payloads = [_payload(d, i) for i, d in enumerate(docs)]  # validate every document before writing anything
    info = store.read_info()
    fields = metadata_fields(corpus)
    if info is None:
        info = IndexInfo(
            embedder=embedder.name,
            dimension=embedder.dimension,
            collection=getattr(store, "collection", ""),
            n_documents=len(docs),
            metadata_fields=fields,
            corpus_name=corpus.name,
        )
        store.create(info)
        existing: dict[str, Mapping[str, Any]] = {}
    else:
        info.check_embedder(embedder.name, embedder.dimension, store.location)
        existing = dict(store.scan())
        info.complete = False
        info.n_documents = len(docs)
        info.metadata_fields = fields
        info.corpus_name = corpus.name
        store.write_info(info)

    report = IndexReport()
    todo: list[int] = []
    for i, doc in enumerate(docs):
        old = existing.get(doc.doc_id)
        new = payloads[i][RESERVED]
        if old is None:
            report.added += 1
            todo.append(i)
        elif old.get("hash") != new["hash"] or old.get("position") != new["position"]:
            report.updated += 1
            todo.append(i)
        else:
            report.unchanged += 1
    stale = sorted(set(existing) - set(corpus.ids))

    hits0, misses0 = cache.hits, cache.misses
    done = 0
    if progress is not None:
        progress(0, len(todo))
    for s in range(0, len(todo), batch_size):
        rows = todo[s : s + batch_size]
        vectors = cache.embed_documents(embedder, [docs[i].full_text for i in rows], batch_size=batch_size)
        store.upsert([docs[i].doc_id for i in rows], vectors, [payloads[i] for i in rows])
        done += len(rows)
        if progress is not None:
            progress(done, len(todo))
    if stale:
        store.delete(stale)
    report.removed = len(stale)
    report.embedded = cache.misses - misses0
    report.cached = cache.hits - hits0

    count = store.count()
    if count != len(docs):
        raise DeltapError(
            f"{store.location} holds {count} points after indexing {len(docs)} documents; re-run `deltap index` "
            "(points written by another tool?)"
        )
    info.complete = True
    store.write_info(info)
    store.release()  # a reader (this process's retriever, or another process) reopens the finished index
    report.seconds = time.perf_counter() - start
    return report


class DenseRetriever:
    """Cosine search over an indexed collection.

    Args:
        store: The collection (its :class:`IndexInfo` must exist and be complete unless ``allow_incomplete``).
        embedder: Query embedder; must match the index's.
        exact: Exact (brute-force) search; ``False`` lets Qdrant use its HNSW index on large collections.
        allow_incomplete: Open an index whose last indexing run did not finish.

    Attributes:
        last_embed_seconds: Time spent embedding the queries of the last search call.
        last_search_seconds: Time spent in the vector store (and ranking) in the last search call.

    Raises:
        IndexMismatchError: embedder name or dimension differ from the index's.
        DeltapError: no index, or an incomplete one.
    """

    def __init__(
        self, store: VectorStore, embedder: Embedder, *, exact: bool = True, allow_incomplete: bool = False
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.exact = exact
        self.allow_incomplete = allow_incomplete
        self.name = f"dense({embedder.name})"
        self.last_embed_seconds = 0.0
        self.last_search_seconds = 0.0
        self._acquire()

    def _acquire(self) -> None:
        """Open the store (taking the index's lock) and read its description and size."""
        store = self.store
        first = store.read_info()
        if first is None:
            raise DeltapError(f"no deltap index at {store.location}; build it with `deltap index`")
        first.check_embedder(self.embedder.name, self.embedder.dimension, store.location)
        self.count = store.count()  # opens the store: its description is read under the index's lock
        info = store.read_info()
        if info is None:
            raise DeltapError(f"no deltap index at {store.location}; build it with `deltap index`")
        info.check_embedder(self.embedder.name, self.embedder.dimension, store.location)
        if not info.complete and not self.allow_incomplete:
            raise DeltapError(
                f"the index at {store.location} is incomplete ({self.count} of {info.n_documents} documents: an "
                "indexing run was interrupted); re-run `deltap index` to finish it"
            )
        self.info = info
        self._held = True

    def release(self) -> None:
        """Let go of the index (its lock: another process may open it) until the next search, which reopens it and
        reads its description again."""
        self.store.release()
        self._held = False

    def close(self) -> None:
        """Release the store."""
        self.store.close()
        self._held = False

    def __enter__(self) -> DenseRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` by cosine similarity, ties by corpus position."""
        validate_query(query, k)
        return self._search([query], k, filter)[0]

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for many queries: one embedding call and one batched store query."""
        validate_queries(queries, k)
        return self._search(list(queries), k, filter)

    def search_documents(
        self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[tuple[Hit, Document]]:
        """:meth:`search`, each hit with the stored :class:`Document` (title and text as indexed), for display."""
        validate_query(query, k)
        return self._search([query], k, filter, with_documents=True)[0]

    def _search(
        self, queries: list[str], k: int, filter: Mapping[str, Any] | None, with_documents: bool = False
    ) -> list[list[Any]]:
        if not self._held:
            self._acquire()
        flt = check_filter(filter, self.info.metadata_fields)
        if not queries:
            self.last_embed_seconds = self.last_search_seconds = 0.0
            return []
        t0 = time.perf_counter()
        vectors = self.embedder.embed_queries(queries)
        t1 = time.perf_counter()
        # Fetch a margin beyond k so that ties at the cut are ordered by corpus position, not by point id.
        limit = min(k + 8, max(self.count, 1))
        raw = self.store.query(vectors, limit, flt, self.exact)
        out: list[list[Any]] = []
        for qi, points in enumerate(raw):
            lim = limit
            while (
                len(points) == lim and lim < self.count and len(points) > k and points[-1].score >= points[k - 1].score
            ):
                lim = min(lim * 4, self.count)
                points = self.store.query(vectors[qi : qi + 1], lim, flt, self.exact)[0]
            out.append(self._rank(points, k, with_documents))
        self.last_embed_seconds = t1 - t0
        self.last_search_seconds = time.perf_counter() - t1
        return out

    @staticmethod
    def _rank(points: list[StoredHit], k: int, with_documents: bool) -> list[Any]:
        by_id = {p.doc_id: p.payload for p in points}
        hits = rank(
            (
                (p.doc_id, p.score, int((p.payload.get(RESERVED) or {}).get("position", 0)), _metadata(p.payload))
                for p in points
            ),
            k,
        )
        if not with_documents:
            return hits
        return [(h, stored_document(by_id[h.doc_id])) for h in hits]
