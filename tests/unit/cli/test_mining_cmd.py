"""`deltap mine` and `deltap simulate` through the real CLI entry point (simulated solver, tiny files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deltap.cli.app import main
from tests.helpers import mine_files


def test_mine_writes_the_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    main(
        [
            "mine",
            str(bench),
            "--corpus",
            str(corpus),
            "--retriever",
            "none",
            "--solver",
            "simulated",
            "--sim-effect",
            "0.6",
            "--budget",
            "64",
            "--placebo",
            "3",
            "--out",
            str(out),
        ]
    )
    run = json.loads((out / "run.json").read_text())
    assert run["cases"] == 1 and run["solver"].startswith("simulated") and run["placebo"]["n"] == 3
    import yaml

    data = yaml.safe_load((out / "retrieval_dataset.yaml").read_text())
    pair = data["pairs"][0]
    assert pair["metadata"]["missing_gold"] == ["pkg.Missing"]
    assert {c["doc_id"]: c["verdict"] for c in pair["candidates"]}["pkg.D0"] == "relevant"
    printed = capsys.readouterr()
    assert "1 gold id(s) of 1 case(s)" in printed.err
    # the tilt (issue 28): no retrieved candidates, so not measured — and the terminal says so
    assert run["tilt"]["ratio"] is None and run["tilt"]["spreads"]["placebo"]["n"] == 3
    assert "tilt: not measured (0 retrieved non-gold and 3 placebo estimates" in printed.out + printed.err


def test_simulate_prints_a_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    main(
        [
            "simulate",
            "--scenario",
            "S1",
            "--design",
            "fixed:64",
            "--design",
            "naive:10",
            "-r",
            "30",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    out = capsys.readouterr().out
    assert "fixed:64" in out and "naive:10" in out
    rows = json.loads((tmp_path / "r.json").read_text())
    assert [r["design"] for r in rows] == ["fixed:64", "naive:10"]


def test_unknown_scenario_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--scenario", "nope", "-r", "5"])
    assert exc.value.code == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_a_run_mined_before_the_answer_grammar_resumes_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    args = [
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
        "--placebo",
        "2",
        "--no-coalitions",
        "--out",
        str(out),
    ]
    main(args)
    with sqlite3.connect(out / "trials.sqlite") as db:  # as a log written before checker_grammar existed
        for case_id, manifest in db.execute("SELECT case_id, manifest_json FROM manifests").fetchall():
            m = json.loads(manifest)
            del m["checker_grammar"]
            db.execute("UPDATE manifests SET manifest_json = ? WHERE case_id = ?", (json.dumps(m), case_id))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert (
        exc.value.code != 0
        and "checker_grammar lenient -> grader in 1 case(s) [q1]" in err
        and "--answer-grammar lenient" in err
    )
    assert "Traceback" not in err
    main([*args, "--answer-grammar", "lenient"])
    assert json.loads((out / "run.json").read_text())["calls_this_process"] == 0
    with pytest.raises(SystemExit):
        main([*args, "--answer-grammar", "loose"])
    assert "--answer-grammar must be one of grader, protocol, strict, lenient, got 'loose'" in capsys.readouterr().err


def test_mine_takes_the_topic_null_and_the_learned_gold_weight(tmp_path: Path) -> None:
    """Issue 28's two options reach the run from the command line (they were library-only)."""
    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    args = ["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "simulated"]
    main([*args, "--budget", "32", "--placebo", "3", "--null", "topic", "--gold-weight-learned", "--verify-trials", "3",
          "--out", str(out)])  # fmt: skip
    import yaml

    config = yaml.safe_load((out / "retrieval_dataset.yaml").read_text())["metadata"]["config"]
    assert config["null"] == "topic" and config["gold_weight_learned"] is True and config["verify_trials"] == 3
