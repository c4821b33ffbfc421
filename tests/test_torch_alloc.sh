#!/usr/bin/env bash
# examples/torch_allocator/memobs_torch_alloc.c (the PyTorch pluggable
# allocator) without a GPU or PyTorch: built as a shared library with the
# CUDA runtime double (tests/cuda/cudart_double.c) compiled in instead of
# libcudart, as C99 and as C++17, then driven from Python through ctypes by
# tests/python/torch_alloc_check.py, one process per environment (the
# library reads it at load). Also: the build mk/torch.mk makes (real
# libcudart, no libpython) links, and run_model.py fails with one clear
# line where PyTorch is missing.
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build/tests}/torch_alloc
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
CUDA_LIB=${CUDA_LIB:-/usr/local/cuda/lib64}
SRC=examples/torch_allocator/memobs_torch_alloc.c
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

# build NAME COMPILER...: $B/libmemobs_torch_alloc_NAME.so, the double inside
build() {
    local name=$1 so="$B/libmemobs_torch_alloc_$1.so"
    shift
    if ! { $CC -std=c11 -O2 -g -fPIC $W -c tests/cuda/cudart_double.c -o "$B/double.o" &&
        "$@" -O2 -g -fPIC -shared $W $PYINC "$SRC" -x none "$B/double.o" -o "$so" -pthread; } >"$B/build_$name.log" 2>&1; then
        bad "$name build with the CUDA double" "$(head -c 3000 "$B/build_$name.log")"
        return 1
    fi
    if [ -s "$B/build_$name.log" ]; then bad "$name build: no warnings" "$(head -n 20 "$B/build_$name.log")"; return 1; fi
    local exports undef
    exports=$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 ~ /^memobs_torch_/ {print $3}' | sort | tr '\n' ' ')
    undef=$(nm -D --undefined-only "$so" | awk '$2 ~ /^cuda/')
    if [ "$exports" = "memobs_torch_free memobs_torch_malloc memobs_torch_report " ] && [ -z "$undef" ]; then
        ok "$name build: exports memobs_torch_malloc/free/report; every CUDA symbol from the double"
    else
        bad "$name build: exports memobs_torch_malloc/free/report; every CUDA symbol from the double" \
            "exports: $exports" "undefined CUDA symbols: $undef"
        return 1
    fi
}

# check MODE SO [LABEL] [VAR=VALUE...]: one Python process; a deadlock is a failure
check() {
    local mode=$1 so=$2 label=$3
    shift 3
    env "$@" timeout 120 python3 tests/python/torch_alloc_check.py "$mode" "$so" "$B" "$label" 2>"$B/$mode.err"
    local st=$?
    if [ $st -ne 0 ]; then
        [ $st -eq 124 ] && bad "${label}$mode: finished within 120 s (a deadlock?)"
        [ -s "$B/$mode.err" ] && sed 's/^/    # stderr: /' "$B/$mode.err" | head -n 30
        rc=1
    fi
}

rc=0
ROOT="MEMOBS_PY_ROOT=$PWD/tests/python"
if build c99 "$CC" -std=c99; then
    SO="$PWD/$B/libmemobs_torch_alloc_c99.so"
    SO_ORD=MEMOBS_TORCH_STREAM_ORDERED=1
    check main "$SO" "" "$ROOT" $SO_ORD
    check nogil "$SO" "" "$ROOT" MEMOBS_TORCH_TAKE_GIL=0 $SO_ORD
    check sync "$SO" "" "$ROOT"
    check sync "$SO" "MEMOBS_TORCH_SYNC=1: " "$ROOT" MEMOBS_TORCH_SYNC=1 $SO_ORD
    check hazard "$SO" "" "$ROOT"
    check hazard_ordered "$SO" "" "$ROOT" $SO_ORD
    check env "$SO" "" MEMOBS_PEAK_MIN=1M MEMOBS_PEAK_GROWTH=0 $SO_ORD
    check off "$SO" "" MEMOBS_PEAK_REPORT=0 MEMOBS_TORCH_SYNC=maybe MEMOBS_PY_PRIORITY= $SO_ORD
fi
if build c++17 "$CXX" -x c++ -std=c++17; then
    check main "$PWD/$B/libmemobs_torch_alloc_c++17.so" "c++17 build: " "$ROOT" MEMOBS_TORCH_STREAM_ORDERED=1
fi

# What `make torch-alloc` builds: the real runtime, Python's symbols left to
# the process that loads it.
if [ -f "$CUDA_LIB/libcudart.so" ]; then
    real="$B/libmemobs_torch_alloc.so"
    if $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC "$SRC" -o "$real" -L"$CUDA_LIB" -lcudart -pthread \
        >"$B/build_real.log" 2>&1 && [ ! -s "$B/build_real.log" ]; then
        needed=$(readelf -d "$real" | awk '/NEEDED/ {print $NF}' | tr '\n' ' ')
        if echo "$needed" | grep -q 'libcudart' && ! echo "$needed" | grep -q 'libpython'; then
            ok "build with libcudart: links, needs libcudart and not libpython"
        else
            bad "build with libcudart: links, needs libcudart and not libpython" "NEEDED: $needed"
        fi
    else
        bad "build with libcudart: links, needs libcudart and not libpython" "$(head -n 20 "$B/build_real.log")"
    fi
else
    echo "ok - torch-alloc: build with libcudart # SKIP no $CUDA_LIB/libcudart.so"
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
    python3 examples/torch_allocator/run_model.py "$PWD/$B/libmemobs_torch_alloc_c99.so" >"$B/run.out" 2>"$B/run.err"
    st=$?
    if [ $st -eq 2 ] && [ "$(wc -l <"$B/run.err")" -eq 1 ] && grep -q '^run_model.py: PyTorch is not installed' \
        "$B/run.err" && ! grep -q Traceback "$B/run.err" && [ ! -s "$B/run.out" ]; then
        ok "run_model.py without PyTorch: one line on stderr, exit status 2"
    else
        bad "run_model.py without PyTorch: one line on stderr, exit status 2" "exit status $st" \
            "$(cat "$B/run.err" "$B/run.out" | head -n 10)"
    fi
fi
exit $rc
