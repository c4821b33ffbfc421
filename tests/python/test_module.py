"""The Python package `memobs` (python/memobs/: the extension memobs._memobs
from _memobs.c, re-exported by __init__.py), checked from Python: the
package's layout (every public name of the extension at top level, the
same objects, __all__, __version__, stubs), exact totals per phase and direction, the dict shape
(nano-vllm's MemoryObserver.get_summary() keys, then memobs' extras), bad
arguments (the right exception, nothing recorded), reset, enable, TTFT/TPOT,
four recording threads, regions and markers (with, decorator, threads, odd
names, timing, problems), the allocation tracker and its reports, the JSON
summary, Python stacks on tracked allocations, and the PyTorch memory
snapshot (write_torch_snapshot) with those stacks.

Run with the built module on PYTHONPATH (tests/python/test_pymodule.sh does):
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
# memobs' directions after nano-vllm's: the storage tier (memobs_dir_t order)
DIRS = ["h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"]
STORAGE = ["h2s", "s2h", "d2s", "s2d"]
ALL_DIRS_KEYS = [d + k for d in DIRS for k in ("_bytes", "_count")]  # "total" and every phase, in order
ALL_DIRS = set(ALL_DIRS_KEYS)
LATENCY = {"count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "last_ns"}
TOP = {"total", "prefill", "decode", "unphased", "phases", "ttft", "tpot", "e2e", "requests", "problems",
       "counters", "memory", "tracker", "timed", "sizes", "regions", "identity", "enabled", "window_ns", "memobs_version",
       "manual", "attributed", "in_flight"}


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
    memobs.set_enabled(True)
    memobs.set_phase(None)
    memobs.reset()


def xfer():
    """The transfer part of the summary: what an error must leave unchanged."""
    s = memobs.get_summary()
    return {k: s[k] for k in ("total", "prefill", "decode", "unphased", "phases", "timed", "sizes")}


def dirs(**kw):
    """A "total" or per-phase dict: every direction's bytes and count, zero but for kw."""
    d = dict.fromkeys(ALL_DIRS_KEYS, 0)
    d.update(kw)
    return d


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


@check("package: memobs re-exports every public name of memobs._memobs (the same objects), __all__, stubs")
def _(c):
    import inspect
    from memobs import _memobs as ext
    pkg_dir = os.path.dirname(memobs.__file__)
    c.eq("memobs.__file__ is the package's __init__.py", os.path.basename(memobs.__file__), "__init__.py")
    c.eq("the extension's module name", ext.__name__, "memobs._memobs")
    c.true("the extension is a file of the package", os.path.dirname(ext.__file__) == pkg_dir,
           (ext.__file__, pkg_dir))
    public = sorted(n for n in dir(ext) if not n.startswith("_"))
    c.eq("__all__ is the extension's public names", sorted(memobs.__all__), public)
    c.eq("__all__ has no duplicates", len(set(memobs.__all__)), len(memobs.__all__))
    for n in public + ["_region_end"]:
        c.true("memobs.%s is memobs._memobs.%s" % (n, n), getattr(memobs, n, None) is getattr(ext, n), n)
    c.eq("__version__", memobs.__version__, ext.__version__)
    c.eq("region's __module__ (its repr and pickling name memobs.region)", memobs.region.__module__, "memobs")
    c.eq("region's repr", repr(memobs.region("pkg_repr")), "memobs.region('pkg_repr')")
    c.true("py.typed beside it", os.path.isfile(os.path.join(pkg_dir, "py.typed")), pkg_dir)
    stub = os.path.join(pkg_dir, "__init__.pyi")
    c.true("__init__.pyi beside it", os.path.isfile(stub), pkg_dir)
    if os.path.isfile(stub):
        with open(stub, encoding="utf-8") as f:
            text = f.read()
        for n in public + ["_region_end"]:
            obj = getattr(ext, n)
            want = "class %s" % n if inspect.isclass(obj) else "%s: int" % n if isinstance(obj, int) else "def %s(" % n
            c.true("the stub declares %s" % n, want in text, want)
        c.true("the stub declares __version__", "__version__: str" in text)
        # each stub's parameters are the C function's (its docstring's signature)
        import ast
        defs = {d.name: d for d in ast.parse(text).body if isinstance(d, ast.FunctionDef)}
        for n in public:
            obj = getattr(ext, n)
            if inspect.isclass(obj) or n not in defs:
                continue
            a = defs[n].args
            got = [x.arg for x in getattr(a, "posonlyargs", []) + a.args + a.kwonlyargs]
            c.eq("stub parameters of %s" % n, got, list(inspect.signature(obj).parameters))


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
    c.eq("total", s["total"], dirs(h2d_bytes=1324 + 2**40, h2d_count=5, d2h_bytes=777, d2h_count=3,
                                   d2d_bytes=55, d2d_count=2))
    c.eq("prefill", s["prefill"], {"h2d_bytes": 1024, "d2h_bytes": 7})
    c.eq("decode", s["decode"], {"h2d_bytes": 300 + 2**40, "d2h_bytes": 770})
    c.eq("phases.prefill", s["phases"]["prefill"], dirs(h2d_bytes=1024, h2d_count=3, d2h_bytes=7,
                                                        d2h_count=1, d2d_bytes=5, d2d_count=1))
    c.eq("phases.decode", s["phases"]["decode"], dirs(h2d_bytes=300 + 2**40, h2d_count=2, d2h_bytes=770,
                                                      d2h_count=2, d2d_bytes=50, d2d_count=1))
    c.eq("unphased", s["unphased"], dirs())


@check("get_summary(): nano-vllm's keys first, then memobs' extras")
def _(c):
    s = memobs.get_summary()
    c.eq("top-level keys", set(s), TOP)
    c.eq("the first three keys (nano-vllm's, in its order)", list(s)[:3], ["total", "prefill", "decode"])
    c.eq("total keys: nano-vllm's six first, in its order, then the storage tier's", list(s["total"]),
         ["h2d_bytes", "h2d_count", "d2h_bytes", "d2h_count", "d2d_bytes", "d2d_count",
          "h2s_bytes", "h2s_count", "s2h_bytes", "s2h_count", "d2s_bytes", "d2s_count", "s2d_bytes", "s2d_count"])
    c.eq("total keys include nano-vllm's", NANO_TOTAL - set(s["total"]), set())
    c.eq("prefill keys (nano-vllm)", set(s["prefill"]), NANO_PHASE)
    c.eq("decode keys (nano-vllm)", set(s["decode"]), NANO_PHASE)
    c.eq("unphased keys", list(s["unphased"]), ALL_DIRS_KEYS)
    c.eq("phases keys", set(s["phases"]), {"prefill", "decode", "unphased"})
    for p in ("prefill", "decode", "unphased"):
        c.eq("phases.%s keys" % p, list(s["phases"][p]), ALL_DIRS_KEYS)
    c.eq("timed keys", set(s["timed"]), {"prefill", "decode", "unphased", "in_flight_copies", "in_flight_bytes"})
    for p in ("prefill", "decode", "unphased"):
        c.eq("timed.%s keys (every direction)" % p, list(s["timed"][p]), DIRS)
    c.eq("sizes keys (every direction)", list(s["sizes"]), DIRS)
    for d in DIRS:
        c.eq("sizes.%s keys" % d, list(s["sizes"][d]), ["count", "bytes", "p50", "p90", "p99", "max", "buckets"])
    for t in ("ttft", "tpot", "e2e"):
        c.eq("%s keys" % t, set(s[t]), LATENCY)
    c.eq("identity keys", set(s["identity"]), {"job_id", "rank", "local_rank", "world_size", "host", "pid"})
    c.eq("identity.pid", s["identity"]["pid"], os.getpid())
    c.eq("identity rank/local_rank/world_size", (s["identity"]["rank"], s["identity"]["local_rank"],
                                                 s["identity"]["world_size"]), (0, 0, 1))
    c.eq("memory kinds", set(s["memory"]), {"device", "host", "pinned", "managed"})
    c.eq("enabled", s["enabled"], True)
    zero = dirs()
    c.eq("manual: the private memobs keeps no records apart (no LD_PRELOAD library attached)", s["manual"],
         {"apart": False, "total": zero, "prefill": zero, "decode": zero, "unphased": zero})
    c.eq("instance()", memobs.instance(), "private")
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
    c.eq("unphased", s["unphased"], dirs(h2d_bytes=11, h2d_count=1, d2h_bytes=17, d2h_count=1,
                                         d2d_bytes=13, d2d_count=1))
    c.eq("prefill", s["prefill"], {"h2d_bytes": 101, "d2h_bytes": 0})
    c.eq("decode", s["decode"], {"h2d_bytes": 0, "d2h_bytes": 200})
    c.eq("D2D by phase (prefill, decode, unphased)",
         [s["phases"][p]["d2d_bytes"] for p in ("prefill", "decode", "unphased")], [3, 4, 13])
    c.eq("total = prefill + decode + unphased", s["total"],
         {k: sum(s["phases"][p][k] for p in ("prefill", "decode", "unphased")) for k in ALL_DIRS})


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
        ("request_token(1.5) (an id is an int or a str)", TypeError, memobs.request_token, (1.5,), {}),
        ("request_token('') (a str id is not empty)", ValueError, memobs.request_token, ("",), {}),
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


# ---------------------------------------------------------------------------
# The storage tier, record_xfer, timed transfers, transfer sizes


def size_bucket(n):
    """memobs' log2 bucket of a transfer of n bytes: b with n in (2**(b-1), 2**b]; 0 for 0 and 1."""
    return (n - 1).bit_length() if n > 1 else 0


def size_model(sizes):
    """What get_summary()["sizes"][dir] holds after records of these sizes."""
    counts = {}
    for n in sizes:
        counts[size_bucket(n)] = counts.get(size_bucket(n), 0) + 1
    return {"count": len(sizes), "bytes": sum(sizes),
            "buckets": [[1 << b, counts[b]] for b in sorted(counts)]}


def size_quantile(sizes, q):
    """The bucket bound at the rank ceil(q * count) (1-based) of the records, sorted: 0 with none."""
    if not sizes:
        return 0
    rank = max(1, -(-len(sizes) * q // 100))
    return 1 << sorted(size_bucket(n) for n in sizes)[rank - 1]


@check("record_h2s/s2h/d2s/s2d: exact bytes and counts per phase and direction, as record_h2d")
def _(c):
    fresh()
    memobs.record_h2s(4096, True)
    memobs.record_h2s(1 << 20, False)
    memobs.record_s2h(8192, False)
    memobs.record_s2h(num_bytes=100, is_prefill=True)
    memobs.record_d2s(2**40, "decode")
    memobs.record_s2d(0, "unphased")  # zero bytes: counted as an op
    memobs.record_s2d(7, 1)  # nonzero: prefill
    memobs.set_phase("decode")
    memobs.record_h2s(11, None)
    memobs.record_s2h(12, None)
    memobs.record_d2s(13, None)
    memobs.record_s2d(14, None)
    memobs.set_phase(None)
    memobs.record_s2h(15, None)  # unphased
    memobs.record_h2d(1, True)  # the other directions are apart
    s = memobs.get_summary()
    c.eq("phases.prefill", s["phases"]["prefill"], dirs(h2s_bytes=4096, h2s_count=1, s2h_bytes=100, s2h_count=1,
                                                        s2d_bytes=7, s2d_count=1, h2d_bytes=1, h2d_count=1))
    c.eq("phases.decode", s["phases"]["decode"], dirs(h2s_bytes=(1 << 20) + 11, h2s_count=2, s2h_bytes=8192 + 12,
                                                      s2h_count=2, d2s_bytes=2**40 + 13, d2s_count=2, s2d_bytes=14,
                                                      s2d_count=1))
    c.eq("unphased", s["unphased"], dirs(s2d_bytes=0, s2d_count=1, s2h_bytes=15, s2h_count=1))
    c.eq("total = prefill + decode + unphased", s["total"],
         {k: sum(s["phases"][p][k] for p in ("prefill", "decode", "unphased")) for k in ALL_DIRS_KEYS})
    c.eq("nano-vllm's prefill/decode: H2D and D2H only", (s["prefill"], s["decode"]),
         ({"h2d_bytes": 1, "d2h_bytes": 0}, {"h2d_bytes": 0, "d2h_bytes": 0}))
    c.eq("every summary figure is an int", [type(v) for v in s["total"].values()], [int] * 14)


@check("record_xfer(dir, nbytes, phase=None): every direction by name and by DIR_* constant")
def _(c):
    fresh()
    c.eq("DIR_* constants (memobs_dir_t)", [getattr(memobs, "DIR_" + d.upper()) for d in DIRS], list(range(7)))
    want = {p: dirs() for p in ("prefill", "decode", "unphased")}
    k = 0
    for i, d in enumerate(DIRS):
        for how, phase, p in ((d, True, "prefill"), (i, False, "decode"), (d, "unphased", "unphased"),
                              (getattr(memobs, "DIR_" + d.upper()), "prefill", "prefill"), (d, None, "unphased")):
            k += 1
            memobs.record_xfer(how, 1000 * i + k, phase)
            want[p][d + "_bytes"] += 1000 * i + k
            want[p][d + "_count"] += 1
    memobs.set_phase("decode")
    memobs.record_xfer("s2h", 5)  # phase defaults to None: the thread's
    memobs.record_xfer(dir="h2s", nbytes=6, phase=None)
    memobs.set_phase(None)
    want["decode"]["s2h_bytes"] += 5
    want["decode"]["s2h_count"] += 1
    want["decode"]["h2s_bytes"] += 6
    want["decode"]["h2s_count"] += 1
    s = memobs.get_summary()
    for p in want:
        c.eq("phases.%s" % p, s["phases"][p], want[p])
    c.eq("nothing timed", [s["timed"][p][d]["count"] for p in want for d in DIRS], [0] * 21)


@check("record_xfer_ns(dir, nbytes, phase, ns): the transfer and its exact timed bytes, count and ns")
def _(c):
    fresh()
    memobs.record_xfer_ns("s2h", 4096, True, 1_000_000)
    memobs.record_xfer_ns("s2h", 8192, True, 3_000_000)
    memobs.record_xfer_ns(memobs.DIR_H2S, 1 << 30, "decode", 2_000_000_000)
    memobs.record_xfer_ns("s2d", 100, None, 5)  # unphased: the thread's
    memobs.record_xfer_ns("d2s", 300, False, 0)  # ns 0: recorded, not timed
    memobs.record_xfer_ns(dir="h2d", nbytes=64, phase="prefill", ns=2**56)  # at MEMOBS_MAX_NS
    s = memobs.get_summary()
    t = s["timed"]
    c.eq("timed.prefill.s2h", t["prefill"]["s2h"], {"bytes": 12288, "count": 2, "ns": 4_000_000})
    c.eq("timed.decode.h2s", t["decode"]["h2s"], {"bytes": 1 << 30, "count": 1, "ns": 2_000_000_000})
    c.eq("timed.unphased.s2d", t["unphased"]["s2d"], {"bytes": 100, "count": 1, "ns": 5})
    c.eq("timed.decode.d2s (ns 0: not timed)", t["decode"]["d2s"], {"bytes": 0, "count": 0, "ns": 0})
    c.eq("timed.prefill.h2d (an engine-timed H2D)", t["prefill"]["h2d"], {"bytes": 64, "count": 1, "ns": 2**56})
    c.eq("the transfers themselves", (s["phases"]["prefill"], s["phases"]["decode"], s["unphased"]),
         (dirs(s2h_bytes=12288, s2h_count=2, h2d_bytes=64, h2d_count=1),
          dirs(h2s_bytes=1 << 30, h2s_count=1, d2s_bytes=300, d2s_count=1), dirs(s2d_bytes=100, s2d_count=1)))
    others = [(p, d) for p in ("prefill", "decode", "unphased") for d in DIRS
              if (p, d) not in (("prefill", "s2h"), ("decode", "h2s"), ("unphased", "s2d"), ("prefill", "h2d"))]
    c.eq("every other timed figure is zero", [t[p][d] for p, d in others],
         [{"bytes": 0, "count": 0, "ns": 0}] * len(others))


@check("timed_transfer(dir, nbytes, phase=None): a with block timed and recorded; nothing when it raises")
def _(c):
    fresh()
    t = memobs.timed_transfer("s2h", 4096, True)
    c.eq("repr", repr(t), "memobs.timed_transfer('s2h', 4096, 'prefill')")
    c.eq("repr, phase None", repr(memobs.timed_transfer(memobs.DIR_D2S, 5)), "memobs.timed_transfer('d2s', 5)")
    c.eq("dir, nbytes, ns before", (t.dir, t.nbytes, t.ns), ("s2h", 4096, None))
    with t as entered:
        c.true("__enter__ returns the object", entered is t)
        end = time.perf_counter_ns() + 1_000_000  # 1 ms of work on CLOCK_MONOTONIC, memobs' clock
        while time.perf_counter_ns() < end:
            pass
    first = t.ns
    c.true("ns: at least the 1 ms the body ran", first is not None and first >= 1_000_000, first)
    with t:  # a second with of the same object: another transfer
        pass
    second = t.ns
    memobs.set_phase("decode")
    with memobs.timed_transfer("h2s", 100) as u:  # phase None: the thread's when the body ends
        pass
    memobs.set_phase(None)
    try:
        with memobs.timed_transfer("s2d", 1 << 20, False):
            raise KeyError("io failed")
    except KeyError as e:
        c.eq("the body's exception goes on", e.args, ("io failed",))
    else:
        c.true("the body's exception goes on", False)
    s = memobs.get_summary()
    c.eq("timed.prefill.s2h: two bodies, their ns", s["timed"]["prefill"]["s2h"],
         {"bytes": 8192, "count": 2, "ns": first + second})
    c.eq("timed.decode.h2s", s["timed"]["decode"]["h2s"], {"bytes": 100, "count": 1, "ns": u.ns})
    c.eq("the transfers", (s["phases"]["prefill"], s["phases"]["decode"], s["unphased"]),
         (dirs(s2h_bytes=8192, s2h_count=2), dirs(h2s_bytes=100, h2s_count=1), dirs()))
    c.eq("the body that raised: nothing recorded", (s["timed"]["decode"]["s2d"], s["total"]["s2d_count"]),
         ({"bytes": 0, "count": 0, "ns": 0}, 0))
    with memobs.timed_transfer("d2s", 1) as v:
        c.raises("entered twice", RuntimeError, v.__enter__)
    c.eq("the outer with still recorded once", memobs.get_summary()["total"]["d2s_count"], 1)
    c.raises("__exit__ without __enter__", RuntimeError, memobs.timed_transfer("d2s", 1).__exit__, None, None, None)
    c.eq("keywords", repr(memobs.timed_transfer(dir="h2d", nbytes=3, phase="unphased")),
         "memobs.timed_transfer('h2d', 3, 'unphased')")


@check("storage records, record_xfer, record_xfer_ns, timed_transfer: bad arguments raise, nothing recorded")
def _(c):
    fresh()
    memobs.record_s2h(123, True)
    memobs.record_xfer_ns("h2s", 10, None, 20)
    before = xfer()

    class Boom:
        def __bool__(self):
            raise RuntimeError("boom")

    cases = [
        ("record_h2s(-1, True)", ValueError, memobs.record_h2s, (-1, True), {}),
        ("record_s2h(2**56 + 1, True)", ValueError, memobs.record_s2h, (2**56 + 1, True), {}),
        ("record_d2s(2**64, False)", ValueError, memobs.record_d2s, (2**64, False), {}),
        ("record_s2d('100', True)", TypeError, memobs.record_s2d, ("100", True), {}),
        ("record_s2d(1.5, True)", TypeError, memobs.record_s2d, (1.5, True), {}),
        ("record_h2s(True, True)", TypeError, memobs.record_h2s, (True, True), {}),
        ("record_s2h(100) (is_prefill is required)", TypeError, memobs.record_s2h, (100,), {}),
        ("record_d2s(1, 'prefil')", ValueError, memobs.record_d2s, (1, "prefil"), {}),
        ("record_s2d(1, <__bool__ raises>)", RuntimeError, memobs.record_s2d, (1, Boom()), {}),
        ("record_h2s(1, True, 3)", TypeError, memobs.record_h2s, (1, True, 3), {}),
        ("record_xfer('x2y', 1)", ValueError, memobs.record_xfer, ("x2y", 1), {}),
        ("record_xfer('H2S', 1) (names are lower case)", ValueError, memobs.record_xfer, ("H2S", 1), {}),
        ("record_xfer(7, 1)", ValueError, memobs.record_xfer, (7, 1), {}),
        ("record_xfer(-1, 1)", ValueError, memobs.record_xfer, (-1, 1), {}),
        ("record_xfer(True, 1)", TypeError, memobs.record_xfer, (True, 1), {}),
        ("record_xfer(3.0, 1)", TypeError, memobs.record_xfer, (3.0, 1), {}),
        ("record_xfer(None, 1)", TypeError, memobs.record_xfer, (None, 1), {}),
        ("record_xfer('s2h', -5)", ValueError, memobs.record_xfer, ("s2h", -5), {}),
        ("record_xfer('s2h', 1.0)", TypeError, memobs.record_xfer, ("s2h", 1.0), {}),
        ("record_xfer('s2h', 1, 'warmup')", ValueError, memobs.record_xfer, ("s2h", 1, "warmup"), {}),
        ("record_xfer('s2h', 1, 2)", TypeError, memobs.record_xfer, ("s2h", 1, 2), {}),
        ("record_xfer('s2h')", TypeError, memobs.record_xfer, ("s2h",), {}),
        ("record_xfer('s2h', 1, None, 5) (no ns: record_xfer_ns)", TypeError, memobs.record_xfer,
         ("s2h", 1, None, 5), {}),
        ("record_xfer('s2h', 1, is_prefill=True)", TypeError, memobs.record_xfer, ("s2h", 1), {"is_prefill": True}),
        ("record_xfer_ns('s2h', 1, None, -1)", ValueError, memobs.record_xfer_ns, ("s2h", 1, None, -1), {}),
        ("record_xfer_ns('s2h', 1, None, 2**56 + 1)", ValueError, memobs.record_xfer_ns,
         ("s2h", 1, None, 2**56 + 1), {}),
        ("record_xfer_ns('s2h', 1, None, 1.5)", TypeError, memobs.record_xfer_ns, ("s2h", 1, None, 1.5), {}),
        ("record_xfer_ns('s2h', 1, None) (ns is required)", TypeError, memobs.record_xfer_ns, ("s2h", 1, None), {}),
        ("record_xfer_ns('s2h', 1) (phase is required)", TypeError, memobs.record_xfer_ns, ("s2h", 1), {}),
        ("record_xfer_ns('nvme', 1, None, 5)", ValueError, memobs.record_xfer_ns, ("nvme", 1, None, 5), {}),
        ("record_xfer_ns('s2h', -1, None, 5)", ValueError, memobs.record_xfer_ns, ("s2h", -1, None, 5), {}),
        ("record_xfer_ns('s2h', 1, 'x', 5)", ValueError, memobs.record_xfer_ns, ("s2h", 1, "x", 5), {}),
        ("timed_transfer('disk', 1)", ValueError, memobs.timed_transfer, ("disk", 1), {}),
        ("timed_transfer('s2h', -1)", ValueError, memobs.timed_transfer, ("s2h", -1), {}),
        ("timed_transfer('s2h', '1')", TypeError, memobs.timed_transfer, ("s2h", "1"), {}),
        ("timed_transfer('s2h', 1, 'warmup')", ValueError, memobs.timed_transfer, ("s2h", 1, "warmup"), {}),
        ("timed_transfer('s2h')", TypeError, memobs.timed_transfer, ("s2h",), {}),
        ("timed_transfer('s2h', 1, None, 4)", TypeError, memobs.timed_transfer, ("s2h", 1, None, 4), {}),
        ("timed_transfer('s2h', 1, ns=4)", TypeError, memobs.timed_transfer, ("s2h", 1), {"ns": 4}),
    ]
    for what, exc, fn, args, kwargs in cases:
        msg = c.raises(what, exc, fn, *args, **kwargs)
        if msg is not None and exc is not RuntimeError:
            c.true("%s: message names the function" % what, fn.__name__ in msg, msg)
    msg = c.raises("record_xfer('x2y', 1): the message lists the names", ValueError, memobs.record_xfer, "x2y", 1)
    c.true("the message lists the seven names", msg is not None and all('"%s"' % d in msg for d in DIRS), msg)
    c.eq("transfers, timed and sizes after the bad calls", xfer(), before)
    c.true("no exception left set: a later call works", memobs.record_s2d(1, True) is None)


@check("the storage tier off (set_enabled(False)) and after reset(): nothing, then zero")
def _(c):
    fresh()
    memobs.record_xfer_ns("s2h", 10, True, 10)
    memobs.set_enabled(False)
    memobs.record_h2s(1, True)
    memobs.record_xfer("d2s", 2)
    memobs.record_xfer_ns("s2h", 3, True, 4)
    with memobs.timed_transfer("s2d", 5):
        pass
    s = memobs.get_summary()
    memobs.set_enabled(True)
    c.eq("total while off: the record before only", s["total"], dirs(s2h_bytes=10, s2h_count=1))
    c.eq("timed while off", s["timed"]["prefill"]["s2h"], {"bytes": 10, "count": 1, "ns": 10})
    c.eq("sizes while off", [s["sizes"][d]["count"] for d in DIRS], [0, 0, 0, 0, 1, 0, 0])
    memobs.reset()
    s = memobs.get_summary()
    c.eq("total after reset()", s["total"], dirs())
    c.eq("timed after reset()", s["timed"]["prefill"]["s2h"], {"bytes": 0, "count": 0, "ns": 0})
    c.eq("sizes after reset()", s["sizes"]["s2h"], {"count": 0, "bytes": 0, "p50": 0, "p90": 0, "p99": 0, "max": 0,
                                                    "buckets": []})


@check("sizes: exact log2 bucket counts, bytes, percentiles and max per direction, against a model")
def _(c):
    import random
    fresh()
    rng = random.Random(30)
    edges = [0, 1, 2, 3, 4, 5, 7, 8, 9, 4095, 4096, 4097, 1 << 20, (1 << 20) + 1, 2**40, 2**56 - 1, 2**56]
    recorded = {d: [] for d in DIRS}
    calls = [lambda d, n: getattr(memobs, "record_" + d)(n, True),
             lambda d, n: getattr(memobs, "record_" + d)(n, None),
             lambda d, n: memobs.record_xfer(d, n, False),
             lambda d, n: memobs.record_xfer_ns(d, n, "decode", 17)]
    for i, d in enumerate(DIRS):
        sizes = list(edges) if i % 2 == 0 else []
        sizes += [rng.choice([rng.randrange(0, 1 << rng.randrange(1, 57)), 1 << rng.randrange(0, 57)])
                  for _ in range(200 + 50 * i)]
        for j, n in enumerate(sizes):
            calls[(i + j) % 4](d, n)
        recorded[d] = sizes
    with memobs.timed_transfer("s2h", 3000):  # a timed_transfer is a record too
        pass
    recorded["s2h"].append(3000)
    s = memobs.get_summary()
    for d in DIRS:
        want = size_model(recorded[d])
        want.update({"p50": size_quantile(recorded[d], 50), "p90": size_quantile(recorded[d], 90),
                     "p99": size_quantile(recorded[d], 99), "max": 1 << max(size_bucket(n) for n in recorded[d])})
        got = s["sizes"][d]
        for k in ("count", "bytes", "buckets", "p50", "p90", "p99", "max"):
            c.eq("sizes.%s.%s" % (d, k), got[k], want[k])
        c.eq("sizes.%s.count == the direction's records" % d, got["count"], s["total"][d + "_count"])
        c.eq("sizes.%s.bytes == the direction's bytes" % d, got["bytes"], s["total"][d + "_bytes"])


@check("4 threads x 20000 storage records (record_h2s, record_xfer, record_xfer_ns, timed_transfer): exact totals, timed and sizes")
def _(c):
    fresh()
    n = 20_000
    errors = []
    timed_ns = [0]
    start = threading.Barrier(4)

    def worker(k):
        try:
            start.wait()
            if k == 0:
                for i in range(n):
                    memobs.record_h2s((i & 0xff) + 1, True)
            elif k == 1:  # the thread's own phase
                memobs.set_phase("decode")
                for i in range(n):
                    memobs.record_xfer("s2h", (i & 0xff) + 1)
            elif k == 2:
                for i in range(n):
                    memobs.record_xfer_ns(memobs.DIR_D2S, (i & 0xff) + 1, False, 3)
            else:
                total = 0
                for i in range(n):
                    with memobs.timed_transfer("s2d", (i & 0xff) + 1, "prefill") as t:
                        pass
                    total += t.ns
                timed_ns[0] = total
        except Exception as e:  # shown below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.eq("errors in threads", errors, [])
    sizes = [(i & 0xff) + 1 for i in range(n)]
    per = sum(sizes)
    s = memobs.get_summary()
    c.eq("phases.prefill", s["phases"]["prefill"], dirs(h2s_bytes=per, h2s_count=n, s2d_bytes=per, s2d_count=n))
    c.eq("phases.decode", s["phases"]["decode"], dirs(s2h_bytes=per, s2h_count=n, d2s_bytes=per, d2s_count=n))
    c.eq("unphased", s["unphased"], dirs())
    c.eq("timed.decode.d2s", s["timed"]["decode"]["d2s"], {"bytes": per, "count": n, "ns": 3 * n})
    c.eq("timed.prefill.s2d: the sum of the bodies' ns", s["timed"]["prefill"]["s2d"],
         {"bytes": per, "count": n, "ns": timed_ns[0]})
    want = size_model(sizes)
    for d in STORAGE:
        c.eq("sizes.%s buckets, count, bytes" % d, {k: s["sizes"][d][k] for k in want}, want)
    c.eq("this thread's phase untouched by the workers'", memobs.get_phase(), None)


@check("reset() and complete_reset() start a new window")
def _(c):
    fresh()
    memobs.record_h2d(10, True)
    memobs.record_d2d(10, None)
    memobs.ttft_start()
    memobs.ttft_stop()
    memobs.reset()
    s = memobs.get_summary()
    c.eq("total after reset()", s["total"], dirs())
    c.eq("unphased after reset()", s["unphased"], dirs())
    c.eq("ttft count after reset()", s["ttft"]["count"], 0)
    memobs.record_d2h(3, False)
    c.eq("records after reset() count again", memobs.get_summary()["decode"]["d2h_bytes"], 3)
    memobs.complete_reset()
    c.eq("total after complete_reset()", memobs.get_summary()["total"], dirs())


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
    c.eq("total while disabled", s["total"], dirs(h2d_bytes=1, h2d_count=1))
    memobs.enable()
    c.eq("is_enabled() after enable()", memobs.is_enabled(), True)
    memobs.record_h2d(2, True)
    c.eq("h2d bytes after enable()", memobs.get_summary()["total"]["h2d_bytes"], 3)
    memobs.enable(on=False)
    c.eq("enable(on=False)", memobs.is_enabled(), False)
    memobs.enable(on=True)


@check("set_enabled(on) returns the previous setting, get_enabled() reads it (enable/is_enabled: their old names)")
def _(c):
    fresh()
    c.eq("get_enabled() at the start", memobs.get_enabled(), True)
    c.eq("set_enabled(False) returns True (it was on)", memobs.set_enabled(False), True)
    c.eq("get_enabled() after set_enabled(False)", memobs.get_enabled(), False)
    memobs.record_h2d(1000, True)
    c.eq("nothing recorded while off", memobs.get_summary()["total"]["h2d_bytes"], 0)
    c.eq("set_enabled(on=True) returns False", memobs.set_enabled(on=True), False)
    memobs.record_h2d(7, True)
    c.eq("recorded once on again", memobs.get_summary()["total"]["h2d_bytes"], 7)
    c.raises("set_enabled() (on is required)", TypeError, memobs.set_enabled)
    c.eq("get_enabled is is_enabled's function", memobs.get_enabled(), memobs.is_enabled())


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
# Regions and markers


def region_stats(name):
    """get_regions()'s row of name (a dict), or None when it was not used in the window."""
    rows = [r for r in memobs.get_regions() if r["name"] == name]
    return rows[0] if rows else None


def region_count(name):
    r = region_stats(name)
    return 0 if r is None else r["count"]


@check("region: `with` nests (depth 2 inside, 0 after), counts per name")
def _(c):
    fresh()
    outer = memobs.region("pymod_outer")
    inner = memobs.region("pymod_inner")
    c.eq("depth before", memobs.region_depth(), 0)
    with outer as x:
        c.true("`with r as x`: x is r", x is outer, x)
        c.eq("depth inside one", memobs.region_depth(), 1)
        with inner:
            c.eq("depth inside two", memobs.region_depth(), 2)
        with inner:
            with inner:  # one object entered twice, nested: no state of its own
                c.eq("depth with the same region entered twice", memobs.region_depth(), 3)
        c.eq("depth back to one", memobs.region_depth(), 1)
    c.eq("depth after", memobs.region_depth(), 0)
    c.eq("pymod_outer count", region_count("pymod_outer"), 1)
    c.eq("pymod_inner count", region_count("pymod_inner"), 3)
    c.eq("name and repr", (outer.name, repr(outer)), ("pymod_outer", "memobs.region('pymod_outer')"))
    c.true("id >= 1", isinstance(outer.id, int) and outer.id >= 1, outer.id)
    c.eq("the same name: the same id", memobs.region("pymod_outer").id, outer.id)
    c.eq("keyword name=", memobs.region(name="pymod_outer").id, outer.id)
    c.true("region(name) again: the same object (no second interning)", memobs.region("pymod_outer") is outer)

    class Name(str):
        pass

    sub = memobs.region(Name("pymod_outer"))
    c.eq("a str subclass: its own object, the same name and id", (sub is outer, sub.name, sub.id),
         (False, "pymod_outer", outer.id))
    c.true("an instance of memobs.region", isinstance(outer, memobs.region), type(outer))
    c.eq("no unmatched end, nothing too deep, no name dropped",
         {k: memobs.get_summary()["problems"][k] for k in ("region_unmatched_ends", "region_too_deep",
                                                            "region_names_dropped")},
         {"region_unmatched_ends": 0, "region_too_deep": 0, "region_names_dropped": 0})


@check("region: an exception in the body ends the region and propagates unchanged")
def _(c):
    fresh()
    r = memobs.region("pymod_raises")
    err = KeyError("pymod")
    got = None
    try:
        with r:
            with memobs.region("pymod_raises_inner"):
                raise err
    except KeyError as e:
        got = e
    c.true("the same exception object propagates", got is err, repr(got))
    c.eq("depth after the exception", memobs.region_depth(), 0)
    c.eq("pymod_raises count", region_count("pymod_raises"), 1)
    c.eq("pymod_raises_inner count", region_count("pymod_raises_inner"), 1)
    for _ in range(2):
        try:
            with r:
                1 / 0
        except ZeroDivisionError:
            pass
    c.eq("pymod_raises count after two more", region_count("pymod_raises"), 3)
    c.eq("depth", memobs.region_depth(), 0)


@memobs.region("pymod_decorated")
def pymod_decorated(a, b=10, *rest, k=None):
    """Doc of pymod_decorated."""
    return (a, b, rest, k, memobs.region_depth())


@memobs.region("pymod_decorated_outer")
def pymod_decorated_outer(n):
    return [pymod_decorated(i) for i in range(n)]


@memobs.region("pymod_decorated_raises")
def pymod_decorated_raises():
    raise ValueError("pymod decorated")


@memobs.region("pymod_recursive")
def pymod_recursive(k):
    return memobs.region_depth() if k == 0 else pymod_recursive(k - 1)


class PymodDecoratedMethods:
    @memobs.region("pymod_method")
    def method(self, x):
        """Doc of method."""
        return (self, x)

    @staticmethod
    @memobs.region("pymod_static")
    def static(x):
        return x * 2

    @classmethod
    @memobs.region("pymod_classmethod")
    def klass(cls, x):
        return (cls, x)


@check("region as a decorator: a region per call; return value, arguments, __name__, __doc__, __wrapped__ kept")
def _(c):
    import functools
    import inspect
    import pickle
    import weakref

    fresh()
    c.eq("return value, positional and keyword arguments, depth inside",
         pymod_decorated(1, 2, 3, 4, k="x"), (1, 2, (3, 4), "x", 1))
    c.eq("defaults", pymod_decorated(7), (7, 10, (), None, 1))
    for _ in range(3):
        pymod_decorated(a=0)
    c.eq("pymod_decorated count: one per call", region_count("pymod_decorated"), 5)
    c.eq("__name__", pymod_decorated.__name__, "pymod_decorated")
    c.eq("__qualname__", pymod_decorated.__qualname__, "pymod_decorated")
    c.eq("__module__", pymod_decorated.__module__, __name__)
    c.eq("__doc__", pymod_decorated.__doc__, "Doc of pymod_decorated.")
    c.true("__wrapped__ is the function", inspect.isfunction(pymod_decorated.__wrapped__)
           and pymod_decorated.__wrapped__.__name__ == "pymod_decorated", pymod_decorated.__wrapped__)
    c.eq("inspect.signature follows __wrapped__", str(inspect.signature(pymod_decorated)),
         "(a, b=10, *rest, k=None)")
    c.eq(".region", pymod_decorated.region.name, "pymod_decorated")
    c.true("pickled by reference (multiprocessing spawn)",
           pickle.loads(pickle.dumps(pymod_decorated)) is pymod_decorated)
    c.true("weakref to it", weakref.ref(pymod_decorated)() is pymod_decorated)
    c.eq("functools.wraps on top of it keeps its name", functools.wraps(pymod_decorated)(lambda: 0).__name__,
         "pymod_decorated")

    fresh()
    c.eq("nested decorated calls: depth 2 in the inner one",
         [t[4] for t in pymod_decorated_outer(4)], [2, 2, 2, 2])
    c.eq("outer count", region_count("pymod_decorated_outer"), 1)
    c.eq("inner count", region_count("pymod_decorated"), 4)
    with memobs.region("pymod_decorated_with"):
        c.eq("decorated call inside a with: depth 2", pymod_decorated(0)[4], 2)
    c.eq("recursion 5 deep: depth 6 at the bottom", pymod_recursive(5), 6)
    c.eq("pymod_recursive count", region_count("pymod_recursive"), 6)

    e = c.raises("exception in a decorated function", ValueError, pymod_decorated_raises)
    c.eq("its message", e, "pymod decorated")
    c.eq("depth after it", memobs.region_depth(), 0)
    c.eq("pymod_decorated_raises count", region_count("pymod_decorated_raises"), 1)

    obj = PymodDecoratedMethods()
    c.eq("method: self bound", obj.method(3), (obj, 3))
    c.eq("method through the class", PymodDecoratedMethods.method(obj, 4), (obj, 4))
    c.eq("method __doc__", PymodDecoratedMethods.method.__doc__, "Doc of method.")
    c.eq("staticmethod over it", (PymodDecoratedMethods.static(5), obj.static(6)), (10, 12))
    c.eq("classmethod over it", obj.klass(1), (PymodDecoratedMethods, 1))
    c.eq("counts (method, static, classmethod)",
         [region_count(n) for n in ("pymod_method", "pymod_static", "pymod_classmethod")], [2, 2, 1])
    r = memobs.region("pymod_decorate_later")
    f = r(lambda x: x + 1)
    c.eq("r(callable) works on any callable", (f(1), f(2), region_count("pymod_decorate_later")), (2, 3, 2))
    c.eq("a builtin wrapped", memobs.region("pymod_builtin")(len)([1, 2, 3]), 3)
    c.eq("depth after everything", memobs.region_depth(), 0)


@check("regions from 4 threads x 1000 entries: exact counts, each thread its own stack")
def _(c):
    fresh()
    n = 1000
    shared = memobs.region("pymod_thr_shared")
    errors = []
    start = threading.Barrier(4)

    @memobs.region("pymod_thr_decorated")
    def work(k):
        return memobs.region_depth()

    def worker(k):
        try:
            own = memobs.region("pymod_thr_%d" % k)
            bad = 0
            start.wait()
            for _ in range(n):
                with shared:
                    with own:
                        if memobs.region_depth() != 2:
                            bad += 1
                        if work(k) != 3:
                            bad += 1
                memobs.mark(own)
                if memobs.region_depth() != 0:
                    bad += 1
            if bad:
                errors.append("thread %d: %d wrong depths" % (k, bad))
        except Exception as e:  # shown below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.eq("errors in threads", errors, [])
    c.eq("pymod_thr_shared count (one object, 4 threads)", region_count("pymod_thr_shared"), 4 * n)
    c.eq("pymod_thr_decorated count", region_count("pymod_thr_decorated"), 4 * n)
    for k in range(4):
        row = region_stats("pymod_thr_%d" % k) or {}
        c.eq("pymod_thr_%d count, marks" % k, (row.get("count"), row.get("marks")), (n, n))
    c.eq("unmatched ends", memobs.get_summary()["problems"]["region_unmatched_ends"], 0)
    c.eq("this thread's depth", memobs.region_depth(), 0)


@check("mark(name) and mark(region): counted per name, no region opened")
def _(c):
    fresh()
    r = memobs.region("pymod_mark_region")
    for _ in range(3):
        memobs.mark("pymod_mark")
    memobs.mark(r)
    memobs.mark(r)
    memobs.mark("pymod_mark_region")  # by name: the same row
    with r:
        pass
    c.eq("depth after marks", memobs.region_depth(), 0)
    c.eq("pymod_mark", region_stats("pymod_mark"), {"name": "pymod_mark", "count": 0, "timed": 0, "total_ns": 0,
                                                    "mean_ns": 0, "max_ns": 0, "marks": 3, "collective": False})
    row = region_stats("pymod_mark_region") or {}
    c.eq("pymod_mark_region count and marks", (row.get("count"), row.get("marks")), (1, 3))
    c.raises("mark(1)", TypeError, memobs.mark, 1)
    c.raises("mark(b'x')", TypeError, memobs.mark, b"x")
    c.raises("mark('')", ValueError, memobs.mark, "")
    c.raises("mark('a\\0b')", ValueError, memobs.mark, "a\0b")
    c.raises("mark()", TypeError, memobs.mark)
    memobs.set_enabled(False)
    memobs.mark("pymod_mark")
    c.raises("mark(1) while disabled: still a TypeError", TypeError, memobs.mark, 1)
    memobs.set_enabled(True)
    c.eq("pymod_mark marks: none while disabled", region_stats("pymod_mark")["marks"], 3)


@check("region names: odd characters kept, lone surrogate as U+FFFD, cut to 63 bytes; JSON agrees")
def _(c):
    fresh()
    odd = ["<script>alert('x')</script>", 'say "hi" \\ back\\slash', "tab\there, newline\nthere", "café ☕ 😀",
           "nccl all_reduce"]
    for name in odd:
        r = memobs.region(name)
        c.eq("kept as given: %r" % name, r.name, name)
        with r:
            pass
    r = memobs.region("pymod_bad\udcffsurrogate")
    c.eq("a lone surrogate becomes one U+FFFD", r.name, "pymod_bad\ufffdsurrogate")
    memobs.mark("pymod_bad\udcffsurrogate")
    memobs.mark("\ud800")
    c.eq("name of a marker that is one lone surrogate", memobs.region("\ud800").name, "\ufffd")
    long_ascii = "pymod_long_" + "x" * 189
    r = memobs.region(long_ascii)
    c.eq("200 ASCII characters: the first 63", (len(long_ascii), r.name), (200, long_ascii[:63]))
    c.eq("the cut name and the long one are one name", memobs.region(long_ascii[:63]).id, r.id)
    c.eq("2-byte characters: cut at a character boundary (31 x 2 bytes)",
         memobs.region("é" * 100).name, "é" * 31)
    c.eq("4-byte characters: 15 x 4 bytes", memobs.region("😀" * 40).name, "😀" * 15)
    with r:
        pass
    rows = {x["name"]: x for x in memobs.get_regions()}
    for name in odd + [long_ascii[:63]]:
        c.eq("get_regions count of %r" % name, rows.get(name, {}).get("count"), 1)
    c.eq("marks of the surrogate name", rows.get("pymod_bad\ufffdsurrogate", {}).get("marks"), 1)
    c.eq("'nccl all_reduce' is a collective", rows.get("nccl all_reduce", {}).get("collective"), True)
    c.eq("'<script>...' is not", rows.get(odd[0], {}).get("collective"), False)
    path = os.path.join(TMP, "regions.json")
    memobs.write_summary(path, "json")
    j = json.load(open(path, encoding="utf-8"))
    c.eq("the JSON summary's regions == get_regions()", j["regions"], memobs.get_regions())
    text_path = os.path.join(TMP, "regions.txt")
    memobs.write_summary(text_path)
    c.true("the text summary names <script>", "<script>alert('x')</script>" in read(text_path), read(text_path))


@check("region()/mark(): TypeError and ValueError for bad names and bad decorations")
def _(c):
    for bad in (None, 1, b"pymod", ["a"], 1.5):
        c.raises("region(%r)" % (bad,), TypeError, memobs.region, bad)
    e = c.raises("@memobs.region without a name", TypeError, memobs.region, pymod_recursive)
    c.true("the message says how to decorate", e is not None and '@memobs.region("' in e, e)
    c.raises("region('')", ValueError, memobs.region, "")
    c.raises("region('a\\0b')", ValueError, memobs.region, "a\0b")
    c.raises("region()", TypeError, memobs.region)
    c.raises("region('a', 'b')", TypeError, memobs.region, "a", "b")
    c.raises("region(nom='a')", TypeError, memobs.region, nom="a")
    r = memobs.region("pymod_bad_decoration")
    c.raises("r(5): not callable", TypeError, r, 5)
    c.raises("r(): no function", TypeError, r)
    c.raises("r(f, g)", TypeError, r, len, len)

    def gen():
        yield 1

    async def coro():
        return 1

    async def agen():
        yield 1

    for fn in (gen, coro, agen):
        e = c.raises("decorating %s" % fn.__name__, TypeError, r, fn)
        c.true("the message says why (%s)" % fn.__name__, e is not None and "generator or coroutine" in e, e)
    c.raises("name is read-only", AttributeError, setattr, r, "name", "x")
    c.eq("depth", memobs.region_depth(), 0)


@check("region_timing(): timed follows it; on=None reads it; totals and means consistent")
def _(c):
    fresh()
    c.eq("region_timing() reads: on by default", memobs.region_timing(), True)
    r = memobs.region("pymod_timing")
    for _ in range(3):
        with r:
            time.sleep(0.001)
    c.eq("region_timing(False) returns the previous setting", memobs.region_timing(False), True)
    c.eq("region_timing() now", memobs.region_timing(), False)
    c.eq("region_timing(on=None) changes nothing", memobs.region_timing(on=None), False)
    for _ in range(2):
        with r:
            pass
    row = region_stats("pymod_timing")
    c.eq("count, timed after 3 timed + 2 untimed", (row["count"], row["timed"]), (5, 3))
    c.true("total_ns > 0 (three sleeps timed)", row["total_ns"] > 0, row)
    c.eq("mean_ns = total_ns // timed", row["mean_ns"], row["total_ns"] // 3)
    c.true("0 < max_ns <= total_ns", 0 < row["max_ns"] <= row["total_ns"], row)
    c.eq("region_timing(True) returns the previous setting", memobs.region_timing(True), False)
    with r:
        pass
    row = region_stats("pymod_timing")
    c.eq("count, timed after timing is back on", (row["count"], row["timed"]), (6, 4))
    c.eq("region_timing(0) (a truth value)", memobs.region_timing(0), True)
    c.eq("region_timing(1)", memobs.region_timing(on=1), False)
    c.raises("region_timing(1, 2)", TypeError, memobs.region_timing, 1, 2)
    c.eq("on at the end", memobs.region_timing(), True)
    c.eq("region_get_timing() (the 1.0 name)", memobs.region_get_timing(), True)
    c.eq("region_set_timing(False) returns the previous setting", memobs.region_set_timing(False), True)
    c.eq("region_get_timing() now", memobs.region_get_timing(), False)
    c.eq("region_timing() agrees", memobs.region_timing(), False)
    c.eq("region_set_timing(on=True)", memobs.region_set_timing(on=True), False)
    c.raises("region_set_timing() (on is required)", TypeError, memobs.region_set_timing)


@check("get_summary(): 'regions' == get_regions(), the three region problems, reset, enable(False)")
def _(c):
    fresh()
    c.eq("regions after reset()", (memobs.get_regions(), memobs.get_summary()["regions"]), ([], []))
    a, b = memobs.region("pymod_sum_a"), memobs.region("pymod_sum_b")
    for _ in range(4):
        with a:
            with b:
                pass
    memobs.mark(b)
    s = memobs.get_summary()
    c.eq("get_summary()['regions'] == get_regions()", s["regions"], memobs.get_regions())
    c.eq("names and counts", [(x["name"], x["count"], x["marks"]) for x in s["regions"]],
         [("pymod_sum_a", 4, 0), ("pymod_sum_b", 4, 1)])
    c.eq("row keys", set(s["regions"][0]), {"name", "count", "timed", "total_ns", "mean_ns", "max_ns", "marks",
                                            "collective"})
    c.true("every figure an int", all(type(x[k]) is int for x in s["regions"]
                                      for k in ("count", "timed", "total_ns", "mean_ns", "max_ns", "marks")),
           s["regions"])
    path = os.path.join(TMP, "problems.json")
    memobs.write_summary(path, "json")
    j = json.load(open(path))
    c.eq("problems: the JSON summary's keys", set(s["problems"]), set(j["problems"]))
    c.eq("problems: the JSON summary's values", s["problems"], j["problems"])
    memobs.reset()
    c.eq("reset(): no region used in the new window", memobs.get_regions(), [])
    with a:
        pass
    c.eq("a region object still works after reset()", region_count("pymod_sum_a"), 1)
    memobs.set_enabled(False)
    with a:
        c.eq("disabled: the stack still kept", memobs.region_depth(), 1)
    memobs.mark(a)
    memobs.set_enabled(True)
    c.eq("disabled: nothing counted", (region_count("pymod_sum_a"), region_stats("pymod_sum_a")["marks"]), (1, 0))
    c.eq("depth", memobs.region_depth(), 0)


@check("region problems: an extra C-level end inside `with` (unmatched end at exit), too deep")
def _(c):
    fresh()
    r = memobs.region("pymod_unmatched")
    with r:
        memobs._region_end()  # C code ends the region the with opened
        c.eq("depth after the C-level end", memobs.region_depth(), 0)
    c.eq("depth after the with", memobs.region_depth(), 0)
    s = memobs.get_summary()
    c.eq("problems.region_unmatched_ends: the with's exit found nothing open", s["problems"]["region_unmatched_ends"],
         1)
    c.eq("the region was ended once", region_count("pymod_unmatched"), 1)
    memobs._region_end()
    c.eq("a bare extra end counts too", memobs.get_summary()["problems"]["region_unmatched_ends"], 2)

    fresh()
    depth = []

    def nest(k):
        if k == 0:
            depth.append(memobs.region_depth())
            return
        with memobs.region("pymod_deep"):
            nest(k - 1)

    nest(40)
    s = memobs.get_summary()
    c.eq("depth at 40 nested regions", depth, [40])
    c.eq("depth after", memobs.region_depth(), 0)
    c.eq("problems.region_too_deep (40 - 32)", s["problems"]["region_too_deep"], 8)
    row = region_stats("pymod_deep") or {}
    c.eq("count and timed: the 32 kept on the stack", (row.get("count"), row.get("timed")), (32, 32))
    c.eq("no unmatched end", s["problems"]["region_unmatched_ends"], 0)


@check("region names past MEMOBS_MAX_REGIONS (a fresh interpreter): \"(other)\", counted as dropped")
def _(c):
    import subprocess

    code = r'''
import json, memobs
rs = [memobs.region("pymod_full_%d" % i) for i in range(300)]
other = [r for r in rs if r.id == 0]
assert memobs.region("pymod_full_299") is rs[299]

for r in rs[-3:]:
    with r:
        pass
memobs.mark("pymod_full_new")
s = memobs.get_summary()
print(json.dumps({"other": len(other), "names": sorted(set(r.name for r in other)),
                  "dropped": s["problems"]["region_names_dropped"],
                  "rows": [(x["name"], x["count"], x["marks"]) for x in s["regions"]]}))
'''
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    c.eq("exit status", p.returncode, 0)
    if p.returncode != 0:
        c.details.append(p.stderr[-800:])
        return
    got = json.loads(p.stdout)
    # 256 names: "(other)" and 255 of ours
    c.eq("regions beyond the table", got["other"], 300 - 255)
    c.eq("their name", got["names"], ["(other)"])
    c.eq("region_names_dropped: 3 begins and a marker", got["dropped"], 4)
    c.eq("rows", got["rows"], [["(other)", 3, 1]])
    c.true("memobs said so once on stderr", "MEMOBS_MAX_REGIONS" in p.stderr, p.stderr[-400:])


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


@check("get_allocations() and device_bytes(): the live blocks with their fields and stacks, per-device bytes")
def _(c):
    fresh()
    memobs.untrack_python_stacks()
    c.eq("nothing live: []", memobs.get_allocations(), [])
    c.eq("device_bytes(5) (no test uses device 5): (0, 0)", memobs.device_bytes(5), (0, 0))
    memobs.set_phase("decode")
    memobs.track_alloc(0x7d0000100000, 1 << 20, "device", tag="pymod_ga_kv", device=5)
    memobs.set_phase(None)
    memobs.track_python_stacks()
    memobs.track_alloc(0x7d0000200000, 4096, "pinned")  # site:ga_pinned
    memobs.untrack_python_stacks()
    got = {d["ptr"]: d for d in memobs.get_allocations()}
    kv, pin = got.get(0x7d0000100000), got.get(0x7d0000200000)
    c.eq("two live", len(got), 2)
    c.eq("the device block's fields", kv and {k: kv[k] for k in ("nbytes", "kind", "device", "phase", "stream",
                                                               "pending_free")},
         {"nbytes": 1 << 20, "kind": "device", "device": 5, "phase": "decode", "stream": 0, "pending_free": False})
    c.true("its trace: an int id, the text starts with its tag", kv and isinstance(kv["trace"], int) and
           kv["stack"].split("\n")[0] == "pymod_ga_kv", kv)
    line = next(i for i, l in enumerate(open(__file__, encoding="utf-8"), 1) if l.rstrip().endswith("# site:ga_pinned"))
    c.true("the pinned block: unphased, its Python line in the stack", pin and pin["kind"] == "pinned" and
           pin["phase"] == "unphased" and pin["device"] == -1 and
           "test_module.py:%d in _" % line in (pin["stack"] or ""), pin)
    c.true("time_ns: CLOCK_MONOTONIC at the alloc", kv and 0 < kv["time_ns"] <= time.monotonic_ns() + 10**7, kv)
    c.eq("device_bytes(5): now and most", memobs.device_bytes(5), (1 << 20, 1 << 20))
    c.eq("device_bytes(0): nothing there now", memobs.device_bytes(0)[0], 0)
    memobs.track_free(0x7d0000100000)
    memobs.track_free(0x7d0000200000)
    c.eq("after the frees: [] and device 5 (0, most 1 MiB)", (memobs.get_allocations(), memobs.device_bytes(5)),
         ([], (0, 1 << 20)))
    c.raises("device_bytes(-1)", ValueError, memobs.device_bytes, -1)
    c.raises("device_bytes('0')", TypeError, memobs.device_bytes, "0")
    c.eq("get_device_bytes(5) == device_bytes(5)", memobs.get_device_bytes(5), memobs.device_bytes(5))
    c.raises("get_device_bytes(-1)", ValueError, memobs.get_device_bytes, -1)


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
    memobs.record_h2s(1 << 21, True)
    memobs.record_xfer("s2h", 3000, "decode")
    memobs.record_xfer_ns("s2d", 5000, None, 1234)
    memobs.record_d2s(0, False)
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
    c.eq("timed (every phase and direction)", j["timed"], s["timed"])
    c.eq("sizes (every direction)", j["sizes"], s["sizes"])
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


def pymod_snap_alloc(ptr):
    pymod_snap_alloc.line = sys._getframe().f_lineno + 1
    memobs.track_alloc(ptr, 1 << 20, "device", tag="pymod_snap \u00e9\"q", device=1)


@check("the snapshot's history off by default: segments, empty device_traces, \"history\": \"off\", one warning")
def _(c):
    import pickle

    fresh()
    c.eq("get_torch_history(): nothing recorded, not recording", memobs.get_torch_history(),
         {"recorded": 0, "kept": 0, "dropped": 0, "capacity": 16384, "recording": False})
    memobs.track_alloc(0x7e0000400000, 4096, "device", tag="pymod_off", device=0)
    path = os.path.join(TMP, "off.pkl")
    with CaptureStderr() as cap:
        memobs.write_torch_snapshot(path)
        memobs.write_torch_snapshot(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    c.true("its block a segment", any(s["address"] == 0x7e0000400000 for s in snap["segments"]), snap["segments"])
    c.true("device_traces: empty lists", all(t == [] for t in snap["device_traces"]), snap["device_traces"])
    c.eq("memobs' entry says off", snap["memobs"].get("history"), "off")
    c.true("and how to turn it on", "memobs_torch_history_start()" in snap["memobs"].get("history_help", ""),
           snap["memobs"])
    c.eq("one warning for two snapshots", [l for l in cap.text.splitlines() if "no history of events" in l],
         ["memobs: warning: the PyTorch memory snapshot has its segments and blocks but no history of events: "
          "set MEMOBS_TORCH_SNAPSHOT or call memobs_torch_history_start()"])
    memobs.track_free(0x7e0000400000)


@check("torch_history_start/stop: a window of events, bad values, get_torch_history")
def _(c):
    import pickle

    fresh()
    memobs.track_alloc(0x7e0000500000, 4096, "device", tag="before", device=2)
    c.raises("max_events=2**24 + 1", ValueError, memobs.torch_history_start, (1 << 24) + 1)
    c.raises("max_events=-1", ValueError, memobs.torch_history_start, -1)
    c.raises("max_events='8'", TypeError, memobs.torch_history_start, "8")
    c.raises("torch_history_stop(1)", TypeError, memobs.torch_history_stop, 1)
    c.raises("get_torch_history(device=-1)", ValueError, memobs.get_torch_history, device=-1)
    c.raises("get_torch_history(4096): past MEMOBS_MAX_DEVICES", ValueError, memobs.get_torch_history, 4096)
    c.eq("still off", memobs.get_torch_history(2)["recording"], False)
    c.eq("torch_history_start(max_events=64)", memobs.torch_history_start(max_events=64), None)
    c.eq("again: harmless", memobs.torch_history_start(64), None)
    memobs.track_alloc(0x7e0000600000, 8192, "device", tag="inside", device=2)
    memobs.track_free(0x7e0000600000)
    memobs.track_free(0x7e0000500000)
    c.eq("torch_history_stop()", memobs.torch_history_stop(), None)
    memobs.track_alloc(0x7e0000700000, 4096, "device", tag="after", device=2)
    c.eq("get_torch_history(2)", memobs.get_torch_history(device=2),
         {"recorded": 5, "kept": 5, "dropped": 0, "capacity": 64, "recording": False})
    path = os.path.join(TMP, "window.pkl")
    memobs.write_torch_snapshot(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    c.eq("device 2's events: inside's alloc and free, before's free only", [
        (e["action"], e["addr"]) for e in snap["device_traces"][2] if not e["action"].startswith("segment")], [
        ("alloc", 0x7e0000600000), ("free_requested", 0x7e0000600000), ("free_completed", 0x7e0000600000),
        ("free_requested", 0x7e0000500000), ("free_completed", 0x7e0000500000)])
    c.eq("memobs' entry says stopped", snap["memobs"].get("history"), "stopped")
    memobs.track_free(0x7e0000700000)
    memobs.torch_history_start()  # on for the checks below


@check("write_torch_snapshot(path): a pickle of the live device blocks with Python frames innermost first")
def _(c):
    import pickle

    fresh()
    memobs.track_python_stacks(source_width=0)
    pymod_snap_alloc(0x7e0000200000)
    memobs.track_alloc(0x7e0000300000, 4096, "host", tag="pymod_snap_host")
    memobs.untrack_python_stacks()
    path = os.path.join(TMP, "snapshot.pkl")
    c.eq("write_torch_snapshot(path)", memobs.write_torch_snapshot(path), None)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    live = sorted((a["device"], a["ptr"], a["nbytes"]) for a in memobs.get_allocations() if a["kind"] == "device")
    c.eq("segments = get_allocations()' device blocks", sorted(
        (s["device"], s["address"], s["total_size"]) for s in snap["segments"]), live)
    seg = [s for s in snap["segments"] if s["address"] == 0x7e0000200000]
    fr = seg[0]["frames"] if seg else []
    c.eq("the tag first", fr[:1], [{"filename": "memobs tag", "line": 0, "name": "pymod_snap \u00e9\"q"}])
    c.true("then this file's pymod_snap_alloc at the line of the call, then its caller",
           len(fr) >= 3 and fr[1]["filename"].endswith("test_module.py") and fr[1]["name"] == "pymod_snap_alloc"
           and fr[1]["line"] == pymod_snap_alloc.line and fr[2]["name"] == "_", fr)
    c.true("device_traces: one list per device from 0 (earlier checks used up to device 5)",
           len(snap["device_traces"]) >= 2 and all(isinstance(t, list) for t in snap["device_traces"]),
           len(snap["device_traces"]))
    ev = [e for e in snap["device_traces"][1] if e["addr"] == 0x7e0000200000] if len(snap["device_traces"]) > 1 else []
    c.eq("its alloc event on device 1", [(e["action"], e["size"], e["frames"] == fr) for e in ev][-1:],
         [("alloc", 1 << 20, True)])
    c.raises("write_torch_snapshot(None)", TypeError, memobs.write_torch_snapshot, None)
    c.raises("write_torch_snapshot()", TypeError, memobs.write_torch_snapshot)
    c.raises("an unwritable path", OSError, memobs.write_torch_snapshot, os.path.join(TMP, "no", "such", "dir.pkl"))
    memobs.track_free(0x7e0000200000)
    memobs.track_free(0x7e0000300000)
    memobs.write_torch_snapshot(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    acts = [e["action"] for e in snap["device_traces"][1] if e["addr"] == 0x7e0000200000]
    c.eq("after track_free: no segment, its free in the history", (
        [s for s in snap["segments"] if s["address"] == 0x7e0000200000], acts[-5:]),
        ([], ["segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"]))
    c.true("no event has a category", not any("category" in e for t in snap["device_traces"] for e in t))


if not FAILED:
    shutil.rmtree(TMP, ignore_errors=True)
else:
    print("    # scratch files kept in %s" % TMP)
sys.exit(1 if FAILED else 0)
