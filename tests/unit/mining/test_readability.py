"""Replies the checker could not read (issue 34, item 4): counted in run.json, the summary, the progress line, with a
warning when their share is high."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from deltap.cases import Case
from deltap.checkers import Verdict, is_unreadable, unreadable
from deltap.mining.engine import mine
from deltap.mining.outputs import summary_lines
from deltap.mining.progress import MiningProgress
from deltap.mining.readability import UnreadableRepliesWarning, readability_line
from deltap.solvers.simulated import SimulatedTruth
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
