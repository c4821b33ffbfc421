"""Checks a Chrome trace written by memobs (tests/outputs/test_timeline.sh).

    python3 chrome_trace_check.py SCENARIO TRACE.json [SUITE]

Parses the file with the json module, checks the fields every event needs
for its phase type and that slices on one track never overlap, then the
exact content the scenario of tests/outputs/test_timeline.c produced. Prints one
"ok - SUITE: ..." or "not ok - SUITE: ..." line per check (details as
"    # " lines) and exits 1 if any failed. Times are compared in integer
nanoseconds (memobs writes microseconds with three decimals).
"""
import json
import sys

SCENARIO, PATH = sys.argv[1], sys.argv[2]
SUITE = sys.argv[3] if len(sys.argv) > 3 else "timeline"
failed = 0


def report(name, ok, *detail):
    global failed
    print("%sok - %s: %s: %s" % ("" if ok else "not ", SUITE, SCENARIO, name))
    if not ok:
        failed += 1
        for d in detail:
            for line in str(d).splitlines()[:20]:
                print("    # " + line)


def ns(x):
    return round(x * 1000)


try:
    with open(PATH, "rb") as f:
        raw = f.read()
    doc = json.loads(raw.decode("utf-8"))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    report("the file parses as UTF-8 JSON", False, e)
    sys.exit(1)
report("the file parses as UTF-8 JSON", True)

ev = doc.get("traceEvents")
report("top level: traceEvents list, displayTimeUnit ns, otherData",
       isinstance(ev, list) and doc.get("displayTimeUnit") == "ns" and isinstance(doc.get("otherData"), dict),
       sorted(doc.keys()))
ev = ev or []
other = doc.get("otherData", {})

NEED = {"X": ("name", "ph", "ts", "dur", "pid", "tid"), "C": ("name", "ph", "ts", "pid", "args"),
        "M": ("name", "ph", "pid", "args"), "i": ("name", "ph", "ts", "pid", "tid", "s")}
bad = []
for e in ev:
    ph = e.get("ph")
    if ph not in NEED or any(k not in e for k in NEED[ph]):
        bad.append(e)
    elif ph == "C" and not (e["args"] and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                               for v in e["args"].values())):
        bad.append(e)
    elif ph == "M" and not isinstance(e["args"].get("name", e["args"].get("sort_index")), (str, int)):
        bad.append(e)
    elif ph in ("X", "C", "i") and not (isinstance(e["ts"], (int, float)) and e["ts"] >= 0):
        bad.append(e)
    elif ph == "X" and not (isinstance(e["dur"], (int, float)) and e["dur"] >= 0):
        bad.append(e)
report("every event has the fields of its phase type", not bad, *bad[:5])

X = [e for e in ev if e["ph"] == "X"]
C = [e for e in ev if e["ph"] == "C"]
I = [e for e in ev if e["ph"] == "i"]
M = [e for e in ev if e["ph"] == "M"]
names = {e["tid"]: e["args"]["name"] for e in M if e["name"] == "thread_name"}
pname = [e["args"]["name"] for e in M if e["name"] == "process_name"]
report("one process_name; every track with events is named", len(pname) == 1 and
       all(e["tid"] in names for e in X + I), pname, sorted({e["tid"] for e in X + I} - set(names)))

overlaps = []
for tid in sorted({e["tid"] for e in X}):
    sl = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in X if e["tid"] == tid)
    overlaps += [(tid, a, b) for a, b in zip(sl, sl[1:]) if a[1] > b[0]]
report("slices on one track do not overlap", not overlaps, *overlaps[:5])


def series(name):
    """Values of a counter, in time order (a stable sort keeps write order for equal times)."""
    return [e["args"]["value"] for e in sorted((e for e in C if e["name"] == name), key=lambda e: ns(e["ts"]))]


def tid_of(track):
    return [t for t, n in names.items() if n == track]


def slices(track):
    t = tid_of(track)
    return sorted((e for e in X if e["tid"] in t), key=lambda e: ns(e["ts"]))


for d in ("H2D", "D2H", "D2D"):
    s = series(d + " bytes")
    report(d + " cumulative bytes never decrease", all(a <= b for a, b in zip(s, s[1:])), s[:20])

if SCENARIO == "known":
    h2d, d2h, d2d = slices("H2D copies"), slices("D2H copies"), slices("D2D copies")
    report("H2D copies: 4 slices, bytes and phases in order",
           [(e["name"], e["args"]["bytes"], e["args"]["phase"]) for e in h2d] ==
           [("H2D prefill", 1000, "prefill"), ("H2D prefill", 2000, "prefill"), ("H2D prefill", 3000, "prefill"),
            ("H2D unphased", 1, "unphased")], h2d)
    report("D2H copies: 5 decode slices of 10 bytes",
           [(e["name"], e["args"]["bytes"]) for e in d2h] == [("D2H decode", 10)] * 5, d2h)
    report("D2D copies: 1 prefill slice of 7 bytes", [(e["name"], e["args"]["bytes"]) for e in d2d] ==
           [("D2D prefill", 7)], d2d)
    report("host-side slices at most 1 us wide", all(0 <= ns(e["dur"]) <= 1000 for e in h2d + d2h + d2d))
    report("cumulative bytes end at the totals: H2D 6001, D2H 50, D2D 7",
           (series("H2D bytes")[-1:], series("D2H bytes")[-1:], series("D2D bytes")[-1:]) == ([6001], [50], [7]),
           series("H2D bytes"), series("D2H bytes"), series("D2D bytes"))
    report("cumulative counters: one value per record",
           (series("H2D bytes"), series("D2H bytes")) == ([1000, 3000, 6000, 6001], [10, 20, 30, 40, 50]))
    t1, t2 = slices("H2D copies (device-timed)"), slices("H2D copies (device-timed) #2")
    # the 60 s copy, reported second, starts first: the first track; the 2 ms
    # copy starts inside it: the second track
    report("device-timed copies: 60 s and 2 ms slices, the overlapping one on a second track",
           [(e["args"]["bytes"], ns(e["dur"])) for e in t1] == [(8192, 60000000000)] and
           [(e["args"]["bytes"], ns(e["dur"])) for e in t2] == [(4096, 2000000)] and
           ns(t1[0]["ts"]) < ns(t2[0]["ts"]) < ns(t1[0]["ts"]) + ns(t1[0]["dur"]) and
           abs(t2[0]["args"]["GB/s"] - 4096 / 2e6) < 1e-3, t1, t2)
    al = sorted((e for e in I if e["tid"] in tid_of("allocations")), key=lambda e: ns(e["ts"]))
    want = [("alloc device", "0x10000", 1000, "device", 1, "prefill", "kv_cache"),
            ("alloc pinned", "0x20000", 300, "pinned", -1, "prefill", "tag \"q\" \\ \n\x01 caf\u00e9"),
            ("alloc device", "0x30000", 500, "device", 1, "prefill", ""),
            ("free device", "0x10000", 1000, "device", 1, "prefill", "kv_cache")]
    got = [(e["name"], e["args"]["ptr"], e["args"]["bytes"], e["args"]["kind"], e["args"]["device"],
            e["args"]["phase"], e["args"]["trace"]) for e in al]
    report("allocations: 3 allocs and 1 free with ptr, bytes, kind, device, phase, trace text", got == want,
           got, want)
    report("live device bytes: 1000, 1500, 500; live pinned bytes: 300",
           (series("live device bytes"), series("live pinned bytes")) == ([1000, 1500, 500], [300]),
           series("live device bytes"), series("live pinned bytes"))
    ph = [t for t, n in names.items() if n.startswith("phase, thread ")]
    ps = sorted((e for e in X if e["tid"] in ph), key=lambda e: ns(e["ts"]))
    ok = len(ph) == 1 and [e["name"] for e in ps] == ["prefill", "decode", "prefill"]
    if ok:
        p1, dec, p2 = ps
        # prefill ends where decode starts; decode spans both decode records and
        # ends at the switch to unphased, which precedes the unphased H2D record
        ok = (ns(p1["ts"]) + ns(p1["dur"]) == ns(dec["ts"]) and ns(dec["dur"]) >= 1000000 and
              ns(dec["ts"]) + ns(dec["dur"]) <= ns(h2d[3]["ts"]) < ns(p2["ts"]) and ns(p2["dur"]) > 0)
        inside = [e for e in h2d[:3] + d2d if not ns(p1["ts"]) <= ns(e["ts"]) <= ns(p1["ts"]) + ns(p1["dur"])]
        inside += [e for e in d2h if not ns(dec["ts"]) <= ns(e["ts"]) <= ns(dec["ts"]) + ns(dec["dur"])]
        ok = ok and not inside
    report("phase slices: prefill, decode (one slice for two sets), prefill; records inside their phase", ok,
           ps, names)
    smp = sorted((e for e in C if e["name"] == "rss_bytes"), key=lambda e: ns(e["ts"]))
    report("sampled series: a counter track at the exact times",
           [(e["ts"], e["args"]["value"]) for e in smp] == [(5000000.123, 10), (5000001.123, 20), (5000002.123, 30)],
           smp)
    report("otherData: 24 recorded and kept, none dropped",
           (other.get("capacity"), other.get("recorded"), other.get("kept"), other.get("dropped"),
            other.get("in_trace")) == (1000, 24, 24, 0, 24), other)

elif SCENARIO == "overflow":
    d2h = slices("D2H copies")
    report("the newest 8 of 20 kept", [e["args"]["bytes"] for e in d2h] == list(range(13, 21)), d2h)
    report("drops counted: 12", (other.get("recorded"), other.get("kept"), other.get("dropped"),
                                 other.get("in_trace")) == (20, 8, 12, 8), other)
    report("cumulative D2H bytes from the oldest kept record: 13 .. 132",
           series("D2H bytes") == [sum(range(13, k + 1)) for k in range(13, 21)], series("D2H bytes"))

elif SCENARIO == "escape":
    tags = ["quote \" and backslash \\ and slash /", "new\nline\rreturn\ttab", "ctl \x01\x02\x1f\x7f end",
            "utf8 caf\u00e9 \u4e2d\u6587 \U0001F680", "{\"json\": [1, 2]} </script>",
            "a" * 62 + "\ufffd", "bad \ufffd \ufffd\ufffd end"]
    got = [e["args"]["trace"] for e in sorted(I, key=lambda e: e["args"]["bytes"])]
    for k, t in enumerate(tags):
        report("tag %d survives json.loads exactly" % (k + 1), k < len(got) and got[k] == t,
               "want %r" % t, "got  %r" % (got[k] if k < len(got) else None))

elif SCENARIO == "threads":
    torn = []
    for e in X:
        if e["tid"] in tid_of("H2D copies") + tid_of("D2H copies") + tid_of("D2D copies"):
            k = e["args"]["bytes"] // 1000000
            if not (0 <= k < 4 and names[e["tid"]] == ("H2D", "D2H", "D2D")[k % 3] + " copies"
                    and e["name"].endswith(e["args"]["phase"])):
                torn.append(e)
    for e in I:
        p = int(e["args"]["ptr"], 16)
        if e["args"]["bytes"] != p % 1000003 + 1 or not 1 <= p >> 32 <= 4:
            torn.append(e)
    kinds = [e for e in X if e["tid"] in tid_of("H2D copies") + tid_of("D2H copies") + tid_of("D2D copies")]
    report("a trace written while 4 threads record: no torn event", not torn and len(kinds) > 0,
           "%d copy slices, %d allocation events" % (len(kinds), len(I)), *torn[:5])
    n = len([e for e in ev if e["ph"] in ("X", "i")])
    report("a trace written while 4 threads record: in_trace <= capacity, kept + dropped = recorded",
           other.get("in_trace", 1 << 30) <= 4096 and other.get("capacity") == 4096 and
           other.get("recorded", 0) >= other.get("in_trace", 0) and
           other.get("kept", -1) + other.get("dropped", -1) == other.get("recorded"), other, n)
    th = other.get("threads", [])
    report("otherData.threads: a row per thread that recorded (at most 4), adding up to the totals",
           1 <= len(th) <= 4 and all(t["recorded"] == t["kept"] + t["dropped"] for t in th) and
           sum(t["kept"] for t in th) == other.get("kept") and sum(t["dropped"] for t in th) == other.get("dropped"),
           th, other)

elif SCENARIO == "order":
    filed = [e for e in X if e["tid"] in tid_of("H2D copies")]
    report("2 threads taking turns: the file's records merged by time (times never go back)",
           all(ns(a["ts"]) <= ns(b["ts"]) for a, b in zip(filed, filed[1:])),
           [(e["ts"], e["args"]["bytes"]) for a, b in zip(filed, filed[1:]) if ns(a["ts"]) > ns(b["ts"]) for e in (a, b)][:6])
    turns = sorted(filed, key=lambda e: e["args"]["bytes"])
    report("2 threads taking turns: every record once, 1, 2, ..., 3000",
           [e["args"]["bytes"] for e in turns] == list(range(1, 3001)), [e["args"]["bytes"] for e in turns][:20])
    steps = [ns(b["ts"]) - ns(a["ts"]) for a, b in zip(turns, turns[1:])]
    if other.get("clock") == "tsc":
        # rdtsc is not ordered after the load that saw the other thread's
        # turn end (clock_gettime's vDSO read is), so a record stamped
        # right after a hand-over may tie or precede the one before it by
        # the few ns the CPU ran the read early: never by a microsecond
        report("2 threads taking turns (tsc): each record's time at most 1 us before the one before it, and most later",
               min(steps) > -1000 and sum(d > 0 for d in steps) >= len(steps) // 2,
               min(steps), sum(d > 0 for d in steps), [(k + 1, d) for k, d in enumerate(steps) if d <= 0][:6])
    else:
        report("2 threads taking turns (clock_gettime): strictly increasing times", all(d > 0 for d in steps),
               [(k + 1, d) for k, d in enumerate(steps) if d <= 0][:6])
    th = other.get("threads", [])
    report("otherData: 2 threads of 1500 records each, none dropped",
           sorted((t["recorded"], t["kept"], t["dropped"]) for t in th) == [(1500, 1500, 0)] * 2 and
           other.get("clock") in ("tsc", "clock_gettime") and other.get("ns_per_tick", 0) > 0, th, other)

elif SCENARIO == "fork":
    mine = [e["args"]["bytes"] for e in X if e["tid"] in tid_of("H2D copies")]
    theirs = [e for e in X if e["tid"] in tid_of("D2D copies")]
    report("fork: the child's trace holds its 10 records and the parent thread's",
           sorted(mine) == list(range(1001, 1011)) and len(theirs) > 0 and
           other.get("kept", 0) >= 10 + len(theirs) - 0 and other.get("in_trace") == len(mine) + len(theirs),
           mine, len(theirs), other)

elif SCENARIO == "off":
    report("timeline off: no events, nothing recorded",
           not X and not I and not C and (other.get("capacity"), other.get("recorded"), other.get("in_trace")) ==
           (0, 0, 0), other)
    report("timeline off: otherData says so and how to turn it on",
           other.get("timeline") == "off" and "memobs_timeline_start(N)" in other.get("note", "") and
           "MEMOBS_TIMELINE=PATH" in other.get("note", ""), other)

elif SCENARIO == "env":
    h2d, d2h = slices("H2D copies"), slices("D2H copies")
    ps = [e["name"] for e in sorted(X, key=lambda e: ns(e["ts"])) if names.get(e["tid"], "").startswith("phase, thread ")]
    got = ([(e["name"], e["args"]["bytes"]) for e in h2d], [(e["name"], e["args"]["bytes"]) for e in d2h], ps)
    if other.get("capacity") == 2:
        report("MEMOBS_TIMELINE_EVENTS=2, written at exit: the newest 2 of 5 events (decode, D2H 33), 3 dropped",
               got == ([], [("D2H decode", 33)], ["decode"]) and
               (other.get("recorded"), other.get("dropped"), other.get("in_trace")) == (5, 3, 2), got, other)
    else:
        report("written at exit: 2 H2D prefill, 1 D2H decode, phases prefill then decode, capacity 65536",
               got == ([("H2D prefill", 11), ("H2D prefill", 22)], [("D2H decode", 33)], ["prefill", "decode"]) and
               (other.get("capacity"), other.get("recorded"), other.get("dropped")) == (65536, 5, 0), got, other)

else:
    report("known scenario", False, "no scenario " + SCENARIO)

sys.exit(1 if failed else 0)
