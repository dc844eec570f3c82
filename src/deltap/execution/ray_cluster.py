"""The Ray executor: solver replicas as Ray actors, one case kept on one replica (``pip install 'deltap[ray]'``).

* **Replicas load once.** Each of ``workers`` actors builds its own solver from a picklable
  :class:`~deltap.execution.base.SolverSpec` when it starts (the local llama.cpp model, a client of a vLLM or any
  OpenAI-compatible server, Gemini...) and keeps it for the run.
* **A case stays on one replica** while it is being mined: the first batch of a case goes to the replica with the
  fewest cases in flight (ties: the lowest index), and every later batch of the case goes there too, so the local
  solver's KV prefix snapshots of one look serve the next. Least-loaded assignment instead of a hash of the case id:
  with as many cases in flight as replicas, a hash leaves about a third of the replicas idle (the expected share of
  empty bins, ``(1 - 1/n)^n``), least-loaded assignment none.
* **Workers die, trials do not.** Actors restart (``max_restarts``) and Ray retries the batch they were running
  (``max_task_retries``); a batch sent while its replica restarts waits for it, and when a replica is gone for
  good the executor starts a replacement and sends the batch again (``batch_retries`` in all), and only then does the batch come back as :class:`~deltap.solvers.base.SolverError`
  values (``error`` trials, asked again when the run resumes). Whatever happens on the cluster, the driver receives
  one result per request and alone writes the trial log, so a retried batch is never counted twice.
* **Rate limits shared by the whole cluster.** When the driver's solver has a rate limiter
  (:mod:`deltap.solvers.ratelimit`), one limiter actor per endpoint serves every replica.

Ray is imported when the executor starts, never before: ``import deltap`` and ``deltap --help`` do not load it.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError
from deltap.execution.base import Batch, Result, SolverSpec, solve_batch
from deltap.solvers.base import is_thread_safe, solver_id

if TYPE_CHECKING:
    from deltap.solvers.base import Solver

__all__ = ["RayExecutor", "ray_environment"]

#: environment that keeps a local Ray cluster off the network (no usage statistics)
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_USAGE_STATS_PROMPT_ENABLED": "0"}


def ray_environment() -> None:
    """Set :data:`RAY_ENV` in this process (before Ray starts), keeping values the user set."""
    for key, value in RAY_ENV.items():
        os.environ.setdefault(key, value)


def _import_ray() -> Any:
    ray_environment()
    try:
        import ray
    except ImportError:
        raise DeltapError("the Ray executor needs Ray: pip install 'deltap[ray]'") from None
    return ray


class _SolverReplica:
    """The body of a solver actor (wrapped by ``ray.remote`` at start)."""

    def __init__(self, spec: SolverSpec, limiter_names: dict[str, str], namespace: str | None) -> None:
        if limiter_names:
            from deltap.solvers import ratelimit

            ratelimit.use_backend(_ray_limiter_backend(limiter_names, namespace))
        self.solver = spec.build()

    def solver_id(self) -> str:
        return solver_id(self.solver)

    def pid(self) -> int:
        return os.getpid()

    def run(self, batch: Batch) -> list[Result]:
        return solve_batch(self.solver, batch)


def _ray_limiter_backend(names: dict[str, str], namespace: str | None) -> Any:
    """``(key, limits) -> limiter``: the cluster's limiter actor for the endpoint ``key`` (a local one otherwise)."""

    def backend(key: str, limits: Any) -> Any:
        import ray

        from deltap.solvers.ratelimit import RateLimiter, RemoteLimiter

        if key not in names:
            return RateLimiter(limits)
        return RemoteLimiter(ray.get_actor(names[key], namespace=namespace))

    return backend


class _LimiterActor:
    """One endpoint's :class:`~deltap.solvers.ratelimit.RateLimiter`, serving every replica of the cluster."""

    def __init__(self, limits: Any) -> None:
        from deltap.solvers.ratelimit import RateLimiter

        self.limiter = RateLimiter(limits)

    def reserve(self, tokens: int) -> float:
        return self.limiter.reserve(tokens)

    def blocked_for(self) -> float:
        return self.limiter.blocked_for()

    def penalize(self, seconds: float) -> None:
        self.limiter.penalize(seconds)

    def settle(self, reserved: int, used: int) -> None:
        self.limiter.settle(reserved, used)

    def refused(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> str | None:
        return self.limiter.refused(requests_per_minute, tokens_per_minute)

    def stats(self) -> dict[str, Any]:
        return self.limiter.stats()


class RayExecutor:
    """Solver replicas as Ray actors (see the module docstring).

    Args:
        solver: The recipe every replica builds its solver from; it must build the driver's solver (same ``id``:
            checked at start).
        workers: Solver replicas (Ray actors).
        address: The cluster: ``auto`` (a running cluster on this machine), ``ray://host:10001`` (Ray Client), or
            ``None`` to start a local cluster for the run (or use the one this process already started).
        calls_per_worker: Batches one replica runs at once (threads of a thread-safe solver, e.g. a client of a
            remote server); a solver that is not thread-safe (the local model) runs one at a time.
        cpus_per_worker: CPUs Ray reserves per replica; default 1 for a solver that is not thread-safe (a local
            model computes), 0 otherwise (a client waits on the network).
        max_restarts: Times Ray restarts a replica whose process died.
        max_task_retries: Times Ray retries a batch whose replica died while running it.
        batch_retries: Times the executor sends a batch again: after waiting for a replica that is restarting (0.5 s,
            doubling, at most 5 s), or on a new replica when its replica is gone for good.
        init_options: Extra ``ray.init`` keywords when the executor starts a local cluster (e.g. ``num_cpus``).
        actor_options: Extra ``ray.remote`` options of the replicas (e.g. ``{"num_gpus": 1}``, ``runtime_env``).
        namespace: Ray namespace of the run's named actors (the limiters).
    """

    def __init__(
        self,
        solver: SolverSpec,
        workers: int = 2,
        address: str | None = None,
        calls_per_worker: int = 1,
        cpus_per_worker: float | None = None,
        max_restarts: int = 3,
        max_task_retries: int = 3,
        batch_retries: int = 4,
        init_options: dict[str, Any] | None = None,
        actor_options: dict[str, Any] | None = None,
        namespace: str | None = None,
    ) -> None:
        if workers < 1:
            raise DeltapError(f"workers must be at least 1, got {workers}")
        if calls_per_worker < 1:
            raise DeltapError(f"calls_per_worker must be at least 1, got {calls_per_worker}")
        if not isinstance(solver, SolverSpec):
            raise DeltapError("RayExecutor needs a SolverSpec (a picklable recipe each worker builds its solver from)")
        self.spec = solver
        self.workers = int(workers)
        self.address = address
        self.calls_per_worker = int(calls_per_worker)
        self.cpus_per_worker = cpus_per_worker
        self.max_restarts = int(max_restarts)
        self.max_task_retries = int(max_task_retries)
        self.batch_retries = int(batch_retries)
        self.init_options = dict(init_options or {})
        self.actor_options = dict(actor_options or {})
        self.namespace = namespace
        self.slots = self.workers * self.calls_per_worker
        self._ray: Any = None
        self._started_ray = False
        self._actors: list[Any] = []
        self._limiters: list[Any] = []
        self._load: list[int] = []
        self._busy: list[int] = []  # batches in flight per replica
        self._pinned: dict[str, int] = {}
        self._lock = threading.Lock()
        self._replaced = 0
        self._concurrency = 1
        self._actor_cls: Any = None
        self._solver_id = ""

    # -- lifecycle ---------------------------------------------------------------------------------------------------
    def start(self, solver: Solver) -> None:
        """Start Ray (unless this process already did) and the replicas; a no-op when they are up for this solver
        (start them ahead of a run to keep their start-up out of its timing)."""
        if self._actors and self._solver_id == solver_id(solver):
            return
        ray = self._ray = _import_ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
            if self.address is None:
                options["num_cpus"] = max(os.cpu_count() or 1, 1)
            options.update(self.init_options)
            try:
                ray.init(address=self.address, namespace=self.namespace, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local cluster"
                raise DeltapError(
                    f"cannot start Ray on {where}: {exc}; check --ray-address (auto, ray://host:10001)"
                ) from None
            self._started_ray = True
        safe = is_thread_safe(solver)
        self._concurrency = self.calls_per_worker if safe else 1
        self.slots = self.workers * self._concurrency
        cpus = self.cpus_per_worker if self.cpus_per_worker is not None else (0.0 if safe else 1.0)
        names = self._start_limiters(solver)
        remote_options: dict[str, Any] = {
            "num_cpus": cpus,
            "max_restarts": self.max_restarts,
            "max_task_retries": self.max_task_retries,
            "max_concurrency": self._concurrency,
            **self.actor_options,
        }
        self._actor_cls = ray.remote(**remote_options)(_SolverReplica)
        self._limiter_names = names
        self._actors = [self._new_actor() for _ in range(self.workers)]
        self._load = [0] * self.workers
        self._busy = [0] * self.workers
        self._pinned = {}
        self._solver_id = solver_id(solver)
        ids = ray.get([a.solver_id.remote() for a in self._actors])
        wrong = sorted({i for i in ids if i != self._solver_id})
        if wrong:
            self.close()
            raise DeltapError(
                f"the Ray workers built solver {wrong[0]!r} but the run's solver is {self._solver_id!r}: "
                "the SolverSpec must describe the same solver (same kind and options)"
            )

    def _new_actor(self) -> Any:
        return self._actor_cls.remote(self.spec, self._limiter_names, self.namespace)

    def _start_limiters(self, solver: Solver) -> dict[str, str]:
        limiter = getattr(solver, "limiter", None)
        key, limits = getattr(limiter, "key", None), getattr(limiter, "limits", None)
        if not key or limits is None:
            return {}
        ray = self._ray
        name = f"deltap-limiter:{key}:{os.getpid()}"
        actor = (
            ray.remote(num_cpus=0, max_restarts=-1, max_concurrency=64)(_LimiterActor).options(name=name).remote(limits)
        )
        self._limiters.append(actor)
        return {str(key): name}

    def close(self) -> None:
        ray = self._ray
        if ray is None:
            return
        for actor in [*self._actors, *self._limiters]:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone: nothing to stop
                pass
        self._actors, self._limiters, self._pinned, self._load, self._busy = [], [], {}, [], []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    # -- batches -----------------------------------------------------------------------------------------------------
    def _assign(self, case_id: str) -> int:
        with self._lock:
            if case_id not in self._pinned:
                index = min(range(len(self._load)), key=lambda i: (self._load[i], i))
                self._pinned[case_id] = index
                self._load[index] += 1
            return self._pinned[case_id]

    def release(self, case_id: str) -> None:
        with self._lock:
            index = self._pinned.pop(case_id, None)
            if index is not None:
                self._load[index] -= 1

    def run(self, batch: Batch) -> list[Result]:
        if not self._actors:
            raise RuntimeError("RayExecutor.run before start()")
        ray = self._ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, RayTaskError

        index = self._assign(batch.case_id)
        last: BaseException | None = None
        for attempt in range(self.batch_retries + 1):
            actor = self._actors[index]
            with self._lock:
                self._busy[index] += 1
            try:
                return list(ray.get(actor.run.remote(batch)))
            except RayTaskError as exc:  # a bug inside the solver: raise it as it would be raised in-process
                raise exc.as_instanceof_cause() from None
            except ActorUnavailableError as exc:  # restarting (Ray restarts it): wait for it rather than replace it
                last = exc
                time.sleep(min(0.5 * 2**attempt, 5.0))
            except (ActorDiedError, RayActorError) as exc:  # gone for good: a new replica takes its place
                last = exc
                with self._lock:
                    if self._actors[index] is actor:  # the first thread to see it dead replaces it
                        self._actors[index] = self._new_actor()
                        self._replaced += 1
            finally:
                with self._lock:
                    self._busy[index] -= 1
        from deltap.solvers.base import SolverError

        error = SolverError(
            f"Ray worker lost {self.batch_retries + 1} times running case {batch.case_id}: {type(last).__name__}"
        )
        return [error] * len(batch)

    # -- inspection --------------------------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """Whether the replicas are up (between :meth:`start` and :meth:`close`)."""
        return bool(self._actors)

    def in_flight(self) -> list[int]:
        """Batches each replica is running now."""
        with self._lock:
            return list(self._busy)

    def worker_pids(self) -> list[int]:
        """The process id of every replica (for tests and operators)."""
        return [int(p) for p in self._ray.get([a.pid.remote() for a in self._actors])]

    def limiter_stats(self) -> list[dict[str, Any]]:
        """The statistics of every limiter actor (requests, tokens, waits, Retry-After pauses)."""
        return list(self._ray.get([a.stats.remote() for a in self._limiters])) if self._limiters else []

    def describe(self) -> dict[str, Any]:
        return {
            "executor": "ray",
            "workers": self.workers,
            "calls_per_worker": self._concurrency,
            "slots": self.slots,
            "address": self.address or "local",
            "replicas_replaced": self._replaced,
        }
