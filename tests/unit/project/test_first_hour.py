"""The first hour of a new user (issue 17): one figure per fact, 80-column terminals, complete error messages, and
reports that show what a user asks next. Each test is an attack on one complaint of the issue."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.cli.app import main
from deltap.documents import Corpus, Document
from deltap.errors import FormatError
from tests.helpers import cli_exit_code

# --- error messages -----------------------------------------------------------------------------------------------


def test_json_error_detail_is_a_whole_phrase(tmp_path: Path) -> None:
    from deltap.documents import read_corpus_jsonl

    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "fine"}\n{"_id": "b", "text": "cut\n', encoding="utf-8")
    with pytest.raises(FormatError) as info:
        read_corpus_jsonl(path)
    message = str(info.value)
    assert ":2:" in message and "Unterminated string starting at column 22" in message
    assert not re.search(r"starting at\)", message)


def test_duplicate_symbol_note_is_printed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    symbols = tmp_path / "symbols.yaml"
    symbols.write_text(
        "- {id: pkg.A.x, type: property, docstring: getter}\n- {id: pkg.A.x, type: property, docstring: setter}\n",
        encoding="utf-8",
    )
    assert cli_exit_code(["corpus", "api", str(symbols), "-o", str(tmp_path / "c.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.count("duplicate symbol id") == 1, err


# --- 80 columns ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [[], ["mine"], ["demo"], ["compare"], ["check"], ["corpus"], ["report"], ["simulate"]]
)
def test_help_fits_80_columns_without_cut_text_or_type_markers(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli_exit_code([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.strip()
    too_long = [ln for ln in out.splitlines() if len(ln) > 80]
    assert too_long == []
    assert "<bool>" not in out and "…" not in out
    commands = out.split("Commands:", 1)[1].splitlines() if "Commands:" in out else []
    assert not [ln for ln in commands if ln.rstrip().endswith("...")]  # click cuts a command's summary with "..."


def test_help_keeps_every_word_of_a_long_option_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli_exit_code(["mine", "--help"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert "Default: auto for --outcome logprob, zero for pass." in flat


def _runs(tmp_path: Path) -> tuple[Path, list[str]]:
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(12)}
    qpath = tmp_path / "qrels.json"
    from deltap.qrels import write_trec_qrels, write_trec_run

    write_trec_qrels(qrels, qpath.with_suffix(".trec"))
    args = []
    for name, shift in (("bm25", 0), ("dense_with_a_long_name", 1), ("hybrid", 2)):
        run = {q: {f"d{(i + shift * (i % 2)) % 12}": 2.0, "x": 1.0} for i, q in enumerate(qrels)}
        args += ["--run", f"{name}={write_trec_run(run, tmp_path / f'{name}.trec', tag=name)}"]
    return qpath.with_suffix(".trec"), args


def test_compare_table_fits_80_columns_and_wide_keeps_the_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    qrels, runs = _runs(tmp_path)
    main(["compare", "--qrels", str(qrels), *runs, "--permutations", "200", "--bootstrap", "100"])
    compact = capsys.readouterr().out
    assert [ln for ln in compact.splitlines() if len(ln) > 80] == []
    for metric in ("hit_rate@10", "recall@10", "P@10", "MRR@10", "ndcg@10", "MAP", "R-prec"):
        assert metric in compact  # every metric is shown, in blocks that fit
    assert "dense_with_a_long_name" in compact and "W/T/L" in compact
    main(["compare", "--qrels", str(qrels), *runs, "--permutations", "200", "--bootstrap", "100", "--format", "wide"])
    wide = capsys.readouterr().out
    assert max(len(ln) for ln in wide.splitlines()) > 80 and re.search(r"\[\d\.\d{3}, \d\.\d{3}\]", wide)
    main(["compare", "--qrels", str(qrels), *runs, "--permutations", "200", "--bootstrap", "100", "--format", "json"])
    assert json.loads(capsys.readouterr().out)["n_queries"] == 12


# --- one figure per fact: a mined run, its evaluation and its report ---------------------------------------------------


@pytest.fixture(scope="module")
def mined_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Corpus, object]:
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine
    from deltap.qrels import read_beir_qrels, write_trec_run
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

    root = tmp_path_factory.mktemp("mined") / "run"
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "lambda", "zeta", "iota", "rho"]
    docs = [Document(f"d{i}", f"{w} document about {w} things " * 2) for i, w in enumerate(words)]
    corpus = Corpus(docs)
    cases = [
        Case("c0", "alpha question", ("d0",), CheckerSpec("string_match", {"answers": ["x"]}), reference_answer="x"),
        Case(
            "c1", "something about beta", ("d1",), CheckerSpec("string_match", {"answers": ["x"]}), reference_answer="x"
        ),
        Case("c2", "nothing helps here", (), CheckerSpec("string_match", {"answers": ["x"]}), reference_answer="x"),
    ]
    truth = {
        "c0": SimulatedTruth(-4.0, {"d0": 3.0}),
        "c1": SimulatedTruth(-4.0, {"d1": 3.0}),
        "c2": SimulatedTruth(-4.0, {}),
    }
    solver = SimulatedSolver(truth, {c.case_id: "x" for c in cases}, outcome="logprob", noise=0.3, seed=1)
    cfg = MiningConfig(outcome="logprob", budget=32, first_look=16, batch=8, n_placebo=3, k=0, seed=2, null="zero")
    result = mine(cases, corpus, solver, out=root, config=cfg)
    qrels = read_beir_qrels(root / "qrels" / "test.tsv")
    # bm25 finds d0 for c0 only; dense finds nothing relevant in its top 5
    runs = {
        "bm25": {q: ({"d0": 3.0, "d5": 1.0} if q == "c0" else {"d7": 2.0, "d8": 1.0}) for q in qrels},
        "dense": {q: {"d9": 2.0, "d10": 1.0} for q in qrels},
    }
    for name, run in runs.items():
        write_trec_run(run, root / "evaluation" / "runs" / f"{name}.trec", tag=name)
    return root, corpus, result


def test_report_means_equal_deltap_evaluate_on_the_same_qrels(mined_run: tuple[Path, Corpus, object]) -> None:
    import deltap
    from deltap.report import load_run_dir
    from deltap.report.figures import hit_at_k

    root, _, _ = mined_run
    data = load_run_dir(root)
    empty = [q for q, d in data.qrels.items() if not any(g > 0 for g in d.values())]
    for run in data.runs.values():
        per_query = hit_at_k(data.qrels, run, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", deltap.EvaluationWarning)
            ev = deltap.evaluate(root / "qrels.jsonl", run, ["hit_rate@5"], n_resamples=0)
        assert len(per_query) == len(ev.query_ids)
        assert sum(per_query.values()) / len(per_query) == pytest.approx(ev.means["hit_rate@5"])
        # a question without a relevant document is named in a note stating the one rule
        assert bool(empty) == any("no relevant document" in str(w.message) for w in caught)


def test_the_report_shows_failures_and_every_trial(mined_run: tuple[Path, Corpus, object]) -> None:
    import sqlite3

    from deltap.report import render_html
    from deltap.report.run_data import load_run_dir

    root, corpus, _ = mined_run
    data = load_run_dir(root)
    html = render_html(data, corpus=corpus)
    assert 'id="failures"' in html and "Failure analysis" in html
    section = html[html.index('id="failures"') : html.index('id="cases"')]
    assert "dense" in section and "c0" in section  # dense missed c0's relevant document
    con = sqlite3.connect(root / "trials.sqlite")
    per_case = dict(con.execute("SELECT case_id, COUNT(*) FROM trials GROUP BY case_id").fetchall())
    con.close()
    for case_id, n in per_case.items():
        block = html[html.index(f'<summary><b>{case_id}</b><span class="badge') :]
        block = block[: block.index("</details></div></details>") if "</details></div></details>" in block else None]
        assert f"every solver call of this case: {n} " in block
        assert block.count('<tr class="o-') == n  # one row per logged call
    assert data.trial_log is not None and data.trial_log.calls == sum(per_case.values()) == data.total_calls()


def test_a_rerun_does_not_reset_the_time_figures(mined_run: tuple[Path, Corpus, object], tmp_path: Path) -> None:
    import shutil

    from deltap.report import render_html
    from deltap.report.run_data import load_run_dir

    root, _, _ = mined_run
    copy = tmp_path / "run"
    shutil.copytree(root, copy)
    summary = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    assert summary["calls_this_process"] == summary["calls"] > 0  # the fixture's run made every call itself
    summary.update(wall_seconds=0.1, calls_this_process=0)  # what a rerun of the finished run writes
    (copy / "run.json").write_text(json.dumps(summary), encoding="utf-8")
    data = load_run_dir(copy)
    html = render_html(data)
    assert "wall time, last session" in html and f"0 of {summary['calls']:,} calls" in html
    assert "solver time (all sessions)" in html and "solver time per call" in html
    assert data.trial_log is not None and data.trial_log.calls == summary["calls"]


def test_demo_header_states_the_ceiling_it_keeps(tmp_path: Path) -> None:
    from deltap.demo import DemoConfig, run_demo

    lines: list[str] = []
    result = run_demo(
        DemoConfig(out=tmp_path / "demo", cases=3, calls=90, solver="simulated", embedder="hash", progress=False),
        say=lines.append,
    )
    at = next(i for i, ln in enumerate(lines) if ln.startswith("[3/6]"))
    header, plan = lines[at], lines[at + 1]  # the budget's split, then the plan mine() shows before its first call
    m = re.search(r"3 cases, --calls 90 \(≤(\d+) calls per case\)", header)
    assert m, header
    per_case = int(m.group(1))
    p = re.fullmatch(r"plan   3 case\(s\): calls ≤(\d+) \(preflight (\d+), trials ≤(\d+), coalition ≤(\d+)\)", plan)
    assert p, plan
    total, pre, trials, coal = map(int, p.groups())
    assert total == pre + trials + coal == 3 * per_case <= 90
    run = json.loads((result.run_dir / "run.json").read_text(encoding="utf-8"))
    assert run["calls"] <= total
    for case in run.get("per_case", []) or []:
        assert case["calls"] <= per_case
    evaluation = next(ln for ln in lines if "questions" in ln and "evaluation" in ln)
    compare = json.loads((result.run_dir / "evaluation" / "compare.json").read_text(encoding="utf-8"))
    assert f"{compare['n_queries']} questions" in evaluation


def test_a_resumed_mine_says_its_calls_came_from_the_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
    args = [
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
        "32",
        "--placebo",
        "3",
        "--out",
        str(tmp_path / "run"),
    ]
    main(args)
    first = capsys.readouterr().err
    calls = json.loads((tmp_path / "run" / "run.json").read_text())["calls"]
    assert f"{calls} calls:" in first and "this session" not in first
    main(args)
    again = capsys.readouterr().err
    # issue 36: each count says what it is (the log's calls, split by the session that made them)
    assert f"{calls} calls in the trial log (0 made by this session, {calls} by earlier sessions)" in " ".join(
        again.split()
    )


def test_report_cli_reads_the_corpus_for_the_failure_analysis(
    mined_run: tuple[Path, Corpus, object], tmp_path: Path
) -> None:
    from deltap.documents import write_corpus_jsonl

    root, corpus, _ = mined_run
    corpus_path = write_corpus_jsonl(corpus, tmp_path / "corpus.jsonl")
    out = tmp_path / "report.html"
    assert cli_exit_code(["report", str(root), "--out", str(out), "--corpus", str(corpus_path)]) == 0
    with_corpus = out.read_text(encoding="utf-8")
    assert cli_exit_code(["report", str(root), "--out", str(out)]) == 0
    without = out.read_text(encoding="utf-8")
    hint = "pass the corpus"
    assert hint in without and hint not in with_corpus
    assert 'id="failures"' in with_corpus


def test_the_new_sections_are_well_formed_html(mined_run: tuple[Path, Corpus, object]) -> None:
    from deltap.report import render_html
    from deltap.report.run_data import load_run_dir
    from tests.unit.report.test_report import _parse

    root, corpus, _ = mined_run
    parsed = _parse(render_html(load_run_dir(root), corpus=corpus))
    assert parsed.errors == [] and parsed.stack == []


def test_demo_cli_prints_the_reports_call_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.report.run_data import load_run_dir

    out = tmp_path / "demo"
    assert (
        cli_exit_code(
            [
                "demo",
                "--solver",
                "simulated",
                "--embedder",
                "hash",
                "--out",
                str(out),
                "--cases",
                "2",
                "--calls",
                "60",
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    data = load_run_dir(out / "run")
    assert data.trial_log is not None
    assert (
        f"({data.total_calls()} solver calls, {data.trial_log.seconds_per_call:.2f} s of solver time each)" in printed
    )
    assert "--calls 60 (≤30 calls per case)" in printed and "plan   2 case(s): calls ≤60 (" in printed


def test_too_few_placebos_is_said_once_and_last(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`deltap mine` with fewer placebos than the placebo null needs says so once, among the closing lines (it was
    printed twice: as the null's description and again as the problem)."""
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
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
            "--outcome",
            "logprob",
            "--budget",
            "16",
            "--placebo",
            "2",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    reason = "needed to fit the placebo null: tested against zero"
    assert err.count(reason) == 1
    assert err.index(reason) > err.index("verdicts:")
