"""The trial log: every solver call of a mining run, in SQLite (WAL), written before the trial counts.

Tables:

* ``meta(key, value)`` — the run's configuration (JSON values); a rerun with a different configuration is refused.
* ``pools(case_id, pool_json)`` — each case's candidate pool, fixed at first sight so a resumed run tests the same
  documents even if the retriever changed.
* ``trials`` — one row per ``(case_id, kind, trial_index)``: ``seed``, ``inclusion`` (a 0/1 string over the pool
  order), ``prompt_hash``, ``answer`` (raw text), ``outcome`` (``pass`` / ``fail`` / ``error`` / ``score``),
  ``value`` (1/0 for pass/fail, the log-probability for ``score``, NULL for errors), ``latency``, ``solver_id``,
  ``checker_id``, ``detail``, ``created``. ``kind`` is ``preflight_none``, ``preflight_all``, ``design`` or
  ``coalition``.
* ``cases(case_id, status, info_json)`` — the final status of each finished case.

Every insert is its own committed transaction in WAL mode, so a ``kill -9`` loses at most the call in flight; a
rerun reads the log, skips what is there, and — because every trial's subset and the simulated randomness are
functions of the trial seed — produces exactly the result of an uninterrupted run.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deltap.errors import DeltapError

__all__ = ["TrialLog", "TrialRecord"]

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
    PRIMARY KEY (case_id, kind, trial_index)
);
CREATE TABLE IF NOT EXISTS cases (case_id TEXT PRIMARY KEY, status TEXT NOT NULL, info_json TEXT NOT NULL);
"""


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

    @property
    def is_error(self) -> bool:
        return self.outcome == "error"


class TrialLog:
    """An SQLite (WAL) trial log. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise DeltapError(f"{self.path}: not a deltap trial log ({exc}); pick another --out directory") from None

    def __enter__(self) -> TrialLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Fold the WAL into the database file (so ``trials.sqlite`` alone is complete) and close."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:  # another reader holds the WAL: it stays beside the file, still consistent
            pass
        self._db.close()

    # -- configuration -------------------------------------------------------------------------------------------
    def check_config(self, config: dict[str, Any], keys: tuple[str, ...], legacy: dict[str, Any] | None = None) -> None:
        """Store ``config`` on first use; later runs must agree on ``keys`` (the ones that change results).

        ``legacy`` gives the value a key had implicitly in logs written before the option existed (a log without
        ``design`` was written with coin-flip inclusion), so such a log is not silently resumed with a new default.
        """
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not rows:
            with self._db:
                self._db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)", [(k, json.dumps(v, sort_keys=True)) for k, v in config.items()]
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
                "resume with the same options or choose a new --out directory"
            )

    def config(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta").fetchall()}

    # -- pools -----------------------------------------------------------------------------------------------------
    def get_pool(self, case_id: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT pool_json FROM pools WHERE case_id = ?", (case_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put_pool(self, case_id: str, pool: dict[str, Any]) -> None:
        self._db.execute("INSERT OR REPLACE INTO pools (case_id, pool_json) VALUES (?, ?)", (case_id, json.dumps(pool)))

    # -- trials ----------------------------------------------------------------------------------------------------
    def append(self, rec: TrialRecord) -> None:
        """Write one trial (committed before returning). A duplicate key is an error: trials are never rewritten."""
        self._db.execute(
            "INSERT INTO trials (case_id, kind, trial_index, seed, inclusion, prompt_hash, answer, outcome, value, "
            "latency, solver_id, checker_id, detail, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.case_id, rec.kind, rec.trial_index, rec.seed, rec.inclusion, rec.prompt_hash, rec.answer,
                rec.outcome, rec.value, rec.latency, rec.solver_id, rec.checker_id, rec.detail, time.time(),
            ),
        )

    def trials(self, case_id: str, kind: str | None = None) -> list[TrialRecord]:
        """Trials of a case (optionally one kind), ordered by kind then index."""
        sql = (
            "SELECT case_id, kind, trial_index, seed, inclusion, prompt_hash, answer, outcome, value, latency, "
            "solver_id, checker_id, detail FROM trials WHERE case_id = ?"
        )
        args: tuple[Any, ...] = (case_id,)
        if kind is not None:
            sql += " AND kind = ?"
            args += (kind,)
        sql += " ORDER BY kind, trial_index"
        return [TrialRecord(*row) for row in self._db.execute(sql, args).fetchall()]

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM trials").fetchone()[0])

    # -- case status -----------------------------------------------------------------------------------------------
    def set_status(self, case_id: str, status: str, info: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO cases (case_id, status, info_json) VALUES (?, ?, ?)", (case_id, status, json.dumps(info))
        )

    def status(self, case_id: str) -> tuple[str, dict[str, Any]] | None:
        row = self._db.execute("SELECT status, info_json FROM cases WHERE case_id = ?", (case_id,)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]))
