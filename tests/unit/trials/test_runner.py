"""One case's trials over ordered documents (:class:`deltap.trials.runner.CaseTrials`): the prompt shows the included
documents in the order given, the log keeps the inclusion in the caller's order, every trial has its seed, a
deterministic solver's prompt cache can be shared, and mining's pool runner is this runner with the canonical order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.mining.config import MiningConfig
from deltap.mining.pool import Candidate, Pool
from deltap.solvers.base import Answer, SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog
from deltap.trials.runner import CaseTrials, all_in
from deltap.trials.seeds import trial_seed

DOCS = [Document("a", "alpha " * 3), Document("b", "beta " * 9), Document("c", "gamma " * 5)]
CASE = Case("q1", "Which class runs agents?", ("a",), CheckerSpec("string_match", {"answers": ["Runner"]}))


class Recorder:
    """A deterministic solver that answers ``Runner`` when document ``a`` is shown, and remembers every request."""

    deterministic = True
    id = "recorder"

    def __init__(self) -> None:
        self.seen: list[SolveRequest] = []

    def answer(self, request: SolveRequest) -> Answer:
        self.seen.append(request)
        shown = [d.doc_id for d in request.documents]
        return Answer(text="Runner" if "a" in shown else "no idea", usage={"prompt_tokens": 10 * len(shown)})


def _checker() -> Any:
    from deltap.checkers import make_checker

    return make_checker(CASE.checker)


def test_the_prompt_follows_the_order_and_the_log_the_callers_columns(tmp_path: Path) -> None:
    solver = Recorder()
    with TrialLog(tmp_path / "t.sqlite") as log:
        trials = CaseTrials(CASE, DOCS, solver, _checker(), log, outcome="pass", seed=7, order=[2, 0, 1])
        incl = np.array([True, False, True])
        recs = trials.get("design", [0, 3], lambda i, s: incl)
        assert [[d.doc_id for d in r.documents] for r in solver.seen] == [["c", "a"]]  # one call: same prompt
        assert [r.inclusion for r in recs] == ["101", "101"]  # columns as given, not as shown
        assert [r.seed for r in recs] == [trial_seed(7, "q1", 0, "design"), trial_seed(7, "q1", 3, "design")]
        assert solver.seen[0].extra["trial_seed"] == recs[0].seed
        assert recs[1].detail.startswith("cached:") and trials.calls == 1
        assert [(r.outcome, r.value, r.prompt_tokens) for r in recs] == [("pass", 1.0, 20), ("pass", 1.0, 20)]
        assert log.count() == 2  # logged before they count


def test_a_case_shares_one_prompt_cache_between_its_lists(tmp_path: Path) -> None:
    solver = Recorder()
    answered: dict[str, Any] = {}
    with TrialLog(tmp_path / "t.sqlite") as log:
        first = CaseTrials(CASE, DOCS[:2], solver, _checker(), log, outcome="pass", seed=0, answered=answered)
        first.get("endtoend:x", [0], all_in(2))
        second = CaseTrials(CASE, DOCS[:2], solver, _checker(), log, outcome="pass", seed=0, answered=answered)
        recs = second.get("endtoend:y", [0], all_in(2))
        assert len(solver.seen) == 1 and second.calls == 0 and recs[0].detail == "cached: same prompt as endtoend:x 0"
        # a new runner reads the log: nothing is asked again
        again = CaseTrials(CASE, DOCS[:2], solver, _checker(), log, outcome="pass", seed=0)
        assert again.get("endtoend:x", [0], all_in(2))[0].answer == "Runner" and len(solver.seen) == 1


def test_minings_pool_runner_is_the_trial_runner_in_canonical_order(tmp_path: Path) -> None:
    from deltap.mining.design import canonical_order
    from deltap.mining.runner import TrialRunner

    corpus = Corpus(DOCS)
    pool = Pool("q1", [Candidate("b", ("retrieved",), 1), Candidate("a", ("gold",)), Candidate("c", ("placebo",))])
    cfg = MiningConfig(seed=3, context_order="length")
    solver = SimulatedSolver({"q1": SimulatedTruth(0.2, {"a": 0.6})}, answers={"q1": "Runner"}, seed=1)
    X = np.random.default_rng(0).random((12, 3)) < 0.5
    (tmp_path / "m").mkdir(), (tmp_path / "t").mkdir()  # one log per directory (the run lock)
    with TrialLog(tmp_path / "m" / "trials.sqlite") as m, TrialLog(tmp_path / "t" / "trials.sqlite") as t:
        mined = TrialRunner(CASE, pool, corpus, solver, _checker(), m, cfg).run("design", range(12), X)
        order = canonical_order(pool.doc_ids, [len(corpus[d].text) for d in pool.doc_ids])
        direct = CaseTrials(CASE, [corpus[d] for d in pool.doc_ids], solver, _checker(), t, outcome="pass", seed=3,
                            order=order).run("design", range(12), X)  # fmt: skip
        assert order == [0, 2, 1]  # longest first: b (45 characters), c (30), a (18)
        np.testing.assert_array_equal(mined, direct)
        assert [replace(r, latency=0.0) for r in m.trials("q1")] == [replace(r, latency=0.0) for r in t.trials("q1")]
