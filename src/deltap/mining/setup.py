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

The solver and executor settings and :func:`build_solver` — the one function that builds a run's solver, for
``deltap endtoend`` too — are the trial layer's (:mod:`deltap.trials.setup`); they are re-exported here because
:func:`prepare_run` takes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from deltap.trials.setup import ExecutorSettings, SolverSettings, build_solver, parse_options

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
class RetrieverSettings:
    """The retriever of the candidate pools.

    Args:
        kind: A key of :data:`deltap.retrieval.registry.RETRIEVERS` (:func:`deltap.retrieval.build_retriever`), or
            ``none``.
        index: A dense index folder or Qdrant URL built by ``deltap index`` (reused across runs; the run brings it
            up to date with the corpus). One that does not exist is refused, as ``deltap search`` refuses it.
        retriever: A retriever already built (the demo's); ``kind`` is then ignored.
    """

    kind: str = "dense"
    index: str | None = None
    retriever: Any = None

    def __post_init__(self) -> None:
        from deltap.retrieval.registry import RETRIEVERS, retriever_kinds

        if self.retriever is None and self.kind != "none" and self.kind.lower().strip() not in RETRIEVERS:
            raise DeltapError(f"unknown retriever kind {self.kind!r}; expected one of {retriever_kinds()} or none")


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
        plan_only: Only a plan is wanted: no model or embedding call, nothing written. A hosted solver that cannot
            be built here (no key) is replaced by a stand-in with its id and answer ceilings, no executor is started,
            and a retriever that embeds (``dense``, ``hybrid``) is replaced by a stand-in whose candidates are
            estimated at the corpus's mean length (:func:`deltap.retrieval.standin.plan_retriever`; the plan says so).
            The local model is loaded (its tokenizer counts the prompts exactly) but never asked.
        status: ``status(message)`` → a context manager shown while a slow step runs (the CLI's spinner).

    Raises:
        DeltapError: any setting that cannot work (named as its command-line option).
    """
    from deltap.solvers.base import solver_id
    from deltap.trials.log import TrialLog
    from deltap.trials.prices import prices_for

    solver = solver or SolverSettings()
    executor = executor or ExecutorSettings()
    retriever = retriever or RetrieverSettings()
    config = config or MiningConfig()
    run_dir = RunDir(out) if out is not None else None
    executor.check()
    solver.check()
    if run_dir is not None:
        TrialLog.check_unlocked(run_dir.trials)  # a second run on this directory stops here, at once
    wanted = retriever.retriever is None and retriever.kind != "none" and config.k > 0
    if wanted:
        from deltap.retrieval.factory import existing_index

        existing_index(retriever.kind, retriever.index)  # a mistyped --index stops here, as `deltap search` does
    loaded, corpus, notes = cases.load()
    if any(checker_kind(c.checker.kind).sandboxed for c in loaded):
        notes += _sandbox_gaps()
    built = retriever.retriever
    if wanted and plan_only:  # no embedding call, nothing written: a retriever that embeds is estimated
        from deltap.retrieval.standin import plan_retriever

        built = plan_retriever(retriever.kind, corpus, store=retriever.index, seed=config.seed)
    elif wanted:
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
