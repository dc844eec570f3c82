"""The public names: `deltap.__all__` matches what the package exports, and every name resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import deltap


def test_all_matches_public_names() -> None:
    public = {name for name in dir(deltap) if not name.startswith("_")} | {"__version__"}
    assert set(deltap.__all__) == public
    assert deltap.__all__ == sorted(deltap.__all__)


def test_every_public_name_resolves() -> None:
    for name in deltap.__all__:
        value = getattr(deltap, name)
        assert value is not None, name
        if name not in {"__version__", "Qrels", "Run"} and hasattr(value, "__module__"):
            assert value.__module__.startswith("deltap"), (name, value.__module__)


def test_import_is_light_and_side_effect_free() -> None:
    code = "import sys, deltap; heavy = [m for m in ('torch', 'numpy', 'llama_cpp', 'qdrant_client', 'yaml', 'typer') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_attribute() -> None:
    mod = importlib.import_module("deltap")
    try:
        mod.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")
