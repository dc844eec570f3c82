"""Both paths of the dict evaluation: the compiled accelerator (``deltap.evaluation._accel``) and pure Python.

``compiled_accelerator`` is the installed module when it is built and current, else one compiled now into a
temporary folder by ``hatch_build.py`` (what an install does), so a checkout that was never built still tests the C
loops; ``None`` (the accelerated cases skip, saying why) only where this machine cannot compile it. ``dict_path``
runs a whole test module once per path.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from deltap.evaluation import accel

REPO = Path(__file__).resolve().parents[3]


def load_hatch_build() -> ModuleType:
    """``hatch_build.py`` (the build hook at the top of the checkout) as a module."""
    spec = importlib.util.spec_from_file_location("hatch_build", REPO / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_extension(path: Path) -> ModuleType:
    """The compiled accelerator at ``path`` (any folder), under its package name."""
    spec = importlib.util.spec_from_file_location("deltap.evaluation._accel", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_why_not: list[str] = []


@pytest.fixture(scope="session")
def compiled_accelerator(tmp_path_factory: pytest.TempPathFactory) -> ModuleType | None:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(accel.ENV, raising=False)
        installed = accel.accelerator()
    if installed is not None:
        return installed
    if not (REPO / "hatch_build.py").is_file():  # a copy of the tests without the build hook (mutmut's mutants/)
        _why_not.append(f"no hatch_build.py in {REPO}")
        return None
    env = {k: v for k, v in os.environ.items() if k != accel.ENV}
    built, said = load_hatch_build().build(tmp_path_factory.mktemp("accel"), env=env)
    if built is None:
        _why_not.append(said)
        return None
    return load_extension(built)


@pytest.fixture(scope="module", params=accel.MODES, ids=["accelerated", "pure-python"])
def dict_path(request: pytest.FixtureRequest, compiled_accelerator: ModuleType | None) -> Iterator[str]:
    """Every test of the module under one path: ``accelerated`` (the compiled loops) or ``pure Python``."""
    with pytest.MonkeyPatch.context() as mp:
        if request.param == accel.MODES[1]:
            mp.setenv(accel.ENV, "0")
        else:
            if compiled_accelerator is None:
                pytest.skip(f"the accelerator cannot be built here: {' '.join(_why_not)}")
            mp.delenv(accel.ENV, raising=False)
            mp.setattr(
                accel, "_load", lambda: (compiled_accelerator, f"compiled module {compiled_accelerator.__file__}")
            )
        assert accel.accelerator_mode() == request.param
        yield request.param
