"""The pilot: a few calls that can stop a hopeless run before its expensive part (``deltap mine --pilot N``).

Before any design trial, ``N`` sampled cases (seeded) get their **preflight** — no document, and every candidate —
exactly the trials the per-case procedure asks first (same keys, logged), so the run reuses them and no call is
wasted. From them the pilot estimates:

* whether the solver's success **moves with the documents at all**: per case the lift, every-candidate minus
  no-document (a pass rate, or mean log-probability);
* **how many labels the budget can decide**: a design trial's outcome has standard deviation ``σ`` (pass: ``√(p̄(1 −
  p̄))`` from the pilot's own outcomes; logprob: half the case's lift), an effect estimated from ``B`` trials at
  π = 0.5 has standard error ``2σ/√B``, so the budget detects (80% power, two-sided 5%) effects of at least
  ``δ = 2.8 · 2σ/√B``. A case can yield a relevant or harmful label only when its lift reaches both the minimum
  effect and ``δ``; the pilot extrapolates the share of such cases to the run.

When no sampled case can yield one, every label the run could give is ``irrelevant`` or ``undecided``; when the
share that can, extrapolated to the run, is under :data:`MIN_EXPECTED_CASES` cases, the whole budget buys at most
one case's labels (judged for a deterministic solver only, whose single pilot call per group is the case's outcome;
a stochastic solver's single calls are draws). Either way the pilot says so in one line and the run stops unless ``force``. The saturation check of the preflight is per case; this is
the same evidence, pooled over cases, and asked before any case spends its budget; it needs at least
:data:`MIN_CASES_TO_STOP` sampled cases to stop a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deltap.errors import DeltapError
from deltap.outcomes import outcome_kind

__all__ = [
    "MIN_CASES_TO_STOP",
    "MIN_EXPECTED_CASES",
    "PilotCase",
    "PilotResult",
    "PilotStop",
    "assess_pilot",
    "sample_cases",
]

#: z_{0.975} + z_{0.80}: a two-sided 5% test with 80% power
_Z_POWER = 1.96 + 0.84
#: fewest sampled cases the pilot stops a run on (with fewer, each case's own preflight decides about it)
MIN_CASES_TO_STOP = 3
#: fewest cases of the run expected to yield a label for the run to go on: one flip among the sampled cases is what a
#: small model's answer does with any added text (the placebo effect), and the whole budget would buy one case's labels
MIN_EXPECTED_CASES = 2.0


class PilotStop(DeltapError):
    """The pilot found that the run cannot decide any relevant or harmful label (see :mod:`deltap.mining.pilot`)."""


@dataclass(frozen=True)
class PilotCase:
    """One sampled case's preflight: the outcomes with no document and with every candidate."""

    case_id: str
    none: tuple[float, ...]
    all: tuple[float, ...]

    @property
    def lift(self) -> float | None:
        if not self.none or not self.all:
            return None
        return float(np.mean(self.all) - np.mean(self.none))


@dataclass
class PilotResult:
    """What the pilot concluded (``to_dict`` goes to ``run.json``)."""

    cases: list[PilotCase]
    calls: int
    detectable: dict[str, float] = field(default_factory=dict)
    decidable_cases: int = 0
    expected_decidable: float = 0.0
    hopeless: bool = False
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": [c.case_id for c in self.cases],
            "calls": self.calls,
            "lifts": {c.case_id: c.lift for c in self.cases},
            "detectable_effect": self.detectable,
            "cases_that_can_yield_labels": self.decidable_cases,
            "expected_cases_with_labels": round(self.expected_decidable, 2),
            "hopeless": self.hopeless,
            "message": self.message,
        }


def sample_cases(case_ids: list[str], n: int, seed: int) -> list[str]:
    """``n`` case ids drawn without replacement, a function of ``seed`` and the ids only (in their given order)."""
    if n >= len(case_ids):
        return list(case_ids)
    rng = np.random.default_rng([int(seed), 27])
    picked = sorted(rng.choice(len(case_ids), size=n, replace=False).tolist())
    return [case_ids[i] for i in picked]


def assess_pilot(
    cases: list[PilotCase],
    calls: int,
    outcome: str,
    min_effect: float,
    budget: int,
    n_cases: int,
    deterministic: bool = True,
) -> PilotResult:
    """Judge the pilot (see the module docstring): can the run decide any relevant or harmful label?

    ``deterministic``: the solver answers a prompt the same way every time, so one call per group is the case's
    outcome; a stochastic solver's single calls are draws, and the pilot then stops only a run in which nothing moved.
    """
    out = PilotResult(cases, calls)
    lifts = {c.case_id: c.lift for c in cases if c.lift is not None}
    if not lifts:
        out.message = "pilot: no sampled case gave a usable preflight; the run goes on"
        return out
    values = [v for c in cases for v in (*c.none, *c.all)]
    for c in cases:
        lift = lifts.get(c.case_id)
        if lift is None:
            continue
        if outcome_kind(outcome).binary:
            p = min(max(float(np.mean(values)), 0.05), 0.95)
            sigma = math.sqrt(p * (1 - p))
        else:
            sigma = max(abs(lift) / 2, 1e-9)
        delta = _Z_POWER * 2 * sigma / math.sqrt(max(budget, 1))
        out.detectable[c.case_id] = round(delta, 4)
        if abs(lift) >= max(min_effect, delta):
            out.decidable_cases += 1
    out.expected_decidable = out.decidable_cases / len(lifts) * n_cases
    biggest = max(abs(v) for v in lifts.values())
    unit = outcome_kind(outcome).suffix
    if out.decidable_cases == 0 and len(lifts) < MIN_CASES_TO_STOP:
        out.message = (
            f"pilot: no movement in {len(lifts)} sampled case(s), too few to stop the run on (each case's preflight "
            "still skips a saturated or unsolvable one)"
        )
    elif out.decidable_cases == 0:
        out.hopeless = True
        out.message = (
            f"pilot: in {len(lifts)} sampled case(s) ({calls} calls) the solver's success does not move with the documents "
            f"(|every candidate − no document| ≤ {biggest:.2f}{unit}, min effect {min_effect:g}{unit}), so budget {budget} can "
            "only label documents irrelevant; stopping before the design trials (--force mines anyway; the pilot's calls "
            "are logged and reused)"
        )
    elif out.expected_decidable < MIN_EXPECTED_CASES and len(lifts) >= MIN_CASES_TO_STOP and deterministic:
        out.hopeless = True
        out.message = (
            f"pilot: only {out.decidable_cases} of {len(lifts)} sampled case(s) ({calls} calls) move with the documents "
            f"(largest lift {biggest:.2f}{unit}): about {out.expected_decidable:.1f} case(s) of {n_cases} can yield a relevant or "
            f"harmful label at budget {budget}, fewer than {MIN_EXPECTED_CASES:g}; stopping before the design trials "
            "(--force mines anyway; the pilot's calls are logged and reused)"
        )
    else:
        out.message = (
            f"pilot: {out.decidable_cases} of {len(lifts)} sampled case(s) move with the documents (largest lift "
            f"{biggest:.2f}{unit}); about {out.expected_decidable:.0f} case(s) of {n_cases} can yield labels"
        )
    return out
