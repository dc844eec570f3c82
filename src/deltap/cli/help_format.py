"""Help output that reads well at 80 columns: plain click layout (wrapped, no boxes, no type markers on flags)
and command lists that show each command's whole first paragraph; renamed flags whose old name still works but is
no longer shown (:data:`HIDDEN_ALIASES`)."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

__all__ = ["HIDDEN_ALIASES", "HelpGroup"]

#: old flag -> the name it was renamed to: still parsed (declared beside the new name), never shown in ``--help``.
#: The retrieval cutoff is ``--top-k`` everywhere (the name the search and check commands already used).
HIDDEN_ALIASES: dict[str, str] = {"--k": "--top-k", "--depth": "--top-k"}


def _hide_aliases(command: Any) -> Any:
    """``command`` with :data:`HIDDEN_ALIASES` left out of its options' help records (they still parse)."""
    for param in getattr(command, "params", ()):
        hidden = [o for o in getattr(param, "opts", ()) if o in HIDDEN_ALIASES]
        if not hidden or getattr(param, "_deltap_aliases_hidden", False):
            continue
        shown = [o for o in param.opts if o not in hidden]
        original = param.get_help_record

        def record(ctx: Any, param: Any = param, shown: list[str] = shown, original: Any = original) -> Any:
            opts = param.opts
            param.opts = shown
            try:
                return original(ctx)
            finally:
                param.opts = opts

        param.get_help_record = record
        param._deltap_aliases_hidden = True
    return command


class HelpGroup(TyperGroup):
    """A command group whose help lists each command's whole first paragraph, wrapped at the terminal width (click
    cuts it at ~45 characters with "...")."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return _hide_aliases(super().get_command(ctx, cmd_name))

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
