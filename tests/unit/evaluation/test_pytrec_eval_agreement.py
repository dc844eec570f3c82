"""deltap's metrics agree with pytrec_eval (trec_eval 9) to 1e-9 per query on randomized runs.

The runs are generated with hypothesis: ties in scores (few distinct values), doc ids whose string order differs
from their numeric order ("10" < "9"), graded qrels (0-3), queries without relevant documents, queries with an empty
result list, run queries without judgements and qrels queries missing from the run. The comparisons from dicts run
twice: on the compiled accelerator's path and on the pure-Python one (``dict_path``, conftest.py).
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from deltap.evaluation import evaluate, parse_metric  # noqa: E402
from deltap.evaluation.ranking import EvaluationWarning  # noqa: E402

CUTOFFS = (1, 2, 3, 5, 10)
DOC_IDS = ["1", "2", "9", "10", "11", "100", "a", "B", "b", "doc_3", "doc_12", "Z9", "z", "é", "x-1", "x_1"]
SCORES = [-1.0, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 1e-9]

BINARY = [f"{m}@{k}" for m in ("P", "recall", "hit_rate", "MAP") for k in CUTOFFS] + ["MRR", "MAP", "R-prec"]
GRADED = [f"ndcg@{k}" for k in CUTOFFS] + ["ndcg"]


@st.composite
def qrels_and_run(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    n_queries = draw(st.integers(1, 6))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(n_queries):
        qid = f"q{i}"
        if draw(st.booleans()) or i == 0:
            judged = draw(st.lists(st.sampled_from(DOC_IDS), min_size=1, max_size=8, unique=True))
            qrels[qid] = {d: draw(st.integers(0, 3)) for d in judged}
        if draw(st.integers(0, 9)) > 0 or i == 0:
            docs = draw(st.lists(st.sampled_from(DOC_IDS), min_size=0, max_size=len(DOC_IDS), unique=True))
            continuous = draw(st.booleans())
            run[qid] = {
                d: (draw(st.floats(-5, 5, allow_nan=False, width=32)) if continuous else draw(st.sampled_from(SCORES)))
                for d in docs
            }
    return qrels, run


def _reference(qrels: dict, run: dict, measures: list[str], rel: int) -> tuple[dict, dict]:
    specs = {}
    for text in measures:
        trec = parse_metric(text).trec_eval()
        assert trec is not None, text
        specs[text] = trec
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {s for s, _ in specs.values()}, relevance_level=rel)
    return evaluator.evaluate(run), specs


def _check(qrels: dict, run: dict, measures: list[str], rel: int = 1) -> None:
    texts = (
        measures
        if rel == 1
        else [m.replace("@", f"(rel={rel})@", 1) if "@" in m else f"{m}(rel={rel})" for m in measures]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        ours = evaluate(qrels, run, texts, n_resamples=0)
    ref, specs = _reference(qrels, run, measures, rel)
    table = ours.per_query()
    for qid in ours.query_ids:
        for text, ours_text in zip(measures, texts, strict=True):
            got = table[qid][str(parse_metric(ours_text))]
            if qid in ref:
                want = ref[qid][specs[text][1]]
                assert got == pytest.approx(want, abs=1e-9, rel=0), (qid, text, got, want, qrels.get(qid), run.get(qid))
            else:  # pytrec_eval skips queries the run lacks (or answers with nothing); we score them 0 (trec_eval -c)
                assert not run.get(qid), qid
                assert got == 0.0


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(qrels_and_run())
def test_binary_and_graded_metrics_match_pytrec_eval(data: tuple[dict, dict]) -> None:
    qrels, run = data
    if not any(q in run for q in qrels):
        return  # no common query: deltap raises (tested elsewhere)
    _check(qrels, run, BINARY + GRADED)


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(qrels_and_run())
def test_relevance_level_2_matches_pytrec_eval(data: tuple[dict, dict]) -> None:
    qrels, run = data
    if not any(q in run for q in qrels):
        return
    _check(qrels, run, BINARY, rel=2)


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
def test_tie_order_is_trec_eval_doc_id_descending() -> None:
    # All four docs tie; trec_eval orders them d, c, b, a (doc id descending): c is at rank 2, a at rank 4.
    qrels = {"q": {"a": 1, "b": 0, "c": 2}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}}
    result = evaluate(qrels, run, ["MRR", "P@2", "MAP", "ndcg@2"], n_resamples=0)
    assert result.per_query()["q"] == pytest.approx(
        {"MRR": 0.5, "P@2": 0.5, "MAP": 0.5, "ndcg@2": (2 / 1.584962500721156) / (2 + 1 / 1.584962500721156)}
    )
    # String order, not numeric: "9" > "10", so "9" ranks first among ties.
    result = evaluate({"q": {"10": 1}}, {"q": {"9": 0.5, "10": 0.5}}, ["MRR"], n_resamples=0)
    assert result.mean("MRR") == 0.5


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(data=qrels_and_run(), shuffle=st.booleans(), coalition_seed=st.integers(0, 3))
def test_trec_file_fast_path_equals_dict_path(
    tmp_path_factory: pytest.TempPathFactory, data: tuple[dict, dict], shuffle: bool, coalition_seed: int
) -> None:
    qrels, run = data
    if not any(run.get(q) for q in qrels):
        return
    path = tmp_path_factory.mktemp("runs") / "run.trec"
    lines = [f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()]
    if shuffle:  # not grouped by query: exercises the sorting branch
        random.Random(coalition_seed).shuffle(lines)
    path.write_text("".join(lines))
    if lines:  # the fast path really ran (a silent fallback to the dict reader would make this test vacuous)
        from deltap.evaluation.trec_fast import read_run_arrays

        assert read_run_arrays(path) is not None
    coalitions = {q: [set(list(docs)[coalition_seed : coalition_seed + 2]) | {"nowhere"}] for q, docs in qrels.items()}
    measures = BINARY + GRADED + ["set_recall@3"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvaluationWarning)
        from_dict = evaluate(qrels, run, measures, n_resamples=0, coalitions=coalitions)
        from_file = evaluate(qrels, path, measures, n_resamples=0, coalitions=coalitions)
    assert from_file.query_ids == from_dict.query_ids
    assert (from_file.values == from_dict.values).all()


def test_very_uneven_depths_take_the_unpadded_paths(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One query with 6,000 results and 300 with 1-3: padding would waste memory, so segments are gathered."""
    import numpy as np

    rng = np.random.default_rng(5)
    run = {"long": {f"d{i}": float(s) for i, s in enumerate(np.round(rng.random(6000), 2))}}
    qrels = {
        "long": {
            f"d{i}": int(g) for i, g in zip(rng.choice(6000, 40, replace=False), rng.integers(0, 4, 40), strict=True)
        }
    }
    for q in range(300):
        n = int(rng.integers(1, 4))
        run[f"s{q}"] = {f"d{i}": float(rng.integers(0, 3)) for i in range(n)}
        qrels[f"s{q}"] = {f"d{int(rng.integers(0, 4))}": 1}
    path = tmp_path_factory.mktemp("uneven") / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()))
    measures = ["P@10", "recall@1000", "MRR", "MAP", "ndcg@20", "R-prec"]
    ref = pytrec_eval.RelevanceEvaluator(qrels, {parse_metric(m).trec_eval()[0] for m in measures}).evaluate(run)  # type: ignore[index]
    for source in (run, path):
        ours = evaluate(qrels, source, measures, n_resamples=0).per_query()
        for qid, row in ref.items():
            for m in measures:
                assert ours[qid][m] == pytest.approx(row[parse_metric(m).trec_eval()[1]], abs=1e-9), (
                    source is run,
                    qid,
                    m,
                )  # type: ignore[index]


def _random_run(
    rng: random.Random, doc_ids: list[str]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        docs = rng.sample(doc_ids, rng.randint(1, len(doc_ids)))
        run[f"q{q}"] = {d: rng.choice([0.0, 0.5, 1.0, rng.random()]) for d in docs}
        qrels[f"q{q}"] = {d: rng.randint(0, 3) for d in rng.sample(doc_ids, 4)}
    return qrels, run


@pytest.mark.parametrize("weak_keys", [False, True], ids=["long-ids", "colliding-fingerprints"])
def test_trec_file_fast_path_with_long_ids_and_fingerprint_collisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weak_keys: bool
) -> None:
    """Ids longer than 8 bytes use fingerprints confirmed on the strings; even colliding ones give exact numbers."""
    import numpy as np

    from deltap.evaluation import trec_fast

    if weak_keys:  # every id lands in one of 3 buckets: collisions everywhere, inside queries too
        real = trec_fast._doc_keys

        def weak(values: object) -> tuple[object, bool]:
            return real(values)[0] % 3, False

        monkeypatch.setattr(trec_fast, "_doc_keys", weak)
    rng = random.Random(11)
    doc_ids = [f"collection-document-{i:05d}" for i in rng.sample(range(100_000), 60)] + ["x", "é-long-identifier-ñ"]
    qrels, run = _random_run(rng, doc_ids)
    path = tmp_path / "run.trec"
    path.write_text(
        "".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()), encoding="utf-8"
    )
    arrays = trec_fast.read_run_arrays(path)
    assert arrays is not None and not arrays.exact_keys
    measures = BINARY + GRADED
    ours = evaluate(qrels, path, measures, n_resamples=0)
    ref = evaluate(qrels, run, measures, n_resamples=0)
    assert np.array_equal(ours.values, ref.values)
    _check(qrels, run, measures)  # and the dict path agrees with pytrec_eval


def test_duplicate_long_ids_are_found_despite_fingerprints(tmp_path: Path) -> None:
    from deltap.evaluation.trec_fast import read_run_arrays

    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a-very-long-document-id 1 0.5 t\nq1 Q0 a-very-long-document-id 2 0.4 t\n")
    assert read_run_arrays(path) is None


def test_doc_keys_do_not_depend_on_the_other_ids() -> None:
    """A judged id's key must equal its key inside the run, whatever the longest id of either column is."""
    import numpy as np
    import pyarrow as pa

    from deltap.evaluation.trec_fast import _doc_keys

    ids = [f"collection-document-{i}" if i % 3 else f"d{i}" for i in range(3000)] + ["é", "x", "abcdefgh", "abcdefghi"]
    together, exact = _doc_keys(pa.chunked_array([ids[:1000], ids[1000:]], type=pa.string()))
    alone = np.array([_doc_keys(pa.array([d], type=pa.large_string()))[0][0] for d in ids])
    assert np.array_equal(together, alone) and not exact
    short = _doc_keys(pa.array(["d1", "abcdefgh", "é"], type=pa.large_string()))
    assert short[1] and short[0].tolist() == [int.from_bytes(d.encode(), "little") for d in ("d1", "abcdefgh", "é")]
    assert not _doc_keys(pa.array(["a", "a\x00"]))[1]  # a NUL byte would make two ids share a key


@pytest.mark.parametrize(
    ("values", "clean"),
    [
        (["a", "b"], True),
        (["a b"], False),
        (["a", ""], False),
        (["a\tb"], False),
        (["é", "ñ"], True),
        (["a\u00a0b"], False),
        (["a\u2003"], False),
    ],
)
def test_single_token_check_matches_str_split(values: list[str], clean: bool) -> None:
    import pyarrow as pa

    from deltap.evaluation.trec_fast import _single_tokens

    assert _single_tokens(pa.chunked_array([values])) is clean
    assert clean == all(v.split() == [v] for v in values)
