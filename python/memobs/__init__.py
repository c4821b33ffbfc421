"""memobs for Python engines: transfer counters (H2D, D2H, D2D and the
storage tier's H2S, S2H, D2S, S2D per phase, with their size distribution),
TTFT/TPOT/E2E histograms, regions and markers, summaries and an allocation
tracker with Python stacks, from memobs' C headers.

    import memobs
    memobs.record_h2d(block.nbytes, True)    # bytes, is_prefill (True, False or None)
    memobs.record_h2s(block.nbytes, None)    # a KV block stored to NVMe, in the thread's phase
    with memobs.timed_transfer("s2h", n):    # a load the engine waits for, timed
        f.readinto(buf)
    with memobs.region("decode_step"): ...
    memobs.get_summary(); memobs.print_summary()

memobs.nanovllm: nano-vllm's observer classes backed by memobs.
memobs.torch: PyTorch's CUDA allocator through memobs; tensor copies.
memobs.prometheus: a prometheus_client collector of format_prometheus()'s
families, for an engine that serves /metrics with prometheus_client.

Every function is the C extension (python/memobs/_memobs.c), re-exported
here unchanged: a call costs what a call of the extension costs. Install
with `pip install --no-build-isolation .` from the repository root.

One process, one memobs: under LD_PRELOAD=libmemobs_preload.so (memobs with
no code change, preload/) the package records into the preloaded
library's memobs, so set_phase(), regions, record_*() and Python stacks
(track_python_stacks()) meet the CUDA runtime calls it intercepts in one
set of figures and one summary. At import the package imports
memobs._memobs_attached, a build of the same source that holds no memobs
and binds memobs' symbols to the library's, when the library is in the
process and its memobs_preload_abi() (memobs.h's MEMOBS__ABI_KEY: the
layouts the inline records write) is the package's own key; else
memobs._memobs, which keeps a private memobs. A key that differs gives
one RuntimeWarning naming both keys, then the private memobs.
MEMOBS_PY_ATTACH=0 (also off, false, no) chooses the private memobs.
instance() says which: "preload" or "private". Attached, the package's
record_*() are the program's own claims, counted apart from what the
library observed (get_summary()["manual"]), and memobs.torch has no
allocator (the library observes the runtime's allocations already).

Collectives and peers: NCCL's profiler plugin (libnccl-profiler-memobs.so,
NCCL_PROFILER_PLUGIN=memobs) records a process's collectives into the
package's memobs (or the LD_PRELOAD library's when attached): see
coll_get_stats(), peer_get_stats(), coll_get_info() and get_summary()'s
"collectives" and "peers". An engine's own transfers between instances (a
KV connector over NIXL, UCX, RDMA or TCP) are recorded by hand:
    peer = memobs.peer_intern("decode-3")
    memobs.record_peer_xfer(peer, memobs.PEER_SEND, nbytes)   # the thread's phase
docs/collectives.md has the whole story.

The storage tier (a KV cache offloaded to NVMe, a network filesystem or an
object store): record_h2s / record_s2h (host memory to / from storage) and
record_d2s / record_s2d (GPUDirect Storage) as record_h2d; record_xfer(dir,
nbytes, phase=None) with the direction's name ("h2d" .. "s2d") or DIR_*;
record_xfer_ns(dir, nbytes, phase, ns) and `with timed_transfer(dir,
nbytes):` a transfer the engine timed itself (get_summary()["timed"]);
get_summary()["sizes"] the size distribution of each direction.

Requests: which request moved the bytes. `with memobs.request(rid):` binds
the thread to request rid (begun with request_begin, ended with
request_end): its record_*() calls go to the request's ledger as well as
to the figures. request_xfer(rid, dir, nbytes) records a transfer made
for rid from any thread; request_xfer_split(ids, shares, dir, nbytes) one
made for several, split exactly (the parts add up to nbytes).
request_info(rid) is the ledger of a request in flight, request_top() the
finished ones that moved or waited most, get_summary()["attributed"] the
attributed part of the figures. Ids are ints or strs (request_id(str):
FNV-1a 64 of its UTF-8 bytes, the id memobs' request lines carry).

Stops: where Python's handler of SIGTERM or SIGHUP is SIG_DFL, the package
puts its own there (signal.getsignal shows it; a program that saves and
restores the handlers keeps it): it writes the outputs (MEMOBS_SUMMARY,
MEMOBS_PROM_FILE, ...) and ends the process by the signal as SIG_DFL
would. SIGQUIT is left alone (its core shows where the program was). An
exit by an uncaught KeyboardInterrupt ends in SIGINT, which CPython raises
again after finalizing, past C's exit handlers: an atexit hook of the
package writes the outputs then (flush()). set_signals(False) or
MEMOBS_SIGNALS=0 turns the handlers off.

Names: the C names minus "memobs_" (set_enabled / get_enabled,
region_set_timing / region_get_timing, get_device_bytes, record_ttft...).
The names before 1.0 still work and are deprecated (docs/naming.md):
enable (set_enabled), is_enabled (get_enabled), region_timing
(region_set_timing / region_get_timing), device_bytes (get_device_bytes).
"""
import atexit as _atexit
import os as _os
import sys as _sys
import warnings as _warnings


def _attach():
    """memobs._memobs_attached when the LD_PRELOAD library's memobs is in the
    process with the package's ABI key; None for the private memobs. No
    ctypes: the attached module fails to load where memobs' symbols are
    missing (no preload: the usual case, silent), and the private one, then
    loaded anyway, looks memobs_preload_abi up itself."""
    how = _os.environ.get("MEMOBS_PY_ATTACH", "").strip().lower()
    if how in ("0", "off", "false", "no"):
        return None
    if how not in ("", "1", "on", "true", "yes"):
        _warnings.warn("memobs: MEMOBS_PY_ATTACH=%r is not 0/1/on/off/true/false/yes/no; using 1" % how,
                       RuntimeWarning, stacklevel=3)
    try:
        from . import _memobs_attached as ext
    except ImportError as e:
        from . import _memobs as private
        theirs = private._preload_abi()
        if theirs is not None:
            _warnings.warn("memobs: the LD_PRELOAD library's memobs is in the process (ABI key %#x) but this package "
                           "cannot attach to it (%s); using the package's private memobs: its figures and the "
                           "library's are apart" % (theirs, e), RuntimeWarning, stacklevel=3)
        return None
    theirs = ext._preload_abi()
    if ext._abi_key != theirs:
        _warnings.warn("memobs: the LD_PRELOAD library's memobs has ABI key %#x, this package (memobs %s) %#x: "
                       "built from another memobs.h, so not attached; using the package's private memobs: its "
                       "figures and the library's are apart (rebuild one from the other's memobs.h)"
                       % (theirs, ext.__version__, ext._abi_key), RuntimeWarning, stacklevel=3)
        return None
    return ext


_ext = _attach()
if _ext is None:
    from . import _memobs as _ext  # noqa: F811  (the private memobs)
__version__ = _ext.__version__  # MEMOBS_VERSION of memobs.h

__all__ = [
    "coll_get_info",
    "coll_get_stats",
    "coll_kind_intern",
    "coll_kind_label",
    "coll_register_comm",
    "complete_reset",
    "device_bytes",
    "enable",
    "flush",
    "format_prometheus",
    "get_allocations",
    "get_device_bytes",
    "get_pinned",
    "get_enabled",
    "get_phase",
    "get_regions",
    "get_signals",
    "get_summary",
    "get_torch_history",
    "instance",
    "is_enabled",
    "mark",
    "peer_get_stats",
    "peer_intern",
    "peer_rank",
    "pinned_asked",
    "print_alloc_groups",
    "print_allocations",
    "print_leaks",
    "print_summary",
    "record_coll",
    "record_d2d",
    "record_d2h",
    "record_d2s",
    "record_h2d",
    "record_h2s",
    "record_peer_xfer",
    "record_peer_xfer_timed",
    "record_s2d",
    "record_s2h",
    "record_tpot",
    "record_ttft",
    "record_xfer",
    "record_xfer_ns",
    "region",
    "region_depth",
    "region_get_timing",
    "region_set_timing",
    "region_timing",
    "request",
    "request_begin",
    "request_current",
    "request_end",
    "request_enter",
    "request_id",
    "request_info",
    "request_leave",
    "request_tenant",
    "request_token",
    "request_top",
    "request_xfer",
    "request_xfer_split",
    "reset",
    "set_enabled",
    "set_phase",
    "set_signals",
    "stack_text",
    "timed_transfer",
    "torch_history_start",
    "torch_history_stop",
    "tpot_step",
    "tpot_stop",
    "track_alloc",
    "track_free",
    "track_python_stacks",
    "ttft_start",
    "ttft_stop",
    "untrack_python_stacks",
    "write_html",
    "write_summary",
    "write_torch_snapshot",
    "xfer_begin",
    "xfer_cancel",
    "xfer_end",
    "COLL_ALL_GATHER",
    "COLL_ALL_REDUCE",
    "COLL_ALL_TO_ALL",
    "COLL_BROADCAST",
    "COLL_GATHER",
    "COLL_OTHER",
    "COLL_RECV",
    "COLL_REDUCE",
    "COLL_REDUCE_SCATTER",
    "COLL_SCATTER",
    "COLL_SEND",
    "COLL_SEND_RECV",
    "DIR_D2D",
    "DIR_D2H",
    "DIR_D2S",
    "DIR_H2D",
    "DIR_H2S",
    "DIR_S2D",
    "DIR_S2H",
    "PEER_RECV",
    "PEER_SEND",
]

# Every public name of the chosen extension at top level, the same objects
# (the stub __init__.pyi declares them for linters and type checkers).
for _n in __all__ + ["_region_end"]:
    globals()[_n] = getattr(_ext, _n)
del _n


def _flush_at_interrupt():
    """An exit by an uncaught KeyboardInterrupt: CPython finalizes (running
    this hook), then raises SIGINT again with its default disposition, so
    the process never reaches C's exit handlers, which write the outputs at
    any other exit. Write them here; only then, so that a normal exit does
    not write them twice. The unhandled exception is sys.last_exc (3.12)
    or sys.last_value, set by the top level before finalizing."""
    exc = getattr(_sys, "last_exc", None) or getattr(_sys, "last_value", None)
    if isinstance(exc, KeyboardInterrupt):
        try:
            _ext.flush()
        except OSError:
            pass  # memobs said what failed through its log hook


_atexit.register(_flush_at_interrupt)
_ext._stops()  # SIGTERM and SIGHUP: the package's handler where Python's is SIG_DFL (see set_signals)
