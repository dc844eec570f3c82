"""The candidate's side of the pytest checker's separate-process mode (stdlib only, no deltap import).

Runs in its own sandbox as ``python -B deltap_remote_server.py MODULE``: imports the candidate module and answers the
test process's requests over two pipes (see ``_remote_module.py``, the test side, and ``_plain.py``, the encoding).
Nothing here is trusted: it shares its process with the candidate, which can rewrite it. It exists to make an honest
candidate work; the test side trusts only the plain values it decodes.
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
import importlib  # noqa: E402
import io  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

import deltap_plain as plain  # noqa: E402 - copied beside this file in the sandbox

_MUTABLE = (list, dict, set, bytearray)


def _describe_exception(exc: BaseException) -> dict[str, Any]:
    args = []
    for a in exc.args:
        try:
            args.append(plain.encode(a))
        except plain.Unsupported:
            args.append(plain.encode(repr(a)))
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ is the candidate's problem, not the protocol's
        text = type(exc).__name__
    mro = [[c.__module__, c.__qualname__] for c in type(exc).__mro__]
    return {"mro": mro, "args": args, "text": text}


def _describe_module(module: Any) -> dict[str, Any]:
    functions, exceptions, values, opaque = [], [], [], []
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, type) and issubclass(value, BaseException):
            exceptions.append([name, [[c.__module__, c.__qualname__] for c in value.__mro__]])
        elif callable(value) and not isinstance(value, type):
            functions.append([name, value.__doc__ if isinstance(value.__doc__, str) else None])
        else:
            try:
                values.append([name, plain.encode(value, lenient=True)])
            except plain.Unsupported:
                opaque.append(name)  # a class, a submodule, an object: not usable across the boundary
    names = getattr(module, "__all__", None)
    try:
        encoded_all = plain.encode(list(names)) if names is not None else None
    except (plain.Unsupported, TypeError):
        encoded_all = None
    return {
        "functions": functions, "exceptions": exceptions, "values": values, "opaque": opaque, "all": encoded_all,
        "doc": module.__doc__ if isinstance(module.__doc__, str) else None,
    }


def _mutations(args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    """The state after the call of every mutable argument (the test side copies it into its own objects)."""
    out = []
    for key, value in [*enumerate(args), *kwargs.items()]:
        if type(value) in _MUTABLE:
            with contextlib.suppress(plain.Unsupported):
                out.append([key, plain.encode(value, lenient=True)])
    return out


def _call(module: Any, name: str, args: list[Any], kwargs: dict[str, Any]) -> list[Any]:
    out, err = io.StringIO(), io.StringIO()
    function = getattr(module, name, None)
    if not callable(function):
        return ["raise", {"mro": [["builtins", "AttributeError"]], "args": [plain.encode(name)], "text": name}, [], "", ""]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = function(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - every exception is the candidate's answer
        return ["raise", _describe_exception(exc), _mutations(args, kwargs), out.getvalue(), err.getvalue()]
    try:
        encoded = plain.encode(result, lenient=True)
    except plain.Unsupported as exc:
        return ["unsupported", f"return value ({exc})", out.getvalue(), err.getvalue()]
    return ["return", encoded, _mutations(args, kwargs), out.getvalue(), err.getvalue()]


def main() -> None:
    module_name = sys.argv[1]
    req_fd, resp_fd = (int(x) for x in os.environ.pop("DELTAP_REMOTE_FDS").split(","))
    module = None
    while True:
        message = plain.recv(req_fd)
        if message is None:
            return  # the test process ended
        if message == ["import"]:
            try:
                module = importlib.import_module(module_name)
            except BaseException as exc:  # noqa: BLE001 - SystemExit at import included: a failed import
                plain.send(resp_fd, ["raise", _describe_exception(exc), [], "", ""])
                continue
            plain.send(resp_fd, ["module", _describe_module(module)])
        elif isinstance(message, list) and len(message) == 4 and message[0] == "call" and module is not None:
            _, name, args, kwargs = message
            plain.send(resp_fd, _call(module, str(name), plain.decode(args), plain.decode(kwargs)))
        else:
            return


if __name__ == "__main__":
    main()
