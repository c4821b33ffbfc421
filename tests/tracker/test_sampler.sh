#!/usr/bin/env bash
# tests/tracker/test_sampler.c (background worker, host memory sampler, leak
# detector, Stormlog writer) built four ways: C99, C++17, ASan+UBSan, TSan;
# each runs the in-process tests (fork while sampling included) and the
# environment modes. The leak programs (an mmap leak, a malloc leak, malloc
# churn) run in the C99 build only (sanitizers change the heap they fit).
# Stormlog files are checked by tests/python/stormlog_check.py, whose
# selftest must reject broken records; tests/tracker/test_sampler_cuda.c adds
# device samples, peak and out-of-memory events against the CUDA double.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/sampler
mkdir -p "$B"
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I."
rc=0

. tests/lib.sh
unset MEMOBS_SAMPLE_MS MEMOBS_SAMPLES MEMOBS_LEAK_WINDOW_S MEMOBS_STORMLOG

ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
# validate NAME FILE ARGS...: the Stormlog validator on FILE
validate() {
    local name=$1 file=$2 out
    shift 2
    if out=$(python3 tests/python/stormlog_check.py "$file" "$@" 2>&1); then ok "$name"; else bad "$name" "$out"; fi
}

run_variant() { # name suite: sampler_NAME as mk/tests.mk makes it
    local name=$1 bin="$B/sampler_$1" out="$B/$1"
    suite=$2
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    "$bin" 2>"$out.err" || rc=1
    if [ -s "$out.err" ]; then bad "in-process tests: nothing on stderr" "$(head -n 10 "$out.err")"; fi
    mode() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        env "${envs[@]}" "$bin" "$@" 2>"$out.err" | grep -v ' passed, .* failed$'
        if [ "${PIPESTATUS[0]}" -ne 0 ]; then rc=1; sed 's/^/    # stderr: /' "$out.err" | head -n 10; fi
    }
    mode MEMOBS_SAMPLES=5 -- ring
    mode MEMOBS_SAMPLE_MS=3 -- env_sampling
    mode MEMOBS_SAMPLE_MS=abc MEMOBS_SAMPLES=1 MEMOBS_LEAK_WINDOW_S=0 -- env_defaults
    if [ "$(wc -l <"$out.err")" -eq 3 ] &&
        grep -q "^memobs: warning: MEMOBS_SAMPLE_MS='abc' is not a non-negative integer; ignored$" "$out.err" &&
        grep -q "^memobs: warning: MEMOBS_SAMPLES=1: must be at least 2; using 4096$" "$out.err" &&
        grep -q "^memobs: warning: MEMOBS_LEAK_WINDOW_S=0: must be at least 1; using 120$" "$out.err"; then
        ok "malformed MEMOBS_SAMPLE_MS, MEMOBS_SAMPLES, MEMOBS_LEAK_WINDOW_S: one warning each"
    else
        bad "malformed MEMOBS_SAMPLE_MS, MEMOBS_SAMPLES, MEMOBS_LEAK_WINDOW_S: one warning each" "$(cat "$out.err")"
    fi
    # A hang is bounded by timeout(1), not judged by the clock: 60 s is far
    # beyond any real run (about 50 ms) and far below forever; a wall-clock
    # limit of a few seconds can pass by on a loaded machine (TSan, 2 cores).
    local st t0=$SECONDS
    timeout -s KILL 60 "$bin" exit_running 2>"$out.err" | grep -v ' passed, .* failed$'
    st=${PIPESTATUS[0]}
    if [ "$st" -eq 0 ] && [ ! -s "$out.err" ]; then ok "exit with the worker running: no hang, no task after the exit handler"
    else bad "exit with the worker running: no hang, no task after the exit handler" \
        "exit status $st after $((SECONDS - t0)) s (137: killed after 60 s, a hang)" "$(cat "$out.err")"; fi
    rm -f "$out.storm.json"
    mode MEMOBS_PEAK_MIN=1M -- stormlog "$out.storm.json"
    validate "Stormlog: odd job id and tag, host samples and a peak event pass the schema" "$out.storm.json" --expect peak
    rm -f "$out".storm_t*.json
    mode MEMOBS_PEAK_MIN=1M -- stormlog_threads "$out.storm_t%d.json"
    local f bad_files=""
    for f in "$out".storm_t*.json; do
        python3 tests/python/stormlog_check.py "$f" >/dev/null 2>&1 || bad_files="$bad_files $f"
    done
    if [ "$(ls "$out".storm_t*.json 2>/dev/null | wc -l)" -eq 20 ] && [ -z "$bad_files" ]; then
        ok "Stormlog: 20 files written while 4 threads allocate and the sampler runs all pass the schema"
    else
        bad "Stormlog: 20 files written while 4 threads allocate and the sampler runs all pass the schema" \
            "files: $(ls "$out".storm_t*.json 2>/dev/null | wc -l); failing:$bad_files" \
            "$(python3 tests/python/stormlog_check.py ${bad_files%% *} 2>&1 | head -n 5)"
    fi
    rm -f "$out".env_*.json
    mode MEMOBS_SAMPLE_MS=2 MEMOBS_STORMLOG="$out.env_%p.json" -- env_sampling
    validate "MEMOBS_STORMLOG=path (%p) written at exit, with MEMOBS_SAMPLE_MS" "$(ls "$out".env_*.json 2>/dev/null | head -n 1)"
    mode MEMOBS_SAMPLE_MS=2 MEMOBS_STORMLOG=/nonexistent/dir/s.json -- env_sampling
    if [ "$(wc -l <"$out.err")" -eq 1 ] && grep -q "cannot write the Stormlog telemetry to '/nonexistent/dir/s.json': cannot create a temporary file in its folder" "$out.err"; then
        ok "MEMOBS_STORMLOG to an unwritable path: one warning, exit status 0"
    else
        bad "MEMOBS_STORMLOG to an unwritable path: one warning, exit status 0" "$(cat "$out.err")"
    fi
    [ "$name" = c99 ] || return
    rm -f "$out.mmap.json"
    mode -- leak_mmap "$out.mmap.json"
    cp "$out.err" "$out.leak_line"
    # R^2 is printed cut to two decimals: 0.90 to 0.99, or 1.00 for an exact line
    if grep -Eq '^  memory mapped outside malloc is growing at [0-9]+\.[0-9] MB/min \(R\^2 = (0\.9[0-9]|1\.00)\)$' "$out.err"; then
        ok "mmap leak: the summary line, R^2 >= 0.9"
    else
        bad "mmap leak: the summary line, R^2 >= 0.9" "$(cat "$out.err")"
    fi
    validate "Stormlog of the mmap leak passes the schema" "$out.mmap.json"
    mode -- leak_malloc
    mode -- churn
}

suite=sampler-python
if out=$(python3 tests/python/stormlog_check.py --selftest 2>&1); then
    ok "the Stormlog validator rejects broken records and files (floats, bools, ranges, used+free, rank, keys, JSON Lines)"
else
    bad "the Stormlog validator rejects broken records and files" "$out"
fi

run_variant c99 sampler-c99
run_variant cxx17 sampler-c++17
run_variant asan sampler-asan+ubsan # these two with -DTEST_FORK_NO_THREADS
run_variant tsan sampler-tsan

suite=sampler-cuda
if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    for v in c99 tsan; do
        flags="-O1 -g"
        [ $v = tsan ] && flags="$flags -fsanitize=thread"
        bin="$B/cuda_$v"
        if ! { $CC -std=c11 $flags $W -I"$CUDA_INC" -c -o "$bin.double.o" tests/cuda/cudart_double.c &&
            $CC -std=c99 $flags $W -I"$CUDA_INC" -c -o "$bin.o" tests/tracker/test_sampler_cuda.c &&
            $CC $flags -o "$bin" "$bin.o" "$bin.double.o" -pthread -lm; } >"$bin.log" 2>&1; then
            bad "$v: build failed" "$(head -n 20 "$bin.log")"
            continue
        fi
        rm -f "$bin.json"
        MEMOBS_PEAK_MIN=1M MEMOBS_OOM_REPORT=0 "$bin" "$bin.json" 2>"$bin.err" | grep -E '^(not )?ok - |^    # ' || rc=1
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
        if [ -s "$bin.err" ]; then bad "$v: nothing on stderr" "$(head -n 10 "$bin.err")"; fi
        validate "$v: device samples, peak and oom events with odd strings pass the schema" "$bin.json" \
            --expect-device --expect peak --expect oom
    done
else
    echo "ok - sampler-cuda: # SKIP no CUDA headers in $CUDA_INC (set CUDA_INC)"
fi
exit $rc
