"""The verified dataset's one typed reader (issue 33 item 3): every consumer reads ``retrieval_dataset.yaml`` through
``VerifiedDataset.cases`` → ``CaseRecord`` → ``CandidateRecord``; old seed-schema files (``fqn``,
``empirical_relevance``) read the same as new ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from deltap.dataset import (
    CandidateRecord,
    CaseRecord,
    GradedUtility,
    VerifiedDataset,
    dataset_qrels,
    dataset_signed_gains,
    read_dataset,
)
from deltap.errors import FormatError

NEW = """\
metadata: {outcome: pass, seed: 3}
pairs:
- id: q1
  query: which one?
  reference_answer: '42'
  candidates:
  - {doc_id: m.A, fqn: m.A, source: [gold], empirical_relevance: 'YES', verdict: relevant, delta_p: 0.4,
     ci_low: 0.1, ci_high: 0.7, grade: 2, regression_effect: {coef: 0.35, ci_low: 0.05, ci_high: 0.65}}
  - {doc_id: m.B, fqn: m.B, source: [retrieved], empirical_relevance: HARMFUL, verdict: harmful, delta_p: 0.2, grade: 0}
  - {doc_id: m.C, fqn: m.C, source: [placebo], empirical_relevance: UNDECIDED, verdict: undecided, delta_p: .nan,
     grade: null}
  coalition: [m.A]
  coalitions: [[m.A]]
  metadata: {status: mined, trials: 48, calls: 52, base_success_rate: 0.25, missing_gold: [m.Z]}
"""

OLD = """\
pairs:
- id: q1
  query: which one?
  candidates:
  - {fqn: m.A, source: gold, empirical_relevance: YES, delta_p: 0.4}
  - {fqn: m.B, source: retrieved, empirical_relevance: HARMFUL, delta_p: -0.2}
  - {fqn: m.C, source: placebo, empirical_relevance: UNDECIDED}
"""


def _read(tmp_path: Path, text: str, name: str = "retrieval_dataset.yaml") -> VerifiedDataset:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return read_dataset(path)


def test_a_new_file_reads_into_typed_records(tmp_path: Path) -> None:
    (case,) = _read(tmp_path, NEW).cases
    assert isinstance(case, CaseRecord) and (case.case_id, case.query, case.reference_answer) == (
        "q1",
        "which one?",
        "42",
    )
    assert (case.status, case.trials, case.calls, case.base_success_rate) == ("mined", 48, 52, 0.25)
    assert case.coalition == ("m.A",) and case.winning_coalitions == (("m.A",),)
    a, b, c = case.candidates
    assert (a.doc_id, a.sources, a.verdict, a.grade, a.delta_p, a.effect) == ("m.A", ("gold",), "relevant", 2, 0.4,
                                                                               (0.35, 0.05, 0.65))  # fmt: skip
    assert (b.verdict, b.signed_gain, b.primary_source, b.is_gold) == ("harmful", -0.2, "retrieved", False)
    assert (c.verdict, c.delta_p, c.grade, c.graded) == ("undecided", None, None, None)  # nan: no estimate
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.verdict = "irrelevant"  # type: ignore[misc]


def test_an_old_file_reads_the_same(tmp_path: Path) -> None:
    old, new = _read(tmp_path, OLD, "old.yaml"), _read(tmp_path, NEW, "new.yaml")
    key = [(c.doc_id, c.sources, c.verdict) for c in old.cases[0].candidates]
    assert key == [(c.doc_id, c.sources, c.verdict) for c in new.cases[0].candidates]
    assert [c.grade for c in old.cases[0].candidates] == [1, 0, None]  # seed schema without grades: YES 1, HARMFUL 0
    assert dataset_qrels(old) == {"q1": {"m.A": 1, "m.B": 0}}
    assert dataset_signed_gains(old)[0] == {"q1": {"m.A": 0.4, "m.B": -0.2}}
    assert old.cases[0].status == "mined" and old.outcome == "pass"


def test_every_consumer_reads_an_old_file(tmp_path: Path) -> None:
    from deltap.evaluation.audit import audit_qrels
    from deltap.judgements import load_judgements
    from deltap.report.run_data import load_run_dir

    _read(tmp_path, OLD)
    data = load_run_dir(tmp_path)
    assert [(c.doc_id, c.verdict) for c in data.cases[0].candidates] == [
        ("m.A", "relevant"),
        ("m.B", "harmful"),
        ("m.C", "undecided"),
    ]
    audit = audit_qrels(tmp_path)
    q = audit.questions[0]
    assert (q.gold, q.found_harmful) == ({"m.A": "relevant"}, {"m.B": "retrieved"})
    j = load_judgements(tmp_path / "retrieval_dataset.yaml")
    assert j.harmful == {"q1": {"m.B"}} and j.queries == {"q1": "which one?"}


def test_graded_labels_are_read_when_present(tmp_path: Path) -> None:
    text = NEW.replace(
        "grade: 0}",
        "grade: 0,\n     graded: {gold: {utility: 0.12, ci: [0.01, 0.3], lfsr: 0.04, grade: 1}, no_gold: {utility: -0.1}}}",
    )
    (case,) = _read(tmp_path, text).cases
    graded = case.candidates[1].graded
    assert graded == {
        "gold": GradedUtility(0.12, 0.01, 0.3, 0.04, 1),
        "no_gold": GradedUtility(-0.1, None, None, None, None),
    }
    assert case.candidates[0].graded is None  # absent: None


def test_each_field_is_declared_with_its_reader() -> None:
    for record in (CandidateRecord, CaseRecord, GradedUtility):
        assert all(callable(f.metadata.get("read")) for f in dataclasses.fields(record)), record


def test_an_in_memory_dataset_is_checked_by_the_same_reader() -> None:
    ds = VerifiedDataset({}, [{"id": "a", "candidates": [{"doc_id": "x", "grade": -1}]}])
    with pytest.raises(FormatError) as info:
        _ = ds.cases
    assert (
        str(info.value) == "the verified dataset: candidate 'x' of 'a': grade must be an integer >= 0 or null, got -1"
    )
