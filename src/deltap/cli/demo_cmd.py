"""``deltap demo``: the offline end-to-end run (corpus, mining, evaluation, report) on the embedded defaults."""

from __future__ import annotations

from pathlib import Path

import typer

from deltap.cli import options
from deltap.demo import DemoConfig

# Defaults come from the library's DemoConfig (one source: the CLI, the Python API and the README agree).
_D = DemoConfig(out=Path("deltap-demo"))


def _calls_line(run_dir: Path) -> str:
    """The trial log's call count and solver time per call, read by the report's own reader (the figures the report
    shows, so the terminal and the report cannot disagree)."""
    from deltap.report.run_data import read_trial_log
    from deltap.run_layout import RunDir

    log = read_trial_log(RunDir(run_dir).trials)
    if log is None or not log.calls:
        return "no solver call logged"
    return f"{log.calls} solver calls, {log.seconds_per_call:.2f} s of solver time each"


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""

    @app.command("demo")
    def demo(
        out: Path = typer.Option(_D.out, "--out", "-o", help="Output folder (corpus, index, run, report)."),
        cases: int = typer.Option(
            _D.cases, "--cases", help="How many bundled benchmark questions to mine (1-56; paraphrased ones first)."
        ),
        calls: int = typer.Option(
            _D.calls, "--calls", help="Solver calls in total (a ceiling), split evenly over the cases."
        ),
        budget: int | None = typer.Option(
            None, "--budget", hidden=True, help="Deprecated: --calls (deltap mine --budget is trials per case)."
        ),
        solver: options.SolverKind = _D.solver,
        outcome: options.Outcome = _D.outcome,
        seed: options.Seed = _D.seed,
        embedder: str | None = typer.Option(
            _D.embedder, "--embedder", help="Dense embedder spec (default all-MiniLM-L6-v2)."
        ),
        progress: bool = typer.Option(_D.progress, "--progress/--no-progress", help="Show progress bars."),
        endtoend: bool = typer.Option(
            _D.endtoend, "--endtoend/--no-endtoend", help="Run the end-to-end step (retrievers' top-k in the prompt)."
        ),
    ) -> None:
        """Run deltap end to end offline: stdlib corpus, bundled questions, local LLM mining, BM25/dense/hybrid, report."""
        from deltap.demo import BUDGET_DEPRECATED, run_demo
        from deltap.errors import DeltapError
        from deltap.run_layout import RunDir

        if budget is not None:
            if calls != _D.calls:
                raise DeltapError("give --calls only (--budget is its deprecated name)")
            typer.secho(f"warning: {BUDGET_DEPRECATED}", err=True, fg="yellow")
            calls = budget
        config = DemoConfig(
            out=out,
            cases=cases,
            calls=calls,
            solver=solver,
            outcome=outcome,
            seed=seed,
            embedder=embedder,
            progress=progress,
            endtoend=endtoend,
        )
        from deltap.cli.stopping import stopped, trials_line

        rd_demo = RunDir(out / "run")
        with stopped(lambda: trials_line(rd_demo.trials, rd_demo.endtoend.trials)):
            result = run_demo(config, say=typer.echo)
        typer.echo("")
        typer.secho(f"done in {result.timings.get('total', 0.0):.0f} s", bold=True)
        typer.echo(f"  corpus            {result.corpus_path} ({result.n_documents} documents)")
        rd = RunDir(result.run_dir)
        typer.echo(f"  verified dataset  {rd.dataset}")
        typer.echo(f"  qrels             {rd.qrels_beir} (also {rd.qrels_trec.name}, {rd.qrels_jsonl.name})")
        typer.echo(f"  trial log         {rd.trials} ({_calls_line(result.run_dir)})")
        if result.comparison:
            typer.echo(f"  comparison        {rd.comparison}")
        if result.endtoend:
            typer.echo(f"  end to end        {rd.endtoend.results}")
        typer.echo(f"  Markdown summary  {result.report_md}")
        typer.secho(f"  HTML report       {result.report_html}", bold=True)
        typer.echo("")
        import textwrap

        for line in result.headline:  # what mining found, the answer (report.headline); the placebo check last
            typer.secho(textwrap.fill(line, 100), bold=True)
        from deltap.mining.placebo_check import summary_lines

        for line, bad in summary_lines(result.placebo):  # last: a failed placebo check is the line a user sees
            typer.secho(line, fg="red" if bad else "green", bold=bad)
