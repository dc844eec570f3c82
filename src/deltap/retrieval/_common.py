"""Helpers shared by every retriever: deterministic ranking, metadata filters, query validation.

Ranking rule (see :mod:`deltap.retrieval.base`): descending score, ties by the document's position in the corpus the
retriever was built from (ascending). :func:`rank` is the one place that rule is implemented.

Filters are exact matches on metadata fields, with Qdrant's semantics so that in-memory retrievers (BM25, random)
and Qdrant stores select the same documents:

* ``{"field": value}`` with ``value`` a ``str``, ``int`` or ``bool``: the document's value equals ``value``, or the
  document's value is a list that contains ``value``.
* ``{"field": [v1, v2]}``: the document's value (or one element of it, when it is a list) is one of the values.
* Several fields: all must match. ``doc_id`` is always a valid field.
* A field no document has is an error (a typo would otherwise silently return nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from deltap.documents import Corpus
from deltap.errors import DeltapError
from deltap.retrieval.base import Hit, validate_query

__all__ = [
    "FilterValue",
    "check_filter",
    "matches_filter",
    "metadata_fields",
    "rank",
    "validate_queries",
]

FilterValue = str | int | bool | Sequence[str | int]


def validate_queries(queries: Sequence[str], k: int) -> None:
    """:func:`~deltap.retrieval.base.validate_query` for every query of a batch (the error names the bad one)."""
    if isinstance(queries, str):
        raise DeltapError("search_batch expects a list of queries, got a single string; use search() instead")
    validate_query("k check", k)  # a bad k is one error, not one per query
    for i, query in enumerate(queries):
        try:
            validate_query(query, k)
        except DeltapError as exc:
            raise DeltapError(f"query #{i + 1} of the batch: {exc}") from None


def rank(candidates: Iterable[tuple[str, float, int, Mapping[str, Any]]], k: int) -> list[Hit]:
    """Sort ``(doc_id, score, position, metadata)`` candidates by the house rule and keep the top ``k``.

    Args:
        candidates: Scored documents; ``position`` is the document's 0-based corpus position (the tie-breaker).
        k: How many hits to return.

    Returns:
        Hits with 1-based ranks, best first.
    """
    ordered = sorted(candidates, key=lambda c: (-c[1], c[2]))[:k]
    return [Hit(doc_id=d, score=float(s), rank=i, metadata=m) for i, (d, s, _, m) in enumerate(ordered, start=1)]


def metadata_fields(corpus: Corpus) -> list[str]:
    """Sorted union of the metadata keys of every document (the fields a filter may name, besides ``doc_id``)."""
    fields: set[str] = set()
    for doc in corpus:
        fields.update(doc.metadata)
    return sorted(fields)


def _check_value(field: str, value: Any) -> None:
    def scalar_ok(v: Any) -> bool:
        return isinstance(v, str | int)  # bool is an int subclass

    if scalar_ok(value):
        return
    if isinstance(value, list | tuple) and value and all(scalar_ok(v) and not isinstance(v, bool) for v in value):
        if len({type(v) for v in value}) == 1:
            return
    raise DeltapError(
        f"filter on {field!r}: value {value!r} is not supported; use a string, an integer, a boolean, "
        "or a non-empty list of strings (or of integers) to match any of them"
    )


def check_filter(filter: Mapping[str, Any] | None, fields: Iterable[str]) -> dict[str, Any]:
    """Validate a metadata filter against the fields an index knows; return it as a plain dict.

    Raises:
        DeltapError: an unknown field (the message lists the known ones) or an unsupported value type.
    """
    if not filter:
        return {}
    if not isinstance(filter, Mapping):
        raise DeltapError(f"a filter must be a mapping of metadata field -> value, got {type(filter).__name__}")
    known = set(fields) | {"doc_id"}
    unknown = sorted(str(f) for f in filter if f not in known)
    if unknown:
        shown = ", ".join(sorted(known)[:30])
        raise DeltapError(
            f"unknown filter field(s): {', '.join(unknown)}; the documents of this index have these fields: {shown}"
        )
    for field, value in filter.items():
        _check_value(field, value)
    return dict(filter)


def _equal(a: Any, b: Any) -> bool:
    # Qdrant keeps booleans and integers apart (True does not match 1); Python's == does not.
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def matches_filter(doc_id: str, metadata: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Whether a document passes a (validated) filter, with the semantics in this module's docstring."""
    for field, wanted in filter.items():
        value = doc_id if field == "doc_id" else metadata.get(field)
        if value is None:
            return False
        values = value if isinstance(value, list | tuple) else [value]
        options = wanted if isinstance(wanted, list | tuple) else [wanted]
        if not any(_equal(v, o) for v in values for o in options):
            return False
    return True
