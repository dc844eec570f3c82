"""What ``deltap check`` found: one :class:`GateResult` per criterion, gathered in a :class:`PipelineCheckResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deltap.check.calibration import format_calibration

__all__ = ["GateResult", "PipelineCheckResult", "Status"]

Status = Literal["PASS", "FAIL", "SKIP"]


@dataclass
class GateResult:
    """One criterion of the check: its status, the headline figure and the evidence.

    Args:
        gate: The gate it belongs to (``relevance``, ``out_of_scope``, ``metadata``, ``latency``, ``determinism``).
        criterion: The line label, e.g. ``latency p95 embed+search``.
        status: ``PASS``, ``FAIL`` or ``SKIP`` (gate disabled, or nothing to measure).
        figure: The measured value against its limit, human readable.
        details: Machine-readable evidence (per-query failures, problems, distributions...).
    """

    gate: str
    criterion: str
    status: Status
    figure: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineCheckResult:
    """Everything ``deltap check`` found. :attr:`passed` is true only when no enabled criterion failed."""

    suite: str
    retriever: str
    criteria: list[GateResult]
    queries: list[dict[str, Any]]
    latency: dict[str, Any]
    settings: dict[str, Any]
    calibration: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """No criterion failed and at least one ran (a calibration run passes when it produced a proposal)."""
        if any(c.status == "FAIL" for c in self.criteria):
            return False
        return any(c.status == "PASS" for c in self.criteria) or self.calibration is not None

    @property
    def exit_code(self) -> int:
        """0 when :attr:`passed`, else 1 (the CLI uses 2 for errors)."""
        return 0 if self.passed else 1

    def summary(self) -> str:
        """One line per criterion (``PASS`` / ``FAIL`` / ``SKIP``, label, figure), then the verdict."""
        width = max((len(c.criterion) for c in self.criteria), default=10)
        lines = [f"deltap check: {self.suite} against {self.retriever}"]
        for c in self.criteria:
            lines.append(f"  {c.status:<4}  {c.criterion:<{width}}  {c.figure}")
        if self.calibration is not None:
            lines.append(format_calibration(self.calibration))
        if self.calibration is not None and not self.criteria:
            lines.append("result: calibration only (no gate judged)")
            return "\n".join(lines)
        n_fail = sum(c.status == "FAIL" for c in self.criteria)
        verdict = "PASS" if self.passed else f"FAIL ({n_fail} {'criterion' if n_fail == 1 else 'criteria'} failed)"
        lines.append(f"result: {verdict}")
        return "\n".join(lines)

    def failures(self) -> str:
        """The evidence behind each failed criterion, a few lines each (empty when nothing failed)."""
        out: list[str] = []
        for c in self.criteria:
            if c.status != "FAIL":
                continue
            out.append(f"{c.criterion}:")
            for item in c.details.get("failures", [])[:10]:
                out.append(f"  - {item}")
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable result."""
        return {
            "suite": self.suite,
            "retriever": self.retriever,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "criteria": [
                {"gate": c.gate, "criterion": c.criterion, "status": c.status, "figure": c.figure, "details": c.details}
                for c in self.criteria
            ],
            "latency": self.latency,
            "queries": self.queries,
            "settings": self.settings,
            "calibration": self.calibration,
        }

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as indented JSON (atomically)."""
        import json

        from deltap._io import write_text_atomic

        return write_text_atomic(path, json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n")
