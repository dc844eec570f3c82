"""A fast path from TREC run files straight to metric input, without building ``{query: {doc: score}}`` dicts.

pandas' C tokenizer reads the useful columns; query ids are factorized to integer codes, and doc ids are reduced to
their 64-bit string hashes (cheaper than a global doc-id table: no hash table of every distinct doc id is built).
Duplicate (query, doc) pairs are found by sorting each query's hashes; judged documents are located by comparing
their hash with their query's row of hashes, and every match is confirmed on the actual strings, so a hash collision
can never change a number (on a suspected collision the exact dict reader is used instead).

Every validation of :func:`deltap.qrels.read_trec_run` still applies: when anything looks wrong (column count,
non-numeric or non-finite score, duplicate pair), the file is re-read by that exact reader, which raises its usual
error naming the line.

pandas is optional: without it :func:`read_run_arrays` returns ``None`` and callers fall back to the dict reader.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deltap.errors import DeltapError
from deltap.evaluation.ranking import Ranking, build_ranking

__all__ = ["RunArrays", "rank_from_arrays", "read_qrels_fast", "read_run_arrays"]

_PAD = np.iinfo(np.int64).max


@dataclass(frozen=True)
class RunArrays:
    """A TREC run as columns, grouped by query.

    Attributes:
        query_ids: Unique query ids, in file order (object array); ``q_code`` indexes it.
        docs: ``(N,)`` doc ids (object array), in grouped order.
        doc_hash: ``(N,)`` Python string hashes of ``docs``.
        scores: ``(N,)`` scores, in grouped order.
        start: ``(Q,)`` first row of each query.
        count: ``(Q,)`` rows of each query.
        path: Source file (for messages).
    """

    query_ids: np.ndarray
    docs: np.ndarray
    doc_hash: np.ndarray
    scores: np.ndarray
    start: np.ndarray
    count: np.ndarray
    path: str

    def keys(self) -> list[str]:
        """The run's query ids (what query alignment needs)."""
        return [str(q) for q in self.query_ids]


def _exact_reader_error(path: Path) -> DeltapError:
    """Re-read with the line-precise reader to raise its error; if it accepts the file, report the mismatch."""
    from deltap.qrels import read_trec_run

    read_trec_run(path)  # raises FormatError naming the line
    return DeltapError(f"{path}: the fast TREC reader rejected a file the exact reader accepts; please report this")


def _padded(values: np.ndarray, start: np.ndarray, count: np.ndarray, fill: Any) -> np.ndarray | None:
    """``(len(start), max count)`` matrix of each segment's values, or ``None`` when padding would waste memory."""
    n = len(count)
    depth = int(count.max()) if n else 0
    total = int(count.sum())
    if n == 0 or depth == 0 or n * depth > 4 * total + 4096:
        return None
    if total == n * depth and len(values) == total and np.array_equal(start, np.arange(n) * depth):
        return values.reshape(n, depth)
    mat = np.full((n, depth), fill, dtype=values.dtype)
    row = np.repeat(np.arange(n), count)
    col = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    mat[row, col] = values[np.repeat(start, count) + col]
    return mat


def read_run_arrays(path: str | Path) -> RunArrays | None:
    """Read a TREC run (``qid Q0 docid rank score tag``) into :class:`RunArrays`.

    Returns ``None`` without pandas, or when two doc ids of one query share a string hash (then the caller uses
    the exact dict reader).

    Raises:
        FormatError: malformed line, non-finite score or duplicate (query, doc) pair, naming the line.
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        return None
    path = Path(path)
    common: dict[str, Any] = dict(
        header=None,
        names=["q", "iter", "d", "rank", "s", "tag"],
        usecols=["q", "d", "s", "tag"],
        dtype={"q": object, "d": object, "s": np.float64, "tag": object},
        engine="c",
        na_filter=False,
        skip_blank_lines=True,
    )
    df = None
    for sep in (" ", r"\s+"):  # single spaces are the common case and faster to split
        try:
            df = pd.read_csv(path, sep=sep, **common)
            break
        except pd.errors.EmptyDataError:
            return None  # an empty run: the exact reader handles it
        except (ValueError, pd.errors.ParserError):
            continue
    if df is None:
        raise _exact_reader_error(path)
    scores = df["s"].to_numpy(dtype=np.float64, copy=False)
    tag = df["tag"].to_numpy()
    if len(scores) and (not np.isfinite(scores).all() or pd.isna(tag).any() or (tag == "").any()):
        raise _exact_reader_error(path)  # non-finite score, or a line with fewer than 6 columns
    q_code, q_uniques = pd.factorize(df["q"].to_numpy(), sort=False)
    q_code = q_code.astype(np.int64, copy=False)
    docs = df["d"].to_numpy()
    n_q = len(q_uniques)
    count = np.bincount(q_code, minlength=n_q).astype(np.int64)
    changes = np.flatnonzero(np.diff(q_code)) + 1
    if len(changes) + 1 == n_q or n_q == 0:  # already grouped by query (the usual case): no reordering
        start = np.zeros(n_q, dtype=np.int64)
        if n_q:
            start[q_code[np.concatenate(([0], changes))]] = np.concatenate(([0], changes))
        # keep segments in file order: the i-th block is query q_code[block start]
    else:
        order = np.argsort(q_code, kind="stable")
        scores, docs = scores[order], docs[order]
        start = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
    doc_hash = np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs))

    # duplicate (query, doc) pairs: equal hashes within a query, confirmed on the strings
    mat = _padded(doc_hash, start, count, _PAD)
    if mat is not None:
        srt = np.sort(mat, axis=1)
        same = srt[:, 1:] == srt[:, :-1]
        same &= np.arange(srt.shape[1] - 1)[None, :] < (count - 1)[:, None]
        suspects = np.flatnonzero(same.any(axis=1))
    else:
        mix = doc_hash ^ (np.repeat(np.arange(n_q, dtype=np.int64), count) * np.int64(0x9E3779B97F4A7C15 - (1 << 64)))
        suspects = np.arange(n_q) if not pd.Index(mix).is_unique else np.zeros(0, dtype=np.int64)
    for qi in suspects.tolist():
        seg = docs[start[qi] : start[qi] + count[qi]]
        if len(set(seg.tolist())) != len(seg):
            raise _exact_reader_error(path)  # a real duplicate pair
        if len(set(doc_hash[start[qi] : start[qi] + count[qi]].tolist())) != len(seg):
            return None  # a hash collision between different doc ids: let the exact reader handle this file
    return RunArrays(
        query_ids=np.asarray(q_uniques, dtype=object),
        docs=docs,
        doc_hash=doc_hash,
        scores=scores,
        start=start,
        count=count,
        path=str(path),
    )


def read_qrels_fast(path: str | Path) -> dict[str, dict[str, int]] | None:
    """Read TREC qrels (``qid iter docid grade``) or a BEIR qrels TSV with pandas' C tokenizer.

    Returns ``None`` for other formats or without pandas. Anything the exact readers of :mod:`deltap.qrels` would
    reject (column count, non-integer or negative grade, duplicate pair) is handed to them, so they raise their usual
    error naming the line.
    """
    from deltap.qrels import detect_qrels_format, read_beir_qrels, read_trec_qrels

    path = Path(path)
    if not path.is_file():
        return None
    fmt = detect_qrels_format(path)
    if fmt not in ("trec", "beir"):
        return None
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is optional
        return None
    exact = read_trec_qrels if fmt == "trec" else read_beir_qrels
    if fmt == "beir":
        with path.open(encoding="utf-8") as fh:
            first = fh.readline().split("\t")[0].strip().lower()
        attempts: list[dict[str, Any]] = [dict(sep="\t", names=["q", "d", "g"], skiprows=1 if first in {"query-id", "query_id", "qid"} else 0)]
    else:
        attempts = [dict(sep=" ", names=["q", "i", "d", "g"]), dict(sep=r"\s+", names=["q", "i", "d", "g"])]
    df = None
    for kw in attempts:
        try:
            df = pd.read_csv(
                path, header=None, usecols=["q", "d", "g"], dtype=object, engine="c", na_filter=False,
                skip_blank_lines=True, **kw,
            )
            break
        except pd.errors.EmptyDataError:
            return {}
        except (ValueError, pd.errors.ParserError):
            continue
    if df is None:
        return exact(path)  # raises its error naming the line
    q = df["q"].to_numpy()
    d = df["d"].to_numpy()
    g_text = df["g"].to_numpy()
    try:
        if fmt == "beir" and any(isinstance(x, str) and x != x.strip() for x in g_text[:1]):
            raise ValueError
        grades = g_text.astype(np.int64)
    except (ValueError, TypeError):
        return exact(path)
    if (grades < 0).any() or (q == "").any() or (d == "").any() or pd.isna(g_text).any():
        return exact(path)
    if pd.DataFrame({"q": q, "d": d}).duplicated().any():
        return exact(path)
    qrels: dict[str, dict[str, int]] = {}
    for qid, did, grade in zip(q.tolist(), d.tolist(), grades.tolist(), strict=True):
        row = qrels.get(qid)
        if row is None:
            row = qrels[qid] = {}
        row[did] = grade
    return qrels


def rank_from_arrays(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunArrays,
    query_ids: Sequence[str],
    *,
    coalitions: Mapping[str, Sequence[Collection[str]]] | None = None,
) -> Ranking:
    """The :class:`~deltap.evaluation.ranking.Ranking` of ``query_ids`` from :class:`RunArrays` (see
    :func:`deltap.evaluation.ranking.rank_from_dicts` for the rules; results are identical)."""
    import pandas as pd

    n = len(query_ids)
    run_pos = pd.Index(run.query_ids).get_indexer(list(query_ids))  # -1 = query absent from the run
    present = run_pos >= 0
    lens = np.zeros(n, dtype=np.int64)
    lens[present] = run.count[run_pos[present]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    src = np.zeros(n, dtype=np.int64)
    src[present] = run.start[run_pos[present]]
    rows = np.repeat(src - offsets[:-1], lens) + np.arange(int(offsets[-1]), dtype=np.int64)
    scores = run.scores[rows]
    hashes = run.doc_hash[rows]
    hash_mat = _padded(hashes, offsets[:-1], lens, _PAD)

    def lookup(q_idx: Sequence[int], docs: Sequence[str]) -> np.ndarray:
        out = np.full(len(docs), math.nan)
        if not len(docs):
            return out
        q_arr = np.asarray(q_idx, dtype=np.int64)
        th = np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs))
        pos = np.full(len(docs), -1, dtype=np.int64)
        if hash_mat is not None:
            step = max(1, 4_000_000 // max(1, hash_mat.shape[1]))
            for a in range(0, len(docs), step):
                eq = hash_mat[q_arr[a : a + step]] == th[a : a + step, None]
                hit = eq.any(axis=1)
                pos[a : a + step] = np.where(hit, eq.argmax(axis=1), -1)
        else:  # very uneven depths: scan each target's own segment
            for i, (q, h) in enumerate(zip(q_arr.tolist(), th.tolist(), strict=True)):
                match = np.flatnonzero(hashes[offsets[q] : offsets[q + 1]] == h)
                pos[i] = match[0] if len(match) else -1
        for i in np.flatnonzero(pos >= 0).tolist():  # confirm on the strings (hash collisions)
            q = int(q_arr[i])
            row = int(offsets[q] + pos[i])
            if run.docs[rows[row]] != docs[i]:
                seg = run.docs[rows[offsets[q] : offsets[q + 1]]].tolist()
                pos[i] = seg.index(docs[i]) if docs[i] in seg else -1
        found = pos >= 0
        out[found] = scores[offsets[q_arr[found]] + pos[found]]
        return out

    t_q: list[int] = []
    t_doc: list[str] = []
    t_grade: list[int] = []
    for qi, qid in enumerate(query_ids):
        for did, grade in qrels.get(qid, {}).items():
            if grade > 0:
                t_q.append(qi)
                t_doc.append(did)
                t_grade.append(int(grade))
    t_score = lookup(t_q, t_doc)

    def items(qi: int) -> Iterable[tuple[str, float]]:
        a, b = int(offsets[qi]), int(offsets[qi + 1])
        return zip(run.docs[rows[a:b]].tolist(), scores[a:b].tolist(), strict=True)

    return build_ranking(
        query_ids,
        offsets,
        scores,
        np.asarray(t_q, dtype=np.int64),
        t_doc,
        np.asarray(t_grade, dtype=np.int64),
        t_score,
        items,
        lookup,
        coalitions,
    )
