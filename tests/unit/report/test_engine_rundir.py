"""The report on a run directory the engine actually wrote (``mine()`` with the simulated solver into tmp_path).

The hand-written fixture of test_report.py pins the report's layout; this file checks that what the report shows of
a real run is what the run's own files say: qrels, grade mapping, verdict and status counts, placebo calibration,
one section and one forest plot per mined case. Expected values are read from the files the engine wrote, never
typed in, so the test follows the engine when its statistics change.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from deltap.judgements import load_qrels
from deltap.mining.config import MiningConfig
from deltap.mining.engine import mine
from deltap.mining.results import PlaceboCalibrationWarning
from deltap.report import load_run_dir, render_html, render_markdown
from deltap.report.figures import wilson_interval
from deltap.solvers.simulated import SimulatedTruth
from tests.helpers import answering_solver, numbered_corpus, string_case


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("engine-run")
    corpus = numbered_corpus(30)
    ids = ("a", "b", "sat")
    cases = [string_case(c, ("d00", "d01", "d02")) for c in ids]
    # d02 +0.15 in case a plants the grade-1 document (before the gold weight, a false positive supplied it)
    truths = {
        "a": SimulatedTruth(0.1, {"d00": 0.6, "d01": 0.25, "d02": 0.15}),
        "b": SimulatedTruth(0.7, {"d02": -0.5}),
        "sat": SimulatedTruth(1.0),
    }
    solver = answering_solver(truths, seed=2)
    # Unweighted, this seed's run labelled 2 of 8 placebos and the placebo check warned; with the gold prior weight the
    # placebos are down-weighted and it may not. Either way the report must show the check, not fail on it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlaceboCalibrationWarning)
        mine(cases, corpus, solver, out=out, budget=256, n_placebo=4, coalitions=False)
    return out


def _dataset(run_dir: Path) -> dict[str, Any]:
    return yaml.safe_load((run_dir / "retrieval_dataset.yaml").read_text(encoding="utf-8"))


def test_reader_sees_the_engines_qrels_and_grade_mapping(run_dir: Path) -> None:
    data = load_run_dir(run_dir)
    ds = _dataset(run_dir)
    from_dataset = {
        p["id"]: {c["doc_id"]: c["grade"] for c in p["candidates"] if c["grade"] is not None} for p in ds["pairs"]
    }
    from_dataset = {q: g for q, g in from_dataset.items() if g}
    assert data.qrels == load_qrels(run_dir / "qrels" / "test.tsv") == from_dataset
    assert {g for q in data.qrels.values() for g in q.values()} == {0, 1, 2, 3}  # the run exercises every grade
    assert data.metadata["grade_mapping"] == MiningConfig().policy().grade_mapping()
    assert data.notes == []


def test_reader_falls_back_to_the_dataset_grades(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "qrels")
    data = load_run_dir(copy)
    relevant = {
        q: {d: g for d, g in docs.items() if g > 0} for q, docs in load_qrels(run_dir / "qrels" / "test.tsv").items()
    }
    assert data.qrels == {q: docs for q, docs in relevant.items() if docs}
    assert any("qrels/test.tsv not found" in n for n in data.notes)


def test_markdown_counts_are_the_runs(run_dir: Path) -> None:
    ds = _dataset(run_dir)
    summary = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    md = render_markdown(load_run_dir(run_dir))
    verdicts = Counter(
        c["verdict"]
        for p in ds["pairs"]
        if p["metadata"]["status"] not in ("saturated", "unsolvable")
        for c in p["candidates"]
    )
    assert verdicts == Counter({k: v for k, v in summary["verdicts"].items() if v})
    line = ", ".join(f"{v} {summary['verdicts'].get(v, 0)}" for v in ("relevant", "harmful", "irrelevant", "undecided"))
    assert f"**Verdicts:** {line}" in md
    statuses = Counter(p["metadata"]["status"] for p in ds["pairs"])
    assert statuses["saturated"] == 1 and statuses["mined"] + statuses.get("budget_exhausted", 0) == 2
    assert "**Cases by status:** " + ", ".join(f"{k} {v}" for k, v in summary["cases_by_status"].items()) in md
    assert f"| solver calls | {summary['calls']} |" in md
    trials = sum(p["metadata"]["trials"] for p in ds["pairs"])
    assert f"| trials | {trials} |" in md
    for p in ds["pairs"]:
        row = next(r for r in md.splitlines() if r.startswith(f"| {p['id']} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:3] == [p["metadata"]["status"], str(p["metadata"]["trials"])]
        harmful = sum(c["verdict"] == "harmful" for c in p["candidates"])
        undecided = sum(c["verdict"] == "undecided" for c in p["candidates"])
        assert cells[5:7] == [str(harmful), str(undecided)]
        relevant = [
            c["doc_id"]
            for c in sorted(p["candidates"], key=lambda c: -(c["delta_p"] or 0.0))
            if c["verdict"] == "relevant"
        ]
        assert re.findall(r"`([^`]+)`", cells[4]) == relevant[:3]
    pl = summary["placebo"]
    flagged = pl["labelled_relevant"] + pl["labelled_harmful"]
    low, high = wilson_interval(flagged, pl["n"])
    assert f"({flagged}/{pl['n']}, 95% CI [{low:.3f}, {high:.3f}]) vs nominal {pl['nominal']:g}" in md


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_html_has_one_section_per_case_and_a_forest_per_case_with_candidates(run_dir: Path) -> None:
    ds = _dataset(run_dir)
    parser = _Tags()
    parser.feed(render_html(load_run_dir(run_dir)))
    details = [a for t, a in parser.tags if t == "details" and "case" in (a.get("class") or "")]
    assert [d["data-status"] for d in details] == [p["metadata"]["status"] for p in ds["pairs"]]
    n_rel = [str(sum(c["verdict"] == "relevant" for c in p["candidates"])) for p in ds["pairs"]]
    assert [d["data-relevant"] for d in details] == n_rel
    forests = [a for t, a in parser.tags if t == "svg" and a.get("class") == "plot forest"]
    assert len(forests) == sum(1 for p in ds["pairs"] if p["candidates"])
