"""Answer extraction tolerant of real model output.

Models wrap answers in code fences, sentences ("The answer is C."), JSON (``{"answer": "BaseAgent"}``), Markdown
emphasis, or add trailing explanations. These functions pull out the part a checker compares, and return ``None``
when there is nothing usable (an empty or format-ignoring answer is then a ``fail``, never an ``error``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "clean_identifier",
    "extract_choice",
    "extract_code",
    "identifier_candidates",
    "normalize_identifier",
    "strip_fences",
]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.S)
_ANSWER_IS = re.compile(
    r"(?:final\s+answer|answer|correct\s+option|correct\s+answer|option|choice)\s*(?:is|:|=|-)?\s*[:\s]*"
    r"[`*\"'(\[]*([A-Za-z_][\w.]*)",
    re.I,
)
_BACKTICK = re.compile(r"`([^`\n]+)`")
# Quotes (ASCII and typographic), backticks and Markdown bold/italic stars around an answer.
_QUOTES = "`'\"*\u2018\u2019\u201c\u201d"
# Sentence punctuation after an answer ("BaseAgent," "BaseAgent!" "BaseAgent…").
_TRAILING = ".,;:!?\u2026"


def strip_fences(text: str) -> str:
    """The content of the first fenced block, or the text unchanged when there is none."""
    match = _FENCE.search(text)
    return match.group(2) if match else text


def _json_answer(text: str) -> str | None:
    stripped = strip_fences(text).strip()
    if not stripped.startswith("{"):
        return None
    try:
        obj = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    if isinstance(obj, dict):
        for key in ("answer", "final_answer", "identifier", "option", "choice", "letter"):
            value = obj.get(key)
            if isinstance(value, (str, int)):
                return str(value)
    return None


def normalize_identifier(text: str) -> str:
    """Normalize an identifier for comparison.

    Rules (documented, applied in order, repeated until nothing changes): surrounding whitespace, quotes (ASCII and
    typographic), backticks and Markdown ``*`` emphasis removed; a trailing ``()`` or call arguments removed
    (``run_async()`` -> ``run_async``); trailing sentence punctuation (``.,;:!?…``) removed; internal whitespace
    collapsed; lower-cased. Underscores are kept (``__init__`` is a name, not emphasis).
    """
    return clean_identifier(text).lower()


def clean_identifier(text: str) -> str:
    """:func:`normalize_identifier` without the lower-casing (for case-sensitive comparison)."""
    s = text.strip()
    while True:  # repeat: decorations nest ("`run()`." needs the dot, the backticks, then the parentheses removed)
        before = s
        s = s.strip().strip(_QUOTES).strip()
        s = re.sub(r"\(.*\)$", "", s)
        s = s.rstrip(_TRAILING)
        if s == before:
            break
    return re.sub(r"\s+", " ", s)


def identifier_candidates(text: str) -> list[str]:
    """Possible identifier answers in a model's reply, most explicit first (duplicates removed) — the lenient
    grammar; the string-match checker's default is :func:`deltap.checkers.grammar.read_answer`.

    Tried: a JSON ``answer`` field; the whole reply (fences removed) when it is a single token; ``answer is X`` /
    ``Answer: X``; the first backticked span; the first line; the first token of the first line.
    """
    out: list[str] = []
    if not text or not text.strip():
        return out
    js = _json_answer(text)
    if js:
        out.append(js)
    body = strip_fences(text).strip()
    if body and len(body.split()) == 1:
        out.append(body)
    m = _ANSWER_IS.search(body)
    if m:
        out.append(m.group(1))
    bt = _BACKTICK.search(body)
    if bt:
        out.append(bt.group(1))
    first_line = body.splitlines()[0].strip() if body else ""
    if first_line:
        out.append(first_line)
        out.append(first_line.split()[0])
    seen: set[str] = set()
    result = []
    for c in out:
        n = normalize_identifier(c)
        if n and n not in seen:
            seen.add(n)
            result.append(c)
    return result


_LEAD_LETTER = re.compile(r"^\s*[\(\[*`\"'\u2018\u201c]*([A-Za-z])[\)\]*`\"'\u2019\u201d]*(?:[.,;:!?)\s]|$)")
_ANSWER_LETTER = re.compile(
    r"(?:answer|option|choice)\s*(?:is|would\s+be|:|=)?\s*[:\s]*[\(\[*`\"']*([A-Za-z])(?![A-Za-z])",
    re.I,
)
_PAREN_LETTER = re.compile(r"\(([A-Za-z])\)")
_BOLD_LETTER = re.compile(r"\*\*([A-Za-z])[.)]?\*\*")


def extract_choice(text: str, options: Mapping[str, str] | Iterable[str]) -> str | None:
    """The option letter a reply chooses, or ``None`` when there is none or it is ambiguous (the lenient grammar;
    the checkers' default is :func:`deltap.checkers.grammar.read_choice`).

    Accepted forms: ``C``, ``(C)``, ``C.``, ``C) text``, ``**C**``, ``Answer: C``, ``The answer is (C).``,
    ``{"answer": "C"}``, and the exact text of one option. Letters are matched case-insensitively against the
    option keys (a lowercase ``a`` is not taken from ordinary prose: only the explicit forms count). When the
    explicit forms disagree (``A`` and ``C`` both claimed), the reply is ambiguous and ``None`` is returned.
    """
    keys = list(options.keys()) if isinstance(options, Mapping) else list(options)
    by_upper = {k.upper(): k for k in keys}
    if not text or not text.strip():
        return None

    def key_of(letter: str) -> str | None:
        return by_upper.get(letter.upper())

    js = _json_answer(text)
    if js is not None:
        k = key_of(js.strip().strip("()."))  # a key or nothing: an option's text is matched at the end
        if k:
            return k
    body = strip_fences(text).strip()
    # The whole reply is the letter (with decorations).
    bare = body.strip(" \t\n()[]" + _QUOTES + _TRAILING)
    if len(bare) == 1 and key_of(bare):
        return key_of(bare)
    found: list[str] = []
    for pattern in (_ANSWER_LETTER, _BOLD_LETTER, _PAREN_LETTER):
        for m in pattern.finditer(body):
            letter = m.group(1)
            # Lowercase single letters in prose ("a", "i") only count in the explicit "answer: x" form.
            if letter.islower() and pattern is not _ANSWER_LETTER:
                continue
            k = key_of(letter)
            if k:
                found.append(k)
        if found:
            break
    if not found:
        lead = _LEAD_LETTER.match(body)
        if lead and lead.group(1).isupper() and key_of(lead.group(1)):
            found.append(key_of(lead.group(1)) or "")
    if not found and isinstance(options, Mapping):
        norm = normalize_identifier(body)
        hits = [k for k, v in options.items() if normalize_identifier(str(v)) == norm]
        found.extend(hits)
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return distinct[0]
    return None


def extract_code(text: str, language: str = "python") -> str | None:
    """The source code in a reply: the longest fenced block (preferring ``python``-tagged ones), else the raw text.

    Returns ``None`` for an empty reply.
    """
    if not text or not text.strip():
        return None
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    if blocks:
        tagged = [b for tag, b in blocks if tag in (language, "py", "python3")]
        pool = tagged or [b for _, b in blocks]
        return max(pool, key=len).strip("\n") + "\n"
    return text.strip("\n") + "\n"
