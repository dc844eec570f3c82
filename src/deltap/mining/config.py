"""The options of a mining run (:class:`MiningConfig`): every knob of ``deltap mine``, its default, and which ones
a resumed run must match.

Plain data with no heavy import (the CLI reads its option defaults from here without loading numpy); the choices of
the enumerated options are defined here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from deltap._registry import Registry
from deltap.errors import DeltapError
from deltap.outcomes import Outcome, outcome_kind

if TYPE_CHECKING:
    from deltap.mining.adaptive import LookSchedule, StoppingRule
    from deltap.mining.verdicts import VerdictPolicy

__all__ = [
    "CONTEXT_ORDERS",
    "DESIGNS",
    "DesignError",
    "DesignKind",
    "LEARNED_GOLD_MAX_FACTOR",
    "NULLS",
    "PILOT_CASES",
    "PLACEBO_KINDS",
    "MiningConfig",
    "Outcome",
    "check_design",
    "default_null",
    "describe_designs",
    "register_design",
]


#: choices of :attr:`MiningConfig.null`
NULLS = ("zero", "placebo", "topic", "auto")


class DesignError(DeltapError, ValueError):
    """An inclusion design that is not registered, or an inclusion probability its design cannot give."""


@dataclass(frozen=True)
class DesignKind:
    """One inclusion design: how design trials pick which candidates are in the prompt.

    Args:
        name: The design (``--design``).
        rows: ``"package.module:Class"`` with ``block_size(m)`` and ``block(run_seed, case_id, m, pi, block)``: the
            inclusion vectors of one block of trials (:class:`deltap.mining.design.InclusionDesign` reads it;
            imported only when trials are drawn).
        summary: What it does, for ``--help``.
        fixed_pi: The only inclusion probability the design can give (``None``: any ``pi`` in (0, 1)).
        fixed_pi_means: What ``fixed_pi`` means, for the error message.
    """

    name: str
    rows: str
    summary: str
    fixed_pi: float | None = None
    fixed_pi_means: str = ""

    def check(self, pi: float) -> None:
        """Refuse an inclusion probability this design cannot give (one message, wherever it is checked).

        Raises:
            DesignError: ``pi`` is not the design's fixed inclusion probability.
        """
        if self.fixed_pi is not None and pi != self.fixed_pi:
            other = next((d for d in DESIGNS.values() if d.fixed_pi is None), None)
            hint = (
                f"; use design='{other.name}' (--design {other.name}) for another inclusion probability"
                if other
                else ""
            )
            raise DesignError(f"the {self.name} design {self.fixed_pi_means} (pi {self.fixed_pi}), got pi {pi}{hint}")


#: the inclusion designs (:attr:`MiningConfig.design`; ``--design`` accepts their names), in registration order
DESIGNS: Registry[DesignKind] = Registry("inclusion design")


def register_design(info: DesignKind, replace: bool = False) -> DesignKind:
    """Add an inclusion design (``replace=True`` to redefine one); it is then a ``--design`` choice.

    Raises:
        DeltapError: the name is taken and ``replace`` is false.
    """
    return DESIGNS.register(info.name, info, replace)


def check_design(name: str, pi: float) -> DesignKind:
    """The design ``name`` after checking it exists and can give the inclusion probability ``pi``.

    Raises:
        DesignError: an unknown design (the message lists the registered ones), or a ``pi`` it cannot give.
    """
    info = DESIGNS.get(name)
    if info is None:
        raise DesignError(f"design must be one of {', '.join(DESIGNS)}, got {name!r}")
    info.check(pi)
    return info


def describe_designs() -> str:
    """Every design with its summary, for ``--design``'s help."""
    return " or ".join(f"{d.name} ({d.summary})" for d in DESIGNS.values())


register_design(
    DesignKind(
        "orthogonal",
        "deltap.mining.design:OrthogonalBlocks",
        "randomised Hadamard blocks: every trial a uniformly random subset, each block balanced and orthogonal, a "
        "tighter regression",
        fixed_pi=0.5,
        fixed_pi_means="includes each candidate in half of the trials",
    )
)
register_design(
    DesignKind(
        "bernoulli",
        "deltap.mining.design:BernoulliDraws",
        "independent coin flips with probability --pi",
    )
)
#: choices of :attr:`MiningConfig.context_order` (:func:`deltap.mining.design.canonical_order`)
CONTEXT_ORDERS = ("length", "id")
#: choices of :attr:`MiningConfig.placebo_kind` (:mod:`deltap.mining.pool`)
PLACEBO_KINDS = ("random", "similar")
#: the most a learned gold weight multiplies :attr:`MiningConfig.gold_weight` by
#: (:func:`deltap.mining.labels.learned_gold_weights`)
LEARNED_GOLD_MAX_FACTOR = 10.0
#: cases the pilot of ``deltap mine`` samples by default (:attr:`MiningConfig.pilot`)
PILOT_CASES = 8


def default_null(outcome: str, placebos: int = 1) -> str:
    """``auto`` for ``logprob`` (a deterministic score moves with any text: the placebo null, or the on-topic null when
    the run's own tilt test says on-topic text moves it more; :func:`deltap.mining.labels.choose_null`), ``zero`` for
    ``pass`` or without placebo documents."""
    return outcome_kind(outcome).default_null if placebos > 0 else "zero"


@dataclass(frozen=True)
class MiningConfig:
    """Options of a mining run (the ones marked *result* must match when resuming a run directory).

    Args:
        outcome: ``pass`` (checker verdict, 0/1) or ``logprob`` (log-probability of the reference answer). *result*
        budget: Maximum design trials per case (the final look). Default 90: with the preflight and the coalition
            checks about 94 calls per case on the simulation's S1 (``benchmarks/README.md``). *result*
        seed: Run seed. *result*
        q: Dataset-wide FDR level of Benjamini–Hochberg. *result*
        pi: Inclusion probability of each candidate. *result*
        min_effect: Smallest effect labelled relevant/harmful (default 0.1 for pass, 0.5 nats for logprob).
        margin: Equivalence margin of ``irrelevant`` (default = ``min_effect``).
        k: Retrieved candidates per case. *result*
        n_placebo: Placebo candidates per case. *result*
        placebo_kind: How placebos are drawn: ``random`` (uniform over the corpus) or ``similar`` (from far down the
            retriever's ranking: same topic as the candidates; see :mod:`deltap.mining.pool`). *result*
        max_candidates: Pool cap. *result*
        first_look: Trials before the first look (a case with m candidates takes interim looks only from 2m + 1 trials). *result*
        batch: Trials between looks. *result*
        preflight: Trials with no document and with all candidates (one each for a deterministic solver). *result*
        preflight_confirm: When both look saturated/unsolvable, this many design trials (random half subsets; they
            count towards the budget if the case goes on) must agree before the case is skipped: distractors can sink
            the all-candidates prompt while one document helps alone. *result*
        design: Which candidates each design trial includes: ``orthogonal`` (randomised Hadamard blocks: each trial a
            uniformly random subset, every block balanced and orthogonal — the same estimand as ``bernoulli`` with a
            tighter regression; needs ``pi`` = 0.5) or ``bernoulli`` (independent coin flips with probability
            ``pi``). See :mod:`deltap.mining.design`. *result*
        null: What a candidate's effect is tested against: ``zero`` (no effect at all) or ``placebo`` (the
            distribution of the placebo documents' effects over the run — "moves the outcome more than random text
            does"; see :mod:`deltap.mining.empirical_null`; needs at least 10 placebo estimates, else ``zero`` is used
            and the dataset says so), or ``topic`` (the placebo null, and for every gold or retrieved candidate also
            the distribution of the run's retrieved non-gold candidates' effects — "moves the outcome more than random
            text *and* more than other documents on the topic"; the larger p-value counts: see
            :func:`deltap.mining.labels.placebo_null`), or ``auto`` (the run's own tilt test decides before any label
            is made: ``topic`` with the learned gold weight when the retrieved non-gold documents move the outcome
            clearly more than the placebos, else ``placebo``; :func:`deltap.mining.labels.choose_null`). Default:
            ``auto`` for ``logprob`` (issue 35 item 6: the placebo null alone lets FDR exceed q on tilted data),
            ``zero`` for ``pass``.
            *result*
        context_order: Order of the documents in every prompt of a case: ``length`` (longest first, ties by id — the
            fewest prompt tokens for the local solver's prefix reuse) or ``id``. Never depends on provenance. *result*
        force: Mine saturated/unsolvable cases anyway.
        require_separate: Refuse the run (a :class:`~deltap.errors.DeltapError`, before any solver call) when a case's
            pytest checker would import the candidate into the test process (shared mode) instead of running it in
            its own sandbox.
        coalitions: Look for interaction pairs and a minimal winning coalition.
        verify_trials: Trials that verify a coalition.
        workers: Concurrent solver calls of the default in-process executor (remote solvers); a solver that is not
            thread-safe (the local model) gets whole batches, one at a time. Not a result: any value gives the same
            trials.
        cases_in_flight: Cases mined at once (one driver thread each). Default: the executor's slots (in-process:
            ``workers``, or 1 for a solver that is not thread-safe; Ray: replicas × calls per replica). Not a result.
        max_error_rate: A case stops (status ``errors``) when more than this fraction of its calls fail (after 5).
        prior_nonnull: Prior share of candidates with an effect, used only by the stopping heuristic.
        prior_scale: Prior SD of effects for the stopping heuristic (default 0.3 pass, 1.5 nats logprob).
        futility_power: Predictive power below which an open candidate no longer keeps a case running.
        gold_weight: Prior weight of gold candidates in the dataset-wide weighted Benjamini–Hochberg step (fixed before
            any trial; every weight is rescaled so the weights of the dataset average 1, which keeps the FDR at q).
            Default 8: on the simulation's S1 it lifts recall from 0.80 to 0.91 at the same calls; when the gold
            documents are in fact nulls, recall on the relevant retrieved ones drops (0.80 → 0.71) and the FDR holds. *result*
        gold_weight_learned: Learn each case's gold weight from the other cases' gold candidates: the prior weight
            divided by their estimated null share (:func:`deltap.mining.labels.learned_gold_weights`; never below
            ``gold_weight``, at most 10×). *result*
        grade_lfsr: The local false sign rate up to which a positive shrunken utility gets a graded-qrels grade
            (:class:`deltap.mining.shrinkage.GradeMapping`). Default 1.0: every positive utility is graded, in
            proportion to it — on the stdlib end-to-end benchmark the graded qrels then order the systems within a
            question as success does better than the gold qrels (τ +0.42 vs +0.26), while a 0.1 gate kept too little
            (+0.32; ``benchmarks/README.md``). A labelling option (``deltap relabel --grade-lfsr``), not a result.
        price_in: USD per million prompt tokens, for the cost in ``run.json`` (default: the local model is free, a hosted
            model's list price from the solver registry (:func:`deltap.trials.prices.prices_for`) when listed, else no cost). Not a result.
        price_out: USD per million completion tokens (as ``price_in``). Not a result.
        pilot: Cases the pilot samples before the run (0: no pilot; ``deltap mine`` uses :data:`PILOT_CASES`): their
            preflight trials run first, and a run whose solver's success does not move with the documents stops
            before the design trials unless ``force`` (:mod:`deltap.mining.pilot`). Not a result: the pilot's trials
            are the preflight trials the run makes anyway.
    """

    outcome: Outcome = "pass"
    budget: int = 90
    seed: int = 0
    q: float = 0.05
    pi: float = 0.5
    min_effect: float | None = None
    margin: float | None = None
    k: int = 10
    n_placebo: int = 5
    placebo_kind: str = "random"
    max_candidates: int = 30
    first_look: int = 32
    batch: int = 16
    preflight: int = 1
    preflight_confirm: int = 12
    design: str = "orthogonal"
    null: str | None = None
    context_order: str = "length"
    force: bool = False
    require_separate: bool = False
    coalitions: bool = True
    verify_trials: int = 6
    workers: int = 1
    cases_in_flight: int | None = None
    max_error_rate: float = 0.2
    prior_nonnull: float = 0.2
    prior_scale: float | None = None
    futility_power: float = 0.02
    gold_weight: float = 8.0
    gold_weight_learned: bool = False
    grade_lfsr: float = 1.0
    price_in: float | None = None
    price_out: float | None = None
    pilot: int = 0

    #: what result-affecting options were, implicitly, in trial logs written before they existed
    LEGACY: ClassVar[dict[str, Any]] = {
        "design": "bernoulli",
        "null": "zero",
        "placebo_kind": "random",
        "gold_weight": 1.0,
        "gold_weight_learned": False,
    }
    #: options of how the calls are made, never of what they return (left out of the dataset's metadata)
    EXECUTION_KEYS = ("workers", "cases_in_flight", "price_in", "price_out", "pilot")
    #: options of how logged trials are labelled, never of which trials are made: ``deltap relabel`` changes them
    #: with no solver call (:mod:`deltap.mining.relabel`); every other option, but the execution keys, decides which
    #: trials a run makes, so changing it needs calls
    LABEL_KEYS = ("q", "null", "gold_weight", "gold_weight_learned", "min_effect", "margin", "grade_lfsr")
    RESULT_KEYS = (
        "outcome",
        "budget",
        "seed",
        "q",
        "pi",
        "k",
        "n_placebo",
        "placebo_kind",
        "max_candidates",
        "first_look",
        "batch",
        "preflight",
        "preflight_confirm",
        "design",
        "null",
        "context_order",
        "gold_weight",
        "gold_weight_learned",
    )

    def __post_init__(self) -> None:
        outcome_kind(self.outcome)
        if self.budget < 4:
            raise DeltapError(f"budget must be at least 4 trials per case, got {self.budget}")
        if not 0 < self.q < 1:
            raise DeltapError(f"q must be in (0, 1), got {self.q}")
        if not 0 < self.grade_lfsr <= 1:
            raise DeltapError(f"grade_lfsr must be in (0, 1], got {self.grade_lfsr}")
        if not 0 < self.pi < 1:
            raise DeltapError(f"pi must be in (0, 1), got {self.pi}")
        if self.null is not None and self.null not in NULLS:
            raise DeltapError(f"null must be one of {', '.join(NULLS)}, got {self.null!r}")
        check_design(self.design, self.pi)
        if self.placebo_kind not in PLACEBO_KINDS:
            raise DeltapError(f"placebo_kind must be one of {', '.join(PLACEBO_KINDS)}, got {self.placebo_kind!r}")
        if self.context_order not in CONTEXT_ORDERS:
            raise DeltapError(f"context_order must be one of {', '.join(CONTEXT_ORDERS)}, got {self.context_order!r}")
        if self.workers < 1:
            raise DeltapError(f"workers must be at least 1, got {self.workers}")
        if self.pilot < 0:
            raise DeltapError(f"pilot must be a number of cases (0: no pilot), got {self.pilot}")
        for name in ("price_in", "price_out"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise DeltapError(f"{name} must be a price in USD per million tokens (>= 0), got {value}")
        if self.cases_in_flight is not None and self.cases_in_flight < 1:
            raise DeltapError(f"cases_in_flight must be at least 1, got {self.cases_in_flight}")

    def policy(self) -> VerdictPolicy:
        from deltap.mining.verdicts import default_policy

        return default_policy(self.outcome, self.q, self.min_effect, self.margin)

    def resolved_null(self) -> str:
        return self.null or default_null(self.outcome, self.n_placebo)

    def schedule(self, candidates: int = 0) -> LookSchedule:
        """The planned looks of a case with ``candidates`` candidates (interim looks need ``2m + 1`` trials)."""
        from deltap.mining.adaptive import look_schedule

        return look_schedule(self.budget, self.first_look, self.batch, candidates)

    def stopping_gold_weight(self) -> float:
        """The gold weight the stopping rule plans with: the most the final step may give gold candidates (with a
        learned gold weight, :data:`LEARNED_GOLD_MAX_FACTOR` × ``gold_weight``: the other candidates then need more
        evidence, so they turn futile sooner). Efficiency only: the final test uses the weights of the final step."""
        return self.gold_weight * (LEARNED_GOLD_MAX_FACTOR if self.gold_weight_learned else 1.0)

    def rule(self) -> StoppingRule:
        from deltap.mining.adaptive import StoppingRule

        pol = self.policy()
        scale = self.prior_scale if self.prior_scale is not None else outcome_kind(self.outcome).prior_scale
        return StoppingRule(
            self.q,
            self.prior_nonnull,
            scale,
            self.futility_power,
            pol.margin,
            significance_stops=self.resolved_null() == "zero",
        )

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}
