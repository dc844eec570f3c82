"""Plain values across the process boundary between the tests and the candidate (stdlib only, no deltap import).

Used by the pytest checker's separate-process mode: the candidate module runs in its own sandbox and the tests call
it through a proxy module; arguments and results cross a pipe in this encoding. The test side decodes what the
candidate sends, so decoding is the attack surface: it builds only exact built-in values (``None``, ``bool``,
``int``, ``float``, ``complex``, ``str``, ``bytes``, ``bytearray``, ``list``, ``tuple``, ``dict``, ``set``,
``frozenset``) — never an object whose ``__eq__``, ``__bool__`` or ``__repr__`` the candidate wrote — with a bound on
size and nesting, and raises ``ValueError`` for anything else. Pickle is never used (unpickling runs code).

Encoding: JSON of ``[tag, payload]`` pairs; ints as decimal strings and floats as ``float.hex`` (exact, NaN and
infinities included). Copied beside the proxy and the server as ``deltap_plain.py``.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_FRAME", "Unsupported", "decode", "dumps", "encode", "loads", "recv", "send"]

MAX_DEPTH = 200
MAX_FRAME = 64 * 1024**2


class Unsupported(TypeError):
    """A value that is not plain data (an object, a generator, a subclass of a built-in type, a cycle)."""


def _same_equality(obj: Any) -> Any:
    """For the candidate's side: a built-in value that compares with built-ins exactly as ``obj`` does, for the
    few non-plain types a right answer plausibly returns where the reference returns a plain value (a numpy
    scalar, a ``Counter``/``defaultdict``, an ``IntEnum``/``StrEnum`` member); ``obj`` itself for anything else.
    Deliberately not: ``OrderedDict`` (order-sensitive against another ``OrderedDict``), plain ``Enum`` members
    (unequal to their value), numpy arrays (their ``==`` is elementwise), iterators."""
    import collections
    import enum

    t = type(obj)
    if t is collections.Counter or t is collections.defaultdict:
        return dict(obj)
    if isinstance(obj, enum.Enum) and isinstance(obj, int | str) and type(obj.value) in (int, str):
        return obj.value
    if t.__module__ == "numpy" and getattr(obj, "ndim", None) == 0 and hasattr(obj, "item"):
        value = obj.item()
        if type(value) in (bool, int, float, complex):
            return value
    return obj


def _enc(obj: Any, depth: int, lenient: bool = False) -> Any:
    if depth > MAX_DEPTH:
        raise Unsupported("nested too deeply (or a cycle)")
    if lenient:
        obj = _same_equality(obj)
    t = type(obj)
    if obj is None:
        return ["n"]
    if t is bool:
        return ["b", obj]
    if t is int:
        return ["i", str(obj)]
    if t is float:
        return ["f", obj.hex()]
    if t is complex:
        return ["c", obj.real.hex(), obj.imag.hex()]
    if t is str:
        return ["s", obj]
    if t is bytes:
        return ["y", obj.hex()]
    if t is bytearray:
        return ["a", obj.hex()]
    tag = "l" if t is list else "t" if t is tuple else "S" if t is set else "F" if t is frozenset else ""
    if tag:
        return [tag, [_enc(x, depth + 1, lenient) for x in obj]]
    if t is dict:
        return ["d", [[_enc(k, depth + 1, lenient), _enc(v, depth + 1, lenient)] for k, v in obj.items()]]
    raise Unsupported(f"a {t.__module__}.{t.__qualname__} is not plain data")


def encode(obj: Any, lenient: bool = False) -> Any:
    """The JSON-ready form of ``obj``; raises :class:`Unsupported` for anything but exact built-in plain values
    (``lenient``: after :func:`_same_equality`, for what the candidate's side sends)."""
    try:
        return _enc(obj, 0, lenient)
    except RecursionError:
        raise Unsupported("nested too deeply") from None


def _dec(node: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if type(node) is not list or not node or type(node[0]) is not str:
        raise ValueError("not a tagged value")
    tag, args = node[0], node[1:]
    if tag == "n" and not args:
        return None
    if len(args) == 1:
        (a,) = args
        if tag == "b" and type(a) is bool:
            return a
        if tag == "i" and type(a) is str:
            return int(a)  # ValueError beyond sys.get_int_max_str_digits()
        if tag == "f" and type(a) is str:
            return float.fromhex(a)
        if tag == "s" and type(a) is str:
            return a
        if tag == "y" and type(a) is str:
            return bytes.fromhex(a)
        if tag == "a" and type(a) is str:
            return bytearray.fromhex(a)
        if tag in ("l", "t", "S", "F") and type(a) is list:
            items = [_dec(x, depth + 1) for x in a]
            try:
                return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
            except TypeError:
                raise ValueError("an unhashable member of a set") from None
        if tag == "d" and type(a) is list:
            out = {}
            for pair in a:
                if type(pair) is not list or len(pair) != 2:
                    raise ValueError("not a key/value pair")
                try:
                    out[_dec(pair[0], depth + 1)] = _dec(pair[1], depth + 1)
                except TypeError:
                    raise ValueError("an unhashable dict key") from None
            return out
    if tag == "c" and len(args) == 2 and all(type(a) is str for a in args):
        return complex(float.fromhex(args[0]), float.fromhex(args[1]))
    raise ValueError(f"malformed value (tag {tag[:8]!r})")


def decode(node: Any) -> Any:
    """Rebuild a value from :func:`encode`'s form; ``ValueError`` for anything malformed."""
    try:
        return _dec(node, 0)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def dumps(message: Any) -> bytes:
    """One frame's payload (compact JSON, ASCII: lone surrogates travel escaped)."""
    return json.dumps(message, separators=(",", ":")).encode("ascii")


def loads(payload: bytes) -> Any:
    """Parse one frame's payload; ``ValueError`` for anything that is not JSON within the limits."""
    if len(payload) > MAX_FRAME:
        raise ValueError("frame too large")
    try:
        return json.loads(payload)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ValueError(str(exc)) from None


def send(fd: int, message: Any, write: Any = None) -> None:
    """Write one frame (4-byte big-endian length, then :func:`dumps`) to ``fd``, all of it."""
    payload = dumps(message)
    data = len(payload).to_bytes(4, "big") + payload
    writer = write or _os_write
    while data:
        data = data[writer(fd, data) :]


def recv(fd: int, read: Any = None) -> Any:
    """Read one frame from ``fd``: the parsed message, or ``None`` at end of file. ``ValueError`` for a malformed
    or oversized frame (the length is checked before anything is read into memory)."""
    reader = read or _os_read
    head = _read_exactly(fd, 4, reader)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    payload = _read_exactly(fd, size, reader)
    if payload is None:
        raise ValueError("truncated frame")
    return loads(payload)


def _read_exactly(fd: int, n: int, reader: Any) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = reader(fd, min(n - got, 1 << 20))
        if not chunk:
            if got:
                raise ValueError("truncated frame")
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# Bound at import (before any candidate code in the process): a later patch of os.read/os.write changes nothing here.
_os_write = os.write
_os_read = os.read
