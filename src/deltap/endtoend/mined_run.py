"""``evaluate_end_to_end``: the Python twin of ``deltap endtoend`` — a mined run directory in, its end-to-end results
in ``RUN_DIR/endtoend/``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.endtoend.config import EndToEndConfig
from deltap.endtoend.engine import end_to_end
from deltap.endtoend.results import EndToEndResult
from deltap.endtoend.systems import CONTROLS, System, check_controls, control_systems, retriever_systems, run_systems
from deltap.errors import DeltapError
from deltap.run_layout import RunDir

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.dataset import VerifiedDataset
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver

__all__ = ["DEFAULT_RETRIEVERS", "evaluate_end_to_end", "mined_run_systems"]

DEFAULT_RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid")


def mined_run_systems(
    run_dir: str | Path,
    cases: Sequence[Case],
    corpus: Corpus,
    *,
    retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
    runs: Sequence[str] = (),
    controls: Sequence[str] | None = None,
    k: int = EndToEndConfig.k,
    store: str | None = None,
    seed: int = 0,
    plan_only: bool = False,
) -> tuple[list[Case], list[System], VerifiedDataset]:
    """The mined cases of ``run_dir`` among ``cases``, the systems and the mined dataset (``controls``: names of
    :data:`~deltap.endtoend.systems.CONTROLS`, default every registered control). ``plan_only``: for a plan — no
    embedding call, nothing written (:func:`~deltap.endtoend.systems.retriever_systems`).

    Raises:
        DeltapError: not a run directory, no case of ``cases`` mined there, an unknown control, no system.
    """
    from deltap.dataset import read_dataset

    path = RunDir(run_dir).require_mined().dataset
    controls = list(CONTROLS) if controls is None else list(controls)
    check_controls(controls)
    dataset = read_dataset(path)
    mined = {case.case_id for case in dataset.cases}
    kept = [c for c in cases if c.case_id in mined]
    if not kept:
        raise DeltapError(f"no case given was mined in {run_dir}: pass the benchmark the run mined")
    systems = [
        *retriever_systems(list(retrievers), kept, corpus, k, store=store, seed=seed, plan_only=plan_only),
        *run_systems(list(runs), kept, corpus),
        *control_systems(controls, kept, dataset),
    ]
    if not systems:
        raise DeltapError("no system to evaluate: give retrievers, runs or controls")
    return kept, systems, dataset


def evaluate_end_to_end(
    run_dir: str | Path,
    cases: Sequence[Case],
    corpus: Corpus,
    solver: Solver,
    *,
    retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
    runs: Sequence[str] = (),
    controls: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    config: EndToEndConfig | None = None,
    store: str | None = None,
    executor: Executor | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    systems: Sequence[System] | None = None,
    manifest: dict[str, Any] | None = None,
    timed_before: tuple[int, int] = (0, 0),
) -> EndToEndResult:
    """Which retriever makes the solver succeed on a mined run's cases, and which qrels predict it.

    Every system's top-k goes into the prompt, the solver is asked with fresh seeds, the case's checker scores the
    answer (:func:`deltap.endtoend.engine.end_to_end`); then ``metrics`` on the benchmark's gold qrels and on the
    run's mined qrels are checked against that success (:func:`deltap.endtoend.validity.metric_validity`). Results
    go to ``RUN_DIR/endtoend/`` (resumed when present).

    Args:
        run_dir: A ``deltap mine`` run directory.
        cases: The benchmark the run mined (only its mined cases are used).
        corpus: The corpus the run mined.
        solver: The solver (``answer`` for ``pass``, ``score`` for ``logprob``).
        retrievers: Retriever kinds to build systems from (``bm25``, ``dense``, ``hybrid``).
        runs: Saved runs as ``name=path``.
        controls: Control systems, names of :data:`~deltap.endtoend.systems.CONTROLS` (default: every one).
        metrics: Validity metrics (default ``ndcg@K``, ``hit_rate@K``, ``recall@K``).
        config: :class:`EndToEndConfig` (k, repeats, outcome, seed, max_calls...).
        store: Dense index folder or Qdrant URL.
        executor: Where the calls run (default in process).
        progress: Called after each case (see :func:`~deltap.endtoend.engine.end_to_end`).
        systems: Systems already built (skips ``retrievers``/``runs``/``controls``).
        manifest: Extra inputs recorded in ``manifest.json``.
        timed_before: ``(calls, trials)`` made and logged before, to time the solver
            (:func:`deltap.endtoend.plan.run_plan`): counted as this process's.

    Returns:
        An :class:`~deltap.endtoend.results.EndToEndResult`.
    """
    from deltap.dataset import dataset_qrels, read_dataset

    cfg = config or EndToEndConfig()
    if systems is None:
        cases, systems, dataset = mined_run_systems(run_dir, cases, corpus, retrievers=retrievers, runs=runs, controls=controls,
                                                 k=cfg.k, store=store, seed=cfg.seed)  # fmt: skip
    else:
        dataset = read_dataset(RunDir(run_dir).dataset)
    gold = {c.case_id: {d: 1 for d in c.gold_doc_ids} for c in cases if c.gold_doc_ids}
    judgements = {"gold": gold, "deltap": dataset_qrels(dataset)}
    measures = list(metrics or (f"ndcg@{cfg.k}", f"hit_rate@{cfg.k}", f"recall@{cfg.k}"))
    return end_to_end(cases, corpus, solver, systems, out=RunDir(run_dir).endtoend.root, config=cfg, executor=executor,
                      progress=progress, judgements=judgements, metrics=measures,
                      dataset_path=RunDir(run_dir).dataset, manifest={"run_dir": str(run_dir), **(manifest or {})},
                      timed_before=timed_before)  # fmt: skip
