"""Graded utility labels: every mined candidate's effect shrunk toward its group by empirical Bayes, with an interval
and a local false sign rate (issue 35 item 1).

The verdicts (:mod:`deltap.mining.verdicts`) say what is *proven* under FDR control; a candidate that misses the gate
becomes ``undecided`` and grade 0, whatever its estimate said. The graded label keeps the estimate: each
candidate's regression effect ``β̂_i`` (standard error ``s_i``) is pulled toward zero by as much as its own noise and
its group's prior warrant (the adaptive shrinkage of Stephens 2017, "False discovery rates: a new deal",
Biostatistics 18:275-294, the ``ashr`` package).

**The model.** For candidate ``i`` of case ``c`` in prior group ``g``:

    β̂_i | β_i ~ N(β_i, s_i²)                                     (the regression estimate; s_i: see below)
    β_i | λ_c ~ π_g0 δ_0 + Σ_k π_gk N(0, λ_c² σ_k²)               (a scale mixture of zero-centred normals)
    λ_c ~ Σ_l ρ_l δ_{λ_l}                                          (the case's own scale)

* ``σ_k``: ashr's grid, from a tenth of the smallest standard error to twice the largest excess ``sqrt(β̂² − s²)``,
  in steps of √2; ``δ_0`` is the point mass "no effect".
* ``π_g``: the mixture weights of group ``g`` — the prior is *unimodal at zero and symmetric*, and its shape (how
  much mass near zero, how heavy the tail) is learned from the run by maximum likelihood (EM). Groups are the
  candidate's source (:func:`prior_group`): ``gold``, ``retrieved`` by rank band, ``placebo`` — and, when
  single-document lifts are given (``endtoend --single-doc``), each source group split by the sign of the lift
  (:func:`covariate_bin`; candidates without one form their own bin). Groups are fitted level by level, each one's
  weights drawn toward its parent's (a Dirichlet prior worth :data:`PARENT_STRENGTH` candidates: pooled → source →
  source × lift), so a group of five candidates borrows from the run and a group of five hundred speaks for itself.
  The pooled fit carries ashr's null penalty (:data:`NULL_PENALTY` pseudo-counts on ``δ_0``): when the data cannot
  tell, ``π_0`` is over- rather than under-estimated, so the lfsr errs on the safe side.
* ``λ_c``: the scale of case ``c`` on the grid :data:`CASE_SCALES` with weights ``ρ`` learned from the run: a
  question whose documents all move the outcome a lot (a hard question under the ``logprob`` outcome) widens the
  prior of every one of its candidates. The case's scale is a latent variable shared by its candidates, so its
  posterior uses all of them.

Everything (``π``, ``ρ``) is fitted by EM on the marginal likelihood ``Σ_c log Σ_l ρ_l Π_{i∈c} Σ_k π_{g(i)k}
N(β̂_i; 0, λ_l² σ_k² + s_i²)``. The posterior of each ``β_i`` is then a mixture of the point mass and normals, and it
gives:

* ``utility``: the posterior mean (the shrunken effect, in the outcome's unit);
* ``ci``: the equal-tailed credible interval at :data:`LEVEL`;
* ``lfsr``: the local false sign rate ``min(P(β ≥ 0), P(β ≤ 0))`` — the probability that the sign of the utility is
  wrong (0.02: 98% sure the document helps, or hurts; near 0.5 or above: the data do not say);
* ``grade``: the integer grade of the graded qrels (:class:`GradeMapping`).

**The standard error.** ``s_i`` is the regression's classical OLS standard error, the one the verdicts' tests use
(``regression_effect.se_classical`` in the dataset; :func:`deltap.mining.estimate.z_statistics` says why it is better
calibrated than the robust HC2 one under the randomised design, and far less noisy at few trials). With few trials per
case (``df`` = trials − candidates − 1 small) a normal likelihood would trust it too much, so ``s_i`` is widened by
``sqrt(df / (df − 2))`` (the standard deviation of a ``t_df`` relative to its scale; ``df`` is floored at 3): a
variance-matched normal approximation of the ``t`` likelihood.

**Assumptions** (docs/graded-labels.md discusses each): the estimates are approximately normal around the true
effect with known ``s_i``; candidates are independent given their case's scale (the orthogonal design makes the
regression estimates of one case nearly uncorrelated); effects are symmetric and unimodal around zero within a group
(a group whose effects are mostly positive — gold — is still centred at zero: its width, not its mode, carries the
prior; a mode per group would pull a placebo that happens to lie there toward it); an effect is its document's
causal lift in random company, the estimand of the regression (a Banzhaf value), not its lift alone.

Two priors, both reported (:data:`PRIORS`): ``gold`` (the groups above: what a user with a benchmark has) and
``no_gold`` (the gold flag hidden: a gold candidate that was retrieved is grouped by its rank band, one that was not
retrieved falls in the last rank band — what a user with only a retriever and placebos has).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from deltap.dataset import GRADED_LIKELY_LFSR

__all__ = [
    "CASE_SCALES",
    "LEVEL",
    "LFSR_LIKELY",
    "NULL_PENALTY",
    "PARENT_STRENGTH",
    "PRIORS",
    "RANK_BANDS",
    "CandidateEstimate",
    "GradeMapping",
    "GradedLabel",
    "GradedLabels",
    "ShrinkageFit",
    "covariate_bin",
    "fit_shrinkage",
    "graded_labels",
    "prior_group",
    "single_doc_lifts",
]

#: the two priors every run reports: with the gold flag, and without it
PRIORS = ("gold", "no_gold")
#: level of the credible intervals
LEVEL = 0.95
#: a graded label "likely helps" (or hurts) when its lfsr is at most this (the dataset's readers use the same value)
LFSR_LIKELY = GRADED_LIKELY_LFSR
#: ashr's null penalty (its ``nullweight`` − 1): pseudo-counts on the point mass of the pooled fit
NULL_PENALTY = 9.0
#: a group's mixture weights are drawn toward its parent's by a Dirichlet prior worth this many candidates
PARENT_STRENGTH = 5.0
#: the grid of case scales λ (each case's prior is the group's prior widened by its λ)
CASE_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
#: retrieval-rank bands of the ``retrieved`` groups: ranks ``[1, 3]``, ``[4, 10]``, ``11+``
RANK_BANDS = (3, 10)
#: ratio of successive prior SDs of the grid (ashr: √2; 2 halves the components, the case scales fill between)
GRID_STEP = 2.0
_MAX_ITER = 300
_TOL = 1e-8


@dataclass(frozen=True)
class CandidateEstimate:
    """One mined candidate as the graded step sees it.

    Attributes:
        case_id: Its case.
        doc_id: The document.
        sources: Where it came from (``gold``, ``retrieved``, ``placebo``; a gold document the retriever also found
            has both).
        rank: Its retrieval rank (1 = first), ``None`` when it was not retrieved.
        coef: The regression effect ``β̂`` (outcome unit).
        se: Its standard error (the classical OLS one the tests use); ``inf`` or ``nan`` when the design could not
            estimate it.
        df: Residual degrees of freedom of its case's regression (trials − candidates − 1); ``None``: large.
    """

    case_id: str
    doc_id: str
    sources: tuple[str, ...]
    rank: int | None
    coef: float
    se: float
    df: float | None = None


@dataclass(frozen=True)
class GradeMapping:
    """How a graded label becomes an integer qrels grade.

    ``grade = 0`` unless the utility is positive and its lfsr at most ``lfsr_max``; then
    ``grade = max(1, round(utility / step))``. Grades are proportional to the shrunken utility (nDCG's linear gain
    then weighs a document by what it is estimated to bring). A run's ``lfsr_max`` is
    :attr:`MiningConfig.grade_lfsr <deltap.mining.config.MiningConfig>` (default 1: every positive utility graded,
    which measured best on the stdlib end-to-end benchmark); with :data:`LFSR_LIKELY` every grade ≥ 1 is a document
    that likely helps (what binary measures — hit rate, recall — count). Harmful documents get 0 here; the signed
    utility reads their negative utility from the dataset.
    """

    step: float
    lfsr_max: float = LFSR_LIKELY
    unit: str = "nats"

    def grade(self, utility: float, lfsr: float) -> int:
        if not (math.isfinite(utility) and utility > 0 and lfsr <= self.lfsr_max):
            return 0
        return max(1, int(round(utility / self.step)))

    def describe(self) -> dict[str, Any]:
        return {
            "rule": f"grade = max(1, round(utility / {self.step:g})) when utility > 0 and lfsr <= {self.lfsr_max:g}, else 0",
            "step": self.step,
            "lfsr_max": self.lfsr_max,
            "unit": self.unit,
        }


@dataclass(frozen=True)
class GradedLabel:
    """A candidate's graded label under one prior."""

    utility: float
    low: float
    high: float
    lfsr: float
    grade: int
    group: str

    @property
    def call(self) -> str:
        """``likely helps`` / ``likely hurts`` (lfsr ≤ :data:`LFSR_LIKELY`) or ``unclear``."""
        if self.lfsr <= LFSR_LIKELY and self.utility > 0:
            return "likely helps"
        if self.lfsr <= LFSR_LIKELY and self.utility < 0:
            return "likely hurts"
        return "unclear"

    def to_dict(self) -> dict[str, Any]:
        """What the dataset stores under ``graded.<prior>``."""
        return {
            "utility": _round(self.utility),
            "ci": [_round(self.low), _round(self.high)],
            "lfsr": round(float(self.lfsr), 6) if math.isfinite(self.lfsr) else None,
            "grade": int(self.grade),
        }


def _round(x: float) -> float | None:
    return float(f"{x:.6g}") if math.isfinite(x) else None


@dataclass(frozen=True)
class ShrinkageFit:
    """A fitted prior: the grid, the case scales and the mixture weights of each group (the last level fitted)."""

    grid: tuple[float, ...]
    case_scales: tuple[float, ...]
    case_scale_weights: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]
    modes: dict[str, float]
    loglik: float
    n: int

    def null_share(self, group: str) -> float:
        """``π_0`` of a group: the prior share of candidates with no effect."""
        return float(self.weights[group][0])

    def prior_mean(self, group: str) -> float:
        """The prior mean of a group's effects (the slab's mode times its share; case scales average 1)."""
        return float(
            (1.0 - self.null_share(group)) * self.modes[group] * np.dot(self.case_scale_weights, self.case_scales)
        )

    def prior_sd(self, group: str) -> float:
        """The prior's standard deviation in a group (the case scales averaged in)."""
        w = np.asarray(self.weights[group])
        lam, rho = np.asarray(self.case_scales), np.asarray(self.case_scale_weights)
        slab = 1.0 - float(w[0])
        second = float(np.dot(rho, lam**2)) * (float(np.dot(w, np.square(self.grid))) + slab * self.modes[group] ** 2)
        return float(math.sqrt(max(second - self.prior_mean(group) ** 2, 0.0)))

    def describe(self) -> dict[str, Any]:
        """Per group: the null share, the slab's mode, the prior's mean and SD (what ``metadata.graded`` shows)."""
        return {
            "groups": {
                g: {
                    "null_share": round(self.null_share(g), 4),
                    "slab_mode": round(self.modes[g], 4),
                    "prior_mean": round(self.prior_mean(g), 4),
                    "prior_sd": round(self.prior_sd(g), 4),
                }
                for g in self.weights
            },
            "case_scales": {
                f"{s:g}": round(w, 4) for s, w in zip(self.case_scales, self.case_scale_weights, strict=True)
            },
            "loglik": round(self.loglik, 3),
            "estimates": self.n,
        }


@dataclass(frozen=True)
class GradedLabels:
    """The graded labels of a run: per prior, one :class:`GradedLabel` per estimate (``None`` where there was no
    estimate), the fits, and the grade mapping."""

    labels: dict[str, list[GradedLabel | None]]
    fits: dict[str, ShrinkageFit]
    mapping: GradeMapping
    covariates: int = 0
    level: float = LEVEL

    def describe(self) -> dict[str, Any]:
        """``metadata.graded`` of the dataset: the model, each prior's fit and the grade mapping."""
        return {
            "model": (
                "empirical Bayes adaptive shrinkage (Stephens 2017, ashr): each regression effect's prior is a point"
                " mass at 0 plus zero-centred normals (ashr's grid), weights by group (EM, each group drawn toward its"
                " parent), every case its own scale; utility = posterior mean, ci = equal-tailed credible interval,"
                " lfsr = local false sign rate"
            ),
            "level": self.level,
            "groups": (
                "source: gold / retrieved by rank band (1-3, 4-10, 11+) / placebo"
                + (
                    ", each split by the sign of the single-document lift (endtoend --single-doc)"
                    if self.covariates
                    else ""
                )
            ),
            "covariates": self.covariates,
            "priors": {
                "gold": "groups with the gold flag (what a user with a benchmark has)",
                "no_gold": "the gold flag hidden: gold candidates grouped by their retrieval rank band (unretrieved ones in the last band)",
            },
            "fits": {p: f.describe() for p, f in self.fits.items()},
            "grade_mapping": self.mapping.describe(),
            "likely": f"lfsr <= {LFSR_LIKELY:g}: 'likely helps' (utility > 0) or 'likely hurts' (utility < 0)",
        }


def prior_group(sources: Sequence[str], rank: int | None, *, gold_flag: bool = True) -> str | None:
    """The source group of a candidate's prior: ``gold`` (with ``gold_flag``), ``retrieved:1-3`` / ``retrieved:4-10``
    / ``retrieved:11+`` by rank, ``placebo``. Without ``gold_flag`` a retrieved gold candidate is grouped by its rank
    band, and one that was not retrieved has no group (``None``): a user without a benchmark would not have it, so
    :func:`graded_labels` leaves it out of the fit and grades it under the deepest rank band's prior."""
    s = set(sources)
    if "placebo" in s and not (s - {"placebo"}):
        return "placebo"
    if gold_flag and "gold" in s:
        return "gold"
    if "retrieved" not in s or rank is None:
        return None
    a, b = RANK_BANDS
    if rank > b:
        return f"retrieved:{b + 1}+"
    return f"retrieved:1-{a}" if rank <= a else f"retrieved:{a + 1}-{b}"


def _deepest_band(groups: Sequence[str | None]) -> str:
    """The prior group of an on-topic candidate without a rank under the no-gold prior: the deepest rank band the
    run has (``placebo`` when it retrieved nothing)."""
    a, b = RANK_BANDS
    for band in (f"retrieved:{b + 1}+", f"retrieved:{a + 1}-{b}", f"retrieved:1-{a}"):
        if band in groups:
            return band
    return "placebo"


def covariate_bin(value: float | None) -> str:
    """The single-document-lift bin of a candidate: ``lift>0``, ``lift<=0`` or ``no lift`` (not measured)."""
    if value is None or not math.isfinite(value):
        return "no lift"
    return "lift>0" if value > 0 else "lift<=0"


def _grid(b: NDArray[np.float64], s: NDArray[np.float64]) -> NDArray[np.float64]:
    """ashr's grid of prior SDs: 0 (the point mass), then from min(s)/10 to 2·sqrt(max(b² − s²)) by
    :data:`GRID_STEP`."""
    lo = float(np.min(s)) / 10.0
    excess = float(np.max(b**2 - s**2))
    hi = 2.0 * math.sqrt(excess) if excess > 0 else 8.0 * lo
    hi = max(hi, lo * 2.0)
    n = int(math.ceil(math.log(hi / lo) / math.log(GRID_STEP))) + 1
    return np.concatenate([[0.0], lo * GRID_STEP ** np.arange(n)])


@dataclass
class _Model:
    """The fixed parts of a fit: estimates, grid, case scales, cases."""

    b: NDArray[np.float64]
    s2: NDArray[np.float64]
    grid: NDArray[np.float64]  # (K,): the prior SDs at scale 1, 0 first (the point mass)
    lam: NDArray[np.float64]  # (L,)
    var: NDArray[np.float64]  # (L, K): λ_l² σ_k² (0 for the point mass, k = 0)
    case: NDArray[np.int64]
    n_cases: int

    def __post_init__(self) -> None:
        tot = self.var[None] + self.s2[:, None, None]  # (N, L, K)
        self._const = -0.5 * np.log(2 * np.pi * tot)
        self._inv = 0.5 / tot

    def log_lik(self, mu_i: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(N, L, K)`` log N(b_i; m_ilk, var_lk + s_i²) with ``m = λ_l μ_i`` (0 for the point mass), and the
        component means ``m``."""
        m = np.broadcast_to((self.lam[None, :] * mu_i[:, None])[:, :, None], self._const.shape).copy()
        m[:, :, 0] = 0.0
        return self._const - (self.b[:, None, None] - m) ** 2 * self._inv, m

    def posterior_weights(
        self, pi_i: NDArray[np.float64], rho: NDArray[np.float64], loglik: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], float]:
        """``(N, L, K)`` posterior weight of each (case scale, component) per estimate, and the log-likelihood."""
        top = loglik.max(axis=(1, 2), keepdims=True)
        lik = np.exp(loglik - top) * pi_i[:, None, :]  # (N, L, K), scaled per row
        mix = lik.sum(2)  # (N, L)
        log_mix = np.log(np.maximum(mix, 1e-300)) + top[:, :, 0]
        A = np.zeros((self.n_cases, self.lam.size))
        np.add.at(A, self.case, log_mix)
        la = np.log(np.maximum(rho, 1e-300))[None, :] + A
        a_top = la.max(1, keepdims=True)
        w = np.exp(la - a_top)
        norm = w.sum(1, keepdims=True)
        ll = float(np.sum(np.log(norm) + a_top))
        w = w / norm  # (C, L)
        q = lik / np.maximum(mix, 1e-300)[..., None] * w[self.case][..., None]
        return q, ll


def _em(
    model: _Model,
    group: NDArray[np.int64],
    prior_counts: NDArray[np.float64],
    mu_parent: NDArray[np.float64],
    rho: NDArray[np.float64],
    mu0: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    """EM for the group weights ``π`` ``(G, K)``, the groups' slab modes ``μ`` ``(G,)`` and the case-scale weights
    ``ρ`` ``(L,)`` (symmetric in log λ), accelerated by SQUAREM (Varadhan & Roland 2008, Scand. J. Stat.
    35:335-353; a plain EM step whenever the extrapolation does not raise the objective). ``prior_counts`` ``(G, K)``
    are each group's Dirichlet pseudo-counts and ``mu_parent`` ``(G,)`` the mode each group's is drawn toward (by
    :data:`PARENT_STRENGTH` candidates' worth of precision). Returns ``(π, μ, ρ, log-likelihood)``."""
    n_groups, K = prior_counts.shape
    onehot = np.zeros((n_groups, group.size))
    onehot[group, np.arange(group.size)] = 1.0
    lam = model.lam[None, :, None]
    L = model.lam.size

    def unpack(theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        pi = theta[: n_groups * K].reshape(n_groups, K)
        return pi, theta[n_groups * K : n_groups * K + n_groups], theta[n_groups * K + n_groups :]

    def step(theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], float, float]:
        """The EM map, and the objective (penalised) and log-likelihood at ``theta``."""
        pi, mu, rho = unpack(theta)
        loglik, _m = model.log_lik(mu[group])
        q, ll = model.posterior_weights(pi[group], rho, loglik)
        obj = ll + float(np.sum(prior_counts * np.log(np.maximum(pi, 1e-300))))
        counts = onehot @ q.sum(1) + prior_counts  # (G, K)
        new_pi = counts / counts.sum(1, keepdims=True)
        w_case = np.zeros((model.n_cases, L))
        np.add.at(w_case, model.case, q.sum(2))
        w_l = w_case.sum(0)
        w_l = (w_l + w_l[::-1]) / 2.0 + 1e-3  # symmetric in log λ: the scales' spread is learned, their centre is 1
        # the slab modes: weighted least squares of b on λ over the slab components, drawn toward the parent's
        prec = q[:, :, 1:] / (model.var[None, :, 1:] + model.s2[:, None, None])
        num = onehot @ np.sum(prec * lam * model.b[:, None, None], axis=(1, 2))
        den = onehot @ np.sum(prec * lam**2, axis=(1, 2))
        slab = onehot @ q[:, :, 1:].sum(axis=(1, 2))
        kappa = PARENT_STRENGTH * den / np.maximum(slab, 1e-12)
        new_mu = (num + kappa * mu_parent) / np.maximum(den + kappa, 1e-300)
        return np.concatenate([new_pi.ravel(), new_mu, w_l / w_l.sum()]), obj, ll

    def project(theta: NDArray[np.float64]) -> NDArray[np.float64]:
        pi, mu, rho = unpack(theta.copy())
        pi = np.maximum(pi, 1e-12)
        rho = np.maximum(rho, 1e-12)
        return np.concatenate([(pi / pi.sum(1, keepdims=True)).ravel(), mu, rho / rho.sum()])

    pi0 = (prior_counts + 1.0) / (prior_counts + 1.0).sum(1, keepdims=True)
    theta = np.concatenate([pi0.ravel(), mu0, rho])
    prev = -np.inf
    ll = -np.inf
    for _ in range(_MAX_ITER):
        t1, obj0, ll = step(theta)
        if abs(obj0 - prev) < _TOL * (1.0 + abs(obj0)):
            break
        prev = obj0
        t2, obj1, _ = step(t1)
        r, v = t1 - theta, t2 - 2 * t1 + theta
        nv = float(np.linalg.norm(v))
        if nv <= 0:
            theta = t2
            continue
        alpha = min(-1.0, -float(np.linalg.norm(r)) / nv)
        jump = project(theta - 2 * alpha * r + alpha**2 * v)
        t3, obj_jump, _ = step(jump)
        theta = t3 if obj_jump >= obj1 else t2  # either way the objective rose
    pi, mu, rho = unpack(theta)
    return pi, mu, rho, ll


def _model(
    b: NDArray[np.float64],
    s: NDArray[np.float64],
    cases: Sequence[str],
    case_scales: Sequence[float],
    grid: NDArray[np.float64] | None = None,
) -> _Model:
    grid = _grid(b, s) if grid is None else grid
    lam = np.asarray(case_scales, dtype=float)
    _, case = np.unique(np.asarray(cases, dtype=object).astype(str), return_inverse=True)
    case = np.asarray(case, dtype=np.int64)
    return _Model(b, s**2, grid, lam, (lam[:, None] * grid[None, :]) ** 2, case, int(case.max()) + 1)


def fit_shrinkage(
    coef: ArrayLike,
    se: ArrayLike,
    levels: Sequence[Sequence[str]],
    cases: Sequence[str],
    *,
    case_scales: Sequence[float] = CASE_SCALES,
) -> tuple[ShrinkageFit, NDArray[np.int64]]:
    """Fit the prior level by level (see the module docstring).

    Args:
        coef: Effect estimates ``(N,)`` (finite).
        se: Their standard errors ``(N,)`` (finite, > 0; already widened for small ``df``).
        levels: Group labels per level, coarsest first (each ``(N,)``); the pooled level is implicit. Each label of a
            level must nest in one label of the level before (``"gold"`` then ``"gold|lift>0"``).
        cases: The case of each estimate ``(N,)``.
        case_scales: The grid of case scales (symmetric in log scale around 1).

    Returns:
        ``(fit, group index per estimate)``: the fit of the last level and each estimate's group in it.
    """
    b = np.asarray(coef, dtype=float)
    s = np.asarray(se, dtype=float)
    model = _model(b, s, cases, case_scales)
    K = model.var.shape[1]
    rho = np.full(model.lam.size, 1.0 / model.lam.size)
    pooled = np.zeros((1, K))
    pooled[0, 0] = NULL_PENALTY  # ashr's null penalty, on the pooled fit
    group = np.zeros(b.size, dtype=np.int64)
    pi, mu, rho, ll = _em(model, group, pooled, np.zeros(1), rho, np.zeros(1))
    names: list[str] = ["all"]
    for depth, labels in enumerate(levels):
        parent = group
        uniq, inv = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
        names, group = [str(x) for x in uniq], np.asarray(inv, dtype=np.int64)
        # each group's parent: the parent group of its first member (labels nest)
        first = np.array([int(np.flatnonzero(group == g)[0]) for g in range(len(names))])
        counts = PARENT_STRENGTH * pi[parent[first]]
        # the source groups' slab modes are drawn toward 0 (no effect; the pooled mode is mostly the gold's), the
        # finer groups' toward their source group's
        toward = np.zeros(len(names)) if depth == 0 else mu[parent[first]]
        pi, mu, rho, ll = _em(model, group, counts, toward, rho, toward)
    fit = ShrinkageFit(
        tuple(float(x) for x in model.grid),
        tuple(float(x) for x in model.lam),
        tuple(float(x) for x in rho),
        {n: tuple(float(x) for x in pi[g]) for g, n in enumerate(names)},
        {n: float(mu[g]) for g, n in enumerate(names)},
        ll,
        int(b.size),
    )
    return fit, group


def _posterior(
    b: NDArray[np.float64],
    s: NDArray[np.float64],
    cases: Sequence[str],
    fit: ShrinkageFit,
    group_names: Sequence[str],
    level: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Posterior mean, lfsr and the equal-tailed interval ``(low, high)`` of every estimate (``group_names[i]``: its
    group in ``fit``)."""
    model = _model(b, s, cases, fit.case_scales, np.asarray(fit.grid))
    pi_i = np.array([fit.weights[g] for g in group_names])
    mu_i = np.array([fit.modes[g] for g in group_names])
    loglik, m_prior = model.log_lik(mu_i)
    q, _ = model.posterior_weights(pi_i, np.asarray(fit.case_scale_weights), loglik)
    var = model.var[None]
    s2 = model.s2[:, None, None]
    shrink = var / (var + s2)
    m = shrink * b[:, None, None] + (1.0 - shrink) * m_prior
    sd = np.sqrt(shrink * s2)  # 0 for the point mass
    mean = np.sum(q * m, axis=(1, 2))
    pos = np.where(sd > 0, special.ndtr(m / np.where(sd > 0, sd, 1.0)), 0.0)
    p0 = np.sum(np.where(sd > 0, 0.0, q), axis=(1, 2))
    p_pos = np.sum(q * pos, axis=(1, 2))
    p_neg = np.maximum(1.0 - p0 - p_pos, 0.0)
    lfsr = np.minimum(p_pos + p0, p_neg + p0)
    alpha = (1.0 - level) / 2.0
    low = _quantile(q, m, sd, alpha)
    high = _quantile(q, m, sd, 1.0 - alpha)
    return mean, np.minimum(lfsr, 1.0), low, high


def _quantile(q: NDArray[np.float64], m: NDArray[np.float64], sd: NDArray[np.float64], p: float) -> NDArray[np.float64]:
    """The ``p``-quantile of each row's mixture (point masses where ``sd`` is 0), by bisection."""
    safe = np.where(sd > 0, sd, 1.0)
    spread = np.sqrt(np.sum(q * (sd**2 + m**2), axis=(1, 2)))
    lo = -10.0 * spread - 1e-12
    hi = 10.0 * spread + 1e-12
    for _ in range(50):
        mid = (lo + hi) / 2.0
        x = mid[:, None, None]
        cdf = np.sum(q * np.where(sd > 0, special.ndtr((x - m) / safe), (x >= m).astype(float)), axis=(1, 2))
        below = cdf < p
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return hi


def _widened(se: NDArray[np.float64], df: NDArray[np.float64]) -> NDArray[np.float64]:
    """``se · sqrt(df / (df − 2))`` with ``df`` floored at 3 (``nan``: no widening)."""
    d = np.where(np.isfinite(df), np.maximum(df, 3.0), np.inf)
    factor = np.where(np.isfinite(d), np.sqrt(d / np.where(np.isfinite(d), d - 2.0, 1.0)), 1.0)
    return se * factor


def graded_labels(
    estimates: Sequence[CandidateEstimate],
    *,
    step: float,
    unit: str = "nats",
    covariates: Mapping[tuple[str, str], float] | None = None,
    level: float = LEVEL,
    lfsr_max: float = LFSR_LIKELY,
) -> GradedLabels:
    """The graded labels of a run's candidates under both priors (see the module docstring).

    Args:
        estimates: Every mined candidate's estimate (:class:`CandidateEstimate`); one without a finite estimate and
            standard error gets ``None``.
        step: The grade step of the graded qrels (:class:`GradeMapping`), in the outcome's unit.
        unit: The outcome's unit (``nats`` or ``probability``), for the descriptions.
        covariates: Optional single-document lifts ``{(case_id, doc_id): lift}`` (``endtoend --single-doc``): each
            source group is split by the lift's sign (:func:`covariate_bin`).
        level: Level of the credible intervals.
        lfsr_max: The lfsr up to which a positive utility gets a qrels grade.

    Returns:
        The :class:`GradedLabels` (``labels[prior][i]`` for ``estimates[i]``).

    Raises:
        ValueError: ``step`` not positive, or ``level`` outside (0, 1).
    """
    if not step > 0:
        raise ValueError(f"graded labels: the grade step must be positive, got {step}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"graded labels: level must be in (0, 1), got {level}")
    mapping = GradeMapping(step, lfsr_max, unit)
    b = np.array([e.coef for e in estimates], dtype=float)
    s = np.array([e.se for e in estimates], dtype=float)
    df = np.array([np.nan if e.df is None else e.df for e in estimates], dtype=float)
    keep = np.isfinite(b) & np.isfinite(s) & (s > 0)
    empty: dict[str, list[GradedLabel | None]] = {p: [None] * len(estimates) for p in PRIORS}
    if int(keep.sum()) < 2:
        return GradedLabels(empty, {}, mapping, 0, level)
    idx = [int(i) for i in np.flatnonzero(keep)]
    bk, sk = b[idx], _widened(s[idx], df[idx])
    cases = [estimates[i].case_id for i in idx]
    cov = covariates or {}
    bins = [covariate_bin(cov.get((estimates[i].case_id, estimates[i].doc_id))) for i in idx]
    n_cov = sum(1 for x in bins if x != "no lift")
    out: dict[str, list[GradedLabel | None]] = {}
    fits: dict[str, ShrinkageFit] = {}
    for prior in PRIORS:
        raw = [prior_group(estimates[i].sources, estimates[i].rank, gold_flag=prior == "gold") for i in idx]
        fitted = np.array([g is not None for g in raw])  # no-gold prior: unretrieved gold documents left out
        if int(fitted.sum()) < 2:
            fitted[:] = True
        groups = [g if g is not None else _deepest_band(raw) for g in raw]
        levels: list[list[str]] = [[g for g, f in zip(groups, fitted, strict=True) if f]]
        final = groups
        if n_cov:
            final = [f"{g}|{c}" for g, c in zip(groups, bins, strict=True)]
            levels.append([g for g, f in zip(final, fitted, strict=True) if f])
        fit, _ = fit_shrinkage(bk[fitted], sk[fitted], levels, [c for c, f in zip(cases, fitted, strict=True) if f])
        # a held-out candidate's (sub)group may be missing from the fit: its source group's, else the deepest band's
        final = [g if g in fit.weights else g.split("|")[0] for g in final]
        final = [g if g in fit.weights else next(iter(fit.weights)) for g in final]
        mean, lfsr, low, high = _posterior(bk, sk, cases, fit, final, level)
        labels: list[GradedLabel | None] = [None] * len(estimates)
        for a, i in enumerate(idx):
            u, f = float(mean[a]), float(lfsr[a])
            labels[i] = GradedLabel(u, float(low[a]), float(high[a]), f, mapping.grade(u, f), final[a])
        out[prior] = labels
        fits[prior] = fit
    return GradedLabels(out, fits, mapping, n_cov, level)


def single_doc_lifts(results: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """The single-document lifts of an end-to-end evaluation (``RUN_DIR/endtoend/results.json`` as a dict, written by
    ``deltap endtoend --single-doc``): ``{(case_id, doc_id): lift}``.

    For ``logprob`` the lift is the eRAG label itself (the document alone minus no document, in nats); for ``pass``
    it is the document's success rate alone minus the ``none`` system's success on the case (documents of a case
    without a ``none`` value are left out). Empty when the evaluation has no single-document values.
    """
    single = results.get("single_doc") or {}
    labels = single.get("labels") or {}
    out: dict[tuple[str, str], float] = {}
    binary = str(results.get("outcome") or "logprob") == "pass"
    per_case = results.get("per_case") or {}
    for case_id, docs in labels.items():
        base = (per_case.get(case_id) or {}).get("none") if binary else 0.0
        if base is None or not isinstance(docs, Mapping):
            continue
        for doc_id, value in docs.items():
            if isinstance(value, int | float) and math.isfinite(float(value)):
                out[(str(case_id), str(doc_id))] = float(value) - float(base)
    return out
