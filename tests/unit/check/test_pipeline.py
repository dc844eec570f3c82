"""deltap check against an in-memory fake retriever: every gate passes and fails for the right reason."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from deltap.check import PipelineCheckResult, check_pipeline
from deltap.corpora.markdown import build_markdown_corpus
from deltap.documents import Corpus, write_corpus_jsonl
from deltap.errors import DeltapError
from deltap.retrieval.base import Hit
from tests.helpers import run_cli

BOOK = {
    "module-01-ros2/01-nodes.md": "# Nodes\n\nA ROS node is a process that publishes and subscribes to topics.\n\n"
    "```python\nimport rclpy\nrclpy.init()\n```\n",
    "module-01-ros2/02-topics.md": "# Topics\n\nTopics carry messages between nodes with a publisher and a subscriber.\n",
    "module-02-sim/01-gazebo.md": "# Gazebo\n\nGazebo simulates robots, physics and sensors in a virtual world.\n",
    "module-02-sim/02-urdf.md": "# URDF\n\nURDF files describe links and joints of a robot model.\n",
    "module-03-nav/01-nav2.md": "# Navigation\n\nNav2 plans paths and avoids obstacles with costmaps.\n",
}


class Clock:
    """A fake monotonic clock the fake retriever advances (no sleeping in unit tests)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class FakeRetriever:
    """Cosine over word sets; reports embed/search times by advancing the fake clock.

    Args:
        embed_ms / search_ms / overhead_ms: Simulated time per call (a list = per-call values, cycled).
        drift: Added to every score times the call count (non-determinism).
        mutate: Changes a hit's metadata (broken ingestion).
        report_split: Whether ``last_embed_seconds`` / ``last_search_seconds`` exist.
    """

    name = "fake"

    def __init__(
        self,
        corpus: Corpus,
        clock: Clock,
        embed_ms: float | Sequence[float] = 8.0,
        search_ms: float = 1.0,
        overhead_ms: float = 0.5,
        drift: float = 0.0,
        mutate: Callable[[Hit], Mapping[str, Any]] | None = None,
        report_split: bool = True,
        score_offset: float = 0.0,
    ) -> None:
        self.corpus = corpus
        self.clock = clock
        self.embed_ms = embed_ms
        self.search_ms = search_ms
        self.overhead_ms = overhead_ms
        self.drift = drift
        self.mutate = mutate
        self.report_split = report_split
        self.score_offset = score_offset
        self.calls = 0
        self.closed = False
        self._vocab = [(d, _words(d.full_text)) for d in corpus]

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        assert not self.closed, "searched a closed retriever"
        q = _words(query)
        embed = (
            self.embed_ms if isinstance(self.embed_ms, float | int) else self.embed_ms[self.calls % len(self.embed_ms)]
        )
        self.calls += 1
        scored = []
        for pos, (doc, words) in enumerate(self._vocab):
            score = len(q & words) / math.sqrt(len(q) * len(words)) if q and words else 0.0
            scored.append((-(score + self.score_offset + self.drift * self.calls), pos, doc))
        scored.sort(key=lambda t: (t[0], t[1]))
        hits = []
        for rank, (neg, _, doc) in enumerate(scored[:k], start=1):
            hit = Hit(doc.doc_id, -neg, rank, dict(doc.metadata))
            if self.mutate is not None:
                hit = Hit(hit.doc_id, hit.score, rank, self.mutate(hit))
            hits.append(hit)
        self.clock.now += (embed + self.search_ms + self.overhead_ms) / 1000
        if self.report_split:
            self.last_embed_seconds = embed / 1000
            self.last_search_seconds = self.search_ms / 1000
        return hits

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def book_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("book")
    for rel, text in BOOK.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return build_markdown_corpus(root, base_url="https://book.example/", chunk_size=400, chunk_overlap=50)


SUITE: dict[str, Any] = {
    "top_k": 3,
    "score_threshold": 0.3,
    "repeats": 4,
    "warmup": 1,
    "in_scope": [
        {"id": "nodes", "query": "what is a ROS node process", "expected_sections": ["module-01-ros2"]},
        {
            "id": "gazebo",
            "query": "simulate robots physics sensors",
            "expected_chunk_ids": ["module-02-sim/01-gazebo.md#0"],
        },
        {
            "id": "urdf",
            "query": "links and joints of a robot model",
            "expected_snippets": ["describe LINKS and joints"],
        },
        {"id": "nav", "query": "plan paths avoid obstacles costmaps", "expected_sections": ["module-03-nav"]},
        {"id": "init", "query": "rclpy init", "expected_snippets": ["rclpy.init()"]},
    ],
    "out_of_scope": ["What is the capital of France?", {"id": "cookies", "query": "chocolate chip cookie recipe"}],
}


def run(book: Corpus, suite: Mapping[str, Any] | None = None, **kw: Any) -> PipelineCheckResult:
    clock = Clock()
    fake_kw = {
        k: kw.pop(k)
        for k in list(kw)
        if k in ("embed_ms", "search_ms", "overhead_ms", "drift", "mutate", "report_split", "score_offset")
    }
    opened: list[FakeRetriever] = []

    def opener() -> FakeRetriever:
        r = FakeRetriever(book, clock, **fake_kw)
        opened.append(r)
        return r

    kw.setdefault("open_retriever", opener)
    report = check_pipeline(dict(suite or SUITE), clock=clock, corpus=kw.pop("corpus", book), **kw)
    if kw["open_retriever"] is opener:
        assert all(r.closed for r in opened), "the check closes the retrievers it opened"
    return report


def status(report: PipelineCheckResult) -> dict[str, str]:
    return {c.criterion: c.status for c in report.criteria}


ALL_PASS = {
    "in-scope hit@3": "PASS",
    "out-of-scope below threshold": "PASS",
    "metadata integrity": "PASS",
    "latency p95 embed+search": "PASS",
    "latency p95 end-to-end": "PASS",
    "determinism": "PASS",
}


def test_all_gates_pass(book_corpus: Corpus) -> None:
    report = run(book_corpus)
    assert status(report) == ALL_PASS, report.summary()
    assert report.passed and report.exit_code == 0
    by = {c.criterion: c for c in report.criteria}
    assert by["in-scope hit@3"].figure.startswith("5/5 queries = 100%")
    assert by["latency p95 embed+search"].figure.startswith("p95 9.0 ms")  # 8 ms embed + 1 ms search, exactly
    assert by["latency p95 end-to-end"].figure.startswith("p95 9.5 ms")
    assert "7 queries x 6 runs (incl. after reopening): 0 differ" in by["determinism"].figure
    assert report.latency["end_to_end"]["n"] == 4 * 7  # 4 timed passes x 7 queries, warm-up excluded
    assert "vs ingested corpus" in by["metadata integrity"].figure
    lines = report.summary().splitlines()
    assert len([ln for ln in lines if ln.startswith("  PASS")]) == 6
    assert lines[-1] == "result: PASS"
    json.dumps(report.to_dict())  # serialisable


def test_relevance_ranks_and_pass_rate(book_corpus: Corpus) -> None:
    suite = dict(SUITE)
    suite["in_scope"] = [
        *SUITE["in_scope"][:4],
        {"id": "wrong", "query": "what is a ROS node process", "expected_sections": ["module-03-nav"]},
    ]
    report = run(book_corpus, suite, skip=["latency", "determinism"])
    rel = report.criteria[0]
    # 4/5 = 80% meets the default 80% criterion exactly
    assert rel.status == "PASS" and rel.figure.startswith("4/5 queries = 80% (need >= 80%)")
    q = {r["query_id"]: r for r in report.queries}
    assert q["nodes"]["first_rank"] == 1 and q["wrong"]["passed"] is False
    assert q["wrong"]["missing"] == ["section 'module-03-nav'"]
    strict = run(book_corpus, suite, skip=["latency", "determinism"], pass_rate=0.9)
    assert strict.criteria[0].status == "FAIL" and strict.exit_code == 1
    assert "wrong ('what is a ROS node process'): missing section 'module-03-nav'" in strict.failures()


def test_match_all_requires_every_item(book_corpus: Corpus) -> None:
    q = {"id": "both", "query": "what is a ROS node process", "expected_sections": ["module-01-ros2", "module-03-nav"]}
    suite = {**SUITE, "top_k": 1, "in_scope": [q], "out_of_scope": []}
    assert run(book_corpus, suite, skip=["latency"]).criteria[0].status == "PASS"  # any
    report = run(book_corpus, {**suite, "in_scope": [{**q, "match": "all"}]}, skip=["latency"])
    assert report.criteria[0].status == "FAIL"


def test_out_of_scope_above_threshold_fails(book_corpus: Corpus) -> None:
    suite = {**SUITE, "out_of_scope": [*SUITE["out_of_scope"], {"id": "robotq", "query": "robot joints"}]}
    report = run(book_corpus, suite)
    st = status(report)
    assert st["out-of-scope below threshold"] == "FAIL"
    assert {k: v for k, v in st.items() if k != "out-of-scope below threshold"} == {
        k: v for k, v in ALL_PASS.items() if k != "out-of-scope below threshold"
    }
    oos = next(c for c in report.criteria if c.gate == "out_of_scope")
    assert oos.figure.startswith("2/3 below 0.300")
    assert oos.details["failures"][0].startswith("robotq: top score 0.")
    assert report.exit_code == 1


def test_missing_threshold_is_an_error(book_corpus: Corpus) -> None:
    suite = {k: v for k, v in SUITE.items() if k != "score_threshold"}
    with pytest.raises(DeltapError, match="out-of-scope queries need a score_threshold.*--calibrate"):
        run(book_corpus, suite)
    assert status(run(book_corpus, suite, skip=["out_of_scope"]))["out-of-scope below threshold"] == "SKIP"


def test_calibration_proposes_threshold_between_distributions(book_corpus: Corpus) -> None:
    suite = {k: v for k, v in SUITE.items() if k != "score_threshold"}
    report = run(book_corpus, suite, calibrate=True)
    cal = report.calibration
    assert cal is not None and report.criteria == [] and report.exit_code == 0
    in_scores, out_scores = cal["in_scores"], cal["out_scores"]
    assert len(in_scores) == 5 and len(out_scores) == 2
    assert cal["separable"] and max(out_scores) < cal["threshold"] < min(in_scores)
    assert cal["threshold"] == pytest.approx((max(out_scores) + min(in_scores)) / 2, abs=1e-6)
    text = report.summary()
    assert "in-scope" in text and "out-of-scope" in text and "proposed score_threshold" in text
    # the proposal works: the check passes the out-of-scope gate with it
    assert (
        status(run(book_corpus, {**suite, "score_threshold": cal["threshold"]}))["out-of-scope below threshold"]
        == "PASS"
    )


def _break(field: str, value: Any, doc_id: str) -> Callable[[Hit], Mapping[str, Any]]:
    def mutate(hit: Hit) -> Mapping[str, Any]:
        meta = dict(hit.metadata)
        if hit.doc_id == doc_id:
            if value is None:
                meta.pop(field, None)
            else:
                meta[field] = value
        return meta

    return mutate


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        pytest.param("source_url", "", "has an empty 'source_url'", id="empty-url"),
        pytest.param("document_section", None, "has no 'document_section'", id="missing-section"),
        pytest.param("source_url", "https://book.example/elsewhere", "but ingestion stored", id="mismatch"),
        pytest.param("chunk_text_preview", ["x"], "is a list, expected text", id="wrong-type"),
    ],
)
def test_broken_metadata_fails_only_metadata(book_corpus: Corpus, field: str, value: Any, problem: str) -> None:
    report = run(book_corpus, mutate=_break(field, value, "module-02-sim/02-urdf.md#0"))
    st = status(report)
    assert st["metadata integrity"] == "FAIL"
    assert {k: v for k, v in st.items() if k != "metadata integrity"} == {
        k: v for k, v in ALL_PASS.items() if k != "metadata integrity"
    }
    meta = next(c for c in report.criteria if c.gate == "metadata")
    assert all(problem in p and "module-02-sim/02-urdf.md#0" in p for p in meta.details["failures"])
    assert meta.details["problems_by_field"] == {field: meta.details["n_problems"]}


def test_metadata_without_corpus_checks_presence_only(book_corpus: Corpus) -> None:
    report = run(
        book_corpus, corpus=None, mutate=_break("source_url", "https://elsewhere", "module-02-sim/02-urdf.md#0")
    )
    meta = next(c for c in report.criteria if c.gate == "metadata")
    assert meta.status == "PASS" and "presence only" in meta.figure
    report = run(book_corpus, corpus=None, mutate=_break("heading", "", "module-02-sim/02-urdf.md#0"))
    assert next(c for c in report.criteria if c.gate == "metadata").status == "PASS"  # source may have no heading
    report = run(book_corpus, mutate=_break("heading", "", "module-02-sim/02-urdf.md#0"))
    assert next(c for c in report.criteria if c.gate == "metadata").status == "FAIL"  # the corpus says it had one


def test_hit_not_in_corpus(book_corpus: Corpus) -> None:
    smaller = Corpus([d for d in book_corpus if d.doc_id != "module-03-nav/01-nav2.md#0"])
    report = run(book_corpus, corpus=smaller)
    meta = next(c for c in report.criteria if c.gate == "metadata")
    assert meta.status == "FAIL"
    assert meta.details["problems_by_field"]["<doc_id>"] >= 1
    assert any("hit 'module-03-nav/01-nav2.md#0' is not in the ingested corpus" in p for p in meta.details["failures"])


def test_nondeterministic_retriever_fails_determinism(book_corpus: Corpus) -> None:
    report = run(book_corpus, drift=1e-4)
    st = status(report)
    assert st["determinism"] == "FAIL"
    assert {k: v for k, v in st.items() if k != "determinism"} == {
        k: v for k, v in ALL_PASS.items() if k != "determinism"
    }
    det = next(c for c in report.criteria if c.gate == "determinism")
    assert "7 differ" in det.figure and "scores differ" in det.details["failures"][0]
    # a tolerance above the drift accepts it
    loose = run(book_corpus, {**SUITE, "determinism": {"score_tolerance": 0.01}}, drift=1e-4)
    assert status(loose)["determinism"] == "PASS"


def test_difference_only_after_reopening(book_corpus: Corpus) -> None:
    clock = Clock()
    opened: list[FakeRetriever] = []

    def opener() -> FakeRetriever:  # the second open sees a different index (e.g. rebuilt with other vectors)
        r = FakeRetriever(book_corpus, clock, score_offset=0.01 * len(opened))
        opened.append(r)
        return r

    report = check_pipeline(dict(SUITE), open_retriever=opener, clock=clock, corpus=book_corpus)
    det = next(c for c in report.criteria if c.gate == "determinism")
    assert det.status == "FAIL" and len(opened) == 2
    assert all("after reopening" in f for f in det.details["failures"])


def test_live_retriever_is_not_reopened(book_corpus: Corpus) -> None:
    clock = Clock()
    r = FakeRetriever(book_corpus, clock)
    report = check_pipeline(dict(SUITE), r, clock=clock)
    det = next(c for c in report.criteria if c.gate == "determinism")
    assert det.status == "PASS" and "not reopened" in det.figure
    assert not r.closed  # the caller's retriever stays open


def test_latency_gates(book_corpus: Corpus) -> None:
    slow_embed = run(book_corpus, embed_ms=350.0)
    st = status(slow_embed)
    assert st["latency p95 embed+search"] == "FAIL" and st["latency p95 end-to-end"] == "PASS"
    slow_client = run(book_corpus, overhead_ms=600.0)
    st = status(slow_client)
    assert st["latency p95 embed+search"] == "PASS" and st["latency p95 end-to-end"] == "FAIL"


def test_warmup_is_excluded(book_corpus: Corpus) -> None:
    # the first call of the first pass is slow (model load); 7 queries/pass so call 0 is the only slow one
    slow_first = [2000.0] + [8.0] * 6
    calls = slow_first + [8.0] * 7 * 10
    assert status(run(book_corpus, embed_ms=calls))["latency p95 end-to-end"] == "PASS"
    report = run(book_corpus, embed_ms=calls, warmup=0, repeats=1)
    assert status(report)["latency p95 end-to-end"] == "FAIL"
    assert report.latency["end_to_end"]["max_ms"] == pytest.approx(2001.5)


def test_no_split_reported_uses_end_to_end(book_corpus: Corpus) -> None:
    report = run(book_corpus, report_split=False)
    es = next(c for c in report.criteria if c.criterion == "latency p95 embed+search")
    assert es.status == "PASS" and "end-to-end used as upper bound" in es.figure
    assert report.latency["embedding"] is None and report.latency["split_reported"] is False


def test_all_gates_disabled_is_not_a_pass(book_corpus: Corpus) -> None:
    suite = {**SUITE, "gates": {g: False for g in ("relevance", "out_of_scope", "metadata", "latency", "determinism")}}
    report = run(book_corpus, suite)
    assert {c.status for c in report.criteria} == {"SKIP"} and report.exit_code == 1


def test_retriever_error_is_clear(book_corpus: Corpus) -> None:
    class Broken(FakeRetriever):
        def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
            raise ConnectionError("connection refused")

    with pytest.raises(DeltapError, match=r"the retriever failed on query .*ConnectionError: connection refused"):
        check_pipeline(dict(SUITE), Broken(book_corpus, Clock()))


def test_unreachable_store(tmp_path: Path) -> None:
    with pytest.raises(DeltapError, match=r"does not exist; build it with `deltap index CORPUS --store"):
        check_pipeline(dict(SUITE), store=tmp_path / "no-index")
    with pytest.raises(DeltapError, match="no index to check"):
        check_pipeline(dict(SUITE))


def test_store_open_failure_is_wrapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import deltap.retrieval

    def boom(store: str, collection: str | None = None) -> Any:
        raise RuntimeError("Storage folder is already accessed by another instance")

    monkeypatch.setattr(deltap.retrieval, "open_index", boom, raising=False)
    with pytest.raises(DeltapError, match=r"cannot open the index collection 'docs' at .*RuntimeError: Storage folder"):
        check_pipeline(dict(SUITE), store=tmp_path, collection="docs")


# ---------------------------------------------------------------------------------------------------------------
# CLI (the index is opened through deltap.retrieval.open_index, replaced here by the fake)


@pytest.fixture()
def cli_env(tmp_path: Path, book_corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import yaml

    import deltap.retrieval

    clock = Clock()
    state: dict[str, Any] = {"mutate": None, "opened": []}

    def fake_open(store: str, collection: str | None = None) -> FakeRetriever:
        assert Path(store) == tmp_path / "index"
        r = FakeRetriever(book_corpus, clock, mutate=state["mutate"])
        state["opened"].append(r)
        return r

    monkeypatch.setattr(deltap.retrieval, "open_index", fake_open, raising=False)
    monkeypatch.setattr("deltap.check.run.time.perf_counter", clock)
    (tmp_path / "index").mkdir()
    write_corpus_jsonl(book_corpus, tmp_path / "corpus.jsonl")
    suite = {**SUITE, "index": {"store": "index", "corpus": "corpus.jsonl"}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    state["dir"] = tmp_path
    return state


def test_cli_check_pass_and_json(cli_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    d = cli_env["dir"]
    code, out, _ = run_cli(capsys, "check", str(d / "suite.yaml"), "--json", str(d / "report.json"))
    assert code == 0, out
    assert out.count("PASS ") == 6 and "result: PASS" in out
    data = json.loads((d / "report.json").read_text())
    assert data["passed"] is True and len(data["criteria"]) == 6
    assert data["settings"]["corpus"].endswith("corpus.jsonl")


def test_cli_check_fail_exit_code(cli_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    cli_env["mutate"] = _break("chunk_id", "", "module-01-ros2/01-nodes.md#0")
    code, out, _ = run_cli(capsys, "check", str(cli_env["dir"] / "suite.yaml"))
    assert code == 1
    assert re.search(r"FAIL\s+metadata integrity", out) and "result: FAIL (1 criterion failed)" in out
    assert "has an empty 'chunk_id'" in out


def test_cli_check_threshold_override_and_skip(cli_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    suite = str(cli_env["dir"] / "suite.yaml")
    code, out, _ = run_cli(capsys, "check", suite, "--threshold", "0.0", "--skip", "latency")
    assert code == 1 and re.search(r"FAIL\s+out-of-scope below threshold\s+0/2 below 0.000", out)
    assert re.search(r"SKIP\s+latency p95 end-to-end", out)
    code, _, err = run_cli(capsys, "check", suite, "--skip", "speed")
    assert code == 2 and "unknown gate" in err


def test_cli_calibrate(cli_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "check", str(cli_env["dir"] / "suite.yaml"), "--calibrate")
    assert code == 0
    assert "calibration (top-1 score per query):" in out and "set `score_threshold:" in out
    assert "[" in out and "#" in out and "o" in out  # the histogram shows both distributions


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("", "the suite is empty", id="empty-file"),
        pytest.param("in_scope: []\nout_of_scope: []\n", "the suite has no queries", id="no-queries"),
        pytest.param("in_scope:\n  - query: x\n    expected_sections: [a\n", "invalid YAML", id="malformed"),
    ],
)
def test_cli_bad_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str) -> None:
    (tmp_path / "s.yaml").write_text(content, encoding="utf-8")
    code, _, err = run_cli(capsys, "check", str(tmp_path / "s.yaml"), "--store", str(tmp_path))
    assert code == 2 and message in err and "s.yaml" in err


def test_cli_unreachable_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text(json.dumps(SUITE), encoding="utf-8")
    code, _, err = run_cli(capsys, "check", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "gone"))
    assert code == 2 and "gone does not exist" in err


def test_cli_init_check_then_check(cli_env: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    d = cli_env["dir"]
    code, out, _ = run_cli(
        capsys, "init-check", str(d / "corpus.jsonl"), "-o", str(d / "starter.yaml"), "--per-section", "1"
    )
    assert code == 0 and "3 in-scope and 3 out-of-scope queries" in out
    code, _, err = run_cli(capsys, "init-check", str(d / "corpus.jsonl"), "-o", str(d / "starter.yaml"))
    assert code == 2 and "--force" in err
    # the starter needs a threshold: calibrate, then check with it
    starter = d / "starter.yaml"
    code, _, err = run_cli(capsys, "check", str(starter), "--store", str(d / "index"))
    assert code == 2 and "need a score_threshold" in err
    code, out, _ = run_cli(capsys, "check", str(starter), "--store", str(d / "index"), "--calibrate")
    threshold = re.search(r"set `score_threshold: ([0-9.]+)`", out)
    assert code == 0 and threshold
    code, out, _ = run_cli(
        capsys, "check", str(starter), "--store", str(d / "index"), "--threshold", threshold.group(1)
    )
    assert code == 0, out


def test_chunk_id_patterns(book_corpus: Corpus) -> None:
    page = {
        "id": "page",
        "query": "simulate robots physics sensors",
        "expected_chunk_ids": ["module-02-sim/01-gazebo.md#*"],
    }
    other = {"id": "other", "query": "simulate robots physics sensors", "expected_chunk_ids": ["module-03-nav/*.md#?"]}
    suite = {**SUITE, "top_k": 1, "in_scope": [page, other], "out_of_scope": []}
    report = run(book_corpus, suite, skip=["latency", "determinism"])
    q = {r["query_id"]: r for r in report.queries}
    assert q["page"]["passed"] is True and q["page"]["first_rank"] == 1
    assert q["other"]["passed"] is False


def test_last_bit_noise_tolerated_by_default_not_at_zero(book_corpus: Corpus) -> None:
    # 1e-13 per call: float64 summation-order noise, not a ranking change
    assert status(run(book_corpus, drift=1e-13))["determinism"] == "PASS"
    strict = run(book_corpus, {**SUITE, "determinism": {"score_tolerance": 0}}, drift=1e-13)
    assert status(strict)["determinism"] == "FAIL"


def test_unknown_skip_is_an_error(book_corpus: Corpus) -> None:
    with pytest.raises(DeltapError, match="cannot skip unknown gate.*speed"):
        run(book_corpus, skip=["speed"])
