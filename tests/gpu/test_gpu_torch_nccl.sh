#!/usr/bin/env bash
# PyTorch's NCCL with memobs' profiler plugin and the memobs Python package
# on a real GPU (`make gpu-torch-nccl-test`): builds `make nccl-plugin
# python-module` for the python3 that holds PyTorch (TORCH_PYTHON, default
# python3) and runs tests/gpu/torch_nccl.py with the package on PYTHONPATH
# and NCCL_PROFILER_PLUGIN=memobs (the plugin's folder on
# LD_LIBRARY_PATH). Needs a CUDA device, PyTorch and the Python headers:
# without them it says so ("not ok") and exits 1.
#   NCCL_GPU_PLUGIN=path  the plugin to load instead of building it
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
PY=${TORCH_PYTHON:-python3}
. tests/lib.sh # a clean environment
unset LD_PRELOAD
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "not ok - torch-nccl: $PY has no PyTorch with a CUDA device (set TORCH_PYTHON)"
    echo "0 passed, 1 failed"
    exit 1
fi
targets=(python-module)
[ -n "${NCCL_GPU_PLUGIN:-}" ] || targets+=(nccl-plugin)
if ! out=$(make --no-print-directory -s BUILD="$BUILD" PYMOD_PYTHON="$PY" "${targets[@]}" 2>&1); then
    echo "not ok - torch-nccl: make ${targets[*]} PYMOD_PYTHON=$PY"
    printf '%s\n' "$out" | tail -n 20 | sed 's/^/    # /'
    echo "0 passed, 1 failed"
    exit 1
fi
PLUGIN=${NCCL_GPU_PLUGIN:-$BUILD/libnccl-profiler-memobs.so}
PLUGIN_DIR=$(cd "$(dirname "$PLUGIN")" && pwd)
# the plugin by name: NCCL opens libnccl-profiler-memobs.so from the library path
[ "$(basename "$PLUGIN")" = libnccl-profiler-memobs.so ] || { echo "not ok - torch-nccl: $PLUGIN: not libnccl-profiler-memobs.so"; exit 1; }
PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$PLUGIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    NCCL_PROFILER_PLUGIN=memobs timeout 180 "$PY" tests/gpu/torch_nccl.py
