"""Retrieval: BM25, random, hybrid RRF, filters, and the ranking rule (fast; no model, no store)."""

from __future__ import annotations

import math

import pytest

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.retrieval import build_retriever
from deltap.retrieval._common import check_filter, matches_filter, rank
from deltap.retrieval.base import Hit
from deltap.retrieval.bm25 import BM25Retriever, tokenize
from deltap.retrieval.hybrid import HybridRetriever, rrf_fuse
from deltap.retrieval.random_control import RandomRetriever

TEXTS = [
    ("wings generate lift from a pressure difference", "aero", ["wing", "lift"]),
    ("drag grows with the square of velocity", "aero", ["drag"]),
    ("the boundary layer on a flat plate becomes turbulent", "fluids", []),
    ("an agent runs tools and returns events", "api", ["agent"]),
    ("sessions keep the state of a conversation", "api", ["session"]),
    ("wings generate lift from a pressure difference", "aero", ["wing"]),  # same text as d0: a tie
]


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus(
        [
            Document(f"d{i}", text=t, title="", metadata={"section": s, "tags": tags, "order": i, "public": i % 2 == 0})
            for i, (t, s, tags) in enumerate(TEXTS)
        ],
        name="toy",
    )


# --------------------------------------------------------------------------------------------------- ranking rule
def test_rank_orders_by_score_then_position() -> None:
    hits = rank([("b", 1.0, 5, {}), ("a", 2.0, 9, {}), ("c", 1.0, 1, {}), ("d", 0.5, 0, {})], k=3)
    assert [(h.doc_id, h.rank) for h in hits] == [("a", 1), ("c", 2), ("b", 3)]


# --------------------------------------------------------------------------------------------------- tokenization
def test_tokenize_lowercases_drops_stopwords_and_stems() -> None:
    assert tokenize("The Wings are generating LIFT, quickly!") == ["wing", "generat", "lift", "quick"]
    assert tokenize("The wings", stopwords=None, stemmer=None) == ["the", "wings"]
    assert tokenize("google.adk.Agent a x") == ["googl", "adk", "agent"]  # dots split; 1-char tokens dropped


# --------------------------------------------------------------------------------------------------- BM25
def _lucene_bm25(query: str, docs: list[list[str]], k1: float, b: float) -> list[float]:
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    scores = []
    for d in docs:
        s = 0.0
        for t in set(tokenize(query)):
            df = sum(t in dd for dd in docs)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = d.count(t)
            s += idf * tf / (tf + k1 * (1 - b + b * len(d) / avgdl))  # Lucene >= 8 drops the (k1 + 1) factor
        scores.append(s)
    return scores


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (0.9, 0.4), (2.0, 1.0)], ids=["default", "k1-0.9-b-0.4", "b-1"])
def test_bm25_scores_match_the_lucene_formula(corpus: Corpus, k1: float, b: float) -> None:
    retriever = BM25Retriever(corpus, k1=k1, b=b)
    query = "lift of wings and the drag velocity"
    expected = _lucene_bm25(query, [tokenize(d.full_text) for d in corpus], k1, b)
    got = retriever.scores(query)
    assert got.tolist() == pytest.approx(expected, rel=1e-5)
    hits = retriever.search(query, k=10)
    assert [h.doc_id for h in hits] == ["d1", "d0", "d5"]  # only documents sharing a term, d0 before its twin d5
    assert hits[1].score == hits[2].score


def test_bm25_parameters_change_scores(corpus: Corpus) -> None:
    a = BM25Retriever(corpus, k1=1.5, b=0.75).scores("lift drag")
    b = BM25Retriever(corpus, k1=0.5, b=0.0).scores("lift drag")
    assert not (a == b).all()
    with pytest.raises(ValueError, match="0 <= b <= 1"):
        BM25Retriever(corpus, b=1.5)


def test_bm25_metadata_is_the_documents(corpus: Corpus) -> None:
    hit = BM25Retriever(corpus).search("sessions conversation", k=1)[0]
    assert hit == Hit("d4", hit.score, 1, corpus["d4"].metadata)
    assert dict(hit.metadata) == {"section": "api", "tags": ["session"], "order": 4, "public": True}


def test_bm25_no_matching_term_returns_nothing(corpus: Corpus) -> None:
    assert BM25Retriever(corpus).search("zebra", k=5) == []
    assert BM25Retriever(corpus).search("the and of", k=5) == []  # only stop words


def test_bm25_batch_and_single_follow_the_reference_ranking(corpus: Corpus) -> None:
    # Both paths against the reference formula's ranking (score descending, ties by corpus position, zero dropped),
    # not against each other.
    r = BM25Retriever(corpus)
    docs = [tokenize(d.full_text) for d in corpus]
    ids = [d.doc_id for d in corpus]
    queries = ["lift", "agent events", "turbulent plate", "wings drag velocity state"]
    expected = []
    for q in queries:
        ref = _lucene_bm25(q, docs, 1.5, 0.75)
        order = sorted((i for i in range(len(ref)) if ref[i] > 0), key=lambda i: (-round(ref[i], 5), i))[:3]
        expected.append([(ids[i], rank) for rank, i in enumerate(order, 1)])
    assert expected[0] == [("d0", 1), ("d5", 2)] and len(expected[3]) == 3  # the fixture exercises ties and the cut
    batch = r.search_batch(queries, k=3)
    single = [r.search(q, k=3) for q in queries]
    assert [[(h.doc_id, h.rank) for h in hits] for hits in batch] == expected
    assert [[(h.doc_id, h.rank) for h in hits] for hits in single] == expected
    assert [[h.score for h in hits] for hits in batch] == [[h.score for h in hits] for hits in single]


# --------------------------------------------------------------------------------------------------- filters
def test_filter_semantics(corpus: Corpus) -> None:
    r = BM25Retriever(corpus)
    q = "wings lift drag agent sessions"
    assert {h.doc_id for h in r.search(q, 10, filter={"section": "api"})} == {"d3", "d4"}
    assert {h.doc_id for h in r.search(q, 10, filter={"tags": "wing"})} == {"d0", "d5"}  # list contains value
    assert {h.doc_id for h in r.search(q, 10, filter={"section": ["api", "fluids"]})} == {"d3", "d4"}
    assert {h.doc_id for h in r.search(q, 10, filter={"order": 1})} == {"d1"}
    assert {h.doc_id for h in r.search(q, 10, filter={"public": True, "section": "aero"})} == {"d0"}
    assert {h.doc_id for h in r.search(q, 10, filter={"doc_id": "d4"})} == {"d4"}


def test_filter_keeps_bool_and_int_apart() -> None:
    assert matches_filter("x", {"flag": True}, {"flag": True})
    assert not matches_filter("x", {"flag": 1}, {"flag": True})
    assert not matches_filter("x", {"flag": True}, {"flag": 1})
    assert not matches_filter("x", {}, {"flag": 1})


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        pytest.param({"sectoin": "api"}, "unknown filter field.*sectoin.*section", id="unknown-field"),
        pytest.param({"order": 1.5}, "not supported", id="float"),
        pytest.param({"section": []}, "not supported", id="empty-list"),
        pytest.param({"section": ["a", 1]}, "not supported", id="mixed-list"),
        pytest.param({"section": {"a": 1}}, "not supported", id="dict"),
    ],
)
def test_bad_filters_are_rejected(corpus: Corpus, flt: dict, message: str) -> None:
    for kind in ("bm25", "random"):
        with pytest.raises(DeltapError, match=message):
            build_retriever(kind, corpus).search("lift", 3, filter=flt)
    with pytest.raises(DeltapError, match="mapping"):
        check_filter(["section"], ["section"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------- bad queries
@pytest.mark.parametrize(
    ("query", "k", "message"),
    [
        pytest.param("", 3, "query is empty", id="empty"),
        pytest.param("  \n\t", 3, "query is empty", id="whitespace"),
        pytest.param("lift", 0, "positive integer", id="k-zero"),
        pytest.param("lift", -2, "positive integer", id="k-negative"),
    ],
)
@pytest.mark.parametrize("kind", ["bm25", "random"])
def test_bad_queries_are_rejected(corpus: Corpus, kind: str, query: str, k: int, message: str) -> None:
    r = build_retriever(kind, corpus)
    with pytest.raises(DeltapError, match=message):
        r.search(query, k)
    batch_message = message if k <= 0 else f"query #2 of the batch: .*{message}"
    with pytest.raises(DeltapError, match=batch_message):
        r.search_batch(["fine", query], k)


def test_search_batch_refuses_a_bare_string(corpus: Corpus) -> None:
    with pytest.raises(DeltapError, match="single string"):
        BM25Retriever(corpus).search_batch("lift", 3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------- random
def test_random_is_reproducible_per_seed_and_query(corpus: Corpus) -> None:
    r0, r0b, r1 = RandomRetriever(corpus, seed=0), RandomRetriever(corpus, seed=0), RandomRetriever(corpus, seed=1)
    a = r0.search("lift", k=6)
    assert a == r0b.search("lift", k=6) == r0.search("lift", k=6)
    assert sorted(h.doc_id for h in a) == sorted(corpus.ids)  # a permutation
    assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)
    # 6! = 720 orders: seeds/queries colliding on all of them would be a bug, not luck
    orders = {tuple(h.doc_id for h in r.search(q, 6)) for r in (r0, r1) for q in ("lift", "drag", "agent")}
    assert len(orders) >= 5


def test_random_is_uniform_enough() -> None:
    docs = Corpus([Document(f"d{i}", text="x") for i in range(10)])
    r = RandomRetriever(docs, seed=7)
    firsts = [r.search(f"query {i}", k=1)[0].doc_id for i in range(2000)]
    counts = [firsts.count(f"d{i}") for i in range(10)]
    # each ~ Binomial(2000, 0.1): mean 200, sd 13.4; 5 sd bounds fail by chance with p < 1e-5
    assert all(133 <= c <= 267 for c in counts), counts


def test_random_filter_and_short_corpus(corpus: Corpus) -> None:
    hits = RandomRetriever(corpus, seed=3).search("q", k=10, filter={"section": "aero"})
    assert sorted(h.doc_id for h in hits) == ["d0", "d1", "d5"]


# --------------------------------------------------------------------------------------------------- hybrid
def test_rrf_formula() -> None:
    a = [Hit("x", 9.0, 1), Hit("y", 8.0, 2)]
    b = [Hit("y", 0.9, 1), Hit("z", 0.1, 2)]
    fused = rrf_fuse([a, b], k=60)
    assert fused == pytest.approx({"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 62})
    assert rrf_fuse([a, b], k=0)["y"] == pytest.approx(1.5)


class _Fixed:
    """A retriever returning fixed rankings (to test fusion alone)."""

    def __init__(self, name: str, ids: list[str]) -> None:
        self.name, self.ids = name, ids
        self.seen_k: list[int] = []

    def search(self, query, k=10, filter=None):  # type: ignore[no-untyped-def]
        return self.search_batch([query], k, filter)[0]

    def search_batch(self, queries, k=10, filter=None):  # type: ignore[no-untyped-def]
        self.seen_k.append(k)
        return [[Hit(d, 1.0 / (i + 1), i + 1) for i, d in enumerate(self.ids[:k])] for _ in queries]


def test_hybrid_fuses_and_breaks_ties_by_position(corpus: Corpus) -> None:
    first, second = _Fixed("a", ["d3", "d1"]), _Fixed("b", ["d1", "d2"])
    h = HybridRetriever(corpus, [first, second], rrf_k=60, depth=50)
    hits = h.search("anything", k=3)
    # d1: 1/62 + 1/61; d3: 1/61 and d2: 1/62 -> d3 before d2; a d2/d3 tie would go to d2 (position 2 < 3)
    assert [h_.doc_id for h_ in hits] == ["d1", "d3", "d2"]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert hits[1].metadata == corpus["d3"].metadata
    assert first.seen_k == [50]
    tie = HybridRetriever(corpus, [_Fixed("a", ["d3"]), _Fixed("b", ["d2"])]).search("q", k=2)
    assert [t.doc_id for t in tie] == ["d2", "d3"]


def test_hybrid_of_bm25_and_random_is_deterministic(corpus: Corpus) -> None:
    h = HybridRetriever(corpus, [BM25Retriever(corpus), RandomRetriever(corpus, seed=1)], rrf_k=10)
    assert h.search("lift wings", 4) == h.search("lift wings", 4)
    assert h.search_batch(["lift wings", "agent"], 4) == [h.search("lift wings", 4), h.search("agent", 4)]


# --------------------------------------------------------------------------------------------------- factory
def test_build_retriever_rejects_unknown_kind_and_option(corpus: Corpus) -> None:
    with pytest.raises(DeltapError, match="unknown retriever kind 'splade'"):
        build_retriever("splade", corpus)
    with pytest.raises(DeltapError, match="unknown option.*k2"):
        build_retriever("bm25", corpus, k2=3)
    # options of another kind are ignored, so one option dict can serve every kind
    assert build_retriever("bm25", corpus, k1=1.2, rrf_k=5, cache_dir="x").name == "bm25(k1=1.2,b=0.75)"
