"""deltap's version: the one place it is written (pyproject.toml reads it at build time, ``deltap.__version__``
and every output that records the tool's version import it from here)."""

__version__ = "0.1.0"
