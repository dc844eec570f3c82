"""Solvers: blind LLMs answering a question from a subset of documents.

``make_solver(kind, **options)`` builds one, by the factory its kind has in the solver registry (:data:`SOLVERS`,
:func:`register_solver_kind`), which also declares what each kind can do (:func:`solver_capabilities`: hosted and
rate-limited, deterministic, logprob scoring, an exact tokenizer). The built-in kinds:

============== =================================================================================================
kind           backend
============== =================================================================================================
``local``      :class:`~deltap.solvers.llama_cpp.LlamaCppSolver`: SmolLM2-135M-Instruct in-process (default)
``openai``     :class:`~deltap.solvers.openai_compat.OpenAISolver`: any OpenAI-compatible server
``gemini``     :class:`~deltap.solvers.gemini.GeminiSolver`: google-genai (optional extra)
``simulated``  ``deltap.solvers.simulated.SimulatedSolver``: known success probabilities (testing statistics)
============== =================================================================================================

A **hosted provider** is its module (a :class:`~deltap.solvers.hosted.HostedChatSolver` subclass) plus one
registration here whose :class:`HostedProvider` declares what a plan and a bill need before any call: the default
model, the answer-token ceilings, the tokenizer that estimates its prompt tokens and its dated list prices. Planning a
hosted model without a key (:class:`~deltap.solvers.hosted.HostedModel`) and the default prices
(:func:`deltap.trials.prices.prices_for`) read them from here; nothing else names a provider.

``cache=<path>`` wraps the solver in a :class:`~deltap.solvers.caching.CachedSolver`. For many calls use
:func:`solve_many` / :func:`score_many` (bounded concurrency, input order, errors as values); they hand a whole
batch to a solver's ``answer_many`` / ``score_many`` when it has them (the local solver: prefix-trie order and KV
reuse across the trials of a case).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from deltap._registry import Registry
from deltap.errors import DeltapError
from deltap.solvers.answer_tokens import default_max_tokens
from deltap.solvers.base import Answer, Score, Solver, SolveRequest, SolverError
from deltap.solvers.concurrency import asolve_many, score_many, solve_many

__all__ = [
    "SOLVERS",
    "SOLVER_KINDS",
    "Answer",
    "HostedProvider",
    "Score",
    "SolveRequest",
    "Solver",
    "SolverCapabilities",
    "SolverError",
    "SolverKindInfo",
    "asolve_many",
    "make_solver",
    "register_solver_kind",
    "score_many",
    "solve_many",
    "listed_prices",
    "solver_capabilities",
    "solver_kind",
    "solver_kinds",
    "solver_provider",
]


@dataclass(frozen=True)
class SolverCapabilities:
    """What a solver kind declares before one is built (a plan, the CLI's option checks).

    Args:
        hosted: Calls a hosted API over the network: paced by ``requests_per_minute`` / ``tokens_per_minute``
            (``--requests-per-minute``, ``--tokens-per-minute``), charged per token, planned without connecting.
        deterministic: Greedy by construction: the same prompt always gets the same answer (``None``: it depends on
            the options, e.g. the simulated solver's ``deterministic=``).
        scores: Can score a reference answer (the ``logprob`` outcome).
        tokenizer: Counts prompt tokens exactly (its context window is fitted; plans count exactly).
    """

    hosted: bool = False
    deterministic: bool | None = False
    scores: bool = False
    tokenizer: bool = False

    @property
    def rate_limited(self) -> bool:
        """Accepts request and token limits (every hosted kind does)."""
        return self.hosted


@dataclass(frozen=True)
class HostedProvider:
    """What deltap knows of a hosted provider before it connects: enough to plan and price a run without a key.

    Args:
        default_model: The model a plan assumes when none is given (``--model``).
        max_tokens: Answer-token ceilings per benchmark type (the solver's defaults; its ``max_tokens=`` option
            overrides rows; a type without a row gets the ``beir`` row).
        prices: ``model-name prefix -> (USD per million prompt tokens, USD per million completion tokens)``: list
            prices as the provider published them (standard tier, no batch or cache discounts); the longest prefix a
            model's name contains applies.
        prices_date: When ``prices`` were read (they change: check the provider's page before relying on them).
        token_encoding: The ``tiktoken`` encoding that estimates its prompt tokens in a plan (no tokenizer of the
            provider runs here); ``""``: 4 characters per token.
    """

    default_model: str
    max_tokens: Mapping[str, int]
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    prices_date: str = ""
    token_encoding: str = "o200k_base"


@dataclass(frozen=True)
class SolverKindInfo:
    """One solver kind of the registry.

    Args:
        name: The kind (``--solver``).
        factory: ``"package.module:Class"`` (or a function) called with the options.
        summary: One line for ``--help``.
        capabilities: What the kind declares.
        model_option: The constructor option ``model=`` is passed as (the local solver's is ``model_path``).
        requires_model: ``model=`` must be given.
        provider: A hosted kind's facts (:class:`HostedProvider`): its model, answer ceilings, tokens and prices.
    """

    name: str
    factory: str
    summary: str = ""
    capabilities: SolverCapabilities = field(default_factory=SolverCapabilities)
    model_option: str = "model"
    requires_model: bool = False
    provider: HostedProvider | None = None

    def load(self) -> Any:
        """The factory (imported now).

        Raises:
            DeltapError: the factory cannot be imported.
        """
        module, _, name = self.factory.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise DeltapError(f"solver kind {self.name!r}: cannot import {self.factory!r}: {exc}") from exc


#: every solver kind by name (built-ins first)
SOLVERS: Registry[SolverKindInfo] = Registry("solver kind", lambda name: bool(name) and ":" not in name)


def register_solver_kind(info: SolverKindInfo, replace: bool = False) -> SolverKindInfo:
    """Add a solver kind (``replace=True`` to redefine one); it is then a ``--solver`` choice. Returns ``info``.

    Raises:
        DeltapError: the name is taken (and ``replace`` is false) or holds a ``:`` (``module:factory`` kinds name a
            factory directly, see :class:`deltap.execution.SolverSpec`).
    """
    return SOLVERS.register(info.name, info, replace)


def solver_kinds(hosted: bool | None = None) -> tuple[str, ...]:
    """The registered kinds (``hosted=True`` / ``False``: only the hosted / the other ones)."""
    return tuple(n for n, k in SOLVERS.items() if hosted is None or k.capabilities.hosted == hosted)


def solver_kind(name: str) -> SolverKindInfo:
    """The registered kind ``name``.

    Raises:
        DeltapError: an unknown kind, listing the known ones.
    """
    return SOLVERS.lookup(name)


def solver_provider(kind: str) -> HostedProvider:
    """The provider facts of the hosted kind ``kind``.

    Raises:
        DeltapError: an unknown kind, or one that declares no :class:`HostedProvider` (a plan would have to guess its
            model, answer ceilings and prices).
    """
    info = solver_kind(kind)
    if info.provider is None:
        raise DeltapError(
            f"the {kind!r} solver kind declares no hosted-provider facts (HostedProvider: default model, answer-token "
            "ceilings, prices): it cannot be planned without being built; register it with provider=HostedProvider(...)"
        )
    return info.provider


def listed_prices() -> Iterator[tuple[str, str, tuple[float, float], str]]:
    """``(kind, model-name prefix, (USD/M in, USD/M out), date read)`` of every registered provider's list prices."""
    for name, info in SOLVERS.items():
        if info.provider is not None:
            for prefix, price in info.provider.prices.items():
                yield name, prefix, price, info.provider.prices_date


def solver_capabilities(spec: Any) -> SolverCapabilities:
    """What a solver kind (``"openai"``), a :class:`~deltap.execution.SolverSpec` or a built solver declares.

    A kind or a spec: its registry entry (a ``module:factory`` spec declares nothing: the defaults). A built solver
    (a :class:`~deltap.solvers.caching.CachedSolver` declares what it wraps): its class's registry entry, with its
    own ``deterministic`` trait; a class outside the registry: its ``hosted`` and ``deterministic`` traits, a
    ``score`` method and the :class:`~deltap.solvers.base.ContextWindow` capability.

    Raises:
        DeltapError: an unregistered plain kind.
    """
    if isinstance(spec, str) or (hasattr(spec, "kind") and hasattr(spec, "options")):
        kind = spec if isinstance(spec, str) else str(spec.kind)
        return SolverCapabilities() if ":" in kind else solver_kind(kind).capabilities
    from dataclasses import replace

    from deltap.solvers.base import ContextWindow, is_deterministic

    inner = getattr(spec, "inner", spec)
    factory = f"{type(inner).__module__}:{type(inner).__qualname__}"
    known = next((k.capabilities for k in SOLVERS.values() if k.factory == factory), None)
    if known is not None:
        return replace(known, deterministic=is_deterministic(inner))
    return SolverCapabilities(
        hosted=bool(getattr(inner, "hosted", False)),
        deterministic=is_deterministic(inner),
        scores=callable(getattr(inner, "score", None)),
        tokenizer=isinstance(inner, ContextWindow),
    )


for _info in (
    SolverKindInfo(
        "local",
        "deltap.solvers.llama_cpp:LlamaCppSolver",
        "SmolLM2 in-process (llama.cpp)",
        SolverCapabilities(deterministic=True, scores=True, tokenizer=True),
        model_option="model_path",
    ),
    SolverKindInfo(
        "openai",
        "deltap.solvers.openai_compat:OpenAISolver",
        "any OpenAI-compatible server",
        SolverCapabilities(hosted=True, scores=True),
        requires_model=True,
        provider=HostedProvider(
            default_model="gpt-4o-mini",
            max_tokens=default_max_tokens("openai"),
            prices={
                "gpt-4o-mini": (0.15, 0.60),
                "gpt-4o": (2.50, 10.00),
                "gpt-4.1-mini": (0.40, 1.60),
                "gpt-4.1": (2.00, 8.00),
            },
            prices_date="2025-01",
        ),
    ),
    SolverKindInfo(
        "gemini",
        "deltap.solvers.gemini:GeminiSolver",
        "Google Gemini",
        SolverCapabilities(hosted=True),
        provider=HostedProvider(
            default_model="gemini-2.5-flash",  # GeminiSolver's default (a test keeps them equal)
            max_tokens=default_max_tokens("gemini"),
            prices={
                "gemini-2.0-flash": (0.10, 0.40),
                "gemini-1.5-flash": (0.075, 0.30),
                "gemini-1.5-pro": (1.25, 5.00),
            },
            prices_date="2025-01",
        ),
    ),
    SolverKindInfo(
        "simulated",
        "deltap.solvers.simulated:SimulatedSolver",
        "known success probabilities (testing statistics)",
        SolverCapabilities(deterministic=None, scores=True),
    ),
):
    register_solver_kind(_info)

#: the built-in solver kinds (:func:`solver_kinds` lists plug-ins too)
SOLVER_KINDS = solver_kinds()


def make_solver(kind: str = "local", cache: str | Path | None = None, **options: Any) -> Solver:
    """Build a solver by kind (see the module table and :data:`SOLVERS`); ``options`` go to its constructor.

    Args:
        kind: ``local``, ``openai``, ``gemini``, ``simulated`` or a registered kind.
        cache: Optional SQLite response-cache file.
        **options: Backend options (e.g. ``model=``, ``base_url=`` for ``openai``). For a backend that renders
            prompts, ``template=`` may be a prompt-template file (YAML/JSON) and ``answer_protocol=`` (``auto``,
            ``on``, ``off``, or a boolean) sets the template's answer protocol line (issue 34).

    Raises:
        DeltapError: unknown kind, a missing model name, unknown options, or a backend whose optional dependency is
            missing.
    """
    info = solver_kind(kind)
    if info.model_option != "model" and "model" in options:  # --model names a GGUF file for the local backend
        options[info.model_option] = options.pop("model")
    if info.requires_model and "model" not in options:
        raise DeltapError(f"the {kind} solver needs a model name (--model / model=...)")
    cls = info.load()
    _template_options(kind, cls, options)
    _check_options(kind, cls, options)
    solver: Solver = cls(**options)
    if cache is not None:
        from deltap.solvers.caching import CachedSolver

        solver = CachedSolver(solver, cache)
    return solver


def solver_class(kind: str) -> type[Any]:
    """The class :func:`make_solver` builds for ``kind`` (its traits, :mod:`deltap.solvers.base`, can be read before
    building one).

    Raises:
        DeltapError: an unknown kind, or a backend whose optional dependency is missing.
    """
    return cast(type[Any], solver_kind(kind).load())


def _template_options(kind: str, cls: Any, options: dict[str, Any]) -> None:
    """``template=FILE`` read as a :class:`~deltap.solvers.prompts.PromptTemplate`; ``answer_protocol=`` folded into
    the template (in place)."""
    from dataclasses import replace

    from deltap.solvers.prompts import ANSWER_PROTOCOLS, DEFAULT_TEMPLATE, PromptTemplate

    template = options.get("template")
    if isinstance(template, str | Path):
        options["template"] = PromptTemplate.from_file(template)
    if "answer_protocol" not in options:
        return
    protocol = options.pop("answer_protocol")
    protocol = {True: "on", False: "off"}.get(protocol, protocol) if isinstance(protocol, bool) else str(protocol)
    if protocol not in ANSWER_PROTOCOLS:
        raise DeltapError(f"answer_protocol must be one of {', '.join(ANSWER_PROTOCOLS)}, got {protocol!r}")
    if "template" not in inspect.signature(cls).parameters:
        raise DeltapError(f"the {kind!r} solver renders no prompt: answer_protocol does not apply to it")
    options["template"] = replace(options.get("template") or DEFAULT_TEMPLATE, answer_protocol=protocol)


def _check_options(kind: str, cls: Any, options: dict[str, Any]) -> None:
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        accepted = ", ".join(n for n in params if n != "self")
        raise DeltapError(f"unknown option(s) {', '.join(unknown)} for the {kind!r} solver; accepted: {accepted}")
