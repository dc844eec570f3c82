"""Estimators of the mining engine: intervals, regression, BH — checked against published values and references."""

from __future__ import annotations

import math

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


# ---------------------------------------------------------------------------------------------------------------
# Every estimator against its formula written out in plain Python/numpy loops or scipy (issue 19, mutation testing).

Z95 = 1.959963984540054


def _wilson_ref(s: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = s / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _newcombe_ref(s1: int, n1: int, s2: int, n2: int, z: float = Z95) -> tuple[float, float]:
    p1 = s1 / n1 if n1 else 0.5
    p2 = s2 / n2 if n2 else 0.5
    l1, u1 = _wilson_ref(s1, n1, z)
    l2, u2 = _wilson_ref(s2, n2, z)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return max(-1.0, low), min(1.0, high)


def test_normal_two_sided_p_against_scipy() -> None:
    from deltap.mining.estimate import normal_two_sided_p

    z = np.array([0.0, 0.5, -1.96, 3.0, -8.0, 37.0])
    got = normal_two_sided_p(z)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, 2 * stats.norm.sf(np.abs(z)), rtol=1e-12)
    assert got[-1] > 0  # no underflow to 0 in the far tail
    assert float(normal_two_sided_p(-2.5)) == pytest.approx(2 * stats.norm.sf(2.5), rel=1e-12)


@pytest.mark.parametrize("z", [Z95, 1.0, 2.575829303549])
def test_wilson_interval_against_the_formula(z: float) -> None:
    cases = [(0, 0), (0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (1, 2), (81, 263), (7, 40)]
    low, high = wilson_interval([s for s, _ in cases], [n for _, n in cases], z)
    for i, (s, n) in enumerate(cases):
        ref = _wilson_ref(s, n, z)
        assert (low[i], high[i]) == pytest.approx(ref, abs=1e-14), (s, n)
    default = wilson_interval(3, 10)
    assert (float(default[0]), float(default[1])) == pytest.approx(_wilson_ref(3, 10), abs=1e-14)


@pytest.mark.parametrize("z", [Z95, 1.2])
def test_newcombe_interval_against_the_formula(z: float) -> None:
    cases = [
        (56, 70, 48, 80),
        (0, 10, 10, 10),
        (10, 10, 0, 10),
        (5, 9, 2, 11),
        (0, 0, 3, 5),
        (2, 4, 0, 0),
        (1, 1, 1, 1),
        (0, 3, 0, 4),
    ]
    a = np.array(cases).T
    low, high = newcombe_interval(a[0], a[1], a[2], a[3], z)
    for i, case in enumerate(cases):
        assert (low[i], high[i]) == pytest.approx(_newcombe_ref(*case, z), abs=1e-14), case
    d_low, d_high = newcombe_interval(5, 9, 2, 11)
    assert (float(d_low), float(d_high)) == pytest.approx(_newcombe_ref(5, 9, 2, 11), abs=1e-14)


def _dim_ref(X: np.ndarray, y: np.ndarray, j: int, binary: bool, z: float = Z95) -> dict[str, float]:
    """Difference in means of column j by loops: means, unbiased variances, SE, the interval."""
    yin = [float(v) for v, x in zip(y, X[:, j], strict=True) if x]
    yout = [float(v) for v, x in zip(y, X[:, j], strict=True) if not x]
    n1, n2 = len(yin), len(yout)
    p1 = sum(yin) / n1 if n1 else math.nan
    p2 = sum(yout) / n2 if n2 else math.nan

    def var(v: list[float], p: float) -> float:
        if binary:
            return p * (1 - p) * len(v) / max(len(v) - 1, 1) if v else math.nan
        return sum((t - p) ** 2 for t in v) / (len(v) - 1) if len(v) > 1 else math.nan

    se = math.sqrt(var(yin, p1) / n1 + var(yout, p2) / n2) if n1 and n2 else math.nan
    se = se if math.isfinite(se) else math.inf
    if binary:
        low, high = _newcombe_ref(int(sum(yin)), n1, int(sum(yout)), n2, z) if n1 and n2 else (-1.0, 1.0)
    else:
        ok = math.isfinite(se) and math.isfinite(p1 - p2)
        low, high = (p1 - p2 - z * se, p1 - p2 + z * se) if ok else (-math.inf, math.inf)
    return {
        "p_in": p1,
        "p_out": p2,
        "n_in": n1,
        "n_out": n2,
        "delta": p1 - p2,
        "se": se,
        "ci_low": low,
        "ci_high": high,
    }


@pytest.mark.parametrize("binary", [True, False])
def test_diff_in_means_against_loops(binary: bool) -> None:
    rng = np.random.default_rng(21)
    X = rng.random((25, 6)) < 0.5
    X[:, 3] = True  # never out
    X[:, 4] = False  # never in
    X[:, 5] = False
    X[0, 5] = True  # in once: no variance inside (continuous)
    y = (rng.random(25) < 0.4).astype(float) if binary else rng.normal(0.3, 1.2, 25)
    dm = diff_in_means(X, y, binary=binary)
    for j in range(6):
        ref = _dim_ref(X, y, j, binary)
        for key, value in ref.items():
            got = float(getattr(dm, key)[j])
            if math.isnan(value):
                assert math.isnan(got), (j, key)
            else:
                assert got == pytest.approx(value, rel=1e-12, abs=1e-14), (j, key, got, value)
    assert dm.n_in.dtype == np.int64 and dm.n_out.dtype == np.int64
    z = 1.3
    other = diff_in_means(X, y, binary=binary, z=z)
    for j in (0, 1, 2):
        ref = _dim_ref(X, y, j, binary, z)
        assert (float(other.ci_low[j]), float(other.ci_high[j])) == pytest.approx(
            (ref["ci_low"], ref["ci_high"]), rel=1e-12
        )


def test_diff_in_means_batched_equals_loop() -> None:
    rng = np.random.default_rng(22)
    X = rng.random((3, 30, 4)) < 0.5
    y = rng.normal(size=(3, 30))
    batched = diff_in_means(X, y, binary=False)
    for r in range(3):
        one = diff_in_means(X[r], y[r], binary=False)
        for key in ("p_in", "p_out", "delta", "se", "ci_low", "ci_high"):
            np.testing.assert_allclose(getattr(batched, key)[r], getattr(one, key), rtol=1e-12)


def _ols_ref(X: np.ndarray, y: np.ndarray, hc: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """OLS with the sandwich written out: (coef, se, intercept, residual variance)."""
    n, m = X.shape
    k = m + 1
    Z = np.column_stack([np.ones(n), X.astype(float)])
    beta = np.linalg.solve(Z.T @ Z, Z.T @ y)
    e = y - Z @ beta
    A = np.linalg.inv(Z.T @ Z)
    h = np.array([Z[i] @ A @ Z[i] for i in range(n)])
    s2 = float(e @ e) / (n - k)
    omega = {
        "classical": lambda: np.full(n, s2),
        "HC0": lambda: e**2,
        "HC1": lambda: e**2 * n / (n - k),
        "HC2": lambda: e**2 / (1 - h),
        "HC3": lambda: e**2 / (1 - h) ** 2,
    }[hc]()
    cov = A @ (Z.T * omega) @ Z @ A
    return beta[1:], np.sqrt(np.diag(cov))[1:], float(beta[0]), s2


@pytest.mark.parametrize("hc", ["classical", "HC0", "HC1", "HC2", "HC3"])
def test_ols_every_variance_against_the_sandwich(hc: str) -> None:
    rng = np.random.default_rng(23)
    X = rng.random((40, 3)) < 0.5
    y = 0.5 + X @ np.array([0.8, 0.0, -0.4]) + rng.normal(0, 0.3 + 0.5 * X[:, 0], 40)
    coef, se, intercept, s2 = _ols_ref(X, y, hc)
    reg = ols_hc(X, y, hc=hc)
    np.testing.assert_allclose(reg.coef, coef, rtol=1e-7)
    np.testing.assert_allclose(reg.se, se, rtol=1e-7)
    np.testing.assert_allclose(reg.z, coef / se, rtol=1e-7)
    np.testing.assert_allclose(reg.p_value, 2 * stats.norm.sf(np.abs(coef / se)), rtol=1e-6)
    assert float(reg.intercept) == pytest.approx(intercept, rel=1e-7)
    assert float(reg.residual_variance) == pytest.approx(s2, rel=1e-9)


def test_ols_default_is_hc2_and_unknown_hc_is_refused() -> None:
    rng = np.random.default_rng(24)
    X = rng.random((30, 2)) < 0.5
    y = rng.normal(size=30)
    np.testing.assert_array_equal(ols_hc(X, y).se, ols_hc(X, y, hc="HC2").se)
    with pytest.raises(ValueError) as info:
        ols_hc(X, y, hc="HC4")
    assert str(info.value) == "unknown hc 'HC4'; expected classical, HC0, HC1, HC2 or HC3"


def test_ols_with_no_residual_degrees_of_freedom() -> None:
    # n = k = 3: an exact fit with nothing left to estimate the noise from: every SE is inf, every z 0, p 1
    X = np.array([[1, 0], [0, 1], [1, 1]], dtype=bool)
    y = np.array([1.0, 2.0, 4.0])
    reg = ols_hc(X, y, hc="classical")
    assert np.all(np.isinf(reg.se)) and reg.z.tolist() == [0.0, 0.0] and reg.p_value.tolist() == [1.0, 1.0]
    assert reg.coef.tolist() == [0.0, 0.0]  # not identified: reported as 0
    assert float(reg.residual_variance) == pytest.approx(0.0, abs=1e-12)  # divided by max(n - k, 1)
    # one residual degree of freedom: finite SEs
    X4 = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=bool)
    y4 = np.array([1.0, 2.0, 4.0, 0.5])
    reg4 = ols_hc(X4, y4, hc="classical")
    coef, se, _, s2 = _ols_ref(X4, y4, "classical")
    np.testing.assert_allclose(reg4.se, se, rtol=1e-7)
    assert float(reg4.residual_variance) == pytest.approx(s2, rel=1e-9)


def test_ols_exact_fit_gives_a_huge_z_with_the_effect_sign() -> None:
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]], dtype=bool)
    y = 2.0 * X[:, 0] - 3.0 * X[:, 1] + 1.0  # no noise at all
    reg = ols_hc(X, y, hc="classical")
    np.testing.assert_allclose(reg.coef, [2.0, -3.0], atol=1e-8)
    assert reg.z[0] > 1e6 and reg.z[1] < -1e6 and reg.p_value.tolist() == [0.0, 0.0]  # se at rounding level
    assert np.all(reg.se < 1e-6) and np.all(reg.se >= 0)
    z, _ = z_statistics(X, y)
    assert z[0] > 10 and z[1] < -10  # t ~ 1e9 on 3 df


def test_ols_rounding_level_coefficients_are_zero() -> None:
    # y depends on column 0 only, exactly: column 1's coefficient is rounding noise (|β| < 1e-8 · range of y) -> 0.
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 1], [0, 0]], dtype=bool)
    y = 5e-9 * X[:, 0] + 7.0
    reg = ols_hc(X, y, hc="classical")
    assert reg.coef.tolist() == [0.0, 0.0] and reg.z.tolist() == [0.0, 0.0]  # ptp(y) < 1: the floor is 1e-8
    y2 = 1000.0 * X[:, 0] + 2e-6 * X[:, 1]  # 2e-6 is below 1e-8 · 1000 = 1e-5: zero; 1000 is kept
    reg2 = ols_hc(X, y2, hc="classical")
    assert reg2.coef[1] == 0.0 and reg2.coef[0] == pytest.approx(1000.0)


@pytest.mark.parametrize("df", [1, 5, 60])
def test_t_to_z_against_scipy(df: int) -> None:
    from deltap.mining.estimate import t_to_z

    t = np.array([0.0, 0.7, -2.0, 4.5, -12.0])
    got = t_to_z(t, df)
    np.testing.assert_allclose(got, np.sign(t) * stats.norm.isf(stats.t.sf(np.abs(t), df)), rtol=1e-9, atol=1e-12)
    assert t_to_z(np.array([np.inf, -np.inf, np.nan]), df).tolist() == [np.inf, -np.inf, 0.0]


def test_z_statistics_use_the_classical_fit_and_n_minus_m_minus_1_df() -> None:
    from deltap.mining.estimate import t_to_z

    rng = np.random.default_rng(25)
    X = rng.random((20, 4)) < 0.5
    y = X[:, 0] * 0.9 + rng.normal(size=20)
    z, reg = z_statistics(X, y)
    coef, se, _, _ = _ols_ref(X, y, "classical")
    np.testing.assert_allclose(reg.se, se, rtol=1e-7)
    np.testing.assert_allclose(z, t_to_z(coef / se, 20 - 4 - 1), rtol=1e-7)
    # fewer trials than parameters: df floors at 1 (and the SEs are inf: z = 0)
    z_small, _ = z_statistics(X[:4], y[:4])
    assert z_small.tolist() == [0.0] * 4


def test_intervals_are_clipped_exactly_to_their_range() -> None:
    # rounding puts the formula a hair outside [0, 1] (Wilson) and [-1, 1] (Newcombe) at s = 0 and s = n
    n = np.arange(1, 400)
    low, _ = wilson_interval(np.zeros_like(n), n)
    _, high = wilson_interval(n, n)
    assert low.min() == 0.0 and high.max() == 1.0 and np.all(low >= 0) and np.all(high <= 1)
    n1, n2 = np.meshgrid(np.arange(1, 40), np.arange(1, 40))
    low, _ = newcombe_interval(0, n1, n2, n2)
    _, high = newcombe_interval(n1, n1, 0, n2)
    assert low.min() == -1.0 and high.max() == 1.0


def test_difference_in_means_with_one_and_two_trials_on_a_side() -> None:
    X = np.zeros((9, 3), dtype=bool)
    X[:2, 0] = True  # in twice
    X[:8, 1] = True  # out once
    X[::2, 2] = True
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    for binary in (True, False):
        dm = diff_in_means(X, y, binary=binary)
        for j in range(3):
            ref = _dim_ref(X, y, j, binary)
            for key, value in ref.items():
                got = float(getattr(dm, key)[j])
                assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value, rel=1e-12, abs=1e-14), (
                    binary,
                    j,
                    key,
                )
    default = diff_in_means(X, y)  # binary by default: Newcombe's interval
    np.testing.assert_array_equal(default.ci_low, diff_in_means(X, y, binary=True).ci_low)
    assert not np.array_equal(default.ci_low, diff_in_means(X, y, binary=False).ci_low)


def test_bh_default_level_and_p_values_rounded_outside_0_1() -> None:
    rej, _ = benjamini_hochberg([0.01, 0.5])
    assert rej.tolist() == [True, False]  # q = 0.05 by default: 0.5 is not rejected (it would be at q = 1)
    # 1 + 2e-16 (a two-sided p at z = 0 after rounding) and -1e-17 (1 - cdf rounding): q-values stay in [0, 1]
    _, q = benjamini_hochberg([1.0 + 2.2e-16, -1e-17, 0.3])
    assert q.tolist() == [1.0, 0.0, 0.44999999999999996]


def _hadamard_design() -> np.ndarray:
    from deltap.mining.design import paley_hadamard

    return paley_hadamard(7)[:, 1:4] > 0  # 8 trials, 3 balanced orthogonal columns: exact arithmetic


def test_exact_coefficients_and_zero_ses_give_exact_statistics() -> None:
    from deltap.mining.design import paley_hadamard

    X = _hadamard_design()
    e = 0.5 * paley_hadamard(7)[:, 5]  # noise orthogonal to the intercept and every column
    noisy = ols_hc(X, X[:, 0] + e, hc="classical", ridge=0.0)
    assert noisy.coef.tolist() == [1.0, 0.0, 0.0] and noisy.se.tolist() == [0.5, 0.5, 0.5]
    assert noisy.z.tolist() == [2.0, 0.0, 0.0]  # an effect of exactly 1 is not mistaken for "no effect"
    exact = ols_hc(X, 2.0 * X[:, 0] - 3.0 * X[:, 1] + 1.0, hc="classical", ridge=0.0)
    assert exact.coef.tolist() == [2.0, -3.0, 0.0] and exact.se.tolist() == [0.0, 0.0, 0.0]
    assert exact.z.tolist() == [np.inf, -np.inf, 0.0] and exact.p_value.tolist() == [0.0, 0.0, 1.0]
    zeros = z_statistics(X, np.zeros(8))  # a case that fails every trial: 0/0 is no effect, z 0, p 1
    assert zeros[0].tolist() == [0.0, 0.0, 0.0] and zeros[1].p_value.tolist() == [1.0, 1.0, 1.0]


def test_ols_rounding_floor_is_per_row_and_at_least_1e_8() -> None:
    X = _hadamard_design()
    y = np.stack([1000.0 * X[:, 0], 1.5e-8 * X[:, 1] + 0.25])  # rows with ranges 1000 and 1.5e-8
    reg = ols_hc(np.stack([X, X]), y, hc="classical")
    assert reg.coef[0, 0] == pytest.approx(1000.0) and reg.coef[1, 1] == pytest.approx(
        1.5e-8, rel=1e-2
    )  # kept (ridge bias 0.4%)
    assert reg.coef[1, 0] == 0.0
    for r in range(2):  # each row's residual variance is its own
        assert float(reg.residual_variance[r]) == pytest.approx(
            float(ols_hc(X, y[r], hc="classical").residual_variance), rel=1e-9, abs=1e-30
        )


def test_hc1_and_z_statistics_with_one_residual_degree_of_freedom() -> None:
    rng = np.random.default_rng(26)
    X = rng.random((5, 3)) < 0.5
    X[0], X[1] = [True, False, False], [False, True, True]
    y = rng.normal(size=5)
    coef, se, _, _ = _ols_ref(X, y, "HC1")  # n - k = 1
    np.testing.assert_allclose(ols_hc(X, y, hc="HC1").se, se, rtol=1e-6)
    from deltap.mining.estimate import t_to_z

    z, reg = z_statistics(X, y)
    np.testing.assert_allclose(z, t_to_z(reg.z, 1), rtol=1e-12)


def _single_trial_design(power: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """30 trials, 3 candidates, candidate 2 in trial 7 only (leverage 1): ``X``, ``y`` and the robust SE written out
    with ``e² / (1 - h)**power`` (HC2: 1, HC3: 2), the leverage-1 trial's term left at 0 (its residual is 0)."""
    rng = np.random.default_rng(27)
    X = rng.random((30, 3)) < 0.5
    X[:, 2] = False
    X[7, 2] = True
    y = rng.normal(size=30)
    Z = np.column_stack([np.ones(30), X.astype(float)])
    A = np.linalg.inv(Z.T @ Z)
    e = y - Z @ (A @ Z.T @ y)
    h = np.einsum("ni,ij,nj->n", Z, A, Z)
    keep = h < 1 - 1e-9
    omega = np.zeros(30)
    omega[keep] = e[keep] ** 2 / (1 - h[keep]) ** power
    return X, y, np.sqrt(np.diag(A @ (Z.T * omega) @ Z @ A))[1:]


def test_a_candidate_in_a_single_trial_has_a_finite_robust_se() -> None:
    # leverage 1: that trial's residual is 0 and its HC2/HC3 term is 0 (not 0/0)
    X, y, se = _single_trial_design(1)
    np.testing.assert_allclose(ols_hc(X, y, hc="HC2").se, se, rtol=1e-5)
    # (HC3 divides by (1 - h)² ~ 1e-18: the ridge's 1e-9 residual then decides that term; HC3 is not used)


def test_estimators_take_numbers_in_any_array_like_form() -> None:
    from deltap.mining.estimate import normal_two_sided_p, t_to_z

    X = [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0], [0, 1]]
    ys = ["1.5", "0.25", "2", "0", "1", "0.5"]
    yf = [1.5, 0.25, 2.0, 0.0, 1.0, 0.5]
    Xs = [[str(v) for v in row] for row in X]
    assert ols_hc(Xs, ys).se.tolist() == ols_hc(X, yf).se.tolist()
    assert diff_in_means(Xs, ys, binary=False).se.tolist() == diff_in_means(X, yf, binary=False).se.tolist()
    assert [a.tolist() for a in wilson_interval(["3", "0"], ["10", "0"])] == [
        a.tolist() for a in wilson_interval([3, 0], [10, 0])
    ]
    got = newcombe_interval(["5"], ["9"], ["2"], ["11"])
    assert [a.tolist() for a in got] == [a.tolist() for a in newcombe_interval([5], [9], [2], [11])]
    assert normal_two_sided_p(["-1.5"]).tolist() == normal_two_sided_p([-1.5]).tolist()
    assert t_to_z(["2.5"], ["7"]).tolist() == t_to_z([2.5], [7]).tolist()
    assert [a.tolist() for a in benjamini_hochberg(["0.01", "0.2"])] == [
        a.tolist() for a in benjamini_hochberg([0.01, 0.2])
    ]


def test_leverage_one_without_the_ridge_adds_nothing_to_hc2_and_hc3() -> None:
    # ridge = 0: the single-trial candidate's leverage is exactly 1; the clip keeps its (zero) term finite
    for hc, power in (("HC2", 1), ("HC3", 2)):
        X, y, se = _single_trial_design(power)
        np.testing.assert_allclose(ols_hc(X, y, hc=hc, ridge=0.0).se, se, rtol=1e-5)  # HC3: (2e-16)² / (1e-12)² is left


def test_difference_in_means_with_two_trials_out() -> None:
    X = np.ones((7, 2), dtype=bool)
    X[:2, 0] = False  # out twice
    X[3, 1] = False  # out once
    for y in (np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]), np.array([0.5, 2.0, -1.0, 0.25, 1.5, 0.0, 3.0])):
        binary = bool(set(y.tolist()) <= {0.0, 1.0})
        dm = diff_in_means(X, y, binary=binary)
        for j in range(2):
            ref = _dim_ref(X, y, j, binary)
            for key, value in ref.items():
                got = float(getattr(dm, key)[j])
                assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value, rel=1e-12, abs=1e-14), (
                    binary,
                    j,
                    key,
                )
