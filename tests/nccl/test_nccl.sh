#!/usr/bin/env bash
# The NCCL profiler plugin (make nccl-plugin: libnccl-profiler-memobs.so)
# driven the way NCCL drives it, with no GPU and no NCCL:
# tests/nccl/nccl_driver.c dlopens it RTLD_LOCAL, takes ncclProfiler_vN and
# plays NCCL's side (init per communicator, the event hierarchy, states,
# stops, finalize). tests/nccl/nccl_check.py compares what memobs wrote
# with the values the driver expects, generated from the same table as the
# events it played.
#
#   1. the job: 4 ranks in 4 processes, communicators tp (4 ranks) and pp
#      (pairs), prefill all-reduces, decode all-gathers, an all-to-all,
#      a send/recv pair, a captured call, and (v5+) a Broadcast played
#      through AllGatherV and two symmetric-kernel all-reduces (NCCL 2.29+:
#      their CollApi events only, counted untimed), v5 at level proxy, the driver
#      built with memobs (instance "program"): the JSON summary, the text
#      summary, Prometheus (+ promtool), the timeline, the Stormlog events,
#      the 4x4 ring matrix merged from the ranks, and Stormlog's collective
#      attribution (v0.2.9 rules) from the rank files: collective_confident
#      with the plugin's events as the only markers;
#   2. every API version v1-v6 at levels coll and proxy (api for v5);
#   3. user and proxy threads at once, 10,000 operations, under TSan;
#   4. a pool of 8 slots with 64 collectives in flight;
#   5. refusal (MEMOBS_NCCL=0, MEMOBS=0), bad and double stops, PXN with a
#      parent that must never be read (ASan + UBSan);
#   6. identity: under the preload ("preload"), in a Python process with the
#      package's private memobs ("python"), MEMOBS_NCCL_ATTACH=0 ("own", the
#      plugin's own outputs at exit).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/nccl
rm -rf "$B" && mkdir -p "$B"
B=$(cd "$B" && pwd)
CC=${CC:-cc}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}
W="-Wall -Wextra -Werror"

. tests/lib.sh
unset LD_PRELOAD MEMOBS_NCCL MEMOBS_NCCL_EVENTS MEMOBS_NCCL_ATTACH MEMOBS_NCCL_MAX_COMMS \
    MEMOBS_NCCL_STORMLOG_MIN_BYTES MEMOBS_NCCL_TIMELINE_MIN_BYTES NCCL_DRIVER_EXPECT NCCL_DRIVER_TEXT
suite=nccl
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }
check() { # nccl_check.py ARGS: its ok/not ok lines; rc=1 on failure
    python3 tests/nccl/nccl_check.py "$@" || rc=1
}

# ---- builds ----------------------------------------------------------------
PLUGIN=$B/libnccl-profiler-memobs.so
PRELOAD=$B/libmemobs_preload.so
if make -s BUILD="$B" nccl-plugin preload python-module >"$B/make.log" 2>&1 && [ ! -s "$B/make.log" ] &&
    [ -f "$PLUGIN" ]; then
    ok "build: make nccl-plugin preload python-module warning-free"
else
    bad "build: make nccl-plugin preload python-module warning-free" "$(head -c 3000 "$B/make.log")"
    exit 1
fi
LINK="-ldl -pthread -Wl,--export-dynamic-symbol=clock_gettime"
san_plugin() { # OUT FLAGS: make nccl-plugin with the sanitizer FLAGS in CFLAGS, copied to OUT
    make -s BUILD="$1.d" CFLAGS="-O1 -g $2" nccl-plugin && cp "$1.d/libnccl-profiler-memobs.so" "$1"
}
if ! { $CC -std=c99 -O1 -g $W -o "$B/driver" tests/nccl/nccl_driver.c $LINK &&
    $CC -std=c11 -O1 -g $W -I"$CUDA_INC" -c -o "$B/cudart_double.o" tests/cuda/cudart_double.c &&
    $CC -std=c99 -O1 -g $W -DDRIVER_HOST -I"$CUDA_INC" -c -o "$B/driver_host.o" tests/nccl/nccl_driver.c &&
    $CC -o "$B/driver_host" "$B/driver_host.o" "$B/cudart_double.o" $LINK -lm \
        -Wl,--export-dynamic-symbol=memobs_host_api &&
    $CC -std=c99 -O1 -g $W -DDRIVER_LIB -fPIC -shared -fvisibility=hidden -o "$B/libnccl_driver.so" \
        tests/nccl/nccl_driver.c -ldl -pthread &&
    $CC -std=c99 -O1 -g $W -fsanitize=thread -o "$B/driver_tsan" tests/nccl/nccl_driver.c $LINK &&
    san_plugin "$B/plugin_tsan.so" -fsanitize=thread &&
    $CC -std=c99 -O1 -g $W -fsanitize=address,undefined -fno-sanitize-recover=all -o "$B/driver_asan" \
        tests/nccl/nccl_driver.c $LINK &&
    san_plugin "$B/plugin_asan.so" "-fsanitize=address,undefined -fno-sanitize-recover=all"; } >"$B/build.log" 2>&1; then
    bad "build: the driver (plain, with memobs, as a library, TSan, ASan+UBSan) and the sanitized plugins" \
        "$(head -n 20 "$B/build.log")"
    exit 1
fi
ok "build: the driver (plain, with memobs exporting memobs_host_api, as a library, TSan, ASan+UBSan) and the sanitized plugins"

# run NAME CMD...: CMD ran, exit 0, nothing on stderr but lines matching
# $ALLOW (an extended regex)
run() {
    local name=$1
    shift
    if ! "$@" >"$B/$name.out" 2>"$B/$name.err"; then
        bad "$name: ran" "$(head -n 10 "$B/$name.err")" "$(head -n 5 "$B/$name.out")"
        return 1
    elif [ -n "${ALLOW:-}" ] && grep -Evq "$ALLOW" "$B/$name.err"; then
        bad "$name: nothing on stderr but /$ALLOW/" "$(grep -Ev "$ALLOW" "$B/$name.err" | head -n 10)"
        return 1
    elif [ -z "${ALLOW:-}" ] && [ -s "$B/$name.err" ]; then
        bad "$name: nothing on stderr" "$(head -n 10 "$B/$name.err")"
        return 1
    fi
    return 0
}

# ---- 1. the job --------------------------------------------------------------
J=$B/job
mkdir -p "$J"
ran=1
for r in 0 1 2 3; do
    RANK=$r LOCAL_RANK=0 WORLD_SIZE=4 MEMOBS_JOB_ID=job-28 MEMOBS_NCCL=proxy MEMOBS_FORMAT=json \
        MEMOBS_SUMMARY="$J/sum$r.json" MEMOBS_PROM_FILE="$J/prom$r.prom" MEMOBS_TIMELINE="$J/tl$r.json" \
        MEMOBS_STORMLOG="$J/rank$r.json" NCCL_DRIVER_EXPECT="$J/exp$r.json" NCCL_DRIVER_TEXT="$J/sum$r.txt" \
        run "job-rank$r" "$B/driver_host" "$PLUGIN" 5 scenario $r || ran=0
done
if [ $ran = 1 ]; then
    ok "job: 4 ranks ran (v5, level proxy, instance program), nothing on stderr"
    for r in 0 1 2 3; do
        TAG="job rank $r (v5 proxy)" check summary "$J/exp$r.json" "$J/sum$r.json" program proxy
        TAG="job rank $r" check text "$J/exp$r.json" "$J/sum$r.txt"
        TAG="job rank $r" check prom "$J/exp$r.json" "$J/prom$r.prom"
        TAG="job rank $r" check timeline "$J/exp$r.json" "$J/tl$r.json"
        TAG="job rank $r" check stormlog "$J/exp$r.json" "$J/rank$r.json"
    done
    if out=$(for r in 0 1 2 3; do promtool check metrics <"$J/prom$r.prom" 2>&1 || echo "rank $r: exit $?"; done) &&
        [ -z "$out" ]; then
        ok "job: promtool check metrics prints nothing and exits 0 (the 4 ranks' expositions)"
    else
        bad "job: promtool check metrics prints nothing and exits 0" "$out"
    fi
    TAG=job check matrix "$J"/sum0.json "$J"/sum1.json "$J"/sum2.json "$J"/sum3.json
    if out=$(python3 tests/python/stormlog_check.py "$J"/rank?.json --expect-device --expect nccl_collective 2>&1); then
        ok "job: the rank files pass the Stormlog schema v2 validator"
    else
        bad "job: the rank files pass the Stormlog schema v2 validator" "$out"
    fi
    TAG=job check attribution "$J"/rank0.json "$J"/rank1.json "$J"/rank2.json "$J"/rank3.json
fi

# ---- 2. every API version ------------------------------------------------------
for v in 1 2 3 4 5 6; do
    levels="coll proxy"
    [ $v = 5 ] && levels="api coll proxy"
    for l in $levels; do
        d=$B/v$v-$l
        mkdir -p "$d"
        if RANK=1 WORLD_SIZE=4 MEMOBS_NCCL=$l MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" \
            MEMOBS_TIMELINE="$d/tl.json" MEMOBS_STORMLOG="$d/rank.json" NCCL_DRIVER_EXPECT="$d/exp.json" \
            run "v$v-$l" "$B/driver_host" "$PLUGIN" $v scenario 1; then
            TAG="v$v $l" check summary "$d/exp.json" "$d/sum.json" program $l
            TAG="v$v $l" check timeline "$d/exp.json" "$d/tl.json"
            TAG="v$v $l" check stormlog "$d/exp.json" "$d/rank.json"
        fi
    done
done

# ---- 3. user and proxy threads at once, TSan --------------------------------------
d=$B/threads
mkdir -p "$d"
if MEMOBS_NCCL=proxy MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" NCCL_DRIVER_EXPECT="$d/exp.json" \
    run threads "$B/driver_tsan" "$B/plugin_tsan.so" 5 threads 0; then
    ok "threads: 10,000 all-reduces, user and proxy threads at once, TSan silent"
    TAG="threads (v5 proxy)" check summary "$d/exp.json" "$d/sum.json" own proxy
fi

# ---- 4. pool full ---------------------------------------------------------------------
d=$B/pool
mkdir -p "$d"
if MEMOBS_NCCL_EVENTS=8 MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" \
    run pool timeout 60 "$B/driver_asan" "$B/plugin_asan.so" 4 pool 0; then
    got=$(cat "$B/pool.out")
    # the first channel finds the pool full: its collective ends untimed
    # and frees its slot, which the next channel takes, and so on
    want="in flight: 8 handles of 64, 7 kernel channels; then: collective and channel"
    [ "$got" = "$want" ] && ok "pool: 8 slots, 64 collectives in flight: 8 handles, 7 of their channels, none blocks; then whole again" ||
        bad "pool: 8 slots, 64 collectives in flight" "expected \"$want\"" "got      \"$got\""
    if json_check "$d/sum.json" 's["collectives"]["events_dropped"] == 57 and s["collectives"]["instance"] == "own" and [c["kinds"].get("all_gather") for c in s["collectives"]["comms"] if c["name"]=="tp"] == [{"unphased": {"ops": 65, "bytes": 65*16384, "timed_ops": 8, "ns": 80000, "algo_bytes": 8*65536, "bus_bytes": 8*49152, "algbw_gbs": 6.5536, "busbw_gbs": 4.9152}}]' collectives >"$d/check" 2>&1; then
        ok "pool: ops 65 and bytes exact, 57 untimed, 8 timed, events_dropped 57"
    else
        bad "pool: ops 65 and bytes exact, 57 untimed, 8 timed, events_dropped 57" "$(cat "$d/check")"
    fi
fi

# ---- 5. refusal, bad stops, PXN ----------------------------------------------------------
for how in "MEMOBS_NCCL=0" "MEMOBS_NCCL=off" "MEMOBS=0"; do
    for v in 1 4 5; do
        export "$how"
        if run "refuse-$how-v$v" "$B/driver_asan" "$B/plugin_asan.so" $v refuse 0; then
            ok "refusal ($how, v$v): init refused (ncclSuccess, mask 0, NULL context); NULL-context starts succeed with NULL handles"
        fi
        unset "${how%%=*}"
    done
done
d=$B/badstop
mkdir -p "$d"
if MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" run badstop "$B/driver_asan" "$B/plugin_asan.so" 5 badstop 0; then
    # a stop of a stopped or forged handle is a bad event; a state on a
    # stopped handle is ignored (the plugin's contract)
    if json_check "$d/sum.json" 's["collectives"]["bad_events"] == 2' collectives >"$d/check" 2>&1; then
        ok "bad stops: a double stop, a forged handle and a state on a stopped handle return ncclSuccess, bad_events 2"
    else
        bad "bad stops: bad_events 2" "$(cat "$d/check")"
    fi
fi
d=$B/pxn
mkdir -p "$d"
for v in 4 5; do
    if MEMOBS_NCCL=proxy MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum$v.json" \
        run "pxn-v$v" "$B/driver_asan" "$B/plugin_asan.so" $v pxn 0; then
        ok "PXN (v$v): proxy ops of another pid with an unreadable parentObj: never read (ASan+UBSan silent)"
        # their steps count against the init's comm, in its last phase
        if json_check "$d/sum$v.json" 's["peers"] == [{"name": "tp r1", "comm": "tp", "rank": 1, "send": {"unphased": {"bytes": 16384, "ops": 4, "ns": 0}}, "recv": {}}]' peers >"$d/check" 2>&1; then
            ok "PXN (v$v): their 4 steps: tp r1 send 16384 bytes, 4 ops"
        else
            bad "PXN (v$v): their 4 steps: tp r1 send 16384 bytes, 4 ops" "$(cat "$d/check")"
        fi
    fi
done

# ---- 6. identity ----------------------------------------------------------------------------
d=$B/preload
mkdir -p "$d"
# (the preload says once that the program made no CUDA call: it has no CUDA runtime)
if ALLOW="no CUDA call was intercepted" LD_PRELOAD=$PRELOAD MEMOBS_NCCL=proxy MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" \
    NCCL_DRIVER_EXPECT="$d/exp.json" run preload "$B/driver" "$PLUGIN" 5 scenario 2; then
    TAG="preload (v5 proxy)" check summary "$d/exp.json" "$d/sum.json" preload proxy
fi
# the Python package's private memobs (the driver as a library, called
# from Python after `import memobs`; the package has no phase set)
d=$B/python
mkdir -p "$d"
if MEMOBS_NCCL=proxy MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" NCCL_DRIVER_EXPECT="$d/exp.json" \
    PYTHONPATH="$B/python" run python python3 -c '
import ctypes, sys
import memobs
lib = ctypes.CDLL(sys.argv[1])
argv = (ctypes.c_char_p * 5)(b"nccl_driver", sys.argv[2].encode(), b"5", b"scenario", b"0")
sys.exit(lib.nccl_driver_main(5, argv))' "$B/libnccl_driver.so" "$PLUGIN"; then
    TAG="python (v5 proxy)" check summary "$d/exp.json" "$d/sum.json" python proxy
fi
d=$B/own
mkdir -p "$d"
# (the second instance says once which file it writes)
if ALLOW="another memobs instance in this process writes" MEMOBS_NCCL_ATTACH=0 MEMOBS_NCCL=proxy MEMOBS_FORMAT=json MEMOBS_SUMMARY="$d/sum.json" \
    NCCL_DRIVER_EXPECT="$d/exp.json" run own "$B/driver_host" "$PLUGIN" 6 scenario 3; then
    # the program's memobs writes sum.json; the plugin's own, second to
    # configure the path, sum.2.json (docs/outputs.md "Two instances")
    own=$(grep -l '"instance":"own"' "$d"/sum*.json 2>/dev/null | head -n 1)
    if [ -n "$own" ]; then
        TAG="MEMOBS_NCCL_ATTACH=0 (v6 proxy)" check summary "$d/exp.json" "$own" own proxy
    else
        bad "MEMOBS_NCCL_ATTACH=0: the plugin's own instance writes its summary at exit" "$(ls "$d")"
    fi
fi
exit $rc
