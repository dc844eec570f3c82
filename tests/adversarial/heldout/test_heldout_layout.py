"""The bubblewrap command line after the held-out attacks (fast: nothing runs in a sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltap.checkers import sandbox
from deltap.checkers.sandbox import SandboxLimits


def _bound(argv: list[str]) -> set[str]:
    return {argv[i + 2] for i, a in enumerate(argv) if a == "--ro-bind"}


def test_only_an_allow_list_of_the_host_is_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"  # stands for the caller's checkout that pytest puts on sys.path
    project.mkdir()
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.chdir(project)
    work = tmp_path / "work"
    work.mkdir()
    argv = sandbox._bwrap_prefix("bwrap", SandboxLimits(), work, ())
    bound = _bound(argv)
    assert "/" not in bound
    assert not any(b == str(project) or b.startswith(str(project) + "/") for b in bound), bound
    allowed = {"/" + d for d in sandbox._SYSTEM_DIRS} | set(sandbox._needed_paths())
    assert all(any(b == a or b.startswith(a + "/") for a in allowed) for b in bound if not b.startswith("/tmp")), bound


def test_the_seccomp_filter_is_passed_and_well_formed(tmp_path: Path) -> None:
    argv = sandbox._bwrap_prefix("bwrap", SandboxLimits(), tmp_path, (), seccomp_fd=9)
    assert argv[argv.index("--seccomp") + 1] == "9" and argv.index("--seccomp") < argv.index("--")
    program = sandbox._seccomp_program()
    if program is None:
        pytest.skip("no keyring syscall numbers for this architecture")
    assert len(program) % 8 == 0 and len(program) // 8 == 7 + 3  # 5 header ops, 3 syscall tests, allow, refuse
