"""``signed_utility@K`` and ``judged@K``: hand-computed values (harmful, undecided, unjudged, coalitions), the gains
read from a verified dataset, a brute-force golden check, and the CLI."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from deltap.dataset import VerifiedDataset, dataset_signed_gains, write_dataset
from deltap.errors import DeltapError
from deltap.evaluation.comparison import compare
from deltap.evaluation.measures import parse_metric, parse_metrics
from deltap.evaluation.ranking import EvaluationWarning
from deltap.evaluation.scores import evaluate
from deltap.judgements import SignedGains, load_judgements
from deltap.qrels import write_trec_run
from tests.helpers import run_cli


def _cand(doc: str, verdict: str, delta_p: float | None, grade: int | None, source: str = "gold") -> dict[str, object]:
    er = {"relevant": "YES", "irrelevant": "NO", "harmful": "HARMFUL", "undecided": "UNDECIDED"}[verdict]
    return {
        "doc_id": doc,
        "source": source,
        "empirical_relevance": er,
        "verdict": verdict,
        "delta_p": delta_p,
        "grade": grade,
    }


def hand_dataset() -> VerifiedDataset:
    """Two questions. q1: gold a (relevant, ΔP .4), h (harmful, −.3), n (irrelevant), u (undecided, ΔP .1); retrieved
    r (relevant, ΔP .2, not gold); coalition {c1, c2} (both undecided, ΔP .05 and .07) verified with a measured lift
    of .5. q2: gold x (relevant .25), y (undecided), z (harmful −.2)."""
    q1 = [
        _cand("a", "relevant", 0.4, 2),
        _cand("h", "harmful", -0.3, 0),
        _cand("n", "irrelevant", 0.01, 0),
        _cand("u", "undecided", 0.1, None),
        _cand("r", "relevant", 0.2, 1, source="retrieved"),
        _cand("c1", "undecided", 0.05, None, source="retrieved"),
        _cand("c2", "undecided", 0.07, None, source="retrieved"),
        _cand("p1", "irrelevant", -0.01, 0, source="placebo"),
    ]
    q2 = [_cand("x", "relevant", 0.25, 1), _cand("y", "undecided", 0.02, None), _cand("z", "harmful", -0.2, 0)]
    check = [{"docs": ["c1", "c2"], "verified": True, "minimal": True, "coalition_mean": 0.7, "none_mean": 0.2}]
    return VerifiedDataset(
        {"tool": "deltap", "outcome": "pass"},
        [
            {"id": "q1", "query": "question one", "reference_answer": "A", "candidates": q1,
             "coalition": ["c1", "c2"], "coalitions": [["c1", "c2"]], "metadata": {"coalition_check": check}},
            {"id": "q2", "query": "question two", "reference_answer": "B", "candidates": q2,
             "coalition": None, "coalitions": [], "metadata": {}},
        ],
    )  # fmt: skip


RUN = {
    # q1 top 6: h a u c1 zz c2 — then n r
    "q1": {"h": 9.0, "a": 8.0, "u": 7.0, "c1": 6.0, "zz": 5.0, "c2": 4.0, "n": 3.0, "r": 2.0},
    # q2 top 3: z y x
    "q2": {"z": 3.0, "y": 2.0, "x": 1.0},
}


@pytest.fixture
def dataset_path(tmp_path: Path) -> Path:
    return write_dataset(hand_dataset(), tmp_path / "retrieval_dataset.yaml")


def test_gains_from_the_dataset() -> None:
    gains, coalitions, unknown = dataset_signed_gains(hand_dataset())
    assert gains == {"q1": {"a": 0.4, "h": -0.3, "r": 0.2}, "q2": {"x": 0.25, "z": -0.2}}
    # the measured lift .7 − .2, not the members' ΔP sum .12
    assert coalitions == {"q1": [(frozenset({"c1", "c2"}), pytest.approx(0.5))]}
    assert unknown == []


def test_coalition_value_falls_back_to_member_delta_p_when_not_measured() -> None:
    ds = hand_dataset()
    ds.pairs[0]["metadata"] = {}
    _, coalitions, _ = dataset_signed_gains(ds)
    assert coalitions["q1"][0][1] == pytest.approx(0.12)


def test_hand_computed_values(dataset_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        res = evaluate(
            dataset_path, RUN, "signed_utility@1,signed_utility@3,signed_utility@6,signed_utility@8", n_resamples=0
        )
    pq = res.per_query()
    # q1 @1: h = −.3 ; @3: h a u = −.3 + .4 + 0 (undecided counts 0) = .1
    assert pq["q1"]["signed_utility@1"] == pytest.approx(-0.3)
    assert pq["q1"]["signed_utility@3"] == pytest.approx(0.1)
    # @6: h a u c1 zz c2: −.3 + .4, and the coalition {c1, c2} is complete: its members' own gains are 0, bonus .5
    assert pq["q1"]["signed_utility@6"] == pytest.approx(0.6)
    # @8: + n (0) + r (.2) = .8
    assert pq["q1"]["signed_utility@8"] == pytest.approx(0.8)
    # q2 @1: z = −.2; @3: z y x = −.2 + 0 + .25
    assert pq["q2"]["signed_utility@1"] == pytest.approx(-0.2)
    assert pq["q2"]["signed_utility@3"] == pytest.approx(0.05)
    # judged@K beside each: q1 top 3 = h a u → 2 decided of 3; top 6 → h a (2 of 6); q2 top 3 → z x (2 of 3)
    assert [str(m) for m in res.measures][:2] == ["signed_utility@1", "judged@1"]
    assert pq["q1"]["judged@3"] == pytest.approx(2 / 3)
    assert pq["q1"]["judged@6"] == pytest.approx(2 / 6)
    assert pq["q2"]["judged@3"] == pytest.approx(2 / 3)


def test_coalition_counts_only_complete_and_members_once() -> None:
    gains = SignedGains({"q": {"c1": 0.1, "c2": 0.15, "d": 0.3}}, {"q": [(frozenset({"c1", "c2"}), 0.6)]})
    qrels = {"q": {"c1": 1, "c2": 1, "d": 1}}
    only_c1 = {"q": {"c1": 3.0, "d": 2.0, "x": 1.0}}
    both = {"q": {"c1": 3.0, "c2": 2.0, "d": 1.0}}
    got = evaluate(qrels, only_c1, "signed_utility@3", gains=gains, n_resamples=0).mean("signed_utility@3")
    assert got == pytest.approx(0.1 + 0.3)  # c1 alone counts only its own gain
    got = evaluate(qrels, both, "signed_utility@3", gains=gains, n_resamples=0).mean("signed_utility@3")
    assert got == pytest.approx(0.6 + 0.3)  # the coalition's .6 (not .6 + .1 + .15), plus d
    got = evaluate(qrels, both, "signed_utility@2", gains=gains, n_resamples=0).mean("signed_utility@2")
    assert got == pytest.approx(0.6)
    # a coalition worth less than its members' own gains adds nothing (and takes nothing away)
    low = SignedGains(gains.docs, {"q": [(frozenset({"c1", "c2"}), 0.1)]})
    got = evaluate(qrels, both, "signed_utility@2", gains=low, n_resamples=0).mean("signed_utility@2")
    assert got == pytest.approx(0.25)


def test_alternative_coalitions_add_only_the_best_bonus() -> None:
    gains = SignedGains({"q": {}}, {"q": [(frozenset({"a", "b"}), 0.5), (frozenset({"c"}), 0.4)]})
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    got = evaluate({"q": {"a": 1}}, run, "signed_utility@3", gains=gains, n_resamples=0).mean("signed_utility@3")
    assert got == pytest.approx(0.5)


def test_normalised_by_ideal() -> None:
    gains = SignedGains({"q": {"a": 0.4, "b": 0.2, "h": -0.3}}, {"q": [(frozenset({"c1", "c2"}), 0.6)]})
    qrels = {"q": {"a": 1, "b": 1, "h": 0}}
    run = {"q": {"h": 5.0, "a": 4.0, "c1": 3.0, "c2": 2.0, "b": 1.0}}
    res = evaluate(
        qrels,
        run,
        "signed_utility@2,signed_utility(norm=ideal)@2,signed_utility(norm=ideal)@4",
        gains=gains,
        n_resamples=0,
    )
    # ideal@2: max(.4 + .2, coalition .6 + 0 slots) = .6 ; value@2 = −.3 + .4 = .1
    assert res.mean("signed_utility(norm=ideal)@2") == pytest.approx(0.1 / 0.6)
    # ideal@4: coalition (.6) + a + b = 1.2 ; value@4 = −.3 + .4 + .6 (complete coalition) = .7
    assert res.mean("signed_utility(norm=ideal)@4") == pytest.approx(0.7 / 1.2)
    # a query without any positive gain scores 0 normalised, but keeps its (negative) raw value
    with pytest.warns(EvaluationWarning, match="signed_utility and judged still count their harmful"):
        neg = evaluate({"q": {"h": 0}}, {"q": {"h": 1.0}}, "signed_utility@1,signed_utility(norm=ideal)@1",
                       gains=SignedGains({"q": {"h": -0.3}}), n_resamples=0, on_empty="zero")  # fmt: skip
    assert neg.per_query()["q"] == {
        "signed_utility@1": pytest.approx(-0.3),
        "judged@1": 1.0,
        "signed_utility(norm=ideal)@1": 0.0,
    }


def _brute(
    gains: dict[str, float], coalitions: list[tuple[frozenset[str], float]], ranked: list[str], k: int
) -> tuple[float, float]:
    """Signed utility of the top k of ``ranked`` and its ideal, by direct enumeration (independent of the metric)."""

    def utility(docs: set[str]) -> float:
        bonus = 0.0
        for members, value in coalitions:
            if members <= docs:
                bonus = max(bonus, value - sum(gains.get(d, 0.0) for d in members))
        return sum(gains.get(d, 0.0) for d in docs) + bonus

    pool = sorted(set(gains) | {d for m, _ in coalitions for d in m})
    ideal = max(utility(set(s)) for r in range(0, min(k, len(pool)) + 1) for s in itertools.combinations(pool, r))
    return utility(set(ranked[:k])), ideal


def test_golden_against_brute_force(tmp_path: Path) -> None:
    rng = np.random.default_rng(26)
    docs = [f"d{i}" for i in range(9)]
    gains: dict[str, dict[str, float]] = {}
    coal: dict[str, list[tuple[frozenset[str], float]]] = {}
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for qi in range(25):
        q = f"q{qi}"
        picked = rng.choice(docs, size=5, replace=False).tolist()
        gains[q] = {d: float(rng.choice([-1, 1, 1])) * round(float(rng.uniform(0.05, 0.5)), 3) for d in picked[:4]}
        coal[q] = [(frozenset(rng.choice(docs, size=int(rng.integers(1, 4)), replace=False).tolist()), round(float(rng.uniform(0, 0.9)), 3))
                   for _ in range(int(rng.integers(0, 3)))]  # fmt: skip
        run[q] = {d: float(s) for d, s in zip(docs, rng.permutation(len(docs)), strict=True)}
        qrels[q] = {d: 1 for d in docs}
    sg = SignedGains(gains, coal)
    measures = [f"signed_utility@{k}" for k in (1, 3, 5)] + [f"signed_utility(norm=ideal)@{k}" for k in (1, 3, 5)]
    by_dict = evaluate(qrels, run, measures, gains=sg, n_resamples=0)
    trec = write_trec_run(run, tmp_path / "run.trec")
    by_file = evaluate(qrels, trec, measures, gains=sg, n_resamples=0)  # the columnar fast path
    np.testing.assert_allclose(by_file.values, by_dict.values, atol=1e-12)
    for q, row in by_dict.per_query().items():
        ranked = sorted(run[q], key=lambda d: (-run[q][d], [-ord(ch) for ch in d]))
        for k in (1, 3, 5):
            value, ideal = _brute(gains[q], coal[q], ranked, k)
            assert row[f"signed_utility@{k}"] == pytest.approx(value, abs=1e-12), (q, k)
            assert row[f"signed_utility(norm=ideal)@{k}"] == pytest.approx(
                value / ideal if ideal > 0 else 0.0, abs=1e-12
            ), (q, k)


def test_trec_qrels_refuse_signed_utility_with_a_clear_message(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 a 1\n", encoding="utf-8")
    with pytest.raises(DeltapError, match=r"signed_utility@10 needs signed gains.*retrieval_dataset.yaml"):
        evaluate(qrels, {"q1": {"a": 1.0}}, "signed_utility@10")


def test_measure_grammar() -> None:
    assert str(parse_metric("signed_utility@10")) == "signed_utility@10"
    assert parse_metric("signed_utility(norm=none)@10") == parse_metric("utility@10")
    assert str(parse_metric("signed_utility(norm=ideal)@5")) == "signed_utility(norm=ideal)@5"
    assert [str(m) for m in parse_metrics("judged@10")] == ["judged@10"]
    with pytest.raises(DeltapError, match="needs a cutoff"):
        parse_metric("signed_utility")
    with pytest.raises(DeltapError, match="norm must be one of none, ideal"):
        parse_metric("signed_utility(norm=max)@3")


def test_compare_paired_tests_on_signed_utility(dataset_path: Path) -> None:
    worse = {"q1": {"h": 9.0, "n": 8.0, "zz": 7.0}, "q2": {"z": 3.0, "y": 2.0, "w": 1.0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        cmp = compare(dataset_path, {"good": RUN, "bad": worse}, "signed_utility@3", baseline="bad", n_permutations=200)
    good = cmp.results["good"].per_query()
    bad = cmp.results["bad"].per_query()
    assert good["q1"]["signed_utility@3"] == pytest.approx(0.1) and bad["q1"]["signed_utility@3"] == pytest.approx(-0.3)
    assert bad["q2"]["signed_utility@3"] == pytest.approx(-0.2)
    assert int(cmp.wins["good"][0]) == 2
    assert "judged@3" in [str(m) for m in cmp.measures]


def test_load_judgements_carries_gains(dataset_path: Path) -> None:
    j = load_judgements(dataset_path)
    assert j.gains is not None and j.gains.docs["q1"]["h"] == pytest.approx(-0.3)
    assert j.gains.unit == "probability"


def test_cli_evaluate_with_the_dataset(dataset_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_trec_run(RUN, tmp_path / "good.trec")
    code, out, err = run_cli(
        capsys, "evaluate", "--qrels", str(dataset_path), "--run", str(run), "-m", "signed_utility@3", "-f", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["measures"] == ["signed_utility@3", "judged@3"]
    assert data["per_query"]["q1"]["signed_utility@3"] == pytest.approx(0.1)
    assert data["means"]["judged@3"] == pytest.approx(2 / 3)


def test_cli_trec_qrels_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 a 1\n", encoding="utf-8")
    run = write_trec_run({"q1": {"a": 1.0}}, tmp_path / "r.trec")
    code, out, err = run_cli(capsys, "evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "signed_utility@3")
    assert code != 0 and "Traceback" not in err
    assert "needs signed gains" in err


def test_decided_document_without_delta_p_counts_zero_with_a_note(tmp_path: Path) -> None:
    ds = hand_dataset()
    ds.pairs[1]["candidates"][0]["delta_p"] = None  # x: relevant, ΔP unknown
    path = write_dataset(ds, tmp_path / "retrieval_dataset.yaml")
    j = load_judgements(path)
    assert j.gains is not None and j.gains.unknown == (("q2", "x"),) and "x" not in j.gains.docs["q2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        res = evaluate(path, RUN, "signed_utility@3", n_resamples=0)
    assert res.per_query()["q2"]["signed_utility@3"] == pytest.approx(-0.2)
    assert any("1 relevant or harmful documents have no delta_p and count 0" in n and "q2/x" in n for n in res.notes)


def test_logprob_dataset_gains_are_in_nats(tmp_path: Path) -> None:
    ds = hand_dataset()
    ds.metadata["outcome"] = "logprob"
    j = load_judgements(write_dataset(ds, tmp_path / "retrieval_dataset.yaml"))
    assert j.gains is not None and j.gains.unit == "nats"


def test_judged_golden_against_sorting(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    docs = [f"d{i:02d}" for i in range(30)]
    run = {
        f"q{i}": {d: float(s) for d, s in zip(docs, rng.normal(size=len(docs)).round(1), strict=True)}
        for i in range(20)
    }
    qrels = {q: {d: int(rng.integers(0, 3)) for d in rng.choice(docs, size=12, replace=False).tolist()} for q in run}
    # every query gets a relevant document (no empty-query warning)
    qrels = {q: (row if any(g > 0 for g in row.values()) else {**row, docs[1]: 1}) for q, row in qrels.items()}
    res = evaluate(qrels, write_trec_run(run, tmp_path / "r.trec"), "judged@5,judged@10,judged@40", n_resamples=0)
    for q, row in res.per_query().items():
        # trec_eval order: score descending, then doc id descending (ties are frequent at one decimal)
        ranked = sorted(run[q], key=lambda d: (run[q][d], d), reverse=True)
        for k in (5, 10, 40):
            assert row[f"judged@{k}"] == pytest.approx(sum(d in qrels[q] for d in ranked[:k]) / k), (q, k)
