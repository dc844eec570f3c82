"""``deltap index`` (embed a corpus into Qdrant) and ``deltap search`` (query an index)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

_SECTION_KEYS = ("document_section", "heading", "section", "type")


def parse_filters(items: list[str]) -> dict[str, Any]:
    """``["key=value", ...]`` -> a filter dict.

    Values are read as JSON when they are an integer, ``true``/``false`` or a quoted string (``key='"2"'`` keeps the
    string ``"2"``); anything else is a string. A key given twice matches any of its values.
    """
    from deltap.errors import DeltapError

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise DeltapError(f"--filter {item!r}: expected key=value, e.g. --filter document_section=api")
        value: Any = raw
        try:
            parsed = json.loads(raw)
            if isinstance(parsed, bool | int | str):
                value = parsed
        except ValueError:
            pass
        if key in out:
            prev = out[key]
            out[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            out[key] = value
    return out


def index(
    corpus: Path = typer.Argument(..., help="Corpus: BEIR folder, corpus.jsonl or API-symbol YAML."),
    store: str = typer.Option(None, "--store", help="Index folder (embedded Qdrant Edge) or Qdrant URL."),
    embedder: str = typer.Option(
        "minilm",
        "--embedder",
        help="minilm (bundled all-MiniLM-L6-v2), a sentence-transformers folder, cohere[:model].",
    ),
    collection: str = typer.Option("deltap", "--collection", help="Collection name."),
    qdrant_url: str = typer.Option(
        None, "--qdrant-url", envvar="QDRANT_URL", help="Qdrant server URL (or QDRANT_URL)."
    ),
    qdrant_api_key: str = typer.Option(
        None,
        "--qdrant-api-key",
        envvar="QDRANT_API_KEY",
        help="Qdrant API key (or QDRANT_API_KEY).",
        show_default=False,
    ),
    backend: str = typer.Option(None, "--backend", help="For a folder store: edge (default) or qdrant-local."),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Documents per embedding call and upsert."),
    cache_dir: Path = typer.Option(None, "--cache-dir", help="Embedding cache folder (default ~/.cache/deltap)."),
) -> None:
    """Embed a corpus into a Qdrant collection. Re-running adds only new or changed documents (resumable)."""
    from rich.console import Console

    from deltap._ticker import CountProgress
    from deltap.errors import DeltapError
    from deltap.loaders import load_corpus
    from deltap.retrieval.cache import EmbeddingCache
    from deltap.retrieval.dense import index_corpus
    from deltap.retrieval.embedders import load_embedder
    from deltap.retrieval.factory import open_store

    if store is None and qdrant_url is None:
        raise DeltapError("give --store PATH|URL (or --qdrant-url / QDRANT_URL)")
    docs = load_corpus(corpus)  # every input problem surfaces before anything is written
    if len(docs) == 0:
        raise DeltapError(f"{corpus} holds no documents; nothing to index")
    model = load_embedder(embedder)
    # --store wins over --qdrant-url / QDRANT_URL; a URL given as --store reaches that server
    is_url = store is not None and store.startswith(("http://", "https://"))
    url = store if is_url else (qdrant_url if store is None else None)
    vs = open_store(
        None if url else store,
        collection,
        url=url,
        api_key=qdrant_api_key,
        backend=backend,  # type: ignore[arg-type]
        create=True,
    )
    try:
        existing = vs.read_info()
        if existing is not None:  # refuse a model mismatch before announcing any work
            existing.check_embedder(model.name, model.dimension, vs.location)
    except BaseException:
        vs.close()
        raise
    typer.secho(f"indexing {len(docs)} documents from {corpus} into {vs.location} with {model.name}", err=True)
    bar = CountProgress("embedding", "documents", Console(stderr=True))
    try:
        with EmbeddingCache(cache_dir) as cache, bar:
            report = index_corpus(docs, vs, model, cache=cache, batch_size=batch_size, progress=bar)
    except KeyboardInterrupt:
        from deltap.cli.stopping import Stopped

        raise Stopped(
            f"stopped: {bar.done:,} of {bar.total:,} documents written to {vs.location} are kept; resume with the same "
            "command"
        ) from None
    finally:
        vs.close()
    typer.echo(f"{vs.location}: {report.summary()}")


def search(
    index_: str = typer.Argument(..., metavar="INDEX", help="Index folder or Qdrant URL."),
    query: str = typer.Argument(..., help="The search text."),
    k: int = typer.Option(10, "-k", "--top-k", help="Number of hits."),
    filter_: list[str] = typer.Option([], "--filter", help="key=value metadata filter (repeatable)."),
    collection: str = typer.Option(None, "--collection", help="Collection (default deltap, or the store's only one)."),
    qdrant_api_key: str = typer.Option(
        None,
        "--qdrant-api-key",
        envvar="QDRANT_API_KEY",
        help="Qdrant API key (or QDRANT_API_KEY).",
        show_default=False,
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    preview_chars: int = typer.Option(100, "--preview", min=0, help="Characters of text to preview."),
) -> None:
    """Search an index: rank, score, doc id, section/heading and a preview of each hit."""
    from deltap.retrieval.base import validate_query
    from deltap.retrieval.factory import open_index

    validate_query(query, k)  # before loading a model
    flt = parse_filters(filter_)
    retriever = open_index(index_, collection, api_key=qdrant_api_key)
    try:
        results = retriever.search_documents(query, k, flt or None)
        timing = {"embed_ms": retriever.last_embed_seconds * 1e3, "search_ms": retriever.last_search_seconds * 1e3}
    finally:
        retriever.close()
    rows = []
    for hit, doc in results:
        section = next((str(hit.metadata[key]) for key in _SECTION_KEYS if hit.metadata.get(key)), "")
        preview = " ".join(doc.text.split())[:preview_chars]
        rows.append(
            {
                "rank": hit.rank,
                "score": hit.score,
                "doc_id": hit.doc_id,
                "title": doc.title,
                "section": section,
                "preview": preview,
                "metadata": dict(hit.metadata),
            }
        )
    if as_json:
        typer.echo(json.dumps({"query": query, "k": k, "filter": flt, "hits": rows, **timing}, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{query!r}: {len(rows)} hits", title_justify="left")
    for col, just in (
        ("rank", "right"),
        ("score", "right"),
        ("doc id", "left"),
        ("section", "left"),
        ("preview", "left"),
    ):
        table.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        table.add_row(str(r["rank"]), f"{r['score']:.4f}", r["doc_id"], r["section"] or r["title"], r["preview"])
    Console().print(table)
    typer.secho(f"embedding {timing['embed_ms']:.1f} ms, search {timing['search_ms']:.1f} ms", err=True, dim=True)


def register(app: typer.Typer) -> None:
    """Add ``index`` and ``search`` to ``app``."""
    app.command("index")(index)
    app.command("search")(search)
