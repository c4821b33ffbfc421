#!/usr/bin/env bash
# PyTorch memory snapshot (memobs_write_torch_snapshot): tests/tracker/test_snapshot.c
# built four ways (C99, C++17, ASan+UBSan, TSan); the modes that want the
# history run with MEMOBS_TORCH_SNAPSHOT set ($HIST: the history from
# start-up, as a program that wants the snapshot), the history's own modes
# (off: the default; window, toggle: memobs_torch_history_start/_stop)
# without it. Each run writes a snapshot
# and a side file (memobs' block table, history counts, expected events)
# that tests/python/snapshot_check.py checks: opcodes (pickletools), the
# viewer's rules, the block table, the history bound. Then the environment:
# MEMOBS_TORCH_SNAPSHOT at exit (%p expanded; an unwritable path: one
# warning, exit status 0), a malformed MEMOBS_TORCH_EVENTS (one warning),
# memobs_cuda.h's wrappers against the CUDA runtime double, and
# Debian's python3-torch (/usr/bin/python3) loading a snapshot and running
# torch.cuda._memory_viz over it where it is installed.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/snapshot
mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
PYTHON=${PYTHON:-python3}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
W="-Wall -Wextra -Werror -I."
rc=0

. tests/lib.sh # a clean environment, sanitizer options

ok() { echo "ok - snapshot: $1"; }
bad() { echo "not ok - snapshot: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

# run NAME MODE [VAR=VALUE...]: runs $bin MODE, then the checker on what it wrote
run() {
    local name=$1 mode=$2 out="$B/$1.$2"
    shift 2
    rm -f "$out.pkl" "$out.json"
    env "$@" "$bin" "$mode" "$out.pkl" "$out.json" 2>"$out.err" | grep -v ' passed, .* failed$'
    if [ "${PIPESTATUS[0]}" -ne 0 ]; then
        bad "$name $mode: exit status" "$(head -n 10 "$out.err")"
        return
    fi
    "$PYTHON" tests/python/snapshot_check.py "$out.pkl" "$out.json" "$mode" "$name $mode" || rc=1
}

build() { # name compiler flags...: sets bin
    local name=$1 comp=$2
    shift 2
    bin="$B/snapshot_$name"
    if ! $comp "$@" $W -o "$bin" tests/tracker/test_snapshot.c -pthread -rdynamic >"$bin.log" 2>&1; then
        bad "$name: build" "$(head -n 30 "$bin.log")"
        return 1
    fi
    ok "$name: build ($comp $* -Wall -Wextra -Werror)"
}

# stderr of the last run of NAME MODE: one line matching the pattern, or empty
stderr_is() {
    local name=$1 mode=$2 want=$3 err="$B/$1.$2.err"
    if { [ -z "$want" ] && [ ! -s "$err" ]; } || { [ -n "$want" ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q "$want" "$err"; }; then
        ok "$name $mode: stderr ${want:+one line: }${want:-empty}"
    else
        bad "$name $mode: stderr, want ${want:-nothing}" "$(head -n 10 "$err")"
    fi
}
HIST="MEMOBS_TORCH_SNAPSHOT=$B/atexit.pkl"
WARN_OFF="^memobs: warning: the PyTorch memory snapshot has its segments and blocks but no history of events: set MEMOBS_TORCH_SNAPSHOT or call memobs_torch_history_start()$"

if build c99 "$CC" -std=c99 -O2 -g; then
    run c99 main "$HIST"
    run c99 bound "$HIST" MEMOBS_TORCH_EVENTS=64
    run c99-edge bound "$HIST" MEMOBS_TORCH_EVENTS=65 # the oldest kept: half of a free's record
    run c99 threads "$HIST"
    run c99 live "$HIST"
    run c99 racing "$HIST"
    run c99 nohist "$HIST" MEMOBS_TORCH_EVENTS=0
    stderr_is c99 nohist ""
    run c99 off
    stderr_is c99 off "$WARN_OFF"
    run c99 window
    stderr_is c99 window ""
    run c99 toggle
    # MEMOBS_TORCH_SNAPSHOT at exit, %p expanded
    rm -f "$B"/exit_*.pkl
    pid=$(MEMOBS_TORCH_SNAPSHOT="$B/exit_%p.pkl" "$bin" exit 2>"$B/exit.err")
    if [ -s "$B/exit_$pid.pkl" ] && [ ! -s "$B/exit.err" ]; then
        ok "MEMOBS_TORCH_SNAPSHOT=$B/exit_%p.pkl: written at exit as exit_$pid.pkl, nothing on stderr"
        "$PYTHON" -c 'import json, sys; a = 0x7f0000100000; json.dump({"allocations": [{"ptr": a, "bytes": 4096,
            "kind": 0, "device": 0, "stream": 0x11, "pending": 0, "trace": 0}], "history": [{"recorded": 1, "kept": 1,
            "dropped": 0, "capacity": 16384}], "expected": [[0, a, "alloc"]]}, open(sys.argv[1], "w"))' "$B/exit.json"
        "$PYTHON" tests/python/snapshot_check.py "$B/exit_$pid.pkl" "$B/exit.json" exit "c99 exit" || rc=1
    else
        bad "MEMOBS_TORCH_SNAPSHOT=$B/exit_%p.pkl: not written at exit" "pid '$pid'" "$(ls "$B")" "$(cat "$B/exit.err")"
    fi
    # an unwritable path: one warning, no crash
    MEMOBS_TORCH_SNAPSHOT=/nonexistent-memobs-dir/s.pkl "$bin" exit >/dev/null 2>"$B/exit.err"
    st=$?
    if [ $st -eq 0 ] && [ "$(wc -l <"$B/exit.err")" -eq 1 ] &&
        grep -q "^memobs: warning: cannot write the PyTorch memory snapshot to '/nonexistent-memobs-dir/s.pkl': cannot create a temporary file in its folder" "$B/exit.err"; then
        ok "MEMOBS_TORCH_SNAPSHOT=/nonexistent-memobs-dir/s.pkl: one warning, exit status 0"
    else
        bad "MEMOBS_TORCH_SNAPSHOT unwritable: exit status $st, stderr:" "$(cat "$B/exit.err")"
    fi
    # a malformed MEMOBS_TORCH_EVENTS: one warning, the default
    env MEMOBS_TORCH_EVENTS=lots "$HIST" "$bin" nohist "$B/m.pkl" "$B/m.json" >/dev/null 2>"$B/m.err"
    if [ "$(wc -l <"$B/m.err")" -eq 1 ] && grep -q "MEMOBS_TORCH_EVENTS='lots' is not an event count up to 16777216 (like 16384 or 16K); using 16384" "$B/m.err" &&
        json_check "$B/m.json" 's["history"][0]["capacity"] == 16384 and s["history"][0]["recorded"] == 1'; then
        ok "MEMOBS_TORCH_EVENTS=lots: one warning, 16384 events kept"
    else
        bad "MEMOBS_TORCH_EVENTS=lots" "$(cat "$B/m.err")"
    fi
    # PyTorch itself (Debian's python3-torch) where installed
    if "$TORCH_PYTHON" -c "import torch" >/dev/null 2>&1; then
        "$TORCH_PYTHON" tests/python/snapshot_check.py "$B/c99.main.pkl" "$B/c99.main.json" main "c99 main" --torch || rc=1
        "$TORCH_PYTHON" tests/python/snapshot_check.py "$B/c99.threads.pkl" "$B/c99.threads.json" threads "c99 threads" --torch || rc=1
    else
        echo "ok - snapshot: torch # SKIP $TORCH_PYTHON cannot import torch"
    fi
fi
# memobs_cuda.h's wrappers against the CUDA runtime double (no GPU): their
# marked, settled, failed and stream-ordered frees in the history
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    cb="$B/snapshot_cuda"
    if $CC -std=c11 -O1 -g $W -I"$CUDA_INC" -c -o "$cb.double.o" tests/cuda/cudart_double.c >"$cb.log" 2>&1 &&
        $CC -std=c99 -O1 -g $W -I"$CUDA_INC" -c -o "$cb.o" tests/tracker/test_snapshot_cuda.c >>"$cb.log" 2>&1 &&
        $CC -o "$cb" "$cb.o" "$cb.double.o" -pthread -rdynamic -lm >>"$cb.log" 2>&1; then
        rm -f "$B/cuda.pkl" "$B/cuda.json"
        if "$cb" "$B/cuda.pkl" "$B/cuda.json" >"$B/cuda.out" 2>"$B/cuda.err"; then
            ok "memobs_cuda.h wrappers (runtime double): the run and its counts"
        else
            bad "memobs_cuda.h wrappers (runtime double): the run" "$(cat "$B/cuda.out" "$B/cuda.err" | head -n 20)"
        fi
        [ -s "$B/cuda.pkl" ] && { "$PYTHON" tests/python/snapshot_check.py "$B/cuda.pkl" "$B/cuda.json" cuda "cuda double" || rc=1; }
    else
        bad "memobs_cuda.h wrappers (runtime double): build" "$(head -n 30 "$cb.log")"
    fi
else
    echo "ok - snapshot: memobs_cuda.h wrappers # SKIP no CUDA headers in $CUDA_INC"
fi
if build cxx17 "$CXX" -x c++ -std=c++17 -O2; then
    run cxx17 main "$HIST"
    run cxx17 bound "$HIST" MEMOBS_TORCH_EVENTS=64
    run cxx17 window
fi
if build asan "$CC" -std=c11 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer; then
    run asan main "$HIST"
    run asan bound "$HIST" MEMOBS_TORCH_EVENTS=64
    run asan threads "$HIST"
    run asan live "$HIST"
    run asan racing "$HIST"
    run asan off
    run asan window
    run asan toggle
fi
if build tsan "$CC" -std=c11 -O1 -g -fsanitize=thread; then
    run tsan threads "$HIST"
    run tsan live "$HIST"
    run tsan racing "$HIST"
    run tsan main "$HIST"
    run tsan toggle
fi
exit $rc
