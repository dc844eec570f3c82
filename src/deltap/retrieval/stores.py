"""Vector stores behind the dense retriever: one :class:`VectorStore` contract, two Qdrant backends.

* :class:`EdgeStore` — the embedded default: Qdrant Edge (``qdrant-edge-py``), Qdrant's Rust engine in-process. A
  store path is a folder; each collection lives in ``<path>/<collection>/`` (``shard/`` + ``deltap_index.json``).
* :class:`QdrantClientStore` — qdrant-client: a Qdrant server or Qdrant Cloud by URL (+ API key), or qdrant-client's
  own local mode (``QdrantClient(path=...)``, pure Python; kept as the reference backend for congruence tests).

Why Edge is the embedded default (measured by ``benchmarks/bench_retrieval.py`` on this 2-core machine, 20,000 ×
384 random unit vectors, exact top-10, both backends returning the true top-10): Edge answers a query ~12× faster
than qdrant-client local mode and ingests ~50× faster; local mode keeps every vector in Python/numpy, pickles points
into SQLite, and warns above 20,000 points. Edge's limit: a shard is opened by one process at a time, so two
processes cannot share one embedded index; within a process the shard is shared (see :func:`_open_edge_shard`).
deltap takes its own lock before Edge touches a shard (:class:`_IndexLock`: Edge's own lock comes too late, after a
second process has already damaged a build in progress), so a second process is refused in one line while the index
is being built, and waits a few seconds while it is being read; long runs read what they need and
:meth:`~VectorStore.release` the index. Use a Qdrant server for concurrent access.

Every point: id = UUID5 of the doc id (re-upserting a document replaces it: no duplicates after an interrupted
run), vector = the document's embedding, payload = the document's metadata + ``doc_id`` + a reserved ``_deltap``
object (title, text, content hash, corpus position). Search is exact (brute force) by default: for corpora of up to
~10⁵ documents it is fast, and it makes results independent of HNSW build order, which ground truth needs.

The index description (:class:`IndexInfo`: embedder name and dimension, metadata fields, completeness) is stored in
``deltap_index.json`` (Edge) or in the collection's own metadata (qdrant-client), and checked on every open.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from deltap.errors import DeltapError

__all__ = [
    "INDEX_FORMAT",
    "LOCK_WAIT_SECONDS",
    "EdgeStore",
    "IndexBusyError",
    "IndexInfo",
    "IndexMismatchError",
    "QdrantClientStore",
    "StoredHit",
    "VectorStore",
    "lock_wait_seconds",
    "point_id",
]

INDEX_FORMAT = "deltap-index/1"
RESERVED = "_deltap"
_NAMESPACE = uuid.UUID("6f1d3c2e-6a52-4c1e-9d0b-3e0c4b7f2a10")


class IndexMismatchError(DeltapError):
    """The index was built with another embedder (name or dimension) than the one asked for."""


def point_id(doc_id: str) -> str:
    """Deterministic Qdrant point id (UUID5) of a document id."""
    return str(uuid.uuid5(_NAMESPACE, doc_id))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class IndexInfo:
    """What an index was built with; stored beside (Edge) or inside (Qdrant collection metadata) the index.

    Args:
        embedder: Embedder name (e.g. ``sentence-transformers/all-MiniLM-L6-v2``).
        dimension: Vector size.
        collection: Collection name.
        n_documents: Documents the last ``deltap index`` run meant to store.
        complete: ``False`` while an indexing run is in progress or was interrupted.
        metadata_fields: Sorted metadata keys found in the documents (the fields a filter may use, with ``doc_id``).
        corpus_name: Where the documents came from.
        distance: Always ``cosine``.
        format: Layout version.
        updated_at: ISO timestamp of the last change.
    """

    embedder: str
    dimension: int
    collection: str
    n_documents: int = 0
    complete: bool = False
    metadata_fields: list[str] = field(default_factory=list)
    corpus_name: str = ""
    distance: str = "cosine"
    format: str = INDEX_FORMAT
    updated_at: str = field(default_factory=_now)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> IndexInfo:
        try:
            data = json.loads(text)
            known = {f for f in cls.__dataclass_fields__}
            return cls(**{k: v for k, v in data.items() if k in known})
        except (ValueError, TypeError) as exc:
            raise DeltapError(
                f"{where}: unreadable deltap index description ({exc}); rebuild with `deltap index`"
            ) from None

    def check_embedder(self, name: str, dimension: int, where: str) -> None:
        """Refuse an embedder that does not match the one the index was built with."""
        if self.embedder != name or self.dimension != dimension:
            raise IndexMismatchError(
                f"{where} was built with embedder {self.embedder} ({self.dimension} dimensions), not {name} "
                f"({dimension} dimensions); use --embedder {self.embedder} with this index, or index into a new "
                "--collection / store"
            )


@dataclass(frozen=True)
class StoredHit:
    """One raw result of a store: the doc id, cosine similarity and the full payload."""

    doc_id: str
    score: float
    payload: Mapping[str, Any]


class VectorStore(Protocol):
    """The operations the dense retriever and the indexer need from a vector database."""

    location: str

    def read_info(self) -> IndexInfo | None:
        """The stored description, or ``None`` when the collection does not exist yet."""
        ...

    def create(self, info: IndexInfo) -> None:
        """Create the collection (cosine, ``info.dimension``) and store ``info``."""
        ...

    def write_info(self, info: IndexInfo) -> None:
        """Replace the stored description."""
        ...

    def upsert(self, doc_ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        """Insert or replace points (ids from :func:`point_id`) and make them durable."""
        ...

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Remove points."""
        ...

    def scan(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Every stored ``(doc_id, {"hash": ..., "position": ...})``."""
        ...

    def count(self) -> int:
        """Number of stored points."""
        ...

    def query(
        self, vectors: np.ndarray, limit: int, filter: Mapping[str, Any] | None, exact: bool = True
    ) -> list[list[StoredHit]]:
        """Nearest points by cosine for each row of ``vectors``, best first."""
        ...

    def release(self) -> None:
        """Let go of the store's files and locks until the next call, which reopens them (a long run releases its
        index once it has read what it needs, so that other processes can open it); a server has nothing to
        release."""
        ...

    def close(self) -> None:
        """Release the store (files, connections)."""
        ...


# --------------------------------------------------------------------------------------------------- Qdrant Edge
#: How long a process waits for an index another process is *reading* (a search, a run drawing its pools: seconds);
#: ``$DELTAP_INDEX_WAIT`` overrides it. An index another process is *building* is refused at once (a build can take
#: minutes).
LOCK_WAIT_SECONDS = 15.0


def lock_wait_seconds() -> float:
    """``$DELTAP_INDEX_WAIT`` (seconds, >= 0) or :data:`LOCK_WAIT_SECONDS`."""
    raw = os.environ.get("DELTAP_INDEX_WAIT", "").strip()
    try:
        return max(0.0, float(raw)) if raw else LOCK_WAIT_SECONDS
    except ValueError:
        raise DeltapError(f"DELTAP_INDEX_WAIT={raw!r}: give seconds (a number >= 0)") from None


LOCK_FILE = "deltap_index.lock"
_ROLES = {"build": "being built", "read": "being read"}


class IndexBusyError(DeltapError):
    """Another process holds the embedded index (building it, or reading it for longer than the wait)."""


@dataclass
class _Holder:
    """Who holds an index's lock: written into the lock file by the holder, read by whoever is refused."""

    pid: int
    role: str
    command: str
    since: str

    @classmethod
    def me(cls, role: str) -> _Holder:
        import sys

        prog = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
        name = prog.parent.name if prog.name == "__main__.py" else prog.name  # `python -m deltap` is deltap
        argv = [name, *sys.argv[1:]]
        command = " ".join(argv)
        return cls(os.getpid(), role, command if len(command) <= 80 else command[:77] + "...", _now())

    @classmethod
    def read(cls, fd: int) -> _Holder | None:
        try:
            raw = os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
            data = json.loads(raw) if raw.strip() else None
            return cls(int(data["pid"]), str(data["role"]), str(data["command"]), str(data["since"])) if data else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def describe(self) -> str:
        try:
            since = datetime.fromisoformat(self.since).astimezone().strftime("%H:%M:%S")
        except ValueError:
            since = self.since
        return f"pid {self.pid}: `{self.command}`, since {since}"


class _IndexLock:
    """An exclusive advisory lock (``flock``) on one embedded index, taken before Qdrant Edge touches its files.

    Why deltap locks before Qdrant Edge does: Edge locks a shard's WAL, but only after it has loaded the shard's
    segments; a second process opening a shard that another process is writing truncates the writer's payload
    tracker journal before it is refused, and the writer's next flush fails ("Tracker journal ... is shorter than
    expected"). So no process opens a shard without this lock: the second one is refused (a build) or waits up to
    ``wait`` seconds (a read), and never touches the shard's files. The lock file holds the holder's pid, role
    (``build`` / ``read``), command and start time, for the refusal's message; the kernel releases the lock when the
    holder exits, however it ends (a killed build leaves an incomplete index the next ``deltap index`` finishes).
    """

    def __init__(self, folder: Path, role: str, wait: float) -> None:
        self.path = folder / LOCK_FILE
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._take(folder, role, wait)
        except BaseException:  # refused, failed, or interrupted while waiting
            os.close(self.fd)
            raise
        self.role = ""
        self.mark(role)

    def _take(self, folder: Path, role: str, wait: float) -> None:
        import fcntl

        deadline = time.monotonic() + max(0.0, wait)
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                holder = _Holder.read(self.fd)
                if (holder is not None and holder.role == "build") or time.monotonic() >= deadline:
                    raise IndexBusyError(_busy_message(folder, holder, role, wait)) from None
                time.sleep(0.1)
            except OSError as exc:  # a file system without flock: Qdrant Edge's own WAL lock is all there is
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP):
                    raise
                return

    def mark(self, role: str) -> None:
        """Record (in the lock file) what this process does with the index now."""
        if role == self.role:
            return
        self.role = role
        data = json.dumps(asdict(_Holder.me(role))).encode("utf-8")
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def release(self) -> None:
        os.ftruncate(self.fd, 0)
        os.close(self.fd)  # closing the descriptor releases the flock


def _busy_message(folder: Path, holder: _Holder | None, role: str, wait: float) -> str:
    who = f" ({holder.describe()})" if holder is not None else ""
    doing = _ROLES.get(holder.role, "open") if holder is not None else "open"
    if holder is not None and holder.role == "build":
        then = "wait for the build to finish, then retry" if role == "read" else "one build at a time: wait for it"
    else:
        then = f"waited {wait:g} s; retry when it is done"
    return (
        f"the index at {folder} is {doing} by another process{who}; {then} "
        "(an embedded index serves one process at a time: serve it from a Qdrant server, --qdrant-url, to share it)"
    )


@dataclass
class _OpenShard:
    """A shard open in this process: the Edge handle, the index lock, and how many stores use it in each role."""

    shard: Any
    lock: _IndexLock | None
    users: dict[str, int] = field(default_factory=lambda: {"build": 0, "read": 0})

    def remark(self) -> None:
        if self.lock is not None:
            self.lock.mark("build" if self.users["build"] else "read")


_EDGE_LOCK = threading.Lock()
_EDGE_OPEN: dict[str, _OpenShard] = {}  # resolved shard path -> the shard open in this process


def _open_edge_shard(path: Path, dimension: int | None, role: str = "read", wait: float | None = None) -> Any:
    """Open (or create when ``dimension`` is given) an Edge shard for ``role`` (``build`` or ``read``), shared within
    this process; the index lock (:class:`_IndexLock`) is taken first."""
    import qdrant_edge as qe

    key = str(path.resolve())
    with _EDGE_LOCK:
        entry = _EDGE_OPEN.get(key)
        if entry is not None:
            entry.users[role] += 1
            entry.remark()
            return entry.shard
        lock = _IndexLock(path.parent, role, lock_wait_seconds() if wait is None else wait)
        try:
            if (path / "edge_config.json").is_file() or (path / "segments").is_dir():
                shard = qe.EdgeShard.load(str(path))
            elif dimension is not None:
                config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine))
                shard = qe.EdgeShard.create(str(path), config)
            else:
                raise DeltapError(f"no Qdrant Edge shard at {path}; build the index with `deltap index`")
        except BaseException as exc:
            lock.release()
            if isinstance(exc, DeltapError) or not isinstance(exc, Exception):
                raise
            msg = str(exc)
            if "WouldBlock" in msg or "lock" in msg.lower():  # a process that opened it without deltap's lock
                raise IndexBusyError(
                    f"the index at {path.parent} is open in another process (Qdrant Edge allows one process per "
                    "index); close that process, or serve the index from a Qdrant server (--qdrant-url)"
                ) from None
            raise DeltapError(f"cannot open the Qdrant Edge shard at {path}: {msg}") from None
        entry = _OpenShard(shard, lock)
        entry.users[role] += 1
        _EDGE_OPEN[key] = entry
        return shard


def _remark_edge_shard(path: Path, old: str, new: str) -> None:
    """A store of this process now uses the shard as ``new`` (``build`` / ``read``) instead of ``old``."""
    with _EDGE_LOCK:
        entry = _EDGE_OPEN.get(str(path.resolve()))
        if entry is not None:
            entry.users[old] -= 1
            entry.users[new] += 1
            entry.remark()


def _close_edge_shard(path: Path, role: str = "read") -> None:
    key = str(path.resolve())
    with _EDGE_LOCK:
        entry = _EDGE_OPEN.get(key)
        if entry is None:
            return
        entry.users[role] = max(0, entry.users[role] - 1)
        if sum(entry.users.values()) > 0:
            entry.remark()
            return
        del _EDGE_OPEN[key]
        try:
            entry.shard.close()
        finally:
            if entry.lock is not None:
                entry.lock.release()


def _edge_filter(filter: Mapping[str, Any] | None) -> Any:
    import qdrant_edge as qe

    if not filter:
        return None
    conditions: list[Any] = []
    for key, value in filter.items():
        match = qe.MatchAny(list(value)) if isinstance(value, list | tuple) else qe.MatchValue(value)
        conditions.append(qe.FieldCondition(key=key, match=match))
    return qe.Filter(must=conditions)


class EdgeStore:
    """A collection in an embedded Qdrant Edge shard under ``root/collection``.

    The shard is opened on the first call that needs it and held until :meth:`close` or :meth:`release`; while it is
    held, this process owns the index's lock (:class:`_IndexLock`): another process that opens the index is refused
    in one line (this one is building it) or waits up to ``wait`` seconds (this one is reading it).

    Args:
        root: The store folder (``deltap index --store PATH``).
        collection: Collection name (a sub-folder).
        wait: Seconds to wait for an index another process is reading (default :func:`lock_wait_seconds`).
    """

    INFO_FILE = "deltap_index.json"

    def __init__(self, root: str | Path, collection: str, *, wait: float | None = None) -> None:
        if not collection or "/" in collection or "\\" in collection or collection.startswith("."):
            raise DeltapError(f"bad collection name {collection!r}: use letters, digits, '-', '_' or '.'")
        self.root = Path(root)
        self.collection = collection
        self.dir = self.root / collection
        self.location = f"{self.dir}"
        self.wait = wait
        self._shard: Any = None
        self._role = "read"

    def _info_path(self) -> Path:
        return self.dir / self.INFO_FILE

    def read_info(self) -> IndexInfo | None:
        path = self._info_path()
        if not path.is_file():
            return None
        return IndexInfo.from_json(path.read_text(encoding="utf-8"), str(path))

    def write_info(self, info: IndexInfo) -> None:
        self._s("build")  # the description is written under the index's lock, by its one builder
        info.updated_at = _now()
        path = self._info_path()
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(info.to_json() + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def create(self, info: IndexInfo) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if self._shard is None:
            self._shard = _open_edge_shard(self.dir / "shard", info.dimension, "build", self.wait)
            self._role = "build"
        self.write_info(info)

    def _s(self, role: str = "read") -> Any:
        if self._shard is None:
            if self.read_info() is None:
                raise DeltapError(
                    f"no deltap index at {self.dir}; build it with `deltap index CORPUS --store {self.root}`"
                )
            self._shard = _open_edge_shard(self.dir / "shard", None, role, self.wait)
            self._role = role
        elif role == "build" and self._role != "build":
            _remark_edge_shard(self.dir / "shard", self._role, role)
            self._role = role
        return self._shard

    def upsert(self, doc_ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        import qdrant_edge as qe

        points = [
            qe.Point(uuid.UUID(point_id(d)), vectors[i].tolist(), dict(payloads[i])) for i, d in enumerate(doc_ids)
        ]
        shard = self._s("build")
        shard.update(qe.UpdateOperation.upsert_points(points))
        shard.flush()

    def delete(self, doc_ids: Sequence[str]) -> None:
        import qdrant_edge as qe

        if doc_ids:
            shard = self._s("build")
            shard.update(qe.UpdateOperation.delete_points([uuid.UUID(point_id(d)) for d in doc_ids]))
            shard.flush()

    def scan(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        import qdrant_edge as qe

        shard = self._s()
        offset = None
        while True:
            records, offset = shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=1000, with_payload=["doc_id", f"{RESERVED}.hash", f"{RESERVED}.position"]
                )
            )
            for rec in records:
                payload = rec.payload or {}
                yield str(payload.get("doc_id", "")), payload.get(RESERVED, {})
            if offset is None:
                return

    def count(self) -> int:
        return int(self._s().info().points_count)

    def query(
        self, vectors: np.ndarray, limit: int, filter: Mapping[str, Any] | None, exact: bool = True
    ) -> list[list[StoredHit]]:
        import qdrant_edge as qe

        flt = _edge_filter(filter)
        params = qe.SearchParams(exact=exact)
        requests = [
            qe.QueryRequest(
                limit=limit, query=qe.Query.Nearest(v.tolist()), filter=flt, with_payload=True, params=params
            )
            for v in vectors
        ]
        shard = self._s()
        results = (
            [shard.query(requests[0])] if len(requests) == 1 else shard.query_batch(qe.QueryBatchRequest(requests))
        )
        return [
            [StoredHit(str((p.payload or {}).get("doc_id", "")), float(p.score), p.payload or {}) for p in points]
            for points in results
        ]

    def release(self) -> None:
        """Let go of the shard and the index's lock (another process may open the index); the next call reopens it,
        as a reader."""
        if self._shard is not None:
            self._shard = None
            _close_edge_shard(self.dir / "shard", self._role)
            self._role = "read"

    def close(self) -> None:
        self.release()


# --------------------------------------------------------------------------------------------------- qdrant-client
def _client_filter(filter: Mapping[str, Any] | None) -> Any:
    from qdrant_client import models

    if not filter:
        return None
    conditions: list[Any] = []
    for key, value in filter.items():
        if isinstance(value, list | tuple):
            conditions.append(models.FieldCondition(key=key, match=models.MatchAny(any=list(value))))
        else:
            conditions.append(models.FieldCondition(key=key, match=models.MatchValue(value=value)))
    return models.Filter(must=conditions)


class QdrantClientStore:
    """A collection reached through qdrant-client: a server/Cloud (``url``) or local mode (``path``).

    Args:
        collection: Collection name.
        url: Server URL (``http://localhost:6333``, a Qdrant Cloud URL).
        api_key: Server API key (Qdrant Cloud).
        path: Local-mode folder (qdrant-client's pure-Python engine), used when ``url`` is ``None``.
        timeout: Request timeout in seconds.

    Raises:
        DeltapError: the server does not answer, or the local folder is locked by another process.
    """

    META_KEY = "deltap_index"

    def __init__(
        self,
        collection: str,
        *,
        url: str | None = None,
        api_key: str | None = None,
        path: str | Path | None = None,
        timeout: float = 10.0,
    ) -> None:
        if (url is None) == (path is None):
            raise ValueError("give exactly one of url (server) or path (local mode)")
        self.collection = collection
        self.remote = url is not None
        self.location = f"{url or path} (collection {collection!r})"
        self._url, self._api_key, self._path, self._timeout = url, api_key, path, timeout
        self._client: Any = None
        self._connect()
        if self.remote:
            try:
                self.client.get_collections()
            except Exception as exc:
                self.client.close()
                hint = "check --qdrant-url / QDRANT_URL and that the server is running"
                if "401" in str(exc) or "403" in str(exc) or "Unauthorized" in str(exc):
                    hint = "the server refused the API key; check --qdrant-api-key / QDRANT_API_KEY"
                raise DeltapError(f"Qdrant at {url} does not answer ({type(exc).__name__}: {exc}); {hint}") from None

    def _connect(self) -> Any:
        from qdrant_client import QdrantClient

        url, path = self._url, self._path
        try:
            if url is not None:
                self._client = QdrantClient(
                    url=url,
                    api_key=self._api_key or None,
                    timeout=int(max(1, self._timeout)),
                    check_compatibility=False,
                )
            else:
                Path(path).mkdir(parents=True, exist_ok=True)  # type: ignore[arg-type]
                self._client = QdrantClient(path=str(path))
        except RuntimeError as exc:  # local mode: folder locked by another client
            raise IndexBusyError(f"cannot open the Qdrant local store at {path}: {exc}") from None
        except Exception as exc:
            raise DeltapError(f"cannot connect to Qdrant at {url or path}: {exc}") from None
        return self._client

    @property
    def client(self) -> Any:
        """The qdrant-client (reconnected after :meth:`release` in local mode)."""
        return self._client if self._client is not None else self._connect()

    def read_info(self) -> IndexInfo | None:
        if not self.client.collection_exists(self.collection):
            return None
        config = self.client.get_collection(self.collection).config
        meta = getattr(config, "metadata", None) or {}
        raw = meta.get(self.META_KEY)
        if raw is None:
            raise DeltapError(
                f"collection {self.collection!r} at {self.location} was not created by `deltap index` (no "
                f"{self.META_KEY} metadata); index into another --collection"
            )
        return IndexInfo.from_json(raw, self.location)

    def create(self, info: IndexInfo) -> None:
        from qdrant_client import models

        info.updated_at = _now()
        self.client.create_collection(
            self.collection,
            vectors_config=models.VectorParams(size=info.dimension, distance=models.Distance.COSINE),
            metadata={self.META_KEY: info.to_json()},
        )

    def write_info(self, info: IndexInfo) -> None:
        info.updated_at = _now()
        self.client.update_collection(self.collection, metadata={self.META_KEY: info.to_json()})

    def upsert(self, doc_ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        from qdrant_client import models

        points = [
            models.PointStruct(id=point_id(d), vector=vectors[i].tolist(), payload=dict(payloads[i]))
            for i, d in enumerate(doc_ids)
        ]
        self.client.upsert(self.collection, points=points, wait=True)

    def delete(self, doc_ids: Sequence[str]) -> None:
        from qdrant_client import models

        if doc_ids:
            self.client.delete(
                self.collection, points_selector=models.PointIdsList(points=[point_id(d) for d in doc_ids]), wait=True
            )

    def scan(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        offset = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                limit=1000,
                offset=offset,
                with_payload=["doc_id", RESERVED],
                with_vectors=False,
            )
            for rec in records:
                payload = rec.payload or {}
                reserved = payload.get(RESERVED, {}) or {}
                yield str(payload.get("doc_id", "")), {k: reserved.get(k) for k in ("hash", "position")}
            if offset is None:
                return

    def count(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)

    def query(
        self, vectors: np.ndarray, limit: int, filter: Mapping[str, Any] | None, exact: bool = True
    ) -> list[list[StoredHit]]:
        from qdrant_client import models

        flt = _client_filter(filter)
        # local mode is always exact and warns when given search params
        params = models.SearchParams(exact=exact) if self.remote else None
        requests = [
            models.QueryRequest(query=v.tolist(), filter=flt, limit=limit, with_payload=True, params=params)
            for v in vectors
        ]
        responses = self.client.query_batch_points(self.collection, requests=requests)
        return [
            [StoredHit(str((p.payload or {}).get("doc_id", "")), float(p.score), p.payload or {}) for p in r.points]
            for r in responses
        ]

    def release(self) -> None:
        """Local mode: close the client (its folder lock goes with it); the next call reconnects. A server: nothing."""
        if not self.remote and self._client is not None:
            client, self._client = self._client, None
            client.close()

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()
