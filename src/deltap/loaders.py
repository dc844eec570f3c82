"""The public loading entry points: pick the right reader from what a path looks like.

* :func:`load_corpus`: a BEIR folder, a ``corpus.jsonl``, or an API-symbol YAML.
* :func:`load_cases`: a benchmark YAML, a BEIR folder (queries + qrels), a qrels JSONL with reference answers, or a
  question-answer JSONL / YAML file.
* :func:`load_beir`: a whole BEIR folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from deltap.cases import (
    Case,
    CheckerSpec,
    answers_of,
    qa_checker,
    read_benchmark_yaml,
    read_qa_jsonl,
    read_qa_yaml,
    read_queries_answers,
    read_queries_jsonl,
    resolve_gold,
)
from deltap.documents import Corpus, read_corpus_jsonl
from deltap.errors import DeltapError, MissingIdsError
from deltap.judgements import Judgements
from deltap.qrels import Qrels, read_beir_qrels

__all__ = ["BeirDataset", "load_beir", "load_cases", "load_corpus"]


@dataclass
class BeirDataset:
    """A BEIR folder in memory: the corpus and the judgements of one split (qrels with their query texts)."""

    corpus: Corpus
    judgements: Judgements
    split: str

    @property
    def queries(self) -> dict[str, str]:
        """``{query_id: text}`` of every query in ``queries.jsonl``."""
        return self.judgements.queries

    @property
    def qrels(self) -> Qrels:
        """The split's qrels."""
        return self.judgements.qrels

    @property
    def n_judgements(self) -> int:
        return self.judgements.n_judgements


def load_beir(folder: str | Path, split: str = "test", on_missing: Literal["error", "skip"] = "error") -> BeirDataset:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

    Args:
        folder: The dataset folder.
        split: Which qrels file to read.
        on_missing: What to do with qrels that name queries or documents the folder does not have: ``error`` (one
            error listing them, the default) or ``skip`` (drop them; the caller sees the counts via
            ``dataset.qrels`` sizes). Never silent.

    Raises:
        FileNotFoundError: a required file is absent.
        MissingIdsError: qrels reference unknown ids (``on_missing="error"``).
    """
    folder = Path(folder)
    for rel in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / rel).is_file():
            raise FileNotFoundError(f"BEIR folder {folder} has no {rel}")
    corpus = read_corpus_jsonl(folder / "corpus.jsonl", name=str(folder / "corpus.jsonl"))
    queries = read_queries_jsonl(folder / "queries.jsonl")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    qrels = read_beir_qrels(qrels_path)
    bad_q = sorted(q for q in qrels if q not in queries)
    bad_d = sorted({d for docs in qrels.values() for d in docs if d not in corpus})
    if (bad_q or bad_d) and on_missing == "error":
        if bad_q:
            raise MissingIdsError(
                "query ids in qrels", bad_q, str(folder / "queries.jsonl"), "pass on_missing='skip' to drop them"
            )
        raise MissingIdsError(
            "document ids in qrels", bad_d, str(folder / "corpus.jsonl"), "pass on_missing='skip' to drop them"
        )
    if bad_q or bad_d:
        bad_set = set(bad_d)
        qrels = {q: {d: g for d, g in docs.items() if d not in bad_set} for q, docs in qrels.items() if q in queries}
    return BeirDataset(corpus, Judgements(qrels, queries, source=str(qrels_path)), split)


def _looks_like_api_yaml(path: Path) -> bool:
    with path.open("rb") as fh:  # bytes: a line that is not UTF-8 is the reader's error to report, with its line
        for raw in fh:
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            return line.startswith(b"- ")  # a top-level list of symbols; benchmark files start with 'benchmarks:'
    return False


def load_corpus(path: str | Path) -> Corpus:
    """Load a corpus from a BEIR folder, a ``corpus.jsonl``, or an API-symbol YAML (one document per symbol).

    Raises:
        FileNotFoundError: the path does not exist.
        DeltapError: the path is none of the supported kinds.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus not found: {path}")
    if path.is_dir():
        if (path / "corpus.jsonl").is_file():
            return read_corpus_jsonl(path / "corpus.jsonl", name=str(path / "corpus.jsonl"))
        raise DeltapError(f"{path} is a folder without corpus.jsonl; build one with `deltap corpus`")
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".json"}:
        return read_corpus_jsonl(path)
    if suffix in {".yaml", ".yml"} and _looks_like_api_yaml(path):
        from deltap.corpora.api_symbols import read_api_symbols

        return read_api_symbols(path)
    raise DeltapError(
        f"cannot tell what kind of corpus {path} is; expected a BEIR folder, corpus.jsonl or API-symbol YAML"
    )


def _beir_cases(path: Path, split: str, on_missing: Literal["error", "skip"]) -> list[Case]:
    data = load_beir(path, split=split, on_missing=on_missing)
    answers = read_queries_answers(path / "queries.jsonl")
    return [
        Case(
            case_id=qid,
            query=text,
            gold_doc_ids=tuple(d for d, g in data.qrels.get(qid, {}).items() if g > 0),
            checker=qa_checker(answers[qid]) if qid in answers else CheckerSpec("none"),
            reference_answer=answers[qid][0] if qid in answers else None,
            benchmark_type="qa" if qid in answers else "beir",
            metadata={"grades": dict(data.qrels.get(qid, {}))},
        )
        for qid, text in data.queries.items()
    ]


def _qrels_jsonl_cases(path: Path) -> list[Case]:
    """Cases from a qrels JSONL (seed 004's shape): ``query`` is the question, ``relevant_docs`` with grade > 0 the
    gold, ``reference_answer`` (or ``answers``...) the accepted answers; a record without any answer gets no checker."""
    from deltap._io import iter_jsonl
    from deltap.errors import FormatError
    from deltap.qrels import read_qrels_jsonl

    cases = []
    for rec, (lineno, obj) in zip(read_qrels_jsonl(path), iter_jsonl(path, "one qrels record per line"), strict=True):
        if not rec.query.strip():
            raise FormatError(path, f"record {rec.query_id!r} has no 'query' text: a case needs its question", lineno)
        answers = answers_of(obj, path, lineno, rec.query_id)
        extra = {k: v for k, v in rec.extra.items() if k not in ("answers", "answer", "metadata")}
        cases.append(
            Case(
                case_id=rec.query_id,
                query=rec.query,
                gold_doc_ids=tuple(d for d, g in rec.relevant_docs.items() if g > 0),
                checker=qa_checker(answers) if answers else CheckerSpec("none"),
                reference_answer=answers[0] if answers else None,
                benchmark_type="qa" if answers else "beir",
                metadata={**extra, "grades": dict(rec.relevant_docs)},
            )
        )
    if not cases:
        raise FormatError(path, "no record in the file")
    return cases


def _first_json_record(path: Path) -> dict[str, object] | None:
    from deltap._io import iter_jsonl

    for _, obj in iter_jsonl(path, "one record per line"):
        return obj
    return None


def _yaml_is_benchmark(path: Path) -> bool:
    with path.open("rb") as fh:  # bytes: a line that is not UTF-8 is the reader's error to report, with its line
        for raw in fh:
            line = raw.strip()
            if line and not line.startswith(b"#") and not line.startswith(b"---"):
                return not (line.startswith(b"- ") or line.startswith(b"questions:"))
    return True


def load_cases(
    path: str | Path,
    corpus: Corpus | None = None,
    on_missing: Literal["error", "skip"] = "error",
    split: str = "test",
) -> list[Case]:
    """Load cases from a benchmark YAML, a BEIR folder, a qrels JSONL, or a question-answer JSONL / YAML file.

    The shape is told from the path: a folder is BEIR (queries whose records carry ``answers`` /
    ``reference_answer`` / ``metadata.answer`` get a ``string_match`` checker, others none); a ``.jsonl`` / ``.json``
    file whose first record has ``query_id`` and ``relevant_docs`` but no ``question`` is a qrels JSONL (seed 004:
    ``query`` is the question, ``reference_answer`` the answer),
    any other one a question-answer file (:func:`deltap.cases.read_qa_jsonl`); a YAML starting with ``benchmarks:``
    is a benchmark file, one that is a list (or has ``questions:``) a question-answer file
    (:func:`deltap.cases.read_qa_yaml`).

    Args:
        path: The cases file or BEIR folder.
        corpus: When given, gold ids are resolved against it (aliases followed) and unknown ids handled per
            ``on_missing``.
        on_missing: ``error`` (default: one error listing every unknown id) or ``skip`` (drop them; the dropped ids
            are recorded in each case's ``metadata["gold_missing"]``).
        split: BEIR qrels split.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"cases not found: {path}")
    if path.is_dir():
        cases = _beir_cases(path, split, on_missing)
        corpus = None  # already checked against the folder's own corpus
    elif path.suffix.lower() in {".jsonl", ".json"}:
        first = _first_json_record(path)
        seed_qrels = first is not None and "relevant_docs" in first and "query_id" in first and "question" not in first
        cases = _qrels_jsonl_cases(path) if seed_qrels else read_qa_jsonl(path)
    elif path.suffix.lower() in {".yaml", ".yml"} and not _yaml_is_benchmark(path):
        cases = read_qa_yaml(path)
    else:
        cases = read_benchmark_yaml(path)
    if corpus is not None:
        cases, missing = resolve_gold(cases, corpus, on_missing=on_missing)
        if missing:
            from dataclasses import replace

            cases = [replace(c, metadata={**c.metadata, "gold_missing": missing.get(c.case_id, [])}) for c in cases]
    return cases
