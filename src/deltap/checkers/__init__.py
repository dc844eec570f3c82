"""Checkers: decide whether a solver's answer to a case is a success (``pass`` / ``fail`` / ``error``).

``make_checker(spec)`` builds one from a case's :class:`~deltap.cases.CheckerSpec`:

=================== ==================================================================================
kind                params
=================== ==================================================================================
``string_match``    ``answers`` (list), optional ``case_sensitive`` (False), ``qualified`` (``either``),
                    ``grammar`` (``strict``/``lenient``, see :mod:`deltap.checkers.grammar`)
``multiple_choice`` ``correct`` (letter), ``options`` (letter -> text), optional ``grammar`` (``strict``)
``regex``           ``pattern``, optional ``mode`` (``search``/``fullmatch``), ``ignore_case``
``python``          ``callable`` (``"module:function"``), called as ``fn(case, answer)``
``pytest``          ``test_file``, ``module_name``, optional ``fixed_file`` (preflight), ``wall_seconds``,
                    ``cpu_seconds``, ``memory_mb``, ``max_processes``, ``disk_mb``, ``cpus`` (cores for the
                    whole sandbox, default 1; ``null``: unbounded), ``support_files``,
                    ``candidate_process`` (``auto``/``separate``/``shared``, see the pytest checker)
=================== ==================================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltap.checkers.base import Checker, CheckResult, Outcome
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import CheckerSpec

__all__ = ["CheckResult", "Checker", "Outcome", "make_checker"]


def make_checker(spec: CheckerSpec) -> Checker:
    """Build the checker a :class:`~deltap.cases.CheckerSpec` describes (see the module table).

    Raises:
        DeltapError: unknown kind, kind ``none`` (a case without a checker cannot be mined by ``pass``), or bad params.
    """
    p: dict[str, Any] = dict(spec.params)
    kind = spec.kind
    if kind == "string_match":
        from deltap.checkers.string_match import StringMatchChecker

        answers = p.get("answers")
        if isinstance(answers, str):
            answers = [answers]
        return StringMatchChecker(
            answers or [],
            bool(p.get("case_sensitive", False)),
            str(p.get("qualified", "either")),
            str(p.get("grammar", "strict")),
        )
    if kind == "multiple_choice":
        from deltap.checkers.choice import MultipleChoiceChecker

        return MultipleChoiceChecker(str(p.get("correct", "")), p.get("options") or {}, str(p.get("grammar", "strict")))
    if kind == "regex":
        from deltap.checkers.regex import RegexChecker

        if not p.get("pattern"):
            raise DeltapError("regex checker needs params['pattern']")
        return RegexChecker(str(p["pattern"]), str(p.get("mode", "search")), bool(p.get("ignore_case", False)))
    if kind == "python":
        from deltap.checkers.python_callable import CallableChecker

        return CallableChecker(p.get("callable", ""))
    if kind == "pytest":
        from deltap.checkers.pytest_checker import PytestChecker
        from deltap.checkers.sandbox import SandboxLimits

        for key in ("test_file", "module_name"):
            if not p.get(key):
                raise DeltapError(f"pytest checker needs params[{key!r}]")
        defaults = SandboxLimits()
        limits = SandboxLimits(
            wall_seconds=float(p.get("wall_seconds", defaults.wall_seconds)),
            cpu_seconds=int(p.get("cpu_seconds", defaults.cpu_seconds)),
            memory_bytes=int(p.get("memory_mb", defaults.memory_bytes // 1024**2)) * 1024**2,
            max_processes=int(p.get("max_processes", defaults.max_processes)),
            disk_bytes=int(p.get("disk_mb", defaults.disk_bytes // 1024**2)) * 1024**2,
            cpus=None if (cpus := p.get("cpus", defaults.cpus)) is None else float(cpus),
        )
        return PytestChecker(
            p["test_file"],
            str(p["module_name"]),
            p.get("fixed_file"),
            limits,
            p.get("support_files") or (),
            candidate_process=str(p.get("candidate_process", "auto")),
        )
    if kind == "none":
        raise DeltapError(
            "this case has no checker (kind 'none', e.g. a BEIR query): it can be evaluated but not mined by 'pass'; "
            "give it a reference answer and use the 'logprob' outcome, or add a checker"
        )
    raise DeltapError(f"unknown checker kind {kind!r}; expected string_match, multiple_choice, regex, python or pytest")
