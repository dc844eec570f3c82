"""Effect estimates per (case, candidate): difference in means, joint regression, p-values, multiple testing.

Two estimators of the same quantity, ΔP(d) = P(success | d in) − P(success | d out):

* **Difference in means** ``p_in − p_out`` with its confidence interval. For a binary outcome the interval is
  Newcombe's hybrid score interval (Newcombe 1998, "Interval estimation for the difference between independent
  proportions", Stat. Med. 17:873-890, method 10), built from two Wilson score intervals: its coverage stays close to
  nominal at small n and near 0/1, where the Wald interval undercovers badly. For a continuous outcome (``logprob``)
  the Welch interval.
* **Joint regression** of the outcome on all inclusion indicators at once (a linear probability model for ``pass``),
  ``y = β0 + Σ_j β_j x_j + ε``, with heteroskedasticity-consistent standard errors. Under the randomised design β_j is
  the average causal effect of including d_j. We use **HC2** (MacKinnon & White 1985): ``Var(β̂) = A Σ_i z_i z_iᵀ
  e_i² / (1 − h_ii) A`` with ``A = (ZᵀZ)⁻¹``; it is unbiased under homoskedasticity, and its tests hold size at the
  small n of a mining run better than HC0/HC1 while being less conservative than HC3 (Long & Ervin 2000, "Using
  heteroscedasticity consistent standard errors in the linear regression model", Am. Stat. 54:217-224). Because
  the other candidates' effects are modelled instead of left in the noise, its standard errors are smaller than
  the difference in means' whenever other candidates matter — its coefficients are the effects the verdicts and
  grades use. The *tests* use the classical OLS standard error with t tails (:func:`z_statistics` explains why it
  is the better-calibrated choice under this randomised design); HC2 is reported beside every estimate.

Every function here also works on a leading batch axis, so the simulation benchmark evaluates a thousand
replications at once with numpy.

Multiple testing: Benjamini–Hochberg (1995) step-up over every (case, candidate) hypothesis of the dataset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = [
    "DiffInMeans",
    "Regression",
    "benjamini_hochberg",
    "diff_in_means",
    "newcombe_interval",
    "normal_two_sided_p",
    "ols_hc",
    "t_to_z",
    "z_statistics",
    "wilson_interval",
]

FloatArray = NDArray[np.float64]


def normal_two_sided_p(z: ArrayLike) -> FloatArray:
    """Two-sided normal p-value ``2(1 − Φ(|z|))`` computed with ``erfc`` so tiny p-values do not underflow to 0."""
    za = np.abs(np.asarray(z, dtype=np.float64))
    return np.asarray(special.erfc(za / math.sqrt(2.0)), dtype=np.float64)


def wilson_interval(successes: ArrayLike, n: ArrayLike, z: float = 1.959963984540054) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval for a binomial proportion (Wilson 1927). ``n == 0`` gives ``[0, 1]``.

    ``(p̂ + z²/2n ± z sqrt(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``.
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    # n == 0 is replaced before any division (no floating-point warning to silence); its interval is [0, 1] below
    p = np.where(n > 0, s / np.where(n > 0, n, 1.0), 0.5)
    nn = np.where(n > 0, n, 1.0)
    denom = 1.0 + z * z / nn
    centre = (p + z * z / (2 * nn)) / denom
    half = z * np.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), 0.0)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), 1.0)
    return low, high


def newcombe_interval(
    s_in: ArrayLike, n_in: ArrayLike, s_out: ArrayLike, n_out: ArrayLike, z: float = 1.959963984540054
) -> tuple[FloatArray, FloatArray]:
    """Newcombe's hybrid score interval for ``p_in − p_out`` (Newcombe 1998, method 10).

    With Wilson intervals ``[l1, u1]`` for ``p_in`` and ``[l2, u2]`` for ``p_out``:
    ``low = d − sqrt((p1 − l1)² + (u2 − p2)²)``, ``high = d + sqrt((u1 − p1)² + (p2 − l2)²)``.
    """
    s_in = np.asarray(s_in, dtype=float)
    s_out = np.asarray(s_out, dtype=float)
    n_in = np.asarray(n_in, dtype=float)
    n_out = np.asarray(n_out, dtype=float)
    p1 = np.where(n_in > 0, s_in / np.where(n_in > 0, n_in, 1), 0.5)
    p2 = np.where(n_out > 0, s_out / np.where(n_out > 0, n_out, 1), 0.5)
    l1, u1 = wilson_interval(s_in, n_in, z)
    l2, u2 = wilson_interval(s_out, n_out, z)
    d = p1 - p2
    low = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)


@dataclass(frozen=True)
class DiffInMeans:
    """Per-candidate difference in means (arrays of shape ``(..., m)``)."""

    p_in: FloatArray
    p_out: FloatArray
    n_in: NDArray[np.int64]
    n_out: NDArray[np.int64]
    delta: FloatArray
    se: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray


def diff_in_means(X: ArrayLike, y: ArrayLike, binary: bool = True, z: float = 1.959963984540054) -> DiffInMeans:
    """``p_in``, ``p_out``, ΔP = p_in − p_out, its standard error and confidence interval, per candidate.

    Args:
        X: Inclusion indicators, shape ``(..., n, m)`` (trial × candidate).
        y: Outcomes, shape ``(..., n)`` (0/1 for ``pass``, any real for ``logprob``).
        binary: Newcombe's hybrid score interval (binary) or Welch's normal interval (continuous).
        z: Normal quantile of the interval (1.96 for 95%).

    Returns:
        Arrays of shape ``(..., m)``. A candidate never in (or never out) gets ``nan`` for the missing mean and
        ``se = inf``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n_in = X.sum(axis=-2)
    n_out = X.shape[-2] - n_in
    s_in = np.einsum("...nm,...n->...m", X, y)
    s_out = y.sum(axis=-1)[..., None] - s_in
    ss_in = np.einsum("...nm,...n->...m", X, y * y)
    ss_out = (y * y).sum(axis=-1)[..., None] - ss_in
    with np.errstate(divide="ignore", invalid="ignore"):
        p_in = np.where(n_in > 0, s_in / n_in, np.nan)
        p_out = np.where(n_out > 0, s_out / n_out, np.nan)
        var_in = np.where(n_in > 1, (ss_in - n_in * p_in**2) / (n_in - 1), np.nan)
        var_out = np.where(n_out > 1, (ss_out - n_out * p_out**2) / (n_out - 1), np.nan)
        if binary:
            # Unpooled binomial variance; for the SE only (the interval is Newcombe's).
            var_in = np.where(n_in > 0, p_in * (1 - p_in) * n_in / np.maximum(n_in - 1, 1), np.nan)
            var_out = np.where(n_out > 0, p_out * (1 - p_out) * n_out / np.maximum(n_out - 1, 1), np.nan)
        se = np.sqrt(np.maximum(var_in, 0) / n_in + np.maximum(var_out, 0) / n_out)
    delta = p_in - p_out
    se = np.where(np.isfinite(se), se, np.inf)
    if binary:
        low, high = newcombe_interval(s_in, n_in, s_out, n_out, z)
        low = np.where((n_in > 0) & (n_out > 0), low, -1.0)
        high = np.where((n_in > 0) & (n_out > 0), high, 1.0)
    else:
        finite = np.isfinite(se) & np.isfinite(delta)
        low = np.where(finite, delta - z * se, -np.inf)
        high = np.where(finite, delta + z * se, np.inf)
    return DiffInMeans(p_in, p_out, n_in.astype(np.int64), n_out.astype(np.int64), delta, se, low, high)


@dataclass(frozen=True)
class Regression:
    """Joint regression estimates per candidate (arrays of shape ``(..., m)``); ``intercept`` is ``(...)``."""

    coef: FloatArray
    se: FloatArray
    z: FloatArray
    p_value: FloatArray
    intercept: FloatArray
    residual_variance: FloatArray


def ols_hc(X: ArrayLike, y: ArrayLike, hc: str = "HC2", ridge: float = 1e-9) -> Regression:
    """OLS of ``y`` on an intercept and the inclusion indicators, with heteroskedasticity-consistent SEs.

    Args:
        X: Inclusion indicators ``(..., n, m)``.
        y: Outcomes ``(..., n)``.
        hc: ``HC0``, ``HC1``, ``HC2`` (default) or ``HC3``.
        ridge: Tiny diagonal load so a degenerate design (a candidate always in or always out, too few trials) gives
            a finite solve; such a candidate's SE is reported as ``inf`` (p = 1).

    Returns:
        Coefficients, robust SEs, ``z = coef / se``, two-sided normal p-values, the intercept and the residual
        variance. With fewer trials than parameters every SE is ``inf``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, m = X.shape[-2], X.shape[-1]
    k = m + 1
    Z = np.concatenate([np.ones((*X.shape[:-1], 1)), X], axis=-1)
    ZtZ = np.einsum("...ni,...nj->...ij", Z, Z)
    # Degenerate columns (constant across trials) are not identifiable; the ridge keeps the solve finite.
    col_var = X.var(axis=-2)
    A = np.linalg.inv(ZtZ + ridge * np.eye(k))
    beta = np.einsum("...ij,...nj,...n->...i", A, Z, y)
    resid = y - np.einsum("...ni,...i->...n", Z, beta)
    h = np.einsum("...ni,...ij,...nj->...n", Z, A, Z)
    h = np.clip(h, 0.0, 1.0 - 1e-12)
    e2 = resid**2
    if hc == "classical":
        w = np.broadcast_to((e2.sum(axis=-1) / max(n - k, 1))[..., None], e2.shape)
    elif hc == "HC0":
        w = e2
    elif hc == "HC1":
        w = e2 * n / max(n - k, 1)
    elif hc == "HC2":
        w = e2 / (1.0 - h)
    elif hc == "HC3":
        w = e2 / (1.0 - h) ** 2
    else:
        raise ValueError(f"unknown hc {hc!r}; expected classical, HC0, HC1, HC2 or HC3")
    meat = np.einsum("...ni,...n,...nj->...ij", Z, w, Z)
    cov = A @ meat @ A
    var = np.diagonal(cov, axis1=-2, axis2=-1)[..., 1:]
    se = np.sqrt(np.maximum(var, 0.0))
    bad = (col_var < 1e-12) | (n <= k)
    # A zero residual (the outcome is an exact function of the inclusions, e.g. "passes iff d_j is in") is a precise
    # estimate, not an unidentified one: se stays 0 and z is ±inf (0 only for an exactly zero effect). Only
    # unidentified columns get se = inf (p = 1).
    se = np.where(bad, np.inf, se)
    # Coefficients within the solve's rounding (the ridge is 1e-9) of zero are zero: with an exact fit their se is
    # ~1e-17 too, and their ratio is noise, not an effect (a saturated case: y constant).
    tiny = 1e-8 * np.maximum(np.ptp(y, axis=-1), 1.0)[..., None]
    coef = np.where(bad | (np.abs(beta[..., 1:]) < tiny), 0.0, beta[..., 1:])
    with np.errstate(invalid="ignore"):  # sign(0) * inf for an exact zero effect with se 0; never a division by 0
        t = np.where(coef == 0, 0.0, coef / np.where(se > 0, se, 1.0))
        z = np.where(np.isfinite(se) & (se > 0), t, np.where(np.isfinite(se), np.sign(coef) * np.inf, 0.0))
    z = np.where(np.isnan(z), 0.0, z)
    p = normal_two_sided_p(z)
    resid_var = e2.sum(axis=-1) / max(n - k, 1)
    return Regression(coef, se, z, p, beta[..., 0], resid_var)


def z_statistics(X: ArrayLike, y: ArrayLike) -> tuple[FloatArray, Regression]:
    """Normal-equivalent z-statistics of the per-candidate tests, and the classical fit they come from.

    The tests use the *classical* OLS standard error with Student-t(n − m − 1) tails, mapped to the normal scale
    (``z* = Φ⁻¹(F_t(t))``) so the group-sequential machinery can treat them as z-statistics. Why not the robust SE
    here: under the randomised design the inclusion of d_j is independent of every other regressor and of the error,
    so under the sharp null "d_j changes nothing" the residual variance is the same whether d_j is in or out and the
    classical variance of β̂_j is consistent; it is also far less noisy than HC SEs with 0/1 outcomes, whose tests
    over-reject in the far tail at small n (measured in the simulation: HC2 rejects 2.6× too often at z = 3.09 with
    64 trials, the classical t-test within 10%). The robust HC2 SE is still reported with every estimate.
    """
    reg = ols_hc(X, y, hc="classical")
    n = np.asarray(X).shape[-2]
    df = max(n - np.asarray(X).shape[-1] - 1, 1)
    t = np.asarray(reg.z, dtype=float)
    return t_to_z(t, df), reg


def t_to_z(t: ArrayLike, df: ArrayLike) -> FloatArray:
    """Normal-equivalent z of Student-t(df) statistics, sign kept: ``z = −Φ⁻¹(F̄_t(|t|))·sign(t)``.

    Computed from the log tail with :func:`scipy.special.ndtri_exp`, so a far-tail statistic keeps a large z instead
    of ``exp`` underflowing to 0 (which made a decisive document p = 1). An infinite t stays infinite; only
    ``nan`` (0/0: no effect and no noise) maps to 0.
    """
    from scipy import stats

    t = np.asarray(t, dtype=float)
    # logsf and ndtri_exp map infinite t to infinite z without floating-point warnings; nan stays nan (then 0)
    z = np.sign(t) * -special.ndtri_exp(stats.t.logsf(np.abs(t), np.asarray(df, dtype=float)))
    return np.asarray(np.where(np.isnan(z), 0.0, z), dtype=float)


def benjamini_hochberg(p_values: ArrayLike, q: float = 0.05, axis: int = -1) -> tuple[NDArray[np.bool_], FloatArray]:
    """Benjamini–Hochberg step-up (Benjamini & Hochberg 1995, JRSS-B 57:289-300).

    Rejects ``H_(1..k)`` for the largest ``k`` with ``p_(k) ≤ k q / M``; controls the FDR at ``q·M0/M`` for
    independent or positively dependent (PRDS) p-values. The adjusted p-values ("q-values") are
    ``min_{j ≥ i} M p_(j) / j`` clipped to 1. ``nan`` p-values are treated as 1 (never rejected).

    Args:
        p_values: Array of p-values; BH runs along ``axis`` (use a flat array for one dataset-wide family).
        q: Target false discovery rate.
        axis: The family axis.

    Returns:
        ``(rejected, q_values)`` with the shape of ``p_values``.
    """
    p = np.asarray(p_values, dtype=float)
    p = np.where(np.isnan(p), 1.0, p)
    p = np.moveaxis(p, axis, -1)
    M = p.shape[-1]
    if M == 0:
        empty = np.moveaxis(p, -1, axis)
        return empty.astype(bool), empty
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    ranks = np.arange(1, M + 1)
    adj = ranked * M / ranks
    adj = np.minimum.accumulate(adj[..., ::-1], axis=-1)[..., ::-1]
    adj = np.clip(adj, 0.0, 1.0)
    qvals = np.empty_like(adj)
    np.put_along_axis(qvals, order, adj, axis=-1)
    rejected = qvals <= q
    return np.moveaxis(rejected, -1, axis), np.moveaxis(qvals, -1, axis)
