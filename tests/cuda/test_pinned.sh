#!/usr/bin/env bash
# Pinned memory as asked and as held through memobs_cuda.h's wrappers
# (tests/cuda/test_pinned.c) against the CUDA runtime double, never
# libcudart: a pool that rounds asks up to powers of two (the table per
# size class, the ratio, the text, JSON, Prometheus and HTML outputs),
# threads at once with exact end figures, misuse counted and warned once,
# registered ranges and the runtime's refusals, the tracker's table full,
# memobs_reset. Built as C11, C++17, ASan+UBSan and TSan, each test in a
# fresh process with stderr empty; and with MEMOBS_DISABLE (the calls
# only).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/pinned
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"
. tests/lib.sh # a clean environment, sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - pinned: no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 1
fi
unset CUDADBL_NO_DRIVER CUDADBL_NO_CTXID CUDADBL_REPORT MEMOBS_CUDA_TIMING

TESTS="engine threads misuse register reset"

# run NAME BIN [VAR=VALUE...] -- TESTS...: each test in a fresh process
run() {
    local name=$1 bin=$2 envs=() t
    shift 2
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    for t in "$@"; do
        env "${envs[@]}" "$bin" "$t" 2>"$bin.err" | grep -v ' passed, .* failed$'
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        if [ -s "$bin.err" ]; then
            echo "not ok - pinned-$name: $t: nothing on stderr"
            sed 's/^/    # /' "$bin.err" | head -n 10
            rc=1
        fi
    done
}

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/pinned_$1"
    shift 4
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"pinned-$name\"" -c -o "$bin.o" tests/cuda/test_pinned.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm -ldl; } >"$bin.log" 2>&1; then
        echo "not ok - pinned-$name: build failed"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    if nm "$bin" | grep -q ' U cu'; then
        echo "not ok - pinned-$name: every CUDA symbol comes from the double"
        nm "$bin" | grep ' U cu' | sed 's/^/    # /'
        rc=1
    fi
    if [ "$name" = disable ]; then
        run "$name" "$bin" -- disabled
    else
        run "$name" "$bin" -- $TESTS
        run "$name" "$bin" MEMOBS_TRACK_CAPACITY=2 -- full
    fi
}

variant c11 "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g
variant cxx17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" -O2 -g
variant asan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
variant tsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fsanitize=thread
variant disable "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g -DMEMOBS_DISABLE
exit $rc
