"""A known-truth end-to-end scenario: a simulated solver with planted document utilities, gold sets that contain
planted distractors, and systems whose true utility is known — the check that the end-to-end run ranks the systems
as the truth does, and that qrels which know the distractors (deltap's) predict success better than gold qrels.

Per case ``c``: ``c/gold_help`` (gold, +``help``), ``c/gold_distractor`` (in the gold set, but −``distract``: it
misleads the solver), ``c/extra_help`` (not gold, +``extra``) and neutral documents ``c/n0..``. The systems put two
documents in the prompt; their true success probabilities are ``base`` plus the effects (clipped to [0, 1]).

With ``coalition > 0`` the effects are not additive: ``c/pair_a`` and ``c/pair_b`` (retrieved, not gold) do nothing
alone and add ``coalition`` together, and the system ``pair`` shows both — the case a single-document utility (eRAG)
cannot see, while ΔP, averaged over random company, gives each member half of the joint effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deltap.endtoend.systems import System
from deltap.run_layout import RunDir

__all__ = ["PAIR_SYSTEM", "PLANTED_SYSTEMS", "PlantedScenario", "planted_scenario", "run_planted"]

#: system name -> the two documents it shows (suffixes of the case's document ids), best first
PLANTED_SYSTEMS: dict[str, tuple[str, ...]] = {
    "both_helpers": ("gold_help", "extra_help"),
    "gold_help_only": ("gold_help", "n0"),
    "extra_help_only": ("extra_help", "n0"),
    "gold_set": ("gold_help", "gold_distractor"),
    "none": (),
    "distractor": ("gold_distractor", "n0"),
}
#: the system of the non-additive scenario (``coalition > 0``): both members of the coalition
PAIR_SYSTEM: dict[str, tuple[str, ...]] = {"pair": ("pair_a", "pair_b")}


@dataclass
class PlantedScenario:
    """The cases, corpus, simulated solver, systems and planted per-case utility of the scenario."""

    cases: list[Any]
    corpus: Any
    solver: Any
    systems: list[System]
    truth: Any
    retriever: Any

    def true_utility(self, systems: Sequence[System], k: int) -> np.ndarray:
        """``(cases, systems)`` planted success probability of each system's top-k."""
        return np.array([[self.truth[c.case_id].mean(s.top(c.case_id, k)) for s in systems] for c in self.cases])


class _ListRetriever:
    """Returns the case's non-gold documents (its helper first): the mining pool's retrieved candidates."""

    name = "planted"
    id = "planted"

    def __init__(self, lists: Mapping[str, list[str]]) -> None:
        self.lists = dict(lists)

    def search(self, query: str, k: int = 10, filter: Any = None) -> list[Any]:
        from deltap.retrieval.base import Hit

        return [Hit(d, float(10 - i), i + 1) for i, d in enumerate(self.lists.get(query, [])[:k])]

    def search_batch(self, queries: Sequence[str], k: int = 10, filter: Any = None) -> list[list[Any]]:
        return [self.search(q, k) for q in queries]


def planted_scenario(
    n_cases: int = 60,
    *,
    base: float = 0.1,
    help: float = 0.5,
    extra: float = 0.3,
    distract: float = 0.4,
    n_neutral: int = 4,
    coalition: float = 0.0,
    seed: int = 0,
) -> PlantedScenario:
    """Build the scenario (see the module docstring); ``coalition > 0`` adds the non-additive pair."""
    from deltap.cases import Case, CheckerSpec
    from deltap.documents import Corpus, Document
    from deltap.solvers.simulated import SimulatedSolver, SimulatedTruth

    docs, cases, truth, lists = [], [], {}, {}
    for i in range(n_cases):
        cid = f"q{i:03d}"
        pair = ["pair_a", "pair_b"] if coalition > 0 else []
        names = ["gold_help", "gold_distractor", "extra_help", *pair, *(f"n{j}" for j in range(n_neutral))]
        for n in names:
            docs.append(Document(f"{cid}/{n}", f"Document {n} of question {cid}.", n))
        answer = f"answer-{cid}"
        query = f"question {cid}"
        cases.append(
            Case(
                cid,
                query,
                (f"{cid}/gold_help", f"{cid}/gold_distractor"),
                CheckerSpec("string_match", {"answers": [answer]}),
                answer,
            )
        )
        truth[cid] = SimulatedTruth(
            base,
            {f"{cid}/gold_help": help, f"{cid}/gold_distractor": -distract, f"{cid}/extra_help": extra},
            interactions={(f"{cid}/pair_a", f"{cid}/pair_b"): coalition} if coalition > 0 else {},
            answer=answer,
        )
        lists[query] = [f"{cid}/extra_help", *(f"{cid}/{p}" for p in pair), *(f"{cid}/n{j}" for j in range(n_neutral))]
    solver = SimulatedSolver(truth, outcome="pass", seed=seed)
    systems = [
        System(name, "planted", {c.case_id: [f"{c.case_id}/{s}" for s in suffixes] for c in cases}, source="planted")
        for name, suffixes in {**PLANTED_SYSTEMS, **(PAIR_SYSTEM if coalition > 0 else {})}.items()
    ]
    return PlantedScenario(cases, Corpus(docs, name="planted"), solver, systems, truth, _ListRetriever(lists))


def run_planted(
    scenario: PlantedScenario,
    *,
    repeats: int = 8,
    k: int = 2,
    seed: int = 0,
    budget: int = 64,
    out: Path | None = None,
    single_doc: bool = False,
) -> dict[str, Any]:
    """Mine the scenario (into ``out``, or in memory), then run it end to end: returns ``{"mining": MiningResult,
    "result": EndToEndResult, "systems": [...]}`` with the validity of ndcg / hit_rate / recall on gold and deltap
    qrels, ``signed_utility@k`` when the library has it (needs ``out``: it reads the dataset file), the eRAG
    single-document rows with ``single_doc``, and the planted utility."""
    import warnings

    from deltap.dataset import dataset_qrels
    from deltap.endtoend.config import EndToEndConfig
    from deltap.endtoend.engine import end_to_end
    from deltap.endtoend.systems import control_systems
    from deltap.endtoend.validity import metric_validity
    from deltap.mining.config import MiningConfig
    from deltap.mining.engine import mine

    with warnings.catch_warnings(record=True) as caught:  # the planted extra helper is a retrieved non-gold document
        warnings.simplefilter(
            "always"
        )  # that moves the outcome: mine() rightly warns about it (tilt); kept, not raised
        mining = mine(scenario.cases, scenario.corpus, scenario.solver, retriever=scenario.retriever, out=out,
                      config=MiningConfig(budget=budget, seed=seed, k=3, n_placebo=2, coalitions=False))  # fmt: skip
    systems = [*scenario.systems, *control_systems(["gold", "mined"], scenario.cases, mining.dataset)]
    result = end_to_end(
        scenario.cases,
        scenario.corpus,
        scenario.solver,
        systems,
        config=EndToEndConfig(k=k, repeats=repeats, seed=seed + 1, single_doc=single_doc),
    )
    gold = {c.case_id: {d: 1 for d in c.gold_doc_ids} for c in scenario.cases}
    judgements = {"gold": gold, "deltap": dataset_qrels(mining.dataset)}
    metrics = [f"ndcg@{k}", f"hit_rate@{k}", f"recall@{k}"]
    dataset_path = str(RunDir(out).dataset) if out is not None else None
    from deltap.endtoend.judged import judged_by_all, note_left_out

    judged, left_out = judged_by_all(result, judgements)  # the scoring rule of deltap evaluate
    result.validity = metric_validity(
        judged,
        systems,
        judgements,
        metrics,
        dataset_path=dataset_path,
        extra={"true utility": scenario.true_utility(systems, k)},
        single_doc=result.erag_labels() if single_doc else None,
    )
    note_left_out(result.validity, left_out, judgements)
    return {"mining": mining, "result": result, "systems": systems, "warnings": [str(w.message) for w in caught]}
