"""Pytest checker: the candidate source runs as the module under test, against the case's tests, in a sandbox.

Threat model. The candidate is hostile code that wants a wrong answer scored ``pass`` — or, as good for it, an
infrastructure ``error`` (errors are left out of the estimate). It runs *inside* the pytest process (the tests
import it), so it can patch pytest, its reports, the test functions, builtins; write anything to any file
descriptor it holds; exit, crash, re-execute pytest, fork, sleep. The defences, and what each one defeats:

1. **The verdict never comes from stdout or the exit code.** deltap's plugin (``-p deltap_verdict``, loaded from a
   read-only directory before any test module, see ``_verdict_plugin.py``) writes one JSON record per test phase
   to a private pipe, tagged with a per-run nonce it reads from a second pipe and that both descriptors are
   close-on-exec. Fake summaries (inherited fds, ``atexit``, re-running pytest into the output, ``os._exit(0)``)
   change nothing: no ``finish`` record means ``fail``; a record that is not valid JSON with the nonce, a
   duplicate phase, or anything after ``finish`` is tampering, ``fail``.
2. **Hidden canary tests** (the tampering detector; design (b) of issue 15). Each run appends to the test file a
   few tests with random names, at least one that must pass and one that must fail; only the parent knows which.
   They are compiled, rewritten, collected and reported exactly like the real tests, so tampering with pytest's
   reporting, with ``Function.runtest``, with assertion handling or with the collected module shows up as a
   canary with the wrong outcome: ``fail`` ("tampering detected").
3. **Every test the reference passes must be run and passed.** The preflight runs the case's ``fixed_file``
   through the same sandbox once (cached) and records the ids of the tests it passes; a check passes only when
   each of those ids has setup, call and teardown ``passed`` exactly once. Skipped, xfailed, deselected, missing
   or uncollected is ``fail``. Without a reference, every ``test*`` function named in the test file must pass.
4. **Tests, conftest and configuration are out of the candidate's reach.** They live in a read-only directory
   (bwrap read-only bind; else owned by root while the code runs as ``nobody``); pytest gets explicit test paths,
   ``-c`` deltap's own ini, ``--rootdir`` and ``--confcutdir`` at that directory, ``-p no:cacheprovider``, plugin
   autoload off and a clean environment, so a ``conftest.py``, ``pytest.ini`` or ``sitecustomize`` the candidate
   writes is never loaded.
5. **What the code does to itself is a ``fail``**: ``sys.exit`` or ``pytest.exit`` at import, a crash, a kill, a
   fork bomb, memory or time exhaustion. ``error`` is kept for the environment: the sandbox or pytest did not
   start (no ``start`` record — the candidate cannot run before it), or the reference does not pass.

Residual risk (stated, not hidden): the candidate shares the pytest process, so code written *against deltap
specifically* — reading the test file, telling the canaries from the real tests by name, and forging outcomes of
only the real ones — is not detected. Generic tampering is. The sandbox (:mod:`deltap.checkers.sandbox`) bounds
what such code can do to the machine.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.checkers.base import CheckResult
from deltap.checkers.extract import extract_code
from deltap.checkers.sandbox import SandboxLimits, SandboxResult, run_sandboxed
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["PytestChecker", "RunRecords"]

_PLUGIN_SOURCE = Path(__file__).with_name("_verdict_plugin.py")
_MAX_CHANNEL_BYTES = 16 * 1024**2
_WORDS = (
    "basic", "edge", "empty", "large", "mixed", "order", "repeat", "round", "simple", "small", "types", "values",
    "zero", "negative", "unicode", "nested", "bounds", "identity", "inverse", "default",
)
_INI = "[pytest]\naddopts =\nconsole_output_style = classic\n"


@dataclass
class RunRecords:
    """What deltap's plugin reported over the private channel for one run.

    Args:
        started: The plugin loaded (pytest started inside the sandbox).
        finished: pytest reached ``sessionfinish``.
        exitstatus: pytest's own exit status from the ``finish`` record.
        phases: ``{test_id: {when: outcome}}``; ``xfail`` phases are stored as ``"xfail"``.
        collected: Test ids collected (after any deselection).
        collect_errors: Node ids whose collection failed.
        tampering: Reasons the channel itself looks forged.
    """

    started: bool = False
    finished: bool = False
    exitstatus: int | None = None
    phases: dict[str, dict[str, str]] = field(default_factory=dict)
    collected: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, data: bytes, nonce: str, overflow: bool = False) -> RunRecords:
        """Parse the channel's bytes; never raises: whatever is not one of the plugin's records is ``tampering``.

        The candidate can write to the pipe (it shares the process), so every line is hostile input: a line must
        start with the plugin's exact prefix (its nonce) before it is parsed at all, so that no JSON the candidate
        chose (e.g. a nesting depth that makes ``json.loads`` recurse out of the stack) reaches the parser without
        the nonce, and every field must have the type and the values the plugin writes.
        """
        rec = cls()
        if overflow:
            rec.tampering.append(f"more than {_MAX_CHANNEL_BYTES} bytes on the result channel")
        prefix = b'{"nonce": "' + nonce.encode("ascii") + b'", '
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            if not raw.startswith(prefix):
                rec.tampering.append(
                    "a record on the result channel has the wrong nonce"
                    if raw.startswith(b'{"nonce": ') else "a line on the result channel is not deltap's"
                )
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                rec.tampering.append("a line on the result channel is not deltap's")
                continue
            if not isinstance(obj, dict) or obj.get("nonce") != nonce:
                rec.tampering.append("a record on the result channel has the wrong nonce")
                continue
            kind = obj.get("kind")
            if rec.finished:
                rec.tampering.append(f"a {kind!r} record after pytest finished")
                continue
            bad = _malformed(obj)
            if bad:
                rec.tampering.append(f"a malformed {kind!r} record on the result channel ({bad})")
                continue
            if kind == "start":
                if rec.started:
                    rec.tampering.append("pytest started twice")
                rec.started = True
            elif kind == "collected":
                rec.collected = list(obj["ids"])
            elif kind == "collect_error":
                rec.collect_errors.append(obj["id"])
            elif kind == "report":
                test_id, when = obj["id"], obj["when"]
                phases = rec.phases.setdefault(test_id, {})
                if when in phases:
                    rec.tampering.append(f"{test_id} reported its {when} twice")
                phases[when] = "xfail" if obj.get("xfail") else obj["outcome"]
            elif kind == "finish":
                rec.finished = True
                rec.exitstatus = obj["exitstatus"]
            else:
                rec.tampering.append(f"unknown record kind {kind!r}")
        return rec

    def outcome(self, test_id: str) -> str:
        """``passed`` (setup, call and teardown passed), ``failed``, ``skipped``, ``xfail`` or ``not run``."""
        phases = self.phases.get(test_id)
        if not phases or "call" not in phases and phases.get("setup") == "passed":
            return "not run"
        values = set(phases.values())
        if "xfail" in values:
            return "xfail"
        if "failed" in values:
            return "failed"
        if "skipped" in values:
            return "skipped"
        if phases.get("setup") == phases.get("call") == phases.get("teardown") == "passed":
            return "passed"
        return "not run"


_PHASES = ("setup", "call", "teardown")
_OUTCOMES = ("passed", "failed", "skipped")


def _malformed(obj: dict[str, Any]) -> str:
    """Why a record's fields are not what deltap's plugin writes (``""`` when they are)."""

    def is_int(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    kind = obj.get("kind")
    if kind == "start" and "pid" in obj and not is_int(obj["pid"]):
        return "pid"
    if kind == "collected":
        ids = obj.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return "ids"
    if kind in ("collect_error", "report") and not isinstance(obj.get("id"), str):
        return "id"
    if kind == "report":
        if obj.get("when") not in _PHASES:
            return "when"
        if obj.get("outcome") not in _OUTCOMES:
            return "outcome"
        if not isinstance(obj.get("xfail", False), bool):
            return "xfail"
    if kind == "finish" and not is_int(obj.get("exitstatus")):
        return "exitstatus"
    return ""


def _static_test_names(source: bytes) -> set[str]:
    """Names of the test functions a file defines (``test*`` at top level and in ``Test*`` classes)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            names.add(node.name)
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef) and sub.name.startswith("test"):
                    names.add(f"{node.name}::{sub.name}")
    return names


def _base_name(test_id: str) -> str:
    return test_id.split("::", 1)[-1].split("[", 1)[0]


class PytestChecker:
    """Runs the case's tests against the candidate module in a sandbox; the verdict comes from deltap's own
    channel (see the module docstring for the threat model and the defences).

    Layout of one run: a fresh root-owned stage directory holding ``tests/`` (the test file with the hidden
    canaries appended, the support files, deltap's ``pytest.ini``) and ``plugin/deltap_verdict.py``, both
    read-only to the code, and ``work/<module_name>.py``, the candidate (its cwd, ``HOME`` and ``TMPDIR``).

    Classification: ``pass`` only when every required test passed and the canaries came out as expected;
    ``error`` when the sandbox or pytest did not start, or the reference fails in this environment; anything
    else the candidate causes is ``fail``.

    Args:
        test_file: The case's test file.
        module_name: Module the tests import (the candidate is written as ``<module_name>.py``).
        fixed_file: The reference solution for the preflight (``None``: no preflight; the static test names are
            then required).
        limits: Sandbox limits.
        support_files: Other files copied beside the test (``conftest.py``, fixtures...), read-only to the code.
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
        for extra in self.support_files:
            if not extra.is_file():
                raise DeltapError(f"pytest checker: support file not found: {extra}")
        self.pytest_args = list(pytest_args)
        self._test_source = self.test_file.read_bytes()
        self._preflight: CheckResult | None = None
        self._required: frozenset[str] | None = None
        self._lock = threading.Lock()
        self.id = (
            f"pytest({self.test_file.name},module={module_name},wall={self.limits.wall_seconds}s,"
            f"cpu={self.limits.cpu_seconds}s,mem={self.limits.memory_bytes // 1024**2}MiB)"
        )

    # -- one sandboxed run -------------------------------------------------------------------------------------

    @staticmethod
    def _canaries() -> tuple[str, dict[str, str]]:
        """Source of 2-4 hidden tests and their expected outcomes (at least one ``passed``, one ``failed``)."""
        rng = secrets.SystemRandom()
        expected = ["passed", "failed"] + [rng.choice(("passed", "failed")) for _ in range(rng.randint(0, 2))]
        rng.shuffle(expected)
        chunks, names = [], {}
        for want in expected:
            name = f"test_{rng.choice(_WORDS)}_{secrets.token_hex(3)}"
            a, b = rng.randint(2, 10**6), rng.randint(2, 10**6)
            op = rng.choice(("+", "*", "-"))
            value = {"+": a + b, "*": a * b, "-": a - b}[op]
            if want == "failed":
                value += rng.choice((-1, 1)) * rng.randint(1, 9)
            chunks.append(f"\n\ndef {name}():\n    assert {a} {op} {b} == {value}\n")
            names[name] = want
        return "".join(chunks), names

    def run(self, code: str) -> tuple[CheckResult, SandboxResult]:
        """Run the tests against ``code`` (no preflight); returns the classified result and the raw run."""
        result, raw, _ = self._run(code, self._required)
        return result, raw

    def _run(
        self, code: str, required: frozenset[str] | None, reference: bool = False
    ) -> tuple[CheckResult, SandboxResult, dict[str, str]]:
        """One sandboxed run; returns the verdict, the raw run and the outcome of every real (non-canary) test."""
        stage = Path(tempfile.mkdtemp(prefix="deltap-pytest-"))
        tests, plugin, work = stage / "tests", stage / "plugin", stage / "work"
        canary_src, canaries = self._canaries()
        nonce = secrets.token_hex(16)
        read_fd = write_fd = nonce_r = -1
        try:
            stage.chmod(0o755)
            for d in (tests, plugin, work):
                d.mkdir(mode=0o755)
            test_path = tests / self.test_file.name
            body = self._test_source if self._test_source.endswith(b"\n") else self._test_source + b"\n"
            test_path.write_bytes(body + canary_src.encode("ascii"))
            for extra in self.support_files:
                shutil.copyfile(extra, tests / extra.name)
            (tests / "pytest.ini").write_text(_INI, encoding="utf-8")
            shutil.copyfile(_PLUGIN_SOURCE, plugin / "deltap_verdict.py")
            (work / f"{self.module_name}.py").write_text(code, encoding="utf-8")
            for path in (*tests.iterdir(), *plugin.iterdir()):
                path.chmod(0o644)

            read_fd, write_fd = os.pipe()
            nonce_r, nonce_w = os.pipe()
            os.write(nonce_w, nonce.encode("ascii"))
            os.close(nonce_w)
            chunks: list[bytes] = []
            overflow = [False]

            def drain() -> None:
                total = 0
                while True:
                    try:
                        chunk = os.read(read_fd, 65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    total += len(chunk)
                    if total <= _MAX_CHANNEL_BYTES:
                        chunks.append(chunk)
                    else:
                        overflow[0] = True

            reader = threading.Thread(target=drain, name="deltap-verdict-reader", daemon=True)
            reader.start()
            argv = [
                sys.executable, "-B", "-m", "pytest", "-p", "deltap_verdict", "-p", "no:cacheprovider",
                "-c", str(tests / "pytest.ini"), "--rootdir", str(tests), "--confcutdir", str(tests),
                "-q", "--no-header", "-o", "addopts=", *self.pytest_args, str(test_path),
            ]
            env = {
                "PYTHONPATH": os.pathsep.join([str(plugin), str(work)]),
                "DELTAP_VERDICT_FD": str(write_fd),
                "DELTAP_VERDICT_NONCE_FD": str(nonce_r),
            }
            raw = run_sandboxed(argv, work, self.limits, env=env, readonly=(tests, plugin), pass_fds=(write_fd, nonce_r))
            os.close(write_fd)
            write_fd = -1
            reader.join(timeout=10)  # every writer is dead (PID namespace / cgroup / session killed)
            records = RunRecords.parse(b"".join(chunks), nonce, overflow[0])
        finally:
            for fd in (write_fd, nonce_r, read_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            shutil.rmtree(stage, ignore_errors=True)
        prefix = f"{self.test_file.name}::"
        real = {tid: records.outcome(tid) for tid in {*records.phases, *records.collected}
                if tid.removeprefix(prefix) not in canaries}
        return self._classify(raw, records, canaries, real, required, reference), raw, real

    # -- verdicts ----------------------------------------------------------------------------------------------

    def _classify(
        self, r: SandboxResult, rec: RunRecords, canaries: dict[str, str], real: dict[str, str],
        required: frozenset[str] | None, reference: bool,
    ) -> CheckResult:
        prefix = f"{self.test_file.name}::"
        counts: dict[str, int] = {}
        for outcome in real.values():
            key = outcome.replace(" ", "_")
            counts[key] = counts.get(key, 0) + 1
        info: dict[str, Any] = {
            "returncode": r.returncode,
            "duration": round(r.duration, 3),
            "isolation": list(r.isolation),
            "sandbox": dict(r.info),
            "counts": counts,
            "canaries": dict(canaries),  # revealed after the run: their lines in the output are deltap's
            "output": r.output[-4000:],
        }
        if r.error:
            return CheckResult("error", None, r.error, info)
        if not rec.started:
            why = f"timed out after {self.limits.wall_seconds}s" if r.timed_out else f"exit status {r.returncode}"
            return CheckResult("error", None, f"pytest did not start in the sandbox ({why})", info)
        if r.timed_out:
            return CheckResult("fail", None, f"timed out after {self.limits.wall_seconds}s (killed)", info)
        if rec.tampering:
            return CheckResult("fail", None, f"tampering detected: {rec.tampering[0]}", info)
        if not rec.finished:
            how = _exit_description(r.returncode)
            if r.info.get("oom_killed"):
                how += "; the memory limit of the sandbox was hit"
            return CheckResult("fail", None, f"pytest did not finish ({how}): the code exited, crashed or was killed", info)
        if rec.collect_errors:
            return CheckResult(
                "fail", None, f"collection failed (the module does not import): {rec.collect_errors[0] or 'session'}", info
            )
        if not any(rec.phases.values()):
            return CheckResult("fail", None, f"no test ran (pytest stopped early, exit status {rec.exitstatus})", info)
        for name, want in canaries.items():
            got = rec.outcome(prefix + name)
            if got != want:
                return CheckResult(
                    "fail", None, f"tampering detected: a hidden check test came out {got!r}, expected {want!r}", info
                )
        if reference:
            passed = sorted(t for t, o in real.items() if o == "passed")
            if not passed:
                return CheckResult("fail", None, self._describe_failure(real, sorted(real) or ["(no test ran)"]), info)
            return CheckResult("pass", None, f"{len(passed)} passed", info)
        if required is None:
            wanted = _static_test_names(self._test_source)
            passed_names = {_base_name(t) for t, o in real.items() if o == "passed"}
            bad = sorted(t for t, o in real.items() if o != "passed")
            missing = sorted(wanted - passed_names)
            if not real or bad or missing:
                what = bad or missing or ["(no test ran)"]
                return CheckResult("fail", None, self._describe_failure(real, what), info)
            return CheckResult("pass", None, f"{len(real)} passed", info)
        bad = sorted(t for t in required if real.get(t, "not run") != "passed")
        if bad:
            return CheckResult("fail", None, self._describe_failure(real, bad), info)
        return CheckResult("pass", None, f"{len(required)} passed", info)

    @staticmethod
    def _describe_failure(real: dict[str, str], bad: list[str]) -> str:
        by: dict[str, int] = {}
        for t in bad:
            o = real.get(t, "not run")
            by[o] = by.get(o, 0) + 1
        if set(by) == {"failed"}:
            return "tests failed"
        if not real:
            return "collection failed or no test ran (the module does not import?)"
        parts = ", ".join(f"{n} {o}" for o, n in sorted(by.items()))
        return f"required tests did not pass: {parts} (e.g. {bad[0]})"

    # -- preflight and check -----------------------------------------------------------------------------------

    def preflight(self) -> CheckResult | None:
        """Run the reference solution once (cached) and record the tests it passes. ``None`` without a reference."""
        if self.fixed_file is None:
            return None
        with self._lock:
            if self._preflight is None:
                result, _, real = self._run(self.fixed_file.read_text(encoding="utf-8"), None, reference=True)
                if result.passed:
                    passed = sorted(t for t, o in real.items() if o == "passed")
                    self._required = frozenset(passed)
                    info = {**result.info, "required": passed}
                    result = CheckResult("pass", None, f"{len(passed)} tests pass with the reference", info)
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
        try:
            code.encode("utf-8")
        except UnicodeEncodeError as exc:  # e.g. a lone surrogate from a JSON "\\ud800": no file can hold it
            return CheckResult("fail", None, f"the answer is not valid text ({exc.reason} at character {exc.start})")
        result, _, _ = self._run(code, self._required)
        return CheckResult(result.outcome, None, result.detail, result.info)


_SIGNAL_CAUSES = {
    signal.SIGXCPU: "the CPU-time limit", signal.SIGKILL: "a hard limit or an OOM kill",
    signal.SIGXFSZ: "the file-size limit", signal.SIGSEGV: "a crash", signal.SIGABRT: "an abort",
}


def _exit_description(rc: int | None) -> str:
    """``killed by signal 24 (SIGXCPU: the CPU-time limit)``; wrappers report a signal as exit status 128 + n."""
    sig = -rc if rc is not None and rc < 0 else rc - 128 if rc is not None and 128 < rc < 128 + 65 else None
    if sig is None:
        return f"exit status {rc}"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        return f"killed by signal {sig}"
    cause = _SIGNAL_CAUSES.get(signal.Signals(sig))
    return f"killed by signal {sig} ({name}{': ' + cause if cause else ''})"
