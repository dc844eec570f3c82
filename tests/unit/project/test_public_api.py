"""The public names: `deltap.__all__` matches what the package exports, and every name resolves."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import deltap

#: packages whose names are lazy (deltap/_lazy.py): each keeps a table, and TYPE_CHECKING imports for type checkers
LAZY_PACKAGES = ("deltap", "deltap.evaluation", "deltap.retrieval", "deltap.execution", "deltap.trials")


def _type_checking_imports(package: str = "deltap") -> dict[str, str]:
    """``name -> module`` of the ``if TYPE_CHECKING:`` imports in the package's ``__init__.py`` (what IDEs and mypy
    see)."""
    tree = ast.parse(Path(importlib.import_module(package).__file__ or "").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.dump(imp)
                for alias in imp.names:
                    out[alias.asname or alias.name] = imp.module
    return out


def test_all_matches_the_lazy_table_and_the_typed_imports() -> None:
    # Three independent spellings of the public API must agree: __all__, the lazy-import table that makes names
    # resolve at run time, and the TYPE_CHECKING imports that make them visible to type checkers.
    lazy = dict(deltap._LAZY)
    typed = _type_checking_imports()
    assert set(deltap.__all__) == set(lazy) | {"__version__"}
    assert typed == lazy, {
        n: (lazy.get(n), typed.get(n)) for n in set(lazy) | set(typed) if lazy.get(n) != typed.get(n)
    }
    assert deltap.__all__ == sorted(deltap.__all__) and len(set(deltap.__all__)) == len(deltap.__all__)
    assert dir(deltap) == deltap.__all__


@pytest.mark.parametrize("package", LAZY_PACKAGES[1:])
def test_subpackage_names_agree_with_their_typed_imports(package: str) -> None:
    mod = importlib.import_module(package)
    lazy = dict(mod._LAZY)
    typed = {n: m for n, m in _type_checking_imports(package).items() if n in lazy or m != "deltap.retrieval.base"}
    assert typed == lazy, {
        n: (lazy.get(n), typed.get(n)) for n in set(lazy) | set(typed) if lazy.get(n) != typed.get(n)
    }
    assert set(lazy) <= set(mod.__all__)
    for name, module_name in lazy.items():
        assert getattr(mod, name) is getattr(importlib.import_module(module_name), name), (package, name)


def test_every_public_name_resolves_to_its_defining_module() -> None:
    for name, module_name in deltap._LAZY.items():
        value = getattr(deltap, name)
        module = importlib.import_module(module_name)
        assert value is getattr(module, name), name
        exported = getattr(module, "__all__", None)
        if exported is not None:  # the defining module lists it too (no private name made public by accident)
            assert name in exported, (name, module_name)
        if name not in {"Qrels", "Run"} and (inspect.isclass(value) or inspect.isfunction(value)):
            assert value.__module__.startswith("deltap"), (name, value.__module__)
    assert isinstance(deltap.__version__, str) and deltap.__version__.count(".") == 2


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


def test_the_version_is_written_once() -> None:
    # deltap/_version.py is the one source: pyproject.toml declares the version dynamic (hatch reads that file), and
    # the installed metadata agrees with the package.
    import importlib.metadata

    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

    root = Path(deltap.__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/deltap/_version.py"
    assert importlib.metadata.version("deltap") == deltap.__version__
