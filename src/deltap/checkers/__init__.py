"""Checkers: decide whether a solver's answer to a case is a success (a :class:`Verdict`: ``pass`` / ``fail`` /
``error``).

``make_checker(spec)`` builds one from a case's :class:`~deltap.cases.CheckerSpec`, by the factory its kind has in
the checker registry (:mod:`deltap.checker_kinds`, where a new kind is registered). The built-in kinds:

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

from typing import TYPE_CHECKING

from deltap.checker_kinds import checker_kind
from deltap.checkers.base import (
    DECLARED,
    UNREADABLE,
    Checker,
    CheckResult,
    Outcome,
    Status,
    Verdict,
    is_declared,
    is_unreadable,
    unreadable,
)

if TYPE_CHECKING:
    from deltap.cases import CheckerSpec

__all__ = [
    "DECLARED",
    "UNREADABLE",
    "CheckResult",
    "Checker",
    "Outcome",
    "Status",
    "Verdict",
    "is_declared",
    "is_unreadable",
    "make_checker",
    "unreadable",
]


def make_checker(spec: CheckerSpec) -> Checker:
    """Build the checker a :class:`~deltap.cases.CheckerSpec` describes: its kind's factory in the checker registry
    (:mod:`deltap.checker_kinds`; the module table lists the built-in kinds).

    Raises:
        DeltapError: unknown kind, kind ``none`` (a case without a checker cannot be mined by ``pass``), or bad params.
    """
    checker: Checker = checker_kind(spec.kind).build(spec.params)
    return checker
