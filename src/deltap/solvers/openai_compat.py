"""A solver for any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, OpenAI) through the ``openai`` SDK.

* ``answer()``: ``chat.completions`` with ``temperature=0`` and a seed; retries (backoff + jitter, ``Retry-After``)
  on 429, 5xx, timeouts, connection errors and malformed responses; other HTTP errors fail at once. What is still
  failing after the retries is a :class:`~deltap.solvers.base.SolverError` (an ``error`` outcome, never a
  ``fail``). An empty reply is *not* an error: it is returned and the checker fails it.
* ``score()``: the log-probability of the reference through the legacy ``completions`` endpoint with
  ``echo=True, logprobs=0`` (llama.cpp server, older vLLM), or vLLM's ``prompt_logprobs``. The chat template is
  applied client side (``prompt_format``, default ChatML, the template of SmolLM2/Qwen). Servers' echo logprobs are
  not trusted blindly (llama-cpp-python 0.3.36's server returns wrong ones): before the first score the solver runs
  a **self-check** and refuses, with a clear :class:`~deltap.errors.DeltapError`, a server that fails it:

  1. a near-certain continuation (``" 13"`` after ``"1, 2, ..., 12,"``) must get a log-probability above
     ``self_check_min_logprob`` (any working language model is near certain of it);
  2. when ``verify_with`` is given (an in-process scorer with the same model, e.g. :class:`LlamaCppSolver`), the
     server's value for a probe must match the in-process value within ``self_check_tolerance`` nats.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from deltap.errors import DeltapError
from deltap.solvers.answer_tokens import default_max_tokens
from deltap.solvers.base import Score, SolveRequest, SolverError, TextScorer
from deltap.solvers.hosted import HostedChatSolver
from deltap.solvers.prompts import Message, PromptTemplate, render_prompt
from deltap.solvers.ratelimit import Limiter, RateLimits
from deltap.solvers.retry import RetryPolicy

__all__ = ["OpenAISolver", "chatml"]

#: this solver's answer-token ceilings per benchmark type (its column of :data:`deltap.solvers.answer_tokens.MAX_TOKENS`)
DEFAULT_MAX_TOKENS = default_max_tokens("openai")

SELF_CHECK_PROMPT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,"
SELF_CHECK_CONTINUATION = " 13"
PROBE_PROMPT = "The capital of France is"
PROBE_CONTINUATION = " Paris"


def chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """ChatML (SmolLM2, Qwen): ``<|im_start|>role\\ncontent<|im_end|>\\n`` per message, then the assistant header."""
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


class _Malformed(Exception):
    """A 2xx response without the fields the protocol promises."""


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (_Malformed, json.JSONDecodeError, openai.APIResponseValidationError)):
        return True
    if isinstance(exc, (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError)):
        return True
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408
    return False


def _stated_limits(exc: BaseException) -> tuple[float | None, float | None] | None:
    """``(requests/min, tokens/min)`` a 429 response stated (``x-ratelimit-limit-requests`` / ``-tokens``, each ``None``
    when absent); ``None`` when ``exc`` is not a 429."""
    if getattr(exc, "status_code", None) != 429:
        return None
    headers = getattr(getattr(exc, "response", None), "headers", None)

    def number(name: str) -> float | None:
        try:
            value = headers.get(name) if headers is not None else None
            return float(value) if value is not None else None
        except (TypeError, ValueError, AttributeError):
            return None

    return number("x-ratelimit-limit-requests"), number("x-ratelimit-limit-tokens")


def _total_tokens(resp: Any) -> int:
    return int(getattr(getattr(resp, "usage", None), "total_tokens", 0) or 0)


class OpenAISolver(HostedChatSolver):
    """OpenAI-compatible chat solver (see the module docstring).

    Args:
        model: Model name on the server.
        base_url: e.g. ``http://127.0.0.1:8000/v1``; ``None`` for api.openai.com.
        api_key: The key; default read from the environment variable ``api_key_env``. Local servers need none.
        api_key_env: Environment variable holding the key.
        timeout: Seconds per HTTP request.
        retry: Retry policy.
        seed: Sent with every request (servers that honour it are deterministic at temperature 0).
        max_tokens: Per benchmark type overrides.
        template: Prompt template overrides; ``answer_protocol="auto"`` becomes ``on`` (the final ``Answer: ...``
            line, :func:`~deltap.solvers.prompts.for_hosted`); pass ``answer_protocol="off"`` for a model that does
            not write it.
        score_method: ``echo`` (completions ``echo`` + ``logprobs``) or ``prompt_logprobs`` (vLLM).
        prompt_format: Chat messages -> completion prompt for scoring (default :func:`chatml`).
        self_check: Run the scoring self-check before the first :meth:`score` (strongly recommended).
        self_check_min_logprob: Threshold of check 1.
        verify_with: In-process scorer for check 2.
        self_check_tolerance: Tolerance of check 2, in nats.
        client: A preconfigured ``openai.OpenAI`` (tests); overrides ``base_url``/``api_key``/``timeout``.
        extra_body: Server-specific request fields sent with every chat request (part of the solver id), e.g.
            ``{"repeat_penalty": 1.0}`` for llama.cpp's server, whose default 1.1 makes "temperature 0" non-greedy.
        requests_per_minute: The endpoint's request limit: calls are paced to it by a limiter shared by every
            solver of the run for this endpoint and model (:mod:`deltap.solvers.ratelimit`; not part of the id).
        tokens_per_minute: The endpoint's token limit (prompt + completion), paced the same way.
        limiter: A limiter to use instead (tests, or one shared by hand).

    Client, limiter, retries, pacing and usage are :class:`~deltap.solvers.hosted.HostedChatSolver`'s; this class
    holds the chat and scoring calls of the OpenAI protocol.
    """

    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        seed: int = 0,
        max_tokens: Mapping[str, int] | None = None,
        template: PromptTemplate | None = None,
        score_method: str = "echo",
        prompt_format: Callable[[Sequence[Mapping[str, str]]], str] = chatml,
        self_check: bool = True,
        self_check_min_logprob: float = -2.0,
        verify_with: TextScorer | None = None,
        self_check_tolerance: float = 0.05,
        client: Any = None,
        extra_body: Mapping[str, Any] | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        limiter: Limiter | None = None,
    ) -> None:
        if score_method not in ("echo", "prompt_logprobs"):
            raise DeltapError(f"score_method must be 'echo' or 'prompt_logprobs', got {score_method!r}")
        if client is None:
            try:
                import openai
            except ImportError:
                raise DeltapError(
                    "the OpenAI-compatible solver needs the openai SDK: pip install 'deltap[openai]'"
                ) from None
            import os

            key = api_key or os.environ.get(api_key_env)
            if not key:
                if base_url is None:
                    raise DeltapError(f"no API key: set {api_key_env} (or pass --base-url for a local server)")
                key = "not-needed"  # local servers accept any key; the SDK insists on one
            client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self.base_url = str(base_url or getattr(client, "base_url", "") or "https://api.openai.com/v1")
        host = urlparse(self.base_url).netloc or self.base_url
        super().__init__(
            model,
            client,
            f"openai:{host}:{model}",
            seed,
            retry,
            max_tokens,
            template,
            RateLimits(requests_per_minute, tokens_per_minute),
            limiter,
        )
        self.score_method = score_method
        self.prompt_format = prompt_format
        self.self_check = self_check
        self.self_check_min_logprob = self_check_min_logprob
        self.verify_with = verify_with
        self.self_check_tolerance = self_check_tolerance
        self.extra_body = dict(extra_body or {})
        self._checked: dict[str, Any] | None = None
        extra = "".join(f":{k}={v}" for k, v in sorted(self.extra_body.items()))
        self.id = f"openai:{host}:{model}:temperature=0:seed={seed}{extra}"

    # -- answer ----------------------------------------------------------------------------------------------
    def _chat(self, messages: list[Message], max_tokens: int) -> Any:
        resp = self.client.chat.completions.create(
            model=self.model,
            messages=messages,
            temperature=0,
            seed=self.seed,
            max_tokens=max_tokens,
            extra_body=self.extra_body or None,
        )
        choices = getattr(resp, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise _Malformed(f"response has no choices[0].message: {str(resp)[:200]}")
        content = choices[0].message.content
        if content is not None and not isinstance(content, str):
            raise _Malformed(f"message.content is {type(content).__name__}, not a string")
        return resp

    def _reply(self, resp: Any) -> tuple[str, dict[str, int], Any]:
        usage = getattr(resp, "usage", None)
        counts = {} if usage is None else {  # a server that reports no usage: no token counts (unknown, not zero)
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }  # fmt: skip
        raw = resp.model_dump() if hasattr(resp, "model_dump") else None
        return resp.choices[0].message.content or "", counts, raw

    def _retryable(self, exc: BaseException) -> bool:
        return _retryable(exc)

    def _total_tokens(self, resp: Any) -> int:
        return _total_tokens(resp)

    def _stated_limits(self, exc: BaseException) -> tuple[float | None, float | None] | None:
        return _stated_limits(exc)

    def _what(self) -> str:
        return f"chat completion on {self.base_url}"

    # -- score -----------------------------------------------------------------------------------------------
    def _continuation_logprob(self, prompt: str, continuation: str) -> tuple[float, int]:
        """Log-probability of ``continuation`` after ``prompt`` as the server reports it, and its token count."""
        full = prompt + continuation

        def call() -> Any:
            if self.score_method == "echo":
                return self.client.completions.create(
                    model=self.model, prompt=full, max_tokens=1, temperature=0, echo=True, logprobs=0, seed=self.seed
                )
            return self.client.completions.create(
                model=self.model,
                prompt=full,
                max_tokens=1,
                temperature=0,
                seed=self.seed,
                extra_body={"prompt_logprobs": 0},
            )

        resp, _ = self._call(call, len(full) // 4 + 2, f"scoring on {self.base_url}")
        try:
            choice = resp.choices[0]
            if self.score_method == "echo":
                lp = choice.logprobs
                if lp is None or not lp.token_logprobs or not lp.text_offset:
                    raise DeltapError(
                        f"{self.base_url} returned no echo logprobs: it does not support score() by echo; "
                        "try score_method='prompt_logprobs' (vLLM) or use the pass outcome"
                    )
                offsets = list(lp.text_offset)
                values = list(lp.token_logprobs)
            else:
                plp = getattr(choice, "prompt_logprobs", None)
                if plp is None and hasattr(choice, "model_extra"):
                    plp = (choice.model_extra or {}).get("prompt_logprobs")
                if not plp:
                    raise DeltapError(f"{self.base_url} returned no prompt_logprobs: it is not vLLM-compatible")
                offsets, values, pos = [], [], 0
                for entry in plp:
                    offsets.append(pos)
                    if entry is None:
                        values.append(None)
                        continue
                    best = next(iter(entry.values()))
                    values.append(best["logprob"])
                    pos += len(best.get("decoded_token") or "")
        except (AttributeError, IndexError, TypeError, KeyError) as exc:
            raise SolverError(f"malformed scoring response from {self.base_url}: {type(exc).__name__}: {exc}") from exc
        total, n = 0.0, 0
        for i, (off, val) in enumerate(zip(offsets, values, strict=False)):
            end = offsets[i + 1] if i + 1 < len(offsets) else len(full) + 10**6
            # tokens overlapping the continuation, excluding the generated one (at or after len(full))
            if end > len(prompt) and off < len(full):
                if val is None or not math.isfinite(val):
                    raise SolverError(f"{self.base_url} returned no logprob for a continuation token at offset {off}")
                total += float(val)
                n += 1
        if n == 0:
            raise SolverError(f"{self.base_url}: no token of the continuation found in the echoed logprobs")
        return total, n

    def verify_scoring(self) -> dict[str, Any]:
        """Run the self-check (see the module docstring); cached. Raises :class:`DeltapError` on a failing server."""
        if self._checked is not None:
            return self._checked
        lp, _ = self._continuation_logprob(SELF_CHECK_PROMPT, SELF_CHECK_CONTINUATION)
        report: dict[str, Any] = {"near_certain_logprob": lp}
        if lp < self.self_check_min_logprob:
            raise DeltapError(
                f"refusing to score with {self.base_url} (model {self.model}): its echo logprobs fail the self-check: "
                f"log p({SELF_CHECK_CONTINUATION!r} | {SELF_CHECK_PROMPT!r}) = {lp:.3f} < {self.self_check_min_logprob} "
                "(a near-certain continuation). The server's logprobs are wrong (llama-cpp-python's server is known to "
                "return wrong echo logprobs); use the in-process local solver for the logprob outcome, or another server"
            )
        if self.verify_with is not None:
            server, _ = self._continuation_logprob(PROBE_PROMPT, PROBE_CONTINUATION)
            local = self.verify_with.score_text(PROBE_PROMPT, PROBE_CONTINUATION)
            report.update(probe_server=server, probe_in_process=local)
            if abs(server - local) > self.self_check_tolerance:
                raise DeltapError(
                    f"refusing to score with {self.base_url} (model {self.model}): log p({PROBE_CONTINUATION!r} | "
                    f"{PROBE_PROMPT!r}) is {server:.3f} on the server but {local:.3f} in-process with the same model "
                    f"(tolerance {self.self_check_tolerance}); the server's logprobs are wrong"
                )
        self._checked = report
        return report

    def score(self, request: SolveRequest, reference: str) -> Score:
        """Log-probability of ``reference`` as the assistant reply (after the self-check on first use)."""
        if self.self_check:
            self.verify_scoring()
        prompt = self.prompt_format(render_prompt(request, self.template))
        start = time.perf_counter()
        lp, n = self._continuation_logprob(prompt, reference)
        return Score(logprob=lp, n_tokens=n, latency=time.perf_counter() - start, solver_id=self.id)

    def _describe_extra(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "score_method": self.score_method, "extra_body": dict(self.extra_body)}
