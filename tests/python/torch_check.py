#!/usr/bin/env python3
"""Checks of memobs.torch (python/memobs/torch.py) with real PyTorch on the
CPU (Debian's python3-torch, 1.13: no CUDA, no pluggable allocator).

usage: torch_check.py MODE [DOUBLE]   (the package memobs on PYTHONPATH)
  notorch  the interpreter with PyTorch out of sight (-S): memobs.torch imports, and
           use_allocator() says PyTorch is missing
  torch    PyTorch on the CPU, a package built with the CUDA headers:
           record_copy/copy (directions from tensors that report a CUDA
           device, sizes and dtypes from real tensors), 4 threads, bad
           input; use_allocator() against this PyTorch (too old), then
           against its torch.cuda.memory given PyTorch 2's two functions
           by the test (FakePluggable below: it loads the allocator from
           the path it is given with ctypes, as PyTorch does with dlopen),
           with the CUDA runtime double (DOUBLE, a libcudart.so.13) as
           the runtime: every error path, then allocations through the
           allocator in the same memobs instance as record_copy
  nocuda   PyTorch, a package built without the CUDA headers
Prints "ok - torch: NAME" / "not ok - torch: NAME" with "    # " detail
lines; exits 1 when a check fails.
"""
import ctypes
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

import memobs  # noqa: E402
import memobs.torch

MODE = sys.argv[1]
DOUBLE = sys.argv[2] if len(sys.argv) > 2 else None
check = Tap("torch", MODE + ": ")


def raised(fn, *args, **kw):
    """The exception fn raises (None if none)."""
    try:
        fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 (the check looks at its type)
        return e
    return None


def traffic():
    """{(phase, dir): (bytes, ops)} of the summary."""
    ph = memobs.get_summary()["phases"]
    return {(p, d): (ph[p][d + "_bytes"], ph[p][d + "_count"]) for p in ph for d in ("h2d", "d2h", "d2d")}


def delta(before, after):
    return {k: (after[k][0] - before[k][0], after[k][1] - before[k][1]) for k in after
            if after[k] != before.get(k, (0, 0))}


def run_notorch():
    check("import memobs.torch without PyTorch", "torch" not in sys.modules and memobs.torch.available())
    e = raised(memobs.torch.use_allocator)
    check("use_allocator(): AllocatorError (a RuntimeError) saying PyTorch is not installed",
          isinstance(e, memobs.torch.AllocatorError) and isinstance(e, RuntimeError) and
          str(e).startswith("memobs.torch.use_allocator(): PyTorch is not installed (import torch: "), repr(e))


# ---------------------------------------------------------------------------

def tensors():
    import torch

    class On(torch.Tensor):
        """A real CPU tensor (its data, dtype and shape are PyTorch's) that
        reports another device: this PyTorch has no CUDA tensors."""

        @staticmethod
        def __new__(cls, t, device):
            r = torch.Tensor._make_subclass(cls, t)
            r._on = torch.device(device)
            return r

        @property
        def device(self):
            return self._on

    return torch, On


def run_record_copy():
    torch, On = tensors()
    cpu16 = torch.zeros(8, 4096, dtype=torch.float16)
    gpu16 = On(torch.zeros(8, 4096, dtype=torch.float16), "cuda:0")
    gpu16b = On(torch.zeros(8, 4096, dtype=torch.float16), "cuda:1")
    cpu32 = torch.zeros(8, 4096, dtype=torch.float32)
    row = torch.ones(4096, dtype=torch.bfloat16)
    gpu_bcast = On(torch.zeros(4, 4096, dtype=torch.bfloat16), "cuda")
    n16 = 8 * 4096 * 2

    memobs.set_phase(None)
    cases = [  # name, call, want returned bytes, want summary delta
        ("H2D, is_prefill=True: prefill", lambda: memobs.torch.record_copy(gpu16, cpu16, True), n16,
         {("prefill", "h2d"): (n16, 1)}),
        ("D2H, is_prefill=False: decode", lambda: memobs.torch.record_copy(cpu16, gpu16, False), n16,
         {("decode", "d2h"): (n16, 1)}),
        ("cuda:0 to cuda:1: D2D", lambda: memobs.torch.record_copy(gpu16b, gpu16, True), n16,
         {("prefill", "d2d"): (n16, 1)}),
        ("blocking D2H float16 -> float32: the source's 2 bytes an element cross (converted on the host)",
         lambda: memobs.torch.record_copy(cpu32, gpu16, True), n16, {("prefill", "d2h"): (n16, 1)}),
        ("non_blocking D2H float16 -> float32: the destination's 4 bytes an element (converted on the device)",
         lambda: memobs.torch.record_copy(cpu32, gpu16, True, non_blocking=True), 2 * n16,
         {("prefill", "d2h"): (2 * n16, 1)}),
        ("H2D of a broadcast row: the expanded destination's bytes", lambda: memobs.torch.record_copy(
            gpu_bcast, row, False), 4 * 4096 * 2, {("decode", "h2d"): (4 * 4096 * 2, 1)}),
        ("host to host: nothing", lambda: memobs.torch.record_copy(cpu32, cpu16, True), 0, {}),
        ("a meta tensor: nothing", lambda: memobs.torch.record_copy(
            torch.empty(8, 4096, device="meta"), cpu16, True), 0, {}),
        ("is_prefill=None: the thread's phase (unphased)", lambda: memobs.torch.record_copy(gpu16, cpu16), n16,
         {("unphased", "h2d"): (n16, 1)}),
    ]
    for name, call, want_n, want in cases:
        t0 = traffic()
        n = call()
        got = delta(t0, traffic())
        check("record_copy: " + name, n == want_n and got == want, "returned %r, want %r" % (n, want_n),
              "summary delta %r, want %r" % (got, want))

    memobs.set_phase("decode")
    t0 = traffic()
    n = memobs.torch.record_copy(gpu16, cpu16)
    check("record_copy after set_phase('decode'), is_prefill=None: decode",
          n == n16 and delta(t0, traffic()) == {("decode", "h2d"): (n16, 1)}, delta(t0, traffic()))
    memobs.set_phase(None)

    # copy(): the copy is PyTorch's, the record memobs'
    src = torch.arange(4096, dtype=torch.float32)
    dst = torch.zeros(4096, dtype=torch.float32)
    t0 = traffic()
    r = memobs.torch.copy(dst, src, is_prefill=True)
    check("copy(host, host): PyTorch copied the values, returned dst, nothing recorded",
          r is dst and torch.equal(dst, src) and delta(t0, traffic()) == {})
    t0 = traffic()
    e = raised(memobs.torch.copy, torch.zeros(3), torch.zeros(5))
    check("copy() that PyTorch refuses (shapes): PyTorch's RuntimeError, nothing recorded",
          isinstance(e, RuntimeError) and delta(t0, traffic()) == {}, repr(e))

    # bad input: the module's errors, nothing recorded
    t0 = traffic()
    bad = [
        ("dst not a tensor: TypeError naming it", lambda: memobs.torch.record_copy(b"x" * 10, cpu16, True),
         TypeError, "memobs.torch: dst must be a tensor (with .device), not bytes"),
        ("src None: TypeError naming it", lambda: memobs.torch.record_copy(gpu16, None, True), TypeError,
         "memobs.torch: src must be a tensor (with .device), not NoneType"),
        ("is_prefill 'yes': the module's ValueError", lambda: memobs.torch.record_copy(gpu16, cpu16, "yes"),
         ValueError, 'record_h2d(): is_prefill (a phase name) must be one of "unphased", "prefill", "decode", '
         "got 'yes'"),
        ("is_prefill a 2-element tensor: its truth value's RuntimeError (ambiguous)",
         lambda: memobs.torch.record_copy(cpu16, gpu16, torch.ones(2)), RuntimeError, None),
    ]
    for name, call, typ, text in bad:
        e = raised(call)
        check("record_copy bad input: " + name, type(e) is typ and (text is None or str(e) == text), repr(e))
    check("record_copy bad input: nothing recorded", delta(t0, traffic()) == {}, delta(t0, traffic()))

    # 4 threads: exact
    t0 = traffic()
    per, threads = 5000, []
    for i in range(4):
        threads.append(threading.Thread(target=lambda p=(i % 2 == 0): [
            memobs.torch.record_copy(gpu16, cpu16, p) for _ in range(per)]))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = delta(t0, traffic())
    check("4 threads x 5000 record_copy: exact per phase",
          got == {("prefill", "h2d"): (2 * per * n16, 2 * per), ("decode", "h2d"): (2 * per * n16, 2 * per)}, got)


class Fake:
    """PyTorch 2's two functions of torch.cuda.memory, as they behave:
    CUDAPluggableAllocator loads the library and looks the two functions
    up (a RuntimeError when either is missing); change_current_allocator
    refuses once PyTorch's allocator was used."""
    used = False
    current = None

    class CUDAPluggableAllocator:
        def __init__(self, path, alloc_fn_name, free_fn_name):
            lib = ctypes.CDLL(path)  # calls release the GIL, as PyTorch's do
            try:
                self.malloc, self.free = getattr(lib, alloc_fn_name), getattr(lib, free_fn_name)
            except AttributeError as e:
                raise RuntimeError("couldn't find the functions in %s: %s" % (path, e)) from None
            self.path = path
            self.malloc.restype, self.malloc.argtypes = ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int,
                                                                          ctypes.c_void_p]
            self.free.restype, self.free.argtypes = None, [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                                           ctypes.c_void_p]

    @staticmethod
    def change_current_allocator(a):
        if Fake.used:
            raise RuntimeError("Can't swap an already initialized allocator")
        Fake.current = a


def give_pytorch2(torch, available):
    torch.cuda.memory.CUDAPluggableAllocator = Fake.CUDAPluggableAllocator
    torch.cuda.memory.change_current_allocator = Fake.change_current_allocator
    torch.cuda.is_available = lambda: available


def run_allocator():
    torch, On = tensors()
    e = raised(memobs.torch.use_allocator)
    check("use_allocator() with this PyTorch (%s): AllocatorError, PyTorch 2.0 or later needed" % torch.__version__,
          isinstance(e, memobs.torch.AllocatorError) and str(e) == (
              "memobs.torch.use_allocator(): torch %s has no torch.cuda.memory.CUDAPluggableAllocator: PyTorch "
              "2.0 or later is needed" % torch.__version__), repr(e))
    check("this PyTorch (real): CUDA not available, no CUDA version", not torch.cuda.is_available() and
          torch.version.cuda is None)

    give_pytorch2(torch, False)
    e = raised(memobs.torch.use_allocator)
    check("given PyTorch 2's functions, CUDA unavailable: AllocatorError naming torch's version and CUDA",
          isinstance(e, memobs.torch.AllocatorError) and str(e) == (
              "memobs.torch.use_allocator(): CUDA is not available to PyTorch (torch %s, built for CUDA None): no "
              "GPU, no driver, or a CPU-only build" % torch.__version__), repr(e))

    give_pytorch2(torch, True)
    e = raised(memobs.torch.use_allocator, runtime="/nonexistent/libcudart.so.13")
    check("a runtime that cannot be loaded: AllocatorError with dlopen's reason; nothing bound",
          isinstance(e, memobs.torch.AllocatorError) and str(e).startswith(
              "memobs.torch.use_allocator(): cannot load the CUDA runtime /nonexistent/libcudart.so.13: ") and
          "No such file" in str(e) and memobs.torch.allocator_settings()["runtime"] is None, repr(e))
    e = raised(memobs.torch.use_allocator, runtime="libm.so.6")
    check("a library that is not a CUDA runtime: AllocatorError naming the missing function",
          isinstance(e, memobs.torch.AllocatorError) and "has no cudaMalloc (CUDA 11.2 or later is needed)" in str(e)
          and memobs.torch.allocator_settings()["runtime"] is None, repr(e))

    Fake.used = True  # a CUDA tensor was made before
    os.environ["MEMOBS_CUDART"] = DOUBLE
    e = raised(memobs.torch.use_allocator)
    check("PyTorch's allocator already used: AllocatorError saying to call use_allocator() first",
          isinstance(e, memobs.torch.AllocatorError) and str(e) == (
              "memobs.torch.use_allocator(): PyTorch's own CUDA allocator was used already in this process (Can't "
              "swap an already initialized allocator); call use_allocator() before the first CUDA tensor is made")
          and Fake.current is None, repr(e))
    Fake.used = False
    a = memobs.torch.use_allocator()
    st = memobs.torch.allocator_settings()
    check("use_allocator(): PyTorch gets the allocator from the extension's own file; runtime from MEMOBS_CUDART",
          a is Fake.current and a.path == memobs._memobs.__file__ and st["runtime"] == DOUBLE and
          st["stream_ordered"] is False and st["take_gil"] is True, a and a.path, st)
    check("use_allocator() again: the same allocator", memobs.torch.use_allocator() is a)
    e = raised(memobs.torch.use_allocator, runtime="/other/libcudart.so.12")
    check("use_allocator(runtime=another): AllocatorError naming both", isinstance(e, memobs.torch.AllocatorError)
          and "in use with the CUDA runtime %s, not /other/libcudart.so.12" % DOUBLE in str(e), repr(e))

    # One memobs: the phase the package sets is the allocation's, one summary has both.
    memobs.set_phase("prefill")
    t0 = traffic()
    p = a.malloc(1 << 20, 0, None)  # site:alloc
    memobs.torch.record_copy(On(torch.zeros(1 << 18), "cuda"), torch.zeros(1 << 18))
    memobs.set_phase(None)
    live = {d["ptr"]: d for d in memobs.get_allocations()}
    blk = live.get(p)
    check("an allocation through PyTorch's handle: tracked by the package's memobs, prefill, device 0, "
          "with this file's line", p is not None and blk is not None and blk["nbytes"] == 1 << 20 and
          blk["phase"] == "prefill" and blk["device"] == 0 and blk["kind"] == "device" and
          "torch_check.py:%d in run_allocator" % site_line("alloc") in (blk["stack"] or ""), blk)
    s = memobs.get_summary()
    check("one summary: the copy beside the allocation (device memory 1 MiB in 1 block, prefill H2D 1 MiB)",
          delta(t0, traffic()) == {("prefill", "h2d"): (1 << 20, 1)} and
          s["memory"]["device"]["current_bytes"] == 1 << 20 and s["memory"]["device"]["live"] == 1 and
          memobs.get_device_bytes(0) == (1 << 20, 1 << 20), delta(t0, traffic()), s["memory"]["device"])
    a.free(p, 1 << 20, 0, None)
    check("the free through PyTorch's handle: gone", p not in {d["ptr"] for d in memobs.get_allocations()} and
          memobs.get_device_bytes(0) == (0, 1 << 20))


def site_line(name):
    with open(__file__, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith("# site:" + name):
                return i
    return -1


def run_nocuda():
    import torch
    check("built without the CUDA headers: available() False, allocator_settings() None",
          memobs.torch.available() is False and memobs.torch.allocator_settings() is None and
          memobs._memobs._cuda_version == 0 and not hasattr(memobs._memobs, "_torch_bind"))
    give_pytorch2(torch, True)
    e = raised(memobs.torch.use_allocator)
    check("use_allocator(): AllocatorError saying how to rebuild with the toolkit",
          isinstance(e, memobs.torch.AllocatorError) and "built without the CUDA Toolkit's headers" in str(e) and
          "MEMOBS_CUDA_HOME=/usr/local/cuda pip install --no-build-isolation ." in str(e), repr(e))
    for fn in (memobs.torch.report, memobs.torch.poll):
        e = raised(fn)
        check("%s(): AllocatorError" % fn.__name__, isinstance(e, memobs.torch.AllocatorError), repr(e))
    _, On = tensors()
    t0 = traffic()
    n = memobs.torch.record_copy(On(torch.zeros(10), "cuda"), torch.zeros(10), False)
    check("record_copy works without the allocator", n == 40 and delta(t0, traffic()) == {("decode", "h2d"): (40, 1)})


def run_pinned(torch):
    """pinned_stats(): memobs' table (empty: no pinned block in this
    process) and PyTorch's host_memory_stats() when there is one; this
    PyTorch (1.13) has none: the present case with a stand-in function."""
    st = memobs.torch.pinned_stats()
    m = st["memobs"]
    check("pinned_stats(): memobs' table, no block seen",
          m["seen"] is False and m["blocks"] == 0 and m["held_bytes"] == 0 and m["classes"] == [] and
          (m["rss_shmem_bytes"] is None or isinstance(m["rss_shmem_bytes"], int)), repr(m))
    if torch is None:
        check("pinned_stats() without PyTorch: torch None, PyTorch not imported",
              st["torch"] is None and "torch" not in sys.modules, repr(st))
        return
    had = hasattr(torch.cuda, "host_memory_stats")
    check("pinned_stats(): torch None where PyTorch has no host_memory_stats (%s)" % torch.__version__,
          had or st["torch"] is None, repr(st["torch"]))
    figures = {"allocated_bytes.current": 6291456, "reserved_bytes.current": 8388608}
    old = getattr(torch.cuda, "host_memory_stats", None)
    try:
        torch.cuda.host_memory_stats = lambda: dict(figures)
        got = memobs.torch.pinned_stats()["torch"]
        check("pinned_stats(): PyTorch's host_memory_stats() as it returns it", got == figures, repr(got))

        def no_cuda():
            raise RuntimeError("no CUDA GPUs are available")
        torch.cuda.host_memory_stats = no_cuda
        got = memobs.torch.pinned_stats()["torch"]
        check("pinned_stats(): torch None when host_memory_stats() raises", got is None, repr(got))
    finally:
        if old is None:
            del torch.cuda.host_memory_stats
        else:
            torch.cuda.host_memory_stats = old
    e1, e2 = raised(memobs.pinned_asked, "x", 1), raised(memobs.pinned_asked, 4096, -1)
    check("pinned_asked(): TypeError for a block that is not an int, ValueError for a negative ask",
          isinstance(e1, TypeError) and isinstance(e2, ValueError), "%r %r" % (e1, e2))


if __name__ == "__main__":
    if MODE == "notorch":
        run_notorch()
        run_pinned(None)
    elif MODE == "torch":
        run_record_copy()
        run_allocator()
        import torch
        run_pinned(torch)
    elif MODE == "nocuda":
        run_nocuda()
    sys.stdout.flush()
    sys.exit(check.failed)
