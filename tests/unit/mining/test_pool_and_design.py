"""Candidate pools (provenance, merging, cap, placebo seeding) and the designs' inclusion vectors (the trial seed and
the trial log are tested in tests/unit/trials)."""

from __future__ import annotations

import numpy as np
import pytest

from deltap.cases import Case
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.mining.design import (
    InclusionDesign,
    canonical_order,
    hadamard_blocks,
    inclusion_vector,
    paley_hadamard,
    paley_order,
)
from deltap.mining.pool import build_pool
from deltap.trials.seeds import trial_seed
from tests.helpers import numbered_corpus


@pytest.fixture()
def corpus() -> Corpus:
    return numbered_corpus(30)


def test_pool_sources_merge_and_missing_gold(corpus: Corpus) -> None:
    case = Case("c1", "q", gold_doc_ids=("d01", "d02", "nope"))
    pool = build_pool(case, corpus, retrieved=["d02", "d05", "d06"], k=3, n_placebo=4, seed=1)
    by_id = {c.doc_id: c for c in pool.candidates}
    assert by_id["d02"].sources == ("gold", "retrieved") and by_id["d02"].retrieval_rank == 1
    assert by_id["d01"].sources == ("gold",)
    assert by_id["d05"].sources == ("retrieved",)
    placebos = [c.doc_id for c in pool.candidates if c.is_placebo]
    assert len(placebos) == 4 and not set(placebos) & {"d01", "d02", "d05", "d06"}
    assert pool.missing_gold == ["nope"]
    assert len(pool.doc_ids) == len(set(pool.doc_ids)) == 2 + 2 + 4


def test_placebos_are_seeded_per_case(corpus: Corpus) -> None:
    case = Case("c1", "q", gold_doc_ids=("d01",))
    a = build_pool(case, corpus, n_placebo=5, seed=3).doc_ids
    b = build_pool(case, corpus, n_placebo=5, seed=3).doc_ids
    c = build_pool(case, corpus, n_placebo=5, seed=4).doc_ids
    other = build_pool(Case("c2", "q", gold_doc_ids=("d01",)), corpus, n_placebo=5, seed=3).doc_ids
    assert a == b and a != c and a != other


def test_cap_keeps_gold_and_placebo_and_drops_low_ranked_retrieved(corpus: Corpus) -> None:
    case = Case("c1", "q", gold_doc_ids=("d01", "d02"))
    retrieved = [f"d{i:02d}" for i in range(10, 20)]
    pool = build_pool(case, corpus, retrieved=retrieved, k=10, n_placebo=3, max_candidates=8, seed=0)
    assert len(pool.candidates) == 8
    kept = [c.doc_id for c in pool.candidates if "retrieved" in c.sources]
    assert kept == retrieved[:3]
    assert pool.dropped == retrieved[3:]
    assert sum(c.is_placebo for c in pool.candidates) == 3


def test_roundtrip_pool_dict(corpus: Corpus) -> None:
    from deltap.mining.pool import Pool

    pool = build_pool(Case("c1", "q", gold_doc_ids=("d01",)), corpus, retrieved=["d03"], n_placebo=2)
    again = Pool.from_dict(pool.to_dict())
    assert again.candidates == pool.candidates


def test_inclusion_vectors_have_rate_pi_and_replay() -> None:
    vecs = np.array([inclusion_vector(trial_seed(0, "c", i), 20, 0.5) for i in range(2000)])
    assert vecs.mean() == pytest.approx(0.5, abs=0.01)
    assert np.array_equal(inclusion_vector(123, 20), inclusion_vector(123, 20))
    assert inclusion_vector(5, 1000, 0.2).mean() == pytest.approx(0.2, abs=0.04)
    with pytest.raises(ValueError):
        inclusion_vector(1, 3, 1.0)


@pytest.mark.parametrize("q", [3, 7, 11, 19, 23, 31, 43, 67, 103])
def test_paley_matrices_are_hadamard(q: int) -> None:
    H = paley_hadamard(q).astype(int)
    assert H.shape == (q + 1, q + 1)
    assert np.array_equal(H @ H.T, (q + 1) * np.eye(q + 1, dtype=int))
    assert np.all(H[:, 0] == 1)  # the constant column; the others are balanced
    with pytest.raises(ValueError, match="prime"):
        paley_hadamard(15)
    with pytest.raises(ValueError, match="prime"):
        paley_hadamard(13)  # prime but ≡ 1 (mod 4)


def test_paley_order_is_the_smallest_block_with_enough_columns() -> None:
    assert [paley_order(m) for m in (1, 3, 4, 8, 12, 19, 20, 24, 31, 32, 60)] == [
        4,
        4,
        8,
        12,
        20,
        20,
        24,
        32,
        32,
        44,
        68,
    ]


@pytest.mark.parametrize("m", [1, 5, 20, 33])
def test_orthogonal_design_blocks_are_balanced_and_orthogonal(m: int) -> None:
    design = InclusionDesign(7, "case", m)
    b = design.block_size
    for block in range(3):
        X = np.array([design.vector(block * b + r) for r in range(b)])
        S = X.astype(int) * 2 - 1
        assert np.all(X.sum(axis=0) == b // 2)  # each candidate in exactly half of the block's trials
        assert np.array_equal(S.T @ S, b * np.eye(m, dtype=int))  # mutually orthogonal columns
    # replayable from (run seed, case, index) alone, in any order, and different for another case or seed
    assert np.array_equal(InclusionDesign(7, "case", m).vector(b + 3), design.vector(b + 3))
    other = [InclusionDesign(8, "case", m), InclusionDesign(7, "case2", m)]
    assert all(any(not np.array_equal(o.vector(i), design.vector(i)) for i in range(b)) for o in other)


def test_orthogonal_design_rows_are_uniform_random_subsets() -> None:
    """Every single trial's context has the Bernoulli(½) design's distribution (the estimand does not move)."""
    rng = np.random.default_rng(0)
    m = 6
    rows = hadamard_blocks(rng, m, (4000,))[:, 5]  # one fixed row position of 4,000 independent blocks
    assert rows.mean() == pytest.approx(0.5, abs=0.02)
    codes = rows.astype(int) @ (1 << np.arange(m))
    counts = np.bincount(codes, minlength=2**m)
    expected = 4000 / 2**m
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 120  # 63 df: the 99.99th percentile is ~113; a non-uniform row distribution lands far above


def test_bernoulli_design_is_the_per_trial_coin_flips() -> None:
    d = InclusionDesign(3, "c", 10, 0.3, "bernoulli")
    assert d.block_size == 1
    assert np.array_equal(d.vector(4), inclusion_vector(trial_seed(3, "c", 4), 10, 0.3))
    with pytest.raises(ValueError, match=r"\(pi 0.5\)"):
        InclusionDesign(3, "c", 10, 0.3)
    with pytest.raises(ValueError, match="design must be"):
        InclusionDesign(3, "c", 10, 0.5, "latin")


def test_canonical_order_ignores_provenance() -> None:
    assert canonical_order(["b", "c", "a"]) == [2, 0, 1]


def test_canonical_order_longest_first_ties_by_id() -> None:
    assert canonical_order(["b", "c", "a", "d"], [10, 30, 10, 5]) == [1, 2, 0, 3]
    with pytest.raises(ValueError):
        canonical_order(["a", "b"], [1])


def _trie_cost(trials: list[list[int]], lengths: list[int]) -> int:
    """Characters a prefix-trie walk evaluates: each distinct (prefix of documents) costs its last document once."""
    seen: set[tuple[int, ...]] = set()
    cost = 0
    for docs in trials:
        for j in range(len(docs)):
            if tuple(docs[: j + 1]) not in seen:
                seen.add(tuple(docs[: j + 1]))
                cost += lengths[docs[j]]
    return cost


def test_longest_first_order_shares_more_prompt_prefix_than_id_order() -> None:
    rng = np.random.default_rng(0)
    ids = [f"doc{i:02d}" for i in range(20)]
    lengths = [int(x) for x in rng.integers(50, 2000, size=20)]
    vectors = [inclusion_vector(trial_seed(0, "case", t), 20) for t in range(64)]
    costs = {}
    for name, order in (("id", canonical_order(ids)), ("length", canonical_order(ids, lengths))):
        costs[name] = _trie_cost([[i for i in order if v[i]] for v in vectors], lengths)
    assert costs["length"] < 0.9 * costs["id"]


# ---------------------------------------------------------------------------------------------------------------
# Exact values against references written out independently (issue 19, mutation testing): a run resumed or replayed
# must draw the very same seeds, blocks and vectors, so the values themselves are the behaviour.


def test_inclusion_vector_is_pcg64_uniforms_below_pi() -> None:
    for seed, m, pi in ((123, 20, 0.5), (9, 50, 0.2), (2**62, 7, 0.9)):
        u = np.random.Generator(np.random.PCG64(seed)).random(m)
        got = inclusion_vector(seed, m, pi)
        assert got.dtype == np.bool_ and got.tolist() == (u < pi).tolist()
    assert inclusion_vector(123, 20).tolist() == inclusion_vector(123, 20, 0.5).tolist()  # the default pi


@pytest.mark.parametrize("pi", [0.0, 1.0, -0.1, 1.5])
def test_inclusion_probability_outside_the_open_interval_is_refused(pi: float) -> None:
    with pytest.raises(ValueError) as info:
        inclusion_vector(1, 3, pi)
    assert str(info.value) == f"inclusion probability pi must be in (0, 1), got {pi}"


def test_is_prime_against_trial_division() -> None:
    from deltap.mining.design import _is_prime

    assert [n for n in range(-3, 130) if _is_prime(n)] == [n for n in range(2, 130) if all(n % d for d in range(2, n))]


def _paley_reference(q: int) -> np.ndarray:
    """Paley type I written out: H = I + S, S = [[0, 1ᵀ], [−1, Q]], Q[i, j] = χ(j − i) by Euler's criterion."""

    def chi(a: int) -> int:
        a %= q
        return 0 if a == 0 else (1 if pow(a, (q - 1) // 2, q) == 1 else -1)

    H = [[0] * (q + 1) for _ in range(q + 1)]
    for i in range(q + 1):
        for j in range(q + 1):
            if i == 0:
                s = 0 if j == 0 else 1
            elif j == 0:
                s = -1
            else:
                s = chi((j - 1) - (i - 1))
            H[i][j] = s + (1 if i == j else 0)
    return np.array([[v * row[0] for v in row] for row in H])


@pytest.mark.parametrize("q", [3, 7, 11, 19])
def test_paley_matrix_is_the_written_out_construction(q: int) -> None:
    H = paley_hadamard(q)
    assert H.dtype == np.int8 and np.array_equal(H, _paley_reference(q))
    assert not H.flags.writeable  # cached: a caller must not be able to corrupt every later block
    with pytest.raises(ValueError) as info:
        paley_hadamard(q + 2)
    assert str(info.value) == f"Paley's construction needs a prime q ≡ 3 (mod 4), got {q + 2}"


def test_paley_order_table() -> None:
    # the smallest prime q ≡ 3 (mod 4) with q ≥ m, plus one; m below 3 (and 0) still gets the 4-row block
    expected = {
        0: 4,
        1: 4,
        2: 4,
        3: 4,
        4: 8,
        7: 8,
        8: 12,
        11: 12,
        12: 20,
        19: 20,
        20: 24,
        23: 24,
        24: 32,
        43: 44,
        44: 48,
    }
    assert {m: paley_order(m) for m in expected} == expected


def _block_reference(seed: int, m: int) -> list[list[bool]]:
    """hadamard_block restated as loops: columns 1..q in a random order (first m), a sign flip per column, rows
    shuffled — in that order of draws from PCG64(seed)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    b = paley_order(m)
    H = _paley_reference(b - 1)
    cols = [int(c) + 1 for c in np.argsort(rng.random(b - 1))[:m]]
    flip = [bool(f) for f in rng.random(m) < 0.5]
    rows = [int(r) for r in np.argsort(rng.random(b))]
    return [[(H[rows[r]][cols[j]] > 0) != flip[j] for j in range(m)] for r in range(b)]


@pytest.mark.parametrize(("seed", "m"), [(1, 3), (42, 5), (7, 11), (2**40, 20)])
def test_hadamard_block_against_the_loop_reference(seed: int, m: int) -> None:
    from deltap.mining.design import hadamard_block

    got = hadamard_block(seed, m)
    assert got.dtype == np.bool_ and got.tolist() == _block_reference(seed, m)


def test_design_vectors_are_the_blocks_of_their_seeds() -> None:
    from deltap.mining.design import hadamard_block

    design = InclusionDesign(5, "case", 6)
    assert design.block_size == 8
    for i in (0, 7, 8, 13, 40):
        block = hadamard_block(trial_seed(5, "case", i // 8, "block"), 6)
        assert design.vector(i).tolist() == block[i % 8].tolist()
    v = design.vector(3)
    v[:] = ~v  # a caller's change to a vector must not reach the cached block
    assert design.vector(3).tolist() == (~v).tolist()
    bern = InclusionDesign(5, "case", 6, 0.25, "bernoulli")
    assert bern.vector(9).tolist() == inclusion_vector(trial_seed(5, "case", 9), 6, 0.25).tolist()


def test_design_errors_are_exact() -> None:
    with pytest.raises(ValueError) as info:
        InclusionDesign(3, "c", 10, 0.3)
    assert str(info.value) == (  # the same message as MiningConfig's: one check
        "the orthogonal design includes each candidate in half of the trials (pi 0.5), got pi 0.3; "
        "use design='bernoulli' (--design bernoulli) for another inclusion probability"
    )
    with pytest.raises(ValueError) as info:
        InclusionDesign(3, "c", 10, 0.5, "latin")
    assert str(info.value) == "design must be one of orthogonal, bernoulli, got 'latin'"
    with pytest.raises(ValueError) as info:
        canonical_order(["a", "b"], [1])
    assert str(info.value) == "1 lengths for 2 documents"
    assert InclusionDesign(3, "c", 4).kind == "orthogonal" and InclusionDesign(3, "c", 4).pi == 0.5


class _RankedRetriever:
    """A retriever over a fixed ranking (best first) that records its calls."""

    name = "ranked"

    def __init__(self, ranking: list[str]) -> None:
        self.ranking = ranking
        self.calls: list[tuple[str, int]] = []

    def search(self, query: str, k: int = 10, filter: object = None) -> list:  # type: ignore[type-arg]
        from deltap.retrieval.base import Hit

        self.calls.append((query, k))
        return [Hit(d, 1.0 / (i + 1), i + 1) for i, d in enumerate(self.ranking[:k])]


def _placebo_reference(seed: int, case_id: str, ids: list[str], n: int) -> list[str]:
    """Placebos restated: a PCG64 generator seeded by SHA-256("deltap|seed|case|placebo"), n draws without
    replacement, kept in the order of ``ids``."""
    import hashlib

    digest = hashlib.sha256(f"deltap|{seed}|{case_id}|placebo".encode()).digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "big")))
    return [ids[i] for i in sorted(rng.choice(len(ids), size=min(n, len(ids)), replace=False))] if n and ids else []


def test_random_placebos_are_the_seeded_draw_from_the_rest_of_the_corpus(corpus: Corpus) -> None:
    case = Case("c1", "q", gold_doc_ids=("d01", "d01", "d07", "gone", "gone"))
    pool = build_pool(case, corpus, retrieved=["d03", "d03", "zz", "d04", "d09"], k=2, n_placebo=5, seed=11)
    rest = [d for d in corpus.ids if d not in {"d01", "d07", "d03", "d04"}]
    placebo = _placebo_reference(11, "c1", rest, 5)
    assert pool.doc_ids == ["d01", "d07", "d03", "d04", *placebo]  # retrieved: deduplicated, in corpus, first k
    assert [c.sources for c in pool.candidates[:4]] == [("gold",), ("gold",), ("retrieved",), ("retrieved",)]
    assert [c.retrieval_rank for c in pool.candidates] == [None, None, 1, 2, *[None] * 5]
    assert pool.missing_gold == ["gone"] and pool.dropped == [] and pool.placebo_note is None
    assert [c.is_placebo for c in pool.candidates] == [False] * 4 + [True] * 5
    small = Corpus([Document(f"e{i}", "t") for i in range(4)])
    assert build_pool(Case("c", "q", gold_doc_ids=("e0",)), small, n_placebo=9).doc_ids == ["e0", "e1", "e2", "e3"]
    assert build_pool(Case("c", "q", gold_doc_ids=("e0",)), small, n_placebo=0).doc_ids == ["e0"]


def test_the_retriever_gives_the_retrieved_part(corpus: Corpus) -> None:
    ret = _RankedRetriever(["d05", "nope", "d01", "d06", "d08"])
    pool = build_pool(Case("c1", "the query", gold_doc_ids=("d01",)), corpus, ret, k=4, n_placebo=0)
    assert ret.calls == [("the query", 4)]
    assert [(c.doc_id, c.sources, c.retrieval_rank) for c in pool.candidates] == [
        ("d01", ("gold", "retrieved"), 2),
        ("d05", ("retrieved",), 1),
        ("d06", ("retrieved",), 3),
    ]
    ret.calls.clear()
    assert build_pool(Case("c1", "q", gold_doc_ids=("d01",)), corpus, ret, k=0, n_placebo=0).doc_ids == ["d01"]
    assert ret.calls == []  # k = 0: no search at all
    pre = build_pool(Case("c1", "q"), corpus, ret, retrieved=["d02"], k=4, n_placebo=0)
    assert pre.doc_ids == ["d02"] and ret.calls == []  # precomputed ids are used instead of searching


def test_similar_placebos_come_from_far_down_the_ranking() -> None:
    from deltap.mining.pool import SIMILAR_RANKS

    assert SIMILAR_RANKS == (21, 100)
    big = Corpus([Document(f"d{i:03d}", "t") for i in range(150)])
    ranking = [f"d{i:03d}" for i in range(149, -1, -1)]  # d149 first
    ret = _RankedRetriever(ranking)
    case = Case("c9", "q", gold_doc_ids=("d120",))  # rank 30: inside the window, but gold
    pool = build_pool(case, big, ret, k=3, n_placebo=6, seed=2, placebo_kind="similar")
    assert ret.calls == [("q", 3), ("q", 100)]
    window = [d for d in ranking[20:100] if d != "d120"]
    assert [c.doc_id for c in pool.candidates if c.is_placebo] == _placebo_reference(2, "c9", window, 6)
    assert pool.placebo_note is None
    # a short ranking: ranks 21-25 hold 5 documents (one of them gold), the rest are drawn at random to fill up
    short = _RankedRetriever(ranking[:25])
    case = Case("c9", "q", gold_doc_ids=("d128",))  # rank 22
    pool = build_pool(case, big, short, k=3, n_placebo=6, seed=2, placebo_kind="similar")
    placebos = [c.doc_id for c in pool.candidates if c.is_placebo]
    window = [d for d in ranking[20:25] if d != "d128"]
    assert placebos[:4] == window  # all four, in window order (a sorted draw of all of them)
    assert len(placebos) == 6 and len(set(placebos)) == 6
    assert not set(placebos[4:]) & {"d128", *ranking[:3], *window}
    assert pool.placebo_note == "4 similar placebos in the retriever's ranks 21-100, 2 drawn at random to fill up"
    no_placebo = build_pool(
        case, big, None, n_placebo=0, placebo_kind="similar"
    )  # nothing to draw: no retriever needed
    assert no_placebo.doc_ids == ["d128"]


def test_pool_argument_errors_are_exact(corpus: Corpus) -> None:
    case = Case("c1", "q", gold_doc_ids=("d01",))
    with pytest.raises(ValueError) as info:
        build_pool(case, corpus, max_candidates=0)
    assert str(info.value) == "max_candidates must be positive, got 0"
    with pytest.raises(DeltapError) as info:
        build_pool(case, corpus, placebo_kind="near")
    assert str(info.value) == "placebo kind must be one of random, similar, got 'near'"
    with pytest.raises(DeltapError) as info:
        build_pool(case, corpus, placebo_kind="similar")
    assert str(info.value) == (
        "placebo kind 'similar' draws placebos from far down a retriever's ranking: give a retriever (--retriever) "
        "or use --placebo-kind random"
    )
    assert len(build_pool(case, corpus, max_candidates=1, n_placebo=0).candidates) == 1  # a cap of 1 is allowed


def test_cap_drops_gold_beyond_it_then_placebos(corpus: Corpus) -> None:
    gold = ("d01", "d02", "d03", "d04", "d05")
    case = Case("c1", "q", gold_doc_ids=gold)
    pool = build_pool(case, corpus, retrieved=["d10", "d11"], k=2, n_placebo=3, max_candidates=6, seed=4)
    assert pool.doc_ids[:3] == ["d01", "d02", "d03"] and sum(c.is_placebo for c in pool.candidates) == 3
    assert pool.dropped == ["d04", "d05", "d10", "d11"]
    # more placebos than the cap: no gold at all, the first placebos kept, the others listed as dropped
    pool = build_pool(Case("c1", "q", gold_doc_ids=("d01", "d02")), corpus, n_placebo=5, max_candidates=3, seed=4)
    placebo = _placebo_reference(4, "c1", [d for d in corpus.ids if d not in {"d01", "d02"}], 5)
    assert pool.doc_ids == placebo[:3]
    assert pool.dropped == ["d01", "d02", *placebo[3:]]
    # exactly at the cap: nothing dropped
    exact = build_pool(
        Case("c1", "q", gold_doc_ids=("d01", "d02")), corpus, retrieved=["d10"], k=1, n_placebo=2, max_candidates=5
    )
    assert len(exact.candidates) == 5 and exact.dropped == []


def test_a_gold_document_dropped_by_the_cap_is_listed_once(corpus: Corpus) -> None:
    # d03 is gold (dropped: beyond the cap) and retrieved: it must not come back as a "retrieved" candidate, and it
    # is listed once among the dropped ids.
    case = Case("c1", "q", gold_doc_ids=("d01", "d02", "d03"))
    pool = build_pool(case, corpus, retrieved=["d03", "d10"], k=2, n_placebo=1, max_candidates=3, seed=0)
    assert pool.doc_ids[:2] == ["d01", "d02"] and pool.candidates[2].is_placebo
    assert pool.dropped == ["d03", "d10"]


def test_pool_dict_round_trip_keeps_everything() -> None:
    from deltap.mining.pool import Candidate, Pool

    pool = Pool("c1", [Candidate("a", ("gold", "retrieved"), 2), Candidate("p", ("placebo",))], ["m"], ["x"], "note")
    data = pool.to_dict()
    assert data == {
        "case_id": "c1",
        "candidates": [
            {"doc_id": "a", "sources": ["gold", "retrieved"], "rank": 2},
            {"doc_id": "p", "sources": ["placebo"], "rank": None},
        ],
        "missing_gold": ["m"],
        "dropped": ["x"],
        "placebo_note": "note",
    }
    assert Pool.from_dict(data) == pool
    bare = Pool.from_dict({"case_id": 7, "candidates": [{"doc_id": 1, "sources": ["gold"]}]})
    assert bare == Pool("7", [Candidate("1", ("gold",), None)], [], [], None)
    assert "placebo_note" not in bare.to_dict()


def test_build_pool_defaults() -> None:
    big = Corpus([Document(f"d{i:03d}", "t") for i in range(100)])
    ret = _RankedRetriever([f"d{i:03d}" for i in range(99, 59, -1)])
    gold = tuple(f"d{i:03d}" for i in range(28))
    pool = build_pool(Case("cd", "q", gold_doc_ids=gold), big, ret)  # k 10, 5 placebos, cap 30, seed 0
    assert pool.case_id == "cd" and ret.calls == [("q", 10)]
    retrieved = [f"d{i:03d}" for i in range(99, 89, -1)]
    placebo = _placebo_reference(0, "cd", [d for d in big.ids if d not in set(gold) | set(retrieved)], 5)
    assert pool.doc_ids == [*gold[:25], *placebo]  # 28 gold + 5 placebos > 30: three gold and all retrieved dropped
    assert pool.dropped == [*gold[25:], *retrieved]


def test_small_retrieval_and_similar_pools() -> None:
    big = Corpus([Document(f"d{i:03d}", "t") for i in range(150)])
    ranking = [f"d{i:03d}" for i in range(149, -1, -1)]
    ret = _RankedRetriever(ranking)
    one = build_pool(Case("c", "q"), big, ret, k=1, n_placebo=0)
    assert one.doc_ids == ["d149"]  # k = 1 still searches
    single = build_pool(Case("c", "q"), big, ret, k=0, n_placebo=1, seed=3, placebo_kind="similar")
    assert single.doc_ids == _placebo_reference(3, "c", ranking[20:100], 1)  # one similar placebo: from the window
    with pytest.raises(DeltapError):
        build_pool(Case("c", "q"), big, None, n_placebo=1, placebo_kind="similar")


def test_similar_fill_up_draws_continue_the_same_generator() -> None:
    import hashlib

    big = Corpus([Document(f"d{i:03d}", "t") for i in range(150)])
    ranking = [f"d{i:03d}" for i in range(149, -1, -1)]
    short = _RankedRetriever(ranking[:24])  # ranks 21-24: a window of four
    pool = build_pool(Case("c9", "q"), big, short, k=2, n_placebo=7, seed=5, placebo_kind="similar")
    digest = hashlib.sha256(b"deltap|5|c9|placebo").digest()
    rng = np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "big")))
    window = ranking[20:24]
    first = [window[i] for i in sorted(rng.choice(4, size=4, replace=False))]
    rest = [d for d in big.ids if d not in set(ranking[:2]) | set(first)]
    fill = [rest[i] for i in sorted(rng.choice(len(rest), size=3, replace=False))]
    assert [c.doc_id for c in pool.candidates if c.is_placebo] == first + fill
