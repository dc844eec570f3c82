"""Every decision that becomes a label: ``verdict()`` and ``grade()`` at and around each bound, the policies' bounds,
and the placebo check's binomial reference.

Bounds are probed with values one relative step of 1e-9 either side, so moving a ``>=`` to ``>`` (or ``<=`` to ``<``)
or dropping a term from a rule flips a row here.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from deltap.mining.config import MiningConfig
from deltap.mining.labels import placebo_calibration
from deltap.mining.verdicts import EMPIRICAL, VerdictPolicy, default_policy, grade, verdict

P = VerdictPolicy()  # q 0.05, min_effect 0.1, margin 0.1, grades (0.1, 0.2, 0.4)
Z90 = 1.6448536269514722  # scipy.stats.norm.ppf(0.95)
UP, DOWN = 1 + 1e-9, 1 - 1e-9


def test_default_policy_values() -> None:
    assert (P.q, P.min_effect, P.margin, P.grade_bounds, P.unit) == (0.05, 0.1, 0.1, (0.1, 0.2, 0.4), "probability")
    # pass: the equivalence margin is 2 x min_effect (issue 14 item 8: |effect| < 0.1 cannot be shown at 128 trials)
    assert default_policy("pass") == VerdictPolicy(margin=0.2)
    lp = default_policy("logprob")
    assert (lp.q, lp.min_effect, lp.margin, lp.grade_bounds, lp.unit) == (0.05, 0.5, 0.5, (0.5, 1.5, 3.0), "nats")
    # A larger minimum effect lifts the lower grade bounds with it; the margin follows unless given.
    big = default_policy("pass", q=0.1, min_effect=0.3)
    assert (big.q, big.min_effect, big.margin, big.grade_bounds) == (0.1, 0.3, 0.6, (0.3, 0.3, 0.4))
    assert default_policy("pass", min_effect=0.05, margin=0.02).margin == 0.02
    assert (
        default_policy("logprob", margin=0.3).margin == 0.3 and default_policy("logprob", margin=0.3).min_effect == 0.5
    )
    assert default_policy("logprob", min_effect=2.0).grade_bounds == (2.0, 2.0, 3.0)
    assert default_policy("logprob", min_effect=4.0).grade_bounds == (4.0, 4.0, 4.0)


def test_grade_mapping_and_dict_describe_the_bounds() -> None:
    assert P.grade_mapping() == {
        "1": "0.1 <= effect < 0.2",
        "2": "0.2 <= effect < 0.4",
        "3": "effect >= 0.4",
        "0": "irrelevant or harmful (judged not relevant)",
        "unit": "probability",
    }
    assert P.to_dict() == {
        "q": 0.05,
        "min_effect": 0.1,
        "margin": 0.1,
        "grade_bounds": [0.1, 0.2, 0.4],
        "unit": "probability",
    }
    assert EMPIRICAL == {"relevant": "YES", "irrelevant": "NO", "harmful": "HARMFUL", "undecided": "UNDECIDED"}


@pytest.mark.parametrize(
    ("effect", "se", "q_value", "expected"),
    [
        # relevant: q <= 0.05 and effect >= 0.1 (both bounds inclusive)
        pytest.param(0.5, 0.1, 0.01, "relevant", id="clear-relevant"),
        pytest.param(0.1, 0.01, 0.01, "relevant", id="effect-at-min-effect"),
        pytest.param(0.1 * DOWN, 0.5, 0.01, "undecided", id="effect-just-below-min-effect"),
        pytest.param(0.5, 0.1, 0.05, "relevant", id="q-at-level"),
        pytest.param(0.5, 0.1, 0.05 * UP, "undecided", id="q-just-above-level"),
        pytest.param(0.5, 0.01, 0.9, "undecided", id="large-effect-not-significant"),
        # harmful: q <= 0.05 and effect <= -0.1
        pytest.param(-0.5, 0.1, 0.01, "harmful", id="clear-harmful"),
        pytest.param(-0.1, 0.01, 0.01, "harmful", id="effect-at-minus-min-effect"),
        pytest.param(-0.1 * DOWN, 0.5, 0.01, "undecided", id="effect-just-above-minus-min-effect"),
        pytest.param(-0.5, 0.1, 0.05, "harmful", id="harmful-q-at-level"),
        pytest.param(-0.5, 0.1, 0.05 * UP, "undecided", id="harmful-q-just-above-level"),
        # irrelevant: the 90% interval effect ± 1.645 SE inside (-margin, margin)
        pytest.param(0.0, 0.01, 1.0, "irrelevant", id="zero-effect-small-se"),
        pytest.param(0.0, 0.5, 1.0, "undecided", id="zero-effect-large-se"),
        pytest.param(0.0, 0.1 / Z90 * DOWN, 1.0, "irrelevant", id="zero-effect-interval-just-inside"),
        pytest.param(0.0, 0.1 / Z90 * UP, 1.0, "undecided", id="zero-effect-interval-just-outside"),
        pytest.param(0.05, 0.05 / Z90 * DOWN, 1.0, "irrelevant", id="positive-effect-interval-just-inside"),
        pytest.param(0.05, 0.05 / Z90 * UP, 1.0, "undecided", id="positive-effect-interval-just-outside"),
        pytest.param(-0.05, 0.05 / Z90 * DOWN, 1.0, "irrelevant", id="negative-effect-interval-just-inside"),
        pytest.param(-0.05, 0.05 / Z90 * UP, 1.0, "undecided", id="negative-effect-interval-just-outside"),
        pytest.param(0.09, 0.0, 1.0, "irrelevant", id="no-noise-inside-margin"),
        pytest.param(0.1, 0.0, 1.0, "undecided", id="no-noise-at-margin"),
        pytest.param(0.0, math.inf, 1.0, "undecided", id="infinite-se"),
        pytest.param(0.0, math.inf, 0.0, "undecided", id="infinite-se-significant-zero"),
        # significant but smaller than min_effect: equivalence decides, never relevant
        pytest.param(0.05, 0.005, 0.001, "irrelevant", id="significant-small-effect-proven-small"),
        pytest.param(0.08, 0.02, 0.001, "undecided", id="significant-small-effect-not-proven-small"),
        pytest.param(-0.08, 0.02, 0.001, "undecided", id="significant-small-negative-effect"),
    ],
)
def test_verdict_table(effect: float, se: float, q_value: float, expected: str) -> None:
    assert verdict(effect, se, q_value, P) == expected


def test_verdict_uses_the_policy_not_constants() -> None:
    lp = default_policy("logprob")  # min_effect = margin = 0.5 nats
    assert verdict(0.5, 0.1, 0.01, lp) == "relevant"
    assert verdict(0.3, 0.01, 0.01, lp) == "irrelevant"  # would be relevant with the probability policy
    assert verdict(-0.5, 0.1, 0.01, lp) == "harmful"
    strict = VerdictPolicy(q=0.01)
    assert verdict(0.5, 0.1, 0.02, strict) == "undecided" and verdict(0.5, 0.1, 0.01, strict) == "relevant"
    wide = VerdictPolicy(margin=0.3)
    assert verdict(0.0, 0.15, 1.0, wide) == "irrelevant" and verdict(0.0, 0.15, 1.0, P) == "undecided"


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        pytest.param(0.1, 1, id="at-bound-1"),
        pytest.param(0.2 * DOWN, 1, id="just-below-bound-2"),
        pytest.param(0.2, 2, id="at-bound-2"),
        pytest.param(0.4 * DOWN, 2, id="just-below-bound-3"),
        pytest.param(0.4, 3, id="at-bound-3"),
        pytest.param(0.95, 3, id="large"),
    ],
)
def test_grade_of_relevant(effect: float, expected: int) -> None:
    assert grade(effect, "relevant", P) == expected


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        pytest.param(0.5, 1, id="at-bound-1"),
        pytest.param(1.5 * DOWN, 1, id="just-below-bound-2"),
        pytest.param(1.5, 2, id="at-bound-2"),
        pytest.param(3.0 * DOWN, 2, id="just-below-bound-3"),
        pytest.param(3.0, 3, id="at-bound-3"),
    ],
)
def test_grade_of_relevant_logprob(effect: float, expected: int) -> None:
    assert grade(effect, "relevant", default_policy("logprob")) == expected


@pytest.mark.parametrize(
    ("v", "effect", "expected"),
    [
        pytest.param("irrelevant", 0.0, 0, id="irrelevant"),
        pytest.param("irrelevant", 0.09, 0, id="irrelevant-positive"),
        pytest.param("harmful", -0.6, 0, id="harmful"),
        pytest.param("undecided", 0.0, None, id="undecided-zero"),
        pytest.param("undecided", 0.5, None, id="undecided-large"),
    ],
)
def test_grade_of_non_relevant(v: Any, effect: float, expected: int | None) -> None:
    assert grade(effect, v, P) == expected


def test_verdict_then_grade_end_to_end() -> None:
    """The pair the engine applies: (effect, se, q) -> the qrels grade (None = unjudged)."""
    rows = [
        (0.45, 0.05, 0.001),
        (0.25, 0.05, 0.001),
        (0.12, 0.02, 0.01),
        (0.0, 0.01, 1.0),
        (0.0, 0.3, 1.0),
        (-0.3, 0.05, 0.001),
    ]
    assert [grade(e, verdict(e, s, q, P), P) for e, s, q in rows] == [3, 2, 1, 0, None, 0]


# ---------------------------------------------------------------------------------------------------------------
# The placebo check (issue 14 item 3): "more placebos rejected than BH allows" is a one-sided binomial test against
# BH's reference rate q·R/M (R rejections in both directions among M candidates), p = P(Binomial(n, q·R/M) >= k).
# The reference below sums the binomial tail directly (no scipy).


def _binom_tail(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _results(
    n_placebo: int, rel: int, harm: int, coef: float = 0.2, others: int = 0, others_rejected: int = 1
) -> list[Any]:
    """Placebos (``rel`` + ``harm`` of them rejected and labelled) and ``others`` non-placebo candidates plus a gold
    document (``others_rejected`` of them rejected)."""
    verdicts = ["relevant"] * rel + ["harmful"] * harm + ["undecided"] * (n_placebo - rel - harm)
    cands = [SimpleNamespace(is_placebo=True, doc_id=f"p{i}") for i, _ in enumerate(verdicts)] + [
        SimpleNamespace(is_placebo=False, doc_id=f"o{i}") for i in range(others + 1)
    ]
    rows = [
        {"verdict": v, "q_value": 0.01 if v != "undecided" else 0.5, "regression_effect": {"coef": coef * (i + 1)}}
        for i, v in enumerate(verdicts)
    ]
    rows += [
        {
            "verdict": "relevant" if i < others_rejected else "undecided",
            "q_value": 0.001 if i < others_rejected else 0.9,
            "regression_effect": {"coef": 9.0},
        }
        for i in range(others + 1)
    ]  # not placebos: not counted as such
    unmined = SimpleNamespace(
        X=None,
        pool=SimpleNamespace(candidates=[SimpleNamespace(is_placebo=True)]),
        candidates=[{"verdict": "relevant"}],
    )
    case = SimpleNamespace(case_id="c0", reference_answer=None)
    return [
        SimpleNamespace(X=np.zeros((1, 1)), case=case, pool=SimpleNamespace(candidates=cands), candidates=rows),
        unmined,
    ]


@pytest.mark.parametrize(
    ("n", "rel", "harm", "others", "others_rejected", "warn"),
    [
        pytest.param(20, 0, 0, 179, 20, False, id="none-labelled"),
        # R = 21, M = 200: reference 0.00525; P(X >= 1) = 0.0999 -> no warning
        pytest.param(20, 1, 0, 179, 20, False, id="one-of-twenty"),
        # R = 22: reference 0.0055; P(X >= 2) = 0.0051 -> warning (against q it was P = 0.264: none)
        pytest.param(20, 2, 0, 179, 20, True, id="two-of-twenty-few-rejections"),
        pytest.param(20, 0, 3, 179, 20, True, id="harmful-count-too"),
        # many rejections: R = 102 of 200, reference 0.0255 -> 2 of 20 is noise (P = 0.0937)
        pytest.param(20, 2, 0, 179, 100, False, id="many-rejections-raise-the-reference"),
        pytest.param(1, 1, 0, 0, 1, False, id="single-placebo"),  # R = 2 of M = 2: reference q, P(X >= 1) = 0.05
    ],
)
def test_placebo_binomial_reference(n: int, rel: int, harm: int, others: int, others_rejected: int, warn: bool) -> None:
    cfg = MiningConfig()
    out = placebo_calibration(_results(n, rel, harm, others=others, others_rejected=others_rejected), cfg)  # type: ignore[arg-type]
    k = rel + harm
    R, M = k + others_rejected, n + others + 1
    assert (out["n"], out["labelled_relevant"], out["labelled_harmful"]) == (n, rel, harm)
    assert out["fpr"] == pytest.approx(k / n, abs=1e-15)
    assert out["nominal"] == pytest.approx(cfg.q * R / M, rel=1e-12)
    assert out["p_value_above_nominal"] == pytest.approx(_binom_tail(k, n, cfg.q * R / M), rel=1e-9, abs=1e-15)
    assert out["warning"] is warn and out["check"]["failed"] is warn
    assert (out["check"]["rejections"], out["check"]["tests"], out["check"]["rejected"]) == (R, M, k)
    effects = [0.2 * (i + 1) for i in range(n)]
    assert out["effect_abs"]["max"] == pytest.approx(max(effects))
    assert out["effect_abs"]["median"] == pytest.approx(float(np.median(effects)))
    assert out["effect_abs"]["unit"] == "probability"


def test_placebo_reference_without_placebos() -> None:
    out = placebo_calibration([], MiningConfig(q=0.1, outcome="logprob"))
    assert {
        k: out[k] for k in ("n", "labelled_relevant", "labelled_harmful", "fpr", "p_value_above_nominal", "warning")
    } == {
        "n": 0,
        "labelled_relevant": 0,
        "labelled_harmful": 0,
        "fpr": 0.0,
        "p_value_above_nominal": 1.0,
        "warning": False,
    }
    assert "no placebo" in out["check"]["message"]


def test_placebo_reference_follows_q() -> None:
    # 2 of 20 rejected with R = 22 of 200: at q = 0.1 the reference is 0.011, P(Binomial(20, 0.011) >= 2) = 0.0197 ->
    # still a warning; the reference scales with q.
    out = placebo_calibration(_results(20, 2, 0, others=179, others_rejected=20), MiningConfig(q=0.1))  # type: ignore[arg-type]
    assert out["nominal"] == pytest.approx(0.1 * 22 / 200)
    assert out["p_value_above_nominal"] == pytest.approx(_binom_tail(2, 20, 0.011), rel=1e-9)
    assert out["warning"] is True


# ---------------------------------------------------------------------------------------------------------------
# The repeated interval a label must clear (issue 19, mutation testing).


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        pytest.param((0.0, 1.0), "undecided", id="low-exactly-0"),
        pytest.param((1e-12, 1.0), "relevant", id="low-above-0"),
        pytest.param((-1.0, 0.0), "undecided", id="high-exactly-0"),
        pytest.param((-1.0, -1e-12), "harmful", id="high-below-0"),
        pytest.param((-1.0, 0.5), "undecided", id="high-positive"),
    ],
)
def test_the_interval_must_exclude_zero_strictly(interval: tuple[float, float], expected: str) -> None:
    effect = 0.5 if interval[0] >= 0 else -0.5
    assert verdict(effect, 0.2, 0.001, P, interval) == expected


def _interval_ref(fits, times, c_low, c_high, fit):  # type: ignore[no-untyped-def]
    """Each look's half-width by root finding on the one-sided null p-value (scipy brentq), then the intersection."""
    from scipy import optimize, stats

    from deltap.mining.empirical_null import null_p_value

    m = len(fits[0][0])
    low, high = np.full(m, -np.inf), np.full(m, np.inf)
    for (coef, se, df), t in zip(fits, times, strict=False):
        for j in range(m):
            for c, sign in ((c_low, -1), (c_high, 1)):
                target = stats.norm.logsf(c / math.sqrt(t))
                x = optimize.brentq(
                    lambda d, s=se[j], n=df, a=target: math.log(null_p_value([fit.center + d], [s], n, fit)[0]) - a,
                    0.0,
                    1e3,
                    xtol=1e-14,
                    rtol=1e-14,
                )
                bound = coef[j] - fit.center + sign * x
                low[j], high[j] = (max(low[j], bound), high[j]) if sign < 0 else (low[j], min(high[j], bound))
    return low, high


def test_repeated_interval_against_root_finding_under_a_placebo_null() -> None:
    from deltap.mining.empirical_null import PlaceboNull
    from deltap.mining.verdicts import repeated_interval

    fit = PlaceboNull(0.3, 0.2, 30, 0.15, 1.1, 25.0, 4.0, 0.05)
    fits = [([1.4, 0.2, -0.9], [0.3, 0.25, 0.2], 40), ([1.1, 0.35, -1.2], [0.2, 0.18, 0.15], 90)]
    times = [0.5, 1.0]
    params = np.tile(fit.params(), (3, 1))
    low, high = repeated_interval(fits, times, 2.8, 3.1, params)
    ref_low, ref_high = _interval_ref(fits, times, 2.8, 3.1, fit)
    np.testing.assert_allclose(low, ref_low, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, rtol=1e-9, atol=1e-12)
    as_text = repeated_interval(
        [([str(c) for c in f[0]], [str(s) for s in f[1]], f[2]) for f in fits],
        ["0.5", "1"],
        2.8,
        3.1,
        [[str(v) for v in row] for row in params],
    )
    np.testing.assert_array_equal(as_text[0], low)  # numbers in any array-like form
    zero = repeated_interval(fits, times, 2.8, 3.1)  # no params: the zero null, not this one
    assert not np.allclose(zero[0], low)


def test_an_infinite_se_gives_an_unbounded_interval() -> None:
    from deltap.mining.verdicts import repeated_interval

    low, high = repeated_interval([([0.4, 0.4], [np.inf, 0.1], 30)], [1.0], 2.5, 2.5)
    assert (low[0], high[0]) == (-np.inf, np.inf) and np.isfinite(low[1]) and np.isfinite(high[1])


def test_simes_interval_is_dual_to_the_simes_p_value() -> None:
    # Issue 28: a label against a fitted null rests on the interval of the Simes test over the looks; its lower bound
    # is above 0 exactly when the Simes p-value is below the level (upper bound below 0: the harmful side).
    import numpy as np

    from deltap.mining.adaptive import look_schedule
    from deltap.mining.empirical_null import PlaceboNull, null_z
    from deltap.mining.verdicts import simes_interval

    s = look_schedule(90, 48, 16)
    rng = np.random.default_rng(0)
    null = PlaceboNull(0.1, 0.2, 50, 0.2, 2.0, 40.0, 10.0, 0.05)
    m = 40
    effects = rng.normal(0.0, 3.0, m)
    fits = [
        (effects + rng.normal(0, 1 / np.sqrt(n), m), np.full(m, 0.3 * np.sqrt(48 / n)), n - 21) for n in s.looks[:3]
    ]
    params = np.tile(np.array(null.params()), (m, 1))
    for alpha in (0.001, 0.01, 0.05):
        low, high = simes_interval(fits, s, alpha, alpha, params)
        z = np.stack([null_z(c, e, df, *null.params()) for c, e, df in fits], axis=-1)
        p_up, p_down = s.simes_p_value(z, 1), s.simes_p_value(z, -1)
        assert np.array_equal(low > 0, p_up <= alpha)
        assert np.array_equal(high < 0, p_down <= alpha)
        assert np.all(low < high)
        # at the bound the test is exactly at its level: shifting the null's center there gives p = alpha
        shifted = np.stack([null_z(c, e, df, null.center + low, *null.params()[1:]) for c, e, df in fits], axis=-1)
        finite = np.isfinite(low)
        assert np.allclose(s.simes_p_value(shifted, 1)[finite], alpha, rtol=1e-3)
