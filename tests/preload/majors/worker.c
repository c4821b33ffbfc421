/* tests/preload/majors/worker.c - a library linked to the runtime double
   built as libcudart.so.12 (-DMAJOR=12), dlopen'ed RTLD_LOCAL by prog's
   mode "two" (linked to libcudart.so.13): an engine's CUDA 12 extension in
   a process whose own runtime is 13. worker_run: cudaMalloc 4096, H2D
   111, a 12.8 batch H2D 222, D2H 333, cudaFree; 0 when every call
   succeeded; calls[0], calls[1]: the calls of cudaMemcpyBatchAsync and
   cudaMemcpy its runtime (the 12 double) counted.
   Each double models its own driver, and memobs asks the driver in the
   global scope (the 13 double's) about streams and pointers, which knows
   none the 12 double made (with one real libcuda, it would know all): the
   batch goes on cudaStreamPerThread, which both know, and its direction,
   read from the pointers' attributes, is host to host for memobs here
   (not a transfer): the script checks it by the runtimes' counts. */
#include <string.h>

#include "majors.h"

long cudadbl_calls(const char *fn); /* tests/cuda/cudart_double.h */
int worker_run(long *calls);
int worker_run(long *calls) {
    char *d, *h;
    void *dsts[1];
    const void *srcs[1];
    size_t sizes[1] = {222}, idx0 = 0, fi = 0;
    struct cudaMemcpyAttributes attr;
    int bad = 0;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    bad |= cudaMalloc((void **)&d, 4096) != cudaSuccess;
    bad |= cudaMallocHost((void **)&h, 1024) != cudaSuccess;
    if (bad) return 1;
    memset(h, 5, 1024);
    dsts[0] = d + 512;
    srcs[0] = h;
    bad |= cudaMemcpy(d, h, 111, cudaMemcpyHostToDevice) != cudaSuccess;
    bad |= BATCH(dsts, srcs, sizes, 1, &attr, &idx0, 1, &fi, cudaStreamPerThread) != cudaSuccess;
    bad |= cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess;
    bad |= cudaMemcpy(h, d, 333, cudaMemcpyDeviceToHost) != cudaSuccess;
    bad |= cudaFree(d) != cudaSuccess;
    bad |= cudaFreeHost(h) != cudaSuccess;
    calls[0] = cudadbl_calls("cudaMemcpyBatchAsync");
    calls[1] = cudadbl_calls("cudaMemcpy");
    return bad;
}
