"""Coalitions: documents that help together, and the minimal winning coalition of a case.

* **Interaction pairs** — for each pair ``(i, j)`` among the case's most promising candidates (relevant ones, else
  the top positive estimates), the regression ``y ~ 1 + Σ_l x_l + x_i x_j`` (HC2 SEs) tests the interaction
  coefficient γ_ij; pairs with a positive γ significant at ``alpha`` after Bonferroni over the pairs tested are
  reported. A pair whose members only help together (the "one needs the other" pattern) shows up here, even when
  each member's average main effect is modest.
* **Minimal winning coalition** — documents are added greedily in order of effect until the model's predicted
  outcome with only the coalition in context (main effects plus significant interactions) comes within
  ``tolerance`` of the prediction with every relevant document. The coalition is then **verified by trials**: the
  caller runs ``verify_trials`` trials with exactly the coalition and compares their mean with the preflight trials
  with every candidate; it is recorded only when verified (see :func:`coalition_verified`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from deltap.mining.estimate import ols_hc, wilson_interval

__all__ = ["InteractionPair", "coalition_verified", "interaction_pairs", "minimal_coalition"]


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


def minimal_coalition(
    effects: Sequence[float],
    relevant: Sequence[int],
    pairs: Sequence[InteractionPair] = (),
    tolerance: float = 0.1,
) -> list[int]:
    """Greedy minimal set of ``relevant`` candidates whose predicted gain is within ``tolerance`` of all of them.

    Returns column indices (empty when there is no relevant document).
    """
    rel = sorted(set(relevant), key=lambda i: -effects[i])
    sig = [p for p in pairs if p.significant]
    # A significant pair enters together: its members are ranked by the pair's joint gain.
    def gain(members: set[int]) -> float:
        g = sum(effects[i] for i in members)
        g += sum(p.effect for p in sig if p.i in members and p.j in members)
        return g

    if not rel:
        return []
    full = gain(set(rel) | {m for p in sig for m in (p.i, p.j) if p.i in rel or p.j in rel})
    chosen: set[int] = set()
    pool = set(rel) | {m for p in sig for m in (p.i, p.j) if p.i in rel or p.j in rel}
    while gain(chosen) < full - tolerance and pool - chosen:
        best = max(pool - chosen, key=lambda d: (gain(chosen | {d}), -d))
        # A pair member alone may add nothing; try the pair.
        for p in sig:
            if best in (p.i, p.j):
                other = p.j if best == p.i else p.i
                if other in pool and gain(chosen | {best, other}) > gain(chosen | {best}):
                    chosen.add(other)
        chosen.add(best)
    return sorted(chosen, key=lambda i: -effects[i])


def coalition_verified(
    coalition_values: Sequence[float],
    all_values: Sequence[float],
    none_values: Sequence[float],
    binary: bool,
    tolerance: float,
) -> tuple[bool, dict[str, float]]:
    """Whether trials with only the coalition reproduce the success of the full context.

    Verified when the coalition's mean is at least the full-context mean minus ``tolerance`` and above the
    no-document mean. For binary outcomes the comparison uses the Wilson interval of the coalition's rate (its
    upper bound must reach ``full − tolerance``, its lower bound must exceed the no-document rate).
    """
    c = np.asarray(coalition_values, dtype=float)
    a = np.asarray(all_values, dtype=float)
    z = np.asarray(none_values, dtype=float)
    if c.size == 0:
        return False, {}
    cm = float(c.mean())
    am = float(a.mean()) if a.size else float("nan")
    zm = float(z.mean()) if z.size else float("nan")
    info = {"coalition_mean": cm, "all_mean": am, "none_mean": zm, "trials": float(c.size)}
    if binary:
        lo, hi = wilson_interval(c.sum(), c.size)
        ok = bool(float(hi) >= am - tolerance and float(lo) > zm) if a.size and z.size else bool(float(lo) > 0)
    else:
        ok = bool(cm >= am - tolerance and cm > zm) if a.size and z.size else False
    return ok, info
