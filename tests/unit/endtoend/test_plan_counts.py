"""Issue 36 item 1: the end-to-end plan counts every call the run makes — each system's prompts and, with
``--single-doc``, each shown document alone (and the no-document prompt for ``logprob``) — compared with the calls a
fake-solver run really makes; and a real ``deltap endtoend`` prints that plan, timed, before its first call."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.endtoend import EndToEndConfig, end_to_end
from deltap.endtoend.plan import SINGLE_ROW, plan_end_to_end
from deltap.solvers.simulated import SimulatedSolver
from tests.unit.endtoend.test_engine import _systems, _toy

LISTS = {"a": ["d0", "d1"], "same_as_a": ["d0", "d1"], "b": ["d2"], "none": [], "wide": ["d3", "d0", "d2"]}


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("outcome", ["pass", "logprob"])
def test_the_plan_counts_the_calls_a_single_doc_run_makes(deterministic: bool, outcome: str, tmp_path: Path) -> None:
    cases, corpus, truth = _toy(3)
    cfg = EndToEndConfig(k=3, repeats=2, outcome=outcome, single_doc=True)
    systems = _systems(cases, LISTS)
    planner = SimulatedSolver(truth, seed=1, deterministic=deterministic)
    plan = plan_end_to_end(cases, corpus, planner, systems, cfg)
    assert planner.calls == 0  # planning asks nothing
    single = next(s for s in plan.systems if s.name == SINGLE_ROW)
    assert single.calls > 0
    solver = SimulatedSolver(truth, seed=1, deterministic=deterministic)
    res = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg)
    assert plan.calls() == solver.calls == res.run["calls"]  # every call, the single-document ones included
    assert sum(s.cached for s in plan.systems) == res.run["cached"]
    # the single-document share: 4 distinct documents per case (d0-d3), plus the no-document prompt for logprob; a
    # deterministic solver already asked d2 alone (system b) and the no-document prompt (system none)
    if deterministic:
        assert (single.calls, single.cached) == (3 * 3, 3 * (1 + (outcome == "logprob")))
    else:
        assert single.calls == 3 * (4 + (outcome == "logprob")) * 2
    # resumed: nothing is left to plan
    again = plan_end_to_end(cases, corpus, planner, systems, cfg, out=tmp_path)
    assert again.calls() == 0 and again.logged() == res.run["calls"] + res.run["cached"]


def test_without_single_doc_there_is_no_single_row() -> None:
    cases, corpus, truth = _toy(2)
    plan = plan_end_to_end(
        cases, corpus, SimulatedSolver(truth, seed=1), _systems(cases, LISTS), EndToEndConfig(k=2, repeats=3)
    )
    assert SINGLE_ROW not in [s.name for s in plan.systems]
    lines = plan.lines()
    assert lines[0].startswith("plan: end to end, 2 case(s) × 5 system(s) × 3 repeat(s), no call made")


def test_a_real_endtoend_prints_its_timed_plan_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from deltap.trials.pace import pace_cache_path
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    main(["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "simulated", "--budget", "16",
          "--placebo", "3", "--out", str(out), "--pilot", "0"])  # fmt: skip
    capsys.readouterr()
    args = ["endtoend", str(out), str(bench), "--corpus", str(corpus), "--retriever", "", "--controls", "none,gold,all",
            "--solver", "simulated", "--solver-option", "latency=0.01", "--repeats", "2", "--single-doc"]  # fmt: skip
    main([*args, "--plan", "--json"])
    import json

    planned = json.loads(capsys.readouterr().out)["calls"]
    main(args)
    err = capsys.readouterr().err
    head = next(line for line in err.splitlines() if line.startswith("plan    "))
    assert head.startswith(f"plan    {planned} call(s) (")  # the same count as --plan, single documents included
    assert "latency: measured " in err and "of a calibration before the run" in err
    assert "spent on" in err and "(the plan: " in err
    assert pace_cache_path().is_file()  # kept for the next plan
    main([*args, "--plan"])  # finished: nothing left
    assert "time    0:00" in capsys.readouterr().out
    from deltap.endtoend.plan import logged_pace
    from deltap.loaders import load_cases, load_corpus
    from deltap.trials.setup import SolverSettings, build_solver

    cases = load_cases(bench, corpus=load_corpus(corpus), on_missing="skip")
    solver = build_solver(SolverSettings("simulated", options={"latency": 0.01}), None, cases, "pass", 0)[0]
    kept = logged_pace(solver, out / "endtoend")  # a resumed run's plan: the log's own calls are the measurement
    assert kept is not None and "in the trial log" in kept.source()
