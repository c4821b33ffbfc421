#!/usr/bin/env bash
# The Python package memobs (python/memobs/: its extension memobs._memobs
# from _memobs.c, __init__.py re-exporting it): laid out in $B/memobs/ as
# `make python-module` lays it out (the extension C99, -Werror) and the
# extension compile-checked as C11; then tests/python/test_module.py and
# tests/python/coll_check.py (collectives and peers, memobs_host_api) run
# against it (their ok/not ok lines), the symbols it exports, and
# two checks of a fresh interpreter: MEMOBS=0 starts it disabled, and
# MEMOBS_SUMMARY writes the JSON summary at exit.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build}/pymodule
mkdir -p "$B"
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
W="-Wall -Wextra -Werror -I."

. tests/lib.sh # try, json_check; a clean environment

if ! PYINC=$("$PYTHON-config" --includes 2>/dev/null) || ! SUFFIX=$("$PYTHON-config" --extension-suffix 2>/dev/null); then
    echo "not ok - pymodule: $PYTHON-config not found (install the Python development headers)"
    exit 1
fi
# pkgdir DIR: DIR/memobs/ with the package's Python files (the extension is
# built into it by the caller); the module of the layout before the package
# (DIR/memobs<suffix>.so) is removed, so that nothing but the package is found
pkgdir() {
    rm -rf "$1/memobs" && rm -f "$1"/memobs.*so && mkdir -p "$1/memobs" &&
        cp python/memobs/*.py python/memobs/__init__.pyi python/memobs/py.typed "$1/memobs/"
}
pkgdir "$B" || { echo "not ok - pymodule: lay out $B/memobs/"; exit 1; }
MOD="$B/memobs/_memobs$SUFFIX"

if ! $CC -std=c99 -O2 -g -fPIC -shared $W $PYINC python/memobs/_memobs.c -o "$MOD" >"$B/build.log" 2>&1; then
    echo "not ok - pymodule: build ($CC -std=c99 -fPIC -shared $W)"
    head -n 30 "$B/build.log" | sed 's/^/    # /'
    exit 1
fi
echo "ok - pymodule: build ($CC -std=c99 -fPIC -shared, -Werror)"
try pymodule "compile as C11 (-Werror)" $CC -std=c11 -O2 -fPIC $W $PYINC -c python/memobs/_memobs.c \
    -o "$B/c11.o"
# the build for the LD_PRELOAD library's memobs (memobs._memobs_attached):
# C99 and C11, warning-free; it is not laid out here (no preload in this
# test: tests/preload/test_preload_python.sh runs it), so the package takes the
# private memobs, as it must when the attached module is absent
try pymodule "compile the attached build (MEMOBS_PY_ATTACH) as C99 and C11 (-Werror)" sh -c "
$CC -std=c99 -O2 -fPIC -shared -fvisibility=hidden $W $PYINC -DMEMOBS_PY_ATTACH python/memobs/_memobs.c -o '$B/attached.so' &&
$CC -std=c11 -O2 -fPIC $W $PYINC -DMEMOBS_PY_ATTACH -c python/memobs/_memobs.c -o '$B/attached_c11.o'"

# pycheck PY DIR SCRIPT SUITE [TAG]: tests/python/SCRIPT under PY with the
# package in DIR; its own ok/not ok lines (SUITE renamed SUITE-TAG when TAG
# is given); stderr (memobs' expected warnings) kept aside, shown only if
# the script dies without reporting.
pycheck() {
    local py=$1 dir=$2 script=$3 suite=$4 name=$4${5:+-$5} out="$2/${3%.py}.out" err="$2/${3%.py}.err" status
    PYTHONPATH="$dir" "$py" "tests/python/$script" >"$out" 2>"$err"
    status=$?
    grep -E '^(not )?ok - |^    # ' "$out" | sed "s/ - $suite: / - $name: /"
    if [ "$status" -ne 0 ]; then
        rc=1
        if ! grep -q '^not ok - ' "$out"; then
            echo "not ok - $name: $script exited with status $status"
            tail -n 20 "$err" | sed 's/^/    # /'
        fi
    fi
}

# The functional checks, and memobs.nanovllm (the drop-in for nano-vllm's
# observers) against a reference model of nano-vllm's semantics.
pycheck "$PYTHON" "$B" test_module.py pymodule
pycheck "$PYTHON" "$B" nanovllm_check.py nanovllm
# Collectives and peers (a process of their own: their tables outlive reset())
pycheck "$PYTHON" "$B" coll_check.py coll-py

# memobs_host_api, the table NCCL's profiler plugin looks up in the loaded
# objects: exported (default visibility) by the private build, beside
# PyInit__memobs and nothing else of memobs; the attached build defines
# none (the LD_PRELOAD library's serves there).
exports=$(nm -D --defined-only "$MOD" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')
att_host=$(nm -D "$B/attached.so" 2>&1 | grep -c 'memobs_host_api')
if [ "$exports" = "PyInit__memobs memobs_host_api " ] && [ "$att_host" = 0 ]; then
    echo "ok - pymodule: the private build exports PyInit__memobs and memobs_host_api only; the attached build has no memobs_host_api"
else
    echo "not ok - pymodule: the private build exports PyInit__memobs and memobs_host_api only; the attached build has no memobs_host_api"
    echo "    # private build's text symbols: $exports"
    echo "    # memobs_host_api in the attached build: $(nm -D "$B/attached.so" 2>&1 | grep memobs_host_api)"
    rc=1
fi

# The package and a C library of the same process (its own memobs, default
# visibility, loaded RTLD_GLOBAL first): two instances, each exact, neither
# sees the other's records (the module's memobs is MEMOBS_HIDDEN).
printf '%s\n' '#define MEMOBS_IMPLEMENTATION' '#include "memobs.h"' \
    'void engine_copy(unsigned long long n) { MEMOBS_RECORD_H2D(n, 1); }' \
    'unsigned long long engine_h2d(void) { memobs_summary_t s; memobs_get_summary(&s); return s.total.h2d.bytes; }' \
    >"$B/engine.c"
ABS_B=$(cd "$B" && pwd)
try pymodule "the package beside a C library with its own memobs (RTLD_GLOBAL): two instances, each exact" sh -c "
$CC -std=c99 -O2 -fPIC -shared $W '$B/engine.c' -o '$B/libengine.so' -pthread && env PYTHONPATH='$B' '$PYTHON' -c '
import ctypes
lib = ctypes.CDLL(\"$ABS_B/libengine.so\", mode=ctypes.RTLD_GLOBAL)
lib.engine_h2d.restype = ctypes.c_ulonglong
import memobs
lib.engine_copy(ctypes.c_ulonglong(1000))
memobs.record_h2d(7, True)
lib.engine_copy(ctypes.c_ulonglong(24))
assert lib.engine_h2d() == 1024, lib.engine_h2d()
assert memobs.get_summary()[\"total\"][\"h2d_bytes\"] == 7, memobs.get_summary()[\"total\"]
'"

try pymodule "MEMOBS=0: the module starts disabled, records nothing" env MEMOBS=0 PYTHONPATH="$B" "$PYTHON" -c '
import memobs
memobs.record_h2d(5, True)
s = memobs.get_summary()
assert memobs.get_enabled() is False and s["enabled"] is False, s["enabled"]
assert s["total"]["h2d_count"] == 0, s["total"]'

rm -f "$B"/exit_*.json
env MEMOBS_SUMMARY="$B/exit_%p.json" MEMOBS_FORMAT=json PYTHONPATH="$B" "$PYTHON" -c '
import memobs
memobs.record_h2d(4096, True)
memobs.record_d2h(512, False)
memobs.record_d2d(64, None)
memobs.record_s2h(1000, True)
memobs.record_xfer_ns("d2s", 2048, False, 500)' >"$B/log" 2>&1
f=$(ls "$B"/exit_*.json 2>/dev/null | head -n 1)
try pymodule "MEMOBS_SUMMARY=path: JSON summary at interpreter exit, exact (the storage tier and its timed figures included)" \
    json_check "${f:-$B/missing.json}" \
    's["total"] == {"h2d_bytes": 4096, "h2d_count": 1, "d2h_bytes": 512, "d2h_count": 1, "d2d_bytes": 64, "d2d_count": 1, "h2s_bytes": 0, "h2s_count": 0, "s2h_bytes": 1000, "s2h_count": 1, "d2s_bytes": 2048, "d2s_count": 1, "s2d_bytes": 0, "s2d_count": 0} and s["unphased"]["d2d_bytes"] == 64 and s["timed"]["decode"]["d2s"] == {"bytes": 2048, "count": 1, "ns": 500} and s["sizes"]["s2h"]["count"] == 1 and s["identity"]["pid"] > 0'

# The module and test_module.py under every other CPython 3.9-3.13 the
# machine has (pyenv's versions): each is its own build.
def=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
for py in /root/.pyenv/versions/3.*/bin/python3; do
    [ -x "$py" ] || continue
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
    case "$ver" in 3.9|3.1[0-3]) ;; *) continue ;; esac
    [ "$ver" = "$def" ] && continue
    d="$B/cpython$ver"
    mkdir -p "$d" && pkgdir "$d" || { echo "not ok - pymodule-cpython$ver: lay out $d/memobs/"; rc=1; continue; }
    if ! $CC -std=c99 -O2 -fPIC -shared $W $("$py-config" --includes) python/memobs/_memobs.c \
        -o "$d/memobs/_memobs$("$py-config" --extension-suffix)" >"$d/build.log" 2>&1; then
        echo "not ok - pymodule-cpython$ver: build"; head -n 20 "$d/build.log" | sed 's/^/    # /'; rc=1; continue
    fi
    pycheck "$py" "$d" test_module.py pymodule "cpython$ver"
    pycheck "$py" "$d" nanovllm_check.py nanovllm "cpython$ver"
    pycheck "$py" "$d" coll_check.py coll-py "cpython$ver"
done
exit $rc
