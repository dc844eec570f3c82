"""``check_pipeline``: read the suite, search the index (:mod:`deltap.check.passes`), judge the gates
(:mod:`deltap.check.gates`) and gather a :class:`~deltap.check.result.PipelineCheckResult`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.check.calibration import propose_threshold
from deltap.check.gates import determinism, judge_queries, latency, latency_figures, metadata, out_of_scope, relevance
from deltap.check.passes import open_index_for_check, run_passes
from deltap.check.result import PipelineCheckResult
from deltap.check.suite import GATES, CheckSuite, load_suite, parse_suite
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.documents import Corpus
    from deltap.retrieval.base import Retriever

__all__ = ["check_pipeline"]


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
) -> PipelineCheckResult:
    """Run the pipeline check (the gates are described in :mod:`deltap.check.gates`).

    Args:
        suite: A :class:`~deltap.check.suite.CheckSuite`, a suite file, or its parsed mapping.
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
        calibrate: Run every query once, propose a score threshold from the two score distributions
            (:func:`~deltap.check.calibration.propose_threshold`) and return a result with only that (no gate is
            judged).
        clock: Monotonic clock in seconds (injectable for tests).
        progress: Called with a short message before each pass.

    Returns:
        A :class:`~deltap.check.result.PipelineCheckResult`; its ``exit_code`` is 0 only when every enabled gate
        passed.

    Raises:
        DeltapError: bad suite, unreachable index, missing threshold, a retriever error.
    """
    s = (
        suite
        if isinstance(suite, CheckSuite)
        else load_suite(suite)
        if isinstance(suite, str | Path)
        else parse_suite(suite)
    )
    unknown = sorted(set(skip) - set(GATES))
    if unknown:
        raise DeltapError(f"cannot skip unknown gate(s) {', '.join(unknown)}; gates are {', '.join(GATES)}")
    enabled = set(s.gates) - set(skip)
    s = s.with_overrides(
        top_k=top_k, score_threshold=score_threshold, pass_rate=pass_rate, repeats=repeats, warmup=warmup,
        gates=frozenset(enabled),
    )  # fmt: skip
    if store is None and retriever is None and open_retriever is None and s.store:
        store = _relative_to_suite(s.store, s.source)
    collection = collection or s.collection
    if corpus is None and s.corpus:
        corpus = _relative_to_suite(s.corpus, s.source)
    if isinstance(corpus, str | Path):
        from deltap.loaders import load_corpus

        corpus = load_corpus(corpus)
    if not calibrate and "out_of_scope" in enabled and s.out_of_scope and s.score_threshold is None:
        raise DeltapError(
            f"{s.source}: out-of-scope queries need a score_threshold; set `score_threshold:` in the suite or pass "
            "--threshold (run `deltap check SUITE --calibrate` to get a proposal), or skip the out_of_scope gate"
        )

    owned = retriever is None
    r, reopen, label = open_index_for_check(retriever, open_retriever, store, collection)
    queries = [(q.query_id, q.query) for q in s.in_scope] + [(q.query_id, q.query) for q in s.out_of_scope]
    timed = not calibrate and "latency" in enabled
    n_passes = 1 if calibrate else (s.warmup + s.repeats if timed else (2 if "determinism" in enabled else 1))
    passes = run_passes(
        r, reopen, queries, s.top_k, n_passes=n_passes, warmup=s.warmup, timed=timed,
        reopen_for_determinism=not calibrate and "determinism" in enabled and s.reopen, owned=owned, clock=clock,
        progress=progress,
    )  # fmt: skip
    settings = {
        "top_k": s.top_k,
        "pass_rate": s.pass_rate,
        "score_threshold": s.score_threshold,
        "repeats": s.repeats if timed else 0,
        "warmup": s.warmup if timed else 0,
        "p95_embed_search_ms": s.p95_embed_search_ms,
        "p95_end_to_end_ms": s.p95_end_to_end_ms,
        "score_tolerance": s.score_tolerance,
        "required_metadata": list(s.required_metadata),
        "gates": sorted(enabled),
        "corpus": getattr(corpus, "name", None),
        "calibrate": calibrate,
    }
    judged = judge_queries(s, passes.first, corpus)
    if calibrate:
        in_scores = [passes.first[q.query_id][0].score for q in s.in_scope if passes.first[q.query_id]]
        out_scores = [v for v in judged.out_top.values() if v is not None]
        return PipelineCheckResult(
            s.source, label, [], judged.records, {}, settings, propose_threshold(in_scores, out_scores)
        )

    timings = latency_figures(passes)
    criteria = [
        *relevance(s, judged, passes.first),
        *out_of_scope(s, judged),
        *metadata(s, passes.first, corpus),
        *latency(s, timings, timed),
        *determinism(s, passes, queries),
    ]
    return PipelineCheckResult(s.source, label, criteria, judged.records, timings, settings, None)


def _relative_to_suite(value: str, source: str) -> str:
    """Paths in a suite file are relative to the file (URLs untouched)."""
    if "://" in value or Path(value).is_absolute() or source.startswith("<"):
        return value
    return str(Path(source).parent / value)
