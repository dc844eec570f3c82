"""The OpenAI-compatible solver against real servers on 127.0.0.1 with the same SmolLM2 file.

* ``python -m llama_cpp.server`` (started here): chat answers agree with the in-process solver; its echo logprobs
  are wrong (measured: " Paris" -8.45 vs -0.25 in-process), and the scorer's self-check refuses it.
* a minimal completions server whose echo logprobs are computed in-process (correct by construction): the self-check
  passes and ``score()`` over HTTP agrees with in-process scoring.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("uvicorn", reason="llama_cpp.server needs llama-cpp-python[server]")

from deltap.errors import DeltapError  # noqa: E402
from deltap.solvers import make_solver, solve_many  # noqa: E402
from deltap.solvers.base import Answer, SolveRequest  # noqa: E402
from deltap.solvers.llama_cpp import LlamaCppSolver, default_model_path  # noqa: E402
from deltap.solvers.openai_compat import OpenAISolver  # noqa: E402
from deltap.solvers.prompts import PromptTemplate  # noqa: E402

pytestmark = pytest.mark.integration

REQ = SolveRequest("c", "What is the foundational class for all agents in the ADK?")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start (exit status {proc.poll()})")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def local() -> LlamaCppSolver:
    return LlamaCppSolver(n_ctx=1024)


def test_chat_answers_agree_with_in_process(llama_server: str, local: LlamaCppSolver) -> None:
    # llama.cpp's server defaults to repeat_penalty=1.1, which is not greedy decoding: ask for the plain argmax
    # the in-process solver's prompt: a hosted solver asks for the answer protocol line unless told not to
    remote = make_solver(
        "openai", model="smollm2", base_url=llama_server, extra_body={"repeat_penalty": 1.0}, answer_protocol="off"
    )
    out = solve_many(remote, [REQ, REQ], concurrency=2)
    assert all(isinstance(a, Answer) for a in out)
    texts = {a.text for a in out if isinstance(a, Answer)}
    assert texts == {local.answer(REQ).text}  # greedy on both sides, same model, same chat template


def test_self_check_refuses_the_llama_cpp_server(llama_server: str) -> None:
    remote = OpenAISolver(model="smollm2", base_url=llama_server)
    with pytest.raises(DeltapError, match="refusing to score .* self-check"):
        remote.score(REQ, "BaseAgent")


# Added by the echo server to the last token's logprob of a prompt ending with the key: the score over HTTP must move
# by exactly that, which proves it is summed from the server's numbers (not recomputed in-process).
LAST_TOKEN_SHIFT: dict[str, float] = {}


@pytest.fixture(scope="module")
def correct_echo_server(local: LlamaCppSolver) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            pieces, values = local.token_logprobs(body["prompt"])
            for suffix, shift in LAST_TOKEN_SHIFT.items():
                if body["prompt"].endswith(suffix):
                    values = [*values[:-1], values[-1] + shift]
            offsets, pos = [], 0
            for p in pieces:
                offsets.append(pos)
                pos += len(p)
            payload = {
                "id": "x",
                "object": "text_completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "text": body["prompt"],
                        "finish_reason": "length",
                        "logprobs": {
                            "tokens": pieces,
                            "text_offset": offsets,
                            "token_logprobs": values,
                            "top_logprobs": None,
                        },
                    }
                ],
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_score_over_http_agrees_with_in_process(correct_echo_server: str, local: LlamaCppSolver) -> None:
    remote = OpenAISolver(
        model="smollm2", base_url=correct_echo_server, verify_with=local, template=PromptTemplate(answer_protocol="off")
    )
    report = remote.verify_scoring()
    assert report["near_certain_logprob"] > -2.0
    assert report["probe_server"] == pytest.approx(report["probe_in_process"], abs=0.05)
    over_http = remote.score(REQ, "BaseAgent")
    in_process = local.score(REQ, "BaseAgent")
    assert over_http.logprob == pytest.approx(in_process.logprob, abs=0.05)
    assert over_http.n_tokens == in_process.n_tokens
    # The server's numbers are what is summed: shift the reference's last token by -1.5 nats on the server only.
    LAST_TOKEN_SHIFT["BaseAgent"] = -1.5
    try:
        shifted = remote.score(REQ, "BaseAgent")
    finally:
        LAST_TOKEN_SHIFT.clear()
    assert shifted.logprob == pytest.approx(over_http.logprob - 1.5, abs=1e-6)
    assert local.score(REQ, "BaseAgent").logprob == pytest.approx(in_process.logprob, abs=1e-6)
