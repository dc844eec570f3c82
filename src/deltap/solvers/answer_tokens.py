"""How many tokens a solver may answer with, per benchmark type: the one table.

Each row is a benchmark type (:attr:`deltap.solvers.base.SolveRequest.benchmark_type`), each column a solver
family. The values differ by family and are kept as they were when each solver had its own table: the in-process
model is slow on 2 cores and answers in few tokens, hosted models get more room (Gemini's ceiling is twice the
OpenAI-compatible one). A solver's ``max_tokens=`` option overrides single rows. A benchmark type without a row is
given the ``beir`` row (:data:`FALLBACK`). A new benchmark type is one row here and one answer instruction in
:mod:`deltap.solvers.prompts`. A hosted provider registered later declares its own ceilings beside its registration
(:class:`deltap.solvers.HostedProvider` ``max_tokens``); :func:`default_max_tokens` reads them there.
"""

from __future__ import annotations

from collections.abc import Mapping

from deltap.errors import DeltapError

__all__ = ["FALLBACK", "MAX_TOKENS", "answer_tokens", "default_max_tokens"]

#: answer-token ceilings: benchmark type -> solver family (``local``, ``openai``, ``gemini``) -> tokens
MAX_TOKENS: dict[str, dict[str, int]] = {
    "api_understanding": {"local": 24, "openai": 32, "gemini": 64},
    "multiple_choice": {"local": 8, "openai": 16, "gemini": 32},
    "fix_error": {"local": 1024, "openai": 2048, "gemini": 4096},
    "beir": {"local": 64, "openai": 128, "gemini": 256},
}

#: the row of a benchmark type the table does not list
FALLBACK = "beir"


def default_max_tokens(family: str) -> dict[str, int]:
    """One solver family's column: ``{benchmark type: tokens}`` (a family the table lacks: the ceilings its hosted
    provider's registration declares).

    Raises:
        DeltapError: a family without a column here or a registered :class:`~deltap.solvers.HostedProvider`.
    """
    if family in MAX_TOKENS[FALLBACK]:
        return {benchmark: row[family] for benchmark, row in MAX_TOKENS.items()}
    from deltap.solvers import SOLVERS

    info = SOLVERS.get(family)
    if info is None or info.provider is None or not info.provider.max_tokens:
        raise DeltapError(
            f"no answer-token ceilings for solver family {family!r}; known: {', '.join(MAX_TOKENS[FALLBACK])} "
            "and the hosted providers registered with max_tokens"
        )
    return {str(k): int(v) for k, v in info.provider.max_tokens.items()}


def answer_tokens(max_tokens: Mapping[str, int], benchmark_type: str, family: str) -> int:
    """The ceiling for ``benchmark_type`` in a solver's ``max_tokens`` (its family's column with its overrides); a
    type it does not list gets the family's default :data:`FALLBACK` row (else its largest ceiling)."""
    value = max_tokens.get(benchmark_type)
    if value is not None:
        return int(value)
    column = default_max_tokens(family)
    return int(column.get(FALLBACK) or max(column.values()))
