"""A plan without calls for the end-to-end evaluation (``deltap endtoend ... --plan``): calls per system and in total,
tokens in and out, cost and a time range, before a single solver call.

The end-to-end run has no adaptive stopping, so its calls are known exactly: per case and system, ``repeats`` trials
(one for a deterministic solver), each with the system's documents (cut at ``k``, then fitted to the solver's window
as the run fits them) in rank order. A deterministic solver is asked each distinct prompt of a case once — two
systems that show the same documents in the same order share one call — so the plan hashes every prompt as the run
does and counts the repeats as ``cached``. A resumed run (``RUN_DIR/endtoend/trials.sqlite``) subtracts the trials
its log already holds (``error`` trials are asked again, as the run does).

Tokens, prices and time are the trial layer's, as for ``deltap mine --plan``: exact for a solver that counts its own
tokens (the local model), else an estimate labelled as such (:mod:`deltap.trials.tokens`); completion tokens at most
the solver's ``max_tokens`` for the benchmark type (read from the solver object), none for ``logprob``; seconds per
call given (``latency``) or, for the local model, from its 2-core throughput; ``workers`` calls at a time and never
faster than ``rpm`` (:mod:`deltap.trials.planning`, which also writes the cost and time lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.endtoend.config import EndToEndConfig
from deltap.outcomes import outcome_kind
from deltap.solvers.base import ReferenceTokens, is_deterministic, solver_id
from deltap.trials.planning import Pace, cost_lines, note_lines, plan_pace, time_lines
from deltap.trials.tokens import answer_ceilings, answer_tokens, token_counter

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus
    from deltap.endtoend.systems import System
    from deltap.trials.pace import Measurement
    from deltap.trials.prices import Prices
    from deltap.trials.setup import SolverSettings

__all__ = [
    "SINGLE_ROW",
    "EndToEndPlan",
    "SystemPlan",
    "calibrated_pace",
    "logged_pace",
    "plan_end_to_end",
    "plan_from_options",
    "run_plan",
]


@dataclass
class SystemPlan:
    """One system's share of the run.

    Attributes:
        name: The system.
        calls: Solver calls still to make (trials not logged and not answered by an earlier identical prompt).
        cached: Trials a deterministic solver answers from another system's identical prompt (no call).
        logged: Trials the log already holds (a resumed run).
        tokens_in: Prompt tokens of those calls.
        tokens_out: Completion tokens of those calls, at most.
        documents: Documents in its prompts, summed over the cases (after the window fit).
    """

    name: str
    calls: int = 0
    cached: int = 0
    logged: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    documents: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.name,
            "calls": self.calls,
            "cached": self.cached,
            "logged": self.logged,
            "tokens_in": self.tokens_in,
            "tokens_out_max": self.tokens_out,
            "tokens_per_call": round(self.tokens_in / self.calls, 1) if self.calls else None,
        }


@dataclass
class EndToEndPlan:
    """The end-to-end run's plan: one row per system and the totals (``to_dict`` for JSON, ``lines`` for 80 columns)."""

    solver: str
    counted: str
    cases: int
    repeats: int
    systems: list[SystemPlan]
    pace: Pace = field(default_factory=Pace)
    prices: Prices | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timed: tuple[int, int, float] = (0, 0, 0.0)  # (calls, trials, seconds) of the run's first trials, made to time it

    def calls(self) -> int:
        return sum(s.calls for s in self.systems)

    def logged(self) -> int:
        return sum(s.logged for s in self.systems)

    def tokens_in(self) -> int:
        return sum(s.tokens_in for s in self.systems)

    def tokens_out(self) -> int:
        return sum(s.tokens_out for s in self.systems)

    def cost(self) -> float | None:
        """USD of the calls at the prices (completion tokens at their ceiling), ``None`` without prices."""
        return None if self.prices is None else self.prices.cost(self.tokens_in(), self.tokens_out())

    def seconds(self) -> tuple[float, float] | None:
        """Wall seconds of the calls, fastest to slowest rate (``None``: no latency and no ``rpm``; none left: 0)."""
        if not self.calls():
            return 0.0, 0.0
        return self.pace.seconds(self.calls(), self.calls())

    def to_dict(self) -> dict[str, Any]:
        cost, secs = self.cost(), self.seconds()
        return {
            "solver": self.solver,
            "tokens_counted": self.counted,
            "cases": self.cases,
            "repeats": self.repeats,
            "calls": self.calls(),
            "calls_logged": self.logged(),
            "tokens_in": self.tokens_in(),
            "tokens_out_max": self.tokens_out(),
            "prices": self.prices.to_dict() if self.prices is not None else None,
            "cost_usd": None if cost is None else round(cost, 6),
            **self.pace.to_dict(),
            "seconds": None if secs is None else {"min": round(secs[0], 1), "max": round(secs[1], 1)},
            "skipped_cases": dict(self.skipped),
            "notes": list(self.notes),
            "by_system": [s.to_dict() for s in self.systems],
        }

    def brief(self) -> list[str]:
        """What a real run prints before its first call (each line at most 80 columns): its calls (the
        single-document ones apart; the first ones made to time the solver counted in), tokens, and time with where
        the figure comes from."""
        import textwrap

        single = next((s for s in self.systems if s.name == SINGLE_ROW), None)
        timed_calls, timed_trials, timed_s = self.timed
        parts = f" ({single.calls:,} of them single-document)" if single is not None else ""
        cached = sum(s.cached for s in self.systems)
        before = self.logged() - timed_trials
        text = (
            f"{self.calls() + timed_calls:,} call(s){parts}"
            + (f", {cached:,} answered from an identical prompt" if cached else "")
            + (f", {before:,} trial(s) already logged" if before else "")
            + f"; tokens in {self.tokens_in():,} ({self.counted.split(' ')[0]})"
        )
        if timed_calls:
            text += f"; the first {timed_calls} made now to time the solver ({timed_s:.1f} s; logged, not made again)"
        out = textwrap.wrap(text, 80, initial_indent="plan    ", subsequent_indent="        ",
                            break_on_hyphens=False, break_long_words=False)  # fmt: skip
        return out + time_lines(self.seconds(), self.pace, " left" if before else "")

    def spent_line(self, seconds: float, calls: int) -> str:
        """``time    1:42 spent on 103 call(s) (the plan: 0:20–2:48)``: a real run's time against its plan."""
        from deltap.trials.planning import clock_text

        secs = self.seconds()
        against = f" (the plan: {clock_text(secs[0])}–{clock_text(secs[1])})" if secs is not None else ""
        return f"time    {clock_text(seconds)} spent on {calls} call(s){against}"

    def lines(self) -> list[str]:
        """The plan in 80 columns: a row per system, then the totals."""
        systems = [s for s in self.systems if s.name != SINGLE_ROW]
        single = " + single documents" if len(systems) < len(self.systems) else ""
        import textwrap

        head = (
            f"plan: end to end, {self.cases} case(s) × {len(systems)} system(s) × {self.repeats} repeat(s){single}, "
            "no call made"
        )
        out = textwrap.wrap(head, 80, subsequent_indent="      ", break_on_hyphens=False) + [f"tokens {self.counted}"]
        if self.logged():
            out.append(f"resuming: {self.logged():,} trial(s) already logged; {self.calls():,} call(s) left")
        out.append(f"{'system':<20} {'calls':>7} {'cached':>7} {'tokens in':>12} {'per call':>9} {'out ≤':>9}")
        for s in self.systems:
            per = f"{s.tokens_in / s.calls:,.0f}" if s.calls else "—"
            name = s.name if len(s.name) <= 20 else s.name[:19] + "…"
            out.append(f"{name:<20} {s.calls:>7,} {s.cached:>7,} {s.tokens_in:>12,} {per:>9} {s.tokens_out:>9,}")
        out.append(f"{'total':<20} {self.calls():>7,} {sum(s.cached for s in self.systems):>7,} "
                   f"{self.tokens_in():>12,} {'':>9} {self.tokens_out():>9,}")  # fmt: skip
        cost = self.cost()
        out += cost_lines(None if cost is None else (cost, cost), self.prices)
        out += time_lines(self.seconds(), self.pace)
        if self.skipped:
            out.append(f"skipped {len(self.skipped)} case(s): {next(iter(self.skipped.values()))}")
        out += note_lines(self.notes)
        return out


def _logged(out: str | Path | None) -> set[tuple[str, str, int]]:
    """``(case_id, kind, trial_index)`` of the trials an end-to-end log holds (read only; errors are asked again)."""
    if out is None:
        return set()
    from deltap.run_layout import EndToEndDir
    from deltap.trials.log import TrialLogReader

    path = EndToEndDir(Path(out)).trials
    if not path.is_file():
        return set()
    with TrialLogReader(path) as log:
        return log.answered_keys()


@dataclass
class _CaseCounter:
    """One case's trials as the run makes them: a deterministic solver asks each distinct prompt once (``seen``: the
    case's prompt hashes, logged ones included); logged trials are not asked again."""

    case: Case
    base: Any
    logged: set[tuple[str, str, int]]
    reps: int
    deterministic: bool
    count: Any
    extra_in: int
    out_tokens: int
    seen: set[str] = field(default_factory=set)

    def add(self, row: SystemPlan, docs: Sequence[Any], kind: str) -> None:
        """``reps`` trials of ``kind`` showing ``docs`` (after the window fit), counted in ``row``."""
        from deltap.solvers.prompts import prompt_hash, render_prompt

        req = replace(self.base, documents=tuple(docs))
        h = prompt_hash(render_prompt(req))
        row.documents += len(docs)
        tokens: int | None = None
        for i in range(self.reps):
            if (self.case.case_id, kind, i) in self.logged:
                row.logged += 1
                continue
            if self.deterministic and h in self.seen:
                row.cached += 1
                continue
            self.seen.add(h)
            tokens = self.count(req) + self.extra_in if tokens is None else tokens
            row.calls += 1
            row.tokens_in += tokens
            row.tokens_out += self.out_tokens
        if self.deterministic:
            self.seen.add(h)  # a logged answer is reused by the later systems of the case too


#: the plan's row of the single-document (eRAG) trials (``--single-doc``)
SINGLE_ROW = "single docs (eRAG)"


def plan_end_to_end(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Any,
    systems: Sequence[System],
    config: EndToEndConfig | None = None,
    *,
    prices: Prices | None = None,
    latency: float | None = None,
    rpm: float | None = None,
    out: str | Path | None = None,
    measured: Measurement | None = None,
) -> EndToEndPlan:
    """Plan :func:`deltap.endtoend.end_to_end` without a call: the same prompts, fitted and hashed as the run makes
    them, counted with the solver's tokenizer (or estimated) — every call the run makes: each system's list per case
    and repeat, and with ``config.single_doc`` each document any system's prompt held, alone (and the no-document
    prompt for ``logprob``; row :data:`SINGLE_ROW`).

    Args:
        cases: The cases.
        corpus: The documents.
        solver: Counts the tokens and says its answer ceilings; never called (a
            :class:`~deltap.solvers.hosted.HostedModel` plans a hosted model without a key).
        systems: The systems.
        config: The run's options (``k``, ``repeats``, ``outcome``, ``workers``, ``single_doc``).
        prices: For the cost.
        latency: Seconds per call (``None``: ``measured``, else the local model's 2-core table, else unknown).
        rpm: The endpoint's request limit per minute.
        out: The end-to-end folder (``RUN_DIR/endtoend``): trials its log holds are not planned again.
        measured: The solver's measured pace on this machine (:mod:`deltap.trials.pace`).

    Returns:
        An :class:`EndToEndPlan`.
    """
    from deltap.endtoend.engine import KIND_PREFIX, fit_list
    from deltap.endtoend.single import SINGLE_KIND
    from deltap.trials.request import request_from_case

    cfg = config or EndToEndConfig()
    count, how = token_counter(solver)
    deterministic = is_deterministic(solver)
    reps = 1 if deterministic else cfg.repeats
    ceilings = answer_ceilings(solver)
    logged = _logged(out)
    rows = {s.name: SystemPlan(s.name) for s in systems}
    single = SystemPlan(SINGLE_ROW)
    kind = outcome_kind(cfg.outcome)
    skipped: dict[str, str] = {}
    for case in cases:
        if not kind.answered and not case.reference_answer:
            skipped[case.case_id] = f"the {kind.name} outcome needs {kind.needs}"
            continue
        extra_in, out_tokens = 0, answer_tokens(ceilings, case.benchmark_type)
        if not kind.answered:  # the reference answer's tokens are scored, in the prompt
            ref = case.reference_answer or ""
            extra_in = len(solver.reference_tokens(ref)) if isinstance(solver, ReferenceTokens) else len(ref) // 4 + 1
            out_tokens = 0
        counter = _CaseCounter(case, request_from_case(case), logged, reps, deterministic, count, extra_in, out_tokens)
        shown: dict[str, None] = {}
        for system in systems:
            docs, _ = fit_list(system.top(case.case_id, cfg.k), case, corpus, solver, cfg.outcome)
            counter.add(rows[system.name], [corpus[d] for d in docs], KIND_PREFIX + system.name)
            shown.update(dict.fromkeys(docs))
        if cfg.single_doc:  # as the engine's _single_docs: each shown document alone, then (logprob) none
            items = [(d, [d]) for d in shown] + ([] if kind.binary else [("", [])])
            for doc, alone in items:
                docs, _ = fit_list(alone, case, corpus, solver, cfg.outcome)
                if alone and not docs:  # does not fit the window alone: never asked
                    continue
                counter.add(single, [corpus[d] for d in docs], SINGLE_KIND + doc)
    plan = EndToEndPlan(solver_id(solver), how, len(cases), reps, list(rows.values()), prices=prices)
    if cfg.single_doc:
        plan.systems.append(single)
    plan.skipped = skipped
    calls = plan.calls()
    plan.pace = plan_pace(
        solver, latency, cfg.workers, rpm,
        plan.tokens_in() / calls if calls else None, plan.tokens_out() / calls if calls else 0.0, measured=measured,
    )  # fmt: skip
    if deterministic:
        plan.notes.append("deterministic solver: one trial; a case's identical prompts share a call")
    # a retriever that embeds: its lists are estimated (a plan makes no embedding call)
    plan.notes += [n for n in dict.fromkeys(n for s in systems for n in s.estimated) if n not in plan.notes]
    return plan


def plan_from_options(
    cases: Sequence[Case],
    corpus: Corpus,
    systems: Sequence[System],
    config: EndToEndConfig,
    solver: SolverSettings,
    *,
    price_in: float | None = None,
    price_out: float | None = None,
    latency: float | None = None,
    out: str | Path | None = None,
) -> EndToEndPlan:
    """``deltap endtoend --plan``: the solver built from its settings by the one function the run builds it with
    (:func:`deltap.trials.setup.build_solver`; a hosted model without a key is planned from its provider's facts: no
    key needed), its prices (:func:`deltap.trials.prices.prices_for`), then :func:`plan_end_to_end` (at the
    settings' ``requests_per_minute``).

    Raises:
        DeltapError: bad settings, a negative price or latency.
    """
    from deltap.trials.prices import prices_for
    from deltap.trials.setup import build_solver

    built, _, _ = build_solver(solver, None, cases, config.outcome, config.seed, plan_only=True)
    prices = prices_for(price_in, price_out, solver_id(built), local=solver.kind == "local")
    return plan_end_to_end(
        cases, corpus, built, systems, config, prices=prices, latency=latency, rpm=solver.requests_per_minute, out=out,
        measured=logged_pace(built, out),
    )  # fmt: skip


def logged_pace(solver: Any, out: str | Path | None) -> Measurement | None:
    """What is known of the solver's pace, read only: the end-to-end log's latest calls by this solver (a resumed
    run), else the last measurement kept in the user's cache, else the mining log's latest calls of the same run
    directory (``out`` is ``RUN_DIR/endtoend``), else ``None``."""
    from deltap.run_layout import EndToEndDir, RunDir
    from deltap.trials.log import TrialLogReader
    from deltap.trials.planning import measured_pace

    def rows(path: Path) -> list[tuple[Any, ...]]:
        if not path.is_file():
            return []
        with TrialLogReader(path) as log:
            return log.recent_calls(64, solver_id(solver))

    if out is None:
        return measured_pace(solver)
    own = rows(EndToEndDir(Path(out)).trials)
    if own:
        return measured_pace(solver, own)
    return measured_pace(solver) or measured_pace(solver, rows(RunDir(Path(out).parent).trials))


def calibrated_pace(
    solver: Any, cases: Sequence[Case], corpus: Corpus, systems: Sequence[System], config: EndToEndConfig,
    out: str | Path,
) -> tuple[Measurement | None, tuple[int, int, float]]:  # fmt: skip
    """A real run's pace before its plan is printed: a resumed run's own latest calls, else the run's own first two
    calls made now (:func:`deltap.endtoend.engine.first_trials`: logged under the keys the run asks them by, so the
    run reuses them and no call is made twice) — kept in the user's cache for the next plan. Returns the measurement
    (``None``: nothing to call) and ``(calls, trials, seconds)`` made now."""
    import time

    from deltap.endtoend.engine import first_trials
    from deltap.run_layout import EndToEndDir
    from deltap.trials.log import TrialLogReader
    from deltap.trials.pace import remember, solver_threads
    from deltap.trials.planning import measured_pace, scales_with_tokens

    path = EndToEndDir(Path(out)).trials
    before = 0
    if path.is_file():
        with TrialLogReader(path) as log:
            own = log.recent_calls(64, solver_id(solver))
            before = len(log.trials())
        if own:
            return measured_pace(solver, own), (0, 0, 0.0)
    t0 = time.perf_counter()
    timer = first_trials(cases, corpus, solver, systems, out, config)
    took = time.perf_counter() - t0
    n = len(timer)
    m = timer.measurement(solver_id(solver), solver_threads(solver), scales_with_tokens(solver),
                          origin="made first by this run (logged, not made again)")  # fmt: skip
    with TrialLogReader(path) as log:
        trials = len(log.trials()) - before
    if m is not None:
        remember(m)
    return m, (n, trials, took)


def run_plan(
    solver: Any, cases: Sequence[Case], corpus: Corpus, systems: Sequence[System], config: EndToEndConfig,
    out: str | Path, rpm: float | None = None,
) -> EndToEndPlan:  # fmt: skip
    """A real run's plan, before its first call (``deltap endtoend`` and the demo print its :meth:`EndToEndPlan.brief`):
    the solver timed on this machine (:func:`calibrated_pace`: a resumed run's log, else the run's own first two
    calls, logged), then every call still to make (:func:`plan_end_to_end`), with those first calls counted in."""
    measured, timed = calibrated_pace(solver, cases, corpus, systems, config, out)
    planned = plan_end_to_end(cases, corpus, solver, systems, config, rpm=rpm, out=out, measured=measured)
    planned.timed = timed
    return planned
