"""Reading and writing files the way every deltap reader and writer must.

* :func:`read_text` / :func:`iter_lines`: UTF-8 only; bytes that are not UTF-8 are a
  :class:`~deltap.errors.FormatError` naming the file, the line and the byte, never a ``UnicodeDecodeError``.
* :func:`json_loads`: JSON whose objects may not repeat a key (``json.loads`` silently keeps the last one).
* :func:`yaml_loads`: YAML read safely by libyaml's loader (~20× PyYAML's pure-Python one); a syntax error is a
  one-line :class:`~deltap.errors.FormatError` naming the file and the line, in the pure-Python parser's words.
* :func:`atomic_write` / :func:`write_text_atomic`: the target is replaced in one ``rename`` after the new content
  is complete and flushed to disk, so a reader never sees half a file, a full disk or a kill leaves the old file
  whole, and no temporary file is left behind on failure. ``OSError`` (``ENOSPC``...) becomes a one-line
  :class:`~deltap.errors.DeltapError` naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from deltap.errors import DeltapError, FormatError, json_error_detail

__all__ = [
    "atomic_write",
    "iter_jsonl",
    "iter_lines",
    "json_loads",
    "read_text",
    "record_id",
    "write_text_atomic",
    "yaml_loads",
]


def _decode(raw: bytes, path: str | Path, line: int | None, offset_line: int = 0) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if line is None:
            line = raw.count(b"\n", 0, exc.start) + 1
            col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        else:
            col = exc.start + 1
        raise FormatError(
            path, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {col}); save the file as UTF-8", line
        ) from None


def read_text(path: str | Path) -> str:
    """The file's text, decoded as UTF-8 (a byte-order mark is kept, as ``open(encoding="utf-8")`` does).

    Raises:
        FormatError: the file is not valid UTF-8 (file, line and byte named).
        OSError: the file cannot be read.
    """
    return _decode(Path(path).read_bytes(), path, None)


def yaml_loads(text: str, path: str | Path, *, what: str = "invalid YAML", first_line: int = 1) -> Any:
    """``text`` parsed as YAML with only plain types (``yaml.safe_load``'s result).

    libyaml's ``CSafeLoader`` reads it when PyYAML has it (every wheel does): the pure-Python loader took ~1.7 s per
    read of a 60-question dataset. On a syntax error the text is parsed again by the pure-Python loader, whose
    message says what it expected.

    Args:
        text: the YAML text.
        path: the file it came from, named in the error.
        what: the error's first words ("invalid YAML front matter" for a block inside a file).
        first_line: the file's line number of ``text``'s first line.

    Raises:
        FormatError: ``<path>:<line>: <what>: <the parser's problem>`` (first line of its message).
    """
    import yaml

    try:
        try:
            return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # A parser error has a one-line ``problem``; a reader error (a control character) only its multi-line str,
        # whose first line says what is wrong (the rest names "<unicode string>", not the file).
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FormatError(path, f"{what}: {problem}", mark.line + first_line if mark is not None else None) from None


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line with its end-of-line)`` for every line, decoded as UTF-8 one line at a time.

    Raises:
        FormatError: a line is not valid UTF-8.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            yield lineno, _decode(raw, path, lineno)


def iter_jsonl(path: str | Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSON Lines file (one object per line, keys unique).

    Args:
        path: The file.
        what: What a line holds, for the error message (``"one corpus record per line"``).

    Raises:
        FormatError: bytes that are not UTF-8, invalid JSON, a repeated key, or a line that is not an object.
    """
    for lineno, raw in iter_lines(path):
        line = raw.strip()
        if not line:
            continue
        obj = json_loads(line, path, lineno, f"expected {what}")
        if not isinstance(obj, dict):
            raise FormatError(path, f"expected a JSON object, got {type(obj).__name__}", lineno)
        yield lineno, obj


def record_id(obj: dict[str, Any], keys: tuple[str, ...], path: str | Path, lineno: int) -> str:
    """The record's id: the first of ``keys`` present (an integer id becomes its decimal text).

    Raises:
        FormatError: the id is missing, empty or not a string (named by the first key).
    """
    value = next((obj[k] for k in keys if k in obj), None)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise FormatError(path, f'missing or empty "{keys[0]}" (a string)', lineno)
    return value


class DuplicateKeyError(ValueError):
    """A JSON object repeats a key."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"duplicate key {key!r}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKeyError(k)
        out[k] = v
    return out


def json_loads(text: str, path: str | Path, line: int | None = None, what: str = "") -> Any:
    """``json.loads`` that refuses a repeated key in any object.

    Raises:
        FormatError: invalid JSON or a duplicate key (file, line and key named).
    """
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except DuplicateKeyError as exc:
        raise FormatError(path, f"duplicate key {exc.key!r} in a JSON object: each key may appear once", line) from None
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise FormatError(
            path, f"invalid JSON ({json_error_detail(exc)}){'; ' + what if what else ''}", where
        ) from None


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path`` in one rename.

    On any failure the temporary file is removed and ``path`` is untouched; an ``OSError`` becomes a
    :class:`DeltapError` naming ``path``.
    """
    path = Path(path)
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL on a fresh random name; mode 0o666 so the umask gives the file the permissions a plain write would
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        kwargs: dict[str, Any] = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise DeltapError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    with atomic_write(path) as fh:
        fh.write(text)
    return Path(path)
