"""The trial seed: stable, distinct per (run seed, case, kind, index), and the documented hash (moved from
tests/unit/mining/test_pool_and_design.py with the seed itself)."""

from __future__ import annotations

import pytest

from deltap.trials.seeds import trial_seed


def test_trial_seeds_are_stable_and_distinct() -> None:
    s = trial_seed(0, "case", 5)
    assert s == trial_seed(0, "case", 5)
    assert len({trial_seed(0, "case", i) for i in range(1000)}) == 1000
    assert (
        s != trial_seed(1, "case", 5) and s != trial_seed(0, "case2", 5) and s != trial_seed(0, "case", 5, "coalition")
    )
    assert 0 <= s < 2**63


def _seed_reference(run_seed: int, case_id: str, index: int, kind: str) -> int:
    import hashlib

    digest = hashlib.sha256("|".join(["deltap", str(run_seed), case_id, kind, str(index)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") // 2  # the top 63 bits


@pytest.mark.parametrize(
    ("run_seed", "case_id", "index", "kind"),
    [(0, "case", 5, "design"), (7, "c/ü", 0, "block"), (3, "q", 99, "coalition")],
)
def test_trial_seed_is_the_documented_hash(run_seed: int, case_id: str, index: int, kind: str) -> None:
    assert trial_seed(run_seed, case_id, index, kind) == _seed_reference(run_seed, case_id, index, kind)
    assert trial_seed(run_seed, case_id, index) == _seed_reference(
        run_seed, case_id, index, "design"
    )  # the default kind
