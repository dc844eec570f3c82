"""CLI verb ``deltap export``: every trial of a run directory as CSV or Parquet, and the optional MLflow hook."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add ``export`` to ``app``."""
    app.command("export")(export_command)


def export_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="The folder `deltap mine --out` (or `deltap demo`) wrote.")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="csv (nothing to install) or parquet (pip install 'deltap[fast]').")
    ] = "csv",
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The file to write (default RUN_DIR/trials.csv or trials.parquet)."),
    ] = None,
    mlflow: Annotated[
        bool,
        typer.Option(
            "--mlflow",
            help="Also log the run to MLflow: params, metrics, the HTML report as an artefact (pip install 'deltap[mlflow]').",
        ),
    ] = False,
    tracking_uri: Annotated[
        str | None,
        typer.Option("--tracking-uri", help="--mlflow: where MLflow stores runs (default: MLflow's own, ./mlruns)."),
    ] = None,
    experiment: Annotated[str, typer.Option("--experiment", help="--mlflow: the MLflow experiment.")] = "deltap",
) -> None:
    """Export every trial (prompt hash, documents in the prompt, reply, verdict, latency, tokens) of a run directory.

    Prints the path written (and the MLflow run id with --mlflow).
    """
    from deltap.errors import DeltapError
    from deltap.mining.export import export_trials

    if not run_dir.is_dir():
        raise DeltapError(f"{run_dir}: not a run directory (give the folder `deltap mine --out` wrote)")
    if not mlflow and (tracking_uri is not None or experiment != "deltap"):
        raise DeltapError("--tracking-uri and --experiment need --mlflow")
    path = export_trials(run_dir, fmt, out)
    typer.echo(str(path))
    if mlflow:
        from deltap.report.tracking import log_run_to_mlflow

        run_id = log_run_to_mlflow(run_dir, tracking_uri, experiment)
        typer.echo(f"mlflow run {run_id}")
