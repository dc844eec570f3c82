"""The placebo check (issue 14 item 3): BH's reference rate q·R/M, an exact binomial test, one result everywhere."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deltap.cases import Case
from deltap.documents import Corpus
from deltap.mining import labels
from deltap.mining.engine import mine
from deltap.mining.placebo_check import check_from_dict, placebo_check, summary_lines
from deltap.mining.results import PlaceboCalibrationWarning
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from tests.helpers import numbered_corpus


def test_reference_is_q_r_over_m_not_q() -> None:
    # 3 of 20 placebos labelled while BH made 20 rejections among 200 tests: a null is labelled ~0.005 of the time,
    # so 3/20 is 30× too many. Compared with q = 0.05 (today's check) it passed: P(Bin(20, 0.05) ≥ 3) = 0.075.
    c = placebo_check(20, 3, rejections=20, tests=200, q=0.05)
    assert c.expected_rate == pytest.approx(0.005)
    assert c.p_value == pytest.approx(stats.binom.sf(2, 20, 0.005))
    assert c.failed and "FAILED" in c.message and "q·R/M = 0.0050" in c.message
    assert stats.binom.sf(2, 20, 0.05) > 0.05  # what the old reference said


def test_no_rejected_placebo_passes_and_no_placebo_says_so() -> None:
    assert not placebo_check(30, 0, 0, 300, 0.05).failed
    none = placebo_check(0, 0, 5, 50, 0.05)
    assert not none.failed and "no placebo" in none.message
    with pytest.raises(ValueError):
        placebo_check(3, 4, 10, 100, 0.05)


def test_power_and_size_of_the_check_by_simulation() -> None:
    # The figure: with 20 placebos a true rate of 15% was flagged ~35% of the time. Against q·R/M (R/M = 0.1):
    rng = np.random.default_rng(0)
    runs = 4000
    bad = rng.binomial(20, 0.15, runs)
    power = np.mean([placebo_check(20, int(x), 20, 200, 0.05).failed for x in bad])
    assert power > 0.75
    old = np.mean([stats.binom.sf(x - 1, 20, 0.05) < 0.05 and x / 20 > 0.05 for x in bad])
    assert old < 0.5  # the old test's power on the same draws
    # size: placebos labelled exactly at BH's rate: false alarms at most alpha
    ok = rng.binomial(20, 0.005, runs)
    assert np.mean([placebo_check(20, int(x), 20, 200, 0.05).failed for x in ok]) <= 0.05


def _world() -> tuple[list[Case], Corpus, SimulatedSolver]:
    corpus = numbered_corpus(40)
    rng = np.random.default_rng(3)
    text = {d.doc_id: float(0.5 * rng.standard_normal()) for d in corpus}
    truths = {f"t{i}": SimulatedTruth(-6.0, {**text, "d00": text["d00"] + 3.0}) for i in range(4)}
    cases = [Case(f"t{i}", f"question t{i}", gold_doc_ids=("d00",), reference_answer=f"ans-t{i}") for i in range(4)]
    return cases, corpus, SimulatedSolver(truths, outcome="logprob", noise=0.2, seed=1)


def test_every_output_says_the_same_thing(tmp_path: Path) -> None:
    # A solver that reacts to any text, tested against zero: the placebos get labelled and the check must fail —
    # identically in run.json, retrieval_dataset.yaml, the warning and the report (they disagreed before).
    import yaml

    from deltap.report import load_run_dir, render_markdown

    cases, corpus, solver = _world()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mine(
            cases,
            corpus,
            solver,
            out=tmp_path,
            outcome="logprob",
            null="zero",
            budget=64,
            n_placebo=5,
            coalitions=False,
        )
    run = json.loads((tmp_path / "run.json").read_text())
    data = yaml.safe_load((tmp_path / "retrieval_dataset.yaml").read_text())
    check = run["placebo"]["check"]
    assert check["failed"] and run["placebo"]["warning"]
    assert data["metadata"]["placebo_calibration"]["check"] == check == res.run["placebo"]["check"]
    assert data["metadata"]["placebo_calibration"]["warning"] is True
    assert check_from_dict(check) is not None and check_from_dict(check).failed  # type: ignore[union-attr]
    messages = [str(w.message) for w in caught if issubclass(w.category, PlaceboCalibrationWarning)]
    assert messages and messages[0].startswith(check["message"])
    md = render_markdown(load_run_dir(tmp_path))
    assert check["message"] in md and "Placebo check FAILED" in md
    assert (check["message"], True) in summary_lines(run["placebo"])


def test_deltap_mine_ends_with_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltap.cli.app import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"pkg.D{i}", "title": "", "text": f"doc {i}"}) + "\n" for i in range(12))
    )
    bench = tmp_path / "bench.yaml"
    bench.write_text(
        "benchmarks:\n"
        "  - id: q1\n    question: Which class runs agents?\n    benchmark_type: api_understanding\n"
        "    answers:\n      - answer: Runner\n        fully_qualified_class_name: [pkg.D0]\n"
    )

    def run(out: str) -> str:
        main(
            [
                "mine",
                str(bench),
                "--corpus",
                str(corpus),
                "--retriever",
                "none",
                "--solver",
                "simulated",
                "--sim-effect",
                "0.6",
                "--budget",
                "64",
                "--placebo",
                "3",
                "--out",
                str(tmp_path / out),
            ]
        )
        captured = capsys.readouterr()
        return captured.err + captured.out  # the summary goes to stderr, the dataset path to stdout

    text = run("ok")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert any(ln.startswith("placebo check passed") for ln in lines[-3:]), text
    real = labels.placebo_check

    def always_fails(*args: Any, **kw: Any) -> Any:  # the same function at alpha > 1: every check fails
        return real(*args, **{**kw, "alpha": 1.01})

    monkeypatch.setattr(labels, "placebo_check", always_fails)
    text = run("bad")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert any(ln.startswith("placebo check FAILED") for ln in lines[-3:]), text


def test_labelled_placebos_are_listed_with_whether_they_name_the_reference_answer(tmp_path: Path) -> None:
    # Issue 28 (ADK, session 9): a random placebo can be truly relevant — a BaseLlm subclass drawn for "the core
    # interface for all LLM integrations?". Each labelled placebo is listed (run.json, the dataset), with whether its
    # text names the case's reference answer, and the check's message says so when one does.
    from deltap.documents import Document

    cases, corpus, solver = _world()
    named = Corpus(
        [Document(d.doc_id, d.text + (" see ans-t0 here" if int(d.doc_id[1:]) % 2 else ""), d.title) for d in corpus]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine(
            cases, named, solver, out=tmp_path, outcome="logprob", null="zero", budget=64, n_placebo=5, coalitions=False
        )
    run = json.loads((tmp_path / "run.json").read_text())
    listed = run["placebo"]["labelled"]
    assert len(listed) == min(run["placebo"]["labelled_relevant"] + run["placebo"]["labelled_harmful"], 10) > 0
    for p in listed:
        assert p["names_reference"] == (p["case_id"] == "t0" and int(p["doc_id"][1:]) % 2 == 1)
        assert p["verdict"] in ("relevant", "harmful") and isinstance(p["effect"], float)
    naming = [p for p in listed if p["names_reference"]]
    message = run["placebo"]["check"]["message"]
    assert naming and "1 of the 8 labelled placebo(s) name the case's reference answer" in message
