"""Labels end to end through ``mine()`` with the simulated solver: the statistics of issue 14 (items 1, 2, 3, 8)."""

from __future__ import annotations

from typing import Any

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.mining.engine import mine
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus([Document(f"d{i:02d}", f"text {i} " * (1 + i % 7)) for i in range(60)])


def _case(cid: str, gold: tuple[str, ...] = ("d00",)) -> Case:
    return Case(cid, f"question {cid}", gold_doc_ids=gold, checker=CheckerSpec("string_match", {"answers": [f"ans-{cid}"]}), reference_answer=f"ans-{cid}")


def _solver(truths: dict[str, SimulatedTruth], **kw: Any) -> SimulatedSolver:
    return SimulatedSolver(truths, answers={c: f"ans-{c}" for c in truths}, seed=5, **kw)


def _row(res: Any, case_id: str, doc_id: str) -> dict[str, Any]:
    pair = next(p for p in res.dataset.pairs if p["id"] == case_id)
    return next(c for c in pair["candidates"] if c["doc_id"] == doc_id)


def test_a_document_that_decides_the_answer_is_relevant_with_many_candidates(corpus: Corpus) -> None:
    # Issue 14 item 1: pass iff d00 is in the context (ΔP = 1.0), 24+ candidates: the exact fit's t underflowed to
    # z = 0, p = 1, and the decisive document came out undecided after burning the whole budget.
    case = _case("dec")
    truths = {"dec": SimulatedTruth(0.0, {"d00": 1.0})}
    res = mine([case], corpus, _solver(truths), budget=128, n_placebo=23, coalitions=False)
    row = _row(res, "dec", "d00")
    assert len(res.dataset.pairs[0]["candidates"]) >= 24
    assert row["verdict"] == "relevant", row
    assert row["q_value"] is not None and row["q_value"] < 1e-6
    assert row["delta_p"] == pytest.approx(1.0)
