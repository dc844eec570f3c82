"""How fast the solver goes on the machine at hand: per-call times measured, turned into a plan's seconds per call,
and the last measurement kept for the next ``--plan``.

A plan's time range used to come from a fixed table of 2-core throughput (:data:`LOCAL_PROMPT_TOKENS_PER_S`): on a busy machine a run spent 2-3× the top of its range. Now the range comes from
calls timed here:

* **What is measured.** :class:`CallTime`: one call's seconds and its prompt / completion tokens. A real run takes
  them from its own first calls (logged and used, not wasted: :meth:`CallTimer.measurement`, fed by the trial
  runner's :class:`~deltap.trials.runner.CallTally`), a resumed run from its trial log's most recent calls
  (:func:`from_log`), ``deltap endtoend`` from its own first two calls, made before its plan and logged for the run
  (:func:`deltap.endtoend.engine.first_trials`) when its log holds none.
* **Scaled to the calls' sizes.** For a solver whose cost grows with its tokens (the local model: the table says how
  the prompt and the generated tokens weigh, :func:`call_units`), each call's seconds are divided by its *units* —
  the seconds the table gives that call on an idle 2-core machine — so the measurement is a **slowdown** against the
  table, and a plan's call of another size costs its own units times that slowdown. Any other solver: seconds per
  call as measured (a hosted call's time hardly follows its prompt).
* **The spread.** The typical slowdown is the ratio of sums (Σ seconds / Σ units: long calls weigh what they
  cost); the range per call is the calls' own quartiles, at least ``typical / 1.25`` to ``typical × 1.25`` (the
  machine's load moves during a run), and ``typical / 1.5`` to ``× 1.5`` from fewer than :data:`MIN_CALLS_FOR_SPREAD`
  calls. Scaling by the tokens *given* ignores the local model's prefix reuse (a design trial evaluates only what
  its cache does not hold: measured, about half its prompt), so the fastest figure is also never above the lower
  quartile of the measured calls' own seconds (``seconds_low``: the cheap calls, such as a prompt without documents,
  are what a call whose documents the cache holds costs); the top stays the scaled one.
* **Wall time.** A run's own calls are also timed on the wall clock (checker, logging, the executor): the
  measurement carries ``overhead``, the wall seconds per call outside the solver, added to every call.
* **Threads.** A measurement is kept per ``(solver, threads)``; the table estimate is scaled by the threads the
  solver really has (``n_threads=1`` on the 2-core table: twice the time, :func:`table_seconds`).
* **The cache.** The last measurement per ``(solver id, threads)`` is kept in ``pace.json`` under the user's cache
  directory (``$DELTAP_PACE_CACHE``, else ``$DELTAP_CACHE_DIR/pace.json``, else ``~/.cache/deltap/pace.json``), written
  by real runs only (:func:`remember`); ``--plan`` reads it (:func:`recall`) and writes nothing.

Where a figure comes from is always said (:meth:`Measurement.source`): ``measured 2.00 s/call (1.60-2.60) on this
machine at 01:14, load 1.3, over 12 calls of this run`` or ``no measurement yet: a 2-core table estimate, may be off
by 2-6×``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "LOCAL_GENERATED_TOKENS_PER_S",
    "LOCAL_PROMPT_TOKENS_PER_S",
    "MEASURE_AFTER",
    "MIN_CALLS_FOR_SPREAD",
    "CallTime",
    "CallTimer",
    "Measurement",
    "call_units",
    "from_log",
    "pace_cache_path",
    "recall",
    "remember",
    "solver_threads",
    "table_seconds",
    "table_source",
]

#: a run re-measures its pace once this many of its own calls are timed (then prints the time line again)
MEASURE_AFTER = 6
#: fewer calls than this: the range per call is typical / 1.5 to typical × 1.5, not the calls' quartiles
MIN_CALLS_FOR_SPREAD = 5
#: the narrowest range per call around the typical figure (the machine's load moves during a run)
MIN_SPREAD = 1.25
#: the range from a handful of calls
FEW_CALLS_SPREAD = 1.5
#: the table's cores: its throughput was measured on 2 cores
TABLE_CORES = 2
#: how far a table estimate may be off on a busy machine (the issue measured 2-3×; said in the source)
TABLE_CAVEAT = "may be off by 2-6×"


#: prompt tokens per second of the local SmolLM2-135M on 2 cores (docs/DESIGN: 320-390 measured here), a range
LOCAL_PROMPT_TOKENS_PER_S = (320.0, 390.0)
#: generated tokens per second of the same model on 2 cores (a range; see benchmarks/README.md)
LOCAL_GENERATED_TOKENS_PER_S = (40.0, 80.0)


def _table_rates() -> tuple[tuple[float, float], tuple[float, float]]:
    return LOCAL_PROMPT_TOKENS_PER_S, LOCAL_GENERATED_TOKENS_PER_S


def solver_threads(solver: Any) -> int | None:
    """The CPU threads a local solver computes with (``n_threads``; wrappers are looked through), ``None`` for a
    solver without threads (hosted, simulated)."""
    seen = 0
    while solver is not None and seen < 5:
        n = getattr(solver, "n_threads", None)
        if isinstance(n, int) and n > 0:
            return n
        solver = getattr(solver, "inner", None) or getattr(solver, "solver", None)
        seen += 1
    return None


def _thread_factor(threads: int | None, cores: int | None = None) -> float:
    """How much slower than the 2-core table: ``TABLE_CORES / min(threads, cores)`` (1 without threads)."""
    if threads is None:
        return 1.0
    cores = cores if cores is not None else (os.cpu_count() or TABLE_CORES)
    return TABLE_CORES / max(1, min(threads, cores))


def call_units(tokens_in: float, tokens_out: float) -> float:
    """A call's *units*: the seconds the 2-core table gives it at its middle rates (prompt and generated tokens)."""
    prompt, generated = _table_rates()
    return tokens_in / (sum(prompt) / 2) + tokens_out / (sum(generated) / 2)


def table_seconds(
    tokens_in: float, tokens_out: float, threads: int | None = None, cores: int | None = None
) -> tuple[float, float]:
    """``(fastest, slowest)`` seconds of a local-model call from the 2-core table, scaled by the threads the solver
    has (``n_threads=1``: twice the table's time)."""
    prompt, generated = _table_rates()
    f = _thread_factor(threads, cores)
    lo = tokens_in / prompt[1] + tokens_out / generated[1]
    hi = tokens_in / prompt[0] + tokens_out / generated[0]
    return lo * f, hi * f


def table_source(threads: int | None = None, cores: int | None = None) -> str:
    """Where a table estimate comes from, with its caveat (and the threads' scaling when it is not 1)."""
    prompt, generated = _table_rates()
    f = _thread_factor(threads, cores)
    scaled = f" × {f:g} for n_threads={threads}" if f != 1 else ""
    return (
        f"no measurement yet: a 2-core table estimate ({prompt[0]:g}-{prompt[1]:g} prompt, {generated[0]:g}-"
        f"{generated[1]:g} generated tokens/s{scaled}), {TABLE_CAVEAT}; a run measures its first calls"
    )


@dataclass(frozen=True)
class CallTime:
    """One timed call: ``seconds`` of solver time, its prompt and completion tokens (``None``: not counted), and
    which trial it was (``kind``, ``case``; ``None``: not said). A call that failed has ``seconds`` 0 (counted, not
    timed)."""

    seconds: float
    tokens_in: int | None = None
    tokens_out: int | None = None
    kind: str | None = None
    case: str | None = None


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(s) - 1)
    return s[i] + (s[j] - s[i]) * (pos - i)


@dataclass(frozen=True)
class Measurement:
    """A solver's measured pace on this machine.

    Attributes:
        solver: The solver id.
        threads: Its CPU threads (``None``: none, a hosted or simulated solver).
        per_unit: ``(low, typical, high)``: seconds per call when ``scaled`` is false, else the slowdown against
            the table (seconds per table-second, :func:`call_units`).
        scaled: Whether calls are scaled by their tokens.
        calls: Calls measured.
        tokens_in / tokens_out: Mean tokens of the measured calls (``None``: not counted).
        overhead: Wall seconds per call outside the solver (checker, log, executor; 0 when unknown).
        seconds_low: The lower quartile of the measured calls' own seconds (``typical / 1.5`` of them from fewer
            than :data:`MIN_CALLS_FOR_SPREAD`): the fastest figure of a scaled measurement is never above it.
        when: When it was measured (epoch seconds).
        load: The 1-minute load average then (``None``: unknown).
        origin: Which calls (``of this run``, ``in the trial log``, ``made first by this run``).
    """

    solver: str
    threads: int | None
    per_unit: tuple[float, float, float]
    scaled: bool
    calls: int
    tokens_in: float | None = None
    tokens_out: float | None = None
    overhead: float = 0.0
    when: float = 0.0
    load: float | None = None
    origin: str = "of this run"
    seconds_low: float | None = None

    @classmethod
    def of(
        cls,
        calls: Iterable[CallTime],
        solver: str,
        threads: int | None,
        scaled: bool,
        *,
        wall_seconds: float | None = None,
        origin: str = "of this run",
        when: float | None = None,
        load: float | None = None,
    ) -> Measurement | None:
        """The measurement of ``calls`` (``None`` when none took time). ``scaled``: divide each call by its units
        (:func:`call_units`; calls without token counts make it unscaled). ``wall_seconds``: the wall time the calls
        took, for ``overhead``."""
        got = [c for c in calls if c.seconds > 0 and math.isfinite(c.seconds)]
        if not got:
            return None
        scaled = scaled and all(c.tokens_in is not None for c in got)
        units = [call_units(c.tokens_in or 0, c.tokens_out or 0) if scaled else 1.0 for c in got]
        if scaled and min(units) <= 0:
            scaled, units = False, [1.0] * len(got)
        ratios = [c.seconds / u for c, u in zip(got, units, strict=True)]
        typical = sum(c.seconds for c in got) / sum(units)
        spread = FEW_CALLS_SPREAD if len(got) < MIN_CALLS_FOR_SPREAD else MIN_SPREAD
        low, high = typical / spread, typical * spread
        if len(got) >= MIN_CALLS_FOR_SPREAD:
            low, high = min(low, _quantile(ratios, 0.25)), max(high, _quantile(ratios, 0.75))
        solver_s = sum(c.seconds for c in got)
        overhead = max(0.0, (wall_seconds - solver_s) / len(got)) if wall_seconds else 0.0
        raw = [c.seconds for c in got]
        low_raw = _quantile(raw, 0.25) if len(got) >= MIN_CALLS_FOR_SPREAD else min(raw) / FEW_CALLS_SPREAD
        tin = [c.tokens_in for c in got if c.tokens_in is not None]
        tout = [c.tokens_out for c in got if c.tokens_out is not None]
        return cls(
            solver, threads, (low, typical, high), scaled, len(got),
            sum(tin) / len(tin) if tin else None, sum(tout) / len(tout) if tout else None, round(overhead, 4),
            time.time() if when is None else when, _load() if load is None else load, origin, round(low_raw, 4),
        )  # fmt: skip

    def seconds_per_call(self, tokens_in: float | None = None, tokens_out: float = 0.0) -> tuple[float, float]:
        """``(fastest, slowest)`` wall seconds of a call with these tokens (unscaled: of any call)."""
        lo, _, hi = self.per_unit
        u = call_units(tokens_in, tokens_out) if self.scaled and tokens_in is not None else 1.0
        if self.scaled and tokens_in is None:  # no size given: the measured calls' own
            u = call_units(self.tokens_in or 0, self.tokens_out or 0)
        fastest = lo * u
        if self.scaled and self.seconds_low is not None:  # prefix reuse: a call can cost what the cheap ones did
            fastest = min(fastest, self.seconds_low)
        return fastest + self.overhead, hi * u + self.overhead

    def typical_seconds(self) -> float:
        """Wall seconds of a typical measured call."""
        u = call_units(self.tokens_in or 0, self.tokens_out or 0) if self.scaled else 1.0
        return self.per_unit[1] * u + self.overhead

    def source(self, tokens_in: float | None = None) -> str:
        """``measured 2.00 s/call (1.60-2.60) on this machine at 01:14, load 1.3, over 12 calls of this run`` and,
        when the plan's calls differ in size, that they are scaled."""
        lo, hi = self.seconds_per_call()
        at = time.strftime("%H:%M", time.localtime(self.when)) if self.when else "?"
        day = time.strftime("%Y-%m-%d ", time.localtime(self.when)) if time.time() - self.when > 20 * 3600 else ""
        load = f", load {self.load:.1f}" if self.load is not None else ""
        threads = f", n_threads={self.threads}" if self.threads is not None else ""
        wall = f" (+{self.overhead:.2f} s/call outside the solver)" if self.overhead >= 0.005 else ""
        text = (
            f"measured {self.typical_seconds():.2f} s/call ({lo:.2f}-{hi:.2f}) on this machine at {day}{at}{load}"
            f"{threads}, over {self.calls} call(s) {self.origin}{wall}"
        )
        if self.scaled and self.tokens_in is not None:
            text += f"; {self.tokens_in:,.0f} prompt tokens/call measured, scaled to the plan's"
            if tokens_in is not None:
                text += f" {tokens_in:,.0f}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        return cls(**{**d, "per_unit": tuple(float(x) for x in d["per_unit"])})


def _load() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):  # pragma: no cover - not on every platform
        return None


class CallTimer:
    """The calls a run makes, timed as they come back (the trial runner adds each one): solver seconds, tokens, and
    the wall clock from the first call. Thread-safe."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self.started: float | None = None
        self.last: float | None = None
        self.calls: list[CallTime] = []

    def begin(self) -> None:
        """A batch of calls is sent (the wall clock starts at the first)."""
        with self._lock:
            if self.started is None:
                self.started = self._clock()

    def add(self, call: CallTime) -> None:
        with self._lock:
            self.calls.append(call)
            self.last = self._clock()

    def __len__(self) -> int:
        return len(self.calls)

    def measurement(
        self, solver: str, threads: int | None, scaled: bool, kinds: Any = None, origin: str = "of this run"
    ) -> Measurement | None:
        """The calls timed so far, with their wall time; ``kinds(kind) -> bool`` keeps only some trials (their wall
        time is then not known: no overhead)."""
        with self._lock:
            calls = [c for c in self.calls if kinds is None or kinds(c.kind)]
            wall = None if self.started is None or self.last is None or kinds else self.last - self.started
        return Measurement.of(calls, solver, threads, scaled, wall_seconds=wall, origin=origin)

    def snapshot(self) -> list[CallTime]:
        """The calls so far (a copy)."""
        with self._lock:
            return list(self.calls)


def from_log(rows: Sequence[tuple[float | None, int | None, int | None, float | None]], solver: str,
             threads: int | None, scaled: bool, recent: int = 64) -> Measurement | None:  # fmt: skip
    """A resumed run's measurement: the ``recent`` most recent calls of its trial log, ``(latency, prompt tokens,
    completion tokens, created)`` rows (trials answered from a cache have no latency and are left out)."""
    got = [r for r in rows if r[0] is not None and r[0] > 0]
    got.sort(key=lambda r: r[3] or 0.0)
    got = got[-recent:]
    if not got:
        return None
    calls = [CallTime(float(r[0] or 0.0), r[1], r[2]) for r in got]
    when = max((r[3] or 0.0) for r in got) or None
    return Measurement.of(calls, solver, threads, scaled, origin="in the trial log (its latest)", when=when, load=None)


def pace_cache_path() -> Path:
    """``$DELTAP_PACE_CACHE``, else ``pace.json`` in ``$DELTAP_CACHE_DIR`` or ``~/.cache/deltap``."""
    env = os.environ.get("DELTAP_PACE_CACHE")
    if env:
        return Path(env).expanduser()
    from deltap.retrieval.cache import default_cache_dir

    return default_cache_dir() / "pace.json"


def _key(solver: str, threads: int | None) -> str:
    return f"{solver}|threads={threads if threads is not None else '-'}"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(solver: str, threads: int | None, path: Path | None = None) -> Measurement | None:
    """The last measurement kept for ``(solver, threads)``, ``None`` when there is none (or the file is unreadable).
    Reads only."""
    entry = _read(path or pace_cache_path()).get(_key(solver, threads))
    if not isinstance(entry, dict):
        return None
    try:
        m = Measurement.from_dict(entry)
    except (TypeError, ValueError, KeyError):
        return None
    return replace(m, origin=f"of an earlier run (kept in the cache, {(path or pace_cache_path()).name})")


def remember(m: Measurement, path: Path | None = None) -> None:
    """Keep ``m`` as the last measurement of its ``(solver, threads)`` (a real run's; an unwritable cache is
    skipped silently: the run does not depend on it)."""
    from deltap._io import write_text_atomic
    from deltap.errors import DeltapError

    target = path or pace_cache_path()
    data = _read(target)
    data[_key(m.solver, m.threads)] = m.to_dict()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, json.dumps(data, indent=2, sort_keys=True) + "\n")
    except (OSError, DeltapError):  # a full disk, a read-only home: the run goes on without it
        pass
