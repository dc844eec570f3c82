"""``deltap corpus ...``: build a BEIR ``corpus.jsonl`` from API symbols, Python packages or Markdown folders."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``corpus`` group to ``app``."""
