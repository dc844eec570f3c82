"""The extension points are registries: a checker, solver or executor kind registered in one place is seen by
case validation, the factories, the run manifest and the CLI without other edits; a hosted provider written on
HostedChatSolver gets client plumbing (limiter, retries, pacing, usage) for free."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checker_kinds import (
    CHECKER_KINDS,
    CheckerKindInfo,
    checker_id,
    checker_id_parts,
    checker_kinds,
    register_checker_kind,
)
from deltap.checkers import Verdict, make_checker
from deltap.errors import DeltapError
from deltap.execution import EXECUTORS, ExecutorKindInfo, make_executor, register_executor_kind
from deltap.solvers import (
    SOLVERS,
    SolverCapabilities,
    SolverKindInfo,
    make_solver,
    register_solver_kind,
    solver_capabilities,
    solver_kinds,
)
from deltap.solvers.base import SolveRequest
from deltap.solvers.hosted import HostedChatSolver
from deltap.solvers.ratelimit import RateLimits
from deltap.solvers.retry import RetryPolicy


# -- a plug-in checker kind ----------------------------------------------------------------------------------------
class _Palindrome:
    """Passes an answer that reads the same backwards (a checker kind no deltap file knows)."""

    def __init__(self, grammar: str) -> None:
        self.id = checker_id("palindrome", grammar=grammar)

    def check(self, case: Case, answer: str) -> Verdict:
        text = answer.strip().lower()
        return Verdict("pass" if text and text == text[::-1] else "fail", text)


def build_palindrome(params: Mapping[str, Any]) -> _Palindrome:
    return _Palindrome(str(params.get("grammar", "strict")))


@pytest.fixture
def palindrome() -> Iterator[CheckerKindInfo]:
    info = register_checker_kind(
        CheckerKindInfo(
            "palindrome",
            f"{__name__}:build_palindrome",
            "an answer that reads the same backwards",
            grammar=True,
            file_params=("word_list",),
        )
    )
    yield info
    del CHECKER_KINDS["palindrome"]


def test_an_unregistered_checker_kind_is_refused_when_the_spec_is_made() -> None:
    with pytest.raises(DeltapError, match="unknown checker kind 'palindrome'; expected one of string_match"):
        CheckerSpec("palindrome")


def test_a_registered_checker_kind_is_validated_built_and_recorded(palindrome: CheckerKindInfo, tmp_path: Path) -> None:
    from deltap.mining.manifest import checker_files, checker_grammar

    words = tmp_path / "words.txt"
    words.write_text("level\n")
    case = Case(
        "c1", "a palindrome?", checker=CheckerSpec("palindrome", {"word_list": str(words), "grammar": "lenient"})
    )
    assert "palindrome" in checker_kinds(buildable=True)
    checker = make_checker(case.checker)
    assert checker.id == "palindrome(grammar=lenient)"
    assert checker.check(case, "Level").passed and not checker.check(case, "levels").passed
    # the manifest digests the files the kind declares, and records its grammar: no edit of manifest.py
    digests = checker_files(case)
    assert list(digests) == ["word_list"] and len(digests["word_list"]) == 16
    assert checker_grammar(case) == "lenient"
    words.write_text("kayak\n")
    assert checker_files(case)["word_list"] != digests["word_list"]


def test_registering_a_taken_checker_kind_needs_replace() -> None:
    with pytest.raises(DeltapError, match="already registered"):
        register_checker_kind(CheckerKindInfo("regex", None))
    with pytest.raises(DeltapError, match="cannot name a checker kind"):
        register_checker_kind(CheckerKindInfo("a b", None))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            CheckerSpec("string_match", {"answers": ["X"]}),
            "string_match(case_sensitive=False,qualified=either,grammar=grader)",
            id="string_match",
        ),
        pytest.param(
            CheckerSpec("multiple_choice", {"correct": "A", "options": {"A": "x", "B": "y"}}),
            "multiple_choice(grammar=grader)",
            id="multiple_choice",
        ),
        pytest.param(
            CheckerSpec("regex", {"pattern": "a,b"}), "regex('a,b',mode=search,ignore_case=False)", id="regex"
        ),
    ],
)
def test_checker_ids_are_unchanged_by_the_registry(spec: CheckerSpec, expected: str) -> None:
    # ids are stored with every trial: the registry composes them exactly as the checkers did before it
    assert make_checker(spec).id == expected


def test_checker_id_parts_reads_the_key_value_parts() -> None:
    assert checker_id_parts("pytest(test_x.py,module=m,wall=60.0s,sandbox=bwrap,process=separate)") == {
        "module": "m",
        "wall": "60.0s",
        "sandbox": "bwrap",
        "process": "separate",
    }
    assert checker_id_parts("python(m:f)") == {} and checker_id_parts("no parens") == {}
    assert checker_id("k") == "k()" and checker_id("k", "p", a=1) == "k(p,a=1)"


# -- a hosted provider in one small class --------------------------------------------------------------------------
class _Busy(Exception):
    status_code = 429


class _Reply:
    def __init__(self, text: str, prompt: int, completion: int) -> None:
        self.text, self.prompt, self.completion = text, prompt, completion


class FakeHosted(HostedChatSolver):
    """A provider whose API is a list: it fails with 429 every ``busy_every``-th call. Only its own calls are here."""

    provider = "openai"

    def __init__(
        self,
        model: str = "echo-1",
        busy_every: int = 0,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(
            model,
            client=None,
            limiter_key=f"fake:{model}",
            seed=seed,
            retry=RetryPolicy(max_attempts=3, base_delay=0.0, sleep=lambda _s: None),
            limits=RateLimits(requests_per_minute, tokens_per_minute),
        )
        self.id = f"fake:{model}:seed={seed}"
        self.busy_every = busy_every
        self.sent: list[int] = []

    def _chat(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        self.sent.append(max_tokens)
        if self.busy_every and len(self.sent) % self.busy_every == 1:
            raise _Busy("slow down")
        return _Reply("  Runner ", prompt=sum(len(m["content"]) for m in messages) // 4, completion=2)

    def _reply(self, resp: Any) -> tuple[str, dict[str, int], Any]:
        return resp.text, {"prompt_tokens": resp.prompt, "completion_tokens": resp.completion}, None

    def _retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, _Busy)

    def _total_tokens(self, resp: Any) -> int:
        return int(resp.prompt + resp.completion)


def test_a_hosted_provider_gets_retries_usage_pacing_and_answer_tokens_from_the_base() -> None:
    solver = FakeHosted(busy_every=2, requests_per_minute=60_000)
    request = SolveRequest("c1", "Which class runs agents?", benchmark_type="multiple_choice")
    answer = solver.answer(request)
    assert answer.text == "Runner" and answer.solver_id == "fake:echo-1:seed=0"
    assert answer.usage["attempts"] == 2 and solver.attempts == 2  # the 429 was retried
    assert answer.usage["prompt_tokens"] > 0 and answer.usage["completion_tokens"] == 2
    assert solver.sent == [16, 16]  # the answer-token table's openai column for multiple_choice
    assert solver.limiter.key == "fake:echo-1"  # every solver of the run for this endpoint shares its pace
    assert FakeHosted(requests_per_minute=60_000).limiter.inner is solver.limiter.inner
    assert FakeHosted().limiter is None  # no limits: no pacing
    assert solver.describe() == {
        "backend": "openai",
        "model": "echo-1",
        "seed": 0,
        "temperature": 0,
        "max_tokens": {"api_understanding": 32, "multiple_choice": 16, "fix_error": 2048, "beir": 128},
    }
    assert solver_capabilities(solver).hosted


def test_a_hosted_provider_must_write_its_calls() -> None:
    class Half(HostedChatSolver):
        def _chat(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
            return None

    with pytest.raises(TypeError, match="abstract"):
        Half("m", None, "k")  # type: ignore[abstract]


# -- solver and executor kinds -------------------------------------------------------------------------------------
@pytest.fixture
def fake_hosted_kind() -> Iterator[SolverKindInfo]:
    info = register_solver_kind(
        SolverKindInfo("fakehost", f"{__name__}:FakeHosted", "a fake hosted API", SolverCapabilities(hosted=True))
    )
    yield info
    del SOLVERS["fakehost"]


def test_solver_capabilities_of_the_built_in_kinds() -> None:
    assert solver_kinds(hosted=True) == ("openai", "gemini")
    local = solver_capabilities("local")
    assert (local.hosted, local.deterministic, local.scores, local.tokenizer) == (False, True, True, True)
    assert solver_capabilities("openai").rate_limited and not solver_capabilities("gemini").scores
    assert solver_capabilities("pkg.mod:factory") == SolverCapabilities()
    with pytest.raises(DeltapError, match="unknown solver kind 'nope'"):
        solver_capabilities("nope")


def test_a_registered_solver_kind_is_built_and_declared(fake_hosted_kind: SolverKindInfo) -> None:
    from deltap.execution import SolverSpec

    assert "fakehost" in solver_kinds(hosted=True)
    solver = make_solver("fakehost", model="m2")
    assert isinstance(solver, FakeHosted) and solver.model == "m2"
    assert solver_capabilities(SolverSpec("fakehost", {})).hosted
    with pytest.raises(DeltapError, match="unknown option"):
        make_solver("fakehost", temperature=1)


def test_the_cli_rate_limit_gate_asks_the_registry(
    fake_hosted_kind: SolverKindInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files as _files

    corpus, bench = _files(tmp_path)
    base = ["mine", str(bench), "--corpus", str(corpus), "--retriever", "none", "--budget", "8", "--placebo", "1"]
    with pytest.raises(SystemExit) as exc:
        main([*base, "--out", str(tmp_path / "a"), "--solver", "simulated", "--rpm", "60"])
    assert exc.value.code == 2
    assert "paces the openai and gemini and fakehost solvers, not 'simulated'" in capsys.readouterr().err
    # a hosted kind registered in this test passes the gate and is paced, with no edit of the CLI
    main([*base, "--out", str(tmp_path / "b"), "--solver", "fakehost", "--rpm", "600000", "--pilot", "0"])
    assert (tmp_path / "b" / "run.json").is_file()


class _NoopExecutor:
    slots = 1

    def __init__(self, tag: str = "") -> None:
        self.tag = tag


def test_a_registered_executor_kind_is_built_by_make_executor() -> None:
    register_executor_kind(ExecutorKindInfo("noop", f"{__name__}:_NoopExecutor", "does nothing"))
    try:
        assert "noop" in EXECUTORS
        executor = make_executor("noop", tag="x")
        assert isinstance(executor, _NoopExecutor) and executor.tag == "x"
    finally:
        del EXECUTORS["noop"]
    with pytest.raises(DeltapError, match="unknown executor 'noop'; expected one of inprocess, ray"):
        make_executor("noop")
