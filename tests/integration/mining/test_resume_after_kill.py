"""kill -9 in the middle of a mining run, rerun, and get exactly the result of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

SCRIPT = r"""
import sys, warnings
warnings.simplefilter("ignore")
from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.mining.engine import mine
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

corpus = Corpus([Document(f"d{i:02d}", f"text {i}") for i in range(30)])
cases = [Case(f"c{j}", f"q{j}", gold_doc_ids=("d00", "d01", "d02"),
              checker=CheckerSpec("string_match", {"answers": [f"a{j}"]}), reference_answer=f"a{j}") for j in range(3)]
truth = {f"c{j}": SimulatedTruth(0.1, {"d00": 0.5, "d01": 0.3}, {("d02", "d03"): 0.2}) for j in range(3)}
solver = SimulatedSolver(truth, answers={c.case_id: c.reference_answer for c in cases}, seed=3, latency=float(sys.argv[2]))
mine(cases, corpus, solver, out=sys.argv[1], budget=64, n_placebo=4, seed=11)
"""


def _run(out: Path, latency: float) -> subprocess.Popen[bytes]:
    out.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{out.name}.stderr").open("ab") as err:
        return subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(out), str(latency)], stdout=subprocess.DEVNULL, stderr=err
        )


def _finish(p: subprocess.Popen[bytes], out: Path) -> None:
    assert p.wait(timeout=120) == 0, (out.parent / f"{out.name}.stderr").read_text()


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return int(con.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _strip(path: Path) -> list[dict[str, object]]:
    data = yaml.safe_load(path.read_text())
    for pair in data["pairs"]:
        pair["metadata"].pop("wall_seconds")
    return data["pairs"]


@pytest.mark.integration
def test_kill_9_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    full, killed = tmp_path / "full", tmp_path / "killed"
    _finish(_run(full, 0.0), full)

    p = _run(killed, 0.004)
    db = killed / "trials.sqlite"
    deadline = time.time() + 60
    while _count(db) < 90 and time.time() < deadline and p.poll() is None:
        time.sleep(0.02)
    assert p.poll() is None, "the run finished before it could be killed; raise the latency"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    n_killed = _count(db)
    assert 90 <= n_killed < _count(full / "trials.sqlite")
    assert not (killed / "retrieval_dataset.yaml").exists()

    _finish(_run(killed, 0.0), killed)
    assert _strip(killed / "retrieval_dataset.yaml") == _strip(full / "retrieval_dataset.yaml")
    for name in ("qrels/test.tsv", "qrels.trec"):
        assert (killed / name).read_text() == (full / name).read_text()

    # The same trials, seeds, subsets and outcomes, row for row.
    def rows(d: Path) -> list[tuple[object, ...]]:
        con = sqlite3.connect(d / "trials.sqlite")
        try:
            sql = "SELECT case_id, kind, trial_index, seed, inclusion, outcome, value FROM trials ORDER BY case_id, kind, trial_index"
            return con.execute(sql).fetchall()
        finally:
            con.close()

    assert rows(killed) == rows(full)
