#!/usr/bin/env bash
# tests/outputs/test_timeline.c (the timeline and its Chrome trace) built four ways:
# C99, C++17, ASan+UBSan, TSan; each runs the in-process tests, then one
# fresh process per scenario, whose trace tests/python/chrome_trace_check.py
# parses (json module) and checks, then the environment: MEMOBS_TIMELINE
# written at exit, MEMOBS_TIMELINE_EVENTS, malformed values.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/timeline
mkdir -p "$B"
CC=${CC:-cc}
W="-Wall -Wextra -Werror -I."
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_TIMELINE MEMOBS_TIMELINE_EVENTS

# ok/bad report under $suite, the caller's (dynamic scope)
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
build() { # binary: made by mk/tests.mk's rules; 0 when built, else says why
    local bin=$1
    test_make "$bin" >"$bin.log" 2>&1 && return 0
    bad "build failed" "$(head -n 30 "$bin.log")"
    return 1
}

run_variant() { # name suite: timeline_NAME
    local name=$1 suite=$2 bin="$B/timeline_$1" out="$B/$1" sc
    build "$bin" || return
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
                grep -q '^memobs: warning: memobs_write_timeline: the timeline is off, so this trace holds no events: turn it on with memobs_timeline_start(N)' "$out.$sc.err"; then
                ok "off: one warning on stderr says the timeline was off"
            else
                bad "off: one warning on stderr says the timeline was off" "$(head -n 5 "$out.$sc.err")"
            fi
        elif [ -s "$out.$sc.err" ]; then bad "$sc: nothing on stderr" "$(head -n 5 "$out.$sc.err")"; fi
        python3 tests/python/chrome_trace_check.py "$sc" "$out.$sc.json" "$suite" || rc=1
    done

    # the turns again with clock_gettime time stamps: strictly in turn order
    if MEMOBS_CLOCK=monotonic "$bin" order "$out.order_mono.json" >"$out.order_mono.out" 2>"$out.order_mono.err" &&
        [ ! -s "$out.order_mono.err" ]; then
        python3 tests/python/chrome_trace_check.py order "$out.order_mono.json" "$suite: MEMOBS_CLOCK=monotonic" || rc=1
    else
        bad "order, MEMOBS_CLOCK=monotonic: the program failed" "$(cat "$out.order_mono.out" "$out.order_mono.err" | head -n 10)"
    fi

    # MEMOBS_TIMELINE=path (%p expanded): on from start-up, written at exit by the child
    rm -f "$out".env_*.json
    MEMOBS_TIMELINE="$out.env_%p.json" "$bin" env >"$out.env.out" 2>"$out.env.err"
    local f
    f=$(ls "$out".env_*.json 2>/dev/null | head -n 1)
    if [ -n "$f" ] && [ "$f" = "$out.env_$(sed -n 's/^pid //p' "$out.env.out").json" ] \
        && grep -q '^capacity 65536$' "$out.env.out" && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TIMELINE=path%p: the timeline on at start-up (capacity 65536), the trace written at exit"
        python3 tests/python/chrome_trace_check.py env "$f" "$suite" || rc=1
    else
        bad "MEMOBS_TIMELINE=path%p: the trace written at exit" "file: '$f'" "$(cat "$out.env.out" "$out.env.err")"
    fi
    rm -f "$out".env_*.json
    MEMOBS_TIMELINE="$out.env_2.json" MEMOBS_TIMELINE_EVENTS=2 "$bin" env >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 2$' "$out.env.out" && [ -s "$out.env_2.json" ] && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TIMELINE_EVENTS=2: capacity 2"
        python3 tests/python/chrome_trace_check.py env "$out.env_2.json" "$suite" || rc=1
    else
        bad "MEMOBS_TIMELINE_EVENTS=2: capacity 2" "$(cat "$out.env.out" "$out.env.err")"
    fi
    # malformed MEMOBS_TIMELINE_EVENTS: one warning, the default capacity, on
    MEMOBS_TIMELINE_EVENTS=12Q "$bin" env_bad >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 65536$' "$out.env.out" && [ "$(wc -l <"$out.env.err")" -eq 1 ] &&
        grep -q "^memobs: warning: MEMOBS_TIMELINE_EVENTS='12Q' is not an event count up to 67108864 (like 65536 or 64K); using 65536$" "$out.env.err"; then
        ok "MEMOBS_TIMELINE_EVENTS=12Q: one warning, capacity 65536"
    else
        bad "MEMOBS_TIMELINE_EVENTS=12Q: one warning, capacity 65536" "$(cat "$out.env.out" "$out.env.err")"
    fi
    MEMOBS_TIMELINE_EVENTS=64K "$bin" env_bad >"$out.env.out" 2>"$out.env.err"
    if grep -q '^capacity 65536$' "$out.env.out" && [ ! -s "$out.env.err" ]; then
        ok "MEMOBS_TIMELINE_EVENTS=64K alone: the timeline on, capacity 65536, no trace file"
    else
        bad "MEMOBS_TIMELINE_EVENTS=64K alone" "$(cat "$out.env.out" "$out.env.err")"
    fi
    # unwritable MEMOBS_TIMELINE: one warning at exit, exit status 0
    MEMOBS_TIMELINE=/nonexistent/dir/trace.json "$bin" env >"$out.env.out" 2>"$out.env.err"
    local st=$?
    if [ $st -eq 0 ] && [ "$(wc -l <"$out.env.err")" -eq 1 ] &&
        grep -q "^memobs: warning: cannot write the Chrome trace to '/nonexistent/dir/trace.json': cannot create a temporary file in its folder: No such file or directory$" "$out.env.err"; then
        ok "MEMOBS_TIMELINE to an unwritable path: one warning, exit status 0"
    else
        bad "MEMOBS_TIMELINE to an unwritable path" "status $st" "$(cat "$out.env.err")"
    fi
    local v
    for v in "" 0 off; do
        MEMOBS_TIMELINE=$v "$bin" env >"$out.env.out" 2>"$out.env.err"
        if grep -q '^capacity 0$' "$out.env.out" && [ ! -s "$out.env.err" ]; then
            ok "MEMOBS_TIMELINE='$v': off, no warning, the timeline stays off"
        else
            bad "MEMOBS_TIMELINE='$v'" "$(cat "$out.env.out" "$out.env.err")"
        fi
    done
}

run_variant c99 timeline-c99
run_variant cxx17 timeline-c++17
run_variant asan timeline-asan+ubsan
run_variant tsan timeline-tsan

# The clock (tests/outputs/test_clock.c): the in-process tests with each source,
# then the choice of source from the kernel's files (fakes here).
clock_variant() { # name suite: clock_NAME
    local name=$1 suite=$2 bin="$B/clock_$1" want got
    build "$bin" || return
    "$bin" || rc=1
    MEMOBS_CLOCK=monotonic "$bin" | sed "s/- $suite: /- $suite: MEMOBS_CLOCK=monotonic: /"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    local forced=("monotonic|clock_gettime: MEMOBS_CLOCK=monotonic" "clock_gettime|clock_gettime: MEMOBS_CLOCK=monotonic")
    [ "$(uname -m)" = x86_64 ] && forced+=("tsc|tsc: MEMOBS_CLOCK=tsc")
    for want in "${forced[@]}"; do
        got=$(MEMOBS_CLOCK=${want%%|*} "$bin" source 2>&1)
        if [ "$got" = "${want#*|}" ]; then ok "MEMOBS_CLOCK=${want%%|*}: $got"
        else bad "MEMOBS_CLOCK=${want%%|*}" "want '${want#*|}'" "got  '$got'"; fi
    done
    got=$(MEMOBS_CLOCK=sundial "$bin" source 2>&1)
    if [ "$(printf '%s\n' "$got" | head -n 1)" = "memobs: warning: MEMOBS_CLOCK='sundial' is not auto, tsc or monotonic; using auto" ] &&
        [ "$(printf '%s\n' "$got" | wc -l)" = 2 ]; then ok "MEMOBS_CLOCK=sundial: one warning, auto"
    else bad "MEMOBS_CLOCK=sundial: one warning, auto" "$got"; fi
}
clock_variant c99 clock-c99
clock_variant tsan clock-tsan

# The choice from the kernel's files (x86-64 Linux: a TSC to read)
if [ "$(uname -m)" = x86_64 ]; then
    fake="$B/fakeclock"
    mkdir -p "$fake"
    fbin="$B/clock_fake"
    if $CC -std=c99 -O2 $W -DMEMOBS__CLOCKSOURCE_PATH="\"$fake/cs\"" -DMEMOBS__CPUINFO_PATH="\"$fake/cpuinfo\"" \
        -o "$fbin" tests/outputs/test_clock.c -pthread >"$fbin.log" 2>&1; then
        long=$(printf 'x%.0s ' $(seq 1 5000)) # a flags line longer than a read buffer
        for c in "tsc|fpu tsc|tsc: the kernel's clocksource is tsc" \
            "kvm-clock|fpu constant_tsc nonstop_tsc sse|tsc: the CPU has constant_tsc and nonstop_tsc" \
            "kvm-clock|fpu constant_tsc sse|clock_gettime: the kernel does not vouch for the TSC (clocksource not tsc; constant_tsc yes, nonstop_tsc no)" \
            "hpet|fpu constant_tscx nonstop_tsc_x|clock_gettime: the kernel does not vouch for the TSC (clocksource not tsc; constant_tsc no, nonstop_tsc no)" \
            "tscx|$long constant_tsc nonstop_tsc|tsc: the CPU has constant_tsc and nonstop_tsc" \
            "-|-|clock_gettime: the kernel does not vouch for the TSC (clocksource not tsc; constant_tsc no, nonstop_tsc no)"; do
            IFS='|' read -r cs fl want <<<"$c"
            rm -f "$fake/cs" "$fake/cpuinfo"
            [ "$cs" = - ] || echo "$cs" >"$fake/cs"
            [ "$fl" = - ] || printf 'processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: fpu\n' "$fl" >"$fake/cpuinfo"
            got=$("$fbin" source 2>&1)
            if [ "$got" = "$want" ]; then echo "ok - clock-source: clocksource '$cs', flags '${fl:0:40}': $got"
            else echo "not ok - clock-source: clocksource '$cs', flags '${fl:0:40}'"; echo "    # want '$want'"; echo "    # got  '$got'"; rc=1; fi
        done
        # the fallback's in-process tests, chosen by the kernel's files
        "$fbin" | sed 's/- clock: /- clock-source: no TSC vouched for: /'
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    else
        echo "not ok - clock-source: build failed"; head -n 20 "$fbin.log" | sed 's/^/    # /'; rc=1
    fi
fi
exit $rc
