"""One case's trials through the solver and the checker, each logged before it counts (:class:`CaseTrials`).

A trial is: some of the case's documents, in a fixed order, in the prompt; a seed; one solver call; one outcome (the
checker's verdict for ``pass``, the reference answer's log-probability for ``logprob``). :class:`CaseTrials` knows
nothing of where the documents come from — a mining pool in its canonical order
(:class:`deltap.mining.runner.TrialRunner`) or a system's top ``k`` in rank order (:mod:`deltap.endtoend.engine`) —
nor of how trials pick their subsets: the caller gives the documents, their order in the prompt, the run seed and the
outcome, and for each trial an inclusion vector.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from deltap.checkers.base import clip_detail, is_declared, is_unreadable
from deltap.errors import DeltapError
from deltap.outcomes import outcome_kind
from deltap.solvers.base import is_deterministic, solver_id
from deltap.trials.log import TrialLog, TrialRecord
from deltap.trials.pace import CallTime, CallTimer
from deltap.trials.request import request_from_case
from deltap.trials.seeds import trial_seed
from deltap.trials.tokens import call_tokens

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Document
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver, SolveRequest

__all__ = ["CallTally", "CaseTrials", "Inclusion", "all_in", "is_cached", "is_overflow"]

#: ``(trial index, trial seed) -> inclusion vector`` over the documents (as given, not in prompt order)
Inclusion = Callable[[int, int], NDArray[np.bool_]]


class CaseTrials:
    """Runs trials of one case through the solver (and checker), logging each before it counts.

    A **deterministic** solver (``solver.deterministic``: a greedy local model) is never asked the same prompt twice
    within a case: a trial whose prompt hash was already answered is logged with that answer (``detail`` starts with
    ``cached:``) and costs no call.

    Args:
        case: The case (its question, checker spec, reference answer).
        documents: The documents a trial may show; an inclusion vector has one entry per document, in this order.
        solver: Answers (``pass``) or scores (``logprob``); only its id and traits are read here.
        checker: Judges an answer (``pass``); ``None`` for ``logprob``.
        log: The trial log (the case's logged trials are read once, here).
        outcome: ``pass`` or ``logprob``.
        seed: The run seed; trial ``(kind, i)`` gets :func:`~deltap.trials.seeds.trial_seed` ``(seed, case, i, kind)``.
        order: The order of ``documents`` in the prompt (positions; default: as given).
        executor: Where the calls go (one :class:`~deltap.execution.base.Batch` per :meth:`get`); default in-process
            with ``workers`` threads.
        workers: Threads of the default executor.
        tally: Counts the calls and tokens of every case of the run (the progress display's figures).
        stop: Ends the case between batches when set (:class:`~deltap.execution.concurrent.Cancelled`).
        answered: A prompt cache shared with other :class:`CaseTrials` of the same case (``prompt hash -> record``).
    """

    def __init__(
        self,
        case: Case,
        documents: Sequence[Document],
        solver: Solver,
        checker: Checker | None,
        log: TrialLog,
        *,
        outcome: str,
        seed: int,
        order: Sequence[int] | None = None,
        executor: Executor | None = None,
        workers: int = 1,
        tally: CallTally | None = None,
        stop: threading.Event | None = None,
        answered: dict[str, TrialRecord] | None = None,
    ) -> None:
        self.case, self.solver, self.checker, self.log = case, solver, checker, log
        self.outcome, self.seed = outcome, seed
        if executor is None:
            from deltap.execution.local import InProcessExecutor

            executor = InProcessExecutor(workers)
            executor.start(solver)
        self.executor, self.tally, self.stop = executor, tally or CallTally(), stop
        self.docs = list(documents)
        self.order = list(order) if order is not None else list(range(len(self.docs)))
        self.base: SolveRequest = request_from_case(case)
        self.existing: dict[tuple[str, int], TrialRecord] = {
            (r.kind, r.trial_index): r for r in log.trials(case.case_id)
        }
        self.deterministic = is_deterministic(solver)
        own = {
            r.prompt_hash: r for r in self.existing.values() if r.prompt_hash and not r.is_error and not is_cached(r)
        }
        if answered is not None:
            answered.update(own)
            own = answered
        self.answered: dict[str, TrialRecord] = own
        self.calls = 0
        self.errors = 0
        self.overflows = 0  # trials whose prompt did not fit the solver's context window

    def request(self, included: NDArray[np.bool_], seed: int) -> SolveRequest:
        """The solver request of a trial: the included documents in prompt order, the trial seed in ``extra``."""
        docs = tuple(self.docs[i] for i in self.order if included[i])
        return replace(self.base, documents=docs, extra={**dict(self.base.extra), "trial_seed": seed})

    def run(self, kind: str, indices: Sequence[int], X: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Outcomes of trials ``(kind, i)`` with inclusion rows ``X`` (``nan`` for errors); see
        :class:`~deltap.mining.procedure.TrialSource`."""
        rows = {int(i): np.asarray(X[a], dtype=bool) for a, i in enumerate(indices)}
        recs = self.get(kind, list(rows), lambda i, s: rows[i])
        return np.array([float(r.value) if r.value is not None else np.nan for r in recs], dtype=float)

    def get(self, kind: str, indices: Sequence[int], inclusion: Inclusion) -> list[TrialRecord]:
        """Records for ``(kind, i)``, running (and logging) the missing ones as one batch."""
        from deltap.solvers.prompts import prompt_hash, render_prompt

        missing = [i for i in indices if (kind, i) not in self.existing]
        if missing:
            seeds = [trial_seed(self.seed, self.case.case_id, i, kind) for i in missing]
            incls = [inclusion(i, s) for i, s in zip(missing, seeds, strict=True)]
            reqs = [self.request(v, s) for v, s in zip(incls, seeds, strict=True)]
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
        self.tally.timer.begin()
        ref = "" if outcome_kind(self.outcome).answered else (self.case.reference_answer or "")
        results = self.executor.run(Batch(self.case.case_id, self.outcome, tuple(reqs), ref))
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
        seconds = 0.0 if isinstance(res, Exception) else float(getattr(res, "latency", 0.0) or 0.0)
        self.tally.timer.add(CallTime(seconds, tokens_in, tokens_out, kind, self.case.case_id))  # a failure: not timed

        def rec(
            answer: str | None, outcome: str, value: float | None, latency: float, checker: str, detail: str
        ) -> TrialRecord:
            return TrialRecord(self.case.case_id, kind, i, seed, incl_s, phash, answer, outcome, value, latency,
                               solver_name, checker, detail, tokens_in, tokens_out)  # fmt: skip

        if isinstance(res, Exception) and is_overflow(res):
            self.overflows += 1
            return rec(None, "overflow", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if isinstance(res, Exception):
            self.errors += 1
            return rec(None, "error", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if not outcome_kind(self.outcome).answered:
            lp = float(res.logprob)
            if not math.isfinite(lp):
                self.errors += 1
                return rec(None, "error", None, float(res.latency), "", f"non-finite logprob {lp}")
            return rec(None, "score", lp, float(res.latency), "", f"n_tokens={res.n_tokens}")
        if self.checker is None:
            raise DeltapError(f"case {self.case.case_id!r}: the pass outcome needs a checker")
        check = self.checker.check(self.case, res.text)
        self.tally.add_reply(is_unreadable(check.detail), is_declared(check.detail))
        value = check.value
        if value is None:
            self.errors += 1
        return rec(res.text, check.outcome, value, float(res.latency), checker_id, clip_detail(check.detail, 500))


def all_in(n: int) -> Inclusion:
    """The inclusion of a trial that shows every one of ``n`` documents."""
    return lambda i, s: np.ones(n, dtype=bool)


class CallTally:
    """Solver calls made by this process over every case, and the tokens they took in and gave out (driver threads
    add to it at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.timer = CallTimer()  # each call's solver seconds and tokens, the wall clock from the first: the run's pace
        self.value = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.replies = 0  # replies judged by a checker
        self.unreadable = 0  # ... of which the checker could not read (deltap.checkers.is_unreadable)
        self.declared = 0  # ... of which it read from the reply's declared answer (deltap.checkers.is_declared)

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n

    def add_reply(self, unreadable: bool, declared: bool = False) -> None:
        with self._lock:
            self.replies += 1
            self.unreadable += int(unreadable)
            self.declared += int(declared and not unreadable)

    def add_tokens(self, tokens_in: int | None, tokens_out: int | None) -> None:
        with self._lock:
            self.tokens_in += tokens_in or 0
            self.tokens_out += tokens_out or 0


_OVERFLOW = re.compile(
    r"(context|n_ctx|token limit).*(exceed|too long|maximum)|(exceed|too long|maximum).*(context|n_ctx)", re.I
)


def is_overflow(exc: Exception) -> bool:
    """A solver error saying the prompt does not fit the context window (llama.cpp, OpenAI-compatible servers)."""
    return bool(_OVERFLOW.search(str(exc))) or "context_length_exceeded" in str(exc)


def is_cached(rec: TrialRecord) -> bool:
    """A trial answered from a deterministic solver's earlier answer to the same prompt (no call)."""
    return rec.detail.startswith("cached:")
