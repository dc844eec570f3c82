"""Simulation benchmark with known truth: how often each mining design labels the right documents.

A *scenario* plants the truth: ``m`` candidates, a base success rate, main effects on the success probability
(positive = relevant, negative = harmful distractor), pairwise interactions, and the outcome (``pass``: Bernoulli;
``logprob``: the same linear predictor plus Gaussian noise). Every replication is one case mined from scratch.
Everything is vectorised over replications with numpy (inclusion matrices ``(R, N, m)``), so a thousand
replications of a 20-candidate case take seconds.

Designs compared (the S1 table of the issue):

* ``naive(N)`` — the seed's design: fixed N trials, relevant when the difference in means ΔP > 0.1.
* ``fixed(N)`` — fixed N trials, joint regression (HC2), Benjamini–Hochberg at q, relevant when significant with
  ΔP ≥ min effect.
* ``adaptive`` — deltap's default: preflight, looks every ``batch`` trials, repeated p-values (group-sequential,
  see :mod:`deltap.mining.adaptive`), stopping when every candidate is decided, the same BH and verdict rule.

Multiple testing is simulated the way :func:`deltap.mining.engine.mine` does it: one Benjamini–Hochberg family per
direction over **every candidate of the dataset**. The replications are cut into datasets of ``dataset_size`` cases
(default 40, the size of the ADK benchmark; for a mixture the cases of all components are shuffled together first)
and BH runs over each dataset's ``dataset_size × m`` p-values. ``dataset_size=1`` gives per-case BH (the most
demanding family for a single case, used by the repeated-looks test).

Metrics: label precision (true relevant labels / relevant labels, pooled), FDR (the mean over datasets of the
false-discovery proportion: what BH controls), recall (relevant documents labelled relevant), null false-positive
rate (null documents labelled relevant or harmful), harmful recall, calls per case.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from deltap.mining.adaptive import LookSchedule, StoppingRule, look_schedule
from deltap.mining.design import DESIGNS, hadamard_blocks, paley_order
from deltap.mining.empirical_null import MIN_PLACEBOS, fit_placebo_null, leave_one_out, null_z
from deltap.mining.engine import NULLS, MiningConfig, default_null
from deltap.mining.estimate import benjamini_hochberg, diff_in_means, z_statistics

__all__ = ["MIXTURES", "SCENARIOS", "AdaptiveConfig", "DesignResult", "Mixture", "Scenario", "run_design", "run_mixture", "run_scenario", "simulate"]

Outcome = Literal["pass", "logprob"]


@dataclass(frozen=True)
class Scenario:
    """Planted truth of a simulated case.

    Args:
        name: Short id.
        m: Number of candidates.
        effects: ``{candidate index: effect}`` on the success probability (or on the mean log-prob).
        interactions: ``{(i, j): effect}`` added when both ``i`` and ``j`` are in.
        base: Success probability with no document (or the mean log-prob for ``logprob``).
        outcome: ``pass`` or ``logprob``.
        noise: Gaussian noise SD of the ``logprob`` outcome.
        text_effect_sd: SD of every document's own effect, drawn per replication (a solver that reacts to any text:
            these effects are not relevance, and the truth of a null candidate stays "null").
        text_effect_share: Share of documents that have such an effect (the rest have none): below 1 the text
            effects are sparse and heavy-tailed, as measured on SmolLM2 (most placebos ~0, a few ±1-1.7 nats).
        placebos: The last ``placebos`` candidates are placebo documents (nulls whose source the engine knows).
        description: One line for the table.
    """

    name: str
    m: int = 20
    effects: dict[int, float] = field(default_factory=dict)
    interactions: dict[tuple[int, int], float] = field(default_factory=dict)
    base: float = 0.1
    outcome: Outcome = "pass"
    noise: float = 1.0
    text_effect_sd: float = 0.0
    text_effect_share: float = 1.0
    placebos: int = 0
    description: str = ""

    def __post_init__(self) -> None:
        planted = {*self.effects, *(i for pair in self.interactions for i in pair)}
        if any(i >= self.m - self.placebos for i in planted):
            raise ValueError(f"scenario {self.name}: placebos (the last {self.placebos} candidates) must be null")

    @property
    def placebo_mask(self) -> NDArray[np.bool_]:
        """Which candidates are placebos."""
        return np.arange(self.m) >= self.m - self.placebos

    def document_effects(self, R: int, rng: np.random.Generator) -> NDArray[np.float64] | None:
        """Per-replication effects of the documents' text, shape ``(R, m)`` (``None`` when the scenario has none)."""
        if self.text_effect_sd <= 0:
            return None
        effects = self.text_effect_sd * rng.standard_normal((R, self.m))
        if self.text_effect_share < 1.0:
            effects = np.where(rng.random((R, self.m)) < self.text_effect_share, effects, 0.0)
        return np.asarray(effects, dtype=float)

    def truth(self) -> NDArray[np.int8]:
        """+1 relevant, −1 harmful, 0 null, per candidate (interaction members count as relevant)."""
        t = np.zeros(self.m, dtype=np.int8)
        for i, e in self.effects.items():
            t[i] = 1 if e > 0 else -1 if e < 0 else 0
        for (i, j), e in self.interactions.items():
            if e > 0:
                t[i] = t[j] = 1
        return t

    def mean(self, X: NDArray[Any], doc_effects: NDArray[Any] | None = None) -> NDArray[np.float64]:
        """Success probability (pass) or mean outcome (logprob) for inclusion matrices ``(R, N, m)`` (or ``(..., m)``
        without ``doc_effects``, the per-replication text effects ``(R, m)``)."""
        X = np.asarray(X, dtype=float)
        eff = np.zeros(self.m)
        for i, e in self.effects.items():
            eff[i] = e
        mu = self.base + X @ eff
        if doc_effects is not None:
            mu = mu + np.einsum("rnm,rm->rn", X, doc_effects)
        for (i, j), e in self.interactions.items():
            mu = mu + e * X[..., i] * X[..., j]
        if self.outcome == "pass":
            mu = np.clip(mu, 0.0, 1.0)
        return np.asarray(mu, dtype=float)

    def draw(self, X: NDArray[Any], rng: np.random.Generator, doc_effects: NDArray[Any] | None = None) -> NDArray[np.float64]:
        """Outcomes for inclusion matrices ``(..., m)`` (``(R, N, m)`` with ``doc_effects``)."""
        mu = self.mean(X, doc_effects)
        if self.outcome == "pass":
            return (rng.random(mu.shape) < mu).astype(float)
        return mu + self.noise * rng.standard_normal(mu.shape)


SCENARIOS: dict[str, Scenario] = {
    "S1": Scenario("S1", 20, {0: 0.4, 1: 0.3}, base=0.1, description="20 candidates, +0.4/+0.3, base 0.1 (the issue's S1)"),
    "harmful": Scenario(
        "harmful", 20, {0: 0.4, 1: 0.3, 2: -0.3}, base=0.4, description="S1 effects plus a −0.3 distractor, base 0.4"
    ),
    "interaction": Scenario(
        "interaction", 20, {0: 0.3}, {(1, 2): 0.5}, base=0.1, description="+0.3 main effect, a pair that helps only together (+0.5)"
    ),
    "saturated": Scenario("saturated", 20, {}, base=0.97, description="solved without help (p=0.97): preflight skips it"),
    "logprob": Scenario(
        "logprob", 20, {0: 2.0, 1: 1.0}, base=-6.0, outcome="logprob", noise=1.5,
        description="logprob outcome, +2.0/+1.0 nats, Gaussian noise SD 1.5",
    ),
    "logprob_text": Scenario(
        "logprob_text", 20, {0: 2.0, 1: 1.5}, base=-6.0, outcome="logprob", noise=0.3, text_effect_sd=0.4, placebos=5,
        description="a near-deterministic solver that reacts to any text: every document moves the log-prob "
        "(SD 0.4 nats), +2.0/+1.5 real effects, noise SD 0.3, 5 placebos",
    ),
    "logprob_sparse": Scenario(
        "logprob_sparse", 20, {0: 4.0, 1: 3.0}, base=-6.0, outcome="logprob", noise=0.3, text_effect_sd=1.5,
        text_effect_share=0.2, placebos=5,
        description="the real SmolLM2 shape: a fifth of the documents move the log-prob (SD 1.5 nats), the rest do "
        "not; +4.0/+3.0 real effects, noise SD 0.3, 5 placebos",
    ),
    "m60": Scenario("m60", 60, {0: 0.4, 1: 0.3}, base=0.1, description="S1 with 60 candidates"),
    "null": Scenario("null", 20, {}, base=0.3, description="no relevant document (global null), base 0.3"),
}


@dataclass
class DesignResult:
    """Operating characteristics of one design on one scenario."""

    scenario: str
    design: str
    replications: int
    precision: float
    fdr: float
    recall: float
    null_fpr: float
    harmful_recall: float
    calls_mean: float
    calls_max: int
    skipped: float
    seconds: float
    counts: dict[str, float] = field(default_factory=dict, repr=False)

    def row(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "counts"}


@dataclass(frozen=True)
class AdaptiveConfig:
    """deltap's default adaptive design: the defaults of :class:`deltap.mining.engine.MiningConfig`, read from it."""

    budget: int = MiningConfig.budget
    first_look: int = MiningConfig.first_look
    batch: int = MiningConfig.batch
    q: float = MiningConfig.q
    min_effect: float = 0.1  # MiningConfig resolves its None default to 0.1 for the pass outcome simulated here
    preflight: int = MiningConfig.preflight
    preflight_confirm: int = MiningConfig.preflight_confirm
    design: str = MiningConfig.design
    null: str | None = MiningConfig.null  # None: the engine's default for the outcome (zero for pass, placebo for logprob)
    min_effect_logprob: float = 0.5  # MiningConfig's default for the logprob outcome, in nats
    rule: StoppingRule = field(default_factory=StoppingRule)

    def resolved_null(self, outcome: str, placebos: int = 1) -> str:
        return self.null or default_null(outcome, placebos)

    def effect_floor(self, outcome: str) -> float:
        return self.min_effect if outcome == "pass" else self.min_effect_logprob


def _labels(coef: NDArray[Any], relevant: NDArray[Any], harmful: NDArray[Any], min_effect: float) -> NDArray[np.int8]:
    lab = np.zeros(coef.shape, dtype=np.int8)
    lab[relevant & (coef >= min_effect)] = 1
    lab[harmful & (coef <= -min_effect)] = -1
    return lab


@dataclass
class _Tested:
    """One design's fits on the replications of one scenario, before the dataset-wide BH step.

    The per-look estimates are kept (not just p-values) so the BH step can test them against either null: zero
    effect, or the placebo null fitted from the placebos of each simulated dataset (:mod:`deltap.mining.empirical_null`).
    """

    scenario: Scenario
    coef_path: NDArray[np.float64]  # (R, m, K): effect estimates at each look
    se_path: NDArray[np.float64]  # (R, m, K): their classical standard errors
    df: NDArray[np.float64]  # (K,): residual degrees of freedom at each look
    stop_look: NDArray[np.int64]  # (R,): index of the look each replication stopped at
    looks: tuple[int, ...]
    calls: NDArray[Any]  # (R,)
    skipped: NDArray[Any]  # (R,)

    @property
    def coef(self) -> NDArray[np.float64]:
        """Effect estimates at each replication's stopping look, ``(R, m)``."""
        return np.take_along_axis(self.coef_path, self.stop_look[:, None, None], axis=2)[..., 0]

    @property
    def se(self) -> NDArray[np.float64]:
        return np.take_along_axis(self.se_path, self.stop_look[:, None, None], axis=2)[..., 0]

    def p_values(self, rows: NDArray[np.int64], null: Any = None) -> NDArray[np.float64]:
        """One-sided p-values ``(2, len(rows), m)`` (relevant side, harmful side) against the null: ``None`` (zero
        effect) or an array ``(len(rows), m, 4)`` of placebo-null parameters (center, spread, tail weight, tail
        spread) per candidate.

        One look: the fixed-sample normal tail; several: the repeated p-value through the stopping look.
        Skipped replications carry p = 1.
        """
        from scipy import special

        params = np.zeros((len(rows), self.coef_path.shape[1], 4)) if null is None else np.asarray(null, dtype=float)
        z = null_z(self.coef_path[rows], self.se_path[rows], self.df, *(params[..., k, None] for k in range(4)))
        if len(self.looks) == 1:
            p = np.stack([0.5 * special.erfc(side * z[..., 0] / np.sqrt(2.0)) for side in (1, -1)])
        else:
            schedule = LookSchedule(self.looks)
            mask = np.arange(len(self.looks))[None, None, :] <= self.stop_look[rows][:, None, None]
            p = np.stack([schedule.repeated_p_value(np.where(mask, side * z, -np.inf), 1) for side in (1, -1)])
        return np.asarray(np.where(self.skipped[rows].astype(bool)[None, :, None], 1.0, p), dtype=float)


def _datasets(n_rows: int, dataset_size: int) -> list[NDArray[np.int64]]:
    """Row indices of each dataset: consecutive blocks of ``dataset_size`` rows (the last one may be smaller)."""
    size = max(1, int(dataset_size))
    return [np.arange(a, min(a + size, n_rows)) for a in range(0, n_rows, size)]


def _bh_labels(tested: Sequence[_Tested], q: float, min_effect: float, dataset_size: int, seed: int, null: str = "zero") -> list[NDArray[np.int8]]:
    """Labels per scenario after Benjamini–Hochberg over every candidate of each dataset, one family per direction.

    With several scenarios (a mixture) the rows are shuffled together (seeded) before being cut into datasets, so
    each dataset mixes the components in proportion. ``null="placebo"``: each dataset's placebos (at least
    :data:`~deltap.mining.empirical_null.MIN_PLACEBOS`, else the zero null) give the null the candidates are tested
    against, each placebo against the null fitted without it — as :func:`deltap.mining.engine.mine` does.
    """
    rows = [(t, i) for t in tested for i in range(t.coef_path.shape[0])]
    order = np.arange(len(rows))
    if len(tested) > 1:
        order = np.random.default_rng([seed, 7]).permutation(len(rows))
    rejected = {id(t): np.zeros((2, t.coef_path.shape[0], t.scenario.m), dtype=bool) for t in tested}
    for block in _datasets(len(rows), dataset_size):
        members = [rows[j] for j in order[block].tolist()]
        by_test: dict[int, list[int]] = {}
        for t, i in members:
            by_test.setdefault(id(t), []).append(i)
        tests = {id(t): t for t in tested}
        nulls: dict[int, Any] = {k: None for k in by_test}
        if null == "placebo":
            pc, ps, owner = [], [], []
            for k, idx in by_test.items():
                t = tests[k]
                mask = t.scenario.placebo_mask
                live = ~t.skipped[idx].astype(bool)
                sel = np.asarray(idx)[live]
                pc.append(t.coef[sel][:, mask].ravel())
                ps.append(t.se[sel][:, mask].ravel())
                owner += [(k, r, j) for r in sel.tolist() for j in np.flatnonzero(mask).tolist()]
            pcoef, pse = np.concatenate(pc) if pc else np.zeros(0), np.concatenate(ps) if ps else np.zeros(0)
            if pcoef.size >= MIN_PLACEBOS:
                fit = fit_placebo_null(pcoef, pse)
                loo = leave_one_out(pcoef, pse)
                for k, idx in by_test.items():
                    nulls[k] = np.tile(np.array(fit.params()), (len(idx), tests[k].scenario.m, 1))
                pos_of = {k: {r: a for a, r in enumerate(idx)} for k, idx in by_test.items()}
                for (k, r, j), f in zip(owner, loo, strict=True):
                    nulls[k][pos_of[k][r], j] = f.params()
        pvals = {k: tests[k].p_values(np.asarray(idx), nulls[k]) for k, idx in by_test.items()}
        pos_in = {k: {r: a for a, r in enumerate(idx)} for k, idx in by_test.items()}
        for side in (0, 1):
            flat = np.concatenate([pvals[id(t)][side, pos_in[id(t)][i]] for t, i in members])
            rej, _ = benjamini_hochberg(flat, q)
            pos = 0
            for t, i in members:
                m = t.scenario.m
                rejected[id(t)][side, i] = rej[pos : pos + m]
                pos += m
    return [_labels(t.coef, rejected[id(t)][0], rejected[id(t)][1], min_effect) for t in tested]


def _counts(sc: Scenario, labels: NDArray[np.int8], calls: NDArray[Any], skipped: NDArray[Any]) -> dict[str, float]:
    truth = sc.truth()
    R = labels.shape[0]
    lab_rel = labels == 1
    null = truth == 0
    return {
        "replications": R,
        "tp": int((lab_rel & (truth == 1)).sum()),
        "labels": int(lab_rel.sum()),
        "relevant": int((truth == 1).sum()) * R,
        "null_labels": int(((labels != 0) & null).sum()),
        "nulls": int(null.sum()) * R,
        "harm_tp": int(((labels == -1) & (truth == -1)).sum()),
        "harmful": int((truth == -1).sum()) * R,
        "calls_sum": float(np.sum(calls)),
        "calls_max": float(np.max(calls)) if R else 0.0,
        "skipped_sum": float(np.sum(skipped)),
    }


def _fdr(per_row_false: NDArray[Any], per_row_labels: NDArray[Any], dataset_size: int) -> float:
    """Mean over datasets of (false relevant labels / relevant labels), 0 for a dataset without labels."""
    fdps = []
    for block in _datasets(len(per_row_false), dataset_size):
        fdps.append(per_row_false[block].sum() / max(per_row_labels[block].sum(), 1))
    return float(np.mean(fdps)) if fdps else float("nan")


def _from_counts(name: str, design: str, c: dict[str, float], fdr: float, seconds: float) -> DesignResult:
    nan = float("nan")
    R = c["replications"]
    return DesignResult(
        scenario=name,
        design=design,
        replications=int(R),
        precision=c["tp"] / c["labels"] if c["labels"] else nan,
        fdr=fdr,
        recall=c["tp"] / c["relevant"] if c["relevant"] else nan,
        null_fpr=c["null_labels"] / c["nulls"] if c["nulls"] else nan,
        harmful_recall=c["harm_tp"] / c["harmful"] if c["harmful"] else nan,
        calls_mean=c["calls_sum"] / R,
        calls_max=int(c["calls_max"]),
        skipped=c["skipped_sum"] / R,
        seconds=seconds,
    )


def _result(name: str, design: str, parts: Sequence[tuple[Scenario, NDArray[np.int8], NDArray[Any], NDArray[Any]]],
            dataset_size: int, seconds: float, order: NDArray[np.int64] | None = None) -> DesignResult:
    """Pool the counts of ``(scenario, labels, calls, skipped)`` parts into one :class:`DesignResult`."""
    total: dict[str, float] = {}
    false_rows, label_rows = [], []
    for sc, labels, calls, skipped in parts:
        for k, v in _counts(sc, labels, calls, skipped).items():
            total[k] = max(total.get(k, 0.0), v) if k == "calls_max" else total.get(k, 0.0) + v
        lab_rel = labels == 1
        false_rows.append((lab_rel & (sc.truth() != 1)).sum(1))
        label_rows.append(lab_rel.sum(1))
    f, n = np.concatenate(false_rows), np.concatenate(label_rows)
    if order is not None:
        f, n = f[order], n[order]
    return _from_counts(name, design, total, _fdr(f, n, dataset_size), seconds)


def _draw_design(
    sc: Scenario, R: int, N: int, rng: np.random.Generator, kind: str = "orthogonal", doc_effects: NDArray[Any] | None = None
) -> tuple[NDArray[Any], NDArray[Any]]:
    """``R`` inclusion matrices of ``N`` trials (the engine's design ``kind``, π = 0.5) and their outcomes."""
    if kind == "orthogonal":
        b = paley_order(sc.m)
        X = hadamard_blocks(rng, sc.m, (R, -(-N // b))).reshape(R, -1, sc.m)[:, :N]
    else:
        X = rng.random((R, N, sc.m)) < 0.5
    return X, sc.draw(X, rng, doc_effects)


def _parse_design(design: str, config: AdaptiveConfig | None) -> tuple[str, AdaptiveConfig]:
    cfg = config or AdaptiveConfig()
    if "@" in design:  # "fixed:128@0.03": another FDR level
        design, q_text = design.split("@", 1)
        cfg = replace(cfg, q=float(q_text))
    design, *options = design.split("/")  # "fixed:128/bernoulli", "adaptive/placebo": inclusion design, null
    for opt in options:
        if opt in DESIGNS:
            cfg = replace(cfg, design=opt)
        elif opt in NULLS:
            cfg = replace(cfg, null=opt)
        else:
            raise ValueError(f"unknown design option {opt!r}; expected an inclusion design ({', '.join(DESIGNS)}) or a null ({', '.join(NULLS)})")
    if design.startswith("adaptive:"):  # "adaptive:192": another per-case budget
        cfg = replace(cfg, budget=int(design.split(":", 1)[1]))
        design = "adaptive"
    if not (design.startswith(("naive:", "fixed:")) or design == "adaptive"):
        raise ValueError(
            f"unknown design {design!r}; expected naive:N, fixed:N, adaptive or adaptive:BUDGET, optionally followed by "
            "/bernoulli or /orthogonal (the inclusion design), /zero or /placebo (the null) and @q (the FDR level)"
        )
    return design, cfg


def _test(sc: Scenario, design: str, replications: int, seed: int, cfg: AdaptiveConfig) -> _Tested | NDArray[np.int8]:
    """Run one (parsed) design: the naive design's labels directly, or the p-values of the others."""
    import zlib

    rng = np.random.default_rng([seed, zlib.crc32(sc.name.encode()), zlib.crc32(design.encode())])
    R = replications
    binary = sc.outcome == "pass"
    doc_effects = sc.document_effects(R, rng)
    if design.startswith("naive:"):
        N = int(design.split(":")[1])
        X, y = _draw_design(sc, R, N, rng, "bernoulli", doc_effects)  # the seed's design: independent coin flips
        dm = diff_in_means(X, y, binary=binary)
        thr = 0.1 if binary else 0.5
        return np.where(dm.delta > thr, 1, 0).astype(np.int8)  # the seed labels "relevant" only
    if design.startswith("fixed:"):
        N = int(design.split(":")[1])
        X, y = _draw_design(sc, R, N, rng, cfg.design, doc_effects)
        _, reg = z_statistics(X, y)
        return _Tested(sc, reg.coef[..., None], reg.se[..., None], np.array([float(N - sc.m - 1)]), np.zeros(R, dtype=np.int64),
                       (N,), np.full(R, N), np.zeros(R))
    return _adaptive(sc, R, rng, cfg, doc_effects)


def run_design(
    sc: Scenario, design: str, replications: int, seed: int, config: AdaptiveConfig | None = None, dataset_size: int = 40
) -> DesignResult:
    """Simulate one design on a scenario.

    Designs: ``naive:N``, ``fixed:N``, ``adaptive`` (the default config) or ``adaptive:BUDGET``; any of them may end in
    ``@q`` for another FDR level (``fixed:128@0.03``). BH runs over datasets of ``dataset_size`` replications.
    """
    t0 = time.perf_counter()
    label = design
    design, cfg = _parse_design(design, config)
    out = _test(sc, design, replications, seed, cfg)
    if isinstance(out, _Tested):
        labels = _bh_labels([out], cfg.q, cfg.effect_floor(sc.outcome), dataset_size, seed, cfg.resolved_null(sc.outcome, sc.placebos))[0]
        parts = [(sc, labels, out.calls, out.skipped)]
    else:
        parts = [(sc, out, np.full(replications, int(design.split(":")[1])), np.zeros(replications))]
    return _result(sc.name, label, parts, dataset_size, time.perf_counter() - t0)


def _adaptive(sc: Scenario, R: int, rng: np.random.Generator, cfg: AdaptiveConfig, doc_effects: NDArray[Any] | None = None) -> _Tested:
    binary = sc.outcome == "pass"
    m = sc.m
    schedule = look_schedule(cfg.budget, cfg.first_look, cfg.batch, m)
    rule = replace(cfg.rule, q=cfg.q)
    if not binary and cfg.rule.prior_scale == StoppingRule().prior_scale:
        rule = replace(rule, prior_scale=1.5, margin=0.5)  # effects in nats (the engine's logprob defaults)
    rule = replace(rule, significance_stops=cfg.resolved_null(sc.outcome, sc.placebos) == "zero")  # as MiningConfig.rule()
    # Preflight: ``preflight`` trials with no document and with every candidate.
    calls = np.zeros(R)
    skipped = np.zeros(R, dtype=bool)
    if cfg.preflight and binary:
        n0, n1 = cfg.preflight, max(cfg.preflight_confirm, cfg.preflight)
        none = sc.draw(np.zeros((R, n1, m)), rng, doc_effects)
        full = sc.draw(np.ones((R, n1, m)), rng, doc_effects)

        def extreme(n: int) -> NDArray[np.bool_]:
            a, b = none[:, :n].sum(1), full[:, :n].sum(1)
            return ((a == n) & (b == n)) | ((a == 0) & (b == 0))

        first = extreme(n0)
        skipped = first & extreme(n1)
        calls += np.where(first, 2 * n1, 2 * n0)
    X, y = _draw_design(sc, R, schedule.budget, rng, cfg.design, doc_effects)
    K = len(schedule.looks)
    z_path = np.zeros((R, m, K))
    coef_path = np.zeros((R, m, K))
    se_path = np.ones((R, m, K))
    stop_look = np.full(R, K - 1)
    running = ~skipped
    for k, n in enumerate(schedule.looks):
        idx = np.flatnonzero(running)
        if idx.size == 0:
            break
        z, reg = z_statistics(X[idx, :n], y[idx, :n])
        z_path[idx, :, k] = z
        coef_path[idx, :, k] = reg.coef
        se_path[idx, :, k] = reg.se
        if k == K - 1:
            stop_look[idx] = k
            break
        done = rule.decided(schedule, z_path[idx, :, : k + 1], reg.coef, reg.se, df=n - m - 1).all(axis=-1)
        stop_look[idx[done]] = k
        running[idx[done]] = False
    looks_arr = np.asarray(schedule.looks)
    calls = calls + np.where(skipped, 0, looks_arr[stop_look])
    # Repeated p-values through each stopping look (against the zero or the placebo null) and BH over the dataset
    # happen in :func:`_bh_labels`; skipped cases carry p = 1.
    df = np.asarray(schedule.looks, dtype=float) - m - 1
    return _Tested(sc, coef_path, se_path, df, stop_look, schedule.looks, calls, skipped.astype(float))


@dataclass(frozen=True)
class Mixture:
    """A dataset whose cases differ: each replication is a case drawn from ``components`` with the given weights."""

    name: str
    components: tuple[tuple[float, Scenario], ...]
    description: str = ""


MIXTURES: dict[str, Mixture] = {
    "mixed": Mixture(
        "mixed",
        (
            (0.4, SCENARIOS["S1"]),
            (0.3, Scenario("easy", 20, {0: 0.6}, base=0.2)),
            (0.15, Scenario("saturated", 20, {}, base=0.97)),
            (0.15, Scenario("unsolvable", 20, {}, base=0.0)),
        ),
        "a realistic mix: 40% S1, 30% one +0.6 document (base 0.2), 15% saturated, 15% unsolvable",
    ),
}


def run_mixture(
    mix: Mixture, design: str, replications: int, seed: int, config: AdaptiveConfig | None = None, dataset_size: int = 40
) -> DesignResult:
    """Run a design on every component (replications split by weight); BH runs over datasets that mix the components."""
    t0 = time.perf_counter()
    label = design
    design, cfg = _parse_design(design, config)
    runs = [(sc, _test(sc, design, max(1, round(w * replications)), seed, cfg)) for w, sc in mix.components]
    tested = [out for _, out in runs if isinstance(out, _Tested)]
    n_rows = sum(len(out) if not isinstance(out, _Tested) else out.coef_path.shape[0] for _, out in runs)
    order = np.random.default_rng([seed, 7]).permutation(n_rows)
    parts: list[tuple[Scenario, NDArray[np.int8], NDArray[Any], NDArray[Any]]] = []
    if tested:
        labels = _bh_labels(tested, cfg.q, cfg.min_effect, dataset_size, seed, cfg.null or "zero")
        parts = [(t.scenario, lab, t.calls, t.skipped) for t, lab in zip(tested, labels, strict=True)]
    else:  # the naive design labels without a BH step
        N = int(design.split(":")[1])
        parts = [(sc, out, np.full(len(out), N), np.zeros(len(out))) for sc, out in runs if not isinstance(out, _Tested)]
    return _result(mix.name, label, parts, dataset_size, time.perf_counter() - t0, order=order)


def run_scenario(
    sc: Scenario, designs: Sequence[str], replications: int, seed: int, config: AdaptiveConfig | None = None, dataset_size: int = 40
) -> list[DesignResult]:
    """Every design on one scenario."""
    return [run_design(sc, d, replications, seed, config, dataset_size) for d in designs]


DEFAULT_DESIGNS = ("naive:10", "naive:128", "fixed:96", "fixed:128", "fixed:160", "adaptive", "adaptive:160")


def simulate(
    scenarios: Sequence[str] = (*SCENARIOS, "mixed"),
    designs: Sequence[str] = DEFAULT_DESIGNS,
    replications: int = 1000,
    seed: int = 0,
    config: AdaptiveConfig | None = None,
    dataset_size: int = 40,
) -> list[DesignResult]:
    """Run the simulation benchmark; returns one :class:`DesignResult` per (scenario, design).

    ``dataset_size``: cases per simulated dataset, the family of the dataset-wide BH step (1 = per case).
    """
    unknown = [s for s in scenarios if s not in SCENARIOS and s not in MIXTURES]
    if unknown:
        from deltap.errors import DeltapError

        raise DeltapError(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join([*SCENARIOS, *MIXTURES])}")
    out: list[DesignResult] = []
    for name in scenarios:
        if name in MIXTURES:
            out += [run_mixture(MIXTURES[name], d, replications, seed, config, dataset_size) for d in designs]
        else:
            out += run_scenario(SCENARIOS[name], designs, replications, seed, config, dataset_size)
    return out
