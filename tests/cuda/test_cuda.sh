#!/usr/bin/env bash
# The CUDA wrappers of memobs_cuda.h, tested without a GPU: tests/cuda/test_cuda.c
# is built against the real CUDA headers and linked with the runtime double
# tests/cuda/cudart_double.c instead of libcudart. First the double's own
# selftest (tests/cuda/selftest.sh), then five builds: C99, C++17,
# ASan+UBSan, TSan and per-thread default stream
# (CUDA_API_PER_THREAD_DEFAULT_STREAM: the wrappers then call
# cudaMemcpyAsync_ptsz...), each running the in-process tests (stderr must
# stay empty) and one fresh process per out-of-memory/environment case;
# and a sixth with MEMOBS_DISABLE (the wrappers only make their calls).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/cuda
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"

. tests/lib.sh # json_check; a clean environment, sanitizer options

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - cuda: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi

bash tests/cuda/selftest.sh || rc=1

# variant NAME SUITE TESTCOMP DOUBLECOMP LINKER FLAGS...: the double is
# built with DOUBLECOMP (it needs C11 as C), the tests with TESTCOMP, both
# with FLAGS, and linked by LINKER (no libcudart)
variant() {
    local name=$1 suite=$2 tcomp=$3 dcomp=$4 link=$5 bin="$B/cuda_$1" out="$B/$1"
    shift 5
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W -DTEST_SUITE="\"$suite\"" -c -o "$bin.o" tests/cuda/test_cuda.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -rdynamic -lm; } >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    if nm "$bin" | grep -q ' U cuda'; then
        bad "every CUDA symbol comes from the double" "$(nm "$bin" | grep ' U cuda')"
    fi
    # in-process tests; stderr must stay empty (no report, no warning)
    "$bin" 2>"$out.err" || rc=1
    local quiet="in-process tests: nothing on stderr"
    [ "$name" = disable ] && quiet="MEMOBS_DISABLE: nothing written (no out-of-memory report either)"
    if [ -s "$out.err" ]; then bad "$quiet" "$(head -n 20 "$out.err")"; else ok "$quiet"; fi
    [ "$name" = disable ] && return

    # mode VAR=VALUE... -- MODE [ARGS]: one fresh process; stdout's ok lines
    # shown, stderr kept in $out.err
    mode() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        env "${envs[@]}" "$bin" "$@" 2>"$out.err" | grep -v ' passed, .* failed$'
        if [ "${PIPESTATUS[0]}" -ne 0 ]; then rc=1; sed 's/^/    # stderr: /' "$out.err" | head -n 10; fi
    }
    local hdr='^memobs: \[rank 0\] cudaMalloc(2097152 bytes, 2.10 MB) failed: cudaErrorMemoryAllocation (out of memory 1 of 3)$'

    rm -f "$out.oom"
    mode -- oom_file "$out.oom"
    if [ -s "$out.err" ]; then bad "out-of-memory reports to a file: nothing on stderr" "$(head -n 5 "$out.err")"; fi

    mode -- oom_one
    if grep -q "$hdr" "$out.err" && grep -q '^== memobs summary ==' "$out.err" &&
        grep -q '^== memobs allocations == ' "$out.err"; then
        ok "out-of-memory report on stderr by default"
    else
        bad "out-of-memory report on stderr by default" "$(head -n 8 "$out.err")"
    fi
    rm -f "$out".oomenv_*
    mode MEMOBS_OOM_REPORT="$out.oomenv_%p.txt" -- oom_one
    local f
    f=$(ls "$out".oomenv_*.txt 2>/dev/null | head -n 1)
    if [ -n "$f" ] && grep -q "$hdr" "$f" && [ ! -s "$out.err" ]; then
        ok "MEMOBS_OOM_REPORT=path (%p expanded)"
    else
        bad "MEMOBS_OOM_REPORT=path (%p expanded)" "file: $f" "stderr: $(head -n 3 "$out.err")"
    fi
    rm -f "$out".oomenv_*
    mode MEMOBS_OOM_REPORT=stdout -- oom_one >"$out.stdout"
    if grep -q "$hdr" "$out.stdout" && [ ! -s "$out.err" ]; then
        ok "MEMOBS_OOM_REPORT=stdout"
    else
        bad "MEMOBS_OOM_REPORT=stdout" "$(head -n 3 "$out.stdout")"
    fi
    grep -E '^(not )?ok - ' "$out.stdout"
    mode MEMOBS_OOM_REPORT=0 -- oom_one
    if [ ! -s "$out.err" ]; then ok "MEMOBS_OOM_REPORT=0: counted, written nowhere"; else
        bad "MEMOBS_OOM_REPORT=0: counted, written nowhere" "$(head -n 3 "$out.err")"; fi
    mode -- oom_off
    if [ ! -s "$out.err" ]; then ok "memobs switched off, memobs_cuda_set_oom_report(off/NULL): nothing written"; else
        bad "memobs switched off, memobs_cuda_set_oom_report(off/NULL): nothing written" "$(head -n 3 "$out.err")"; fi

    rm -f "$out.json"
    mode MEMOBS_CUDA_TIMING=1 -- timing_env "$out.json"
    if json_check "$out.json" 's["timed"]["prefill"]["h2d"] == {"bytes": 96, "count": 2, "ns": 4000000} and s["timed"]["in_flight_copies"] == 1 and s["timed"]["in_flight_bytes"] == 16' timed; then
        ok "MEMOBS_CUDA_TIMING=1: copies timed; JSON timed section"
    else
        bad "MEMOBS_CUDA_TIMING=1: copies timed; JSON timed section"
    fi
    mode MEMOBS_CUDA_TIMING=maybe -- timing_off
    if [ "$(wc -l <"$out.err")" -eq 1 ] &&
        grep -q "^memobs: warning: MEMOBS_CUDA_TIMING='maybe' is not 0/1/on/off; timing stays off$" "$out.err"; then
        ok "MEMOBS_CUDA_TIMING malformed: one warning, timing off"
    else
        bad "MEMOBS_CUDA_TIMING malformed: one warning, timing off" "$(cat "$out.err")"
    fi
}

rc=${rc:-0}
SAN="-fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
variant c99 cuda-c99 "$CC -std=c99" "$CC -std=c11" "$CC" -O2 -g
variant cxx17 cuda-c++17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" -O2 -g
variant asan cuda-asan+ubsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g $SAN
variant tsan cuda-tsan "$CC -std=c11" "$CC -std=c11" "$CC" -O1 -g -fsanitize=thread
variant ptds cuda-ptds "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g -DCUDA_API_PER_THREAD_DEFAULT_STREAM
variant disable cuda-disable "$CC -std=c11" "$CC -std=c11" "$CC" -O2 -g -DMEMOBS_DISABLE
exit $rc
