"""Reads the Stormlog files of a distributed run the way Stormlog's
per-rank analyses read them (REFERENCE.md, Stormlog section: schema v2,
v0.2.9's rules) and checks what tests/nccl/test_ranks.c's 4-rank job must show.
Our own code: no Stormlog in CI.

    stormlog_ranks.py --leader R --outside BYTES --burst BYTES [--devices N] \
        RANK_FILE... --host HOST_FILE...
    stormlog_ranks.py --selftest

The rules applied:
  * cross-rank first cause: "sample" events (event_type, any case) of the
    most common job_id, grouped by rank alone, sorted by time, aligned on
    each rank's first sample; a run of positive device_used_bytes deltas
    whose sum reaches max(64 MiB, 10% of the rank's largest
    device_used_bytes) is the rank's first spike; the earliest aligned
    spike leads, the second earliest is the cluster onset;
  * gap: device_used_bytes - allocator_reserved_bytes, over every event
    that has a device_total_bytes (Stormlog's gap analysis reads every
    event type);
  * collective markers: any event whose event_type, context or metadata
    string values hold a collective token, on the spike's own rank, within
    150 ms of the spike sample.
Prints one "ok - distributed: ..." / "not ok - distributed: ..." line per
check ("    # " details); exit status 1 if any failed."""
import json
import sys
from collections import Counter

MIB = 1 << 20
TOKENS = ("nccl", "collective", "communication", "all_reduce", "allreduce", "all_gather", "allgather",
          "reduce_scatter", "reducescatter", "broadcast", "barrier")
MARKER_WINDOW_NS = 150_000_000
failed = 0


def report(name, ok, *detail):
    global failed
    print("%sok - distributed: %s" % ("" if ok else "not ", name))
    if not ok:
        failed += 1
        for d in detail:
            for line in str(d).splitlines()[:20]:
                print("    # " + line)


def samples_by_rank(events):
    """Stormlog's cross-rank selection: samples of the most common job id, by rank."""
    samples = [e for e in events if str(e.get("event_type", "")).strip().casefold() == "sample"]
    jobs = Counter(e.get("job_id") for e in samples if e.get("job_id") is not None)
    if len(jobs) > 1:
        job = jobs.most_common(1)[0][0]
        samples = [e for e in samples if e.get("job_id") == job]
    ranks = {}
    for e in samples:
        ranks.setdefault(e["rank"], []).append(e)
    for r in ranks:
        ranks[r].sort(key=lambda e: (e["timestamp_ns"], e["pid"], e["host"]))
    return ranks


def first_spikes(ranks):
    """{rank: aligned time of its first spike} and the anchor's offsets."""
    anchor = ranks[min(ranks)][0]["timestamp_ns"]
    out = {}
    for r, s in ranks.items():
        offset = s[0]["timestamp_ns"] - anchor
        threshold = max(64 * MIB, int(0.10 * max(e["device_used_bytes"] for e in s)))
        run = 0
        for prev, cur in zip(s, s[1:]):
            delta = cur["device_used_bytes"] - prev["device_used_bytes"]
            run = run + delta if delta > 0 else 0
            if run >= threshold:
                out[r] = cur["timestamp_ns"] - offset
                break
    return out


def has_token(e):
    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for x in v.values():
                yield from strings(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                yield from strings(x)
    texts = [e.get("event_type") or "", e.get("context") or ""] + list(strings(e.get("metadata") or {}))
    for t in texts:
        low = t.casefold().replace("-", "_")
        if any(k in low or k.replace("_", "") in low.replace("_", "") for k in TOKENS):
            return True
    return False


def check(rank_files, host_files, leader, outside, burst, ndev):
    events = []
    per_file = {}
    for path in rank_files:
        with open(path) as f:
            doc = json.load(f)
        per_file[path] = doc
        events += doc
    ranks = samples_by_rank(events)
    report("%d ranks, 20 samples each" % len(rank_files),
           sorted(ranks) == list(range(len(rank_files))) and all(len(s) == 20 for s in ranks.values()),
           {r: len(s) for r, s in ranks.items()})

    # One series per rank: one device's samples, not host and device mixed.
    mixed = {r: sorted({e["device_id"] for e in s}) for r, s in ranks.items()}
    report("each rank's \"sample\" series is one (device_id 0, source cuda, %d device%s summed)" %
           (ndev, "s" if ndev > 1 else ""),
           all(v == [0] for v in mixed.values()) and
           all(e["metadata"].get("source") == "cuda" and e["metadata"].get("devices") == ndev
               for s in ranks.values() for e in s), mixed)
    if ndev > 1:
        def per_device(e, what):
            return sum(e["metadata"]["device_%d_%s_bytes" % (d, what)] for d in range(ndev))
        report("with %d devices: the sample is the sum of the per-device figures in its metadata" % ndev,
               all(per_device(e, "used") == e["device_used_bytes"] and
                   per_device(e, "total") == e["device_total_bytes"] and
                   per_device(e, "tracked") == e["allocator_reserved_bytes"] for s in ranks.values() for e in s))
    host_keys = ("host_rss_bytes", "host_anon_bytes", "host_heap_bytes", "host_tracked_host_bytes",
                 "host_tracked_pinned_bytes")
    report("host memory stays in every device sample's metadata (RSS known)",
           all(all(k in e["metadata"] for k in host_keys) and isinstance(e["metadata"]["host_rss_bytes"], int) and
               e["metadata"]["host_rss_bytes"] > 0 for s in ranks.values() for e in s))

    # The first cause: the leading rank's series jumps first.
    spikes = first_spikes(ranks)
    order = sorted(spikes.items(), key=lambda kv: kv[1])
    report("every rank has a first spike", sorted(spikes) == sorted(ranks), spikes)
    if len(order) >= 2:
        interval = sorted(b["timestamp_ns"] - a["timestamp_ns"] for a, b in zip(ranks[0], ranks[0][1:]))
        median = interval[len(interval) // 2]
        lead = order[1][1] - order[0][1]
        report("rank %d jumps first, alone, ahead of the cluster onset by at least a sample interval" % leader,
               order[0][0] == leader and lead >= median, "order (rank, aligned ns): %s" % order,
               "lead %d ns, median interval %d ns" % (lead, median))
        others = [t for r, t in order if r != leader]
        report("the other ranks jump together (the cluster onset)", len(set(others)) == 1, order)

    # Gap = used - reserved is the memory outside memobs.
    gaps = {r: [e["device_used_bytes"] - e["allocator_reserved_bytes"] for e in s] for r, s in ranks.items()}
    report("the gap (used - reserved) is the memory outside memobs: %d, and %d during the all-reduce" %
           (outside, outside + burst),
           all(g.count(outside + burst) == 1 and g.count(outside) == len(g) - 1 for g in gaps.values()), gaps)
    report("allocated == reserved == tracked bytes, used <= total, free + used == total",
           all(e["allocator_allocated_bytes"] == e["allocator_reserved_bytes"] == e["metadata"]["tracked_bytes"] and
               e["device_used_bytes"] <= e["device_total_bytes"] and
               e["device_used_bytes"] + e["device_free_bytes"] == e["device_total_bytes"]
               for s in ranks.values() for e in s))
    others = [e for e in events if str(e["event_type"]).casefold() != "sample"]
    report("events that are not samples carry no device_total_bytes (out of the gap analysis)",
           others and all(e["device_total_bytes"] is None for e in others),
           Counter(e["event_type"] for e in others if e["device_total_bytes"] is not None))

    # Markers: the all-reduce, on each rank, near its gap spike.
    for r, s in sorted(ranks.items()):
        spike = max(s, key=lambda e: e["device_used_bytes"] - e["allocator_reserved_bytes"])
        own = [e for e in events if e["rank"] == r and has_token(e) and
               abs(e["timestamp_ns"] - spike["timestamp_ns"]) <= MARKER_WINDOW_NS]
        kinds = sorted({e["event_type"] for e in own})
        report("rank %d: the gap spike's sample is inside \"decode_step/nccl all_reduce\" and region events mark it" % r,
               spike.get("context") == "decode_step/nccl all_reduce" and kinds == ["region", "sample"],
               "context %r, marker events %s" % (spike.get("context"), kinds))
    report("samples carry the open region in context",
           all(e["context"] in ("decode_step", "decode_step/nccl all_reduce") for s in ranks.values() for e in s),
           Counter(e["context"] for s in ranks.values() for e in s))

    # The host companion: the host series alone.
    hosts = []
    for path in host_files:
        with open(path) as f:
            hosts += json.load(f)
    hranks = samples_by_rank(hosts)
    report("the host companion files: one host series per rank (device_id -1, source host, 20 samples)",
           sorted(hranks) == sorted(ranks) and
           all(len(s) == 20 and all(e["device_id"] == -1 and e["metadata"]["source"] == "host" for e in s)
               for s in hranks.values()),
           {r: (len(s), sorted({e["device_id"] for e in s})) for r, s in hranks.items()})
    report("the host companion has no device events (peak, oom)",
           not [e for e in hosts if e["event_type"] in ("peak", "oom")])


def selftest():
    """The rules must catch what memobs wrote before: a host sample (used =
    RSS) beside each device sample puts every rank's first spike at its
    first host-to-device step."""
    def ev(rank, t, dev, used, reserved):
        return {"event_type": "sample", "timestamp_ns": t, "rank": rank, "device_id": dev, "job_id": "j",
                "device_used_bytes": used, "allocator_reserved_bytes": reserved, "pid": rank, "host": "h"}
    events = []
    for r in range(4):
        for i in range(20):
            t = 1000 + r * 3 + i * 100
            dev_used = (3 << 30) + ((4 << 30) if i >= (3 if r == 2 else 7) else 0)
            events.append(ev(r, t, -1, 500 * MIB, 400 * MIB))
            events.append(ev(r, t, 0, dev_used, dev_used - (1 << 30)))
    spikes = first_spikes(samples_by_rank(events))
    leader = min(spikes.items(), key=lambda kv: (kv[1], kv[0]))[0]
    ok = leader != 2 and len(set(spikes.values())) == 1
    print("%sok - distributed: selftest: mixed host and device samples hide the leading rank (every rank spikes at "
          "its first sample pair; leader read as rank %d)" % ("" if ok else "not ", leader))
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--selftest"]:
        return selftest()
    args = argv[1:]
    leader = int(args[args.index("--leader") + 1])
    outside = int(args[args.index("--outside") + 1])
    burst = int(args[args.index("--burst") + 1])
    ndev = int(args[args.index("--devices") + 1]) if "--devices" in args else 1
    h = args.index("--host")
    files = [a for a in args[:h] if not a.startswith("--") and not a.isdigit()]
    check(files, args[h + 1:], leader, outside, burst, ndev)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
