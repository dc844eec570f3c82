"""``deltap endtoend`` against a hosted (OpenAI-compatible) solver with a rate limit: a real HTTP server on
127.0.0.1 that refuses requests beyond its bucket, as a provider does."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.endtoend import EndToEndConfig, evaluate_end_to_end
from deltap.execution.base import SolverSpec
from deltap.mining.engine import mine
from deltap.mining.readability import AnswerLineIgnoredWarning
from deltap.solvers.simulated import SimulatedSolver
from tests.fake_openai import FakeOpenAIServer
from tests.unit.execution.test_executors import CFG, job

pytestmark = pytest.mark.integration


def test_endtoend_paces_a_hosted_solver_to_its_request_limit(tmp_path: Path) -> None:
    """Four calls in flight against an endpoint that allows 600 requests a minute (a bucket of 3): the solver's
    --rpm pacing keeps every request within the limit (none refused), so 24 calls take at least 2.2 s. The server
    stamps a request when its handler thread runs, so on a loaded 2-core machine two requests sent 0.1 s apart can be
    stamped closer (a bucket of 2 refused one in about one run of five there); 3 absorbs 0.2 s of that jitter, and four
    unpaced workers would still overflow it."""
    cases, corpus, options = job(4)
    run = tmp_path / "run"
    mine(cases, corpus, SimulatedSolver(**options), out=run, config=CFG)
    with FakeOpenAIServer(requests_per_minute=600, burst=3.0, answer=lambda body: "a1") as server:
        solver = SolverSpec("openai", {"model": "m", "base_url": server.url, "requests_per_minute": 600}).build()
        cfg = EndToEndConfig(k=2, outcome="pass", repeats=2, seed=5, workers=4, n_resamples=100, n_permutations=100)
        with pytest.warns(AnswerLineIgnoredWarning, match="none of 24 replies declared an answer"):
            res = evaluate_end_to_end(
                run, cases, corpus, solver, retrievers=("bm25",), controls=("none", "gold"), config=cfg
            )
    assert res.run["calls"] == 4 * 3 * 2
    assert server.refused == [] and len(server.accepted) == 24
    assert server.accepted[-1] - server.accepted[0] >= 2.2
    # the checker scored the replies: "a1" is case c1's answer only
    assert [res.values[res.case_ids.index(c)].tolist() for c in ("c0", "c1")] == [[0.0] * 3, [1.0] * 3]
    # a hosted solver's prompt asks for the 'Answer:' line by default; this model never writes it (issue 34)
    block = res.checker
    assert (block["replies"], block["declared"], block["protocol_replies"]) == (24, 0, 24)
    assert block["protocol_asked"] is True and block["protocol_warning"] is True
