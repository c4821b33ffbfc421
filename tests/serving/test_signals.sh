#!/usr/bin/env bash
# Stop and crash signals (memobs.h's "Private: stops and signals"):
# tests/serving/signals/stop.c built three ways (C99, ASan+UBSan, TSan), each with
# memobs and with MEMOBS_DISABLE (the reference status), then driven by
# tests/serving/signals/drive.py: SIGTERM, SIGINT, SIGHUP, SIGQUIT with the default
# disposition, with the program's own handler before and after memobs,
# SIG_IGN inherited, MEMOBS_SIGNALS=0, memobs_set_signals(0); a second
# SIGINT while the writer is stuck; fork(); crashes; SIGTERM at a random
# moment under recording threads (200 runs C99, 50 ASan, 30 TSan). Then
# the Python package with the real interpreter (tests/serving/signals/py_drive.py):
# Ctrl-C, SIGTERM, SIGHUP, a normal exit, private and attached to the
# LD_PRELOAD library (when the CUDA headers are there to build it).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/signals
mkdir -p "$B"
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
W="-Wall -Wextra -Werror -I."
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
rc=0

. tests/lib.sh # a clean environment, sanitizer options
unset MEMOBS_SIGNALS STOP_MARKER STOP_NO_MEMOBS

# variant NAME SUITE STRESS_RUNS [core] -- COMPILER FLAGS...
variant() {
    local name=$1 suite=$2 stress=$3 core=$4
    shift 5
    local dir="$B/$name"
    mkdir -p "$dir"
    if ! "$@" $W tests/serving/signals/stop.c -o "$dir/stop" -pthread >"$dir/build.log" 2>&1 ||
        ! "$@" $W -DMEMOBS_DISABLE tests/serving/signals/stop.c -o "$dir/stop_ref" -pthread >>"$dir/build.log" 2>&1; then
        echo "not ok - $suite: build ($*)"
        head -n 30 "$dir/build.log" | sed 's/^/    # /'
        rc=1
        return
    fi
    echo "ok - $suite: build ($*)"
    timeout 1500 "$PYTHON" tests/serving/signals/drive.py "$dir/stop" "$dir/stop_ref" "$dir/run" "$suite" "$stress" $core ||
        rc=1
}

variant c99 signals-c99 200 core -- "$CC" -std=c99 -O2 -g
variant asan signals-asan+ubsan 50 "" -- "$CC" -std=c11 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=address,undefined -fno-sanitize-recover=undefined
variant tsan signals-tsan 30 "" -- "$CC" -std=c11 -O1 -g -fsanitize=thread

# The Python package, laid out as `make python-module` lays it out.
if ! PYINC=$("$PYTHON-config" --includes 2>/dev/null) || ! SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    echo "not ok - signals-python: $PYTHON-config not found (install the Python development headers)"
    exit 1
fi
P="$B/py"
rm -rf "$P" && mkdir -p "$P/memobs" &&
    cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed "$P/memobs/"
preload=""
try signals-python "build the package (private and attached)" sh -c "
$CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o '$P/memobs/_memobs$SUFFIX' &&
$CC -std=c99 -O2 -g -fPIC -shared -fvisibility=hidden $W $PYINC -DMEMOBS_PY_ATTACH python/memobs/_memobs.c \
    -o '$P/memobs/_memobs_attached$SUFFIX'"
if [ -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    try signals-python "build the LD_PRELOAD library" $CC -std=gnu11 -O2 -g $W -fPIC -shared -ftls-model=initial-exec \
        -DMEMOBS_TLS_INITIAL_EXEC -I"$CUDA_INC" preload/memobs_preload.c -o "$P/libmemobs_preload.so" \
        -Wl,--version-script=preload/memobs_preload.map -Wl,-z,defs -Wl,-Bsymbolic -pthread -ldl -lm
    preload=$(cd "$P" && pwd)/libmemobs_preload.so
else
    echo "ok - signals-python: no CUDA headers at $CUDA_INC: the attached cases are left out # SKIP"
fi
timeout 600 "$PYTHON" tests/serving/signals/py_drive.py "$P" "$P/run" signals-python $preload || rc=1
exit $rc
