"""Checks the requests in a Chrome trace and a Stormlog file written by
tests/outputs/test_request_outputs.c (tests/outputs/test_request_outputs.sh).

    python3 request_outputs_check.py flows TRACE STORMLOG LEDGERS [SUITE]
    python3 request_outputs_check.py lanes TRACE [SUITE]
    python3 request_outputs_check.py off TRACE [SUITE]

LEDGERS: the program's stdout ("ledger ID BYTES OPS TIMED", "dir ID DIR
BYTES OPS"). The flows follow the Chrome trace format's flow events as
Perfetto's JSON importer binds them: "s" to the slice around it on its
track, "f" with "bp":"e" to the slice around it on its own; both are
checked to land on exactly one slice, the request's and the transfer's.
Prints one "ok - SUITE: ..." or "not ok - SUITE: ..." line per check and
exits 1 if any failed. Times are compared in integer nanoseconds.
"""
import json
import sys

MODE = sys.argv[1]
ARGS = sys.argv[2:]
SUITE = ARGS[{"flows": 3}.get(MODE, 1)] if len(ARGS) > {"flows": 3}.get(MODE, 1) else "request-outputs"
failed = 0
DIRS = ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d")


def report(name, ok, *detail):
    global failed
    print("%sok - %s: %s: %s" % ("" if ok else "not ", SUITE, MODE, name))
    if not ok:
        failed += 1
        for d in detail:
            for line in str(d).splitlines()[:20]:
                print("    # " + line)


def ns(x):
    return round(x * 1000)


try:
    with open(ARGS[0], "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    report("the trace parses as UTF-8 JSON", False, e)
    sys.exit(1)
ev = doc.get("traceEvents", [])
other = doc.get("otherData", {})
X = [e for e in ev if e.get("ph") == "X"]
S = [e for e in ev if e.get("ph") == "s"]
F = [e for e in ev if e.get("ph") == "f"]
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
req_tids = {t for t, n in names.items() if n.startswith("requests ")}
reqs = [e for e in X if e.get("cat") == "request"]
xfers = [e for e in X if e.get("cat") in ("copy", "device copy", "storage")]

flow_keys = ("name", "cat", "ph", "ts", "pid", "tid", "id")
bad = [e for e in S + F if any(k not in e for k in flow_keys) or e["cat"] != "request" or e["name"] != "request" or
       not isinstance(e["id"], int) or (e["ph"] == "f" and e.get("bp") != "e") or (e["ph"] == "s" and "bp" in e)]
report("flow events: name, cat, ph, ts, pid, tid, integer id; \"f\" with \"bp\":\"e\"", not bad, *bad[:5])
sid = sorted(e["id"] for e in S)
fid = sorted(e["id"] for e in F)
report("each flow id has one \"s\" and one \"f\"", sid == fid and len(set(sid)) == len(sid), sid[:20], fid[:20])

overlaps = []
for tid in sorted(req_tids):
    sl = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in reqs if e["tid"] == tid)
    overlaps += [(tid, a, b) for a, b in zip(sl, sl[1:]) if a[1] > b[0]]
report("request slices only on request tracks, never overlapping on one", not overlaps and
       all(e["tid"] in req_tids for e in reqs), *overlaps[:5])


def around(e, slices):
    """The slices of e's track around e's time: [ts, ts + dur), as Perfetto's
    slice stack closes a slice at its end (host-side slices of a direction
    touch: one ends where the next begins); a slice of no duration holds
    its own time."""
    t = ns(e["ts"])
    return [x for x in slices if x["tid"] == e["tid"] and
            (ns(x["ts"]) <= t < ns(x["ts"]) + ns(x["dur"]) or ns(x["ts"]) == t == ns(x["ts"]) + ns(x["dur"]))]


# flow id -> (request slice, transfer slice), each the one slice its end lands on
links, unbound = {}, []
fby = {e["id"]: e for e in F}
for s in S:
    r, t = around(s, reqs), around(fby.get(s["id"], {"tid": None, "ts": -1}), xfers)
    if len(r) != 1 or len(t) != 1:
        unbound.append((s, r, t))
        continue
    links[s["id"]] = (r[0], t[0])
report("every flow starts on one request slice and ends on one transfer slice, no earlier than it starts",
       not unbound and all(ns(s["ts"]) <= ns(fby[s["id"]]["ts"]) for s in S), *unbound[:3])


def carries(t, rid):
    """The bytes transfer slice t moved for request rid (None: not its)."""
    a = t["args"]
    if a.get("request") == rid:
        return a["bytes"]
    if rid in a.get("requests", []):
        return a["request_bytes"][a["requests"].index(rid)]
    return None


wrong = [(r["args"]["request"], t) for r, t in links.values() if carries(t, r["args"]["request"]) is None]
report("each flow links a request to a transfer slice whose args name it", not wrong, *wrong[:5])

if MODE == "flows":
    led, dirs = {}, {}
    for line in open(ARGS[2]):
        w = line.split()
        if w[0] == "ledger":
            led[int(w[1])] = tuple(int(x) for x in w[2:5])
        elif w[0] == "dir":
            dirs.setdefault(int(w[1]), {})[DIRS[int(w[2])]] = (int(w[3]), int(w[4]))
    report("the program's ledgers: 1 moved 71863 bytes in 6, 2 5607 in 5, 3 338 in 2, 4 nothing",
           led == {1: (71863, 6, 1), 2: (5607, 5, 1), 3: (338, 2, 0), 4: (0, 0, 0)}, led)
    got = {e["args"]["request"]: (e["args"]["state"], e["args"]["tenant"], e["args"]["bytes"], e["args"]["transfers"])
           for e in reqs}
    want = {1: ("completed", "acme", 71863, 6), 2: ("aborted", None, 5607, 5), 3: ("in flight", None, 338, 2),
            4: ("aborted", None, 0, 0)}
    report("a slice per request: state, tenant, bytes and transfers of its ledger", got == want and len(reqs) == 4,
           got, want)
    for rid, (b, ops, timed) in sorted(led.items()):
        host = [(t, carries(t, rid)) for r, t in links.values() if r["args"]["request"] == rid and "GB/s" not in t["args"]]
        tim = [t for r, t in links.values() if r["args"]["request"] == rid and "GB/s" in t["args"]]
        report("request %d: flows to its transfer slices = its ledger's transfers (%d), bytes %d; to timed slices %d"
               % (rid, ops, b, timed), len(host) == ops and sum(x for _, x in host) == b and len(tim) == timed,
               [(t["name"], x) for t, x in host], tim)
        per = {}
        for t, x in host:
            d = t["name"].split()[0].lower()
            per[d] = (per.get(d, (0, 0))[0] + x, per.get(d, (0, 0))[1] + 1)
        report("request %d: its linked slices' bytes and count by direction = its ledger's" % rid,
               per == dirs.get(rid, {}), per, dirs.get(rid, {}))
    loose = [t for t in xfers if t["args"]["bytes"] == 999]
    report("the record made bound to no request: no request in its args, no flow",
           len(loose) == 1 and "request" not in loose[0]["args"] and
           all(t is not loose[0] for _, t in links.values()), loose)
    split = [t for t in xfers if "requests" in t["args"]]
    report("the split transfer: one slice of 1000 bytes, requests [1, 2, 3], parts [250, 500, 250], three flows",
           len(split) == 1 and (split[0]["args"]["bytes"], split[0]["args"]["requests"],
                                split[0]["args"]["request_bytes"], split[0]["args"]["requests_total"]) ==
           (1000, [1, 2, 3], [250, 500, 250], 3) and sum(t is split[0] for _, t in links.values()) == 3, split)
    report("otherData.requests: 4 tracks, 4 drawn, 1 in flight, 15 flows, none unlinked",
           other.get("requests") == {"tracks": 4, "drawn": 4, "not_drawn": 0, "in_flight": 1, "dropped": 0,
                                     "flows": 15, "unlinked": 0}, other.get("requests"))
    try:
        with open(ARGS[1], encoding="utf-8") as f:
            sl = json.load(f)
    except Exception as e:  # noqa: BLE001
        report("the Stormlog file parses", False, e)
        sys.exit(1)
    rq = [e for e in sl if e["event_type"] == "request"]
    got = {e["metadata"]["request_id"]: e for e in rq}
    report("Stormlog: a \"request\" event for each finished request that moved bytes (1, 2), none for 3 (in flight) "
           "or 4 (nothing)", sorted(got) == [1, 2] and len(rq) == 2, [e["context"] for e in rq])
    for rid in sorted(got):
        m = got[rid]["metadata"]
        have = {d: (m[d + "_bytes"], m[d + "_ops"]) for d in DIRS if d + "_ops" in m}
        report("Stormlog: request %d's bytes and operations by direction = its ledger's" % rid,
               have == dirs[rid] and got[rid]["context"] == "request %d" % rid and
               got[rid]["device_total_bytes"] is None, have, dirs[rid])
    report("Stormlog: request 1's tenant acme, completed, waited 40000 ns; 2 no tenant, aborted, 2000 ns",
           [(got[k]["metadata"]["tenant"], got[k]["metadata"]["state"], got[k]["metadata"]["wait_ns"])
            for k in (1, 2) if k in got] == [("acme", "completed", 40000), (None, "aborted", 2000)],
           [got[k]["metadata"] for k in got])
    ts = [e["timestamp_ns"] for e in sl if e["event_type"] not in ("transfers", "peer_transfer")]
    report("Stormlog: the events in time order", ts == sorted(ts), ts)

elif MODE == "lanes":
    r = other.get("requests", {})
    report("otherData.requests: 64 tracks, 74 drawn (64 + 10 reusing tracks), 36 not drawn, 74 flows",
           (r.get("tracks"), r.get("drawn"), r.get("not_drawn"), r.get("in_flight"), r.get("flows"),
            r.get("unlinked")) == (64, 74, 36, 0, 74, 0), r)
    report("64 request tracks named requests 1 .. requests 64",
           sorted(names[t] for t in req_tids) == sorted("requests %d" % k for k in range(1, 65)),
           sorted(names[t] for t in req_tids))
    drawn = sorted(e["args"]["request"] for e in reqs)
    report("the requests drawn: the first 64 to begin (100 .. 163), then 200 .. 209",
           drawn == list(range(100, 164)) + list(range(200, 210)), drawn)
    per = {}
    for rr, t in links.values():
        per.setdefault(rr["args"]["request"], []).append(t["args"]["bytes"])
    report("each request drawn: one flow, to its transfer (bytes = its id)",
           per == {k: [k] for k in drawn}, sorted(per.items())[:10])
    carry = sorted(t["args"].get("request", -1) for t in xfers)
    report("all 110 transfer slices carry their request's id, drawn or not",
           carry == list(range(100, 210)) and all(t["args"]["bytes"] == t["args"]["request"] for t in xfers),
           carry[:10])

elif MODE == "off":
    report("timeline off: no request slice, no flow, no request in a slice's args",
           not reqs and not S and not F and not any("request" in e.get("args", {}) for e in X) and
           other.get("timeline") == "off" and "requests" not in other, other)

sys.exit(1 if failed else 0)
