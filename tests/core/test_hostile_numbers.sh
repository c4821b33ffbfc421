#!/usr/bin/env bash
# hostile-numbers (issue 38, items 16, 21, 22): numbers a host can push
# memobs to. One thread's transfer bytes past 2^64 (300 x 2^56, and 4
# threads of it) saturate as the sums over threads do; tracked bytes past
# the escrow's ceiling (2^60) saturate with current <= peak after every
# allocation, in the summary, the JSON summary and Prometheus; the Python
# API's booleans follow one rule (the environment's words); the
# environment's nits (MEMOBS_PEAK_GROWTH's parser, MEMOBS_SAMPLES above the
# maximum, MEMOBS_CLOCK='', request_begin(2**64)). C programs under
# tests/core/hostile/numbers_*, built under ASan+UBSan, and TSan for threads.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/hostile_numbers
mkdir -p "$B"
rm -f "$B"/*.json "$B"/*.prom "$B"/err "$B"/out
CC=${CC:-cc}
W="-Wall -Wextra -Werror -I."
SUITE=hostile-numbers

. tests/lib.sh # a clean environment, sanitizer options, json_check

ok() { echo "ok - $SUITE: $1"; }
bad() { echo "not ok - $SUITE: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

build() { # out src flags...
    local out=$1 src=$2
    shift 2
    if ! $CC "$@" $W "$src" -o "$B/$out" -pthread -lm >"$B/$out.log" 2>&1; then
        bad "build $out ($*)" "$(head -n 20 "$B/$out.log")"
        return 1
    fi
}

# ---- item 16: sums of one thread, tracked bytes ------------------------------
SAN="-std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
if build sums_asan tests/core/hostile/numbers_sums.c $SAN && build sums_tsan tests/core/hostile/numbers_sums.c -std=c11 -O1 -g -fsanitize=thread &&
    build sums_c99 tests/core/hostile/numbers_sums.c -std=c99 -O2 -g; then
    for m in one threads track; do
        "$B/sums_asan" $m "$B" 2>"$B/err.$m" | sed "s/^\(not \)\{0,1\}ok - $SUITE: /&asan+ubsan: /"
        [ "${PIPESTATUS[0]}" = 0 ] || { rc=1; sed 's/^/    # stderr: /' "$B/err.$m" | head -n 10; }
    done
    mkdir -p "$B/tsan" "$B/c99"
    if "$B/sums_tsan" threads "$B/tsan" >"$B/out.tsan" 2>"$B/err.tsan" && ! grep -q "not ok" "$B/out.tsan"; then
        ok "tsan: 4 threads of 300 x 2^56: saturated, counts exact, no race"
    else
        bad "tsan: 4 threads of 300 x 2^56" "$(grep -A1 'not ok' "$B/out.tsan" | head -n 6)" "$(head -n 10 "$B/err.tsan")"
    fi
    for m in one threads track; do
        if "$B/sums_c99" $m "$B/c99" >"$B/out.c99" 2>&1 && ! grep -q "not ok" "$B/out.c99"; then
            ok "c99 -O2: $m: every check"
        else bad "c99 -O2: $m" "$(grep -A1 'not ok' "$B/out.c99" | head -n 6)"; fi
    done
    M=18446744073709551615
    if json_check "$B/one.json" "s['total']['h2d_bytes'] == $M and s['prefill']['h2d_bytes'] == $M and s['total']['h2d_count'] == 300 and s['sizes']['h2d']['bytes'] == $M and s['counters']['numbers_big'] == $M"; then
        ok "JSON summary: one thread's 300 x 2^56 reads h2d_bytes 2^64-1 (saturated), count 300; its counter 2^64-1"
    else bad "JSON summary: one thread's 300 x 2^56"; fi
    if grep -q "^memobs_transfer_bytes_total{.*direction=\"h2d\",phase=\"prefill\"} $M\$" "$B/one.prom"; then
        ok "Prometheus: one thread's 300 x 2^56 reads $M (saturated)"
    else bad "Prometheus: one thread's 300 x 2^56" "$(grep 'memobs_transfer_bytes_total{.*h2d' "$B/one.prom")"; fi
    if json_check "$B/threads.json" "s['total']['h2d_bytes'] == $M and s['total']['h2d_count'] == 1200 and s['total']['d2h_bytes'] == 200 * 2**56"; then
        ok "JSON summary: 4 threads of 300 x 2^56 saturated, 4 x 50 x 2^56 exact"
    else bad "JSON summary: 4 threads"; fi
    if json_check "$B/track.json" "s['memory']['device']['current_bytes'] == $M and s['memory']['device']['peak_bytes'] == $M and s['memory']['device']['alloc_bytes'] == $M and s['memory']['device']['current_bytes'] <= s['memory']['device']['peak_bytes'] and s['memory']['host']['peak_bytes'] == 15 * 2**56 and s['memory']['host']['current_bytes'] == 0"; then
        ok "JSON summary: tracked device bytes past 2^60 read current = peak = 2^64-1; host exact"
    else bad "JSON summary: tracked device bytes"; fi
    if grep -q "^memobs_tracked_peak_bytes{.*kind=\"device\"} $M\$" "$B/track.prom" &&
        grep -q "^memobs_tracked_bytes{.*kind=\"device\"} $M\$" "$B/track.prom"; then
        ok "Prometheus: tracked device current and peak read $M (saturated)"
    else bad "Prometheus: tracked device bytes" "$(grep 'memobs_tracked.*device' "$B/track.prom" | head -n 4)"; fi
    if [ "$(grep -c 'tracked device bytes passed 2^60; their current and peak read 2^64-1 (saturated) from now on' "$B/err.track")" = 1 ]; then
        ok "tracked bytes past 2^60: one warning"
    else bad "tracked bytes past 2^60: one warning" "$(head -n 5 "$B/err.track")"; fi
fi

# ---- item 22: the environment ----------------------------------------------
if build env tests/core/hostile/numbers_env.c -std=c99 -O2; then
    probe() { env "$@" "$B/env" clock >"$B/out" 2>"$B/err"; }
    for v in " 1" "0x10" "+5" "1e3" "-1" ".5" "1.5x" "inf" "nan" ""; do
        probe MEMOBS_PEAK_GROWTH="$v"
        if [ "$(cat "$B/err")" = "memobs: warning: MEMOBS_PEAK_GROWTH='$v' is not a fraction in [0, 1000]; using 0.1" ]; then
            ok "MEMOBS_PEAK_GROWTH='$v' refused with one warning (the counts' rule)"
        else bad "MEMOBS_PEAK_GROWTH='$v' refused" "stderr: $(cat "$B/err")"; fi
    done
    for v in "0" "0.5" "1" "10.25" "1000"; do
        probe MEMOBS_PEAK_GROWTH="$v"
        if [ ! -s "$B/err" ]; then ok "MEMOBS_PEAK_GROWTH=$v accepted"
        else bad "MEMOBS_PEAK_GROWTH=$v accepted" "stderr: $(cat "$B/err")"; fi
    done
    for v in " 1" "0x10" "+5"; do
        probe MEMOBS_SAMPLES="$v"
        if [ "$(cat "$B/err")" = "memobs: warning: MEMOBS_SAMPLES='$v' is not a non-negative integer; ignored" ]; then
            ok "MEMOBS_SAMPLES='$v' refused the same way (a count)"
        else bad "MEMOBS_SAMPLES='$v'" "stderr: $(cat "$B/err")"; fi
    done
    for var in MEMOBS_SAMPLES MEMOBS_TRACK_CAPACITY RANK; do
        probe $var=99999999999
        if [ "$(cat "$B/err")" = "memobs: warning: $var='99999999999' is above the maximum 2147483647; ignored" ]; then
            ok "$var=99999999999: 'is above the maximum 2147483647'"
        else bad "$var=99999999999" "stderr: $(cat "$B/err")"; fi
    done
    probe MEMOBS_SAMPLES=2147483647
    if [ ! -s "$B/err" ]; then ok "MEMOBS_SAMPLES=2147483647 (the maximum) accepted"
    else bad "MEMOBS_SAMPLES=2147483647" "stderr: $(cat "$B/err")"; fi
    probe MEMOBS_CLOCK=
    if [ "$(cat "$B/err")" = "memobs: warning: MEMOBS_CLOCK='' is not auto, tsc or monotonic; using auto" ]; then
        ok "MEMOBS_CLOCK='': one warning, auto"
    else bad "MEMOBS_CLOCK=''" "stderr: $(cat "$B/err")"; fi
    probe MEMOBS_CLOCK=auto
    if [ ! -s "$B/err" ]; then ok "MEMOBS_CLOCK=auto: no warning"
    else bad "MEMOBS_CLOCK=auto" "stderr: $(cat "$B/err")"; fi
fi

# ---- item 21 (and 22's request_begin): the Python module -------------------
PYTHON=${PYTHON:-python3}
if ! PYINC=$("$PYTHON-config" --includes 2>/dev/null) || ! SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    bad "python: $PYTHON-config not found (tests/deps.sh installs python3-dev)"
else
    rm -rf "$B/py" && mkdir -p "$B/py/memobs" && cp python/memobs/*.py "$B/py/memobs/"
    if ! $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o "$B/py/memobs/_memobs$SUFFIX" \
        >"$B/py.log" 2>&1; then
        bad "python: build the module" "$(head -n 20 "$B/py.log")"
    else
        PYTHONPATH="$B/py" "$PYTHON" tests/core/hostile/numbers_bools.py 2>"$B/py.err" || { rc=1; sed 's/^/    # stderr: /' "$B/py.err" | head -n 10; }
    fi
fi
exit $rc
