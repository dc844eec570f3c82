"""Setting up a run: from typed settings to what :func:`deltap.mining.engine.mine` needs, in one place.

``deltap mine``, ``deltap demo`` and ``deltap endtoend`` all start the same way: read the cases and the corpus (pick
the cases asked for, drop gold ids the corpus lacks, visibly), build the retriever, build the solver from one recipe
(:class:`~deltap.execution.base.SolverSpec`, the same one every Ray replica builds), build the executor, and fit the
mining options to them. :func:`prepare_run` does it from four settings objects and returns a :class:`PreparedRun`
(everything built, and the plan of its run directory); the command line only turns options into settings and
prints::

    run = prepare_run(CaseSelection("bench.yaml", "corpus.jsonl"), SolverSettings("openai", model="gpt-4o-mini"),
                      out="runs/a", config=MiningConfig(budget=60))
    result = run.mine()

Options given as ``key=value`` text (``--solver-option``, ``--executor-option``) are parsed by :func:`parse_options`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from deltap.cases import Case, CheckerSpec
from deltap.checker_kinds import checker_kind
from deltap.documents import Corpus
from deltap.errors import DeltapError
from deltap.execution.base import SolverSpec
from deltap.mining.config import MiningConfig
from deltap.run_layout import RunDir

__all__ = [
    "ANSWER_GRAMMARS",
    "CaseSelection",
    "ExecutorSettings",
    "PreparedRun",
    "RetrieverSettings",
    "SolverSettings",
    "build_solver",
    "parse_options",
    "prepare_run",
    "select_cases",
]

#: how string_match and multiple_choice read replies (``--answer-grammar``)
ANSWER_GRAMMARS = ("grader", "protocol", "strict", "lenient")
Status = Callable[[str], AbstractContextManager[Any]]


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
class CaseSelection:
    """Which cases, over which corpus.

    Args:
        cases: A benchmark file or folder (anything :func:`deltap.load_cases` reads), or cases already loaded (gold
            ids resolved against ``corpus``).
        corpus: A corpus path (:func:`deltap.load_corpus`) or a loaded :class:`~deltap.documents.Corpus`.
        case_ids: Only these cases (an unknown id is an error).
        limit: Only the first ``limit`` cases (after ``case_ids``).
        skip_missing: Drop gold ids the corpus lacks (counted in :attr:`PreparedRun.notes`) instead of failing.
        answer_grammar: ``grader`` (the default), ``protocol``, ``strict`` or ``lenient``: how string_match and
            multiple_choice checkers read replies (:mod:`deltap.checkers.grader`; a
            checker that names its grammar keeps it).
    """

    cases: str | Path | Sequence[Case]
    corpus: str | Path | Corpus
    case_ids: Sequence[str] | None = None
    limit: int | None = None
    skip_missing: bool = True
    answer_grammar: str = "grader"

    def load(self) -> tuple[list[Case], Corpus, list[str]]:
        """``(cases, corpus, notes)``: the selected cases and the corpus, with a note on dropped gold ids.

        Raises:
            DeltapError: an unknown grammar or case id, or a file that cannot be read.
        """
        from deltap.loaders import load_cases, load_corpus

        if self.answer_grammar not in ANSWER_GRAMMARS:
            raise DeltapError(
                f"--answer-grammar must be one of {', '.join(ANSWER_GRAMMARS)}, got {self.answer_grammar!r}"
            )
        corpus = self.corpus if isinstance(self.corpus, Corpus) else load_corpus(self.corpus)
        if isinstance(self.cases, str | Path):
            cases = load_cases(self.cases, corpus=corpus, on_missing="skip" if self.skip_missing else "error")
        else:
            cases = list(self.cases)
        notes = []
        missing = {c.case_id: list(c.metadata.get("gold_missing") or []) for c in cases}
        missing = {k: v for k, v in missing.items() if v}
        if missing:
            n = sum(len(v) for v in missing.values())
            notes.append(f"{n} gold id(s) of {len(missing)} case(s) are not in the corpus and were dropped")
        cases = select_cases(cases, self.case_ids, self.limit, where=str(self.cases))
        if self.answer_grammar != "grader":
            cases = [_with_grammar(c, self.answer_grammar) for c in cases]
        return cases, corpus, notes


def select_cases(
    cases: Sequence[Case], case_ids: Sequence[str] | None = None, limit: int | None = None, where: str = "the cases"
) -> list[Case]:
    """The cases named by ``case_ids`` (file order), then the first ``limit`` of them.

    Raises:
        DeltapError: an id that is not among ``cases``.
    """
    out = list(cases)
    if case_ids:
        wanted = {c.strip() for c in case_ids if c.strip()}
        unknown = sorted(wanted - {c.case_id for c in out})
        if unknown:
            raise DeltapError(f"--cases: unknown case id(s) {', '.join(unknown)} in {where}")
        out = [c for c in out if c.case_id in wanted]
    return out[:limit] if limit is not None else out


def _with_grammar(case: Case, grammar: str) -> Case:
    """``case`` with ``grammar`` in its string-match / multiple-choice checker's params (unless they name one)."""
    spec = case.checker
    if not checker_kind(spec.kind).grammar or "grammar" in spec.params:
        return case
    return replace(case, checker=CheckerSpec(spec.kind, {**dict(spec.params), "grammar": grammar}))


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
        """The executor for ``spec`` (``None`` in-process: :func:`~deltap.mining.engine.mine` builds its own from
        :attr:`MiningConfig.workers <deltap.mining.config.MiningConfig>`)."""
        self.check()
        if self.kind == "inprocess":
            return None
        from deltap.execution import make_executor

        workers = {"workers": self.workers} if self.workers is not None else {}
        return make_executor(self.kind, solver=spec, **workers, **dict(self.options))


@dataclass(frozen=True)
class RetrieverSettings:
    """The retriever of the candidate pools.

    Args:
        kind: ``dense``, ``bm25``, ``hybrid`` or ``none`` (:func:`deltap.retrieval.build_retriever`).
        index: A dense index folder or Qdrant URL (reused across runs).
        retriever: A retriever already built (the demo's); ``kind`` is then ignored.
    """

    kind: str = "dense"
    index: str | None = None
    retriever: Any = None


@dataclass
class PreparedRun:
    """Everything a mining run needs, built (see :func:`prepare_run`).

    Attributes:
        cases: The selected cases.
        corpus: The documents.
        solver: The driver's solver (or, for a plan of a hosted model without a key, a stand-in that answers nothing).
        solver_spec: The recipe it was built from (every Ray replica builds the same).
        executor: The executor (``None``: in-process).
        retriever: The pools' retriever (``None``: no retrieved candidates).
        config: The mining options, fitted to the retriever and the executor.
        run_dir: The run directory (``None``: the trial log stays in memory).
        prices: What a million tokens cost (:func:`deltap.mining.spend.prices_for`).
        notes: What the user should know before the first call (dropped gold ids, sandbox protections that are off).
    """

    cases: list[Case]
    corpus: Corpus
    solver: Any
    solver_spec: SolverSpec
    executor: Any
    retriever: Any
    config: MiningConfig
    run_dir: RunDir | None
    prices: Any
    notes: list[str] = field(default_factory=list)

    @property
    def layout(self) -> dict[str, Path]:
        """What the run writes, by role (empty without a run directory)."""
        return self.run_dir.layout() if self.run_dir is not None else {}

    def mine(self, progress: Any = None, remine_changed: bool = False) -> Any:
        """Run :func:`deltap.mining.engine.mine` on it; returns the :class:`~deltap.mining.results.MiningResult`."""
        from deltap.mining.engine import mine

        return mine(
            self.cases, self.corpus, self.solver, out=None if self.run_dir is None else self.run_dir.root,
            config=self.config, retriever=self.retriever, progress=progress, remine_changed=remine_changed,
            executor=self.executor,
        )  # fmt: skip

    def plan(self, latency: float | None = None, rpm: float | None = None) -> Any:
        """The run's :class:`~deltap.mining.plan.Plan` (calls, tokens, cost, time), without a solver call.

        Raises:
            DeltapError: a negative ``latency``.
        """
        from deltap.mining.plan import plan_mine

        if latency is not None and latency < 0:
            raise DeltapError(f"--latency must be seconds per call (>= 0), got {latency}")
        return plan_mine(self.cases, self.corpus, self.solver, self.config, retriever=self.retriever,
                         prices=self.prices, latency=latency, rpm=rpm,
                         out=None if self.run_dir is None else self.run_dir.root)  # fmt: skip


def prepare_run(
    cases: CaseSelection,
    solver: SolverSettings | None = None,
    *,
    executor: ExecutorSettings | None = None,
    retriever: RetrieverSettings | None = None,
    config: MiningConfig | None = None,
    out: str | Path | None = None,
    plan_only: bool = False,
    status: Status | None = None,
) -> PreparedRun:
    """Load, select and build everything a mining run needs, refusing bad settings before any solver call.

    Args:
        cases: Which cases over which corpus.
        solver: The solver (default: ``local``).
        executor: Where the calls run (default: in-process).
        retriever: The pools' retriever (default: ``dense``); none when ``config.k`` is 0.
        config: The mining options (default :class:`MiningConfig`); ``k`` becomes 0 without a retriever and
            ``workers`` takes ``executor.workers`` in-process.
        out: The run directory (``None``: in memory). A run directory another process is mining is refused at
            once, before the corpus is read.
        plan_only: Only a plan is wanted: a hosted solver that cannot be built here (no key) is replaced by a
            stand-in with its id and answer ceilings, and no executor is started.
        status: ``status(message)`` → a context manager shown while a slow step runs (the CLI's spinner).

    Raises:
        DeltapError: any setting that cannot work (named as its command-line option).
    """
    from deltap.mining.spend import prices_for
    from deltap.mining.trials import TrialLog
    from deltap.solvers.base import solver_id

    solver = solver or SolverSettings()
    executor = executor or ExecutorSettings()
    retriever = retriever or RetrieverSettings()
    config = config or MiningConfig()
    run_dir = RunDir(out) if out is not None else None
    executor.check()
    solver.check()
    if run_dir is not None:
        TrialLog.check_unlocked(run_dir.trials)  # a second run on this directory stops here, at once
    loaded, corpus, notes = cases.load()
    if any(checker_kind(c.checker.kind).sandboxed for c in loaded):
        notes += _sandbox_gaps()
    built = retriever.retriever
    if built is None and retriever.kind != "none" and config.k > 0:
        from deltap.retrieval import build_retriever

        with (status or _quiet)(f"building the {retriever.kind} retriever over {len(corpus)} documents..."):
            built = build_retriever(retriever.kind, corpus, store=retriever.index, seed=config.seed)
    fitted = replace(config, k=config.k if built is not None else 0)
    if executor.kind == "inprocess" and executor.workers is not None:
        fitted = replace(fitted, workers=executor.workers)
    solver_obj, spec, built_executor = build_solver(solver, executor, loaded, config.outcome, config.seed, plan_only)
    prices = prices_for(config.price_in, config.price_out, solver_id(solver_obj), local=solver.kind == "local")
    return PreparedRun(
        cases=loaded, corpus=corpus, solver=solver_obj, solver_spec=spec,
        executor=built_executor, retriever=built, config=fitted, run_dir=run_dir,
        prices=prices, notes=notes,
    )  # fmt: skip


def build_solver(
    solver: SolverSettings,
    executor: ExecutorSettings | None = None,
    cases: Sequence[Case] = (),
    outcome: str = "pass",
    seed: int = 0,
    plan_only: bool = False,
) -> tuple[Any, SolverSpec, Any]:
    """``(solver, its spec, executor)``: the driver's solver and the executor that runs its calls, from one recipe
    (what :func:`prepare_run` and ``deltap endtoend`` build).

    Args:
        solver: The solver settings.
        executor: Where the calls run (default: in-process, executor ``None``).
        cases: The cases (a ``simulated`` solver plants its truth on their gold documents).
        outcome: ``pass`` or ``logprob`` (the simulated solver's).
        seed: The simulated solver's seed.
        plan_only: A hosted solver that cannot be built here (no key) becomes a stand-in that answers nothing, and no
            executor is started.

    Raises:
        DeltapError: the solver or the executor cannot be built with these settings.
    """
    from deltap.solvers import solver_capabilities

    executor = executor or ExecutorSettings()
    executor.check()
    spec = solver.spec(cases, outcome, seed)
    try:
        built: Any = solver.solver if solver.solver is not None else spec.build()
    except DeltapError:
        if not (plan_only and solver_capabilities(solver.kind).hosted):
            raise
        from deltap.mining.plan import hosted_model

        built = hosted_model(solver.kind, spec.options)  # planning needs no key, no connection
    return built, spec, None if plan_only else executor.build(spec)


def _quiet(message: str) -> AbstractContextManager[Any]:
    return nullcontext()


def _sandbox_gaps() -> list[str]:
    """Before candidate code runs: every sandbox protection that is OFF on this machine (``deltap sandbox``)."""
    from deltap.checkers.sandbox import protections

    off = [name for name, p in protections().items() if not p.enforced]
    if not off:
        return []
    return [
        f"the pytest checker's sandbox runs here without: {', '.join(off)} "
        "(`deltap sandbox` says why; see the README's 'Checker threat model')"
    ]
