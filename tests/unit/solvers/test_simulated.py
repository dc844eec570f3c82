"""The simulated solver: planted success probabilities, seeded per trial, satisfying the Solver protocol."""

from __future__ import annotations

import numpy as np
import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.documents import Document
from deltap.solvers.base import Solver, SolveRequest, SolverError
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

DOCS = {d: Document(d, f"text of {d}") for d in ("a", "b", "c")}


def _req(ids: tuple[str, ...], seed: int) -> SolveRequest:
    return SolveRequest("c1", "question?", tuple(DOCS[i] for i in ids), extra={"trial_seed": seed})


def test_protocol_and_pass_rates_follow_the_truth() -> None:
    truth = SimulatedTruth(0.1, {"a": 0.5, "b": -0.1}, {("a", "c"): 0.3})
    solver = SimulatedSolver(truth, answers={"c1": "Runner"}, seed=1)
    assert isinstance(solver, Solver)
    checker = make_checker(CheckerSpec("string_match", {"answers": ["Runner"]}))
    case = Case("c1", "question?", checker=CheckerSpec("string_match", {"answers": ["Runner"]}))
    for ids, p in [((), 0.1), (("a",), 0.6), (("a", "c"), 0.9), (("b",), 0.0)]:
        passes = [checker.check(case, solver.answer(_req(ids, s)).text).passed for s in range(3000)]
        assert np.mean(passes) == pytest.approx(p, abs=0.03), ids
    assert truth.mean(("a", "b", "c")) == pytest.approx(0.8)


def test_same_trial_seed_same_answer_and_probability_matrix() -> None:
    truth = SimulatedTruth(0.3, {"a": 0.4})
    solver = SimulatedSolver(truth, answers={"c1": "X"}, seed=2)
    answers1 = [solver.answer(_req(("a",), s)).text for s in range(50)]
    answers2 = [SimulatedSolver(truth, answers={"c1": "X"}, seed=2).answer(_req(("a",), s)).text for s in range(50)]
    assert answers1 == answers2
    assert len(set(answers1)) == 2
    X = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]])
    np.testing.assert_allclose(truth.probability_matrix(X, ["a", "b", "c"]), [0.7, 0.3, 0.7])


def test_logprob_mode_is_gaussian_around_the_planted_mean() -> None:
    truth = SimulatedTruth(-5.0, {"a": 2.0})
    solver = SimulatedSolver(truth, outcome="logprob", noise=0.5, seed=0)
    vals = np.array([solver.score(_req(("a",), s), "X").logprob for s in range(4000)])
    assert vals.mean() == pytest.approx(-3.0, abs=0.03)
    assert vals.std() == pytest.approx(0.5, rel=0.05)


def test_error_rate_raises_solver_error() -> None:
    solver = SimulatedSolver(SimulatedTruth(0.5), answers={"c1": "X"}, error_rate=0.3, seed=0)
    errors = 0
    for s in range(1000):
        try:
            solver.answer(_req((), s))
        except SolverError:
            errors += 1
    assert 240 < errors < 360


def test_missing_reference_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no reference answer"):
        SimulatedSolver(SimulatedTruth(0.5)).answer(_req((), 0))
