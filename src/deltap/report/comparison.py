"""Read a saved retriever comparison (``evaluation/compare.json``) into rows the reports can show.

The file is ``deltap.evaluation``'s ``Comparison.to_dict()``. It is read defensively: unknown keys are ignored, and a
shape that cannot be understood gives ``None`` (the report then says the comparison is not available).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deltap.report.run_data import _int, _num

__all__ = ["ComparisonRow", "ComparisonView", "read_comparison"]


@dataclass(frozen=True)
class ComparisonRow:
    """One (system, metric) cell: mean, CI, and the paired test against the baseline."""

    system: str
    metric: str
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None


@dataclass
class ComparisonView:
    """A comparison as tables: systems, metrics, and a row per (system, metric)."""

    systems: list[str]
    metrics: list[str]
    rows: list[ComparisonRow]
    baseline: str | None = None
    test: str | None = None
    correction: str | None = None
    alpha: float | None = None
    n_queries: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def cell(self, system: str, metric: str) -> ComparisonRow | None:
        for row in self.rows:
            if row.system == system and row.metric == metric:
                return row
        return None


def _ci(entry: Mapping[str, Any]) -> tuple[float | None, float | None]:
    for key in ("ci", "confidence_interval", "interval"):
        value = entry.get(key)
        if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
            return _num(value[0]), _num(value[1])
        if isinstance(value, Mapping):
            return _num(value.get("low", value.get("lower"))), _num(value.get("high", value.get("upper")))
    return _num(entry.get("ci_low", entry.get("low"))), _num(entry.get("ci_high", entry.get("high")))


def _row(system: str, metric: str, entry: Any) -> ComparisonRow:
    if not isinstance(entry, Mapping):
        return ComparisonRow(system=system, metric=metric, mean=_num(entry))
    low, high = _ci(entry)
    wtl = entry.get("win_tie_loss") or entry.get("wtl")
    wins = entry.get("wins", entry.get("win"))
    ties = entry.get("ties", entry.get("tie"))
    losses = entry.get("losses", entry.get("loss"))
    if isinstance(wtl, Sequence) and not isinstance(wtl, str) and len(wtl) == 3:
        wins, ties, losses = wtl
    elif isinstance(wtl, Mapping):
        wins, ties, losses = (
            wtl.get("wins", wtl.get("win")),
            wtl.get("ties", wtl.get("tie")),
            wtl.get("losses", wtl.get("loss")),
        )
    p_value = _num(entry.get("p_value_corrected", entry.get("p_adjusted", entry.get("p_value", entry.get("p")))))
    sig = entry.get("significant")
    return ComparisonRow(
        system=system,
        metric=metric,
        mean=_num(entry.get("mean", entry.get("value", entry.get("score")))),
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        significant=bool(sig) if isinstance(sig, bool) else None,
        wins=_int(wins),
        ties=_int(ties),
        losses=_int(losses),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _deltap_rows(systems: Mapping[str, Any], test: str) -> list[ComparisonRow]:
    """Rows of deltap's own ``Comparison.to_dict()``: per system ``means``, ``ci`` and (not for the baseline) ``tests``.

    The p-value shown is the Holm-corrected one of the report's chosen test (``fisher`` or ``t``).
    """
    p_key = "p_t_holm" if test in {"t", "ttest", "t-test", "student"} else "p_fisher_holm"
    rows: list[ComparisonRow] = []
    for system, entry in systems.items():
        if not isinstance(entry, Mapping):
            continue
        means, cis, tests = _mapping(entry.get("means")), _mapping(entry.get("ci")), _mapping(entry.get("tests"))
        for metric, mean in means.items():
            ci = cis.get(metric)
            low, high = (
                (_num(ci[0]), _num(ci[1]))
                if isinstance(ci, Sequence) and not isinstance(ci, str) and len(ci) == 2
                else (None, None)
            )
            t = _mapping(tests.get(metric))
            sig = t.get("significant")
            rows.append(
                ComparisonRow(
                    system=str(system),
                    metric=str(metric),
                    mean=_num(mean),
                    ci_low=low,
                    ci_high=high,
                    p_value=_num(t.get(p_key, t.get("p_value"))),
                    significant=sig if isinstance(sig, bool) else None,
                    wins=None if _num(t.get("wins")) is None else int(t["wins"]),
                    ties=None if _num(t.get("ties")) is None else int(t["ties"]),
                    losses=None if _num(t.get("losses")) is None else int(t["losses"]),
                )
            )
    return rows


def read_comparison(data: Mapping[str, Any] | None) -> ComparisonView | None:
    """Understand a ``Comparison.to_dict()``.

    Accepted shapes: deltap's own ``{"systems": {name: {"means": {metric: v}, "ci": {metric: [lo, hi]},
    "tests": {metric: {"p_fisher_holm", "significant", "wins", ...}}}}}``; ``{"systems": {name: {metric: entry}}}``;
    or ``{"results": [{"system", "metric", ...}]}`` (also under ``rows``), where an entry is a number or a mapping with ``mean``, ``ci`` ([low, high]) or
    ``ci_low``/``ci_high``, ``p_value``, ``significant`` and ``wins``/``ties``/``losses`` (or ``win_tie_loss``).
    Tests may also sit in a separate ``comparisons``/``tests`` list of ``{"system", "metric", ...}``.
    """
    if not isinstance(data, Mapping):
        return None
    rows: list[ComparisonRow] = []
    systems_obj = data.get("systems") or data.get("means") or data.get("scores")
    if isinstance(systems_obj, Mapping) and any(isinstance(v, Mapping) and "means" in v for v in systems_obj.values()):
        rows = _deltap_rows(systems_obj, str(data.get("test") or ""))
    elif isinstance(systems_obj, Mapping):
        for system, metrics in systems_obj.items():
            if isinstance(metrics, Mapping):
                nested = metrics.get("metrics")
                inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else metrics
                for metric, entry in inner.items():
                    rows.append(_row(str(system), str(metric), entry))
    for key in ("results", "rows", "table"):
        listed = data.get(key)
        if isinstance(listed, list):
            for entry in listed:
                if isinstance(entry, Mapping) and "system" in entry and "metric" in entry:
                    rows.append(_row(str(entry["system"]), str(entry["metric"]), entry))
    tests = data.get("comparisons") or data.get("tests") or data.get("significance")
    if isinstance(tests, list):
        merged: dict[tuple[str, str], ComparisonRow] = {(r.system, r.metric): r for r in rows}
        for entry in tests:
            if not isinstance(entry, Mapping) or "system" not in entry or "metric" not in entry:
                continue
            key2 = (str(entry["system"]), str(entry["metric"]))
            extra = _row(*key2, entry)
            base = merged.get(key2)
            if base is None:
                continue
            merged[key2] = ComparisonRow(
                system=base.system,
                metric=base.metric,
                mean=base.mean,
                ci_low=base.ci_low,
                ci_high=base.ci_high,
                p_value=extra.p_value if extra.p_value is not None else base.p_value,
                significant=extra.significant if extra.significant is not None else base.significant,
                wins=extra.wins if extra.wins is not None else base.wins,
                ties=extra.ties if extra.ties is not None else base.ties,
                losses=extra.losses if extra.losses is not None else base.losses,
            )
        rows = list(merged.values())
    if not rows:
        return None
    systems = list(dict.fromkeys(r.system for r in rows))
    metrics = list(dict.fromkeys(r.metric for r in rows))
    return ComparisonView(
        systems=systems,
        metrics=metrics,
        rows=rows,
        baseline=None if data.get("baseline") is None else str(data.get("baseline")),
        test=None if data.get("test") is None else str(data.get("test")),
        correction=None if data.get("correction") is None else str(data.get("correction")),
        alpha=_num(data.get("alpha")),
        n_queries=None if _num(data.get("n_queries")) is None else int(_num(data.get("n_queries")) or 0),
    )
