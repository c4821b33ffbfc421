"""Checks Stormlog telemetry files (schema v2, docs: REFERENCE.md section 1)
record by record. Usage: stormlog_check.py FILE... [--expect-device]
[--expect TYPE]...; --selftest feeds it broken records, each of which it
must reject. Prints one "    # " line per problem; exit status 1 if any."""
import json
import sys

REQUIRED = {
    "schema_version", "timestamp_ns", "event_type", "collector", "sampling_interval_ms", "pid", "host",
    "device_id", "allocator_allocated_bytes", "allocator_reserved_bytes", "device_used_bytes",
    "allocator_active_bytes", "allocator_inactive_bytes", "device_free_bytes", "device_total_bytes",
    "allocator_change_bytes", "context", "metadata",
}
OPTIONAL = {"job_id", "rank", "local_rank", "world_size"}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_event(e):
    """Problems of one event, as strings."""
    bad = []
    if not isinstance(e, dict):
        return ["event is not an object"]
    for k in sorted(REQUIRED - set(e)):
        bad.append("missing key %s" % k)
    for k in sorted(set(e) - REQUIRED - OPTIONAL):
        bad.append("unknown key %s (extras belong in metadata)" % k)

    def intkey(k, lo=None, nullable=False):
        if k not in e:
            return
        v = e[k]
        if v is None and nullable:
            return
        if not is_int(v):
            bad.append("%s is %r, not an integer" % (k, v))
        elif lo is not None and v < lo:
            bad.append("%s is %d, below %d" % (k, v, lo))

    if "schema_version" in e and (not is_int(e["schema_version"]) or e["schema_version"] != 2):
        bad.append("schema_version is %r, not 2" % (e["schema_version"],))
    intkey("timestamp_ns", 0)
    for k in ("event_type", "collector", "host"):
        if k in e and (not isinstance(e[k], str) or not e[k]):
            bad.append("%s is %r, not a non-empty string" % (k, e[k]))
    intkey("sampling_interval_ms", 0)
    intkey("pid", -1)
    intkey("device_id", -1)
    for k in ("allocator_allocated_bytes", "allocator_reserved_bytes", "device_used_bytes"):
        intkey(k, 0)
    for k in ("allocator_active_bytes", "allocator_inactive_bytes", "device_free_bytes", "device_total_bytes"):
        intkey(k, 0, nullable=True)
    intkey("allocator_change_bytes")
    if "context" in e and e["context"] is not None and not isinstance(e["context"], str):
        bad.append("context is %r, not a string or null" % (e["context"],))
    if "metadata" in e and not isinstance(e["metadata"], dict):
        bad.append("metadata is not an object")
    if "job_id" in e and e["job_id"] is not None and (not isinstance(e["job_id"], str) or not e["job_id"]):
        bad.append("job_id is %r, not a non-empty string or null" % (e["job_id"],))
    intkey("world_size", 1, nullable=True)
    intkey("rank", 0, nullable=True)
    intkey("local_rank", 0, nullable=True)
    ws = e.get("world_size")
    for k in ("rank", "local_rank"):
        if is_int(e.get(k)) and is_int(ws) and e[k] >= ws:
            bad.append("%s %d is not below world_size %d" % (k, e[k], ws))
    total, used, free = e.get("device_total_bytes"), e.get("device_used_bytes"), e.get("device_free_bytes")
    if is_int(total):
        if is_int(used) and used > total:
            bad.append("device_used_bytes %d exceeds device_total_bytes %d" % (used, total))
        if is_int(free) and free > total:
            bad.append("device_free_bytes %d exceeds device_total_bytes %d" % (free, total))
        if is_int(used) and is_int(free) and used + free > total:
            bad.append("used + free %d exceeds device_total_bytes %d" % (used + free, total))
    return bad


def check_doc(doc):
    """Problems of a whole file's parsed JSON, and its events."""
    if isinstance(doc, dict):
        if set(doc) != {"events"}:
            return ["top level object has keys %s, not only events" % sorted(doc)], []
        doc = doc["events"]
    if not isinstance(doc, list):
        return ["top level is neither an array nor {\"events\": [...]}"], []
    bad = []
    for i, e in enumerate(doc):
        bad += ["event %d: %s" % (i, b) for b in check_event(e)]
    return bad, doc


def check_text(text):
    try:
        doc = json.loads(text)
    except ValueError as err:
        return ["not JSON (JSON Lines and CSV are rejected): %s" % err], []
    return check_doc(doc)


GOOD = {
    "schema_version": 2, "timestamp_ns": 5, "event_type": "sample", "collector": "memobs",
    "sampling_interval_ms": 10, "pid": 42, "host": "h", "device_id": 0, "allocator_allocated_bytes": 1,
    "allocator_reserved_bytes": 2, "device_used_bytes": 3, "allocator_active_bytes": None,
    "allocator_inactive_bytes": None, "device_free_bytes": 4, "device_total_bytes": 7,
    "allocator_change_bytes": -1, "context": None, "metadata": {}, "job_id": None, "rank": 0,
    "local_rank": 0, "world_size": 1,
}


def selftest():
    broken = {
        "float integer": dict(GOOD, device_used_bytes=3.0),
        "bool as integer": dict(GOOD, pid=True),
        "schema 1": dict(GOOD, schema_version=1),
        "negative timestamp": dict(GOOD, timestamp_ns=-1),
        "empty event_type": dict(GOOD, event_type=""),
        "used above total": dict(GOOD, device_used_bytes=8),
        "used + free above total": dict(GOOD, device_free_bytes=5),
        "rank not below world_size": dict(GOOD, rank=1),
        "world_size 0": dict(GOOD, world_size=0, rank=None, local_rank=None),
        "empty job_id": dict(GOOD, job_id=""),
        "unknown key": dict(GOOD, extra=1),
        "context not a string": dict(GOOD, context=5),
        "metadata a list": dict(GOOD, metadata=[]),
        "pid below -1": dict(GOOD, pid=-2),
        "null allocated": dict(GOOD, allocator_allocated_bytes=None),
    }
    missing = dict(GOOD)
    del missing["device_id"]
    broken["missing device_id"] = missing
    fails = 0
    if check_text(json.dumps([GOOD]))[0]:
        print("    # the good record was rejected: %s" % check_text(json.dumps([GOOD]))[0])
        fails += 1
    for name, rec in sorted(broken.items()):
        if not check_text(json.dumps([rec]))[0]:
            print("    # accepted a broken record: %s" % name)
            fails += 1
    for name, text in (("JSON Lines", json.dumps(GOOD) + "\n" + json.dumps(GOOD)),
                       ("unknown top-level key", json.dumps({"events": [GOOD], "x": 1})),
                       ("top-level object", json.dumps(GOOD))):
        if not check_text(text)[0]:
            print("    # accepted a broken file: %s" % name)
            fails += 1
    return fails


def main(argv):
    if argv[1:] == ["--selftest"]:
        return 1 if selftest() else 0
    files = [a for a in argv[1:] if not a.startswith("--")]
    expect = [argv[i + 1] for i, a in enumerate(argv) if a == "--expect"]
    files = [f for f in files if f not in expect]
    fails = 0
    for path in files:
        with open(path, encoding="utf-8") as fh:
            bad, events = check_text(fh.read())
        for b in bad[:20]:
            print("    # %s: %s" % (path, b))
        fails += len(bad)
        types = [e.get("event_type") for e in events if isinstance(e, dict)]
        if "sample" not in types:
            print("    # %s: no sample event" % path)
            fails += 1
        for t in expect:
            if t not in types:
                print("    # %s: no %s event" % (path, t))
                fails += 1
        if "--expect-device" in argv and not any(e.get("device_id", -1) >= 0 and e.get("event_type") == "sample"
                                                  for e in events if isinstance(e, dict)):
            print("    # %s: no device sample" % path)
            fails += 1
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
