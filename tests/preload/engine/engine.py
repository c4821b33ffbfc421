"""tests/preload/test_preload_engine.sh: a PyTorch-shaped engine under
LD_PRELOAD=libmemobs_preload.so.

engine.py MODE DIR LOG [vmm]: DIR holds libfaketorch.so
(tests/preload/engine/faketorch.c, linked to the runtime double by soname as
libtorch_cuda.so is to libcudart), loaded here with ctypes.CDLL: dlopen with
RTLD_LOCAL, as Python loads an extension module. The engine loads weights,
allocates a KV cache and a pinned swap buffer, runs a prefill (with an out of
memory that the caching allocator survives) and decode steps that offload a
KV block to the pinned buffer and back; with "vmm", an expandable segment
through driver entry points (reserve, grow, a cudaMemcpyDefault copy each
way and device to device, a handle released while mapped, shrink). Phases
and regions are set from the package memobs.

The engine keeps its own ledger of what it did (the allocator's own figures
for device memory, each copy by phase and direction). MODE attached (under
the preload): the package is attached to the preload's memobs; its figures
(get_summary, get_device_bytes, get_allocations with the Python stacks)
equal the ledger at each step that changes them; prints "expect: JSON", what
the preload's summary at exit must hold. MODE bare (no preload): the runtime
is in no global scope (RTLD_LOCAL), the same run. Both write faketorch's log
of every CUDA call and its return code, and the engine's results, to LOG:
the two must be identical."""
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from tap import Tap  # noqa: E402

import memobs  # noqa: E402

MODE, DIR, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
VMM = "vmm" in sys.argv[4:]
tap = Tap("preload-engine", "%s (major %s): " % (MODE, os.environ.get("ENGINE_MAJOR", "?")))
ATTACHED = MODE == "attached"

H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4  # enum cudaMemcpyKind
MiB = 1 << 20

ft = ctypes.CDLL(os.path.join(DIR, "libfaketorch.so"))  # RTLD_LOCAL
ft.ft_log.restype = ctypes.c_char_p
ft.ft_malloc.restype, ft.ft_malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
ft.ft_free.argtypes = [ctypes.c_void_p]
ft.ft_copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
ft.ft_host_alloc.restype, ft.ft_host_alloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
ft.ft_host_free.argtypes = [ctypes.c_void_p]
ft.ft_stats.argtypes = [ctypes.c_ulonglong * 4]
if VMM:
    ft.ft_vmm_init.argtypes = [ctypes.c_int, ctypes.c_size_t]
    ft.ft_vmm_granularity.restype = ctypes.c_size_t
    ft.ft_vmm_base.restype = ctypes.c_void_p
    for f in (ft.ft_vmm_grow, ft.ft_vmm_shrink, ft.ft_vmm_release_mapped):
        f.argtypes = [ctypes.c_size_t]

# every direction of get_summary()["total"] and "phases" (the storage tier's: none here)
ZERO = {d + k: 0 for d in ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d") for k in ("_bytes", "_count")}
results = []  # what each engine call returned, in order: compared between the runs


def result(what, value):
    results.append("%s %s" % (what, value))
    return value


class Ledger:
    """What the engine did: the allocator's figures, the VMM handles, the
    copies by phase, the pinned buffer, the failed CUDA calls."""

    def __init__(self):
        self.phase = None
        self.copies = {p: dict(ZERO) for p in ("prefill", "decode", "unphased")}
        self.vmm_live = self.vmm_allocs = self.vmm_frees = 0
        self.gran = 0
        self.peak = 0
        self.pinned = {"allocs": 0, "frees": 0, "current_bytes": 0, "peak_bytes": 0}
        self.failed = 0
        self.where = {}  # live segment -> (bytes, the function that allocated it)
        self.cached = set()  # segments in the allocator's cache
        self.note()

    def stats(self):
        s = (ctypes.c_ulonglong * 4)()
        ft.ft_stats(s)
        return list(s)

    def note(self):
        """After each call that may change device memory: the peak."""
        self.peak = max(self.peak, self.device()["current_bytes"])

    def device(self):
        reserved, _, segs, frees = self.stats()
        return {"current_bytes": reserved + self.vmm_live * self.gran, "allocs": segs + self.vmm_allocs,
                "frees": frees + self.vmm_frees, "live": segs - frees + self.vmm_live, "peak_bytes": self.peak}

    def empty_cache(self):
        for p in self.cached:
            del self.where[p]
        self.cached.clear()

    def copy(self, direction, n):
        c = self.copies[self.phase or "unphased"]
        c[direction + "_bytes"] += n
        c[direction + "_count"] += 1

    def total(self):
        return {k: sum(c[k] for c in self.copies.values()) for k in ZERO}


led = Ledger()


def set_phase(p):
    memobs.set_phase(p)
    led.phase = p


def check(name):
    """The package's figures (the preload's memobs when attached) against the ledger, now."""
    if not ATTACHED:
        return
    s = memobs.get_summary()
    want = {"total": led.total(), "phases": led.copies, "device": led.device(), "pinned": led.pinned,
            "failed": led.failed}
    got = {"total": s["total"], "phases": s["phases"],
           "device": {k: s["memory"]["device"][k] for k in want["device"]},
           "pinned": {k: s["memory"]["pinned"][k] for k in want["pinned"]},
           "failed": s["counters"].get("preload_failed_calls", 0)}
    now, most = memobs.get_device_bytes(0)
    tap(name + ": get_summary() equals the engine's ledger (copies by phase and direction; device current, peak, "
        "allocs, frees, live; pinned; failed calls), get_device_bytes(0) too",
        got == want and (now, most) == (want["device"]["current_bytes"], want["device"]["peak_bytes"]),
        *["%s: expected %s\n   got      %s" % (k, want[k], got[k]) for k in want if got[k] != want[k]],
        "get_device_bytes(0): %s" % ((now, most),))


def alloc(n, who):
    p = ft.ft_malloc(n)
    if p:
        led.cached.discard(p)  # from the cache, or a new segment
        if p not in led.where:
            led.where[p] = ((n + 511) & ~511, who)
    elif n >= 1 << 40:  # the out of memory path: the cache was emptied
        led.empty_cache()
    led.note()
    result("ft_malloc(%d)" % n, "ok" if p else "NULL")
    return p


def copy(dst, src, n, kind, direction, stream=0):
    rc = result("ft_copy(%d, kind %d, stream %d)" % (n, kind, stream), ft.ft_copy(dst, src, n, kind, stream))
    if rc == 0:
        led.copy(direction, n)
    else:
        led.failed += 1
    return rc


def host(n, byte):
    return ctypes.create_string_buffer(bytes([byte]) * n, n)


def addr(buf):
    return ctypes.addressof(buf)


# Python stacks on the allocations the preload intercepts (ctypes.CDLL calls release the GIL)
if ATTACHED:
    memobs.track_python_stacks(priority="", skip="", root="", take_gil=True)
    tap("memobs.instance() is \"preload\": the package is attached to the preload's memobs",
        memobs.instance() == "preload", memobs.instance())
else:
    try:
        ctypes.CDLL(None).cudaMalloc
        scope = "cudaMalloc in the global scope"
    except AttributeError:
        scope = None
    tap("the runtime is loaded RTLD_LOCAL (through libfaketorch.so): no cudaMalloc in the global scope",
        scope is None, scope)

if result("ft_init", ft.ft_init(0)) != 0:
    sys.exit("ft_init failed: %s" % ft.ft_log().decode())


def load_weights():
    """Unphased: two weight tensors, each copied host to device."""
    ws = []
    for n, byte in ((MiB, 0x11), (3 * MiB // 4, 0x22)):
        w = alloc(n, "load_weights")
        src = host(n, byte)
        copy(w, addr(src), n, H2D, "h2d")
        ws.append(w)
    return ws


with memobs.region("load_weights"):
    W = load_weights()
check("after load_weights")

KVB = 16 << 10  # bytes of one KV block
NBLK = 8


def alloc_kv_cache():
    return alloc(KVB * NBLK, "alloc_kv_cache")


KV = alloc_kv_cache()
SWAP = 4 * KVB
swap = ft.ft_host_alloc(SWAP)  # the pinned CPU swap space
result("ft_host_alloc", "ok" if swap else "NULL")
if swap:
    led.pinned.update(allocs=1, current_bytes=SWAP, peak_bytes=SWAP)
check("after the KV cache")


def forward(tokens, act_bytes):
    """A step: input ids H2D, an activation (the caching allocator), the
    weights into it D2D, a KV block written D2D, logits D2H; the activation
    back to the cache."""
    ids = host(tokens * 8, 0x33)
    copy(KV, addr(ids), tokens * 8, H2D, "h2d")
    act = alloc(act_bytes, "forward")
    copy(act, W[0], act_bytes, D2D, "d2d")
    copy(KV + KVB, act, KVB, D2D, "d2d")
    logits = host(4096, 0)
    copy(addr(logits), act, 4096, D2H, "d2h")
    ok = logits.raw == bytes([0x11]) * 4096
    result("ft_free", ft.ft_free(act))
    led.cached.add(act)
    led.note()
    return ok


set_phase("prefill")
with memobs.region("prefill"):
    data_ok = forward(128, 64 << 10)
    # an allocation beyond the device: cudaMalloc fails, the allocator frees its cache and tries once more
    p = alloc(1 << 40, "prefill")
    if not p:
        led.failed += 2
    tap("out of memory: ft_malloc(1 TiB) NULL (cudaMalloc failed twice, the cache emptied between)", not p)
check("after prefill (one out of memory, the cache emptied)")


def offload(blk, slot):
    """A KV block to the pinned swap space and back, on the copy stream."""
    with memobs.region("kv_offload"):
        copy(swap + slot * KVB, KV + blk * KVB, KVB, D2H, "d2h", 1)
        copy(KV + (blk + 1) * KVB, swap + slot * KVB, KVB, H2D, "h2d", 1)


set_phase("decode")
for step in range(3):
    with memobs.region("decode_step"):
        data_ok &= forward(1, 64 << 10)
        tok = host(8, 0)
        copy(addr(tok), KV, 8, D2H, "d2h")
        offload(step + 2, step)
    check("after decode step %d" % step)
# a copy of a kind beyond cudaMemcpyDefault: the runtime's error, nothing recorded
src = host(64, 0)
copy(KV, addr(src), 64, 7, "h2d")
check("after a copy of kind 7 (failed)")
tap("the bytes moved: the weights reach the logits, exact", data_ok)

if VMM:
    def grow_segment(n):
        rc = result("ft_vmm_grow(%d)" % n, ft.ft_vmm_grow(n))
        if rc == 0:
            led.vmm_live += n
            led.vmm_allocs += n
            led.note()
        return rc

    def shrink_segment(n):
        """n handles unmapped from the end and released (those released already: unmapped only)"""
        rc = result("ft_vmm_shrink(%d)" % n, ft.ft_vmm_shrink(n))
        if rc == 0:
            led.vmm_live -= n
            led.vmm_frees += n
        return rc

    set_phase("prefill")
    with memobs.region("expandable"):
        rc = result("ft_vmm_init", ft.ft_vmm_init(0, 16))
        G = led.gran = ft.ft_vmm_granularity()
        base = ft.ft_vmm_base()
        tap("expandable segment: entry points fetched, granularity %d, 16 handles of range reserved" % G,
            rc == 0 and G > 0 and base, "rc %d, granularity %d, base %s" % (rc, G, base), ft.ft_log().decode()[-1500:])
        if rc != 0 or not G or not base:
            sys.exit(tap.failed or 1)
        check("expandable segment reserved (no memory)")
        grow_segment(2)
        check("expandable segment grown by 2 handles")
        # cudaMemcpyDefault: by the pointers' types. Host to the mapped range, spanning both handles
        n = G + 4096
        src = host(n, 0x44)
        copy(base + G - 4096, addr(src), n, DEFAULT, "h2d")
        back = host(n, 0)
        copy(addr(back), base + G - 4096, n, DEFAULT, "d2h")
        copy(KV, base + G, KVB, DEFAULT, "d2d")  # mapped range to a cudaMalloc'd block
        kv = host(KVB, 0)
        copy(addr(kv), KV, KVB, D2H, "d2h")
        tap("cudaMemcpyDefault into and out of the mapped range: the bytes back, exact",
            back.raw == bytes([0x44]) * n and kv.raw == bytes([0x44]) * KVB)
        check("cudaMemcpyDefault copies into, out of and from the mapped range (H2D, D2H, D2D)")
        grow_segment(3)
        check("expandable segment grown to 5 handles (the peak)")
        rc = result("ft_vmm_release_mapped(4)", ft.ft_vmm_release_mapped(4))
        tap("cuMemRelease of a mapped handle succeeds", rc == 0, rc)
        check("the last handle released while mapped: still device memory")
        rc = result("ft_vmm_create_unaligned", ft.ft_vmm_create_unaligned())
        tap("cuMemCreate of half the granularity fails", rc != 0, rc)
        led.failed += rc != 0
        check("a cuMemCreate that failed: nothing recorded")
        shrink_segment(2)  # handle 4 was released already
        check("expandable segment shrunk by 2 (one released before): 3 handles")
        grow_segment(1)
        shrink_segment(2)
        check("grown by 1, shrunk by 2: 2 handles left mapped at exit")

set_phase(None)
# shutdown: the pinned buffer freed, the cache emptied; weights, KV cache and segment live at exit
rc = result("ft_host_free", ft.ft_host_free(swap))
if rc == 0:
    led.pinned.update(frees=1, current_bytes=0)
if result("ft_empty_cache", ft.ft_empty_cache()) == 0:
    led.empty_cache()
result("ft_shutdown", ft.ft_shutdown())
check("at shutdown")

reserved, _, segs, frees = led.stats()
tap("the allocator's own figures (%d B reserved in %d segments) are the engine's blocks" % (reserved, segs - frees),
    reserved == sum(n for n, _ in led.where.values()) and segs - frees == len(led.where),
    "allocator: %d B in %d segments; engine: %s" % (reserved, segs - frees, sorted(led.where.values())))

regions = {"load_weights": 1, "prefill": 1, "decode_step": 3, "kv_offload": 3}
if VMM:
    regions["expandable"] = 1
if ATTACHED:
    got = {r["name"]: r["count"] for r in memobs.get_summary()["regions"]}
    tap("the regions from Python are the preload's: %s" % regions, got == regions, got)
    # every live device allocation carries the Python stack of the function that made it: its
    # innermost frame in this file
    me = os.path.abspath(__file__)

    def maker(stack):
        fns = [ln.rsplit(" in ", 1)[1] for ln in (stack or "").splitlines() if ln.startswith(me + ":") and " in " in ln]
        fns = [f for f in fns if f != "alloc"]  # the engine's allocator helper: its caller made the block
        return fns[-1] if fns else None

    live = [a for a in memobs.get_allocations() if a["kind"] == "device"]
    got = sorted((a["nbytes"], maker(a["stack"])) for a in live)
    want = sorted(list(led.where.values()) + [(led.gran, "grow_segment")] * led.vmm_live)
    tap("Python stacks on the intercepted allocations: each live block's stack names the function that allocated "
        "it (%s)" % ", ".join(sorted(set(fn for _, fn in want))), got == want,
        "expected %s" % want, "got      %s" % got, *["%d: %r" % (a["nbytes"], a["stack"]) for a in live[:3]])

with open(LOG, "w") as f:
    f.write(ft.ft_log().decode())
    f.write("".join(r + "\n" for r in results))
dev = led.device()
print("expect: " + json.dumps({
    "total": led.total(), "prefill": led.copies["prefill"], "decode": led.copies["decode"],
    "unphased": led.copies["unphased"],
    "memory": {"device": dev, "pinned": led.pinned},
    "counters": {"preload_failed_calls": led.failed}}))
sys.exit(tap.failed)
