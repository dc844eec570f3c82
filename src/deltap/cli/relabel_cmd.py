"""``deltap relabel RUN_DIR --out NEW_DIR``: a run's labels, qrels, dataset and report again, with other labelling
options and no solver call (:func:`deltap.mining.relabel.relabel`).

Only options, the call and printing. Heavy modules are imported inside the command body so ``deltap --help`` stays
fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from deltap.mining.config import NULLS

_NEEDS_CALLS = "Refused unless it equals the run's: it changes which trials are made (needs solver calls)."


def register(app: typer.Typer) -> None:
    """Add ``relabel`` to ``app``."""
    app.command("relabel")(relabel_command)


def relabel_command(
    run_dir: Annotated[
        Path,
        typer.Argument(metavar="RUN_DIR", help="A deltap mine run directory, finished or stopped (never written)."),
    ],
    out: Annotated[Path, typer.Option("--out", help="The new run directory (must not exist, or be empty).")],
    q: Annotated[
        float | None, typer.Option("--q", help="Dataset-wide Benjamini-Hochberg FDR level (default: the run's).")
    ] = None,
    null: Annotated[
        str | None,
        typer.Option(
            "--null",
            help=f"What effects are tested against: {', '.join(NULLS)} (see deltap mine --help; default: the run's).",
        ),
    ] = None,
    gold_weight: Annotated[
        float | None,
        typer.Option("--gold-weight", help="Prior weight of gold candidates in weighted BH (default: the run's)."),
    ] = None,
    gold_weight_learned: Annotated[
        bool | None,
        typer.Option(
            "--gold-weight-learned/--fixed-gold-weight",
            help="Learn each case's gold weight from the other cases' gold candidates, or not (default: the run's).",
        ),
    ] = None,
    min_effect: Annotated[
        float | None, typer.Option("--min-effect", help="Smallest effect labelled relevant (default: the run's).")
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option("--margin", help="Equivalence margin of 'irrelevant' (default: the run's, or --min-effect)."),
    ] = None,
    grade_lfsr: Annotated[
        float | None,
        typer.Option(
            "--grade-lfsr",
            help="Grade a positive shrunken utility in the graded qrels only when its local false sign rate is at most "
            "this (1: every positive utility, the default; default: the run's).",
        ),
    ] = None,
    single_doc_prior: Annotated[
        bool,
        typer.Option(
            "--single-doc-prior",
            help="Graded labels: split each source group of the prior by the sign of the document's lift alone, read "
            "from RUN_DIR/endtoend/ (deltap endtoend --single-doc; docs/graded-labels.md).",
        ),
    ] = False,
    cases_path: Annotated[
        Path | None,
        typer.Option(
            "--cases",
            help="The benchmark the run mined: needed, with --corpus, when the run stopped before writing its dataset.",
        ),
    ] = None,
    corpus_path: Annotated[
        Path | None, typer.Option("--corpus", help="The corpus the run mined (with --cases).")
    ] = None,
    report: Annotated[
        bool, typer.Option("--report/--no-report", help="Also write NEW_DIR/report.html and report.md.")
    ] = True,
    budget: Annotated[int | None, typer.Option("--budget", help=_NEEDS_CALLS, hidden=True)] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help=_NEEDS_CALLS, hidden=True)] = None,
    seed: Annotated[int | None, typer.Option("--seed", help=_NEEDS_CALLS, hidden=True)] = None,
    k: Annotated[int | None, typer.Option("--top-k", "--k", help=_NEEDS_CALLS, hidden=True)] = None,
    placebo: Annotated[int | None, typer.Option("--placebo", help=_NEEDS_CALLS, hidden=True)] = None,
    placebo_kind: Annotated[str | None, typer.Option("--placebo-kind", help=_NEEDS_CALLS, hidden=True)] = None,
    max_candidates: Annotated[int | None, typer.Option("--max-candidates", help=_NEEDS_CALLS, hidden=True)] = None,
    pi: Annotated[float | None, typer.Option("--pi", help=_NEEDS_CALLS, hidden=True)] = None,
    design: Annotated[str | None, typer.Option("--design", help=_NEEDS_CALLS, hidden=True)] = None,
    context_order: Annotated[str | None, typer.Option("--context-order", help=_NEEDS_CALLS, hidden=True)] = None,
    solver: Annotated[str | None, typer.Option("--solver", help=_NEEDS_CALLS, hidden=True)] = None,
) -> None:
    """Relabel a mined run with other labelling options, at no cost: no solver call.

    Re-derives the labels, grades, qrels, retrieval_dataset.yaml, run.json and report of RUN_DIR from a copy of its
    trial log, with another --q, --null, --gold-weight, --gold-weight-learned, --min-effect, --margin or --grade-lfsr, into a new
    run directory (RUN_DIR is never written). Each case's looks are the run's own: its per-case procedure is replayed
    from the log, and a trial the log does not hold is never asked. A stopped run relabels too (each case from its
    last complete look; give --cases and --corpus when it wrote no dataset). Options that change which trials are
    made (--budget, --outcome, --seed, --top-k, --placebo, --design, --solver...) need calls and are refused: resume the
    run with deltap mine, then relabel. run.json's relabel section records where the labels came from and what
    changed.
    """
    import warnings

    from rich.console import Console

    from deltap.mining.outputs import summary_lines as run_lines
    from deltap.mining.placebo_check import summary_lines
    from deltap.mining.relabel import relabel
    from deltap.mining.results import PlaceboCalibrationWarning
    from deltap.mining.tilt import TiltWarning

    console = Console(stderr=True)
    given = {"q": q, "null": null, "gold_weight": gold_weight, "gold_weight_learned": gold_weight_learned,
             "min_effect": min_effect, "margin": margin, "grade_lfsr": grade_lfsr, "budget": budget, "outcome": outcome, "seed": seed, "k": k,
             "n_placebo": placebo, "placebo_kind": placebo_kind, "max_candidates": max_candidates, "pi": pi,
             "design": design, "context_order": context_order, "solver": solver}  # fmt: skip
    options: dict[str, Any] = {key: v for key, v in given.items() if v is not None}
    cases = corpus = None
    if cases_path is not None or corpus_path is not None:
        from deltap.errors import DeltapError
        from deltap.loaders import load_cases, load_corpus

        if cases_path is None or corpus_path is None:
            raise DeltapError("--cases and --corpus go together: the benchmark and the corpus the run mined")
        corpus = load_corpus(corpus_path)
        cases = load_cases(cases_path, corpus=corpus, on_missing="skip")
    with warnings.catch_warnings(record=True) as caught, console.status(f"relabelling {run_dir} (no solver call)..."):
        warnings.simplefilter("always", PlaceboCalibrationWarning)
        warnings.simplefilter("always", TiltWarning)
        result = relabel(run_dir, out, cases=cases, corpus=corpus, single_doc_prior=single_doc_prior, **options)
    console.print(relabel_line(result.run["relabel"]), markup=False, highlight=False, soft_wrap=True)
    for line, style in run_lines(result.run):
        console.print(line, style=style or None, markup=False, highlight=False, soft_wrap=True)
    for w in caught:
        console.print(f"[red]warning:[/red] {w.message}")
    for line, bad in summary_lines(result.run["placebo"]):
        console.print(line, style="bold red" if bad else "green", markup=False, highlight=False, soft_wrap=True)
    if report:
        _reports(out, console)
    from deltap.run_layout import RunDir

    typer.echo(str(RunDir(out).dataset))


def relabel_line(rel: dict[str, Any]) -> str:
    """One line: where the labels came from, what changed, and what the replay could not do."""
    changed = (
        ", ".join(f"{k} {old} -> {new}" for k, (old, new) in rel["changed"].items()) or "no option (the run's own)"
    )
    moves = ", ".join(f"{k}: {n}" for k, n in sorted(rel["verdicts_changed"].items())) or "none"
    parts = [
        f"relabelled {rel['from']} with {rel['calls']} solver calls ({rel['trials_replayed']} of "
        f"{rel['trials_logged']} logged trials replayed): changed {changed}; verdicts changed: {moves}"
    ]
    if rel.get("incomplete"):
        parts.append(
            f"{len(rel['incomplete'])} case(s) incomplete (the run stopped): labelled from their last complete look"
        )
    if rel.get("coalitions_unchecked"):
        parts.append(
            f"coalitions unchecked in {len(rel['coalitions_unchecked'])} case(s): the new verdicts ask for coalition "
            "trials the log does not hold"
        )
    if rel.get("cases_left_out"):
        parts.append(f"{len(rel['cases_left_out'])} case(s) left out (never started, or not in the inputs given)")
    return "; ".join(parts)


def _reports(out: Path, console: Any) -> None:
    """The relabelled run's HTML and Markdown reports."""
    from deltap._io import write_text_atomic
    from deltap.report import load_run_dir, render_html, render_markdown
    from deltap.run_layout import RunDir

    data = load_run_dir(out)
    rd = RunDir(out)
    write_text_atomic(rd.report_html, render_html(data))
    write_text_atomic(rd.report_md, render_markdown(data))
    console.print(f"reports: {rd.report_html}, {rd.report_md}", markup=False, highlight=False)
