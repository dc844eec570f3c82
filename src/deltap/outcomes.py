"""The outcome vocabulary: what a trial measures, one object per kind.

A trial's *outcome* is what the mining statistics estimate ΔP on. Two kinds exist:

=========== ================================================================= ============ ======== ===========
kind        value of one trial                                                unit         binary   default null
=========== ================================================================= ============ ======== ===========
``pass``    the checker's verdict: 1 (pass) or 0 (fail); errors are dropped   probability  yes      ``zero``
``logprob`` log-probability of the reference answer given the context         nats         no       ``placebo``
=========== ================================================================= ============ ======== ===========

Code that behaves differently per outcome asks its :class:`OutcomeKind` (``outcome_kind(cfg.outcome).binary``)
instead of comparing the bare string; the string stays the value stored in configs, ``run.json`` and the trial log.
A *verdict* (:class:`deltap.checkers.Verdict`: ``pass`` / ``fail`` / ``error``) is what a checker says of one
answer; the ``pass`` outcome is built from verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deltap.errors import DeltapError

__all__ = ["LOGPROB", "OUTCOMES", "PASS", "Outcome", "OutcomeKind", "outcome_kind"]

#: an outcome kind's name, as stored in configs, ``run.json`` and the trial log
Outcome = Literal["pass", "logprob"]


@dataclass(frozen=True)
class OutcomeKind:
    """One kind of trial outcome and the defaults that follow from it.

    Args:
        name: ``pass`` or ``logprob`` (the stored value).
        unit: ``probability`` or ``nats``: the unit of an effect (ΔP) on this outcome.
        binary: Each trial is 0 or 1 (a Bernoulli mean), so estimates use binomial variances and clip at [0, 1].
        default_min_effect: The smallest effect a ``relevant`` label claims, unless configured (also the seed's
            naive threshold the simulation compares against).
        margin_factor: The default equivalence margin is ``margin_factor × min_effect``.
        grade_steps: Effects from which grades 2 and 3 are given (grade 1 from the minimum effect).
        default_null: The null hypothesis a run tests by default when it has placebo documents (``zero``, or
            ``auto``: a deterministic score moves with any text, so only placebos tell what "no effect" is, and the
            run's own tilt test decides whether on-topic text must be beaten too — issue 35 item 6).
        prior_scale: Scale of the stopping rule's prior on effects, in :attr:`unit`.
        answered: The solver answers and a checker judges the answer (``pass``); otherwise the solver scores the
            case's reference answer (``logprob``) and no checker is built.
        label: How a mean of this outcome is named in tables and reports.
        short: The column title of a base rate (``base success`` / ``base log p``).
        base_label: What a case's base rate (no documents in context) is, in a sentence or an axis title.
        effect_label: The axis title of an effect (ΔP) on this outcome.
    """

    name: str
    unit: str
    binary: bool
    default_min_effect: float
    margin_factor: float
    grade_steps: tuple[float, float]
    default_null: str
    prior_scale: float
    answered: bool
    label: str
    short: str
    base_label: str
    effect_label: str

    @property
    def alone_label(self) -> str:
        """What a document's single-document (eRAG) label is: the outcome with the document alone (binary), or its
        lift over the no-document prompt."""
        if self.binary:
            return f"{self.label} alone"
        return f"log-p alone − log-p with no document ({self.unit})"

    @property
    def suffix(self) -> str:
        """What follows a number of this unit in a sentence: ``""`` for probabilities, ``" nats"``."""
        return "" if self.unit == "probability" else f" {self.unit}"

    @property
    def needs(self) -> str:
        """What a case needs to be mined by this outcome: ``a checker`` or ``a reference answer``."""
        return "a checker" if self.answered else "a reference answer"

    def __str__(self) -> str:
        return self.name


PASS = OutcomeKind(
    name="pass",
    unit="probability",
    binary=True,
    default_min_effect=0.1,
    margin_factor=2.0,
    grade_steps=(0.2, 0.4),
    default_null="zero",
    prior_scale=0.3,
    answered=True,
    label="success rate",
    short="base success",
    base_label="base success rate",
    effect_label="ΔP = P(success | in) − P(success | out)",
)

LOGPROB = OutcomeKind(
    name="logprob",
    unit="nats",
    binary=False,
    default_min_effect=0.5,
    margin_factor=1.0,
    grade_steps=(1.5, 3.0),
    default_null="auto",
    prior_scale=1.5,
    answered=False,
    label="mean log-probability of the reference (nats)",
    short="base log p",
    base_label="base log p (no documents)",
    effect_label="Δ log p(reference) [nats]",
)

#: every outcome kind by name, in the order the CLI lists them
OUTCOMES: dict[str, OutcomeKind] = {k.name: k for k in (PASS, LOGPROB)}


def outcome_kind(name: str | OutcomeKind, what: str = "outcome") -> OutcomeKind:
    """The :class:`OutcomeKind` called ``name`` (an :class:`OutcomeKind` is returned as it is).

    Raises:
        DeltapError: an unknown name, naming ``what`` (e.g. ``--outcome``) and the known ones.
    """
    if isinstance(name, OutcomeKind):
        return name
    kind = OUTCOMES.get(name)
    if kind is None:
        raise DeltapError(f"{what} must be {' or '.join(OUTCOMES)}, got {name!r}")
    return kind
