"""The strict answer grammar of issue 24 (``grammar="strict"``), kept for runs judged by it.

The checkers' default is the ``grader`` grammar of issue 34 (:mod:`deltap.checkers.grader`, rules in
``docs/answer-grammar.md``); a run directory mined with this one resumes with ``--answer-grammar strict``.

A label is a difference in how often a checker says ``pass``; a checker that accepts a reply naming several answers
rewards documents that make the model *list more names*. The strict grammar therefore passes a reply only when it
commits to exactly one answer, and says which rule failed it otherwise. ``lenient`` (the grammar before issue 24) is
kept in :mod:`deltap.checkers.extract` for comparison and for logs mined with it.

**Identifier answers** (:func:`read_answer`, used by :class:`~deltap.checkers.string_match.StringMatchChecker`):

1. *Answer span.* A JSON ``answer`` field (keys as in :mod:`~deltap.checkers.extract`) when the reply is a JSON
   object; else, in the reply with its first code fence unwrapped, the rest of the line after the first answer cue
   (``answer is``, ``answer:``, ``final answer =``, ``the correct answer would be`` ...; the next line when the cue
   ends its line); else the first non-empty line. A span that names nothing and is followed by a bullet list
   (``Possible answers:``) is replaced by the list. A span of one bare word followed, line after line, by other
   bare words (``BaseAgent`` / ``LlmAgent`` / ``Runner``: a list without bullets) fails as ``several``.
2. *Clauses.* The span is cut into clauses at sentence ends (``.``, ``!``, ``?`` before a space), dashes between
   spaces (``—``, ``–``, ``-``), ``;``, ``:``, an opening parenthesis after a space, and the words ``because``,
   ``since``, ``which``, ``but``, ``although``, ``though``, ``whereas``, ``while``. Explanation after the clause
   that holds the answer is not read (``BaseAgent — it is the base class of all agents`` names one answer).
3. *Candidates of a clause.* Backticked and ``**bold**`` spans when the clause has any (the model marked its
   names; a marked declaration ``name: str = "x"`` names ``name``; no clause break falls inside one); otherwise its name-like tokens: a dotted, underscored, call (``f()``) or camel-case identifier, a
   number (when a number is expected or the clause names nothing else: ``Barack Obama, in 2008``), a word equal
   to an accepted answer, or the clause's only word (all-capital words such as ``ADK`` are
   prose unless accepted). An accepted answer's own text counts wherever it stands (``1024`` beside a backticked
   ``max_tokens``).
   A clause that is a list (items joined by ``,``, ``or``, ``and``, ``nor``, ``/``, ``|``) adds its one-word items:
   every item when all of them are one word (``name, id``), else those that are capitalised or name-like, or that
   an ``or`` joins (``Runner or App``); and its proper names of two or three capitalised words (``Joe Biden``).
   Candidates equal as names (a qualified name and its tail) or as numbers count once.
4. *Negation.* A candidate is negated when ``not``, ``never``, ``n't``, ``neither``, ``nor``, ``instead of``,
   ``rather than``, ``other than``, ``unlike`` or ``except`` stands at most two words before it (``not the `X`
   class``) with no other candidate between, or ``no`` right before it, or ``is wrong`` / ``is incorrect`` /
   ``is not (the answer)`` follows it. Negated candidates are rejected
   alternatives: ``the answer is not `X`; it is Y`` answers ``Y``.
5. *Decision.* The first clause with a candidate that is not negated decides (when it names several and is not a
   list, those the question itself mentions are dropped as restated, if that leaves one): two or more fail
   (rule ``several``); one is *the* answer. A reply whose only mention of an accepted answer is negated fails
   (rule ``negated``); a span with no candidate fails (rule ``no answer``). The answer then fails when the reply
   disclaims knowledge before or in its clause (``I don't know``, ``not sure``, ``no idea``, ``can't tell``:
   rule ``hedge``; a bare ``maybe X`` with one candidate is still one answer), or when a later clause offers an
   alternative (a clause opening with ``or``, ``maybe``, ``perhaps``, ``possibly``, ``alternatively`` that names
   another candidate, or a later clause of the span that is only another name, as in ``X? Y?``: rule
   ``alternatives``).
6. *Comparison* (:func:`same_answer`): numbers as numbers (``0.60`` = ``0.6``, ``1e-9`` = ``1e-09``, ``3.0`` =
   ``3``; ``2.5`` is not ``5``); a number never equals a name. Names after
   :func:`~deltap.checkers.extract.normalize_identifier` (case-insensitive unless asked); the qualified-tail rule
   (``google.adk.agents.BaseAgent`` for ``BaseAgent``, cut at a ``.``) only between two dotted identifiers.

**Option letters** (:func:`read_choice`, used by :class:`~deltap.checkers.choice.MultipleChoiceChecker`): a JSON
``answer`` key, or the whole reply being one letter (any case, decorated), decides at once. Otherwise every
standalone letter that is an option key is a mention: wrapped (``(C)``, ``[C]``, ``**C**``, ```C```), a marker
(``C)``, ``C.`` / ``C:`` at a line start), or a capital in prose — but a capital followed by a lowercase word is
the article or the pronoun (``A function``, ``I think``) unless that word is a verb or a conjunction (``A is``,
``A or``), and a lowercase letter counts only right after an answer cue and not followed by a word (``answer: c``,
never ``the answer is a function``). Then:

* an **echo** of the option list (two or more markers followed by their own option text, ``A) foo B) bar``) is
  dropped — and fails (rule ``echo``) when nothing else names a letter;
* mentions in the clause after an answer cue win when there are any;
* **negated** mentions (``not B``, ``B is wrong``) are dropped; if nothing is left the reply fails (``negated``);
* two or more distinct letters left fail (rule ``several``: ``A, B, C or D``, ``Answer: A or C``); exactly one is
  the choice (``A is wrong, C is right`` chooses ``C``);
* with no letter at all, a reply equal to one option's text chooses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from deltap.checkers.cues import after, before, cue
from deltap.checkers.extract import _json_answer, clean_identifier, normalize_identifier, strip_fences

__all__ = ["DEFAULT_GRAMMAR", "GRAMMARS", "Reading", "grammar_param", "read_answer", "read_choice", "same_answer"]

#: the answer grammars a string_match / multiple_choice checker reads replies by: ``grader`` (the default, issue 34:
#: :mod:`deltap.checkers.grader`), ``protocol`` (only a declared ``Answer:`` line), ``strict`` (issue 24, this module)
#: and ``lenient`` (before issue 24, :mod:`deltap.checkers.extract`)
GRAMMARS = ("grader", "protocol", "strict", "lenient")
#: the grammar a checker reads by when its params name none
DEFAULT_GRAMMAR = "grader"

#: the rules a strict reading can fail by
RULES = ("empty", "no answer", "several", "negated", "hedge", "alternatives", "echo", "wrong")

_CUE = re.compile(
    r"\b(?:(?:the\s+)?(?:final|correct|right|best)\s+)?answer\s*(?:(?:is|would\s+be|should\s+be|will\s+be)\b\s*:?|[:=]|-(?=\s))[ \t]*",
    re.I,
)
_BREAK = re.compile(
    r"[.!?](?=\s|$)|\s[-\u2013\u2014]+\s|[\u2013\u2014]|;|:(?=\s|$)|\s\(|"
    r"\b(?:because|since|which|but|although|though|whereas|while)\b",
    re.I,
)
_TOKEN = re.compile(
    r"`(?P<bt>[^`\n]+)`"
    r"|\*\*(?P<bold>[^*\n]+?)\*\*"
    r"|(?P<num>(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?!\.?\w))"
    r"|(?P<ident>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\([^()\n]*\))?)"
)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
#: a negation cue at most two words before a candidate (``not X``, ``not the `X` class``, ``isn't X``, ``no X``)
_NEG_BEFORE = cue(
    before(r"(?:\b(?:not|never|neither|nor|instead\s+of|rather\s+than|other\s+than|unlike|except)\b|n't\b)", words=2),
    before(r"\bno", end=r"\s*[`*(\[\"']*"),
)
_NEG_AFTER = cue(
    after(
        r"\s*(?:(?:is|was|would\s+be|seems)\s+(?:wrong|incorrect|false)\b|"
        r"(?:is|was)\s*n[o']t\b\s*(?:$|[.,;!]|(?:the\s+)?(?:right|correct|answer|it|one)\b)|wrong\b|incorrect\b)",
        start=r"[`*'\"\u2019\u201d)\]]*",
    )
)
_DISCLAIM = re.compile(
    r"\b(?:i\s+(?:do\s+not|don'?t|dont)\s+know|not\s+(?:sure|certain)|unsure|no\s+idea|"
    r"(?:can'?t|cannot|can\s+not)\s+(?:say|tell|determine|be\s+sure))\b",
    re.I,
)
_ALT_OPEN = re.compile(r"^[\s(\[*`'\"]*(?:or|maybe|perhaps|possibly|alternatively|otherwise)\b", re.I)
_LIST_SEP = re.compile(r"\s*(,|\bor\b|\band\b|\bnor\b|/|\|)\s*", re.I)
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+(.*)$")
_LEAD_WORDS = {"either", "both", "one", "of"}
_TITLE = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*){1,2}")
#: one-word list items that are interjections or pronouns, never names (``No, it is X``; ``Well, X``)
_NOT_NAMES = {
    "yes",
    "no",
    "ok",
    "okay",
    "sure",
    "well",
    "so",
    "hmm",
    "note",
    "also",
    "then",
    "here",
    "there",
    "it",
    "this",
    "that",
    "thanks",
    "hi",
    "hello",
    "indeed",
    "correct",
    "right",
    "wrong",
    "true",
    "false",
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "actually",
    "basically",
}
_QUOTES = "`'\"*\u2018\u2019\u201c\u201d"


@dataclass(frozen=True)
class Reading:
    """What a strict reading of a reply found.

    Args:
        answer: The one answer the reply commits to (a name, a number or an option key), or ``None``.
        rule: ``ok`` when ``answer`` is set, else the rule that failed the reply (one of :data:`RULES`).
        detail: Human-readable explanation naming the rule.
        candidates: The candidates the deciding clause named (for the detail of a failure).
    """

    answer: str | None
    rule: str
    detail: str
    candidates: tuple[str, ...] = field(default=())


# -- identifiers -------------------------------------------------------------------------------------------------


def as_number(text: str) -> float | None:
    """``text`` as a number when it is one (after decorations are removed), else ``None``."""
    s = clean_identifier(text)
    return float(s) if _NUMBER.fullmatch(s) else None


def same_answer(candidate: str, expected: str, case_sensitive: bool = False, qualified: str = "either") -> bool:
    """Whether a candidate names the expected answer (see the module docstring, rule 6)."""
    cn, en = as_number(candidate), as_number(expected)
    if cn is not None or en is not None:
        return cn is not None and en is not None and cn == en
    norm = clean_identifier if case_sensitive else normalize_identifier
    c, e = norm(candidate), norm(expected)
    if not c or not e:
        return False
    if c == e:
        return True
    if qualified == "either" and _DOTTED.fullmatch(c) and _DOTTED.fullmatch(e):
        return c.endswith("." + e) or e.endswith("." + c)
    return False


def _code_like(token: str) -> bool:
    if "_" in token or "." in token or "(" in token:
        return True
    if token.isupper():  # ADK, LLM, API: prose unless accepted
        return False
    return any(ch.isupper() for ch in token[1:])


@dataclass
class _Cand:
    text: str
    start: int
    end: int
    negated: bool = False


_DECLARED = re.compile(r"\s*([A-Za-z_][\w.]*)\s*(?::\s*[^=]+?)?\s*(?:=\s*.+)?\s*")


def _declared(text: str) -> str:
    """The name of a marked declaration: ``name: str`` / ``name: str = "x"`` / ``name=...`` name ``name``."""
    m = _DECLARED.fullmatch(text)
    return m.group(1) if m and (":" in text or "=" in text) else text


def _clauses(span: str) -> list[str]:
    code = [(m.start(), m.end()) for m in _TOKEN.finditer(span) if m.group("bt") or m.group("bold")]
    out, last = [], 0
    for m in _BREAK.finditer(span):
        if any(a < m.start() < b for a, b in code):  # never inside a backticked span (`name: str`)
            continue
        out.append(span[last : m.start()])
        last = m.end()
    out.append(span[last:])
    return [c for c in out if c.strip()]


def _list_items(clause: str) -> list[tuple[str, str]]:
    """``(separator before, item)`` for a clause that is a list; ``[]`` when it is not one."""
    parts = _LIST_SEP.split(clause)
    if len(parts) < 3:
        return []
    items = [("", parts[0])] + [(parts[i].lower(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    return [(sep, item.strip()) for sep, item in items if item.strip()]


def _one_word(item: str) -> str | None:
    words = [w for w in item.strip(" " + _QUOTES + ".,;:!?()[]").split() if w.lower() not in _LEAD_WORDS]
    if len(words) != 1:
        return None
    w = words[0].strip(_QUOTES + ".,;:!?")
    return w or None


def _clause_candidates(
    clause: str, accepted: Callable[[str], bool], spots: Sequence[re.Pattern[str]] = (), numbers: bool = True
) -> list[_Cand]:
    tokens = list(_TOKEN.finditer(clause))
    marked = [
        _Cand(_declared(m.group("bt") or m.group("bold")), m.start(), m.end())
        for m in tokens
        if m.group("bt") or m.group("bold")
    ]
    word = clause.strip().strip(_QUOTES + ".,;:!?\u2026").strip()
    nums: list[_Cand] = []
    if marked:
        cands = marked
    elif word and not re.search(r"\s", word):  # the clause is one word (``ans-a``, ``--budget``): it is the candidate
        start = clause.find(word)
        cands = [_Cand(word, start, start + len(word))]
    else:
        cands = []
        for m in tokens:
            if m.group("num"):
                nums.append(_Cand(m.group("num"), m.start(), m.end()))
            elif (t := m.group("ident")) and (_code_like(t) or accepted(t)):
                cands.append(_Cand(t, m.start(), m.end()))
    for spot in spots:  # an accepted answer, even unmarked or not one token (``ans-a``, ``1024`` beside `max_tokens`)
        for m in spot.finditer(clause):
            if not any(c.start < m.end() and m.start() < c.end for c in cands):
                cands.append(_Cand(m.group(0), m.start(), m.end()))
    # numbers are candidates when a number is expected, or when the clause names nothing else ("in 2008")
    cands += (
        [n for n in nums if not any(c.start < n.end and n.start < c.end for c in cands)] if numbers or not cands else []
    )
    items = _list_items(clause)
    if items:
        words = [(sep, _one_word(item), item) for sep, item in items]
        bare_list = all(w for _, w, _ in words)
        pos = 0
        for sep, w, item in words:
            at = clause.find(item, pos)
            pos = at + len(item) if at >= 0 else pos
            if not w and _TITLE.fullmatch(item.strip(_QUOTES + ".,;:!?")):  # a proper name: ``Joe Biden``
                w = item.strip(_QUOTES + ".,;:!?")
            if not w or w.lower() in _NOT_NAMES or item.lower().startswith(("not ", "no ")):
                continue
            if bare_list or sep == "or" or w[:1].isupper() or _code_like(w) or accepted(w) or as_number(w) is not None:
                begin = clause.find(w, at if at >= 0 else 0)
                if not any(c.start <= begin < c.end for c in cands):
                    cands.append(_Cand(w, begin, begin + len(w)))
    cands.sort(key=lambda c: c.start)
    prev_end = 0
    for c in cands:
        if _NEG_BEFORE.search(clause[prev_end : c.start]) or _NEG_AFTER.search(clause[c.end :]):
            c.negated = True
        prev_end = c.end
    return cands


def _distinct(cands: Iterable[_Cand], case_sensitive: bool) -> list[str]:
    out: list[str] = []
    for c in cands:
        if not any(same_answer(c.text, o, case_sensitive) for o in out):
            out.append(c.text)
    return out


def _answer_span(reply: str) -> tuple[str, str, str]:
    """``(lead, span, rest)``: the text before the answer span, the span, and everything after it."""
    js = _json_answer(reply)
    if js is not None:
        return "", js, ""
    body = strip_fences(reply).strip()
    cue = _CUE.search(body)
    if cue:
        after = body[cue.end() :]
        line, nl, rest = after.partition("\n")
        if not line.strip() and nl:
            stripped = rest.lstrip("\n")
            line, _, rest = stripped.partition("\n")
        return body[: cue.start()], line, rest
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if line.strip():
            return "", line, "\n".join(lines[i + 1 :])
    return "", "", ""


def _bullets(text: str) -> list[str]:
    out: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            if out:
                break
            continue
        m = _BULLET.match(line)
        if not m:
            break
        out.append(m.group(1))
    return out


def _bare_lines(text: str) -> list[str]:
    """The leading run of lines that each hold one bare word (``BaseAgent\nLlmAgent\nRunner``: a list without
    bullets), up to the first blank line or the first line that is more than one word."""
    out: list[str] = []
    for line in text.split("\n"):
        word = clean_identifier(line)
        if not word or " " in word:
            break
        out.append(word)
    return out


def read_answer(
    reply: str | None,
    accepted: Sequence[str],
    case_sensitive: bool = False,
    qualified: str = "either",
    question: str = "",
) -> Reading:
    """Read the one answer a reply commits to, by the strict grammar (module docstring, rules 1-5).

    Args:
        reply: The model's raw reply.
        accepted: The accepted answers (a word equal to one of them is a candidate even in prose).
        case_sensitive: Compare names with case.
        qualified: ``either`` or ``exact`` (the qualified-tail rule, see :func:`same_answer`).
        question: The question asked; names it mentions are restated, not answered, when the clause names
            another candidate (``The mandatory parameter of `BaseAgent` is `name```).

    Returns:
        A :class:`Reading`; ``answer`` is set only when exactly one answer was found and no rule failed the reply.
    """
    if not reply or not reply.strip():
        return Reading(None, "empty", "empty answer")

    def is_accepted(word: str) -> bool:
        return any(same_answer(word, a, case_sensitive, qualified) for a in accepted)

    flags = 0 if case_sensitive else re.I
    spots = [
        re.compile(r"(?<![\w.-])" + re.escape(clean_identifier(a)) + r"(?![\w-]|\.\w)", flags)
        for a in accepted
        if clean_identifier(a)
    ]

    numeric = any(as_number(a) is not None for a in accepted)

    def candidates(clause: str) -> list[_Cand]:
        return _clause_candidates(clause, is_accepted, spots, numeric)

    asked = [c.text for c in _clause_candidates(question, lambda w: False)] if question else []

    def restated(name: str) -> bool:
        return any(same_answer(name, q, case_sensitive, "exact") for q in asked)

    lead, span, rest = _answer_span(reply)
    if span.strip() and _BULLET.match(span):
        bullets = _bullets(span + "\n" + rest)
        if len(bullets) >= 2:
            firsts = [cs[0].text for b in bullets if (cs := [c for c in candidates(b) if not c.negated])]
            names = _distinct([_Cand(t, 0, 0) for t in firsts], case_sensitive)
            if len(names) >= 2:
                return Reading(None, "several", f"several: a list of {len(names)} candidates {names[:6]}", tuple(names))
        span = bullets[0] if bullets else span
    elif not candidates(span) and span.rstrip().endswith(":"):
        bullets = _bullets(rest)
        if len(bullets) >= 2:
            names = _distinct([c for b in bullets for c in candidates(b)[:1]], case_sensitive)
            if len(names) >= 2:
                return Reading(None, "several", f"several: a list of {len(names)} candidates {names[:6]}", tuple(names))
        if bullets:
            span = bullets[0]
    else:
        lines = _bare_lines(span + "\n" + rest)
        if len(lines) >= 2:
            names = _distinct([c for line in lines for c in candidates(line)[:1]], case_sensitive)
            if len(names) >= 2:
                return Reading(
                    None, "several", f"several: one name per line, {len(names)} candidates {names[:6]}", tuple(names)
                )
    clauses = _clauses(span)
    negated: list[str] = []
    for i, clause in enumerate(clauses):
        cands = candidates(clause)
        positive = _distinct([c for c in cands if not c.negated], case_sensitive)
        negated += [c.text for c in cands if c.negated]
        fresh = [p for p in positive if not restated(p)]
        if len(positive) >= 2 and 0 < len(fresh) < len(positive) and not _list_items(clause):
            positive = fresh  # the names the question itself mentions are restated, not answered
        if not positive:
            continue
        if _DISCLAIM.search(lead + " " + " ".join(clauses[: i + 1])):
            return Reading(
                None,
                "hedge",
                f"hedge: the reply disclaims knowing the answer before naming {positive[:6]}",
                tuple(positive),
            )
        if len(positive) >= 2:
            joined = " or " if re.search(r"\bor\b", clause, re.I) else ", "
            return Reading(
                None,
                "several",
                f"several: the answer names {len(positive)} candidates ({joined.strip()}) {positive[:6]}",
                tuple(positive),
            )
        answer = positive[0]
        for c in clauses[i + 1 :]:  # a later clause of the span that is only another name: "X? Y?", "X. Y."
            word = clean_identifier(c)
            if word and " " not in word and not same_answer(word, answer, case_sensitive):
                if [o for o in candidates(c) if not o.negated]:
                    return Reading(
                        None,
                        "alternatives",
                        f"alternatives: after {answer!r} the reply offers {[word]}",
                        (answer, word),
                    )
        later = clauses[i + 1 :] + _clauses(rest)
        for c in later:
            if _ALT_OPEN.search(c):
                others = [
                    o.text for o in candidates(c) if not o.negated and not same_answer(o.text, answer, case_sensitive)
                ]
                if others:
                    return Reading(
                        None,
                        "alternatives",
                        f"alternatives: after {answer!r} the reply offers {others[:4]}",
                        (answer, *others[:4]),
                    )
        return Reading(answer, "ok", f"answer {answer!r}", (answer,))
    if any(is_accepted(n) or any(same_answer(n, a, case_sensitive, qualified) for a in accepted) for n in negated):
        return Reading(None, "negated", f"negated: the reply rejects {negated[:4]}", tuple(negated))
    shown = span.strip()[:80]
    return Reading(None, "no answer", f"no answer: no candidate name in the answer span {shown!r}", tuple(negated))


# -- option letters ----------------------------------------------------------------------------------------------

_LETTER = re.compile(r"(?<![\w'\u2019\\-])([A-Za-z])(?![\w'\u2019-])")
_CHOICE_CUE = re.compile(r"\b(?:answer|option|choice)\s*(?:is|would\s+be|should\s+be|:|=)?\s*[:\s]*", re.I)
#: words after a capital letter that make it an option letter, not an article or a pronoun
_VERBISH = {
    "is",
    "was",
    "would",
    "seems",
    "looks",
    "appears",
    "and",
    "or",
    "nor",
    "are",
    "because",
    "since",
    "as",
    "but",
    "then",
    "matches",
    "fits",
    "describes",
    "best",
    "correctly",
    "can",
    "could",
    "should",
    "will",
    "might",
    "may",
    "isn't",
    "wasn't",
    "only",
    "alone",
    "too",
    "also",
    "here",
    "instead",
}


@dataclass
class _Mention:
    key: str
    start: int
    end: int
    form: str  # wrapped | marker | bare | cue
    negated: bool = False
    echo: bool = False


def _choice_mentions(
    body: str, options: Mapping[str, str] | None, key_of: Callable[[str], str | None]
) -> list[_Mention]:
    cue_ends = {m.end() for m in _CHOICE_CUE.finditer(body)}
    out: list[_Mention] = []
    for m in _LETTER.finditer(body):
        letter, s, e = m.group(1), m.start(), m.end()
        key = key_of(letter)
        if key is None:
            continue
        before, after = body[max(0, s - 2) : s], body[e : e + 2]
        wrapped = (
            (before.endswith(("(", "[")) and after.startswith((")", "]")))
            or (before == "**" and (after == "**" or body[e : e + 3] in (".**", ")**")))
            or (before.endswith("`") and after.startswith("`"))
        )
        line_start = body.rfind("\n", 0, s) + 1
        at_line_start = not body[line_start:s].strip(" \t([*")
        marker = not wrapped and (
            after.startswith(")") or (at_line_start and after[:1] in (".", ":") and body[e + 1 : e + 2] in (" ", "\t"))
        )
        wrappers = "([*`\"' \t"
        j = s
        while j > 0 and body[j - 1] in wrappers:
            j -= 1
        after_cue = j in cue_ends or s in cue_ends
        following = re.match(r"[)\].:*`\"']*\s+([A-Za-z']+)", body[e:])
        next_word = following.group(1) if following and not re.match(r"[)\].:*`\"']*\s*\n", body[e:]) else None
        article = next_word is not None and next_word[0].islower() and next_word.lower() not in _VERBISH
        if letter.islower():
            if not (after_cue and not article and not marker):
                continue
            form = "cue"
        elif wrapped:
            form = "wrapped"
        elif marker:
            form = "marker"
        else:
            if article:  # "A function", "I think": the article or the pronoun, after a cue too
                continue
            form = "cue" if after_cue else "bare"
        mention = _Mention(key, s, e, form)
        if marker and options:
            text = normalize_identifier(str(options.get(key, "")))
            following_text = normalize_identifier(body[e + 1 : e + 1 + len(str(options.get(key, ""))) + 4])
            # its own option text follows, or the start of it where the reply was cut off (``B. Global`` at the end)
            cut = normalize_identifier(body[e + 1 :])
            mention.echo = bool(text) and (
                following_text.startswith(text[: max(1, min(len(text), 24))])
                or (len(cut) >= 3 and text.startswith(cut))
            )
        out.append(mention)
    prev = 0
    for mt in out:
        gap = body[prev : mt.start]
        clause_gap = re.split(r"[.;!?\n]\s|,\s*(?=[A-Z(])", gap)[-1]
        if _NEG_BEFORE.search(clause_gap) or _NEG_AFTER.search(body[mt.end :]):
            mt.negated = True
        prev = mt.end
    return out


def read_choice(reply: str | None, options: Mapping[str, str] | Iterable[str]) -> Reading:
    """Read the one option a reply chooses, by the strict grammar (module docstring, *Option letters*).

    Args:
        reply: The model's raw reply.
        options: ``letter -> text`` (or only the letters).

    Returns:
        A :class:`Reading` whose ``answer`` is the option key, or ``None`` with the rule that failed the reply.
    """
    mapping = options if isinstance(options, Mapping) else None
    keys = list(options.keys()) if isinstance(options, Mapping) else list(options)
    by_upper = {str(k).upper(): k for k in keys}

    def key_of(letter: str) -> str | None:
        return by_upper.get(letter.upper())

    if not reply or not reply.strip():
        return Reading(None, "empty", "empty answer")
    js = _json_answer(reply)
    if js is not None:
        k = key_of(js.strip().strip("()."))
        if k:
            return Reading(k, "ok", f"option {k}", (k,))
    body = strip_fences(reply).strip()
    bare = body.strip(" \t\n()[]" + _QUOTES + ".,;:!?\u2026")
    if len(bare) == 1 and key_of(bare):
        k = key_of(bare)
        return Reading(k, "ok", f"option {k}", (str(k),))
    mentions = _choice_mentions(body, mapping, key_of)
    echo_keys = {m.key for m in mentions if m.echo}
    echoed = len(echo_keys) >= 2
    if echoed:
        mentions = [m for m in mentions if not m.echo]
    # Mentions in the clause right after an answer cue win.
    scoped: list[_Mention] = []
    for hit in _CHOICE_CUE.finditer(body):
        brk = _BREAK.search(body, hit.end() + 1)
        end = brk.start() if brk else len(body)
        nl = body.find("\n", hit.end())
        end = min(end, nl) if nl >= 0 else end
        scoped += [m for m in mentions if hit.end() <= m.start < end and m not in scoped]
    pool = scoped if scoped else mentions
    positive = list(dict.fromkeys(str(m.key) for m in pool if not m.negated))
    negated = list(dict.fromkeys(str(m.key) for m in pool if m.negated))
    if len(positive) >= 2:
        return Reading(None, "several", f"several: the reply names options {', '.join(positive)}", tuple(positive))
    if len(positive) == 1:
        return Reading(positive[0], "ok", f"option {positive[0]}", (positive[0],))
    if negated:
        return Reading(
            None,
            "negated",
            f"negated: the reply rejects option(s) {', '.join(negated)} and names no other",
            tuple(negated),
        )
    if echoed:
        return Reading(
            None,
            "echo",
            f"echo: the reply repeats the option list ({', '.join(sorted(map(str, echo_keys)))}) without choosing",
            (),
        )
    if mapping:
        norm = normalize_identifier(body)
        hits = [str(k) for k, v in mapping.items() if normalize_identifier(str(v)) == norm]
        if len(hits) == 1:
            return Reading(hits[0], "ok", f"option {hits[0]} (its text)", (hits[0],))
    return Reading(None, "no answer", "no answer: no option letter in the reply", ())


def grammar_param(value: object, kind: str) -> str:
    """Validate a checker's ``grammar`` parameter (one of :data:`GRAMMARS`)."""
    from deltap.errors import DeltapError

    g = str(value)
    if g not in GRAMMARS:
        raise DeltapError(f"{kind}: grammar must be one of {', '.join(GRAMMARS)}, got {value!r}")
    return g
