"""No ResourceWarning at exit from llama-cpp-python's two /dev/null files (issue 36: the two warnings after pytest's
summary)."""

import subprocess
import sys

import pytest


def test_importing_the_local_solver_leaves_no_unclosed_file_at_exit() -> None:
    pytest.importorskip("llama_cpp")
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-c", "import llama_cpp, deltap.solvers.llama_cpp"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "ResourceWarning" not in proc.stderr, proc.stderr
