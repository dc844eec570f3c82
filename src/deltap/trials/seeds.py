"""The trial seed: one 63-bit seed per trial, a pure function of ``(run seed, case id, trial kind, trial index)``.

Every trial of a case gets its own seed by hashing those four with SHA-256, so any single trial can be replayed
alone, reruns reproduce the same subsets whatever order trials run in, a fleet of workers can each take a
``(case, trial)`` unit, and two kinds never share a seed (``design`` vs ``coalition`` vs ``endtoend:<system>``: an
end-to-end trial never coincides with a mining trial).
"""

from __future__ import annotations

import hashlib

__all__ = ["trial_seed"]


def trial_seed(run_seed: int, case_id: str, index: int, kind: str = "design") -> int:
    """A 63-bit seed for one trial: ``SHA-256("deltap|run_seed|case_id|kind|index")`` truncated."""
    digest = hashlib.sha256(f"deltap|{int(run_seed)}|{case_id}|{kind}|{int(index)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
