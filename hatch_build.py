"""Build deltap's optional metrics accelerator (``deltap.evaluation._accel``, from ``src/deltap/evaluation/_accel.c``).

Hatchling runs this file as a build hook (``[tool.hatch.build.targets.wheel.hooks.custom]`` in pyproject.toml):

* a regular wheel (``pip install .``, ``pip wheel .``): the module is compiled into a temporary folder and added to
  the wheel, which is then tagged for this interpreter and platform (not pure Python);
* an editable install (``pip install -e .``, what ``scripts/install.sh`` and CI do): the module is compiled in place,
  next to its source (ignored by git).

The compiler is the interpreter's own (``sysconfig``'s ``CC`` and ``CCSHARED``, its include folder and
``EXT_SUFFIX``; ``CC`` in the environment overrides it). Without a compiler or ``Python.h``, or with
``DELTAP_ACCEL=0`` in the environment, the install still succeeds: one line says why the module was not built, and
deltap runs its pure-Python path (same results, slower from dicts). ``deltap --version`` says which path is in use.

Run as a script, it builds the module in place (for a checkout used through ``PYTHONPATH=src``)::

    python hatch_build.py
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SOURCE = ROOT / "src" / "deltap" / "evaluation" / "_accel.c"
#: Where the module goes inside the package (and inside a wheel).
PACKAGE_DIR = "deltap/evaluation"
#: The flags deltap adds to the interpreter's own (the source compiles without a warning under them).
FLAGS = ["-O2", "-Wall", "-Wextra"]


def module_name() -> str:
    """The file name of the compiled module for this interpreter (``_accel`` + ``EXT_SUFFIX``)."""
    return "_accel" + str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def source_sha256(source: Path = SOURCE) -> str:
    """The SHA-256 of the C source, compiled into the module (deltap does not use a module built from another)."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def compiler(env: Mapping[str, str] | None = None) -> list[str]:
    """The compiler command: ``CC`` from the environment, else the interpreter's ``sysconfig`` ``CC`` (``cc`` when
    that program is not on this machine, as with interpreters built elsewhere)."""
    env = os.environ if env is None else env
    if env.get("CC"):
        return shlex.split(env["CC"])
    configured = shlex.split(str(sysconfig.get_config_var("CC") or ""))
    if configured and shutil.which(configured[0]):
        return configured
    return ["cc"]


def compile_command(target: Path, cc: list[str], source: Path = SOURCE) -> list[str]:
    """One compile-and-link command: ``source`` to the shared module ``target``."""
    include = sysconfig.get_paths()["include"]
    shared = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    ccshared = shlex.split(str(sysconfig.get_config_var("CCSHARED") or "-fPIC"))
    define = f'-DDELTAP_ACCEL_SOURCE="{source_sha256(source)}"'
    return [*cc, *FLAGS, *ccshared, *shared, f"-I{include}", define, str(source), "-o", str(target)]


def build(out_dir: Path, env: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """Compile the module into ``out_dir``: ``(its path, a one-line report)``, or ``(None, why it was not built)``.

    Never raises for a missing or failing compiler: the caller goes on without the module. The module is written
    under a temporary name and renamed into place, so a process using an older build keeps a whole file.
    """
    env = os.environ if env is None else env
    pure = "deltap runs its pure-Python path (same results, slower from dicts)"
    if env.get("DELTAP_ACCEL") == "0":
        return None, f"deltap: metrics accelerator not built (DELTAP_ACCEL=0); {pure}"
    if sys.platform == "win32":
        return None, f"deltap: metrics accelerator not built (no build recipe for Windows yet); {pure}"
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        return (
            None,
            f"deltap: metrics accelerator not built (no Python.h in {include}: install the Python headers); {pure}",
        )
    cc = compiler(env)
    if not shutil.which(cc[0]):
        return None, f"deltap: metrics accelerator not built (no C compiler: {cc[0]!r} not found); {pure}"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / module_name()
    partial = out_dir / f".{target.name}.{os.getpid()}.tmp"
    started = time.perf_counter()
    try:
        done = subprocess.run(compile_command(partial, cc), capture_output=True, text=True, timeout=300, check=False)
        said = (done.stderr or done.stdout).strip()
        failed = f"exit status {done.returncode}" + (f": {said}" if said else "") if done.returncode else ""
        if not failed and not partial.is_file():
            failed = "it wrote no module"
        if not failed:
            os.replace(partial, target)
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed = str(exc)
    finally:
        partial.unlink(missing_ok=True)
    if failed:
        return (
            None,
            f"deltap: metrics accelerator not built ({shlex.join(cc)} failed, {' '.join(failed.split())[:300]}); {pure}",
        )
    took = time.perf_counter() - started
    return target, f"deltap: metrics accelerator built with {shlex.join(cc)} in {took:.1f} s: {target}"


def build_in_place(package_dir: Path, env: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """:func:`build` into the package's own folder; when it is not built, an earlier build there is removed, so the
    checkout runs what the report says (pure Python)."""
    built, said = build(package_dir, env)
    if built is None and (package_dir / module_name()).is_file():
        (package_dir / module_name()).unlink()
        said += f" (removed the earlier build {package_dir / module_name()})"
    return built, said


def prepare(
    root: Path, version: str, build_data: dict[str, Any], scratch: Path, env: Mapping[str, str] | None = None
) -> tuple[Path | None, str]:
    """The hook's work for one wheel of the project at ``root``: ``(the module built, the one-line report)``.

    An editable wheel (``version == "editable"``) gets the module in place, next to its source; a regular one gets it
    compiled into ``scratch`` and listed in ``build_data["force_include"]``, and the wheel is marked not pure (its tag
    inferred: this interpreter and platform). When the module is not built, ``build_data`` is left as it is: a pure
    wheel.
    """
    if version == "editable":
        return build_in_place(root / "src" / PACKAGE_DIR, env)
    built, said = build(scratch, env)
    if built is not None:
        build_data["force_include"][str(built)] = f"{PACKAGE_DIR}/{built.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
    return built, said


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script, or imported by a test, without hatchling
    BuildHookInterface = None


if BuildHookInterface is not None:

    class AcceleratorBuildHook(BuildHookInterface):
        """Compile the accelerator into the wheel (tagged for this platform) or in place for an editable install."""

        PLUGIN_NAME = "custom"

        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            if self.target_name != "wheel":
                return
            self._scratch = tempfile.TemporaryDirectory(prefix="deltap-accel-wheel-")
            built, said = prepare(Path(self.root), version, build_data, Path(self._scratch.name))
            if built is None:
                self.app.display_warning(said)
            else:
                self.app.display_info(said)

        def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
            scratch = getattr(self, "_scratch", None)
            if scratch is not None:
                scratch.cleanup()


def main() -> int:
    """Build in place (``src/deltap/evaluation/``); exit status 1 when the module could not be built."""
    built, said = build_in_place(SOURCE.parent)
    print(said)
    return 0 if built is not None or os.environ.get("DELTAP_ACCEL") == "0" else 1


if __name__ == "__main__":
    sys.exit(main())
