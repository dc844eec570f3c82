"""Prompt rendering: the structured-injection format, canonical order, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Document
from deltap.errors import DeltapError, FormatError
from deltap.solvers.base import SolveRequest
from deltap.solvers.prompts import PromptTemplate, prompt_hash, render_context, render_prompt
from deltap.trials.request import request_from_case

DOCS = (
    Document("google.adk.agents.llm_agent.LlmAgent", "Class LlmAgent:\nLLM-based Agent implementation..."),
    Document("google.adk.tools.function_tool.FunctionTool", "Class FunctionTool:\nA tool that wraps a {function}."),
)


def test_structured_injection_format_exactly() -> None:
    messages = render_prompt(SolveRequest("c1", "What wraps a function?", DOCS))
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[1 - 1]["content"]
    expected_context = (
        "DOCUMENTATION CONTEXT:\n"
        "The following documents are available for reference. Use them to answer the query.\n\n"
        "[START_DOCUMENT: google.adk.agents.llm_agent.LlmAgent]\n"
        "Class LlmAgent:\nLLM-based Agent implementation...\n"
        "[END_DOCUMENT]\n\n"
        "[START_DOCUMENT: google.adk.tools.function_tool.FunctionTool]\n"
        "Class FunctionTool:\nA tool that wraps a {function}.\n"  # braces in documents are not interpreted
        "[END_DOCUMENT]"
    )
    assert system.endswith(expected_context)
    assert messages[1]["content"].startswith("What wraps a function?\n\nAnswer with the exact identifier only")


def test_documents_keep_the_given_order_and_share_prefixes() -> None:
    a = render_prompt(SolveRequest("c", "Q?", DOCS))[0]["content"]
    b = render_prompt(SolveRequest("c", "Q?", DOCS[::-1]))[0]["content"]
    assert a.index("LlmAgent]") < a.index("FunctionTool]")
    assert b.index("FunctionTool]") < b.index("LlmAgent]")
    one = render_prompt(SolveRequest("c", "Q?", DOCS[:1]))[0]["content"]
    assert a.startswith(one.rsplit("[END_DOCUMENT]", 1)[0])  # a trial with more documents extends the prefix


def test_no_documents_renders_no_context_block() -> None:
    system = render_prompt(SolveRequest("c", "Q?"))[0]["content"]
    assert "DOCUMENTATION CONTEXT" not in system and "START_DOCUMENT" not in system


@pytest.mark.parametrize(
    ("btype", "needle"),
    [
        pytest.param("api_understanding", "exact identifier only", id="identifier"),
        pytest.param("multiple_choice", "letter of the correct option", id="letter"),
        pytest.param("fix_error", "complete fixed source file", id="fixed-file"),
        pytest.param("something_else", "concisely", id="fallback"),
    ],
)
def test_instruction_per_benchmark_type(btype: str, needle: str) -> None:
    user = render_prompt(SolveRequest("c", "Q?", benchmark_type=btype))[1]["content"]
    assert needle in user


def test_options_and_source_are_rendered() -> None:
    req = SolveRequest("c", "Which?", options={"A": "one", "B": "two"}, benchmark_type="multiple_choice")
    assert "Which?\n\nA. one\nB. two\n\nAnswer with the letter" in render_prompt(req)[1]["content"]
    fix = SolveRequest("c", "Fix it", benchmark_type="fix_error", extra={"unfixed_code": "def f():\n    return {1}\n"})
    user = render_prompt(fix)[1]["content"]
    assert "```python\ndef f():\n    return {1}\n```" in user


def test_title_is_added_only_when_the_text_lacks_it() -> None:
    with_title = Document("d1", "Lift and drag at Mach 2.", title="Supersonic wings")
    assert "[START_DOCUMENT: d1]\nSupersonic wings\nLift and drag" in render_context([with_title])
    repeated = Document("d2", "Class BaseAgent\nBase class.", title="BaseAgent")
    assert "[START_DOCUMENT: d2]\nClass BaseAgent\nBase class.\n[END_DOCUMENT]" in render_context([repeated])


def test_template_overrides_from_file(tmp_path: Path) -> None:
    path = tmp_path / "tpl.yaml"
    path.write_text(
        "system: Be brief.\ndocument: '<doc id={doc_id}>{text}</doc>'\ninstructions:\n  api_understanding: Name only.\n"
    )
    tpl = PromptTemplate.from_file(path)
    messages = render_prompt(SolveRequest("c", "Q?", DOCS[:1]), tpl)
    assert messages[0]["content"].startswith("Be brief.\n\nDOCUMENTATION CONTEXT:")
    assert "<doc id=google.adk.agents.llm_agent.LlmAgent>Class LlmAgent:" in messages[0]["content"]
    assert messages[1]["content"].endswith("Name only.")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"documnet": "x"}, "unknown prompt template field", id="typo-field"),
        pytest.param({"user": "{questoin}"}, "unknown placeholder", id="typo-placeholder"),
        pytest.param({"system": 3}, "must be a string", id="not-a-string"),
    ],
)
def test_bad_templates_are_rejected(data: dict[str, object], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        PromptTemplate.from_dict(data)


def test_prompt_hash_is_stable_and_sensitive() -> None:
    m1 = render_prompt(SolveRequest("c", "Q?", DOCS))
    m2 = render_prompt(SolveRequest("other-case-id", "Q?", DOCS))  # case_id is never rendered
    m3 = render_prompt(SolveRequest("c", "Q!", DOCS))
    assert prompt_hash(m1) == prompt_hash(m2) != prompt_hash(m3)
    assert len(prompt_hash(m1)) == 64


def test_request_from_case(tmp_path: Path) -> None:
    mc = Case(
        "mc1",
        "Pick",
        checker=CheckerSpec("multiple_choice", {"correct": "B", "options": {"A": "x", "B": "y"}}),
        benchmark_type="multiple_choice",
        metadata={"options": {"A": "x", "B": "y"}},
    )
    req = request_from_case(mc, DOCS)
    assert req.options == {"A": "x", "B": "y"} and req.documents == DOCS and req.benchmark_type == "multiple_choice"
    unfixed = tmp_path / "unfixed.py"
    unfixed.write_text("x = 1\n")
    fix = Case("f1", "Fix", checker=CheckerSpec("pytest", {"unfixed_file": str(unfixed)}), benchmark_type="fix_error")
    assert request_from_case(fix).extra["unfixed_code"] == "x = 1\n"
    gone = Case(
        "f2",
        "Fix",
        checker=CheckerSpec("pytest", {"unfixed_file": str(tmp_path / "nope.py")}),
        benchmark_type="fix_error",
    )
    with pytest.raises(DeltapError, match="cannot read unfixed_file"):
        request_from_case(gone)


def test_real_adk_case_renders(adk_dir: Path) -> None:
    import warnings

    import deltap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ADK file has one duplicate id, reported by a warning
        corpus = deltap.load_corpus(adk_dir / "corpus_ranked_targets.yaml")
    cases = deltap.load_cases(adk_dir / "api_understanding.yaml", corpus=corpus, on_missing="skip")
    case = cases[0]
    req = request_from_case(case, [corpus[d] for d in case.gold_doc_ids])
    system, user = (m["content"] for m in render_prompt(req))
    assert f"[START_DOCUMENT: {case.gold_doc_ids[0]}]" in system
    assert user.startswith(case.query)
