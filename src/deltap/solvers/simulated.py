"""A simulated solver with known truth: its success probability is a planted function of which documents it sees.

For each case, :class:`SimulatedTruth` gives a base rate, main effects per document id and pairwise interactions:

    p(S) = clip(base + Σ_{d ∈ S} effect[d] + Σ_{(a,b) ⊆ S} interaction[a,b], 0, 1)

With the ``pass`` outcome, :meth:`SimulatedSolver.answer` returns the case's reference answer with probability
``p(S)`` and a wrong answer otherwise, so a real checker judges it. With the ``logprob`` outcome,
:meth:`SimulatedSolver.score` returns ``base + Σ effects + N(0, noise²)`` (effects in nats).

Randomness is seeded per call from ``(solver seed, case id, request.extra["trial_seed"], sorted document ids)``, so a
trial replayed alone gets the same answer, and a resumed mining run reproduces an uninterrupted one. Calls without a
``trial_seed`` use a per-solver counter (still reproducible for the same call sequence).

:meth:`SimulatedTruth.probability_matrix` evaluates ``p`` on a whole inclusion matrix with numpy, for the simulation
benchmark.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deltap.outcomes import Outcome, outcome_kind
from deltap.solvers.base import Answer, Score, SolveRequest

__all__ = ["SimulatedSolver", "SimulatedTruth", "planted_truth"]


@dataclass(frozen=True)
class SimulatedTruth:
    """Planted truth of one case.

    Args:
        base: Success probability (``pass``) or mean log-probability (``logprob``) with no helpful document.
        effects: ``{doc_id: effect}``; positive helps, negative is a distractor.
        interactions: ``{(doc_a, doc_b): effect}`` added when both are in the context.
        answer: The reference answer returned on success (``None``: the request's case id decides via the solver's
            ``answers`` map).
    """

    base: float = 0.1
    effects: Mapping[str, float] = field(default_factory=dict)
    interactions: Mapping[tuple[str, str], float] = field(default_factory=dict)
    answer: str | None = None

    def mean(self, doc_ids: Sequence[str] | set[str], clip: bool = True) -> float:
        present = set(doc_ids)
        mu = self.base + sum(e for d, e in self.effects.items() if d in present)
        mu += sum(e for (a, b), e in self.interactions.items() if a in present and b in present)
        return min(1.0, max(0.0, mu)) if clip else mu

    def probability_matrix(self, X: NDArray[Any], doc_ids: Sequence[str], clip: bool = True) -> NDArray[np.float64]:
        """Vectorised :meth:`mean` over inclusion matrices ``(..., m)`` whose columns are ``doc_ids``."""
        X = np.asarray(X, dtype=float)
        pos = {d: i for i, d in enumerate(doc_ids)}
        eff = np.array([self.effects.get(d, 0.0) for d in doc_ids])
        mu = self.base + X @ eff
        for (a, b), e in self.interactions.items():
            if a in pos and b in pos:
                mu = mu + e * X[..., pos[a]] * X[..., pos[b]]
        return np.asarray(np.clip(mu, 0.0, 1.0) if clip else mu, dtype=float)


def _trial_rng(seed: int, case_id: str, trial: Any, salt: str, doc_ids: Sequence[str]) -> np.random.Generator:
    ids = ",".join(sorted(doc_ids))
    digest = hashlib.sha256(f"{seed}|{case_id}|{trial}|{salt}|{ids}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "big")))


class SimulatedSolver:
    """A :class:`~deltap.solvers.base.Solver` whose behaviour is planted (see the module docstring).

    Args:
        truth: One :class:`SimulatedTruth` for every case, or ``{case_id: SimulatedTruth}`` (cases not listed behave
            as ``default``).
        answers: ``{case_id: reference answer}`` for truths without ``answer``.
        outcome: ``pass`` (answers) or ``logprob`` (scores); both methods work either way.
        noise: Gaussian noise SD of :meth:`score`.
        seed: Solver seed.
        wrong_answer: Text returned on failure.
        error_rate: Probability that a call raises :class:`~deltap.solvers.base.SolverError` (tests the ``error``
            path; seeded like everything else).
        latency: Seconds each call sleeps (0 by default).
        deterministic: Answer like a greedy model: the same documents always get the same answer (the randomness
            is seeded without the trial seed). Declared as :attr:`deterministic`, so ``mine()`` never asks the same
            prompt twice.
    """

    def __init__(
        self,
        truth: SimulatedTruth | Mapping[str, SimulatedTruth] | None = None,
        answers: Mapping[str, str] | None = None,
        outcome: Outcome = "pass",
        noise: float = 1.0,
        seed: int = 0,
        wrong_answer: str = "I do not know.",
        error_rate: float = 0.0,
        latency: float = 0.0,
        default: SimulatedTruth | None = None,
        deterministic: bool = False,
    ) -> None:
        self._truth = truth if truth is not None else SimulatedTruth()
        self._default = default or SimulatedTruth()
        self._answers = dict(answers or {})
        self.outcome = outcome
        self.noise = float(noise)
        self.seed = int(seed)
        self.wrong_answer = wrong_answer
        self.error_rate = float(error_rate)
        self.latency = float(latency)
        self._counter = itertools.count()
        self.calls = 0
        # The planted truth is the simulated model: two solvers that differ in it (``--sim-effect``) must not share an
        # id, or a run directory would resume one's trials with the other.
        self.deterministic = bool(deterministic)
        det = ",deterministic" if deterministic else ""
        self.id = f"simulated(outcome={outcome},noise={noise:g},seed={seed}{det},truth={self._truth_digest()})"

    def _truth_digest(self) -> str:
        def one(t: SimulatedTruth) -> dict[str, Any]:
            inter = sorted([list(k), v] for k, v in t.interactions.items())
            return {
                "base": t.base,
                "effects": dict(sorted(t.effects.items())),
                "interactions": inter,
                "answer": t.answer,
            }

        truth = self._truth
        planted = one(truth) if isinstance(truth, SimulatedTruth) else {k: one(v) for k, v in sorted(truth.items())}
        payload = {
            "truth": planted,
            "default": one(self._default),
            "answers": dict(sorted(self._answers.items())),
            "wrong_answer": self.wrong_answer,
            "error_rate": self.error_rate,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def truth_for(self, case_id: str) -> SimulatedTruth:
        if isinstance(self._truth, SimulatedTruth):
            return self._truth
        return self._truth.get(case_id, self._default)

    def _rng(self, request: SolveRequest, salt: str) -> np.random.Generator:
        trial = request.extra.get("trial_seed") if request.extra else None
        if self.deterministic:
            trial = "greedy"
        elif trial is None:
            trial = f"call{next(self._counter)}"
        return _trial_rng(self.seed, request.case_id, trial, salt, [d.doc_id for d in request.documents])

    def outcomes(
        self, case_id: str, doc_ids: Sequence[str], X: NDArray[Any], trial_seeds: Sequence[int], outcome: str
    ) -> NDArray[np.float64]:
        """What :meth:`answer` (judged: 1 pass, 0 fail) or :meth:`score` returns for each row of the inclusion matrix
        ``X`` (columns ``doc_ids``) with these trial seeds — the same draws, without building requests (the
        simulation benchmark's trial source). Errors (``error_rate``) come back as ``nan``."""
        X = np.asarray(X, dtype=bool)
        truth = self.truth_for(case_id)
        binary = outcome_kind(outcome).binary
        mu = truth.probability_matrix(X, doc_ids, clip=binary)
        salt = "answer" if outcome_kind(outcome).answered else "score"
        out = np.empty(len(X))
        self.calls += len(X)
        for a, (row, seed) in enumerate(zip(X, trial_seeds, strict=True)):
            trial: Any = "greedy" if self.deterministic else seed
            rng = _trial_rng(self.seed, case_id, trial, salt, [d for d, b in zip(doc_ids, row, strict=True) if b])
            if self.error_rate > 0 and rng.random() < self.error_rate:
                out[a] = np.nan
            elif binary:
                out[a] = 1.0 if rng.random() < mu[a] else 0.0
            else:
                out[a] = mu[a] + self.noise * float(rng.standard_normal())
        return out

    def _maybe_fail(self, rng: np.random.Generator) -> None:
        from deltap.solvers.base import SolverError

        if self.error_rate > 0 and rng.random() < self.error_rate:
            raise SolverError("simulated infrastructure error (error_rate)")

    def answer(self, request: SolveRequest) -> Answer:
        """The reference answer with probability ``p(documents)``, else :attr:`wrong_answer`."""
        t0 = time.perf_counter()
        self.calls += 1
        rng = self._rng(request, "answer")
        self._maybe_fail(rng)
        truth = self.truth_for(request.case_id)
        p = truth.mean([d.doc_id for d in request.documents])
        reference = truth.answer if truth.answer is not None else self._answers.get(request.case_id)
        if reference is None:
            raise ValueError(f"SimulatedSolver has no reference answer for case {request.case_id!r}; pass answers=")
        text = reference if rng.random() < p else self.wrong_answer
        if self.latency:
            time.sleep(self.latency)
        return Answer(text=text, latency=time.perf_counter() - t0, raw={"p": p}, solver_id=self.id)

    def score(self, request: SolveRequest, reference: str) -> Score:
        """``base + Σ effects`` (unclipped, in nats) plus Gaussian noise."""
        t0 = time.perf_counter()
        self.calls += 1
        rng = self._rng(request, "score")
        self._maybe_fail(rng)
        mu = self.truth_for(request.case_id).mean([d.doc_id for d in request.documents], clip=False)
        value = mu + self.noise * float(rng.standard_normal())
        if self.latency:
            time.sleep(self.latency)
        return Score(
            logprob=value, n_tokens=max(1, len(reference.split())), latency=time.perf_counter() - t0, solver_id=self.id
        )

    def __repr__(self) -> str:
        return f"SimulatedSolver({self.id})"


def planted_truth(cases: Sequence[Any], effect: float, base: float) -> dict[str, Any]:
    """The options of a :class:`SimulatedSolver` in which each case's gold documents move the outcome by ``effect``
    from ``base`` and every other document by nothing, answering each case's reference answer: ``truth`` and
    ``answers`` (what ``deltap mine --solver simulated --sim-effect E --sim-base B`` plants)."""
    truth = {c.case_id: SimulatedTruth(base, {g: effect for g in c.gold_doc_ids}) for c in cases}
    return {"truth": truth, "answers": {c.case_id: c.reference_answer or "" for c in cases}}
