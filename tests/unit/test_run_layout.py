"""The run directory's owner (``deltap.run_layout.RunDir``), the trial log's read-only reader, and ``--into RUN_DIR``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from deltap.errors import DeltapError
from deltap.run_layout import RunDir


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small mined run directory (simulated solver, BM25 pools so the pools carry ranks)."""
    from deltap.cli.app import main

    tmp = tmp_path_factory.mktemp("rundir")
    corpus = tmp / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"_id": f"pkg.D{i}", "title": "", "text": f"runner agent doc {i}"}) + "\n" for i in range(14)
        )
    )
    bench = tmp / "bench.yaml"
    bench.write_text(
        "benchmarks:\n"
        + "".join(
            f"  - id: q{i}\n    question: Which class runs agent {i}?\n    benchmark_type: api_understanding\n"
            f"    answers:\n      - answer: Runner{i}\n        fully_qualified_class_name: [pkg.D{i}]\n"
            for i in range(2)
        )
    )
    out = tmp / "run"
    main(["mine", str(bench), "--corpus", str(corpus), "--retriever", "bm25", "--k", "3", "--solver", "simulated",
          "--sim-effect", "0.6", "--budget", "16", "--placebo", "3", "--out", str(out)])  # fmt: skip
    return out


def test_every_path_of_a_run_directory(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert {k: v.relative_to(tmp_path).as_posix() for k, v in rd.layout().items()} == {
        "dataset": "retrieval_dataset.yaml", "trial log": "trials.sqlite", "qrels (BEIR)": "qrels/test.tsv",
        "qrels (TREC)": "qrels.trec", "qrels (JSONL)": "qrels.jsonl", "graded qrels": "qrels/graded_gold.tsv",
        "run summary": "run.json",
    }  # fmt: skip
    rel = {
        rd.comparison: "evaluation/compare.json", rd.run_file("bm25"): "evaluation/runs/bm25.trec",
        rd.endtoend.trials: "endtoend/trials.sqlite", rd.endtoend.results: "endtoend/results.json",
        rd.endtoend.manifest: "endtoend/manifest.json", rd.audit.csv: "audit/audit.csv", rd.audit.json: "audit/audit.json",
        rd.export("parquet"): "trials.parquet", rd.report_html: "report.html", rd.qrels_provenance: "qrels/provenance.json",
        rd.graded_qrels("no_gold", "trec"): "qrels/graded_no_gold.trec", rd.graded_qrels("gold", "jsonl"): "qrels/graded_gold.jsonl",
    }  # fmt: skip
    assert {p.relative_to(tmp_path).as_posix(): want for p, want in rel.items()} == {w: w for w in rel.values()}


def test_writes_are_atomic_and_reads_say_what_is_wrong(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    rd.write_json(rd.run_json, {"calls": 3})
    with pytest.raises(TypeError):
        rd.write_json(rd.run_json, {"calls": object()})  # fails while encoding: the old file stays whole
    assert rd.summary() == {"calls": 3}
    assert sorted(p.name for p in rd.root.iterdir()) == ["run.json"]  # no temporary file left behind
    rd.write_text(rd.run_json, "[1, 2]")
    assert rd.read_summary() == (None, "run.json is not a JSON object") and rd.summary() == {}
    rd.write_text(rd.comparison, "{oops")
    data, why = rd.read_comparison()
    assert data is None and why.startswith("evaluation/compare.json is not valid JSON")
    with pytest.raises(DeltapError, match="is not a deltap mine run directory"):
        rd.require_mined()


# The report's reads of trials.sqlite before issue 25, with raw SQL (kept here as the oracle the reader must match).
def _old_outcomes(path: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT outcome, COUNT(*) FROM trials GROUP BY outcome").fetchall()
    finally:
        con.close()
    return {("scored" if isinstance(o, float) else str(o)): int(n) for o, n in rows}


def _old_pool_run(path: Path) -> dict[str, dict[str, float]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        pools = con.execute("SELECT case_id, pool_json FROM pools").fetchall()
    finally:
        con.close()
    run: dict[str, dict[str, float]] = {}
    for case_id, pool_json in pools:
        ranked = {
            str(c["doc_id"]): 1.0 / float(c["rank"])
            for c in json.loads(pool_json).get("candidates", [])
            if "retrieved" in (c.get("sources") or ()) and c.get("rank")
        }
        if ranked:
            run[str(case_id)] = ranked
    return run


def _old_trials(path: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT case_id, kind, trial_index, inclusion, outcome, value, latency, answer, detail, prompt_tokens, "
            "completion_tokens, created FROM trials ORDER BY created, rowid"
        ).fetchall()
    finally:
        con.close()


def test_the_report_reads_through_the_trial_log_reader_what_it_read_with_sql(mined: Path) -> None:
    from deltap.report.run_data import load_run_dir
    from deltap.trials.log import TrialLogReader

    rd = RunDir(mined)
    data = load_run_dir(mined)
    assert data.trial_outcomes == _old_outcomes(rd.trials) and sum(data.trial_outcomes.values()) > 0
    assert data.pool_run == _old_pool_run(rd.trials) and data.pool_run
    old = _old_trials(rd.trials)
    log = data.trial_log
    assert log is not None and log.calls == len(old)
    assert log.solver_seconds == pytest.approx(sum(r[6] or 0.0 for r in old))
    flat = [(c, t.kind, t.index, t.outcome) for c, rows in log.trials.items() for t in rows]
    assert sorted(flat) == sorted((r[0], r[1], r[2], r[4]) for r in old)
    with TrialLogReader(rd.trials) as reader:
        assert [(t.record.case_id, t.record.kind, t.record.trial_index, t.created) for t in reader.trials()] == [
            (r[0], r[1], r[2], r[11]) for r in old
        ]


def test_the_reader_never_writes_and_refuses_what_is_not_a_trial_log(tmp_path: Path, mined: Path) -> None:
    from deltap.trials.log import TrialLogReader

    before = RunDir(mined).trials.read_bytes()
    with TrialLogReader(RunDir(mined).trials) as reader:
        reader.outcome_counts()
        list(reader.pools())
    assert RunDir(mined).trials.read_bytes() == before
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE x (a)").connection.commit()
    with pytest.raises(DeltapError, match="not a deltap trial log"):
        TrialLogReader(other)
    with pytest.raises(DeltapError, match="no trial log"):
        TrialLogReader(tmp_path / "absent.sqlite")


def test_no_sql_outside_the_trial_logs_module() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "deltap"
    own_caches = {"trials/log.py", "retrieval/cache.py", "solvers/caching.py"}  # their own SQLite files
    offenders = [
        p.relative_to(src).as_posix()
        for p in src.rglob("*.py")
        if p.relative_to(src).as_posix() not in own_caches and "SELECT " in p.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_evaluate_into_a_run_directory_reaches_its_report(
    mined: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main
    from deltap.report.markdown import render_markdown
    from deltap.report.run_data import load_run_dir

    rd = RunDir(mined)
    assert load_run_dir(mined).evaluation is None  # nothing evaluated yet: the report has no comparison
    runs = {}
    for name, order in (("first", list(range(14))), ("last", list(range(13, -1, -1)))):
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(f"q{q} Q0 pkg.D{d} {r + 1} {14 - r} {name}\n" for q in range(2) for r, d in enumerate(order))
        )
        runs[name] = path
    main(["evaluate", "--qrels", str(rd.qrels_jsonl), "--run", f"first={runs['first']}", "--into", str(mined)])
    data = load_run_dir(mined)
    assert data.evaluation is not None and list(data.evaluation["systems"]) == ["first"]
    assert set(data.runs) == {"first"}
    main(["compare", "--qrels", str(rd.qrels_jsonl), "--run", f"first={runs['first']}", "--run",
          f"last={runs['last']}", "--into", str(mined)])  # fmt: skip
    assert "deltap report" in capsys.readouterr().err
    data = load_run_dir(mined)
    assert data.evaluation is not None and set(data.evaluation["systems"]) == {"first", "last"}
    markdown = render_markdown(data)
    assert "Retriever comparison not available" not in markdown and "| last |" in markdown.replace("`", "")
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--qrels", str(rd.qrels_jsonl), "--run", str(runs["first"]), "--into", str(tmp_path)])
    assert exc.value.code == 2 and "is not a deltap mine run directory" in capsys.readouterr().err


def test_python_api_writes_into_a_run_directory(mined: Path, tmp_path: Path) -> None:
    import shutil

    import deltap

    run_dir = tmp_path / "copy"
    shutil.copytree(mined, run_dir)
    qrels = deltap.load_qrels(RunDir(run_dir).qrels_jsonl)
    run = {q: {f"pkg.D{d}": float(14 - d) for d in range(14)} for q in qrels}
    result = deltap.evaluate(qrels, run, ["ndcg@10"], run_name="mine")
    path = result.write_into(run_dir, run)
    assert path == RunDir(run_dir).comparison and RunDir(run_dir).run_file("mine").is_file()
    from deltap.report.run_data import load_run_dir

    assert load_run_dir(run_dir).evaluation["systems"]["mine"]["means"]["ndcg@10"] == pytest.approx(  # type: ignore[index]
        result.means["ndcg@10"]
    )
