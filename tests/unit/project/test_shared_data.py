"""``DELTAP_SHARED_DATA`` points the tests at the shared data wherever it lives, and the skip reason says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ENV_VAR, REPO, require_shared, shared_data_dir


def test_the_environment_variable_wins(tmp_path: Path) -> None:
    assert shared_data_dir({ENV_VAR: str(tmp_path)}) == tmp_path


def test_without_it_the_folder_beside_the_checkout_is_used() -> None:
    assert shared_data_dir({}) == REPO.parent / "shared" / "data"
    assert shared_data_dir({ENV_VAR: "  "}) == REPO.parent / "shared" / "data"


def test_the_skip_reason_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception) as info:
        require_shared(tmp_path / "absent")
    assert ENV_VAR in str(info.value) and str(tmp_path / "absent") in str(info.value)


def test_an_existing_folder_is_returned(tmp_path: Path) -> None:
    assert require_shared(tmp_path) == tmp_path
