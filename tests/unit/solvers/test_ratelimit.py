"""The per-endpoint rate limiter on a fake clock, and the OpenAI-compatible solver pacing real HTTP through it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from deltap.errors import DeltapError
from deltap.solvers.base import SolveRequest
from deltap.solvers.ratelimit import RateLimiter, RateLimits, estimate_tokens, shared_limiter
from deltap.solvers.retry import RetryPolicy
from tests.unit.solvers.test_openai_compat import Script, chat_body, server  # noqa: F401 - the fixture is used by name


class FakeClock:
    """Monotonic seconds that only move when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limiter(clock: FakeClock, **kw: Any) -> RateLimiter:
    return RateLimiter(RateLimits(**kw), clock=clock, sleep=clock.sleep)


def test_requests_are_paced_to_the_rate_after_the_burst() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=60)  # one a second, no burst by default
    assert [lim.reserve() for _ in range(5)] == [0.0, 1.0, 2.0, 3.0, 4.0]
    fast = limiter(FakeClock(), requests_per_minute=600, burst_seconds=1.0)  # 10/s: a second's burst is 10 requests
    waits = [fast.reserve() for _ in range(13)]
    assert waits[:10] == [0.0] * 10
    assert waits[10:] == pytest.approx([0.1, 0.2, 0.3])


def test_the_bucket_refills_with_time() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=600, burst_seconds=1.0)
    for _ in range(10):
        assert lim.reserve() == 0.0
    clock.now = 0.5  # half a second later: 5 requests' worth refilled
    assert [lim.reserve() for _ in range(6)] == pytest.approx([0, 0, 0, 0, 0, 0.1])


def test_tokens_per_minute_paces_by_size_and_a_request_larger_than_the_burst_waits_for_a_full_bucket() -> None:
    clock = FakeClock()
    lim = limiter(clock, tokens_per_minute=6000, burst_seconds=1.0)  # 100 tokens/s, burst 100
    assert lim.reserve(50) == 0.0 and lim.reserve(50) == 0.0
    assert lim.reserve(50) == pytest.approx(0.5)
    strict = limiter(FakeClock(), tokens_per_minute=6000)  # no burst: each request waits for the last one's tokens
    assert [strict.reserve(50) for _ in range(3)] == pytest.approx([0.0, 0.5, 1.0])
    big = limiter(FakeClock(), tokens_per_minute=6000, burst_seconds=1.0)
    assert big.reserve(10) == 0.0
    assert big.reserve(300) == pytest.approx(0.1)  # waits until the bucket is full again, then goes into debt
    assert big.reserve(100) == pytest.approx(3.1)  # the debt of 200 tokens is 2 s, then a full bucket: 1 s more


def test_settle_books_the_real_usage() -> None:
    clock = FakeClock()
    lim = limiter(clock, tokens_per_minute=6000, burst_seconds=1.0)
    assert lim.reserve(100) == 0.0
    assert lim.reserve(100) == pytest.approx(1.0)
    lim.settle(100, 10)  # the second request used 10 tokens, not 100: 0.9 s given back
    assert lim.reserve(100) == pytest.approx(1.1)
    lim2 = limiter(FakeClock(), tokens_per_minute=6000, burst_seconds=1.0)
    lim2.reserve(100)
    lim2.settle(100, 400)  # used more than reserved: the next waits for the overdraft too
    assert lim2.reserve(100) == pytest.approx(4.0)


def test_both_limits_apply_and_the_stricter_one_wins() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=60, tokens_per_minute=60_000, burst_seconds=1.0)  # 1 req/s, 1000 tok/s
    assert [lim.reserve(10) for _ in range(3)] == [0.0, 1.0, 2.0]  # requests bind
    lim = limiter(
        FakeClock(), requests_per_minute=6000, tokens_per_minute=600, burst_seconds=1.0
    )  # 100 req/s, 10 tok/s
    assert [lim.reserve(10) for _ in range(3)] == pytest.approx([0.0, 1.0, 2.0])  # tokens bind


def test_retry_after_pauses_every_caller_even_one_already_booked() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=600, burst_seconds=1.0)
    lim.penalize(5.0)
    assert lim.reserve() == pytest.approx(5.0)
    # A caller that booked a slot before the 429 arrived still waits out the pause.
    clock2 = FakeClock()
    lim2 = limiter(clock2, requests_per_minute=60)
    lim2.reserve()
    wait = lim2.reserve()  # booked for t = 1
    assert wait == 1.0
    lim2.penalize(3.0)  # at t = 0 the server says Retry-After: 3
    lim2.sleep(wait)
    while (left := lim2.blocked_for()) > 0:
        lim2.sleep(left)
    assert clock2.now == pytest.approx(3.0)
    assert lim2.stats()["pauses"] == 1


def test_acquire_sleeps_for_the_booking_and_the_pause() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=60)
    lim.acquire()
    lim.acquire()
    assert clock.now == pytest.approx(1.0)
    lim.penalize(2.5)
    lim.acquire()  # booked for t = 3.5 (the pause), the bucket would allow t = 2
    assert clock.now == pytest.approx(3.5)


def test_acquire_async_waits_with_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=60)
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)

    async def three() -> None:
        for _ in range(3):
            await lim.acquire_async(0)

    asyncio.run(three())
    assert slept == [1.0, 1.0] and clock.now == 2.0


def test_no_sixty_second_window_ever_exceeds_the_limit() -> None:
    """Requests arriving in bursts and lulls (seeded): with the default strict pace the sends never exceed the limit in
    any window of 60 s, nor of 1 s (a provider may count over either), and the rate is held."""
    import random

    rng = random.Random(7)
    clock = FakeClock()
    rpm = 120
    lim = limiter(clock, requests_per_minute=rpm)
    sends = []
    t = 0.0
    for _ in range(2000):
        t += rng.choice([0.0, 0.0, 0.0, 0.01, 0.1, 1.0])  # on average 5 requests/s offered, 2/s allowed
        clock.now = t
        sends.append(t + lim.reserve())
    sends.sort()
    for window, most in ((60.0, rpm), (1.0, rpm // 60)):
        j = 0
        for i, s in enumerate(sends):
            while sends[j] <= s - window + 1e-9:  # the half-open window (s - window, s]
                j += 1
            assert i - j + 1 <= most
    assert len(sends) / (sends[-1] - sends[0]) == pytest.approx(rpm / 60, rel=0.02)  # and it holds the rate


def test_threads_share_one_limiter_safely() -> None:
    clock = FakeClock()
    lim = RateLimiter(RateLimits(requests_per_minute=600, burst_seconds=1.0), clock=clock, sleep=lambda s: None)
    waits: list[float] = []
    guard = threading.Lock()

    def many() -> None:
        for _ in range(250):
            w = lim.reserve()
            with guard:
                waits.append(w)

    threads = [threading.Thread(target=many) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # 1,000 bookings at t = 0: 10 free, then one slot every 0.1 s, no slot given twice
    assert sorted(round(w, 6) for w in waits) == [0.0] * 10 + [round(0.1 * k, 6) for k in range(1, 991)]


def test_bad_limits_are_refused() -> None:
    with pytest.raises(DeltapError, match="requests_per_minute must be positive"):
        RateLimits(requests_per_minute=0)
    assert not RateLimits().active


def test_shared_limiter_is_one_per_endpoint() -> None:
    a = shared_limiter("openai:test-endpoint-1:m", RateLimits(requests_per_minute=60))
    b = shared_limiter("openai:test-endpoint-1:m", RateLimits(requests_per_minute=60))
    c = shared_limiter("openai:test-endpoint-2:m", RateLimits(requests_per_minute=60))
    assert a.inner is b.inner and a.inner is not c.inner


def test_estimate_tokens_counts_prompt_characters_and_the_completion_ceiling() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 400}], 32) == 100 + 1 + 32


def test_openai_solver_books_each_attempt_and_shares_retry_after(server: tuple[str, list[Script]]) -> None:  # noqa: F811
    """Over real HTTP: a 429 with Retry-After pauses the endpoint's limiter; each attempt books a slot; usage settles."""
    from deltap.solvers.openai_compat import OpenAISolver

    url, holder = server
    holder[0] = Script(
        (429, {"retry-after": "2"}, {"error": {"message": "rate limited"}}, 0.0), (200, {}, chat_body(), 0.0)
    )
    clock = FakeClock()
    lim = RateLimiter(
        RateLimits(requests_per_minute=600, tokens_per_minute=60_000, burst_seconds=1.0), clock=clock, sleep=clock.sleep
    )
    retry = RetryPolicy(max_attempts=3, base_delay=0.01, sleep=lambda s: None)
    solver = OpenAISolver(model="m", base_url=url, retry=retry, timeout=5.0, limiter=lim)
    ans = solver.answer(SolveRequest("c1", "What is the base class?"))
    assert ans.text == "BaseAgent" and ans.usage["attempts"] == 2
    stats = lim.stats()
    assert stats["requests"] == 2 and stats["pauses"] == 1
    assert clock.now == pytest.approx(2.0)  # the second attempt waited out the server's Retry-After
    reserved = stats["tokens_reserved"] // 2
    assert stats["tokens_settled"] == (0 - reserved) + (13 - reserved)  # refused: 0 tokens; answered: usage 13


def test_openai_solver_rate_limits_are_not_part_of_its_id(server: tuple[str, list[Script]]) -> None:  # noqa: F811
    from deltap.solvers.openai_compat import OpenAISolver

    url, _ = server
    plain = OpenAISolver(model="m", base_url=url)
    paced = OpenAISolver(model="m", base_url=url, requests_per_minute=100, tokens_per_minute=10_000)
    assert plain.id == paced.id and plain.limiter is None
    assert paced.limiter is not None and paced.limiter.limits == RateLimits(100, 10_000)
