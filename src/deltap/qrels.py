"""Relevance judgements (qrels) and retriever runs, as plain interchange dicts, and their file formats.

* ``Qrels`` = ``{query_id: {doc_id: grade}}`` with integer grades >= 0 (0 = judged not relevant; unlisted = 0).
* ``Run``   = ``{query_id: {doc_id: score}}`` with finite float scores (higher = better).

These are exactly the dicts pytrec_eval, ranx and ir_measures take, so they plug in anywhere.

Formats (read and write):

* **BEIR TSV** ``qrels/<split>.tsv``: header ``query-id<TAB>corpus-id<TAB>score``, integer grades.
* **TREC qrels**: ``qid 0 docid grade`` (whitespace separated; the second column is ignored on read).
* **TREC run**: ``qid Q0 docid rank score tag``.
* **qrels JSONL**: ``{"query_id", "query", "relevant_docs": {doc_id: grade}, "reference_answer"?}`` per line;
  empty lines skipped.

Bad lines raise :class:`~deltap.errors.FormatError` with file and line; duplicate (query, doc) pairs are an error
(they would silently overwrite each other otherwise), and so is a repeated key in any JSON object, bytes that are not
UTF-8, and a qrels file without a single judgement (every measure would be ``nan``). Grades are integers from 0 to
:data:`MAX_GRADE`. Ids written into the whitespace-separated TREC formats may not contain whitespace (the reader
would split them): the writers refuse them rather than write a file deltap cannot read back. Every writer replaces
its file atomically.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltap._io import atomic_write, iter_jsonl, iter_lines, json_loads, read_text, record_id
from deltap.errors import DeltapError, FormatError

__all__ = [
    "Qrels",
    "QrelsRecord",
    "Run",
    "load_run",
    "read_beir_qrels",
    "read_qrels_jsonl",
    "read_trec_qrels",
    "read_trec_run",
    "write_beir_qrels",
    "write_qrels_jsonl",
    "write_trec_qrels",
    "write_trec_run",
]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

#: the largest relevance grade accepted (a 32-bit signed integer: no reader or metric overflows on it)
MAX_GRADE = 2**31 - 1


@dataclass
class QrelsRecord:
    """One line of a qrels JSONL file."""

    query_id: str
    query: str
    relevant_docs: dict[str, int]
    reference_answer: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def _grade(value: str | int | float, path: Path, lineno: int) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, str):
            grade = int(value.strip())
        elif isinstance(value, float):
            if not value.is_integer():
                raise ValueError
            grade = int(value)
        else:
            grade = int(value)
    except (ValueError, TypeError):
        raise FormatError(path, f"relevance grade must be an integer >= 0, got {value!r}", lineno) from None
    if grade < 0 or grade > MAX_GRADE:
        raise FormatError(path, f"relevance grade must be an integer >= 0 and <= {MAX_GRADE}, got {grade}", lineno)
    return grade


def _put(
    table: dict[str, dict[str, int]] | dict[str, dict[str, float]],
    qid: str,
    did: str,
    value: float,
    path: Path,
    lineno: int,
) -> None:
    row = table.setdefault(qid, {})
    if did in row:
        raise FormatError(path, f"duplicate pair (query {qid!r}, doc {did!r})", lineno)
    row[did] = value  # type: ignore[assignment]


def read_beir_qrels(path: str | Path) -> Qrels:
    """Read a BEIR qrels TSV (``query-id``, ``corpus-id``, ``score`` with a header row)."""
    path = Path(path)
    qrels: Qrels = {}
    for lineno, raw in iter_lines(path):
        line = raw.rstrip("\n\r")
        if not line.strip():
            continue
        parts = line.split("\t")
        if lineno == 1 and parts[0].strip().lower() in {"query-id", "query_id", "qid"}:
            continue
        if len(parts) != 3:
            raise FormatError(
                path, f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(parts)}", lineno
            )
        qid, did, grade = (p.strip() for p in parts)
        if not qid or not did:
            raise FormatError(path, "empty query-id or corpus-id", lineno)
        _put(qrels, qid, did, _grade(grade, path, lineno), path, lineno)
    return qrels


def _check_ids(table: Mapping[str, Mapping[str, object]], path: Path, fmt: str, tsv: bool = False) -> None:
    """Refuse ids the format cannot hold: whitespace (TREC splits on it), tabs/newlines or edge spaces (BEIR TSV)."""

    def bad(i: str) -> bool:
        if tsv:
            return not i or "\t" in i or "\n" in i or "\r" in i or i != i.strip()
        return not i or any(ch.isspace() for ch in i)

    ids = [q for q in table if bad(str(q))] + [d for docs in table.values() for d in docs if bad(str(d))]
    if ids:
        shown = ", ".join(repr(i) for i in sorted(set(ids))[:10])
        raise DeltapError(
            f"{path}: {len(set(ids))} id(s) cannot be written as {fmt} (empty, or with whitespace the reader would split "
            f"on): {shown}; rename them"
        )


def write_beir_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> Path:
    """Write BEIR qrels TSV with its header row."""
    path = Path(path)
    _check_ids(qrels, path, "BEIR TSV", tsv=True)
    with atomic_write(path) as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, docs in qrels.items():
            for did, grade in docs.items():
                fh.write(f"{qid}\t{did}\t{int(grade)}\n")
    return path


def read_trec_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels: ``qid iter docid grade`` per line."""
    path = Path(path)
    qrels: Qrels = {}
    for lineno, raw in iter_lines(path):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise FormatError(path, f"expected 4 columns 'qid 0 docid grade', got {len(parts)}", lineno)
        qid, _, did, grade = parts
        _put(qrels, qid, did, _grade(grade, path, lineno), path, lineno)
    return qrels


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path) -> Path:
    """Write TREC qrels (``qid 0 docid grade``)."""
    path = Path(path)
    _check_ids(qrels, path, "TREC qrels")
    with atomic_write(path) as fh:
        for qid, docs in qrels.items():
            for did, grade in docs.items():
                fh.write(f"{qid} 0 {did} {int(grade)}\n")
    return path


def read_trec_run(path: str | Path) -> Run:
    """Read a TREC run: ``qid Q0 docid rank score tag``. Scores must be finite numbers."""
    path = Path(path)
    run: Run = {}
    for lineno, raw in iter_lines(path):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise FormatError(path, f"expected 6 columns 'qid Q0 docid rank score tag', got {len(parts)}", lineno)
        qid, _, did, _rank, score_s, _tag = parts
        try:
            score = float(score_s)
        except ValueError:
            raise FormatError(path, f"score must be a number, got {score_s!r}", lineno) from None
        if not math.isfinite(score):
            raise FormatError(path, f"score must be finite, got {score_s!r}", lineno)
        _put(run, qid, did, score, path, lineno)
    return run


def write_trec_run(run: Mapping[str, Mapping[str, float]], path: str | Path, tag: str = "deltap") -> Path:
    """Write a TREC run, ranks 1..n by descending score (ties by doc id, ascending)."""
    path = Path(path)
    _check_ids(run, path, "TREC run")
    if not tag or any(ch.isspace() for ch in tag):
        raise DeltapError(f"{path}: the run tag {tag!r} must be one word without whitespace")
    with atomic_write(path) as fh:
        for qid, docs in run.items():
            ranked = sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))
            for rank, (did, score) in enumerate(ranked, start=1):
                fh.write(f"{qid} Q0 {did} {rank} {float(score)!r} {tag}\n")
    return path


def read_qrels_jsonl(path: str | Path) -> list[QrelsRecord]:
    """Read qrels JSONL records (see the module docstring); empty lines are skipped."""
    path = Path(path)
    records: list[QrelsRecord] = []
    seen: set[str] = set()
    for lineno, obj in iter_jsonl(path, "one qrels record per line"):
        qid = record_id(obj, ("query_id",), path, lineno)
        if qid in seen:
            raise FormatError(path, f"duplicate query_id {qid!r}", lineno)
        seen.add(qid)
        docs = obj.get("relevant_docs")
        if not isinstance(docs, dict):
            raise FormatError(path, '"relevant_docs" must be an object {doc_id: grade}', lineno)
        ref = obj.get("reference_answer")
        if ref is not None and not isinstance(ref, str):
            raise FormatError(path, '"reference_answer" must be a string when present', lineno)
        query = obj.get("query", "")
        if not isinstance(query, str):
            raise FormatError(path, '"query" must be a string', lineno)
        extra = {k: v for k, v in obj.items() if k not in {"query_id", "query", "relevant_docs", "reference_answer"}}
        records.append(
            QrelsRecord(
                query_id=qid,
                query=query,
                relevant_docs={str(d): _grade(g, path, lineno) for d, g in docs.items()},
                reference_answer=ref,
                extra=extra,
            )
        )
    return records


def write_qrels_jsonl(records: list[QrelsRecord], path: str | Path) -> Path:
    """Write qrels JSONL, one record per line (``reference_answer`` omitted when ``None``)."""
    path = Path(path)
    with atomic_write(path) as fh:
        for rec in records:
            obj: dict[str, object] = {
                "query_id": rec.query_id,
                "query": rec.query,
                "relevant_docs": dict(rec.relevant_docs),
            }
            if rec.reference_answer is not None:
                obj["reference_answer"] = rec.reference_answer
            obj.update(rec.extra)
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
    return path


def load_run(path: str | Path | Any) -> Run:
    """Load a retriever run: a TREC run file, JSON ``{query_id: {doc_id: score}}``, or a pandas DataFrame with
    columns ``query_id``, ``doc_id``, ``score`` (see :mod:`deltap.frames`; :func:`deltap.run_to_dataframe` is the
    way back)."""
    from deltap.frames import is_dataframe, run_from_dataframe

    if is_dataframe(path):
        return run_from_dataframe(path)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"run file not found: {path}")
    if path.suffix.lower() == ".json":
        data = json_loads(read_text(path), path)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise FormatError(path, "expected a JSON object {query_id: {doc_id: score}}")
        run: Run = {}
        for qid, docs in data.items():
            row: dict[str, float] = {}
            for did, score in docs.items():
                if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                    raise FormatError(path, f"score of ({qid!r}, {did!r}) must be a finite number, got {score!r}")
                row[str(did)] = float(score)
            run[str(qid)] = row
        return run
    return read_trec_run(path)
