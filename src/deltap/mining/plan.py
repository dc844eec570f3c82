"""A plan without calls: what a mining run will cost before it makes a single solver call (``deltap mine --plan``).

Per case and in total: the **call ceiling by phase** (preflight, design trials, coalition checks — the figures of
:func:`deltap.mining.procedure.call_ceiling`, the ceiling the progress display counts down), a **floor** (a case
the preflight skips, or one decided at its first look), the **prompt tokens per call**, the **tokens in and out**,
the **cost** at the run's prices and a **time range**.

Tokens. A solver that counts its own prompt tokens (:class:`~deltap.solvers.base.ContextWindow`: the local model,
whose tokenizer runs on the rendered chat prompt — no completion is asked) gives exact counts; any other solver
gets an *estimate* and the plan says so: ``tiktoken``'s ``o200k_base`` when it is installed, else 4 characters per
token. Every design trial includes each candidate with probability π, so its prompt has, in expectation,
``T0 + π Σ t_i`` tokens (``T0``: the prompt without documents, ``t_i``: what document ``i`` adds), between ``T0``
and ``T_all`` (every candidate, counted exactly); the preflight asks ``T0`` and ``T_all`` themselves. Completion
tokens are at most the solver's ``max_tokens`` for the benchmark type per call (``pass``); a ``logprob`` score
generates nothing but takes the reference's tokens in. The local solver reuses shared prompt prefixes, so the
tokens it *evaluates* are fewer than the tokens it is given: the plan counts the latter (what a hosted API bills).

Time. Seconds per call are the ones given (``latency``), else for the local model the prompt tokens at the 2-core
throughput measured here (:data:`LOCAL_PROMPT_TOKENS_PER_S`, generation at :data:`LOCAL_GENERATED_TOKENS_PER_S`),
else unknown; calls run ``workers`` at a time, and never faster than ``rpm`` per minute.

One function serves any verb that plans its calls: :func:`plan_calls` takes the cases, each case's candidate
documents and its call ceiling, a config and a solver, and returns a :class:`RunPlan` (``to_dict`` for JSON,
``lines`` for 80 columns). :func:`plan_mine` is ``deltap mine``'s: it draws the pools as the run would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from deltap.outcomes import outcome_kind
from deltap.solvers.base import ContextWindow, ReferenceTokens, is_deterministic, solver_id

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus, Document
    from deltap.mining.config import MiningConfig
    from deltap.mining.spend import Prices
    from deltap.retrieval.base import Retriever
    from deltap.solvers.base import Solver, SolveRequest

__all__ = [
    "LOCAL_GENERATED_TOKENS_PER_S",
    "LOCAL_PROMPT_TOKENS_PER_S",
    "CasePlan",
    "RunPlan",
    "plan_calls",
    "plan_mine",
    "token_counter",
]

#: prompt tokens per second of the local SmolLM2-135M on 2 cores (docs/DESIGN: 320-390 measured here), a range
LOCAL_PROMPT_TOKENS_PER_S = (320.0, 390.0)
#: generated tokens per second of the same model on 2 cores (a range; see benchmarks/README.md)
LOCAL_GENERATED_TOKENS_PER_S = (40.0, 80.0)
#: completion tokens assumed per answer when the solver does not declare its ``max_tokens``
FALLBACK_MAX_TOKENS = 256


@dataclass(frozen=True)
class HostedModel:
    """What a plan needs of a hosted model it does not connect to (no API key needed to plan): the id its solver
    would have and its answer ceilings per benchmark type. Used by :func:`plan_calls` only; it answers nothing.
    """

    id: str
    max_tokens: Mapping[str, int]

    @classmethod
    def of(cls, kind: str, model: str | None) -> HostedModel:
        """``openai`` / ``gemini`` with that solver's default answer ceilings (:mod:`deltap.solvers.answer_tokens`)."""
        from deltap.solvers.answer_tokens import default_max_tokens

        if kind == "gemini":
            return cls(f"gemini:{model or 'gemini-2.0-flash'}", default_max_tokens("gemini"))
        return cls(f"openai:{model or 'gpt-4o-mini'}", default_max_tokens("openai"))


def token_counter(solver: Solver | HostedModel) -> tuple[Callable[[SolveRequest], int], str]:
    """``(count, how)``: the prompt tokens of a request, and how they are counted (``exact (the solver's
    tokenizer)`` or ``estimate (...)``)."""
    if isinstance(solver, ContextWindow):
        return (lambda req: len(solver.tokens(req))), "exact (the solver's tokenizer)"
    from deltap.solvers.prompts import messages_to_text, render_prompt

    template = getattr(solver, "template", None)
    try:
        import tiktoken

        enc = tiktoken.get_encoding("o200k_base")
        return (
            lambda req: len(enc.encode(messages_to_text(render_prompt(req, template))))
        ), "estimate (tiktoken o200k_base)"
    except Exception:  # noqa: BLE001 - not installed, or its encoding file cannot be fetched offline
        return (lambda req: len(messages_to_text(render_prompt(req, template))) // 4 + 1), "estimate (4 chars/token)"


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
    """

    case_id: str
    candidates: int
    calls: dict[str, int]
    floor: int
    tokens_none: int
    tokens_all: int
    tokens_expected: float
    tokens_out: int

    @property
    def ceiling(self) -> int:
        return sum(self.calls.values())

    def tokens_in(self) -> tuple[float, int]:
        """``(expected at the ceiling, most)``: prompt tokens of the case's calls."""
        pre = self.calls.get("preflight", 0)
        half = pre / 2
        rest = self.ceiling - pre
        expected = half * (self.tokens_none + self.tokens_all) + rest * self.tokens_expected
        return expected, pre * self.tokens_all + rest * self.tokens_all

    def to_dict(self) -> dict[str, Any]:
        expected, most = self.tokens_in()
        return {
            "case_id": self.case_id, "candidates": self.candidates, "calls": dict(self.calls), "calls_ceiling": self.ceiling,
            "calls_floor": self.floor, "prompt_tokens": {"none": self.tokens_none, "all": self.tokens_all, "expected": round(self.tokens_expected, 1)},
            "tokens_in_expected": round(expected), "tokens_in_max": most, "tokens_out_max": self.tokens_out * self.ceiling,
        }  # fmt: skip


@dataclass
class RunPlan:
    """A run's plan: the cases' plans and the run-wide figures (see the module docstring)."""

    solver: str
    counted: str
    cases: list[CasePlan]
    workers: int = 1
    rpm: float | None = None
    prices: Prices | None = None
    seconds_per_call: tuple[float, float] | None = None
    latency_source: str = ""
    notes: list[str] = field(default_factory=list)

    # --- totals ---------------------------------------------------------------------------------------------------
    def calls(self) -> dict[str, int]:
        out = {"preflight": 0, "design": 0, "coalition": 0}
        for c in self.cases:
            for k, v in c.calls.items():
                out[k] = out.get(k, 0) + v
        return out

    def ceiling(self) -> int:
        return sum(c.ceiling for c in self.cases)

    def floor(self) -> int:
        return sum(c.floor for c in self.cases)

    def tokens_in(self) -> tuple[int, int]:
        """``(expected at the ceiling, most)`` over every case."""
        pairs = [c.tokens_in() for c in self.cases]
        return round(sum(p[0] for p in pairs)), sum(p[1] for p in pairs)

    def tokens_out(self) -> int:
        return sum(c.tokens_out * c.ceiling for c in self.cases)

    def cost(self) -> tuple[float, float] | None:
        """``(expected at the ceiling, most)`` in USD, or ``None`` without prices."""
        if self.prices is None:
            return None
        expected, most = self.tokens_in()
        out = self.tokens_out()
        return self.prices.cost(expected, out), self.prices.cost(most, out)

    def seconds(self) -> tuple[float, float] | None:
        """``(floor calls at the fastest rate, ceiling calls at the slowest)``, or ``None`` when the latency is unknown
        and no ``rpm`` bounds it."""

        def wall(calls: int, per_call: float | None) -> float:
            t = calls * per_call / max(1, self.workers) if per_call is not None else 0.0
            return max(t, 60.0 * calls / self.rpm) if self.rpm else t

        if self.seconds_per_call is None and not self.rpm:
            return None
        lo, hi = self.seconds_per_call or (None, None)
        return wall(self.floor(), lo), wall(self.ceiling(), hi)

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
            "seconds_per_call": list(self.seconds_per_call) if self.seconds_per_call else None,
            "latency_source": self.latency_source,
            "workers": self.workers,
            "rpm": self.rpm,
            "seconds": None if secs is None else {"min": round(secs[0], 1), "max": round(secs[1], 1)},
            "notes": list(self.notes),
            "by_case": [c.to_dict() for c in self.cases],
        }

    def lines(self, max_cases: int = 20) -> list[str]:
        """The plan in 80 columns: a row per case (the first ``max_cases``), then the totals."""
        out = [f"plan: {len(self.cases)} case(s), no call made; tokens {self.counted}"]
        out.append(f"{'case':<30} {'cands':>5} {'calls ≤':>8} {'tokens/call (range)':>20} {'tokens in ≤':>12}")
        for c in self.cases[:max_cases]:
            cid = c.case_id if len(c.case_id) <= 30 else c.case_id[:10] + "…" + c.case_id[-19:]  # ids share prefixes
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
        cost = self.cost()
        if cost is not None and self.prices is not None:
            out.append(
                f"cost    ~${cost[0]:,.2f} (≤${cost[1]:,.2f}) at ${self.prices.input:g}/${self.prices.output:g} per M in/out"
            )
            out.append(f"        prices: {self.prices.source}")
        else:
            out.append("cost    no prices: give --price-in/--price-out (USD per million tokens)")
        secs = self.seconds()
        if secs is None:
            out.append("time    unknown: give --latency (seconds per call) or --rpm")
        else:
            from deltap.mining.progress import _clock_text

            rate = (
                f"{self.seconds_per_call[0]:.2f}–{self.seconds_per_call[1]:.2f} s/call, "
                if self.seconds_per_call
                else ""
            )
            limit = f", ≤{self.rpm:g}/min" if self.rpm else ""
            out.append(f"time    {_clock_text(secs[0])}–{_clock_text(secs[1])} ({rate}{self.workers} worker(s){limit})")
            if self.latency_source:
                out.append(f"        latency: {self.latency_source}")
        out += [f"note    {n}" for n in self.notes]
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
) -> RunPlan:
    """Plan the calls of a run without making any.

    Args:
        cases: The cases.
        pools: ``{case_id: candidate documents}`` (each trial includes each with probability ``cfg.pi``).
        cfg: The run's options (``pi``, ``outcome``, ``budget``, ``preflight``, ``verify_trials``, ``context_order``).
        solver: Counts the tokens (exactly when it is a :class:`~deltap.solvers.base.ContextWindow`); never called.
        ceiling: ``case -> {phase: calls}``; default ``deltap mine``'s (:func:`deltap.mining.procedure.call_ceiling`).
        prices: For the cost (``None``: no cost).
        latency: Seconds per call (``None``: the local model's throughput, else unknown).
        workers: Calls in flight (default ``cfg.workers``).
        rpm: The endpoint's request limit per minute.

    Returns:
        A :class:`RunPlan`.
    """
    from deltap.mining.design import canonical_order
    from deltap.mining.procedure import call_ceiling
    from deltap.mining.runner import request_from_case

    count, how = token_counter(solver)
    deterministic = is_deterministic(solver)
    pre, design, coalition = call_ceiling(cfg, deterministic)
    schedule_floor = int(cfg.schedule(0).looks[0]) if cfg.budget else 0
    max_tokens = solver.max_tokens if isinstance(solver, ContextWindow) else getattr(solver, "max_tokens", None)
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
            mt = dict(max_tokens or {})
            out_tokens = int(mt.get(case.benchmark_type) or mt.get("beir") or FALLBACK_MAX_TOKENS)
        expected = t0 + cfg.pi * added
        # the design's prompts lie between T0 and T_all; a sum of single-document additions can overshoot T_all
        expected = min(max(expected, t0), t_all)
        calls = (
            ceiling(case)
            if ceiling is not None
            else {"preflight": pre, "design": design, "coalition": coalition if docs else 0}
        )
        floor = calls.get("preflight", 0) + min(int(cfg.preflight_confirm), schedule_floor or design) if docs else 0
        plans.append(
            CasePlan(case.case_id, len(docs), calls, min(floor, sum(calls.values())), t0, t_all, expected, out_tokens)
        )
    plan = RunPlan(solver_id(solver), how, plans, workers=int(workers or cfg.workers), rpm=rpm, prices=prices)
    if latency is not None:
        plan.seconds_per_call, plan.latency_source = (float(latency), float(latency)), "given (--latency)"
    elif isinstance(solver, ContextWindow) and plans and solver_id(solver).startswith("llama_cpp:"):
        calls_total = max(1, plan.ceiling())
        per_call_in = plan.tokens_in()[0] / calls_total
        per_call_out = plan.tokens_out() / calls_total
        lo = per_call_in / LOCAL_PROMPT_TOKENS_PER_S[1] + per_call_out / LOCAL_GENERATED_TOKENS_PER_S[1]
        hi = per_call_in / LOCAL_PROMPT_TOKENS_PER_S[0] + per_call_out / LOCAL_GENERATED_TOKENS_PER_S[0]
        plan.seconds_per_call = (lo, hi)
        plan.latency_source = (
            f"the local model's 2-core throughput ({LOCAL_PROMPT_TOKENS_PER_S[0]:g}-{LOCAL_PROMPT_TOKENS_PER_S[1]:g} prompt, "
            f"{LOCAL_GENERATED_TOKENS_PER_S[0]:g}-{LOCAL_GENERATED_TOKENS_PER_S[1]:g} generated tokens/s)"
        )
    if deterministic:
        plan.notes.append("deterministic solver: repeated prompts are answered from the log, so fewer calls")
    if not math.isfinite(plan.tokens_in()[0]):  # pragma: no cover - defensive
        plan.notes.append("token counts unavailable")
    return plan


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
) -> RunPlan:
    """``deltap mine --plan``: draw each case's pool as the run would (gold, retrieved, placebo; fitted to the
    solver's context window) and plan its calls with :func:`plan_calls`. No solver call, nothing written."""
    from deltap.mining.pool import build_pool
    from deltap.mining.runner import fit_context

    pools: dict[str, list[Document]] = {}
    for case in cases:
        pool = build_pool(
            case, corpus, retriever, cfg.k, cfg.n_placebo, cfg.max_candidates, cfg.seed, placebo_kind=cfg.placebo_kind
        )
        pool, _ = fit_context(pool, case, corpus, solver, cfg)  # type: ignore[arg-type]  # a HostedModel has no window
        pools[case.case_id] = [corpus[d] for d in pool.doc_ids]
    return plan_calls(cases, pools, cfg, solver, prices=prices, latency=latency, rpm=rpm)
