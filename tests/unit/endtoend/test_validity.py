"""The fair validity yardstick (issue 35 item 3): agreement within questions, success as lift over no context, each
qrels judged without the controls labels define, paired differences between qrels; graded judgements plug in."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from deltap.endtoend import EndToEndConfig, System
from deltap.endtoend.planted import planted_scenario
from deltap.endtoend.results import summarize
from deltap.endtoend.validity import fair_systems, metric_validity, per_case_metric, within_question_tau


def _result(values: np.ndarray, names: list[str]) -> object:
    cases = [f"q{i:02d}" for i in range(len(values))]
    return summarize(cases, names, values, EndToEndConfig(k=2, n_resamples=200, n_permutations=200), [])


def _systems(names: list[str], kinds: dict[str, str] | None = None) -> list[System]:
    return [System(n, (kinds or {}).get(n, "run"), {}) for n in names]


def test_within_question_tau_counts_ties_and_leaves_out_questions_with_nothing_to_predict() -> None:
    success = np.array([[0.1, 0.5, 0.9], [0.2, 0.2, 0.2], [0.3, 0.1, 0.6], [0.5, 0.6, 0.7]])
    metric = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [2.0, 1.0, 0.0]])
    tau, ties, success_ties = within_question_tau(metric, success)
    assert tau[0] == pytest.approx(1.0) and math.isnan(tau[1]) and tau[2] == 0.0 and tau[3] == pytest.approx(-1.0)
    assert ties == 1 and success_ties == 1


def test_question_difficulty_inflates_the_pooled_r_not_the_within_question_figures() -> None:
    """A metric that knows only which questions are easy (the same value for every system of a question) explains
    most of the pooled variance and orders no system within a question."""
    rng = np.random.default_rng(0)
    n, names = 40, ["a", "b", "c", "none"]
    difficulty = rng.uniform(0.0, 1.0, n)
    system_effect = np.array([0.3, 0.1, 0.2, 0.0])
    success = difficulty[:, None] + system_effect[None, :] + 0.02 * rng.standard_normal((n, 4))
    knows_questions = np.repeat(difficulty[:, None], 4, axis=1)
    knows_systems = np.repeat(system_effect[None, :], n, axis=0)
    res = _result(success, names)
    v = metric_validity(res, _systems(names), {}, [], extra={"questions": knows_questions, "systems": knows_systems})
    rows = {r["metric"]: r for r in v["rows"]}
    assert rows["questions"]["r"] > 0.9  # pooled: "predicts success" ...
    assert rows["questions"]["tau_within"] == 0.0 and rows["questions"]["ties"] == n  # ... and orders nothing
    assert rows["questions"]["r_centred"] is None or abs(rows["questions"]["r_centred"]) < 1e-9
    assert rows["systems"]["tau_within"] > 0.9 and rows["systems"]["r_centred"] > 0.9
    assert rows["systems"]["r_lift"] > 0.9 and rows["questions"]["r_lift"] < 0.3  # lift over `none`: difficulty gone
    assert v["baseline"] == "none"


def test_the_controls_labels_define_are_left_out_of_the_fair_figures() -> None:
    names = ["bm25", "none", "gold", "mined", "all"]
    kinds = {"none": "control", "gold": "control", "mined": "control", "all": "control"}
    keep, left = fair_systems(_systems(names, kinds))
    assert [names[j] for j in keep] == ["bm25", "none", "all"] and set(left) == {"gold", "mined"}
    assert "gold qrels" in left["gold"] and "deltap qrels" in left["mined"]
    # a run named gold (not the control) stays
    keep, left = fair_systems(_systems(names))
    assert len(keep) == 5 and not left


def test_graded_judgements_and_signed_gains_plug_in() -> None:
    names = ["best", "mid", "worst"]
    systems = [System("best", "run", {"q": ["d2", "d1"]}), System("mid", "run", {"q": ["d1", "d0"]}),
               System("worst", "run", {"q": ["d0", "d3"]})]  # fmt: skip
    binary = {"q": {"d1": 1, "d2": 1}}
    graded = {"q": {"d1": 1, "d2": 3}}
    b = per_case_metric("ndcg@2", binary, systems, ["q"], 2)[0]
    g = per_case_metric("ndcg@2", graded, systems, ["q"], 2)[0]
    assert b[0] == pytest.approx(1.0) and g[0] == pytest.approx(1.0) and g[1] < b[1]  # nDCG reads the grades
    gains = {"q": {"d2": 2.0, "d1": 0.5, "d3": -1.0}}
    u = per_case_metric("signed_utility@2", {}, systems, ["q"], 2, gains=gains)[0]
    assert list(u) == pytest.approx([2.5, 0.5, -1.0])  # harmful d3 counts against "worst"
    rng = np.random.default_rng(1)
    success = np.repeat(np.array([[0.9, 0.5, 0.1]]), 12, axis=0) + 0.01 * rng.standard_normal((12, 3))
    many = [System(s.name, "run", {f"q{i:02d}": list(s.ranking["q"]) for i in range(12)}) for s in systems]
    res = _result(success, names)
    grade_all = {f"q{i:02d}": graded["q"] for i in range(12)}
    gain_all = {f"q{i:02d}": gains["q"] for i in range(12)}
    v = metric_validity(res, many, {"gold": {f"q{i:02d}": {"d0": 1} for i in range(12)}, "graded": grade_all},
                        ["ndcg@2"], gains={"graded (signed)": gain_all})  # fmt: skip
    rows = {(r["metric"], r["qrels"]): r for r in v["rows"]}
    assert rows[("signed_utility@2", "graded (signed)")]["tau_within"] == pytest.approx(1.0)
    assert rows[("ndcg@2", "gold")]["tau_within"] == pytest.approx(-1.0)
    cmp = {(c["qrels_a"], c["qrels_b"], c["metric"]): c for c in v["comparisons"]}
    diff = cmp[("graded", "gold", "ndcg@2")]
    assert diff["a"] == "the graded qrels" and diff["tau_within_diff"] == pytest.approx(2.0)
    assert "ordering the systems within a question is the graded qrels" in v["summary_within"]


def test_deltap_labels_win_within_questions_where_gold_sets_hold_distractors(planted: dict) -> None:
    v = planted["result"].validity
    assert set(v["left_out"]) == {"gold", "mined"} and "gold" not in v["fair_systems"]
    rows = {(r["metric"], r["qrels"]): r for r in v["rows"]}
    for m in ("ndcg@2", "recall@2"):
        assert rows[(m, "deltap")]["tau_within"] > rows[(m, "gold")]["tau_within"] + 0.3
        assert rows[(m, "deltap")]["r_centred"] > rows[(m, "gold")]["r_centred"] + 0.3
    cmp = {c["metric"]: c for c in v["comparisons"]}
    assert cmp["ndcg@2"]["tau_within_diff_ci"][0] > 0 and cmp["ndcg@2"]["r_centred_diff_ci"][0] > 0
    assert v["summary_within"].startswith("Within questions, over the 6 fair systems")
    assert (
        "ordering the systems within a question is deltap's mined qrels, not the benchmark's gold qrels"
        in v["summary_within"]
    )


def test_the_validity_table_prints_both_yardsticks(planted: dict, tmp_path: Path) -> None:
    from deltap.cli.endtoend_cmd import validity_table

    text = validity_table(planted["result"].validity)
    assert "τ systems" in text and "τ within" in text and "r centred" in text and "r lift" in text
    assert "left out: gold" in text and "differences (a − b), paired over questions" in text
    old = {k: v for k, v in planted["result"].validity.items() if k not in ("fair_systems",)}
    assert "τ within" not in validity_table(old)  # an older results.json: the pooled table only


def test_revalidate_rejudges_a_finished_run_from_its_files_with_no_call(planted: dict, tmp_path: Path) -> None:
    from deltap.dataset import dataset_qrels
    from deltap.endtoend.validity import revalidate
    from deltap.run_layout import RunDir

    result = planted["result"]
    result.write(tmp_path / "endtoend", {})
    cases = planted_scenario(60, seed=3).cases
    gold = {c.case_id: {d: 1 for d in c.gold_doc_ids} for c in cases}
    mining = planted["mining"]
    v = revalidate(tmp_path / "endtoend", {"gold": gold, "deltap": dataset_qrels(mining.dataset)},
                   ["ndcg@2", "hit_rate@2", "recall@2"], dataset_path=RunDir(mining.out).dataset)  # fmt: skip
    again = {(r["metric"], r["qrels"]): r for r in v["rows"]}
    for r in result.validity["rows"]:
        if r["qrels"] == "planted":
            continue
        for key in ("tau", "tau_ci", "r", "tau_within", "tau_within_ci", "r_centred", "ties"):
            assert again[(r["metric"], r["qrels"])][key] == r[key], (r["metric"], r["qrels"], key)
    assert v["summary_within"] == result.validity["summary_within"]
