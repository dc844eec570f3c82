"""The rank computation and the query-alignment rules of ``deltap.evaluation.ranking``, against loops.

Every metric reads a run only through :class:`~deltap.evaluation.ranking.Ranking`, so its arrays are checked entry by
entry against trec_eval's rule written out (``rank = 1 + #{s' > s} + #{s' = s and d' > d}``), on both of
``_count_above``'s paths (the padded matrix and the gathered segments) and with chunks small enough to split the
targets; and the messages of every alignment rule and input error are checked whole (issue 19, mutation testing).
"""

from __future__ import annotations

import os
import random
import warnings
from types import MappingProxyType

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import evaluate
from deltap.evaluation import ranking as rk
from deltap.evaluation.ranking import (
    NOT_RETRIEVED,
    EvaluationWarning,
    align_queries,
    rank_from_dicts,
    validate_qrels,
)


def _rank_ref(row: dict[str, float], doc: str) -> int:
    if doc not in row:
        return int(NOT_RETRIEVED)
    s = row[doc]
    return 1 + sum(1 for v in row.values() if v > s) + sum(1 for d, v in row.items() if v == s and d > doc)


def _ranking_ref(qrels: dict, run: dict, query_ids: list[str]) -> list[tuple[int, int, int, str]]:
    """(query index, rank, grade, doc id) of every grade > 0 pair, sorted by query then rank (stable: qrels order)."""
    rows = []
    for qi, q in enumerate(query_ids):
        for d, g in qrels.get(q, {}).items():
            if g > 0:
                rows.append((qi, _rank_ref(run.get(q, {}), d), g, d))
    return sorted(rows, key=lambda r: (r[0], r[1]))


def _random_case(rng: random.Random, n_queries: int, depth: tuple[int, int]) -> tuple[dict, dict]:
    ids = [f"d{i}" for i in range(40)] + ["9", "10", "B", "b", "é"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        docs = rng.sample(ids, rng.randint(*depth))
        if rng.random() < 0.9:
            run[qid] = {d: rng.choice([0.0, 0.5, 1.0, -2.0, rng.random()]) for d in docs}
        qrels[qid] = {d: rng.randint(0, 3) for d in rng.sample(ids, rng.randint(1, 8))}
    return qrels, run


def _check_ranking(qrels: dict, run: dict, query_ids: list[str]) -> None:
    r = rank_from_dicts(qrels, run, query_ids)
    ref = _ranking_ref(qrels, run, query_ids)
    assert r.query_ids == tuple(query_ids) and r.n_queries == len(query_ids)
    got = list(zip(r.query.tolist(), r.rank.tolist(), r.grade.tolist(), r.doc_ids, strict=True))
    assert got == ref
    assert r.query.dtype == np.int64 and r.rank.dtype == np.int64 and r.grade.dtype == np.int64
    assert r.n_retrieved.tolist() == [len(run.get(q, {})) for q in query_ids]
    for rel in (1, 2, 3):
        want = [sum(1 for g in qrels.get(q, {}).values() if g >= rel) for q in query_ids]
        assert r.num_rel(rel).tolist() == want
    assert r.num_rel(2) is r.num_rel(2)  # cached per level
    assert r.coalitions is None


@pytest.mark.parametrize("seed", range(4))
def test_ranks_against_the_trec_eval_rule_on_the_padded_path(seed: int) -> None:
    qrels, run = _random_case(random.Random(seed), 12, (0, 30))
    _check_ranking(qrels, run, list(qrels))


def test_ranks_on_the_gathered_path_and_in_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    qrels, run = _random_case(rng, 300, (1, 3))
    long_row = {f"x{i}": float(rng.randint(0, 50)) for i in range(3000)}
    run["long"] = long_row
    qrels["long"] = {f"x{i}": rng.randint(0, 3) for i in rng.sample(range(3000), 30)} | {"absent": 2}
    _check_ranking(qrels, run, list(qrels))  # 301 queries × 3000 > 4 × total + 4096: segments are gathered
    for cells in (1, 5, 3001, 6100):  # chunks of one target, a few, and boundaries around the long segment
        monkeypatch.setattr(rk, "_CHUNK_CELLS", cells)
        _check_ranking(qrels, run, list(qrels))
    monkeypatch.setattr(rk, "_CHUNK_CELLS", 7)
    qrels2, run2 = _random_case(random.Random(8), 20, (5, 25))  # the padded path in chunks of one row
    _check_ranking(qrels2, run2, list(qrels2))


def _count_ref(
    scores: np.ndarray, offsets: np.ndarray, seg: np.ndarray, val: np.ndarray
) -> tuple[list[int], list[int]]:
    g, e = [], []
    for s, v in zip(seg.tolist(), val.tolist(), strict=True):
        row = scores[offsets[s] : offsets[s + 1]].tolist()
        g.append(sum(1 for x in row if x > v))
        e.append(sum(1 for x in row if x == v))
    return g, e


@pytest.mark.parametrize("uneven", [False, True])
def test_count_above_against_loops(uneven: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    lens = np.array([3, 0, 5, 5, 1] * 4 + ([2000] if uneven else [5]))
    offsets = np.concatenate([[0], np.cumsum(lens)])
    scores = rng.integers(0, 4, offsets[-1]).astype(float)
    seg = np.repeat(np.flatnonzero(lens), 3)
    val = rng.integers(-1, 5, seg.size).astype(float)
    assert (len(lens) * lens.max() > 4 * offsets[-1] + 4096) == uneven
    for cells in (4_000_000, 1, 4):
        monkeypatch.setattr(rk, "_CHUNK_CELLS", cells)
        greater, equal = rk._count_above(scores, offsets, seg, val)
        assert (greater.tolist(), equal.tolist()) == _count_ref(scores, offsets, seg, val)
        assert greater.dtype == np.int64 and equal.dtype == np.int64
    equal_depth = np.array([0, 3, 6, 9])  # every query 3 deep: the reshape shortcut
    greater, equal = rk._count_above(
        np.array([3.0, 1, 1, 2, 2, 2, 0, 5, 5]), equal_depth, np.array([0, 1, 2, 2]), np.array([1.0, 2, 5, 0])
    )
    assert (greater.tolist(), equal.tolist()) == ([1, 0, 0, 2], [2, 3, 2, 1])
    none = rk._count_above(np.array([]), np.array([0, 0, 0]), np.array([0, 1]), np.array([1.0, 2.0]))
    assert [a.tolist() for a in none] == [[0, 0], [0, 0]]  # only empty segments
    empty = rk._count_above(scores, offsets, np.array([], dtype=np.int64), np.array([]))
    assert [a.tolist() for a in empty] == [[], []]


def test_ties_put_larger_doc_ids_first_and_absent_documents_last() -> None:
    qrels = {"q": {"a": 1, "b": 2, "c": 1, "zz": 3, "e": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 2.0, "e": 0.5}}
    r = rank_from_dicts(qrels, run, ["q"])
    assert dict(zip(r.doc_ids, r.rank.tolist(), strict=True)) == {
        "c": 2,
        "b": 3,
        "a": 4,
        "e": 5,
        "zz": int(NOT_RETRIEVED),
    }
    assert r.doc_ids == ("c", "b", "a", "e", "zz") and r.grade.tolist() == [1, 2, 1, 1, 3]
    assert NOT_RETRIEVED == np.iinfo(np.int64).max
    nothing = rank_from_dicts({"q": {"a": 1}}, {}, ["q"])  # a query the run lacks retrieved nothing
    assert nothing.rank.tolist() == [int(NOT_RETRIEVED)] and nothing.n_retrieved.tolist() == [0]


def test_coalition_member_ranks() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"x": 1}, "q3": {"y": 1}}
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 2.0}, "q2": {"x": 1.0}}
    coalitions = {"q1": [{"c", "b"}, set(), ["b", "b", "zz"]], "q3": [{"y"}], "other": [{"a"}]}
    r = rank_from_dicts(qrels, run, ["q1", "q2", "q3"], coalitions=coalitions)
    c = r.coalitions
    assert c is not None
    assert c.query.tolist() == [0, 0, 2]  # the empty coalition is skipped, "other" is not evaluated
    assert c.size.tolist() == [2, 2, 1]  # members deduplicated
    assert c.member_coalition.tolist() == [0, 0, 1, 1, 2]
    assert c.member_rank.tolist() == [
        3,
        2,
        3,
        int(NOT_RETRIEVED),
        int(NOT_RETRIEVED),
    ]  # members in sorted order: b, c | b, zz | y
    assert all(a.dtype == np.int64 for a in (c.query, c.size, c.member_coalition, c.member_rank))
    assert rank_from_dicts(qrels, run, ["q1"], coalitions={}).coalitions is None


def test_run_scores_must_be_finite_numbers() -> None:
    with pytest.raises(DeltapError) as info:
        rank_from_dicts({}, {"q": {"a": 1.0, "b": "high", "c": True, "d": None}}, ["q"], run_name="bm25")
    assert (
        str(info.value)
        == "bm25: scores must be numbers; bad entries: ('q', 'b') = 'high'; ('q', 'c') = True; ('q', 'd') = None"
    )
    run = {"q1": {"a": 1.0, "b": float("nan")}, "q2": {f"d{i}": float("inf") for i in range(11)}}
    with pytest.raises(DeltapError) as info:
        rank_from_dicts({}, run, ["q1", "q2"])
    shown = "; ".join(["('q1', 'b') = nan"] + [f"('q2', 'd{i}') = inf" for i in range(9)])
    assert (
        str(info.value) == f"run: 12 scores are NaN or infinite, so their ranks are undefined: {shown}; ... (12 in all)"
    )
    with pytest.raises(DeltapError) as info:
        rank_from_dicts({}, {"q": {"a": -float("inf")}}, ["q"])
    assert str(info.value) == "run: 1 scores are NaN or infinite, so their ranks are undefined: ('q', 'a') = -inf"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0, True),
        (3, True),
        (np.int64(2), True),
        (2.0, True),
        (np.float32(1.0), True),
        (True, False),
        (1.5, False),
        (float("inf"), False),
        (float("nan"), False),
        ("1", False),
        (None, False),
    ],
)
def test_is_int_grade(value: object, ok: bool) -> None:
    assert rk._is_int_grade(value) is ok


def test_validate_qrels_messages() -> None:
    validate_qrels({"q": {"d": 0}, "r": {}})  # the fast path: plain dicts, int grades >= 0
    validate_qrels({"q": {"d": np.int64(1), "e": 2.0}})  # integral numpy and float grades are integers too
    validate_qrels({"q": MappingProxyType({"d": 1})})  # any mapping
    cases = [
        (
            {1: {"d": 1}, "q": {}, 2: {}},
            "qrels: query ids must be strings, got 1, 2; convert them with str() (int and str ids never match each other)",
        ),
        ({"q": [("d", 1)]}, "qrels: query 'q' maps to list, expected {doc_id: grade}"),
        (
            {"q": {3: 1, "d": -1, "e": 1.5}},
            "qrels: relevance grades must be integers >= 0 (0 = judged not relevant); bad entries: ('q', 3): doc id is not a string; ('q', 'd') = -1; ('q', 'e') = 1.5",
        ),
        (
            {"q": {f"d{i}": -1 for i in range(12)}},
            "qrels: relevance grades must be integers >= 0 (0 = judged not relevant); bad entries: "
            + "; ".join(f"('q', 'd{i}') = -1" for i in range(10))
            + "; ... (12 in all)",
        ),
    ]
    for qrels, message in cases:
        with pytest.raises(DeltapError) as info:
            validate_qrels(qrels, "qrels")  # type: ignore[arg-type]
        assert str(info.value) == message
    with pytest.raises(DeltapError) as info:
        validate_qrels({"q": {"d": True}}, where="gold.tsv")
    assert str(info.value).startswith("gold.tsv: relevance grades must be integers >= 0")
    many = {i: {} for i in range(12)}
    with pytest.raises(DeltapError) as info:
        validate_qrels(many)  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "qrels: query ids must be strings, got 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (12 in all);"
    )


def _align(qrels: dict, run_ids: object, **kw: object) -> tuple[list[str], list[str], list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ids, notes = align_queries(qrels, run_ids, **kw)  # type: ignore[arg-type]
    return ids, notes, record


def test_alignment_defaults_notes_and_warnings() -> None:
    qrels = {"a": {"d": 1}, "b": {"d": 2}, "c": {"d": 0}, "e": {}}
    ids, notes, record = _align(qrels, ["a", "c", "z", "y"])
    assert ids == ["a", "b", "c", "e"]  # defaults: missing and empty queries stay, scored 0
    assert notes == [
        "2 of 4 qrels queries are missing from run and were scored 0 on every metric (trec_eval -c): 'b', 'e'",
        "2 qrels queries have no relevant document (grade >= 1) and were scored 0 on every metric (as trec_eval): 'c', 'e'",
        "2 queries of run have no judgements in the qrels and are not evaluated: 'y', 'z'",
    ]
    assert [str(w.message) for w in record] == notes and all(w.category is EvaluationWarning for w in record)
    ids, notes, _ = _align(qrels, {"a": 1, "c": 1}, on_missing="skip", on_empty="skip", run_name="bm25", min_grade=2)
    assert ids == []  # a: no grade >= 2; b, e missing; c empty
    assert notes == [
        "2 of 4 qrels queries are missing from bm25 and were skipped (not in the means): 'b', 'e'",
        "3 qrels queries have no relevant document (grade >= 2) and were skipped (not in the means): 'a', 'c', 'e'",
    ]
    ids, notes, record = _align({"a": {"d": 1}}, frozenset({"a"}))
    assert (ids, notes, record) == (["a"], [], [])
    assert _align({"a": {"d": 2}, "b": {"d": 1}}, ["a"], on_missing="skip", min_grade=2)[0] == ["a"]
    assert _align({"a": {"d": 2}, "b": {"d": 1}}, ["a", "b"], on_empty="skip", min_grade=2)[0] == ["a"]


def test_alignment_errors() -> None:
    qrels = {"a": {"d": 1}, "b": {"d": 1}, "c": {"d": 0}}
    cases = [
        (dict(run_query_ids=["a", 1, 2.5]), "run: query ids must be strings, got 1, 2.5; convert them with str()"),
        (
            dict(run_query_ids=["x", "y"], run_name="dense"),
            "no query id of dense matches the qrels: qrels has 'a', 'b', 'c', dense has 'x', 'y' (3 vs 2 queries). "
            "Ids must be identical strings (check prefixes such as 'q1' vs '1', and int vs str keys).",
        ),
        (dict(run_query_ids=["a"], on_missing="drop"), "on_missing must be 'zero', 'skip' or 'error', got 'drop'"),
        (dict(run_query_ids=["a"], on_empty="nan"), "on_empty must be 'zero', 'skip' or 'error', got 'nan'"),
        (
            dict(run_query_ids=["a"], on_missing="error"),
            "2 qrels queries are missing from run: 'b', 'c'; pass on_missing='zero' (score them 0) or 'skip' (drop them)",
        ),
        (
            dict(run_query_ids=["a", "b", "c"], on_empty="error"),
            "1 qrels queries have no relevant document: 'c'; pass on_empty='zero' (score them 0, as trec_eval) or 'skip' (drop them)",
        ),
    ]
    for kw, message in cases:
        with pytest.raises(DeltapError) as info:
            align_queries(qrels, **kw)  # type: ignore[arg-type]
        assert str(info.value) == message
    many = {f"q{i:02d}": {"d": 1} for i in range(12)}
    with pytest.raises(DeltapError) as info:
        align_queries(many, [f"r{i:02d}" for i in range(8)])
    assert str(info.value).startswith(  # five of each side, the counts after them
        "no query id of run matches the qrels: qrels has 'q00', 'q01', 'q02', 'q03', 'q04', "
        "run has 'r00', 'r01', 'r02', 'r03', 'r04' (12 vs 8 queries)."
    )
    assert _align({}, ["a"])[0] == [] and _align({"a": {"d": 1}}, [])[0] == ["a"]  # nothing to compare: no error


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ, reason="mutmut's trampolines add stack frames: the warning's location moves"
)
def test_alignment_warnings_point_at_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        evaluate({"a": {"d": 1}, "b": {"d": 1}}, {"a": {"d": 1.0}}, ["P@1"], n_resamples=0)
    assert [w.filename for w in record] == [__file__]


def test_shown_lists_ten_then_counts() -> None:
    assert rk._shown(["a", "b"]) == "'a', 'b'"
    assert rk._shown([str(i) for i in range(10)]) == ", ".join(repr(str(i)) for i in range(10))
    assert rk._shown([str(i) for i in range(11)]) == ", ".join(repr(str(i)) for i in range(10)) + ", ... (11 in all)"
    assert rk._shown(["a", "b", "c"], limit=2) == "'a', 'b', ... (3 in all)"


def test_padded_path_with_empty_queries_and_integer_dtypes() -> None:
    # eight queries, two of them with two results: padding (8 × 2 cells) is used, not a reshape of the 4 scores
    qrels = {f"q{i}": {"a": 1} for i in range(8)}
    run = {"q2": {"a": 1.0, "b": 2.0}, "q5": {"a": 3.0, "c": 1.0}}
    _check_ranking(qrels, run, list(qrels))
    r = rank_from_dicts(qrels, run, list(qrels))
    assert r.num_rel().tolist() == r.num_rel(1).tolist() == [1] * 8  # the default level is 1
    only_zero = rank_from_dicts({"q": {"a": 0}}, run, ["q"])
    assert only_zero.grade.dtype == np.int64 and only_zero.query.dtype == np.int64 and only_zero.rank.dtype == np.int64
    empty = rank_from_dicts({"q": {"a": 1}}, run, ["q"], coalitions={"q": [set()], "z": [{"a"}]})
    assert empty.coalitions is not None  # coalitions were given, none of them usable
    assert all(
        a.dtype == np.int64 and a.size == 0
        for a in (
            empty.coalitions.query,
            empty.coalitions.size,
            empty.coalitions.member_coalition,
            empty.coalitions.member_rank,
        )
    )
    unjudged = rank_from_dicts(qrels, run, ["q2", "elsewhere"])  # a query without judgements has no targets
    assert unjudged.query.tolist() == [0] and unjudged.n_retrieved.tolist() == [2, 0]


def test_bad_entry_lists_stop_at_ten() -> None:
    for n_bad, suffix in ((10, ""), (11, "; ... (11 in all)")):
        with pytest.raises(DeltapError) as info:
            rank_from_dicts({}, {"q": {f"d{i:02d}": float("nan") for i in range(n_bad)}}, ["q"])
        shown = "; ".join(f"('q', 'd{i:02d}') = nan" for i in range(10))
        assert (
            str(info.value) == f"run: {n_bad} scores are NaN or infinite, so their ranks are undefined: {shown}{suffix}"
        )
        with pytest.raises(DeltapError) as info:
            rank_from_dicts({}, {"q": {f"d{i:02d}": "x" for i in range(n_bad)}}, ["q"])
        assert str(info.value) == "run: scores must be numbers; bad entries: " + "; ".join(
            f"('q', 'd{i:02d}') = 'x'" for i in range(10)
        )
        with pytest.raises(DeltapError) as info:
            validate_qrels({"q": MappingProxyType({f"d{i:02d}": -1 for i in range(n_bad)})})
        shown = "; ".join(f"('q', 'd{i:02d}') = -1" for i in range(10))
        assert (
            str(info.value)
            == f"qrels: relevance grades must be integers >= 0 (0 = judged not relevant); bad entries: {shown}{suffix}"
        )


def test_validate_qrels_edges() -> None:
    validate_qrels({"q": {}, "r": {}})  # no judgement at all: nothing to reject
    validate_qrels({"q": MappingProxyType({"d": 0, "e": np.int64(0)})})  # grade 0 is a judgement (not relevant)
    with pytest.raises(DeltapError) as info:
        align_queries({"a": {"d": 1}}, ["a", 1, (2,)])  # ids of types that do not sort together
    assert str(info.value) == "run: query ids must be strings, got (2,), 1; convert them with str()"


def test_numeric_strings_and_booleans_are_not_scores() -> None:
    # np.fromiter turned "1.5" into 1.5 and True into 1.0: such runs were ranked as if they held numbers
    run = {"q": {"a": 1.0, "b": "1.5", "c": True, "d": np.bool_(False), "e": np.float32(0.5), "f": 2}}
    with pytest.raises(DeltapError) as info:
        rank_from_dicts({"q": {"a": 1}}, run, ["q"])
    assert (
        str(info.value)
        == "run: scores must be numbers; bad entries: ('q', 'b') = '1.5'; ('q', 'c') = True; ('q', 'd') = np.False_"
    )
    ok = rank_from_dicts({"q": {"a": 1}}, {"q": {"a": 1.0, "e": np.float32(0.5), "f": 2, "g": np.int64(3)}}, ["q"])
    assert ok.rank.tolist() == [3]


def test_run_ids_given_as_a_list_are_counted_once() -> None:
    ids, notes, _ = _align({"a": {"d": 1}}, ["a", "z", "z", "y"])
    assert ids == ["a"] and notes == [
        "2 queries of run have no judgements in the qrels and are not evaluated: 'y', 'z'"
    ]
    with pytest.raises(DeltapError) as info:
        align_queries({"a": {"d": 1}}, ["x", "x"])
    assert "(1 vs 1 queries)" in str(info.value)
