"""From estimates to labels, over the whole dataset: the null (zero, or the placebo null fitted from every placebo
of the run; with ``--null auto`` chosen by the run's own tilt before any label, :func:`choose_null`), the p-values
over the looks (group-sequential repeated p-values against zero, Simes over the looks against a fitted null), the
prior weights and the dataset-wide weighted Benjamini–Hochberg step, verdicts with the interval each rests on,
grades, the graded utility labels (:func:`graded_step`, :mod:`deltap.mining.shrinkage`), the placebo check, and the
winning coalitions of each case. :func:`label_dataset` is the one labelling step ``mine()`` runs (and a relabelled
run: it reads nothing but the per-case results and the configuration)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deltap.documents import Corpus
from deltap.mining.config import LEARNED_GOLD_MAX_FACTOR, MiningConfig
from deltap.mining.empirical_null import MIN_PLACEBOS, RECOMMENDED_PLACEBOS, fit_placebo_null, leave_one_out, null_z
from deltap.mining.estimate import benjamini_hochberg, diff_in_means, ols_hc
from deltap.mining.placebo_check import placebo_check
from deltap.mining.procedure import TrialSource, find_coalitions
from deltap.mining.results import CaseResult
from deltap.mining.verdicts import VerdictPolicy, grade, repeated_interval, simes_interval, verdict
from deltap.outcomes import outcome_kind

__all__ = [
    "GRADE_STEPS",
    "choose_null",
    "dataset_verdicts",
    "graded_step",
    "label_dataset",
    "learned_gold_weights",
    "placebo_calibration",
    "placebo_null",
    "prior_weights",
    "record_coalitions",
]


def placebo_null(mined: list[CaseResult], cfg: MiningConfig) -> dict[str, Any]:
    """Fit the placebo null and re-test every candidate against it (``cfg.null`` resolved to ``placebo`` or
    ``topic``).

    Each pure placebo is tested against the null fitted without it, so the placebo calibration stays out of
    sample. With fewer than ``MIN_PLACEBOS`` placebo estimates the zero-null p-values are kept and the returned
    summary says why. ``topic`` adds the on-topic null (:func:`_topic_null`).
    """

    requested = cfg.resolved_null()
    info: dict[str, Any] = {
        "requested": requested,
        "used": "zero",
        "unit": outcome_kind(cfg.outcome).unit,
    }
    if requested not in ("placebo", "topic"):
        return info
    owners = [(r, j) for r in mined for j, c in enumerate(r.pool.candidates) if c.is_placebo and r.fits]
    coef = np.array([r.fits[-1][0][j] for r, j in owners], dtype=float)
    se = np.array([r.fits[-1][1][j] for r, j in owners], dtype=float)
    if coef.size < MIN_PLACEBOS:
        info["reason"] = (
            f"{coef.size} placebo estimates in the run, {MIN_PLACEBOS} needed to fit the placebo null: tested against zero"
        )
        info.update(too_few=True, recommended=RECOMMENDED_PLACEBOS)
        return info
    if coef.size < RECOMMENDED_PLACEBOS:
        info["reason"] = (
            f"only {coef.size} placebo estimates in the run: the placebo null's tail (what random text does at the"
            f" p-values BH uses) is poorly known below {RECOMMENDED_PLACEBOS}; its uncertainty is propagated, which costs"
            " power — use more placebos (--placebo) or more cases"
        )
    info.update(too_few=bool(coef.size < RECOMMENDED_PLACEBOS), recommended=RECOMMENDED_PLACEBOS)
    fit = fit_placebo_null(coef, se)
    own = dict(zip([(id(r), j) for r, j in owners], leave_one_out(coef, se), strict=True))
    topic = _topic_null(mined, info) if requested == "topic" else None
    for r in mined:
        m = len(r.pool.candidates)
        params = np.array([own.get((id(r), j), fit).params() for j in range(m)])
        schedule = cfg.schedule(m)  # the path ends at the case's stopping look, as for the zero null
        z_path = np.stack([null_z(c, e, df, *params.T) for c, e, df in r.fits], axis=-1)
        # a fitted null: Simes over the looks (LookSchedule.simes_p_value says why not the repeated p-value)
        p_rep = np.stack([schedule.simes_p_value(z_path, 1), schedule.simes_p_value(z_path, -1)])
        if topic is not None:
            on = np.array([not c.is_placebo for c in r.pool.candidates], dtype=bool)
            t_params = np.array([topic.get((id(r), j), params[j]) for j in range(m)])
            t_path = np.stack([null_z(c, e, df, *t_params.T) for c, e, df in r.fits], axis=-1)
            t_rep = np.stack([schedule.simes_p_value(t_path, 1), schedule.simes_p_value(t_path, -1)])
            # an on-topic candidate must beat both nulls: the larger p-value (each is valid, so their maximum is)
            binding = on & (t_rep[0] > p_rep[0])
            p_rep = np.where(on[None, :], np.maximum(p_rep, t_rep), p_rep)
            params = np.where(binding[:, None], t_params, params)
        r.info["_null_params"] = params  # for the verdict intervals (not written out)
        r.p_rep = p_rep
    info.update({"used": "placebo", **fit.to_dict()})
    return info


#: retrieved non-gold estimates above this: the on-topic null's own candidates are tested against the full fit (one
#: estimate moves a fit of thousands by O(1/n); the leave-one-out fits would cost O(n²))
TOPIC_LOO_MAX = 2000


def _topic_null(mined: list[CaseResult], info: dict[str, Any]) -> dict[tuple[int, int], tuple[float, ...]] | None:
    """The on-topic null (``--null topic``): the distribution of the run's retrieved non-gold candidates' effects.

    Random placebos cannot see that documents on a question's topic move the outcome more than random text
    (``benchmarks/README.md``, the tilt). The retrieved non-gold candidates *are* on-topic documents, and most of them
    do not help: following Efron's empirical null (the bulk of the tests themselves estimates the null), the same
    robust fit as the placebo null (core + heavy tail) is fitted to their estimates. A relevant retrieved document
    widens it (power pays, not the error rate), and each retrieved candidate is tested against the fit without it.
    Every non-placebo candidate is then tested against both nulls and keeps the larger p-value.

    Returns per ``(id(case), column)`` the null's :meth:`PlaceboNull.params`, or ``None`` (too few retrieved
    estimates: the placebo null alone; ``info["topic"]`` says why).
    """
    owners = [
        (r, j)
        for r in mined
        for j, c in enumerate(r.pool.candidates)
        if "retrieved" in c.sources and "gold" not in c.sources and r.fits
    ]
    coef = np.array([r.fits[-1][0][j] for r, j in owners], dtype=float)
    se = np.array([r.fits[-1][1][j] for r, j in owners], dtype=float)
    if coef.size < MIN_PLACEBOS:
        info["topic"] = {
            "used": False,
            "retrieved": int(coef.size),
            "reason": f"{coef.size} retrieved non-gold estimates, {MIN_PLACEBOS} needed: the placebo null alone",
        }
        return None
    fit = fit_placebo_null(coef, se)
    info["topic"] = {"used": True, "retrieved": int(coef.size), **fit.to_dict()}
    loo = leave_one_out(coef, se) if coef.size <= TOPIC_LOO_MAX else [fit] * coef.size
    out: dict[tuple[int, int], tuple[float, ...]] = {
        (id(r), j): nl.params() for (r, j), nl in zip(owners, loo, strict=True)
    }
    for r in mined:
        for j, c in enumerate(r.pool.candidates):
            if not c.is_placebo:
                out.setdefault((id(r), j), fit.params())
    return out


def prior_weights(mined: Sequence[CaseResult], gold_weight: float, learned: bool = False) -> list[NDArray[np.float64]]:
    """Prior weights of the weighted Benjamini–Hochberg step, per case: gold candidates ``gold_weight``, every other
    candidate 1, rescaled so the weights of the dataset's tested candidates average 1.

    Weighted BH rejects ``p_j ≤ w_j k q / M`` (equivalently runs BH on ``p_j / w_j``); with weights fixed before
    any trial and averaging 1 it keeps the FDR at ``q`` (Genovese, Roeder & Wasserman 2006, "False discovery
    control with p-value weighting", Biometrika 93:509-524), and it spends more of ``q`` where relevance is a
    priori likely — on the documents the benchmark names as gold. Used in the relevant family only (the harmful
    family is unweighted). Placebos keep the base weight (their labels are the run's false-positive check).
    """
    gold = [np.array(["gold" in c.sources for c in r.pool.candidates], dtype=bool) for r in mined]
    per_case = learned_gold_weights(mined, gold, gold_weight) if learned else [gold_weight] * len(mined)
    raw = [np.where(g, w, 1.0) for g, w in zip(gold, per_case, strict=True)]
    total = sum(float(w.sum()) for w in raw)
    n = sum(w.size for w in raw)
    return [w * (n / total) for w in raw] if n else raw


#: Storey's λ of the learned gold weight
LEARN_LAMBDA = 0.5


def learned_gold_weights(
    mined: Sequence[CaseResult], gold: Sequence[NDArray[np.bool_]], gold_weight: float
) -> list[float]:
    """The gold weight of each case, learned from the *other* cases' gold candidates (``--gold-weight-learned``).

    A fixed gold weight is a prior: "gold documents are more often relevant". The run's own tests say how much more:
    when the gold candidates' p-values (relevant side, against the run's null) pile up near zero, few of them are
    nulls. Storey's estimate of their null share, ``π0 = (#{p > λ} + 1) / ((1 − λ)(n + 1))`` (Storey 2002, λ = ½),
    divides the prior weight: ``gold_weight / π0`` (at most :data:`~deltap.mining.config.LEARNED_GOLD_MAX_FACTOR` × ``gold_weight``, never below
    it). As in IHW's cross-weighting (Ignatiadis & Huber 2021, "Covariate powered cross-weighted multiple testing",
    JRSS-B 83:720-751) each case's weight comes from the other cases only — cases are independent, so a case's weight
    does not depend on its own p-values — and the weights are then rescaled to average 1 over the dataset as fixed
    weights are. Gold documents that are in fact nulls give ``π0 ≈ 1``: the prior weight, as without learning.
    """
    ps = [r.p_rep[0][g] if r.p_rep is not None else np.zeros(0) for r, g in zip(mined, gold, strict=True)]
    big = [int(np.sum(p > LEARN_LAMBDA)) for p in ps]
    n = [int(p.size) for p in ps]
    B, N = sum(big), sum(n)
    out = []
    for b_i, n_i in zip(big, n, strict=True):
        pi0 = min(1.0, (B - b_i + 1) / ((1.0 - LEARN_LAMBDA) * (N - n_i + 1)))
        out.append(gold_weight * min(1.0 / pi0, LEARNED_GOLD_MAX_FACTOR))
    return out


def choose_null(results: Sequence[CaseResult], cfg: MiningConfig) -> tuple[MiningConfig, dict[str, Any] | None]:
    """The null and gold weight a run's labels use: ``cfg`` itself, unless its null is ``auto`` (item 6 of issue 35).

    ``auto`` is decided by the run's own tilt test (:func:`deltap.mining.tilt.auto_null`) on the regression estimates
    of its mined candidates, before any label is made: a tilted run is labelled with ``--null topic
    --gold-weight-learned``, any other with ``--null placebo`` (and ``cfg.gold_weight_learned`` as given). The
    decision is a function of the trial log and the configuration alone, so relabelling an old run reaches the
    same one. Returns the configuration to label with and the decision (``None`` when ``cfg.null`` is not ``auto``).
    """
    from deltap.mining.tilt import auto_null, run_tilt

    if cfg.resolved_null() != "auto":
        return cfg, None
    rows = []
    for r in results:
        if r.X is None or r.y is None or not len(r.y):
            continue
        reg = ols_hc(r.X, r.y)
        for j, c in enumerate(r.pool.candidates):
            rows.append((c.sources, {"regression_effect": {"coef": float(reg.coef[j]), "se": float(reg.se[j])}}))
    tilt = run_tilt(rows, unit=outcome_kind(cfg.outcome).unit, seed=cfg.seed)
    tilted, why = auto_null(tilt)
    null, learned = ("topic", True) if tilted else ("placebo", cfg.gold_weight_learned)
    decision = {"null": null, "gold_weight_learned": learned, "tilted": tilted, "reason": why}
    return replace(cfg, null=null, gold_weight_learned=learned), decision


def dataset_verdicts(results: list[CaseResult], cfg: MiningConfig, policy: VerdictPolicy) -> dict[str, Any]:
    """Dataset-wide BH (one family per direction) over every mined candidate, then verdicts, grades, estimates.

    Returns the summary of the null the candidates were tested against (with ``auto``: ``auto``, the decision of
    :func:`choose_null`).
    """
    mined = [r for r in results if r.X is not None and r.y is not None and len(r.y) and r.p_rep is not None]
    cfg, decision = choose_null(mined, cfg)
    null_info = placebo_null(mined, cfg)
    if decision is not None:
        null_info["auto"] = decision
    qv_sides = []
    # Weighted BH in the relevant family (p / w; all weights 1 unless gold_weight != 1); the harmful family stays
    # unweighted: there is no prior that gold documents are distractors.
    weights = prior_weights(mined, cfg.gold_weight, cfg.gold_weight_learned)
    weight_of = {id(r): w for r, w in zip(mined, weights, strict=True)}
    for side in (0, 1):
        parts = [r.p_rep[side] / (w if side == 0 else 1.0) for r, w in zip(mined, weights, strict=True)]  # type: ignore[index]
        flat = np.concatenate(parts) if mined else np.zeros(0)
        qv_sides.append(benjamini_hochberg(flat, cfg.q)[1] if flat.size else np.zeros(0))
    # BH's threshold in each direction, q·R/M: the level of the intervals the verdicts rest on
    n_tests = max(int(qv_sides[0].size), 1)
    alpha_side = [cfg.q * max(int(np.sum(qv <= cfg.q)), 1) / n_tests for qv in qv_sides]
    pos = 0
    binary = outcome_kind(cfg.outcome).binary
    fitted_null = null_info.get("used") == "placebo"
    for r in results:
        m = len(r.pool.candidates)
        if r not in mined:
            r.candidates = [_candidate_row(r, j, None, None, None, None, "undecided", None) for j in range(m)]
            continue
        assert r.X is not None and r.y is not None and r.p_rep is not None
        reg = ols_hc(r.X, r.y)  # HC2: the reported effect and its robust interval
        dm = diff_in_means(r.X, r.y, binary=binary)
        q_rel, q_harm = qv_sides[0][pos : pos + m], qv_sides[1][pos : pos + m]
        pos += m
        schedule = cfg.schedule(m)
        params = r.info.pop("_null_params", None)
        w_r = weight_of[id(r)]
        # the relevant bound at each candidate's weighted BH level (p_j <= w_j q R / M), the harmful one unweighted
        low = np.full(m, -np.inf)
        for wv in np.unique(w_r):
            if fitted_null:  # the interval dual to the Simes test of the fitted null
                low_w, high = simes_interval(
                    r.fits, schedule, min(alpha_side[0] * float(wv), 0.5), alpha_side[1], params
                )
            else:
                low_w, high = repeated_interval(
                    r.fits,
                    schedule.times[: len(r.fits)],
                    schedule.critical_b(min(alpha_side[0] * float(wv), 0.5)),
                    schedule.critical_b(alpha_side[1]),
                    params,
                )
            low = np.where(w_r == wv, low_w, low)
        rows = []
        for j in range(m):
            coef = float(reg.coef[j])
            side = 0 if coef >= 0 else 1
            qv = float(q_rel[j] if side == 0 else q_harm[j])
            v = verdict(coef, float(reg.se[j]), qv, policy, (float(low[j]), float(high[j])))
            row = _candidate_row(r, j, reg, dm, float(r.p_rep[side][j]), qv, v, grade(coef, v, policy))
            if v == "irrelevant":
                z90 = 1.6448536269514722
                row["verdict_interval"] = {
                    "low": _f(coef - z90 * reg.se[j]),
                    "high": _f(coef + z90 * reg.se[j]),
                    "level": 0.90,
                    "rests_on": f"equivalence (two one-sided tests at 5%, HC2 SE) within ±{policy.margin:g}",
                }
            else:
                row["verdict_interval"] = {
                    "low": _f(low[j]),
                    "high": _f(high[j]),
                    "level": round(1 - min(alpha_side[0] * float(w_r[j]), 0.5) - alpha_side[1], 6),
                    "rests_on": (
                        "interval of the Simes test over the looks"
                        if fitted_null
                        else "repeated confidence interval over the looks"
                    )
                    + f" at BH's level q·R/M ({alpha_side[0]:.3g} relevant, "
                    f"{alpha_side[1]:.3g} harmful)" + (", net of the placebo null" if fitted_null else ""),
                }
            rows.append(row)
        r.candidates = rows
        r.info["intercept"] = float(reg.intercept)
    return null_info


#: grades of the graded qrels per minimum effect: the grade step is ``min_effect / GRADE_STEPS`` (0.1 nats for
#: logprob, 0.02 for pass), so a proven minimum effect is grade 5 and nDCG's linear gain follows the utility
GRADE_STEPS = 5


def label_dataset(
    results: list[CaseResult],
    cfg: MiningConfig,
    policy: VerdictPolicy,
    covariates: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, Any]:
    """Every label of a run from its per-case results: the verdicts (:func:`dataset_verdicts`: the null, BH, verdict
    intervals and grades) and the graded utility labels (:func:`graded_step`). The one dataset-wide labelling step of
    ``mine()`` (and of a relabelled run: it reads nothing but ``results`` and the configuration).

    Args:
        results: The per-case results (statistics from the trial log).
        cfg: The run's configuration.
        policy: The verdict thresholds.
        covariates: Optional single-document lifts ``{(case_id, doc_id): lift}`` (``endtoend --single-doc``; see
            :func:`deltap.mining.shrinkage.single_doc_lifts`) for the graded labels' prior.

    Returns:
        ``{"null": the null's summary, "graded": metadata.graded}``.
    """
    null_info = dataset_verdicts(results, cfg, policy)
    return {"null": null_info, "graded": graded_step(results, cfg, policy, covariates)}


def graded_step(
    results: list[CaseResult],
    cfg: MiningConfig,
    policy: VerdictPolicy,
    covariates: Mapping[tuple[str, str], float] | None = None,
) -> dict[str, Any]:
    """The graded utility labels (:mod:`deltap.mining.shrinkage`) of every mined candidate, under both priors, into
    each candidate row's ``graded`` (``{"gold": {utility, ci, lfsr, grade}, "no_gold": {...}}``; rows without an
    estimate get none). Runs after :func:`dataset_verdicts` (it reads the rows' regression effects). Returns
    ``metadata.graded``: the model, each prior's fit, the grade mapping."""
    from deltap.mining.shrinkage import PRIORS, CandidateEstimate, graded_labels

    owners: list[tuple[CaseResult, int]] = []
    estimates: list[CandidateEstimate] = []
    for r in results:
        if r.X is None or r.y is None or not r.candidates or len(r.y) <= len(r.pool.candidates) + 1:
            continue  # no residual degrees of freedom: no standard error to shrink with
        df = float(len(r.y) - len(r.pool.candidates) - 1)
        # the classical OLS standard error: the one the tests use (deltap.mining.estimate.z_statistics says why it is
        # the better-calibrated and far less noisy one under the randomised design); kept beside HC2 in the dataset
        classical = ols_hc(r.X, r.y, hc="classical").se
        for j, (c, row) in enumerate(zip(r.pool.candidates, r.candidates, strict=True)):
            eff = row.get("regression_effect") or {}
            se = _f(classical[j])
            if eff.get("coef") is None or se is None:
                continue
            eff["se_classical"] = se
            owners.append((r, j))
            src = tuple(c.sources)
            estimates.append(
                CandidateEstimate(r.case.case_id, c.doc_id, src, c.retrieval_rank, float(eff["coef"]), se, df)
            )
    kind = outcome_kind(cfg.outcome)
    graded = graded_labels(
        estimates,
        step=policy.min_effect / GRADE_STEPS,
        unit=kind.unit,
        covariates=covariates or None,
        lfsr_max=cfg.grade_lfsr,
    )
    for a, (r, j) in enumerate(owners):
        labels = {p: graded.labels[p][a] for p in PRIORS}
        if all(lab is not None for lab in labels.values()):
            r.candidates[j]["graded"] = {p: lab.to_dict() for p, lab in labels.items() if lab is not None}
    return {**graded.describe(), "candidates": sum(1 for lab in graded.labels["gold"] if lab is not None)}


def _labelled_placebo(r: CaseResult, doc_id: str, row: dict[str, Any], corpus: Corpus | None) -> dict[str, Any]:
    """One placebo labelled relevant or harmful, and whether its text names the case's reference answer."""
    out: dict[str, Any] = {
        "case_id": r.case.case_id,
        "doc_id": doc_id,
        "verdict": row["verdict"],
        "effect": (row.get("regression_effect") or {}).get("coef"),
    }
    answer = (r.case.reference_answer or "").strip()
    if corpus is not None and answer and doc_id in corpus:
        text = corpus[doc_id].full_text
        out["names_reference"] = bool(re.search(rf"(?<!\w){re.escape(answer)}(?!\w)", text, flags=re.IGNORECASE))
    return out


def _f(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _candidate_row(
    r: CaseResult, j: int, reg: Any, dm: Any, pv: float | None, qv: float | None, v: str, g: int | None
) -> dict[str, Any]:
    cand = r.pool.candidates[j]
    row: dict[str, Any] = {"doc_id": cand.doc_id, "sources": list(cand.sources), "verdict": v, "grade": g}
    if reg is None:
        row.update({k: None for k in ("delta_p", "ci_low", "ci_high", "p_in", "p_out", "p_value", "q_value")})
        row.update({"n_in": 0, "n_out": 0})
        return row
    z = 1.959963984540054
    row.update(
        {
            "delta_p": _f(dm.delta[j]),
            "ci_low": _f(dm.ci_low[j]),
            "ci_high": _f(dm.ci_high[j]),
            "p_in": _f(dm.p_in[j]),
            "p_out": _f(dm.p_out[j]),
            "n_in": int(dm.n_in[j]),
            "n_out": int(dm.n_out[j]),
            "p_value": pv,
            "q_value": qv,
            "regression_effect": {
                "coef": _f(reg.coef[j]),
                "se": _f(reg.se[j]),
                "ci_low": _f(reg.coef[j] - z * reg.se[j]),
                "ci_high": _f(reg.coef[j] + z * reg.se[j]),
                "p_value_fixed": _f(reg.p_value[j]),
            },
        }
    )
    return row


def record_coalitions(res: CaseResult, source: TrialSource, cfg: MiningConfig, policy: VerdictPolicy) -> int:
    """Interaction pairs and every verified minimal winning coalition of a mined case; returns the calls made."""
    from deltap.mining.coalitions import interaction_pairs

    assert res.X is not None and res.y is not None
    effects = [float((c.get("regression_effect") or {}).get("coef") or 0.0) for c in res.candidates]
    relevant = [j for j, c in enumerate(res.candidates) if c["verdict"] == "relevant"]
    if not relevant:
        return 0
    promising = sorted(range(len(effects)), key=lambda j: -effects[j])[:6]
    cand = sorted(set(relevant) | {j for j in promising if effects[j] >= policy.min_effect})
    pairs = [p for p in interaction_pairs(res.X, res.y, cand) if p.significant]
    res.info["interaction_pairs"] = [
        {
            "docs": [res.pool.candidates[p.i].doc_id, res.pool.candidates[p.j].doc_id],
            "effect": p.effect,
            "se": p.se,
            "p_value": p.p_value,
        }
        for p in pairs
    ]
    before = source.calls
    coalitions, checks = find_coalitions(
        source, res.X, res.y, effects, relevant, res.preflight, cfg, policy, [(p.i, p.j) for p in pairs]
    )
    ids = res.pool.doc_ids
    res.info["coalition_check"] = [{"docs": [ids[j] for j in c.pop("members")], **c} for c in checks]
    res.coalitions = [[ids[j] for j in c] for c in coalitions]
    res.coalition = res.coalitions[0] if res.coalitions else None
    made = source.calls - before
    res.info.setdefault("calls_by_kind", {})["coalition"] = made
    res.calls += made
    return made


#: labelled placebos listed by name in run.json / the dataset (the rest are counted)
LISTED_PLACEBOS = 10


def placebo_calibration(results: list[CaseResult], cfg: MiningConfig, corpus: Corpus | None = None) -> dict[str, Any]:
    """Placebo false-positive rate, effect sizes and the placebo check (:func:`~deltap.mining.placebo_check.placebo_check`:
    an exact binomial test against BH's reference rate ``q·R/M``, the one result every output prints).

    With ``corpus``, each placebo labelled relevant or harmful is listed (``labelled``: case, document, verdict,
    effect) with whether its text names the case's reference answer: a document drawn at random can be truly
    relevant (on ADK, a random ``BaseLlm`` subclass for "the core interface for all LLM integrations?"), which the
    check alone cannot tell from a null that is too narrow, so its message says so.
    """
    n = rel = harm = rejected = 0
    labelled: list[dict[str, Any]] = []
    rejections = tests = 0
    effects: list[float] = []  # |regression effect| of every placebo: how much random text moves this solver
    for r in results:
        if r.X is None:
            continue
        for c, row in zip(r.pool.candidates, r.candidates, strict=True):
            if row.get("q_value") is None:
                continue
            tests += 1
            significant = float(row["q_value"]) <= cfg.q
            rejections += significant
            if c.is_placebo:
                n += 1
                rejected += significant
                rel += row["verdict"] == "relevant"
                harm += row["verdict"] == "harmful"
                if row["verdict"] in ("relevant", "harmful"):
                    labelled.append(_labelled_placebo(r, c.doc_id, row, corpus))
                coef = (row.get("regression_effect") or {}).get("coef")
                if coef is not None:
                    effects.append(abs(float(coef)))
    fpr = (rel + harm) / n if n else 0.0
    check = placebo_check(n, rejected, rejections, tests, cfg.q, labelled=rel + harm)
    naming = [p for p in labelled if p.get("names_reference")]
    if naming:
        first = naming[0]
        check = replace(
            check,
            message=f"{check.message}; {len(naming)} of the {len(labelled)} labelled placebo(s) name the case's reference"
            f" answer in their text (e.g. {first['doc_id']} for {first['case_id']}): a random document can be truly"
            " relevant — read them before distrusting the null",
        )
    out: dict[str, Any] = {
        "n": n,
        "labelled_relevant": rel,
        "labelled_harmful": harm,
        "fpr": fpr,
        "nominal": check.expected_rate,
        "p_value_above_nominal": check.p_value,
        "warning": check.failed,
        "check": check.to_dict(),
    }
    if labelled:
        out["labelled"] = labelled[:LISTED_PLACEBOS]
    if effects:
        out["effect_abs"] = {
            "median": float(np.median(effects)),
            "p90": float(np.quantile(effects, 0.9)),
            "max": float(max(effects)),
            "unit": outcome_kind(cfg.outcome).unit,
        }
    return out
