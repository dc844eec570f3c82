"""``--plan`` is a dry run (issue 36 item 2): no model or embedding call, nothing written anywhere, and an ``--index``
that does not exist is refused in one line, as ``deltap search`` refuses it.

Every test points the embedding cache and the temporary folder inside ``tmp_path`` and snapshots the whole tree before
and after: a file written anywhere a run would write shows. The embedder, the sentence-transformers model, the
indexing function and the embedding cache all raise when touched.
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import mine_files


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root``: ``{relative path: (size, mtime_ns)}`` (folders: size 0)."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.stat()
        out[str(p.relative_to(root))] = (0 if p.is_dir() else st.st_size, st.st_mtime_ns)
    return out


def _boom(what: str) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a plan touched {what}")

    return fail


@pytest.fixture
def dry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache and temporary folders inside ``tmp_path``; anything that embeds raises."""
    return _make_dry(tmp_path, monkeypatch)


def _make_dry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import deltap.retrieval.cache as cache
    import deltap.retrieval.dense as dense
    import deltap.retrieval.embedders as embedders

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("DELTAP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setattr(embedders, "load_embedder", _boom("the embedder (load_embedder)"))
    monkeypatch.setattr(embedders.SentenceTransformerEmbedder, "__init__", _boom("SentenceTransformerEmbedder"))
    monkeypatch.setattr(dense, "index_corpus", _boom("index_corpus"))
    monkeypatch.setattr(cache.EmbeddingCache, "__init__", _boom("the embedding cache"))
    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = _boom("sentence_transformers.SentenceTransformer")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    return tmp_path


def _mine(corpus: Path, bench: Path, out: Path, *extra: str) -> list[str]:
    return ["mine", str(bench), "--corpus", str(corpus), "--solver", "simulated", "--budget", "16", "--placebo", "3",
            "--out", str(out), *extra]  # fmt: skip


@pytest.mark.parametrize("kind", ["dense", "hybrid"])
def test_mine_plan_without_an_index_embeds_nothing_and_writes_nothing(
    dry: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.cli.app import main

    corpus, bench = mine_files(dry)
    before = _tree(dry)
    main(_mine(corpus, bench, dry / "run", "--retriever", kind, "--top-k", "4", "--plan"))
    text = capsys.readouterr().out
    assert _tree(dry) == before  # no run directory, no trial log, no embedding cache, no index, no temporary folder
    joined = " ".join(line.strip().removeprefix("note").strip() for line in text.splitlines())
    assert f"retrieved candidates estimated ({kind}): k=4 per case at the corpus's mean length" in joined
    assert "a plan makes no embedding call" in joined
    assert "the run embeds the corpus's 12 documents first" in joined
    assert all(len(line) <= 80 for line in text.splitlines()), text
    main(_mine(corpus, bench, dry / "run", "--retriever", kind, "--top-k", "4", "--plan", "--json"))
    plan = json.loads(capsys.readouterr().out)
    assert plan["by_case"][0]["candidates"] == 1 + 4 + 3  # gold + k estimated + placebo
    assert any("a plan makes no embedding call" in n for n in plan["notes"])
    assert _tree(dry) == before


def test_mine_plan_with_bm25_uses_the_real_candidates_in_memory(dry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main

    corpus, bench = mine_files(dry)
    before = _tree(dry)
    main(_mine(corpus, bench, dry / "run", "--retriever", "bm25", "--plan", "--json"))
    plan = json.loads(capsys.readouterr().out)
    assert not any("estimated" in n for n in plan["notes"])
    assert _tree(dry) == before


def test_mine_plan_reads_an_existing_index_without_writing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deltap.loaders import load_corpus
    from deltap.retrieval import build_retriever

    corpus, bench = mine_files(tmp_path)
    index = tmp_path / "index"
    build_retriever("dense", load_corpus(corpus), store=index, embedder="hash:64", cache_dir=tmp_path / "c").close()
    _make_dry(tmp_path, monkeypatch)  # from here on, anything that embeds raises
    from deltap.cli.app import main

    before = _tree(tmp_path)
    for kind in ("dense", "hybrid"):
        main(_mine(corpus, bench, tmp_path / "run", "--retriever", kind, "--index", str(index), "--plan"))
        text = " ".join(capsys.readouterr().out.split())
        assert f"retrieved candidates estimated ({kind})" in text
        assert f"--index {index}: 12 documents" in text and "the run embeds the queries" in text
    assert _tree(tmp_path) == before


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    from deltap.cli.app import main

    with pytest.raises(SystemExit) as e:
        main(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("plan", [True, False])
def test_a_missing_index_is_refused_as_search_refuses_it(
    dry: Path, plan: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, bench = mine_files(dry)
    before = _tree(dry)
    missing = dry / "mistyped-index"
    line = _refused(["search", str(missing), "Runner"], capsys)
    assert line.startswith(f"error: index not found: {missing} does not exist")
    args = _mine(corpus, bench, dry / "run", "--retriever", "dense", "--index", str(missing), "--pilot", "0")
    assert _refused([*args, "--plan"] if plan else args, capsys) == line  # the same line, before anything is read
    assert _tree(dry) == before  # no run directory, no new index


def test_prepare_run_plan_only_gives_a_stand_in(dry: Path) -> None:
    from deltap.mining.config import MiningConfig
    from deltap.mining.setup import CaseSelection, RetrieverSettings, SolverSettings, prepare_run
    from deltap.retrieval.standin import LengthStandIn

    corpus, bench = mine_files(dry)
    before = _tree(dry)
    run = prepare_run(CaseSelection(bench, corpus), SolverSettings("simulated"), retriever=RetrieverSettings("dense"),
                      config=MiningConfig(k=3, n_placebo=2), out=dry / "run", plan_only=True)  # fmt: skip
    assert isinstance(run.retriever, LengthStandIn) and run.config.k == 3
    plan = run.plan()
    assert plan.cases[0].candidates == 1 + 3 + 2 and any("no embedding call" in n for n in plan.notes)
    assert _tree(dry) == before


def test_the_stand_in_ranks_documents_of_the_mean_length() -> None:
    from deltap.documents import Corpus, Document
    from deltap.retrieval.standin import LengthStandIn

    corpus = Corpus([Document(f"d{n}", "x" * n, metadata={"even": n % 2 == 0}) for n in (1, 9, 4, 6, 5, 30)])
    s = LengthStandIn(corpus, "dense")  # mean length 55 / 6 ≈ 9.2
    assert [h.doc_id for h in s.search("q", 3)] == ["d9", "d6", "d5"]
    assert [h.rank for h in s.search("q", 3)] == [1, 2, 3]
    assert s.search_batch(["a", "b"], 2) == [s.search("a", 2)] * 2
    assert [h.doc_id for h in s.search("q", 2, {"even": True})] == ["d6", "d4"]
    other = LengthStandIn(corpus, "hybrid", offset=1)  # another kind: another list (a deterministic solver would
    assert [h.doc_id for h in other.search("q", 3)] == ["d6", "d5", "d4"]  # share identical prompts' calls)


def test_endtoend_plan_embeds_nothing_and_writes_nothing(dry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deltap.cli.app import main

    corpus, bench = mine_files(dry)
    out = dry / "run"
    main(_mine(corpus, bench, out, "--retriever", "none", "--pilot", "0"))
    capsys.readouterr()
    before = _tree(dry)
    args = ["endtoend", str(out), str(bench), "--corpus", str(corpus), "--retriever", "bm25,dense,hybrid",
            "--controls", "none,gold", "--solver", "simulated", "--top-k", "3", "--plan"]  # fmt: skip
    main([*args, "--json"])
    d = json.loads(capsys.readouterr().out)
    assert [s["system"] for s in d["by_system"]] == ["bm25", "dense", "hybrid", "none", "gold"]
    notes = d["notes"]
    assert any(n.startswith("retrieved candidates estimated (dense): k=3") for n in notes)
    assert any(n.startswith("retrieved candidates estimated (hybrid): k=3") for n in notes)
    assert not any("(bm25)" in n for n in notes)  # built in memory: its real lists
    assert sum("the run embeds the corpus's 12 documents first" in n for n in notes) == 1
    main(args)
    assert all(len(line) <= 80 for line in capsys.readouterr().out.splitlines())
    assert _tree(dry) == before
    line = _refused([*args, "--index", str(dry / "nope")], capsys)
    assert line.startswith(f"error: index not found: {dry / 'nope'} does not exist")
    assert _refused([a for a in args if a != "--plan"] + ["--index", str(dry / "nope")], capsys) == line
    assert _tree(dry) == before
