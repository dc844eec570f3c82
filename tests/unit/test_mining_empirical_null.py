"""The placebo null: fitting the effects of random documents, and testing candidates against it."""

from __future__ import annotations

import numpy as np
import pytest

from deltap.mining.empirical_null import (
    RECOMMENDED_PLACEBOS,
    TAIL_MIN_PLACEBOS,
    ZERO,
    describe_null,
    fit_placebo_null,
    leave_one_out,
    null_p_value,
    null_z,
)
from deltap.mining.estimate import z_statistics


def test_fit_recovers_the_spread_of_document_effects_net_of_estimation_noise() -> None:
    rng = np.random.default_rng(0)
    effects = 0.2 + 0.5 * rng.standard_normal(400)  # what random text does to this solver
    se = np.full(400, 0.3)
    fit = fit_placebo_null(effects + se * rng.standard_normal(400), se)
    assert fit.placebos == 400
    assert fit.center == pytest.approx(0.2, abs=0.08)
    assert fit.spread == pytest.approx(0.5, abs=0.08)
    # pure estimation noise: no spread left once the sampling variance is taken out
    noise_only = fit_placebo_null(0.3 * rng.standard_normal(400), se)
    assert noise_only.spread < 0.1


def test_fit_is_robust_to_one_relevant_placebo() -> None:
    rng = np.random.default_rng(1)
    b = 0.4 * rng.standard_normal(50)
    clean = fit_placebo_null(b, np.full(50, 0.05))
    b[0] = 25.0  # a "random" document that happens to answer the question
    dirty = fit_placebo_null(b, np.full(50, 0.05))
    assert abs(dirty.spread - clean.spread) < 0.1 and abs(dirty.center - clean.center) < 0.1


def test_leave_one_out_excludes_each_placebo() -> None:
    b, se = np.array([0.0, 0.1, -0.1, 0.2, 5.0]), np.full(5, 0.01)
    loo = leave_one_out(b, se)
    assert len(loo) == 5 and all(f.placebos == 4 for f in loo)
    assert loo[4] == fit_placebo_null(b[:4], se[:4])
    assert fit_placebo_null([], []) == ZERO


def test_zero_null_is_the_ordinary_test() -> None:
    rng = np.random.default_rng(2)
    X = rng.random((80, 6)) < 0.5
    y = X @ np.array([1.0, 0, 0, 0, 0, 0]) + rng.standard_normal(80)
    z, reg = z_statistics(X, y)
    assert np.allclose(null_z(reg.coef, reg.se, 80 - 6 - 1), z)
    # a spread makes every test milder; a center shifts it
    assert np.all(np.abs(null_z(reg.coef, reg.se, 73, 0.0, 0.5)) <= np.abs(z) + 1e-12)
    assert null_z(np.array([1.0]), np.array([0.1]), 50, 1.0, 0.0)[0] == pytest.approx(0.0)


def _sparse(rng: np.random.Generator, n: int, share: float, scale: float, se: float) -> tuple[np.ndarray, np.ndarray]:
    """Placebo estimates when most texts do nothing and a ``share`` of them move the outcome by N(0, scale²)."""
    effects = np.where(rng.random(n) < share, scale * rng.standard_normal(n), 0.0)
    return effects + se * rng.standard_normal(n), np.full(n, se)


def test_two_scale_fit_finds_a_heavy_tail_and_only_then() -> None:
    rng = np.random.default_rng(5)
    # the real run's shape: most placebos ~0, a fifth of them far out, small sampling noise
    fit = fit_placebo_null(*_sparse(rng, 200, 0.2, 1.5, 0.1))
    assert fit.spread < 0.15 and fit.tail_weight == pytest.approx(0.2, abs=0.06)
    assert fit.tail_spread == pytest.approx(1.5, abs=0.3)
    # normal document effects (the simulation's logprob_text shape): the tail is rarely accepted
    accepted = [fit_placebo_null(0.4 * rng.standard_normal(20) + 0.3 * rng.standard_normal(20), np.full(20, 0.3)).tail_weight > 0 for _ in range(300)]
    assert np.mean(accepted) < 0.08  # a spurious tail widens the null: power, not the error rate, pays
    # a single far placebo of 20 is a tail since issue 14 (about 1 in 20 random texts moves the outcome that much);
    # its share is the smoothed (1 + 1) / (20 + 2), its spread known from one placebo (1 df)
    b = 0.05 * rng.standard_normal(20)
    b[0] = 8.0
    one = fit_placebo_null(b, np.full(20, 0.05))
    assert TAIL_MIN_PLACEBOS == 1.0
    assert one.tail_weight == pytest.approx(2 / 22, abs=0.01) and one.tail_df == pytest.approx(1.0, abs=0.05)


def test_mixture_null_tail_probability() -> None:
    from scipy import special, stats

    b, se, df = np.array([3.0, -0.5]), np.array([0.1, 0.1]), 60
    z = null_z(b, se, df, 0.0, 0.1, 0.2, 1.5)
    for k in range(2):
        tail = 0.8 * stats.t.sf(abs(b[k]) / np.hypot(0.1, 0.1), df) + 0.2 * stats.t.sf(abs(b[k]) / np.hypot(1.5, 0.1), df)
        assert z[k] == pytest.approx(np.sign(b[k]) * -special.ndtri(tail), rel=1e-9)
    # no tail weight: exactly the normal null
    assert np.allclose(null_z(b, se, df, 0.0, 0.1, 0.0, 1.5), null_z(b, se, df, 0.0, 0.1))
    # the tail makes every test milder
    assert np.all(np.abs(z) < np.abs(null_z(b, se, df, 0.0, 0.1)))
    text = describe_null({"center": 0.0, "spread": 0.1, "tail_weight": 0.2, "tail_spread": 1.5, "placebos": 20, "unit": "nats"})
    assert text == "center +0.00, spread 0.10 nats, and a heavy tail: 20% of random texts with spread 1.50 nats (from 20 placebos)"


def test_null_z_far_tail_is_not_zero() -> None:
    # Issue 14 item 1: a candidate far beyond the null (t = 80, 1e-300 tails) kept z = 0 (p = 1) through exp underflow.
    z = null_z([8.0, -8.0, 0.0], [0.1, 0.1, 0.0], 100)
    assert z[0] > 20 and z[1] < -20 and z[2] == 0.0
    inf = null_z([1.0], [0.0], 100)  # a zero SE: an infinite statistic stays infinite, never 0
    assert inf[0] == np.inf


def _fresh_null_ratio(n: int, reps: int, alpha: float, seed: int) -> float:
    """Rejection rate of fresh null documents (sparse heavy-tailed text effects, the SmolLM2 shape) against a null
    fitted on ``n`` placebos, at a one-sided level ``alpha`` like BH's q·R/M, divided by ``alpha``."""
    rng = np.random.default_rng(seed)
    se = 0.05

    def draw(k: int) -> np.ndarray:
        return np.where(rng.random(k) < 0.2, 1.5 * rng.standard_normal(k), 0.0) + se * rng.standard_normal(k)

    rate = 0.0
    for _ in range(reps):
        fit = fit_placebo_null(draw(n), np.full(n, se))
        fresh = draw(4000)
        p = null_p_value(fresh, np.full(4000, se), 100, fit)
        rate += float(np.mean((p <= alpha) & (fresh > 0)))
    return rate / reps / alpha


def test_placebo_null_is_valid_at_the_p_values_bh_uses_with_the_recommended_placebos() -> None:
    # Issue 14 item 2: the fitted null was plugged in as known; with 20-50 placebos of the SmolLM2 shape fresh null
    # documents were rejected 2-20× too often at the p-values BH uses. With the predictive null and the recommended
    # 50 placebos: nominal within MC error (measured over 5 seeds × 200 fits: 0.91-1.13 at 0.0025; 30 placebos
    # 0.97-1.48, mean 1.14 — why RECOMMENDED_PLACEBOS is 50).
    assert RECOMMENDED_PLACEBOS == 50
    assert _fresh_null_ratio(50, 200, 0.0025, seed=4) <= 1.2
    assert _fresh_null_ratio(50, 200, 0.001, seed=5) <= 1.3


def test_null_p_value_is_the_one_sided_tail_of_null_z() -> None:
    from scipy import stats

    fit = fit_placebo_null(*_sparse(np.random.default_rng(8), 40, 0.2, 1.5, 0.1))
    b, se = np.array([2.0, -3.0, 0.1]), np.full(3, 0.1)
    z = null_z(b, se, 80, *fit.params())
    np.testing.assert_allclose(null_p_value(b, se, 80, fit), stats.norm.sf(np.abs(z)), rtol=1e-9)
    np.testing.assert_allclose(null_p_value(b, se, 80, {"used": "placebo", **fit.to_dict()}), null_p_value(b, se, 80, fit))
