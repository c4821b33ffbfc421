#!/usr/bin/env bash
# Five rules of NVIDIA's documentation that memobs_cuda.h follows, each
# enforced by the CUDA runtime double (tests/cuda/test_cuda_review.c: captures by
# stream, the legacy stream of peer copies, the retain race, contexts at a
# reused address, pool allocations), built as C11, C++17, ASan+UBSan, TSan
# and with per-thread default streams (CUDA_API_PER_THREAD_DEFAULT_STREAM),
# never with libcudart; each test in a fresh process, stderr empty. Then
# the same without cuCtxGetId (a driver before CUDA 12.0: contexts known by
# address alone) for the tests that do not need it.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/cuda_review
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"
. tests/lib.sh # a clean environment, sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - cuda-review: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi
unset CUDADBL_NO_DRIVER CUDADBL_NO_CTXID CUDADBL_REPORT MEMOBS_CUDA_TIMING

TESTS="captures captures_per_thread captures_full peer_legacy retain_race contexts pools"

# run NAME BIN [VAR=VALUE...] -- TESTS...: each test in a fresh process
run() {
    local name=$1 bin=$2 envs=() t
    shift 2
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    for t in "$@"; do
        env "${envs[@]}" "$bin" "$t" 2>"$bin.err" | grep -v ' passed, .* failed$' |
            sed "s/^\(\(not \)\{0,1\}ok - \)cuda-review-[a-z0-9+]*: /\1cuda-review-$name: /"
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        if [ -s "$bin.err" ]; then
            echo "not ok - cuda-review-$name: $t: nothing on stderr"
            sed 's/^/    # /' "$bin.err" | head -n 10
            rc=1
        fi
    done
}

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/review_$1"
    shift 4
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"cuda-review-$name\"" -c -o "$bin.o" tests/cuda/test_cuda_review.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm -ldl; } >"$bin.log" 2>&1; then
        echo "not ok - cuda-review-$name: build failed"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    if nm "$bin" | grep -q ' U cu'; then
        echo "not ok - cuda-review-$name: every CUDA symbol comes from the double"
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
variant ptds "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g -DCUDA_API_PER_THREAD_DEFAULT_STREAM
# no cuCtxGetId: the tests that do not tell two contexts at one address apart
[ -x "$B/review_c11" ] && run c11-no-ctxid "$B/review_c11" CUDADBL_NO_CTXID=1 -- captures peer_legacy retain_race pools
exit $rc
