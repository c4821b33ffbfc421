#!/bin/sh
# hello_preload.sh - memobs on a CUDA program that knows nothing of memobs.
#
# The LD_PRELOAD library records the copies and allocations any program
# makes through the dynamic CUDA runtime (libcudart.so): no code change, no
# rebuild. memobs-run starts a program with it and prints the summary on
# stderr when the program exits; options add outputs (--json FILE,
# --html FILE, ...: memobs-run --help).
#
#   examples/hello_preload.sh              build a small CUDA program, run it
#   examples/hello_preload.sh [OPTION]... COMMAND [ARG]...
#                                          run your own program instead
#
# Needs: the CUDA Toolkit (CUDA_HOME, default /usr/local/cuda: its headers
# build the preload library and the small program) and, for the small
# program, a GPU. Without one it prints "hello_preload.sh: skipped: needs
# ..." and exits 0, no summary. Uses this tree's preload/memobs-run and
# build/libmemobs_preload.so (built here if missing); once installed
# (make install) it is just   memobs-run python serve.py
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
skip() { echo "hello_preload.sh: skipped: needs $1" >&2; exit 0; }
if [ -z "${MEMOBS_PRELOAD_LIB:-}" ] && [ ! -f "$root/build/libmemobs_preload.so" ]; then
    [ -f "$cuda/include/cuda_runtime_api.h" ] || skip "the CUDA Toolkit (no $cuda/include/cuda_runtime_api.h; set CUDA_HOME)"
    make -s -C "$root" preload CUDA_INC="$cuda/include"
fi

if [ $# -eq 0 ]; then
    # A plain CUDA program: 1 MiB to the device, 4 x 4 KiB back.
    [ -f "$cuda/include/cuda_runtime_api.h" ] || skip "the CUDA Toolkit (no $cuda/include/cuda_runtime_api.h; set CUDA_HOME)"
    out=${BUILD:-$root/build}/examples
    mkdir -p "$out"
    cat >"$out/plain_cuda.c" <<'C'
#include <cuda_runtime_api.h>
#include <stdio.h>
static char host[1 << 20];
int main(int argc, char **argv) {
    void *dev;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (argc > 1) return e == cudaSuccess && n > 0 ? 0 : (puts(cudaGetErrorString(e)), 1); /* --probe */
    if (cudaMalloc(&dev, sizeof host) != cudaSuccess) return 1;
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    for (int i = 0; i < 4; i++) cudaMemcpy(host, dev, 4096, cudaMemcpyDeviceToHost);
    return cudaFree(dev) != cudaSuccess;
}
C
    cc -std=c99 -I"$cuda/include" "$out/plain_cuda.c" -o "$out/plain_cuda" -L"$cuda/lib64" -lcudart
    # Asked before memobs runs it: a summary of nothing is no result.
    why=$("$out/plain_cuda" --probe) || skip "a GPU ($why)"
    set -- "$out/plain_cuda"
fi

# memobs-run puts the library in LD_PRELOAD and runs the command; its
# status is the command's. Expect: H2D 1.05 MB in 1 op, D2H 16.38 KB in 4
# ops, device memory 1.05 MB at its peak.
exec "$root/preload/memobs-run" "$@"
