"""Retrievers: BM25 (bm25s), dense embeddings in Qdrant, hybrid RRF fusion, and a seeded random control.

Entry points (stable; other areas build on them):

* :func:`build_retriever` ``(kind, corpus, *, store=None, embedder=None, seed=0, **options)`` with ``kind`` a key of
  the retriever registry :data:`RETRIEVERS` (``bm25`` / ``dense`` / ``hybrid`` / ``random``; a new retriever is its
  module plus one :func:`register_retriever_kind`);
* :func:`open_index` ``(store, collection=None, ...)``: a dense retriever over an index built by ``deltap index``
  (``last_embed_seconds`` / ``last_search_seconds`` time its last call).

Every retriever follows :mod:`deltap.retrieval.base`: hits by descending score, ties by corpus position, metadata =
the document's metadata. Heavy libraries (bm25s, torch, qdrant) are imported only when a retriever is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltap._lazy import lazy_exports
from deltap.retrieval.base import Hit, Retriever, validate_query

_LAZY: dict[str, str] = {
    "build_retriever": "deltap.retrieval.factory",
    "open_index": "deltap.retrieval.factory",
    "open_store": "deltap.retrieval.factory",
    "DEFAULT_COLLECTION": "deltap.retrieval.factory",
    "RETRIEVERS": "deltap.retrieval.registry",
    "RetrieverKindInfo": "deltap.retrieval.registry",
    "register_retriever_kind": "deltap.retrieval.registry",
    "BM25Retriever": "deltap.retrieval.bm25",
    "tokenize": "deltap.retrieval.bm25",
    "DenseRetriever": "deltap.retrieval.dense",
    "IndexReport": "deltap.retrieval.dense",
    "index_corpus": "deltap.retrieval.dense",
    "HybridRetriever": "deltap.retrieval.hybrid",
    "rrf_fuse": "deltap.retrieval.hybrid",
    "RandomRetriever": "deltap.retrieval.random_control",
    "Embedder": "deltap.retrieval.embedders",
    "HashingEmbedder": "deltap.retrieval.embedders",
    "SentenceTransformerEmbedder": "deltap.retrieval.embedders",
    "load_embedder": "deltap.retrieval.embedders",
    "CohereEmbedder": "deltap.retrieval.cohere",
    "EmbeddingCache": "deltap.retrieval.cache",
    "EdgeStore": "deltap.retrieval.stores",
    "QdrantClientStore": "deltap.retrieval.stores",
    "IndexInfo": "deltap.retrieval.stores",
    "IndexMismatchError": "deltap.retrieval.stores",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, extra=["Hit", "Retriever", "validate_query"])


if TYPE_CHECKING:  # pragma: no cover
    from deltap.retrieval.bm25 import BM25Retriever, tokenize
    from deltap.retrieval.cache import EmbeddingCache
    from deltap.retrieval.cohere import CohereEmbedder
    from deltap.retrieval.dense import DenseRetriever, IndexReport, index_corpus
    from deltap.retrieval.embedders import Embedder, HashingEmbedder, SentenceTransformerEmbedder, load_embedder
    from deltap.retrieval.factory import DEFAULT_COLLECTION, build_retriever, open_index, open_store
    from deltap.retrieval.hybrid import HybridRetriever, rrf_fuse
    from deltap.retrieval.random_control import RandomRetriever
    from deltap.retrieval.registry import RETRIEVERS, RetrieverKindInfo, register_retriever_kind
    from deltap.retrieval.stores import EdgeStore, IndexInfo, IndexMismatchError, QdrantClientStore
