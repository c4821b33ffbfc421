#!/usr/bin/env bash
# Signals that are not memobs' own (issue 38, items 6 to 11): a host that
# takes its signals with sigwait() in a thread of its own, a launcher that
# forwards a stop the process already got (a second stop 5, 10, 20, 30 ms
# after the first), the impatient rule (a second stop after a second, or a
# third), two memobs instances in one process stopped by SIGTERM (20 runs),
# a crash the program's own handler recovers from, SIGBUS BUS_MCEERR_AO, a
# stack overflow on a thread other than main, and Python: the LD_PRELOAD
# library in python3 (signal.getsignal is never None) and a uvicorn-style
# save/restore/raise of the handlers. Builds tests/serving/hostile/signals_host.c
# (C99, ASan+UBSan, TSan), tests/serving/stops/inst.c twice as MEMOBS_HIDDEN
# objects with tests/serving/stops/inst_main.c, the Python package and the preload;
# tests/serving/hostile/signals_drive.py runs the cases.
# MEMOBS_H_DIR=DIR builds against DIR/memobs.h (another version: the
# "before" of the issue's table).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/hostile-signals
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
INC="-I${MEMOBS_H_DIR:-.} -I."
W="-Wall -Wextra -Werror $INC"
S=hostile-signals

. tests/lib.sh # a clean environment, try
unset LD_PRELOAD

build() { # NAME CMD...: a failed build is a failed check
    local name=$1
    shift
    if "$@" >"$B/build_$name.log" 2>&1; then
        echo "ok - $S: build $name"
        return 0
    fi
    echo "not ok - $S: build $name"
    head -n 20 "$B/build_$name.log" | sed 's/^/    # /'
    rc=1
    return 1
}

build host $CC -std=c99 -O2 -g $W tests/serving/hostile/signals_host.c -o "$B/signals_host" -pthread -lm
build host_asan $CC -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined $W tests/serving/hostile/signals_host.c -o "$B/signals_host_asan" -pthread -lm
build host_tsan $CC -std=c11 -O1 -g -fsanitize=thread $W tests/serving/hostile/signals_host.c -o "$B/signals_host_tsan" \
    -pthread -lm
build instances sh -c "
    $CC -std=c99 -O2 -g $W -DMEMOBS_HIDDEN -fPIC -shared tests/serving/stops/inst.c -o '$B/libinst_a.so' -pthread &&
    $CC -std=c99 -O2 -g $W -DMEMOBS_HIDDEN -fPIC -shared tests/serving/stops/inst.c -o '$B/libinst_b.so' -pthread &&
    $CC -std=c99 -O2 -g $W tests/serving/stops/inst_main.c -o '$B/inst_main' -ldl"
if PYINC=$("$PYTHON-config" --includes 2>/dev/null) && SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    build python sh -c "mkdir -p '$B/py/memobs' &&
        cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed '$B/py/memobs/' &&
        $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o '$B/py/memobs/_memobs$SUFFIX' &&
        $CC -std=c99 -O2 -g -fPIC -shared -fvisibility=hidden $W $PYINC -DMEMOBS_PY_ATTACH python/memobs/_memobs.c \
            -o '$B/py/memobs/_memobs_attached$SUFFIX'"
else
    echo "not ok - $S: $PYTHON-config not found (install the Python development headers)"
    rc=1
fi
build preload $CC -std=gnu11 -O2 -g $W -fPIC -shared -ftls-model=initial-exec -DMEMOBS_TLS_INITIAL_EXEC \
    -I"$CUDA_INC" preload/memobs_preload.c -o "$B/libmemobs_preload.so" \
    -Wl,--version-script=preload/memobs_preload.map -Wl,-z,defs -Wl,-Bsymbolic -pthread -ldl -lm

# the sanitizer builds: the cases that need no timing (ASan keeps its own
# alternate stacks, so the overflow case is the C99 build's)
if [ -x "$B/signals_host_tsan" ]; then
    d="$B/run/tsan-sigwait" && mkdir -p "$d"
    try $S "TSan: a sigwait server with the periodic Prometheus writer and the sampler: SIGHUP, SIGTERM to its own thread, exit 0" \
        sh -c "cd '$d' && ( MEMOBS_PROM_FILE=m.prom MEMOBS_PROM_INTERVAL_MS=100 MEMOBS_SAMPLE_MS=5 '$B/signals_host_tsan' sigwait >out.txt 2>err.txt & pid=\$!
            i=0; until grep -q ready out.txt 2>/dev/null && [ -s m.prom ]; do i=\$((i+1)); [ \$i -gt 6000 ] && break; sleep 0.01; done
            kill -HUP \$pid; i=0; until grep -q 'reload 1' out.txt; do i=\$((i+1)); [ \$i -gt 6000 ] && break; sleep 0.01; done
            kill -TERM \$pid; wait \$pid; r=\$?; cat out.txt err.txt; [ \$r = 0 ] && grep -q term out.txt )"
fi
timeout 1200 "$PYTHON" tests/serving/hostile/signals_drive.py "$B" $S "$@" || rc=1
exit $rc
