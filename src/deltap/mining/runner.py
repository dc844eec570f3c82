"""One case's trials through the solver and the checker, each logged before it counts (:class:`TrialRunner`, the
:class:`~deltap.mining.procedure.TrialSource` of ``mine()``), and the context-window fit of a case's pool."""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from deltap.checkers.base import is_unreadable
from deltap.errors import DeltapError
from deltap.mining.config import MiningConfig
from deltap.mining.design import canonical_order, trial_seed
from deltap.mining.pool import Pool
from deltap.mining.trials import TrialLog, TrialRecord
from deltap.outcomes import outcome_kind
from deltap.solvers.base import ContextWindow, ReferenceTokens, is_deterministic, solver_id

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Corpus, Document
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver, SolveRequest

__all__ = [
    "CallTally",
    "TrialRunner",
    "call_tokens",
    "fit_context",
    "is_cached",
    "is_overflow",
    "logged_calls",
    "request_from_case",
]


class TrialRunner:
    """Runs trials of one case through the solver (and checker), logging each before it counts.

    The :class:`~deltap.mining.procedure.TrialSource` of ``mine()``. A **deterministic** solver (``solver.deterministic``:
    a greedy local model) is never asked the same prompt twice within a case: a trial whose prompt hash was already
    answered is logged with that answer (``detail`` starts with ``cached:``) and costs no call.

    The calls themselves go to ``executor`` (one :class:`~deltap.execution.base.Batch` per look); ``tally`` counts
    the calls of every case of the run (the progress display's figure) and ``stop`` ends the case between batches
    when the run is stopped.
    """

    def __init__(
        self,
        case: Case,
        pool: Pool,
        corpus: Corpus,
        solver: Solver,
        checker: Checker | None,
        log: TrialLog,
        cfg: MiningConfig,
        executor: Executor | None = None,
        tally: CallTally | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.case, self.pool, self.solver, self.checker, self.log, self.cfg = case, pool, solver, checker, log, cfg
        if executor is None:
            from deltap.execution.local import InProcessExecutor

            executor = InProcessExecutor(cfg.workers)
            executor.start(solver)
        self.executor, self.tally, self.stop = executor, tally or CallTally(), stop
        self.docs = [corpus[d] for d in pool.doc_ids]
        lengths = [len(d.text) for d in self.docs] if cfg.context_order == "length" else None
        self.order = canonical_order(pool.doc_ids, lengths)
        self.base: SolveRequest = request_from_case(case)
        self.existing: dict[tuple[str, int], TrialRecord] = {
            (r.kind, r.trial_index): r for r in log.trials(case.case_id)
        }
        self.deterministic = is_deterministic(solver)
        self.answered: dict[str, TrialRecord] = {
            r.prompt_hash: r for r in self.existing.values() if r.prompt_hash and not r.is_error and not is_cached(r)
        }
        self.calls = 0
        self.errors = 0
        self.overflows = 0  # trials whose prompt did not fit the solver's context window

    def _request(self, incl: NDArray[np.bool_], seed: int) -> SolveRequest:
        docs = tuple(self.docs[i] for i in self.order if incl[i])
        return replace(self.base, documents=docs, extra={**dict(self.base.extra), "trial_seed": seed})

    def run(self, kind: str, indices: Sequence[int], X: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Outcomes of trials ``(kind, i)`` with inclusion rows ``X`` (``nan`` for errors); see :class:`TrialSource`."""
        rows = {int(i): np.asarray(X[a], dtype=bool) for a, i in enumerate(indices)}
        recs = self.get(kind, list(rows), lambda i, s: rows[i])
        return np.array([float(r.value) if r.value is not None else np.nan for r in recs], dtype=float)

    def get(
        self, kind: str, indices: Sequence[int], inclusion: Callable[[int, int], NDArray[np.bool_]]
    ) -> list[TrialRecord]:
        """Records for ``(kind, i)``, running (and logging) the missing ones as one batch."""
        from deltap.solvers.prompts import prompt_hash, render_prompt

        missing = [i for i in indices if (kind, i) not in self.existing]
        if missing:
            seeds = [trial_seed(self.cfg.seed, self.case.case_id, i, kind) for i in missing]
            incls = [inclusion(i, s) for i, s in zip(missing, seeds, strict=True)]
            reqs = [self._request(v, s) for v, s in zip(incls, seeds, strict=True)]
            hashes = [prompt_hash(render_prompt(r)) for r in reqs]
            todo: list[int] = []  # positions that need a call
            first: dict[str, int] = {}
            for a, h in enumerate(hashes):
                if self.deterministic and (h in self.answered or h in first):
                    continue
                first.setdefault(h, a)
                todo.append(a)
            results = dict(zip(todo, self._call([reqs[a] for a in todo]), strict=True))
            for a, (i, s, v, h) in enumerate(zip(missing, seeds, incls, hashes, strict=True)):
                if a in results:
                    rec = self._record(kind, i, s, v, h, results[a])
                    if self.deterministic and rec.value is not None:
                        self.answered[h] = rec
                else:  # a deterministic solver already answered this prompt: same answer, no call
                    src = self.answered[h]
                    rec = replace(
                        src,
                        kind=kind,
                        trial_index=i,
                        seed=s,
                        latency=0.0,
                        detail=f"cached: same prompt as {src.kind} {src.trial_index}",
                    )
                rec = self.log.append_once(rec)  # written before the trial counts; a key is counted once
                self.existing[(kind, i)] = rec
        return [self.existing[(kind, i)] for i in indices]

    def _call(self, reqs: list[SolveRequest]) -> list[Any]:
        from deltap.execution.base import Batch

        if not reqs:
            return []
        if self.stop is not None and self.stop.is_set():
            from deltap.execution.concurrent import Cancelled

            raise Cancelled()
        self.calls += len(reqs)
        self.tally.add(len(reqs))
        ref = "" if outcome_kind(self.cfg.outcome).answered else (self.case.reference_answer or "")
        results = self.executor.run(Batch(self.case.case_id, self.cfg.outcome, tuple(reqs), ref))
        if len(results) != len(reqs):
            raise RuntimeError(
                f"executor returned {len(results)} results for {len(reqs)} requests of case {self.case.case_id}"
            )
        return results

    def _record(self, kind: str, i: int, seed: int, incl: NDArray[np.bool_], phash: str, res: Any) -> TrialRecord:
        solver_name = solver_id(self.solver)
        checker_id = str(getattr(self.checker, "id", "")) if self.checker is not None else ""
        incl_s = "".join("1" if b else "0" for b in incl)

        tokens_in, tokens_out = call_tokens(res)
        self.tally.add_tokens(tokens_in, tokens_out)

        def rec(
            answer: str | None, outcome: str, value: float | None, latency: float, checker: str, detail: str
        ) -> TrialRecord:
            return TrialRecord(
                self.case.case_id,
                kind,
                i,
                seed,
                incl_s,
                phash,
                answer,
                outcome,
                value,
                latency,
                solver_name,
                checker,
                detail,
                tokens_in,
                tokens_out,
            )

        if isinstance(res, Exception) and is_overflow(res):
            self.overflows += 1
            return rec(None, "overflow", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if isinstance(res, Exception):
            self.errors += 1
            return rec(None, "error", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if not outcome_kind(self.cfg.outcome).answered:
            lp = float(res.logprob)
            if not math.isfinite(lp):
                self.errors += 1
                return rec(None, "error", None, float(res.latency), "", f"non-finite logprob {lp}")
            return rec(None, "score", lp, float(res.latency), "", f"n_tokens={res.n_tokens}")
        if self.checker is None:
            raise DeltapError(f"case {self.case.case_id!r}: the pass outcome needs a checker")
        check = self.checker.check(self.case, res.text)
        self.tally.add_reply(is_unreadable(check.detail))
        value = check.value
        if value is None:
            self.errors += 1
        return rec(res.text, check.outcome, value, float(res.latency), checker_id, check.detail[:500])


class CallTally:
    """Solver calls made by this process over every case, and the tokens they took in and gave out (driver threads
    add to it at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.replies = 0  # replies judged by a checker
        self.unreadable = 0  # ... of which the checker could not read (deltap.checkers.is_unreadable)

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n

    def add_reply(self, unreadable: bool) -> None:
        with self._lock:
            self.replies += 1
            self.unreadable += int(unreadable)

    def add_tokens(self, tokens_in: int | None, tokens_out: int | None) -> None:
        with self._lock:
            self.tokens_in += tokens_in or 0
            self.tokens_out += tokens_out or 0


def call_tokens(res: Any) -> tuple[int | None, int | None]:
    """``(prompt tokens, completion tokens)`` of one call's result as its solver counted them (``None``: not counted;
    an error: no tokens known). A score generates nothing: 0 completion tokens."""
    from deltap.solvers.base import Answer, Score

    if isinstance(res, Answer):
        usage = dict(res.usage)
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return (int(pt) if pt is not None else None, int(ct) if ct is not None else None)
    if isinstance(res, Score):
        return (int(res.prompt_tokens) if res.prompt_tokens is not None else None, 0)
    return None, None


_OVERFLOW = re.compile(
    r"(context|n_ctx|token limit).*(exceed|too long|maximum)|(exceed|too long|maximum).*(context|n_ctx)", re.I
)


def is_overflow(exc: Exception) -> bool:
    """A solver error saying the prompt does not fit the context window (llama.cpp, OpenAI-compatible servers)."""
    return bool(_OVERFLOW.search(str(exc))) or "context_length_exceeded" in str(exc)


def fit_context(
    pool: Pool, case: Case, corpus: Corpus, solver: Solver, cfg: MiningConfig
) -> tuple[Pool, dict[str, Any] | None]:
    """Drop candidates until the every-candidate prompt fits the solver's context window — once per case, before any
    trial, so no trial can overflow (every other subset's prompt is shorter).

    Needs a :class:`~deltap.solvers.base.ContextWindow` solver (it says its window and counts a request's prompt
    tokens, as the local llama.cpp solver does); others return ``(pool, None)`` and an overflow becomes the case's outcome
    (``context_overflow``) instead. Dropped first: retrieved candidates from the worst rank, then placebos, then gold
    (last first); the answer's room is kept free (``max_tokens`` of the benchmark type for ``pass``, the reference's
    tokens for ``logprob``).
    """
    if not isinstance(solver, ContextWindow) or not pool.candidates:
        return pool, None
    n_ctx, count = int(solver.n_ctx), solver.tokens
    if outcome_kind(cfg.outcome).answered:
        mt = dict(solver.max_tokens or {})
        reserve = int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    else:
        ref = case.reference_answer
        reserve = len(solver.reference_tokens(ref)) if isinstance(solver, ReferenceTokens) and ref else 0
    base = request_from_case(case)

    def size(cands: list[Any]) -> int:
        ids = [c.doc_id for c in cands]
        lengths = [len(corpus[d].text) for d in ids] if cfg.context_order == "length" else None
        docs = tuple(corpus[ids[i]] for i in canonical_order(ids, lengths))
        return len(count(replace(base, documents=docs)))

    cands = list(pool.candidates)
    order = (
        sorted((c for c in cands if c.sources == ("retrieved",)), key=lambda c: -(c.retrieval_rank or 0))
        + [c for c in reversed(cands) if c.is_placebo]
        + [c for c in reversed(cands) if "gold" in c.sources]
    )
    dropped: list[str] = []
    tokens = size(cands)
    while cands and tokens + reserve > n_ctx and order:
        gone = order.pop(0)
        cands.remove(gone)
        dropped.append(gone.doc_id)
        tokens = size(cands) if cands else 0
    info = {"window": n_ctx, "reserve": reserve, "all_candidates_tokens": tokens, "dropped": dropped}
    return Pool(pool.case_id, cands, list(pool.missing_gold), [*pool.dropped, *dropped]), info


def is_cached(rec: TrialRecord) -> bool:
    """A trial answered from a deterministic solver's earlier answer to the same prompt (no call)."""
    return rec.detail.startswith("cached:")


def logged_calls(log: TrialLog, case_id: str) -> dict[str, int]:
    """Solver calls of a case by kind (preflight, design, coalition): its logged trials minus those answered from
    the cache — the same after a resume."""
    out = {"preflight": 0, "design": 0, "coalition": 0}
    for r in log.trials(case_id):
        if not is_cached(r):
            kind = "preflight" if r.kind.startswith("preflight") else r.kind
            out[kind] = out.get(kind, 0) + 1
    return out


def request_from_case(case: Case, documents: Sequence[Document] = ()) -> SolveRequest:
    """The :class:`~deltap.solvers.base.SolveRequest` for a case and a context subset.

    Fills ``options`` for multiple choice and, for ``fix_error`` cases, ``extra["unfixed_code"]`` from the checker's
    ``unfixed_file`` (read here, once per call: callers running many trials should build one request and
    ``dataclasses.replace`` its ``documents``).

    Raises:
        DeltapError: the ``unfixed_file`` of a ``fix_error`` case cannot be read.
    """
    from deltap.solvers.base import SolveRequest

    options = case.metadata.get("options") or case.checker.params.get("options")
    extra: dict[str, Any] = {}
    if case.benchmark_type == "fix_error":
        path = case.checker.params.get("unfixed_file")
        if path:
            try:
                extra["unfixed_code"] = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise DeltapError(f"case {case.case_id!r}: cannot read unfixed_file {path}: {exc.strerror}") from None
    return SolveRequest(
        case_id=case.case_id,
        question=case.query,
        documents=tuple(documents),
        benchmark_type=case.benchmark_type,
        options=dict(options) if options else None,
        extra=extra,
    )
