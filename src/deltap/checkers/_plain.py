"""Plain values across the process boundary between the tests and the candidate (stdlib only, no deltap import).

Used by the pytest checker's separate-process mode: the candidate module runs in its own sandbox and the tests call
it through a proxy module; arguments and results cross a pipe in this encoding. The test side decodes what the
candidate sends, so decoding is the attack surface: it builds only exact built-in values (``None``, ``bool``,
``int``, ``float``, ``complex``, ``str``, ``bytes``, ``bytearray``, ``list``, ``tuple``, ``dict``, ``set``,
``frozenset``; ``collections.Counter``/``OrderedDict``/``defaultdict`` of a built-in factory; numpy scalars and arrays
of numeric dtypes, rebuilt with their own dtype when numpy is importable, refused otherwise) — never an object whose
``__eq__``, ``__bool__`` or ``__repr__`` the candidate wrote — with a bound on size and nesting, and raises
``ValueError`` for anything else. Every value keeps its type: a numpy ``bool_`` stays a ``bool_`` (``is True`` is
false for it on both sides). Anything else crosses only through a caller's hook, as a reference (a proxy of an
object, a callback, an exception instance: see ``_remote_module.py``). Pickle is never used (unpickling runs code).

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


_DEFAULT_FACTORIES = {
    "int": int,
    "float": float,
    "str": str,
    "list": list,
    "dict": dict,
    "set": set,
    "tuple": tuple,
    "frozenset": frozenset,
    "bool": bool,
    "bytes": bytes,
}


def _numpy() -> Any:
    """numpy when this process can import it (it is never imported just to find out that nothing needs it)."""
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        try:
            import numpy as np
        except ImportError:
            return None
    return np


def _enc_numpy(obj: Any) -> Any:
    np = _numpy()
    if np is None or not isinstance(obj, np.generic | np.ndarray):
        return None
    if type(obj) is not np.ndarray and not isinstance(obj, np.generic):
        return None  # an ndarray subclass (a matrix, a masked array): not plain
    if obj.dtype.kind not in "biufc" or obj.dtype.hasobject or obj.dtype.fields is not None:
        raise Unsupported(f"a numpy value of dtype {obj.dtype} is not plain data")
    array = np.ascontiguousarray(obj)
    shape = None if isinstance(obj, np.generic) else list(array.shape)
    return ["N", obj.dtype.str, shape, array.tobytes().hex()]


def _dec_numpy(dtype: Any, shape: Any, data: Any) -> Any:
    if type(dtype) is not str or type(data) is not str or not (shape is None or type(shape) is list):
        raise ValueError("malformed numpy value")
    if shape is not None and not all(type(n) is int and 0 <= n for n in shape):
        raise ValueError("malformed numpy shape")
    np = _numpy()
    if np is None:
        raise ValueError("a numpy value, and numpy cannot be imported in this process")
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise ValueError("malformed numpy dtype") from None
    if dt.kind not in "biufc" or dt.hasobject or dt.fields is not None or dt.str != dtype:
        raise ValueError(f"numpy dtype {dtype!r} is not plain data")
    raw = bytes.fromhex(data)
    count = 1
    for n in shape or ():
        count *= n
    if len(raw) != count * dt.itemsize:
        raise ValueError("numpy data of the wrong size")
    flat = np.frombuffer(raw, dtype=dt)
    if shape is None:
        if count != 1:
            raise ValueError("a numpy scalar of the wrong size")
        return flat[0]
    return flat.reshape(shape).copy()


def _enc(obj: Any, depth: int, export: Any) -> Any:
    if depth > MAX_DEPTH:
        raise Unsupported("nested too deeply (or a cycle)")
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
        return [tag, [_enc(x, depth + 1, export) for x in obj]]
    if t is dict:
        return ["d", _pairs(obj, depth, export)]
    if t.__module__ == "collections" and t.__name__ in ("Counter", "OrderedDict", "defaultdict"):
        pairs = _pairs(obj, depth, export)
        if t.__name__ == "Counter":
            return ["C", pairs]
        if t.__name__ == "OrderedDict":
            return ["O", pairs]
        factory = obj.default_factory
        name = getattr(factory, "__name__", None)
        if factory is not None and _DEFAULT_FACTORIES.get(str(name)) is not factory:
            raise Unsupported("a defaultdict whose default_factory is not a built-in type is not plain data")
        return ["D", name, pairs]
    if t.__module__ == "numpy":
        node = _enc_numpy(obj)
        if node is not None:
            return node
    if export is not None:
        return export(obj)
    raise Unsupported(f"a {t.__module__}.{t.__qualname__} is not plain data")


def _pairs(obj: Any, depth: int, export: Any) -> list[Any]:
    return [[_enc(k, depth + 1, export), _enc(v, depth + 1, export)] for k, v in obj.items()]


def encode(obj: Any, export: Any = None) -> Any:
    """The JSON-ready form of ``obj``; raises :class:`Unsupported` for anything but plain values: exact built-ins,
    ``Counter``/``OrderedDict``/``defaultdict`` (of a built-in factory) and numpy scalars and arrays of numeric
    dtypes, each kept as its own type. ``export(obj)``, when given, encodes anything else (a proxy reference) or
    raises :class:`Unsupported`."""
    try:
        return _enc(obj, 0, export)
    except RecursionError:
        raise Unsupported("nested too deeply") from None


def _dec(node: Any, depth: int, hook: Any) -> Any:
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
            items = [_dec(x, depth + 1, hook) for x in a]
            try:
                return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
            except TypeError:
                raise ValueError("an unhashable member of a set") from None
        if tag in ("d", "C", "O") and type(a) is list:
            import collections

            made = {"d": dict, "C": collections.Counter, "O": collections.OrderedDict}[tag]()
            return _fill(made, a, depth, hook)
    if tag == "D" and len(args) == 2 and (args[0] is None or args[0] in _DEFAULT_FACTORIES) and type(args[1]) is list:
        import collections

        factory = None if args[0] is None else _DEFAULT_FACTORIES[args[0]]
        return _fill(collections.defaultdict(factory), args[1], depth, hook)
    if tag == "c" and len(args) == 2 and all(type(a) is str for a in args):
        return complex(float.fromhex(args[0]), float.fromhex(args[1]))
    if tag == "N" and len(args) == 3:
        return _dec_numpy(*args)
    if hook is not None and tag in ("P", "R", "X"):
        return hook(node)
    raise ValueError(f"malformed value (tag {tag[:8]!r})")


def _fill(out: Any, pairs: list[Any], depth: int, hook: Any) -> Any:
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2:
            raise ValueError("not a key/value pair")
        try:
            out[_dec(pair[0], depth + 1, hook)] = _dec(pair[1], depth + 1, hook)
        except TypeError:
            raise ValueError("an unhashable dict key") from None
    return out


def decode(node: Any, hook: Any = None) -> Any:
    """Rebuild a value from :func:`encode`'s form; ``ValueError`` for anything malformed. ``hook(node)`` rebuilds
    the proxy tags (``P`` an object of the other side, ``R`` a callable of this side, ``X`` an exception instance)."""
    try:
        return _dec(node, 0, hook)
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
