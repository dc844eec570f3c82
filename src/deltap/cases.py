"""Benchmark cases: a question, its seeded gold documents and the checker that decides success.

Sources:

* **Benchmark YAML** (the format of the design deltap implements, see ``shared/data/adk/api_understanding.yaml``): a
  top-level ``benchmarks:`` list; each entry has ``id``, ``question`` and ``benchmark_type``:

  - ``api_understanding``: ``answers[].answer`` (the literal expected string, checked by string match) and
    ``answers[].fully_qualified_class_name`` (the seeded gold documents);
  - ``multiple_choice``: ``options`` (a map ``letter -> text``) and ``correct_answer`` (a letter); gold documents
    from an optional ``fully_qualified_class_name`` / ``gold_doc_ids`` list;
  - ``fix_error``: ``test_file``, ``unfixed_file``, ``fixed_file`` (paths relative to the YAML file); the gold
    documents are the names ``fixed_file`` imports, resolved with :mod:`ast` (``from a.b import C`` gives
    ``a.b.C``; ``import a.b`` gives ``a.b``; relative imports are kept in metadata, not as gold).

* **BEIR** ``queries.jsonl`` + qrels: every judged document with grade > 0 is gold; a query whose record carries
  reference answers (``answers``, ``answer``, ``reference_answer`` or the same inside ``metadata``) gets a
  ``string_match`` checker over them, others the checker ``none`` (evaluation only).

* **Question-answer files** (any QA dataset, :func:`read_qa_jsonl` / :func:`read_qa_yaml`): one record per question
  with ``id``, ``question``, ``answers`` and optional ``gold_ids``; each becomes a case of type ``qa`` checked by
  string match. A seed-004 qrels JSONL with ``reference_answer`` is read by :func:`deltap.loaders.load_cases`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from deltap._io import atomic_write, iter_jsonl, read_text, record_id, yaml_loads
from deltap.checker_kinds import checker_kind
from deltap.errors import DuplicateIdsError, FormatError, MissingIdsError

if TYPE_CHECKING:
    from deltap.documents import Corpus

__all__ = [
    "ANSWER_KEYS",
    "BENCHMARK_TYPES",
    "Case",
    "CheckerSpec",
    "answers_of",
    "fixed_file_imports",
    "qa_checker",
    "read_benchmark_yaml",
    "read_qa_jsonl",
    "read_qa_yaml",
    "read_queries_answers",
    "read_queries_jsonl",
    "resolve_gold",
    "write_queries_jsonl",
]

BENCHMARK_TYPES = ("api_understanding", "multiple_choice", "fix_error")

#: a checker kind: a name registered in :data:`deltap.checker_kinds.CHECKER_KINDS` (``string_match``,
#: ``multiple_choice``, ``regex``, ``pytest``, ``python``, ``none``, or a plug-in's); checked when a spec is made
CheckerKind = str


@dataclass(frozen=True)
class CheckerSpec:
    """What decides whether an answer to a case is a success.

    Args:
        kind: ``string_match`` (``params["answers"]``: accepted strings), ``multiple_choice``
            (``params["correct"]``: the letter, ``params["options"]``: letter -> text), ``regex``
            (``params["pattern"]``), ``pytest`` (``params["test_file"]``, ``params["unfixed_file"]``,
            ``params["fixed_file"]``, ``params["module_name"]``: absolute paths / the module the test imports),
            ``python`` (``params["callable"]``: ``"module:function"``), ``none`` (no checker: evaluation only), or
            any kind registered with :func:`deltap.checker_kinds.register_checker_kind`.
        params: Kind-specific parameters (read-only).

    Raises:
        DeltapError: an unregistered kind.
    """

    kind: CheckerKind
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checker_kind(self.kind)
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "params": dict(self.params)}


@dataclass(frozen=True)
class Case:
    """One question to mine or evaluate.

    Args:
        case_id: Unique id (the benchmark ``id``, or the BEIR query id).
        query: The question text given to the solver and to retrievers.
        gold_doc_ids: Seeded gold documents (from the benchmark's metadata), in the benchmark's order.
        checker: How an answer is judged.
        reference_answer: The expected answer, when there is one (used by the ``logprob`` outcome).
        benchmark_type: ``api_understanding``, ``multiple_choice``, ``fix_error``, ``qa`` (a question-answer file)
            or ``beir``.
        metadata: Everything else from the source (category, rationale, file, options...).
    """

    case_id: str
    query: str
    gold_doc_ids: tuple[str, ...] = ()
    checker: CheckerSpec = field(default_factory=lambda: CheckerSpec("none"))
    reference_answer: str | None = None
    benchmark_type: str = "api_understanding"
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.case_id, str) or not self.case_id:
            raise ValueError(f"Case.case_id must be a non-empty string, got {self.case_id!r}")
        object.__setattr__(self, "gold_doc_ids", tuple(self.gold_doc_ids))
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))


def _require(
    entry: Mapping[str, Any], key: str, path: Path, line: int | None, kind: type | tuple[type, ...] = str
) -> Any:
    if key not in entry or entry[key] is None:
        raise FormatError(path, f"benchmark entry {entry.get('id', '?')!r} is missing required field {key!r}", line)
    value = entry[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise FormatError(
            path, f"field {key!r} of {entry.get('id', '?')!r} must be {names}, got {type(value).__name__}", line
        )
    return value


def _answer_text(value: Any, path: Path, line: int | None, case_id: str) -> str:
    """An accepted answer: a string (a number is taken as its text); YAML's null and booleans are refused, since
    ``answer: null`` / ``answer: yes`` would otherwise be accepted as the strings "None" / "True"."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise FormatError(
        path,
        f"answer {value!r} of {case_id!r} is not a string (YAML reads bare null, ~, yes, no, true, false... as "
        f'{type(value).__name__}); quote it, e.g. answer: "{"" if value is None else str(value).lower()}"',
        line,
    )


def _gold_list(value: Any, path: Path, line: int | None, case_id: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise FormatError(path, f"gold documents of {case_id!r} must be a list of strings", line)


def fixed_file_imports(source: str, filename: str = "<fixed>") -> tuple[list[str], list[str]]:
    """Fully qualified names imported by a Python source file, found with :mod:`ast`.

    Returns:
        ``(absolute, relative)``: ``from a.b import C`` -> ``a.b.C``; ``import a.b as x`` -> ``a.b``;
        ``from . import z`` / ``from .m import z`` -> relative names like ``.m.z``. ``*`` imports give the module.
        Order of first appearance, duplicates removed.

    Raises:
        SyntaxError: the source does not parse.
    """
    tree = ast.parse(source, filename=filename)
    absolute: list[str] = []
    relative: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                absolute.append(alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            target = relative if node.level else absolute
            prefix = "." * node.level + module
            for alias in node.names:
                if alias.name == "*":
                    target.append(prefix)
                else:
                    target.append(f"{prefix}.{alias.name}" if module else f"{prefix}{alias.name}")
    return list(dict.fromkeys(absolute)), list(dict.fromkeys(relative))


def _line_numbers(text: str) -> dict[str, int]:
    """Best-effort map ``id -> line`` for benchmark entries, for error messages."""
    lines: dict[str, int] = {}
    for i, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("- id:") or stripped.startswith("id:"):
            value = stripped.split(":", 1)[1].strip().strip("'\"")
            lines.setdefault(value, i)
    return lines


def read_benchmark_yaml(path: str | Path) -> list[Case]:
    """Read a benchmark YAML file into cases (see the module docstring for the schema).

    Raises:
        FormatError: invalid YAML, a missing or mistyped field, an unknown ``benchmark_type``, a ``fix_error`` file
            that does not exist or does not parse; the message names file and line.
        DuplicateIdsError: two entries share an ``id``.
    """
    path = Path(path)
    text = read_text(path)
    data = yaml_loads(text, path)
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise FormatError(path, "expected a mapping with a top-level 'benchmarks:' list")
    lines = _line_numbers(text)
    cases: list[Case] = []
    seen: set[str] = set()
    dupes: list[str] = []
    for n, entry in enumerate(data["benchmarks"], start=1):
        if not isinstance(entry, dict):
            raise FormatError(path, f"benchmark #{n} must be a mapping, got {type(entry).__name__}")
        raw_id = entry.get("id")
        line = lines.get(str(raw_id)) if raw_id is not None else None
        case_id = str(_require(entry, "id", path, line, (str, int)))
        if case_id in seen:
            dupes.append(case_id)
        seen.add(case_id)
        question = _require(entry, "question", path, line)
        btype = _require(entry, "benchmark_type", path, line)
        extra = {k: v for k, v in entry.items() if k not in {"id", "question", "benchmark_type", "answers"}}
        if btype == "api_understanding":
            answers = _require(entry, "answers", path, line, list)
            accepted: list[str] = []
            gold: list[str] = []
            for a in answers:
                if not isinstance(a, dict) or "answer" not in a:
                    raise FormatError(path, f"each answer of {case_id!r} needs an 'answer' string", line)
                accepted.append(_answer_text(a["answer"], path, line, case_id))
                gold += _gold_list(a.get("fully_qualified_class_name"), path, line, case_id)
            case = Case(
                case_id=case_id,
                query=question,
                gold_doc_ids=tuple(dict.fromkeys(gold)),
                checker=CheckerSpec("string_match", {"answers": accepted}),
                reference_answer=accepted[0] if accepted else None,
                benchmark_type=btype,
                metadata=extra,
            )
        elif btype == "multiple_choice":
            options = _require(entry, "options", path, line, dict)
            correct = str(_require(entry, "correct_answer", path, line, (str, int))).strip()
            options = {str(k).strip(): str(v) for k, v in options.items()}
            if correct not in options:
                raise FormatError(
                    path, f"correct_answer {correct!r} of {case_id!r} is not one of the options {sorted(options)}", line
                )
            gold = _gold_list(entry.get("fully_qualified_class_name", entry.get("gold_doc_ids")), path, line, case_id)
            extra["options"] = options
            case = Case(
                case_id=case_id,
                query=question,
                gold_doc_ids=tuple(dict.fromkeys(gold)),
                checker=CheckerSpec("multiple_choice", {"correct": correct, "options": options}),
                reference_answer=correct,
                benchmark_type=btype,
                metadata=extra,
            )
        elif btype == "fix_error":
            files: dict[str, str] = {}
            for key in ("test_file", "unfixed_file", "fixed_file"):
                rel = _require(entry, key, path, line)
                resolved = (path.parent / rel).resolve()
                if not resolved.is_file():
                    raise FormatError(path, f"{key} of {case_id!r} not found: {resolved}", line)
                files[key] = str(resolved)
            fixed_src = read_text(files["fixed_file"])
            try:
                absolute, relative = fixed_file_imports(fixed_src, files["fixed_file"])
            except SyntaxError as exc:
                raise FormatError(files["fixed_file"], f"fixed_file does not parse: {exc.msg}", exc.lineno) from None
            explicit = _gold_list(
                entry.get("fully_qualified_class_name", entry.get("gold_doc_ids")), path, line, case_id
            )
            extra["relative_imports"] = relative
            module_name = entry.get("module_name") or Path(files["unfixed_file"]).stem
            case = Case(
                case_id=case_id,
                query=question,
                gold_doc_ids=tuple(dict.fromkeys(explicit + absolute)),
                checker=CheckerSpec("pytest", {**files, "module_name": module_name}),
                reference_answer=fixed_src,
                benchmark_type=btype,
                metadata=extra,
            )
        else:
            raise FormatError(
                path,
                f"unknown benchmark_type {btype!r} for {case_id!r}; expected one of {', '.join(BENCHMARK_TYPES)}",
                line,
            )
        cases.append(case)
    if dupes:
        raise DuplicateIdsError("case ids", dupes, str(path))
    return cases


def read_queries_jsonl(path: str | Path) -> dict[str, str]:
    """Read a BEIR ``queries.jsonl`` into ``{query_id: text}`` (file order kept)."""
    path = Path(path)
    queries: dict[str, str] = {}
    dupes: list[str] = []
    for lineno, obj in iter_jsonl(path, "one query record per line"):
        qid = record_id(obj, ("_id", "query_id"), path, lineno)
        text = obj.get("text", obj.get("query"))
        if not isinstance(text, str):
            raise FormatError(path, '"text" must be a string', lineno)
        if qid in queries:
            dupes.append(qid)
        queries[qid] = text
    if dupes:
        raise DuplicateIdsError("query ids", dupes, str(path))
    return queries


def write_queries_jsonl(queries: Mapping[str, str], path: str | Path) -> Path:
    """Write ``{query_id: text}`` as BEIR ``queries.jsonl``."""
    path = Path(path)
    with atomic_write(path) as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    return path


def alias_map(corpus: Corpus) -> dict[str, str]:
    """``alias -> doc_id`` from each document's ``metadata["aliases"]`` (ids that are real doc ids win)."""
    out: dict[str, str] = {}
    for doc in corpus:
        for alias in doc.metadata.get("aliases") or ():
            if isinstance(alias, str) and alias not in corpus:
                out.setdefault(alias, doc.doc_id)
    return out


def resolve_gold(
    cases: Sequence[Case],
    corpus: Corpus,
    on_missing: Literal["error", "skip"] = "error",
) -> tuple[list[Case], dict[str, list[str]]]:
    """Map each case's gold ids onto corpus ids, through document aliases where needed.

    Resolution order: the id itself; a document's ``metadata["aliases"]``; a package re-export ``pkg.Name`` that
    matches exactly one corpus id ``pkg.<...>.Name``. Anything else is unresolved.

    Args:
        cases: Cases as loaded.
        corpus: The corpus the gold ids should live in.
        on_missing: ``error`` raises one :class:`MissingIdsError` listing every unresolved id; ``skip`` drops them
            from the cases and returns them so the caller can print the count.

    Returns:
        ``(cases, missing)``: new cases with resolved, de-duplicated gold ids (original ids kept in
        ``metadata["gold_as_given"]``), and ``{case_id: [unresolved ids]}``.
    """
    aliases = alias_map(corpus)
    by_name: dict[str, list[str]] = {}
    for doc_id in corpus.ids:
        by_name.setdefault(doc_id.rsplit(".", 1)[-1], []).append(doc_id)

    def reexport(gid: str) -> str | None:
        # ``pkg.Name`` re-exported from ``pkg.sub.module.Name``: resolve when exactly one corpus id matches.
        if "." not in gid:
            return None
        prefix, name = gid.rsplit(".", 1)
        hits = [d for d in by_name.get(name, []) if d.startswith(prefix + ".")]
        return hits[0] if len(hits) == 1 else None

    out: list[Case] = []
    missing: dict[str, list[str]] = {}
    for case in cases:
        resolved: list[str] = []
        for gid in case.gold_doc_ids:
            if gid in corpus:
                resolved.append(gid)
            elif gid in aliases:
                resolved.append(aliases[gid])
            elif (target := reexport(gid)) is not None:
                resolved.append(target)
            else:
                missing.setdefault(case.case_id, []).append(gid)
        meta = dict(case.metadata)
        meta.setdefault("gold_as_given", list(case.gold_doc_ids))
        out.append(replace(case, gold_doc_ids=tuple(dict.fromkeys(resolved)), metadata=meta))
    if missing and on_missing == "error":
        flat = [f"{cid}:{gid}" for cid, gids in missing.items() for gid in gids]
        raise MissingIdsError(
            "gold document ids",
            flat,
            corpus.name,
            "Fix the benchmark, or pass --skip-missing to drop them with a count",
        )
    return out, missing


# ---------------------------------------------------------------------------------------------------------------
# Question-answer files: any QA dataset becomes cases checked by string match.

#: Where a query record may carry its reference answers (first found first; all are accepted).
ANSWER_KEYS = ("answers", "answer", "reference_answer")
_ID_KEYS = ("id", "query_id", "_id")
_QUESTION_KEYS = ("question", "query", "text")
_GOLD_KEYS = ("gold_ids", "gold_doc_ids", "gold", "doc_ids", "relevant_docs")


def _answer_values(value: Any, key: str, path: Path, line: int | None, case_id: str) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            hint = " (YAML reads bare yes/no/true/false as booleans: quote it)" if isinstance(item, bool) else ""
            raise FormatError(
                path,
                f"{key!r} of {case_id!r} must be a string or a list of strings, got {type(item).__name__} {item!r}{hint}",
                line,
            )
        text = str(item).strip()
        if text:
            out.append(text)
    return out


def answers_of(record: Mapping[str, Any], path: str | Path, line: int | None, case_id: str) -> list[str]:
    """The reference answers a query record carries, in this order, duplicates removed: ``answers`` (a string or a
    list), ``answer``, ``reference_answer`` (seed 004's qrels JSONL), then the same keys inside ``metadata``.

    Numbers are taken as their text; YAML/JSON ``null`` means no answer.

    Raises:
        FormatError: an answer that is not a string or number (a mapping, a boolean...), naming file and line.
    """
    path = Path(path)
    found: list[str] = []
    meta = record.get("metadata")
    places: list[tuple[str, Mapping[str, Any]]] = [("", record)]
    if isinstance(meta, Mapping):
        places.append(("metadata.", meta))
    for prefix, place in places:
        for key in ANSWER_KEYS:
            if place.get(key) is not None:
                found += _answer_values(place[key], prefix + key, path, line, case_id)
    return list(dict.fromkeys(found))


def qa_checker(answers: Sequence[str]) -> CheckerSpec:
    """The checker of a question-answer case: string match against every accepted answer."""
    return CheckerSpec("string_match", {"answers": list(answers)})


def _first(record: Mapping[str, Any], keys: Sequence[str]) -> tuple[str | None, Any]:
    for key in keys:
        if record.get(key) is not None:
            return key, record[key]
    return None, None


def _qa_case(record: Any, path: Path, line: int | None, n: int) -> Case:
    if not isinstance(record, Mapping):
        raise FormatError(path, f"question #{n} must be a mapping, got {type(record).__name__}", line)
    _, raw_id = _first(record, _ID_KEYS)
    if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise FormatError(path, f"question #{n} needs an 'id' (a string or integer; also read: query_id, _id)", line)
    case_id = str(raw_id).strip()
    _, question = _first(record, _QUESTION_KEYS)
    if not isinstance(question, str) or not question.strip():
        raise FormatError(path, f"question {case_id!r} needs a 'question' string (also read: query, text)", line)
    answers = answers_of(record, path, line, case_id)
    if not answers:
        raise FormatError(
            path,
            f"question {case_id!r} has no answer: give 'answers' (a string or a list), 'answer' or 'reference_answer'",
            line,
        )
    gold_key, raw_gold = _first(record, _GOLD_KEYS)
    grades: dict[str, int] = {}
    if isinstance(raw_gold, Mapping):  # {doc_id: grade}, as in qrels: grade > 0 is gold
        for d, g in raw_gold.items():
            if isinstance(g, bool) or not isinstance(g, int) or g < 0:
                raise FormatError(
                    path, f"{gold_key!r} of {case_id!r}: grade of {d!r} must be an integer >= 0, got {g!r}", line
                )
            grades[str(d)] = g
        gold = [d for d, g in grades.items() if g > 0]
    else:
        gold = _gold_list(raw_gold, path, line, case_id)
    used = {*_ID_KEYS, *_QUESTION_KEYS, *ANSWER_KEYS, *_GOLD_KEYS}
    metadata = {k: v for k, v in record.items() if k not in used}
    if grades:
        metadata["grades"] = grades
    return Case(
        case_id=case_id,
        query=question.strip(),
        gold_doc_ids=tuple(dict.fromkeys(gold)),
        checker=qa_checker(answers),
        reference_answer=answers[0],
        benchmark_type="qa",
        metadata=metadata,
    )


def _check_unique(cases: list[Case], path: Path) -> list[Case]:
    ids = [c.case_id for c in cases]
    dupes = [i for i in dict.fromkeys(ids) if ids.count(i) > 1]
    if dupes:
        raise DuplicateIdsError("question ids", dupes, str(path))
    return cases


def read_qa_jsonl(path: str | Path) -> list[Case]:
    """Read a question-answer JSON Lines file: one ``{"id", "question", "answers", "gold_ids"}`` object per line.

    Field spellings read: id ``id`` / ``query_id`` / ``_id``; question ``question`` / ``query`` / ``text``;
    answers as in :func:`answers_of`; gold ``gold_ids`` / ``gold_doc_ids`` / ``gold`` / ``doc_ids`` (a list of doc
    ids) or ``relevant_docs`` (``{doc_id: grade}``, grade > 0 is gold; optional). Other fields go to metadata.
    Each question becomes a case of type ``qa`` with a ``string_match`` checker over its answers.

    Raises:
        FormatError: a line that is not a JSON object, a question without id, text or answer, a bad answer or gold
            list — naming file and line.
        DuplicateIdsError: two questions share an id.
    """
    path = Path(path)
    cases = [
        _qa_case(obj, path, lineno, n) for n, (lineno, obj) in enumerate(iter_jsonl(path, "one question per line"), 1)
    ]
    if not cases:
        raise FormatError(path, "no question in the file")
    return _check_unique(cases, path)


def read_qa_yaml(path: str | Path) -> list[Case]:
    """Read a question-answer YAML file: a top-level list of questions, or a mapping with a ``questions:`` list.

    Each question has the fields of :func:`read_qa_jsonl`.

    Raises:
        FormatError: invalid YAML, neither shape, or a bad question (naming file and, where it can, line).
        DuplicateIdsError: two questions share an id.
    """
    path = Path(path)
    text = read_text(path)
    data = yaml_loads(text, path)
    items = data.get("questions") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise FormatError(
            path, "expected a list of questions (id, question, answers, gold_ids), or a 'questions:' list"
        )
    lines = _line_numbers(text)
    cases = []
    for n, item in enumerate(items, start=1):
        raw_id = item.get("id", item.get("query_id")) if isinstance(item, dict) else None
        cases.append(_qa_case(item, path, lines.get(str(raw_id)) if raw_id is not None else None, n))
    return _check_unique(cases, path)


def read_queries_answers(path: str | Path) -> dict[str, list[str]]:
    """The reference answers of a BEIR ``queries.jsonl`` whose records carry them (see :func:`answers_of`):
    ``{query_id: [answers]}`` for the queries that have any."""
    path = Path(path)
    out: dict[str, list[str]] = {}
    for lineno, obj in iter_jsonl(path, "one query record per line"):
        qid = record_id(obj, ("_id", "query_id"), path, lineno)
        answers = answers_of(obj, path, lineno, qid)
        if answers:
            out[qid] = answers
    return out
