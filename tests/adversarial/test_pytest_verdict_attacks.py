"""Attacks on the pytest checker's verdict: every candidate here is WRONG (``add`` subtracts, or handles only some
inputs) and tries to be reported as a pass anyway. Each must come out ``fail`` — never ``pass``, and never
``error`` (errors are left out of the estimate, so a forged infrastructure error is also a win for the attacker).

Real subprocesses in the real sandbox; run under the heavy lock (``flock /tmp/deltap-heavy.lock``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.checkers.pytest_checker import PytestChecker

pytestmark = pytest.mark.integration

TEST_FILE = """\
from solution import add


def test_add():
    assert add(2, 3) == 5


def test_add_negative():
    assert add(-2, -3) == -5


def test_add_zero():
    assert add(0, 7) == 7
"""
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"

# Writes ``text`` into every open file descriptor (the captured stdout, pytest's saved copies of it, any result
# channel), the way a candidate forges a summary where the checker might read one.
SPRAY = """
import os as _os
def _spray(text):
    for _fd in range(1, 256):
        try:
            _os.write(_fd, text.encode())
        except OSError:
            pass
"""
FAKE_SUMMARY = "\\n============================== 3 passed in 0.01s ===============================\\n"

ATTACKS = {
    "patch-testreport": """
import _pytest.reports as _r
_orig = _r.TestReport.__init__
def _init(self, *a, **k):
    _orig(self, *a, **k)
    self.outcome = "passed"
    self.longrepr = None
_r.TestReport.__init__ = _init
"""
    + WRONG,
    "patch-function-runtest": """
import _pytest.python as _p
_p.Function.runtest = lambda self: None
"""
    + WRONG,
    "patch-call-and-report": """
import _pytest.runner as _run
_orig = _run.call_and_report
def _car(item, when, log=True, **kw):
    rep = _orig(item, when, log=False, **kw)
    rep.outcome = "passed"
    rep.longrepr = None
    if log:
        item.ihook.pytest_runtest_logreport(report=rep)
    return rep
_run.call_and_report = _car
"""
    + WRONG,
    "noop-every-test-function-at-collection": """
import _pytest.python as _p
_orig = _p.PyCollector.collect
def _collect(self):
    mod = getattr(self, "obj", None)
    for _k, _v in list(vars(mod).items()) if mod is not None else []:
        if _k.startswith("test") and callable(_v):
            setattr(mod, _k, lambda: None)
    return _orig(self)
_p.PyCollector.collect = _collect
"""
    + WRONG,
    "rewrite-tests-and-rerun": SPRAY
    + """
import glob, subprocess, sys, os
_here = os.path.dirname(os.path.abspath(sys.argv[-1]))
for _t in glob.glob(os.path.join(_here, "test_*.py")) + glob.glob("test_*.py"):
    try:
        open(_t, "w").write("def test_ok():\\n    pass\\n")
    except OSError:
        pass
_out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sys.argv[1:]],
                      capture_output=True, text=True).stdout
_spray(_out)
os._exit(0)
"""
    + WRONG,
    "conftest-forces-passed-and-reexec": """
import os, sys
_CONF = '''
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    rep = out.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
'''
for _d in {os.getcwd(), os.path.dirname(os.path.abspath(sys.argv[-1]))}:
    try:
        open(os.path.join(_d, "conftest.py"), "w").write(_CONF)
    except OSError:
        pass
if not os.environ.get("ATTACK_REEXEC"):
    os.environ["ATTACK_REEXEC"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]])
"""
    + WRONG,
    "fake-summary-into-inherited-fds-then-exit0": SPRAY
    + f"""
import os
_spray("{FAKE_SUMMARY}")
os._exit(0)
"""
    + WRONG,
    "fake-json-records-into-fds": SPRAY
    + """
import json, os
for _name in ("test_add", "test_add_negative", "test_add_zero"):
    for _when in ("setup", "call", "teardown"):
        _spray(json.dumps({"kind": "report", "id": "test_solution.py::" + _name, "when": _when,
                           "outcome": "passed"}) + "\\n")
_spray(json.dumps({"kind": "finish", "exitstatus": 0}) + "\\n")
os._exit(0)
"""
    + WRONG,
    "atexit-prints-passing-summary": SPRAY
    + f"""
import atexit, os
def _lie():
    _spray("{FAKE_SUMMARY}")
    os._exit(0)
atexit.register(_lie)
"""
    + WRONG,
    "skip-what-it-cannot-handle": """
import pytest
def add(a, b):
    if a <= 0 or b <= 0:
        pytest.skip("unsupported input")
    return a + b
""",
    "xfail-what-it-cannot-handle": """
import pytest
def add(a, b):
    if a <= 0 or b <= 0:
        pytest.xfail("unsupported input")
    return a + b
""",
    "pytest-exit-0-at-import": """
import pytest
pytest.exit("all good", returncode=0)
"""
    + WRONG,
    "sys-exit-0-at-import": "import sys\nsys.exit(0)\n" + WRONG,
    "sys-exit-1-at-import": "import sys\nsys.exit(1)\n" + WRONG,
    "os-exit-0-at-import": "import os\nos._exit(0)\n" + WRONG,
    "kill-own-parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + WRONG,
    "kill-every-process-it-can": """
import os, signal
for _pid in range(1, 400):
    if _pid != os.getpid():
        try:
            os.kill(_pid, signal.SIGKILL)
        except OSError:
            pass
"""
    + WRONG,
    "deselect-failing-tests": """
import _pytest.main as _m
_orig = _m.Session.perform_collect
def _pc(self, *a, **k):
    items = _orig(self, *a, **k)
    keep = [i for i in items if i.name == "test_add_zero"]
    items[:] = keep
    self.items = keep
    self.testscollected = len(keep)
    return keep
_m.Session.perform_collect = _pc
def add(a, b):
    return b if a == 0 else a - b
""",
    "mark-everything-skip-at-import": """
import _pytest.python as _p
import pytest
_orig = _p.Function.runtest
def _rt(self):
    pytest.skip("not today")
_p.Function.runtest = _rt
"""
    + WRONG,
    "strip-assertions-via-builtins": """
import builtins
class _Quiet(Exception):
    pass
builtins.AssertionError = _Quiet
"""
    + WRONG,
    "segfault-at-import": "import ctypes\nctypes.string_at(0)\n" + WRONG,
    "sleep-past-the-timeout": "import time\ntime.sleep(3600)\n" + FIXED,
    "fork-bomb": """
import os
def add(a, b):
    while True:
        try:
            os.fork()
        except OSError:
            pass
""",
}

# Attacks whose candidate ends the run before pytest can report: the verdict must still be fail.
SHORT_WALL = {"sleep-past-the-timeout", "fork-bomb"}


@pytest.fixture(scope="module", params=["auto", "shared"])
def checker(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> PytestChecker:
    """Both modes: ``auto`` (the candidate in its own sandbox where bubblewrap is) and ``shared`` (imported into the
    test process: the fallback, where the canaries and the private channel are the defence)."""
    root = tmp_path_factory.mktemp("verdict-attacks")
    (root / "test_solution.py").write_text(TEST_FILE)
    (root / "fixed.py").write_text(FIXED)
    spec = CheckerSpec(
        "pytest",
        {
            "test_file": str(root / "test_solution.py"),
            "fixed_file": str(root / "fixed.py"),
            "module_name": "solution",
            "wall_seconds": 20,
            "cpu_seconds": 10,
            "max_processes": 32,
            "candidate_process": request.param,
        },
    )
    made = make_checker(spec)
    assert isinstance(made, PytestChecker)
    pre = made.preflight()
    assert pre is not None and pre.outcome == "pass", pre
    return made


def _case(checker: PytestChecker) -> Case:
    return Case("fix:add", "Fix add", checker=CheckerSpec("pytest", {}), benchmark_type="fix_error")


def fenced(code: str) -> str:
    return f"Here is the fix:\n```python\n{textwrap.dedent(code)}```\n"


def test_the_reference_passes_and_a_plain_wrong_answer_fails(checker: PytestChecker) -> None:
    case = _case(checker)
    assert checker.check(case, fenced(FIXED)).outcome == "pass"
    wrong = checker.check(case, fenced(WRONG))
    assert wrong.outcome == "fail", wrong


@pytest.mark.parametrize("name", sorted(ATTACKS), ids=sorted(ATTACKS))
def test_attack_is_a_fail(checker: PytestChecker, name: str, tmp_path: Path) -> None:
    if name in SHORT_WALL:
        from dataclasses import replace

        checker = PytestChecker(
            checker.test_file,
            checker.module_name,
            checker.fixed_file,
            replace(checker.limits, wall_seconds=6, cpu_seconds=4),
            candidate_process=checker.candidate_process,
        )
    result = checker.check(_case(checker), fenced(ATTACKS[name]))
    assert result.outcome == "fail", (
        f"{name}: {result.outcome} ({result.detail})\n{result.info.get('output', '')[-1500:]}"
    )


def test_test_files_are_unchanged_after_an_attack(checker: PytestChecker) -> None:
    before = checker.test_file.read_bytes()
    checker.check(_case(checker), fenced(ATTACKS["rewrite-tests-and-rerun"]))
    checker.check(_case(checker), fenced(ATTACKS["conftest-forces-passed-and-reexec"]))
    assert checker.test_file.read_bytes() == before
    assert not (checker.test_file.parent / "conftest.py").exists()
    # and a correct answer still passes afterwards: nothing the attacks wrote leaked into the next run
    assert checker.check(_case(checker), fenced(FIXED)).outcome == "pass"
