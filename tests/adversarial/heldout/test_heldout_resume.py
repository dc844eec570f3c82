"""Held-out attacks on resumes: inputs edited between two runs on the same directory that the run does not record,
and a second process on the same run directory through another path. Each must end in a refused resume (a clear
one-line error), never in a silent mix of old trials and new inputs.

Fast: the simulated solver and cheap checkers; the pytest checker's files are compared through the manifest only
(no sandbox runs).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.mining.engine import MiningConfig, mine
from deltap.mining.manifest import case_manifest, manifest_diff
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog

OPTS = {"budget": 16, "n_placebo": 2, "coalitions": False, "seed": 3}


def _corpus() -> Corpus:
    return Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(12)])


def _solver() -> SimulatedSolver:
    return SimulatedSolver({"a": SimulatedTruth(0.3, {"d00": 0.4})}, answers={"a": "right"}, seed=1)


def _python_checker_case(module_dir: Path, rule: str) -> Case:
    (module_dir / "heldout_judge.py").write_text(f"def judge(case, answer):\n    return {rule}\n")
    return Case(
        "a", "question a", gold_doc_ids=("d00",), checker=CheckerSpec("python", {"callable": "heldout_judge:judge"})
    )


def test_an_edited_python_checker_module_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker spec is the string 'heldout_judge:judge'; the function it names changed on disk."""
    modules = tmp_path / "modules"
    modules.mkdir()
    monkeypatch.syspath_prepend(str(modules))
    out = tmp_path / "run"
    mine([_python_checker_case(modules, "answer.strip() == 'right'")], _corpus(), _solver(), out=out, **OPTS)
    sys.modules.pop("heldout_judge", None)  # a resume is a new process: it imports the edited file
    edited = _python_checker_case(modules, "True")
    with pytest.raises(DeltapError, match="checker"):
        mine([edited], _corpus(), _solver(), out=out, **OPTS)


def _pytest_case(root: Path) -> Case:
    files = {"test_file": root / "test_m.py", "fixed_file": root / "fixed.py", "unfixed_file": root / "unfixed.py"}
    params: dict[str, object] = {k: str(v) for k, v in files.items()}
    params.update(module_name="m", support_files=[str(root / "data.py")])
    return Case("a", "fix m", gold_doc_ids=("d00",), checker=CheckerSpec("pytest", params), benchmark_type="fix_error")


@pytest.mark.parametrize("edited", ["test_m.py", "fixed.py", "data.py"])
def test_an_edited_pytest_checker_file_changes_the_manifest(tmp_path: Path, edited: str) -> None:
    """Same paths in the checker spec, other tests / reference / support data on disk: other trial outcomes."""
    for name, text in {
        "test_m.py": "from m import f\n\ndef test_f():\n    assert f() == 1\n",
        "fixed.py": "def f():\n    return 1\n",
        "unfixed.py": "def f():\n    return 0\n",
        "data.py": "X = 1\n",
    }.items():
        (tmp_path / name).write_text(text)
    case = _pytest_case(tmp_path)
    cfg = MiningConfig()
    before = case_manifest(case, ["d00"], _corpus(), _solver(), None, cfg)
    (tmp_path / edited).write_text((tmp_path / edited).read_text() + "# edited\n")
    after = case_manifest(case, ["d00"], _corpus(), _solver(), None, cfg)
    assert manifest_diff(before, after), f"editing {edited} left the manifest unchanged"


@pytest.mark.parametrize("how", ["symlink", "relative"])
def test_a_second_process_through_another_path_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    other = tmp_path / "link"
    other.symlink_to(run)
    with TrialLog(run / "trials.sqlite"):
        if how == "relative":
            monkeypatch.chdir(run)
            path = Path("trials.sqlite")
        else:
            path = other / "trials.sqlite"
        with pytest.raises(DeltapError, match="being mined by another process"):
            TrialLog.check_unlocked(path)


def test_deleting_the_lock_file_does_not_let_a_second_process_in(tmp_path: Path) -> None:
    """A tidy-up (``rm run/*.lock``) while a run is mining must not let a second run write the same log."""
    run = tmp_path / "run"
    run.mkdir()
    with TrialLog(run / "trials.sqlite"):
        for lock in run.glob("*.lock"):
            os.remove(lock)
        with pytest.raises(DeltapError, match="being mined by another process"):
            TrialLog.check_unlocked(run / "trials.sqlite")


class _ModelSolver(SimulatedSolver):
    """A local solver whose weights are a file: the same id (the file's name) for other weights."""

    def __init__(self, model_path: Path) -> None:
        super().__init__({"a": SimulatedTruth(0.3, {"d00": 0.4})}, answers={"a": "right"}, seed=1)
        self.model_path = model_path


def test_replaced_model_weights_are_refused(tmp_path: Path) -> None:
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF weights v1")
    case = Case("a", "question a", gold_doc_ids=("d00",), checker=CheckerSpec("string_match", {"answers": ["right"]}))
    out = tmp_path / "run"
    mine([case], _corpus(), _ModelSolver(weights), out=out, **OPTS)
    weights.write_bytes(b"GGUF weights v2, re-quantised")
    with pytest.raises(DeltapError, match="model"):
        mine([replace(case)], _corpus(), _ModelSolver(weights), out=out, **OPTS)


def test_a_log_written_before_checker_files_were_recorded_still_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upgrading deltap must not refuse every resume: a manifest without the field is not compared on it."""
    import json
    import sqlite3

    modules = tmp_path / "modules"
    modules.mkdir()
    monkeypatch.syspath_prepend(str(modules))
    out = tmp_path / "run"
    case = _python_checker_case(modules, "answer.strip() == 'right'")
    mine([case], _corpus(), _solver(), out=out, **OPTS)
    with sqlite3.connect(out / "trials.sqlite") as db:
        for case_id, text in db.execute("SELECT case_id, manifest_json FROM manifests").fetchall():
            old = {k: v for k, v in json.loads(text).items() if k != "checker_files"}
            db.execute("UPDATE manifests SET manifest_json = ? WHERE case_id = ?", (json.dumps(old), case_id))
    again = mine([case], _corpus(), _solver(), out=out, **OPTS)
    assert again.run["calls_this_process"] == 0
