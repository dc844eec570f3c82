"""What mining learns: one :class:`CaseResult` per case, gathered in a :class:`MiningResult`; and the warning a run
gives when its placebo check fails."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.dataset import VerifiedDataset
    from deltap.mining.pool import Pool
    from deltap.mining.procedure import CaseRun

__all__ = ["CaseResult", "MiningResult", "PlaceboCalibrationWarning", "ProgressFn"]


class PlaceboCalibrationWarning(UserWarning):
    """The achieved false-positive rate on placebo documents exceeds the nominal level."""


@dataclass
class CaseResult:
    """Everything the engine learnt about one case."""

    case: Case
    pool: Pool
    status: str
    calls: int = 0
    errors: int = 0
    wall_seconds: float = 0.0
    X: NDArray[np.bool_] | None = None
    y: NDArray[np.float64] | None = None
    z_path: NDArray[np.float64] | None = None
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], int]] = field(default_factory=list)
    p_rep: NDArray[np.float64] | None = None
    preflight: dict[str, list[float]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    coalition: list[str] | None = None
    coalitions: list[list[str]] = field(default_factory=list)

    def absorb(self, run: CaseRun) -> None:
        """Take what the per-case procedure (:func:`~deltap.mining.procedure.run_case`) learnt."""
        self.status, self.preflight = run.status, run.preflight
        self.info.update(run.info)
        self.info["calls_by_kind"] = {"preflight": run.preflight_calls, "design": run.design_calls, "coalition": 0}
        if run.X is not None:
            self.X, self.y, self.z_path, self.fits, self.p_rep = run.X, run.y, run.z_path, run.fits, run.p_rep


@dataclass
class MiningResult:
    """The verified dataset, the per-case results and the run summary."""

    dataset: VerifiedDataset
    cases: list[CaseResult]
    run: dict[str, Any]
    out: Path | None = None


ProgressFn = Callable[[dict[str, Any]], None]
