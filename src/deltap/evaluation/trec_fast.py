"""A fast path from TREC files straight to metric input, without building ``{query: {doc: score}}`` dicts.

Reading a 10-million-line run is almost all tokenizing: a Python ``str.split`` loop (pytrec_eval's ``parse_run``,
deltap's exact reader) or pandas' C parser both create two Python strings per line. This module reads runs with
pyarrow's multithreaded CSV reader instead, so no per-line Python object is ever made: query ids are
dictionary-encoded while parsing (few distinct values), and document ids stay one Arrow string buffer from which a
64-bit **key** per row is computed with numpy (the id's bytes read as little-endian words, two aligned loads per word;
measured faster than hashing 10 million strings into an Arrow dictionary). Everything after the read is integer
arithmetic on those keys:

* the rows are grouped by query code (a no-op for the usual grouped file);
* duplicate (query, doc) pairs are equal keys within a query;
* a judged document is located by computing its key and comparing keys inside its query's row;
* only the few tied segments that decide a judged document's rank decode their doc ids back to strings.

When every doc id is at most 8 bytes (and has no NUL byte) the key *is* the id, so equal keys mean equal ids. Longer
ids get a polynomial fingerprint of their words; then every match is confirmed on the strings and a fingerprint
collision falls back to comparing strings, so it can never change a number.

Exactness: nothing here decides a number the exact readers of :mod:`deltap.qrels` would not. Whenever a file is not
clean single-space or tab separated TREC (other whitespace, a wrong column count, a score that is not a finite
number, a duplicate pair, an empty file), :func:`read_run_arrays` returns ``None`` and the caller uses the exact
line-by-line reader, which accepts the file or raises its usual error naming the line.

pyarrow is optional (``pip install 'deltap[fast]'``; included in ``deltap[all]``): without it both readers return
``None`` and the exact readers do the work.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.evaluation.ranking import QrelsColumns, QueryIndex, Ranking, build_ranking, judged_pairs

if TYPE_CHECKING:
    from deltap.judgements import SignedGains

__all__ = ["RunArrays", "rank_from_arrays", "read_qrels_fast", "read_run_arrays"]

_PAD = np.iinfo(np.int64).max

# Bytes per CSV block: 4 MiB halves the read time of a 10M-line run against the 1 MiB default (fewer chunks).
_CSV_BLOCK = 1 << 22

# Rows per block of :func:`_doc_keys` (its temporaries stay in cache).
_KEY_BLOCK = 1 << 16

# Targets are compared against padded key rows in chunks of about this many cells (bounded memory, cache-sized).
_CHUNK_CELLS = 1 << 18

# An empty field, or any character Python's ``str.split()`` splits on (``str.isspace``): a field the exact readers
# would tokenize differently. Checked on the distinct values only.
_NOT_ONE_TOKEN = (
    r"^$|[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)


@dataclass(frozen=True)
class RunArrays:
    """A TREC run as columns, grouped by query.

    Attributes:
        query_ids: The run's distinct query ids; ``start[i]``/``count[i]`` describe ``query_ids[i]``'s rows.
        docs: ``(N,)`` document ids (an Arrow ``large_string`` chunked array, grouped order).
        doc_key: ``(N,)`` 64-bit key of each row's document id (see the module docstring).
        exact_keys: Whether equal keys imply equal ids (all ids ≤ 8 bytes); otherwise matches are confirmed on strings.
        scores: ``(N,)`` scores (grouped order).
        start: ``(Q,)`` first row of each query.
        count: ``(Q,)`` rows of each query.
        path: Source file (for messages).
    """

    query_ids: list[str]
    docs: Any
    doc_key: np.ndarray
    exact_keys: bool
    scores: np.ndarray
    start: np.ndarray
    count: np.ndarray
    path: str

    def keys(self) -> list[str]:
        """The run's query ids (what query alignment needs)."""
        return list(self.query_ids)

    def names_of(self, rows: np.ndarray) -> list[str]:
        """Document ids of ``rows`` (a zero-copy slice when they are consecutive, as a query's rows are)."""
        if len(rows) and int(rows[-1]) - int(rows[0]) == len(rows) - 1 and bool((np.diff(rows) == 1).all()):
            return self.docs.slice(int(rows[0]), len(rows)).to_pylist()
        return _take(self.docs, rows).to_pylist()


# ``pa.array`` is avoided throughout: its first call imports pandas when installed (half a second here) to check
# whether the input is a pandas object. Arrays are built from their buffers instead.


def _int64_array(values: Any) -> Any:
    """An Arrow int64 array of ``values`` (a numpy-convertible sequence), built from its buffer."""
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def _take(values: Any, rows: np.ndarray) -> Any:
    """``values[rows]`` as one Arrow array, for an Arrow (chunked) array and some row numbers, taken chunk by chunk:
    ``ChunkedArray.take`` concatenates every chunk first (measured 0.38 s for 7,500 rows of a 10M-line run's
    doc ids, against milliseconds here)."""
    import pyarrow as pa

    rows = np.asarray(rows, dtype=np.int64)
    if not isinstance(values, pa.ChunkedArray):
        return values.take(_int64_array(rows))
    bounds = np.cumsum([0] + [len(c) for c in values.chunks], dtype=np.int64)
    which = np.searchsorted(bounds, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    grouped, chunk_of = rows[order], which[order]
    cuts = np.flatnonzero(np.diff(chunk_of)) + 1
    parts = [
        values.chunk(int(chunk_of[a])).take(_int64_array(grouped[a:b] - bounds[chunk_of[a]]))
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True)
        if b > a
    ]
    if not parts:
        return values.slice(0, 0).combine_chunks()
    taken = pa.concat_arrays(parts)
    inverse = np.empty(len(rows), dtype=np.int64)
    inverse[order] = np.arange(len(rows), dtype=np.int64)
    return taken.take(_int64_array(inverse))


def _numpy(values: Any, dtype: Any) -> np.ndarray:
    """The values of an Arrow (chunked) array of a fixed-width type or booleans, without nulls, as numpy (a view of
    a single chunk's buffer, else one copy). ``to_numpy`` is avoided too: it imports pandas as well."""
    parts = []
    for chunk in values.chunks if hasattr(values, "chunks") else [values]:
        if chunk.null_count:
            raise ValueError("unexpected null values")
        data = chunk.buffers()[1]
        if dtype is bool:
            bits = np.frombuffer(data, dtype=np.uint8)
            parts.append(np.unpackbits(bits, count=chunk.offset + len(chunk), bitorder="little")[chunk.offset :] == 1)
        else:
            dt = np.dtype(dtype)
            parts.append(np.frombuffer(data, dtype=dt, count=len(chunk), offset=chunk.offset * dt.itemsize))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _string_array(values: Sequence[str]) -> Any:
    """An Arrow ``large_string`` array of Python strings, built from its buffers (lone surrogates are kept as their
    bytes: such an id matches no id of a UTF-8 file, as with the exact readers)."""
    import pyarrow as pa

    joined = "".join(values)
    data = joined.encode("utf-8", "surrogatepass")  # one call: encoding each id alone cost 0.6 s for 375k ids
    lengths: Iterable[int] = (
        map(len, values)  # ASCII: an id's bytes are its characters
        if len(data) == len(joined)
        else (len(v.encode("utf-8", "surrogatepass")) for v in values)
    )
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=len(values)), out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _buffers(chunk: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data bytes)`` of an Arrow string or binary array, without copying (``uint64`` offsets for the
    ``large_`` types, ``int32`` otherwise)."""
    import pyarrow as pa

    n = len(chunk)
    buffers = chunk.buffers()
    wide = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    dtype = np.dtype(np.int64 if wide else np.int32)
    offsets = np.frombuffer(buffers[1], dtype=dtype, count=n + 1, offset=chunk.offset * dtype.itemsize)
    raw = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, dtype=np.uint8)
    return (offsets.view(np.uint64) if wide else offsets), raw


def _large_string_chunks(values: Any) -> list[Any]:
    """The chunks of an Arrow (chunked) string array, as ``large_string`` arrays."""
    import pyarrow as pa

    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    return [c if c.type == pa.large_string() else c.cast(pa.large_string()) for c in chunks if len(c)]


def _doc_keys(values: Any) -> tuple[np.ndarray, bool]:
    """``(64-bit key per string, exact)`` for an Arrow (chunked) string array (see the module docstring).

    The id's bytes are read as little-endian 64-bit words straight from the Arrow data buffer (a word at byte offset
    ``s`` is ``words[s // 8] >> 8r | words[s // 8 + 1] << (64 - 8r)`` with ``r = s % 8``), bytes past the id's end
    masked off. An id of at most 8 bytes is its own key; longer ids fold their words with an odd multiplier into a
    fingerprint, so an id's key never depends on the other ids. ``exact`` (equal keys mean equal ids) holds when every
    id has at most 8 bytes and none holds a NUL byte. Work goes chunk by chunk in cache-sized blocks with no
    whole-column temporaries (first-touch page faults on fresh 80 MB arrays cost more than the arithmetic).
    """
    chunks = _large_string_chunks(values)
    key = np.empty(sum(len(c) for c in chunks), dtype=np.uint64)
    exact, at = True, 0
    for chunk in chunks:
        exact &= _chunk_keys(chunk, key[at : at + len(chunk)])
        at += len(chunk)
    return key.view(np.int64), exact


def _chunk_keys(chunk: Any, key: np.ndarray) -> bool:
    """Fill ``key`` with the keys of one ``large_string`` chunk; whether they are exact."""
    u = np.uint64
    ones, mult = u(0xFFFFFFFFFFFFFFFF), u(0x9E3779B97F4A7C15)
    offsets, raw = _buffers(chunk)
    n = len(chunk)
    lengths = offsets[1:] - offsets[:-1]
    longest = int(lengths.max())
    n_words = max(1, -(-longest // 8))
    words = raw[: len(raw) // 8 * 8].view("<u8")
    # rows whose last word load would read past the buffer are done in Python (the last row or two)
    bound = 8 * (len(words) - 1) - 8 * (n_words - 1)
    n_fast = int(np.searchsorted(offsets[:-1], bound, side="left")) if bound > 0 else 0
    for a in range(0, n_fast, _KEY_BLOCK):
        b = min(a + _KEY_BLOCK, n_fast)
        st, ln, k = offsets[a:b], lengths[a:b], key[a:b]
        for w in range(n_words):
            at = st + u(8 * w)
            r = (at & u(7)) << u(3)
            i = at >> u(3)
            word = words[i] >> r
            word |= (words[i + u(1)] << u(1)) << (u(63) - r)
            rem = np.minimum(np.maximum(ln, u(8 * w)) - u(8 * w), u(8))
            word &= ones >> ((u(8) - np.maximum(rem, u(1))) << u(3))
            if w == 0:
                word[rem == 0] = 0  # the empty id
                k[:] = word
            else:  # fold only the words an id has: its key does not depend on the longest id of the column
                np.copyto(k, k * mult + word, where=rem > 0)
    for row in range(n_fast, n):
        data = raw[int(offsets[row]) : int(offsets[row + 1])].tobytes()
        k_row = int.from_bytes(data[:8], "little")
        for w in range(1, -(-len(data) // 8)):
            k_row = (k_row * 0x9E3779B97F4A7C15 + int.from_bytes(data[8 * w : 8 * w + 8], "little")) % (1 << 64)
        key[row] = k_row
    return n_words == 1 and not bool((raw[int(offsets[0]) : int(offsets[-1])] == 0).any())


# ASCII bytes Python's ``str.split()`` splits on; any non-ASCII byte sends the column to the regex check.
_ASCII_SPACE = np.zeros(256, dtype=bool)
_ASCII_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


def _single_tokens(values: Any) -> bool:
    """Whether every value of an Arrow (chunked) string or binary array is non-empty, valid UTF-8 and free of
    whitespace, so the exact readers' ``str.split()`` would see the same field. Checked on the bytes; the regex only
    for chunks with non-ASCII bytes."""
    import pyarrow as pa

    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        if not len(chunk):
            continue
        offsets, raw = _buffers(chunk)
        if bool(((offsets[1:] - offsets[:-1]) == 0).any()):
            return False
        data = raw[int(offsets[0]) : int(offsets[-1])]
        if not len(data) or (int(data.min()) > 32 and int(data.max()) < 0x80):
            continue  # printable ASCII only: two SIMD reductions, no temporaries
        if bool(_ASCII_SPACE[data].any()):
            return False
        if not bool((data < 0x80).all()):
            try:
                text = chunk.cast(pa.large_string())  # validates UTF-8 (a binary column)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                return False
            if not _all_single_tokens(text):
                return False
    return True


def _stray_carriage_return(path: Path) -> bool:
    """Whether the file has a ``\r`` not followed by ``\n``: pyarrow ends a line there, the exact readers (which
    split lines on ``\n`` only) see whitespace inside one line. A ``memchr`` over the file; CRLF files pay one
    vectorized check."""
    import mmap

    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm.find(b"\r") < 0:
            return False
        data = np.frombuffer(mm, dtype=np.uint8)
        try:
            cr = np.flatnonzero(data == 13)
            stray = bool(len(cr)) and (int(cr[-1]) == len(data) - 1 or not bool((data[cr + 1] == 10).all()))
        finally:
            del data
        return stray


def _padded(
    values: np.ndarray, start: np.ndarray, count: np.ndarray, fill: Any, *, bounded: bool = False
) -> np.ndarray | None:
    """``(len(start), max count)`` matrix of each segment's values, or ``None`` when padding would waste memory
    (unless the caller ``bounded`` the matrix's size itself) or there is nothing to lay out."""
    n = len(count)
    depth = int(count.max()) if n else 0
    total = int(count.sum())
    if n == 0 or depth == 0 or (n * depth > 4 * total + 4096 and not bounded):
        return None
    if total == n * depth and len(values) == total and np.array_equal(start, np.arange(n) * depth):
        return values.reshape(n, depth)
    mat = np.full((n, depth), fill, dtype=values.dtype)
    row = np.repeat(np.arange(n), count)
    col = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    mat[row, col] = values[np.repeat(start, count) + col]
    return mat


def _read_csv(
    path: Path, names: list[str], types: Mapping[str, Any], skip_rows: int = 0, delimiters: str = " \t"
) -> Any:
    """The columns ``types`` of a headerless delimited file as a pyarrow Table, or ``None`` when it does not parse."""
    import pyarrow as pa
    from pyarrow import csv

    for delim in delimiters:
        try:
            return csv.read_csv(
                path,
                read_options=csv.ReadOptions(column_names=names, skip_rows=skip_rows, block_size=_CSV_BLOCK),
                parse_options=csv.ParseOptions(
                    delimiter=delim, quote_char=False, double_quote=False, escape_char=False
                ),
                convert_options=csv.ConvertOptions(
                    include_columns=list(types),
                    column_types=dict(types),
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                    null_values=[],
                ),
                # the C library's allocator: measured ~1.1 s vs ~1.5 s (4 fresh runs each) for a 10M-line run with pyarrow's
                # default mimalloc pool, whose fresh pages fault in more slowly here
                memory_pool=pa.system_memory_pool(),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, UnicodeDecodeError):
            continue
    return None


def _all_single_tokens(values: Any) -> bool:
    """Whether every value is non-empty and free of whitespace (so ``str.split()`` would see the same field)."""
    import pyarrow.compute as pc

    return not pc.any(pc.match_substring_regex(values, _NOT_ONE_TOKEN)).as_py()


def _has_bom(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(3) == b"\xef\xbb\xbf"


def _query_segments(q: Any) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """``(query ids, first row, row count)`` when each query's rows are contiguous (the usual run file), else
    ``None``. Boundaries are where a row's query id differs from the previous row's: each chunk's strings compared
    with their neighbours by Arrow (no key per row), the first row of a chunk with the last row of the one before."""
    import pyarrow.compute as pc

    firsts: list[np.ndarray] = []
    query_ids: list[str] = []
    at, last = 0, None
    for chunk in q.chunks:  # per-chunk work: a take or a slice across hundreds of chunks is much slower
        n = len(chunk)
        if n == 0:
            continue
        change = _numpy(pc.not_equal(chunk.slice(1), chunk.slice(0, n - 1)), bool)
        local = np.flatnonzero(change) + 1
        first = chunk[0].as_py()
        if first != last:
            local = np.concatenate(([0], local))
        local = local.astype(np.int64)
        firsts.append(local + at)
        query_ids += chunk.take(_int64_array(local)).to_pylist()
        last = chunk[n - 1].as_py()
        at += n
    if len(set(query_ids)) != len(query_ids):
        return None
    starts = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    return query_ids, starts, np.diff(np.append(starts, at))


def _duplicate_suspects(doc_key: np.ndarray, start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Queries that may hold a duplicate (query, doc) pair: equal 32-bit hashes of their keys (sorting 32-bit integers
    is faster than 64-bit). The caller confirms each on the 64-bit keys and, unless exact, on the strings.

    The hash is multiplicative (the top half of key × an odd constant): folding the key's halves with XOR made
    thousands of suspects among short ids such as ``d123456``. Queries go in blocks of about ``_CHUNK_CELLS`` cells,
    so no temporary grows with the run (fresh memory faults in slowly on the machines this was measured on).
    """
    n_q = len(count)
    depth = int(count.max()) if n_q else 0
    total = int(count.sum())
    if n_q == 0 or depth == 0:
        return np.zeros(0, dtype=np.int64)
    if n_q * depth > 4 * total + 4096:  # very uneven depths: one sort of (query, key) pairs
        pairs = np.stack([np.repeat(np.arange(n_q, dtype=np.int64), count), doc_key], axis=1)  # rows are grouped
        return np.arange(n_q) if len(np.unique(pairs, axis=0)) != len(pairs) else np.zeros(0, dtype=np.int64)
    mult, top = np.uint64(0x9E3779B97F4A7C15), np.uint32(np.iinfo(np.uint32).max)
    step = max(1, _CHUNK_CELLS // depth)
    found = []
    for a in range(0, n_q, step):
        b = min(n_q, a + step)
        lo, hi = int(start[a]), int(start[b - 1] + count[b - 1])
        hashes = ((doc_key[lo:hi].view(np.uint64) * mult) >> np.uint64(32)).astype(np.uint32)
        block = _padded(hashes, start[a:b] - lo, count[a:b], top, bounded=True)  # padding sorts last
        assert block is not None  # b > a rows, each of at least one document
        block = np.sort(block, axis=1)
        same = block[:, 1:] == block[:, :-1]
        same &= np.arange(block.shape[1] - 1)[None, :] < (count[a:b] - 1)[:, None]
        found.append(np.flatnonzero(same.any(axis=1)) + a)
    return np.concatenate(found)


def read_run_arrays(path: str | Path) -> RunArrays | None:
    """Read a TREC run (``qid Q0 docid rank score tag``) into :class:`RunArrays`.

    Returns ``None`` — the caller then uses :func:`deltap.qrels.read_trec_run`, which accepts the file or names the
    bad line — without pyarrow, for an empty file, and for anything not clean: separators other than single spaces
    or tabs, a wrong column count, a non-numeric or non-finite score, an empty field, a duplicate (query, doc) pair.
    """
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0 or _has_bom(path) or _stray_carriage_return(path):
        return None
    # ids stay one string buffer; the columns deltap only validates are read as bytes (no UTF-8 validation, no
    # dictionary: measured 1.0 vs 1.6-2.1 CPU seconds for a 10M-line run with dictionary-encoded columns) and
    # checked on those bytes
    text, raw = pa.large_string(), pa.binary()
    columns = {"q": text, "iter": raw, "d": text, "rank": raw, "s": pa.float64(), "tag": raw}
    table = _read_csv(path, list(columns), columns)
    if table is None or table.num_rows == 0:
        return None
    scores = _numpy(table.column("s"), np.float64)
    if not np.isfinite(scores).all():
        return None
    if not all(_single_tokens(table.column(c)) for c in columns if c != "s"):
        return None
    q, docs = table.column("q"), table.column("d")
    segments = _query_segments(q)
    if segments is not None:  # grouped by query (the usual case): no reordering
        query_ids, start, count = segments
    else:
        encoded = pc.dictionary_encode(q.combine_chunks())
        query_ids = encoded.dictionary.to_pylist()
        q_code = _numpy(encoded.indices, np.int32).astype(np.int64)
        count = np.bincount(q_code, minlength=len(query_ids)).astype(np.int64)
        order = np.argsort(q_code, kind="stable")
        scores = scores[order]
        docs = docs.take(_int64_array(order))
        start = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64)
    doc_key, exact = _doc_keys(docs)

    suspects = _duplicate_suspects(doc_key, start, count)
    run = RunArrays(query_ids, docs, doc_key, exact, scores, start, count, str(path))
    for qi in suspects.tolist():
        a, b = int(start[qi]), int(start[qi] + count[qi])
        if len(np.unique(doc_key[a:b])) == b - a:
            continue  # only the 32-bit folds collided
        if exact:
            return None
        seg = run.names_of(np.arange(a, b))
        if len(set(seg)) != len(seg):
            return None  # a real duplicate pair: the exact reader names the line
    return run


def read_qrels_fast(path: str | Path) -> dict[str, dict[str, int]] | None:
    """Read TREC qrels (``qid iter docid grade``) or a BEIR qrels TSV with pyarrow's CSV reader.

    Returns ``None`` for other formats, without pyarrow, and for anything the exact readers of :mod:`deltap.qrels`
    might judge differently (other whitespace, a wrong column count, a non-integer or negative grade, a duplicate
    pair): the caller then reads the file with those readers, which raise their usual error naming the line.
    """
    from deltap.judgements import detect_qrels_format

    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0 or _has_bom(path) or _stray_carriage_return(path):
        return None
    fmt = detect_qrels_format(path)
    if fmt not in ("trec", "beir"):
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is optional
        return None
    types = {"q": pa.large_string(), "d": pa.large_string(), "g": pa.int64()}
    if fmt == "beir":
        with path.open("rb") as fh:  # bytes: a line that is not UTF-8 is the exact reader's to report
            first = fh.readline().split(b"\t")[0].strip().lower().decode("utf-8", "replace")
        header = 1 if first in {"query-id", "query_id", "qid"} else 0
        table = _read_csv(path, ["q", "d", "g"], types, skip_rows=header, delimiters="\t")
    else:
        table = _read_csv(path, ["q", "i", "d", "g"], {**types, "i": pa.large_string()})
        if table is not None and not all(_single_tokens(table.column(c)) for c in ("q", "i", "d")):
            return None
    if table is None:
        return None
    from deltap.qrels import MAX_GRADE

    grades = _numpy(table.column("g"), np.int64)
    if (grades < 0).any() or (grades > MAX_GRADE).any() or not len(grades):
        return None
    if fmt == "beir":  # the BEIR reader strips each field: a field with surrounding whitespace goes to it
        pattern = r"^$|^\s|\s$"
        if any(pc.any(pc.match_substring_regex(table.column(c), pattern)).as_py() for c in ("q", "d")):
            return None
    # one dict per run of equal query ids (C-level dict(zip)); a query seen again, or a duplicate pair, goes to the
    # exact reader, which merges or names the line
    segments = _query_segments(table.column("q"))
    if segments is None:
        return None
    d_list = table.column("d").to_pylist()
    g_list = grades.tolist()
    query_ids, start, count = segments
    bounds = list(map(slice, start.tolist(), (start + count).tolist()))
    rows = list(map(dict, map(zip, map(d_list.__getitem__, bounds), map(g_list.__getitem__, bounds))))
    if sum(map(len, rows)) != len(d_list):
        return None
    return dict(zip(query_ids, rows, strict=True))


def rank_from_arrays(
    qrels: Mapping[str, Mapping[str, int]],
    run: RunArrays,
    query_ids: Sequence[str],
    *,
    coalitions: Mapping[str, Sequence[Collection[str]]] | None = None,
    gains: SignedGains | None = None,
    judged: bool = False,
    columns: QrelsColumns | None = None,
) -> Ranking:
    """The :class:`~deltap.evaluation.ranking.Ranking` of ``query_ids`` from :class:`RunArrays` (see
    :func:`deltap.evaluation.ranking.rank_from_dicts` for the rules; results are identical)."""
    n = len(query_ids)
    position = {q: i for i, q in enumerate(run.query_ids)}
    run_pos = np.fromiter(map(position.get, query_ids, repeat(-1)), dtype=np.int64, count=n)
    present = run_pos >= 0
    lens = np.zeros(n, dtype=np.int64)
    lens[present] = run.count[run_pos[present]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    src = np.zeros(n, dtype=np.int64)
    src[present] = run.start[run_pos[present]]
    shifts = (src - offsets[:-1])[lens > 0]
    total = int(offsets[-1])
    if len(shifts) == 0 or bool((shifts == shifts[0]).all()):  # the run's rows in this order already: views
        base = int(shifts[0]) if len(shifts) else 0
        scores, keys = run.scores[base : base + total], run.doc_key[base : base + total]

        def row_of(i: Any) -> np.ndarray:
            return np.asarray(i, dtype=np.int64) + base

    else:
        rows = np.repeat(src - offsets[:-1], lens) + np.arange(total, dtype=np.int64)
        scores, keys = run.scores[rows], run.doc_key[rows]

        def row_of(i: Any) -> np.ndarray:
            return rows[i]

    key_mat = _padded(keys, offsets[:-1], lens, _PAD)

    def lookup(q_idx: QueryIndex, docs: Sequence[str]) -> np.ndarray:
        out = np.full(len(docs), math.nan)
        if not len(docs):
            return out
        q_arr = np.asarray(q_idx, dtype=np.int64)
        target, target_exact = _doc_keys(_string_array(docs))
        pos = np.full(len(docs), -1, dtype=np.int64)
        if key_mat is not None:
            step = max(1, _CHUNK_CELLS // max(1, key_mat.shape[1]))
            for a in range(0, len(docs), step):
                eq = key_mat[q_arr[a : a + step]] == target[a : a + step, None]
                pos[a : a + step] = np.where(eq.any(axis=1), eq.argmax(axis=1), -1)
        else:  # very uneven depths: scan each target's own segment
            for i, (q, key) in enumerate(zip(q_arr.tolist(), target.tolist(), strict=True)):
                match = np.flatnonzero(keys[offsets[q] : offsets[q + 1]] == key)
                pos[i] = match[0] if len(match) else -1
        found = np.flatnonzero(pos >= 0)
        if not (run.exact_keys and target_exact) and len(found):  # confirm matches on the strings (fingerprints)
            import pyarrow.compute as pc

            matched = _take(run.docs, row_of(offsets[q_arr[found]] + pos[found]))
            wrong = found[~_numpy(pc.equal(matched, _string_array([docs[i] for i in found.tolist()])), bool)]
            for i in wrong.tolist():
                q = int(q_arr[i])
                seg = run.names_of(row_of(np.arange(offsets[q], offsets[q + 1])))
                pos[i] = seg.index(docs[i]) if docs[i] in seg else -1
        hit = pos >= 0
        out[hit] = scores[offsets[q_arr[hit]] + pos[hit]]
        return out

    t_q, t_doc, t_grade = judged_pairs(qrels, query_ids, columns=columns)

    def names(positions: np.ndarray) -> list[str]:
        return run.names_of(row_of(positions))

    return build_ranking(
        query_ids,
        offsets,
        scores,
        t_q,
        t_doc,
        t_grade,
        lookup(t_q, t_doc),
        names,
        lookup,
        coalitions,
        gains=gains,
        judged=qrels if judged else None,
        columns=columns,
    )
