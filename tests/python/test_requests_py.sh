#!/usr/bin/env bash
# Attribution to requests from Python: memobs.request (with),
# request_enter/leave, request_xfer, request_xfer_split, request_tenant,
# request_info, request_top, request_id, get_summary()["attributed"].
# The package is laid out in $B/py/memobs/ as tests/python/test_pymodule.sh
# lays it out (the extension C99, -Werror), then
# tests/python/requests_check.py runs against it with MEMOBS_REQUESTS set
# (its ok/not ok lines: ledgers, the split's parts, str ids, tenants, the
# top lists, bad arguments, the request lines, 8 threads exact); stderr
# holds memobs' three expected warnings, once each. Then the package
# attached to the LD_PRELOAD library's memobs ($B/att/memobs/ with
# memobs._memobs_attached, `make preload`, the runtime double as
# libcudart.so.13 and tests/preload/user.c, as
# tests/preload/test_preload_python.sh builds them): a copy the library
# observes on a bound thread is the request's.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}/requests-py
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment
unset LD_PRELOAD MEMOBS_PY_ATTACH MEMOBS_REQUESTS
rc=0
ok() { echo "ok - requests-py: $1"; }
bad() { echo "not ok - requests-py: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if ! PYINC=$("$PYTHON-config" --includes 2>/dev/null) || ! SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    echo "not ok - requests-py: $PYTHON-config not found (install the Python development headers)"
    exit 1
fi
# the interpreter itself, not a launcher script (under the preload, a shim's helper processes would load it too)
if ! PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null) || [ ! -x "$PY" ]; then
    echo "not ok - requests-py: $PYTHON not found"
    exit 1
fi
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - requests-py: $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi

# the builds: the package's private extension (C99) and its attached build
# (C11, hidden, as make python-module builds it), the preload library, the
# runtime double and libuser.so linked to it
for d in py att; do
    mkdir -p "$B/$d/memobs" && cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed "$B/$d/memobs/" ||
        { echo "not ok - requests-py: lay out $B/$d/memobs/"; exit 1; }
done
if { $CC -std=c99 -O2 -g -fPIC -shared $W -I. $PYINC python/memobs/_memobs.c -o "$B/py/memobs/_memobs$SUFFIX" &&
    cp "$B/py/memobs/_memobs$SUFFIX" "$B/att/memobs/" &&
    $CC -std=c11 -O2 -g -fPIC -shared -fvisibility=hidden $W -I. $PYINC -DMEMOBS_PY_ATTACH python/memobs/_memobs.c \
        -o "$B/att/memobs/_memobs_attached$SUFFIX" &&
    make -s BUILD="$B" preload &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" tests/cuda/cudart_double.c -o "$B/libcudart.so.13" \
        -Wl,-soname,libcudart.so.13 -Wl,--version-script=mk/cudart_double.map -pthread &&
    $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" tests/preload/user.c -o "$B/libuser.so" \
        -L"$B" -l:libcudart.so.13; } >"$B/build.log" 2>&1 && [ ! -s "$B/build.log" ] && [ -f "$B/libmemobs_preload.so" ]; then
    ok "build: the extension (C99) and its attached build (C11) warning-free (-Werror), make preload, the runtime double as libcudart.so.13, libuser.so"
else
    bad "build: the extension, its attached build, make preload, the double, libuser.so" "$(head -c 3000 "$B/build.log")"
    exit 1
fi

# checks NAME: the checker's own ok/not ok lines; a death without them is one not ok
checks() {
    grep -E '^(not )?ok - |^    # ' "$B/$1.out"
    grep -q '^not ok - ' "$B/$1.out" && rc=1
    if [ "$(cat "$B/$1.st")" != 0 ] && ! grep -q '^not ok - ' "$B/$1.out"; then
        bad "$1: requests_check.py exited with status $(cat "$B/$1.st")" "$(tail -n 15 "$B/$1.err")"
    fi
}

# 1. the private memobs
timeout 300 env PYTHONPATH="$B/py" MEMOBS_REQUESTS="$B/lines.jsonl" "$PY" tests/python/requests_check.py private \
    "$B/lines.jsonl" >"$B/private.out" 2>"$B/private.err"
echo $? >"$B/private.st"
checks private
want="memobs: warning: memobs_request_leave() with no request entered on this thread; ignored (counted)
memobs: warning: memobs_request_tenant(801, ...) names a request that has another tenant already (kept); ignored (counted)
memobs: warning: 751 bytes attributed to request 1103, which is not in flight (never begun, or ended); in the attributed figures, in no request's ledger (counted)"
if [ "$(cat "$B/private.err")" = "$want" ]; then
    ok "stderr: memobs' three warnings (a leave with no enter, a second tenant, an orphan), each once, nothing else"
else
    bad "stderr: memobs' three warnings, each once, nothing else" "expected:" "$want" "actual:" "$(head -c 2000 "$B/private.err")"
fi

# 2. attached to the LD_PRELOAD library's memobs
timeout 120 env LD_PRELOAD="$B/libmemobs_preload.so" LD_LIBRARY_PATH="$B" PYTHONPATH="$B/att" MEMOBS_OOM_REPORT=0 \
    MEMOBS_REQUESTS="$B/att_lines.jsonl" "$PY" tests/python/requests_check.py attached "$B" "$B/att_lines.jsonl" \
    >"$B/attached.out" 2>"$B/attached.err"
echo $? >"$B/attached.st"
checks attached
if [ ! -s "$B/attached.err" ]; then
    ok "attached: nothing on stderr"
else
    bad "attached: nothing on stderr" "$(head -c 2000 "$B/attached.err")"
fi
exit $rc
