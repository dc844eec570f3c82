"""Where solver calls run: the executor seam of ``deltap mine``.

The mining driver (:func:`deltap.mining.engine.mine`) decides every trial — its seed, its inclusion vector, its
prompt — and alone writes the trial log. What it hands out is a :class:`~deltap.execution.base.Batch`: the prepared
requests of one look of one case. An :class:`~deltap.execution.base.Executor` answers the batch and returns one
result per request, in request order; the driver then checks, logs and decides over the trials in index order, so
results never depend on how many workers there are or in which order their answers arrive.

================================================ ==================================================================
executor                                         what runs the calls
================================================ ==================================================================
:class:`~deltap.execution.local.InProcessExecutor` this process: one shared pool of ``workers`` threads (the default;
                                                 a solver that is not thread-safe, the local llama.cpp model, is
                                                 called one batch at a time)
:class:`~deltap.execution.ray_cluster.RayExecutor` a Ray cluster (``pip install 'deltap[ray]'``): ``workers`` solver
                                                 replicas as Ray actors, each built once from a picklable
                                                 :class:`~deltap.execution.base.SolverSpec`; a case stays on one
                                                 replica (its KV prefix cache survives between looks)
================================================ ==================================================================

Ray is imported only by :class:`~deltap.execution.ray_cluster.RayExecutor`, and only when it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltap._lazy import lazy_exports
from deltap.execution.registry import EXECUTORS, ExecutorKindInfo, make_executor, register_executor_kind

if TYPE_CHECKING:
    from deltap.execution.base import Batch, Executor, SolverSpec, solve_batch
    from deltap.execution.local import InProcessExecutor
    from deltap.execution.ray_cluster import RayExecutor

_LAZY: dict[str, str] = {
    "Batch": "deltap.execution.base",
    "Executor": "deltap.execution.base",
    "SolverSpec": "deltap.execution.base",
    "solve_batch": "deltap.execution.base",
    "InProcessExecutor": "deltap.execution.local",
    "RayExecutor": "deltap.execution.ray_cluster",
}

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, _LAZY, extra=["EXECUTORS", "ExecutorKindInfo", "make_executor", "register_executor_kind"]
)
