#!/usr/bin/env bash
# tests/core/test_inflight.c built four ways (mk/tests.mk): C99, C++17,
# ASan+UBSan and TSan; stderr must stay empty (every warning goes to the
# test's log hook). Then, in fresh processes: MEMOBS_STUCK_S read (a
# value, 0, a malformed one: one warning, the default kept); the
# background worker finding a stuck transfer no call looks at (waited for
# with a 60 s deadline, never a sleep); the stuck events of a Stormlog file
# written at exit through stormlog_check.py.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}
rc=0
. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_STUCK_S
mkdir -p "$B/inflight_run"
d=$B/inflight_run
if bash tests/four_ways.sh inflight 2>"$d/err"; then :; else rc=1; fi
if [ -s "$d/err" ]; then
    echo "not ok - inflight: nothing on stderr"; sed 's/^/    # /' "$d/err" | head -n 20; rc=1
else
    echo "ok - inflight: nothing on stderr"
fi
prog=$B/inflight_c99
if [ ! -x "$prog" ]; then
    echo "not ok - inflight: $prog was not built"
    exit 1
fi
# env CASE EXPECTED-NS EXPECTED-STDERR-GREP (empty: stderr must be empty)
env_case() {
    local val=$1 want=$2 err=$3 got
    got=$(MEMOBS_STUCK_S="$val" "$prog" stuck_env 2>"$d/env_err")
    local said=0
    if [ -z "$err" ]; then [ ! -s "$d/env_err" ] && said=1
    else [ "$(wc -l <"$d/env_err")" = 1 ] && grep -q -- "$err" "$d/env_err" && said=1; fi
    if [ "$got" = "$want" ] && [ "$said" = 1 ]; then
        echo "ok - inflight: MEMOBS_STUCK_S='$val': $want ns"
    else
        echo "not ok - inflight: MEMOBS_STUCK_S='$val': expected $want, got '$got'"
        sed 's/^/    # /' "$d/env_err"; rc=1
    fi
}
env_case 2.5 2500000000 ""
env_case 0 0 ""
env_case soon 60000000000 "MEMOBS_STUCK_S='soon' is not a number of seconds"
env_case -1 60000000000 "MEMOBS_STUCK_S='-1' is not a number of seconds"
got=$("$prog" stuck_env 2>"$d/env_err")
if [ "$got" = 60000000000 ] && [ ! -s "$d/env_err" ]; then echo "ok - inflight: MEMOBS_STUCK_S unset: 60 s"
else echo "not ok - inflight: MEMOBS_STUCK_S unset: got '$got'"; rc=1; fi

# the worker: nothing but the background thread looks at the table (a
# sample at exit makes the Stormlog file a series)
rm -f "$d/w.json"
got=$(MEMOBS_STUCK_S=0.05 MEMOBS_SAMPLE_MS=1000 MEMOBS_STORMLOG="$d/w.json" "$prog" worker 2>"$d/w_err")
if [ "$got" = 1 ] && [ "$(grep -c 'a S2H transfer of 9 B (memobs_xfer_begin) has been in flight for .*, past MEMOBS_STUCK_S=0.05 s: stuck?' "$d/w_err")" = 1 ] &&
    [ "$(wc -l <"$d/w_err")" = 1 ]; then
    echo "ok - inflight: the background worker finds a transfer stuck past MEMOBS_STUCK_S=0.05 (one warning)"
else
    echo "not ok - inflight: the background worker: stuck count '$got'"; sed 's/^/    # /' "$d/w_err" | head; rc=1
fi
if [ -s "$d/w.json" ] && out=$(python3 tests/python/stormlog_check.py "$d/w.json" --expect transfer_stuck 2>&1); then
    echo "ok - inflight: Stormlog at exit: a transfer_stuck event, the file valid (stormlog_check.py)"
else
    echo "not ok - inflight: Stormlog at exit"; printf '%s\n' "$out" | head | sed 's/^/    # /'; rc=1
fi
exit $rc
