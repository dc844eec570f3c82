"""Every trial of a run directory as a table people plug in: CSV (nothing to install) or Parquet (pyarrow, the
``fast`` extra) — ``deltap export RUN_DIR --format csv|parquet``.

One row per logged trial, in logging order, with the columns of :data:`EXPORT_COLUMNS`: the trial's key (``case_id``,
``kind``, ``trial_index``) and ``seed``, the ``prompt_hash``, the ``documents`` in the prompt (doc ids in pool order,
from the trial's inclusion vector; ``;``-separated in CSV, a list in Parquet) and how many, the solver's ``answer``,
the checker's verdict (``outcome``: ``pass``/``fail``/``score``/``error``/``overflow``) and its ``value``,
``latency`` (s), ``prompt_tokens`` / ``completion_tokens`` (empty for logs written before tokens were recorded),
``cached`` (a deterministic solver's repeat, answered without a call), ``solver_id``, ``checker_id``, ``detail`` and
``created`` (Unix time). The log is opened read-only: a run in progress is not disturbed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltap.errors import DeltapError
from deltap.run_layout import RunDir

__all__ = ["EXPORT_COLUMNS", "FORMATS", "export_trials", "trial_rows"]

#: the formats :func:`export_trials` writes
FORMATS = ("csv", "parquet")
#: the columns of an export, in order
EXPORT_COLUMNS = (
    "case_id", "kind", "trial_index", "seed", "prompt_hash", "documents", "n_documents", "answer", "outcome", "value",
    "latency", "prompt_tokens", "completion_tokens", "cached", "solver_id", "checker_id", "detail", "created",
)  # fmt: skip


def trial_rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """The trials of ``run_dir`` (a run directory, or its ``trials.sqlite``) as dicts with :data:`EXPORT_COLUMNS`.

    Raises:
        DeltapError: no trial log there, or not one deltap can read.
    """
    from deltap.trials.log import TrialLogReader

    path = Path(run_dir)
    db = RunDir(path).trials if path.is_dir() else path
    if not db.is_file():
        raise DeltapError(f"{db}: no trial log ({db.name}) here; give the run directory `deltap mine --out` wrote")
    with TrialLogReader(db) as reader:
        pools: dict[str, list[str]] = {}
        for case_id, pool in reader.pools():
            try:
                pools[case_id] = [str(c["doc_id"]) for c in pool.get("candidates", [])]
            except (KeyError, TypeError, AttributeError) as exc:
                raise DeltapError(
                    f"{db}: cannot read the trial log: the pool of {case_id!r} is damaged ({exc})"
                ) from None
        rows = reader.trials()
    out = []
    for row in rows:
        rec = row.record
        pool = pools.get(str(rec.case_id), [])
        docs = [d for d, bit in zip(pool, str(rec.inclusion or ""), strict=False) if bit == "1"]
        out.append({
            "case_id": rec.case_id, "kind": rec.kind, "trial_index": rec.trial_index, "seed": rec.seed,
            "prompt_hash": rec.prompt_hash, "documents": docs, "n_documents": len(docs), "answer": rec.answer,
            "outcome": rec.outcome, "value": rec.value, "latency": rec.latency, "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": rec.completion_tokens, "cached": str(rec.detail or "").startswith("cached:"),
            "solver_id": rec.solver_id, "checker_id": rec.checker_id, "detail": rec.detail, "created": row.created,
        })  # fmt: skip
    return out


def export_trials(run_dir: str | Path, fmt: str = "csv", out: str | Path | None = None) -> Path:
    """Write every trial of ``run_dir`` as ``fmt`` (``csv`` or ``parquet``) to ``out`` (default
    ``RUN_DIR/trials.<fmt>``) and return its path. The file is written atomically.

    Raises:
        DeltapError: an unknown format, no readable trial log, or pyarrow missing for Parquet.
    """
    if fmt not in FORMATS:
        raise DeltapError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    rows = trial_rows(run_dir)
    base = Path(run_dir) if Path(run_dir).is_dir() else Path(run_dir).parent
    target = Path(out) if out is not None else RunDir(base).export(fmt)
    if fmt == "csv":
        import csv
        import io

        from deltap._io import write_text_atomic

        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "documents": ";".join(row["documents"])})
        write_text_atomic(target, buf.getvalue())
        return target
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DeltapError("Parquet export needs pyarrow: pip install 'deltap[fast]' (or use --format csv)") from None
    schema = pa.schema([
        ("case_id", pa.string()), ("kind", pa.string()), ("trial_index", pa.int64()), ("seed", pa.int64()),
        ("prompt_hash", pa.string()), ("documents", pa.list_(pa.string())), ("n_documents", pa.int64()),
        ("answer", pa.string()), ("outcome", pa.string()), ("value", pa.float64()), ("latency", pa.float64()),
        ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()), ("cached", pa.bool_()),
        ("solver_id", pa.string()), ("checker_id", pa.string()), ("detail", pa.string()), ("created", pa.float64()),
    ])  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=schema)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(target)
    return target
