"""The end-to-end run: every system's top-k in the prompt, the solver asked with fresh seeds, the case's own checker.

Per case and system, the system's document list (cut at ``k``, then from the worst rank until the prompt fits the
solver's context window) goes into the prompt in rank order — the mining prompt format
(:func:`deltap.solvers.prompts.render_prompt`), as a RAG application would send it — ``repeats`` times. Each call is
a trial of the trial layer (:class:`deltap.trials.runner.CaseTrials`, the one mining runs on too): logged before it
counts in its own trial log ``RUN_DIR/endtoend/trials.sqlite`` (kind ``endtoend:<system>``, so seeds never coincide
with a mining trial's and no mining trial is reused), resumable, run by the executor (in process or Ray) with the
solver's own rate limits, and scored by the case's checker (``pass``) or as the reference answer's log-probability (``logprob``).

A deterministic solver (greedy decoding) is asked each distinct prompt of a case once: two systems that put the same
documents in the same order get the same answer, logged as ``cached:`` and not counted as a call.

Metrics and single-document trials use exactly the documents each prompt held after the fit (the ``all`` control:
every candidate that fits, not its first ``k`` ids). With ``single_doc`` (eRAG's single-document utility,
:mod:`deltap.endtoend.single`), every document any system's prompt held for a case is also asked alone (kind ``endtoend:single:<doc>``; for ``logprob`` also the no-document
prompt, kind ``endtoend:single:``), in the same log, counted in the same ceiling.

With the ``pass`` outcome the result says how the checker read the replies behind its figures — from a declared
``Answer:`` line, by the answer grammar, or not at all — as ``deltap mine``'s run.json does: the ``checker`` block of
:func:`deltap.mining.readability.readability` over this log (only the trials of this run's systems, repeats and
single-document prompts; per system under ``by_system``), with its two warnings (``UnreadableRepliesWarning``,
``AnswerLineIgnoredWarning``): a comparison of retrievers by task success means little when the checker, not the
documents, decided the outcomes.
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.endtoend.config import EndToEndConfig
from deltap.endtoend.results import EndToEndResult, summarize
from deltap.endtoend.single import SINGLE_KIND, single_doc_ceiling, single_doc_ids
from deltap.endtoend.systems import System, shown_systems
from deltap.errors import DeltapError
from deltap.mining.readability import protocol_cases, readability, readability_warnings
from deltap.outcomes import outcome_kind
from deltap.run_layout import EndToEndDir
from deltap.solvers.base import is_deterministic, solver_id
from deltap.solvers.prompts import template_digest
from deltap.trials.context import fit_window
from deltap.trials.log import TrialLog, TrialRecord
from deltap.trials.runner import CallTally, CaseTrials, all_in, is_cached

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver
    from deltap.trials.pace import CallTimer

__all__ = ["EndToEndConfig", "call_ceiling", "end_to_end", "first_trials", "fit_list"]

KIND_PREFIX = "endtoend:"


def call_ceiling(n_cases: int, n_systems: int, repeats: int, deterministic: bool) -> int:
    """At most this many solver calls: one per case, system and repeat (a deterministic solver: one repeat)."""
    return n_cases * n_systems * (1 if deterministic else repeats)


def fit_list(docs: list[str], case: Case, corpus: Corpus, solver: object, outcome: str) -> tuple[list[str], int]:
    """A system's list fitted to the solver's window (the trial layer's rule, :func:`deltap.trials.context.fit_window`:
    dropped from the worst rank); returns ``(kept, dropped)``."""
    window = fit_window(case, [corpus[d] for d in docs], solver, outcome)
    if window is None:
        return docs, 0
    return [docs[i] for i in window.kept], len(window.dropped)


def _default_checker(case: Case) -> Checker:
    from deltap.checkers import make_checker

    return make_checker(case.checker)


@dataclass
class _CaseRun:
    case_id: str
    values: dict[str, float] = field(default_factory=dict)  # system -> mean value over repeats (nan: none)
    trials: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: int = 0  # logged trials that were solver calls (the same after a resume)
    calls_now: int = 0  # calls this process made
    cached: int = 0
    single: dict[str, float] = field(default_factory=dict)  # doc -> mean value alone (single_doc; nan: none)
    single_baseline: float | None = None  # the no-document value (single_doc, logprob)
    dropped: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None
    shown: dict[str, list[str]] = field(default_factory=dict)  # system -> the documents its prompt held (after the fit)
    used: set[tuple[str, int]] = field(default_factory=set)  # (kind, trial index) of the trials behind the figures


def _check_inputs(
    cases: Sequence[Case], corpus: Corpus, systems: Sequence[System], cfg: EndToEndConfig, det: bool
) -> tuple[list[str], list[str], int, int]:
    """``(case ids, system names, ceiling, single-document ceiling)``, refusing what :func:`end_to_end` refuses
    before its first call (duplicate names or cases, a document outside the corpus, a ceiling above ``max_calls``)."""
    names = [s.name for s in systems]
    if len(set(names)) != len(names) or not names:
        raise DeltapError(f"systems need unique names, got {names}")
    reserved = [n for n in names if n.startswith("single:")]
    if reserved:
        raise DeltapError(f"system names starting with 'single:' are reserved (single-document trials): {reserved}")
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise DeltapError("duplicate case ids in the cases given to end_to_end()")
    for s in systems:
        corpus.require(
            {d for c in ids for d in s.top(c, cfg.k)},
            f"document ids of system {s.name}",
            hint="use the corpus of the run",
        )
    ceiling = call_ceiling(len(cases), len(systems), cfg.repeats, det)
    single = single_doc_ceiling(ids, systems, cfg.k, cfg.repeats, det, cfg.outcome) if cfg.single_doc else 0
    if cfg.max_calls is not None and ceiling + single > cfg.max_calls:
        raise DeltapError(
            f"the call ceiling {ceiling + single} ({len(cases)} cases × {len(systems)} systems × {1 if det else cfg.repeats}"
            + (f", + {single} single-document trials" if single else "")
            + f") exceeds --max-calls {cfg.max_calls}"
        )
    return ids, names, ceiling, single


def end_to_end(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    systems: Sequence[System],
    *,
    out: str | Path | None = None,
    config: EndToEndConfig | None = None,
    checker_factory: Callable[[Case], Checker] | None = None,
    executor: Executor | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    judgements: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
    metrics: Sequence[str] = (),
    dataset_path: str | Path | None = None,
    manifest: Mapping[str, Any] | None = None,
    timed_before: tuple[int, int] = (0, 0),
) -> EndToEndResult:
    """Which system's top-k makes the solver succeed: per-system success (or mean log-probability) with bootstrap
    intervals, paired randomization tests with Holm correction, per-case values and, when ``judgements`` are given,
    each metric's validity (:func:`deltap.endtoend.validity.metric_validity`).

    Args:
        cases: The cases (gold ids resolved against ``corpus``).
        corpus: The documents.
        solver: Any solver (``answer`` for ``pass``, ``score`` for ``logprob``).
        systems: The systems to compare (:mod:`deltap.endtoend.systems`); names must be unique.
        out: Folder of the results (``RUN_DIR/endtoend``): ``trials.sqlite`` (resumed when present),
            ``results.json``, ``per_case.csv``, ``manifest.json``. ``None``: nothing written.
        config: The options (:class:`EndToEndConfig`).
        checker_factory: ``case -> Checker`` for ``pass``; default :func:`deltap.checkers.make_checker`.
        executor: Where the calls run (default in process, ``config.workers`` threads); started and closed here.
        progress: Called after each case with ``case_id``, ``done``, ``cases``, ``calls``.
        judgements: ``{label: qrels}`` (``gold``, ``deltap``...) whose metrics are checked against success.
        metrics: Measure strings for the validity table (e.g. ``ndcg@5``); a ``signed_utility@K`` measure is used
            when the evaluation library knows it.
        dataset_path: The mined ``retrieval_dataset.yaml`` (for ``signed_utility@K``).
        manifest: Extra inputs to record in ``manifest.json`` (paths of the cases, corpus, runs).
        timed_before: ``(calls, trials)`` this process made and logged before, to time the solver
            (:func:`first_trials`): counted in ``calls_this_process`` and ``trials_this_process``.

    Raises:
        DeltapError: duplicate system names, a document no system can show (absent from the corpus), a call
            ceiling above ``max_calls``, a log written with other options, or a system whose logged prompt changed.
    """
    from deltap._version import __version__

    cfg = config or EndToEndConfig()
    det = is_deterministic(solver)
    ids, names, ceiling, single = _check_inputs(cases, corpus, systems, cfg, det)
    ceiling += single
    out_path = Path(out) if out is not None else None
    log = TrialLog(EndToEndDir(out_path).trials if out_path is not None else ":memory:")
    started = time.time()
    try:
        run_config = _run_config(cfg, solver)
        _check_config(log, run_config)
        retried = log.retire_errors()  # error trials of an earlier session are asked again (as mine does)
        before = log.count()
        if executor is None:
            from deltap.execution.local import InProcessExecutor

            executor = InProcessExecutor(cfg.workers)
        executor.start(solver)
        reps = 1 if det else cfg.repeats  # a greedy model repeats its answer: one trial says it
        try:
            ask = _Ask(corpus, solver, log, cfg, executor, reps)
            runs = _run_cases(cases, systems, ask, checker_factory or _default_checker, progress)
        finally:
            executor.close()
        made_now = log.count() - before
        checker = _checker_block(log, cases, runs, systems, solver, cfg)
    finally:
        log.close()
    values = np.array([[r.values.get(n, math.nan) for n in names] for r in runs], dtype=float)
    per_case = [{k: v for k, v in r.__dict__.items() if k not in ("shown", "used")} for r in runs]  # the trials say
    result = summarize(ids, names, values, cfg, per_case)  # what was shown
    result.checker = checker
    if cfg.single_doc:
        result.single_doc = {r.case_id: {d: _finite(v) for d, v in r.single.items()} for r in runs if not r.skipped}
        if not outcome_kind(cfg.outcome).binary:  # labels are lifts over the no-document prompt
            result.single_baseline = {r.case_id: _finite(r.single_baseline) for r in runs if not r.skipped}
    result.systems_info = [
        {"name": s.name, "kind": s.kind, "source": s.source, "lists_sha256": _digest(s, ids, cfg.k)} for s in systems
    ]
    result.run = {
        "tool": f"deltap {__version__}",
        "solver": solver_id(solver),
        "deterministic": det,
        "ceiling": ceiling,
        "single_doc_ceiling": single,
        "calls": sum(r.calls for r in runs),
        "cached": sum(r.cached for r in runs),
        "calls_this_process": sum(r.calls_now for r in runs) + timed_before[0],
        "trials_this_process": made_now + timed_before[1],
        "errors_retried": retried,
        "wall_seconds": time.time() - started,
        "execution": executor.describe(),
        "config": {**run_config},
    }
    if judgements:
        from deltap.endtoend.judged import judged_by_all, note_left_out
        from deltap.endtoend.validity import metric_validity

        judged, left_out = judged_by_all(result, judgements)  # the scoring rule of deltap evaluate
        result.validity = metric_validity(
            judged,
            shown_systems(systems, {r.case_id: r.shown for r in runs}),  # scored on what each prompt held
            judgements,
            metrics,
            dataset_path=str(dataset_path) if dataset_path else None,
            n_resamples=cfg.n_resamples,
            single_doc=result.erag_labels() if cfg.single_doc else None,
        )
        note_left_out(result.validity, left_out, judgements)
    if out_path is not None:
        result.write(out_path, {**(manifest or {}), "systems": result.systems_info, "cases": ids, "config": run_config})
    for category, message in readability_warnings(checker):
        warnings.warn(message, category, stacklevel=2)
    return result


_REMEDY = "delete RUN_DIR/endtoend to start over"


def _checker_block(
    log: TrialLog, cases: Sequence[Case], runs: list[_CaseRun], systems: Sequence[System], solver: Solver,
    cfg: EndToEndConfig
) -> dict[str, Any]:  # fmt: skip
    """``results.json``'s ``checker`` block for a run whose outcome a checker decides (``{}`` otherwise): how the
    checker read the replies of the trials behind the figures (:func:`deltap.mining.readability.readability`, the
    block of ``deltap mine``'s run.json), and under ``by_system`` each system's ``replies``, ``declared`` and
    ``unreadable`` (its prompts only; the single-document trials count in the totals)."""
    if not outcome_kind(cfg.outcome).answered:
        return {}
    used = {(r.case_id, kind, i) for r in runs for kind, i in r.used}
    ids = [r.case_id for r in runs]
    asked = protocol_cases(solver, cases)

    def of(kind: str | None) -> Callable[[TrialRecord], bool]:
        return lambda t: (t.case_id, t.kind, t.trial_index) in used and kind in (None, t.kind)

    block = readability(log, ids, asked, of(None))
    block["by_system"] = {}
    for system in systems:
        part = readability(log, ids, asked, of(KIND_PREFIX + system.name))
        block["by_system"][system.name] = {k: part[k] for k in ("replies", "declared", "unreadable")}
    return block


def _run_config(cfg: EndToEndConfig, solver: Solver) -> dict[str, Any]:
    """What the run's log records of its options (a resumed run must agree on :attr:`EndToEndConfig.RESULT_KEYS`)."""
    return {
        "outcome": cfg.outcome,
        "k": cfg.k,
        "seed": cfg.seed,
        "solver": solver_id(solver),
        "repeats": cfg.repeats,
        "prompt_template": template_digest(getattr(solver, "template", None)),
    }


def _check_config(log: TrialLog, run_config: dict[str, Any]) -> None:
    """A resumed run must agree with its log on :attr:`EndToEndConfig.RESULT_KEYS`. A log written before the
    template was recorded was made with the default template (the answer line off for every solver then), so a hosted
    run started before the line became its default is not silently resumed with it."""
    try:
        log.check_config(
            run_config, EndToEndConfig.RESULT_KEYS, legacy={"prompt_template": template_digest(None)}, remedy=_REMEDY
        )
    except DeltapError as exc:
        if "prompt_template" not in str(exc):
            raise
        raise DeltapError(
            f"{exc} (the solver's prompt template differs from the logged run's — another template, or the answer "
            "line: a hosted solver asks for it by default; resume with --solver-option answer_protocol=off or on, "
            "as the run was started)"
        ) from None


def first_trials(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    systems: Sequence[System],
    out: str | Path,
    config: EndToEndConfig | None = None,
    checker_factory: Callable[[Case], Checker] | None = None,
    calls: int = 2,
) -> CallTimer:
    """The run's own first trials, made now to time the solver before its plan is printed: the first case's systems
    in the run's order (repeat by repeat) until ``calls`` solver calls are made, logged in ``out``'s trial log under
    the keys :func:`end_to_end` asks them by — the run then reuses them (no call is made twice, nothing is billed
    twice). Returns the calls, timed (none when no case can be asked).

    Raises:
        DeltapError: what :func:`end_to_end` refuses before its first call (checked first: no call is made), or a log
            written with other options.
    """
    from deltap.execution.local import InProcessExecutor
    from deltap.trials.pace import CallTimer

    cfg = config or EndToEndConfig()
    det = is_deterministic(solver)
    _check_inputs(cases, corpus, systems, cfg, det)
    tally = CallTally()
    answered_kind = outcome_kind(cfg.outcome).answered
    case = next((c for c in cases if answered_kind or c.reference_answer), None)
    if case is None:
        return CallTimer()
    try:
        checker = (checker_factory or _default_checker)(case) if answered_kind else None
    except DeltapError:  # the run skips this case: nothing to time it with here
        return CallTimer()
    log = TrialLog(EndToEndDir(Path(out)).trials)
    executor = InProcessExecutor(1)
    try:
        _check_config(log, _run_config(cfg, solver))
        executor.start(solver)
        answered: dict[str, TrialRecord] = {}
        for system in systems:
            docs, _ = fit_list(system.top(case.case_id, cfg.k), case, corpus, solver, cfg.outcome)
            trials = CaseTrials(case, [corpus[d] for d in docs], solver, checker, log, outcome=cfg.outcome,
                                seed=cfg.seed, executor=executor, tally=tally, answered=answered)  # fmt: skip
            for i in range(1 if det else cfg.repeats):
                if tally.value >= calls:
                    return tally.timer
                trials.get(KIND_PREFIX + system.name, [i], all_in(len(docs)))
    finally:
        try:
            executor.close()
        finally:
            log.close()
    return tally.timer


@dataclass
class _Ask:
    """What every trial of the run shares: the documents, the solver, the log, the options and where calls go."""

    corpus: Corpus
    solver: Solver
    log: TrialLog
    cfg: EndToEndConfig
    executor: Executor
    reps: int  # trials per list (a greedy model repeats its answer: one trial says it)
    tally: CallTally = field(default_factory=CallTally)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fitted(self, case: Case, docs: list[str]) -> tuple[list[str], int]:
        with self.lock:  # token counting (a local model's tokenizer) one thread at a time
            return fit_list(docs, case, self.corpus, self.solver, self.cfg.outcome)

    def trials(
        self, case: Case, docs: list[str], checker: Checker | None, answered: dict[str, TrialRecord]
    ) -> CaseTrials:
        """The trials of ``docs`` in rank order (one prompt cache per case, ``answered``, shared by its lists)."""
        return CaseTrials(
            case, [self.corpus[d] for d in docs], self.solver, checker, self.log, outcome=self.cfg.outcome,
            seed=self.cfg.seed, executor=self.executor, tally=self.tally, stop=self.stop, answered=answered,
        )  # fmt: skip

    def ask(self, run: _CaseRun, trials: CaseTrials, kind: str) -> list[TrialRecord]:
        """``reps`` trials of ``kind`` showing every document, counted in ``run``."""
        recs = trials.get(kind, list(range(self.reps)), all_in(len(trials.docs)))
        run.used.update((r.kind, r.trial_index) for r in recs)
        run.calls_now += trials.calls
        cached = sum(1 for r in recs if is_cached(r))
        run.cached += cached
        run.calls += len(recs) - cached
        return recs


def _run_cases(
    cases: Sequence[Case],
    systems: Sequence[System],
    ask: _Ask,
    factory: Callable[[Case], Checker],
    progress: Callable[[dict[str, Any]], None] | None,
) -> list[_CaseRun]:
    from deltap.execution.concurrent import map_cases

    cfg, done = ask.cfg, [0]
    limit = cfg.cases_in_flight if cfg.cases_in_flight is not None else max(1, int(ask.executor.slots))

    def one(case: Case) -> _CaseRun:
        run = _CaseRun(case.case_id)
        checker: Checker | None = None
        try:
            if outcome_kind(cfg.outcome).answered:
                checker = factory(case)
            elif not case.reference_answer:
                raise DeltapError("the logprob outcome needs a reference answer")
        except DeltapError as exc:
            run.skipped = str(exc)
        answered: dict[str, TrialRecord] = {}
        for system in [] if run.skipped else systems:
            docs, dropped = ask.fitted(case, system.top(case.case_id, cfg.k))
            if dropped:
                run.dropped[system.name] = dropped
            run.shown[system.name] = docs
            trials = ask.trials(case, docs, checker, answered)
            kind = KIND_PREFIX + system.name
            _refuse_changed(trials, kind, ask.reps, system.name)
            recs = ask.ask(run, trials, kind)
            vals = [float(r.value) for r in recs if r.value is not None]
            run.values[system.name] = float(np.mean(vals)) if vals else math.nan
            run.trials[system.name] = [
                {
                    "outcome": r.outcome,
                    "value": r.value,
                    "answer": (r.answer or "")[:200],
                    "docs": docs,
                    "detail": r.detail[:200],
                }
                for r in recs
            ]
        if cfg.single_doc and not run.skipped:
            _single_docs(run, case, systems, ask, checker, answered)
        ask.executor.release(case.case_id)
        with ask.lock:
            done[0] += 1
            if progress is not None:
                tally = ask.tally  # how this process's replies were read (the mining progress line's counts)
                progress({"case_id": case.case_id, "done": done[0], "cases": len(cases), "calls": tally.value,
                          "replies": tally.replies, "declared": tally.declared, "unreadable": tally.unreadable})  # fmt: skip
        return run

    return map_cases(one, list(cases), limit, ask.stop)


def _single_docs(
    run: _CaseRun,
    case: Case,
    systems: Sequence[System],
    ask: _Ask,
    checker: Checker | None,
    answered: dict[str, TrialRecord],
) -> None:
    """eRAG's single-document trials of one case: each document of any system's top k alone (and, for ``logprob``,
    the no-document prompt), kind ``endtoend:single:<doc>`` (``endtoend:single:``)."""
    items = [
        (d, [d]) for d in single_doc_ids(shown_systems(systems, {case.case_id: run.shown}), case.case_id, ask.cfg.k)
    ]
    if not outcome_kind(ask.cfg.outcome).binary:  # the no-document prompt: the baseline of the lifts
        items.append(("", []))
    for doc, shown in items:
        docs, _ = ask.fitted(case, shown)
        if shown and not docs:  # the document alone does not fit the window: no label
            run.single[doc] = math.nan
            continue
        recs = ask.ask(run, ask.trials(case, docs, checker, answered), SINGLE_KIND + doc)
        vals = [float(r.value) for r in recs if r.value is not None]
        value = float(np.mean(vals)) if vals else math.nan
        if doc:
            run.single[doc] = value
        else:
            run.single_baseline = value


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _refuse_changed(trials: CaseTrials, kind: str, repeats: int, name: str) -> None:
    """A logged trial of this system whose prompt differs from today's: the system's list changed since."""
    from deltap.solvers.prompts import prompt_hash, render_prompt

    logged = [trials.existing[(kind, i)] for i in range(repeats) if (kind, i) in trials.existing]
    if not logged:
        return
    now = prompt_hash(render_prompt(trials.request(np.ones(len(trials.docs), dtype=bool), 0)))
    stale = [r for r in logged if r.prompt_hash and r.prompt_hash != now]
    if stale:
        raise DeltapError(
            f"system {name!r}: its documents for case {trials.case.case_id!r} differ from the logged trials' "
            "(the retriever, run or labels changed); use another --out folder or delete RUN_DIR/endtoend"
        )


def _digest(system: System, case_ids: Sequence[str], k: int) -> str:
    """SHA-256 of the system's document lists over the cases (the manifest's record of what was shown)."""
    import hashlib
    import json

    payload = json.dumps({c: system.top(c, k) for c in case_ids}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
