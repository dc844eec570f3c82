"""Shared fixtures: paths to the real data (tests skip with a reason when it is absent).

The data folder is ``$DELTAP_SHARED_DATA`` when that variable is set (a folder holding ``cranfield/`` and ``adk/``),
else ``../shared/data`` beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENV_VAR = "DELTAP_SHARED_DATA"


def shared_data_dir(environ: dict[str, str] | None = None) -> Path:
    """Where the shared data lives: ``$DELTAP_SHARED_DATA`` if set (and not empty), else ``../shared/data``."""
    env = os.environ if environ is None else environ
    configured = env.get(ENV_VAR, "").strip()
    return Path(configured).expanduser() if configured else REPO.parent / "shared" / "data"


SHARED_DATA = shared_data_dir()


def require_shared(path: Path) -> Path:
    """``path`` if it exists; otherwise skip the test, saying where it looked and how to point it elsewhere."""
    if not path.exists():
        pytest.skip(
            f"shared data not found at {path}: set {ENV_VAR} to the folder holding cranfield/ and adk/ "
            "(default: ../shared/data beside the checkout)"
        )
    return path


_require = require_shared  # the older private name, still used by some test modules


@pytest.fixture(scope="session")
def cranfield_dir() -> Path:
    return require_shared(SHARED_DATA / "cranfield")


@pytest.fixture(scope="session")
def adk_dir() -> Path:
    return require_shared(SHARED_DATA / "adk")
