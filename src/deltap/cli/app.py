"""Assemble the Typer app from the per-area command modules."""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from deltap._version import __version__
from deltap.cli.help_format import HelpGroup

app = typer.Typer(
    cls=HelpGroup,
    name="deltap",
    help=(
        "deltap builds retrieval ground truth proven by task success (ΔP = P(success | doc in) − P(success | doc out)),"
        " evaluates retrievers against it, and checks RAG retrieval pipelines."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: it wraps every option's text at the terminal width (80 columns when piped) instead of
    # squeezing it into a narrow boxed column, and shows flags without type markers such as <bool>.
    rich_markup_mode=None,
    context_settings={"max_content_width": 100, "help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from deltap.evaluation.accel import accelerator_status

        typer.echo(f"deltap {__version__}")
        typer.echo(f"metric evaluation: {accelerator_status()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version, and whether metrics run compiled or pure Python, and exit.",
    ),
) -> None:
    """deltap: retrieval ground truth proven by task success."""


def _register() -> None:
    import importlib

    for name in (
        "corpus_cmd", "retrieval_cmd", "mining_cmd", "evaluation_cmd", "check_cmd", "report_cmd", "audit_cmd", "export_cmd",
        "endtoend_cmd", "relabel_cmd", "demo_cmd", "sandbox_cmd",
    ):  # fmt: skip
        importlib.import_module(f"deltap.cli.{name}").register(app)


_register()


def _fail(message: str, code: int = 2) -> NoReturn:
    """One line on stderr (embedded newlines folded) and the exit code."""
    typer.secho("error: " + " ".join(message.split()), fg="red", err=True)
    sys.exit(code)


def _usage_message(exc: BaseException) -> str | None:
    """The one-line message of a click usage error (click's own or the copy bundled with typer), else ``None``."""
    if not any(c.__name__ in ("ClickException", "UsageError") for c in type(exc).__mro__):
        return None
    fmt = getattr(exc, "format_message", None)
    message = str(fmt()) if callable(fmt) else str(exc)
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "deltap"
    if any(c.__name__ == "UsageError" for c in type(exc).__mro__):
        message = f"{message.rstrip('.')} (see '{path} --help')"
    return message


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``deltap`` script: every error becomes one line on stderr, never a traceback.

    Exit codes: 0 success; 2 a user error (bad usage, bad input file, a refused resume, an unwritable output...);
    130 stopped (Ctrl-C or SIGTERM: one line says what was kept, see :mod:`deltap.cli.stopping`); 1 an internal
    error (a bug: its one-line message asks for ``DELTAP_TRACEBACK=1``, which shows the traceback).
    """
    import os
    import sqlite3

    from deltap.cli.stopping import Stopped, signals
    from deltap.errors import DeltapError

    try:
        with signals():  # Ctrl-C / SIGTERM: a stop request, then a KeyboardInterrupt (deltap.cli.stopping)
            rv = app(args=argv, standalone_mode=False, prog_name="deltap")
        # In non-standalone mode click *returns* the code of `raise typer.Exit(code)` instead of exiting.
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except Stopped as exc:
        _stopped(str(exc))
    except DeltapError as exc:
        _fail(str(exc))
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code or 0)
    except (typer.Abort, KeyboardInterrupt):
        _stopped("stopped (interrupted)")
    except Exception as exc:
        if type(exc).__name__ == "Abort":  # click's own Abort (a KeyboardInterrupt) when typer's alias differs
            _stopped("stopped (interrupted)")
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `deltap` / `deltap corpus`: the help, as a user asked
            show = getattr(exc, "show", None)
            if callable(show):
                show()
            sys.exit(0)
        if type(exc).__name__ == "Exit":  # click's own Exit when typer's alias differs
            sys.exit(getattr(exc, "exit_code", 0) or 0)
        usage = _usage_message(exc)
        if usage is not None:
            _fail(usage, int(getattr(exc, "exit_code", 2) or 2))
        if isinstance(exc, OSError):  # a file that cannot be read or written, a full disk
            _fail(_os_message(exc))
        if isinstance(exc, UnicodeDecodeError):
            _fail(f"input is not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8")
        if isinstance(exc, sqlite3.Error):
            _fail(f"database error: {exc}")
        if os.environ.get("DELTAP_TRACEBACK"):
            raise
        _fail(
            f"internal error ({type(exc).__name__}: {exc}); this is a bug in deltap: rerun with DELTAP_TRACEBACK=1 "
            "for the traceback and report it",
            1,
        )


def _stopped(message: str) -> NoReturn:
    """The stop line on stderr (after the terminal's ``^C`` echo) and exit code 130."""
    from deltap.cli.stopping import EXIT_STOPPED

    lead = "\n" if sys.stderr.isatty() else ""
    typer.secho(lead + message, fg="yellow", err=True)
    sys.exit(EXIT_STOPPED)
