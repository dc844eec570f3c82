"""The test side of the pytest checker's separate-process mode (stdlib only, no deltap import).

In this mode the test process never runs candidate code. The module the tests import (``work/<module>.py``) is a
two-line stub that calls :func:`install`, which asks the candidate's process (another sandbox, see
``_remote_server.py``) what the module defines and fills the stub with stand-ins: a function for each function (each
call crosses the pipe), a copy of each plain constant, a local class for each exception class, and a placeholder that
refuses every use for anything else (classes, objects).

What crosses back is decoded by ``deltap_plain`` into exact built-in values only, so the tests compare real ints,
floats, strings and containers: an object that claims to be equal to everything, a patched ``float.__eq__``, a
patched pytest, a forged verdict record or a peek at the calling test's frame all stay in the other process. Loaded
from the read-only plugin directory; the pipe descriptors come from ``DELTAP_REMOTE_FDS`` and are made
close-on-exec.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
from typing import Any

import deltap_plain as plain  # copied beside this file in the sandbox

_lock = threading.Lock()
_state: dict[str, Any] = {}


class CandidateProcessError(RuntimeError):
    """The candidate's process died, or sent something that is not the protocol (the test fails)."""


class _Opaque:
    """Stands for a name the candidate module defines that cannot cross the boundary (a class, an object)."""

    def __init__(self, module: str, name: str) -> None:
        object.__setattr__(self, "_what", f"{module}.{name}")

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise TypeError(
            f"{object.__getattribute__(self, '_what')} is not a function or plain data, so deltap cannot use it "
            "from the separate process the candidate runs in"
        )

    __call__ = _refuse

    def __getattr__(self, name: str) -> Any:
        return self._refuse()

    def __repr__(self) -> str:
        return f"<deltap placeholder for {object.__getattribute__(self, '_what')}>"


def _exchange(message: list[Any]) -> list[Any]:
    req, resp = _state["fds"]
    with _lock:
        if _state.get("dead"):
            raise CandidateProcessError(_state["dead"])
        try:
            plain.send(req, message)
            answer = plain.recv(resp)
        except (OSError, ValueError) as exc:
            _state["dead"] = f"the candidate's process broke the protocol ({type(exc).__name__}: {exc})"
            raise CandidateProcessError(_state["dead"]) from None
        if answer is None:
            _state["dead"] = "the candidate's process ended (it exited, crashed or was killed)"
            raise CandidateProcessError(_state["dead"])
        if type(answer) is not list or not answer or type(answer[0]) is not str:
            _state["dead"] = "the candidate's process sent something that is not the protocol"
            raise CandidateProcessError(_state["dead"])
        return answer


def _builtin_exception(name: str) -> type[BaseException] | None:
    value = getattr(builtins, name, None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


def _exception(info: Any, module: str, mirrors: dict[str, type[BaseException]]) -> BaseException:
    """A local exception equivalent to the one the candidate raised: its mirror class, else its nearest built-in
    base (``Exception`` subclasses only: ``SystemExit``/``KeyboardInterrupt`` become a ``CandidateProcessError``)."""
    if not isinstance(info, dict) or not isinstance(info.get("mro"), list):
        return CandidateProcessError("the candidate's process sent a malformed exception")
    text = info.get("text") if isinstance(info.get("text"), str) else ""
    args: list[Any] = []
    raw_args = info.get("args")
    for a in raw_args if isinstance(raw_args, list) else []:
        try:
            args.append(plain.decode(a))
        except ValueError:
            args.append("?")
    cls: type[BaseException] | None = None
    for entry in info["mro"]:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)):
            continue
        where, name = entry
        if where == module and name in mirrors:
            cls = mirrors[name]
            break
        if where == "builtins":
            cls = _builtin_exception(name)
            if cls is not None:
                break
    if cls is None or not issubclass(cls, Exception):
        name = info["mro"][0][1] if info["mro"] and isinstance(info["mro"][0], list) else "BaseException"
        return CandidateProcessError(f"the candidate raised {name}: {text}")
    for attempt in (args, [text]):
        try:
            return cls(*attempt)
        except Exception:  # noqa: BLE001, S112 - e.g. UnicodeDecodeError needs five exact arguments
            continue
    return CandidateProcessError(f"the candidate raised {cls.__name__}: {text}")


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
            value = plain.decode(encoded)
        except ValueError:
            continue
        if type(value) is not type(target):
            continue
        if type(target) in (list, bytearray):
            target[:] = value
        else:
            target.clear()
            target.update(value)


def _echo(out: Any, err: Any) -> None:
    if isinstance(out, str) and out:
        sys.stdout.write(out)
    if isinstance(err, str) and err:
        sys.stderr.write(err)


def _stand_in(module: str, name: str, doc: str | None, mirrors: dict[str, type[BaseException]]) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            message = ["call", name, plain.encode(list(args)), plain.encode(kwargs)]
        except plain.Unsupported as exc:
            raise TypeError(
                f"deltap runs the candidate in a separate process and cannot send this argument to {name}(): {exc}"
            ) from None
        answer = _exchange(message)
        kind = answer[0]
        if kind == "return" and len(answer) == 5:
            _apply_mutations(answer[2], args, kwargs)
            _echo(answer[3], answer[4])
            try:
                return plain.decode(answer[1])
            except ValueError as exc:
                raise CandidateProcessError(f"{name}() returned something that is not plain data ({exc})") from None
        if kind == "raise" and len(answer) == 5:
            _apply_mutations(answer[2], args, kwargs)
            _echo(answer[3], answer[4])
            raise _exception(answer[1], module, mirrors)
        if kind == "unsupported" and len(answer) == 4:
            _echo(answer[2], answer[3])
            what = answer[1] if isinstance(answer[1], str) else "value"
            raise TypeError(f"{name}() gave a {what}: deltap can only compare plain data outside the candidate's process")
        raise CandidateProcessError(f"{name}(): the candidate's process sent something that is not the protocol")

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    call.__doc__ = doc
    return call


def _plain_name(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not name.startswith("__")


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
    try:
        answer = _exchange(["import"])
    except CandidateProcessError as exc:
        raise ImportError(f"{module}: {exc}") from None
    mirrors: dict[str, type[BaseException]] = {}
    if answer[0] == "raise" and len(answer) == 5:
        _echo(answer[3], answer[4])
        error = _exception(answer[1], module, mirrors)
        raise ImportError(f"{module} does not import: {type(error).__name__}: {error}")
    if answer[0] != "module" or len(answer) != 2 or not isinstance(answer[1], dict):
        raise ImportError(f"{module}: the candidate's process sent something that is not the protocol")
    desc = answer[1]
    exceptions = [e for e in desc.get("exceptions") or [] if isinstance(e, list) and len(e) == 2 and _plain_name(e[0])]
    for name, mro in sorted(exceptions, key=lambda e: len(e[1]) if isinstance(e[1], list) else 0):
        base: type[BaseException] = Exception
        for entry in mro[1:] if isinstance(mro, list) else []:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == module and entry[1] in mirrors:
                base = mirrors[entry[1]]
                break
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == "builtins":
                found = _builtin_exception(str(entry[1]))
                if found is not None and issubclass(found, Exception):
                    base = found
                    break
        mirrors[name] = type(name, (base,), {"__module__": module})
        namespace[name] = mirrors[name]
    for item in desc.get("functions") or []:
        if isinstance(item, list) and len(item) == 2 and _plain_name(item[0]):
            namespace[item[0]] = _stand_in(module, item[0], item[1] if isinstance(item[1], str) else None, mirrors)
    for item in desc.get("values") or []:
        if isinstance(item, list) and len(item) == 2 and _plain_name(item[0]):
            try:
                namespace[item[0]] = plain.decode(item[1])
            except ValueError:
                namespace[item[0]] = _Opaque(module, item[0])
    for name in desc.get("opaque") or []:
        if _plain_name(name):
            namespace[name] = _Opaque(module, name)
    if desc.get("all") is not None:
        try:
            names = plain.decode(desc["all"])
        except ValueError:
            names = None
        if isinstance(names, list) and all(_plain_name(n) for n in names):
            namespace["__all__"] = names
    if isinstance(desc.get("doc"), str):
        namespace["__doc__"] = desc["doc"]
