"""Metric validity on the user's data: does a retrieval metric predict end-to-end success?

For each metric on each qrels (the benchmark's gold qrels, deltap's mined qrels), the signed utility when the
evaluation library knows ``signed_utility@K``, and eRAG's single-document utility when measured
(:mod:`deltap.endtoend.single`), two agreements with the measured success of an end-to-end run:

* **across systems** — Kendall's τ-b between the systems' mean metric and their mean success (the question a
  leaderboard asks: does the metric order the systems as success does?);
* **across questions** — Pearson's r between the per-case metric and the per-case success, pooled over systems
  (point-biserial for a binary outcome: does the metric tell which questions a system solves?).

Both come with percentile bootstrap intervals over cases (the same resamples for every metric, so the difference
between two metrics' τ has an interval too). The words say which qrels predict success better on this data and by how
much, or that the intervals cannot tell.

Reference: Salemi & Zamani, "Evaluating Retrieval Quality in Retrieval-Augmented Generation", SIGIR 2024 (Kendall τ
of retrieval metrics with end-to-end performance across systems).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.endtoend.single import ERAG_QRELS
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.endtoend.results import EndToEndResult
    from deltap.endtoend.systems import System

__all__ = ["kendall_tau", "metric_validity", "per_case_metric"]


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
) -> np.ndarray:
    """``(cases, systems)`` per-case values of ``measure`` for the documents in every system's prompt
    (:func:`deltap.endtoend.systems.prompt_metric`; a case without judgements or without a document scores 0,
    trec_eval's rule)."""
    from deltap.endtoend.systems import prompt_metric

    pos = {c: i for i, c in enumerate(case_ids)}
    out = np.zeros((len(case_ids), len(systems)))
    if not isinstance(qrels, str):
        qrels = {q: dict(v) for q, v in qrels.items() if q in pos}
        if not qrels:
            return out
    for j, system in enumerate(systems):
        for q, v in prompt_metric(measure, qrels, system, k).items():
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
) -> dict[str, Any]:
    """The validity table of ``metrics`` on every qrels of ``judgements`` against ``result``'s success.

    Args:
        result: An end-to-end result (its complete cases are used).
        systems: The systems of ``result``, in its order.
        judgements: ``{label: qrels}``, e.g. ``{"gold": ..., "deltap": ...}``.
        metrics: Measure strings (``ndcg@5``, ``hit_rate@5``, ``recall@5``).
        dataset_path: The mined ``retrieval_dataset.yaml``, for ``signed_utility@K`` when the library knows it.
        extra: More per-case metrics ``{label: (cases, systems) array}`` (the simulation's planted utility).
        single_doc: eRAG document labels ``{case_id: {doc_id: label}}`` (:meth:`EndToEndResult.erag_labels`): adds
            the ``erag_precision@K``, ``erag_hit@K`` and ``erag_ndcg@K`` rows (qrels ``single-doc (eRAG)``).
        seed: Bootstrap seed (default: the run's).
        n_resamples: Bootstrap resamples.

    Returns:
        ``{"rows": [...], "comparisons": [...], "summary": str, "notes": [...]}``; each row has ``metric``,
        ``qrels``, ``means`` (per system), ``tau``, ``tau_ci``, ``r``, ``r_ci``.
    """
    names = [s.name for s in systems]
    if names != result.systems:
        raise DeltapError("metric_validity: the systems must be the result's, in its order")
    idx = np.asarray(result.complete, dtype=int)
    success = result.values[idx]
    k = result.k
    notes: list[str] = []
    columns: list[tuple[str, str, np.ndarray]] = []  # (metric, qrels label, per-case values over complete cases)
    for label, qrels in judgements.items():
        for m in metrics:
            columns.append((m, label, per_case_metric(m, qrels, systems, result.case_ids, k)[idx]))
    signed = _signed_measure(k)
    if signed and dataset_path:
        try:
            columns.append(
                (signed, "deltap (signed)", per_case_metric(signed, dataset_path, systems, result.case_ids, k)[idx])
            )
        except (DeltapError, ValueError, KeyError, TypeError) as exc:  # an optional measure: say why, keep the table
            notes.append(f"{signed} not computed: {exc}")
    elif not signed:
        notes.append(f"signed_utility@{k} is not in the evaluation library yet: not in the table")
    else:
        notes.append(f"{signed} needs the mined retrieval_dataset.yaml (no dataset_path given): not in the table")
    if single_doc is not None:
        from deltap.endtoend.single import ERAG_MEASURES, ERAG_QRELS, erag_metric

        for m in ERAG_MEASURES:
            columns.append((f"erag_{m}@{k}", ERAG_QRELS, erag_metric(m, single_doc, systems, result.case_ids, k)[idx]))
    for label, arr in (extra or {}).items():
        columns.append((label, "planted", np.asarray(arr, dtype=float)[idx]))
    rng = np.random.default_rng(result_seed(result, seed))
    n = len(idx)
    boots = rng.integers(0, n, size=(n_resamples, n)) if n else np.zeros((0, 0), dtype=int)
    s_means = np.array([success[b].mean(axis=0) for b in boots]) if n else np.zeros((0, len(names)))
    rows = []
    tau_boot: dict[tuple[str, str], np.ndarray] = {}
    r_boot: dict[tuple[str, str], np.ndarray] = {}
    for metric, label, vals in columns:
        tau = kendall_tau(vals.mean(axis=0), success.mean(axis=0)) if n else math.nan
        tb = np.array([kendall_tau(vals[b].mean(axis=0), sm) for b, sm in zip(boots, s_means, strict=True)])
        r = float(_pearson_rows(vals.ravel()[None, :], success.ravel()[None, :])[0]) if n else math.nan
        rb = (
            _pearson_rows(vals[boots].reshape(len(boots), -1), success[boots].reshape(len(boots), -1))
            if n
            else np.array([])
        )
        tau_boot[(metric, label)], r_boot[(metric, label)] = tb, rb
        rows.append({
            "metric": metric, "qrels": label, "means": {s: float(vals[:, j].mean()) if n else None for j, s in enumerate(names)},
            "tau": _clean(tau), "tau_ci": _ci(tb), "r": _clean(r), "r_ci": _ci(rb),
        })  # fmt: skip
    comparisons = _compare_qrels(metrics, judgements, tau_boot, r_boot, rows)
    return {
        "rows": rows, "comparisons": comparisons, "cases": n, "systems": names, "n_resamples": n_resamples,
        "summary": summary_sentence(comparisons, len(names), n), "notes": notes,
    }  # fmt: skip


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


def _compare_qrels(
    metrics: Sequence[str],
    judgements: Mapping[str, Any],
    tau_boot: Mapping[tuple[str, str], np.ndarray],
    r_boot: Mapping[tuple[str, str], np.ndarray],
    rows: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """``deltap − gold`` for each metric, the signed utility against the first metric on gold, and (when measured)
    eRAG's single-document precision against the first metric on gold and the signed utility against eRAG: the τ and
    r differences with intervals from the shared resamples."""
    point = {(r["metric"], r["qrels"]): r for r in rows}
    pairs = (
        [(m, (m, "deltap"), (m, "gold"), "deltap's mined qrels", "the benchmark's gold qrels") for m in metrics]
        if "gold" in judgements and "deltap" in judgements
        else []
    )
    signed = [key for key in point if key[1] == "deltap (signed)"]
    if signed and metrics and "gold" in judgements:
        pairs.append(
            (
                f"{signed[0][0]} vs {metrics[0]} on gold",
                signed[0],
                (metrics[0], "gold"),
                "the signed utility",
                f"gold {metrics[0]}",
            )
        )
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
        entry: dict[str, Any] = {"metric": label, "a": a_name, "b": b_name}
        for key, boot in (("tau", tau_boot), ("r", r_boot)):
            diff = boot[a] - boot[b]
            est = None if point[a][key] is None or point[b][key] is None else point[a][key] - point[b][key]
            entry[f"{key}_diff"], entry[f"{key}_diff_ci"] = est, _ci(diff)
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


def summary_sentence(comparisons: Sequence[Mapping[str, Any]], n_systems: int, n_cases: int) -> str:
    """In words: which qrels predict success on this data and by how much, or that the data cannot tell.

    Decisive comparisons (the interval of the difference excludes 0) are named one by one; the others are counted
    in one clause with the first of them as an example.
    """
    if not comparisons:
        return "No gold and deltap qrels to compare."
    decided, open_, undefined = [], [], []
    for c in comparisons:
        a, b = c.get("a", "deltap's mined qrels"), c.get("b", "the benchmark's gold qrels")
        for key, what in (("tau", "ranking the systems"), ("r", "telling which questions succeed")):
            est, ci = c[f"{key}_diff"], c[f"{key}_diff_ci"]
            v = _verdict(est, ci)
            sym = "τ" if key == "tau" else "r"
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
        parts.append(f"undefined where a metric or the success is constant over the systems: {', '.join(undefined)}")
    text = "; ".join(parts)
    return f"Over {n_systems} systems and {n_cases} questions: {text[0].lower()}{text[1:]}."
