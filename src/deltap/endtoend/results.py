"""What an end-to-end run returns (:class:`EndToEndResult`): per-system success with intervals, paired tests,
per-case values, the metric validity table, and the files it writes."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.outcomes import outcome_kind

if TYPE_CHECKING:
    from deltap.endtoend.config import EndToEndConfig

__all__ = ["EndToEndResult", "summarize"]


@dataclass
class EndToEndResult:
    """The outcome of :func:`deltap.endtoend.end_to_end`.

    Attributes:
        case_ids: The cases, in order (rows of ``values``).
        systems: The system names (columns of ``values``).
        values: ``(cases, systems)`` per-case success rate over the repeats (``pass``) or mean log-probability
            (``logprob``); ``nan`` where every trial errored or the case was skipped.
        outcome: ``pass`` or ``logprob``.
        summary: Per system: ``mean``, ``ci`` (bootstrap over the complete cases), ``n``.
        pairs: Paired randomization tests between every two systems (``diff``, ``p``, ``p_holm``).
        complete: Indices of the cases with a value for every system (the ones the statistics use).
        validity: The metric validity table (:func:`deltap.endtoend.validity.metric_validity`), when computed.
        per_case: Per case: its trials per system, calls, cache hits, documents dropped to fit the window.
        run: Calls, cache hits, solver, ceiling, wall time.
        single_doc: With ``single_doc``: per case, each shown document's value alone (``None``: no value).
        single_baseline: With ``single_doc`` and ``logprob``: per case, the no-document value.
        checker: With the ``pass`` outcome: how the checker read the replies behind the figures (declared ``Answer:``
            line, answer grammar, unreadable; :func:`deltap.mining.readability.readability`, plus ``by_system``);
            ``{}`` for ``logprob``.
    """

    case_ids: list[str]
    systems: list[str]
    values: np.ndarray
    outcome: str
    k: int
    summary: dict[str, dict[str, Any]]
    pairs: list[dict[str, Any]]
    complete: list[int]
    confidence: float
    per_case: list[dict[str, Any]] = field(default_factory=list)
    validity: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)
    systems_info: list[dict[str, Any]] = field(default_factory=list)
    single_doc: dict[str, dict[str, float | None]] = field(default_factory=dict)
    single_baseline: dict[str, float | None] = field(default_factory=dict)
    checker: dict[str, Any] = field(default_factory=dict)

    @property
    def unit(self) -> str:
        return outcome_kind(self.outcome).label

    def erag_labels(self) -> dict[str, dict[str, float]]:
        """Per case, each document's eRAG label from its single-document value (:func:`~deltap.endtoend.single.erag_labels`)."""
        from deltap.endtoend.single import erag_labels

        return {c: erag_labels(u, self.single_baseline.get(c), self.outcome) for c, u in self.single_doc.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: what ``results.json`` holds."""
        single = (
            {"single_doc": {"values": self.single_doc, "baseline": self.single_baseline or None, "labels": self.erag_labels(),
                            "label": outcome_kind(self.outcome).alone_label,
                            "documents": sum(len(v) for v in self.single_doc.values())}}
            if self.single_doc
            else {}
        )  # fmt: skip
        return {
            "outcome": self.outcome, "unit": self.unit, "k": self.k, "confidence": self.confidence,
            "systems": self.systems_info or [{"name": n} for n in self.systems],
            "cases": len(self.case_ids), "complete_cases": len(self.complete),
            "summary": self.summary, "pairs": self.pairs, "validity": self.validity, "run": self.run,
            "per_case": {c: {s: _num(self.values[i, j]) for j, s in enumerate(self.systems)} for i, c in enumerate(self.case_ids)},
            **single, **({"checker": self.checker} if self.checker else {}),
        }  # fmt: skip

    def table(self) -> str:
        """Plain-text table: success per system with its interval."""
        w = max(len(s) for s in self.systems)
        pct = int(round(self.confidence * 100))
        lines = [f"{'system':<{w}}  {self.unit:>10}  {pct}% interval          n"]
        for s in sorted(self.systems, key=lambda s: -_sortable(self.summary[s]["mean"])):
            row = self.summary[s]
            lo, hi = row["ci"]
            lines.append(f"{s:<{w}}  {_fmt(row['mean']):>10}  [{_fmt(lo)}, {_fmt(hi)}]  {row['n']:>5}")
        return "\n".join(lines)

    def per_case_csv(self) -> str:
        """``case_id`` then one column per system."""
        head = ",".join(["case_id", *self.systems])
        rows = [",".join([c, *(_fmt(v, 4) for v in self.values[i])]) for i, c in enumerate(self.case_ids)]
        return "\n".join([head, *rows]) + "\n"

    def write(self, out: Path, manifest: Mapping[str, Any]) -> None:
        """``results.json``, ``per_case.csv``, ``per_case.json`` (trials) and ``manifest.json`` under ``out``."""
        from deltap.run_layout import EndToEndDir

        d = EndToEndDir(out)
        d.root.mkdir(parents=True, exist_ok=True)
        d.write_text(d.results, json.dumps(self.to_dict(), indent=2, default=_num) + "\n")
        d.write_text(d.per_case_csv, self.per_case_csv())
        d.write_text(d.per_case_json, json.dumps(self.per_case, indent=2, default=_num) + "\n")
        d.write_text(d.manifest, json.dumps(dict(manifest), indent=2, default=str) + "\n")


def _num(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _sortable(v: float | None) -> float:
    return -math.inf if v is None or not math.isfinite(v) else float(v)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{v:.{digits}f}"


def summarize(
    case_ids: Sequence[str],
    systems: Sequence[str],
    values: np.ndarray,
    cfg: EndToEndConfig,
    per_case: list[dict[str, Any]],
) -> EndToEndResult:
    """Per-system means with bootstrap intervals and Holm-corrected paired randomization tests over the complete
    cases (the cases with a value for every system, so every comparison is paired on the same questions)."""
    from deltap.evaluation.stats import bootstrap_ci, holm, randomization_test

    complete = [i for i in range(len(case_ids)) if np.all(np.isfinite(values[i]))]
    sub = values[complete]
    ci = (
        bootstrap_ci(sub, n_resamples=cfg.n_resamples, confidence=cfg.confidence, seed=cfg.seed)
        if len(complete)
        else np.full((len(systems), 2), np.nan)
    )
    ci = np.atleast_2d(ci)
    summary = {
        s: {
            "mean": _num(float(sub[:, j].mean())) if len(complete) else None,
            "ci": [_num(float(ci[j, 0])), _num(float(ci[j, 1]))],
            "n": len(complete),
        }
        for j, s in enumerate(systems)
    }
    pairs: list[dict[str, Any]] = []
    for a in range(len(systems)):
        for b in range(a + 1, len(systems)):
            p = (
                randomization_test(sub[:, a], sub[:, b], n_resamples=cfg.n_permutations, seed=cfg.seed)
                if len(complete)
                else 1.0
            )
            diff = float((sub[:, a] - sub[:, b]).mean()) if len(complete) else math.nan
            pairs.append({"a": systems[a], "b": systems[b], "diff": _num(diff), "p": p})
    for pair, adj in zip(pairs, holm([p["p"] for p in pairs]), strict=True):
        pair["p_holm"] = float(adj)
    slim = [{k: v for k, v in r.items() if k != "values"} for r in per_case]
    return EndToEndResult(
        list(case_ids), list(systems), values, cfg.outcome, cfg.k, summary, pairs, complete, cfg.confidence, slim
    )
