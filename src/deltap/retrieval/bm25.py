"""BM25 over a corpus with bm25s (sparse, in memory).

Tokenization (the same for documents and queries, and exposed as :func:`tokenize` so other BM25 implementations can
be compared on equal terms):

1. the indexed text is :attr:`Document.full_text` (title, newline, body);
2. lower-cased;
3. split with the regular expression ``(?u)\\b\\w\\w+\\b`` (scikit-learn's and bm25s' default: runs of two or more
   word characters; punctuation, including the dots of ``google.adk.Agent``, separates tokens);
4. English stop words removed (bm25s' list, ``stopwords=None`` keeps them);
5. Snowball English stemming with PyStemmer (``stemmer=None`` disables it).

Scoring (``method="lucene"``, the default: Robertson et al., "Okapi at TREC-3", 1994, as Lucene computes it; see
Kamphuis et al., "Which BM25 Do You Mean? A Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020)::

    score(q, d) = Σ_{t ∈ set(q)} idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

(Lucene ≥ 8 drops the classic ``(k1 + 1)`` numerator factor: a constant, so rankings are unchanged.)

Only documents sharing at least one term with the query are returned (a BM25 score of 0 carries no ranking
information), so a search may return fewer than ``k`` hits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from deltap.documents import Corpus
from deltap.retrieval._common import check_filter, matches_filter, metadata_fields, rank, validate_queries
from deltap.retrieval.base import Hit, validate_query

__all__ = ["BM25Retriever", "tokenize"]

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Any:
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer(language)


@lru_cache(maxsize=1)
def _english_stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str, stopwords: str | None = "en", stemmer: str | None = "english") -> list[str]:
    """The BM25 tokenization described in this module's docstring.

    Args:
        text: Any text.
        stopwords: ``"en"`` (bm25s' English list) or ``None`` to keep every token.
        stemmer: A Snowball language known to PyStemmer (``"english"``) or ``None`` for no stemming.

    Returns:
        The tokens, in text order.
    """
    tokens = _TOKEN_RE.findall(text.lower())
    if stopwords is not None:
        if stopwords != "en":
            raise ValueError(f"stopwords must be 'en' or None, got {stopwords!r}")
        stop = _english_stopwords()
        tokens = [t for t in tokens if t not in stop]
    if stemmer is not None:
        tokens = list(_stemmer(stemmer).stemWords(tokens))
    return tokens


class BM25Retriever:
    """BM25 (bm25s) over a :class:`~deltap.documents.Corpus`.

    Args:
        corpus: The documents; their order is the tie-breaker.
        k1: Term-frequency saturation (default 1.5).
        b: Length normalisation (default 0.75).
        method: bm25s variant: ``lucene`` (default), ``robertson``, ``atire``, ``bm25l``, ``bm25+``.
        stopwords: See :func:`tokenize`.
        stemmer: See :func:`tokenize`.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
        stemmer: str | None = "english",
    ) -> None:
        import bm25s

        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.corpus = corpus
        self.k1, self.b, self.method = k1, b, method
        self.stopwords, self.stemmer = stopwords, stemmer
        self.name = f"bm25(k1={k1},b={b})"
        self._docs = list(corpus)
        self._fields = metadata_fields(corpus)
        tokens = [tokenize(d.full_text, stopwords, stemmer) for d in self._docs]
        # bm25s needs one non-empty list per document to keep document positions aligned.
        self._model = bm25s.BM25(k1=k1, b=b, method=method)
        if self._docs:
            self._model.index([t if t else [""] for t in tokens], show_progress=False)
        self._vocab: Mapping[str, int] = getattr(self._model, "vocab_dict", {}) or {}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (corpus order)."""
        ids = [self._vocab[t] for t in tokenize(query, self.stopwords, self.stemmer) if t in self._vocab and t]
        if not ids or not self._docs:
            return np.zeros(len(self._docs), dtype=np.float32)
        return np.asarray(self._model.get_scores(ids), dtype=np.float32)

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """Top-``k`` documents by BM25 score (only those sharing a term with the query), ties by corpus position."""
        validate_query(query, k)
        flt = check_filter(filter, self._fields)
        return self._top(self.scores(query), k, flt)

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for each query."""
        validate_queries(queries, k)
        flt = check_filter(filter, self._fields)
        return [self._top(self.scores(q), k, flt) for q in queries]

    def _top(self, scores: np.ndarray, k: int, flt: Mapping[str, Any]) -> list[Hit]:
        positive = scores > 0
        if flt:
            positive &= np.fromiter(
                (matches_filter(d.doc_id, d.metadata, flt) for d in self._docs), dtype=bool, count=len(self._docs)
            )
        idx = np.flatnonzero(positive)
        if len(idx) > k:
            # keep everything scoring at least the k-th best, so ties at the cut are decided by position
            kth = np.partition(scores[idx], len(idx) - k)[len(idx) - k]
            idx = idx[scores[idx] >= kth]
        docs = self._docs
        return rank(((docs[i].doc_id, float(scores[i]), int(i), docs[i].metadata) for i in idx), k)
