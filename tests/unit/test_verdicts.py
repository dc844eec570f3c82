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

from deltap.mining.engine import MiningConfig, _placebo_calibration
from deltap.mining.verdicts import EMPIRICAL, VerdictPolicy, default_policy, grade, verdict

P = VerdictPolicy()  # q 0.05, min_effect 0.1, margin 0.1, grades (0.1, 0.2, 0.4)
Z90 = 1.6448536269514722  # scipy.stats.norm.ppf(0.95)
UP, DOWN = 1 + 1e-9, 1 - 1e-9


def test_default_policy_values() -> None:
    assert (P.q, P.min_effect, P.margin, P.grade_bounds, P.unit) == (0.05, 0.1, 0.1, (0.1, 0.2, 0.4), "probability")
    assert default_policy("pass") == P
    lp = default_policy("logprob")
    assert (lp.q, lp.min_effect, lp.margin, lp.grade_bounds, lp.unit) == (0.05, 0.5, 0.5, (0.5, 1.5, 3.0), "nats")
    # A larger minimum effect lifts the lower grade bounds with it; the margin follows unless given.
    big = default_policy("pass", q=0.1, min_effect=0.3)
    assert (big.q, big.min_effect, big.margin, big.grade_bounds) == (0.1, 0.3, 0.3, (0.3, 0.3, 0.4))
    assert default_policy("pass", min_effect=0.05, margin=0.02).margin == 0.02
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
    assert P.to_dict() == {"q": 0.05, "min_effect": 0.1, "margin": 0.1, "grade_bounds": [0.1, 0.2, 0.4], "unit": "probability"}
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
    rows = [(0.45, 0.05, 0.001), (0.25, 0.05, 0.001), (0.12, 0.02, 0.01), (0.0, 0.01, 1.0), (0.0, 0.3, 1.0), (-0.3, 0.05, 0.001)]
    assert [grade(e, verdict(e, s, q, P), P) for e, s, q in rows] == [3, 2, 1, 0, None, 0]


# ---------------------------------------------------------------------------------------------------------------
# The placebo check: "more placebos labelled relevant/harmful than the nominal rate allows" is a one-sided binomial
# test, p = P(Binomial(n, q) >= k). The reference below sums the binomial tail directly (no scipy).


def _binom_tail(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _results(n_placebo: int, rel: int, harm: int, coef: float = 0.2) -> list[Any]:
    verdicts = ["relevant"] * rel + ["harmful"] * harm + ["undecided"] * (n_placebo - rel - harm)
    cands = [SimpleNamespace(is_placebo=True) for _ in verdicts] + [SimpleNamespace(is_placebo=False)]
    rows = [{"verdict": v, "regression_effect": {"coef": coef * (i + 1)}} for i, v in enumerate(verdicts)]
    rows.append({"verdict": "relevant", "regression_effect": {"coef": 9.0}})  # a gold document: not counted
    unmined = SimpleNamespace(X=None, pool=SimpleNamespace(candidates=[SimpleNamespace(is_placebo=True)]), candidates=[{"verdict": "relevant"}])
    return [SimpleNamespace(X=np.zeros((1, 1)), pool=SimpleNamespace(candidates=cands), candidates=rows), unmined]


@pytest.mark.parametrize(
    ("n", "rel", "harm", "warn"),
    [
        pytest.param(20, 0, 0, False, id="none-labelled"),
        pytest.param(20, 1, 0, False, id="at-nominal-rate"),
        pytest.param(20, 2, 1, False, id="above-rate-but-noise"),  # P(X >= 3) = 0.0755
        pytest.param(20, 2, 2, True, id="above-rate-beyond-noise"),  # P(X >= 4) = 0.0159
        pytest.param(20, 0, 4, True, id="harmful-count-too"),
        pytest.param(100, 9, 0, False, id="n100-9"),  # P(X >= 9) = 0.0631
        pytest.param(100, 10, 0, True, id="n100-10"),  # P(X >= 10) = 0.0282
        pytest.param(1, 1, 0, False, id="single-placebo"),  # P(X >= 1) = 0.05, not < 0.05
    ],
)
def test_placebo_binomial_reference(n: int, rel: int, harm: int, warn: bool) -> None:
    cfg = MiningConfig()
    out = _placebo_calibration(_results(n, rel, harm), cfg)  # type: ignore[arg-type]
    k = rel + harm
    assert (out["n"], out["labelled_relevant"], out["labelled_harmful"]) == (n, rel, harm)
    assert out["fpr"] == pytest.approx(k / n, abs=1e-15)
    assert out["nominal"] == cfg.q == 0.05
    assert out["p_value_above_nominal"] == pytest.approx(_binom_tail(k, n, cfg.q), rel=1e-9, abs=1e-15)
    assert out["warning"] is warn
    effects = [0.2 * (i + 1) for i in range(n)]
    assert out["effect_abs"]["max"] == pytest.approx(max(effects))
    assert out["effect_abs"]["median"] == pytest.approx(float(np.median(effects)))
    assert out["effect_abs"]["unit"] == "probability"


def test_placebo_reference_without_placebos() -> None:
    out = _placebo_calibration([], MiningConfig(q=0.1, outcome="logprob"))
    assert out == {"n": 0, "labelled_relevant": 0, "labelled_harmful": 0, "fpr": 0.0, "nominal": 0.1, "p_value_above_nominal": 1.0, "warning": False}


def test_placebo_reference_follows_q() -> None:
    # 4 of 20 labelled at q = 0.1: P(Binomial(20, 0.1) >= 4) = 0.133 -> no warning (it would warn at q = 0.05).
    out = _placebo_calibration(_results(20, 4, 0), MiningConfig(q=0.1))  # type: ignore[arg-type]
    assert out["p_value_above_nominal"] == pytest.approx(_binom_tail(4, 20, 0.1), rel=1e-9)
    assert out["warning"] is False
