"""The candidate's side of the pytest checker's separate-process mode (stdlib only, no deltap import).

Runs in its own sandbox as ``python -B deltap_remote_server.py MODULE``: imports the candidate module and answers the
test process's requests over two pipes (see ``_remote_module.py``, the test side, and ``_plain.py``, the encoding).
Nothing here is trusted: it shares its process with the candidate, which can rewrite it. It exists to make an honest
candidate work; the test side trusts only the plain values it decodes.

What is not plain data stays here and crosses as a *reference*: an object, a class or a function of the candidate is
kept in a handle table and sent as ``["P", handle, kind, ...]`` (the test side builds a proxy whose uses come back as
requests); a callable the tests passed in arrives as ``["R", id]`` and is called by sending a ``callback`` message
back and serving the test side's requests until its answer comes; an exception instance the candidate *returns* is
sent as ``["X", description]`` (a value, not a raise).

Requests (test side → here): ``["import"]``; ``["call", name, args, kwargs]`` (a module-level function by name);
``["pcall", handle, args, kwargs]``; ``["getattr", handle, name]``; ``["setattr", handle, name, value]``;
``["op", handle, dunder, args]`` (``len``, ``repr``, ``iter``, ``next``, indexing, ordering, ...);
``["state", handle]`` (the plain fields an equality test compares); ``["release", handle]``. Answers:
``["return", value, mutations, stdout, stderr]``, ``["raise", description, mutations, stdout, stderr]``,
``["unsupported", what, stdout, stderr]``, and, while a callback runs, ``["callback", id, args, kwargs]``, answered by
``["cbreturn", value]`` or ``["cbraise", description]``.
"""

from __future__ import annotations

import os

# Tell the checker this process started before importing anything a module of the candidate's name could shadow
# (its directory is on sys.path): only what the interpreter loaded at startup (os, sys) is used up to here.
if __name__ == "__main__":
    _status_fd = int(os.environ.pop("DELTAP_REMOTE_STATUS_FD"))
    os.write(_status_fd, b"S")
    os.close(_status_fd)

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import operator  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

import deltap_plain as plain  # noqa: E402 - copied beside this file in the sandbox

#: Dunder operations the test side may ask of a proxied object (everything else is refused).
_OPS = {
    "__repr__": repr,
    "__str__": str,
    "__len__": len,
    "__bool__": bool,
    "__hash__": hash,
    "__iter__": iter,
    "__next__": next,
    "__contains__": operator.contains,
    "__getitem__": operator.getitem,
    "__setitem__": operator.setitem,
    "__delitem__": operator.delitem,
    "__lt__": operator.lt,
    "__le__": operator.le,
    "__gt__": operator.gt,
    "__ge__": operator.ge,
    "__int__": int,
    "__float__": float,
    "__index__": operator.index,
    "__add__": operator.add,
    "__sub__": operator.sub,
    "__mul__": operator.mul,
    "__enter__": lambda o: o.__enter__(),
    "__exit__": lambda o, *a: o.__exit__(*a),
    "__reversed__": reversed,
    "__abs__": abs,
    "__neg__": operator.neg,
}


def describe_exception(exc: BaseException, export: Any = None) -> dict[str, Any]:
    """The plain description of an exception: its class chain, its arguments (``repr`` when not plain), its text."""
    args = []
    for a in exc.args:
        try:
            args.append(plain.encode(a, export))
        except (plain.Unsupported, ValueError):
            args.append(plain.encode(repr(a)))
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ is the candidate's problem, not the protocol's
        text = type(exc).__name__
    mro = [[c.__module__, c.__qualname__] for c in type(exc).__mro__]
    info: dict[str, Any] = {"mro": mro, "args": args, "text": text}
    token = getattr(exc, "_deltap_callback_error", None)
    if type(token) is int:
        info["callback_error"] = token  # an exception a test's callback raised: the test side re-raises the original
    if isinstance(exc, SystemExit):
        try:
            info["code"] = plain.encode(exc.code)
        except plain.Unsupported:
            info["code"] = plain.encode(repr(exc.code))
    return info


class _CallbackErrorBase(Exception):
    pass


class _CallbackBaseErrorBase(BaseException):
    pass


class _Callback:
    """A callable the tests passed in: calling it asks the test process to call the original."""

    __slots__ = ("_id", "_server")

    def __init__(self, server: Server, cb_id: int) -> None:
        self._server = server
        self._id = cb_id

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._server.call_back(self._id, args, kwargs)

    def __repr__(self) -> str:
        return f"<callback {self._id} from the tests>"


class Server:
    """Answers the test process's requests about one candidate module."""

    def __init__(self, module_name: str, req_fd: int, resp_fd: int) -> None:
        self.module_name = module_name
        self.req = req_fd
        self.resp = resp_fd
        self.module: Any = None
        self.handles: dict[int, Any] = {}
        self.by_id: dict[int, int] = {}
        self.callbacks: dict[int, _Callback] = {}
        self.next_handle = 1
        self.error_classes: dict[tuple[str, str], type[BaseException]] = {}

    # -- references ----------------------------------------------------------------------------------------------

    def handle(self, obj: Any) -> int:
        key = id(obj)
        h = self.by_id.get(key)
        if h is None or self.handles.get(h) is not obj:
            h = self.next_handle
            self.next_handle += 1
            self.handles[h] = obj
            self.by_id[key] = h
        return h

    def export(self, obj: Any) -> Any:
        """How a non-plain value crosses: a reference (the object stays here)."""
        if isinstance(obj, _Callback):
            return ["R", obj._id]
        if isinstance(obj, BaseException):
            return ["X", describe_exception(obj, self.export)]
        if isinstance(obj, type(sys)):
            raise plain.Unsupported(f"a module ({obj.__name__}) is not plain data")
        if isinstance(obj, type):
            return ["P", self.handle(obj), "class", self.describe_class(obj)]
        if _is_function(obj):
            return ["P", self.handle(obj), "function", getattr(obj, "__name__", type(obj).__name__)]
        cls = type(obj)
        return ["P", self.handle(obj), "object", self.handle(cls), self.describe_class(cls)]

    def describe_class(self, cls: type) -> dict[str, Any]:
        bases = [self.handle(b) for b in cls.__bases__ if b is not object and b.__module__ != "builtins"]
        custom_eq = cls.__eq__ is not object.__eq__
        return {
            "name": cls.__name__,
            "handle": self.handle(cls),
            "bases": bases,
            "eq": custom_eq,
            "doc": cls.__doc__ if isinstance(cls.__doc__, str) else None,
        }

    def load(self, node: Any) -> Any:
        """Decode what the test side sent: plain values, references to objects here, callbacks of the tests."""

        def hook(ref: list[Any]) -> Any:
            if ref[0] == "P" and len(ref) >= 2 and type(ref[1]) is int and ref[1] in self.handles:
                return self.handles[ref[1]]
            if ref[0] == "R" and len(ref) == 2 and type(ref[1]) is int:
                cb = self.callbacks.get(ref[1])
                if cb is None:
                    cb = self.callbacks[ref[1]] = _Callback(self, ref[1])
                return cb
            raise ValueError("a reference to nothing")

        return plain.decode(node, hook)

    def dump(self, value: Any) -> Any:
        return plain.encode(value, self.export)

    # -- callbacks -----------------------------------------------------------------------------------------------

    def call_back(self, cb_id: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        plain.send(self.resp, ["callback", cb_id, self.dump(list(args)), self.dump(kwargs)])
        while True:
            message = plain.recv(self.req)
            if message is None:
                raise SystemExit(0)  # the test process ended
            if isinstance(message, list) and len(message) == 2 and message[0] == "cbreturn":
                return self.load(message[1])
            if isinstance(message, list) and len(message) == 2 and message[0] == "cbraise":
                raise self.callback_error(message[1])
            self.serve(message)

    def callback_error(self, info: Any) -> BaseException:
        """An exception standing for the one a test's callback raised (its built-in class, when it has one)."""
        import builtins

        mro = info.get("mro") if isinstance(info, dict) else None
        base: type[BaseException] = _CallbackErrorBase if info.get("exception", True) else _CallbackBaseErrorBase
        for entry in mro if isinstance(mro, list) else []:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == "builtins":
                found = getattr(builtins, str(entry[1]), None)
                if isinstance(found, type) and issubclass(found, Exception):
                    base = found
                    break
        name = str(mro[0][1]) if mro and isinstance(mro[0], list) and len(mro[0]) == 2 else "CallbackError"
        key = (name, base.__name__)
        cls = self.error_classes.get(key)
        if cls is None:
            cls = type(name, (base,), {})
            self.error_classes[key] = cls
        exc = cls(str(info.get("text", "")))
        exc._deltap_callback_error = info.get("token")  # type: ignore[attr-defined]
        return exc

    # -- requests ------------------------------------------------------------------------------------------------

    def invoke(self, action: Any, args: list[Any], kwargs: dict[str, Any], track: bool = True) -> list[Any]:
        """Run ``action`` with the output captured; its answer, with the arguments' state after it when ``track``."""
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                result = action(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - every exception is the candidate's answer
            changed = self.mutations(args, kwargs) if track else []
            return ["raise", describe_exception(exc, self.export), changed, out.getvalue(), err.getvalue()]
        try:
            encoded = self.dump(result)
        except plain.Unsupported as exc:
            return ["unsupported", f"return value ({exc})", out.getvalue(), err.getvalue()]
        return ["return", encoded, self.mutations(args, kwargs) if track else [], out.getvalue(), err.getvalue()]

    def mutations(self, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The state after the call of every argument that holds something mutable (copied back in full)."""
        out = []
        for key, value in [*enumerate(args), *kwargs.items()]:
            if _holds_mutable(value, 0):
                with contextlib.suppress(plain.Unsupported):
                    out.append([key, self.dump(value)])
        return out

    def serve(self, message: Any) -> None:
        """Answer one request (the answer is sent before this returns)."""
        plain.send(self.resp, self.answer(message))

    def answer(self, message: Any) -> list[Any]:
        if not (isinstance(message, list) and message and isinstance(message[0], str)):
            raise SystemExit(3)
        kind = message[0]
        try:
            if kind == "call" and len(message) == 4 and self.module is not None:
                function = getattr(self.module, str(message[1]), None)
                if not callable(function):
                    return self.invoke(_missing(str(message[1])), [], {})
                return self.invoke(function, self.load(message[2]), self.load(message[3]))
            if kind == "pcall" and len(message) == 4:
                return self.invoke(self.target(message[1]), self.load(message[2]), self.load(message[3]))
            if kind == "getattr" and len(message) == 3:
                return self.invoke(getattr, [self.target(message[1]), str(message[2])], {}, track=False)
            if kind == "setattr" and len(message) == 4:
                return self.invoke(
                    setattr, [self.target(message[1]), str(message[2]), self.load(message[3])], {}, track=False
                )
            if kind == "delattr" and len(message) == 3:
                return self.invoke(delattr, [self.target(message[1]), str(message[2])], {}, track=False)
            if kind == "op" and len(message) == 4 and message[2] in _OPS:
                return self.invoke(_OPS[message[2]], [self.target(message[1]), *self.load(message[3])], {}, track=False)
            if kind == "state" and len(message) == 2:
                return self.invoke(_state, [self.target(message[1])], {}, track=False)
            if kind == "release" and len(message) == 2:
                obj = self.handles.pop(message[1], None)
                if obj is not None:
                    self.by_id.pop(id(obj), None)
                return ["return", ["n"], [], "", ""]
        except ValueError as exc:
            return ["raise", describe_exception(TypeError(f"a bad reference ({exc})")), [], "", ""]
        raise SystemExit(3)

    def target(self, h: Any) -> Any:
        if type(h) is not int or h not in self.handles:
            raise ValueError(f"no object {h!r}")
        return self.handles[h]

    def describe_module(self, module: Any) -> dict[str, Any]:
        functions, exceptions, values, opaque, classes = [], [], [], [], []
        for name, value in vars(module).items():
            if name.startswith("__"):
                continue
            if isinstance(value, type) and issubclass(value, BaseException):
                exceptions.append([name, [[c.__module__, c.__qualname__] for c in value.__mro__]])
            elif isinstance(value, type):
                classes.append([name, self.describe_class(value), _class_order(value)])
            elif callable(value) and _is_function(value):
                functions.append([name, value.__doc__ if isinstance(value.__doc__, str) else None])
            else:
                try:
                    values.append([name, self.dump(value)])
                except plain.Unsupported:
                    opaque.append(name)  # a submodule: not usable across the boundary
        names = getattr(module, "__all__", None)
        try:
            encoded_all = plain.encode(list(names)) if names is not None else None
        except (plain.Unsupported, TypeError):
            encoded_all = None
        return {
            "functions": functions,
            "exceptions": exceptions,
            "values": values,
            "opaque": opaque,
            "classes": sorted(classes, key=lambda c: c[2]),
            "all": encoded_all,
            "doc": module.__doc__ if isinstance(module.__doc__, str) else None,
        }

    def run(self) -> None:
        while True:
            message = plain.recv(self.req)
            if message is None:
                return  # the test process ended
            if message == ["import"]:
                try:
                    self.module = importlib.import_module(self.module_name)
                except BaseException as exc:  # noqa: BLE001 - SystemExit at import included: a failed import
                    plain.send(self.resp, ["raise", describe_exception(exc), [], "", ""])
                    continue
                plain.send(self.resp, ["module", self.describe_module(self.module)])
            else:
                self.serve(message)


def _is_function(obj: Any) -> bool:
    import types

    return isinstance(obj, types.FunctionType | types.BuiltinFunctionType | types.MethodType | types.LambdaType) or (
        callable(obj) and type(obj).__module__ in ("functools", "builtins") and not isinstance(obj, type)
    )


def _class_order(cls: type) -> int:
    return len(cls.__mro__)


def _missing(name: str) -> Any:
    def missing() -> Any:
        raise AttributeError(name)

    return missing


def _state(obj: Any) -> Any:
    """The fields an equality of two objects of one class compares: a dataclass's fields, else ``vars(obj)``."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.compare}
    fields = getattr(obj, "__dict__", None)
    if isinstance(fields, dict):
        return dict(fields)
    slots = [s for c in type(obj).__mro__ for s in getattr(c, "__slots__", ())]
    return {s: getattr(obj, s) for s in slots if isinstance(s, str) and hasattr(obj, s)}


def _holds_mutable(value: Any, depth: int) -> bool:
    if depth > 50:
        return False
    t = type(value)
    if t in (list, dict, set, bytearray) or (
        t.__module__ in ("collections", "numpy") and hasattr(value, "__setitem__")
    ):
        return True
    if t is tuple or t is frozenset:
        return any(_holds_mutable(v, depth + 1) for v in value)
    return False


def main() -> None:
    module_name = sys.argv[1]
    req_fd, resp_fd = (int(x) for x in os.environ.pop("DELTAP_REMOTE_FDS").split(","))
    Server(module_name, req_fd, resp_fd).run()


if __name__ == "__main__":
    main()
