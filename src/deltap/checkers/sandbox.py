"""Run untrusted generated code in a contained subprocess.

Layers, each applied where the OS allows it (the layers actually used are reported in
:attr:`SandboxResult.isolation`):

* **rlimits** (always): CPU seconds (``RLIMIT_CPU``: a busy loop is killed by ``SIGXCPU``/``SIGKILL``), address
  space (``RLIMIT_AS``: unbounded allocation raises ``MemoryError``), file size (``RLIMIT_FSIZE``), open files, no
  core dumps, and a process count (``RLIMIT_NPROC``).
* **wall-clock timeout** (always): the whole process group (and PID namespace) is killed with ``SIGKILL``.
* **clean environment** (always): only ``PATH``, ``HOME``/``TMPDIR`` (the sandbox dir), ``LANG`` and a few Python
  switches; nothing from the parent (no API keys, no tokens).
* **working directory** confined to a fresh temporary directory, removed afterwards.
* **namespaces** (``unshare``, when permitted): a new network namespace (no network at all, not even loopback to the
  host's services) and a new PID namespace (the code sees and can signal only its own processes, and all of them die
  with it).
* **unprivileged user** (when running as root): the code runs as ``nobody`` (uid 65534) so it cannot write anything
  outside its sandbox directory except world-writable places (``/tmp``, ``/dev/shm``), and ``RLIMIT_NPROC`` is
  enforced (the kernel ignores it for root). If the interpreter lives under a directory ``nobody`` cannot traverse
  (e.g. ``/root/.pyenv``), the process keeps only ``CAP_DAC_READ_SEARCH`` (read, never write) so it can start.
* **pids cgroup** (when ``/sys/fs/cgroup`` is writable): a per-run cgroup with ``pids.max`` bounds a fork bomb
  precisely, independently of other processes of the same user.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["SandboxLimits", "SandboxResult", "isolation_available", "run_sandboxed"]

NOBODY = 65534
_counter = itertools.count()


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run.

    Args:
        wall_seconds: Wall-clock timeout; the whole process tree is killed after it.
        cpu_seconds: CPU seconds per process (``RLIMIT_CPU``).
        memory_bytes: Address-space limit per process (``RLIMIT_AS``).
        max_processes: Process/thread bound (pids cgroup ``pids.max`` when available, else ``RLIMIT_NPROC``).
        file_bytes: Largest file the code may write (``RLIMIT_FSIZE``), also bounding captured output.
        output_chars: Characters of stdout/stderr kept (the tail).
        network: Allow network access (default: no network where the OS allows).
    """

    wall_seconds: float = 30.0
    cpu_seconds: int = 20
    memory_bytes: int = 2 * 1024**3
    max_processes: int = 64
    file_bytes: int = 64 * 1024**2
    output_chars: int = 20_000
    network: bool = False


@dataclass(frozen=True)
class SandboxResult:
    """What a sandboxed run did.

    Args:
        returncode: Exit status (negative: killed by that signal), ``None`` when it never started.
        output: Tail of the merged stdout/stderr.
        timed_out: Killed by the wall-clock timeout.
        duration: Wall seconds.
        isolation: The layers applied (``rlimits``, ``clean-env``, ``netns``, ``pidns``, ``uid-nobody``, ``pids-cgroup``).
        error: Launch failure message (an infrastructure problem), else ``""``.
    """

    returncode: int | None
    output: str
    timed_out: bool
    duration: float
    isolation: tuple[str, ...] = ()
    error: str = ""
    info: dict[str, object] = field(default_factory=dict)


def _probe(argv: Sequence[str]) -> bool:
    try:
        return (
            subprocess.run(list(argv), capture_output=True, timeout=10, check=False, cwd=tempfile.gettempdir()).returncode
            == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


@lru_cache(maxsize=1)
def isolation_available() -> dict[str, bool]:
    """Which isolation layers this machine permits (probed once per process)."""
    unshare = shutil.which("unshare")
    setpriv = shutil.which("setpriv")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    ns = bool(unshare) and _probe([unshare or "", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "true"])
    userns = (
        not ns
        and bool(unshare)
        and _probe([unshare or "", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "true"])
    )
    drop = (
        is_root
        and bool(setpriv)
        and _probe(
            [setpriv or "", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all,+dac_read_search",
             "--ambient-caps=+dac_read_search", sys.executable, "-c", "pass"]
        )
    )
    return {"netns": ns or userns, "userns": userns, "root_ns": ns, "uid_nobody": drop, "pids_cgroup": _cgroup_root() is not None}


def _cgroup_root() -> Path | None:
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists() and os.access(v1, os.W_OK):
        return v1
    v2 = Path("/sys/fs/cgroup")
    control = v2 / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        if control.exists() and "pids" in control.read_text().split() and os.access(v2, os.W_OK):
            return v2
    return None


def _make_cgroup(max_processes: int) -> Path | None:
    root = _cgroup_root()
    if root is None:
        return None
    path = root / f"deltap-sandbox-{os.getpid()}-{next(_counter)}"
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(max_processes))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    return path


def _kill_cgroup(path: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        path.rmdir()


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
) -> SandboxResult:
    """Run ``argv`` inside ``workdir`` with every available isolation layer (see the module docstring).

    ``workdir`` must be a fresh directory the caller owns; it is handed to the unprivileged user when one is used.
    The caller removes it afterwards.

    Args:
        argv: Command (``argv[0]`` is typically ``sys.executable``).
        workdir: The only directory the code may write to (its cwd, ``HOME`` and ``TMPDIR``).
        limits: Resource limits.
        env: Extra environment variables (added to the clean environment; never the parent's).
    """
    limits = limits or SandboxLimits()
    avail = isolation_available()
    workdir = Path(workdir)
    layers = ["rlimits", "clean-env", "cwd-confined"]
    prefix: list[str] = []
    if not limits.network and avail["netns"]:
        if avail["root_ns"]:
            prefix = ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
        else:
            prefix = ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
        layers += ["netns", "pidns"]
    if avail["uid_nobody"]:
        prefix += [
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=-all,+dac_read_search", "--ambient-caps=+dac_read_search", "--no-new-privs",
        ]
        layers.append("uid-nobody")
        for root, dirs, files in os.walk(workdir):
            for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
                os.chown(name, NOBODY, NOBODY)
    cgroup = _make_cgroup(limits.max_processes)
    if cgroup is not None:
        layers.append("pids-cgroup")
    if avail["uid_nobody"]:
        nproc = limits.max_processes
    else:
        # Unprivileged fallback: RLIMIT_NPROC counts all processes of this user; allow the current ones plus the budget.
        nproc = _user_process_count() + limits.max_processes

    def preexec() -> None:  # runs in the child between fork and exec
        import resource

        if cgroup is not None:
            with open(cgroup / "cgroup.procs", "w") as fh:
                fh.write("0")
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
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
                )
            except (OSError, subprocess.SubprocessError) as exc:
                error = f"could not start the sandbox: {type(exc).__name__}: {exc}"
            else:
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
        if cgroup is not None:
            _kill_cgroup(cgroup)
        shutil.rmtree(out_dir, ignore_errors=True)
    return SandboxResult(returncode, output, timed_out, duration, tuple(layers), error)


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(list((entry / "task").iterdir()))
    return count
