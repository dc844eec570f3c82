"""The searches of ``deltap check``: open the index, run every query ``warmup + repeats`` times (timed), and once
more after the index is closed and opened again (for the determinism gate).

End-to-end time is the wall time of ``retriever.search``; embedding and search times are what a
:class:`~deltap.retrieval.base.TimedRetriever` reports after each call. A retriever without that capability is timed
end to end only, and the latency gate says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from deltap.errors import DeltapError
from deltap.retrieval.base import Closeable, Hit, TimedRetriever

if TYPE_CHECKING:
    from deltap.retrieval.base import Retriever

__all__ = ["Passes", "open_index_for_check", "run_passes"]

Results = dict[str, list[Hit]]


@dataclass
class Passes:
    """What the searches returned and how long they took (seconds).

    Args:
        results: One ``{query_id: hits}`` per pass, warm-up passes included.
        reopened: The hits after the index was opened again (``None`` when it was not).
        reopen_note: Why it was not reopened.
        end_to_end, embed, search, embed_search: Timings of the timed passes.
        split_reported: Every timed call reported its embedding / search split.
    """

    results: list[Results] = field(default_factory=list)
    reopened: Results | None = None
    reopen_note: str = ""
    end_to_end: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)
    search: list[float] = field(default_factory=list)
    embed_search: list[float] = field(default_factory=list)
    split_reported: bool = True

    @property
    def first(self) -> Results:
        """The first pass: what the relevance, out-of-scope and metadata gates judge."""
        return self.results[0]


def open_index_for_check(
    retriever: Retriever | None,
    open_retriever: Callable[[], Retriever] | None,
    store: str | Path | None,
    collection: str | None,
) -> tuple[Retriever, Callable[[], Retriever] | None, str]:
    """``(retriever, a way to open it again or None, label)`` from whatever the caller gave."""
    label = ""
    if open_retriever is None and store is not None:
        open_retriever, label = _store_opener(str(store), collection)
    if retriever is None:
        if open_retriever is None:
            raise DeltapError(
                "no index to check: pass --store PATH|URL (Python: store=, retriever= or open_retriever=) "
                "or set index.store in the suite"
            )
        retriever = open_retriever()
    return retriever, open_retriever, label or str(getattr(retriever, "name", type(retriever).__name__))


def _store_opener(store: str, collection: str | None) -> tuple[Callable[[], Retriever], str]:
    if "://" not in store and not Path(store).exists():
        raise DeltapError(
            f"cannot open the index: {store} does not exist; build it with `deltap index CORPUS --store {store}`"
        )

    def open_store() -> Retriever:
        import importlib

        try:  # looked up at run time: the retrieval package may be installed without the dense backend
            open_index = importlib.import_module("deltap.retrieval").open_index
        except (ImportError, AttributeError) as exc:
            raise DeltapError(
                f"cannot open indexes: deltap.retrieval.open_index is unavailable ({exc}); "
                "install the dense extra: pip install 'deltap[dense]'"
            ) from None
        try:
            retriever: Retriever = open_index(store, collection=collection)
            return retriever
        except DeltapError:
            raise
        except Exception as exc:  # unreachable server, locked folder, missing collection...
            what = f"collection {collection!r} at {store}" if collection else store
            raise DeltapError(
                f"cannot open the index {what}: {type(exc).__name__}: {exc}. "
                "Check the path or URL, that the server is up, and the collection name (--collection)."
            ) from None

    return open_store, store + (f" (collection {collection})" if collection else "")


def close(retriever: object) -> None:
    """Close ``retriever`` when it holds a resource (:class:`~deltap.retrieval.base.Closeable`)."""
    if isinstance(retriever, Closeable):
        retriever.close()


def timed_search(
    retriever: Retriever, query: str, k: int, clock: Callable[[], float]
) -> tuple[list[Hit], float, float | None, float | None]:
    """``(hits, end-to-end seconds, embedding seconds, search seconds)`` of one search; the split is ``None`` when the
    retriever does not report it. A retriever error becomes a :class:`~deltap.errors.DeltapError` naming the query."""
    t0 = clock()
    try:
        hits = retriever.search(query, k=k)
    except DeltapError:
        raise
    except Exception as exc:
        raise DeltapError(f"the retriever failed on query {query!r}: {type(exc).__name__}: {exc}") from None
    elapsed = clock() - t0
    embed = search = None
    if isinstance(retriever, TimedRetriever):
        e, s = retriever.last_embed_seconds, retriever.last_search_seconds
        if isinstance(e, int | float) and isinstance(s, int | float):
            embed, search = float(e), float(s)
    return list(hits)[:k], elapsed, embed, search


def run_passes(
    retriever: Retriever,
    reopen: Callable[[], Retriever] | None,
    queries: Sequence[tuple[str, str]],
    k: int,
    *,
    n_passes: int,
    warmup: int,
    timed: bool,
    reopen_for_determinism: bool,
    owned: bool,
    clock: Callable[[], float],
    progress: Callable[[str], None] | None = None,
) -> Passes:
    """Run ``n_passes`` passes over ``queries`` (the first ``warmup`` untimed when ``timed``), then one more pass on
    the reopened index when ``reopen_for_determinism``. ``owned``: the check opened ``retriever`` and closes it."""
    out = Passes()
    try:
        for p in range(n_passes):
            if progress:
                kind = "warm-up" if timed and p < warmup else "timed" if timed else "check"
                progress(f"pass {p + 1}/{n_passes} ({kind}, {len(queries)} queries)")
            results: Results = {}
            for qid, text in queries:
                hits, elapsed, t_embed, t_search = timed_search(retriever, text, k, clock)
                results[qid] = hits
                if timed and p >= warmup:
                    out.end_to_end.append(elapsed)
                    if t_embed is not None and t_search is not None:
                        out.embed.append(t_embed)
                        out.search.append(t_search)
                        out.embed_search.append(t_embed + t_search)
                    else:
                        out.split_reported = False
            out.results.append(results)
        if reopen_for_determinism:
            if reopen is None:
                out.reopen_note = "not reopened (the check was given a live retriever, no way to open it again)"
            else:
                if owned:
                    close(retriever)
                if progress:
                    progress("reopening the index for the determinism check")
                again = reopen()
                try:
                    out.reopened = {qid: timed_search(again, text, k, clock)[0] for qid, text in queries}
                finally:
                    if owned:
                        close(again)
                    owned = False  # the first retriever was closed above
    finally:
        if owned:
            close(retriever)
    return out
