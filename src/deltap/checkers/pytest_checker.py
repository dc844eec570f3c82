"""Pytest checker: the candidate source runs as the module under test, against the case's tests, in a sandbox."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.checkers.base import CheckResult
from deltap.checkers.extract import extract_code
from deltap.checkers.sandbox import SandboxLimits, SandboxResult, run_sandboxed
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["PytestChecker"]

_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


def _summary(output: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n, word in _SUMMARY.findall(output):
        key = "errors" if word.startswith("error") else word
        counts[key] = int(n)
    return counts


class PytestChecker:
    """Writes the candidate code as ``<module_name>.py`` into a fresh temp dir beside a copy of the test file and
    runs pytest there in a sandbox (:func:`~deltap.checkers.sandbox.run_sandboxed`: rlimits, wall timeout, clean
    environment, no network, unprivileged user, pids cgroup where the OS allows).

    Classification. Before the first check the checker runs the case's reference ``fixed_file`` through the same
    sandbox (the *preflight*); if the reference does not pass, the environment cannot judge the case and every check
    is ``error``. With a passing preflight, anything the candidate causes is a wrong answer, ``fail``: failing tests
    (pytest exit 1), a module that does not import or parse (exit 2), no tests run (exit 5), a timeout, a resource
    kill (``SIGXCPU``, ``SIGKILL``, ``MemoryError``). Pytest's own internal/usage errors (exit 3, 4) and a sandbox
    that cannot start are ``error``.

    Args:
        test_file: The case's test file (copied, keeping its name).
        module_name: Module the tests import (the candidate is written as ``<module_name>.py``).
        fixed_file: The reference solution for the preflight (``None``: no preflight).
        limits: Sandbox limits.
        support_files: Other files copied beside the test (``conftest.py``, fixtures...).
        pytest_args: Extra pytest arguments.
    """

    def __init__(
        self,
        test_file: str | Path,
        module_name: str,
        fixed_file: str | Path | None = None,
        limits: SandboxLimits | None = None,
        support_files: Sequence[str | Path] = (),
        pytest_args: Sequence[str] = (),
    ) -> None:
        self.test_file = Path(test_file)
        if not self.test_file.is_file():
            raise DeltapError(f"pytest checker: test_file not found: {self.test_file}")
        if not module_name or not module_name.replace("_", "a").isalnum():
            raise DeltapError(f"pytest checker: module_name must be a plain module name, got {module_name!r}")
        self.module_name = module_name
        self.fixed_file = Path(fixed_file) if fixed_file else None
        if self.fixed_file is not None and not self.fixed_file.is_file():
            raise DeltapError(f"pytest checker: fixed_file not found: {self.fixed_file}")
        self.limits = limits or SandboxLimits()
        self.support_files = [Path(p) for p in support_files]
        self.pytest_args = list(pytest_args)
        self._test_source = self.test_file.read_bytes()
        self._preflight: CheckResult | None = None
        self._lock = threading.Lock()
        self.id = (
            f"pytest({self.test_file.name},module={module_name},wall={self.limits.wall_seconds}s,"
            f"cpu={self.limits.cpu_seconds}s,mem={self.limits.memory_bytes // 1024**2}MiB)"
        )

    def run(self, code: str) -> tuple[CheckResult, SandboxResult]:
        """Run the tests against ``code`` (no preflight); returns the classified result and the raw run."""
        workdir = Path(tempfile.mkdtemp(prefix="deltap-pytest-"))
        try:
            (workdir / f"{self.module_name}.py").write_text(code, encoding="utf-8")
            (workdir / self.test_file.name).write_bytes(self._test_source)
            for extra in self.support_files:
                shutil.copy2(extra, workdir / extra.name)
            (workdir / "pytest.ini").write_text("[pytest]\naddopts =\n", encoding="utf-8")
            argv = [
                sys.executable, "-m", "pytest", "-q", "-x", "--no-header", "-p", "no:cacheprovider",
                "--rootdir", str(workdir), *self.pytest_args, self.test_file.name,
            ]
            result = run_sandboxed(argv, workdir, self.limits)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return self._classify(result), result

    def _classify(self, r: SandboxResult) -> CheckResult:
        counts = _summary(r.output.splitlines()[-1] if r.output.strip() else "")
        info: dict[str, Any] = {
            "returncode": r.returncode,
            "duration": round(r.duration, 3),
            "isolation": list(r.isolation),
            "counts": counts,
            "output": r.output[-4000:],
        }
        if r.error:
            return CheckResult("error", None, r.error, info)
        if r.timed_out:
            return CheckResult("fail", None, f"timed out after {self.limits.wall_seconds}s (killed)", info)
        rc = r.returncode
        if rc == 0:
            if counts.get("passed", 0) == 0:
                return CheckResult("fail", None, "no test passed (all skipped?)", info)
            return CheckResult("pass", None, f"{counts.get('passed', 0)} passed", info)
        if rc is not None and rc < 0:
            return CheckResult("fail", None, f"killed by signal {-rc} (resource limit)", info)
        if rc == 1 and not counts:
            # pytest always prints a summary when it finishes; without one it was killed. (util-linux unshare
            # reports a child killed by a signal as exit 1 with "sigprocmask unblock failed" in some containers.)
            return CheckResult("fail", None, "killed by a signal before pytest finished (resource limit)", info)
        if rc in (1, 2, 5):
            what = {1: "tests failed", 2: "collection failed (the module does not import)", 5: "no tests ran"}[rc]
            if "MemoryError" in r.output:
                what += "; MemoryError (memory limit)"
            return CheckResult("fail", None, what, info)
        if rc in (3, 4):
            return CheckResult("error", None, f"pytest internal/usage error (exit {rc})", info)
        # Exit codes > 128 come from the namespace wrapper reporting a signal (128 + n).
        if rc is not None and rc > 128:
            return CheckResult("fail", None, f"killed by signal {rc - 128} (resource limit)", info)
        return CheckResult("error", None, f"unexpected pytest exit status {rc}", info)

    def preflight(self) -> CheckResult | None:
        """Run the reference solution once (cached). ``None`` when there is no reference."""
        if self.fixed_file is None:
            return None
        with self._lock:
            if self._preflight is None:
                result, _ = self.run(self.fixed_file.read_text(encoding="utf-8"))
                self._preflight = result
        return self._preflight

    def check(self, case: Case, answer: str) -> CheckResult:
        pre = self.preflight()
        if pre is not None and not pre.passed:
            return CheckResult(
                "error", None, f"the reference fixed_file does not pass in this environment: {pre.detail}", pre.info
            )
        code = extract_code(answer or "")
        if code is None:
            return CheckResult("fail", None, "empty answer")
        result, _ = self.run(code)
        return CheckResult(result.outcome, None, result.detail, result.info)
