"""Help output that reads well at 80 columns: plain click layout (wrapped, no boxes, no type markers on flags)
and command lists that show each command's whole first paragraph."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

__all__ = ["HelpGroup"]


class HelpGroup(TyperGroup):
    """A command group whose help lists each command's whole first paragraph, wrapped at the terminal width (click
    cuts it at ~45 characters with "...")."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # typer's (vendored) click Context / HelpFormatter
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            text = cmd.short_help or (cmd.help or "").strip().split("\n\n")[0]
            rows.append((name, " ".join(text.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
