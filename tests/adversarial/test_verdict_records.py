"""The verdict channel's parser and the bwrap command line, without running anything (fast unit tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deltap.checkers import sandbox
from deltap.checkers.pytest_checker import PytestChecker, RunRecords, _static_test_names
from deltap.checkers.sandbox import SandboxLimits

NONCE = "n0nce"


def _line(kind: str, nonce: str = NONCE, **data: object) -> bytes:
    return (json.dumps({"nonce": nonce, "kind": kind, **data}) + "\n").encode()


def _phases(test_id: str, call: str = "passed", **extra: object) -> bytes:
    return b"".join(
        _line("report", id=test_id, when=w, outcome=call if w == "call" else "passed", **extra)
        for w in ("setup", "call", "teardown")
    )


def test_a_complete_run_parses() -> None:
    data = _line("start", pid=2) + _line("collected", ids=["t.py::a", "t.py::b"]) + _phases("t.py::a")
    data += _phases("t.py::b", call="failed") + _line("finish", exitstatus=1)
    rec = RunRecords.parse(data, NONCE)
    assert (rec.started, rec.finished, rec.exitstatus, rec.tampering) == (True, True, 1, [])
    assert rec.outcome("t.py::a") == "passed"
    assert rec.outcome("t.py::b") == "failed"
    assert rec.outcome("t.py::missing") == "not run"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(_line("start") + b"3 passed in 0.01s\n", "not deltap's", id="plain-text-summary"),
        pytest.param(_line("start") + _line("finish", nonce="guess", exitstatus=0), "wrong nonce", id="wrong-nonce"),
        pytest.param(_line("start") + _phases("t.py::a") + _phases("t.py::a"), "twice", id="duplicate-phase"),
        pytest.param(
            _line("start") + _line("finish", exitstatus=0) + _phases("t.py::a"),
            "after pytest finished",
            id="record-after-finish",
        ),
        pytest.param(_line("start") + _line("start"), "started twice", id="second-start"),
        pytest.param(_line("start") + _line("verdict", result="pass"), "unknown record kind", id="unknown-kind"),
    ],
)
def test_forged_channel_content_is_tampering(data: bytes, reason: str) -> None:
    rec = RunRecords.parse(data, NONCE)
    assert rec.tampering and reason in rec.tampering[0]


def test_overflow_is_tampering() -> None:
    assert RunRecords.parse(_line("start"), NONCE, overflow=True).tampering


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        pytest.param({"setup": "passed", "call": "passed", "teardown": "passed"}, "passed", id="passed"),
        pytest.param({"setup": "passed", "call": "passed"}, "not run", id="no-teardown"),
        pytest.param({"setup": "passed"}, "not run", id="setup-only"),
        pytest.param({"setup": "skipped", "teardown": "passed"}, "skipped", id="skipped-in-setup"),
        pytest.param({"setup": "passed", "call": "skipped", "teardown": "passed"}, "skipped", id="skipped-in-call"),
        pytest.param({"setup": "passed", "call": "xfail", "teardown": "passed"}, "xfail", id="xfail"),
        pytest.param({"setup": "failed", "teardown": "passed"}, "failed", id="setup-error"),
        pytest.param({"setup": "passed", "call": "passed", "teardown": "failed"}, "failed", id="teardown-error"),
    ],
)
def test_only_three_passed_phases_are_a_pass(phases: dict[str, str], expected: str) -> None:
    rec = RunRecords(phases={"t.py::x": phases})
    assert rec.outcome("t.py::x") == expected


def test_static_test_names() -> None:
    src = b"def test_a():\n    pass\n\nclass TestB:\n    def test_c(self):\n        pass\n\ndef helper():\n    pass\n"
    assert _static_test_names(src) == {"test_a", "TestB::test_c"}
    assert _static_test_names(b"def broken(:\n") == set()


def test_canaries_always_include_a_pass_and_a_fail() -> None:
    for _ in range(50):
        source, expected = PytestChecker._canaries()
        assert {"passed", "failed"} <= set(expected.values())
        assert 4 <= len(expected) <= 6
        # a pass and a fail through pytest.raises, and through the builtins a test module sees (issue 24)
        assert source.count(".raises(ValueError)") >= 2 and "sorted([" in source and "abs(-" in source
        namespace: dict[str, object] = {}
        exec(compile(source, "canary", "exec"), namespace)  # the expectations are what the code does
        for name, want in expected.items():
            fn = namespace[name]
            assert callable(fn)
            try:
                fn()
                got = "passed"
            except (AssertionError, pytest.fail.Exception):
                got = "failed"
            assert got == want, (name, source)


def _canary_outcomes(source: str, namespace: dict[str, object]) -> dict[str, str]:
    exec(compile(source, "canary", "exec"), namespace)
    got = {}
    for name, fn in list(namespace.items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                got[name] = "passed"
            except (AssertionError, pytest.fail.Exception):
                got[name] = "failed"
            except Exception:  # noqa: BLE001 - a patched helper that raises: not the expected outcome either
                got[name] = "error"
    return got


@pytest.mark.parametrize(
    "shadow",
    [
        pytest.param({"sorted": lambda xs: list(xs)}, id="sorted-keeps-order"),
        pytest.param({"abs": lambda x: x}, id="abs-identity"),
        pytest.param({"max": min}, id="max-is-min"),
    ],
)
def test_a_shadowed_builtin_flips_a_canary(shadow: dict[str, object]) -> None:
    """What a star import of a candidate's ``sorted``/``abs`` would do to the test module: some canary comes out
    other than expected (issue 24)."""
    for _ in range(20):
        source, expected = PytestChecker._canaries()
        assert _canary_outcomes(source, dict(shadow)) != expected


@pytest.mark.parametrize("replacement", ["swallow-everything", "let-everything-through"])
def test_a_replaced_pytest_raises_flips_a_canary(replacement: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import contextlib

    fake = (
        (lambda *a, **k: contextlib.suppress(BaseException))
        if replacement == "swallow-everything"
        else (lambda *a, **k: contextlib.nullcontext())
    )
    source, expected = PytestChecker._canaries()
    monkeypatch.setattr(pytest, "raises", fake)
    assert _canary_outcomes(source, {}) != expected


def test_bwrap_layout(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "solution.py").write_text("x = 1\n")
    ro = tmp_path / "tests"
    ro.mkdir()
    limits = SandboxLimits(disk_bytes=64 * 1024**2)
    argv = sandbox._bwrap_prefix("bwrap", limits, work, (ro,))
    joined = " ".join(argv)
    # An allow-list, not the whole host read-only: system dirs and the interpreter's, nothing else (session 6).
    assert argv[0] == "bwrap" and "--ro-bind / /" not in joined
    if os.path.isdir("/usr") and not os.path.islink("/usr"):
        assert "--ro-bind /usr /usr" in joined
    assert f"--ro-bind {work / 'solution.py'} {work / 'solution.py'}" in joined
    assert f"--ro-bind {ro} {ro}" in joined
    assert "--unshare-net" in argv and "--unshare-pid" in argv and "--die-with-parent" in argv
    sizes = [int(argv[i + 1]) for i, a in enumerate(argv) if a == "--size"]
    assert sum(sizes) == limits.disk_bytes
    for private in ("/tmp", "/dev/shm", "/var/tmp"):
        assert f"--tmpfs {private}" in joined
    assert "--cap-drop ALL" in joined
    if sandbox._is_root():
        assert argv[-len(sandbox._drop_to_nobody()) :] == sandbox._drop_to_nobody()
        assert "--bounding-set=-all" in argv
    net = sandbox._bwrap_prefix("bwrap", SandboxLimits(network=True), work, ())
    assert "--unshare-net" not in net


def test_protections_when_nothing_is_permitted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sandbox,
        "isolation_available",
        lambda: dict.fromkeys(
            (
                "bwrap",
                "netns",
                "userns",
                "root_ns",
                "uid_nobody",
                "legacy_nobody",
                "legacy_nobody_dac",
                "pids_cgroup",
                "memory_cgroup",
            ),
            False,
        ),
    )
    table = sandbox.protections()
    off = {n for n, p in table.items() if not p.enforced}
    assert {"network", "private-tmp", "memory-whole-sandbox", "disk-whole-sandbox", "hidden-homes"} <= off
    assert "NOT" in table["network"].how
    text = sandbox.describe()
    assert "OFF  network" in text and "on   wall-timeout" in text
    assert "no writable cpu cgroup" in table["cpu-whole-sandbox"].how and not table["cpu-whole-sandbox"].enforced


def test_cpu_bound_is_stated_and_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "isolation_available", lambda: {"cpu_cgroup": True})
    assert sandbox.protections(SandboxLimits(cpus=1.5))["cpu-whole-sandbox"].how.startswith("cpu cgroup: 1.5 core(s)")
    unbounded = sandbox.protections(SandboxLimits(cpus=None))["cpu-whole-sandbox"]
    assert not unbounded.enforced and "cpus is None" in unbounded.how
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="cpus must be positive"):
            SandboxLimits(cpus=bad)


@pytest.mark.parametrize(
    ("rc", "expected"),
    [
        pytest.param(152, "killed by signal 24 (SIGXCPU: the CPU-time limit)", id="bwrap-reports-128-plus-n"),
        pytest.param(-9, "killed by signal 9 (SIGKILL: a hard limit or an OOM kill)", id="negative-signal"),
        pytest.param(139, "killed by signal 11 (SIGSEGV: a crash)", id="segfault"),
        pytest.param(1, "exit status 1", id="plain-exit"),
        pytest.param(None, "exit status None", id="never-started"),
    ],
)
def test_exit_description(rc: int | None, expected: str) -> None:
    from deltap.checkers.pytest_checker import _exit_description

    assert _exit_description(rc) == expected


def test_candidate_failure_records_are_kept_and_checked() -> None:
    """The separate-process stand-in reports each accident of the candidate's process (issue 24); a malformed one is
    tampering, like any record with fields the plugin does not write."""
    data = (
        _line("start")
        + _line("candidate_failure", id="t.py::test_a", reason="it ended")
        + _line("finish", exitstatus=0)
    )
    rec = RunRecords.parse(data, NONCE)
    assert rec.candidate_failures == [("t.py::test_a", "it ended")] and not rec.tampering
    bad = RunRecords.parse(_line("start") + _line("candidate_failure", id="t.py::test_a", reason=3), NONCE)
    assert bad.tampering and not bad.candidate_failures
