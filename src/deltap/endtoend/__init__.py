"""End-to-end evaluation: which retriever's top-k makes the solver succeed, and which qrels predict it.

* :func:`evaluate_end_to_end` — a mined run directory in, ``RUN_DIR/endtoend/`` out (``deltap endtoend``).
* :func:`end_to_end` — the engine: every system's top-k in the prompt (the mining prompt format), the solver asked
  with fresh seeds, each case's own checker (or the reference's log-probability) (:mod:`.engine`).
* :func:`metric_validity` — how well metrics on the benchmark's gold qrels and on deltap's mined qrels agree with
  that success, across systems and across questions (:mod:`.validity`).
* :func:`plan_end_to_end` — the run's calls, tokens, cost and time before any call (``--plan``; :mod:`.plan`).
* :class:`System` and its builders — retrievers, saved runs, controls (the table :data:`CONTROLS`; :mod:`.systems`).

Names are lazy: ``import deltap.endtoend.config`` (what the CLI needs for its defaults) does not load numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deltap._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "EndToEndConfig": "deltap.endtoend.config",
    "end_to_end": "deltap.endtoend.engine",
    "EndToEndResult": "deltap.endtoend.results",
    "evaluate_end_to_end": "deltap.endtoend.mined_run",
    "CONTROLS": "deltap.endtoend.systems",
    "ControlKind": "deltap.endtoend.systems",
    "System": "deltap.endtoend.systems",
    "control_systems": "deltap.endtoend.systems",
    "register_control": "deltap.endtoend.systems",
    "retriever_systems": "deltap.endtoend.systems",
    "run_systems": "deltap.endtoend.systems",
    "metric_validity": "deltap.endtoend.validity",
    "plan_end_to_end": "deltap.endtoend.plan",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from deltap.endtoend.config import EndToEndConfig
    from deltap.endtoend.engine import end_to_end
    from deltap.endtoend.mined_run import evaluate_end_to_end
    from deltap.endtoend.plan import plan_end_to_end
    from deltap.endtoend.results import EndToEndResult
    from deltap.endtoend.systems import (
        CONTROLS,
        ControlKind,
        System,
        control_systems,
        register_control,
        retriever_systems,
        run_systems,
    )
    from deltap.endtoend.validity import metric_validity
