"""deltap's pytest plugin inside the sandbox: reports every test outcome to the checker over a private channel.

Loaded with ``-p deltap_verdict`` from a read-only directory before any test module (so before the candidate's
code). At configure time it reads a one-time nonce from a pipe the parent wrote and closed, and takes the result
pipe; both descriptors are made close-on-exec, so a process the candidate re-executes or spawns gets neither.
Each record is one JSON line tagged with the nonce. The parent ignores stdout entirely: the verdict is computed
from these records (see :class:`deltap.checkers.pytest_checker.PytestChecker`).

Standalone on purpose (stdlib only, imports nothing from deltap): it runs under the sandbox's interpreter with
only this directory on the path. The names it needs are bound at import time, so a candidate that later patches
``os.write`` or ``json.dumps`` does not change what this plugin writes.
"""

from __future__ import annotations

import json
import os

_write = os.write
_dumps = json.dumps
_state: dict[str, object] = {}


def _emit(kind: str, **data: object) -> None:
    fd = _state.get("fd")
    if not isinstance(fd, int):
        return
    line = _dumps({"nonce": _state["nonce"], "kind": kind, **data}) + "\n"
    payload = line.encode("utf-8", "replace")
    while payload:
        try:
            n = _write(fd, payload)
        except OSError:
            return
        payload = payload[n:]


def _take_channel() -> None:
    # At import: ``-p`` plugins are imported before any conftest or test module, so before the candidate's code.
    fd_text = os.environ.pop("DELTAP_VERDICT_FD", "")
    nonce_text = os.environ.pop("DELTAP_VERDICT_NONCE_FD", "")
    if not (fd_text.isdigit() and nonce_text.isdigit()):
        return  # not started by deltap (or re-executed by the candidate): report nothing
    nonce_fd = int(nonce_text)
    try:
        nonce = os.read(nonce_fd, 256).decode("ascii").strip()
    except OSError:
        return
    finally:
        os.close(nonce_fd)
    fd = int(fd_text)
    try:
        os.set_inheritable(fd, False)
    except OSError:
        return
    _state["fd"] = fd
    _state["nonce"] = nonce
    _emit("start", pid=os.getpid())


_take_channel()


def candidate_failure(reason: object) -> None:
    """Called by the separate-process stand-in module (``deltap_remote``) when the candidate's process failed by
    accident (exited, crashed, hung, gave what cannot cross): the checker fails the check even if a test caught it.
    Only the test process calls this, and in separate mode no candidate code runs there."""
    _emit("candidate_failure", id=str(_state.get("current", "")), reason=str(reason)[:500])


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _state["current"] = str(nodeid)


def pytest_collectreport(report: object) -> None:
    if getattr(report, "failed", False):
        _emit("collect_error", id=str(getattr(report, "nodeid", "")))


def pytest_collection_finish(session: object) -> None:
    items = getattr(session, "items", [])
    _emit("collected", ids=[str(getattr(i, "nodeid", "")) for i in items])


def pytest_runtest_logreport(report: object) -> None:
    _emit(
        "report",
        id=str(getattr(report, "nodeid", "")),
        when=str(getattr(report, "when", "")),
        outcome=str(getattr(report, "outcome", "")),
        xfail=hasattr(report, "wasxfail"),
    )


def pytest_sessionfinish(session: object, exitstatus: object) -> None:
    try:
        status = int(exitstatus)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        status = -1
    _emit("finish", exitstatus=status)
