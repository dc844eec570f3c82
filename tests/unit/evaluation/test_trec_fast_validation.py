"""The TREC fast path accepts a run only when the exact line reader would read the same fields (issue 37).

Since issue 37 the columns deltap only validates (``Q0``, rank, tag) are read as raw bytes instead of
dictionary-encoded strings; these files check that every way a field can differ from ``str.split()``'s still sends
the file to the exact reader, whose error then names the line, and that clean files still take the fast path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.errors import FormatError
from deltap.evaluation import evaluate
from deltap.evaluation.trec_fast import _single_tokens, read_qrels_fast, read_run_arrays
from deltap.qrels import read_trec_run

QRELS = {"q1": {"d1": 1, "d2": 2}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # pyarrow ends a line at a lone \r; the exact reader splits lines on \n only and sees 12 fields
        pytest.param(b"q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.4 t\n", "expected 6 columns", id="lone-carriage-return"),
        pytest.param(b"q1 Q0 d1 1 0.5 t\x0bx\n", "expected 6 columns", id="vertical-tab-in-tag"),
        pytest.param(b"q1 Q0\x1fx d1 1 0.5 t\n", "expected 6 columns", id="unit-separator-in-iter"),
        pytest.param(b"q1 Q0 d1 1\x0cx 0.5 t\n", "expected 6 columns", id="form-feed-in-rank"),
        pytest.param("q1 Q0 d1 1 0.5 t\u2003x\n".encode(), "expected 6 columns", id="em-space-in-tag"),
        pytest.param("q1 Q0\u00a0x d1 1 0.5 t\n".encode(), "expected 6 columns", id="no-break-space-in-iter"),
        pytest.param(b"q1 Q0 d1 1 0.5 t\xff\n", "not valid UTF-8", id="invalid-utf8-in-tag"),
        pytest.param(b"q1  d1 1 0.5 t\n", "expected 6 columns", id="empty-iter"),
        pytest.param(b"q1 Q0 d1  0.5 t\n", "expected 6 columns", id="empty-rank"),
    ],
)
def test_fields_str_split_would_read_differently_go_to_the_exact_reader(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    assert read_run_arrays(path) is None
    with pytest.raises(FormatError, match=message):
        evaluate(QRELS, path, ["MRR"], n_resamples=0)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"q1 Q0 d1 1 0.5 t\r\nq1 Q0 d2 2 0.7 t\r\n", id="crlf"),
        pytest.param(b"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.7 t", id="no-final-newline"),
        pytest.param("q1 Q0 d1 1 0.5 tâg\nq1 Q0 d2 2 0.7 ñ\n".encode(), id="non-ascii-tag"),
        pytest.param(b"q1 iter-\xc3\xa9 d1 x 0.5 t\nq1 0 d2 rank-two 0.7 t\n", id="any-tokens-in-iter-and-rank"),
    ],
)
def test_clean_runs_take_the_fast_path_with_the_exact_readers_numbers(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    assert read_run_arrays(path) is not None
    fast = evaluate(QRELS, path, ["MRR", "ndcg@2"], n_resamples=0)
    exact = evaluate(QRELS, read_trec_run(path), ["MRR", "ndcg@2"], n_resamples=0)
    assert fast.per_query() == exact.per_query()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"q1 Q0 d1 1 0.5 t\n\rq1 Q0 d2 2 0.4 t\n", id="carriage-return-at-line-start"),
        pytest.param(b"q1 Q0 d1 1 0.5 t \nq1 Q0 d2 2 0.4 t\n", id="trailing-space"),
        pytest.param(b"q1 Q0 d1 1 0.5 t\x0b\nq1 Q0 d2 2 0.4 t\n", id="trailing-vertical-tab"),
    ],
)
def test_runs_only_the_exact_reader_reads_the_same_way_are_left_to_it(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    assert read_run_arrays(path) is None
    assert evaluate(QRELS, path, ["MRR"], n_resamples=0).per_query() == {"q1": {"MRR": 1.0}}


def test_a_stray_carriage_return_in_qrels_goes_to_the_exact_reader(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(b"q1 0 d1 1\rq1 0 d2 1\n")
    assert read_qrels_fast(path) is None
    path.write_bytes(b"q1 0 d1 1\r\nq1 0 d2 1\r\n")
    assert read_qrels_fast(path) == {"q1": {"d1": 1, "d2": 1}}


@pytest.mark.parametrize(
    ("values", "clean"),
    [
        ([b"Q0", b"t"], True),
        ([b"a", b""], False),
        ([b"a\x0bb"], False),
        ([b"a b"], False),
        (["é".encode()], True),
        ([b"\xc3"], False),  # not UTF-8: the exact reader refuses the line
        (["a\u3000b".encode()], False),
    ],
)
def test_single_token_check_on_bytes(values: list[bytes], clean: bool) -> None:
    import pyarrow as pa

    assert _single_tokens(pa.chunked_array([pa.array(values, type=pa.binary())])) is clean


@pytest.mark.parametrize("cells", [1, 7, 1 << 18])
def test_duplicate_suspects_include_every_query_with_a_repeated_key(
    cells: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of any size, uneven depths (padding) and keys whose hash is the padding value: no duplicate is missed."""
    import numpy as np

    from deltap.evaluation import trec_fast

    monkeypatch.setattr(trec_fast, "_CHUNK_CELLS", cells)
    rng = np.random.default_rng(4)
    count = rng.integers(1, 12, 300)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    keys = rng.integers(0, 1 << 62, int(count.sum()))
    planted = rng.choice(np.flatnonzero(count >= 2), 40, replace=False)
    for q in planted:  # the last row of the query repeats its first
        keys[start[q] + count[q] - 1] = keys[start[q]]
    suspects = set(trec_fast._duplicate_suspects(keys, start, count).tolist())
    truth = {q for q in range(len(count)) if len(set(keys[start[q] : start[q] + count[q]].tolist())) < count[q]}
    assert truth == set(planted.tolist()) and truth <= suspects
    assert len(suspects) < 60  # 32-bit hashes: almost no false suspect
