"""A plan without calls: what a mining run will cost before it makes a single solver call (``deltap mine --plan``).

Per case and in total: the **call ceiling by phase** (preflight, design trials, coalition checks — the figures of
:func:`deltap.mining.procedure.call_ceiling`, the ceiling the progress display counts down), a **floor** (a case
the preflight skips, or one decided at its first look), the **prompt tokens per call**, the **tokens in and out**,
the **cost** at the run's prices and a **time range**.

Tokens. A solver that counts its own prompt tokens (:class:`~deltap.solvers.base.ContextWindow`: the local model,
whose tokenizer runs on the rendered chat prompt — no completion is asked) gives exact counts; any other solver
gets an *estimate* and the plan says so (:func:`deltap.trials.tokens.token_counter`). Every design trial includes each candidate with probability π, so its prompt has, in expectation,
``T0 + π Σ t_i`` tokens (``T0``: the prompt without documents, ``t_i``: what document ``i`` adds), between ``T0``
and ``T_all`` (every candidate, counted exactly); the preflight asks ``T0`` and ``T_all`` themselves. Completion
tokens are at most the solver's ``max_tokens`` for the benchmark type per call (``pass``); a ``logprob`` score
generates nothing but takes the reference's tokens in. The local solver reuses shared prompt prefixes, so the
tokens it *evaluates* are fewer than the tokens it is given: the plan counts the latter (what a hosted API bills).

Time and cost are the trial layer's (:mod:`deltap.trials.planning`, shared with ``deltap endtoend --plan``): seconds
per call given (``latency``) or the local model's 2-core throughput, ``workers`` calls at a time and never faster than
``rpm`` per minute (:class:`~deltap.trials.planning.Pace`), the prices of :func:`deltap.trials.prices.prices_for`, and
the one writer of the cost and time lines.

One function serves any verb that plans its calls: :func:`plan_calls` takes the cases, each case's candidate
documents and its call ceiling, a config and a solver, and returns a :class:`RunPlan` (``to_dict`` for JSON,
``lines`` for 80 columns, ``brief`` for the block ``mine()`` shows before its first call). :func:`plan_mine` is
``deltap mine --plan``'s: it draws the pools as the run would, and on a run directory that already holds trials it
reads the stored pools and subtracts the calls already logged (``resuming: 84 of 150 calls already logged; 66 left``).

Against the run. ``mine()`` computes the same plan before its first call (from the pools it then mines), shows it
first, feeds it to the progress display (calls, tokens and cost *against the plan*) and records in ``run.json`` the
plan and what was spent against it (:func:`plan_vs_spent`: the ratios).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.mining.progress import short_count
from deltap.outcomes import outcome_kind
from deltap.solvers.base import ReferenceTokens, is_deterministic, solver_id
from deltap.trials.pace import MEASURE_AFTER
from deltap.trials.planning import Pace, clock_text, cost_lines, note_lines, plan_pace, time_lines
from deltap.trials.tokens import answer_ceilings, answer_tokens, token_counter

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus, Document
    from deltap.mining.config import MiningConfig
    from deltap.retrieval.base import Retriever
    from deltap.solvers.base import Solver
    from deltap.solvers.hosted import HostedModel
    from deltap.trials.pace import Measurement
    from deltap.trials.prices import Prices

__all__ = [
    "CasePlan",
    "Retimed",
    "RunPlan",
    "logged_in_run_dir",
    "plan_calls",
    "plan_mine",
    "plan_vs_spent",
    "plan_vs_spent_lines",
    "plan_time_line",
    "plan_vs_spent_rows",
    "planned_pace",
    "trial_phase",
]


def trial_phase(kind: str | None) -> str:
    """The plan's phase of a trial kind: ``preflight`` (``preflight_none``, ``preflight_all``), else the kind itself
    (``design``, ``coalition``)."""
    kind = kind or ""
    return "preflight" if kind.startswith("preflight") else kind


@dataclass(frozen=True)
class Retimed:
    """The run's time again once a case has ended (:meth:`RunPlan.retime`): the wall time spent so far plus the calls
    still to come, each at what this session's own calls of its phase cost — the design trials with the local
    model's prefix reuse in them, which the first re-timing (tokens given) cannot see.

    Attributes:
        at: Wall seconds from the plan to the re-timing (spent, known).
        seconds: ``(fastest, slowest)`` wall seconds from the plan to the run's end.
        per_trial: ``(fastest, slowest)`` seconds of a design trial of the plan's typical size, as measured.
        trials: Design and coalition calls measured.
        calls_left: ``(floor, ceiling)`` of the calls still to come.
        cases_ended: Cases ended when it was computed.
    """

    at: float
    seconds: tuple[float, float]
    per_trial: tuple[float, float]
    trials: int
    calls_left: tuple[int, int]
    cases_ended: int

    def line(self) -> str:
        """``       time 2:58–4:10 (re-timed at 0:33 from 9 trials: 1.20–1.80 s/call)`` (80 columns)."""
        a, b = self.seconds
        lo, hi = self.per_trial
        return (
            f"       time {clock_text(a)}–{clock_text(b)} (re-timed at {clock_text(self.at)} from {self.trials} "
            f"trials: {lo:.2f}–{hi:.2f} s/call)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": round(self.at, 1), "printed_min": round(self.seconds[0], 1), "printed_max": round(self.seconds[1], 1),
            "seconds_per_trial": [round(self.per_trial[0], 3), round(self.per_trial[1], 3)], "trials_measured": self.trials,
            "calls_left": {"floor": self.calls_left[0], "ceiling": self.calls_left[1]}, "cases_ended": self.cases_ended,
        }  # fmt: skip


@dataclass
class CasePlan:
    """One case's plan.

    Attributes:
        case_id: The case.
        candidates: Candidates in its pool.
        calls: Call ceiling by phase (``preflight``, ``design``, ``coalition``).
        floor: The fewest calls the case can make (skipped by the preflight, or decided at the first look).
        tokens_none / tokens_all: Prompt tokens with no document / with every candidate.
        tokens_expected: Expected prompt tokens of a design trial (``T0 + π Σ t_i``).
        tokens_out: Completion tokens per call, at most.
        logged: Calls by phase the trial log already holds (a resumed run: they are not made again).
    """

    case_id: str
    candidates: int
    calls: dict[str, int]
    floor: int
    tokens_none: int
    tokens_all: int
    tokens_expected: float
    tokens_out: int
    logged: dict[str, int] = field(default_factory=dict)

    @property
    def ceiling(self) -> int:
        return sum(self.calls.values())

    def left(self) -> dict[str, int]:
        """Calls by phase still to make at most: the ceiling minus what the log holds."""
        return {k: max(0, v - int(self.logged.get(k, 0))) for k, v in self.calls.items()}

    def logged_calls(self) -> int:
        """Logged calls that count against the ceiling (at most the ceiling of each phase)."""
        return self.ceiling - sum(self.left().values())

    def _tokens(self, calls: Mapping[str, int]) -> tuple[float, int]:
        pre = calls.get("preflight", 0)
        rest = sum(calls.values()) - pre
        expected = pre / 2 * (self.tokens_none + self.tokens_all) + rest * self.tokens_expected
        return expected, (pre + rest) * self.tokens_all

    def tokens_in(self, left: bool = False) -> tuple[float, int]:
        """``(expected at the ceiling, most)``: prompt tokens of the case's calls (``left``: of those not logged)."""
        return self._tokens(self.left() if left else self.calls)

    def floor_left(self) -> int:
        return max(0, self.floor - self.logged_calls())

    def to_dict(self) -> dict[str, Any]:
        expected, most = self.tokens_in()
        out = {
            "case_id": self.case_id, "candidates": self.candidates, "calls": dict(self.calls), "calls_ceiling": self.ceiling,
            "calls_floor": self.floor, "prompt_tokens": {"none": self.tokens_none, "all": self.tokens_all, "expected": round(self.tokens_expected, 1)},
            "tokens_in_expected": round(expected), "tokens_in_max": most, "tokens_out_max": self.tokens_out * self.ceiling,
        }  # fmt: skip
        if any(self.logged.values()):
            out["calls_logged"] = dict(self.logged)
        return out


@dataclass
class RunPlan:
    """A run's plan: the cases' plans and the run-wide figures (see the module docstring).

    The totals (``calls``, ``ceiling``, ``tokens_in``...) are the whole run's, over every session; a resumed run's
    ``*_left`` figures are what is still to come (the ceiling minus the calls the trial log already holds).
    """

    solver: str
    counted: str
    cases: list[CasePlan]
    pace: Pace = field(default_factory=Pace)
    prices: Prices | None = None
    notes: list[str] = field(default_factory=list)
    seconds_to_plan: float | None = None
    retimed: Retimed | None = None  # the time again once a case has ended (set by the run, printed once)

    @property
    def workers(self) -> int:
        return self.pace.workers

    # --- totals ---------------------------------------------------------------------------------------------------
    def calls(self, left: bool = False) -> dict[str, int]:
        out = {"preflight": 0, "design": 0, "coalition": 0}
        for c in self.cases:
            for k, v in (c.left() if left else c.calls).items():
                out[k] = out.get(k, 0) + v
        return out

    def ceiling(self) -> int:
        return sum(c.ceiling for c in self.cases)

    def floor(self) -> int:
        return sum(c.floor for c in self.cases)

    def logged(self) -> int:
        """Calls the trial log already holds (a resumed run)."""
        return sum(c.logged_calls() for c in self.cases)

    def ceiling_left(self) -> int:
        return self.ceiling() - self.logged()

    def tokens_in(self, left: bool = False) -> tuple[int, int]:
        """``(expected at the ceiling, most)`` over every case (``left``: of the calls not logged yet)."""
        pairs = [c.tokens_in(left) for c in self.cases]
        return round(sum(p[0] for p in pairs)), sum(p[1] for p in pairs)

    def tokens_out(self, left: bool = False) -> int:
        return sum(c.tokens_out * (sum(c.left().values()) if left else c.ceiling) for c in self.cases)

    def cost(self, left: bool = False) -> tuple[float, float] | None:
        """``(expected at the ceiling, most)`` in USD, or ``None`` without prices."""
        if self.prices is None:
            return None
        expected, most = self.tokens_in(left)
        out = self.tokens_out(left)
        return self.prices.cost(expected, out), self.prices.cost(most, out)

    def seconds(self, left: bool = False) -> tuple[float, float] | None:
        """``(floor calls at the fastest rate, ceiling calls at the slowest)``, or ``None`` when the latency is unknown
        and no ``rpm`` bounds it."""
        if left:
            return self.pace.seconds(sum(c.floor_left() for c in self.cases), self.ceiling_left())
        return self.pace.seconds(self.floor(), self.ceiling())

    def resuming_line(self) -> str | None:
        """``resuming: 84 of 150 calls already logged; 66 left`` (``None`` when the log holds none)."""
        done = self.logged()
        if not done:
            return None
        return f"resuming: {done:,} of {self.ceiling():,} calls already logged; {self.ceiling_left():,} left at most"

    def per_call_tokens(self) -> tuple[float | None, float]:
        """``(prompt tokens, completion tokens)`` per call at the ceiling (``None``: no case planned)."""
        calls = max(1, self.ceiling())
        return (self.tokens_in()[0] / calls if self.cases else None), self.tokens_out() / calls

    def measure(self, measured: Measurement) -> None:
        """Take the pace from ``measured`` (a run's own first calls), scaled to this plan's tokens per call."""
        tin, tout = self.per_call_tokens()
        self.pace = plan_pace(None, None, self.pace.workers, self.pace.rpm, tin, tout, measured=measured)

    def retime(
        self, at: float, made: Sequence[Any], ended: Collection[str], trials: Measurement, preflight: Measurement
    ) -> Retimed:
        """The time again once a case has ended: ``at`` seconds spent since the plan, plus the calls still to come —
        per case its ceiling (and floor) minus the calls the log held and this session ``made``
        (:class:`~deltap.trials.pace.CallTime` with ``kind`` and ``case``; an ``ended`` case has only its coalition
        checks left) — a preflight call at the ``preflight`` calls' measured pace, a design or coalition trial at the
        ``trials``' (both scaled to the case's tokens per call). Kept in :attr:`retimed`."""
        done: dict[str, dict[str, int]] = {}
        for call in made:
            by_phase = done.setdefault(str(call.case), {})
            by_phase[trial_phase(call.kind)] = by_phase.get(trial_phase(call.kind), 0) + 1
        floor_calls = ceiling_calls = 0
        fast = slow = 0.0
        for c in self.cases:
            d = {k: int(c.logged.get(k, 0)) + done.get(c.case_id, {}).get(k, 0) for k in c.calls}
            gone = c.case_id in ended
            pre = 0 if gone else max(0, c.calls.get("preflight", 0) - d.get("preflight", 0))
            rest = max(0, c.calls.get("coalition", 0) - d.get("coalition", 0))
            rest += 0 if gone else max(0, c.calls.get("design", 0) - d.get("design", 0))
            floor = 0 if gone else max(0, c.floor - sum(d.values()))
            p_lo, p_hi = preflight.seconds_per_call((c.tokens_none + c.tokens_all) / 2, c.tokens_out)
            t_lo, t_hi = trials.seconds_per_call(c.tokens_expected, c.tokens_out)
            floor_calls, ceiling_calls = floor_calls + floor, ceiling_calls + pre + rest
            fast += min(pre, floor) * p_lo + max(0, floor - pre) * t_lo  # a case's floor: its preflight, then trials
            slow += pre * p_hi + rest * t_hi
        workers, rpm = max(1, self.pace.workers), self.pace.rpm
        lo, hi = fast / workers, slow / workers
        if rpm:
            lo, hi = max(lo, 60.0 * floor_calls / rpm), max(hi, 60.0 * ceiling_calls / rpm)
        tin, tout = self.per_call_tokens()
        self.retimed = Retimed(
            at, (at + lo, at + hi), trials.seconds_per_call(tin, tout), trials.calls, (floor_calls, ceiling_calls),
            len(ended),
        )  # fmt: skip
        return self.retimed

    def pace_lines(self) -> list[str]:
        """What a run prints when its time is measured again: the re-timing once a case has ended (one line), else
        the first calls' time (:meth:`time_brief`)."""
        return [self.retimed.line()] if self.retimed is not None else self.time_brief()

    # --- output ---------------------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready (``deltap mine --plan --json``)."""
        expected, most = self.tokens_in()
        cost, secs = self.cost(), self.seconds()
        return {
            "solver": self.solver,
            "tokens_counted": self.counted,
            "cases": len(self.cases),
            "calls_by_phase": self.calls(),
            "calls_ceiling": self.ceiling(),
            "calls_floor": self.floor(),
            "tokens_in_expected": expected,
            "tokens_in_max": most,
            "tokens_out_max": self.tokens_out(),
            "prices": self.prices.to_dict() if self.prices is not None else None,
            "cost_usd": None if cost is None else {"expected": round(cost[0], 6), "max": round(cost[1], 6)},
            **self.pace.to_dict(),
            "seconds": None if secs is None else {"min": round(secs[0], 1), "max": round(secs[1], 1)},
            "notes": list(self.notes),
            "seconds_to_plan": None if self.seconds_to_plan is None else round(self.seconds_to_plan, 3),
            **self._left_dict(),
            "by_case": [c.to_dict() for c in self.cases],
        }

    def _left_dict(self) -> dict[str, Any]:
        """A resumed run's figures still to come (empty when the log holds no call)."""
        if not self.logged():
            return {}
        expected, most = self.tokens_in(left=True)
        cost, secs = self.cost(left=True), self.seconds(left=True)
        return {
            "resuming": {
                "calls_logged": self.logged(),
                "calls_left": self.ceiling_left(),
                "calls_left_by_phase": self.calls(left=True),
                "tokens_in_left_expected": expected,
                "tokens_in_left_max": most,
                "tokens_out_left_max": self.tokens_out(left=True),
                "cost_usd_left": None if cost is None else {"expected": round(cost[0], 6), "max": round(cost[1], 6)},
                "seconds_left": None if secs is None else {"min": round(secs[0], 1), "max": round(secs[1], 1)},
            }
        }

    def brief(self) -> list[str]:
        """The plan in at most 5 lines of 80 columns: what ``mine()`` shows before its first call (a resumed run:
        what is left)."""
        left = self.logged() > 0
        calls = self.calls(left)
        head = f"plan   {len(self.cases)} case(s): calls ≤{self.ceiling_left() if left else self.ceiling():,} ("
        head += f"preflight {calls['preflight']:,}, trials ≤{calls['design']:,}, coalition ≤{calls['coalition']:,})"
        out = [head]
        if left:
            out.append("       " + str(self.resuming_line()))
        expected, most = self.tokens_in(left)
        est = "exact" if self.counted.startswith("exact") else "estimated"
        out.append(
            f"       tokens in ~{short_count(expected)} (≤{short_count(most)}, {est}) · out ≤{short_count(self.tokens_out(left))}"
        )
        tail = []
        cost = self.cost(left)
        if self.prices is not None and not (self.prices.input or self.prices.output):
            tail.append(f"cost $0: {self.prices.source}")
        elif cost is not None:
            tail.append(f"cost ~${cost[0]:,.2f} (≤${cost[1]:,.2f})")
        else:
            tail.append("cost: no prices (--price-in/--price-out)")
        out.append("       " + " · ".join(tail))
        out += self.time_brief()
        if self.pace.measurement is None or self.pace.measurement.origin != "of this run":
            out.append(f"       (a run times its first {MEASURE_AFTER} calls and prints the time again)")
        return out

    def time_brief(self) -> list[str]:
        """The brief's time line and where its figure comes from (80 columns): ``time 4:05–12:30 (1.6–2.6 s/call)``
        then ``measured 2.00 s/call … on this machine …`` or the table's caveat; what a run prints again once its
        first calls are timed."""
        secs = self.seconds(self.logged() > 0)
        if secs is None:
            return ["       time unknown until the first calls are timed"]
        per = self.pace.seconds_per_call
        rate = f" ({per[0]:.2f}–{per[1]:.2f} s/call, {self.pace.workers} worker(s))" if per else ""
        left = " left" if self.logged() > 0 else ""
        out = [f"       time {clock_text(secs[0])}–{clock_text(secs[1])}{left}{rate}"]
        if self.pace.source:
            import textwrap

            out += textwrap.wrap(self.pace.source, 80, initial_indent="       ", subsequent_indent="       ",
                                 break_on_hyphens=False, break_long_words=False)  # fmt: skip
        return out

    def lines(self, max_cases: int = 20) -> list[str]:
        """The plan in 80 columns: a row per case (the first ``max_cases``), then the totals."""
        out = [f"plan: {len(self.cases)} case(s), no call made; tokens {self.counted}"]
        resuming = self.resuming_line()
        if resuming:
            out.append(resuming)
        ids, head = case_id_column([c.case_id for c in self.cases[:max_cases]], 30)  # whole words, never cut mid-word
        out.append(f"{head:<30} {'cands':>5} {'calls ≤':>8} {'tokens/call (range)':>20} {'tokens in ≤':>12}")
        for c, cid in zip(self.cases[:max_cases], ids, strict=True):
            per = f"{c.tokens_expected:,.0f} ({c.tokens_none:,}–{c.tokens_all:,})"
            out.append(f"{cid:<30} {c.candidates:>5} {c.ceiling:>8,} {per:>20} {c.tokens_in()[1]:>12,}")
        if len(self.cases) > max_cases:
            out.append(f"… {len(self.cases) - max_cases} more case(s) (--json lists them all)")
        calls = self.calls()
        out.append(
            f"calls   {self.floor():,}–{self.ceiling():,} (preflight {calls['preflight']:,}, trials ≤{calls['design']:,}, "
            f"coalition ≤{calls['coalition']:,})"
        )
        expected, most = self.tokens_in()
        out.append(f"tokens  in ~{expected:,} at the ceiling (≤{most:,}), out ≤{self.tokens_out():,}")
        out += cost_lines(self.cost(), self.prices)
        if resuming:
            expected_left, most_left = self.tokens_in(left=True)
            out.append(f"left    calls ≤{self.ceiling_left():,}, tokens in ~{expected_left:,} (≤{most_left:,})")
        out += time_lines(self.seconds(left=bool(resuming)), self.pace, " left" if resuming else "")
        out += note_lines(self.notes)
        return out


def plan_calls(
    cases: Sequence[Case],
    pools: Mapping[str, Sequence[Document]],
    cfg: MiningConfig,
    solver: Solver | HostedModel,
    *,
    ceiling: Callable[[Case], dict[str, int]] | None = None,
    prices: Prices | None = None,
    latency: float | None = None,
    workers: int | None = None,
    rpm: float | None = None,
    logged: Mapping[str, Mapping[str, int]] | None = None,
    measured: Measurement | None = None,
) -> RunPlan:
    """Plan the calls of a run without making any.

    Args:
        cases: The cases.
        pools: ``{case_id: candidate documents}`` (each trial includes each with probability ``cfg.pi``).
        cfg: The run's options (``pi``, ``outcome``, ``budget``, ``preflight``, ``verify_trials``, ``context_order``).
        solver: Counts the tokens (exactly when it is a :class:`~deltap.solvers.base.ContextWindow`) and says its
            answer ceilings (its ``max_tokens``); never called.
        ceiling: ``case -> {phase: calls}``; default ``deltap mine``'s (:func:`deltap.mining.procedure.call_ceiling`).
        prices: For the cost (``None``: no cost).
        latency: Seconds per call (``None``: the local model's throughput, else unknown).
        workers: Calls in flight (default ``cfg.workers``).
        rpm: The endpoint's request limit per minute.
        logged: ``{case_id: {phase: calls}}`` the trial log already holds (:func:`logged_in_run_dir`); the plan
            says what is left.
        measured: The solver's measured pace on this machine (:mod:`deltap.trials.pace`); ``None``: the local
            model's 2-core table, else unknown.

    Returns:
        A :class:`RunPlan`.
    """
    import time

    from deltap.mining.design import canonical_order
    from deltap.mining.procedure import call_ceiling
    from deltap.trials.request import request_from_case

    t_start = time.perf_counter()
    count, how = token_counter(solver)
    deterministic = is_deterministic(solver)
    pre, design, coalition = call_ceiling(cfg, deterministic)
    schedule_floor = int(cfg.schedule(0).looks[0]) if cfg.budget else 0
    ceilings = answer_ceilings(solver)
    plans: list[CasePlan] = []
    for case in cases:
        docs = list(pools.get(case.case_id, ()))
        base = request_from_case(case)
        lengths = [len(d.text) for d in docs] if cfg.context_order == "length" else None
        ordered = tuple(docs[i] for i in canonical_order([d.doc_id for d in docs], lengths))
        t0 = count(base)
        t_all = count(replace(base, documents=ordered)) if docs else t0
        added = sum(max(0, count(replace(base, documents=(d,))) - t0) for d in docs)
        if not outcome_kind(cfg.outcome).answered:
            ref = case.reference_answer or ""
            ref_tokens = (
                len(solver.reference_tokens(ref)) if isinstance(solver, ReferenceTokens) and ref else len(ref) // 4 + 1
            )
            t0, t_all = t0 + ref_tokens, t_all + ref_tokens
            out_tokens = 0
        else:
            out_tokens = answer_tokens(ceilings, case.benchmark_type)
        expected = t0 + cfg.pi * added
        # the design's prompts lie between T0 and T_all; a sum of single-document additions can overshoot T_all
        expected = min(max(expected, t0), t_all)
        calls = (
            ceiling(case)
            if ceiling is not None
            else {"preflight": pre, "design": design, "coalition": coalition if docs else 0}
        )
        floor = calls.get("preflight", 0) + min(int(cfg.preflight_confirm), schedule_floor or design) if docs else 0
        done = dict((logged or {}).get(case.case_id) or {})
        plans.append(
            CasePlan(
                case.case_id, len(docs), calls, min(floor, sum(calls.values())), t0, t_all, expected, out_tokens, done
            )
        )
    plan = RunPlan(solver_id(solver), how, plans, prices=prices)
    calls_total = max(1, plan.ceiling())
    plan.pace = plan_pace(
        solver, latency, int(workers or cfg.workers), rpm,
        plan.tokens_in()[0] / calls_total if plans else None, plan.tokens_out() / calls_total, measured=measured,
    )  # fmt: skip
    if deterministic:
        plan.notes.append("deterministic solver: repeated prompts are answered from the log, so fewer calls")
    if not math.isfinite(plan.tokens_in()[0]):  # pragma: no cover - defensive
        plan.notes.append("token counts unavailable")
    plan.seconds_to_plan = time.perf_counter() - t_start
    return plan


def logged_in_run_dir(out: str | Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """``(pools, calls)`` a run directory's trial log already holds, read without writing or locking it: each
    case's stored pool (a resumed run mines that pool, whatever the retriever returns today) and its logged calls
    by phase (trials answered from a deterministic solver's earlier answer are no calls; ``error`` trials are asked
    again on resume, so they are not counted). ``({}, {})`` when there is no log."""
    from deltap.run_layout import RunDir
    from deltap.trials.log import TrialLogReader

    path = RunDir(out).trials
    if not path.is_file():
        return {}, {}
    with TrialLogReader(path) as log:
        pools = {cid: pool for cid, pool in log.pools() if pool is not None}
        calls: dict[str, dict[str, int]] = {}
        for (cid, kind), n in log.calls_by_case_and_kind().items():
            phase = "preflight" if kind.startswith("preflight") else kind
            by = calls.setdefault(cid, {"preflight": 0, "design": 0, "coalition": 0})
            by[phase] = by.get(phase, 0) + n
    return pools, calls


def plan_mine(
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver | HostedModel,
    cfg: MiningConfig,
    *,
    retriever: Retriever | None = None,
    prices: Prices | None = None,
    latency: float | None = None,
    rpm: float | None = None,
    out: str | Path | None = None,
) -> RunPlan:
    """``deltap mine --plan``: draw each case's pool as the run would (gold, retrieved, placebo; fitted to the
    solver's context window) and plan its calls with :func:`plan_calls`. No solver call, nothing written. A
    :class:`~deltap.retrieval.standin.LengthStandIn` retriever (what a plan uses for a retriever that embeds) gives
    estimated candidates, and the plan's notes say so.

    With ``out`` (the run directory), a case the trial log already pooled keeps its stored pool (the run resumes
    with it) and the calls the log holds are subtracted (:func:`logged_in_run_dir`)."""
    from deltap.mining.pool import Pool, build_pool
    from deltap.mining.runner import fit_context
    from deltap.retrieval.standin import LengthStandIn

    stored, logged = logged_in_run_dir(out) if out is not None else ({}, {})
    pools: dict[str, list[Document]] = {}
    for case in cases:
        if case.case_id in stored:
            pool = Pool.from_dict(stored[case.case_id])
        else:
            pool = build_pool(
                case,
                corpus,
                retriever,
                cfg.k,
                cfg.n_placebo,
                cfg.max_candidates,
                cfg.seed,
                placebo_kind=cfg.placebo_kind,
            )
            pool, _ = fit_context(pool, case, corpus, solver, cfg)  # a HostedModel has no window: kept whole
        pools[case.case_id] = [corpus[d] for d in pool.doc_ids if d in corpus]
    measured = planned_pace(solver, out)
    plan = plan_calls(
        cases, pools, cfg, solver, prices=prices, latency=latency, rpm=rpm, logged=logged, measured=measured
    )
    if isinstance(retriever, LengthStandIn) and cfg.k > 0 and any(c.case_id not in stored for c in cases):
        plan.notes += retriever.notes(cfg.k)
    return plan


def planned_pace(solver: Any, out: str | Path | None = None) -> Measurement | None:
    """What a ``--plan`` knows of the solver's pace, read only: the run directory's trial log's latest calls by this
    solver, else the last measurement kept in the user's cache (:func:`deltap.trials.planning.measured_pace`)."""
    from deltap.run_layout import RunDir
    from deltap.trials.log import TrialLogReader
    from deltap.trials.planning import measured_pace

    path = RunDir(out).trials if out is not None else None
    if path is None or not path.is_file():
        return measured_pace(solver)
    with TrialLogReader(path) as log:
        return measured_pace(solver, log.recent_calls(64, solver_id(solver)))


def _ratio(spent: float | None, planned: float | None) -> float | None:
    return None if spent is None or not planned else round(float(spent) / float(planned), 3)


def plan_vs_spent(
    plan: RunPlan, spend: Mapping[str, Any], wall_seconds: float | None = None, since_plan: float | None = None
) -> dict[str, Any]:
    """What a run spent (``run.json``'s ``spend``, over every session) against its plan, figure by figure, with the
    ratio ``spent / planned`` (calls against the ceiling, prompt tokens against the expected figure at the ceiling,
    completion tokens and cost against theirs, solver seconds against the top of the time range), and this session's
    wall time from its plan to its end (``since_plan``) against the range the plan printed (what was left)."""
    expected, most = plan.tokens_in()
    cost, secs = plan.cost(), plan.seconds()
    calls = int(spend.get("calls") or 0)
    tin, tout = spend.get("tokens_in"), spend.get("tokens_out")
    out: dict[str, Any] = {
        "calls": {"plan_floor": plan.floor(), "plan_ceiling": plan.ceiling(), "spent": calls,
                  "ratio": _ratio(calls, plan.ceiling())},
        "tokens_in": {"plan_expected": expected, "plan_max": most, "spent": tin, "ratio": _ratio(tin, expected)},
        "tokens_out": {"plan_max": plan.tokens_out(), "spent": tout, "ratio": _ratio(tout, plan.tokens_out())},
        "tokens_in_per_call": {
            "plan_expected": round(expected / plan.ceiling(), 1) if plan.ceiling() else None,
            "spent": round(tin / calls, 1) if tin is not None and calls else None,
            "ratio": _ratio(tin / calls if tin is not None and calls else None,
                            expected / plan.ceiling() if plan.ceiling() else None),
        },
    }  # fmt: skip
    if cost is not None:
        spent_cost = spend.get("cost_usd")
        out["cost_usd"] = {"plan_expected": round(cost[0], 6), "plan_max": round(cost[1], 6), "spent": spent_cost,
                           "ratio": _ratio(spent_cost, cost[0])}  # fmt: skip
    solver_s = spend.get("solver_seconds")
    out["seconds"] = {
        "plan_min": None if secs is None else round(secs[0], 1),
        "plan_max": None if secs is None else round(secs[1], 1),
        "solver_seconds": solver_s,
        "wall_seconds_this_session": None if wall_seconds is None else round(wall_seconds, 1),
        "ratio": _ratio(solver_s / max(1, plan.workers) if solver_s is not None else None, secs[1] if secs else None),
    }
    printed = plan.seconds(left=plan.logged() > 0)
    if since_plan is not None and printed is not None:
        inside = "below" if since_plan < printed[0] else "above" if since_plan > printed[1] else "inside"
        out["seconds"].update(wall_since_plan=round(since_plan, 1), printed_min=round(printed[0], 1),
                              printed_max=round(printed[1], 1), wall_in_range=inside)  # fmt: skip
        if plan.retimed is not None:  # the range printed again once a case had ended
            r = plan.retimed.seconds
            again = "below" if since_plan < r[0] else "above" if since_plan > r[1] else "inside"
            out["seconds"]["retimed"] = {**plan.retimed.to_dict(), "wall_in_range": again}
    out["tokens_counted"] = plan.counted
    return out


def plan_vs_spent_lines(pvs: Mapping[str, Any]) -> list[str]:
    """``plan vs spent: calls 131 of ≤150 (0.87) · tokens in 96k of ~132k (0.73) · ...`` (80 columns, 1-2 lines)."""
    parts = []
    c = pvs.get("calls") or {}
    if c:
        parts.append(f"calls {c['spent']:,} of ≤{c['plan_ceiling']:,} ({_fmt_ratio(c.get('ratio'))})")
    t = pvs.get("tokens_in") or {}
    if t.get("spent") is not None:
        parts.append(
            f"tokens in {short_count(t['spent'])} of ~{short_count(t['plan_expected'])} ({_fmt_ratio(t.get('ratio'))})"
        )
    s = pvs.get("seconds") or {}
    if s.get("ratio") is not None:
        parts.append(f"solver time {_fmt_ratio(s['ratio'])} of the plan's top")
    timed = plan_time_line(pvs)
    if timed:
        parts.append(timed)
    line1 = "plan vs spent: " + " · ".join(parts[:2])
    return [line1] + ["               " + part for part in parts[2:]]


def plan_time_line(pvs: Any) -> str | None:
    """``time 6:03 from the plan on, inside its 2:54–12:15``: the wall time from the plan to the end against the range
    the run printed (``None`` for a run.json without it)."""
    s = (pvs.get("seconds") or {}) if isinstance(pvs, Mapping) else {}
    if not s.get("wall_in_range"):
        return None
    text = (
        f"time {clock_text(s['wall_since_plan'])} from the plan on, {s['wall_in_range']} its "
        f"{clock_text(s['printed_min'])}–{clock_text(s['printed_max'])}"
    )
    r = s.get("retimed")
    if isinstance(r, Mapping) and r.get("wall_in_range"):
        text += (
            f", {r['wall_in_range']} {clock_text(r['printed_min'])}–{clock_text(r['printed_max'])} "
            f"(re-timed at {clock_text(r['at'])})"
        )
    return text


def plan_vs_spent_rows(pvs: Any) -> list[tuple[str, str]]:
    """``run.json``'s ``plan_vs_spent`` as ``(label, "spent of planned (ratio)")`` rows for the reports (``[]`` for a
    run without a plan)."""
    if not isinstance(pvs, Mapping):
        return []
    rows: list[tuple[str, str]] = []
    c = pvs.get("calls") or {}
    if c.get("plan_ceiling"):
        rows.append(
            (
                "calls vs plan",
                f"{c['spent']:,} of {c['plan_floor']:,}–{c['plan_ceiling']:,} ({_fmt_ratio(c.get('ratio'))})",
            )
        )
    t = pvs.get("tokens_in") or {}
    if t.get("spent") is not None and t.get("plan_expected"):
        rows.append(("tokens in vs plan", f"{t['spent']:,} of ~{t['plan_expected']:,} ({_fmt_ratio(t.get('ratio'))})"))
    o = pvs.get("tokens_out") or {}
    if o.get("spent") is not None and o.get("plan_max"):
        rows.append(("tokens out vs plan", f"{o['spent']:,} of ≤{o['plan_max']:,} ({_fmt_ratio(o.get('ratio'))})"))
    k = pvs.get("cost_usd") or {}
    if k.get("spent") is not None and k.get("plan_expected"):
        rows.append(
            ("cost vs plan", f"${k['spent']:,.2f} of ~${k['plan_expected']:,.2f} ({_fmt_ratio(k.get('ratio'))})")
        )
    s = pvs.get("seconds") or {}
    if s.get("plan_max") is not None and s.get("solver_seconds") is not None:
        rows.append(("solver time vs plan", f"{s['solver_seconds']:,.0f} s of {s['plan_min']:,.0f}–{s['plan_max']:,.0f} s "
                     f"({_fmt_ratio(s.get('ratio'))} of the top)"))  # fmt: skip
    return rows


def _fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"{r:.2f}×"


_WORD_BREAKS = "_.:/-#"


def _shorten_id(cid: str, width: int) -> str:
    """``cid`` in at most ``width`` characters, cut only between words (at ``_ . : / - #``): its first and last whole
    words around ``…``; a hard cut only when a single word is longer than the column."""
    if len(cid) <= width:
        return cid
    words = re.split(f"(?<=[{re.escape(_WORD_BREAKS)}])", cid)  # each word keeps the break after it
    i, j = 0, len(words) - 1
    head, tail = "", ""
    if len(words) > 1 and len(words[0]) < width // 2:  # the first word says what the id is about
        head, i = words[0], 1
    while i <= j and len(head) + len(tail) + len(words[j]) + 1 <= width:  # then the end: it tells cases apart
        tail, j = words[j] + tail, j - 1
    while i <= j and len(head) + len(tail) + len(words[i]) + 1 <= width:
        head, i = head + words[i], i + 1
    if not tail and not head:
        return cid[: width - 1] + "…"
    return head + "…" + tail


def case_id_column(ids: Sequence[str], width: int) -> tuple[list[str], str]:
    """The case ids of a table column of ``width`` characters and its header: a prefix every id shares (up to a word
    break) moves to the header (``case (stdlib:p_…)``) when an id would not fit, and the rest is shortened at word
    breaks only (:func:`_shorten_id`), so no id is cut mid-word."""
    if all(len(c) <= width for c in ids) or not ids:
        return list(ids), "case"
    prefix = os.path.commonprefix(list(ids))
    cut = max((prefix.rfind(ch) for ch in _WORD_BREAKS), default=-1)
    prefix = prefix[: cut + 1] if cut >= 3 and len(ids) > 1 else ""
    head = f"case ({prefix}…)" if prefix and len(prefix) + 8 <= width else "case"
    if head == "case":
        prefix = ""
    return [_shorten_id(c[len(prefix) :], width) for c in ids], head
