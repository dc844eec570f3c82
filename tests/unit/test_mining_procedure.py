"""The per-case procedure shared by ``deltap mine`` and ``deltap simulate`` (issue 14, items 4, 5, 6, 7)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.mining.engine import mine
from deltap.mining.simulation import SCENARIOS, design_config, engine_inputs, run_design
from deltap.solvers.base import SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth


def _case(cid: str, gold: tuple[str, ...]) -> Case:
    return Case(cid, f"question {cid}", gold_doc_ids=gold, checker=CheckerSpec("string_match", {"answers": [f"ans-{cid}"]}), reference_answer=f"ans-{cid}")


class _Recording:
    """Wraps a solver and records the documents of every call (the prompt, for a solver that ignores the rest)."""

    def __init__(self, inner: SimulatedSolver) -> None:
        self.inner = inner
        self.id = inner.id
        self.deterministic = inner.deterministic
        self.prompts: Counter[tuple[str, tuple[str, ...]]] = Counter()

    def answer(self, request: SolveRequest) -> Any:
        self.prompts[(request.case_id, tuple(d.doc_id for d in request.documents))] += 1
        return self.inner.answer(request)

    def score(self, request: SolveRequest, reference: str) -> Any:
        self.prompts[(request.case_id, tuple(d.doc_id for d in request.documents))] += 1
        return self.inner.score(request, reference)


@pytest.mark.parametrize("scenario", ["S1", "interaction", "logprob_text"])
def test_mine_and_simulate_agree_on_the_same_seeds(scenario: str) -> None:
    """The simulation runs the engine's own per-case procedure: the same cases and seeds give the same labels, the
    same trials and the same number of calls (preflight, design trials and coalition checks) as ``mine()``."""
    sc = SCENARIOS[scenario]
    R, seed = 6, 3
    sim = run_design(sc, "adaptive", R, seed, dataset_size=R, keep_cases=True)
    cases, corpus, solver, retriever = engine_inputs(sc, R, seed)
    res = mine(cases, corpus, solver, retriever=retriever, config=design_config(sc, "adaptive", seed))
    assert len(sim.cases) == R
    for pair, case in zip(res.dataset.pairs, sim.cases, strict=True):
        assert pair["id"] == case["case_id"]
        assert {c["doc_id"]: c["verdict"] for c in pair["candidates"]} == case["verdicts"]
        assert pair["metadata"]["calls"] == case["calls"]
        assert pair["metadata"]["trials"] == case["trials"]
        assert pair["metadata"]["status"] == case["status"]
        assert (pair.get("coalitions") or []) == case["coalitions"]
    assert sim.calls_mean == pytest.approx(np.mean([p["metadata"]["calls"] for p in res.dataset.pairs]))


def test_simulation_counts_coalition_checks_and_uses_the_engine_margin() -> None:
    sim = run_design(SCENARIOS["S1"], "adaptive", 20, 1, keep_cases=True)
    cfg = design_config(SCENARIOS["S1"], "adaptive")
    assert cfg.rule().margin == cfg.policy().margin == 0.1
    checked = [c for c in sim.cases if c["coalition_calls"] > 0]
    assert checked and all(c["calls"] == c["preflight_calls"] + c["design_calls"] + c["coalition_calls"] for c in sim.cases)


def test_a_deterministic_solver_is_never_asked_the_same_prompt_twice() -> None:
    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(12)])
    truth = SimulatedTruth(0.1, {"d00": 0.7})
    solver = _Recording(SimulatedSolver({"a": truth}, answers={"a": "ans-a"}, seed=2, deterministic=True))
    res = mine([_case("a", ("d00", "d01"))], corpus, solver, budget=48, n_placebo=1)  # 3 candidates: 8 subsets
    assert max(solver.prompts.values()) == 1
    meta = res.dataset.pairs[0]["metadata"]
    assert meta["calls"] == sum(solver.prompts.values()) <= 8 + 2
    assert meta["trials"] == 48  # the regression still sees every design trial (repeats answered from the cache)


def test_unsolvable_is_not_called_when_a_subset_helps() -> None:
    """Distractors sink the all-documents prompt, and nothing passes without documents, but one document helps on
    its own: random subsets in the preflight see it, the case is mined and the document found."""
    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(12)])
    truth = SimulatedTruth(0.0, {"d00": 0.9, "d03": -0.45, "d04": -0.45, "d05": -0.45})
    solver = SimulatedSolver({"u": truth}, answers={"u": "ans-u"}, seed=4, deterministic=True)

    class Fixed:
        def search(self, query: str, k: int = 10) -> list[Any]:
            from types import SimpleNamespace

            return [SimpleNamespace(doc_id=f"d{i:02d}", score=1.0) for i in range(1, 6)][:k]

    res = mine([_case("u", ("d00",))], corpus, solver, retriever=Fixed(), k=5, n_placebo=2, budget=64)
    pair = res.dataset.pairs[0]
    assert pair["metadata"]["preflight"]["preflight_all"] == [0.0] and pair["metadata"]["preflight"]["preflight_none"] == [0.0]
    assert pair["metadata"]["status"] != "unsolvable"
    assert {c["doc_id"]: c["verdict"] for c in pair["candidates"]}["d00"] == "relevant"


def test_or_structure_gives_two_minimal_coalitions_and_set_recall_uses_them(tmp_path: Any) -> None:
    """Either of two documents suffices: two coalitions {d00} and {d01}, never {d00, d01}, and a run that retrieves
    only one of them covers the query."""
    from deltap.evaluation.sources import load_judgements

    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(20)])
    truths = {f"o{i}": SimulatedTruth(0.05, {"d00": 0.85, "d01": 0.85}, {("d00", "d01"): -0.85}) for i in range(3)}
    solver = SimulatedSolver(truths, answers={c: f"ans-{c}" for c in truths}, seed=1)
    res = mine([_case(c, ("d00", "d01", "d02")) for c in truths], corpus, solver, out=tmp_path, budget=96, n_placebo=3)
    for pair in res.dataset.pairs:
        assert sorted(map(sorted, pair["coalitions"])) == [["d00"], ["d01"]], pair["metadata"].get("coalition_check")
        for check in pair["metadata"]["coalition_check"]:
            assert check["verified"] and check["minimal"]
    judg = load_judgements(tmp_path / "retrieval_dataset.yaml")
    assert sorted(map(sorted, judg.coalitions["o0"])) == [["d00"], ["d01"]]
    from deltap import evaluate

    run = {q: {"d01": 1.0, "d07": 0.5} for q in truths}
    report = evaluate(judg.qrels, run, metrics=["set_recall@1"], coalitions=judg.coalitions, n_resamples=0)
    assert list(report["set_recall@1"]) == [1.0, 1.0, 1.0]  # one of the two coalitions is in the top 1
    only_first = evaluate(judg.qrels, run, metrics=["set_recall@1"], coalitions={q: [frozenset({"d00"})] for q in truths}, n_resamples=0)
    assert only_first.mean("set_recall@1") == 0.0  # with {d00} alone recorded, retrieving d01 would not count


def test_coalitions_are_minimal_no_null_member() -> None:
    """Two additive documents and a null one with a positive estimate: the coalition holds only what it needs."""
    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(20)])
    truths = {f"m{i}": SimulatedTruth(0.0, {"d00": 0.9}) for i in range(4)}
    solver = SimulatedSolver(truths, answers={c: f"ans-{c}" for c in truths}, seed=7)
    res = mine([_case(c, ("d00", "d01", "d02")) for c in truths], corpus, solver, budget=96, n_placebo=4)
    for pair in res.dataset.pairs:
        assert pair["coalitions"] == [["d00"]]
