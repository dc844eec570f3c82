"""Progress display for ``deltap mine`` and ``deltap demo``, fed by the mining engine's ``progress`` callback.

What it shows (and why each figure can be trusted):

* **calls** — solver calls made by this process, against the most the run can still make (``of ≤N``). The ceiling
  is :func:`planned_calls` per case (preflight + design trials + coalition check); it shrinks as cases stop early,
  so the bar ends exactly where the run ends. Trials already in the trial log (a resumed run) cost no call.
* **the plan** — ``mine()`` plans the run before its first call (:mod:`deltap.mining.plan`; the ``plan`` event):
  the display prints the plan's compact block first, caps its call ceiling at the plan's (a resumed run: minus the
  calls already logged) and shows tokens and cost *against the plan*.
* **tokens** — prompt and completion tokens of those calls as the solver counted them (the events' ``tokens_in`` /
  ``tokens_out``) against the plan's expected prompt tokens and its completion ceiling, and their cost at the run's
  prices against the plan's expected cost: ``tokens 48k/~66k in · 310/≤2.0k out · $0.01/~$0.03``.
* **rate and time left** — seconds per call measured on this run (wall time / calls), and the time the remaining
  ceiling takes at that rate: an upper bound (``≤``), because adaptive stopping usually ends cases sooner.
* **how replies were read** — of the replies a checker judged in this process, those it read from the reply's
  declared ``Answer:`` line (``38/40 declared``) and those it found no answer in (``3/40 unreadable``; with declared
  ones: ``38/40 declared, 1 unreadable``), each shown once there is one (:mod:`deltap.mining.readability`). Unreadable
  replies are not wrong answers but replies the checker could not read — a growing share means the checker, not the
  documents, is deciding the outcomes; few declared answers where the prompt asks for the line mean the model is not
  following it.
* **the current case** — its full id (wrapped, never cut), the phase (preflight, design trials, coalition check),
  trials against the case's trial budget, and how many of its candidates are still *undecided* (no label yet;
  the case stops when none is left or its budget is spent).
* **cases in flight** — a run that mines several cases at once (``cases_in_flight``, events carry ``in_flight``)
  counts each active case's remaining ceiling, shows how many are in flight, and the case of the latest event.
* **after the last case** — the dataset-wide step (Benjamini–Hochberg over every candidate, the placebo check on
  the placebo documents) and the coalition checks, which make calls of their own.

On a terminal the display redraws in place (rich ``Live``). Sent to a file or a pipe, it prints one plain line instead
(:class:`~deltap._ticker.PlainTicker`) every ``interval`` seconds (``$DELTAP_PROGRESS_EVERY``, default 30) and at each case's end::

    progress 2:30 elapsed · calls 120 of ≤1,886 · cases 3 of 41 done · 1.25 s/call · ≤37:10 left
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deltap._ticker import PlainTicker, clock_text, plain_interval

__all__ = ["CallPlan", "MiningProgress", "PlainTicker", "clock_text", "plain_interval", "planned_calls", "short_count"]


@dataclass(frozen=True)
class CallPlan:
    """The most solver calls one case can make, by phase.

    Attributes:
        preflight: Calls before the design trials (``preflight`` trials with no document and with every one).
        design: Design trials (the trial budget; adaptive stopping may use fewer).
        coalition: Calls verifying a winning coalition (only cases with a relevant document make them).
        preflight_confirm: Calls of an extended preflight (a case that looks saturated is confirmed, then skipped
            without design trials, so it never exceeds :attr:`per_case`).
    """

    preflight: int
    design: int
    coalition: int
    preflight_confirm: int = 0

    @property
    def per_case(self) -> int:
        """The ceiling of one case: ``preflight + design + coalition`` (or the confirmation, if larger)."""
        return max(self.preflight + self.design + self.coalition, self.preflight_confirm)

    def describe(self) -> str:
        """``≤33 solver calls (4 preflight, ≤25 trials, ≤4 coalition check)``."""
        parts = [f"{self.preflight} preflight", f"≤{self.design} trials"]
        if self.coalition:
            parts.append(f"≤{self.coalition} coalition check")
        return f"≤{self.per_case} solver calls ({', '.join(parts)})"


def planned_calls(config: Any, deterministic: bool = False) -> CallPlan:
    """The per-case call ceiling of a :class:`~deltap.mining.config.MiningConfig` (one source for every display).

    The figures come from the procedure itself (:func:`deltap.mining.procedure.call_ceiling`): ``preflight`` calls
    with no document and with every candidate (one each for a deterministic solver), the design-trial ``budget``
    (the preflight's confirming subsets are design trials), and the coalition checks of a case with a relevant
    document (``verify_trials`` calls for a deterministic solver, twice that for a stochastic one).
    """
    from deltap.mining.procedure import call_ceiling

    pre, design, coalition = call_ceiling(config, deterministic)
    return CallPlan(preflight=pre, design=design, coalition=coalition)


def short_count(n: float) -> str:
    """``950``, ``48k``, ``1.2M``: a token count in a few characters (the progress display)."""
    n = float(n)
    if n < 1000:
        return f"{n:.0f}"
    if n < 1e6:
        return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n / 1e3:.1f}k"
    return f"{n / 1e6:.1f}M"


def _bar(done: float, total: float, width: int = 24) -> str:
    share = 0.0 if total <= 0 else min(1.0, max(0.0, done / total))
    full = int(round(share * width))
    return "━" * full + "╺" * (width - full)


class MiningProgress:
    """A live progress display fed by the mining engine's progress callback (see the module docstring).

    Args:
        n_cases: Cases the run mines.
        enabled: ``False`` shows nothing (``--no-progress``).
        console: The :class:`rich.console.Console` to draw on (default: stderr).
        config: The run's :class:`~deltap.mining.config.MiningConfig`, for the call ceiling; without it the
            ceiling comes from the events' trial budgets alone.
        deterministic: The solver is deterministic (fewer preflight and coalition calls: :func:`planned_calls`).
        clock: Seconds, monotonic (injectable for tests).
        prices: :class:`~deltap.mining.spend.Prices` for the cost so far (``None``: tokens only).
        planned_tokens_in: The plan's prompt-token ceiling of the run (:mod:`deltap.mining.plan`), shown beside the
            tokens spent.
        interval: Seconds between two plain lines when the console is not a terminal (default
            :func:`plain_interval`).
    """

    def __init__(
        self,
        n_cases: int,
        enabled: bool = True,
        console: Any = None,
        *,
        config: Any = None,
        deterministic: bool = False,
        clock: Callable[[], float] = time.monotonic,
        prices: Any = None,
        planned_tokens_in: int | None = None,
        interval: float | None = None,
    ) -> None:
        self.n_cases = int(n_cases)
        self.enabled = enabled
        self.plan = planned_calls(config, deterministic) if config is not None else None
        self.clock = clock
        self.started = clock()
        self.calls = 0  # solver calls made by this process
        self.tokens_in = 0  # tokens those calls took in and gave out (as the solver counted them)
        self.tokens_out = 0
        self.replies = 0  # replies a checker judged in this process, those it could not read, those it read declared
        self.unreadable = 0
        self.declared = 0
        self.prices = prices
        self.planned_tokens_in = planned_tokens_in
        self.run_plan: Any = None  # the RunPlan of the ``plan`` event (mine() sends it before the first call)
        self.case_id: str | None = None
        self.case_index = -1
        self.phase = "starting"
        self.trials = 0
        self.budget = self.plan.design if self.plan else 0
        self.open: int | None = None
        self.finished: dict[str, str] = {}  # case id -> final status
        self.coalition_done: set[str] = set()
        self.in_flight = 1  # cases the engine mines at once (from the events)
        self.active: dict[str, tuple[str, int, int]] = {}  # case id -> (phase, trials, budget) of unfinished cases
        self._live: Any = None
        self._console = console
        self._plain: PlainTicker | None = None  # a console that is not a terminal gets plain lines instead of Live
        self._interval = interval
        self._state = threading.RLock()  # the engine's events and the plain ticker's thread read/write the figures

    # --- the figures ---------------------------------------------------------------------------------------------
    def ceiling(self) -> int:
        """The most calls the whole run can have made when it ends (calls made + the most still to come)."""
        plan = self.plan
        pre = plan.preflight if plan else 0
        design = plan.design if plan else self.budget
        coalition = plan.coalition if plan else 0
        remaining = 0
        if self.phase in ("starting", "preflight", "running"):
            active = {c: v for c, v in self.active.items() if c not in self.finished}
            future = max(0, self.n_cases - len(self.finished) - len(active))
            for phase, trials, budget in active.values():
                remaining += (pre if phase in ("starting", "preflight") else 0) + max(0, budget - trials)
            remaining += future * (pre + design)
            remaining += coalition * (self.n_cases - len(self.coalition_done))
        elif self.phase in ("dataset", "coalition"):
            mined = sum(1 for s in self.finished.values() if s not in ("skipped", "saturated", "unsolvable", "errors"))
            remaining += coalition * max(0, mined - len(self.coalition_done))
        if self.run_plan is not None:  # no more than the plan's ceiling minus the calls the log already held
            return min(self.calls + remaining, int(self.run_plan.ceiling_left()))
        return self.calls + remaining

    def seconds_per_call(self) -> float | None:
        """Wall seconds per call on this run so far (``None`` before the first call)."""
        return (self.clock() - self.started) / self.calls if self.calls else None

    def seconds_left(self) -> float | None:
        """An upper bound on the time left: the remaining call ceiling at the measured rate."""
        rate = self.seconds_per_call()
        return None if rate is None else rate * (self.ceiling() - self.calls)

    # --- the engine's callback -------------------------------------------------------------------------------------
    def __call__(self, event: dict[str, Any]) -> None:
        with self._state:
            ended = self._update(event)
        if ended and self._plain is not None:
            self._plain.emit(ended)

    def _update(self, event: dict[str, Any]) -> str:
        """Take in one event; returns the plain line's prefix when a case just ended (else ``""``)."""
        phase = str(event.get("phase") or "")
        case_id = str(event.get("case_id", ""))
        if "calls" in event:
            self.calls = max(self.calls, int(event.get("calls") or 0))
        if "tokens_in" in event:
            self.tokens_in = max(self.tokens_in, int(event.get("tokens_in") or 0))
            self.tokens_out = max(self.tokens_out, int(event.get("tokens_out") or 0))
        if "unreadable" in event:
            self.replies = max(self.replies, int(event.get("replies") or 0))
            self.unreadable = max(self.unreadable, int(event.get("unreadable") or 0))
            self.declared = max(self.declared, int(event.get("declared") or 0))
        if event.get("in_flight") is not None:
            self.in_flight = max(1, int(event["in_flight"]))
        if phase == "plan":  # before the first call: show the plan first, then count against it
            self.run_plan = event.get("plan")
            if self.run_plan is not None:
                if self.planned_tokens_in is None:
                    self.planned_tokens_in = int(self.run_plan.tokens_in(left=True)[0])
                console = self._live.console if self._live is not None else self._console
                if self.enabled and (self._live is not None or self._plain is not None):
                    for line in self.run_plan.brief():
                        console.print(line, markup=False, highlight=False)
            self._refresh()
            return ""
        if phase == "pace":  # the run's first calls are timed: the plan's time again, from them
            self.run_plan = event.get("plan") or self.run_plan
            console = self._live.console if self._live is not None else self._console
            if self.run_plan is not None and self.enabled and (self._live is not None or self._plain is not None):
                for line in self.run_plan.pace_lines():
                    console.print(line, markup=False, highlight=False)
            self._refresh()
            return ""
        if phase == "pilot":  # the pilot's preflight calls (before any case starts): the call count only
            self._refresh()
            return ""
        if phase == "coalition":
            self.phase = "coalition"
            self.case_id = case_id
            self.coalition_done.add(case_id)
            self._refresh()
            return ""
        if case_id != self.case_id:
            if (
                self.in_flight <= 1
                and self.case_id is not None
                and self.phase != "coalition"
                and self.case_id not in self.finished
            ):
                self.finished[self.case_id] = "mined"  # events come per batch; a new case means the last one ended
                self.active.pop(self.case_id, None)
            self.case_id = case_id
            self.trials = 0
        self.case_index = int(event.get("case_index", self.case_index))
        self.n_cases = int(event.get("cases") or self.n_cases)
        if event.get("budget") is not None:
            self.budget = int(event["budget"])
        self.trials = int(event.get("trials") or 0)
        status = str(event.get("status") or "running")
        if status == "running":  # a case's final event carries open=0 whatever was left undecided
            self.open = None if event.get("open") is None else int(event["open"])
        elif status == "preflight":
            self.open = None
        ended = ""
        if status in ("running", "preflight"):
            self.phase = status
            self.active[case_id] = (status, self.trials, self.budget)
        else:
            self.finished[case_id] = status
            self.active.pop(case_id, None)
            self.phase = "dataset" if len(self.finished) >= self.n_cases else "running"
            ended = f"case {case_id} ended: {status}"
        self._refresh()
        return ended

    # --- drawing ---------------------------------------------------------------------------------------------------
    def plain_line(self) -> str:
        """The progress as one plain line (what a log gets every ``interval`` seconds and at each case's end)."""
        with self._state:
            ceiling, rate, left = self.ceiling(), self.seconds_per_call(), self.seconds_left()
            parts = [
                f"progress {clock_text(self.clock() - self.started)} elapsed",
                f"calls {self.calls:,} of ≤{ceiling:,}",
                f"cases {len(self.finished)} of {self.n_cases} done",
            ]
            if rate is not None:
                parts.append(f"{rate:.2f} s/call")
                if self.phase != "done":
                    parts.append(f"≤{clock_text(left or 0.0)} left")
            if self.declared or self.unreadable:
                parts.append(self.reading_text().removeprefix(" · "))
            if self.phase == "dataset":
                parts.append("now: dataset-wide verdicts")
            elif self.phase == "coalition":
                parts.append(f"now: coalition check of {self.case_id}")
            return " · ".join(parts)

    def reading_text(self) -> str:
        """How the checker read this process's replies, short: `` · 38/40 declared, 1 unreadable`` (declared answers,
        then replies it found no answer in — not wrong answers), ``""`` while both are zero."""
        parts = [f"{self.declared}/{self.replies} declared"] if self.declared else []
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable" if parts else f"{self.unreadable}/{self.replies} unreadable")
        return f" · {', '.join(parts)}" if parts else ""

    def lines(self) -> list[str]:
        """The display as plain lines (each fits 80 columns except a case id longer than that, which wraps)."""
        ceiling = self.ceiling()
        rate = self.seconds_per_call()
        left = self.seconds_left()
        elapsed = clock_text(self.clock() - self.started)
        timing = f"{elapsed} elapsed"
        if rate is not None:
            timing += f" · {rate:.2f} s/call · ≤{clock_text(left or 0.0)} left"
        else:
            timing += " · time left: after the first calls"
        out = [
            f"calls  {_bar(self.calls, ceiling)} {self.calls:,} of ≤{ceiling:,}",
            f"       {timing}",
        ]
        out[1] += self.reading_text()
        spent = self.spent_line()
        if spent:
            out.append(spent)
        done = len(self.finished)
        if self.phase == "done":
            out[0] = f"calls  {_bar(1, 1)} {self.calls:,} (done)"
            out[1] = f"       {elapsed} elapsed" + (f" · {rate:.2f} s/call" if rate is not None else "")
            out[1] += self.reading_text()
            out.append(f"cases  {_bar(1, 1)} {done} of {self.n_cases} mined")
            return out
        if self.phase in ("dataset", "coalition"):
            out.append(f"cases  {_bar(done, self.n_cases)} {done} of {self.n_cases} mined")
            if self.phase == "dataset":
                out.append("now    dataset-wide verdicts (Benjamini–Hochberg) and the placebo check")
            else:
                out.append(f"now    coalition check of {self.case_id}")
            return out
        number = min(self.n_cases, max(1, self.case_index + 1))
        flying = sum(1 for c in self.active if c not in self.finished)
        out.append(
            f"cases  {_bar(done, self.n_cases)} {done} of {self.n_cases} done"
            + (f" · {flying} in flight" if self.in_flight > 1 else "")
        )
        if self.case_id is None:
            return out
        if self.phase in ("starting", "preflight"):
            detail = "preflight (no document, then every candidate)"
        else:
            detail = f"trials {self.trials} of ≤{self.budget}"
            if self.open is not None:
                detail += f", {self.open} candidate{'s' if self.open != 1 else ''} undecided"
        out.append(f"case {number} {self.case_id}: {detail}")
        return out

    def spent_line(self) -> str | None:
        """``tokens 48k/~66k in · 310/≤2.0k out · $0.01/~$0.03`` once a call reported tokens or a plan is known: this
        process's tokens and cost against the plan's (expected prompt tokens, completion ceiling, expected cost; a
        resumed run's plan counts what was left). ``None`` before either."""
        plan = self.run_plan
        if not self.tokens_in and not self.tokens_out and plan is None:
            return None
        if not self.tokens_in and not self.tokens_out and self.calls and self.planned_tokens_in:
            return f"       tokens not reported by this solver · plan ~{short_count(self.planned_tokens_in)} in"
        tin = short_count(self.tokens_in)
        tout = short_count(self.tokens_out)
        if self.planned_tokens_in:
            tin += f"/~{short_count(self.planned_tokens_in)}"
        if plan is not None:
            tout += f"/≤{short_count(plan.tokens_out(left=True))}"
        scores_only = not self.tokens_out and plan is not None and not plan.tokens_out()  # logprob: nothing generated
        line = f"tokens {tin} in" + ("" if scores_only else f" · {tout} out")
        prices = self.prices if self.prices is not None else (plan.prices if plan is not None else None)
        if prices is not None and (prices.input or prices.output):  # the local model's $0.00 says nothing
            line += f" · ${prices.cost(self.tokens_in, self.tokens_out):,.2f}"
            cost = plan.cost(left=True) if plan is not None else None
            if cost is not None:
                line += f"/~${cost[0]:,.2f}"
        return "       " + line

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text("\n".join(self.lines()), overflow="fold")

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def __enter__(self) -> MiningProgress:
        self.started = self.clock()
        if self.enabled:
            from rich.console import Console
            from rich.live import Live

            console = self._console if self._console is not None else Console(stderr=True)
            self._console = console
            if console.is_terminal:
                self._live = Live(self, console=console, refresh_per_second=2, transient=False)
                self._live.start()
            else:  # a file or a pipe: a plain line at a steady interval, never a redraw
                write = lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
                self._plain = PlainTicker(self.plain_line, write, self._interval).start()
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.phase = "done"
            for case_id in [self.case_id] if self.case_id is not None else []:
                self.finished.setdefault(case_id, "mined")
        if self._plain is not None:
            self._plain.stop()
            if exc_type is None:
                self._plain.emit("done")
            self._plain = None
        if self._live is not None:
            if exc_type is not None:  # the error is the message: no progress state after it in a log
                self._live.transient = True
            self._live.refresh()
            self._live.stop()
            if exc_type is None and not self._live.console.is_terminal:  # a log gets the final state once; end it
                self._live.console.line()
            self._live = None
