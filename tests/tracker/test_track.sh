#!/usr/bin/env bash
# tests/tracker/test_track.c (the allocation tracker) built four ways: C99, C++17,
# ASan+UBSan, TSan; each runs the in-process tests, then one fresh process
# per environment (table capacity, stack depth, peak reports, leaks at exit,
# malformed values, report rows, full trace table, JSON summary).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/track
mkdir -p "$B"
rc=0

. tests/lib.sh # json_check; a clean environment, sanitizer options

run_variant() { # name suite: track_NAME as mk/tests.mk makes it
    local name=$1 suite=$2 bin="$B/track_$1" out="$B/$1"
    ok() { echo "ok - $suite: $1"; }
    bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "build failed" "$(head -n 30 "$bin.log")"
        return
    fi
    # in-process tests
    "$bin" || rc=1

    # mode VAR=VALUE... -- MODE [ARGS]: runs a mode with that environment,
    # stdout (ok/not ok lines) shown, stderr to $out.err
    mode() {
        local envs=()
        while [ "$1" != "--" ]; do envs+=("$1"); shift; done
        shift
        env "${envs[@]}" "$bin" "$@" 2>"$out.err" | grep -v ' passed, .* failed$'
        if [ "${PIPESTATUS[0]}" -ne 0 ]; then rc=1; sed 's/^/    # stderr: /' "$out.err" | head -n 10; fi
    }
    # stderr_is NAME PATTERN...: stderr has exactly one line per pattern, each matching once
    stderr_is() {
        local name=$1 p
        shift
        if [ "$(wc -l <"$out.err")" -ne $# ]; then bad "$name" "stderr has $(wc -l <"$out.err") lines, want $#:" "$(cat "$out.err")"; return; fi
        for p in "$@"; do
            if [ "$(grep -c -- "$p" "$out.err")" -ne 1 ]; then bad "$name" "no single line matching '$p' in:" "$(cat "$out.err")"; return; fi
        done
        ok "$name"
    }

    mode MEMOBS_TRACK_CAPACITY=100 -- table_full
    mode MEMOBS_TRACK_CAPACITY=4096 -- table_batched
    mode MEMOBS_CALLSTACK=8 -- callstack
    stderr_is "MEMOBS_CALLSTACK=8: no warning" 
    mode MEMOBS_CALLSTACK=99 -- callstack_clamped
    stderr_is "MEMOBS_CALLSTACK=99: one warning" "MEMOBS_CALLSTACK=99 is above MEMOBS_MAX_STACK; using 32"
    rm -f "$out.peak"
    mode MEMOBS_PEAK_REPORT="$out.peak" MEMOBS_PEAK_MIN=1M MEMOBS_PEAK_GROWTH=0 -- peak
    stderr_is "MEMOBS_PEAK_REPORT=path: nothing on stderr"
    mode MEMOBS_TRACK_CAPACITY=abc MEMOBS_PEAK_GROWTH=x MEMOBS_PEAK_MIN=12Q -- defaults
    stderr_is "malformed MEMOBS_TRACK_CAPACITY, MEMOBS_PEAK_GROWTH, MEMOBS_PEAK_MIN: one warning each" \
        "^memobs: warning: MEMOBS_TRACK_CAPACITY='abc' is not a non-negative integer; ignored$" \
        "^memobs: warning: MEMOBS_PEAK_GROWTH='x' is not a fraction in \[0, 1000\]; using 0.1$" \
        "^memobs: warning: MEMOBS_PEAK_MIN='12Q' is not a byte count (like 64M); using 67108864$"
    mode MEMOBS_TRACK_CAPACITY=0 MEMOBS_PEAK_GROWTH=-1 -- defaults
    stderr_is "MEMOBS_TRACK_CAPACITY=0, MEMOBS_PEAK_GROWTH=-1: one warning each" \
        "MEMOBS_TRACK_CAPACITY=0: must be at least 1; using 32768" "MEMOBS_PEAK_GROWTH='-1' is not a fraction"
    mode MEMOBS_REPORT_ROWS=2 -- rows
    mode -- traces_full
    mode -- frames_full

    # MEMOBS_LEAKS: the leak report at exit, %p expanded
    rm -f "$out".leaks_*
    mode MEMOBS_LEAKS="$out.leaks_%p.txt" -- leaks
    local lf
    lf=$(ls "$out".leaks_*.txt 2>/dev/null | head -n 1)
    if [ -n "$lf" ] && grep -q '^== memobs leak report == rank 0 pid [0-9]*: 1 allocation still live, 12345 bytes (0.01 MiB): pinned 12345 bytes (0.01 MiB) in 1$' "$lf" \
        && grep -q '^| *[0-9]* |        12345 (      0.01) |       1 | pinned         | .* | leaky_tag  *|$' "$lf" \
        && ! grep -q freed_tag "$lf" && [ ! -s "$out.err" ]; then
        ok "MEMOBS_LEAKS=path writes the leak report at exit"
    else
        bad "MEMOBS_LEAKS=path writes the leak report at exit" "file: $lf" "$(cat "$lf" 2>/dev/null | head -n 12)" \
            "stderr: $(cat "$out.err")"
    fi
    rm -f "$out".leaks_*
    mode MEMOBS_LEAKS=stdout -- leaks >"$out.stdout"
    grep -E '^(not )?ok - ' "$out.stdout"
    if grep -q '^== memobs leak report == ' "$out.stdout" && grep -q 'leaky_tag' "$out.stdout"; then
        ok "MEMOBS_LEAKS=stdout"
    else
        bad "MEMOBS_LEAKS=stdout" "$(head -n 5 "$out.stdout")"
    fi
    mode MEMOBS_LEAKS=/nonexistent/dir/leaks.txt -- leaks
    stderr_is "MEMOBS_LEAKS to an unwritable path: one warning, exit status 0" \
        "cannot write the leak report to '/nonexistent/dir/leaks.txt': cannot create a temporary file in its folder"

    # JSON summary with the memory section, parsed
    rm -f "$out.json"
    mode -- json "$out.json"
    if json_check "$out.json" 's["memory"]["device"] == {"current_bytes": 2000, "peak_bytes": 3000, "live": 1, "allocs": 2, "frees": 1, "alloc_bytes": 3000, "pending_frees": 0, "pending_bytes": 0} and all(s["memory"][k]["allocs"] == 0 and s["memory"][k]["live"] == 0 for k in ("host", "pinned", "managed")) and s["tracker"]["tracking"] is True and s["tracker"]["traces"] == 1 and s["tracker"]["capacity"] == 32768 and s["tracker"]["frees_unknown"] == 1 and s["tracker"]["untracked"] == 0 and s["tracker"]["frees_double"] == 0'; then
        ok "JSON summary: memory and tracker sections parse with the right values"
    else
        bad "JSON summary: memory and tracker sections"
    fi
}

run_variant c99 track-c99
run_variant cxx17 track-c++17
run_variant asan track-asan+ubsan
run_variant tsan track-tsan
exit $rc
