"""Item 4 of issue 15: no traceback, ever; nothing silently accepted.

Every case drives the real CLI entry point (``deltap.cli.app.main``, what the ``deltap`` script calls) and asserts
exit code 2, exactly one line on stderr naming the file (and line), and no traceback. Two cases also run the
installed entry point in a subprocess, where a traceback would really be printed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_cli

_PROGRESS = re.compile(r"^(cases|trials|plan|progress)\s|^ {7}\S")  # progress, the plan mine() shows first

BAD = b"\xff\xfe bad \xc3\x28"

YAML_OK = """benchmarks:
- id: c1
  question: Which function parses a JSON string?
  benchmark_type: api_understanding
  answers:
  - answer: loads
    fully_qualified_class_name: [d00]
"""


def _corpus(path: Path, n: int = 12, skip: tuple[str, ...] = ()) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            if f"d{i:02d}" not in skip:
                fh.write(json.dumps({"_id": f"d{i:02d}", "text": f"document number {i} about json"}) + "\n")
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], *args: object, expect: str | list[str]) -> str:
    code, _, err = run_cli(capsys, *args)
    # progress bars of `deltap mine` may come first; the error is the last line and the only one
    lines = [line for line in err.splitlines() if line.strip() and not _PROGRESS.match(line)]
    assert "Traceback" not in err, err
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for e in [expect] if isinstance(expect, str) else expect:
        assert e in lines[0], lines[0]
    return lines[0]


def _mine_args(tmp_path: Path, cases: Path, corpus: Path, out: Path | None = None) -> list[object]:
    return [
        "mine",
        cases,
        "--corpus",
        corpus,
        "--out",
        out or tmp_path / "run",
        "--solver",
        "simulated",
        "--retriever",
        "none",
        "--budget",
        "8",
        "--placebo",
        "1",
        "--no-coalitions",
    ]


# -- usage errors ----------------------------------------------------------------------------------------------------
def test_unknown_option(capsys: pytest.CaptureFixture[str]) -> None:
    _one_line_error(capsys, "mine", "--bogus", expect=["--bogus", "deltap mine --help"])


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    _one_line_error(capsys, "frob", expect=["frob", "deltap --help"])


def test_missing_argument_and_bad_value(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _one_line_error(capsys, "mine", expect="CASES")
    _one_line_error(
        capsys,
        "mine",
        tmp_path / "x.yaml",
        "--corpus",
        tmp_path,
        "--out",
        tmp_path,
        "--budget",
        "many",
        expect="--budget",
    )


@pytest.mark.parametrize("argv", [["mine", "--bogus"], ["frob"]], ids=["bogus-option", "unknown-command"])
def test_usage_errors_through_the_real_entry_point(argv: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.run([sys.executable, "-m", "deltap", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


# -- bytes that are not UTF-8, in every reader --------------------------------------------------------------------
def test_non_utf8_corpus(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "corpus.jsonl"
    bad.write_bytes(b'{"_id": "a", "text": "ok"}\n{"_id": "b", "text": "' + BAD + b'"}\n')
    _one_line_error(capsys, "corpus", "info", bad, expect=[f"{bad}:2:", "UTF-8"])


@pytest.fixture()
def run_ok(tmp_path: Path) -> Path:
    p = tmp_path / "ok.run"
    p.write_text("q1 Q0 d00 1 2.0 t\nq1 Q0 d01 2 1.0 t\n", encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("name", "content", "line"),
    [
        pytest.param("q.trec", b"q1 0 d00 1\nq1 0 d\xff 1\n", 2, id="trec"),
        pytest.param("q.tsv", b"query-id\tcorpus-id\tscore\nq1\td\xff01\t1\n", 2, id="beir-tsv"),
        pytest.param("q.jsonl", b'{"query_id": "q1", "relevant_docs": {"d\xff": 1}}\n', 1, id="qrels-jsonl"),
    ],
)
def test_non_utf8_qrels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, run_ok: Path, name: str, content: bytes, line: int
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    _one_line_error(capsys, "evaluate", "--qrels", bad, "--run", run_ok, expect=[f"{bad}:{line}:", "UTF-8"])


def test_non_utf8_beir_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path, run_ok: Path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    _corpus(folder / "corpus.jsonl")
    (folder / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "\xff"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td00\t1\n", encoding="utf-8")
    _one_line_error(
        capsys, "evaluate", "--qrels", folder, "--run", run_ok, expect=[f"{folder / 'queries.jsonl'}:1:", "UTF-8"]
    )


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("r.trec", b"q1 Q0 d00 1 2.0 t\nq1 Q0 d\xff 2 1.0 t\n", id="trec-run"),
        pytest.param("r.json", b'{"q1": {"d\xff": 1.0}}', id="json-run"),
    ],
)
def test_non_utf8_run(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: bytes) -> None:
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 d00 1\n", encoding="utf-8")
    bad = tmp_path / name
    bad.write_bytes(content)
    _one_line_error(capsys, "evaluate", "--qrels", qrels, "--run", bad, expect=[str(bad), "UTF-8"])


def test_non_utf8_benchmark_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bench.yaml"
    bad.write_bytes(YAML_OK.encode().replace(b"parses", b"pars\xe9s"))
    _one_line_error(capsys, *_mine_args(tmp_path, bad, _corpus(tmp_path / "c.jsonl")), expect=[f"{bad}:3:", "UTF-8"])


def test_non_utf8_suite_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "suite.yaml"
    bad.write_bytes(b"index:\n  store: x\nin_scope:\n- query: caf\xe9\n")
    _one_line_error(capsys, "check", bad, expect=[f"{bad}:4:", "UTF-8"])


# -- numbers, sqlite, disks, resumes ----------------------------------------------------------------------------------
def test_huge_trec_grade(capsys: pytest.CaptureFixture[str], tmp_path: Path, run_ok: Path) -> None:
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 d00 1\nq1 0 d01 99999999999999999999999\n", encoding="utf-8")
    _one_line_error(capsys, "evaluate", "--qrels", qrels, "--run", run_ok, expect=[f"{qrels}:2:", "grade"])


def test_corrupt_trial_log(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK, encoding="utf-8")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "trials.sqlite").write_bytes(b"SQLite format 3\x00" + os.urandom(3000))
    _one_line_error(
        capsys,
        *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")),
        expect=str(tmp_path / "run" / "trials.sqlite"),
    )


def test_damaged_trial_log_page(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK, encoding="utf-8")
    corpus = _corpus(tmp_path / "c.jsonl")
    code, _, err = run_cli(capsys, *_mine_args(tmp_path, cases, corpus))
    assert code == 0, err
    db = tmp_path / "run" / "trials.sqlite"
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(page, len(data), page):  # every page after the header page: garbage
        data[start : start + 64] = os.urandom(64)
    db.write_bytes(bytes(data))
    _one_line_error(capsys, *_mine_args(tmp_path, cases, corpus), expect=str(db))


def test_full_disk_while_writing_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK, encoding="utf-8")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    _one_line_error(
        capsys,
        *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")),
        expect=["retrieval_dataset.yaml", "No space left"],
    )
    monkeypatch.setattr(os, "fsync", real_fsync)
    leftovers = [p.name for p in (tmp_path / "run").rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert not (tmp_path / "run" / "retrieval_dataset.yaml").exists()


class _FullDisk:
    """An SQLite connection on a disk that fills up: every new trial fails as SQLite reports it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.lstrip().startswith("INSERT INTO trials"):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)

    def __enter__(self) -> _FullDisk:
        self._db.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._db.__exit__(*exc)  # type: ignore[arg-type]


def test_full_disk_in_the_trial_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK, encoding="utf-8")
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: _FullDisk(connect(*a, **kw)))
    _one_line_error(
        capsys,
        *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")),
        expect=["trials.sqlite", "full", "free some space"],
    )


def test_resume_with_a_corpus_that_lost_a_pooled_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK, encoding="utf-8")
    code, _, err = run_cli(capsys, *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")))
    assert code == 0, err
    with sqlite3.connect(tmp_path / "run" / "trials.sqlite") as db:
        (pool,) = db.execute("SELECT pool_json FROM pools").fetchone()
    placebo = next(c["doc_id"] for c in json.loads(pool)["candidates"] if c["sources"] == ["placebo"])
    smaller = _corpus(tmp_path / "c2.jsonl", skip=(placebo,))
    _one_line_error(capsys, *_mine_args(tmp_path, cases, smaller), expect=[placebo, "missing from the corpus", "c1"])


# -- silently accepted before ---------------------------------------------------------------------------------------
def test_duplicate_key_in_run_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    qrels = tmp_path / "q.trec"
    qrels.write_text("q1 0 d00 1\n", encoding="utf-8")
    run = tmp_path / "r.json"
    run.write_text('{"q1": {"d00": 1.0, "d01": 0.5, "d00": 0.1}}', encoding="utf-8")
    _one_line_error(capsys, "evaluate", "--qrels", qrels, "--run", run, expect=[str(run), "duplicate key 'd00'"])


def test_duplicate_doc_in_qrels_jsonl(capsys: pytest.CaptureFixture[str], tmp_path: Path, run_ok: Path) -> None:
    qrels = tmp_path / "q.jsonl"
    qrels.write_text(
        '{"query_id": "q1", "relevant_docs": {"d00": 1}}\n{"query_id": "q2", "relevant_docs": {"d00": 1, "d00": 0}}\n',
        encoding="utf-8",
    )
    _one_line_error(
        capsys, "evaluate", "--qrels", qrels, "--run", run_ok, expect=[f"{qrels}:2:", "duplicate key 'd00'"]
    )


@pytest.mark.parametrize("name", ["q.trec", "q.tsv", "q.jsonl"])
def test_empty_qrels(capsys: pytest.CaptureFixture[str], tmp_path: Path, run_ok: Path, name: str) -> None:
    qrels = tmp_path / name
    qrels.write_text("query-id\tcorpus-id\tscore\n" if name.endswith(".tsv") else "\n", encoding="utf-8")
    _one_line_error(capsys, "evaluate", "--qrels", qrels, "--run", run_ok, expect=[str(qrels), "no judgements"])


@pytest.mark.parametrize("value", ["null", "yes", "~", "True"])
def test_answer_that_yaml_reads_as_null_or_boolean(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK.replace("answer: loads", f"answer: {value}"), encoding="utf-8")
    _one_line_error(
        capsys, *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")), expect=[f"{cases}:2:", "answer", "quote"]
    )


def test_case_id_with_whitespace_is_refused_before_mining(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "bench.yaml"
    cases.write_text(YAML_OK.replace("id: c1", "id: c 1"), encoding="utf-8")
    _one_line_error(capsys, *_mine_args(tmp_path, cases, _corpus(tmp_path / "c.jsonl")), expect=["'c 1'", "whitespace"])
    assert not (tmp_path / "run" / "trials.sqlite").exists()


def test_qrels_doc_ids_absent_from_the_corpus(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    qrels = tmp_path / "q.jsonl"
    qrels.write_text('{"query_id": "q1", "query": "json", "relevant_docs": {"d00": 1, "nope": 1}}\n', encoding="utf-8")
    corpus = _corpus(tmp_path / "c.jsonl")
    _one_line_error(
        capsys, "evaluate", "--qrels", qrels, "--corpus", corpus, "--retriever", "bm25", expect=["nope", str(corpus)]
    )


# -- writers ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("writer", ["trec", "run"])
def test_trec_writers_refuse_ids_their_reader_would_split(tmp_path: Path, writer: str) -> None:
    from deltap.errors import DeltapError
    from deltap.qrels import write_trec_qrels, write_trec_run

    target = tmp_path / "out.trec"
    with pytest.raises(DeltapError, match="'my doc'"):
        if writer == "trec":
            write_trec_qrels({"q1": {"my doc": 1}}, target)
        else:
            write_trec_run({"q1": {"my doc": 1.0}}, target)
    assert list(tmp_path.iterdir()) == []


def test_beir_writer_refuses_tabs_but_keeps_inner_spaces(tmp_path: Path) -> None:
    from deltap.errors import DeltapError
    from deltap.qrels import read_beir_qrels, write_beir_qrels

    write_beir_qrels({"q 1": {"doc a": 2}}, tmp_path / "ok.tsv")
    assert read_beir_qrels(tmp_path / "ok.tsv") == {"q 1": {"doc a": 2}}
    with pytest.raises(DeltapError, match="BEIR TSV"):
        write_beir_qrels({"q1": {"doc\ta": 2}}, tmp_path / "bad.tsv")


def test_a_failed_write_keeps_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from deltap.errors import DeltapError
    from deltap.qrels import read_trec_qrels, write_trec_qrels

    target = tmp_path / "qrels.trec"
    write_trec_qrels({"q1": {"d1": 1}}, target)
    mode = target.stat().st_mode & 0o777

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DeltapError, match=r"qrels.trec: cannot write: No space left on device"):
        write_trec_qrels({"q1": {"d1": 1, "d2": 2}}, target)
    assert read_trec_qrels(target) == {"q1": {"d1": 1}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.trec"]
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # the permissions of a plain write, not a private temporary file's 0600


def test_report_on_a_run_directory_with_bad_bytes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "retrieval_dataset.yaml").write_bytes(b"metadata: {}\npairs:\n- id: c\xe91\n  candidates: []\n")
    _one_line_error(capsys, "report", run, expect=[f"{run / 'retrieval_dataset.yaml'}:3:", "UTF-8"])
