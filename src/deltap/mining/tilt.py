"""The tilt: how much more the on-topic documents that are not gold move the outcome than random placebos do.

The placebo null (:mod:`deltap.mining.empirical_null`) assumes a retrieved document that does not help behaves like
a random placebo. A model reading docstrings on the question's topic may react to them more than to random text;
then the null is too narrow for exactly the candidates it judges, and labels can be false although the placebo check
passes (issue 28; the simulation's ``logprob_tilted`` scenario, topic scale 1.75: FDR 0.09-0.17 at q = 0.05).

The measure, per source (``gold``, ``retrieved`` = retrieved and not gold, ``placebo``), from every mined
candidate's regression estimate ``c`` and its standard error ``s``:

    spread = sqrt(max(mean((c − centre)²) − mean(s²), 0))

the root of the *excess* variance of the estimated effects (their spread around the placebos' median, minus what
sampling noise alone gives), in the outcome's unit. The **tilt** is ``spread(retrieved) / spread(placebo)``: 1 when
retrieved non-gold documents move the outcome like random text, the simulation's topic scale when they move it that
many times more. It counts relevant non-gold documents too (a run cannot tell them apart from on-topic nulls), so it
overstates the nulls' tilt when the retriever finds helpful documents the gold misses. The interval is a
percentile bootstrap over candidates (each source resampled on its own, the centre recomputed), at ``level``; with
heavy-tailed text effects and tens of placebos it is too narrow (on the simulation without tilt its lower bound
exceeds 1 in about a quarter of 10-case datasets), so the decision rests on a **permutation test** instead: the
share of relabellings of the pooled retrieved and placebo estimates with a tilt at least the observed one (valid
when, without tilt, the two groups' estimates are exchangeable: the same text effects and similar trial counts).

:func:`measure_tilt` marks the tilt ``large`` when the permutation test rejects "no tilt" at :data:`ALPHA` and the
estimate is at least :data:`WARN_TILT` = 1.35: on the simulation (``logprob_tilted`` with topic scale 1, 1.25, 1.5,
1.75; 400 replications, 10-case datasets, adaptive) the FDR at q = 0.05 is 0.024, 0.033, 0.077, 0.111 — it
leaves q between 1.25 and 1.5 (see ``benchmarks/README.md``, issue 28).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ALPHA",
    "AUTO_ALPHA",
    "AUTO_TILT",
    "auto_null",
    "LEVEL",
    "SOURCE_GROUPS",
    "WARN_TILT",
    "SourceSpread",
    "Tilt",
    "TiltWarning",
    "candidate_source",
    "measure_tilt",
    "run_tilt",
]

#: the sources the tilt compares, in report order
SOURCE_GROUPS = ("gold", "retrieved", "placebo")
#: level of the bootstrap intervals
LEVEL = 0.90
#: a tilt at least this large, with its interval above 1, is reported as large enough to matter for the FDR
WARN_TILT = 1.35
#: level of the one-sided permutation test of "no tilt" behind ``large``
ALPHA = 0.05
#: bootstrap resamples (and permutations)
N_BOOT = 2000
#: ``--null auto`` labels with the on-topic null when the permutation test of "no tilt" gives p below this ...
AUTO_ALPHA = 0.05
#: ... or when the tilt estimate is at least this (see :func:`auto_null`)
AUTO_TILT = 1.35


class TiltWarning(UserWarning):
    """Retrieved non-gold documents move the outcome clearly more than random placebos: the placebo null is too
    narrow for them (see :func:`measure_tilt`)."""


@dataclass(frozen=True)
class SourceSpread:
    """The excess spread of one source's estimated effects (see the module docstring), with its interval."""

    source: str
    n: int
    spread: float
    low: float
    high: float
    mean_abs: float


@dataclass(frozen=True)
class Tilt:
    """``spread(retrieved) / spread(placebo)`` with its bootstrap interval, and the spread of every source.

    ``ratio`` is ``inf`` when the placebos' excess spread is 0 and the retrieved documents' is not, ``nan`` when
    there are too few candidates (fewer than 2 of either group) to say.
    """

    ratio: float
    low: float
    high: float
    level: float
    centre: float
    unit: str
    spreads: dict[str, SourceSpread]
    large: bool
    message: str
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (non-finite numbers as ``None``): what ``run.json`` stores under ``tilt``."""
        out = asdict(self)
        for k in ("ratio", "low", "high", "centre", "p_value"):
            out[k] = _finite(out[k])
        for s in out["spreads"].values():
            for k in ("spread", "low", "high", "mean_abs"):
                s[k] = _finite(s[k])
        return out


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def candidate_source(sources: Iterable[str]) -> str | None:
    """The tilt's group of a candidate: ``placebo``, ``gold`` (gold, retrieved or not), ``retrieved`` (not gold)."""
    s = set(sources)
    if "placebo" in s and not (s - {"placebo"}):
        return "placebo"
    if "gold" in s:
        return "gold"
    return "retrieved" if "retrieved" in s else None


def _spread(coef: NDArray[np.float64], var: NDArray[np.float64], centre: NDArray[np.float64]) -> NDArray[np.float64]:
    """Excess spread along the last axis; ``coef``/``var`` shape ``(..., n)``, ``centre`` shape ``(...)``."""
    excess = np.mean((coef - centre[..., None]) ** 2, axis=-1) - np.mean(var, axis=-1)
    return np.sqrt(np.maximum(excess, 0.0))


def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num > 0, np.inf, 1.0))


def measure_tilt(
    estimates: Mapping[str, tuple[ArrayLike, ArrayLike]],
    *,
    level: float = LEVEL,
    n_boot: int = N_BOOT,
    seed: int = 0,
    unit: str = "nats",
    warn_at: float = WARN_TILT,
    alpha: float = ALPHA,
) -> Tilt:
    """The tilt of a run from its candidates' estimates by source.

    Args:
        estimates: ``{source: (coef, se)}`` for sources among :data:`SOURCE_GROUPS` (missing ones count as empty).
        level: Level of the percentile bootstrap intervals.
        n_boot: Bootstrap resamples (over candidates, each source on its own).
        seed: Seed of the bootstrap.
        unit: The outcome's unit, for the message (``nats`` for logprob, ``probability`` for pass).
        warn_at: The smallest tilt reported as ``large``.
        alpha: Level of the permutation test that must reject "no tilt" for the tilt to be ``large``.

    Returns:
        The :class:`Tilt`.

    Raises:
        ValueError: an unknown source, ``coef`` and ``se`` of different lengths, or a level outside (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"tilt: level must be in (0, 1), got {level}")
    unknown = set(estimates) - set(SOURCE_GROUPS)
    if unknown:
        raise ValueError(f"tilt: unknown source(s) {sorted(unknown)}; expected {', '.join(SOURCE_GROUPS)}")
    data: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    for src in SOURCE_GROUPS:
        c, s = estimates.get(src, ((), ()))
        coef, se = np.asarray(c, dtype=float).ravel(), np.asarray(s, dtype=float).ravel()
        if coef.shape != se.shape:
            raise ValueError(f"tilt: {src}: {coef.size} estimates but {se.size} standard errors")
        keep = np.isfinite(coef) & np.isfinite(se)
        data[src] = (coef[keep], se[keep] ** 2)
    rng = np.random.default_rng([seed, 28])
    pc = data["placebo"][0]
    centre = float(np.median(pc)) if pc.size else 0.0
    a = (1.0 - level) / 2.0
    # the bootstrap, in chunks (memory stays bounded on large runs): one resample of the placebos per replicate,
    # shared by every source's spread (the centre and the ratio's denominator); each other source resampled on its own
    parts: dict[str, list[NDArray[np.float64]]] = {src: [] for src in SOURCE_GROUPS if data[src][0].size}
    for k in _chunks(n_boot, sum(data[src][0].size for src in SOURCE_GROUPS)):
        b_centre = np.zeros(k)
        if pc.size:
            bi = rng.integers(0, pc.size, (k, pc.size))
            b_centre = np.median(pc[bi], axis=1)
            parts["placebo"].append(_spread(pc[bi], data["placebo"][1][bi], b_centre))
        for src in parts:
            if src != "placebo":
                coef, var = data[src]
                idx = rng.integers(0, coef.size, (k, coef.size))
                parts[src].append(_spread(coef[idx], var[idx], b_centre))
    boots = {src: np.concatenate(v) for src, v in parts.items()}
    spreads: dict[str, SourceSpread] = {}
    for src in SOURCE_GROUPS:
        coef, var = data[src]
        if coef.size == 0:
            spreads[src] = SourceSpread(src, 0, float("nan"), float("nan"), float("nan"), float("nan"))
            continue
        point = float(_spread(coef, var, np.asarray(centre)))
        lo, hi = np.quantile(boots[src], [a, 1 - a], method="inverted_cdf")
        mean_abs = float(np.mean(np.abs(coef - centre)))
        spreads[src] = SourceSpread(src, int(coef.size), point, float(lo), float(hi), mean_abs)
    r, p = spreads["retrieved"], spreads["placebo"]
    if r.n < 2 or p.n < 2:
        msg = f"tilt: not measured ({r.n} retrieved non-gold and {p.n} placebo estimates; 2 of each needed)"
        return Tilt(float("nan"), float("nan"), float("nan"), level, centre, unit, spreads, False, msg, float("nan"))
    ratio = float(_ratio(np.asarray(r.spread), np.asarray(p.spread)))
    b = _ratio(boots["retrieved"], boots["placebo"])
    lo, hi = (float(x) for x in np.quantile(b, [a, 1 - a], method="inverted_cdf"))
    p_value = _permutation_p(data["retrieved"], data["placebo"], ratio, n_boot, rng)
    large = bool(p_value < alpha and ratio >= warn_at)
    how = (
        f"move the outcome {ratio:.2f}x as much as random placebos"
        if np.isfinite(ratio)
        else "move the outcome beyond sampling noise, random placebos do not"
    )
    msg = (
        f"tilt {_ratio_str(ratio)} (bootstrap {level:.0%} interval {_interval_str(lo, hi)}, permutation p = "
        f"{p_value:.3g}): retrieved non-gold documents {how} (excess spread {r.spread:.3g} vs {p.spread:.3g} {unit}; "
        f"{r.n} and {p.n} estimates)"
    )
    if large:
        msg += (
            f" — on-topic text moves this solver more than random text: the placebo null is too narrow for the retrieved "
            f"candidates and their labels may be false beyond q (the simulation's FDR exceeds q from a tilt of about "
            f"{warn_at:g}); use --null topic (each candidate must also beat the run's other on-topic documents; with "
            f"--gold-weight-learned it keeps most gold labels: benchmarks/README.md; the default --null auto does "
            f"both when its own tilt test fires), --placebo-kind similar, or a "
            f"--min-effect above {_finite_str(r.high)} {unit}"
        )
    return Tilt(ratio, lo, hi, level, centre, unit, spreads, large, msg, p_value)


def _permutation_p(
    retrieved: tuple[NDArray[np.float64], NDArray[np.float64]],
    placebo: tuple[NDArray[np.float64], NDArray[np.float64]],
    observed: float,
    n_perm: int,
    rng: np.random.Generator,
) -> float:
    """One-sided permutation p-value of the tilt: the share of relabellings of the pooled retrieved and placebo
    estimates whose ratio is at least ``observed`` (exact when the two groups are exchangeable, i.e. no tilt)."""
    coef = np.concatenate([retrieved[0], placebo[0]])
    var = np.concatenate([retrieved[1], placebo[1]])
    n_r = retrieved[0].size
    at_least = 0
    for k in _chunks(n_perm, coef.size):
        order = np.argsort(rng.random((k, coef.size)), axis=1)
        c, v = coef[order], var[order]
        centre = np.median(c[:, n_r:], axis=1)
        perm = _ratio(_spread(c[:, :n_r], v[:, :n_r], centre), _spread(c[:, n_r:], v[:, n_r:], centre))
        at_least += int(np.sum(perm >= observed))
    return float((1 + at_least) / (1 + n_perm))


def _chunks(total: int, width: int, cells: int = 1_000_000) -> list[int]:
    """Replicate counts per chunk so that a chunk's ``(replicates, width)`` arrays hold at most ``cells`` numbers."""
    step = max(1, cells // max(width, 1))
    return [min(step, total - i) for i in range(0, total, step)]


def _ratio_str(x: float) -> str:
    """A tilt a reader can check: a number, or why there is none (the placebos' excess spread is 0: any spread of
    the retrieved documents is infinitely many times it)."""
    if np.isfinite(x):
        return f"{x:.2f}"
    return "unbounded (the placebos show no spread beyond sampling noise)" if x > 0 else "not defined"


def _interval_str(lo: float, hi: float) -> str:
    """``1.10-2.05``; ``4.63 or more (no upper bound)`` when the upper end is infinite (resamples whose placebos show
    no excess spread)."""
    if np.isfinite(lo) and np.isfinite(hi):
        return f"{lo:.2f}-{hi:.2f}"
    if np.isfinite(lo):
        return f"{lo:.2f} or more (no upper bound: some resamples' placebos show no spread beyond noise)"
    return "not defined"


def _finite_str(x: float) -> str:
    return f"{x:.2f}" if np.isfinite(x) else "the retrieved spread"


def run_tilt(rows: Iterable[tuple[Sequence[str], Mapping[str, Any]]], unit: str, seed: int = 0) -> Tilt:
    """The tilt from a run's candidate rows: ``(sources, row)`` pairs, where ``row`` carries ``regression_effect``
    (``coef``, ``se``) as :func:`deltap.mining.labels.dataset_verdicts` and ``retrieval_dataset.yaml`` store it.
    Rows without an estimate (undecided before any trial) are left out."""
    groups: dict[str, tuple[list[float], list[float]]] = {s: ([], []) for s in SOURCE_GROUPS}
    for sources, row in rows:
        src = candidate_source(sources)
        eff = row.get("regression_effect") or {}
        if src is None or eff.get("coef") is None or eff.get("se") is None:
            continue
        groups[src][0].append(float(eff["coef"]))
        groups[src][1].append(float(eff["se"]))
    return measure_tilt({s: (np.array(c), np.array(e)) for s, (c, e) in groups.items()}, seed=seed, unit=unit)


def auto_null(tilt: Tilt) -> tuple[bool, str]:
    """The rule of ``--null auto`` (issue 35 item 6): ``(tilted, why)``; a tilted run is labelled with the on-topic null
    and the learned gold weight (:func:`deltap.mining.labels.choose_null`).

    Tilted when the permutation test rejects "no tilt" at :data:`AUTO_ALPHA` or the estimate is at least
    :data:`AUTO_TILT`. A tilt that cannot be measured (fewer than 2 retrieved non-gold or placebo estimates) is not
    tilted. The rule reads module constants at call time (the benchmark varies them).
    """
    ratio, p = tilt.ratio, tilt.p_value
    if not (np.isfinite(p) or np.isinf(ratio)):
        return False, f"tilt not measured: {tilt.message}"
    by_test = bool(np.isfinite(p) and p < AUTO_ALPHA)
    by_size = bool(ratio >= AUTO_TILT)
    shown = f"tilt {ratio:.2f}, permutation p = {p:.3g}"
    if by_test or by_size:
        why = " and ".join(
            x
            for x, on in (
                (f"p < {AUTO_ALPHA:g}", by_test),
                (f"the tilt is at least {AUTO_TILT:g}", by_size),
            )
            if on
        )
        return (
            True,
            f"{shown}: {why}, so the on-topic null and the learned gold weight (--null topic --gold-weight-learned)",
        )
    return False, f"{shown}: below {AUTO_TILT:g} and p >= {AUTO_ALPHA:g}, so the placebo null"
