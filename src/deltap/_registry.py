"""The one registry implementation behind every extension point (checker, solver and executor kinds).

A :class:`Registry` is a ``dict`` from a kind's name to what the family says about it (a ``CheckerKindInfo``,
``SolverKindInfo``, ``ExecutorKindInfo``), with registration that refuses to overwrite by accident and a lookup whose
error lists the registered names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from deltap.errors import DeltapError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(dict[str, T]):
    """Kinds by name, in registration order (built-ins first).

    Args:
        what: What a key is, for messages (``checker kind``, ``solver kind``, ``executor``).
        valid: Whether a name may be registered (default: any non-empty name).
    """

    def __init__(self, what: str, valid: Callable[[str], bool] = bool) -> None:
        super().__init__()
        self.what = what
        self._valid = valid

    def register(self, name: str, item: T, replace: bool = False) -> T:
        """Add ``item`` as ``name`` (``replace=True`` to redefine one); returns ``item``.

        Raises:
            DeltapError: a name the registry does not accept, or one already taken (and ``replace`` is false).
        """
        if not self._valid(name):
            raise DeltapError(f"{name!r} cannot name a {self.what}")
        if name in self and not replace:
            raise DeltapError(f"{self.what} {name!r} is already registered")
        self[name] = item
        return item

    def lookup(self, name: str) -> T:
        """The entry ``name``.

        Raises:
            DeltapError: an unknown name, listing the registered ones.
        """
        item = self.get(name)
        if item is None:
            raise DeltapError(f"unknown {self.what} {name!r}; expected one of {', '.join(self)}")
        return item
