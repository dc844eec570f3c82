"""Verdicts and graded relevance from the estimates.

For each (case, candidate), with the joint-regression effect ``β̂`` (its SE) and the dataset-wide BH q-value of its
repeated (sequential) p-value:

* ``relevant`` — ``q_value ≤ q`` and ``β̂ ≥ min_effect``;
* ``harmful``  — ``q_value ≤ q`` and ``β̂ ≤ −min_effect`` (a distractor);
* ``irrelevant`` — the equivalence test (two one-sided tests at 5%, Schuirmann 1987) shows ``|β| < margin``: the
  90% interval ``β̂ ± 1.645 SE`` lies inside ``(−margin, margin)``;
* ``undecided`` — anything else (not enough evidence, or significant but smaller than ``min_effect``).

Grades (for qrels) come from the effect size of relevant documents, with the mapping written in the output:
``pass``: ``[0.1, 0.2) → 1``, ``[0.2, 0.4) → 2``, ``≥ 0.4 → 3``; ``logprob`` (nats): ``[0.5, 1.5) → 1``,
``[1.5, 3) → 2``, ``≥ 3 → 3``. Non-relevant judged documents (irrelevant, harmful) get grade 0; undecided ones are
left unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["EMPIRICAL", "VerdictPolicy", "Verdict", "default_policy", "grade", "verdict"]

Verdict = Literal["relevant", "harmful", "irrelevant", "undecided"]

EMPIRICAL: dict[str, str] = {"relevant": "YES", "irrelevant": "NO", "harmful": "HARMFUL", "undecided": "UNDECIDED"}

_Z90 = 1.6448536269514722


@dataclass(frozen=True)
class VerdictPolicy:
    """Thresholds of the verdicts and the grade mapping (lower bounds of grades 1, 2, 3)."""

    q: float = 0.05
    min_effect: float = 0.1
    margin: float = 0.1
    grade_bounds: tuple[float, float, float] = (0.1, 0.2, 0.4)
    unit: str = "probability"

    def grade_mapping(self) -> dict[str, str]:
        a, b, c = self.grade_bounds
        return {
            "1": f"{a:g} <= effect < {b:g}",
            "2": f"{b:g} <= effect < {c:g}",
            "3": f"effect >= {c:g}",
            "0": "irrelevant or harmful (judged not relevant)",
            "unit": self.unit,
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "q": self.q,
            "min_effect": self.min_effect,
            "margin": self.margin,
            "grade_bounds": list(self.grade_bounds),
            "unit": self.unit,
        }


def default_policy(outcome: str, q: float = 0.05, min_effect: float | None = None, margin: float | None = None) -> VerdictPolicy:
    """Defaults per outcome: ``pass`` in probability units, ``logprob`` in nats."""
    if outcome == "logprob":
        me = 0.5 if min_effect is None else min_effect
        return VerdictPolicy(q, me, me if margin is None else margin, (me, max(1.5, me), max(3.0, me)), "nats")
    me = 0.1 if min_effect is None else min_effect
    return VerdictPolicy(q, me, me if margin is None else margin, (me, max(0.2, me), max(0.4, me)), "probability")


def verdict(effect: float, se: float, q_value: float, policy: VerdictPolicy) -> Verdict:
    """The verdict of one candidate (see the module docstring)."""
    if q_value <= policy.q and effect >= policy.min_effect:
        return "relevant"
    if q_value <= policy.q and effect <= -policy.min_effect:
        return "harmful"
    if se < float("inf") and abs(effect) + _Z90 * se < policy.margin:
        return "irrelevant"
    return "undecided"


def grade(effect: float, v: Verdict, policy: VerdictPolicy) -> int | None:
    """Graded relevance: 1-3 for relevant documents by effect size, 0 for irrelevant/harmful, ``None`` undecided."""
    if v == "relevant":
        a, b, c = policy.grade_bounds
        return 3 if effect >= c else 2 if effect >= b else 1
    if v in ("irrelevant", "harmful"):
        return 0
    return None
