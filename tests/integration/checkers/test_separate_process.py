"""The pytest checker's separate-process mode end to end (real sandboxes): what crosses the boundary, and when the
checker falls back to importing the candidate into the test process."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker, pytest_checker
from deltap.checkers.pytest_checker import PytestChecker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not pytest_checker._separation_available(),
        reason="separate-process mode needs bubblewrap, or root with PID namespaces and the user nobody",
    ),
]

TESTS = """\
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
"""

FIXED = """\
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
"""

WRONG = FIXED.replace("    xs.sort()\n", "    xs = sorted(xs)\n")  # sorts a copy: the caller's list is unchanged


def _checker(root: Path, tests: str, fixed: str, module: str, mode: str = "auto") -> tuple[Case, PytestChecker]:
    (root / f"test_{module}.py").write_text(tests)
    (root / "fixed.py").write_text(fixed)
    spec = CheckerSpec(
        "pytest",
        {
            "test_file": str(root / f"test_{module}.py"),
            "fixed_file": str(root / "fixed.py"),
            "module_name": module,
            "candidate_process": mode,
            "wall_seconds": 20,
        },
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


# The test passes an object of its own class (not callable, not plain data) into the candidate: it cannot cross.
CLASS_TESTS = """\
from shapes import area


class Square:
    def __init__(self, side):
        self.side = side


def test_area():
    assert area(Square(3)) == 9
"""
CLASS_FIXED = "def area(shape):\n    return shape.side ** 2\n"


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
    if result.info["candidate_sandbox"]["backend"] == "legacy":  # unshare exits 1 and does not pass the signal on
        assert "the candidate's process ended" in result.detail, result.detail
    else:
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


# -- issue 24: wrong code a model writes by accident must not pass in separate mode ------------------------------------
# Every test below insists on separate mode (``candidate_process: separate``): the reference must pass that way, and
# the wrong candidate must come out ``fail``. On the old code each of these was scored ``pass`` (or the reference could
# not run separated at all, which made the check an ``error``).

ACC_TESTS = """\
import pytest

from acc import *
from acc import parse, is_even, count_words, magnitude


def test_good_input():
    assert parse("3") == 3


def test_exact_types():
    assert is_even(4) is True
    assert isinstance(count_words("a b"), int) and count_words("a b") == 2


def test_magnitude():
    assert magnitude(-3) == abs(-3)


# last: a candidate that dies on bad input must not take the tests before it down with it
def test_bad_input_is_refused():
    with pytest.raises(Exception):
        parse("x")


def test_bad_input_is_refused_somehow():
    try:
        parse("y")
    except Exception:
        return
    raise AssertionError("accepted")
"""

ACC_FIXED = """\
def parse(text):
    if not text.isdigit():
        raise ValueError(f"not a number: {text}")
    return int(text)


def is_even(n):
    return n % 2 == 0


def count_words(text):
    return len(text.split())


def widen_rows(grid):
    for row in grid:
        row.append(0)


def grow_lists(d):
    for v in d.values():
        v.append(v[-1])


def magnitude(x):
    return abs(x)
"""


def _bad_parse(body: str, header: str = "") -> str:
    """The reference with ``parse`` handling bad input by ``body`` instead of raising."""
    fixed = ACC_FIXED.replace('        raise ValueError(f"not a number: {text}")\n', body)
    return header + fixed


ACCIDENTS = {
    "sys-exit": _bad_parse("        sys.exit(1)\n", "import sys\n"),
    "raise-system-exit": _bad_parse("        raise SystemExit('bad input')\n"),
    "keyboard-interrupt": _bad_parse("        raise KeyboardInterrupt\n"),
    "os-exit": _bad_parse("        os._exit(1)\n", "import os\n"),
    "loops-until-killed": _bad_parse("        while True:\n            pass\n"),
    "segfault": _bad_parse("        ctypes.string_at(0)\n", "import ctypes\n"),
    "abort": _bad_parse("        os.abort()\n", "import os\n"),
    "returns-the-exception": _bad_parse("        return ValueError(f'not a number: {text}')\n"),
    "returns-what-cannot-cross": _bad_parse("        return object()\n"),
    "numpy-scalars": "import numpy\n"
    + ACC_FIXED.replace("return n % 2 == 0", "return numpy.int64(n) % 2 == 0").replace(
        "return len(text.split())", "return numpy.int64(len(text.split()))"
    ),
    "shadowed-builtin": ACC_FIXED.replace("    return abs(x)\n", "    return x\n") + "\n\ndef abs(x):\n    return x\n",
}


@pytest.fixture(scope="module")
def accidents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, PytestChecker]:
    case, checker = _checker(tmp_path_factory.mktemp("accidents"), ACC_TESTS, ACC_FIXED, "acc", mode="separate")
    checker.limits = type(checker.limits)(wall_seconds=20, cpu_seconds=3)
    pre = checker.preflight()
    assert pre is not None and pre.passed and pre.info["candidate_process"] == "separate", pre
    return case, checker


def test_the_reference_passes_separated(accidents: tuple[Case, PytestChecker]) -> None:
    case, checker = accidents
    result = checker.check(case, _fenced(ACC_FIXED))
    assert (result.outcome, result.info["candidate_process"]) == ("pass", "separate"), result.info.get("output")


NESTED_TESTS = """\
from acc import widen_rows, grow_lists


def test_nested_rows_change_in_place():
    row = [1]
    grid = [row, [2]]
    widen_rows(grid)
    assert row == [1, 0] and grid == [[1, 0], [2, 0]]


def test_dict_of_lists_changes_in_place():
    inner = [1]
    d = {"a": inner}
    grow_lists(d)
    assert inner == [1, 1] and d == {"a": [1, 1]}
"""


def test_nested_in_place_changes_are_carried_back_in_full(tmp_path: Path) -> None:
    case, checker = _checker(tmp_path, NESTED_TESTS, ACC_FIXED, "acc", mode="separate")
    right = checker.check(case, _fenced(ACC_FIXED))
    assert (right.outcome, right.info.get("candidate_process")) == ("pass", "separate"), right.detail
    copies = ACC_FIXED.replace("        row.append(0)\n", "        row = row + [0]\n")  # changes copies only
    wrong = checker.check(case, _fenced(copies))
    assert wrong.outcome == "fail", wrong.detail


@pytest.mark.parametrize("name", sorted(ACCIDENTS), ids=sorted(ACCIDENTS))
def test_an_accident_is_a_fail(accidents: tuple[Case, PytestChecker], name: str) -> None:
    case, checker = accidents
    result = checker.check(case, _fenced(ACCIDENTS[name]))
    assert result.outcome == "fail", (
        f"{name}: {result.outcome} ({result.detail})\n{result.info.get('output', '')[-2000:]}"
    )


def test_a_hang_is_a_fail_before_the_test_process_times_out(accidents: tuple[Case, PytestChecker]) -> None:
    case, checker = accidents
    hang = _bad_parse("        time.sleep(3600)\n", "import time\n")
    result = checker.check(case, _fenced(hang))
    assert result.outcome == "fail", result.detail
    assert "did not answer" in result.detail or "candidate" in result.detail, result.detail


# -- issue 24: agent-style tests (callbacks in, objects of the candidate's classes out) run separated -------------------

AGENT_TESTS = """\
import pytest

from agent import Agent, Step, apply_all

EXPECTED = [2, 4]


def test_callback_results():
    assert apply_all(lambda x: x * 2, [1, 2]) == EXPECTED


def test_agent_calls_its_tools_and_keeps_history():
    seen = []

    def tool(query):
        seen.append(query)
        return query.upper()

    agent = Agent(tools={"shout": tool})
    step = agent.run("shout", "hi")
    assert isinstance(step, Step) and isinstance(agent, Agent)
    assert step.output == "HI" and step.tool == "shout"
    assert step == Step("shout", "HI")
    assert seen == ["hi"] and agent.history == [step]
    assert len(agent) == 1 and repr(step) == "Step(tool='shout', output='HI')"


def test_a_callback_that_raises_reaches_the_test_unchanged():
    class Stop(Exception):
        pass

    def tool(query):
        raise Stop(query)

    with pytest.raises(Stop, match="q"):
        Agent(tools={"t": tool}).run("t", "q")


def test_unknown_tool():
    with pytest.raises(KeyError):
        Agent(tools={}).run("missing", "q")
"""

AGENT_FIXED = """\
from dataclasses import dataclass


def apply_all(f, xs):
    return [f(x) for x in xs]


@dataclass
class Step:
    tool: str
    output: str


class Agent:
    def __init__(self, tools):
        self.tools = tools
        self.history = []

    def run(self, tool, query):
        step = Step(tool, self.tools[tool](query))
        self.history.append(step)
        return step

    def __len__(self):
        return len(self.history)
"""

AGENT_WRONG = {
    # reaches the test module through the callback's globals and rewrites the expected value
    "callback-globals": AGENT_FIXED.replace(
        "    return [f(x) for x in xs]\n", '    f.__globals__["EXPECTED"] = [0]\n    return [0]\n'
    ),
    "forgets-history": AGENT_FIXED.replace("        self.history.append(step)\n", ""),
    "wrong-output": AGENT_FIXED.replace("self.tools[tool](query)", "query"),
}


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Case, PytestChecker]:
    return _checker(tmp_path_factory.mktemp("agents"), AGENT_TESTS, AGENT_FIXED, "agent")


def test_agent_style_tests_run_separated(agents: tuple[Case, PytestChecker]) -> None:
    case, checker = agents
    pre = checker.preflight()
    assert pre is not None and pre.passed and pre.info["candidate_process"] == "separate", pre
    right = checker.check(case, _fenced(AGENT_FIXED))
    assert (right.outcome, right.info["candidate_process"]) == ("pass", "separate"), right.info.get("output")


@pytest.mark.parametrize("name", sorted(AGENT_WRONG), ids=sorted(AGENT_WRONG))
def test_a_wrong_agent_is_a_fail(agents: tuple[Case, PytestChecker], name: str) -> None:
    case, checker = agents
    result = checker.check(case, _fenced(AGENT_WRONG[name]))
    assert result.outcome == "fail", f"{name}: {result.detail}\n{result.info.get('output', '')[-2000:]}"


RAISES_TESTS = """\
import pytest

from acc import parse


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        parse("x")


def test_good_input():
    assert parse("3") == 3
"""

REPLACES_RAISES = (
    "import contextlib\nimport pytest\n\npytest.raises = lambda *a, **k: contextlib.suppress(BaseException)\n\n\n"
    + _bad_parse("        return 0\n")
)


@pytest.mark.parametrize("mode", ["shared", "auto"])
def test_a_replaced_pytest_raises_is_caught_by_the_canaries(tmp_path: Path, mode: str) -> None:
    case, checker = _checker(tmp_path, RAISES_TESTS, ACC_FIXED, "acc", mode=mode)
    assert checker.check(case, _fenced(ACC_FIXED)).outcome == "pass"
    result = checker.check(case, _fenced(REPLACES_RAISES))
    assert result.outcome == "fail", result.detail
    if mode == "shared":
        assert result.detail.startswith("tampering detected"), result.detail


# -- issue 24: labels say where the candidate ran; --require-separate refuses shared checks ----------------------------


def test_require_separate_refuses_a_shared_check_before_any_solver_call(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.errors import DeltapError
    from deltap.mining.engine import _separate_only, mine
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

    for sub in ("shared", "separate"):
        (tmp_path / sub).mkdir()
    shared_case, shared = _checker(tmp_path / "shared", CLASS_TESTS, CLASS_FIXED, "shapes")
    separate_case, _ = _checker(tmp_path / "separate", TESTS, FIXED, "queue_tools")
    corpus = Corpus([Document(f"d{i}", f"text {i}") for i in range(6)])
    solver = SimulatedSolver({"fix:shapes": SimulatedTruth(0.5)}, seed=1)
    with pytest.raises(DeltapError, match=r"case 'fix:shapes': --require-separate, but .* test process: shared \("):
        mine([separate_case, shared_case], corpus, solver, require_separate=True, n_placebo=2, budget=8)
    assert solver.calls == 0
    # the separable case passes the guard, and its checker (preflight done) is the one the run uses
    built: list[PytestChecker] = []

    def build(case: Case) -> PytestChecker:
        built.append(make_checker(case.checker))  # type: ignore[arg-type]
        return built[-1]

    factory = _separate_only([separate_case], build)
    made = factory(separate_case)
    assert len(built) == 1 and made is built[0]
    assert isinstance(made, PytestChecker) and made.separate and made.id.endswith(",process=separate)")
    assert shared.candidate_process_label.startswith("shared (") and shared.id.endswith(",process=shared)")
