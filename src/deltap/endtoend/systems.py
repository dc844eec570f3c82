"""The systems an end-to-end evaluation compares: each is a ranked list of document ids per case.

* **retrievers** — ``bm25``, ``dense``, ``hybrid`` (any :func:`deltap.retrieval.build_retriever` kind) over the
  case queries;
* **saved runs** — a TREC run or JSON ``{query_id: {doc_id: score}}`` file (``--run name=path``);
* **controls** — one table, :data:`CONTROLS` (a control = its list function plus one :func:`register_control`):
  ``none`` (no context), ``gold`` (the benchmark's gold documents, in benchmark order), ``mined`` (the documents the
  mining run labelled relevant, largest ΔP first) and ``all`` (every candidate of the mined pool, in id order: no
  position carries provenance). Each declares whether it is cut at ``k`` and which qrels it defines (``gold`` the gold
  qrels, ``mined`` deltap's), so that no qrels is judged on its own control.

A system's top-k is what a RAG application would put in the prompt; :func:`as_run` turns the lists into a run with
rank-based scores, so the same lists are scored by the evaluation library's metrics. After a run, each system is scored
on what its prompts really held (:func:`shown_systems`: after the context-window fit) and a system not cut at ``k``
on its whole list (:func:`prompt_metric`): the ``all`` control is scored on every candidate in its prompt, not on its
first ``k`` ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap._registry import Registry
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.dataset import VerifiedDataset
    from deltap.documents import Corpus

__all__ = [
    "CONTROLS",
    "ControlKind",
    "System",
    "as_run",
    "check_controls",
    "control_systems",
    "prompt_metric",
    "register_control",
    "retriever_systems",
    "run_systems",
    "scored_depth",
    "shown_systems",
]


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
        estimated: Lines saying why the lists are a plan's stand-in, not the retriever's (empty: they are real); a
            plan prints them.
    """

    name: str
    kind: str
    ranking: Mapping[str, Sequence[str]] = field(default_factory=dict)
    cut: bool = True
    source: str = ""
    estimated: tuple[str, ...] = ()

    def top(self, case_id: str, k: int) -> list[str]:
        """The document ids this system puts in the prompt of ``case_id``."""
        docs = list(self.ranking.get(case_id, ()))
        return docs[:k] if self.cut else docs


def scored_depth(system: System, case_id: str, cutoff: int) -> int:
    """How deep a metric at ``cutoff`` looks into the system's list for ``case_id``: ``cutoff``, or — for a system not
    cut at ``k`` (a control that shows every candidate) — its whole list, so that it is scored on every document its
    prompt holds, not on its first ``cutoff``."""
    return cutoff if system.cut else max(cutoff, len(system.ranking.get(case_id, ())))


def shown_systems(systems: Sequence[System], shown: Mapping[str, Mapping[str, Sequence[str]]]) -> list[System]:
    """The systems as their prompts held them: ``shown`` is ``{case_id: {system name: [doc_id, ...]}}``, the documents
    each prompt held after the context-window fit (a case or system absent from it: no document). Metrics and the
    single-document trials score these lists: what the solver saw."""
    out = []
    for s in systems:
        ranking = {c: list(row[s.name]) for c, row in shown.items() if s.name in row}
        out.append(System(s.name, s.kind, ranking, cut=s.cut, source=s.source))
    return out


def prompt_metric(
    measure: Any, qrels: Mapping[str, Mapping[str, int]] | str, system: System, k: int, gains: Any = None
) -> dict[str, float]:
    """Per-case values of ``measure`` (a string such as ``ndcg@5``, or a measure) over the documents ``system`` puts in
    the prompt, through :func:`deltap.evaluate` (a case without judgements or documents scores 0, trec_eval's rule).

    A system cut at ``k`` is scored at the measure's cutoff. A system not cut at ``k`` is scored on its whole list:
    the measure's cutoff is raised to the list's length (:func:`scored_depth`), case by case. ``gains``: signed gains
    for ``signed_utility@K``, passed to :func:`deltap.evaluate`.
    """
    import dataclasses
    import warnings

    from deltap.evaluation import evaluate
    from deltap.evaluation.measures import parse_metric
    from deltap.evaluation.ranking import EvaluationWarning
    from deltap.judgements import load_qrels

    m = parse_metric(measure)
    judged = set(load_qrels(qrels) if isinstance(qrels, str) else qrels)
    run = {c: docs for c, docs in as_run(system, k).items() if c in judged}  # unjudged cases score 0
    groups: dict[int | None, dict[str, dict[str, float]]] = {}
    for case_id, docs in run.items():
        depth = None if m.k is None else scored_depth(system, case_id, m.k)
        groups.setdefault(depth, {})[case_id] = docs
    out: dict[str, float] = {}
    for depth, part in groups.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvaluationWarning)
            res = evaluate(qrels, part, [dataclasses.replace(m, k=depth)], gains=gains, on_missing="zero",
                           on_empty="zero", n_resamples=0, run_name=system.name)  # fmt: skip
        for q, v in zip(res.query_ids, res.values[:, 0], strict=True):
            if q in part:
                out[q] = float(v)
    return out


def as_run(system: System, k: int) -> dict[str, dict[str, float]]:
    """The system's top-k as a run ``{case_id: {doc_id: score}}`` (scores ``k - rank``, strictly decreasing)."""
    out: dict[str, dict[str, float]] = {}
    for case_id in system.ranking:
        docs = system.top(case_id, k)
        if docs:
            out[case_id] = {d: float(len(docs) - i) for i, d in enumerate(docs)}
    return out


def retriever_systems(
    kinds: Sequence[str],
    cases: Sequence[Case],
    corpus: Corpus,
    k: int,
    *,
    store: str | None = None,
    seed: int = 0,
    plan_only: bool = False,
) -> list[System]:
    """One system per retriever kind (a key of :data:`deltap.retrieval.registry.RETRIEVERS`): its top-``k`` for every
    case query. ``plan_only``: no embedding call, nothing written — a kind that embeds gets estimated lists
    (:func:`deltap.retrieval.standin.plan_retriever`; the system's ``estimated`` says so).

    Raises:
        DeltapError: a kind that is not registered, or a ``store`` that holds no index (as ``deltap search`` says; a
            kind that embeds is built on an existing index only) — before any retriever is built.
    """
    from deltap.retrieval import build_retriever
    from deltap.retrieval.base import Closeable, Releasable
    from deltap.retrieval.factory import existing_index
    from deltap.retrieval.standin import LengthStandIn, plan_retriever

    for kind in kinds:
        existing_index(kind, store)
    out = []
    for kind in kinds:
        if plan_only:
            retriever = plan_retriever(kind, corpus, store=store, seed=seed)
        else:
            retriever = build_retriever(kind, corpus, store=store, seed=seed)
        try:
            hits = retriever.search_batch([c.query for c in cases], k=k)
        finally:  # every top-k is read before the first solver call: the index is free for others during the run
            if isinstance(retriever, Closeable):
                retriever.close()
            elif isinstance(retriever, Releasable):
                retriever.release()
        ranking = {c.case_id: [h.doc_id for h in row] for c, row in zip(cases, hits, strict=True)}
        estimated = tuple(retriever.notes(k)) if isinstance(retriever, LengthStandIn) else ()
        out.append(System(kind, "retriever", ranking, source=f"retriever {kind}", estimated=estimated))
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


def _no_document(cases: Sequence[Case], dataset: VerifiedDataset | None) -> dict[str, list[str]]:
    return {c.case_id: [] for c in cases}


def _gold_documents(cases: Sequence[Case], dataset: VerifiedDataset | None) -> dict[str, list[str]]:
    return {c.case_id: list(c.gold_doc_ids) for c in cases}


def _mined_relevant(cases: Sequence[Case], dataset: VerifiedDataset | None) -> dict[str, list[str]]:
    """Per case, the candidates labelled relevant, largest ΔP first (ties by id)."""
    mined: dict[str, list[str]] = {}
    for case in dataset.cases if dataset is not None else ():
        yes = [(c.delta_p or 0.0, c.doc_id) for c in case.candidates if c.verdict == "relevant"]
        mined[case.case_id] = [d for _, d in sorted(yes, key=lambda t: (-t[0], t[1]))]
    return {c.case_id: mined.get(c.case_id, []) for c in cases}


def _every_candidate(cases: Sequence[Case], dataset: VerifiedDataset | None) -> dict[str, list[str]]:
    """Per case, every candidate of the mined pool, by id (no position carries provenance)."""
    every = {case.case_id: sorted(c.doc_id for c in case.candidates) for case in (dataset.cases if dataset else ())}
    return {c.case_id: every.get(c.case_id, []) for c in cases}


@dataclass(frozen=True)
class ControlKind:
    """One control system of an end-to-end run: a fixed document list per case, no retriever.

    Args:
        name: The name (``--controls``).
        lists: ``(cases, mined dataset or None) -> {case_id: [doc_id, ...]}`` in prompt order.
        cut: Whether the engine cuts the list at ``k`` (``all`` keeps every candidate).
        description: What the list is, for ``--help`` and the manifest.
        defines_qrels: The qrels label whose judgements this control's lists are made of (``gold``: the benchmark's
            gold qrels; ``deltap``: the mined qrels), or ``None``: a qrels is never judged on the control it defines.
        needs_dataset: Whether the lists come from the mined ``retrieval_dataset.yaml``.
    """

    name: str
    lists: Callable[[Sequence[Case], VerifiedDataset | None], dict[str, list[str]]]
    cut: bool
    description: str
    defines_qrels: str | None = None
    needs_dataset: bool = False


#: the control systems, in the order they are reported (``--controls`` accepts their names)
CONTROLS: Registry[ControlKind] = Registry("control")


def register_control(info: ControlKind, replace: bool = False) -> ControlKind:
    """Add a control system (``replace=True`` to redefine one); it is then a ``--controls`` choice.

    Raises:
        DeltapError: the name is taken and ``replace`` is false.
    """
    return CONTROLS.register(info.name, info, replace)


register_control(ControlKind("none", _no_document, cut=False, description="no document"))
register_control(
    ControlKind("gold", _gold_documents, cut=True, description="the benchmark's gold documents", defines_qrels="gold")
)
register_control(
    ControlKind(
        "mined",
        _mined_relevant,
        cut=True,
        description="documents labelled relevant by mining",
        defines_qrels="deltap",
        needs_dataset=True,
    )
)
register_control(
    ControlKind("all", _every_candidate, cut=False, description="every candidate of the mined pool", needs_dataset=True)
)


def check_controls(names: Sequence[str]) -> None:
    """Refuse control names that are not registered (one line listing the registered ones).

    Raises:
        DeltapError: an unknown control.
    """
    unknown = [n for n in names if n not in CONTROLS]
    if unknown:
        raise DeltapError(f"unknown control(s) {', '.join(unknown)}; choose from {', '.join(CONTROLS)}")


def control_systems(names: Sequence[str], cases: Sequence[Case], dataset: VerifiedDataset | None) -> list[System]:
    """The control systems ``names`` (keys of :data:`CONTROLS`), in the registry's order; the ones that need the
    mined dataset (``mined``, ``all``) refuse ``dataset=None``."""
    check_controls(names)
    chosen = [CONTROLS[n] for n in CONTROLS if n in names]
    if dataset is None and any(c.needs_dataset for c in chosen):
        need = " and ".join(c.name for c in chosen if c.needs_dataset)
        raise DeltapError(f"the {need} control(s) need the run directory's retrieval_dataset.yaml")
    return [System(c.name, "control", c.lists(cases, dataset), cut=c.cut, source=c.description) for c in chosen]
