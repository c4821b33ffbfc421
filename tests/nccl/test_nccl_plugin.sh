#!/usr/bin/env bash
# The NCCL profiler plugin as a library (make nccl-plugin), the parts of its
# contract (nccl/memobs_nccl_plugin.c's doc block) that tests/nccl/test_nccl.sh
# does not play: it builds warning-free with $CC and exports only
# ncclProfiler_v1 ... v6, needing libc, libpthread, libdl and libm alone;
# nccl/profiler_api.h (its layout pins on) compiles -pedantic as C99, C11,
# C++11 and C++17; the activation mask every level writes from every
# version's init, and the refusal; a bad MEMOBS_NCCL or MEMOBS_NCCL_EVENTS
# gets one warning; the plugin stays loaded after NCCL's dlclose; children
# started after their collective was stopped still count (v4: fewer
# KernelCh than announced, recorded at finalize; v1: the grace, ProxyOp
# bytes from running totals); NCCL's "Unknown" datatype is ncclUint8.
# tests/nccl/plugin_smoke.c plays the events.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/nccl_plugin
rm -rf "$B" && mkdir -p "$B"
CC=${CC:-cc}
CXX=${CXX:-c++}
W="-Wall -Wextra -Werror"

. tests/lib.sh # try, json_check; a clean environment
unset MEMOBS_NCCL MEMOBS_NCCL_EVENTS MEMOBS_NCCL_ATTACH LD_PRELOAD
export MEMOBS_NCCL_ATTACH=0 # the plugin's own memobs: its summary is the one read
suite=nccl-plugin
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

PLUGIN=$B/libnccl-profiler-memobs.so
if make -s BUILD="$B" nccl-plugin >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] && [ -f "$PLUGIN" ]; then
    ok "make nccl-plugin ($CC) warning-free"
else
    bad "make nccl-plugin ($CC) warning-free" "$(head -c 2000 "$B/make.log")"
    exit 1
fi

exports=$(nm -D --defined-only "$PLUGIN" | awk '{print $3}' | sort | tr '\n' ' ')
want="ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5 ncclProfiler_v6 "
needed=$(readelf -d "$PLUGIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -E '^(libc|libm|libdl|libpthread)\.so|^ld-linux' | tr '\n' ' ')
if [ "$exports" = "$want" ] && [ -z "$needed" ]; then
    ok "exports only ncclProfiler_v1 ... v6; needs libc, libm, libdl, libpthread alone"
else
    bad "exports only ncclProfiler_v1 ... v6; needs libc, libm, libdl, libpthread alone" \
        "exports: $exports" "other libraries needed: $needed"
fi

hdr_ok=1
for mode in "$CC -x c -std=c99" "$CC -x c -std=c11" "$CXX -x c++ -std=c++11" "$CXX -x c++ -std=c++17"; do
    if ! $mode $W -pedantic -fsyntax-only nccl/profiler_api.h >"$B/hdr.log" 2>&1; then
        bad "nccl/profiler_api.h compiles as C99, C11, C++11, C++17 (-pedantic, layout pins)" "$mode:" \
            "$(head -c 1500 "$B/hdr.log")"
        hdr_ok=0
        break
    fi
done
[ $hdr_ok = 1 ] && ok "nccl/profiler_api.h compiles as C99, C11, C++11, C++17 (-pedantic, layout pins)"

if ! $CC -std=c99 -g $W -I. -o "$B/plugin_smoke" tests/nccl/plugin_smoke.c -ldl; then
    bad "tests/nccl/plugin_smoke.c builds"
    exit 1
fi
SMOKE=$B/plugin_smoke

# level -> "v1 .. v6" masks (nccl/memobs_nccl_plugin.c's table)
expect_masks() {
    case $1 in
    api) echo "0x6 0x6 0x6 0x6 0x600 0x600" ;;
    coll) echo "0x6 0x6 0x46 0x46 0x646 0x646" ;;
    proxy) echo "0x1e 0x1e 0x5e 0x5e 0x65e 0x65e" ;;
    net) echo "0x3e 0x3e 0xfe 0xfe 0x6fe 0x6fe" ;;
    esac
}
for level in api coll proxy net ""; do
    name=${level:-"(unset: coll)"}
    out=$(MEMOBS_NCCL=$level "$SMOKE" "$PLUGIN" masks 2>"$B/masks.err")
    # level net says its event counts at exit, nothing else may be said
    sed -i '/^memobs: info: NCCL profiler: 0 network plugin events, 0 proxy control events$/d' "$B/masks.err"
    got=$(echo "$out" | sed -n 's/^v[1-6] rc 0 mask \(0x[0-9a-f]*\) ctx set$/\1/p' | tr '\n' ' ' | sed 's/ $//')
    want=$(expect_masks "${level:-coll}")
    if [ "$got" = "$want" ] && echo "$out" | grep -q '^names memobs memobs memobs memobs memobs memobs$' &&
        [ ! -s "$B/masks.err" ]; then
        ok "MEMOBS_NCCL=$name: every init succeeds, masks v1-v6 $want"
    else
        bad "MEMOBS_NCCL=$name: every init succeeds, masks v1-v6 $want" "got: $out" "$(head -c 500 "$B/masks.err")"
    fi
done
for level in off 0 OFF; do
    out=$(MEMOBS_NCCL=$level "$SMOKE" "$PLUGIN" masks 2>&1)
    if [ "$(echo "$out" | grep -c '^v[1-6] rc 0 mask 0 ctx NULL$')" = 6 ]; then
        ok "MEMOBS_NCCL=$level: every init refused (ncclSuccess, NULL context, mask 0)"
    else
        bad "MEMOBS_NCCL=$level: every init refused (ncclSuccess, NULL context, mask 0)" "got: $out"
    fi
done
out=$(MEMOBS=0 "$SMOKE" "$PLUGIN" masks 2>&1)
if [ "$(echo "$out" | grep -c '^v[1-6] rc 0 mask 0 ctx NULL$')" = 6 ]; then
    ok "MEMOBS=0: every init refused (ncclSuccess, NULL context, mask 0)"
else
    bad "MEMOBS=0: every init refused (ncclSuccess, NULL context, mask 0)" "got: $out"
fi

out=$(MEMOBS_NCCL=bogus MEMOBS_NCCL_EVENTS=12x "$SMOKE" "$PLUGIN" masks 2>&1)
if [ "$(echo "$out" | grep -c 'MEMOBS_NCCL=bogus: not one of off, 0, api, coll, proxy, net; using coll')" = 1 ] &&
    [ "$(echo "$out" | grep -c 'MEMOBS_NCCL_EVENTS=12x: not a number from 1 to 1048576; using 4096')" = 1 ] &&
    echo "$out" | grep -q '^v5 rc 0 mask 0x646 ctx set$'; then
    ok "a bad MEMOBS_NCCL and MEMOBS_NCCL_EVENTS: one warning each, the defaults"
else
    bad "a bad MEMOBS_NCCL and MEMOBS_NCCL_EVENTS: one warning each, the defaults" "got: $out"
fi

out=$("$SMOKE" "$PLUGIN" pin 2>&1)
if [ "$out" = "loaded after dlclose: yes" ]; then
    ok "the plugin stays loaded after NCCL's dlclose (RTLD_NODELETE)"
else
    bad "the plugin stays loaded after NCCL's dlclose (RTLD_NODELETE)" "got: $out"
fi

# children after the stop
S=$B/late.json
if MEMOBS_NCCL=proxy MEMOBS_SUMMARY=$S MEMOBS_FORMAT=json "$SMOKE" "$PLUGIN" late >"$B/late.log" 2>&1; then
    try $suite "v4: an all-reduce with 1 of 2 announced KernelCh, after its stop: recorded at finalize, 1 ms" \
        json_check "$S" "([(k['name'], k['nranks'], k['kinds']['all_reduce']['unphased']['ops'],
            k['kinds']['all_reduce']['unphased']['bytes'], k['kinds']['all_reduce']['unphased']['timed_ops'],
            k['kinds']['all_reduce']['unphased']['ns']) for k in s['collectives']['comms'] if k['name'] == 'tp']
            == [('tp', 4, 1, 4096, 1, 1000000)])" collectives
    try $suite "v1 proxy: a send stopped before its ProxyOp: timed by the op, 8192 bytes to world r1 in 2 steps" \
        json_check "$S" "([(k['nranks'], k['kinds']['send']['unphased']['ops'], k['kinds']['send']['unphased']['bytes'],
            k['kinds']['send']['unphased']['timed_ops']) for k in s['collectives']['comms'] if k['name'] == 'world']
            == [(0, 1, 8192, 1)] and [(p['send']['unphased']['bytes'], p['send']['unphased']['ops'], p['recv'])
            for p in s['peers'] if p['name'] == 'world r1'] == [(8192, 2, {})]
            and s['collectives']['bad_events'] == 0 and s['collectives']['events_dropped'] == 0)"
else
    bad "late children: the smoke ran" "$(head -c 1500 "$B/late.log")"
fi

S=$B/uint8.json
if MEMOBS_NCCL=api MEMOBS_SUMMARY=$S MEMOBS_FORMAT=json "$SMOKE" "$PLUGIN" uint8 >"$B/uint8.log" 2>&1; then
    try $suite "NCCL's \"Unknown\" datatype is ncclUint8 (1 byte); a name NCCL never gives: 0 bytes, a bad event" \
        json_check "$S" "([(k['kinds']['broadcast']['unphased']['bytes'], k['kinds']['reduce']['unphased']['ops'],
            k['kinds']['reduce']['unphased']['bytes']) for k in s['collectives']['comms'] if k['name'] == 'u8']
            == [(1000, 1, 0)] and s['collectives']['bad_events'] == 1)" collectives
else
    bad "uint8: the smoke ran" "$(head -c 1500 "$B/uint8.log")"
fi

exit $rc
