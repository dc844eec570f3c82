"""The end-to-end run: every system's top-k in the prompt, the solver asked with fresh seeds, the case's own checker.

Per case and system, the system's document list (cut at ``k``, then from the worst rank until the prompt fits the
solver's context window) goes into the prompt in rank order — the mining prompt format
(:func:`deltap.solvers.prompts.render_prompt`), as a RAG application would send it — ``repeats`` times. Each call is
a trial of the mining machinery (:class:`deltap.mining.runner.TrialRunner`): logged before it counts in its own trial
log ``RUN_DIR/endtoend/trials.sqlite`` (kind ``endtoend:<system>``, so seeds never coincide with a mining trial's and
no mining trial is reused), resumable, run by the executor (in process or Ray) with the solver's own rate limits,
and scored by the case's checker (``pass``) or as the reference answer's log-probability (``logprob``).

A deterministic solver (greedy decoding) is asked each distinct prompt of a case once: two systems that put the same
documents in the same order get the same answer, logged as ``cached:`` and not counted as a call.

With ``single_doc`` (eRAG's single-document utility, :mod:`deltap.endtoend.single`), every document any system puts in
its top ``k`` for a case is also asked alone (kind ``endtoend:single:<doc>``; for ``logprob`` also the no-document
prompt, kind ``endtoend:single:``), in the same log, counted in the same ceiling.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.endtoend.config import EndToEndConfig
from deltap.endtoend.results import EndToEndResult, summarize
from deltap.endtoend.single import SINGLE_KIND, single_doc_ceiling, single_doc_ids
from deltap.endtoend.systems import System
from deltap.errors import DeltapError
from deltap.mining.config import MiningConfig
from deltap.mining.pool import Candidate, Pool
from deltap.mining.runner import CallTally, TrialRunner, request_from_case
from deltap.mining.trials import TrialLog
from deltap.outcomes import outcome_kind
from deltap.run_layout import EndToEndDir
from deltap.solvers.base import ContextWindow, ReferenceTokens, is_deterministic, solver_id

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver

__all__ = ["EndToEndConfig", "call_ceiling", "end_to_end"]

KIND_PREFIX = "endtoend:"


def call_ceiling(n_cases: int, n_systems: int, repeats: int, deterministic: bool) -> int:
    """At most this many solver calls: one per case, system and repeat (a deterministic solver: one repeat)."""
    return n_cases * n_systems * (1 if deterministic else repeats)


class _SystemRunner(TrialRunner):
    """A :class:`TrialRunner` whose context is one system's list in rank order (not the mining canonical order)."""

    def __init__(self, *args: Any, answered: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order = list(range(len(self.docs)))  # rank order, as the system returned them
        answered.update(self.answered)
        self.answered = answered  # one prompt cache per case, shared by its systems


def _fit(docs: list[str], case: Case, corpus: Corpus, solver: Solver, outcome: str) -> tuple[list[str], int]:
    """Drop documents from the worst rank until the prompt fits the solver's window; returns ``(kept, dropped)``."""
    if not isinstance(solver, ContextWindow) or not docs:
        return docs, 0
    if outcome_kind(outcome).answered:
        mt = dict(solver.max_tokens or {})
        reserve = int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    else:
        ref = case.reference_answer
        reserve = len(solver.reference_tokens(ref)) if isinstance(solver, ReferenceTokens) and ref else 0
    base = request_from_case(case)
    kept = list(docs)
    while kept and len(solver.tokens(replace(base, documents=tuple(corpus[d] for d in kept)))) + reserve > int(
        solver.n_ctx
    ):
        kept.pop()
    return kept, len(docs) - len(kept)


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
        run_config = {
            "outcome": cfg.outcome,
            "k": cfg.k,
            "seed": cfg.seed,
            "solver": solver_id(solver),
            "repeats": cfg.repeats,
        }
        try:
            log.check_config(run_config, EndToEndConfig.RESULT_KEYS)
        except DeltapError as exc:
            raise DeltapError(
                str(exc).replace("choose a new --out directory", "delete RUN_DIR/endtoend to start over")
            ) from None
        retried = log.retire_errors()  # error trials of an earlier session are asked again (as mine does)
        before = log.count()
        if executor is None:
            from deltap.execution.local import InProcessExecutor

            executor = InProcessExecutor(cfg.workers)
        executor.start(solver)
        try:
            runs = _run_cases(
                cases, corpus, solver, systems, log, cfg, executor, checker_factory or _default_checker, progress
            )
        finally:
            executor.close()
        made_now = log.count() - before
    finally:
        log.close()
    values = np.array([[r.values.get(n, math.nan) for n in names] for r in runs], dtype=float)
    result = summarize(ids, names, values, cfg, [r.__dict__ for r in runs])
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
        "calls_this_process": sum(r.calls_now for r in runs),
        "trials_this_process": made_now,
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
            systems,
            judgements,
            metrics,
            dataset_path=str(dataset_path) if dataset_path else None,
            n_resamples=cfg.n_resamples,
            single_doc=result.erag_labels() if cfg.single_doc else None,
        )
        note_left_out(result.validity, left_out, judgements)
    if out_path is not None:
        result.write(out_path, {**(manifest or {}), "systems": result.systems_info, "cases": ids, "config": run_config})
    return result


def _run_cases(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    systems: Sequence[System],
    log: TrialLog,
    cfg: EndToEndConfig,
    executor: Executor,
    factory: Callable[[Case], Checker],
    progress: Callable[[dict[str, Any]], None] | None,
) -> list[_CaseRun]:
    from deltap.execution.concurrent import map_cases

    tally, stop, lock = CallTally(), threading.Event(), threading.Lock()
    mcfg = MiningConfig(outcome=cfg.outcome, seed=cfg.seed, context_order="id", workers=cfg.workers)  # type: ignore[arg-type]
    done = [0]
    reps = 1 if is_deterministic(solver) else cfg.repeats  # a greedy model repeats its answer: one trial says it
    limit = cfg.cases_in_flight if cfg.cases_in_flight is not None else max(1, int(executor.slots))

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
        answered: dict[str, Any] = {}
        for system in [] if run.skipped else systems:
            with lock:  # token counting (a local model's tokenizer) one thread at a time
                docs, dropped = _fit(system.top(case.case_id, cfg.k), case, corpus, solver, cfg.outcome)
            if dropped:
                run.dropped[system.name] = dropped
            pool = Pool(case.case_id, [Candidate(d, ("system",)) for d in docs])
            runner = _SystemRunner(
                case, pool, corpus, solver, checker, log, mcfg, executor, tally, stop, answered=answered
            )
            kind = KIND_PREFIX + system.name
            _refuse_changed(runner, kind, reps, system.name)
            recs = runner.get(kind, list(range(reps)), _all_in(len(docs)))
            run.calls_now += runner.calls
            cached = sum(1 for r in recs if r.detail.startswith("cached:"))
            run.cached += cached
            run.calls += len(recs) - cached
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
            _single_docs(run, case, corpus, solver, checker, log, mcfg, executor, tally, stop, answered, systems, cfg,
                         reps, lock)  # fmt: skip
        executor.release(case.case_id)
        with lock:
            done[0] += 1
            if progress is not None:
                progress({"case_id": case.case_id, "done": done[0], "cases": len(cases), "calls": tally.value})
        return run

    return map_cases(one, list(cases), limit, stop)


def _single_docs(run: _CaseRun, case: Case, corpus: Corpus, solver: Solver, checker: Checker | None, log: TrialLog,
                 mcfg: MiningConfig, executor: Executor, tally: CallTally, stop: threading.Event, answered: dict[str, Any],
                 systems: Sequence[System], cfg: EndToEndConfig, reps: int, lock: threading.Lock) -> None:  # fmt: skip
    """eRAG's single-document trials of one case: each document of any system's top k alone (and, for ``logprob``,
    the no-document prompt), kind ``endtoend:single:<doc>`` (``endtoend:single:``)."""
    items = [(d, [d]) for d in single_doc_ids(systems, case.case_id, cfg.k)]
    if not outcome_kind(cfg.outcome).binary:  # the no-document prompt: the baseline of the lifts
        items.append(("", []))
    for doc, shown in items:
        with lock:
            docs, _ = _fit(shown, case, corpus, solver, cfg.outcome)
        if shown and not docs:  # the document alone does not fit the window: no label
            run.single[doc] = math.nan
            continue
        pool = Pool(case.case_id, [Candidate(d, ("single",)) for d in docs])
        runner = _SystemRunner(case, pool, corpus, solver, checker, log, mcfg, executor, tally, stop, answered=answered)
        recs = runner.get(SINGLE_KIND + doc, list(range(reps)), _all_in(len(docs)))
        run.calls_now += runner.calls
        cached = sum(1 for r in recs if r.detail.startswith("cached:"))
        run.cached += cached
        run.calls += len(recs) - cached
        vals = [float(r.value) for r in recs if r.value is not None]
        value = float(np.mean(vals)) if vals else math.nan
        if doc:
            run.single[doc] = value
        else:
            run.single_baseline = value


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _refuse_changed(runner: _SystemRunner, kind: str, repeats: int, name: str) -> None:
    """A logged trial of this system whose prompt differs from today's: the system's list changed since."""
    from deltap.solvers.prompts import prompt_hash, render_prompt

    logged = [runner.existing[(kind, i)] for i in range(repeats) if (kind, i) in runner.existing]
    if not logged:
        return
    now = prompt_hash(render_prompt(runner._request(np.ones(len(runner.docs), dtype=bool), 0)))
    stale = [r for r in logged if r.prompt_hash and r.prompt_hash != now]
    if stale:
        raise DeltapError(
            f"system {name!r}: its documents for case {runner.case.case_id!r} differ from the logged trials' "
            "(the retriever, run or labels changed); use another --out folder or delete RUN_DIR/endtoend"
        )


def _all_in(n: int) -> Callable[[int, int], np.ndarray]:
    """The inclusion of every trial of a system: all of its documents."""
    return lambda i, s: np.ones(n, dtype=bool)


def _digest(system: System, case_ids: Sequence[str], k: int) -> str:
    """SHA-256 of the system's document lists over the cases (the manifest's record of what was shown)."""
    import hashlib
    import json

    payload = json.dumps({c: system.top(c, k) for c in case_ids}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
