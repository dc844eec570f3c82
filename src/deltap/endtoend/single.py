"""The eRAG-style single-document utility: each document a system shows, alone in the prompt, scored by the case's own
checker (or the reference answer's log-probability); then an IR metric over each system's ranking with that outcome as
the document's label.

eRAG (Salemi & Zamani, "Evaluating Retrieval Quality in Retrieval-Augmented Generation", SIGIR 2024) labels each
retrieved document by the downstream metric of the generator given that document alone, and evaluates a ranking with
the usual IR measures over those labels. Here, per case, every document any system puts in its top ``k``
(deduplicated, first appearance first) is asked alone (trial kind ``endtoend:single:<doc>``, fresh seeds, resumable,
counted in the call ceiling). The label of a document ``d`` of a case is

* ``pass``: its success rate alone, ``u(d)`` in [0, 1] (eRAG's label: the checker's outcome);
* ``logprob``: its lift over no document, ``u(d) − u(∅)`` in nats (the no-document prompt is asked once per case,
  kind ``endtoend:single:``), so that showing nothing scores 0 as it does for every other metric.

Over a system's top ``k`` list ``D = (d_1, ..., d_n)``, ``n ≤ k``, with labels ``g``:

* ``erag_precision@k`` = ``Σ g(d_i) / k`` (trec_eval's P@k: a short list is divided by ``k``);
* ``erag_hit@k`` = ``max_i g(d_i)``, 0 for an empty list (eRAG's success@k for a binary label);
* ``erag_ndcg@k`` = ``Σ g(d_i) / log2(i + 1)`` over the ideal DCG of the case's measured documents (their positive
  labels, best first, ``k`` of them); 0 when no measured document has a positive label.

A control not cut at ``k`` (``all``: every candidate that fits the window) is scored on the ``n`` documents its prompt
holds: ``k`` is ``max(k, n)`` for it, and every one of them is asked alone.

A document whose trial errored, or that does not fit the solver's window alone, has no label and counts 0.

What a single-document label cannot see is a document's effect in company: two documents that help only together (a
coalition), or a distractor that only hurts beside the right document, get the labels of their solo effects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from deltap.outcomes import outcome_kind

if TYPE_CHECKING:
    from deltap.endtoend.systems import System

__all__ = [
    "BASELINE_KIND",
    "ERAG_MEASURES",
    "SINGLE_KIND",
    "erag_labels",
    "erag_metric",
    "single_doc_ceiling",
    "single_doc_ids",
]

#: trial kind prefix of a single-document trial (``endtoend:single:<doc_id>``)
SINGLE_KIND = "endtoend:single:"
#: the no-document trial of the ``logprob`` labels (``endtoend:single:`` with no document id)
BASELINE_KIND = SINGLE_KIND
#: the IR measures over single-document labels, as named in the validity table (``erag_<measure>@k``)
ERAG_MEASURES: tuple[str, ...] = ("precision", "hit", "ndcg")
#: the qrels column of the eRAG rows of the validity table
ERAG_QRELS = "single-doc (eRAG)"


def single_doc_ids(systems: Sequence[System], case_id: str, k: int) -> list[str]:
    """Every document any system puts in the prompt of ``case_id`` (its top ``k``; a control not cut at ``k``, its
    whole list), once each, in first appearance order. Given the systems as their prompts held them
    (:func:`deltap.endtoend.systems.shown_systems`), exactly the documents the solver saw."""
    seen: dict[str, None] = {}
    for s in systems:
        for d in s.top(case_id, k):
            seen.setdefault(d, None)
    return list(seen)


def single_doc_ceiling(
    case_ids: Sequence[str], systems: Sequence[System], k: int, repeats: int, deterministic: bool, outcome: str
) -> int:
    """At most this many solver calls for the single-document trials: one per case, distinct document and repeat, plus
    the no-document prompt per case for ``logprob`` (a deterministic solver: one repeat)."""
    reps = 1 if deterministic else repeats
    extra = 0 if outcome_kind(outcome).binary else 1
    return sum((len(single_doc_ids(systems, c, k)) + extra) * reps for c in case_ids)


def erag_labels(utilities: Mapping[str, float | None], baseline: float | None, outcome: str) -> dict[str, float]:
    """A case's document labels from its single-document utilities: the utility (``pass``) or its lift over the
    no-document utility (``logprob``); documents without a utility (or without a baseline) are left out."""
    out: dict[str, float] = {}
    for d, u in utilities.items():
        if u is None or not math.isfinite(u):
            continue
        if not outcome_kind(outcome).binary:
            if baseline is None or not math.isfinite(baseline):
                continue
            out[d] = float(u) - float(baseline)
        else:
            out[d] = float(u)
    return out


def erag_metric(
    measure: str, labels: Mapping[str, Mapping[str, float]], systems: Sequence[System], case_ids: Sequence[str], k: int
) -> np.ndarray:
    """``(cases, systems)`` values of ``erag_<measure>@k`` (``measure`` in :data:`ERAG_MEASURES`) from per-case
    document labels ``{case_id: {doc_id: label}}`` (unlabelled documents count 0). A system not cut at ``k`` (a
    control showing every candidate) is scored on its whole list, the cutoff raised to its length
    (:func:`deltap.endtoend.systems.scored_depth`)."""
    from deltap.endtoend.systems import scored_depth

    if measure not in ERAG_MEASURES:
        raise ValueError(f"unknown eRAG measure {measure!r}; choose from {', '.join(ERAG_MEASURES)}")
    out = np.zeros((len(case_ids), len(systems)))
    for i, c in enumerate(case_ids):
        lab = labels.get(c) or {}
        positive = sorted((g for g in lab.values() if g > 0), reverse=True)
        for j, s in enumerate(systems):
            depth = scored_depth(s, c, k)
            disc = 1.0 / np.log2(np.arange(2, depth + 2))
            ideal_gains = positive[:depth]
            idcg = float(np.dot(ideal_gains, disc[: len(ideal_gains)]))
            g = np.array([lab.get(d, 0.0) for d in s.top(c, k)[:depth]], dtype=float)
            if measure == "precision":
                out[i, j] = float(g.sum()) / depth
            elif measure == "hit":
                out[i, j] = float(g.max()) if len(g) else 0.0
            else:
                out[i, j] = float(np.dot(g, disc[: len(g)])) / idcg if idcg > 0 else 0.0
    return out
