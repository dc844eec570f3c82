"""The pipeline-check suite: what ``deltap check`` asks of a retrieval pipeline, read from YAML or JSON.

A suite file (YAML; JSON is accepted too, it is a subset)::

    top_k: 5                  # expected items must appear in the top k hits
    pass_rate: 0.8            # share of in-scope queries that must pass
    score_threshold: 0.35     # out-of-scope queries must stay below it (deltap check --calibrate proposes one)
    repeats: 5                # timed passes over every query (latency percentiles, determinism)
    warmup: 1                 # untimed passes first
    latency: {p95_embed_search_ms: 300, p95_end_to_end_ms: 500}
    determinism: {score_tolerance: 1.0e-9, reopen: true}   # 0 = bit-identical scores
    metadata: {required: [source_url, document_section, heading, chunk_id, chunk_text_preview]}
    gates: {relevance: true, out_of_scope: true, metadata: true, latency: true, determinism: true}
    index: {store: ./index, collection: rag_embedding, corpus: corpus.jsonl}   # optional; CLI flags override
    in_scope:
      - id: nodes                              # optional; defaults to in-1, in-2, ...
        query: How do I create a ROS 2 node?
        expected_sections: [module-01-ros2]    # any of these document_section values in the top k
        expected_chunk_ids: [module-01-ros2/01-nodes.md#0]   # or a pattern: module-01-ros2/01-nodes.md#*
        expected_snippets: ["rclpy.init"]      # case- and whitespace-insensitive substring of a hit's text
        match: any                              # any (default): one expected item per kind; all: every item
    out_of_scope:
      - What is the capital of France?          # a plain string, or {id, query}

Every key is checked: an unknown key, a missing query or an in-scope query without any expectation is a
:class:`~deltap.errors.FormatError` naming the file, the line and the entry.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from deltap.errors import DeltapError, FormatError

__all__ = [
    "DEFAULT_OUT_OF_SCOPE",
    "DEFAULT_REQUIRED_METADATA",
    "GATES",
    "CheckSuite",
    "InScopeQuery",
    "OutOfScopeQuery",
    "load_suite",
    "parse_suite",
    "starter_suite_yaml",
]

GATES = ("relevance", "out_of_scope", "metadata", "latency", "determinism")
DEFAULT_REQUIRED_METADATA = ("source_url", "document_section", "heading", "chunk_id", "chunk_text_preview")
DEFAULT_OUT_OF_SCOPE = (
    "What is the capital of France?",
    "Give me a recipe for chocolate chip cookies.",
    "Who won the 1998 FIFA World Cup final?",
)

_LINE = "__line__"


@dataclass(frozen=True)
class InScopeQuery:
    """A query the pipeline must answer from the right part of the corpus.

    Args:
        query_id: Name used in reports.
        query: The search text.
        expected_sections: ``document_section`` values, one of which (``match="any"``) or all of which must appear.
        expected_chunk_ids: Chunk ids (hit ``doc_id`` or ``chunk_id`` metadata); an id with ``*`` or ``?`` is a
            shell-style pattern, e.g. ``commands/npm-ci.md#*`` for any chunk of that page.
        expected_snippets: Text that must occur in a hit (case- and whitespace-insensitive).
        match: ``any`` (one item of each given kind suffices) or ``all`` (every item must be found).
    """

    query_id: str
    query: str
    expected_sections: tuple[str, ...] = ()
    expected_chunk_ids: tuple[str, ...] = ()
    expected_snippets: tuple[str, ...] = ()
    match: Literal["any", "all"] = "any"


@dataclass(frozen=True)
class OutOfScopeQuery:
    """A query the corpus cannot answer: the pipeline must return nothing or only hits below the threshold."""

    query_id: str
    query: str


@dataclass(frozen=True)
class CheckSuite:
    """A parsed suite (see the module docstring for the file format and the defaults)."""

    in_scope: tuple[InScopeQuery, ...] = ()
    out_of_scope: tuple[OutOfScopeQuery, ...] = ()
    top_k: int = 5
    pass_rate: float = 0.8
    score_threshold: float | None = None
    repeats: int = 5
    warmup: int = 1
    p95_embed_search_ms: float = 300.0
    p95_end_to_end_ms: float = 500.0
    score_tolerance: float = 1e-9
    reopen: bool = True
    required_metadata: tuple[str, ...] = DEFAULT_REQUIRED_METADATA
    gates: frozenset[str] = field(default_factory=lambda: frozenset(GATES))
    store: str | None = None
    collection: str | None = None
    corpus: str | None = None
    source: str = "<suite>"

    def with_overrides(self, **changes: Any) -> CheckSuite:
        """A copy with the given fields replaced (``None`` values are ignored), validated again."""
        changes = {k: v for k, v in changes.items() if v is not None}
        suite = replace(self, **changes)
        _validate_settings(suite, suite.source, None)
        return suite


# ----------------------------------------------------------------------------------------------------------------
# Reading


def _line_loader() -> type:
    import yaml

    class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        """SafeLoader that records each mapping's 1-based line under ``__line__``."""

    def construct(loader: Any, node: Any) -> dict[Any, Any]:
        mapping = loader.construct_mapping(node, deep=True)
        mapping[_LINE] = node.start_mark.line + 1
        return dict(mapping)

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct)
    # YAML 1.1 reads "1e-06" (no dot; what json.dumps writes) as a string: accept JSON/YAML 1.2 exponents too
    LineLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    return LineLoader


def load_suite(path: str | Path) -> CheckSuite:
    """Read and validate a suite file (YAML or JSON).

    Raises:
        DeltapError: the file does not exist.
        FormatError: invalid YAML/JSON, or a value of the wrong shape (file, line and entry named).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise DeltapError(f"suite file {path} does not exist; write one or run `deltap init-check CORPUS -o {path}`")
    from deltap._io import json_loads, read_text

    text = read_text(path)
    if path.suffix.lower() == ".json":
        json_loads(text, path)  # invalid JSON or a repeated key: named with its line
    try:
        data = yaml.load(text, Loader=_line_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FormatError(path, f"invalid YAML: {problem}", mark.line + 1 if mark is not None else None) from None
    return parse_suite(data, source=str(path))


def _err(source: str, msg: str, line: int | None) -> FormatError:
    return FormatError(source, msg, line)


def _str_list(value: Any, what: str, source: str, line: int | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str | int) and not isinstance(v, bool) for v in value):
        raise _err(source, f"{what} must be a list of strings, got {value!r}", line)
    out = tuple(str(v).strip() for v in value)
    if any(not v for v in out):
        raise _err(source, f"{what} contains an empty string", line)
    return out


def _check_keys(entry: Mapping[str, Any], allowed: Sequence[str], what: str, source: str) -> None:
    unknown = sorted(str(k) for k in entry if k != _LINE and k not in allowed)
    if unknown:
        raise _err(
            source, f"{what}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}", entry.get(_LINE)
        )


def _number(value: Any, what: str, source: str, line: int | None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _err(source, f"{what} must be a number, got {value!r}", line)
    return float(value)


def _integer(value: Any, what: str, source: str, line: int | None, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _err(source, f"{what} must be an integer >= {minimum}, got {value!r}", line)
    return value


def _in_scope(raw: Any, i: int, source: str, top_line: int | None, ids: set[str]) -> InScopeQuery:
    what = f"in_scope[{i}]"
    if not isinstance(raw, Mapping):
        raise _err(source, f"{what} must be a mapping with 'query' and expectations, got {raw!r}", top_line)
    line = raw.get(_LINE)
    allowed = ("id", "query", "expected_sections", "expected_chunk_ids", "expected_snippets", "match")
    _check_keys(raw, allowed, what, source)
    query = raw.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _err(source, f"{what}: 'query' must be a non-empty string", line)
    qid = str(raw.get("id") or f"in-{i + 1}")
    if qid in ids:
        raise _err(source, f"{what}: duplicate query id {qid!r}", line)
    ids.add(qid)
    sections = _str_list(raw.get("expected_sections"), f"{what} expected_sections", source, line)
    chunk_ids = _str_list(raw.get("expected_chunk_ids"), f"{what} expected_chunk_ids", source, line)
    snippets = _str_list(raw.get("expected_snippets"), f"{what} expected_snippets", source, line)
    if not (sections or chunk_ids or snippets):
        raise _err(
            source,
            f"{what} ({qid}) has no expectation; give expected_sections, expected_chunk_ids or expected_snippets",
            line,
        )
    match = raw.get("match", "any")
    if match not in ("any", "all"):
        raise _err(source, f"{what}: match must be 'any' or 'all', got {match!r}", line)
    return InScopeQuery(qid, query.strip(), sections, chunk_ids, snippets, match)


def _out_of_scope(raw: Any, i: int, source: str, top_line: int | None, ids: set[str]) -> OutOfScopeQuery:
    what = f"out_of_scope[{i}]"
    line = top_line
    if isinstance(raw, Mapping):
        line = raw.get(_LINE)
        _check_keys(raw, ("id", "query"), what, source)
        query, qid = raw.get("query"), raw.get("id")
    else:
        query, qid = raw, None
    if not isinstance(query, str) or not query.strip():
        raise _err(source, f"{what}: the query must be a non-empty string (or {{id, query}}), got {query!r}", line)
    qid = str(qid or f"out-{i + 1}")
    if qid in ids:
        raise _err(source, f"{what}: duplicate query id {qid!r}", line)
    ids.add(qid)
    return OutOfScopeQuery(qid, query.strip())


def _validate_settings(suite: CheckSuite, source: str, line: int | None) -> None:
    if not isinstance(suite.top_k, int) or suite.top_k < 1:
        raise _err(source, f"top_k must be an integer >= 1, got {suite.top_k!r}", line)
    if not 0.0 < suite.pass_rate <= 1.0:
        raise _err(source, f"pass_rate must be in (0, 1], got {suite.pass_rate!r}", line)
    if suite.repeats < 1 or suite.warmup < 0:
        raise _err(source, f"repeats must be >= 1 and warmup >= 0, got {suite.repeats} and {suite.warmup}", line)
    if suite.p95_embed_search_ms <= 0 or suite.p95_end_to_end_ms <= 0:
        raise _err(source, "latency limits must be positive numbers of milliseconds", line)
    if suite.score_tolerance < 0:
        raise _err(source, f"determinism score_tolerance must be >= 0, got {suite.score_tolerance}", line)
    unknown = sorted(set(suite.gates) - set(GATES))
    if unknown:
        raise _err(source, f"unknown gate(s) {', '.join(unknown)}; gates are {', '.join(GATES)}", line)


def parse_suite(data: Any, source: str = "<suite>") -> CheckSuite:
    """Validate a suite already loaded as Python data (the shape of the file; see the module docstring).

    Raises:
        FormatError: a key or value of the wrong shape, or a suite with no query at all.
    """
    if data is None:
        raise FormatError(source, "the suite is empty; add in_scope and out_of_scope queries")
    if not isinstance(data, Mapping):
        raise FormatError(
            source, f"a suite must be a mapping with in_scope / out_of_scope lists, got {type(data).__name__}"
        )
    top_line = data.get(_LINE)
    allowed = (
        "top_k", "pass_rate", "score_threshold", "repeats", "warmup", "latency", "determinism", "metadata", "gates",
        "index", "in_scope", "out_of_scope",
    )  # fmt: skip
    _check_keys(data, allowed, "suite", source)
    ids: set[str] = set()
    raw_in = data.get("in_scope") or []
    raw_out = data.get("out_of_scope") or []
    for key, value in (("in_scope", raw_in), ("out_of_scope", raw_out)):
        if not isinstance(value, list):
            raise FormatError(source, f"{key} must be a list, got {type(value).__name__}", top_line)
    in_scope = tuple(_in_scope(q, i, source, top_line, ids) for i, q in enumerate(raw_in))
    out_of_scope = tuple(_out_of_scope(q, i, source, top_line, ids) for i, q in enumerate(raw_out))
    if not in_scope and not out_of_scope:
        raise FormatError(source, "the suite has no queries; add in_scope and/or out_of_scope entries", top_line)

    kwargs: dict[str, Any] = {}
    if "top_k" in data:
        kwargs["top_k"] = _integer(data["top_k"], "top_k", source, top_line, 1)
    if "pass_rate" in data:
        kwargs["pass_rate"] = _number(data["pass_rate"], "pass_rate", source, top_line)
    if data.get("score_threshold") is not None:
        kwargs["score_threshold"] = _number(data["score_threshold"], "score_threshold", source, top_line)
    if "repeats" in data:
        kwargs["repeats"] = _integer(data["repeats"], "repeats", source, top_line, 1)
    if "warmup" in data:
        kwargs["warmup"] = _integer(data["warmup"], "warmup", source, top_line, 0)
    sub_specs: dict[str, tuple[str, ...]] = {
        "latency": ("p95_embed_search_ms", "p95_end_to_end_ms"),
        "determinism": ("score_tolerance", "reopen"),
        "metadata": ("required",),
        "gates": GATES,
        "index": ("store", "collection", "corpus"),
    }
    for key, keys in sub_specs.items():
        sub = data.get(key)
        if sub is None:
            continue
        if not isinstance(sub, Mapping):
            raise FormatError(source, f"{key} must be a mapping with keys {', '.join(keys)}", top_line)
        _check_keys(sub, keys, key, source)
        line = sub.get(_LINE, top_line)
        if key == "latency":
            for k in keys:
                if k in sub:
                    kwargs[k] = _number(sub[k], f"latency.{k}", source, line)
        elif key == "determinism":
            if "score_tolerance" in sub:
                kwargs["score_tolerance"] = _number(sub["score_tolerance"], "determinism.score_tolerance", source, line)
            if "reopen" in sub:
                if not isinstance(sub["reopen"], bool):
                    raise FormatError(source, "determinism.reopen must be true or false", line)
                kwargs["reopen"] = sub["reopen"]
        elif key == "metadata":
            required = _str_list(sub.get("required"), "metadata.required", source, line)
            kwargs["required_metadata"] = required
        elif key == "gates":
            bad = [k for k in keys if k in sub and not isinstance(sub[k], bool)]
            if bad:
                raise FormatError(source, f"gates.{bad[0]} must be true or false", line)
            kwargs["gates"] = frozenset(g for g in GATES if sub.get(g, True))
        else:
            for k in keys:
                if sub.get(k) is not None:
                    if not isinstance(sub[k], str) or not sub[k].strip():
                        raise FormatError(source, f"index.{k} must be a non-empty string", line)
                    kwargs[k] = sub[k].strip()
    suite = CheckSuite(in_scope=in_scope, out_of_scope=out_of_scope, source=source, **kwargs)
    _validate_settings(suite, source, top_line)
    return suite


# ----------------------------------------------------------------------------------------------------------------
# Starter suite (deltap init-check)


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def starter_suite_yaml(corpus: Any, per_section: int = 2, corpus_path: str | None = None) -> str:
    """A starter suite for ``corpus`` as commented YAML, for the user to edit.

    For each ``document_section`` (in corpus order) it proposes up to ``per_section`` in-scope queries taken from
    distinct headings of that section, spread over the section, each expecting that section (the source chunk id
    is given in a comment). Three generic out-of-scope queries are added; ``score_threshold`` is left empty with
    a pointer to ``deltap check --calibrate``. The choice is deterministic: same corpus, same suite.

    Args:
        corpus: A :class:`~deltap.documents.Corpus` whose documents carry ``document_section`` (and ``heading`` /
            ``title``) metadata, as the Markdown builder writes them.
        per_section: Queries per section (>= 1).
        corpus_path: Recorded under ``index.corpus`` so ``deltap check`` compares hits with it.

    Raises:
        DeltapError: the corpus is empty or has no ``document_section`` metadata.
    """
    if per_section < 1:
        raise DeltapError(f"per_section must be >= 1, got {per_section}")
    docs = list(corpus)
    if not docs:
        raise DeltapError("the corpus is empty; build it first (deltap corpus markdown FOLDER -o corpus.jsonl)")
    sections: dict[str, list[Any]] = {}
    for doc in docs:
        section = doc.metadata.get("document_section")
        if isinstance(section, str) and section:
            sections.setdefault(section, []).append(doc)
    if not sections:
        raise DeltapError(
            "no document has a 'document_section' metadata field, so no starter expectations can be written; "
            "build the corpus with `deltap corpus markdown` or add the field"
        )
    lines = [
        "# deltap pipeline-check suite (starter written by `deltap init-check`; edit the queries and expectations).",
        "# Run: deltap check THIS_FILE --store INDEX [--collection NAME]",
        "top_k: 5",
        "pass_rate: 0.8",
        "# Out-of-scope queries must score below this. Run `deltap check THIS_FILE --calibrate ...` for a proposal.",
        "score_threshold: null",
        "repeats: 5",
        "warmup: 1",
        "latency: {p95_embed_search_ms: 300, p95_end_to_end_ms: 500}",
    ]
    if corpus_path:
        lines.append(f"index: {{corpus: {_q(corpus_path)}}}")
    lines.append("in_scope:")
    for section, members in sections.items():
        by_heading: dict[str, Any] = {}
        for doc in members:
            heading = str(doc.metadata.get("heading") or doc.title or "").strip()
            if heading and heading not in by_heading:
                by_heading[heading] = doc
        picks = list(by_heading.items())
        if len(picks) > per_section:  # spread the picks over the section
            step = len(picks) / per_section
            picks = [picks[int(i * step)] for i in range(per_section)]
        for n, (heading, doc) in enumerate(picks, start=1):
            title = str(doc.title or doc.metadata.get("title") or "")
            query = heading if not title or heading == title else f"{heading} ({title})"
            lines += [
                f"  - id: {_q(f'{section}-{n}')}",
                f"    query: {_q(query)}  # from chunk {doc.doc_id}",
                f"    expected_sections: [{_q(section)}]",
            ]
    lines.append("out_of_scope:")
    lines += [f"  - {_q(q)}" for q in DEFAULT_OUT_OF_SCOPE]
    return "\n".join(lines) + "\n"
