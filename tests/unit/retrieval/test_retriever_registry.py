"""A retriever kind is its module plus one registration: ``build_retriever``, ``deltap evaluate --retriever``,
end-to-end's retriever systems and the CLI's help texts all see it without another edit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError
from deltap.retrieval import build_retriever
from deltap.retrieval.base import Hit
from deltap.retrieval.registry import RETRIEVERS, RetrieverKindInfo, register_retriever_kind


class _LastFirst:
    """Ranks the corpus backwards (a retriever kind no deltap file knows)."""

    name = "lastfirst"

    def __init__(self, corpus: Corpus, offset: int = 0) -> None:
        self.ids = [d.doc_id for d in corpus][::-1][offset:]

    def search(self, query: str, k: int = 10, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return [Hit(d, float(len(self.ids) - i), i + 1) for i, d in enumerate(self.ids[:k])]

    def search_batch(
        self, queries: Sequence[str], k: int = 10, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]


def build_lastfirst(corpus: Corpus, *, store: Any, embedder: Any, seed: int, **options: Any) -> _LastFirst:
    return _LastFirst(corpus, **options)


@pytest.fixture
def lastfirst() -> Iterator[RetrieverKindInfo]:
    info = register_retriever_kind(
        RetrieverKindInfo("lastfirst", f"{__name__}:build_lastfirst", "the corpus backwards", ("offset",))
    )
    yield info
    del RETRIEVERS["lastfirst"]


def _corpus() -> Corpus:
    return Corpus([Document(f"d{i}", f"text {i}") for i in range(5)])


def test_builtin_kinds_are_registered_in_order() -> None:
    assert list(RETRIEVERS) == ["bm25", "dense", "hybrid", "random"]
    assert [k for k, info in RETRIEVERS.items() if info.uses_index] == ["dense", "hybrid"]
    assert set(RETRIEVERS["bm25"].options) < set(RETRIEVERS["hybrid"].options)


def test_a_registered_kind_is_built_with_its_own_options(lastfirst: RetrieverKindInfo) -> None:
    r = build_retriever("LastFirst", _corpus(), offset=1, k1=1.2)  # another kind's option is dropped, not refused
    assert [h.doc_id for h in r.search("q", 2)] == ["d3", "d2"]
    with pytest.raises(DeltapError) as info:
        build_retriever("lastfirst", _corpus(), nonsense=1)
    assert str(info.value) == "unknown option(s) for a lastfirst retriever: nonsense (allowed: offset)"


def test_unknown_kinds_list_the_registered_ones(lastfirst: RetrieverKindInfo) -> None:
    with pytest.raises(DeltapError) as info:
        build_retriever("splade", _corpus())
    assert str(info.value) == "unknown retriever kind 'splade'; expected one of bm25, dense, hybrid, random, lastfirst"
    with pytest.raises(DeltapError, match="already registered"):
        register_retriever_kind(RetrieverKindInfo("bm25", f"{__name__}:build_lastfirst"))
    with pytest.raises(DeltapError, match="cannot name"):
        register_retriever_kind(RetrieverKindInfo("Upper", f"{__name__}:build_lastfirst"))


def test_evaluate_and_endtoend_build_a_registered_kind(lastfirst: RetrieverKindInfo) -> None:
    from deltap.cases import Case, CheckerSpec
    from deltap.endtoend.systems import retriever_systems
    from deltap.evaluation.settings import RetrievalSettings
    from deltap.evaluation.sources import retrieve_runs
    from deltap.judgements import Judgements

    corpus = _corpus()
    judgements = Judgements({"q1": {"d4": 1}}, queries={"q1": "anything"})
    runs = retrieve_runs(judgements, corpus, RetrievalSettings(kinds=("lastfirst",), depth=2))
    assert runs == {"lastfirst": {"q1": {"d4": 5.0, "d3": 4.0}}}
    case = Case("q1", "anything", ("d4",), CheckerSpec("string_match", {"answers": ["x"]}))
    (system,) = retriever_systems(["lastfirst"], [case], corpus, 3)
    assert system.ranking == {"q1": ["d4", "d3", "d2"]}
    with pytest.raises(DeltapError, match="unknown retriever kind 'nope'"):  # refused before any retriever is built
        retrieve_runs(judgements, corpus, RetrievalSettings(kinds=("lastfirst", "nope")))


def test_the_cli_help_lists_the_registered_kinds(tmp_path: Path) -> None:
    from deltap.cli.endtoend_cmd import endtoend_command
    from deltap.cli.evaluation_cmd import RetrieverOpt
    from deltap.cli.mining_cmd import mine_command

    def help_of(fn: Any, name: str) -> str:
        return str(get_type_hints(fn, include_extras=True)[name].__metadata__[0].help)

    for text in (help_of(mine_command, "retriever_kind"), help_of(endtoend_command, "retrievers")):
        assert "bm25, dense, hybrid, random" in text
    assert "bm25,dense,hybrid,random" in str(RetrieverOpt.__metadata__[0].help)


def test_mining_refuses_an_unknown_kind_before_loading_anything(lastfirst: RetrieverKindInfo) -> None:
    from deltap.mining.setup import RetrieverSettings

    assert RetrieverSettings("lastfirst").kind == "lastfirst" and RetrieverSettings("none").kind == "none"
    with pytest.raises(DeltapError) as info:
        RetrieverSettings("splade")
    assert str(info.value) == (
        "unknown retriever kind 'splade'; expected one of bm25, dense, hybrid, random, lastfirst or none"
    )
