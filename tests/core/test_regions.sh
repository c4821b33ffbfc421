#!/usr/bin/env bash
# Regions and markers: tests/core/test_regions.c built C99, C++17 (the scoped
# form), ASan+UBSan, TSan, with MEMOBS_MAX_REGIONS=8 (the name table full)
# and MEMOBS_DISABLE (C and C++); then the files one build writes: a Chrome
# trace (slices nested on each thread's track, markers as instants), a
# Prometheus exposition with odd names (promtool) and Stormlog samples whose
# context names the regions open on two threads, with marker events.
cd "$(dirname "$0")/../.." || exit 2
B=${BUILD:-build/tests}/regions
mkdir -p "$B"
. tests/lib.sh

suite=regions
ok() { echo "ok - $suite: $1"; }
bad() { echo "not ok - $suite: $1"; shift; for l in "$@"; do echo "    # $l"; done; rc=1; }

build() { # name: regions_NAME as mk/tests.mk makes it
    local name=$1 bin="$B/regions_$1"
    if ! test_make "$bin" >"$bin.log" 2>&1; then
        bad "$name: build failed" "$(head -n 30 "$bin.log")"
        return 1
    fi
}
run() { # name: the in-process tests, nothing on stderr
    local bin="$B/regions_$1"
    "$bin" 2>"$bin.err" | grep -v ' passed, .* failed$'
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    if [ -s "$bin.err" ]; then bad "$1: nothing on stderr" "$(head -n 10 "$bin.err")"; fi
}

for v in c99 c++17 asan+ubsan tsan table8 disabled disabled-c++; do
    build "$v" && run "$v"
done

bin=$B/regions_c99
[ -x "$bin" ] || exit 1

# The trace: nested slices on the thread's track, markers as instants.
if "$bin" trace "$B/trace.json" 2>"$B/trace.err" && [ ! -s "$B/trace.err" ]; then
    if out=$(python3 - "$B/trace.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
tracks = sorted(n for n in names.values() if n.startswith("regions, thread "))
errs = []
if len(tracks) != 2: errs.append("region tracks %s, want 2 (the main thread and the worker)" % tracks)
main = [e["tid"] for e in ev if e.get("cat") == "region" and e["name"] == "step"]
sl = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "region" and e["tid"] in main]
got = sorted((e["name"], e["args"]["depth"], e["args"]["phase"]) for e in sl)
want = sorted([("step", 0, "decode"), ("nccl all_reduce", 1, "decode"), ("odd \"<name>\" \ufffd", 1, "decode")])
if got != want: errs.append("main thread's slices %s, want %s" % (got, want))
def ns(x): return round(float(x) * 1000)
by = {e["name"]: e for e in sl}
if not errs:
    s, a, o = by["step"], by["nccl all_reduce"], by["odd \"<name>\" \ufffd"]
    for c in (a, o):
        if not (ns(s["ts"]) <= ns(c["ts"]) and ns(c["ts"]) + ns(c["dur"]) <= ns(s["ts"]) + ns(s["dur"])):
            errs.append("%s does not nest in step: %s in %s" % (c["name"], c, s))
    if ns(a["ts"]) + ns(a["dur"]) > ns(o["ts"]): errs.append("siblings overlap")
    mk = [e for e in ev if e.get("ph") == "i" and e.get("cat") == "marker" and e["tid"] in main]
    if [(m["name"], m["s"], m["tid"] in main) for m in mk] != [("evict", "t", True)]: errs.append("markers %s" % mk)
    elif not ns(a["ts"]) <= ns(mk[0]["ts"]) <= ns(a["ts"]) + ns(a["dur"]): errs.append("the marker is not inside its region")
    if any(e["name"] == "still open" for e in ev): errs.append("a region still open is in the trace")
    # the worker's: the newest of its 40200 events, in the timeline of 4096 (chunks of 64, dropped a chunk
    # at a time; the two threads' last chunks part-filled) with the main thread's 5 (4 + its phase), kept
    w = [e for e in ev if e.get("cat") in ("region", "marker") and e["tid"] not in main]
    o = d["otherData"]
    rows = sorted((t["recorded"], t["kept"], t["dropped"]) for t in o.get("threads", []))
    if not (len(w) == o["kept"] - 5 and o["recorded"] == 40200 + 5 and o["kept"] + o["dropped"] == o["recorded"] and
            4096 - 2 * 63 <= o["kept"] <= 4096 and o["chunk"] == 64 and
            rows == [(5, 5, 0), (40200, o["kept"] - 5, o["dropped"])]):
        errs.append("worker events %d, %s" % (len(w), o))
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
        ok "trace: regions are slices nested on their thread's track (2 tracks), the marker an instant inside its region, an open region absent"
    else
        bad "trace: regions as nested slices, markers as instants" "$out"
    fi
else
    bad "trace: the scenario ran quietly" "$(head -n 5 "$B/trace.err")"
fi

# Prometheus: the region families, odd names escaped; promtool takes it.
if "$bin" prom "$B/prom.txt" 2>"$B/prom.err"; then
    if grep -qx 'memobs_region_ends_total{job_id="",rank="0",local_rank="0",host="[^"]*",region="decode step"} 1' "$B/prom.txt" &&
        grep -q '^memobs_region_ends_total{.*,region="odd \\"label\\" \\\\ \\n '$'\xef\xbf\xbd'' value"} 1$' "$B/prom.txt" &&
        grep -q '^memobs_region_ends_total{.*,region="never used"} 0$' "$B/prom.txt" &&
        grep -q '^memobs_markers_total{.*,region="a marker"} 1$' "$B/prom.txt" &&
        grep -q '^memobs_region_timed_total{.*,region="decode step"} 1$' "$B/prom.txt" &&
        grep -q '^memobs_region_seconds_total{.*,region="decode step"} [0-9.e-]*$' "$B/prom.txt" &&
        grep -q '^memobs_region_max_seconds{.*,region="decode step"} [0-9.e-]*$' "$B/prom.txt" &&
        grep -q '^memobs_problems_total{.*,problem="region_unmatched_ends"} 1$' "$B/prom.txt" &&
        grep -q '^# TYPE memobs_region_max_seconds gauge$' "$B/prom.txt"; then
        ok "prom: region ends, timed, seconds, max and markers by region label; odd names escaped; the unmatched end a problem"
    else
        bad "prom: region families" "$(grep -E 'region|marker' "$B/prom.txt" | head -n 20)"
    fi
    if ! command -v promtool >/dev/null; then
        bad "prom: promtool is not installed (tests/deps.sh installs Debian's prometheus)"
    elif out=$(promtool check metrics <"$B/prom.txt" 2>&1) && [ -z "$out" ]; then
        ok "prom: promtool check metrics takes the exposition with region families"
    else
        bad "prom: promtool check metrics" "$out"
    fi
else
    bad "prom: the scenario ran" "$(head -n 5 "$B/prom.err")"
fi

# Stormlog: context = the regions open on each thread; marker events.
if "$bin" stormlog "$B/stormlog.json" 2>"$B/stormlog.err" && [ ! -s "$B/stormlog.err" ]; then
    if out=$(python3 tests/python/stormlog_check.py "$B/stormlog.json" --expect region --expect marker 2>&1); then
        ok "stormlog: the file with region and marker events passes the schema v2 validator"
    else
        bad "stormlog: schema v2" "$out"
    fi
    if out=$(python3 - "$B/stormlog.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
samples = [e for e in s if e["event_type"] == "sample"]
others = [e for e in s if e["event_type"] != "sample"]
errs = []
ctx = [e["context"] and sorted(e["context"].split(" | ")) for e in samples]
if ctx != [None, ["decode_step/nccl all_gather", "kv offload"], None]: errs.append("sample contexts %s" % ctx)
got = [(e["event_type"], e["context"], e["metadata"].get("edge")) for e in others]
if got != [("region", "nccl all_gather", "begin"), ("marker", "barrier sync", None), ("region", "nccl all_gather", "end")]:
    errs.append("events %s" % got)
if not all(e["device_total_bytes"] is None and e["device_id"] == -1 for e in others): errs.append("a total or a device")
# each marker event has the figures of the sample before it
for e in others:
    before = [x for x in samples if x["timestamp_ns"] <= e["timestamp_ns"]][-1]
    if (e["allocator_reserved_bytes"], e["device_used_bytes"]) != (before["allocator_reserved_bytes"], before["device_used_bytes"]):
        errs.append("%s: figures not the sample's before it" % e["event_type"])
if others and others[0]["metadata"].get("figures_from") != "previous sample": errs.append("figures_from")
for e in errs: print(e)
sys.exit(1 if errs else 0)
PY
); then
        ok "stormlog: samples carry the open regions (threads joined by \" | \"), collective regions and markers are events with the figures of the sample before them"
    else
        bad "stormlog: context and marker events" "$out"
    fi
else
    bad "stormlog: the scenario ran quietly" "$(head -n 5 "$B/stormlog.err")"
fi
exit $rc
