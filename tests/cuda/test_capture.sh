#!/usr/bin/env bash
# memobs_cuda.h against the runtime's rules on capture, graphs, the last
# error, contexts, default streams and cudaDeviceReset (tests/cuda/test_capture.c),
# linked with the CUDA runtime double (tests/cuda/cudart_double.c), never
# with libcudart: C11, C++17, ASan+UBSan, TSan (a capture in each mode while
# another thread records, polls and writes summaries), and a per-thread
# default stream build (CUDA_API_PER_THREAD_DEFAULT_STREAM, what nvcc
# --default-stream per-thread defines). stderr must stay empty.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/capture
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"
. tests/lib.sh # a clean environment, sanitizer options
rc=0
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - capture: no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 1
fi

# variant NAME TESTCOMP DOUBLECOMP LINKER FLAGS...
variant() {
    local name=$1 tcomp=$2 dcomp=$3 link=$4 bin="$B/capture_$1"
    shift 4
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"capture-$name\"" -c -o "$bin.o" tests/cuda/test_capture.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm -ldl; } >"$bin.log" 2>&1; then
        echo "not ok - capture-$name: build failed"
        sed 's/^/    # /' "$bin.log" | head -n 30
        rc=1
        return
    fi
    if nm "$bin" | grep -q ' U cu'; then
        echo "not ok - capture-$name: every CUDA symbol comes from the double"
        nm "$bin" | grep ' U cu' | sed 's/^/    # /'
        rc=1
    fi
    "$bin" 2>"$bin.err" | grep -v ' passed, .* failed$'
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    if [ -s "$bin.err" ]; then
        echo "not ok - capture-$name: nothing on stderr"
        sed 's/^/    # /' "$bin.err" | head -n 20
        rc=1
    else
        echo "ok - capture-$name: nothing on stderr"
    fi
    # no driver library at all
    CUDADBL_NO_DRIVER=1 "$bin" no_driver 2>"$bin.err" | grep -v ' passed, .* failed$'
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    # at exit: the copies in flight resolved before the summary, no CUDA call after
    rm -f "$bin.sum"
    MEMOBS_SUMMARY="$bin.sum" "$bin" exit_resolve >"$bin.out" 2>"$bin.err"
    local st=$?
    if [ $st -eq 0 ] && grep -q '^in flight at exit: [1-9]' "$bin.out" &&
        grep -q '^  H2D decode     |    1.00 KB        1    1.00 ms' "$bin.sum" &&
        grep -q '^  D2H decode     |    3.00 KB        1    1.00 ms' "$bin.sum" &&
        grep -q '^  in flight: 0 timed copies' "$bin.sum" &&
        grep -qx "driver calls after memobs' exit handler: 0; in flight then: 0" "$bin.err"; then
        echo "ok - capture-$name: copies in flight at exit resolved before the summary, no CUDA call after"
    else
        echo "not ok - capture-$name: copies in flight at exit resolved before the summary, no CUDA call after"
        echo "    # exit status $st"
        cat "$bin.out" "$bin.err" "$bin.sum" 2>/dev/null | sed 's/^/    # /' | head -n 40
        rc=1
    fi
}

variant c11 "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g
variant cxx17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" -O2 -g
variant asan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
variant tsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fsanitize=thread
variant ptds "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g -DCUDA_API_PER_THREAD_DEFAULT_STREAM
exit $rc
