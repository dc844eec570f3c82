"""Response cache and bounded concurrency, with an injectable fake solver."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from deltap.documents import Document
from deltap.solvers import asolve_many, make_solver, score_many, solve_many
from deltap.solvers.base import Answer, Score, SolveRequest, SolverError
from deltap.solvers.caching import CachedSolver, ResponseCache


class FakeSolver:
    """Answers with the number of documents; fails on questions containing 'fail'; tracks concurrency."""

    def __init__(self, delay: float = 0.0, max_tokens: int = 8, rendezvous: int | None = None) -> None:
        self.id = "fake:v1"
        self.delay = delay
        self.max_tokens = max_tokens
        # Calls wait until `rendezvous` of them are in flight at once: proves the concurrency is reached without
        # relying on sleeps overlapping (a generous timeout turns a missing overlap into a failure, not a hang).
        self._barrier = threading.Barrier(rendezvous, timeout=60) if rendezvous else None
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def describe(self) -> dict[str, object]:
        return {"max_tokens": self.max_tokens}

    def answer(self, request: SolveRequest) -> Answer:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if self._barrier is not None:
                self._barrier.wait()
            time.sleep(self.delay)
            if "fail" in request.question:
                raise SolverError("server said no")
            return Answer(f"{request.question}:{len(request.documents)}", {"prompt_tokens": 3}, 0.5, {"r": 1}, self.id)
        finally:
            with self._lock:
                self.in_flight -= 1

    def score(self, request: SolveRequest, reference: str) -> Score:
        self.calls += 1
        return Score(-float(len(reference)), len(reference), 0.1, self.id)


DOC = Document("d1", "text")


def test_cache_replays_exactly_and_counts(tmp_path: Path) -> None:
    inner = FakeSolver()
    cached = CachedSolver(inner, tmp_path / "cache.sqlite")
    req = SolveRequest("c", "Q", (DOC,))
    first = cached.answer(req)
    again = cached.answer(replace(req, case_id="other"))  # case_id is not part of the prompt
    assert again == first and inner.calls == 1 and (cached.hits, cached.misses) == (1, 1)
    # a new process (new object) replays from the same file
    reopened = CachedSolver(FakeSolver(), tmp_path / "cache.sqlite")
    assert reopened.answer(req) == first and reopened.inner.calls == 0
    assert cached.score(req, "abc") == cached.score(req, "abc") and inner.calls == 2
    assert cached.score(req, "abcd").logprob == -4.0


def test_cache_key_covers_prompt_and_parameters(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    a = CachedSolver(FakeSolver(max_tokens=8), path)
    b = CachedSolver(FakeSolver(max_tokens=16), path)
    req = SolveRequest("c", "Q", (DOC,))
    a.answer(req)
    b.answer(req)
    a.answer(replace(req, documents=()))
    assert (a.misses, b.misses) == (2, 1) and len(a.cache) == 3


def test_errors_are_never_cached(tmp_path: Path) -> None:
    inner = FakeSolver()
    cached = CachedSolver(inner, tmp_path / "c.sqlite")
    for _ in range(2):
        with pytest.raises(SolverError):
            cached.answer(SolveRequest("c", "please fail"))
    assert inner.calls == 2 and len(cached.cache) == 0


def test_cached_batches_mix_hits_and_misses(tmp_path: Path) -> None:
    cached = CachedSolver(FakeSolver(), ResponseCache(tmp_path / "c.sqlite"))
    reqs = [SolveRequest("c", f"Q{i}") for i in range(4)]
    cached.answer(reqs[1])
    out = cached.answer_many([*reqs, SolveRequest("c", "fail")])
    assert [o.text if isinstance(o, Answer) else "ERR" for o in out] == ["Q0:0", "Q1:0", "Q2:0", "Q3:0", "ERR"]
    assert cached.hits == 1
    scores = cached.score_many(reqs[:2], ["a", "bb"])
    assert [s.logprob for s in scores if isinstance(s, Score)] == [-1.0, -2.0]


class BatchFake(FakeSolver):
    """A batch solver (like the local one): records the batches it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def answer_many(self, requests: list[SolveRequest]) -> list[Answer | SolverError]:
        self.batches.append([r.question for r in requests])
        return [self.answer(r) for r in requests]

    def score_many(self, requests: list[SolveRequest], reference: str | list[str]) -> list[Score | SolverError]:
        refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
        self.batches.append([r.question for r in requests])
        return [self.score(r, ref) for r, ref in zip(requests, refs, strict=True)]


def test_cached_batches_hand_the_misses_to_a_batch_solver_as_one_batch(tmp_path: Path) -> None:
    inner = BatchFake()
    cached = CachedSolver(inner, ResponseCache(tmp_path / "c.sqlite"))
    reqs = [SolveRequest("c", f"Q{i}") for i in range(4)]
    cached.answer(reqs[1])
    out = cached.answer_many(reqs)
    assert [o.text for o in out if isinstance(o, Answer)] == ["Q0:0", "Q1:0", "Q2:0", "Q3:0"]
    assert inner.batches == [["Q0", "Q2", "Q3"]]  # the misses, in order, in one call
    scores = cached.score_many(reqs[:3], ["a", "bb", "c"])
    assert [s.logprob for s in scores if isinstance(s, Score)] == [-1.0, -2.0, -1.0]
    assert inner.batches[-1] == ["Q0", "Q1", "Q2"]


def test_solve_many_bounds_concurrency_and_keeps_order() -> None:
    inner = FakeSolver(rendezvous=3)  # 12 requests = 4 groups of 3 calls in flight together
    reqs = [SolveRequest("c", f"Q{i}" if i != 3 else "fail me") for i in range(12)]
    out = solve_many(inner, reqs, concurrency=3)
    assert inner.peak == 3 and inner.calls == 12
    assert isinstance(out[3], SolverError)
    assert [o.text for i, o in enumerate(out) if i != 3 and isinstance(o, Answer)] == [
        f"Q{i}:0" for i in range(12) if i != 3
    ]
    with pytest.raises(ValueError, match="concurrency"):
        solve_many(inner, reqs, concurrency=0)


def test_asolve_many_bounds_concurrency() -> None:
    inner = FakeSolver(rendezvous=2)
    reqs = [SolveRequest("c", f"Q{i}") for i in range(8)]
    out = asyncio.run(asolve_many(inner, reqs, concurrency=2))
    assert (
        inner.peak == 2
        and inner.calls == 8
        and [o.text for o in out if isinstance(o, Answer)] == [f"Q{i}:0" for i in range(8)]
    )


def test_score_many_generic_and_reference_count() -> None:
    reqs = [SolveRequest("c", "Q")] * 3
    assert [
        s.logprob for s in score_many(FakeSolver(), reqs, ["a", "bb", "ccc"], concurrency=2) if isinstance(s, Score)
    ] == [-1.0, -2.0, -3.0]
    with pytest.raises(ValueError, match="references"):
        score_many(FakeSolver(), reqs, ["a"])


def test_make_solver_wraps_in_cache(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    s = make_solver("local", cache=tmp_path / "c.sqlite", n_ctx=256)
    assert isinstance(s, CachedSolver) and s.id.startswith("llama_cpp:SmolLM2-135M-Instruct")
    assert "model_path" not in s.params
