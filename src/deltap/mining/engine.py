"""The mining engine: ``mine(cases, corpus, solver)`` → verified dataset, trial log, qrels and run summary.

Per case (the unit of work is one ``(case, trial)``; every trial is independent given its seed):

1. **Pool** — gold + retrieved top-k + seeded placebo controls (:mod:`deltap.mining.pool`), stored in the log.
2. **Preflight** — ``preflight`` trials with no document and ``preflight`` with every candidate, extended to
   ``preflight_confirm`` each when both look extreme. A ``pass`` case that passes all of both is ``saturated``; one
   that fails all of both is ``unsolvable``; a ``logprob`` case whose
   reference is already near-certain without help (mean log-prob ≥ log 0.95 in both) is ``saturated``. Such cases
   are reported and skipped unless ``force``.
3. **Design trials** (randomised orthogonal blocks by default, :class:`~deltap.mining.design.InclusionDesign`) in
   batches up to the planned looks of :func:`~deltap.mining.adaptive.look_schedule`; at each look the joint
   regression is refitted and the case stops when every candidate is decided
   (:class:`~deltap.mining.adaptive.StoppingRule`) or the budget is spent.
4. After every case: the null (zero, or the placebo null fitted from every placebo of the run,
   :mod:`deltap.mining.empirical_null`) → repeated p-values → **dataset-wide Benjamini–Hochberg** → verdicts and
   grades → placebo calibration → coalitions (interaction pairs; a minimal winning coalition verified by trials).

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
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from deltap.mining.estimate import benjamini_hochberg, diff_in_means, ols_hc, z_statistics
from deltap.mining.manifest import check_writable_ids, prepare_resume
from deltap.mining.placebo_check import placebo_check
from deltap.mining.pool import PLACEBO_KINDS, Pool, build_pool
from deltap.mining.trials import TrialLog, TrialRecord
from deltap.mining.verdicts import EMPIRICAL, VerdictPolicy, default_policy, grade, repeated_interval, verdict

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.dataset import Dataset
    from deltap.documents import Corpus
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
        budget: Maximum design trials per case (the final look). *result*
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
        preflight: Trials with no document and with all candidates. *result*
        preflight_confirm: When the preflight looks saturated/unsolvable, both are extended to this many trials
            before the case is skipped (a false skip loses every relevant document of the case). *result*
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
        workers: Concurrent solver calls (remote solvers); local batch solvers get whole batches instead.
        max_error_rate: A case stops (status ``errors``) when more than this fraction of its calls fail (after 5).
        prior_nonnull: Prior share of candidates with an effect, used only by the stopping heuristic.
        prior_scale: Prior SD of effects for the stopping heuristic (default 0.3 pass, 1.5 nats logprob).
        futility_power: Predictive power below which an open candidate no longer keeps a case running.
    """

    outcome: Outcome = "pass"
    budget: int = 128
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
    preflight: int = 2
    preflight_confirm: int = 6
    design: str = "orthogonal"
    null: str | None = None
    context_order: str = "length"
    force: bool = False
    coalitions: bool = True
    verify_trials: int = 8
    workers: int = 1
    max_error_rate: float = 0.2
    prior_nonnull: float = 0.2
    prior_scale: float | None = None
    futility_power: float = 0.02

    #: what result-affecting options were, implicitly, in trial logs written before they existed
    LEGACY: ClassVar[dict[str, Any]] = {"design": "bernoulli", "null": "zero", "placebo_kind": "random"}
    RESULT_KEYS = ("outcome", "budget", "seed", "q", "pi", "k", "n_placebo", "placebo_kind", "max_candidates", "first_look", "batch", "preflight", "preflight_confirm", "design", "null", "context_order")

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


@dataclass
class MiningResult:
    """The verified dataset, the per-case results and the run summary."""

    dataset: Dataset
    cases: list[CaseResult]
    run: dict[str, Any]
    out: Path | None = None


ProgressFn = Callable[[dict[str, Any]], None]


class _Runner:
    """Runs trials of one case through the solver (and checker), logging each before it counts."""

    def __init__(
        self,
        case: Case,
        pool: Pool,
        corpus: Corpus,
        solver: Solver,
        checker: Checker | None,
        log: TrialLog,
        cfg: MiningConfig,
    ) -> None:
        from deltap.prompts import request_from_case

        self.case, self.pool, self.solver, self.checker, self.log, self.cfg = case, pool, solver, checker, log, cfg
        self.docs = [corpus[d] for d in pool.doc_ids]
        lengths = [len(d.text) for d in self.docs] if cfg.context_order == "length" else None
        self.order = canonical_order(pool.doc_ids, lengths)
        self.base: SolveRequest = request_from_case(case)
        self.existing: dict[tuple[str, int], TrialRecord] = {(r.kind, r.trial_index): r for r in log.trials(case.case_id)}
        self.calls = 0
        self.errors = 0

    def _request(self, incl: NDArray[np.bool_], seed: int) -> SolveRequest:
        docs = tuple(self.docs[i] for i in self.order if incl[i])
        return replace(self.base, documents=docs, extra={**dict(self.base.extra), "trial_seed": seed})

    def get(self, kind: str, indices: Sequence[int], inclusion: Callable[[int, int], NDArray[np.bool_]]) -> list[TrialRecord]:
        """Records for ``(kind, i)``, running (and logging) the missing ones as one batch."""
        from deltap.prompts import prompt_hash, render_prompt

        missing = [i for i in indices if (kind, i) not in self.existing]
        if missing:
            seeds = [trial_seed(self.cfg.seed, self.case.case_id, i, kind) for i in missing]
            incls = [inclusion(i, s) for i, s in zip(missing, seeds, strict=True)]
            reqs = [self._request(v, s) for v, s in zip(incls, seeds, strict=True)]
            results = self._call(reqs)
            for i, s, v, req, res in zip(missing, seeds, incls, reqs, results, strict=True):
                rec = self._record(kind, i, s, v, prompt_hash(render_prompt(req)), res)
                self.log.append(rec)  # written before the trial counts
                self.existing[(kind, i)] = rec
        out = [self.existing[(kind, i)] for i in indices]
        return out

    def _call(self, reqs: list[SolveRequest]) -> list[Any]:
        from deltap.solvers.base import SolverError

        self.calls += len(reqs)
        if self.cfg.outcome == "logprob":
            ref = self.case.reference_answer or ""
            many = getattr(self.solver, "score_many", None)
            if callable(many) and len(reqs) > 1:
                return list(many(reqs, ref))

            def one(r: SolveRequest) -> Any:
                try:
                    return self.solver.score(r, ref)
                except SolverError as exc:
                    return exc
        else:
            many = getattr(self.solver, "answer_many", None)
            if callable(many) and len(reqs) > 1:
                return list(many(reqs))

            def one(r: SolveRequest) -> Any:
                try:
                    return self.solver.answer(r)
                except SolverError as exc:
                    return exc

        if self.cfg.workers > 1 and len(reqs) > 1:
            with ThreadPoolExecutor(max_workers=self.cfg.workers) as ex:
                return list(ex.map(one, reqs))
        return [one(r) for r in reqs]

    def _record(self, kind: str, i: int, seed: int, incl: NDArray[np.bool_], phash: str, res: Any) -> TrialRecord:
        solver_id = str(getattr(self.solver, "id", type(self.solver).__name__))
        checker_id = str(getattr(self.checker, "id", "")) if self.checker is not None else ""
        incl_s = "".join("1" if b else "0" for b in incl)

        def rec(answer: str | None, outcome: str, value: float | None, latency: float, checker: str, detail: str) -> TrialRecord:
            return TrialRecord(self.case.case_id, kind, i, seed, incl_s, phash, answer, outcome, value, latency, solver_id, checker, detail)

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


def _xy(records: Sequence[TrialRecord]) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    X = np.array([[c == "1" for c in r.inclusion] for r in records], dtype=np.bool_)
    y = np.array([float(r.value) if r.value is not None else np.nan for r in records], dtype=np.float64)
    return X, y


def _constant(vec: NDArray[np.bool_]) -> Callable[[int, int], NDArray[np.bool_]]:
    def inclusion(i: int, seed: int) -> NDArray[np.bool_]:
        return vec

    return inclusion


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

    Returns:
        A :class:`MiningResult`.

    Raises:
        DeltapError: bad options, a run directory written with different result-affecting options or (without
            ``remine_changed``) for cases whose inputs changed, or one another process is mining.
    """
    from deltap import __version__
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
    results: list[CaseResult] = []
    total_calls = 0
    calls_before_run = log.count()
    try:
        for ci, case in enumerate(cases):
            res = _mine_case(case, ci, len(cases), corpus, solver, factory, retriever, log, cfg, rule, progress, total_calls)
            total_calls += res.calls
            results.append(res)
        null_info = _dataset_verdicts(results, cfg, policy)
        if cfg.coalitions:
            for res in results:
                if res.X is not None:
                    total_calls += _coalition(res, corpus, solver, factory, log, cfg, policy)
                    if progress is not None:
                        progress({"phase": "coalition", "case_id": res.case.case_id, "calls": total_calls})
        for res in results:  # calls = logged trials (the same for a resumed and an uninterrupted run)
            res.calls = len(log.trials(res.case.case_id))
        placebo = {**_placebo_calibration(results, cfg), "null": null_info}
        ended = time.time()
        dataset = _build_dataset(results, corpus, cfg, policy, solver_id, placebo, __version__, started)
        run = _run_summary(results, cfg, policy, solver_id, placebo, __version__, started, ended)
        run["calls_this_process"] = log.count() - calls_before_run
        run["resume"] = resumed
        if out_path is not None:
            out_path.mkdir(parents=True, exist_ok=True)
            write_dataset(dataset, out_path / "retrieval_dataset.yaml")
            prov = {k: dataset.metadata[k] for k in ("tool", "tool_version", "solver", "outcome", "seed", "q", "budget", "pi", "min_effect", "grade_mapping")}
            write_dataset_qrels(dataset, out_path, prov)
            import json

            from deltap._io import write_text_atomic

            write_text_atomic(out_path / "run.json", json.dumps(run, indent=2, sort_keys=False) + "\n")
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


def _mine_case(
    case: Case,
    ci: int,
    n_cases: int,
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
    rule: StoppingRule,
    progress: ProgressFn | None,
    calls_before: int,
) -> CaseResult:
    t0 = time.perf_counter()
    stored = log.get_pool(case.case_id)
    if stored is not None:
        pool = Pool.from_dict(stored)
    else:
        pool = build_pool(case, corpus, retriever, cfg.k, cfg.n_placebo, cfg.max_candidates, cfg.seed, placebo_kind=cfg.placebo_kind)
        log.put_pool(case.case_id, pool.to_dict())
    res = CaseResult(case, pool, "skipped")
    m = len(pool.candidates)
    schedule = cfg.schedule(m)

    def report(status: str, trials: int, open_: int) -> None:
        if progress is not None:
            progress({"case_id": case.case_id, "case_index": ci, "cases": n_cases, "trials": trials, "budget": schedule.budget,
                      "open": open_, "calls": calls_before + res.calls, "status": status})

    if m == 0:
        res.info["reason"] = "no candidates (no gold, retrieved or placebo document)"
        report("skipped", 0, 0)
        return res
    checker: Checker | None = None
    if cfg.outcome == "pass":
        try:
            checker = factory(case)
        except DeltapError as exc:
            res.info["reason"] = f"no usable checker: {exc}"
            report("skipped", 0, 0)
            return res
    elif not case.reference_answer:
        res.info["reason"] = "the logprob outcome needs a reference answer"
        report("skipped", 0, 0)
        return res
    runner = _Runner(case, pool, corpus, solver, checker, log, cfg)
    report("preflight", 0, m)
    design = InclusionDesign(cfg.seed, case.case_id, m, cfg.pi, cfg.design)
    zeros = np.zeros(m, dtype=bool)
    ones = np.ones(m, dtype=bool)
    # Preflight: ``preflight`` trials with no document and with every candidate; when both look extreme (all pass or
    # all fail), extend both to ``preflight_confirm`` before calling the case saturated/unsolvable.
    pre: dict[str, list[float]] = {}
    status = None
    if cfg.preflight > 0:
        n_pre = cfg.preflight
        while True:
            for kind, vec in (("preflight_none", zeros), ("preflight_all", ones)):
                recs = runner.get(kind, range(n_pre), _constant(vec))
                pre[kind] = [float(r.value) for r in recs if r.value is not None]
            status = _preflight_status(pre, cfg.outcome)
            if status is None or n_pre >= cfg.preflight_confirm:
                break
            n_pre = cfg.preflight_confirm
    res.preflight = pre
    none_v, all_v = pre.get("preflight_none", []), pre.get("preflight_all", [])
    res.calls, res.errors = runner.calls, runner.errors
    if status is not None and not cfg.force:
        res.status = status
        res.wall_seconds = time.perf_counter() - t0
        res.info["reason"] = f"preflight: {status} (no-document {none_v}, all-candidates {all_v})"
        report(status, 0, 0)
        return res
    # Design trials, look by look.
    K = len(schedule.looks)
    z_path = np.zeros((m, K))
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], int]] = []
    valid: list[TrialRecord] = []
    next_index = 0
    stop = K - 1
    final_status = "budget_exhausted"
    reg = None
    for k, L in enumerate(schedule.looks):
        while len(valid) < L:
            need = min(L - len(valid), max(cfg.batch, 1))
            idx = list(range(next_index, next_index + need))
            recs = runner.get("design", idx, lambda i, s: design.vector(i))
            next_index += need
            valid += [r for r in recs if not r.is_error]
            res.calls, res.errors = runner.calls, runner.errors
            n_err = next_index - len(valid)
            report("running", len(valid), m)
            if n_err > 5 and n_err > cfg.max_error_rate * next_index:
                final_status = "errors"
                break
        if final_status == "errors":
            stop = k - 1  # the last completed look (-1: none)
            break
        X, y = _xy(valid[:L])
        z, reg = z_statistics(X, y)
        z_path[:, k] = z
        fits.append((np.asarray(reg.coef, dtype=float), np.asarray(reg.se, dtype=float), L - m - 1))
        if k == K - 1:
            break
        decided = rule.decided(schedule, z_path[None, :, : k + 1], reg.coef[None], reg.se[None], df=L - m - 1)[0]
        report("running", L, int((~decided).sum()))
        if decided.all():
            stop = k
            final_status = "mined"
            break
    # Estimates use exactly the trials of the last completed look, so they match the repeated p-values.
    n_used = schedule.looks[stop] if stop >= 0 else 0
    X, y = _xy(valid[:n_used]) if n_used else (np.zeros((0, m), dtype=np.bool_), np.zeros(0))
    res.X, res.y = X, y
    res.z_path = z_path[:, : max(stop, 0) + 1]
    res.fits = fits[: stop + 1]
    res.p_rep = (
        np.stack([schedule.repeated_p_value(res.z_path, 1), schedule.repeated_p_value(res.z_path, -1)])
        if len(y)
        else np.ones((2, m))
    )
    res.status = final_status
    res.calls, res.errors = runner.calls, runner.errors
    res.wall_seconds = time.perf_counter() - t0
    res.info.update({"looks": list(schedule.looks[: max(stop, 0) + 1]) if stop >= 0 else [], "trials": len(y), "design_errors": next_index - len(valid)})
    report(final_status, len(y), 0)
    return res


def _preflight_status(pre: dict[str, list[float]], outcome: str) -> str | None:
    none_v, all_v = pre.get("preflight_none", []), pre.get("preflight_all", [])
    if not none_v or not all_v:
        return None
    if outcome == "pass":
        if min(none_v) == 1.0 and min(all_v) == 1.0:
            return "saturated"
        if max(none_v) == 0.0 and max(all_v) == 0.0:
            return "unsolvable"
        return None
    if float(np.mean(none_v)) >= math.log(0.95) and float(np.mean(all_v)) >= math.log(0.95):
        return "saturated"
    return None


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


def _dataset_verdicts(results: list[CaseResult], cfg: MiningConfig, policy: VerdictPolicy) -> dict[str, Any]:
    """Dataset-wide BH (one family per direction) over every mined candidate, then verdicts, grades, estimates.

    Returns the summary of the null the candidates were tested against.
    """
    mined = [r for r in results if r.X is not None and r.y is not None and len(r.y) and r.p_rep is not None]
    null_info = _placebo_null(mined, cfg)
    qv_sides = []
    for side in (0, 1):
        flat = np.concatenate([r.p_rep[side] for r in mined]) if mined else np.zeros(0)  # type: ignore[index]
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
        low, high = repeated_interval(
            r.fits, schedule.times[: len(r.fits)], schedule.critical_b(alpha_side[0]), schedule.critical_b(alpha_side[1]),
            r.info.pop("_null_params", None),
        )
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
                    "low": _f(low[j]), "high": _f(high[j]), "level": round(1 - alpha_side[0] - alpha_side[1], 6),
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


def _coalition(res: CaseResult, corpus: Corpus, solver: Solver, factory: Callable[[Case], Checker], log: TrialLog, cfg: MiningConfig, policy: VerdictPolicy) -> int:
    from deltap.mining.coalitions import coalition_verified, interaction_pairs, minimal_coalition

    assert res.X is not None and res.y is not None
    effects = [float((c.get("regression_effect") or {}).get("coef") or 0.0) for c in res.candidates]
    relevant = [j for j, c in enumerate(res.candidates) if c["verdict"] == "relevant"]
    if not relevant:
        return 0
    promising = sorted(range(len(effects)), key=lambda j: -effects[j])[:6]
    cand = sorted(set(relevant) | {j for j in promising if effects[j] >= policy.min_effect})
    pairs = interaction_pairs(res.X, res.y, cand)
    res.info["interaction_pairs"] = [
        {"docs": [res.pool.candidates[p.i].doc_id, res.pool.candidates[p.j].doc_id], "effect": p.effect, "se": p.se, "p_value": p.p_value}
        for p in pairs
        if p.significant
    ]
    coal = minimal_coalition(effects, relevant, pairs, policy.min_effect)
    if not coal or cfg.verify_trials <= 0:
        return 0
    checker = factory(res.case) if cfg.outcome == "pass" else None
    runner = _Runner(res.case, res.pool, corpus, solver, checker, log, cfg)
    mask = np.zeros(len(res.candidates), dtype=bool)
    mask[coal] = True
    recs = runner.get("coalition", range(cfg.verify_trials), _constant(mask))
    vals = [float(r.value) for r in recs if r.value is not None]
    ok, info = coalition_verified(vals, res.preflight.get("preflight_all", []), res.preflight.get("preflight_none", []), cfg.outcome == "pass", policy.min_effect)
    res.info["coalition_check"] = {"docs": [res.pool.candidates[j].doc_id for j in coal], "verified": ok, **info}
    res.coalition = [res.pool.candidates[j].doc_id for j in coal] if ok else None
    res.calls += runner.calls
    return runner.calls


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
            **{k: v for k, v in r.info.items() if k in ("reason", "looks", "interaction_pairs", "coalition_check", "intercept")},
        }
        pairs.append({
            "id": r.case.case_id,
            "query": r.case.query,
            "reference_answer": r.case.reference_answer,
            "candidates": cands,
            "coalition": r.coalition,
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
        "config": cfg.to_dict(),
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
