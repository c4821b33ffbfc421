"""memobs.torch: memobs for PyTorch programs.

    import memobs, memobs.torch
    memobs.torch.use_allocator()      # first: before the process makes any CUDA tensor
    ...
    memobs.set_phase("prefill")
    kv_gpu.copy_(kv_cpu, non_blocking=True)
    memobs.torch.record_copy(kv_gpu, kv_cpu, non_blocking=True)   # H2D, its bytes, this thread's phase
    memobs.torch.copy(kv_cpu, kv_gpu)  # or: the copy and its record in one call
    memobs.torch.report("live.txt")   # live blocks, bytes per Python line, the driver's view
    memobs.print_summary()

use_allocator() puts every PyTorch CUDA allocation into memobs' allocation
tracker, tagged with the Python stack that made it, through PyTorch's
pluggable allocator (torch.cuda.memory.CUDAPluggableAllocator and
change_current_allocator; PyTorch 2.0 or later). The allocator is C code
inside the package's extension memobs._memobs, built when setup.py finds
the CUDA Toolkit's headers (python/memobs/_torch_alloc.c says what it does,
its environment and its costs). It is the same memobs instance as the rest
of the package: memobs.set_phase() is the phase of the allocations, one
summary and one report show copies and memory together.

Under LD_PRELOAD=libmemobs_preload.so the package is attached to that
library's memobs (memobs.instance() == "preload"), which observes the CUDA
runtime's allocations itself: there is no allocator then (available() is
False, use_allocator() raises AllocatorError saying so); record_copy() and
copy() record into the library's memobs, apart as the program's own claims.

This module imports PyTorch only inside use_allocator(); record_copy() and
copy() take any objects with PyTorch's tensor interface (.device.type,
.numel(), .element_size()).
"""
import os
import sys as _sys
from typing import Any, Dict, Optional, Union

from . import _ext as _memobs  # the extension memobs chose at import (memobs.instance())

_Path = Union[str, "os.PathLike[str]"]

__all__ = ["AllocatorError", "available", "use_allocator", "allocator_settings", "record_copy", "copy", "report",
           "poll", "pinned_stats"]


class AllocatorError(RuntimeError):
    """use_allocator() could not put memobs' allocator into PyTorch."""


_allocator = None  # the CUDAPluggableAllocator: PyTorch needs it alive while it allocates


def available() -> bool:
    """True when this build of memobs holds the allocator (it was built with
    the CUDA Toolkit's headers) and the package keeps its private memobs
    (under the LD_PRELOAD library, memobs.instance() == "preload", there is
    no allocator: the library observes the runtime's allocations)."""
    return bool(_memobs._cuda_version)


_ATTACHED = ("memobs.torch.use_allocator(): memobs is attached to the LD_PRELOAD library (libmemobs_preload.so; "
             "memobs.instance() == \"preload\"), which already observes every CUDA runtime allocation, PyTorch's "
             "caching allocator's cudaMalloc included: memory is tracked without this allocator, which the attached "
             "package does not hold. Call memobs.track_python_stacks(take_gil=True) for Python stacks on those "
             "allocations, or set MEMOBS_PY_ATTACH=0 for the package's private memobs with its allocator.")


def use_allocator(runtime: Optional[_Path] = None) -> Any:
    """Makes memobs' allocator PyTorch's CUDA allocator, once per process;
    returns PyTorch's CUDAPluggableAllocator object (a later call returns
    the same one). Call it before anything makes a CUDA tensor: PyTorch
    cannot swap an allocator it has used.

    runtime: the CUDA runtime library the allocator calls (a path). By
    default MEMOBS_CUDART, else the one PyTorch loaded, else
    libcudart.so.<major> of the toolkit memobs was built with.

    Raises AllocatorError, with what to do, when PyTorch is missing or older
    than 2.0, memobs was built without the CUDA headers or is attached to the
    LD_PRELOAD library, CUDA is not available to PyTorch, no runtime can be
    loaded, or PyTorch's own allocator was used already."""
    global _allocator
    if _memobs.instance() == "preload":
        raise AllocatorError(_ATTACHED)
    if _allocator is not None:
        if runtime is not None and os.fspath(runtime) != _memobs._torch_settings()["runtime"]:
            raise AllocatorError("memobs.torch.use_allocator(): the allocator is in use with the CUDA runtime %s, "
                                 "not %s" % (_memobs._torch_settings()["runtime"], os.fspath(runtime)))
        return _allocator
    try:
        import torch
    except ImportError as e:
        raise AllocatorError("memobs.torch.use_allocator(): PyTorch is not installed (import torch: %s); install "
                             "PyTorch 2.0 or later with CUDA" % e) from None
    mem = getattr(getattr(torch, "cuda", None), "memory", None)
    if not (hasattr(mem, "CUDAPluggableAllocator") and hasattr(mem, "change_current_allocator")):
        raise AllocatorError("memobs.torch.use_allocator(): torch %s has no torch.cuda.memory.CUDAPluggableAllocator:"
                             " PyTorch 2.0 or later is needed" % getattr(torch, "__version__", "?"))
    if not available():
        raise AllocatorError("memobs.torch.use_allocator(): this memobs was built without the CUDA Toolkit's "
                             "headers, so it holds no allocator; reinstall it with the toolkit found (CUDA_HOME or "
                             "MEMOBS_CUDA_HOME=/usr/local/cuda pip install --no-build-isolation .)")
    if not torch.cuda.is_available():
        raise AllocatorError("memobs.torch.use_allocator(): CUDA is not available to PyTorch (torch %s, built for "
                             "CUDA %s): no GPU, no driver, or a CPU-only build" %
                             (torch.__version__, getattr(torch.version, "cuda", None)))
    if runtime is None:
        runtime = os.environ.get("MEMOBS_CUDART") or None
    try:
        _memobs._torch_bind(None if runtime is None else os.fspath(runtime))
    except RuntimeError as e:
        raise AllocatorError("memobs.torch.use_allocator(): %s" % e) from None
    try:
        alloc = mem.CUDAPluggableAllocator(_memobs.__file__, "memobs_torch_malloc", "memobs_torch_free")
    except Exception as e:
        raise AllocatorError("memobs.torch.use_allocator(): PyTorch could not load the allocator from %s (%s: %s)" %
                             (_memobs.__file__, type(e).__name__, e)) from None
    try:
        mem.change_current_allocator(alloc)
    except RuntimeError as e:
        raise AllocatorError("memobs.torch.use_allocator(): PyTorch's own CUDA allocator was used already in this "
                             "process (%s); call use_allocator() before the first CUDA tensor is made" % e) from None
    _allocator = alloc
    return alloc


def allocator_settings() -> Optional[Dict[str, Any]]:
    """{"runtime": the bound CUDA runtime's path or None, "stream_ordered":
    MEMOBS_TORCH_STREAM_ORDERED, "take_gil": MEMOBS_TORCH_TAKE_GIL}, or
    None when this build holds no allocator."""
    return _memobs._torch_settings() if available() else None


def _side(t: Any, name: str) -> Optional[int]:
    """0: host, 1: device, None: no data (the meta device)."""
    try:
        kind = t.device.type
    except AttributeError:
        raise TypeError("memobs.torch: %s must be a tensor (with .device), not %s" % (name, type(t).__name__)) from None
    if kind == "cpu":
        return 0
    if kind == "meta":
        return None
    return 1  # cuda, and any other accelerator


def record_copy(dst: Any, src: Any, is_prefill: Optional[bool] = None, *, non_blocking: bool = False) -> int:
    """Records the copy dst.copy_(src): the direction from the tensors'
    devices (cpu: host; cuda or another accelerator: device; between two
    host tensors, or with a meta tensor, nothing is recorded) and the bytes
    from their sizes: dst.numel() elements (a broadcast source is expanded
    before it moves) of dst's dtype, or of src's for a blocking
    device-to-host copy that changes the dtype (PyTorch converts on the
    host then). is_prefill: True, False, or None for the calling thread's
    phase (memobs.set_phase). Returns the bytes recorded."""
    d, s = _side(dst, "dst"), _side(src, "src")
    if d is None or s is None or (d == 0 and s == 0):
        return 0
    size = src.element_size() if (d == 0 and not non_blocking) else dst.element_size()
    n = dst.numel() * size
    if d and s:
        _memobs.record_d2d(n, is_prefill)
    elif d:
        _memobs.record_h2d(n, is_prefill)
    else:
        _memobs.record_d2h(n, is_prefill)
    return n


def copy(dst: Any, src: Any, non_blocking: bool = False, is_prefill: Optional[bool] = None) -> Any:
    """dst.copy_(src, non_blocking=non_blocking), then record_copy(); returns
    dst. A copy that raises records nothing."""
    dst.copy_(src, non_blocking=non_blocking)
    record_copy(dst, src, is_prefill, non_blocking=non_blocking)
    return dst


def report(path: Optional[_Path] = None) -> None:
    """Writes the live block table, the live bytes per trace (which Python
    line holds the memory), device memory by component (tag, else region,
    else top frame: memobs_print_components) and the driver's view of each
    device against the tracker to path (None: stderr). After
    use_allocator()."""
    if not available():
        raise AllocatorError(_ATTACHED.replace("use_allocator", "report") if _memobs.instance() == "preload" else
                             "memobs.torch.report(): this memobs was built without the CUDA Toolkit's headers")
    _memobs._torch_report(path)


def poll() -> int:
    """Stream-ordered frees the GPU has reached leave the tracker, timed
    copies settle; returns how many were resolved. After use_allocator()."""
    if not available():
        raise AllocatorError(_ATTACHED.replace("use_allocator", "poll") if _memobs.instance() == "preload" else
                             "memobs.torch.poll(): this memobs was built without the CUDA Toolkit's headers")
    return _memobs._cuda_poll()


def pinned_stats() -> Dict[str, Any]:
    """Pinned host memory, memobs' view beside PyTorch's own where PyTorch
    gives one: {"memobs": memobs.get_pinned(), "torch": ...}. memobs' table
    holds the blocks the CUDA runtime gave or pinned (cudaHostAlloc,
    cudaMallocHost, cudaHostRegister), observed by the LD_PRELOAD library
    (or memobs_cuda.h's wrappers): PyTorch's pinned pool
    (CachingHostAllocator) rounds each block up to a power of two, and its
    blocks show there as held, by size class, beside RssShmem (asked =
    held: PyTorch does not tell memobs its asks). The allocator of
    use_allocator() sees device memory only, never pinned memory. "torch"
    is torch.cuda.host_memory_stats() as PyTorch returns it (PyTorch 2.1
    and later; its keys differ between versions: "allocated_bytes.current",
    "reserved_bytes.current" or "active_bytes.current"...), or None: PyTorch
    not imported by the program (this does not import it), no such
    function, or it raised."""
    out: Dict[str, Any] = {"memobs": _memobs.get_pinned(), "torch": None}
    torch = _sys.modules.get("torch")
    fn = getattr(getattr(torch, "cuda", None), "host_memory_stats", None) if torch is not None else None
    if fn is not None:
        try:
            out["torch"] = dict(fn())
        except Exception:  # noqa: BLE001 (no CUDA, an old driver: PyTorch's figures are unknown then)
            out["torch"] = None
    return out
