"""The run set-up (``deltap.mining.setup.prepare_run``) that ``deltap mine``, ``deltap demo`` and ``deltap endtoend``
share, and the demo's ``--calls`` (with ``--budget`` its deprecated alias)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deltap.errors import DeltapError
from deltap.mining.config import MiningConfig
from deltap.mining.setup import (
    CaseSelection,
    ExecutorSettings,
    RetrieverSettings,
    SolverSettings,
    build_solver,
    parse_options,
    prepare_run,
)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"pkg.D{i}", "title": "", "text": f"doc {i}"}) + "\n" for i in range(12))
    )
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        "benchmarks:\n"
        + "".join(
            f"  - id: q{i}\n    question: Which class runs agents {i}?\n    benchmark_type: api_understanding\n"
            f"    answers:\n      - answer: Runner{i}\n        fully_qualified_class_name: [pkg.D{i}, pkg.Missing]\n"
            for i in range(3)
        )
    )
    return corpus, bench


def test_prepare_run_selects_fits_and_mines(tmp_path: Path) -> None:
    corpus, bench = _files(tmp_path)
    run = prepare_run(
        CaseSelection(bench, corpus, case_ids=["q2", "q0"], limit=1, answer_grammar="lenient"),
        SolverSettings("simulated", sim_effect=0.6),
        executor=ExecutorSettings("inprocess", workers=3),
        retriever=RetrieverSettings("none"),
        config=MiningConfig(budget=16, n_placebo=3, k=5),
        out=tmp_path / "run",
    )
    assert [c.case_id for c in run.cases] == ["q0"]  # file order, then the limit
    assert run.cases[0].checker.params["grammar"] == "lenient"
    assert run.config.k == 0 and run.config.workers == 3  # no retriever: no retrieved candidates; in-process workers
    assert run.executor is None and run.retriever is None
    assert run.notes == ["3 gold id(s) of 3 case(s) are not in the corpus and were dropped"]
    assert run.solver_spec.kind == "simulated" and "truth" in run.solver_spec.options  # planted on the gold
    result = run.mine()
    assert result.run["cases"] == 1
    assert all(path.is_file() for path in run.layout.values()), run.layout


def test_prepare_run_refuses_an_unknown_case_id_and_grammar(tmp_path: Path) -> None:
    corpus, bench = _files(tmp_path)
    with pytest.raises(DeltapError, match="unknown case id"):
        prepare_run(CaseSelection(bench, corpus, case_ids=["nope"]), SolverSettings("simulated"))
    with pytest.raises(DeltapError, match="--answer-grammar must be one of grader, protocol, strict, lenient"):
        prepare_run(CaseSelection(bench, corpus, answer_grammar="loose"), SolverSettings("simulated"))


def test_rate_limits_are_for_solvers_that_declare_themselves_hosted() -> None:
    from deltap.solvers import SOLVER_KINDS, solver_capabilities

    assert [k for k in SOLVER_KINDS if solver_capabilities(k).hosted] == ["openai", "gemini"]
    with pytest.raises(DeltapError, match="--requests-per-minute paces the openai and gemini solvers, not 'simulated'"):
        SolverSettings("simulated", requests_per_minute=60).spec([])
    with pytest.raises(DeltapError, match="--tokens-per-minute paces"):  # refused before any file is read
        prepare_run(CaseSelection("missing.yaml", "missing.jsonl"), SolverSettings("local", tokens_per_minute=1))
    spec = SolverSettings("openai", model="m", options={"base_url": "http://x"}, tokens_per_minute=1000).spec([])
    assert spec.options == {"base_url": "http://x", "model": "m", "tokens_per_minute": 1000}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param(ExecutorSettings("spark"), "--executor must be one of inprocess, ray", id="kind"),
        pytest.param(
            ExecutorSettings("inprocess", options={"address": "auto"}), "need --executor ray", id="inprocess-option"
        ),
        pytest.param(
            ExecutorSettings("ray", options={"bogus": 1}), "the ray executor takes address, calls_per_worker", id="ray"
        ),
    ],
)
def test_executor_options_are_checked_before_anything_runs(settings: ExecutorSettings, message: str) -> None:
    with pytest.raises(DeltapError, match=message):
        settings.check()


def test_parse_options_reads_json_values_and_names_the_flag() -> None:
    assert parse_options(["a=3", "b=true", "c=x y", "d=[1, 2]"]) == {"a": 3, "b": True, "c": "x y", "d": [1, 2]}
    with pytest.raises(DeltapError, match="--executor-option 'oops' must look like key=value"):
        parse_options(["oops"], "--executor-option")


def test_a_built_solver_is_reused_not_rebuilt() -> None:
    solver, spec, executor = build_solver(SolverSettings("simulated", options={"truth": {}}))
    again, _, _ = build_solver(SolverSettings("simulated", options={"truth": {}}, solver=solver))
    assert again is solver and spec.kind == "simulated" and executor is None


def test_mine_cli_takes_executor_options_and_keeps_the_old_spellings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main

    corpus, bench = _files(tmp_path)
    base = ["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--solver", "simulated"]
    for extra, message in (
        (["--executor-option", "address=auto"], "need --executor ray"),
        (["--calls-per-worker", "2"], "need --executor ray"),
        (["--executor", "ray", "--executor-option", "bogus=1"], "the ray executor takes address"),
        (["--executor-option", "nokey"], "--executor-option 'nokey' must look like key=value"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*base, "--out", str(tmp_path / "x"), *extra])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_mine_command_is_options_the_call_and_printing() -> None:
    """Issue 25: the set-up lives in the library; the command's body stays short."""
    import ast
    import inspect

    from deltap.cli import mining_cmd

    fn = next(
        n
        for n in ast.parse(inspect.getsource(mining_cmd)).body
        if isinstance(n, ast.FunctionDef) and n.name == "mine_command"
    )
    body = fn.end_lineno - fn.body[0].lineno + 1  # type: ignore[operator]
    assert body <= 60, body


def test_demo_calls_and_the_deprecated_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from deltap.demo import BUDGET_DEPRECATED, DemoConfig

    with pytest.warns(DeprecationWarning, match="--budget is deprecated"):
        config = DemoConfig(out=tmp_path, cases=2, budget=60)
    assert config.calls == 60 and config.budget is None
    args = ["demo", "--solver", "simulated", "--embedder", "hash", "--cases", "2", "--no-progress", "--no-endtoend"]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--out", str(tmp_path / "both"), "--calls", "70", "--budget", "60"])
    assert exc.value.code == 2 and "give --calls only" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "old"), "--budget", "60"]) in (0, None)
    printed = capsys.readouterr()
    assert printed.err.count(BUDGET_DEPRECATED) == 1
    assert "--calls 60 (≤30 calls per case);" in printed.out
    assert main([*args, "--out", str(tmp_path / "new"), "--calls", "60"]) in (0, None)
    printed = capsys.readouterr()
    assert "deprecated" not in printed.err and "--calls 60 (≤30 calls per case);" in printed.out
    assert (tmp_path / "old" / "run" / "qrels.trec").read_text() == (
        tmp_path / "new" / "run" / "qrels.trec"
    ).read_text()
