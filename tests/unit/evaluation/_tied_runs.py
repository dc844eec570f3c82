"""Random qrels and runs with many ties, shared by the dict-path tests (test_dict_path_pieces, test_accel)."""

from __future__ import annotations

import random
from collections.abc import Sequence


def tied_data(
    seed: int, n: int = 120, scores: Sequence[float] = (0.25, 0.5, 1.0, 2.0)
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """``n`` queries of 5 judged documents each (grades 0-3) and runs of 0-30 of their 30-document pool scored from
    the few ``scores`` (ties everywhere); every seventh query from the fourth on has qrels and no run row (empty rows
    occur too), and one run query (``only-in-run``) has no qrels."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n):
        pool = [f"d{i}" for i in rng.sample(range(60), 30)]
        qrels[f"q{q}"] = {d: rng.randint(0, 3) for d in pool[:5]}
        if q % 7 != 3:
            run[f"q{q}"] = {d: rng.choice(scores) for d in rng.sample(pool, rng.randint(0, 30))}
    run["only-in-run"] = {"d1": 1.0}
    return qrels, run
