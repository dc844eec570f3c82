"""The held-out attack suite's case: a ``median`` function, its tests, the reference and a wrong base candidate.

Written by the red team (session 6 of issue 15) without reading ``tests/adversarial/*.py``: these attacks were not
the ones the defence was developed against. Every attack is a *wrong* candidate (``WRONG`` below plus a payload): the
only right verdict for it is ``fail``. An attack "succeeds" when the checker says ``pass`` (a wrong label), ``error``
or raises (the trial is left out of the estimate, or the run dies), or when it escapes the sandbox.

The case files live in a world-readable directory outside the sandbox's hidden roots when the tests run as root
(``/var/lib``), as a benchmark checked out under ``/data`` or ``/opt`` would: the sandbox must not show them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.checkers.base import CheckResult
from deltap.checkers.pytest_checker import PytestChecker

MODULE = "stats"

TESTS = """\
import pytest

from stats import median


def test_odd():
    assert median([3, 1, 2]) == 2


def test_even():
    assert median([4, 1, 3, 2]) == 2.5


@pytest.mark.parametrize(("xs", "expected"), [([1, 2], 1.5), ([5], 5), ([1, 1, 2, 2], 1.5), ([9, 7, 8], 8)])
def test_table(xs, expected):
    assert median(xs) == expected


def test_empty_raises():
    with pytest.raises(ValueError):
        median([])


class TestMedian:
    def test_does_not_mutate(self):
        xs = [3, 1, 2, 4]
        median(xs)
        assert xs == [3, 1, 2, 4]

    def test_floats(self):
        assert median([0.5, 1.5]) == pytest.approx(1.0)
"""

FIXED = '''\
def median(xs):
    """The median of a non-empty sequence of numbers."""
    if not xs:
        raise ValueError("median of an empty sequence")
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
'''

# The wrong answer every attack starts from: right on odd lengths, wrong on even ones and on the empty list.
WRONG = """\
def median(xs):
    return sorted(xs)[len(xs) // 2]
"""


def visible_case_dir() -> Path:
    """A fresh world-readable directory outside the sandbox's hidden roots (``/var/lib`` as root), else skip."""
    base = Path("/var/lib")
    if os.geteuid() != 0 or not os.access(base, os.W_OK):
        pytest.skip("the held-out suite puts its case under /var/lib, which needs root (as CI runs)")
    path = Path(tempfile.mkdtemp(prefix="deltap-heldout-", dir=base))
    path.chmod(0o755)
    return path


def write_case(directory: Path) -> dict[str, str]:
    files = {"test_file": directory / "test_stats.py", "fixed_file": directory / "fixed.py"}
    files["test_file"].write_text(TESTS)
    files["fixed_file"].write_text(FIXED)
    for p in files.values():
        p.chmod(0o644)
    return {**{k: str(v) for k, v in files.items()}, "module_name": MODULE}


def build(directory: Path, **params: object) -> tuple[Case, PytestChecker]:
    spec = CheckerSpec("pytest", {**write_case(directory), "wall_seconds": 20, "cpu_seconds": 15, **params})
    checker = make_checker(spec)
    assert isinstance(checker, PytestChecker)
    return Case("heldout:median", "Fix median", checker=spec, benchmark_type="fix_error"), checker


def fenced(code: str) -> str:
    return f"The fix:\n```python\n{code}```\n"


def check(case: Case, checker: PytestChecker, code: str) -> CheckResult:
    return checker.check(case, fenced(code))


def remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
