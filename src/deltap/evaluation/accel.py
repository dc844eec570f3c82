"""The optional compiled accelerator of :func:`deltap.evaluation.evaluate`'s dict path, and whether it is in use.

``_accel.c`` (next to this file) holds two inner loops of :mod:`deltap.evaluation.ranking` in C: packing a block of
run rows' scores into a float64 buffer, and the judged documents' look-ups in those rows. The install compiles it
(``hatch_build.py``, a hatchling build hook); where it cannot (no compiler, no ``Python.h``, ``DELTAP_ACCEL=0`` at
build time) deltap runs pure Python. The results are the same either way, bit for bit: the C loops decline anything
unusual and the Python path then runs (and names bad entries exactly as it always does).

At run time ``DELTAP_ACCEL=0`` in the environment forces the pure-Python path (read on every call, so tests and
benchmarks can compare the two in one process). A module built from another version of ``_accel.c`` (a checkout
changed since its last build) is not used: rebuild it with ``python hatch_build.py`` or reinstall.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import cache
from pathlib import Path
from types import ModuleType

__all__ = ["ENV", "MODES", "accelerator", "accelerator_mode", "accelerator_status"]

#: The environment variable that switches the accelerator off (``0``), at build time and at run time.
ENV = "DELTAP_ACCEL"

#: The two paths, as the benchmarks and the speed guard name them.
MODES = ("accelerated", "pure Python")

_SOURCE = Path(__file__).with_name("_accel.c")


@cache
def _load() -> tuple[ModuleType | None, str]:
    """The compiled module and where it is, or ``None`` and why it is not used (tried once per process)."""
    try:
        module = importlib.import_module("deltap.evaluation._accel")
    except ModuleNotFoundError as exc:
        if exc.name != "deltap.evaluation._accel":
            raise
        return (
            None,
            "the compiled accelerator is not built here: reinstall with a C compiler, or in a checkout run python hatch_build.py",
        )
    except ImportError as exc:  # a module for another interpreter or platform, a broken file
        return None, f"the compiled accelerator does not load: {exc}"
    name = Path(module.__file__ or "_accel").name
    if _SOURCE.is_file() and hashlib.sha256(_SOURCE.read_bytes()).hexdigest() != getattr(module, "SOURCE_SHA256", None):
        return None, f"{name} was built from another _accel.c: rebuild it with python hatch_build.py, or reinstall"
    return module, f"compiled module {module.__file__}"


def accelerator() -> ModuleType | None:
    """The compiled module, or ``None`` when it is not built, stale, or switched off (``DELTAP_ACCEL=0``)."""
    if os.environ.get(ENV) == "0":
        return None
    return _load()[0]


def accelerator_mode() -> str:
    """``"accelerated"`` or ``"pure Python"``: the path :func:`~deltap.evaluation.evaluate` takes from dicts now."""
    return MODES[0] if accelerator() is not None else MODES[1]


def accelerator_status() -> str:
    """One line: the path :func:`~deltap.evaluation.evaluate` takes from dicts now, and why
    (``accelerated (compiled module …/_accel….so)``, ``pure Python (DELTAP_ACCEL=0)``, ...)."""
    if os.environ.get(ENV) == "0":
        return f"{MODES[1]} ({ENV}=0)"
    module, where = _load()
    return f"{MODES[0]} ({where})" if module is not None else f"{MODES[1]} ({where})"
