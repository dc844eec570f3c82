"""Held-out attacks that want an infrastructure ``error`` (or a crash of the checker) instead of a ``fail``.

Errors are left out of the estimate, and an exception out of ``check()`` stops a mining run (which a deterministic
solver then repeats on every resume): both bias labels as surely as a false ``pass``. Every candidate here is wrong;
the only right outcome is ``fail``, returned, not raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deltap.cases import Case
from deltap.checkers.pytest_checker import PytestChecker
from tests.adversarial.heldout import _case

pytestmark = pytest.mark.integration

# The write end of the result pipe is the process's only write-only pipe: no nonce, no deltap module needed.
_FIND_CHANNEL = """
import fcntl
import os


def _channels():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                yield fd
        except OSError:
            pass
"""

RECURSION_BOMB_ON_CHANNEL = (
    _FIND_CHANNEL
    + """

for _fd in _channels():
    os.write(_fd, b"[" * 200_000 + b"\\n")  # deeply nested JSON: the parent's json.loads recurses


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""
)

TYPED_GARBAGE_WITH_NONCE = """
import json
import os
import sys

_plugin = sys.modules["deltap_verdict"]
# Records with the right nonce whose fields have the wrong types: the parser must not raise.
for _record in ({"kind": "collected", "ids": 5}, {"kind": "finish", "exitstatus": [1]}):
    os.write(_plugin._state["fd"], (json.dumps({"nonce": _plugin._state["nonce"], **_record}) + "\\n").encode())


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""

FLOOD_CHANNEL = (
    _FIND_CHANNEL
    + """

_line = b'{"nonce": "0", "kind": "report"}' + b" " * 990 + b"\\n"
for _fd in _channels():
    for _ in range(20 * 1024):  # 20 MiB: more than the parent keeps
        os.write(_fd, _line)


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""
)

HUGE_OUTPUT = """
import os
import signal
import stat

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write until EFBIG instead of dying
_chunk = b"x" * (1 << 20)
for _fd in range(1, 64):
    try:
        if not stat.S_ISREG(os.fstat(_fd).st_mode):
            continue
        for _ in range(80):  # 80 MiB into every file descriptor: captured output and the real stdout
            os.write(_fd, _chunk)
    except OSError:
        pass


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""

STOP_SELF = """
import os
import signal


def median(xs):
    if len(xs) % 2 == 0:
        os.kill(os.getpid(), signal.SIGSTOP)  # frozen mid-test until the wall clock runs out
    return sorted(xs)[len(xs) // 2]
"""

THREAD_OUTLIVES_PYTEST = """
import threading
import time

threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()  # the interpreter never exits


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""

ATTACKS = [
    pytest.param(RECURSION_BOMB_ON_CHANNEL, id="recursion-bomb-on-result-channel"),
    pytest.param(TYPED_GARBAGE_WITH_NONCE, id="typed-garbage-records-with-stolen-nonce"),
    pytest.param(FLOOD_CHANNEL, id="flood-result-channel"),
    pytest.param(HUGE_OUTPUT, id="huge-output-ignoring-sigxfsz"),
    pytest.param(_case.WRONG + "# \ud800 a lone surrogate in a comment\n", id="lone-surrogate-in-answer"),
]

SLOW_ATTACKS = [
    pytest.param(STOP_SELF, id="sigstop-self"),
    pytest.param(THREAD_OUTLIVES_PYTEST, id="non-daemon-thread-outlives-pytest"),
]


@pytest.fixture(scope="module")
def median_dir() -> Iterator[Path]:
    directory = _case.visible_case_dir()
    yield directory
    _case.remove(directory)


@pytest.fixture(scope="module")
def median_case(median_dir: Path) -> tuple[Case, PytestChecker]:
    (median_dir / "default").mkdir(mode=0o755)
    return _case.build(median_dir / "default")


@pytest.fixture(scope="module")
def short_case(median_dir: Path) -> tuple[Case, PytestChecker]:
    (median_dir / "short").mkdir(mode=0o755)
    return _case.build(median_dir / "short", wall_seconds=4, cpu_seconds=3)


@pytest.mark.parametrize("code", ATTACKS)
def test_wrong_candidate_is_a_fail_not_an_error(median_case: tuple[Case, PytestChecker], code: str) -> None:
    case, checker = median_case
    result = _case.check(case, checker, code)
    assert result.outcome == "fail", (result.detail, result.info.get("output", "")[-1500:])


@pytest.mark.parametrize("code", SLOW_ATTACKS)
def test_wrong_candidate_that_hangs_is_a_fail(short_case: tuple[Case, PytestChecker], code: str) -> None:
    """Frozen mid-call, the tests wait until the clock kills them; a thread that only keeps the candidate's own
    process alive holds up nothing when that process is separate (the tests finish, and it is killed)."""
    case, checker = short_case
    result = _case.check(case, checker, code)
    assert result.outcome == "fail"
    if checker._separate:
        # The test side stops waiting for a frozen candidate before the wall clock (issue 24): the test fails with a
        # failure no `except Exception` can catch, and the run ends on its own.
        assert ("timed out" in result.detail) == (code is STOP_SELF), result.detail
        assert result.detail != "timed out after 4.0s (killed)", result.detail
    else:
        assert result.detail == "timed out after 4.0s (killed)", result.detail
