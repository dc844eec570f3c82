"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

import pytest

from deltap.endtoend.planted import planted_scenario, run_planted


@pytest.fixture(scope="package")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The planted end-to-end run (60 questions, 8 repeats) that test_engine and test_validity both read: built once
    per test session (a package fixture: the parallel scheduler keeps its tests in one worker). Read-only."""
    return run_planted(planted_scenario(60, seed=3), repeats=8, seed=3, out=tmp_path_factory.mktemp("planted") / "run")
