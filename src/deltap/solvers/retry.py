"""Retries with exponential backoff and full jitter, honouring ``Retry-After``."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from deltap.solvers.base import SolverError

__all__ = ["RetryPolicy", "parse_retry_after"]

T = TypeVar("T")


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (delta-seconds or an HTTP date), else ``None``."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class RetryPolicy:
    """When and how long to retry a failed call.

    Delay before retry ``k`` (0-based): the server's ``Retry-After`` when it sends one (capped at ``max_delay``),
    else full jitter ``uniform(0, min(max_delay, base_delay * 2**k))`` (AWS architecture blog, "Exponential Backoff
    And Jitter", 2015), drawn from a seeded generator.

    Args:
        max_attempts: Attempts in all (1 = no retry).
        base_delay: Seconds of the first backoff ceiling.
        max_delay: Largest wait between attempts.
        seed: Seed of the jitter generator (never the global one).
        sleep: Injectable for tests.
    """

    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    seed: int = 0
    sleep: Callable[[float], None] = time.sleep
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be >= 1")
        self._rng = random.Random(self.seed)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        return self._rng.uniform(0.0, min(self.max_delay, self.base_delay * 2**attempt))

    def call(
        self,
        fn: Callable[[], T],
        retryable: Callable[[BaseException], bool],
        retry_after: Callable[[BaseException], float | None] = lambda exc: None,
        what: str = "call",
    ) -> tuple[T, int]:
        """Run ``fn`` until it succeeds or attempts run out; returns ``(result, attempts used)``.

        Raises:
            SolverError: a non-retryable error (immediately), or the last retryable one after ``max_attempts``.
        """
        last: BaseException | None = None
        for attempt in range(self.max_attempts):
            try:
                return fn(), attempt + 1
            except Exception as exc:  # classified below; anything unexpected is re-raised
                if isinstance(exc, SolverError):
                    raise
                if not retryable(exc):
                    raise SolverError(f"{what} failed (not retryable): {type(exc).__name__}: {exc}") from exc
                last = exc
                if attempt + 1 < self.max_attempts:
                    self.sleep(self.delay(attempt, retry_after(exc)))
        raise SolverError(f"{what} failed after {self.max_attempts} attempts: {type(last).__name__}: {last}") from last
