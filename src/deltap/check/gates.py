"""The five gates of ``deltap check``, one function each; every gate reads the suite and the searches' results and
returns its :class:`~deltap.check.result.GateResult` lines (``SKIP`` when disabled or with nothing to judge).

``relevance``
    An in-scope query passes when its expected sections / chunk ids / snippets are in the top ``k`` hits; the gate
    passes when at least ``pass_rate`` (default 80%) of the in-scope queries pass.
``out_of_scope``
    An out-of-scope query passes when the pipeline returns nothing or only hits scoring below ``score_threshold``;
    the gate passes when every out-of-scope query does.
``metadata``
    Every hit of every query carries a non-empty value for each required field (default ``source_url``,
    ``document_section``, ``heading``, ``chunk_id``, ``chunk_text_preview``) and, when the ingested corpus is
    given, the same value ingestion stored for that document. ``heading`` may be empty only where the stored
    document's heading is empty too (a source with no heading), or when no corpus is given to say otherwise.
``latency``
    p95(embed + search) < 300 ms and p95(end-to-end) < 500 ms over the timed passes (defaults). A retriever that does
    not report the split is gated on its end-to-end time (an upper bound), and the figure says so.
``determinism``
    Every pass (warm-up and timed) must return, for each query, the same ordered ids and the same scores as the first
    pass; and so must one more pass after the index is closed and opened again (when the check was given a way to
    open it). Ids must match exactly; scores within ``score_tolerance`` (default 1e-9, absolute). The tolerance is not
    zero because float64 dot products may differ in the last bit between identical calls (numpy picks SIMD paths by
    memory alignment: measured 1.1e-16 on qdrant-client's local mode), which changes no ranking; a real source of
    non-determinism (approximate search, a rebuilt index, racy batching) moves scores by far more. The largest
    difference seen is always reported; set 0 to demand bit-identical scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from deltap.check.calibration import latency_stats
from deltap.check.result import GateResult

if TYPE_CHECKING:
    from deltap.check.passes import Passes, Results
    from deltap.check.suite import CheckSuite, InScopeQuery
    from deltap.documents import Corpus, Document
    from deltap.retrieval.base import Hit

__all__ = ["JudgedQueries", "determinism", "judge_queries", "latency", "metadata", "out_of_scope", "relevance"]

_MAX_PROBLEMS = 20


@dataclass
class JudgedQueries:
    """Every query of the suite judged on the first pass: one record each (the report's query table), the in-scope
    verdicts and the out-of-scope top scores."""

    records: list[dict[str, Any]]
    in_scope: list[tuple[InScopeQuery, dict[str, Any]]]
    out_top: dict[str, float | None]


def judge_queries(suite: CheckSuite, first: Results, corpus: Corpus | None) -> JudgedQueries:
    """Judge every in-scope and out-of-scope query of ``suite`` on the first pass's hits."""
    records: list[dict[str, Any]] = []
    in_results = []
    for q in suite.in_scope:
        hits = first[q.query_id]
        verdict = _judge_in_scope(q, hits, corpus)
        in_results.append((q, verdict))
        records.append({
            "query_id": q.query_id,
            "kind": "in_scope",
            "query": q.query,
            "passed": verdict["passed"],
            "first_rank": verdict["first_rank"],
            "found": verdict["found"],
            "missing": verdict["missing"],
            "top_score": hits[0].score if hits else None,
            "hits": _hit_rows(hits),
        })  # fmt: skip
    out_top: dict[str, float | None] = {}
    for oq in suite.out_of_scope:
        hits = first[oq.query_id]
        top = max((h.score for h in hits), default=None)
        out_top[oq.query_id] = top
        passed = top is None or (suite.score_threshold is not None and top < suite.score_threshold)
        records.append({
            "query_id": oq.query_id,
            "kind": "out_of_scope",
            "query": oq.query,
            "passed": passed if suite.score_threshold is not None else None,
            "top_score": top,
            "hits": _hit_rows(hits),
        })  # fmt: skip
    return JudgedQueries(records, in_results, out_top)


def _hit_rows(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    return [{"doc_id": h.doc_id, "score": h.score, "section": h.metadata.get("document_section")} for h in hits]


def relevance(suite: CheckSuite, judged: JudgedQueries, first: Results) -> list[GateResult]:
    """In-scope hit@k: at least ``pass_rate`` of the in-scope queries find what they expect in the top k."""
    k = suite.top_k
    label = f"in-scope hit@{k}"
    if "relevance" not in suite.gates:
        return [GateResult("relevance", label, "SKIP", "disabled")]
    if not suite.in_scope:
        return [GateResult("relevance", label, "SKIP", "no in_scope queries in the suite")]
    n_pass = sum(v["passed"] for _, v in judged.in_scope)
    rate = n_pass / len(judged.in_scope)
    below = []
    if suite.score_threshold is not None:
        below = [
            q.query_id
            for q in suite.in_scope
            if not first[q.query_id] or first[q.query_id][0].score < suite.score_threshold
        ]
    fails = [
        f"{q.query_id} ({q.query!r}): missing {', '.join(v['missing'])}" for q, v in judged.in_scope if not v["passed"]
    ]
    figure = f"{n_pass}/{len(judged.in_scope)} queries = {rate:.0%} (need >= {suite.pass_rate:.0%})"
    if below:
        figure += f"; {len(below)} with top score below the threshold"
    return [GateResult(
        "relevance", label, "PASS" if rate >= suite.pass_rate - 1e-12 else "FAIL", figure,
        {"pass_rate": rate, "passed": n_pass, "total": len(judged.in_scope), "failures": fails, "below_threshold": below},
    )]  # fmt: skip


def out_of_scope(suite: CheckSuite, judged: JudgedQueries) -> list[GateResult]:
    """Every out-of-scope query returns nothing or only hits below ``score_threshold``."""
    label = "out-of-scope below threshold"
    if "out_of_scope" not in suite.gates:
        return [GateResult("out_of_scope", label, "SKIP", "disabled")]
    if not suite.out_of_scope:
        return [GateResult("out_of_scope", label, "SKIP", "no out_of_scope queries in the suite")]
    thr = float(suite.score_threshold)  # type: ignore[arg-type]  # check_pipeline refuses a suite without one
    out_top = judged.out_top
    bad = {qid: t for qid, t in out_top.items() if t is not None and t >= thr}
    worst = max((t for t in out_top.values() if t is not None), default=None)
    figure = f"{len(out_top) - len(bad)}/{len(out_top)} below {thr:.3f}" + (
        f" (max top score {worst:.3f})" if worst is not None else " (no hits)"
    )
    fails = [f"{qid}: top score {t:.3f} >= {thr:.3f}" for qid, t in bad.items()]
    return [GateResult(
        "out_of_scope", label, "FAIL" if bad else "PASS", figure, {"threshold": thr, "top_scores": out_top, "failures": fails},
    )]  # fmt: skip


def metadata(suite: CheckSuite, first: Results, corpus: Corpus | None) -> list[GateResult]:
    """Every hit carries every required field, with the value ingestion stored when the corpus is given."""
    label = "metadata integrity"
    if "metadata" not in suite.gates:
        return [GateResult("metadata", label, "SKIP", "disabled")]
    n_hits, problems, by_field = _metadata_problems(first, suite.required_metadata, corpus)
    if n_hits == 0:
        return [GateResult("metadata", label, "SKIP", "no hits to inspect")]
    basis = "vs ingested corpus" if corpus is not None else "presence only (no corpus given to compare with)"
    fields = ", ".join(f"{f} x{n}" for f, n in sorted(by_field.items()))
    figure = f"{n_hits} hits, {len(problems)} problems{f' ({fields})' if fields else ''}; {basis}"
    return [GateResult(
        "metadata", label, "FAIL" if problems else "PASS", figure,
        {"hits": n_hits, "problems_by_field": by_field, "failures": problems[:_MAX_PROBLEMS], "n_problems": len(problems),
         "compared_with_corpus": corpus is not None},
    )]  # fmt: skip


def latency_figures(passes: Passes) -> dict[str, Any]:
    """The latency distributions of the timed passes (the report's ``latency`` section)."""
    split = passes.split_reported
    return {
        "end_to_end": latency_stats(passes.end_to_end),
        "embedding": latency_stats(passes.embed) if split else None,
        "search": latency_stats(passes.search) if split else None,
        "embed_plus_search": latency_stats(passes.embed_search) if split else None,
        "split_reported": split,
    }


def latency(suite: CheckSuite, figures: Mapping[str, Any], timed: bool) -> list[GateResult]:
    """p95 of embedding + search and p95 end to end, each under its limit."""
    if not timed:
        return [
            GateResult("latency", label, "SKIP", "disabled")
            for label in ("latency p95 embed+search", "latency p95 end-to-end")
        ]
    split = figures["split_reported"]
    es = figures["embed_plus_search"] or figures["end_to_end"]
    note = "" if split else " (retriever reports no embed/search split: end-to-end used as upper bound)"
    figure = f"p95 {es['p95_ms']:.1f} ms (limit {suite.p95_embed_search_ms:g}); p50 {es['p50_ms']:.1f}, p99 {es['p99_ms']:.1f}"
    if split:
        figure += f"; embed p95 {figures['embedding']['p95_ms']:.1f}, search p95 {figures['search']['p95_ms']:.1f}"
    ee = figures["end_to_end"]
    return [
        GateResult(
            "latency", "latency p95 embed+search", "PASS" if es["p95_ms"] < suite.p95_embed_search_ms else "FAIL",
            figure + note, {"failures": [f"p95 {es['p95_ms']:.1f} ms >= {suite.p95_embed_search_ms:g} ms"]},
        ),
        GateResult(
            "latency", "latency p95 end-to-end", "PASS" if ee["p95_ms"] < suite.p95_end_to_end_ms else "FAIL",
            f"p95 {ee['p95_ms']:.1f} ms (limit {suite.p95_end_to_end_ms:g}); p50 {ee['p50_ms']:.1f}, p99 "
            f"{ee['p99_ms']:.1f}; {ee['n']} timed searches after {suite.warmup} warm-up pass(es)",
            {"failures": [f"p95 {ee['p95_ms']:.1f} ms >= {suite.p95_end_to_end_ms:g} ms"]},
        ),
    ]  # fmt: skip


def determinism(suite: CheckSuite, passes: Passes, queries: Sequence[tuple[str, str]]) -> list[GateResult]:
    """Every pass, and the pass after reopening the index, returns the first pass's ids and scores."""
    if "determinism" not in suite.gates:
        return [GateResult("determinism", "determinism", "SKIP", "disabled")]
    diffs: list[str] = []
    differing: set[str] = set()
    max_diff = 0.0
    runs = [(f"pass {p + 1}", res) for p, res in enumerate(passes.results[1:], start=1)]
    if passes.reopened is not None:
        runs.append(("after reopening", passes.reopened))
    for qid, _ in queries:
        base = _signature(passes.first[qid])
        for name, res in runs:
            what, d = _compare(base, _signature(res[qid]), suite.score_tolerance)
            max_diff = max(max_diff, d)
            if what:
                differing.add(qid)
                diffs.append(f"{qid} {name}: {what}")
    reopened_txt = "incl. after reopening" if passes.reopened is not None else passes.reopen_note or "reopen disabled"
    figure = f"{len(queries)} queries x {len(runs) + 1} runs ({reopened_txt}): {len(differing)} differ; max |score diff| {max_diff:.3g}"
    return [GateResult(
        "determinism", "determinism", "FAIL" if diffs else "PASS", figure,
        {"failures": diffs[:_MAX_PROBLEMS], "n_differences": len(diffs), "max_score_diff": max_diff,
         "reopened": passes.reopened is not None},
    )]  # fmt: skip


# ----------------------------------------------------------------------------------------------------------------
# helpers


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
                    add(
                        f,
                        f"{qid}: hit {h.doc_id!r} {f!r} is {str(value)[:60]!r} but ingestion stored {str(stored)[:60]!r}",
                    )
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
