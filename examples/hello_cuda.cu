/* hello_cuda.cu - memobs_cuda.h: CUDA calls that record themselves.

   Call memobs_cudaMalloc, memobs_cudaMemcpyAsync, ... instead of
   cudaMalloc, cudaMemcpyAsync, ...: each has the runtime's own signature
   and returns its result unchanged, and memobs records what it did: the
   copy's bytes by direction and by this thread's phase, the allocation in
   the tracker (current and peak bytes per kind), nothing for a failed call.

       nvcc -I. examples/hello_cuda.cu -o hello_cuda && ./hello_cuda

   Needs: the CUDA Toolkit (nvcc) to build, a GPU to run. Without a GPU it
   prints "hello_cuda: skipped: needs a GPU (...)" and exits 0, no summary;
   the tests run it against a stand-in CUDA runtime instead (make examples,
   tests/docs/test_examples.sh). */

#define MEMOBS_IMPLEMENTATION /* in exactly one file: memobs' code */
#include "memobs_cuda.h"      /* includes memobs.h and cuda_runtime_api.h */

enum { PROMPT = 1 << 20, LOGITS = 4096, TOKENS = 4 };

int main(void) {
    void *host = NULL, *dev = NULL;
    cudaStream_t stream;
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev); /* no GPU: no result to show */
    if (e != cudaSuccess || ndev == 0) {
        fprintf(stderr, "hello_cuda: skipped: needs a GPU (%s)\n", cudaGetErrorString(e));
        return 0;
    }
    /* MEMOBS_CUDA_CHECK logs a failed call (its text, file, line) through
       memobs' log hook and yields the error; it never aborts. */
    if (MEMOBS_CUDA_CHECK(memobs_cudaMallocHost(&host, PROMPT)) != cudaSuccess) return 1; /* pinned */
    if (MEMOBS_CUDA_CHECK(memobs_cudaMalloc(&dev, PROMPT)) != cudaSuccess) return 1;      /* device */
    if (MEMOBS_CUDA_CHECK(cudaStreamCreate(&stream)) != cudaSuccess) return 1; /* not recorded */

    /* Prefill: the prompt goes to the device (1 MiB, host to device). */
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    MEMOBS_CUDA_CHECK(memobs_cudaMemcpyAsync(dev, host, PROMPT, cudaMemcpyHostToDevice, stream));

    /* Decode: each token's logits come back (4 KiB, device to host). */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (int t = 0; t < TOKENS; t++)
        MEMOBS_CUDA_CHECK(memobs_cudaMemcpyAsync(host, dev, LOGITS, cudaMemcpyDeviceToHost, stream));
    MEMOBS_CUDA_CHECK(cudaStreamSynchronize(stream));

    MEMOBS_CUDA_CHECK(cudaStreamDestroy(stream));
    MEMOBS_CUDA_CHECK(memobs_cudaFree(dev)); /* the frees leave the tracker */
    MEMOBS_CUDA_CHECK(memobs_cudaFreeHost(host));

    /* On stderr: H2D 1.05 MB in 1 op (prefill), D2H 16.38 KB in 4 ops
       (decode); device and pinned memory: 0 B current, 1.05 MB peak. */
    memobs_print_summary();
    return 0;
}
