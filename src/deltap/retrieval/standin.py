"""What a plan retrieves without an embedding call (``deltap mine --plan``, ``deltap endtoend --plan``).

A plan makes no model or embedding call and writes nothing. A retriever that needs no model (``bm25``, ``random``)
is built in memory, as the run builds it, and gives the run's own candidates. A retriever that embeds (a kind
registered with ``uses_index``: ``dense``, ``hybrid``) would embed every query — and, without an index, the whole
corpus, writing an index and the embedding cache — so a plan uses :class:`LengthStandIn` instead: for every query,
documents of about the corpus's mean length. The plan's candidate tokens are then an *estimate* (``k`` documents
per case at the mean length; real retrieved documents overlap gold ones, so the pools are at most this large), and
the plan says so in one line (:meth:`LengthStandIn.notes`), with what the run will embed first.

:func:`plan_retriever` picks one or the other; an ``--index`` that does not exist is refused as ``deltap search``
refuses it (:func:`deltap.retrieval.factory.existing_index`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.documents import Corpus
from deltap.retrieval._common import check_filter, matches_filter, metadata_fields, validate_queries
from deltap.retrieval.base import Hit, validate_query

if TYPE_CHECKING:
    from deltap.retrieval.base import Retriever
    from deltap.retrieval.stores import IndexInfo

__all__ = ["LengthStandIn", "plan_retriever"]


class LengthStandIn:
    """A plan's stand-in for a retriever that embeds: every query gets the documents whose length is nearest the
    corpus's mean (ties by corpus order), rotated by ``offset`` so that two stand-ins (``dense`` and ``hybrid``) do
    not show identical lists (a deterministic solver would share their calls).

    Args:
        corpus: The documents.
        kind: The retriever kind it stands in for (``dense``...).
        offset: Positions the ranking is rotated by (a kind's place in the registry).
        index: The ``--index`` description (``None``: no index given; the run embeds the corpus first).
        store: The ``--index`` address as given.
    """

    def __init__(
        self,
        corpus: Corpus,
        kind: str,
        offset: int = 0,
        index: IndexInfo | None = None,
        store: str | Path | None = None,
    ) -> None:
        docs = list(corpus)
        lengths = [len(d.text) for d in docs]
        self.mean_chars = sum(lengths) / len(lengths) if lengths else 0.0
        order = sorted(range(len(docs)), key=lambda i: (abs(lengths[i] - self.mean_chars), i))
        shift = offset % len(order) if order else 0
        self._docs = [docs[i] for i in order[shift:] + order[:shift]]
        self._fields = metadata_fields(corpus)
        self.kind = kind
        self.name = f"estimate({kind})"
        self.index = index
        self.store = store
        self.n_documents = len(docs)

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """``k`` documents of about the mean length (the same for every query)."""
        validate_query(query, k)
        return self._search(k, check_filter(filter, self._fields))

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """:meth:`search` for each query."""
        validate_queries(queries, k)
        flt = check_filter(filter, self._fields)
        return [self._search(k, flt) for _ in queries]

    def _search(self, k: int, flt: Mapping[str, Any]) -> list[Hit]:
        docs = [d for d in self._docs if not flt or matches_filter(d.doc_id, d.metadata, flt)][:k]
        return [Hit(d.doc_id, 1.0 / (r + 1), r + 1, dict(d.metadata)) for r, d in enumerate(docs)]

    def notes(self, k: int) -> list[str]:
        """Two lines for the plan: what it estimated, and what the run embeds before its first call."""
        out = [
            f"retrieved candidates estimated ({self.kind}): k={k} per case at the corpus's mean length "
            f"(~{self.mean_chars:,.0f} characters); a plan makes no embedding call"
        ]
        info = self.index
        if info is None:
            out.append(
                f"the run embeds the corpus's {self.n_documents:,} documents first (no --index; `deltap index` "
                "builds one to reuse)"
            )
        elif info.complete and info.n_documents == self.n_documents:
            out.append(
                f"--index {self.store}: {info.n_documents:,} documents ({info.embedder}); the run embeds the queries"
            )
        else:
            state = "complete" if info.complete else "incomplete"
            out.append(
                f"--index {self.store}: {info.n_documents:,} documents ({state}), the corpus {self.n_documents:,}; the "
                "run brings it up to date first (embedding new or changed documents)"
            )
        return out


def plan_retriever(kind: str, corpus: Corpus, *, store: str | Path | None = None, seed: int = 0) -> Retriever:
    """The retriever a plan uses for ``kind``: the real one when it needs no model (built in memory, nothing written),
    else a :class:`LengthStandIn` (no embedding call, nothing written; the index, when given, only read).

    Raises:
        DeltapError: an unknown kind, or an ``--index`` that does not exist or holds no deltap index (the one-line
            errors of ``deltap search``).
    """
    from deltap.retrieval.factory import build_retriever, existing_index
    from deltap.retrieval.registry import RETRIEVERS

    name = kind.lower().strip()
    info = RETRIEVERS.lookup(name)
    if not info.uses_index:
        return build_retriever(name, corpus, seed=seed)
    index = existing_index(name, store)
    return LengthStandIn(corpus, name, list(RETRIEVERS).index(name), index=index, store=store)
