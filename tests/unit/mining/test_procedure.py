"""The per-case procedure shared by ``deltap mine`` and ``deltap simulate`` (issue 14, items 4, 5, 6, 7)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from deltap.documents import Corpus, Document
from deltap.mining.engine import mine
from deltap.mining.simulation import SCENARIOS, design_config, engine_inputs, run_design
from deltap.solvers.base import SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from tests.helpers import answering_solver, numbered_corpus, string_case


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
    assert cfg.rule().margin == cfg.policy().margin  # the product's equivalence margin, not a copy of it
    checked = [c for c in sim.cases if c["coalition_calls"] > 0]
    assert checked and all(
        c["calls"] == c["preflight_calls"] + c["design_calls"] + c["coalition_calls"] for c in sim.cases
    )


def test_a_deterministic_solver_is_never_asked_the_same_prompt_twice() -> None:
    corpus = numbered_corpus(12)
    truth = SimulatedTruth(0.1, {"d00": 0.7})
    solver = _Recording(SimulatedSolver({"a": truth}, answers={"a": "ans-a"}, seed=2, deterministic=True))
    res = mine([string_case("a", ("d00", "d01"))], corpus, solver, budget=48, n_placebo=1)  # 3 candidates: 8 subsets
    assert max(solver.prompts.values()) == 1
    meta = res.dataset.pairs[0]["metadata"]
    assert meta["calls"] == sum(solver.prompts.values()) <= 8 + 2
    assert meta["trials"] == 48  # the regression still sees every design trial (repeats answered from the cache)


def test_unsolvable_is_not_called_when_a_subset_helps() -> None:
    """Distractors sink the all-documents prompt, and nothing passes without documents, but one document helps on
    its own: random subsets in the preflight see it, the case is mined and the document found."""
    corpus = numbered_corpus(12)
    truth = SimulatedTruth(0.0, {"d00": 0.9, "d03": -0.45, "d04": -0.45, "d05": -0.45})
    solver = SimulatedSolver({"u": truth}, answers={"u": "ans-u"}, seed=4, deterministic=True)

    class Fixed:
        def search(self, query: str, k: int = 10) -> list[Any]:
            from types import SimpleNamespace

            return [SimpleNamespace(doc_id=f"d{i:02d}", score=1.0) for i in range(1, 6)][:k]

    res = mine([string_case("u", ("d00",))], corpus, solver, retriever=Fixed(), k=5, n_placebo=2, budget=64)
    pair = res.dataset.pairs[0]
    assert pair["metadata"]["preflight"]["preflight_all"] == [0.0] and pair["metadata"]["preflight"][
        "preflight_none"
    ] == [0.0]
    assert pair["metadata"]["status"] != "unsolvable"
    assert {c["doc_id"]: c["verdict"] for c in pair["candidates"]}["d00"] == "relevant"


def test_or_structure_gives_two_minimal_coalitions_and_set_recall_uses_them(tmp_path: Any) -> None:
    """Either of two documents suffices: two coalitions {d00} and {d01}, never {d00, d01}, and a run that retrieves
    only one of them covers the query."""
    from deltap.judgements import load_judgements

    corpus = numbered_corpus(20)
    truths = {f"o{i}": SimulatedTruth(0.05, {"d00": 0.85, "d01": 0.85}, {("d00", "d01"): -0.85}) for i in range(3)}
    solver = answering_solver(truths, seed=1)
    res = mine(
        [string_case(c, ("d00", "d01", "d02")) for c in truths],
        corpus,
        solver,
        out=tmp_path,
        budget=96,
        first_look=96,
        n_placebo=3,
    )
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
    only_first = evaluate(
        judg.qrels, run, metrics=["set_recall@1"], coalitions={q: [frozenset({"d00"})] for q in truths}, n_resamples=0
    )
    assert only_first.mean("set_recall@1") == 0.0  # with {d00} alone recorded, retrieving d01 would not count


def test_coalitions_are_minimal_no_null_member() -> None:
    """Two additive documents and a null one with a positive estimate: the coalition holds only what it needs."""
    corpus = numbered_corpus(20)
    truths = {f"m{i}": SimulatedTruth(0.0, {"d00": 0.9}) for i in range(4)}
    solver = answering_solver(truths, seed=7)
    res = mine([string_case(c, ("d00", "d01", "d02")) for c in truths], corpus, solver, budget=96, n_placebo=4)
    for pair in res.dataset.pairs:
        assert pair["coalitions"] == [["d00"]]


def test_gold_prior_weight_is_a_weighted_bh_that_keeps_the_fdr() -> None:
    """Weights fixed before any trial (gold candidates weight W, the rest 1, rescaled to average 1 over the dataset):
    weighted BH (Genovese, Roeder & Wasserman 2006) gains recall on gold documents and keeps the FDR — also when the
    gold documents are not the relevant ones."""
    from dataclasses import replace as dc_replace

    from deltap.mining.labels import prior_weights

    sc = SCENARIOS["S1"]
    plain = run_design(sc, "fixed:80/gw1", 240, 5)
    weighted = run_design(sc, "fixed:80/gw4", 240, 5)
    assert weighted.recall >= plain.recall + 0.03  # 480 relevant documents; measured 0.70 -> 0.80
    assert weighted.fdr <= 0.045 + 0.03
    wrong = dc_replace(sc, name="S1_wrong_gold", gold=(5, 6))  # the benchmark names two null documents as gold
    misled = run_design(wrong, "fixed:80/gw4", 240, 5)
    assert misled.fdr <= 0.045 + 0.03 and misled.null_fpr <= 0.01
    # the weights average 1 over the dataset's candidates
    cases, corpus, solver, retriever = engine_inputs(sc, 3, 0)
    res = mine(cases, corpus, solver, retriever=retriever, config=design_config(sc, "fixed:40/gw4", 0))
    w = prior_weights([r for r in res.cases], res.dataset.metadata["config"]["gold_weight"])
    flat = np.concatenate(w)
    assert flat.mean() == pytest.approx(1.0) and flat.max() / flat.min() == pytest.approx(4.0)


class _Windowed(SimulatedSolver):
    """A simulated solver with a context window: a prompt's tokens are its documents' words plus 20."""

    def __init__(self, *a: Any, n_ctx: int, count: bool = True, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.n_ctx = n_ctx
        self.max_tokens = {"api_understanding": 10}
        if count:
            self.tokens = lambda request: [0] * (20 + sum(len(d.text.split()) for d in request.documents))

    def answer(self, request: SolveRequest) -> Any:
        from deltap.solvers.base import SolverError

        n = 20 + sum(len(d.text.split()) for d in request.documents)
        if n + 10 > self.n_ctx:
            raise SolverError(f"prompt of {n} tokens + 10 answer tokens exceeds n_ctx={self.n_ctx}")
        return super().answer(request)


def _long_corpus() -> Corpus:
    return Corpus([Document(f"d{i:02d}", " ".join(["word"] * (100 if i % 2 else 10))) for i in range(16)])


class _Ranked:
    def search(self, query: str, k: int = 10) -> list[Any]:
        from types import SimpleNamespace

        return [SimpleNamespace(doc_id=f"d{i:02d}", score=1.0) for i in range(1, 9)][:k]


def test_prompts_fit_the_context_window_by_construction() -> None:
    """The solver can count tokens: retrieved candidates are dropped (worst rank first) until the every-candidate
    prompt fits, once per case — no trial overflows, so no error is dropped non-randomly."""
    solver = _Windowed({"w": SimulatedTruth(0.1, {"d00": 0.7})}, answers={"w": "ans-w"}, seed=3, n_ctx=300)
    res = mine([string_case("w", ("d00",))], _long_corpus(), solver, retriever=_Ranked(), k=8, n_placebo=2, budget=48)
    pair = res.dataset.pairs[0]
    meta = pair["metadata"]
    assert meta["errors"] == 0 and meta["status"] in ("mined", "budget_exhausted")
    ctx = meta["context"]
    assert ctx["window"] == 300 and ctx["all_candidates_tokens"] + ctx["reserve"] <= 300
    ids = [c["doc_id"] for c in pair["candidates"]]
    assert "d00" in ids and ctx["dropped"] and set(ctx["dropped"]) <= set(meta["dropped_candidates"])
    kept_ranks = [int(i[1:]) for i in ids if 1 <= int(i[1:]) <= 8]  # the retriever ranks d01 … d08 in order
    dropped_ranks = [int(d[1:]) for d in ctx["dropped"] if 1 <= int(d[1:]) <= 8]
    assert dropped_ranks and (not kept_ranks or max(kept_ranks) < min(dropped_ranks))  # the worst ranks go first
    assert {c["doc_id"]: c["verdict"] for c in pair["candidates"]}["d00"] == "relevant"


def test_a_context_overflow_is_its_own_outcome_and_stops_the_case() -> None:
    """A solver that cannot count tokens overflows on the larger subsets: those trials are recorded as ``overflow``
    (not errors to drop and replace) and the case stops with status ``context_overflow`` — estimates from the
    subsets that happened to fit would be biased towards short contexts."""
    solver = _Windowed({"w": SimulatedTruth(0.1, {"d00": 0.7})}, answers={"w": "ans-w"}, seed=3, n_ctx=300, count=False)
    res = mine([string_case("w", ("d00",))], _long_corpus(), solver, retriever=_Ranked(), k=8, n_placebo=2, budget=48)
    meta = res.dataset.pairs[0]["metadata"]
    assert meta["status"] == "context_overflow" and "--max-candidates" in meta["reason"]
    assert all(c["verdict"] == "undecided" for c in res.dataset.pairs[0]["candidates"])


def test_coalition_checks_stay_within_verify_trials_for_a_deterministic_solver() -> None:
    """One call per checked context, at most ``verify_trials`` of them per case (the demo's budget promise)."""
    corpus = numbered_corpus(20)
    truths = {f"g{i}": SimulatedTruth(0.0, {"d00": 1.0, "d01": 1.0, "d02": 1.0}) for i in range(3)}  # any one suffices
    solver = _Recording(answering_solver(truths, seed=2, deterministic=True))
    res = mine(
        [string_case(c, ("d00", "d01", "d02")) for c in truths], corpus, solver, budget=64, n_placebo=4, verify_trials=2
    )
    for pair in res.dataset.pairs:
        assert pair["metadata"]["calls_by_kind"]["coalition"] <= 2
    assert sum(len(p["coalitions"]) for p in res.dataset.pairs) >= 3  # singletons found within the budget
    assert max(solver.prompts.values()) == 1
