"""The trial log: every solver call of a run (``deltap mine``'s, and ``deltap endtoend``'s own log), in SQLite (WAL),
written before the trial counts.

Tables:

* ``meta(key, value)`` — the run's configuration (JSON values); a rerun with a different configuration is refused.
* ``pools(case_id, pool_json)`` — each case's candidate pool, fixed at first sight so a resumed run tests the same
  documents even if the retriever changed.
* ``trials`` — one row per ``(case_id, kind, trial_index)``: ``seed``, ``inclusion`` (a 0/1 string over the pool
  order), ``prompt_hash``, ``answer`` (raw text), ``outcome`` (``pass`` / ``fail`` / ``error`` / ``score``),
  ``value`` (1/0 for pass/fail, the log-probability for ``score``, NULL for errors), ``latency``, ``solver_id``,
  ``checker_id``, ``detail``, ``created``. ``kind`` is ``preflight_none``, ``preflight_all``, ``design`` or
  ``coalition`` in a mining run, ``endtoend:<system>`` and ``endtoend:single:<doc>`` in an end-to-end run.
* ``manifests(case_id, manifest_json)`` — what the case's trials were made from (a mining run: :mod:`deltap.mining.manifest`),
  written with its pool, before its first trial; a resume that changes it is refused or re-mines the case.
* ``trial_history`` — trials no longer counted, kept as history: ``error`` trials retired at the start of a resumed
  run (so their keys are asked again: a transient outage or a bad key does not poison the run) and the trials of a
  case re-mined because its inputs changed. Same columns as ``trials`` plus ``retired`` (time) and ``reason``.

A lock (:func:`fcntl.flock` on the run directory and on ``trials.sqlite.lock``, which holds the pid; released by
the OS when the process exits or is killed) keeps a second ``deltap mine`` out of a run directory that is being
mined, whatever path it comes through, and even after the lock file was deleted.

Every insert is its own committed transaction in WAL mode, so a ``kill -9`` loses at most the call in flight; a
rerun reads the log, skips what is there, and — because every trial's subset and the simulated randomness are
functions of the trial seed — produces exactly the result of an uninterrupted run.

One writer, many threads: a run that mines several cases at once (:mod:`deltap.execution`) shares one
:class:`TrialLog` between its driver threads. Every method holds the log's lock, so SQLite sees one statement at a
time from one connection; and :meth:`TrialLog.append_once` is idempotent by trial key (the first record written for
``(case_id, kind, trial_index)`` is the one that counts), so a batch that a distributed executor retried can never
be counted twice.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

from deltap.errors import DeltapError

__all__ = ["LoggedTrial", "TrialLog", "TrialLogReader", "TrialRecord"]

P = ParamSpec("P")
R = TypeVar("R")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pools (case_id TEXT PRIMARY KEY, pool_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    case_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    trial_index INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    inclusion TEXT NOT NULL,
    prompt_hash TEXT,
    answer TEXT,
    outcome TEXT NOT NULL,
    value REAL,
    latency REAL,
    solver_id TEXT,
    checker_id TEXT,
    detail TEXT,
    created REAL NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    PRIMARY KEY (case_id, kind, trial_index)
);
CREATE TABLE IF NOT EXISTS manifests (case_id TEXT PRIMARY KEY, manifest_json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trial_history (
    case_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    trial_index INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    inclusion TEXT NOT NULL,
    prompt_hash TEXT,
    answer TEXT,
    outcome TEXT NOT NULL,
    value REAL,
    latency REAL,
    solver_id TEXT,
    checker_id TEXT,
    detail TEXT,
    created REAL NOT NULL,
    retired REAL NOT NULL,
    reason TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER
);
"""

#: the columns of a :class:`TrialRecord`, in its field order
_RECORD_COLUMNS = (
    "case_id, kind, trial_index, seed, inclusion, prompt_hash, answer, outcome, value, latency, solver_id, checker_id, "
    "detail, prompt_tokens, completion_tokens"
)
_COLUMNS = _RECORD_COLUMNS + ", created"
#: columns added after the first release, nullable: ``(name, SQL type)``; older logs get them on open (NULL: not counted)
_ADDED_COLUMNS = (("prompt_tokens", "INTEGER"), ("completion_tokens", "INTEGER"))


def _guarded(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Turn an SQLite failure inside the method into a one-line :class:`DeltapError` naming the file."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                with args[0]._mutex:  # type: ignore[attr-defined]  # one statement at a time across threads
                    return fn(*args, **kwargs)
            except sqlite3.Error as exc:
                path = getattr(args[0], "path", "trial log")
                raise DeltapError(f"{path}: cannot {what}: {_explain(exc)}") from None

        return inner

    return wrap


def _explain(exc: sqlite3.Error) -> str:
    msg = str(exc)
    if isinstance(exc, sqlite3.IntegrityError):
        return f"{msg} (the log holds a trial this run was about to write: was it written by another process?)"
    if (
        "malformed" in msg
        or "not a database" in msg
        or isinstance(exc, sqlite3.DatabaseError)
        and not isinstance(exc, sqlite3.OperationalError)
    ):
        return f"{msg} (the file is damaged: move it away to start over, or restore it from a copy)"
    if "full" in msg:
        return f"{msg} (free some space and rerun the same command: the run resumes)"
    return msg


class _RunLock:
    """The run directory's lock: ``flock`` on the directory itself and on ``<log>.lock`` (which holds the pid).

    The directory lock is the one that counts: deleting ``trials.sqlite.lock`` while a run holds it (a tidy-up)
    would otherwise hand a fresh, free lock to the next process. The file lock is kept for the pid in the message
    and for processes of older deltap versions, which take only that one.
    """

    def __init__(self, fh: IO[str], dir_fd: int) -> None:
        self.fh = fh
        self.dir_fd = dir_fd

    def close(self) -> None:
        self.fh.close()  # closing a descriptor releases its flock
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


def _lock(path: Path) -> _RunLock:
    """Take the run directory's locks without waiting (see :class:`_RunLock`); held until :meth:`_RunLock.close`."""
    import errno
    import fcntl

    lock_path = path.with_name(path.name + ".lock")

    def busy(holder: str) -> DeltapError:
        return DeltapError(
            f"{path.parent} is being mined by another process (pid {holder}, lock {lock_path.name}); "
            "wait for it to finish, stop it, or choose another --out directory"
        )

    def holder_pid() -> str:
        try:
            return lock_path.read_text(encoding="utf-8", errors="replace").strip() or "unknown"
        except OSError:
            return "unknown"

    dir_fd = -1
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if dir_fd >= 0:
            os.close(dir_fd)
            dir_fd = -1
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise busy(holder_pid()) from None
        # a file system without directory locks: the lock file alone
    try:
        fh = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 - held open for the life of the log
    except OSError as exc:
        if dir_fd >= 0:
            os.close(dir_fd)
        raise DeltapError(f"{lock_path}: cannot open the run lock: {exc.strerror}") from None
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "unknown"
        fh.close()
        if dir_fd >= 0:
            os.close(dir_fd)
        raise busy(holder) from None
    return _RunLock(fh, dir_fd)


@dataclass(frozen=True)
class TrialRecord:
    """One logged trial."""

    case_id: str
    kind: str
    trial_index: int
    seed: int
    inclusion: str
    prompt_hash: str | None
    answer: str | None
    outcome: str
    value: float | None
    latency: float
    solver_id: str
    checker_id: str
    detail: str = ""
    #: prompt tokens the solver was given (as it counted them; ``None``: not reported, or a log of an older version)
    prompt_tokens: int | None = None
    #: tokens the solver generated (0 for a ``logprob`` score; ``None``: not reported)
    completion_tokens: int | None = None

    @property
    def is_error(self) -> bool:
        return self.outcome == "error"


def _row(rec: TrialRecord) -> tuple[Any, ...]:
    """A trial's values in ``_COLUMNS`` order, stamped with the time it is written."""
    return (
        rec.case_id,
        rec.kind,
        rec.trial_index,
        rec.seed,
        rec.inclusion,
        rec.prompt_hash,
        rec.answer,
        rec.outcome,
        rec.value,
        rec.latency,
        rec.solver_id,
        rec.checker_id,
        rec.detail,
        rec.prompt_tokens,
        rec.completion_tokens,
        time.time(),
    )


def _recent_calls_sql(n: int, solver: str | None) -> tuple[str, tuple[Any, ...]]:
    """The most recent solver calls (not errors, not answered from an earlier answer, with a latency)."""
    where = "outcome != 'error' AND COALESCE(detail, '') NOT LIKE 'cached:%' AND latency > 0"
    args: tuple[Any, ...] = ()
    if solver is not None:
        where += " AND solver_id = ?"
        args = (solver,)
    sql = (
        f"SELECT latency, prompt_tokens, completion_tokens, created FROM trials WHERE {where} "
        "ORDER BY created DESC LIMIT ?"
    )
    return sql, (*args, int(n))


class TrialLog:
    """An SQLite (WAL) trial log. Use as a context manager or call :meth:`close`.

    Args:
        path: The database file (``":memory:"``: in memory, nothing written).
        lock: Hold an exclusive lock on ``<path>.lock`` while open: a second writer stops at once with a clear
            message instead of failing later on a duplicate trial.
    """

    def __init__(self, path: str | Path, lock: bool = True) -> None:
        self.path = Path(path)
        self._lock: _RunLock | None = None
        self._mutex = threading.RLock()
        #: ``(case_id, pool dict) -> manifest``: set by the engine so a pool is never stored without its manifest
        self.manifest_for: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
        memory = str(path) == ":memory:"
        if not memory:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DeltapError(f"{self.path.parent}: cannot create the run directory: {exc.strerror}") from None
            if lock:
                self._acquire()
        try:
            # check_same_thread=False: driver threads of concurrent cases share this connection, serialized by _mutex
            self._db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._migrate()
            self._db.execute("SELECT COUNT(*) FROM trials").fetchone()
        except sqlite3.Error as exc:
            self._release()
            raise DeltapError(
                f"{self.path}: not a deltap trial log, or not usable: {_explain(exc)}; or pick another --out directory"
            ) from None

    def _migrate(self) -> None:
        """Add the nullable columns of newer versions to a log written before them (its rows keep NULL there: the
        tokens of those trials were not counted). Each ``ALTER TABLE`` runs only when the column is missing."""
        for table in ("trials", "trial_history"):
            have = {r[1] for r in self._db.execute(f'PRAGMA table_info("{table}")')}
            for name, sql_type in _ADDED_COLUMNS:
                if name not in have:
                    self._db.execute(f'ALTER TABLE "{table}" ADD COLUMN {name} {sql_type}')  # noqa: S608 - fixed names

    def _acquire(self) -> None:
        lock = _lock(self.path)
        lock.fh.seek(0)
        lock.fh.truncate()
        lock.fh.write(f"{os.getpid()}\n")
        lock.fh.flush()
        self._lock = lock

    @staticmethod
    def check_unlocked(path: str | Path) -> None:
        """Fail at once if another process holds the lock of the log at ``path`` (the CLI asks before it spends
        minutes loading a corpus and building a retriever); a no-op when there is no log yet.

        Raises:
            DeltapError: the log is in use.
        """
        path = Path(path)
        if path.parent.is_dir():
            _lock(path).close()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the descriptors releases the flocks
            self._lock = None

    def __enter__(self) -> TrialLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Fold the WAL into the database file (so ``trials.sqlite`` alone is complete) and close."""
        with self._mutex:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:  # another reader holds the WAL: it stays beside the file, still consistent
                pass
            self._db.close()
            self._release()

    # -- configuration -------------------------------------------------------------------------------------------
    @_guarded("read the run configuration")
    def check_config(
        self,
        config: dict[str, Any],
        keys: tuple[str, ...],
        legacy: dict[str, Any] | None = None,
        remedy: str = "choose a new --out directory",
    ) -> None:
        """Store ``config`` on first use; later runs must agree on ``keys`` (the ones that change results).

        ``legacy`` gives the value a key had implicitly in logs written before the option existed (a log without
        ``design`` was written with coin-flip inclusion), so such a log is not silently resumed with a new default.
        ``remedy`` ends the refusal's message: what the user can do instead of resuming with the same options.

        Raises:
            DeltapError: a key differs from the logged run's.
        """
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not rows:
            with self._db:
                self._db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [(k, json.dumps(v, sort_keys=True)) for k, v in config.items()],
                )
            return
        for k, v in (legacy or {}).items():
            rows.setdefault(k, json.dumps(v, sort_keys=True))
        diffs = [
            f"{k}: log has {rows[k]}, this run {json.dumps(config.get(k), sort_keys=True)}"
            for k in keys
            if k in rows and rows[k] != json.dumps(config.get(k), sort_keys=True)
        ]
        if diffs:
            raise DeltapError(
                f"{self.path} was written by a run with a different configuration ({'; '.join(diffs)}); "
                f"resume with the same options or {remedy}"
            )

    @_guarded("read the run configuration")
    def config(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta").fetchall()}

    # -- pools -----------------------------------------------------------------------------------------------------
    @_guarded("read a pool")
    def get_pool(self, case_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT pool_json FROM pools WHERE case_id = ?", (case_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    @_guarded("write a pool")
    def put_pool(self, case_id: str, pool: dict[str, Any]) -> None:
        """Store a case's pool, with its manifest when :attr:`manifest_for` is set (one transaction)."""
        manifest = self.manifest_for(case_id, pool) if self.manifest_for is not None else None
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO pools (case_id, pool_json) VALUES (?, ?)", (case_id, json.dumps(pool))
            )
            if manifest is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO manifests (case_id, manifest_json) VALUES (?, ?)",
                    (case_id, json.dumps(manifest, sort_keys=True, ensure_ascii=False)),
                )

    # -- trials ----------------------------------------------------------------------------------------------------
    @_guarded("write a trial")
    def append(self, rec: TrialRecord) -> None:
        """Write one trial (committed before returning). A duplicate key is an error: trials are never rewritten."""
        self._db.execute(
            f"INSERT INTO trials ({_COLUMNS}) VALUES ({', '.join('?' * 16)})",
            _row(rec),
        )

    @_guarded("write a trial")
    def append_once(self, rec: TrialRecord) -> TrialRecord:
        """Write one trial unless its key ``(case_id, kind, trial_index)`` is already logged; return the logged one.

        Idempotent by trial key: the first record written for a key is the one that counts, so a retried batch (a
        worker that died after its results were sent, a job run twice by a distributed executor) can never be
        counted twice, and every caller sees the same record for a key.
        """
        cur = self._db.execute(
            f"INSERT INTO trials ({_COLUMNS}) VALUES ({', '.join('?' * 16)}) ON CONFLICT (case_id, kind, trial_index) DO NOTHING",
            _row(rec),
        )
        if cur.rowcount == 1:
            return rec
        row = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM trials WHERE case_id = ? AND kind = ? AND trial_index = ?",
            (rec.case_id, rec.kind, rec.trial_index),
        ).fetchone()
        return TrialRecord(*row)

    @_guarded("read the trials")
    def trials(self, case_id: str, kind: str | None = None) -> list[TrialRecord]:
        """Trials of a case (optionally one kind), ordered by kind then index."""
        sql = f"SELECT {_RECORD_COLUMNS} FROM trials WHERE case_id = ?"
        args: tuple[Any, ...] = (case_id,)
        if kind is not None:
            sql += " AND kind = ?"
            args += (kind,)
        sql += " ORDER BY kind, trial_index"
        return [TrialRecord(*row) for row in self._db.execute(sql, args).fetchall()]

    @_guarded("read the recent calls")
    def recent_calls(self, n: int = 64, solver: str | None = None) -> list[tuple[Any, ...]]:
        """``(latency, prompt tokens, completion tokens, created)`` of the ``n`` most recent solver calls (of
        ``solver`` when given): the measured pace of a resumed run (:func:`deltap.trials.pace.from_log`)."""
        with self._mutex:
            return self._db.execute(*_recent_calls_sql(n, solver)).fetchall()

    @_guarded("count the trials")
    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])

    # -- manifests and history -------------------------------------------------------------------------------------
    @_guarded("read the case manifests")
    def manifests(self) -> dict[str, dict[str, Any]]:
        """``{case_id: manifest}`` of every case recorded so far."""
        return {
            c: json.loads(m) for c, m in self._db.execute("SELECT case_id, manifest_json FROM manifests").fetchall()
        }

    @_guarded("read the logged pools")
    def pooled_cases(self) -> list[str]:
        """Case ids with a stored pool (logs of older versions have pools without manifests)."""
        return [r[0] for r in self._db.execute("SELECT case_id FROM pools ORDER BY case_id").fetchall()]

    @_guarded("write a case manifest")
    def put_manifest(self, case_id: str, manifest: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO manifests (case_id, manifest_json) VALUES (?, ?)",
            (case_id, json.dumps(manifest, sort_keys=True, ensure_ascii=False)),
        )

    @_guarded("retire the error trials")
    def retire_errors(self) -> int:
        """Move every ``error`` trial to ``trial_history``, so a resumed run asks its key again. Returns how many."""
        with self._db:
            self._db.execute(
                f"INSERT INTO trial_history ({_COLUMNS}, retired, reason) SELECT {_COLUMNS}, ?, 'error, retried on resume' "
                "FROM trials WHERE outcome = 'error'",
                (time.time(),),
            )
            n = self._db.execute("DELETE FROM trials WHERE outcome = 'error'").rowcount
        return int(n)

    @_guarded("forget a changed case")
    def forget_case(self, case_id: str, reason: str) -> int:
        """Start ``case_id`` over: its trials move to ``trial_history``; its pool and manifest are dropped."""
        with self._db:
            self._db.execute(
                f"INSERT INTO trial_history ({_COLUMNS}, retired, reason) SELECT {_COLUMNS}, ?, ? FROM trials WHERE case_id = ?",
                (time.time(), reason, case_id),
            )
            n = self._db.execute("DELETE FROM trials WHERE case_id = ?", (case_id,)).rowcount
            for table in ("pools", "manifests"):
                self._db.execute(f"DELETE FROM {table} WHERE case_id = ?", (case_id,))  # noqa: S608 - fixed names
        return int(n)

    @_guarded("read the trial history")
    def history(self, case_id: str | None = None) -> list[tuple[TrialRecord, str]]:
        """Retired trials (oldest first) with the reason each was retired."""
        sql = f"SELECT {_RECORD_COLUMNS}, reason FROM trial_history"
        args: tuple[Any, ...] = ()
        if case_id is not None:
            sql += " WHERE case_id = ?"
            args = (case_id,)
        rows = self._db.execute(sql + " ORDER BY retired, rowid", args).fetchall()
        return [(TrialRecord(*row[:-1]), row[-1]) for row in rows]


@dataclass(frozen=True)
class LoggedTrial:
    """One row of a trial log as :class:`TrialLogReader` reads it: the record and the time it was written.

    Logs of older versions lack some columns: ``answer`` and ``detail`` then read ``""``, the token counts ``None``.
    """

    record: TrialRecord
    created: float | None


#: the columns a log must have for :meth:`TrialLogReader.trials` (older logs may lack answer, detail and tokens)
_REQUIRED = frozenset({"case_id", "kind", "trial_index", "inclusion", "outcome", "value", "latency", "created"})


class TrialLogReader:
    """A read-only view of a trial log (``mode=ro``: never writes, never locks, never migrates), for the reports and
    the exports. The one place besides :class:`TrialLog` that knows the schema.

    Args:
        path: The ``trials.sqlite`` file.

    Raises:
        DeltapError: the file cannot be opened, or it is not a deltap trial log (no ``trials`` table).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DeltapError(f"{self.path}: no trial log ({self.path.name}) here")
        try:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise DeltapError(f"{self.path}: cannot open the trial log: {exc}") from None
        try:
            self.tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            self.columns = {r[1] for r in self._db.execute('PRAGMA table_info("trials")')}
        except sqlite3.Error as exc:
            self._db.close()
            raise DeltapError(f"{self.path}: cannot read the trial log: {exc}") from None
        if "trials" not in self.tables:
            self._db.close()
            raise DeltapError(f"{self.path}: not a deltap trial log (no trials table)")

    def __enter__(self) -> TrialLogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @property
    def complete(self) -> bool:
        """Whether the ``trials`` table has every column :meth:`trials` needs (the mining engine's log)."""
        return _REQUIRED <= self.columns

    def _query(self, what: str, sql: str) -> list[Any]:
        try:
            return self._db.execute(sql).fetchall()
        except sqlite3.Error as exc:
            raise DeltapError(f"{self.path}: cannot read {what}: {exc}") from None

    def outcome_counts(self) -> dict[str, int]:
        """``{outcome: trials}`` of the counted trials (a numeric outcome of a foreign log counts as ``scored``)."""
        counts: dict[str, int] = {}
        for outcome, n in self._query("the trials", "SELECT outcome, COUNT(*) FROM trials GROUP BY outcome"):
            key = "scored" if isinstance(outcome, float) else str(outcome)
            counts[key] = counts.get(key, 0) + int(n)
        return counts

    def pools(self) -> Iterator[tuple[str, Any]]:
        """``(case_id, pool)`` of every stored pool; ``pool`` is ``None`` when its JSON cannot be read."""
        if "pools" not in self.tables:
            return
        for case_id, pool_json in self._query("the pools", "SELECT case_id, pool_json FROM pools"):
            try:
                yield str(case_id), json.loads(pool_json)
            except (TypeError, json.JSONDecodeError):
                yield str(case_id), None

    def calls_by_case_and_kind(self) -> dict[tuple[str, str], int]:
        """``{(case_id, kind): calls}``: the solver calls the log holds, as a resumed run will not make them again
        (``error`` trials are asked again on resume; a trial answered from a deterministic solver's earlier answer,
        ``detail`` ``cached:…``, was no call)."""
        rows = self._query(
            "the trials",
            "SELECT case_id, kind, COUNT(*) FROM trials WHERE outcome != 'error' "
            "AND COALESCE(detail, '') NOT LIKE 'cached:%' GROUP BY case_id, kind",
        )
        return {(str(c), str(k)): int(n) for c, k, n in rows}

    def recent_calls(self, n: int = 64, solver: str | None = None) -> list[tuple[Any, ...]]:
        """As :meth:`TrialLog.recent_calls` (``[]`` for a log without token columns)."""
        if not {"prompt_tokens", "completion_tokens", "latency", "created"} <= self.columns:
            return []
        try:
            return self._db.execute(*_recent_calls_sql(n, solver)).fetchall()
        except sqlite3.Error as exc:
            raise DeltapError(f"{self.path}: cannot read the trials: {exc}") from None

    def answered_keys(self) -> set[tuple[str, str, int]]:
        """``(case_id, kind, trial_index)`` of every trial that is not an ``error`` (what a resumed run keeps)."""
        rows = self._query("the trials", "SELECT case_id, kind, trial_index FROM trials WHERE outcome != 'error'")
        return {(str(c), str(k), int(i)) for c, k, i in rows}

    def trials(self) -> list[LoggedTrial]:
        """Every counted trial in the order it was written (``created``, then row order).

        Raises:
            DeltapError: the log cannot be read, or lacks a column of :data:`_REQUIRED`.
        """
        if not self.complete:
            raise DeltapError(f"{self.path}: not the mining engine's trial log (columns missing from trials)")
        have = self.columns
        pick = ", ".join(
            c if c in have else ("''" if c in ("answer", "detail") else "NULL") for c in _RECORD_COLUMNS.split(", ")
        )
        rows = self._query("the trials", f"SELECT {pick}, created FROM trials ORDER BY created, rowid")  # noqa: S608
        return [LoggedTrial(TrialRecord(*row[:-1]), row[-1]) for row in rows]
