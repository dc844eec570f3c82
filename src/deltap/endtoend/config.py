"""The options of an end-to-end run (:class:`EndToEndConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from deltap.errors import DeltapError
from deltap.outcomes import outcome_kind

__all__ = ["EndToEndConfig"]


@dataclass(frozen=True)
class EndToEndConfig:
    """Options of an end-to-end run.

    Args:
        k: Documents of each retriever or run put in the prompt.
        repeats: Trials per case and system (a deterministic solver answers each distinct prompt once).
        outcome: ``pass`` (the case's checker) or ``logprob`` (log-probability of the reference answer).
        seed: Seed of the trial seeds (namespaced by ``endtoend:<system>``: never a mining trial's seed) and of the
            bootstrap and randomization tests.
        max_calls: Refuse to start when the call ceiling exceeds it (``None``: no limit).
        workers: In-process executor threads (remote solvers).
        cases_in_flight: Cases run at once (default: the executor's slots).
        confidence: Coverage of the bootstrap intervals.
        n_resamples: Bootstrap resamples (success intervals and metric validity).
        n_permutations: Resamples of the paired randomization tests.
        single_doc: Also ask every document any system puts in its top ``k`` alone (eRAG's single-document
            utility, :mod:`deltap.endtoend.single`), and add the ``erag_*@k`` rows to the validity table.
    """

    k: int = 5
    repeats: int = 1
    outcome: str = "pass"
    seed: int = 0
    max_calls: int | None = None
    workers: int = 1
    cases_in_flight: int | None = None
    confidence: float = 0.95
    n_resamples: int = 1000
    n_permutations: int = 10_000
    single_doc: bool = False

    def __post_init__(self) -> None:
        outcome_kind(self.outcome)
        if self.k < 1:
            raise DeltapError(f"k must be at least 1, got {self.k}")
        if self.repeats < 1:
            raise DeltapError(f"repeats must be at least 1, got {self.repeats}")
        if self.max_calls is not None and self.max_calls < 0:
            raise DeltapError(f"max_calls must be >= 0, got {self.max_calls}")

    #: options a resumed run must share with the logged one (they change what a trial is); ``prompt_template`` is the
    #: digest of the solver's prompt template (the answer line a hosted solver asks for included)
    RESULT_KEYS = ("outcome", "k", "seed", "solver", "prompt_template")
