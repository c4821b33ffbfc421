#!/usr/bin/env bash
# tests/test_timeline.c (the timeline and its Chrome trace) built four ways:
# C99, C++17, ASan+UBSan, TSan; each runs the in-process tests, then one
# fresh process per scenario, whose trace tests/python/chrome_trace_check.py
# parses (json module) and checks, then the environment: MEMOBS_TRACE
# written at exit, MEMOBS_TRACE_EVENTS, malformed values.
cd "$(dirname "$0")/.." || exit 2
B=${BUILD:-build/tests}/timeline
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror -I."
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_TRACE MEMOBS_TRACE_EVENTS

run_variant() { # name suite compiler flags...
    local name=$1 suite=$2 comp=$3 bin="$B/timeline_$1" out="$B/$1" sc
    shift 3
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! $comp "$@" $W -DTEST_SUITE="\"$suite\"" -o "$bin" tests/test_timeline.c -pthread >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    # in-process tests
    "$bin" || rc=1

    # scenarios: the program writes a trace, the checker parses it
    for sc in known overflow escape threads order fork off; do
        rm -f "$out.$sc.json"
        if ! "$bin" "$sc" "$out.$sc.json" >"$out.$sc.out" 2>"$out.$sc.err"; then
            bad "$sc: the program failed" "$(cat "$out.$sc.out" "$out.$sc.err" | head -n 10)"
            continue
        fi
        if [ $sc = off ]; then
            # a trace of nothing: one warning saying why
            if [ "$(wc -l <"$out.$sc.err")" -eq 1 ] &&
                grep -q '^memobs: warning: memobs_write_chrome_trace: the timeline is off, so this trace holds no events: turn it on with memobs_timeline_enable(N)' "$out.$sc.err"; then
                ok "off: one warning on stderr says the timeline was off"
            else
                bad "off: one warning on stderr says the timeline was off" "$(head -n 5 "$out.$sc.err")"
            fi
        elif [ -s "$out.$sc.err" ]; then bad "$sc: nothing on stderr" "$(head -n 5 "$out.$sc.err")"; fi
        python3 tests/python/chrome_trace_check.py "$sc" "$out.$sc.json" "$suite" || rc=1
    done

    # MEMOBS_TRACE=path (%p expanded): on from start-up, written at exit by the child
    rm -f "$out".env_*.json
    MEMOBS_TRACE="$out.env_%p.json" "$bin" env >"$out.env.out" 2>"$out.env.err"
    local f
    f=$(ls "$out".env_*.json 2>/dev/null | head -n 1)
    if [ -n "$f" ] && [ "$f" = "$out.env_$(sed -n 's/^pid //p' "$out.env.out").json" ] \
        && grep -q '^capacity 65536$' "$out.env.out" && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TRACE=path%p: the timeline on at start-up (capacity 65536), the trace written at exit"
        python3 tests/python/chrome_trace_check.py env "$f" "$suite" || rc=1
    else
        bad "MEMOBS_TRACE=path%p: the trace written at exit" "file: '$f'" "$(cat "$out.env.out" "$out.env.err")"
    fi
    rm -f "$out".env_*.json
    MEMOBS_TRACE="$out.env_2.json" MEMOBS_TRACE_EVENTS=2 "$bin" env >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 2$' "$out.env.out" && [ -s "$out.env_2.json" ] && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TRACE_EVENTS=2: capacity 2"
        python3 tests/python/chrome_trace_check.py env "$out.env_2.json" "$suite" || rc=1
    else
        bad "MEMOBS_TRACE_EVENTS=2: capacity 2" "$(cat "$out.env.out" "$out.env.err")"
    fi
    # malformed MEMOBS_TRACE_EVENTS: one warning, the default capacity, on
    MEMOBS_TRACE_EVENTS=12Q "$bin" env_bad >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 65536$' "$out.env.out" && [ "$(wc -l <"$out.env.err")" -eq 1 ] &&
        grep -q "^memobs: warning: MEMOBS_TRACE_EVENTS='12Q' is not an event count up to 67108864 (like 65536 or 64K); using 65536$" "$out.env.err"; then
        ok "MEMOBS_TRACE_EVENTS=12Q: one warning, capacity 65536"
    else
        bad "MEMOBS_TRACE_EVENTS=12Q: one warning, capacity 65536" "$(cat "$out.env.out" "$out.env.err")"
    fi
    MEMOBS_TRACE_EVENTS=64K "$bin" env_bad >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 65536$' "$out.env.out" && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TRACE_EVENTS=64K alone: the timeline on, capacity 65536, no trace file"
    else
        bad "MEMOBS_TRACE_EVENTS=64K alone" "$(cat "$out.env.out" "$out.env.err")"
    fi
    # unwritable MEMOBS_TRACE: one warning at exit, exit status 0
    MEMOBS_TRACE=/nonexistent/dir/trace.json "$bin" env >"$out.env.out" 2>"$out.env.err"
    local st=$?
    if [ $st -eq 0 ] && [ "$(wc -l <"$out.env.err")" -eq 1 ] &&
        grep -q "^memobs: warning: cannot open '/nonexistent/dir/trace.json' for the Chrome trace: No such file or directory$" "$out.env.err"; then
        ok "MEMOBS_TRACE to an unwritable path: one warning, exit status 0"
    else
        bad "MEMOBS_TRACE to an unwritable path" "status $st" "$(cat "$out.env.err")"
    fi
    MEMOBS_TRACE= "$bin" env >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 0$' "$out.env.out" && [ "$(wc -l <"$out.env.err")" -eq 1 ] &&
        grep -q "^memobs: warning: MEMOBS_TRACE is empty; no trace at exit$" "$out.env.err"; then
        ok "MEMOBS_TRACE empty: one warning, the timeline stays off"
    else
        bad "MEMOBS_TRACE empty" "$(cat "$out.env.out" "$out.env.err")"
    fi
}

run_variant c99 timeline-c99 "$CC" -std=c99 -O2 -g
run_variant cxx17 timeline-c++17 "$CXX" -x c++ -std=c++17 -O2 -g
run_variant asan timeline-asan+ubsan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined
run_variant tsan timeline-tsan "$CC" -std=c11 -O1 -g -fsanitize=thread
exit $rc
