"""Statistics for evaluation: bootstrap confidence intervals, paired tests, Holm correction.

All randomness comes from a ``numpy.random.Generator`` built from an explicit seed (never a global seed), so every
number is reproducible from ``seed``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

__all__ = ["bootstrap_ci", "holm", "paired_t_test", "randomization_test"]

_CHUNK = 2_000_000  # cells per resampling chunk (bounded memory for 100k queries)


def bootstrap_ci(values: np.ndarray, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> np.ndarray:
    """Percentile bootstrap confidence intervals of the mean, for one or several columns resampled together.

    Queries are resampled with replacement ``n_resamples`` times (the same resamples for every column, so intervals
    of different metrics come from the same pseudo-samples); the interval is the ``(1 − c)/2`` and ``(1 + c)/2``
    quantiles of the resampled means.

    Reference: Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13.

    Args:
        values: ``(n,)`` or ``(n, m)`` per-query values.
        n_resamples: Number of bootstrap resamples.
        confidence: Coverage of the interval.
        seed: Seed of the resampling.

    Returns:
        ``(2,)`` or ``(m, 2)`` array of ``[low, high]``; NaN when there are no queries.
    """
    arr = np.asarray(values, dtype=np.float64)
    one = arr.ndim == 1
    if one:
        arr = arr[:, None]
    n, m = arr.shape
    if n == 0:
        out = np.full((m, 2), np.nan)
        return out[0] if one else out
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    means = np.empty((n_resamples, m))
    step = max(1, _CHUNK // n)
    for start in range(0, n_resamples, step):
        b = min(step, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n))
        means[start : start + b] = arr[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    out = np.quantile(means, [alpha, 1.0 - alpha], axis=0).T
    return out[0] if one else out


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired Student t-test p-value for ``mean(a − b) = 0``.

    .. math:: t = \\frac{\\bar d}{s_d / \\sqrt{n}}, \\quad d_i = a_i - b_i, \\quad \\nu = n - 1

    Degenerate cases are defined instead of returning NaN: all differences zero → p = 1; constant non-zero
    difference → p = 0; fewer than 2 queries → p = 1.

    Reference: Student, "The probable error of a mean", Biometrika 6(1), 1908; Smucker, Allan & Carterette,
    "A comparison of statistical significance tests for information retrieval evaluation", CIKM 2007.
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n < 2:
        return 1.0
    mean = d.mean()
    sd = d.std(ddof=1)
    if sd == 0 or not math.isfinite(sd):
        return 1.0 if mean == 0 else 0.0
    t = mean / (sd / math.sqrt(n))
    return float(2.0 * sps.t.sf(abs(t), df=n - 1))


def randomization_test(a: np.ndarray, b: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided Fisher randomization (paired permutation) test p-value for ``mean(a − b) = 0``.

    Under the null hypothesis the two systems' labels are exchangeable within each query, so each difference
    ``d_i = a_i − b_i`` keeps or flips its sign with probability 1/2. The p-value is the share of random sign
    assignments whose mean difference is at least as extreme as the observed one, counting the observed one:

    .. math:: p = \\frac{1 + |\\{r : |\\bar d^{(r)}| \\ge |\\bar d|\\}|}{1 + R}

    Reference: Fisher, *The Design of Experiments* (1935); Smucker, Allan & Carterette, CIKM 2007.

    Args:
        a: Per-query values of one system.
        b: Per-query values of the other, same queries in the same order.
        n_resamples: Number of random sign assignments ``R``.
        seed: Seed of the sign draws.
    """
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n == 0:
        return 1.0
    observed = abs(d.mean())
    if observed == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    # A tolerance keeps float summation order from turning an exact tie with the observed value into a miss.
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    count = 0
    step = max(1, _CHUNK // n)
    for start in range(0, n_resamples, step):
        r = min(step, n_resamples - start)
        signs = rng.integers(0, 2, size=(r, n), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ d) / n
        count += int(np.count_nonzero(means >= observed - tol))
    return (count + 1) / (n_resamples + 1)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (step-down, family-wise error control).

    Sort the ``m`` p-values ascending, ``p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j))``; rejecting where
    ``p̃ ≤ α`` controls the family-wise error rate at ``α``.

    Reference: Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6(2), 1979.
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(scaled)
    out = np.empty(m)
    out[order] = adjusted
    return out
