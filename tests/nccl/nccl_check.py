"""Checks what memobs wrote for tests/nccl/nccl_driver.c against the values
the driver expects (NCCL_DRIVER_EXPECT: generated from the same table as
the events it played). Exact: every failure prints expected and actual.

    nccl_check.py summary EXPECT SUMMARY.json INSTANCE LEVEL
    nccl_check.py text EXPECT SUMMARY.txt
    nccl_check.py prom EXPECT FILE.prom
    nccl_check.py timeline EXPECT TRACE.json
    nccl_check.py stormlog EXPECT RANK.json
    nccl_check.py matrix SUMMARY0.json ... SUMMARY3.json   (the ring, from each rank's peers)
    nccl_check.py attribution RANK0.json ... RANK3.json    (Stormlog's collective attribution)

Prints "ok - nccl: ..." / "not ok - nccl: ..." lines ("    # " details);
exit status 1 if any failed. SUITE in the environment replaces "nccl"."""
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stormlog_ranks  # noqa: E402  (its sample grouping and marker tokens)

SUITE = os.environ.get("SUITE", "nccl")
TAG = os.environ.get("TAG", "")
failed = 0


def report(name, problems):
    global failed
    name = (TAG + ": " if TAG else "") + name
    if problems:
        failed += 1
        print("not ok - %s: %s" % (SUITE, name))
        for p in problems[:30]:
            print("    # " + str(p))
        if len(problems) > 30:
            print("    # ... %d more" % (len(problems) - 30))
    else:
        print("ok - %s: %s" % (SUITE, name))


def load(path):
    with open(path) as f:
        return json.load(f)


def close(a, b):
    return a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and
                      math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9))


def expected_kinds(comm):
    """{kind: {phase: figures}} with algbw/busbw as memobs derives them."""
    out = {}
    for k in comm["kinds"]:
        fig = {f: k[f] for f in ("ops", "bytes", "timed_ops", "ns", "algo_bytes", "bus_bytes")}
        # null where memobs has no figure: nothing timed, or no bus factor
        fig["algbw_gbs"] = k["algo_bytes"] / k["ns"] if k["ns"] else None
        fig["busbw_gbs"] = k["bus_bytes"] / k["ns"] if k["ns"] and k["bus_factor"] else None
        out.setdefault(k["kind"], {})[k["phase"]] = fig
    return out


def cmd_summary(exp_path, path, instance, level):
    exp, s = load(exp_path), load(path)
    col = s.get("collectives")
    probs = []
    if not isinstance(col, dict):
        report("summary has \"collectives\"", ["no \"collectives\" key; keys: %s" % sorted(s)])
        return
    for key, want in (("source", "nccl-profiler"), ("instance", instance), ("level", level),
                      ("api_version", exp["version"]), ("captured_calls", exp["captured_calls"]),
                      ("events_dropped", 0), ("bad_events", 0), ("comms_dropped", 0)):
        if col.get(key) != want:
            probs.append("collectives.%s: expected %r, got %r" % (key, want, col.get(key)))
    report("source, instance %s, level %s, api_version %d, captured %d, nothing dropped" %
           (instance, level, exp["version"], exp["captured_calls"]), probs)

    probs = []
    got_comms = {(c.get("name"), c.get("rank")): c for c in col.get("comms", [])}
    for ec in exp["comms"]:
        gc = got_comms.pop((ec["name"], ec["rank"]), None)
        where = "comm %s r%d" % (ec["name"], ec["rank"])
        if gc is None:
            probs.append("%s: missing (comms: %s)" % (where, sorted(got_comms)))
            continue
        for key in ("nranks", "nnodes"):
            if gc.get(key) != ec[key]:
                probs.append("%s.%s: expected %r, got %r" % (where, key, ec[key], gc.get(key)))
        if ec["nranks"] and gc.get("id") != ec["id"]:
            probs.append("%s.id: expected %r, got %r" % (where, ec["id"], gc.get("id")))
        want, got = expected_kinds(ec), gc.get("kinds", {})
        for kind in sorted(set(want) | set(got)):
            for phase in sorted(set(want.get(kind, {})) | set(got.get(kind, {}))):
                w, g = want.get(kind, {}).get(phase), got.get(kind, {}).get(phase)
                if w is None or g is None:
                    probs.append("%s %s/%s: expected %s, got %s" % (where, kind, phase, w, g))
                    continue
                for f, v in w.items():
                    if not close(g.get(f), v):
                        probs.append("%s %s/%s.%s: expected %r, got %r" % (where, kind, phase, f, v, g.get(f)))
    for k in got_comms:
        probs.append("comm %s r%s: not expected" % k)
    report("every (comm, kind, phase) row exact: ops, bytes, timed_ops, ns, algo/bus bytes, algbw, busbw", probs)

    probs = []
    want = {}
    for p in exp["peers"]:
        want.setdefault("%s r%d" % (p["comm"], p["rank"]), {}).setdefault(p["dir"], {})[p["phase"]] = \
            {"bytes": p["bytes"], "ops": p["ops"]}
    got = {}
    for p in s.get("peers", []):
        for d in ("send", "recv"):
            for ph, fig in (p.get(d) or {}).items():
                got.setdefault(p.get("name"), {}).setdefault(d, {})[ph] = {"bytes": fig.get("bytes"),
                                                                           "ops": fig.get("ops")}
    if want != got:
        probs.append("expected %s" % json.dumps(want, sort_keys=True))
        probs.append("got      %s" % json.dumps(got, sort_keys=True))
    report("peers: bytes and ops per peer, dir, phase", probs)


def cmd_text(exp_path, path):
    """The text summary's "collectives:" block: per comm a header "NAME
    rank R/N, ..." and a row per (kind, phase): ops, then bytes and time
    for people, then algbw and busbw as %.3f GB/s ("n/a": untimed or no
    bus factor)."""
    exp = load(exp_path)
    text = open(path).read()
    rows, comm = {}, None
    block = text[text.find("  collectives:"):] if "  collectives:" in text else ""
    for line in block.splitlines()[1:]:
        m = re.match(r"^    (\S+)(?:  rank .*)?$", line)
        if m:
            comm = m.group(1)
            continue
        m = re.match(r"^      (\S+)\s+(unphased|prefill|decode)\s+(\d+)\s.*\s(\S+)\s+(\S+)$", line)
        if m and comm:
            rows[(comm, m.group(1), m.group(2))] = (int(m.group(3)), m.group(4), m.group(5))
        elif not line.startswith("      "):
            break
    want = {}
    for ec in exp["comms"]:
        for k in ec["kinds"]:
            alg = "%.3f" % (k["algo_bytes"] / k["ns"]) if k["ns"] else "n/a"
            bus = "%.3f" % (k["bus_bytes"] / k["ns"]) if k["ns"] and k["bus_factor"] else "n/a"
            want[(ec["name"], k["kind"], k["phase"])] = (k["ops"], alg, bus)
    probs = []
    if want != rows:
        for key in sorted(set(want) | set(rows)):
            if want.get(key) != rows.get(key):
                probs.append("%s %s/%s (ops, algbw, busbw): expected %s, got %s" % (key + (want.get(key),
                                                                                           rows.get(key))))
        probs += ["text: " + l for l in block.splitlines()[:30]]
    report("text summary: a row per (comm, kind, phase) with its ops, algbw and busbw", probs)


PROM_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')


def prom_samples(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = PROM_LINE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def cmd_prom(exp_path, path):
    exp = load(exp_path)
    samples = prom_samples(path)
    probs = []

    def find(name, **labels):
        hits = [v for n, l, v in samples if n == name and all(l.get(k) == str(x) for k, x in labels.items())]
        return hits

    for ec in exp["comms"]:
        for k in ec["kinds"]:
            lab = dict(comm=ec["name"], comm_rank=ec["rank"], nranks=ec["nranks"], kind=k["kind"], phase=k["phase"])
            for fam, want in (("memobs_collective_ops_total", k["ops"]),
                              ("memobs_collective_bytes_total", k["bytes"]),
                              ("memobs_collective_timed_ops_total", k["timed_ops"]),
                              ("memobs_collective_seconds_total", k["ns"] / 1e9),
                              ("memobs_collective_algo_bytes_total", k["algo_bytes"]),
                              ("memobs_collective_bus_bytes_total", k["bus_bytes"])):
                got = find(fam, **lab)
                if len(got) != 1 or not close(got[0], want):
                    probs.append("%s%s: expected %r, got %s" % (fam, json.dumps(lab), want, got))
    for p in exp["peers"]:
        lab = dict(peer="%s r%d" % (p["comm"], p["rank"]), dir=p["dir"], phase=p["phase"])
        for fam, want in (("memobs_peer_transfer_bytes_total", p["bytes"]),
                          ("memobs_peer_transfer_ops_total", p["ops"])):
            got = find(fam, **lab)
            if len(got) != 1 or not close(got[0], want):
                probs.append("%s%s: expected %r, got %s" % (fam, json.dumps(lab), want, got))
    info = [l for n, l, v in samples if n == "memobs_collective_info" and v == 1]
    if len(info) != 1 or info[0].get("api_version") != str(exp["version"]):
        probs.append("memobs_collective_info: expected one sample with api_version %d, got %s" % (exp["version"], info))
    drops = find("memobs_collective_events_dropped_total")
    if drops != [0.0]:
        probs.append("memobs_collective_events_dropped_total: expected [0], got %s" % drops)
    report("Prometheus: every collective and peer sample exact, the info and dropped samples", probs)


def cmd_timeline(exp_path, path):
    """One complete slice per collective, on its communicator's track
    ("nccl tp r0"): name, track, phase, bytes and duration (GPU time; 0
    untimed)."""
    exp = load(exp_path)
    doc = load(path)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    tracks = {(e.get("pid"), e.get("tid")): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    got = sorted((e["name"], tracks.get((e.get("pid"), e.get("tid"))), (e.get("args") or {}).get("phase"),
                  (e.get("args") or {}).get("bytes"), round(float(e.get("dur", 0)) * 1000)) for e in events
                 if e.get("ph") == "X" and str(e.get("name", "")).startswith("nccl "))
    want = sorted((s["name"], s["track"], s["phase"], s["bytes"], s["ns"]) for s in exp["slices"])
    probs = []
    if got != want:
        probs.append("expected %d slices (name, track, phase, bytes, ns): %s" % (len(want), want))
        probs.append("got      %d slices: %s" % (len(got), got))
    report("timeline: %d slices \"nccl <kind>\" on their communicator's track, phase, bytes, GPU time" % len(want),
           probs)


def cmd_stormlog(exp_path, path):
    """One nccl_collective event per collective (at most one per comm and
    kind per 10 ms): context "nccl <kind>", metadata comm, bytes, phase,
    duration_ns; on the rank's series, out of the gap analysis."""
    exp = load(exp_path)
    events = load(path)
    mine = [e for e in events if e.get("event_type") == "nccl_collective"]
    got = sorted((e.get("context"), (e.get("metadata") or {}).get("comm"), (e.get("metadata") or {}).get("bytes"),
                  (e.get("metadata") or {}).get("phase"), (e.get("metadata") or {}).get("duration_ns")) for e in mine)
    want = sorted((s["name"], s["comm"], s["bytes"], s["phase"], s["ns"]) for s in exp["slices"] if s["stormlog"])
    probs = []
    if got != want:
        probs.append("expected (context, comm, bytes, phase, ns): %s" % want)
        probs.append("got      %s" % got)
    bad = [e for e in mine if e.get("rank") != exp["rank"] or e.get("device_total_bytes") is not None]
    if bad:
        probs.append("%d nccl_collective events not on rank %d or with a device_total_bytes: %s" %
                     (len(bad), exp["rank"], bad[:2]))
    report("Stormlog: %d nccl_collective events (context \"nccl <kind>\", comm, bytes, phase, duration), rank %d" %
           (len(want), exp["rank"]), probs)


def cmd_matrix(paths):
    """The 4x4 transfer matrix from the 4 ranks' peers: rank r sends to
    (r+1)%4 and receives from (r+3)%4; what r sent to p is what p received
    from r."""
    n = len(paths)
    send = [[0] * n for _ in range(n)]
    recv = [[0] * n for _ in range(n)]
    for r, path in enumerate(paths):
        for p in load(path).get("peers", []):
            m = re.match(r"tp r(\d+)$", p.get("name", ""))
            if not m:
                continue
            q = int(m.group(1))
            send[r][q] += sum(f.get("bytes", 0) for f in (p.get("send") or {}).values())
            recv[q][r] += sum(f.get("bytes", 0) for f in (p.get("recv") or {}).values())
    ring = 4 * 3 * 524288
    want = [[ring if q == (r + 1) % n else 0 for q in range(n)] for r in range(n)]
    probs = []
    if send != want:
        probs.append("sent[r][peer]: expected %s, got %s" % (want, send))
    if recv != want:
        probs.append("received (as [from][to]): expected %s, got %s" % (want, recv))
    report("the %dx%d ring matrix merged from the ranks' summaries: r -> (r+1)%%%d %d bytes, sends = receives" %
           (n, n, n, ring), probs)


# Stormlog v0.2.9's collective attribution (stormlog/collective_attribution.py,
# medium preset), as REFERENCE.md describes it: our own code.
MIN_GAP, MIN_RATIO, Z_MIN, MARKER_NS, SYNC_NS = 128 << 20, 0.04, 2.5, 150_000_000, 120_000_000


def robust_z(values, v):
    if len(values) < 3:
        return 0.0
    s = sorted(values)
    med = (s[len(s) // 2] + s[(len(s) - 1) // 2]) / 2
    dev = sorted(abs(x - med) for x in values)
    mad = (dev[len(dev) // 2] + dev[(len(dev) - 1) // 2]) / 2
    if mad > 0:
        return max(0.0, 0.6745 * (v - med) / mad)
    mean = sum(values) / len(values)
    std = math.sqrt(sum((x - mean) ** 2 for x in values) / (len(values) - 1))
    return max(0.0, (v - mean) / std) if std > 0 else 0.0


def attribution(events):
    """[(rank, classification, confidence, marker hits)] per gap spike."""
    ranks = stormlog_ranks.samples_by_rank(events)
    markers = {}
    for e in events:
        if stormlog_ranks.has_token(e):
            markers.setdefault(e["rank"], []).append(e["timestamp_ns"])
    spikes = []
    for r, s in ranks.items():
        if len(s) < 6:
            continue
        gaps = [max(0, e["device_used_bytes"] - e["allocator_reserved_bytes"]) for e in s]
        for e, g in zip(s, gaps):
            ratio = g / e["device_total_bytes"] if e.get("device_total_bytes") else None
            if not (g >= MIN_GAP or (ratio is not None and ratio >= MIN_RATIO)):
                continue
            z = robust_z(gaps, g)
            if z < Z_MIN:
                continue
            hits = [t for t in markers.get(r, []) if abs(t - e["timestamp_ns"]) <= MARKER_NS]
            spikes.append((r, e["timestamp_ns"], g, ratio, z, hits))
    world = max([e.get("world_size") or 0 for e in events] + [len(ranks)])
    out = []
    for r, t, g, ratio, z, hits in spikes:
        sync = {o[0] for o in spikes if abs(o[1] - t) <= SYNC_NS} or {r}
        sr = min(1.0, (len(sync) - 1) / (world - 1)) if world > 1 else 0.0
        div = max(min(1.0, g / MIN_GAP), min(1.0, (ratio or 0) / MIN_RATIO))
        c = (0.34 if hits else -0.15) + 0.34 * sr + 0.16 * min(1.0, z / Z_MIN) + 0.16 * div
        if world <= 1 or len(sync) <= 1:
            c -= 0.15
        if ratio is None:
            c -= 0.05
        c = max(0.0, min(1.0, c))
        cls = "collective_confident" if c >= 0.8 else "collective_likely" if c >= 0.6 else "collective_suspect"
        if c >= 0.5:
            out.append((r, cls, round(c, 3), len(hits)))
    return out


def cmd_attribution(paths):
    events = []
    for p in paths:
        events += load(p)
    got = attribution(events)
    ranks = sorted({r for r, *_ in got})
    probs = []
    if ranks != list(range(len(paths))) or any(cls != "collective_confident" for _, cls, _, _ in got):
        probs.append("expected one collective_confident spike per rank 0..%d, got %s" % (len(paths) - 1, got))
    report("Stormlog's collective attribution (v0.2.9 rules): collective_confident on every rank, markers from "
           "the plugin's events only (%s)" % ", ".join("r%d %s %.3f, %d markers" % g for g in got), probs)


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "summary":
        cmd_summary(*args)
    elif cmd == "text":
        cmd_text(*args)
    elif cmd == "prom":
        cmd_prom(*args)
    elif cmd == "timeline":
        cmd_timeline(*args)
    elif cmd == "stormlog":
        cmd_stormlog(*args)
    elif cmd == "matrix":
        cmd_matrix(args)
    elif cmd == "attribution":
        cmd_attribution(args)
    else:
        print("unknown command %s" % cmd)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
