#!/usr/bin/env bash
# A PyTorch-shaped Python engine under LD_PRELOAD=libmemobs_preload.so,
# end to end. Builds `make preload python-module`, the runtime double
# (tests/cuda/cudart_double.c) as major N (-DCUDADBL_MAJOR=N, soname
# libcudart.so.N with its symbol version) and tests/preload/engine/faketorch.c
# as libfaketorch.so, linked to it by soname as libtorch_cuda.so is to
# libcudart; then runs tests/preload/engine/engine.py, which loads
# libfaketorch.so with ctypes (RTLD_LOCAL: the runtime is in no global
# scope) and sets phases and regions from the package memobs, with and
# without the preload. Checks: the program binds the runtime's version; the
# package attached to the preload's memobs sees at every step exactly what
# the engine's ledger says it did (copies by phase and direction, device
# current/peak/allocs/frees/live), a Python stack on every intercepted
# allocation; the preload's JSON summary at exit holds the same figures,
# the regions, the pinned buffer and the failed calls; every CUDA call's
# return code is the same with and without the preload; nothing on stderr.
#
#   ENGINE_MAJOR="12 11 13"  the runtime's majors: 11, 12 or 13, each in turn (default: all three)
#   ENGINE_DRIVER_ENTRY=1    also an expandable segment (PyTorch's
#                            expandable_segments:True): cuMemCreate, cuMemMap,
#                            cuMemSetAccess, cuMemUnmap, cuMemRelease,
#                            cuMemAddressReserve/Free and the granularity,
#                            fetched with cudaGetDriverEntryPoint(ByVersion);
#                            0: without (default 1)
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/preload-engine
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
PYTHON=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
MAJORS=${ENGINE_MAJOR:-12 11 13}
ENTRY=${ENGINE_DRIVER_ENTRY:-1}
W="-Wall -Wextra -Werror"

. tests/lib.sh # a clean environment, expect_check, line
unset LD_PRELOAD MEMOBS_PRELOAD_ROOT MEMOBS_PY_ATTACH PYTORCH_CUDA_ALLOC_CONF
ok() { echo "ok - preload-engine: $1"; }
bad() { echo "not ok - preload-engine: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

for m in $MAJORS; do
    case $m in 11 | 12 | 13) ;; *) echo "not ok - preload-engine: ENGINE_MAJOR='$MAJORS': each must be 11, 12 or 13"; exit 1 ;; esac
done
case $ENTRY in 0 | 1) ;; *) echo "not ok - preload-engine: ENGINE_DRIVER_ENTRY='$ENTRY' is not 0 or 1"; exit 1 ;; esac
if [ ! -f "$CUDA_INC/cuda_runtime_api.h" ]; then
    echo "not ok - preload-engine: $CUDA_INC/cuda_runtime_api.h is missing (set CUDA_INC; tests/deps.sh installs the toolkit)"
    exit 1
fi
# the interpreter itself, not a launcher script (it would load the preload too)
if ! PY=$("$PYTHON" -c 'import sys; print(sys.executable)' 2>/dev/null) || [ ! -x "$PY" ]; then
    echo "not ok - preload-engine: $PYTHON not found"
    exit 1
fi

rc=0
LIB=$B/libmemobs_preload.so
PKG=$B/python

if make -s BUILD="$B" preload python-module >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$LIB" ]; then
    ok "build: make preload python-module warning-free"
else
    bad "build: make preload python-module warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi

# engine MAJOR: the whole run for one major, in $B/MAJOR
engine() {
    local m=$1 v=$1 d=$B/$1 map flags="" vmm="" need miss="" bind out
    [ "$m" = 11 ] && v=11.0
    mkdir -p "$d"
    # the double's version script: mk/cudart_double.V.map, or the one in mk/ naming the node
    # libcudart.so.V, else one made here
    map=mk/cudart_double.$v.map
    [ -f "$map" ] || map=$(grep -l "^libcudart\.so\.$v *{" mk/cudart_double*.map 2>/dev/null | head -n 1)
    if [ -z "$map" ]; then
        map=$d/cudart_double.map
        printf 'libcudart.so.%s {\n  global: *;\n};\n' "$v" >"$map"
    fi
    if ! $CC -std=c11 -O2 -g -fPIC -shared $W -I. -I"$CUDA_INC" -DCUDADBL_MAJOR="$m" tests/cuda/cudart_double.c \
        -o "$d/libcudart.so.$v" -Wl,-soname,"libcudart.so.$v" -Wl,--version-script="$map" -pthread >"$d/build.log" 2>&1 ||
        [ -s "$d/build.log" ]; then
        bad "major $m: the runtime double as libcudart.so.$v ($map) builds warning-free" "$(head -c 3000 "$d/build.log")"
        return
    fi
    if [ "$ENTRY" = 1 ]; then
        # the driver entry points and VMM the engine calls: in the double?
        need="cudaGetDriverEntryPoint cuMemGetAllocationGranularity cuMemAddressReserve cuMemAddressFree cuMemCreate
            cuMemMap cuMemSetAccess cuMemUnmap cuMemRelease"
        local syms
        syms=$(nm -D --defined-only "$d/libcudart.so.$v" | awk '{print $3}' | sed 's/@.*//')
        for f in $need; do echo "$syms" | grep -qx "$f" || miss="$miss $f"; done
        if [ -n "$miss" ]; then
            bad "major $m: the runtime double defines the entry-point and VMM calls the engine makes (ENGINE_DRIVER_ENTRY=0: the engine without them)" \
                "missing:$miss"
            return
        fi
        flags="-DFT_VMM"
        vmm=vmm
        # as c10's DriverAPI: cudaGetDriverEntryPointByVersion where the runtime has it (12.5 and later)
        [ "$m" != 11 ] && echo "$syms" | grep -qx cudaGetDriverEntryPointByVersion && flags="$flags -DFT_BY_VERSION"
    fi
    if ! $CC -std=c11 -O2 -g -fPIC -shared $W -I"$CUDA_INC" -DFT_MAJOR="$m" $flags tests/preload/engine/faketorch.c \
        -o "$d/libfaketorch.so" -L"$d" -l:"libcudart.so.$v" -Wl,-rpath,'$ORIGIN' -Wl,-z,defs >"$d/build.log" 2>&1 || [ -s "$d/build.log" ]; then
        bad "major $m: libfaketorch.so ($flags) builds warning-free, linked to libcudart.so.$v" "$(head -c 3000 "$d/build.log")"
        return
    fi
    # bound as libtorch_cuda.so is: NEEDED libcudart.so.V, each runtime call at version libcudart.so.V
    need=$(readelf -d "$d/libfaketorch.so" | awk '/NEEDED/ {print $NF}' | tr -d '[]' | tr '\n' ' ')
    bind=$(nm -D -u --with-symbol-versions "$d/libfaketorch.so" | awk '$NF ~ /^cuda/ {print $NF}')
    if echo "$need" | grep -qw "libcudart.so.$v" && [ -n "$bind" ] && ! echo "$bind" | grep -qv "@libcudart\.so\.$v\$"; then
        ok "major $m: libfaketorch.so NEEDs libcudart.so.$v, its $(echo "$bind" | wc -l) runtime calls bound at version libcudart.so.$v${vmm:+ (with the expandable segment: $flags)}"
    else
        bad "major $m: libfaketorch.so NEEDs libcudart.so.$v, its runtime calls bound at version libcudart.so.$v" \
            "NEEDED: $need" "undefined: $(echo $bind)"
    fi

    # the engine without the preload, then with it
    timeout 60 env ENGINE_MAJOR="$m" PYTHONPATH="$PKG" "$PY" tests/preload/engine/engine.py bare "$d" "$d/bare.log" $vmm \
        >"$d/bare.out" 2>"$d/bare.err"
    echo $? >"$d/bare.st"
    timeout 60 env ENGINE_MAJOR="$m" PYTHONPATH="$PKG" LD_PRELOAD="$LIB" MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/att.json" \
        MEMOBS_OOM_REPORT=0 "$PY" tests/preload/engine/engine.py attached "$d" "$d/att.log" $vmm >"$d/att.out" 2>"$d/att.err"
    echo $? >"$d/att.st"
    for r in bare att; do
        grep -E '^(not )?ok - |^    # ' "$d/$r.out"
        grep -q '^not ok - ' "$d/$r.out" && rc=1
        if [ "$(cat "$d/$r.st")" != 0 ] && ! grep -q '^not ok - ' "$d/$r.out"; then
            bad "major $m: engine.py ($r) exited with status $(cat "$d/$r.st")" "$(tail -n 15 "$d/$r.err")"
        fi
    done

    # the preload's JSON summary at exit: the engine's ledger, its regions; nothing on stderr
    local regions="{'load_weights': 1, 'prefill': 1, 'decode_step': 3, 'kv_offload': 3${vmm:+, 'expandable': 1}}"
    if [ "$(cat "$d/att.st")" = 0 ] && [ ! -s "$d/att.err" ] &&
        out=$(expect_check "$d/att.json" "$(line expect "$d/att.out")") &&
        out=$(json_check "$d/att.json" "{r['name']: r['count'] for r in s['regions']} == $regions" regions); then
        ok "major $m: the preload's JSON summary at exit equals the engine's ledger: $("$PY" -c '
import json, sys
e = json.loads(sys.argv[1]); t = e["total"]; d = e["memory"]["device"]
print("%d B H2D in %d, %d B D2H in %d, %d B D2D in %d (by phase too); device %d B live in %d (peak %d), %d allocs %d frees; pinned peak %d; %d failed calls; regions" % (
    t["h2d_bytes"], t["h2d_count"], t["d2h_bytes"], t["d2h_count"], t["d2d_bytes"], t["d2d_count"], d["current_bytes"],
    d["live"], d["peak_bytes"], d["allocs"], d["frees"], e["memory"]["pinned"]["peak_bytes"], e["counters"]["preload_failed_calls"]))
' "$(line expect "$d/att.out")") $regions; nothing on stderr"
    else
        bad "major $m: the preload's JSON summary at exit equals the engine's ledger, the regions; nothing on stderr" \
            "status $(cat "$d/att.st")" "$out" "$(head -c 1500 "$d/att.err")"
    fi
    # every CUDA call's return code, and the engine's results, with and without the preload (both ran to
    # their end: the log is written last)
    local n
    n=$(grep -c '^cu' "$d/bare.log" 2>/dev/null)
    if [ -s "$d/bare.log" ] && cmp -s "$d/bare.log" "$d/att.log" && [ ! -s "$d/bare.err" ]; then
        ok "major $m: the same $n CUDA calls with the same return codes ($(grep -c '^cu.* [1-9][0-9]*$' "$d/bare.log") of them errors), the same results, with and without the preload"
    else
        bad "major $m: the same CUDA calls with the same return codes and results, with and without the preload" \
            "$(diff "$d/bare.log" "$d/att.log" 2>&1 | head -n 12)" "$(head -c 800 "$d/bare.err")"
    fi
}

for m in $MAJORS; do engine "$m"; done
exit $rc
