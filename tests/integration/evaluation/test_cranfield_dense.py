"""Agreement with pytrec_eval on real dense and hybrid (RRF) runs over Cranfield, and the compare() report.

Embedding the 1,400 Cranfield documents with all-MiniLM-L6-v2 takes about a minute on 2 cores. The runs are cached
in pytest's cache folder (keyed by a hash of the corpus and queries), and the embeddings by deltap's own cache, so
reruns take seconds.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("sentence_transformers")

from deltap.evaluation import compare  # noqa: E402
from tests.unit.evaluation.test_cranfield_pytrec_eval import MEASURES, assert_agrees  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cranfield_runs(cranfield_dir: Path, request: pytest.FixtureRequest) -> tuple[dict, dict[str, dict]]:
    from deltap.loaders import load_beir

    data = load_beir(cranfield_dir)
    qids = list(data.qrels)
    texts = [data.queries[q] for q in qids]
    digest = hashlib.sha256()
    for doc in data.corpus:
        digest.update(doc.doc_id.encode() + b"\0" + doc.full_text.encode() + b"\0")
    digest.update(json.dumps(texts).encode())
    pytest_cache = getattr(request.config, "cache", None)  # absent under `-p no:cacheprovider`
    folder = Path(pytest_cache.mkdir("deltap-eval-cranfield")) if pytest_cache is not None else Path(tempfile.mkdtemp())
    cache = folder / f"runs-{digest.hexdigest()[:16]}.json"
    if cache.is_file():
        return data.qrels, json.loads(cache.read_text())
    from deltap.retrieval import build_retriever

    runs = {}
    for kind in ("bm25", "dense", "hybrid"):
        hits = build_retriever(kind, data.corpus, seed=0).search_batch(texts, k=100)
        runs[kind] = {q: {h.doc_id: float(h.score) for h in hs} for q, hs in zip(qids, hits, strict=True)}
    cache.write_text(json.dumps(runs))
    return data.qrels, runs


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_dense_and_hybrid_runs_agree_with_pytrec_eval(cranfield_runs: tuple, kind: str) -> None:
    qrels, runs = cranfield_runs
    assert assert_agrees(qrels, runs[kind], MEASURES) == 225 * len(MEASURES)


def test_compare_bm25_dense_hybrid(cranfield_runs: tuple) -> None:
    qrels, runs = cranfield_runs
    report = compare(qrels, runs, "ndcg@10,recall@100,MRR", baseline="bm25", n_permutations=2000)
    means = {s: report.results[s].mean("ndcg@10") for s in report.systems}
    assert all(0.2 < m < 0.6 for m in means.values()), means
    assert set(report.p_fisher_holm) == {"dense", "hybrid"}
