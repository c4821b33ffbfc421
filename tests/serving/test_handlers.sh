#!/usr/bin/env bash
# Signal handlers and bounds (tests/serving/handlers/handlers.c, py_bounds.py):
#   - records, counters, TTFT/TPOT samples, request calls and tracked
#     allocs/frees made from SIGUSR1 (sent by a third thread) and SIGALRM
#     (an interval timer) handlers while 2 threads record in a loop: counts
#     exact (loop + handler, both counted by the test; a handler's tracked
#     pair refused inside memobs counted in signal_dropped), no hang: every
#     run has a time limit; fresh threads whose first record races a signal;
#   - a signal raised inside a thread's first record (its shard being
#     acquired, the lock held) and inside the tracker (MEMOBS_MALLOC under
#     its set-up lock and under a stripe's lock): nothing waits, the refused
#     calls counted and shown by the text, JSON, Prometheus and HTML outputs;
#   - values above MEMOBS_MAX_BYTES / MEMOBS_MAX_NS refused and counted as
#     bad records, sums saturating; the Python package's ValueError, in its
#     own build and in the build attached to the LD_PRELOAD library's memobs.
# Builds: C99 -O2 (x86-64: one-instruction adds), C99 with the generic
# path (-DMEMOBS__NO_ASM_ADD: the per-thread mark, as on aarch64),
# ASan+UBSan, TSan. Storm runs (HS_RUNS, default 1000, scales them all):
# C99 1000, generic 200, ASan 20, TSan 10; race runs (20 fresh threads
# each): C99 100, generic 50, ASan 10, TSan 10.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/handlers
mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CXX=${CXX:-c++}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I."
RUNS=${HS_RUNS:-1000}
LIMIT=30 # seconds a run may take (a hang fails the run; a storm run takes ~30 ms)
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset LD_PRELOAD MEMOBS_PY_ATTACH
ok() { echo "ok - handlers: $1"; }
bad() { echo "not ok - handlers: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

# build NAME COMPILER FLAGS...: $B/hs_NAME, in the background (the builds
# run side by side); its log in $B/hs_NAME.log, its status in $B/hs_NAME.st
build() {
    local name=$1 comp=$2
    shift 2
    rm -f "$B/hs_$name" "$B/hs_$name.st"
    { $comp "$@" $W -DTEST_SUITE="\"handlers-$name\"" -o "$B/hs_$name" tests/serving/handlers/handlers.c -pthread \
        >"$B/hs_$name.log" 2>&1; echo $? >"$B/hs_$name.st"; } &
}
# built NAME: 0 when NAME built (else says so)
built() {
    [ "$(cat "$B/hs_$1.st" 2>/dev/null)" = 0 ] && return 0
    bad "$1: build failed" "$(head -n 20 "$B/hs_$1.log")"
    return 1
}

# modes NAME: the one-shot modes (their own ok/not ok lines), each with a time limit
modes() {
    local m
    for m in first malloc bounds; do
        timeout $LIMIT "$B/hs_$1" $m 2>"$B/$1.$m.err"
        case $? in
        0) ;;
        124) bad "$1: $m hung (killed after ${LIMIT} s)" ;;
        *) rc=1; echo "    # $1 $m: $(head -c 300 "$B/$1.$m.err")" ;;
        esac
    done
}

# runs NAME MODE RUNS ARGS...: RUNS processes of MODE, each with a time
# limit; one line: runs, hangs, failures and the figures summed
runs() {
    local name=$1 mode=$2 n=$3 i st hangs=0 fails=0 recs=0 calls=0 dropped=0 a b c d first=""
    shift 3
    for ((i = 0; i < n; i++)); do
        timeout $LIMIT "$B/hs_$name" "$mode" "$@" >"$B/run.out" 2>"$B/run.err"
        st=$?
        if [ $st -eq 124 ]; then
            hangs=$((hangs + 1))
            [ -n "$first" ] || first="run $((i + 1)) hung (killed after ${LIMIT} s)"
        elif [ $st -ne 0 ]; then
            fails=$((fails + 1))
            [ -n "$first" ] || first="run $((i + 1)): $(head -c 1500 "$B/run.out") $(head -c 500 "$B/run.err")"
        elif read -r a b c d <"$B/run.out" && [ "$a" = stats ]; then
            recs=$((recs + b)) calls=$((calls + c)) dropped=$((dropped + d))
        fi
    done
    if [ $hangs -eq 0 ] && [ $fails -eq 0 ]; then
        if [ "$mode" = storm ]; then
            ok "$name: storm: $n runs, none hung, counts exact ($recs loop records of each form, $calls handler calls, $dropped tracked calls refused inside memobs)"
        else
            ok "$name: race: $n runs of $1 fresh threads, none hung, counts exact ($calls handler calls)"
        fi
    else
        bad "$name: $mode: $n runs: $hangs hung, $fails failed" "$first"
    fi
}

PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null)
if ! PYINC=$("$PYTHON-config" --includes 2>/dev/null) || ! SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null) ||
    [ -z "$PY" ]; then
    bad "python: $PYTHON or $PYTHON-config not found"
    PY=
fi
PKG=$B/python

# 1. every build, side by side: C99 -O2 (on x86-64 its path of one-instruction
# adds), the generic path (a per-thread mark around the read-add-write, as on
# aarch64), ASan+UBSan, TSan; the Python package's two builds (-O0: only
# their argument checks are tested here) and the LD_PRELOAD library
build c99 "$CC" -std=c99 -O2 -g
build generic "$CC" -std=c99 -O2 -g -DMEMOBS__NO_ASM_ADD
build asan "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
build tsan "$CC" -std=c11 -O1 -g -fsanitize=thread
if [ -n "$PY" ]; then
    rm -rf "$PKG" && mkdir -p "$PKG/memobs" && cp python/memobs/*.py "$PKG/memobs/"
    { $CC -std=c99 -O0 -fPIC -shared $W $PYINC python/memobs/_memobs.c -o "$PKG/memobs/_memobs$SUFFIX" \
        >"$B/py.log" 2>&1; echo $? >"$B/py.st"; } &
    if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
        { make -s BUILD="$B/pl" CFLAGS=-O0 CUDA_INC="$CUDA_INC" preload >"$B/pl.log" 2>&1 &&
            $CC -std=c99 -O0 -fPIC -shared -fvisibility=hidden $W $PYINC -DMEMOBS_PY_ATTACH python/memobs/_memobs.c \
                -o "$PKG/memobs/_memobs_attached$SUFFIX" >>"$B/pl.log" 2>&1; echo $? >"$B/pl.st"; } &
    fi
fi
wait

# 2. the runs
if built c99; then
    modes c99
    runs c99 storm "$RUNS" 1 15
    runs c99 race $((RUNS / 10)) 20
fi
if built generic; then
    modes generic
    runs generic storm $((RUNS / 5)) 1 15
    runs generic race $((RUNS / 20)) 20
fi
if built asan; then
    modes asan
    runs asan storm $((RUNS / 50)) 1 15
    runs asan race $((RUNS / 100)) 20
fi
if built tsan; then
    modes tsan
    runs tsan storm $((RUNS / 100)) 1 15
    runs tsan race $((RUNS / 100)) 20
fi

# 3. Python: the package's own build and the build attached to the LD_PRELOAD library's memobs
if [ -n "$PY" ]; then
    if [ "$(cat "$B/py.st" 2>/dev/null)" = 0 ]; then
        timeout $LIMIT env PYTHONPATH="$PKG" "$PY" tests/serving/handlers/py_bounds.py private 2>"$B/py_private.err" ||
            bad "python (private): py_bounds.py failed" "$(head -n 5 "$B/py_private.err")"
    else
        bad "python: build memobs._memobs" "$(head -n 20 "$B/py.log")"
    fi
    if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
        bad "python (attached): $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC): the LD_PRELOAD library needs it"
    elif [ "$(cat "$B/pl.st" 2>/dev/null)" = 0 ]; then
        timeout $LIMIT env LD_PRELOAD="$B/pl/libmemobs_preload.so" PYTHONPATH="$PKG" "$PY" tests/serving/handlers/py_bounds.py \
            preload 2>"$B/py_preload.err" || bad "python (attached): py_bounds.py failed" "$(head -n 5 "$B/py_preload.err")"
    else
        bad "python (attached): build the LD_PRELOAD library and memobs._memobs_attached" "$(head -n 20 "$B/pl.log")"
    fi
fi
exit $rc
