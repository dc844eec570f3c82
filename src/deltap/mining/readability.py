"""Replies the checker could not read (issue 34, item 4): run.json's ``checker`` block and its warning.

A ``fail`` verdict is either a wrong answer or a reply the checker found no answer in (detail ``unreadable: ...``,
:func:`deltap.checkers.is_unreadable`: an empty reply, an echo of the options, text that names no candidate). Both
count as failures, but many unreadable replies mean the checker — its reading of the model's style — rather than the
documents decides the outcomes, and so the labels. This module counts them over a run's trial log (every session of
it, like the spend): a trial answered from a deterministic solver's earlier answer to the same prompt (``cached:``)
counts as that answer was judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deltap.checkers.base import is_unreadable

if TYPE_CHECKING:
    from deltap.trials.log import TrialLog

__all__ = ["WARN_SHARE", "UnreadableRepliesWarning", "readability", "readability_line"]

#: the share of unreadable replies (of the replies judged pass or fail) from which a run warns
WARN_SHARE = 0.2
#: ... and the fewest unreadable replies that warn (a handful in a tiny run is no pattern)
WARN_MIN = 5


class UnreadableRepliesWarning(UserWarning):
    """Many replies of a run had no answer the checker could locate: the checker, not the documents, is then deciding
    the labels (see :func:`readability`)."""


def readability(log: TrialLog, case_ids: Sequence[str]) -> dict[str, Any]:
    """The run's replies the checker could not read.

    Returns:
        ``{"replies": n, "unreadable": k, "share": k / n, "warning": bool, "by_case": {case_id: k}}`` over the
        trials judged ``pass`` or ``fail`` (``by_case`` lists the cases with at least one).
    """
    replies = unread = 0
    by_case: dict[str, int] = {}
    for case_id in case_ids:
        records = [r for r in log.trials(case_id) if r.outcome in ("pass", "fail")]
        judged = {r.prompt_hash: r.detail for r in records if r.prompt_hash and not r.detail.startswith("cached:")}
        n = 0
        for r in records:
            detail = judged.get(r.prompt_hash or "", "") if r.detail.startswith("cached:") else r.detail
            n += is_unreadable(detail)
        replies += len(records)
        unread += n
        if n:
            by_case[case_id] = n
    share = unread / replies if replies else 0.0
    return {
        "replies": replies,
        "unreadable": unread,
        "share": round(share, 4),
        "warning": share >= WARN_SHARE and unread >= WARN_MIN,
        "by_case": by_case,
    }


def readability_line(block: dict[str, Any]) -> str | None:
    """``replies the checker could not read: 12 of 91 (13.2%)``, with what a high share means; ``None`` when no
    reply was judged."""
    if not block or not block.get("replies"):
        return None
    line = (
        f"replies the checker could not read: {block['unreadable']} of {block['replies']} "
        f"({100 * float(block['share']):.1f}%)"
    )
    if block.get("warning"):
        line += (
            " — the checker, not the documents, decides many outcomes: look at the replies (deltap export) and the "
            "checker's answer grammar, or ask for the answer protocol line (--solver-option answer_protocol=on)"
        )
    return line
