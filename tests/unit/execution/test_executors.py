"""The executor seam in-process: several cases at once give the very same trials and dataset as one at a time.

Ray itself is tested in ``tests/integration/execution/test_ray.py``; here nothing may import it.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.execution.base import Batch, SolverSpec, solve_batch
from deltap.execution.concurrent import map_cases
from deltap.execution.local import InProcessExecutor
from deltap.mining.config import MiningConfig
from deltap.mining.engine import mine
from deltap.mining.progress import MiningProgress
from deltap.solvers.base import SolveRequest
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
from deltap.trials.log import TrialLog, TrialRecord
from tests.unit.project.test_reproducible import _mask

#: columns compared between runs: all but ``created`` (when the row was written) and ``latency`` (how long the
#: call took): both measure the machine, not the trial
COLUMNS = (
    "case_id, kind, trial_index, seed, inclusion, prompt_hash, answer, outcome, value, solver_id, checker_id, detail"
)


def job(n_cases: int = 4) -> tuple[list[Case], Corpus, dict[str, Any]]:
    """A small mining job: cases with two helpful documents and an interacting pair (coalition checks run)."""
    corpus = Corpus([Document(f"d{i:02d}", f"text {i} " + "x" * (i % 7)) for i in range(30)])
    cases = [
        Case(
            f"c{j}",
            f"q{j}",
            gold_doc_ids=("d00", "d01", "d02"),
            checker=CheckerSpec("string_match", {"answers": [f"a{j}"]}),
            reference_answer=f"a{j}",
        )
        for j in range(n_cases)
    ]
    truth = {c.case_id: SimulatedTruth(0.1, {"d00": 0.5, "d01": 0.3}, {("d02", "d03"): 0.2}) for c in cases}
    options = {"truth": truth, "answers": {c.case_id: c.reference_answer for c in cases}, "seed": 3}
    return cases, corpus, options


def rows(out: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(out / "trials.sqlite")
    try:
        return con.execute(f"SELECT {COLUMNS} FROM trials ORDER BY case_id, kind, trial_index").fetchall()
    finally:
        con.close()


def artefacts(out: Path) -> dict[str, str]:
    files = ["retrieval_dataset.yaml", "qrels/test.tsv", "qrels.trec", "qrels.jsonl", "qrels/provenance.json"]
    return {f: _mask(f, (out / f).read_text()) for f in files}


CFG = MiningConfig(budget=48, n_placebo=4, seed=11, first_look=16, batch=8)


def test_cases_in_flight_give_the_same_trials_and_dataset(tmp_path: Path) -> None:
    """One case at a time (the old engine's order) vs four threads of calls and three cases in flight."""
    cases, corpus, options = job()
    serial, concurrent = tmp_path / "serial", tmp_path / "concurrent"
    a = mine(cases, corpus, SimulatedSolver(**options), out=serial, config=CFG)
    b = mine(cases, corpus, SimulatedSolver(**options), out=concurrent, config=CFG, workers=4, cases_in_flight=3)
    assert a.run["execution"] == {"executor": "inprocess", "workers": 1, "slots": 1, "cases_in_flight": 1}
    assert b.run["execution"] == {"executor": "inprocess", "workers": 4, "slots": 4, "cases_in_flight": 3}
    assert len(rows(serial)) > 150 and rows(serial) == rows(concurrent)
    assert artefacts(serial) == artefacts(concurrent)  # "workers" is how it ran, not what the dataset is
    assert any(r["coalition_check"] for r in [p["metadata"] for p in a.dataset.pairs] if "coalition_check" in r)


class _Gate:
    """A thread-safe solver whose first call of each case waits until ``n`` cases are calling at once."""

    def __init__(self, inner: SimulatedSolver, n: int) -> None:
        self.inner, self.id, self.deterministic = inner, inner.id, False
        self.barrier = threading.Barrier(n, timeout=20)
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def answer(self, request: SolveRequest) -> Any:
        with self.lock:
            first = request.case_id not in self.seen
            self.seen.add(request.case_id)
        if first:
            self.barrier.wait()  # BrokenBarrierError (a failed run) unless n cases are in flight together
        return self.inner.answer(request)

    def score(self, request: SolveRequest, reference: str) -> Any:
        return self.inner.score(request, reference)


def test_cases_really_run_at_once(tmp_path: Path) -> None:
    cases, corpus, options = job(3)
    gate = _Gate(SimulatedSolver(**options), 3)
    res = mine(cases, corpus, gate, config=CFG, workers=3, cases_in_flight=3, coalitions=False)
    assert gate.seen == {"c0", "c1", "c2"} and res.run["cases"] == 3


class _Exclusive(SimulatedSolver):
    """A solver that is not thread-safe (like the local model) and records any overlap of its calls."""

    thread_safe = False

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._busy = threading.Lock()
        self.overlaps = 0
        self.batches: list[int] = []

    def answer_many(self, requests: list[SolveRequest]) -> list[Any]:
        if not self._busy.acquire(blocking=False):
            self.overlaps += 1
            self._busy.acquire()
        try:
            self.batches.append(len(requests))
            threading.Event().wait(0.002)  # give another thread every chance to overlap
            return [self.answer(r) for r in requests]
        finally:
            self._busy.release()


def test_a_solver_that_is_not_thread_safe_gets_one_batch_at_a_time(tmp_path: Path) -> None:
    cases, corpus, options = job(3)
    solver = _Exclusive(**options)
    ex = InProcessExecutor(workers=4)
    res = mine(cases, corpus, solver, config=CFG, executor=ex, cases_in_flight=3, coalitions=False)
    assert solver.overlaps == 0 and max(solver.batches) >= 8  # whole batches, never two at once
    assert res.run["execution"]["slots"] == 1  # and by default it would have mined one case at a time
    default = mine(
        cases, corpus, _Exclusive(**options), config=CFG, executor=InProcessExecutor(workers=4), coalitions=False
    )
    assert default.run["execution"]["cases_in_flight"] == 1


class _Boom(SimulatedSolver):
    def answer(self, request: SolveRequest) -> Any:
        if request.case_id == "c2":
            raise ValueError("a bug in the solver")
        return super().answer(request)


def test_a_bug_in_one_case_stops_the_run_with_its_error(tmp_path: Path) -> None:
    cases, corpus, options = job(6)
    with pytest.raises(ValueError, match="a bug in the solver"):
        mine(cases, corpus, _Boom(**options), out=tmp_path / "run", config=CFG, workers=3, cases_in_flight=3)
    assert not (tmp_path / "run" / "retrieval_dataset.yaml").exists()
    with TrialLog(tmp_path / "run" / "trials.sqlite") as log:  # the lock was released: the run can be resumed
        assert log.count() > 0


def test_progress_with_cases_in_flight_counts_every_call_once(tmp_path: Path) -> None:
    cases, corpus, options = job(4)
    events: list[dict[str, Any]] = []
    display = MiningProgress(len(cases), enabled=False, config=CFG)

    def both(event: dict[str, Any]) -> None:
        events.append(event)
        display(event)

    res = mine(cases, corpus, SimulatedSolver(**options), config=CFG, workers=2, cases_in_flight=2, progress=both)
    calls = [e["calls"] for e in events]
    assert calls == sorted(calls) and calls[-1] == res.run["calls"]
    assert {e["in_flight"] for e in events if "in_flight" in e} == {2}
    assert len(display.finished) == 4 and display.active == {}
    assert display.ceiling() == res.run["calls"]  # nothing left to come once every case is done


def test_map_cases_keeps_order_limits_threads_and_stops_at_the_first_error() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def square(x: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.01)
        with lock:
            running -= 1
        return x * x

    assert map_cases(square, list(range(12)), 3) == [x * x for x in range(12)]
    assert 1 <= most <= 3
    started: list[int] = []

    def fail_on_1(x: int) -> int:
        started.append(x)
        if x == 1:
            raise KeyError("one")
        threading.Event().wait(0.05)
        return x

    with pytest.raises(KeyError):
        map_cases(fail_on_1, list(range(40)), 2)
    assert len(started) < 40  # cases not started when the error came never start


def test_append_once_is_idempotent_by_trial_key_and_safe_across_threads(tmp_path: Path) -> None:
    rec = TrialRecord("c", "design", 0, 1, "01", "h", "a", "pass", 1.0, 0.1, "s", "k")
    with TrialLog(tmp_path / "t.sqlite") as log:
        assert log.append_once(rec) == rec
        again = TrialRecord("c", "design", 0, 1, "01", "h", "b", "fail", 0.0, 0.2, "s", "k")
        assert log.append_once(again) == rec  # the first record of a key is the one that counts
        assert log.count() == 1

        def write(t: int) -> None:
            for i in range(50):
                log.append_once(TrialRecord(f"t{t}", "design", i, i, "1", None, None, "pass", 1.0, 0.0, "s", "k"))

        threads = [threading.Thread(target=write, args=(t,)) for t in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert log.count() == 1 + 6 * 50


def test_solve_batch_uses_the_batch_method_and_keeps_errors_in_their_slot() -> None:
    solver = SimulatedSolver(SimulatedTruth(0.5), answers={"c": "a"}, outcome="logprob", error_rate=0.5, seed=1)
    reqs = tuple(SolveRequest("c", "q", extra={"trial_seed": i}) for i in range(20))
    out = solve_batch(solver, Batch("c", "logprob", reqs, "a"))
    kinds = {type(r).__name__ for r in out}
    assert len(out) == 20 and kinds == {"Score", "SolverError"}


def test_solver_spec_builds_by_kind_or_by_import_path() -> None:
    truth = SimulatedTruth(0.2, answer="x")
    by_kind = SolverSpec("simulated", {"truth": truth, "seed": 4}).build()
    by_path = SolverSpec("deltap.solvers.simulated:SimulatedSolver", {"truth": truth, "seed": 4}).build()
    assert by_kind.id == by_path.id == SimulatedSolver(truth, seed=4).id
    with pytest.raises(DeltapError, match="unknown solver kind"):
        SolverSpec("nope").build()


def test_ray_executor_without_ray_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from deltap.execution.ray_cluster import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    ex = RayExecutor(SolverSpec("simulated", {"truth": SimulatedTruth(0.2, answer="x")}), workers=1)
    with pytest.raises(DeltapError, match=r"pip install 'deltap\[ray\]'"):
        ex.start(SimulatedSolver(SimulatedTruth(0.2, answer="x")))
    with pytest.raises(DeltapError, match="SolverSpec"):
        RayExecutor(SimulatedSolver(), workers=1)  # type: ignore[arg-type]


def test_ray_is_never_imported_unless_asked_for() -> None:
    """``import deltap``, ``deltap --help``, ``deltap demo --help``, ``deltap mine --help`` and an in-process mining
    run do not load Ray."""
    code = """
import sys
import deltap
from deltap.cli.app import main
for argv in (["--help"], ["demo", "--help"], ["mine", "--help"]):
    try:
        main(argv)
    except SystemExit:
        pass
from deltap.cases import Case, CheckerSpec
from deltap.documents import Corpus, Document
from deltap.execution import InProcessExecutor, make_executor
from deltap.mining.engine import mine
from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
corpus = Corpus([Document(f"d{i}", "t") for i in range(6)])
case = Case("c", "q", gold_doc_ids=("d0",), checker=CheckerSpec("string_match", {"answers": ["a"]}), reference_answer="a")
mine([case], corpus, SimulatedSolver(SimulatedTruth(0.2, {"d0": 0.5}), answers={"c": "a"}), budget=8, n_placebo=2,
     executor=make_executor("inprocess", workers=2))
print("RAY_LOADED" if any(m == "ray" or m.startswith("ray.") for m in sys.modules) else "RAY_ABSENT")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "RAY_ABSENT"


def test_cli_executor_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main
    from tests.helpers import mine_files

    corpus, bench = mine_files(tmp_path)
    base = [
        "mine",
        str(bench),
        "--corpus",
        str(corpus),
        "--retriever",
        "none",
        "--solver",
        "simulated",
        "--budget",
        "32",
        "--placebo",
        "3",
    ]
    for extra, message in (
        (["--ray-address", "auto"], "need --executor ray"),
        (["--executor", "spark"], "--executor must be one of inprocess, ray"),
        (["--rpm", "60"], "paces the openai and gemini solvers"),
    ):
        with pytest.raises(SystemExit) as exc:
            main([*base, "--out", str(tmp_path / "x"), *extra])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    main([*base, "--out", str(tmp_path / "one")])
    main([*base, "--out", str(tmp_path / "two"), "--workers", "3", "--cases-in-flight", "2"])
    assert rows(tmp_path / "one") == rows(tmp_path / "two")
    assert artefacts(tmp_path / "one") == artefacts(tmp_path / "two")
