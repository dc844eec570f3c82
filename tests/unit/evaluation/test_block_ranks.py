"""Dict runs ranked block by block (issue 37, session 11): the scores of each block of rows are checked and packed by
``marshal`` and ranked with the block's judged documents, without a run-sized array; Arrow takes go chunk by chunk.

The reference is pytrec_eval (trec_eval 9) and a brute-force rank by trec_eval's rule (score descending, then doc id
descending). Written after the code (the data of ``test_dict_blocks.py`` and the pytrec_eval golden tests came
before it).
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import evaluate
from deltap.evaluation import ranking as rk
from deltap.evaluation.ranking import NOT_RETRIEVED, QrelsColumns, rank_from_dicts

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = {"ndcg@10": "ndcg_cut_10", "P@5": "P_5", "recall@100": "recall_100", "MRR": "recip_rank", "MAP": "map"}


def _case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Queries of every kind: ties at judged scores (three distinct scores), ids whose string order is not their
    numeric order, empty result lists, queries only in the run, only in the qrels, and with unjudged results only."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(300):
        kind = q % 6
        pool = [f"d{i}" for i in rng.sample(range(40), 25)]
        if kind != 1:  # kind 1: a run query without judgements
            qrels[f"q{q}"] = {d: rng.randint(0, 3) for d in pool[:6]}
        if kind == 2:
            continue  # a qrels query the run lacks
        if kind == 3:
            run[f"q{q}"] = {}  # retrieved nothing
        elif kind == 4:
            run[f"q{q}"] = {d: rng.choice([0.5, 1.0, 2.0]) for d in pool[6:]}  # unjudged results only
        else:
            run[f"q{q}"] = {d: rng.choice([0.5, 1.0, 2.0]) for d in rng.sample(pool, rng.randint(1, 25))}
    return qrels, run


def _brute(qrels: dict, run: dict, query_ids: list[str], relevant_only: bool = True) -> list[tuple[int, str, int]]:
    out = []
    for qi, q in enumerate(query_ids):
        row = run.get(q, {})
        for d, g in qrels.get(q, {}).items():
            if relevant_only and g <= 0:
                continue
            if d not in row:
                out.append((qi, d, int(NOT_RETRIEVED)))
                continue
            s = float(row[d])
            greater = sum(float(v) > s for v in row.values())
            tied_above = sum(float(v) == s and e > d for e, v in row.items())
            out.append((qi, d, 1 + greater + tied_above))
    return out


@pytest.mark.parametrize(("block", "rank_blocks"), [(1, 1), (3, 2), (7, 16), (256, 16)])
def test_block_ranks_agree_with_pytrec_eval(block: int, rank_blocks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    monkeypatch.setattr(rk, "_RANK_BLOCKS", rank_blocks)
    qrels, run = _case(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = evaluate(qrels, run, list(MEASURES), n_resamples=0)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "P.5", "recall.100", "recip_rank", "map"})
    ref = theirs.evaluate(run)
    per_query = ours.per_query()
    assert set(per_query) == set(qrels)  # qrels queries missing from the run are scored, run-only ones are not
    for q, values in per_query.items():
        for ours_name, trec_name in MEASURES.items():
            want = ref[q][trec_name] if q in ref else 0.0  # trec_eval -c: a query the run lacks scores 0
            assert abs(values[ours_name] - want) <= 1e-9, (q, ours_name)


@pytest.mark.parametrize("block", [1, 4, 256])
def test_block_ranks_and_doc_ids_follow_the_tie_rule(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    monkeypatch.setattr(rk, "_RANK_BLOCKS", 2)
    qrels, run = _case(10 + block)
    query_ids = list(qrels)
    for columns in (None, QrelsColumns.of(qrels)):
        r = rank_from_dicts(qrels, run, query_ids, columns=columns)
        want = sorted(_brute(qrels, run, query_ids), key=lambda t: (t[0], t[2]))
        assert list(zip(r.query.tolist(), r.doc_ids, r.rank.tolist(), strict=True)) == want
        assert r.n_retrieved.tolist() == [len(run.get(q, {})) for q in query_ids]
        judged = rank_from_dicts(qrels, run, query_ids, columns=columns, judged=True).judged
        assert judged is not None
        every = _brute(qrels, run, query_ids, relevant_only=False)
        assert list(zip(judged.query.tolist(), judged.rank.tolist(), strict=True)) == [(q, k) for q, _, k in every]


def test_a_tie_at_a_judged_score_counts_only_larger_ids() -> None:
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 3.0, "e": 0.5, "f": 1.0}}
    qrels = {"q": {"c": 1, "a": 2, "e": 1, "x": 1}}
    r = rank_from_dicts(qrels, run, ["q"], columns=QrelsColumns.of(qrels))
    assert dict(zip(r.doc_ids, r.rank.tolist(), strict=True)) == {"c": 3, "a": 5, "e": 6, "x": int(NOT_RETRIEVED)}


def test_empty_runs_and_queries_without_targets() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 0}, "c": {}}
    r = rank_from_dicts(qrels, {}, list(qrels), columns=QrelsColumns.of(qrels))
    assert r.rank.tolist() == [int(NOT_RETRIEVED)] and r.n_retrieved.tolist() == [0, 0, 0]
    none = rank_from_dicts({}, {"z": {"d": 1.0}}, [])
    assert none.n_queries == 0 and none.rank.size == 0


@pytest.mark.parametrize(
    "values",
    [[1.0, 1], [True, 1.0], [1.0, None], ["1.5"], [np.float64(1.0)], [1.0, 2**70], [1j], [0.5, np.float32(1)]],
)
def test_exact_floats_refuses_every_other_type(values: list) -> None:
    assert rk._marshalled(values, "g") is None


def test_exact_floats_packs_every_float_bit_for_bit() -> None:
    class Sub(float):
        pass

    values = [0.0, -0.0, 1.0, float("inf"), -float("inf"), 5e-324, 1.7976931348623157e308, 0.1, float("nan")]
    packed = rk._marshalled(values, "g")
    assert packed is not None and packed.tobytes() == np.array(values, dtype="<f8").tobytes()
    assert rk._marshalled([1.0, Sub(2.0)], "g") is None  # a float subclass takes the exact type check
    packed = rk._marshalled([], "g")
    assert packed is not None and packed.size == 0


@pytest.mark.parametrize("block", [1, 2, 256])
def test_the_first_bad_kind_across_blocks_is_reported_as_before(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    qrels = {f"q{i}": {"a": 1} for i in range(6)}
    run = {f"q{i}": {"a": 1.0, "b": 2.0} for i in range(6)}
    run["q1"]["b"] = float("nan")  # a NaN in an early block, a string in a later one: the string is named (the types
    run["q4"]["b"] = "2"  # are checked over the whole run first, as before)
    with pytest.raises(DeltapError, match=r"^run: scores must be numbers; bad entries: \('q4', 'b'\) = '2'$"):
        rank_from_dicts(qrels, run, list(qrels))
    run["q4"]["b"] = 2
    with pytest.raises(DeltapError, match=r"^run: 1 scores are NaN or infinite, .*\('q1', 'b'\) = nan$"):
        rank_from_dicts(qrels, run, list(qrels))
    run["q1"]["b"] = np.float32(3)  # numpy numbers and ints leave the marshal path and are ranked all the same
    r = rank_from_dicts(qrels, run, list(qrels))
    assert r.rank.tolist() == [2] * 6


def test_take_goes_chunk_by_chunk_and_keeps_the_order() -> None:
    pa = pytest.importorskip("pyarrow")
    from deltap.evaluation.trec_fast import _take

    chunks = [pa.array([f"c{c}r{r}" for r in range(n)], type=pa.large_string()) for c, n in enumerate([3, 0, 5, 1])]
    values = pa.chunked_array(chunks, type=pa.large_string())
    flat = values.to_pylist()
    rng = np.random.default_rng(0)
    for rows in (np.array([8, 0, 3, 7, 3, 2]), rng.integers(0, len(flat), 40), np.array([], dtype=np.int64)):
        assert _take(values, rows).to_pylist() == [flat[i] for i in rows.tolist()]
    assert _take(pa.array(["x", "y"]), np.array([1, 0])).to_pylist() == ["y", "x"]


def test_doc_ids_are_built_on_first_read_and_kept() -> None:
    qrels = {"q": {"a": 1, "b": 2, "z": 1}, "r": {"c": 3}}
    r = rank_from_dicts(qrels, {"q": {"a": 1.0, "b": 2.0}, "r": {"c": 0.0}}, list(qrels))
    assert isinstance(r.__dict__["_doc_ids"], rk.DeferredIds)  # the metrics never pay for the tuple
    assert r.doc_ids == ("b", "a", "z", "c") and r.doc_ids is r.doc_ids
    given = rk.Ranking(("q",), np.zeros(1), np.zeros(0), np.zeros(0), np.zeros(0), ("x",))
    assert given.doc_ids == ("x",)


def test_the_ideal_order_is_lexsorts() -> None:
    from deltap.evaluation.metrics.base import by_query_then_grade_desc

    rng = np.random.default_rng(5)
    for n, grades in ((0, (0, 1)), (50, (0, 4)), (5000, (1, 4)), (300, (-2, 3))):
        query = np.sort(rng.integers(0, max(1, n // 3), n))
        grade = rng.integers(*grades, n)
        for g in (grade, grade.astype(np.float64)):  # negative or float grades take lexsort itself
            assert np.array_equal(by_query_then_grade_desc(query, g), np.lexsort((-g, query)))


@pytest.mark.parametrize("block", [1, 2, 256])
def test_rows_that_are_mappings_but_not_dicts_are_read_the_same(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import MappingProxyType

    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    qrels, run = _case(3)
    mixed = {q: (MappingProxyType(row) if i % 3 == 0 else row) for i, (q, row) in enumerate(run.items())}
    query_ids = list(qrels)
    r = rank_from_dicts(qrels, mixed, query_ids)
    assert list(zip(r.query.tolist(), r.doc_ids, r.rank.tolist(), strict=True)) == sorted(
        _brute(qrels, run, query_ids), key=lambda t: (t[0], t[2])
    )
