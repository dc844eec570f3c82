"""Group-sequential repeated p-values: exact crossing probabilities and error control under repeated looks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from deltap.mining.adaptive import StoppingRule, crossing_probability, look_schedule


def test_single_look_is_the_normal_tail() -> None:
    assert crossing_probability(2.326, [1.0]) == pytest.approx(stats.norm.sf(2.326), rel=1e-6)
    assert crossing_probability(1.96, [1.0], two_sided=True) == pytest.approx(0.05, rel=1e-3)


@pytest.mark.parametrize("c", [1.5, 2.5, 3.0])
def test_crossing_probability_matches_monte_carlo(c: float) -> None:
    times = look_schedule(128, 32, 16).times
    rng = np.random.default_rng(1)
    inc = rng.standard_normal((400_000, len(times))) * np.sqrt(np.diff(np.r_[0.0, times]))
    mc = float(np.mean(np.cumsum(inc, axis=1).max(axis=1) >= c))
    exact = crossing_probability(c, times)
    assert exact == pytest.approx(mc, rel=0.06, abs=2e-4)


def test_schedule_rules() -> None:
    s = look_schedule(100, 32, 16)
    assert s.looks == (32, 48, 64, 80, 96, 100)
    assert look_schedule(20, 32, 16).looks == (20,)
    # interim looks need 2m + 1 trials (residual df >= m); the budget is always the last look
    assert look_schedule(128, 32, 16, candidates=20).looks == (48, 64, 80, 96, 112, 128)
    assert look_schedule(128, 32, 16, candidates=60).looks == (128,)
    with pytest.raises(ValueError):
        look_schedule(0)


def test_peeking_with_repeated_p_values_keeps_alpha_and_naive_peeking_does_not() -> None:
    # Null z-paths observed at every look; reject as soon as the p-value drops below alpha.
    s = look_schedule(192, 32, 16)
    rng = np.random.default_rng(2)
    R, alpha = 40_000, 0.01
    inc = rng.standard_normal((R, len(s.looks))) * np.sqrt(np.diff(np.r_[0.0, s.times]))
    z = np.cumsum(inc, axis=1) / np.sqrt(s.times)
    p_rep = np.stack([s.repeated_p_value(z[:, : k + 1]) for k in range(len(s.looks))], axis=1)
    assert np.all(np.diff(p_rep, axis=1) <= 1e-12)  # repeated p-values never increase
    fpr_rep = float(np.mean(p_rep.min(axis=1) <= alpha))
    fpr_naive = float(np.mean(stats.norm.sf(z).min(axis=1) <= alpha))
    assert fpr_rep <= alpha * 1.15
    assert fpr_rep >= alpha * 0.7  # not wastefully conservative
    assert fpr_naive > 2.5 * alpha


def test_final_boundary_close_to_fixed_sample() -> None:
    s = look_schedule(128, 32, 16)
    # O'Brien-Fleming shape: at the last look the critical z is within 5% of the one-look value.
    assert s.critical_b(0.005) <= 1.05 * stats.norm.isf(0.005)


def test_stopping_rule_decides_clear_cases_only() -> None:
    s = look_schedule(128, 32, 16)
    rule = StoppingRule(q=0.05)
    # At look 3 (t = 0.5): one huge effect, one null with tight SE, one open mid-size effect.
    z_path = np.array([[[6.0, 8.0, 10.0], [0.1, -0.2, 0.0], [1.5, 2.0, 2.2]]])
    coef = np.array([[0.6, 0.0, 0.2]])
    se = np.array([[0.06, 0.03, 0.09]])
    done = rule.decided(s, z_path, coef, se)[0]
    assert done.tolist() == [True, True, False]
    # At the final look everything is decided.
    z_full = np.zeros((1, 3, len(s.looks)))
    assert rule.decided(s, z_full, coef, se).all()
