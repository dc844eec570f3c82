"""Solver and checker costs (issue #5, "How well").

1. Local solver on a real 20-candidate ADK case, N trials (inclusion π=0.5, seeded): naive
   ``Llama.create_chat_completion(temperature=0)`` per trial (in trial order, with llama-cpp-python's own
   previous-prompt reuse) vs :meth:`LlamaCppSolver.answer_many` (prefix-trie order, KV reuse, logits only where
   needed) and :meth:`LlamaCppSolver.score_many`; answers must be identical, scores must equal scoring each
   trial from scratch.
2. Prompt tokens to evaluate per trial for canonical document orders (id order vs longest first, the engine's
   default; ``--order`` picks the one of the timed run), counted exactly
   from the token sequences (no model run): the trie walk evaluates each distinct prefix once.
3. With ``--looks N``: the trials scored in batches of N (how mining sends them, one look at a time), with and
   without the solver's KV snapshots that carry prefixes across batches.
4. Pytest checker overhead per call (trivial test file, full sandbox).
5. OpenAI-compatible client: sustained requests/s against ``python -m llama_cpp.server`` at concurrency 1, 4, 16.

Run: ``python benchmarks/bench_solvers.py [--trials 64] [--skip-server]``. Needs ../shared/data/adk.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADK = REPO.parent / "shared" / "data" / "adk"


def trie_tokens(seqs: list[list[int]]) -> int:
    """Tokens evaluated by a depth-first walk of the prefix trie (= sum of LCP-complements in sorted order)."""
    total, prev = 0, []  # type: ignore[var-annotated]
    for s in sorted(seqs):
        lcp = 0
        for a, b in zip(prev, s, strict=False):
            if a != b:
                break
            lcp += 1
        total += len(s) - lcp
        prev = s
    return total


def build_case(n_candidates: int, trials: int, seed: int, order: str = "length", max_chars: int = 800):  # type: ignore[no-untyped-def]
    """A real ADK case, a 20-candidate pool and ``trials`` random subsets, each in the mining engine's canonical order.

    The subsets are drawn over the id-sorted pool (so both orders test the same subsets) and then arranged with
    :func:`deltap.mining.design.canonical_order` — ``length`` (the engine's default) or ``id``.
    """
    import deltap
    from deltap.mining.design import canonical_order
    from deltap.trials.request import request_from_case

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        corpus = deltap.load_corpus(ADK / "corpus_ranked_targets.yaml")
    cases = deltap.load_cases(ADK / "api_understanding.yaml", corpus=corpus, on_missing="skip")
    case = next(c for c in cases if c.gold_doc_ids)
    rng = random.Random(seed)
    gold = [corpus[d] for d in case.gold_doc_ids]
    pool_ids = {d.doc_id for d in gold}
    others = [d for d in corpus if d.doc_id not in pool_ids and len(d.text) <= max_chars]
    pool = gold + rng.sample(others, n_candidates - len(gold))
    pool.sort(key=lambda d: d.doc_id)
    subsets = [[d for d in pool if rng.random() < 0.5] for _ in range(trials)]
    ids = [d.doc_id for d in pool]
    rank = {
        ids[i]: r
        for r, i in enumerate(canonical_order(ids, [len(d.text) for d in pool] if order == "length" else None))
    }
    subsets = [sorted(s, key=lambda d: rank[d.doc_id]) for s in subsets]
    return case, pool, subsets, request_from_case


def bench_local(trials: int, seed: int, score_check: int, order: str = "length", flash_attn: bool = False) -> None:
    from dataclasses import replace

    from llama_cpp import Llama

    from deltap.solvers.base import Answer, Score
    from deltap.solvers.llama_cpp import LlamaCppSolver, default_model_path
    from deltap.solvers.prompts import render_prompt

    case, pool, all_subsets, request_from_case = build_case(20, max(trials, 128), seed, order)
    subsets = all_subsets[:trials]
    base = request_from_case(case)
    reqs = [replace(base, documents=tuple(s)) for s in subsets]
    solver = LlamaCppSolver(n_ctx=4096, flash_attn=flash_attn)
    toks = [solver.tokens(r) for r in reqs]
    mean_prompt = statistics.mean(len(t) for t in toks)
    print(
        f"case {case.case_id}: {len(pool)} candidates, {trials} timed trials, mean prompt {mean_prompt:.0f} tokens, "
        f"context order {order}, flash attention {'on' if flash_attn else 'off'} (both methods)",
        flush=True,
    )

    # prompt tokens the trie walk evaluates, for two canonical orders and several trial counts (exact, no model run)
    def arranged(o: str) -> list[list[int]]:
        return [solver.tokens(replace(base, documents=tuple(s))) for s in build_case(20, max(trials, 128), seed, o)[2]]

    seq_id, seq_len = arranged("id"), arranged("length")
    print("\n| canonical order | trials | prompt tokens/trial | evaluated/trial (trie walk) | reduction |")
    print("|---|---|---|---|---|")
    for name, seqs in (("doc id", seq_id), ("longest first", seq_len)):
        for n in (16, 32, 64, 128):
            full = sum(len(t) for t in seqs[:n])
            walk = trie_tokens(seqs[:n])
            print(f"| {name} | {n} | {full / n:.0f} | {walk / n:.0f} | {full / walk:.2f}x |")
    print(flush=True)

    # naive: create_chat_completion per trial, in trial order
    naive_llm = Llama(
        model_path=str(default_model_path()),
        n_ctx=4096,
        n_threads=solver.llm.n_threads,
        n_batch=512,
        logits_all=False,
        verbose=False,
        seed=0,
        flash_attn=flash_attn,
    )
    start = time.perf_counter()
    naive_texts = []
    naive_eval = 0
    prev: list[int] = []
    for r, t in zip(reqs, toks, strict=False):
        out = naive_llm.create_chat_completion(messages=render_prompt(r), temperature=0, max_tokens=24)  # type: ignore[arg-type]
        naive_texts.append((out["choices"][0]["message"]["content"] or "").strip())
        lcp = 0
        for a, b in zip(prev, t, strict=False):
            if a != b:
                break
            lcp += 1
        naive_eval += len(t) - min(lcp, len(t) - 1)
        prev = t
    naive_wall = time.perf_counter() - start
    del naive_llm
    print(
        f"naive create_chat_completion: {naive_wall / trials:.2f} s/trial, {naive_eval / trials:.0f} prompt tokens "
        f"evaluated/trial, {naive_eval / naive_wall:.0f} tokens/s",
        flush=True,
    )

    solver.reset()
    before = solver.tokens_evaluated
    start = time.perf_counter()
    answers = solver.answer_many(reqs)
    ours_wall = time.perf_counter() - start
    ours_eval = sum(a.usage["prompt_tokens_evaluated"] for a in answers if isinstance(a, Answer))
    gen_steps = solver.tokens_evaluated - before - ours_eval
    same = sum(isinstance(a, Answer) and a.text == n for a, n in zip(answers, naive_texts, strict=False))
    print(
        f"answer_many: {ours_wall / trials:.2f} s/trial, {ours_eval / trials:.0f} evaluated/trial, "
        f"{same}/{trials} identical",
        flush=True,
    )

    solver.reset()
    before = solver.tokens_evaluated
    start = time.perf_counter()
    scores = solver.score_many(reqs, case.reference_answer or "")
    score_wall = time.perf_counter() - start
    score_eval = solver.tokens_evaluated - before

    # scores equal scoring each trial from scratch (a sample of trials)
    diffs = []
    for i in range(min(score_check, trials)):
        solver.reset()
        fresh = solver.score(reqs[i], case.reference_answer or "")
        s = scores[i]
        assert isinstance(s, Score)
        diffs.append(abs(fresh.logprob - s.logprob))

    print("\n| method | wall s/trial | prompt tokens evaluated/trial | tokens/s | speed-up | identical to naive |")
    print("|---|---|---|---|---|---|")
    print(
        f"| naive create_chat_completion | {naive_wall / trials:.2f} | {naive_eval / trials:.0f} | "
        f"{naive_eval / naive_wall:.0f} | 1.00x | - |"
    )
    print(
        f"| answer_many (trie order, KV reuse) | {ours_wall / trials:.2f} | {ours_eval / trials:.0f} | "
        f"{ours_eval / ours_wall:.0f} | {naive_wall / ours_wall:.2f}x | {same}/{trials} answers |"
    )
    print(
        f"| score_many (logprob outcome) | {score_wall / trials:.2f} | {score_eval / trials:.0f} | "
        f"{score_eval / score_wall:.0f} | {naive_wall / score_wall:.2f}x | max abs diff vs from-scratch "
        f"{max(diffs):.1e} nats ({len(diffs)} trials) |"
    )
    print(f"(answer_many also ran {gen_steps / trials:.1f} single-token decode steps/trial)")


def bench_looks(trials: int, seed: int, look: int, order: str = "length") -> None:
    """Mining sends a case's trials one look at a time: ``score_many`` over batches of ``look`` trials, with the
    solver's KV snapshots (prefix reuse across batches) and without; scores must be identical."""
    from dataclasses import replace

    from deltap.solvers.base import Score
    from deltap.solvers.llama_cpp import LlamaCppSolver

    case, pool, subsets, request_from_case = build_case(20, trials, seed, order)
    base = request_from_case(case)
    reqs = [replace(base, documents=tuple(s)) for s in subsets[:trials]]
    solver = LlamaCppSolver(n_ctx=4096)
    rows, scores = [], {}
    for states in (0, 16):
        solver.reset()
        solver.prefix_states = states
        ev0, rs0 = solver.tokens_evaluated, solver.tokens_restored
        start = time.perf_counter()
        out = []
        for a in range(0, trials, look):
            out += solver.score_many(reqs[a : a + look], case.reference_answer or "")
        wall = time.perf_counter() - start
        scores[states] = [s.logprob for s in out if isinstance(s, Score)]
        rows.append(
            (states, wall / trials, (solver.tokens_evaluated - ev0) / trials, (solver.tokens_restored - rs0) / trials)
        )
    same = scores[0] == scores[16] and len(scores[0]) == trials
    print(f"\nscore_many in looks of {look} trials, {trials} trials, context order {order}:")
    print("| KV snapshots | wall s/trial | prompt tokens evaluated/trial | restored from snapshots/trial | speed-up |")
    print("|---|---|---|---|---|")
    for states, wall, ev, rs in rows:
        print(
            f"| {'16 (default)' if states else 'off'} | {wall:.2f} | {ev:.0f} | {rs:.0f} | {rows[0][1] / wall:.2f}x |"
        )
    print(f"scores identical with and without snapshots: {same}")


def bench_pytest(runs: int) -> None:
    from deltap.cases import Case, CheckerSpec
    from deltap.checkers import make_checker

    tmp = Path(tempfile.mkdtemp())
    (tmp / "test_m.py").write_text("from m import f\n\n\ndef test_f():\n    assert f() == 1\n")
    (tmp / "fixed.py").write_text("def f():\n    return 1\n")
    spec = CheckerSpec(
        "pytest", {"test_file": str(tmp / "test_m.py"), "module_name": "m", "fixed_file": str(tmp / "fixed.py")}
    )
    checker = make_checker(spec)
    case = Case("c", "q", checker=spec)
    checker.check(case, "```python\ndef f():\n    return 1\n```")  # includes the preflight
    times, layers = [], []
    for _ in range(runs):
        start = time.perf_counter()
        r = checker.check(case, "```python\ndef f():\n    return 1\n```")
        times.append(time.perf_counter() - start)
        assert r.passed, r
        layers = r.info["isolation"]
    print(
        f"\npytest checker, trivial test, {runs} runs: median {statistics.median(times):.2f} s, "
        f"max {max(times):.2f} s per call; isolation: {', '.join(layers)}"
    )


def bench_server(requests_per_level: int) -> None:
    from deltap.solvers import solve_many
    from deltap.solvers.base import Answer, SolveRequest
    from deltap.solvers.llama_cpp import default_model_path
    from deltap.solvers.openai_compat import OpenAISolver
    from deltap.solvers.prompts import PromptTemplate

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
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
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.3)
        solver = OpenAISolver(
            model="smollm2",
            base_url=url,
            max_tokens={"beir": 8},
            extra_body={"repeat_penalty": 1.0},
            template=PromptTemplate(answer_protocol="off"),  # the in-process solver's prompt
        )
        print("\n| concurrency | requests | wall s | requests/s | errors |")
        print("|---|---|---|---|---|")
        for conc in (1, 4, 16):
            reqs = [
                SolveRequest(f"r{i}", f"Name one planet. ({i})", benchmark_type="beir")
                for i in range(requests_per_level)
            ]
            start = time.perf_counter()
            out = solve_many(solver, reqs, concurrency=conc)
            wall = time.perf_counter() - start
            errors = sum(not isinstance(a, Answer) for a in out)
            print(f"| {conc} | {len(reqs)} | {wall:.1f} | {len(reqs) / wall:.2f} | {errors} |")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--score-check", type=int, default=8, help="trials re-scored from scratch to compare")
    ap.add_argument("--pytest-runs", type=int, default=10)
    ap.add_argument("--server-requests", type=int, default=32)
    ap.add_argument(
        "--order",
        choices=("length", "id"),
        default="length",
        help="canonical document order of the timed run (the engine's default is length)",
    )
    ap.add_argument("--flash-attn", action="store_true", help="flash attention for both methods")
    ap.add_argument(
        "--looks",
        type=int,
        default=0,
        help="also score the trials in batches of this size (mining's looks), with and without KV snapshots",
    )
    ap.add_argument("--only-looks", action="store_true", help="run only the --looks comparison")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    args = ap.parse_args()
    if not ADK.exists():
        sys.exit(f"ADK data not found at {ADK}")
    if args.looks:
        bench_looks(args.trials, args.seed, args.looks, args.order)
        if args.only_looks:
            return
    if not args.skip_local:
        bench_local(args.trials, args.seed, args.score_check, args.order, args.flash_attn)
    bench_pytest(args.pytest_runs)
    if not args.skip_server:
        bench_server(args.server_requests)


if __name__ == "__main__":
    main()
