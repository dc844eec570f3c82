"""What a run spent, and what tokens cost: per case and in total, read from the trial log.

Every figure comes from the logged trials, so a resumed run adds up over every session that wrote to the log (as
the solver time of the report does): **calls** (logged trials that were solver calls: a deterministic solver's
repeats answered from its earlier answer are not), **tokens in / out** (as the solver counted them: the local model
its exact prompt tokens, a hosted API the usage it reported; trials of a log written before tokens were recorded, or
of a solver that reports none, count as *not counted* and the figure says how many calls it covers), **solver
seconds** (the sum of the calls' latencies) and the **cost** at the prices given (per million tokens).

Prices are :func:`deltap.trials.prices.prices_for`'s: the user's (``--price-in`` / ``--price-out``), else the dated
list price the hosted provider's registration declares; the local model costs nothing but time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltap.trials.runner import is_cached

if TYPE_CHECKING:
    from deltap.trials.log import TrialLog, TrialRecord
    from deltap.trials.prices import Prices

__all__ = ["Spend", "case_spend", "log_spend", "spend_line"]


@dataclass
class Spend:
    """Calls, tokens and solver seconds of some trials (one case, or a whole run)."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    counted_calls: int = 0  # calls whose tokens the solver reported
    solver_seconds: float = 0.0

    def add(self, other: Spend) -> None:
        self.calls += other.calls
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.counted_calls += other.counted_calls
        self.solver_seconds += other.solver_seconds

    def to_dict(self, prices: Prices | None = None) -> dict[str, Any]:
        """``calls``, ``tokens_in``, ``tokens_out`` (``None`` when no call was counted), ``tokens_counted_calls``,
        ``solver_seconds`` and, with prices, ``cost_usd`` (of the counted calls)."""
        counted = self.counted_calls > 0
        out: dict[str, Any] = {
            "calls": self.calls,
            "tokens_in": self.tokens_in if counted else None,
            "tokens_out": self.tokens_out if counted else None,
            "tokens_counted_calls": self.counted_calls,
            "solver_seconds": round(self.solver_seconds, 3),
        }
        if prices is not None and counted:
            out["cost_usd"] = round(prices.cost(self.tokens_in, self.tokens_out), 6)
        return out


def case_spend(records: Iterable[TrialRecord]) -> Spend:
    """What the trials ``records`` spent (trials answered from a deterministic solver's earlier answer cost nothing)."""
    out = Spend()
    for r in records:
        if is_cached(r):
            continue
        out.calls += 1
        out.solver_seconds += float(r.latency or 0.0)
        if r.prompt_tokens is not None:
            out.counted_calls += 1
            out.tokens_in += int(r.prompt_tokens)
            out.tokens_out += int(r.completion_tokens or 0)
    return out


def log_spend(log: TrialLog, case_ids: Iterable[str], prices: Prices | None = None) -> dict[str, Any]:
    """The ``spend`` section of ``run.json``: the total and ``by_case`` (see :meth:`Spend.to_dict`), over every
    session that wrote to ``log``, with the prices used."""
    total = Spend()
    by_case: dict[str, Any] = {}
    for cid in case_ids:
        s = case_spend(log.trials(cid))
        total.add(s)
        by_case[cid] = s.to_dict(prices)
    out = {**total.to_dict(prices), "by_case": by_case}
    if prices is not None:
        out["prices"] = prices.to_dict()
    return out


def spend_line(spend: Mapping[str, Any]) -> str:
    """``spent 288 calls · 412,300 tokens in / 2,310 out · $0.07 · 1,012 s solver time`` over every session (one line,
    under 80 columns for any realistic run; no cost for free prices)."""
    parts = [f"spent {int(spend.get('calls') or 0):,} calls"]
    if spend.get("tokens_in") is not None:
        parts.append(f"{int(spend['tokens_in']):,} tokens in / {int(spend.get('tokens_out') or 0):,} out")
    prices = spend.get("prices") or {}
    free = not prices.get("usd_per_million_in") and not prices.get("usd_per_million_out")
    if spend.get("cost_usd") is not None and not free:  # the local model's $0.00 says nothing
        parts.append(f"${float(spend['cost_usd']):,.2f}")
    parts.append(f"{float(spend.get('solver_seconds') or 0):,.0f} s solver time")
    return " · ".join(parts)
