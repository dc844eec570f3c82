"""Lazy public names for a package ``__init__``: ``import deltap`` (or a subpackage) imports nothing heavy, and a
name's defining module is imported the first time the name is used (ir_measures' ``lazylibs`` pattern).

A package states one table ``{public name: defining module}``; :func:`lazy_exports` derives ``__getattr__``,
``__dir__`` and ``__all__`` from it. Static type checkers cannot follow ``__getattr__``, so such a package also imports
its names under ``if TYPE_CHECKING:``; ``tests/unit/project/test_public_api.py`` checks that block against the table.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str], extra: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` from ``table`` (plus ``extra`` names defined eagerly).

    The first access to a name imports its module and caches the value in the package's namespace, so later
    accesses cost a dict lookup.
    """
    names = sorted([*table, *extra])

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__, names
