"""``evaluate(qrels, run, metrics)``: per-query values, means and bootstrap confidence intervals.

Conventions (all documented in :mod:`deltap.evaluation.ranking`): ranking by descending score then descending doc id
(trec_eval); queries of the qrels are the evaluated set; qrels queries missing from the run and qrels queries
without relevant documents score 0 (``trec_eval -c``) with a warning naming them, or are skipped/refused on request;
run queries without judgements are reported and not evaluated; no common query id at all is an error.

The caller's dicts are never modified.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.errors import DeltapError
from deltap.evaluation._render import latex_escape, to_latex, to_markdown, to_text
from deltap.evaluation.measures import DEFAULT_METRICS, Measure, needs_of, parse_metrics, with_judged
from deltap.evaluation.ranking import (
    MissingPolicy,
    QrelsColumns,
    Ranking,
    align_queries,
    rank_from_dicts,
    validate_qrels,
)
from deltap.evaluation.settings import EvaluationSettings, merge_settings
from deltap.frames import is_dataframe, qrels_from_dataframe

if TYPE_CHECKING:
    from deltap.judgements import SignedGains

__all__ = ["EvalResult", "QrelsLike", "RunLike", "evaluate", "load_qrels_like", "load_run_like", "resolve_gains"]

QrelsLike = Mapping[str, Mapping[str, int]] | str | Path
RunLike = Mapping[str, Mapping[str, float]] | str | Path
Coalitions = Mapping[str, Sequence[Collection[str]]]


def load_qrels_like(qrels: QrelsLike) -> Mapping[str, Mapping[str, int]]:
    """Qrels dict as given, or loaded from a path with :func:`deltap.judgements.load_qrels` (any supported format)."""
    if is_dataframe(qrels):
        return qrels_from_dataframe(qrels)
    if isinstance(qrels, str | Path):
        from deltap.evaluation.trec_fast import read_qrels_fast
        from deltap.judgements import load_qrels

        fast = read_qrels_fast(qrels)
        return fast if fast is not None else load_qrels(qrels)
    return qrels


def load_run_like(run: RunLike) -> Mapping[str, Mapping[str, float]]:
    """Run dict as given, or loaded from a TREC run / JSON file or a DataFrame with :func:`deltap.qrels.load_run`."""
    if isinstance(run, str | Path) or is_dataframe(run):
        from deltap.qrels import load_run

        return load_run(run)
    return run


def _open_run(run: RunLike) -> Any:
    """A run dict, or for TREC run files the columnar :class:`~deltap.evaluation.trec_fast.RunArrays` (fast path,
    when pyarrow is installed and the file is clean; otherwise the exact reader, which names any bad line)."""
    if isinstance(run, str | Path) and Path(run).suffix.lower() != ".json" and Path(run).is_file():
        from deltap.evaluation.trec_fast import read_run_arrays

        arrays = read_run_arrays(run)
        if arrays is not None:
            return arrays
    return load_run_like(run)


def _load_inputs(qrels: QrelsLike, run: RunLike) -> tuple[Mapping[str, Mapping[str, int]], QrelsColumns | None, Any]:
    """The qrels (validated, and as :class:`QrelsColumns` when its rows are dicts) and the opened run
    (:func:`_open_run`).

    A run file is read in a background thread while this one reads and checks the qrels: pyarrow's parser and the
    numpy work on the run's columns release the GIL, so the two overlap on a second core. Errors come in the same order
    as reading one after the other (the qrels' first).
    """

    def read_qrels() -> tuple[Mapping[str, Mapping[str, int]], QrelsColumns | None]:
        qrels_d = load_qrels_like(qrels)
        columns = QrelsColumns.of(qrels_d)
        validate_qrels(qrels_d, columns=columns)
        return qrels_d, columns

    if not isinstance(run, str | Path):
        return (*read_qrels(), _open_run(run))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltap-read-run")
    try:
        pending = pool.submit(_open_run, run)
        return (*read_qrels(), pending.result())
    finally:  # on an error or Ctrl-C here, a read still running finishes on its own; nothing waits for it
        pool.shutdown(wait=False, cancel_futures=True)


def _rank(
    qrels: Mapping[str, Mapping[str, int]],
    run: Any,
    query_ids: Sequence[str],
    coalitions: Coalitions | None,
    name: str,
    gains: SignedGains | None = None,
    judged: bool = False,
    columns: QrelsColumns | None = None,
) -> Ranking:
    from deltap.evaluation.trec_fast import RunArrays, rank_from_arrays

    kw: dict[str, Any] = {"coalitions": coalitions, "gains": gains, "judged": judged, "columns": columns}
    if isinstance(run, RunArrays):
        return rank_from_arrays(qrels, run, query_ids, **kw)
    return rank_from_dicts(qrels, run, query_ids, run_name=name, **kw)


def resolve_gains(
    measures: Sequence[Measure], qrels: QrelsLike, gains: SignedGains | Mapping[str, Mapping[str, float]] | None
) -> tuple[SignedGains | None, list[str]]:
    """The signed gains the measures need (``None`` when none needs them), and notes about them.

    Gains given are used as they are; otherwise, when ``qrels`` is a path to a deltap verified dataset, its gains.

    Raises:
        DeltapError: a measure needs gains and none can be found (TREC/BEIR qrels cannot carry negative grades).
    """
    if "gains" not in needs_of(measures):
        return None, []
    if gains is None and isinstance(qrels, str | Path) and Path(qrels).is_file():
        from deltap.judgements import detect_qrels_format, load_judgements

        if detect_qrels_format(qrels) == "dataset":
            gains = load_judgements(qrels).gains
    if gains is None:
        asked = ", ".join(str(m) for m in measures if "gains" in m.metric.needs)
        raise DeltapError(
            f"{asked} needs signed gains (a relevant document's ΔP, a harmful one's −|ΔP|): give a deltap "
            "retrieval_dataset.yaml as the qrels (TREC and BEIR qrels cannot carry negative grades), or pass gains="
        )
    from deltap.judgements import SignedGains

    resolved = SignedGains.of(gains)
    notes = []
    if resolved.unknown:
        shown = ", ".join(f"{q}/{d}" for q, d in resolved.unknown[:5])
        notes.append(
            f"{len(resolved.unknown)} relevant or harmful documents have no delta_p and count 0 in signed_utility: "
            f"{shown}{' ...' if len(resolved.unknown) > 5 else ''}"
        )
    return resolved, notes


@dataclass(frozen=True)
class EvalResult:
    """Per-query values and their means with bootstrap confidence intervals, for one run.

    Attributes:
        run_name: Name of the evaluated run.
        measures: The measures, in column order.
        query_ids: The evaluated queries, in row order.
        values: ``(queries, measures)`` per-query values.
        ci: ``(measures, 2)`` bootstrap interval of each mean (NaN when disabled).
        confidence: Coverage of ``ci``.
        n_resamples: Bootstrap resamples used (0 = no intervals).
        seed: Seed of the bootstrap.
        notes: Warnings raised while aligning qrels and run (missing queries, queries without relevant docs, ...).
    """

    run_name: str
    measures: tuple[Measure, ...]
    query_ids: tuple[str, ...]
    values: np.ndarray
    ci: np.ndarray
    confidence: float
    n_resamples: int
    seed: int
    notes: tuple[str, ...] = ()

    def _col(self, measure: str | Measure) -> int:
        m = parse_metrics(measure)[0]
        try:
            return self.measures.index(m)
        except ValueError:
            raise KeyError(f"{m} was not computed; computed: {', '.join(map(str, self.measures))}") from None

    def __getitem__(self, measure: str | Measure) -> np.ndarray:
        """Per-query values of one measure (a read-only view)."""
        view = self.values[:, self._col(measure)]
        view.flags.writeable = False
        return view

    @property
    def means(self) -> dict[str, float]:
        """``{measure: mean over queries}`` (NaN when no query was evaluated)."""
        if len(self.query_ids) == 0:
            return {str(m): math.nan for m in self.measures}
        return {str(m): float(v) for m, v in zip(self.measures, self.values.mean(axis=0), strict=True)}

    def mean(self, measure: str | Measure) -> float:
        """Mean of one measure over the evaluated queries."""
        return self.means[str(self.measures[self._col(measure)])]

    def per_query(self) -> dict[str, dict[str, float]]:
        """``{query_id: {measure: value}}``, the shape pytrec_eval returns."""
        names = [str(m) for m in self.measures]
        return {
            q: dict(zip(names, map(float, row), strict=True))
            for q, row in zip(self.query_ids, self.values, strict=True)
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict: means, intervals, per-query values, settings, notes."""
        return {
            "run": self.run_name,
            "n_queries": len(self.query_ids),
            "measures": [str(m) for m in self.measures],
            "means": self.means,
            "ci": {
                str(m): None if np.isnan(lo) else [float(lo), float(hi)]
                for m, (lo, hi) in zip(self.measures, self.ci, strict=True)
            },
            "confidence": self.confidence,
            "bootstrap": {"n_resamples": self.n_resamples, "seed": self.seed, "method": "percentile"},
            "per_query": self.per_query(),
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def write_into(self, run_dir: str | Path, run: Mapping[str, Mapping[str, float]] | None = None) -> Path:
        """Save this evaluation into a mined run directory (``deltap evaluate --into RUN_DIR``):
        ``evaluation/compare.json`` (a comparison of this one system: means and intervals) and, when given, ``run``
        as ``evaluation/runs/<name>.trec``; ``deltap report RUN_DIR`` then shows it. Returns ``compare.json``.

        Raises:
            DeltapError: ``run_dir`` is not a mined run directory.
        """
        from deltap.run_layout import RunDir

        d = self.to_dict()
        record = {"baseline": self.run_name, "measures": d["measures"], "confidence": self.confidence,
                  "systems": {self.run_name: {"means": d["means"], "ci": d["ci"]}}, "notes": d["notes"]}  # fmt: skip
        runs = {self.run_name: run} if run is not None else None
        return RunDir(run_dir).require_mined().write_comparison(record, runs)

    def _rows(self, fmt: str = "{:.4f}") -> tuple[list[str], list[list[str]]]:
        pct = f"{self.confidence:.0%} CI"
        header = ["measure", "mean", pct]
        rows = []
        for m, mean, (lo, hi) in zip(self.measures, self.means.values(), self.ci, strict=True):
            ci = "—" if np.isnan(lo) else f"[{fmt.format(lo)}, {fmt.format(hi)}]"
            rows.append([str(m), fmt.format(mean), ci])
        return header, rows

    def headline(self) -> list[str]:
        """The answer first, for one run: its first measure's mean and interval over the questions, then the scoring
        rule (the one :meth:`deltap.evaluation.Comparison.headline` states)."""
        from deltap.evaluation.ranking import EMPTY_QUERY_RULE

        n = len(self.query_ids)
        if not n or not self.measures:
            return [f"{self.run_name}: no question scored ({EMPTY_QUERY_RULE})."]
        lo, hi = self.ci[0]
        ci = "" if np.isnan(lo) else f" ({self.confidence:.0%} interval {lo:.3f}-{hi:.3f})"
        first = f"{self.run_name}: {self.measures[0]} {self.values[:, 0].mean():.3f}{ci} over {n} questions."
        return [first, f"Scoring rule: {EMPTY_QUERY_RULE}."]

    def to_table(self) -> str:
        """Aligned text: one row per measure with mean and confidence interval, the notes, then the headline."""
        header, rows = self._rows()
        title = f"{self.run_name}: {len(self.query_ids)} queries"
        notes = "".join(f"\nnote: {n}" for n in self.notes)
        return f"{title}\n{to_text(header, rows)}{notes}\n\n" + "\n".join(self.headline())

    def to_markdown(self) -> str:
        header, rows = self._rows()
        return to_markdown(header, rows) + "\n\n" + " ".join(self.headline())

    def to_latex(self) -> str:
        header, rows = self._rows()
        rows = [[latex_escape(c) for c in r] for r in rows]
        caption = latex_escape(f"{self.run_name}: {len(self.query_ids)} queries")
        return to_latex([latex_escape(h) for h in header], rows, caption=caption)

    def per_query_tsv(self) -> str:
        """The per-query table as TSV (``query_id`` then one column per measure)."""
        lines = ["query_id\t" + "\t".join(str(m) for m in self.measures)]
        lines += [
            q + "\t" + "\t".join(repr(float(v)) for v in row)
            for q, row in zip(self.query_ids, self.values, strict=True)
        ]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_table()


def compute_values(ranking: Ranking, measures: Sequence[Measure]) -> np.ndarray:
    """``(queries, measures)`` matrix of per-query values."""
    out = np.empty((ranking.n_queries, len(measures)))
    for j, m in enumerate(measures):
        out[:, j] = m.compute(ranking)
    return out


def evaluate(
    qrels: QrelsLike,
    run: RunLike,
    metrics: str | Measure | Iterable[str | Measure] = DEFAULT_METRICS,
    *,
    coalitions: Coalitions | None = None,
    gains: SignedGains | Mapping[str, Mapping[str, float]] | None = None,
    on_missing: MissingPolicy = EvaluationSettings.on_missing,
    on_empty: MissingPolicy = EvaluationSettings.on_empty,
    confidence: float = EvaluationSettings.confidence,
    n_resamples: int = EvaluationSettings.n_resamples,
    seed: int = EvaluationSettings.seed,
    run_name: str | None = None,
    settings: EvaluationSettings | None = None,
) -> EvalResult:
    """Evaluate one run against qrels: per-query values, means, bootstrap confidence intervals.

    Args:
        qrels: ``{query_id: {doc_id: grade}}`` (integer grades >= 0), or a path to qrels in any format
            :func:`deltap.judgements.load_qrels` reads (BEIR TSV or folder, TREC, JSONL, deltap dataset YAML).
        run: ``{query_id: {doc_id: score}}`` (finite scores, higher = better), or a TREC run / JSON file.
        metrics: Measure strings (``"ndcg@10"``, ``"P@5"``, ``"MRR"``...) or :class:`Measure` objects, a list or
            a comma-separated string.
        coalitions: ``{query_id: [set_of_doc_ids, ...]}`` winning coalitions for ``set_recall@K``.
        gains: Signed gains for ``signed_utility@K``: a :class:`deltap.judgements.SignedGains` (with coalition
            values) or ``{query_id: {doc_id: gain}}``; by default, those of ``qrels`` when it is a deltap verified
            dataset (``retrieval_dataset.yaml``). ``judged@K`` is added after each ``signed_utility@K``.
        on_missing: Qrels queries absent from the run: ``zero`` (default, warn), ``skip`` (warn) or ``error``.
        on_empty: Qrels queries with no relevant document: ``zero`` (default, as trec_eval; warn), ``skip`` or
            ``error``.
        confidence: Coverage of the bootstrap intervals.
        n_resamples: Bootstrap resamples; 0 disables the intervals.
        seed: Seed of the bootstrap.
        run_name: Name shown in messages and tables (default: the file name, or ``run``).
        settings: ``metrics``, ``on_missing``, ``on_empty``, ``confidence``, ``n_resamples`` and ``seed`` as one
            :class:`~deltap.evaluation.settings.EvaluationSettings` (instead of those keywords).

    Returns:
        An :class:`EvalResult`.

    Raises:
        DeltapError: ids that are not strings, bad grades or scores (naming the entries), unknown metrics, no query
            id in common, a policy set to ``error`` that applies, or a settings object given together with one of
            its keywords.
    """
    settings = merge_settings(
        settings, EvaluationSettings, "evaluate", metrics=metrics, on_missing=on_missing, on_empty=on_empty,
        confidence=confidence, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    on_missing, on_empty, confidence = settings.on_missing, settings.on_empty, settings.confidence
    n_resamples, seed = settings.n_resamples, settings.seed
    name = run_name or (Path(run).name if isinstance(run, str | Path) else "run")
    measures = with_judged(parse_metrics(settings.metrics))
    signed, gain_notes = resolve_gains(measures, qrels, gains)
    qrels_d, columns, run_d = _load_inputs(qrels, run)
    query_ids, notes = align_queries(
        qrels_d,
        run_d.keys(),
        on_missing=on_missing,
        on_empty=on_empty,
        run_name=name,
        min_grade=min(m.rel for m in measures),
        signed=signed is not None,
        columns=columns,
    )
    notes = notes + gain_notes
    judged = "judged" in needs_of(measures)
    ranking = _rank(qrels_d, run_d, query_ids, coalitions, name, signed, judged, columns)
    values = compute_values(ranking, measures)
    if n_resamples > 0:  # scipy.stats (~0.6 s to import) only when intervals are asked for
        from deltap.evaluation.stats import bootstrap_ci

        ci = bootstrap_ci(values, n_resamples=n_resamples, confidence=confidence, seed=seed)
    else:
        ci = np.full((len(measures), 2), np.nan)
    return EvalResult(
        run_name=name,
        measures=tuple(measures),
        query_ids=tuple(query_ids),
        values=values,
        ci=np.atleast_2d(ci),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        notes=tuple(notes),
    )
