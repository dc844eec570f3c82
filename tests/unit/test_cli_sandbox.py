"""``deltap sandbox`` prints the checker sandbox's protections and gates on them with ``--strict``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from deltap.checkers import sandbox as sb
from deltap.cli.app import app


def _table(off: set[str]) -> dict[str, sb.Protection]:
    names = ["network", "capabilities", "private-tmp"]
    return {n: sb.Protection(n not in off, f"how {n}") for n in names}


@pytest.mark.parametrize("off", [set(), {"private-tmp"}, {"network", "capabilities"}])
def test_json_lists_every_protection_and_strict_fails_exactly_when_one_is_off(monkeypatch, off):
    monkeypatch.setattr(sb, "protections", lambda limits=None: _table(off))
    runner = CliRunner()
    res = runner.invoke(app, ["sandbox", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {k for k, v in data.items() if not v["enforced"]} == off
    assert set(data) == {"network", "capabilities", "private-tmp"}
    strict = runner.invoke(app, ["sandbox", "--json", "--strict"])
    assert strict.exit_code == (1 if off else 0)


def test_table_names_the_protections_that_are_off(monkeypatch):
    monkeypatch.setattr(sb, "protections", lambda limits=None: _table({"private-tmp"}))
    res = CliRunner().invoke(app, ["sandbox"])
    assert res.exit_code == 0
    assert "1 protection(s) OFF: private-tmp" in res.stderr


def test_real_machine_table_has_one_line_per_protection():
    res = CliRunner().invoke(app, ["sandbox"])
    assert res.exit_code == 0
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("  ")]
    assert len(lines) == len(sb.protections())
    assert all(ln.split()[0] in {"on", "OFF"} for ln in lines)
