#!/usr/bin/env bash
# Create .venv and install deltap with every embedded-default backend and the test tools.
# torch is pinned to the CPU build first: an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[all,dev]"
echo "deltap installed in $(pwd)/.venv"
