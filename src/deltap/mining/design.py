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

__all__ = ["CONTEXT_ORDERS", "canonical_order", "inclusion_vector", "trial_seed"]

#: choices of :attr:`MiningConfig.context_order`
CONTEXT_ORDERS = ("length", "id")


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
