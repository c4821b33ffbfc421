"""Checks the Chrome trace of tests/core/test_churn.c's "trace" scenario.

    python3 churn_check.py TRACE.json STATS-LINE [SUITE]

The scenario: a long-lived thread records D2D copies of 7 bytes while
20000 short-lived threads (4 alive at a time) each record an H2D copy of
(its number) bytes, a "churn" marker and a D2H copy of (its number) bytes;
then 100 more short-lived threads one after another (numbers 20001 to
20100). STATS-LINE is what the program printed ("recorded R kept K capacity
C long L"). Prints one "ok - SUITE: ..." or "not ok - SUITE: ..." line per
check and exits 1 if any failed.
"""
import json
import sys

PATH, STATS = sys.argv[1], sys.argv[2].split()
SUITE = sys.argv[3] if len(sys.argv) > 3 else "churn"
st = {STATS[i]: int(STATS[i + 1]) for i in range(0, len(STATS) - 1, 2)}
failed = 0


def report(name, ok, *detail):
    global failed
    print("%sok - %s: trace: %s" % ("" if ok else "not ", SUITE, name))
    if not ok:
        failed += 1
        for d in detail:
            for line in str(d).splitlines()[:20]:
                print("    # " + line)


try:
    doc = json.load(open(PATH, encoding="utf-8"))
except Exception as e:  # noqa: BLE001 - any failure to parse is the finding
    report("the file parses as JSON", False, e)
    sys.exit(1)
ev, other = doc["traceEvents"], doc["otherData"]
copies = [e for e in ev if e["ph"] == "X" and e.get("cat") == "copy"]
marks = [e for e in ev if e["ph"] == "i" and e.get("cat") == "marker"]
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}

report("recorded = 3 per short thread + the long thread's", st["recorded"] == 3 * 20100 + st["long"],
       st)
report("at least 90% of the capacity kept, and the trace holds them all",
       st["kept"] * 10 >= st["capacity"] * 9 and other["kept"] == st["kept"] and other["in_trace"] == st["kept"]
       and len(copies) + len(marks) == st["kept"], st, other, (len(copies), len(marks)))
rows = other["threads"]
report("the per-thread rows add up to the totals",
       sum(r["kept"] for r in rows) == other["kept"] and sum(r["dropped"] for r in rows) == other["dropped"] and
       sum(r["recorded"] for r in rows) == other["recorded"], rows[:5])

# Merged by time: the copies and markers are written in time order.
ts = [e["ts"] for e in ev if (e["ph"] == "X" and e.get("cat") == "copy") or (e["ph"] == "i")]
report("copies and markers in time order", all(a <= b for a, b in zip(ts, ts[1:])))

# The newest are kept: the last 100 threads ran alone, after everything else.
h2d = {e["args"]["bytes"] for e in copies if e["name"].startswith("H2D")}
d2h = {e["args"]["bytes"] for e in copies if e["name"].startswith("D2H")}
newest = set(range(20001, 20101))
report("the 100 newest threads' copies all kept", newest <= h2d and newest <= d2h,
       sorted(newest - h2d)[:10], sorted(newest - d2h)[:10])
# Each thread's copies in order: its H2D before its D2H, when both are kept.
first = {}
for e in copies:
    if e["name"].startswith("H2D"):
        first[e["args"]["bytes"]] = e["ts"]
late = [e["args"]["bytes"] for e in copies if e["name"].startswith("D2H") and e["args"]["bytes"] in first and
        e["ts"] < first[e["args"]["bytes"]]]
report("each thread's H2D copy before its D2H copy", not late, late[:10])

# Per-thread tracks: every marker on a named regions track, one track per
# thread with markers kept (at most 256: the last stands for the rest).
untracked = {e["tid"] for e in marks if not names.get(e["tid"], "").startswith("regions, thread")}
report("every marker on a named per-thread track", not untracked, sorted(untracked)[:10])
tracks = {e["tid"] for e in marks}
report("one track per thread with markers kept", len(tracks) == min(len(marks), 256), (len(tracks), len(marks)))
sys.exit(1 if failed else 0)
