"""tests/python/test_requests_py.sh: attribution to requests from Python
(memobs.request, request_enter/leave, request_xfer, request_xfer_split,
request_tenant, request_info, request_top, request_id, get_summary()'s
"attributed").

requests_check.py private LINES: the package's private memobs, with
MEMOBS_REQUESTS=LINES (a fresh file) in the environment. Each check records
a known traffic and compares request_info(), the summary and the request
lines the process wrote with a model kept here: ledgers per request, the
split's parts by memobs' rounding rule, str ids by FNV-1a 64, tenants, the
top lists, bad arguments (the right exception, nothing recorded), and 8
threads binding their own requests beside unbound records: attributed +
unattributed = total per direction and phase, every finished ledger equal
to its thread's model, their sum the attributed figures, no orphans.

requests_check.py attached DIR LINES: under LD_PRELOAD=libmemobs_preload.so
(the package attached to the library's memobs); DIR holds libuser.so
(tests/preload/user.c: cudaMalloc, an H2D cudaMemcpy, cudaFree through the
runtime double): the copy the library observes on a bound thread is the
request's, so is its allocation; the program's own records stay manual,
attributed to no request, but for the storage directions.

Prints one "ok - requests-py: NAME" / "not ok - ..." line per check, with
"    # " detail lines; exits 1 if any failed."""
import ctypes
import json
import os
import random
import sys
import threading
import traceback

import memobs

SUITE = "requests-py"
FAILED = 0
DIRS = ["h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"]
PHASES = ["prefill", "decode", "unphased"]
MASK = (1 << 64) - 1


class Check:
    def __init__(self):
        self.details = []

    def eq(self, what, actual, expected):
        if actual != expected:
            self.details.append("%s: expected %r, got %r" % (what, expected, actual))

    def true(self, what, cond, shown=None):
        if not cond:
            self.details.append("%s%s" % (what, "" if shown is None else ": %s" % (shown,)))

    def raises(self, what, exc, fn, *args, **kwargs):
        """fn(*args, **kwargs) raises exc; its message names the function."""
        try:
            fn(*args, **kwargs)
        except exc as e:
            if fn.__name__ not in str(e) and not isinstance(e, UnicodeError):
                self.details.append("%s: the message does not name %s: %s" % (what, fn.__name__, e))
            return str(e)
        except Exception as e:  # noqa: BLE001  (the wrong exception)
            self.details.append("%s: expected %s, got %s: %s" % (what, exc.__name__, type(e).__name__, e))
            return None
        self.details.append("%s: expected %s, nothing was raised" % (what, exc.__name__))
        return None


def check(name):
    def run(fn):
        global FAILED
        c = Check()
        try:
            fn(c)
        except Exception:  # noqa: BLE001
            c.details.append("raised:")
            c.details.extend(traceback.format_exc().rstrip().splitlines()[-12:])
        print("%s - %s: %s" % ("not ok" if c.details else "ok", SUITE, name))
        for d in c.details:
            for line in str(d).splitlines() or [""]:
                print("    # " + line)
        FAILED += bool(c.details)
        sys.stdout.flush()
        return fn

    return run


def fnv1a64(s):
    """The model of request_id(str): FNV-1a 64 of the UTF-8 bytes."""
    h = 0xCBF29CE484222325
    for b in s.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def split_model(nbytes, shares, n=None):
    """memobs' parts: floor(b * C_i / S) - floor(b * C_(i-1) / S); equal shares (n of them) for None or all 0."""
    n = len(shares) if shares is not None else n
    if shares is None or not any(shares):
        shares = [1] * n
    total, cum, prev, parts = sum(shares), 0, 0, []
    for s in shares:
        cum += s
        p = nbytes * cum // total - prev
        prev += p
        parts.append(p)
    return parts


def zero_ledger():
    """{phase: {dir: [bytes, ops]}}"""
    return {p: {d: [0, 0] for d in DIRS} for p in PHASES}


def ledger_of(info):
    """request_info()'s xfer as the model's shape."""
    return {p: {d: [info["xfer"][p][d + "_bytes"], info["xfer"][p][d + "_count"]] for d in DIRS} for p in PHASES}


def ledger_of_line(line):
    """A request line's xfer as the model's shape (its per-phase [bytes, ops])."""
    return {p: {d: list(line["xfer"][d][p]) for d in DIRS} for p in PHASES}


def add(led, phase, d, nbytes, ops=1):
    led[phase][d][0] += nbytes
    led[phase][d][1] += ops


def summary_dirs(dirs_dict):
    return {d: [dirs_dict[d + "_bytes"], dirs_dict[d + "_count"]] for d in DIRS}


def fresh():
    memobs.set_enabled(True)
    memobs.set_phase(None)
    memobs.reset()


def read_lines(path):
    """The request lines, each parsed; a line that is not JSON fails the caller's compare."""
    out = []
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for raw in f:
            out.append(json.loads(raw))
    return out


def line_matches(c, what, line, info):
    """A finished request's line against its last request_info() (taken just before its end)."""
    c.eq(what + ": id", line["id"], info["id"])
    c.eq(what + ": tenant", line["tenant"], info["tenant"])
    c.eq(what + ": state", line["state"], "completed" if info["tokens"] else "aborted")
    c.eq(what + ": xfer per phase", ledger_of_line(line), ledger_of(info))
    for d in DIRS:
        c.eq(what + ": %s bytes (all phases)" % d, line["xfer"][d]["bytes"], info["xfer"]["total"][d + "_bytes"])
        c.eq(what + ": %s ops (all phases)" % d, line["xfer"][d]["ops"], info["xfer"]["total"][d + "_count"])
        c.eq(what + ": %s engine_ns" % d, line["xfer"][d]["engine_ns"], info["engine_ns"][d])
        c.eq(what + ": %s device_ns" % d, line["xfer"][d]["device_ns"], info["device_ns"][d])
    for k in ("tokens", "ttft_ns", "tpot_ns", "wait_ns", "region_ns", "peak_bytes"):
        c.eq(what + ": " + k, line[k], info[k])
    c.eq(what + ": held_bytes", line["held_bytes"], info["current_bytes"])
    c.eq(what + ": pid", line["pid"], os.getpid())


# ---------------------------------------------------------------------------
# The private memobs


def private(lines_path):
    @check("names: request, request_enter/leave/current, request_xfer, request_xfer_split, request_tenant, "
           "request_info, request_top, request_id exported; request is a type")
    def _(c):
        for n in ("request", "request_enter", "request_leave", "request_current", "request_xfer",
                  "request_xfer_split", "request_tenant", "request_info", "request_top", "request_id",
                  "request_begin", "request_token", "request_end"):
            c.true(n + " in __all__", n in memobs.__all__)
            c.true("memobs.%s is the extension's" % n, getattr(memobs, n, None) is getattr(memobs._ext, n, 0))
        c.true("memobs.request is a class", isinstance(memobs.request, type))
        c.eq("instance()", memobs.instance(), "private")

    @check("request_id: an int is itself (0, 2**64-1); a str is FNV-1a 64 of its UTF-8 bytes (FNV's vectors "
           "'a' 0xaf63dc4c8601ec8c, 'foobar' 0x85944171f73967e8; non-ASCII against the model); bad ids raise")
    def _(c):
        c.eq("request_id(0)", memobs.request_id(0), 0)
        c.eq("request_id(2**64-1)", memobs.request_id(2**64 - 1), 2**64 - 1)
        c.eq("request_id('a')", memobs.request_id("a"), 0xAF63DC4C8601EC8C)
        c.eq("request_id('foobar')", memobs.request_id("foobar"), 0x85944171F73967E8)
        for s in ("cmpl-3f9a2c", "req-\u00e9\u4e2d\U0001f600", "x" * 1000):
            c.eq("request_id(%r)" % s[:20], memobs.request_id(s), fnv1a64(s))
        msg = c.raises("request_id(-1)", ValueError, memobs.request_id, -1)
        c.true("-1: says >= 0", msg is None or ">= 0" in msg, msg)
        msg = c.raises("request_id(2**64)", ValueError, memobs.request_id, 2**64)
        c.true("2**64: says above 2**64-1", msg is None or "above 2**64-1" in msg, msg)
        c.raises("request_id('')", ValueError, memobs.request_id, "")
        c.raises("request_id('\\udcff') (a lone surrogate)", ValueError, memobs.request_id, "\udcff")
        c.raises("request_id(1.5)", TypeError, memobs.request_id, 1.5)
        c.raises("request_id(True)", TypeError, memobs.request_id, True)
        c.raises("request_id(None)", TypeError, memobs.request_id, None)
        c.raises("request_id(b'a')", TypeError, memobs.request_id, b"a")
        for fn in (memobs.request_begin, memobs.request_token, memobs.request_end, memobs.request_enter,
                   memobs.request_info):
            c.raises(fn.__name__ + "(-1)", ValueError, fn, -1)
            c.raises(fn.__name__ + "(1.5)", TypeError, fn, 1.5)
        c.eq("request_current() after the bad calls", memobs.request_current(), None)

    @check("a ledger per request: request_enter/leave bind the thread; record_h2d/d2h/d2d/xfer in it go to "
           "the request by phase and direction, records outside to none; the summary's attributed part")
    def _(c):
        fresh()
        a, b = 101, 102
        memobs.request_begin(a)
        memobs.request_begin(b)
        memobs.record_h2d(5, True)  # unbound
        memobs.request_enter(a)
        c.eq("request_current() bound", memobs.request_current(), a)
        memobs.record_h2d(1000, True)
        memobs.record_d2h(24, False)
        memobs.set_phase("decode")
        memobs.record_xfer("s2h", 4096)  # the thread's phase
        memobs.record_xfer_ns("h2s", 512, "prefill", 7000)  # engine-timed: the ledger's engine_ns
        memobs.set_phase(None)
        memobs.request_leave()
        c.eq("request_current() after leave", memobs.request_current(), None)
        memobs.request_enter(b)
        memobs.record_d2d(77, None)
        memobs.request_leave()
        memobs.record_d2h(9, False)  # unbound
        la, lb = zero_ledger(), zero_ledger()
        add(la, "prefill", "h2d", 1000)
        add(la, "decode", "d2h", 24)
        add(la, "decode", "s2h", 4096)
        add(la, "prefill", "h2s", 512)
        add(lb, "unphased", "d2d", 77)
        ia, ib = memobs.request_info(a), memobs.request_info(b)
        c.eq("request_info(a) ledger", ledger_of(ia), la)
        c.eq("request_info(b) ledger", ledger_of(ib), lb)
        c.eq("a: bytes", ia["bytes"], 1000 + 24 + 4096 + 512)
        c.eq("a: engine_ns", ia["engine_ns"], dict({d: 0 for d in DIRS}, h2s=7000))
        c.eq("a: wait_ns", ia["wait_ns"], 7000)
        c.eq("a: state, tenant, end_ns", (ia["state"], ia["tenant"], ia["end_ns"]), ("in_flight", None, 0))
        c.eq("a: id", ia["id"], a)
        c.eq("a: xfer total h2d", (ia["xfer"]["total"]["h2d_bytes"], ia["xfer"]["total"]["h2d_count"]), (1000, 1))
        c.eq("keys, in memobs_request_info_t's order", list(ia),
             ["id", "tenant", "state", "begin_ns", "end_ns", "xfer", "bytes", "engine_ns", "device_ns", "wait_ns",
              "region_ns", "tokens", "ttft_ns", "tpot_ns", "e2e_ns", "current_bytes", "peak_bytes"])
        s = memobs.get_summary()
        att = s["attributed"]
        c.eq("attributed keys", list(att),
             ["total", "prefill", "decode", "unphased", "orphan_bytes", "bind_misuse", "tenant_misuse"])
        for p in PHASES:
            want = {d: [la[p][d][0] + lb[p][d][0], la[p][d][1] + lb[p][d][1]] for d in DIRS}
            c.eq("attributed[%s]" % p, summary_dirs(att[p]), want)
        c.eq("attributed total h2d, d2h, d2d", [att["total"][k] for k in ("h2d_bytes", "d2h_bytes", "d2d_bytes")],
             [1000, 24, 77])
        unatt = {p: {d: s["phases"][p][d + "_bytes"] - att[p][d + "_bytes"] for d in DIRS if
                     s["phases"][p][d + "_bytes"] - att[p][d + "_bytes"]} for p in PHASES}
        c.eq("unattributed = total - attributed: the two unbound records", unatt,
             {"prefill": {"h2d": 5}, "decode": {"d2h": 9}, "unphased": {}})
        c.eq("orphan_bytes, bind_misuse, tenant_misuse", (att["orphan_bytes"], att["bind_misuse"],
                                                           att["tenant_misuse"]), (0, 0, 0))
        memobs.request_end(a)
        memobs.request_end(b)

    @check("memobs.request(id): `with` binds and leaves, nested (inner gets the records), the same object "
           "twice, an exception propagates and the binding ends; a leave with no enter is counted, not raised")
    def _(c):
        fresh()
        a, b = 201, 202
        memobs.request_begin(a)
        memobs.request_begin(b)
        ra = memobs.request(a)
        c.eq("repr", repr(ra), "memobs.request(201)")
        c.eq(".id", ra.id, a)
        with ra as got:
            c.true("__enter__ returns the object", got is ra)
            c.eq("bound to a", memobs.request_current(), a)
            memobs.record_h2d(100, True)
            with memobs.request(b):
                c.eq("bound to b (inner)", memobs.request_current(), b)
                memobs.record_h2d(10, True)
                with ra:  # the same object again, nested
                    c.eq("bound to a (innermost)", memobs.request_current(), a)
                    memobs.record_d2h(3, False)
                c.eq("back to b", memobs.request_current(), b)
                memobs.record_h2d(20, True)
            c.eq("back to a", memobs.request_current(), a)
            memobs.record_h2d(1, True)
        c.eq("unbound after the with", memobs.request_current(), None)
        try:
            with memobs.request(b):
                memobs.record_d2d(55, None)
                raise KeyError("body")
        except KeyError as e:
            c.eq("the body's exception propagates", e.args, ("body",))
        else:
            c.true("the body's exception propagates", False, "nothing raised")
        c.eq("unbound after the raising body", memobs.request_current(), None)
        c.eq("a: h2d prefill, d2h decode", (memobs.request_info(a)["xfer"]["prefill"]["h2d_bytes"],
                                            memobs.request_info(a)["xfer"]["decode"]["d2h_bytes"]), (101, 3))
        ib = memobs.request_info(b)
        c.eq("b: h2d prefill (10 + 20), d2d unphased (55, the raising body's)",
             (ib["xfer"]["prefill"]["h2d_bytes"], ib["xfer"]["prefill"]["h2d_count"],
              ib["xfer"]["unphased"]["d2d_bytes"]), (30, 2, 55))
        c.eq("bind_misuse 0", memobs.get_summary()["attributed"]["bind_misuse"], 0)
        memobs.request_leave()  # nothing entered: counted
        c.eq("a leave with no enter: bind_misuse 1", memobs.get_summary()["attributed"]["bind_misuse"], 1)
        c.raises("request() with no id", TypeError, memobs.request)
        c.raises("request(-1)", ValueError, memobs.request, -1)
        c.raises("request(2**64)", ValueError, memobs.request, 2**64)
        c.raises("request(1.5)", TypeError, memobs.request, 1.5)
        c.eq("request(id=7).id", memobs.request(id=7).id, 7)
        memobs.request_end(a)
        memobs.request_end(b)

    @check("bindings belong to a thread: two threads bound to their own requests at once, the main thread "
           "unbound; request_xfer from a bound thread goes to its id, not the binding's, with ns in engine_ns")
    def _(c):
        fresh()
        ids = [301, 302]
        for i in ids:
            memobs.request_begin(i)
        go = threading.Barrier(3)
        seen = {}

        def work(i, n):
            with memobs.request(i):
                go.wait()  # both bound at once
                seen[i] = memobs.request_current()
                memobs.record_h2d(n, False)
                memobs.request_xfer(303, "h2s", 8192, "decode", ns=5000)  # for 303, not the binding
                go.wait()

        ts = [threading.Thread(target=work, args=(i, 1000 + k)) for k, i in enumerate(ids)]
        memobs.request_begin(303)
        for t in ts:
            t.start()
        go.wait()
        c.eq("the main thread unbound meanwhile", memobs.request_current(), None)
        go.wait()
        for t in ts:
            t.join()
        c.eq("each thread saw its own binding", seen, {301: 301, 302: 302})
        c.eq("301: its h2d only", memobs.request_info(301)["bytes"], 1000)
        c.eq("302: its h2d only", memobs.request_info(302)["bytes"], 1001)
        i3 = memobs.request_info(303)
        c.eq("303: two h2s in decode", (i3["xfer"]["decode"]["h2s_bytes"], i3["xfer"]["decode"]["h2s_count"]),
             (16384, 2))
        c.eq("303: engine_ns h2s and wait_ns", (i3["engine_ns"]["h2s"], i3["wait_ns"]), (10000, 10000))
        c.eq("timed decode h2s: the two, 10000 ns", memobs.get_summary()["timed"]["decode"]["h2s"],
             {"bytes": 16384, "count": 2, "ns": 10000})
        for i in ids + [303]:
            memobs.request_end(i)

    @check("request_xfer: phase None is the thread's, True prefill, a name; bad arguments raise and record "
           "nothing")
    def _(c):
        fresh()
        memobs.request_begin(401)
        memobs.set_phase("decode")
        memobs.request_xfer(401, "d2h", 10)
        memobs.request_xfer(401, memobs.DIR_D2H, 20, True)
        memobs.request_xfer(id=401, dir="d2h", nbytes=40, phase="unphased", ns=0)
        memobs.set_phase(None)
        i = memobs.request_info(401)
        c.eq("d2h by phase", [i["xfer"][p]["d2h_bytes"] for p in PHASES], [20, 10, 40])
        before = memobs.get_summary()
        cases = [
            ("request_xfer(-1, ...)", ValueError, (-1, "h2d", 1), {}),
            ("request_xfer(401, 'x2y', 1)", ValueError, (401, "x2y", 1), {}),
            ("request_xfer(401, 7, 1)", ValueError, (401, 7, 1), {}),
            ("request_xfer(401, 'h2d', -1)", ValueError, (401, "h2d", -1), {}),
            ("request_xfer(401, 'h2d', 2**56 + 1)", ValueError, (401, "h2d", 2**56 + 1), {}),
            ("request_xfer(401, 'h2d', 1, 'warmup')", ValueError, (401, "h2d", 1, "warmup"), {}),
            ("request_xfer(401, 'h2d', 1, None, -1)", ValueError, (401, "h2d", 1, None, -1), {}),
            ("request_xfer(401, 'h2d', 1, None, 2**56 + 1)", ValueError, (401, "h2d", 1, None, 2**56 + 1), {}),
            ("request_xfer(401, 'h2d')", TypeError, (401, "h2d"), {}),
            ("request_xfer(401, 'h2d', 1.0)", TypeError, (401, "h2d", 1.0), {}),
            ("request_xfer(401, 'h2d', 1, bogus=1)", TypeError, (401, "h2d", 1), {"bogus": 1}),
        ]
        for what, exc, args, kw in cases:
            c.raises(what, exc, memobs.request_xfer, *args, **kw)
        after = memobs.get_summary()
        for k in ("total", "phases", "attributed", "timed", "problems"):
            c.eq("%s after the bad calls" % k, after[k], before[k])
        c.eq("the ledger after the bad calls", memobs.request_info(401)["bytes"], 70)
        memobs.request_end(401)

    @check("request_xfer_split: 1000 bytes over [1, 1, 1] -> 333, 333, 334 (memobs' rule); None and [0, 0, 0] "
           "equal; [3, 1] of 10 -> 7, 3; one operation of the figures, one of each ledger; the parts add up")
    def _(c):
        fresh()
        ids = [501, 502, 503]
        for i in ids:
            memobs.request_begin(i)
        memobs.request_xfer_split(ids, [1, 1, 1], "h2d", 1000, True)
        c.eq("parts of 1000 over [1, 1, 1]", [memobs.request_info(i)["xfer"]["prefill"]["h2d_bytes"] for i in ids],
             [333, 333, 334])
        c.eq("the model agrees", split_model(1000, [1, 1, 1]), [333, 333, 334])
        memobs.request_xfer_split(ids, None, "d2h", 1000, False)
        c.eq("shares None: equal", [memobs.request_info(i)["xfer"]["decode"]["d2h_bytes"] for i in ids],
             [333, 333, 334])
        memobs.request_xfer_split(tuple(ids), [0, 0, 0], "d2d", 2, None)
        c.eq("shares all 0: equal (2 bytes over 3: 0, 1, 1)",
             [memobs.request_info(i)["xfer"]["unphased"]["d2d_bytes"] for i in ids], split_model(2, [0, 0, 0]))
        memobs.request_xfer_split(ids[:2], [3, 1], "s2h", 10, "decode")
        c.eq("[3, 1] of 10", [memobs.request_info(i)["xfer"]["decode"]["s2h_bytes"] for i in ids[:2]], [7, 3])
        c.eq("the model agrees ([3, 1] of 10)", split_model(10, [3, 1]), [7, 3])
        for i in ids:
            inf = memobs.request_info(i)
            c.eq("%d: one operation per split it was in" % i,
                 (inf["xfer"]["prefill"]["h2d_count"], inf["xfer"]["decode"]["d2h_count"],
                  inf["xfer"]["unphased"]["d2d_count"]), (1, 1, 1))
        s = memobs.get_summary()
        c.eq("figures: h2d prefill one operation of 1000",
             (s["phases"]["prefill"]["h2d_bytes"], s["phases"]["prefill"]["h2d_count"]), (1000, 1))
        c.eq("attributed: the same", (s["attributed"]["prefill"]["h2d_bytes"], s["attributed"]["prefill"]["h2d_count"]),
             (1000, 1))
        c.eq("attributed total bytes = the splits' bytes", sum(s["attributed"]["total"][d + "_bytes"] for d in DIRS),
             1000 + 1000 + 2 + 10)
        c.eq("sum of the ledgers = the attributed bytes", sum(memobs.request_info(i)["bytes"] for i in ids),
             1000 + 1000 + 2 + 10)
        # a str id among ints, the same id twice: two parts in one ledger
        memobs.request_begin("split-str")
        memobs.request_xfer_split(["split-str", 501, "split-str"], [1, 2, 1], "h2s", 101, "prefill")
        c.eq("a str id twice: parts 0 and 2 in its ledger", memobs.request_info("split-str")["xfer"]["prefill"]
             ["h2s_bytes"], split_model(101, [1, 2, 1])[0] + split_model(101, [1, 2, 1])[2])
        for i in ids + ["split-str"]:
            memobs.request_end(i)

    @check("request_xfer_split against the model: 300 random splits (1 to 40 requests, shares 0 to 2**40, "
           "bytes 0 to 2**56): every part exact, each within one byte of its exact share, the parts add up")
    def _(c):
        fresh()
        rnd = random.Random(42)
        bad = []
        for k in range(300):
            n = rnd.randint(1, 40)
            ids = [600000 + 64 * k + j for j in range(n)]
            for i in ids:
                memobs.request_begin(i)
            nbytes = rnd.choice([0, 1, n - 1, rnd.randint(0, 10**6), rnd.randint(0, 2**56), 2**56])
            shares = None if rnd.random() < 0.1 else [rnd.choice([0, 1, rnd.randint(0, 2**40)]) for _ in ids]
            memobs.request_xfer_split(ids, shares, "d2s", nbytes, "prefill")
            got = [memobs.request_info(i)["xfer"]["prefill"]["d2s_bytes"] for i in ids]
            want = split_model(nbytes, shares, n)
            w = shares if shares and any(shares) else [1] * n
            near = all(abs(g * sum(w) - nbytes * s) < sum(w) for g, s in zip(got, w))
            if got != want or sum(got) != nbytes or not near:
                bad.append((nbytes, shares, got, want))
            for i in ids:
                memobs.request_end(i)
        c.eq("splits off the model", bad[:3], [])
        c.eq("orphan_bytes", memobs.get_summary()["attributed"]["orphan_bytes"], 0)

    @check("request_xfer_split: bad arguments raise TypeError / ValueError and record nothing")
    def _(c):
        fresh()
        memobs.request_begin(701)
        memobs.request_begin(702)
        before = memobs.get_summary()
        f = memobs.request_xfer_split
        cases = [
            ("ids []", ValueError, ([], None, "h2d", 10)),
            ("ids 'ab' (a str is one id, not a sequence)", TypeError, ("ab", None, "h2d", 10)),
            ("ids 5", TypeError, (5, None, "h2d", 10)),
            ("ids [701, -1]", ValueError, ([701, -1], None, "h2d", 10)),
            ("ids [701, 1.5]", TypeError, ([701, 1.5], None, "h2d", 10)),
            ("ids [701, '']", ValueError, ([701, ""], None, "h2d", 10)),
            ("2 ids, 3 shares", ValueError, ([701, 702], [1, 1, 1], "h2d", 10)),
            ("shares [-1, 2]", ValueError, ([701, 702], [-1, 2], "h2d", 10)),
            ("shares [1.0, 2]", TypeError, ([701, 702], [1.0, 2], "h2d", 10)),
            ("shares past 2**64-1 together", ValueError, ([701, 702], [2**64 - 1, 1], "h2d", 10)),
            ("shares 'ab'", TypeError, ([701, 702], "ab", "h2d", 10)),
            ("shares 7", TypeError, ([701, 702], 7, "h2d", 10)),
            ("dir 'x2y'", ValueError, ([701, 702], None, "x2y", 10)),
            ("nbytes 2**56 + 1", ValueError, ([701, 702], None, "h2d", 2**56 + 1)),
            ("nbytes -1", ValueError, ([701, 702], None, "h2d", -1)),
            ("phase 'warmup'", ValueError, ([701, 702], None, "h2d", 10, "warmup")),
            ("no nbytes", TypeError, ([701, 702], None, "h2d")),
        ]
        for what, exc, args in cases:
            c.raises(what, exc, f, *args)
        after = memobs.get_summary()
        for k in ("total", "phases", "attributed", "problems"):
            c.eq("%s after the bad calls" % k, after[k], before[k])
        c.eq("the ledgers after the bad calls", (memobs.request_info(701)["bytes"],
                                                 memobs.request_info(702)["bytes"]), (0, 0))
        memobs.request_xfer_split(iter([701, 702]), iter([1, 3]), "h2d", 8)  # any iterable
        c.eq("iterables: 2 and 6", (memobs.request_info(701)["bytes"], memobs.request_info(702)["bytes"]), (2, 6))
        memobs.request_end(701)
        memobs.request_end(702)

    @check("str ids: request_begin/enter/token/end with a str are request_id(str)'s request; request_info "
           "by either")
    def _(c):
        fresh()
        rid = "chatcmpl-\u00e9t\u00e9-42"
        num = fnv1a64(rid)
        memobs.request_begin(rid)
        with memobs.request(rid) as r:
            c.eq("request(str).id", r.id, num)
            c.eq("request_current()", memobs.request_current(), num)
            memobs.record_h2d(640, True)
        memobs.request_token(rid)
        by_str, by_num = memobs.request_info(rid), memobs.request_info(num)
        c.eq("request_info(str) == request_info(request_id(str))", by_str, by_num)
        c.eq("its id", by_str["id"], num)
        c.eq("its bytes, tokens", (by_str["bytes"], by_str["tokens"]), (640, 1))
        memobs.request_end(rid)
        c.eq("ended: request_info(str) None", memobs.request_info(rid), None)
        c.eq("requests: begun 1, completed 1, unknown 0", [memobs.get_summary()["requests"][k] for k in
                                                           ("begun", "completed", "unknown")], [1, 1, 0])

    @check("request_tenant: filed (True), the same name again True, a second name False and kept first, an id "
           "not in flight False (tenant_misuse counts both); bad names ValueError/TypeError, not counted")
    def _(c):
        fresh()
        memobs.request_begin(801)
        c.eq("request_tenant(801, 'acme')", memobs.request_tenant(801, "acme"), True)
        c.eq("tenant in the ledger", memobs.request_info(801)["tenant"], "acme")
        c.eq("the same name again", memobs.request_tenant(801, "acme"), True)
        c.eq("a second name", memobs.request_tenant(801, "globex"), False)
        c.eq("kept first", memobs.request_info(801)["tenant"], "acme")
        c.eq("not in flight", memobs.request_tenant(899, "acme"), False)
        c.eq("tenant_misuse 2", memobs.get_summary()["attributed"]["tenant_misuse"], 2)
        memobs.request_begin(802)
        name63 = "\u00e9" * 31 + "a"  # 63 bytes of UTF-8
        c.eq("a 63-byte name", memobs.request_tenant(id=802, name=name63), True)
        c.eq("kept whole", memobs.request_info(802)["tenant"], name63)
        for what, exc, name in [("''", ValueError, ""), ("64 bytes", ValueError, "\u00e9" * 32),
                                ("a newline", ValueError, "a\nb"), ("DEL", ValueError, "a\x7f"),
                                ("NUL", ValueError, "a\x00b"), ("a lone surrogate", ValueError, "\udcff"),
                                ("5", TypeError, 5), ("None", TypeError, None)]:
            c.raises("name " + what, exc, memobs.request_tenant, 801, name)
        c.raises("id -1", ValueError, memobs.request_tenant, -1, "acme")
        c.eq("tenant_misuse still 2", memobs.get_summary()["attributed"]["tenant_misuse"], 2)
        memobs.request_end(801)
        memobs.request_end(802)

    @check("request_info None when not in flight (never begun, ended, memobs off); request_top by bytes and by "
           "wait: the finished requests, largest first, final state, n")
    def _(c):
        fresh()
        c.eq("never begun", memobs.request_info(999999), None)
        c.eq("empty top after reset()", memobs.request_top(), [])
        sizes = {901: 5000, 902: 70000, 903: 300, 904: 1200}
        waits = {901: 900, 902: 10, 903: 50000, 904: 0}
        for i, n in sizes.items():
            memobs.request_begin(i)
            memobs.request_xfer(i, "h2d", n, True, ns=waits[i])
        memobs.request_token(902)
        memobs.set_enabled(False)
        c.eq("memobs off: request_info None", memobs.request_info(901), None)
        memobs.set_enabled(True)
        for i in sizes:
            memobs.request_end(i)
        top = memobs.request_top()
        c.eq("by bytes: ids", [t["id"] for t in top], [902, 901, 904, 903])
        c.eq("by bytes: bytes", [t["bytes"] for t in top], [70000, 5000, 1200, 300])
        c.eq("states", [t["state"] for t in top], ["completed", "aborted", "aborted", "aborted"])
        c.true("end_ns set, after begin_ns", all(t["end_ns"] >= t["begin_ns"] > 0 for t in top), top)
        c.true("902 completed: e2e_ns > 0", top[0]["e2e_ns"] > 0, top[0]["e2e_ns"])
        wt = memobs.request_top(by="wait")
        c.eq("by wait: ids (no wait: not listed)", [t["id"] for t in wt], [903, 901, 902])
        c.eq("by wait: wait_ns", [t["wait_ns"] for t in wt], [50000, 900, 10])
        c.eq("n=1", [t["id"] for t in memobs.request_top("bytes", 1)], [902])
        c.eq("n=0", memobs.request_top(n=0), [])
        c.eq("n=1000: the ones kept", len(memobs.request_top(n=1000)), 4)
        c.raises("by='size'", ValueError, memobs.request_top, "size")
        c.raises("n=-1", ValueError, memobs.request_top, "bytes", -1)
        c.raises("n=1.5", TypeError, memobs.request_top, "bytes", 1.5)
        c.eq("ended: request_info None", memobs.request_info(902), None)

    @check("region ledger: a region ended while the thread is bound adds its time to the request "
           "(region_ns = the region's total_ns); one ended unbound does not")
    def _(c):
        fresh()
        memobs.region_set_timing(True)
        memobs.request_begin(1001)
        with memobs.request(1001):
            with memobs.region("req_py_region"):
                sum(range(1000))
        with memobs.region("req_py_unbound"):
            sum(range(1000))
        r = [x for x in memobs.get_regions() if x["name"] == "req_py_region"]
        i = memobs.request_info(1001)
        c.eq("region_ns = the region's total_ns", i["region_ns"], r[0]["total_ns"] if r else None)
        c.true("region_ns > 0", i["region_ns"] > 0, i["region_ns"])
        memobs.request_end(1001)

    @check("MEMOBS_REQUESTS: one JSON line per finished request, written by this process; each equal to its "
           "last request_info() (ledger per phase and direction, tenant, tokens, times)")
    def _(c):
        fresh()
        infos = {}
        for k, i in enumerate((1101, 1102, "line-\u00e9")):
            memobs.request_begin(i)
            with memobs.request(i):
                memobs.record_h2d(100 * (k + 1), True)
                memobs.record_d2s(7 + k, None)
                memobs.record_xfer_ns("s2h", 4000, "decode", 300 + k)
            memobs.request_xfer_split([i, 1103 + k], [1, 3], "d2h", 1001, False)
            if k != 1:
                memobs.request_token(i)
                memobs.request_token(i)
            memobs.request_tenant(i, "tenant-%d" % k)
            infos[memobs.request_id(i)] = memobs.request_info(i)
            memobs.request_end(i)
        lines = [x for x in read_lines(lines_path) if x["id"] in infos]
        c.eq("one line each", sorted(x["id"] for x in lines), sorted(infos))
        for x in lines:
            line_matches(c, "line %d" % x["id"], x, infos[x["id"]])
        c.true("tpot_ns: the mean of one gap", all(x["tpot_ns"] > 0 for x in lines if x["tokens"] == 2), lines)
        c.eq("orphans: the split's parts for 1103.. (never begun)", memobs.get_summary()["attributed"]["orphan_bytes"],
             3 * split_model(1001, [1, 3])[1])

    @check("exactness under threads: 8 threads x 40 requests each bound in turn (records of every direction "
           "and phase, nested bindings, request_xfer, splits) beside unbound records, a reader taking summaries: "
           "attributed + unattributed = total per direction and phase, every ledger its model, their sum the "
           "attributed figures, no orphan")
    def _(c):
        fresh()
        nthreads, nreq = 8, 40
        models, unbound, extra_ops = {}, [], []
        start = threading.Barrier(nthreads + 1)
        lock = threading.Lock()
        stop = threading.Event()
        reads = [0, []]

        def work(t):
            rnd = random.Random(1000 + t)
            mine, loose, split_ops = {}, zero_ledger(), 0
            start.wait()
            for r in range(nreq):
                rid = 2000000 + 1000 * t + r
                led = mine.setdefault(rid, zero_ledger())
                memobs.request_begin(rid)
                with memobs.request(rid):
                    for _ in range(rnd.randint(1, 12)):
                        d, p, n = rnd.choice(DIRS), rnd.choice(PHASES), rnd.randint(0, 1 << 20)
                        memobs.record_xfer(d, n, p)
                        add(led, p, d, n)
                    if r:  # nested: the previous request (still in flight) gets these
                        prev = rid - 1
                        with memobs.request(prev):
                            memobs.record_h2d(33, True)
                            add(mine[prev], "prefill", "h2d", 33)
                        memobs.record_d2h(11, False)  # back to rid
                        add(led, "decode", "d2h", 11)
                d, n = rnd.choice(DIRS), rnd.randint(0, 1 << 16)
                memobs.request_xfer(rid, d, n, "decode")
                add(led, "decode", d, n)
                if r:
                    ids, shares, n = [rid - 1, rid], [rnd.randint(0, 9), rnd.randint(0, 9)], rnd.randint(0, 99999)
                    for i, part in zip(ids, split_model(n, shares)):
                        add(mine[i], "unphased", "s2d", part)
                    memobs.request_xfer_split(ids, shares, "s2d", n, None)
                    split_ops += 1
                    memobs.request_end(rid - 1)
                for _ in range(rnd.randint(0, 3)):  # unbound
                    d, p, n = rnd.choice(DIRS), rnd.choice(PHASES), rnd.randint(0, 1 << 20)
                    memobs.record_xfer(d, n, p)
                    add(loose, p, d, n)
            memobs.request_end(2000000 + 1000 * t + nreq - 1)
            with lock:
                models.update(mine)
                unbound.append(loose)
                extra_ops.append(split_ops)

        def reader():
            while not stop.is_set():
                s = memobs.get_summary()
                reads[0] += 1
                for p in PHASES:
                    for d in DIRS:
                        a, tot = s["attributed"][p][d + "_bytes"], s["phases"][p][d + "_bytes"]
                        if a > tot and len(reads[1]) < 3:
                            reads[1].append((p, d, a, tot))

        ts = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
        rd = threading.Thread(target=reader)
        for t in ts:
            t.start()
        rd.start()
        start.wait()
        for t in ts:
            t.join()
        stop.set()
        rd.join()
        c.true("the reader took summaries while they recorded", reads[0] > 0, reads[0])
        c.eq("no summary read attributed above the figures", reads[1], [])
        s = memobs.get_summary()
        att_model = zero_ledger()
        for led in models.values():
            for p in PHASES:
                for d in DIRS:
                    att_model[p][d][0] += led[p][d][0]
                    att_model[p][d][1] += led[p][d][1]
        loose = zero_ledger()
        for led in unbound:
            for p in PHASES:
                for d in DIRS:
                    add(loose, p, d, led[p][d][0], led[p][d][1])
        nsplit = sum(extra_ops)
        bad = []
        for p in PHASES:
            for d in DIRS:
                att = [s["attributed"][p][d + "_bytes"], s["attributed"][p][d + "_count"]]
                tot = [s["phases"][p][d + "_bytes"], s["phases"][p][d + "_count"]]
                # a split is one operation of the figures, one in each of its two ledgers
                want_ops = att_model[p][d][1] - (nsplit if (p, d) == ("unphased", "s2d") else 0)
                if att != [att_model[p][d][0], want_ops]:
                    bad.append("attributed %s %s: %r, the model %r" % (p, d, att, [att_model[p][d][0], want_ops]))
                if [att[0] + loose[p][d][0], att[1] + loose[p][d][1]] != tot:
                    bad.append("%s %s: attributed %r + unattributed %r != total %r" % (p, d, att, loose[p][d], tot))
        c.eq("per direction and phase (21 pairs)", bad, [])
        c.eq("orphan_bytes", s["attributed"]["orphan_bytes"], 0)
        c.eq("bind_misuse", s["attributed"]["bind_misuse"], 0)
        lines = {x["id"]: x for x in read_lines(lines_path) if 2000000 <= x["id"] < 2000000 + 1000 * nthreads}
        c.eq("a line per request", len(lines), nthreads * nreq)
        wrong = [i for i, led in models.items() if i not in lines or ledger_of_line(lines[i]) != led]
        c.eq("ledgers off their model", wrong[:5], [])
        summed = zero_ledger()
        for x in lines.values():
            for p in PHASES:
                for d in DIRS:
                    add(summed, p, d, x["xfer"][d][p][0], x["xfer"][d][p][1])
        c.eq("the lines' bytes summed = the attributed figures",
             {p: {d: summed[p][d][0] for d in DIRS} for p in PHASES},
             {p: {d: s["attributed"][p][d + "_bytes"] for d in DIRS} for p in PHASES})
        c.eq("requests in flight after the run", s["requests"]["in_flight"], 0)


# ---------------------------------------------------------------------------
# Attached to the LD_PRELOAD library's memobs


def attached(lib_dir, lines_path):
    user = ctypes.CDLL(os.path.join(lib_dir, "libuser.so"))
    user.user_h2d.argtypes = [ctypes.c_size_t]

    @check("attached: the copy the preload observes on a bound thread is the request's (its bytes by the "
           "thread's phase); the program's own h2d record stays manual (no ledger), an "
           "s2h record (never manual) is attributed; the preload's request line holds it")
    def _(c):
        c.eq("instance()", memobs.instance(), "preload")
        memobs.set_phase("decode")
        memobs.request_begin("att-1")
        with memobs.request("att-1"):
            c.eq("user_h2d(4096)", user.user_h2d(4096), 0)
            memobs.record_h2d(100, True)  # manual: counted apart, attributed to no request
            memobs.record_s2h(300, None)  # storage: never manual
        memobs.request_xfer("att-1", "h2d", 50, "decode")  # manual too
        memobs.set_phase(None)
        i = memobs.request_info("att-1")
        c.true("request_info", i is not None)
        if i:
            c.eq("h2d decode: the observed copy only", (i["xfer"]["decode"]["h2d_bytes"],
                                                        i["xfer"]["decode"]["h2d_count"]), (4096, 1))
            c.eq("s2h decode: the program's storage record", i["xfer"]["decode"]["s2h_bytes"], 300)
            c.eq("bytes", i["bytes"], 4396)
        s = memobs.get_summary()
        c.eq("manual: h2d prefill 100, decode 50", (s["manual"]["prefill"]["h2d_bytes"],
                                                   s["manual"]["decode"]["h2d_bytes"]), (100, 50))
        c.eq("attributed decode h2d, s2h", (s["attributed"]["decode"]["h2d_bytes"],
                                            s["attributed"]["decode"]["s2h_bytes"]), (4096, 300))
        c.eq("orphan_bytes", s["attributed"]["orphan_bytes"], 0)
        memobs.request_end("att-1")
        lines = [x for x in read_lines(lines_path) if x["id"] == memobs.request_id("att-1")]
        c.eq("one line for att-1", len(lines), 1)
        if lines and i:
            line_matches(c, "its line", lines[0], i)


def main():
    mode = sys.argv[1]
    if mode == "private":
        private(sys.argv[2])
    elif mode == "attached":
        attached(sys.argv[2], sys.argv[3])
    else:
        print("not ok - %s: requests_check.py: unknown mode %r" % (SUITE, mode))
        return 1
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
