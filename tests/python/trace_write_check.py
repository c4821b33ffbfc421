"""Checks a trace written under a write limit by tests/outputs/test_trace_write.c.

    python3 trace_write_check.py SCENARIO TRACE.json STDOUT STDERR [SUITE]

STDOUT is what the program printed ("events N limit_ns L"), STDERR its
log. Per scenario (see tests/outputs/test_trace_write.c), the H2D copies in the
trace (bytes 1..N numbers them, oldest first) must be exactly the ones
expected, otherData must say how many were left out, and the log must hold
one warning when events were left out, none otherwise. Prints one
"ok - SUITE: ..." or "not ok - SUITE: ..." line per check; exits 1 if any
failed.
"""
import json
import sys

SC, PATH, OUT, ERR = sys.argv[1:5]
SUITE = sys.argv[5] if len(sys.argv) > 5 else "trace-write"
failed = 0


def report(name, ok, *detail):
    global failed
    print("%sok - %s: %s: %s" % ("" if ok else "not ", SUITE, SC, name))
    if not ok:
        failed += 1
        for d in detail:
            for line in str(d).splitlines()[:20]:
                print("    # " + line)


words = OUT.split()
n, limit = int(words[1]), int(words[3])
try:
    doc = json.load(open(PATH, encoding="utf-8"))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    report("the file parses as JSON", False, e)
    sys.exit(1)
report("the file parses as JSON", True)
other = doc["otherData"]
got = [e["args"]["bytes"] for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "copy"]
left = other.get("left_out")

# 2048 events/s measured at the second look, 17 s left: room for 24371
want = {
    "nolimit": list(range(1, n + 1)),
    "plan": list(range(1, 4097)) + list(range(n - 24371 + 1, n + 1)),
    "stop": [],
    "stall": list(range(1, 36865)),
}.get(SC)
if want is not None:
    report("the copies written are the expected ones", got == want,
           "got %d: %s ... %s" % (len(got), got[:3], got[-3:]), "want %d: %s ... %s" % (len(want), want[:3], want[-3:]))
else:  # real: the real clock, nothing exact but the accounting
    report("the copies written are the oldest ones, in order", got == list(range(1, len(got) + 1)), got[:5])
report("otherData: kept = in_trace + left_out, the limit",
       other["kept"] == n and other["in_trace"] + left == n and other["in_trace"] == len(got) and
       other["write_limit_s"] == limit / 1e9, {k: v for k, v in other.items() if k != "threads"})
if left:
    report("otherData: the times of the oldest and newest left out",
           0 < other["left_out_from_us"] <= other["left_out_to_us"], other)
else:
    report("otherData: no times when nothing was left out", "left_out_from_us" not in other, other)
lines = [l for l in ERR.splitlines() if l]
w = ("memobs: warning: memobs_write_timeline: the trace's write limit (MEMOBS_TIMELINE_WRITE_S=%.9g) left out "
     "%d of its %d events (older than the newest that fit, or all the rest once the limit passed); "
     "otherData.left_out says so" % (limit / 1e9, left, n))
report("one warning when events were left out, else none", lines == ([w] if left else []), lines, w)
sys.exit(1 if failed else 0)
