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


# ---------------------------------------------------------------------------------------------------------------
# References written out independently (issue 19, mutation testing): the crossing probability of a few looks is a
# multivariate normal probability (scipy's Genz integration), the schedule rules and messages are exact.


def _mvn_crossing(c: float, times: list[float], two_sided: bool) -> float:
    t = np.asarray(times)
    # Cov(B(s), B(t)) = min(s, t). scipy integrates by randomized quasi-Monte Carlo (Genz): seeded and run to 1e-8
    # here, or its own error (~1e-5 absolute at the default tolerance) flakes the rel=2e-3 checks of 0.006 tails.
    cov = np.minimum.outer(t, t)
    mvn = stats.multivariate_normal(np.zeros(t.size), cov, seed=0, maxpts=2_000_000, abseps=1e-8, releps=1e-8)
    lower = np.full(t.size, -c) if two_sided else None
    return float(1.0 - mvn.cdf(np.full(t.size, c), lower_limit=lower))


@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize(("times", "rel"), [([0.5, 1.0], 1e-4), ([0.3, 1.0], 1e-4), ([0.25, 0.6, 1.0], 2e-3)])
@pytest.mark.parametrize("c", [1.0, 2.0, 3.0])
def test_crossing_probability_is_the_multivariate_normal_probability(
    c: float, times: list[float], rel: float, two_sided: bool
) -> None:
    assert crossing_probability(c, times, two_sided=two_sided) == pytest.approx(
        _mvn_crossing(c, times, two_sided), rel=rel
    )


def test_crossing_probability_edges() -> None:
    assert crossing_probability(0.0, [1.0]) == 1.0 and crossing_probability(-1.0, [0.5, 1.0]) == 1.0
    for c, t in ((2.0, 1.0), (1.5, 0.5)):  # one look at time t: the normal tail of B(t) ~ N(0, t)
        assert crossing_probability(c, [t]) == pytest.approx(stats.norm.sf(c / np.sqrt(t)), rel=1e-12)
        assert crossing_probability(c, [t], two_sided=True) == pytest.approx(
            2 * stats.norm.sf(c / np.sqrt(t)), rel=1e-12
        )


def test_look_schedule_rules_and_messages() -> None:
    from deltap.mining.adaptive import LookSchedule

    assert look_schedule(64).looks == (32, 48, 64)  # defaults: first 32, batch 16
    assert look_schedule(70, 32, 0).looks == tuple(range(32, 70)) + (70,)  # a batch below 1 counts as 1
    assert look_schedule(100, 32, 16, candidates=24).looks == (64, 80, 96, 100)  # interim looks need >= 2m + 1 = 49
    assert look_schedule(97, 32, 16, candidates=24).looks == (64, 80, 96, 97)
    assert look_schedule(49, 16, 16, candidates=24).looks == (49,)
    assert look_schedule(1, 32, 16).looks == (1,)
    for budget in (0, -3):
        with pytest.raises(ValueError) as info:
            look_schedule(budget)
        assert str(info.value) == f"budget must be positive, got {budget}"
    for looks in ((), (0, 5), (5, 5), (8, 4)):
        with pytest.raises(ValueError) as info:
            LookSchedule(looks)
        assert str(info.value) == f"look schedule must be strictly increasing positive trial counts, got {looks}"
    s = LookSchedule((1, 2, 4))
    assert s.budget == 4 and s.times.tolist() == [0.25, 0.5, 1.0]
    np.testing.assert_allclose(s.b_values([2.0, 2.0]), [1.0, 2.0 * np.sqrt(0.5)], rtol=1e-15)


def test_repeated_p_value_is_the_crossing_probability_of_the_largest_b_value() -> None:
    s = look_schedule(128, 32, 16)
    times = s.times
    z = np.array([[1.0, 2.5, 2.0, 1.5, 1.8, 2.2, 2.4], [-0.5, -2.0, -3.1, -2.6, -2.0, -1.0, -0.4]])
    b_up = np.max(z * np.sqrt(times), axis=-1)
    p_up = s.repeated_p_value(z, 1)
    p_down = s.repeated_p_value(z, -1)
    np.testing.assert_allclose(p_down, s.repeated_p_value(-z, 1), rtol=1e-15)  # side -1 = the mirrored path
    for i in range(2):
        assert p_up[i] == pytest.approx(crossing_probability(float(b_up[i]), times), rel=0.02)  # log-linear table
        b_down = float(np.max(-z[i] * np.sqrt(times)))
        assert p_down[i] == pytest.approx(crossing_probability(b_down, times), rel=0.02)
    # only the looks taken so far count (the first three here), at their own information times
    part = s.repeated_p_value(z[:, :3], 1)
    b3 = np.max(z[:, :3] * np.sqrt(times[:3]), axis=-1)
    for i in range(2):
        assert part[i] == pytest.approx(crossing_probability(float(b3[i]), times), rel=0.02)
    assert s.repeated_p_value([[-1.0] * 7], 1).tolist() == [1.0]  # a path below 0: p = 1


def test_repeated_p_value_beyond_the_table_follows_the_normal_tail() -> None:
    from deltap.mining.adaptive import LookSchedule

    s = LookSchedule((32, 64, 128))
    ratio = crossing_probability(9.0, s.times) / stats.norm.sf(9.0)
    for b in (9.5, 12.0, 20.0):
        p = s.repeated_p_value([[0.0, 0.0, b]], 1)[0]  # the last look: t = 1, B = z
        assert p == pytest.approx(ratio * stats.norm.sf(b), rel=1e-6, abs=0)  # abs=0: p is ~1e-20
        assert 0 < p < 1e-20
    # inside the table: log-linear between its points 8.9 and 9.0 (and the boundary itself on the table)
    lo, hi = np.log(crossing_probability(8.9, s.times)), np.log(crossing_probability(9.0, s.times))
    for b in (8.95, 8.99, 9.0):
        got = s.repeated_p_value([[0.0, 0.0, b]], 1)[0]
        assert got == pytest.approx(np.exp(lo + (b - 8.9) / 0.1 * (hi - lo)), rel=1e-9, abs=0), b


@pytest.mark.parametrize("alpha", [0.05, 0.003, 1e-5])
def test_critical_b_inverts_the_crossing_probability(alpha: float) -> None:
    s = look_schedule(128, 32, 16)
    c = s.critical_b(alpha)
    assert crossing_probability(c, s.times) == pytest.approx(alpha, rel=0.03)
    assert s.repeated_p_value([[0.0] * 6 + [c]], 1)[0] == pytest.approx(alpha, rel=1e-6)  # the same table both ways


def _power_ref(coef: float, se: float, t: float, c: float, rule: StoppingRule) -> float:
    """Predictive probability of |B(1)| >= c by numerical integration over the spike-and-slab posterior."""
    from scipy import integrate

    if not np.isfinite(se) or se <= 0:
        return 1.0
    tau2 = rule.prior_scale**2
    slab = rule.prior_nonnull * stats.norm.pdf(coef, scale=np.sqrt(tau2 + se**2))
    spike = (1 - rule.prior_nonnull) * stats.norm.pdf(coef, scale=se)
    w = slab / (slab + spike)
    mu, v = coef * tau2 / (tau2 + se**2), tau2 * se**2 / (tau2 + se**2)
    se1, b_now, rest = se * np.sqrt(t), coef / se * np.sqrt(t), 1 - t

    def cross(theta: float) -> float:
        m = b_now + theta / se1 * rest
        return float(stats.norm.sf((c - m) / np.sqrt(rest)) + stats.norm.sf((c + m) / np.sqrt(rest)))

    sd = np.sqrt(v)
    p_slab = integrate.quad(
        lambda th: stats.norm.pdf(th, mu, sd) * cross(th),
        mu - 12 * sd,
        mu + 12 * sd,
        epsabs=1e-13,
        epsrel=1e-10,
        limit=200,
    )[0]
    return w * p_slab + (1 - w) * cross(0.0)


@pytest.mark.parametrize(
    "rule",
    [
        StoppingRule(),
        StoppingRule(prior_nonnull=0.5, prior_scale=1.0),
        StoppingRule(prior_nonnull=0.05, prior_scale=0.1),
    ],
)
def test_predictive_power_against_numerical_integration(rule: StoppingRule) -> None:
    coef = np.array([0.0, 0.1, -0.25, 0.6, 0.05, 0.3, 0.2, 0.2])
    se = np.array([0.1, 0.05, 0.2, 0.3, 0.02, 0.1, np.inf, 0.0])
    for t, c in ((0.25, 2.8), (0.5, 2.2), (0.8, 3.3)):
        got = rule.predictive_power(coef, se, t, c)
        for j in range(coef.size):
            assert got[j] == pytest.approx(_power_ref(float(coef[j]), float(se[j]), t, c, rule), rel=1e-6, abs=1e-12), (
                t,
                j,
            )


def _decided_ref(rule: StoppingRule, s, z_path, coef, se, active, df, weights):  # type: ignore[no-untyped-def]
    """The three ways a candidate is settled, composed from primitives checked elsewhere."""
    m, k = z_path.shape[-2], z_path.shape[-1]
    w = np.ones(coef.shape) if weights is None else np.broadcast_to(weights, coef.shape)
    sig = np.zeros(coef.shape, dtype=bool)
    n_rej = np.zeros(coef.shape[:-1], dtype=int)
    for side in (1, -1):
        p = s.repeated_p_value(z_path, side) / (w if side > 0 else 1.0)
        q = stats.false_discovery_control(np.clip(p, 0, 1), axis=-1)  # scipy's BH (p clipped: a weighted p can pass 1)
        rej = q <= rule.q
        sig |= rej
        n_rej = np.maximum(n_rej, rej.sum(axis=-1))
    irrelevant = np.isfinite(se) & (np.abs(coef) + stats.norm.ppf(0.95) * se < rule.margin)
    t = float(s.times[k - 1])
    if t >= 1.0:
        futile = np.ones(coef.shape, dtype=bool)
    elif df is not None and df < m:
        futile = np.zeros(coef.shape, dtype=bool)
    else:
        c = np.zeros(coef.shape)
        for idx in np.ndindex(coef.shape):
            c[idx] = s.critical_b(rule.q * (n_rej[idx[:-1]] + 1) / m * w[idx])
        # predictive_power itself is checked against numerical integration above
        futile = rule.predictive_power(coef, se, t, c) < rule.futility_power
    if not rule.significance_stops:
        sig = np.zeros_like(sig)
    done = sig | irrelevant | futile
    return done | ~np.asarray(active, dtype=bool) if active is not None else done


def test_decided_against_its_three_rules() -> None:
    s = look_schedule(128, 32, 16)
    rng = np.random.default_rng(17)
    R, m, k = 40, 5, 3
    coef = rng.normal(0, 0.2, (R, m))
    se = rng.uniform(0.01, 0.15, (R, m))
    z_path = coef[..., None] / se[..., None] * rng.uniform(0.6, 1.2, (R, m, k))
    active = rng.random((R, m)) < 0.9
    weights = rng.uniform(0.5, 1.5, (R, m))
    weights /= weights.mean(axis=-1, keepdims=True)
    for rule in (
        StoppingRule(),
        StoppingRule(q=0.2, margin=0.1, futility_power=0.1),
        StoppingRule(significance_stops=False),
    ):
        for kw in (dict(), dict(active=active), dict(weights=weights), dict(df=m - 1), dict(df=m)):
            got = rule.decided(s, z_path, coef, se, **kw)
            want = _decided_ref(rule, s, z_path, coef, se, kw.get("active"), kw.get("df"), kw.get("weights"))
            assert got.dtype == np.bool_ and np.array_equal(got, want), (rule, list(kw))
    base = StoppingRule().decided(s, z_path, coef, se)
    assert 0.2 < base.mean() < 0.95  # a mix: the comparison above is not vacuous


def test_decided_boundaries() -> None:
    s = look_schedule(128, 32, 16)
    rule = StoppingRule(margin=0.05)
    zq = stats.norm.ppf(0.95)
    # equivalence: |coef| + 1.645 se just inside / just outside the margin (futility off: df < m)
    se = np.array([0.01, 0.01, 0.01, np.inf])
    coef = np.array([0.05 - zq * 0.01 - 1e-9, -(0.05 - zq * 0.01 + 1e-9), 0.05 - zq * 0.01 + 1e-9, 0.0])
    z = np.zeros((4, 2))
    assert rule.decided(s, z, coef, se, df=1).tolist() == [True, False, False, False]
    # the final look decides everything; significance alone decides when it stops
    z_big = np.full((2, 2), 10.0)
    assert rule.decided(s, np.zeros((2, 7)), np.array([0.5, -0.5]), np.array([0.1, 0.1])).tolist() == [True, True]
    assert rule.decided(s, z_big, np.array([1.0, 1.0]), np.array([0.1, 0.1]), df=1).tolist() == [True, True]
    no_sig = StoppingRule(significance_stops=False)
    assert no_sig.decided(s, z_big, np.array([1.0, 1.0]), np.array([0.1, 0.1]), df=1).tolist() == [False, False]
    assert no_sig.decided(
        s, z_big, np.array([1.0, 1.0]), np.array([0.1, 0.1]), active=[True, False], df=1
    ).tolist() == [False, True]


def _exact_two_looks(c: float, t1: float, two_sided: bool) -> float:
    """P(cross) at looks t1 and 1 by one-dimensional integration over B(t1) (scipy.integrate.quad, ~1e-13)."""
    from scipy import integrate

    s = np.sqrt(1.0 - t1)

    def stay(x: float) -> float:  # density of B(t1) = x times P(no crossing at t = 1 | x)
        inside = stats.norm.cdf((c - x) / s) - (stats.norm.cdf((-c - x) / s) if two_sided else 0.0)
        return float(stats.norm.pdf(x, scale=np.sqrt(t1)) * inside)

    return 1.0 - integrate.quad(stay, -c if two_sided else -np.inf, c, epsabs=1e-15, epsrel=1e-13, limit=500)[0]


@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize("t1", [0.3, 0.5])
@pytest.mark.parametrize("c", [1.0, 2.0, 3.0, 4.0])
def test_crossing_probability_of_two_looks_against_exact_integration(c: float, t1: float, two_sided: bool) -> None:
    # measured accuracy of the recursive quadrature: within 5e-5 (one-sided grid of 0.025) and 3e-6 (601 points)
    got = crossing_probability(c, [t1, 1.0], two_sided=two_sided)
    assert got == pytest.approx(_exact_two_looks(c, t1, two_sided), rel=1e-4 if not two_sided else 5e-6)
    if two_sided:  # the documented default resolution
        assert got == crossing_probability(c, [t1, 1.0], two_sided=True, grid=601)


@pytest.mark.parametrize("two_sided", [False, True])
def test_unequal_batches_use_their_own_kernels(two_sided: bool) -> None:
    # four looks with three different increments: each step's transition kernel is its own (cached per width)
    for times in ([0.2, 0.5, 0.6, 1.0], [0.1, 0.4, 0.9, 1.0]):  # widths 0.55, 0.32 | 0.55, 0.71 (same to the unit)
        for c in (1.5, 2.5):
            assert crossing_probability(c, times, two_sided=two_sided) == pytest.approx(
                _mvn_crossing(c, times, two_sided), rel=2e-3
            )


def test_look_schedule_floor_boundaries() -> None:
    assert look_schedule(100, 33, 16, candidates=24).looks == (49, 65, 81, 97, 100)  # exactly 2m + 1 = 49 is kept
    assert look_schedule(10, 2, 2, candidates=1).looks == (4, 6, 8, 10)  # one candidate: at least 3 trials
    assert look_schedule(10, 2, 2).looks == (2, 4, 6, 8, 10)  # no candidate count: no floor
    with pytest.raises(ValueError) as info:
        look_schedule(40, 0, 16)  # a first look at 0 trials is refused by the schedule itself
    assert str(info.value) == "look schedule must be strictly increasing positive trial counts, got (0, 16, 32, 40)"


def test_repeated_p_value_side_must_be_one_or_minus_one() -> None:
    s = look_schedule(64, 32, 16)
    assert s.repeated_p_value([1.0, 2.0, 2.5]).tolist() == s.repeated_p_value([1.0, 2.0, 2.5], 1).tolist()
    for side in (0, 2, -2):
        with pytest.raises(ValueError) as info:
            s.repeated_p_value([1.0], side)
        assert str(info.value) == f"side must be 1 (relevant) or -1 (harmful), got {side}"


def test_decided_on_one_case_and_with_integer_masks() -> None:
    s = look_schedule(128, 32, 16)
    rng = np.random.default_rng(18)
    m, k = 6, 3
    coef = rng.normal(0, 0.2, m)
    se = rng.uniform(0.03, 0.12, m)
    z = coef[:, None] / se[:, None] * rng.uniform(0.7, 1.1, (m, k))
    rule = StoppingRule()
    one = rule.decided(s, z, coef, se)  # one case: shape (m,), futility judged
    assert one.shape == (m,) and np.array_equal(one, rule.decided(s, z[None], coef[None], se[None])[0])
    assert np.array_equal(one, _decided_ref(rule, s, z, coef, se, None, None, None))
    active = np.array([1, 0, 1, 0, 1, 1])  # an integer mask means the same as a boolean one
    assert np.array_equal(
        rule.decided(s, z, coef, se, active=active), rule.decided(s, z, coef, se, active=active.astype(bool))
    )


def test_decided_bounds_are_strict() -> None:
    s = look_schedule(128, 32, 16)
    z = np.zeros((2, 3))
    # |coef| + 1.645 se exactly at the margin is not inside it (se = 0: a noiseless estimate of exactly 0.05)
    assert StoppingRule(margin=0.05).decided(s, z, np.array([0.05, 0.0]), np.array([0.0, 0.0]), df=1).tolist() == [
        False,
        True,
    ]
    # predictive power exactly at the futility bound (an infinite SE: power 1) is not futile
    rule = StoppingRule(futility_power=1.0)
    assert rule.decided(s, z, np.array([0.3, 0.0]), np.array([np.inf, 0.1])).tolist() == [False, True]


def test_public_functions_take_numbers_in_any_array_like_form() -> None:
    s = look_schedule(64, 32, 16)
    assert crossing_probability(2.0, ["0.5", "1"]) == crossing_probability(2.0, [0.5, 1.0])
    z = [["1.5", "2.0", "2.5"], ["-1", "0", "3"]]
    zf = [[1.5, 2.0, 2.5], [-1.0, 0.0, 3.0]]
    assert s.b_values(z).tolist() == s.b_values(zf).tolist()
    assert s.repeated_p_value(z, -1).tolist() == s.repeated_p_value(zf, -1).tolist()
    rule = StoppingRule()
    args = (["0.2", "-0.01"], ["0.1", "0.02"])
    assert (
        rule.predictive_power(*args, 0.5, ["2.5", "2.5"]).tolist()
        == rule.predictive_power([0.2, -0.01], [0.1, 0.02], 0.5, [2.5, 2.5]).tolist()
    )
    got = rule.decided(s, [["1", "2"], ["0", "0.5"]], *args, weights=["1.5", "0.5"])
    assert (
        got.tolist()
        == rule.decided(s, [[1.0, 2.0], [0.0, 0.5]], [0.2, -0.01], [0.1, 0.02], weights=[1.5, 0.5]).tolist()
    )


def test_simes_over_looks_keeps_alpha_for_brownian_and_random_effect_paths_and_any_stop() -> None:
    # The Simes p-value of a fitted null (issue 28): valid when the look statistics are Brownian (sampling noise
    # dominates) and when they are a random effect plus noise (the null's spread dominates: a nearly flat path), and
    # whatever look the case stopped at (looks not taken count as p = 1).
    s = look_schedule(90, 48, 16)
    K = len(s.looks)
    rng = np.random.default_rng(5)
    R, alpha = 40_000, 0.01
    for spread_share in (0.0, 0.5, 0.95):  # share of each look's variance that is the document's own effect
        theta = rng.standard_normal((R, 1)) * np.sqrt(spread_share)
        inc = rng.standard_normal((R, K)) * np.sqrt(np.diff(np.r_[0.0, s.times]))
        noise = np.cumsum(inc, axis=1) / s.times  # mean of the trials so far, variance 1 / t
        var = spread_share + (1 - spread_share) / s.times
        z = (theta + np.sqrt(1 - spread_share) * noise) / np.sqrt(var)
        stop = rng.integers(1, K + 1, size=R)  # an arbitrary stopping look
        p = np.array([s.simes_p_value(z[i, : stop[i]]) for i in range(2000)])
        full = s.simes_p_value(z)
        assert float(np.mean(full <= alpha)) <= alpha * 1.15
        assert np.all(p >= full[:2000] - 1e-12)  # stopping early can only raise it
    # a flat path (the null's spread dominates) keeps its one-look p; one look taken of K pays K
    flat = np.full(K, 2.5)
    assert s.simes_p_value(flat) == pytest.approx(stats.norm.sf(2.5))
    assert s.simes_p_value(flat[:1]) == pytest.approx(K * stats.norm.sf(2.5))
    assert s.simes_p_value(-flat, side=-1) == pytest.approx(stats.norm.sf(2.5))
    # ... where the repeated p-value reads less from a flat path, at the budget and when stopped early (z·sqrt(t))
    assert s.repeated_p_value(flat) > 1.2 * s.simes_p_value(flat)
    assert s.repeated_p_value(flat[:1]) > 1.5 * s.simes_p_value(flat[:1])
    with pytest.raises(ValueError, match="side"):
        s.simes_p_value(flat, side=0)
