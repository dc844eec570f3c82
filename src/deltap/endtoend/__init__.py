"""End-to-end evaluation: which retriever's top-k makes the solver succeed, and which qrels predict it.

:func:`~deltap.endtoend.engine.end_to_end` puts each system's top-k into the prompt (the mining prompt format),
asks the solver with fresh seeds and scores each case's own checker (or the reference's log-probability);
:mod:`~deltap.endtoend.validity` measures how well retrieval metrics on the benchmark's gold qrels and on deltap's
mined qrels agree with that success, across systems and across questions.
"""

from deltap.endtoend.config import EndToEndConfig
from deltap.endtoend.engine import end_to_end
from deltap.endtoend.results import EndToEndResult
from deltap.endtoend.rundir import evaluate_end_to_end
from deltap.endtoend.systems import CONTROLS, System, control_systems, retriever_systems, run_systems
from deltap.endtoend.validity import metric_validity

__all__ = [
    "CONTROLS",
    "EndToEndConfig",
    "EndToEndResult",
    "System",
    "control_systems",
    "end_to_end",
    "evaluate_end_to_end",
    "metric_validity",
    "retriever_systems",
    "run_systems",
]
