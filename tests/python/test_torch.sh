#!/usr/bin/env bash
# memobs.torch with real PyTorch on the CPU: Debian's python3-torch under
# the system Python (TORCH_PY, default /usr/bin/python3; tests/deps.sh
# installs it). tests/python/torch_check.py runs three ways: the package
# built with the CUDA headers under PyTorch (record_copy, copy, threads,
# bad input; use_allocator's errors and, given PyTorch 2's two allocator
# functions, its success with the CUDA runtime double as the runtime), the
# package built without them under PyTorch, and under the same interpreter
# with PyTorch out of sight (-S: no site-packages).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/torch
mkdir -p "$B"
CC=${CC:-cc}
TORCH_PY=${TORCH_PY:-/usr/bin/python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I."

. tests/lib.sh
unset MEMOBS_PY_PRIORITY MEMOBS_PY_SKIP MEMOBS_PY_ROOT MEMOBS_CUDART MEMOBS_TORCH_SYNC MEMOBS_TORCH_TAKE_GIL \
    MEMOBS_TORCH_STREAM_ORDERED

ok() { echo "ok - torch: $1"; }
bad() { echo "not ok - torch: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if ! "$TORCH_PY" -c 'import torch' >"$B/import.log" 2>&1; then
    bad "PyTorch under $TORCH_PY (Debian's python3-torch; tests/deps.sh installs it)" "$(tail -n 3 "$B/import.log")"
    exit 1
fi
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    bad "the CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 1
fi

# pkg DIR PYTHON [FLAGS...]: the package for that interpreter in DIR/memobs
pkg() {
    local dir=$1 py=$2
    shift 2
    rm -rf "$dir" && mkdir -p "$dir/memobs" && cp python/memobs/*.py python/memobs/*.pyi python/memobs/py.typed "$dir/memobs/"
    $CC -std=c99 -O2 -g -fPIC -shared $W $("$py-config" --includes) "$@" python/memobs/_memobs.c \
        -o "$dir/memobs/_memobs$("$py-config" --extension-suffix)"
}

rc=0
if pkg "$B/cuda" "$TORCH_PY" -DMEMOBS_PY_CUDA -I"$CUDA_INC" >"$B/build.log" 2>&1 &&
    pkg "$B/nocuda" "$TORCH_PY" >>"$B/build.log" 2>&1 && $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/cuda/cudart_double.c \
    -o "$B/libcudart.so.13" -Wl,-soname,libcudart.so.13 -pthread >>"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ]; then
    ok "build: the package for $TORCH_PY with and without the CUDA headers, the double (-Werror)"
else
    bad "build: the package for $TORCH_PY with and without the CUDA headers, the double (-Werror)" \
        "$(head -n 20 "$B/build.log")"
    exit 1
fi

run() { # run MODE PKGDIR PYTHON [OPTION]
    env PYTHONPATH="$PWD/$2" timeout 300 "$3" $4 tests/python/torch_check.py "$1" "$PWD/$B/libcudart.so.13" \
        2>"$B/$1.err"
    local st=$?
    if [ $st -ne 0 ]; then
        bad "$1: exit status 0" "exit status $st" "$(tail -n 20 "$B/$1.err")"
    elif [ -s "$B/$1.err" ]; then
        bad "$1: nothing on stderr" "$(head -n 20 "$B/$1.err")"
    fi
}
run torch "$B/cuda" "$TORCH_PY"
run nocuda "$B/nocuda" "$TORCH_PY"
run notorch "$B/cuda" "$TORCH_PY" -S
exit $rc
