"""The Python extension module `memobs` (examples/python/memobs_module.c),
checked from Python: exact totals per phase and direction, the dict shape
(nano-vllm's MemoryObserver.get_summary() keys, then memobs' extras), bad
arguments (the right exception, nothing recorded), reset, enable, TTFT/TPOT,
four recording threads, the allocation tracker and its reports, the JSON
summary, and Python stacks on tracked allocations.

Run with the built module on PYTHONPATH (tests/test_pymodule.sh does):
prints one "ok - pymodule: NAME" / "not ok - pymodule: NAME" line per check,
with "    # " detail lines, and exits 1 if any failed. No pytest needed."""
import json
import os
import pathlib
import shutil
import sys
import tempfile
import threading
import time
import traceback

import memobs

SUITE = "pymodule"
FAILED = 0
TMP = tempfile.mkdtemp(prefix="memobs_pymodule_")

# nano-vllm's MemoryObserver.get_summary(): these keys, no more, no fewer.
NANO_TOTAL = {"h2d_bytes", "h2d_count", "d2h_bytes", "d2h_count", "d2d_bytes", "d2d_count"}
NANO_PHASE = {"h2d_bytes", "d2h_bytes"}
LATENCY = {"count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "last_ns"}
TOP = {"total", "prefill", "decode", "unphased", "phases", "ttft", "tpot", "e2e", "requests", "problems",
       "counters", "memory", "tracker", "timed", "identity", "enabled", "window_ns", "memobs_version"}


class Check:
    """Collects failed expectations of one check; each is shown as expected vs actual."""

    def __init__(self):
        self.details = []

    def eq(self, what, actual, expected):
        if actual != expected:
            self.details.append("%s: expected %r, got %r" % (what, expected, actual))

    def true(self, what, cond, shown=None):
        if not cond:
            self.details.append("%s%s" % (what, "" if shown is None else ": %s" % (shown,)))

    def raises(self, what, exc, fn, *args, **kwargs):
        """fn(*args, **kwargs) raises exc (exactly that class or a subclass); returns its message."""
        try:
            fn(*args, **kwargs)
        except exc as e:
            return str(e)
        except Exception as e:  # the wrong exception
            self.details.append("%s: expected %s, got %s: %s" % (what, exc.__name__, type(e).__name__, e))
            return None
        self.details.append("%s: expected %s, nothing was raised" % (what, exc.__name__))
        return None


def check(name):
    """Runs the decorated function as the check NAME and prints its line."""

    def run(fn):
        global FAILED
        c = Check()
        try:
            fn(c)
        except Exception:
            c.details.append("raised:")
            c.details.extend(traceback.format_exc().rstrip().splitlines()[-12:])
        if c.details:
            FAILED += 1
            print("not ok - %s: %s" % (SUITE, name))
            for d in c.details:
                for line in str(d).splitlines() or [""]:
                    print("    # " + line)
        else:
            print("ok - %s: %s" % (SUITE, name))
        sys.stdout.flush()
        return fn

    return run


def fresh():
    """A new window, recording on, no phase on this thread."""
    memobs.enable(True)
    memobs.set_phase(None)
    memobs.reset()


def xfer():
    """The transfer part of the summary: what an error must leave unchanged."""
    s = memobs.get_summary()
    return {k: s[k] for k in ("total", "prefill", "decode", "unphased", "phases")}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class CaptureStderr:
    """Captures file descriptor 2 (C's stderr, where memobs writes) into a string."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False


# ---------------------------------------------------------------------------
# Module, transfers, dict shape


@check("__version__ is memobs' version, also in the summary")
def _(c):
    c.true("__version__ looks like N.N.N", isinstance(memobs.__version__, str)
           and len(memobs.__version__.split(".")) == 3, repr(memobs.__version__))
    c.eq("get_summary()['memobs_version']", memobs.get_summary()["memobs_version"], memobs.__version__)


@check("record_h2d/d2h/d2d: exact bytes and counts per phase and direction")
def _(c):
    fresh()
    memobs.record_h2d(1000, True)
    memobs.record_h2d(24, True)
    memobs.record_h2d(300, False)
    memobs.record_d2h(7, True)
    memobs.record_d2h(70, False)
    memobs.record_d2h(700, False)
    memobs.record_d2d(5, True)
    memobs.record_d2d(50, False)
    memobs.record_h2d(2**40, False)  # a terabyte: 64-bit counters
    memobs.record_h2d(0, True)  # zero bytes: counted as an op
    s = memobs.get_summary()
    c.eq("total", s["total"], {"h2d_bytes": 1324 + 2**40, "h2d_count": 5, "d2h_bytes": 777, "d2h_count": 3,
                               "d2d_bytes": 55, "d2d_count": 2})
    c.eq("prefill", s["prefill"], {"h2d_bytes": 1024, "d2h_bytes": 7})
    c.eq("decode", s["decode"], {"h2d_bytes": 300 + 2**40, "d2h_bytes": 770})
    c.eq("phases.prefill", s["phases"]["prefill"], {"h2d_bytes": 1024, "h2d_count": 3, "d2h_bytes": 7,
                                                    "d2h_count": 1, "d2d_bytes": 5, "d2d_count": 1})
    c.eq("phases.decode", s["phases"]["decode"], {"h2d_bytes": 300 + 2**40, "h2d_count": 2, "d2h_bytes": 770,
                                                  "d2h_count": 2, "d2d_bytes": 50, "d2d_count": 1})
    c.eq("unphased", s["unphased"], dict.fromkeys(NANO_TOTAL, 0))


@check("get_summary(): nano-vllm's keys exactly, then memobs' extras")
def _(c):
    s = memobs.get_summary()
    c.eq("top-level keys", set(s), TOP)
    c.eq("total keys (nano-vllm)", set(s["total"]), NANO_TOTAL)
    c.eq("prefill keys (nano-vllm)", set(s["prefill"]), NANO_PHASE)
    c.eq("decode keys (nano-vllm)", set(s["decode"]), NANO_PHASE)
    c.eq("unphased keys", set(s["unphased"]), NANO_TOTAL)
    c.eq("phases keys", set(s["phases"]), {"prefill", "decode", "unphased"})
    for p in ("prefill", "decode", "unphased"):
        c.eq("phases.%s keys" % p, set(s["phases"][p]), NANO_TOTAL)
    for t in ("ttft", "tpot", "e2e"):
        c.eq("%s keys" % t, set(s[t]), LATENCY)
    c.eq("identity keys", set(s["identity"]), {"job_id", "rank", "local_rank", "world_size", "host", "pid"})
    c.eq("identity.pid", s["identity"]["pid"], os.getpid())
    c.eq("identity rank/local_rank/world_size", (s["identity"]["rank"], s["identity"]["local_rank"],
                                                 s["identity"]["world_size"]), (0, 0, 1))
    c.eq("memory kinds", set(s["memory"]), {"device", "host", "pinned", "managed"})
    c.eq("enabled", s["enabled"], True)
    every = [v for d in (s["total"], s["prefill"], s["decode"], s["unphased"]) for v in d.values()]
    c.true("every byte/count is an int", all(type(v) is int for v in every), every)


@check("is_prefill=None: the thread's phase (set_phase), unphased when none is set")
def _(c):
    fresh()
    c.eq("get_phase() after set_phase(None)", memobs.get_phase(), None)
    memobs.record_h2d(11, None)  # unphased
    memobs.record_d2d(13, None)  # unphased
    memobs.set_phase("prefill")
    c.eq("get_phase()", memobs.get_phase(), "prefill")
    memobs.record_h2d(100, None)
    memobs.record_d2d(3, None)
    memobs.set_phase("decode")
    c.eq("get_phase()", memobs.get_phase(), "decode")
    memobs.record_d2h(200, None)
    memobs.record_d2d(4, None)
    memobs.record_h2d(1, True)  # an explicit phase wins over the thread's
    memobs.set_phase(None)
    memobs.record_d2h(17, None)
    s = memobs.get_summary()
    c.eq("unphased", s["unphased"], {"h2d_bytes": 11, "h2d_count": 1, "d2h_bytes": 17, "d2h_count": 1,
                                     "d2d_bytes": 13, "d2d_count": 1})
    c.eq("prefill", s["prefill"], {"h2d_bytes": 101, "d2h_bytes": 0})
    c.eq("decode", s["decode"], {"h2d_bytes": 0, "d2h_bytes": 200})
    c.eq("D2D by phase (prefill, decode, unphased)",
         [s["phases"][p]["d2d_bytes"] for p in ("prefill", "decode", "unphased")], [3, 4, 13])
    c.eq("total = prefill + decode + unphased", s["total"],
         {k: sum(s["phases"][p][k] for p in ("prefill", "decode", "unphased")) for k in NANO_TOTAL})


@check("is_prefill: keywords, phase names, truth values, __index__ bytes")
def _(c):
    fresh()

    class Idx:  # a numpy-integer-like object
        def __index__(self):
            return 40

    class MyInt(int):
        pass

    memobs.record_h2d(num_bytes=5, is_prefill=False)
    memobs.record_h2d(6, is_prefill=True)
    memobs.record_h2d(7, "decode")
    memobs.record_h2d(8, "prefill")
    memobs.record_h2d(9, "unphased")
    memobs.record_h2d(10, 1)  # nonzero: prefill, as the C macros read it
    memobs.record_h2d(20, 0)
    memobs.record_h2d(Idx(), True)
    memobs.record_h2d(MyInt(50), False)
    s = memobs.get_summary()
    c.eq("prefill h2d", s["phases"]["prefill"]["h2d_bytes"], 6 + 8 + 10 + 40)
    c.eq("decode h2d", s["phases"]["decode"]["h2d_bytes"], 5 + 7 + 20 + 50)
    c.eq("unphased h2d", s["unphased"]["h2d_bytes"], 9)
    c.eq("h2d ops", s["total"]["h2d_count"], 9)


@check("bad arguments: the right exception, counters unchanged")
def _(c):
    fresh()
    memobs.record_h2d(123, True)
    before = xfer()

    class Boom:
        def __bool__(self):
            raise RuntimeError("boom")

    cases = [
        ("record_h2d(-1, True)", ValueError, memobs.record_h2d, (-1, True), {}),
        ("record_d2h(-2**70, False)", ValueError, memobs.record_d2h, (-2**70, False), {}),
        ("record_d2d(2**64, True)", ValueError, memobs.record_d2d, (2**64, True), {}),
        ("record_h2d('100', True)", TypeError, memobs.record_h2d, ("100", True), {}),
        ("record_h2d(1.5, True)", TypeError, memobs.record_h2d, (1.5, True), {}),
        ("record_h2d(None, True)", TypeError, memobs.record_h2d, (None, True), {}),
        ("record_h2d(True, True) (a bool is not a byte count)", TypeError, memobs.record_h2d, (True, True), {}),
        ("record_h2d(100) (is_prefill is required)", TypeError, memobs.record_h2d, (100,), {}),
        ("record_d2d(100) (is_prefill is required)", TypeError, memobs.record_d2d, (100,), {}),
        ("record_h2d()", TypeError, memobs.record_h2d, (), {}),
        ("record_h2d(1, True, 3)", TypeError, memobs.record_h2d, (1, True, 3), {}),
        ("record_h2d(1, prefill=True)", TypeError, memobs.record_h2d, (1,), {"prefill": True}),
        ("record_h2d(1, True, is_prefill=True)", TypeError, memobs.record_h2d, (1, True), {"is_prefill": True}),
        ("record_h2d(1, 'prefil')", ValueError, memobs.record_h2d, (1, "prefil"), {}),
        ("record_h2d(1, <__bool__ raises>)", RuntimeError, memobs.record_h2d, (1, Boom()), {}),
        ("record_h2d(-1, 'bogus') (bytes checked first)", ValueError, memobs.record_h2d, (-1, "bogus"), {}),
        ("request_begin(-1)", ValueError, memobs.request_begin, (-1,), {}),
        ("request_token('a')", TypeError, memobs.request_token, ("a",), {}),
        ("enable(1, 2)", TypeError, memobs.enable, (1, 2), {}),
        ("write_summary(path, fmt='xml')", ValueError, memobs.write_summary, (os.path.join(TMP, "x"), "xml"), {}),
        ("write_summary(None)", TypeError, memobs.write_summary, (None,), {}),
        ("write_summary() no path", TypeError, memobs.write_summary, (), {}),
    ]
    for what, exc, fn, args, kwargs in cases:
        msg = c.raises(what, exc, fn, *args, **kwargs)
        if msg is not None and exc is not RuntimeError:  # RuntimeError: __bool__'s own
            c.true("%s: message names the function" % what, fn.__name__ in msg, msg)
    c.eq("transfers after the bad calls", xfer(), before)
    c.true("no exception left set: a later call works", memobs.record_h2d(1, True) is None)

    memobs.set_phase("decode")
    c.raises("set_phase('warmup')", ValueError, memobs.set_phase, "warmup")
    c.raises("set_phase(1)", TypeError, memobs.set_phase, 1)
    c.raises("set_phase(True)", TypeError, memobs.set_phase, True)
    c.eq("phase unchanged by a bad set_phase", memobs.get_phase(), "decode")
    memobs.set_phase(None)


@check("reset() and complete_reset() start a new window")
def _(c):
    fresh()
    memobs.record_h2d(10, True)
    memobs.record_d2d(10, None)
    memobs.ttft_start()
    memobs.ttft_stop()
    memobs.reset()
    s = memobs.get_summary()
    c.eq("total after reset()", s["total"], dict.fromkeys(NANO_TOTAL, 0))
    c.eq("unphased after reset()", s["unphased"], dict.fromkeys(NANO_TOTAL, 0))
    c.eq("ttft count after reset()", s["ttft"]["count"], 0)
    memobs.record_d2h(3, False)
    c.eq("records after reset() count again", memobs.get_summary()["decode"]["d2h_bytes"], 3)
    memobs.complete_reset()
    c.eq("total after complete_reset()", memobs.get_summary()["total"], dict.fromkeys(NANO_TOTAL, 0))


@check("enable(False) stops recording; enable() resumes")
def _(c):
    fresh()
    memobs.record_h2d(1, True)
    memobs.enable(False)
    c.eq("is_enabled() after enable(False)", memobs.is_enabled(), False)
    memobs.record_h2d(1000, True)
    memobs.record_d2h(1000, False)
    memobs.record_d2d(1000, None)
    s = memobs.get_summary()
    c.eq("enabled in the summary", s["enabled"], False)
    c.eq("total while disabled", s["total"], {"h2d_bytes": 1, "h2d_count": 1, "d2h_bytes": 0, "d2h_count": 0,
                                              "d2d_bytes": 0, "d2d_count": 0})
    memobs.enable()
    c.eq("is_enabled() after enable()", memobs.is_enabled(), True)
    memobs.record_h2d(2, True)
    c.eq("h2d bytes after enable()", memobs.get_summary()["total"]["h2d_bytes"], 3)
    memobs.enable(on=False)
    c.eq("enable(on=False)", memobs.is_enabled(), False)
    memobs.enable(on=True)


# ---------------------------------------------------------------------------
# Timings


@check("TTFT/TPOT (global clock): counts and means after sleeps")
def _(c):
    fresh()
    memobs.ttft_start()
    time.sleep(0.020)
    memobs.ttft_stop()
    for _ in range(3):
        time.sleep(0.005)
        memobs.tpot_step()
    memobs.tpot_stop()
    memobs.tpot_step()  # disarmed: not a sample, counted as a problem
    s = memobs.get_summary()
    c.eq("ttft count", s["ttft"]["count"], 1)
    c.true("ttft mean >= 20 ms", s["ttft"]["mean_ns"] >= 20_000_000, s["ttft"])
    c.true("ttft last == max == mean (one sample)", s["ttft"]["last_ns"] == s["ttft"]["max_ns"] >= 20_000_000,
           s["ttft"])
    c.eq("tpot count", s["tpot"]["count"], 3)
    c.true("tpot mean >= 5 ms", s["tpot"]["mean_ns"] >= 5_000_000, s["tpot"])
    c.true("tpot p50 >= 5 ms * 0.99 (histogram)", s["tpot"]["p50_ns"] >= 4_950_000, s["tpot"])
    c.eq("problems.tpot_unarmed", s["problems"]["tpot_unarmed"], 1)


@check("per-request timing: request_begin/token/end give TTFT, TPOT, E2E")
def _(c):
    fresh()
    memobs.request_begin(7)
    memobs.request_begin(8)
    time.sleep(0.010)
    memobs.request_token(7)
    memobs.request_token(8)
    time.sleep(0.004)
    memobs.request_token(7)
    memobs.request_end(7)
    memobs.request_end(8)
    memobs.request_end(9)  # never begun
    s = memobs.get_summary()
    c.eq("ttft count", s["ttft"]["count"], 2)
    c.true("ttft mean >= 10 ms", s["ttft"]["mean_ns"] >= 10_000_000, s["ttft"])
    c.eq("tpot count", s["tpot"]["count"], 1)
    c.true("tpot mean >= 4 ms", s["tpot"]["mean_ns"] >= 4_000_000, s["tpot"])
    c.eq("e2e count", s["e2e"]["count"], 2)
    c.true("e2e max >= 14 ms", s["e2e"]["max_ns"] >= 14_000_000, s["e2e"])
    c.eq("requests", {k: s["requests"][k] for k in ("begun", "completed", "in_flight", "unknown")},
         {"begun": 2, "completed": 2, "in_flight": 0, "unknown": 1})


# ---------------------------------------------------------------------------
# Threads


@check("4 threads x 50000 records from Python: exact totals, per-thread phases")
def _(c):
    fresh()
    n = 50_000
    errors = []
    start = threading.Barrier(4)

    def worker(k):
        try:
            start.wait()
            if k < 2:  # explicit phase
                for i in range(n):
                    memobs.record_h2d((i & 0xff) + k, True)
            else:  # the thread's own phase, set in this thread only
                memobs.set_phase("decode")
                for i in range(n):
                    memobs.record_h2d((i & 0xff) + k, None)
        except Exception as e:  # shown below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.eq("errors in threads", errors, [])
    per = sum(i & 0xff for i in range(n))
    s = memobs.get_summary()
    c.eq("h2d count", s["total"]["h2d_count"], 4 * n)
    c.eq("prefill h2d bytes (threads 0, 1)", s["prefill"]["h2d_bytes"], 2 * per + n * (0 + 1))
    c.eq("decode h2d bytes (threads 2, 3, set_phase('decode'))", s["decode"]["h2d_bytes"], 2 * per + n * (2 + 3))
    c.eq("unphased h2d count", s["unphased"]["h2d_count"], 0)
    c.eq("this thread's phase untouched by the workers'", memobs.get_phase(), None)


# ---------------------------------------------------------------------------
# Allocation tracker, reports, JSON


@check("track_alloc/track_free: memory figures, print_alloc_groups(path) shows the tag")
def _(c):
    fresh()
    memobs.untrack_python_stacks()
    memobs.track_alloc(0x7f0000100000, 1 << 20, "device", tag="pymod_kv_cache")
    memobs.track_alloc(0x7f0000200000, 1 << 20, tag="pymod_kv_cache")
    memobs.track_alloc(0x7f0000300000, 4096, "pinned", "pymod_pinned_buf")
    memobs.track_alloc(ptr=0x7f0000400000, nbytes=100, kind="host")
    memobs.track_free(0x7f0000300000)
    s = memobs.get_summary()
    c.eq("memory.device", {k: s["memory"]["device"][k] for k in ("current_bytes", "peak_bytes", "live", "allocs")},
         {"current_bytes": 2 << 20, "peak_bytes": 2 << 20, "live": 2, "allocs": 2})
    c.eq("memory.pinned", {k: s["memory"]["pinned"][k] for k in ("current_bytes", "peak_bytes", "live", "frees")},
         {"current_bytes": 0, "peak_bytes": 4096, "live": 0, "frees": 1})
    c.eq("memory.host live", s["memory"]["host"]["live"], 1)
    c.eq("tracker.tracking", s["tracker"]["tracking"], True)
    path = os.path.join(TMP, "groups.txt")
    memobs.print_alloc_groups(path)
    text = read(path)
    c.true("groups report names the live tag pymod_kv_cache", "pymod_kv_cache" in text, text[:800])
    c.true("groups report counts 2097152 bytes for it", "2097152" in text, text[:800])
    c.true("the freed pinned buffer is not live", "pymod_pinned_buf" not in text, text[:800])
    path = os.path.join(TMP, "allocs.txt")
    memobs.print_allocations(path=path)
    c.true("block table lists the tag", "pymod_kv_cache" in read(path), read(path)[:800])
    for p in (0x7f0000100000, 0x7f0000200000, 0x7f0000400000):
        memobs.track_free(p)
    path = os.path.join(TMP, "leaks.txt")
    memobs.print_leaks(path)
    c.true("leak report: nothing live", "no tracked allocation is live" in read(path), read(path)[:400])
    memobs.track_free(0x7f0000100000)  # a double free: counted, never fatal
    s = memobs.get_summary()
    c.eq("device current after frees", s["memory"]["device"]["current_bytes"], 0)
    c.eq("tracker.frees_double", s["tracker"]["frees_double"], 1)


@check("track_alloc/track_free: bad arguments raise, nothing tracked")
def _(c):
    fresh()
    before = memobs.get_summary()["memory"]
    c.raises("track_alloc(p, n, 'gpu')", ValueError, memobs.track_alloc, 0x1000, 10, "gpu")
    c.raises("track_alloc(p, n, tag=5)", TypeError, memobs.track_alloc, 0x1000, 10, tag=5)
    c.raises("track_alloc(-1, n)", ValueError, memobs.track_alloc, -1, 10)
    c.raises("track_alloc(p, -10)", ValueError, memobs.track_alloc, 0x1000, -10)
    c.raises("track_alloc('0x1000', n)", TypeError, memobs.track_alloc, "0x1000", 10)
    c.raises("track_alloc(p)", TypeError, memobs.track_alloc, 0x1000)
    c.raises("track_alloc(p, n, device=-5)", ValueError, memobs.track_alloc, 0x1000, 10, device=-5)
    c.raises("track_free(1.0)", TypeError, memobs.track_free, 1.0)
    c.raises("print_allocations('/nonexistent/dir/x')", OSError, memobs.print_allocations, "/nonexistent/dir/x")
    c.eq("memory unchanged", memobs.get_summary()["memory"], before)


@check("write_summary(path, 'json'): parses, same figures as get_summary()")
def _(c):
    fresh()
    memobs.record_h2d(4096, True)
    memobs.record_h2d(8192, False)
    memobs.record_d2h(512, False)
    memobs.record_d2d(64, True)
    memobs.record_d2d(32, None)
    memobs.ttft_start()
    memobs.ttft_stop()
    s = memobs.get_summary()
    path = os.path.join(TMP, "summary.json")
    c.eq("write_summary() returns", memobs.write_summary(path, "json"), None)
    j = json.load(open(path))
    c.eq("total", j["total"], s["total"])
    for p in ("prefill", "decode", "unphased"):
        c.eq("JSON %s == get_summary()['phases'][%r]" % (p, p), j[p], s["phases"][p])
    c.eq("nano-vllm prefill == its part of the JSON", s["prefill"],
         {k: j["prefill"][k] for k in NANO_PHASE})
    c.eq("ttft count", j["ttft"]["count"], s["ttft"]["count"])
    c.eq("identity", j["identity"], s["identity"])
    c.eq("keys shared with the JSON", set(j) - set(s), set())
    path = os.path.join(TMP, "summary.txt")
    memobs.write_summary(path)  # text by default
    text = read(path)
    c.true("text summary heading", text.startswith("== memobs summary =="), text[:200])
    c.true("text summary has the H2D row", "\n  H2D " in text, text[:600])
    os.remove(path)
    memobs.write_summary(path=pathlib.Path(path), fmt="text")
    c.true("keywords path=, fmt=, an os.PathLike path", read(path).startswith("== memobs summary =="))
    e = c.raises("write_summary to a missing directory", OSError, memobs.write_summary, "/nonexistent/dir/s.json",
                 "json")
    c.true("FileNotFoundError names the path", e is not None and "/nonexistent/dir/s.json" in e, e)


@check("print_summary() and print_leaks() write to stderr (fd 2)")
def _(c):
    fresh()
    memobs.record_d2h(1_500_000, False)
    with CaptureStderr() as cap:
        memobs.print_summary()
        memobs.print_leaks()
    c.true("summary heading on stderr", "== memobs summary ==" in cap.text, cap.text[:300])
    c.true("1.50 MB of D2H shown in decimal units", "1.50 MB" in cap.text, cap.text[:600])
    c.true("leak report on stderr", "== memobs leak report ==" in cap.text, cap.text[-300:])


# ---------------------------------------------------------------------------
# Python stacks (memobs_python.h)


def pymod_chain_outer(n):
    return pymod_chain_middle(n)


def pymod_chain_middle(n):
    return pymod_chain_inner(n)


def pymod_chain_inner(n):
    memobs.track_alloc(0x7e0000000000 + n, 1 << 16, "device", tag="pymod_stack_tag")
    return memobs.stack_text()


def pymod_deep(k):
    if k == 0:
        return memobs.stack_text()
    return pymod_deep(k - 1)


@check("track_python_stacks(): a tracked allocation carries its Python stack")
def _(c):
    fresh()
    c.eq("track_python_stacks(max_frames=16)", memobs.track_python_stacks(max_frames=16), None)
    text = pymod_chain_outer(1)
    for fn in ("pymod_chain_outer", "pymod_chain_middle", "pymod_chain_inner"):
        c.true("stack_text() names %s" % fn, " in %s" % fn in text, text)
    c.true("stack_text() shows the source line of the call", "memobs.track_alloc(0x7e0000000000" in text
           or "return memobs.stack_text()" in text, text)
    path = os.path.join(TMP, "py_allocs.txt")
    memobs.print_allocations(path)
    rep = read(path)
    c.true("print_allocations shows 'Python Stack Trace'", "Python Stack Trace" in rep, rep[:1500])
    for fn in ("pymod_chain_outer", "pymod_chain_middle", "pymod_chain_inner"):
        c.true("print_allocations names %s" % fn, fn in rep, rep[:1500])
    c.true("the report shows the tag too", "pymod_stack_tag" in rep, rep[:1500])
    c.true("outermost first: outer before middle before inner",
           0 <= rep.find("pymod_chain_outer") < rep.find("pymod_chain_middle") < rep.find("pymod_chain_inner"),
           rep[:1500])
    boxed = memobs.stack_text(boxed=True)
    c.true("stack_text(boxed=True) draws the box", "┌─ Python Stack Trace" in boxed and "└" in boxed, boxed)

    memobs.untrack_python_stacks()
    memobs.track_alloc(0x7e0000100000, 1 << 16, "device", tag="pymod_no_stack_tag")
    path = os.path.join(TMP, "py_groups.txt")
    memobs.print_alloc_groups(path)
    rep = read(path)
    lines = rep.splitlines()
    row = [i for i, l in enumerate(lines) if "pymod_no_stack_tag" in l]
    c.true("after untrack_python_stacks(), a new trace has no Python stack",
           len(row) == 1 and (row[0] + 1 == len(lines) or "Python Stack Trace" not in lines[row[0] + 1]),
           "\n".join(lines[row[0]:row[0] + 3]) if row else rep[:1500])
    memobs.track_free(0x7e0000000001)
    memobs.track_free(0x7e0000100000)


@check("track_python_stacks(): rules (frames kept, elision, skip) and bad values")
def _(c):
    fresh()
    memobs.track_python_stacks(max_frames=5, head=2, tail=2, source_width=0, priority="", skip="")
    text = pymod_deep(6)
    lines = text.splitlines()
    c.eq("5 lines: 2 frames, the elision, 2 frames (no source lines)", len(lines), 5)
    c.true("an elision line '... N frames ...'", any(l.startswith("... ") and l.endswith(" ...") for l in lines),
           text)
    c.true("innermost frames are pymod_deep", lines[-1].endswith(" in pymod_deep"), text)
    memobs.track_python_stacks(max_frames=32, skip=["test_module.py"], source_width=0)
    text = memobs.stack_text()
    c.true("skip=[this file]: no frame of it", "test_module.py" not in text, text)
    c.raises("max_frames=0", ValueError, memobs.track_python_stacks, max_frames=0)
    e = c.raises("head + tail > max_frames", ValueError, memobs.track_python_stacks, max_frames=3, head=2, tail=2)
    c.true("the ValueError says what memobs refused", e is not None and "head" in e, e)
    c.raises("source_width=3", ValueError, memobs.track_python_stacks, source_width=3)
    c.raises("max_frames='5'", TypeError, memobs.track_python_stacks, max_frames="5")
    c.raises("priority=5", TypeError, memobs.track_python_stacks, priority=5)
    c.raises("root=['a']", TypeError, memobs.track_python_stacks, root=["a"])
    c.raises("unknown keyword", TypeError, memobs.track_python_stacks, frames=5)
    memobs.untrack_python_stacks()


if not FAILED:
    shutil.rmtree(TMP, ignore_errors=True)
else:
    print("    # scratch files kept in %s" % TMP)
sys.exit(1 if FAILED else 0)
