"""What every plan of trials shares (``deltap mine --plan``, ``deltap endtoend --plan``): how fast the calls go
(:class:`Pace`: seconds per call, where that figure comes from, calls in flight, the endpoint's request limit), the
time range it gives (:meth:`Pace.seconds`, the one place it is computed), and the one writer of a plan's cost and
time lines (:func:`cost_lines`, :func:`time_lines`).

Seconds per call are the ones given (``--latency``), else a measurement of the solver on this machine
(:class:`deltap.trials.pace.Measurement`: the run's own first calls, its trial log's latest, a calibration, or the
last one kept in the user's cache), scaled to the plan's tokens per call, else for the local model its tokens at the
2-core table (:data:`LOCAL_PROMPT_TOKENS_PER_S`, generation at :data:`LOCAL_GENERATED_TOKENS_PER_S`) scaled by its
threads and said to be a table estimate, else unknown (:func:`plan_pace`); calls run ``workers`` at a time, and never
faster than ``rpm`` per minute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltap._ticker import clock_text
from deltap.errors import DeltapError
from deltap.trials.pace import LOCAL_GENERATED_TOKENS_PER_S, LOCAL_PROMPT_TOKENS_PER_S

if TYPE_CHECKING:
    from collections.abc import Sequence

    from deltap.trials.pace import Measurement
    from deltap.trials.prices import Prices

__all__ = [
    "LOCAL_GENERATED_TOKENS_PER_S",
    "LOCAL_LATENCY_SOURCE",
    "LOCAL_PROMPT_TOKENS_PER_S",
    "Pace",
    "clock_text",
    "cost_lines",
    "local_latency",
    "measured_pace",
    "scales_with_tokens",
    "note_lines",
    "plan_pace",
    "time_lines",
    "time_range",
]

#: where a plan's seconds per call come from when they are the local model's 2-core table (no measurement yet)
LOCAL_LATENCY_SOURCE = (
    f"no measurement yet: a 2-core table estimate ({LOCAL_PROMPT_TOKENS_PER_S[0]:g}-{LOCAL_PROMPT_TOKENS_PER_S[1]:g} "
    f"prompt, {LOCAL_GENERATED_TOKENS_PER_S[0]:g}-{LOCAL_GENERATED_TOKENS_PER_S[1]:g} generated tokens/s), may be off "
    "by 2-6×; a run measures its first calls"
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


def scales_with_tokens(solver: Any) -> bool:
    """Whether the solver is the local llama.cpp model, whose call time follows its tokens (the 2-core table)."""
    from deltap.solvers.base import ContextWindow, solver_id  # deferred: the progress display imports this module

    return isinstance(solver, ContextWindow) and solver_id(solver).startswith("llama_cpp:")


def local_latency(solver: Any, tokens_in_per_call: float, tokens_out_per_call: float) -> tuple[float, float] | None:
    """Seconds per call of the local llama.cpp model from the 2-core table, scaled by the threads it has
    (:func:`deltap.trials.pace.table_seconds`; ``None`` for any other solver)."""
    from deltap.trials.pace import solver_threads, table_seconds

    if not scales_with_tokens(solver):
        return None
    return table_seconds(tokens_in_per_call, tokens_out_per_call, solver_threads(solver))


def measured_pace(solver: Any, logged: Sequence[tuple[Any, ...]] = ()) -> Measurement | None:
    """What is known of this solver's pace on this machine, read only: its ``logged`` calls (a resumed run's trial
    log, :meth:`deltap.trials.log.TrialLog.recent_calls`, with the overhead of the last measurement kept), else
    the last measurement of this solver (same id, same threads) kept in the user's cache
    (:func:`deltap.trials.pace.recall`), else ``None``."""
    from dataclasses import replace

    from deltap.solvers.base import solver_id
    from deltap.trials.pace import from_log, recall, solver_threads

    name, threads = solver_id(solver), solver_threads(solver)
    kept = recall(name, threads)
    m = from_log(logged, name, threads, scales_with_tokens(solver)) if logged else None
    if m is not None and kept is not None:
        m = replace(m, overhead=kept.overhead)
    return m or kept


@dataclass(frozen=True)
class Pace:
    """How fast a run's calls go.

    Attributes:
        seconds_per_call: ``(fastest, slowest)`` seconds per call, or ``None`` (unknown).
        source: Where that figure comes from (``given (--latency)``, ``measured 2.00 s/call … on this machine``, a
            table estimate...).
        workers: Calls in flight.
        rpm: The endpoint's request limit per minute (``None``: none).
        measurement: The measurement behind the figure (``None``: given, a table estimate, or unknown).
    """

    seconds_per_call: tuple[float, float] | None = None
    source: str = ""
    workers: int = 1
    rpm: float | None = None
    measurement: Measurement | None = None

    def seconds(self, floor_calls: int, ceiling_calls: int) -> tuple[float, float] | None:
        """Wall seconds of ``floor_calls`` at the fastest rate to ``ceiling_calls`` at the slowest (:func:`time_range`);
        ``None`` when neither the latency nor ``rpm`` is known."""
        return time_range(floor_calls, ceiling_calls, self.seconds_per_call, self.workers, self.rpm)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds_per_call": list(self.seconds_per_call) if self.seconds_per_call else None,
            "latency_source": self.source,
            "latency_measured": self.measurement.to_dict() if self.measurement is not None else None,
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
    measured: Measurement | None = None,
) -> Pace:
    """A plan's :class:`Pace`: ``latency`` seconds per call when given, else the ``measured`` pace scaled to these
    tokens per call (:meth:`deltap.trials.pace.Measurement.seconds_per_call`), else the local model's 2-core table
    at these tokens scaled by its threads (:func:`local_latency`), else unknown (``tokens_in_per_call`` ``None``: no
    call is planned).

    Raises:
        DeltapError: a negative ``latency``.
    """
    if latency is not None:
        if latency < 0:
            raise DeltapError(f"--latency must be seconds per call (>= 0), got {latency}")
        return Pace((float(latency), float(latency)), "given (--latency)", workers, rpm)
    if tokens_in_per_call is None:
        return Pace(None, "", workers, rpm)
    if measured is not None:
        per = measured.seconds_per_call(tokens_in_per_call, tokens_out_per_call)
        return Pace(per, measured.source(tokens_in_per_call), workers, rpm, measured)
    local = local_latency(solver, tokens_in_per_call, tokens_out_per_call)
    if local is not None:
        from deltap.trials.pace import solver_threads, table_source

        return Pace(local, table_source(solver_threads(solver)), workers, rpm)
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
        out += _wrapped("latency: " + pace.source, "        ")
    return out


def _wrapped(text: str, indent: str, width: int = 80) -> list[str]:
    import textwrap

    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False,
        break_long_words=False,
    )  # fmt: skip


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
