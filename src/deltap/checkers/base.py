"""The checker contract: decide whether a solver's answer to a case is a success.

A checker returns a :class:`Verdict` whose ``status`` is one of (the taxonomy used everywhere in deltap):

* ``pass``  — the checker accepted the answer;
* ``fail``  — a real wrong answer (the checker ran and rejected it);
* ``error`` — infrastructure failure (timeout, refused call, unparseable response after retries, checker crash).
  Errors are recorded and never counted as failures.

A ``fail`` whose :attr:`Verdict.detail` starts with ``unreadable:`` (:data:`UNREADABLE`, :func:`is_unreadable`) is a
reply the checker could not read: it found no answer in it (an empty reply, an echo of the options, a text that names
no candidate), as opposed to a reply that gave a wrong answer. It is a failure all the same (the task was not done),
but runs count such replies apart: when many replies are unreadable, the checker rather than the documents decides
the labels.

A verdict whose answer was read from the reply's *declared* answer — the answer protocol's final ``Answer: …`` line or
a JSON ``answer`` field, rather than found by the answer grammar — ends its detail with `` (declared)``
(:data:`DECLARED`, :func:`declared`, :func:`is_declared`): ``matched 'nsmallest' (declared)``, ``chose B, correct is
A (declared)``. Passes and wrong answers both; an unreadable verdict is never marked (it counts as unreadable). Runs
count such replies too (run.json's ``checker`` block, :mod:`deltap.mining.readability`): when the prompt asked for the
answer line and few replies declare one, the grammar, not the line, is reading the replies.

The ``pass`` *outcome* of a trial (:mod:`deltap.outcomes`) is built from verdicts: 1 for ``pass``, 0 for ``fail``,
no value for ``error``. ``CheckResult`` and ``Outcome`` are the former names of :class:`Verdict` and
:data:`Status`, kept as aliases for code written against them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = [
    "DECLARED",
    "UNREADABLE",
    "CheckResult",
    "Checker",
    "Outcome",
    "Status",
    "Verdict",
    "clip_detail",
    "declared",
    "is_declared",
    "is_unreadable",
    "unreadable",
]

#: what a checker decided of one answer
Status = Literal["pass", "fail", "error"]

#: the value a verdict's status gives the ``pass`` outcome (``error``: none, the trial is an infrastructure error)
_VALUES: dict[str, float | None] = {"pass": 1.0, "fail": 0.0, "error": None}


@dataclass(frozen=True)
class Verdict:
    """What a checker decided of one answer.

    Args:
        status: ``pass``, ``fail`` or ``error``.
        extracted: The answer the checker extracted from the raw text (e.g. the option letter).
        detail: Human-readable reason (why it failed, the error message...).
        info: Extra machine-readable details (durations, pytest summary...).
    """

    status: Status
    extracted: str | None = None
    detail: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """The checker accepted the answer."""
        return self.status == "pass"

    @property
    def value(self) -> float | None:
        """The trial's value on the ``pass`` outcome: 1.0 (pass), 0.0 (fail) or ``None`` (error: no value)."""
        return _VALUES[self.status]

    @property
    def outcome(self) -> Status:
        """The former name of :attr:`status` (kept for code written against ``CheckResult``)."""
        return self.status


#: the prefix of the detail of a ``fail`` verdict whose reply the checker could not read (no answer located in it)
UNREADABLE = "unreadable"


def unreadable(reason: str, extracted: str | None = None, **info: Any) -> Verdict:
    """A ``fail`` verdict for a reply whose answer could not be located: detail ``unreadable: <reason>``."""
    return Verdict("fail", extracted, f"{UNREADABLE}: {reason}", {**info, UNREADABLE: True})


def is_unreadable(detail: str | None) -> bool:
    """Whether a verdict's (or a logged trial's) detail says the checker could not read the reply."""
    return bool(detail) and str(detail).startswith(f"{UNREADABLE}:")


#: the marker that ends the detail of a verdict whose answer was read from the reply's declared answer
DECLARED = " (declared)"


def declared(detail: str, was_declared: bool = True) -> str:
    """``detail`` with exactly one :data:`DECLARED` marker, at its end (``was_declared``), or none: a marker the
    reading left inside the detail (``answer 'X' (declared) (concluded)``) is moved to the end. An unreadable
    detail is never marked."""
    bare = detail.replace(DECLARED, "")
    return bare + DECLARED if was_declared and not is_unreadable(bare) else bare


def is_declared(detail: str | None) -> bool:
    """Whether a verdict's (or a logged trial's) detail says its answer was read from the reply's declared answer."""
    return bool(detail) and str(detail).endswith(DECLARED) and not is_unreadable(detail)


def clip_detail(detail: str, limit: int) -> str:
    """``detail`` cut to ``limit`` characters (a trial log keeps that much) with its :data:`DECLARED` marker kept."""
    if len(detail) <= limit:
        return detail
    if is_declared(detail):
        return detail[: max(0, limit - len(DECLARED))] + DECLARED
    return detail[:limit]


#: the former name of :class:`Verdict`
CheckResult = Verdict
#: the former name of :data:`Status` (not a trial outcome: see :mod:`deltap.outcomes`)
Outcome = Status


@runtime_checkable
class Checker(Protocol):
    """Judges an answer; ``id`` names the checker and its parameters (stored with every trial)."""

    @property
    def id(self) -> str: ...  # read-only: a checker may say in it what it decided (the pytest checker's process)

    def check(self, case: Case, answer: str) -> Verdict: ...
