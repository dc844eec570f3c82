"""Metric validity on the user's data: does a retrieval metric predict end-to-end success?

For each metric on each qrels (the benchmark's gold qrels, deltap's mined qrels, any other judgements given: graded
qrels, a relabelled run's), the signed utility (``signed_utility@K`` on the mined dataset, and on any signed gains
given), and eRAG's single-document utility when measured (:mod:`deltap.endtoend.single`), two kinds of agreement with
the measured success of an end-to-end run. ``docs/end-to-end.md`` says which figure answers which question.

**Pooled** (kept for continuity with earlier runs):

* **across systems** — Kendall's τ-b between the systems' mean metric and their mean success (the question a
  leaderboard asks: does the metric order the systems as success does?);
* **across questions** — Pearson's r between the per-case metric and the per-case success, pooled over systems
  (point-biserial for a binary outcome). Most of what it explains is question difficulty (a question every system
  solves, or none does), and a control system defined by a qrels' own labels (``gold`` shows the gold documents,
  ``mined`` the mined relevant ones) scores that qrels' best by construction.

**Fair** (the yardstick of issue 35), on the *fair systems*: every system but the controls some compared qrels'
labels define (:data:`LABEL_CONTROLS`; both qrels of a difference are judged on the same systems, so the difference
is paired):

* **within questions** — per question, Kendall's τ-b between the metric and the success over the fair systems, then
  the mean over questions. A question where the metric ties every system orders nothing: it counts 0 and is counted
  (``ties``: "16 of 20 questions tie every system"); a question whose success ties every system has nothing to
  predict and is left out (``success_ties``);
* **question-centred r** — Pearson's r after the metric and the success are centred within each question (how much
  of the spread between systems *inside* a question the metric explains);
* **lift r** — success measured as the lift over the no-context control (``none``): Pearson's r between the metric
  and the lift, pooled over questions and the fair systems but the control itself.

Every figure has a percentile bootstrap interval: over cases for the pooled ones, over questions for the fair ones;
the same resamples for every metric, so the difference between two qrels (deltap − gold, each qrels against gold)
has a paired interval too. The words say which qrels predict success better on this data and by how much, or that the
intervals cannot tell.

Reference: Salemi & Zamani, "Evaluating Retrieval Quality in Retrieval-Augmented Generation", SIGIR 2024 (Kendall τ
of retrieval metrics with end-to-end performance across systems).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.endtoend.single import ERAG_QRELS
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.endtoend.results import EndToEndResult
    from deltap.endtoend.systems import System

__all__ = [
    "BASELINE",
    "LABEL_CONTROLS",
    "fair_systems",
    "kendall_tau",
    "metric_validity",
    "per_case_metric",
    "revalidate",
    "summary_sentence",
    "within_question_tau",
]

#: control system -> the qrels whose labels define it (it shows exactly the documents those labels call relevant, so
#: it scores that qrels' best by construction). TODO(lead): the "dataset" helper's controls table in
#: ``endtoend/systems.py`` says which qrels each control defines; read it from there when it lands.
LABEL_CONTROLS: dict[str, str] = {"gold": "gold", "mined": "deltap"}
#: the no-context control: success is measured as the lift over it
BASELINE = "none"
#: the keys of the pooled and of the fair figures, with what each tells (for the sentences)
POOLED_KEYS: tuple[tuple[str, str, str], ...] = (
    ("tau", "τ", "ranking the systems"),
    ("r", "r", "telling which questions succeed"),
)
FAIR_KEYS: tuple[tuple[str, str, str], ...] = (
    ("tau_within", "τ within", "ordering the systems within a question"),
    ("r_centred", "question-centred r", "telling which system does better on a question"),
)


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b of two score vectors (``nan`` when either is constant)."""
    from scipy.stats import kendalltau

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(kendalltau(x, y).statistic)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of ``(B, n)`` arrays (``nan`` for a constant row)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(axis=1) / np.where(den > 0, den, 1), np.nan)


def per_case_metric(
    measure: str,
    qrels: Mapping[str, Mapping[str, int]] | str,
    systems: Sequence[System],
    case_ids: Sequence[str],
    k: int,
    gains: Any = None,
) -> np.ndarray:
    """``(cases, systems)`` per-case values of ``measure`` for the documents in every system's prompt
    (:func:`deltap.endtoend.systems.prompt_metric`; a case without judgements or without a document scores 0,
    trec_eval's rule). ``gains``: signed gains for ``signed_utility@K`` (a :class:`~deltap.judgements.SignedGains` or
    ``{case: {doc: gain}}``); every case is then judged, its positive gains as the relevant documents."""
    from deltap.endtoend.systems import prompt_metric
    from deltap.judgements import SignedGains

    pos = {c: i for i, c in enumerate(case_ids)}
    out = np.zeros((len(case_ids), len(systems)))
    if gains is not None:
        gains = SignedGains.of(gains)
        qrels = {c: {d: int(g > 0) for d, g in gains.docs.get(c, {}).items()} for c in case_ids}
    if not isinstance(qrels, str):
        qrels = {q: dict(v) for q, v in qrels.items() if q in pos}
        if not qrels:
            return out
    for j, system in enumerate(systems):
        for q, v in prompt_metric(measure, qrels, system, k, gains=gains).items():
            if q in pos:
                out[pos[q], j] = v
    return out


def _signed_measure(k: int) -> str | None:
    """``signed_utility@k`` when the evaluation library knows it (added by the labels work), else ``None``."""
    from deltap.evaluation.measures import parse_metric

    try:
        return str(parse_metric(f"signed_utility@{k}"))
    except DeltapError:
        return None


def fair_systems(
    systems: Sequence[System], defined_by: Mapping[str, str] | None = None
) -> tuple[list[int], dict[str, str]]:
    """The columns of the systems the fair figures use (every system but the controls some labels define), and the
    ones left out with why."""
    controls = LABEL_CONTROLS if defined_by is None else defined_by
    keep: list[int] = []
    left: dict[str, str] = {}
    for j, s in enumerate(systems):
        if s.kind == "control" and s.name in controls:
            left[s.name] = f"shows what the {controls[s.name]} qrels' labels call relevant"
        else:
            keep.append(j)
    return keep, left


def within_question_tau(vals: np.ndarray, success: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Per question (row), Kendall's τ-b between the metric and the success over the systems (columns).

    Returns:
        ``(tau, ties, success_ties)``: ``tau`` is 0 where the metric ties every system (counted in ``ties``: it
        orders nothing) and ``nan`` where the success does (counted in ``success_ties``: nothing to predict).
    """
    tau = np.full(len(vals), math.nan)
    ties = success_ties = 0
    for q in range(len(vals)):
        if vals.shape[1] < 2 or np.ptp(success[q]) == 0:
            success_ties += 1
        elif np.ptp(vals[q]) == 0:
            ties += 1
            tau[q] = 0.0
        else:
            tau[q] = kendall_tau(vals[q], success[q])
    return tau, ties, success_ties


def _nanmean_rows(x: np.ndarray) -> np.ndarray:
    """Row means ignoring ``nan`` (``nan`` for an all-``nan`` row), without numpy's warning."""
    ok = np.isfinite(x)
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(ok, x, 0.0).sum(axis=1) / np.where(n > 0, n, 1), math.nan)


@dataclass
class _Column:
    """One metric on one qrels: its per-case values and everything the figures need from them."""

    metric: str
    qrels: str
    vals: np.ndarray
    boot: dict[str, np.ndarray] = field(default_factory=dict)


def _columns(
    result: EndToEndResult,
    systems: Sequence[System],
    judgements: Mapping[str, Mapping[str, Mapping[str, int]]],
    metrics: Sequence[str],
    dataset_path: str | None,
    gains: Mapping[str, Any] | None,
    single_doc: Mapping[str, Mapping[str, float]] | None,
    extra: Mapping[str, np.ndarray] | None,
    idx: np.ndarray,
    notes: list[str],
) -> list[_Column]:
    """Every (metric, qrels) column over the complete cases."""
    k = result.k
    columns: list[_Column] = []
    for label, qrels in judgements.items():
        for m in metrics:
            columns.append(_Column(m, label, per_case_metric(m, qrels, systems, result.case_ids, k)[idx]))
    signed = _signed_measure(k)
    if signed and dataset_path:
        try:
            vals = per_case_metric(signed, dataset_path, systems, result.case_ids, k)[idx]
            columns.append(_Column(signed, "deltap (signed)", vals))
        except (DeltapError, ValueError, KeyError, TypeError) as exc:  # an optional measure: say why, keep the table
            notes.append(f"{signed} not computed: {exc}")
    elif not signed:
        notes.append(f"signed_utility@{k} is not in the evaluation library yet: not in the table")
    else:
        notes.append(f"{signed} needs the mined retrieval_dataset.yaml (no dataset_path given): not in the table")
    if signed:
        for label, g in (gains or {}).items():
            vals = per_case_metric(signed, {}, systems, result.case_ids, k, gains=g)[idx]
            columns.append(_Column(signed, label, vals))
    if single_doc is not None:
        from deltap.endtoend.single import ERAG_MEASURES, ERAG_QRELS, erag_metric

        for m in ERAG_MEASURES:
            columns.append(
                _Column(f"erag_{m}@{k}", ERAG_QRELS, erag_metric(m, single_doc, systems, result.case_ids, k)[idx])
            )
    for label, arr in (extra or {}).items():
        columns.append(_Column(label, "planted", np.asarray(arr, dtype=float)[idx]))
    return columns


def metric_validity(
    result: EndToEndResult,
    systems: Sequence[System],
    judgements: Mapping[str, Mapping[str, Mapping[str, int]]],
    metrics: Sequence[str],
    *,
    dataset_path: str | None = None,
    extra: Mapping[str, np.ndarray] | None = None,
    seed: int | None = None,
    n_resamples: int = 1000,
    single_doc: Mapping[str, Mapping[str, float]] | None = None,
    gains: Mapping[str, Any] | None = None,
    defined_by: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The validity table of ``metrics`` on every qrels of ``judgements`` against ``result``'s success.

    Args:
        result: An end-to-end result (its complete cases are used).
        systems: The systems of ``result``, in its order.
        judgements: ``{label: qrels}``, e.g. ``{"gold": ..., "deltap": ...}``; any judgements (graded TREC qrels
            included: nDCG uses the grades).
        metrics: Measure strings (``ndcg@5``, ``hit_rate@5``, ``recall@5``).
        dataset_path: The mined ``retrieval_dataset.yaml``, for ``signed_utility@K`` when the library knows it.
        extra: More per-case metrics ``{label: (cases, systems) array}`` (the simulation's planted utility).
        single_doc: eRAG document labels ``{case_id: {doc_id: label}}`` (:meth:`EndToEndResult.erag_labels`): adds
            the ``erag_precision@K``, ``erag_hit@K`` and ``erag_ndcg@K`` rows (qrels ``single-doc (eRAG)``).
        seed: Bootstrap seed (default: the run's).
        n_resamples: Bootstrap resamples.
        gains: More signed gains ``{label: SignedGains or {case: {doc: gain}}}`` (a graded label's utility, harmful
            documents negative): a ``signed_utility@K`` row each, qrels ``label``.
        defined_by: Control system → the qrels whose labels define it (default :data:`LABEL_CONTROLS`): left out of
            the fair figures.

    Returns:
        ``{"rows", "comparisons", "summary", "summary_within", "notes", "fair_systems", "left_out", ...}``; each row
        has ``metric``, ``qrels``, ``means`` (per system), the pooled ``tau``, ``tau_ci``, ``r``, ``r_ci`` and the fair
        ``tau_within``, ``tau_within_ci``, ``ties``, ``questions``, ``r_centred``, ``r_centred_ci``, ``r_lift``,
        ``r_lift_ci``.
    """
    names = [s.name for s in systems]
    if names != result.systems:
        raise DeltapError("metric_validity: the systems must be the result's, in its order")
    idx = np.asarray(result.complete, dtype=int)
    success = result.values[idx]
    notes: list[str] = []
    columns = _columns(result, systems, judgements, metrics, dataset_path, gains, single_doc, extra, idx, notes)
    rng = np.random.default_rng(result_seed(result, seed))
    n = len(idx)
    boots = rng.integers(0, n, size=(n_resamples, n)) if n else np.zeros((0, 0), dtype=int)
    fair, left_out = fair_systems(systems, defined_by)
    base = names.index(BASELINE) if BASELINE in names else None
    if base is None:
        notes.append(f"no '{BASELINE}' system: the lift r is not computed (success is measured against no context)")
    rows = [_pooled(c, success, boots, names) | _fair(c, success, boots, fair, base) for c in columns]
    comparisons = _compare_qrels(metrics, judgements, columns, rows)
    n_fair = len(fair)
    return {
        "rows": rows, "comparisons": comparisons, "cases": n, "systems": names, "n_resamples": n_resamples,
        "summary": summary_sentence(comparisons, len(names), n),
        "summary_within": summary_sentence(comparisons, n_fair, n, FAIR_KEYS, fair=[names[j] for j in fair]),
        "fair_systems": [names[j] for j in fair], "left_out": left_out, "baseline": BASELINE if base is not None else None,
        "notes": notes,
    }  # fmt: skip


def _pooled(col: _Column, success: np.ndarray, boots: np.ndarray, names: Sequence[str]) -> dict[str, Any]:
    """The pooled figures of one column (τ across systems, r across questions)."""
    vals, n = col.vals, len(col.vals)
    s_means = success[boots].mean(axis=1) if n else np.zeros((0, len(names)))
    tau = kendall_tau(vals.mean(axis=0), success.mean(axis=0)) if n else math.nan
    tb = np.array([kendall_tau(vals[b].mean(axis=0), sm) for b, sm in zip(boots, s_means, strict=True)])
    r = float(_pearson_rows(vals.ravel()[None, :], success.ravel()[None, :])[0]) if n else math.nan
    rb = (
        _pearson_rows(vals[boots].reshape(len(boots), -1), success[boots].reshape(len(boots), -1))
        if n
        else np.array([])
    )
    col.boot.update(tau=tb, r=rb)
    return {
        "metric": col.metric, "qrels": col.qrels,
        "means": {s: float(vals[:, j].mean()) if n else None for j, s in enumerate(names)},
        "tau": _clean(tau), "tau_ci": _ci(tb), "r": _clean(r), "r_ci": _ci(rb),
    }  # fmt: skip


def _fair(
    col: _Column, success: np.ndarray, boots: np.ndarray, fair: Sequence[int], base: int | None
) -> dict[str, Any]:
    """The fair figures of one column over the fair systems: τ within questions, question-centred r, lift r."""
    v, s = col.vals[:, fair], success[:, fair]
    tau_q, ties, s_ties = within_question_tau(v, s)
    ok = np.isfinite(tau_q)  # questions with something to predict
    tw = float(tau_q[ok].mean()) if ok.any() else math.nan
    twb = _nanmean_rows(tau_q[boots]) if len(boots) else np.array([])
    vc = np.where(ok[:, None], v - v.mean(axis=1, keepdims=True), 0.0)
    sc = np.where(ok[:, None], s - s.mean(axis=1, keepdims=True), 0.0)
    rc = float(_pearson_rows(vc.ravel()[None, :], sc.ravel()[None, :])[0]) if ok.any() else math.nan
    rcb = (
        _pearson_rows(vc[boots].reshape(len(boots), -1), sc[boots].reshape(len(boots), -1))
        if len(boots)
        else np.array([])
    )
    out: dict[str, Any] = {
        "tau_within": _clean(tw), "tau_within_ci": _ci(twb), "questions": int(ok.sum()), "ties": ties,
        "success_ties": s_ties, "r_centred": _clean(rc), "r_centred_ci": _ci(rcb),
        "per_question_tau": [_clean(float(t)) for t in tau_q],
    }  # fmt: skip
    col.boot.update(tau_within=twb, r_centred=rcb)
    if base is not None:
        others = [j for j in fair if j != base]
        lift = success[:, others] - success[:, [base]]
        lv = col.vals[:, others]
        rl = float(_pearson_rows(lv.ravel()[None, :], lift.ravel()[None, :])[0]) if len(lv) else math.nan
        rlb = (
            _pearson_rows(lv[boots].reshape(len(boots), -1), lift[boots].reshape(len(boots), -1))
            if len(boots)
            else np.array([])
        )
        out.update(r_lift=_clean(rl), r_lift_ci=_ci(rlb))
        col.boot["r_lift"] = rlb
    return out


def revalidate(
    endtoend_dir: str | Path,
    judgements: Mapping[str, Mapping[str, Mapping[str, int]]],
    metrics: Sequence[str] | None = None,
    *,
    dataset_path: str | Path | None = None,
    gains: Mapping[str, Any] | None = None,
    n_resamples: int = 1000,
    seed: int | None = None,
) -> dict[str, Any]:
    """The validity table of a finished end-to-end run (``RUN_DIR/endtoend/``) against other judgements, with no
    solver call: the success per case and system (``results.json``), the documents each system showed
    (``per_case.json``) and the single-document labels are read back, then :func:`metric_validity` runs as the end-to-end
    run would have with these qrels (a relabelled run's, graded qrels...).

    The lists are the documents each system *showed* (after the context-window fit), which is what its success
    measured. A control defined by labels (``mined``) keeps the lists it showed: relabelling changes its qrels, not
    what was shown — the fair figures leave it out anyway.

    Raises:
        DeltapError: the folder holds no readable ``results.json`` / ``per_case.json``.
    """
    import json

    from deltap.endtoend.results import EndToEndResult
    from deltap.endtoend.systems import System
    from deltap.run_layout import EndToEndDir

    d = EndToEndDir(Path(endtoend_dir))
    data = d.read_results()
    try:
        per_case = json.loads(d.per_case_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        per_case = None
    if data is None or not isinstance(per_case, list):
        raise DeltapError(f"{d.root}: no end-to-end results (results.json, per_case.json) to re-judge")
    k = int(data["k"])
    info = [s for s in data.get("systems", []) if isinstance(s, Mapping)]
    names = [str(s["name"]) for s in info]
    case_ids = list(data["per_case"])
    values = np.array([[_num(data["per_case"][c].get(n)) for n in names] for c in case_ids], dtype=float)
    shown: dict[str, dict[str, list[str]]] = {n: {} for n in names}
    for row in per_case:
        for n, trials in (row.get("trials") or {}).items():
            if n in shown and trials:
                shown[n][str(row["case_id"])] = [str(x) for x in trials[0].get("docs") or []]
    systems = [
        System(n, str(s.get("kind", "")), shown[n], cut=not (s.get("kind") == "control" and n in ("none", "all")))
        for n, s in zip(names, info, strict=True)
    ]
    complete = [i for i in range(len(case_ids)) if np.all(np.isfinite(values[i]))]
    result = EndToEndResult(case_ids, names, values, str(data["outcome"]), k, data.get("summary") or {}, [], complete,
                            float(data.get("confidence", 0.95)), run=data.get("run") or {})  # fmt: skip
    single = (data.get("single_doc") or {}).get("labels")
    from deltap.endtoend.judged import judged_by_all, note_left_out

    judged, left_out = judged_by_all(result, judgements)  # the end-to-end run's rule: questions every qrels judges
    out = metric_validity(
        judged,
        systems,
        judgements,
        list(metrics or (f"ndcg@{k}", f"hit_rate@{k}", f"recall@{k}")),
        dataset_path=str(dataset_path) if dataset_path else None,
        gains=gains,
        single_doc=single if isinstance(single, Mapping) else None,
        n_resamples=n_resamples,
        seed=seed,
    )
    note_left_out(out, left_out, judgements)
    return out


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan


def result_seed(result: EndToEndResult, seed: int | None) -> int:
    return int(seed if seed is not None else (result.run.get("config") or {}).get("seed", 0))


def _clean(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def _ci(boot: np.ndarray, confidence: float = 0.95) -> list[float | None]:
    b = boot[np.isfinite(boot)]
    if len(b) < max(10, len(boot) // 2):  # too many degenerate resamples: no honest interval
        return [None, None]
    a = (1 - confidence) / 2
    return [float(np.quantile(b, a)), float(np.quantile(b, 1 - a))]


def _qrels_name(label: str) -> str:
    return {"gold": "the benchmark's gold qrels", "deltap": "deltap's mined qrels"}.get(label, f"the {label} qrels")


def _compare_qrels(
    metrics: Sequence[str], judgements: Mapping[str, Any], columns: Sequence[_Column], rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each qrels against gold for each metric (``deltap − gold`` first), every signed utility against the first
    metric on gold, and (when measured) eRAG's single-document precision against the first metric on gold and the
    signed utility against eRAG: every figure's difference with an interval from the shared resamples."""
    point = {(r["metric"], r["qrels"]): r for r in rows}
    boot = {(c.metric, c.qrels): c.boot for c in columns}
    pairs = []
    if "gold" in judgements:
        for label in [q for q in judgements if q == "deltap"] + [q for q in judgements if q not in ("gold", "deltap")]:
            pairs += [(m, (m, label), (m, "gold"), _qrels_name(label), _qrels_name("gold")) for m in metrics]
    signed = [key for key in point if key[0].startswith("signed_utility@")]
    if metrics and "gold" in judgements:
        for key in signed:
            name = "the signed utility" if key[1] == "deltap (signed)" else f"the signed utility ({key[1]})"
            label = f"{key[0]} vs {metrics[0]} on gold" + ("" if key[1] == "deltap (signed)" else f" ({key[1]})")
            pairs.append((label, key, (metrics[0], "gold"), name, f"gold {metrics[0]}"))
    erag = [key for key in point if key[1] == ERAG_QRELS]
    if erag and metrics and "gold" in judgements:  # eRAG's precision (the paper's headline) against gold's first metric
        pairs.append(
            (f"{erag[0][0]} vs {metrics[0]} on gold", erag[0], (metrics[0], "gold"), "the single-document utility (eRAG)",
             f"gold {metrics[0]}")
        )  # fmt: skip
    if erag and signed:
        pairs.append(
            (f"{signed[0][0]} vs {erag[0][0]}", signed[0], erag[0], "the signed utility", "the single-document utility (eRAG)")
        )  # fmt: skip
    out = []
    for label, a, b, a_name, b_name in pairs:
        entry: dict[str, Any] = {"metric": label, "a": a_name, "b": b_name, "qrels_a": a[1], "qrels_b": b[1]}
        for fig in ("tau", "r", "tau_within", "r_centred", "r_lift"):
            if fig not in boot[a] or fig not in boot[b]:
                continue
            diff = boot[a][fig] - boot[b][fig]
            pa, pb = point[a].get(fig), point[b].get(fig)
            entry[f"{fig}_diff"] = None if pa is None or pb is None else pa - pb
            entry[f"{fig}_diff_ci"] = _ci(diff)
        out.append(entry)
    return out


def _verdict(est: float | None, ci: Sequence[float | None]) -> str:
    if est is None or ci[0] is None or ci[1] is None:
        return "undefined"
    if ci[0] > 0:
        return "a"
    if ci[1] < 0:
        return "b"
    return "cannot tell"


def summary_sentence(
    comparisons: Sequence[Mapping[str, Any]],
    n_systems: int,
    n_cases: int,
    keys: Sequence[tuple[str, str, str]] = POOLED_KEYS,
    fair: Sequence[str] | None = None,
) -> str:
    """In words: which qrels predict success on this data and by how much, or that the data cannot tell.

    Decisive comparisons (the interval of the difference excludes 0) are named one by one; the others are counted
    in one clause with the first of them as an example. ``keys``: the figures compared, ``(key, symbol, what it
    tells)`` (default: the pooled τ and r; :data:`FAIR_KEYS`: within questions, on the ``fair`` systems).
    """
    if not comparisons:
        return "No gold and deltap qrels to compare."
    decided, open_, undefined = [], [], []
    for c in comparisons:
        a, b = c.get("a", "deltap's mined qrels"), c.get("b", "the benchmark's gold qrels")
        for key, sym, what in keys:
            if f"{key}_diff" not in c:
                continue
            est, ci = c[f"{key}_diff"], c[f"{key}_diff_ci"]
            v = _verdict(est, ci)
            if v == "undefined":
                undefined.append(f"{c['metric']} ({sym})")
            elif v == "cannot tell":
                open_.append(f"{c['metric']}, {what}: {a} − {b} {sym} {est:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]")
            else:
                better, worse = (a, b) if v == "a" else (b, a)
                decided.append(
                    f"for {c['metric']}, the better predictor of success at {what} is {better}, not {worse} "
                    f"({sym} higher by {abs(est):.2f}, interval of the difference [{ci[0]:+.2f}, {ci[1]:+.2f}])"
                )
    parts = []
    if decided:
        parts.append("; ".join(decided))
    if open_:
        lead = "the data cannot tell" if not decided else "elsewhere the data cannot tell"
        parts.append(
            f"{lead} which qrels predict success better ({len(open_)} comparison(s) whose interval includes 0, e.g. {open_[0]})"
        )
    if undefined:
        where = "over the systems" if fair is None else "within every question"
        parts.append(f"undefined where a metric or the success is constant {where}: {', '.join(undefined)}")
    if not parts:
        return "No gold and deltap qrels to compare."
    text = "; ".join(parts)
    scope = (
        f"Over {n_systems} systems"
        if fair is None
        else f"Within questions, over the {n_systems} fair systems ({', '.join(fair)})"
    )
    return f"{scope} and {n_cases} questions: {text[0].lower()}{text[1:]}."
