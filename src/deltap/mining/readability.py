"""How the checker read a run's replies (issue 34): run.json's ``checker`` block, its line and its warnings.

A judged reply (a ``pass`` or ``fail`` verdict) was read one of three ways:

* from the reply's **declared answer** — the answer protocol's final ``Answer: …`` line or a JSON ``answer`` field
  (the verdict's detail ends `` (declared)``, :func:`deltap.checkers.is_declared`);
* by the **answer grammar** (``docs/answer-grammar.md``), or by a checker that reads no answer line at all (pytest,
  regex, a custom checker);
* not at all: the checker found no answer in it (detail ``unreadable: ...``, :func:`deltap.checkers.is_unreadable`:
  an empty reply, an echo of the options, text that names no candidate). Unreadable replies count as failures, but
  many of them mean the checker — its reading of the model's style — rather than the documents decides the outcomes,
  and so the labels.

This module counts them over a run's trial log (every session of it, like the spend): a trial answered from a
deterministic solver's earlier answer to the same prompt (``cached:``) counts as that answer was judged. Two
warnings: :class:`UnreadableRepliesWarning` (many unreadable replies) and :class:`AnswerLineIgnoredWarning` (the
prompt asked for the ``Answer:`` line and most replies do not declare one: the grammar, not the line, reads them).
:func:`protocol_cases` says which cases' prompts asked for the line. ``deltap endtoend`` counts its own trial log the
same way (``RUN_DIR/endtoend/results.json``'s ``checker`` block), over the trials behind its figures only
(``counted``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from deltap.checkers.base import is_declared, is_unreadable

if TYPE_CHECKING:
    from deltap.cases import Case
    from deltap.solvers.base import Solver
    from deltap.trials.log import TrialLog, TrialRecord

__all__ = [
    "DECLARED_SHARE",
    "WARN_MIN",
    "WARN_SHARE",
    "AnswerLineIgnoredWarning",
    "UnreadableRepliesWarning",
    "protocol_cases",
    "readability",
    "readability_line",
    "readability_warned",
    "readability_warnings",
]

#: the share of unreadable replies (of the replies judged pass or fail) from which a run warns
WARN_SHARE = 0.2
#: ... and the fewest unreadable replies (or replies without a declared answer) that warn: a handful in a tiny run is
#: no pattern
WARN_MIN = 5
#: the share of declared answers (of the replies judged in the cases whose prompt asked for the ``Answer:`` line)
#: below which a run warns that the model is not following the line
DECLARED_SHARE = 0.5

_LOOK = "look at the replies (deltap export)"


class UnreadableRepliesWarning(UserWarning):
    """Many replies of a run had no answer the checker could locate: the checker, not the documents, is then deciding
    the labels (see :func:`readability`)."""


class AnswerLineIgnoredWarning(UserWarning):
    """The prompt asked for the final ``Answer:`` line, but fewer than half the judged replies declared an answer: the
    model is not following the line and the answer grammar, not the line, reads most replies (see
    :func:`readability`)."""


def protocol_cases(solver: Solver, cases: Sequence[Case]) -> set[str]:
    """The cases whose prompt asks for the answer protocol's ``Answer:`` line: ``solver.template.protocol(type)``
    (:class:`~deltap.solvers.prompts.PromptTemplate`); none for a solver without a template. The ``asked`` of
    :func:`readability` (``deltap mine`` and ``deltap endtoend``)."""
    protocol = getattr(getattr(solver, "template", None), "protocol", None)
    if not callable(protocol):
        return set()
    return {c.case_id for c in cases if protocol(c.benchmark_type)}


def readability(
    log: TrialLog,
    case_ids: Sequence[str],
    asked: Collection[str] = (),
    counted: Callable[[TrialRecord], bool] | None = None,
) -> dict[str, Any]:
    """How the checker read the run's replies.

    Args:
        log: The run's trial log.
        case_ids: The run's cases.
        asked: The cases whose prompt asked for the answer protocol's ``Answer:`` line
            (:func:`protocol_cases`).
        counted: Only the judged trials it accepts count (default: every one of the log; ``deltap endtoend``: the
            trials behind its figures, not those of systems or repeats an earlier session asked). A ``cached:``
            trial still counts as the reply it repeats when that reply is not counted itself.

    Returns:
        ``{"replies": n, "unreadable": k, "share": k / n, "warning": bool, "by_case": {case_id: k}, "declared": d,
        "declared_share": d / n, "protocol_asked": bool, "protocol_replies": m, "protocol_declared": e,
        "protocol_warning": bool}`` over the trials judged ``pass`` or ``fail`` (``by_case`` lists the cases with at
        least one unreadable reply; ``protocol_*`` count the replies of the ``asked`` cases).
    """
    replies = unread = decl = asked_replies = asked_decl = 0
    by_case: dict[str, int] = {}
    for case_id in case_ids:
        records = [r for r in log.trials(case_id) if r.outcome in ("pass", "fail")]
        judged = {r.prompt_hash: r.detail for r in records if r.prompt_hash and not r.detail.startswith("cached:")}
        if counted is not None:
            records = [r for r in records if counted(r)]
        n = d = 0
        for r in records:
            detail = judged.get(r.prompt_hash or "", "") if r.detail.startswith("cached:") else r.detail
            n += is_unreadable(detail)
            d += is_declared(detail)
        replies += len(records)
        unread += n
        decl += d
        if case_id in asked:
            asked_replies += len(records)
            asked_decl += d
        if n:
            by_case[case_id] = n
    share = unread / replies if replies else 0.0
    undeclared = asked_replies - asked_decl
    return {
        "replies": replies,
        "unreadable": unread,
        "share": round(share, 4),
        "warning": share >= WARN_SHARE and unread >= WARN_MIN,
        "by_case": by_case,
        "declared": decl,
        "declared_share": round(decl / replies, 4) if replies else 0.0,
        "protocol_asked": bool(asked),
        "protocol_replies": asked_replies,
        "protocol_declared": asked_decl,
        "protocol_warning": bool(asked_replies)
        and asked_decl < DECLARED_SHARE * asked_replies
        and undeclared >= WARN_MIN,
    }


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "0.0%"


def readability_line(block: dict[str, Any]) -> str | None:
    """The block as one line, with what a warning means; ``None`` when no reply was judged.

    ``answers read from the declared 'Answer:' line: 412 of 430 (95.8%); by the answer grammar: 15; unreadable: 3
    (0.7%)`` when the prompt asked for the line or some reply declared an answer; else (and for a run.json written
    before the declared count) ``replies the checker could not read: 12 of 91 (13.2%)``.
    """
    if not block or not block.get("replies"):
        return None
    n, unread = int(block["replies"]), int(block.get("unreadable") or 0)
    asked, decl = bool(block.get("protocol_asked")), block.get("declared")
    if decl is not None and (asked or decl):
        line = (
            f"answers read from {'the' if asked else 'a'} declared 'Answer:' line{'' if asked else ' (not asked for)'}: "
            f"{decl} of {n} ({_pct(int(decl), n)}); by the answer grammar: {n - int(decl) - unread}; "
            f"unreadable: {unread} ({_pct(unread, n)})"
        )
    else:
        line = f"replies the checker could not read: {unread} of {n} ({100 * float(block.get('share') or 0):.1f}%)"
    for _, tail in _warning_tails(block):
        line += f" — {tail}"
    return line


def _warning_tails(block: dict[str, Any]) -> list[tuple[type[UserWarning], str]]:
    """What each warning of the block says to do."""
    out: list[tuple[type[UserWarning], str]] = []
    if block.get("protocol_warning"):
        m, e = int(block.get("protocol_replies") or 0), int(block.get("protocol_declared") or 0)
        out.append(
            (
                AnswerLineIgnoredWarning,
                f"the prompt asked for the 'Answer:' line but {f'only {e}' if e else 'none'} of {m} replies declared "
                "an answer: the model "
                f"is not following the line and the answer grammar reads most replies; {_LOOK}, or turn the line off "
                "(--solver-option answer_protocol=off) when the model cannot follow it",
            )
        )
    if block.get("warning"):
        ask = (
            ""
            if block.get("protocol_asked")
            else ", or ask for the answer protocol line (--solver-option answer_protocol=on)"
        )
        out.append(
            (
                UnreadableRepliesWarning,
                f"the checker, not the documents, decides many outcomes: {_LOOK} and the checker's answer grammar{ask}",
            )
        )
    return out


def readability_warnings(block: dict[str, Any]) -> list[tuple[type[UserWarning], str]]:
    """The warnings a finished run gives about how its replies were read: ``(category, message)`` pairs, each message
    the block's counts and what the warning means."""
    if not block or not block.get("replies"):
        return []
    head = str(readability_line({**block, "warning": False, "protocol_warning": False}))
    return [(category, f"{head} — {tail}") for category, tail in _warning_tails(block)]


def readability_warned(block: dict[str, Any]) -> bool:
    """Whether the block carries a warning (either), for the yellow style of the summary and the reports' class."""
    return bool(block.get("warning") or block.get("protocol_warning"))
