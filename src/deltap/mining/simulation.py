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

from deltap.mining.adaptive import StoppingRule, look_schedule
from deltap.mining.design import DESIGNS, hadamard_blocks, paley_order
from deltap.mining.engine import MiningConfig
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
        description: One line for the table.
    """

    name: str
    m: int = 20
    effects: dict[int, float] = field(default_factory=dict)
    interactions: dict[tuple[int, int], float] = field(default_factory=dict)
    base: float = 0.1
    outcome: Outcome = "pass"
    noise: float = 1.0
    description: str = ""

    def truth(self) -> NDArray[np.int8]:
        """+1 relevant, −1 harmful, 0 null, per candidate (interaction members count as relevant)."""
        t = np.zeros(self.m, dtype=np.int8)
        for i, e in self.effects.items():
            t[i] = 1 if e > 0 else -1 if e < 0 else 0
        for (i, j), e in self.interactions.items():
            if e > 0:
                t[i] = t[j] = 1
        return t

    def mean(self, X: NDArray[Any]) -> NDArray[np.float64]:
        """Success probability (pass) or mean outcome (logprob) for inclusion matrices ``(..., m)``."""
        X = np.asarray(X, dtype=float)
        eff = np.zeros(self.m)
        for i, e in self.effects.items():
            eff[i] = e
        mu = self.base + X @ eff
        for (i, j), e in self.interactions.items():
            mu = mu + e * X[..., i] * X[..., j]
        if self.outcome == "pass":
            mu = np.clip(mu, 0.0, 1.0)
        return np.asarray(mu, dtype=float)

    def draw(self, X: NDArray[Any], rng: np.random.Generator) -> NDArray[np.float64]:
        """Outcomes for inclusion matrices ``(..., m)``."""
        mu = self.mean(X)
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
    rule: StoppingRule = field(default_factory=StoppingRule)


def _labels(coef: NDArray[Any], relevant: NDArray[Any], harmful: NDArray[Any], min_effect: float) -> NDArray[np.int8]:
    lab = np.zeros(coef.shape, dtype=np.int8)
    lab[relevant & (coef >= min_effect)] = 1
    lab[harmful & (coef <= -min_effect)] = -1
    return lab


@dataclass
class _Tested:
    """One design's test results on the replications of one scenario, before the dataset-wide BH step."""

    scenario: Scenario
    p: NDArray[np.float64]  # (2, R, m): one-sided p-values, relevant side (β > 0) and harmful side (β < 0)
    coef: NDArray[np.float64]  # (R, m): effect estimates
    calls: NDArray[Any]  # (R,)
    skipped: NDArray[Any]  # (R,)


def _datasets(n_rows: int, dataset_size: int) -> list[NDArray[np.int64]]:
    """Row indices of each dataset: consecutive blocks of ``dataset_size`` rows (the last one may be smaller)."""
    size = max(1, int(dataset_size))
    return [np.arange(a, min(a + size, n_rows)) for a in range(0, n_rows, size)]


def _bh_labels(tested: Sequence[_Tested], q: float, min_effect: float, dataset_size: int, seed: int) -> list[NDArray[np.int8]]:
    """Labels per scenario after Benjamini–Hochberg over every candidate of each dataset, one family per direction.

    With several scenarios (a mixture) the rows are shuffled together (seeded) before being cut into datasets, so
    each dataset mixes the components in proportion.
    """
    rows = [(t, i) for t in tested for i in range(t.p.shape[1])]
    order = np.arange(len(rows))
    if len(tested) > 1:
        order = np.random.default_rng([seed, 7]).permutation(len(rows))
    rejected = {id(t): np.zeros((2, *t.coef.shape), dtype=bool) for t in tested}
    for block in _datasets(len(rows), dataset_size):
        members = [rows[j] for j in order[block].tolist()]
        for side in (0, 1):
            flat = np.concatenate([t.p[side, i] for t, i in members])
            rej, _ = benjamini_hochberg(flat, q)
            pos = 0
            for t, i in members:
                m = t.coef.shape[1]
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


def _draw_design(sc: Scenario, R: int, N: int, rng: np.random.Generator, kind: str = "orthogonal") -> tuple[NDArray[Any], NDArray[Any]]:
    """``R`` inclusion matrices of ``N`` trials (the engine's design ``kind``, π = 0.5) and their outcomes."""
    if kind == "orthogonal":
        b = paley_order(sc.m)
        X = hadamard_blocks(rng, sc.m, (R, -(-N // b))).reshape(R, -1, sc.m)[:, :N]
    else:
        X = rng.random((R, N, sc.m)) < 0.5
    return X, sc.draw(X, rng)


def _parse_design(design: str, config: AdaptiveConfig | None) -> tuple[str, AdaptiveConfig]:
    cfg = config or AdaptiveConfig()
    if "@" in design:  # "fixed:128@0.03": another FDR level
        design, q_text = design.split("@", 1)
        cfg = replace(cfg, q=float(q_text))
    if "/" in design:  # "fixed:128/bernoulli": another inclusion design
        design, kind = design.split("/", 1)
        if kind not in DESIGNS:
            raise ValueError(f"unknown inclusion design {kind!r}; expected one of {', '.join(DESIGNS)}")
        cfg = replace(cfg, design=kind)
    if design.startswith("adaptive:"):  # "adaptive:192": another per-case budget
        cfg = replace(cfg, budget=int(design.split(":", 1)[1]))
        design = "adaptive"
    if not (design.startswith(("naive:", "fixed:")) or design == "adaptive"):
        raise ValueError(
            f"unknown design {design!r}; expected naive:N, fixed:N, adaptive or adaptive:BUDGET, optionally followed by "
            "/bernoulli or /orthogonal (the inclusion design) and @q (the FDR level)"
        )
    return design, cfg


def _test(sc: Scenario, design: str, replications: int, seed: int, cfg: AdaptiveConfig) -> _Tested | NDArray[np.int8]:
    """Run one (parsed) design: the naive design's labels directly, or the p-values of the others."""
    import zlib

    from scipy import special

    rng = np.random.default_rng([seed, zlib.crc32(sc.name.encode()), zlib.crc32(design.encode())])
    R = replications
    binary = sc.outcome == "pass"
    if design.startswith("naive:"):
        N = int(design.split(":")[1])
        X, y = _draw_design(sc, R, N, rng, "bernoulli")  # the seed's design: independent coin flips
        dm = diff_in_means(X, y, binary=binary)
        thr = 0.1 if binary else 0.5
        return np.where(dm.delta > thr, 1, 0).astype(np.int8)  # the seed labels "relevant" only
    if design.startswith("fixed:"):
        N = int(design.split(":")[1])
        X, y = _draw_design(sc, R, N, rng, cfg.design)
        z, reg = z_statistics(X, y)
        p = np.stack([0.5 * special.erfc(side * z / np.sqrt(2.0)) for side in (1, -1)])
        return _Tested(sc, p, reg.coef, np.full(R, N), np.zeros(R))
    return _adaptive(sc, R, rng, cfg)


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
        labels = _bh_labels([out], cfg.q, cfg.min_effect if sc.outcome == "pass" else 0.0, dataset_size, seed)[0]
        parts = [(sc, labels, out.calls, out.skipped)]
    else:
        parts = [(sc, out, np.full(replications, int(design.split(":")[1])), np.zeros(replications))]
    return _result(sc.name, label, parts, dataset_size, time.perf_counter() - t0)


def _adaptive(sc: Scenario, R: int, rng: np.random.Generator, cfg: AdaptiveConfig) -> _Tested:
    binary = sc.outcome == "pass"
    m = sc.m
    schedule = look_schedule(cfg.budget, cfg.first_look, cfg.batch, m)
    rule = replace(cfg.rule, q=cfg.q)
    if not binary and cfg.rule.prior_scale == StoppingRule().prior_scale:
        rule = replace(rule, prior_scale=1.5, margin=0.5)  # effects in nats (the engine's logprob defaults)
    # Preflight: ``preflight`` trials with no document and with every candidate.
    calls = np.zeros(R)
    skipped = np.zeros(R, dtype=bool)
    if cfg.preflight and binary:
        n0, n1 = cfg.preflight, max(cfg.preflight_confirm, cfg.preflight)
        none = sc.draw(np.zeros((R, n1, m)), rng)
        full = sc.draw(np.ones((R, n1, m)), rng)

        def extreme(n: int) -> NDArray[np.bool_]:
            a, b = none[:, :n].sum(1), full[:, :n].sum(1)
            return ((a == n) & (b == n)) | ((a == 0) & (b == 0))

        first = extreme(n0)
        skipped = first & extreme(n1)
        calls += np.where(first, 2 * n1, 2 * n0)
    X, y = _draw_design(sc, R, schedule.budget, rng, cfg.design)
    K = len(schedule.looks)
    z_path = np.zeros((R, m, K))
    stop_look = np.full(R, K - 1)
    running = ~skipped
    final_coef = np.zeros((R, m))
    for k, n in enumerate(schedule.looks):
        idx = np.flatnonzero(running)
        if idx.size == 0:
            break
        z, reg = z_statistics(X[idx, :n], y[idx, :n])
        z_path[idx, :, k] = z
        final_coef[idx] = reg.coef
        if k == K - 1:
            stop_look[idx] = k
            break
        done = rule.decided(schedule, z_path[idx, :, : k + 1], reg.coef, reg.se, df=n - m - 1).all(axis=-1)
        stop_look[idx[done]] = k
        running[idx[done]] = False
    looks_arr = np.asarray(schedule.looks)
    calls = calls + np.where(skipped, 0, looks_arr[stop_look])
    # Repeated p-values through each replication's stopping look (looks after the stop are masked with -inf),
    # one per direction; skipped cases carry p = 1. BH over the dataset happens in :func:`_bh_labels`.
    mask = np.arange(K)[None, None, :] <= stop_look[:, None, None]
    p = np.stack([schedule.repeated_p_value(np.where(mask, side * z_path, -np.inf), 1) for side in (1, -1)])
    p = np.where(skipped[None, :, None], 1.0, p)
    return _Tested(sc, p, final_coef, calls, skipped.astype(float))


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
    n_rows = sum(len(out) if not isinstance(out, _Tested) else out.p.shape[1] for _, out in runs)
    order = np.random.default_rng([seed, 7]).permutation(n_rows)
    parts: list[tuple[Scenario, NDArray[np.int8], NDArray[Any], NDArray[Any]]] = []
    if tested:
        labels = _bh_labels(tested, cfg.q, cfg.min_effect, dataset_size, seed)
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
