"""The public loading entry points: pick the right reader from what a path looks like.

* :func:`load_corpus`: a BEIR folder, a ``corpus.jsonl``, or an API-symbol YAML.
* :func:`load_cases`: a benchmark YAML, or a BEIR folder (queries + qrels).
* :func:`load_beir`: a whole BEIR folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from deltap.cases import Case, CheckerSpec, read_benchmark_yaml, read_queries_jsonl, resolve_gold
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
            raise MissingIdsError("query ids in qrels", bad_q, str(folder / "queries.jsonl"), "pass on_missing='skip' to drop them")
        raise MissingIdsError("document ids in qrels", bad_d, str(folder / "corpus.jsonl"), "pass on_missing='skip' to drop them")
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
    raise DeltapError(f"cannot tell what kind of corpus {path} is; expected a BEIR folder, corpus.jsonl or API-symbol YAML")


def load_cases(
    path: str | Path,
    corpus: Corpus | None = None,
    on_missing: Literal["error", "skip"] = "error",
    split: str = "test",
) -> list[Case]:
    """Load cases from a benchmark YAML or a BEIR folder.

    Args:
        path: Benchmark YAML, or BEIR folder (each query with its graded-positive documents as gold).
        corpus: When given, gold ids are resolved against it (aliases followed) and unknown ids handled per
            ``on_missing``.
        on_missing: ``error`` (default: one error listing every unknown id) or ``skip`` (drop them; the dropped ids
            are recorded in each case's ``metadata["gold_missing"]``).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"cases not found: {path}")
    if path.is_dir():
        data = load_beir(path, split=split, on_missing=on_missing)
        cases = [
            Case(
                case_id=qid,
                query=text,
                gold_doc_ids=tuple(d for d, g in data.qrels.get(qid, {}).items() if g > 0),
                checker=CheckerSpec("none"),
                benchmark_type="beir",
                metadata={"grades": dict(data.qrels.get(qid, {}))},
            )
            for qid, text in data.queries.items()
        ]
        corpus = None  # already checked against the folder's own corpus
    else:
        cases = read_benchmark_yaml(path)
    if corpus is not None:
        cases, missing = resolve_gold(cases, corpus, on_missing=on_missing)
        if missing:
            from dataclasses import replace

            cases = [replace(c, metadata={**c.metadata, "gold_missing": missing.get(c.case_id, [])}) for c in cases]
    return cases
