"""CLI verbs of the mining area: ``deltap mine`` and ``deltap simulate``.

Heavy modules (numpy, the solver backends, retrievers) are imported inside the command bodies so ``deltap --help``
stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deltap.mining.config import PILOT_CASES, MiningConfig


def register(app: typer.Typer) -> None:
    """Add ``mine`` and ``simulate`` to ``app``."""
    app.command("mine")(mine_command)
    app.command("simulate")(simulate_command)


def _parse_options(items: list[str]) -> dict[str, Any]:
    import json

    from deltap.errors import DeltapError

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise DeltapError(f"--solver-option {item!r} must look like key=value")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


# Options `mine` and `simulate` share (declared once); every default comes from MiningConfig, the library's own.
_CFG = MiningConfig()
Seed = Annotated[int, typer.Option("--seed", help="Run seed (trial subsets, placebos).")]
Q = Annotated[float, typer.Option("--q", help="Dataset-wide Benjamini-Hochberg FDR level (per direction).")]
Budget = Annotated[
    int,
    typer.Option(
        "--budget",
        help=f"Maximum design trials per case (default {_CFG.budget}: about 94 calls per case with preflight and coalition checks).",
    ),
]


def _with_grammar(case: Any, grammar: str) -> Any:
    """``case`` with ``grammar`` in its string-match / multiple-choice checker's params (unless they name one)."""
    from dataclasses import replace

    from deltap.cases import CheckerSpec

    spec = case.checker
    if spec.kind not in ("string_match", "multiple_choice") or "grammar" in spec.params:
        return case
    return replace(case, checker=CheckerSpec(spec.kind, {**dict(spec.params), "grammar": grammar}))


def mine_command(
    cases_path: Annotated[
        Path,
        typer.Argument(
            metavar="CASES",
            help="Benchmark YAML, question-answer JSONL/YAML (id, question, answers, gold_ids), qrels JSONL with reference_answer, or BEIR folder.",
        ),
    ],
    corpus_path: Annotated[
        Path, typer.Option("--corpus", help="Corpus: BEIR folder, corpus.jsonl or API-symbol YAML.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Run directory (created; an existing one is resumed).")],
    index: Annotated[
        str | None, typer.Option("--index", help="Dense index folder or Qdrant URL (reused across runs).")
    ] = None,
    retriever_kind: Annotated[
        str, typer.Option("--retriever", help="dense, bm25, hybrid or none: source of the retrieved candidates.")
    ] = "dense",
    k: Annotated[int, typer.Option("--k", help="Retrieved candidates per case.")] = _CFG.k,
    placebo: Annotated[
        int,
        typer.Option(
            "--placebo",
            help="Placebo candidates per case (the control group; the placebo null wants >= 50 over the run).",
        ),
    ] = _CFG.n_placebo,
    placebo_kind: Annotated[
        str,
        typer.Option(
            "--placebo-kind",
            help="random (uniform over the corpus) or similar (from the retriever's ranks 21-100: same topic as the candidates).",
        ),
    ] = _CFG.placebo_kind,
    max_candidates: Annotated[
        int, typer.Option("--max-candidates", help="Pool cap (gold and placebo kept first).")
    ] = _CFG.max_candidates,
    solver_kind: Annotated[
        str, typer.Option("--solver", help="local (SmolLM2 in-process), openai, gemini or simulated.")
    ] = "local",
    model: Annotated[str | None, typer.Option("--model", help="Model name/path for the solver.")] = None,
    solver_option: Annotated[
        list[str], typer.Option("--solver-option", help="Extra solver option key=value (repeatable).")
    ] = [],  # noqa: B006 - typer reads it, never mutates it
    outcome: Annotated[
        str, typer.Option("--outcome", help="pass (checker verdict) or logprob (log-prob of the reference).")
    ] = _CFG.outcome,
    budget: Budget = _CFG.budget,
    gold_weight: Annotated[
        float,
        typer.Option(
            "--gold-weight",
            help="Prior weight of gold candidates in the weighted Benjamini-Hochberg step (fixed in advance; weights average 1, "
            "so the FDR stays at --q). 1 treats gold like any candidate.",
        ),
    ] = _CFG.gold_weight,
    seed: Seed = _CFG.seed,
    q: Q = _CFG.q,
    pi: Annotated[
        float,
        typer.Option("--pi", help="Inclusion probability of each candidate (other than 0.5 needs --design bernoulli)."),
    ] = _CFG.pi,
    null: Annotated[
        str | None,
        typer.Option(
            "--null",
            help="What effects are tested against: zero (no effect) or placebo (the placebo documents' effects: 'moves the outcome "
            "more than random text does'). Default: placebo for --outcome logprob, zero for pass.",
        ),
    ] = _CFG.null,
    design: Annotated[
        str,
        typer.Option(
            "--design",
            help="Which candidates each trial includes: orthogonal (randomised Hadamard blocks: every trial a uniformly random subset, "
            "each block balanced and orthogonal, a tighter regression) or bernoulli (independent coin flips with probability --pi).",
        ),
    ] = _CFG.design,
    context_order: Annotated[
        str,
        typer.Option(
            "--context-order",
            help="Document order in every prompt: length (longest first; fewest tokens with the local solver's prefix reuse) or id.",
        ),
    ] = _CFG.context_order,
    min_effect: Annotated[
        float | None,
        typer.Option("--min-effect", help="Smallest effect labelled relevant (0.1 pass, 0.5 nats logprob)."),
    ] = _CFG.min_effect,
    limit: Annotated[int | None, typer.Option("--limit", help="Mine only the first N cases.")] = None,
    case_ids: Annotated[str | None, typer.Option("--cases", help="Comma-separated case ids to mine.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Mine saturated/unsolvable cases anyway.")] = _CFG.force,
    require_separate: Annotated[
        bool,
        typer.Option(
            "--require-separate",
            help="Refuse cases whose pytest checker would run the candidate inside the test process (shared mode).",
        ),
    ] = _CFG.require_separate,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="In-process: solver calls in flight (remote solvers; default 1). Ray: solver replicas, each loading its "
            "model once (default 2). Results never depend on it.",
        ),
    ] = None,
    executor_kind: Annotated[
        str,
        typer.Option(
            "--executor",
            help="Where solver calls run: inprocess (this process, threads) or ray (a Ray cluster: pip install 'deltap[ray]').",
        ),
    ] = "inprocess",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="--executor ray: the cluster, auto (a running one on this machine) or ray://HOST:10001; default: start a local "
            "cluster for the run.",
        ),
    ] = None,
    cases_in_flight: Annotated[
        int | None,
        typer.Option(
            "--cases-in-flight",
            help="Cases mined at once (default: one per worker slot; 1 for the local solver in-process).",
        ),
    ] = _CFG.cases_in_flight,
    calls_per_worker: Annotated[
        int | None,
        typer.Option(
            "--calls-per-worker",
            help="--executor ray: batches one replica runs at once (clients of a remote server; default 1).",
        ),
    ] = None,
    requests_per_minute: Annotated[
        float | None,
        typer.Option(
            "--requests-per-minute",
            "--rpm",
            help="openai/gemini: the endpoint's request limit; every worker of the run shares one pace and honours Retry-After.",
        ),
    ] = None,
    tokens_per_minute: Annotated[
        float | None,
        typer.Option(
            "--tokens-per-minute",
            "--tpm",
            help="openai/gemini: the endpoint's token limit (prompt + completion), shared the same way.",
        ),
    ] = None,
    no_coalitions: Annotated[
        bool, typer.Option("--no-coalitions", help="Skip interaction pairs and coalition trials.")
    ] = not _CFG.coalitions,
    skip_missing: Annotated[
        bool,
        typer.Option(
            "--skip-missing/--strict-gold", help="Drop gold ids not in the corpus (counted) instead of failing."
        ),
    ] = True,
    sim_effect: Annotated[
        float, typer.Option("--sim-effect", help="simulated solver: effect of each gold document.")
    ] = 0.3,
    sim_base: Annotated[
        float, typer.Option("--sim-base", help="simulated solver: success rate without gold documents.")
    ] = 0.1,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Print the run's plan (calls, tokens, cost, time; per case and in total) and stop: no solver call, nothing written. "
            "On a run directory with trials, the calls already logged are subtracted.",
        ),
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="--plan: print the plan as JSON on stdout.")] = False,
    price_in: Annotated[
        float | None,
        typer.Option(
            "--price-in",
            help="USD per million prompt tokens, for the plan and the cost in run.json (default: a dated list price for known hosted models, 0 for local).",
        ),
    ] = _CFG.price_in,
    price_out: Annotated[
        float | None, typer.Option("--price-out", help="USD per million completion tokens (as --price-in).")
    ] = _CFG.price_out,
    latency: Annotated[
        float | None,
        typer.Option(
            "--latency", help="--plan: seconds per solver call (default: the local model's measured throughput)."
        ),
    ] = None,
    pilot: Annotated[
        int,
        typer.Option(
            "--pilot",
            help="Cases the pilot samples before the run (no document vs every candidate: the preflight calls, reused by the run); "
            "a run whose success does not move with the documents stops unless --force. 0: no pilot.",
        ),
    ] = PILOT_CASES,
    answer_grammar: Annotated[
        str,
        typer.Option(
            "--answer-grammar",
            help="How string_match and multiple_choice read replies: strict (exactly one answer, else fail) or lenient "
            "(deltap's matching before the answer grammar; resumes a run directory mined with it).",
        ),
    ] = "strict",
    remine_changed: Annotated[
        bool,
        typer.Option(
            "--remine-changed",
            help="Resuming a run directory: re-mine from scratch exactly the cases whose inputs changed (question, reference, "
            "checker, prompt, candidate texts, retriever, solver...) instead of refusing the resume.",
        ),
    ] = False,
) -> None:
    """Mine which documents raise each case's success probability (ΔP), with honest statistics.

    Writes RUN_DIR/retrieval_dataset.yaml, trials.sqlite, qrels/test.tsv, qrels.trec, qrels.jsonl and run.json.
    """
    import warnings

    from rich.console import Console

    from deltap.errors import DeltapError
    from deltap.loaders import load_cases, load_corpus
    from deltap.mining.engine import mine
    from deltap.mining.progress import MiningProgress
    from deltap.mining.results import PlaceboCalibrationWarning
    from deltap.mining.tilt import TiltWarning
    from deltap.solvers.base import is_deterministic

    console = Console(stderr=True)
    if outcome not in ("pass", "logprob"):
        raise DeltapError(f"--outcome must be pass or logprob, got {outcome!r}")
    if answer_grammar not in ("strict", "lenient"):
        raise DeltapError(f"--answer-grammar must be strict or lenient, got {answer_grammar!r}")
    from deltap.mining.trials import TrialLog

    TrialLog.check_unlocked(out / "trials.sqlite")  # a second `deltap mine` on this directory stops here, at once
    corpus = load_corpus(corpus_path)
    cases = load_cases(cases_path, corpus=corpus, on_missing="skip" if skip_missing else "error")
    missing: dict[str, list[str]] = {c.case_id: list(c.metadata.get("gold_missing") or []) for c in cases}
    missing = {k: v for k, v in missing.items() if v}
    if missing:
        n = sum(len(v) for v in missing.values())
        console.print(
            f"[yellow]{n} gold id(s) of {len(missing)} case(s) are not in the corpus and were dropped[/yellow]"
        )
    if case_ids:
        wanted = [c.strip() for c in case_ids.split(",") if c.strip()]
        unknown = sorted(set(wanted) - {c.case_id for c in cases})
        if unknown:
            raise DeltapError(f"--cases: unknown case id(s) {', '.join(unknown)} in {cases_path}")
        cases = [c for c in cases if c.case_id in set(wanted)]
    if limit is not None:
        cases = cases[:limit]
    if answer_grammar == "lenient":
        cases = [_with_grammar(c, answer_grammar) for c in cases]
    if any(c.checker.kind == "pytest" for c in cases):
        _say_sandbox_gaps(console)
    retriever = None
    if retriever_kind != "none" and k > 0:
        from deltap.retrieval import build_retriever

        with console.status(f"building the {retriever_kind} retriever over {len(corpus)} documents..."):
            retriever = build_retriever(retriever_kind, corpus, store=index, seed=seed)
    from deltap.execution import EXECUTORS
    from deltap.execution.base import SolverSpec

    if executor_kind not in EXECUTORS:
        raise DeltapError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor_kind!r}")
    if executor_kind != "ray" and (ray_address is not None or calls_per_worker is not None):
        raise DeltapError("--ray-address and --calls-per-worker need --executor ray")
    options = _parse_options(solver_option)
    if model:
        options.setdefault("model", model)
    for key, value in (("requests_per_minute", requests_per_minute), ("tokens_per_minute", tokens_per_minute)):
        if value is not None:
            if solver_kind not in ("openai", "gemini"):
                raise DeltapError(f"--{key.replace('_', '-')} paces the openai and gemini solvers, not {solver_kind!r}")
            options[key] = value
    if solver_kind == "simulated":
        from deltap.solvers.simulated import planted_truth

        options = {**planted_truth(cases, sim_effect, sim_base), "outcome": outcome, "seed": seed, **options}
    # One recipe for the driver's solver and for every Ray replica: they cannot disagree.
    spec = SolverSpec(solver_kind, options)
    try:
        solver: Any = spec.build()
    except DeltapError:
        if not (plan and solver_kind in ("openai", "gemini")):
            raise
        from deltap.mining.plan import hosted_model

        solver = hosted_model(solver_kind, options)  # planning needs no key and no connection
    config = MiningConfig(
        outcome=outcome,  # type: ignore[arg-type]
        budget=budget, seed=seed, q=q, pi=pi, design=design, null=null, min_effect=min_effect, context_order=context_order,
        k=k if retriever else 0, n_placebo=placebo, placebo_kind=placebo_kind, max_candidates=max_candidates, force=force,
        require_separate=require_separate,
        coalitions=not no_coalitions, gold_weight=gold_weight, cases_in_flight=cases_in_flight,
        workers=workers if executor_kind == "inprocess" and workers is not None else _CFG.workers,
        price_in=price_in, price_out=price_out, pilot=pilot,
    )  # fmt: skip
    if json_output and not plan:
        raise DeltapError("--json prints the plan: use it with --plan")
    from deltap.mining.spend import prices_for
    from deltap.solvers.base import solver_id

    prices = prices_for(price_in, price_out, solver_id(solver), local=solver_kind == "local")
    if plan:
        _print_plan(
            cases, corpus, solver, config, retriever, prices, latency, requests_per_minute, json_output, console, out
        )
        return
    executor: Any = None
    if executor_kind == "ray":
        from deltap.execution import make_executor

        ray_options = {"workers": workers, "address": ray_address, "calls_per_worker": calls_per_worker}
        executor = make_executor("ray", solver=spec, **{k: v for k, v in ray_options.items() if v is not None})
    with (
        warnings.catch_warnings(record=True) as caught,
        MiningProgress(
            len(cases), console=console, config=config, deterministic=is_deterministic(solver), prices=prices
        ) as progress,
    ):
        warnings.simplefilter("always", PlaceboCalibrationWarning)
        warnings.simplefilter("always", TiltWarning)
        result = mine(
            cases,
            corpus,
            solver,
            out=out,
            config=config,
            retriever=retriever,
            progress=progress,
            remine_changed=remine_changed,
            executor=executor,
        )
    run = result.run
    new_calls = run.get("calls_this_process", run["calls"])
    resumed = f" ({new_calls} made now, the rest read from the trial log)" if new_calls < run["calls"] else ""
    console.print(
        f"[bold]mined {run['cases']} case(s)[/bold] in {run['wall_seconds']:.1f}s, {run['calls']} calls{resumed}: {run['cases_by_status']}"
    )
    ex = run.get("execution") or {}
    if ex.get("executor") == "ray" or int(ex.get("cases_in_flight") or 1) > 1:
        console.print(
            f"executed: {ex.get('executor')}, {ex.get('workers')} worker(s), {ex.get('cases_in_flight')} case(s) in flight"
        )
    console.print(f"verdicts: {run['verdicts']}")
    if run.get("spend"):
        from deltap.mining.spend import spend_line

        console.print(spend_line(run["spend"]), highlight=False)
    if run.get("plan_vs_spent"):
        from deltap.mining.plan import plan_vs_spent_lines

        console.print("\n".join(plan_vs_spent_lines(run["plan_vs_spent"])), highlight=False)
    shared = (run.get("pytest_checks") or {}).get("shared") or {}
    if shared.get("cases"):
        console.print(
            f"pytest checks in the test process (shared mode, see --require-separate): {shared['cases']} case(s), {shared['checks']} check(s)"
        )
    pl = run["placebo"]
    console.print(
        f"placebo false-positive rate: {pl['fpr']:.3f} ({pl['labelled_relevant']} relevant + {pl['labelled_harmful']} harmful of {pl['n']}; BH reference q·R/M {pl['nominal']:.4f})"
    )
    if "effect_abs" in pl:
        ea = pl["effect_abs"]
        console.print(
            f"placebo |estimated effect| (random text, estimation noise included): median {ea['median']:.2f}, 90th percentile {ea['p90']:.2f}, max {ea['max']:.2f} {ea['unit']}"
        )
    nl = pl.get("null") or {}
    if nl.get("used") == "placebo":
        from deltap.mining.empirical_null import describe_null

        console.print(f"null: placebo effects, {describe_null(nl)}")
    elif nl.get("reason") and not nl.get("too_few"):  # too few placebos: said once, last, by summary_lines
        console.print(f"null: zero ({nl['reason']})")
    tilt = run.get("tilt") or {}
    if tilt.get("message") and not tilt.get("large"):  # a large tilt is a warning below
        console.print(str(tilt["message"]), markup=False, highlight=False, soft_wrap=True)
    for w in caught:
        console.print(f"[red]warning:[/red] {w.message}")
    from deltap.mining.placebo_check import summary_lines

    for line, bad in summary_lines(pl):  # last, so a failed check is the line a user sees
        console.print(
            f"[bold red]{line}[/bold red]" if bad else f"[green]{line}[/green]",
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
    typer.echo(str(out / "retrieval_dataset.yaml"))


def simulate_command(
    scenario: list[str] = typer.Option(
        [],
        "--scenario",
        help="Scenario(s): S1, harmful, interaction, saturated, logprob, logprob_text, logprob_sparse, logprob_tilted, logprob_tilted_similar, m60, null, mixed (default: all).",
    ),
    design: list[str] = typer.Option(
        [],
        "--design",
        help="Designs: naive:N, fixed:N, adaptive, adaptive:BUDGET, each optionally /bernoulli (coin-flip inclusion), /placebo or /zero (the null), /gwW (gold weight W) and @q (default: the benchmark set).",
    ),
    replications: int = typer.Option(1000, "--replications", "-r", help="Replications per (scenario, design)."),
    seed: int = typer.Option(0, "--seed", help="Seed."),
    budget: int | None = typer.Option(
        None, "--budget", help="Adaptive design: maximum design trials per case (default: deltap mine's)."
    ),
    q: float = typer.Option(0.05, "--q", help="FDR level (fixed and adaptive designs)."),
    dataset_size: int = typer.Option(
        40,
        "--dataset-size",
        help="Cases per simulated dataset: the family of the dataset-wide BH step, as in deltap mine (1 = per case).",
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the results as JSON."),
) -> None:
    """Run the mining simulation benchmark with known truth (label precision, recall, null FPR, calls per case).

    Every simulated case goes through deltap mine's own per-case procedure; calls count preflight, design trials and
    coalition checks, as deltap mine counts them.
    """
    import json

    from rich.console import Console
    from rich.table import Table

    from deltap.mining.config import MiningConfig
    from deltap.mining.simulation import DEFAULT_DESIGNS, MIXTURES, SCENARIOS, run_design, run_mixture

    names = scenario or [*SCENARIOS, *MIXTURES]
    designs = design or list(DEFAULT_DESIGNS)
    cfg = MiningConfig(q=q) if budget is None else MiningConfig(budget=budget, q=q)  # deltap mine's own defaults
    table = Table(
        title=f"deltap simulate ({replications} replications, seed {seed}, BH over datasets of {dataset_size} cases)"
    )
    for col in (
        "scenario",
        "design",
        "precision",
        "FDR",
        "recall",
        "null FPR",
        "harmful recall",
        "calls/case",
        "skipped",
        "s",
    ):
        table.add_column(col, justify="right" if col not in ("scenario", "design") else "left")
    rows = []
    from deltap.errors import DeltapError

    unknown = [s for s in names if s not in SCENARIOS and s not in MIXTURES]
    if unknown:
        raise DeltapError(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join([*SCENARIOS, *MIXTURES])}")
    console = Console(width=max(Console().width, 130))
    with console.status("simulating..."):
        for name in names:
            for d in designs:
                if name in MIXTURES:
                    r = run_mixture(MIXTURES[name], d, replications, seed, cfg, dataset_size)
                else:
                    r = run_design(SCENARIOS[name], d, replications, seed, cfg, dataset_size)
                rows.append(r.row())
                f = lambda x: "—" if x != x else f"{x:.3f}"  # noqa: E731
                table.add_row(
                    name,
                    d,
                    f(r.precision),
                    f(r.fdr),
                    f(r.recall),
                    f"{r.null_fpr:.4f}",
                    f(r.harmful_recall),
                    f"{r.calls_mean:.1f}",
                    f"{r.skipped:.2f}",
                    f"{r.seconds:.1f}",
                )
    console.print(table)
    if json_out is not None:
        from deltap._io import write_text_atomic

        write_text_atomic(json_out, json.dumps(rows, indent=2) + "\n")


def _print_plan(
    cases: Any,
    corpus: Any,
    solver: Any,
    config: MiningConfig,
    retriever: Any,
    prices: Any,
    latency: float | None,
    rpm: float | None,
    as_json: bool,
    console: Any,
    out: Path | None = None,
) -> None:
    """``deltap mine --plan``: the plan in 80 columns on stdout (or as JSON), no solver call."""
    import json

    from deltap.errors import DeltapError
    from deltap.mining.plan import plan_mine

    if latency is not None and latency < 0:
        raise DeltapError(f"--latency must be seconds per call (>= 0), got {latency}")
    with console.status(f"planning {len(cases)} case(s) (pools and token counts, no solver call)..."):
        plan = plan_mine(
            cases, corpus, solver, config, retriever=retriever, prices=prices, latency=latency, rpm=rpm, out=out
        )
    if as_json:
        typer.echo(json.dumps(plan.to_dict(), indent=2))
    else:
        for line in plan.lines():
            typer.echo(line)


def _say_sandbox_gaps(console: Any) -> None:
    """Before candidate code runs: name every sandbox protection that is OFF on this machine (``deltap sandbox``)."""
    from deltap.checkers.sandbox import protections

    off = [name for name, p in protections().items() if not p.enforced]
    if off:
        console.print(
            f"[yellow]the pytest checker's sandbox runs here without: {', '.join(off)} "
            "(`deltap sandbox` says why; see the README's 'Checker threat model')[/yellow]"
        )
