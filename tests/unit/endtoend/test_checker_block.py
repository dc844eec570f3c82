"""How the checker read an end-to-end run's replies (issue 34, session 14): ``results.json``'s ``checker`` block —
the same block ``deltap mine`` writes to run.json (:func:`deltap.mining.readability.readability`, over the end-to-end
trial log) — its line in the CLI summary and the report, its two warnings, and the progress line."""

from __future__ import annotations

import html
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import Case
from deltap.checkers import Verdict, is_declared, unreadable
from deltap.endtoend import EndToEndConfig, System, end_to_end
from deltap.endtoend.progress import EndToEndProgress
from deltap.mining.readability import AnswerLineIgnoredWarning, UnreadableRepliesWarning
from deltap.solvers.prompts import PromptTemplate
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog
from tests.helpers import answer, numbered_corpus, string_case

CHECKER_WARNINGS = (UnreadableRepliesWarning, AnswerLineIgnoredWarning)


class _AskingSolver(SimulatedSolver):
    """A simulated solver whose prompt asks for the final ``Answer:`` line (a hosted chat solver's default)."""

    template = PromptTemplate(answer_protocol="on")


def _cases(n: int = 4) -> list[Case]:
    return [string_case(f"c{i}", gold=("d00",)) for i in range(n)]


def _solver(cases: list[Case], right: str | None = None, wrong: str = "I do not know.", *, asking: bool = True,
            deterministic: bool = False, outcome: str = "pass") -> SimulatedSolver:  # fmt: skip
    """Says ``right`` (default: the case's answer) on success and ``wrong`` on failure; ``asking``: its prompt asks for
    the ``Answer:`` line."""
    cls = _AskingSolver if asking else SimulatedSolver
    truth = {c.case_id: SimulatedTruth(0.3, {"d00": 0.5}) for c in cases}
    answers = {c.case_id: (right or "{}").format(answer(c.case_id)) for c in cases}
    return cls(truth, answers=answers, wrong_answer=wrong, seed=1, deterministic=deterministic,
               outcome=outcome)  # type: ignore[arg-type]  # fmt: skip


def _systems(cases: list[Case], lists: dict[str, list[str]]) -> list[System]:
    return [System(name, "run", {c.case_id: docs for c in cases}) for name, docs in lists.items()]


SYSTEMS = {"gold": ["d00", "d01"], "other": ["d02", "d03"], "none": []}


def _run(tmp_path: Path | None, solver: SimulatedSolver, cases: list[Case], systems: dict[str, list[str]] = SYSTEMS,
         **options: Any) -> tuple[Any, list[warnings.WarningMessage]]:  # fmt: skip
    """The run (results under ``tmp_path`` when given) and the checker warnings it gave."""
    checker_factory = options.pop("checker_factory", None)
    cfg = EndToEndConfig(**{"k": 2, "repeats": 3, "n_resamples": 50, "n_permutations": 50, **options})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = end_to_end(cases, numbered_corpus(6), solver, _systems(cases, systems), out=tmp_path, config=cfg,
                         checker_factory=checker_factory)  # fmt: skip
    return res, [w for w in caught if issubclass(w.category, CHECKER_WARNINGS)]


def _judged(tmp_path: Path, cases: list[Case]) -> list[Any]:
    with TrialLog(tmp_path / "trials.sqlite", lock=False) as log:
        return [r for c in cases for r in log.trials(c.case_id) if r.outcome in ("pass", "fail")]


def test_results_json_has_the_block_of_the_run_s_replies(tmp_path: Path) -> None:
    """A model that writes the line: every reply read from it, per system too; results.json holds the same block."""
    cases = _cases()
    res, caught = _run(tmp_path, _solver(cases, "It is this one.\nAnswer: {}", "Answer: heapq.merge"), cases)
    block = res.checker
    records = _judged(tmp_path, cases)
    assert len(records) == 4 * 3 * 3 and {r.outcome for r in records} == {"pass", "fail"}
    assert all(is_declared(r.detail) for r in records)
    assert block["replies"] == block["declared"] == block["protocol_replies"] == block["protocol_declared"] == 36
    assert block["protocol_asked"] is True and block["unreadable"] == 0
    assert block["warning"] is False and block["protocol_warning"] is False and not caught
    assert block["by_system"] == {s: {"replies": 12, "declared": 12, "unreadable": 0} for s in SYSTEMS}
    saved = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert saved["checker"] == block


def test_a_model_that_ignores_the_answer_line_warns(tmp_path: Path) -> None:
    """The prompt asked for the line and no reply wrote it: AnswerLineIgnoredWarning, with its advice."""
    cases = _cases()
    res, caught = _run(tmp_path, _solver(cases), cases)
    block = res.checker
    assert block["protocol_asked"] is True and block["declared"] == 0 and block["replies"] == 36
    assert block["protocol_warning"] is True and block["warning"] is False
    [w] = caught
    assert w.category is AnswerLineIgnoredWarning
    message = str(w.message)
    assert message.startswith(
        "answers read from the declared 'Answer:' line: 0 of 36 (0.0%); by the answer grammar: 36"
    )
    assert "--solver-option answer_protocol=off" in message


def test_no_line_asked_no_warning() -> None:
    """The same replies from a solver whose prompt did not ask for the line (the local model's default)."""
    cases = _cases()
    res, caught = _run(None, _solver(cases, asking=False), cases)
    assert res.checker["protocol_asked"] is False and res.checker["protocol_warning"] is False and not caught
    assert res.checker["replies"] == 36


class _Unreadable:
    """Passes the right answer; every other reply has no answer it can locate."""

    id = "test:unreadable"

    def check(self, case: Case, reply: str) -> Verdict:
        return Verdict("pass", reply) if reply == answer(case.case_id) else unreadable("no answer found")


def test_unreadable_replies_warn(tmp_path: Path) -> None:
    cases = _cases()
    res, caught = _run(tmp_path, _solver(cases, asking=False), cases, checker_factory=lambda case: _Unreadable())
    block = res.checker
    fails = sum(r.outcome == "fail" for r in _judged(tmp_path, cases))
    assert block["unreadable"] == fails > 5 and block["warning"] is True
    assert sum(block["by_case"].values()) == fails
    assert sum(v["unreadable"] for v in block["by_system"].values()) == fails
    assert block["by_system"]["none"]["unreadable"] >= block["by_system"]["gold"]["unreadable"]  # d00 helps
    assert [w.category for w in caught] == [UnreadableRepliesWarning]


def test_only_the_trials_behind_the_figures_count(tmp_path: Path) -> None:
    """A rerun in the same folder with fewer repeats and fewer systems reuses the log, but its block counts only the
    trials its figures are made of (the log keeps the others)."""
    cases = _cases()
    solver = _solver(cases, "Answer: {}")
    first, _ = _run(tmp_path, solver, cases)
    assert first.checker["replies"] == 36
    again, _ = _run(tmp_path, solver, cases, systems={"gold": SYSTEMS["gold"]}, repeats=1)
    assert again.run["calls_this_process"] == 0  # every trial came from the log
    assert len(_judged(tmp_path, cases)) == 36
    assert again.checker["replies"] == 4 and list(again.checker["by_system"]) == ["gold"]
    passes = sum(again.values[:, 0])
    assert again.checker["declared"] == passes  # the passes declared; the failures ("I do not know.") did not


def test_single_doc_trials_count_and_cached_ones_count_as_the_reply_they_repeat(tmp_path: Path) -> None:
    """A deterministic solver: a system showing the same documents as another is answered from the cache (no call,
    no check) and counts as the reply it repeats; the single-document trials are replies too."""
    cases = _cases(3)
    solver = _solver(cases, "Answer: {}", "Answer: heapq.merge", deterministic=True)
    systems = {"gold": ["d00", "d01"], "same": ["d00", "d01"], "none": []}
    res, _ = _run(tmp_path, solver, cases, systems=systems, single_doc=True)
    records = _judged(tmp_path, cases)
    cached = [r for r in records if r.detail.startswith("cached:")]
    assert cached and res.run["cached"] == len(cached)
    assert res.checker["replies"] == len(records) == res.checker["declared"]
    assert set(res.checker["by_system"]) == {"gold", "same", "none"}
    assert res.checker["by_system"]["same"] == {"replies": 3, "declared": 3, "unreadable": 0}
    singles = sum(r.kind.startswith("endtoend:single:") for r in records)
    assert singles == 3 * 2 and res.checker["replies"] == 3 * 3 + singles


def test_logprob_runs_have_no_block(tmp_path: Path) -> None:
    cases = _cases(3)
    res, caught = _run(tmp_path, _solver(cases, outcome="logprob"), cases, outcome="logprob")
    assert res.checker == {} and not caught
    assert "checker" not in json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))


def test_the_progress_line_shows_how_replies_were_read() -> None:
    progress = EndToEndProgress(4, 40, enabled=False)
    progress({"case_id": "c0", "done": 1, "cases": 4, "calls": 10, "replies": 10, "declared": 8, "unreadable": 1})
    assert progress.plain_line().endswith(" · 8/10 declared, 1 unreadable")
    progress({"case_id": "c1", "done": 2, "cases": 4, "calls": 20, "replies": 20, "declared": 17, "unreadable": 1})
    assert progress.plain_line().endswith(" · 17/20 declared, 1 unreadable")  # the counts are the run's so far
    grammar = EndToEndProgress(4, 40, enabled=False)  # no declared answer (the line not asked for): the share shown
    grammar({"case_id": "c0", "done": 1, "cases": 4, "calls": 20, "replies": 20, "declared": 0, "unreadable": 3})
    assert grammar.plain_line().endswith(" · 3/20 unreadable")
    quiet = EndToEndProgress(4, 40, enabled=False)
    quiet({"case_id": "c0", "done": 1, "cases": 4, "calls": 10, "replies": 10, "declared": 0, "unreadable": 0})
    assert "declared" not in quiet.plain_line() and "unreadable" not in quiet.plain_line()


def test_the_progress_events_carry_the_counts() -> None:
    cases = _cases(2)
    events: list[dict[str, Any]] = []
    end_to_end(cases, numbered_corpus(6), _solver(cases, "Answer: {}", "Answer: heapq.merge"),
               _systems(cases, {"gold": ["d00"]}), config=EndToEndConfig(k=1, repeats=2, n_resamples=20,
                                                                         n_permutations=20), progress=events.append)  # fmt: skip
    assert events[-1]["replies"] == events[-1]["declared"] == 4 and events[-1]["unreadable"] == 0


# --- the report and the CLI ------------------------------------------------------------------------------------------

_BLOCK = {"replies": 430, "unreadable": 3, "share": 0.007, "warning": False, "by_case": {"q": 3}, "declared": 412,
          "declared_share": 0.9581, "protocol_asked": True, "protocol_replies": 430, "protocol_declared": 412,
          "protocol_warning": False, "by_system": {}}  # fmt: skip
_LINE = (
    "answers read from the declared 'Answer:' line: 412 of 430 (95.8%); by the answer grammar: 15; unreadable: 3 (0.7%)"
)
_IGNORED = {**_BLOCK, "declared": 40, "declared_share": 0.093, "protocol_declared": 40, "protocol_warning": True}


def _results(tmp_path: Path, block: dict[str, Any] | None) -> Path:
    """A run directory whose ``endtoend/results.json`` holds ``block`` (``None``: no block, as an older run)."""
    data: dict[str, Any] = {"outcome": "pass", "unit": "success rate", "k": 2, "confidence": 0.95, "cases": 1,
                            "complete_cases": 1, "systems": [{"name": "gold", "kind": "control"}],
                            "summary": {"gold": {"mean": 0.5, "ci": [0.1, 0.9], "n": 1}}, "pairs": [], "validity": {},
                            "run": {"calls": 4, "cached": 0}}  # fmt: skip
    if block is not None:
        data["checker"] = block
    (tmp_path / "endtoend").mkdir(parents=True)
    (tmp_path / "endtoend" / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("block", "label", "css", "line"),
    [
        (_BLOCK, "**Checker:**", "ok", _LINE),
        (_IGNORED, "**Checker (warning):**", "warn", "answers read from the declared 'Answer:' line: 40 of 430 (9.3%)"),
    ],
)
def test_the_report_section_has_the_line(
    tmp_path: Path, block: dict[str, Any], label: str, css: str, line: str
) -> None:
    from deltap.report.endtoend import endtoend_html, endtoend_markdown

    run = _results(tmp_path, block)
    [row] = [r for r in endtoend_markdown(run) if r.startswith("**Checker")]
    assert row.startswith(f"{label} {line}")
    assert ("answer_protocol=off" in row) is bool(block["protocol_warning"])
    found = re.search(r'<p><b>Checker</b>: <span class="(\w+)">([^<]*)</span>', endtoend_html(run))
    assert found is not None and found.group(1) == css and html.unescape(found.group(2)).startswith(line)


def test_no_block_no_line(tmp_path: Path) -> None:
    """An older results.json (or a logprob run): no block, no line."""
    from deltap.report.endtoend import endtoend_html, endtoend_markdown

    run = _results(tmp_path, None)
    assert endtoend_markdown(run) and not any("Checker" in r for r in endtoend_markdown(run))
    assert "<b>Checker</b>" not in endtoend_html(run) and "endtoend" in endtoend_html(run)


def test_cli_prints_the_line_without_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``deltap endtoend --solver simulated`` (no template: the line is not asked for): the block's older line."""
    from tests.helpers import mined_endtoend_args, run_cli

    _, _, out, args = mined_endtoend_args(tmp_path)
    capsys.readouterr()
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    block = json.loads((out / "endtoend" / "results.json").read_text(encoding="utf-8"))["checker"]
    assert block["replies"] > 0 and block["protocol_asked"] is False
    err = " ".join(err.split())
    assert f"replies the checker could not read: {block['unreadable']} of {block['replies']}" in err
    assert "warning:" not in err


def test_cli_logprob_prints_no_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import mined_endtoend_args, run_cli

    _, _, out, args = mined_endtoend_args(tmp_path, "--outcome", "logprob")
    capsys.readouterr()
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "checker" not in json.loads((out / "endtoend" / "results.json").read_text(encoding="utf-8"))
    assert "answers read from" not in err and "could not read" not in err


@pytest.mark.parametrize(("protocol", "warns"), [("auto", True), ("off", False)])
def test_cli_with_a_hosted_model_that_ignores_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, protocol: str, warns: bool
) -> None:
    """``deltap endtoend --solver openai`` against a fake server whose model never writes the line: the hosted default
    asks for it, the summary line and a ``warning:`` line say so (exit 0), whatever the warning filters (pytest runs
    with filterwarnings=error); with ``answer_protocol=off`` neither."""
    from tests.fake_openai import FakeOpenAIServer
    from tests.helpers import mined_endtoend_args, run_cli

    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    _, _, out, args = mined_endtoend_args(tmp_path)
    capsys.readouterr()
    args = args[: args.index("--solver")]  # the mined run, without the simulated solver and its repeats
    with FakeOpenAIServer(lambda body: "Runner" if "pkg.D0" in json.dumps(body) else "I do not know.") as srv:
        code, _, err = run_cli(capsys, *args, "--solver", "openai", "--model", "gpt-4o-mini", "--solver-option",
                               f"base_url={srv.url}", "--solver-option", f"answer_protocol={protocol}", "--repeats",
                               "3")  # fmt: skip
    assert code == 0, err
    block = json.loads((out / "endtoend" / "results.json").read_text(encoding="utf-8"))["checker"]
    assert block["replies"] == 3 * 3  # one case, three controls, three repeats (a hosted model is not greedy)
    assert block["protocol_asked"] is warns and block["declared"] == 0 and block["protocol_warning"] is warns
    err = " ".join(err.split())
    assert ("warning: answers read from the declared 'Answer:' line: 0 of" in err) is warns
    assert ("not following the line" in err) is warns
    assert ("replies the checker could not read: 0 of" in err) is not warns


def test_the_demo_s_end_to_end_step_says_the_warning(tmp_path: Path) -> None:
    """The demo's end-to-end step prints the checker's warnings as its mining step does (a ``warning:`` line, never an
    exception under filterwarnings=error)."""
    from collections import namedtuple

    from deltap.demo import DEMO_RETRIEVERS, DemoConfig, _end_to_end
    from deltap.mining.engine import mine

    hit = namedtuple("hit", "doc_id score")

    class _Fixed:
        def search_batch(self, queries: list[str], k: int) -> list[list[Any]]:
            return [[hit("d00", 2.0), hit("d03", 1.0)][:k] for _ in queries]

    cases = _cases(3)
    corpus = numbered_corpus(6)
    mine(cases, corpus, _solver(cases, asking=False), out=tmp_path, budget=8, n_placebo=1, coalitions=False)
    lines: list[str] = []
    config = DemoConfig(out=tmp_path, outcome="pass", progress=False, retrieved_k=2)
    data = _end_to_end(config, corpus, cases, _solver(cases), {n: _Fixed() for n in DEMO_RETRIEVERS}, tmp_path,
                       lines.append)  # fmt: skip
    assert data["checker"]["protocol_warning"] is True and data["checker"]["declared"] == 0
    [warned] = [line for line in lines if line.startswith("  warning:")]
    assert warned.startswith("  warning: answers read from the declared 'Answer:' line: 0 of ")


def test_a_run_resumed_with_another_answer_line_setting_is_refused(tmp_path: Path) -> None:
    """The prompt template is part of what a trial is: an endtoend log made without the answer line is not resumed
    with it (a hosted run started before the line was its default), with a message that says what to pass."""
    from deltap.errors import DeltapError

    cases = _cases(2)
    _run(tmp_path, _solver(cases, asking=False), cases)
    with pytest.raises(DeltapError, match="prompt_template") as err:
        _run(tmp_path, _solver(cases, asking=True), cases)
    assert "answer_protocol=off or on" in str(err.value)
    res, _ = _run(tmp_path, _solver(cases, asking=False), cases)  # the same setting resumes
    assert res.run["calls_this_process"] == 0


def test_a_log_written_before_the_template_was_recorded_resumes_with_the_default_template(tmp_path: Path) -> None:
    """A log without ``prompt_template`` was made with the default template: it resumes with it, not with another."""
    from deltap.errors import DeltapError

    cases = _cases(2)
    _run(tmp_path, _solver(cases, asking=False), cases)
    with TrialLog(tmp_path / "trials.sqlite", lock=False) as log:
        log._db.execute("DELETE FROM meta WHERE key = 'prompt_template'")  # as an older version wrote it
        log._db.commit()
    res, _ = _run(tmp_path, _solver(cases, asking=False), cases)
    assert res.run["calls_this_process"] == 0
    with pytest.raises(DeltapError, match="prompt_template"):
        _run(tmp_path, _solver(cases, asking=True), cases)
