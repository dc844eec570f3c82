"""Agreement with pytrec_eval to 1e-9 per query on real runs: BM25 and a seeded random run over all 225 Cranfield
queries (graded qrels 1-4). The dense/hybrid runs are in tests/integration/evaluation/test_cranfield_dense.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("bm25s")

from deltap.evaluation import compare, evaluate, parse_metric  # noqa: E402

CUTOFFS = (1, 3, 5, 10, 20, 100)
MEASURES = [f"{m}@{k}" for m in ("P", "recall", "hit_rate", "ndcg", "MAP") for k in CUTOFFS] + [
    "MRR",
    "MAP",
    "R-prec",
    "ndcg",
]


@pytest.fixture(scope="module")
def cranfield(cranfield_dir: Path) -> tuple[dict, dict, dict[str, dict]]:
    from deltap.loaders import load_beir
    from deltap.retrieval import build_retriever

    data = load_beir(cranfield_dir)
    qids = list(data.qrels)
    texts = [data.queries[q] for q in qids]
    runs = {}
    for kind in ("bm25", "random"):
        hits = build_retriever(kind, data.corpus, seed=0).search_batch(texts, k=100)
        runs[kind] = {q: {h.doc_id: float(h.score) for h in hs} for q, hs in zip(qids, hits, strict=True)}
    return data.qrels, data.queries, runs


def assert_agrees(qrels: dict, run: dict, measures: list[str], rel: int = 1) -> int:
    """Compare every query and measure with pytrec_eval; returns the number of values compared."""
    texts = [
        m if rel == 1 else (m.replace("@", f"(rel={rel})@", 1) if "@" in m else f"{m}(rel={rel})") for m in measures
    ]
    ours = evaluate(qrels, run, texts, n_resamples=0).per_query()
    specs = {m: parse_metric(m).trec_eval() for m in measures}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {s[0] for s in specs.values() if s}, relevance_level=rel).evaluate(run)
    assert set(ref) == set(ours)
    n = 0
    for qid, row in ref.items():
        for m, t in zip(measures, texts, strict=True):
            spec = specs[m]
            assert spec is not None
            assert ours[qid][str(parse_metric(t))] == pytest.approx(row[spec[1]], abs=1e-9, rel=0), (qid, m)
            n += 1
    return n


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
@pytest.mark.parametrize("kind", ["bm25", "random"])
def test_cranfield_runs_agree_with_pytrec_eval(cranfield: tuple, kind: str) -> None:
    qrels, _, runs = cranfield
    n = assert_agrees(qrels, runs[kind], MEASURES)
    assert n == 225 * len(MEASURES)


@pytest.mark.usefixtures("dict_path")  # the accelerated and the pure-Python path (conftest.py)
@pytest.mark.parametrize("rel", [2, 3])
def test_cranfield_relevance_levels_agree(cranfield: tuple, rel: int) -> None:
    qrels, _, runs = cranfield
    binary = [m for m in MEASURES if not m.startswith("ndcg")]
    # some queries have no document of grade >= rel: they score 0 (warned), as in trec_eval
    with pytest.warns(UserWarning, match="no relevant document"):
        assert_agrees(qrels, runs["bm25"], binary, rel=rel)


def test_bm25_beats_random_on_cranfield(cranfield: tuple) -> None:
    qrels, _, runs = cranfield
    report = compare(qrels, {"random": runs["random"], "bm25": runs["bm25"]}, "ndcg@10,MRR", n_permutations=2000)
    assert report.significant("bm25", "ndcg@10")
    assert report.results["bm25"].mean("ndcg@10") > 0.3 > report.results["random"].mean("ndcg@10")
