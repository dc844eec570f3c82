"""The systems an end-to-end evaluation compares: each is a ranked list of document ids per case.

* **retrievers** — ``bm25``, ``dense``, ``hybrid`` (any :func:`deltap.retrieval.build_retriever` kind) over the
  case queries;
* **saved runs** — a TREC run or JSON ``{query_id: {doc_id: score}}`` file (``--run name=path``);
* **controls** — ``none`` (no context), ``gold`` (the benchmark's gold documents, in benchmark order), ``mined``
  (the documents the mining run labelled relevant, largest ΔP first) and ``all`` (every candidate of the mined
  pool, in id order: no position carries provenance).

A system's top-k is what a RAG application would put in the prompt; :func:`as_run` turns the lists into a run with
rank-based scores, so the same lists are scored by the evaluation library's metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus

__all__ = ["CONTROLS", "System", "as_run", "control_systems", "retriever_systems", "run_systems"]

#: the control systems, in the order they are reported
CONTROLS: tuple[str, ...] = ("none", "gold", "mined", "all")


@dataclass(frozen=True)
class System:
    """One system under test.

    Args:
        name: Unique name (``bm25``, ``gold``, a ``--run`` name...).
        kind: ``retriever``, ``run`` or ``control``.
        ranking: ``{case_id: [doc_id, ...]}`` best first; a case absent from it gets no document. The engine cuts
            retrievers and runs at ``k``; controls keep their whole list (``all`` is every candidate).
        cut: Whether the engine cuts the list at ``k``.
        source: Where the lists came from (for the manifest).
    """

    name: str
    kind: str
    ranking: Mapping[str, Sequence[str]] = field(default_factory=dict)
    cut: bool = True
    source: str = ""

    def top(self, case_id: str, k: int) -> list[str]:
        """The document ids this system puts in the prompt of ``case_id``."""
        docs = list(self.ranking.get(case_id, ()))
        return docs[:k] if self.cut else docs


def as_run(system: System, k: int) -> dict[str, dict[str, float]]:
    """The system's top-k as a run ``{case_id: {doc_id: score}}`` (scores ``k - rank``, strictly decreasing)."""
    out: dict[str, dict[str, float]] = {}
    for case_id in system.ranking:
        docs = system.top(case_id, k)
        if docs:
            out[case_id] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
    return out


def retriever_systems(
    kinds: Sequence[str], cases: Sequence[Case], corpus: Corpus, k: int, *, store: str | None = None, seed: int = 0
) -> list[System]:
    """One system per retriever kind: its top-``k`` for every case query."""
    from deltap.retrieval import build_retriever
    from deltap.retrieval.base import Closeable, Releasable

    out = []
    for kind in kinds:
        retriever = build_retriever(kind, corpus, store=store, seed=seed)
        try:
            hits = retriever.search_batch([c.query for c in cases], k=k)
        finally:  # every top-k is read before the first solver call: the index is free for others during the run
            if isinstance(retriever, Closeable):
                retriever.close()
            elif isinstance(retriever, Releasable):
                retriever.release()
        ranking = {c.case_id: [h.doc_id for h in row] for c, row in zip(cases, hits, strict=True)}
        out.append(System(kind, "retriever", ranking, source=f"retriever {kind}"))
    return out


def run_systems(specs: Sequence[str], cases: Sequence[Case], corpus: Corpus) -> list[System]:
    """Systems from ``name=path`` run files (TREC or JSON); documents absent from the corpus are an error."""
    from deltap.qrels import load_run

    out = []
    wanted = {c.case_id for c in cases}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise DeltapError(f"--run {spec!r} must look like name=path (a TREC run or JSON run file)")
        run = load_run(Path(path.strip()))
        ranking = {
            q: [d for d, _ in sorted(docs.items(), key=lambda kv: (-kv[1], kv[0]))]
            for q, docs in run.items()
            if q in wanted
        }
        if not ranking:
            raise DeltapError(f"--run {name}: {path} has no query id in common with the cases")
        corpus.require(
            {d for docs in ranking.values() for d in docs},
            f"document ids of run {path}",
            hint="use the corpus the run was made for",
        )
        out.append(System(name.strip(), "run", ranking, source=str(path)))
    return out


def _mined_lists(dataset_pairs: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(mined, all)``: per case, the candidates labelled relevant (largest ΔP first) and every candidate (by id)."""
    mined: dict[str, list[str]] = {}
    every: dict[str, list[str]] = {}
    for pair in dataset_pairs:
        cands = [c for c in pair.get("candidates") or [] if c.get("doc_id") or c.get("fqn")]
        ids = [str(c.get("doc_id") or c.get("fqn")) for c in cands]
        every[str(pair["id"])] = sorted(ids)
        yes = [
            (float(c.get("delta_p") or 0.0), i)
            for c, i in zip(cands, ids, strict=True)
            if str(c.get("empirical_relevance") or "").upper() == "YES"
        ]
        mined[str(pair["id"])] = [i for _, i in sorted(yes, key=lambda t: (-t[0], t[1]))]
    return mined, every


def control_systems(
    names: Sequence[str], cases: Sequence[Case], dataset_pairs: Sequence[Mapping[str, Any]] | None
) -> list[System]:
    """The control systems ``names`` (a subset of :data:`CONTROLS`); ``mined`` and ``all`` need the mined dataset."""
    unknown = [n for n in names if n not in CONTROLS]
    if unknown:
        raise DeltapError(f"unknown control(s) {', '.join(unknown)}; choose from {', '.join(CONTROLS)}")
    if dataset_pairs is None and any(n in ("mined", "all") for n in names):
        raise DeltapError("the mined and all controls need the run directory's retrieval_dataset.yaml")
    mined, every = _mined_lists(dataset_pairs or [])
    ids = [c.case_id for c in cases]
    lists: dict[str, dict[str, list[str]]] = {
        "none": {i: [] for i in ids},
        "gold": {c.case_id: list(c.gold_doc_ids) for c in cases},
        "mined": {i: mined.get(i, []) for i in ids},
        "all": {i: every.get(i, []) for i in ids},
    }
    sources = {
        "none": "no document",
        "gold": "the benchmark's gold documents",
        "mined": "documents labelled relevant by mining",
        "all": "every candidate of the mined pool",
    }
    return [
        System(n, "control", lists[n], cut=n in ("gold", "mined"), source=sources[n]) for n in CONTROLS if n in names
    ]
