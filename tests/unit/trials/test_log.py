"""The trial log: round trip, one row per key, the configuration check (moved from
tests/unit/mining/test_pool_and_design.py with the log itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.errors import DeltapError
from deltap.trials.log import TrialLog, TrialRecord


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


def test_the_refusal_names_the_remedy_the_caller_gives(tmp_path: Path) -> None:
    # deltap endtoend's own log asks for RUN_DIR/endtoend to be deleted, not for another --out (it has none)
    with TrialLog(tmp_path / "t.sqlite") as log:
        log.check_config({"seed": 1}, ("seed",))
    with TrialLog(tmp_path / "t.sqlite") as log:
        with pytest.raises(DeltapError, match=r"seed: log has 1, this run 2\); resume with the same options or choose"):
            log.check_config({"seed": 2}, ("seed",))
        with pytest.raises(DeltapError, match=r"or delete RUN_DIR/endtoend to start over$"):
            log.check_config({"seed": 2}, ("seed",), remedy="delete RUN_DIR/endtoend to start over")
