"""SQLite response cache: replays of a solver call are free and exact.

Key: SHA-256 of ``(solver id, model and parameters, call kind, prompt hash, reference)``. The solver id carries the
backend, model and decoding parameters; :meth:`describe` (when the solver has it) adds the rest (max tokens, ...),
so changing any of them misses the cache instead of replaying a stale answer. Only successful calls are stored:
errors are never cached (a retry later may succeed).

The file uses WAL mode and one connection per thread, so threads (``solve_many``) and processes can share it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deltap.solvers.base import Answer, Score, SolveRequest, SolverError
from deltap.solvers.concurrency import answer_all, score_all
from deltap.solvers.prompts import prompt_hash, render_prompt

__all__ = ["CachedSolver", "ResponseCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    solver_id TEXT NOT NULL,
    params TEXT NOT NULL,
    kind TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    reference TEXT,
    payload TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class ResponseCache:
    """A key-value store of solver results in one SQLite file.

    Args:
        path: The database file (created with its parent directories).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        with self._conn() as conn:
            conn.execute(_SCHEMA)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @staticmethod
    def key(solver_id: str, params: dict[str, Any], kind: str, phash: str, reference: str | None = None) -> str:
        blob = json.dumps([solver_id, params, kind, phash, reference], sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT payload FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(
        self,
        key: str,
        solver_id: str,
        params: dict[str, Any],
        kind: str,
        phash: str,
        reference: str | None,
        payload: dict[str, Any],
    ) -> None:
        conn = self._conn()
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    solver_id,
                    json.dumps(params, sort_keys=True, default=str),
                    kind,
                    phash,
                    reference,
                    json.dumps(payload, ensure_ascii=False, default=str),
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class CachedSolver:
    """Wraps a solver with a :class:`ResponseCache`; same ``id``, same protocol, plus the batch methods.

    ``hits`` and ``misses`` count lookups. A replayed :class:`Answer` / :class:`Score` equals the stored one field by
    field (text, usage, latency of the original call, raw).
    """

    def __init__(self, inner: Any, cache: ResponseCache | str | Path) -> None:
        self.inner = inner
        self.cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.id = inner.id
        describe = getattr(inner, "describe", None)
        self.params: dict[str, Any] = describe() if callable(describe) else {}
        self.params.pop("model_path", None)  # where the file lives does not change answers
        self.template = getattr(inner, "template", None)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def _key(self, request: SolveRequest, kind: str, reference: str | None = None) -> tuple[str, str]:
        phash = prompt_hash(render_prompt(request, self.template))
        return self.cache.key(self.id, self.params, kind, phash, reference), phash

    def _count(self, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1

    def answer(self, request: SolveRequest) -> Answer:
        key, phash = self._key(request, "answer")
        stored = self.cache.get(key)
        self._count(stored is not None)
        if stored is not None:
            return Answer(**stored)
        ans = self.inner.answer(request)
        self._store_answer(key, phash, ans)
        return ans

    def _store_answer(self, key: str, phash: str, ans: Answer) -> None:
        payload = {
            "text": ans.text,
            "usage": dict(ans.usage),
            "latency": ans.latency,
            "raw": ans.raw,
            "solver_id": ans.solver_id,
        }
        self.cache.put(key, self.id, self.params, "answer", phash, None, payload)

    def score(self, request: SolveRequest, reference: str) -> Score:
        key, phash = self._key(request, "score", reference)
        stored = self.cache.get(key)
        self._count(stored is not None)
        if stored is not None:
            return Score(**stored)
        sc = self.inner.score(request, reference)
        self._store_score(key, phash, reference, sc)
        return sc

    def _store_score(self, key: str, phash: str, reference: str, sc: Score) -> None:
        payload = {
            "logprob": sc.logprob,
            "n_tokens": sc.n_tokens,
            "latency": sc.latency,
            "solver_id": sc.solver_id,
            "prompt_tokens": sc.prompt_tokens,
        }
        self.cache.put(key, self.id, self.params, "score", phash, reference, payload)

    def answer_many(self, requests: Sequence[SolveRequest]) -> list[Answer | SolverError]:
        """Cached answers for hits; the misses go to the inner solver as one batch (:func:`answer_all`: its
        ``answer_many``, in prefix order, when it is a :class:`~deltap.solvers.base.BatchAnswerer`)."""
        keys = [self._key(r, "answer") for r in requests]
        out: list[Answer | SolverError | None] = []
        for key, _ in keys:
            stored = self.cache.get(key)
            self._count(stored is not None)
            out.append(Answer(**stored) if stored is not None else None)
        todo = [i for i, o in enumerate(out) if o is None]
        if todo:
            results = answer_all(self.inner, [requests[i] for i in todo])
            for i, res in zip(todo, results, strict=True):
                out[i] = res
                if isinstance(res, Answer):
                    self._store_answer(keys[i][0], keys[i][1], res)
        return [o if o is not None else SolverError("not run") for o in out]

    def score_many(self, requests: Sequence[SolveRequest], reference: str | Sequence[str]) -> list[Score | SolverError]:
        """Cached scores for hits; the misses go to the inner solver as one batch (:func:`score_all`)."""
        refs = [reference] * len(requests) if isinstance(reference, str) else list(reference)
        keys = [self._key(r, "score", ref) for r, ref in zip(requests, refs, strict=False)]
        out: list[Score | SolverError | None] = []
        for key, _ in keys:
            stored = self.cache.get(key)
            self._count(stored is not None)
            out.append(Score(**stored) if stored is not None else None)
        todo = [i for i, o in enumerate(out) if o is None]
        if todo:
            scored = score_all(self.inner, [requests[i] for i in todo], [refs[i] for i in todo])
            for i, res in zip(todo, scored, strict=True):
                out[i] = res
                if isinstance(res, Score):
                    self._store_score(keys[i][0], keys[i][1], refs[i], res)
        return [o if o is not None else SolverError("not run") for o in out]

    def describe(self) -> dict[str, Any]:
        return {**self.params, "cache": str(self.cache.path)}
