"""Retrievers: BM25 (bm25s), dense embeddings in Qdrant, hybrid RRF fusion, and a seeded random control."""

from deltap.retrieval.base import Hit, Retriever, validate_query

__all__ = ["Hit", "Retriever", "validate_query"]
