"""Documents and corpora, and the BEIR ``corpus.jsonl`` format.

A :class:`Document` is what a solver may see in its context and what a retriever returns. A :class:`Corpus` is an
ordered collection of documents with unique ids and O(1) lookup by id.

``corpus.jsonl`` (BEIR): one JSON object per line with ``_id``, ``title``, ``text`` and an optional ``metadata``
object. Empty lines are skipped; anything else that is not such an object is a :class:`~deltap.errors.FormatError`
naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from deltap._io import atomic_write, iter_jsonl, record_id
from deltap.errors import DuplicateIdsError, FormatError, MissingIdsError

__all__ = ["Corpus", "Document", "read_corpus_jsonl", "write_corpus_jsonl"]


def _freeze(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(metadata or {}))


@dataclass(frozen=True)
class Document:
    """One retrievable unit: an API symbol, a chunk of a page, an abstract.

    Args:
        doc_id: Unique id within its corpus (``_id`` in BEIR).
        text: The body shown to a solver and indexed by retrievers.
        title: Optional title; retrievers index ``title + text``.
        metadata: Free-form, JSON-serialisable payload (section, url, aliases, ...). Stored read-only.
    """

    doc_id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.doc_id, str) or not self.doc_id:
            raise ValueError(f"Document.doc_id must be a non-empty string, got {self.doc_id!r}")
        object.__setattr__(self, "metadata", _freeze(self.metadata))

    @property
    def full_text(self) -> str:
        """``title`` and ``text`` joined, the string retrievers index."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    def to_beir(self) -> dict[str, Any]:
        """The BEIR ``corpus.jsonl`` record of this document."""
        record: dict[str, Any] = {"_id": self.doc_id, "title": self.title, "text": self.text}
        if self.metadata:
            record["metadata"] = dict(self.metadata)
        return record


class Corpus:
    """An ordered, immutable collection of documents with unique ids.

    Raises:
        DuplicateIdsError: when two documents share an id.
    """

    def __init__(self, documents: Iterable[Document], name: str = "corpus", notes: Iterable[str] = ()) -> None:
        docs = list(documents)
        index: dict[str, int] = {}
        dupes: list[str] = []
        for i, doc in enumerate(docs):
            if doc.doc_id in index:
                dupes.append(doc.doc_id)
            else:
                index[doc.doc_id] = i
        if dupes:
            raise DuplicateIdsError("document ids", dupes, name)
        self._docs: tuple[Document, ...] = tuple(docs)
        self._index = index
        self.name = name
        #: Things the builder had to do to the input that the user should see (e.g. renamed duplicate ids).
        self.notes: tuple[str, ...] = tuple(notes)

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[Document]:
        return iter(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._index

    def __getitem__(self, doc_id: str) -> Document:
        try:
            return self._docs[self._index[doc_id]]
        except KeyError:
            raise KeyError(f"document {doc_id!r} is not in {self.name}") from None

    def __repr__(self) -> str:
        return f"Corpus(name={self.name!r}, documents={len(self)})"

    def get(self, doc_id: str) -> Document | None:
        """The document with this id, or ``None``."""
        i = self._index.get(doc_id)
        return None if i is None else self._docs[i]

    @property
    def ids(self) -> list[str]:
        """Document ids in corpus order."""
        return [d.doc_id for d in self._docs]

    def position(self, doc_id: str) -> int:
        """0-based position of a document in corpus order (used as a deterministic tie-breaker)."""
        return self._index[doc_id]

    def missing(self, doc_ids: Iterable[str]) -> list[str]:
        """Ids from ``doc_ids`` that are not in this corpus, sorted and unique."""
        return sorted({d for d in doc_ids if d not in self._index})

    def require(self, doc_ids: Iterable[str], what: str = "document ids", hint: str = "") -> None:
        """Raise :class:`MissingIdsError` listing every id not in this corpus."""
        missing = self.missing(doc_ids)
        if missing:
            raise MissingIdsError(what, missing, self.name, hint)


def read_corpus_jsonl(path: str | Path, name: str | None = None) -> Corpus:
    """Read a BEIR ``corpus.jsonl``.

    Args:
        path: The file.
        name: Name used in messages; defaults to the path.

    Raises:
        FormatError: a line is not a JSON object with a string ``_id`` and string ``text``.
        DuplicateIdsError: an id appears twice.
    """
    path = Path(path)
    docs: list[Document] = []
    for lineno, obj in iter_jsonl(path, "one corpus record per line"):
        doc_id = record_id(obj, ("_id", "doc_id"), path, lineno)
        text = obj.get("text", "")
        title = obj.get("title", "") or ""
        metadata = obj.get("metadata")
        metadata = {} if metadata is None else metadata
        if not isinstance(text, str) or not isinstance(title, str):
            raise FormatError(path, '"text" and "title" must be strings', lineno)
        if not isinstance(metadata, dict):
            raise FormatError(path, '"metadata" must be a JSON object', lineno)
        docs.append(Document(doc_id=doc_id, text=text, title=title, metadata=metadata))
    return Corpus(docs, name=name or str(path))


def write_corpus_jsonl(corpus: Iterable[Document], path: str | Path) -> Path:
    """Write documents as BEIR ``corpus.jsonl`` (UTF-8, one record per line), atomically."""
    path = Path(path)
    with atomic_write(path) as fh:
        for doc in corpus:
            fh.write(json.dumps(doc.to_beir(), ensure_ascii=False) + "\n")
    return path
