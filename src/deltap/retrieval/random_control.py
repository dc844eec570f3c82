"""A seeded random retriever: the control group (placebo documents, chance-level baselines).

For a given ``seed`` and query text the ranking is fixed (the generator is seeded with ``(seed, SHA-256 of the
query)`` through :class:`numpy.random.SeedSequence`, never a global seed), so repeated searches return identical ids
and scores, and different queries get independent permutations. Scores are uniform draws in [0, 1) sorted
descending; they carry no information.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deltap.documents import Corpus
from deltap.retrieval._common import check_filter, matches_filter, metadata_fields, rank, validate_queries
from deltap.retrieval.base import Hit, validate_query

__all__ = ["RandomRetriever"]


class RandomRetriever:
    """Uniformly random documents, reproducible per ``(seed, query)``.

    Args:
        corpus: The documents to draw from.
        seed: Run seed.
    """

    def __init__(self, corpus: Corpus, seed: int = 0) -> None:
        self.corpus = corpus
        self.seed = int(seed)
        self.name = f"random(seed={self.seed})"
        self._docs = list(corpus)
        self._fields = metadata_fields(corpus)

    def _rng(self, query: str) -> np.random.Generator:
        digest = hashlib.sha256(query.encode("utf-8")).digest()
        words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
        return np.random.default_rng(np.random.SeedSequence([self.seed & 0xFFFFFFFF, *words]))

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """``k`` random documents (those passing ``filter``)."""
        validate_query(query, k)
        return self._search(query, k, check_filter(filter, self._fields))

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for each query."""
        validate_queries(queries, k)
        flt = check_filter(filter, self._fields)
        return [self._search(q, k, flt) for q in queries]

    def _search(self, query: str, k: int, flt: Mapping[str, Any]) -> list[Hit]:
        scores = self._rng(query).random(len(self._docs))  # one draw per document: independent of the filter
        docs = self._docs
        pool = [i for i, d in enumerate(docs) if not flt or matches_filter(d.doc_id, d.metadata, flt)]
        return rank(((docs[i].doc_id, float(scores[i]), i, docs[i].metadata) for i in pool), k)
