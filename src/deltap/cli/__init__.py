"""The ``deltap`` command line: one Typer app, one module per group of verbs.

Command bodies import their heavy dependencies lazily so that ``deltap --help`` answers in well under a second.
"""

from __future__ import annotations

from deltap.cli.app import app, main

__all__ = ["app", "main"]
