"""The cue patterns of the answer grammars: the words around a name that say what the reply does with it.

Most cues have one of two shapes, and the two helpers build them (issue 34, session 13: one shape, one helper,
instead of the same tail written out in twenty patterns):

* :func:`before` — a cue at the end of the text before a name: the cue, up to ``words`` more words, then what may
  stand between them and the name (``end``: by default anything but a word, on the same line), then the end of the
  text. ``not X``, ``not the `X` class``, ``such as `X```, ``your own comparison function `X```.
* :func:`after` — a cue at the start of the text after a name: the name's closing marks (``start``: backticks,
  asterisks, quotes, brackets), optionally an aside in parentheses, then the cue. ```X` won't help``, ``X (the
  function), but …``, ``X method of str``.

Both return the pattern's text, so that alternatives of several shapes join with ``|`` (:func:`cue`) and a pattern
reads as a sentence of its parts. The patterns the grader (:mod:`deltap.checkers.grader`) and its one-candidate
fallback (:mod:`deltap.checkers.fallback`) share are defined here too: what a reply says about knowing the answer
(:data:`DISCLAIM`, :data:`REFUSAL`), about a name (:data:`NEG_BEFORE`, :data:`REJECT_AFTER`, :data:`EXAMPLE_BEFORE`),
about its answer as a whole (:data:`RETRACT`, :data:`EITHER`).
"""

from __future__ import annotations

import re

__all__ = [
    "ANY",
    "CLOSERS",
    "DISCLAIM",
    "EITHER",
    "EXAMPLE_BEFORE",
    "NEG_BEFORE",
    "REFUSAL",
    "REJECT_AFTER",
    "RETRACT",
    "UNKNOWING_BEFORE",
    "WORD",
    "after",
    "before",
    "cue",
]

#: one more word after a cue, with what separates it (``not`` *the* `X`)
WORD = r"(?:[^\w\n]+[\w'-]+)"
#: the default end of a cue before a name: anything but a word, on the line (``not: `X` ``, ``avoid — X``)
ANY = r"[^\w\n]*"
#: what may close a name before the cue after it (```X`**``, ``"X")``)
CLOSERS = r"[`*'\")\]]*"
#: an aside in parentheses between a name and the cue after it (``X (in heapq) won't help``)
ASIDE = r"(?:\s*\([^)]*\))?"


def before(cue_: str, words: int = 0, end: str = ANY) -> str:
    """The pattern of ``cue_`` at the end of the text before a name: the cue, up to ``words`` more words, then
    ``end``, then the end of the text (``before(r"\\bnot\\b", 2)`` matches ``not the`` before ```X```)."""
    gap = f"{WORD}{{0,{words}}}" if words else ""
    return f"{cue_}{gap}{end}$"


def after(cue_: str, start: str = CLOSERS, aside: bool = False) -> str:
    """The pattern of ``cue_`` at the start of the text after a name: the name's closing marks (``start``), an aside
    in parentheses when ``aside``, then the cue (its own separator included: ``after(r"\\s+won't\\s+help")``)."""
    return f"^{start}{ASIDE if aside else ''}{cue_}"


def cue(*alternatives: str, flags: int = re.I) -> re.Pattern[str]:
    """The compiled pattern of one or more alternatives (each from :func:`before` / :func:`after` or written out)."""
    return re.compile("|".join(alternatives), flags)


#: a disclaimer of knowing the answer (``I'm not sure``, ``no idea``, ``it depends``)
DISCLAIM = cue(
    r"\b(?:i(?:'m|\s+am)\s+not\s+(?:100\s*%\s+|completely\s+|entirely\s+|totally\s+)?(?:sure|certain)|"
    r"not\s+(?:sure|certain)|unsure|uncertain|"
    r"(?:i\s+)?(?:do\s+not|don'?t|dont)\s+(?:know|have\s+enough)|no\s+idea|(?:can'?t|cannot|can\s+not)\s+"
    r"(?:tell|say|be\s+sure|determine|check|recall|remember)|(?:don'?t|do\s+not)\s+(?:recall|remember)|"
    r"not\s+enough\s+information|hard\s+to\s+say|(?:i'?m|i\s+am)\s+guessing|(?:it|that)\s+depends|"
    # ``I can't give a definite number`` (session 14)
    r"(?:can'?t|cannot|can\s+not)\s+(?:give|provide|state|offer)\s+(?:you\s+)?(?:an?\s+|the\s+)?"
    r"(?:definite|definitive|exact|precise|certain|confident))\b"
)
#: a refusal to answer (``I can't find it in the documentation``)
REFUSAL = cue(
    r"\b(?:(?:can'?t|cannot|unable\s+to|couldn'?t|could\s+not)\s+(?:find|answer|determine|verify|confirm|look\s+up)|"
    r"does\s+not\s+(?:say|"
    r"mention|specify)|doesn'?t\s+(?:say|mention|specify)|no\s+(?:such|information))\b"
)
#: the reply does not know the name it is asked about (``I'm not familiar with X``, ``never heard of X``, ``I couldn't
#: find any article about X``)
_UNKNOWING = (
    r"\b(?:(?:un|not\s+)familiar\s+with|never\s+(?:heard|seen)\s+of|not\s+aware\s+of|"
    r"(?:couldn'?t|could\s+not|can'?t|cannot|unable\s+to|didn'?t|did\s+not|failed\s+to)\s+(?:find|locate)\s+"
    r"(?:[\w'-]+\s+){0,3}?(?:about|on|regarding|called|named|mentioning|for))\b"
)
#: a name the reply says it does not know, up to two words before it (``not familiar with an `X` ``)
UNKNOWING_BEFORE = cue(before(_UNKNOWING, words=2))
#: a negation before a name, up to two words before it (``not X``, ``avoid the `X` call``, ``instead of X``,
#: ``there's no X``, ``I'm not familiar with X``, ``I don't have any information about X``)
NEG_BEFORE = cue(
    before(
        r"(?:\b(?:not|never|neither|nor|avoid|avoiding|without|instead\s+of|rather\s+than|other\s+than|unlike|except|"
        r"besides|apart\s+from)\b|" + _UNKNOWING + "|"
        r"n't(?:\s+(?:use|call|need|want|pick|choose|recommend))?|\bdo\s+not\s+(?:use|call|need|want|recommend)\b|"
        r"\bthere(?:'s|\s+is)\s+no\b|"
        # a reply that says it knows nothing of the name (``I don't have any information about `X` ``)
        r"\b(?:(?:don'?t|do\s+not)\s+have|have\s+no|lack)\s+(?:(?:any|much|enough|reliable|specific|accurate|"
        r"detailed|up-to-date|the)\s+)*(?:information|knowledge|details|data|documentation|context)\s+(?:about|on|"
        r"of|regarding)\b|\b(?:don'?t|do\s+not)\s+know\s+(?:(?:anything|much)\s+)?(?:about|of)\b)",
        words=2,
    ),
    before(r"\bno", end=r"\s*[`*(\[\"']*"),
)
#: a rejection right after a name (``X won't help``, ``X is not in that module``, ``X is deprecated``, ``X doesn't
#: exist``, ``X is overkill``, ``X won't give you anything``)
REJECT_AFTER = cue(
    after(
        r"\s*,?\s*(?:"
        r"no\s+longer\s+(?:works?|exists?|(?:is\s+)?(?:available|supported|accepted))\b|"
        r"(?:is|was|are)\s*(?:not|n't)\s+(?:in|what|the\s+(?:right|correct|best|one)|a\s+(?:parameter|method|"
        r"function|class|valid|real|public|good)|an?\s+(?:argument|option|attribute|answer)|available|supported|"
        r"accurate|correct|right|needed|necessary|valid|it|part\s+of|suitable|appropriate|meant|helpful|useful|"
        r"recommended)\b|"
        r"isn'?t\s+(?:in|what|the\s+(?:right|correct|best|one)|a\s+\w+|an\s+\w+|available|supported|accurate|correct|"
        r"right|needed|valid|it|part\s+of|suitable|appropriate|meant|helpful|useful|recommended)\b|"
        r"(?:won'?t|will\s+not|wouldn'?t|would\s+not|doesn'?t|does\s+not|didn'?t|can'?t|cannot)\s+(?:help|work|do|"
        r"exist|apply|handle|be\s+used)\b|"
        r"(?:is|was|are|has\s+been|have\s+been)\s+(?:(?:effectively|essentially|basically|largely|now|long)\s+)?"
        r"(?:legacy|outdated|superseded|old-fashioned|deprecated|obsolete|removed|wrong|incorrect|internal|private|"
        r"an\s+internal|not\s+recommended|a\s+(?:bad|poor)\s+(?:choice|idea)|the\s+wrong)\b|"
        r"(?:should|must)\s+(?:be\s+avoided|not|n't)|shouldn'?t|must\s+not|is\s+to\s+be\s+avoided|"
        r"(?:is|are|would\s+be)\s+(?:overkill|unnecessary|needless|inefficient|too\s+(?:slow|heavy|complex))\b|"
        r"(?:won'?t|will\s+not|wouldn'?t|would\s+not|doesn'?t|does\s+not|don'?t|do\s+not)\s+(?:really\s+|actually\s+)?"
        r"(?:give|buy|get|gain|bring|offer|add|provide|earn)\s+(?:you\s+|us\s+)?(?:anything|much|a\s+thing|a\s+lot|"
        r"any\s+(?:benefit|advantage|gain|improvement|extra|more)|extra|more\s+than)\b|"
        r"(?:gives|buys|gets|adds|brings|earns)\s+(?:you\s+|us\s+)?(?:nothing|little)\b|"
        r"(?:isn'?t|is\s+not|aren'?t|are\s+not)\s+(?:really\s+)?worth\b|makes\s+no\s+difference\b|"
        r"(?:is\s+)?(?:wrong|incorrect)\b)",
        aside=True,
    )
)
#: a name given as an example (``every wrapper such as `Gemini` or `LiteLlm` ``, ``e.g. `Claude` ``)
EXAMPLE_BEFORE = cue(
    before(r"\b(?:such\s+as|e\.\s?g\.,?|for\s+(?:example|instance),?|like|including)", end=r"\s*[`*(\[\"']*")
)
#: either / both of the names work (``either one will work``, ``both are fine``; Spanish, French, German, Italian,
#: Portuguese: ``cualquiera te sirve``, ``les deux fonctionnent``)
EITHER = cue(
    r"\b(?:either\s+(?:one|of\s+(?:them|these|those|the\s+two)\s+)?\s*(?:will|would|works?|is|does|should)\b|"
    r"both\s+(?:will|would|work|do|are\s+(?:fine|ok|okay|valid|correct|good|right)|of\s+them\s+(?:work|will|are))\b|"
    r"any\s+of\s+(?:them|these)\s+(?:works?|will)\b|"
    # ``so either one —``, ``use whichever you prefer``, ``both give you …`` (session 13, grader9)
    r"\beither\s+one(?=\s*(?:[.;!,\u2014\u2013]|\s-|$))|\bwhichever\s+(?:one\s+)?you\s+(?:prefer|like|want)\b|"
    r"\bboth\s+(?:give|get|produce|return|yield)\s+(?:you\s+)?(?:the\s+same|something|an?\s|what)|"
    # the same in the other languages replies come in (``cualquiera te sirve``, ``les deux fonctionnent``)
    r"cualquiera\s+(?:de\s+(?:las|los)\s+dos\s+)?(?:te\s+|le\s+)?(?:sirve|funciona|vale)|"
    r"(?:las|los)\s+dos\s+(?:sirven|funcionan|valen)|ambas\s+(?:sirven|funcionan|valen)|"
    r"les\s+deux\s+(?:marchent|fonctionnent|conviennent)|l'une\s+ou\s+l'autre|"
    r"beide\s+(?:funktionieren|gehen)|entrambe\s+(?:funzionano|vanno)|qualsiasi\s+delle\s+due|"
    r"qualquer\s+uma\s+(?:das\s+duas\s+)?(?:serve|funciona)|as\s+duas\s+(?:servem|funcionam))"
)
#: the reply takes back what it just said (``hmm, actually no``, ``wait, that's wrong``, ``sorry, I mean``,
#: ``thinking about it again``, ``come to think of it``; a bare
#: ``wait`` / ``hold on``, not ``wait for`` or ``asyncio.wait``, only where the grader's ``_cues`` says)
RETRACT = cue(
    r"\b(?:actually|hmm+|wait|oh|um+|uh+|er+|hold\s+on)\b[\s,.!\u2014\u2013-]*(?:actually[\s,]*)?(?:no|nope|not\s+quite)"
    r"(?=\s*(?:[,.;:!\u2014\u2013-]|$))|\bno[\s,]+wait\b|\bscratch\s+that\b|\bstrike\s+that\b|"
    r"\bI\s+take\s+(?:that|it)\s+back\b|\bon\s+(?:second\s+thoughts?|reflection)\b|\bcorrection\s*:|"
    r"\b(?:thinking|having\s+thought)\s+(?:about\s+(?:it|this|that)\s+)?(?:again|more|twice|further)\b|"
    r"\bcome\s+to\s+think\s+of\s+it\b|"
    r"\b(?:sorry|rather)\s*,?\s+I\s+mean(?:t)?\b|\bthat(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|a\s+mistake|"
    r"not\s+(?:right|correct|it|the\s+(?:right|correct)\s+one))\b|\bI(?:'m|\s+am|\s+was)\s+(?:wrong|mistaken)\b|"
    r"\bI\s+(?:mixed|got)\s+(?:them|those|it|that|these)\s+(?:up|wrong|backwards)\b|\b(?:oops|whoops)\b|"
    r"\blet\s+me\s+correct\s+(?:that|myself)\b|"
    r"(?:\.\.\.|\u2026)\s*(?:no|nope)(?=\s*[,.;:!\u2014\u2013-])|(?:\.\.\.|\u2026)\s*(?:hmm+|wait|oh)[\s,]+actually\b"
    r"(?![\s,]*(?:no|nope|not)\b)|"
    # ``Actually wait —`` / ``Hmm, wait``: a wait that says it is taking something back
    r"\b(?:actually|hmm+)[\s,]+(?:wait|hold\s+on)\b|"
    # ``2,598,960... actually that undercounts``: the value just given is said to be off (session 13, grader10)
    r"\bactually[\s,]+(?:that|this|it)\s+(?:(?:under|over)(?:counts?|estimates?)|(?:is|'s)\s+(?:too\s+(?:low|high|"
    r"small|big)|off|wrong))\b|"
    r"(?<![\w.`])(?:wait|hold\s+on)\b(?![\w(`])(?!\s+(?:for|until|till|on)\b)"
)
