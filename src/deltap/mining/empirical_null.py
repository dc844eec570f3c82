"""The placebo null: "relevant" means "moves the outcome more than random text does".

The theoretical null of the per-candidate tests is "this document changes nothing" (effect exactly 0). A real
solver breaks it for *every* document: a greedy model's log-probability of the reference answer shifts by a fraction
of a nat whenever any text is added, so with enough trials every candidate — random placebo documents included —
becomes "significant". The real ADK run of issue #6 showed it: 4 of 20 placebos labelled relevant or harmful on the
``logprob`` outcome.

The placebo documents are a sample of exactly those document-level effects that do not mean relevance. Following
Efron's empirical null (Efron 2004, "Large-scale simultaneous hypothesis testing: the choice of a null hypothesis",
JASA 99:96-104), deltap fits the distribution of effects of random documents from the placebos of the whole run,
``θ ~ N(center, spread²)``, and tests each candidate against it:

    t_j = (β̂_j − center) / sqrt(spread² + se_j²)

mapped to the normal scale with the regression's Student-t tails, as the zero-null z-statistics are. The fit is
robust (median and 1.4826·MAD of the placebo estimates, minus their average sampling variance, a method-of-moments
random-effects estimate): one placebo that happens to be relevant does not widen the null. Each placebo's own test
uses the null fitted **without it** (leave-one-out), so the placebo false-positive rate stays an honest out-of-sample
check of the calibration rather than a circular one.

**Heavy tails.** On the real model (SmolLM2, ADK, session 4 of issue #6) the placebos' effects were not normal: 17
of 20 sat near zero and three moved the log-prob by 1.0-1.7 nats, each with a small standard error. The robust core
reads the bulk (spread 0), so those few — "random text that happens to move this model a lot" — are exactly what a
normal null cannot absorb. The fit therefore also looks for a **tail component**: with the center fixed at the
median, an EM fit (started from the robust core) of

    θ ~ (1 − w) · N(center, spread²) + w · N(center, tail_spread²)

(each placebo with its own sampling variance added; both spreads refitted) is kept only when it clearly beats the core alone (likelihood
ratio statistic ≥ :data:`TAIL_MIN_LR`) and at least :data:`TAIL_MIN_PLACEBOS` placebos' worth of weight sits in the
tail (one is enough since issue 14: ignoring a lone far placebo let fresh null documents through 5-10× too often). A candidate is then tested against
the mixture: its one-sided tail probability is the mixture of the two components' Student-t tails.

With ``spread = 0``, ``center = 0`` and no tail this is exactly the zero-null test. The spread dominates when the solver is
deterministic (se → 0 while the spread stays), and then the z-path across looks is nearly flat, so the
group-sequential repeated p-value of such a path is conservative.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

__all__ = [
    "MIN_PLACEBOS",
    "RECOMMENDED_PLACEBOS",
    "TAIL_MIN_LR",
    "TAIL_MIN_PLACEBOS",
    "PlaceboNull",
    "describe_null",
    "describe_topic_null",
    "fit_placebo_null",
    "leave_one_out",
    "null_p_value",
    "null_z",
]

#: fewer placebo estimates than this in a run: the zero null is used (the fit would be too noisy)
MIN_PLACEBOS = 10
#: fewer than this: the placebo null is used but the outputs say there are too few placebos. Measured (issue 14,
#: tests/unit/mining/test_empirical_null.py): with the SmolLM2 shape (a fifth of random texts move the log-prob by
#: N(0, 1.5²) nats) fresh null documents are rejected at 0.91-1.13× the nominal rate at p = 0.0025 with 50 placebos,
#: 1.14× on average with 30 and 1.4-3.5× with 20: below 50 the tail of what random text does is too poorly known
RECOMMENDED_PLACEBOS = 50
#: a tail component needs at least this many placebos' worth of posterior weight. One is enough: measured
#: (issue 14) with a fifth of random texts moving the outcome, 20-30 placebos and the old minimum of 2, fresh null
#: documents were rejected 5-10× too often at the p-values BH uses — one placebo far out of 20 *is* evidence that
#: about 5% of random texts move the outcome that much. A relevant placebo now widens the null: power pays, not the
#: error rate.
TAIL_MIN_PLACEBOS = 1.0
#: ... and a likelihood-ratio statistic 2·(ℓ_two-scale − ℓ_robust core) of at least this (the 1% point of χ², 2 df)
TAIL_MIN_LR = 9.21


@dataclass(frozen=True)
class PlaceboNull:
    """Distribution of the effects of random documents, in outcome units: ``N(center, spread²)``, or with a tail
    component ``(1 − tail_weight) · N(center, spread²) + tail_weight · N(center, tail_spread²)``.

    ``core_df`` / ``tail_df`` are the degrees of freedom of the two spreads (the effective number of placebos in each
    component; ``inf``: a known null) and ``center_se`` the bootstrap standard error of the center: :func:`null_z`
    turns them into Student-t predictive tails (see the module docstring)."""

    center: float
    spread: float
    placebos: int
    tail_weight: float = 0.0
    tail_spread: float = 0.0
    core_df: float = math.inf
    tail_df: float = math.inf
    center_se: float = 0.0

    def params(self) -> tuple[float, float, float, float, float, float, float]:
        """``(center, spread, tail_weight, tail_spread, core_df, tail_df, center_se)``: the null's arguments of
        :func:`null_z`, in order."""
        return (
            self.center,
            self.spread,
            self.tail_weight,
            self.tail_spread,
            self.core_df,
            self.tail_df,
            self.center_se,
        )

    def to_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"center": self.center, "spread": self.spread, "placebos": self.placebos}
        if self.tail_weight > 0:
            out.update(tail_weight=self.tail_weight, tail_spread=self.tail_spread)
        if math.isfinite(self.core_df):
            out["core_df"] = self.core_df
        if self.tail_weight > 0 and math.isfinite(self.tail_df):
            out["tail_df"] = self.tail_df
        if self.center_se > 0:
            out["center_se"] = self.center_se
        return out

    @classmethod
    def from_dict(cls, info: Mapping[str, Any]) -> PlaceboNull:
        """The null back from :meth:`to_dict` (or a run's ``placebo_calibration.null``; not ``used``: zero)."""
        if info.get("used", "placebo") != "placebo" or "center" not in info:
            return ZERO
        return cls(
            float(info["center"]),
            float(info["spread"]),
            int(info.get("placebos") or 0),
            float(info.get("tail_weight") or 0.0),
            float(info.get("tail_spread") or 0.0),
            float(info.get("core_df", math.inf)),
            float(info.get("tail_df", math.inf)),
            float(info.get("center_se") or 0.0),
        )


ZERO = PlaceboNull(0.0, 0.0, 0)


def describe_null(info: Mapping[str, Any], texts: str = "random texts", fitted_from: str = "placebos") -> str:
    """The fitted placebo null in words, from its summary dict (``PlaceboNull.to_dict()`` plus ``unit``); ``texts``
    and ``fitted_from`` name what it describes (the on-topic null: :func:`describe_topic_null`)."""
    unit = f" {info['unit']}" if info.get("unit") else ""
    spread = float(info["spread"])
    if round(spread, 2) > 0:
        text = f"center {float(info['center']):+.2f}, spread {spread:.2f}{unit}"
    else:  # "spread 0.00" would say nothing a reader can check: say what a zero spread means
        text = (
            f"center {float(info['center']):+.2f}{unit}, no spread beyond sampling noise: {texts} move the outcome "
            "no more than their estimates' own noise"
        )
    if float(info.get("tail_weight") or 0.0) > 0:
        text += (
            f", and a heavy tail: {100 * float(info['tail_weight']):.0f}% of {texts} with spread "
            f"{float(info['tail_spread']):.2f}{unit}"
        )
    return text + f" (from {int(info['placebos'])} {fitted_from})"


def describe_topic_null(info: Mapping[str, Any]) -> str | None:
    """The on-topic null of ``--null topic`` in words, from a run's null summary (``None`` when the run did not ask
    for it). Its fit is recorded under ``info["topic"]`` (:func:`deltap.mining.labels.placebo_null`)."""
    if info.get("requested") != "topic":
        return None
    topic = info.get("topic") or {}
    if not topic.get("used"):
        return "on-topic null (--null topic) not used: " + str(topic.get("reason") or "no retrieved non-gold estimates")
    fit = {**dict(topic), "placebos": topic.get("retrieved", topic.get("placebos", 0)), "unit": info.get("unit")}
    text = describe_null(fit, texts="on-topic documents", fitted_from="retrieved non-gold documents")
    return (
        "on-topic null (--null topic): "
        + text
        + "; every gold or retrieved candidate had to beat it as well as the placebo null"
    )


def fit_placebo_null(coef: ArrayLike, se: ArrayLike) -> PlaceboNull:
    """Robust random-effects fit of placebo effect estimates ``coef`` with standard errors ``se`` (plus a heavy tail
    when the placebos show one)."""
    return _fit(coef, se)[0]


_EMState = tuple[float, float, float]  # (core variance, tail variance, tail weight) where EM ended


def _fit(
    coef: ArrayLike, se: ArrayLike, start: _EMState | None = None, iterations: int = 2000
) -> tuple[PlaceboNull, _EMState | None]:
    b = np.asarray(coef, dtype=float).ravel()
    s = np.asarray(se, dtype=float).ravel()
    ok = np.isfinite(b) & np.isfinite(s)
    b, s = b[ok], s[ok]
    if b.size == 0:
        return ZERO, None
    center = float(np.median(b))
    mad = 1.4826 * float(np.median(np.abs(b - center)))
    spread = float(np.sqrt(max(mad**2 - float(np.mean(s**2)), 0.0)))
    spread, weight, tail, state = _fit_tail(b - center, s, spread, start, iterations)
    n = int(b.size)
    # The center (a median) is an estimate too: its bootstrap SE (Efron 1979; fixed seed, so fits are reproducible)
    # enters every test's variance.
    boot = np.median(b[np.random.default_rng(0).integers(0, n, size=(200, n))], axis=1)
    center_se = float(np.std(boot)) if n > 1 else 0.0
    if weight <= 0:
        return PlaceboNull(center, spread, n, core_df=float(n), center_se=center_se), state
    # Predictive (posterior-mean) tail share with a uniform prior: (n_tail + 1) / (n + 2) — a tail seen in 3 of 20
    # placebos is not known to be 15% of random texts; and each spread has the df of its own placebos.
    n_tail = weight * n
    w_pred = (n_tail + 1.0) / (n + 2.0)
    return PlaceboNull(
        center, spread, n, w_pred, tail, float(max(n - n_tail, 1.0)), float(max(n_tail, 1.0)), center_se
    ), state


def _fit_tail(
    d: NDArray[np.float64], s: NDArray[np.float64], spread: float, start: _EMState | None = None, iterations: int = 2000
) -> tuple[float, float, float, _EMState | None]:
    """Two-scale fit of centred placebo effects ``d`` (sampling SEs ``s``): ``(core spread, tail weight, tail spread,
    EM state)``; ``start`` warm-starts EM (the leave-one-out fits start where the full fit ended).

    EM for ``(1 − w) N(0, c² + s²) + w N(0, t² + s²)`` with ``c ≤ t`` and ``w ≤ ½``, started from the robust core
    ``spread``. Kept only when it carries at least :data:`TAIL_MIN_PLACEBOS` placebos' weight and beats the robust
    core ``N(0, spread²)`` by a likelihood-ratio statistic of :data:`TAIL_MIN_LR`; else ``(spread, 0, 0)``. (The
    robust core's spread subtracts the *mean* sampling variance, so with very unequal SEs it can read 0 while most
    placebos are well away from zero — the two-scale fit is what catches that.)
    """
    s2 = s**2
    if d.size < MIN_PLACEBOS:
        return spread, 0.0, 0.0, None

    d2 = d**2

    def ll(var: float) -> NDArray[np.float64]:  # normal log-density of d with variance var + s²
        v = var + s2 + 1e-300
        return np.asarray(-0.5 * (np.log(2.0 * np.pi * v) + d2 / v), dtype=float)

    def m_step(r: NDArray[np.float64], var: float) -> float:
        """One fixed-point step of the weighted random-effects variance (heteroscedastic SEs)."""
        # Floored: placebos estimated exactly (effect 0, SE 0: a case that fails every trial) with a core variance of 0
        # would divide by 0 and turn the whole null into nan; their weight stays finite and still pins the core at 0.
        w = r / np.maximum(var + s2, 1e-150) ** 2
        return max(float(np.sum(w * (d2 - s2)) / max(float(np.sum(w)), 1e-300)), 0.0)

    core, tail, weight = start or (
        spread**2,
        max(float(np.quantile(d2, 0.9)), 4.0 * (spread**2 + float(np.median(s2)))),
        0.1,
    )
    for _ in range(iterations):
        a, b = np.log1p(-weight) + ll(core), np.log(weight) + ll(tail)
        r = np.exp(b - np.logaddexp(a, b))
        new = (m_step(1.0 - r, core), m_step(r, tail), float(np.clip(r.mean(), 1e-6, 0.5)))
        converged = all(abs(x - y) <= 1e-6 * max(abs(y), 1e-12) for x, y in zip(new, (core, tail, weight), strict=True))
        core, tail, weight = new
        if converged:
            break
    state = (core, tail, weight)
    if tail <= core:
        return spread, 0.0, 0.0, state
    mix = np.logaddexp(np.log1p(-weight) + ll(core), np.log(weight) + ll(tail))
    lr = 2.0 * float(np.sum(mix) - np.sum(ll(spread**2)))
    if weight * d.size < TAIL_MIN_PLACEBOS or lr < TAIL_MIN_LR:
        return spread, 0.0, 0.0, state
    return float(np.sqrt(core)), weight, float(np.sqrt(tail)), state


def leave_one_out(coef: ArrayLike, se: ArrayLike) -> list[PlaceboNull]:
    """The null fitted without each placebo in turn (for that placebo's own, out-of-sample test)."""
    b = np.asarray(coef, dtype=float).ravel()
    s = np.asarray(se, dtype=float).ravel()
    keep = np.ones(b.size, dtype=bool)
    out = []
    state = _fit(b, s)[1]
    for i in range(b.size):
        keep[i] = False
        # EM from where the full fit ended: one placebo moves the optimum by O(1/n), and the likelihood (what the
        # tail decision uses) is flat to second order there, so a few dozen steps suffice
        out.append(_fit(b[keep], s[keep], state, iterations=50)[0])
        keep[i] = True
    return out


def null_z(
    coef: ArrayLike,
    se: ArrayLike,
    df: ArrayLike,
    center: ArrayLike = 0.0,
    spread: ArrayLike = 0.0,
    tail_weight: ArrayLike = 0.0,
    tail_spread: ArrayLike = 0.0,
    core_df: ArrayLike = math.inf,
    tail_df: ArrayLike = math.inf,
    center_se: ArrayLike = 0.0,
) -> NDArray[np.float64]:
    """Normal-equivalent z of ``coef`` against the null ``N(center, spread²)`` (with a tail component when
    ``tail_weight > 0``), sign kept, all arguments broadcast. ``center = spread = 0`` and no tail give the zero-null
    z-statistics.

    Each component's tail is a Student-t *predictive* tail (the fitted spread is an estimate from a few placebos,
    not the truth): the statistic ``(β̂ − center) / sqrt(a + c + b)`` with ``a = spread²`` estimated from
    ``core_df`` placebos (around a fixed center: ``core_df`` degrees of freedom), ``c = center_se²`` and ``b = se²``
    (the regression's, ``df``), referred to Student-t with the Welch–Satterthwaite degrees of freedom
    ``min(df, (a + c + b)² / (a²/core_df + c²/n + b²/df))`` (Satterthwaite 1946; ``n`` = core_df taken for the
    center too). For a normal null with a known center this is the exact predictive distribution of a new draw,
    ``t_{core_df}``; with ``core_df = inf`` and ``center_se = 0`` it is the plug-in test. z comes from the log tail (:func:`scipy.special.ndtri_exp`), so far-tail statistics never
    underflow to 0.
    """
    log_sf = _log_sf(coef, se, df, center, spread, tail_weight, tail_spread, core_df, tail_df, center_se)
    d = np.asarray(coef, dtype=float) - np.asarray(center, dtype=float)
    # ndtri_exp maps log tails in [-inf, log ½] to finite or infinite values without floating-point warnings; the
    # minimum keeps a mixture's tail rounded a ulp above ½ from giving a z of the wrong sign.
    z = np.sign(d) * -special.ndtri_exp(np.minimum(log_sf, math.log(0.5)))
    return np.asarray(np.where(np.isnan(z), 0.0, z), dtype=float)


def null_p_value(
    coef: ArrayLike, se: ArrayLike, df: ArrayLike, null: PlaceboNull | Mapping[str, Any]
) -> NDArray[np.float64]:
    """One-sided p-value of each estimate in its own direction against ``null`` (a fit or its summary dict), one
    look: what the fresh-null check of the benchmark and the tests compare with BH's threshold."""
    fit = null if isinstance(null, PlaceboNull) else PlaceboNull.from_dict(null)
    return np.asarray(np.exp(_log_sf(coef, se, df, *fit.params())), dtype=float)


def _log_sf(
    coef: ArrayLike,
    se: ArrayLike,
    df: ArrayLike,
    center: ArrayLike,
    spread: ArrayLike,
    tail_weight: ArrayLike,
    tail_spread: ArrayLike,
    core_df: ArrayLike,
    tail_df: ArrayLike,
    center_se: ArrayLike,
) -> NDArray[np.float64]:
    b = np.asarray(coef, dtype=float) - np.asarray(center, dtype=float)
    s2 = np.asarray(se, dtype=float) ** 2
    d = np.maximum(np.asarray(df, dtype=float), 1.0)
    c2 = np.asarray(center_se, dtype=float) ** 2

    def component(sd: ArrayLike, sd_df: ArrayLike) -> NDArray[np.float64]:
        nu_c = np.maximum(np.asarray(sd_df, dtype=float), 1.0)
        a = np.asarray(sd, dtype=float) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            # Satterthwaite, capped at the regression's df (a known spread adds no df: the plug-in test)
            nu = np.where(a + c2 > 0, np.minimum((a + c2 + s2) ** 2 / ((a**2 + c2**2) / nu_c + s2**2 / d), d), d)
            t = np.abs(b) / np.sqrt(a + c2 + s2)
            t = np.where(np.isnan(t), 0.0, t)
        # log(stdtr(ν, −t)) is what stats.t.logsf computes (bit for bit), without its per-call argument checks:
        # this tail is evaluated thousands of times per case by the verdict bisections.
        with np.errstate(divide="ignore"):
            return np.asarray(np.log(special.stdtr(np.where(np.isfinite(nu), nu, d), -t)), dtype=float)

    log_sf = component(spread, core_df)
    w = np.asarray(tail_weight, dtype=float)
    if np.any(w > 0):
        wc = np.clip(w, 1e-300, 1.0)  # both logs stay finite: no floating-point warning to silence
        mixed = np.logaddexp(
            np.log1p(-np.minimum(wc, 1.0 - 1e-16)) + log_sf, np.log(wc) + component(tail_spread, tail_df)
        )
        log_sf = np.where(w > 0, mixed, log_sf)
    return np.asarray(log_sf, dtype=float)
