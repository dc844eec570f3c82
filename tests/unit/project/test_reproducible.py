"""Item 5 of issue 15: the same command produces byte-identical artefacts (timestamps aside)."""

from __future__ import annotations

import re
import sys
import types

import pytest

from deltap.corpora.python_package import build_python_corpus
from tests.helpers import PLAN_TIMINGS

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


@pytest.fixture()
def module_with_object_default(monkeypatch: pytest.MonkeyPatch) -> str:
    """A module whose function has a default value whose repr carries a memory address (like ``re.Pattern``)."""
    mod = types.ModuleType("deltap_repro_probe")
    sentinel = object()
    pattern = re.compile("x+").match

    def match(text: str, pattern: object = pattern, marker: object = sentinel) -> bool:
        """Match ``text``."""
        return bool(pattern(text))  # type: ignore[operator]

    match.__module__ = mod.__name__
    mod.match = match  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod.__name__


def test_python_corpus_has_no_memory_address(module_with_object_default: str) -> None:
    corpus = build_python_corpus([module_with_object_default])
    text = corpus[f"{module_with_object_default}.match"].text
    assert "Signature:" in text
    assert not _ADDRESS.search(text), text
    # the default is still described, only its address is gone
    assert "<object object>" in text
    assert "<built-in method match of re.Pattern object>" in text


def test_stdlib_demo_corpus_has_no_memory_address() -> None:
    from deltap.demo import build_demo_corpus

    corpus = build_demo_corpus()
    leaks = [d.doc_id for d in corpus if _ADDRESS.search(d.text) and " at 0x" in d.text]
    assert leaks == []


#: The only fields allowed to differ between two runs of the same command: when it ran and how long it took.
TIMESTAMPS = {
    "retrieval_dataset.yaml": ["metadata.created", "pairs[].metadata.wall_seconds"],
    "run.json": [
        "started",
        "ended",
        "wall_seconds",
        "spend.solver_seconds",
        "spend.by_case[].solver_seconds",
        "plan.seconds_per_call",
        "plan.latency_source",
        "plan.latency_measured",
        "plan.seconds",
    ],
}


def _mask(rel: str, text: str) -> str:
    import json

    import yaml

    if rel.endswith("retrieval_dataset.yaml"):
        data = yaml.safe_load(text)
        data["metadata"]["created"] = "<time>"
        for pair in data["pairs"]:
            pair["metadata"]["wall_seconds"] = "<time>"
        return yaml.safe_dump(data, sort_keys=False)
    if rel.endswith("run.json"):
        run = json.loads(text)
        for key in ("started", "ended", "wall_seconds"):
            run[key] = "<time>"
        if "spend" in run:  # the solver's seconds (summed latencies) are timings too
            run["spend"]["solver_seconds"] = "<time>"
            for case in run["spend"]["by_case"].values():
                case["solver_seconds"] = "<time>"
        if "plan" in run:  # how long planning took, and its time range: measured on the run's first calls
            for key in PLAN_TIMINGS:
                run["plan"][key] = "<time>"
        if "plan_vs_spent" in run:  # the solver and wall seconds set against the plan's time range
            run["plan_vs_spent"]["seconds"] = "<time>"
        return json.dumps(run)
    return text


@pytest.mark.integration
def test_same_demo_command_gives_byte_identical_artefacts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``deltap demo --solver simulated`` twice into two folders: every text artefact is the same, timestamps aside."""
    from deltap.demo import DemoConfig, run_demo

    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        run_demo(
            DemoConfig(out=out, cases=3, calls=3 * 30, solver="simulated", embedder="hash", progress=False, seed=1),
            say=lambda s: None,
        )
        outs.append(out)
    a, b = outs
    artefacts = [
        "corpus.jsonl",
        "run/retrieval_dataset.yaml",
        "run/qrels/test.tsv",
        "run/qrels/provenance.json",
        "run/qrels.trec",
        "run/qrels.jsonl",
        "run/run.json",
        "run/evaluation/compare.json",
        "run/evaluation/runs/bm25.trec",
        "run/evaluation/runs/dense.trec",
        "run/evaluation/runs/hybrid.trec",
    ]
    for rel in artefacts:
        ta, tb = (a / rel).read_bytes(), (b / rel).read_bytes()
        if rel in ("corpus.jsonl",) or rel.startswith(("run/qrels", "run/evaluation")):
            assert ta == tb, rel  # byte for byte: no timestamp in these
        else:
            assert _mask(rel, ta.decode()) == _mask(rel, tb.decode()), rel
    assert not _ADDRESS.search((a / "corpus.jsonl").read_text(encoding="utf-8"))
