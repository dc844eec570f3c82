"""Candidate pool of a case: gold documents, retrieved top-k, and random placebo controls, with provenance.

Rules:

* **gold** — the case's gold ids that are in the corpus (ids not in the corpus are returned in
  :attr:`Pool.missing_gold`, never dropped silently);
* **retrieved** — the retriever's top-``k`` for the case's query (hard negatives and missed positives);
* **placebo** — ``n_placebo`` documents drawn (seeded by run seed and case id) from the corpus minus gold and
  retrieved: known nulls whose labels measure the achieved false-positive rate and, under the placebo null, define
  what "random text does". ``placebo_kind="random"`` draws them uniformly from the corpus; ``"similar"`` draws them
  uniformly from the retriever's ranks :data:`SIMILAR_RANKS` for the case's query — same corpus, same topic, similar
  documents, but far below the top-k candidates. Retrieved non-helpful documents can move a solver more than random
  text does (they look like an answer); placebos from the same neighbourhood make the placebo null and the placebo
  check see that (issue 14). A window with too few documents is filled up with random ones (reported in
  :attr:`Pool.placebo_note`);
* duplicates are merged into one candidate that keeps every source (a retrieved gold document is
  ``[gold, retrieved]``);
* **cap** — at most ``max_candidates``: every gold document and every placebo are kept (placebos are the control group
  and are few), then retrieved documents in rank order fill the remaining places; dropped retrieved ids are listed in
  :attr:`Pool.dropped`. If gold + placebo alone exceed the cap, gold documents beyond it are dropped (in
  benchmark order) and listed too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from deltap.mining.config import PLACEBO_KINDS

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.documents import Corpus
    from deltap.retrieval.base import Retriever

__all__ = ["PLACEBO_KINDS", "SIMILAR_RANKS", "Candidate", "Pool", "build_pool"]

SOURCES = ("gold", "retrieved", "placebo")
#: ranks (1-based, inclusive) of the retriever's ranking that ``similar`` placebos are drawn from
SIMILAR_RANKS = (21, 100)


@dataclass(frozen=True)
class Candidate:
    """A document under test for one case, with where it came from (``gold`` / ``retrieved`` / ``placebo``)."""

    doc_id: str
    sources: tuple[str, ...]
    retrieval_rank: int | None = None

    @property
    def is_placebo(self) -> bool:
        return self.sources == ("placebo",)


@dataclass
class Pool:
    """The candidates of one case (in pool order: gold, retrieved, placebo) and what did not make it."""

    case_id: str
    candidates: list[Candidate]
    missing_gold: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    placebo_note: str | None = None

    @property
    def doc_ids(self) -> list[str]:
        return [c.doc_id for c in self.candidates]

    def to_dict(self) -> dict[str, object]:
        return {
            "case_id": self.case_id,
            "candidates": [
                {"doc_id": c.doc_id, "sources": list(c.sources), "rank": c.retrieval_rank} for c in self.candidates
            ],
            "missing_gold": list(self.missing_gold),
            "dropped": list(self.dropped),
            **({"placebo_note": self.placebo_note} if self.placebo_note else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pool:
        cands = [Candidate(str(c["doc_id"]), tuple(c["sources"]), c.get("rank")) for c in data["candidates"]]
        return cls(
            str(data["case_id"]),
            cands,
            list(data.get("missing_gold") or []),
            list(data.get("dropped") or []),
            data.get("placebo_note"),
        )


def _placebo_rng(seed: int, case_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"deltap|{int(seed)}|{case_id}|placebo".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:8], "big")))


def build_pool(
    case: Case,
    corpus: Corpus,
    retriever: Retriever | None = None,
    k: int = 10,
    n_placebo: int = 5,
    max_candidates: int = 30,
    seed: int = 0,
    retrieved: Sequence[str] | None = None,
    placebo_kind: str = "random",
) -> Pool:
    """Assemble the candidate pool of ``case`` (see the module docstring for the rules).

    Args:
        case: The case (its ``gold_doc_ids`` should already be resolved against the corpus).
        corpus: Where candidates come from.
        retriever: Gives the ``retrieved`` part; ``None`` for none.
        k: How many retrieved documents.
        n_placebo: How many random placebo documents.
        max_candidates: The cap on the pool size.
        seed: Run seed (placebos are drawn from a generator seeded by it and the case id).
        retrieved: Precomputed retrieved ids (best first) instead of calling ``retriever``.
        placebo_kind: ``random`` (uniform over the corpus) or ``similar`` (uniform over the retriever's ranks
            :data:`SIMILAR_RANKS`; needs ``retriever``).
    """
    from deltap.errors import DeltapError

    if max_candidates < 1:
        raise ValueError(f"max_candidates must be positive, got {max_candidates}")
    if placebo_kind not in PLACEBO_KINDS:
        raise DeltapError(f"placebo kind must be one of {', '.join(PLACEBO_KINDS)}, got {placebo_kind!r}")
    if placebo_kind == "similar" and n_placebo > 0 and retriever is None:
        raise DeltapError(
            "placebo kind 'similar' draws placebos from far down a retriever's ranking: give a retriever (--retriever) or use --placebo-kind random"
        )
    gold = [g for g in dict.fromkeys(case.gold_doc_ids) if g in corpus]
    missing = [g for g in dict.fromkeys(case.gold_doc_ids) if g not in corpus]
    if retrieved is None:
        retrieved = [h.doc_id for h in retriever.search(case.query, k=k)] if retriever is not None and k > 0 else []
    retrieved = [d for d in dict.fromkeys(retrieved) if d in corpus][:k]
    taken = set(gold) | set(retrieved)
    pool_ids = [d for d in corpus.ids if d not in taken]
    rng = _placebo_rng(seed, case.case_id)
    note = None
    if placebo_kind == "similar" and n_placebo > 0:
        assert retriever is not None
        lo, hi = SIMILAR_RANKS
        ranked = [h.doc_id for h in retriever.search(case.query, k=hi)][lo - 1 : hi]
        window = [d for d in dict.fromkeys(ranked) if d in corpus and d not in taken]
        n_w = min(n_placebo, len(window))
        placebo = [window[i] for i in sorted(rng.choice(len(window), size=n_w, replace=False))] if n_w else []
        if n_w < n_placebo:
            rest = [d for d in pool_ids if d not in set(placebo)]
            n_r = min(n_placebo - n_w, len(rest))
            placebo += [rest[i] for i in sorted(rng.choice(len(rest), size=n_r, replace=False))] if n_r else []
            note = f"{n_w} similar placebos in the retriever's ranks {lo}-{hi}, {n_r} drawn at random to fill up"
    else:
        n_p = min(n_placebo, len(pool_ids))
        placebo = [pool_ids[i] for i in sorted(rng.choice(len(pool_ids), size=n_p, replace=False))] if n_p else []

    dropped: list[str] = []
    keep_gold = gold
    if len(gold) + len(placebo) > max_candidates:
        room = max(max_candidates - len(placebo), 0)
        keep_gold, extra = gold[:room], gold[room:]
        dropped += extra
        if len(placebo) > max_candidates:
            dropped += placebo[max_candidates:]
            placebo = placebo[:max_candidates]
    room = max_candidates - len(keep_gold) - len(placebo)
    # Every gold id, kept or not: a gold document dropped by the cap is already in ``dropped`` (listed once).
    gold_ids = set(gold)
    new_retrieved = [d for d in retrieved if d not in gold_ids]
    dropped += new_retrieved[max(room, 0) :]
    kept_retrieved = set(new_retrieved[: max(room, 0)])

    rank = {d: i + 1 for i, d in enumerate(retrieved)}
    cands: list[Candidate] = []
    for d in keep_gold:
        src = ("gold", "retrieved") if d in rank else ("gold",)
        cands.append(Candidate(d, src, rank.get(d)))
    for d in retrieved:
        if d in kept_retrieved:
            cands.append(Candidate(d, ("retrieved",), rank[d]))
    for d in placebo:
        cands.append(Candidate(d, ("placebo",)))
    return Pool(case.case_id, cands, missing, dropped, note)
