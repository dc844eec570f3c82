"""Judgements: qrels from any source, with whatever side information the source records.

* :func:`load_qrels` reads qrels from every supported format, picking the reader from what the path looks like
  (:func:`detect_qrels_format`): a BEIR folder or TSV, a TREC qrels file, a qrels JSONL file, a deltap verified
  dataset YAML, or a pandas DataFrame.
* :func:`load_judgements` reads the same sources into a :class:`Judgements`: the qrels plus, where the file has them,
  query texts, winning coalitions and documents labelled harmful —

  * BEIR folder: qrels ``qrels/<split>.tsv``, queries ``queries.jsonl``;
  * qrels JSONL: ``relevant_docs``, ``query``, and optional ``coalitions`` (every winning coalition: a list of lists
    of doc ids) or ``coalition`` (a list of doc ids, or a list of such lists) per record;
  * deltap verified dataset YAML: queries from ``pairs[].query``, coalitions from ``pairs[].coalitions`` (else
    ``pairs[].coalition``), harmful documents from candidates whose ``empirical_relevance`` or ``verdict`` is harmful,
    and the signed gains of every decided document and coalition (:class:`SignedGains`, for ``signed_utility@K``:
    TREC and BEIR qrels cannot carry negative grades);
  * BEIR TSV / TREC qrels files: qrels only.

:class:`Judgements` is the one container of qrels with their queries (a BEIR folder in memory is a corpus plus
judgements: :class:`deltap.loaders.BeirDataset`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deltap.errors import FormatError
from deltap.outcomes import outcome_kind
from deltap.qrels import Qrels, read_beir_qrels, read_qrels_jsonl, read_trec_qrels

__all__ = [
    "LABELS",
    "Judgements",
    "SignedGains",
    "QrelsFormat",
    "detect_qrels_format",
    "load_judgements",
    "load_qrels",
]

QrelsFormat = Literal["beir", "trec", "jsonl", "dataset"]
#: which labels of a deltap verified dataset :func:`load_judgements` reads: the verdicts (grades of proven effects),
#: or the graded labels (the shrunken utility of every candidate, issue 35) under the gold or the no-gold prior
LABELS = ("verdict", "graded", "graded_no_gold")


def detect_qrels_format(path: str | Path) -> QrelsFormat:
    """Guess a qrels file's format from its name and first non-empty line."""
    path = Path(path)
    if path.is_dir():
        return "beir"
    name = path.name.lower()
    if name.endswith((".yaml", ".yml")):
        return "dataset"
    if name.endswith(".jsonl") or name.endswith(".json"):
        return "jsonl"
    with path.open("rb") as fh:  # bytes: a bad byte is the reader's error to report, with its line
        for raw in fh:
            if raw.strip():
                if b"\t" in raw and len(raw.rstrip(b"\r\n").split(b"\t")) == 3:
                    return "beir"
                return "trec"
    return "trec"


def load_qrels(path: str | Path | Any, fmt: QrelsFormat | None = None, split: str = "test") -> Qrels:
    """Load qrels from any supported format.

    Args:
        path: A BEIR TSV, a BEIR folder (reads ``qrels/<split>.tsv``), a TREC qrels file, a qrels JSONL file, a
            deltap verified dataset YAML, or a pandas DataFrame with columns ``query_id``, ``doc_id``, ``relevance``
            (see :mod:`deltap.frames`).
        fmt: Force a format instead of guessing.
        split: BEIR split when ``path`` is a folder.
    """
    from deltap.frames import is_dataframe, qrels_from_dataframe

    if is_dataframe(path):
        return qrels_from_dataframe(path)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"qrels file not found: {path}")
    fmt = fmt or detect_qrels_format(path)
    if fmt == "beir":
        if path.is_dir():
            path = path / "qrels" / f"{split}.tsv"
        qrels = read_beir_qrels(path)
    elif fmt == "trec":
        qrels = read_trec_qrels(path)
    elif fmt == "jsonl":
        qrels = {r.query_id: dict(r.relevant_docs) for r in read_qrels_jsonl(path)}
    elif fmt == "dataset":
        from deltap.dataset import read_dataset_qrels

        qrels = read_dataset_qrels(path)
    else:
        raise ValueError(f"unknown qrels format {fmt!r}")
    if not any(qrels.values()):
        raise FormatError(path, "no judgements in the file (an empty qrels file): every measure would be undefined")
    return qrels


@dataclass(frozen=True)
class SignedGains:
    """Signed document gains and coalition values: what ``signed_utility@K`` scores a ranking with.

    Attributes:
        docs: ``{query_id: {doc_id: gain}}``: a relevant document's measured ΔP (> 0), a harmful one's −|ΔP|;
            documents absent (irrelevant, undecided, never tried) have gain 0.
        coalitions: ``{query_id: [(members, value), ...]}``: every verified winning coalition and the lift it
            brings when all its members are in context (see :func:`deltap.dataset.dataset_signed_gains`).
        unknown: ``(query_id, doc_id)`` of decided documents whose ΔP the source does not give (counted 0).
        unit: What a gain measures: ``"probability"`` (pass outcome) or ``"nats"`` (log-probability outcome).
    """

    docs: dict[str, dict[str, float]] = field(default_factory=dict)
    coalitions: dict[str, list[tuple[frozenset[str], float]]] = field(default_factory=dict)
    unknown: tuple[tuple[str, str], ...] = ()
    unit: str = "probability"

    @classmethod
    def of(cls, value: SignedGains | Mapping[str, Mapping[str, float]]) -> SignedGains:
        """A :class:`SignedGains` as given, or one built from plain ``{query_id: {doc_id: gain}}`` (no coalitions)."""
        if isinstance(value, SignedGains):
            return value
        return cls({str(q): {str(d): float(g) for d, g in row.items()} for q, row in value.items()})


@dataclass
class Judgements:
    """Qrels and whatever else the source file records about its queries.

    ``gains`` holds signed gains when the source can carry them (a deltap verified dataset), else ``None``.
    """

    qrels: Qrels
    queries: dict[str, str] = field(default_factory=dict)
    coalitions: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    harmful: dict[str, set[str]] = field(default_factory=dict)
    source: str = ""
    gains: SignedGains | None = None

    @property
    def n_judgements(self) -> int:
        """Judged (query, document) pairs, any grade."""
        return sum(len(v) for v in self.qrels.values())

    @property
    def judged_docs(self) -> set[str]:
        """Every document id the qrels judge (any grade)."""
        return {d for docs in self.qrels.values() for d in docs}


def _coalition_list(value: Any) -> list[frozenset[str]]:
    if not value:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, str) for v in value):
        return [frozenset(value)]
    return [frozenset(str(d) for d in c) for c in value if c]


def load_judgements(path: str | Path, split: str = "test", labels: str = "verdict") -> Judgements:
    """Load qrels and side information from any supported qrels source (see the module docstring).

    ``labels`` (:data:`LABELS`) applies to a deltap verified dataset (its YAML, or a run directory): ``graded`` and
    ``graded_no_gold`` read the graded labels instead of the verdicts — qrels from their grades, signed gains from
    their shrunken utilities (every graded document counts, with its sign).

    Raises:
        DeltapError: ``labels`` unknown, or graded labels asked of a source that is not a deltap dataset or has none.
    """
    path = Path(path)
    if labels != "verdict":
        return _graded_judgements(path, labels)
    fmt = detect_qrels_format(path) if path.exists() else None
    qrels = load_qrels(path, split=split)
    out = Judgements(qrels=qrels, source=str(path))
    if fmt == "beir" and path.is_dir() and (path / "queries.jsonl").is_file():
        from deltap.cases import read_queries_jsonl

        out.queries = read_queries_jsonl(path / "queries.jsonl")
    elif fmt == "jsonl":
        for rec in read_qrels_jsonl(path):
            if rec.query:
                out.queries[rec.query_id] = rec.query
            coal = _coalition_list(rec.extra.get("coalitions") or rec.extra.get("coalition"))
            if coal:
                out.coalitions[rec.query_id] = coal
    elif fmt == "dataset":
        from deltap.dataset import dataset_signed_gains, read_dataset

        dataset = read_dataset(path)
        docs, coalition_values, unknown = dataset_signed_gains(dataset)
        unit = outcome_kind(dataset.outcome).unit
        out.gains = SignedGains(docs, coalition_values, tuple(unknown), unit)
        _case_extras(out, dataset)
    return out


def _graded_judgements(path: Path, labels: str) -> Judgements:
    """:func:`load_judgements` with ``labels`` ``graded`` / ``graded_no_gold``."""
    from deltap.dataset import dataset_graded_gains, dataset_graded_qrels, dataset_signed_gains, read_dataset
    from deltap.errors import DeltapError

    if labels not in LABELS:
        raise DeltapError(f"--labels must be one of {', '.join(LABELS)}, got {labels!r}")
    source = path / "retrieval_dataset.yaml" if path.is_dir() else path
    if not source.is_file() or detect_qrels_format(source) != "dataset":
        raise DeltapError(
            f"--labels {labels} reads a deltap verified dataset (a run directory or its retrieval_dataset.yaml), "
            f"got {path}"
        )
    dataset = read_dataset(source)
    prior = "no_gold" if labels == "graded_no_gold" else "gold"
    qrels = dataset_graded_qrels(dataset, prior)
    if not qrels:
        raise DeltapError(f"{source} has no graded labels (mined before runs were graded: relabel it, deltap relabel)")
    _, coalition_values, _ = dataset_signed_gains(dataset)
    unit = outcome_kind(dataset.outcome).unit
    out = Judgements(qrels=qrels, source=str(source))
    out.gains = SignedGains(dataset_graded_gains(dataset, prior), coalition_values, (), unit)
    _case_extras(out, dataset)
    return out


def _case_extras(out: Judgements, dataset: Any) -> None:
    """A verified dataset's questions, winning coalitions and proven distractors (harmful verdicts: graded labels do not
    prove) into ``out``."""
    for case in dataset.cases:
        if case.query:
            out.queries[case.case_id] = case.query
        coal = [frozenset(c) for c in case.winning_coalitions]  # every winning coalition
        if coal:
            out.coalitions[case.case_id] = coal
        bad = {c.doc_id for c in case.candidates if c.verdict == "harmful"}
        if bad:
            out.harmful[case.case_id] = bad
