"""The pytest checker's separate-process mode end to end (real sandboxes): what crosses the boundary, and when the
checker falls back to importing the candidate into the test process."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker, pytest_checker
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import isolation_available

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not isolation_available().get("bwrap"), reason="separate-process mode needs bubblewrap"),
]

TESTS = '''\
import pytest

import queue_tools
from queue_tools import EmptyError, drain, LIMIT


def test_drain_sorts_in_place_and_returns_the_count():
    xs = [3, 1, 2]
    assert drain(xs) == 3
    assert xs == [1, 2, 3]


def test_custom_exception():
    with pytest.raises(EmptyError, match="nothing"):
        drain([])
    assert issubclass(EmptyError, ValueError)


def test_output_is_captured(capsys):
    queue_tools.shout("hi")
    assert capsys.readouterr().out == "HI\\n"


def test_constant_and_kwargs():
    assert LIMIT == 10
    assert queue_tools.clip([5, 50], limit=LIMIT) == [5, 10]
'''

FIXED = '''\
LIMIT = 10


class EmptyError(ValueError):
    pass


def drain(xs):
    if not xs:
        raise EmptyError("nothing to drain")
    xs.sort()
    return len(xs)


def shout(text):
    print(text.upper())


def clip(xs, limit):
    return [min(x, limit) for x in xs]
'''

WRONG = FIXED.replace("    xs.sort()\n", "    xs = sorted(xs)\n")  # sorts a copy: the caller's list is unchanged


def _checker(root: Path, tests: str, fixed: str, module: str, mode: str = "auto") -> tuple[Case, PytestChecker]:
    (root / f"test_{module}.py").write_text(tests)
    (root / "fixed.py").write_text(fixed)
    spec = CheckerSpec(
        "pytest",
        {"test_file": str(root / f"test_{module}.py"), "fixed_file": str(root / "fixed.py"), "module_name": module,
         "candidate_process": mode, "wall_seconds": 20},
    )
    checker = make_checker(spec)
    assert isinstance(checker, PytestChecker)
    return Case(f"fix:{module}", "Fix it", checker=spec, benchmark_type="fix_error"), checker


def _fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def test_functions_exceptions_constants_output_and_mutation_cross_the_boundary(tmp_path: Path) -> None:
    case, checker = _checker(tmp_path, TESTS, FIXED, "queue_tools")
    pre = checker.preflight()
    assert pre is not None and pre.passed and pre.info["candidate_process"] == "separate", pre
    right = checker.check(case, _fenced(FIXED))
    assert (right.outcome, right.info["candidate_process"]) == ("pass", "separate"), right.info.get("output")
    wrong = checker.check(case, _fenced(WRONG))
    assert (wrong.outcome, wrong.detail) == ("fail", "tests failed")


CLASS_TESTS = '''\
from shapes import Square


def test_area():
    assert Square(3).area() == 9
'''
CLASS_FIXED = "class Square:\n    def __init__(self, side):\n        self.side = side\n\n    def area(self):\n        return self.side ** 2\n"


def test_a_reference_that_cannot_cross_falls_back_to_the_test_process(tmp_path: Path) -> None:
    case, checker = _checker(tmp_path, CLASS_TESTS, CLASS_FIXED, "shapes")
    pre = checker.preflight()
    assert pre is not None and pre.passed
    assert pre.info["candidate_process"].startswith("shared (the reference does not pass in a separate process")
    result = checker.check(case, _fenced(CLASS_FIXED))
    assert result.outcome == "pass" and result.info["candidate_process"].startswith("shared (")


def test_separate_required_but_impossible_is_an_error(tmp_path: Path) -> None:
    case, checker = _checker(tmp_path, CLASS_TESTS, CLASS_FIXED, "shapes", mode="separate")
    result = checker.check(case, _fenced(CLASS_FIXED))
    assert result.outcome == "error"
    assert "candidate_process is 'separate' but the reference does not pass in a separate process" in result.detail


def test_a_candidate_killed_by_its_cpu_limit_is_named(tmp_path: Path) -> None:
    case, checker = _checker(tmp_path, TESTS, FIXED, "queue_tools")
    spin = FIXED.replace("def drain(xs):\n", "def drain(xs):\n    while True:\n        pass\n")
    checker.limits = type(checker.limits)(wall_seconds=12, cpu_seconds=2)
    result = checker.check(case, _fenced(spin))
    assert result.outcome == "fail"
    assert "the candidate's process: killed by signal" in result.detail, result.detail


def test_a_candidate_sandbox_that_never_starts_is_an_error_not_a_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate's code runs only after deltap's server said it started: without that, the environment failed."""
    case, checker = _checker(tmp_path, TESTS, FIXED, "queue_tools")
    assert checker.preflight() is not None and checker._separate
    broken = tmp_path / "server.py"
    broken.write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(pytest_checker, "_REMOTE_SERVER_SOURCE", broken)
    result = checker.check(case, _fenced(WRONG))
    assert (result.outcome, result.detail) == ("error", "the candidate's sandbox did not start (exit status 3)")
