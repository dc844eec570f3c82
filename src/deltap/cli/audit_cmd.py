"""``deltap audit RUN_DIR``: the qrels audit of a mining run (gold confirmed / irrelevant / harmful / undecided, and
the relevant documents the gold misses), printed and exported as CSV + JSON."""

from __future__ import annotations

from pathlib import Path

import typer

_FORMATS = ("table", "markdown", "json", "csv")


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""

    @app.command("audit")
    def audit(
        source: Path = typer.Argument(..., help="A run folder (`deltap mine --out`) or its retrieval_dataset.yaml."),
        out: Path | None = typer.Option(
            None, "--out", "-o", help="Folder for audit.csv and audit.json (default RUN_DIR/audit); '-' writes none."
        ),
        fmt: str = typer.Option("table", "--format", "-f", help="What to print: table, markdown, json or csv."),
    ) -> None:
        """Audit the benchmark's gold judgements against the mined verdicts, per question and in total."""
        from deltap.errors import DeltapError
        from deltap.evaluation.audit import audit_qrels

        fmt = fmt.lower()
        if fmt not in _FORMATS:
            raise DeltapError(f"--format must be one of {', '.join(_FORMATS)}, got {fmt!r}")
        result = audit_qrels(source)
        text = {"table": result.to_table, "markdown": result.to_markdown, "json": result.to_json, "csv": result.to_csv}[
            fmt
        ]()
        typer.echo(text.rstrip("\n"))
        if out is not None and str(out) == "-":
            return
        from deltap.run_layout import RunDir

        target = out if out is not None else RunDir(Path(result.source).parent).audit.root
        for path in result.write(target).values():
            typer.secho(f"wrote {path}", err=True)
