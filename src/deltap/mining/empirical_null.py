"""The placebo null: "relevant" means "moves the outcome more than random text does".

The theoretical null of the per-candidate tests is "this document changes nothing" (effect exactly 0). A real
solver breaks it for *every* document: a greedy model's log-probability of the reference answer shifts by a fraction
of a nat whenever any text is added, so with enough trials every candidate — random placebo documents included —
becomes "significant". The real ADK run of issue #6 showed it: 4 of 20 placebos labelled relevant or harmful on the
``logprob`` outcome.

The placebo documents are a sample of exactly those document-level effects that do not mean relevance. Following
Efron's empirical null (Efron 2004, "Large-scale simultaneous hypothesis testing: the choice of a null hypothesis",
JASA 99:96-104), deltap fits the distribution of effects of random documents from the placebos of the whole run,
``θ ~ N(center, spread²)``, and tests each candidate against it:

    t_j = (β̂_j − center) / sqrt(spread² + se_j²)

mapped to the normal scale with the regression's Student-t tails, as the zero-null z-statistics are. The fit is
robust (median and 1.4826·MAD of the placebo estimates, minus their average sampling variance, a method-of-moments
random-effects estimate): one placebo that happens to be relevant does not widen the null. Each placebo's own test
uses the null fitted **without it** (leave-one-out), so the placebo false-positive rate stays an honest out-of-sample
check of the calibration rather than a circular one.

With ``spread = 0`` and ``center = 0`` this is exactly the zero-null test. The spread dominates when the solver is
deterministic (se → 0 while the spread stays), and then the z-path across looks is nearly flat, so the
group-sequential repeated p-value of such a path is conservative.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

__all__ = ["MIN_PLACEBOS", "PlaceboNull", "fit_placebo_null", "leave_one_out", "null_z"]

#: fewer placebo estimates than this in a run: the zero null is used (the fit would be too noisy)
MIN_PLACEBOS = 10


@dataclass(frozen=True)
class PlaceboNull:
    """Distribution of the effects of random documents: ``N(center, spread²)`` in outcome units."""

    center: float
    spread: float
    placebos: int

    def to_dict(self) -> dict[str, float | int]:
        return {"center": self.center, "spread": self.spread, "placebos": self.placebos}


ZERO = PlaceboNull(0.0, 0.0, 0)


def fit_placebo_null(coef: ArrayLike, se: ArrayLike) -> PlaceboNull:
    """Robust random-effects fit of placebo effect estimates ``coef`` with standard errors ``se``."""
    b = np.asarray(coef, dtype=float).ravel()
    s = np.asarray(se, dtype=float).ravel()
    ok = np.isfinite(b) & np.isfinite(s)
    b, s = b[ok], s[ok]
    if b.size == 0:
        return ZERO
    center = float(np.median(b))
    mad = 1.4826 * float(np.median(np.abs(b - center)))
    spread = float(np.sqrt(max(mad**2 - float(np.mean(s**2)), 0.0)))
    return PlaceboNull(center, spread, int(b.size))


def leave_one_out(coef: ArrayLike, se: ArrayLike) -> list[PlaceboNull]:
    """The null fitted without each placebo in turn (for that placebo's own, out-of-sample test)."""
    b = np.asarray(coef, dtype=float).ravel()
    s = np.asarray(se, dtype=float).ravel()
    keep = np.ones(b.size, dtype=bool)
    out = []
    for i in range(b.size):
        keep[i] = False
        out.append(fit_placebo_null(b[keep], s[keep]))
        keep[i] = True
    return out


def null_z(coef: ArrayLike, se: ArrayLike, df: ArrayLike, center: ArrayLike = 0.0, spread: ArrayLike = 0.0) -> NDArray[np.float64]:
    """Normal-equivalent z of ``coef`` against the null ``N(center, spread²)``: Student-t(df) tails mapped to the
    normal, sign kept (all arguments broadcast). ``center = spread = 0`` gives the zero-null z-statistics."""
    b = np.asarray(coef, dtype=float)
    s = np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (b - np.asarray(center, dtype=float)) / np.sqrt(np.asarray(spread, dtype=float) ** 2 + s**2)
    d = np.maximum(np.asarray(df, dtype=float), 1.0)
    z = np.sign(t) * -special.ndtri(np.exp(stats.t.logsf(np.abs(t), d)))
    return np.asarray(np.where(np.isfinite(z), z, 0.0), dtype=float)
