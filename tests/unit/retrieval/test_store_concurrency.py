"""The embedded index (Qdrant Edge) under two processes: a reader during a build, two builders, a killed build.

Each second process is refused in one line or served; the build in progress is never harmed, and the index is
never left corrupt or failing with an "internal error".

The builder runs in a subprocess with a hashing embedder that pauses after its third batch until the test says go
(two files as a handshake), so the second process always arrives in the middle of the build: no timing luck.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[3] / "src")

# A build of N documents in batches of 10 through a hashing embedder that stops after its third batch: it writes
# `paused` and waits for `go` (or, without a go file, for ever: the killed-build test kills it there).
BUILDER = r"""
import sys, time
from pathlib import Path
from deltap.documents import Corpus, Document
from deltap.retrieval.cache import EmbeddingCache
from deltap.retrieval.dense import index_corpus
from deltap.retrieval.embedders import HashingEmbedder
from deltap.retrieval.factory import open_store

store, n, hand = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])

class Pausing(HashingEmbedder):
    calls = 0
    def embed_documents(self, texts):
        Pausing.calls += 1
        if Pausing.calls == 4:
            (hand / "paused").write_text("x")
            while not (hand / "go").exists():
                time.sleep(0.02)
        return super().embed_documents(texts)

words = "lift drag wing flap stall agent tool session memory runner event plate flow shock nozzle".split()
docs = [Document(f"chunk-{i}", " ".join(words[(i * 7 + j) % len(words)] for j in range(40)) + f" part {i}",
                 title=f"Section {i}", metadata={"heading": f"H{i}"}) for i in range(n)]
vs = open_store(store, "deltap", create=True)
try:
    with EmbeddingCache(hand / "cache") as cache:
        report = index_corpus(Corpus(docs, name="book"), vs, Pausing(16), cache=cache, batch_size=10)
finally:
    vs.close()
print("built", report.added, report.updated, report.unchanged, flush=True)
"""

# What a second process does: `open_index` (search, a plan), or `build_retriever` (what `mine --index` does: it
# brings the index up to date with its corpus, a writer).
SECOND = r"""
import sys
from pathlib import Path
from deltap.errors import DeltapError
store, role, hand = sys.argv[1], sys.argv[2], Path(sys.argv[3])
try:
    if role == "reader":
        from deltap.retrieval import open_index
        r = open_index(store, allow_incomplete=True)
        print("served", r.count, flush=True)
    else:
        from deltap.documents import Corpus, Document
        from deltap.retrieval import build_retriever
        r = build_retriever("dense", Corpus([Document("x", "lift drag")], name="other"), store=store,
                            embedder="hash:16", cache_dir=str(hand / "cache2"))
        print("served", r.count, flush=True)
    r.close()
except DeltapError as exc:
    print("refused", str(exc), flush=True)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _start_builder(store: Path, hand: Path, n: int = 300) -> subprocess.Popen[str]:
    hand.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", BUILDER, str(store), str(n), str(hand)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    deadline = time.monotonic() + 60
    while not (hand / "paused").exists():
        if proc.poll() is not None:
            raise AssertionError(f"the builder ended before its pause: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the builder never paused")
        time.sleep(0.02)
    return proc


def _second(store: Path, role: str, hand: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SECOND, str(store), role, str(hand)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _finish(proc: subprocess.Popen[str], hand: Path) -> tuple[int, str, str]:
    (hand / "go").write_text("x")
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.parametrize("role", ["reader", "builder"])
def test_a_second_process_during_a_build_is_refused_or_served_and_the_build_survives(tmp_path: Path, role: str) -> None:
    store, hand = tmp_path / "index", tmp_path / "hand"
    builder = _start_builder(store, hand)
    try:
        second = _second(store, role, hand)
    finally:
        code, out, err = _finish(builder, hand)
    assert code == 0 and out.startswith("built 300 0 0"), err  # the build in progress is never harmed
    assert "Tracker journal" not in err
    status, _, message = second.partition(" ")
    if status == "refused":  # one line, saying what holds the index and what to do
        assert "\n" not in message and "being built by another process" in message, message
    else:
        assert status == "served", second
    from deltap.retrieval import open_index

    with open_index(str(store)) as index:  # the finished index is whole
        assert index.count == 300
        assert index.info.complete


def test_the_refusal_names_the_build_and_what_to_do(tmp_path: Path) -> None:
    store, hand = tmp_path / "index", tmp_path / "hand"
    builder = _start_builder(store, hand)
    try:
        second = _second(store, "reader", hand)
    finally:
        _finish(builder, hand)
    assert second.startswith("refused the index at ")
    assert "is being built by another process (pid " in second
    assert "wait for the build to finish, then retry" in second


def test_a_killed_build_leaves_an_index_the_next_build_finishes(tmp_path: Path) -> None:
    from deltap.errors import DeltapError
    from deltap.retrieval import open_index

    store, hand = tmp_path / "index", tmp_path / "hand"
    builder = _start_builder(store, hand)
    builder.kill()  # SIGKILL in the middle of the build: no handler, no cleanup
    builder.communicate(timeout=60)
    with pytest.raises(DeltapError, match="incomplete .*re-run `deltap index`"):  # the lock went with the process
        open_index(str(store))
    shutil.rmtree(hand)
    resumed = _start_builder(store, hand)
    code, out, err = _finish(resumed, hand)
    assert code == 0, err
    added, updated, unchanged = (int(x) for x in out.split()[1:4])
    assert added + updated + unchanged == 300 and unchanged >= 30  # the batches written before the kill are kept
    with open_index(str(store)) as index:
        assert index.count == 300 and index.info.complete


def test_a_reader_waits_for_another_reader_then_is_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltap.documents import Corpus, Document
    from deltap.retrieval import build_retriever, open_index

    docs = Corpus([Document(f"d{i}", f"lift drag wing {i}") for i in range(20)], name="toy")
    build_retriever("dense", docs, store=tmp_path / "s", embedder="hash:16", cache_dir=tmp_path / "c").close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from deltap.retrieval import open_index; r = open_index(__import__('sys').argv[1]); "
            "print('open', flush=True); time.sleep(1.5); r.release(); print('released', flush=True); time.sleep(60)",
            str(tmp_path / "s"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        monkeypatch.setenv("DELTAP_INDEX_WAIT", "30")
        started = time.monotonic()
        with open_index(str(tmp_path / "s")) as index:  # waits for the release, then is served
            assert index.count == 20
        assert time.monotonic() - started < 25
    finally:
        holder.kill()
        holder.communicate(timeout=30)


def test_a_released_retriever_lets_another_process_in_and_reopens_on_its_next_search(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.retrieval import build_retriever

    docs = Corpus([Document(f"d{i}", f"lift drag wing {i}") for i in range(20)], name="toy")
    retriever = build_retriever("dense", docs, store=tmp_path / "s", embedder="hash:16", cache_dir=tmp_path / "c")
    try:
        before = retriever.search("lift drag", 3)
        retriever.release()
        assert _second(tmp_path / "s", "reader", tmp_path) == "served 20"  # another process opens it meanwhile
        assert retriever.search("lift drag", 3) == before
    finally:
        retriever.close()


def test_the_cli_refuses_a_search_and_a_second_index_during_a_build_in_one_line(tmp_path: Path) -> None:
    import json

    store, hand = tmp_path / "index", tmp_path / "hand"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"lift drag {i}"}) + "\n" for i in range(5)),
        encoding="utf-8",
    )
    builder = _start_builder(store, hand)
    try:
        runs = [
            subprocess.run(
                [sys.executable, "-m", "deltap", *args],
                capture_output=True,
                text=True,
                env={**_env(), "DELTAP_CACHE_DIR": str(tmp_path / "cache")},
                timeout=120,
            )
            for args in (
                ["search", str(store), "lift"],
                ["index", str(corpus), "--store", str(store), "--embedder", "hash:16"],
            )
        ]
    finally:
        code, _, err = _finish(builder, hand)
    assert code == 0, err
    for run in runs:
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert lines[-1].startswith("error: the index at ") and "is being built by another process" in lines[-1]
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr


def test_mine_releases_the_index_before_its_first_solver_call(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.mining.engine import mine
    from deltap.retrieval import build_retriever
    from deltap.solvers.base import Score, SolveRequest
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth
    from tests.helpers import string_case

    class Peeking(SimulatedSolver):
        """At its first call, another process opens the index the run's pools were drawn from."""

        seen: list[str] = []

        def score(self, request: SolveRequest, reference: str) -> Score:
            if not self.seen:
                self.seen.append(_second(tmp_path / "s", "reader", tmp_path))
            return super().score(request, reference)

    docs = Corpus([Document(f"d{i:02d}", f"lift drag wing flap {i}") for i in range(30)], name="toy")
    retriever = build_retriever("dense", docs, store=tmp_path / "s", embedder="hash:16", cache_dir=tmp_path / "c")
    cases = [string_case("a", ("d00",)), string_case("b", ("d01",))]
    solver = Peeking({c.case_id: SimulatedTruth(-6.0, {}) for c in cases}, outcome="logprob", noise=0.3, seed=1)
    try:
        mine(cases, docs, solver, retriever=retriever, outcome="logprob", k=3, n_placebo=2, budget=8, coalitions=False)
    finally:
        retriever.close()
    assert Peeking.seen == ["served 30"]


def test_a_released_local_mode_store_reconnects_on_its_next_search(tmp_path: Path) -> None:
    from deltap.documents import Corpus, Document
    from deltap.retrieval import build_retriever

    docs = Corpus([Document(f"d{i}", f"lift drag wing {i}") for i in range(12)], name="toy")
    retriever = build_retriever(
        "dense", docs, store=tmp_path / "local", embedder="hash:16", cache_dir=tmp_path / "c", backend="qdrant-local"
    )
    try:
        before = retriever.search("lift drag", 3)
        retriever.release()
        assert retriever.store._client is None  # the folder's lock went with the client
        assert retriever.search("lift drag", 3) == before
    finally:
        retriever.close()
