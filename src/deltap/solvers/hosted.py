"""The plumbing every hosted chat solver shares: client, limiter, retries, pacing and usage accounting.

A provider subclasses :class:`HostedChatSolver` and writes only its own API calls:

* :meth:`~HostedChatSolver._chat` — one chat request (raise on a response without the fields the protocol promises);
* :meth:`~HostedChatSolver._reply` — the reply's text, its token counts and the raw response to keep;
* :meth:`~HostedChatSolver._retryable`, :meth:`~HostedChatSolver._total_tokens` and, when the provider states its
  limits in a 429, :meth:`~HostedChatSolver._stated_limits`.

The base renders the prompt, picks the answer-token ceiling (:mod:`deltap.solvers.answer_tokens`, the provider's
column), paces each attempt through the limiter shared by every solver of the run for this endpoint and model
(:mod:`deltap.solvers.ratelimit`: request and token budgets, ``Retry-After`` shared by all), retries transient
failures (:mod:`deltap.solvers.retry`), counts attempts and reports ``prompt_tokens`` / ``completion_tokens`` /
``attempts`` in every :class:`~deltap.solvers.base.Answer`. ``openai_compat.py`` and ``gemini.py`` are built on it.

A new provider is its module (a subclass, ``provider`` = its kind's name) plus one registration in
:data:`deltap.solvers.SOLVERS` with its :class:`~deltap.solvers.HostedProvider` facts (default model, answer-token
ceilings, token encoding, list prices). :class:`HostedModel` is what a plan uses of a provider it does not connect to.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from deltap.solvers.answer_tokens import answer_tokens, default_max_tokens
from deltap.solvers.base import Answer, SolveRequest
from deltap.solvers.prompts import PromptTemplate, for_hosted, render_prompt
from deltap.solvers.ratelimit import Limiter, RateLimits, estimate_tokens, paced, shared_limiter, sharing_retry_after
from deltap.solvers.retry import RetryPolicy, parse_retry_after

__all__ = ["HostedChatSolver", "HostedModel", "hosted_model"]


@dataclass(frozen=True)
class HostedModel:
    """A hosted model a plan describes without connecting to it (no API key needed): the id its solver would have,
    its answer ceilings per benchmark type and the ``tiktoken`` encoding that estimates its prompt tokens (``""``: 4
    characters per token). It answers nothing.
    """

    id: str
    max_tokens: Mapping[str, int]
    token_encoding: str = "o200k_base"

    @classmethod
    def of(cls, kind: str, model: str | None = None) -> HostedModel:
        """The model ``model`` (default: the provider's) of the hosted kind ``kind``, with the facts its registration
        declares (:func:`deltap.solvers.solver_provider`).

        Raises:
            DeltapError: an unknown kind, or one registered without provider facts.
        """
        from deltap.solvers import solver_provider

        facts = solver_provider(kind)
        return cls(f"{kind}:{model or facts.default_model}", dict(facts.max_tokens), facts.token_encoding)


def hosted_model(kind: str, options: Mapping[str, Any]) -> HostedModel:
    """The :class:`HostedModel` a plan uses for a hosted solver it cannot build (no API key): the provider's answer
    ceilings with the user's ``max_tokens`` overrides (``--solver-option max_tokens='{"api_understanding": 512}'``),
    merged as the solver itself merges them.

    Raises:
        DeltapError: an unknown or undeclared kind, or ``max_tokens`` that is not a mapping.
    """
    base = HostedModel.of(kind, options.get("model"))
    overrides = options.get("max_tokens")
    if not overrides:
        return base
    if not isinstance(overrides, Mapping):
        from deltap.errors import DeltapError

        raise DeltapError(
            f'max_tokens must map benchmark types to answer tokens (e.g. {{"api_understanding": 64}}), got {overrides!r}'
        )
    merged = {**dict(base.max_tokens), **{str(k): int(v) for k, v in overrides.items()}}
    return HostedModel(base.id, merged, base.token_encoding)


class HostedChatSolver(ABC):
    """Base of the hosted chat solvers (see the module docstring).

    Args:
        model: Model name at the provider.
        client: The provider's SDK client (already configured).
        limiter_key: Who shares a pace: ``provider:host:model`` (every solver of a run with this key shares one
            limiter).
        seed: Sent with every request.
        retry: Retry policy (default :class:`~deltap.solvers.retry.RetryPolicy`).
        max_tokens: Per benchmark type overrides of the provider's column of the answer-token table.
        template: Prompt template overrides; its ``answer_protocol="auto"`` becomes ``on`` for a hosted solver
            (:func:`~deltap.solvers.prompts.for_hosted`).
        limits: The endpoint's request and token limits (pacing is off when neither is set).
        limiter: A limiter to use instead (tests, or one shared by hand).

    Attributes:
        attempts: HTTP attempts made so far (retries included; for benchmarks and tests).
    """

    #: the provider's name: its column of the answer-token table and ``describe()["backend"]``
    provider: ClassVar[str] = "openai"
    #: a hosted endpoint (see :func:`deltap.solvers.solver_capabilities`)
    hosted: ClassVar[bool] = True

    id: str

    def __init__(
        self,
        model: str,
        client: Any,
        limiter_key: str,
        seed: int = 0,
        retry: RetryPolicy | None = None,
        max_tokens: Mapping[str, int] | None = None,
        template: PromptTemplate | None = None,
        limits: RateLimits | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.retry = retry or RetryPolicy()
        self.seed = seed
        self.max_tokens = {**default_max_tokens(self.provider), **dict(max_tokens or {})}
        self.template = for_hosted(template)  # answer_protocol "auto" -> on (deltap.solvers.prompts.HOSTED_PROTOCOL)
        self.attempts = 0
        limits = limits or RateLimits()
        self.limiter: Any = (
            limiter if limiter is not None else (shared_limiter(limiter_key, limits) if limits.active else None)
        )

    # -- what a provider writes -------------------------------------------------------------------------------
    @abstractmethod
    def _chat(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        """One chat request; returns the response, raises on a malformed one (retried when :meth:`_retryable`)."""
        ...

    @abstractmethod
    def _reply(self, resp: Any) -> tuple[str, dict[str, int], Any]:
        """``(text, token counts, raw)``: the reply's text, ``prompt_tokens`` / ``completion_tokens`` (empty when
        the provider reported none: unknown, not zero) and what the :class:`Answer` keeps as ``raw``."""
        ...

    @abstractmethod
    def _retryable(self, exc: BaseException) -> bool:
        """Whether a failed attempt is worth another (429, 5xx, timeouts, malformed responses)."""
        ...

    @abstractmethod
    def _total_tokens(self, resp: Any) -> int:
        """Tokens a response used (prompt + completion), charged to the token budget; 0 when unknown."""
        ...

    def _stated_limits(self, exc: BaseException) -> tuple[float | None, float | None] | None:
        """``(requests/min, tokens/min)`` a 429 stated (each ``None`` when absent); ``None`` when ``exc`` is no 429.
        The default: a 429 states nothing (the limiter lowers its pace on repeats)."""
        return (None, None) if 429 in (getattr(exc, "status_code", None), getattr(exc, "code", None)) else None

    def _retry_after(self, exc: BaseException) -> float | None:
        """Seconds the provider asked to wait (``Retry-After`` of the error's response), if any."""
        return parse_retry_after(getattr(getattr(exc, "response", None), "headers", None))

    def _what(self) -> str:
        """What a chat call is, for error messages (``chat completion on URL``)."""
        return f"{self.provider} {self.model}"

    def _describe_extra(self) -> dict[str, Any]:
        """Provider-specific entries of :meth:`describe`."""
        return {}

    # -- the plumbing -----------------------------------------------------------------------------------------
    def _call(self, call: Callable[[], Any], reserve: int, what: str) -> tuple[Any, int]:
        """``call`` paced by the limiter (``reserve`` tokens booked until the response tells the real count) and
        retried by the policy; returns ``(response, attempts)``. Every attempt counts in :attr:`attempts`."""

        def counted() -> Any:
            self.attempts += 1
            return call()

        attempt = paced(self.limiter, counted, reserve, self._total_tokens)
        retry_after = sharing_retry_after(self.limiter, self._retry_after, self._stated_limits)
        return self.retry.call(attempt, self._retryable, retry_after, what=what)

    def answer_tokens(self, benchmark_type: str) -> int:
        """The answer-token ceiling of a request of ``benchmark_type``."""
        return answer_tokens(self.max_tokens, benchmark_type, self.provider)

    def answer(self, request: SolveRequest) -> Answer:
        """The model's reply at temperature 0 (retried; what still fails is a :class:`~deltap.solvers.base.SolverError`)."""
        messages = render_prompt(request, self.template)
        max_tokens = self.answer_tokens(request.benchmark_type)
        start = time.perf_counter()
        resp, attempts = self._call(
            lambda: self._chat(messages, max_tokens), estimate_tokens(messages, max_tokens), self._what()
        )
        latency = time.perf_counter() - start
        text, usage, raw = self._reply(resp)
        return Answer(
            text=text.strip(), usage={**usage, "attempts": attempts}, latency=latency, raw=raw, solver_id=self.id
        )

    def describe(self) -> dict[str, Any]:
        """The solver's settings, for the run summary."""
        return {
            "backend": self.provider,
            "model": self.model,
            "seed": self.seed,
            "temperature": 0,
            "max_tokens": dict(self.max_tokens),
            **self._describe_extra(),
        }
