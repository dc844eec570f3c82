"""The randomised design: per-trial seeds and inclusion vectors.

Every trial of a case gets its own seed derived by hashing ``(run seed, case id, trial kind, trial index)`` with
SHA-256, so any single trial can be replayed alone, reruns reproduce the same subsets whatever order trials run in,
and a fleet of workers can each take a ``(case, trial)`` unit. The inclusion vector puts each candidate in with
probability π independently (a 2^m factorial design sampled at random), drawn from ``numpy.random.PCG64(seed)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["canonical_order", "inclusion_vector", "trial_seed"]


def trial_seed(run_seed: int, case_id: str, index: int, kind: str = "design") -> int:
    """A 63-bit seed for one trial: ``SHA-256("deltap|run_seed|case_id|kind|index")`` truncated."""
    digest = hashlib.sha256(f"deltap|{int(run_seed)}|{case_id}|{kind}|{int(index)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def inclusion_vector(seed: int, m: int, pi: float = 0.5) -> NDArray[np.bool_]:
    """Which of ``m`` candidates are in the context of the trial with this seed (each with probability ``pi``)."""
    if not 0.0 < pi < 1.0:
        raise ValueError(f"inclusion probability pi must be in (0, 1), got {pi}")
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.asarray(rng.random(m) < pi, dtype=bool)


def canonical_order(doc_ids: Sequence[str]) -> list[int]:
    """Positions of ``doc_ids`` in the canonical context order (sorted by id).

    The order depends on the ids only — never on provenance, so a solver cannot infer which documents are gold from
    where they appear — and it is the same in every trial of a case, so prompts share long prefixes.
    """
    return sorted(range(len(doc_ids)), key=lambda i: doc_ids[i])
