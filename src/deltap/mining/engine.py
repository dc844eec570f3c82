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
                             cases by status, verdict counts, placebo calibration, spend (calls, tokens
                             in/out, solver seconds, cost; per case and in total, over every session), the tilt
                             (retrieved non-gold documents' effect spread over the placebos', :mod:`deltap.mining.tilt`),
                             the checker (replies read from a declared answer, by the grammar, unreadable;
                             :mod:`deltap.mining.readability`)

Infrastructure errors (``SolverError``, a checker's ``error`` outcome) are logged as ``error`` trials and never
counted as failures; a case whose error rate exceeds ``max_error_rate`` stops with status ``errors``.

Where the calls run is the **executor**'s business (:mod:`deltap.execution`: in this process by default, or on a
Ray cluster). This module stays the driver: it renders every request, hands one look of one case at a time to the
executor, checks and logs the results, and mines ``cases_in_flight`` cases at once (one driver thread each; the
trial log serializes their writes). Each case's decisions depend only on its own trials, so the results are the
same for any executor, worker count or arrival order.

The rooms this module ties together, in the order a run uses them: :mod:`~deltap.mining.config` (the options),
:mod:`~deltap.mining.manifest` (what a resumed run was made from), :mod:`~deltap.mining.pool`,
:mod:`~deltap.mining.runner` (one case's trials through the solver, checker and log), :mod:`~deltap.mining.procedure`
(the per-case procedure), :mod:`~deltap.mining.labels` (the dataset-wide null, BH, verdicts, placebo check and
coalitions), :mod:`~deltap.mining.outputs` (the files), :mod:`~deltap.mining.results` (what comes back).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_kind
from deltap.checkers.pytest_checker import PytestChecker
from deltap.errors import DeltapError
from deltap.mining.adaptive import StoppingRule
from deltap.mining.config import MiningConfig
from deltap.mining.design import InclusionDesign
from deltap.mining.labels import label_dataset, placebo_calibration, record_coalitions
from deltap.mining.manifest import check_writable_ids, prepare_resume, solver_model_digest
from deltap.mining.outputs import build_dataset, placebo_warning, run_summary, write_run_directory
from deltap.mining.plan import RunPlan, plan_calls, plan_vs_spent, trial_phase
from deltap.mining.pool import Pool, build_pool
from deltap.mining.procedure import case_weights, run_case
from deltap.mining.readability import protocol_cases, readability, readability_warnings
from deltap.mining.results import CaseResult, MiningResult, PlaceboCalibrationWarning, ProgressFn
from deltap.mining.runner import TrialRunner, fit_context, logged_calls
from deltap.mining.spend import log_spend
from deltap.mining.tilt import Tilt, TiltWarning, run_tilt
from deltap.mining.verdicts import VerdictPolicy
from deltap.outcomes import outcome_kind
from deltap.retrieval.base import Releasable
from deltap.run_layout import RunDir
from deltap.solvers.base import is_deterministic, solver_id
from deltap.trials.log import TrialLog
from deltap.trials.pace import MEASURE_AFTER, remember
from deltap.trials.planning import measured_pace
from deltap.trials.prices import prices_for
from deltap.trials.runner import CallTally

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.retrieval.base import Retriever
    from deltap.solvers.base import Solver
    from deltap.trials.pace import Measurement

__all__ = ["mine"]


def _serialized(progress: ProgressFn | None) -> ProgressFn | None:
    """The progress callback, called by one driver thread at a time."""
    if progress is None:
        return None
    lock = threading.Lock()

    def call(event: dict[str, Any]) -> None:
        with lock:
            progress(event)

    return call


def _default_checker(case: Case) -> Checker:
    from deltap.checkers import make_checker

    return make_checker(case.checker)


def _separate_only(cases: Sequence[Case], factory: Callable[[Case], Checker]) -> Callable[[Case], Checker]:
    """``--require-separate``: build every case's checker now and refuse the run, before any solver call, when a
    pytest checker would import the candidate into the test process; the checkers built are handed to the run."""
    made: dict[str, Checker] = {}
    for case in cases:
        if not checker_kind(case.checker.kind).sandboxed:
            continue
        try:
            checker = factory(case)
        except DeltapError:
            continue  # the run reports it as the case's reason (no usable checker)
        if isinstance(checker, PytestChecker) and not checker.separate:
            raise DeltapError(
                f"case {case.case_id!r}: --require-separate, but its pytest checker would run the candidate inside the "
                f"test process: {checker.candidate_process_label}"
            )
        made[case.case_id] = checker
    return lambda case: made.pop(case.case_id, None) or factory(case)


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

    cfg = replace(config or MiningConfig(), **options) if options else (config or MiningConfig())
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        from deltap.errors import DuplicateIdsError

        raise DuplicateIdsError("case ids", [i for i in ids if ids.count(i) > 1], "the cases given to mine()")
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        check_writable_ids(cases, corpus)
    if cfg.require_separate and outcome_kind(cfg.outcome).answered:
        checker_factory = _separate_only(cases, checker_factory or _default_checker)
    log = TrialLog(RunDir(out_path).trials if out_path is not None else ":memory:")  # locks the run directory
    started = time.time()
    solver_name = solver_id(solver)
    try:
        run_config = {
            **cfg.to_dict(),
            "null": cfg.resolved_null(),
            "solver": solver_name,
            "solver_model": solver_model_digest(solver),
        }
        log.check_config(run_config, (*MiningConfig.RESULT_KEYS, "solver", "solver_model"), legacy=MiningConfig.LEGACY)
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
    pilot_info: dict[str, Any] | None = None
    prices = prices_for(cfg.price_in, cfg.price_out, solver_name, local=solver_name.startswith("llama_cpp:"))
    try:
        # The plan before the first call (the pools drawn here are the ones the cases then mine: no double work)
        plan = _plan(cases, corpus, solver, retriever, log, cfg, prices, lanes)
        if cfg.pilot > 0 and cases:  # before any design trial; a stop closes the executor and the log below
            pilot_info = _pilot(cases, corpus, solver, factory, retriever, log, cfg, lanes)
        results = lanes.map(
            lambda item: _mine_case(item[1], item[0], corpus, solver, factory, retriever, log, cfg, rule, lanes),
            list(enumerate(cases)),
        )
        null_info = (labelled := label_dataset(results, cfg, policy))["null"]
        if cfg.coalitions:
            lanes.map(
                lambda res: _coalition_case(res, corpus, solver, factory, log, cfg, policy, lanes),
                [r for r in results if r.X is not None],
            )
        spend = _account_spend(results, log, prices)
        placebo = {**placebo_calibration(results, cfg, corpus), "null": null_info}
        tilt = _tilt(results, cfg)
        graded, ended = labelled["graded"], time.time()
        dataset = build_dataset(results, corpus, cfg, policy, solver_name, placebo, __version__, started, graded)
        run = run_summary(results, cfg, policy, solver_name, placebo, __version__, started, ended)
        run["calls_this_process"] = log.count() - calls_before_run
        run["spend"] = spend
        run["spend_this_process"] = {
            "calls": lanes.tally.value,
            "tokens_in": lanes.tally.tokens_in,
            "tokens_out": lanes.tally.tokens_out,
        }
        dataset.metadata["spend"] = {k: v for k, v in spend.items() if k not in ("by_case", "solver_seconds")}
        run["plan"] = {k: v for k, v in plan.to_dict().items() if k != "by_case"}
        run["plan_vs_spent"] = plan_vs_spent(plan, spend, ended - started, since_plan=lanes.close_pace(ended))
        run["resume"] = resumed
        if pilot_info is not None:
            run["pilot"] = pilot_info
        run["tilt"] = tilt.to_dict()
        run.update(_checker_block(log, results, cfg, solver))
        run["execution"] = {**executor.describe(), "cases_in_flight": lanes.limit}
        if out_path is not None:
            write_run_directory(out_path, dataset, run)
    finally:
        try:
            executor.close()
        finally:
            log.close()
    if placebo["warning"]:
        warnings.warn(placebo_warning(placebo, null_info), PlaceboCalibrationWarning, stacklevel=2)
    _run_warnings(run, tilt)
    return MiningResult(dataset, results, run, out_path)


def _checker_block(log: TrialLog, results: list[CaseResult], cfg: MiningConfig, solver: Solver) -> dict[str, Any]:
    """run.json's ``checker`` block (how the checker read the replies: from a declared answer, by the grammar, or
    not at all; :mod:`deltap.mining.readability`) for a run whose outcome a checker decides; ``{}`` otherwise."""
    if not outcome_kind(cfg.outcome).answered:
        return {}
    asked = protocol_cases(solver, [r.case for r in results])
    return {"checker": readability(log, [r.case.case_id for r in results], asked)}


def _run_warnings(run: dict[str, Any], tilt: Tilt) -> None:
    """The warnings of a finished run about its retrieved candidates (tilt) and its checker (unreadable replies, an
    ignored answer line)."""
    if tilt.large:
        warnings.warn(tilt.message, TiltWarning, stacklevel=3)
    for category, message in readability_warnings(run.get("checker") or {}):
        warnings.warn(message, category, stacklevel=3)


def _account_spend(results: list[CaseResult], log: TrialLog, prices: Any) -> dict[str, Any]:
    """What the run spent over every session of its log (tokens, cost, time) at ``prices``; each case's calls and
    spend go into its ``info``."""
    spend = log_spend(log, [r.case.case_id for r in results], prices)  # every session of the log, as the calls
    for res in results:  # calls = logged solver calls (the same for a resumed and an uninterrupted run)
        res.info["calls_by_kind"] = logged_calls(log, res.case.case_id)
        res.calls = sum(res.info["calls_by_kind"].values())
        # the dataset keeps what the calls were (tokens, cost); how long they took goes to run.json only
        res.info["spend"] = {k: v for k, v in spend["by_case"][res.case.case_id].items() if k != "solver_seconds"}
    return spend


def _tilt(results: list[CaseResult], cfg: MiningConfig) -> Tilt:
    """The tilt of the run's retrieved candidates against its placebos (:mod:`deltap.mining.tilt`)."""
    return run_tilt(
        (
            (c.sources, row)
            for r in results
            if r.X is not None
            for c, row in zip(r.pool.candidates, r.candidates, strict=True)
        ),
        unit=outcome_kind(cfg.outcome).unit,
        seed=cfg.seed,
    )


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
        self.tally = CallTally()
        self.stop = threading.Event()
        # Pools are drawn one at a time: retrievers (an embedded Qdrant, an embedding model) and a local solver's
        # tokenizer are not made to be called from several threads at once.
        self.prepare_lock = threading.Lock()
        self.drawn: dict[str, tuple[Pool, dict[str, Any] | None]] = {}  # pools drawn for the plan, not stored yet
        self.plan: RunPlan | None = None  # re-paced once MEASURE_AFTER of this session's calls are timed
        self.planned_at = time.time()
        self.solver: Any = None
        self._paced = threading.Lock()
        self._retimed = threading.Lock()
        self.ended: set[str] = set()  # cases whose final event was sent (for the re-timing)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        from deltap.execution.concurrent import map_cases

        return map_cases(fn, items, self.limit, self.stop)

    def report(self, event: dict[str, Any]) -> None:
        """Send ``event`` with ``calls``: the solver calls this process made so far, over every case. Once
        :data:`~deltap.trials.pace.MEASURE_AFTER` of them are timed, the plan's time is measured from them and sent
        first (``{"phase": "pace", "plan": RunPlan}``)."""
        self._measure()
        self._send(event)
        if "phase" not in event and event.get("case_id") and event.get("status") not in ("running", "preflight"):
            self.ended.add(str(event["case_id"]))  # a case's final event
            self._retime()

    def _measure(self) -> None:
        """The plan's pace from this session's first timed calls (once), kept in the user's cache for later plans."""
        if self.plan is None or len(self.tally.timer) < MEASURE_AFTER or not self._paced.acquire(blocking=False):
            return  # no plan, too few calls, or already measured (the lock stays taken)
        m = measure_run(self.tally, self.solver)
        if m is None:
            self._paced.release()  # only failed calls so far: measured later
            return
        remember(m)
        self.plan.measure(m)
        self._send({"phase": "pace", "plan": self.plan})

    def _retime(self) -> None:
        """The time again, once, at the first case's end with :data:`MEASURE_AFTER` design or coalition trials timed
        (:meth:`~deltap.mining.plan.RunPlan.retime`): what they cost, with the local model's prefix reuse in it;
        sent as ``{"phase": "pace", "plan": RunPlan}`` (its :meth:`~deltap.mining.plan.RunPlan.pace_lines`)."""
        plan = self.plan
        if plan is None or self.solver is None or len(self.ended) >= len(plan.cases):
            return  # nothing left to time
        trials = measure_run(self.tally, self.solver, lambda k: trial_phase(k) != "preflight", "of this run's trials")
        if trials is None or trials.calls < MEASURE_AFTER or not self._retimed.acquire(blocking=False):
            return
        overall = measure_run(self.tally, self.solver)
        pre = measure_run(self.tally, self.solver, lambda k: trial_phase(k) == "preflight") or overall
        if overall is None or pre is None:
            self._retimed.release()
            return
        pre = replace(pre, overhead=overall.overhead)  # the wall time outside the solver, per call, of every call
        plan.retime(time.time() - self.planned_at, self.tally.timer.snapshot(), set(self.ended),
                    replace(trials, overhead=overall.overhead), pre)  # fmt: skip
        self._send({"phase": "pace", "plan": plan})

    def close_pace(self, ended: float) -> float:
        """Keep every timed call of this session as the solver's measurement (the figure the next plan starts
        from); the wall seconds from the plan to ``ended``."""
        final = measure_run(self.tally, self.solver) if self.solver is not None else None
        if final is not None and final.calls >= MEASURE_AFTER:
            remember(final)
        return ended - self.planned_at

    def _send(self, event: dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress(
                {
                    **event,
                    "calls": self.tally.value,
                    "tokens_in": self.tally.tokens_in,
                    "tokens_out": self.tally.tokens_out,
                    "replies": self.tally.replies,
                    "unreadable": self.tally.unreadable,
                    "declared": self.tally.declared,
                }
            )


def _draw_pool(
    case: Case, corpus: Corpus, solver: Solver, retriever: Retriever | None, cfg: MiningConfig
) -> tuple[Pool, dict[str, Any] | None]:
    """A new case's pool (gold, retrieved, placebo), fitted to the solver's context window."""
    pool = build_pool(
        case, corpus, retriever, cfg.k, cfg.n_placebo, cfg.max_candidates, cfg.seed, placebo_kind=cfg.placebo_kind
    )
    return fit_context(pool, case, corpus, solver, cfg)


def _plan(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
    prices: Any,
    lanes: _Lanes,
) -> RunPlan:
    """The run's plan (:mod:`deltap.mining.plan`) from the pools the cases will mine (stored ones for a resumed case,
    new ones drawn now and kept in ``lanes.drawn`` until the case stores them) minus the calls already logged;
    sent to the progress callback as ``{"phase": "plan", "plan": RunPlan}`` before the first call. Every pool is
    drawn here, so the retriever's index is released (:class:`~deltap.retrieval.base.Releasable`) before the first
    call: another process may search it during the run."""
    pools: dict[str, list[Any]] = {}
    logged: dict[str, dict[str, int]] = {}
    for case in cases:
        stored = log.get_pool(case.case_id)
        if stored is not None:
            pool = Pool.from_dict(stored)
            logged[case.case_id] = logged_calls(log, case.case_id)
        else:
            lanes.drawn[case.case_id] = _draw_pool(case, corpus, solver, retriever, cfg)
            pool = lanes.drawn[case.case_id][0]
        pools[case.case_id] = [corpus[d] for d in pool.doc_ids]
    if isinstance(retriever, Releasable):
        retriever.release()
    limits = getattr(getattr(solver, "limiter", None), "limits", None)
    rpm = getattr(limits, "requests_per_minute", None)
    workers = int(getattr(lanes.executor, "slots", cfg.workers) or cfg.workers)
    # a resumed run: its log's latest calls; else the last measurement kept for this solver, if any
    measured = measured_pace(solver, log.recent_calls(64, solver_id(solver)))
    plan = plan_calls(
        cases, pools, cfg, solver, prices=prices, workers=workers, rpm=rpm, logged=logged, measured=measured
    )
    lanes.plan, lanes.solver = plan, solver
    lanes.report({"phase": "plan", "plan": plan})  # with calls (0 so far), as every event
    lanes.planned_at = time.time()  # the plan's time range covers the calls from here on
    return plan


def measure_run(
    tally: CallTally, solver: Solver, kinds: Callable[[str | None], bool] | None = None, origin: str = "of this run"
) -> Measurement | None:
    """This session's timed calls (``kinds``: of those trial kinds) as a :class:`~deltap.trials.pace.Measurement`
    (``None`` before any)."""
    from deltap.trials.pace import solver_threads
    from deltap.trials.planning import scales_with_tokens

    return tally.timer.measurement(solver_id(solver), solver_threads(solver), scales_with_tokens(solver), kinds, origin)


def _prepare_case(
    case: Case,
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
    drawn: dict[str, tuple[Pool, dict[str, Any] | None]] | None = None,
) -> _Prepared:
    stored = log.get_pool(case.case_id)
    if stored is not None:
        pool = Pool.from_dict(stored)
    else:
        early = (drawn or {}).pop(case.case_id, None)
        pool, context = early if early is not None else _draw_pool(case, corpus, solver, retriever, cfg)
        log.put_pool(case.case_id, {**pool.to_dict(), **({"context": context} if context else {})})
        stored = {"context": context} if context else {}
    res = CaseResult(case, pool, "skipped")
    if stored.get("context"):
        res.info["context"] = stored["context"]
    if not pool.candidates:
        res.info["reason"] = "no candidates (no gold, retrieved or placebo document)"
        return _Prepared(res)
    checker: Checker | None = None
    if outcome_kind(cfg.outcome).answered:
        try:
            checker = factory(case)
        except DeltapError as exc:
            res.info["reason"] = f"no usable checker: {exc}"
            return _Prepared(res)
        if isinstance(checker, PytestChecker):  # every label says where the candidate ran (also in the checker id)
            res.info["candidate_process"] = checker.candidate_process_label
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
        prep = _prepare_case(case, corpus, solver, factory, retriever, log, cfg, lanes.drawn)
    res = prep.res
    m = len(res.pool.candidates)
    schedule = cfg.schedule(m)

    def report(status: str, trials: int, open_: int) -> None:
        lanes.report(
            {
                "case_id": case.case_id,
                "case_index": ci,
                "cases": lanes.n_cases,
                "trials": trials,
                "budget": schedule.budget,
                "open": open_,
                "status": status,
                "in_flight": lanes.limit,
            }
        )

    if not prep.ready:
        report("skipped", 0, 0)
        return res
    runner = TrialRunner(
        case, res.pool, corpus, solver, prep.checker, log, cfg, lanes.executor, lanes.tally, lanes.stop
    )
    report("preflight", 0, m)
    design = InclusionDesign(cfg.seed, case.case_id, m, cfg.pi, cfg.design)

    def on_batch(status: str, trials: int, open_: int) -> None:
        res.calls, res.errors = runner.calls, runner.errors
        report(status, trials, open_)

    try:
        run = run_case(
            runner, design, cfg, rule, on_batch, case_weights(res.pool.candidates, cfg.stopping_gold_weight())
        )
    finally:
        lanes.executor.release(case.case_id)
    res.absorb(run)
    res.calls, res.errors = runner.calls, runner.errors
    res.wall_seconds = time.perf_counter() - t0
    return res


def _pilot(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    factory: Callable[[Case], Checker],
    retriever: Retriever | None,
    log: TrialLog,
    cfg: MiningConfig,
    lanes: _Lanes,
) -> dict[str, Any]:
    """The pilot (:mod:`deltap.mining.pilot`): the preflight trials of ``cfg.pilot`` sampled cases, run first under
    the keys the per-case procedure asks them by (so the run reuses them), then judged. Raises
    :class:`~deltap.mining.pilot.PilotStop` when the run cannot decide any relevant or harmful label (unless
    ``force``)."""
    import numpy as np

    from deltap.mining.pilot import PilotCase, PilotStop, assess_pilot, sample_cases

    by_id = {c.case_id: c for c in cases}
    picked = sample_cases(list(by_id), cfg.pilot, cfg.seed)
    before = lanes.tally.value
    sampled: list[PilotCase] = []
    for cid in picked:
        with lanes.prepare_lock:
            prep = _prepare_case(by_id[cid], corpus, solver, factory, retriever, log, cfg, lanes.drawn)
        if not prep.ready:
            continue
        runner = TrialRunner(
            prep.res.case,
            prep.res.pool,
            corpus,
            solver,
            prep.checker,
            log,
            cfg,
            lanes.executor,
            lanes.tally,
            lanes.stop,
        )
        m = len(prep.res.pool.candidates)
        n_pre = 1 if runner.deterministic else max(1, cfg.preflight)
        try:
            none = runner.run("preflight_none", range(n_pre), np.zeros((n_pre, m), dtype=bool))
            full = runner.run("preflight_all", range(n_pre), np.ones((n_pre, m), dtype=bool))
        finally:
            lanes.executor.release(cid)
        sampled.append(
            PilotCase(
                cid, tuple(float(v) for v in none if np.isfinite(v)), tuple(float(v) for v in full if np.isfinite(v))
            )
        )
        lanes.report({"phase": "pilot", "case_id": cid})
    result = assess_pilot(
        sampled,
        lanes.tally.value - before,
        cfg.outcome,
        cfg.policy().min_effect,
        cfg.budget,
        len(cases),
        is_deterministic(solver),
    )
    if result.hopeless and not cfg.force:
        raise PilotStop(result.message)
    return result.to_dict()


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
    checker = factory(res.case) if outcome_kind(cfg.outcome).answered else None
    runner = TrialRunner(res.case, res.pool, corpus, solver, checker, log, cfg, lanes.executor, lanes.tally, lanes.stop)
    try:
        record_coalitions(res, runner, cfg, policy)
    finally:
        lanes.executor.release(res.case.case_id)
    lanes.report({"phase": "coalition", "case_id": res.case.case_id})
