"""A mining case's trials: its pool through the trial layer (:class:`TrialRunner`, the
:class:`~deltap.mining.procedure.TrialSource` of ``mine()``), the pool's context-window fit (:func:`fit_context`)
and the calls a case's log holds by phase (:func:`logged_calls`).

The trial itself — documents in an order, a seed, one solver call, one outcome, logged before it counts — is
:class:`deltap.trials.runner.CaseTrials`; here a pool becomes its documents, in the canonical order of
:func:`deltap.mining.design.canonical_order`, and the mining options become its outcome, seed and workers.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from deltap.mining.config import MiningConfig
from deltap.mining.design import canonical_order
from deltap.mining.pool import Pool
from deltap.solvers.base import ContextWindow
from deltap.trials.context import fit_window
from deltap.trials.log import TrialLog
from deltap.trials.runner import CallTally, CaseTrials, is_cached

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.checkers.base import Checker
    from deltap.documents import Corpus
    from deltap.execution.base import Executor
    from deltap.solvers.base import Solver

__all__ = ["TrialRunner", "fit_context", "logged_calls", "pool_order"]


def pool_order(pool: Pool, corpus: Corpus, cfg: MiningConfig) -> list[int]:
    """Positions of the pool's candidates in prompt order: the canonical order (longest first for ``context_order``
    ``length``, else by id)."""
    lengths = [len(corpus[d].text) for d in pool.doc_ids] if cfg.context_order == "length" else None
    return canonical_order(pool.doc_ids, lengths)


class TrialRunner(CaseTrials):
    """One case's trials over its pool (see :class:`~deltap.trials.runner.CaseTrials`): an inclusion vector has one
    entry per candidate in pool order; the prompt shows them in the canonical order; the seed, outcome and workers
    are the run's (``cfg``)."""

    def __init__(
        self,
        case: Case,
        pool: Pool,
        corpus: Corpus,
        solver: Solver,
        checker: Checker | None,
        log: TrialLog,
        cfg: MiningConfig,
        executor: Executor | None = None,
        tally: CallTally | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.pool, self.cfg = pool, cfg
        super().__init__(
            case, [corpus[d] for d in pool.doc_ids], solver, checker, log, outcome=cfg.outcome, seed=cfg.seed,
            order=pool_order(pool, corpus, cfg), executor=executor, workers=cfg.workers, tally=tally, stop=stop,
        )  # fmt: skip


def fit_context(
    pool: Pool, case: Case, corpus: Corpus, solver: object, cfg: MiningConfig
) -> tuple[Pool, dict[str, Any] | None]:
    """Drop candidates until the every-candidate prompt fits the solver's context window (the trial layer's rule,
    :func:`deltap.trials.context.fit_window`) — once per case, before any trial, so no trial can overflow.

    Dropped first: retrieved candidates from the worst rank, then placebos, then gold (last first). A solver without
    a window to fit (or an empty pool) returns ``(pool, None)``: an overflow becomes the case's outcome
    (``context_overflow``) instead.
    """
    if not isinstance(solver, ContextWindow) or not pool.candidates:
        return pool, None
    cands = list(pool.candidates)
    order = pool_order(pool, corpus, cfg)
    at = {pool.doc_ids[i]: p for p, i in enumerate(order)}  # doc id -> position in prompt order
    expendable = (
        sorted((c for c in cands if c.sources == ("retrieved",)), key=lambda c: -(c.retrieval_rank or 0))
        + [c for c in reversed(cands) if c.is_placebo]
        + [c for c in reversed(cands) if "gold" in c.sources]
    )
    docs = [corpus[pool.doc_ids[i]] for i in order]
    fit = fit_window(case, docs, solver, cfg.outcome, drop_order=[at[c.doc_id] for c in expendable])
    if fit is None:
        return pool, None
    dropped = [docs[p].doc_id for p in fit.dropped]
    gone = set(dropped)
    kept = [c for c in cands if c.doc_id not in gone]
    info = {"window": fit.window, "reserve": fit.reserve, "all_candidates_tokens": fit.tokens, "dropped": dropped}
    return Pool(pool.case_id, kept, list(pool.missing_gold), [*pool.dropped, *dropped]), info


def logged_calls(log: TrialLog, case_id: str) -> dict[str, int]:
    """Solver calls of a case by kind (preflight, design, coalition): its logged trials minus those answered from
    the cache — the same after a resume."""
    out = {"preflight": 0, "design": 0, "coalition": 0}
    for r in log.trials(case_id):
        if not is_cached(r):
            kind = "preflight" if r.kind.startswith("preflight") else r.kind
            out[kind] = out.get(kind, 0) + 1
    return out
