"""Judgements with their side information: qrels plus, where the file has them, query texts, winning coalitions
and documents labelled harmful.

* BEIR folder: qrels ``qrels/<split>.tsv``, queries ``queries.jsonl``.
* qrels JSONL: ``relevant_docs``, ``query``, and optional ``coalitions`` (every winning coalition: a list of lists
  of doc ids) or ``coalition`` (a list of doc ids, or a list of such lists) per record.
* deltap verified dataset YAML: qrels via :func:`deltap.qrels.load_qrels` (the dataset module), queries from
  ``pairs[].query``, coalitions from ``pairs[].coalitions`` (else ``pairs[].coalition``), harmful documents from candidates whose
  ``empirical_relevance`` or ``verdict`` is harmful.
* BEIR TSV / TREC qrels files: qrels only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltap.qrels import Qrels, detect_qrels_format, load_qrels

__all__ = ["Judgements", "load_judgements"]


@dataclass
class Judgements:
    """Qrels and whatever else the source file records about its queries."""

    qrels: Qrels
    queries: dict[str, str] = field(default_factory=dict)
    coalitions: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    harmful: dict[str, set[str]] = field(default_factory=dict)
    source: str = ""


def _coalition_list(value: Any) -> list[frozenset[str]]:
    if not value:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, str) for v in value):
        return [frozenset(value)]
    return [frozenset(str(d) for d in c) for c in value if c]


def load_judgements(path: str | Path, split: str = "test") -> Judgements:
    """Load qrels and side information from any supported qrels source (see the module docstring)."""
    path = Path(path)
    fmt = detect_qrels_format(path) if path.exists() else None
    qrels = load_qrels(path, split=split)
    out = Judgements(qrels=qrels, source=str(path))
    if fmt == "beir" and path.is_dir() and (path / "queries.jsonl").is_file():
        from deltap.cases import read_queries_jsonl

        out.queries = read_queries_jsonl(path / "queries.jsonl")
    elif fmt == "jsonl":
        from deltap.qrels import read_qrels_jsonl

        for rec in read_qrels_jsonl(path):
            if rec.query:
                out.queries[rec.query_id] = rec.query
            coal = _coalition_list(rec.extra.get("coalitions") or rec.extra.get("coalition"))
            if coal:
                out.coalitions[rec.query_id] = coal
    elif fmt == "dataset":
        from deltap.dataset import read_dataset

        for pair in read_dataset(path).pairs:
            pid = str(pair.get("id"))
            if pair.get("query"):
                out.queries[pid] = str(pair["query"])
            coal = _coalition_list(pair.get("coalitions") or pair.get("coalition"))  # every winning coalition
            if coal:
                out.coalitions[pid] = coal
            bad = {
                str(c.get("doc_id") or c.get("fqn"))
                for c in pair.get("candidates", [])
                if str(c.get("empirical_relevance") or "").upper() == "HARMFUL" or str(c.get("verdict") or "").lower() == "harmful"
            }
            if bad:
                out.harmful[pid] = bad
    return out
