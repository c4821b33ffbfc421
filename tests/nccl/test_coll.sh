#!/usr/bin/env bash
# Collectives and peers: tests/nccl/test_coll.c built C99, C++17, ASan+UBSan,
# TSan (4 threads recording at once, exact totals) and MEMOBS_DISABLE (C
# and C++), each with MEMOBS_EXPORT_HOST; then the files one build writes:
# the JSON summary (python3: the keys other tools read, the bandwidths of
# the driver's table), the text summary, a Prometheus exposition
# (promtool), a Chrome trace (a slice per collective on its communicator's
# track), Stormlog telemetry (collective events, rate-capped) and the HTML
# report (the two tables).
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/coll
mkdir -p "$B"
CC=${CC:-cc}
W="-Wall -Wextra -Werror -I."
. tests/lib.sh

suite=coll
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

build() { # name: coll_NAME as mk/tests.mk makes it
    local name=$1 bin="$B/coll_$1"
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "$name: build failed" "$(head -n 30 "$bin.log")"
        return 1
    fi
}
run() { # name: the in-process tests, nothing on stderr
    local bin="$B/coll_$1"
    "$bin" 2>"$bin.err" | grep -v ' passed, .* failed$'
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    if [ -s "$bin.err" ]; then bad "$1: nothing on stderr" "$(head -n 10 "$bin.err")"; fi
}

for v in c99 c++17 asan+ubsan tsan disabled disabled-c++; do
    build "$v" && run "$v"
done

# memobs_host_api under MEMOBS_HIDDEN and -fvisibility=hidden (the Python
# package's private instance): the one exported memobs symbol, with the
# instance MEMOBS_HOST_INSTANCE names; found by dlsym, its table records.
cat >"$B/host.c" <<'EOF'
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_HIDDEN
#define MEMOBS_EXPORT_HOST
#define MEMOBS_HOST_INSTANCE "preload"
#include "memobs.h"
EOF
cat >"$B/host_main.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "memobs.h"
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const memobs_host_api_t *(*get)(void);
    const memobs_host_api_t *api;
    memobs_coll_record_t r;
    (void)argc;
    if (!h) return printf("dlopen: %s\n", dlerror()), 1;
    *(void **)&get = dlsym(h, "memobs_host_api");
    if (!get) return printf("no memobs_host_api\n"), 1;
    if (dlsym(h, "memobs_record_coll_ex") || dlsym(h, "memobs_init")) return printf("other symbols exported\n"), 1;
    api = get();
    if (api->abi_key != MEMOBS__ABI_KEY || api->size != sizeof *api || strcmp(api->instance, "preload"))
        return printf("table: key %llx size %u instance %s\n", (unsigned long long)api->abi_key, api->size,
                      api->instance), 1;
    memset(&r, 0, sizeof r);
    r.comm = api->coll_register_comm("tp", 7u, 0, 2, 1);
    r.kind = api->coll_kind_intern("AllReduce");
    r.bytes = 10;
    api->record_coll_ex(&r);
    printf("%d %d %d\n", (int)r.comm, (int)r.kind, api->get_enabled());
    return 0;
}
EOF
if $CC -std=c99 $W -fPIC -shared -fvisibility=hidden -o "$B/libhost.so" "$B/host.c" -pthread >"$B/host.log" 2>&1 &&
    $CC -std=c99 $W -o "$B/host_main" "$B/host_main.c" -ldl >>"$B/host.log" 2>&1; then
    if out=$("$B/host_main" "$(pwd)/$B/libhost.so" 2>&1) && [ "$out" = "1 0 1" ] &&
        [ "$(nm -D --defined-only "$B/libhost.so" | grep -c ' memobs')" = 1 ]; then
        ok "host api: MEMOBS_EXPORT_HOST in a MEMOBS_HIDDEN .so exports memobs_host_api alone (instance \"preload\" from MEMOBS_HOST_INSTANCE, the ABI key, the size); its table records"
    else
        bad "host api: exported from a hidden instance" "$out" "$(nm -D --defined-only "$B/libhost.so" | grep ' memobs')"
    fi
else
    bad "host api: build" "$(head -n 20 "$B/host.log")"
fi

bin=$B/coll_c99
[ -x "$bin" ] || exit 1
rm -rf "$B/out"
mkdir -p "$B/out"
if ! "$bin" outputs "$B/out" 2>"$B/out.err" || [ -s "$B/out.err" ]; then
    bad "outputs: the scenario ran quietly" "$(head -n 5 "$B/out.err")"
    exit 1
fi

# The JSON summary: the keys the plugin's driver and the Python package read.
if out=$(python3 - "$B/out/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
errs = []
c = d.get("collectives")
if not c: print("no collectives"); sys.exit(1)
want = {"source": "nccl-profiler", "instance": "program", "level": "coll", "api_version": 5, "events_dropped": 0,
        "bad_events": 0, "captured_calls": 1, "captured_replays": 0, "comms_dropped": 0, "kinds_dropped": 0,
        "peers_dropped": 0}
for k, v in want.items():
    if c.get(k) != v: errs.append("collectives.%s = %r, want %r" % (k, c.get(k), v))
comms = {x["name"]: x for x in c["comms"]}
if sorted(comms) != ['pp "odd" \\ name', "tp"]: errs.append("comms %s" % sorted(comms))
tp = comms.get("tp", {})
if (tp.get("id"), tp.get("rank"), tp.get("nranks"), tp.get("nnodes")) != (0x7470, 1, 4, 1): errs.append("tp %s" % tp)
ar = tp.get("kinds", {}).get("all_reduce", {})
if list(ar) != ["prefill"]: errs.append("all_reduce phases %s" % list(ar))
want = {"ops": 3, "bytes": 6291456, "timed_ops": 3, "ns": 6000000, "algo_bytes": 6291456, "bus_bytes": 9437184,
        "algbw_gbs": 1.048576, "busbw_gbs": 1.572864}
if ar.get("prefill") != want: errs.append("all_reduce %s, want %s" % (ar.get("prefill"), want))
ag = tp.get("kinds", {}).get("all_gather", {}).get("decode")
want = {"ops": 5, "bytes": 81920, "timed_ops": 5, "ns": 50000, "algo_bytes": 327680, "bus_bytes": 245760,
        "algbw_gbs": 6.5536, "busbw_gbs": 4.9152}
if ag != want: errs.append("all_gather %s, want %s" % (ag, want))
pk = comms.get('pp "odd" \\ name', {}).get("kinds", {})
if pk.get("send", {}).get("decode", {}).get("algbw_gbs") != 0.524288: errs.append("send %s" % pk.get("send"))
v = pk.get("other:AllGatherV", {}).get("decode", {})
if (v.get("ops"), v.get("timed_ops"), v.get("algbw_gbs"), v.get("busbw_gbs")) != (1, 0, None, None):
    errs.append("untimed other kind %s" % v)
peers = {p["name"]: p for p in d.get("peers", [])}
want = {"name": "tp r2", "comm": "tp", "rank": 2, "send": {"prefill": {"bytes": 6291456, "ops": 1, "ns": 0}}, "recv": {}}
if peers.get("tp r2") != want: errs.append("peer tp r2 %s" % peers.get("tp r2"))
want = {"name": 'decode-3 "kv"', "comm": None, "rank": None, "send": {},
        "recv": {"decode": {"bytes": 1048576, "ops": 1, "ns": 500000}}}
if peers.get('decode-3 "kv"') != want: errs.append("named peer %s" % peers.get('decode-3 "kv"'))
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
    ok "json: \"collectives\" (source, notes, comms with kinds by phase: all_reduce 1.048576/1.572864 GB/s, all_gather 6.5536/4.9152) and \"peers\" as agreed"
else
    bad "json: collectives and peers" "$out"
fi

# Text: the blocks and the footer.
if grep -q '^  collectives:$' "$B/out/summary.txt" && grep -q '^    tp  rank 1/4, 1 node$' "$B/out/summary.txt" &&
    grep -q '^      all_gather         decode          5   81.92 KB   50.00 us      6.554      4.915$' "$B/out/summary.txt" &&
    grep -q '^  peers:$' "$B/out/summary.txt" &&
    grep -q '^  collectives from nccl-profiler, instance program, level coll, profiler API v5; 0 events dropped, 0 bad; captured: 1 calls at capture, 0 replays seen;' "$B/out/summary.txt"; then
    ok "text: a Collectives block per communicator, Peers, the source footer"
else
    bad "text: collectives block" "$(sed -n '/collectives:/,$p' "$B/out/summary.txt" | head -n 20)"
fi

# Prometheus: the families and values; promtool takes it.
P=$B/out/prom.txt
id='job_id="",rank="0",local_rank="0",host="[^"]*"'
if grep -q "^memobs_collective_ops_total{$id,comm=\"tp\",comm_rank=\"1\",nranks=\"4\",kind=\"all_reduce\",phase=\"prefill\"} 3\$" "$P" &&
    grep -q "^memobs_collective_bytes_total{$id,comm=\"tp\",comm_rank=\"1\",nranks=\"4\",kind=\"all_gather\",phase=\"decode\"} 81920\$" "$P" &&
    grep -q "^memobs_collective_timed_ops_total{$id,comm=\"pp \\\\\"odd\\\\\" \\\\\\\\ name\",comm_rank=\"0\",nranks=\"2\",kind=\"other:AllGatherV\",phase=\"decode\"} 0\$" "$P" &&
    grep -q "^memobs_collective_seconds_total{$id,comm=\"tp\",comm_rank=\"1\",nranks=\"4\",kind=\"all_reduce\",phase=\"prefill\"} 0.006\$" "$P" &&
    grep -q "^memobs_collective_algo_bytes_total{$id,comm=\"tp\",comm_rank=\"1\",nranks=\"4\",kind=\"all_gather\",phase=\"decode\"} 327680\$" "$P" &&
    grep -q "^memobs_collective_bus_bytes_total{$id,comm=\"tp\",comm_rank=\"1\",nranks=\"4\",kind=\"all_reduce\",phase=\"prefill\"} 9437184\$" "$P" &&
    grep -q "^memobs_peer_transfer_bytes_total{$id,peer=\"tp r2\",dir=\"send\",phase=\"prefill\"} 6291456\$" "$P" &&
    grep -q "^memobs_peer_transfer_ops_total{$id,peer=\"decode-3 \\\\\"kv\\\\\"\",dir=\"recv\",phase=\"decode\"} 1\$" "$P" &&
    grep -q "^memobs_peer_transfer_seconds_total{$id,peer=\"decode-3 \\\\\"kv\\\\\"\",dir=\"recv\",phase=\"decode\"} 0.0005\$" "$P" &&
    grep -q "^memobs_collective_events_dropped_total{$id} 0\$" "$P" &&
    grep -q "^memobs_collective_info{$id,source=\"nccl-profiler\",memobs_instance=\"program\",level=\"coll\",api_version=\"5\"} 1\$" "$P" &&
    grep -q '^# TYPE memobs_collective_bus_bytes_total counter$' "$P" && grep -q '^# TYPE memobs_collective_info gauge$' "$P"; then
    ok "prom: collective ops, bytes, timed ops, seconds, algo and bus bytes by comm, comm_rank, nranks, kind, phase; peer bytes, ops, seconds; events dropped; info"
else
    bad "prom: collective families" "$(grep -E 'collective|peer' "$P" | grep -v '^#' | head -n 20)"
fi
if ! command -v promtool >/dev/null; then
    bad "prom: promtool is not installed (tests/deps.sh installs Debian's prometheus)"
elif out=$(promtool check metrics <"$P" 2>&1) && [ -z "$out" ]; then
    ok "prom: promtool check metrics takes the exposition with the collective families"
else
    bad "prom: promtool check metrics" "$out"
fi

# The timeline: one complete slice per collective on its communicator's track.
if out=$(python3 - "$B/out/trace.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
sl = [e for e in ev if e.get("cat") == "collective"]
errs = []
if len(sl) != 10: errs.append("%d collective slices, want 10" % len(sl))
by = {}
for e in sl:
    if e["ph"] != "X": errs.append("not a complete slice: %s" % e)
    by.setdefault(names.get(e["tid"]), []).append(e)
if sorted(by) != ['nccl pp "odd" \\ name r0', "nccl tp r1"]: errs.append("tracks %s" % sorted(by))
tp = by.get("nccl tp r1", [])
ar = [e for e in tp if e["name"] == "nccl all_reduce"]
ag = [e for e in tp if e["name"] == "nccl all_gather"]
if len(ar) != 3 or len(ag) != 5: errs.append("tp slices %s" % [e["name"] for e in tp])
if ar:
    a = ar[0]["args"]
    want = {"bytes": 2097152, "S": 2097152, "algo": "RING", "proto": "SIMPLE", "nchannels": 2, "seq": 1,
            "algbw": 1.048576, "busbw": 1.572864, "phase": "prefill", "captured": False}
    if a != want: errs.append("all_reduce args %s, want %s" % (a, want))
    if ar[0]["dur"] != 2000.0: errs.append("all_reduce dur %s us" % ar[0]["dur"])
    gaps = [round((ar[i + 1]["ts"] - ar[i]["ts"]) * 1000) for i in range(len(ar) - 1)]
    if gaps != [20000000, 20000000]: errs.append("starts %s ns apart, want 20 ms" % gaps)
if ag:
    a = ag[-1]["args"]
    want = {"bytes": 16384, "S": 65536, "algo": 'a "new" algo', "proto": None, "nchannels": 0, "seq": 5,
            "algbw": 6.5536, "busbw": 4.9152, "phase": "decode", "captured": True}
    if a != want: errs.append("all_gather args %s, want %s" % (a, want))
pp = by.get('nccl pp "odd" \\ name r0', [])
if sorted(e["name"] for e in pp) != ["nccl other:AllGatherV", "nccl send"]: errs.append("pp %s" % pp)
for e in pp:
    if e["name"] == "nccl other:AllGatherV" and (e["args"]["algbw"], e["args"]["busbw"], e["dur"]) != (None, None, 0.0):
        errs.append("untimed slice %s" % e)
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
    ok "trace: 10 collective slices, \"nccl <kind>\" on a track per communicator (\"nccl tp r1\"), args bytes, S, algo, proto, nchannels, seq, algbw, busbw, phase, captured"
else
    bad "trace: collective slices" "$out"
fi

# The timeline: a counter per peer and direction, its bytes so far.
if out=$(python3 - "$B/out/trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
got = sorted((e["name"], e["args"]["value"]) for e in ev if e.get("ph") == "C" and e["name"].startswith("peer "))
want = [('peer decode-3 "kv" recv bytes', 1048576), ("peer tp r2 send bytes", 6291456)]
if got != want: print("peer counters %s, want %s" % (got, want)); sys.exit(1)
PY
); then
    ok "trace: a counter track per peer and direction (\"peer tp r2 send bytes\" 6291456, the named peer's recv 1048576)"
else
    bad "trace: peer counters" "$out"
fi

# Stormlog: schema v2; one event per communicator and kind per 10 ms.
if out=$(python3 tests/python/stormlog_check.py "$B/out/stormlog.json" --expect nccl_collective 2>&1); then
    ok "stormlog: the file with collective events passes the schema v2 validator"
else
    bad "stormlog: schema v2" "$out"
fi
if out=$(python3 - "$B/out/stormlog.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ev = [e for e in s if e["event_type"] == "nccl_collective"]
got = sorted((e["context"], e["metadata"]["comm"], e["metadata"]["kind"], e["metadata"]["bytes"], e["metadata"]["seq"])
             for e in ev)
want = sorted([("nccl all_reduce", "tp", "all_reduce", 2097152, 1), ("nccl all_reduce", "tp", "all_reduce", 2097152, 2),
               ("nccl all_reduce", "tp", "all_reduce", 2097152, 3), ("nccl all_gather", "tp", "all_gather", 16384, 1),
               ("nccl send", 'pp "odd" \\ name', "send", 524288, 0),
               ("nccl other:AllGatherV", 'pp "odd" \\ name', "other:AllGatherV", 100, 0)])
errs = []
if got != want: errs.append("events %s, want %s" % (got, want))
if any(e["device_total_bytes"] is not None for e in ev): errs.append("an event with a total")
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
    ok "stormlog: collectives as \"nccl_collective\" events, context \"nccl <kind>\", metadata comm, kind, bytes, seq; at most one per comm and kind per 10 ms"
else
    bad "stormlog: collective events" "$out"
fi
if out=$(python3 - "$B/out/stormlog.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
pe = [e for e in s if e["event_type"] == "peer_transfer"]
got = sorted((e["context"], e["metadata"]) for e in pe)
m = lambda **k: dict(source="memobs", figures_from="previous sample", **k)
want = sorted([("peer tp r2", m(peer="tp r2", comm="tp", peer_rank=2, send_bytes=6291456, send_ops=1,
                                send_bytes_prefill=6291456, recv_bytes=0, recv_ops=0)),
               ('peer decode-3 "kv"', m(peer='decode-3 "kv"', send_bytes=0, send_ops=0, recv_bytes=1048576,
                                        recv_ops=1, recv_bytes_decode=1048576))])
errs = []
if got != want: errs.append("peer events %s, want %s" % (got, want))
if pe and s[-len(pe):] != pe: errs.append("peer events not last")
others = [x for x in s if x["event_type"] != "peer_transfer"]  # the peer events among themselves: any order of times
if any(e["timestamp_ns"] < x["timestamp_ns"] for e in pe for x in others): errs.append("peer events before others")
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
    ok "stormlog: a \"peer_transfer\" event per peer, last (context \"peer <name>\", metadata peer, comm, peer_rank, bytes and ops sent and received, bytes by phase)"
else
    bad "stormlog: peer events" "$out"
fi

# HTML: the two tables.
H=$B/out/report.html
if grep -q '<section id="collectives"><h2>Collectives</h2>' "$H" && grep -q '<table id="coll-table">' "$H" &&
    grep -q '<tr data-coll="tp/all_reduce/prefill"><th>tp</th><td>1/4</td><td>all_reduce</td><td>prefill</td><td class="n" data-memobs="coll.ops" data-v="3">3</td>' "$H" &&
    grep -q 'data-memobs="coll.bus_bytes" data-v="9437184">1.573</td>' "$H" &&
    grep -q '<table id="peer-table">' "$H" && grep -q '<th>decode-3 &quot;kv&quot;</th><td>recv</td>' "$H"; then
    ok "html: the collectives table (ops, bytes, time, algbw, busbw) and the peer table"
else
    bad "html: collectives and peer tables" "$(grep -o '<section id="collectives">.*' "$H" | head -c 1500)"
fi
# A crash: the crash writer's summary and exposition (async-signal-safe,
# lock-free reads) carry the collectives and peers.
rm -f "$B/crash.json" "$B/crash.prom"
MEMOBS_SUMMARY="$B/crash.json" MEMOBS_FORMAT=json MEMOBS_PROM_FILE="$B/crash.prom" \
    sh -c '"$0" crash; exit 0' "$bin" >/dev/null 2>&1 # dies of SIGABRT, quietly
if out=$(python3 - "$B/crash.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
errs = []
if not d.get("partial"): errs.append("not the crash writer's summary")
ar = d.get("collectives", {}).get("comms", [{}])[0].get("kinds", {}).get("all_reduce", {}).get("prefill", {})
if (ar.get("ops"), ar.get("bus_bytes")) != (1, 3145728): errs.append("all_reduce %s" % ar)
if [p["name"] for p in d.get("peers", [])] != ["tp r2"]: errs.append("peers %s" % d.get("peers"))
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
) && grep -q '^memobs_collective_bus_bytes_total{.*,comm="tp",comm_rank="1",nranks="4",kind="all_reduce",phase="prefill"} 3145728$' "$B/crash.prom" &&
    grep -q '^memobs_crash_signal{' "$B/crash.prom"; then
    ok "crash: the crash writer's JSON summary and Prometheus file carry the collectives and peers"
else
    bad "crash: collectives in the crash outputs" "$out" "$(grep collective "$B/crash.prom" | head -n 5)"
fi
exit $rc
