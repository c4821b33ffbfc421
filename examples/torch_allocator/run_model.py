#!/usr/bin/env python3
"""Runs a small model with every PyTorch CUDA allocation going through
memobs (libmemobs_torch_alloc.so, a torch.cuda.memory.CUDAPluggableAllocator)
and shows where device memory peaked, with the Python line behind it.

    make torch-alloc                                  # builds the library
    python3 examples/torch_allocator/run_model.py [LIBRARY] [--batch 8 --prompt 128 --steps 8]

LIBRARY defaults to ../../build/torch_allocator/libmemobs_torch_alloc.so
from this script. Needs PyTorch 2.0 or later with CUDA, and a GPU.

What it does: installs the allocator before anything touches CUDA, builds
model_desc/tiny_llm.py on the GPU (bf16 where supported, else fp32),
allocates its KV cache, runs the prefill of a batch of random prompts and a
few greedy decode steps under torch.no_grad(), telling memobs the phase
(prefill/decode) of each, then prints tracked device memory after each
stage and the stage where it peaked.

stdout: the set-up, the stage table, the peak, the tokens of sequence 0.
stderr: memobs' peak reports (each new maximum: block table and bytes per
Python stack), then the memobs summary. A report of what is still live
(memobs_torch_report) goes to build/torch_allocator/report.txt (--report).
Unless already set, the script sets MEMOBS_PEAK_REPORT=stderr,
MEMOBS_PEAK_GROWTH=1 (a report per doubling), MEMOBS_PEAK_MIN=32M,
MEMOBS_REPORT_ROWS=8 and MEMOBS_PY_ROOT=this directory, before the library
loads. Exit status: 0, or 2 with one line on stderr when PyTorch, CUDA or
the library is missing.
"""
import argparse
import ctypes
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SO = os.path.normpath(os.path.join(HERE, "..", "..", "build", "torch_allocator",
                                           "libmemobs_torch_alloc.so"))
PHASE_NONE, PHASE_PREFILL, PHASE_DECODE = 0, 1, 2


def die(msg):
    sys.stdout.flush()
    print("run_model.py: " + msg, file=sys.stderr)
    sys.exit(2)


def mb(n):
    return "%.1f MB" % (n / 1e6)


def load_torch():
    try:
        import torch
    except ModuleNotFoundError as e:
        if e.name == "torch":
            die("PyTorch is not installed (import torch: %s); this example needs PyTorch 2.0+ with CUDA "
                "and an NVIDIA GPU" % e)
        die("PyTorch could not be imported (%s)" % e)
    except Exception as e:  # a broken install: missing CUDA libraries, ...
        die("PyTorch could not be imported (%s: %s)" % (type(e).__name__, e))
    if not hasattr(getattr(torch.cuda, "memory", None), "CUDAPluggableAllocator"):
        die("torch %s has no torch.cuda.memory.CUDAPluggableAllocator (PyTorch 2.0 or later needed)"
            % torch.__version__)
    if not torch.cuda.is_available():  # does not create the allocator
        die("CUDA is not available to PyTorch (torch %s, built for CUDA %s): this example needs an NVIDIA GPU"
            % (torch.__version__, torch.version.cuda))
    return torch


def install_allocator(torch, so):
    """Before the first CUDA allocation: PyTorch refuses to swap an
    allocator it has used."""
    if not os.path.isfile(so):
        die("no allocator library at %s: run `make torch-alloc` first (or give its path)" % so)
    for name, value in (("MEMOBS_PEAK_REPORT", "stderr"), ("MEMOBS_PEAK_GROWTH", "1"),
                        ("MEMOBS_PEAK_MIN", "32M"), ("MEMOBS_REPORT_ROWS", "8"), ("MEMOBS_PY_ROOT", HERE)):
        os.environ.setdefault(name, value)  # read by the library when it loads, just below
    try:
        alloc = torch.cuda.memory.CUDAPluggableAllocator(so, "memobs_torch_malloc", "memobs_torch_free")
    except Exception as e:
        die("cannot load %s as a PyTorch allocator (%s: %s)" % (so, type(e).__name__, e))
    try:
        torch.cuda.memory.change_current_allocator(alloc)
    except Exception as e:
        die("PyTorch did not take the allocator (%s); CUDA memory was allocated before this point" % e)
    lib = ctypes.CDLL(so)  # the same library, already loaded: its memobs_* functions
    lib.memobs_torch_report.argtypes, lib.memobs_torch_report.restype = [ctypes.c_char_p], ctypes.c_int
    lib.memobs_track_device_bytes.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    lib.memobs_track_device_bytes.restype = ctypes.c_uint64
    lib.memobs_set_phase.argtypes, lib.memobs_set_phase.restype = [ctypes.c_int], ctypes.c_int
    lib.memobs_cuda_poll.argtypes, lib.memobs_cuda_poll.restype = [], ctypes.c_int
    lib.memobs_print_summary.argtypes, lib.memobs_print_summary.restype = [], None
    return alloc, lib


def load_model_module():
    path = os.path.join(HERE, "model_desc", "tiny_llm.py")
    spec = importlib.util.spec_from_file_location("tiny_llm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", nargs="?", default=DEFAULT_SO, help="libmemobs_torch_alloc.so")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128, help="prompt length")
    ap.add_argument("--steps", type=int, default=8, help="decode steps")
    ap.add_argument("--report", default=None, help="live-allocation report (default: beside the library)")
    args = ap.parse_args()
    if args.batch < 1 or args.prompt < 2 or args.steps < 0:
        die("--batch >= 1, --prompt >= 2 and --steps >= 0, please")
    so = os.path.abspath(args.library)
    report = os.path.abspath(args.report or os.path.join(os.path.dirname(so), "report.txt"))

    torch = load_torch()
    alloc, lib = install_allocator(torch, so)  # alloc must stay referenced while PyTorch uses it
    tiny_llm = load_model_module()

    dev = torch.cuda.current_device()
    device = torch.device("cuda", dev)
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    cfg = tiny_llm.Config()
    print("torch %s (CUDA %s) on %s, %s; allocator %s" % (torch.__version__, torch.version.cuda,
                                                          torch.cuda.get_device_name(dev), dtype, so))
    stages = []

    def stage(name):
        torch.cuda.synchronize(device)
        lib.memobs_cuda_poll()  # stream-ordered frees the GPU has reached leave the tracker
        most = ctypes.c_uint64(0)
        now = lib.memobs_track_device_bytes(dev, ctypes.byref(most))
        stages.append((name, now, most.value))

    torch.manual_seed(0)
    with torch.no_grad():
        model = tiny_llm.TinyLLM(cfg, device, dtype)
        params = sum(p.numel() for p in model.parameters())
        print("model: %d layers, dim %d, vocab %d: %.1fM parameters" % (cfg.layers, cfg.dim, cfg.vocab, params / 1e6))
        stage("weights")
        cache = model.allocate_kv_cache(args.batch, args.prompt + args.steps + 1)
        stage("kv cache")
        prompts = torch.randint(0, cfg.vocab, (args.batch, args.prompt), device=device)
        lib.memobs_set_phase(PHASE_PREFILL)
        token, prompt_logprob = model.prefill(prompts, cache)
        stage("prefill (batch %d x %d tokens)" % (args.batch, args.prompt))
        lib.memobs_set_phase(PHASE_DECODE)
        tokens = [token]
        for i in range(args.steps):
            token = model.decode_step(token, cache, args.prompt + i)
            tokens.append(token)
        stage("decode (%d steps)" % args.steps)
        lib.memobs_set_phase(PHASE_NONE)
        generated = torch.stack(tokens, dim=1)[0].tolist()
        logprob0 = float(prompt_logprob[0])

    print("%-30s %14s %14s" % ("after", "tracked now", "most so far"))
    for name, now, most in stages:
        print("%-30s %14s %14s" % (name, mb(now), mb(most)))
    peak = stages[-1][2]
    where = next(name for name, _, most in stages if most == peak)
    print("device memory peaked at %s (%d bytes) during: %s" % (mb(peak), peak, where))
    print("  the last memobs peak report on stderr shows the allocation that reached it and its Python stack")
    print("sequence 0: prompt log-probability %.2f, generated %s" % (logprob0, generated))
    sys.stdout.flush()
    rc = lib.memobs_torch_report(report.encode())
    if rc == 0:
        print("live allocations (weights, KV cache, ...) by block and by Python stack: %s" % report)
    else:
        print("run_model.py: could not write the report to %s (memobs error %d)" % (report, rc), file=sys.stderr)
    sys.stdout.flush()
    lib.memobs_print_summary()
    del model, cache, prompts, token, tokens, prompt_logprob
    torch.cuda.synchronize(device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
