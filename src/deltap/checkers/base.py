"""The checker contract: decide whether a solver's answer to a case is a success.

Outcomes (the taxonomy used everywhere in deltap):

* ``pass``  — the checker accepted the answer;
* ``fail``  — a real wrong answer (the checker ran and rejected it);
* ``error`` — infrastructure failure (timeout, refused call, unparseable response after retries, checker crash).
  Errors are recorded and never counted as failures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["CheckResult", "Checker", "Outcome"]

Outcome = Literal["pass", "fail", "error"]


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check.

    Args:
        outcome: ``pass``, ``fail`` or ``error``.
        extracted: The answer the checker extracted from the raw text (e.g. the option letter).
        detail: Human-readable reason (why it failed, the error message...).
        info: Extra machine-readable details (durations, pytest summary...).
    """

    outcome: Outcome
    extracted: str | None = None
    detail: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"


@runtime_checkable
class Checker(Protocol):
    """Judges an answer; ``id`` names the checker and its parameters (stored with every trial)."""

    @property
    def id(self) -> str: ...  # read-only: a checker may say in it what it decided (the pytest checker's process)

    def check(self, case: Case, answer: str) -> CheckResult: ...
