"""``deltap endtoend``: after ``deltap mine``, which retriever makes the model succeed, and which qrels predict it.

Only options, the call and printing: systems are built by :mod:`deltap.endtoend.systems`, the run is
:func:`deltap.endtoend.end_to_end`, the validity table :mod:`deltap.endtoend.validity`. Heavy modules are imported
inside the command body so ``deltap --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deltap.cli import options
from deltap.endtoend import systems as _systems
from deltap.endtoend.config import EndToEndConfig
from deltap.retrieval.registry import retriever_kinds

_C = EndToEndConfig()
RETRIEVERS = "bm25,dense,hybrid"
CONTROLS = ",".join(_systems.CONTROLS)  # the registered controls


def register(app: typer.Typer) -> None:
    """Add ``endtoend`` to ``app``."""
    app.command("endtoend")(endtoend_command)


def endtoend_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A deltap mine run directory (retrieval_dataset.yaml, qrels/).")
    ],
    cases_path: Annotated[
        Path, typer.Argument(metavar="CASES", help="The benchmark the run mined (YAML or BEIR folder).")
    ],
    corpus_path: Annotated[Path, typer.Option("--corpus", help="The corpus the run mined.")],
    retrievers: Annotated[
        str,
        typer.Option(
            "--retriever", help=f"Retriever systems among {retriever_kinds()}, comma-separated ('' for none)."
        ),
    ] = RETRIEVERS,
    runs: Annotated[
        list[str], typer.Option("--run", help="A saved run as a system: NAME=PATH (TREC or JSON). Repeatable.")
    ] = [],  # noqa: B006 - typer reads it, never mutates it
    controls: Annotated[
        str, typer.Option("--controls", help=f"Control systems: {CONTROLS} (comma-separated, '' for none).")
    ] = CONTROLS,
    k: Annotated[
        int, typer.Option("--top-k", "--k", help="Documents of each retriever or run put in the prompt.")
    ] = _C.k,
    repeats: Annotated[
        int,
        typer.Option("--repeats", help="Trials per case and system (a deterministic solver answers each prompt once)."),
    ] = _C.repeats,
    metrics: Annotated[
        str | None,
        typer.Option("--metrics", "-m", help="Metrics of the validity table (default ndcg@K,hit_rate@K,recall@K)."),
    ] = None,
    outcome: options.OutcomeOrRun = None,
    solver_kind: options.SolverKind = "local",
    model: options.Model = None,
    solver_option: options.SolverOptions = [],  # noqa: B006
    seed: options.Seed = _C.seed,
    max_calls: Annotated[
        int | None, typer.Option("--max-calls", help="Refuse to start when the call ceiling exceeds this.")
    ] = None,
    index: options.IndexOpt = None,
    workers: options.Workers = None,
    executor_kind: options.ExecutorKind = "inprocess",
    executor_option: options.ExecutorOptions = [],  # noqa: B006
    ray_address: options.RayAddress = None,
    requests_per_minute: options.RequestsPerMinute = None,
    tokens_per_minute: options.TokensPerMinute = None,
    limit: options.Limit = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Print the run's plan and stop: no solver or embedding call, nothing written. It counts every call the "
            "run makes — each system's prompt per case and repeat, and with --single-doc each shown document alone "
            "(and the no-document prompt for logprob); a deterministic solver's identical prompts once, trials the log "
            "holds not again — with tokens, cost and time. The time comes from the solver measured on this machine "
            "(this run's log, else the last measurement kept in ~/.cache/deltap/pace.json, else the mining log), else "
            "a 2-core table estimate (said so). A real run prints the same plan first, timed by its own first two "
            "calls (logged, not made again).",
        ),
    ] = False,
    json_output: options.PlanJson = False,
    price_in: options.PriceIn = None,
    price_out: options.PriceOut = None,
    latency: options.Latency = None,
    single_doc: Annotated[
        bool,
        typer.Option(
            "--single-doc",
            help="Also ask every document any system shows alone (eRAG's single-document utility; for logprob also "
            "the no-document prompt) and add erag_precision/hit/ndcg@K to the validity table. Costs up to K × systems "
            "more calls per case (counted in the ceiling).",
        ),
    ] = False,
) -> None:
    """Run every system's top-k through the solver end to end and say which qrels predict success.

    Systems: retrievers, saved runs and controls (no context, the gold documents, the mined relevant documents, every
    candidate). Writes RUN_DIR/endtoend/results.json, per_case.csv, per_case.json, manifest.json and its own
    resumable trials.sqlite (fresh seeds: mining's trials are never reused). With --outcome pass it also says how the
    checker read the replies (a declared 'Answer:' line, the answer grammar, or not at all), and warns when the
    checker rather than the documents decided many outcomes.
    """
    import json
    import time
    import warnings

    from rich.console import Console

    from deltap.endtoend.engine import call_ceiling
    from deltap.endtoend.mined_run import evaluate_end_to_end, mined_run_systems
    from deltap.endtoend.single import single_doc_ceiling
    from deltap.errors import DeltapError
    from deltap.loaders import load_cases, load_corpus
    from deltap.mining.readability import AnswerLineIgnoredWarning, UnreadableRepliesWarning
    from deltap.run_layout import RunDir
    from deltap.solvers.base import is_deterministic
    from deltap.trials.log import TrialLog
    from deltap.trials.setup import build_solver

    console = Console(stderr=True)
    settings = options.solver_settings(solver_kind, model, solver_option, requests_per_minute, tokens_per_minute)
    settings.check()  # a rate limit for a solver that is not hosted: refused before anything is read
    rd = RunDir(run_dir)
    outcome = outcome or str(rd.summary().get("outcome") or "pass")
    cfg = EndToEndConfig(k=k, repeats=repeats, outcome=outcome, seed=seed, max_calls=max_calls, workers=workers or 1,
                         single_doc=single_doc)  # fmt: skip
    TrialLog.check_unlocked(rd.endtoend.trials)
    rd.require_mined()
    control_names = [c.strip() for c in controls.split(",") if c.strip()]
    kinds = [r.strip() for r in retrievers.split(",") if r.strip()]
    corpus = load_corpus(corpus_path)
    cases = load_cases(cases_path, corpus=corpus, on_missing="skip")
    if json_output and not plan:
        raise DeltapError("--json prints the plan: use it with --plan")
    with console.status(f"building the systems ({', '.join(kinds) or 'no retriever'}) over {len(corpus)} documents..."):
        cases, systems, _ = mined_run_systems(run_dir, cases, corpus, retrievers=kinds, runs=runs, controls=control_names,
                                              k=k, store=index, seed=seed, plan_only=plan)  # fmt: skip
    cases = cases[:limit] if limit is not None else cases
    if plan:  # no solver or embedding call, nothing written
        from deltap.endtoend.plan import plan_from_options

        p = plan_from_options(cases, corpus, systems, cfg, settings, price_in=price_in, price_out=price_out,
                              latency=latency, out=rd.endtoend.root)  # fmt: skip
        typer.echo(json.dumps(p.to_dict(), indent=2) if json_output else "\n".join(p.lines()))
        return
    executor_set = options.executor_settings(executor_kind, workers, executor_option, {"address": ray_address})
    solver, _, executor = build_solver(settings, executor_set, cases, outcome, seed)
    det = is_deterministic(solver)
    planned = _run_plan(console, solver, cases, corpus, systems, cfg, rd.endtoend.root, requests_per_minute)
    ceiling = call_ceiling(len(cases), len(systems), cfg.repeats, det)
    single = single_doc_ceiling([c.case_id for c in cases], systems, k, cfg.repeats, det, outcome) if single_doc else 0
    note = "; a deterministic solver answers each distinct prompt once (fewer calls)" if det else ""
    single_note = f" + ≤{single} single-document (eRAG) calls = ≤{ceiling + single}" if single_doc else ""
    ceiling += single
    console.print(
        f"[bold]end to end:[/bold] {len(cases)} cases × {len(systems)} systems ({', '.join(s.name for s in systems)}) × "
        f"{1 if det else cfg.repeats} repeat(s) = ≤{ceiling - single} solver calls{single_note}{note}; outcome {outcome}, top {k}"
        + (f", --max-calls {max_calls}" if max_calls is not None else "")
    )
    measures = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    manifest = {"cases": str(cases_path), "corpus": str(corpus_path), "solver": solver_kind, "runs": list(runs)}
    from deltap.cli.stopping import stopped, trials_line
    from deltap.endtoend.progress import EndToEndProgress

    started = time.monotonic()
    with (
        stopped(lambda: trials_line(rd.endtoend.trials)),
        warnings.catch_warnings(record=True) as caught,
        EndToEndProgress(len(cases), ceiling, console) as progress,
    ):
        for category in (UnreadableRepliesWarning, AnswerLineIgnoredWarning):
            warnings.simplefilter("always", category)  # recorded and printed below, whatever the warning filters say
        result = evaluate_end_to_end(run_dir, cases, corpus, solver, metrics=measures, config=cfg, executor=executor, progress=progress,
                                     systems=systems, manifest=manifest, timed_before=planned.timed[:2])  # fmt: skip
    checker_warnings = (UnreadableRepliesWarning, AnswerLineIgnoredWarning)
    for w in caught:  # any other warning goes back to the warning machinery, as before
        if not issubclass(w.category, checker_warnings):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    _print(console, result, [str(w.message) for w in caught if issubclass(w.category, checker_warnings)])
    after_plan = int(result.run.get("calls_this_process", 0)) - planned.timed[0]
    console.print(planned.spent_line(time.monotonic() - started, after_plan), markup=False)
    typer.echo(str(rd.endtoend.results))


def _run_plan(console: Any, solver: Any, cases: Any, corpus: Any, systems: Any, cfg: EndToEndConfig, out: Path,
              rpm: float | None) -> Any:  # fmt: skip
    """A real run's plan, printed before its first call: every call it makes (the systems' prompts and, with
    --single-doc, each document alone), its tokens, and the time from the solver timed on this machine (a resumed
    run: its log's latest calls; else the run's own first two calls, logged and not made again;
    :func:`deltap.endtoend.plan.run_plan`)."""
    from deltap.endtoend.plan import run_plan

    with console.status("timing the solver on this machine (the run's first two calls)..."):
        planned = run_plan(solver, cases, corpus, systems, cfg, out, rpm)
    for line in planned.brief():
        console.print(line, markup=False, highlight=False)
    return planned


def calls_line(run: dict[str, Any]) -> str:
    """What each count of the run is: solver calls, trials answered from an identical prompt (no call), and how many
    of the log's trials this session wrote (the plan's "already logged" counts trials, not calls)."""
    calls, cached = int(run["calls"]), int(run.get("cached") or 0)
    trials, now = calls + cached, int(run.get("calls_this_process", calls))
    written = int(run.get("trials_this_process", trials))
    text = f"{trials} trials in the log: {calls} solver calls + {cached} answered from an identical prompt's earlier answer"
    if written >= trials:
        return text + "; all written by this session"
    return (
        text
        + f"; this session wrote {written} ({now} calls), earlier sessions {trials - written} ({calls - now} calls)"
    )


def _print_checker(console: Any, block: dict[str, Any], warned: list[str]) -> None:
    """How the checker read the run's replies (results.json's ``checker`` block, :mod:`deltap.mining.readability`):
    its one line, yellow when it warns, then each warning the run gave as a ``warning:`` line, as ``deltap mine``
    prints them. Nothing for a run without the block (``logprob``)."""
    from rich.text import Text

    from deltap.mining.readability import readability_line, readability_warned

    line = readability_line(block)
    if line is not None:
        console.print(line, style="yellow" if readability_warned(block) else None, markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
    for message in warned:
        console.print(Text.assemble(("warning:", "red"), " " + message), highlight=False, soft_wrap=True)


def _print(console: Any, result: Any, warned: list[str]) -> None:
    import textwrap

    from deltap.evaluation.headline import clause_lines
    from deltap.report.headline import endtoend_headline

    run = result.run
    console.print(calls_line(run), markup=False)
    _print_checker(console, result.checker, warned)
    missing = len(result.case_ids) - len(result.complete)
    if missing:
        skipped = [c for c in result.per_case if c.get("skipped")]
        why = f"; {len(skipped)} skipped ({skipped[0]['case_id']}: {skipped[0]['skipped']})" if skipped else ""
        console.print(
            f"[yellow]{missing} of {len(result.case_ids)} cases lack a value for some system and are left out of the statistics{why}[/yellow]"
        )
    typer.echo(result.table())
    sig = [p for p in result.pairs if p["p_holm"] <= 0.05]
    typer.echo(
        f"paired randomization tests, Holm-corrected over {len(result.pairs)} pairs: {len(sig)} significant at 0.05"
    )
    for p in sorted(sig, key=lambda p: p["p_holm"])[:10]:
        typer.echo(f"  {p['a']} − {p['b']} = {p['diff']:+.3f} (p_holm {p['p_holm']:.4f})")
    if result.single_doc:
        n_docs = sum(len(v) for v in result.single_doc.values())
        from deltap.outcomes import outcome_kind

        label = outcome_kind(result.outcome).alone_label
        typer.echo(
            f"single-document utility (eRAG): {n_docs} documents of {len(result.single_doc)} cases, label = {label}"
        )
    v = result.validity
    if v:
        typer.echo(validity_table(v))
        for note in dict.fromkeys(v.get("notes", [])):
            typer.echo(f"note: {note}")
        from deltap.report.endtoend import VALIDITY_RULE

        typer.echo(textwrap.fill(VALIDITY_RULE, 100))
        for line in clause_lines(str(v["summary"])):  # the validity sentence as short lines
            typer.secho(line, bold=True)
        if v.get("summary_within"):  # the fair yardstick: within questions, on the systems no labels define
            for line in clause_lines(str(v["summary_within"])):
                typer.secho(line, bold=True)
    typer.echo("")
    for line in endtoend_headline(result.to_dict()):  # the answer last: which system makes the model succeed
        typer.secho(textwrap.fill(line, 100), bold=True)


def validity_table(v: dict[str, Any]) -> str:
    """The validity rows as plain text: the pooled figures, then the fair ones (within questions, on the systems no
    compared labels define) with the paired differences of each qrels against gold."""

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:+.2f}"

    def ci(pair: Any) -> str:
        pair = pair or [None, None]
        return "[" + f(pair[0]) + ", " + f(pair[1]) + "]"

    w = max([22, *(len(str(r["metric"])) + 1 for r in v["rows"])])
    wq = max([16, *(len(str(r["qrels"])) + 1 for r in v["rows"])])
    lines = [f"{'metric':<{w}} {'qrels':<{wq}} {'τ systems':>9} {'interval':>16} {'r questions':>11} {'interval':>16}"]
    for r in v["rows"]:
        lines.append(
            f"{r['metric']:<{w}} {r['qrels']:<{wq}} {f(r['tau']):>9} {ci(r['tau_ci']):>16} {f(r['r']):>11} {ci(r['r_ci']):>16}"
        )
    if "fair_systems" not in v:  # a results.json of an older deltap: the pooled figures only
        return "\n".join(lines)
    left = "; ".join(f"{k}: {why}" for k, why in (v.get("left_out") or {}).items())
    lines += ["", f"within questions, over the {len(v['fair_systems'])} fair systems ({', '.join(v['fair_systems'])})"
              + (f"; left out: {left}" if left else "")
              + (f"; lift over '{v['baseline']}'" if v.get("baseline") else "")]  # fmt: skip
    lines.append(
        f"{'metric':<{w}} {'qrels':<{wq}} {'τ within':>9} {'interval':>16} {'ties':>9} {'r centred':>10} {'interval':>16} "
        f"{'r lift':>7} {'interval':>16}"
    )
    for r in v["rows"]:
        ties = f"{r.get('ties', 0)}/{r.get('questions', 0)}"
        lines.append(f"{r['metric']:<{w}} {r['qrels']:<{wq}} {f(r.get('tau_within')):>9} {ci(r.get('tau_within_ci')):>16} {ties:>9} "
                     f"{f(r.get('r_centred')):>10} {ci(r.get('r_centred_ci')):>16} {f(r.get('r_lift')):>7} {ci(r.get('r_lift_ci')):>16}")  # fmt: skip
    diffs = [c for c in v.get("comparisons", []) if "tau_within_diff" in c]
    if diffs:
        lines += ["", "differences (a − b), paired over questions: τ within, question-centred r"]
        for c in diffs:
            lines.append(f"  {c['metric']}: {c['a']} − {c['b']}: τ within {f(c['tau_within_diff'])} {ci(c['tau_within_diff_ci'])}, "
                         f"r centred {f(c.get('r_centred_diff'))} {ci(c.get('r_centred_diff_ci'))}")  # fmt: skip
    return "\n".join(lines)
