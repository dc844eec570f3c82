"""CLI verbs of this area (registered on the main app by :func:`register`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (none yet)."""
