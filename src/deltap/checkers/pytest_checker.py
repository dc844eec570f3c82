"""Pytest checker: the candidate source runs as the module under test, against the case's tests, in a sandbox.

Threat model. The candidate is hostile code that wants a wrong answer scored ``pass`` — or, as good for it, an
infrastructure ``error`` (errors are left out of the estimate) or an exception out of :meth:`PytestChecker.check`
(which stops a mining run). It knows deltap's source. The defences, and what each one defeats:

0. **The candidate does not share the test process** (separate-process mode, the default where the sandbox can
   keep two processes apart: bubblewrap, or root with PID namespaces and ``nobody``; ``candidate_process``
   ``auto``). The module the tests import is a stand-in (``_remote_module.py``); the candidate module runs in a
   second sandbox (``_remote_server.py``) that cannot see the tests, the plugin or the test process (without
   bubblewrap the test side sits under a random name in a stage directory nobody can list), and every call crosses
   a pipe (``_plain.py``): plain values keep their exact type (built-ins, ``Counter``/``OrderedDict``/
   ``defaultdict``, numpy scalars and arrays), exceptions arrive as built-in classes or local copies of the module's
   own (a *returned* exception as a value), and everything else crosses as a proxy whose uses go back across the
   pipe: objects, classes and functions of the candidate (``==`` between two proxies compares plain fields in the
   test process), and the callbacks a test passes in (they run in the test process; the candidate holds only a
   reference). So an object equal to everything (``unittest.mock.ANY``), a ctypes-patched ``float.__eq__``, a look
   at the calling test's frame or a callback's globals, patched pytest internals, a patched or forged verdict
   channel, a hijacked ``sys.modules`` — every attack that needs to be *in* the test process — has nothing to act
   on. Accidents cannot pass either: a candidate process that exits, crashes, is killed, hangs past its time, or
   returns what cannot cross gives the test a ``CandidateFailure`` (a ``BaseException``: ``pytest.raises(Exception)``
   does not take it) and a ``candidate_failure`` record that fails the check even when a test catches it;
   ``SystemExit`` stays ``SystemExit``. Stand-ins never enter a test module through ``import *`` under a builtin's
   or pytest's name. The preflight uses this mode only when the reference passes every required test through it; a
   case whose tests send what cannot cross (an object of the test's own class) falls back to shared mode, saying
   why in ``info["candidate_process"]`` and in the checker id (``process=shared``). ``candidate_process``
   ``separate`` insists (the preflight fails otherwise), ``shared`` never separates.
1. **The verdict never comes from stdout or the exit code.** deltap's plugin (``-p deltap_verdict``, loaded from a
   read-only directory before any test module, see ``_verdict_plugin.py``) writes one JSON record per test phase
   to a private pipe, tagged with a per-run nonce it reads from a second pipe and that both descriptors are
   close-on-exec. Fake summaries (inherited fds, ``atexit``, re-running pytest into the output, ``os._exit(0)``)
   change nothing: no ``finish`` record means ``fail``; a line without the plugin's exact prefix and nonce (it is
   not even parsed), a record whose fields have other types than the plugin writes, a duplicate phase, or anything
   after ``finish`` is tampering, ``fail``. The parser never raises.
2. **Hidden canary tests** (the tampering detector; design (b) of issue 15). Each run appends to the test file a
   few tests with random names, at least one that must pass and one that must fail; only the parent knows which.
   They go through the builtins the test module sees and through ``pytest.raises``, so a shadowed ``sorted`` or a
   replaced ``raises`` flips one.
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
   writes is never loaded. The case's own files (its reference solution) are not in the sandbox at all.
5. **What the code does to itself is a ``fail``**: ``sys.exit`` or ``pytest.exit`` at import, a crash, a kill, a
   fork bomb, memory or time exhaustion, an answer no file can hold (a lone surrogate). ``error`` is kept for the
   environment: the sandbox or pytest did not start (no ``start`` record — the candidate cannot run before it),
   the candidate's sandbox did not start (deltap's server signals its start before importing the candidate), or
   the reference does not pass.

Residual risk (stated, not hidden; ``tests/adversarial/heldout`` keeps each as a strict xfail): in **shared
mode** — a case whose tests send what cannot cross the process boundary, a machine where two sandboxes cannot be
kept apart, or ``candidate_process: shared`` — the candidate shares the pytest process, and code written for that (an object
equal to everything, a patched ``float.__eq__``, reading the expected value from the calling test's frame, or,
against deltap specifically, finding the plugin's nonce and forging the records, or flipping only the tests that
call it, which the canaries never do) is scored ``pass``. Generic tampering is still detected. The sandbox
(:mod:`deltap.checkers.sandbox`) bounds what such code can do to the machine in either mode.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deltap.checker_kinds import checker_id
from deltap.checkers.base import Verdict
from deltap.checkers.extract import extract_code
from deltap.checkers.sandbox import SandboxLimits, SandboxResult, backend_id, isolation_available, run_sandboxed
from deltap.errors import DeltapError

if TYPE_CHECKING:
    from deltap.cases import Case

__all__ = ["PytestChecker", "RunRecords", "build"]

_PLUGIN_SOURCE = Path(__file__).with_name("_verdict_plugin.py")
_PLAIN_SOURCE = Path(__file__).with_name("_plain.py")
_REMOTE_MODULE_SOURCE = Path(__file__).with_name("_remote_module.py")
_REMOTE_SERVER_SOURCE = Path(__file__).with_name("_remote_server.py")
_MAX_CHANNEL_BYTES = 16 * 1024**2
_WORDS = (
    "basic",
    "edge",
    "empty",
    "large",
    "mixed",
    "order",
    "repeat",
    "round",
    "simple",
    "small",
    "types",
    "values",
    "zero",
    "negative",
    "unicode",
    "nested",
    "bounds",
    "identity",
    "inverse",
    "default",
)
_INI = "[pytest]\naddopts =\nconsole_output_style = classic\n"
_CANDIDATE_PROCESS = ("auto", "separate", "shared")
_NEEDS_SEPARATION = "separate-process mode needs bubblewrap, or root with PID namespaces and the user nobody (apt-get install bubblewrap)"


def _separation_available() -> bool:
    """Whether two sandboxes keep the candidate away from the test process: bubblewrap (private mounts and ``/tmp``
    each), or the legacy sandbox as root (own PID namespace each, both run as ``nobody``; the test process's
    directories are then reachable only by a random name in a stage directory nobody can list)."""
    a = isolation_available()
    return bool(a.get("bwrap") or (a.get("root_ns") and a.get("legacy_nobody")))


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
        candidate_failures: ``(test_id, reason)`` for each accident of the candidate's process the stand-in module
            reported (separate-process mode): each one fails the check, even when the test caught it.
        tampering: Reasons the channel itself looks forged.
    """

    started: bool = False
    finished: bool = False
    exitstatus: int | None = None
    phases: dict[str, dict[str, str]] = field(default_factory=dict)
    collected: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    tampering: list[str] = field(default_factory=list)
    candidate_failures: list[tuple[str, str]] = field(default_factory=list)

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
                    if raw.startswith(b'{"nonce": ')
                    else "a line on the result channel is not deltap's"
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
            elif kind == "candidate_failure":
                rec.candidate_failures.append((obj["id"], obj["reason"]))
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
    if kind in ("collect_error", "report", "candidate_failure") and not isinstance(obj.get("id"), str):
        return "id"
    if kind == "candidate_failure" and not isinstance(obj.get("reason"), str):
        return "reason"
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
    canaries appended, the support files, deltap's ``pytest.ini``) and ``plugin/`` (``deltap_verdict.py``; in
    separate-process mode also ``deltap_remote.py`` and ``deltap_plain.py``), both read-only to the code, and
    ``work/<module_name>.py``: the candidate in shared mode, the stand-in stub in separate mode (the test process's
    cwd, ``HOME`` and ``TMPDIR``). Separate mode adds ``cand-lib/`` (deltap's server, read-only) and
    ``cand/<module_name>.py`` (the candidate), the only stage dirs the candidate's sandbox shows.

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
        candidate_process: ``auto`` (the candidate in its own sandbox when bubblewrap works and the reference passes
            that way, else in the test process), ``separate`` (always its own sandbox; the preflight fails when the
            reference cannot pass that way) or ``shared`` (imported into the test process).
    """

    def __init__(
        self,
        test_file: str | Path,
        module_name: str,
        fixed_file: str | Path | None = None,
        limits: SandboxLimits | None = None,
        support_files: Sequence[str | Path] = (),
        pytest_args: Sequence[str] = (),
        candidate_process: str = "auto",
    ) -> None:
        self.test_file = Path(test_file)
        if not self.test_file.is_file():
            raise DeltapError(f"pytest checker: test_file not found: {self.test_file}")
        if not module_name or not module_name.replace("_", "a").isalnum():
            raise DeltapError(f"pytest checker: module_name must be a plain module name, got {module_name!r}")
        if module_name.startswith("deltap_"):
            raise DeltapError(
                f"pytest checker: module_name {module_name!r} is reserved (deltap_* are deltap's own modules)"
            )
        if candidate_process not in _CANDIDATE_PROCESS:
            raise DeltapError(
                f"pytest checker: candidate_process must be one of {', '.join(_CANDIDATE_PROCESS)}, got {candidate_process!r}"
            )
        self.module_name = module_name
        self.candidate_process = candidate_process
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
        self._preflight: Verdict | None = None
        self._required: frozenset[str] | None = None
        self._separate = False  # decided by the preflight (see ``candidate_process``)
        self._lock = threading.Lock()
        self._decided = False  # the preflight (or its absence) fixed where the candidate runs

    @property
    def id(self) -> str:
        """The checker's id, with where the candidate runs once that is decided: ``process=separate`` (its own
        sandbox), ``process=shared`` (imported into the test process: the residual risk of the module docstring
        applies) or ``process=auto`` (not decided yet). Every trial's label records it."""
        process = ("separate" if self._separate else "shared") if self._decided else "auto"
        return checker_id(
            "pytest",
            self.test_file.name,
            module=self.module_name,
            wall=f"{self.limits.wall_seconds}s",
            cpu=f"{self.limits.cpu_seconds}s",
            mem=f"{self.limits.memory_bytes // 1024**2}MiB",
            cpus=self.limits.cpus,
            sandbox=backend_id(),
            process=process,
        )

    @property
    def candidate_process_label(self) -> str:
        """Where checks run the candidate, and why not separately: ``separate``, or ``shared (<reason>)`` (runs the
        preflight when it has not run)."""
        pre = self.preflight()
        if pre is not None and not pre.passed:
            return f"none (the reference does not pass: {pre.detail})"
        if self._separate:
            return "separate"
        if pre is not None and isinstance(pre.info.get("candidate_process"), str):
            return str(pre.info["candidate_process"])
        if self.candidate_process == "shared":
            return "shared (candidate_process: shared)"
        return "shared (no reference to verify a separate process)"

    @property
    def separate(self) -> bool:
        """Whether checks run the candidate in its own process (decided by :meth:`preflight`, which this runs)."""
        pre = self.preflight()
        return self._separate and (pre is None or pre.passed)

    # -- one sandboxed run -------------------------------------------------------------------------------------

    @staticmethod
    def _canaries() -> tuple[str, dict[str, str]]:
        """Source of 4-6 hidden tests and their expected outcomes: one that passes and one that fails through the
        builtins the test module sees (``abs``, ``sorted``, ``min``, ``max``, ``len``, ``sum``, ``isinstance``: a
        shadowed or patched one flips a canary), one of each through ``pytest.raises`` (a replaced ``raises`` that
        swallows everything passes the failing one; one that lets everything through fails the passing one), and
        0-2 plain arithmetic ones."""
        rng = secrets.SystemRandom()
        kinds = [("builtins", "passed"), ("builtins", "failed"), ("raises", "passed"), ("raises", "failed")]
        kinds += [("arith", rng.choice(("passed", "failed"))) for _ in range(rng.randint(0, 2))]
        rng.shuffle(kinds)
        chunks, names = [], {}
        for kind, want in kinds:
            name = f"test_{rng.choice(_WORDS)}_{secrets.token_hex(3)}"
            a, b = rng.randint(2, 10**6), rng.randint(2, 10**6)
            lo, hi = min(a, b), max(a, b) + 1
            if kind == "builtins" and want == "passed":
                value = a + lo + 2 + lo + hi + a
                body = (
                    f"assert isinstance({a}, int) and abs(-{a}) + sorted([{hi}, {lo}])[0] + len([{a}, {b}])"
                    f" + min({hi}, {lo}) + max({lo}, {hi}) + sum([{a}]) == {value}"
                )
            elif kind == "builtins":
                body = f"assert sorted([{hi}, {lo}]) == [{hi}, {lo}] or abs(-{a}) == -{a} or max({lo}, {hi}) == {lo}"
            elif kind == "raises":
                token = secrets.token_hex(3)
                inner = f'int("{token}z")' if want == "passed" else f'int("{a}")'
                body = (
                    f"import pytest as _pytest_{token}\n    with _pytest_{token}.raises(ValueError):\n        {inner}"
                )
            else:
                op = rng.choice(("+", "*", "-"))
                value = {"+": a + b, "*": a * b, "-": a - b}[op]
                if want == "failed":
                    value += rng.choice((-1, 1)) * rng.randint(1, 9)
                body = f"assert {a} {op} {b} == {value}"
            chunks.append(f"\n\ndef {name}():\n    {body}\n")
            names[name] = want
        return "".join(chunks), names

    def run(self, code: str) -> tuple[Verdict, SandboxResult]:
        """Run the tests against ``code`` (no preflight); returns the classified result and the raw run."""
        result, raw, _ = self._run(code, self._required, separate=self._separate)
        return result, raw

    def _run(
        self, code: str, required: frozenset[str] | None, reference: bool = False, separate: bool = False
    ) -> tuple[Verdict, SandboxResult, dict[str, str]]:
        """One sandboxed run; returns the verdict, the raw run and the outcome of every real (non-canary) test.

        ``separate``: the candidate runs in a second sandbox and the test process imports a stand-in module (see
        ``_remote_module.py``); otherwise the candidate module is imported into the test process itself.
        """
        stage = Path(tempfile.mkdtemp(prefix="deltap-pytest-"))
        # The test side under a random name in a stage nobody can list: without bubblewrap both sandboxes see the
        # host's /tmp, and the candidate's must neither read the tests nor write where the test process imports from.
        side = stage / secrets.token_hex(16) if separate else stage
        tests, plugin, work = side / "tests", side / "plugin", side / "work"
        cand_lib, cand = stage / "cand-lib", stage / "cand"
        canary_src, canaries = self._canaries()
        nonce = secrets.token_hex(16)
        fds: dict[str, int] = {}  # every descriptor this process still has to close
        remote = _RemoteSide() if separate else None
        try:
            test_path = self._stage(stage, side, code, canary_src, separate)

            fds["read"], fds["write"] = os.pipe()
            fds["nonce_r"], nonce_w = os.pipe()
            os.write(nonce_w, nonce.encode("ascii"))
            os.close(nonce_w)
            chunks: list[bytes] = []
            overflow = [False]
            read_fd = fds["read"]

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
            argv = self._pytest_argv(tests, test_path)
            env = {
                "PYTHONPATH": os.pathsep.join([str(plugin), str(work)]),
                "DELTAP_VERDICT_FD": str(fds["write"]),
                "DELTAP_VERDICT_NONCE_FD": str(fds["nonce_r"]),
            }
            test_fds: tuple[int, ...] = (fds["write"], fds["nonce_r"])
            if remote is not None:
                remote.start(cand_lib, cand, self.module_name, self.limits)
                env["DELTAP_REMOTE_FDS"] = f"{remote.fds['req_w']},{remote.fds['resp_r']}"
                # the candidate's answers stop counting a little before the test process's own clock runs out, so a
                # hang is reported by the test that waited for it (a CandidateFailure), not as a timeout of the run
                wall = self.limits.wall_seconds
                env["DELTAP_REMOTE_SECONDS"] = str(round(max(wall * 0.5, wall - max(3.0, wall * 0.25)), 1))
                test_fds += (remote.fds["req_w"], remote.fds["resp_r"])

            def started(_proc: object) -> None:  # the test process holds its ends now: drop ours
                for key in ("write", "nonce_r"):
                    os.close(fds.pop(key))
                if remote is not None:
                    remote.close_test_ends()

            raw = run_sandboxed(
                argv, work, self.limits, env=env, readonly=(tests, plugin), pass_fds=test_fds, on_start=started
            )
            for key in ("write", "nonce_r"):
                if key in fds:
                    os.close(fds.pop(key))
            remote_raw = remote.finish() if remote is not None else None
            reader.join(timeout=10)  # every writer is dead (PID namespace / cgroup / session killed)
            records = RunRecords.parse(b"".join(chunks), nonce, overflow[0])
        finally:
            if remote is not None:
                remote.close_all()
            for fd in fds.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(stage, ignore_errors=True)
        prefix = f"{self.test_file.name}::"
        real = {
            tid: records.outcome(tid)
            for tid in {*records.phases, *records.collected}
            if tid.removeprefix(prefix) not in canaries
        }
        result = self._classify(raw, records, canaries, real, required, reference)
        if remote is not None:
            ended_first = remote.ended_first and not raw.timed_out  # both hit the clock: the tests' timeout says it
            result = _with_remote(result, remote_raw, remote.started_ok(), ended_first)
        return result, raw, real

    def _stage(self, stage: Path, side: Path, code: str, canary_src: str, separate: bool) -> Path:
        """Write the run's files under ``stage`` (the test side under ``side``); returns the test file's path.

        ``side/tests`` holds the tests (with the canaries appended), their support files and ``pytest.ini``;
        ``side/plugin`` the verdict plugin; ``side/work`` the candidate module (a stand-in when ``separate``, whose
        candidate goes to ``stage/cand`` with its server in ``stage/cand-lib``).
        """
        tests, plugin, work = side / "tests", side / "plugin", side / "work"
        cand_lib, cand = stage / "cand-lib", stage / "cand"
        stage.chmod(0o711 if separate else 0o755)
        if separate:
            side.mkdir(mode=0o755)
            side.chmod(0o755)
        for d in (tests, plugin, work, *((cand_lib, cand) if separate else ())):
            d.mkdir(mode=0o755)
        test_path = tests / self.test_file.name
        body = self._test_source if self._test_source.endswith(b"\n") else self._test_source + b"\n"
        test_path.write_bytes(body + canary_src.encode("ascii"))
        for extra in self.support_files:
            shutil.copyfile(extra, tests / extra.name)
        (tests / "pytest.ini").write_text(_INI, encoding="utf-8")
        shutil.copyfile(_PLUGIN_SOURCE, plugin / "deltap_verdict.py")
        if separate:
            shutil.copyfile(_PLAIN_SOURCE, plugin / "deltap_plain.py")
            shutil.copyfile(_REMOTE_MODULE_SOURCE, plugin / "deltap_remote.py")
            (work / f"{self.module_name}.py").write_text(_STUB, encoding="utf-8")
            shutil.copyfile(_PLAIN_SOURCE, cand_lib / "deltap_plain.py")
            shutil.copyfile(_REMOTE_SERVER_SOURCE, cand_lib / "deltap_remote_server.py")
            (cand / f"{self.module_name}.py").write_text(code, encoding="utf-8")
        else:
            (work / f"{self.module_name}.py").write_text(code, encoding="utf-8")
        for path in (*tests.iterdir(), *plugin.iterdir(), *(cand_lib.iterdir() if separate else ())):
            path.chmod(0o644)
        return test_path

    def _pytest_argv(self, tests: Path, test_path: Path) -> list[str]:
        """The test process's command: pytest with the verdict plugin, confined to ``tests`` (no cache, no
        configuration or conftest from above it, no inherited ``addopts``)."""
        return [
            sys.executable,
            "-B",
            "-m",
            "pytest",
            "-p",
            "deltap_verdict",
            "-p",
            "no:cacheprovider",
            "-c",
            str(tests / "pytest.ini"),
            "--rootdir",
            str(tests),
            "--confcutdir",
            str(tests),
            "-q",
            "--no-header",
            "-o",
            "addopts=",
            *self.pytest_args,
            str(test_path),
        ]

    # -- verdicts ----------------------------------------------------------------------------------------------

    def _classify(
        self,
        r: SandboxResult,
        rec: RunRecords,
        canaries: dict[str, str],
        real: dict[str, str],
        required: frozenset[str] | None,
        reference: bool,
    ) -> Verdict:
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
            return Verdict("error", None, r.error, info)
        if not rec.started:
            why = f"timed out after {self.limits.wall_seconds}s" if r.timed_out else f"exit status {r.returncode}"
            return Verdict("error", None, f"pytest did not start in the sandbox ({why})", info)
        if r.timed_out:
            return Verdict("fail", None, f"timed out after {self.limits.wall_seconds}s (killed)", info)
        if rec.tampering:
            return Verdict("fail", None, f"tampering detected: {rec.tampering[0]}", info)
        if not rec.finished:
            how = _exit_description(r.returncode)
            if r.info.get("oom_killed"):
                how += "; the memory limit of the sandbox was hit"
            return Verdict("fail", None, f"pytest did not finish ({how}): the code exited, crashed or was killed", info)
        if rec.candidate_failures:
            test_id, reason = rec.candidate_failures[0]
            where = f" in {test_id.removeprefix(prefix)}" if test_id else ""
            return Verdict("fail", None, f"the candidate failed{where}: {reason}", info)
        if rec.collect_errors:
            return Verdict(
                "fail",
                None,
                f"collection failed (the module does not import): {rec.collect_errors[0] or 'session'}",
                info,
            )
        if not any(rec.phases.values()):
            return Verdict("fail", None, f"no test ran (pytest stopped early, exit status {rec.exitstatus})", info)
        for name, want in canaries.items():
            got = rec.outcome(prefix + name)
            if got != want:
                return Verdict(
                    "fail", None, f"tampering detected: a hidden check test came out {got!r}, expected {want!r}", info
                )
        if reference:
            passed = sorted(t for t, o in real.items() if o == "passed")
            if not passed:
                return Verdict("fail", None, self._describe_failure(real, sorted(real) or ["(no test ran)"]), info)
            return Verdict("pass", None, f"{len(passed)} passed", info)
        if required is None:
            wanted = _static_test_names(self._test_source)
            passed_names = {_base_name(t) for t, o in real.items() if o == "passed"}
            bad = sorted(t for t, o in real.items() if o != "passed")
            missing = sorted(wanted - passed_names)
            if not real or bad or missing:
                what = bad or missing or ["(no test ran)"]
                return Verdict("fail", None, self._describe_failure(real, what), info)
            return Verdict("pass", None, f"{len(real)} passed", info)
        bad = sorted(t for t in required if real.get(t, "not run") != "passed")
        if bad:
            return Verdict("fail", None, self._describe_failure(real, bad), info)
        return Verdict("pass", None, f"{len(required)} passed", info)

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

    def preflight(self) -> Verdict | None:
        """Run the reference solution once (cached), record the tests it passes, and choose where the candidate runs.

        With ``candidate_process`` ``auto`` (the default), the reference is run a second time in separate-process mode
        when bubblewrap is in use; when every test it passed in its own process passes there too, every candidate is
        checked that way (``info["candidate_process"]`` says which mode a check used, and why not separate).
        ``None`` without a reference.
        """
        if self.fixed_file is None:
            if self.candidate_process == "separate" and not _separation_available():
                self._preflight = Verdict("fail", None, f"candidate_process is 'separate' but {_NEEDS_SEPARATION}")
                return self._preflight
            self._separate = self.candidate_process == "separate" and _separation_available()
            self._decided = True
            return None
        with self._lock:
            if self._preflight is None:
                self._preflight = self._run_preflight(self.fixed_file.read_text(encoding="utf-8"))
        return self._preflight

    def _run_preflight(self, reference: str) -> Verdict:
        result, _, real = self._run(reference, None, reference=True)
        if not result.passed:
            return result
        passed = sorted(t for t, o in real.items() if o == "passed")
        required = frozenset(passed)
        self._required = required
        info: dict[str, Any] = {**result.info, "required": passed}
        mode = "shared"
        if self.candidate_process == "shared":
            why = "candidate_process: shared"
        elif not _separation_available():
            why = _NEEDS_SEPARATION
        else:
            separate, _, _ = self._run(reference, required, separate=True)
            why = "" if separate.passed else f"the reference does not pass in a separate process: {separate.detail}"
            if separate.passed:
                mode = "separate"
        if self.candidate_process == "separate" and mode != "separate":
            return Verdict("fail", None, f"candidate_process is 'separate' but {why}", info)
        self._separate = mode == "separate"
        self._decided = True
        info["candidate_process"] = mode if not why else f"{mode} ({why})"
        return Verdict("pass", None, f"{len(passed)} tests pass with the reference", info)

    def check(self, case: Case, answer: str) -> Verdict:
        pre = self.preflight()
        if pre is not None and not pre.passed:
            return Verdict(
                "error", None, f"the reference fixed_file does not pass in this environment: {pre.detail}", pre.info
            )
        code = extract_code(answer or "")
        if code is None:
            return Verdict("fail", None, "empty answer")
        try:
            code.encode("utf-8")
        except UnicodeEncodeError as exc:  # e.g. a lone surrogate from a JSON "\\ud800": no file can hold it
            return Verdict("fail", None, f"the answer is not valid text ({exc.reason} at character {exc.start})")
        result, _, _ = self._run(code, self._required, separate=self._separate)
        info = result.info
        if not self._separate:  # say why the candidate shared the test process (the residual risk applies)
            info = {**info, "candidate_process": self.candidate_process_label}
        return Verdict(result.status, None, result.detail, info)


_STUB = "import deltap_remote\n\ndeltap_remote.install(__name__, globals())\n"


class _RemoteSide:
    """The candidate's sandbox in separate-process mode: started in a thread, killed when the tests are done."""

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}
        self.proc: Any = None
        self.result: SandboxResult | None = None
        self.status = b""
        self.ended_first = False
        self._thread: threading.Thread | None = None

    def start(self, lib: Path, work: Path, module: str, limits: SandboxLimits) -> None:
        self.fds["req_r"], self.fds["req_w"] = os.pipe()
        self.fds["resp_r"], self.fds["resp_w"] = os.pipe()
        self.fds["status_r"], self.fds["status_w"] = os.pipe()
        cand_fds = (self.fds["req_r"], self.fds["resp_w"], self.fds["status_w"])
        env = {
            "PYTHONPATH": str(work),
            "DELTAP_REMOTE_FDS": f"{self.fds['req_r']},{self.fds['resp_w']}",
            "DELTAP_REMOTE_STATUS_FD": str(self.fds["status_w"]),
        }
        argv = [sys.executable, "-B", str(lib / "deltap_remote_server.py"), module]

        def started(proc: object) -> None:
            self.proc = proc
            self._close("req_r", "resp_w", "status_w")

        def body() -> None:
            try:
                self.result = run_sandboxed(
                    argv, work, limits, env=env, readonly=(lib,), pass_fds=cand_fds, on_start=started
                )
            finally:  # it did not start, or it ended: the test side must see end-of-file, not wait forever
                self._close("req_r", "resp_w", "status_w")

        self._thread = threading.Thread(target=body, name="deltap-candidate-sandbox", daemon=True)
        self._thread.start()

    def _close(self, *keys: str) -> None:
        for key in keys:
            fd = self.fds.pop(key, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def close_test_ends(self) -> None:
        self._close("req_w", "resp_r")

    def finish(self) -> SandboxResult | None:
        """Stop the candidate's sandbox (the tests are done with it) and return how it ended."""
        self.close_test_ends()
        if self.proc is not None:
            # Ended on its own while the tests ran (crashed, killed by a limit): its fate explains failing tests.
            # Still running: the tests are done with it, and its fate is ours, not the candidate's.
            self.ended_first = self.proc.poll() is not None
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        if self._thread is not None:
            self._thread.join()
        if "status_r" in self.fds:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fds["status_r"], False)
                self.status = os.read(self.fds["status_r"], 1)
        return self.result

    def started_ok(self) -> bool:
        return self.status == b"S"

    def close_all(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.finish()
        self._close(*list(self.fds))


def _with_remote(result: Verdict, raw: SandboxResult | None, started: bool, ended_first: bool) -> Verdict:
    """Fold how the candidate's own sandbox ended into the verdict of the test process."""
    info = dict(result.info)
    info["candidate_process"] = "separate"
    if raw is not None:
        info["candidate_returncode"] = raw.returncode
        info["candidate_sandbox"] = dict(raw.info)
        info["candidate_output"] = raw.output[-4000:]
    if raw is None or raw.error or not started:
        why = raw.error if raw is not None and raw.error else f"exit status {raw.returncode if raw else None}"
        return Verdict("error", None, f"the candidate's sandbox did not start ({why})", info)
    detail = result.detail
    if result.status == "fail" and ended_first:
        how = ""
        if raw.timed_out:
            how = "timed out"
        elif raw.returncode is not None and (raw.returncode < 0 or raw.returncode > 128):
            how = _exit_description(raw.returncode)
        if raw.info.get("oom_killed"):
            how += ("; " if how else "") + "the memory limit of its sandbox was hit"
        if how:
            detail = f"{detail}; the candidate's process: {how}"
    return Verdict(result.status, result.extracted, detail, info)


_SIGNAL_CAUSES = {
    signal.SIGXCPU: "the CPU-time limit",
    signal.SIGKILL: "a hard limit or an OOM kill",
    signal.SIGXFSZ: "the file-size limit",
    signal.SIGSEGV: "a crash",
    signal.SIGABRT: "an abort",
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


def build(params: Mapping[str, Any]) -> PytestChecker:
    """The ``pytest`` kind's factory (:mod:`deltap.checker_kinds`): ``test_file``, ``module_name``, optional
    ``fixed_file``, the sandbox limits ``wall_seconds``, ``cpu_seconds``, ``memory_mb``, ``max_processes``,
    ``disk_mb``, ``cpus`` (``null``: unbounded), ``support_files`` and ``candidate_process``."""
    for key in ("test_file", "module_name"):
        if not params.get(key):
            raise DeltapError(f"pytest checker needs params[{key!r}]")
    defaults = SandboxLimits()
    cpus = params.get("cpus", defaults.cpus)
    limits = SandboxLimits(
        wall_seconds=float(params.get("wall_seconds", defaults.wall_seconds)),
        cpu_seconds=int(params.get("cpu_seconds", defaults.cpu_seconds)),
        memory_bytes=int(params.get("memory_mb", defaults.memory_bytes // 1024**2)) * 1024**2,
        max_processes=int(params.get("max_processes", defaults.max_processes)),
        disk_bytes=int(params.get("disk_mb", defaults.disk_bytes // 1024**2)) * 1024**2,
        cpus=None if cpus is None else float(cpus),
    )
    return PytestChecker(
        params["test_file"],
        str(params["module_name"]),
        params.get("fixed_file"),
        limits,
        params.get("support_files") or (),
        candidate_process=str(params.get("candidate_process", "auto")),
    )
