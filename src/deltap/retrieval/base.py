"""The retriever contract every backend implements (BM25, dense/Qdrant, hybrid, random).

Ties: every retriever orders hits by descending score, then by the document's position in the corpus it was built
from (ascending). That rule is documented here once and tested per backend; never rely on dict order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Closeable", "Hit", "Releasable", "Retriever", "TimedRetriever", "validate_query"]


@dataclass(frozen=True)
class Hit:
    """One search result.

    Args:
        doc_id: The document's id.
        score: Backend score (higher = better): cosine similarity, BM25, fused RRF score...
        rank: 1-based rank in the result list.
        metadata: The document's metadata (the Qdrant payload for dense stores).
    """

    doc_id: str
    score: float
    rank: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Retriever(Protocol):
    """Search a fixed collection of documents."""

    name: str

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` hits for one query, best first. ``filter`` = exact-match on metadata fields."""
        ...

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for many queries (backends batch the expensive part, e.g. query embedding)."""
        ...


@runtime_checkable
class TimedRetriever(Protocol):
    """A retriever that says how its last ``search`` / ``search_batch`` call split its time (a capability: the pipeline
    check gates embedding + search latency with it, and falls back to end-to-end time for retrievers without it)."""

    last_embed_seconds: float
    last_search_seconds: float


@runtime_checkable
class Closeable(Protocol):
    """A retriever (or store) that holds a resource to release: an embedded index lock, a server connection."""

    def close(self) -> None:
        """Release the resource; the object is not used afterwards."""
        ...


@runtime_checkable
class Releasable(Protocol):
    """A retriever that can let go of its index between calls and reopen it on its next search (an embedded Qdrant
    index serves one process at a time: a long run releases it once it has read what it needs, so that ``deltap
    search`` or another run can open it beside)."""

    def release(self) -> None:
        """Let go of the index until the next search."""
        ...


def validate_query(query: str, k: int) -> None:
    """Reject what no retriever can answer: empty or whitespace queries, ``k <= 0``."""
    from deltap.errors import DeltapError

    if not isinstance(query, str) or not query.strip():
        raise DeltapError("the query is empty; give a non-empty search text")
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise DeltapError(f"k must be a positive integer, got {k!r}")
