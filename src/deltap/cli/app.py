"""Assemble the Typer app from the per-area command modules."""

from __future__ import annotations

import sys

import typer

from deltap import __version__

app = typer.Typer(
    name="deltap",
    help=(
        "deltap builds retrieval ground truth proven by task success (ΔP = P(success | doc in) − P(success | doc out)),"
        " evaluates retrievers against it, and checks RAG retrieval pipelines."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"deltap {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """deltap: retrieval ground truth proven by task success."""


def _register() -> None:
    import importlib

    for name in ("corpus_cmd", "retrieval_cmd", "mining_cmd", "evaluation_cmd", "check_cmd", "report_cmd", "demo_cmd"):
        importlib.import_module(f"deltap.cli.{name}").register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deltap`` script: user errors become one line on stderr and exit code 2."""
    from deltap.errors import DeltapError

    try:
        rv = app(args=argv, standalone_mode=False)
        # In non-standalone mode click *returns* the code of `raise typer.Exit(code)` instead of exiting.
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except DeltapError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except FileNotFoundError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code or 0)
    except typer.Abort:
        typer.secho("aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
