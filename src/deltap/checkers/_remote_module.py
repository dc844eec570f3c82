"""The test side of the pytest checker's separate-process mode (stdlib only, no deltap import).

In this mode the test process never runs candidate code. The module the tests import (``work/<module>.py``) is a
two-line stub that calls :func:`install`, which asks the candidate's process (another sandbox, see
``_remote_server.py``) what the module defines and fills the stub with stand-ins: a function for each function (each
call crosses the pipe), a copy of each plain constant, a local class for each exception class, a *mirror* class for
each other class, and a placeholder that refuses every use for anything else (a submodule).

What crosses back is decoded by ``deltap_plain``: plain values keep their exact type (a numpy ``bool_`` stays one),
and everything else arrives as a proxy whose every use is a request to the candidate's process — an object of the
candidate's classes (an instance of the class's mirror, so ``isinstance`` works; attribute reads come back as plain
data), a function or bound method, an iterator. Equality of two proxies runs here, on plain data: the same object is
equal to itself; two objects of a class that defines ``__eq__`` are equal when their fields (a dataclass's compared
fields, else ``vars()``) are equal; else they differ. A callable the tests pass in (a callback, a lambda) stays here:
the candidate's process gets a reference and its calls come back here, so the candidate never holds the test's
function, its globals or its frame. An object equal to everything, a patched ``float.__eq__``, a patched pytest, a
forged verdict record or a peek at the calling test's frame all stay in the other process.

What the candidate does by accident reaches the test as a failure that ``pytest.raises(Exception)`` and ``except
Exception`` cannot catch: :class:`CandidateFailure` (a ``BaseException``) when its process exits (``os._exit``), crashes,
is killed, hangs past its time, sends what is not the protocol, or returns what cannot cross; a real ``SystemExit``
when it raises one (``sys.exit``), so a test expecting ``SystemExit`` still works. Each :class:`CandidateFailure` is
also reported to deltap's verdict plugin, which fails the check even when a test catches it. Loaded from the read-only
plugin directory; the pipe descriptors come from ``DELTAP_REMOTE_FDS`` and are made close-on-exec.
"""

from __future__ import annotations

import builtins
import itertools
import os
import select
import sys
import threading
import time
from typing import Any

import deltap_plain as plain  # copied beside this file in the sandbox

_lock = threading.RLock()
_state: dict[str, Any] = {}
_callbacks: dict[int, Any] = {}
_callback_ids: dict[int, int] = {}
_callback_errors: dict[int, BaseException] = {}
_proxies: dict[int, Any] = {}
_mirrors: dict[int, type] = {}
_exception_mirrors: dict[str, type[BaseException]] = {}
_ids = itertools.count(1)
#: Names a star import must never bring into a test module: every builtin, pytest's reserved names, test functions.
_RESERVED_PREFIXES = ("pytest_", "test", "Test", "deltap")


class CandidateFailure(BaseException):  # noqa: N818 - the name says what happened, not that it is an error
    """The candidate's process exited, crashed, was killed, hung, broke the protocol, or gave what cannot cross.

    A ``BaseException`` on purpose: a test's ``pytest.raises(Exception)`` or ``except Exception`` must not take it
    for the exception the test expects. Reported to deltap's verdict plugin, which fails the check.
    """


CandidateProcessError = CandidateFailure  # the name before issue 24


def _report(reason: str) -> None:
    verdict = sys.modules.get("deltap_verdict")
    hook = getattr(verdict, "candidate_failure", None)
    if callable(hook):
        hook(reason)


def _failure(reason: str, dead: bool = False) -> CandidateFailure:
    if dead:
        _state["dead"] = reason
    _report(reason)
    return CandidateFailure(reason)


class _Opaque:
    """Stands for a name the candidate module defines that cannot cross the boundary (a submodule)."""

    def __init__(self, module: str, name: str) -> None:
        object.__setattr__(self, "_what", f"{module}.{name}")

    def _refuse(self, *args: object, what: str = "", **kwargs: object) -> Any:
        raise _failure(
            f"{object.__getattribute__(self, '_what')}{what} cannot be used from the separate process the candidate"
            " runs in"
        )

    __call__ = _refuse

    def __getattr__(self, name: str) -> Any:
        if name.startswith(
            ("_", "pytest")
        ):  # pytest, mock and inspect probe such names on whatever a test module holds
            raise AttributeError(name)
        return self._refuse(what=f".{name}")

    def __repr__(self) -> str:
        return f"<deltap placeholder for {object.__getattribute__(self, '_what')}>"


# -- the pipe ------------------------------------------------------------------------------------------------------


def _read(fd: int, n: int) -> bytes:
    left = _state.get("deadline", float("inf")) - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], None if left == float("inf") else left)[0]:
        raise TimeoutError
    return os.read(fd, n)


def _exchange(message: list[Any]) -> list[Any]:
    """Send one request and return its answer, running the callbacks the candidate makes meanwhile."""
    req, resp = _state["fds"]
    with _lock:
        if _state.get("dead"):
            raise _failure(_state["dead"])
        try:
            plain.send(req, message)
            while True:
                answer = plain.recv(resp, _read)
                if answer is None:
                    raise _failure("the candidate's process ended (it exited, crashed or was killed)", dead=True)
                if type(answer) is not list or not answer or type(answer[0]) is not str:
                    raise _failure("the candidate's process sent something that is not the protocol", dead=True)
                if answer[0] == "callback" and len(answer) == 4:
                    plain.send(req, _run_callback(answer[1], answer[2], answer[3]))
                    continue
                return answer
        except TimeoutError:
            seconds = _state.get("seconds")
            raise _failure(
                f"the candidate's process timed out: no answer within {seconds}s (it hangs?)", dead=True
            ) from None
        except BrokenPipeError:  # nobody reads the requests any more: the process is gone
            raise _failure("the candidate's process ended (it exited, crashed or was killed)", dead=True) from None
        except (OSError, ValueError) as exc:
            raise _failure(
                f"the candidate's process broke the protocol ({type(exc).__name__}: {exc})", dead=True
            ) from None


def _run_callback(cb_id: Any, args: Any, kwargs: Any) -> list[Any]:
    function = _callbacks.get(cb_id) if type(cb_id) is int else None
    try:
        if function is None:
            raise _failure("the candidate's process called a callback the tests never gave it", dead=True)
        try:
            a, k = _load(args), _load(kwargs)
        except ValueError as exc:
            raise _failure(f"the candidate passed a callback something that is not plain data ({exc})") from None
        if type(a) is not list or type(k) is not dict or not all(type(key) is str for key in k):
            raise _failure("the candidate's process sent a malformed callback")
        result = function(*a, **k)
        try:
            return ["cbreturn", _dump(result)]
        except plain.Unsupported as exc:
            raise _failure(f"a callback of the tests returned what cannot cross to the candidate ({exc})") from None
    except BaseException as exc:  # noqa: BLE001 - handed back to the candidate, re-raised here unchanged if it escapes
        token = next(_ids)
        _callback_errors[token] = exc
        try:
            text = str(exc)
        except Exception:  # noqa: BLE001
            text = type(exc).__name__
        mro = [[c.__module__, c.__qualname__] for c in type(exc).__mro__]
        return ["cbraise", {"mro": mro, "text": text, "token": token, "exception": isinstance(exc, Exception)}]


# -- values and references -----------------------------------------------------------------------------------------


def _export(obj: Any) -> Any:
    """How a non-plain argument of the tests crosses: a proxy as its reference, a callable as a callback."""
    if isinstance(obj, _Proxy | _ProxyMeta):
        ref = object.__getattribute__(obj, "_deltap_ref") if isinstance(obj, _Proxy) else obj._deltap_class
        return ["P", ref]
    if getattr(obj, "_deltap_function", None) is not None and type(obj._deltap_function) is int:
        return ["P", obj._deltap_function]
    if callable(obj):
        key = id(obj)
        cb_id = _callback_ids.get(key)
        if cb_id is None or _callbacks.get(cb_id) is not obj:
            cb_id = next(_ids)
            _callbacks[cb_id] = obj
            _callback_ids[key] = cb_id
        return ["R", cb_id]
    t = type(obj)
    raise plain.Unsupported(f"a {t.__module__}.{t.__qualname__} is not plain data, a callable or the candidate's")


def _dump(value: Any) -> Any:
    return plain.encode(value, _export)


def _hook(node: list[Any]) -> Any:
    tag = node[0]
    if tag == "R" and len(node) == 2 and type(node[1]) is int and node[1] in _callbacks:
        return _callbacks[node[1]]
    if tag == "X" and len(node) == 2:
        return _exception(node[1], raised=False)
    if tag == "P" and len(node) >= 3 and type(node[1]) is int:
        handle, kind = node[1], node[2]
        known = _proxies.get(handle)
        if known is not None:
            return known
        if kind == "function" and len(node) == 4:
            made: Any = _function(handle, str(node[3]))
        elif kind == "class" and len(node) == 4:
            made = _mirror(node[3])
        elif kind == "object" and len(node) == 5:
            cls = _mirror(node[4])
            made = object.__new__(cls)
            object.__setattr__(made, "_deltap_ref", handle)
        else:
            raise ValueError("a malformed reference")
        _proxies[handle] = made
        return made
    raise ValueError(f"a malformed reference (tag {tag!r})")


def _load(node: Any) -> Any:
    return plain.decode(node, _hook)


def _merge(target: Any, value: Any) -> Any:
    """Copy ``value`` (the state the candidate left an argument in) into ``target`` in place, all the way down, so
    the objects the test holds (a row of a grid, a list in a dict) change as they would have; returns what belongs
    in ``target``'s place."""
    t = type(target)
    if t is not type(value):
        return value
    if t is list:
        for i in range(min(len(target), len(value))):
            target[i] = _merge(target[i], value[i])
        del target[len(value) :]
        target.extend(value[len(target) :])
        return target
    if isinstance(target, dict):
        for key in [k for k in target if k not in value]:
            del target[key]
        merged = [(k, _merge(target[k], v) if k in target else v) for k, v in value.items()]
        if list(target) != [k for k, _ in merged]:
            target.clear()
        for k, v in merged:
            target[k] = v
        return target
    if t is set:
        target.clear()
        target.update(value)
        return target
    if t is bytearray:
        target[:] = value
        return target
    if t is tuple and len(target) == len(value):
        for old, new in zip(target, value, strict=True):
            _merge(old, new)
        return target
    if t.__module__ == "numpy" and getattr(target, "shape", None) == getattr(value, "shape", ()):
        try:
            target[...] = value
            return target
        except (TypeError, ValueError):
            return value
    return value


def _apply_mutations(mutations: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not isinstance(mutations, list):
        return
    for item in mutations:
        if not (isinstance(item, list) and len(item) == 2):
            continue
        key, encoded = item
        if type(key) is int and 0 <= key < len(args):
            target = args[key]
        elif type(key) is str and key in kwargs:
            target = kwargs[key]
        else:
            continue
        try:
            value = _load(encoded)
        except ValueError:
            continue
        _merge(target, value)


def _echo(out: Any, err: Any) -> None:
    if isinstance(out, str) and out:
        sys.stdout.write(out)
    if isinstance(err, str) and err:
        sys.stderr.write(err)


def _builtin_exception(name: str) -> type[BaseException] | None:
    value = getattr(builtins, name, None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


def _exception(info: Any, raised: bool = True) -> BaseException:
    """A local exception equivalent to the one the candidate raised (or returned, ``raised=False``): the test's own
    exception when it came from a callback, else its mirror class, else its nearest built-in base. Raised, a
    ``SystemExit`` stays a ``SystemExit``; any other ``BaseException`` that is not an ``Exception`` becomes a
    :class:`CandidateFailure`."""
    if not isinstance(info, dict) or not isinstance(info.get("mro"), list):
        return _failure("the candidate's process sent a malformed exception", dead=True)
    token = info.get("callback_error")
    if type(token) is int and token in _callback_errors:
        return _callback_errors[token]
    text = info.get("text") if isinstance(info.get("text"), str) else ""
    args: list[Any] = []
    raw_args = info.get("args")
    for a in raw_args if isinstance(raw_args, list) else []:
        try:
            args.append(_load(a))
        except ValueError:
            args.append("?")
    cls: type[BaseException] | None = None
    module = _state.get("module")
    for entry in info["mro"]:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)):
            continue
        where, name = entry
        if where == module and name in _exception_mirrors:
            cls = _exception_mirrors[name]
            break
        if where == "builtins":
            cls = _builtin_exception(name)
            if cls is not None:
                break
    first = info["mro"][0][1] if info["mro"] and isinstance(info["mro"][0], list) else "BaseException"
    if raised and cls is SystemExit:
        try:
            code = _load(info["code"]) if "code" in info else (args[0] if args else None)
        except ValueError:
            code = text
        return SystemExit(code)
    if cls is None or (raised and not issubclass(cls, Exception)):
        return _failure(f"the candidate raised {first}: {text}")
    for attempt in (args, [text]):
        try:
            return cls(*attempt)
        except Exception:  # noqa: BLE001, S112 - e.g. UnicodeDecodeError needs five exact arguments
            continue
    return _failure(f"the candidate raised {cls.__name__}: {text}")


def _result(answer: list[Any], what: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
    """The value of one answer; raises what the candidate raised, or a :class:`CandidateFailure`."""
    kind = answer[0]
    if kind in ("return", "raise") and len(answer) == 5:
        _apply_mutations(answer[2], args, kwargs or {})
        _echo(answer[3], answer[4])
        if kind == "raise":
            raise _exception(answer[1])
        try:
            return _load(answer[1])
        except ValueError as exc:
            raise _failure(f"{what} gave a value the test process cannot rebuild ({exc})") from None
    if kind == "unsupported" and len(answer) == 4:
        _echo(answer[2], answer[3])
        detail = answer[1] if isinstance(answer[1], str) else "value"
        raise _failure(f"{what} gave a {detail}: it cannot cross to the test process")
    raise _failure(f"{what}: the candidate's process sent something that is not the protocol", dead=True)


def _send_args(what: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    try:
        return _dump(list(args)), _dump(kwargs)
    except plain.Unsupported as exc:
        raise _failure(
            f"deltap runs the candidate in a separate process and cannot send this argument to {what}: {exc}"
        ) from None


def _stand_in(module: str, name: str, doc: str | None) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        a, k = _send_args(f"{name}()", args, kwargs)
        return _result(_exchange(["call", name, a, k]), f"{name}()", args, kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    call.__doc__ = doc
    return call


def _function(handle: int, name: str) -> Any:
    """A proxy of a function (or bound method) of the candidate's process."""

    def call(*args: Any, **kwargs: Any) -> Any:
        a, k = _send_args(f"{name}()", args, kwargs)
        return _result(_exchange(["pcall", handle, a, k]), f"{name}()", args, kwargs)

    call.__name__ = call.__qualname__ = name
    call._deltap_function = handle  # type: ignore[attr-defined]
    return call


# -- proxies of the candidate's objects and classes ----------------------------------------------------------------


def _ref(obj: Any) -> int:
    return int(object.__getattribute__(obj, "_deltap_ref"))


def _ask(message: list[Any], what: str) -> Any:
    return _result(_exchange(message), what)


class _ProxyMeta(type):
    """The metaclass of the mirrors: calling a mirror builds the object in the candidate's process; reading a class
    attribute (an enum member, a constant, a static method) asks it."""

    _deltap_class: int

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        a, k = _send_args(f"{cls.__name__}()", args, kwargs)
        return _result(_exchange(["pcall", cls._deltap_class, a, k]), f"{cls.__name__}()", args, kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") or name.startswith("_deltap"):
            raise AttributeError(name)
        return _ask(["getattr", cls._deltap_class, name], f"{cls.__name__}.{name}")


def _op(name: str) -> Any:
    def op(self: Any, *args: Any) -> Any:
        try:
            encoded = _dump(list(args))
        except plain.Unsupported as exc:
            raise _failure(f"cannot send an operand of {type(self).__name__}.{name} across: {exc}") from None
        return _ask(["op", _ref(self), name, encoded], f"{type(self).__name__}.{name}")

    op.__name__ = name
    return op


class _Proxy(metaclass=_ProxyMeta):
    """An object that lives in the candidate's process (see the module docstring)."""

    __slots__ = ("__weakref__", "_deltap_ref")
    _deltap_class = 0
    _deltap_eq = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_deltap"):
            raise AttributeError(name)
        return _ask(["getattr", _ref(self), name], f"{type(self).__name__}.{name}")

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            encoded = _dump(value)
        except plain.Unsupported as exc:
            raise _failure(f"cannot send {type(self).__name__}.{name} across: {exc}") from None
        _ask(["setattr", _ref(self), name, encoded], f"{type(self).__name__}.{name}")

    def __delattr__(self, name: str) -> None:
        _ask(["delattr", _ref(self), name], f"{type(self).__name__}.{name}")

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, _Proxy):
            return NotImplemented
        if type(self) is not type(other) or not type(self)._deltap_eq:
            return False
        return _ask(["state", _ref(self)], "state") == _ask(["state", _ref(other)], "state")

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(type(self).__qualname__) if type(self)._deltap_eq else id(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        a, k = _send_args(f"{type(self).__name__}()", args, kwargs)
        return _result(_exchange(["pcall", _ref(self), a, k]), f"{type(self).__name__}()", args, kwargs)


for _name in (
    "__repr__",
    "__str__",
    "__len__",
    "__bool__",
    "__iter__",
    "__next__",
    "__contains__",
    "__getitem__",
    "__setitem__",
    "__delitem__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__int__",
    "__float__",
    "__index__",
    "__add__",
    "__sub__",
    "__mul__",
    "__enter__",
    "__exit__",
    "__reversed__",
    "__abs__",
    "__neg__",
):
    setattr(_Proxy, _name, _op(_name))


def _mirror(desc: Any) -> type:
    """The local class standing for one of the candidate's classes (made once per class)."""
    if not isinstance(desc, dict) or type(desc.get("handle")) is not int or not isinstance(desc.get("name"), str):
        raise ValueError("a malformed class")
    handle = desc["handle"]
    known = _mirrors.get(handle)
    if known is not None:
        return known
    bases = tuple(_mirrors[b] for b in desc.get("bases") or [] if type(b) is int and b in _mirrors) or (_Proxy,)
    namespace = {
        "__slots__": (),
        "__module__": _state.get("module", "?"),
        "__doc__": desc.get("doc"),
        "__qualname__": desc["name"],
        "_deltap_class": handle,
        "_deltap_eq": bool(desc.get("eq")),
    }
    try:
        cls = _ProxyMeta(desc["name"] if desc["name"].isidentifier() else "Candidate", bases, namespace)
    except TypeError:  # an impossible layout of mirrored bases: fall back to the plain proxy base
        cls = _ProxyMeta(desc["name"] if desc["name"].isidentifier() else "Candidate", (_Proxy,), namespace)
    _mirrors[handle] = cls
    _proxies[handle] = cls
    return cls


# -- the module ------------------------------------------------------------------------------------------------------


def _plain_name(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not name.startswith("__")


def _exported(name: str) -> bool:
    """Whether ``from module import *`` may bring ``name`` into a test module."""
    return not name.startswith("_") and not hasattr(builtins, name) and not name.startswith(_RESERVED_PREFIXES)


def install(module: str, namespace: dict[str, Any]) -> None:
    """Fill ``namespace`` (the stub module's globals) with stand-ins for what the candidate module defines.

    Raises:
        ImportError: the candidate module does not import (its exception is named), or its process ended.
    """
    if "fds" not in _state:
        req, resp = (int(x) for x in os.environ.pop("DELTAP_REMOTE_FDS", "-1,-1").split(","))
        for fd in (req, resp):
            os.set_inheritable(fd, False)
        _state["fds"] = (req, resp)
    seconds = os.environ.pop("DELTAP_REMOTE_SECONDS", "")
    if seconds:
        _state["seconds"] = float(seconds)
        _state["deadline"] = time.monotonic() + float(seconds)
    _state["module"] = module
    try:
        answer = _exchange(["import"])
    except CandidateFailure as exc:
        raise ImportError(f"{module}: {exc}") from None
    if answer[0] == "raise" and len(answer) == 5:
        _echo(answer[3], answer[4])
        error = _exception(answer[1])
        raise ImportError(f"{module} does not import: {type(error).__name__}: {error}")
    if answer[0] != "module" or len(answer) != 2 or not isinstance(answer[1], dict):
        raise ImportError(f"{module}: the candidate's process sent something that is not the protocol")
    desc = answer[1]
    public: list[str] = []
    exceptions = [e for e in desc.get("exceptions") or [] if isinstance(e, list) and len(e) == 2 and _plain_name(e[0])]
    for name, mro in sorted(exceptions, key=lambda e: len(e[1]) if isinstance(e[1], list) else 0):
        base: type[BaseException] = Exception
        for entry in mro[1:] if isinstance(mro, list) else []:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == module and entry[1] in _exception_mirrors:
                base = _exception_mirrors[entry[1]]
                break
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == "builtins":
                found = _builtin_exception(str(entry[1]))
                if found is not None and issubclass(found, Exception):
                    base = found
                    break
        _exception_mirrors[name] = type(name, (base,), {"__module__": module})
        namespace[name] = _exception_mirrors[name]
        public.append(name)
    for item in desc.get("classes") or []:
        if isinstance(item, list) and len(item) == 3 and _plain_name(item[0]):
            try:
                namespace[item[0]] = _mirror(item[1])
            except ValueError:
                namespace[item[0]] = _Opaque(module, item[0])
            public.append(item[0])
    for item in desc.get("functions") or []:
        if isinstance(item, list) and len(item) == 2 and _plain_name(item[0]):
            namespace[item[0]] = _stand_in(module, item[0], item[1] if isinstance(item[1], str) else None)
            public.append(item[0])
    for item in desc.get("values") or []:
        if isinstance(item, list) and len(item) == 2 and _plain_name(item[0]):
            try:
                namespace[item[0]] = _load(item[1])
            except ValueError:
                namespace[item[0]] = _Opaque(module, item[0])
            public.append(item[0])
    for name in desc.get("opaque") or []:
        if _plain_name(name):
            namespace[name] = _Opaque(module, name)
            public.append(name)
    names: Any = None
    if desc.get("all") is not None:
        try:
            names = plain.decode(desc["all"])
        except ValueError:
            names = None
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        names = public
    namespace["__all__"] = [n for n in names if _plain_name(n) and n in namespace and _exported(n)]
    if isinstance(desc.get("doc"), str):
        namespace["__doc__"] = desc["doc"]
