#!/usr/bin/env bash
# tests/outputs/test_request_outputs.c (requests in the outputs) built four
# ways: C99, C++17, ASan+UBSan, TSan. Each scenario writes its files in a
# fresh process; tests/python/request_outputs_check.py reads the trace's
# request tracks and flows and the Stormlog "request" events against the
# ledgers the program printed, tests/python/stormlog_check.py the Stormlog
# file against the schema.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/request_outputs
mkdir -p "$B"
rc=0

. tests/lib.sh # a clean environment, sanitizer options

bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

run_variant() { # way suite
    local way=$1 suite=$2 bin="$B/req_out_$1" out="$B/$1"
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    rm -f "$out".*.json
    if "$bin" flows "$out.flows.json" "$out.stormlog.json" >"$out.flows.out" 2>"$out.flows.err" &&
        [ ! -s "$out.flows.err" ]; then
        python3 tests/python/request_outputs_check.py flows "$out.flows.json" "$out.stormlog.json" \
            "$out.flows.out" "$suite" || rc=1
        if python3 tests/python/stormlog_check.py "$out.stormlog.json" --expect request >"$out.sl.log" 2>&1; then
            echo "ok - $suite: flows: the Stormlog file passes the schema v2 validator, with request events"
        else
            bad "flows: the Stormlog file passes the schema v2 validator" "$(head -n 10 "$out.sl.log")"
        fi
    else
        bad "flows: the program ran, nothing on stderr" "$(cat "$out.flows.out" "$out.flows.err" | head -n 10)"
    fi
    if "$bin" lanes "$out.lanes.json" >"$out.lanes.out" 2>"$out.lanes.err" && [ ! -s "$out.lanes.err" ]; then
        python3 tests/python/request_outputs_check.py lanes "$out.lanes.json" "$suite" || rc=1
    else
        bad "lanes: the program ran, nothing on stderr" "$(cat "$out.lanes.out" "$out.lanes.err" | head -n 10)"
    fi
    # the timeline off: the trace's one warning, and no request in it
    if "$bin" off "$out.off.json" >"$out.off.out" 2>"$out.off.err" && [ "$(wc -l <"$out.off.err")" -eq 1 ] &&
        grep -q '^memobs: warning: memobs_write_timeline: the timeline is off' "$out.off.err"; then
        python3 tests/python/request_outputs_check.py off "$out.off.json" "$suite" || rc=1
    else
        bad "off: the program ran, one warning" "$(cat "$out.off.out" "$out.off.err" | head -n 10)"
    fi
}

run_variant c99 request-outputs-c99
run_variant cxx17 request-outputs-c++17
run_variant asan request-outputs-asan+ubsan
run_variant tsan request-outputs-tsan
exit $rc
