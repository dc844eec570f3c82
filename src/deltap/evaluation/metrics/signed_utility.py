"""Signed utility at K: the task-success lift the top K documents are measured to bring (harmful ones count against)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from deltap.errors import DeltapError
from deltap.evaluation.metrics.base import Metric, group_position
from deltap.evaluation.ranking import Ranking, SignedRanks


class SignedUtility(Metric):
    r"""Signed utility at K: the sum of the mined gains of the top K documents, harmful documents counting against.

    Gains come from a deltap verified dataset (``retrieval_dataset.yaml``; TREC and BEIR qrels cannot carry negative
    grades): a relevant document's gain is its measured :math:`\Delta P` (the lift in success probability, or in
    log-probability of the reference answer for the ``logprob`` outcome), a harmful document's is
    :math:`-|\Delta P|`, and irrelevant, undecided and unjudged documents count 0 — print ``judged@K`` beside it to
    see how much of the top K the labels actually cover (deltap does so automatically). **Graded input**
    (``--labels graded`` / ``graded_no_gold``, :func:`deltap.judgements.load_judgements` with ``labels=``): the gain
    of every graded candidate is its shrunken utility (issue 35, docs/graded-labels.md) — positive or negative,
    decided or not, pulled toward zero by as much as its noise warrants — so "likely helps, not proven" counts for
    what it is estimated to bring instead of 0. With :math:`g(d)` the gain
    and :math:`T_K` the top K of the run:

    .. math::
        U@K(q) = \sum_{d \in T_K} g(d) + \max\Bigl(0,\ \max_{C \subseteq T_K} b(C)\Bigr), \qquad
        b(C) = \max\Bigl(0,\ v(C) - \sum_{d \in C} g(d)\Bigr)

    **Coalitions.** A verified winning coalition :math:`C` (documents that help together) with measured value
    :math:`v(C)` (the lift of the coalition trials: exactly :math:`C` in context vs no document) counts only when
    the whole coalition is in the top K; its members are never counted twice: a complete coalition raises the
    members' own contribution to :math:`v(C)` (the bonus :math:`b(C)`), and a member retrieved without its partners
    counts only its own gain. Coalitions of a query are alternatives (any one lets the solver succeed), so only the
    largest bonus among the complete ones is added, not their sum.

    **No rank discount.** A RAG application puts the whole top K into the prompt, and the gains were measured in
    random company with documents in a canonical order, so they carry no position: under an additive model
    :math:`U@K` estimates how much putting the top K into the prompt raises the chance of success over an empty
    context, in the outcome's own unit. A log discount (nDCG's) would model a reader scanning a list, which the
    solver is not.

    **Normalisation.** ``signed_utility(norm=ideal)@K`` divides by the ideal :math:`U@K` — the best value any K
    judged documents reach: the K largest positive gains, or a coalition completed and the remaining slots filled
    with the largest positive gains outside it, whichever is higher (exact under this definition, since only one
    bonus counts). It is at most 1, negative when harmful documents outweigh the useful ones, and 0 for a query
    whose ideal is 0 (no positive gain), as nDCG scores a query without relevant documents.

    References: the deltap design (§5 verdicts, §7 coalitions, §10 signed utility); UDCG (Trappolini et al.,
    arXiv 2510.21440) for distracting passages counted negatively; eRAG (Salemi & Zamani, SIGIR 2024) for
    document utility measured by the downstream task.
    """

    name = "signed_utility"
    label = "signed_utility"
    aliases = ("utility", "signed_util")
    cutoff = "required"
    params: ClassVar[dict[str, tuple[str, ...] | None]] = {"norm": ("none", "ideal")}
    needs: ClassVar[frozenset[str]] = frozenset({"gains"})

    def compute(self, ranking: Ranking, k: int | None, params: dict[str, int | str]) -> np.ndarray:
        assert k is not None  # guaranteed by cutoff = "required"
        s = ranking.signed
        if s is None:
            raise DeltapError(
                "signed_utility needs signed gains: give a deltap retrieval_dataset.yaml as the qrels (or a run "
                "directory with --labels graded; TREC and BEIR qrels cannot carry negative grades), or pass gains= "
                "to evaluate/compare"
            )
        n = ranking.n_queries
        got = s.rank <= k
        value = np.bincount(s.query[got], weights=s.gain[got], minlength=n) + best_bonus(s, k, n)
        if params.get("norm", "none") != "ideal":
            return value
        ideal = ideal_utility(s, k, n)
        return np.divide(value, ideal, out=np.zeros(n), where=ideal > 0)


def _bonus(s: SignedRanks) -> np.ndarray:
    """``(C,)`` bonus of each coalition: its value beyond its members' own gains (never negative)."""
    c = s.coalitions
    assert c is not None
    members = np.bincount(c.member_coalition, weights=s.member_gain, minlength=len(c.query))
    return np.maximum(s.coalition_value - members, 0.0)


def best_bonus(s: SignedRanks, k: int, n: int) -> np.ndarray:
    """``(n,)`` the largest bonus among the coalitions complete in the top ``k`` (0 when none is)."""
    out = np.zeros(n)
    c = s.coalitions
    if c is None or len(c.query) == 0:
        return out
    inside = np.bincount(c.member_coalition, weights=c.member_rank <= k, minlength=len(c.query))
    complete = inside == c.size
    np.maximum.at(out, c.query[complete], _bonus(s)[complete])
    return out


def ideal_utility(s: SignedRanks, k: int, n: int) -> np.ndarray:
    """``(n,)`` the highest signed utility at ``k`` any ranking reaches (see :class:`SignedUtility`)."""
    pos = s.gain > 0
    q, g = s.query[pos], s.gain[pos]
    order = np.lexsort((-g, q))
    q_sorted, g_sorted = q[order], g[order]
    rank_in_query = group_position(q_sorted)
    keep = rank_in_query <= k
    ideal = np.bincount(q_sorted[keep], weights=g_sorted[keep], minlength=n)
    c = s.coalitions
    if c is None or len(c.query) == 0:
        return ideal
    # Positive gains per query, largest first, with each one's document (to leave the coalition's members out of the fill).
    doc_of = [s.doc_ids[j] for j in np.flatnonzero(pos)[order].tolist()]
    bonus = _bonus(s)
    members_of: dict[int, set[str]] = {}
    for ci, did in zip(c.member_coalition.tolist(), s.member_doc_ids, strict=True):
        members_of.setdefault(ci, set()).add(did)
    starts = np.searchsorted(q_sorted, np.arange(n + 1))
    member_gain = np.bincount(c.member_coalition, weights=s.member_gain, minlength=len(c.query))
    for ci in range(len(c.query)):
        size = int(c.size[ci])
        if size > k:
            continue
        qi = int(c.query[ci])
        members = members_of.get(ci, set())
        fill = [float(g_sorted[t]) for t in range(starts[qi], starts[qi + 1]) if doc_of[t] not in members]
        total = float(member_gain[ci]) + float(bonus[ci]) + sum(fill[: k - size])
        ideal[qi] = max(ideal[qi], total)
    return ideal
