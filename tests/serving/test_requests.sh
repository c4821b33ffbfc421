#!/usr/bin/env bash
# tests/serving/test_requests.c (the request table under requests that never end:
# the request timeout, the full table, the outputs) built four ways: C99,
# C++17, ASan+UBSan, TSan (200k requests in its big runs instead of 1M, to
# keep its run short); then MEMOBS_REQUEST_TIMEOUT_S, good and malformed.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/requests
mkdir -p "$B"

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_REQUEST_TIMEOUT_S REQUESTS

ok() { echo "ok - requests-env: $1"; }
bad() { echo "not ok - requests-env: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

build_run() { # name requests: requests_NAME as mk/tests.mk makes it, run with REQUESTS=requests
    local name=$1 n=$2
    if ! test_make "$B/requests_$name" >"$B/requests_$name.log" 2>&1; then
        echo "not ok - requests-$name: build failed"
        sed 's/^/    # /' "$B/requests_$name.log" | head -n 30
        rc=1
        return
    fi
    REQUESTS=$n "$B/requests_$name" || rc=1
}
build_run c99 1000000
build_run cxx17 1000000
build_run asan+ubsan 1000000
build_run tsan 200000

# MEMOBS_REQUEST_TIMEOUT_S: seconds with decimals; 0 = never; anything
# else one warning and the default (600 s).
bin="$B/requests_c99"
if [ -x "$bin" ]; then
    for c in "|600000000000" "600|600000000000" "0|0" "0.25|250000000" "1.5|1500000000" "7.|7000000000" \
        ".5|500000000" "0.0000000001|1" "1000000000|1000000000000000000" "3600|3600000000000"; do
        v=${c%%|*} want=${c#*|}
        if [ -z "$v" ]; then out=$("$bin" env 2>"$B/env.err"); v="(unset)"
        else out=$(MEMOBS_REQUEST_TIMEOUT_S=$v "$bin" env 2>"$B/env.err"); fi
        if [ "$out" = "timeout $want" ] && [ ! -s "$B/env.err" ]; then ok "MEMOBS_REQUEST_TIMEOUT_S=$v: $want ns"
        else bad "MEMOBS_REQUEST_TIMEOUT_S=$v" "want 'timeout $want', no warning" "got '$out'" "$(cat "$B/env.err")"; fi
    done
    for v in "" "-1" "abc" "1e3" "0x10" "1.2.3" " 5" "5s" "1000000001" "99999999999999999999" "." "inf" "nan"; do
        out=$(MEMOBS_REQUEST_TIMEOUT_S=$v "$bin" env 2>"$B/env.err")
        w="memobs: warning: MEMOBS_REQUEST_TIMEOUT_S='$v' is not a number of seconds from 0 (never) to 1000000000 (like 600 or 0.5); using 600"
        if [ "$out" = "timeout 600000000000" ] && [ "$(wc -l <"$B/env.err")" -eq 1 ] && [ "$(cat "$B/env.err")" = "$w" ]; then
            ok "MEMOBS_REQUEST_TIMEOUT_S='$v': one warning, 600 s"
        else
            bad "MEMOBS_REQUEST_TIMEOUT_S='$v': one warning, 600 s" "got '$out'" "$(cat "$B/env.err")"
        fi
    done
fi
exit $rc
