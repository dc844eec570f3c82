"""Opt-in live test of the Cohere embedder: runs only when COHERE_API_KEY is set (it calls the paid API)."""

from __future__ import annotations

import os

import pytest

from deltap.retrieval.cohere import CohereEmbedder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not os.environ.get("COHERE_API_KEY"), reason="opt-in: set COHERE_API_KEY to call the live API"),
]


def test_live_cohere_embed() -> None:  # pragma: no cover - needs a key and network
    emb = CohereEmbedder(max_retries=3)
    docs = emb.embed_documents(["The wing generates lift.", "Sessions store conversation state."])
    query = emb.embed_queries(["How does a wing produce lift?"])
    assert docs.shape == (2, 1024) and query.shape == (1, 1024)
    scores = docs @ query[0]
    assert scores[0] > scores[1]
