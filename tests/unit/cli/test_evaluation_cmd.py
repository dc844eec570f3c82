"""``deltap evaluate`` / ``deltap compare`` end to end on small files (BEIR TSV, TREC, JSONL with coalitions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    qrels = _write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq2\td3\t1\n")
    run_a = _write(tmp_path / "a.trec", "q1 Q0 d1 1 3.0 a\nq1 Q0 d9 2 2.0 a\nq2 Q0 d8 1 1.0 a\nq2 Q0 d3 2 0.5 a\n")
    run_b = _write(tmp_path / "b.trec", "q1 Q0 d9 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d3 1 1.0 b\n")
    return {"qrels": qrels, "a": run_a, "b": run_b}


def test_evaluate_one_run_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        str(files["qrels"]),
        "--run",
        str(files["a"]),
        "-m",
        "MRR,P@1,recall@2",
        "-f",
        "json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["per_query"]["q1"] == {"MRR": 1.0, "P@1": 1.0, "recall@2": 0.5}
    assert data["per_query"]["q2"]["MRR"] == 0.5
    assert data["means"]["MRR"] == 0.75


def test_evaluate_writes_per_query_tsv(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_tsv = tmp_path / "pq.tsv"
    code, out, _ = run_cli(
        capsys,
        "evaluate",
        "--qrels",
        str(files["qrels"]),
        "--run",
        str(files["a"]),
        "-m",
        "MRR",
        "--per-query",
        str(out_tsv),
    )
    assert code == 0 and "MRR" in out
    assert out_tsv.read_text().splitlines() == ["query_id\tMRR", "q1\t1.0", "q2\t0.5"]


def test_compare_two_runs_markdown(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "compare",
        "--qrels",
        str(files["qrels"]),
        "--run",
        f"A={files['a']}",
        "--run",
        f"B={files['b']}",
        "-m",
        "MRR,ndcg@2",
        "-f",
        "markdown",
        "--permutations",
        "200",
    )
    assert code == 0
    assert "| A (baseline) |" in out and "| B | MRR | +0.0000 |" in out
    assert "1/0/1" in out  # B: q1 worse (1/2 vs 1), q2 better (1 vs 1/2)


@pytest.mark.parametrize(
    ("qrels_text", "run_text", "message"),
    [
        pytest.param(
            "q1\td1\t1.5\n", "q1 Q0 d1 1 1.0 x\n", "relevance grade must be an integer", id="fractional-grade"
        ),
        pytest.param("q1\td1\t-1\n", "q1 Q0 d1 1 1.0 x\n", "relevance grade must be an integer", id="negative-grade"),
        pytest.param("q1\td1\t1\n", "q1 Q0 d1 1 nan x\n", "score must be finite", id="nan-score"),
        pytest.param("q1\td1\t1\n", "q1 Q0 d1 1 1.0 x\nq1 Q0 d1 2 0.5 x\n", "duplicate pair", id="duplicate-pair"),
        pytest.param("1\td1\t1\n", "q1 Q0 d1 1 1.0 x\n", "no query id of r matches the qrels", id="ranx-27-trap"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qrels_text: str, run_text: str, message: str
) -> None:
    qrels = _write(tmp_path / "q.tsv", "query-id\tcorpus-id\tscore\n" + qrels_text)
    run = _write(tmp_path / "r.trec", run_text)
    code, _, err = run_cli(capsys, "evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "P@1")
    assert code == 2
    assert message in err


def test_unknown_metric_exits_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "evaluate", "--qrels", str(files["qrels"]), "--run", str(files["a"]), "-m", "ndgc@10"
    )
    assert code == 2 and "Did you mean" in err


def test_jsonl_qrels_with_coalitions_feed_set_recall(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = _write(
        tmp_path / "qrels.jsonl",
        json.dumps(
            {"query_id": "q1", "query": "x", "relevant_docs": {"d1": 1, "d2": 1, "d3": 1}, "coalition": ["d1", "d2"]}
        )
        + "\n",
    )
    run = _write(tmp_path / "r.trec", "q1 Q0 d1 1 3.0 r\nq1 Q0 d3 2 2.0 r\nq1 Q0 d2 3 1.0 r\n")
    code, out, _ = run_cli(
        capsys, "evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "set_recall@2,recall@2", "-f", "json"
    )
    assert code == 0
    row = json.loads(out)["per_query"]["q1"]
    assert row == {"set_recall@2": 0.5, "recall@2": pytest.approx(2 / 3)}


def test_one_shot_builds_runs_with_retrievers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("bm25s")
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        ("d1", "wing flutter at supersonic speed"),
        ("d2", "heat transfer in slabs"),
        ("d3", "boundary layer on a cone"),
    ]
    _write(folder / "corpus.jsonl", "".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in docs))
    _write(
        folder / "queries.jsonl",
        json.dumps({"_id": "q1", "text": "supersonic wing flutter"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "slab heat transfer"})
        + "\n",
    )
    _write(folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    code, out, err = run_cli(
        capsys,
        "compare",
        "--qrels",
        str(folder),
        "--retriever",
        "bm25,random",
        "-m",
        "MRR",
        "-f",
        "json",
        "--depth",
        "3",
        "--permutations",
        "100",
        "--save-runs",
        str(tmp_path / "runs"),
        "--failures",
        "1",
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["evaluation"]["systems"]["bm25"]["means"]["MRR"] == 1.0
    assert set(data["failures"]["counts"]) == {"bm25", "random"}
    assert (tmp_path / "runs" / "bm25.trec").is_file()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 3\n", id="trec"),
        pytest.param("q1\t0\td1\t2\n\nq2  0  d9  1\n", id="trec-mixed-whitespace"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td3\t1\n", id="beir-header"),
        pytest.param("q1 0 d1 1.5\n", id="fractional"),
        pytest.param("q1 0 d1 -1\n", id="negative"),
        pytest.param("q1 0 d1 1\nq1 0 d1 2\n", id="duplicate"),
        pytest.param("q1 0 d1\n", id="three-columns"),
        pytest.param("q1 0 d1 1 x\n", id="five-columns"),
        pytest.param("q1 0 d1 1\nq2 0 d2 1\nq1 0 d3 2\n", id="query-seen-again"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\t d1\t2\n", id="beir-padded-field"),
        pytest.param("query-id\tcorpus-id\tscore\nq1\tdoc one\t2\n", id="beir-space-inside-id"),
        pytest.param("q1 0 d1\u00a0x 1\n", id="nbsp-inside-trec-id"),
        pytest.param(
            "long-query-identifier-1 0 long-document-identifier-1 1\nlong-query-identifier-1 0 long-document-identifier-2 0\n",
            id="long-ids",
        ),
    ],
)
def test_fast_qrels_reader_equals_exact_reader(tmp_path: Path, text: str, request: pytest.FixtureRequest) -> None:
    """Clean files take the fast path with the exact reader's result; anything else falls back to the exact reader."""
    from deltap.errors import FormatError
    from deltap.evaluation.scores import load_qrels_like
    from deltap.evaluation.trec_fast import read_qrels_fast
    from deltap.judgements import load_qrels

    path = _write(tmp_path / "qrels.txt", text)
    fast = read_qrels_fast(path)
    if request.node.callspec.id in ("trec", "beir-header", "beir-space-inside-id", "long-ids"):
        assert fast is not None
    try:
        expected = load_qrels(path)
    except FormatError as exc:
        assert fast is None
        with pytest.raises(FormatError, match=str(exc).split(": ", 1)[1][:30].replace("(", r"\(").replace(")", r"\)")):
            load_qrels_like(path)
    else:
        assert fast is None or fast == expected
        assert load_qrels_like(path) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", "score must be finite", id="nan"),
        pytest.param("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "duplicate pair", id="duplicate"),
        pytest.param("q1 Q0 d1 1 0.5\n", "expected 6 columns", id="five-columns"),
        pytest.param("q1 Q0 d1 1 abc t\n", "score must be a number", id="text-score"),
        pytest.param("q1 Q0  1 0.5 t\n", "expected 6 columns", id="empty-field"),
        pytest.param("q1\tQ0\td 1\t1\t0.5\tt\n", "expected 6 columns", id="space-inside-a-tab-field"),
    ],
)
def test_unclean_runs_leave_the_fast_path_and_get_the_exact_readers_errors(
    tmp_path: Path, text: str, message: str
) -> None:
    from deltap.errors import FormatError
    from deltap.evaluation import evaluate
    from deltap.evaluation.trec_fast import read_run_arrays

    path = _write(tmp_path / "run.trec", text)
    assert read_run_arrays(path) is None
    with pytest.raises(FormatError, match=message):
        evaluate({"q1": {"d1": 1}}, path, ["MRR"], n_resamples=0)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("q1  Q0  d1  1  0.5  t\nq1 Q0 d2 2 0.4 t\n", id="double-spaces"),
        pytest.param("\ufeffq1 Q0 d1 1 0.5 t\n", id="byte-order-mark"),
        pytest.param("q1\tQ0\td1\t1\t0.5\tt\nq1\tQ0\td2\t2\t0.7\tt\n", id="tabs"),
        pytest.param("q1 Q0 d1 1 0.5 t\r\nq1 Q0 d2 2 0.7 t\r\n", id="crlf"),
        pytest.param("q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.7 t\n", id="blank-line"),
    ],
)
def test_fast_and_exact_run_readers_give_the_same_numbers(tmp_path: Path, text: str) -> None:
    from deltap.evaluation import evaluate
    from deltap.qrels import read_trec_run

    path = _write(tmp_path / "run.trec", text)
    exact = read_trec_run(path)
    qrels = {q: {"d1": 1, "d2": 2} for q in exact}  # the exact reader keeps a byte-order mark in the first query id
    assert (
        evaluate(qrels, path, ["MRR", "ndcg@2"], n_resamples=0).per_query()
        == evaluate(qrels, exact, ["MRR", "ndcg@2"], n_resamples=0).per_query()
    )
