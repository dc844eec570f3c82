"""The Cohere embedder against canned /v2/embed responses (httpx.MockTransport), plus one opt-in live test.

The canned bodies follow the documented v2 response shape (``id``, ``embeddings.float``, ``texts``, ``meta``,
``response_type``); vectors are short stand-ins for the real 1024 floats. The live test is
tests/integration/retrieval/test_cohere_live.py (runs only with ``COHERE_API_KEY`` set).
"""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest

from deltap.errors import DeltapError
from deltap.retrieval.cohere import CohereEmbedder


def _ok(texts: list[str], dim: int = 4) -> dict:
    vectors = [[float(len(t)), 1.0, float(i), 0.5][:dim] for i, t in enumerate(texts)]
    return {
        "id": "5807ee2e-0cda-445a-9ec8-864c60a06606",
        "embeddings": {"float": vectors},
        "texts": texts,
        "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 3 * len(texts)}},
        "response_type": "embeddings_by_type",
    }


class Recorder:
    """A MockTransport handler replaying scripted responses and recording requests."""

    def __init__(self, script: list[tuple[int, dict | str, dict[str, str]]] | None = None) -> None:
        self.script = list(script or [])
        self.requests: list[dict] = []
        self.headers: list[httpx.Headers] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        if self.script:
            status, payload, headers = self.script.pop(0)
            if payload == "OK":
                payload = _ok(body["texts"])
            return httpx.Response(status, json=payload, headers=headers)
        return httpx.Response(200, json=_ok(body["texts"]))


def _embedder(handler: Recorder, **kw) -> tuple[CohereEmbedder, list[float]]:  # type: ignore[no-untyped-def]
    sleeps: list[float] = []
    emb = CohereEmbedder(api_key="test-key", transport=httpx.MockTransport(handler), sleep=sleeps.append, **kw)
    return emb, sleeps


def test_request_shape_and_input_types() -> None:
    rec = Recorder()
    emb, _ = _embedder(rec)
    assert (emb.name, emb.dimension) == ("cohere/embed-english-v3.0", 1024)
    docs = emb.embed_documents(["alpha", "be"])
    emb.embed_queries(["what is alpha?"])
    assert rec.requests[0] == {
        "model": "embed-english-v3.0",
        "texts": ["alpha", "be"],
        "input_type": "search_document",
        "embedding_types": ["float"],
        "truncate": "END",
    }
    assert rec.requests[1]["input_type"] == "search_query"
    assert rec.headers[0]["authorization"] == "Bearer test-key"
    raw = np.array([[5.0, 1.0, 0.0, 0.5], [2.0, 1.0, 1.0, 0.5]], dtype=np.float32)
    np.testing.assert_allclose(docs, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-6)
    assert docs.dtype == np.float32


def test_batches_respect_the_96_text_limit() -> None:
    rec = Recorder()
    emb, _ = _embedder(rec)
    out = emb.embed_documents([f"text {i}" for i in range(200)])
    assert [len(r["texts"]) for r in rec.requests] == [96, 96, 8]
    assert out.shape == (200, 4)
    assert rec.requests[2]["texts"][0] == "text 192"  # order kept across batches
    with pytest.raises(DeltapError, match="1 to 96 texts per request"):
        _embedder(rec, batch_size=97)


def test_rate_limit_and_server_errors_are_retried_with_backoff() -> None:
    rec = Recorder(
        [
            (
                429,
                {"message": "You are using a Trial key, which is limited to 100 API calls / minute."},
                {"Retry-After": "7"},
            ),
            (503, {"message": "service unavailable"}, {}),
            (200, "OK", {}),
        ]
    )
    emb, sleeps = _embedder(rec, backoff=0.5)
    out = emb.embed_queries(["q"])
    assert out.shape == (1, 4)
    assert sleeps == [7.0, 14.0]  # Retry-After honoured, then doubled
    assert emb.requests_sent == 3


def test_gives_up_after_max_retries() -> None:
    rec = Recorder([(500, {"message": "internal"}, {})] * 3)
    emb, sleeps = _embedder(rec, max_retries=2, backoff=1.0)
    with pytest.raises(DeltapError, match="failed after 3 attempts .*HTTP 500: internal"):
        emb.embed_documents(["x"])
    assert sleeps == [1.0, 2.0]


def test_transport_errors_are_retried() -> None:
    calls = {"n": 0}

    def flaky(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            raise httpx.ConnectError("connection reset")
        return httpx.Response(200, json=_ok(json.loads(request.content)["texts"]))

    emb = CohereEmbedder(api_key="k", transport=httpx.MockTransport(flaky), sleep=lambda s: None)
    assert emb.embed_documents(["a"]).shape == (1, 4)
    assert calls["n"] == 2


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_is_a_clear_error(status: int) -> None:
    rec = Recorder([(status, {"message": "invalid api token"}, {})])
    emb, sleeps = _embedder(rec)
    with pytest.raises(
        DeltapError, match=f"Cohere refused the API key \\(HTTP {status}: invalid api token\\); check COHERE_API_KEY"
    ):
        emb.embed_documents(["x"])
    assert sleeps == []  # never retried


def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(DeltapError, match="needs an API key: set COHERE_API_KEY"):
        CohereEmbedder()
    monkeypatch.setenv("COHERE_API_KEY", "   ")
    with pytest.raises(DeltapError, match="COHERE_API_KEY"):
        CohereEmbedder()


@pytest.mark.parametrize(
    ("status", "payload", "message"),
    [
        pytest.param(
            400, {"message": "invalid request: texts must not be empty"}, "rejected .*HTTP 400.*texts must", id="400"
        ),
        pytest.param(200, {"id": "x", "embeddings": {}}, "no embeddings.float", id="no-float"),
        pytest.param(200, {"embeddings": {"float": [[1.0]]}}, "returned 1 embeddings for 2 texts", id="count"),
    ],
)
def test_bad_responses(status: int, payload: dict, message: str) -> None:
    emb, _ = _embedder(Recorder([(status, payload, {})]))
    with pytest.raises(DeltapError, match=message):
        emb.embed_documents(["a", "b"])


def test_unknown_model_dimension_is_probed() -> None:
    rec = Recorder()
    emb, _ = _embedder(rec, model="embed-v9-experimental")
    assert emb.dimension == 4 and rec.requests[0]["input_type"] == "search_query"
