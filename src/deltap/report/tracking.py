"""An optional MLflow logging hook for a mining run (``pip install "deltap[mlflow]"``;
``deltap export RUN_DIR --mlflow [--tracking-uri URI]``).

One MLflow run per run directory: **params** (solver, outcome, seed, budget, q, π, minimum effect, and the run's
other options), **metrics** (cases, trials, solver calls, wall and solver seconds, tokens in/out, cost, verdict
counts, the placebo false-positive rate) and **artefacts** (the HTML report, ``run.json``, ``retrieval_dataset.yaml``
and the qrels). Everything is read from the run directory, so a finished run can be logged any time later.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from deltap.errors import DeltapError
from deltap.run_layout import RunDir

__all__ = ["log_run_to_mlflow", "mlflow_metrics", "mlflow_params"]


def mlflow_params(run_dir: str | Path) -> dict[str, str]:
    """The params of a run directory (strings, as MLflow stores them; values over 500 characters are cut)."""
    from deltap.report.run_data import load_run_dir

    data = load_run_dir(run_dir)
    params: dict[str, Any] = {
        k: data.get(k) for k in ("solver", "outcome", "seed", "budget", "q", "pi", "min_effect", "tool_version")
    }
    params.update({f"config.{k}": v for k, v in (data.metadata.get("config") or {}).items()})
    return {k: str(v)[:500] for k, v in params.items() if v is not None}


def mlflow_metrics(run_dir: str | Path) -> dict[str, float]:
    """The metrics of a run directory (numbers only; a figure the run did not record is left out)."""
    from deltap.report.run_data import load_run_dir

    data = load_run_dir(run_dir)
    out: dict[str, Any] = {
        "cases": len(data.cases),
        "trials": data.total_trials(),
        "solver_calls": data.total_calls(),
        "wall_seconds": data.get("wall_seconds"),
    }
    raw = data.summary.get("spend")
    spend: dict[str, Any] = raw if isinstance(raw, dict) else {}
    log = data.trial_log
    out["solver_seconds"] = spend.get("solver_seconds", log.solver_seconds if log is not None else None)
    out["tokens_in"] = spend.get("tokens_in")
    out["tokens_out"] = spend.get("tokens_out")
    out["cost_usd"] = spend.get("cost_usd")
    for verdict, n in data.verdict_counts().items():
        out[f"verdicts.{verdict}"] = n
    out["placebo_fpr"] = data.placebo().get("fpr")
    return {k: float(v) for k, v in out.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def log_run_to_mlflow(
    run_dir: str | Path, tracking_uri: str | None = None, experiment: str = "deltap", run_name: str | None = None
) -> str:
    """Log a run directory to MLflow and return the MLflow run id.

    Args:
        run_dir: A run directory ``deltap mine --out`` wrote.
        tracking_uri: Where MLflow stores runs (a ``file:`` store, ``sqlite:///mlflow.db``, a server URL); ``None``:
            MLflow's own default (``MLFLOW_TRACKING_URI`` or ``./mlruns``).
        experiment: The experiment (created when missing).
        run_name: The MLflow run's name (default: the run directory's name).

    Raises:
        DeltapError: mlflow is not installed, or the run directory cannot be read.
    """
    try:
        import mlflow
    except ImportError:
        raise DeltapError('the MLflow hook needs mlflow: pip install "deltap[mlflow]"') from None
    from deltap.report.html import render_html
    from deltap.report.run_data import load_run_dir

    path = Path(run_dir)
    data = load_run_dir(path)
    params, metrics = mlflow_params(path), mlflow_metrics(path)
    from mlflow.exceptions import MlflowException

    try:
        if tracking_uri is not None:
            mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_experiment(experiment)
        with mlflow.start_run(run_name=run_name or path.resolve().name) as run:
            mlflow.log_params(params)
            mlflow.log_metrics(metrics)
            with tempfile.TemporaryDirectory() as tmp:
                report = Path(tmp) / "report.html"
                report.write_text(render_html(data), encoding="utf-8")
                mlflow.log_artifact(str(report))
            rd = RunDir(path)
            for artefact in (rd.run_json, rd.dataset, rd.qrels_jsonl, rd.qrels_trec):
                if artefact.is_file():
                    mlflow.log_artifact(str(artefact))
            return str(run.info.run_id)
    except MlflowException as exc:  # e.g. MLflow 3 refuses a file store unless MLFLOW_ALLOW_FILE_STORE=true
        raise DeltapError(f"MLflow ({tracking_uri or 'default tracking URI'}): {str(exc).splitlines()[0]}") from None
