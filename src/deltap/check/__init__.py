"""``deltap check``: is a retrieval pipeline fit to put under an agent? Five gates against a live index.

* :mod:`deltap.check.suite` — what the check asks, read from a YAML/JSON suite file;
* :mod:`deltap.check.passes` — the searches: open the index, timed passes, a pass after reopening it;
* :mod:`deltap.check.gates` — relevance, out-of-scope, metadata, latency, determinism: one function each;
* :mod:`deltap.check.calibration` — latency percentiles and the out-of-scope threshold proposal;
* :mod:`deltap.check.result` — what the check found (:class:`PipelineCheckResult`, one :class:`GateResult` per
  criterion), as text and JSON; :mod:`deltap.report.check` draws it as an HTML page;
* :mod:`deltap.check.run` — :func:`check_pipeline`, which ties them together.
"""

from __future__ import annotations

from deltap.check.calibration import format_calibration, percentile, propose_threshold
from deltap.check.result import GateResult, PipelineCheckResult
from deltap.check.run import check_pipeline
from deltap.check.suite import GATES, CheckSuite, load_suite, parse_suite

__all__ = [
    "GATES",
    "CheckSuite",
    "GateResult",
    "PipelineCheckResult",
    "check_pipeline",
    "format_calibration",
    "load_suite",
    "parse_suite",
    "percentile",
    "propose_threshold",
]
