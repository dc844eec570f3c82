"""CLI verbs of the mining area: ``deltap mine`` and ``deltap simulate``.

Heavy modules (numpy, the solver backends, retrievers) are imported inside the command bodies so ``deltap --help``
stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deltap.cli import options
from deltap.mining.config import PILOT_CASES, MiningConfig, describe_designs
from deltap.retrieval.registry import retriever_kinds


def register(app: typer.Typer) -> None:
    """Add ``mine`` and ``simulate`` to ``app``."""
    app.command("mine")(mine_command)
    app.command("simulate")(simulate_command)


# Options `mine` and `simulate` share (declared once); every default comes from MiningConfig, the library's own.
_CFG = MiningConfig()
Q = Annotated[float, typer.Option("--q", help="Dataset-wide Benjamini-Hochberg FDR level (per direction).")]
Budget = Annotated[
    int,
    typer.Option(
        "--budget",
        help=f"Maximum design trials per case (default {_CFG.budget}: about 94 calls per case with preflight and coalition checks).",
    ),
]


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
    index: options.IndexOpt = None,
    retriever_kind: Annotated[
        str, typer.Option("--retriever", help=f"{retriever_kinds()} or none: source of the retrieved candidates.")
    ] = "dense",
    k: Annotated[int, typer.Option("--top-k", "--k", help="Retrieved candidates per case.")] = _CFG.k,
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
    solver_kind: options.SolverKind = "local",
    model: options.Model = None,
    solver_option: options.SolverOptions = [],  # noqa: B006 - typer reads it, never mutates it
    outcome: options.Outcome = _CFG.outcome,
    budget: Budget = _CFG.budget,
    gold_weight: Annotated[
        float,
        typer.Option(
            "--gold-weight",
            help="Prior weight of gold candidates in the weighted Benjamini-Hochberg step (fixed in advance; weights average 1, "
            "so the FDR stays at --q). 1 treats gold like any candidate.",
        ),
    ] = _CFG.gold_weight,
    gold_weight_learned: Annotated[
        bool,
        typer.Option(
            "--gold-weight-learned",
            help="Learn each case's gold weight from the other cases' gold candidates (never below --gold-weight, at "
            "most 10x; cross-fitted). Fewer calls per label; costs recall on relevant retrieved documents "
            "(benchmarks/README.md).",
        ),
    ] = _CFG.gold_weight_learned,
    grade_lfsr: Annotated[
        float,
        typer.Option(
            "--grade-lfsr",
            help="Graded qrels: grade a positive shrunken utility only when its local false sign rate is at most this "
            "(1: every positive utility, in proportion to it; docs/graded-labels.md). Changeable later by deltap relabel.",
        ),
    ] = _CFG.grade_lfsr,
    seed: options.Seed = _CFG.seed,
    q: Q = _CFG.q,
    pi: Annotated[
        float,
        typer.Option("--pi", help="Inclusion probability of each candidate (other than 0.5 needs --design bernoulli)."),
    ] = _CFG.pi,
    null: Annotated[
        str | None,
        typer.Option(
            "--null",
            help="What effects are tested against: zero (no effect), placebo (the placebo documents' effects: 'moves the outcome "
            "more than random text does') or topic (also the run's retrieved non-gold documents' effects: 'more than an "
            "on-topic document does'; for a tilted solver) or auto (the run's own tilt test decides, before any label: topic "
            "with the learned gold weight when tilted, else placebo). Default: auto for --outcome logprob, zero for pass.",
        ),
    ] = _CFG.null,
    design: Annotated[
        str,
        typer.Option(
            "--design",
            help=f"Which candidates each trial includes: {describe_designs()}.",
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
    limit: options.Limit = None,
    case_ids: Annotated[str | None, typer.Option("--cases", help="Comma-separated case ids to mine.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Mine saturated/unsolvable cases anyway.")] = _CFG.force,
    require_separate: Annotated[
        bool,
        typer.Option(
            "--require-separate",
            help="Refuse cases whose pytest checker would run the candidate inside the test process (shared mode).",
        ),
    ] = _CFG.require_separate,
    workers: options.Workers = None,
    executor_kind: options.ExecutorKind = "inprocess",
    executor_option: options.ExecutorOptions = [],  # noqa: B006 - typer reads it, never mutates it
    ray_address: options.RayAddress = None,
    cases_in_flight: Annotated[
        int | None,
        typer.Option(
            "--cases-in-flight",
            help="Cases mined at once (default: one per worker slot; 1 for the local solver in-process).",
        ),
    ] = _CFG.cases_in_flight,
    calls_per_worker: Annotated[
        int | None,
        typer.Option("--calls-per-worker", help="Same as --executor-option calls_per_worker=...", hidden=True),
    ] = None,
    requests_per_minute: options.RequestsPerMinute = None,
    tokens_per_minute: options.TokensPerMinute = None,
    no_coalitions: Annotated[
        bool, typer.Option("--no-coalitions", help="Skip interaction pairs and coalition trials.")
    ] = not _CFG.coalitions,
    verify_trials: Annotated[
        int,
        typer.Option(
            "--verify-trials",
            min=0,
            help="Trials that verify a case's winning coalition (a stochastic solver gets up to twice this). 3 saves 3 "
            "calls per case with the same labels on the simulation; with --budget 72 and --gold-weight-learned a "
            "case costs <= 72 calls (benchmarks/README.md, 'Calls per label').",
        ),
    ] = _CFG.verify_trials,
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
    plan: options.Plan = False,
    json_output: options.PlanJson = False,
    price_in: options.PriceIn = _CFG.price_in,
    price_out: options.PriceOut = _CFG.price_out,
    latency: options.Latency = None,
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
            help="How string_match and multiple_choice read replies: grader (the default: as a careful grader would, a "
            "final 'Answer: ...' line first; docs/answer-grammar.md), protocol (only an 'Answer: ...' line), strict "
            "(issue 24's grammar) or lenient (before it); strict and lenient resume run directories mined with them.",
        ),
    ] = "grader",
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
    import json
    import warnings

    from rich.console import Console

    from deltap.cli.stopping import stopped, trials_line
    from deltap.errors import DeltapError
    from deltap.mining import setup
    from deltap.mining.progress import MiningProgress
    from deltap.mining.readability import AnswerLineIgnoredWarning, UnreadableRepliesWarning
    from deltap.mining.results import PlaceboCalibrationWarning
    from deltap.mining.tilt import TiltWarning
    from deltap.solvers.base import is_deterministic

    console = Console(stderr=True)
    if json_output and not plan:
        raise DeltapError("--json prints the plan: use it with --plan")
    aliases = {"address": ray_address, "calls_per_worker": calls_per_worker}  # the older spellings of two options
    config = MiningConfig(
        outcome=outcome,  # type: ignore[arg-type]
        budget=budget, seed=seed, q=q, pi=pi, design=design, null=null, min_effect=min_effect, context_order=context_order,
        k=k, n_placebo=placebo, placebo_kind=placebo_kind, max_candidates=max_candidates, force=force,
        require_separate=require_separate, coalitions=not no_coalitions, verify_trials=verify_trials, gold_weight=gold_weight, gold_weight_learned=gold_weight_learned, grade_lfsr=grade_lfsr,
        cases_in_flight=cases_in_flight, price_in=price_in, price_out=price_out, pilot=pilot,
    )  # fmt: skip
    run = setup.prepare_run(
        setup.CaseSelection(cases_path, corpus_path, case_ids.split(",") if case_ids else None, limit, skip_missing, answer_grammar),
        options.solver_settings(solver_kind, model, solver_option, requests_per_minute, tokens_per_minute, sim_effect, sim_base),
        executor=options.executor_settings(executor_kind, workers, executor_option, aliases),
        retriever=setup.RetrieverSettings(retriever_kind, index), config=config, out=out, plan_only=plan, status=console.status,
    )  # fmt: skip
    for note in run.notes:
        console.print(f"[yellow]{note}[/yellow]", highlight=False)
    if plan:
        with console.status(f"planning {len(run.cases)} case(s) (pools and token counts, no solver call)..."):
            made = run.plan(latency=latency, rpm=requests_per_minute)
        typer.echo(json.dumps(made.to_dict(), indent=2) if json_output else "\n".join(made.lines()))
        return
    det = is_deterministic(run.solver)
    with (
        stopped(lambda: trials_line(run.run_dir.trials if run.run_dir else None)),  # Ctrl-C: what is kept, exit 130
        warnings.catch_warnings(record=True) as caught,
        MiningProgress(len(run.cases), console=console, config=run.config, deterministic=det, prices=run.prices) as bar,
    ):
        for category in (PlaceboCalibrationWarning, TiltWarning, UnreadableRepliesWarning, AnswerLineIgnoredWarning):
            warnings.simplefilter("always", category)  # recorded and printed below, whatever the warning filters say
        result = run.mine(progress=bar, remine_changed=remine_changed)
    _print_result(console, run, result.run, caught)


def _print_result(console: Any, run: Any, summary: dict[str, Any], caught: list[Any]) -> None:
    """What ``deltap mine`` prints after the run: its summary, the warnings, the answer, the placebo check, the path."""
    from deltap.mining.outputs import summary_lines as run_lines
    from deltap.mining.placebo_check import summary_lines
    from deltap.report.headline import answer_lines

    for line, style in run_lines(summary):
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)
    for w in caught:
        console.print(f"[red]warning:[/red] {w.message}")
    for line in answer_lines(run.run_dir.root if run.run_dir else run.layout["dataset"].parent):  # as the report begins
        console.print(line, style="bold", markup=False, highlight=False, soft_wrap=True)
    for line, bad in summary_lines(summary["placebo"]):  # last, so a failed check is the line a user sees
        console.print(line, style="bold red" if bad else "green", markup=False, highlight=False, soft_wrap=True)
    typer.echo(str(run.layout["dataset"]))


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
