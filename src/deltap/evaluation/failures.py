"""Failure analysis: why did a query's relevant documents miss the top K?

A *failure* is an evaluated query with at least one relevant document (grade > 0) and none in the run's top K
(``hit_rate@K = 0``; ranks by the trec_eval rule). Each failure gets every bucket whose test fires, with the numbers
that made it fire, and one primary bucket (the first in this order):

1. ``distractor_overlap`` with a *harmful* label — a document in the top K is labelled harmful for this query in the
   verified dataset (hard evidence, so it comes first);
2. ``vocabulary_mismatch`` — the best relevant document covers less than ``vocab_threshold`` of the query's content
   terms (the qrels say it matters, but it shares few words with the query: a lexical retriever cannot find it);
3. ``specificity_gap`` when the query has at most ``short_query_terms`` content terms (a generic query: keyword ties
   with distractors are a symptom of it, not the cause);
4. ``distractor_overlap`` — a non-relevant document ranked above every relevant one covers at least as many query
   terms as the best relevant document, and at least ``distractor_threshold`` of them (it wins on keywords);
5. ``specificity_gap`` — the query is short or generic: at most ``short_query_terms`` content terms, or the top K
   scores lie within ``margin_threshold`` (relative) of the top score, so many documents tie near the top;
6. ``unexplained`` — none of the tests fired (e.g. the retriever's scores disagree for reasons no lexical signal
   shows).

Term coverage uses lower-cased alphanumeric tokens without English stop words (the same for every retriever, so
counts are comparable across retrievers).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from deltap.documents import Corpus
from deltap.evaluation._render import to_markdown, to_text
from deltap.evaluation.ranking import validate_qrels
from deltap.evaluation.scores import QrelsLike, RunLike, load_qrels_like, load_run_like

__all__ = ["BUCKETS", "Failure", "FailureAnalysis", "analyze_failures", "content_terms"]

BUCKETS = ("vocabulary_mismatch", "distractor_overlap", "specificity_gap", "unexplained")

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
    out over own same she should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your yours
    also may might must shall upon using used use within without""".split()
)


def content_terms(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens of ``text``, minus English stop words and one-character tokens."""
    return {t for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in _STOP}


def _coverage(query_terms: set[str], doc_terms: set[str]) -> float:
    return len(query_terms & doc_terms) / len(query_terms) if query_terms else 0.0


@dataclass(frozen=True)
class Failure:
    """One query whose relevant documents all missed the top K of one run.

    Attributes:
        system: The run's name.
        query_id: The query.
        query: Its text.
        bucket: Primary bucket (see the module docstring for the order).
        buckets: Every bucket whose test fired.
        evidence: The numbers behind each test (coverages, shared terms, distractor ids and ranks, score margin).
    """

    system: str
    query_id: str
    query: str
    bucket: str
    buckets: tuple[str, ...]
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FailureAnalysis:
    """Failures of one or several runs, with counts per bucket and per run."""

    k: int
    systems: tuple[str, ...]
    n_queries: Mapping[str, int]
    failures: tuple[Failure, ...]

    def counts(self) -> dict[str, dict[str, int]]:
        """``{system: {bucket: number of failures whose primary bucket it is}}`` (every bucket listed)."""
        out = {s: dict.fromkeys(BUCKETS, 0) for s in self.systems}
        for f in self.failures:
            out[f.system][f.bucket] += 1
        return out

    def signal_counts(self) -> dict[str, dict[str, int]]:
        """``{system: {bucket: number of failures where its test fired}}`` (a failure can count in several)."""
        out = {s: dict.fromkeys(BUCKETS, 0) for s in self.systems}
        for f in self.failures:
            for b in f.buckets:
                out[f.system][b] += 1
        return out

    def examples(self, bucket: str, system: str | None = None, n: int = 3) -> list[Failure]:
        """Up to ``n`` failures with primary ``bucket`` (for ``system`` if given)."""
        return [f for f in self.failures if f.bucket == bucket and (system is None or f.system == system)][:n]

    def _rows(self) -> tuple[list[str], list[list[str]]]:
        counts = self.counts()
        header = ["bucket", *self.systems]
        rows = [[b, *(str(counts[s][b]) for s in self.systems)] for b in BUCKETS]
        totals = Counter(f.system for f in self.failures)
        rows.append(
            ["failures (no relevant doc in top K)", *(f"{totals[s]}/{self.n_queries[s]}" for s in self.systems)]
        )
        return header, rows

    def _example_lines(self, n: int = 2) -> list[str]:
        lines = []
        for b in BUCKETS:
            for f in self.examples(b, n=n):
                ev = {k: v for k, v in f.evidence.items() if k in _SUMMARY_KEYS}
                lines.append(f"[{b}] {f.system} q={f.query_id} {f.query[:70]!r}: {json.dumps(ev, ensure_ascii=False)}")
        return lines

    def to_table(self, examples: int = 2) -> str:
        header, rows = self._rows()
        text = f"Failure buckets at K={self.k} (primary bucket per failed query)\n" + to_text(header, rows)
        ex = self._example_lines(examples)
        return text + ("\n\nExamples:\n" + "\n".join(ex) if ex else "")

    def to_markdown(self, examples: int = 2) -> str:
        header, rows = self._rows()
        ex = self._example_lines(examples)
        return to_markdown(header, rows) + ("\n\n" + "\n".join(f"- `{e}`" for e in ex) if ex else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n_queries": dict(self.n_queries),
            "counts": self.counts(),
            "signal_counts": self.signal_counts(),
            "failures": [
                {
                    "system": f.system,
                    "query_id": f.query_id,
                    "query": f.query,
                    "bucket": f.bucket,
                    "buckets": list(f.buckets),
                    "evidence": dict(f.evidence),
                }
                for f in self.failures
            ],
        }

    def __str__(self) -> str:
        return self.to_table()


_SUMMARY_KEYS = (
    "best_relevant",
    "best_relevant_coverage",
    "missing_terms",
    "distractor",
    "distractor_rank",
    "distractor_coverage",
    "query_terms",
    "relative_margin",
    "harmful_in_top_k",
)


def _doc_text(corpus: Corpus | Mapping[str, str], doc_id: str) -> str | None:
    if isinstance(corpus, Corpus):
        doc = corpus.get(doc_id)
        return None if doc is None else doc.full_text
    return corpus.get(doc_id)


def analyze_failures(
    qrels: QrelsLike,
    runs: Mapping[str, RunLike],
    queries: Mapping[str, str],
    corpus: Corpus | Mapping[str, str],
    *,
    k: int = 10,
    harmful: Mapping[str, Collection[str]] | None = None,
    vocab_threshold: float = 0.34,
    distractor_threshold: float = 0.5,
    short_query_terms: int = 2,
    margin_threshold: float = 0.05,
) -> FailureAnalysis:
    """Bucket every query whose relevant documents all missed the top ``k`` of each run (see the module docstring).

    Args:
        qrels: Qrels dict or file.
        runs: ``{name: run}`` (dicts or files).
        queries: ``{query_id: text}``; every failed query needs its text.
        corpus: A :class:`~deltap.documents.Corpus` or ``{doc_id: text}``.
        k: The cutoff.
        harmful: ``{query_id: doc ids labelled harmful}`` from a verified dataset (optional).
        vocab_threshold: Vocabulary mismatch when the best relevant document covers less than this share of the
            query's content terms.
        distractor_threshold: Minimal query-term coverage of a lexical distractor.
        short_query_terms: Specificity gap when the query has at most this many content terms.
        margin_threshold: Specificity gap when ``(s_1 − s_K) / |s_1|`` is below this.

    Raises:
        DeltapError: bad qrels; KeyError-style DeltapError when a failed query has no text.
    """
    from deltap.errors import DeltapError

    if k < 1:
        raise DeltapError(f"k must be >= 1, got {k}")
    qrels_d = load_qrels_like(qrels)
    validate_qrels(qrels_d)
    failures: list[Failure] = []
    n_queries: dict[str, int] = {}
    missing_text: set[str] = set()
    term_cache: dict[str, set[str]] = {}

    def terms_of(doc_id: str) -> set[str]:
        if doc_id not in term_cache:
            text = _doc_text(corpus, doc_id)
            term_cache[doc_id] = content_terms(text) if text is not None else set()
        return term_cache[doc_id]

    for system, run_like in runs.items():
        run = load_run_like(run_like)
        evaluated = 0
        for qid, judged in qrels_d.items():
            relevant = {d for d, g in judged.items() if g > 0}
            if not relevant:
                continue
            evaluated += 1
            # trec_eval order: score descending, then doc id descending
            ranked = sorted(run.get(qid, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            top = ranked[:k]
            if any(d in relevant for d, _ in top):
                continue
            if qid not in queries:
                missing_text.add(qid)
                continue
            query = queries[qid]
            q_terms = content_terms(query)
            rank_of = {d: i + 1 for i, (d, _) in enumerate(ranked)}
            rel_cov = sorted(((_coverage(q_terms, terms_of(d)), d) for d in relevant), reverse=True)
            best_cov, best_doc = rel_cov[0]
            evidence: dict[str, Any] = {
                "query_terms": len(q_terms),
                "best_relevant": best_doc,
                "best_relevant_rank": rank_of.get(best_doc),
                "best_relevant_coverage": round(best_cov, 3),
                "shared_terms": sorted(q_terms & terms_of(best_doc)),
                "missing_terms": sorted(q_terms - terms_of(best_doc)),
            }
            fired: list[str] = []
            harmful_top = [d for d, _ in top if harmful and d in harmful.get(qid, ())]
            if harmful_top:
                evidence["harmful_in_top_k"] = harmful_top
                fired.append("distractor_overlap")
            if q_terms and best_cov < vocab_threshold:
                fired.append("vocabulary_mismatch")
            distractors = [(_coverage(q_terms, terms_of(d)), -i, d) for i, (d, _) in enumerate(top)]
            if distractors:
                cov, neg_i, doc = max(distractors)
                if cov >= max(best_cov, distractor_threshold):
                    evidence.update(distractor=doc, distractor_rank=1 - neg_i, distractor_coverage=round(cov, 3))
                    if "distractor_overlap" not in fired:
                        fired.append("distractor_overlap")
            if top:
                s1, sk = top[0][1], top[-1][1]
                margin = (s1 - sk) / abs(s1) if s1 != 0 else math.inf
                evidence["relative_margin"] = round(margin, 4) if math.isfinite(margin) else None
            else:
                margin = math.inf
                evidence["relative_margin"] = None
                evidence["retrieved"] = 0
            if len(q_terms) <= short_query_terms or (len(top) >= k and margin < margin_threshold):
                fired.append("specificity_gap")
            order = ["vocabulary_mismatch", "distractor_overlap", "specificity_gap"]
            if harmful_top:
                primary = "distractor_overlap"
            elif "vocabulary_mismatch" in fired:
                primary = "vocabulary_mismatch"
            elif len(q_terms) <= short_query_terms:
                primary = "specificity_gap"  # keyword ties with distractors are a symptom of a generic query
            else:
                primary = next((b for b in order if b in fired), "unexplained")
            failures.append(
                Failure(
                    system, qid, query, primary, tuple(b for b in order if b in fired) or ("unexplained",), evidence
                )
            )
        n_queries[system] = evaluated
    if missing_text:
        shown = ", ".join(sorted(missing_text)[:10])
        raise DeltapError(
            f"{len(missing_text)} failed queries have no text in `queries`: {shown}; pass every query's text"
        )
    return FailureAnalysis(k=k, systems=tuple(runs), n_queries=n_queries, failures=tuple(failures))
