"""The pieces session 12 (issue 37, speed3) changed on the dict path, each against a brute-force or the old numpy
form: tie cells gathered in chunks, row counts summed as bytes, linear group positions, grades checked and packed by
``marshal``, run rows fetched block by block into a buffer that grows. Written after the code.
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import evaluate
from deltap.evaluation import ranking as rk
from deltap.evaluation.metrics.base import group_position, group_starts
from tests.unit.evaluation._tied_runs import tied_data

METRICS = ["ndcg@10", "P@5", "recall@100", "MRR", "MAP", "judged@10"]


def _data(seed: int, n: int = 120) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    return tied_data(seed, n)


@pytest.mark.parametrize("cells", [1, 7, 1 << 18])
def test_tied_cells_against_brute_force(cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_CHUNK_CELLS", cells)
    rng = np.random.default_rng(5)
    lens = np.array([4, 0, 9, 1, 12, 3])
    offsets = np.concatenate([[0], np.cumsum(lens)])
    scores = rng.integers(0, 3, offsets[-1]).astype(float)
    seg = np.array([0, 2, 2, 4, 5, 3])
    val = np.array([scores[offsets[s]] for s in seg])  # a value present in each segment
    owner, cells_at = rk._tied_cells(scores, offsets, seg, val)
    expected = [
        (t, int(p))
        for t, s in enumerate(seg.tolist())
        for p in range(offsets[s], offsets[s + 1])
        if scores[p] == val[t]
    ]
    assert list(zip(owner.tolist(), cells_at.tolist(), strict=True)) == expected


@pytest.mark.parametrize("depth", [1, 100, 255, 256, 300, 70_000])
def test_row_counter_equals_count_nonzero(depth: int) -> None:
    rng = np.random.default_rng(depth)
    mask = rng.random((5, depth)) < 0.7
    mask[0] = True  # a full row: the largest count the summing type must hold
    counted = rk._row_counter(depth)(mask)
    assert counted.tolist() == np.count_nonzero(mask, axis=1).tolist()


@pytest.mark.parametrize("n", [0, 1, 2, 9, 500])
def test_group_position_and_starts_against_searchsorted(n: int) -> None:
    q = np.sort(np.random.default_rng(n).integers(0, max(1, n // 3), n))
    old = np.arange(1, n + 1) - np.searchsorted(q, q, side="left")
    assert group_position(q).tolist() == old.tolist()
    assert group_starts(q).tolist() == np.unique(q, return_index=True)[1].tolist()


def test_exact_ints_packs_only_32_bit_ints() -> None:
    values = [0, 1, 3, 2**31 - 1, -(2**31), -1]
    packed = rk._marshalled(values, "i")
    assert packed is not None and packed.tolist() == values
    assert rk._marshalled([], "i") is not None
    for bad in (True, False, 2**31, -(2**31) - 1, 10**30, np.int64(1), 1.0, "1", None):
        assert rk._marshalled([1, 2, bad, 3], "i") is None, repr(bad)
        assert rk._marshalled([bad], "i") is None, repr(bad)
    # a float and a one-byte item fill as many bytes as two ints: the codes still refuse them
    assert rk._marshalled([1.0, True], "i") is None and rk._marshalled([1, True, 2.0], "g") is None


def test_int_grades_are_int64() -> None:
    cols = rk.QrelsColumns.of({"q": {"a": 1, "b": 0}, "r": {"c": 3}})
    assert cols is not None and cols.int_grades is not None
    assert cols.int_grades.dtype == np.int64 and cols.int_grades.tolist() == [1, 0, 3]


@pytest.mark.filterwarnings("ignore::deltap.evaluation.ranking.EvaluationWarning")
def test_grades_the_marshal_check_passes_on_keep_the_old_messages_and_values() -> None:
    qrels, run = _data(1)
    base = evaluate(qrels, run, METRICS, n_resamples=0, on_missing="zero").values
    widened = {q: {d: (np.int64(g) if i % 2 else (g + 2**40 if g > 9 else g)) for i, (d, g) in enumerate(r.items())}
               for q, r in qrels.items()}  # fmt: skip
    assert np.array_equal(evaluate(widened, run, METRICS, n_resamples=0).values, base)
    for bad, shown in ((True, "True"), (-1, "-1"), (1.5, "1.5")):
        broken = {q: dict(r) for q, r in qrels.items()}
        broken["q5"][next(iter(broken["q5"]))] = bad
        with pytest.raises(DeltapError, match=rf"relevance grades must be integers >= 0 .*\) = {shown}"):
            evaluate(broken, run, METRICS, n_resamples=0)


@pytest.mark.parametrize("first_buffer", [1, 16, 1 << 16])
@pytest.mark.parametrize("block", [1, 5, 256])
def test_buffer_growth_and_blocks_give_the_same_values(
    first_buffer: int, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels, run = _data(2)
    with pytest.warns(rk.EvaluationWarning):
        base = evaluate(qrels, run, METRICS, n_resamples=0).values
    monkeypatch.setattr(rk, "_FIRST_BUFFER", first_buffer)
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    monkeypatch.setattr(rk, "_RANK_BLOCKS", 3)
    with pytest.warns(rk.EvaluationWarning):
        assert np.array_equal(evaluate(qrels, run, METRICS, n_resamples=0).values, base)


def test_layouts_of_the_same_input_give_identical_values(tmp_path: Path) -> None:
    """The dicts as built, rebuilt in another memory order, as read-only mappings, and as TREC files: one answer."""
    qrels, run = _data(3)
    with pytest.warns(rk.EvaluationWarning):
        base = evaluate(qrels, run, METRICS, n_resamples=0)
    rebuilt_run = {q: dict(reversed(list(r.items()))) for q, r in reversed(list(run.items()))}
    rebuilt_qrels = {q: {d: int(g) for d, g in r.items()} for q, r in qrels.items()}
    proxies = {q: types.MappingProxyType(r) for q, r in run.items()}
    qrels_file, run_file = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, r in qrels.items() for d, g in r.items()))
    run_file.write_text(
        "".join(f"{q} Q0 {d} {i} {s!r} t\n" for q, r in run.items() for i, (d, s) in enumerate(r.items(), start=1))
    )
    for q_in, r_in in ((rebuilt_qrels, rebuilt_run), (qrels, proxies), (qrels_file, run_file)):
        with pytest.warns(rk.EvaluationWarning):
            other = evaluate(q_in, r_in, METRICS, n_resamples=0)
        assert other.query_ids == base.query_ids
        assert np.allclose(other.values, base.values, rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore::deltap.evaluation.ranking.EvaluationWarning")
def test_a_bad_score_in_a_late_block_names_the_whole_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are fetched block by block now; the refusal still lists the run's bad entries from the first query."""
    monkeypatch.setattr(rk, "_ROW_BLOCK", 2)
    qrels, run = _data(4, n=30)
    run = {q: dict(r) for q, r in run.items()}
    run["q1"]["dx"] = "1.5"
    run["q29"]["dy"] = True
    with pytest.raises(DeltapError) as err:
        evaluate(qrels, run, METRICS, n_resamples=0)
    assert str(err.value) == "run: scores must be numbers; bad entries: ('q1', 'dx') = '1.5'; ('q29', 'dy') = True"
