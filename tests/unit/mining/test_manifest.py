"""Item 3 of issue 15: a run knows what it was made from (manifest, lock, error trials retried on resume)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from deltap.cases import CheckerSpec
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.mining.engine import mine
from deltap.mining.manifest import ManifestChanged
from deltap.retrieval.random_control import RandomRetriever
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog
from tests.helpers import answering_solver, string_case

_case = string_case  # every case here has gold d00, d01 (tests/helpers.py)

OPTS = {"budget": 32, "n_placebo": 2, "coalitions": False, "seed": 3}


def _corpus(**changed: str) -> Corpus:
    return Corpus([Document(f"d{i:02d}", changed.get(f"d{i:02d}", f"text {i}")) for i in range(30)])


def _solver(effect: float = 0.4, **kw: object) -> SimulatedSolver:
    truth = {c: SimulatedTruth(0.3, {"d00": effect}) for c in ("a", "b")}
    return answering_solver(truth, seed=1, **kw)


def _trial_keys(out: Path, case_id: str) -> int:
    with sqlite3.connect(out / "trials.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM trials WHERE case_id = ?", (case_id,)).fetchone()[0])


def test_unchanged_resume_reuses_every_trial(tmp_path: Path) -> None:
    first = mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    again = mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    assert again.run["calls_this_process"] == 0
    assert again.dataset.pairs == [
        {**p, "metadata": {**p["metadata"], "wall_seconds": q["metadata"]["wall_seconds"]}}
        for p, q in zip(first.dataset.pairs, again.dataset.pairs, strict=True)
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"query": "another question"}, "question", id="question"),
        pytest.param({"reference_answer": "another answer"}, "reference_answer", id="reference"),
        pytest.param({"checker": CheckerSpec("string_match", {"answers": ["x"]})}, "checker", id="checker"),
    ],
)
def test_changed_case_input_is_refused_naming_case_and_field(
    tmp_path: Path, change: dict[str, object], field: str
) -> None:
    mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    with pytest.raises(ManifestChanged) as err:
        mine([_case("a", **change), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    msg = str(err.value)
    assert f"{field} " in msg and "[a]" in msg and "--remine-changed" in msg
    assert set(err.value.changes) == {"a"}


def test_changed_candidate_text_is_refused(tmp_path: Path) -> None:
    mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    with pytest.raises(ManifestChanged, match=r"candidate text changed \[a: text changed of d01\]"):
        mine([_case("a")], _corpus(d01="edited text"), _solver(), out=tmp_path, **OPTS)


def test_pooled_document_missing_from_corpus_is_a_clear_error(tmp_path: Path) -> None:
    mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    smaller = Corpus([d for d in _corpus() if d.doc_id != "d01"])
    with pytest.raises(DeltapError, match=r"d01 \(missing from the corpus\)"):
        mine([_case("a", gold_doc_ids=("d00",))], smaller, _solver(), out=tmp_path, **OPTS)


def test_changed_retriever_is_refused(tmp_path: Path) -> None:
    corpus = _corpus()
    mine([_case("a")], corpus, _solver(), out=tmp_path, retriever=None, **{**OPTS, "k": 2})
    with pytest.raises(ManifestChanged, match=r"retriever none -> random\(seed=0\)"):
        mine(
            [_case("a")], corpus, _solver(), out=tmp_path, retriever=RandomRetriever(corpus, seed=0), **{**OPTS, "k": 2}
        )


def test_sim_effect_is_part_of_the_solver_id(tmp_path: Path) -> None:
    assert _solver(0.4).id != _solver(0.2).id
    assert _solver(0.4).id == _solver(0.4).id
    mine([_case("a")], _corpus(), _solver(0.4), out=tmp_path, **OPTS)
    with pytest.raises(DeltapError, match="solver"):
        mine([_case("a")], _corpus(), _solver(0.2), out=tmp_path, **OPTS)


def test_remine_changed_remines_exactly_the_changed_cases(tmp_path: Path) -> None:
    mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    n_a, n_b = _trial_keys(tmp_path, "a"), _trial_keys(tmp_path, "b")
    res = mine(
        [_case("a", query="another question"), _case("b")],
        _corpus(),
        _solver(),
        out=tmp_path,
        remine_changed=True,
        **OPTS,
    )
    assert res.run["resume"]["remined"] == ["a"]
    assert res.run["calls_this_process"] == _trial_keys(tmp_path, "a") > 0  # only a was asked again
    assert _trial_keys(tmp_path, "b") == n_b
    with TrialLog(tmp_path / "trials.sqlite") as log:
        old = log.history("a")
        assert len(old) == n_a and all(reason.startswith("inputs changed: question") for _, reason in old)
        assert log.history("b") == []
    # the new inputs are now the recorded ones: a plain resume reuses everything
    again = mine([_case("a", query="another question"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    assert again.run["calls_this_process"] == 0


class _Outage(SimulatedSolver):
    """The same endpoint (same id) during an outage: every third call fails with an infrastructure error."""

    def __init__(self, *a: object, **kw: object) -> None:
        super().__init__(*a, **kw)  # type: ignore[arg-type]
        self.n = 0

    def answer(self, request):  # type: ignore[no-untyped-def]
        from deltap.solvers.base import SolverError

        self.n += 1
        if self.n % 3 == 0:
            raise SolverError("503 Service Unavailable")
        return super().answer(request)


def test_error_trials_are_retried_on_resume(tmp_path: Path) -> None:
    truth = {"a": SimulatedTruth(0.3, {"d00": 0.4})}
    down = _Outage(truth, answers={"a": "ans-a"}, seed=1)
    first = mine([_case("a")], _corpus(), down, out=tmp_path, **{**OPTS, "max_error_rate": 0.9})
    with sqlite3.connect(tmp_path / "trials.sqlite") as db:
        n_err = db.execute("SELECT COUNT(*) FROM trials WHERE outcome = 'error'").fetchone()[0]
    assert n_err > 0 and first.dataset.pairs[0]["metadata"]["errors"] == n_err
    healthy = SimulatedSolver(truth, answers={"a": "ans-a"}, seed=1)  # the endpoint is back
    assert healthy.id == down.id
    res = mine([_case("a")], _corpus(), healthy, out=tmp_path, **{**OPTS, "max_error_rate": 0.9})
    assert res.run["resume"]["retired_errors"] == n_err
    with sqlite3.connect(tmp_path / "trials.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM trials WHERE outcome = 'error'").fetchone()[0] == 0
        retired = db.execute("SELECT kind, trial_index FROM trial_history WHERE outcome = 'error'").fetchall()
        answered = set(db.execute("SELECT kind, trial_index FROM trials WHERE outcome != 'error'").fetchall())
    assert len(retired) == n_err  # the errors stay as history
    used = res.dataset.pairs[0]["metadata"]["trials"]  # keys past the ones a healthy run needs are not asked again
    assert {
        k for k in retired if k[0] == "design" and k[1] < used
    } <= answered  # every needed failed key was asked again
    assert res.dataset.pairs[0]["metadata"]["errors"] == 0
    # the same result as a run that never saw the outage
    clean = mine(
        [_case("a")],
        _corpus(),
        SimulatedSolver(truth, answers={"a": "ans-a"}, seed=1),
        out=tmp_path / "clean",
        **{**OPTS, "max_error_rate": 0.9},
    )
    strip = lambda ds: [{k: v for k, v in p.items() if k != "metadata"} for p in ds.pairs]  # noqa: E731
    assert strip(res.dataset) == strip(clean.dataset)


_HOLD = """
import sys, time
from deltap.trials.log import TrialLog
log = TrialLog(sys.argv[1])
print("locked", flush=True)
time.sleep(60)
"""


def test_second_writer_stops_at_once_and_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    db = tmp_path / "trials.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(db)], stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        with pytest.raises(DeltapError, match=rf"is being mined by another process \(pid {holder.pid}"):
            mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    finally:
        holder.kill()  # kill -9: the OS releases the lock
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    res = mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    assert res.dataset.pairs[0]["metadata"]["trials"] > 0


def test_lock_is_released_after_a_run_and_after_a_refused_resume(tmp_path: Path) -> None:
    mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    with pytest.raises(ManifestChanged):
        mine([_case("a", query="changed")], _corpus(), _solver(), out=tmp_path, **OPTS)
    with TrialLog(tmp_path / "trials.sqlite") as log:  # not held by the failed attempt
        assert log.count() > 0


def test_cli_refuses_a_locked_run_directory_before_loading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path / "trials.sqlite")], stdout=subprocess.PIPE, env=env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        # the cases and corpus do not even exist: the lock is checked first
        with pytest.raises(SystemExit) as exc:
            main(
                [
                    "mine",
                    str(tmp_path / "no-cases.yaml"),
                    "--corpus",
                    str(tmp_path / "no-corpus.jsonl"),
                    "--out",
                    str(tmp_path),
                ]
            )
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"pid {holder.pid}" in err and "not found" not in err


def test_a_refused_resume_leaves_the_log_untouched(tmp_path: Path) -> None:
    truth = {"a": SimulatedTruth(0.3, {"d00": 0.4})}
    mine(
        [_case("a")],
        _corpus(),
        _Outage(truth, answers={"a": "ans-a"}, seed=1),
        out=tmp_path,
        **{**OPTS, "max_error_rate": 0.9},
    )
    with pytest.raises(ManifestChanged):
        mine(
            [_case("a", query="edited")],
            _corpus(),
            SimulatedSolver(truth, answers={"a": "ans-a"}, seed=1),
            out=tmp_path,
            **OPTS,
        )
    with sqlite3.connect(tmp_path / "trials.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM trials WHERE outcome = 'error'").fetchone()[0] > 0
        assert db.execute("SELECT COUNT(*) FROM trial_history").fetchone()[0] == 0


def test_log_of_an_older_version_gets_a_manifest_and_is_checked_from_then_on(tmp_path: Path) -> None:
    mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    with sqlite3.connect(tmp_path / "trials.sqlite") as db:
        db.execute("DELETE FROM manifests")  # what a log written before manifests looks like
    again = mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    assert again.run["resume"]["unverified"] == ["a"] and again.run["calls_this_process"] == 0
    with pytest.raises(ManifestChanged, match="question"):
        mine([_case("a", query="edited")], _corpus(), _solver(), out=tmp_path, **OPTS)


def _legacy_log(out: Path) -> None:
    """Make a run directory look mined before the answer grammar existed: no ``checker_grammar`` in its manifests."""
    import json

    with sqlite3.connect(out / "trials.sqlite") as db:
        for case_id, manifest in db.execute("SELECT case_id, manifest_json FROM manifests").fetchall():
            m = json.loads(manifest)
            m.pop("checker_grammar", None)
            db.execute("UPDATE manifests SET manifest_json = ? WHERE case_id = ?", (json.dumps(m), case_id))


def test_a_log_judged_by_the_lenient_grammar_is_not_resumed_silently_by_the_strict_one(tmp_path: Path) -> None:
    mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    _legacy_log(tmp_path)
    with pytest.raises(ManifestChanged) as err:
        mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, **OPTS)
    msg = str(err.value)
    assert "checker_grammar lenient -> grader in 2 case(s) [a; b]" in msg and "grammar: lenient" in msg
    assert "--remine-changed" in msg
    lenient = CheckerSpec("string_match", {"answers": ["ans-a"], "grammar": "lenient"})
    lenient_b = CheckerSpec("string_match", {"answers": ["ans-b"], "grammar": "lenient"})
    # the same grammar resumes with no call; the strict one re-mines exactly the changed cases when asked
    again = mine(
        [_case("a", checker=lenient), _case("b", checker=lenient_b)], _corpus(), _solver(), out=tmp_path, **OPTS
    )
    assert again.run["calls_this_process"] == 0
    _legacy_log(tmp_path)
    res = mine([_case("a"), _case("b")], _corpus(), _solver(), out=tmp_path, remine_changed=True, **OPTS)
    assert res.run["resume"]["remined"] == ["a", "b"] and res.run["calls_this_process"] > 0


def test_a_changed_grammar_is_a_changed_input(tmp_path: Path) -> None:
    mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    lenient = CheckerSpec("string_match", {"answers": ["ans-a"], "grammar": "lenient"})
    with pytest.raises(ManifestChanged, match=r"checker_grammar grader -> lenient in 1 case\(s\) \[a\]"):
        mine([_case("a", checker=lenient)], _corpus(), _solver(), out=tmp_path, **OPTS)


def test_a_log_judged_by_the_strict_grammar_of_issue_24_is_not_resumed_by_the_grader(tmp_path: Path) -> None:
    import json

    strict = CheckerSpec("string_match", {"answers": ["ans-a"], "grammar": "strict"})
    mine([_case("a", checker=strict)], _corpus(), _solver(), out=tmp_path, **OPTS)
    with sqlite3.connect(tmp_path / "trials.sqlite") as db:  # as issue 24's deltap wrote it: no grammar in params
        for case_id, manifest in db.execute("SELECT case_id, manifest_json FROM manifests").fetchall():
            m = json.loads(manifest)
            m["checker"] = json.dumps({**json.loads(m["checker"]), "params": {"answers": ["ans-a"]}}, sort_keys=True)
            db.execute("UPDATE manifests SET manifest_json = ? WHERE case_id = ?", (json.dumps(m), case_id))
    with pytest.raises(ManifestChanged) as err:
        mine([_case("a")], _corpus(), _solver(), out=tmp_path, **OPTS)
    msg = str(err.value)
    assert "checker_grammar strict -> grader in 1 case(s) [a]" in msg and "--answer-grammar strict" in msg
    again = mine([_case("a", checker=strict)], _corpus(), _solver(), out=tmp_path, **OPTS)
    assert again.run["calls_this_process"] == 0
