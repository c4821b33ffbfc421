#!/usr/bin/env bash
# memobs_cuda.h's timed copies among the transfers in flight
# (tests/cuda/test_inflight_cuda.c: asynchronous copies in flight until
# their end event completes, a copy on a stream that never completes found
# stuck once, synchronous copies in flight for the call, nothing with timing
# off), against the CUDA runtime double, never libcudart; built as C11,
# C++17, ASan+UBSan and TSan, each test in a fresh process, stderr empty.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/inflight_cuda
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"
. tests/lib.sh # a clean environment, sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - inflight-cuda: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi
unset CUDADBL_NO_DRIVER CUDADBL_NO_CTXID CUDADBL_REPORT MEMOBS_CUDA_TIMING MEMOBS_STUCK_S

TESTS="async stuck sync untimed"

# run NAME BIN [VAR=VALUE...] -- TESTS...: each test in a fresh process
run() {
    local name=$1 bin=$2 envs=() t
    shift 2
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    for t in "$@"; do
        env "${envs[@]}" "$bin" "$t" 2>"$bin.err" | grep -v ' passed, .* failed$' |
            sed "s/^\(\(not \)\{0,1\}ok - \)inflight-cuda-[a-z0-9+]*: /\1inflight-cuda-$name: /"
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        if [ -s "$bin.err" ]; then
            echo "not ok - inflight-cuda-$name: $t: nothing on stderr"
            sed 's/^/    # /' "$bin.err" | head -n 10
            rc=1
        fi
    done
}

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/inflight_$1"
    shift 4
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"inflight-cuda-$name\"" -c -o "$bin.o" tests/cuda/test_inflight_cuda.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm -ldl; } >"$bin.log" 2>&1; then
        echo "not ok - inflight-cuda-$name: build failed"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    if nm "$bin" | grep -q ' U cu'; then
        echo "not ok - inflight-cuda-$name: every CUDA symbol comes from the double"
        nm "$bin" | grep ' U cu' | sed 's/^/    # /'
        rc=1
    fi
    run "$name" "$bin" -- $TESTS
}

variant c11 "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g
variant cxx17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" -O2 -g
variant asan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
variant tsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fsanitize=thread
exit $rc
