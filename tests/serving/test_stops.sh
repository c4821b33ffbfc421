#!/usr/bin/env bash
# What survives what (issue 25): a program that records, tracks, samples and
# keeps a timeline, every output variable set, stopped each way: return,
# exit(), SIGTERM, SIGINT, SIGHUP, SIGQUIT (without and with a handler of
# its own, installed before or after memobs', that sets a flag or calls
# _exit), SIGSEGV, abort, _exit, SIGKILL (plain, after memobs_flush(), and
# while the 4M-event trace is written at exit), MEMOBS_SIGNALS=0 and
# memobs_set_signals(0), a full device and a full disk, MEMOBS_SUMMARY=stdout
# into a closed pipe, fork (the child ending after the parent, both
# together, paths with %p), two memobs instances in one process; the same
# for the Python package (Ctrl-C, SIGTERM) and the LD_PRELOAD library
# (against the CUDA runtime double); a few of the C cases again under
# ASan+UBSan and TSan. tests/python/stops_check.py runs the cases and checks
# every output (it says how), the exit status against the same program
# without memobs, and that nothing else is left in the folder; it prints one
# line per case and the table docs/outputs.md shows ("What survives what").
# About a minute on 2 busy cores.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/stops
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror -I."

. tests/lib.sh # a clean environment, try
unset LD_PRELOAD # lib.sh clears the MEMOBS_ variables
B=$(cd "$B" && pwd)

# build NAME CMD...: one build step; its failure is a failed check (the
# cases that need it then fail as "not built"), never the end of the run
build() {
    local name=$1
    shift
    if "$@" >"$B/build_$name.log" 2>&1; then
        return 0
    fi
    echo "not ok - stops: build $name"
    head -n 15 "$B/build_$name.log" | sed 's/^/    # /'
    rc=1
    return 1
}

build stops $CC -std=c99 -O2 -g $W tests/serving/stops/stops.c -o "$B/stops" -pthread -lm
build stops_ref $CC -std=c99 -O2 -g $W -DMEMOBS_DISABLE tests/serving/stops/stops.c -o "$B/stops_ref" -pthread -lm
build stops_setsig $CC -std=c99 -O2 -g $W -DSTOPS_SET_SIGNALS tests/serving/stops/stops.c -o "$B/stops_setsig" -pthread -lm
build stops_asan $CC -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
    -fno-sanitize-recover=undefined $W tests/serving/stops/stops.c -o "$B/stops_asan" -pthread -lm
build stops_tsan $CC -std=c11 -O1 -g -fsanitize=thread $W tests/serving/stops/stops.c -o "$B/stops_tsan" -pthread -lm
build instances sh -c "
    $CC -std=c99 -O2 -g $W -DMEMOBS_HIDDEN -fPIC -shared tests/serving/stops/inst.c -o '$B/libinst_a.so' -pthread &&
    $CC -std=c99 -O2 -g $W -DMEMOBS_HIDDEN -fPIC -shared tests/serving/stops/inst.c -o '$B/libinst_b.so' -pthread &&
    $CC -std=c99 -O2 -g $W tests/serving/stops/inst_main.c -o '$B/inst_main' -ldl"
# the preload and the runtime double, as tests/preload/test_preload.sh builds them
build preload make -s BUILD="$B" preload
build cuda_double sh -c "
    $CC -std=c11 -O2 -g -fPIC -shared $W -I'$CUDA_INC' tests/cuda/cudart_double.c -o '$B/libcudart.so.13' \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g $W -I'$CUDA_INC' tests/serving/stops/cuda_stops.c -o '$B/cuda_stops' -L'$B' -l:libcudart.so.13 -pthread"
# the Python package laid out as tests/python/test_pymodule.sh lays it out
if PYINC=$("$PYTHON-config" --includes 2>/dev/null) && SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    build python sh -c "mkdir -p '$B/py/memobs' &&
        cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed '$B/py/memobs/' &&
        $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o '$B/py/memobs/_memobs$SUFFIX'"
else
    echo "not ok - stops: build python: $PYTHON-config not found (install the Python development headers)"
    rc=1
fi
if ! command -v promtool >/dev/null; then
    echo "not ok - stops: promtool not found (tests/deps.sh installs Debian's prometheus)"
    rc=1
fi

# The full-disk case mounts a 64 KiB tmpfs: only as root, and in a mount
# namespace of its own, so that nothing outlives the run.
run=("$PYTHON" tests/python/stops_check.py "$B")
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    run=(unshare -m --propagation private "${run[@]}" --tmpfs)
fi
timeout 900 "${run[@]}" "$@" || rc=1
exit $rc
