"""The checker registry: every checker kind, its factory and what it declares about itself.

A case's :class:`~deltap.cases.CheckerSpec` names a *kind*; this table says what that kind is. It sits below
``cases.py`` (which validates a spec's kind against it) and names each factory as ``"module:function"``, imported
only when a checker is built, so reading cases never imports a checker. Everything that used to test a kind's name
(``make_checker``, the run manifest's file digests, ``--answer-grammar``, ``--require-separate``, the sandbox
warning) asks the kind's :class:`CheckerKindInfo` instead. A new checker kind is one file with its checker and a
``build(params)`` function, plus one :func:`register_checker_kind` call (here for a built-in kind, anywhere for a
plug-in).

The registry also owns how a checker's **id** is written (:func:`checker_id`): ``kind(positional,...,key=value,...)``,
e.g. ``string_match(case_sensitive=False,qualified=either,grammar=grader)`` or
``pytest(test_x.py,module=m,...,sandbox=bwrap,process=separate)``. Ids are stored with every trial, so their text
never changes for the same checker; :func:`checker_id_parts` reads the ``key=value`` parts back.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from deltap._registry import Registry
from deltap.errors import DeltapError

__all__ = [
    "CHECKER_KINDS",
    "CheckerKindInfo",
    "checker_id",
    "checker_id_parts",
    "checker_kind",
    "checker_kinds",
    "register_checker_kind",
]


@dataclass(frozen=True)
class CheckerKindInfo:
    """One checker kind.

    Args:
        name: The kind, as written in a :class:`~deltap.cases.CheckerSpec` and in benchmark files.
        factory: ``"package.module:function"``: called with the spec's params (a read-only mapping), returns a
            :class:`~deltap.checkers.base.Checker` or raises :class:`~deltap.errors.DeltapError` on bad params.
            ``None``: the kind builds no checker (``unavailable`` says why).
        summary: One line for ``--help`` and error messages.
        grammar: The checker reads replies by an answer grammar (``params["grammar"]``: ``grader`` / ``protocol`` /
            ``strict`` / ``lenient``),
            so ``deltap mine --answer-grammar`` applies to it.
        sandboxed: The checker runs the candidate's code (in a sandbox): ``--require-separate`` and the sandbox's
            warnings apply to it.
        file_params: Params naming files whose *content* decides verdicts (the run manifest records digests of
            them: the spec holds only their paths).
        file_list_params: Params naming lists of such files.
        module_params: Params naming a ``"module:function"`` whose module source decides verdicts.
        unavailable: Why a kind without a factory builds no checker (the error :func:`build` raises).
    """

    name: str
    factory: str | None
    summary: str = ""
    grammar: bool = False
    sandboxed: bool = False
    file_params: tuple[str, ...] = ()
    file_list_params: tuple[str, ...] = ()
    module_params: tuple[str, ...] = ()
    unavailable: str = ""

    def build(self, params: Mapping[str, Any]) -> Any:
        """A checker of this kind from ``params`` (a :class:`deltap.checkers.base.Checker`; typed as such by
        :func:`deltap.checkers.make_checker`, since this module sits below the checkers).

        Raises:
            DeltapError: a kind without a factory, a factory that cannot be imported, or bad params.
        """
        if self.factory is None:
            raise DeltapError(self.unavailable or f"checker kind {self.name!r} builds no checker")
        module, _, name = self.factory.partition(":")
        try:
            fn: Callable[[Mapping[str, Any]], Any] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise DeltapError(f"checker kind {self.name!r}: cannot import its factory {self.factory!r}: {exc}") from exc
        return fn(params)


#: every checker kind by name (built-ins first, then plug-ins in registration order)
CHECKER_KINDS: Registry[CheckerKindInfo] = Registry("checker kind", str.isidentifier)


def register_checker_kind(info: CheckerKindInfo, replace: bool = False) -> CheckerKindInfo:
    """Add a checker kind (``replace=True`` to redefine one). Returns ``info``.

    Raises:
        DeltapError: the name is taken (and ``replace`` is false), or is not a plain identifier.
    """
    return CHECKER_KINDS.register(info.name, info, replace)


def checker_kinds(buildable: bool = False) -> tuple[str, ...]:
    """The registered kind names (``buildable=True``: only those with a factory, i.e. not ``none``)."""
    return tuple(n for n, k in CHECKER_KINDS.items() if k.factory is not None or not buildable)


def checker_kind(name: str) -> CheckerKindInfo:
    """The registered kind ``name``.

    Raises:
        DeltapError: an unknown kind, listing the known ones.
    """
    return CHECKER_KINDS.lookup(name)


def checker_id(kind: str, *positional: object, **parts: object) -> str:
    """A checker's id: ``kind(positional,...,key=value,...)`` in the order given (``kind()`` without either)."""
    items = [str(p) for p in positional] + [f"{k}={v}" for k, v in parts.items()]
    return f"{kind}({','.join(items)})"


def checker_id_parts(checker_id: str) -> dict[str, str]:
    """The ``key=value`` parts of a checker id (``{"grammar": "strict", ...}``); ``{}`` for an id without any.

    Values holding commas (a regex pattern) are not ``key=value`` parts: only parts after the positional ones are
    read, from the right, up to the first one without ``=``.
    """
    _, paren, body = checker_id.partition("(")
    if not paren or not body.endswith(")"):
        return {}
    out: dict[str, str] = {}
    for item in reversed(body[:-1].split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.isidentifier():
            break
        out[key] = value
    return dict(reversed(list(out.items())))


for _info in (
    CheckerKindInfo(
        "string_match",
        "deltap.checkers.string_match:build",
        "one accepted string (params: answers, case_sensitive, qualified, grammar)",
        grammar=True,
    ),
    CheckerKindInfo(
        "multiple_choice",
        "deltap.checkers.choice:build",
        "one option letter (params: correct, options, grammar)",
        grammar=True,
    ),
    CheckerKindInfo(
        "regex", "deltap.checkers.regex:build", "a regular expression (params: pattern, mode, ignore_case)"
    ),
    CheckerKindInfo(
        "pytest",
        "deltap.checkers.pytest_checker:build",
        "hidden tests run on the candidate in a sandbox (params: test_file, module_name, fixed_file, limits...)",
        sandboxed=True,
        file_params=("test_file", "fixed_file", "unfixed_file"),
        file_list_params=("support_files",),
    ),
    CheckerKindInfo(
        "python",
        "deltap.checkers.python_callable:build",
        "a Python function fn(case, answer) (params: callable, 'module:function')",
        module_params=("callable",),
    ),
    CheckerKindInfo(
        "none",
        None,
        "no checker (evaluation only)",
        unavailable=(
            "this case has no checker (kind 'none', e.g. a BEIR query): it can be evaluated but not mined by 'pass'; "
            "give it a reference answer and use the 'logprob' outcome, or add a checker"
        ),
    ),
):
    register_checker_kind(_info)
