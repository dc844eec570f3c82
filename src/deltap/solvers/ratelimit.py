"""A per-endpoint rate limiter: requests and tokens per minute, ``Retry-After`` honoured by every caller.

Hosted LLMs are bounded by their provider's limits, not by our CPU: a run that sends faster than the limit gets
429s, and every 429 is a wasted attempt and a retry delay. :class:`RateLimiter` paces the calls so they never ask
for more than the configured rate in the first place, and shares a server's ``Retry-After`` with every caller.

**Reservations (GCRA).** Each limit is a token bucket — ``requests_per_minute`` (cost 1 per request) and
``tokens_per_minute`` (cost: the request's estimated tokens) — holding at most ``burst_seconds`` worth of its rate
(default none: one request at a time, strictly paced; a bucket of ``C`` lets ``C - 1`` requests more than the rate
through in any window, which a provider that counts over a sliding window refuses).
:meth:`RateLimiter.reserve` books the earliest time at which every bucket can pay and returns the seconds to wait
until then; the caller sleeps (in its own thread, or ``await``\\ s in asyncio) and sends. Booking is first come, first
served and costs one lock (or one round trip to a limiter actor on Ray): nobody polls. This is the generic cell rate
algorithm (ITU-T I.371's virtual scheduling): each bucket keeps the time ``tat`` at which it would be full again; a
request of cost ``c`` may go when the bucket holds ``min(c, capacity)`` and pushes ``tat`` by ``c / rate``.

**Tokens are estimated, then settled.** Before a call its tokens are unknown: the solvers reserve
``len(prompt) / 4 + max_tokens`` (OpenAI's rule of thumb of 4 characters per token, and the completion's ceiling,
which is what OpenAI itself counts against a token limit before a call) and :meth:`RateLimiter.settle` books the
difference once the response reports its usage.

**Retry-After.** A 429 (or 503) with ``Retry-After`` pauses the whole endpoint (:meth:`RateLimiter.penalize`):
every caller, including those already holding a reservation, waits until the pause ends.

**Limits learned, not only configured.** A provider whose effective limit is lower than ``--rpm``/``--tpm`` (a
lower tier, a shared key, a limit per project) answers 429s. :meth:`RateLimiter.refused` takes each one: when the
response carries the provider's limit (``x-ratelimit-limit-requests`` / ``-tokens``, as OpenAI sends them) the
limiter paces at :data:`STATED_MARGIN` of it from then on (exactly at the limit, any jitter trips it); without one, a second 429 within a minute at the configured pace halves the
request rate (:data:`DECREASE`, multiplicative decrease), and every :data:`RECOVER_AFTER` answered requests in a row
give back a tenth of the configured rate, up to the known ceiling (additive increase) — so a long run neither
hammers the endpoint nor idles at a rate the provider no longer enforces. The first change is said once, as a
:class:`RateLimitAdapted` warning naming the endpoint and the new pace; :meth:`RateLimiter.stats` counts them all.

**Shared by every worker of a run.** :func:`shared_limiter` returns one limiter per endpoint key in a process; a
Ray run replaces it (:func:`use_backend`) with one limiter actor per endpoint that every replica calls
(:class:`RemoteLimiter`). Clock and sleep are injectable (tests run on a fake clock).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from deltap.errors import DeltapError

__all__ = [
    "DECREASE",
    "RECOVER_AFTER",
    "STATED_MARGIN",
    "AdaptiveLimiter",
    "Limiter",
    "RateLimitAdapted",
    "RateLimiter",
    "RateLimits",
    "RemoteLimiter",
    "estimate_tokens",
    "paced",
    "shared_limiter",
    "sharing_retry_after",
    "use_backend",
]

#: answered requests in a row after which a limiter lowered by 429s gives back a tenth of its configured rate
RECOVER_AFTER = 30
#: factor a pair of 429s within a minute (no limit stated) multiplies the request pace by
DECREASE = 0.5
#: share of a stated limit the limiter paces at: pacing at exactly the limit trips it on any clock jitter
STATED_MARGIN = 0.9


class RateLimitAdapted(UserWarning):
    """An endpoint's limiter paces below the configured ``--rpm``/``--tpm``: the provider's effective limit is lower."""


T = TypeVar("T")


@dataclass(frozen=True)
class RateLimits:
    """The limits of one endpoint.

    Args:
        requests_per_minute: Requests per minute (``None``: no request limit).
        tokens_per_minute: Prompt + completion tokens per minute (``None``: no token limit).
        burst_seconds: How much of the rate may be spent at once, in seconds of it (0, the default: no burst, every
            request paced; 1.0: a second's worth back to back, then the steady pace). Providers enforce per-minute
            limits over shorter windows too (OpenAI: "60,000 requests/minute may be enforced as 1,000 requests/second"),
            so the strict pace is the one that never trips them.
    """

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_seconds: float = 0.0

    def __post_init__(self) -> None:
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise DeltapError(f"{name} must be positive, got {value}")
        if not self.burst_seconds >= 0:
            raise DeltapError(f"burst_seconds must be at least 0, got {self.burst_seconds}")

    @property
    def active(self) -> bool:
        return self.requests_per_minute is not None or self.tokens_per_minute is not None


class Limiter(Protocol):
    """What a solver asks of a limiter (a local :class:`RateLimiter` or a :class:`RemoteLimiter`)."""

    def acquire(self, tokens: int = 0) -> int:
        """Wait until a request of ``tokens`` may be sent; returns the tokens reserved (for :meth:`settle`)."""
        ...

    def settle(self, reserved: int, used: int) -> None:
        """The request reserved ``reserved`` tokens and used ``used``."""
        ...

    def penalize(self, seconds: float) -> None:
        """The server said ``Retry-After: seconds``: pause every caller of the endpoint."""
        ...


@runtime_checkable
class AdaptiveLimiter(Protocol):
    """A limiter that learns a lower effective limit from the provider's 429s (see the module docstring)."""

    def refused(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> str | None:
        """A request was refused with 429 (and the limits the response stated, if any); returns the message of the
        first adaptation (``None`` otherwise)."""
        ...


class _Bucket:
    """One GCRA bucket: ``rate`` units per second, capacity ``burst`` units."""

    def __init__(self, per_minute: float, burst_seconds: float, at_least: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(at_least, self.rate * burst_seconds)
        self.tat = float("-inf")  # when the bucket is full again

    def earliest(self, cost: float) -> float:
        return self.tat - (self.capacity - min(cost, self.capacity)) / self.rate

    def book(self, when: float, cost: float) -> None:
        self.tat = max(self.tat, when) + cost / self.rate


class RateLimiter:
    """Paces requests to :class:`RateLimits` (see the module docstring). Thread-safe.

    Args:
        limits: The endpoint's limits.
        clock: Monotonic seconds (injectable).
        sleep: Blocking sleep (injectable).
    """

    def __init__(
        self,
        limits: RateLimits,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.limits = limits
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._requests = (
            _Bucket(limits.requests_per_minute, limits.burst_seconds, 1.0) if limits.requests_per_minute else None
        )
        self._tokens = (
            _Bucket(limits.tokens_per_minute, limits.burst_seconds, 1.0) if limits.tokens_per_minute else None
        )
        self._blocked_until = float("-inf")
        self._stats = {
            "requests": 0,
            "tokens_reserved": 0,
            "tokens_settled": 0,
            "waited_seconds": 0.0,
            "pauses": 0,
            "adapted": 0,
        }
        # what the pace may return to after 429s lowered it: the configured rates, or the lower ones a provider stated
        self._ceiling = {"requests": limits.requests_per_minute, "tokens": limits.tokens_per_minute}
        self._refusals: list[float] = []  # times of recent 429s without a stated limit
        self._answered = 0  # answered requests since the last 429
        self._announced = False
        self.name = ""  # the endpoint, for the message (set by shared_limiter)

    def reserve(self, tokens: int = 0) -> float:
        """Book the earliest slot for a request of ``tokens``; returns the seconds to wait before sending it."""
        with self._lock:
            now = self.clock()
            when = max(now, self._blocked_until)
            if self._requests is not None:
                when = max(when, self._requests.earliest(1.0))
            if self._tokens is not None and tokens > 0:
                when = max(when, self._tokens.earliest(float(tokens)))
            if self._requests is not None:
                self._requests.book(when, 1.0)
            if self._tokens is not None and tokens > 0:
                self._tokens.book(when, float(tokens))
            self._stats["requests"] += 1
            self._stats["tokens_reserved"] += int(tokens)
            self._stats["waited_seconds"] += when - now
            return when - now

    def blocked_for(self) -> float:
        """Seconds left of a ``Retry-After`` pause (0 when none)."""
        with self._lock:
            return max(0.0, self._blocked_until - self.clock())

    def acquire(self, tokens: int = 0) -> int:
        wait = self.reserve(tokens)
        if wait > 0:
            self.sleep(wait)
        while (left := self.blocked_for()) > 0:  # a Retry-After arrived while this caller waited
            self.sleep(left)
        return int(tokens)

    async def acquire_async(self, tokens: int = 0) -> int:
        """:meth:`acquire` for asyncio code: waits with ``asyncio.sleep``."""
        wait = self.reserve(tokens)
        if wait > 0:
            await asyncio.sleep(wait)
        while (left := self.blocked_for()) > 0:
            await asyncio.sleep(left)
        return int(tokens)

    def settle(self, reserved: int, used: int) -> None:
        with self._lock:
            self._stats["tokens_settled"] += int(used) - int(reserved)
            if self._tokens is not None and used != reserved:
                self._tokens.tat += (int(used) - int(reserved)) / self._tokens.rate
            if used > 0:  # an answered request (a refused one settles 0)
                self._answered += 1
                if self._answered >= RECOVER_AFTER and self._requests is not None:
                    self._answered = 0
                    ceiling = self._ceiling["requests"] or 0.0
                    now_rpm = self._requests.rate * 60.0
                    if now_rpm < ceiling:
                        self._set_rate(self._requests, min(ceiling, now_rpm + ceiling / 10.0))

    def _set_rate(self, bucket: _Bucket, per_minute: float) -> None:
        bucket.rate = per_minute / 60.0
        bucket.capacity = max(1.0, bucket.rate * self.limits.burst_seconds)

    def pace(self) -> dict[str, float | None]:
        """The current pace: ``requests_per_minute`` and ``tokens_per_minute`` (lower than configured once adapted)."""
        with self._lock:
            return {
                "requests_per_minute": self._requests.rate * 60.0 if self._requests is not None else None,
                "tokens_per_minute": self._tokens.rate * 60.0 if self._tokens is not None else None,
            }

    def refused(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> str | None:
        """A request was refused with 429; ``requests_per_minute`` / ``tokens_per_minute`` are the limits the
        response stated (``None``: it stated none). Lowers the pace (see the module docstring) and returns the
        message of the first adaptation of this limiter, which it also warns once (:class:`RateLimitAdapted`)."""
        import warnings

        changes: list[str] = []
        with self._lock:
            now = self.clock()
            self._answered = 0
            for key, bucket, stated, unit in (
                ("requests", self._requests, requests_per_minute, "requests/min"),
                ("tokens", self._tokens, tokens_per_minute, "tokens/min"),
            ):
                target = float(stated) * STATED_MARGIN if stated and stated > 0 else None
                if bucket is not None and target is not None and target < bucket.rate * 60.0 - 1e-9:
                    self._set_rate(bucket, target)
                    self._ceiling[key] = target
                    changes.append(f"{target:g} {unit} ({STATED_MARGIN:.0%} of the {stated:g} the provider stated)")
            if not changes and self._requests is not None and not (requests_per_minute or tokens_per_minute):
                self._refusals = [t for t in self._refusals if now - t < 60.0] + [now]
                if len(self._refusals) >= 2:
                    self._refusals = []
                    lowered = max(1.0, self._requests.rate * 60.0 * DECREASE)
                    self._set_rate(self._requests, lowered)
                    changes.append(f"{lowered:.3g} requests/min (repeated 429s at the configured pace)")
            if not changes:
                return None
            self._stats["adapted"] += 1
            if self._announced:
                return None
            self._announced = True
        configured = ", ".join(
            f"{v:g} {u}"
            for v, u in (
                (self.limits.requests_per_minute, "requests/min"),
                (self.limits.tokens_per_minute, "tokens/min"),
            )
            if v
        )
        message = (
            f"{self.name or 'the endpoint'} refuses requests below the configured {configured}: pacing at {'; '.join(changes)} "
            "from now on (said once; later changes are counted in the limiter's stats)"
        )
        warnings.warn(message, RateLimitAdapted, stacklevel=3)
        return message

    def penalize(self, seconds: float) -> None:
        with self._lock:
            self._blocked_until = max(self._blocked_until, self.clock() + max(0.0, float(seconds)))
            self._stats["pauses"] += 1

    def stats(self) -> dict[str, Any]:
        """Requests booked, tokens reserved and settled, total seconds callers were told to wait, pauses, adaptations."""
        with self._lock:
            return dict(self._stats)


class RemoteLimiter:
    """A :class:`Limiter` served by a limiter actor (one per endpoint on a Ray cluster): one round trip per booking,
    the waiting done here."""

    def __init__(self, actor: Any, sleep: Callable[[float], None] = time.sleep) -> None:
        self.actor = actor
        self.sleep = sleep

    def _get(self, ref: Any) -> Any:
        import ray

        return ray.get(ref)

    def acquire(self, tokens: int = 0) -> int:
        wait = float(self._get(self.actor.reserve.remote(int(tokens))))
        if wait > 0:
            self.sleep(wait)
        while (left := float(self._get(self.actor.blocked_for.remote()))) > 0:
            self.sleep(left)
        return int(tokens)

    def settle(self, reserved: int, used: int) -> None:
        if used != reserved:
            self.actor.settle.remote(int(reserved), int(used))  # fire and forget: the next booking sees it

    def penalize(self, seconds: float) -> None:
        self._get(self.actor.penalize.remote(float(seconds)))

    def refused(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> str | None:
        answer = self._get(self.actor.refused.remote(requests_per_minute, tokens_per_minute))
        return None if answer is None else str(answer)


class _Shared:
    """A limiter bound to its endpoint key (what a solver holds)."""

    def __init__(self, key: str, limits: RateLimits, inner: Any) -> None:
        self.key, self.limits, self.inner = key, limits, inner

    def acquire(self, tokens: int = 0) -> int:
        return int(self.inner.acquire(tokens))

    def settle(self, reserved: int, used: int) -> None:
        self.inner.settle(reserved, used)

    def penalize(self, seconds: float) -> None:
        self.inner.penalize(seconds)

    def stats(self) -> dict[str, Any]:
        return dict(self.inner.stats()) if hasattr(self.inner, "stats") else {}

    def refused(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> str | None:
        if isinstance(self.inner, AdaptiveLimiter):
            return self.inner.refused(requests_per_minute, tokens_per_minute)
        return None


_registry: dict[tuple[str, RateLimits], RateLimiter] = {}
_registry_lock = threading.Lock()
_backend: Callable[[str, RateLimits], Any] | None = None


def use_backend(backend: Callable[[str, RateLimits], Any] | None) -> None:
    """Where :func:`shared_limiter` gets limiters from (``None``: this process's registry). A Ray solver replica
    sets one that returns the cluster's limiter actor for each endpoint."""
    global _backend
    _backend = backend


def shared_limiter(key: str, limits: RateLimits) -> _Shared:
    """The limiter of endpoint ``key`` shared by every solver of this process (or of the cluster, on Ray).

    Two solvers with the same key and limits share one; the key names the endpoint and model
    (``openai:api.openai.com:gpt-4o-mini``), since providers limit per model.
    """
    if _backend is not None:
        return _Shared(key, limits, _backend(key, limits))
    with _registry_lock:
        inner = _registry.get((key, limits))
        if inner is None:
            inner = _registry[(key, limits)] = RateLimiter(limits)
            inner.name = key
    return _Shared(key, limits, inner)


def paced(limiter: Limiter | None, fn: Callable[[], T], reserve: int, used: Callable[[T], int]) -> Callable[[], T]:
    """``fn`` run in the limiter's next slot for one request of ``reserve`` tokens, its real usage settled after.

    Wraps one *attempt*: with a retry policy around it, every retry books its own slot (a retry is a request too).
    A failed attempt settles 0 tokens (a refused request uses none); ``used(response)`` of 0 keeps the estimate.
    """
    if limiter is None:
        return fn

    def call() -> T:
        limiter.acquire(reserve)
        try:
            response = fn()
        except BaseException:
            limiter.settle(reserve, 0)
            raise
        limiter.settle(reserve, int(used(response) or 0) or reserve)
        return response

    return call


def sharing_retry_after(
    limiter: Limiter | None,
    parse: Callable[[BaseException], float | None],
    stated: Callable[[BaseException], tuple[float | None, float | None] | None] | None = None,
) -> Callable[[BaseException], float | None]:
    """A ``retry_after`` for :meth:`~deltap.solvers.retry.RetryPolicy.call` that also pauses the whole endpoint and,
    when ``stated(exc)`` says the failure was a 429 (``(requests/min, tokens/min)`` the response stated, each
    ``None`` when absent; ``None``: not a 429), lets an :class:`AdaptiveLimiter` learn the lower limit."""

    def retry_after(exc: BaseException) -> float | None:
        seconds = parse(exc)
        if seconds is not None and limiter is not None:
            limiter.penalize(seconds)
        if stated is not None and isinstance(limiter, AdaptiveLimiter):
            limits = stated(exc)
            if limits is not None:
                limiter.refused(*limits)
        return seconds

    return retry_after


def estimate_tokens(messages: Any, max_tokens: int) -> int:
    """Tokens to reserve for a chat request: 4 characters per prompt token, plus the completion's ``max_tokens``."""
    chars = sum(len(str(m.get("content", ""))) for m in messages) if isinstance(messages, list) else len(str(messages))
    return chars // 4 + 1 + int(max_tokens)
