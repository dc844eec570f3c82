"""The compiled accelerator (``deltap.evaluation._accel``, issue 37) changes no answer and no message.

Every case runs :func:`~deltap.evaluation.evaluate` on the accelerated path and on the pure-Python path
(``DELTAP_ACCEL=0``) and asserts the per-query values are the same bytes, or the refusal the same message; the C
functions are counted, so a case meant for the C loops fails if they declined it (and a case meant for the Python
path fails if they claimed it). Then the C functions on their own: what they decline, and that they leave no
reference or buffer behind on any path.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import accel, evaluate
from deltap.evaluation import ranking as rk
from deltap.judgements import SignedGains
from tests.unit.evaluation._tied_runs import tied_data

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
METRICS = ["ndcg@10", "P@5", "recall@100", "MRR", "MAP", "R-prec", "judged@10"]
ACCELERATED, PURE = accel.MODES

pytestmark = pytest.mark.filterwarnings("ignore::deltap.evaluation.ranking.EvaluationWarning")


class Counted:
    """The compiled module with each call's answer recorded: ``handled``/``declined`` per function."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.calls: dict[str, list[int]] = {"pack": [], "lookup": []}

    def pack(self, *args: Any) -> int:
        answer = int(self.module.pack(*args))
        self.calls["pack"].append(answer)
        return answer

    def lookup(self, *args: Any) -> int:
        answer = int(self.module.lookup(*args))
        self.calls["lookup"].append(answer)
        return answer

    def handled(self, name: str) -> int:
        return sum(a >= 0 for a in self.calls[name])

    def declined(self, name: str) -> int:
        return sum(a < 0 for a in self.calls[name])


@pytest.fixture
def c(compiled_accelerator: types.ModuleType | None) -> types.ModuleType:
    if compiled_accelerator is None:
        pytest.skip("the accelerator cannot be built here (no C compiler or no Python.h)")
    return compiled_accelerator


@pytest.fixture
def both(c: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., tuple[Any, Any, Counted]]]:
    """``both(qrels, run, **kw)``: ``(accelerated outcome, pure outcome, the counted C calls)``; an outcome is the
    result or the :class:`DeltapError` message."""

    def outcome(qrels: Any, run: Any, kw: dict[str, Any]) -> Any:
        try:
            return evaluate(qrels, run, kw.pop("metrics", METRICS), n_resamples=0, **kw)
        except DeltapError as exc:
            return str(exc)

    def run_both(qrels: Any, run: Any, **kw: Any) -> tuple[Any, Any, Counted]:
        counted = Counted(c)
        monkeypatch.setattr(accel, "_load", lambda: (counted, "compiled module (counted)"))
        with monkeypatch.context() as m:
            m.delenv(accel.ENV, raising=False)
            assert accel.accelerator_mode() == ACCELERATED
            fast = outcome(qrels, run, dict(kw))
        with monkeypatch.context() as m:
            m.setenv(accel.ENV, "0")
            assert accel.accelerator_mode() == PURE
            calls = len(counted.calls["pack"]) + len(counted.calls["lookup"])
            pure = outcome(qrels, run, dict(kw))
            assert len(counted.calls["pack"]) + len(counted.calls["lookup"]) == calls  # DELTAP_ACCEL=0: no C call
        return fast, pure, counted

    yield run_both


def _same(fast: Any, pure: Any) -> None:
    if isinstance(pure, str):
        assert fast == pure
        return
    assert not isinstance(fast, str), fast
    assert fast.query_ids == pure.query_ids and fast.notes == pure.notes
    assert fast.values.tobytes() == pure.values.tobytes()  # bit for bit, NaN included


def _data(seed: int, n: int = 120) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Ties (few distinct scores, signed zeros among them), empty rows, qrels queries missing from the run, a run
    query without qrels."""
    return tied_data(seed, n, scores=(0.25, 0.5, 1.0, 2.0, -0.0, 0.0))


def _bench(n: int = 600, depth: int = 100) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_metrics
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_metrics.generate(n, depth, 3)


# ------------------------------------------------------------------------------------------------ same answers


@pytest.mark.parametrize("block", [1, 5, 256])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_same_values_on_both_paths(block: int, seed: int, both: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    qrels, run = _data(seed)
    fast, pure, counted = both(qrels, run)
    _same(fast, pure)
    assert counted.handled("pack") and not counted.declined("pack")
    assert counted.handled("lookup") and not counted.declined("lookup")


def test_the_benchmark_layout_on_both_paths(both: Any) -> None:
    qrels, run = _bench()
    fast, pure, counted = both(qrels, run)
    _same(fast, pure)
    assert not counted.declined("pack") and not counted.declined("lookup")


def test_coalitions_and_signed_gains_on_both_paths(both: Any) -> None:
    """``set_recall`` and ``signed_utility`` rank the whole run at once (``_run_scores``): the same loops."""
    qrels, run = _data(4)
    coalitions = {q: [set(list(docs)[:2])] for q, docs in qrels.items()}
    gains = SignedGains(
        {q: {d: (g - 1.5) / 3 for d, g in docs.items()} for q, docs in qrels.items()},
        {q: [(frozenset(list(docs)[:2]), 0.5)] for q, docs in qrels.items()},
    )
    metrics = ["set_recall@5", "signed_utility@5", "ndcg@10"]
    fast, pure, counted = both(qrels, run, metrics=metrics, coalitions=coalitions, gains=gains)
    _same(fast, pure)
    assert counted.handled("pack") and counted.handled("lookup") and not counted.declined("pack")


class FloatSub(float):
    pass


class StrSub(str):
    pass


def _with(run: dict[str, dict[str, Any]], q: str, doc: str, value: Any) -> dict[str, dict[str, Any]]:
    changed = {k: dict(v) for k, v in run.items()}
    changed[q][doc] = value
    return changed


ACCEPTED = {  # unusual values and rows deltap accepts, and whether the C loops see them (and decline them)
    "numpy float64 score": (lambda r: _with(r, "q5", "d1", np.float64(0.75)), True),
    "numpy float32 score": (lambda r: _with(r, "q5", "d1", np.float32(0.75)), True),
    "numpy int score": (lambda r: _with(r, "q5", "d1", np.int64(2)), True),
    "int score": (lambda r: _with(r, "q5", "d1", 2), True),
    "float subclass score": (lambda r: _with(r, "q5", "d1", FloatSub(0.75)), True),
    "read-only mapping rows": (lambda r: {q: types.MappingProxyType(v) for q, v in r.items()}, False),
    "an OrderedDict row": (lambda r: {**r, "q5": OrderedDict(r["q5"])}, False),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_unusual_but_accepted_inputs_give_the_same_values(
    case: str, both: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", 16)  # several blocks: the unusual one declined, the others not
    qrels, run = _data(2)
    change, seen = ACCEPTED[case]
    fast, pure, counted = both(qrels, change(run))
    assert not isinstance(pure, str), pure
    _same(fast, pure)
    assert bool(counted.declined("pack")) == seen  # declined: the block took the Python path
    assert bool(counted.handled("pack")) == (case != "read-only mapping rows")  # the other blocks did not


def test_str_subclass_ids_in_the_qrels_take_the_python_lookup(both: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", 16)
    qrels, run = _data(3)
    q, docs = next(iter(qrels.items()))
    qrels[q] = {StrSub(d): g for d, g in docs.items()}
    fast, pure, counted = both(qrels, run)
    _same(fast, pure)
    assert counted.declined("lookup") and counted.handled("lookup")


REFUSED = {  # value -> the start of the message, naming the first of the two bad entries
    "text score": ("1.5", "scores must be numbers; bad entries: ('q5', 'd1') = '1.5'; ('q90', 'd2') = '1.5'"),
    "bool score": (True, "scores must be numbers; bad entries: ('q5', 'd1') = True; ('q90', 'd2') = True"),
    "None score": (None, "scores must be numbers; bad entries: ('q5', 'd1') = None; ('q90', 'd2') = None"),
    "NaN score": (float("nan"), "2 scores are NaN or infinite, so their ranks are undefined: ('q5', 'd1') = nan; "),
    "infinite score": (
        -float("inf"),
        "2 scores are NaN or infinite, so their ranks are undefined: ('q5', 'd1') = -inf",
    ),
    "numpy NaN": (np.float64("nan"), "2 scores are NaN or infinite, so their ranks are undefined: ('q5', 'd1') = "),
}


@pytest.mark.parametrize("block", [1, 256])
@pytest.mark.parametrize("case", list(REFUSED))
def test_every_refusal_names_the_same_entries(
    case: str, block: int, both: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    qrels, run = _data(2)
    value, expected = REFUSED[case]
    bad = _with(_with(run, "q5", "d1", value), "q90", "d2", value)  # the second in a later block
    for kw in ({}, {"metrics": ["set_recall@5", "ndcg@10"], "coalitions": {"q5": [{"d1", "d2"}]}}):
        fast, pure, _ = both(qrels, bad, **kw)  # the block-by-block pass, then the whole-run one
        assert isinstance(pure, str) and pure.startswith(f"run: {expected}"), pure
        assert "('q90', 'd2')" in pure
        _same(fast, pure)


def test_int_ids_are_refused_with_the_same_message(both: Any) -> None:
    qrels, run = _data(2)
    fast, pure, _ = both(qrels, {**run, 7: {"d1": 1.0}})
    assert pure == "run: query ids must be strings, got 7; convert them with str()"
    _same(fast, pure)
    fast, pure, _ = both({**qrels, 8: {"d1": 1}}, run)
    assert pure.startswith("qrels: query ids must be strings, got 8")
    _same(fast, pure)
    fast, pure, _ = both({**qrels, "q1": {9: 1}}, run)
    assert "('q1', 9): doc id is not a string" in pure
    _same(fast, pure)


BAD_DOC_IDS = {"int": 7, "float": 2.5, "None": None, "tuple": ("d", 1)}


def _bad_doc_id_run(value: Any, tie: bool) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, Any]], str, str]:
    """``_data(2)`` with the doc id ``value`` added to q6 and to q90 (a later block), two queries whose run rows hold
    a relevant document: tied with that document's score (``tie``), or with a score no other document has."""
    qrels, run = _data(2)
    changed: dict[str, dict[str, Any]] = {k: dict(v) for k, v in run.items()}
    for q in ("q6", "q90"):
        relevant = [d for d, g in qrels[q].items() if g > 0 and d in run[q]]
        assert relevant, q  # the data has one to tie with
        changed[q][value] = run[q][relevant[0]] if tie else 123.25
    return qrels, changed, "q6", "q90"


@pytest.mark.parametrize("block", [1, 256])
@pytest.mark.parametrize("tie", [True, False], ids=["tied", "not-tied"])
@pytest.mark.parametrize("kind", list(BAD_DOC_IDS))
def test_a_run_doc_id_that_is_not_a_string_is_refused_on_both_paths(
    kind: str, tie: bool, block: int, both: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    value = BAD_DOC_IDS[kind]
    qrels, run, first, second = _bad_doc_id_run(value, tie)
    expected = (
        f"run: doc ids must be strings; bad entries: ({first!r}, {value!r}); ({second!r}, {value!r}); "
        "convert them with str() (int and str ids never match each other)"
    )
    for kw in ({}, {"metrics": ["set_recall@5", "ndcg@10"], "coalitions": {"q6": [{"d1", "d2"}]}}):
        fast, pure, counted = both(qrels, run, **kw)  # the block-by-block pass, then the whole-run one
        assert pure == expected
        _same(fast, pure)
        assert counted.declined("pack")  # C saw the key and said "not handled"; Python named it


def test_the_briefs_two_examples_are_refused() -> None:
    """The tie that raised a raw ``TypeError`` from the tie-break, and the int id that silently never matched."""
    for qrels, run in (
        ({"q1": {"d1": 1, "d2": 0}}, {"q1": {1: 0.5, "d1": 0.5}}),
        ({"q1": {"d1": 1, "1": 1}}, {"q1": {1: 0.5, "d1": 0.4}}),
    ):
        with pytest.raises(DeltapError, match=r"^run: doc ids must be strings; bad entries: \('q1', 1\); convert"):
            evaluate(qrels, run, ["ndcg@10"], n_resamples=0)


def test_more_than_ten_bad_doc_ids_are_counted(both: Any) -> None:
    qrels, run = _data(2)
    bad = {k: dict(v) for k, v in run.items()}
    bad["q6"].update({i: 0.5 for i in range(12)})
    fast, pure, _ = both(qrels, bad)
    assert pure.startswith("run: doc ids must be strings; bad entries: ('q6', 0); ('q6', 1); ")
    assert pure.endswith("('q6', 9); ... (12 in all); convert them with str() (int and str ids never match each other)")
    _same(fast, pure)


def test_doc_ids_are_named_before_scores(both: Any) -> None:
    """A run with a bad score in an early block and a bad doc id in a later one: the ids first, on both paths."""
    qrels, run = _data(2)
    bad = _with(_with(run, "q5", "d1", "1.5"), "q90", 3, 1.0)  # type: ignore[arg-type]
    fast, pure, _ = both(qrels, bad)
    assert pure.startswith("run: doc ids must be strings; bad entries: ('q90', 3);"), pure
    _same(fast, pure)


def test_str_subclass_doc_ids_in_the_run_are_accepted(both: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytrec_eval accepts str subclasses as ids (the qrels' rule too): they match the equal strings."""
    monkeypatch.setattr(rk, "_ROW_BLOCK", 16)
    qrels, run = _data(2)
    assert run["q6"]  # a row with ids to subclass
    changed = {**run, "q6": {StrSub(d): s for d, s in run["q6"].items()}}
    fast, pure, counted = both(qrels, changed)
    assert not isinstance(pure, str), pure
    _same(fast, pure)
    reference = evaluate(qrels, run, METRICS, n_resamples=0)
    assert pure.values.tobytes() == reference.values.tobytes()
    assert counted.declined("pack") and counted.handled("pack")  # C declines the subclass, Python takes it


def test_a_dataframe_run_with_int_doc_ids_is_read_as_strings() -> None:
    """DataFrames (and TREC files) are read with str(): int columns match the qrels' strings, as pytrec_eval's users
    convert them; only dicts can carry non-str ids."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"query_id": [1, 1, 1], "doc_id": [1, 2, 3], "score": [0.9, 0.5, 0.1]})
    as_dicts = evaluate({"1": {"2": 1, "3": 0}}, {"1": {"1": 0.9, "2": 0.5, "3": 0.1}}, ["ndcg@10"], n_resamples=0)
    from_frame = evaluate({"1": {"2": 1, "3": 0}}, frame, ["ndcg@10"], n_resamples=0)
    assert from_frame.values.tobytes() == as_dicts.values.tobytes()


# ------------------------------------------------------------------------------------------------ the C functions


def test_pack_copies_exact_floats_bit_for_bit(c: types.ModuleType) -> None:
    values = [0.0, -0.0, 1.0, float("inf"), -float("inf"), 5e-324, 1.7976931348623157e308, 0.1, float("nan")]
    rows = [dict(zip("abcde", values[:5], strict=True)), {}, dict(zip("fghi", values[5:], strict=True))]
    out = np.full(len(values) + 3, 7.0)
    assert c.pack(rows, out) == len(values)
    assert out[: len(values)].tobytes() == np.array(values, dtype="<f8").tobytes()
    assert out[len(values) :].tolist() == [7.0, 7.0, 7.0]
    assert c.pack([], np.zeros(0)) == 0


@pytest.mark.parametrize(
    "rows",
    [
        [{"a": 1.0}, {"b": 1}],
        [{"a": True}],
        [{"a": np.float64(1.0)}],
        [{"a": FloatSub(1.0)}],
        [{"a": "1.0"}],
        [{"a": 1.0}, types.MappingProxyType({"b": 1.0})],
        [OrderedDict(a=1.0)],
        [{"a": 1.0}, {1: 1.0}],  # doc ids that are not exact str: an int, None, a float, a tuple, a str subclass
        [{None: 1.0}],
        [{2.5: 1.0}],
        [{("d", 1): 1.0}],
        [{StrSub("a"): 1.0}],
        [None],
        ({"a": 1.0},),  # not a list
    ],
    ids=repr,
)
def test_pack_declines_everything_else(c: types.ModuleType, rows: Any) -> None:
    assert c.pack(rows, np.zeros(4)) == -1


def test_pack_declines_an_output_too_small(c: types.ModuleType) -> None:
    assert c.pack([{"a": 1.0, "b": 2.0}], np.zeros(1)) == -1


def test_lookup_reads_each_rows_targets_in_order(c: types.ModuleType) -> None:
    rows = [{"a": 1.0, "b": 2.0}, {}, {"c": -0.0}]
    docs = ["zz", "b", "a", "x", "c", "b"]
    out = np.zeros(4)
    assert c.lookup(rows, np.array([2, 1, 1]), docs, 1, out) == 4
    assert out[:2].tolist() == [2.0, 1.0] and np.isnan(out[2]) and out[3] == 0.0 and np.signbit(out[3])
    assert c.lookup([], np.zeros(0, dtype=np.int64), [], 0, np.zeros(0)) == 0


@pytest.mark.parametrize(
    "rows,counts,docs,start,size",
    [
        ([{"a": 1}], [1], ["a"], 0, 1),  # a found score that is not an exact float
        ([{"a": 1.0}], [1], [StrSub("a")], 0, 1),  # a doc id that is not an exact str
        ([types.MappingProxyType({"a": 1.0})], [1], ["a"], 0, 1),
        ([{"a": 1.0}], [2], ["a"], 0, 2),  # more targets than doc ids
        ([{"a": 1.0}], [1], ["a"], 0, 2),  # counts and output sizes differ
        ([{"a": 1.0}], [1, 1], ["a", "a"], 0, 2),  # more counts than rows
        ([{"a": 1.0}], [1], ["a"], -1, 1),
        ([{"a": 1.0}], [1], ("a",), 0, 1),  # not a list
    ],
)
def test_lookup_declines_everything_else(
    c: types.ModuleType, rows: Any, counts: list[int], docs: Any, start: int, size: int
) -> None:
    assert c.lookup(rows, np.array(counts, dtype=np.int64), docs, start, np.zeros(size)) == -1


def test_a_key_whose_comparison_raises_is_declined_not_raised(c: types.ModuleType) -> None:
    class Clash:
        def __hash__(self) -> int:
            return hash("a")

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("boom")

    assert c.lookup([{Clash(): 1.0}], np.array([1]), ["a"], 0, np.zeros(1)) == -1


def test_wrong_buffers_are_a_type_error(c: types.ModuleType) -> None:
    with pytest.raises(TypeError, match="float64"):
        c.pack([{"a": 1.0}], np.zeros(1, dtype=np.float32))
    with pytest.raises(BufferError):
        c.pack([{"a": 1.0}], bytes(8))  # read-only
    with pytest.raises(TypeError, match="int64"):
        c.lookup([{"a": 1.0}], np.array([1], dtype=np.int32), ["a"], 0, np.zeros(1))
    with pytest.raises(TypeError):
        c.pack([{"a": 1.0}])


def test_no_reference_or_buffer_is_left_behind(c: types.ModuleType) -> None:
    """Every path (done, declined, refused) leaves the rows, ids, scores and both buffers' counts as they were."""
    # objects of this test alone (no interned constant another test's garbage could hold), the collector paused
    doc, score = "".join(["doc-", str(random.random())]), random.random() + 2.0
    row, other = {doc: score}, {"b": 1}
    key = (doc, random.random())  # a doc id that is not a str (a tuple of this test alone)
    keyed = {key: score}
    out, counts = np.zeros(2), np.array([1, 1], dtype=np.int64)
    objects = [score, doc, row, other, out, counts, key, keyed]
    gc.collect()
    gc.disable()
    try:
        before = [sys.getrefcount(o) for o in objects]
        _calls(c, doc, row, other, keyed, out, counts)
        after = [sys.getrefcount(o) for o in objects]
    finally:
        gc.enable()
    assert after == before  # a buffer not released would hold a reference to its array


def _calls(
    c: types.ModuleType, doc: str, row: dict, other: dict, keyed: dict, out: np.ndarray, counts: np.ndarray
) -> None:
    for _ in range(1000):  # each way out of each function
        assert c.pack([row], out) == 1
        assert c.pack([row, other], out) == -1  # an int score
        assert c.pack([row, None], out) == -1  # not a dict
        assert c.pack([row, keyed], out) == -1  # a doc id that is not a str
        assert c.pack([row, row, row], out) == -1  # too small
        assert c.lookup([row, row], counts, [doc, doc], 0, out) == 2
        assert c.lookup([row, other], counts, [doc, "b"], 0, out) == -1  # an int score
        assert c.lookup([row, None], counts, [doc, doc], 0, out) == -1  # not a dict
        assert c.lookup([row, row], counts, [doc, 5], 0, out) == -1  # not a str
        assert c.lookup([row, row], counts, [doc], 0, out) == -1  # too few ids
        assert c.lookup([row], counts, [doc], 0, out) == -1  # more counts than rows
        assert c.lookup([row, row], counts, [doc, doc], 0, out[:1]) == -1  # too small
        try:
            c.lookup([row], counts, [doc], 0, np.zeros(1, dtype=np.float32))
        except TypeError:
            pass
        else:
            raise AssertionError("a float32 buffer must be refused")


# ------------------------------------------------------------------------------------------------ the switch


def test_the_switch_and_the_status_line(c: types.ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accel, "_load", lambda: (c, "compiled module /x/_accel.so"))
    monkeypatch.delenv(accel.ENV, raising=False)
    assert accel.accelerator() is c and accel.accelerator_status() == "accelerated (compiled module /x/_accel.so)"
    monkeypatch.setenv(accel.ENV, "0")
    assert accel.accelerator() is None and accel.accelerator_status() == "pure Python (DELTAP_ACCEL=0)"
    monkeypatch.setenv(accel.ENV, "1")
    assert accel.accelerator_mode() == ACCELERATED
    monkeypatch.setattr(accel, "_load", lambda: (None, "the compiled accelerator is not built here: ..."))
    assert accel.accelerator_status() == "pure Python (the compiled accelerator is not built here: ...)"


def test_a_module_built_from_another_source_is_not_used(
    c: types.ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = tmp_path / "_accel.c"
    source.write_text("/* another version */\n")
    monkeypatch.setattr(accel, "_SOURCE", source)
    monkeypatch.setattr(accel.importlib, "import_module", lambda name: c)
    accel._load.cache_clear()
    try:
        module, why = accel._load()
        assert module is None and "was built from another _accel.c: rebuild it with python hatch_build.py" in why
    finally:
        accel._load.cache_clear()


def test_version_says_which_path_runs() -> None:
    for env, expected in (
        ({accel.ENV: "0"}, "metric evaluation: pure Python (DELTAP_ACCEL=0)"),
        ({}, "metric evaluation: "),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "deltap", "--version"],
            capture_output=True,
            text=True,
            check=True,
            env={**{k: v for k, v in os.environ.items() if k != accel.ENV}, **env},
        )
        lines = done.stdout.splitlines()
        assert lines[0].startswith("deltap ") and lines[1].startswith(expected), lines
