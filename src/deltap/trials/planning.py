"""What every plan of trials shares (``deltap mine --plan``, ``deltap endtoend --plan``): how fast the calls go
(:class:`Pace`: seconds per call, where that figure comes from, calls in flight, the endpoint's request limit), the
time range it gives (:meth:`Pace.seconds`, the one place it is computed), and the one writer of a plan's cost and
time lines (:func:`cost_lines`, :func:`time_lines`).

Seconds per call are the ones given (``--latency``), else for the local model its prompt tokens at the 2-core
throughput measured here (:data:`LOCAL_PROMPT_TOKENS_PER_S`, generation at :data:`LOCAL_GENERATED_TOKENS_PER_S`),
else unknown (:func:`plan_pace`); calls run ``workers`` at a time, and never faster than ``rpm`` per minute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltap._ticker import clock_text
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from deltap.trials.prices import Prices

__all__ = [
    "LOCAL_GENERATED_TOKENS_PER_S",
    "LOCAL_LATENCY_SOURCE",
    "LOCAL_PROMPT_TOKENS_PER_S",
    "Pace",
    "clock_text",
    "cost_lines",
    "local_latency",
    "note_lines",
    "plan_pace",
    "time_lines",
    "time_range",
]

#: prompt tokens per second of the local SmolLM2-135M on 2 cores (docs/DESIGN: 320-390 measured here), a range
LOCAL_PROMPT_TOKENS_PER_S = (320.0, 390.0)
#: generated tokens per second of the same model on 2 cores (a range; see benchmarks/README.md)
LOCAL_GENERATED_TOKENS_PER_S = (40.0, 80.0)
#: where a plan's seconds per call come from when they are the local model's throughput
LOCAL_LATENCY_SOURCE = (
    f"the local model's 2-core throughput ({LOCAL_PROMPT_TOKENS_PER_S[0]:g}-{LOCAL_PROMPT_TOKENS_PER_S[1]:g} prompt, "
    f"{LOCAL_GENERATED_TOKENS_PER_S[0]:g}-{LOCAL_GENERATED_TOKENS_PER_S[1]:g} generated tokens/s)"
)


def time_range(
    floor_calls: int,
    ceiling_calls: int,
    seconds_per_call: tuple[float, float] | None,
    workers: int,
    rpm: float | None,
) -> tuple[float, float] | None:
    """``(floor calls at the fastest rate, ceiling calls at the slowest)`` in wall seconds: calls run ``workers`` at a
    time and never faster than ``rpm`` per minute; ``None`` when neither the latency nor ``rpm`` is known."""

    def wall(calls: int, per_call: float | None) -> float:
        t = calls * per_call / max(1, workers) if per_call is not None else 0.0
        return max(t, 60.0 * calls / rpm) if rpm else t

    if seconds_per_call is None and not rpm:
        return None
    lo, hi = seconds_per_call or (None, None)
    return wall(floor_calls, lo), wall(ceiling_calls, hi)


def local_latency(solver: Any, tokens_in_per_call: float, tokens_out_per_call: float) -> tuple[float, float] | None:
    """Seconds per call of the local llama.cpp model from its 2-core throughput (``None`` for any other solver)."""
    from deltap.solvers.base import ContextWindow, solver_id  # deferred: the progress display imports this module

    if not (isinstance(solver, ContextWindow) and solver_id(solver).startswith("llama_cpp:")):
        return None
    lo = tokens_in_per_call / LOCAL_PROMPT_TOKENS_PER_S[1] + tokens_out_per_call / LOCAL_GENERATED_TOKENS_PER_S[1]
    hi = tokens_in_per_call / LOCAL_PROMPT_TOKENS_PER_S[0] + tokens_out_per_call / LOCAL_GENERATED_TOKENS_PER_S[0]
    return lo, hi


@dataclass(frozen=True)
class Pace:
    """How fast a run's calls go.

    Attributes:
        seconds_per_call: ``(fastest, slowest)`` seconds per call, or ``None`` (unknown).
        source: Where that figure comes from (``given (--latency)``, the local model's throughput...).
        workers: Calls in flight.
        rpm: The endpoint's request limit per minute (``None``: none).
    """

    seconds_per_call: tuple[float, float] | None = None
    source: str = ""
    workers: int = 1
    rpm: float | None = None

    def seconds(self, floor_calls: int, ceiling_calls: int) -> tuple[float, float] | None:
        """Wall seconds of ``floor_calls`` at the fastest rate to ``ceiling_calls`` at the slowest (:func:`time_range`);
        ``None`` when neither the latency nor ``rpm`` is known."""
        return time_range(floor_calls, ceiling_calls, self.seconds_per_call, self.workers, self.rpm)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds_per_call": list(self.seconds_per_call) if self.seconds_per_call else None,
            "latency_source": self.source,
            "workers": self.workers,
            "rpm": self.rpm,
        }


def plan_pace(
    solver: Any,
    latency: float | None,
    workers: int,
    rpm: float | None,
    tokens_in_per_call: float | None = None,
    tokens_out_per_call: float = 0.0,
) -> Pace:
    """A plan's :class:`Pace`: ``latency`` seconds per call when given, else the local model's throughput at these
    tokens per call (:func:`local_latency`; ``tokens_in_per_call`` ``None``: no call is planned), else unknown.

    Raises:
        DeltapError: a negative ``latency``.
    """
    if latency is not None:
        if latency < 0:
            raise DeltapError(f"--latency must be seconds per call (>= 0), got {latency}")
        return Pace((float(latency), float(latency)), "given (--latency)", workers, rpm)
    local = None if tokens_in_per_call is None else local_latency(solver, tokens_in_per_call, tokens_out_per_call)
    if local is not None:
        return Pace(local, LOCAL_LATENCY_SOURCE, workers, rpm)
    return Pace(None, "", workers, rpm)


def cost_lines(cost: tuple[float, float] | None, prices: Prices | None) -> list[str]:
    """``cost    ~$1.20 (≤$1.90) at $0.15/$0.6 per M in/out`` and where the prices come from (80 columns); the hint
    to give prices when there are none. ``cost`` is ``(expected, most)`` in USD (completion tokens at their ceiling)."""
    if cost is None or prices is None:
        return ["cost    no prices: give --price-in/--price-out (USD per million tokens)"]
    expected, most = cost
    amount = f"~${expected:,.2f}" + (f" (≤${most:,.2f})" if f"{most:,.2f}" != f"{expected:,.2f}" else "")
    return [
        f"cost    {amount} at ${prices.input:g}/${prices.output:g} per M in/out",
        f"        prices: {prices.source}",
    ]


def time_lines(secs: tuple[float, float] | None, pace: Pace, what: str = "") -> list[str]:
    """``time    4:05–12:30 (0.50–0.80 s/call, 2 worker(s), ≤30/min)`` and where the latency comes from; the hint to
    give one when the time is unknown. ``what`` follows the range (``" left"`` for a resumed run)."""
    if secs is None:
        return ["time    unknown: give --latency (seconds per call) or --rpm"]
    per = pace.seconds_per_call
    rate = f"{per[0]:.2f}–{per[1]:.2f} s/call, " if per else ""
    limit = f", ≤{pace.rpm:g}/min" if pace.rpm else ""
    out = [f"time    {clock_text(secs[0])}–{clock_text(secs[1])}{what} ({rate}{pace.workers} worker(s){limit})"]
    if pace.source:
        out.append(f"        latency: {pace.source}")
    return out


def note_lines(notes: Sequence[str], width: int = 80) -> list[str]:
    """A plan's notes, each ``note    …`` wrapped at ``width`` columns (continued under its text)."""
    import textwrap

    out: list[str] = []
    for note in notes:
        out += textwrap.wrap(
            note,
            width,
            initial_indent="note    ",
            subsequent_indent="        ",
            break_on_hyphens=False,
            break_long_words=False,
        )
    return out
