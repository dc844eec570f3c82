"""A fake OpenAI-compatible chat server on 127.0.0.1 that enforces a rate limit like a provider does.

Used by the Ray executor tests and by ``benchmarks/bench_scale.py``. ``POST /v1/chat/completions`` answers after
``latency`` seconds with ``answer(body)``. With ``requests_per_minute`` it keeps a provider-style bucket (``burst``
requests, refilled at the rate) and refuses a request that finds it empty with ``429`` and ``Retry-After`` — so a
client that sends faster than the limit sees failures, and one that holds the rate sees none. With ``state_limit``
a 429 also carries ``x-ratelimit-limit-requests`` (the limit, as OpenAI states it).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer"]


class FakeOpenAIServer:
    """Start with ``with FakeOpenAIServer(...) as srv: srv.url``; ``srv.accepted`` / ``srv.refused`` are the times
    (monotonic seconds) of the requests it answered and refused."""

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], str] = lambda body: "I do not know.",
        latency: float = 0.0,
        requests_per_minute: float | None = None,
        burst: float = 2.0,
        state_limit: bool = False,
    ) -> None:
        self.answer, self.latency = answer, latency
        self.rate = requests_per_minute / 60.0 if requests_per_minute else None
        self.burst = burst
        self.state_limit = state_limit
        self.level = burst
        self.stamp = time.monotonic()
        self.lock = threading.Lock()
        self.accepted: list[float] = []
        self.refused: list[float] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                wait = owner._admit()
                if wait is not None:
                    headers = {"retry-after": f"{wait:.3f}"}
                    if owner.state_limit and owner.rate is not None:  # as OpenAI does: the limit the key has
                        headers["x-ratelimit-limit-requests"] = f"{owner.rate * 60:g}"
                    self._send(429, {"error": {"message": "rate limit reached", "type": "requests"}}, headers)
                    return
                if owner.latency:
                    time.sleep(owner.latency)
                text = owner.answer(body)
                self._send(
                    200,
                    {
                        "id": "fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "m"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _admit(self) -> float | None:
        """``None`` when the request is admitted, else the seconds until it would be (the ``Retry-After``)."""
        with self.lock:
            now = time.monotonic()
            if self.rate is not None:
                self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.level < 1.0:
                    self.refused.append(now)
                    return (1.0 - self.level) / self.rate
                self.level -= 1.0
            self.accepted.append(now)
            return None

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
