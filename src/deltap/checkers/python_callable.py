"""Custom checker: a Python callable ``module:function``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["CallableChecker", "build", "load_callable"]


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``"package.module:function"``.

    Raises:
        DeltapError: bad spec, module not importable, or attribute missing / not callable.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise DeltapError(f"python checker: params['callable'] must be 'module:function', got {spec!r}")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DeltapError(f"python checker: cannot import {module_name!r} ({exc}); is it on sys.path?") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise DeltapError(f"python checker: {module_name!r} has no attribute {attr!r}")
    if not callable(obj):
        raise DeltapError(f"python checker: {spec!r} is not callable")
    return obj


class CallableChecker:
    """Runs ``fn(case, answer)`` in-process (trusted code; untrusted code belongs in the pytest sandbox).

    The function returns a ``bool``, a ``(bool, detail)`` pair or a :class:`Verdict`. An exception it raises
    is a checker crash: outcome ``error`` (never ``fail``).

    Args:
        fn: The callable, or a ``"module:function"`` string.
    """

    def __init__(self, fn: Callable[..., Any] | str) -> None:
        self.name = fn if isinstance(fn, str) else f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        self.fn = load_callable(fn) if isinstance(fn, str) else fn
        self.id = checker_id("python", self.name)

    def check(self, case: Case, answer: str) -> Verdict:
        try:
            out = self.fn(case, answer)
        except Exception as exc:  # a crash of the user's checker is an infrastructure error
            return Verdict("error", None, f"checker {self.name} raised {type(exc).__name__}: {exc}")
        if isinstance(out, Verdict):
            return out
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], bool):
            return Verdict("pass" if out[0] else "fail", None, str(out[1]))
        if isinstance(out, bool):
            return Verdict("pass" if out else "fail", None, "")
        return Verdict(
            "error",
            None,
            f"checker {self.name} returned {type(out).__name__}; expected bool, (bool, str) or Verdict",
        )


def build(params: Mapping[str, Any]) -> CallableChecker:
    """The ``python`` kind's factory (:mod:`deltap.checker_kinds`): ``callable`` (``"module:function"``)."""
    return CallableChecker(params.get("callable", ""))
