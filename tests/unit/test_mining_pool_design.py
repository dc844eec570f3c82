"""Candidate pools (provenance, merging, cap, placebo seeding), per-trial seeds and the trial log."""

from __future__ import annotations

from pathlib import Path

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
    trial_seed,
)
from deltap.mining.pool import build_pool
from deltap.mining.trials import TrialLog, TrialRecord


@pytest.fixture()
def corpus() -> Corpus:
    return Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(30)])


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


def test_trial_seeds_are_stable_and_distinct() -> None:
    s = trial_seed(0, "case", 5)
    assert s == trial_seed(0, "case", 5)
    assert len({trial_seed(0, "case", i) for i in range(1000)}) == 1000
    assert s != trial_seed(1, "case", 5) and s != trial_seed(0, "case2", 5) and s != trial_seed(0, "case", 5, "coalition")
    assert 0 <= s < 2**63


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
    assert [paley_order(m) for m in (1, 3, 4, 8, 12, 19, 20, 24, 31, 32, 60)] == [4, 4, 8, 12, 20, 20, 24, 32, 32, 44, 68]


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
    with pytest.raises(ValueError, match="pi = 0.5"):
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


def _rec(i: int, kind: str = "design") -> TrialRecord:
    return TrialRecord("c1", kind, i, 42 + i, "0101", "h", "ans", "pass", 1.0, 0.01, "sim", "chk")


def test_trial_log_roundtrip_and_no_rewrite(tmp_path: Path) -> None:
    with TrialLog(tmp_path / "t.sqlite") as log:
        log.append(_rec(0))
        log.append(_rec(1))
        log.append(_rec(0, "preflight_none"))
        assert [r.trial_index for r in log.trials("c1", "design")] == [0, 1]
        assert log.count() == 3
        with pytest.raises(DeltapError, match="UNIQUE constraint failed"):  # one line for the CLI, not a traceback
            log.append(_rec(1))
    with TrialLog(tmp_path / "t.sqlite") as log:
        assert log.trials("c1", "design")[1] == _rec(1)
        mode = log._db.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def test_trial_log_refuses_a_different_configuration(tmp_path: Path) -> None:
    with TrialLog(tmp_path / "t.sqlite") as log:
        log.check_config({"seed": 1, "budget": 64, "workers": 1}, ("seed", "budget"))
    with TrialLog(tmp_path / "t.sqlite") as log:
        log.check_config({"seed": 1, "budget": 64, "workers": 4}, ("seed", "budget"))  # workers do not matter
        with pytest.raises(DeltapError, match="budget"):
            log.check_config({"seed": 1, "budget": 128}, ("seed", "budget"))


def test_trial_log_rejects_a_non_database(tmp_path: Path) -> None:
    bad = tmp_path / "t.sqlite"
    bad.write_text("not a database at all" * 100)
    with pytest.raises(DeltapError, match="not a deltap trial log"):
        TrialLog(bad)
