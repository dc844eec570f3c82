"""How the checker read a run's replies (issue 34): counted in run.json, the summary, the progress line, with
warnings — replies the checker could not read (item 4; a warning when their share is high), and replies read from the
declared ``Answer:`` line (session 14; a warning when the prompt asked for the line and most replies ignore it)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import Case
from deltap.checkers import Verdict, is_declared, is_unreadable, unreadable
from deltap.mining.engine import mine
from deltap.mining.outputs import summary_lines
from deltap.mining.progress import MiningProgress
from deltap.mining.readability import (
    WARN_MIN,
    AnswerLineIgnoredWarning,
    UnreadableRepliesWarning,
    protocol_cases,
    readability,
    readability_line,
    readability_warned,
    readability_warnings,
)
from deltap.solvers.prompts import PromptTemplate
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog, TrialRecord
from deltap.trials.runner import CallTally
from tests.helpers import answer, answering_solver, numbered_corpus, string_case

OPTS = {"budget": 16, "n_placebo": 2, "coalitions": False, "seed": 3, "outcome": "pass"}


class _Checker:
    """Passes the right answer; every other reply is unreadable (``mode="unreadable"``) or a wrong answer."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.id = f"test:{mode}"

    def check(self, case: Case, reply: str) -> Verdict:
        if reply == answer(case.case_id):
            return Verdict("pass", reply)
        return unreadable("no answer found") if self.mode == "unreadable" else Verdict("fail", reply, "wrong answer")


def _mine(tmp_path: Path, mode: str, events: list[dict[str, object]] | None = None) -> dict[str, object]:
    solver = answering_solver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, seed=1, outcome="pass")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mine(
            [string_case("a")],
            numbered_corpus(30),
            solver,
            out=tmp_path,
            checker_factory=lambda case: _Checker(mode),
            progress=events.append if events is not None else None,
            **OPTS,
        )
    run = dict(result.run)
    run["_warnings"] = [w for w in caught if issubclass(w.category, UnreadableRepliesWarning)]
    return run


def test_unreadable_helpers() -> None:
    verdict = unreadable("no candidate named")
    assert verdict.status == "fail" and verdict.value == 0.0
    assert is_unreadable(verdict.detail) and verdict.detail == "unreadable: no candidate named"
    assert not is_unreadable("wrong answer") and not is_unreadable("") and not is_unreadable(None)


def test_unreadable_replies_are_counted_and_warned_about(tmp_path: Path) -> None:
    events: list[dict[str, object]] = []
    run = _mine(tmp_path, "unreadable", events)
    block = run["checker"]
    assert isinstance(block, dict)
    assert block["replies"] > 0 and block["unreadable"] > 0
    assert block["share"] == round(block["unreadable"] / block["replies"], 4)
    assert block["warning"] is True and block["by_case"] == {"a": block["unreadable"]}
    assert run["_warnings"], "a high share of unreadable replies warns"
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["checker"] == block
    lines = [line for line, _ in summary_lines(saved)]
    assert any(line.startswith(f"replies the checker could not read: {block['unreadable']} of ") for line in lines)
    assert max(int(e.get("unreadable") or 0) for e in events) > 0  # the progress events carry the count


def test_wrong_answers_are_not_unreadable(tmp_path: Path) -> None:
    run = _mine(tmp_path, "wrong")
    block = run["checker"]
    assert isinstance(block, dict)
    assert block["unreadable"] == 0 and block["warning"] is False and not run["_warnings"]
    assert readability_line(block) == f"replies the checker could not read: 0 of {block['replies']} (0.0%)"


def test_a_resumed_run_counts_the_logged_replies_again(tmp_path: Path) -> None:
    first = _mine(tmp_path, "unreadable")["checker"]
    again = _mine(tmp_path, "unreadable")
    assert again["calls_this_process"] == 0 and again["checker"] == first


def test_the_progress_line_shows_unreadable_replies() -> None:
    progress = MiningProgress(1, enabled=False)
    progress({"case_id": "a", "calls": 10, "replies": 10, "unreadable": 3, "status": "running", "trials": 10})
    assert "3/10 unreadable" in progress.lines()[1]
    quiet = MiningProgress(1, enabled=False)
    quiet({"case_id": "a", "calls": 10, "replies": 10, "unreadable": 0, "status": "running", "trials": 10})
    assert "unreadable" not in "\n".join(quiet.lines())


def test_logprob_runs_have_no_checker_block(tmp_path: Path) -> None:
    solver = answering_solver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, seed=1, outcome="logprob")
    result = mine([string_case("a")], numbered_corpus(30), solver, out=tmp_path, **{**OPTS, "outcome": "logprob"})
    assert "checker" not in result.run


# --- replies read from the declared answer (session 14) ----------------------------------------------------------


class _AskingSolver(SimulatedSolver):
    """A simulated solver whose prompt asks for the final ``Answer:`` line (what a hosted chat solver does by default:
    ``answer_protocol`` auto -> on)."""

    template = PromptTemplate(answer_protocol="on")


def _protocol_run(
    tmp_path: Path, right: str, wrong: str, asking: bool = True, deterministic: bool = False, base: float = 0.3
) -> dict[str, Any]:
    """A run of case ``a`` judged by the real ``string_match`` checker (grammar ``grader``): the solver says ``right``
    on success and ``wrong`` on failure. Returns run.json with the warnings caught under ``_warnings``."""
    cls = _AskingSolver if asking else SimulatedSolver
    solver = cls({"a": SimulatedTruth(base, {"d00": 0.4})}, answers={"a": right}, wrong_answer=wrong, seed=1,
                 outcome="pass", deterministic=deterministic)  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mine([string_case("a")], numbered_corpus(30), solver, out=tmp_path, **OPTS)
    run = dict(result.run)
    run["_warnings"] = [
        w for w in caught if issubclass(w.category, (UnreadableRepliesWarning, AnswerLineIgnoredWarning))
    ]
    return run


def _logged(tmp_path: Path) -> list[Any]:
    """The judged trials of case ``a`` in the run's log."""
    with TrialLog(tmp_path / "trials.sqlite") as log:
        return [r for r in log.trials("a") if r.outcome in ("pass", "fail")]


def test_replies_read_from_the_declared_line_are_counted(tmp_path: Path) -> None:
    """Passes and wrong answers read from the line both count; run.json, the summary and the warnings agree."""
    run = _protocol_run(tmp_path, "It is this one.\nAnswer: ans-a", "Answer: `heapq.merge`")
    block = run["checker"]
    records = _logged(tmp_path)
    assert {r.outcome for r in records} == {"pass", "fail"}  # both kinds of verdict were read from the line
    assert all(is_declared(r.detail) for r in records)
    assert block["replies"] == len(records) == block["declared"] == block["protocol_replies"]
    assert block["declared"] == block["protocol_declared"] and block["declared_share"] == 1.0
    assert block["protocol_asked"] is True and block["protocol_warning"] is False and block["unreadable"] == 0
    assert not run["_warnings"]
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["checker"] == block
    n = block["replies"]
    line = f"answers read from the declared 'Answer:' line: {n} of {n} (100.0%); by the answer grammar: 0; unreadable: 0 (0.0%)"
    assert (line, "") in summary_lines(saved)


def test_the_three_ways_add_up_to_the_replies(tmp_path: Path) -> None:
    """Passes declared, failures read by the grammar (a hedge): the declared count is the log's passes, and the line
    gives the rest to the grammar."""
    run = _protocol_run(tmp_path, "Answer: ans-a", "I do not know.")
    block = run["checker"]
    records = _logged(tmp_path)
    passes = sum(r.outcome == "pass" for r in records)
    assert 0 < passes < len(records)
    assert block["declared"] == passes and block["unreadable"] == 0
    grammar = len(records) - passes
    assert f"by the answer grammar: {grammar}; unreadable: 0" in str(readability_line(block))
    assert block["protocol_warning"] == (passes < len(records) / 2)  # the planted rate decides; both are checked below


def test_the_warning_fires_when_the_model_ignores_the_answer_line(tmp_path: Path) -> None:
    run = _protocol_run(tmp_path, "ans-a", "I do not know.")  # asked for the line, never writes it
    block = run["checker"]
    assert block["protocol_asked"] is True and block["declared"] == 0 and block["replies"] >= 5
    assert block["protocol_warning"] is True and block["warning"] is False
    [caught] = run["_warnings"]
    assert caught.category is AnswerLineIgnoredWarning
    message = str(caught.message)
    assert message.startswith(f"answers read from the declared 'Answer:' line: 0 of {block['replies']} (0.0%)")
    assert "deltap export" in message and "--solver-option answer_protocol=off" in message
    styles = dict(summary_lines(json.loads((tmp_path / "run.json").read_text())))
    [(line, style)] = [(k, v) for k, v in styles.items() if k.startswith("answers read from")]
    assert style == "yellow" and "not following the line" in line


def test_no_warning_when_the_prompt_did_not_ask_for_the_line(tmp_path: Path) -> None:
    """The local model's default (protocol off): no declared answer is no sign of anything; the line keeps its older
    form."""
    run = _protocol_run(tmp_path, "ans-a", "I do not know.", asking=False)
    block = run["checker"]
    assert block["protocol_asked"] is False and block["protocol_replies"] == 0 and block["declared"] == 0
    assert block["protocol_warning"] is False and not run["_warnings"]
    assert readability_line(block) == f"replies the checker could not read: 0 of {block['replies']} (0.0%)"


def test_a_reply_that_declares_without_being_asked_is_counted(tmp_path: Path) -> None:
    run = _protocol_run(tmp_path, "Answer: ans-a", "I do not know.", asking=False)
    block = run["checker"]
    assert block["declared"] > 0 and block["protocol_asked"] is False and block["protocol_warning"] is False
    assert str(readability_line(block)).startswith(
        f"answers read from a declared 'Answer:' line (not asked for): {block['declared']} of {block['replies']}"
    )


def test_a_resumed_run_counts_the_declared_replies_again(tmp_path: Path) -> None:
    first = _protocol_run(tmp_path, "Answer: ans-a", "I do not know.")
    again = _protocol_run(tmp_path, "Answer: ans-a", "I do not know.")
    assert again["calls_this_process"] == 0 and again["checker"] == first["checker"]
    assert first["checker"]["declared"] > 0


def test_cached_trials_count_as_the_reply_they_repeat(tmp_path: Path) -> None:
    """A deterministic solver's repeated prompt is logged ``cached:`` (no call, no check); it counts as declared when
    the answer it repeats was."""
    run = _protocol_run(tmp_path, "Answer: ans-a", "Answer: `heapq.merge`", deterministic=True)
    records = _logged(tmp_path)
    cached = [r for r in records if r.detail.startswith("cached:")]
    assert cached and len(cached) < len(records)
    assert run["checker"]["declared"] == run["checker"]["replies"] == len(records)
    assert run["checker"]["protocol_warning"] is False


def test_the_progress_events_carry_the_declared_count(tmp_path: Path) -> None:
    events: list[dict[str, object]] = []
    solver = _AskingSolver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, answers={"a": "Answer: ans-a"}, seed=1)
    mine([string_case("a")], numbered_corpus(30), solver, progress=events.append, **OPTS)
    last = events[-1]
    assert int(last["declared"]) > 0 and int(last["declared"]) <= int(last["replies"])  # type: ignore[call-overload]


def test_the_tally_counts_declared_replies_apart_from_unreadable_ones() -> None:
    tally = CallTally()
    tally.add_reply(False, True)
    tally.add_reply(False)
    tally.add_reply(True, True)  # unreadable wins: never counted declared
    assert (tally.replies, tally.declared, tally.unreadable) == (3, 1, 1)


def test_the_cases_whose_prompt_asks_for_the_line() -> None:
    cases = [
        string_case("s"),
        string_case("m", benchmark_type="multiple_choice"),
        string_case("f", benchmark_type="fix_error"),
    ]

    class _Templated:
        def __init__(self, template: object) -> None:
            self.template = template

    assert protocol_cases(_Templated(PromptTemplate(answer_protocol="on")), cases) == {"s", "m"}  # type: ignore[arg-type]
    assert protocol_cases(_Templated(PromptTemplate(answer_protocol="off")), cases) == set()  # type: ignore[arg-type]
    assert protocol_cases(_Templated(PromptTemplate()), cases) == set()  # type: ignore[arg-type]  # auto: local default
    assert protocol_cases(_Templated(None), cases) == set()  # type: ignore[arg-type]
    assert protocol_cases(object(), cases) == set()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("unreadable", "expected"),
    [(0, " · 38/40 declared"), (1, " · 38/40 declared, 1 unreadable")],
)
def test_the_progress_line_shows_declared_replies(unreadable: int, expected: str) -> None:
    progress = MiningProgress(1, enabled=False)
    event = {"case_id": "a", "calls": 40, "replies": 40, "unreadable": unreadable, "declared": 38, "status": "running"}
    progress({**event, "trials": 40})
    assert progress.lines()[1].endswith(expected)
    assert expected.removeprefix(" · ") in progress.plain_line()
    quiet = MiningProgress(1, enabled=False)
    quiet({**event, "declared": 0, "unreadable": 0, "trials": 40})
    assert "declared" not in "\n".join(quiet.lines()) and "declared" not in quiet.plain_line()


def test_an_old_run_json_without_the_new_keys_still_reads() -> None:
    """A run.json written before the declared count: its line, style and warnings as before."""
    old = {"replies": 91, "unreadable": 12, "share": 0.1319, "warning": False, "by_case": {"a": 12}}
    assert readability_line(old) == "replies the checker could not read: 12 of 91 (13.2%)"
    assert not readability_warned(old) and readability_warnings(old) == []
    loud = {**old, "unreadable": 30, "share": 0.3297, "warning": True}
    [(category, message)] = readability_warnings(loud)
    assert category is UnreadableRepliesWarning and message.startswith("replies the checker could not read: 30 of 91")
    assert "answer_protocol=on" in message and readability_warned(loud)
    assert readability_line({}) is None and readability_line({"replies": 0}) is None


def test_both_warnings_in_one_line() -> None:
    """Asked for the line, few declared and many unreadable: both warnings, and no advice to ask for the line."""
    block = {"replies": 40, "unreadable": 20, "share": 0.5, "warning": True, "by_case": {}, "declared": 2,
             "declared_share": 0.05, "protocol_asked": True, "protocol_replies": 40, "protocol_declared": 2,
             "protocol_warning": True}  # fmt: skip
    line = str(readability_line(block))
    assert line.startswith(
        "answers read from the declared 'Answer:' line: 2 of 40 (5.0%); by the answer grammar: 18; unreadable: 20 (50.0%)"
    )
    assert "only 2 of 40 replies declared an answer" in line and "answer_protocol=on" not in line
    assert [c for c, _ in readability_warnings(block)] == [AnswerLineIgnoredWarning, UnreadableRepliesWarning]


def _record(i: int, outcome: str, detail: str, phash: str, case_id: str = "a") -> TrialRecord:
    return TrialRecord(case_id, "design", i, i, "1", phash, "reply", outcome, 1.0 if outcome == "pass" else 0.0, 0.0,
                       "solver", "checker", detail)  # fmt: skip


def test_the_counts_over_a_log_by_hand() -> None:
    """A log written by hand: declared passes and wrong answers, a grammar-read pass, an unreadable reply, an error
    (not judged), and cached trials that count as the verdict they repeat."""
    log = TrialLog(":memory:")
    for rec in [
        _record(0, "pass", "matched 'x' (declared)", "h0"),
        _record(1, "fail", "chose B, correct is A (declared)", "h1"),
        _record(2, "pass", "matched 'x'", "h2"),
        _record(3, "fail", "unreadable: no answer: the declared answer '?' names nothing", "h3"),
        _record(4, "error", "SolverError: timeout (declared)", "h4"),
        _record(5, "pass", "cached: same prompt as design 0", "h0"),  # repeats a declared pass
        _record(6, "fail", "cached: same prompt as design 3", "h3"),  # repeats the unreadable reply
        _record(0, "pass", "correct option (declared)", "b0", "b"),
    ]:
        log.append(rec)
    block = readability(log, ["a", "b"], asked={"a"})
    assert block["replies"] == 7 and block["declared"] == 4 and block["unreadable"] == 2
    assert block["declared_share"] == round(4 / 7, 4) and block["by_case"] == {"a": 2}
    assert (block["protocol_asked"], block["protocol_replies"], block["protocol_declared"]) == (True, 6, 3)
    assert block["protocol_warning"] is False  # 3 undeclared of 6: fewer than WARN_MIN
    line = readability_line(block)
    assert line == (
        "answers read from the declared 'Answer:' line: 4 of 7 (57.1%); by the answer grammar: 1; unreadable: 2 (28.6%)"
    )
    assert readability(log, ["a", "b"])["protocol_asked"] is False


@pytest.mark.parametrize(
    ("declared", "undeclared", "warns"),
    [
        (0, WARN_MIN, True),  # none declared, enough replies
        (0, WARN_MIN - 1, False),  # too few replies to call it a pattern
        (WARN_MIN + 1, WARN_MIN + 2, True),  # fewer than half declared
        (WARN_MIN + 2, WARN_MIN + 2, False),  # exactly half: no warning
    ],
)
def test_the_answer_line_warning_threshold(declared: int, undeclared: int, warns: bool) -> None:
    log = TrialLog(":memory:")
    for i in range(declared + undeclared):
        log.append(_record(i, "pass", "matched 'x' (declared)" if i < declared else "matched 'x'", f"h{i}"))
    block = readability(log, ["a"], asked={"a"})
    assert block["protocol_warning"] is warns
    assert [c for c, _ in readability_warnings(block)] == ([AnswerLineIgnoredWarning] if warns else [])


class _LongChecker:
    """Reads every reply from its declared answer with a detail longer than the trial log keeps."""

    id = "test:long"

    def check(self, case: Case, reply: str) -> Verdict:
        return Verdict("fail", reply, "wrong: " + "x" * 700 + " (declared)")


def test_the_log_keeps_the_marker_of_a_long_detail(tmp_path: Path) -> None:
    solver = answering_solver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, seed=1, outcome="pass")
    result = mine([string_case("a")], numbered_corpus(30), solver, out=tmp_path,
                  checker_factory=lambda case: _LongChecker(), **{**OPTS, "budget": 8})  # fmt: skip
    records = _logged(tmp_path)
    assert records and all(len(r.detail) == 500 and is_declared(r.detail) for r in records)
    assert result.run["checker"]["declared"] == len(records)


@pytest.mark.parametrize(("protocol", "warns"), [("auto", True), ("off", False)])
def test_deltap_mine_with_a_hosted_model_that_ignores_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, protocol: str, warns: bool
) -> None:
    """``deltap mine --solver openai`` against a fake server whose model never writes the line: the hosted default
    asks for it, the summary line and a ``warning:`` line say so (exit 0); with ``answer_protocol=off`` neither."""
    from tests.fake_openai import FakeOpenAIServer
    from tests.helpers import mine_files, run_cli

    monkeypatch.setenv("OPENAI_API_KEY", "fake")
    corpus, bench = mine_files(tmp_path)
    out = tmp_path / "run"
    with FakeOpenAIServer(lambda body: "Runner" if "pkg.D0" in json.dumps(body) else "I do not know.") as srv:
        code, _, err = run_cli(capsys, "mine", bench, "--corpus", corpus, "--retriever", "none", "--solver", "openai",
                               "--model", "gpt-4o-mini", "--solver-option", f"base_url={srv.url}", "--solver-option",
                               f"answer_protocol={protocol}", "--budget", "8", "--placebo", "1", "--no-coalitions",
                               "--pilot", "0", "--skip-missing", "--out", out)  # fmt: skip
    assert code == 0, err
    block = json.loads((out / "run.json").read_text())["checker"]
    assert block["protocol_asked"] is warns and block["declared"] == 0 and block["protocol_warning"] is warns
    err = " ".join(err.split())
    assert ("warning: answers read from the declared 'Answer:' line: 0 of" in err) is warns
    assert ("replies the checker could not read: 0 of" in err) is not warns
