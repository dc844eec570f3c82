"""Held-out attacks on the pytest checker's verdict: a wrong ``median`` that wants to be scored ``pass``.

Each parameter is a complete candidate module. It does not compute the median of even-length lists (or raises the
wrong exception on the empty list), so every test that checks those fails with an honest verdict; the attack is the
rest of the module. The only right outcome is ``fail``. See ``_case.py`` for the case.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deltap.cases import Case
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import isolation_available
from tests.adversarial.heldout import _case

pytestmark = pytest.mark.integration

# -- candidates that lie about their results -------------------------------------------------------------------------

ALWAYS_EQUAL = '''
class _Same:
    """Equal to everything: every `assert median(xs) == expected` holds."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return "2.5"


def median(xs):
    if not xs:
        raise ValueError("empty")
    return _Same()
'''

MOCK_ANY = """
from unittest import mock


def median(xs):
    if not xs:
        raise ValueError("empty")
    return mock.ANY  # the standard library's equal-to-everything object
"""

CALLER_FRAME_ORACLE = '''
import ast
import linecache
import sys


def _wrong(xs):
    return sorted(xs)[len(xs) // 2]


def median(xs):
    """Read the calling test's source line and return what it expects (or raise what it expects)."""
    frame = sys._getframe(1)
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    here = frame.f_lineno
    for previous in reversed(lines[frame.f_code.co_firstlineno - 1 : here - 1]):
        text = previous.strip()
        if text.startswith("with pytest.raises("):
            raise eval(text[len("with pytest.raises(") :].split(")")[0], frame.f_globals, frame.f_locals)
    try:
        stmt = ast.parse(lines[here - 1].strip()).body[0]
        if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare):
            code = compile(ast.Expression(stmt.test.comparators[0]), "<oracle>", "eval")
            wanted = eval(code, frame.f_globals, frame.f_locals)
            return getattr(wanted, "expected", wanted)  # pytest.approx(x) -> x
    except (SyntaxError, IndexError, NameError):
        pass
    return _wrong(xs)
'''

PATCH_FLOAT_EQ = """
import ctypes

# float.__eq__ patched through the C type object: a float compared with anything is equal. The canaries compare
# ints, so they keep their real outcomes; the real tests compare with 2.5 and 1.5.
_FLAGS = 21 * ctypes.sizeof(ctypes.c_void_p)  # offsetof(PyTypeObject, tp_flags) on CPython 3.11+
_IMMUTABLE = 1 << 8
_flags = ctypes.c_ulong.from_address(id(float) + _FLAGS)
_flags.value &= ~_IMMUTABLE
float.__eq__ = lambda self, other: True
float.__ne__ = lambda self, other: False
_flags.value |= _IMMUTABLE


def median(xs):
    if not xs:
        raise ValueError("empty")
    return float(sorted(xs)[len(xs) // 2])
"""

# -- candidates that forge or steer the verdict channel (written against deltap's source) ---------------------------

CANARY_NAMES = r"(basic|edge|empty|large|mixed|order|repeat|round|simple|small|types|values|zero|negative|unicode|nested|bounds|identity|inverse|default)"

PATCH_PLUGIN_WRITER = r"""
import re
import sys

# deltap's plugin bound os.write at import, but it looks the bound name up in its own globals at every call.
_CANARY = re.compile(r'::test_CANARY_NAMES_[0-9a-f]{6}"')
_plugin = sys.modules.get("deltap_verdict")
if _plugin is not None:
    _original = _plugin._write

    def _write(fd, payload):
        if b'"kind": "report"' in payload and not _CANARY.search(payload.decode()):
            payload = payload.replace(b'"outcome": "failed"', b'"outcome": "passed"')
        return _original(fd, payload)

    _plugin._write = _write


def median(xs):
    return sorted(xs)[len(xs) // 2]
""".replace("CANARY_NAMES", CANARY_NAMES)

FORGE_WITH_STOLEN_NONCE = '''
import gc
import json
import os
import sys


def median(xs):
    return sorted(xs)[len(xs) // 2]


class _Forger:
    """After collection: report every test that uses `median` as passed, run the others (the canaries) for real,
    write deltap's `finish` record with the plugin's own nonce, and leave before pytest reports anything."""

    def pytest_collection_finish(self, session):
        plugin = sys.modules["deltap_verdict"]
        fd, nonce = plugin._state["fd"], plugin._state["nonce"]

        def emit(**record):
            os.write(fd, (json.dumps({"nonce": nonce, **record}) + "\\n").encode())

        emit(kind="collected", ids=[item.nodeid for item in session.items])
        for item in session.items:
            function = getattr(item.obj, "__func__", item.obj)
            outcome = "passed"
            if "median" not in function.__code__.co_names:
                try:
                    function()
                except BaseException:  # AssertionError, and pytest.raises' Failed (the canaries use it)
                    outcome = "failed"
            for when in ("setup", "call", "teardown"):
                emit(kind="report", id=item.nodeid, when=when, outcome=outcome if when == "call" else "passed",
                     xfail=False)
        emit(kind="finish", exitstatus=0)
        os._exit(0)


for _obj in gc.get_objects():
    if type(_obj).__name__ == "Config" and type(_obj).__module__ == "_pytest.config":
        _obj.pluginmanager.register(_Forger(), "heldout-forger")
        break
'''

FLIP_REPORTS_OF_TESTS_THAT_CALLED_ME = '''
import gc

import pytest

_called = [False]


def median(xs):
    _called[0] = True
    return sorted(xs)[len(xs) // 2]


class _Flip:
    """A canary never calls `median`: flip only the reports of tests that did."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if _called[0] and report.failed:
            report.outcome = "passed"
            report.longrepr = None
        if call.when == "teardown":
            _called[0] = False
        return report


for _obj in gc.get_objects():
    if type(_obj).__name__ == "Config" and type(_obj).__module__ == "_pytest.config":
        _obj.pluginmanager.register(_Flip(), "heldout-flip")
        break
'''

HIJACK_TEST_MODULE = '''
import functools
import sys
import types


def median(xs):
    return sorted(xs)[len(xs) // 2]


def _uses_me(function):
    return "median" in getattr(function, "__code__", types.SimpleNamespace(co_names=())).co_names


def _noop_like(function):
    @functools.wraps(function)  # keeps the signature (parametrize) and the marks
    def noop(*args, **kwargs):
        return None

    return noop


def _launder(value):
    if isinstance(value, types.FunctionType) and value.__name__.startswith("test") and _uses_me(value):
        return _noop_like(value)
    if isinstance(value, type) and value.__name__.startswith("Test"):
        for name, member in list(vars(value).items()):
            if isinstance(member, types.FunctionType) and name.startswith("test") and _uses_me(member):
                setattr(value, name, _noop_like(member))
    return value


def _hijack():
    """Replace the test module (being imported right now) in sys.modules: pytest takes the module from there."""
    frame = sys._getframe(1)
    while frame is not None and not (
        frame.f_code.co_name == "<module>" and str(frame.f_globals.get("__name__", "")).startswith("test_")
    ):
        frame = frame.f_back
    if frame is None:
        return
    name = frame.f_globals["__name__"]
    real = sys.modules[name]

    class _Module(types.ModuleType):
        def __getattribute__(self, attr):
            if attr == "__dict__":
                return {k: _launder(v) for k, v in vars(real).items()}
            return _launder(getattr(real, attr))

    sys.modules[name] = _Module(name)


_hijack()
'''

# -- candidates that tamper generically (the defence should already catch these) ------------------------------------

ASSERTION_ERROR_IS_A_SKIP = """
import builtins

import pytest

# pytest's rewritten asserts raise the name AssertionError, looked up in builtins.
builtins.AssertionError = type("AssertionError", (pytest.skip.Exception,), {})


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""

PATCH_OS_WRITE_AND_JSON = """
import json
import os

_write, _dumps = os.write, json.dumps


def _forged_write(fd, data):
    return _write(fd, data.replace(b'"outcome": "failed"', b'"outcome": "passed"'))


def _forged_dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("outcome") == "failed":
        obj = {**obj, "outcome": "passed"}
    return _dumps(obj, *args, **kwargs)


os.write, json.dumps = _forged_write, _forged_dumps


def median(xs):
    return sorted(xs)[len(xs) // 2]
"""

ATEXIT_RECORDS_AFTER_FINISH = """
import atexit
import json
import os
import sys

_plugin = sys.modules["deltap_verdict"]
_fd, _nonce = _plugin._state["fd"], _plugin._state["nonce"]
_seen = []


def median(xs):
    _seen.append(sys._getframe(1).f_code.co_name)
    return sorted(xs)[len(xs) // 2]


@atexit.register
def _rewrite_history():
    # After pytest's finish record: claim a fresh, all-passed run of the tests that used median.
    for when in ("setup", "call", "teardown"):
        for name in ("test_even", "test_empty_raises"):
            record = {"nonce": _nonce, "kind": "report", "id": "test_stats.py::" + name, "when": when,
                      "outcome": "passed", "xfail": False}
            os.write(_fd, (json.dumps(record) + "\\n").encode())
    os.write(_fd, (json.dumps({"nonce": _nonce, "kind": "finish", "exitstatus": 0}) + "\\n").encode())
"""

FAULTHANDLER_INTO_CHANNEL = """
import faulthandler
import sys

_plugin = sys.modules["deltap_verdict"]
faulthandler.enable(file=_plugin._state["fd"], all_threads=True)


def median(xs):
    if len(xs) % 2 == 0:
        faulthandler._sigsegv()  # a crash whose traceback goes into the result channel
    return sorted(xs)[len(xs) // 2]
"""

KEYBOARD_INTERRUPT_FROM_REPR = """
class _Result(float):
    def __repr__(self):
        raise KeyboardInterrupt  # raised while pytest formats the failed assertion


def median(xs):
    return _Result(sorted(xs)[len(xs) // 2])
"""


IN_PROCESS = "the candidate shares the pytest process"
# Attacks that need the candidate inside the test process: they succeed in shared mode (the residual risk when the
# reference cannot run in a separate process, or with candidate_process: shared) and fail in separate mode.
SHARED_MODE_RESIDUAL = {
    "always-equal-object": f"{IN_PROCESS}; its return value decides every == the tests evaluate",
    "mock-ANY": f"{IN_PROCESS}; unittest.mock.ANY is equal to everything",
    "caller-frame-oracle": f"{IN_PROCESS}; the candidate reads the expected value from the calling test's frame",
    "ctypes-patch-float-eq": f"{IN_PROCESS}; float.__eq__ patched through ctypes, the int-only canaries unaffected",
    "patch-plugin-writer-spare-canaries-by-name": f"{IN_PROCESS}; the plugin's bound writer is a module global, the "
    "canary names have a known pattern",
    "forge-stream-with-stolen-nonce-then-exit": f"{IN_PROCESS}; the nonce is in the plugin's module state, the "
    "canaries can be run to learn their outcome",
    "flip-reports-of-tests-that-called-the-candidate": f"{IN_PROCESS}; a canary never calls the candidate, so "
    "flipping only tests that did spares them",
    "sys-modules-hijack-noop-tests-using-the-candidate": f"{IN_PROCESS}; pytest takes the test module from "
    "sys.modules, which the candidate replaces during its import",
}
ATTACKS = [
    pytest.param(ALWAYS_EQUAL, id="always-equal-object"),
    pytest.param(MOCK_ANY, id="mock-ANY"),
    pytest.param(CALLER_FRAME_ORACLE, id="caller-frame-oracle"),
    pytest.param(PATCH_FLOAT_EQ, id="ctypes-patch-float-eq"),
    pytest.param(PATCH_PLUGIN_WRITER, id="patch-plugin-writer-spare-canaries-by-name"),
    pytest.param(FORGE_WITH_STOLEN_NONCE, id="forge-stream-with-stolen-nonce-then-exit"),
    pytest.param(FLIP_REPORTS_OF_TESTS_THAT_CALLED_ME, id="flip-reports-of-tests-that-called-the-candidate"),
    pytest.param(HIJACK_TEST_MODULE, id="sys-modules-hijack-noop-tests-using-the-candidate"),
    pytest.param(ASSERTION_ERROR_IS_A_SKIP, id="assertionerror-becomes-skip"),
    pytest.param(PATCH_OS_WRITE_AND_JSON, id="patch-os-write-and-json-dumps"),
    pytest.param(ATEXIT_RECORDS_AFTER_FINISH, id="atexit-records-after-finish"),
    pytest.param(FAULTHANDLER_INTO_CHANNEL, id="faulthandler-traceback-into-channel"),
    pytest.param(KEYBOARD_INTERRUPT_FROM_REPR, id="keyboard-interrupt-from-repr"),
]


@pytest.fixture(scope="module")
def median_dir() -> Iterator[Path]:
    directory = _case.visible_case_dir()
    yield directory
    _case.remove(directory)


@pytest.fixture(scope="module", params=["auto", "shared"])
def median_case(request: pytest.FixtureRequest, median_dir: Path) -> tuple[Case, PytestChecker]:
    """The default checker (``auto``: the candidate in its own sandbox when bubblewrap is here) and the fallback
    (``shared``: the candidate imported into the test process, as when the reference cannot cross the boundary)."""
    mode = str(request.param)
    (median_dir / mode).mkdir(mode=0o755)
    case, checker = _case.build(median_dir / mode, candidate_process=mode)
    pre = checker.preflight()
    assert pre is not None and pre.passed, pre
    if mode == "auto" and isolation_available().get("bwrap"):
        assert pre.info["candidate_process"] == "separate", pre.info["candidate_process"]
    return case, checker


def test_the_case_tells_right_from_wrong(median_case: tuple[Case, PytestChecker]) -> None:
    case, checker = median_case
    right = _case.check(case, checker, _case.FIXED)
    assert right.outcome == "pass", (right.detail, right.info.get("output"))
    wrong = _case.check(case, checker, _case.WRONG)
    assert (wrong.outcome, wrong.detail) == ("fail", "tests failed")


@pytest.mark.parametrize("code", ATTACKS)
def test_wrong_candidate_is_a_fail(
    median_case: tuple[Case, PytestChecker], code: str, request: pytest.FixtureRequest
) -> None:
    case, checker = median_case
    attack = _code_id(request)
    if not checker._separate and attack in SHARED_MODE_RESIDUAL:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"scored pass: {SHARED_MODE_RESIDUAL[attack]}"))
    result = _case.check(case, checker, code)
    assert result.outcome == "fail", (result.detail, result.info.get("output", "")[-1500:])


def _code_id(request: pytest.FixtureRequest) -> str:
    """The attack's id (the ``code`` parameter's)."""
    code = request.node.callspec.params["code"]
    return next(str(p.id) for p in ATTACKS if p.values[0] == code)
