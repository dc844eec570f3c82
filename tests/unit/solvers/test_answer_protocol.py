"""The answer protocol line (issue 34, item 1): the instruction it renders, how it is chosen, and resumes across it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError, FormatError
from deltap.mining.engine import mine
from deltap.mining.manifest import ManifestChanged
from deltap.solvers import make_solver
from deltap.solvers.base import SolveRequest
from deltap.solvers.prompts import (
    DEFAULT_INSTRUCTIONS,
    DEFAULT_TEMPLATE,
    HOSTED_PROTOCOL,
    PROTOCOL_DEFAULTS,
    PROTOCOL_INSTRUCTIONS,
    PromptTemplate,
    for_hosted,
    render_prompt,
    template_fingerprint,
)
from deltap.solvers.simulated import SimulatedTruth
from tests.helpers import answering_solver, string_case


def _user(template: PromptTemplate, btype: str = "api_understanding") -> str:
    options = {"A": "x", "B": "y"} if btype == "multiple_choice" else None
    return render_prompt(SolveRequest("c", "Which one?", (), btype, options), template)[1]["content"]


def test_protocol_on_asks_for_a_final_answer_line_per_type() -> None:
    on = PromptTemplate(answer_protocol="on")
    assert _user(on).endswith("on a final line of the form:\nAnswer: <identifier>")
    assert "Answer: <letter>" in _user(on, "multiple_choice")
    assert _user(on, "fix_error").endswith(DEFAULT_INSTRUCTIONS["fix_error"])  # no protocol for code fixes
    off = PromptTemplate(answer_protocol="off")
    assert _user(off).endswith(DEFAULT_INSTRUCTIONS["api_understanding"])
    assert "Answer:" not in _user(off, "multiple_choice")


def test_auto_follows_the_measured_defaults() -> None:
    for btype in PROTOCOL_INSTRUCTIONS:
        expected = PROTOCOL_INSTRUCTIONS[btype] if PROTOCOL_DEFAULTS[btype] else DEFAULT_INSTRUCTIONS[btype]
        assert DEFAULT_TEMPLATE.instruction(btype) == expected


def test_a_hosted_solver_asks_for_the_line_unless_told_not_to() -> None:
    assert HOSTED_PROTOCOL == "on"
    for kind in ("openai", "gemini"):
        options = {"base_url": "http://127.0.0.1:9/v1"} if kind == "openai" else {"api_key": "k"}
        try:
            solver = make_solver(kind, model="m", **options)
        except DeltapError as exc:  # the backend's optional SDK is not installed
            assert kind == "gemini" and "install" in str(exc)
            continue
        template = solver.template  # type: ignore[attr-defined]
        assert template.answer_protocol == "on"
        assert _user(template).endswith("Answer: <identifier>")
        assert "Answer: <letter>" in _user(template, "multiple_choice")
        assert _user(template, "fix_error").endswith(DEFAULT_INSTRUCTIONS["fix_error"])
        told = make_solver(kind, model="m", answer_protocol="off", **options)
        assert told.template.answer_protocol == "off"  # type: ignore[attr-defined]
        assert "Answer:" not in _user(told.template)  # type: ignore[attr-defined]
    # a template the user gives keeps its own fields; only "auto" is resolved
    mine_ = PromptTemplate(system="Be brief.")
    assert for_hosted(mine_) == PromptTemplate(system="Be brief.", answer_protocol="on")
    assert for_hosted(PromptTemplate(answer_protocol="off")).answer_protocol == "off"
    assert for_hosted(None) == PromptTemplate(answer_protocol="on")


def test_a_user_instruction_wins_over_the_protocol() -> None:
    template = PromptTemplate(answer_protocol="on", instructions={"api_understanding": "Name it."})
    assert _user(template).endswith("Name it.")


def test_unknown_protocol_setting_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="answer_protocol must be one of auto, on, off"):
        PromptTemplate.from_dict({"answer_protocol": "yes"})
    path = tmp_path / "t.yaml"
    path.write_text("answer_protocol: on\n")  # YAML reads `on` as true: the file must quote it
    with pytest.raises(FormatError, match="must be a string"):
        PromptTemplate.from_file(path)
    path.write_text("answer_protocol: 'on'\n")
    assert PromptTemplate.from_file(path).answer_protocol == "on"


def test_make_solver_takes_the_protocol_and_a_template_file(tmp_path: Path) -> None:
    solver = make_solver("openai", model="m", base_url="http://127.0.0.1:9/v1", answer_protocol="on")
    assert solver.template.answer_protocol == "on"  # type: ignore[attr-defined]
    solver = make_solver("openai", model="m", base_url="http://127.0.0.1:9/v1", answer_protocol=False)
    assert solver.template.answer_protocol == "off"  # type: ignore[attr-defined]
    path = tmp_path / "t.yaml"
    path.write_text("system: Be brief.\n")
    solver = make_solver("openai", model="m", base_url="http://127.0.0.1:9/v1", template=str(path))
    assert solver.template.system == "Be brief."  # type: ignore[attr-defined]
    with pytest.raises(DeltapError, match="answer_protocol must be one of"):
        make_solver("openai", model="m", base_url="http://127.0.0.1:9/v1", answer_protocol="maybe")
    with pytest.raises(DeltapError, match="renders no prompt"):
        make_solver("simulated", answer_protocol="on")


def test_the_template_digest_of_an_unchanged_template_is_the_one_logged_before_the_protocol() -> None:
    fingerprint = template_fingerprint(DEFAULT_TEMPLATE)
    assert "answer_protocol" not in fingerprint  # auto: the fields a template had before issue 34
    assert template_fingerprint(PromptTemplate(answer_protocol="on"))["answer_protocol"] == "on"


def test_a_run_resumed_with_the_other_protocol_setting_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(30)])
    opts = {"budget": 16, "n_placebo": 2, "coalitions": False, "seed": 3}

    def solver(protocol: str) -> object:
        s = answering_solver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, seed=1)
        s.template = PromptTemplate(answer_protocol=protocol)  # type: ignore[attr-defined]
        return s

    mine([string_case("a")], corpus, solver("off"), out=tmp_path, **opts)  # type: ignore[arg-type]
    again = mine([string_case("a")], corpus, solver("off"), out=tmp_path, **opts)  # type: ignore[arg-type]
    assert again.run["calls_this_process"] == 0
    with pytest.raises(ManifestChanged) as err:
        mine([string_case("a")], corpus, solver("on"), out=tmp_path, **opts)  # type: ignore[arg-type]
    message = str(err.value)
    assert "prompt changed in 1 case(s) [a]" in message
    assert "answer protocol line" in message and "answer_protocol=off or on" in message
