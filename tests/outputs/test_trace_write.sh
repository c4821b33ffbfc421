#!/usr/bin/env bash
# The Chrome trace's write limit (tests/outputs/test_trace_write.c, its scenarios
# read by tests/python/trace_write_check.py) built four ways: C99, C++17,
# ASan+UBSan, TSan; then MEMOBS_TIMELINE_WRITE_S, good and malformed, and the
# limit on the trace written at exit (MEMOBS_TIMELINE).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/trace_write
mkdir -p "$B"

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_TIMELINE_WRITE_S MEMOBS_REQUEST_TIMEOUT_S

ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

run_variant() { # name: tw_NAME as mk/tests.mk makes it
    local name=$1 suite="trace-write-$1" bin="$B/tw_$1" sc
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    for sc in nolimit plan stop stall real; do
        rm -f "$B/$name.$sc.json"
        if ! "$bin" "$sc" "$B/$name.$sc.json" >"$B/$name.$sc.out" 2>"$B/$name.$sc.err"; then
            bad "$sc: the program failed" "$(cat "$B/$name.$sc.out" "$B/$name.$sc.err" | head -n 10)"
            continue
        fi
        python3 tests/python/trace_write_check.py "$sc" "$B/$name.$sc.json" "$(cat "$B/$name.$sc.out")" \
            "$(cat "$B/$name.$sc.err")" "$suite" || rc=1
    done
    # the trace written at exit, its limit from the environment
    rm -f "$B/$name.exit.json"
    if MEMOBS_TIMELINE="$B/$name.exit.json" MEMOBS_TIMELINE_EVENTS=128K MEMOBS_TIMELINE_WRITE_S=1 "$bin" exit >"$B/$name.exit.out" 2>"$B/$name.exit.err"; then
        python3 tests/python/trace_write_check.py stop "$B/$name.exit.json" "$(cat "$B/$name.exit.out")" \
            "$(cat "$B/$name.exit.err")" "$suite: at exit" || rc=1
    else
        bad "exit: the program failed" "$(cat "$B/$name.exit.out" "$B/$name.exit.err" | head -n 10)"
    fi
}
run_variant c99
run_variant cxx17
run_variant asan+ubsan
run_variant tsan

# MEMOBS_TIMELINE_WRITE_S: seconds with decimals; 0 = no limit; anything else
# one warning and the default (20 s).
suite=trace-write-env
bin="$B/tw_c99"
if [ -x "$bin" ]; then
    for c in "|20000000000" "20|20000000000" "0|0" "2.5|2500000000" "25|25000000000" "0.001|1000000"; do
        v=${c%%|*} want=${c#*|}
        if [ -z "$v" ]; then out=$("$bin" env 2>"$B/env.err"); v="(unset)"
        else out=$(MEMOBS_TIMELINE_WRITE_S=$v "$bin" env 2>"$B/env.err"); fi
        if [ "$out" = "limit $want" ] && [ ! -s "$B/env.err" ]; then ok "MEMOBS_TIMELINE_WRITE_S=$v: $want ns"
        else bad "MEMOBS_TIMELINE_WRITE_S=$v" "want 'limit $want', no warning" "got '$out'" "$(cat "$B/env.err")"; fi
    done
    for v in "" "-5" "20s" "1e2" "abc" "2,5"; do
        out=$(MEMOBS_TIMELINE_WRITE_S=$v "$bin" env 2>"$B/env.err")
        w="memobs: warning: MEMOBS_TIMELINE_WRITE_S='$v' is not a number of seconds from 0 (no limit) to 1000000000 (like 20 or 2.5); using 20"
        if [ "$out" = "limit 20000000000" ] && [ "$(cat "$B/env.err")" = "$w" ]; then
            ok "MEMOBS_TIMELINE_WRITE_S='$v': one warning, 20 s"
        else
            bad "MEMOBS_TIMELINE_WRITE_S='$v': one warning, 20 s" "got '$out'" "$(cat "$B/env.err")"
        fi
    done
fi
exit $rc
