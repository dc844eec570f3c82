"""The context-window fit is one rule: mining's pool fit and end-to-end's list fit both go through
:func:`deltap.trials.context.fit_window`, and each keeps exactly what its own copy of the rule kept before (the two
references below are the pre-issue-33 code of ``mining/runner.fit_context`` and ``endtoend/engine._fit``, written
out)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.mining.config import MiningConfig
from deltap.mining.design import canonical_order
from deltap.mining.pool import Candidate, Pool
from deltap.solvers.base import ContextWindow, SolveRequest
from deltap.trials.context import answer_reserve, fit_window
from deltap.trials.request import request_from_case


class WordWindow:
    """A :class:`ContextWindow` solver whose tokens are the words of the prompt (its documents and question)."""

    def __init__(self, n_ctx: int, max_tokens: dict[str, int] | None = None) -> None:
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens if max_tokens is not None else {"api_understanding": 5, "beir": 9}

    def tokens(self, request: SolveRequest) -> list[int]:
        words = request.question.split() + [w for d in request.documents for w in d.text.split()]
        return list(range(len(words)))

    def reference_tokens(self, reference: str) -> list[int]:
        return list(range(len(reference.split())))


def _case(ref: str | None = None) -> Case:
    return Case("c", "which one runs agents", ("d0",), CheckerSpec("string_match", {"answer": "x"}),
                reference_answer=ref)  # fmt: skip


def _corpus(rng: random.Random, n: int) -> Corpus:
    return Corpus([Document(f"d{i}", " ".join(["w"] * rng.randint(1, 30))) for i in range(n)])


def _old_mining_fit(pool: Pool, case: Case, corpus: Corpus, solver: Any, cfg: MiningConfig) -> tuple[Pool, Any]:
    """``mining/runner.fit_context`` before the trial layer (pass/logprob reserve and all)."""
    if not isinstance(solver, ContextWindow) or not pool.candidates:
        return pool, None
    n_ctx, count = int(solver.n_ctx), solver.tokens
    if cfg.outcome == "pass":
        mt = dict(solver.max_tokens or {})
        reserve = int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    else:
        ref = case.reference_answer
        reserve = len(solver.reference_tokens(ref)) if ref else 0
    base = request_from_case(case)

    def size(cands: list[Any]) -> int:
        ids = [c.doc_id for c in cands]
        lengths = [len(corpus[d].text) for d in ids] if cfg.context_order == "length" else None
        docs = tuple(corpus[ids[i]] for i in canonical_order(ids, lengths))
        return len(count(replace(base, documents=docs)))

    cands = list(pool.candidates)
    order = (
        sorted((c for c in cands if c.sources == ("retrieved",)), key=lambda c: -(c.retrieval_rank or 0))
        + [c for c in reversed(cands) if c.is_placebo]
        + [c for c in reversed(cands) if "gold" in c.sources]
    )
    dropped: list[str] = []
    tokens = size(cands)
    while cands and tokens + reserve > n_ctx and order:
        gone = order.pop(0)
        cands.remove(gone)
        dropped.append(gone.doc_id)
        tokens = size(cands) if cands else 0
    info = {"window": n_ctx, "reserve": reserve, "all_candidates_tokens": tokens, "dropped": dropped}
    return Pool(pool.case_id, cands, list(pool.missing_gold), [*pool.dropped, *dropped]), info


def _old_endtoend_fit(docs: list[str], case: Case, corpus: Corpus, solver: Any, outcome: str) -> tuple[list[str], int]:
    """``endtoend/engine._fit`` before the trial layer."""
    if not isinstance(solver, ContextWindow) or not docs:
        return docs, 0
    if outcome == "pass":
        mt = dict(solver.max_tokens or {})
        reserve = int(mt.get(case.benchmark_type) or max(mt.values(), default=0))
    else:
        ref = case.reference_answer
        reserve = len(solver.reference_tokens(ref)) if ref else 0
    base = request_from_case(case)
    kept = list(docs)
    while kept and len(solver.tokens(replace(base, documents=tuple(corpus[d] for d in kept)))) + reserve > int(
        solver.n_ctx
    ):
        kept.pop()
    return kept, len(docs) - len(kept)


def _pool(rng: random.Random, n: int) -> Pool:
    cands = []
    for i in range(n):
        kind = rng.choice(["gold", "retrieved", "retrieved", "placebo", "both"])
        sources = ("gold", "retrieved") if kind == "both" else (kind,)
        rank = rng.randint(1, 20) if "retrieved" in sources else None
        cands.append(Candidate(f"d{i}", sources, rank))
    return Pool("c", cands, ["gone"], ["capped"])


@pytest.mark.parametrize("seed", range(40))
def test_mining_fit_keeps_what_its_old_rule_kept(seed: int) -> None:
    from deltap.mining.runner import fit_context

    rng = random.Random(seed)
    n = rng.randint(1, 12)
    corpus, pool = _corpus(rng, n), _pool(rng, n)
    outcome = rng.choice(["pass", "logprob"])
    cfg = MiningConfig(outcome=outcome, context_order=rng.choice(["length", "id"]))
    case = _case("the reference answer" if outcome == "logprob" else None)
    solver = WordWindow(rng.randint(5, 150))
    new_pool, new_info = fit_context(pool, case, corpus, solver, cfg)
    old_pool, old_info = _old_mining_fit(pool, case, corpus, solver, cfg)
    assert new_pool == old_pool and new_info == old_info


@pytest.mark.parametrize("seed", range(40))
def test_endtoend_fit_keeps_what_its_old_rule_kept(seed: int) -> None:
    from deltap.endtoend.engine import fit_list

    rng = random.Random(seed)
    n = rng.randint(0, 8)
    corpus = _corpus(rng, n)
    docs = rng.sample([f"d{i}" for i in range(n)], n)
    outcome = rng.choice(["pass", "logprob"])
    case = _case("a b c" if outcome == "logprob" else None)
    solver = WordWindow(rng.randint(5, 150))
    assert fit_list(docs, case, corpus, solver, outcome) == _old_endtoend_fit(docs, case, corpus, solver, outcome)


def test_fit_window_drops_in_the_order_given_and_keeps_the_prompt_order() -> None:
    docs = [Document(f"d{i}", " ".join(["w"] * 10)) for i in range(4)]
    case = _case()  # 4 question words; reserve 5 (api_understanding)
    fit = fit_window(case, docs, WordWindow(4 + 5 + 20), "pass", drop_order=[1, 3, 0, 2])
    assert fit is not None and fit.kept == [0, 2] and fit.dropped == [1, 3] and fit.tokens == 24 and fit.reserve == 5
    last_first = fit_window(case, docs, WordWindow(4 + 5 + 20), "pass")
    assert last_first is not None and last_first.kept == [0, 1]
    never = fit_window(case, docs, WordWindow(10), "pass", drop_order=[3])  # only d3 may go: the rest stays
    assert never is not None and never.kept == [0, 1, 2] and never.dropped == [3]


def test_no_window_no_fit() -> None:
    class NoWindow:
        pass

    docs = [Document("d0", "w")]
    assert fit_window(_case(), docs, NoWindow(), "pass") is None
    assert fit_window(_case(), [], WordWindow(1), "pass") is None


def test_the_answer_room() -> None:
    solver = WordWindow(100, {"beir": 9, "fix_error": 30})
    assert answer_reserve(_case(), solver, "pass") == 30  # no row for api_understanding: the largest
    assert answer_reserve(_case("one two three"), solver, "logprob") == 3
    assert answer_reserve(_case(None), solver, "logprob") == 0
