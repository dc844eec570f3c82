"""API-symbol YAML -> one document per symbol.

Input: a YAML list of symbols in the shape of ``shared/data/adk/corpus_ranked_targets.yaml``: ``id`` (fully
qualified name), ``type`` (CLASS / METHOD / FUNCTION / MODULE), ``name``, ``docstring``, ``constructor_signature``,
``signature``, ``methods`` / ``properties`` (lists of ``{signature, docstring}``), ``inherited_methods`` /
``inherited_properties`` (``{BaseName: [...]}``), ``aliases``, ``file_path``, ``rank``, ``usage_score``.

Output text (readable, compact — it is what a solver reads)::

    Class google.adk.agents.llm_agent.LlmAgent
    Signature: def __init__(self, ...)
    <docstring>
    Methods:
      def run_async(self, ...)
        <first docstring line>
    Properties:
      model: str
    Inherited from BaseAgent: name, description, ...

Metadata keeps ``type``, ``name``, ``aliases``, ``file_path``, ``rank``, ``usage_score`` (those present).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from deltap.documents import Corpus, Document
from deltap.errors import FormatError

__all__ = ["read_api_symbols", "render_symbol", "symbol_to_document"]

logger = logging.getLogger(__name__)

_KEEP_META = ("type", "name", "aliases", "file_path", "rank", "usage_score", "group")


def _first_line(doc: str | None) -> str:
    if not doc:
        return ""
    for line in doc.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _member_name(signature: str) -> str:
    sig = signature.strip()
    if sig.startswith("def "):
        sig = sig[4:]
    for stop in ("(", ":"):
        i = sig.find(stop)
        if i > 0:
            sig = sig[:i]
    return sig.strip()


def render_symbol(sym: Mapping[str, Any], max_members: int = 40) -> str:
    """Render one symbol as the readable text a solver sees (see the module docstring)."""
    kind = str(sym.get("type") or "symbol").capitalize()
    lines = [f"{kind} {sym['id']}"]
    signature = sym.get("constructor_signature") or sym.get("signature")
    if signature:
        lines.append(f"Signature: {str(signature).strip()}")
    doc = (sym.get("docstring") or "").strip()
    if doc:
        lines.append(doc)
    for key, title in (("methods", "Methods"), ("properties", "Properties")):
        members = sym.get(key) or []
        if members:
            lines.append(f"{title}:")
            for m in members[:max_members]:
                if not isinstance(m, Mapping):
                    continue
                lines.append(f"  {str(m.get('signature', '')).strip()}")
                first = _first_line(m.get("docstring"))
                if first:
                    lines.append(f"    {first}")
            if len(members) > max_members:
                lines.append(f"  ... {len(members) - max_members} more")
    for key in ("inherited_methods", "inherited_properties"):
        inherited = sym.get(key) or {}
        if isinstance(inherited, Mapping):
            for base, members in inherited.items():
                names = [_member_name(str(m.get("signature", ""))) for m in members or [] if isinstance(m, Mapping)]
                names = [n for n in dict.fromkeys(names) if n]
                if names:
                    what = "methods" if key == "inherited_methods" else "properties"
                    lines.append(f"Inherited {what} from {base}: {', '.join(names)}")
    return "\n".join(lines)


def symbol_to_document(sym: Mapping[str, Any]) -> Document:
    """One symbol record -> :class:`Document` (title = short name)."""
    meta = {k: sym[k] for k in _KEEP_META if sym.get(k) is not None}
    meta["aliases"] = list(sym.get("aliases") or [])
    title = str(sym.get("name") or str(sym["id"]).rsplit(".", 1)[-1])
    return Document(doc_id=str(sym["id"]), text=render_symbol(sym), title=title, metadata=meta)


def _symbols(data: Any, path: Path) -> Iterable[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        for key in ("targets", "symbols", "documents"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise FormatError(path, "expected a YAML list of symbols (each with an 'id')")
    return data


def read_api_symbols(path: str | Path, on_duplicate: Literal["suffix", "error"] = "suffix") -> Corpus:
    """Read an API-symbol YAML into a corpus (one document per symbol, file order).

    Args:
        path: The YAML file.
        on_duplicate: Symbols sharing an id (a property getter and setter both exported, for instance):
            ``suffix`` keeps every record, renaming the 2nd, 3rd... to ``<id>~2``, ``<id>~3`` (the original id is
            recorded in ``metadata["duplicate_of"]``, and ``corpus.notes`` plus a logged warning name them); ``error`` raises.

    Raises:
        FormatError: invalid YAML, or a symbol without a string ``id`` (the message gives its position).
        DuplicateIdsError: two symbols share an id.
    """
    from deltap._io import read_text, yaml_loads

    path = Path(path)
    text = read_text(path)
    data = yaml_loads(text, path)
    docs: list[Document] = []
    counts: dict[str, int] = {}
    renamed: list[str] = []
    for n, sym in enumerate(_symbols(data, path), start=1):
        if not isinstance(sym, Mapping) or not isinstance(sym.get("id"), str) or not sym["id"]:
            raise FormatError(path, f"symbol #{n} has no string 'id'")
        doc = symbol_to_document(sym)
        counts[doc.doc_id] = counts.get(doc.doc_id, 0) + 1
        if counts[doc.doc_id] > 1 and on_duplicate == "suffix":
            new_id = f"{doc.doc_id}~{counts[doc.doc_id]}"
            renamed.append(f"{doc.doc_id} -> {new_id}")
            doc = Document(new_id, doc.text, doc.title, {**doc.metadata, "duplicate_of": doc.doc_id})
        docs.append(doc)
    notes: list[str] = []
    if renamed:
        note = f"{path}: {len(renamed)} duplicate symbol id(s) kept under a suffixed id: {'; '.join(renamed[:10])}"
        logger.warning(note)
        notes.append(note)
    return Corpus(docs, name=str(path), notes=notes)
