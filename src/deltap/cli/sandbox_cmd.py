"""``deltap sandbox``: which protections the pytest checker's sandbox has on this machine."""

from __future__ import annotations

import json

import typer


def register(app: typer.Typer) -> None:
    """Add ``sandbox`` to ``app``."""

    @app.command("sandbox")
    def sandbox(
        as_json: bool = typer.Option(False, "--json", help="Print the protections as JSON instead of a table."),
        strict: bool = typer.Option(
            False, "--strict", help="Exit 1 when any protection is OFF (for CI gates before running untrusted code)."
        ),
    ) -> None:
        """Say which protections the pytest checker's sandbox has here (bubblewrap, namespaces, capabilities,
        private /tmp, cgroup limits), and how each is enforced or why it is not. Run it as the user that will run
        `deltap mine` on code-fixing cases: what holds as root differs from what holds for a normal user."""
        from deltap.checkers.sandbox import describe, protections

        table = protections()
        if as_json:
            typer.echo(json.dumps({k: {"enforced": p.enforced, "how": p.how} for k, p in table.items()}, indent=2))
        else:
            typer.echo(describe())
        off = [k for k, p in table.items() if not p.enforced]
        if off and not as_json:
            typer.secho(
                f"{len(off)} protection(s) OFF: {', '.join(off)} (see the README's 'Checker threat model')",
                fg="yellow",
                err=True,
            )
        if off and strict:
            raise typer.Exit(1)
