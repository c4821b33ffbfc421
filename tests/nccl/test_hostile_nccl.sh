#!/usr/bin/env bash
# hostile-nccl: the NCCL profiler plugin as a guest (issue 38, items 17-20),
# played by tests/nccl/hostile/nccl_guest.c, a program with its own memobs
# (memobs_host_api exported: the plugin records into it, and it can pause
# it), the program and the plugin under ASan + UBSan:
#   17. every entry point of v1-v6 before any init, with a context and
#       handles never given, after finalize, and with MEMOBS_NCCL=off: no
#       crash, ncclSuccess, each bad call counted in bad_events;
#   18. NCCL 2.29+: a Broadcast played through AllGatherV (CollApi, no
#       Coll) and a symmetric-kernel all-reduce (CollApi alone) are counted;
#       an all-reduce with its Coll (in the call, or after the CollApi's
#       stop as in a group) is counted once and timed by its KernelCh;
#   19. an init refused while memobs is paused returns ncclSuccess with a
#       NULL context and leaves the mask an earlier init gave: the other
#       communicators' collectives are still counted;
#   20. staggered kernel channels: time = last end - first start; proxy
#       step sizes (transSize) of LL / LL128 / SIMPLE converted to payload.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/hostile_nccl
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
W="-Wall -Wextra -Werror"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

. tests/lib.sh
suite=hostile-nccl
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

if ! { make -s BUILD="$B/plain" nccl-plugin &&
    make -s BUILD="$B/asan" CFLAGS="-O1 -g $SAN" nccl-plugin &&
    $CC -std=c99 -O1 -g $W $SAN -o "$B/guest" tests/nccl/hostile/nccl_guest.c -ldl -pthread -lm \
        -Wl,--export-dynamic-symbol=memobs_host_api; } >"$B/build.log" 2>&1 || [ -s "$B/build.log" ]; then
    bad "build: the plugin (plain, ASan+UBSan) and tests/nccl/hostile/nccl_guest.c, warning-free" \
        "$(head -n 20 "$B/build.log")"
    exit 1
fi
ok "build: the plugin (plain, ASan+UBSan) and tests/nccl/hostile/nccl_guest.c, warning-free"
PLUGIN=${NCCL_GUEST_PLUGIN:-$B/asan/libnccl-profiler-memobs.so}

# guest NAME MODE [ENV...]: the guest ran, exit 0, nothing on stderr; its
# stdout in $B/NAME.out, its memobs' JSON summary in $B/NAME.json
guest() {
    local name=$1 mode=$2
    shift 2
    if ! env MEMOBS_FORMAT=json MEMOBS_SUMMARY="$B/$name.json" "$@" "$B/guest" "$PLUGIN" "$mode" \
        >"$B/$name.out" 2>"$B/$name.err"; then
        bad "$name: ran (exit 0, ASan+UBSan silent)" "$(head -n 8 "$B/$name.err")" "$(head -n 5 "$B/$name.out")"
        return 1
    elif [ -s "$B/$name.err" ]; then
        bad "$name: nothing on stderr" "$(head -n 8 "$B/$name.err")"
        return 1
    fi
    return 0
}
# kinds NAME COMM EXPR: EXPR over k (comm COMM's kinds) and c (collectives)
kinds() {
    json_check "$B/$1.json" "[1 for c in [s['collectives']] for x in c['comms'] if x['name'] == '$2' for k in [x['kinds']] if $3] == [1]" collectives
}

# ---- 17 ----------------------------------------------------------------------
if guest early early; then
    ok "17: every entry point before init, with foreign handles, after finalize: no crash, ncclSuccess"
    try $suite "17: 30 bad calls (4 per version before init, 6 after finalize) in bad_events; the comm's all-reduce counted" \
        kinds early tp "c['bad_events'] == 30 and k['all_reduce']['unphased']['ops'] == 1 and
            k['all_reduce']['unphased']['bytes'] == 1024"
fi
if guest early-off early MEMOBS_NCCL=off; then
    if grep -qx "init rc 0 mask 0 ctx NULL" "$B/early-off.out" &&
        json_check "$B/early-off.json" "(s.get('collectives', {}).get('comms', []) == [] and
            s.get('collectives', {}).get('bad_events', 0) == 0)" >"$B/check" 2>&1; then
        ok "17: MEMOBS_NCCL=off: the same calls, no crash; init refused (ncclSuccess, mask 0, NULL context); nothing recorded"
    else
        bad "17: MEMOBS_NCCL=off: init refused, nothing recorded" "$(cat "$B/early-off.out")" "$(cat "$B/check")"
    fi
fi

# ---- 19 ----------------------------------------------------------------------
if guest paused paused; then
    if grep -qx "b (paused): rc 0 ctx NULL mask kept" "$B/paused.out"; then
        ok "19: an init while paused: ncclSuccess, NULL context, the mask a's init gave kept"
    else
        bad "19: an init while paused: ncclSuccess, NULL context, the mask a's init gave kept" "$(cat "$B/paused.out")"
    fi
    try $suite "19: after the refused init, a's 2 all-reduces and c's 3 are counted" \
        kinds paused a "k['all_reduce']['unphased']['ops'] == 2"
    try $suite "19: comm c (accepted after the refused one): 3 all-reduces" \
        kinds paused c "k['all_reduce']['unphased']['ops'] == 3 and c['bad_events'] == 0"
fi

# ---- 18 ----------------------------------------------------------------------
for v in 6 5; do
    if guest api-v$v api VERSION=$v; then
        try $suite "18 (v$v): a Broadcast through AllGatherV (CollApi, no Coll): 1 op, 4096 bytes, untimed" \
            kinds api-v$v tp "k['broadcast']['unphased']['ops'] == 1 and k['broadcast']['unphased']['bytes'] == 4096 and
                k['broadcast']['unphased']['timed_ops'] == 0"
        try $suite "18 (v$v): all-reduces symmetric (no Coll), plain, grouped (Coll after the API's stop): 3 ops, each once; 2 timed, 4 + 6 us" \
            kinds api-v$v tp "k['all_reduce']['unphased']['ops'] == 3 and k['all_reduce']['unphased']['bytes'] == 3 * 8192 and
                k['all_reduce']['unphased']['timed_ops'] == 2 and k['all_reduce']['unphased']['ns'] == 10000 and
                c['bad_events'] == 0 and c['events_dropped'] == 0"
    fi
done

if guest soon soon; then
    if grep -qx "broadcast recorded before finalize: yes, after 100 ms" "$B/soon.out"; then
        ok "18: a Broadcast with no Coll is recorded at a later call of its thread once its 100 ms wait is over, before any finalize"
    else
        bad "18: a Broadcast with no Coll is recorded at a later call of its thread, before any finalize" "$(cat "$B/soon.out")"
    fi
fi

# ---- 20 ----------------------------------------------------------------------
if guest stagger stagger; then
    try $suite "20: kernel channels 1000..2000 and 1500..3500 ns: the all-reduce's time is 2500 ns (first start to last end)" \
        kinds stagger tp "k['all_reduce']['unphased']['ns'] == 2500 and k['all_reduce']['unphased']['timed_ops'] == 1"
fi
if guest wire wire MEMOBS_NCCL=proxy; then
    try $suite "20: proxy steps LL 2048, LL128 1280, SIMPLE 1000 (transSize): payload 1024 + 1200 + 1000 to tp r1" \
        json_check "$B/wire.json" "[(p['send']['unphased']['bytes'], p['send']['unphased']['ops']) for p in s['peers']
            if p['name'] == 'tp r1'] == [(3224, 3)]" peers
fi
exit $rc
