"""Gemini through the ``google-genai`` SDK (optional extra ``deltap[gemini]``).

The system message (preamble + documentation context) goes in ``system_instruction``, the user message in
``contents``; ``temperature=0`` and a seed. Retries as the OpenAI-compatible solver (429/5xx/timeouts, honouring
``Retry-After``). A reply blocked by safety filters or without text is returned as an empty answer (the checker
fails it), not as an error. :meth:`GeminiSolver.score` is not available: the Gemini API gives log-probabilities of
the tokens it generates, not of a given reference.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from deltap.errors import DeltapError
from deltap.solvers.answer_tokens import default_max_tokens
from deltap.solvers.base import Score, SolveRequest
from deltap.solvers.hosted import HostedChatSolver
from deltap.solvers.prompts import Message, PromptTemplate
from deltap.solvers.ratelimit import Limiter, RateLimits
from deltap.solvers.retry import RetryPolicy

__all__ = ["GeminiSolver"]

#: this solver's answer-token ceilings per benchmark type (its column of :data:`deltap.solvers.answer_tokens.MAX_TOKENS`)
DEFAULT_MAX_TOKENS = default_max_tokens("gemini")


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


class GeminiSolver(HostedChatSolver):
    """Gemini chat solver.

    Args:
        model: e.g. ``gemini-2.5-flash``.
        api_key: Default from ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``).
        base_url: Override the endpoint (tests point it at a local replay server).
        timeout: Seconds per request.
        retry: Retry policy.
        seed: Sent with every request.
        max_tokens: Per benchmark type overrides.
        template: Prompt template overrides; ``answer_protocol="auto"`` becomes ``on`` (the final ``Answer: ...``
            line, :func:`~deltap.solvers.prompts.for_hosted`); pass ``answer_protocol="off"`` for a model that does
            not write it.
        client: A preconfigured ``google.genai.Client``.
        requests_per_minute: The model's request limit: calls are paced to it by a limiter shared by every solver of
            the run for this model (:mod:`deltap.solvers.ratelimit`; not part of the id).
        tokens_per_minute: The model's token limit (prompt + output), paced the same way.
        limiter: A limiter to use instead.

    Client, limiter, retries, pacing and usage are :class:`~deltap.solvers.hosted.HostedChatSolver`'s (a Gemini 429
    states no limit in its headers: the limiter lowers its pace on repeats); this class holds the Gemini call.
    """

    provider = "gemini"

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
        super().__init__(
            model,
            client,
            f"gemini:{model}",
            seed,
            retry,
            max_tokens,
            template,
            RateLimits(requests_per_minute, tokens_per_minute),
            limiter,
        )
        self.id = f"gemini:{model}:temperature=0:seed={seed}"

    def _chat(self, messages: list[Message], max_tokens: int) -> Any:
        config = self._types.GenerateContentConfig(
            system_instruction="\n\n".join(m["content"] for m in messages if m["role"] == "system"),
            temperature=0.0,
            seed=self.seed,
            max_output_tokens=max_tokens,
        )
        user = "\n\n".join(m["content"] for m in messages if m["role"] != "system")
        resp = self.client.models.generate_content(model=self.model, contents=user, config=config)
        if resp is None or not hasattr(resp, "candidates"):
            raise _Malformed("response without candidates")
        return resp

    def _reply(self, resp: Any) -> tuple[str, dict[str, int], Any]:
        meta = getattr(resp, "usage_metadata", None)
        usage = {
            "prompt_tokens": int(getattr(meta, "prompt_token_count", 0) or 0),
            "completion_tokens": int(getattr(meta, "candidates_token_count", 0) or 0),
        }
        finish = str(getattr(resp.candidates[0], "finish_reason", None)) if resp.candidates else None
        raw = resp.model_dump(mode="json", exclude_none=True) if hasattr(resp, "model_dump") else None
        return _text_of(resp), usage, {"finish_reason": finish, "response": raw}

    def _retryable(self, exc: BaseException) -> bool:
        return _retryable(exc)

    def _total_tokens(self, resp: Any) -> int:
        return _total_tokens(resp)

    def _what(self) -> str:
        return f"Gemini {self.model}"

    def score(self, request: SolveRequest, reference: str) -> Score:
        raise NotImplementedError(
            "the Gemini API cannot score a given reference answer (it returns log-probabilities of generated tokens "
            "only); use the pass outcome with Gemini, or the local / an OpenAI-compatible solver for logprob"
        )


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
