#!/usr/bin/env python3
"""Checks of memobs.torch's allocator (python/memobs/_torch_alloc.c,
inside the package's extension memobs._memobs) against the CUDA runtime
double (tests/cuda/cudart_double.c) built as a shared libcudart.so.13: no
GPU, no PyTorch. The runtime is bound as memobs.torch.use_allocator() binds
it (memobs._memobs._torch_bind); the test calls memobs_torch_malloc and
memobs_torch_free through ctypes from the extension's own file, as
PyTorch's CUDAPluggableAllocator does, from the call chains of
model_desc/fake_model.py, and checks what a user would: the Python stack
tag of each allocation (frames, lines, source, the model_desc cut), kind,
device, stream and phase in the tracker (memobs.get_allocations, the same
memobs instance as the package's functions), stream-ordered frees, errors,
the peak report, memobs.torch.report and the summary counters.

ctypes.PyDLL calls keep the GIL; ctypes.CDLL calls release it, as PyTorch's
bindings do before an operator runs, so CDLL is the PyTorch case.

usage: torch_alloc_check.py MODE RUNTIME SCRATCH_DIR [LABEL]
  (the package memobs on PYTHONPATH; RUNTIME: the double's libcudart.so.13)
  MODE   main   default environment (the shell sets MEMOBS_PY_ROOT)
         nogil  MEMOBS_TORCH_TAKE_GIL=0
         sync   the default (cudaMalloc/cudaFree), or MEMOBS_TORCH_SYNC=1
         hazard          the default: a tensor another stream still reads
         hazard_ordered  MEMOBS_TORCH_STREAM_ORDERED=1: the same tensor
  (the shell adds MEMOBS_TORCH_STREAM_ORDERED=1 to main, nogil, env, off)
         env    MEMOBS_PEAK_MIN=1M MEMOBS_PEAK_GROWTH=0, no MEMOBS_PY_ROOT
         off    MEMOBS_PEAK_REPORT=0 MEMOBS_TORCH_SYNC=maybe MEMOBS_PY_PRIORITY=
  LABEL  put before each check name (e.g. "c++17 build: ")
Prints "ok - torch-alloc: NAME" or "not ok - torch-alloc: NAME" with
"    # " detail lines; exits 1 when a check fails.
"""
import ctypes
import gc
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_desc import fake_model  # noqa: E402
from tap import Tap  # noqa: E402

import memobs  # noqa: E402
import memobs.torch  # noqa: E402

MODE, DBL_SO, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
LABEL = sys.argv[4] if len(sys.argv) > 4 else ""
check = Tap("torch-alloc", LABEL)

# enums of memobs.h and the CUDA runtime
MEM_DEVICE, PHASE_NONE, PHASE_PREFILL = 0, 0, 1
cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorNotSupported = 1, 2, 801
GIL_MARKER = "no Python stack (thread does not hold the GIL)"


class Stderr:
    """Everything written to file descriptor 2 (C's stderr too) in a block."""

    def __enter__(self):
        sys.stderr.flush()
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        return False


class DblCall(ctypes.Structure):  # cudadbl_call_t
    _fields_ = [("dst", ctypes.c_void_p), ("src", ctypes.c_void_p), ("bytes", ctypes.c_size_t),
                ("kind", ctypes.c_int), ("stream", ctypes.c_void_p), ("device", ctypes.c_int),
                ("flags", ctypes.c_uint), ("result", ctypes.c_int), ("stream_kind", ctypes.c_int)]


def declare(lib, sigs):
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def declare_alloc(lib):
    c = ctypes
    return declare(lib, {
        "memobs_torch_malloc": (c.c_void_p, [c.c_ssize_t, c.c_int, c.c_void_p]),
        "memobs_torch_free": (None, [c.c_void_p, c.c_ssize_t, c.c_int, c.c_void_p]),
    })


def declare_dbl(lib):
    c = ctypes
    return declare(lib, {
        "cudaStreamCreate": (c.c_int, [c.POINTER(c.c_void_p)]),
        "cudaGetDevice": (c.c_int, [c.POINTER(c.c_int)]),
        "cudaGetLastError": (c.c_int, []),
        "cudadbl_fail_next": (c.c_int, [c.c_char_p, c.c_uint, c.c_int]),
        "cudadbl_calls": (c.c_long, [c.c_char_p]),
        "cudadbl_last_call": (c.c_int, [c.c_char_p, c.POINTER(DblCall)]),
        "cudadbl_lookup": (c.c_int, [c.c_void_p, c.POINTER(c.c_void_p), c.POINTER(c.c_size_t),
                                     c.POINTER(c.c_int), c.POINTER(c.c_int)]),
        "cudadbl_complete_all": (None, []),
        "cudaMemcpyAsync": (c.c_int, [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, c.c_void_p]),
        "cudadbl_hazards": (c.c_long, []),
        "cudadbl_complete_stream": (c.c_int, [c.c_void_p]),
        "cudadbl_pending": (c.c_long, [c.c_void_p]),
        "cudadbl_set_reuse": (None, [c.c_int]),
    })


# The runtime first, as PyTorch loads its own before the allocator is
# installed; the bind finds it loaded (main) or is given its path.
DBL = declare_dbl(ctypes.PyDLL(DBL_SO))
with Stderr() as LOAD:
    BOUND = memobs._memobs._torch_bind(None if MODE == "main" else DBL_SO)
LIB = declare_alloc(ctypes.PyDLL(memobs._memobs.__file__))  # what PyTorch loads; calls keep the GIL
NOGIL = declare_alloc(ctypes.CDLL(memobs._memobs.__file__))  # the same library; calls release the GIL


def make_empty(fn):
    """A helper outside model_desc between the model and the allocator, as
    torch/nn/functional.py is: kept, as the innermost frame."""
    def device_empty(nbytes, device, stream):
        return fn(nbytes, device, stream)  # site:device_empty
    return device_empty


def site_lines(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"# site:(\w+)$", line.rstrip())
            if m:
                out[m.group(1)] = (i, line.strip())
    return out


MODEL_FILE = fake_model.__file__
SITES = site_lines(MODEL_FILE)
SITES.update(site_lines(os.path.abspath(__file__)))


def frame(func, path, width=50):
    """The two lines memobs_py_format writes for the frame at site func."""
    line, src = SITES[func]
    if len(src) > width:
        src = src[:width - 3] + "..."
    return ["%s:%d in %s" % (path, line, func), "└─ " + src]


def model_frames(funcs, root):
    out = []
    for f in funcs:
        if f == "device_empty":
            path = "torch_alloc_check.py" if root else os.path.abspath(__file__)
        else:
            path = "model_desc/fake_model.py" if root else MODEL_FILE
        out += frame(f, path)
    return out


class Alloc:
    """One dict of memobs.get_allocations(), as attributes."""
    KINDS = {"device": MEM_DEVICE}
    PHASES = {"unphased": PHASE_NONE, "prefill": PHASE_PREFILL}

    def __init__(self, d):
        self.ptr, self.bytes, self.device, self.trace = d["ptr"], d["nbytes"], d["device"], d["trace"]
        self.kind, self.phase = self.KINDS.get(d["kind"], d["kind"]), self.PHASES.get(d["phase"], d["phase"])
        self.stream = d["stream"] or None  # ctypes gives None for a NULL c_void_p
        self.pending_free, self.stack = int(d["pending_free"]), d["stack"]


def allocations():
    return {d["ptr"]: Alloc(d) for d in memobs.get_allocations()}


def trace_lines(ptr):
    """Lines of the Python stack tag of a live allocation (no tag line)."""
    a = allocations().get(ptr)
    if a is None:
        return ["<not tracked>"]
    if a.stack is None:
        return ["<no trace>"]
    return a.stack.split("\n")[1:]  # line 0: the tag, empty here


def device_bytes(dev):
    return memobs.get_device_bytes(dev)[0]


def settle():
    """The GPU catches up; completed stream-ordered frees leave the tracker."""
    DBL.cudadbl_complete_all()
    memobs.torch.poll()


def new_stream():
    s = ctypes.c_void_p()
    assert DBL.cudaStreamCreate(ctypes.byref(s)) == 0
    return s.value


def counter(summary, name):
    m = re.search(r"^\s*%s\s+(\d+)" % re.escape(name), summary, re.M)
    return int(m.group(1)) if m else None


def summary_text():
    with Stderr() as e:
        memobs.print_summary()
    return e.text


def last_call(fn):
    c = DblCall()
    return c if DBL.cudadbl_last_call(fn.encode(), ctypes.byref(c)) == 0 else None


def lookup_device(p):
    base, size, kind, dev = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_int(), ctypes.c_int()
    if not DBL.cudadbl_lookup(p, ctypes.byref(base), ctypes.byref(size), ctypes.byref(kind), ctypes.byref(dev)):
        return None
    return dev.value


def want_lines(name, got, want):
    return check(name, got == want, "want:", *want, "got:", *got)


# ---------------------------------------------------------------------------


def run_main():
    root = True
    check("binds quietly (tag provider, peak report on)", LOAD.text == "", LOAD.text)
    check("no runtime path given: binds the libcudart.so.13 already loaded (PyTorch's, here the double's)",
          BOUND == DBL_SO and memobs.torch.allocator_settings() == {
              "runtime": DBL_SO, "stream_ordered": True, "take_gil": True},
          "bound %r, settings %r" % (BOUND, memobs.torch.allocator_settings()))
    try:
        memobs._memobs._torch_bind("/elsewhere/libcudart.so.13")
        err = None
    except RuntimeError as x:
        err = str(x)
    check("a second bind to another runtime: RuntimeError naming both, the first kept",
          err == "the allocator is already bound to the CUDA runtime %s, not /elsewhere/libcudart.so.13" % DBL_SO
          and memobs._memobs._torch_bind(None) == DBL_SO and memobs._memobs._torch_bind(DBL_SO) == DBL_SO, err)
    s = new_stream()

    calls = DBL.cudadbl_calls(b"cudaMallocAsync")
    with Stderr() as e:
        z, neg = LIB.memobs_torch_malloc(0, 0, s), LIB.memobs_torch_malloc(-1, 0, s)
    check("size 0 (and -1) gives NULL, no runtime call, nothing tracked, nothing said",
          z is None and neg is None and DBL.cudadbl_calls(b"cudaMallocAsync") == calls and not allocations()
          and e.text == "", "pointers %r %r, runtime calls %d -> %d, live %d, stderr %r" %
          (z, neg, calls, DBL.cudadbl_calls(b"cudaMallocAsync"), len(allocations()), e.text))

    # A model call with the GIL held (PyDLL), in the prefill phase.
    memobs.set_phase("prefill")
    p1 = fake_model.FakeModel(make_empty(LIB.memobs_torch_malloc), 0, s).serve(4096)
    memobs.set_phase(None)
    a = allocations().get(p1)
    lc = last_call("cudaMallocAsync")
    check("cudaMallocAsync on the stream given; tracked as device memory, device 0, that stream, prefill",
          p1 and a and a.kind == MEM_DEVICE and a.device == 0 and a.stream == s and a.phase == PHASE_PREFILL
          and a.bytes == 4096 and lc and lc.stream == s and lc.bytes == 4096 and lc.dst == p1,
          "pointer %r, tracked %r, last call %r" % (p1, a and (a.kind, a.device, a.stream, a.phase, a.bytes),
                                                   lc and (lc.stream, lc.bytes, lc.dst)))
    want = model_frames(["serve", "forward", "attention", "device_empty"], root)
    want_lines("GIL held (PyDLL): the Python stack from the outermost model_desc frame in, "
               "file:line, function and source of each frame", trace_lines(p1), want)

    # The PyTorch case: the GIL released around the call (CDLL).
    p2 = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s).serve(4096)
    a1, a2 = allocations().get(p1), allocations().get(p2)
    check("GIL released (CDLL, as PyTorch's bindings do): the library takes it, same frames, same trace id",
          a1 and a2 and a1.trace == a2.trace and trace_lines(p2) == want, *trace_lines(p2))

    p3 = fake_model.level1(NOGIL.memobs_torch_malloc, 8192)
    want3 = model_frames(["level1", "level2"], root) + ["... 3 frames ..."] + model_frames(["level6", "level7"], root)
    want_lines("seven model_desc frames: first 2, '... 3 frames ...', last 2", trace_lines(p3), want3)

    p4 = fake_model.in_thread(NOGIL.memobs_torch_malloc, 12288)
    want_lines("another Python thread: its own stack (threading.py frames above model_desc cut)",
               trace_lines(p4), model_frames(["worker"], root))

    # Stream-ordered free: pending until the stream gets there.
    before = device_bytes(0)
    LIB.memobs_torch_free(p1, 4096, 0, s)
    a = allocations().get(p1)
    pending = a is not None and a.pending_free == 1 and device_bytes(0) == before
    settle()
    check("free: cudaFreeAsync on the stream; block pending until the stream completes, then gone",
          pending and p1 not in allocations() and device_bytes(0) == before - 4096 and
          last_call("cudaFreeAsync").stream == s,
          "pending %r, live after %r, device bytes %d -> %d" % (pending, p1 in allocations(), before,
                                                                device_bytes(0)))
    for p, n in ((p2, 4096), (p3, 8192), (p4, 12288)):
        NOGIL.memobs_torch_free(p, n, 0, None)
    settle()

    # Another device than the current one.
    cur = ctypes.c_int(-1)
    p5 = LIB.memobs_torch_malloc(4096, 1, None)
    DBL.cudaGetDevice(ctypes.byref(cur))
    a = allocations().get(p5)
    check("device 1 asked, device 0 current: allocated on device 1, tracked there, device 0 current again",
          p5 and lookup_device(p5) == 1 and a and a.device == 1 and cur.value == 0 and device_bytes(1) == 4096,
          "runtime device %r, tracked %r, current after %d" % (lookup_device(p5), a and a.device, cur.value))
    LIB.memobs_torch_free(p5, 4096, 1, None)
    settle()
    DBL.cudaGetDevice(ctypes.byref(cur))
    check("free on device 1: released there, current device restored",
          p5 not in allocations() and lookup_device(p5) is None and device_bytes(1) == 0 and cur.value == 0)

    with Stderr() as e:
        LIB.memobs_torch_free(None, 0, 0, None)
    check("free(NULL): ignored, nothing said", e.text == "", e.text)
    with Stderr() as e:
        LIB.memobs_torch_free(0x1000, 16, 0, None)
    err = DBL.cudaGetLastError()
    lines = e.text.splitlines()
    check("free of an unknown pointer: one error line through memobs' log hook, no crash, last error cleared",
          len(lines) == 1 and "memobs_torch_free(0x1000, device 0): cudaFreeAsync: invalid argument "
          "(cudaErrorInvalidValue)" in lines[0] and err == 0, e.text, "last error %d" % err)

    model = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s)
    keep = model.serve(8192)
    DBL.cudadbl_fail_next(b"cudaMallocAsync", 1, cudaErrorMemoryAllocation)
    with Stderr() as e:
        p = model.serve(1 << 20)
    err = DBL.cudaGetLastError()
    check("out of memory: NULL; the flight recorder (summary, live blocks with their Python stacks) on "
          "stderr; last error cleared",
          p is None and err == 0 and "] cudaMallocAsync(1048576 bytes, 1.05 MB) failed: cudaErrorMemoryAllocation "
          "(out of memory 1 of 3)" in e.text and "== memobs summary ==" in e.text and
          "== memobs allocations == " in e.text and "┌─ Python Stack Trace" in e.text and
          "│    model_desc/fake_model.py:%d in attention" % SITES["attention"][0] in e.text,
          "pointer %r, last error %d" % (p, err), e.text[:3000])
    DBL.cudadbl_fail_next(b"cudaMallocAsync", 1, cudaErrorInvalidValue)
    with Stderr() as e:
        p = model.serve(4096)
    lines = e.text.splitlines()
    check("another runtime error: NULL, one line naming the call, size and device",
          p is None and len(lines) == 1 and
          "memobs_torch_malloc(4096 bytes, device 0): cudaMallocAsync: invalid argument (cudaErrorInvalidValue)"
          in lines[0] and DBL.cudaGetLastError() == 0, e.text)

    # Peak report, on by default: 64 MiB at least, then 10% more.
    with Stderr() as e:
        big = model.serve(70 << 20)
    now = device_bytes(0)
    check("peak report on stderr by default: new maximum past 64 MiB, block table, the stack that made it",
          big and "memobs: [rank 0] device 0 tracked memory reached new maximum %d bytes" % now in e.text and
          "| 0x%016x |     73400320 (     70.00) | device  |   0 | unphased |" % big in e.text and
          "│    model_desc/fake_model.py:%d in attention" % SITES["attention"][0] in e.text, e.text[:3000])
    with Stderr() as e:
        more = model.serve(1 << 20)
    check("no second report below 10% growth", more and e.text == "", e.text[:2000])

    # The report written for a script.
    path = os.path.join(SCRATCH, "report_%s.txt" % MODE)
    memobs.torch.report(path)
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    check("memobs.torch.report(path): block table, bytes per trace with boxed Python stacks, devices",
          re.search(r"^== memobs allocations == rank 0 pid \d+: 3 allocations live, "
                                r"%d bytes" % device_bytes(0), text, re.M) and
          "== memobs allocations by trace == " in text and "┌─ Python Stack Trace" in text and
          "│    model_desc/fake_model.py:%d in serve" % SITES["serve"][0] in text and
          "│    └─ return self.forward(nbytes)  # site:serve" in text and
          "== memobs devices == " in text and re.search(r"^device 0: driver used .* memobs tracks", text, re.M),
          text[:3000])
    with Stderr() as e:
        memobs.torch.report()
    check("memobs.torch.report(): to stderr", e.text.startswith("== memobs allocations == "), e.text[:500])
    with Stderr() as e:
        try:
            memobs.torch.report("/nonexistent/dir/report.txt")
            err = None
        except OSError as x:
            err = x
    check("memobs.torch.report to an unwritable path: FileNotFoundError naming it, nothing on stderr",
          isinstance(err, FileNotFoundError) and "/nonexistent/dir/report.txt" in str(err) and e.text == "",
          repr(err), e.text)

    summary = summary_text()
    check("summary counters: torch_gil_taken 8, torch_alloc_failed 2, torch_free_failed 1",
          counter(summary, "torch_gil_taken") == 8 and counter(summary, "torch_alloc_failed") == 2 and
          counter(summary, "torch_free_failed") == 1, summary)
    for p, n in ((keep, 8192), (big, 70 << 20), (more, 1 << 20)):
        LIB.memobs_torch_free(p, n, 0, s)
    settle()

    gc_stress(s)

    # Last: a device without stream-ordered allocation (permanent switch).
    DBL.cudadbl_fail_next(b"cudaMallocAsync", 1, cudaErrorNotSupported)
    m0, a0 = DBL.cudadbl_calls(b"cudaMalloc"), DBL.cudadbl_calls(b"cudaMallocAsync")
    with Stderr() as e:
        p = model.serve(4096)
        q = model.serve(4096)
    m1, a1 = DBL.cudadbl_calls(b"cudaMalloc"), DBL.cudadbl_calls(b"cudaMallocAsync")
    LIB.memobs_torch_free(p, 4096, 0, s)
    gone = p not in allocations() and DBL.cudadbl_calls(b"cudaFree") >= 1
    LIB.memobs_torch_free(q, 4096, 0, s)
    check("cudaMallocAsync not supported: one notice, cudaMalloc/cudaFree from then on",
          p and q and m1 - m0 == 2 and a1 - a0 == 1 and gone and q not in allocations() and
          e.text == "memobs_torch: cudaMallocAsync is not supported on device 0; using cudaMalloc and cudaFree "
          "from now on\n", "cudaMalloc %d -> %d, cudaMallocAsync %d -> %d, freed at once %r" % (m0, m1, a0, a1, gone),
          e.text)


class Cyclic:
    """Garbage in a reference cycle whose finalizer frees a block and
    allocates another. The garbage collector runs it; CPython 3.11 starts
    a collection when a GC object is allocated, and the frame walk of a
    capture allocates frame objects."""
    state = None

    def __init__(self, ptr):
        self.ptr, self.me = ptr, self

    def __del__(self):
        st = Cyclic.state
        st["dels"] += 1
        caller = sys._getframe(1)  # the frame that was running when the collection started
        if caller.f_code.co_name == "stress_empty" and caller.f_lineno == SITES["stress_call"][0]:
            st["dels_in_call"] += 1
        LIB.memobs_torch_free(self.ptr, 256, 0, None)
        st["extra"].append(LIB.memobs_torch_malloc(256, 0, None))


def gc_stress(s):
    st = Cyclic.state = {"dels": 0, "dels_in_call": 0, "extra": []}
    base = device_bytes(0)
    stash = [LIB.memobs_torch_malloc(256, 0, None) for _ in range(300)]

    def make(fn):
        def stress_empty(nbytes, device, stream):
            Cyclic(stash.pop())  # garbage from here on: the next collection runs its finalizer
            return fn(nbytes, device, stream)  # site:stress_call
        return stress_empty

    got = []
    old = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1, 1, 1)
    try:
        for i in range(300):
            fn = LIB.memobs_torch_malloc if i % 2 else NOGIL.memobs_torch_malloc
            got.append(fake_model.FakeModel(make(fn), 0, s).serve(1024))
    finally:
        gc.set_threshold(*old)
    gc.collect()
    for p in got:
        LIB.memobs_torch_free(p, 1024, 0, s)
    for p in st["extra"]:
        LIB.memobs_torch_free(p, 256, 0, None)
    settle()
    inside = sys.version_info < (3, 12)  # 3.12+ runs the collector at the next bytecode instead
    check("garbage collection inside captures (finalizers free and allocate): no deadlock, all tracked, "
          "all freed" + ("" if inside else " # collections inside the call not expected on 3.12+"),
          all(got) and all(st["extra"]) and st["dels"] == 300 and device_bytes(0) == base and
          (st["dels_in_call"] > 0 or not inside),
          "finalizers %d (%d inside an allocation call), device bytes %d -> %d" %
          (st["dels"], st["dels_in_call"], base, device_bytes(0)))


def run_nogil():
    s = new_stream()
    p = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s).serve(4096)
    want_lines("MEMOBS_TORCH_TAKE_GIL=0, GIL released (CDLL): the marker names the GIL",
               trace_lines(p), [GIL_MARKER])
    q = fake_model.FakeModel(make_empty(LIB.memobs_torch_malloc), 0, s).serve(4096)
    want_lines("MEMOBS_TORCH_TAKE_GIL=0, GIL held (PyDLL): the stack", trace_lines(q),
               model_frames(["serve", "forward", "attention", "device_empty"], True))
    check("MEMOBS_TORCH_TAKE_GIL=0: the GIL never taken (no torch_gil_taken counter)",
          counter(summary_text(), "torch_gil_taken") is None)


def run_sync():
    s = new_stream()
    m, a = DBL.cudadbl_calls(b"cudaMalloc"), DBL.cudadbl_calls(b"cudaMallocAsync")
    p = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s).serve(4096)
    info = allocations().get(p)
    check("cudaMalloc, tracked as device memory with its stack",
          p and DBL.cudadbl_calls(b"cudaMalloc") == m + 1 and DBL.cudadbl_calls(b"cudaMallocAsync") == a and
          info and info.kind == MEM_DEVICE and info.device == 0 and
          trace_lines(p) == model_frames(["serve", "forward", "attention", "device_empty"], True))
    LIB.memobs_torch_free(p, 4096, 0, s)
    check("cudaFree, gone at once", p not in allocations() and
          DBL.cudadbl_calls(b"cudaFree") == 1 and DBL.cudadbl_calls(b"cudaFreeAsync") == 0)


def side_stream_case():
    """A tensor allocated on stream a is read by a copy on side stream b
    (still pending: the GPU has not got there), then freed, as PyTorch frees
    it: with a's stream only. Stream a gets there and the same size is
    allocated again. Returns (hazards the double saw: memory released or
    handed out while b still read it; ops of b pending after the free)."""
    n = 1 << 20
    a, b = new_stream(), new_stream()
    DBL.cudadbl_set_reuse(1)
    host = ctypes.create_string_buffer(n)
    p = NOGIL.memobs_torch_malloc(n, 0, a)
    assert p and DBL.cudaMemcpyAsync(ctypes.addressof(host), p, n, 2, b) == 0  # D2H on b
    h0 = DBL.cudadbl_hazards()
    NOGIL.memobs_torch_free(p, n, 0, a)
    pending_b = DBL.cudadbl_pending(b)
    DBL.cudadbl_complete_stream(a)
    q = NOGIL.memobs_torch_malloc(n, 0, a)
    hz = DBL.cudadbl_hazards() - h0
    settle()
    NOGIL.memobs_torch_free(q, n, 0, a)
    settle()
    DBL.cudadbl_set_reuse(0)
    return hz, pending_b


def run_hazard():
    hz, pending_b = side_stream_case()
    check("default (cudaFree): a tensor a side stream still reads waits for that stream before its memory "
          "can be reused: no hazard", hz == 0 and pending_b == 0,
          "hazards %d, side stream ops pending after the free %d" % (hz, pending_b))


def run_hazard_ordered():
    hz, pending_b = side_stream_case()
    check("MEMOBS_TORCH_STREAM_ORDERED=1: the documented hazard: the block is released and handed out again "
          "while the side stream still reads it", hz >= 1 and pending_b == 1,
          "hazards %d, side stream ops pending after the free %d" % (hz, pending_b))


def run_env():
    s = new_stream()
    model = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s)
    with Stderr() as e:
        p = model.serve(2 << 20)
    with Stderr() as e2:
        q = model.serve(4096)
    check("MEMOBS_PEAK_MIN=1M, MEMOBS_PEAK_GROWTH=0 without MEMOBS_PEAK_REPORT: a report at 2 MiB and at "
          "every new maximum", p and q and "reached new maximum 2097152 bytes" in e.text and
          "reached new maximum 2101248 bytes (2.00 MiB), previous is 2097152" in e2.text, e.text[:1500], e2.text[:1500])
    want_lines("no MEMOBS_PY_ROOT: whole paths", trace_lines(p),
               model_frames(["serve", "forward", "attention", "device_empty"], False))


def run_off():
    lines = LOAD.text.splitlines()
    check("MEMOBS_TORCH_SYNC=maybe: one warning at load, stream-ordered allocation kept",
          lines == ["memobs_torch: warning: MEMOBS_TORCH_SYNC='maybe' is not 0/1/on/off/true/false/yes/no; "
                    "using 0"], LOAD.text)
    s = new_stream()
    with Stderr() as e:
        p = fake_model.FakeModel(make_empty(NOGIL.memobs_torch_malloc), 0, s).serve(100 << 20)
    check("MEMOBS_PEAK_REPORT=0: no peak report", p and e.text == "" and
          last_call("cudaMallocAsync").dst == p, e.text[:1000])
    got = trace_lines(p)
    check("MEMOBS_PY_PRIORITY='': no cut, the whole stack from <module> (first 2, last 2 frames)",
          len(got) == 9 and re.fullmatch(r".*/torch_alloc_check\.py:\d+ in <module>", got[0]) and
          re.fullmatch(r"\.\.\. \d+ frames \.\.\.", got[4]) and got[5:] == model_frames(
              ["attention", "device_empty"], False), *got)


if __name__ == "__main__":
    {"main": run_main, "nogil": run_nogil, "sync": run_sync, "env": run_env, "off": run_off,
     "hazard": run_hazard, "hazard_ordered": run_hazard_ordered}[MODE]()
    sys.stdout.flush()
    sys.exit(check.failed)
