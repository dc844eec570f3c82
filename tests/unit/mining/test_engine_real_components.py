"""Real components in the unit tier, where they are cheap.

* The labels that reach the published qrels, from ``mine()`` on planted truth: which documents get grade 3, 2, 1 and
  0, that ``irrelevant`` (and not only ``relevant``/``harmful``) comes out of the engine, and that undecided
  documents stay unjudged. Every row of the dataset is re-derived from its own numbers with ``verdict()`` /
  ``grade()``.
* ``mine()`` with a real BM25 retriever (bm25s) building the pool, instead of ``retriever=None``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deltap.documents import Corpus, Document
from deltap.judgements import load_qrels
from deltap.mining.engine import mine
from deltap.mining.verdicts import EMPIRICAL, default_policy, grade, verdict
from deltap.retrieval.bm25 import BM25Retriever
from deltap.solvers.base import Score, SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from tests.helpers import string_case


class PerCaseNoiseSolver(SimulatedSolver):
    """:class:`SimulatedSolver` whose ``score`` noise differs per case (a hopelessly noisy case leaves all undecided)."""

    def __init__(self, *args: Any, case_noise: dict[str, float], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.case_noise = case_noise

    def score(self, request: SolveRequest, reference: str) -> Score:
        default = self.noise
        self.noise = self.case_noise.get(request.case_id, default)
        try:
            return super().score(request, reference)
        finally:
            self.noise = default


def _assert_rows_follow_the_rules(res: Any, outcome: str) -> None:
    """Every candidate's verdict, grade and YES/NO label are what the rules give for its recorded numbers."""
    policy = default_policy(outcome)
    for pair in res.dataset.pairs:
        for c in pair["candidates"]:
            reg = c.get("regression_effect")
            if reg is None:
                assert c["verdict"] == "undecided" and c["grade"] is None
                continue
            expected = verdict(reg["coef"], reg["se"] if reg["se"] is not None else float("inf"), c["q_value"], policy)
            assert c["verdict"] == expected, (pair["id"], c["doc_id"], reg, c["q_value"])
            assert c["grade"] == grade(reg["coef"], expected, policy)
            assert c["empirical_relevance"] == EMPIRICAL[expected]


# The planted truth (nats): grade bounds for logprob are [0.5, 1.5) -> 1, [1.5, 3) -> 2, >= 3 -> 3; every effect sits
# far from a bound compared with its standard error (~0.1 nats at 32 trials with noise 0.3).
PLANTED = {"g3": 4.0, "g2": 2.2, "g1": 0.9, "h0": -2.2}


@pytest.fixture()
def corpus() -> Corpus:
    docs = [Document(d, f"planted {d}") for d in PLANTED] + [Document(f"n{i}", f"noise {i}") for i in range(2)]
    docs += [Document(f"p{i:02d}", f"filler text {i}") for i in range(30)]
    return Corpus(docs)


def test_engine_grades_0_1_2_3_and_irrelevant(tmp_path: Path, corpus: Corpus) -> None:
    cases = [string_case("planted", tuple(PLANTED)), string_case("noisy", ("n0", "n1"))]
    truths = {"planted": SimulatedTruth(-6.0, PLANTED), "noisy": SimulatedTruth(-6.0, {})}
    solver = PerCaseNoiseSolver(truths, outcome="logprob", noise=0.3, seed=3, case_noise={"noisy": 40.0})
    res = mine(
        cases, corpus, solver, out=tmp_path, outcome="logprob", null="zero", budget=64, n_placebo=6, coalitions=False
    )
    by_case = {p["id"]: {c["doc_id"]: c for c in p["candidates"]} for p in res.dataset.pairs}

    planted = by_case["planted"]
    assert {d: planted[d]["verdict"] for d in PLANTED} == {
        "g3": "relevant",
        "g2": "relevant",
        "g1": "relevant",
        "h0": "harmful",
    }
    placebos = [d for d, c in planted.items() if c["source"] == ["placebo"]]
    assert len(placebos) == 6
    assert {planted[d]["verdict"] for d in placebos} == {"irrelevant"}  # proven not to matter: judged, grade 0
    assert all(by_case["noisy"][d]["verdict"] == "undecided" for d in by_case["noisy"])

    expected = {"planted": {"g3": 3, "g2": 2, "g1": 1, "h0": 0, **dict.fromkeys(placebos, 0)}}
    for name in ("qrels/test.tsv", "qrels.trec", "retrieval_dataset.yaml"):
        assert load_qrels(tmp_path / name) == expected, name  # undecided documents (the noisy case) are unjudged
    _assert_rows_follow_the_rules(res, "logprob")


def test_engine_irrelevant_with_the_pass_outcome(corpus: Corpus) -> None:
    """The same with the checker in the loop (0/1 outcomes): a zero effect with enough trials is proven irrelevant."""
    case = string_case("p", ("g3", "g2"))
    truth = SimulatedTruth(0.3, {"g3": 0.6})  # g2 has no effect here
    solver = SimulatedSolver({"p": truth}, answers={"p": "ans-p"}, seed=11)
    # gold_weight 1: with the default weight 8 the (weighted) futility rule settles the nulls at ~190 trials, before
    # equivalence can be shown; this test is about the equivalence verdict itself
    res = mine([case], corpus, solver, budget=512, n_placebo=4, coalitions=False, gold_weight=1.0)
    rows = {c["doc_id"]: c for c in res.dataset.pairs[0]["candidates"]}
    assert rows["g3"]["verdict"] == "relevant" and rows["g3"]["grade"] == 3
    verdicts = [c["verdict"] for c in rows.values() if c["doc_id"] != "g3"]
    assert "irrelevant" in verdicts and "relevant" not in verdicts and "harmful" not in verdicts
    assert all(
        c["grade"] == (0 if c["verdict"] == "irrelevant" else None) for c in rows.values() if c["doc_id"] != "g3"
    )
    _assert_rows_follow_the_rules(res, "pass")


BM25_DOCS = {
    "session-service": "The session service stores the state of a conversation between the user and the agent.",
    "session-events": "Events are appended to a session; each event records one turn of the conversation state.",
    "runner": "The runner executes an agent and streams its events.",
    "tools": "Tools are functions an agent may call.",
    "memory": "Long term memory outlives a single conversation.",
}


def test_mine_with_a_real_bm25_retriever(tmp_path: Path) -> None:
    docs = [Document(d, t) for d, t in BM25_DOCS.items()] + [
        Document(f"x{i:02d}", f"unrelated filler number {i}") for i in range(20)
    ]
    corpus = Corpus(docs)
    retriever = BM25Retriever(corpus)
    query = "How does the session service keep the conversation state?"
    top = [h.doc_id for h in retriever.search(query, k=3)]
    assert top[0] == "session-service" and "session-events" in top  # what BM25 ranks first

    # The gold document is the runner; the document that actually helps is one only retrieval finds.
    case = string_case("s", ("runner",), query=query)
    truth = SimulatedTruth(-6.0, {"session-events": 2.5})
    solver = SimulatedSolver({"s": truth}, outcome="logprob", noise=0.3, seed=1)
    res = mine(
        [case],
        corpus,
        solver,
        out=tmp_path,
        retriever=retriever,
        outcome="logprob",
        null="zero",
        k=3,
        n_placebo=4,
        budget=64,
        coalitions=False,
    )
    rows = {c["doc_id"]: c for c in res.dataset.pairs[0]["candidates"]}
    retrieved = {d for d, c in rows.items() if "retrieved" in c["source"]}
    assert retrieved == set(top)
    assert rows["runner"]["source"][0] == "gold"
    assert rows["session-events"]["verdict"] == "relevant" and rows["session-events"]["grade"] == 2
    assert "gold" not in rows["session-events"]["source"]
    assert rows["runner"]["verdict"] == "irrelevant" and rows["runner"]["grade"] == 0  # gold, but proven useless
    assert load_qrels(tmp_path / "qrels" / "test.tsv")["s"]["session-events"] == 2
    _assert_rows_follow_the_rules(res, "logprob")
