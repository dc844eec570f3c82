"""A persistent embedding cache keyed by content hash, so re-indexing unchanged documents costs nothing.

One SQLite file (WAL mode, safe for several processes) with rows ``(model, sha256(text), dimension, vector)``. The key
includes the embedder's ``name``: a vector is only reused for the same model and exactly the same text. Only document
embeddings are cached (query embedding is a few milliseconds and queries rarely repeat across runs).

Location: ``cache_dir`` if given, else ``$DELTAP_CACHE_DIR``, else ``~/.cache/deltap``; the file is
``embeddings.sqlite`` inside it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from deltap.retrieval.embedders import Embedder

__all__ = ["EmbeddingCache", "default_cache_dir", "text_hash"]


def default_cache_dir() -> Path:
    """``$DELTAP_CACHE_DIR`` or ``~/.cache/deltap``."""
    env = os.environ.get("DELTAP_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "deltap"


def text_hash(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text (the cache key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Document vectors by ``(embedder name, text hash)``.

    Args:
        cache_dir: Folder of ``embeddings.sqlite`` (created when missing); see the module docstring for the default.

    Attributes:
        hits: Vectors served from the cache since this object was created.
        misses: Vectors that had to be computed.
    """

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "embeddings.sqlite"
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL, "
            "vector BLOB NOT NULL, PRIMARY KEY (model, hash))"
        )
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for these hashes (absent ones are left out)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT hash, dim, vector FROM embeddings WHERE model = ? AND hash IN ({marks})", [model, *chunk]
            )
            for h, dim, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == dim:
                    found[h] = vec
        return found

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store vectors (one transaction)."""
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings (model, hash, dim, vector) VALUES (?, ?, ?, ?)",
                [(model, h, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    def embed_documents(
        self,
        embedder: Embedder,
        texts: Sequence[str],
        batch_size: int = 64,
        on_batch: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Document vectors for ``texts``: cached ones read, the others computed in batches and stored.

        Args:
            embedder: The model.
            texts: Texts to embed.
            batch_size: Texts per call to the embedder (and per cache write: an interrupted run keeps its batches).
            on_batch: Called with the number of texts finished after each batch and after the cache lookup.

        Returns:
            ``(len(texts), embedder.dimension)`` float32 array in the order of ``texts``.
        """
        hashes = [text_hash(t) for t in texts]
        found = self.get_many(embedder.name, hashes)
        out = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        for i, h in enumerate(hashes):
            vec = found.get(h)
            if vec is not None and vec.shape[0] == embedder.dimension:
                out[i] = vec
            else:
                todo.setdefault(h, []).append(i)
        self.hits += len(texts) - sum(len(v) for v in todo.values())
        if on_batch is not None:
            on_batch(len(texts) - sum(len(v) for v in todo.values()))
        pending = list(todo.items())
        for start in range(0, len(pending), batch_size):
            chunk = pending[start : start + batch_size]
            vectors = embedder.embed_documents([texts[rows[0]] for _, rows in chunk])
            if vectors.shape != (len(chunk), embedder.dimension):
                raise RuntimeError(
                    f"embedder {embedder.name} returned shape {vectors.shape} for {len(chunk)} texts "
                    f"(expected dimension {embedder.dimension})"
                )
            self.put_many(embedder.name, [(h, vectors[j]) for j, (h, _) in enumerate(chunk)])
            for j, (_, rows) in enumerate(chunk):
                out[rows] = vectors[j]
            done = sum(len(rows) for _, rows in chunk)
            self.misses += done
            if on_batch is not None:
                on_batch(done)
        return out
