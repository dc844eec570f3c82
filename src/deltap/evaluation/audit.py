"""The qrels audit: what mining found out about a benchmark's gold documents, and what the gold missed.

For every question of a verified dataset (``retrieval_dataset.yaml``) and in total:

* the **gold** documents (candidates whose ``source`` includes ``gold``: the benchmark's own judgements), split by
  verdict: ``relevant`` (confirmed: they measurably help), ``irrelevant`` (proven not to matter), ``harmful``
  (they measurably hurt) and ``undecided`` (not enough evidence either way);
* gold documents the benchmark names but the run could not try (``metadata.missing_gold``: not in the corpus);
* gold documents the gate left ``undecided`` whose graded label (the shrunken utility, gold prior; issue 35) says
  they **likely help** (utility > 0, local false sign rate ≤ 0.1): not proven, but the evidence leans their way;
* documents **outside the gold** found ``relevant`` — missing judgements: the benchmark's qrels score a retriever
  that returns them as wrong — and outside-gold documents found ``harmful`` (distractors), each with the pool it
  came from (``retrieved`` or ``placebo``).

:func:`audit_qrels` computes it; :class:`QrelsAudit` renders it (text, Markdown, JSON, CSV) and writes the export
(``audit.csv`` + ``audit.json``, by default under ``RUN_DIR/audit/``).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltap.dataset import VERDICTS, VerifiedDataset, read_dataset
from deltap.errors import DeltapError
from deltap.run_layout import RunDir

__all__ = ["AUDIT_COLUMNS", "AUDIT_HEADINGS", "QrelsAudit", "QuestionAudit", "audit_qrels"]

#: Columns of the audit table and CSV, in order (``query_id`` first).
AUDIT_COLUMNS = (
    "query_id",
    "gold",
    "gold_relevant",
    "gold_irrelevant",
    "gold_harmful",
    "gold_undecided",
    "gold_not_tried",
    "found_relevant_outside_gold",
    "found_harmful_outside_gold",
    "gold_undecided_likely_helps",
)
#: the same columns as a reader's table headings (the text table, the report's HTML and Markdown)
AUDIT_HEADINGS = (
    "question",
    "gold",
    "relevant",
    "irrelevant",
    "harmful",
    "undecided",
    "not tried",
    "+relevant",
    "+harmful",
    "likely helps",
)


@dataclass(frozen=True)
class QuestionAudit:
    """The audit of one question.

    Attributes:
        query_id: The question's id.
        gold: ``{doc_id: verdict}`` of every gold document the run tried.
        gold_not_tried: Gold documents named by the benchmark that the run could not try (not in the corpus).
        found_relevant: ``{doc_id: source}`` of documents outside the gold found relevant (missing judgements).
        found_harmful: ``{doc_id: source}`` of documents outside the gold found harmful (distractors).
        status: The case's mining status (``mined``, ``saturated``, ``unsolvable``...).
        gold_likely_helps: Gold documents left ``undecided`` whose graded label likely helps (utility > 0, lfsr ≤
            0.1, gold prior).
    """

    query_id: str
    gold: dict[str, str] = field(default_factory=dict)
    gold_not_tried: tuple[str, ...] = ()
    found_relevant: dict[str, str] = field(default_factory=dict)
    found_harmful: dict[str, str] = field(default_factory=dict)
    status: str = "mined"
    gold_likely_helps: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """The question's row of counts (the :data:`AUDIT_COLUMNS` after ``query_id``)."""
        out = {"gold": len(self.gold)}
        for v in VERDICTS:
            out[f"gold_{v}"] = sum(1 for x in self.gold.values() if x == v)
        out["gold_not_tried"] = len(self.gold_not_tried)
        out["found_relevant_outside_gold"] = len(self.found_relevant)
        out["found_harmful_outside_gold"] = len(self.found_harmful)
        out["gold_undecided_likely_helps"] = len(self.gold_likely_helps)
        return {c: out[c] for c in AUDIT_COLUMNS[1:]}

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "status": self.status,
            "counts": self.counts(),
            "gold": dict(self.gold),
            "gold_not_tried": list(self.gold_not_tried),
            "found_relevant_outside_gold": dict(self.found_relevant),
            "found_harmful_outside_gold": dict(self.found_harmful),
            "gold_undecided_likely_helps": list(self.gold_likely_helps),
        }


@dataclass(frozen=True)
class QrelsAudit:
    """The audit of a verified dataset: one :class:`QuestionAudit` per question and the totals."""

    questions: tuple[QuestionAudit, ...]
    source: str = ""

    @property
    def totals(self) -> dict[str, int]:
        """Every count summed over the questions."""
        out = dict.fromkeys(AUDIT_COLUMNS[1:], 0)
        for q in self.questions:
            for k, v in q.counts().items():
                out[k] += v
        return out

    @property
    def questions_with_missing_judgements(self) -> int:
        """Questions where at least one document outside the gold was found relevant."""
        return sum(1 for q in self.questions if q.found_relevant)

    def summary(self) -> str:
        """One paragraph in words: how much of the gold held up, and how much the gold missed."""
        t = self.totals
        n = len(self.questions)
        if t["gold"] == 0:
            head = f"{n} questions, no gold document tried (the cases named none, or none was in the corpus)."
        else:
            pct = 100.0 * t["gold_relevant"] / t["gold"]
            head = (
                f"Of {t['gold']} gold documents tried over {n} questions, {t['gold_relevant']} were confirmed relevant "
                f"({pct:.0f}%), {t['gold_irrelevant']} proven irrelevant, {t['gold_harmful']} found harmful and "
                f"{t['gold_undecided']} left undecided."
            )
        if t["gold_undecided_likely_helps"]:
            head += (
                f" Of the undecided ones, {t['gold_undecided_likely_helps']} likely help by their graded label "
                "(shrunken utility > 0, lfsr <= 0.1): not proven."
            )
        if t["gold_not_tried"]:
            head += f" {t['gold_not_tried']} gold documents could not be tried (not in the corpus)."
        tail = (
            f" Outside the gold, {t['found_relevant_outside_gold']} documents were found relevant in "
            f"{self.questions_with_missing_judgements} questions (judgements the benchmark's qrels miss) and "
            f"{t['found_harmful_outside_gold']} harmful."
        )
        return head + tail

    def rows(self) -> list[list[str | int]]:
        """The table: one row per question, then ``TOTAL``."""
        out: list[list[str | int]] = [[q.query_id, *q.counts().values()] for q in self.questions]
        out.append(["TOTAL", *self.totals.values()])
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: totals, the summary, and every question with its document lists."""
        return {
            "source": self.source,
            "columns": list(AUDIT_COLUMNS),
            "totals": self.totals,
            "n_questions": len(self.questions),
            "questions_with_missing_judgements": self.questions_with_missing_judgements,
            "summary": self.summary(),
            "questions": [q.to_dict() for q in self.questions],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_csv(self) -> str:
        """The table as CSV (header :data:`AUDIT_COLUMNS`, one row per question, then ``TOTAL``)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(AUDIT_COLUMNS)
        writer.writerows(self.rows())
        return buf.getvalue()

    def to_markdown(self) -> str:
        """A Markdown table with the summary above it."""
        lines = [self.summary(), "", "| " + " | ".join(AUDIT_COLUMNS) + " |", "|---" * len(AUDIT_COLUMNS) + "|"]
        for row in self.rows():
            cells = [str(c).replace("|", "\\|") for c in row]
            if row[0] == "TOTAL":
                cells = [f"**{c}**" for c in cells]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_table(self) -> str:
        """Aligned text with the summary below it."""
        from deltap.evaluation._render import to_text

        body = [[str(c) for c in row] for row in self.rows()]
        legend = (
            "+relevant / +harmful: documents outside the gold found relevant (missing judgements) / harmful; likely "
            "helps: undecided gold documents whose graded label likely helps."
        )
        return f"{to_text(list(AUDIT_HEADINGS), body)}\n{legend}\n{self.summary()}"

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """Write ``audit.csv`` and ``audit.json`` under ``out_dir``; returns their paths."""
        from deltap._io import write_text_atomic
        from deltap.run_layout import AuditDir

        out = AuditDir(Path(out_dir))
        return {
            "csv": write_text_atomic(out.csv, self.to_csv()),
            "json": write_text_atomic(out.json, self.to_json() + "\n"),
        }


def _dataset_of(source: VerifiedDataset | str | Path) -> tuple[VerifiedDataset, str]:
    if isinstance(source, VerifiedDataset):
        return source, ""
    path = Path(source)
    if path.is_dir():
        path = RunDir(path).dataset
        if not path.is_file():
            raise DeltapError(f"{source} has no {path.name}; is it the output folder of `deltap mine`?")
    elif not path.is_file():
        raise DeltapError(f"not found: {source} (give a run folder or its retrieval_dataset.yaml)")
    return read_dataset(path), str(path)


def audit_qrels(source: VerifiedDataset | str | Path) -> QrelsAudit:
    """Audit the benchmark's gold judgements against what mining measured (see the module docstring).

    Args:
        source: A :class:`~deltap.dataset.VerifiedDataset`, a ``retrieval_dataset.yaml``, or a run folder.

    Raises:
        DeltapError: the file or folder does not exist; FormatError: the file is not a verified dataset.
    """
    dataset, where = _dataset_of(source)
    questions: list[QuestionAudit] = []
    for case in dataset.cases:
        gold: dict[str, str] = {}
        rel: dict[str, str] = {}
        harm: dict[str, str] = {}
        likely: list[str] = []
        for c in case.candidates:
            if c.is_gold:
                gold[c.doc_id] = c.verdict
                if c.verdict == "undecided" and c.graded_call == "likely helps":
                    likely.append(c.doc_id)
            elif c.verdict == "relevant":
                rel[c.doc_id] = "/".join(c.sources) or "unknown"
            elif c.verdict == "harmful":
                harm[c.doc_id] = "/".join(c.sources) or "unknown"
        missing = tuple(str(d) for d in case.metadata.get("missing_gold") or () if str(d) not in gold)
        questions.append(QuestionAudit(case.case_id, gold, missing, rel, harm, case.status, tuple(likely)))
    return QrelsAudit(tuple(questions), where)
