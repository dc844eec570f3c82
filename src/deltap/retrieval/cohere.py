"""Cohere embeddings (``embed-english-v3.0`` by default) over Cohere's v2 REST API.

Talks HTTP directly with httpx (already a dependency of qdrant-client) rather than through the ``cohere`` SDK, so the
transport can be replaced by recorded responses in tests (``httpx.MockTransport``) and the retry policy is ours:

* documents are embedded with ``input_type="search_document"``, queries with ``"search_query"`` (the v3 models are
  asymmetric: the two must not be mixed);
* at most 96 texts per request (Cohere's documented limit), sent in order;
* HTTP 429 and 5xx, timeouts and connection errors are retried with exponential backoff (``Retry-After`` honoured),
  up to ``max_retries`` times, then reported as a :class:`~deltap.errors.DeltapError`;
* a missing key, or one Cohere refuses (401/403), is a :class:`~deltap.errors.DeltapError` naming ``COHERE_API_KEY``.

API reference: https://docs.cohere.com/reference/embed
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from deltap.errors import DeltapError

__all__ = ["COHERE_DIMENSIONS", "CohereEmbedder"]

COHERE_DIMENSIONS = {
    "embed-english-v3.0": 1024,
    "embed-multilingual-v3.0": 1024,
    "embed-english-light-v3.0": 384,
    "embed-multilingual-light-v3.0": 384,
}
_RETRY_STATUS = {429, 500, 502, 503, 504}


class CohereEmbedder:
    """Cohere ``/v2/embed``.

    Args:
        model: Cohere model id.
        api_key: Key; default ``COHERE_API_KEY`` from the environment.
        base_url: API root (``https://api.cohere.com``).
        batch_size: Texts per request (at most 96, Cohere's limit).
        max_retries: Retries of a failed request (429, 5xx, timeouts) before giving up.
        backoff: First wait in seconds; doubled after each retry (capped at 60 s) unless ``Retry-After`` says more.
        timeout: Per-request timeout in seconds.
        transport: An httpx transport (tests pass ``httpx.MockTransport`` with recorded responses).
        sleep: Called to wait between retries (tests pass a recorder).

    Raises:
        DeltapError: no key.
    """

    MAX_BATCH = 96

    def __init__(
        self,
        model: str = "embed-english-v3.0",
        *,
        api_key: str | None = None,
        base_url: str = "https://api.cohere.com",
        batch_size: int = 96,
        max_retries: int = 5,
        backoff: float = 1.0,
        timeout: float = 60.0,
        transport: Any = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        key = api_key if api_key is not None else os.environ.get("COHERE_API_KEY", "")
        if not key.strip():
            raise DeltapError(
                "the Cohere embedder needs an API key: set COHERE_API_KEY (https://dashboard.cohere.com/api-keys) "
                "or use the offline default embedder (--embedder minilm)"
            )
        if not 1 <= batch_size <= self.MAX_BATCH:
            raise DeltapError(f"Cohere accepts 1 to {self.MAX_BATCH} texts per request, got batch_size={batch_size}")
        self.model = model
        self.name = f"cohere/{model}"
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self._client = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {key.strip()}", "Content-Type": "application/json"},
            timeout=timeout,
            transport=transport,
        )
        self.requests_sent = 0
        dim = COHERE_DIMENSIONS.get(model)
        self.dimension = dim if dim is not None else int(self.embed_queries(["dimension probe"]).shape[1])

    def __repr__(self) -> str:
        return f"CohereEmbedder(model={self.model!r}, dimension={self.dimension})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with ``input_type="search_document"``."""
        return self._embed(texts, "search_document")

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed with ``input_type="search_query"``."""
        return self._embed(texts, "search_query")

    def _embed(self, texts: Sequence[str], input_type: str) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            rows.extend(self._request(batch, input_type))
        if not rows:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        x = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return x / norms

    def _request(self, batch: list[str], input_type: str) -> list[list[float]]:
        import httpx

        body = {
            "model": self.model,
            "texts": batch,
            "input_type": input_type,
            "embedding_types": ["float"],
            "truncate": "END",
        }
        wait = self.backoff
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(wait)
                wait = min(wait * 2, 60.0)
            self.requests_sent += 1
            try:
                response = self._client.post("/v2/embed", json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
                continue
            status = response.status_code
            if status in (401, 403):
                raise DeltapError(
                    f"Cohere refused the API key (HTTP {status}: {_message(response)}); check COHERE_API_KEY"
                )
            if status in _RETRY_STATUS:
                last_problem = f"HTTP {status}: {_message(response)}"
                retry_after = response.headers.get("Retry-After")
                if retry_after:
                    try:
                        wait = max(wait, min(float(retry_after), 60.0))
                    except ValueError:
                        pass
                continue
            if status != 200:
                raise DeltapError(f"Cohere rejected the embed request (HTTP {status}): {_message(response)}")
            return _parse(response, len(batch))
        raise DeltapError(
            f"Cohere embed failed after {self.max_retries + 1} attempts (last: {last_problem}); "
            "try again later or lower the request rate"
        )


def _message(response: Any) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(data, dict) and "message" in data:
        return str(data["message"])
    return str(data)[:200]


def _parse(response: Any, expected: int) -> list[list[float]]:
    try:
        data = response.json()
        vectors = data["embeddings"]["float"]
    except (ValueError, KeyError, TypeError):
        raise DeltapError(f"unexpected Cohere embed response (no embeddings.float): {response.text[:200]}") from None
    if not isinstance(vectors, list) or len(vectors) != expected:
        got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
        raise DeltapError(f"Cohere returned {got} embeddings for {expected} texts")
    return vectors
