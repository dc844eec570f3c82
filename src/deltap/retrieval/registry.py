"""The retriever registry: kind -> what builds it, its options and what it needs (``--retriever`` accepts its keys).

A retriever is its module plus one :func:`register_retriever_kind`: the factory (``"package.module:function"``, imported
only when one is built) is called as ``factory(corpus, store=..., embedder=..., seed=..., **options)`` with the options
the kind declares. :func:`deltap.retrieval.build_retriever` builds through it, and the CLI's help texts and error
messages list its keys. Nothing heavy is imported here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltap._registry import Registry

if TYPE_CHECKING:
    from deltap.documents import Corpus
    from deltap.retrieval.base import Retriever

__all__ = ["RETRIEVERS", "RetrieverKindInfo", "register_retriever_kind", "retriever_kinds"]

#: options of the BM25 retriever (``bm25s``)
BM25_OPTIONS = ("k1", "b", "method", "stopwords", "stemmer")
#: options of the dense retriever's index and embedder
DENSE_OPTIONS = ("collection", "url", "api_key", "backend", "cache_dir", "batch_size", "exact")


@dataclass(frozen=True)
class RetrieverKindInfo:
    """One retriever kind.

    Args:
        name: The kind (``--retriever``).
        factory: ``"package.module:function"`` called as ``factory(corpus, store=, embedder=, seed=, **options)``.
        summary: One line for ``--help``.
        options: The keyword options it accepts (options of other kinds are dropped, unknown names refused).
        uses_index: It embeds the corpus into a vector store (``store`` / ``--index``; ``--embedder``).
    """

    name: str
    factory: str
    summary: str = ""
    options: tuple[str, ...] = ()
    uses_index: bool = False

    def build(self, corpus: Corpus, *, store: Any, embedder: Any, seed: int, **options: Any) -> Retriever:
        """A new retriever of this kind over ``corpus``."""
        module, _, name = self.factory.partition(":")
        built: Retriever = getattr(importlib.import_module(module), name)(
            corpus, store=store, embedder=embedder, seed=seed, **options
        )
        return built


#: the retriever registry: kind -> what builds it (``--retriever`` accepts its keys), in registration order
RETRIEVERS: Registry[RetrieverKindInfo] = Registry("retriever kind", lambda name: bool(name) and name == name.lower())


def register_retriever_kind(info: RetrieverKindInfo, replace: bool = False) -> RetrieverKindInfo:
    """Add a retriever kind (``replace=True`` to redefine one); it is then a ``--retriever`` choice everywhere.

    Raises:
        DeltapError: the name is taken and ``replace`` is false, or it is not a lower-case name.
    """
    return RETRIEVERS.register(info.name, info, replace)


def retriever_kinds(sep: str = ", ") -> str:
    """The registered kinds joined by ``sep`` (for help texts and messages)."""
    return sep.join(RETRIEVERS)


register_retriever_kind(
    RetrieverKindInfo("bm25", "deltap.retrieval.factory:build_bm25", "lexical BM25 (bm25s)", BM25_OPTIONS)
)
register_retriever_kind(
    RetrieverKindInfo(
        "dense",
        "deltap.retrieval.factory:build_dense",
        "embeddings in a Qdrant index (all-MiniLM-L6-v2 by default)",
        DENSE_OPTIONS,
        uses_index=True,
    )
)
register_retriever_kind(
    RetrieverKindInfo(
        "hybrid",
        "deltap.retrieval.factory:build_hybrid",
        "BM25 and dense fused by reciprocal rank",
        (*BM25_OPTIONS, *DENSE_OPTIONS, "rrf_k", "depth"),
        uses_index=True,
    )
)
register_retriever_kind(
    RetrieverKindInfo("random", "deltap.retrieval.factory:build_random", "a seeded random ranking (a control)")
)
