"""Solvers: blind LLMs answering a question from a subset of documents.

``make_solver(kind, **options)`` builds one:

============== =================================================================================================
kind           backend
============== =================================================================================================
``local``      :class:`~deltap.solvers.llama_cpp.LlamaCppSolver`: SmolLM2-135M-Instruct in-process (default)
``openai``     :class:`~deltap.solvers.openai_compat.OpenAISolver`: any OpenAI-compatible server
``gemini``     :class:`~deltap.solvers.gemini.GeminiSolver`: google-genai (optional extra)
``simulated``  ``deltap.solvers.simulated.SimulatedSolver``: known success probabilities (testing statistics)
============== =================================================================================================

``cache=<path>`` wraps the solver in a :class:`~deltap.solvers.caching.CachedSolver`. For many calls use
:func:`solve_many` / :func:`score_many` (bounded concurrency, input order, errors as values); they hand a whole
batch to a solver's ``answer_many`` / ``score_many`` when it has them (the local solver: prefix-trie order and KV
reuse across the trials of a case).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, cast

from deltap.errors import DeltapError
from deltap.solvers.base import Answer, Score, Solver, SolveRequest, SolverError
from deltap.solvers.concurrency import asolve_many, score_many, solve_many

__all__ = [
    "Answer",
    "SOLVER_KINDS",
    "Score",
    "SolveRequest",
    "Solver",
    "SolverError",
    "asolve_many",
    "make_solver",
    "score_many",
    "solve_many",
]

SOLVER_KINDS = ("local", "openai", "gemini", "simulated")


def make_solver(kind: str = "local", cache: str | Path | None = None, **options: Any) -> Solver:
    """Build a solver by kind (see the module table); ``options`` go to its constructor.

    Args:
        kind: ``local``, ``openai``, ``gemini`` or ``simulated``.
        cache: Optional SQLite response-cache file.
        **options: Backend options (e.g. ``model=``, ``base_url=`` for ``openai``).

    Raises:
        DeltapError: unknown kind, or a backend whose optional dependency is missing.
    """
    cls = solver_class(kind)
    if kind == "local" and "model" in options:  # --model names a GGUF file for the local backend
        options["model_path"] = options.pop("model")
    if kind == "openai" and "model" not in options:
        raise DeltapError("the openai solver needs a model name (--model / model=...)")
    _check_options(kind, cls, options)
    solver = cls(**options)
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
    cls: Any
    if kind == "local":
        from deltap.solvers.llama_cpp import LlamaCppSolver as cls
    elif kind == "openai":
        from deltap.solvers.openai_compat import OpenAISolver as cls
    elif kind == "gemini":
        from deltap.solvers.gemini import GeminiSolver as cls
    elif kind == "simulated":
        from deltap.solvers.simulated import SimulatedSolver as cls
    else:
        raise DeltapError(f"unknown solver kind {kind!r}; expected one of {', '.join(SOLVER_KINDS)}")
    return cast(type[Any], cls)


def _check_options(kind: str, cls: Any, options: dict[str, Any]) -> None:
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        accepted = ", ".join(n for n in params if n != "self")
        raise DeltapError(f"unknown option(s) {', '.join(unknown)} for the {kind!r} solver; accepted: {accepted}")
