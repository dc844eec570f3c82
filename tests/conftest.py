"""Shared fixtures: paths to the real data in ../shared/data (tests skip with a reason when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (CI puts ../shared beside the checkout)")
    return path


@pytest.fixture(scope="session")
def cranfield_dir() -> Path:
    return _require(SHARED_DATA / "cranfield")


@pytest.fixture(scope="session")
def adk_dir() -> Path:
    return _require(SHARED_DATA / "adk")
