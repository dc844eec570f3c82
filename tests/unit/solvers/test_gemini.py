"""Gemini solver: the real google-genai client against a local server replaying Gemini REST responses."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("google.genai")

from deltap.errors import DeltapError  # noqa: E402
from deltap.solvers.base import SolveRequest, SolverError  # noqa: E402
from deltap.solvers.gemini import GeminiSolver  # noqa: E402
from deltap.solvers.retry import RetryPolicy  # noqa: E402

# Response bodies in the shape of the Gemini REST API (v1beta generateContent).
RECORDED_OK = {
    "candidates": [
        {"content": {"parts": [{"text": "BaseAgent\n"}], "role": "model"}, "finishReason": "STOP", "index": 0}
    ],
    "usageMetadata": {"promptTokenCount": 812, "candidatesTokenCount": 3, "totalTokenCount": 815},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "abc123",
}
RECORDED_BLOCKED = {
    "candidates": [{"finishReason": "SAFETY", "index": 0}],
    "usageMetadata": {"promptTokenCount": 812, "totalTokenCount": 812},
    "modelVersion": "gemini-2.5-flash",
}
RECORDED_429 = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}
RECORDED_400 = {"error": {"code": 400, "message": "API key not valid", "status": "INVALID_ARGUMENT"}}


@pytest.fixture()
def replay() -> Iterator[tuple[str, list[Any]]]:
    script: list[Any] = []
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            seen.append({"path": self.path, "body": body, "key": self.headers.get("x-goog-api-key")})
            status, headers, payload = script.pop(0) if len(script) > 1 else script[0]
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", [script, seen]
    httpd.shutdown()
    httpd.server_close()


def make(url: str, sleeps: list[float]) -> GeminiSolver:
    return GeminiSolver(
        model="gemini-2.5-flash",
        api_key="test-key",
        base_url=url,
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, sleep=sleeps.append),
    )


REQ = SolveRequest("c", "What is the base class of all agents?")


def test_answer_from_recorded_response(replay: tuple[str, list[Any]]) -> None:
    url, (script, seen) = replay
    script.append((200, {}, RECORDED_OK))
    ans = make(url, []).answer(REQ)
    assert ans.text == "BaseAgent"
    assert ans.usage == {"prompt_tokens": 812, "completion_tokens": 3, "attempts": 1}
    sent = seen[0]
    assert sent["path"].endswith("/models/gemini-2.5-flash:generateContent") and sent["key"] == "test-key"
    assert sent["body"]["generationConfig"]["temperature"] == 0.0
    assert "DOCUMENTATION CONTEXT" not in json.dumps(sent["body"]["systemInstruction"])  # no documents here
    assert sent["body"]["contents"][0]["parts"][0]["text"].startswith(REQ.question)


def test_429_then_success_honours_retry_after(replay: tuple[str, list[Any]]) -> None:
    url, (script, _) = replay
    script.extend([(429, {"retry-after": "0.2"}, RECORDED_429), (200, {}, RECORDED_OK)])
    sleeps: list[float] = []
    assert make(url, sleeps).answer(REQ).usage["attempts"] == 2
    assert sleeps == [0.2]


def test_errors_classified(replay: tuple[str, list[Any]]) -> None:
    url, (script, seen) = replay
    script.append((400, {}, RECORDED_400))
    with pytest.raises(SolverError, match="not retryable"):
        make(url, []).answer(REQ)
    assert len(seen) == 1
    script.clear()
    script.append((429, {}, RECORDED_429))
    with pytest.raises(SolverError, match="after 3 attempts"):
        make(url, []).answer(REQ)


def test_blocked_reply_is_an_empty_answer(replay: tuple[str, list[Any]]) -> None:
    url, (script, _) = replay
    script.append((200, {}, RECORDED_BLOCKED))
    ans = make(url, []).answer(REQ)
    assert ans.text == "" and "SAFETY" in str(ans.raw["finish_reason"])


def test_score_is_not_available_and_key_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(DeltapError, match="GEMINI_API_KEY"):
        GeminiSolver()
    with pytest.raises(NotImplementedError, match="cannot score"):
        GeminiSolver(api_key="k").score(REQ, "BaseAgent")


@pytest.mark.integration
@pytest.mark.skipif(not os.environ.get("GEMINI_API_KEY"), reason="opt-in live test: set GEMINI_API_KEY")
def test_live_gemini() -> None:
    ans = GeminiSolver(model=os.environ.get("GEMINI_MODEL", "gemini-2.5-flash")).answer(
        SolveRequest("live", "What is 2 + 2? Answer with the number only.", benchmark_type="beir")
    )
    assert "4" in ans.text
