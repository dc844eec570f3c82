"""A model's reply as a grader reads it: cleaned, its declared answer, its sentences and the names it mentions.

The text layer of the ``grader`` answer grammar (:mod:`deltap.checkers.grader`, rules in ``docs/answer-grammar.md``):

* :func:`clean_reply` — chat-template residue (``<|im_end|>``, ``</s>``, ``<|im_start|>assistant``, a leading
  ``assistant:``) and reasoning blocks (``<think>…</think>``) removed; the reply ends at the first end-of-turn token.
* :func:`declared_answer` — the answer protocol's final line, ``Answer: …`` (also ``**Answer:**``, ``Final answer:``),
  or a JSON ``answer`` field.
* :func:`sentences` — the reply cut into sentences (ends of sentences, line breaks, ``;``), fenced code blocks kept
  whole, so each mention knows its sentence.
* :func:`mentions` — the names a reply mentions, in order: backticked and bold spans, code blocks, dotted /
  underscored / camel-case / call tokens, numbers (thousands separators read: ``2,598,960``), a line that is one
  token, and the accepted answers' own words. Code is read as code (:func:`code_names`): a call names its function
  and its keyword arguments, a decorator its function, an import the names it brings in, ``name=value`` its parameter
  and its value.
"""

from __future__ import annotations

import ast
import bisect
import collections
import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = [
    "BUILTINS",
    "LABELS",
    "CodeNames",
    "Mention",
    "Sentence",
    "clean_reply",
    "code_names",
    "declared_answer",
    "mentions",
    "number_value",
    "sentence_end",
    "sentence_of",
    "sentences",
]

_END_OF_TURN = re.compile(r"<\|im_end\|>|<\|endoftext\|>|</s>|<\|eot_id\|>|<\|end\|>|<end_of_turn>|\[/INST\]")
_START_TOKENS = re.compile(
    r"<\|im_start\|>\s*(?:assistant|system|user)?\s*|<\|start_header_id\|>\s*\w*\s*<\|end_header_id\|>\s*|"
    r"<\|(?:assistant|user|system)\|>\s*|<s>\s*|<start_of_turn>\s*(?:model|user)?\s*|\[INST\]"
)
_ROLE = re.compile(r"^\s*(?:assistant|model|ai)\s*:\s*", re.I)
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.S | re.I)
#: the protocol line's label, and its translations a model answering in another language writes (session 14):
#: German, French, Spanish, Portuguese, Italian, Dutch, Polish, Russian, Chinese, Japanese, Korean
_ANSWER_LABEL = (
    r"(?:(?:the|my|final|correct|endgültige|richtige|la|finale?|bonne|correcta|correta|corretta|definitiva)\s+){0,2}"
    r"(?:answer|antwort|r[ée]ponse|respuesta|resposta|risposta|antwoord|odpowied[źz]|ответ|最终答案|答案|回答|答え|정답|답)"
    r"(?:\s+(?:finale?|final|correcte|correcta|definitiva|finale))?"
)
_DECLARED = re.compile(
    r"^[ \t>#*_`-]*" + _ANSWER_LABEL + r"[ \t*_`]*[:\uff1a][ \t*_]*(?P<value>[^\n]*)$",
    re.I | re.M,
)
#: a LaTeX box, the final-answer convention of math-tuned models (``$\boxed{2598960}$``)
_BOXED = re.compile(r"\\(?:boxed|fbox)\{(?P<inner>(?:[^{}]|\{[^{}]*\})*)\}")
_FENCE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.S)
_JSON_KEYS = ("answer", "final_answer", "identifier", "option", "choice", "letter")

#: builtins a call may use without naming an answer (``print(json.dumps(d))`` answers ``json.dumps``)
BUILTINS = frozenset(
    "print list dict set tuple str int float bool bytes len range sorted reversed enumerate zip map filter sum min "
    "max any all abs round repr iter next open isinstance issubclass type super object getattr setattr hasattr "
    "vars dir id hash format input callable".split()
)


def clean_reply(reply: str | None) -> str:
    """The reply without chat-template residue and reasoning blocks, cut at the first end-of-turn token, without the
    unfinished repeat a repetition loop was cut off in."""
    text = reply or ""
    text = _THINK.sub("", text)
    text = _START_TOKENS.sub("", text)
    end = _END_OF_TURN.search(text)
    if end:
        text = text[: end.start()]
    text = _ROLE.sub("", text, count=1)
    text = _OUT_PROMPT.sub(r"\1Out:", text)  # Jupyter's ``Out[3]:`` counts cells, it is no value
    return _drop_letter_frame(_drop_sources(_drop_cut_repeat(text.strip())))


#: a Jupyter output prompt (``Out[3]:``)
_OUT_PROMPT = re.compile(r"^([ \t]*)Out\[\d+\]:", re.M)


#: a letter's greeting line (``Hi Priya,``, ``Hello,``, ``Dear team,``) at the start of a reply
_GREETING = re.compile(
    r"\A(?:hi|hello|hey|dear|good\s+(?:morning|afternoon|evening))\b[^\n`()=:]{0,40}[,!]?[ \t]*\n", re.I
)
#: a letter's sign-off at the end of a reply: a closing line (``Best regards,``, ``Cheers,``, ``Thanks,``) and up to
#: three short lines of names (``Marcus``, ``R.``, ``Python Support Team``) with no code in them
_SIGN_OFF = re.compile(
    r"\n[ \t]*(?i:(?:best|kind|warm|warmest|many)\s+(?:regards|wishes|thanks)|regards|cheers|thanks(?:\s+again)?|"
    r"thank\s+you|best|sincerely|yours(?:\s+(?:truly|sincerely))?|all\s+the\s+best|take\s+care)[ \t]*[,!.]?[ \t]*"
    r"(?:\n[ \t]*(?:[A-Z][a-z'-]*\.?(?:[ \t]+[A-Z][a-z'-]*\.?){0,3}|"
    # a bot's name (``DevBot``, ``HelpdeskAI``; session 13, grader10)
    r"[A-Z][A-Za-z]*(?:Bot|AI|GPT|Assistant|Desk))[ \t]*){1,3}\Z"
)


#: a closing list of the sources a retrieval assistant cites (Copilot's ``References``, Perplexity's ``Sources``): a
#: heading line, then only numbered or bulleted entries to the end of the reply (session 13, grader10)
_SOURCES = re.compile(
    r"\n[ \t]*(?:#{1,6}[ \t]*)?[*_]*(?i:references|sources|citations|learn\s+more)[*_]*[ \t]*:?[*_]*[ \t]*"
    r"(?:\n[ \t]*(?:\[\d+\]|\d+[.)]|[-*\u2022])[ \t]+[^\n]*)+\s*\Z"
)


def _drop_sources(text: str) -> str:
    """A closing list of cited sources says where the answer comes from; it offers no alternatives."""
    listed = _SOURCES.search(text)
    return text[: listed.start()].rstrip() if listed and listed.start() > 0 else text


def _drop_letter_frame(text: str) -> str:
    """An e-mail's frame is not part of its answer: the greeting (``Hi Priya,``) and the sign-off with the sender's
    name (``Cheers,\\nR.``, ``Best regards,\\nMarcus\\nPython Support Team``) name people, not alternatives."""
    signed = _SIGN_OFF.search(text)
    if signed is None:
        return text
    body = text[: signed.start()]
    greeting = _GREETING.match(body)
    return body[greeting.end() :].strip() if greeting else body.strip()


#: a sentence's end (the last one before an unfinished tail)
_SENTENCE_END = re.compile(r"[.!?][ \t\n]+")


def _drop_cut_repeat(text: str) -> str:
    """A repetition loop cut off by the token limit (``The answer is X. The answer is X. The answer is it``): an
    unfinished last sentence that begins an earlier sentence again word for word is the loop, not something new."""
    if text[-1:] in ".!?`)]\"'*":
        return text
    end = collections.deque(_SENTENCE_END.finditer(text), maxlen=1).pop() if _SENTENCE_END.search(text) else None
    if end is None or "\n" in text[end.end() :]:
        return text
    tail = text[end.end() :]
    head = text[: end.start() + 1]
    if len(tail) >= 8 and re.search(r"(?:\A|[.!?\n]\s*)" + re.escape(tail), head):
        return head
    return text


#: the tools an agent ends its turn with (``final_answer``, ReAct's ``Final Answer``, ``submit_answer``, ``finish``)
_FINAL_TOOLS = frozenset(
    "final_answer finalanswer final answer submit_answer submit give_answer provide_answer return_answer finish "
    "respond".split()
)
_TOOL_NAME_KEYS = ("tool", "name", "action", "function", "tool_name", "step", "type")
_TOOL_ARGS_KEYS = ("arguments", "args", "parameters", "input", "action_input", "tool_input", "content", "output")


def _scalar(value: object) -> str | None:
    return str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None


def _tool_answer(obj: dict[str, object]) -> str | None:
    """The answer of a final-answer tool call (``{"tool": "final_answer", "arguments": {"answer": "X"}}``, OpenAI's
    ``{"name": …, "arguments": "<json>"}``, ReAct's ``{"action": "Final Answer", "action_input": "X"}``)."""
    inner = obj.get("function")
    if isinstance(inner, dict):
        return _tool_answer(inner)
    calls = obj.get("tool_calls")
    if isinstance(calls, list) and calls and isinstance(calls[-1], dict):
        return _tool_answer(calls[-1])
    name = next((obj[k] for k in _TOOL_NAME_KEYS if isinstance(obj.get(k), str)), None)
    if not isinstance(name, str) or re.sub(r"[\s-]+", "_", name.strip().lower()) not in _FINAL_TOOLS:
        return None
    args = next((obj[k] for k in _TOOL_ARGS_KEYS if k in obj), None)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return args
    if isinstance(args, dict):
        for key in (*_JSON_KEYS, "text", "value", "output", "result", "response"):
            if _scalar(args.get(key)) is not None:
                return _scalar(args.get(key))
        values = [_scalar(v) for v in args.values()]
        return values[0] if len(values) == 1 else None
    return _scalar(args)


def _json_lines_answer(body: str) -> str | None:
    """An agent's steps as JSON lines (``{"step": "tool_call", …}`` … ``{"step": "final_answer", "content": "X"}``):
    the answer of its last final-answer step; ``None`` when a line is not a JSON object."""
    answer = None
    for line in (x.strip() for x in body.split("\n")):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        answer = _tool_answer(obj) or answer
    return answer


def _json_answer(text: str) -> str | None:
    body = text.strip()
    fence = _FENCE.fullmatch(body) if body.startswith("```") else None
    if fence:
        body = fence.group(1).strip()
    if not body.startswith("{"):
        return None
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return _json_lines_answer(body)
    if isinstance(obj, dict):
        for key in _JSON_KEYS:
            if _scalar(obj.get(key)) is not None:
                return _scalar(obj.get(key))
        return _tool_answer(obj) or _role_value(obj)
    return None


#: a JSON key that names the answer's role: a role word alone or after a word that singles the answer out
#: (``required_parameter``, ``method``, ``correct_function``, ``default_value``, ``result``; not a configuration
#: field such as ``agent_class``)
_ROLE_KEY = re.compile(
    r"^(?:(?:required|mandatory|correct|right|recommended|expected|best|answer|default|final)[_\s-]?)?"
    r"(?:answer|result|parameter|param|argument|arg|kwarg|method|function|func|class|decorator|exception|"
    r"default|value)s?$",
    re.I,
)


def _role_value(obj: dict[str, object]) -> str | None:
    """Structured output with a key that names the answer's role (``{"required_parameter": "name", "type": "str"}``):
    the first such key's value; not a tool call (an object with arguments)."""
    if any(k in obj for k in _TOOL_ARGS_KEYS) or not obj:
        return None
    return next((_scalar(v) for k, v in obj.items() if _ROLE_KEY.search(k) and _scalar(v) is not None), None)


#: an agent's final answer written as a tool call in code or markup: ``final_answer("X")`` (smolagents),
#: ``<final_answer>X</final_answer>`` / ``<answer>X</answer>``, ``Finish[X]`` (ReAct), a ``[final_answer] X`` step
_WRAPPED_ANSWER = re.compile(
    r"(?<![\w.])(?:final_answer|submit_answer|give_answer|provide_answer|return_answer)\s*\(\s*(?:answer\s*=\s*)?"
    r"(?:(?P<q>[\"'])(?P<quoted>[^\n]*?)(?P=q)|(?P<name>[A-Za-z_][\w.]*))\s*\)"
    r"|<(?P<tag>final_answer|answer|final)>\s*(?P<tagged>.*?)\s*</(?P=tag)>"
    r"|(?<![\w.])Finish\[(?P<finish>[^\]\n]+)\]"
    r"|^[^\n]*?(?:\[(?:final[ _]answer|answer)\][ \t]*:?|(?<![\w.])final_answer[ \t]*:)[ \t]*"
    r"(?P<bracketed>[^\n]+?)[ \t]*$",
    re.S | re.I | re.M,
)


def _wrapped_answer(text: str) -> str | None:
    found = list(_WRAPPED_ANSWER.finditer(text))
    if not found:
        return None
    last = found[-1]
    value = next(
        g
        for g in (
            last.group("quoted"),
            last.group("name"),
            last.group("tagged"),
            last.group("finish"),
            last.group("bracketed"),
        )
        if g is not None
    )
    return value.strip().strip("\"'").strip() or None


def declared_answer(text: str) -> str | None:
    """The answer the reply declares: a JSON ``answer`` field (or a final-answer tool call in JSON), else the value
    of its last ``Answer: …`` line (the answer protocol; decorations kept), else an agent's final-answer call
    (``final_answer("X")``, ``<final_answer>X</final_answer>``, ``Finish[X]``), else ``None``. A declared line with nothing after the colon declares the
    next non-empty line (``**Answer:**`` on a line of its own)."""
    js = _json_answer(text)
    if js is not None:
        return js
    found = list(_DECLARED.finditer(text))
    if not found:
        wrapped = _wrapped_answer(text)
        if wrapped is None:
            boxes = list(_BOXED.finditer(text))
            return _unlatex(boxes[-1].group(0)) or None if boxes else None
        return wrapped
    last = found[-1]
    value = last.group("value").strip()
    if value.strip("*_` "):
        return _unlatex(value)
    rest = [line for line in text[last.end() :].split("\n") if line.strip()]
    return _unlatex(rest[0].strip()) if rest else None


def _unlatex(value: str) -> str:
    r"""A declared answer written in LaTeX as plain text: a box's content, math delimiters dropped, ``{,}`` and ``\,``
    as the separators they print (``$\boxed{2{,}598{,}960}$`` -> ``2,598,960``), escaped characters as themselves
    (``output\_schema``); other text unchanged."""
    if "\\" not in value and "$" not in value:
        return value
    box = _BOXED.search(value)
    if box:
        value = value[: box.start()] + box.group("inner") + value[box.end() :]
    value = re.sub(r"\\text(?:tt|bf|rm)?\{([^{}]*)\}", r"\1", value)
    value = value.replace("{,}", ",").replace("\\,", " ").replace("\\ ", " ").replace("\\(", "").replace("\\)", "")
    value = re.sub(r"\\([_{}%#&$])", r"\1", value)  # escaped characters (``output\_schema``; session 14, fresh28)
    return value.replace("$", "").strip()


# -- numbers -------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SUPERSCRIPT = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a", "0123456789-+")
#: a power of ten as written in prose (``10⁻⁹``, ``1 × 10⁻⁹``, ``10^-9``, ``10**-9``)
_POWER = (
    r"(?:\d+(?:\.\d+)?\s*[\u00d7x\u00b7*]\s*)?10(?:[\u207b\u207a]?[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+|"
    r"(?:\^|\*\*)[-+]?\d+)(?![\w.]*\w)"
)
_POWER_PARTS = re.compile(r"(?:(?P<m>\d+(?:\.\d+)?)\s*[\u00d7x\u00b7*]\s*)?10(?:\^|\*\*)?(?P<e>[-+]?\d+)")
#: a decimal comma (``0,6``: one or two digits after the comma; three group thousands)
_DECIMAL_COMMA = re.compile(r"[-+]?\d+,\d{1,2}")
_GROUPED = re.compile(
    r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d{1,3}(?:[ \u00a0\u202f\u2009]\d{3})+(?:\.\d+)?|[-+]?\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?"
)


def number_value(text: str) -> float | None:
    """``text`` as a number (``0.60``, ``1e-9``, ``2,598,960``, ``2 598 960``, ``2.598.960``: dots grouping digits
    twice or more, as in German; a decimal comma ``0,6``; a power of ten ``10⁻⁹``, ``1 × 10^-9``), else ``None``."""
    s = text.strip().strip("`*'\"").rstrip(".,;:!?")
    power = _POWER_PARTS.fullmatch(s.translate(_SUPERSCRIPT))
    if power and re.fullmatch(_POWER, s):
        return float(power.group("m") or 1) * 10.0 ** int(power.group("e"))
    if _DECIMAL_COMMA.fullmatch(s):
        return float(s.replace(",", "."))
    if _GROUPED.fullmatch(s):
        if s.count(".") >= 2:  # ``2.598.960`` / ``1.234.567,5``: dots group, a comma marks the decimals
            s = s.replace(".", "").replace(",", ".")
        s = re.sub(r"[, \u00a0\u202f\u2009]", "", s)
    if _NUMBER.fullmatch(s):
        try:
            return float(s)
        except ValueError:
            return None
    return None


# -- code ----------------------------------------------------------------------------------------------------------


@dataclass
class CodeNames:
    """What a piece of code names.

    Attributes:
        calls: ``(function, keyword argument names)`` of every call, in source order (``a.b.f`` dotted).
        decorators: Decorator functions (dotted).
        imports: Names an import brings in (``from m import n`` -> ``m.n``; ``import m`` -> ``m``).
        assigned: ``(name, value)`` of ``name=value`` / ``name: type = value`` / ``name: type`` (value ``""``) whose
            value is not a call (``i = f(x)`` is the call's).
        names: A bare expression's names (``json.dumps``, ``nsmallest``).
        kwarg_values: ``(keyword, value)`` of the calls' keyword arguments.
        annotations: The types of annotated names and parameters (``tool_context: ToolContext`` ->
            ``ToolContext``), and the values of a YAML mapping's keys (``agent_class: LoopAgent`` -> ``LoopAgent``).
        caught: The exception classes ``except`` clauses catch.
        commented: ``(keyword, comment)`` of a keyword argument on a line of its own that carries a comment
            (``    after_agent_callback=log,  # runs after run_async``).
        overrides: Methods defined in the body of a class that has a base class (``class P(BasePlugin): async def
            before_agent_callback(…)``): the methods the code overrides.
    """

    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    assigned: list[tuple[str, str]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    kwarg_values: list[tuple[str, str]] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    caught: list[str] = field(default_factory=list)
    commented: list[tuple[str, str]] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.calls or self.decorators or self.imports or self.assigned or self.names or self.annotations)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Call):  # SequenceMatcher(...).ratio: the qualifier is the class
        return _dotted(node.func)
    if isinstance(node, ast.Constant) and node.value is not None:  # ' '.join: a method of the literal's type
        return type(node.value).__name__
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.Tuple):
        return type(node).__name__.lower()
    return None


def _literal(node: ast.AST | None) -> str:
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        return repr(node.value) if isinstance(node.value, str) else str(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return f"-{node.operand.value!s}"
    return _dotted(node) or ""


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.out = CodeNames()

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func)
        if func:
            self.out.calls.append((func, tuple(k.arg for k in node.keywords if k.arg)))
            self.out.kwarg_values += [(k.arg, _literal(k.value)) for k in node.keywords if k.arg]
        self.generic_visit(node)

    def _decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if not isinstance(node, ast.ClassDef):  # ``def f(tool_context: ToolContext)`` names the class
            params = node.args
            for arg in [*params.posonlyargs, *params.args, *params.kwonlyargs]:
                name = _dotted(arg.annotation) if arg.annotation is not None else None
                if name:
                    self.out.annotations.append(name)
        for d in node.decorator_list:
            name = _dotted(d.func if isinstance(d, ast.Call) else d)
            if name:
                self.out.decorators.append(name)
            if isinstance(d, ast.Call):
                self.out.kwarg_values += [(k.arg, _literal(k.value)) for k in d.keywords if k.arg]
                for a in [*d.args, *(k.value for k in d.keywords)]:
                    self.visit(a)
        if isinstance(node, ast.ClassDef) and node.bases:
            self.out.overrides += [
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and not f.name.startswith("_")
            ]
        for stmt in node.body:
            self.visit(stmt)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _decorated

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type] if node.type else []
        self.out.caught += [n for n in (_dotted(t) for t in types) if n]
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.out.imports += [a.name for a in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.out.imports += [f"{node.module}.{a.name}" if node.module else a.name for a in node.names]

    def visit_Assign(self, node: ast.Assign) -> None:
        if not isinstance(node.value, ast.Call | ast.Await | ast.Subscript):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.out.assigned.append((t.id, _literal(node.value)))
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.out.assigned.append((node.target.id, _literal(node.value)))
            annotation = _dotted(node.annotation)
            if annotation:  # ``tool_context: ToolContext`` names the class too
                self.out.annotations.append(annotation)
        if node.value is not None:
            self.visit(node.value)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Name | ast.Attribute):
            name = _dotted(node.value)
            if name:
                self.out.names.append(name)
        self.generic_visit(node)


_CALL_RE = re.compile(r"@?([A-Za-z_][\w.]*)\s*\(")
_KWARG_RE = re.compile(r"(?<![=!<>])\b([A-Za-z_]\w*)\s*=(?!=)\s*([^,()\s]*)")
_DECORATOR_RE = re.compile(r"^\s*@([A-Za-z_][\w.]*)", re.M)
_NAME_RE = re.compile(r"^[A-Za-z_][\w.]*$")
#: a YAML mapping's line (``agent_class: LoopAgent``, ``  - config_path: a.yaml``, ``sub_agents:``)
#: a keyword argument on a line of its own, with a comment (``    after_agent_callback=log,  # runs after run_async``)
_COMMENTED_KWARG = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*=(?!=)[^#\n]*#[ \t]*([^\n]*\S)[ \t]*$", re.M)
_YAML_LINE = re.compile(r"^\s*(?:-\s+)?[A-Za-z_][\w.-]*\s*:(?:\s+(?P<value>\S.*?))?\s*$")


def code_names(code: str) -> CodeNames | None:
    """The names ``code`` uses (see :class:`CodeNames`); ``None`` when it is not code (prose, a number)."""
    text = code.strip()
    if not text or number_value(text) is not None:
        return None
    tree: ast.AST | None = None
    for attempt in (text, text.rstrip(":") + "\n    pass", text + "\n    pass", text + " pass"):
        try:
            tree = compile(attempt, "<reply>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            break
        except (SyntaxError, ValueError):
            continue
    if tree is not None:
        visitor = _Visitor()
        visitor.visit(tree)
        visitor.out.commented = [(m.group(1), m.group(2).strip()) for m in _COMMENTED_KWARG.finditer(text)]
        return visitor.out
    out = CodeNames()  # not parseable (``@total_ordering``, ``key=``, a cut-off call): read it with patterns
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and all(_YAML_LINE.match(ln) for ln in lines):  # a YAML mapping: its values name what it configures
        values = [v.strip("'\"") for ln in lines for v in [_YAML_LINE.match(ln).group("value")] if v]  # type: ignore[union-attr]
        out.annotations = [v for v in values if _NAME_RE.match(v) and number_value(v) is None]
        return out if out.annotations else None
    out.decorators = _DECORATOR_RE.findall(text)
    out.calls = [(m.group(1), ()) for m in _CALL_RE.finditer(text) if not m.group(0).startswith("@")]
    kwargs = [(m.group(1), m.group(2)) for m in _KWARG_RE.finditer(text)]
    if out.calls:
        out.calls[0] = (out.calls[0][0], tuple(k for k, _ in kwargs))
        out.kwarg_values = kwargs
    else:
        out.assigned = kwargs
    stripped = text.rstrip(",( ")
    if out.empty() and _NAME_RE.match(stripped):
        out.names.append(stripped)
    return out if not out.empty() else None


# -- sentences and mentions ----------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+|\n+|;\s*|\s+[\u2014\u2013]\s+|\s+--?\s+")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a reply (a fenced code block is one sentence)."""

    index: int
    start: int
    end: int
    text: str
    code: bool = False


def sentences(text: str) -> tuple[Sentence, ...]:
    """``text`` cut into sentences: ends of sentences, line breaks, ``;`` and dashes between spaces; fenced code
    blocks and backticked spans are never cut. A sentence's ``index`` is its place in the tuple. (Cached: the grader
    asks for the same text's sentences many times.)"""
    return _sentences(text)


def sentence_end(text: str, index: int, more: int = 0) -> int:
    """Where sentence ``index`` (or, ``more`` > 0, the ``more``-th sentence after it, or the last one) ends; the
    text's end when there is no such sentence."""
    sents = _sentences(text)
    return sents[min(index + more, len(sents) - 1)].end if 0 <= index < len(sents) else len(text)


def sentence_of(text: str, pos: int, default: int | None = None) -> int:
    """The index of the sentence that holds position ``pos``; outside every sentence (between two), ``default``
    (``None``: the last sentence's index, ``0`` when there is none). Binary search over the cached sentences."""
    sents = _sentences(text)
    i = bisect.bisect_right(_starts(text), pos) - 1
    if i >= 0 and pos < sents[i].end:
        return sents[i].index
    if default is not None:
        return default
    return sents[-1].index if sents else 0


@functools.lru_cache(maxsize=256)
def _starts(text: str) -> tuple[int, ...]:
    return tuple(s.start for s in _sentences(text))


#: a hard-wrapped line of prose (a long line, cut mid-sentence) and the line that carries it on (lowercase or code)
_WRAPPED = re.compile(r"[^\n]{60,}[^\s.!?:;|]$")
_CARRIED = re.compile(r"^(?![ \t]*(?:[-*\u2022+|>#]|\d+[.)])\s)[ \t]*[a-z`(\d\"']")


def _soft_wrap(text: str, at: int) -> bool:
    """The line break at ``at`` only wraps a long line of prose (``… you don't need the\n`fnmatchcase` variant.``)."""
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return bool(_WRAPPED.search(line) and _CARRIED.match(text[at + 1 : at + 80]))


@functools.lru_cache(maxsize=256)
def _sentences(text: str) -> tuple[Sentence, ...]:
    out: list[Sentence] = []
    inside = bytearray(len(text) + 1)  # 1 where a sentence may not end: inside a fence or a backticked span
    for m in [*_FENCE.finditer(text), *re.finditer(r"`[^`\n]+`", text)]:
        inside[m.start() + 1 : m.end()] = b"\x01" * max(0, m.end() - m.start() - 1)
    last = 0
    pieces: list[tuple[int, int, bool]] = []
    for m in _SENTENCE_END.finditer(text):
        if inside[m.start()] or (m.group(0) == "\n" and _soft_wrap(text, m.start())):
            continue
        pieces.append((last, m.start(), False))
        last = m.end()
    pieces.append((last, len(text), False))
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    f = 0  # pieces and fences are both in order: one pass over each
    for a, b, _ in pieces:
        while f < len(fences) and fences[f][0] < a:
            f += 1
        while (
            f < len(fences) and fences[f][0] < b
        ):  # a fence inside a piece: the piece before, the fence, the piece after
            fa, fb = fences[f]
            if text[a:fa].strip():
                out.append(Sentence(len(out), a, fa, text[a:fa]))
            out.append(Sentence(len(out), fa, fb, text[fa:fb], code=True))
            a = fb
            f += 1
        if text[a:b].strip():
            out.append(Sentence(len(out), a, b, text[a:b]))
    return tuple(out)


@dataclass
class Mention:
    """One thing a reply mentions that may be an answer.

    Attributes:
        text: The text as written (decorations removed).
        start, end: Its place in the cleaned reply.
        sentence: The index of its sentence.
        kind: ``code`` (backticked or fenced), ``bold``, ``plain`` (a name-like token), ``number``, ``line`` (a line
            that is one token) or ``spot`` (an accepted answer's own words).
        code: What it names when read as code (``None``: not code).
        value: Its number (``None``: not a number).
    """

    text: str
    start: int
    end: int
    sentence: int
    kind: str
    code: CodeNames | None = None
    value: float | None = None
    flags: set[str] = field(default_factory=set)


_TOKEN = re.compile(
    r"```[ \t]*[\w+.-]*[ \t]*\n(?P<fence>.*?)(?:\n[ \t]*```|\Z)"
    r"|\*\*`(?P<boldcode>[^`\n]+)`\*\*"
    r"|`(?P<bt>[^`\n]+)(?:`|$)"
    r"|\*\*(?P<bold>[^*\n]+?)\*\*"
    r"|(?P<num>(?<![\w.])[-+]?(?:"
    + _POWER
    + r"|\d+,\d{1,2}(?![\d,])|\d{1,3}(?:\.\d{3}){2,}(?![\d.]*\d)|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[\u00a0\u202f\u2009 ]\d{3})+(?![\d.])|"
    r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.]*\w))"
    r"|(?P<ident>@?[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:\([^()\n]*\))?)",
    re.S,
)


def _name_like(token: str) -> bool:
    """A dotted, underscored, called, decorated or camel-case name (``ADK``-style acronyms are prose)."""
    t = token.lstrip("@")
    if "_" in t or "." in t.strip(".") or "(" in t or token.startswith("@"):
        return True
    if t.isupper():
        return False
    return any(ch.isupper() for ch in t[1:])


def mentions(text: str, spotted: Callable[[str], bool], numbers: bool = True) -> Iterator[Mention]:
    """The mentions of ``text`` in order (see :class:`Mention`). ``spotted(word)``: the word is an accepted answer
    (a candidate even unformatted); ``numbers``: numbers in prose are candidates."""
    lines = _line_spans(text)
    for m in _TOKEN.finditer(text):
        s, e = m.start(), m.end()
        if m.group("fence") is not None:
            body = m.group("fence")
            if _TREE.search(body):  # a tree drawing: the hierarchy under its root, which is what it shows
                root = body.strip().split("\n", 1)[0].strip()
                yield Mention(root, s, e, sentence_of(text, s), "code", code_names(root.split(" ", 1)[0]))
                continue
            yield Mention(body.strip(), s, e, sentence_of(text, s), "code", code_names(body), number_value(body))
            yield from _printed_numbers(body, m.start("fence"), sentence_of(text, s))
        elif m.group("boldcode") is not None or m.group("bt") is not None:
            body = m.group("boldcode") if m.group("boldcode") is not None else m.group("bt")
            yield Mention(body.strip(), s, e, sentence_of(text, s), "code", code_names(body), number_value(body))
        elif m.group("bold") is not None:
            body = m.group("bold").strip()
            value = number_value(body)
            if value is not None or _name_like(body) or spotted(body) or _one_token_line(text, lines, s, e):
                yield Mention(body, s, e, sentence_of(text, s), "bold", code_names(body), value)
        elif m.group("num") is not None:
            if numbers or _one_token_line(text, lines, s, e):
                yield Mention(m.group("num"), s, e, sentence_of(text, s), "number", None, number_value(m.group("num")))
        else:
            tok = m.group("ident")
            if _name_like(tok):
                yield Mention(tok, s, e, sentence_of(text, s), "plain", code_names(tok))
            elif spotted(tok):
                yield Mention(tok, s, e, sentence_of(text, s), "spot", code_names(tok))
            elif _one_token_line(text, lines, s, e):
                yield Mention(tok, s, e, sentence_of(text, s), "line", code_names(tok))


#: a line of a tree drawing (``├── LlmAgent``, ``└── LoopAgent``, ``|-- x``)
_TREE = re.compile(r"^\s*(?:[\u2502 ]*[\u251c\u2514]\u2500|[|`+]--)", re.M)


#: a code line's comment that gives its result: one number, maybe after an arrow or ``returns`` (``# 2598960``,
#: ``# -> 2598960``, ``# => 1000``, ``# returns 6``)
_RESULT_COMMENT = re.compile(r"\S.*?\s#\s*(?:->|=>|==?|→|returns?:?|gives:?|out:?)?\s*(?P<n>[^\s#][^#]*?)\s*$", re.I)


def _printed_numbers(body: str, at: int, sentence: int) -> Iterator[Mention]:
    """The numbers a code block gives as results: in a REPL session, a line that is one number after a ``>>>`` prompt
    line; on any code line, a comment that is one number (``math.comb(52, 5)  # 2598960``)."""
    prompted = False
    for line in re.finditer(r"[^\n]+", body):
        t = line.group(0).strip()
        comment = _RESULT_COMMENT.match(t)
        if comment and number_value(comment.group("n")) is not None:
            n = comment.group("n")
            a = at + line.start() + line.group(0).find(t) + comment.start("n")
            yield Mention(n, a, a + len(n), sentence, "number", None, number_value(n))
        if re.match(r"(?:>>>|\.\.\.|In \[\d+\]:)", t):
            prompted = True
        elif prompted and number_value(t) is not None:
            a = at + line.start() + line.group(0).find(t)
            yield Mention(t, a, a + len(t), sentence, "number", None, number_value(t))


#: words that label or open a reply, never answers on a line of their own (``**Answer**``, ``Sure!``)
LABELS = frozenset(
    "answer answers function functions class method parameter argument solution explanation options option details "
    "why note summary code example response result output sure certainly yes no ok okay absolutely hello hi thanks "
    "question reasoning analysis conclusion correct final short reply here well hmm great "
    # a ticket's and a scratchpad's section labels (``Resolution:``, ``Scratchpad:``; session 13, grader10)
    "resolution scratchpad workaround diagnosis cause steps notes draft thoughts thinking".split()
)


#: what may stand beside a token on a line of its own (decorations and end punctuation)
_DECORATION = re.compile(r"[ \t*_`'\".,;:!?()\[\]#>-]*")


def _line_spans(text: str) -> tuple[list[int], list[int]]:
    """Where each line of ``text`` starts and ends (in order)."""
    starts = [0, *(m.end() for m in re.finditer(r"\n", text))]
    ends = [*(m.start() for m in re.finditer(r"\n", text)), len(text)]
    return starts, ends


#: a Markdown heading's opening (``### ``)
_HEADING = re.compile(r"[ \t]*#{1,6}[ \t]")


def _one_token_line(text: str, lines: tuple[list[int], list[int]], s: int, e: int) -> bool:
    """The token at ``s:e`` is the only thing on its line (decorations and end punctuation aside) and not a label
    word (:data:`LABELS`). ``lines``: :func:`_line_spans` of ``text`` (a binary search finds the token's line, and
    only the decorations next to the token are read, so a long line costs no more than a short one)."""
    if text[s:e].strip("*_`'\" ").lower() in LABELS:
        return False
    starts, ends = lines
    i = bisect.bisect_right(starts, s) - 1
    if _HEADING.match(text, starts[i]) and text[s:e].isalpha() and "`" not in text[starts[i] : ends[i]]:
        return False  # ``### Changed``: a plain word heading a section is its title, not an answer
    return bool(_DECORATION.fullmatch(text, starts[i], s) and _DECORATION.fullmatch(text, e, max(e, ends[i])))
