#!/usr/bin/env python3
"""Runs a small model with every PyTorch CUDA allocation going through
memobs (memobs.torch.use_allocator(): PyTorch's pluggable allocator, inside
the package's extension) and shows where device memory peaked, with the
Python line behind it.

    pip install --no-build-isolation .                # or: make torch-alloc (build/python)
    python3 examples/torch_allocator/run_model.py [--batch 8 --prompt 128 --steps 8]

Needs PyTorch 2.0 or later with CUDA, and a GPU.

What it does: installs the allocator before anything touches CUDA, builds
model_desc/tiny_llm.py on the GPU (bf16 where supported, else fp32),
allocates its KV cache, runs the prefill of a batch of random prompts and a
few greedy decode steps under torch.no_grad(), telling memobs the phase
(prefill/decode) of each, then prints tracked device memory after each
stage and the stage where it peaked.

stdout: the set-up, the stage table, the peak, the tokens of sequence 0.
stderr: memobs' peak reports (each new maximum: block table and bytes per
Python stack), then the memobs summary. A report of what is still live
(memobs.torch.report) goes to --report (default report.txt in the current
directory). Unless already set, the script sets MEMOBS_PEAK_REPORT=stderr,
MEMOBS_PEAK_GROWTH=1 (a report per doubling), MEMOBS_PEAK_MIN=32M,
MEMOBS_REPORT_ROWS=8 and MEMOBS_PY_ROOT=this directory, before the
allocator is installed. Exit status: 0, or 2 with one line on stderr when
memobs, PyTorch, CUDA or the allocator is missing.
"""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def die(msg):
    sys.stdout.flush()
    print("run_model.py: " + msg, file=sys.stderr)
    sys.exit(2)


def mb(n):
    return "%.1f MB" % (n / 1e6)


def install_allocator():
    """Before the first CUDA allocation: PyTorch refuses to swap an
    allocator it has used."""
    for name, value in (("MEMOBS_PEAK_REPORT", "stderr"), ("MEMOBS_PEAK_GROWTH", "1"),
                        ("MEMOBS_PEAK_MIN", "32M"), ("MEMOBS_REPORT_ROWS", "8"), ("MEMOBS_PY_ROOT", HERE)):
        os.environ.setdefault(name, value)  # read when memobs loads, just below
    try:
        import memobs
        import memobs.torch
    except ImportError as e:
        die("memobs is not installed (%s): pip install --no-build-isolation . from the repository root, or "
            "make torch-alloc and PYTHONPATH=build/python" % e)
    try:
        memobs.torch.use_allocator()
    except memobs.torch.AllocatorError as e:
        die(str(e))
    import torch
    return memobs, torch


def load_model_module():
    path = os.path.join(HERE, "model_desc", "tiny_llm.py")
    spec = importlib.util.spec_from_file_location("tiny_llm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=128, help="prompt length")
    ap.add_argument("--steps", type=int, default=8, help="decode steps")
    ap.add_argument("--report", default="report.txt", help="live-allocation report (default: report.txt)")
    args = ap.parse_args()
    if args.batch < 1 or args.prompt < 2 or args.steps < 0:
        die("--batch >= 1, --prompt >= 2 and --steps >= 0, please")
    report = os.path.abspath(args.report)

    memobs, torch = install_allocator()
    tiny_llm = load_model_module()

    dev = torch.cuda.current_device()
    device = torch.device("cuda", dev)
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    cfg = tiny_llm.Config()
    print("torch %s (CUDA %s) on %s, %s; memobs %s, CUDA runtime %s" % (
        torch.__version__, torch.version.cuda, torch.cuda.get_device_name(dev), dtype, memobs.__version__,
        memobs.torch.allocator_settings()["runtime"]))
    stages = []

    def stage(name):
        torch.cuda.synchronize(device)
        memobs.torch.poll()  # stream-ordered frees the GPU has reached leave the tracker
        now, most = memobs.device_bytes(dev)
        stages.append((name, now, most))

    torch.manual_seed(0)
    with torch.no_grad():
        model = tiny_llm.TinyLLM(cfg, device, dtype)
        params = sum(p.numel() for p in model.parameters())
        print("model: %d layers, dim %d, vocab %d: %.1fM parameters" % (cfg.layers, cfg.dim, cfg.vocab, params / 1e6))
        stage("weights")
        cache = model.allocate_kv_cache(args.batch, args.prompt + args.steps + 1)
        stage("kv cache")
        prompts = torch.randint(0, cfg.vocab, (args.batch, args.prompt), device=device)
        memobs.set_phase("prefill")
        token, prompt_logprob = model.prefill(prompts, cache)
        stage("prefill (batch %d x %d tokens)" % (args.batch, args.prompt))
        memobs.set_phase("decode")
        tokens = [token]
        for i in range(args.steps):
            token = model.decode_step(token, cache, args.prompt + i)
            tokens.append(token)
        stage("decode (%d steps)" % args.steps)
        memobs.set_phase(None)
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
    try:
        memobs.torch.report(report)
        print("live allocations (weights, KV cache, ...) by block and by Python stack: %s" % report)
    except OSError as e:
        print("run_model.py: could not write the report: %s" % e, file=sys.stderr)
    sys.stdout.flush()
    memobs.print_summary()
    del model, cache, prompts, token, tokens, prompt_logprob
    torch.cuda.synchronize(device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
