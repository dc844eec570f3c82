"""Tokens of a trial: what a call took in and gave out (:func:`call_tokens`, as its solver counted them), and what a
plan counts before any call (:func:`token_counter`, :func:`answer_ceilings`, :func:`answer_tokens`).

A solver that counts its own prompt tokens (:class:`~deltap.solvers.base.ContextWindow`: the local model, whose
tokenizer runs on the rendered chat prompt) gives exact counts; any other solver gets an *estimate* and says so: the
``tiktoken`` encoding its hosted provider declares (:class:`deltap.solvers.HostedProvider` ``token_encoding``,
``o200k_base`` by default) when ``tiktoken`` is installed, else 4 characters per token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from deltap.solvers.base import ContextWindow

if TYPE_CHECKING:
    from deltap.solvers.base import SolveRequest

__all__ = ["FALLBACK_MAX_TOKENS", "answer_ceilings", "answer_tokens", "call_tokens", "token_counter"]

#: completion tokens assumed per answer when the solver does not declare its ``max_tokens``
FALLBACK_MAX_TOKENS = 256


def call_tokens(res: Any) -> tuple[int | None, int | None]:
    """``(prompt tokens, completion tokens)`` of one call's result as its solver counted them (``None``: not counted;
    an error: no tokens known). A score generates nothing: 0 completion tokens."""
    from deltap.solvers.base import Answer, Score

    if isinstance(res, Answer):
        usage = dict(res.usage)
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return (int(pt) if pt is not None else None, int(ct) if ct is not None else None)
    if isinstance(res, Score):
        return (int(res.prompt_tokens) if res.prompt_tokens is not None else None, 0)
    return None, None


def answer_ceilings(solver: Any) -> dict[str, int]:
    """The solver's answer ceilings per benchmark type, read from the solver object itself (its ``max_tokens``
    attribute, or the wrapped solver's for a wrapper such as :class:`~deltap.solvers.caching.CachedSolver`), so a
    custom ``max_tokens`` counts; ``{}`` when it declares none."""
    for obj in (solver, getattr(solver, "inner", None)):
        mt = getattr(obj, "max_tokens", None)
        if isinstance(mt, Mapping) and mt:
            return {str(k): int(v) for k, v in mt.items()}
    return {}


def answer_tokens(ceilings: Mapping[str, int], benchmark_type: str) -> int:
    """Completion tokens of one answer at most: the ceiling of the benchmark type, else the solver's ``beir``
    (generic) one, else :data:`FALLBACK_MAX_TOKENS`."""
    for key in (benchmark_type, "beir"):
        if key in ceilings:
            return int(ceilings[key])
    return FALLBACK_MAX_TOKENS


def _encoding(solver: Any) -> str:
    """The ``tiktoken`` encoding that estimates a solver's prompt tokens: a planned hosted model's, a hosted solver's
    provider's (its registration), else ``o200k_base``."""
    declared = getattr(solver, "token_encoding", None)
    if isinstance(declared, str):
        return declared
    provider = getattr(getattr(solver, "inner", solver), "provider", None)
    if isinstance(provider, str):
        from deltap.solvers import SOLVERS

        info = SOLVERS.get(provider)
        if info is not None and info.provider is not None:
            return info.provider.token_encoding
    return "o200k_base"


def token_counter(solver: Any) -> tuple[Callable[[SolveRequest], int], str]:
    """``(count, how)``: the prompt tokens of a request, and how they are counted (``exact (the solver's
    tokenizer)`` or ``estimate (...)``)."""
    if isinstance(solver, ContextWindow):
        return (lambda req: len(solver.tokens(req))), "exact (the solver's tokenizer)"
    from deltap.solvers.prompts import messages_to_text, render_prompt

    template = getattr(solver, "template", None)
    encoding = _encoding(solver)
    try:
        if not encoding:
            raise LookupError("no encoding declared")
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
        return (
            lambda req: len(enc.encode(messages_to_text(render_prompt(req, template))))
        ), f"estimate (tiktoken {encoding})"
    except Exception:  # noqa: BLE001 - not installed, or its encoding file cannot be fetched offline
        return (lambda req: len(messages_to_text(render_prompt(req, template))) // 4 + 1), "estimate (4 chars/token)"
