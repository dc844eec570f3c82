"""Verdicts and graded relevance from the estimates.

For each (case, candidate), with the joint-regression effect ``β̂`` (its SE) and the dataset-wide BH q-value of its
repeated (sequential) p-value:

* ``relevant`` — ``q_value ≤ q`` and ``β̂ ≥ min_effect``;
* ``harmful``  — ``q_value ≤ q`` and ``β̂ ≤ −min_effect`` (a distractor);
* ``irrelevant`` — the equivalence test (two one-sided tests at 5%, Schuirmann 1987) shows ``|β| < margin``: the
  90% interval ``β̂ ± 1.645 SE`` lies inside ``(−margin, margin)``;
* ``undecided`` — anything else (not enough evidence, or significant but smaller than ``min_effect``).

**The interval the verdict rests on** (``verdict_interval`` of every candidate, issue 14): for ``relevant``,
``harmful`` and ``undecided`` the *repeated confidence interval* (Jennison & Turnbull 1989, JRSS-B 51:305-361) of
the test that decides the label — at every look k of the case, ``β̂_k − center ∓ x_k`` where ``x_k`` is the null's
quantile at the one-sided level ``Φ̄(C/√t_k)``, ``C`` the O'Brien–Fleming boundary of BH's threshold ``q·R/M`` for
that direction, intersected over the looks — so it is adjusted for the looks and for the selection (the
false-coverage-rate adjustment of Benjamini & Yekutieli 2005, JASA 100:71-81: level ``1 − q·R/M``). Its lower
bound is above 0 exactly when the repeated p-value is below BH's threshold, so a ``relevant`` label always has
``verdict_interval.low > 0`` (``harmful``: ``high < 0``); under the placebo null it bounds the effect *in excess of
what random text does*. Against a fitted null (placebo or on-topic) the test is Simes over the looks instead
(:meth:`deltap.mining.adaptive.LookSchedule.simes_p_value`: the null's spread, not sampling noise, dominates those
statistics, so their path is flat) and the interval is that test's dual (:func:`simes_interval`), with the same
property. ``min_effect`` applies to the point estimate: the interval can reach below ``min_effect``
(proving ``β ≥ min_effect`` instead would cost ~20 points of recall on a 0.3 effect at 128 trials — measured in the
note of issue 14). For ``irrelevant`` it is the 90% TOST interval inside ``±margin``.

The equivalence margin defaults to ``min_effect`` for ``logprob`` and to **2 × min_effect (0.2) for ``pass``**: a
pass effect's 90% interval at 128 trials is about ±0.14 wide (binary outcomes, SE ≈ 0.08), so "|β| < 0.1" could
never be shown and ``irrelevant`` was unreachable for ``pass`` (issue 14 item 8).

Grades (for qrels) come from the effect size of relevant documents, with the mapping written in the output:
``pass``: ``[0.1, 0.2) → 1``, ``[0.2, 0.4) → 2``, ``≥ 0.4 → 3``; ``logprob`` (nats): ``[0.5, 1.5) → 1``,
``[1.5, 3) → 2``, ``≥ 3 → 3``. Non-relevant judged documents (irrelevant, harmful) get grade 0; undecided ones are
left unjudged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deltap.outcomes import outcome_kind

if TYPE_CHECKING:
    from deltap.mining.adaptive import LookSchedule

__all__ = [
    "EMPIRICAL",
    "DocumentVerdict",
    "VerdictPolicy",
    "default_policy",
    "grade",
    "repeated_interval",
    "simes_interval",
    "verdict",
]

#: what the statistics conclude of one (case, document): a document verdict, not a checker's :class:`deltap.checkers.Verdict`
DocumentVerdict = Literal["relevant", "harmful", "irrelevant", "undecided"]

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


def default_policy(
    outcome: str, q: float = 0.05, min_effect: float | None = None, margin: float | None = None
) -> VerdictPolicy:
    """Defaults per outcome: ``pass`` in probability units (margin 2 × min_effect), ``logprob`` in nats (margin =
    min_effect)."""
    kind = outcome_kind(outcome)
    me = kind.default_min_effect if min_effect is None else min_effect
    two, three = kind.grade_steps
    return VerdictPolicy(
        q, me, kind.margin_factor * me if margin is None else margin, (me, max(two, me), max(three, me)), kind.unit
    )


def verdict(
    effect: float, se: float, q_value: float, policy: VerdictPolicy, interval: tuple[float, float] | None = None
) -> DocumentVerdict:
    """The verdict of one candidate (see the module docstring); ``interval`` is its repeated confidence interval,
    which a ``relevant`` (``harmful``) label must have entirely above (below) 0."""
    low, high = interval if interval is not None else (-math.inf, math.inf)
    if q_value <= policy.q and effect >= policy.min_effect and (interval is None or low > 0):
        return "relevant"
    if q_value <= policy.q and effect <= -policy.min_effect and (interval is None or high < 0):
        return "harmful"
    if se < float("inf") and abs(effect) + _Z90 * se < policy.margin:
        return "irrelevant"
    return "undecided"


def grade(effect: float, v: DocumentVerdict, policy: VerdictPolicy) -> int | None:
    """Graded relevance: 1-3 for relevant documents by effect size, 0 for irrelevant/harmful, ``None`` undecided."""
    if v == "relevant":
        a, b, c = policy.grade_bounds
        return 3 if effect >= c else 2 if effect >= b else 1
    if v in ("irrelevant", "harmful"):
        return 0
    return None


def repeated_interval(
    fits: Sequence[tuple[ArrayLike, ArrayLike, int]],
    times: ArrayLike,
    c_low: float,
    c_high: float,
    params: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Repeated confidence interval of every candidate of a case, intersected over its looks.

    Args:
        fits: ``(coef, se, df)`` of the classical fit at each look taken (the ones the tests used).
        times: Information times ``t_k = N_k / N_K`` of those looks.
        c_low: O'Brien–Fleming boundary (B-value scale) of the relevant family at BH's threshold (lower bound).
        c_high: The same for the harmful family (upper bound).
        params: Per-candidate null arguments of :func:`~deltap.mining.empirical_null.null_z`, shape ``(m, 7)``
            (``None``: the zero null).

    Returns:
        ``(low, high)`` arrays of shape ``(m,)``, in outcome units, net of the null's center.
    """
    from scipy import stats

    from deltap.mining.empirical_null import _log_sf

    m = len(np.asarray(fits[0][0]))
    p = np.zeros((m, 7)) if params is None else np.asarray(params, dtype=float)
    center, null = p[:, 0], p[:, 1:].T
    # every look and both directions in one bisection: arrays of shape (looks, 2, m)
    coef = np.stack([np.asarray(f[0], dtype=float) for f in fits])[:, None, :]
    se = np.broadcast_to(np.stack([np.asarray(f[1], dtype=float) for f in fits])[:, None, :], (len(fits), 2, m))
    df = np.broadcast_to(np.array([float(f[2]) for f in fits])[:, None, None], se.shape)
    t = np.asarray(times, dtype=float)[: len(fits)]
    log_alpha = np.asarray(stats.norm.logsf(np.array([c_low, c_high])[None, :] / np.sqrt(t)[:, None]), dtype=float)[
        ..., None
    ]
    x = _quantile(lambda d: _log_sf(d, se, df, 0.0, *null), np.broadcast_to(log_alpha, se.shape))
    low = np.max(coef[:, 0] - center - x[:, 0], axis=0)
    high = np.min(coef[:, 0] - center + x[:, 1], axis=0)
    return np.asarray(low, dtype=float), np.asarray(high, dtype=float)


def simes_interval(
    fits: Sequence[tuple[ArrayLike, ArrayLike, int]],
    schedule: LookSchedule,
    alpha_low: float,
    alpha_high: float,
    params: ArrayLike,
    steps: int = 60,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The confidence interval dual to the Simes-over-looks test of a fitted null
    (:meth:`~deltap.mining.adaptive.LookSchedule.simes_p_value`): every shift ``θ₀`` of the null's center that the
    test does not reject at ``alpha_low`` (lower bound) / ``alpha_high`` (upper bound). Its lower bound is above 0
    exactly when the Simes p-value of the relevant direction is below ``alpha_low``, as :func:`repeated_interval`'s is
    for the repeated p-value.

    Args:
        fits: ``(coef, se, df)`` of the classical fit at each look taken.
        schedule: The case's look schedule (its test: :meth:`~deltap.mining.adaptive.LookSchedule.simes_p_value`).
        alpha_low: Level of the relevant direction (BH's threshold times the candidate's weight).
        alpha_high: Level of the harmful direction.
        params: Per-candidate null arguments of :func:`~deltap.mining.empirical_null.null_z`, shape ``(m, 7)``.

    Returns:
        ``(low, high)`` arrays of shape ``(m,)``, in outcome units, net of the null's center.
    """
    from deltap.mining.empirical_null import null_z

    p = np.asarray(params, dtype=float)
    center, rest = p[:, 0], p[:, 1:].T
    coef = np.stack([np.asarray(f[0], dtype=float) for f in fits])  # (looks, m)
    se = np.stack([np.asarray(f[1], dtype=float) for f in fits])
    df = np.broadcast_to(np.array([float(f[2]) for f in fits])[:, None], se.shape)

    def simes(shift: NDArray[np.float64], side: int) -> NDArray[np.float64]:
        z = null_z(coef, se, df, center + shift, *rest)  # (looks, m)
        return schedule.simes_p_value(z.T, side)

    def bound(side: int, alpha: float) -> NDArray[np.float64]:
        # side 1: the largest shift still rejected (Simes p <= alpha), the p rising with the shift; side -1 mirrored
        d = coef - center
        near = np.max(d, axis=0) if side == 1 else np.min(d, axis=0)  # beyond it no look's p is below 1/2
        width = np.ones(near.shape)
        for _ in range(80):  # bracket: widen until the test rejects there
            far = near - side * width
            need = simes(far, side) > alpha
            if not need.any():
                break
            width = np.where(need, width * 2.0, width)
        far = near - side * width
        never = simes(far, side) > alpha
        lo, hi = far, near  # rejected at lo, not at hi (side 1; mirrored for -1)
        for _ in range(steps):
            mid = 0.5 * (lo + hi)
            rejected = simes(mid, side) <= alpha
            lo = np.where(rejected, mid, lo)
            hi = np.where(rejected, hi, mid)
        out = 0.5 * (lo + hi)
        return np.where(never, -side * np.inf, out)

    return bound(1, alpha_low), bound(-1, alpha_high)


def _quantile(
    f: Callable[[NDArray[np.float64]], NDArray[np.float64]], log_alpha: NDArray[np.float64], steps: int = 60
) -> NDArray[np.float64]:
    """``x ≥ 0`` with ``f(x) = log_alpha`` elementwise (``f``: a log tail, decreasing; bisection; ``inf`` when the
    tail never gets there)."""
    lo = np.zeros(log_alpha.shape)
    hi = np.ones(log_alpha.shape)
    for _ in range(80):  # bracket: double until the tail is below alpha
        grow = f(hi) > log_alpha
        if not grow.any():
            break
        hi = np.where(grow, hi * 2.0, hi)
    hi = np.where(f(hi) > log_alpha, np.inf, hi)
    finite = np.isfinite(hi)
    h = np.where(finite, hi, 1.0)
    for _ in range(steps):
        mid = 0.5 * (lo + h)
        above = f(mid) > log_alpha
        lo = np.where(above, mid, lo)
        h = np.where(above, h, mid)
    return np.where(finite, 0.5 * (lo + h), np.inf)
