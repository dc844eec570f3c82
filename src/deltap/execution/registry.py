"""The executor registry: kind -> what builds it and what it declares (``deltap mine --executor`` accepts its keys).

Nothing heavy is imported here: an executor's module is imported when one is built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltap._registry import Registry

if TYPE_CHECKING:
    from deltap.execution.base import Executor

__all__ = ["EXECUTORS", "ExecutorKindInfo", "make_executor", "register_executor_kind"]


@dataclass(frozen=True)
class ExecutorKindInfo:
    """One executor kind.

    Args:
        name: The kind (``--executor``).
        factory: ``"package.module:Class"`` called with the executor's options.
        summary: One line for ``--help``.
        remote: Runs solver replicas outside this process: they are built from a picklable
            :class:`~deltap.execution.base.SolverSpec`, not handed the driver's solver.
    """

    name: str
    factory: str
    summary: str = ""
    remote: bool = False

    def build(self, **options: Any) -> Executor:
        """A new executor of this kind."""
        module, _, name = self.factory.partition(":")
        executor: Executor = getattr(importlib.import_module(module), name)(**options)
        return executor


#: the executor registry: kind -> what builds it and what it declares (``deltap mine --executor`` accepts its keys)
EXECUTORS: Registry[ExecutorKindInfo] = Registry("executor")


def register_executor_kind(info: ExecutorKindInfo, replace: bool = False) -> ExecutorKindInfo:
    """Add an executor kind (``replace=True`` to redefine one); it is then an ``--executor`` choice.

    Raises:
        DeltapError: the name is taken and ``replace`` is false.
    """
    return EXECUTORS.register(info.name, info, replace)


register_executor_kind(
    ExecutorKindInfo("inprocess", "deltap.execution.local:InProcessExecutor", "threads in this process (the default)")
)
register_executor_kind(
    ExecutorKindInfo(
        "ray",
        "deltap.execution.ray_cluster:RayExecutor",
        "solver replicas as Ray actors (pip install 'deltap[ray]')",
        remote=True,
    )
)


def make_executor(kind: str = "inprocess", **options: Any) -> Any:
    """Build an executor by kind (a key of :data:`EXECUTORS`: ``inprocess``, options of
    :class:`InProcessExecutor`; ``ray``, of :class:`RayExecutor`; or a registered one).

    Raises:
        DeltapError: an unknown kind.
    """
    return EXECUTORS.lookup(kind).build(**options)
