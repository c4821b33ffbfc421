"""The collectives and peers of the package memobs (tests/python/test_pymodule.sh
runs it with the built package on PYTHONPATH, in a process of its own):
the constants, named and rank peers recorded by phase (the thread's, a
name, True/False), timed transfers, communicators and collectives with
their bandwidths as nccl-tests defines them, the snapshots
(coll_get_stats, peer_get_stats, coll_get_info), get_summary()'s
"collectives" and "peers" equal to the JSON summary's, bad arguments
(the right exception, a clear message, nothing recorded), two recording
threads (exact totals), reset and recording off, memobs_host_api (the
table NCCL's profiler plugin finds: a dynamic symbol of the private build,
instance "python", its functions recording into the package's memobs), and
a full peer table last.

Prints one "ok - coll-py: NAME" / "not ok - coll-py: NAME" line per check
(details as "    # " lines); exits 1 if any failed."""
import ctypes
import json
import os
import sys
import tempfile
import threading
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

import memobs  # noqa: E402

tap = Tap("coll-py")
TMP = tempfile.mkdtemp(prefix="memobs_coll_py_")
PHASES = ("prefill", "decode", "unphased")


def short(x):
    """repr(x), cut to 600 characters."""
    r = repr(x)
    return r if len(r) <= 600 else r[:600] + "... (%d characters)" % len(r)


class Check:
    def __init__(self):
        self.details = []

    def eq(self, what, actual, expected):
        if actual != expected:
            self.details.append("%s: expected %s, got %s" % (what, short(expected), short(actual)))

    def near(self, what, actual, expected):
        if not isinstance(actual, float) or abs(actual - expected) > 1e-9 * max(1.0, abs(expected)):
            self.details.append("%s: expected %r, got %r" % (what, expected, actual))

    def raises(self, what, exc, needle, fn, *args, **kwargs):
        """fn(*args, **kwargs) raises exc whose message holds needle."""
        try:
            fn(*args, **kwargs)
        except exc as e:
            if needle not in str(e):
                self.details.append("%s: %s's message lacks %r: %s" % (what, exc.__name__, needle, e))
            return
        except Exception as e:
            self.details.append("%s: expected %s, got %s: %s" % (what, exc.__name__, type(e).__name__, e))
            return
        self.details.append("%s: expected %s, nothing was raised" % (what, exc.__name__))


def check(name):
    def run(fn):
        c = Check()
        try:
            fn(c)
        except Exception:
            c.details.append("raised:")
            c.details.extend(traceback.format_exc().rstrip().splitlines()[-12:])
        tap(name, not c.details, *c.details)
        sys.stdout.flush()
        return fn

    return run


def fresh():
    memobs.set_enabled(True)
    memobs.set_phase(None)
    memobs.reset()


def figures(phases):
    """A peer direction's {phase: {"bytes", "ops", "ns"}}: every phase, zeros but the given ones."""
    d = {p: {"bytes": 0, "ops": 0, "ns": 0} for p in PHASES}
    d.update(phases)
    return d


def peer_row(handle):
    rows = [r for r in memobs.peer_get_stats() if r["id"] == handle]
    return rows[0] if rows else None


def coll_rows():
    """coll_get_stats() keyed by (comm_name, kind_name, phase)."""
    return {(r["comm_name"], r["kind_name"], r["phase"]): r for r in memobs.coll_get_stats()}


def state():
    """What a refused call must leave unchanged."""
    return memobs.coll_get_stats(), memobs.peer_get_stats(), memobs.get_summary()["problems"]["bad_records"]


@check("constants: PEER_SEND 0, PEER_RECV 1, COLL_* as memobs.h's kinds, all in __all__")
def _(c):
    want = {"PEER_SEND": 0, "PEER_RECV": 1, "COLL_ALL_REDUCE": 0, "COLL_ALL_GATHER": 1, "COLL_REDUCE_SCATTER": 2,
            "COLL_BROADCAST": 3, "COLL_REDUCE": 4, "COLL_ALL_TO_ALL": 5, "COLL_GATHER": 6, "COLL_SCATTER": 7,
            "COLL_SEND": 8, "COLL_RECV": 9, "COLL_SEND_RECV": 10, "COLL_OTHER": 11}
    for n, v in want.items():
        c.eq(n, getattr(memobs, n, None), v)
        c.eq("%s in __all__" % n, n in memobs.__all__, True)
    labels = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "gather", "scatter",
              "send", "recv", "send_recv"]
    for k, label in enumerate(labels):
        c.eq("coll_kind_label(%d)" % k, memobs.coll_kind_label(k), label)
        c.eq("coll_kind_intern(%r)" % label, memobs.coll_kind_intern(label), k)
    for nccl, k in (("AllReduce", 0), ("AllGather", 1), ("ReduceScatter", 2), ("Broadcast", 3), ("Reduce", 4),
                    ("AlltoAll", 5), ("Gather", 6), ("Scatter", 7), ("Send", 8), ("Recv", 9), ("SendRecv", 10)):
        c.eq("coll_kind_intern(%r) (NCCL's name)" % nccl, memobs.coll_kind_intern(nccl), k)


@check("nothing recorded: no \"collectives\" nor \"peers\" in get_summary(), empty snapshots, coll_get_info() zero")
def _(c):
    fresh()
    s = memobs.get_summary()
    c.eq("\"collectives\" in get_summary()", "collectives" in s, False)
    c.eq("\"peers\" in get_summary()", "peers" in s, False)
    c.eq("coll_get_stats()", memobs.coll_get_stats(), [])
    c.eq("peer_get_stats()", memobs.peer_get_stats(), [])
    c.eq("coll_get_info()", memobs.coll_get_info(),
         {"source": "", "instance": "", "level": "", "api_version": 0, "events_dropped": 0, "bad_events": 0,
          "captured_calls": 0, "captured_replays": 0, "comms_dropped": 0, "kinds_dropped": 0, "peers_dropped": 0})


@check("record_peer_xfer: exact bytes and ops per direction and phase (the thread's, a name, True/False)")
def _(c):
    fresh()
    p = memobs.peer_intern("decode-3")
    c.eq("peer_intern again: the same handle", memobs.peer_intern("decode-3"), p)
    q = memobs.peer_intern("10.0.0.7:5600")
    c.eq("two names: two handles", q != p, True)
    memobs.set_phase("prefill")
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 1000)  # the thread's phase: prefill
    memobs.record_peer_xfer(p, "send", 24)  # a str direction
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 300, "decode")
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 5, False)  # decode
    memobs.set_phase("decode")
    memobs.record_peer_xfer(p, memobs.PEER_RECV, 7)  # decode
    memobs.record_peer_xfer(p, memobs.PEER_RECV, 70, True)  # prefill
    memobs.record_peer_xfer(peer=p, dir="recv", nbytes=2**40, phase="unphased")  # a terabyte, keywords
    memobs.set_phase(None)
    memobs.record_peer_xfer(p, memobs.PEER_RECV, 0)  # unphased; zero bytes is an op
    memobs.record_peer_xfer(q, memobs.PEER_SEND, 4096, "prefill")
    r = peer_row(p)
    c.eq("decode-3: name, comm, rank", r and (r["name"], r["comm"], r["rank"]), ("decode-3", None, None))
    c.eq("decode-3: send", r and r["send"], figures({"prefill": {"bytes": 1024, "ops": 2, "ns": 0},
                                                      "decode": {"bytes": 305, "ops": 2, "ns": 0}}))
    c.eq("decode-3: recv", r and r["recv"], figures({"prefill": {"bytes": 70, "ops": 1, "ns": 0},
                                                      "decode": {"bytes": 7, "ops": 1, "ns": 0},
                                                      "unphased": {"bytes": 2**40, "ops": 2, "ns": 0}}))
    r = peer_row(q)
    c.eq("10.0.0.7:5600: send", r and r["send"], figures({"prefill": {"bytes": 4096, "ops": 1, "ns": 0}}))
    c.eq("10.0.0.7:5600: recv", r and r["recv"], figures({}))
    c.eq("peer_get_stats(): two peers, id order", [x["id"] for x in memobs.peer_get_stats()], sorted([p, q]))
    c.eq("host-device transfers untouched", memobs.get_summary()["total"]["h2d_count"], 0)


@check("record_peer_xfer_timed: ns summed per direction and phase; phase None is the thread's")
def _(c):
    fresh()
    p = memobs.peer_intern("prefill-0")
    memobs.set_phase("decode")
    memobs.record_peer_xfer_timed(p, memobs.PEER_RECV, 1 << 20, None, 250000)
    memobs.record_peer_xfer_timed(p, memobs.PEER_RECV, 1 << 20, None, 150000)
    memobs.record_peer_xfer_timed(p, memobs.PEER_SEND, 64, "prefill", 0)  # untimed
    memobs.record_peer_xfer_timed(peer=p, dir=memobs.PEER_SEND, nbytes=36, phase=True, ns=1000)
    memobs.set_phase(None)
    r = peer_row(p)
    c.eq("recv", r and r["recv"], figures({"decode": {"bytes": 2 << 20, "ops": 2, "ns": 400000}}))
    c.eq("send", r and r["send"], figures({"prefill": {"bytes": 100, "ops": 2, "ns": 1000}}))


@check("peer_rank: a rank of a communicator as a peer, labelled \"<comm> r<rank>\"")
def _(c):
    fresh()
    tp = memobs.coll_register_comm("tp", 0xABC, 0, 4, 1)
    c.eq("coll_register_comm again (same id and rank): the same handle", memobs.coll_register_comm("tp", 0xABC, 0, 4),
         tp)
    r1 = memobs.peer_rank(tp, 1)
    c.eq("peer_rank again: the same handle", memobs.peer_rank(comm=tp, rank=1), r1)
    r3 = memobs.peer_rank(tp, 3)
    memobs.record_peer_xfer(r1, memobs.PEER_SEND, 6291456, "prefill")
    memobs.record_peer_xfer(r3, memobs.PEER_RECV, 6291456, "prefill")
    a, b = peer_row(r1), peer_row(r3)
    c.eq("r1: name, comm, rank", a and (a["name"], a["comm"], a["rank"]), ("tp r1", tp, 1))
    c.eq("r3: name, comm, rank", b and (b["name"], b["comm"], b["rank"]), ("tp r3", tp, 3))
    c.eq("r1 send prefill", a and a["send"]["prefill"], {"bytes": 6291456, "ops": 1, "ns": 0})
    c.eq("r3 recv prefill", b and b["recv"]["prefill"], {"bytes": 6291456, "ops": 1, "ns": 0})


@check("record_coll: ops, bytes, time, algbw and busbw per (communicator, kind, phase) as nccl-tests defines them")
def _(c):
    fresh()
    tp = memobs.coll_register_comm("tp", 0x7701, 2, 4, 1)
    noranks = memobs.coll_register_comm(None, 0x7702, 0, 0, 0)  # nranks unknown: no bus bandwidth
    for _ in range(3):  # 1,048,576 bf16, 2 ms each: S = bytes, busbw = S x 2(n-1)/n
        memobs.record_coll(tp, memobs.COLL_ALL_REDUCE, 2097152, "prefill", 2000000)
    memobs.set_phase("decode")
    for _ in range(5):  # 4096 fp32 per rank, 10 us: S = bytes x n, busbw = S x (n-1)/n
        memobs.record_coll(tp, "AllGather", 16384, ns=10000)
    memobs.record_coll(tp, memobs.COLL_ALL_REDUCE, 512)  # untimed, decode: counted, not in the bandwidth
    memobs.record_coll(tp, memobs.COLL_ALL_TO_ALL, 4096, None, 100000)  # S = bytes x n, factor (n-1)/n
    memobs.record_coll(tp, memobs.COLL_GATHER, 1000, False, 1000)  # no bus factor
    memobs.set_phase(None)
    memobs.record_coll(noranks, "all_reduce", 1000, "unphased", 1000)
    other = memobs.coll_kind_intern("AllGatherV")
    c.eq("coll_kind_intern(\"AllGatherV\") again: the same id", memobs.coll_kind_intern("AllGatherV"), other)
    c.eq("its label", memobs.coll_kind_label(other), "other:AllGatherV")
    memobs.record_coll(tp, other, 8, "decode", 0)
    rows = coll_rows()
    ar = rows.get(("tp", "all_reduce", "prefill"))
    c.eq("all_reduce prefill: comm fields", ar and (ar["comm"], ar["comm_id"], ar["rank"], ar["nranks"], ar["nnodes"],
                                                     ar["kind"]), (tp, 0x7701, 2, 4, 1, memobs.COLL_ALL_REDUCE))
    c.eq("all_reduce prefill: ops bytes timed_ops ns algo_bytes bus_bytes",
         ar and [ar[k] for k in ("ops", "bytes", "timed_ops", "ns", "algo_bytes", "bus_bytes")],
         [3, 6291456, 3, 6000000, 6291456, 9437184])
    if ar:
        c.near("all_reduce prefill algbw_gbs", ar["algbw_gbs"], 1.048576)
        c.near("all_reduce prefill busbw_gbs", ar["busbw_gbs"], 1.572864)
    ag = rows.get(("tp", "all_gather", "decode"))
    c.eq("all_gather decode (the thread's phase)",
         ag and [ag[k] for k in ("ops", "bytes", "timed_ops", "ns", "algo_bytes", "bus_bytes")],
         [5, 81920, 5, 50000, 327680, 245760])
    if ag:
        c.near("all_gather algbw_gbs", ag["algbw_gbs"], 6.5536)
        c.near("all_gather busbw_gbs", ag["busbw_gbs"], 4.9152)
    un = rows.get(("tp", "all_reduce", "decode"))
    c.eq("an untimed all_reduce: ops 1, bytes 512, nothing timed",
         un and [un[k] for k in ("ops", "bytes", "timed_ops", "ns", "algo_bytes", "bus_bytes", "algbw_gbs")],
         [1, 512, 0, 0, 0, 0, 0.0])
    a2a = rows.get(("tp", "all_to_all", "decode"))
    c.eq("all_to_all: S = bytes x 4, bus (n-1)/n", a2a and [a2a[k] for k in ("ops", "bytes", "algo_bytes", "bus_bytes")],
         [1, 4096, 16384, 12288])
    if a2a:
        c.near("all_to_all algbw_gbs", a2a["algbw_gbs"], 0.16384)
        c.near("all_to_all busbw_gbs", a2a["busbw_gbs"], 0.12288)
    g = rows.get(("tp", "gather", "decode"))
    c.eq("gather: no bus factor", g and [g[k] for k in ("bus_bytes", "busbw_gbs")], [0, 0.0])
    if g:
        c.near("gather algbw_gbs", g["algbw_gbs"], 1.0)
    nr = [r for r in memobs.coll_get_stats() if r["comm"] == noranks]
    c.eq("nranks 0: one row, ops 1, bus 0, busbw 0",
         [(r["nranks"], r["ops"], r["bus_bytes"], r["busbw_gbs"]) for r in nr], [(0, 1, 0, 0.0)])
    c.eq("a comm of no name is \"comm <id hex>\"", nr and nr[0]["comm_name"].startswith("comm "), True)
    o = rows.get(("tp", "other:AllGatherV", "decode"))
    c.eq("other:AllGatherV: ops 1, bytes 8", o and [o["ops"], o["bytes"], o["kind"]], [1, 8, other])
    c.eq("rows of tp", sorted(k for k in rows if k[0] == "tp"),
         sorted([("tp", "all_reduce", "prefill"), ("tp", "all_gather", "decode"), ("tp", "all_reduce", "decode"),
                 ("tp", "all_to_all", "decode"), ("tp", "gather", "decode"), ("tp", "other:AllGatherV", "decode")]))


def json_summary():
    path = os.path.join(TMP, "summary.json")
    memobs.write_summary(path, "json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def same(c, what, a, b):
    """a == b, floats within a relative 1e-6 (the JSON prints them rounded)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            c.details.append("%s: keys %r vs %r" % (what, sorted(a), sorted(b)))
            return
        for k in a:
            same(c, "%s.%s" % (what, k), a[k], b[k])
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            c.details.append("%s: %d items vs %d" % (what, len(a), len(b)))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            same(c, "%s[%d]" % (what, i), x, y)
    elif isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or \
                abs(a - b) > 1e-6 * max(1.0, abs(a), abs(b)):
            c.details.append("%s: %r vs %r" % (what, a, b))
    elif a != b:
        c.details.append("%s: %r vs %r" % (what, a, b))


@check("get_summary()'s \"collectives\" and \"peers\" are the JSON summary's")
def _(c):
    # the figures of the checks above stay (no reset since the collectives), plus a peer of each kind
    tp = memobs.coll_register_comm("tp", 0x7701, 2, 4, 1)
    memobs.record_peer_xfer(memobs.peer_rank(tp, 3), memobs.PEER_SEND, 1 << 20, "prefill")
    memobs.record_peer_xfer_timed(memobs.peer_intern("decode-7"), memobs.PEER_RECV, 4096, "decode", 1000)
    s, j = memobs.get_summary(), json_summary()
    for key in ("collectives", "peers"):
        c.eq("%r in get_summary()" % key, key in s, True)
        c.eq("%r in the JSON summary" % key, key in j, True)
        if key in s and key in j:
            same(c, key, s[key], j[key])
    coll = s.get("collectives", {})
    tps = [x for x in coll.get("comms", []) if x["id"] == 0x7701]
    c.eq("collectives: comm tp's fields", tps and {k: tps[0][k] for k in ("id", "rank", "nranks", "nnodes")},
         {"id": 0x7701, "rank": 2, "nranks": 4, "nnodes": 1})
    if tps:
        f = tps[0]["kinds"].get("all_reduce", {}).get("prefill", {})
        c.eq("collectives: tp all_reduce prefill ops and bytes", (f.get("ops"), f.get("bytes")), (3, 6291456))
    d7 = [x for x in s.get("peers", []) if x["name"] == "decode-7"]
    c.eq("peers: decode-7 recv (only the phases with operations)", d7 and d7[0]["recv"],
         {"decode": {"bytes": 4096, "ops": 1, "ns": 1000}})


@check("bad arguments: TypeError or ValueError with a clear message, nothing recorded")
def _(c):
    fresh()
    p = memobs.peer_intern("bad-args")
    tp = memobs.coll_register_comm("tp-bad", 0xBAD, 0, 2)
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 1, "prefill")
    memobs.record_coll(tp, memobs.COLL_ALL_REDUCE, 1, "prefill", 1)
    before = state()
    R = c.raises
    R("peer_intern(\"\")", ValueError, "empty", memobs.peer_intern, "")
    R("peer_intern(5)", TypeError, "str", memobs.peer_intern, 5)
    R("peer_intern(None)", TypeError, "str", memobs.peer_intern, None)
    R("peer_intern(\"a\\0b\")", ValueError, "NUL", memobs.peer_intern, "a\0b")
    R("record_peer_xfer(-1, ...)", ValueError, "peer_intern", memobs.record_peer_xfer, -1, 0, 1)
    R("record_peer_xfer(10**6, ...)", ValueError, "peer_intern", memobs.record_peer_xfer, 10**6, 0, 1)
    R("record_peer_xfer(\"bad-args\", ...)", TypeError, "handle", memobs.record_peer_xfer, "bad-args", 0, 1)
    R("record_peer_xfer(True, ...)", TypeError, "handle", memobs.record_peer_xfer, True, 0, 1)
    R("dir 2", ValueError, "dir", memobs.record_peer_xfer, p, 2, 1)
    R("dir \"sideways\"", ValueError, "\"send\", \"recv\"", memobs.record_peer_xfer, p, "sideways", 1)
    R("dir True", TypeError, "PEER_SEND", memobs.record_peer_xfer, p, True, 1)
    R("dir 0.0", TypeError, "PEER_SEND", memobs.record_peer_xfer, p, 0.0, 1)
    R("nbytes -1", ValueError, ">= 0", memobs.record_peer_xfer, p, 0, -1)
    R("nbytes 2**57", ValueError, "2**56", memobs.record_peer_xfer, p, 0, 2**57)
    R("nbytes 1.5", TypeError, "int", memobs.record_peer_xfer, p, 0, 1.5)
    R("nbytes \"1\"", TypeError, "int", memobs.record_peer_xfer, p, 0, "1")
    R("phase \"warmup\"", ValueError, "phase", memobs.record_peer_xfer, p, 0, 1, "warmup")
    R("phase 1", TypeError, "phase", memobs.record_peer_xfer, p, 0, 1, 1)
    R("record_peer_xfer(p, 0)", TypeError, "nbytes", memobs.record_peer_xfer, p, 0)
    R("record_peer_xfer(..., size=1)", TypeError, "size", memobs.record_peer_xfer, p, 0, size=1)
    R("record_peer_xfer: five arguments", TypeError, "at most 4", memobs.record_peer_xfer, p, 0, 1, None, 5)
    R("record_peer_xfer_timed without ns", TypeError, "ns", memobs.record_peer_xfer_timed, p, 0, 1, None)
    R("record_peer_xfer_timed ns -5", ValueError, ">= 0", memobs.record_peer_xfer_timed, p, 0, 1, None, -5)
    R("record_peer_xfer_timed ns 2**60", ValueError, "MEMOBS_MAX_NS", memobs.record_peer_xfer_timed, p, 0, 1, None,
      2**60)
    R("peer_rank(\"tp\", 0)", TypeError, "coll_register_comm", memobs.peer_rank, "tp", 0)
    R("peer_rank(tp, -1)", ValueError, "rank", memobs.peer_rank, tp, -1)
    R("peer_rank(99999, 0)", ValueError, "coll_register_comm", memobs.peer_rank, 99999, 0)
    R("coll_register_comm rank 2 of 2", ValueError, "below nranks", memobs.coll_register_comm, "x", 1, 2, 2)
    R("coll_register_comm rank -1", ValueError, "rank", memobs.coll_register_comm, "x", 1, -1, 2)
    R("coll_register_comm id -1", ValueError, ">= 0", memobs.coll_register_comm, "x", -1, 0, 2)
    R("coll_register_comm nranks -2", ValueError, "nranks", memobs.coll_register_comm, "x", 1, 0, -2)
    R("coll_register_comm name 7", TypeError, "str", memobs.coll_register_comm, 7, 1, 0, 2)
    R("coll_register_comm name \"\"", ValueError, "empty", memobs.coll_register_comm, "", 1, 0, 2)
    R("coll_register_comm without nranks", TypeError, "nranks", memobs.coll_register_comm, "x", 1, 0)
    R("record_coll comm -1", ValueError, "coll_register_comm", memobs.record_coll, -1, 0, 1)
    R("record_coll kind 999", ValueError, "coll_kind_intern", memobs.record_coll, tp, 999, 1)
    R("record_coll kind None", TypeError, "kind", memobs.record_coll, tp, None, 1)
    R("record_coll kind \"\"", ValueError, "empty", memobs.record_coll, tp, "", 1)
    R("record_coll nbytes -1", ValueError, ">= 0", memobs.record_coll, tp, 0, -1)
    R("record_coll ns 1.0", TypeError, "int", memobs.record_coll, tp, 0, 1, None, 1.0)
    R("record_coll phase \"Prefill\"", ValueError, "phase", memobs.record_coll, tp, 0, 1, "Prefill")
    R("coll_kind_intern(3)", TypeError, "str", memobs.coll_kind_intern, 3)
    R("coll_kind_label(-1)", ValueError, "kind", memobs.coll_kind_label, -1)
    c.eq("a refused call records nothing", state(), before)
    c.eq("coll_kind_label of an id not used yet (15)", memobs.coll_kind_label(15), None)


@check("two threads recording at once (peers and collectives, each its own phase): totals exact")
def _(c):
    fresh()
    p = memobs.peer_intern("threads")
    tp = memobs.coll_register_comm("tp-threads", 0x7E, 0, 2)
    n = 20000
    go = threading.Barrier(2)

    def work(phase, nbytes):
        memobs.set_phase(phase)
        go.wait()
        for i in range(n):
            memobs.record_peer_xfer(p, i & 1, nbytes)
            memobs.record_coll(tp, memobs.COLL_ALL_REDUCE, nbytes, None, 10)
        memobs.set_phase(None)

    ts = [threading.Thread(target=work, args=("prefill", 3)), threading.Thread(target=work, args=("decode", 5))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    r = peer_row(p)
    half = n // 2
    c.eq("send", r and r["send"], figures({"prefill": {"bytes": 3 * half, "ops": half, "ns": 0},
                                           "decode": {"bytes": 5 * half, "ops": half, "ns": 0}}))
    c.eq("recv", r and r["recv"], figures({"prefill": {"bytes": 3 * half, "ops": half, "ns": 0},
                                           "decode": {"bytes": 5 * half, "ops": half, "ns": 0}}))
    rows = coll_rows()
    for ph, b in (("prefill", 3), ("decode", 5)):
        x = rows.get(("tp-threads", "all_reduce", ph))
        c.eq("all_reduce %s ops bytes timed_ops ns" % ph, x and [x[k] for k in ("ops", "bytes", "timed_ops", "ns")],
             [n, b * n, n, 10 * n])


@check("reset() zeroes the figures, keeps the handles; recording off records nothing")
def _(c):
    p = memobs.peer_intern("threads")
    tp = memobs.coll_register_comm("tp-threads", 0x7E, 0, 2)
    memobs.reset()
    c.eq("coll_get_stats() after reset()", memobs.coll_get_stats(), [])
    c.eq("peer_get_stats() after reset()", memobs.peer_get_stats(), [])
    c.eq("the same handles after reset()", (memobs.peer_intern("threads"), memobs.coll_register_comm("tp-threads", 0x7E,
                                                                                                    0, 2)), (p, tp))
    memobs.set_enabled(False)
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 100, "decode")
    memobs.record_coll(tp, memobs.COLL_ALL_REDUCE, 100, "decode", 10)
    memobs.set_enabled(True)
    c.eq("coll_get_stats() after records made while off", memobs.coll_get_stats(), [])
    c.eq("peer_get_stats() after records made while off", memobs.peer_get_stats(), [])
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 100, "decode")
    c.eq("a record after recording is on again", peer_row(p) and peer_row(p)["send"]["decode"],
         {"bytes": 100, "ops": 1, "ns": 0})


class HostApi(ctypes.Structure):
    """memobs.h's memobs_host_api_t."""
    _fields_ = [("abi_key", ctypes.c_uint64), ("size", ctypes.c_uint32), ("instance", ctypes.c_char_p),
                ("get_enabled", ctypes.CFUNCTYPE(ctypes.c_int)),
                ("get_phase", ctypes.CFUNCTYPE(ctypes.c_int)),
                ("now_ns", ctypes.CFUNCTYPE(ctypes.c_uint64)),
                ("coll_register_comm", ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int,
                                                        ctypes.c_int, ctypes.c_int)),
                ("coll_kind_intern", ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p)),
                ("record_coll_ex", ctypes.c_void_p),
                ("peer_intern", ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p)),
                ("peer_rank", ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int)),
                ("record_peer_xfer_timed", ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int, ctypes.c_uint64,
                                                            ctypes.c_int, ctypes.c_uint64)),
                ("coll_set_source", ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                                     ctypes.c_int)),
                ("coll_note", ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_uint64)),
                ("get_identity", ctypes.c_void_p)]


@check("memobs_host_api: a dynamic symbol of the private build; instance \"python\"; its table records here")
def _(c):
    from memobs import _memobs as ext
    c.eq("instance()", memobs.instance(), "private")
    lib = ctypes.CDLL(ext.__file__)  # what the plugin does: dlopen(RTLD_NOLOAD) of a loaded object, dlsym
    fn = getattr(lib, "memobs_host_api", None)
    c.eq("dlsym(memobs_host_api) in memobs._memobs", fn is not None, True)
    if fn is None:
        return
    fn.restype = ctypes.POINTER(HostApi)
    t = fn().contents
    c.eq("abi_key is the module's _abi_key", t.abi_key, ext._abi_key)
    c.eq("size is at least memobs_host_api_t's", t.size >= ctypes.sizeof(HostApi), True)
    c.eq("instance", t.instance, b"python")
    fresh()
    memobs.set_phase("decode")
    c.eq("get_phase() through the table (decode = 2)", t.get_phase(), 2)
    c.eq("get_enabled() through the table", t.get_enabled(), 1)
    memobs.set_phase(None)
    comm = t.coll_register_comm(b"pp", 0x99, 1, 2, 1)
    c.eq("coll_register_comm through the table is the package's", memobs.coll_register_comm("pp", 0x99, 1, 2), comm)
    peer = t.peer_rank(comm, 0)
    t.record_peer_xfer_timed(peer, 1, 524288, 2, 1000000)
    r = peer_row(peer)
    c.eq("a transfer through the table, in peer_get_stats()", r and (r["name"], r["recv"]["decode"]),
         ("pp r0", {"bytes": 524288, "ops": 1, "ns": 1000000}))
    t.coll_set_source(b"nccl-profiler", b"python", b"coll", 5)
    t.coll_note(0, 3)  # events dropped
    info = memobs.coll_get_info()
    c.eq("coll_get_info() after coll_set_source and coll_note",
         {k: info.get(k) for k in ("source", "instance", "level", "api_version", "events_dropped")},
         {"source": "nccl-profiler", "instance": "python", "level": "coll", "api_version": 5, "events_dropped": 3})
    c.eq("get_summary()['collectives']['instance']", memobs.get_summary().get("collectives", {}).get("instance"),
         "python")


@check("a full peer table: RuntimeError naming MEMOBS_MAX_PEERS, peers_dropped counted, earlier handles still work")
def _(c):
    p = memobs.peer_intern("decode-3")
    err = None
    made = 0
    for i in range(400):
        try:
            memobs.peer_intern("many-%d" % i)
            made += 1
        except RuntimeError as e:
            err = str(e)
            break
    c.eq("a RuntimeError before 400 names", err is not None, True)
    c.eq("its message names MEMOBS_MAX_PEERS", err and "MEMOBS_MAX_PEERS" in err, True)
    c.eq("peers_dropped counted", memobs.coll_get_info()["peers_dropped"] >= 1, True)
    c.eq("a known name still gives its handle", memobs.peer_intern("decode-3"), p)
    memobs.record_peer_xfer(p, memobs.PEER_SEND, 9, "prefill")
    c.eq("and records", peer_row(p)["send"]["prefill"]["bytes"] >= 9, True)


sys.exit(tap.failed)
