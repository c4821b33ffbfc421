"""Checks a PyTorch memory snapshot written by memobs_write_torch_snapshot
against the rules PyTorch's memory viewer relies on (../shared/REFERENCE.md,
section "PyTorch memory snapshot") and against memobs' own block table.

usage: snapshot_check.py SNAPSHOT.pkl SIDE.json MODE LABEL [--torch]

SIDE.json is written by tests/tracker/test_snapshot.c (or by the Python module's
test): "allocations" (memobs_get_allocations: every kind), "history" (per
device: recorded, kept, dropped, capacity, recording), "expected" (the
events per device in order, or null when the run does not know them), and
optionally "late" (the history began after blocks were allocated: a
block's first events may be its free's) and "gaps" (it was stopped and
started again while blocks came and went: no per-block order). MODE adds
the checks of one scenario of test_snapshot.c (main, bound, threads, live,
racing, nohist, off, window, toggle, exit; anything else: the generic
rules only). --torch: also load it in an
interpreter with torch imported and run torch.cuda._memory_viz (PyTorch
1.13's offline tools: stats() asserts each segment's blocks sum to its
total_size; segments() and memory() walk every block).

Prints one "ok - snapshot: LABEL..." / "not ok - snapshot: LABEL..." line
per check (tap.py) and exits 1 if any failed."""
import io
import json
import os
import pickle
import pickletools
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

# The opcodes of the viewer's own unpickler (REFERENCE.md).
ALLOWED = {"PROTO", "FRAME", "STOP", "MARK", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "DICT", "LIST", "TUPLE",
           "TUPLE1", "TUPLE2", "TUPLE3", "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BININT", "BININT1",
           "BININT2", "LONG1", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE", "SHORT_BINUNICODE", "BINUNICODE",
           "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET"}
SEG_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
            "segment_type", "blocks"}
BLOCK_KEYS = {"size", "requested_size", "state", "frames"}
EVENT_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom", "snapshot"}
# What may follow what for one address (a block's life, round and round;
# each block is its own segment, so its segment comes and goes with it).
NEXT = {"segment_alloc": {"alloc"}, "alloc": {"free_requested"}, "free_requested": {"free_completed"},
        "free_completed": {"segment_free"}, "segment_free": {"segment_alloc"}}
SEGMENT_EVENTS = {"segment_alloc", "segment_free"}
DEVICE_KIND = 0


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def frames_problems(frames, where):
    """The frames shape: a list of {"filename": str, "line": int, "name": str}."""
    out = []
    if not isinstance(frames, list):
        return ["%s: frames is %r, not a list" % (where, type(frames).__name__)]
    for i, f in enumerate(frames):
        if not isinstance(f, dict) or set(f) != {"filename", "line", "name"}:
            out.append("%s: frame %d is %r" % (where, i, f))
        elif not (isinstance(f["filename"], str) and is_int(f["line"]) and isinstance(f["name"], str)):
            out.append("%s: frame %d has wrong types: %r" % (where, i, f))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    with_torch = "--torch" in sys.argv
    pkl, side_path, mode, label = args[0], args[1], args[2], args[3]
    tap = Tap("snapshot", label + ": ")
    data = open(pkl, "rb").read()
    side = json.load(open(side_path))

    if with_torch:
        check_torch(tap, data)
        return tap.failed

    # --- the bytes: opcodes, protocol, memo (pickletools.dis checks the memo and the stack)
    names, protos, bad = [], [], []
    try:
        for op, arg, pos in pickletools.genops(data):
            names.append(op.name)
            if op.name == "PROTO":
                protos.append(arg)
            if op.name not in ALLOWED:
                bad.append("%s at %d" % (op.name, pos))
            if op.name == "LONG1" and not -(1 << 63) <= arg < (1 << 63):
                bad.append("LONG1 of more than 8 bytes (the viewer's limit) at %d: %d" % (pos, arg))
        pickletools.dis(data, out=io.StringIO())
        dis_ok = None
    except Exception as e:  # noqa: BLE001
        dis_ok = repr(e)
    tap("pickletools reads it (memo and stack consistent)", dis_ok is None, dis_ok)
    tap("only the viewer's opcodes, LONG1 of 8 bytes at most (%d opcodes, %d kinds)" % (len(names), len(set(names))),
        not bad,
        "not allowed: %s" % ", ".join(bad[:20]))
    tap("protocol 2 to 4, declared first", protos[:1] == protos and len(protos) == 1 and 2 <= protos[0] <= 4
        and names[0] == "PROTO", "PROTO args %r" % protos)
    tap("one STOP, at the end", names.count("STOP") == 1 and names[-1] == "STOP")

    try:
        snap = pickle.loads(data)
        err = None
    except Exception as e:  # noqa: BLE001
        snap, err = None, repr(e)
    if not tap("pickle.loads reads it", err is None and isinstance(snap, dict), err or type(snap)):
        return 1
    tap("a dict with segments and device_traces", {"segments", "device_traces"} <= set(snap), sorted(snap))
    segs, traces = snap.get("segments", []), snap.get("device_traces", [])

    # --- segments
    probs = []
    for si, s in enumerate(segs):
        w = "segment %d" % si
        if not SEG_KEYS <= set(s):
            probs.append("%s: keys %r lack %r" % (w, sorted(s), sorted(SEG_KEYS - set(s))))
            continue
        if s["segment_type"] not in ("large", "small"):
            probs.append("%s: segment_type %r" % (w, s["segment_type"]))
        if not all(is_int(s[k]) for k in ("device", "address", "total_size", "allocated_size", "active_size",
                                          "requested_size", "stream")):
            probs.append("%s: a number is not an int: %r" % (w, s))
        probs += frames_problems(s.get("frames", []), w)
        addr, total, alloc, active, req = s["address"], 0, 0, 0, 0
        for bi, b in enumerate(s["blocks"]):
            wb = "%s block %d" % (w, bi)
            if not BLOCK_KEYS <= set(b):
                probs.append("%s: keys %r" % (wb, sorted(b)))
                continue
            if b["state"] not in ("active_allocated", "active_pending_free", "inactive"):
                probs.append("%s: state %r" % (wb, b["state"]))
            if "address" in b and b["address"] != addr:
                probs.append("%s: address %#x, not contiguous (%#x)" % (wb, b["address"], addr))
            if b["size"] < 0 or addr + b["size"] > s["address"] + s["total_size"]:
                probs.append("%s: [%#x, +%d) outside the segment" % (wb, addr, b["size"]))
            if b["requested_size"] > b["size"]:
                probs.append("%s: requested_size %d > size %d" % (wb, b["requested_size"], b["size"]))
            probs += frames_problems(b["frames"], wb)
            addr += b["size"]
            total += b["size"]
            if b["state"] == "active_allocated":
                alloc += b["size"]
            if b["state"].startswith("active"):
                active += b["size"]
                req += b["requested_size"]
        if total != s["total_size"]:
            probs.append("%s: blocks sum to %d, total_size %d" % (w, total, s["total_size"]))
        if (alloc, active, req) != (s["allocated_size"], s["active_size"], s["requested_size"]):
            probs.append("%s: allocated/active/requested %r, blocks say %r" % (
                w, (s["allocated_size"], s["active_size"], s["requested_size"]), (alloc, active, req)))
    tap("segments: %d, each block inside its segment, contiguous, sizes summing to total_size, "
        "allocated/active/requested sizes from the blocks, frames {filename, line, name}" % len(segs),
        not probs, *probs[:20])

    # --- against memobs' own block table: exactly the live device allocations
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731  (streams are int64, as PyTorch's)
    dev_allocs = sorted((a["device"], a["ptr"], a["bytes"], signed(a["stream"]), bool(a["pending"]))
                        for a in side["allocations"] if a["kind"] == DEVICE_KIND)
    from_segs = sorted((s["device"], s["address"], s["total_size"], s["stream"],
                        s["blocks"][0]["state"] == "active_pending_free") for s in segs if len(s["blocks"]) == 1)
    others = sum(1 for a in side["allocations"] if a["kind"] != DEVICE_KIND)
    tap("segments are exactly memobs_get_allocations' %d live device allocations (device, address, size, stream, "
        "pending; one block each), none of its %d host/pinned/managed ones" % (len(dev_allocs), others),
        dev_allocs == from_segs and len(from_segs) == len(segs),
        "only in the table: %r" % sorted(set(dev_allocs) - set(from_segs))[:10],
        "only in the snapshot: %r" % sorted(set(from_segs) - set(dev_allocs))[:10])

    # --- device_traces
    hist = side["history"]
    late, gaps = side.get("late"), side.get("gaps")
    used = {s["device"] for s in segs} | {d for d, h in enumerate(hist) if h["recorded"]}
    want_len = max(used) + 1 if used else 1
    tap("device_traces: one list per device from 0 to the highest used (%d)" % want_len,
        isinstance(traces, list) and len(traces) == want_len and all(isinstance(t, list) for t in traces),
        "got %d lists, used devices %r" % (len(traces), sorted(used)))
    probs = []
    for d, evs in enumerate(traces):
        last = {}
        prev_t = None
        dropped = hist[d]["dropped"] if d < len(hist) else 0
        for i, e in enumerate(evs):
            w = "device %d event %d" % (d, i)
            if not EVENT_KEYS <= set(e):
                probs.append("%s: keys %r" % (w, sorted(e)))
                continue
            if e["action"] not in ACTIONS:
                probs.append("%s: action %r" % (w, e["action"]))
            if not all(is_int(e[k]) for k in ("addr", "size", "stream", "time_us")):
                probs.append("%s: a number is not an int: %r" % (w, e))
            if "category" in e:
                probs.append("%s: a category (the viewer then wants an 'unknown' one): %r" % (w, e["category"]))
            if e["action"] == "segment_alloc" and not (
                    i + 1 < len(evs) and (evs[i + 1]["action"], evs[i + 1]["addr"], evs[i + 1]["size"])
                    == ("alloc", e["addr"], e["size"])):
                probs.append("%s: segment_alloc not right before its alloc" % w)
            if e["action"] == "free_completed" and not (
                    i + 1 < len(evs) and (evs[i + 1]["action"], evs[i + 1]["addr"], evs[i + 1]["size"])
                    == ("segment_free", e["addr"], e["size"])):
                probs.append("%s: free_completed not right before its segment_free" % w)
            probs += frames_problems(e["frames"], w)
            if prev_t is not None and e["time_us"] < prev_t:
                probs.append("%s: time_us %d before the previous event's %d" % (w, e["time_us"], prev_t))
            prev_t = e["time_us"]
            a, act = e["addr"], e["action"]
            if gaps:
                pass
            elif a in last:
                if act not in NEXT.get(last[a], ()):
                    probs.append("%s: %s after %s at %#x" % (w, act, last[a], a))
            elif act != "segment_alloc" and not dropped and not late:
                probs.append("%s: %s at %#x with no alloc before it (nothing was dropped)" % (w, act, a))
            last[a] = act
    tap("events: action, addr, size, stream, time_us, frames, no category; in time order; per address "
        "segment_alloc, alloc, free_requested, free_completed, segment_free, segment_alloc... (segment events "
        "right beside their alloc and free_completed; %d events)" % sum(len(t) for t in traces), not probs,
        *probs[:20])

    probs = []
    for d in range(len(traces) if not gaps else 0):
        probs += viewer_replay(snap, d)
    tap("the viewer's Allocator State History, replayed back from the snapshot (a port of MemoryViz.js's "
        "simulate_memory): every block inside a segment at every event, every free_requested on a block",
        not probs, *probs[:10])

    # the live blocks' last events agree with their state
    probs = []
    for s in segs:
        d = s["device"]
        if d >= len(traces) or d >= len(hist) or hist[d]["dropped"] or not hist[d]["capacity"]:
            continue
        mine = [e for e in traces[d] if e["addr"] == s["address"] and e["action"] not in SEGMENT_EVENTS]
        if gaps or (late and not mine) or snap.get("memobs", {}).get("history") == "off":
            continue  # allocated before the history began, or in a gap
        want = "free_requested" if s["blocks"][0]["state"] == "active_pending_free" else "alloc"
        if not mine or mine[-1]["action"] != want or mine[-1]["size"] != s["total_size"]:
            probs.append("segment %#x (%s): last event %r" % (s["address"], want, mine[-1:] or None))
    tap("each live block's newest event: its alloc (same size), or free_requested when pending", not probs,
        *probs[:10])

    # --- the history counts: ring bound, dropped and counted
    mo = snap.get("memobs", {})
    probs = []
    for d, h in enumerate(hist):
        n = sum(1 for e in traces[d] if e["action"] not in SEGMENT_EVENTS) if d < len(traces) else 0
        if h["kept"] != n:
            probs.append("device %d: %d events in the snapshot, memobs_get_torch_history kept %d" % (d, n, h["kept"]))
        if h["recorded"] != h["kept"] + h["dropped"] or h["kept"] > h["capacity"]:
            probs.append("device %d: %r" % (d, h))
        if d < len(traces):
            if mo.get("history_dropped", [None] * (d + 1))[d] != h["dropped"]:
                probs.append("device %d: snapshot's memobs.history_dropped %r, getter %d" % (
                    d, mo.get("history_dropped"), h["dropped"]))
            if mo.get("history_capacity", [None] * (d + 1))[d] != h["capacity"]:
                probs.append("device %d: snapshot's memobs.history_capacity %r, getter %d" % (
                    d, mo.get("history_capacity"), h["capacity"]))
    tap("history: kept = events in the snapshot <= capacity, recorded = kept + dropped, the snapshot's "
        "memobs.history_dropped/capacity = memobs_get_torch_history's", not probs, *probs[:10])

    if side.get("expected") is not None:
        probs = []
        for d in range(len(traces)):
            want = [(a, act) for dd, a, act in side["expected"] if dd == d]
            got = [(e["addr"], e["action"]) for e in traces[d] if e["action"] not in SEGMENT_EVENTS]
            dropped = hist[d]["dropped"] if d < len(hist) else 0
            if dropped:
                want = want[dropped:]
            if got != want:
                probs.append("device %d: got %d events, want %d; first difference at %r" % (
                    d, len(got), len(want), next((i for i, (x, y) in enumerate(zip(got, want)) if x != y),
                                                  min(len(got), len(want)))))
        tap("events per device are exactly the program's, in its order (the newest when some were dropped)",
            not probs, *probs)

    if mode == "main":
        check_main(tap, segs, traces)
    elif mode == "bound":
        h = hist[0]
        n = sum(1 for e in traces[0] if e["action"] not in SEGMENT_EVENTS)
        # 64: the oldest kept is an alloc; 65: a free's free_completed alone
        # (its free_requested, one record with it, dropped)
        cap = h["capacity"]
        first = [e["action"] for e in traces[0] if e["action"] not in SEGMENT_EVENTS][:1]
        tap("bound: MEMOBS_TORCH_EVENTS=%d keeps the newest %d of 301 events, %d dropped and counted%s" % (
                cap, cap, 301 - cap, ", the oldest a free_completed alone" if cap % 3 == 2 else ""),
            cap in (64, 65) and (n, h["recorded"], h["dropped"], mo.get("history_dropped", [None])[0])
            == (cap, 301, 301 - cap, 301 - cap) and traces[0][-1]["addr"] == 0x7f00f0000000
            and traces[0][-1]["action"] == "alloc" and first == (["free_completed"] if cap % 3 == 2 else ["alloc"]),
            "events %d, history %r, memobs %r, first %r" % (n, h, mo, first))
    elif mode == "nohist":
        tap("nohist: MEMOBS_TORCH_EVENTS=0: the segment, no events", len(segs) == 1 and traces == [[]]
            and hist[0]["capacity"] == 0 and hist[0]["recorded"] == 0, "segments %d, traces %r, %r" % (
                len(segs), traces, hist[0]))
    elif mode == "off":
        tap("off: the history off by default: the live block, empty device_traces, \"history\": \"off\" with "
            "how to turn it on, nothing recorded", len(segs) == 1 and traces == [[]] and mo.get("history") == "off"
            and "memobs_torch_history_start()" in mo.get("history_help", "") and hist[0]["capacity"] == 16384
            and hist[0]["recorded"] == 0 and not hist[0]["recording"],
            "segments %d, traces %r, memobs %r, %r" % (len(segs), traces, mo, hist[0]))
    elif mode == "window":
        n = [(e["action"], e["addr"]) for e in traces[0] if e["action"] not in SEGMENT_EVENTS]
        want = [("free_completed", 0x7f0000300000), ("free_requested", 0x7f0000100000),
                ("free_completed", 0x7f0000100000), ("alloc", 0x7f0000400000), ("free_requested", 0x7f0000400000),
                ("free_completed", 0x7f0000400000)]
        tap("window: the newest 6 of 8 events between start and stop (capacity 64 after 4), the block from before "
            "the start with its free only, nothing before or after; \"history\": \"stopped\", no help",
            n == want and traces[1:] == [] and mo.get("history") == "stopped" and "history_help" not in mo
            and (hist[0]["recorded"], hist[0]["dropped"], hist[0]["capacity"], hist[0]["recording"]) == (8, 2, 64, 0)
            and sorted(s["address"] for s in segs) == [0x7f0000200000, 0x7f0000500000],
            "events %r, segments %r, memobs %r, %r" % (n, [hex(s["address"]) for s in segs], mo, hist[0]))
    elif mode == "toggle":
        n = sum(1 for e in traces[0] if e["action"] not in SEGMENT_EVENTS) if traces else 0
        tap("toggle: 200 starts and stops while two threads tracked: %d events kept, some recorded, "
            "\"history\": \"stopped\"" % n, 0 < hist[0]["recorded"] and mo.get("history") == "stopped"
            and not hist[0]["recording"], "history %r, memobs %r" % (hist[0], mo))
    elif mode == "threads":
        n = sum(len(t) for t in traces)
        tap("threads: six threads on devices 0-3, %d events, nothing dropped" % n,
            len(traces) == 4 and all(traces) and sum(h["dropped"] for h in hist) == 0, [len(t) for t in traces])
    elif mode == "live":
        n = [sum(1 for e in t if e["action"] not in SEGMENT_EVENTS) for t in traces]
        tap("live: three threads' events, all still staged when the snapshot was written: 14 on device 0, 7 on "
            "device 1, nothing dropped", n == [14, 7] and sum(h["dropped"] for h in hist) == 0 and len(segs) == 3,
            "events per device %r, segments %d" % (n, len(segs)))
    elif mode == "racing":
        n = [sum(1 for e in t if e["action"] not in SEGMENT_EVENTS) for t in traces]
        tap("racing: after 20 snapshots written while two threads allocated and freed, every event of the "
            "2 x 2000 rounds: 12000 on device 0, nothing dropped", n == [12000] and hist[0]["dropped"] == 0,
            "events per device %r, history %r" % (n, hist[0]))
    elif mode == "exit":
        tap("exit: the block live at exit", len(segs) == 1 and segs[0]["address"] == 0x7f0000100000
            and segs[0]["blocks"][0]["frames"][0]["name"] == "at exit", segs)
    return tap.failed


def viewer_replay(snap, device):
    """MemoryViz.js's simulate_memory for one device, every step: from the
    snapshot's segments and active blocks, events undone newest first; the
    viewer then finds each block's segment (a block outside every segment
    is a TypeError there) and sets free_requested on a block it expects."""
    segs = {s["address"]: s["total_size"] for s in snap["segments"] if s["device"] == device}
    blocks = {}
    for s in snap["segments"]:
        if s["device"] != device:
            continue
        a = s["address"]
        for b in s["blocks"]:
            if b["state"] in ("active_allocated", "active_pending_free"):
                blocks[a] = b["size"]
            a += b["size"]
    # annotate_snapshot: a free_requested right before its free_completed is one "free"
    evs = []
    for e in snap["device_traces"][device]:
        if e["action"] == "free_completed" and evs and evs[-1]["action"] == "free_requested" \
                and evs[-1]["addr"] == e["addr"]:
            evs[-1] = dict(evs[-1], action="free")
            continue
        evs.append(e)
    probs = []

    def inside(a):
        return any(sa <= a < sa + sz or (sz == 0 and sa == a) for sa, sz in segs.items())

    for a in blocks:
        if not inside(a):
            probs.append("device %d: live block %#x outside every segment" % (device, a))
    for i in range(len(evs) - 1, -1, -1):
        e = evs[i]
        act, a = e["action"], e["addr"]
        if act in ("free", "free_completed"):
            blocks[a] = e["size"]
            if not inside(a):
                probs.append("device %d event %d (%s %#x): the block has no segment" % (device, i, act, a))
        elif act == "free_requested":
            if a not in blocks:
                probs.append("device %d event %d: free_requested of %#x, no such block" % (device, i, a))
        elif act == "alloc":
            blocks.pop(a, None)
        elif act == "segment_free":
            segs[a] = e["size"]
        elif act == "segment_alloc":
            if a not in segs:
                probs.append("device %d event %d: segment_alloc of %#x, no such segment" % (device, i, a))
            segs.pop(a, None)
            if any(a <= b < a + e["size"] for b in blocks):
                probs.append("device %d event %d: segment %#x removed under a block" % (device, i, a))
        if len(probs) > 10:
            break
    return probs


def seg_at(segs, addr):
    return next((s for s in segs if s["address"] == addr), None)


def check_main(tap, segs, traces):
    """The scenario of test_snapshot.c's main mode, value by value."""
    probs = []
    tagf = lambda t: {"filename": "memobs tag", "line": 0, "name": t}  # noqa: E731
    # a C stack: tag, then the caller of the tracking call first (innermost first)
    s = seg_at(segs, 0x7f0000100000)
    fr = s["frames"] if s else []
    if not (len(fr) >= 2 and fr[0] == tagf("kv_cache") and fr[1]["name"].startswith("snapshot_alloc_with_stack+0x")
            and fr[1]["line"] == 0 and fr[1]["filename"] and "main+0x" in " ".join(f["name"] for f in fr[2:])):
        probs.append("C stack of 0x7f0000100000: %r" % fr)
    if s and s["blocks"][0]["frames"] != fr:
        probs.append("block frames differ from the segment's")
    # no trace: no frames
    ev = [e for e in traces[0] if e["addr"] == 0x7f0000200000]
    if [e["frames"] for e in ev] != [[]] * 5:
        probs.append("untraced block's events: %r" % ev)
    # pending at the snapshot
    s = seg_at(segs, 0x7f0000300000)
    if not s or (s["blocks"][0]["state"], s["allocated_size"], s["active_size"], s["stream"]) != (
            "active_pending_free", 0, 4096, 0x22):
        probs.append("pending block: %r" % s)
    # device 2: reuse of a pending block
    s = seg_at(segs, 0x7f0000500000)
    if not s or (s["device"], s["total_size"], s["frames"]) != (2, 32768, [tagf("\u03bav_cache \u2713")]):
        probs.append("reused block on device 2: %r" % s)
    ev = traces[2] if len(traces) > 2 else []
    q, k = [tagf("q\"uote's \\ back")], [tagf("\u03bav_cache \u2713")]
    if [(e["action"], e["size"], e["frames"]) for e in ev] != [
            ("segment_alloc", 65536, q), ("alloc", 65536, q), ("free_requested", 65536, q),
            ("free_completed", 65536, q), ("segment_free", 65536, q), ("segment_alloc", 32768, k),
            ("alloc", 32768, k)]:
        probs.append("device 2 events: %r" % ev)
    if len(traces) != 3 or traces[1] != []:
        probs.append("device 1 (unused) is not an empty list: %r" % traces[1:2])
    # odd tags survive (a byte that is not UTF-8: U+FFFD each)
    for addr, want in ((0x7f0000600000, "bad\ufffd\ufffd"), (0x7f0000700000, "cut\ufffd\ufffd"),
                       (0x7f0000710000, "nl\nline")):
        s = seg_at(segs, addr)
        if not s or s["frames"] != [tagf(want)]:
            probs.append("tag at %#x: %r, want %r" % (addr, s and s["frames"], want))
    # the unmarked free left no event; the settled mark did
    acts = lambda a: [e["action"] for e in traces[0] if e["addr"] == a and e["action"] not in SEGMENT_EVENTS]  # noqa: E731
    for a in (0x7f0000800000, 0x7f0000810000):  # taken back from the thread's stage, then from the ring
        if acts(a) != ["alloc"] or seg_at(segs, a) is None:
            probs.append("unmarked at %#x: %r" % (a, acts(a)))
    if acts(0x7f0000900000) != ["alloc", "free_requested", "free_completed"]:
        probs.append("marked and settled: %r" % acts(0x7f0000900000))
    if acts(0x7f0000b00000) != ["alloc", "free_requested", "free_completed", "alloc"]:
        probs.append("missed free: %r" % acts(0x7f0000b00000))
    # the provider's frames, innermost first, after the tag
    s = seg_at(segs, 0x7f0000a00000)
    want = [tagf("py"), {"filename": "/src/app/inner.py", "line": 30, "name": "inner"},
            {"filename": "/src/app/mid.py", "line": 20, "name": "mid"},
            {"filename": "Fake Stack", "line": 2, "name": "... 2 frames ..."},
            {"filename": "/src/app/outer.py", "line": 10, "name": "outer"}]
    if not s or s["frames"] != want:
        probs.append("provider frames: %r" % (s and s["frames"]))
    s = seg_at(segs, 0x7f0000c00000)
    if not s or s["stream"] != -1 or s["blocks"][0].get("real_size") != 512:
        probs.append("stream -1, real_size: %r" % s)
    # beyond 32 bits
    s = seg_at(segs, 0x7f1000000000)
    if not s or (s["total_size"], s["stream"]) != (3 << 32, 0x7fffdeadbeef00):
        probs.append("12 GiB block: %r" % s)
    tap("main: C stack frames, untraced, pending, reuse on device 2, empty device 1, odd tags, unmarked and "
        "settled marks, a missed free, provider frames innermost first, 64-bit sizes", not probs, *probs)


def check_torch(tap, data):
    try:
        import torch
        import torch.cuda._memory_viz as mv
    except Exception as e:  # noqa: BLE001
        tap("torch: # SKIP torch not importable (%s)" % e, True)
        return
    try:
        snap = pickle.loads(data)
        st = mv.stats(snap["segments"])
        seg_lines = mv.segments(snap["segments"], format_flamegraph=lambda s: s).splitlines()
        mem_lines = mv.memory(snap["segments"], format_flamegraph=lambda s: s).splitlines()
        nblocks = sum(len(s["blocks"]) for s in snap["segments"])
        ok = (st["segments"] == len(snap["segments"]) and len(seg_lines) == nblocks and len(mem_lines) == nblocks
              and st["total_size"].value == sum(s["total_size"] for s in snap["segments"]))
        err = "stats %r, %d/%d lines for %d blocks" % (st, len(seg_lines), len(mem_lines), nblocks)
    except Exception as e:  # noqa: BLE001
        ok, err = False, repr(e)
    tap("torch %s: pickle.load with torch imported; torch.cuda._memory_viz stats/segments/memory read every "
        "segment and block" % torch.__version__, ok, err)


if __name__ == "__main__":
    sys.exit(main())
