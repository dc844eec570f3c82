"""``deltap report RUN_DIR``: the HTML report (or a Markdown summary) of a mining run."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add ``report`` to ``app``."""

    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help="The folder `deltap mine --out` (or `deltap demo`) wrote."),
        out: Path | None = typer.Option(
            None, "--out", "-o", help="Where to write (default RUN_DIR/report.html or report.md); '-' prints to stdout."
        ),
        fmt: str = typer.Option("html", "--format", "-f", help="html (self-contained page) or md (Markdown summary)."),
        corpus: Path | None = typer.Option(
            None, "--corpus", help="The mined corpus: lets the failure analysis test distractors outside the pools."
        ),
    ) -> None:
        """Write a self-contained HTML report of a mining run (verdicts, forest plots, calibration, retrievers)."""
        from deltap.errors import DeltapError
        from deltap.report import load_run_dir, render_html, render_markdown

        fmt = fmt.lower()
        if fmt not in {"html", "md", "markdown"}:
            raise DeltapError(f"unknown --format {fmt!r}; use html or md")
        data = load_run_dir(run_dir)
        docs = None
        if corpus is not None:
            from deltap.loaders import load_corpus

            docs = load_corpus(corpus)
        text = render_html(data, corpus=docs) if fmt == "html" else render_markdown(data)
        if out is not None and str(out) == "-":
            typer.echo(text, nl=False)
            return
        path = out if out is not None else data.path / ("report.html" if fmt == "html" else "report.md")
        from deltap._io import write_text_atomic

        write_text_atomic(path, text)
        for note in data.notes:
            typer.secho(f"note: {note}", fg="yellow", err=True)
        typer.echo(f"wrote {path} ({len(data.cases)} cases)")
