"""Runs and qrels as pandas DataFrames, in the shape ir_measures and ranx users already have.

* a run: one row per (query, document) with columns ``query_id``, ``doc_id``, ``score`` (ir_measures' run frame;
  ranx's ``Run.from_df(df, q_id_col="query_id", doc_id_col="doc_id", score_col="score")`` reads it);
* qrels: columns ``query_id``, ``doc_id``, ``relevance`` (ir_measures' qrels frame; ranx's
  ``Qrels.from_df(df, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")``).

Reading accepts the usual aliases (``q_id``/``qid`` for the query, ``docno``/``did`` for the document,
``rel``/``grade``/``label`` for qrels grades), turns ids into strings (``1`` and ``"1"`` are the same query, as in
TREC files) and rejects bad rows whole, naming the first one: a missing column, a non-finite score, a non-integer
grade, or a (query, document) pair given twice. pandas is optional: it is imported only when a frame is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from deltap.errors import DeltapError

__all__ = ["is_dataframe", "qrels_from_dataframe", "qrels_to_dataframe", "run_from_dataframe", "run_to_dataframe"]

QUERY_COLUMNS = ("query_id", "q_id", "qid")
DOC_COLUMNS = ("doc_id", "docno", "did", "corpus_id")
SCORE_COLUMNS = ("score",)
GRADE_COLUMNS = ("relevance", "rel", "grade", "label", "score")


def is_dataframe(obj: Any) -> bool:
    """A pandas DataFrame (checked without importing pandas)."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns") and hasattr(obj, "itertuples")


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - depends on the environment
        raise DeltapError("pandas is not installed: pip install pandas (or deltap[all])") from None
    return pd


def _column(df: Any, wanted: Sequence[str], given: str | None, what: str) -> str:
    columns = [str(c) for c in df.columns]
    if given is not None:
        if given not in columns:
            raise DeltapError(
                f"the DataFrame has no column {given!r} for the {what}; its columns: {', '.join(columns)}"
            )
        return given
    for name in wanted:
        if name in columns:
            return name
    raise DeltapError(
        f"the DataFrame has no {what} column (looked for {', '.join(wanted)}); its columns: {', '.join(columns)}. "
        f"Rename it or pass the column name"
    )


def _ids(values: Any) -> list[str]:
    out = []
    for v in values:
        if isinstance(v, float) and v.is_integer():  # a numeric id column read as float by pandas
            v = int(v)
        out.append(str(v))
    return out


def run_from_dataframe(
    df: Any, query_col: str | None = None, doc_col: str | None = None, score_col: str | None = None
) -> dict[str, dict[str, float]]:
    """``{query_id: {doc_id: score}}`` from a run frame (see the module docstring for columns and checks)."""
    q = _column(df, QUERY_COLUMNS, query_col, "query id")
    d = _column(df, DOC_COLUMNS, doc_col, "document id")
    s = _column(df, SCORE_COLUMNS, score_col, "score")
    run: dict[str, dict[str, float]] = {}
    for row, (qid, did, score) in enumerate(zip(_ids(df[q]), _ids(df[d]), df[s].tolist(), strict=True)):
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(float(score)):
            raise DeltapError(
                f"run DataFrame row {row}: score of ({qid!r}, {did!r}) must be a finite number, got {score!r}"
            )
        docs = run.setdefault(qid, {})
        if did in docs:
            raise DeltapError(f"run DataFrame row {row}: ({qid!r}, {did!r}) appears twice; keep one score per pair")
        docs[did] = float(score)
    return run


def qrels_from_dataframe(
    df: Any, query_col: str | None = None, doc_col: str | None = None, grade_col: str | None = None
) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: grade}}`` from a qrels frame (see the module docstring for columns and checks)."""
    q = _column(df, QUERY_COLUMNS, query_col, "query id")
    d = _column(df, DOC_COLUMNS, doc_col, "document id")
    g = _column(df, GRADE_COLUMNS, grade_col, "relevance grade")
    qrels: dict[str, dict[str, int]] = {}
    for row, (qid, did, grade) in enumerate(zip(_ids(df[q]), _ids(df[d]), df[g].tolist(), strict=True)):
        ok = (
            isinstance(grade, int | float)
            and not isinstance(grade, bool)
            and math.isfinite(float(grade))
            and float(grade).is_integer()
        )
        if not ok:
            raise DeltapError(
                f"qrels DataFrame row {row}: grade of ({qid!r}, {did!r}) must be an integer, got {grade!r}"
            )
        docs = qrels.setdefault(qid, {})
        if did in docs:
            raise DeltapError(f"qrels DataFrame row {row}: ({qid!r}, {did!r}) appears twice; keep one grade per pair")
        docs[did] = int(grade)
    return qrels


def run_to_dataframe(run: Mapping[str, Mapping[str, float]]) -> Any:
    """A run as a frame with columns ``query_id``, ``doc_id``, ``score``; rows in trec_eval order (query as given,
    score descending, ties by document id descending). The caller's dict is not changed."""
    pd = _pandas()
    rows = [
        (str(qid), str(did), float(score))
        for qid, docs in run.items()
        for did, score in sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    ]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    return frame.astype({"query_id": "object", "doc_id": "object", "score": "float64"})


def qrels_to_dataframe(qrels: Mapping[str, Mapping[str, int]]) -> Any:
    """Qrels as a frame with columns ``query_id``, ``doc_id``, ``relevance`` (integers), in the qrels' order."""
    pd = _pandas()
    rows = [(str(qid), str(did), int(grade)) for qid, docs in qrels.items() for did, grade in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])
    return frame.astype({"query_id": "object", "doc_id": "object", "relevance": "int64"})
