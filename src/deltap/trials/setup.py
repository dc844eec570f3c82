"""The solver and the executor of a run, built from typed settings by one function (:func:`build_solver`): what
``deltap mine`` (through :func:`deltap.mining.setup.prepare_run`), ``deltap demo`` and ``deltap endtoend`` — its run
and its ``--plan`` — all build, from one recipe (:class:`~deltap.execution.base.SolverSpec`, the same one every Ray
replica builds). Options given as ``key=value`` text (``--solver-option``, ``--executor-option``) are parsed by
:func:`parse_options`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.execution.base import SolverSpec

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["ExecutorSettings", "SolverSettings", "build_solver", "parse_options"]


def parse_options(items: Sequence[str], flag: str = "--solver-option") -> dict[str, Any]:
    """``["key=value", ...]`` as a dict; each value is read as JSON when it is JSON (``3``, ``true``, ``[1,2]``),
    else kept as text.

    Raises:
        DeltapError: an item without ``=`` (named with ``flag``).
    """
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise DeltapError(f"{flag} {item!r} must look like key=value")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


@dataclass(frozen=True)
class SolverSettings:
    """Which solver, and how it is built.

    Args:
        kind: ``local``, ``openai``, ``gemini`` or ``simulated`` (:func:`deltap.solvers.make_solver`).
        model: Model name (or GGUF path for ``local``); same as ``options["model"]``.
        options: Constructor options of the solver (``--solver-option key=value``).
        requests_per_minute: A hosted solver's request limit, shared by every worker of the run.
        tokens_per_minute: A hosted solver's token limit (prompt + completion).
        sim_effect: ``simulated`` without a planted ``truth`` option: the effect of each gold document.
        sim_base: ``simulated``: the success rate (or log-probability) without gold documents.
        solver: A solver already built from these settings (the demo builds it once to ask whether it is
            deterministic); it is used as it is.
    """

    kind: str = "local"
    model: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    sim_effect: float = 0.3
    sim_base: float = 0.1
    solver: Any = None

    def check(self) -> None:
        """Refuse, before anything is loaded, a rate limit given to a solver that is not hosted (the solver class
        kind's registered capabilities say: :func:`deltap.solvers.solver_capabilities`).

        Raises:
            DeltapError: an unknown kind, or ``--rpm`` / ``--tpm`` for a solver that is not hosted.
        """
        from deltap.solvers import solver_capabilities, solver_kinds

        hosted_kind = solver_capabilities(self.kind).hosted
        for key, value in (
            ("requests_per_minute", self.requests_per_minute),
            ("tokens_per_minute", self.tokens_per_minute),
        ):
            if value is not None and not hosted_kind:
                hosted = " and ".join(solver_kinds(hosted=True))
                raise DeltapError(f"--{key.replace('_', '-')} paces the {hosted} solvers, not {self.kind!r}")

    def spec(self, cases: Sequence[Case], outcome: str = "pass", seed: int = 0) -> SolverSpec:
        """The one recipe of the driver's solver and of every Ray replica (they cannot disagree).

        Raises:
            DeltapError: see :meth:`check`.
        """
        self.check()
        options = dict(self.options)
        if self.model:
            options.setdefault("model", self.model)
        limits = {"requests_per_minute": self.requests_per_minute, "tokens_per_minute": self.tokens_per_minute}
        options.update({k: v for k, v in limits.items() if v is not None})
        if self.kind == "simulated" and "truth" not in options:
            from deltap.solvers.simulated import planted_truth

            options = {
                **planted_truth(cases, self.sim_effect, self.sim_base),
                "outcome": outcome,
                "seed": seed,
                **options,
            }
        return SolverSpec(self.kind, options)  # fmt: skip


@dataclass(frozen=True)
class ExecutorSettings:
    """Where solver calls run.

    Args:
        kind: ``inprocess`` (this process, threads) or ``ray`` (a Ray cluster).
        workers: In-process: solver calls in flight (default 1). Ray: solver replicas (default 2).
        options: The executor's own options (``--executor-option key=value``): for ``ray``, ``address``,
            ``calls_per_worker``, ``cpus_per_worker``, ``max_restarts``... (:class:`deltap.execution.RayExecutor`).
    """

    kind: str = "inprocess"
    workers: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def check(self) -> None:
        """Refuse an unknown kind or option before anything is loaded.

        Raises:
            DeltapError: the kind is unknown, or an option is not one the executor takes.
        """
        from deltap.execution import EXECUTORS

        if self.kind not in EXECUTORS:
            raise DeltapError(f"--executor must be one of {', '.join(EXECUTORS)}, got {self.kind!r}")
        accepted = self._accepted()
        unknown = sorted(set(self.options) - set(accepted))
        if unknown and not accepted:
            raise DeltapError(
                f"--executor-option {', '.join(unknown)}: the {self.kind} executor takes none; they need --executor ray"
            )
        if unknown:
            raise DeltapError(
                f"--executor-option {', '.join(unknown)}: the {self.kind} executor takes {', '.join(accepted)}"
            )

    def _accepted(self) -> list[str]:
        if self.kind != "ray":
            return []  # in-process: only --workers
        from deltap.execution.ray_cluster import RayExecutor

        return [n for n in inspect.signature(RayExecutor).parameters if n not in ("self", "solver", "workers")]

    def build(self, spec: SolverSpec) -> Any:
        """The executor for ``spec`` (``None`` in-process: the run builds its own with its ``workers``)."""
        self.check()
        if self.kind == "inprocess":
            return None
        from deltap.execution import make_executor

        workers = {"workers": self.workers} if self.workers is not None else {}
        return make_executor(self.kind, solver=spec, **workers, **dict(self.options))


def build_solver(
    solver: SolverSettings,
    executor: ExecutorSettings | None = None,
    cases: Sequence[Case] = (),
    outcome: str = "pass",
    seed: int = 0,
    plan_only: bool = False,
) -> tuple[Any, SolverSpec, Any]:
    """``(solver, its spec, executor)``: the driver's solver and the executor that runs its calls, from one recipe
    (what :func:`deltap.mining.setup.prepare_run` and ``deltap endtoend`` build).

    Args:
        solver: The solver settings.
        executor: Where the calls run (default: in-process, executor ``None``).
        cases: The cases (a ``simulated`` solver plants its truth on their gold documents).
        outcome: ``pass`` or ``logprob`` (the simulated solver's).
        seed: The simulated solver's seed.
        plan_only: A hosted solver that cannot be built here (no key) becomes a stand-in that answers nothing, the
            local model loads its vocabulary only (``tokenizer_only``: its tokens are counted exactly, no context is
            allocated), and no executor is started.

    Raises:
        DeltapError: the solver or the executor cannot be built with these settings.
    """
    from deltap.solvers import solver_capabilities

    executor = executor or ExecutorSettings()
    executor.check()
    spec = solver.spec(cases, outcome, seed)
    # a plan counts tokens only: the local model's vocabulary, without its weights' context (nothing is called)
    made = (
        SolverSpec(spec.kind, {**spec.options, "tokenizer_only": True}) if plan_only and spec.kind == "local" else spec
    )
    try:
        built: Any = solver.solver if solver.solver is not None else made.build()
    except DeltapError:
        if not (plan_only and solver_capabilities(solver.kind).hosted):
            raise
        from deltap.solvers.hosted import hosted_model

        built = hosted_model(solver.kind, spec.options)  # planning needs no key, no connection
    return built, spec, None if plan_only else executor.build(spec)
