"""The randomised design: inclusion vectors from the per-trial seeds.

Every trial of a case has its own seed (:func:`deltap.trials.seeds.trial_seed`, a hash of ``(run seed, case id, trial
kind, trial index)``), so any single trial's subset can be replayed alone and reruns reproduce the same subsets
whatever order trials run in.

Two designs decide which candidates are in the context of a design trial (:class:`InclusionDesign`):

* ``orthogonal`` (the default, π = 0.5 only) — **randomised Hadamard blocks**. Trials come in blocks of ``b`` rows,
  ``b = q + 1`` the smallest Paley order with ``q ≥ m`` (``q`` a prime ≡ 3 mod 4: b = 4, 8, 12, 20, 24, 32, 44, 48,
  60, 68, …). Each block takes ``m`` of the ``q`` balanced columns of a Paley type-I Hadamard matrix at random,
  flips the sign of each chosen column with probability ½ and shuffles the rows, all from the block's own seed
  ``trial_seed(run seed, case id, block, "block")``. The random sign flips make **every single trial's context a
  uniformly random subset** — exactly the distribution of the Bernoulli(½) design, so the estimand (a document's
  average effect over random contexts) and the unbiasedness of the difference in means are unchanged — while
  within a block every candidate is in exactly half of the trials and the columns are mutually orthogonal. With
  independent draws, chance correlation between the inclusion columns inflates the variance of the joint regression
  by about ``n / (n − m)`` (1.19× for 20 candidates at 128 trials); the orthogonal blocks remove it. Measured on the
  simulation's S1 scenario: recall 0.94 instead of 0.90 at 128 trials, at the same FDR. Two-factor interactions
  are only partially aliased with main effects in Paley designs (never fully, unlike 2^k fractions), and the per
  block re-randomisation spreads that aliasing evenly, so interaction pairs stay estimable across blocks.
  Trial ``i`` is row ``i mod b`` of block ``i // b``: still a pure function of ``(run seed, case id, i)``.
* ``bernoulli`` — each candidate in with probability π independently, drawn from ``numpy.random.PCG64(trial
  seed)`` (a 2^m factorial design sampled at random); needed for π ≠ 0.5.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from deltap.mining.config import CONTEXT_ORDERS, DESIGNS, check_design
from deltap.trials.seeds import trial_seed

__all__ = [
    "CONTEXT_ORDERS",
    "DESIGNS",
    "BernoulliDraws",
    "InclusionDesign",
    "OrthogonalBlocks",
    "canonical_order",
    "hadamard_block",
    "hadamard_blocks",
    "inclusion_vector",
    "paley_hadamard",
    "paley_order",
]


def inclusion_vector(seed: int, m: int, pi: float = 0.5) -> NDArray[np.bool_]:
    """Which of ``m`` candidates are in the context of the trial with this seed (each with probability ``pi``)."""
    if not 0.0 < pi < 1.0:
        raise ValueError(f"inclusion probability pi must be in (0, 1), got {pi}")
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.asarray(rng.random(m) < pi, dtype=bool)


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n**0.5) + 1))


def paley_order(m: int) -> int:
    """Rows of a Paley block for ``m`` candidates: ``q + 1`` for the smallest prime ``q ≡ 3 (mod 4)`` with ``q ≥ m``."""
    q = max(3, int(m))
    while not (q % 4 == 3 and _is_prime(q)):
        q += 1
    return q + 1


@functools.lru_cache(maxsize=16)
def paley_hadamard(q: int) -> NDArray[np.int8]:
    """The Paley type-I Hadamard matrix of order ``q + 1`` (``q`` prime, ``q ≡ 3 mod 4``), first column all +1.

    ``H = I + S`` with ``S = [[0, 1ᵀ], [−1, Q]]`` and ``Q`` the Jacobsthal matrix ``Q[i, j] = χ(j − i)`` (χ the
    quadratic character mod q); rows are then multiplied by their first entry. ``H Hᵀ = (q + 1) I``, so every other
    column has as many +1 as −1 and all columns are mutually orthogonal. Read-only (cached).
    """
    if q % 4 != 3 or not _is_prime(q):
        raise ValueError(f"Paley's construction needs a prime q ≡ 3 (mod 4), got {q}")
    chi = np.full(q, -1, dtype=np.int64)
    chi[0] = 0
    chi[(np.arange(1, q) ** 2) % q] = 1
    idx = np.arange(q)
    S = np.zeros((q + 1, q + 1), dtype=np.int64)
    S[0, 1:] = 1
    S[1:, 0] = -1
    S[1:, 1:] = chi[(idx[None, :] - idx[:, None]) % q]
    H = np.eye(q + 1, dtype=np.int64) + S
    H = H * H[:, :1]
    out = H.astype(np.int8)
    out.setflags(write=False)
    return out


def hadamard_blocks(rng: np.random.Generator, m: int, shape: tuple[int, ...] = ()) -> NDArray[np.bool_]:
    """Independent randomised orthogonal blocks, shape ``(*shape, paley_order(m), m)`` (True = in the context).

    Each block takes ``m`` of the ``q`` balanced columns of the Paley matrix in random order, flips each column's
    sign with probability ½ and shuffles the rows. Within a block each candidate is in exactly half of the trials
    and any two columns are orthogonal; each row on its own is a uniformly random subset of the candidates.
    """
    b = paley_order(m)
    H = paley_hadamard(b - 1)
    cols = np.argsort(rng.random((*shape, b - 1)), axis=-1)[..., :m] + 1
    flip = rng.random((*shape, m)) < 0.5
    rows = np.argsort(rng.random((*shape, b)), axis=-1)
    block = H[rows[..., :, None], cols[..., None, :]] > 0
    return np.asarray(block ^ flip[..., None, :], dtype=bool)


def hadamard_block(seed: int, m: int) -> NDArray[np.bool_]:
    """One randomised orthogonal block (``paley_order(m)`` trials × ``m`` candidates) from its seed."""
    return hadamard_blocks(np.random.Generator(np.random.PCG64(seed)), m)


class OrthogonalBlocks:
    """The ``orthogonal`` design's rows: block ``b`` is a randomised Paley block from the seed of ``(case, b)``."""

    @staticmethod
    def block_size(m: int) -> int:
        return paley_order(m)

    @staticmethod
    def block(run_seed: int, case_id: str, m: int, pi: float, block: int) -> NDArray[np.bool_]:
        return hadamard_block(trial_seed(run_seed, case_id, block, "block"), m)


class BernoulliDraws:
    """The ``bernoulli`` design's rows: one trial per block, each candidate in with probability π from the trial's
    own seed."""

    @staticmethod
    def block_size(m: int) -> int:
        return 1

    @staticmethod
    def block(run_seed: int, case_id: str, m: int, pi: float, block: int) -> NDArray[np.bool_]:
        return inclusion_vector(trial_seed(run_seed, case_id, block), m, pi)[None, :]


@dataclass(frozen=True)
class InclusionDesign:
    """Which candidates are in the context of design trial ``i`` of a case (see the module docstring).

    The design itself is an entry of :data:`deltap.mining.config.DESIGNS` (its name, its rows, the inclusion
    probabilities it can give); this class draws its trials.

    Args:
        run_seed: The run's seed.
        case_id: The case.
        m: Number of candidates.
        pi: Inclusion probability (``orthogonal`` needs 0.5).
        kind: A registered design: ``orthogonal`` or ``bernoulli``.

    Raises:
        DesignError: an unknown design, or a ``pi`` the design cannot give (the same message as
            :class:`~deltap.mining.config.MiningConfig`'s).
    """

    run_seed: int
    case_id: str
    m: int
    pi: float = 0.5
    kind: str = "orthogonal"

    def __post_init__(self) -> None:
        check_design(self.kind, self.pi)

    @functools.cached_property
    def _rows(self) -> Any:
        import importlib

        module, _, name = DESIGNS[self.kind].rows.partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def block_size(self) -> int:
        """Trials per block (a Paley order for the orthogonal design, 1 for the Bernoulli design)."""
        return int(self._rows.block_size(self.m))

    def vector(self, index: int) -> NDArray[np.bool_]:
        """The inclusion vector of design trial ``index``."""
        block, row = divmod(int(index), self.block_size)
        return self._block(block)[row].copy()

    @functools.lru_cache(maxsize=8)  # noqa: B019 - a handful of blocks per (frozen, hashable) design
    def _block(self, block: int) -> NDArray[np.bool_]:
        return np.asarray(self._rows.block(self.run_seed, self.case_id, self.m, self.pi, block), dtype=bool)


def canonical_order(doc_ids: Sequence[str], lengths: Sequence[int] | None = None) -> list[int]:
    """Positions of ``doc_ids`` in the canonical context order: longest first when ``lengths`` are given, else by id.

    The order depends on the documents only — never on provenance, so a solver cannot infer which documents are gold
    from where they appear — and it is the same in every trial of a case, so prompts share long prefixes.

    Why longest first: a batch solver that walks the trials' prompts as a prefix trie (the local llama.cpp solver)
    evaluates the document at position ``j`` once per distinct inclusion pattern of the documents before it — about
    ``min(2**j, trials)`` times — so the long documents belong where they are shared most. On a real 20-candidate
    ADK case this cuts the prompt tokens evaluated per trial from 956 (id order) to 851 at 64 trials
    (``benchmarks/bench_solvers.py``). Ties in length fall back to the id.

    Args:
        doc_ids: The candidates' ids, in pool order.
        lengths: Their lengths (characters of text), or ``None`` for plain id order.
    """
    if lengths is None:
        return sorted(range(len(doc_ids)), key=lambda i: doc_ids[i])
    if len(lengths) != len(doc_ids):
        raise ValueError(f"{len(lengths)} lengths for {len(doc_ids)} documents")
    return sorted(range(len(doc_ids)), key=lambda i: (-int(lengths[i]), doc_ids[i]))
