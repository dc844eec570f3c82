"""The ``grader`` answer grammar: read a reply the way a careful grader would (issue 34).

The default grammar of the ``string_match`` and ``multiple_choice`` checkers. The full rules, each with an example,
are in ``docs/answer-grammar.md``; in short:

1. **Clean** (:func:`~deltap.checkers.reply.clean_reply`): chat-template residue and reasoning blocks go.
2. **A declared answer first, strictly**: a JSON ``answer`` field or a final ``Answer: …`` line (the answer protocol,
   :mod:`deltap.solvers.prompts`) is the answer; it must name exactly one answer. With ``grammar="protocol"`` only a
   declared answer counts (a reply without one is *unreadable*).
3. **Otherwise the sentence that asserts the answer**: the first mention (:func:`~deltap.checkers.reply.mentions`)
   that is not restated from the question, not negated before it (``not X``, ``avoid X``, ``instead of X``, a
   ``While X …,`` clause) and not rejected after it (``X won't help``, ``X is not in …``, ``X is deprecated``,
   ``X doesn't exist``, ``X is not what you want``, ``X should be avoided``). Lead-ins, headings, bold labels and
   restated questions name nothing, so they are passed over. Code is read as code: a call names its function (and,
   when the function is the one the question names, its keyword arguments), a decorator its function, an import the
   names it brings in, ``name=value`` its parameter and its value. Reasoning is read by its **conclusion** (``So the
   function is X``, ``Therefore X``, ``That makes it X``, ``which leaves X``); a **retraction** (``X. Hmm, actually
   no, …``, ``X — wait, that's wrong``) takes the answer back and the reply is read from there on; a **Markdown
   table** is read as a table (:mod:`deltap.checkers.tables`: the prose around it, else the row it marks right, the
   ``Function`` row, the question's parameter row, its one row; else its rows are a list).
4. **Fails**: a disclaimer up to the answer (``I'm not sure``, ``I don't know``: ``hedge``); another candidate joined
   to the answer (``X or Y``, ``X, Y``, a bullet list, one name per line: ``several``) or offered after it
   (``Or maybe Y``, ``it could be Y``, an equal alternative: ``Y works just as well``, ``either one will work``:
   ``alternatives``); an answer taken back with nothing after it (``retracted``); a qualifier that contradicts the question or its gold
   documents (``pickle.dumps`` for ``json.dumps``: ``contradiction``); the reference only negated or rejected
   (``negated`` / ``rejected``); another answer (``wrong``); nothing to read (``unreadable``: empty, an echo of the
   options, no candidate at all).
5. **Multiple choice**: a declared letter; else a conclusion (``so it's A``, ``which leaves B``, ``the answer is
   C``); else the letter (or option text) the reply opens with; else the one option the first sentence names.
   Explanations of the other options after the choice are explanations; a hedge between options fails; a letter
   whose text is another option's (``B) wrap`` for ``A: wrap``) is a ``contradiction``.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import importlib.util
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from deltap.checkers.cues import (
    DISCLAIM,
    EITHER,
    EXAMPLE_BEFORE,
    NEG_BEFORE,
    REFUSAL,
    REJECT_AFTER,
    RETRACT,
    UNKNOWING_BEFORE,
    after,
    before,
    cue,
)
from deltap.checkers.fallback import one_candidate
from deltap.checkers.reply import (
    BUILTINS,
    Mention,
    Sentence,
    clean_reply,
    declared_answer,
    mentions,
    number_value,
    sentence_end,
    sentence_of,
    sentences,
)
from deltap.checkers.tables import ANSWER_HEADER, LABEL_ROW, Row, Table, cell_mark, tables, without_tables

__all__ = ["UNREADABLE_RULES", "Context", "Reading", "read_identifier", "read_option"]

#: the rules of a reply the grader could not read (no answer located in it)
UNREADABLE_RULES = frozenset({"empty", "no answer", "echo", "no declared answer"})


@dataclass(frozen=True)
class Reading:
    """What the grader read of a reply: ``answer`` (the one answer, or ``None``), the ``rule`` (``ok`` or why it
    failed), a human-readable ``detail``, the ``candidates`` it weighed, and whether it was read from the reply's
    ``declared`` answer (the answer protocol's line, a JSON ``answer`` field) rather than by the grammar."""

    answer: str | None
    rule: str
    detail: str
    candidates: tuple[str, ...] = ()
    declared: bool = False

    @property
    def unreadable(self) -> bool:
        return self.rule in UNREADABLE_RULES


#: a double negative is a commitment (``There's no reason not to use X``, ``you can't go wrong with X``)
_DOUBLE_NEG = cue(
    before(
        r"\b(?:no\s+reason\s+(?:not\s+to|to\s+avoid)|(?:can'?t|cannot|can\s+not)\s+go\s+wrong\s+with|"
        r"(?:don'?t|do\s+not|never)\s+hesitate\s+to|nothing\s+wrong\s+with)\b",
        words=2,
    )
)
#: a name offered as the tempting choice and then turned down (``You might reach for `X`, but …``)
_TEMPTED = cue(
    before(
        r"\b(?:(?:might|may|could|would)\s+(?:be\s+tempted\s+to\s+(?:use|call|reach\s+for)|reach\s+for|think\s+of|"
        # ``You might think it's `X`, but …`` (session 13, grader9)
        r"(?:think|expect|assume|guess)\s+(?:that\s+)?(?:it's|it\s+is|it\s+would\s+be|it'd\s+be|the\s+answer\s+is)|"
        r"want\s+to\s+(?:use|call))|(?:it's|it\s+is)\s+tempting\s+to\s+(?:use|call|reach\s+for|say|pick|answer|go\s+with))",
        words=2,
    )
)
_BUT = re.compile(r"\b(?:but|however)\b", re.I)
#: a name the reader will come across, then set aside in the same sentence (``You'll see `X` on `Base`, but that's
#: really an internal hook``; session 13, grader10)
_SEEN = cue(
    before(r"\b(?:you'll|you\s+will|you\s+may|you\s+might)\s+(?:also\s+)?(?:see|notice|come\s+across)", words=2)
)
_SET_ASIDE_BUT = re.compile(
    r"\bbut\s+(?:that|it|this)(?:'s|\s+is)\s+(?:really|actually|only|just)\b",
    re.I,
)
_BUT_AFTER = cue(after(r"(?:\([^)]*\))?\s*(?:,\s*|\s+|\s*[\u2014\u2013-]\s*)(?:but|however)\b"))
_CONTRAST_OPEN = re.compile(
    r"^\W*(?:while|whereas|although|though|unlike|instead\s+of|rather\s+than|besides|apart\s+from|except\s+for)\b"
    r"[^,]*$",
    re.I,
)
_ALT_CUE = cue(
    before(
        r"(?:\bor\b(?!\s+with\b)|\beither\b|\bmaybe\b|\bperhaps\b|\bpossibly\b|\balternatively\b|\botherwise\b|"
        r"\b(?:could|might|may)\s+(?:also\s+)?be\b|\bor\s+else\b)",
        words=2,
    ),
    # ``or`` in a reply in another language, right between two names (```X` o `Y` ``, ``X ou Y``, ``X oder Y``)
    r"^[`*'\")\]]*\s+(?:o|ou|oppure|oder)\s+[`*'\"(\[]*$",
)
_OWN = cue(before(r"\b(?:your|my|our)\s+(?:own\s+)?(?:[\w-]+\s+){0,2}", end=r"[`*'\"]*"))
#: a builtin type named as a method's owner in prose (``the string's split method``, ``the list's sum``, ``the split
#: method of str``, ``call split on the string``): the qualifier of a name the reply writes without one
_TYPE_WORDS = r"(?P<type>str|string|list|dict|dictionary|bytes|bytearray|set|tuple|int|float)"
_TYPE_OWNER_BEFORE = cue(before(r"\b" + _TYPE_WORDS + r"(?:'s|\s+object's|\s+type's)", end=r"\s+[`*'\"]*"))
_TYPE_OWNER_AFTER = cue(
    after(
        # ``call split on the string`` (session 13, grader10)
        r"(?:\(\))?[`*'\"]*\s+(?:method\s+of|on)\s+(?:the\s+|a\s+|an\s+|your\s+)?[`*]*" + _TYPE_WORDS + r"\b",
        start=r"[`*'\"]*",
    )
)
#: an answer cue in the clause before a mention: ``but the right choice is `X```, ``what you want is `X```
_ANSWER_CUE = cue(
    before(
        r"\b(?:(?:the\s+)?(?:right|correct|best|proper|real)\s+(?:choice|answer|one|function|method|class|option|tool|"
        r"parameter|argument)\s+(?:here\s+)?(?:is|would\s+be)|(?:the\s+)?answer\s+is|you\s+(?:want|need)|what\s+you\s+"
        r"(?:want|need)(?:\s+(?:in|here|for|to|with|now)\b[^.;:\n`*]{0,40}?)?\s+is|(?:one|function|method|class|parameter)\s+you\s+want\s+(?:here\s+)?is|"
        # ``The model parameter is called `llm```: the name it is called by (session 13)
        r"\b(?:is|are)\s+(?:called|named))",
        end=r"\W*",
    )
)
_ALT_AFTER = re.compile(
    r"^[^.;!?\n]{0,40}?\b(?:might|could|may)\s+(?:also\s+)?(?:be|work|do)\b(?!\s+(?:larger|smaller|slower|faster))",
    re.I,
)
#: an equal alternative after another name (``Y works just as well``, ``Y also works``, ``Y is another option``)
_EQUAL_AFTER = re.compile(
    r"^[^.;!?\n]{0,60}?\b(?:(?:also\s+)?(?:works?|will\s+work|would\s+(?:also\s+)?work|does|will\s+do|would\s+(?:also\s+)?do)"
    r"(?:\s+(?:it|the\s+(?:job|trick)))?\s+(?:just\s+as\s+well|equally(?:\s+well)?|as\s+well|too|the\s+same(?:\s+(?:job|thing))?"
    r"(?:\s+(?:equally\s+well|just\s+as\s+well))?(?=\s*(?:[.;!,]|$)))|also\s+(?:works?|does\s+(?:it|the\s+(?:job|trick))|will\s+do)|"
    r"(?:is|are|would\s+be)\s+(?:just\s+as|equally)\s+(?:good|fine|accurate|valid|correct|right|efficient|fast)|"
    r"(?:is|are)\s+(?:another|an\s+equally\s+good|also\s+an?|an\s+equivalent)\s+(?:option|choice|way|alternative|answer)|"
    r"(?:is|are)\s+equivalent\b|(?:is|are)\s+(?:just\s+as|equally)\s+(?:involved|responsible|relevant|important|"
    r"applicable|needed|necessary|likely|useful|suitable|appropriate)\b|"
    r"(?:is|are|would\s+be|seems?)\s+(?:also|equally)\s+(?:defensible|valid|acceptable|reasonable|plausible|arguable|"
    r"correct|right|fine|an?\s+(?:valid|reasonable|good|fine|defensible|possible|acceptable)\s+(?:answer|choice|option|"
    r"pick))\b|(?:is|are)\s+(?:defensible|arguable|plausible)\s+(?:too|as\s+well)\b)",
    re.I,
)
#: an equal alternative announced before another name (``you could just as well call Y``, ``you could equally use Y``)
_EQUAL_BEFORE = cue(
    before(
        r"\b(?:could|can|might|may)\s+(?:just\s+as\s+well|equally(?:\s+well)?)\s+(?:use|call|pick|go\s+with|do)\b",
        words=2,
    ),
    before(r"\b(?:equivalently|equally)", end=r"\s*,?[\s`*]*"),
)

#: the alternative is offered as worse (``Y also works, but it sorts everything``): not an equal alternative
_DOWNGRADE = re.compile(
    r"\b(?:but|though|although|except|however|slower|less\s+\w+|only\s+(?:if|when)|not\s+as|whereas)\b", re.I
)


def _called_equal(after: str) -> bool:
    """The text after a name calls it an equal alternative (:data:`_EQUAL_AFTER`) and does not then downgrade it
    (:data:`_DOWNGRADE`: ``Y also works, but it sorts everything``)."""
    equal = _EQUAL_AFTER.match(after)
    return equal is not None and not _DOWNGRADE.search(after[equal.end() :])


#: the other name is the same function (``or `insort_right`, which is the same function``)
_SAME_THING = re.compile(
    r"^[^.;!?\n]{0,30}?\b(?:which\s+is|is|being)\s+(?:just\s+)?(?:the\s+same\s+(?:function|thing|method|class|object|"
    r"call)|an?\s+alias|another\s+name)",
    re.I,
)
#: a sentence scoped to another situation (``For numpy arrays, …``, ``If you write to a file, …``)
_SCOPED = re.compile(
    r"^\W*(?:(?:and|but|so|or|also|though)\s+)?(?:for|if|when|with|in|on|on\s+a|under)\s+[^,.;\n]{2,60},", re.I
)
#: the clause after a name refers back to another situation (``… so `list()` may be simpler in that case``)
_IN_THAT_CASE = re.compile(r"^[^.;!?\n]{0,60}?\bin\s+(?:that|this|such\s+an?|those|these|such)\s+cases?\b", re.I)
_BARE_WAIT = re.compile(r"(?:wait|hold\s+on)", re.I)
_CLAUSE_STOP = re.compile(r"[.!?](?=\s|$)|\n")


def _scoped_at(text: str, pos: int) -> bool:
    """The sentence that holds ``pos`` opens with a scope before it (``For small lists, …``, ``If …, …``)."""
    sent = _sentence(text, sentence_of(text, pos, default=-1))
    return sent is not None and bool(_SCOPED.match(text[sent.start : pos]))


def _cues(text: str, live: Sequence[tuple[int, str]], same: Callable[[str, str], bool]) -> list[re.Match[str]]:
    """The retraction cues of ``text`` (:data:`RETRACT`). A bare ``wait`` takes back what came before only when its
    own clause (up to the sentence's end) names nothing and the next candidate after it is another answer than the
    last one before it, not scoped to another situation (``X — wait, you're going the other way. Y.``); ``X. Wait —
    each input must be sorted``, ``X. Wait — if you need keywords, X takes them too``, ``X. Wait, let me double-check:
    … Yes, X.`` and ``X. Wait — that needs sorted input. For small lists, Y is simpler.`` are notes.
    ``live``: the reply's live candidates (start, label), in order; ``same``: two labels name one answer."""
    out = []
    starts = [at for at, _ in live]
    for hit in RETRACT.finditer(text):
        if _BARE_WAIT.fullmatch(hit.group(0).strip()):
            stop = _CLAUSE_STOP.search(text, hit.end())
            end = stop.start() if stop else len(text)
            last = bisect.bisect_left(starts, hit.start()) - 1  # the last candidate before the cue
            after = bisect.bisect_left(starts, hit.end())  # the first one after it
            if last < 0 or after >= len(live) or live[after][0] < end:
                continue  # nothing before, nothing after, or something named in the cue's own clause
            if same(live[last][1], live[after][1]) or _scoped_at(text, live[after][0]):
                continue  # the same answer again, or another for another situation (``For small lists, Y …``)
        out.append(hit)
    return out


#: a correction that may be of a detail, not of the answer: it retracts only when an answer follows it
_WEAK_RETRACT = re.compile(
    r"correction|sorry|rather|on\s+(?:second\s+thoughts?|reflection)|oops|whoops|let\s+me\s+correct|"
    r"thinking|having\s+thought|come\s+to\s+think|"
    r"(?:\.\.\.|\u2026)\s*(?:hmm|wait|oh)",
    re.I,
)
#: the adjectives that prefer one candidate to the others (``the right / better / cleaner one``)
_PREFERRED = r"(?:right|correct|best|better|cleaner|safer|simpler|preferred|recommended|proper)"
#: ... and those that single out the answer (``the only one``, ``the final answer``)
_SINGLING = r"(?:" + _PREFERRED + r"|only|final)"
#: the kinds of thing an answer is (``the function``, ``the tool``)
_KIND = r"(?:function|answer|method|class|one|call|parameter|argument|option|choice|tool|decorator|api)"
_WHAT = (
    r"(?:the\s+)?(?:" + _SINGLING + r"\s+)?" + _KIND + r"(?:\s+(?:you\s+(?:want|need)|to\s+use|here|for\s+(?:this|you|"
    r"that)))?\s+(?:is|must\s+be|would\s+be|has\s+to\s+be)\s*:?"
)
#: a conclusion right before a name (``So the function is X``, ``Therefore X``, ``That makes it X``, ``which leaves
#: X``, ``In short: X``, ``→ X``, ``…, the answer is X``, ``it must be X``, ``so the better tool …: X``)
_CONCLUDE = re.compile(
    r"(?:(?:\b(?:so|therefore|hence|thus|ergo|that\s+leaves|which\s+leaves|this\s+leaves|leaving|that\s+makes\s+it|"
    r"which\s+makes\s+it|in\s+short|in\s+summary|in\s+conclusion|to\s+sum\s+up|bottom\s+line|conclusion)\b|"
    r"[\u2192\u21d2]|->|=>)[\s,:*_-]*(?:" + _WHAT + r"|it(?:'s|\s+is|\s+must\s+be|\s+has\s+to\s+be|\s+would\s+be)|"
    r"(?:you\s+(?:want|need|should\s+use)|use|go\s+with|pick))?|(?:^|[.;:!?\n,]\s*)" + _WHAT + r"|"
    r"\bit\s+(?:must|has\s+to)\s+be|"
    # ``so the better tool splits on whitespace and capitalises each word: X`` (session 13)
    r"(?:^|[.;!?\n,]\s*|\b(?:so|therefore|hence|thus)\s+)(?:the\s+)?" + _PREFERRED + r"\s+"
    r"(?:tool|function|method|class|one|call|option|choice|way)\b(?:[^.;!?\n:`*]|\n(?![ \t]*\n)){0,80}:)[\s*_`(\[\"']*$",
    re.I,
)
#: ``The one that … is X`` opening a sentence, or ``…, and the one taking / with … is X`` closing an elimination
#: (session 13): read over the sentence, since the description may name things (``the one taking a `prefix` … is X``)
_THE_ONE = re.compile(
    r"(?:^|[.;!?\n]\s*|,\s*and\s+|,\s*)the\s+one\s+(?:that|which|who|with|\w+ing)\b[^.;!?]{3,120}?\s+is"
    r"[\s*_`(\[\"']*$",
    re.I,
)
#: what may follow a concluded name in its sentence (an end, an aside, a reason, the end of a LaTeX formula ``$$`` /
#: ``\]``), not a predicate (``X gives …``)
_CLAUSE_END = re.compile(
    r"^[`*_'\")\]]*\s*(?:$|[.!?,;:)\]\u2014\u2013(-]|\$|\\\]|(?:since|because|as|which|for|here|instead|if|then)\b)",
    re.I,
)
_LIST_GAP = re.compile(
    r"^[\s,/|*`'\"()\[\]]*(?:(?:(?:and|or|nor|and/or|as\s+well\s+as)\b|(?<=\s)[&+](?=\s))[\s*`'\"(\[]*)?$", re.I
)
_BARE_LIST = re.compile(
    r"[`*'\"]*[\w.-]+[`*'\"]*(?:\s*(?:,|/|\bor\b|\band\b|\bnor\b)\s*[`*'\"]*[\w.-]+[`*'\"]*)+[.!?]?"
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+")
_WORD = re.compile(r"[A-Za-z_][\w.]*")

_MODULES = frozenset(getattr(sys, "stdlib_module_names", ())) | {
    "pandas",
    "pd",
    "numpy",
    "np",
    "torch",
    "scipy",
    "sklearn",
    "requests",
    "django",
    "flask",
    "pydantic",
    "langchain",
    "llama_index",
    "google",
    "openai",
    "simplejson",
    "ujson",
    "orjson",
    "yaml",
}
_TYPES = frozenset("str bytes bytearray list dict set frozenset tuple int float complex bool object type".split())
_CONSTANTS = frozenset({"None", "True", "False"})
_DUNDER = re.compile(r"__\w+__")


# -- the question and the reference ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What an identifier reading compares with.

    Args:
        accepted: The accepted answers.
        case_sensitive: Compare names with case.
        qualified: ``either`` (a qualified name and its tail are one name) or ``exact``.
        question: The question (names it mentions are restated, not answered).
        gold: The case's gold document ids (the owners a qualifier must agree with: ``json`` for ``json.dumps``).
    """

    accepted: tuple[str, ...]
    case_sensitive: bool = False
    qualified: str = "either"
    question: str = ""
    gold: tuple[str, ...] = ()

    def norm(self, name: str) -> str:
        return _norm(name, self.case_sensitive)

    @property
    def numeric(self) -> bool:
        return any(number_value(a) is not None for a in self.accepted)

    def asked(self) -> set[str]:
        words = {self.norm(w) for w in _WORD.findall(self.question)}
        return words | {w.rsplit(".", 1)[-1] for w in words} | {w.split(".", 1)[0] for w in words}

    def is_accepted(self, name: str) -> bool:
        return any(self.same(name, a) for a in self.accepted)

    def same(self, name: str, expected: str) -> bool:
        """``name`` (a bare or qualified name, or a number) names ``expected``."""
        nv, ev = number_value(name), number_value(expected)
        if nv is not None or ev is not None:
            return nv is not None and ev is not None and nv == ev
        n, e = self.norm(name), self.norm(expected)
        if not n or not e:
            return False
        if n != e and not (self.qualified == "either" and "." in e and (e.endswith("." + n) or n.endswith("." + e))):
            return False
        return self.case_sensitive or _case_agrees(name, expected)


@functools.lru_cache(maxsize=4096)
def _norm(name: str, case_sensitive: bool) -> str:
    """A name as compared (:meth:`Context.norm`); cached, since a long reply compares the same names many times."""
    s = name.strip().strip("`*'\"").lstrip("@")
    s = re.sub(r"\(.*\)$", "", s).rstrip(".,;:!?")
    return s if case_sensitive else s.lower()


def _case_agrees(name: str, expected: str) -> bool:
    """Two names equal but for case are one identifier when they differ only in the first letter (``Dedent.`` at the
    start of a sentence) or the reply writes the name all in lower case or all in capitals (lower-case chat and
    shouting carry no case); otherwise
    (``BaseLLM`` for ``BaseLlm``, ``Basetool`` for ``BaseTool``) they are two identifiers, as they are to Python. A
    qualified name whose last part is in lower case where the expected one is capitalised names a module, not the
    class (``google.adk.sessions.session`` for ``Session``; session 14)."""

    def tail(s: str) -> str:
        s = re.sub(r"\(.*\)$", "", s.strip().strip("`*'\"").lstrip("@")).rstrip(".,;:!?")
        return s.rsplit(".", 1)[-1]

    a, b = tail(name), tail(expected)
    if a[:1].islower() and b[:1].isupper() and "." in name.strip().strip("`*'\"").rstrip(".,;:!?"):
        return False  # ``google.adk.sessions.session`` for ``Session``: a dotted path ending in lower case is a module
    return a[1:] == b[1:] or a in (a.lower(), a.upper())


def _related(qualifier: str, path: str) -> bool:
    q = [s for s in qualifier.lower().split(".") if s]
    p = [s for s in path.lower().split(".") if s]
    if not q:
        return True
    return any(p[i : i + len(q)] == q for i in range(len(p) - len(q) + 1)) or q[-1] in p


@functools.lru_cache(maxsize=256)
def _submodule_defines(qualifier: str, owner: str, name: str) -> bool:
    """``qualifier`` is a standard-library submodule of the gold's owner that defines ``name`` itself
    (``json.decoder.JSONDecodeError`` for ``json.JSONDecodeError``): the same object through its real module. Only a
    submodule of a standard-library package the gold names is imported, never a module the reply alone names, and
    never a private one (``unittest.__main__`` would run the tests and exit)."""
    if not qualifier.startswith(owner + ".") or owner.split(".", 1)[0] not in _MODULES:
        return False
    if any(part.startswith("_") for part in qualifier.split(".")):
        return False
    try:
        if importlib.util.find_spec(owner) is None or importlib.util.find_spec(qualifier) is None:
            return False
        return getattr(getattr(importlib.import_module(qualifier), name, None), "__module__", None) == qualifier
    except (ImportError, ValueError, AttributeError):
        return False


def qualifier_agrees(qualifier: str, name: str, ctx: Context) -> bool:
    """A qualifier (``json`` of ``json.dumps``) agrees with the question: it is the owner the gold documents give the
    name (``json.dumps`` -> ``json``), one the question names, or an instance (``agent.run_async``) where the owner is a
    class; a module or builtin type the question and the gold never name contradicts (``pickle.dumps``,
    ``str.split`` for ``shlex.split``)."""
    q = re.sub(r"\(.*?\)", "", qualifier).strip(".")
    if not q:
        return True
    bare = ctx.norm(name).rsplit(".", 1)[-1]
    owners = [g[: -len(bare) - 1] for g in ctx.gold if g.lower().endswith("." + bare.lower())]
    first = q.split(".", 1)[0]
    if owners:
        if any(_related(q, o) or _submodule_defines(q, o, name.rsplit(".", 1)[-1]) for o in owners):
            return True
        module_owner = all(o.rsplit(".", 1)[-1][:1].islower() for o in owners)
        return not module_owner and first not in _MODULES and first not in _TYPES
    if first.lower() in ctx.asked() or any(_related(q, g) for g in ctx.gold):
        return True
    if not ctx.gold:  # no documents to say whose name it is: only a module the question names can contradict
        named = {w for w in ctx.asked() if w in _MODULES}
        return not named or (first not in _MODULES and first not in _TYPES)
    return first not in _MODULES and first not in _TYPES


# -- what a mention claims ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One name (or value) a mention puts forward: ``role`` is ``asserted`` (the name it gives: a call's function, a
    decorator, a bare name), ``param`` (a keyword argument or ``name=`` of ``name=value``), ``value`` (a number or the
    value of ``name=value``) or ``import``."""

    name: str
    qualifier: str
    role: str
    owner: str = ""  # the call a keyword argument belongs to


def _split(dotted: str) -> tuple[str, str]:
    dotted = dotted.lstrip("@")
    return (dotted.rsplit(".", 1)[1], dotted.rsplit(".", 1)[0]) if "." in dotted else (dotted, "")


#: the qualifier of a method written with a bare dot (```.split()```): an object the reply does not name
UNNAMED_OBJECT = "<object>"


def claims(m: Mention) -> list[Claim]:
    """What a mention puts forward (see :class:`Claim`), in order. A method written with a bare dot (```.split()```)
    is a method of some object (qualifier :data:`UNNAMED_OBJECT`): a module's function only if the module is a
    class. A plain word whose owner the prose names as a builtin type (``the string's split method``) has that type
    for its qualifier."""
    out = _claims(m)
    if m.text.lstrip("`*").startswith(".") and out and out[0].role == "asserted" and not out[0].qualifier:
        out[0] = Claim(out[0].name, UNNAMED_OBJECT, "asserted", out[0].owner)
    owner = next((f.split(":", 1)[1] for f in m.flags if f.startswith("owner:")), "")
    if owner and out and out[0].role == "asserted" and not out[0].qualifier:  # ``the string's split method``
        out[0] = Claim(out[0].name, owner, "asserted", out[0].owner)
    return out


#: a file or page a retrieval bot cites (``tools/base_tool.py``, ``index.md``): where the answer comes from (unless a
#: file is the answer asked for: ``larkspur.toml``)
_SOURCE_FILE = re.compile(r"[\w./-]*\.(?:py|pyi|md|mdx|rst|txt|html?|ipynb|json|ya?ml|toml|cfg|ini)", re.I)


def _claims(m: Mention) -> list[Claim]:
    if m.value is not None:
        return [Claim(m.text, "", "value")]
    if m.text in _CONSTANTS:
        return [Claim(m.text, "", "value")]
    cn = m.code
    if cn is None:
        if m.kind in ("spot", "line", "bold", "plain") and m.text.strip():
            name, qual = _split(m.text.strip().strip("`*"))
            return [Claim(name, qual, "asserted")]
        return []
    out: list[Claim] = [Claim(name, "", "defined") for name in cn.overrides]
    for d in cn.decorators:
        out.append(Claim(*_split(d), "asserted"))
    for func, kwargs in cn.calls:
        name, qual = _split(func)
        out.append(Claim(name, qual, "asserted"))
        out += [Claim(k, "", "param", owner=func) for k in kwargs]
    for name in cn.names:
        out.append(Claim(*_split(name), "asserted"))
    for name, value in cn.assigned:
        out.append(Claim(name, "", "param"))
        if value:
            out.append(Claim(value, "", "value", owner=name))
    for ann in cn.annotations:
        if ann.rsplit(".", 1)[-1] not in _TYPES:
            out.append(Claim(*_split(ann), "annotation"))
    for k, v in cn.kwarg_values:
        if v:
            out.append(Claim(v, "", "value", owner=k))
    for imp in cn.imports:
        out.append(Claim(*_split(imp), "import"))
    for exc in cn.caught:
        out.append(Claim(*_split(exc), "caught"))
    return out


class _Judge:
    """Decides, for one reply and one context, what each mention says about the reference."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.asked = ctx.asked()
        self.asks_parameter = bool(_ASKS_PARAMETER.search(ctx.question))
        self.asks_exception = bool(_ASKS_EXCEPTION.search(ctx.question))
        self.owners: set[str] = set()
        self.asks_method = bool(_ASKS_METHOD.search(ctx.question)) and not _ASKS_CLASS.search(ctx.question)
        self.classes = {g.rsplit(".", 1)[-1] for g in ctx.gold if g.rsplit(".", 1)[-1][:1].isupper()}
        self.classes |= {w for w in _WORD.findall(ctx.question) if _CAMEL.fullmatch(w)}

    def is_class(self, m: Mention) -> bool:
        """The mention names a class only (``BaseLlm``, ``SequenceMatcher(None, a, b)``), not the answer."""
        cl = [c for c in claims(m) if c.role == "asserted"]
        return bool(cl) and all(_CAMEL.fullmatch(c.name) and not c.qualifier and not self.hit(c) for c in cl)

    def member_call(self, m: Mention) -> bool:
        """The mention calls a method of the question's or the gold's class, or of an instance of it
        (``LLMRegistry.register(...)``, ``runner.run_async(...)``, ``.ratio()``)."""
        for c in claims(m):
            if c.role != "asserted" or not c.qualifier or _CAMEL.fullmatch(c.name):
                continue
            owner = c.qualifier.rsplit(".", 1)[-1]
            if owner in self.classes or owner == UNNAMED_OBJECT and self.classes:
                return True
            if owner[:1].islower() and any(owner.lower() in k.lower() for k in self.classes):
                return True  # an instance named after its class (``runner`` of ``InMemoryRunner``)
        return False

    def learn_owners(self, found: Sequence[Mention]) -> None:
        """The owners the reply gives the answer (``AgentEvaluator`` of ``AgentEvaluator.evaluate(...)``): named alone
        elsewhere in the reply (``Use the `AgentEvaluator` class:``) they are the answer's context, not another
        answer."""
        for m in found:
            for c in claims(m):
                if c.role == "asserted" and c.qualifier and self.hit(c):
                    self.owners.add(self.ctx.norm(c.qualifier.rsplit(".", 1)[-1]))

    def context_call(self, func: str, cl: Sequence[Claim]) -> bool:
        """A call shown only as the setting of a parameter answer: the question asks for a parameter and the call
        (not the question's own, :meth:`open_call`) passes keyword arguments (``LlmAgent(name=..., x=...)``)."""
        return self.asks_parameter and not self.open_call(func) and any(c.owner == func for c in cl)

    def restated(self, name: str) -> bool:
        n = self.ctx.norm(name)
        return bool(n) and not self.ctx.is_accepted(name) and (n in self.asked or n.rsplit(".", 1)[-1] in self.asked)

    def open_call(self, func: str) -> bool:
        """A call whose keyword arguments are answers: its function is the question's, a builtin, or a class the gold
        documents name."""
        name, _ = _split(func)
        return self.restated(func) or name in BUILTINS or any(g.rsplit(".", 1)[-1] == name for g in self.ctx.gold)

    def hit(self, c: Claim) -> bool:
        """The claim names an accepted answer: a qualified accepted answer compares with the whole qualified name (its
        tail under ``either``), a bare one with the name (and only an unqualified name under ``exact``)."""
        full = f"{c.qualifier}.{c.name}" if c.qualifier else c.name
        for a in self.ctx.accepted:
            if "." in self.ctx.norm(a):
                if self.ctx.qualified == "exact" and self.ctx.norm(full) == self.ctx.norm(a):
                    return True
                if self.ctx.qualified == "either" and self.ctx.same(full, a):
                    return True
            elif (
                self.ctx.same(c.name, a)
                and (self.ctx.qualified == "either" or not c.qualifier)
                and (self.ctx.case_sensitive or not c.qualifier or _case_agrees(full, a))
            ):
                return True
        return False

    def matches(self, m: Mention) -> bool | None:
        """``True``: the mention gives the reference; ``False``: it gives another answer; ``None``: it gives none
        (restated names, builtins only, nothing name-like)."""
        cl = claims(m)
        if _SOURCE_FILE.fullmatch(m.text.strip("`*[]()")) and not any(self.hit(c) for c in cl):
            return None  # a file or page a retrieval bot cites (``tools/base_tool.py``), unless it is the answer asked
        if self.ctx.numeric:  # a number question: its numbers (and the values of the question's parameters) count
            for c in cl:
                if c.role == "value" and (not c.owner or self.restated(c.owner) or len(cl) <= 2):
                    return any(self.ctx.same(c.name, a) for a in self.ctx.accepted)
            return None
        verdict: bool | None = None
        for c in cl:
            full = f"{c.qualifier}.{c.name}" if c.qualifier else c.name
            if c.role == "asserted" and self.context_call(full, cl):
                continue  # ``LlmAgent(…, after_agent_callback=f)`` for a parameter question: the call is the setting
            if c.role == "param" and not c.owner and not self.asks_parameter and not self.hit(c):
                continue  # ``tools=[my_function]`` for a question that asks for no parameter: how the answer is used
            if c.role == "param" and c.owner and not self.open_call(c.owner):
                # a parameter question: the one keyword argument of a call is what it shows (several: none singly,
                # unless one alone carries a comment that says what the question asks)
                alone = sum(x.owner == c.owner and x.role == "param" for x in cl) == 1
                if not (self.asks_parameter and (alone or self.commented(c.name, m))):
                    continue
            if c.role == "value" or (c.role == "caught" and not self.asks_exception):
                continue  # an ``except`` clause answers only a question about an exception
            if c.role == "defined" and not (
                self.asks_method and self.hit(c) and sum(x.role == "defined" for x in cl) == 1
            ):
                continue  # the one method the code overrides answers a question about a method, when it is the answer
            if self.hit(c):
                bare = not any("." in self.ctx.norm(a) for a in self.ctx.accepted)
                return not (bare and c.qualifier and not qualifier_agrees(c.qualifier, c.name, self.ctx))
            builtin_call = (
                c.role == "asserted" and not c.qualifier and c.name in BUILTINS and m.text.rstrip("`*").endswith(")")
            )
            if c.role in ("import", "annotation") or (self.restated(c.name) and not builtin_call):
                continue  # (a builtin called, ``sum()``, is a name even where the question says "sum" in English)
            if c.name in _CONSTANTS:
                continue
            if self.module_of_gold(full):
                continue  # ``google.adk.models.base_llm``: the module the answer lives in, not another answer
            if self.ctx.norm(c.name) in self.owners:
                continue  # the answer's owner (``AgentEvaluator`` of ``AgentEvaluator.evaluate``)
            if _DUNDER.fullmatch(c.name):
                continue
            if c.name in BUILTINS and sum(x.role == "asserted" for x in cl) > 1:
                continue  # print(json.dumps(d)): the builtin is the wrapping, not the answer
            verdict = False
        return verdict

    def commented(self, keyword: str, m: Mention) -> bool:
        """``keyword`` is the one keyword argument of ``m``'s code with a comment, and the comment says what the
        question asks (two of its content words are the question's: ``after_agent_callback=log,  # runs after
        run_async`` for *… a callback that executes after the agent's `run_async` method is called?*)."""
        notes = m.code.commented if m.code is not None else []
        if len(notes) != 1 or notes[0][0] != keyword:
            return False
        said = {w for w in _stems(notes[0][1]) if len(w) > 2}
        return len(said & {w for w in _stems(self.ctx.question) if len(w) > 2}) >= 2

    def module_of_gold(self, full: str) -> bool:
        """``full`` is a module path (lower-case dotted segments) that holds a gold document (``google.adk.models`` of
        ``google.adk.models.base_llm.BaseLlm``)."""
        return "." in full and full == full.lower() and any(g.startswith(full + ".") for g in self.ctx.gold)

    def answer_of(self, m: Mention) -> str:
        """The name a mention that gives the reference gives (its accepted claim), else its label."""
        for c in claims(m):
            if c.role in ("asserted", "annotation", "caught", "param") and self.hit(c):
                return f"{c.qualifier}.{c.name}" if c.qualifier else c.name
        return self.label(m)

    def contradicted(self, m: Mention) -> bool:
        return any(
            c.qualifier
            and any(self.ctx.same(c.name, a) for a in self.ctx.accepted)
            and not qualifier_agrees(c.qualifier, c.name, self.ctx)
            for c in claims(m)
            if c.role == "asserted"
        )

    def label(self, m: Mention) -> str:
        for c in claims(m):
            if c.role in ("asserted", "value", "param") and not self.restated(c.name) and c.name not in BUILTINS:
                return f"{c.qualifier}.{c.name}" if c.qualifier else c.name
        return m.text


# -- identifier answers ------------------------------------------------------------------------------------------

_VERB_USE = cue(
    before(r"\b(?:to|can|will|the|a|an|this|that|these|those|its|your|their|our|my|of|for|with|in|on|by)", end=r"\s*")
)
_VERB_OBJECT = re.compile(r"^\s+(?:the|them|it|a|an|your|these|those|this|that|each|all|up|out|into|together)\b", re.I)
#: an accepted word used as an English noun: a modifier before it (``a double quote``), a preposition of place or
#: a noun after it (``a quote around it``, ``quote marks``)
_NOUN_MODIFIER = cue(
    before(
        r"\b(?:double|single|inner|outer|escaped|matching|closing|opening|straight|curly|smart|back|each|every|any)",
        end=r"\s+",
    ),
    # an indefinite article and one adjective (``a literal quote``; session 14)
    before(r"\b(?:a|an)\s+[a-z]+", end=r"\s+"),
)
_NOUN_AFTER = re.compile(r"^\s+(?:around|inside|marks?|characters?|chars?|signs?)\b", re.I)
#: an accepted word named with the kind of thing it is, for a question that asks for a parameter (``it is the model
#: parameter``): the word names the parameter, it is not the English noun (session 13)
_PARAMETER_AFTER = re.compile(r"^[ \t]+(?:parameter|argument|keyword\s+argument|kwarg)s?\b", re.I)
_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]?\.?|etc|vs")


def _sentence(text: str, index: int) -> Sentence | None:
    """Sentence ``index`` of ``text`` (``None`` when it has none)."""
    sents = sentences(text)
    return sents[index] if 0 <= index < len(sents) else None


class _Spans:
    """Mentions in reading order (sorted by start), indexed so that each question about them costs a binary search,
    not a pass over all of them (a long reply has thousands): the last end at or before a place, the mentions that
    start in a range, whether one overlaps a range."""

    def __init__(self, found: Sequence[Mention]) -> None:
        self.found = found
        self.starts = [m.start for m in found]
        self.ends = sorted(m.end for m in found)
        self.reach: list[int] = []  # the furthest end of the mentions up to each one, in start order
        for m in found:
            self.reach.append(max(m.end, self.reach[-1]) if self.reach else m.end)

    def prev_end(self, pos: int, default: int = 0) -> int:
        """The largest end of a mention that ends at or before ``pos`` (``default`` when none does)."""
        i = bisect.bisect_right(self.ends, pos)
        return self.ends[i - 1] if i else default

    def between(self, lo: int, hi: int) -> Sequence[Mention]:
        """The mentions that start at ``lo`` or after and before ``hi``."""
        return self.found[bisect.bisect_left(self.starts, lo) : bisect.bisect_left(self.starts, hi)]

    def overlaps(self, lo: int, hi: int) -> bool:
        """A mention overlaps ``lo:hi``."""
        i = bisect.bisect_left(self.starts, hi) - 1
        return i >= 0 and self.reach[i] > lo


def _mentions(text: str, ctx: Context) -> list[Mention]:
    """The reply's mentions, with the accepted answers' own words (``ans-a``, ``Barack Obama``) added where they
    stand, and plain English uses of an accepted word (``to split``, ``join them``) left out."""
    spotted = {ctx.norm(a) for a in ctx.accepted}
    classes = {  # a class's name as written, that the question does not name itself
        a.strip()
        for a in ctx.accepted
        if a.strip()[:1].isupper() and not re.search(r"\b" + re.escape(a.strip()) + r"\b", ctx.question)
    }
    asks_parameter = bool(_ASKS_PARAMETER.search(ctx.question))
    found = [
        m
        for m in mentions(text, lambda w: ctx.norm(w) in spotted, numbers=ctx.numeric)
        if not _ABBREVIATION.fullmatch(m.text)
        and not (re.fullmatch(r"[A-Za-z]\(.*\)", m.text) and m.kind == "plain")  # C(52, 5), O(n): notation
        and not (
            m.kind == "spot"
            and not (asks_parameter and _PARAMETER_AFTER.match(text[m.end : m.end + 24]))
            and m.text not in classes  # ``That's the Session.``: a class's name as written, capital and all
            and (
                _VERB_USE.search(text, max(0, m.start - 64), m.start)
                or _VERB_OBJECT.match(text[m.end : m.end + 12])
                or _NOUN_MODIFIER.search(text[max(0, m.start - 20) : m.start])
                or _NOUN_AFTER.match(text[m.end : m.end + 16])
            )
        )
    ]
    flags = 0 if ctx.case_sensitive else re.I
    spans = _Spans(found)
    for a in ctx.accepted:
        word = a.strip()
        if not word or re.fullmatch(r"[A-Za-z_]\w*", word) or number_value(word) is not None:
            continue
        for hit in re.finditer(r"(?<![\w.-])" + re.escape(word) + r"(?![\w-]|\.\w)", text, flags):
            if not spans.overlaps(hit.start(), hit.end()):
                sent = sentence_of(text, hit.start(), default=0)
                found.append(Mention(hit.group(0), hit.start(), hit.end(), sent, "spot", None))
                spans = _Spans(sorted(found, key=lambda m: m.start))
    if ctx.numeric:
        found.sort(key=lambda m: m.start)
        found += _number_words(text, found)
    found.sort(key=lambda m: m.start)
    return _drop_titles(text, found, ctx)


#: what joins a description to the code it describes (``**URL-safe Base64 encoding** via `urlsafe_b64encode()` ``)
_VIA = re.compile(
    r"^[`*'\")]*\s*(?:via|using|with|through|by\s+calling|,?\s*i\.\s?e\.,?|:|\u2014|\u2013|-)\s*[`*(]*$", re.I
)
#: a cited source before its title (``According to **shlex — Simple lexical analysis**``)
_CITED = re.compile(
    r"\b(?:according\s+to|as\s+(?:stated|described|documented|explained)\s+in|per|source:?|see)\s*[*`\"']*$", re.I
)


def _drop_titles(text: str, found: list[Mention], ctx: Context) -> list[Mention]:
    """Phrases of several words set in bold that are not accepted answers are not candidates where they describe the
    code after them (``**URL-safe Base64 encoding** via `base64.urlsafe_b64encode()` ``) or name a cited document
    (``According to **shlex — Simple lexical analysis** (Python docs)``)."""
    out = []
    for i, m in enumerate(found):
        if m.kind == "bold" and " " in m.text.strip() and not ctx.is_accepted(m.text) and m.value is None:
            nxt = found[i + 1] if i + 1 < len(found) else None
            described = nxt is not None and nxt.kind == "code" and _VIA.match(text[m.end : nxt.start])
            if described or _CITED.search(text, max(0, m.start - 24), m.start):
                continue
        out.append(m)
    return out


_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()
_UNITS += ["seventeen", "eighteen", "nineteen"]
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}
_NUMBER_WORD = re.compile(r"(?<![\w-])[A-Za-z]+(?:-[A-Za-z]+)?(?![\w-])")
#: between two words of one number: a space or hyphen, ``and`` or a comma after ``hundred`` or a scale word (``one
#: hundred and five``, ``two million, five hundred …``)
_NUMBER_GAP = re.compile(r"[ \t-]+(?:and[ \t]+)?|,[ \t]+")
#: ``times ten to the minus nine`` / ``ten to the power of minus nine``: a power of ten spoken
_TIMES_TEN = re.compile(r"[ \t]+times[ \t]+(?=ten\b)", re.I)
_TO_THE = re.compile(r"[ \t]+to[ \t]+the[ \t]+(?:power[ \t]+(?:of[ \t]+)?)?(?P<sign>(?:minus|negative)[ \t]+)?", re.I)


#: which number word may follow which in one number (``ninety-eight thousand``, ``five hundred sixty``)
_FOLLOWS = {
    "unit": ("hundred", "scale"),
    "tens": ("unit", "hundred", "scale"),
    "hundred": ("unit", "tens", "scale"),
    "scale": ("unit", "tens"),
}


def _word_value(word: str) -> tuple[str, int] | None:
    """``("unit", 7)``, ``("tens", 90)``, ``("hundred", 100)``, ``("scale", 1000)`` or ``None`` (not a number word)."""
    w = word.lower()
    if w in _UNITS:
        return "unit", _UNITS.index(w)
    if w in _TENS:
        return "tens", _TENS[w]
    if "-" in w and w.split("-")[0] in _TENS and w.split("-")[1] in _UNITS[1:10]:
        return "tens", _TENS[w.split("-")[0]] + _UNITS.index(w.split("-")[1])
    if w == "hundred":
        return "hundred", 100
    if w in _SCALES:
        return "scale", _SCALES[w]
    return None


def _spoken_number(text: str, at: int) -> tuple[int, int, int] | None:
    """The number spelled out from ``at`` (``two million, five hundred ninety-eight thousand, nine hundred sixty``):
    ``(value, words, end)``, or ``None``."""
    total = current = words = 0
    last = ""
    end = at
    pos = at
    while True:
        hit = _NUMBER_WORD.match(text, pos)
        kind_value = _word_value(hit.group(0)) if hit else None
        if hit is None or kind_value is None:
            break
        kind, value = kind_value
        if words and kind not in _FOLLOWS[last]:  # ``two three``, ``ninety twenty``: two numbers, not one
            break
        last = kind
        if kind in ("unit", "tens"):
            current += value
        elif kind == "hundred":
            current = (current or 1) * 100
        else:
            total += (current or 1) * value
            current = 0
        words += 1
        end = hit.end()
        gap = _NUMBER_GAP.match(text, end)
        if gap is None or (("," in gap.group(0) or "and" in gap.group(0)) and kind not in ("hundred", "scale")):
            break
        pos = gap.end()
    return (total + current, words, end) if words else None


#: a number in digits that a reply sets aside at once (``not 72``, ``not the 80 of …``) or that completes a name
#: (``PEP 8``): beside it, a number in words is still read (``It's seventy characters … not 72 like PEP 8 …``)
_NOT_THIS_NUMBER = re.compile(r"\bnot\s+(?:the\s+|an?\s+)?[`*]*$", re.I)


def _aside_number(text: str, m: Mention) -> bool:
    before = text[max(0, m.start - 20) : m.start]
    return bool(_NOT_THIS_NUMBER.search(before) or _NUMBERED_NAME.search(before))


def _number_words(text: str, found: list[Mention]) -> list[Mention]:
    """A number written in words (``Seventy characters.``, ``one thousand``, ``two million, five hundred ninety-eight
    thousand, nine hundred sixty``, ``one times ten to the minus nine``), for a reply that writes no number in digits;
    ``one`` alone is left out (``the one you want``)."""
    if any(m.value is not None and not _aside_number(text, m) for m in found):
        return []
    out = []
    spans = _Spans(found)
    pos = 0
    while True:
        hit = _NUMBER_WORD.search(text, pos)
        if hit is None:
            break
        spoken = _spoken_number(text, hit.start())
        if spoken is None:
            pos = hit.end()
            continue
        value: float = spoken[0]
        words, end = spoken[1], spoken[2]
        times = _TIMES_TEN.match(text, end)
        if times or hit.group(0).lower() == "ten":
            ten_end = _NUMBER_WORD.match(text, times.end()).end() if times else hit.start() + 3  # type: ignore[union-attr]
            to_the = _TO_THE.match(text, ten_end)
            power = _spoken_number(text, to_the.end()) if to_the else None
            if to_the and power:
                exponent = -power[0] if to_the.group("sign") else power[0]
                value = (value if times else 1) * 10.0**exponent
                words, end = words + 2, power[2]
        pos = end
        if (words == 1 and hit.group(0).lower() == "one") or spans.overlaps(hit.start(), end):
            continue
        sent = sentence_of(text, hit.start(), default=0)
        shown = str(int(value)) if float(value).is_integer() else repr(float(value))
        out.append(Mention(shown, hit.start(), end, sent, "number", None, float(value)))
    return out


#: the joint of a coordination (``X or Y``, ``X, and Y``, ``neither X nor Y``): a negation before X covers Y
_COORDINATED = cue(after(r"\s*,?\s*(?:or|nor|and|and/or)\s+[`*'\"(\[]*$"))


#: ``without actually inserting: `X` ``: the negation qualifies the task, the colon then gives the name
_NEG_THEN_COLON = re.compile(
    r"\b(?:without|instead\s+of|rather\s+than)\s+(?:[\w-]+\s+){0,3}[\w-]+\s*:\s*[`*'\"]*$", re.I
)


#: a name that a number completes (``PEP 8``, ``Python 3.9``, ``RFC 2822``, ``version 3``, ``UTF-8``)
_NUMBERED_NAME = re.compile(
    r"(?:\b(?:PEP|RFC|ISO|UTF|IPv|HTTP|ES|Py)|(?i:\b(?:python|version|release|issue|chapter|section|step)))[ \t-]?$"
)


_KEYWORD_VALUE = re.compile(r"[`*]*([A-Za-z_]\w*)\s*=\s*[^=\s`*]+[`*]*")


def _flag_other_settings(found: list[Mention], judge: _Judge) -> None:
    """A number question: beside a value given with the keyword the question names (``cutoff=0.6``), a value given
    with another keyword (``(and `n=3`)``) is another setting's, not a second answer (session 13, grader9)."""
    asked = set(re.findall(r"\w+", judge.ctx.question.lower()))
    keyed = [
        (m, k.group(1).lower())
        for m in found
        if judge.matches(m) is not None and (k := _KEYWORD_VALUE.fullmatch(m.text))
    ]
    if not any(kw in asked for _, kw in keyed):
        return
    for m, kw in keyed:
        if kw not in asked:
            m.flags.add("other")


def _flag(text: str, found: list[Mention], judge: _Judge | None = None) -> None:
    """Mark each mention ``negated`` / ``contrasted`` / ``rejected`` from the words around it in its sentence (a
    negation covers the names coordinated with the negated one: ``don't put `tools` or `system_instruction` in``),
    and, for a number question, ``other`` (:func:`_flag_subjects`)."""
    sents = {s.index: s for s in sentences(text)}
    unknown: set[str] = set()  # names the reply says it does not know: named again, still the unknown subject
    turned_down: dict[str, int] = {}  # names turned down, with their sentence: named again there, still turned down
    for i, m in enumerate(found):
        sent = sents.get(m.sentence)
        s_start, s_end = (sent.start, sent.end) if sent else (0, len(text))
        prev = found[i - 1].end if i and found[i - 1].sentence == m.sentence else s_start
        nxt = found[i + 1].start if i + 1 < len(found) and found[i + 1].sentence == m.sentence else s_end
        before, after = text[max(prev, s_start) : m.start], text[m.end : max(nxt, m.end)]
        if NEG_BEFORE.search(before) and not _DOUBLE_NEG.search(before) and not _NEG_THEN_COLON.search(before):
            m.flags.add("negated")
            if UNKNOWING_BEFORE.search(before):
                unknown.add(m.text.lower())
        elif m.text.lower() in unknown:
            m.flags.add("negated")
        elif (
            i and "negated" in found[i - 1].flags and found[i - 1].sentence == m.sentence and _COORDINATED.match(before)
        ):
            m.flags.add("negated")
        if _OWN.search(before):  # ``your comparison function `mycmp` ``: the user's own code, not an answer
            m.flags.add("own")
        if m.value is not None and judge is not None and judge.ctx.numeric and EXAMPLE_BEFORE.search(before):
            m.flags.add("other")  # ``you can pass a bound such as 128``: an example value, not the one asked for
        if m.value is not None and judge is not None and judge.ctx.numeric and _NUMBERED_NAME.search(before):
            m.flags.add("other")  # ``PEP 8``, ``Python 3.9``, ``RFC 2822``: part of a name, not a value
        owner = _TYPE_OWNER_BEFORE.search(before) or _TYPE_OWNER_AFTER.match(after)
        if owner and m.kind != "code":  # ``the string's split method``: a method of ``str``, written as a plain word
            m.flags.add("owner:" + owner.group("type").lower())
        if _CONTRAST_OPEN.match(text[s_start : m.start]):
            m.flags.add("contrasted")
        seen = _SEEN.search(before) and _SET_ASIDE_BUT.search(text, m.end, sentence_end(text, m.sentence))
        if REJECT_AFTER.match(after) or (_TEMPTED.search(before) and _BUT_AFTER.match(after)) or seen:
            m.flags.add("rejected")
            turned_down[m.text.strip("`*()").lower()] = m.sentence
        elif turned_down.get(m.text.strip("`*()").lower()) == m.sentence and not _ANSWER_CUE.search(before):
            m.flags.add("rejected")  # ``You might think it's `X`, but X is really about …``: the reason, not an answer
    if judge is not None and judge.ctx.numeric:
        _flag_other_settings(found, judge)
    if judge is not None:
        _flag_appraised(text, found, judge)
    if judge is not None and judge.ctx.numeric:
        _flag_subjects(text, found, judge)


#: a name offered and then weighed with ``but`` (``You could use X, but …``, ``X looks tempting but …``, ``X would
#: work, but …``)
_MAY_USE = cue(
    before(r"\b(?:could|might)\s+(?:also\s+|just\s+|certainly\s+)?(?:use|call|try|go\s+with|reach\s+for)", words=2)
)
_APPRAISED = cue(
    after(
        r"\s+(?:(?:looks|seems|sounds|feels|appears)\b|would\s+(?:work|do)\b|could\s+work\b|is\s+tempting\b|"
        r"(?:does\s+)?exists?\b)"
        r"[^.;!?\n]{0,40}?\bbut\b",
        aside=True,
    )
)
#: the ``but`` clause says the name will not do the job (``but … it won't save memory``, ``but it doesn't help``)
_FAILS_THE_JOB = re.compile(
    r"\b(?:it|that|this)\s+(?:still\s+)?(?:won'?t|will\s+not|doesn'?t|does\s+not|can'?t|cannot)\s+(?:really\s+)?"
    r"(?:help|work|save|scale|solve|fix|avoid|do\s+(?:that|this|it))\b",
    re.I,
)
#: another way recommended, named or not (``A better approach is to read them chunk by chunk``)
_BETTER_WAY = re.compile(r"\b(?:better|simpler|safer|cleaner)\s+(?:approach|way|option|bet|idea|solution)\b", re.I)
#: the ``but`` clause goes on to recommend something else
_RECOMMEND = re.compile(
    r"\b(?:(?:wouldn'?t|would\s+not|don'?t|do\s+not|needn'?t)\s+bother|go\s+with|stick\s+(?:with|to)|use|prefer|"
    r"instead|better\s+(?:off|to)|reach\s+for)\b",
    re.I,
)


def _flag_appraised(text: str, found: list[Mention], judge: _Judge) -> None:
    """A name offered and weighed with ``but`` (``You could use X, but …``, ``X looks tempting but …``, ``X would work,
    but …``, ``X exists, but …``) is turned down (``rejected``) when the ``but`` clause says it won't do the job (``it
    won't save memory``; not scoped: ``if …``) and it or the next sentence recommends another way (``A better
    approach is …``, ``use …``), or when that clause, or the sentence after it, recommends another
    name that is not itself negated (``… I wouldn't bother — sorted(xs)[:10] is simpler. Go with sorted.``, ``…
    Use `string.capwords(s)` instead``); a ``but`` that only adds a note (``but note that it returns a list``) or
    confirms it (``but it is the right call``) leaves it."""
    sents = sentences(text)
    spans = _Spans(found)
    for i, m in enumerate(found):
        if _set_aside(m) or judge.matches(m) is None:
            continue
        s_start = sents[m.sentence].start if m.sentence < len(sents) else 0
        nxt = found[i + 1].start if i + 1 < len(found) else len(text)
        after = text[m.end : max(nxt, m.end)]
        offered = _MAY_USE.search(text, max(s_start, m.start - 160), m.start) and _BUT_AFTER.match(after)
        if not offered and not _APPRAISED.match(text[m.end : sentence_end(text, m.sentence)]):
            continue
        end = sentence_end(text, m.sentence, 1)
        word = _BUT.search(text, m.end, max(end, m.end))  # within the sentence: both cues above saw it there
        but = word.end() if word else m.end
        window = text[but:end]
        if re.search(r"\b(?:wouldn'?t|would\s+not|don'?t|do\s+not|needn'?t)\s+bother\b", window, re.I):
            m.flags.add("rejected")
            continue
        if re.search(r"\b(?:if|when|unless|only\s+for)\b", window, re.I):
            continue  # another for another situation (``but use `sorted` if the lists are small``)
        if _FAILS_THE_JOB.search(text, but, max(sentence_end(text, m.sentence), but)) and (
            _BETTER_WAY.search(window) or _RECOMMEND.search(window)
        ):
            m.flags.add("rejected")  # ``X exists, but … it won't save memory. A better approach is …``
            continue
        for rec in _RECOMMEND.finditer(window):
            at, to = but + rec.start(), but + rec.end()
            if re.search(r"\b(?:not|n't|never)\b", text[max(0, at - 12) : at], re.I):
                continue  # ``but don't use …``
            later = [
                x
                for x in spans.between(max(at - 60, m.end + 1), min(to + 61, end))
                if judge.label(x) != judge.label(m)
                and "negated" not in x.flags
                and x.value is None
                and any(c.role == "asserted" for c in claims(x))
            ]
            if later:
                m.flags.add("rejected")
                break


#: what may stand between a subject and its number in one clause (```wrap` defaults to a width of 70``): no
#: punctuation that closes the clause and no word that starts another
_SUBJECT_GAP = re.compile(r"^[^,;:()\n]{0,60}$")
_NEW_CLAUSE = re.compile(r"\b(?:but|and|while|whereas|unlike|like|as|than|it|which|that|so)\b", re.I)


def _flag_subjects(text: str, found: list[Mention], judge: _Judge) -> None:
    """A number question: a number stated for a name in its clause (``textwrap.wrap`` in ```wrap` defaults to 70``)
    belongs to that name. When the reply gives a number for the asked subject (a name the question names), a number
    it gives for another name is marked ``other`` (set aside): ```wrap` defaults to 70, but `fill` uses 80`` answers
    80 for ``fill``."""
    subject: dict[int, bool] = {}
    last_name: dict[int, Mention] = {}  # the last mention before, not a number, of each sentence
    for i, m in enumerate(found):
        if m.value is None:
            last_name[m.sentence] = m
            continue
        prev = last_name.get(m.sentence)
        if prev is None:
            continue
        gap = text[prev.end : m.start]
        if not _SUBJECT_GAP.match(gap) or _NEW_CLAUSE.search(gap):
            continue
        names = [c.name for c in claims(prev) if c.role in ("asserted", "param")]
        subject[i] = any(judge.restated(n) or judge.restated(prev.text) for n in names) or judge.restated(prev.text)
    if any(subject.values()):
        for i, asked in subject.items():
            if not asked:
                found[i].flags.add("other")


def _set_aside(m: Mention) -> bool:
    return bool(m.flags & {"negated", "contrasted", "rejected", "own", "other"})


def _bullet_answers(text: str, found: list[Mention], judge: _Judge) -> list[Mention]:
    """The answers of a list: one per bullet line, or one per line of a run of lines that are each one name."""
    lines: list[tuple[int, int, bool]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line), bool(_BULLET.match(line))))
        pos += len(line) + 1
    out: list[Mention] = []
    run: list[Mention] = []
    spans = _Spans(found)
    for a, b, bullet in lines:
        inside = [m for m in spans.between(a, b) if judge.matches(m) is not None and not _set_aside(m)]
        only = len(inside) == 1 and not text[a:b].replace(inside[0].text, "").strip(" \t*_`'\".,;:!?()[]-")
        if bullet and inside and not _BULLET.sub("", text[a : inside[0].start]).strip(" \t*_`'\"([#>"):
            out.append(inside[0])  # an item that opens with a name (``- `nsmallest` — …``), not a step of prose
        if only and not bullet:
            run.append(inside[0])
        elif text[a:b].strip():
            if len(run) >= 2:
                out += run
            run = []
    if len(run) >= 2:
        out += run
    return out


#: a list item marked as the right one (``- `urlsafe_b64encode` — uses `-` and `_` ✅``)
_TICK = re.compile("[\u2705\u2713\u2714\u2611]")


def _ticked(text: str, listed: list[Mention]) -> list[Mention]:
    """The items of a list whose line carries a tick (``✅``, ``✓``, ``✔``, ``☑``), when at least one does not; without
    ticks, the one item set in bold."""

    def line(m: Mention) -> str:
        return text[text.rfind("\n", 0, m.start) + 1 : (text.find("\n", m.end) + 1 or len(text) + 1) - 1]

    ticked = [m for m in listed if _TICK.search(line(m))]
    if not ticked:  # the one item set in bold (``- **`Runner`** …`` above items in plain code): the list's answer
        ticked = [m for m in listed if m.kind == "bold" or text.startswith("**", m.start)]
        if len(ticked) != 1:
            return []
    return ticked if len(ticked) < len(listed) else []


#: a sentence that recommends one name (``For the actual measure use `ratio()`.``, ``Pick `X`.``)
_PICK = cue(before(r"\b(?:use|pick|choose|go\s+with|call|want|need|reach\s+for)", end=r"\s*[`*'\"]*"))


def _picked(text: str, listed: list[Mention], found: list[Mention], judge: _Judge) -> Mention | None:
    """After a list of candidates, the one a later sentence outside the list recommends, alone in its sentence
    (``- `ratio()` …\n- `quick_ratio()` …\n\nFor the actual measure use `ratio()`.``)."""
    if len(listed) < 2:
        return None
    labels = {judge.label(x) for x in listed}
    end = max(x.end for x in listed)
    later = [m for m in found if m.start > end and judge.matches(m) is not None and not _set_aside(m)]
    per_sentence = Counter(x.sentence for x in later)
    sents = sentences(text)
    for m in later:
        line_start = text.rfind("\n", 0, m.start) + 1
        if _BULLET.match(text[line_start : m.start]) or judge.label(m) not in labels:
            continue
        if per_sentence[m.sentence] != 1:
            continue
        sent = sents[m.sentence] if m.sentence < len(sents) else None
        if sent is not None and (
            _PICK.search(text[sent.start : m.start]) or _ANSWER_CUE.search(text[sent.start : m.start])
        ):
            return m
    return None


#: a closing pick: a sentence that opens (after a reason) with a verb of choosing (``Go with X.``, ``Since …, call X.``)
_CLOSING_PICK = re.compile(
    r"^[\s*_]*(?:(?:since|because|as|given\s+that)\b[^.;:!?\n]{2,100},\s*)?(?:so\s+|just\s+|then\s+)?"
    r"(?:use|pick|choose|go\s+with|call|reach\s+for|I'd\s+(?:use|pick|go\s+with|call))\s*[`*'\"]*$",
    re.I,
)


def _closing_pick(text: str, found: list[Mention], judge: _Judge) -> Mention | None:
    """After weighing candidates (pros and cons, options in headings), a last paragraph of one sentence that picks
    one of them (``Go with `string.capwords(sentence)`.``, ``Since you don't want to sort the whole list, call
    `heapq.nsmallest(10, nums)`.``) concludes (session 13, grader9)."""
    live = [m for m in found if judge.matches(m) is not None and not _set_aside(m)]
    if len(live) < 2:
        return None
    m = live[-1]
    if any(x.sentence == m.sentence for x in live[:-1]) or not {judge.label(x) for x in live} - {judge.label(m)}:
        return None  # not alone in its sentence, or nothing else was weighed
    sent = _sentence(text, m.sentence)
    if sent is None or not re.search(r"\n[ \t]*\n[ \t]*$", text[: sent.start]) or text[m.end : sent.end].count("\n"):
        return None  # not a paragraph of its own
    if not _CLOSING_PICK.match(text[sent.start : m.start]) or not _CLAUSE_END.match(text[m.end : sent.end] or "."):
        return None
    if text[sent.end :].strip():
        return None  # the reply goes on
    return m


def _distinct(ms: Sequence[Mention], judge: _Judge) -> list[str]:
    labels: list[str] = []
    for m in ms:
        label = judge.label(m)
        if not any(judge.ctx.same(label, x) or judge.ctx.norm(label) == judge.ctx.norm(x) for x in labels):
            labels.append(label)
    return labels


_ASKS_METHOD = re.compile(r"\b(?:method|function)s?\b", re.I)
_ASKS_CLASS = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+)?(?:class|type|object|base)\b|\bsubclass", re.I)
_CAMEL = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[A-Z][a-z]+[A-Z]*")
_ASKS_EXCEPTION = re.compile(r"\b(?:exception|error|raises?|raised)\b", re.I)
_ASKS_PARAMETER = re.compile(r"\b(?:parameter|argument|keyword|kwarg|option|setting)s?\b", re.I)


def _equal_alternative(text: str, answer: Mention, m: Mention, spans: _Spans, judge: _Judge) -> bool:
    """``m`` (after the answer) is offered as an equal alternative to it: ``Y works just as well``, ``Y also works``,
    ``you could just as well call Y``, ``Y — either one will work`` (not: ``Y also works, but …``, ``Y, which is the
    same function``, a keyword argument of the answer's call when the question does not ask for a parameter)."""
    verdict = judge.matches(m)
    if verdict is True or (verdict is None and (m.code is None or judge.ctx.numeric)):
        return False
    cl = claims(m)
    if all(c.role in ("param", "value") for c in cl) and not _ASKS_PARAMETER.search(judge.ctx.question):
        return False  # ``… it also works with `n` and `cutoff` ``: the answer's own arguments
    if any(
        c.qualifier and any(judge.ctx.same(part, a) for part in c.qualifier.split(".") for a in judge.ctx.accepted)
        for c in cl
    ):
        return False  # ``itertools.chain.from_iterable works too``: the answer's own method
    sent = _sentence(text, m.sentence)
    if sent is not None and _SCOPED.match(text[sent.start : m.start]):
        return False  # ``For numpy arrays, `numpy.isclose` does the same``: another situation, not another answer
    after = text[m.end : sentence_end(text, m.sentence)]
    if _called_equal(after):
        return True
    prev = spans.prev_end(m.start, default=answer.end)
    if _EQUAL_BEFORE.search(text[max(prev, answer.end) : m.start]):
        return True
    return bool(EITHER.search(text[m.end : sentence_end(text, m.sentence, 1)]))


#: a clause that says what the answer takes, returns or holds (``it takes a string or a `BaseLlm` instance``)
_DESCRIBES = re.compile(
    r"(?:^[^\w]*(?:(?:argument|parameter|keyword|kwarg|field|attribute|option|function|method|class|callback|"
    r"object|setting)s?\b[^\w]*)?(?:also\s+|only\s+|can\s+|will\s+|may\s+)?|"
    r"\b(?:it|which|that|this|they)\s+(?:also\s+|only\s+|can\s+|will\s+|may\s+)?)(?:takes?|accepts?|"
    r"expects?|receives?|returns?|yields?|produces?|holds?|wants?|needs?|gives\s+(?:you\s+)?back)\b",
    re.I,
)


def _describes(text: str, answer: Mention, m: Mention, spans: _Spans, judge: _Judge) -> bool:
    """``m`` comes after the answer in a clause that says what the answer takes, returns or holds, with no comma
    between the verb and ``m`` (``it takes a model name or a `BaseLlm` instance``; not ``which returns a string, or
    `wrap` …``). The clause's subject is the answer: ``it`` / ``which``, or the answer itself (named again, with its
    noun: ``The `model` argument accepts a string or a `BaseLlm` instance`` after a snippet)."""
    if m.start <= answer.end:
        return False
    sent = _sentence(text, m.sentence)
    start = max(answer.end, sent.start if sent is not None else 0)
    again = [x for x in spans.between(start, m.start) if x.end <= m.start and x is not answer and judge.matches(x)]
    if again:  # the answer named again as the subject of m's clause
        start = again[-1].end
    window = text[start : m.start]
    verb = _DESCRIBES.search(window)
    return verb is not None and not re.search(r"[,;:.!?]", window[verb.end() :])


_TYPED_BEFORE = cue(before(r"\b(?:an?|any)", end=r"\s+[`*]*"))
_TYPED_AFTER = cue(after(r"\s+(?:instances?|objects?|subclass(?:es)?|wrappers?)\b", start=r"[`*]*"))


def _typed_value(text: str, m: Mention, judge: _Judge) -> bool:
    """``a `BaseLlm` instance``, ```BaseToolset` instances`` (of a question that asks for no class): the kind of value
    the answer takes or holds, not another answer."""
    if _ASKS_CLASS.search(judge.ctx.question):
        return False
    typed = _TYPED_AFTER.match(text[m.end : m.end + 20])
    if typed is None:
        return False
    plural = re.search(r"(?:instances|objects|subclasses|wrappers)$", typed.group(0))  # ```BaseTool` instances``
    return bool(plural or _TYPED_BEFORE.search(text[max(0, m.start - 12) : m.start]))


_REPL = re.compile(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:|\$ )")


def _code_line(text: str, pos: int) -> bool:
    """The line at ``pos`` is code, not prose: a line of an indented block (four spaces or a tab, after a blank line or
    another code line), a REPL prompt (``>>>``, ``...``, ``In [1]:``, ``$ ``), or the output printed under one."""
    start = text.rfind("\n", 0, pos) + 1
    line = text[start : (text.find("\n", pos) + 1 or len(text) + 1) - 1]
    if _REPL.match(line):
        return True
    prev_end = start - 1
    prev = text[text.rfind("\n", 0, max(prev_end, 0)) + 1 : max(prev_end, 0)] if start else ""
    if _REPL.match(prev) and line.strip():
        return True  # the output a REPL printed under its prompt
    if re.match(r"(?: {4}|\t)", line) and line.strip():
        return not prev.strip() or bool(re.match(r"(?: {4}|\t)", prev)) or prev.rstrip().endswith(":")
    return False


_JOINED = re.compile(r"[`*'\")\]]*\s*(?:,|,?\s*(?:or|and|ou|o|oder|et|y|und))\s*[`*'\"(\[]*")


def _call_arguments(code: str) -> set[str]:
    """The plain names a call passes (``heapreplace(heap, item)`` -> ``heap``, ``item``; ``f(x=y)`` -> ``x``, ``y``)."""
    inside = re.search(r"\(([^()]*)\)", code)
    return set(re.findall(r"[A-Za-z_]\w*", inside.group(1))) if inside else set()


def _examples(text: str, answer: Mention, found: list[Mention]) -> set[int]:
    """The mentions after the answer given as examples (``such as X or Y``, ``e.g. X, Y``, ``like X``): they illustrate
    it (``every model wrapper such as `Gemini` or `LiteLlm` subclasses it``), they are not alternatives to it."""
    out: set[int] = set()
    prev: Mention | None = None
    for m in found:
        if m.start > answer.end:
            gap = text[max(prev.end, answer.end) if prev is not None else answer.end : m.start]
            joined = prev is not None and id(prev) in out and prev.sentence == m.sentence and _JOINED.fullmatch(gap)
            if EXAMPLE_BEFORE.search(gap) or joined:
                out.add(id(m))
        prev = m
    return out


#: a name the reply tells the user to adjust (``tune `rel_tol` or `abs_tol` ``): a setting of the answer
_SETTING_BEFORE = cue(
    before(
        r"\b(?:adjust|tweak|tune|set|change|raise|lower|increase|decrease|override|configure|ajuster|r\u00e9gler|"
        r"modifier|ajustar|cambiar|anpassen|optionally(?:\s+(?:with|pass(?:ing)?|set(?:ting)?))?)\s+(?:the\s+)?",
        end=r"[`*'\"]*",
    )
)


def _settings(text: str, found: list[Mention]) -> set[str]:
    """The names the reply presents as settings to adjust (``adjust `rel_tol` or `abs_tol` if …``, ``optionally with
    `rel_tol` or `abs_tol` ``, ``ajuster `rel_tol` ou `abs_tol` ``), with the names
    joined to them: parameters of the answer wherever they come again (``use `abs_tol` near zero``)."""
    out: set[str] = set()
    prev: Mention | None = None
    for m in found:
        gap = text[prev.end if prev is not None else 0 : m.start]
        joined = prev is not None and prev.text in out and prev.sentence == m.sentence and _JOINED.fullmatch(gap)
        if m.code is not None and not m.code.calls and "." not in m.text and (_SETTING_BEFORE.search(gap) or joined):
            out.add(m.text)
        prev = m
    return out


#: a clause that names what to use for a task (``to read the JSON back use X or Y``, ``If you want to write to a file,
#: call X``), up to the mention: the task is ``verb`` and ``task``
_PURPOSE = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|but)\s+)(?:if\s+you\s+(?:want|need|have)\s+|in\s+order\s+)?to\s+(?P<verb>[a-z]+)\b"
    r"(?P<task>(?:[^,;.!?\n]|\.(?=\w)){0,60}?),?\s+(?:use|call|try|pick|reach\s+for|there(?:'s|\s+is)|(?:you\s+)?(?:can|could|"
    r"should|would|will|need\s+to)\s+(?:use|call))\b(?:[^,;!?\n.]|\.(?=\w)){0,40}$",
    re.I,
)


def _another_job(text: str, m: Mention, judge: _Judge) -> bool:
    """``m`` is named for another task than the question's: in a clause ``to <task>, use m`` (or ``if you want to
    <task>``) whose task shares no word with the question's own words, its names aside (``… and to read the JSON
    back use json.load or json.loads`` for *Which keyword argument of json.dumps sorts …*; not ``To make it sorted you
    could also use Y``)."""
    sent = _sentence(text, m.sentence)
    purpose = _PURPOSE.search(text[sent.start if sent is not None else 0 : m.start])
    if purpose is None:
        return False
    task = purpose.string[purpose.start("verb") : purpose.end("task")]
    words = re.sub(r"`[^`]*`|[\w.]*[._][\w.]*|\b[a-z]+[A-Z]\w*", " ", judge.ctx.question)  # the question's names aside
    return not set(_stems(task)) & set(_stems(words))


#: a second value stated for the same thing: superseding it (``is now 3000``, ``you'll see 3000``) or hedged
#: (``it can be 10000``)
_VALUE_AGAIN = re.compile(
    r"\b(?:(?:is|are|it'?s|becomes?)\s+now|now\s+(?:is|are)|(?:can|could|may|might)\s+(?:also\s+|even\s+)?be|"
    r"you(?:'ll|\s+will|\s+would|'d)\s+(?:see|get)|(?:is|are)\s+(?:actually|really|instead))"
    r"(?:\s+(?:about|around|roughly|up\s+to))?[\s*`_]*$",
    re.I,
)
#: a clause about setting the value, where a number is what the user sets (``you can raise it so it can be 10000``)
_SETS_VALUE = re.compile(r"\b(?:set|raise|increase|lower|decrease|change|adjust|bump|override|pass)\w*\b", re.I)


def _other_value(text: str, window: str, m: Mention) -> bool:
    """For a number question: ``m``, a later number than the answer, is given as the value again (``usually 1000, but
    on some systems it can be 10000``, ``… is now 3000``), in a sentence that does not set it (``raise it to …``,
    ``… if you set it``)."""
    if not _VALUE_AGAIN.search(window):
        return False
    sent = _sentence(text, m.sentence)
    return not _SETS_VALUE.search(sent.text if sent is not None else window)


#: ``either … or call `X` `` / ``X, or … yourself``: the answer is one side of an ``or``
_OR_BEFORE = re.compile(r"\bor\s+(?:(?:just|simply|else)\s+)?(?:[\w-]+\s+){0,2}[`*'\"]*$", re.I)
_OR_AFTER = re.compile(r"^[^.;!?\n]{0,40}?(?:,\s*|\s+)or\b", re.I)


def _one_of_two_ways(text: str, sent: Sentence, answer: Mention, found: list[Mention], judge: _Judge) -> bool:
    """The answer is one side of an ``or`` whose other side names no answer, and the reply then says the two are
    equal (``You can either wrap it in double quotes yourself, or call `shlex.quote(name)`; both give you …, so use
    whichever you prefer``): a way offered beside another, not the answer (session 13, grader9)."""
    joined = _OR_BEFORE.search(text[sent.start : answer.start]) or _OR_AFTER.match(text[answer.end : sent.end])
    if not joined:
        return False
    if any(m is not answer and m.sentence == answer.sentence and judge.matches(m) is not None for m in found):
        return False  # the other side names a candidate: weighed as a name (:func:`_equal_alternative`)
    rest = text[answer.end : sentence_end(text, answer.sentence, 1)]
    equal = EITHER.search(rest)
    if equal is None:
        return False
    return not _DOWNGRADE.search(rest[equal.end() :])  # ``both work, but X is safer``: a pick


def _others(text: str, answer: Mention, found: list[Mention], judge: _Judge) -> Reading | None:
    """``several`` / ``alternatives`` when another answer is joined to the answer or offered after it (names given as
    examples of it, and the settings the reply tells the user to adjust, aside)."""
    examples = _examples(text, answer, found)
    settings = _settings(text, found)
    found = [m for m in found if id(m) not in examples and (m is answer or m.text not in settings)]
    spans = _Spans(found)
    listed = _bullet_answers(text, found, judge)
    listed = _ticked(text, listed) or listed
    if answer in listed:
        names = _distinct(listed, judge)
        if len(names) >= 2:
            return Reading(None, "several", f"several: a list of {len(names)} candidates {names[:6]}", tuple(names))
    sent = _sentence(text, answer.sentence)
    if sent is not None and _one_of_two_ways(text, sent, answer, found, judge):
        return Reading(
            None,
            "alternatives",
            f"alternatives: the reply offers {judge.label(answer)!r} as one of two ways, either equally good",
        )
    if sent is not None and _BARE_LIST.fullmatch(sent.text.strip()) and number_value(sent.text) is None:
        items = [w for w in re.split(r"\s*(?:,|/|\bor\b|\band\b|\bnor\b)\s*", sent.text.strip(" .!?")) if w]
        if len({judge.ctx.norm(w) for w in items}) >= 2:
            return Reading(None, "several", f"several: the reply lists {items[:6]}", tuple(items))
    for m in found:
        verdict = judge.matches(m)
        if m is answer or judge.label(m) == judge.label(answer) or m.flags - {"contrasted"}:
            continue
        if verdict is True and judge.matches(answer) is True:
            continue  # the same answer twice (``product`` and `itertools.product`)
        if judge.module_of_gold(m.text.strip("`*()[] ")):
            continue  # ``BasePlugin`` (`google.adk.plugins.base_plugin`): where the answer lives
        if m.start > answer.end and m.text.strip("`*") in _call_arguments(answer.text):
            continue  # ``heapreplace(heap, item)`` … ``larger than `item` ``: the answer's own argument
        if _SAME_THING.match(text[m.end : m.end + 80]):
            continue  # ``or `insort_right`, which is the same function``
        if m.start > answer.end and _another_job(text, m, judge):
            continue  # ``… and to read the JSON back use json.load or json.loads``: names for another task
        if m.start > answer.end and _equal_alternative(text, answer, m, spans, judge):
            names = [judge.label(answer), judge.label(m)]
            return Reading(
                None, "alternatives", f"alternatives: {names[1]!r} is offered as an equal alternative to {names[0]!r}"
            )
        if _set_aside(m):
            continue
        if _describes(text, answer, m, spans, judge) or _typed_value(text, m, judge):
            continue  # ``it takes a name string or a `BaseLlm` instance``: what the answer takes, not another answer
        a, b = (answer, m) if answer.start < m.start else (m, answer)
        second = verdict is not None or (m.code is not None and not judge.ctx.numeric)
        gap = text[a.end : b.start]
        joined = _LIST_GAP.match(gap) and not (judge.ctx.numeric and "+" in gap)  # ``name + description``, not a sum
        if m.sentence == answer.sentence and joined and second:
            names = [judge.label(answer), m.text]  # a restated name in a list is still a second answer
            return Reading(None, "several", f"several: the reply names {names} together", tuple(names))
        if (
            m.start > answer.end
            and verdict is None
            and m.kind == "code"
            and not judge.ctx.numeric
            and not _DUNDER.fullmatch(m.text)
            and m.text.strip("`*()") not in _CONSTANTS  # ``returns the agent or `None` ``: a value, not an API name
        ):
            prev = spans.prev_end(m.start)
            if _ALT_CUE.search(text[max(prev, answer.end) : m.start]):  # ``X, or maybe just `a + b` ``
                return Reading(
                    None, "alternatives", f"alternatives: after {judge.label(answer)!r} the reply offers {m.text!r}"
                )
        if verdict is not False:
            continue
        if m.start > answer.end:
            prev = spans.prev_end(m.start)
            window = text[max(prev, answer.end) : m.start]
            sent = _sentence(text, m.sentence)
            alone = sent is not None and sent.text.strip(" .?!") == m.text
            if alone and _code_line(text, m.start):
                continue  # ``    out.write(line)`` in an indented block, a REPL's printed result: a use of the answer
            if judge.ctx.numeric and _other_value(text, window, m):
                names = [judge.label(answer), judge.label(m)]
                return Reading(
                    None, "alternatives", f"alternatives: after {names[0]!r} the reply gives {names[1]!r} as the value"
                )
            offered = _ALT_AFTER.match(text[m.end : m.end + 80])  # ``though `fill` might also be what you mean``
            if offered and sent is not None and _IN_THAT_CASE.match(text[m.end : sent.end]):
                continue  # ``and if one copy runs far ahead, `list()` may be simpler in that case``: another situation
            if _ALT_CUE.search(window) or offered or (alone and m.sentence != answer.sentence):
                names = [judge.label(answer), judge.label(m)]
                return Reading(None, "alternatives", f"alternatives: after {names[0]!r} the reply offers {names[1]!r}")
    return None


def _cued_first(text: str, found: list[Mention], judge: _Judge) -> list[Mention]:
    """The mentions in reading order, except that one an answer cue introduces (``but the right choice is `X```)
    comes before the others of its sentence."""
    live = [m for m in found if judge.matches(m) is not None and not _set_aside(m)]
    if not live:
        return found
    first = live[0]
    if judge.asks_method and judge.is_class(first):
        # a method question: a class the reply sets up first (``Subclass `BaseLlm`, …, then call
        # `LLMRegistry.register(MyLlm)```) is context for the method it then calls on the question's or the gold's
        # class, or on an instance of it (``runner.run_async(...)``, ``.ratio()``)
        member = next((m for m in live if judge.member_call(m)), None)
        if member is not None:
            return [member, *(x for x in found if x is not member)]
    spans = _Spans(found)
    for m in live[1:]:
        if m.sentence != first.sentence:
            break
        prev = spans.prev_end(m.start)
        if _ANSWER_CUE.search(text[prev : m.start]) or (
            judge.asks_parameter and _PASSED_AS.search(text[prev : m.start])
        ):
            return [m, *(x for x in found if x is not m)]
    return found


#: ``Pass a `GenerateContentConfig` as `generate_content_config` ``: for a parameter question, the name after ``as``
#: is the parameter the value goes to
_PASSED_AS = cue(after(r"\s+(?:\w+\s+){0,3}?as\s+(?:the\s+)?[`*]*$"))


_RESULT = re.compile(r"(?<![=!<>])=\s*[*`]*$")
#: an expression that goes on after a number (``= 52! / (5! · 47!)``: a factorial, an operator): the number is a
#: term of the expression, not its result
_EXPRESSION_GOES_ON = re.compile(r"^[*`]*\s*!?\s*[-+*/^%(\u00d7\u00b7\u22c5\u00f7]")


#: a derivation's result announced in words (``… / 120, which gives **2 598 960** different hands``)
_GIVES = re.compile(
    r"\b(?:which|that|this|it)\s+(?:gives|yields|comes\s+(?:out\s+)?to|equals|makes)(?:\s+(?:us|you))?[\s*_`]*$", re.I
)
#: a result followed only by what it counts (``= 2,598,960 different hands.``)
_RESULT_TAIL = re.compile(r"^[`*_]*\s+(?:[a-z][a-z-]*\s+){0,3}[a-z][a-z-]*[`*_]*\s*(?:[.!]|$)")


def _concluded(text: str, found: list[Mention], judge: _Judge) -> Mention | None:
    """The name a conclusion introduces (``So the function is X.``, ``Therefore X.``, ``That makes it X``, ``which
    leaves X``, ``In short: X``, ``→ X``, ``…, and the one taking … is X``): the last such name that ends its clause
    (``So `X` gives …`` is a use of X, ``Hence `zip(…)` is no longer needed`` a consequence, not conclusions)."""
    spans = _Spans(found)
    for i in range(len(found) - 1, -1, -1):
        m = found[i]
        if judge.matches(m) is None or _set_aside(m):
            continue
        prev = found[i - 1].end if i else 0
        before = text[prev : m.start]
        # a number question: the result a derivation ends with (``… / 120 = 2598960.``), not a term (``= 52! / …``)
        result = (
            judge.ctx.numeric
            and m.value is not None
            and (_RESULT.search(before) or _GIVES.search(before))
            and not _EXPRESSION_GOES_ON.match(text[m.end :])
        )
        if not (_CONCLUDE.search(before) or result or _the_one(text, _sentence(text, m.sentence), m, spans, judge)):
            continue
        rest = text[m.end : sentence_end(text, m.sentence)]
        if _CLAUSE_END.match(rest) or (result and _RESULT_TAIL.match(rest)):
            return m
    return None


def _the_one(text: str, sent: Sentence | None, m: Mention, spans: _Spans, judge: _Judge) -> bool:
    """``m`` ends a ``the one that / taking / with … is`` clause (:data:`_THE_ONE`) that opens its sentence, or that
    follows only names the reply does not offer (an elimination: ``dedent strips margins, and the one taking a
    `prefix` is indent``; not ``Use X, and the one that pushes first is Y``)."""
    if sent is None:
        return False
    cue = _THE_ONE.search(text[sent.start : m.start])
    if cue is None:
        return False
    at = sent.start + cue.start()
    return not any(judge.matches(x) is not None and not _set_aside(x) for x in spans.between(sent.start, at))


def _decide(text: str, found: list[Mention], judge: _Judge, where: str) -> Reading:
    """The reading of ``text`` (the whole reply, or a declared answer's value) from its mentions."""
    sents = sentences(text)
    set_aside: list[Mention] = []
    listed = _bullet_answers(text, found, judge)
    ticked = _ticked(text, listed)
    concluded = (
        _concluded(text, found, judge)
        or (ticked[0] if len(ticked) == 1 else None)
        or _picked(text, listed, found, judge)
        or _closing_pick(text, found, judge)
    )
    order = [concluded, *(x for x in found if x is not concluded)] if concluded else _cued_first(text, found, judge)
    for m in order:
        verdict = judge.matches(m)
        if verdict is None:
            continue
        if _set_aside(m):
            set_aside.append(m)
            continue
        upto = sents[m.sentence].end if m.sentence < len(sents) else len(text)
        if DISCLAIM.search(text[:upto]):
            return Reading(None, "hedge", f"hedge: the reply disclaims knowing the answer before {judge.label(m)!r}")
        # a conclusion is weighed against what follows it, not against the reasoning that led to it
        scope = [x for x in found if x.sentence >= m.sentence] if m is concluded else found
        other = _others(text, m, scope, judge)
        if other is not None:
            return other
        how = " (concluded)" if m is concluded else ""
        if verdict:
            return Reading(judge.answer_of(m), "ok", f"answer {m.text!r}{where}{how}", (m.text,))
        if judge.contradicted(m):
            return Reading(
                None,
                "contradiction",
                f"contradiction: {m.text!r} qualifies the name with an owner the question and its documents do not "
                f"give it ({', '.join(judge.ctx.gold) or 'none'})",
                (m.text,),
            )
        label = judge.label(m)
        return Reading(label, "wrong", f"wrong: the answer {label!r}{where}{how}", (label,))
    rejected = [m for m in set_aside if judge.matches(m)]
    if rejected:
        how = "rejected" if any("rejected" in m.flags for m in rejected) else "negated"
        return Reading(None, how, f"{how}: the reply names {rejected[0].text!r} only to set it aside", ())
    if DISCLAIM.search(text):
        return Reading(None, "hedge", "hedge: the reply disclaims knowing the answer and names none")
    if REFUSAL.search(text):
        return Reading(None, "refusal", "refusal: the reply says it cannot answer")
    if set_aside:
        return Reading(None, "negated", f"negated: the reply only sets aside {[m.text for m in set_aside][:4]}", ())
    restated = [
        m
        for m in found
        if not judge.ctx.numeric and any(c.role == "asserted" and judge.restated(c.name) for c in claims(m))
    ]
    if restated:  # ``The `fnmatch` function translates …`` for *Which fnmatch function …*: an answer, the wrong one
        name = judge.label(restated[0])
        return Reading(name, "wrong", f"wrong: the answer {restated[0].text!r}{where} only repeats the question", ())
    return Reading(None, "no answer", f"no answer: no candidate name{where} in {text.strip()[:80]!r}", ())


def _declared_clause(value: str) -> str:
    """A declared answer up to its first explanation (``insort (an alias of insort_right)`` -> ``insort``); never cut
    inside code (backticks, or the parentheses of a call)."""
    depth, tick = 0, False
    for i, ch in enumerate(value):
        if ch == "`":
            tick = not tick
        elif not tick and ch in "([":
            if depth == 0 and i and value[i - 1] == " ":  # `` (an alias ...)``: an aside after the answer
                return value[:i].strip()
            depth += 1
        elif not tick and ch in ")]":
            depth = max(0, depth - 1)
        elif not tick and depth == 0:
            rest = value[i:]
            if re.match(
                r"[\u2014\u2013]|\s-+\s|;\s|\.\s|,\s+(?:because|since|which|as|it|this|that|but|so)\b|\s+because\b",
                rest,
            ):
                return value[:i].strip()
    return value.strip()


#: a second answer offered inside a declared answer, in any of the languages the protocol line is read in:
#: ``X or Y``, ``X (or Y)``, ``X, or maybe Y``, ``X / Y``, ``X oder Y``, ``X ou Y``, ``X 或 Y`` (session 14)
_DECLARED_OR = re.compile(
    r"(?:\s*,\s*|\s*\(\s*|\s+|\s*/\s*)(?:or|oder|ou|o|oppure|или|或者|或)(?:\s+|(?<=[或者])\s*)"
    r"(?:(?:maybe|perhaps|possibly|alternatively|even|vielleicht|auch|peut-être|bien|quizás|tal\s+vez)\s+)?"
    r"(?P<alt>[`*'\"]*(?P<name>[A-Za-z_][\w.]*)(?:\(\))?[`*'\"]*)(?P<rest>\s*\)?\s*[.!]?\s*$|.*)",
    re.I,
)


def _declared_alternative(declared: str, answer: str | None) -> str | None:
    """The second answer a declared answer offers besides ``answer`` (the protocol asks for one answer), or
    ``None``: a name after ``or`` (or a translation of it, or ``/``) that ends the declared answer (or is followed by
    the condition it holds under), or is written as code (backticks, a dotted or ``snake_case`` name, a call), and is
    not ``answer`` itself or its qualified form."""
    if not answer:
        return None
    for m in _DECLARED_OR.finditer(declared):
        name, alt = m.group("name"), m.group("alt")
        rest = m.group("rest")
        # the name alone, closed by a comma or parenthesis, or with the condition it holds under (``(or cache on
        # Python 3.9+)``, ``or nlargest, whichever fits``, ``or nlargest depending on order``; session 14); a verb
        # that opens a clause (``or use indent …``, ``or wrap it by hand``) is no name
        alone = not rest.strip(" \t).!") or bool(
            re.match(
                r"\s*[,;)]|\s+(?:on|in|for|since|from|with|if|when|unless|depending|whichever|where|under|before|"
                r"after|as\s+of|instead|too|also)\b",
                rest,
                re.I,
            )
        )
        code_like = "`" in alt or "_" in name or "." in name.strip(".") or alt.rstrip("`*'\"").endswith("()")
        if not (alone or code_like) or name.lower() in ("not", "none", "nothing", "something", "similar"):
            continue
        first, second = answer.rsplit(".", 1)[-1].lower(), name.strip(".").rsplit(".", 1)[-1].lower()
        if first != second:
            return name.strip(".")
    return None


def _declared_equal(declared: str, reading: Reading, ctx: Context) -> str | None:
    """Another name the declared answer calls just as good after the answer (``Answer: nsmallest — nlargest would
    also work``; session 14, the lead's attack), or ``None``."""
    if reading.answer is None:
        return None
    for m in _mentions(declared, ctx):
        if not ctx.same(m.text, str(reading.answer)) and _called_equal(declared[m.end :]):
            return m.text
    return None


def read_identifier(reply: str | None, ctx: Context, protocol: bool = False) -> Reading:
    """Read the one answer a reply gives to an identifier question (the module docstring; ``protocol``: only a
    declared answer counts)."""
    text = clean_reply(reply)
    if not text:
        return Reading(None, "empty", "empty answer")
    judge = _Judge(ctx)
    text = _drop_quoted_question(text, ctx.question)
    declared = declared_answer(text)
    if declared is not None:
        head = text[: text.rfind(declared)] if declared in text else ""
        if DISCLAIM.search(head):
            return Reading(
                None, "hedge", "hedge: the reply disclaims knowing the answer before declaring it", declared=True
            )
        value = _declared_clause(declared)
        found = _mentions(value, ctx)
        _flag(value, found, judge)
        reading = _decide(value, found, judge, " (declared)")
        alternative = _declared_alternative(declared, reading.answer) or _declared_equal(declared, reading, ctx)
        if alternative is not None:
            return Reading(
                None,
                "several",
                f"several: the declared answer offers {alternative!r} besides {reading.answer!r}",
                (str(reading.answer), alternative),
                declared=True,
            )
        if reading.rule == "no answer":
            return Reading(
                None, "no answer", f"no answer: the declared answer {declared[:80]!r} names nothing", declared=True
            )
        return replace(reading, declared=True)
    if protocol:
        return Reading(None, "no declared answer", "no declared answer: the reply has no 'Answer: ...' line")
    judge.learn_owners(_mentions(text, ctx))
    below = _below_answer_heading(text)
    if below is not None:  # a preamble, then an explicit ``### Answer`` heading: the answer is read below it
        reading = _read_tables(below, judge) or _read_prose(below, judge)
        if not reading.unreadable:
            return reading
    reading = _read_tables(text, judge) or _read_prose(text, judge)
    if reading.rule == "no answer":  # no rule located an answer: the reply's one candidate, if it is the answer
        only = one_candidate(text, ctx.accepted, ctx.question, ctx.same)
        if only is not None:
            detail = f"answer {only!r} (the one candidate: no rule located an answer, and nothing else has its shape)"
            return Reading(only, "ok", detail, (only,))
    return reading


#: a line that only heads the answer (``### Answer``, ``**Final answer**``, ``## TL;DR``, ``Short answer:``)
_ANSWER_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(?:the[ \t]+)?(?:(?:final|short|direct|quick)[ \t]+)?"
    r"(?:answer|tl;?dr)[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*$",
    re.I | re.M,
)


def _below_answer_heading(text: str) -> str | None:
    """What follows the last line that only heads the answer, when something precedes it (a preamble) and something
    follows it; ``None`` otherwise."""
    heads = list(_ANSWER_HEADING.finditer(text))
    if not heads:
        return None
    head = heads[-1]
    below = text[head.end() :]
    if not text[: head.start()].strip() or not below.strip():
        return None
    return below.lstrip("\n")


#: the name taken back, affirmed again (``… but yes, `pairwise` is the answer``, ``Yes: `X` is right``)
_REAFFIRM_BEFORE = cue(before(r"\byes\b"))
_REAFFIRM_AFTER = cue(
    after(r"\s+(?:is|was)\s+(?:(?:the\s+)?(?:right|correct|answer|one)|fine|it)\b", aside=True),
    after(r"\s*(?:,\s*)?after\s+all\b"),
)
_QUOTED = re.compile(r"^[ \t]*>(?!>>)[^\n]*(?:\n[ \t]*>(?!>>)[^\n]*)*", re.M)


def _drop_quoted_question(text: str, question: str) -> str:
    """The reply without a quoted block (``> …``) that restates the question (most of its words): names in it are
    the question's, not an answer (``> Which functools function …? (hint: cmp_to_key)`` above a refusal). A quoted
    block that is not the question (a quote from the documentation) stays."""
    asked = {w.lower() for w in re.findall(r"[A-Za-z_]\w+", question) if len(w) > 2}
    if len(asked) < 4 or ">" not in text:
        return text

    def drop(block: re.Match[str]) -> str:
        words = {w.lower() for w in re.findall(r"[A-Za-z_]\w+", block.group(0))}
        return "" if len(asked & words) >= 0.7 * len(asked) else block.group(0)

    return _QUOTED.sub(drop, text).strip() or text


def _read_plain(text: str, judge: _Judge, where: str = "", retracted: str | None = None) -> Reading:
    found = _mentions(text, judge.ctx)
    _flag(text, found, judge)
    if retracted is not None:
        # after a retraction, the name taken back is the reason given for it (``X... no: X shares one buffer, …``),
        # not a new answer, unless a conclusion or an answer cue brings it back (``So it is X after all``)
        for i, m in enumerate(found):
            label = judge.label(m)
            if label == retracted or judge.ctx.same(label, retracted):
                before = text[found[i - 1].end if i else 0 : m.start]
                if not (
                    _CONCLUDE.search(before)
                    or _ANSWER_CUE.search(before)
                    or _REAFFIRM_BEFORE.search(before)
                    or _REAFFIRM_AFTER.match(text[m.end : m.end + 60])
                ):
                    m.flags.add("rejected")
    return _decide(text, found, judge, where)


def _retraction(text: str, judge: _Judge) -> tuple[int, str, str] | None:
    """Where the reply goes on after taking back its answer (``X. Hmm, actually no, …``, ``X — wait, that's wrong``,
    ``X — sorry, I mean Y``): the end of the last retraction whose stretch of text before it (back to the previous
    retraction) gives an answer and ends with it, with that answer and the retraction's words; ``None`` when nothing
    is taken back (``X. Actually, X also takes a key argument`` retracts nothing; ``Y — that's wrong`` after an answer
    X takes back Y, not X). Each stretch is read once."""
    cues = list(RETRACT.finditer(text))
    if any(_BARE_WAIT.fullmatch(c.group(0).strip()) for c in cues):
        every = _mentions(text, judge.ctx)
        _flag(text, every, judge)
        named = [(m.start, judge.label(m)) for m in every if judge.matches(m) is not None and not _set_aside(m)]
        cues = _cues(text, named, lambda a, b: a == b or judge.ctx.same(a, b))
    for i in range(len(cues) - 1, -1, -1):
        cue = cues[i]
        stretch = text[cues[i - 1].end() if i else 0 : cue.start()]
        found = _mentions(stretch, judge.ctx)
        _flag(stretch, found, judge)
        live = [m for m in found if judge.matches(m) is not None and not _set_aside(m)]
        if not live:
            continue
        so_far = _decide(stretch, found, judge, "")
        last = judge.label(live[-1])
        if so_far.answer is not None and (last == so_far.answer or judge.ctx.same(last, so_far.answer)):
            return cue.end(), so_far.answer, cue.group(0).strip()
    return None


def _read_prose(text: str, judge: _Judge) -> Reading:
    """The reading of a reply's text: after its last retraction, if it takes its answer back."""
    back = _retraction(text, judge)
    if back is None:
        return _read_plain(text, judge)
    start, answer, cue = back
    after = _read_plain(text[start:], judge, retracted=answer)
    if after.answer is None and _WEAK_RETRACT.match(cue):
        return _read_plain(text, judge)  # ``X. Correction: it returns None, …``: a detail corrected, not the answer
    if after.answer is None and after.rule in ("no answer", "negated", "rejected", "hedge", "refusal"):
        return Reading(
            None, "retracted", f"retracted: the reply takes back {answer!r} ({cue!r}) and commits to no other"
        )
    return Reading(
        after.answer, after.rule, f"{after.detail} (after taking back {answer!r}: {cue!r})", after.candidates
    )


def _table_rows(t: Table, judge: _Judge) -> tuple[list[Row], int, str]:
    """The rows of a table that hold its answer, the column of the answer in them, and why: the rows it marks right
    (``✓``, ``yes``, a bold row), else a ``Function | X`` row, else (a number question) the row of the question's
    parameter, else its one row, else every row not marked wrong (a list of candidates)."""
    rows = [r for r in t.rows if any(c.strip() for c in r.cells)]
    width = max((len(r.cells) for r in rows), default=0)

    def named(cell: str) -> bool:
        return any(judge.matches(m) is not None for m in _mentions(cell, judge.ctx))

    col = t.column(ANSWER_HEADER)
    if col is None:
        col = next((i for i in range(width) if any(i < len(r.cells) and named(r.cells[i]) for r in rows)), 0)
    bold = [r for r in rows if r.bold]
    marked = [r for r in rows if r.mark == "positive"] or (bold if len(bold) < len(rows) else [])
    if marked:
        return marked, col, "the row the table marks"
    keyed = [r for r in rows if len(r.cells) >= 2 and LABEL_ROW.match(r.cells[0].strip("*_` "))]
    if keyed:
        return keyed[:1], 1, f"the table's {keyed[0].cells[0].strip('*_` ')!r} row"
    if judge.ctx.numeric:
        own = [r for r in rows if len(r.cells) >= 2 and any(judge.restated(w) for w in _WORD.findall(r.cells[0]))]
        if own:
            return own[:1], 1, "the row of the question's parameter"
    live = [r for r in rows if r.mark != "negative"]
    return live, col, ("the table's one row" if len(rows) == 1 else "the table's rows")


def _marked_column(t: Table, judge: _Judge) -> str | None:
    """A table whose candidates head its columns (``| | `heappushpop` | `heapreplace` |``) and whose row marks one
    of them (``| Right for you | no | yes |``): that column's header."""
    heads = [
        i for i, h in enumerate(t.header) if i and any(judge.matches(m) is not None for m in _mentions(h, judge.ctx))
    ]
    if len(heads) < 2:
        return None
    for r in t.rows:
        marks = {i: cell_mark(r.cells[i]) for i in heads if i < len(r.cells)}
        right = [i for i, mark in marks.items() if mark == "positive"]
        if len(right) == 1 and any(mark == "negative" for mark in marks.values()):
            return t.header[right[0]]
    return None


#: prose that names a table's answer row by its place (``it's the second row``, ``use the last row``)
_ROW_NAMED = re.compile(
    r"\b(?:it'?s|it\s+is|that'?s|is|use|take|pick|want|go\s+with)\s+(?:the\s+)?(?P<nth>first|second|third|fourth|fifth|"
    r"last|top|bottom|1st|2nd|3rd|4th|5th)\s+(?:row|line|entry)\b",
    re.I,
)
_NTH = {"first": 0, "top": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3}
_NTH |= {"fifth": 4, "5th": 4, "last": -1, "bottom": -1}


def _named_row(t: Table, outside: str, judge: _Judge) -> Reading | None:
    """The row the prose after a table names by its place (``… it's the second row.``), read in the table's answer
    column; ``None`` when the prose names no row (or names several, or one the table does not have)."""
    named = {m.group("nth").lower() for m in _ROW_NAMED.finditer(outside)}
    rows = [r for r in t.rows if any(c.strip() for c in r.cells)]
    if len(named) != 1 or not rows:
        return None
    nth = _NTH[named.pop()]
    if nth >= len(rows):
        return None
    _, col, _ = _table_rows(t, judge)
    row = rows[nth]
    cells = row.cells[col] if col < len(row.cells) else ""
    reading = _read_plain(cells, judge, " (the row the prose names)")
    if reading.rule == "no answer":
        reading = _read_plain(" ".join(row.cells), judge, " (the row the prose names)")
    return reading


def _read_tables(text: str, judge: _Judge) -> Reading | None:
    """A reply with Markdown tables: its prose when the prose gives an answer (``| … |\n\nSo for your case: X``),
    else the answer of its first table that gives one (:func:`_table_rows`; several rows are a list); ``None`` when
    the reply has no table."""
    found = tables(text)
    if not found:
        return None
    outside = without_tables(text, found)
    prose = _read_prose(outside, judge) if outside.strip() else None
    if prose is not None and prose.rule not in ("no answer", "negated"):
        return prose
    for t in found:
        by_place = _named_row(t, outside, judge)
        if by_place is not None and by_place.rule != "no answer":
            return by_place
        across = _marked_column(t, judge)
        if across is not None:
            return _read_plain(across, judge, " (the column the table marks)")
        rows, col, how = _table_rows(t, judge)
        if not rows:
            names = [c for r in t.rows for c in r.cells[:1]]
            refs = [n for n in names if any(judge.matches(m) for m in _mentions(n, judge.ctx))]
            if refs:
                return Reading(None, "rejected", f"rejected: the table marks {refs[0]!r} wrong", ())
            continue
        cells = " and ".join(r.cells[col] if col < len(r.cells) else "" for r in rows)
        reading = _read_plain(cells, judge, f" ({how})")
        if reading.rule != "no answer":
            return reading
    return prose


# -- option letters ----------------------------------------------------------------------------------------------

#: words after a capital letter that make it an option letter, not the article (``A is wrong`` vs ``A function``)
_VERBISH = frozenset(
    "is was would seems looks appears and or nor are because since as but then matches fits describes best correctly "
    "can could should will might may only alone too also here instead needs need sorts gives returns".split()
)
_OPTION_WORD = cue(before(r"\b(?:option|choice|letter)", end=r"\s*"))
_CONCLUSION = re.compile(
    r"(?:\b(?:so|thus|therefore|hence)\b[\s,:]*(?:(?:the\s+)?(?:correct\s+|right\s+|best\s+)?(?:answer|option|choice)"
    r"\s+(?:is|must\s+be|would\s+be)\s*:?\s*|it(?:'s|\s+is|\s+must\s+be|\s+has\s+to\s+be|\s+would\s+be)\s+)?|"
    r"\bit\s+(?:must|has\s+to)\s+be\s+|\bfinal(?:\s+answer)?\s*:\s*|"
    r"\b(?:which|that|this)\s+leaves\s+(?:us\s+with\s+)?(?:only\s+)?|\bleaving\s+(?:only\s+)?|"
    r"\b(?:the\s+)?(?:correct|right|best)\s+(?:answer|option|choice)\s+(?:is|would\s+be|must\s+be)\s*:?\s*|"
    r"\b(?:the\s+)?answer\s+(?:is|would\s+be|must\s+be)\s*:?\s*|"
    r"\bI(?:'d|\s+would)\s+(?:go\s+with|choose|pick|say)\s+|\bI\s+(?:choose|pick|go\s+with)\s+|"
    # a line that opens with an arrow gives the result of what is above it (``…```\n→ A``; session 13)
    r"(?:\A|(?<=\n))[ \t]*(?:[\u2192\u21d2]|->|=>)[ \t]*)"
    r"[\s*(\[`\"']*(?:option\s+)?(?P<letter>[A-Za-z])(?=$|[)\].:,;!*`'\"\u2014\u2013-]|\s+(?:because|since|as|\(|"
    r"\u2014|\u2013|-)|\s*\n)",
    re.I,
)
_MARKER_LINE = re.compile(r"^[ \t>*-]*\(?(?P<letter>[A-Za-z])[).:][ \t]+(?P<text>.*)$", re.M)
_INLINE_MARKERS = re.compile(r"(?:^|(?<=\s))\(?([A-Za-z])\)\s+")


@dataclass
class _Option:
    key: str
    start: int
    end: int
    form: str  # letter | text
    negated: bool = False


def _norm_text(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip().strip("`*'\"_").rstrip(".,;:!?").strip("`*'\"_")).lower()


def _own_text(rest: str, text: str) -> bool:
    """``rest`` (what follows a marker) starts with ``text`` (an option's text), or with what is left of it where the
    reply was cut off."""
    r, t = _norm_text(rest), _norm_text(text)
    return bool(t) and (r.startswith(t[: max(1, min(len(t), 24))]) or (len(r) >= 3 and t.startswith(r)))


def _drop_echo(text: str, options: Mapping[str, str]) -> tuple[str, int]:
    """``text`` without an echo of the option list (two or more ``X) <text of X>`` markers), and how many were
    dropped."""
    keys = {k.upper(): k for k in options}
    spans: list[tuple[int, int, str]] = []
    for m in _MARKER_LINE.finditer(text):
        key = keys.get(m.group("letter").upper())
        if key is not None and _own_text(m.group("text"), options[key]):
            spans.append((m.start(), m.end(), key))
    for line in re.finditer(r"[^\n]+", text):  # one line holding several markers: ``A) foo B) bar``
        parts = list(_INLINE_MARKERS.finditer(line.group(0)))
        if len(parts) < 2:
            continue
        echoed = []
        for i, p in enumerate(parts):
            key = keys.get(p.group(1).upper())
            end = parts[i + 1].start() if i + 1 < len(parts) else len(line.group(0))
            if key is not None and _own_text(line.group(0)[p.end() : end], options[key]):
                echoed.append(key)
        if len(set(echoed)) == len(parts):
            spans.append((line.start(), line.end(), echoed[0]))
            spans += [(line.start(), line.start(), k) for k in echoed[1:]]
    if len({k for _, _, k in spans}) < 2:
        return text, 0
    out, last = [], 0
    for a, b, _ in sorted(spans):
        out.append(text[last:a])
        last = max(last, b)
    out.append(text[last:])
    return "".join(out), len({k for _, _, k in spans})


class _Choices(dict[str, str]):
    """A question's options (``letter -> text``) and ``restated``: the options whose text the question itself holds
    (``run_async`` in *… after the agent's `run_async` method is called?*). Named in the reply's prose, such a text
    restates the question, it does not choose the option (the letter still does, and so does the text alone). A
    question that holds every option's text (its own option list) restates none."""

    def __init__(self, options: Mapping[str, str], question: str = "") -> None:
        super().__init__(options)
        q = question.lower()
        restated = frozenset(
            k
            for k, t in self.items()
            if _norm_text(t) and re.search(r"(?<![\w-])" + re.escape(_norm_text(t)) + r"(?![\w-])", q)
        )
        self.restated = restated if len(restated) < len(self) else frozenset()  # a question that lists its options


#: ``Option 3`` / ``choice #2``: an option by its place in the list
_OPTION_NUMBER = re.compile(r"\b(?:option|choice)\s*#?\s*([1-9])(?![\w.])", re.I)
#: an answer cue before a name in code (``The parameter is `model` ``)
_CODE_ANSWER_BEFORE = re.compile(
    r"\b(?:(?:parameter|argument|answer|one|class|method|function)\s+(?:is|would\s+be|you\s+want\s+is)|"
    r"(?:is|are)\s+(?:called|named)|use|set)\s*[*_]*$",
    re.I,
)
#: the options a sentence names are all ruled out (``…, so none of them describe …``)
_NONE_OF = re.compile(
    r"\b(?:none|neither)\s+of\s+(?:them|these|those|the\s+(?:three|others?))\b|\bthey(?:'re|\s+are)\s+all\s+wrong\b",
    re.I,
)


#: the reply says the right answer is not among the options (``the method you want is X, which isn't listed``,
#: ``None of these is quite right``, ``I'd not pick any of A–D``; session 13, grader10): no option is chosen, whatever
#: it then calls closest
_OFF_LIST = re.compile(
    r"\b(?:which|that|it)\s+(?:isn'?t|is\s+not)\s+(?:listed|(?:one\s+)?(?:of|among)\s+the\s+(?:options|choices))\b|"
    r"\bnone\s+of\s+(?:these|them|the\s+(?:options|choices))\s+(?:is|are)\s+(?:quite\s+|really\s+|exactly\s+)?"
    r"(?:right|correct)\b|\bI(?:'d|\s+would)\s+(?:not|n't)\s+pick\s+any\b|\bI\s+wouldn'?t\s+pick\s+any\b",
    re.I,
)


def _option_mentions(text: str, options: Mapping[str, str]) -> list[_Option]:
    keys = {k.upper(): k for k in options}
    out: list[_Option] = []
    for m in re.finditer(r"(?<![\w\\-])(?<!\w['\u2019])([A-Za-z])(?![\w-])(?!['\u2019]\w)", text):
        key = keys.get(m.group(1).upper())
        if key is None:
            continue
        s, e = m.start(), m.end()
        before, after = text[max(0, s - 2) : s], text[e : e + 2]
        wrapped = (before.endswith(("(", "[", "`")) and after[:1] in (")", "]", "`")) or (
            before == "**" and after[:1] in ("*", ".", ")", ":")
        )
        line_start = not text[text.rfind("\n", 0, s) + 1 : s].strip(" \t>([*-")
        marker = after.startswith(")") or (line_start and after[:1] in (".", ":"))
        named = bool(_OPTION_WORD.search(text[max(0, s - 12) : s]))
        following = re.match(r"[)\].:*`\"']*[ \t]+([A-Za-z']+)", text[e:])
        word = following.group(1) if following else None
        article = m.group(1) in "AI" and word is not None and word[:1].islower() and word.lower() not in _VERBISH
        # ``A Session keeps …``: the article before a capitalised noun, at a sentence's start, then a verb
        article = article or (
            m.group(1) == "A"
            and word is not None
            and word[:1].isupper()
            and text[e : e + 1] == " "
            and not text[max(0, s - 3) : s].strip(" \t*_")[-1:].isalnum()
            and bool(re.match(r"[ \t]+[A-Za-z_]\w*[ \t]+[a-z]+s\b", text[e:]))
        )
        if m.group(1).islower():
            alone = not text.strip(" \t\n()[]*`'\".,:;!?").replace(m.group(1), "", 1).strip()
            if not (alone or (marker and after.startswith(")")) or named or wrapped):
                continue
        elif article and not (wrapped or marker or named):
            if not _own_text(text[s:], options[key]):
                continue
        out.append(_Option(key, s, e, "letter"))
    order = list(options)
    for m in _OPTION_NUMBER.finditer(text):  # ``Option 3``: the third option
        n = int(m.group(1))
        if 1 <= n <= len(order) and not any(o.start <= m.start(1) < o.end for o in out):
            out.append(_Option(order[n - 1], m.start(1), m.end(1), "letter"))
    restated: frozenset[str] = getattr(options, "restated", frozenset())
    for key, value in options.items():
        t = _norm_text(str(value))
        if key in restated and t and _norm_text(text) != t:
            # a word of the question names no option, unless the reply gives it as the answer in code
            # (``The parameter is `model` ``; session 13, grader9)
            for m in re.finditer(r"`" + re.escape(t) + r"`", text, re.I):
                if _CODE_ANSWER_BEFORE.search(text[max(0, m.start() - 60) : m.start()]):
                    out.append(_Option(key, m.start() + 1, m.end() - 1, "text"))
            continue
        if not t:
            continue
        pattern = r"(?<![\w-])(?:[A-Za-z_][\w]*\.)*" + re.escape(t) + r"(?![\w-])"
        for m in re.finditer(pattern, text, re.I):
            if not any(o.start <= m.start() < o.end or m.start() <= o.start < m.end() for o in out):
                out.append(_Option(key, m.start(), m.end(), "text"))
    out.sort(key=lambda o: o.start)
    ends = sorted(o.end for o in out)
    for o in out:
        sent_start = max(text.rfind(c, 0, o.start) for c in ".;!?\n") + 1
        i = bisect.bisect_right(ends, o.start)
        prev = ends[i - 1] if i else 0  # the last end at or before the option
        before = text[max(sent_start, prev) : o.start]
        after = text[o.end : o.end + 40]
        sent_end = min((i for i in (text.find(c, o.end) for c in ".;!?\n") if i >= 0), default=len(text))
        o.negated = (
            bool(NEG_BEFORE.search(before) and not _DOUBLE_NEG.search(before))
            or bool(
                re.match(r"^[)\].:*`'\"]*\s*(?:is|was|would\s+be|seems)\s+(?:wrong|incorrect|false|not\b)", after, re.I)
            )
            # ``A is a runner, C is the agent base class and D is a tool, so none of them …``: ruled out
            or bool(o.form == "letter" and _NONE_OF.search(text[o.end : sent_end]))
        )
    return out


def _declared_option(value: str, options: Mapping[str, str]) -> Reading:
    reading = _declared_option_read(value, options)
    if reading.answer is not None:  # another option called just as good after it (``B — A would also work``)
        for o in _option_mentions(value, options):
            if o.key != reading.answer and _called_equal(value[o.end :]):
                return Reading(
                    None, "several", f"several: the declared answer calls option {o.key} as good as {reading.answer}"
                )
    return reading


def _declared_option_read(value: str, options: Mapping[str, str]) -> Reading:
    keys = {k.upper(): k for k in options}
    v = value.strip().strip("*_`'\" ").rstrip(".")
    m = re.match(r"^\(?(?:option\s+)?([A-Za-z])\)?(?:\s*[).:\-\u2014]\s*(?P<text>.+)|\s*)$", v, re.I)
    if m and keys.get(m.group(1).upper()) and not re.search(r"\banswer\b", v, re.I):
        key = keys[m.group(1).upper()]
        rest = _norm_text(m.group("text") or "")
        others = [k for k, t in options.items() if k != key and rest and _norm_text(str(t)) == rest]
        if others and _norm_text(str(options[key])) != rest:
            return Reading(None, "contradiction", f"contradiction: option {key} with the text of option {others[0]}")
        return Reading(key, "ok", f"option {key} (declared)", (key,))
    found = [o for o in _option_mentions(v, options) if not o.negated]
    distinct = list(dict.fromkeys(o.key for o in found))
    if len(distinct) == 1:
        return Reading(distinct[0], "ok", f"option {distinct[0]} (declared)", (distinct[0],))
    if len(distinct) >= 2:
        return Reading(None, "several", f"several: the declared answer names options {', '.join(distinct)}")
    return Reading(None, "no answer", f"no answer: the declared answer {value[:60]!r} names no option")


def _text_of_another(rest: str, key: str, options: Mapping[str, str]) -> str | None:
    """The other option whose text follows letter ``key`` (``B) wrap`` with ``A: wrap``; ``B: Pop the smallest item,
    then push …`` with that text for A): the line is that text, or begins with it when it is three words or more;
    ``None`` when the letter's own text follows."""
    rest = rest.lstrip(" \t)*].:\u2014\u2013-`")
    line = _norm_text(re.split(r"\n|\s[\u2014\u2013-]\s|[.;]\s|,\s", rest, maxsplit=1)[0])
    whole = _norm_text(rest.split("\n", 1)[0])
    own = _norm_text(str(options[key]))
    if not line or line == own or whole.startswith(own):
        return None
    for k, t in options.items():
        other = _norm_text(str(t))
        if k != key and other and (line == other or (len(other.split()) >= 3 and whole.startswith(other))):
            return k
    # the clause after the letter is about another option: its text (as written) is the clause's subject, followed by
    # its predicate (``C — the Runner applies it to every call``, ``C - `PluginManager` handles it``)
    subject = re.sub(r"^(?:the|an?)\s+", "", rest.split("\n", 1)[0], flags=re.I)
    if own and own in _norm_text(subject):
        return None  # the letter's own text named in its clause too (an elimination, not a contradiction)
    for k, t in options.items():
        if k != key and str(t).strip() and re.match(r"[`*]*" + re.escape(str(t).strip()) + r"[`*]*\s+[a-z]", subject):
            return k
    return None


def _leading(text: str, options: Mapping[str, str], found: list[_Option]) -> Reading | None:
    """The option a reply opens with (``B``, ``(B)``, ``**B** —``, ``Option B``, ``B) fill``), or a contradiction
    (``B) wrap`` where ``wrap`` is another option's text)."""
    first = next((o for o in found if o.form == "letter" and not o.negated), None)
    if first is None or text[: first.start].strip(" \t\n*_([`'\">#-").lower() not in ("", "option", "choice"):
        return None
    other = _text_of_another(text[first.end :], first.key, options)
    if other is not None:
        return Reading(None, "contradiction", f"contradiction: option {first.key} with the text of option {other}")
    return Reading(first.key, "ok", f"option {first.key}", (first.key,))


def read_option(reply: str | None, options: Mapping[str, str], protocol: bool = False, question: str = "") -> Reading:
    """Read the one option a reply chooses (the module docstring, rule 5; ``protocol``: only a declared answer;
    ``question``: the question, whose own words name no option, :class:`_Choices`)."""
    options = _Choices(options, question)
    text = clean_reply(reply)
    if not text:
        return Reading(None, "empty", "empty answer")
    declared = declared_answer(text)
    if declared is not None:
        head = text[: text.rfind(declared)] if declared in text else ""
        if DISCLAIM.search(head):
            return Reading(
                None, "hedge", "hedge: the reply disclaims knowing the answer before declaring it", declared=True
            )
        return replace(_declared_option(declared, options), declared=True)
    if protocol:
        return Reading(None, "no declared answer", "no declared answer: the reply has no 'Answer: ...' line")
    if _OFF_LIST.search(text):
        return Reading(None, "declined", "declined: the reply says the answer is not among the options")
    return _option_table(text, options) or _read_options_prose(text, options)


def _read_options_prose(text: str, options: Mapping[str, str]) -> Reading:
    """The option a reply's text chooses, after its last retraction if it takes its choice back (``A. Hmm, actually
    no — wrap returns a list. B.``): after it, the one letter it names, else the reading of what follows."""
    start, taken = 0, None
    cues = list(RETRACT.finditer(text))
    if any(_BARE_WAIT.fullmatch(c.group(0).strip()) for c in cues):
        live = [(o.start, o.key) for o in _option_mentions(text, options) if not o.negated]
        cues = _cues(text, live, lambda a, b: a == b)
    for i in range(len(cues) - 1, -1, -1):  # as for identifiers (_retraction): each stretch read once
        stretch = text[cues[i - 1].end() if i else 0 : cues[i].start()]
        so_far = _read_options_text(stretch, options)
        named = [o for o in _option_mentions(stretch, options) if not o.negated]
        if so_far.answer is not None and named and named[-1].key == so_far.answer:
            start, taken = cues[i].end(), (so_far.answer, cues[i].group(0).strip())
            break
    if taken is None:
        return _read_options_text(text, options)
    rest = text[start:]
    letters = list(
        dict.fromkeys(o.key for o in _option_mentions(rest, options) if o.form == "letter" and not o.negated)
    )
    after = (
        Reading(letters[0], "ok", f"option {letters[0]}", (letters[0],))
        if len(letters) == 1
        else _read_options_text(rest, options)
    )
    if after.answer is None and _WEAK_RETRACT.match(taken[1]):
        return _read_options_text(text, options)
    if after.answer is None and after.rule in ("no answer", "negated", "hedge", "echo", "empty"):
        return Reading(
            None, "retracted", f"retracted: the reply takes back {taken[0]} ({taken[1]!r}) and chooses no other"
        )
    return Reading(
        after.answer, after.rule, f"{after.detail} (after taking back {taken[0]}: {taken[1]!r})", after.candidates
    )


def _option_table(text: str, options: Mapping[str, str]) -> Reading | None:
    """A reply with Markdown tables: its prose when it chooses, else the row its table marks right (``| B fill | ✓ |``);
    ``None`` when it has no table or no marked row."""
    found = tables(text)
    if not found:
        return None
    outside = without_tables(text, found)
    if outside.strip():
        prose = _read_options_prose(outside, options)
        if prose.rule not in ("no answer", "negated", "echo", "empty"):
            return prose
    for t in found:
        bold = [r for r in t.rows if r.bold]
        marked = [r for r in t.rows if r.mark == "positive"] or (bold if len(bold) < len(t.rows) else [])
        keys = list(dict.fromkeys(k for r in marked for k in [_read_options_text(r.cells[0], options).answer] if k))
        if len(keys) == 1:
            return Reading(keys[0], "ok", f"option {keys[0]} (the row the table marks)", (keys[0],))
        if len(keys) >= 2:
            return Reading(None, "several", f"several: the table marks options {', '.join(keys)}", tuple(keys))
    return None


_FILLER = frozenset("a an the it its and then on of to into in which that this is are be can you just with".split())


def _stems(text: str) -> list[str]:
    """The content words of ``text``, crudely stemmed (``pushes`` / ``pushed`` / ``push`` -> ``push``)."""
    out = []
    for w in re.findall(r"[a-z]+", text.lower()):
        if w in _FILLER:
            continue
        w = re.sub(r"(?:ing|ed|es|s)$", "", w) if len(w) > 3 else w
        out.append(w.rstrip("e") or w)
    return out


def _common(a: list[str], b: list[str]) -> int:
    """The length of the longest common subsequence of ``a`` and ``b``."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b):
            cur = row[j + 1]
            row[j + 1] = prev + 1 if x == y else max(row[j + 1], row[j])
            prev = cur
    return row[-1]


def _paraphrased(text: str, options: Mapping[str, str]) -> str | None:
    """The option whose text a reply that names no option says in its own words, in the option's order (``It pushes
    the item on the heap, then pops and returns the smallest item`` for *Push item on the heap, then pop and return
    the smallest item*): at least 80 % of the option's content words, and at least 20 points more than any other
    option's; a reply with a negation says none. Options of fewer than four content words are names, not sentences: never paraphrased."""
    if re.search(r"\b(?:not|never|no|neither|nor)\b|n't\b", text[:2000], re.I):
        return None  # a negated description chooses nothing (``it does not pop first``)
    said = _stems(text[:2000])
    scores = {}
    for k, t in options.items():
        words = _stems(str(t))
        if len(words) >= 4:
            scores[k] = _common(words, said) / len(words)
    if not scores:
        return None
    best = max(scores, key=lambda k: scores[k])
    rest = [v for k, v in scores.items() if k != best]
    return best if scores[best] >= 0.8 and all(v <= scores[best] - 0.2 for v in rest) else None


_IT_IS = re.compile(r"^[`*'\")\]]*[ \t]+it\s+is\s*[.!]", re.I)


def _closing(text: str, found: list[_Option]) -> _Option | None:
    """The option a reply closes with after weighing the others: ``… The model abstraction is BaseLlm. **C**`` (a
    letter alone at the end, after a sentence's end) or ``GoogleSearchTool it is.``."""
    live = [o for o in found if not o.negated]
    if not live:
        return None
    last = live[-1]
    if (
        last.form == "letter"
        and last is found[-1]
        and not text[last.end :].strip(" \t\n*_).!")
        and re.search(r"[.!?:\n][ \t\n*_(]*$", text[: last.start])
    ):
        return last
    said = [o for o in live if _IT_IS.match(text[o.end : o.end + 20])]
    return said[-1] if said else None


def _read_options_text(text: str, options: Mapping[str, str]) -> Reading:
    """The option a reply's text chooses (rule 5 of the module docstring)."""
    text, echoed = _drop_echo(text, options)
    if not text.strip(" \t\n-*"):
        return Reading(None, "echo", f"echo: the reply repeats the option list ({echoed} options) without choosing")
    found = _option_mentions(text, options)
    concl = _CONCLUSION.search(text)
    chosen: Reading | None = None
    at = len(text)
    if concl and {k.upper(): k for k in options}.get(concl.group("letter").upper()):
        if concl.group("letter").isupper() or not re.match(r"\s+[a-z]", text[concl.end() :]):
            key = {k.upper(): k for k in options}[concl.group("letter").upper()]
            other = _text_of_another(text[concl.end() :], key, options)
            if other is not None:
                return Reading(None, "contradiction", f"contradiction: option {key} with the text of option {other}")
            chosen, at = Reading(key, "ok", f"option {key} (concluded)", (key,)), concl.end()
    if chosen is None:
        chosen = _leading(text, options, found)
        at = found[0].end if chosen is not None and found else at
    if chosen is None:
        closing = _closing(text, found)
        if closing is not None:
            chosen, at = Reading(closing.key, "ok", f"option {closing.key} (closing)", (closing.key,)), closing.end
    if chosen is None:
        positive = [o for o in found if not o.negated]
        if positive:
            sent_end = min((i for i in (text.find(c, positive[0].end) for c in ".;!?\n") if i >= 0), default=len(text))
            keys = list(dict.fromkeys(o.key for o in positive if o.start < sent_end))
            if len(keys) >= 2:
                return Reading(None, "several", f"several: the reply names options {', '.join(keys)}", tuple(keys))
            chosen, at = Reading(keys[0], "ok", f"option {keys[0]}", (keys[0],)), sent_end
    if chosen is None or chosen.rule != "ok":
        if chosen is not None:
            return chosen
        if DISCLAIM.search(text):
            return Reading(None, "hedge", "hedge: the reply disclaims knowing the answer and names no option")
        if any(o.negated for o in found):
            negated = ", ".join(dict.fromkeys(o.key for o in found if o.negated))
            return Reading(None, "negated", f"negated: the reply rejects option(s) {negated} and names no other")
        said = _paraphrased(text, options) if not found else None
        if said is not None:
            return Reading(said, "ok", f"option {said} (its text paraphrased)", (said,))
        return Reading(None, "no answer", "no answer: no option letter or option text in the reply")
    if DISCLAIM.search(text[:at]) or DISCLAIM.search(text[: text.find("\n", at)] if "\n" in text[at:] else text):
        return Reading(None, "hedge", f"hedge: the reply disclaims knowing the answer ({chosen.answer})")
    chain = [o for o in found if o.start >= at - 2 or o.key == chosen.answer]
    start = next((i for i, o in enumerate(chain) if o.key == chosen.answer), None)
    if start is not None:  # ``A, B`` / ``A or B``: options joined to the chosen one
        for prev_o, o in zip(chain[start:], chain[start + 1 :], strict=False):
            gap = text[prev_o.end : o.start]
            if o.key == prev_o.key and o.form != prev_o.form and re.fullmatch(r"[\s:).(`*'\"\u2014\u2013-]*", gap):
                continue  # ``B: generate_content_config``: a letter and its own text are one choice
            if "\n" in gap or not _LIST_GAP.match(gap):
                break
            if o.key != chosen.answer and not o.negated:
                return Reading(None, "several", f"several: the reply names options {chosen.answer} and {o.key}")
    ends = sorted(o.end for o in found)
    for o in found:
        if o.start >= at and o.key != chosen.answer and not o.negated:
            i = bisect.bisect_right(ends, o.start)
            prev = ends[i - 1] if i else at
            if _ALT_CUE.search(text[max(prev, at - 1) : o.start]):
                return Reading(None, "alternatives", f"alternatives: after {chosen.answer} the reply offers {o.key}")
            sent = _sentence(text, sentence_of(text, o.start, default=-1))
            after = text[o.end : sent.end if sent else len(text)]
            if _called_equal(after) or (
                sent is not None and EITHER.search(text[o.end : sentence_end(text, sent.index, 1)])
            ):
                return Reading(
                    None, "alternatives", f"alternatives: {o.key} is offered as an equal alternative to {chosen.answer}"
                )
    return chosen
