"""Trials: what ``deltap mine`` and ``deltap endtoend`` both do — ask the solver once, with some documents in a
fixed order, under a seed, and score the answer — owned below both.

* :class:`CaseTrials` — one case's trials over ordered documents, through the executor, the checker and the log
  (:mod:`.runner`); :class:`CallTally` counts a run's calls and tokens.
* :class:`TrialLog` / :class:`TrialRecord` / :class:`TrialLogReader` — the SQLite trial log, its one writer and its
  read-only reader: no SQL on a trial log anywhere else (:mod:`.log`).
* :func:`trial_seed` — a trial's seed (:mod:`.seeds`); :func:`request_from_case` — a case as a solver request
  (:mod:`.request`); :func:`fit_window` — the context-window fit (:mod:`.context`).
* Tokens, prices and pace: :func:`call_tokens`, :func:`token_counter` (:mod:`.tokens`), :class:`Prices`,
  :func:`prices_for` (:mod:`.prices`, hosted list prices from the solver registry), :class:`Pace`,
  :func:`cost_lines`, :func:`time_lines` (:mod:`.planning`: the one time range and the one writer of a plan's cost
  and time lines).

Names are lazy: importing the package loads nothing heavy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltap._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "CallTally": "deltap.trials.runner",
    "CaseTrials": "deltap.trials.runner",
    "LoggedTrial": "deltap.trials.log",
    "Pace": "deltap.trials.planning",
    "Prices": "deltap.trials.prices",
    "TrialLog": "deltap.trials.log",
    "TrialLogReader": "deltap.trials.log",
    "TrialRecord": "deltap.trials.log",
    "WindowFit": "deltap.trials.context",
    "call_tokens": "deltap.trials.tokens",
    "cost_lines": "deltap.trials.planning",
    "fit_window": "deltap.trials.context",
    "plan_pace": "deltap.trials.planning",
    "prices_for": "deltap.trials.prices",
    "request_from_case": "deltap.trials.request",
    "time_lines": "deltap.trials.planning",
    "token_counter": "deltap.trials.tokens",
    "trial_seed": "deltap.trials.seeds",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from deltap.trials.context import WindowFit, fit_window
    from deltap.trials.log import LoggedTrial, TrialLog, TrialLogReader, TrialRecord
    from deltap.trials.planning import Pace, cost_lines, plan_pace, time_lines
    from deltap.trials.prices import Prices, prices_for
    from deltap.trials.request import request_from_case
    from deltap.trials.runner import CallTally, CaseTrials
    from deltap.trials.seeds import trial_seed
    from deltap.trials.tokens import call_tokens, token_counter
