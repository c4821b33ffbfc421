#!/usr/bin/env bash
# memobs_cuda.h at exit and fork (issue 25), without a GPU: tests/cuda/test_cuda_stops.c
# linked with the CUDA runtime double (tests/cuda/cudart_double.c), which
# tears the runtime down at exit in a handler registered at its first call
# (as libcudart does), fails and reports on stderr every call made after
# it or in a forked child, and can make a stream stuck. Built four ways
# (C99 with the default exit wait of 2 s; C++17, ASan+UBSan and TSan with
# a 500 ms wait), each run
#   - teardown: sampler on/off x timing off/on with Stormlog and the JSON
#     summary at exit, and the device block tracked by hand (no wrapper
#     call: memobs learns CUDA is in use from its first device reading):
#     no CUDA call after the runtime's teardown, the exit outputs whole,
#     the last Stormlog sample's device figures marked "as of";
#   - stuck: a timed copy that never completes: the exit ends after the
#     wait (within 5x it, at least 10 s), the copy reported in flight, the
#     one behind it resolved, no synchronization;
#   - fork: a child with copies in flight and 100 children forked under 2
#     recording threads exit through every handler: no CUDA call, no
#     deadlock (each child has 60 s).
# Also the LD_PRELOAD library against the double as libcudart.so.13, with
# the sampler, Stormlog and timing on: no call after the teardown.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/cuda_stops
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I. -I$CUDA_INC"

. tests/lib.sh # json_check; a clean environment, sanitizer options
unset LD_PRELOAD CUDADBL_REPORT

if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "ok - cuda-stops: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
    exit 0
fi

# clean_err FILE N: FILE holds exactly N lines, each the double's report of
# a process with the teardown run and no call after it, in a child or
# waiting forever (anything else: a sanitizer, a warning, a call reported)
clean_err() {
    local n
    n=$(grep -cE '^cudart double: pid [0-9]+: teardown ran; 0 calls after it; 0 calls in a forked child; 0 waits forever$' "$1")
    [ "$n" = "$2" ] && [ "$(wc -l <"$1")" = "$2" ]
}

# variant NAME SUITE TESTCOMP DOUBLECOMP LINKER WAIT_MS FLAGS...
variant() {
    local name=$1 suite=$2 tcomp=$3 dcomp=$4 link=$5 wait=$6 bin="$B/stops_$1" out="$B/$1"
    shift 6
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    local def=""
    [ "$wait" != 2000 ] && def="-DMEMOBS_CUDA_EXIT_WAIT_MS=$wait"
    if ! { $dcomp "$@" $W -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
        $tcomp "$@" $W $def -DTEST_SUITE="\"$suite\"" -c -o "$bin.o" tests/cuda/test_cuda_stops.c &&
        $link "$@" -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm; } >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi

    # teardown
    local smp tim what args
    for what in "1 0" "1 1" "0 0" "0 1" "1 0 manual"; do
        set -- $what
        smp=$1 tim=$2 args="teardown $3"
        local tag="sampler $([ $smp = 1 ] && echo on || echo off), timing $([ $tim = 1 ] && echo on || echo off)${3:+, tracked by hand}"
        rm -f "$out.sl.json" "$out.sum.json"
        local envs=(CUDADBL_REPORT=1 MEMOBS_STORMLOG="$out.sl.json" MEMOBS_SUMMARY="$out.sum.json" MEMOBS_FORMAT=json
            MEMOBS_CUDA_TIMING=$tim)
        [ $smp = 1 ] && envs+=(MEMOBS_SAMPLE_MS=2)
        timeout 120 env "${envs[@]}" "$bin" $args >"$out.out" 2>"$out.err"
        local st=$?
        local sl_ok=1 sum_ok=1
        if [ $smp = 1 ]; then
            # the samples with the last figures read (taken once memobs had stopped asking) are
            # marked with when those were read; the first sample is not one, the last (the exit
            # writer's, after the sampler stopped) is
            json_check "$out.sl.json" '(lambda x: x[0]["metadata"].get("device_figures_as_of_ns") is None and "device_figures_as_of_ns" in x[-1]["metadata"] and x[-1]["device_used_bytes"] == 1048576 and all(e["metadata"]["device_figures_as_of_ns"] < e["timestamp_ns"] for e in x if "device_figures_as_of_ns" in e["metadata"]))(sorted((e for e in s if e["event_type"] == "sample"), key=lambda e: e["timestamp_ns"]))' >"$out.check" || sl_ok=0
            python3 tests/python/stormlog_check.py "$out.sl.json" --expect-device >>"$out.check" 2>&1 || sl_ok=0
        else
            json_check "$out.sl.json" 'isinstance(s, list)' >"$out.check" || sl_ok=0
        fi
        if [ $tim = 1 ] && [ -z "$3" ]; then
            json_check "$out.sum.json" 's["timed"]["unphased"]["h2d"]["count"] == 3 and s["timed"]["in_flight_copies"] == 0' timed >>"$out.check" || sum_ok=0
        else
            json_check "$out.sum.json" 's["memory"]["device"]["live"] == 1' memory >>"$out.check" || sum_ok=0
        fi
        if [ $st = 0 ] && [ "$(grep -c '^ok - ' "$out.out")" = 2 ] && ! grep -q '^not ok' "$out.out" &&
            clean_err "$out.err" 1 && [ $sl_ok = 1 ] && [ $sum_ok = 1 ]; then
            ok "teardown ($tag): no CUDA call after the runtime's teardown; Stormlog and summary whole$([ $smp = 1 ] && echo "; the last sample's device figures \"as of\" before it; Stormlog schema v2")"
        else
            bad "teardown ($tag): no CUDA call after the runtime's teardown; Stormlog and summary whole" \
                "exit status $st" "$(cat "$out.out" "$out.check")" "$(head -n 12 "$out.err")"
        fi
    done

    # stuck: the exit ends after the wait, bounded
    local limit=$((wait * 5 / 1000))
    [ $limit -lt 10 ] && limit=10
    rm -f "$out.sum.json"
    local t0 t1 ms
    t0=$(date +%s%N)
    timeout $limit env CUDADBL_REPORT=1 MEMOBS_SUMMARY="$out.sum.json" MEMOBS_FORMAT=json "$bin" stuck >"$out.out" 2>"$out.err"
    st=$?
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    if [ $st = 0 ] && [ $ms -ge $wait ] && grep -q '^ok - ' "$out.out" && clean_err "$out.err" 1 &&
        json_check "$out.sum.json" 's["timed"]["in_flight_copies"] == 1 and s["timed"]["in_flight_bytes"] == 1000 and s["timed"]["unphased"]["h2d"]["count"] == 1 and s["timed"]["unphased"]["h2d"]["bytes"] == 2000 and s["memory"]["device"]["pending_frees"] == 1' >"$out.check"; then
        ok "stuck copy at exit: ended after the ${wait} ms wait (${ms} ms, limit ${limit} s); in flight 1 (1000 bytes), the copy behind it resolved, the free pending; no synchronization"
    else
        bad "stuck copy at exit: ended after the ${wait} ms wait (limit ${limit} s); in flight 1, the copy behind it resolved" \
            "exit status $st after $ms ms" "$(cat "$out.out" "$out.check")" "$(head -n 12 "$out.err")"
    fi

    # fork (LeakSanitizer off: in a child it cannot suspend the parent's threads, which the child
    # does not have, and says so; the other modes check leaks. TSan's sleep at exit, 1 s while it
    # counts other threads, off: a child counts its parent's, has none of them to race with its
    # exit, and 101 children would sleep 101 s while the parent's two threads spin)
    timeout 600 env CUDADBL_REPORT=1 MEMOBS_SUMMARY=/dev/null ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
        TSAN_OPTIONS="$TSAN_OPTIONS:atexit_sleep_ms=0" "$bin" fork >"$out.out" 2>"$out.err"
    st=$?
    grep -E '^(not )?ok - ' "$out.out"
    if [ $st = 0 ] && clean_err "$out.err" 102; then
        ok "fork: 102 processes (1 parent, 101 children) exited; no CUDA call in a child, none after a teardown"
    else
        bad "fork: 102 processes (1 parent, 101 children) exited; no CUDA call in a child, none after a teardown" \
            "exit status $st" "$(grep -v '^ok - ' "$out.out" | head -n 10)" "$(grep -v ': 0 calls after it; 0 calls in a forked child; 0 waits forever$' "$out.err" | head -n 12)"
    fi
}

rc=${rc:-0}
SAN="-fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
variant c99 cuda-stops-c99 "$CC -std=c99" "$CC -std=c11" "$CC" 2000 -O2 -g
variant cxx17 cuda-stops-c++17 "$CXX -x c++ -std=c++17" "$CXX -x c++ -std=c++17" "$CXX" 500 -O2 -g
variant asan cuda-stops-asan+ubsan "$CC -std=c11" "$CC -std=c11" "$CC" 500 -O1 -g $SAN
variant tsan cuda-stops-tsan "$CC -std=c11" "$CC -std=c11" "$CC" 500 -O1 -g -fsanitize=thread

# the LD_PRELOAD library: its interposers are the CUDA calls memobs sees
P=$B/preload
mkdir -p "$P"
if make -s BUILD="$P" preload >"$P/make.log" 2>&1 &&
    $CC -std=c11 -O2 -g -fPIC -shared $W tests/cuda/cudart_double.c -o "$P/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread >>"$P/make.log" 2>&1 &&
    $CC -std=c11 -O2 -g $W tests/preload/test_preload.c -o "$P/test_preload" -L"$P" -l:libcudart.so.13 -ldl >>"$P/make.log" 2>&1; then
    for m in main threads graphs; do
        rm -f "$P/$m.sl.json" "$P/$m.json"
        timeout 120 env LD_LIBRARY_PATH="$PWD/$P" LD_PRELOAD="$PWD/$P/libmemobs_preload.so" CUDADBL_REPORT=1 \
            MEMOBS_SAMPLE_MS=2 MEMOBS_STORMLOG="$P/$m.sl.json" MEMOBS_SUMMARY="$P/$m.json" MEMOBS_FORMAT=json \
            MEMOBS_CUDA_TIMING=1 MEMOBS_OOM_REPORT=0 "$P/test_preload" $m >"$P/$m.out" 2>"$P/$m.err"
        st=$?
        if [ $st = 0 ] && clean_err "$P/$m.err" 1 && json_check "$P/$m.sl.json" 'isinstance(s, list)' >"$P/$m.check" &&
            json_check "$P/$m.json" 's["timed"]["in_flight_copies"] == 0' timed >>"$P/$m.check"; then
            echo "ok - cuda-stops-preload: $m with the sampler, Stormlog and timing on: no CUDA call after the runtime's teardown"
        else
            echo "not ok - cuda-stops-preload: $m with the sampler, Stormlog and timing on: no CUDA call after the runtime's teardown"
            { echo "exit status $st"; cat "$P/$m.check"; head -n 12 "$P/$m.err"; } | sed 's/^/    # /'
            rc=1
        fi
    done
else
    echo "not ok - cuda-stops-preload: build"
    head -c 2000 "$P/make.log" | sed 's/^/    # /'
    rc=1
fi
exit $rc
