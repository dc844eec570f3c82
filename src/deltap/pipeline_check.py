"""``deltap check``: is a retrieval pipeline fit to put under an agent? Five gates against a live index.

Gates (each can be disabled in the suite, see :mod:`deltap.check_suite`):

``relevance``
    An in-scope query passes when its expected sections / chunk ids / snippets are in the top ``k`` hits; the gate
    passes when at least ``pass_rate`` (default 80%) of the in-scope queries pass.
``out_of_scope``
    An out-of-scope query passes when the pipeline returns nothing or only hits scoring below ``score_threshold``;
    the gate passes when every out-of-scope query does. ``calibrate=True`` proposes a threshold instead (below).
``metadata``
    Every hit of every query carries a non-empty value for each required field (default ``source_url``,
    ``document_section``, ``heading``, ``chunk_id``, ``chunk_text_preview``) and, when the ingested corpus is
    given, the same value ingestion stored for that document. ``heading`` may be empty only where the stored
    document's heading is empty too (a source with no heading), or when no corpus is given to say otherwise.
``latency``
    ``warmup`` untimed passes, then ``repeats`` timed passes over every query. End-to-end time is the wall time of
    ``retriever.search``; embedding and search times are what the retriever reports in ``last_embed_seconds`` /
    ``last_search_seconds`` after each call. Gates: p95(embed + search) < 300 ms and p95(end-to-end) < 500 ms. A
    retriever that does not report the split is gated on its end-to-end time (an upper bound), and the summary
    says so. Percentiles are linear interpolation between order statistics (Hyndman & Fan 1996, definition 7, the
    numpy default); with ``n`` samples p99 is close to the maximum unless ``n`` is in the hundreds.
``determinism``
    Every pass (warm-up and timed) must return, for each query, the same ordered ids and the same scores as the first
    pass; and so must one more pass after the index is closed and opened again (when the check was given a way to
    open it). Ids must match exactly; scores within ``score_tolerance`` (default 1e-9, absolute). The tolerance is not
    zero because float64 dot products may differ in the last bit between identical calls (numpy picks SIMD paths by
    memory alignment: measured 1.1e-16 on qdrant-client's local mode), which changes no ranking; a real source of
    non-determinism (approximate search, a rebuilt index, racy batching) moves scores by far more. The largest
    difference seen is always reported; set 0 to demand bit-identical scores.

Threshold calibration: with ``s_in`` the top-1 scores of the in-scope queries and ``s_out`` those of the
out-of-scope queries, a threshold ``t`` keeps an in-scope query when ``s_in >= t`` and rejects an out-of-scope one
when ``s_out < t``. The proposal maximises Youden's J = TPR + TNR − 1 (Youden 1950, "Index for rating diagnostic
tests") over the midpoints between consecutive observed scores; among equally good thresholds it takes the middle
of the widest gap, so when the two distributions separate it is the midpoint between max(s_out) and min(s_in).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from deltap.check_suite import GATES, CheckSuite, InScopeQuery, load_suite, parse_suite
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.documents import Corpus, Document
    from deltap.retrieval.base import Hit, Retriever

__all__ = ["CheckReport", "GateResult", "check_pipeline", "percentile", "propose_threshold"]

Status = Literal["PASS", "FAIL", "SKIP"]
_MAX_PROBLEMS = 20


@dataclass
class GateResult:
    """One criterion of the check: its status, the headline figure and the evidence.

    Args:
        gate: The gate it belongs to (``relevance``, ``out_of_scope``, ``metadata``, ``latency``, ``determinism``).
        criterion: The line label, e.g. ``latency p95 embed+search``.
        status: ``PASS``, ``FAIL`` or ``SKIP`` (gate disabled, or nothing to measure).
        figure: The measured value against its limit, human readable.
        details: Machine-readable evidence (per-query failures, problems, distributions...).
    """

    gate: str
    criterion: str
    status: Status
    figure: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckReport:
    """Everything ``deltap check`` found. :attr:`passed` is true only when no enabled criterion failed."""

    suite: str
    retriever: str
    criteria: list[GateResult]
    queries: list[dict[str, Any]]
    latency: dict[str, Any]
    settings: dict[str, Any]
    calibration: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """No criterion failed and at least one ran (a calibration run passes when it produced a proposal)."""
        if any(c.status == "FAIL" for c in self.criteria):
            return False
        return any(c.status == "PASS" for c in self.criteria) or self.calibration is not None

    @property
    def exit_code(self) -> int:
        """0 when :attr:`passed`, else 1 (the CLI uses 2 for errors)."""
        return 0 if self.passed else 1

    def summary(self) -> str:
        """One line per criterion (``PASS`` / ``FAIL`` / ``SKIP``, label, figure), then the verdict."""
        width = max((len(c.criterion) for c in self.criteria), default=10)
        lines = [f"deltap check: {self.suite} against {self.retriever}"]
        for c in self.criteria:
            lines.append(f"  {c.status:<4}  {c.criterion:<{width}}  {c.figure}")
        if self.calibration is not None:
            lines.append(format_calibration(self.calibration))
        if self.calibration is not None and not self.criteria:
            lines.append("result: calibration only (no gate judged)")
            return "\n".join(lines)
        n_fail = sum(c.status == "FAIL" for c in self.criteria)
        verdict = "PASS" if self.passed else f"FAIL ({n_fail} {'criterion' if n_fail == 1 else 'criteria'} failed)"
        lines.append(f"result: {verdict}")
        return "\n".join(lines)

    def failures(self) -> str:
        """The evidence behind each failed criterion, a few lines each (empty when nothing failed)."""
        out: list[str] = []
        for c in self.criteria:
            if c.status != "FAIL":
                continue
            out.append(f"{c.criterion}:")
            for item in c.details.get("failures", [])[:10]:
                out.append(f"  - {item}")
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable report."""
        return {
            "suite": self.suite,
            "retriever": self.retriever,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "criteria": [
                {"gate": c.gate, "criterion": c.criterion, "status": c.status, "figure": c.figure, "details": c.details}
                for c in self.criteria
            ],
            "latency": self.latency,
            "queries": self.queries,
            "settings": self.settings,
            "calibration": self.calibration,
        }

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as indented JSON."""
        import json

        from deltap._io import write_text_atomic

        return write_text_atomic(path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------------------------------------------
# Statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation (Hyndman & Fan 1996, definition 7).

    ``h = (n − 1)·q/100``; result ``x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`` over the sorted values.
    """
    if not values:
        raise ValueError("percentile of an empty sequence")
    xs = sorted(values)
    h = (len(xs) - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def _stats_ms(seconds: Sequence[float]) -> dict[str, Any] | None:
    if not seconds:
        return None
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms),
        "samples_ms": [round(x, 4) for x in ms],  # every timed search, for the HTML page's histogram
    }


def propose_threshold(in_scores: Sequence[float], out_scores: Sequence[float]) -> dict[str, Any]:
    """Propose an out-of-scope score threshold from top-1 scores (see the module docstring for the rule).

    Returns:
        ``threshold``, ``youden_j``, ``in_kept`` (in-scope queries with top score >= threshold), ``out_rejected``,
        ``separable`` and ``margin`` (distance from the threshold to the nearest observed score).

    Raises:
        DeltapError: either list is empty.
    """
    if not in_scores or not out_scores:
        raise DeltapError(
            "calibration needs both in-scope and out-of-scope queries that returned hits "
            f"(got {len(in_scores)} in-scope and {len(out_scores)} out-of-scope top scores)"
        )
    values = sorted(set(in_scores) | set(out_scores))
    candidates = [(a + b) / 2 for a, b in pairwise(values)]
    candidates = [values[0] - 0.05, *candidates, values[-1] + 0.05]

    def score(t: float) -> tuple[float, float, int, int]:
        kept = sum(s >= t for s in in_scores)
        rejected = sum(s < t for s in out_scores)
        j = kept / len(in_scores) + rejected / len(out_scores) - 1.0
        margin = min(abs(v - t) for v in values)
        return j, margin, kept, rejected

    best = max(candidates, key=lambda t: score(t)[:2])
    j, margin, kept, rejected = score(best)
    return {
        "threshold": round(best, 6),
        "youden_j": j,
        "in_kept": kept,
        "in_total": len(in_scores),
        "out_rejected": rejected,
        "out_total": len(out_scores),
        "separable": max(out_scores) < min(in_scores),
        "margin": margin,
        "in_scores": sorted(in_scores),
        "out_scores": sorted(out_scores),
    }


def _histogram(in_scores: Sequence[float], out_scores: Sequence[float], bins: int = 10) -> list[str]:
    lo = min([*in_scores, *out_scores])
    hi = max([*in_scores, *out_scores])
    width = (hi - lo) / bins if hi > lo else 1.0
    counts_in = [0] * bins
    counts_out = [0] * bins
    for scores, counts in ((in_scores, counts_in), (out_scores, counts_out)):
        for s in scores:
            counts[min(int((s - lo) / width), bins - 1)] += 1
    lines = ["  score bin          in-scope                 out-of-scope"]
    for b in range(bins):
        a = lo + b * width
        lines.append(f"  [{a:6.3f},{a + width:6.3f})  {'#' * counts_in[b]:<24} {'o' * counts_out[b]}")
    return lines


def format_calibration(cal: Mapping[str, Any]) -> str:
    """The calibration as text: both distributions (summary + histogram) and the proposed threshold."""

    def describe(name: str, xs: Sequence[float]) -> str:
        return (
            f"  {name:<13} n={len(xs):<3} min={min(xs):.3f} median={percentile(xs, 50):.3f} max={max(xs):.3f}  "
            + " ".join(f"{x:.3f}" for x in xs[:30])
            + (" ..." if len(xs) > 30 else "")
        )

    lines = ["calibration (top-1 score per query):"]
    lines.append(describe("in-scope", cal["in_scores"]))
    lines.append(describe("out-of-scope", cal["out_scores"]))
    lines += _histogram(cal["in_scores"], cal["out_scores"])
    sep = "the distributions separate" if cal["separable"] else "the distributions OVERLAP"
    lines.append(
        f"  proposed score_threshold: {cal['threshold']:.4f} ({sep}; keeps {cal['in_kept']}/{cal['in_total']} "
        f"in-scope, rejects {cal['out_rejected']}/{cal['out_total']} out-of-scope; Youden J={cal['youden_j']:.2f}, "
        f"margin {cal['margin']:.3f})"
    )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------------
# The check


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _hit_text(hit: Hit, corpus: Corpus | None) -> str:
    text = hit.metadata.get("text")
    if isinstance(text, str) and text:
        return text
    if corpus is not None:
        doc = corpus.get(hit.doc_id)
        if doc is not None:
            return doc.full_text
    preview = hit.metadata.get("chunk_text_preview")
    return preview if isinstance(preview, str) else ""


def _id_match(pattern: str, ids: set[str]) -> bool:
    """Exact id, or a shell-style pattern when it holds ``*`` / ``?`` (``commands/npm-ci.md#*``: any chunk of a page)."""
    if "*" in pattern or "?" in pattern:
        return any(fnmatchcase(i, pattern) for i in ids)
    return pattern in ids


def _judge_in_scope(q: InScopeQuery, hits: Sequence[Hit], corpus: Corpus | None) -> dict[str, Any]:
    sections = [h.metadata.get("document_section") for h in hits]
    ids = [{h.doc_id, str(h.metadata.get("chunk_id", h.doc_id))} for h in hits]
    texts = [_norm(_hit_text(h, corpus)) for h in hits]

    def rank_of(pred: Callable[[int], bool]) -> int | None:
        return next((i + 1 for i in range(len(hits)) if pred(i)), None)

    found: dict[str, dict[str, int | None]] = {
        "sections": {s: rank_of(lambda i, s=s: sections[i] == s) for s in q.expected_sections},  # type: ignore[misc]
        "chunk_ids": {c: rank_of(lambda i, c=c: _id_match(c, ids[i])) for c in q.expected_chunk_ids},  # type: ignore[misc]
        "snippets": {t: rank_of(lambda i, t=t: _norm(t) in texts[i]) for t in q.expected_snippets},  # type: ignore[misc]
    }
    ok = True
    missing: list[str] = []
    for kind, ranks in found.items():
        if not ranks:
            continue
        hit_any = any(r is not None for r in ranks.values())
        hit_all = all(r is not None for r in ranks.values())
        if not (hit_all if q.match == "all" else hit_any):
            ok = False
            missing += [f"{kind[:-1]} {k!r}" for k, r in ranks.items() if r is None]
    ranks_found = [r for ranks in found.values() for r in ranks.values() if r is not None]
    return {
        "passed": ok,
        "first_rank": min(ranks_found) if ranks_found else None,
        "found": {kind: ranks for kind, ranks in found.items() if ranks},
        "missing": missing,
    }


def _metadata_problems(
    hits_by_query: Mapping[str, Sequence[Hit]], required: Sequence[str], corpus: Corpus | None
) -> tuple[int, list[str], dict[str, int]]:
    n_hits = 0
    problems: list[str] = []
    by_field: dict[str, int] = {}

    def add(fieldname: str, msg: str) -> None:
        by_field[fieldname] = by_field.get(fieldname, 0) + 1
        problems.append(msg)

    for qid, hits in hits_by_query.items():
        for h in hits:
            n_hits += 1
            doc: Document | None = None
            if corpus is not None:
                doc = corpus.get(h.doc_id)
                if doc is None:
                    cid = h.metadata.get("chunk_id")
                    doc = corpus.get(cid) if isinstance(cid, str) else None
                if doc is None:
                    add("<doc_id>", f"{qid}: hit {h.doc_id!r} is not in the ingested corpus")
            for f in required:
                value = h.metadata.get(f)
                stored = None
                if doc is not None:
                    stored = doc.metadata.get(f, doc.doc_id if f == "chunk_id" else None)
                if value is None:
                    add(f, f"{qid}: hit {h.doc_id!r} has no {f!r}")
                    continue
                if not isinstance(value, str | int | float) or isinstance(value, bool):
                    add(f, f"{qid}: hit {h.doc_id!r} {f!r} is a {type(value).__name__}, expected text")
                    continue
                empty = not str(value).strip()
                if empty:
                    source_has_none = f == "heading" and (doc is None or not str(stored or "").strip())
                    if not source_has_none:
                        add(f, f"{qid}: hit {h.doc_id!r} has an empty {f!r}")
                        continue
                if doc is not None and stored is not None and str(stored) != str(value):
                    add(f, f"{qid}: hit {h.doc_id!r} {f!r} is {str(value)[:60]!r} but ingestion stored {str(stored)[:60]!r}")
                elif doc is not None and stored is None and not empty:
                    add(f, f"{qid}: hit {h.doc_id!r} has {f!r} but the ingested corpus has no such field")
    return n_hits, problems, by_field


def _signature(hits: Sequence[Hit]) -> list[tuple[str, float]]:
    return [(h.doc_id, float(h.score)) for h in hits]


def _compare(a: list[tuple[str, float]], b: list[tuple[str, float]], tol: float) -> tuple[str | None, float]:
    """(first difference described, max |score difference| over common ranks) between two result lists."""
    max_diff = 0.0
    for (_, sa), (_, sb) in zip(a, b, strict=False):  # lengths may differ; the id check below reports that
        max_diff = max(max_diff, abs(sa - sb))
    if [i for i, _ in a] != [i for i, _ in b]:
        for r, ((ida, _), (idb, _)) in enumerate(zip(a, b, strict=False), start=1):
            if ida != idb:
                return f"rank {r}: {ida!r} then {idb!r}", max_diff
        return f"{len(a)} hits then {len(b)}", max_diff
    if max_diff > tol:
        return f"same ids, scores differ by up to {max_diff:.3g}", max_diff
    return None, max_diff


def _resolve_open(
    retriever: Retriever | None,
    open_retriever: Callable[[], Retriever] | None,
    store: str | Path | None,
    collection: str | None,
) -> tuple[Retriever, Callable[[], Retriever] | None, str]:
    if open_retriever is None and store is not None:
        store_s = str(store)
        is_url = "://" in store_s
        if not is_url and not Path(store_s).exists():
            raise DeltapError(
                f"cannot open the index: {store_s} does not exist; build it with `deltap index CORPUS --store {store_s}`"
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
                retriever: Retriever = open_index(store_s, collection=collection)
                return retriever
            except DeltapError:
                raise
            except Exception as exc:  # unreachable server, locked folder, missing collection...
                what = f"collection {collection!r} at {store_s}" if collection else store_s
                raise DeltapError(
                    f"cannot open the index {what}: {type(exc).__name__}: {exc}. "
                    "Check the path or URL, that the server is up, and the collection name (--collection)."
                ) from None

        open_retriever = open_store
        label = store_s + (f" (collection {collection})" if collection else "")
    else:
        label = ""
    if retriever is None:
        if open_retriever is None:
            raise DeltapError(
                "no index to check: pass --store PATH|URL (Python: store=, retriever= or open_retriever=) "
                "or set index.store in the suite"
            )
        retriever = open_retriever()
    return retriever, open_retriever, label or str(getattr(retriever, "name", type(retriever).__name__))


def _close(retriever: Any) -> None:
    close = getattr(retriever, "close", None)
    if callable(close):
        close()


def _timed_search(retriever: Retriever, query: str, k: int, clock: Callable[[], float]) -> tuple[Any, ...]:
    t0 = clock()
    try:
        hits = retriever.search(query, k=k)
    except DeltapError:
        raise
    except Exception as exc:
        raise DeltapError(f"the retriever failed on query {query!r}: {type(exc).__name__}: {exc}") from None
    elapsed = clock() - t0
    embed = getattr(retriever, "last_embed_seconds", None)
    search = getattr(retriever, "last_search_seconds", None)
    return list(hits)[:k], elapsed, embed, search


def check_pipeline(
    suite: CheckSuite | str | Path | Mapping[str, Any],
    retriever: Retriever | None = None,
    *,
    store: str | Path | None = None,
    collection: str | None = None,
    open_retriever: Callable[[], Retriever] | None = None,
    corpus: Corpus | str | Path | None = None,
    top_k: int | None = None,
    score_threshold: float | None = None,
    pass_rate: float | None = None,
    repeats: int | None = None,
    warmup: int | None = None,
    skip: Sequence[str] = (),
    calibrate: bool = False,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Run the pipeline check (see the module docstring for every gate).

    Args:
        suite: A :class:`~deltap.check_suite.CheckSuite`, a suite file, or its parsed mapping.
        retriever: A live :class:`~deltap.retrieval.base.Retriever` (the check does not close it). Without
            ``open_retriever`` / ``store`` the determinism check cannot reopen it and says so.
        store: An index path or Qdrant URL, opened with ``deltap.retrieval.open_index`` (falls back to the suite's
            ``index.store``); reopened for the determinism check.
        collection: Collection name in the store (falls back to the suite's ``index.collection``).
        open_retriever: A callable that opens the index afresh (takes precedence over ``store``).
        corpus: What ingestion stored (a Corpus or a path for ``deltap.load_corpus``; falls back to the suite's
            ``index.corpus``), to compare hit metadata with. Without it only presence is checked.
        top_k, score_threshold, pass_rate, repeats, warmup: Override the suite's values.
        skip: Gates to disable (``relevance``, ``out_of_scope``, ``metadata``, ``latency``, ``determinism``).
        calibrate: Run every query once, propose a score threshold from the two score distributions and return
            a report with only that (no gate is judged).
        clock: Monotonic clock in seconds (injectable for tests).
        progress: Called with a short message before each pass.

    Returns:
        A :class:`CheckReport`; ``report.exit_code`` is 0 only when every enabled gate passed.

    Raises:
        DeltapError: bad suite, unreachable index, missing threshold, a retriever error.
    """
    if isinstance(suite, CheckSuite):
        s = suite
    elif isinstance(suite, str | Path):
        s = load_suite(suite)
    else:
        s = parse_suite(suite)
    unknown = sorted(set(skip) - set(GATES))
    if unknown:
        raise DeltapError(f"cannot skip unknown gate(s) {', '.join(unknown)}; gates are {', '.join(GATES)}")
    gates = set(s.gates) - set(skip)
    s = s.with_overrides(
        top_k=top_k, score_threshold=score_threshold, pass_rate=pass_rate, repeats=repeats, warmup=warmup,
        gates=frozenset(gates),
    )  # fmt: skip
    if store is None and retriever is None and open_retriever is None and s.store:
        store = _relative_to_suite(s.store, s.source)
    collection = collection or s.collection
    if corpus is None and s.corpus:
        corpus = _relative_to_suite(s.corpus, s.source)
    if isinstance(corpus, str | Path):
        from deltap.loaders import load_corpus

        corpus = load_corpus(corpus)
    if (
        not calibrate
        and "out_of_scope" in gates
        and s.out_of_scope
        and s.score_threshold is None
    ):
        raise DeltapError(
            f"{s.source}: out-of-scope queries need a score_threshold; set `score_threshold:` in the suite or pass "
            "--threshold (run `deltap check SUITE --calibrate` to get a proposal), or skip the out_of_scope gate"
        )

    own_retriever = retriever is None
    r, reopen, label = _resolve_open(retriever, open_retriever, store, collection)
    queries: list[tuple[str, str]] = [(q.query_id, q.query) for q in s.in_scope] + [
        (q.query_id, q.query) for q in s.out_of_scope
    ]
    k = s.top_k
    timed = not calibrate and "latency" in gates
    n_passes = 1 if calibrate else (s.warmup + s.repeats if timed else (2 if "determinism" in gates else 1))
    passes: list[dict[str, list[Hit]]] = []
    e2e: list[float] = []
    embed: list[float] = []
    search: list[float] = []
    embed_search: list[float] = []
    split_reported = True
    try:
        for p in range(n_passes):
            if progress:
                kind = "warm-up" if timed and p < s.warmup else "timed" if timed else "check"
                progress(f"pass {p + 1}/{n_passes} ({kind}, {len(queries)} queries)")
            results: dict[str, list[Hit]] = {}
            for qid, text in queries:
                hits, elapsed, t_embed, t_search = _timed_search(r, text, k, clock)
                results[qid] = hits
                if timed and p >= s.warmup:
                    e2e.append(elapsed)
                    if isinstance(t_embed, int | float) and isinstance(t_search, int | float):
                        embed.append(float(t_embed))
                        search.append(float(t_search))
                        embed_search.append(float(t_embed) + float(t_search))
                    else:
                        split_reported = False
            passes.append(results)
        reopened: dict[str, list[Hit]] | None = None
        reopen_note = ""
        if not calibrate and "determinism" in gates and s.reopen:
            if reopen is None:
                reopen_note = "not reopened (the check was given a live retriever, no way to open it again)"
            else:
                if own_retriever:
                    _close(r)
                if progress:
                    progress("reopening the index for the determinism check")
                r2 = reopen()
                try:
                    reopened = {qid: _timed_search(r2, text, k, clock)[0] for qid, text in queries}
                finally:
                    if own_retriever:
                        _close(r2)
                    own_retriever = False  # r was closed above
    finally:
        if own_retriever:
            _close(r)

    first = passes[0]
    settings = {
        "top_k": k,
        "pass_rate": s.pass_rate,
        "score_threshold": s.score_threshold,
        "repeats": s.repeats if timed else 0,
        "warmup": s.warmup if timed else 0,
        "p95_embed_search_ms": s.p95_embed_search_ms,
        "p95_end_to_end_ms": s.p95_end_to_end_ms,
        "score_tolerance": s.score_tolerance,
        "required_metadata": list(s.required_metadata),
        "gates": sorted(gates),
        "corpus": getattr(corpus, "name", None),
        "calibrate": calibrate,
    }
    per_query: list[dict[str, Any]] = []
    criteria: list[GateResult] = []

    # relevance
    in_results = []
    for q in s.in_scope:
        hits = first[q.query_id]
        verdict = _judge_in_scope(q, hits, corpus)
        in_results.append((q, verdict))
        per_query.append({
            "query_id": q.query_id,
            "kind": "in_scope",
            "query": q.query,
            "passed": verdict["passed"],
            "first_rank": verdict["first_rank"],
            "found": verdict["found"],
            "missing": verdict["missing"],
            "top_score": hits[0].score if hits else None,
            "hits": [{"doc_id": h.doc_id, "score": h.score, "section": h.metadata.get("document_section")} for h in hits],
        })  # fmt: skip
    out_top: dict[str, float | None] = {}
    for oq in s.out_of_scope:
        hits = first[oq.query_id]
        top = max((h.score for h in hits), default=None)
        out_top[oq.query_id] = top
        passed_oos = top is None or (s.score_threshold is not None and top < s.score_threshold)
        per_query.append({
            "query_id": oq.query_id,
            "kind": "out_of_scope",
            "query": oq.query,
            "passed": passed_oos if s.score_threshold is not None else None,
            "top_score": top,
            "hits": [{"doc_id": h.doc_id, "score": h.score, "section": h.metadata.get("document_section")} for h in hits],
        })  # fmt: skip

    calibration = None
    if calibrate:
        in_scores = [first[q.query_id][0].score for q in s.in_scope if first[q.query_id]]
        out_scores = [v for v in out_top.values() if v is not None]
        calibration = propose_threshold(in_scores, out_scores)
        return CheckReport(s.source, label, [], per_query, {}, settings, calibration)

    if "relevance" not in gates:
        criteria.append(GateResult("relevance", f"in-scope hit@{k}", "SKIP", "disabled"))
    elif not s.in_scope:
        criteria.append(GateResult("relevance", f"in-scope hit@{k}", "SKIP", "no in_scope queries in the suite"))
    else:
        n_pass = sum(v["passed"] for _, v in in_results)
        rate = n_pass / len(in_results)
        below = []
        if s.score_threshold is not None:
            below = [q.query_id for q in s.in_scope if not first[q.query_id] or first[q.query_id][0].score < s.score_threshold]
        fails = [f"{q.query_id} ({q.query!r}): missing {', '.join(v['missing'])}" for q, v in in_results if not v["passed"]]
        figure = f"{n_pass}/{len(in_results)} queries = {rate:.0%} (need >= {s.pass_rate:.0%})"
        if below:
            figure += f"; {len(below)} with top score below the threshold"
        criteria.append(GateResult(
            "relevance", f"in-scope hit@{k}", "PASS" if rate >= s.pass_rate - 1e-12 else "FAIL", figure,
            {"pass_rate": rate, "passed": n_pass, "total": len(in_results), "failures": fails,
             "below_threshold": below},
        ))  # fmt: skip

    if "out_of_scope" not in gates:
        criteria.append(GateResult("out_of_scope", "out-of-scope below threshold", "SKIP", "disabled"))
    elif not s.out_of_scope:
        criteria.append(
            GateResult("out_of_scope", "out-of-scope below threshold", "SKIP", "no out_of_scope queries in the suite")
        )
    else:
        thr = float(s.score_threshold)  # type: ignore[arg-type]  # checked above
        bad = {qid: t for qid, t in out_top.items() if t is not None and t >= thr}
        worst = max((t for t in out_top.values() if t is not None), default=None)
        figure = (
            f"{len(out_top) - len(bad)}/{len(out_top)} below {thr:.3f}"
            + (f" (max top score {worst:.3f})" if worst is not None else " (no hits)")
        )
        fails = [f"{qid}: top score {t:.3f} >= {thr:.3f}" for qid, t in bad.items()]
        criteria.append(GateResult(
            "out_of_scope", "out-of-scope below threshold", "FAIL" if bad else "PASS", figure,
            {"threshold": thr, "top_scores": out_top, "failures": fails},
        ))  # fmt: skip

    if "metadata" not in gates:
        criteria.append(GateResult("metadata", "metadata integrity", "SKIP", "disabled"))
    else:
        n_hits, problems, by_field = _metadata_problems(first, s.required_metadata, corpus)
        basis = "vs ingested corpus" if corpus is not None else "presence only (no corpus given to compare with)"
        if n_hits == 0:
            criteria.append(GateResult("metadata", "metadata integrity", "SKIP", "no hits to inspect"))
        else:
            fields = ", ".join(f"{f} x{n}" for f, n in sorted(by_field.items()))
            figure = f"{n_hits} hits, {len(problems)} problems{f' ({fields})' if fields else ''}; {basis}"
            criteria.append(GateResult(
                "metadata", "metadata integrity", "FAIL" if problems else "PASS", figure,
                {"hits": n_hits, "problems_by_field": by_field, "failures": problems[:_MAX_PROBLEMS],
                 "n_problems": len(problems), "compared_with_corpus": corpus is not None},
            ))  # fmt: skip

    latency: dict[str, Any] = {
        "end_to_end": _stats_ms(e2e),
        "embedding": _stats_ms(embed) if split_reported else None,
        "search": _stats_ms(search) if split_reported else None,
        "embed_plus_search": _stats_ms(embed_search) if split_reported else None,
        "split_reported": split_reported,
    }
    if not timed:
        for label_ in ("latency p95 embed+search", "latency p95 end-to-end"):
            criteria.append(GateResult("latency", label_, "SKIP", "disabled"))
    else:
        es = latency["embed_plus_search"] or latency["end_to_end"]
        note = "" if split_reported else " (retriever reports no embed/search split: end-to-end used as upper bound)"
        figure = (
            f"p95 {es['p95_ms']:.1f} ms (limit {s.p95_embed_search_ms:g}); p50 {es['p50_ms']:.1f}, "
            f"p99 {es['p99_ms']:.1f}"
        )
        if split_reported:
            figure += (
                f"; embed p95 {latency['embedding']['p95_ms']:.1f}, search p95 {latency['search']['p95_ms']:.1f}"
            )
        criteria.append(GateResult(
            "latency", "latency p95 embed+search", "PASS" if es["p95_ms"] < s.p95_embed_search_ms else "FAIL",
            figure + note, {"failures": [f"p95 {es['p95_ms']:.1f} ms >= {s.p95_embed_search_ms:g} ms"]},
        ))  # fmt: skip
        ee = latency["end_to_end"]
        criteria.append(GateResult(
            "latency", "latency p95 end-to-end", "PASS" if ee["p95_ms"] < s.p95_end_to_end_ms else "FAIL",
            f"p95 {ee['p95_ms']:.1f} ms (limit {s.p95_end_to_end_ms:g}); p50 {ee['p50_ms']:.1f}, p99 "
            f"{ee['p99_ms']:.1f}; {ee['n']} timed searches after {s.warmup} warm-up pass(es)",
            {"failures": [f"p95 {ee['p95_ms']:.1f} ms >= {s.p95_end_to_end_ms:g} ms"]},
        ))  # fmt: skip

    if "determinism" not in gates:
        criteria.append(GateResult("determinism", "determinism", "SKIP", "disabled"))
    else:
        diffs: list[str] = []
        differing: set[str] = set()
        max_diff = 0.0
        n_compared = 0
        runs = [(f"pass {p + 1}", res) for p, res in enumerate(passes[1:], start=1)]
        if reopened is not None:
            runs.append(("after reopening", reopened))
        for qid, _ in queries:
            base = _signature(first[qid])
            for name, res in runs:
                n_compared += 1
                what, d = _compare(base, _signature(res[qid]), s.score_tolerance)
                max_diff = max(max_diff, d)
                if what:
                    differing.add(qid)
                    diffs.append(f"{qid} {name}: {what}")
        reopened_txt = "incl. after reopening" if reopened is not None else reopen_note or "reopen disabled"
        figure = (
            f"{len(queries)} queries x {len(runs) + 1} runs ({reopened_txt}): "
            f"{len(differing)} differ; max |score diff| {max_diff:.3g}"
        )
        criteria.append(GateResult(
            "determinism", "determinism", "FAIL" if diffs else "PASS", figure,
            {"failures": diffs[:_MAX_PROBLEMS], "n_differences": len(diffs), "max_score_diff": max_diff,
             "reopened": reopened is not None},
        ))  # fmt: skip

    return CheckReport(s.source, label, criteria, per_query, latency, settings, None)


def _relative_to_suite(value: str, source: str) -> str:
    """Paths in a suite file are relative to the file (URLs untouched)."""
    if "://" in value or Path(value).is_absolute() or source.startswith("<"):
        return value
    return str(Path(source).parent / value)
