"""An installed Python package or module list -> one document per module, class, function and method.

Built with :mod:`inspect` on the imported modules only: nothing beyond ``importlib.import_module(name)`` for each
name given is executed (submodules are not walked unless listed, so no import side effects of unrelated code).
Documents have the same shape as the API-symbol builder: ``doc_id`` = fully qualified name, text = type, id,
signature and docstring; metadata ``type`` (MODULE / CLASS / FUNCTION / METHOD), ``name``, ``module``, ``aliases``
(other public names the same object is reachable as within the listed modules).

Only members *defined* in the listed module are documented under it (``obj.__module__`` matches); re-exports become
aliases of the defining name when that module is also listed, and are documented under the re-exporting module
otherwise (so ``json.JSONDecoder`` exists even though it is defined in ``json.decoder``).
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from deltap.documents import Corpus, Document
from deltap.errors import DeltapError

__all__ = ["build_python_corpus"]


#: `` at 0x7f...`` in a default value's repr (``<object object at 0x7f...>``): a memory address, different in every
#: process, which would make the same corpus differ byte for byte between two builds
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=>)")


def _stable_repr(value: Any) -> str:
    """``repr`` without memory addresses (``<built-in method match of re.Pattern object>``)."""
    return _ADDRESS.sub("", repr(value))


def _signature(obj: Any, name: str) -> str:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = [
        p.replace(default=_Verbatim(_stable_repr(p.default))) if p.default is not inspect.Parameter.empty else p
        for p in signature.parameters.values()
    ]
    sig = str(signature.replace(parameters=params))
    return f"def {name}{sig}:" if not inspect.isclass(obj) else f"class {name}{sig}:"


class _Verbatim:
    """A default value that renders as the given text in a signature."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _doc(obj: Any) -> str:
    doc = inspect.getdoc(obj)
    return doc.strip() if doc else ""


def _render(kind: str, fqn: str, signature: str, doc: str, extra: list[str] | None = None) -> str:
    lines = [f"{kind.capitalize()} {fqn}"]
    if signature:
        lines.append(f"Signature: {signature}")
    if doc:
        lines.append(doc)
    lines += extra or []
    return _ADDRESS.sub("", "\n".join(lines))


def _public(name: str, include_private: bool) -> bool:
    return include_private or not name.startswith("_")


def _is_function(obj: Any) -> bool:
    return (
        inspect.isfunction(obj)
        or inspect.isbuiltin(obj)
        or inspect.ismethoddescriptor(obj)
        or (
            callable(obj)
            and type(obj).__name__ in {"cython_function_or_method", "method_descriptor", "fused_cython_function"}
        )
    )


def build_python_corpus(modules: Iterable[str], include_private: bool = False, max_methods: int = 200) -> Corpus:
    """Document the named, importable modules.

    Args:
        modules: Module names (``json``, ``itertools``, ``os.path``...). Each is imported; nothing else is.
        include_private: Also document ``_private`` names (dunder methods are always skipped except ``__init__``,
            whose signature becomes the class signature).
        max_methods: Cap on methods documented per class (a note in the class text says when it was hit).

    Raises:
        DeltapError: a module cannot be imported (the message says which and why).
    """
    names = list(dict.fromkeys(modules))
    if not names:
        raise DeltapError("no module names given; e.g. `deltap corpus python json itertools`")
    loaded: list[ModuleType] = []
    for name in names:
        try:
            loaded.append(importlib.import_module(name))
        except Exception as exc:  # import errors of any kind are the user's input problem here
            raise DeltapError(f"cannot import module {name!r}: {type(exc).__name__}: {exc}") from None

    docs: list[Document] = []
    seen_objects: dict[int, str] = {}  # id(obj) -> fqn it was documented under
    aliases: dict[str, list[str]] = {}

    def add(doc_id: str, kind: str, text: str, name: str, module: str, obj: Any = None) -> None:
        if obj is not None:
            seen_objects[id(obj)] = doc_id
        docs.append(
            Document(doc_id=doc_id, text=text, title=name, metadata={"type": kind, "name": name, "module": module})
        )

    # First pass: members defined in each listed module (so re-exports can become aliases of their definitions).
    listed = {m.__name__: m for m in loaded}
    for module in loaded:
        modname = module.__name__
        add(
            modname, "MODULE", _render("module", modname, "", _doc(module)), modname.rsplit(".", 1)[-1], modname, module
        )
        members = sorted(vars(module).items())
        for attr, obj in members:
            if not _public(attr, include_private):
                continue
            defined_in = getattr(obj, "__module__", None)
            if defined_in != modname and defined_in in listed:
                continue  # documented under its defining module; becomes an alias below
            if id(obj) in seen_objects:
                aliases.setdefault(seen_objects[id(obj)], []).append(f"{modname}.{attr}")
                continue
            fqn = f"{modname}.{attr}"
            if inspect.isclass(obj):
                init_sig = _signature(obj, attr)
                methods: list[tuple[str, Any]] = []
                for mname, mobj in sorted(vars(obj).items()):
                    if mname.startswith("__") or not _public(mname, include_private):
                        continue
                    raw = mobj.__func__ if isinstance(mobj, classmethod | staticmethod) else mobj
                    if callable(raw) or isinstance(mobj, property):
                        methods.append((mname, mobj))
                method_names = [m for m, _ in methods[:max_methods]]
                extra = [f"Methods: {', '.join(method_names)}"] if method_names else []
                if len(methods) > max_methods:
                    extra.append(f"... {len(methods) - max_methods} more methods not documented")
                add(fqn, "CLASS", _render("class", fqn, init_sig, _doc(obj), extra), attr, modname, obj)
                for mname, mobj in methods[:max_methods]:
                    mfqn = f"{fqn}.{mname}"
                    if isinstance(mobj, property):
                        add(mfqn, "PROPERTY", _render("property", mfqn, "", _doc(mobj)), mname, modname)
                        continue
                    raw = mobj.__func__ if isinstance(mobj, classmethod | staticmethod) else mobj
                    add(mfqn, "METHOD", _render("method", mfqn, _signature(raw, mname), _doc(raw)), mname, modname)
            elif _is_function(obj) or (callable(obj) and not isinstance(obj, ModuleType)):
                add(fqn, "FUNCTION", _render("function", fqn, _signature(obj, attr), _doc(obj)), attr, modname, obj)

    # Second pass: re-exports between listed modules become aliases of the defining document.
    for module in loaded:
        for attr, obj in vars(module).items():
            if not _public(attr, include_private):
                continue
            target = seen_objects.get(id(obj))
            alias = f"{module.__name__}.{attr}"
            if target is not None and target != alias:
                aliases.setdefault(target, []).append(alias)
    if aliases:
        docs = [
            Document(d.doc_id, d.text, d.title, {**d.metadata, "aliases": sorted(set(aliases[d.doc_id]))})
            if d.doc_id in aliases
            else d
            for d in docs
        ]
    return Corpus(docs, name="python:" + ",".join(names))
