"""Benjamini–Hochberg at its exact boundary and against independent implementations.

The reference here is written differently from :func:`deltap.mining.estimate.benjamini_hochberg` (a plain loop over
the sorted p-values, the step-up rule read off the 1995 paper), and statsmodels' ``multipletests(method="fdr_bh")``
is a second reference when it is installed.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from deltap.mining.estimate import benjamini_hochberg


def _reference(p: list[float], q: float) -> tuple[list[bool], list[float]]:
    """BH 1995 step-up by the book: k = max{i : p_(i) <= i q / M}; reject every p <= p_(k).

    q-values: q_(i) = min_{j >= i} min(1, M p_(j) / j), nan counted as p = 1.
    """
    vals = [1.0 if v != v else float(v) for v in p]  # nan -> 1
    m = len(vals)
    order = sorted(range(m), key=lambda i: (vals[i], i))
    k = 0
    for rank, i in enumerate(order, start=1):
        if vals[i] <= rank * q / m:
            k = rank
    cutoff = vals[order[k - 1]] if k else -1.0
    rejected = [v <= cutoff for v in vals]
    qv = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, m * vals[i] / rank, 1.0)
        qv[i] = running
    return rejected, qv


def test_exact_boundary_is_rejected() -> None:
    # Dyadic numbers so every k q / M is exact: p_(k) == k q / M for all k -> every hypothesis is rejected (<=).
    p = [0.1875, 0.0625, 0.25, 0.125]
    rejected, qv = benjamini_hochberg(p, q=0.25)
    assert rejected.tolist() == [True, True, True, True]
    assert qv.tolist() == [0.25, 0.25, 0.25, 0.25]
    # One ulp above the largest bound: the step-up still rejects the three below it.
    p_up = [0.1875, 0.0625, float(np.nextafter(0.25, 1.0)), 0.125]
    assert benjamini_hochberg(p_up, q=0.25)[0].tolist() == [True, True, False, True]


def test_single_hypothesis_at_q() -> None:
    assert benjamini_hochberg([0.05], q=0.05)[0].tolist() == [True]
    assert benjamini_hochberg([float(np.nextafter(0.05, 1.0))], q=0.05)[0].tolist() == [False]


def test_step_up_not_step_down() -> None:
    # p_(1) = 0.03 > q/M = 0.025 but p_(2) = 0.04 <= 2q/M = 0.05: step-up rejects both (step-down would reject none).
    rejected, qv = benjamini_hochberg([0.04, 0.03], q=0.05)
    assert rejected.tolist() == [True, True]
    assert qv.tolist() == pytest.approx([0.04, 0.04], abs=1e-15)
    # ...and nothing when the largest is above its bound too.
    assert benjamini_hochberg([0.06, 0.03], q=0.05)[0].tolist() == [False, False]


def test_q_values_are_monotone_and_clipped() -> None:
    rejected, qv = benjamini_hochberg([0.001, 0.5, 0.9, 0.02, 0.99], q=0.05)
    # M p / rank: 0.005, 0.05, 0.5*5/3, 0.9*5/4, 0.99 -> running minimum from the top, clipped at 1
    assert qv.tolist() == pytest.approx([0.005, 0.8333333333333334, 0.99, 0.05, 0.99], abs=1e-12)
    assert rejected.tolist() == [True, False, False, True, False]


def test_nan_counts_as_one_and_is_never_rejected() -> None:
    rejected, qv = benjamini_hochberg([0.01, float("nan"), 0.02], q=0.05)
    assert rejected.tolist() == [True, False, True]
    assert qv.tolist() == pytest.approx([0.03, 1.0, 0.03])


def test_empty_family() -> None:
    rejected, qv = benjamini_hochberg([], q=0.05)
    assert rejected.shape == (0,) and qv.shape == (0,) and rejected.dtype == bool


def test_axis_runs_one_family_per_row_or_column() -> None:
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 0.1, size=(4, 6))
    for axis in (0, 1, -1):
        rejected, qv = benjamini_hochberg(p, q=0.1, axis=axis)
        assert rejected.shape == qv.shape == p.shape
        moved = np.moveaxis(p, axis, -1)
        for idx in np.ndindex(moved.shape[:-1]):
            ref_rej, ref_q = _reference(moved[idx].tolist(), 0.1)
            assert np.moveaxis(rejected, axis, -1)[idx].tolist() == ref_rej
            assert np.moveaxis(qv, axis, -1)[idx] == pytest.approx(ref_q, abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 60))
    q = float(rng.choice([0.01, 0.05, 0.1, 0.2]))
    # A mix of signals, nulls, exact ties and values sitting exactly on the k q / M grid.
    p = np.concatenate([rng.uniform(0, 0.02, m // 3), rng.uniform(0, 1, m - m // 3)])
    if m > 4:
        p[rng.integers(0, m, 3)] = p[0]
        p[-1] = q * 2 / m
    if seed % 5 == 0:
        p[rng.integers(0, m)] = np.nan
    rejected, qv = benjamini_hochberg(p, q=q)
    ref_rej, ref_q = _reference(p.tolist(), q)
    assert rejected.tolist() == ref_rej
    assert qv.tolist() == pytest.approx(ref_q, abs=1e-12)
    assert np.array_equal(rejected, qv <= q)


@pytest.mark.skipif(
    importlib.util.find_spec("statsmodels") is None,
    reason="statsmodels not installed (the loop reference above still runs)",
)
@pytest.mark.parametrize("seed", range(20))
def test_agrees_with_statsmodels(seed: int) -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(1, 80))
    p = np.concatenate([rng.uniform(0, 0.01, m // 4), rng.uniform(0, 1, m - m // 4)])
    for q in (0.05, 0.2):
        ref_rej, ref_q, _, _ = multipletests(p, alpha=q, method="fdr_bh")
        rejected, qv = benjamini_hochberg(p, q=q)
        assert rejected.tolist() == ref_rej.tolist()
        assert qv == pytest.approx(ref_q, abs=1e-12)
