"""The questions the validity table is computed over: the scoring rule of ``deltap evaluate`` / ``compare``.

A question the qrels do not judge at all (a mined question whose every candidate stayed undecided, or a benchmark
question without gold documents) is left out of the metrics, as ``deltap evaluate`` leaves out a query absent from
the qrels (:data:`deltap.evaluation.ranking.EMPTY_QUERY_RULE`); a judged question without a relevant document scores 0.
The validity table compares several qrels, so it uses the questions *every* one of them judges: gold and mined qrels
are then read on the same questions, and the success per system (the end-to-end table) stays over every question.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from deltap.endtoend.results import EndToEndResult

__all__ = ["judged_by_all", "note_left_out"]


def judged_by_all(
    result: EndToEndResult, judgements: Mapping[str, Mapping[str, Mapping[str, int]]]
) -> tuple[EndToEndResult, list[str]]:
    """``result`` with its complete cases cut to those every qrels of ``judgements`` judges, and the ids left out (a
    qrels that judges no question at all, such as gold qrels of questions without gold ids, cuts nothing)."""
    active = [q for q in judgements.values() if q]
    keep = [i for i in result.complete if all(result.case_ids[i] in q for q in active)]
    left_out = [result.case_ids[i] for i in result.complete if i not in set(keep)]
    return replace(result, complete=keep), left_out


def note_left_out(validity: dict[str, object], left_out: list[str], judgements: Mapping[str, object]) -> None:
    """Record in ``validity`` (``questions_left_out`` and a note) the questions the table does not use, and why."""
    validity["questions_left_out"] = list(left_out)
    if left_out:
        shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
        notes = validity.setdefault("notes", [])
        if isinstance(notes, list):
            notes.append(
                f"{len(left_out)} question(s) left out of the validity table: not judged by every qrels "
                f"({', '.join(judgements)}; a mined question whose candidates are all undecided has no judgement): "
                f"{shown}"
            )
