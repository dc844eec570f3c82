"""Prompt rendering in the structured-injection format.

A trial's prompt is two chat messages. The **system** message holds a short preamble and the documentation context,
one block per document in the order the request gives (the caller's canonical order, so trials of one case share
long prompt prefixes and a local solver can reuse their KV cache)::

    You are an expert on the documented API. ...

    DOCUMENTATION CONTEXT:
    The following documents are available for reference. Use them to answer the query.

    [START_DOCUMENT: google.adk.agents.llm_agent.LlmAgent]
    Class LlmAgent: ...
    [END_DOCUMENT]

    [START_DOCUMENT: ...]
    ...
    [END_DOCUMENT]

The **user** message holds the question, the options (multiple choice) or the source to fix (``fix_error``), and the
answer instruction of the benchmark type: a bare identifier (``api_understanding``), an option letter
(``multiple_choice``) or the full fixed source file in one fenced block (``fix_error``).

**The answer protocol** (issue 34). With the protocol on, the string and multiple-choice instructions ask for the
answer on a final line of a fixed form, ``Answer: <identifier>`` / ``Answer: <letter>`` (:data:`PROTOCOL_INSTRUCTIONS`),
the way the standard evaluation harnesses do; the checkers read such a declared answer first, strictly, and fall back
to the answer grammar for a reply without one (``docs/answer-grammar.md``). :attr:`PromptTemplate.answer_protocol`
chooses: ``on``, ``off``, or ``auto`` (the default). ``auto`` depends on the solver: for the local model it is
:data:`PROTOCOL_DEFAULTS` per benchmark type — off, the setting measured not to cost the small model its pass rate or
its log-probability signal (``benchmarks/bench_protocol.py``, table in ``benchmarks/README.md``); a hosted chat solver
resolves it to :data:`HOSTED_PROTOCOL` (on, :func:`for_hosted`), where the checker alone decides every trial. The protocol changes the prompt, so its hash:
a run directory resumed with the other setting is refused with a message that says so (the run's manifest records
the prompt).

Everything is overridable through a :class:`PromptTemplate` (in code, or a YAML/JSON file with the same field names
via :meth:`PromptTemplate.from_file`). Templates are ``str.format`` strings; braces inside documents, questions and
code are never interpreted (only the template's own fields are).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.errors import FormatError

if TYPE_CHECKING:
    from deltap.documents import Document
    from deltap.solvers.base import SolveRequest

__all__ = [
    "ANSWER_PROTOCOLS",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_TEMPLATE",
    "HOSTED_PROTOCOL",
    "Message",
    "PROTOCOL_DEFAULTS",
    "PROTOCOL_INSTRUCTIONS",
    "PromptTemplate",
    "for_hosted",
    "messages_to_text",
    "prompt_hash",
    "render_context",
    "render_document",
    "render_prompt",
    "template_digest",
    "template_fingerprint",
]

Message = dict[str, str]

DEFAULT_INSTRUCTIONS: dict[str, str] = {
    "api_understanding": (
        "Answer with the exact identifier only (a class, method, parameter or attribute name), "
        "with no explanation and no other text."
    ),
    "multiple_choice": "Answer with the letter of the correct option only (for example: B), with no explanation.",
    "fix_error": (
        "Return the complete fixed source file in a single ```python code block, with no explanation. "
        "Keep the module's public names unchanged."
    ),
    "qa": "Answer with the answer only (a name, number, value or short phrase), with no explanation and no other text.",
    "beir": "Answer the question concisely.",
}

#: the answer instructions with the protocol line: the answer on a final line ``Answer: ...`` (benchmark types
#: without one here have no protocol)
PROTOCOL_INSTRUCTIONS: dict[str, str] = {
    "api_understanding": (
        "Answer with the exact identifier only (a class, method, parameter or attribute name), with no explanation, "
        "on a final line of the form:\nAnswer: <identifier>"
    ),
    "multiple_choice": (
        "Answer with the letter of the correct option only, with no explanation, on a final line of the form:\n"
        "Answer: <letter>\n(for example: Answer: B)"
    ),
    "qa": (
        "Answer with the answer only (a name, number, value or short phrase), with no explanation, on a final line "
        "of the form:\nAnswer: <answer>"
    ),
}

#: the values of :attr:`PromptTemplate.answer_protocol`
ANSWER_PROTOCOLS = ("auto", "on", "off")

#: whether ``answer_protocol="auto"`` asks for the protocol line, per benchmark type, for a solver that runs the model
#: in process (the local model). Measured with the local model (``benchmarks/bench_protocol.py``, table in
#: ``benchmarks/README.md``): SmolLM2-135M never writes the line, and the instruction lowers its string-match pass
#: lift by one reply and its log-probability lift by 2.5 %, its multiple-choice pass rate by one question of five —
#: off everywhere. A hosted chat solver resolves ``auto`` to :data:`HOSTED_PROTOCOL` instead (:func:`for_hosted`).
PROTOCOL_DEFAULTS: dict[str, bool] = {
    "api_understanding": False,
    "multiple_choice": False,
    "qa": False,
}

#: what ``answer_protocol="auto"`` becomes for a hosted chat solver (``openai``, ``gemini``): ``on``. A hosted model
#: has no log-probability outcome in a run, so the checker alone decides every trial, and chat models follow a final
#: answer line instruction (the setting of OpenAI's simple-evals and lm-evaluation-harness); the checker then reads
#: the declared line first, strictly, and the grammar only reads replies without one. Measured on blind reply sets
#: written in that setting (``benchmarks/bench_checkers.py``, "protocol setting" in ``benchmarks/README.md``). A
#: small model behind an OpenAI-compatible server that does not write the line (SmolLM2) is better served with
#: ``--solver-option answer_protocol=off``.
HOSTED_PROTOCOL = "on"


@dataclass(frozen=True)
class PromptTemplate:
    """The pieces a prompt is made of; every field is overridable.

    Args:
        system: First part of the system message (before the context).
        context_header: Opens the documentation block (``DOCUMENTATION CONTEXT:`` and one line of guidance).
        document: One document; fields ``{doc_id}``, ``{title}``, ``{text}``, ``{body}`` (title line + text, the
            title only when the text does not already start with it).
        separator: Between two documents.
        empty_context: Rendered instead of the context block when a trial has no document (``""``: no block).
        user: The user message; fields ``{question}``, ``{options}``, ``{source}``, ``{instruction}``.
        options_item: One multiple-choice option; fields ``{letter}``, ``{text}``.
        source_block: The source file to fix; field ``{code}``.
        instructions: Answer instruction per benchmark type (missing types use ``DEFAULT_INSTRUCTIONS``, or
            ``PROTOCOL_INSTRUCTIONS`` where the answer protocol is on).
        answer_protocol: ``auto`` (:data:`PROTOCOL_DEFAULTS` per benchmark type), ``on`` (every type with a protocol
            instruction) or ``off``: whether the instruction asks for a final ``Answer: ...`` line.
    """

    system: str = "You are an expert on the documented API. Answer using the documentation context when it helps."
    context_header: str = (
        "DOCUMENTATION CONTEXT:\nThe following documents are available for reference. Use them to answer the query."
    )
    document: str = "[START_DOCUMENT: {doc_id}]\n{body}\n[END_DOCUMENT]"
    separator: str = "\n\n"
    empty_context: str = ""
    user: str = "{question}{options}{source}\n\n{instruction}"
    options_item: str = "{letter}. {text}"
    source_block: str = "\n\nThe file to fix:\n```python\n{code}\n```"
    instructions: Mapping[str, str] = field(default_factory=dict)
    answer_protocol: str = "auto"

    def protocol(self, benchmark_type: str) -> bool:
        """Whether the instruction of ``benchmark_type`` asks for the final ``Answer: ...`` line."""
        if benchmark_type not in PROTOCOL_INSTRUCTIONS or self.answer_protocol == "off":
            return False
        return self.answer_protocol == "on" or PROTOCOL_DEFAULTS.get(benchmark_type, False)

    def instruction(self, benchmark_type: str) -> str:
        """The answer instruction for a benchmark type: the user's override, else the protocol instruction where the
        protocol is on, else the default, else the generic one."""
        if benchmark_type in self.instructions:
            return self.instructions[benchmark_type]
        if self.protocol(benchmark_type):
            return PROTOCOL_INSTRUCTIONS[benchmark_type]
        return DEFAULT_INSTRUCTIONS.get(benchmark_type, DEFAULT_INSTRUCTIONS["beir"])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<template>") -> PromptTemplate:
        """Build a template from a mapping with (a subset of) the field names; unknown keys are an error."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise FormatError(source, f"unknown prompt template field(s) {unknown}; expected some of {sorted(names)}")
        for key, value in data.items():
            if key == "instructions":
                if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                    raise FormatError(source, "'instructions' must map benchmark types to strings")
            elif not isinstance(value, str):
                raise FormatError(source, f"prompt template field {key!r} must be a string, got {type(value).__name__}")
        template = replace(cls(), **dict(data))
        template.validate(source)
        return template

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTemplate:
        """Load a template from a YAML or JSON file (a mapping of field names to strings)."""
        from deltap._io import read_text, yaml_loads

        path = Path(path)
        data = yaml_loads(read_text(path), path, what="invalid YAML/JSON")
        if not isinstance(data, Mapping):
            raise FormatError(path, "a prompt template file must be a mapping of field names to strings")
        return cls.from_dict(data, str(path))

    def validate(self, source: str = "<template>") -> None:
        """Check every field formats with its documented placeholders (catches typos like ``{questoin}``) and
        ``answer_protocol`` is one of :data:`ANSWER_PROTOCOLS`."""
        if self.answer_protocol not in ANSWER_PROTOCOLS:
            raise FormatError(
                source, f"answer_protocol must be one of {', '.join(ANSWER_PROTOCOLS)}, got {self.answer_protocol!r}"
            )
        probes: dict[str, dict[str, str]] = {
            "document": {"doc_id": "", "title": "", "text": "", "body": ""},
            "user": {"question": "", "options": "", "source": "", "instruction": ""},
            "options_item": {"letter": "", "text": ""},
            "source_block": {"code": ""},
        }
        for name, probe in probes.items():
            try:
                getattr(self, name).format(**probe)
            except (KeyError, IndexError, ValueError) as exc:
                raise FormatError(
                    source,
                    f"prompt template field {name!r} uses an unknown placeholder or bad braces ({exc!r}); "
                    f"allowed: {', '.join('{' + k + '}' for k in probe)}; write literal braces as {{{{ and }}}}",
                ) from None


DEFAULT_TEMPLATE = PromptTemplate()


def for_hosted(template: PromptTemplate | None) -> PromptTemplate:
    """The template a hosted chat solver renders: ``template`` (default :data:`DEFAULT_TEMPLATE`) with
    ``answer_protocol="auto"`` resolved to :data:`HOSTED_PROTOCOL`; an explicit ``on`` / ``off`` is kept. The
    resolved setting is what the run's manifest records (its template digest and prompt hash)."""
    template = template or DEFAULT_TEMPLATE
    return replace(template, answer_protocol=HOSTED_PROTOCOL) if template.answer_protocol == "auto" else template


def template_fingerprint(template: PromptTemplate) -> dict[str, Any]:
    """The template's fields as a mapping, for a run's manifest: ``answer_protocol`` is left out while it is
    ``auto`` (templates before issue 34 had no such field, so an unchanged template keeps the digest it was logged
    with; what ``auto`` renders is in the manifest's prompt hash)."""
    data = asdict(template)
    data["instructions"] = dict(template.instructions)
    if template.answer_protocol == "auto":
        del data["answer_protocol"]
    return data


def template_digest(template: PromptTemplate | None) -> str:
    """16 hex digits of the SHA-256 of the template's fields (:func:`template_fingerprint`, canonical JSON; the
    default template for ``None``): what a run's manifest and an end-to-end log record of the prompt template."""
    fields = template_fingerprint(template if template is not None else DEFAULT_TEMPLATE)
    return prompt_hash(json.dumps(fields, sort_keys=True, ensure_ascii=False))[:16]


def render_document(doc: Document, template: PromptTemplate = DEFAULT_TEMPLATE) -> str:
    """One ``[START_DOCUMENT: id] ... [END_DOCUMENT]`` block."""
    text = doc.text.strip("\n")
    first_line = text.split("\n", 1)[0]
    body = f"{doc.title}\n{text}" if doc.title and doc.title not in first_line else text
    return template.document.format(doc_id=doc.doc_id, title=doc.title, text=text, body=body)


def render_context(documents: Sequence[Document], template: PromptTemplate = DEFAULT_TEMPLATE) -> str:
    """The documentation block: header and every document, in the given order."""
    if not documents:
        return template.empty_context
    blocks = template.separator.join(render_document(d, template) for d in documents)
    return f"{template.context_header}\n\n{blocks}"


def render_prompt(request: SolveRequest, template: PromptTemplate | None = None) -> list[Message]:
    """The chat messages of a request: ``[{"role": "system", ...}, {"role": "user", ...}]``.

    Args:
        request: Question, documents (already in canonical order), benchmark type, options, and for ``fix_error``
            ``request.extra["unfixed_code"]`` (the source to fix).
        template: Overrides; default :data:`DEFAULT_TEMPLATE`.

    Returns:
        Two messages. Backends apply their own chat template (local model) or send them as is (chat APIs).
    """
    template = template or DEFAULT_TEMPLATE
    context = render_context(request.documents, template)
    system = f"{template.system}\n\n{context}" if context else template.system
    options = ""
    if request.options:
        items = "\n".join(template.options_item.format(letter=k, text=v) for k, v in request.options.items())
        options = f"\n\n{items}"
    source = ""
    code = request.extra.get("unfixed_code") if request.extra else None
    if code:
        source = template.source_block.format(code=str(code).rstrip("\n"))
    user = template.user.format(
        question=request.question.strip(),
        options=options,
        source=source,
        instruction=template.instruction(request.benchmark_type),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def messages_to_text(messages: Sequence[Mapping[str, str]]) -> str:
    """A plain-text rendering of chat messages (for completion-only backends and for hashing)."""
    return "\n\n".join(f"{m['role'].upper()}:\n{m['content']}" for m in messages)


def prompt_hash(messages: Sequence[Mapping[str, str]] | str) -> str:
    """SHA-256 (hex) of a prompt: the canonical JSON of the messages, or the string itself."""
    payload = messages if isinstance(messages, str) else json.dumps(list(messages), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
