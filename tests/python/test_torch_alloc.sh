#!/usr/bin/env bash
# memobs.torch's allocator (python/memobs/_torch_alloc.c, inside the
# package's extension) without a GPU or PyTorch: the package is built with
# the CUDA headers (-Werror), the CUDA runtime double
# (tests/cuda/cudart_double.c) as a shared libcudart.so.13, and
# tests/python/torch_alloc_check.py binds the allocator to the double and
# calls it through ctypes as PyTorch would, one process per environment
# (the allocator reads it at binding). Also: the extension exports only
# PyInit__memobs, memobs_host_api (NCCL's profiler plugin looks it up) and
# the allocator's two functions, needs no libcudart,
# and run_model.py fails with one clear line where PyTorch is missing.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/torch_alloc
mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_PY_PRIORITY MEMOBS_PY_SKIP MEMOBS_PY_ROOT MEMOBS_PY_FRAMES MEMOBS_PY_HEAD MEMOBS_PY_TAIL \
    MEMOBS_PY_SOURCE_WIDTH MEMOBS_PY_TAKE_GIL MEMOBS_TORCH_SYNC MEMOBS_TORCH_TAKE_GIL MEMOBS_TORCH_STREAM_ORDERED

ok() { echo "ok - torch-alloc: $1"; }
bad() { echo "not ok - torch-alloc: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - torch-alloc: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi
if ! PYINC=$(python3-config --includes 2>/dev/null); then
    echo "not ok - torch-alloc: python3-config is missing (tests/deps.sh installs python3-dev)"
    exit 1
fi

# The package: python/memobs/*.py and the extension with the allocator.
build() {
    local pkg="$B/pkg/memobs" so
    rm -rf "$B/pkg" && mkdir -p "$pkg" && cp python/memobs/*.py python/memobs/*.pyi python/memobs/py.typed "$pkg/"
    so="$pkg/_memobs$(python3-config --extension-suffix)"
    if ! { $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC -DMEMOBS_PY_CUDA -DMEMOBS_PY_CUDA_LIB='"/nonexistent"' \
        python/memobs/_memobs.c -o "$so" &&
        $CC -std=c11 -O2 -g -fPIC -shared $W tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
            -Wl,-soname,libcudart.so.13 -pthread; } >"$B/build.log" 2>&1; then
        bad "build: the package with the allocator, the double as libcudart.so.13" "$(head -c 3000 "$B/build.log")"
        return 1
    fi
    if [ -s "$B/build.log" ]; then bad "build: no warnings" "$(head -n 20 "$B/build.log")"; return 1; fi
    local exports needed
    exports=$(nm -D --defined-only "$so" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')
    needed=$(readelf -d "$so" | awk '/NEEDED/ {print $NF}' | tr '\n' ' ')
    if [ "$exports" = "PyInit__memobs memobs_host_api memobs_torch_free memobs_torch_malloc " ] &&
        ! echo "$needed" | grep -q cuda; then
        ok "build: the extension exports PyInit__memobs, memobs_host_api, memobs_torch_malloc/free only; no libcudart needed"
    else
        bad "build: the extension exports PyInit__memobs, memobs_host_api, memobs_torch_malloc/free only; no libcudart needed" \
            "exports: $exports" "NEEDED: $needed"
        return 1
    fi
}

# check MODE [LABEL] [VAR=VALUE...]: one Python process; a deadlock is a failure
check() {
    local mode=$1 label=$2
    shift 2
    env PYTHONPATH="$PWD/$B/pkg" "$@" timeout 120 python3 tests/python/torch_alloc_check.py "$mode" \
        "$PWD/$B/libcudart.so.13" "$B" "$label" 2>"$B/$mode.err"
    local st=$?
    if [ $st -ne 0 ]; then
        [ $st -eq 124 ] && bad "${label}$mode: finished within 120 s (a deadlock?)"
        [ -s "$B/$mode.err" ] && sed 's/^/    # stderr: /' "$B/$mode.err" | head -n 30
        rc=1
    fi
}

rc=0
ROOT="MEMOBS_PY_ROOT=$PWD/tests/python"
if build; then
    ORD=MEMOBS_TORCH_STREAM_ORDERED=1
    check main "" "$ROOT" $ORD
    check nogil "" "$ROOT" MEMOBS_TORCH_TAKE_GIL=0 $ORD
    check sync "" "$ROOT"
    check sync "MEMOBS_TORCH_SYNC=1: " "$ROOT" MEMOBS_TORCH_SYNC=1 $ORD
    check hazard "" "$ROOT"
    check hazard_ordered "" "$ROOT" $ORD
    check env "" MEMOBS_PEAK_MIN=1M MEMOBS_PEAK_GROWTH=0 $ORD
    check off "" MEMOBS_PEAK_REPORT=0 MEMOBS_TORCH_SYNC=maybe MEMOBS_PY_PRIORITY= $ORD
fi

# The example's Python: it compiles, and without PyTorch it says so in one line.
if python3 -m py_compile examples/torch_allocator/run_model.py examples/torch_allocator/model_desc/tiny_llm.py \
    >"$B/pyc.log" 2>&1; then
    ok "run_model.py and model_desc/tiny_llm.py compile"
else
    bad "run_model.py and model_desc/tiny_llm.py compile" "$(head -n 10 "$B/pyc.log")"
fi
if python3 -c 'import torch' >/dev/null 2>&1; then
    echo "ok - torch-alloc: run_model.py without PyTorch # SKIP PyTorch is installed here"
else
    PYTHONPATH="$PWD/$B/pkg" python3 examples/torch_allocator/run_model.py >"$B/run.out" 2>"$B/run.err"
    st=$?
    if [ $st -eq 2 ] && [ "$(wc -l <"$B/run.err")" -eq 1 ] &&
        grep -q '^run_model.py: memobs.torch.use_allocator(): PyTorch is not installed' \
        "$B/run.err" && ! grep -q Traceback "$B/run.err" && [ ! -s "$B/run.out" ]; then
        ok "run_model.py without PyTorch: one line on stderr, exit status 2"
    else
        bad "run_model.py without PyTorch: one line on stderr, exit status 2" "exit status $st" \
            "$(cat "$B/run.err" "$B/run.out" | head -n 10)"
    fi
fi
exit $rc
