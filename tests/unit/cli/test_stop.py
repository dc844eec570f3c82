"""Ctrl-C and SIGTERM on `deltap mine`: stopped within a few seconds, one line, exit 130, no traceback, and a resume
that makes exactly the trials (and the dataset) of an uninterrupted run.

The runs are real `deltap mine` processes (the simulated solver, whose every call sleeps, so a signal lands while
calls are in flight), signalled the way a terminal's Ctrl-C does it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SRC = str(Path(__file__).resolve().parents[3] / "src")


def _inputs(tmp_path: Path, n_cases: int = 4) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.jsonl"
    words = "lift drag wing flap stall agent tool session memory runner event plate flow shock nozzle".split()
    with corpus.open("w", encoding="utf-8") as fh:
        for i in range(40):
            text = " ".join(words[(i * 3 + j) % len(words)] for j in range(12))
            fh.write(json.dumps({"_id": f"d{i:02d}", "title": f"doc {i}", "text": f"{text} number {i}"}) + "\n")
    cases = tmp_path / "questions.jsonl"
    with cases.open("w", encoding="utf-8") as fh:
        for c in range(n_cases):
            gold = [f"d{c:02d}", f"d{c + 10:02d}"]
            fh.write(json.dumps({"id": f"q{c}", "question": f"what about {words[c]} {words[c + 3]}?", "answers": [f"a{c}"],
                                 "gold_ids": gold}) + "\n")  # fmt: skip
    return cases, corpus


def _mine_cmd(cases: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "deltap", "mine", str(cases), "--corpus", str(corpus), "--out", str(out),
        "--retriever", "bm25", "--top-k", "3", "--placebo", "3", "--solver", "simulated", "--budget", "24",
        "--solver-option", "latency=0.03", "--seed", "5", *extra,
    ]  # fmt: skip


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "DELTAP_PROGRESS_EVERY": "0.5",
    }


def _trials(out: Path) -> int:
    from deltap.cli.stopping import logged_trials

    return logged_trials(out / "trials.sqlite") or 0


def _interrupted(cmd: list[str], out: Path, after_trials: int, sig: int = signal.SIGINT) -> tuple[int, str, float]:
    """Run ``cmd``; once the log holds ``after_trials`` trials, send ``sig``; ``(exit code, stderr, seconds to
    exit)``."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's foreground job
    )
    deadline = time.monotonic() + 120
    while _trials(out) < after_trials:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the trials to interrupt at"
        time.sleep(0.05)
    proc.send_signal(sig)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err, time.monotonic() - sent


def _finish(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _trial_rows(out: Path) -> list[tuple[Any, ...]]:
    """Every trial as what it decided: case, kind, index, seed, inclusion, answer, outcome, value."""
    from deltap.trials.log import TrialLogReader

    with TrialLogReader(out / "trials.sqlite") as reader:
        rows = [row.record for row in reader.trials()]
    return sorted(
        (r.case_id, r.kind, r.trial_index, r.seed, r.inclusion, r.answer, r.outcome, r.value, r.detail) for r in rows
    )


def _labels(out: Path) -> Any:
    import yaml

    data = yaml.safe_load((out / "retrieval_dataset.yaml").read_text(encoding="utf-8"))
    return [
        {k: v for k, v in pair.items() if k != "metadata"} | {"calls": pair["metadata"].get("calls")}
        for pair in data["pairs"]
    ]


@pytest.mark.parametrize(
    ("extra", "sig"),
    [((), signal.SIGINT), (("--workers", "3", "--cases-in-flight", "3"), signal.SIGTERM)],
    ids=["one-case-at-a-time-sigint", "three-cases-in-flight-sigterm"],
)
def test_a_stopped_run_resumes_into_the_uninterrupted_run(tmp_path: Path, extra: tuple[str, ...], sig: int) -> None:
    cases, corpus = _inputs(tmp_path)
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    _finish(_mine_cmd(cases, corpus, whole, *extra))

    for stop_at in (10, 45):  # twice, in the middle of calls, then run to the end
        code, err, seconds = _interrupted(_mine_cmd(cases, corpus, parts, *extra), parts, stop_at, sig)
        assert code == 130, err
        assert seconds < 5, seconds  # within a few seconds, the calls in flight abandoned
        assert "Traceback" not in err and "internal error" not in err
        last = err.strip().splitlines()[-1]
        assert last.startswith("stopped: ") and last.endswith(" trials logged in " + str(parts / "trials.sqlite") +
                                                             "; resume with the same command"), last  # fmt: skip
        assert int(last.split()[1].replace(",", "")) == _trials(parts)  # the line counts what the log holds
    _finish(_mine_cmd(cases, corpus, parts, *extra))

    assert _trial_rows(parts) == _trial_rows(whole)  # the same trials, the same answers
    assert _labels(parts) == _labels(whole)  # the same dataset
    for name in ("qrels/test.tsv", "qrels.trec"):
        assert (parts / name).read_text(encoding="utf-8") == (whole / name).read_text(encoding="utf-8")


def test_a_log_gets_plain_progress_lines(tmp_path: Path) -> None:
    cases, corpus = _inputs(tmp_path, n_cases=2)
    done = _finish(_mine_cmd(cases, corpus, tmp_path / "run"))
    lines = done.stderr.splitlines()
    ticks = [ln for ln in lines if ln.startswith("progress ")]
    assert len(ticks) >= 3, done.stderr  # every 0.5 s and at each case's end
    assert sum(" · case q" in ln and " ended: " in ln for ln in ticks) == 2
    assert ticks[-1].endswith(" · done")
    assert not any("\x1b" in ln or "\r" in ln for ln in lines)  # no terminal codes in a log


def _endtoend_trials(run: Path) -> int:
    from deltap.cli.stopping import logged_trials

    return logged_trials(run / "endtoend" / "trials.sqlite") or 0


def test_endtoend_stops_and_resumes_into_the_uninterrupted_run(tmp_path: Path) -> None:
    cases, corpus = _inputs(tmp_path, n_cases=6)
    for run in (tmp_path / "whole", tmp_path / "parts"):
        _finish([*_mine_cmd(cases, corpus, run)[:-4], "--seed", "5", "--budget", "8"])  # a quick mined run first

    def cmd(run: Path) -> list[str]:
        return [sys.executable, "-m", "deltap", "endtoend", str(run), str(cases), "--corpus", str(corpus),
                "--retriever", "bm25", "--controls", "none,gold", "--solver", "simulated", "--repeats", "3",
                "--solver-option", "latency=0.05"]  # fmt: skip

    _finish(cmd(tmp_path / "whole"))
    parts = tmp_path / "parts"
    proc = subprocess.Popen(cmd(parts), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 120
    while _endtoend_trials(parts) < 12:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - sent < 5, err
    last = err.strip().splitlines()[-1]
    expected = f"stopped: {_endtoend_trials(parts)} trials logged in {parts / 'endtoend' / 'trials.sqlite'}"
    assert last == expected + "; resume with the same command", last
    assert "Traceback" not in err
    _finish(cmd(parts))
    whole = json.loads((tmp_path / "whole" / "endtoend" / "results.json").read_text(encoding="utf-8"))
    resumed = json.loads((parts / "endtoend" / "results.json").read_text(encoding="utf-8"))
    assert resumed["summary"] == whole["summary"] and resumed["per_case"] == whole["per_case"]
    assert resumed["checker"] == whole["checker"] and whole["checker"]["replies"] > 0  # how the replies were read


def test_an_interrupted_index_says_what_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import deltap.retrieval.dense as dense
    from tests.helpers import run_cli

    _, corpus = _inputs(tmp_path)

    def interrupted(corpus: Any, store: Any, embedder: Any, *, progress: Any, **kw: Any) -> Any:
        progress(0, 40)
        progress(16, 40)
        raise KeyboardInterrupt

    monkeypatch.setattr(dense, "index_corpus", interrupted)
    code, _, err = run_cli(capsys, "index", corpus, "--store", tmp_path / "idx", "--embedder", "hash:16")
    assert code == 130
    assert err.strip().splitlines()[-1] == (
        f"stopped: 16 of 40 documents written to {tmp_path / 'idx' / 'deltap'} are kept; resume with the same command"
    )
