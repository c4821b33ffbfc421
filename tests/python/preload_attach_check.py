"""tests/preload/test_preload_python.sh: the package memobs under
LD_PRELOAD=libmemobs_preload.so, attached to the library's memobs.

preload_attach_check.py MODE DIR: DIR holds libuser.so (tests/preload/user.c:
cudaMalloc, an H2D cudaMemcpy, cudaFree) and libpyuser.so
(tests/preload/pyuser.c: cudaMalloc kept until cudaFree), both linked with
the runtime double as libcudart.so.13, called through ctypes.

MODE attached: the package chose memobs._memobs_attached (and never loaded
memobs._memobs); set_phase() and a region from Python file the copies the
preload intercepts; record_*() are counted apart ("manual"); Python stacks
on the allocations the preload intercepts; memobs.torch has no allocator;
memobs.prometheus.Collector's scrape holds the preload's figures.
Prints one "ok - preload-python: NAME" / "not ok - ..." line per check, then
"expect: JSON", what the preload's summary at exit must hold.

MODE private: the package kept its private memobs (MEMOBS_PY_ATTACH=0, or
no preload): its figures are its own, the copies the preload intercepts are
not in them, get_summary()["manual"] is off and zero. Prints
"expect: JSON" too (for the preload's summary, when there is one)."""
import ctypes
import inspect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import Tap  # noqa: E402

import memobs  # noqa: E402
import memobs.torch  # noqa: E402

MODE, DIR = sys.argv[1], sys.argv[2]
tap = Tap("preload-python", MODE + ": ")

user = ctypes.CDLL(os.path.join(DIR, "libuser.so"))
user.user_h2d.argtypes = [ctypes.c_size_t]
GIL = ctypes.PyDLL(os.path.join(DIR, "libpyuser.so"))  # calls keep the GIL
NOGIL = ctypes.CDLL(os.path.join(DIR, "libpyuser.so"))  # the same library; calls release the GIL
for lib in (GIL, NOGIL):
    lib.pyuser_alloc.restype, lib.pyuser_alloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    lib.pyuser_free.argtypes = [ctypes.c_void_p]

ZERO = {d + k: 0 for d in ("h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d") for k in ("_bytes", "_count")}


def dirs(**kw):
    d = dict(ZERO)
    d.update(kw)
    return d


def here():
    """The line of the caller's call."""
    return inspect.currentframe().f_back.f_lineno


# the same traffic in both modes: two intercepted copies by phase (one in a
# region), three of the program's own records
memobs.set_phase("decode")
if user.user_h2d(4096) != 0:
    sys.exit("user_h2d(4096) failed")
memobs.set_phase("prefill")
with memobs.region("py_step"):
    if user.user_h2d(1000) != 0:
        sys.exit("user_h2d(1000) failed")
memobs.record_h2d(100, True)
memobs.record_d2h(50, False)
memobs.record_h2d(7, None)  # the thread's phase: prefill
memobs.record_xfer_ns("s2h", 300, None, 50)  # a load timed by the program: the storage tier is never apart
memobs.set_phase(None)
s = memobs.get_summary()
steps = [r for r in s["regions"] if r["name"] == "py_step"]

if MODE == "attached":
    tap("memobs.instance() is \"preload\"; memobs._memobs (a second memobs) never loaded",
        memobs.instance() == "preload" and "memobs._memobs" not in sys.modules
        and sys.modules["memobs._memobs_attached"] is memobs._ext,
        "instance %r; loaded: %s" % (memobs.instance(), sorted(m for m in sys.modules if m.startswith("memobs"))))
    abi = ctypes.CDLL(None).memobs_preload_abi
    abi.restype = ctypes.c_uint64
    tap("the module's ABI key (_abi_key) is the preload's (memobs_preload_abi())", abi() == memobs._ext._abi_key,
        "%#x vs %#x" % (abi(), memobs._ext._abi_key))
    want_obs = {"total": dirs(h2d_bytes=5096, h2d_count=2, s2h_bytes=300, s2h_count=1),
                "phases": {"prefill": dirs(h2d_bytes=1000, h2d_count=1, s2h_bytes=300, s2h_count=1),
                           "decode": dirs(h2d_bytes=4096, h2d_count=1), "unphased": ZERO}}
    got_obs = {"total": s["total"], "phases": s["phases"]}
    tap("set_phase() from Python files the intercepted copies: 4096 B decode, 1000 B prefill (observed), exact; "
        "the storage tier's record_xfer_ns among them (never apart)",
        got_obs == want_obs, "expected %s" % want_obs, "got      %s" % got_obs)
    tap("record_xfer_ns attached: timed in the preload's memobs (prefill s2h: 300 B, 1, 50 ns)",
        s["timed"]["prefill"]["s2h"] == {"bytes": 300, "count": 1, "ns": 50}, s["timed"]["prefill"])
    want_man = {"apart": True, "total": dirs(h2d_bytes=107, h2d_count=2, d2h_bytes=50, d2h_count=1),
                "prefill": dirs(h2d_bytes=107, h2d_count=2), "decode": dirs(d2h_bytes=50, d2h_count=1),
                "unphased": ZERO}
    tap("record_h2d/record_d2h are the program's own claims, apart: get_summary()['manual'] exact",
        s["manual"] == want_man, "expected %s" % want_man, "got      %s" % s["manual"])
    tap("a region from Python is the preload's: py_step ended once, timed",
        len(steps) == 1 and steps[0]["count"] == 1 and steps[0]["timed"] == 1 and steps[0]["total_ns"] > 0, steps)

    # memobs.prometheus reads the preload's memobs too: the copies it intercepted
    # (observed, by phase) and the program's records apart, in one scrape
    try:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.parser import text_string_to_metric_families
        import memobs.prometheus
    except ImportError as e:
        tap("memobs.prometheus.Collector attached: prometheus_client importable (Debian's python3-prometheus-client; "
            "tests/deps.sh installs it)", False, e)
    else:
        reg = CollectorRegistry()
        reg.register(memobs.prometheus.Collector())

        def samples(text):
            return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "host"))): s.value
                    for m in text_string_to_metric_families(text) for s in m.samples}

        prom = samples(generate_latest(reg).decode("utf-8"))
        same = prom == samples(memobs.format_prometheus())

        def h2d(family, phase):
            return prom.get((family, (("direction", "h2d"), ("job_id", ""), ("local_rank", "0"), ("phase", phase),
                                      ("rank", "0"))))
        got_prom = {p: (h2d("memobs_transfer_bytes_total", p), h2d("memobs_manual_transfer_bytes_total", p))
                    for p in ("decode", "prefill")}
        want_prom = {"decode": (4096, 0), "prefill": (1000, 107)}
        tap("memobs.prometheus.Collector's scrape is the preload's memobs: H2D observed 4096 B decode, 1000 B "
            "prefill (the intercepted copies), manual 107 B prefill apart; the same samples as format_prometheus()",
            got_prom == want_prom and same and len(prom) >= 500,
            "expected %s" % want_prom, "got      %s" % got_prom, "same as format_prometheus(): %s" % same,
            "%d samples" % len(prom))

    # Python stacks on the allocations the preload intercepts
    memobs.track_python_stacks(priority="", skip="", root="")

    def holder():
        return GIL.pyuser_alloc(1 << 20), here()

    p1, l1 = holder()
    l0 = here() - 1
    p2 = NOGIL.pyuser_alloc(4096)
    memobs.track_python_stacks(priority="", skip="", root="", take_gil=True)
    p3, l3 = NOGIL.pyuser_alloc(8192), here()
    memobs.untrack_python_stacks()
    me = os.path.abspath(__file__)
    want = {
        1 << 20: "\n%s:%d in <module>\n└─ p1, l1 = holder()\n%s:%d in holder\n└─ return GIL.pyuser_alloc(1 << 20), here()"
        % (me, l0, me, l1),
        4096: "\nno Python stack (thread does not hold the GIL)",
        8192: "\n%s:%d in <module>\n└─ p3, l3 = NOGIL.pyuser_alloc(8192), here()" % (me, l3),
    }
    live = {a["nbytes"]: a for a in memobs.get_allocations()}
    got = {n: live[n]["stack"] if n in live else None for n in want}
    tap("track_python_stacks() registers with the preload's memobs: an intercepted cudaMalloc carries the Python "
        "stack (GIL held: its frames; released: the marker; take_gil=True: its frames)",
        got == want and all(live[n]["kind"] == "device" for n in want) and len(live) == 3,
        *["%d: expected %r\n   got      %r" % (n, want[n], got[n]) for n in want if got[n] != want[n]],
        "live: %s" % sorted(live))
    path = os.path.join(DIR, "attached_groups.txt")
    memobs.print_alloc_groups(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tap("print_alloc_groups(): the preload's table, 3 allocations live, 1060864 bytes, the Python line in a box",
        "3 allocations live, 1060864 bytes" in text and "│    └─ return GIL.pyuser_alloc(1 << 20), here()" in text,
        text[:1500])
    if NOGIL.pyuser_free(p2) != 0 or NOGIL.pyuser_free(p3) != 0:
        sys.exit("pyuser_free failed")

    try:
        memobs.torch.use_allocator()
    except memobs.torch.AllocatorError as e:
        msg = str(e)
    else:
        msg = None
    tap("memobs.torch: no allocator when attached (available() False, use_allocator() raises AllocatorError saying why)",
        not memobs.torch.available() and memobs.torch.allocator_settings() is None and msg is not None
        and "attached to the LD_PRELOAD library" in msg and "MEMOBS_PY_ATTACH=0" in msg, msg)
    # what the preload writes at exit: the same figures, one live block (p1)
    expect = {"total": want_obs["total"], "prefill": want_obs["phases"]["prefill"],
              "decode": want_obs["phases"]["decode"], "manual": want_man,
              "timed": {"prefill": {"s2h": {"bytes": 300, "count": 1, "ns": 50}}},
              "memory": {"device": {"allocs": 5, "frees": 4, "current_bytes": 1 << 20,
                                    "peak_bytes": (1 << 20) + 4096 + 8192}}}
else:
    tap("memobs.instance() is \"private\"; memobs._memobs_attached not chosen",
        memobs.instance() == "private" and memobs._ext is sys.modules["memobs._memobs"], memobs.instance())
    mine = {"total": s["total"], "manual": s["manual"]}
    want = {"total": dirs(h2d_bytes=107, h2d_count=2, d2h_bytes=50, d2h_count=1, s2h_bytes=300, s2h_count=1),
            "manual": {"apart": False, "total": ZERO, "prefill": ZERO, "decode": ZERO, "unphased": ZERO}}
    tap("the private memobs holds the program's own records only (not the intercepted copies); manual off, zero",
        mine == want, "expected %s" % want, "got      %s" % mine)
    tap("the region is the private memobs' (py_step ended once)", len(steps) == 1 and steps[0]["count"] == 1, steps)
    # the preload's own figures, when it is there: the copies, unphased (the
    # phase went to the private memobs), none of the program's records
    expect = {"total": dirs(h2d_bytes=5096, h2d_count=2), "unphased": dirs(h2d_bytes=5096, h2d_count=2),
              "manual": {"apart": True, "total": ZERO}, "regions": []}
print("expect: " + json.dumps(expect))
sys.exit(tap.failed)
