"""Dict runs are converted block by block (issue 37): every block's scores and judged lookups land in the right
place, and a bad score in any block is refused with the whole-run message of before."""

from __future__ import annotations

import random

import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.evaluation import ranking as rk
from deltap.evaluation.ranking import NOT_RETRIEVED, rank_from_dicts


def _case(n_queries: int, seed: int) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        docs = [f"d{i}" for i in rng.sample(range(60), rng.randint(0, 12))]
        kinds = [float, int, np.float32, np.int64, float]  # numbers of every accepted type, in some blocks
        run[f"q{q}"] = {d: kinds[q % 5](rng.choice([1, 2, 3, 5, 8])) for d in docs}
        qrels[f"q{q}"] = {f"d{i}": rng.randint(0, 3) for i in rng.sample(range(60), rng.randint(1, 6))}
    return qrels, run


@pytest.mark.parametrize("block", [1, 3, 256])
def test_blocks_give_the_ranks_of_the_trec_eval_rule(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", block)
    qrels, run = _case(700, 1)
    query_ids = list(qrels)
    r = rank_from_dicts(qrels, run, query_ids)
    want = []
    for qi, q in enumerate(query_ids):
        row = run.get(q, {})
        for d, g in qrels[q].items():
            if g > 0:
                if d not in row:
                    rank = int(NOT_RETRIEVED)
                else:
                    s = float(row[d])
                    rank = (
                        1
                        + sum(float(v) > s for v in row.values())
                        + sum(float(v) == s and e > d for e, v in row.items())
                    )
                want.append((qi, rank, g, d))
    want.sort(key=lambda t: (t[0], t[1]))
    assert list(zip(r.query.tolist(), r.rank.tolist(), r.grade.tolist(), r.doc_ids, strict=True)) == want
    assert r.n_retrieved.tolist() == [len(run.get(q, {})) for q in query_ids]


@pytest.mark.parametrize("bad", ["1.5", True, None])
def test_a_bad_score_in_a_late_block_is_named_with_the_others(bad: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", 4)
    qrels, run = _case(40, 2)
    run["q3"]["x1"] = bad  # type: ignore[assignment]
    run["q37"]["x2"] = bad  # type: ignore[assignment]
    with pytest.raises(DeltapError) as err:
        rank_from_dicts(qrels, run, list(qrels), run_name="bm25")
    assert (
        str(err.value) == f"bm25: scores must be numbers; bad entries: ('q3', 'x1') = {bad!r}; ('q37', 'x2') = {bad!r}"
    )


def test_a_nan_in_a_late_block_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rk, "_ROW_BLOCK", 4)
    qrels, run = _case(40, 3)
    run["q38"]["x"] = float("inf")
    with pytest.raises(
        DeltapError, match=r"bm25: 1 scores are NaN or infinite, so their ranks are undefined: \('q38', 'x'\) = inf$"
    ):
        rank_from_dicts(qrels, run, list(qrels), run_name="bm25")
