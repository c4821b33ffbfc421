#!/usr/bin/env python3
"""Checks of memobs.nanovllm, the drop-in for nano-vllm's observers, against
a reference model of nano-vllm's semantics written here from the reference
sheet (../shared/REFERENCE.md, "nano-vllm observers"): class variables,
is_prefill=True by default, truthiness of is_prefill, record_d2d without a
phase, complete_reset zeroing the counters but not _enabled, get_summary's
dict and key order, _fmt_bytes' decimal units, print_summary's six lines.

Random sequences (fixed seeds) of records, resets, enable switches and
attribute writes; after every step the drop-in and the model must agree on
get_summary (with key order), every attribute, and print_summary's text.
Then: 4 threads exact through the drop-in, subclasses, bad input, TTFT/TPOT
samples in memobs' histograms. Prints "ok - nanovllm: ..." lines; exits 1
when a check fails.

usage: nanovllm_check.py (memobs importable: the package on sys.path)"""
import contextlib
import io
import os
import random
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

import memobs  # noqa: E402
from memobs.nanovllm import InferenceObserver, MemoryObserver, Observer

check = Tap("nanovllm", "")


# ---- the reference model: nano-vllm's semantics, from the reference sheet ----


class RefObserver:
    ttft_start = 0
    tpot_start = 0
    ttft = 0
    tpot = 0

    @classmethod
    def reset_ttft(cls):
        cls.ttft_start = 0

    @classmethod
    def complete_reset(cls):
        cls.ttft_start = cls.tpot_start = cls.ttft = cls.tpot = 0


class RefMemory(RefObserver):
    _enabled = False
    h2d_bytes = h2d_count = d2h_bytes = d2h_count = d2d_bytes = d2d_count = 0
    prefill_h2d_bytes = prefill_d2h_bytes = decode_h2d_bytes = decode_d2h_bytes = 0

    @classmethod
    def record_h2d(cls, num_bytes, is_prefill=True):
        if not cls._enabled:
            return
        cls.h2d_bytes += num_bytes
        cls.h2d_count += 1
        if is_prefill:
            cls.prefill_h2d_bytes += num_bytes
        else:
            cls.decode_h2d_bytes += num_bytes

    @classmethod
    def record_d2h(cls, num_bytes, is_prefill=True):
        if not cls._enabled:
            return
        cls.d2h_bytes += num_bytes
        cls.d2h_count += 1
        if is_prefill:
            cls.prefill_d2h_bytes += num_bytes
        else:
            cls.decode_d2h_bytes += num_bytes

    @classmethod
    def record_d2d(cls, num_bytes):
        if not cls._enabled:
            return
        cls.d2d_bytes += num_bytes
        cls.d2d_count += 1

    @classmethod
    def complete_reset(cls):
        for n in COUNTERS:
            setattr(cls, n, 0)

    @classmethod
    def get_summary(cls):
        return {
            "total": {"h2d_bytes": cls.h2d_bytes, "h2d_count": cls.h2d_count, "d2h_bytes": cls.d2h_bytes,
                      "d2h_count": cls.d2h_count, "d2d_bytes": cls.d2d_bytes, "d2d_count": cls.d2d_count},
            "prefill": {"h2d_bytes": cls.prefill_h2d_bytes, "d2h_bytes": cls.prefill_d2h_bytes},
            "decode": {"h2d_bytes": cls.decode_h2d_bytes, "d2h_bytes": cls.decode_d2h_bytes},
        }

    @staticmethod
    def _fmt_bytes(b):
        for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
            if b >= scale:
                return "%.2f %s" % (b / scale, unit)
        return "%d B" % b

    @classmethod
    def print_summary(cls):
        s, f = cls.get_summary(), cls._fmt_bytes
        t, p, d = s["total"], s["prefill"], s["decode"]
        print("[MemoryObserver] Total: " + f(t["h2d_bytes"] + t["d2h_bytes"] + t["d2d_bytes"]))
        for k in ("h2d", "d2h", "d2d"):
            print("  %s: %s (%d ops)" % (k.upper(), f(t[k + "_bytes"]), t[k + "_count"]))
        print("  Prefill - H2D: %s, D2H: %s" % (f(p["h2d_bytes"]), f(p["d2h_bytes"])))
        print("  Decode  - H2D: %s, D2H: %s" % (f(d["h2d_bytes"]), f(d["d2h_bytes"])))


COUNTERS = ("h2d_bytes", "h2d_count", "d2h_bytes", "d2h_count", "d2d_bytes", "d2d_count", "prefill_h2d_bytes",
            "prefill_d2h_bytes", "decode_h2d_bytes", "decode_d2h_bytes")
TIMING = ("ttft_start", "tpot_start", "ttft", "tpot")


def printed(cls):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cls.print_summary()
    return out.getvalue()


def state(mem, obs):
    return (list(mem.get_summary().items()), [(k, list(v.items())) for k, v in mem.get_summary().items()],
            {n: getattr(mem, n) for n in COUNTERS}, bool(mem._enabled),
            {n: getattr(obs, n) for n in TIMING}, printed(mem))


# ---- random sequences -----------------------------------------------------------


def step(rng, mem, obs):
    op = rng.randrange(12)
    n = rng.choice([0, 1, 7, 999, 1000, 123456, 999999, 1000000, 2500000000, rng.randrange(1 << 40)])
    phase = rng.choice([True, False, 0, 1, "", "x", None, "omit"])
    if op <= 3:
        fn = mem.record_h2d if op < 2 else mem.record_d2h
        fn(n) if phase == "omit" else fn(n, is_prefill=phase) if op % 2 else fn(n, phase)
    elif op == 4:
        mem.record_d2d(n)
    elif op == 5:
        mem.complete_reset()
    elif op == 6:
        mem._enabled = rng.choice([True, False, 1, 0])
    elif op == 7:
        setattr(mem, rng.choice(COUNTERS), rng.randrange(1 << 20))
    elif op == 8:
        setattr(obs, rng.choice(TIMING), rng.randrange(1, 1 << 40))
    elif op == 9:
        obs.reset_ttft()
    elif op == 10:
        obs.complete_reset()
    else:
        mem.record_h2d(n)  # the nano-vllm default: prefill


def run_sequences():
    bad = []
    for seed in range(20):
        rng_a, rng_b = random.Random(seed), random.Random(seed)
        MemoryObserver._enabled = False
        MemoryObserver.complete_reset()
        Observer.complete_reset()
        RefMemory._enabled = False
        RefMemory.complete_reset()
        RefObserver.complete_reset()
        for i in range(300):
            step(rng_a, MemoryObserver, Observer)
            step(rng_b, RefMemory, RefObserver)
            got, want = state(MemoryObserver, Observer), state(RefMemory, RefObserver)
            if got != want:
                bad.append("seed %d step %d:\n  drop-in %r\n  model   %r" % (seed, i, got, want))
                break
    check("20 random sequences of 300 steps: summaries (key order too), attributes, _enabled, timing and "
          "print_summary text equal the reference model after every step", not bad, *bad[:2])


def defaults():
    MemoryObserver.complete_reset()
    ok = (MemoryObserver._enabled is False or MemoryObserver._enabled == False) and all(  # noqa: E712
        getattr(Observer, n) == 0 for n in TIMING)
    MemoryObserver.record_h2d(100)
    nothing = MemoryObserver.h2d_bytes == 0
    MemoryObserver._enabled = True
    MemoryObserver.record_h2d(100)
    MemoryObserver.record_d2h(50)
    dflt = MemoryObserver.prefill_h2d_bytes == 100 and MemoryObserver.prefill_d2h_bytes == 50
    MemoryObserver.complete_reset()
    kept = MemoryObserver._enabled is True
    check("defaults: _enabled False until set (records ignored), is_prefill True, complete_reset keeps _enabled",
          ok and nothing and dflt and kept, (ok, nothing, dflt, kept))
    fmt = [MemoryObserver._fmt_bytes(b) for b in (0, 999, 1000, 1234567, 999999999, 1e9, 2500000000)]
    check("_fmt_bytes: decimal units as nano-vllm", fmt == ["0 B", "999 B", "1.00 KB", "1.23 MB", "1000.00 MB",
                                                             "1.00 GB", "2.50 GB"], fmt)
    text = printed(MemoryObserver).splitlines()
    check("print_summary: six lines in nano-vllm's form", len(text) == 6 and text[0] == "[MemoryObserver] Total: 0 B"
          and text[5] == "  Decode  - H2D: 0 B, D2H: 0 B", *text)


# ---- threads ------------------------------------------------------------------


def threads():
    MemoryObserver._enabled = True
    MemoryObserver.complete_reset()
    per, nthreads = 20000, 4
    go = threading.Barrier(nthreads)

    def work(k):
        go.wait()
        for i in range(per):
            MemoryObserver.record_h2d(k + 1, is_prefill=(i & 1) == 0)
            MemoryObserver.record_d2d(1)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want_bytes = per * sum(k + 1 for k in range(nthreads))
    s = MemoryObserver.get_summary()
    check("4 threads through the drop-in: exact (bytes, ops, phases)",
          s["total"]["h2d_bytes"] == want_bytes and s["total"]["h2d_count"] == per * nthreads and
          s["total"]["d2d_count"] == per * nthreads and
          s["prefill"]["h2d_bytes"] + s["decode"]["h2d_bytes"] == want_bytes and
          s["prefill"]["h2d_bytes"] == want_bytes // 2, s)


# ---- subclasses, bad input, TTFT/TPOT ------------------------------------------


def subclasses():
    class MyMemory(MemoryObserver):
        kv_blocks = 0

    class MyTiming(Observer):
        steps = 3

    MemoryObserver._enabled = True
    MemoryObserver.complete_reset()
    MyMemory.kv_blocks += 2
    MyMemory.record_h2d(4096, is_prefill=False)
    MyTiming.ttft = 777
    MyTiming.steps += 1
    ok = (MyMemory.kv_blocks == 2 and MemoryObserver.decode_h2d_bytes == 4096 and MyMemory.h2d_bytes == 4096 and
          MyTiming.ttft == 777 and Observer.ttft == 0 and MyTiming.steps == 4 and not hasattr(Observer, "steps"))
    MyTiming.complete_reset()
    ok = ok and MyTiming.ttft == 0 and MyTiming.steps == 4
    check("subclasses: their own class variables; timing attributes per class as class variables are; records "
          "through a subclass count in the shared totals", ok,
          (MyMemory.kv_blocks, MemoryObserver.decode_h2d_bytes, MyTiming.ttft, Observer.ttft, MyTiming.steps))


def bad_input():
    MemoryObserver._enabled = True
    results = []
    for v in (-1, "5", 1.5, 1 << 64):
        try:
            memobs.record_h2d(v, True)
            want = None
        except Exception as e:  # the module's own answer
            want = type(e)
        try:
            MemoryObserver.record_h2d(v)
            got = None
        except Exception as e:
            got = type(e)
        results.append((v, want, got))
    MemoryObserver._enabled = False
    try:
        MemoryObserver.record_h2d(-1)
        quiet = True
    except Exception:
        quiet = False
    check("bad input (negative, str, float, 2**64): the same exception as memobs.record_h2d; nothing checked "
          "while disabled", all(w is not None and w == g for _, w, g in results) and quiet, results, quiet)


def latency_samples():
    memobs.reset()
    Observer.ttft_start = 1000
    Observer.ttft = 250_000_000
    InferenceObserver.tpot = 30_000_000
    Observer.tpot = 0  # a reset: no sample
    Observer.complete_reset()
    s = memobs.get_summary()
    t, p = s["ttft"], s["tpot"]
    check("ttft/tpot assignments > 0 are memobs samples (percentiles in memobs.print_summary)",
          t["count"] == 1 and p["count"] == 1 and abs(t["max_ns"] - 250_000_000) <= 250_000_000 * 0.008 + 1
          and abs(p["max_ns"] - 30_000_000) <= 30_000_000 * 0.008 + 1, t, p)


if __name__ == "__main__":
    defaults()
    run_sequences()
    threads()
    subclasses()
    bad_input()
    latency_samples()
    sys.stdout.flush()
    sys.exit(check.failed)
