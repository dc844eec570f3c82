"""End-to-end controls are one table (``deltap.endtoend.systems.CONTROLS``), and a control is scored on the documents
its prompt really holds: the ``all`` control's metrics and single-document trials cover every candidate that fits the
window (issue 36 item 5), not its first ``k`` ids in alphabetical order."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.dataset import VerifiedDataset
from deltap.documents import Corpus, Document
from deltap.endtoend import EndToEndConfig, end_to_end
from deltap.endtoend.systems import CONTROLS, ControlKind, control_systems, register_control
from deltap.errors import DeltapError
from deltap.solvers.base import SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

IDS = [f"d{i}" for i in range(6)]


def _inputs(relevant: str, n: int = 4) -> tuple[list[Case], Corpus, VerifiedDataset, dict[str, SimulatedTruth]]:
    corpus = Corpus([Document(d, f"text of {d}") for d in IDS])
    check = CheckerSpec("string_match", {"answers": ["yes"]})
    cases = [Case(f"c{i}", f"question {i}", (relevant,), check, "yes") for i in range(n)]
    pairs = [
        {"id": c.case_id, "candidates": [{"doc_id": d, "verdict": "relevant" if d == relevant else "irrelevant",
                                          "delta_p": 0.5 if d == relevant else 0.0} for d in reversed(IDS)]}
        for c in cases
    ]  # fmt: skip
    truth = {c.case_id: SimulatedTruth(0.1, {relevant: 0.8}, answer="yes") for c in cases}
    return cases, corpus, VerifiedDataset({}, pairs), truth


class _SmallWindow(SimulatedSolver):
    """A simulated solver whose window holds the question and three documents (10 tokens each)."""

    n_ctx = 40
    max_tokens: dict[str, int] = {}

    def tokens(self, request: SolveRequest) -> list[int]:
        return [0] * (5 + 10 * len(request.documents))


def _rows(result: object) -> dict[tuple[str, str], dict]:
    return {(r["metric"], r["qrels"]): r for r in result.validity["rows"]}  # type: ignore[attr-defined]


def test_the_table_declares_each_control() -> None:
    assert list(CONTROLS) == ["none", "gold", "mined", "all"]
    assert {n: c.defines_qrels for n, c in CONTROLS.items()} == {"none": None, "gold": "gold", "mined": "deltap",
                                                                   "all": None}  # fmt: skip
    assert [n for n, c in CONTROLS.items() if c.cut] == ["gold", "mined"]
    assert [n for n, c in CONTROLS.items() if c.needs_dataset] == ["mined", "all"]
    from deltap.cli.endtoend_cmd import CONTROLS as CLI_CONTROLS

    assert CLI_CONTROLS == "none,gold,mined,all"


def test_control_lists_come_from_the_typed_dataset() -> None:
    cases, _, dataset, _ = _inputs("d4")
    none, gold, mined, every = control_systems(["all", "mined", "gold", "none"], cases, dataset)  # registry order
    assert [s.name for s in (none, gold, mined, every)] == ["none", "gold", "mined", "all"]
    assert (none.top("c0", 3), gold.top("c0", 3), mined.top("c0", 3)) == ([], ["d4"], ["d4"])
    assert every.top("c0", 3) == IDS and not every.cut  # every candidate, by id
    assert every.source == "every candidate of the mined pool"
    legacy = VerifiedDataset({}, [{"id": "c0", "candidates": [{"fqn": "d2", "empirical_relevance": "YES"}]}])
    assert control_systems(["mined"], cases[:1], legacy)[0].top("c0", 3) == ["d2"]  # seed schema: fqn, YES


def test_unknown_or_dataset_less_controls_are_one_line() -> None:
    cases, _, _, _ = _inputs("d4")
    with pytest.raises(DeltapError) as info:
        control_systems(["none", "some"], cases, None)
    assert str(info.value) == "unknown control(s) some; choose from none, gold, mined, all"
    with pytest.raises(DeltapError) as info:
        control_systems(["gold", "all"], cases, None)
    assert str(info.value) == "the all control(s) need the run directory's retrieval_dataset.yaml"


@pytest.fixture
def reversed_gold() -> Iterator[ControlKind]:
    def lists(cases: Sequence[Case], dataset: VerifiedDataset | None) -> dict[str, list[str]]:
        return {c.case_id: list(reversed(c.gold_doc_ids)) for c in cases}

    info = register_control(ControlKind("gold-reversed", lists, cut=True, description="gold, last first",
                                        defines_qrels="gold"))  # fmt: skip
    yield info
    del CONTROLS["gold-reversed"]


def test_a_registered_control_is_built_and_checked(reversed_gold: ControlKind) -> None:
    cases, _, _, _ = _inputs("d4")
    (s,) = control_systems(["gold-reversed"], cases, None)
    assert (s.name, s.kind, s.cut, s.top("c1", 2), s.source) == ("gold-reversed", "control", True, ["d4"],
                                                                 "gold, last first")  # fmt: skip


def test_the_all_control_is_scored_on_every_document_in_its_prompt(tmp_path: Path) -> None:
    cases, corpus, dataset, truth = _inputs("d4")  # d4: not among the first two ids
    systems = control_systems(["none", "gold", "all"], cases, dataset)
    gold = {c.case_id: {"d4": 1} for c in cases}
    cfg = EndToEndConfig(k=2, single_doc=True, n_resamples=50)
    res = end_to_end(cases, corpus, SimulatedSolver(truth, seed=1), systems, out=tmp_path, config=cfg,
                     judgements={"gold": gold}, metrics=["recall@2", "ndcg@2", "P@2"])  # fmt: skip
    rows = _rows(res)
    assert rows[("recall@2", "gold")]["means"] == {"none": 0.0, "gold": 1.0, "all": 1.0}  # was 0: d0, d1 only
    assert rows[("P@2", "gold")]["means"]["all"] == pytest.approx(1 / 6)  # one relevant document of the six shown
    assert rows[("ndcg@2", "gold")]["means"]["all"] == pytest.approx(1 / math.log2(6))  # d4 at rank 5
    assert all(set(res.single_doc[c.case_id]) == set(IDS) for c in cases)  # every document of its prompt, alone
    assert res.run["single_doc_ceiling"] == len(cases) * 6
    trials = json.loads((tmp_path / "per_case.json").read_text(encoding="utf-8"))
    assert trials[0]["trials"]["all"][0]["docs"] == IDS and "shown" not in trials[0]
    precision = rows[("erag_precision@2", "single-doc (eRAG)")]["means"]
    labels = res.erag_labels()
    assert precision["all"] == pytest.approx(sum(sum(labels[c].values()) / 6 for c in labels) / len(labels))


def test_a_control_cut_by_the_window_is_scored_on_what_fits(tmp_path: Path) -> None:
    for relevant, held in (("d2", 1.0), ("d4", 0.0)):  # d2 fits in the window (not in the first two ids); d4 does not
        cases, corpus, dataset, truth = _inputs(relevant)
        systems = control_systems(["gold", "all"], cases, dataset)
        out = tmp_path / relevant
        res = end_to_end(cases, corpus, _SmallWindow(truth, seed=1), systems, out=out, config=EndToEndConfig(k=2,
                         single_doc=True, n_resamples=50), judgements={"gold": {c.case_id: {relevant: 1} for c in cases}},
                         metrics=["recall@2", "hit_rate@2"])  # fmt: skip
        assert res.per_case[0]["dropped"] == {"all": 3}  # d3, d4, d5 left out: the window holds three documents
        rows = _rows(res)
        assert rows[("recall@2", "gold")]["means"] == {"gold": 1.0, "all": held}
        assert rows[("hit_rate@2", "gold")]["means"]["all"] == held
        assert set(res.single_doc["c0"]) == {relevant, "d0", "d1", "d2"}  # gold's and what fit of all; never d3, d5


def test_prompt_metric_scores_each_list_at_its_own_depth() -> None:
    from deltap.endtoend.systems import System, prompt_metric, scored_depth

    every = System("all", "control", {"q1": ["a", "b", "c", "d"], "q2": ["a", "b"], "q3": ["x", "y", "w"]}, cut=False)
    top = System("bm25", "retriever", {"q1": ["a", "b", "c", "d"], "q2": ["c", "a"]})
    qrels = {"q1": {"d": 1}, "q2": {"b": 1, "z": 1}}  # q3 unjudged: alone in its depth group, scores nothing
    assert [scored_depth(every, q, 2) for q in ("q1", "q2", "q3")] == [4, 2, 3]
    assert prompt_metric("recall@2", qrels, every, 2) == {"q1": 1.0, "q2": 0.5}
    assert prompt_metric("recall@2", qrels, top, 2) == {"q1": 0.0, "q2": 0.0}  # cut at 2: d is not in its prompt
    assert prompt_metric("mrr", qrels, every, 2) == {"q1": 0.25, "q2": 0.5}
