"""Coalitions: documents that help together, and the minimal winning coalition of a case.

* **Interaction pairs** — for each pair ``(i, j)`` among the case's most promising candidates (relevant ones, else
  the top positive estimates), the regression ``y ~ 1 + Σ_l x_l + x_i x_j`` (HC2 SEs) tests the interaction
  coefficient γ_ij; pairs with a positive γ significant at ``alpha`` after Bonferroni over the pairs tested are
  reported. A pair whose members only help together (the "one needs the other" pattern) shows up here, even when
  each member's average main effect is modest.
* **Winning coalitions** — found and checked by :func:`deltap.mining.procedure.find_coalitions` (every minimal
  subset of the relevant documents whose trials reach the full context's success); :func:`coalition_verified` is
  the test one coalition's trials must pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deltap.mining.estimate import ols_hc, wilson_interval

__all__ = ["InteractionPair", "coalition_verified", "interaction_pairs"]

_Z99 = 2.5758293035489004


@dataclass(frozen=True)
class InteractionPair:
    """A tested pair and its interaction estimate."""

    i: int
    j: int
    effect: float
    se: float
    p_value: float
    significant: bool


def interaction_pairs(
    X: NDArray[np.bool_] | NDArray[np.float64],
    y: NDArray[np.float64],
    candidates: Sequence[int],
    alpha: float = 0.05,
    max_pairs: int = 15,
) -> list[InteractionPair]:
    """Test pairwise interactions among ``candidates`` (column indices of ``X``), Bonferroni over the pairs."""
    X = np.asarray(X, dtype=float)
    pairs = list(itertools.combinations(sorted(set(candidates)), 2))[:max_pairs]
    out: list[InteractionPair] = []
    if not pairs or X.shape[0] <= X.shape[1] + 3:
        return out
    level = alpha / len(pairs)
    for i, j in pairs:
        Xi = np.concatenate([X, (X[:, i] * X[:, j])[:, None]], axis=1)
        reg = ols_hc(Xi, y)
        eff, se, p = float(reg.coef[-1]), float(reg.se[-1]), float(reg.p_value[-1])
        out.append(InteractionPair(i, j, eff, se, p, bool(p <= level and eff > 0)))
    return out


def coalition_verified(
    coalition_values: Sequence[float],
    target: float,
    none_values: Sequence[float],
    binary: bool,
    exact: bool = False,
) -> tuple[bool, dict[str, float]]:
    """Whether trials with only the coalition in context reach ``target`` and beat the no-document trials.

    ``target`` is the regression's prediction with every relevant document minus the tolerance (the minimum
    effect). ``exact`` (a deterministic solver: one trial is the outcome) compares the value itself; otherwise the
    coalition must not be clearly below the target — the upper end of its 99% interval (Wilson for binary
    outcomes, normal for log-probabilities) reaches it: the target itself is an estimate, and the members are
    already significant one by one — and must beat the no-document mean (binary: the lower end of the 95% Wilson
    interval exceeds the no-document rate).
    """
    c = np.asarray(coalition_values, dtype=float)
    z = np.asarray(none_values, dtype=float)
    if c.size == 0:
        return False, {}
    cm = float(c.mean())
    zm = float(z.mean()) if z.size else float("nan")
    info = {"coalition_mean": cm, "target": float(target), "none_mean": zm, "trials": float(c.size)}
    if exact:
        reaches, above = cm >= target, (cm > zm if z.size else True)
    elif binary:
        lo = wilson_interval(c.sum(), c.size)[0]
        hi = wilson_interval(c.sum(), c.size, z=_Z99)[1]
        reaches, above = float(hi) >= target, (float(lo) > zm if z.size else True)
    else:
        half = _Z99 * float(c.std(ddof=1)) / np.sqrt(c.size) if c.size > 1 else float("inf")
        reaches, above = cm + half >= target, (cm > zm if z.size else True)
    return bool(reaches and above), info
