"""The per-case procedure of ``deltap mine``: preflight, design trials look by look, the stopping rule, coalitions.

One implementation, two sources of trials. :func:`deltap.mining.engine.mine` runs it against a real solver through
the trial log (:class:`~deltap.mining.runner.TrialRunner`); the simulation benchmark (:mod:`deltap.mining.simulation`) runs it against a
planted truth (:class:`deltap.solvers.simulated.SimulatedSolver`'s own draws). Both count calls the same way, so
the benchmark measures the product: preflight, design trials and coalition checks.

A :class:`TrialSource` takes the inclusion vectors of a batch of trials of one case and returns their outcomes
(``nan`` for an infrastructure error). It says whether its solver is **deterministic** (a greedy local model: the
same prompt always gets the same answer); the procedure then never asks a prompt twice — the preflight runs one
trial per distinct context, and the source answers a design trial whose context it has seen from its cache without
a call (the trial still enters the regression: the design is what it is).

**Preflight.** ``preflight`` trials with no document and ``preflight`` with every candidate (one each for a
deterministic solver). When both agree on an extreme (all pass or all fail; a near-certain log-prob), the first
``preflight_confirm`` design trials — random half subsets, which count towards the budget when the case goes on —
must agree too before the case is skipped as ``saturated``/``unsolvable``: distractors can sink the every-candidate
prompt while a document that helps alone is in half of the subsets.

**Coalitions** (:func:`find_coalitions`): the candidates the dataset-wide test labelled relevant (at most
``MAX_COALITION_DOCS`` by effect, plus partners of significant interactions) are refitted with all their pairwise
interactions. Every subset whose predicted outcome alone comes within twice the tolerance (the minimum effect) of
the prediction for all of them is a candidate; the inclusion-minimal ones are checked by trials with exactly that
context (``verify_trials``; one for a deterministic solver — at most ``verify_trials`` calls per case then, and
two coalitions' worth for a stochastic one). A coalition is kept when

* its trials reach the target — the full prediction minus the tolerance and minus 1.96 standard errors of that
  prediction (:func:`~deltap.mining.coalitions.coalition_verified`) — and beat the no-document baseline, and
* it is **minimal**: no sub-coalition that drops one member reaches the full prediction minus the tolerance —
  checked by one trial each for a deterministic solver (a sub-coalition that does win is checked in its place), by
  the regression's prediction for a stochastic one (eight more trials per member would double the cost of a case).

Every verified minimal coalition is kept, so OR-structure ("either document suffices") yields one coalition per
document.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from deltap.mining.adaptive import StoppingRule
from deltap.mining.design import InclusionDesign
from deltap.mining.estimate import z_statistics
from deltap.outcomes import outcome_kind

if TYPE_CHECKING:
    from deltap.mining.config import MiningConfig
    from deltap.mining.verdicts import VerdictPolicy

__all__ = [
    "CaseRun",
    "TrialSource",
    "TrialsExhausted",
    "call_ceiling",
    "case_weights",
    "find_coalitions",
    "preflight_status",
    "run_case",
]

#: most relevant documents a coalition search considers (2**6 subsets)
MAX_COALITION_DOCS = 6
#: most candidate coalitions checked by trials per case
MAX_COALITIONS = 4


class TrialsExhausted(Exception):
    """Raised by a :class:`TrialSource` that can run no more trials of a case without a solver call (the replay of a
    trial log that stopped, :mod:`deltap.mining.relabel`): the case ends ``incomplete`` at its last complete look,
    which the looks' p-values allow (an interruption does not depend on the outcomes)."""


class TrialSource(Protocol):
    """Runs trials of one case. ``calls``/``errors`` count solver calls made and failed ones (cached answers to a
    repeated prompt of a deterministic solver are not calls)."""

    deterministic: bool
    calls: int
    errors: int

    def run(self, kind: str, indices: Sequence[int], X: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Outcomes of trials ``(kind, i)`` with inclusion rows ``X`` (``nan`` = error)."""
        ...


@dataclass
class CaseRun:
    """What the per-case procedure learnt (before the dataset-wide tests)."""

    status: str
    preflight: dict[str, list[float]] = field(default_factory=dict)
    X: NDArray[np.bool_] | None = None
    y: NDArray[np.float64] | None = None
    z_path: NDArray[np.float64] | None = None
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], int]] = field(default_factory=list)
    p_rep: NDArray[np.float64] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    preflight_calls: int = 0
    design_calls: int = 0


def case_weights(candidates: Sequence[Any], gold_weight: float) -> NDArray[np.float64] | None:
    """Prior weights of one case's candidates (gold ``gold_weight``, others 1, mean 1), or ``None`` when all equal.

    The final step rescales over the whole dataset (:func:`deltap.mining.labels.prior_weights`); within a case this
    is the same up to the dataset's share of gold candidates.
    """
    if gold_weight == 1.0 or not candidates:
        return None
    raw = np.array([gold_weight if "gold" in c.sources else 1.0 for c in candidates], dtype=float)
    return np.asarray(raw * (raw.size / raw.sum()), dtype=float)


def call_ceiling(cfg: MiningConfig, deterministic: bool = False) -> tuple[int, int, int]:
    """The most solver calls one case can make, by phase: ``(preflight, design, coalition)``.

    The one source of the ceiling every display shows (:func:`deltap.mining.progress.planned_calls`), read off the
    rules of this module: the preflight asks ``preflight`` times with no document and with every candidate (once
    each for a deterministic solver); the confirming subsets are design trials and count towards ``budget``; the
    coalition checks stop at ``verify_trials`` calls (deterministic) or twice that (stochastic).
    """
    pre = 2 * (1 if deterministic else int(cfg.preflight)) if int(cfg.preflight) > 0 else 0
    coalition = 0
    if cfg.coalitions and int(cfg.verify_trials) > 0:
        coalition = int(cfg.verify_trials) if deterministic else 2 * int(cfg.verify_trials)
    return pre, int(cfg.budget), coalition


def preflight_status(pre: dict[str, list[float]], outcome: str) -> str | None:
    """``saturated`` / ``unsolvable`` when every preflight group agrees on an extreme, else ``None``."""
    groups = [v for k in ("preflight_none", "preflight_all", "preflight_subsets") if (v := pre.get(k)) is not None]
    if len(groups) < 2 or any(not g for g in groups):
        return None
    if outcome_kind(outcome).binary:
        if all(min(g) == 1.0 for g in groups):
            return "saturated"
        if all(max(g) == 0.0 for g in groups):
            return "unsolvable"
        return None
    if all(float(np.mean(g)) >= math.log(0.95) for g in groups):
        return "saturated"
    return None


def _finite(v: NDArray[np.float64]) -> list[float]:
    return [float(x) for x in v if np.isfinite(x)]


def run_case(
    source: TrialSource,
    design: InclusionDesign,
    cfg: MiningConfig,
    rule: StoppingRule,
    report: Callable[[str, int, int], None] | None = None,
    weights: NDArray[np.float64] | None = None,
) -> CaseRun:
    """Preflight, then design trials look by look until every candidate is decided or the budget is spent.

    Args:
        source: Where trials run (the solver through the trial log, or a simulated truth).
        design: The case's inclusion design (a pure function of run seed, case id and trial index).
        cfg: The mining configuration.
        rule: The stopping rule.
        report: ``(status, trials, open candidates)`` after every batch (progress bars).
        weights: Prior weights of the candidates (:func:`case_weights`), used by the stopping rule as by the final
            weighted BH step.
    """
    m = design.m
    schedule = cfg.schedule(m)
    say = report or (lambda status, trials, open_: None)
    out = CaseRun("skipped")
    Xv: list[NDArray[np.bool_]] = []  # valid design trials, in index order
    yv: list[float] = []
    next_index = 0

    def design_batch(n: int) -> NDArray[np.float64]:
        nonlocal next_index
        idx = list(range(next_index, next_index + n))
        X = np.array([design.vector(i) for i in idx], dtype=bool).reshape(n, m)
        before = source.calls
        y = source.run("design", idx, X)
        out.design_calls += source.calls - before
        next_index += n
        ok = np.isfinite(y)
        Xv.extend(X[ok])
        yv.extend(y[ok].tolist())
        return y

    try:
        early = _preflight(source, cfg, m, out, say, design_batch, schedule.budget)
    except TrialsExhausted:
        out.status = "incomplete"
        out.info["reason"] = "the run stopped during this case's preflight: no estimate"
        say(out.status, 0, 0)
        return out
    if early is not None:
        return early
    K = len(schedule.looks)
    z_path = np.zeros((m, K))
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], int]] = []
    stop = K - 1
    final = "budget_exhausted"
    for k, L in enumerate(schedule.looks):
        try:
            while len(yv) < L:
                design_batch(min(L - len(yv), max(cfg.batch, 1)))
                say("running", len(yv), m)
                if getattr(source, "overflows", 0):
                    return _overflow(out, say)
                n_err = next_index - len(yv)
                if n_err > 5 and n_err > cfg.max_error_rate * next_index:
                    final = "errors"
                    break
        except TrialsExhausted:
            final = "incomplete"
            out.info["reason"] = (
                f"the run stopped before this case's look at {L} trials: labelled from its last complete look"
                + (f" ({schedule.looks[k - 1]} trials)" if k > 0 else " (none: no estimate)")
            )
        if final in ("errors", "incomplete"):
            stop = k - 1  # the last completed look (-1: none)
            break
        X, y = np.asarray(Xv[:L], dtype=bool).reshape(L, m), np.asarray(yv[:L], dtype=float)
        z, reg = z_statistics(X, y)
        z_path[:, k] = z
        fits.append((np.asarray(reg.coef, dtype=float), np.asarray(reg.se, dtype=float), L - m - 1))
        if k == K - 1:
            break
        decided = rule.decided(
            schedule, z_path[None, :, : k + 1], reg.coef[None], reg.se[None], df=L - m - 1, weights=weights
        )[0]
        say("running", L, int((~decided).sum()))
        if decided.all():
            stop = k
            final = "mined"
            break
    # Estimates use exactly the trials of the last completed look, so they match the repeated p-values.
    n_used = schedule.looks[stop] if stop >= 0 else 0
    out.X = np.asarray(Xv[:n_used], dtype=bool).reshape(n_used, m)
    out.y = np.asarray(yv[:n_used], dtype=float)
    out.z_path = z_path[:, : max(stop, 0) + 1]
    out.fits = fits[: stop + 1]
    out.p_rep = (
        np.stack([schedule.repeated_p_value(out.z_path, 1), schedule.repeated_p_value(out.z_path, -1)])
        if n_used
        else np.ones((2, m))
    )
    out.status = final
    out.info.update(
        {
            "looks": list(schedule.looks[: max(stop, 0) + 1]) if stop >= 0 else [],
            "trials": n_used,
            "design_errors": next_index - len(yv),
        }
    )
    say(final, n_used, 0)
    return out


def _preflight(
    source: TrialSource,
    cfg: MiningConfig,
    m: int,
    out: CaseRun,
    say: Callable[[str, int, int], None],
    design_batch: Callable[[int], NDArray[np.float64]],
    budget: int,
) -> CaseRun | None:
    """The preflight of :func:`run_case`: ``out`` when the case ends there (saturated, unsolvable, an overflow),
    else ``None`` (the case goes on to its design trials)."""
    if cfg.preflight <= 0:
        return None
    n_pre = 1 if source.deterministic else cfg.preflight
    before = source.calls
    for kind, fill in (("preflight_none", False), ("preflight_all", True)):
        vals = source.run(kind, range(n_pre), np.full((n_pre, m), fill, dtype=bool))
        out.preflight[kind] = _finite(vals)
    out.preflight_calls = source.calls - before
    if getattr(source, "overflows", 0):
        return _overflow(out, say)
    if preflight_status(out.preflight, cfg.outcome) is not None and cfg.preflight_confirm > 0:
        y = design_batch(min(cfg.preflight_confirm, budget))
        out.preflight["preflight_subsets"] = _finite(y)
    status = preflight_status(out.preflight, cfg.outcome)
    if status is None or cfg.force:
        return None
    pre = {k: v for k, v in out.preflight.items()}
    out.status = status
    out.info["reason"] = (
        f"preflight: {status} (no-document {pre.get('preflight_none')}, all-candidates {pre.get('preflight_all')}"
        + (f", random subsets {pre['preflight_subsets']}" if "preflight_subsets" in pre else "")
        + ")"
    )
    say(status, 0, 0)
    return out


@dataclass(frozen=True)
class _Fit:
    """OLS of the outcome on every main effect and the pairwise interactions among the coalition members."""

    pairs: tuple[tuple[int, int], ...]
    beta: NDArray[np.float64]  # intercept, m main effects, one per pair
    cov: NDArray[np.float64]  # classical covariance of beta
    binary: bool

    def _row(self, subset: Sequence[int]) -> NDArray[np.float64]:
        m = len(self.beta) - 1 - len(self.pairs)
        s = set(subset)
        v = np.zeros(len(self.beta))
        v[0] = 1.0
        for i in s:
            v[1 + i] = 1.0
        for a, (i, j) in enumerate(self.pairs):
            v[1 + m + a] = float(i in s and j in s)
        return v

    def predict(self, subset: Sequence[int]) -> float:
        """Predicted outcome with exactly ``subset`` in context (clipped to [0, 1] for pass)."""
        val = float(self._row(subset) @ self.beta)
        return min(1.0, max(0.0, val)) if self.binary else val

    def se(self, subset: Sequence[int]) -> float:
        v = self._row(subset)
        return float(np.sqrt(max(float(v @ self.cov @ v), 0.0)))


def _overflow(out: CaseRun, say: Callable[[str, int, int], None]) -> CaseRun:
    """A prompt did not fit the solver's context: which subsets fit depends on which documents are in, so the case is
    not estimated from the ones that did (that would bias every effect towards short contexts)."""
    out.status = "context_overflow"
    out.info["reason"] = (
        "a prompt exceeded the solver's context window (its trials are logged as 'overflow'); fewer or shorter "
        "candidates (--max-candidates, --k) or a larger context keep every subset within it"
    )
    say(out.status, 0, 0)
    return out


def _interaction_fit(X: NDArray[np.bool_], y: NDArray[np.float64], members: Sequence[int], binary: bool) -> _Fit:
    n, m = X.shape
    pairs = list(itertools.combinations(members, 2))
    Xf = np.asarray(X, dtype=float)
    if n <= 1 + m + len(pairs) + 2:  # too few trials for the interactions: main effects only
        pairs = []
    Z = np.concatenate([np.ones((n, 1)), Xf] + [(Xf[:, i] * Xf[:, j])[:, None] for i, j in pairs], axis=1)
    ZtZ_inv = np.linalg.pinv(Z.T @ Z)
    beta = ZtZ_inv @ Z.T @ y
    resid = y - Z @ beta
    s2 = float(resid @ resid) / max(n - Z.shape[1], 1)
    if binary:  # 0/1 outcomes can separate perfectly (zero residuals): floor at a smoothed Bernoulli variance
        p = (float(np.sum(y)) + 2.0) / (n + 4.0)
        s2 = max(s2, p * (1.0 - p))
    return _Fit(tuple(pairs), beta, s2 * ZtZ_inv, binary)


def find_coalitions(
    source: TrialSource,
    X: NDArray[np.bool_],
    y: NDArray[np.float64],
    effects: Sequence[float],
    relevant: Sequence[int],
    preflight: dict[str, list[float]],
    cfg: MiningConfig,
    policy: VerdictPolicy,
    significant_pairs: Sequence[tuple[int, int]] = (),
) -> tuple[list[list[int]], list[dict[str, Any]]]:
    """Every minimal winning coalition the trials can establish (see the module docstring).

    Returns:
        ``(coalitions, checks)``: verified minimal coalitions (column indices, strongest first) and one record per
        checked candidate coalition (``docs``, ``verified``, ``minimal``, ``predicted``, trial means).
    """
    from deltap.mining.coalitions import coalition_verified

    binary = outcome_kind(cfg.outcome).binary
    members = sorted(set(relevant), key=lambda j: -effects[j])[:MAX_COALITION_DOCS]
    for i, j in significant_pairs:  # a partner that helps only together with a relevant document
        for d in (i, j):
            if d not in members and len(members) < MAX_COALITION_DOCS:
                members.append(d)
    if not members or cfg.verify_trials <= 0:
        return [], []
    members = sorted(members)
    fit = _interaction_fit(X, y, members, binary)
    full = fit.predict(members)
    # The target is an estimate too: a coalition reaching the full prediction minus the tolerance and minus 1.96
    # standard errors of that prediction is not distinguishable from the full context. A sub-coalition breaks
    # minimality only when it reaches the point target (full prediction minus the tolerance).
    point = full - policy.min_effect
    target = point - 1.959963984540054 * fit.se(members)
    none = fit.predict(())
    # Candidates: predicted within twice the tolerance of the full prediction (the trials decide, against ``target``).
    loose = full - 2 * policy.min_effect
    winning = [
        s
        for r in range(1, len(members) + 1)
        for s in itertools.combinations(members, r)
        if fit.predict(s) >= loose and fit.predict(s) > none
    ]
    minimal = [s for s in winning if not any(set(t) < set(s) for t in winning)]
    minimal.sort(key=lambda s: (len(s), -fit.predict(s)))
    minimal = minimal[:MAX_COALITIONS]
    m = X.shape[1]
    n_v = 1 if source.deterministic else cfg.verify_trials
    # The no-document baseline: the preflight trial of a deterministic solver is exact; for a stochastic one the
    # regression's intercept (from every design trial) is far less noisy than one or two preflight trials.
    none_v = (preflight.get("preflight_none") if source.deterministic else None) or [none]
    counter = itertools.count()
    seen: dict[tuple[int, ...], tuple[bool, dict[str, float]]] = {}

    # Coalition trials per case: ``verify_trials`` checks of one call for a deterministic solver, two coalitions'
    # worth of ``verify_trials`` trials for a stochastic one.
    cap = cfg.verify_trials if source.deterministic else 2 * cfg.verify_trials

    def check(s: tuple[int, ...]) -> tuple[bool, dict[str, float]] | None:
        """Trials with exactly the documents ``s`` in context: do they reach the target? (``None``: out of budget)"""
        if s not in seen:
            if (len(seen) + 1) * n_v > cap:
                return None
            mask = np.zeros(m, dtype=bool)
            mask[list(s)] = True
            base = next(counter) * n_v
            vals = _finite(source.run("coalition", range(base, base + n_v), np.repeat(mask[None], n_v, 0)))
            seen[s] = coalition_verified(vals, target, none_v, binary, exact=source.deterministic)
        return seen[s]

    kept: list[list[int]] = []
    checks: list[dict[str, Any]] = []
    queue = list(minimal)
    done: set[tuple[int, ...]] = set()
    while queue and len(checks) < MAX_COALITIONS:
        s = queue.pop(0)
        if s in done or any(set(k) <= set(s) for k in kept):
            continue
        done.add(s)
        res = check(s)
        if res is None:
            break
        ok, info = res
        subs = [tuple(d for d in s if d != drop) for drop in s] if len(s) > 1 else []
        if ok and source.deterministic:  # one call per sub-coalition: minimality by trials
            sub_res = {t: check(t) for t in subs}
            winning_subs = [t for t, r in sub_res.items() if r is not None and r[0] and r[1]["coalition_mean"] >= point]
            minimal_ok = not winning_subs and all(r is not None for r in sub_res.values())
            how = "trials" if all(r is not None for r in sub_res.values()) else "unchecked (coalition budget spent)"
            queue = winning_subs + queue  # a smaller coalition wins: check it instead
        else:  # a stochastic solver: minimality from the regression (drop-one predictions below the target)
            minimal_ok = all(fit.predict(t) < point for t in subs)
            how = "model"
        checks.append(
            {
                "members": list(s),
                "verified": ok,
                "minimal": bool(ok and minimal_ok),
                "minimal_by": how,
                "predicted": fit.predict(s),
                **info,
            }
        )
        if ok and minimal_ok:
            kept.append(sorted(s, key=lambda j: -effects[j]))
    return kept, checks
