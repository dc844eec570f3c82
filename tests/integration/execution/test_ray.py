"""The Ray executor on a real local Ray cluster: the same trials and dataset as in-process, whatever the workers do.

One cluster serves the whole module (``ray.init(num_cpus=2)``: about 5 s and 620 MB here), shut down after it. Ray's
usage statistics are off, and the dashboard is not started: nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

import deltap  # noqa: E402
from deltap.errors import DeltapError  # noqa: E402
from deltap.execution.base import SolverSpec  # noqa: E402
from deltap.execution.ray_cluster import RAY_ENV, RayExecutor  # noqa: E402
from deltap.mining.config import MiningConfig  # noqa: E402
from deltap.mining.engine import mine  # noqa: E402
from deltap.solvers.simulated import SimulatedSolver  # noqa: E402
from tests.helpers import PLAN_TIMINGS  # noqa: E402
from tests.integration.mining.test_resume_after_kill import _count  # noqa: E402  (trials logged so far, read-only)
from tests.unit.execution.test_executors import artefacts, job, rows  # noqa: E402

pytestmark = pytest.mark.integration

CFG = MiningConfig(budget=48, n_placebo=4, seed=11, first_look=16, batch=8)


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """A local two-CPU Ray cluster whose workers import this checkout's deltap (not another installed copy)."""
    saved = {k: os.environ.get(k) for k in [*RAY_ENV, "PYTHONPATH"]}
    os.environ.update(RAY_ENV)
    src = str(Path(deltap.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])])
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False, namespace="deltap-tests"
    )
    try:
        yield
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(out: Path, spec: SolverSpec, executor: Any = None, **kw: Any) -> Any:
    cases, corpus, _ = job(kw.pop("n_cases", 4))
    return mine(cases, corpus, spec.build(), out=out, config=CFG, executor=executor, **kw)


@pytest.mark.parametrize(
    "outcome, deterministic",
    [pytest.param("pass", False, id="pass-stochastic"), pytest.param("logprob", True, id="logprob-deterministic")],
)
def test_in_process_and_ray_with_one_or_three_workers_log_the_same_trials(
    tmp_path: Path, outcome: str, deterministic: bool
) -> None:
    """In-process, Ray with 1 worker, Ray with 3 workers and 3 cases in flight: the same trial records and the same
    dataset and qrels, byte for byte.

    Compared: every column of every trial, ordered by (case, kind, index), except ``created`` and ``latency`` — the
    wall-clock time a row was written and how long its call took measure the machine and the schedule, not the
    trial. The dataset and run summary are compared with their timestamps masked (``created``, ``wall_seconds``), as
    in the reproducibility test; ``run.json``'s ``execution`` (which executor ran it) is the one intended difference.
    """
    _, _, options = job()
    spec = SolverSpec("simulated", {**options, "outcome": outcome, "deterministic": deterministic})
    cfg_kw = {"outcome": outcome}
    runs = {
        "inprocess": _run(tmp_path / "inprocess", spec, **cfg_kw),
        "ray1": _run(tmp_path / "ray1", spec, RayExecutor(spec, workers=1), **cfg_kw),
        "ray3": _run(tmp_path / "ray3", spec, RayExecutor(spec, workers=3), **cfg_kw),
    }
    assert runs["ray3"].run["execution"]["executor"] == "ray" and runs["ray3"].run["execution"]["cases_in_flight"] == 3
    reference = rows(tmp_path / "inprocess")
    assert len(reference) > 100
    assert any(r[1] == "coalition" for r in reference)  # the coalition phase ran through the executor too
    if deterministic:
        assert any(str(r[-1]).startswith("cached:") for r in reference)  # repeated prompts answered from the log
    for name in ("ray1", "ray3"):
        assert rows(tmp_path / name) == reference, name
        assert artefacts(tmp_path / name) == artefacts(tmp_path / "inprocess"), name

        def summary(d: str) -> dict[str, Any]:
            run = json.loads((tmp_path / d / "run.json").read_text())
            for part in (run.get("spend") or {}, *((run.get("spend") or {}).get("by_case") or {}).values()):
                part.pop("solver_seconds", None)  # summed call latencies: a timing, like wall_seconds
            (run.get("plan_vs_spent") or {}).pop("seconds", None)  # the same timings, set against the plan
            for key in (*PLAN_TIMINGS, "workers"):  # timings (measured pace); the workers are the execution's
                (run.get("plan") or {}).pop(key, None)
            return {k: v for k, v in run.items() if k not in ("started", "ended", "wall_seconds", "execution")}

        assert summary(name) == summary("inprocess")


@pytest.mark.parametrize(
    "task_retries", [pytest.param(2, id="ray-retries-the-batch"), pytest.param(0, id="executor-resends-the-batch")]
)
def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path: Path, task_retries: int) -> None:
    """SIGKILL a replica's process while it holds a batch: Ray restarts it, and the batch is run again — by Ray's task
    retry, or (with none left) by the executor sending it again — and the run ends with exactly the trials of an
    undisturbed in-process run (same keys, same records, none twice)."""
    _, _, options = job(6)
    spec = SolverSpec("simulated", {**options, "latency": 0.01})  # 10 ms a call: batches take ~100 ms
    reference = _run(tmp_path / "reference", SolverSpec("simulated", options), n_cases=6)
    executor = RayExecutor(spec, workers=2, max_restarts=2, max_task_retries=task_retries)
    killed: dict[str, Any] = {}
    out = tmp_path / "killed"

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "pid" not in killed:
            n = _count(out / "trials.sqlite")
            busy = [i for i, b in enumerate(executor.in_flight()) if b] if executor.started else []
            if n >= 60 and busy:
                pid = executor.worker_pids()[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.update(pid=pid, trials=n)
                # wait for the replacement process, while the run goes on
                while time.monotonic() < deadline:
                    try:
                        pids = executor.worker_pids()
                    except Exception:  # noqa: BLE001 - the actor is restarting
                        pids = []
                    if len(pids) == 2 and pid not in pids:
                        killed["after"] = pids
                        return
                    time.sleep(0.05)
            time.sleep(0.01)

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        result = _run(out, spec, executor, n_cases=6)
    finally:
        thread.join()
    assert "pid" in killed, "the run ended before a worker could be killed"
    assert killed["pid"] not in killed["after"]  # a new process took its place
    assert killed["trials"] < len(rows(tmp_path / "reference"))  # it died mid-run
    assert rows(out) == rows(tmp_path / "reference")
    keys = [r[:3] for r in rows(out)]
    assert len(keys) == len(set(keys))
    assert artefacts(out) == artefacts(tmp_path / "reference")
    assert result.run["calls"] == reference.run["calls"]


def test_a_spec_that_builds_another_solver_is_refused() -> None:
    _, _, options = job()
    spec = SolverSpec("simulated", {**options, "seed": 99})
    with pytest.raises(DeltapError, match="the Ray workers built solver .* but the run's solver is"):
        RayExecutor(spec, workers=1).start(SimulatedSolver(**options))


def test_one_limiter_actor_paces_every_replica() -> None:
    """Two replicas call one OpenAI-compatible endpoint that allows 600 requests/min (a provider-style bucket of 2):
    they share one limiter actor, so none of the 56 calls is refused, and they cannot take less than 5 s (10 a
    second); two private limiters would send twice as fast and be refused about every other call.

    On a loaded machine a paced request can reach the server late and land beside the next one (twice in two
    ci-local runs with a model job beside them: one and two refusals, each retried): up to 3 refusals are jitter,
    not a second limiter."""
    from tests.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(requests_per_minute=600) as server:
        # the fake model writes no 'Answer:' line: the line off, as for a model that cannot follow it
        options = {"model": "m", "base_url": server.url, "requests_per_minute": 600, "answer_protocol": "off"}
        spec = SolverSpec("openai", options)
        executor = RayExecutor(spec, workers=2)
        cases, corpus, _ = job(4)
        result = mine(cases, corpus, spec.build(), config=CFG, executor=executor, cases_in_flight=2)
    assert result.run["cases_by_status"] == {"unsolvable": 4}  # 2 preflight + 12 confirming calls each
    assert len(server.refused) <= 3 and len(server.accepted) == 56  # every refused call retried and answered
    assert server.accepted[-1] - server.accepted[0] >= 5.0


def test_deltap_mine_executor_ray_gives_the_in_process_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI path: ``deltap mine --executor ray --workers 2`` (the driver's solver and the replicas' built from one
    SolverSpec) writes the trials and dataset of ``deltap mine`` in-process."""
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
    main([*base, "--out", str(tmp_path / "inprocess")])
    main([*base, "--out", str(tmp_path / "ray"), "--executor", "ray", "--workers", "2"])
    assert "executed: ray, 2 worker(s), 2 case(s) in flight" in capsys.readouterr().err
    assert rows(tmp_path / "ray") == rows(tmp_path / "inprocess")
    assert artefacts(tmp_path / "ray") == artefacts(tmp_path / "inprocess")


def test_the_local_model_in_two_replicas_gives_the_in_process_trials(tmp_path: Path) -> None:
    """The real SmolLM2 solver built from ``SolverSpec("local")`` in two replicas (one CPU each, the model loaded once
    per replica, one case per replica): the same log-probabilities, to the last bit, as in-process — llama.cpp's
    results do not depend on what its KV cache held before (flash attention off)."""
    pytest.importorskip("llama_cpp")
    from deltap.cases import Case, CheckerSpec
    from deltap.documents import Corpus, Document

    try:
        spec = SolverSpec("local", {"n_threads": 1})
        solver = spec.build()
    except DeltapError as exc:  # the model package is not installed
        pytest.skip(str(exc))
    corpus = Corpus(
        [
            Document("json.dumps", "json.dumps(obj): serialize obj to a JSON formatted str."),
            Document("heapq.nsmallest", "heapq.nsmallest(n, iterable): return the n smallest elements."),
            Document("math.gcd", "math.gcd(a, b): greatest common divisor."),
            Document("shlex.quote", "shlex.quote(s): return a shell-escaped version of the string s."),
            Document("base64.b64encode", "base64.b64encode(s): encode bytes using Base64."),
        ]
    )
    cases = [
        Case(f"c{i}", q, gold_doc_ids=(g,), checker=CheckerSpec("string_match", {"answers": [g]}), reference_answer=g)
        for i, (q, g) in enumerate(
            [
                ("Which function makes a string safe for a shell?", "shlex.quote"),
                ("Which function turns a Python object into JSON text?", "json.dumps"),
            ]
        )
    ]
    cfg = MiningConfig(outcome="logprob", budget=16, first_look=8, batch=8, n_placebo=2, seed=0, k=0)
    import warnings

    from deltap.mining.results import PlaceboCalibrationWarning

    with warnings.catch_warnings():  # 4 placebos are too few for the placebo check: not what this test is about
        warnings.simplefilter("ignore", PlaceboCalibrationWarning)
        mine(cases, corpus, solver, out=tmp_path / "inprocess", config=cfg)
        executor = RayExecutor(spec, workers=2)
        result = mine(cases, corpus, spec.build(), out=tmp_path / "ray", config=cfg, executor=executor)
    assert result.run["execution"]["cases_in_flight"] == 2  # one replica per case
    reference = rows(tmp_path / "inprocess")
    assert len(reference) >= 30 and any(r[7] == "score" for r in reference)
    assert rows(tmp_path / "ray") == reference
    assert artefacts(tmp_path / "ray") == artefacts(tmp_path / "inprocess")


def test_endtoend_on_ray_gives_the_in_process_result(tmp_path: Path) -> None:
    """Issue 26: ``evaluate_end_to_end`` (``deltap endtoend --executor ray``) on two Ray replicas asks the same
    prompts with the same seeds as in-process: the same per-case values, summary and trial log."""
    import shutil
    import sqlite3

    from deltap.endtoend import EndToEndConfig, evaluate_end_to_end

    cases, corpus, options = job(4)
    spec = SolverSpec("simulated", options)
    inproc, on_ray = tmp_path / "inprocess", tmp_path / "ray"
    mine(cases, corpus, spec.build(), out=inproc, config=CFG)
    shutil.copytree(inproc, on_ray)
    cfg = EndToEndConfig(k=2, outcome="pass", repeats=3, seed=5, n_resamples=200, n_permutations=200)
    kw: dict[str, Any] = {"retrievers": ("bm25",), "controls": ("none", "gold", "all"), "config": cfg}
    a = evaluate_end_to_end(inproc, cases, corpus, spec.build(), **kw)
    b = evaluate_end_to_end(on_ray, cases, corpus, spec.build(), executor=RayExecutor(spec, workers=2), **kw)
    assert a.systems == b.systems and a.run["calls"] == b.run["calls"] == 4 * 4 * 3
    assert a.values.tolist() == b.values.tolist()
    assert {s: a.summary[s]["mean"] for s in a.systems} == {s: b.summary[s]["mean"] for s in b.systems}
    assert a.checker == b.checker and a.checker["replies"] == 48  # how the checker read the replies, per system too

    def trials(run: Path) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(run / "endtoend" / "trials.sqlite")
        try:
            return con.execute("SELECT case_id, kind, trial_index, outcome FROM trials ORDER BY 1, 2, 3").fetchall()
        finally:
            con.close()

    assert trials(inproc) == trials(on_ray) and len(trials(inproc)) == 48
