"""``deltap relabel`` (issue 35 item 2): a run's labels re-derived from its trial log with other labelling options and
no solver call; the original untouched; options that need calls refused in one line; a stopped run relabelled."""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deltap.cases import Case
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.mining.engine import mine
from deltap.mining.relabel import relabel
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLogReader
from tests.helpers import answering_solver, numbered_corpus, string_case


def _files(run: Path) -> dict[str, str]:
    """Every output file of a run directory but the log, as text (the dataset's creation time masked)."""
    out = {}
    for path in sorted(run.rglob("*")):
        name = str(path.relative_to(run))
        if not path.is_file() or name.startswith(("trials.", "run.json", "report.")):
            continue
        text = path.read_text(encoding="utf-8")
        out[name] = re.sub(r"created: '?[0-9T:+\-]+'?", "created: <masked>", text)
    assert {"retrieval_dataset.yaml", "qrels/test.tsv", "qrels.trec", "qrels.jsonl"} <= set(out)
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _trials(run: Path) -> int:
    with TrialLogReader(run / "trials.sqlite") as r:
        return len(r.trials())


@pytest.fixture(scope="module")
def pass_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``pass`` run with a stochastic solver: relevant, harmful and null documents, an interaction (coalitions on)."""
    corpus = numbered_corpus(40)
    truths = {
        "a": SimulatedTruth(0.1, {"d00": 0.6, "d01": 0.2}),
        "b": SimulatedTruth(0.5, {"d00": 0.3, "d01": -0.4}),
        "c": SimulatedTruth(0.1, {}, interactions={("d00", "d01"): 0.7}),
        "d": SimulatedTruth(0.2, {"d02": 0.15}),
    }
    cases = [string_case(c, ("d00", "d01", "d02")) for c in truths]
    out = tmp_path_factory.mktemp("pass") / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine(cases, corpus, answering_solver(truths), out=out, budget=96, n_placebo=4, retriever=None)
    return out


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A deterministic solver (a greedy model: repeated prompts answered from the log, one trial per coalition
    check, minimality by trials) with two preflight trials asked once."""
    corpus = numbered_corpus(30)
    truths = {
        "g": SimulatedTruth(0.1, {}, interactions={("d00", "d01"): 0.8}),
        "h": SimulatedTruth(0.2, {"d00": 0.7}),
        "i": SimulatedTruth(0.3, {"d01": 0.5, "d02": -0.3}),
    }
    cases = [string_case(c, ("d00", "d01", "d02")) for c in truths]
    out = tmp_path_factory.mktemp("greedy") / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine(cases, corpus, answering_solver(truths, deterministic=True), out=out, budget=64, n_placebo=3, preflight=2)
    return out


def _logprob_world(n: int = 8) -> tuple[list[Case], Corpus, dict[str, SimulatedTruth]]:
    """Every document moves the log-prob by its own amount (text effects); gold documents help by 0.4 to 2 nats."""
    rng = np.random.default_rng(7)
    corpus = numbered_corpus(60)
    text = {d.doc_id: float(0.4 * rng.standard_normal()) for d in corpus}
    cases, truths = [], {}
    for i in range(n):
        gold = (f"d{2 * i:02d}", f"d{2 * i + 1:02d}")
        cases.append(string_case(f"l{i}", gold))
        truths[f"l{i}"] = SimulatedTruth(
            -6.0, {**text, gold[0]: text[gold[0]] + 2.0, gold[1]: text[gold[1]] + 0.4 * (i % 3)}
        )
    return cases, corpus, truths


@pytest.fixture(scope="module")
def logprob_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cases, corpus, truths = _logprob_world()
    out = tmp_path_factory.mktemp("logprob") / "run"
    solver = SimulatedSolver(truths, outcome="logprob", noise=0.6, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine(
            cases,
            corpus,
            solver,
            out=out,
            outcome="logprob",
            budget=48,
            first_look=24,
            batch=8,
            n_placebo=4,
            coalitions=False,
        )
    return out


@pytest.mark.parametrize("run", ["pass_run", "logprob_run", "greedy_run"])
def test_relabel_with_the_runs_own_options_gives_back_its_files(
    run: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    src: Path = request.getfixturevalue(run)
    before = {p: _digest(p) for p in src.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm", ".lock"))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = relabel(src, tmp_path / "same")
    assert _files(tmp_path / "same") == _files(src)  # byte for byte but the creation time
    assert res.run["relabel"]["calls"] == 0 and res.run["relabel"]["changed"] == {}
    assert res.run["relabel"]["verdicts_changed"] == {}
    assert res.run["relabel"]["trials_replayed"] == res.run["relabel"]["trials_logged"] == _trials(src)
    assert _trials(tmp_path / "same") == _trials(src)  # the copy: no trial added
    assert res.run["calls"] == json.loads((src / "run.json").read_text())["calls"]  # what the run spent, not relabel
    # how the checker read the replies is the run's own too (a relabel replays the logged verdicts)
    assert res.run.get("checker") == json.loads((src / "run.json").read_text()).get("checker")
    if run != "logprob_run":
        assert res.run["checker"]["replies"] > 0
    after = {p: _digest(p) for p in before}
    assert after == before  # the original is untouched


def test_relabel_with_other_labelling_options_changes_labels_at_no_cost(logprob_run: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = relabel(logprob_run, tmp_path / "zero", null="zero", q=0.3, gold_weight=1.0)
        topic = relabel(logprob_run, tmp_path / "topic", null="topic", gold_weight_learned=True)
    rel = res.run["relabel"]
    assert rel["calls"] == 0 and res.run["calls_this_process"] == 0
    assert rel["changed"] == {"null": [None, "zero"], "gold_weight": [8.0, 1.0], "q": [0.05, 0.3]}
    assert rel["null"] == "zero" and rel["verdicts_changed"]["undecided -> harmful"] > 0  # text effects, vs zero
    assert _trials(tmp_path / "zero") == _trials(logprob_run)
    meta = res.dataset.metadata
    assert meta["q"] == 0.3 and meta["config"]["null"] == "zero" and meta["config"]["gold_weight"] == 1.0
    assert res.dataset.metadata["placebo_calibration"]["null"]["used"] == "zero"
    assert topic.dataset.metadata["placebo_calibration"]["null"]["requested"] == "topic"
    assert topic.run["relabel"]["changed"] == {"null": [None, "topic"], "gold_weight_learned": [False, True]}
    # relabelling the relabelled directory back gives the run's own labels again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = relabel(tmp_path / "zero", tmp_path / "back", null=None, gold_weight=8.0, q=0.05)
    assert back.run["relabel"]["changed"] == {"null": ["zero", None], "gold_weight": [1.0, 8.0], "q": [0.3, 0.05]}
    assert _files(tmp_path / "back") == _files(logprob_run)


def test_changes_that_need_calls_are_refused_in_one_line(logprob_run: Path, tmp_path: Path) -> None:
    for options, flag in (
        ({"budget": 96}, "--budget 96"),
        ({"outcome": "pass"}, "--outcome pass"),
        ({"n_placebo": 8}, "--placebo 8"),
        ({"design": "bernoulli"}, "--design bernoulli"),
        ({"solver": "openai:gpt-4o"}, "another solver"),
    ):
        with pytest.raises(DeltapError) as err:
            relabel(logprob_run, tmp_path / "new", **options)
        msg = str(err.value)
        assert "\n" not in msg and flag in msg and "needs solver calls" in msg and "deltap mine" in msg
        assert not (tmp_path / "new").exists()  # nothing left behind
    same = relabel(logprob_run, tmp_path / "ok", budget=48, seed=0)  # the run's own values: accepted
    assert same.run["relabel"]["changed"] == {}
    with pytest.raises(DeltapError, match="not empty"):
        relabel(logprob_run, tmp_path / "ok")
    with pytest.raises(DeltapError, match="no option 'qq'"):
        relabel(logprob_run, tmp_path / "x", qq=0.1)


def test_a_relabelled_directory_is_not_mined_into(logprob_run: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        relabel(logprob_run, tmp_path / "view")
    cases, corpus, truths = _logprob_world()
    solver = SimulatedSolver(truths, outcome="logprob", noise=0.6, seed=2)
    with pytest.raises(DeltapError, match="relabelled from .* resume mining there"):
        mine(cases, corpus, solver, out=tmp_path / "view", outcome="logprob", budget=48, first_look=24, batch=8,
             n_placebo=4, coalitions=False)  # fmt: skip


class _StopsAfter:
    """A solver that is interrupted (Ctrl-C) at its ``n``-th call."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner, self.n, self.calls = inner, n, 0
        self.id = inner.id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def score(self, request: Any, reference: str) -> Any:
        self.calls += 1
        if self.calls >= self.n:
            raise KeyboardInterrupt
        return self.inner.score(request, reference)


def test_a_stopped_run_relabels_from_its_last_complete_looks(tmp_path: Path) -> None:
    cases, corpus, truths = _logprob_world()
    opts: dict[str, Any] = {"outcome": "logprob", "budget": 48, "first_look": 24, "batch": 8, "n_placebo": 4,
                            "coalitions": False}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = mine(cases, corpus, SimulatedSolver(truths, outcome="logprob", noise=0.6, seed=2), **opts)
        stopper = _StopsAfter(SimulatedSolver(truths, outcome="logprob", noise=0.6, seed=2), 3 * 50 + 30)
        with pytest.raises(KeyboardInterrupt):
            mine(cases, corpus, stopper, out=tmp_path / "stopped", **opts)
    assert not (tmp_path / "stopped" / "retrieval_dataset.yaml").exists()
    with pytest.raises(DeltapError, match="stopped before its end.*give the benchmark and the corpus"):
        relabel(tmp_path / "stopped", tmp_path / "r0")
    wrong = Corpus([Document(d.doc_id, d.text + " changed" if d.doc_id == "d00" else d.text) for d in corpus])
    with pytest.raises(DeltapError, match="the text of d00 differ"):
        relabel(tmp_path / "stopped", tmp_path / "r1", cases=cases, corpus=wrong)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = relabel(tmp_path / "stopped", tmp_path / "r2", cases=cases, corpus=corpus)
    status = {p["id"]: p["metadata"]["status"] for p in res.dataset.pairs}
    done = [c for c, s in status.items() if s != "incomplete"]
    assert res.run["relabel"]["incomplete"] and len(done) >= 2
    assert res.run["relabel"]["cases_left_out"] == [c.case_id for c in cases if c.case_id not in status]
    stopped = next(p for p in res.dataset.pairs if p["metadata"]["status"] == "incomplete")
    assert "last complete look" in stopped["metadata"]["reason"]
    full_pairs = {p["id"]: p for p in full.dataset.pairs}
    for p in res.dataset.pairs:  # a case the run finished has the same trials and estimates as in the full run
        if p["id"] in done:
            assert p["metadata"]["trials"] == full_pairs[p["id"]]["metadata"]["trials"]
            assert [c["delta_p"] for c in p["candidates"]] == [c["delta_p"] for c in full_pairs[p["id"]]["candidates"]]


def test_the_cli_relabels_writes_reports_and_refuses_calls_in_one_line(
    logprob_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers import run_cli

    code, out, err = run_cli(capsys, "relabel", logprob_run, "--out", tmp_path / "new", "--null", "zero", "--q", "0.3")
    assert code == 0, err
    assert out.strip() == str(tmp_path / "new" / "retrieval_dataset.yaml")
    flat = " ".join(err.split())
    assert "with 0 solver calls" in flat and "changed q 0.05 -> 0.3, null None -> zero" in flat
    assert (tmp_path / "new" / "report.html").is_file() and (tmp_path / "new" / "report.md").is_file()
    run = json.loads((tmp_path / "new" / "run.json").read_text())
    assert run["relabel"]["from"] == str(logprob_run.resolve()) and run["q"] == 0.3
    code, _, err = run_cli(capsys, "relabel", logprob_run, "--out", tmp_path / "more", "--budget", "200")
    lines = [line for line in err.splitlines() if line.strip()]
    assert (
        code == 2
        and len(lines) == 1
        and "--budget 200 (the run's: 48)" in lines[0]
        and "needs solver calls" in lines[0]
    )
    assert not (tmp_path / "more").exists()
    code, out, _ = run_cli(capsys, "relabel", "--help")
    assert code == 0 and "no solver call" in " ".join(out.split()) and "--gold-weight-learned" in out
    assert "--budget" not in out.split("Options:")[-1]  # hidden: only there to be refused


def test_relabel_regrades_with_another_grade_lfsr(logprob_run: Path, tmp_path: Path) -> None:
    """The graded labels are relabelled too: the run's own utilities, lfsr and intervals, with the grade gate asked."""
    from deltap.dataset import dataset_graded_qrels, read_dataset

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strict = relabel(logprob_run, tmp_path / "strict", grade_lfsr=0.1)
    assert strict.run["relabel"]["changed"] == {"grade_lfsr": [1.0, 0.1]} and strict.run["relabel"]["calls"] == 0
    own, new = (
        read_dataset(logprob_run / "retrieval_dataset.yaml"),
        read_dataset(tmp_path / "strict" / "retrieval_dataset.yaml"),
    )
    labels = {(c.case_id, d.doc_id): d.graded["gold"] for c in own.cases for d in c.candidates if d.graded}
    assert labels, "the run has graded labels"
    again = {(c.case_id, d.doc_id): d.graded["gold"] for c in new.cases for d in c.candidates if d.graded}
    assert {k: v.utility for k, v in again.items()} == {k: v.utility for k, v in labels.items()}  # same estimates
    for key, lab in labels.items():  # only the grade gate moved
        expect = lab.grade if lab.lfsr is not None and lab.lfsr <= 0.1 else 0
        assert again[key].grade == expect, key
    assert any(lab.grade and (lab.lfsr or 0) > 0.1 for lab in labels.values()), "the default grades an unsure one"
    graded_own = dataset_graded_qrels(own)
    assert sum(g > 0 for row in dataset_graded_qrels(new).values() for g in row.values()) < sum(
        g > 0 for row in graded_own.values() for g in row.values()
    )


def test_the_single_document_prior_needs_the_runs_lifts_and_uses_them(logprob_run: Path, tmp_path: Path) -> None:
    """``--single-doc-prior``: refused in one line without ``endtoend --single-doc`` results; with them, the graded
    labels' prior is split by the sign of each document's lift alone (recorded in the fit and in run.json)."""
    import shutil

    from deltap.errors import DeltapError

    with pytest.raises(DeltapError, match="--single-doc-prior needs the single-document lifts") as err:
        relabel(logprob_run, tmp_path / "none", single_doc_prior=True)
    assert "\n" not in str(err.value) and not (tmp_path / "none").exists()
    run = tmp_path / "run"
    shutil.copytree(logprob_run, run)
    from deltap.dataset import read_dataset

    data = read_dataset(run / "retrieval_dataset.yaml")
    labels = {  # a lift for every pooled document: the planted sign of its effect (a stand-in for eRAG's values)
        c.case_id: {d.doc_id: (1.0 if (d.delta_p or 0.0) > 0 else -1.0) for d in c.candidates} for c in data.cases
    }
    (run / "endtoend").mkdir()
    (run / "endtoend" / "results.json").write_text(
        json.dumps({"outcome": "logprob", "per_case": {}, "single_doc": {"labels": labels}}), encoding="utf-8"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = relabel(run, tmp_path / "plain")
        lifted = relabel(run, tmp_path / "lifted", single_doc_prior=True)
    n = sum(len(v) for v in labels.values())
    assert lifted.run["relabel"]["single_doc_prior"] == n and plain.run["relabel"]["single_doc_prior"] == 0
    assert lifted.run["relabel"]["calls"] == 0
    graded = lifted.dataset.metadata["graded"]
    assert "lift" in json.dumps(graded) and "lift" not in json.dumps(plain.dataset.metadata["graded"])
