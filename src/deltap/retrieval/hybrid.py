"""Hybrid retrieval: reciprocal rank fusion (RRF) of several retrievers (BM25 + dense by default).

Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods",
SIGIR 2009::

    RRF(d) = Σ_r 1 / (k + rank_r(d))

over the retrievers ``r`` whose top-``depth`` lists contain ``d`` (``rank`` is 1-based; ``k = 60`` in the paper).
Only ranks matter, so BM25 scores and cosine similarities need no calibration. Ties (frequent: a document ranked
3rd by one retriever and absent from the other scores like any other such document) are broken by corpus position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltap.documents import Corpus
from deltap.retrieval._common import check_filter, metadata_fields, rank, validate_queries
from deltap.retrieval.base import Hit, Releasable, Retriever, validate_query

__all__ = ["HybridRetriever", "rrf_fuse"]


def rrf_fuse(rankings: Sequence[Sequence[Hit]], k: int = 60) -> dict[str, float]:
    """RRF scores ``{doc_id: Σ 1/(k + rank)}`` of several ranked lists (formula in the module docstring)."""
    if k < 0:
        raise ValueError(f"the RRF constant k must be >= 0, got {k}")
    fused: dict[str, float] = {}
    for hits in rankings:
        for hit in hits:
            fused[hit.doc_id] = fused.get(hit.doc_id, 0.0) + 1.0 / (k + hit.rank)
    return fused


class HybridRetriever:
    """Fuse retrievers over the same corpus by RRF.

    Args:
        corpus: The corpus every retriever was built from (for tie-breaking and metadata).
        retrievers: The retrievers to fuse (e.g. BM25 and dense).
        rrf_k: The RRF constant ``k`` (default 60).
        depth: How many hits of each retriever enter the fusion (at least the requested ``k``; default 100).
    """

    def __init__(self, corpus: Corpus, retrievers: Sequence[Retriever], *, rrf_k: int = 60, depth: int = 100) -> None:
        if not retrievers:
            raise ValueError("a hybrid retriever needs at least one retriever")
        if rrf_k < 0 or depth <= 0:
            raise ValueError(f"need rrf_k >= 0 and depth > 0, got rrf_k={rrf_k}, depth={depth}")
        self.corpus = corpus
        self.retrievers = list(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth
        self._fields = metadata_fields(corpus)
        self.name = f"rrf(k={rrf_k}:" + "+".join(r.name for r in self.retrievers) + ")"

    def release(self) -> None:
        """Let the fused retrievers that hold an index go of it until the next search."""
        for r in self.retrievers:
            if isinstance(r, Releasable):
                r.release()

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` by RRF score, ties by corpus position."""
        validate_query(query, k)
        return self.search_batch([query], k, filter)[0]

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for many queries (each underlying retriever searches the batch once)."""
        validate_queries(queries, k)
        flt = check_filter(filter, self._fields)
        depth = max(self.depth, k)
        per_retriever = [r.search_batch(list(queries), depth, flt or None) for r in self.retrievers]
        out = []
        for qi in range(len(queries)):
            fused = rrf_fuse([lists[qi] for lists in per_retriever], self.rrf_k)
            out.append(
                rank(
                    ((d, s, self.corpus.position(d), self.corpus[d].metadata) for d, s in fused.items()),
                    k,
                )
            )
        return out
