"""The one-candidate fallback: a reading for replies no rule of the grader could read (issue 34, session 13).

When the grader finds no answer in a ``string_match`` reply (rule ``no answer``: every name it saw was set aside as
the question's own, a setting, a context, or it saw none), a careful grader still passes a reply that names the
accepted answer as its only candidate, with nothing around it that takes it back. That is what this reading does,
and nothing more:

* **Candidates of the answer's shape.** The shape is the accepted answer's: a number (for a number question), a
  CamelCase name (a class: ``SequentialAgent``), or a lower-case identifier written as code usually is (snake_case,
  dotted or called: ``after_agent_callback``, ``json.dumps``). A plain English word (``quote``, ``model``) has no
  shape a fallback can trust, so such answers get no fallback. The candidates are the reply's tokens of that shape,
  in prose and in code (for an identifier, also every keyword argument, ``name=``, whatever its shape: a parameter
  is a candidate for a parameter answer), minus the question's own words and numbers, builtins, constants, dunders
  and file names.
* **Exactly one, and it is the answer.** Every candidate names the accepted answer (compared as the grader compares
  names, case rules included): a reply that names two callbacks, or two numbers, is not read.
* **Nothing takes it back.** No disclaimer, refusal, retraction, ``either`` / ``both``, or table in the reply; no
  negation, rejection, example cue, alternative (``or``, ``alternatively``, ``equally``, ``also works``) or
  weighing word (``instead``, ``rather``, ``older``, ``deprecated``) in the candidate's sentence; the sentence is no
  question.

Measured (``docs/notes/issue-34.md``, session 13): on the rules of session 13 no right reply of the labelled corpus is
unreadable, so the fallback changes no verdict there; on the rules each blind set was measured on, it would have
read 3 of the 5 right replies those rules left unreadable (a YAML value, a REPL's printed number, a result comment)
and passed none of the wrong ones; applied to every string-match reply of the corpus, unreadable or not, it passes 0
of 978 wrong replies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from deltap.checkers.cues import DISCLAIM, EITHER, EXAMPLE_BEFORE, NEG_BEFORE, REFUSAL, REJECT_AFTER, RETRACT
from deltap.checkers.reply import BUILTINS, number_value

__all__ = ["one_candidate", "shape"]

_CAMEL = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?!\w)")
_FILE = re.compile(r".*\.(?:py|pyi|md|rst|txt|html?|ipynb|json|ya?ml|toml|cfg|ini)", re.I)
_CONSTANTS = frozenset({"None", "True", "False"})
#: words in the candidate's sentence that take it back, weigh it or offer another (conservative: any of them)
_AROUND = re.compile(
    r"\b(?:not|no|never|avoid|deprecated|legacy|older|old|wrong|incorrect|instead|rather|equally|just\s+as|"
    r"also\s+works?|does\s+the\s+same|alternatively|or)\b|n't\b",
    re.I,
)
_KEYWORD = re.compile(r"[ \t]*=(?!=)")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)
_STOPS = ".!?\n;"


def shape(answer: str) -> str:
    """The shape of an accepted answer: ``number``, ``class`` (CamelCase), ``identifier`` (snake_case or dotted) or
    ``word`` (a plain word: no fallback)."""
    if number_value(answer) is not None:
        return "number"
    tail = answer.rsplit(".", 1)[-1]
    if _CAMEL.fullmatch(tail):
        return "class"
    return "identifier" if "_" in tail or "." in answer else "word"


def _candidates(text: str, kind: str, question: str) -> list[tuple[int, int, str]]:
    """The reply's tokens of shape ``kind`` (start, end, text), the question's own words and numbers aside."""
    if kind == "number":
        asked = {number_value(n) for n in _NUMBER.findall(question)}
        return [
            (m.start(), m.end(), m.group(0))
            for m in _NUMBER.finditer(text)
            if number_value(m.group(0)) is not None and number_value(m.group(0)) not in asked
        ]
    words = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", question)}
    out = []
    for m in _IDENT.finditer(text):
        token = m.group(0)
        tail = token.rsplit(".", 1)[-1]
        if tail.lower() in words or token in BUILTINS or token in _CONSTANTS or _FILE.fullmatch(token):
            continue
        if re.fullmatch(r"__\w+__", tail):
            continue
        camel = bool(_CAMEL.fullmatch(tail))
        keyword = bool(_KEYWORD.match(text, m.end()))  # ``name=``: a parameter, whatever its shape
        if (kind == "class" and camel) or (
            kind == "identifier" and not camel and ("_" in tail or "." in token or keyword)
        ):
            out.append((m.start(), m.end(), token))
    return out


def one_candidate(text: str, accepted: Sequence[str], question: str, same: Callable[[str, str], bool]) -> str | None:
    """The accepted answer ``text`` names as its one candidate, with nothing around it that takes it back (the module
    docstring); ``None`` otherwise. ``same(name, answer)``: ``name`` names the accepted ``answer``."""
    kinds = {shape(a) for a in accepted} - {"word"}
    if len(kinds) != 1:
        return None
    if any(p.search(text) for p in (DISCLAIM, REFUSAL, RETRACT, EITHER, _TABLE_ROW)):
        return None
    found = _candidates(text, kinds.pop(), question)
    if not found or not all(any(same(token, a) for a in accepted) for _, _, token in found):
        return None
    if len({number_value(t) if number_value(t) is not None else t.lower() for _, _, t in found}) != 1:
        return None
    for s, e, _ in found:
        start = max(text.rfind(c, 0, s) for c in _STOPS) + 1
        stop = min([i for i in (text.find(c, e) for c in ".!?\n") if i >= 0] or [len(text)])
        if text[stop : stop + 1] == "?" or _AROUND.search(text[start:stop]):
            return None
        if NEG_BEFORE.search(text[start:s]) or REJECT_AFTER.match(text[e : e + 80]):
            return None
        if EXAMPLE_BEFORE.search(text[max(start, s - 30) : s]):
            return None
    return found[0][2]
