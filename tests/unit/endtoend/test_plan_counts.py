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
    from tests.helpers import mined_endtoend_args

    corpus, bench, out, args = mined_endtoend_args(tmp_path, "--solver-option", "latency=0.01", "--single-doc")
    capsys.readouterr()
    main([*args, "--plan", "--json"])
    import json

    planned = json.loads(capsys.readouterr().out)["calls"]
    main(args)
    err = capsys.readouterr().err
    head = next(line for line in err.splitlines() if line.startswith("plan    "))
    assert head.startswith(f"plan    {planned} call(s) (")  # the same count as --plan, single documents included
    assert "latency: measured " in err and "made first by this run (logged, not made again)" in err
    assert "first 2 made now to time the solver" in err
    assert all(len(line) <= 80 for line in err.splitlines() if line.startswith(("plan  ", "time  ", "      ")))
    assert "earlier sessions" not in err  # the first two calls are this session's
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


@pytest.mark.parametrize("deterministic", [True, False])
def test_the_calls_that_time_the_solver_are_the_runs_own(deterministic: bool, tmp_path: Path) -> None:
    from deltap.endtoend.plan import run_plan
    from deltap.trials.log import TrialLogReader

    cases, corpus, truth = _toy(3)
    cfg = EndToEndConfig(k=3, repeats=2, outcome="pass", single_doc=True)
    systems = _systems(cases, LISTS)
    planned_fresh = plan_end_to_end(cases, corpus, SimulatedSolver(truth, seed=1, deterministic=deterministic),
                                    systems, cfg)  # fmt: skip
    solver = SimulatedSolver(truth, seed=1, deterministic=deterministic, latency=0.001)
    planned = run_plan(solver, cases, corpus, systems, cfg, tmp_path)
    calls, trials, _ = planned.timed
    assert calls == solver.calls == 2 and trials >= 2  # made now, logged
    assert planned.pace.measurement is not None and "made first by this run" in planned.pace.source
    assert planned.calls() + calls == planned_fresh.calls()  # counted in: the plan is the whole run's
    assert planned.brief()[0].startswith(f"plan    {planned_fresh.calls()} call(s) (")
    with TrialLogReader(tmp_path / "trials.sqlite") as log:
        first = {(t.record.case_id, t.record.kind) for t in log.trials()}
    assert first <= {(cases[0].case_id, "endtoend:a"), (cases[0].case_id, "endtoend:same_as_a"),
                     (cases[0].case_id, "endtoend:b")}  # fmt: skip
    # a resumed run makes none: its log's calls are the measurement
    again = SimulatedSolver(truth, seed=1, deterministic=deterministic)
    resumed = run_plan(again, cases, corpus, systems, cfg, tmp_path)
    assert again.calls == 0 and resumed.timed == (0, 0, 0.0) and "in the trial log" in resumed.pace.source
    assert resumed.calls() == planned.calls()
    res = end_to_end(cases, corpus, solver, systems, out=tmp_path, config=cfg, timed_before=(calls, trials))
    assert solver.calls == planned_fresh.calls() == res.run["calls"]  # no call made twice
    assert res.run["calls_this_process"] == solver.calls


def test_every_plan_line_fits_80_columns() -> None:
    from deltap.endtoend.plan import EndToEndPlan, SystemPlan
    from deltap.trials.planning import Pace

    rows = [SystemPlan("bm25", 12_345, 1_234, 0, 9_876_543), SystemPlan(SINGLE_ROW, 99_999, 9_999, 0, 12_345_678)]
    plan = EndToEndPlan("llama_cpp:SmolLM2-135M-Instruct-Q8_0.gguf", "exact (the solver's tokenizer)", 99, 1, rows)
    plan.pace = Pace((0.5, 1.6), "measured 1.20 s/call (0.19-1.80) on this machine at 02:00, load 1.3, n_threads=2, "
                     "over 2 call(s) made first by this run (logged, not made again); 739 prompt tokens/call measured, "
                     "scaled to the plan's 876")  # fmt: skip
    plan.timed = (2, 2, 3.2)
    for lines in (plan.brief(), plan.lines(), [plan.spent_line(600.0, 112_344)]):
        assert lines and all(len(line) <= 80 for line in lines), lines


def test_the_demos_end_to_end_step_prints_the_plan_endtoend_prints(tmp_path: Path) -> None:
    import json
    import re

    from deltap.demo import DemoConfig, run_demo

    lines: list[str] = []
    result = run_demo(
        DemoConfig(out=tmp_path / "demo", cases=2, calls=60, solver="simulated", embedder="hash", progress=False),
        say=lines.append,
    )
    step = lines[next(i for i, ln in enumerate(lines) if ln.startswith("[5/6]")) :]
    head = re.match(r"plan    (\d+) call\(s\)", step[1])
    assert head, step[:4]
    assert any(ln.startswith("time    ") and "s/call" in ln for ln in step[1:6])
    assert any(ln.startswith("        latency: measured ") for ln in step[1:8])
    assert all(len(ln) <= 80 for ln in step[1:6])
    run = json.loads((result.run_dir / "endtoend" / "results.json").read_text(encoding="utf-8"))["run"]
    assert int(head.group(1)) == run["calls"] == run["calls_this_process"]  # every call, the first two counted in
    spent = next(ln for ln in step if ln.startswith("  time    ") and " spent on " in ln)
    assert f"spent on {run['calls'] - 2} call(s) (the plan: " in spent  # the calls after the plan
