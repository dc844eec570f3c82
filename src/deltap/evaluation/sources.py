"""Where evaluation's inputs come from: judgements (qrels with queries, coalitions and harmful documents, read by
:mod:`deltap.judgements`) and runs — from files (:func:`deltap.qrels.load_run`) or built here by retrievers over the
judged queries (:func:`retrieve_runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from deltap.errors import DeltapError
from deltap.judgements import Judgements

if TYPE_CHECKING:
    from deltap.documents import Corpus
    from deltap.evaluation.settings import RetrievalSettings

__all__ = ["require_judged", "retrieve_runs"]


def require_judged(corpus: Corpus, judgements: Judgements) -> None:
    """Judged documents the corpus lacks can never be retrieved: refuse (listing them) instead of silently capping
    recall."""
    corpus.require(
        judgements.judged_docs,
        f"document ids judged in {judgements.source}",
        hint="evaluate against the corpus the qrels were made for",
    )


def retrieve_runs(
    judgements: Judgements,
    corpus: Corpus,
    settings: RetrievalSettings,
    queries: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """One run per retriever kind of ``settings`` over the judged queries: ``{kind: {query_id: {doc_id: score}}}``.

    Args:
        judgements: The judged queries (their texts come from the judgements, then ``queries``).
        corpus: The documents to retrieve from (every judged document must be in it).
        settings: Which retrievers, how deep, and the dense store / embedder.
        queries: Query texts the judgements lack (``queries.jsonl``).
        progress: Called with one line before each retriever runs.

    Raises:
        DeltapError: a judged query without text, a judged document absent from the corpus, or a retriever kind that
            is not registered (:data:`deltap.retrieval.registry.RETRIEVERS`).
    """
    from deltap.retrieval import build_retriever
    from deltap.retrieval.registry import RETRIEVERS

    texts_by_id = {**judgements.queries, **(queries or {})}
    query_ids = list(judgements.qrels)
    missing = [q for q in query_ids if q not in texts_by_id]
    if missing:
        raise DeltapError(
            f"{len(missing)} judged queries have no text ({', '.join(missing[:10])}); pass --queries queries.jsonl "
            "(or use a BEIR folder / qrels JSONL / dataset YAML that carries the query text)"
        )
    require_judged(corpus, judgements)
    for kind in settings.kinds:  # every kind known before the first one embeds a corpus
        RETRIEVERS.lookup(kind.lower().strip())
    texts = [texts_by_id[q] for q in query_ids]
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for kind in settings.kinds:
        if progress is not None:
            progress(f"building {kind} run: {len(texts)} queries over {len(corpus)} documents, top {settings.depth}")
        retriever = build_retriever(kind, corpus, store=settings.store, embedder=settings.embedder, seed=settings.seed)
        hits = retriever.search_batch(texts, k=settings.depth)
        runs[kind] = {q: {h.doc_id: float(h.score) for h in hs} for q, hs in zip(query_ids, hits, strict=True)}
    return runs
