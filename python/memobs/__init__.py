"""memobs for Python engines: transfer counters (H2D, D2H, D2D per phase),
TTFT/TPOT/E2E histograms, regions and markers, summaries and an allocation
tracker with Python stacks, from memobs' C headers.

    import memobs
    memobs.record_h2d(block.nbytes, True)    # bytes, is_prefill (True, False or None)
    with memobs.region("decode_step"): ...
    memobs.get_summary(); memobs.print_summary()

memobs.nanovllm: nano-vllm's observer classes backed by memobs.
memobs.torch: PyTorch's CUDA allocator through memobs; tensor copies.

Every function is the C extension memobs._memobs (python/memobs/_memobs.c),
re-exported here unchanged: a call costs what a call of the extension costs.
Install with `pip install --no-build-isolation .` from the repository root.
"""
from . import _memobs
from ._memobs import *  # noqa: F401,F403  (every public name of the extension)
from ._memobs import (  # noqa: F401  (named, so that linters and readers see them)
    _region_end,
    complete_reset,
    device_bytes,
    enable,
    get_allocations,
    get_phase,
    get_regions,
    get_summary,
    is_enabled,
    mark,
    print_alloc_groups,
    print_allocations,
    print_leaks,
    print_summary,
    record_d2d,
    record_d2h,
    record_h2d,
    record_tpot,
    record_ttft,
    region,
    region_depth,
    region_timing,
    request_begin,
    request_end,
    request_token,
    reset,
    set_phase,
    stack_text,
    tpot_step,
    tpot_stop,
    track_alloc,
    track_free,
    track_python_stacks,
    ttft_start,
    ttft_stop,
    untrack_python_stacks,
    write_html,
    write_summary,
    write_torch_snapshot,
)

__version__ = _memobs.__version__  # MEMOBS_VERSION of memobs.h

__all__ = [
    "complete_reset",
    "device_bytes",
    "enable",
    "get_allocations",
    "get_phase",
    "get_regions",
    "get_summary",
    "is_enabled",
    "mark",
    "print_alloc_groups",
    "print_allocations",
    "print_leaks",
    "print_summary",
    "record_d2d",
    "record_d2h",
    "record_h2d",
    "record_tpot",
    "record_ttft",
    "region",
    "region_depth",
    "region_timing",
    "request_begin",
    "request_end",
    "request_token",
    "reset",
    "set_phase",
    "stack_text",
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
]
