"""The end-to-end evaluation (issue 26 items 1, 3, 6): planted truth through the real engine, resume, the prompt
cache, fresh seeds, and the CLI's one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.endtoend import EndToEndConfig, System, end_to_end
from deltap.endtoend.planted import PLANTED_SYSTEMS, planted_scenario
from deltap.endtoend.validity import kendall_tau, summary_sentence
from deltap.errors import DeltapError
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth


def test_success_ranks_the_planted_systems_exactly(planted: dict) -> None:
    result = planted["result"]
    scenario_systems = [s for s in planted["systems"] if s.name in PLANTED_SYSTEMS]
    truth = planted_scenario(60, seed=3).true_utility(scenario_systems, 2).mean(axis=0)
    measured = np.array([result.summary[s.name]["mean"] for s in scenario_systems])
    assert list(np.argsort(-truth)) == list(np.argsort(-measured))  # the same order, every system
    row = next(r for r in result.validity["rows"] if r["metric"] == "true utility")
    assert row["tau"] > 0.95 and row["r"] > 0.85


def test_deltap_qrels_beat_gold_qrels_when_gold_holds_distractors(planted: dict) -> None:
    v = planted["result"].validity
    rows = {(r["metric"], r["qrels"]): r for r in v["rows"]}
    for m in ("ndcg@2", "recall@2"):
        assert rows[(m, "deltap")]["tau"] - rows[(m, "gold")]["tau"] > 0.5
        assert rows[(m, "deltap")]["r"] > rows[(m, "gold")]["r"] + 0.3
    cmp = {c["metric"]: c for c in v["comparisons"]}
    assert cmp["ndcg@2"]["tau_diff_ci"][0] > 0 and cmp["ndcg@2"]["r_diff_ci"][0] > 0
    assert (
        "for ndcg@2, the better predictor of success at ranking the systems is deltap's mined qrels, not the benchmark's gold qrels"
        in v["summary"]
    )
    signed = rows[("signed_utility@2", "deltap (signed)")]  # issue 26 item 2's measure, through evaluate()
    assert signed["tau"] > rows[("ndcg@2", "gold")]["tau"] + 0.5 and signed["r"] > rows[("ndcg@2", "gold")]["r"] + 0.5
    assert cmp["signed_utility@2 vs ndcg@2 on gold"]["tau_diff_ci"][0] > 0
    assert "is the signed utility, not gold ndcg@2" in v["summary"]


def test_paired_tests_are_holm_corrected(planted: dict) -> None:
    pairs = planted["result"].pairs
    n = len(pairs)
    assert n == 8 * 7 // 2
    smallest = min(pairs, key=lambda p: p["p"])
    assert math.isclose(smallest["p_holm"], min(1.0, n * smallest["p"]))
    assert all(p["p_holm"] >= p["p"] for p in pairs)


def _toy(n: int = 6) -> tuple[list[Case], Corpus, dict[str, SimulatedTruth]]:
    docs = [Document(f"d{i}", f"text {i}") for i in range(4)]
    cases = [
        Case(f"c{i}", f"question {i}", ("d0",), CheckerSpec("string_match", {"answers": ["yes"]}), "yes")
        for i in range(n)
    ]
    truth = {c.case_id: SimulatedTruth(0.2, {"d0": 0.6, "d1": -0.1}, answer="yes") for c in cases}
    return cases, Corpus(docs), truth


def _systems(cases: list[Case], lists: dict[str, list[str]]) -> list[System]:
    return [System(name, "run", {c.case_id: docs for c in cases}) for name, docs in lists.items()]


def test_resume_reads_the_log_and_refuses_a_changed_system(tmp_path: Path) -> None:
    cases, corpus, truth = _toy()
    solver = SimulatedSolver(truth, seed=1)
    systems = _systems(cases, {"a": ["d0", "d1"], "b": ["d2"]})
    cfg = EndToEndConfig(k=2, repeats=3)
    first = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg)
    assert first.run["calls_this_process"] == 6 * 2 * 3 == first.run["calls"]
    again = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg)
    assert again.run["calls_this_process"] == 0 and again.run["calls"] == 36
    np.testing.assert_array_equal(first.values, again.values)
    assert (tmp_path / "results.json").is_file() and (tmp_path / "per_case.csv").read_text().startswith("case_id,a,b")
    changed = _systems(cases, {"a": ["d1", "d0"], "b": ["d2"]})
    with pytest.raises(DeltapError, match="system 'a'.*differ from the logged"):
        end_to_end(cases, corpus, solver, changed, out=tmp_path, config=cfg)
    with pytest.raises(DeltapError, match="different configuration"):
        end_to_end(cases, corpus, solver, systems, out=tmp_path, config=EndToEndConfig(k=1, repeats=3))


def test_deterministic_solver_answers_a_shared_prompt_once() -> None:
    cases, corpus, truth = _toy(4)
    solver = SimulatedSolver(truth, seed=1, deterministic=True)
    systems = _systems(cases, {"a": ["d0", "d1"], "same_as_a": ["d0", "d1"], "other": ["d1", "d0"]})
    res = end_to_end(cases, corpus, solver, systems, config=EndToEndConfig(k=2, repeats=5))
    assert res.run["ceiling"] == 4 * 3  # repeats do not multiply a deterministic solver's calls
    assert res.run["calls"] == 4 * 2 and res.run["cached"] == 4  # the rank order changes the prompt: 'other' is asked
    assert solver.calls == 8
    np.testing.assert_array_equal(res.values[:, 0], res.values[:, 1])


def test_fresh_seeds_never_reuse_mining_trials(tmp_path: Path) -> None:
    from deltap.mining.engine import mine
    from deltap.trials.log import TrialLog

    cases, corpus, truth = _toy(3)
    solver = SimulatedSolver(truth, seed=1)
    mine(cases, corpus, solver, out=tmp_path, budget=8, n_placebo=1, coalitions=False)
    res = end_to_end(
        cases,
        corpus,
        solver,
        _systems(cases, {"gold": ["d0"]}),
        out=tmp_path / "endtoend",
        config=EndToEndConfig(k=1, repeats=4),
    )
    assert res.run["calls_this_process"] == 12  # nothing read from the mining log
    with (
        TrialLog(tmp_path / "trials.sqlite", lock=False) as ml,
        TrialLog(tmp_path / "endtoend" / "trials.sqlite", lock=False) as el,
    ):
        mining_seeds = {r.seed for c in cases for r in ml.trials(c.case_id)}
        e2e = [r for c in cases for r in el.trials(c.case_id)]
    assert {r.kind for r in e2e} == {"endtoend:gold"}
    assert not mining_seeds & {r.seed for r in e2e}


def test_call_ceiling_and_bad_input() -> None:
    cases, corpus, truth = _toy(3)
    solver = SimulatedSolver(truth)
    with pytest.raises(DeltapError, match="call ceiling 18 .* exceeds --max-calls 10"):
        end_to_end(
            cases,
            corpus,
            solver,
            _systems(cases, {"a": ["d0"], "b": ["d1"]}),
            config=EndToEndConfig(repeats=3, max_calls=10),
        )
    with pytest.raises(DeltapError, match="document ids of system a not found in corpus: nope"):
        end_to_end(cases, corpus, solver, _systems(cases, {"a": ["nope"]}))
    with pytest.raises(DeltapError, match="unique names"):
        end_to_end(cases, corpus, solver, _systems(cases, {"a": ["d0"]}) * 2)


def test_logprob_outcome_scores_the_reference() -> None:
    cases, corpus, truth = _toy(5)
    solver = SimulatedSolver(truth, outcome="logprob", noise=0.0)
    res = end_to_end(
        cases,
        corpus,
        solver,
        _systems(cases, {"helps": ["d0"], "none": []}),
        config=EndToEndConfig(k=1, outcome="logprob"),
    )
    assert res.summary["helps"]["mean"] == pytest.approx(0.8) and res.summary["none"]["mean"] == pytest.approx(0.2)


def test_kendall_tau_and_the_words() -> None:
    assert kendall_tau(np.array([1.0, 2, 3]), np.array([10.0, 20, 30])) == pytest.approx(1.0)
    assert kendall_tau(np.array([1.0, 2, 3]), np.array([30.0, 20, 10])) == pytest.approx(-1.0)
    assert math.isnan(kendall_tau(np.array([1.0, 1, 1]), np.array([1.0, 2, 3])))
    tell = [{"metric": "ndcg@5", "tau_diff": 0.1, "tau_diff_ci": [-0.2, 0.4], "r_diff": 0.3, "r_diff_ci": [0.1, 0.5]}]
    words = summary_sentence(tell, 5, 40)
    assert (
        "r higher by 0.30" in words
        and "elsewhere the data cannot tell which qrels predict success better (1 comparison" in words
    )
    assert "cannot tell which qrels" in summary_sentence([{**tell[0], "r_diff_ci": [-0.1, 0.5]}], 5, 40)


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main

    with pytest.raises(SystemExit) as exc:
        main(["endtoend", str(tmp_path), "cases.yaml", "--corpus", "c.jsonl"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a deltap mine run directory" in err


def test_report_shows_the_end_to_end_section(tmp_path: Path) -> None:
    from deltap.endtoend.mined_run import evaluate_end_to_end
    from deltap.mining.engine import mine
    from deltap.report import write_html_report, write_markdown_report

    cases, corpus, truth = _toy(4)
    solver = SimulatedSolver(truth, seed=2)
    mine(cases, corpus, solver, out=tmp_path, budget=8, n_placebo=1, coalitions=False)
    assert 'id="endtoend"' not in write_html_report(tmp_path).read_text(
        encoding="utf-8"
    )  # no section (the guide names it)
    res = evaluate_end_to_end(
        tmp_path, cases, corpus, solver, retrievers=("bm25",), config=EndToEndConfig(k=1, repeats=2)
    )
    assert set(res.systems) == {"bm25", "none", "gold", "mined", "all"}
    html = write_html_report(tmp_path).read_text(encoding="utf-8")
    md = write_markdown_report(tmp_path).read_text(encoding="utf-8")
    for text in (html, md):
        assert "End-to-end" in text and "ndcg@1 (gold)" in text and "Kendall τ across systems" in text
    gold_row = next(line for line in md.splitlines() if line.startswith("| gold | control |"))
    assert f"{res.summary['gold']['mean']:.3f}" in gold_row
    from deltap.evaluation.headline import clause_lines

    # the validity sentence, laid out as short lines (its lead, then one bullet per clause): every word kept
    assert all(line.removeprefix("- ") in md for line in clause_lines(res.validity["summary"], width=10_000))
    assert md.splitlines()[2] == "## The answer" and "bm25" in md.splitlines()[4]  # the answer first


class _Flaky:
    """Answers "yes" when documents are shown; raises while ``down`` (a transient outage)."""

    id = "flaky-test-solver"

    def __init__(self) -> None:
        self.down = True

    def answer(self, request):  # type: ignore[no-untyped-def]
        from deltap.solvers.base import Answer, SolverError

        if self.down:
            raise SolverError("service unavailable")
        return Answer("yes" if request.documents else "no")


def test_error_trials_are_retried_on_resume(tmp_path: Path) -> None:
    cases, corpus, _ = _toy(3)
    solver = _Flaky()
    systems = _systems(cases, {"a": ["d0"], "none": []})
    first = end_to_end(cases, corpus, solver, systems, out=tmp_path)  # type: ignore[arg-type]
    assert first.complete == [] and np.isnan(first.values).all()  # errors are not failures
    solver.down = False
    again = end_to_end(cases, corpus, solver, systems, out=tmp_path)  # type: ignore[arg-type]
    assert again.run["errors_retried"] == 6 and len(again.complete) == 3
    assert again.summary["a"]["mean"] == 1.0 and again.summary["none"]["mean"] == 0.0


def test_single_doc_trials_are_in_the_ceiling_logged_apart_and_resumed(tmp_path: Path) -> None:
    from deltap.trials.log import TrialLog

    cases, corpus, truth = _toy()
    solver = SimulatedSolver(truth, seed=1)
    systems = _systems(cases, {"a": ["d0", "d1"], "b": ["d2", "d0"], "none": []})
    cfg = EndToEndConfig(k=2, repeats=2, single_doc=True)
    with pytest.raises(DeltapError, match=r"call ceiling 72 \(6 cases × 3 systems × 2, \+ 36 single-document"):
        end_to_end(cases, corpus, solver, systems, config=EndToEndConfig(k=2, repeats=2, single_doc=True, max_calls=71))
    first = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg)
    # 6 cases × 3 systems × 2 repeats, + 6 cases × 3 distinct documents (d0 shown by two systems, once) × 2 repeats
    assert first.run["ceiling"] == 72 and first.run["single_doc_ceiling"] == 36
    assert first.run["calls_this_process"] == 72 == first.run["calls"]
    assert set(first.single_doc["c0"]) == {"d0", "d1", "d2"} and not first.single_baseline  # pass: no baseline
    with TrialLog(tmp_path / "trials.sqlite", lock=False) as log:
        kinds = {r.kind for r in log.trials("c0")}
    assert kinds == {"endtoend:a", "endtoend:b", "endtoend:none", *(f"endtoend:single:d{i}" for i in range(3))}
    again = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg)
    assert again.run["calls_this_process"] == 0 and again.single_doc == first.single_doc
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["single_doc"]["documents"] == 18 and data["single_doc"]["label"] == "success rate alone"
    with pytest.raises(DeltapError, match="reserved"):
        end_to_end(cases, corpus, solver, _systems(cases, {"single:d0": ["d1"]}))


def test_erag_metrics_on_a_hand_worked_example() -> None:
    from deltap.endtoend.single import erag_labels, erag_metric, single_doc_ids

    systems = [System("x", "run", {"q": ["a", "b", "c", "z"]}), System("y", "run", {"q": ["e"]}),
               System("none", "control", {"q": []})]  # fmt: skip
    assert single_doc_ids(systems, "q", 3) == ["a", "b", "c", "e"]  # z is below the cut
    labels = {"q": {"a": 1.0, "b": 0.0, "c": 0.5, "e": -0.25}}
    p, hit, ndcg = (erag_metric(m, labels, systems, ["q"], 3)[0] for m in ("precision", "hit", "ndcg"))
    idcg = 1.0 + 0.5 / math.log2(3)  # the positive labels, best first
    np.testing.assert_allclose(p, [1.5 / 3, -0.25 / 3, 0.0])  # P@3 divides a short list by 3 (trec_eval)
    np.testing.assert_allclose(hit, [1.0, -0.25, 0.0])
    np.testing.assert_allclose(ndcg, [(1.0 + 0.0 / math.log2(3) + 0.5 / 2) / idcg, -0.25 / idcg, 0.0])
    assert erag_labels({"a": -1.0, "b": -3.0, "c": None}, -2.0, "logprob") == {"a": 1.0, "b": -1.0}  # lift
    assert erag_labels({"a": -1.0}, None, "logprob") == {} and erag_labels({"a": 0.5}, None, "pass") == {"a": 0.5}


def test_single_doc_rows_join_the_validity_table_and_the_report(tmp_path: Path) -> None:
    from deltap.endtoend.mined_run import evaluate_end_to_end
    from deltap.mining.engine import mine
    from deltap.report import write_html_report

    cases, corpus, truth = _toy(6)
    solver = SimulatedSolver(truth, outcome="logprob", noise=0.0)
    mine(cases, corpus, solver, out=tmp_path, budget=8, n_placebo=1, coalitions=False, outcome="logprob")
    res = evaluate_end_to_end(tmp_path, cases, corpus, solver, retrievers=("bm25",), controls=("none", "gold", "all"),
                              config=EndToEndConfig(k=1, outcome="logprob", single_doc=True))  # fmt: skip
    # logprob labels are the lift over no document: d0 +0.6, d1 -0.1 (noise-free planted effects)
    assert res.single_baseline["c0"] == pytest.approx(0.2)
    assert res.erag_labels()["c0"]["d0"] == pytest.approx(0.6)
    rows = {(r["metric"], r["qrels"]): r for r in res.validity["rows"]}
    for m in ("erag_precision@1", "erag_hit@1", "erag_ndcg@1"):
        assert (m, "single-doc (eRAG)") in rows
    assert rows[("erag_precision@1", "single-doc (eRAG)")]["means"]["gold"] == pytest.approx(0.6)  # d0 in every case
    assert rows[("erag_precision@1", "single-doc (eRAG)")]["means"]["none"] == 0.0
    erag = rows[("erag_precision@1", "single-doc (eRAG)")]
    success = [res.summary[s]["mean"] for s in res.systems]
    assert erag["tau"] == pytest.approx(
        kendall_tau(np.array([erag["means"][s] for s in res.systems]), np.array(success))
    )
    assert erag["tau"] > 0.8
    assert any(c["metric"] == "erag_precision@1 vs ndcg@1 on gold" for c in res.validity["comparisons"])
    html = write_html_report(tmp_path).read_text(encoding="utf-8")
    assert "erag_precision@1" in html and "documents asked alone" in html


def test_cli_single_doc_prints_its_calls_and_the_erag_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main

    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "qa"
    corpus_path, run = tmp_path / "corpus.jsonl", tmp_path / "run"
    main(["corpus", "markdown", str(example / "pages"), "-o", str(corpus_path)])
    main(["mine", str(example / "questions.jsonl"), "--corpus", str(corpus_path), "--out", str(run),
          "--solver", "simulated", "--retriever", "bm25", "--k", "3", "--placebo", "1"])  # fmt: skip
    capsys.readouterr()
    main(["endtoend", str(run), str(example / "questions.jsonl"), "--corpus", str(corpus_path), "--solver", "simulated",
          "--retriever", "bm25", "--controls", "none,gold", "--k", "2", "--single-doc"])  # fmt: skip
    out, err = capsys.readouterr()
    assert "single-document (eRAG) calls" in err  # in the ceiling printed first
    assert "erag_precision@2" in out and "single-doc (eRAG)" in out and "documents of 3 cases" in out
    data = json.loads((run / "endtoend" / "results.json").read_text(encoding="utf-8"))
    assert data["run"]["single_doc_ceiling"] > 0 and data["single_doc"]["documents"] >= 3
