"""Issue 27, item 4: hosted limits learned from 429s, not only configured — on a fake clock, and over real HTTP against
``tests/fake_openai.py``'s provider-style server."""

from __future__ import annotations

import pytest

from deltap.solvers.base import SolveRequest
from deltap.solvers.ratelimit import RECOVER_AFTER, RateLimitAdapted, RateLimiter, RateLimits
from deltap.solvers.retry import RetryPolicy
from tests.unit.solvers.test_ratelimit import FakeClock, limiter


def test_a_stated_limit_is_adopted_at_once_and_said_once() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=120)
    with pytest.warns(
        RateLimitAdapted,
        match=r"refuses requests below the configured 120 requests/min: pacing at 30 requests/min \(90% of the 33.3333",
    ):
        assert lim.refused(requests_per_minute=100 / 3) is not None
    assert lim.pace()["requests_per_minute"] == pytest.approx(30)
    assert lim.reserve() == 0 and lim.reserve() == pytest.approx(2.0)  # one request every 2 s from now on
    for _ in range(3 * RECOVER_AFTER):  # answered requests never lift the pace above the stated limit
        lim.settle(10, 12)
    assert lim.pace()["requests_per_minute"] == pytest.approx(30)
    assert lim.refused(requests_per_minute=100 / 3) is None  # not lower: nothing changes, nothing said
    assert lim.stats()["adapted"] == 1


def test_repeated_429s_without_a_stated_limit_lower_the_pace_and_answers_bring_it_back() -> None:
    clock = FakeClock()
    lim = limiter(clock, requests_per_minute=120)
    assert lim.refused() is None  # one 429 is a blip (its Retry-After pauses the endpoint)
    clock.now += 61
    assert lim.refused() is None  # the next one more than a minute later: still a blip
    clock.now += 1
    with pytest.warns(RateLimitAdapted, match=r"pacing at 60 requests/min \(repeated 429s"):
        lim.refused()
    assert lim.pace()["requests_per_minute"] == pytest.approx(60)
    lim.refused()
    lim.refused()  # a second pair: lower again, and not said again (no warning: the test would fail on one)
    assert lim.pace()["requests_per_minute"] == pytest.approx(30) and lim.stats()["adapted"] == 2
    for _ in range(RECOVER_AFTER - 1):
        lim.settle(10, 12)
    assert lim.pace()["requests_per_minute"] == pytest.approx(30)
    lim.settle(10, 0)  # a refused attempt settles 0: not an answer
    lim.settle(10, 12)
    assert lim.pace()["requests_per_minute"] == pytest.approx(42)  # + a tenth of the configured 120
    for _ in range(10 * RECOVER_AFTER):
        lim.settle(10, 12)
    assert lim.pace()["requests_per_minute"] == pytest.approx(120)  # never above the configured rate


def test_a_token_limit_is_learned_too() -> None:
    lim = limiter(FakeClock(), requests_per_minute=600, tokens_per_minute=100_000)
    with pytest.warns(RateLimitAdapted, match="18000 tokens/min"):
        lim.refused(None, 20_000)
    assert lim.pace() == {"requests_per_minute": pytest.approx(600), "tokens_per_minute": pytest.approx(18_000)}


class _Configured(RateLimiter):
    """The limiter before issue 27: paces to the configured rate whatever the server says."""

    def refused(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> str | None:
        return None


def _run(lim: RateLimiter, state_limit: bool, n: int = 40) -> list[float]:
    """``n`` answers through the fake provider (600 requests/min, 5x below the configured 3000): the refusal times."""
    from deltap.solvers.openai_compat import OpenAISolver
    from tests.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(
        answer=lambda body: "BaseAgent", requests_per_minute=600, burst=2.0, state_limit=state_limit
    ) as srv:
        solver = OpenAISolver(
            model="m",
            base_url=srv.url,
            retry=RetryPolicy(max_attempts=10, base_delay=0.01, max_delay=0.2),
            timeout=5.0,
            limiter=lim,
        )
        answers = [solver.answer(SolveRequest(f"c{i}", "What is the base class?")) for i in range(n)]
        assert all(a.text == "BaseAgent" for a in answers)
        return list(srv.refused)


def test_openai_solver_adopts_the_limit_a_429_states_over_http() -> None:
    lim = RateLimiter(RateLimits(requests_per_minute=3000))
    with pytest.warns(RateLimitAdapted, match="90% of the 600 the provider stated"):
        refused = _run(lim, state_limit=True)
    assert lim.pace()["requests_per_minute"] == pytest.approx(540)
    assert 1 <= len(refused) <= 4  # the first 429 teaches the limit; the pace holds under it from then on


def test_openai_solver_backs_off_on_repeated_429s_that_state_no_limit_over_http() -> None:
    baseline = _run(_Configured(RateLimits(requests_per_minute=3000)), state_limit=False)
    lim = RateLimiter(RateLimits(requests_per_minute=3000))
    with pytest.warns(RateLimitAdapted, match=r"repeated 429s"):
        refused = _run(lim, state_limit=False)
    assert (lim.pace()["requests_per_minute"] or 0) <= 600 + 300  # at most one recovery step above the real limit
    assert len(refused) <= len(baseline) / 2, (len(refused), len(baseline))  # it stopped hammering the endpoint
