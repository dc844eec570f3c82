"""``compare(qrels, runs, metrics, baseline=...)``: several runs side by side, with paired significance tests.

Every run is scored on the same queries (the qrels queries; with ``on_missing="skip"`` the queries every run
answers), so per-query values pair up. Against the baseline, each (system, metric) gets a paired t-test and a Fisher
randomization test (seeded); the p-values of each test are Holm-corrected across all systems × metrics (one family
per test), and the chosen ``test`` decides the significance marks. Win/tie/loss counts compare per-query values
(ties within 1e-12).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deltap.errors import DeltapError
from deltap.evaluation._render import latex_escape, to_latex, to_markdown, to_text
from deltap.evaluation.headline import Contrast
from deltap.evaluation.measures import DEFAULT_METRICS, Measure, needs_of, parse_metrics, with_judged
from deltap.evaluation.ranking import EvaluationWarning, MissingPolicy, align_queries, validate_qrels
from deltap.evaluation.scores import (
    EvalResult,
    QrelsLike,
    RunLike,
    _open_run,
    _rank,
    compute_values,
    evaluate,
    load_qrels_like,
    resolve_gains,
)
from deltap.evaluation.settings import ComparisonSettings, EvaluationSettings, TestName, merge_settings
from deltap.evaluation.stats import bootstrap_ci, holm, paired_t_test, randomization_test
from deltap.judgements import Judgements, SignedGains

__all__ = ["Comparison", "compare", "score_runs"]

_TIE_TOL = 1e-12


@dataclass(frozen=True)
class Comparison:
    """Comparison of several runs against a baseline.

    Attributes:
        systems: Run names; the baseline is one of them.
        baseline: Name of the baseline run.
        measures: Measures in column order.
        results: Per-system :class:`EvalResult` (per-query values, means, bootstrap intervals).
        p_t: ``{system: (measures,)}`` raw paired t-test p-values (baseline absent).
        p_fisher: Same for the Fisher randomization test.
        p_t_holm: Holm-adjusted ``p_t`` (family = all systems × measures).
        p_fisher_holm: Holm-adjusted ``p_fisher``.
        wins, ties, losses: ``{system: (measures,)}`` per-query counts against the baseline.
        test: Which test marks significance (``fisher`` or ``t``).
        alpha: Significance level applied to the Holm-adjusted p-values.
        n_permutations: Random sign assignments of the Fisher test.
        seed: Seed of the bootstrap and the randomization test.
        notes: Alignment warnings per system.
    """

    systems: tuple[str, ...]
    baseline: str
    measures: tuple[Measure, ...]
    results: Mapping[str, EvalResult]
    p_t: Mapping[str, np.ndarray]
    p_fisher: Mapping[str, np.ndarray]
    p_t_holm: Mapping[str, np.ndarray]
    p_fisher_holm: Mapping[str, np.ndarray]
    wins: Mapping[str, np.ndarray]
    ties: Mapping[str, np.ndarray]
    losses: Mapping[str, np.ndarray]
    test: TestName = "fisher"
    alpha: float = 0.05
    n_permutations: int = 10_000
    seed: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def query_ids(self) -> tuple[str, ...]:
        return self.results[self.baseline].query_ids

    def p_value(self, system: str, measure: str | Measure, adjusted: bool = True) -> float:
        """The p-value of the chosen test for ``system`` vs the baseline on ``measure``."""
        j = self.measures.index(parse_metrics(measure)[0])
        table = (
            (self.p_fisher_holm if adjusted else self.p_fisher)
            if self.test == "fisher"
            else (self.p_t_holm if adjusted else self.p_t)
        )
        return float(table[system][j])

    def significant(self, system: str, measure: str | Measure) -> bool:
        """Whether ``system`` differs from the baseline on ``measure`` (Holm-adjusted p <= alpha)."""
        return system != self.baseline and self.p_value(system, measure) <= self.alpha

    def _mark(self, system: str, j: int) -> str:
        if system == self.baseline:
            return ""
        p = (self.p_fisher_holm if self.test == "fisher" else self.p_t_holm)[system][j]
        if p > self.alpha:
            return ""
        delta = self.results[system].values[:, j].mean() - self.results[self.baseline].values[:, j].mean()
        return "▲" if delta > 0 else "▼"

    def _test_description(self) -> str:
        n_tests = (len(self.systems) - 1) * len(self.measures)
        name = (
            f"Fisher randomization test ({self.n_permutations} permutations)"
            if self.test == "fisher"
            else "paired t-test"
        )
        return (
            f"▲/▼: significantly better/worse than {self.baseline} by the {name}, Holm-corrected over "
            f"{n_tests} tests (systems × metrics), α = {self.alpha}; seed {self.seed}"
        )

    def _means_rows(self, ascii_marks: bool = False) -> tuple[list[str], list[list[str]]]:
        header = ["system", *[str(m) for m in self.measures]]
        rows = []
        for s in self.systems:
            r = self.results[s]
            cells = [s + (" (baseline)" if s == self.baseline else "")]
            for j, mean in enumerate(r.values.mean(axis=0) if len(r.query_ids) else [math.nan] * len(self.measures)):
                lo, hi = r.ci[j]
                mark = self._mark(s, j)
                if ascii_marks:
                    mark = {"▲": "+", "▼": "-"}.get(mark, "")
                ci = "" if np.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
                cells.append(f"{mean:.4f}{ci}{(' ' + mark) if mark else ''}")
            rows.append(cells)
        return header, rows

    def _test_rows(self) -> tuple[list[str], list[list[str]]]:
        header = [
            "system",
            "metric",
            "Δ mean",
            "p (t)",
            "p (t, Holm)",
            "p (Fisher)",
            "p (Fisher, Holm)",
            "win/tie/loss",
        ]
        rows = []
        base = self.results[self.baseline]
        for s in self.systems:
            if s == self.baseline:
                continue
            for j, m in enumerate(self.measures):
                delta = (
                    self.results[s].values[:, j].mean() - base.values[:, j].mean() if len(base.query_ids) else math.nan
                )
                rows.append(
                    [
                        s,
                        str(m),
                        f"{delta:+.4f}",
                        f"{self.p_t[s][j]:.4g}",
                        f"{self.p_t_holm[s][j]:.4g}",
                        f"{self.p_fisher[s][j]:.4g}",
                        f"{self.p_fisher_holm[s][j]:.4g}",
                        f"{self.wins[s][j]}/{self.ties[s][j]}/{self.losses[s][j]}",
                    ]
                )
        return header, rows

    def to_table(self) -> str:
        """Aligned text: means with 95% intervals and marks, then the paired tests, then notes."""
        n = len(self.query_ids)
        header, rows = self._means_rows()
        parts = [
            f"{n} queries; mean [{self._confidence():.0%} bootstrap CI]",
            to_text(header, rows),
            self._test_description(),
        ]
        if len(self.systems) > 1:
            th, tr = self._test_rows()
            parts += ["", f"Paired tests against {self.baseline}:", to_text(th, tr, right=[False, False] + [True] * 6)]
        parts += [f"note: {n}" for n in self.notes]
        parts += ["", *self.headline()]
        return "\n".join(parts)

    def to_compact(self, width: int = 80) -> str:
        """Text for a terminal of ``width`` columns: means with significance marks (the columns split into blocks
        that fit), then one line per paired test with the chosen test's Holm-adjusted p-value and win/tie/loss. The
        intervals and both tests' raw p-values are in :meth:`to_table` (``--format wide``)."""
        import textwrap

        n = len(self.query_ids)
        name = (
            f"Fisher randomization test ({self.n_permutations} permutations)"
            if self.test == "fisher"
            else "paired t-test"
        )
        head = (
            f"{n} queries; mean per metric. ▲/▼ = significantly better/worse than {self.baseline} ({name}, Holm over "
            f"{(len(self.systems) - 1) * len(self.measures)} tests, α = {self.alpha}). Intervals: --format wide."
        )
        parts = [textwrap.fill(head, width)]
        names = [s + (" (baseline)" if s == self.baseline else "") for s in self.systems]
        means = {
            s: self.results[s].values.mean(axis=0) if len(self.query_ids) else [math.nan] * len(self.measures)
            for s in self.systems
        }
        label_w = max(len(x) for x in [*names, "system"])
        blocks: list[list[int]] = [[]]
        used = label_w
        for j, m in enumerate(self.measures):
            col = max(len(str(m)), 7) + 2
            if blocks[-1] and used + col > width:
                blocks.append([])
                used = label_w
            blocks[-1].append(j)
            used += col
        for block in blocks:
            header = ["system", *[str(self.measures[j]) for j in block]]
            rows = [
                [label, *[f"{means[s][j]:.4f}{self._mark(s, j) or ' '}" for j in block]]
                for s, label in zip(self.systems, names, strict=True)
            ]
            parts += ["", to_text(header, rows)]
        if len(self.systems) > 1:
            p_holm = self.p_fisher_holm if self.test == "fisher" else self.p_t_holm
            header = [f"vs {self.baseline}", "metric", "Δ mean", "p (Holm)", "W/T/L"]
            rows = []
            base = self.results[self.baseline]
            for s in self.systems:
                if s == self.baseline:
                    continue
                for j, m in enumerate(self.measures):
                    delta = (
                        self.results[s].values[:, j].mean() - base.values[:, j].mean()
                        if len(base.query_ids)
                        else math.nan
                    )
                    rows.append(
                        [
                            s,
                            str(m),
                            f"{delta:+.4f}",
                            f"{p_holm[s][j]:.3g}",
                            f"{self.wins[s][j]}/{self.ties[s][j]}/{self.losses[s][j]}",
                        ]
                    )
            parts += ["", to_text(header, rows, right=[False, False, True, True, True])]
        parts += [textwrap.fill(f"note: {x}", width, subsequent_indent="  ") for x in self.notes]
        parts += ["", *(textwrap.fill(line, width) for line in self.headline())]
        return "\n".join(parts)

    def _confidence(self) -> float:
        return self.results[self.baseline].confidence

    def headline(self, measure: str | Measure | None = None) -> list[str]:
        """The answer first (:func:`deltap.evaluation.headline.headline`) on ``measure`` (default: the first metric
        whose means differ between the runs): which
        run is best, whether the paired test (the one that marks significance, Holm-corrected) shows it better, and
        how many questions would settle the difference between the first two; then the scoring rule."""
        from deltap.evaluation.headline import headline
        from deltap.evaluation.ranking import EMPTY_QUERY_RULE

        n = len(self.query_ids)
        if not n:
            return [f"No question to compare on ({EMPTY_QUERY_RULE})."]
        if measure is not None:
            j = self.measures.index(parse_metrics(measure)[0])
        else:  # the first metric that tells the runs apart (all tie on it: the first)
            spread = [
                np.ptp([self.results[s].values[:, i].mean() for s in self.systems]) for i in range(len(self.measures))
            ]
            j = next((i for i, x in enumerate(spread) if x > 1e-12), 0)
        values = {s: self.results[s].values[:, j] for s in self.systems}
        means = {s: float(v.mean()) for s, v in values.items()}
        contrasts = [
            Contrast(a, b, means[a] - means[b], self.p_value(a, self.measures[j]) if b == self.baseline else None,
                     _sd(values[a] - values[b]))
            for a in self.systems for b in self.systems if a != b and a != self.baseline
        ]  # fmt: skip
        test = "Fisher randomization test" if self.test == "fisher" else "paired t-test"
        lines = headline(
            str(self.measures[j]), n, means, contrasts, alpha=self.alpha, test=f"{test} against {self.baseline}, Holm"
        )
        return [*lines, f"Scoring rule: {EMPTY_QUERY_RULE}."]

    def to_markdown(self) -> str:
        header, rows = self._means_rows()
        parts = [to_markdown(header, rows), "", self._test_description()]
        if len(self.systems) > 1:
            th, tr = self._test_rows()
            parts += ["", to_markdown(th, tr, right=[False, False] + [True] * 6)]
        parts += ["", " ".join(self.headline())]
        return "\n".join(parts)

    def to_latex(self) -> str:
        """A booktabs table of the means; the best mean per column in bold; † marks significance vs the baseline."""
        header = ["System", *[latex_escape(str(m)) for m in self.measures]]
        means = np.array([self.results[s].values.mean(axis=0) for s in self.systems]) if len(self.query_ids) else None
        rows = []
        for i, s in enumerate(self.systems):
            cells = [latex_escape(s)]
            for j in range(len(self.measures)):
                if means is None:
                    cells.append("--")
                    continue
                text = f"{means[i, j]:.4f}"
                if means[i, j] == means[:, j].max():
                    text = r"\textbf{" + text + "}"
                mark = self._mark(s, j)
                if mark:
                    text += r"$^{\dagger}$" if mark == "▲" else r"$^{\ddagger}$"
                cells.append(text)
            rows.append(cells)
        caption = (
            latex_escape(
                f"{len(self.query_ids)} queries. Baseline: {self.baseline}. "
                f"† / ‡: significantly better / worse than the baseline "
                f"({'Fisher randomization' if self.test == 'fisher' else 'paired t'} test, Holm-corrected, alpha = {self.alpha})."
            )
            .replace("†", r"$^{\dagger}$")
            .replace("‡", r"$^{\ddagger}$")
        )
        return to_latex(header, rows, caption=caption, label="tab:deltap-compare")

    def write_into(
        self, run_dir: str | Path, runs: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None
    ) -> Path:
        """Save this comparison into a mined run directory (``deltap compare/evaluate --into RUN_DIR``):
        ``evaluation/compare.json`` (:meth:`to_dict`) and ``runs`` as ``evaluation/runs/<name>.trec``; ``deltap report
        RUN_DIR`` then shows them. Returns ``compare.json``.

        Raises:
            DeltapError: ``run_dir`` is not a mined run directory.
        """
        from deltap.run_layout import RunDir

        return RunDir(run_dir).require_mined().write_comparison(self.to_dict(), runs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: settings, per-system means/intervals, tests, win/tie/loss (no per-query values)."""

        def floats(a: np.ndarray) -> list[float | None]:
            return [None if math.isnan(x) else float(x) for x in a]

        systems: dict[str, Any] = {}
        for s in self.systems:
            r = self.results[s]
            entry: dict[str, Any] = {"means": r.means, "ci": r.to_dict()["ci"]}
            if s != self.baseline:
                entry["tests"] = {
                    str(m): {
                        "delta": float(r.values[:, j].mean() - self.results[self.baseline].values[:, j].mean())
                        if len(r.query_ids)
                        else None,
                        "p_t": floats(self.p_t[s])[j],
                        "p_t_holm": floats(self.p_t_holm[s])[j],
                        "p_fisher": floats(self.p_fisher[s])[j],
                        "p_fisher_holm": floats(self.p_fisher_holm[s])[j],
                        "sd_delta": _sd(r.values[:, j] - self.results[self.baseline].values[:, j]),
                        "significant": self.significant(s, m),
                        "wins": int(self.wins[s][j]),
                        "ties": int(self.ties[s][j]),
                        "losses": int(self.losses[s][j]),
                    }
                    for j, m in enumerate(self.measures)
                }
            systems[s] = entry
        return {
            "baseline": self.baseline,
            "n_queries": len(self.query_ids),
            "measures": [str(m) for m in self.measures],
            "test": self.test,
            "alpha": self.alpha,
            "correction": "holm",
            "n_permutations": self.n_permutations,
            "seed": self.seed,
            "confidence": self._confidence(),
            "systems": systems,
            "notes": list(self.notes),
            "headline": self.headline(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def __str__(self) -> str:
        return self.to_table()


def _sd(diffs: np.ndarray) -> float | None:
    """Sample standard deviation of per-question differences (``None`` with fewer than two)."""
    return float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None


def compare(
    qrels: QrelsLike,
    runs: Mapping[str, RunLike] | Sequence[RunLike],
    metrics: str | Measure | Iterable[str | Measure] = DEFAULT_METRICS,
    *,
    baseline: str | None = ComparisonSettings.baseline,
    test: TestName = ComparisonSettings.test,
    alpha: float = ComparisonSettings.alpha,
    coalitions: Mapping[str, Sequence[Collection[str]]] | None = None,
    gains: SignedGains | Mapping[str, Mapping[str, float]] | None = None,
    on_missing: MissingPolicy = EvaluationSettings.on_missing,
    on_empty: MissingPolicy = EvaluationSettings.on_empty,
    confidence: float = EvaluationSettings.confidence,
    n_resamples: int = EvaluationSettings.n_resamples,
    n_permutations: int = ComparisonSettings.n_permutations,
    seed: int = EvaluationSettings.seed,
    settings: EvaluationSettings | None = None,
    comparison: ComparisonSettings | None = None,
) -> Comparison:
    """Compare runs against a baseline on the same queries.

    The options come either as keywords or as settings objects (``settings=`` for ``metrics``, ``on_missing``,
    ``on_empty``, ``confidence``, ``n_resamples`` and ``seed``; ``comparison=`` for ``baseline``, ``test``,
    ``alpha`` and ``n_permutations``), as ``deltap compare`` passes them.

    Args:
        qrels: Qrels dict or file (see :func:`deltap.evaluate`).
        runs: ``{name: run}`` (dicts or files); a list of files is named by file name.
        metrics: Measures, as for :func:`deltap.evaluate`.
        baseline: Name of the baseline run (default: the first).
        test: Which test marks significance: ``fisher`` (randomization, the default; Smucker et al. 2007
            recommend it) or ``t`` (paired t-test). Both are always computed and reported.
        alpha: Significance level for the Holm-adjusted p-values.
        coalitions: Winning coalitions for ``set_recall@K``.
        gains: Signed gains for ``signed_utility@K`` (see :func:`deltap.evaluate`).
        on_missing: See :func:`deltap.evaluate`. With ``skip``, only queries every run answers are compared.
        on_empty: See :func:`deltap.evaluate`.
        confidence: Coverage of the bootstrap intervals.
        n_resamples: Bootstrap resamples (0 = no intervals).
        n_permutations: Random sign assignments of the randomization test.
        seed: Seed for the bootstrap and the randomization test; the same seed gives the same report.
        settings: The scoring options as one :class:`~deltap.evaluation.settings.EvaluationSettings` (instead of the
            keywords it holds).
        comparison: The test options as one :class:`~deltap.evaluation.settings.ComparisonSettings` (instead of the
            keywords it holds).

    Raises:
        DeltapError: fewer than one run, unknown baseline, duplicate names, a settings object given together with
            one of its keywords, or any error of :func:`deltap.evaluate`.
    """
    settings = merge_settings(
        settings, EvaluationSettings, "compare", metrics=metrics, on_missing=on_missing, on_empty=on_empty,
        confidence=confidence, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    comparison = merge_settings(
        comparison, ComparisonSettings, "compare", baseline=baseline, test=test, alpha=alpha,
        n_permutations=n_permutations,
    )  # fmt: skip
    if comparison.test not in ("fisher", "t"):
        raise DeltapError(f"test must be 'fisher' or 't', got {comparison.test!r}")
    named = _named_runs(runs)
    systems = tuple(named)
    base = comparison.baseline if comparison.baseline is not None else systems[0]
    if base not in named:
        raise DeltapError(f"baseline {base!r} is not one of the runs: {', '.join(systems)}")

    measures = with_judged(parse_metrics(settings.metrics))
    signed, gain_notes = resolve_gains(measures, qrels, gains)
    judged = "judged" in needs_of(measures)
    qrels_d = load_qrels_like(qrels)
    validate_qrels(qrels_d)
    run_d = {s: _open_run(r) for s, r in named.items()}
    query_ids, system_notes, notes = _common_queries(qrels_d, run_d, measures, settings, signed is not None)
    notes += gain_notes

    results: dict[str, EvalResult] = {}
    for s, r in run_d.items():
        ranking = _rank(qrels_d, r, query_ids, coalitions, s, signed, judged)
        values = compute_values(ranking, measures)
        ci = (
            np.atleast_2d(
                bootstrap_ci(
                    values, n_resamples=settings.n_resamples, confidence=settings.confidence, seed=settings.seed
                )
            )
            if settings.n_resamples > 0
            else np.full((len(measures), 2), np.nan)
        )
        results[s] = EvalResult(
            s, tuple(measures), tuple(query_ids), values, ci, settings.confidence, settings.n_resamples,
            settings.seed, tuple(system_notes[s]),
        )  # fmt: skip
    return _paired_tests(results, base, tuple(measures), comparison, settings.seed, notes)


def _named_runs(runs: Mapping[str, RunLike] | Sequence[RunLike]) -> dict[str, RunLike]:
    """``{name: run}``: a mapping as given, a list of files named by file name (``run1``, ... for dicts)."""
    if isinstance(runs, Mapping):
        named = dict(runs)
    else:
        from pathlib import Path

        names = [Path(r).name if isinstance(r, str | Path) else f"run{i + 1}" for i, r in enumerate(runs)]
        if len(set(names)) != len(names):
            raise DeltapError(f"runs need distinct names, got {names}; pass a dict {{name: run}}")
        named = dict(zip(names, runs, strict=True))
    if not named:
        raise DeltapError("compare needs at least one run")
    return named


def _common_queries(
    qrels_d: Mapping[str, Mapping[str, int]],
    run_d: Mapping[str, Mapping[str, Mapping[str, float]]],
    measures: Sequence[Measure],
    settings: EvaluationSettings,
    signed: bool,
) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The queries every system is scored on (qrels order), each system's alignment notes, and all the notes."""
    min_grade = min(m.rel for m in measures)
    per_system: dict[str, list[str]] = {}
    system_notes: dict[str, list[str]] = {}
    for s, r in run_d.items():
        per_system[s], system_notes[s] = align_queries(
            qrels_d,
            r.keys(),
            on_missing=settings.on_missing,
            on_empty=settings.on_empty,
            run_name=s,
            min_grade=min_grade,
            signed=signed,
        )
    notes = list(dict.fromkeys(n for s in run_d for n in system_notes[s]))  # a note every run shares: once
    common = set.intersection(*(set(q) for q in per_system.values()))
    query_ids = [q for q in qrels_d if q in common]
    if settings.on_missing == "skip" and any(len(q) != len(query_ids) for q in per_system.values()):
        notes.append(f"compared on the {len(query_ids)} queries every run answers (on_missing='skip')")
    return query_ids, system_notes, notes


def _paired_tests(
    results: dict[str, EvalResult],
    base: str,
    measures: tuple[Measure, ...],
    comparison: ComparisonSettings,
    seed: int,
    notes: list[str],
) -> Comparison:
    """Every system of ``results`` (in its order) against ``base``: paired t and randomization p-values
    (Holm-adjusted per test) and wins/ties/losses over the queries they share."""
    systems = tuple(results)
    n_queries = len(results[base].query_ids)
    others = [s for s in systems if s != base]
    b = results[base].values
    p_t: dict[str, np.ndarray] = {}
    p_f: dict[str, np.ndarray] = {}
    wins: dict[str, np.ndarray] = {}
    ties: dict[str, np.ndarray] = {}
    losses: dict[str, np.ndarray] = {}
    for i, s in enumerate(others):
        v = results[s].values
        p_t[s] = np.array([paired_t_test(v[:, j], b[:, j]) for j in range(len(measures))])
        # One seed per (system, metric) derived from the run seed: any single test can be replayed alone.
        seeds = np.random.SeedSequence([seed, i]).generate_state(len(measures))
        p_f[s] = np.array(
            [
                randomization_test(v[:, j], b[:, j], n_resamples=comparison.n_permutations, seed=int(seeds[j]))
                for j in range(len(measures))
            ]
        )
        diff = v - b
        wins[s] = (diff > _TIE_TOL).sum(axis=0)
        losses[s] = (diff < -_TIE_TOL).sum(axis=0)
        ties[s] = n_queries - wins[s] - losses[s]

    def adjust(raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not others:
            return {}
        flat = holm(np.concatenate([raw[s] for s in others]))
        return {s: flat[i * len(measures) : (i + 1) * len(measures)] for i, s in enumerate(others)}

    return Comparison(
        systems=systems,
        baseline=base,
        measures=measures,
        results=results,
        p_t=p_t,
        p_fisher=p_f,
        p_t_holm=adjust(p_t),
        p_fisher_holm=adjust(p_f),
        wins=wins,
        ties=ties,
        losses=losses,
        test=comparison.test,
        alpha=comparison.alpha,
        n_permutations=comparison.n_permutations,
        seed=seed,
        notes=tuple(notes),
    )


_DEFAULTS = EvaluationSettings()


def score_runs(
    judgements: Judgements,
    runs: Mapping[str, Any],
    settings: EvaluationSettings = _DEFAULTS,
    comparison: ComparisonSettings | None = None,
) -> EvalResult | Comparison:
    """Evaluate the one run of ``runs``, or compare the runs against a baseline (several runs, or ``comparison`` given;
    without ``comparison`` the comparison takes the :class:`~deltap.evaluation.settings.ComparisonSettings` defaults).

    The judgements' coalitions feed ``set_recall@K``, their signed gains ``signed_utility@K``. The evaluation notes (queries missing from a run, queries
    without a relevant document) are in the result's ``notes``, not repeated as warnings.

    Raises:
        DeltapError: no run, or a comparison of fewer than two runs.
    """
    if not runs:
        raise DeltapError(
            "nothing to evaluate: give --run FILE (repeatable) or --retriever bm25,dense,hybrid with --corpus"
        )
    if comparison is not None and len(runs) < 2:
        raise DeltapError("compare needs at least two runs (--run A --run B, or --retriever bm25,dense)")
    parse_metrics(list(settings.metrics))  # an unknown measure fails before any run is read
    common: dict[str, Any] = {"coalitions": judgements.coalitions or None, "gains": judgements.gains}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)  # the notes are part of every rendered output
        if comparison is None and len(runs) == 1:
            name, run = next(iter(runs.items()))
            return evaluate(judgements.qrels, run, run_name=name, settings=settings, **common)
        comparison = comparison or ComparisonSettings()
        return compare(judgements.qrels, dict(runs), settings=settings, comparison=comparison, **common)
