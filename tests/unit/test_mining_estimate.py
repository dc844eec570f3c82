"""Estimators of the mining engine: intervals, regression, BH — checked against published values and references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from deltap.mining.estimate import (
    benjamini_hochberg,
    diff_in_means,
    newcombe_interval,
    ols_hc,
    wilson_interval,
    z_statistics,
)


def test_wilson_matches_newcombe_1998_table() -> None:
    # Newcombe (1998), Stat. Med. 17:857-872, Table II: 81/263 -> 0.2553 to 0.3662 (Wilson score, no CC).
    low, high = wilson_interval(81, 263)
    assert float(low) == pytest.approx(0.2553, abs=5e-5)
    assert float(high) == pytest.approx(0.3662, abs=5e-5)


def test_newcombe_hybrid_matches_published_example() -> None:
    # Newcombe (1998), Stat. Med. 17:873-890, example (a) 56/70 - 48/80, method 10: 0.0524 to 0.3339.
    low, high = newcombe_interval(56, 70, 48, 80)
    assert float(low) == pytest.approx(0.0524, abs=5e-5)
    assert float(high) == pytest.approx(0.3339, abs=5e-5)


def test_newcombe_coverage_small_samples() -> None:
    rng = np.random.default_rng(7)
    R, n1, n2, p1, p2 = 20000, 15, 17, 0.15, 0.05
    s1 = rng.binomial(n1, p1, R)
    s2 = rng.binomial(n2, p2, R)
    low, high = newcombe_interval(s1, n1, s2, n2)
    coverage = float(np.mean((low <= p1 - p2) & (p1 - p2 <= high)))
    assert 0.93 <= coverage <= 0.99  # nominal 0.95 (slightly conservative at small n); Wald undercovers
    wald_se = np.sqrt(s1 / n1 * (1 - s1 / n1) / n1 + s2 / n2 * (1 - s2 / n2) / n2)
    d = s1 / n1 - s2 / n2
    wald = float(np.mean((d - 1.96 * wald_se <= p1 - p2) & (p1 - p2 <= d + 1.96 * wald_se)))
    assert wald < coverage - 0.02


def test_diff_in_means_counts_and_means() -> None:
    X = np.array([[1, 0], [1, 1], [0, 1], [0, 0]], dtype=bool)
    y = np.array([1.0, 1.0, 0.0, 0.0])
    dm = diff_in_means(X, y)
    assert dm.n_in.tolist() == [2, 2]
    assert dm.p_in.tolist() == [1.0, 0.5]
    assert dm.p_out.tolist() == [0.0, 0.5]
    assert dm.delta.tolist() == [1.0, 0.0]


def test_ols_matches_lstsq_and_hc0_sandwich() -> None:
    rng = np.random.default_rng(3)
    X = rng.random((80, 4)) < 0.5
    y = 0.2 + X @ np.array([0.3, 0.0, -0.2, 0.1]) + rng.normal(0, 0.5, 80)
    reg = ols_hc(X, y, hc="HC0")
    Z = np.column_stack([np.ones(80), X.astype(float)])
    beta, *_ = np.linalg.lstsq(Z, y, rcond=None)
    np.testing.assert_allclose(reg.coef, beta[1:], atol=1e-7)
    e = y - Z @ beta
    A = np.linalg.inv(Z.T @ Z)
    cov = A @ (Z.T * e**2) @ Z @ A
    np.testing.assert_allclose(reg.se, np.sqrt(np.diag(cov))[1:], rtol=1e-6)
    hc2 = ols_hc(X, y, hc="HC2")
    hc3 = ols_hc(X, y, hc="HC3")
    assert np.all(reg.se < hc2.se) and np.all(hc2.se < hc3.se)


def test_ols_batched_equals_loop() -> None:
    rng = np.random.default_rng(4)
    X = rng.random((5, 40, 3)) < 0.5
    y = rng.random((5, 40))
    batched = ols_hc(X, y)
    for r in range(5):
        single = ols_hc(X[r], y[r])
        np.testing.assert_allclose(batched.coef[r], single.coef, atol=1e-9)
        np.testing.assert_allclose(batched.se[r], single.se, atol=1e-9)


def test_constant_column_is_not_identified() -> None:
    X = np.zeros((30, 2), dtype=bool)
    X[::2, 0] = True
    reg = ols_hc(X, np.arange(30.0))
    assert np.isinf(reg.se[1]) and reg.p_value[1] == 1.0
    assert np.isfinite(reg.se[0])


def test_test_z_is_calibrated_under_the_null() -> None:
    # Binary outcomes, planted effects on two columns, 18 null columns: tail rates of the null z match N(0, 1).
    rng = np.random.default_rng(11)
    X = rng.random((4000, 64, 20)) < 0.5
    p = np.clip(0.1 + 0.4 * X[..., 0] + 0.3 * X[..., 1], 0, 1)
    y = (rng.random(p.shape) < p).astype(float)
    z, _ = z_statistics(X, y)
    null = z[:, 2:].ravel()
    for c in (1.645, 2.326, 3.09):
        rate = float(np.mean(null > c))
        assert rate == pytest.approx(stats.norm.sf(c), rel=0.25, abs=2e-4), c


def test_bh_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(40), rng.random(10) * 1e-3])
    rej, qv = benjamini_hochberg(p, 0.05)
    np.testing.assert_allclose(qv, stats.false_discovery_control(p, method="bh"), rtol=1e-12)
    assert rej.tolist() == (qv <= 0.05).tolist()
    assert rej[-10:].all()


def test_bh_rows_are_independent_families() -> None:
    p = np.array([[0.001, 0.02, 0.9], [0.04, 0.04, 0.04]])
    rej, _ = benjamini_hochberg(p, 0.05)
    assert rej.tolist() == [[True, True, False], [True, True, True]]


def test_decisive_document_gets_an_infinite_z_not_zero() -> None:
    # Issue 14 item 1: the outcome is exactly "document 0 is in" (a document that decides the answer). The classical
    # fit is exact, so the t-statistic is huge or infinite; exp(logsf) underflowed and z became 0 (p = 1).
    rng = np.random.default_rng(2)
    X = rng.random((128, 24)) < 0.5
    y = X[:, 0].astype(float)
    z, reg = z_statistics(X, y)
    assert z[0] > 30  # not 0, and on the right side
    hc2 = ols_hc(X, y)
    assert np.isfinite(hc2.se[0]) and hc2.se[0] < 1e-6  # a zero residual is a precise estimate, not se = inf
    assert hc2.coef[0] == pytest.approx(1.0, abs=1e-6)


def test_far_tail_z_from_the_log_tail() -> None:
    # Large finite t: the normal-equivalent z keeps growing instead of underflowing to 0.
    X = np.zeros((60, 1), dtype=bool)
    X[::2, 0] = True
    y = np.where(X[:, 0], 1.0, 0.0) + np.tile([1e-9, -1e-9, 2e-9, -2e-9], 15)
    z, _ = z_statistics(X, y)
    assert z[0] > 20
    z_neg, _ = z_statistics(X, -y)
    assert z_neg[0] < -20


def test_constant_outcome_is_no_effect_not_an_infinite_one() -> None:
    # The other side of a zero residual: y constant (a saturated case mined with force) is an exact fit too, and
    # its rounding-level coefficients must not become infinite z-statistics.
    rng = np.random.default_rng(9)
    X = rng.random((64, 6)) < 0.5
    z, reg = z_statistics(X, np.ones(64))
    assert np.all(z == 0.0) and np.all(reg.coef == 0.0)


def test_repeated_interval_matches_the_repeated_p_value() -> None:
    # The interval a verdict rests on excludes 0 exactly when the repeated p-value is below the level.
    from deltap.mining.adaptive import look_schedule
    from deltap.mining.verdicts import repeated_interval

    rng = np.random.default_rng(12)
    sched = look_schedule(128, 48, 16, 20)
    alpha = 0.003
    c = sched.critical_b(alpha)
    agree = 0
    for _ in range(40):
        X = rng.random((128, 20)) < 0.5
        y = 0.3 * X[:, 0] + 0.12 * X[:, 1] + rng.standard_normal(128) * 0.45
        fits, zs = [], []
        for n in sched.looks:
            z, reg = z_statistics(X[:n], y[:n])
            fits.append((reg.coef, reg.se, n - 21))
            zs.append(z)
        low, high = repeated_interval(fits, sched.times, c, c)
        p_up = sched.repeated_p_value(np.stack(zs, axis=-1), 1)
        assert np.all(low <= np.asarray(fits[-1][0]) + 1e-12) and np.all(high >= np.asarray(fits[-1][0]) - 1e-12)
        agree += int(np.array_equal(low > 0, p_up <= alpha))
    assert agree >= 38  # equal up to the p-value table's interpolation at the boundary
    # one look: the ordinary t-interval
    X = rng.random((64, 3)) < 0.5
    y = X[:, 0] + rng.standard_normal(64)
    _, reg = z_statistics(X, y)
    one = look_schedule(64, 64, 16)
    low, _ = repeated_interval([(reg.coef, reg.se, 60)], one.times, 1.959963984540054, 1.959963984540054)
    np.testing.assert_allclose(low, reg.coef - stats.t.isf(0.025, 60) * reg.se, rtol=1e-6)
