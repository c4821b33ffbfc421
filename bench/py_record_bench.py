"""py_record_bench.py - `make bench-pymodule`: what a transfer record costs
when an engine written in Python calls it, memobs' extension module and the
drop-in memobs.nanovllm.MemoryObserver beside nano-vllm's class-variable
MemoryObserver, in one run. Prints a table, then
the target (reported, never asserted: exit status 0 either way), then whether
both observers' totals equal the records made.

Method: every figure is a loop of BENCH_PY_ITERS iterations (default 1M),
each `nbytes = i & 0xff` and one call, timed with time.perf_counter_ns().
The figures run in rounds, one run of each per round, so that a busy moment
spoils one run of every figure rather than every run of one; round 0 warms
up and BENCH_PY_REPS rounds follow (default 7). Shown: the best run and the
median, per iteration, and "net": the best minus the best of the empty loop,
i.e. what the call itself adds. The garbage collector is off while timing.

The storage tier: memobs.record_s2h(n, True) (record_h2d's path),
record_xfer("s2h", n, True), record_xfer_ns(..., 1000) and `with
memobs.timed_transfer("s2h", n, True): pass`; their S2H records and timed
figures are checked against the calls made.

Regions: `with r:` for a region built once (timing on, off, memobs off)
and `with memobs.region("name"):` per iteration; a function called plain, through
@memobs.region(...) (C) and through a functools.wraps wrapper written in
Python; the region counts are checked against the entries made.

Needs the module on PYTHONPATH (make bench-pymodule does that)."""
import gc
import os
import platform
import statistics
import sys
import time

import memobs
from memobs.nanovllm import MemoryObserver as DropInMemoryObserver


class Observer:
    """nano-vllm's Observer base: a class-variable on/off switch."""

    _enabled: bool = True


class MemoryObserver(Observer):
    """The H2D part of nano-vllm's MemoryObserver, its logic unchanged:
    class variables, an _enabled check, unlocked +=, is_prefill=True by
    default."""

    h2d_bytes: int = 0
    h2d_count: int = 0
    prefill_h2d_bytes: int = 0
    decode_h2d_bytes: int = 0

    @classmethod
    def record_h2d(cls, num_bytes: int, is_prefill: bool = True) -> None:
        if not cls._enabled:
            return
        cls.h2d_bytes += num_bytes
        cls.h2d_count += 1
        if is_prefill:
            cls.prefill_h2d_bytes += num_bytes
        else:
            cls.decode_h2d_bytes += num_bytes

    @classmethod
    def complete_reset(cls) -> None:
        cls.h2d_bytes = cls.h2d_count = 0
        cls.prefill_h2d_bytes = cls.decode_h2d_bytes = 0


def python_noop(num_bytes, is_prefill):
    pass


# ---------------------------------------------------------------------------
# Timed loops: the same shape for every figure; each call is written out (no
# indirection through a function argument) so its cost is what a call site
# in an engine pays.


def loop_empty(n):
    for i in range(n):
        nbytes = i & 0xff  # the body every figure shares  # noqa: F841


def loop_python_noop(n):
    for i in range(n):
        nbytes = i & 0xff
        python_noop(nbytes, True)


def loop_observer(n):
    for i in range(n):
        nbytes = i & 0xff
        MemoryObserver.record_h2d(nbytes, True)


def loop_dropin(n):
    for i in range(n):
        nbytes = i & 0xff
        DropInMemoryObserver.record_h2d(nbytes, True)


def loop_module(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_h2d(nbytes, True)


def loop_module_cur(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_h2d(nbytes, None)


def loop_module_local(n):
    rec = memobs.record_h2d
    for i in range(n):
        nbytes = i & 0xff
        rec(nbytes, True)


def loop_module_kw(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_h2d(nbytes, is_prefill=True)


def loop_storage(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_s2h(nbytes, True)


def loop_storage_xfer(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_xfer("s2h", nbytes, True)


def loop_storage_xfer_ns(n):
    for i in range(n):
        nbytes = i & 0xff
        memobs.record_xfer_ns("s2h", nbytes, True, 1000)


def loop_storage_timed(n):
    for i in range(n):
        nbytes = i & 0xff
        with memobs.timed_transfer("s2h", nbytes, True):
            pass


# Regions: a region built once and entered per iteration; memobs.region(name)
# called per iteration (the module's cache of region objects by str); a
# function called plain, through
# @memobs.region, and through the functools.wraps wrapper one would write in
# Python (the peer of the C wrapper).
REGION = memobs.region("bench_region")


def plain_function(nbytes):
    return nbytes


decorated_function = memobs.region("bench_decorated")(lambda nbytes: nbytes)


def python_region_decorator(region):
    import functools

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with region:
                return fn(*args, **kwargs)

        return wrapper

    return decorate


python_wrapped_function = python_region_decorator(memobs.region("bench_pywrapped"))(lambda nbytes: nbytes)


def loop_region_with(n):
    r = REGION
    for i in range(n):
        nbytes = i & 0xff  # noqa: F841
        with r:
            pass


def loop_region_built(n):
    for i in range(n):
        nbytes = i & 0xff  # noqa: F841
        with memobs.region("bench_region_built"):
            pass


def loop_plain_call(n):
    for i in range(n):
        nbytes = i & 0xff
        plain_function(nbytes)


def loop_decorated_call(n):
    for i in range(n):
        nbytes = i & 0xff
        decorated_function(nbytes)


def loop_python_wrapped_call(n):
    for i in range(n):
        nbytes = i & 0xff
        python_wrapped_function(nbytes)


def regions_on(timing=True):
    memobs.set_enabled(True)
    memobs.region_set_timing(timing)


def set_observer(on):
    MemoryObserver._enabled = on


def set_dropin(on):
    memobs.set_enabled(True)
    DropInMemoryObserver._enabled = on


def env_int(name, default, lo, hi):
    s = os.environ.get(name)
    if s is None:
        return default
    try:
        v = int(s)
        if lo <= v <= hi:
            return v
    except ValueError:
        pass
    print("bench: %s='%s' is not in %d..%d; using %d" % (name, s, lo, hi, default), file=sys.stderr)
    return default


# name, loop, set-up before each run, what it records: None, "memobs", "observer"
FIGURES = [
    ("empty loop (nbytes = i & 0xff)", loop_empty, None, None),
    ("empty Python function f(nbytes, True)", loop_python_noop, None, None),
    ("MemoryObserver.record_h2d(nbytes, True)", loop_observer, lambda: set_observer(True), "observer"),
    ("  the same, _enabled = False", loop_observer, lambda: set_observer(False), None),
    ("memobs.nanovllm MemoryObserver.record_h2d(n, True)", loop_dropin, lambda: set_dropin(True), "memobs"),
    ("  the same, _enabled = False", loop_dropin, lambda: set_dropin(False), None),
    ("memobs.record_h2d(nbytes, True)", loop_module, lambda: memobs.set_enabled(True), "memobs"),
    ("memobs.record_h2d(nbytes, None) (thread's phase)", loop_module_cur, lambda: memobs.set_enabled(True), "memobs_cur"),
    ("memobs.record_h2d(nbytes, is_prefill=True)", loop_module_kw, lambda: memobs.set_enabled(True), "memobs"),
    ("rec(nbytes, True), rec = memobs.record_h2d", loop_module_local, lambda: memobs.set_enabled(True), "memobs"),
    ("  memobs.record_h2d(nbytes, True), set_enabled(False)", loop_module, lambda: memobs.set_enabled(False), None),
    ("memobs.record_s2h(nbytes, True)", loop_storage, lambda: memobs.set_enabled(True), "storage"),
    ("memobs.record_xfer(\"s2h\", nbytes, True)", loop_storage_xfer, lambda: memobs.set_enabled(True), "storage"),
    ("memobs.record_xfer_ns(\"s2h\", nbytes, True, 1000)", loop_storage_xfer_ns, lambda: memobs.set_enabled(True),
     "storage_timed"),
    ("with memobs.timed_transfer(\"s2h\", nbytes, True): pass", loop_storage_timed,
     lambda: memobs.set_enabled(True), "storage_timed"),
    ("with r: pass (r = memobs.region(...) built once)", loop_region_with, regions_on, "bench_region"),
    ("  the same, region_set_timing(False)", loop_region_with, lambda: regions_on(False), "bench_region"),
    ("  the same, set_enabled(False)", loop_region_with, lambda: memobs.set_enabled(False), None),
    ("with memobs.region(\"name\"): pass (called each time)", loop_region_built, regions_on, "bench_region_built"),
    ("f(nbytes), a plain Python function", loop_plain_call, None, None),
    ("g(nbytes), g = @memobs.region(\"name\") f", loop_decorated_call, regions_on, "bench_decorated"),
    ("  the same, region_set_timing(False)", loop_decorated_call, lambda: regions_on(False), "bench_decorated"),
    ("h(nbytes), h = functools.wraps + with r (Python)", loop_python_wrapped_call, regions_on, "bench_pywrapped"),
]
(F_EMPTY, F_NOOP, F_OBS, F_OBS_OFF, F_DROP, F_DROP_OFF, F_MOD, F_MOD_CUR, F_MOD_KW, F_MOD_LOCAL, F_MOD_OFF, F_S2H,
 F_S2H_XFER, F_S2H_NS, F_S2H_WITH, F_RWITH, F_RWITH_UNTIMED, F_RWITH_OFF, F_RBUILT, F_PLAIN, F_RDEC, F_RDEC_UNTIMED,
 F_PYWRAP) = range(len(FIGURES))
REGION_KINDS = ("bench_region", "bench_region_built", "bench_decorated", "bench_pywrapped")


def main():
    iters = env_int("BENCH_PY_ITERS", 1_000_000, 1000, 10**9)
    reps = env_int("BENCH_PY_REPS", 7, 1, 1000)
    runs = [[] for _ in FIGURES]
    made = {"observer": 0, "memobs": 0, "memobs_cur": 0, "storage": 0, "storage_timed": 0}
    made.update(dict.fromkeys(REGION_KINDS, 0))

    memobs.set_phase(None)
    memobs.reset()
    MemoryObserver.complete_reset()
    print("memobs %s Python bench: CPython %s (%s), %s" % (memobs.__version__, platform.python_version(),
                                                           platform.machine(), memobs.__file__))
    print("each figure: best and median of %d runs of %d iterations, in interleaved rounds after a warm-up round"
          % (reps, iters))
    print("every iteration: nbytes = i & 0xff, then the call; net = best minus the empty loop's best")
    try:
        print("load average before the run: %.2f %.2f %.2f" % os.getloadavg())
    except OSError:
        pass
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for r in range(reps + 1):
            for k, (name, loop, setup, kind) in enumerate(FIGURES):
                if setup:
                    setup()
                t0 = time.perf_counter_ns()
                loop(iters)
                t1 = time.perf_counter_ns()
                if kind:
                    made[kind] += iters
                if r > 0:
                    runs[k].append((t1 - t0) / iters)
    finally:
        memobs.set_enabled(True)
        memobs.region_set_timing(True)
        set_observer(True)
        if gc_was:
            gc.enable()

    best = [min(x) for x in runs]
    med = [statistics.median(x) for x in runs]
    net = [max(b - best[F_EMPTY], 0.0) for b in best]

    def row(k, note=""):
        print("  %-50s %8.1f %8.1f %8.1f   %s" % (FIGURES[k][0], best[k], med[k], net[k], note))

    def ratio(a, b):
        return a / b if b > 0 else float("inf")

    print("\n  %-50s %8s %8s %8s   %s" % ("figure", "best", "median", "net", "note"))
    print("  %-50s %8s %8s %8s" % ("", "ns/iter", "ns/iter", "ns/call"))
    print("baselines")
    row(F_EMPTY, "the loop alone")
    row(F_NOOP, "what any Python-level call costs")
    print("nano-vllm's MemoryObserver (class variables, unlocked +=)")
    row(F_OBS, "the peer")
    row(F_OBS_OFF, "its off switch: an attribute check")
    print("memobs.nanovllm: the drop-in (the same class, counting in memobs)")
    row(F_DROP, "%.1fx cheaper than the peer (net)" % ratio(net[F_OBS], net[F_DROP]))
    row(F_DROP_OFF, "its off switch: a global check")
    print("memobs extension module (METH_FASTCALL)")
    row(F_MOD, "%.1fx cheaper than the peer (net)" % ratio(net[F_OBS], net[F_MOD]))
    row(F_MOD_CUR, "phase from set_phase(): unphased here")
    row(F_MOD_KW, "keyword: parsed off the fast path")
    row(F_MOD_LOCAL, "no global/attribute lookup per call")
    row(F_MOD_OFF, "a call, the argument checks, a load and a branch")
    print("the storage tier (the same record, another direction)")
    row(F_S2H, "%+.1f ns over record_h2d" % (best[F_S2H] - best[F_MOD]))
    row(F_S2H_XFER, "the direction by name (interned: an address compare), generic parsing")
    row(F_S2H_NS, "+ the timed figures (atomic adds)")
    row(F_S2H_WITH, "+ the object, the with statement, two clock reads")
    print("regions (net: minus the loop; for calls, minus the plain call too)")
    row(F_RWITH, "__enter__/__exit__: a stack push, a pop, two clock reads")
    row(F_RWITH_UNTIMED, "no clock reads")
    row(F_RWITH_OFF, "memobs off: the with statement and the calls")
    row(F_RBUILT, "+ the call memobs.region(name): a dict lookup")
    row(F_PLAIN, "baseline of the two below")
    row(F_RDEC, "%.1f ns over the plain call" % (best[F_RDEC] - best[F_PLAIN]))
    row(F_RDEC_UNTIMED, "%.1f ns over the plain call" % (best[F_RDEC_UNTIMED] - best[F_PLAIN]))
    row(F_PYWRAP, "%.1f ns over the plain call: the peer of the C wrapper" % (best[F_PYWRAP] - best[F_PLAIN]))

    speedup = ratio(net[F_OBS], net[F_MOD])
    raw = ratio(best[F_OBS], best[F_MOD])
    print("\ntargets (reported, not asserted)")
    print("  %-60s %-8s %s" % ("module record >= 5x faster than the class-variable observer",
                                "%.2fx" % speedup, "PASS" if speedup >= 5.0 else "MISS"))
    print("    (net of the loop; %.2fx with the loop's %.1f ns counted in both)" % (raw, best[F_EMPTY]))
    drop = ratio(net[F_OBS], net[F_DROP])
    print("  %-60s %-8s %s" % ("drop-in MemoryObserver.record_h2d >= 3x cheaper than nano-vllm's",
                                "%.2fx" % drop, "PASS" if drop >= 3.0 else "MISS"))

    # Every enabled run recorded iters calls of sum(i & 0xff) bytes.
    per_run = sum(i & 0xff for i in range(iters))
    s = memobs.get_summary()
    want_prefill = made["memobs"] // iters * per_run
    want_unphased = made["memobs_cur"] // iters * per_run
    problems = []
    if s["total"]["h2d_count"] != made["memobs"] + made["memobs_cur"]:
        problems.append("memobs H2D count: expected %d, got %d" % (made["memobs"] + made["memobs_cur"],
                                                                   s["total"]["h2d_count"]))
    if s["prefill"]["h2d_bytes"] != want_prefill:
        problems.append("memobs prefill H2D bytes: expected %d, got %d" % (want_prefill, s["prefill"]["h2d_bytes"]))
    if s["unphased"]["h2d_bytes"] != want_unphased:
        problems.append("memobs unphased H2D bytes: expected %d, got %d" % (want_unphased,
                                                                         s["unphased"]["h2d_bytes"]))
    want_obs = made["observer"] // iters * per_run
    if MemoryObserver.h2d_count != made["observer"] or MemoryObserver.prefill_h2d_bytes != want_obs:
        problems.append("MemoryObserver: expected %d calls, %d bytes; got %d, %d" % (
            made["observer"], want_obs, MemoryObserver.h2d_count, MemoryObserver.prefill_h2d_bytes))
    print("\ntotals exact: %s (memobs: %d H2D records, %d bytes; MemoryObserver: %d records; warm-up included)"
          % ("yes" if not problems else "NO", s["total"]["h2d_count"], s["total"]["h2d_bytes"],
             MemoryObserver.h2d_count))
    storage = made["storage"] + made["storage_timed"]
    if s["phases"]["prefill"]["s2h_count"] != storage or s["phases"]["prefill"]["s2h_bytes"] != storage // iters * per_run:
        problems.append("memobs prefill S2H: expected %d records, %d bytes; got %d, %d" % (
            storage, storage // iters * per_run, s["phases"]["prefill"]["s2h_count"],
            s["phases"]["prefill"]["s2h_bytes"]))
    t = s["timed"]["prefill"]["s2h"]
    if t["count"] != made["storage_timed"] or t["bytes"] != made["storage_timed"] // iters * per_run:
        problems.append("memobs timed prefill S2H: expected %d, %d bytes; got %d, %d" % (
            made["storage_timed"], made["storage_timed"] // iters * per_run, t["count"], t["bytes"]))
    print("storage exact: %s (%d S2H records, %d of them timed)" % (
        "yes" if not any(p.startswith("memobs") and "S2H" in p for p in problems) else "NO", storage, t["count"]))
    counts = {x["name"]: x["count"] for x in memobs.get_regions()}
    for kind in REGION_KINDS:
        if counts.get(kind, 0) != made[kind]:
            problems.append("region %s: expected %d ended, got %d" % (kind, made[kind], counts.get(kind, 0)))
    print("regions exact: %s (%s)" % ("yes" if not any(p.startswith("region ") for p in problems) else "NO",
                                      ", ".join("%s %d" % (k, counts.get(k, 0)) for k in REGION_KINDS)))
    for p in problems:
        print("  MISMATCH " + p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
