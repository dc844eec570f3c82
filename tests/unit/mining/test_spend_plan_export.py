"""Issue 27: what a run spent (tokens per trial in the log, run.json, the dataset, across sessions), the plan without
calls, the exports (CSV, Parquet) and the MLflow hook — with the simulated solver and the real string-match checker."""

from __future__ import annotations

import csv
import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from deltap.documents import Corpus
from deltap.mining.config import MiningConfig
from deltap.mining.engine import mine
from deltap.solvers.base import Answer, ContextWindow, SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog, TrialRecord
from tests.helpers import answering_solver, numbered_corpus, string_case

_case = string_case  # every case here has gold d00, d01 (tests/helpers.py)

PER_DOC, BASE, OUT = 5, 7, 2


class TokenSolver:
    """The simulated solver, counting ``BASE + PER_DOC × documents`` prompt tokens per call (as a ContextWindow)."""

    n_ctx = 100_000
    max_tokens = {"api_understanding": 16}

    def __init__(self, truths: dict[str, SimulatedTruth]) -> None:
        self.inner = answering_solver(truths)
        self.id = "tokens:" + self.inner.id

    def tokens(self, request: SolveRequest) -> list[int]:
        return [0] * (BASE + PER_DOC * len(request.documents))

    def answer(self, request: SolveRequest) -> Answer:
        ans = self.inner.answer(request)
        return replace(ans, usage={"prompt_tokens": len(self.tokens(request)), "completion_tokens": OUT})

    def score(self, request: SolveRequest, reference: str) -> Any:
        raise NotImplementedError


@pytest.fixture()
def corpus() -> Corpus:
    return numbered_corpus(40)


def _truths(*ids: str) -> dict[str, SimulatedTruth]:
    return {c: SimulatedTruth(0.2, {"d00": 0.5}) for c in ids}


CFG = MiningConfig(budget=32, n_placebo=4, price_in=2.0, price_out=10.0)


def _logged_tokens(run_dir: Path) -> tuple[int, int, int]:
    con = sqlite3.connect(run_dir / "trials.sqlite")
    rows = con.execute("SELECT prompt_tokens, completion_tokens, inclusion FROM trials").fetchall()
    con.close()
    for pt, ct, incl in rows:  # every trial's count is the one its prompt had
        assert pt == BASE + PER_DOC * incl.count("1") and ct == OUT
    return sum(r[0] for r in rows), sum(r[1] for r in rows), len(rows)


def test_run_json_and_dataset_record_tokens_and_cost_per_case(tmp_path: Path, corpus: Corpus) -> None:
    res = mine([_case("a"), _case("b")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG)
    tin, tout, n = _logged_tokens(tmp_path)
    spend = json.loads((tmp_path / "run.json").read_text())["spend"]
    assert (
        spend["calls"] == n == res.run["calls"] and spend["tokens_in"] == tin and spend["tokens_out"] == tout == OUT * n
    )
    assert spend["cost_usd"] == pytest.approx((tin * 2.0 + tout * 10.0) / 1e6)
    assert spend["prices"]["source"] == "--price-in/--price-out"
    assert sum(c["tokens_in"] for c in spend["by_case"].values()) == tin
    assert res.dataset.metadata["spend"]["tokens_in"] == tin and "solver_seconds" not in res.dataset.metadata["spend"]
    for pair in res.dataset.pairs:
        assert pair["metadata"]["spend"] == {
            k: v for k, v in spend["by_case"][pair["id"]].items() if k != "solver_seconds"
        }
    assert res.run["spend_this_process"] == {"calls": n, "tokens_in": tin, "tokens_out": tout}


def test_a_resumed_run_adds_up_the_sessions(tmp_path: Path, corpus: Corpus) -> None:
    mine([_case("a")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG)
    first = json.loads((tmp_path / "run.json").read_text())["spend"]
    res = mine([_case("a"), _case("b")], corpus, TokenSolver(_truths("a", "b")), out=tmp_path, config=CFG)
    tin, _, n = _logged_tokens(tmp_path)
    assert res.run["spend"]["tokens_in"] == tin and res.run["spend"]["calls"] == n  # both sessions
    assert res.run["spend"]["by_case"]["a"] == first["by_case"]["a"]
    assert (
        res.run["spend_this_process"]["tokens_in"]
        == tin - first["tokens_in"]
        == res.run["spend"]["by_case"]["b"]["tokens_in"]
    )


_OLD_TRIALS = """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pools (case_id TEXT PRIMARY KEY, pool_json TEXT NOT NULL);
CREATE TABLE trials (case_id TEXT NOT NULL, kind TEXT NOT NULL, trial_index INTEGER NOT NULL, seed INTEGER NOT NULL,
    inclusion TEXT NOT NULL, prompt_hash TEXT, answer TEXT, outcome TEXT NOT NULL, value REAL, latency REAL, solver_id TEXT,
    checker_id TEXT, detail TEXT, created REAL NOT NULL, PRIMARY KEY (case_id, kind, trial_index));
CREATE TABLE trial_history (case_id TEXT NOT NULL, kind TEXT NOT NULL, trial_index INTEGER NOT NULL, seed INTEGER NOT NULL,
    inclusion TEXT NOT NULL, prompt_hash TEXT, answer TEXT, outcome TEXT NOT NULL, value REAL, latency REAL, solver_id TEXT,
    checker_id TEXT, detail TEXT, created REAL NOT NULL, retired REAL NOT NULL, reason TEXT NOT NULL);
INSERT INTO pools VALUES ('c', '{"case_id": "c", "candidates": [{"doc_id": "d00"}, {"doc_id": "d01"}]}');
INSERT INTO trials VALUES ('c', 'design', 0, 1, '10', 'h0', 'ans', 'pass', 1.0, 0.5, 's', 'k', '', 100.0);
INSERT INTO trials VALUES ('c', 'design', 1, 2, '01', 'h1', 'no', 'fail', 0.0, 0.25, 's', 'k', '', 101.0);
"""


def _old_log(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path / "trials.sqlite")
    con.executescript(_OLD_TRIALS)
    con.close()
    return path


def test_a_log_of_the_old_schema_stays_readable_and_gains_the_token_columns(tmp_path: Path) -> None:
    from deltap.mining.spend import case_spend

    run = _old_log(tmp_path / "old")
    with TrialLog(run / "trials.sqlite") as log:
        old = log.trials("c")
        assert [(r.trial_index, r.prompt_tokens, r.completion_tokens) for r in old] == [
            (0, None, None),
            (1, None, None),
        ]
        log.append(TrialRecord("c", "design", 2, 3, "11", "h2", "ans", "pass", 1.0, 0.1, "s", "k", "", 40, 3))
        assert log.trials("c")[2].prompt_tokens == 40
        assert log.retire_errors() == 0  # the history table took the new columns too
        spent = case_spend(log.trials("c"))
    assert (spent.calls, spent.counted_calls, spent.tokens_in, spent.tokens_out) == (3, 1, 40, 3)
    assert spent.to_dict()["tokens_counted_calls"] == 1


def test_csv_export_lists_every_trial_with_its_documents_even_from_an_old_log(tmp_path: Path) -> None:
    from deltap.mining.export import export_trials

    run = _old_log(tmp_path / "old")
    path = export_trials(run, "csv")
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["trial_index"], r["documents"], r["outcome"], r["prompt_tokens"]) for r in rows] == [
        ("0", "d00", "pass", ""),
        ("1", "d01", "fail", ""),
    ]


def test_parquet_export_matches_the_trial_log(tmp_path: Path, corpus: Corpus) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the fast extra) is not installed")
    from deltap.mining.export import export_trials

    mine([_case("a")], corpus, TokenSolver(_truths("a")), out=tmp_path, config=CFG)
    tin, _, n = _logged_tokens(tmp_path)
    table = pq.read_table(export_trials(tmp_path, "parquet")).to_pylist()
    assert len(table) == n and sum(r["prompt_tokens"] for r in table) == tin
    con = sqlite3.connect(tmp_path / "trials.sqlite")
    pool = json.loads(con.execute("SELECT pool_json FROM pools").fetchone()[0])
    con.close()
    ids = [c["doc_id"] for c in pool["candidates"]]
    for r in table:
        assert r["n_documents"] == len(r["documents"]) and r["prompt_tokens"] == BASE + PER_DOC * r["n_documents"]
        assert set(r["documents"]) <= set(ids)
    assert {r["kind"] for r in table} >= {"preflight_none", "preflight_all", "design"}


def test_export_errors_are_one_line(tmp_path: Path) -> None:
    from deltap.errors import DeltapError
    from deltap.mining.export import export_trials

    with pytest.raises(DeltapError, match="no trial log"):
        export_trials(tmp_path, "csv")
    with pytest.raises(DeltapError, match="--format must be one of csv, parquet"):
        export_trials(_old_log(tmp_path / "x"), "xlsx")


def test_plan_counts_the_ceiling_and_the_expected_tokens_without_a_call(tmp_path: Path, corpus: Corpus) -> None:
    from deltap.mining.plan import plan_mine
    from deltap.mining.procedure import call_ceiling
    from deltap.trials.prices import prices_for

    solver = TokenSolver(_truths("a", "b"))
    assert isinstance(solver, ContextWindow)
    calls_before = solver.inner.calls if hasattr(solver.inner, "calls") else None
    cases = [_case("a"), _case("b")]
    plan = plan_mine(cases, corpus, solver, CFG, prices=prices_for(2.0, 10.0), latency=0.5)
    assert (solver.inner.calls if hasattr(solver.inner, "calls") else None) == calls_before
    pre, design, coalition = call_ceiling(CFG)
    m = 2 + CFG.n_placebo
    for cp in plan.cases:
        assert cp.candidates == m and cp.calls == {"preflight": pre, "design": design, "coalition": coalition}
        assert (cp.tokens_none, cp.tokens_all) == (BASE, BASE + PER_DOC * m)
        assert cp.tokens_expected == pytest.approx(BASE + 0.5 * PER_DOC * m)  # each candidate in with probability π
    d = plan.to_dict()
    assert d["calls_ceiling"] == 2 * (pre + design + coalition) and "exact" in d["tokens_counted"]
    expected_in = 2 * ((pre / 2) * (2 * BASE + PER_DOC * m) + (design + coalition) * (BASE + 0.5 * PER_DOC * m))
    assert d["tokens_in_expected"] == round(expected_in)
    assert d["tokens_out_max"] == 16 * d["calls_ceiling"]
    assert d["cost_usd"]["expected"] == pytest.approx(
        (d["tokens_in_expected"] * 2.0 + d["tokens_out_max"] * 10.0) / 1e6
    )
    assert d["seconds"]["max"] == pytest.approx(0.5 * d["calls_ceiling"])
    assert all(len(line) <= 80 for line in plan.lines()), plan.lines()
    json.dumps(d)
    # the run then stays within the plan
    res = mine(cases, corpus, solver, out=tmp_path, config=CFG)
    assert res.run["spend"]["calls"] <= d["calls_ceiling"] and res.run["spend"]["tokens_in"] <= d["tokens_in_max"]


def test_hosted_solvers_get_an_estimate_labelled_as_such(corpus: Corpus) -> None:
    from deltap.mining.plan import plan_calls

    solver = SimulatedSolver(_truths("a"), answers={"a": "ans-a"}, seed=5)
    plan = plan_calls([_case("a")], {"a": [corpus["d00"], corpus["d01"]]}, CFG, solver)
    assert plan.counted.startswith("estimate")
    assert plan.cases[0].tokens_all > plan.cases[0].tokens_none > 0
    assert plan.seconds() is None and any("--latency" in line for line in plan.lines())


def test_progress_shows_tokens_and_cost_against_the_plan() -> None:
    from deltap.mining.progress import MiningProgress
    from deltap.trials.prices import prices_for

    bar = MiningProgress(
        2, enabled=False, config=CFG, prices=prices_for(2.0, 10.0), planned_tokens_in=9_000, clock=lambda: 0.0
    )
    bar({"case_id": "a", "case_index": 0, "cases": 2, "trials": 0, "budget": 32, "open": 5, "status": "running",
         "calls": 10, "tokens_in": 1_500_000, "tokens_out": 20})  # fmt: skip
    line = next(x for x in bar.lines() if "tokens" in x)
    assert "tokens 1.5M/~9.0k in · 20 out · $3.00" in line


def test_reports_show_the_tokens_and_the_cost(tmp_path: Path, corpus: Corpus) -> None:
    from deltap.report import render_html, render_markdown
    from deltap.report.run_data import load_run_dir

    res = mine([_case("a")], corpus, TokenSolver(_truths("a")), out=tmp_path, config=CFG)
    spend = res.run["spend"]
    data = load_run_dir(tmp_path)
    assert data.trial_log is not None and data.trial_log.tokens_in == spend["tokens_in"]
    html, md = render_html(data), render_markdown(data)
    assert f"{spend['tokens_in']:,} / {spend['tokens_out']:,}" in html and f"${spend['cost_usd']:,.2f}" in html
    assert f"| tokens in / out, all sessions | {spend['tokens_in']:,} / {spend['tokens_out']:,} |" in md


def test_mlflow_hook_logs_params_metrics_and_the_report(
    tmp_path: Path, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow is not installed (pip install 'deltap[mlflow]')")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store in maintenance mode
    from deltap.report.tracking import log_run_to_mlflow

    run_dir = tmp_path / "run"
    res = mine([_case("a")], corpus, TokenSolver(_truths("a")), out=run_dir, config=CFG)
    store = (tmp_path / "mlruns").as_uri()
    run_id = log_run_to_mlflow(run_dir, tracking_uri=store, experiment="issue27")
    got = mlflow.tracking.MlflowClient(tracking_uri=store).get_run(run_id)
    assert got.data.params["budget"] == "32" and got.data.params["outcome"] == "pass"
    assert (
        got.data.metrics["solver_calls"] == res.run["calls"]
        and got.data.metrics["tokens_in"] == res.run["spend"]["tokens_in"]
    )
    arts = {a.path for a in mlflow.tracking.MlflowClient(tracking_uri=store).list_artifacts(run_id)}
    assert {"report.html", "run.json", "retrieval_dataset.yaml"} <= arts


def test_pilot_stops_a_run_whose_success_does_not_move_and_its_calls_are_reused(tmp_path: Path, corpus: Corpus) -> None:
    from deltap.mining.pilot import PilotStop

    cases = [_case(f"c{i}") for i in range(10)]
    flat = {c.case_id: SimulatedTruth(0.0, {}) for c in cases}  # never solved, whatever the context
    cfg = replace(CFG, pilot=4, price_in=None, price_out=None)
    with pytest.raises(
        PilotStop, match=r"pilot: in 4 sampled case\(s\) \(8 calls\) the solver's success does not move"
    ):
        mine(cases, corpus, TokenSolver(flat), out=tmp_path, config=cfg)
    con = sqlite3.connect(tmp_path / "trials.sqlite")
    kinds = sorted(k for (k,) in con.execute("SELECT kind FROM trials"))
    con.close()
    assert kinds == ["preflight_all"] * 4 + ["preflight_none"] * 4  # a few calls, before any design trial
    forced = mine(cases, corpus, TokenSolver(flat), out=tmp_path, config=replace(cfg, force=True))
    assert forced.run["calls_this_process"] == forced.run["calls"] - 8  # the pilot's calls were reused
    assert forced.run["pilot"]["hopeless"] is True


def test_pilot_lets_a_run_with_real_effects_go_on(tmp_path: Path, corpus: Corpus) -> None:
    cases = [_case(f"c{i}") for i in range(6)]
    strong = {c.case_id: SimulatedTruth(0.05, {"d00": 0.9}) for c in cases}
    cfg = replace(CFG, pilot=6, price_in=None, price_out=None, preflight=3)
    res = mine(cases, corpus, TokenSolver(strong), out=tmp_path, config=cfg)
    assert res.run["pilot"]["hopeless"] is False and res.run["pilot"]["cases_that_can_yield_labels"] >= 3
    assert res.run["pilot"]["calls"] == 6 * 2 * 3
    assert sum(p["metadata"]["calls_by_kind"]["preflight"] for p in res.dataset.pairs) == 6 * 2 * 3  # not asked twice


def test_cli_plan_json_export_and_their_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    common = [
        "mine",
        str(bench),
        "--corpus",
        str(corpus),
        "--retriever",
        "none",
        "--solver",
        "simulated",
        "--budget",
        "32",
    ]
    main(
        [
            *common,
            "--placebo",
            "3",
            "--out",
            str(out),
            "--plan",
            "--json",
            "--price-in",
            "1",
            "--price-out",
            "4",
            "--latency",
            "0.5",
        ]
    )
    plan = json.loads(capsys.readouterr().out)
    assert plan["cases"] == 1 and plan["calls_ceiling"] == plan["by_case"][0]["calls_ceiling"] > 32
    assert plan["tokens_counted"].startswith("estimate") and plan["prices"]["usd_per_million_in"] == 1.0
    assert not out.exists()  # no call made, nothing written
    with pytest.raises(SystemExit) as exc:
        main([*common, "--out", str(out), "--json"])
    assert exc.value.code == 2 and "--json prints the plan" in capsys.readouterr().err
    main([*common, "--placebo", "3", "--out", str(out), "--sim-effect", "0.6", "--pilot", "0"])
    assert "spent " in capsys.readouterr().err
    main(["export", str(out), "--format", "csv"])
    path = Path(capsys.readouterr().out.strip())
    assert (
        path == out / "trials.csv"
        and len(path.read_text().splitlines()) == json.loads((out / "run.json").read_text())["calls"] + 1
    )
    with pytest.raises(SystemExit) as exc:
        main(["export", str(out), "--format", "xlsx"])
    assert exc.value.code == 2 and "--format must be one of csv, parquet" in capsys.readouterr().err


def test_pilot_judgement_one_flip_among_eight_is_not_worth_the_budget() -> None:
    from deltap.mining.pilot import PilotCase, assess_pilot

    flat = [PilotCase(f"c{i}", (float(i % 2),), (float(i % 2),)) for i in range(7)]
    one_flip = assess_pilot([*flat, PilotCase("c7", (0.0,), (1.0,))], 16, "pass", 0.1, 32, 8)
    assert one_flip.hopeless and one_flip.decidable_cases == 1 and "fewer than 2" in one_flip.message
    drawn = assess_pilot([*flat, PilotCase("c7", (0.0,), (1.0,))], 16, "pass", 0.1, 32, 8, deterministic=False)
    assert not drawn.hopeless  # a stochastic solver's single calls are draws: only "nothing moved" stops
    three = assess_pilot([*flat[:5], *(PilotCase(f"u{i}", (0.0,), (1.0,)) for i in range(3))], 16, "pass", 0.1, 32, 8)
    assert not three.hopeless and three.decidable_cases == 3
    # logprob, as the demo: every case's reference gains nats with the documents
    demo = assess_pilot([PilotCase(f"d{i}", (-9.0,), (-6.0 + 0.1 * i,)) for i in range(6)], 12, "logprob", 0.5, 16, 6)
    assert not demo.hopeless and demo.decidable_cases == 6
    # the budget decides what is detectable: a 0.3 nat lift clears min effect 0.25 but not 2.8·2σ/√B at budget 16
    small = assess_pilot([PilotCase(f"s{i}", (-9.0,), (-8.7,)) for i in range(4)], 8, "logprob", 0.25, 16, 4)
    assert small.detectable["s0"] == pytest.approx(2.8 * 2 * 0.15 / 4) and small.decidable_cases == 4
    big_noise = assess_pilot(
        [PilotCase(f"p{i}", (0.0, 1.0, 0.0), (1.0, 0.0, 1.0)) for i in range(4)], 24, "pass", 0.1, 16, 4
    )
    assert big_noise.detectable["p0"] == pytest.approx(2.8 * 2 * 0.5 / 4) and big_noise.hopeless  # lift 1/3 < 0.7


def test_cli_plans_a_hosted_model_without_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    corpus, bench = mine_files(tmp_path)
    main(["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "openai", "--model", "gpt-4o-mini",
          "--rpm", "30", "--out", str(tmp_path / "run"), "--plan", "--json"])  # fmt: skip
    plan = json.loads(capsys.readouterr().out)
    assert plan["solver"] == "openai:gpt-4o-mini" and plan["tokens_counted"].startswith("estimate")
    assert plan["prices"]["usd_per_million_in"] == 0.15 and "2025-01" in plan["prices"]["source"]
    assert plan["seconds"]["max"] == pytest.approx(60 * plan["calls_ceiling"] / 30)  # the --rpm bounds the time
    with pytest.raises(SystemExit) as exc:  # a real run still needs the key
        main(
            [
                "mine",
                str(bench),
                "--corpus",
                str(corpus),
                "--retriever",
                "none",
                "--solver",
                "openai",
                "--model",
                "m",
                "--out",
                str(tmp_path / "r"),
            ]
        )
    assert exc.value.code == 2 and "no API key" in capsys.readouterr().err
