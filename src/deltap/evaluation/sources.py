"""Judgements with their side information: qrels plus, where the file has them, query texts, winning coalitions
and documents labelled harmful.

* BEIR folder: qrels ``qrels/<split>.tsv``, queries ``queries.jsonl``.
* qrels JSONL: ``relevant_docs``, ``query``, and optional ``coalitions`` (every winning coalition: a list of lists
  of doc ids) or ``coalition`` (a list of doc ids, or a list of such lists) per record.
* deltap verified dataset YAML: qrels via :func:`deltap.qrels.load_qrels` (the dataset module), queries from
  ``pairs[].query``, coalitions from ``pairs[].coalitions`` (else ``pairs[].coalition``), harmful documents from candidates whose
  ``empirical_relevance`` or ``verdict`` is harmful.
* BEIR TSV / TREC qrels files: qrels only.

Runs come from files (:func:`deltap.qrels.load_run`) or are built here by retrievers over the judged queries
(:func:`retrieve_runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.qrels import Qrels, detect_qrels_format, load_qrels

if TYPE_CHECKING:
    from deltap.documents import Corpus
    from deltap.evaluation.settings import RetrievalSettings

__all__ = ["Judgements", "load_judgements", "require_judged", "retrieve_runs"]


@dataclass
class Judgements:
    """Qrels and whatever else the source file records about its queries."""

    qrels: Qrels
    queries: dict[str, str] = field(default_factory=dict)
    coalitions: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    harmful: dict[str, set[str]] = field(default_factory=dict)
    source: str = ""

    @property
    def judged_docs(self) -> set[str]:
        """Every document id the qrels judge (any grade)."""
        return {d for docs in self.qrels.values() for d in docs}


def _coalition_list(value: Any) -> list[frozenset[str]]:
    if not value:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, str) for v in value):
        return [frozenset(value)]
    return [frozenset(str(d) for d in c) for c in value if c]


def load_judgements(path: str | Path, split: str = "test") -> Judgements:
    """Load qrels and side information from any supported qrels source (see the module docstring)."""
    path = Path(path)
    fmt = detect_qrels_format(path) if path.exists() else None
    qrels = load_qrels(path, split=split)
    out = Judgements(qrels=qrels, source=str(path))
    if fmt == "beir" and path.is_dir() and (path / "queries.jsonl").is_file():
        from deltap.cases import read_queries_jsonl

        out.queries = read_queries_jsonl(path / "queries.jsonl")
    elif fmt == "jsonl":
        from deltap.qrels import read_qrels_jsonl

        for rec in read_qrels_jsonl(path):
            if rec.query:
                out.queries[rec.query_id] = rec.query
            coal = _coalition_list(rec.extra.get("coalitions") or rec.extra.get("coalition"))
            if coal:
                out.coalitions[rec.query_id] = coal
    elif fmt == "dataset":
        from deltap.dataset import read_dataset

        for pair in read_dataset(path).pairs:
            pid = str(pair.get("id"))
            if pair.get("query"):
                out.queries[pid] = str(pair["query"])
            coal = _coalition_list(pair.get("coalitions") or pair.get("coalition"))  # every winning coalition
            if coal:
                out.coalitions[pid] = coal
            bad = {
                str(c.get("doc_id") or c.get("fqn"))
                for c in pair.get("candidates", [])
                if str(c.get("empirical_relevance") or "").upper() == "HARMFUL" or str(c.get("verdict") or "").lower() == "harmful"
            }
            if bad:
                out.harmful[pid] = bad
    return out


def require_judged(corpus: Corpus, judgements: Judgements) -> None:
    """Judged documents the corpus lacks can never be retrieved: refuse (listing them) instead of silently capping
    recall."""
    corpus.require(
        judgements.judged_docs, f"document ids judged in {judgements.source}", hint="evaluate against the corpus the qrels were made for"
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
        DeltapError: a judged query without text, or a judged document absent from the corpus.
    """
    from deltap.retrieval import build_retriever

    texts_by_id = {**judgements.queries, **(queries or {})}
    query_ids = list(judgements.qrels)
    missing = [q for q in query_ids if q not in texts_by_id]
    if missing:
        raise DeltapError(
            f"{len(missing)} judged queries have no text ({', '.join(missing[:10])}); pass --queries queries.jsonl "
            "(or use a BEIR folder / qrels JSONL / dataset YAML that carries the query text)"
        )
    require_judged(corpus, judgements)
    texts = [texts_by_id[q] for q in query_ids]
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for kind in settings.kinds:
        if progress is not None:
            progress(f"building {kind} run: {len(texts)} queries over {len(corpus)} documents, top {settings.depth}")
        retriever = build_retriever(kind, corpus, store=settings.store, embedder=settings.embedder, seed=settings.seed)
        hits = retriever.search_batch(texts, k=settings.depth)
        runs[kind] = {q: {h.doc_id: float(h.score) for h in hs} for q, hs in zip(query_ids, hits, strict=True)}
    return runs
