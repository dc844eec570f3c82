"""The options several verbs share — the solver, the executor, rate limits, prices and latency, the plan, the seed —
declared once, with one help text each (Typer ``Annotated`` aliases, as :mod:`deltap.cli.evaluation_cmd` does for
``evaluate`` and ``compare``). ``deltap mine``, ``deltap endtoend`` and ``deltap demo`` use them; a verb's own defaults
stay beside its parameter (``solver: SolverKind = "local"``).

The options become settings by one function each: :func:`solver_settings` and :func:`executor_settings` (then
:func:`deltap.trials.setup.build_solver`, the one builder of a run's solver).

Nothing heavy is imported here: ``deltap --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from deltap.trials.setup import ExecutorSettings, SolverSettings

__all__ = [
    "ExecutorKind",
    "ExecutorOptions",
    "IndexOpt",
    "Latency",
    "Limit",
    "Model",
    "Outcome",
    "OutcomeOrRun",
    "Plan",
    "PlanJson",
    "PriceIn",
    "PriceOut",
    "RayAddress",
    "RequestsPerMinute",
    "Seed",
    "SolverKind",
    "SolverOptions",
    "TokensPerMinute",
    "Workers",
    "executor_settings",
    "solver_settings",
]

SOLVER_HELP = (
    "The LLM: local (SmolLM2 in-process), openai (any OpenAI-compatible server), gemini, simulated (known success "
    "probabilities), or any kind registered in deltap.solvers.SOLVERS."
)
PRICE_IN_HELP = (
    "USD per million prompt tokens, for the plan (and the cost in deltap mine's run.json). Default: the dated list "
    "price the hosted provider declares for the model, 0 for the local model."
)

SolverKind = Annotated[str, typer.Option("--solver", help=SOLVER_HELP)]
Model = Annotated[str | None, typer.Option("--model", help="Model name (or GGUF path for local) of the solver.")]
SolverOptions = Annotated[
    list[str],
    typer.Option(
        "--solver-option",
        help=(
            "An option of the solver, key=value (repeatable): base_url=..., template=FILE (a prompt template), "
            "answer_protocol=auto|on|off (the final 'Answer: ...' line; auto: on for hosted solvers, off for the local "
            "model)."
        ),
    ),
]
OUTCOME_HELP = (
    "pass (the case's checker judges the answer) or logprob (log-probability of the reference answer; needs a solver "
    "that scores)."
)
Outcome = Annotated[str, typer.Option("--outcome", help=OUTCOME_HELP)]
#: ``--outcome`` where ``None`` means "as the run it follows" (``deltap endtoend``)
OutcomeOrRun = Annotated[str | None, typer.Option("--outcome", help=OUTCOME_HELP + " Default: the mined run's.")]
Seed = Annotated[
    int,
    typer.Option(
        "--seed",
        help="Run seed: every trial's seed (so its document subset), the placebo draw, the bootstrap and the tests "
        "(end-to-end trials are namespaced apart from mining's).",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="In-process: solver calls in flight (remote solvers; default 1). Ray: solver replicas, each loading its "
        "model once (default 2). Results never depend on it.",
    ),
]
ExecutorKind = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where solver calls run: inprocess (this process, threads) or ray (a Ray cluster: pip install "
        "'deltap[ray]').",
    ),
]
ExecutorOptions = Annotated[
    list[str],
    typer.Option(
        "--executor-option",
        help="An option of the executor, key=value (repeatable); --executor ray: address (auto, ray://HOST:10001; "
        "default: a local cluster for the run), calls_per_worker, cpus_per_worker, max_restarts.",
    ),
]
RayAddress = Annotated[
    str | None, typer.Option("--ray-address", help="Same as --executor-option address=...", hidden=True)
]
RequestsPerMinute = Annotated[
    float | None,
    typer.Option(
        "--requests-per-minute",
        "--rpm",
        help="Hosted solvers: the endpoint's request limit; every worker of the run shares one pace and honours "
        "Retry-After (the plan's time never goes faster).",
    ),
]
TokensPerMinute = Annotated[
    float | None,
    typer.Option(
        "--tokens-per-minute",
        "--tpm",
        help="Hosted solvers: the endpoint's token limit (prompt + completion), shared the same way.",
    ),
]
Plan = Annotated[
    bool,
    typer.Option(
        "--plan",
        help="Print the run's plan (calls, tokens, cost, time) and stop: no solver or embedding call, nothing written. "
        "Calls the trial log already holds are subtracted. The time comes from the solver measured on this machine "
        "(the trial log's latest calls, else the last run's measurement kept in ~/.cache/deltap/pace.json, per solver "
        "and n_threads), else from a 2-core table estimate (said so: it may be off by 2-6×); a real run measures its "
        "first calls and prints the time again. A dense or hybrid retriever's candidates are estimated "
        "(k per case at the corpus's mean length; the plan says so); bm25 is built in memory.",
    ),
]
PlanJson = Annotated[bool, typer.Option("--json", help="--plan: print the plan as JSON on stdout.")]
PriceIn = Annotated[float | None, typer.Option("--price-in", help=PRICE_IN_HELP)]
PriceOut = Annotated[
    float | None, typer.Option("--price-out", help="USD per million completion tokens (as --price-in).")
]
Latency = Annotated[
    float | None,
    typer.Option(
        "--latency",
        help="--plan: seconds per solver call (default: the solver measured on this machine, else the local model's "
        "2-core table scaled by its n_threads).",
    ),
]
IndexOpt = Annotated[
    str | None,
    typer.Option(
        "--index",
        help="Dense index folder or Qdrant URL built by `deltap index` (reused; brought up to date with the corpus). "
        "One that does not exist is an error. Without it, dense/hybrid embed the corpus into a temporary index.",
    ),
]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the first N cases.")]


def solver_settings(
    kind: str,
    model: str | None,
    options: Sequence[str],
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    sim_effect: float = 0.3,
    sim_base: float = 0.1,
) -> SolverSettings:
    """The solver options as :class:`~deltap.trials.setup.SolverSettings`.

    Raises:
        DeltapError: a ``--solver-option`` that is not ``key=value``.
    """
    from deltap.trials.setup import SolverSettings, parse_options

    return SolverSettings(
        kind, model, parse_options(options), requests_per_minute, tokens_per_minute, sim_effect, sim_base
    )


def executor_settings(
    kind: str, workers: int | None, options: Sequence[str], aliases: Mapping[str, object] | None = None
) -> ExecutorSettings:
    """The executor options as :class:`~deltap.trials.setup.ExecutorSettings` (``aliases``: the older spellings of
    some executor options, e.g. ``--ray-address``, when given).

    Raises:
        DeltapError: an ``--executor-option`` that is not ``key=value``.
    """
    from deltap.trials.setup import ExecutorSettings, parse_options

    given = {k: v for k, v in (aliases or {}).items() if v is not None}
    return ExecutorSettings(kind, workers, {**given, **parse_options(options, "--executor-option")})
