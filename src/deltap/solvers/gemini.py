"""Gemini through the ``google-genai`` SDK (optional extra ``deltap[gemini]``).

The system message (preamble + documentation context) goes in ``system_instruction``, the user message in
``contents``; ``temperature=0`` and a seed. Retries as the OpenAI-compatible solver (429/5xx/timeouts, honouring
``Retry-After``). A reply blocked by safety filters or without text is returned as an empty answer (the checker
fails it), not as an error. :meth:`GeminiSolver.score` is not available: the Gemini API gives log-probabilities of
the tokens it generates, not of a given reference.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from deltap.errors import DeltapError
from deltap.solvers.base import Answer, Score, SolveRequest
from deltap.solvers.prompts import PromptTemplate, render_prompt
from deltap.solvers.ratelimit import Limiter, RateLimits, estimate_tokens, paced, shared_limiter, sharing_retry_after
from deltap.solvers.retry import RetryPolicy, parse_retry_after

__all__ = ["GeminiSolver"]

DEFAULT_MAX_TOKENS = {"api_understanding": 64, "multiple_choice": 32, "fix_error": 4096, "beir": 256}


class _Malformed(Exception):
    pass


def _retryable(exc: BaseException) -> bool:
    import httpx
    from google.genai import errors

    if isinstance(exc, (_Malformed, httpx.TimeoutException, httpx.TransportError)):
        return True
    if isinstance(exc, errors.APIError):
        return exc.code in (408, 429) or exc.code >= 500
    return False


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    return parse_retry_after(getattr(response, "headers", None))


def _stated_limits(exc: BaseException) -> tuple[float | None, float | None] | None:
    """A Gemini 429 states no limit in its headers: ``(None, None)`` (the limiter lowers its pace on repeats)."""
    return (None, None) if getattr(exc, "code", None) == 429 else None


class GeminiSolver:
    """Gemini chat solver.

    Args:
        model: e.g. ``gemini-2.5-flash``.
        api_key: Default from ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``).
        base_url: Override the endpoint (tests point it at a local replay server).
        timeout: Seconds per request.
        retry: Retry policy.
        seed: Sent with every request.
        max_tokens: Per benchmark type overrides.
        template: Prompt template overrides.
        client: A preconfigured ``google.genai.Client``.
        requests_per_minute: The model's request limit: calls are paced to it by a limiter shared by every solver of
            the run for this model (:mod:`deltap.solvers.ratelimit`; not part of the id).
        tokens_per_minute: The model's token limit (prompt + output), paced the same way.
        limiter: A limiter to use instead.
    """

    #: a hosted endpoint: paced by requests_per_minute / tokens_per_minute, priced per token
    hosted = True

    def __init__(
        self,
        model: str = "gemini-2.5-flash",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        seed: int = 0,
        max_tokens: Mapping[str, int] | None = None,
        template: PromptTemplate | None = None,
        client: Any = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise DeltapError("the Gemini solver needs google-genai: pip install 'deltap[gemini]'") from None
        self._types = types
        if client is None:
            key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
            if not key:
                raise DeltapError("no Gemini API key: set GEMINI_API_KEY")
            options = types.HttpOptions(timeout=int(timeout * 1000), base_url=base_url)
            client = genai.Client(api_key=key, http_options=options)
        self.client = client
        self.model = model
        self.retry = retry or RetryPolicy()
        self.seed = seed
        self.max_tokens = {**DEFAULT_MAX_TOKENS, **dict(max_tokens or {})}
        self.template = template
        self.attempts = 0
        self.id = f"gemini:{model}:temperature=0:seed={seed}"
        limits = RateLimits(requests_per_minute, tokens_per_minute)
        self.limiter: Any = (
            limiter if limiter is not None else (shared_limiter(f"gemini:{model}", limits) if limits.active else None)
        )

    def answer(self, request: SolveRequest) -> Answer:
        messages = render_prompt(request, self.template)
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        config = self._types.GenerateContentConfig(
            system_instruction=system,
            temperature=0.0,
            seed=self.seed,
            max_output_tokens=self.max_tokens.get(request.benchmark_type, DEFAULT_MAX_TOKENS["beir"]),
        )

        def call() -> Any:
            self.attempts += 1
            resp = self.client.models.generate_content(model=self.model, contents=user, config=config)
            if resp is None or not hasattr(resp, "candidates"):
                raise _Malformed("response without candidates")
            return resp

        start = time.perf_counter()
        reserve = estimate_tokens(messages, config.max_output_tokens or 0)
        attempt = paced(self.limiter, call, reserve, _total_tokens)
        retry_after = sharing_retry_after(self.limiter, _retry_after, _stated_limits)
        resp, attempts = self.retry.call(attempt, _retryable, retry_after, what=f"Gemini {self.model}")
        latency = time.perf_counter() - start
        text = _text_of(resp)
        meta = getattr(resp, "usage_metadata", None)
        usage = {
            "prompt_tokens": int(getattr(meta, "prompt_token_count", 0) or 0),
            "completion_tokens": int(getattr(meta, "candidates_token_count", 0) or 0),
            "attempts": attempts,
        }
        finish = None
        if resp.candidates:
            finish = str(getattr(resp.candidates[0], "finish_reason", None))
        raw = resp.model_dump(mode="json", exclude_none=True) if hasattr(resp, "model_dump") else None
        return Answer(
            text=text.strip(),
            usage=usage,
            latency=latency,
            raw={"finish_reason": finish, "response": raw},
            solver_id=self.id,
        )

    def score(self, request: SolveRequest, reference: str) -> Score:
        raise NotImplementedError(
            "the Gemini API cannot score a given reference answer (it returns log-probabilities of generated tokens "
            "only); use the pass outcome with Gemini, or the local / an OpenAI-compatible solver for logprob"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "gemini",
            "model": self.model,
            "seed": self.seed,
            "temperature": 0,
            "max_tokens": dict(self.max_tokens),
        }


def _total_tokens(resp: Any) -> int:
    return int(getattr(getattr(resp, "usage_metadata", None), "total_token_count", 0) or 0)


def _text_of(resp: Any) -> str:
    """The concatenated text parts of the first candidate ('' when blocked or empty; never raises)."""
    candidates = getattr(resp, "candidates", None) or []
    if not candidates:
        return ""
    content = getattr(candidates[0], "content", None)
    parts = getattr(content, "parts", None) or []
    return "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
