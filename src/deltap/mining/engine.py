"""The mining engine: ``mine(cases, corpus, solver)`` → verified dataset, trial log, qrels and run summary.

Per case (the unit of work is one ``(case, trial)``; every trial is independent given its seed):

1. **Pool** — gold + retrieved top-k + seeded placebo controls (:mod:`deltap.mining.pool`), stored in the log.
2. **Preflight** — ``preflight`` trials with no document and ``preflight`` with every candidate (one each for a
   deterministic solver); when both agree on an extreme, the first ``preflight_confirm`` design trials (random half
   subsets) must agree too. A ``pass`` case that passes all of them is ``saturated``; one that fails all of them is
   ``unsolvable``; a ``logprob`` case whose reference is already near-certain (mean log-prob ≥ log 0.95 in every
   group) is ``saturated``. Such cases are reported and skipped unless ``force``.
3. **Design trials** (randomised orthogonal blocks by default, :class:`~deltap.mining.design.InclusionDesign`) in
   batches up to the planned looks of :func:`~deltap.mining.adaptive.look_schedule`; at each look the joint
   regression is refitted and the case stops when every candidate is decided
   (:class:`~deltap.mining.adaptive.StoppingRule`) or the budget is spent.
   Steps 2-3 are :func:`deltap.mining.procedure.run_case`, the same function the simulation benchmark runs.
4. After every case: the null (zero, or the placebo null fitted from every placebo of the run,
   :mod:`deltap.mining.empirical_null`) → repeated p-values → **dataset-wide Benjamini–Hochberg** → verdicts and
   grades → placebo calibration → coalitions (interaction pairs; every minimal winning coalition verified by
   trials, :func:`deltap.mining.procedure.find_coalitions`).

A solver that declares ``deterministic = True`` (greedy decoding) is never asked the same prompt twice within a
case: repeats are logged with the earlier answer (``detail: cached: …``) and are not calls.

Run directory (``out``)::

    retrieval_dataset.yaml   verified dataset (seed schema + provenance)
    trials.sqlite            the trial log (WAL); rerunning with the same options resumes from it
    qrels/test.tsv           BEIR qrels (integer grades), qrels/provenance.json beside it
    qrels.trec               TREC qrels
    qrels.jsonl              qrels JSONL with query, reference answer, coalition and provenance
    run.json                 summary: tool version, solver, outcome, seed, budget, q, pi, times, calls,
                             cases by status, verdict counts, placebo calibration

Infrastructure errors (``SolverError``, a checker's ``error`` outcome) are logged as ``error`` trials and never
counted as failures; a case whose error rate exceeds ``max_error_rate`` stops with status ``errors``.

Where the calls run is the **executor**'s business (:mod:`deltap.execution`: in this process by default, or on a
Ray cluster). This module stays the driver: it renders every request, hands one look of one case at a time to the
executor, checks and logs the results, and mines ``cases_in_flight`` cases at once (one driver thread each; the
trial log serializes their writes). Each case's decisions depend only on its own trials, so the results are the
same for any executor, worker count or arrival order.
"""

from __future__ import annotations

import math
import re
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from deltap.errors import DeltapError
from deltap.mining.adaptive import LookSchedule, StoppingRule, look_schedule
from deltap.mining.design import CONTEXT_ORDERS, DESIGNS, InclusionDesign, canonical_order, trial_seed
from deltap.mining.empirical_null import (
    MIN_PLACEBOS,
    RECOMMENDED_PLACEBOS,
    describe_null,
    fit_placebo_null,
    leave_one_out,
    null_z,
)
from deltap.mining.estimate import benjamini_hochberg, diff_in_means, ols_hc
from deltap.mining.manifest import check_writable_ids, prepare_resume
from deltap.mining.placebo_check import placebo_check
from deltap.mining.pool import PLACEBO_KINDS, Pool, build_pool
from deltap.mining.procedure import CaseRun, TrialSource, case_weights, find_coalitions, run_case
from deltap.mining.trials import TrialLog, TrialRecord
from deltap.mining.verdicts import EMPIRICAL, VerdictPolicy, default_policy, grade, repeated_interval, verdict

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.dataset import Dataset
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.retrieval.base import Retriever
    from deltap.solvers.base import Solver, SolveRequest

__all__ = ["NULLS", "CaseResult", "MiningConfig", "MiningResult", "PlaceboCalibrationWarning", "default_null", "mine"]

Outcome = Literal["pass", "logprob"]

#: choices of :attr:`MiningConfig.null`
NULLS = ("zero", "placebo")


def default_null(outcome: str, placebos: int = 1) -> str:
    """``placebo`` for ``logprob`` (a deterministic score moves with any text), ``zero`` for ``pass`` or without
    placebo documents."""
    return "placebo" if outcome == "logprob" and placebos > 0 else "zero"


class PlaceboCalibrationWarning(UserWarning):
    """The achieved false-positive rate on placebo documents exceeds the nominal level."""


@dataclass(frozen=True)
class MiningConfig:
    """Options of a mining run (the ones marked *result* must match when resuming a run directory).

    Args:
        outcome: ``pass`` (checker verdict, 0/1) or ``logprob`` (log-probability of the reference answer). *result*
        budget: Maximum design trials per case (the final look). Default 90: with the preflight and the coalition
            checks about 94 calls per case on the simulation's S1 (``benchmarks/README.md``). *result*
        seed: Run seed. *result*
        q: Dataset-wide FDR level of Benjamini–Hochberg. *result*
        pi: Inclusion probability of each candidate. *result*
        min_effect: Smallest effect labelled relevant/harmful (default 0.1 for pass, 0.5 nats for logprob).
        margin: Equivalence margin of ``irrelevant`` (default = ``min_effect``).
        k: Retrieved candidates per case. *result*
        n_placebo: Placebo candidates per case. *result*
        placebo_kind: How placebos are drawn: ``random`` (uniform over the corpus) or ``similar`` (from far down the
            retriever's ranking: same topic as the candidates; see :mod:`deltap.mining.pool`). *result*
        max_candidates: Pool cap. *result*
        first_look: Trials before the first look (a case with m candidates takes interim looks only from 2m + 1 trials). *result*
        batch: Trials between looks. *result*
        preflight: Trials with no document and with all candidates (one each for a deterministic solver). *result*
        preflight_confirm: When both look saturated/unsolvable, this many design trials (random half subsets; they
            count towards the budget if the case goes on) must agree before the case is skipped: distractors can sink
            the all-candidates prompt while one document helps alone. *result*
        design: Which candidates each design trial includes: ``orthogonal`` (randomised Hadamard blocks: each trial a
            uniformly random subset, every block balanced and orthogonal — the same estimand as ``bernoulli`` with a
            tighter regression; needs ``pi`` = 0.5) or ``bernoulli`` (independent coin flips with probability
            ``pi``). See :mod:`deltap.mining.design`. *result*
        null: What a candidate's effect is tested against: ``zero`` (no effect at all) or ``placebo`` (the
            distribution of the placebo documents' effects over the run — "moves the outcome more than random text
            does"; see :mod:`deltap.mining.empirical_null`; needs at least 10 placebo estimates, else ``zero`` is used
            and the dataset says so). Default: ``placebo`` for ``logprob``, ``zero`` for ``pass``. *result*
        context_order: Order of the documents in every prompt of a case: ``length`` (longest first, ties by id — the
            fewest prompt tokens for the local solver's prefix reuse) or ``id``. Never depends on provenance. *result*
        force: Mine saturated/unsolvable cases anyway.
        coalitions: Look for interaction pairs and a minimal winning coalition.
        verify_trials: Trials that verify a coalition.
        workers: Concurrent solver calls of the default in-process executor (remote solvers); a solver that is not
            thread-safe (the local model) gets whole batches, one at a time. Not a result: any value gives the same
            trials.
        cases_in_flight: Cases mined at once (one driver thread each). Default: the executor's slots (in-process:
            ``workers``, or 1 for a solver that is not thread-safe; Ray: replicas × calls per replica). Not a result.
        max_error_rate: A case stops (status ``errors``) when more than this fraction of its calls fail (after 5).
        prior_nonnull: Prior share of candidates with an effect, used only by the stopping heuristic.
        prior_scale: Prior SD of effects for the stopping heuristic (default 0.3 pass, 1.5 nats logprob).
        futility_power: Predictive power below which an open candidate no longer keeps a case running.
        gold_weight: Prior weight of gold candidates in the dataset-wide weighted Benjamini–Hochberg step (fixed before
            any trial; every weight is rescaled so the weights of the dataset average 1, which keeps the FDR at q).
            Default 8: on the simulation's S1 it lifts recall from 0.80 to 0.91 at the same calls; when the gold
            documents are in fact nulls, recall on the relevant retrieved ones drops (0.80 → 0.71) and the FDR holds. *result*
    """

    outcome: Outcome = "pass"
    budget: int = 90
    seed: int = 0
    q: float = 0.05
    pi: float = 0.5
    min_effect: float | None = None
    margin: float | None = None
    k: int = 10
    n_placebo: int = 5
    placebo_kind: str = "random"
    max_candidates: int = 30
    first_look: int = 32
    batch: int = 16
    preflight: int = 1
    preflight_confirm: int = 12
    design: str = "orthogonal"
    null: str | None = None
    context_order: str = "length"
    force: bool = False
    coalitions: bool = True
    verify_trials: int = 6
    workers: int = 1
    cases_in_flight: int | None = None
    max_error_rate: float = 0.2
    prior_nonnull: float = 0.2
    prior_scale: float | None = None
    futility_power: float = 0.02
    gold_weight: float = 8.0

    #: what result-affecting options were, implicitly, in trial logs written before they existed
    LEGACY: ClassVar[dict[str, Any]] = {"design": "bernoulli", "null": "zero", "placebo_kind": "random", "gold_weight": 1.0}
    #: options of how the calls are made, never of what they return (left out of the dataset's metadata)
    EXECUTION_KEYS = ("workers", "cases_in_flight")
    RESULT_KEYS = ("outcome", "budget", "seed", "q", "pi", "k", "n_placebo", "placebo_kind", "max_candidates", "first_look", "batch", "preflight", "preflight_confirm", "design", "null", "context_order", "gold_weight")

    def __post_init__(self) -> None:
        if self.outcome not in ("pass", "logprob"):
            raise DeltapError(f"outcome must be 'pass' or 'logprob', got {self.outcome!r}")
        if self.budget < 4:
            raise DeltapError(f"budget must be at least 4 trials per case, got {self.budget}")
        if not 0 < self.q < 1:
            raise DeltapError(f"q must be in (0, 1), got {self.q}")
        if not 0 < self.pi < 1:
            raise DeltapError(f"pi must be in (0, 1), got {self.pi}")
        if self.null is not None and self.null not in NULLS:
            raise DeltapError(f"null must be one of {', '.join(NULLS)}, got {self.null!r}")
        if self.design not in DESIGNS:
            raise DeltapError(f"design must be one of {', '.join(DESIGNS)}, got {self.design!r}")
        if self.design == "orthogonal" and self.pi != 0.5:
            raise DeltapError(
                f"the orthogonal design includes each candidate in half of the trials (pi 0.5), got pi {self.pi}; "
                "use design='bernoulli' (--design bernoulli) for another inclusion probability"
            )
        if self.placebo_kind not in PLACEBO_KINDS:
            raise DeltapError(f"placebo_kind must be one of {', '.join(PLACEBO_KINDS)}, got {self.placebo_kind!r}")
        if self.context_order not in CONTEXT_ORDERS:
            raise DeltapError(f"context_order must be one of {', '.join(CONTEXT_ORDERS)}, got {self.context_order!r}")
        if self.workers < 1:
            raise DeltapError(f"workers must be at least 1, got {self.workers}")
        if self.cases_in_flight is not None and self.cases_in_flight < 1:
            raise DeltapError(f"cases_in_flight must be at least 1, got {self.cases_in_flight}")

    def policy(self) -> VerdictPolicy:
        return default_policy(self.outcome, self.q, self.min_effect, self.margin)

    def resolved_null(self) -> str:
        return self.null or default_null(self.outcome, self.n_placebo)

    def schedule(self, candidates: int = 0) -> LookSchedule:
        """The planned looks of a case with ``candidates`` candidates (interim looks need ``2m + 1`` trials)."""
        return look_schedule(self.budget, self.first_look, self.batch, candidates)

    def rule(self) -> StoppingRule:
        pol = self.policy()
        scale = self.prior_scale if self.prior_scale is not None else (1.5 if self.outcome == "logprob" else 0.3)
        return StoppingRule(self.q, self.prior_nonnull, scale, self.futility_power, pol.margin, significance_stops=self.resolved_null() == "zero")

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@dataclass
class CaseResult:
    """Everything the engine learnt about one case."""

    case: Case
    pool: Pool
    status: str
    calls: int = 0
    errors: int = 0
    wall_seconds: float = 0.0
    X: NDArray[np.bool_] | None = None
    y: NDArray[np.float64] | None = None
    z_path: NDArray[np.float64] | None = None
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], int]] = field(default_factory=list)
    p_rep: NDArray[np.float64] | None = None
    preflight: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    coalition: list[str] | None = None
    coalitions: list[list[str]] = field(default_factory=list)


@dataclass
class MiningResult:
    """The verified dataset, the per-case results and the run summary."""

    dataset: Dataset
    cases: list[CaseResult]
    run: dict[str, Any]
    out: Path | None = None


ProgressFn = Callable[[dict[str, Any]], None]


class _Runner:
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
        tally: _Tally | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        from deltap.prompts import request_from_case

        self.case, self.pool, self.solver, self.checker, self.log, self.cfg = case, pool, solver, checker, log, cfg
        if executor is None:
            from deltap.execution.local import InProcessExecutor

            executor = InProcessExecutor(cfg.workers)
            executor.start(solver)
        self.executor, self.tally, self.stop = executor, tally or _Tally(), stop
        self.docs = [corpus[d] for d in pool.doc_ids]
        lengths = [len(d.text) for d in self.docs] if cfg.context_order == "length" else None
        self.order = canonical_order(pool.doc_ids, lengths)
        self.base: SolveRequest = request_from_case(case)
        self.existing: dict[tuple[str, int], TrialRecord] = {(r.kind, r.trial_index): r for r in log.trials(case.case_id)}
        self.deterministic = bool(getattr(solver, "deterministic", False))
        self.answered: dict[str, TrialRecord] = {
            r.prompt_hash: r for r in self.existing.values() if r.prompt_hash and not r.is_error and not _is_cached(r)
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

    def get(self, kind: str, indices: Sequence[int], inclusion: Callable[[int, int], NDArray[np.bool_]]) -> list[TrialRecord]:
        """Records for ``(kind, i)``, running (and logging) the missing ones as one batch."""
        from deltap.prompts import prompt_hash, render_prompt

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
                    rec = replace(src, kind=kind, trial_index=i, seed=s, latency=0.0,
                                  detail=f"cached: same prompt as {src.kind} {src.trial_index}")
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
        ref = (self.case.reference_answer or "") if self.cfg.outcome == "logprob" else ""
        results = self.executor.run(Batch(self.case.case_id, self.cfg.outcome, tuple(reqs), ref))
        if len(results) != len(reqs):
            raise RuntimeError(f"executor returned {len(results)} results for {len(reqs)} requests of case {self.case.case_id}")
        return results

    def _record(self, kind: str, i: int, seed: int, incl: NDArray[np.bool_], phash: str, res: Any) -> TrialRecord:
        solver_id = str(getattr(self.solver, "id", type(self.solver).__name__))
        checker_id = str(getattr(self.checker, "id", "")) if self.checker is not None else ""
        incl_s = "".join("1" if b else "0" for b in incl)

        def rec(answer: str | None, outcome: str, value: float | None, latency: float, checker: str, detail: str) -> TrialRecord:
            return TrialRecord(self.case.case_id, kind, i, seed, incl_s, phash, answer, outcome, value, latency, solver_id, checker, detail)

        if isinstance(res, Exception) and _is_overflow(res):
            self.overflows += 1
            return rec(None, "overflow", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if isinstance(res, Exception):
            self.errors += 1
            return rec(None, "error", None, 0.0, checker_id, f"{type(res).__name__}: {res}")
        if self.cfg.outcome == "logprob":
            lp = float(res.logprob)
            if not math.isfinite(lp):
                self.errors += 1
                return rec(None, "error", None, float(res.latency), "", f"non-finite logprob {lp}")
            return rec(None, "score", lp, float(res.latency), "", f"n_tokens={res.n_tokens}")
        if self.checker is None:
            raise DeltapError(f"case {self.case.case_id!r}: the pass outcome needs a checker")
        check = self.checker.check(self.case, res.text)
        value = None if check.outcome == "error" else (1.0 if check.outcome == "pass" else 0.0)
        if check.outcome == "error":
            self.errors += 1
        return rec(res.text, check.outcome, value, float(res.latency), checker_id, check.detail[:500])


class _Tally:
    """Solver calls made by this process over every case (driver threads add to it at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.value += n


def _serialized(progress: ProgressFn | None) -> ProgressFn | None:
    """The progress callback, called by one driver thread at a time."""
    if progress is None:
        return None
    lock = threading.Lock()

    def call(event: dict[str, Any]) -> None:
        with lock:
            progress(event)

    return call


_OVERFLOW = re.compile(r"(context|n_ctx|token limit).*(exceed|too long|maximum)|(exceed|too long|maximum).*(context|n_ctx)", re.I)


def _is_overflow(exc: Exception) -> bool:
    """A solver error saying the prompt does not fit the context window (llama.cpp, OpenAI-compatible servers)."""
    return bool(_OVERFLOW.search(str(exc))) or "context_length_exceeded" in str(exc)


def _fit_context(pool: Pool, case: Case, corpus: Corpus, solver: Solver, cfg: MiningConfig) -> tuple[Pool, dict[str, Any] | None]:
    """Drop candidates until the every-candidate prompt fits the solver's context window — once per case, before any
    trial, so no trial can overflow (every other subset's prompt is shorter).

    Needs a solver that says its window (``n_ctx``) and counts a request's prompt tokens (``tokens(request)``, as the
    local llama.cpp solver does); others return ``(pool, None)`` and an overflow becomes the case's outcome
    (``context_overflow``) instead. Dropped first: retrieved candidates from the worst rank, then placebos, then gold
    (last first); the answer's room is kept free (``max_tokens`` of the benchmark type for ``pass``, the reference's
    tokens for ``logprob``).
    """
    from deltap.prompts import request_from_case

    n_ctx, count = getattr(solver, "n_ctx", None), getattr(solver, "tokens", None)
    if not isinstance(n_ctx, int) or not callable(count) or not pool.candidates:
        return pool, None
    if cfg.outcome == "pass":
        mt = dict(getattr(solver, "max_tokens", None) or {})
        reserve = int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    else:
        ref = getattr(solver, "reference_tokens", None)
        reserve = len(ref(case.reference_answer)) if callable(ref) and case.reference_answer else 0
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


def _is_cached(rec: TrialRecord) -> bool:
    """A trial answered from a deterministic solver's earlier answer to the same prompt (no call)."""
    return rec.detail.startswith("cached:")


def _logged_calls(log: TrialLog, case_id: str) -> dict[str, int]:
    """Solver calls of a case by kind (preflight, design, coalition): its logged trials minus those answered from
    the cache — the same after a resume."""
    out = {"preflight": 0, "design": 0, "coalition": 0}
    for r in log.trials(case_id):
        if not _is_cached(r):
            kind = "preflight" if r.kind.startswith("preflight") else r.kind
            out[kind] = out.get(kind, 0) + 1
    return out


def _default_checker(case: Case) -> Checker:
    from deltap.checkers import make_checker

    return make_checker(case.checker)


def mine(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    *,
    out: str | Path | None = None,
    config: MiningConfig | None = None,
    retriever: Retriever | None = None,
    checker_factory: Callable[[Case], Checker] | None = None,
    progress: ProgressFn | None = None,
    remine_changed: bool = False,
    executor: Executor | None = None,
    **options: Any,
) -> MiningResult:
    """Mine which candidate documents change each case's success, with honest statistics.

    Args:
        cases: Cases with gold ids resolved against ``corpus`` (see :func:`deltap.load_cases`).
        corpus: The documents.
        solver: Any :class:`~deltap.solvers.base.Solver` (``answer`` for ``pass``, ``score`` for ``logprob``).
        out: Run directory (see the module docstring); ``None`` keeps the trial log in memory only and writes
            nothing. An existing run directory is resumed.
        config: A :class:`MiningConfig`; keyword ``options`` override its fields (``budget=64``...).
        retriever: Source of the ``retrieved`` candidates (``None``: gold and placebo only).
        checker_factory: ``case -> Checker`` for the ``pass`` outcome; default :func:`deltap.checkers.make_checker`.
        progress: Called with a dict when a case starts (``status`` ``preflight``) and after every batch
            (``case_id``, ``case_index``, ``cases``, ``trials``, ``budget``, ``open``, ``calls``, ``status``); then
            once per coalition check (``phase`` ``coalition``, ``case_id``, ``calls``). ``calls`` counts the solver
            calls this process made so far. :class:`deltap.mining.progress.MiningProgress` draws them.
        remine_changed: When resuming, re-mine from scratch exactly the cases whose inputs changed (see
            :mod:`deltap.mining.manifest`) instead of refusing the resume.
        executor: Where the solver calls run (:mod:`deltap.execution`); default an
            :class:`~deltap.execution.local.InProcessExecutor` with ``workers`` threads. ``mine()`` starts it with
            ``solver`` and closes it when the run ends. Results do not depend on it.

    Returns:
        A :class:`MiningResult`.

    Raises:
        DeltapError: bad options, a run directory written with different result-affecting options or (without
            ``remine_changed``) for cases whose inputs changed, or one another process is mining.
    """
    from deltap._version import __version__
    from deltap.dataset import write_dataset, write_dataset_qrels

    cfg = replace(config or MiningConfig(), **options) if options else (config or MiningConfig())
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        from deltap.errors import DuplicateIdsError

        raise DuplicateIdsError("case ids", [i for i in ids if ids.count(i) > 1], "the cases given to mine()")
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        check_writable_ids(cases, corpus)
    log = TrialLog(out_path / "trials.sqlite" if out_path is not None else ":memory:")  # locks the run directory
    started = time.time()
    solver_id = getattr(solver, "id", type(solver).__name__)
    try:
        log.check_config({**cfg.to_dict(), "null": cfg.resolved_null(), "solver": solver_id}, (*MiningConfig.RESULT_KEYS, "solver"), legacy=MiningConfig.LEGACY)
        resumed = prepare_resume(log, cases, corpus, solver, retriever, cfg, remine_changed)
    except BaseException:
        log.close()
        raise
    factory = checker_factory or _default_checker
    policy = cfg.policy()
    rule = cfg.rule()
    calls_before_run = log.count()
    if executor is None:
        from deltap.execution.local import InProcessExecutor

        executor = InProcessExecutor(cfg.workers)
    try:
        executor.start(solver)
    except BaseException:
        log.close()
        raise
    lanes = _Lanes(executor, cfg, _serialized(progress), len(cases))
    try:
        results = lanes.map(
            lambda item: _mine_case(item[1], item[0], corpus, solver, factory, retriever, log, cfg, rule, lanes), list(enumerate(cases))
        )
        null_info = _dataset_verdicts(results, cfg, policy)
        if cfg.coalitions:
            lanes.map(lambda res: _coalition_case(res, corpus, solver, factory, log, cfg, policy, lanes), [r for r in results if r.X is not None])
        for res in results:  # calls = logged solver calls (the same for a resumed and an uninterrupted run)
            res.info["calls_by_kind"] = _logged_calls(log, res.case.case_id)
            res.calls = sum(res.info["calls_by_kind"].values())
        placebo = {**_placebo_calibration(results, cfg), "null": null_info}
        ended = time.time()
        dataset = _build_dataset(results, corpus, cfg, policy, solver_id, placebo, __version__, started)
        run = _run_summary(results, cfg, policy, solver_id, placebo, __version__, started, ended)
        run["calls_this_process"] = log.count() - calls_before_run
        run["resume"] = resumed
        run["execution"] = {**executor.describe(), "cases_in_flight": lanes.limit}
        if out_path is not None:
            out_path.mkdir(parents=True, exist_ok=True)
            write_dataset(dataset, out_path / "retrieval_dataset.yaml")
            prov = {k: dataset.metadata[k] for k in ("tool", "tool_version", "solver", "outcome", "seed", "q", "budget", "pi", "min_effect", "grade_mapping")}
            write_dataset_qrels(dataset, out_path, prov)
            import json

            from deltap._io import write_text_atomic

            write_text_atomic(out_path / "run.json", json.dumps(run, indent=2, sort_keys=False) + "\n")
    finally:
        try:
            executor.close()
        finally:
            log.close()
    if placebo["warning"]:
        warnings.warn(
            placebo["check"]["message"]
            + "; the solver may react to any extra text, or the candidate generation is unsound"
            + (
                f"; placebo effects reach {placebo['effect_abs']['max']:.2f} {placebo['effect_abs']['unit']} "
                f"(90th percentile {placebo['effect_abs']['p90']:.2f}): a --min-effect above that would label only "
                "documents that move the outcome more than random text does"
                if "effect_abs" in placebo
                else ""
            )
            + (
                f"; the placebo null ({describe_null(null_info)}) did not absorb them: most placebos barely move "
                "the outcome and a few move it a lot (heavy-tailed text effects; with few placebos the fit cannot "
                "tell such a tail from outliers) — more placebos (--placebo) sharpen both the null and this check"
                if null_info.get("used") == "placebo"
                else ""
            ),
            PlaceboCalibrationWarning,
            stacklevel=2,
        )
    return MiningResult(dataset, results, run, out_path)


@dataclass
class _Prepared:
    """A case with its pool drawn and its checker built, ready for the per-case procedure."""

    res: CaseResult
    checker: Checker | None = None
    ready: bool = False  # False: skipped before any trial (``res.info["reason"]`` says why)


class _Lanes:
    """The cases in flight: the executor, the run's call tally, the progress callback and the stop signal."""

    def __init__(self, executor: Executor, cfg: MiningConfig, progress: ProgressFn | None, n_cases: int) -> None:
        self.executor, self.progress, self.n_cases = executor, progress, n_cases
        self.limit = cfg.cases_in_flight if cfg.cases_in_flight is not None else max(1, int(executor.slots))
        self.tally = _Tally()
        self.stop = threading.Event()
        # Pools are drawn one at a time: retrievers (an embedded Qdrant, an embedding model) and a local solver's
        # tokenizer are not made to be called from several threads at once.
        self.prepare_lock = threading.Lock()

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        from deltap.execution.concurrent import map_cases

        return map_cases(fn, items, self.limit, self.stop)

    def report(self, event: dict[str, Any]) -> None:
        """Send ``event`` with ``calls``: the solver calls this process made so far, over every case."""
        if self.progress is not None:
            self.progress({**event, "calls": self.tally.value})


def _prepare_case(
    case: Case,
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
) -> _Prepared:
    stored = log.get_pool(case.case_id)
    if stored is not None:
        pool = Pool.from_dict(stored)
    else:
        pool = build_pool(case, corpus, retriever, cfg.k, cfg.n_placebo, cfg.max_candidates, cfg.seed, placebo_kind=cfg.placebo_kind)
        pool, context = _fit_context(pool, case, corpus, solver, cfg)
        log.put_pool(case.case_id, {**pool.to_dict(), **({"context": context} if context else {})})
        stored = {"context": context} if context else {}
    res = CaseResult(case, pool, "skipped")
    if stored.get("context"):
        res.info["context"] = stored["context"]
    if not pool.candidates:
        res.info["reason"] = "no candidates (no gold, retrieved or placebo document)"
        return _Prepared(res)
    checker: Checker | None = None
    if cfg.outcome == "pass":
        try:
            checker = factory(case)
        except DeltapError as exc:
            res.info["reason"] = f"no usable checker: {exc}"
            return _Prepared(res)
    elif not case.reference_answer:
        res.info["reason"] = "the logprob outcome needs a reference answer"
        return _Prepared(res)
    return _Prepared(res, checker, True)


def _mine_case(
    case: Case,
    ci: int,
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
    rule: StoppingRule,
    lanes: _Lanes,
) -> CaseResult:
    t0 = time.perf_counter()
    with lanes.prepare_lock:
        prep = _prepare_case(case, corpus, solver, factory, retriever, log, cfg)
    res = prep.res
    m = len(res.pool.candidates)
    schedule = cfg.schedule(m)

    def report(status: str, trials: int, open_: int) -> None:
        lanes.report({"case_id": case.case_id, "case_index": ci, "cases": lanes.n_cases, "trials": trials, "budget": schedule.budget,
                      "open": open_, "status": status, "in_flight": lanes.limit})

    if not prep.ready:
        report("skipped", 0, 0)
        return res
    runner = _Runner(case, res.pool, corpus, solver, prep.checker, log, cfg, lanes.executor, lanes.tally, lanes.stop)
    report("preflight", 0, m)
    design = InclusionDesign(cfg.seed, case.case_id, m, cfg.pi, cfg.design)

    def on_batch(status: str, trials: int, open_: int) -> None:
        res.calls, res.errors = runner.calls, runner.errors
        report(status, trials, open_)

    try:
        run = run_case(runner, design, cfg, rule, on_batch, case_weights(res.pool.candidates, cfg.gold_weight))
    finally:
        lanes.executor.release(case.case_id)
    _fill(res, run)
    res.calls, res.errors = runner.calls, runner.errors
    res.wall_seconds = time.perf_counter() - t0
    return res


def _coalition_case(
    res: CaseResult,
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    log: TrialLog,
    cfg: MiningConfig,
    policy: VerdictPolicy,
    lanes: _Lanes,
) -> None:
    """The coalition checks of one mined case (after the dataset-wide verdicts)."""
    checker = factory(res.case) if cfg.outcome == "pass" else None
    runner = _Runner(res.case, res.pool, corpus, solver, checker, log, cfg, lanes.executor, lanes.tally, lanes.stop)
    try:
        _coalition(res, runner, cfg, policy)
    finally:
        lanes.executor.release(res.case.case_id)
    lanes.report({"phase": "coalition", "case_id": res.case.case_id})


def _fill(res: CaseResult, run: CaseRun) -> None:
    """Copy the per-case procedure's result into the case's :class:`CaseResult`."""
    res.status, res.preflight = run.status, run.preflight
    res.info.update(run.info)
    res.info["calls_by_kind"] = {"preflight": run.preflight_calls, "design": run.design_calls, "coalition": 0}
    if run.X is not None:
        res.X, res.y, res.z_path, res.fits, res.p_rep = run.X, run.y, run.z_path, run.fits, run.p_rep


def _placebo_null(mined: list[CaseResult], cfg: MiningConfig) -> dict[str, Any]:
    """Fit the placebo null and re-test every candidate against it (``cfg.null`` resolved to ``placebo``).

    Each pure placebo is tested against the null fitted without it, so the placebo calibration stays out of
    sample. With fewer than ``MIN_PLACEBOS`` placebo estimates the zero-null p-values are kept and the returned
    summary says why.
    """

    requested = cfg.resolved_null()
    info: dict[str, Any] = {"requested": requested, "used": "zero", "unit": "nats" if cfg.outcome == "logprob" else "probability"}
    if requested != "placebo":
        return info
    owners = [(r, j) for r in mined for j, c in enumerate(r.pool.candidates) if c.is_placebo and r.fits]
    coef = np.array([r.fits[-1][0][j] for r, j in owners], dtype=float)
    se = np.array([r.fits[-1][1][j] for r, j in owners], dtype=float)
    if coef.size < MIN_PLACEBOS:
        info["reason"] = f"{coef.size} placebo estimates in the run, {MIN_PLACEBOS} needed to fit the placebo null: tested against zero"
        info.update(too_few=True, recommended=RECOMMENDED_PLACEBOS)
        return info
    if coef.size < RECOMMENDED_PLACEBOS:
        info["reason"] = (
            f"only {coef.size} placebo estimates in the run: the placebo null's tail (what random text does at the"
            f" p-values BH uses) is poorly known below {RECOMMENDED_PLACEBOS}; its uncertainty is propagated, which costs"
            " power — use more placebos (--placebo) or more cases"
        )
    info.update(too_few=bool(coef.size < RECOMMENDED_PLACEBOS), recommended=RECOMMENDED_PLACEBOS)
    fit = fit_placebo_null(coef, se)
    own = dict(zip([(id(r), j) for r, j in owners], leave_one_out(coef, se), strict=True))
    for r in mined:
        m = len(r.pool.candidates)
        params = np.array([own.get((id(r), j), fit).params() for j in range(m)])
        r.info["_null_params"] = params  # for the verdict intervals (not written out)
        z_path = np.stack([null_z(c, e, df, *params.T) for c, e, df in r.fits], axis=-1)
        schedule = cfg.schedule(m)  # the path ends at the case's stopping look, as for the zero null
        r.p_rep = np.stack([schedule.repeated_p_value(z_path, 1), schedule.repeated_p_value(z_path, -1)])
    info.update({"used": "placebo", **fit.to_dict()})
    return info


def _prior_weights(mined: Sequence[CaseResult], gold_weight: float) -> list[NDArray[np.float64]]:
    """Prior weights of the weighted Benjamini–Hochberg step, per case: gold candidates ``gold_weight``, every other
    candidate 1, rescaled so the weights of the dataset's tested candidates average 1.

    Weighted BH rejects ``p_j ≤ w_j k q / M`` (equivalently runs BH on ``p_j / w_j``); with weights fixed before
    any trial and averaging 1 it keeps the FDR at ``q`` (Genovese, Roeder & Wasserman 2006, "False discovery
    control with p-value weighting", Biometrika 93:509-524), and it spends more of ``q`` where relevance is a
    priori likely — on the documents the benchmark names as gold. Used in the relevant family only (the harmful
    family is unweighted). Placebos keep the base weight (their labels are the run's false-positive check).
    """
    raw = [np.array([gold_weight if "gold" in c.sources else 1.0 for c in r.pool.candidates], dtype=float) for r in mined]
    total = sum(float(w.sum()) for w in raw)
    n = sum(w.size for w in raw)
    return [w * (n / total) for w in raw] if n else raw


def _dataset_verdicts(results: list[CaseResult], cfg: MiningConfig, policy: VerdictPolicy) -> dict[str, Any]:
    """Dataset-wide BH (one family per direction) over every mined candidate, then verdicts, grades, estimates.

    Returns the summary of the null the candidates were tested against.
    """
    mined = [r for r in results if r.X is not None and r.y is not None and len(r.y) and r.p_rep is not None]
    null_info = _placebo_null(mined, cfg)
    qv_sides = []
    # Weighted BH in the relevant family (p / w; all weights 1 unless gold_weight != 1); the harmful family stays
    # unweighted: there is no prior that gold documents are distractors.
    weights = _prior_weights(mined, cfg.gold_weight)
    weight_of = {id(r): w for r, w in zip(mined, weights, strict=True)}
    for side in (0, 1):
        parts = [r.p_rep[side] / (w if side == 0 else 1.0) for r, w in zip(mined, weights, strict=True)]  # type: ignore[index]
        flat = np.concatenate(parts) if mined else np.zeros(0)
        qv_sides.append(benjamini_hochberg(flat, cfg.q)[1] if flat.size else np.zeros(0))
    # BH's threshold in each direction, q·R/M: the level of the intervals the verdicts rest on
    n_tests = max(int(qv_sides[0].size), 1)
    alpha_side = [cfg.q * max(int(np.sum(qv <= cfg.q)), 1) / n_tests for qv in qv_sides]
    pos = 0
    binary = cfg.outcome == "pass"
    for r in results:
        m = len(r.pool.candidates)
        if r not in mined:
            r.candidates = [_candidate_row(r, j, None, None, None, None, "undecided", None) for j in range(m)]
            continue
        assert r.X is not None and r.y is not None and r.p_rep is not None
        reg = ols_hc(r.X, r.y)  # HC2: the reported effect and its robust interval
        dm = diff_in_means(r.X, r.y, binary=binary)
        q_rel, q_harm = qv_sides[0][pos : pos + m], qv_sides[1][pos : pos + m]
        pos += m
        schedule = cfg.schedule(m)
        params = r.info.pop("_null_params", None)
        w_r = weight_of[id(r)]
        # the relevant bound at each candidate's weighted BH level (p_j <= w_j q R / M), the harmful one unweighted
        low = np.full(m, -np.inf)
        for wv in np.unique(w_r):
            low_w, high = repeated_interval(
                r.fits, schedule.times[: len(r.fits)], schedule.critical_b(min(alpha_side[0] * float(wv), 0.5)),
                schedule.critical_b(alpha_side[1]), params,
            )
            low = np.where(w_r == wv, low_w, low)
        rows = []
        for j in range(m):
            coef = float(reg.coef[j])
            side = 0 if coef >= 0 else 1
            qv = float(q_rel[j] if side == 0 else q_harm[j])
            v = verdict(coef, float(reg.se[j]), qv, policy, (float(low[j]), float(high[j])))
            row = _candidate_row(r, j, reg, dm, float(r.p_rep[side][j]), qv, v, grade(coef, v, policy))
            if v == "irrelevant":
                z90 = 1.6448536269514722
                row["verdict_interval"] = {"low": _f(coef - z90 * reg.se[j]), "high": _f(coef + z90 * reg.se[j]), "level": 0.90,
                                           "rests_on": f"equivalence (two one-sided tests at 5%, HC2 SE) within ±{policy.margin:g}"}
            else:
                row["verdict_interval"] = {
                    "low": _f(low[j]), "high": _f(high[j]), "level": round(1 - min(alpha_side[0] * float(w_r[j]), 0.5) - alpha_side[1], 6),
                    "rests_on": f"repeated confidence interval over the looks at BH's level q·R/M ({alpha_side[0]:.3g} relevant, "
                    f"{alpha_side[1]:.3g} harmful)" + (", net of the placebo null" if null_info.get("used") == "placebo" else ""),
                }
            rows.append(row)
        r.candidates = rows
        r.info["intercept"] = float(reg.intercept)
    return null_info


def _f(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _candidate_row(r: CaseResult, j: int, reg: Any, dm: Any, pv: float | None, qv: float | None, v: str, g: int | None) -> dict[str, Any]:
    cand = r.pool.candidates[j]
    row: dict[str, Any] = {"doc_id": cand.doc_id, "sources": list(cand.sources), "verdict": v, "grade": g}
    if reg is None:
        row.update({k: None for k in ("delta_p", "ci_low", "ci_high", "p_in", "p_out", "p_value", "q_value")})
        row.update({"n_in": 0, "n_out": 0})
        return row
    z = 1.959963984540054
    row.update(
        {
            "delta_p": _f(dm.delta[j]),
            "ci_low": _f(dm.ci_low[j]),
            "ci_high": _f(dm.ci_high[j]),
            "p_in": _f(dm.p_in[j]),
            "p_out": _f(dm.p_out[j]),
            "n_in": int(dm.n_in[j]),
            "n_out": int(dm.n_out[j]),
            "p_value": pv,
            "q_value": qv,
            "regression_effect": {
                "coef": _f(reg.coef[j]),
                "se": _f(reg.se[j]),
                "ci_low": _f(reg.coef[j] - z * reg.se[j]),
                "ci_high": _f(reg.coef[j] + z * reg.se[j]),
                "p_value_fixed": _f(reg.p_value[j]),
            },
        }
    )
    return row


def _coalition(res: CaseResult, source: TrialSource, cfg: MiningConfig, policy: VerdictPolicy) -> int:
    """Interaction pairs and every verified minimal winning coalition of a mined case; returns the calls made."""
    from deltap.mining.coalitions import interaction_pairs

    assert res.X is not None and res.y is not None
    effects = [float((c.get("regression_effect") or {}).get("coef") or 0.0) for c in res.candidates]
    relevant = [j for j, c in enumerate(res.candidates) if c["verdict"] == "relevant"]
    if not relevant:
        return 0
    promising = sorted(range(len(effects)), key=lambda j: -effects[j])[:6]
    cand = sorted(set(relevant) | {j for j in promising if effects[j] >= policy.min_effect})
    pairs = [p for p in interaction_pairs(res.X, res.y, cand) if p.significant]
    res.info["interaction_pairs"] = [
        {"docs": [res.pool.candidates[p.i].doc_id, res.pool.candidates[p.j].doc_id], "effect": p.effect, "se": p.se, "p_value": p.p_value}
        for p in pairs
    ]
    before = source.calls
    coalitions, checks = find_coalitions(source, res.X, res.y, effects, relevant, res.preflight, cfg, policy, [(p.i, p.j) for p in pairs])
    ids = res.pool.doc_ids
    res.info["coalition_check"] = [{"docs": [ids[j] for j in c.pop("members")], **c} for c in checks]
    res.coalitions = [[ids[j] for j in c] for c in coalitions]
    res.coalition = res.coalitions[0] if res.coalitions else None
    made = source.calls - before
    res.info.setdefault("calls_by_kind", {})["coalition"] = made
    res.calls += made
    return made


def _placebo_calibration(results: list[CaseResult], cfg: MiningConfig) -> dict[str, Any]:
    """Placebo false-positive rate, effect sizes and the placebo check (:func:`~deltap.mining.placebo_check.placebo_check`:
    an exact binomial test against BH's reference rate ``q·R/M``, the one result every output prints)."""
    n = rel = harm = rejected = 0
    rejections = tests = 0
    effects: list[float] = []  # |regression effect| of every placebo: how much random text moves this solver
    for r in results:
        if r.X is None:
            continue
        for c, row in zip(r.pool.candidates, r.candidates, strict=True):
            if row.get("q_value") is None:
                continue
            tests += 1
            significant = float(row["q_value"]) <= cfg.q
            rejections += significant
            if c.is_placebo:
                n += 1
                rejected += significant
                rel += row["verdict"] == "relevant"
                harm += row["verdict"] == "harmful"
                coef = (row.get("regression_effect") or {}).get("coef")
                if coef is not None:
                    effects.append(abs(float(coef)))
    fpr = (rel + harm) / n if n else 0.0
    check = placebo_check(n, rejected, rejections, tests, cfg.q, labelled=rel + harm)
    out: dict[str, Any] = {
        "n": n, "labelled_relevant": rel, "labelled_harmful": harm, "fpr": fpr, "nominal": check.expected_rate,
        "p_value_above_nominal": check.p_value, "warning": check.failed, "check": check.to_dict(),
    }
    if effects:
        out["effect_abs"] = {
            "median": float(np.median(effects)),
            "p90": float(np.quantile(effects, 0.9)),
            "max": float(max(effects)),
            "unit": "nats" if cfg.outcome == "logprob" else "probability",
        }
    return out


def _base_rate(r: CaseResult) -> float | None:
    v = r.preflight.get("preflight_none")
    return float(np.mean(v)) if v else None


def _build_dataset(results: list[CaseResult], corpus: Corpus, cfg: MiningConfig, policy: VerdictPolicy, solver_id: str, placebo: dict[str, Any], version: str, started: float) -> Dataset:
    import datetime as dt

    from deltap.dataset import Dataset

    pairs = []
    for r in results:
        cands = []
        for row in r.candidates:
            doc = corpus.get(row["doc_id"])
            entry = {
                "doc_id": row["doc_id"],
                "fqn": row["doc_id"],
                "text": doc.text if doc is not None else "",
                "source": row["sources"],
                "empirical_relevance": EMPIRICAL[row["verdict"]],
                "verdict": row["verdict"],
            }
            entry.update({k: row.get(k) for k in ("delta_p", "ci_low", "ci_high", "p_in", "p_out", "n_in", "n_out", "p_value", "q_value", "grade")})
            if "regression_effect" in row:
                entry["regression_effect"] = row["regression_effect"]
            if "verdict_interval" in row:
                entry["verdict_interval"] = row["verdict_interval"]
            cands.append(entry)
        n_plac = sum(1 for c in r.pool.candidates if c.is_placebo)
        plac_fp = sum(1 for c, row in zip(r.pool.candidates, r.candidates, strict=True) if c.is_placebo and row["verdict"] in ("relevant", "harmful"))
        meta = {
            "trials": int(len(r.y)) if r.y is not None else 0,
            "base_success_rate": _base_rate(r),
            "mean_outcome": float(np.mean(r.y)) if r.y is not None and len(r.y) else None,
            "status": r.status,
            "placebo_false_positive_rate": (plac_fp / n_plac) if n_plac and r.X is not None else None,
            "seed": cfg.seed,
            "calls": r.calls,
            "errors": r.errors,
            "wall_seconds": round(r.wall_seconds, 3),
            "missing_gold": list(dict.fromkeys([*(r.case.metadata.get("gold_missing") or []), *r.pool.missing_gold])),
            "dropped_candidates": r.pool.dropped,
            "preflight": r.preflight,
            **{k: v for k, v in r.info.items() if k in ("reason", "looks", "interaction_pairs", "coalition_check", "intercept", "context", "calls_by_kind")},
        }
        pairs.append({
            "id": r.case.case_id,
            "query": r.case.query,
            "reference_answer": r.case.reference_answer,
            "candidates": cands,
            "coalition": r.coalition,
            "coalitions": r.coalitions,
            "metadata": meta,
        })
    metadata = {
        "tool": "deltap",
        "tool_version": version,
        "created": dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds"),
        "solver": solver_id,
        "outcome": cfg.outcome,
        "seed": cfg.seed,
        "q": cfg.q,
        "budget": cfg.budget,
        "pi": cfg.pi,
        "min_effect": policy.min_effect,
        "margin": policy.margin,
        "grade_mapping": policy.grade_mapping(),
        "multiple_testing": (
            "Benjamini-Hochberg over every (case, candidate) of the dataset, one family per direction (relevant: effect > 0,"
            " harmful: effect < 0), on one-sided group-sequential repeated p-values (O'Brien-Fleming shape, planned looks)"
        ),
        "null": (
            "placebo: each effect tested against the distribution of the placebo documents' effects (center, spread and"
            " any heavy tail in placebo_calibration.null; each placebo against the fit without it)"
            if placebo.get("null", {}).get("used") == "placebo"
            else "zero: each effect tested against no effect" + (f" ({placebo['null']['reason']})" if placebo.get("null", {}).get("reason") else "")
        ),
        "estimator": (
            "OLS on all inclusion indicators (linear probability model for pass); tests use the classical OLS SE with t tails,"
            " regression_effect reports the robust HC2 SE; delta_p/CI = difference in means (Newcombe hybrid score CI for"
            " pass, Welch for logprob)"
        ),
        "looks": (
            f"every {cfg.batch} trials from {cfg.first_look} to the budget {cfg.budget}, interim looks only from 2m + 1"
            " trials (m = the case's candidates); each case's own looks are in its metadata"
        ),
        "placebo_calibration": placebo,
        # how the run was executed (workers, cases in flight) is not what the dataset is: it goes to run.json only
        "config": {k: v for k, v in cfg.to_dict().items() if k not in MiningConfig.EXECUTION_KEYS},
    }
    return Dataset(metadata, pairs)


def _run_summary(results: list[CaseResult], cfg: MiningConfig, policy: VerdictPolicy, solver_id: str, placebo: dict[str, Any], version: str, started: float, ended: float) -> dict[str, Any]:
    import datetime as dt

    by_status: dict[str, int] = {}
    verdicts: dict[str, int] = {"relevant": 0, "harmful": 0, "irrelevant": 0, "undecided": 0}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
        if r.X is not None:
            for row in r.candidates:
                verdicts[row["verdict"]] += 1
    iso = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")  # noqa: E731
    return {
        "tool": "deltap",
        "tool_version": version,
        "solver": solver_id,
        "outcome": cfg.outcome,
        "seed": cfg.seed,
        "budget": cfg.budget,
        "q": cfg.q,
        "pi": cfg.pi,
        "min_effect": policy.min_effect,
        "started": iso(started),
        "ended": iso(ended),
        "wall_seconds": round(ended - started, 3),
        "calls": int(sum(r.calls for r in results)),
        "cases": len(results),
        "cases_by_status": by_status,
        "verdicts": verdicts,
        "placebo": {k: placebo[k] for k in ("n", "labelled_relevant", "labelled_harmful", "fpr", "nominal", "effect_abs", "null", "check", "warning") if k in placebo},
    }
