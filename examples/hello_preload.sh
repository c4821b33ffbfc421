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
# Uses this tree's preload/memobs-run and build/libmemobs_preload.so (built
# here if missing); once installed (make install) it is just
#   memobs-run python serve.py
# The demo program needs a GPU to copy anything (CUDA_HOME: the toolkit,
# default /usr/local/cuda).
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${MEMOBS_PRELOAD_LIB:-}" ] && [ ! -f "$root/build/libmemobs_preload.so" ]; then
    make -s -C "$root" preload
fi

if [ $# -eq 0 ]; then
    # A plain CUDA program: 1 MiB to the device, 4 x 4 KiB back.
    cuda=${CUDA_HOME:-/usr/local/cuda}
    out=${BUILD:-$root/build}/examples
    mkdir -p "$out"
    cat >"$out/plain_cuda.c" <<'EOF'
#include <cuda_runtime_api.h>
#include <stdio.h>
static char host[1 << 20];
int main(void) {
    void *dev;
    if (cudaMalloc(&dev, sizeof host) != cudaSuccess) { puts("no GPU"); return 1; }
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    for (int i = 0; i < 4; i++) cudaMemcpy(host, dev, 4096, cudaMemcpyDeviceToHost);
    cudaFree(dev);
    return 0;
}
EOF
    cc -std=c99 -I"$cuda/include" "$out/plain_cuda.c" -o "$out/plain_cuda" -L"$cuda/lib64" -lcudart
    set -- "$out/plain_cuda"
fi

# memobs-run puts the library in LD_PRELOAD and runs the command; its
# status is the command's. Expect: H2D 1.05 MB in 1 op, D2H 16.38 KB in 4
# ops, device memory 1.05 MB at its peak.
exec "$root/preload/memobs-run" "$@"
