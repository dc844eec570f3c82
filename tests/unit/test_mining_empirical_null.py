"""The placebo null: fitting the effects of random documents, and testing candidates against it."""

from __future__ import annotations

import numpy as np
import pytest

from deltap.mining.empirical_null import ZERO, fit_placebo_null, leave_one_out, null_z
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
