"""Benchmark YAML (all three benchmark types), gold resolution and the fix_error import parser."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from deltap.cases import fixed_file_imports, read_benchmark_yaml, resolve_gold
from deltap.documents import Corpus, Document
from deltap.errors import DuplicateIdsError, FormatError, MissingIdsError
from deltap.loaders import load_cases


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_three_benchmark_types(tmp_path: Path) -> None:
    (tmp_path / "case1").mkdir()
    (tmp_path / "case1" / "test_agent.py").write_text(
        "from agent import make\n\ndef test_it():\n    assert make() == 1\n"
    )
    (tmp_path / "case1" / "agent.py").write_text("def make():\n    return 0\n")
    (tmp_path / "case1" / "fixed.py").write_text(
        "import os.path\nfrom google.adk.agents import LlmAgent, BaseAgent as BA\nfrom .local import helper\n"
        "from google.adk.tools import *\n\ndef make():\n    return 1\n"
    )
    path = _write(
        tmp_path,
        """
        benchmarks:
        - id: api:one
          question: What is the base class?
          benchmark_type: api_understanding
          answers:
          - answer: BaseAgent
            fully_qualified_class_name: [pkg.agents.base.BaseAgent, pkg.agents.BaseAgent]
          category: Core
        - id: mc:two
          question: Which one runs agents in parallel?
          benchmark_type: multiple_choice
          options: {A: SequentialAgent, B: ParallelAgent, C: LoopAgent}
          correct_answer: B
        - id: fix:three
          question: Fix the agent factory.
          benchmark_type: fix_error
          test_file: case1/test_agent.py
          unfixed_file: case1/agent.py
          fixed_file: case1/fixed.py
        """,
    )
    api, mc, fix = read_benchmark_yaml(path)
    assert api.case_id == "api:one" and api.reference_answer == "BaseAgent"
    assert api.gold_doc_ids == ("pkg.agents.base.BaseAgent", "pkg.agents.BaseAgent")
    assert api.checker.kind == "string_match" and list(api.checker.params["answers"]) == ["BaseAgent"]
    assert api.metadata["category"] == "Core"
    assert mc.checker.kind == "multiple_choice" and mc.checker.params["correct"] == "B"
    assert mc.reference_answer == "B" and mc.metadata["options"]["B"] == "ParallelAgent"
    assert fix.checker.kind == "pytest"
    assert fix.gold_doc_ids == (
        "os.path",
        "google.adk.agents.LlmAgent",
        "google.adk.agents.BaseAgent",
        "google.adk.tools",
    )
    assert fix.metadata["relative_imports"] == [".local.helper"]
    assert Path(fix.checker.params["test_file"]).is_file()
    assert fix.checker.params["module_name"] == "agent"


def test_fixed_file_imports_uses_ast_not_regex() -> None:
    src = 'text = "from fake import Nothing"\n# import commented.out\nif True:\n    from a.b import (C,\n        D)\n'
    assert fixed_file_imports(src) == (["a.b.C", "a.b.D"], [])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("benchmarks: {}\n", "top-level 'benchmarks:' list", id="not-a-list"),
        pytest.param(
            "benchmarks:\n- id: a\n  benchmark_type: api_understanding\n  answers: []\n",
            "missing required field 'question'",
            id="no-question",
        ),
        pytest.param(
            "benchmarks:\n- id: a\n  question: q\n  benchmark_type: essay\n",
            "unknown benchmark_type 'essay'",
            id="bad-type",
        ),
        pytest.param(
            "benchmarks:\n- id: a\n  question: q\n  benchmark_type: multiple_choice\n  options: {A: x}\n  correct_answer: C\n",
            "not one of the options",
            id="bad-letter",
        ),
        pytest.param(
            "benchmarks:\n- id: a\n  question: q\n  benchmark_type: fix_error\n  test_file: t.py\n  unfixed_file: u.py\n  fixed_file: f.py\n",
            "test_file of 'a' not found",
            id="missing-file",
        ),
        pytest.param("benchmarks:\n  - id: a\n   question: [\n", "invalid YAML", id="bad-yaml"),
    ],
)
def test_bad_benchmark_yaml(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(FormatError, match=expected):
        read_benchmark_yaml(_write(tmp_path, body))


def test_bad_entry_error_names_line(tmp_path: Path) -> None:
    body = "benchmarks:\n- id: ok\n  question: q\n  benchmark_type: multiple_choice\n  options: {A: x}\n  correct_answer: A\n- id: broken\n  benchmark_type: api_understanding\n"
    with pytest.raises(FormatError) as info:
        read_benchmark_yaml(_write(tmp_path, body))
    assert info.value.line == 7


def test_duplicate_case_ids(tmp_path: Path) -> None:
    entry = "- id: same\n  question: q\n  benchmark_type: multiple_choice\n  options: {A: x}\n  correct_answer: A\n"
    with pytest.raises(DuplicateIdsError, match="duplicate case ids .*: same"):
        read_benchmark_yaml(_write(tmp_path, "benchmarks:\n" + entry + entry))


def test_resolve_gold_aliases_reexports_and_missing(tmp_path: Path) -> None:
    corpus = Corpus(
        [
            Document("pkg.agents.base.BaseAgent", "t", metadata={"aliases": ["pkg.BaseAgentAlias"]}),
            Document("pkg.runners.Runner", "t"),
            Document("pkg.x.Dup", "t"),
            Document("pkg.y.Dup", "t"),
        ],
        name="tiny",
    )
    body = """
    benchmarks:
    - id: a
      question: q
      benchmark_type: api_understanding
      answers:
      - answer: x
        fully_qualified_class_name: [pkg.agents.base.BaseAgent, pkg.BaseAgentAlias, pkg.Runner, pkg.Dup, other.Thing]
    """
    cases = read_benchmark_yaml(_write(tmp_path, body))
    with pytest.raises(MissingIdsError, match="2 gold document ids not found in tiny: a:other.Thing, a:pkg.Dup"):
        resolve_gold(cases, corpus)
    resolved, missing = resolve_gold(cases, corpus, on_missing="skip")
    assert resolved[0].gold_doc_ids == ("pkg.agents.base.BaseAgent", "pkg.runners.Runner")
    assert missing == {"a": ["pkg.Dup", "other.Thing"]}
    via_loader = load_cases(_write(tmp_path, body), corpus=corpus, on_missing="skip")
    assert via_loader[0].metadata["gold_missing"] == ["pkg.Dup", "other.Thing"]
    assert via_loader[0].metadata["gold_as_given"][-1] == "other.Thing"
