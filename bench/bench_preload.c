/* bench_preload.c - what the LD_PRELOAD library (make preload) adds to a
   CUDA copy: this program times a synchronous and an asynchronous 64-byte
   host-to-device copy against a double, and mk/bench.mk runs it without
   and with the preload, in turns, and prints the two side by side. The
   doubles copy on the host, so the figure is the interposer's own cost
   (the lookup of the real function is made once), not a GPU's.
     default:             the runtime, cudaMemcpy and cudaMemcpyAsync,
                          against tests/cuda/cudart_double.c built as a
                          shared libcudart.so.13 (symbols versioned as the
                          toolkit's);
     -DBENCH_PL_DRIVER:   the driver, cuMemcpyHtoD and cuMemcpyHtoDAsync,
                          against tests/preload/driver_double.c built as
                          libcuda.so.1.

   The async copy is timed twice: into stream 0 (the legacy stream, which
   is never captured) and into a created stream (which memobs must ask
   whether it is capturing).

   Prints one line: "<label>" then, for the sync copy, the async copy into
   stream 0 and the async copy into a created stream, the ns per copy of
   the best of 5 runs, then of their median; a run is 200000 calls, timed
   in chunks of 1000 with the stream synchronized, untimed, between
   them. */
#define _POSIX_C_SOURCE 200809L
#ifdef BENCH_PL_DRIVER
#include <cuda.h>
#define BENCH_OK CUDA_SUCCESS
#else
#include <cuda_runtime_api.h>
#define BENCH_OK cudaSuccess
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static char host[64];

#ifdef BENCH_PL_DRIVER
static CUdeviceptr dev;
static CUstream stream;
static int bench_setup(void) {
    CUcontext c;
    return cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS ||
           cuCtxSetCurrent(c) != CUDA_SUCCESS || cuMemAlloc(&dev, sizeof host) != CUDA_SUCCESS ||
           cuStreamCreate(&stream, 0) != CUDA_SUCCESS;
}
static int bench_copy(int k) {
    return k ? (int)cuMemcpyHtoDAsync(dev, host, sizeof host, k == 2 ? stream : 0)
             : (int)cuMemcpyHtoD(dev, host, sizeof host);
}
static int bench_sync(int k) { return (int)cuStreamSynchronize(k == 2 ? stream : 0); }
static int bench_done(void) { return cuStreamDestroy(stream) != CUDA_SUCCESS || cuMemFree(dev) != CUDA_SUCCESS; }
#else
static void *dev;
static cudaStream_t stream;
static int bench_setup(void) {
    return cudaMalloc(&dev, sizeof host) != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess;
}
static int bench_copy(int k) {
    return k ? (int)cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, k == 2 ? stream : 0)
             : (int)cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
}
static int bench_sync(int k) { return (int)cudaStreamSynchronize(k == 2 ? stream : 0); }
static int bench_done(void) { return cudaStreamDestroy(stream) != cudaSuccess || cudaFree(dev) != cudaSuccess; }
#endif

int main(int argc, char **argv) {
    const long n = 200000, chunk = 1000;
    double t[3][5];
    long i;
    int r, k, a, b;
    if (bench_setup()) {
        fprintf(stderr, "bench_preload: set-up (allocation) failed\n");
        return 1;
    }
    for (r = 0; r < 6; r++) { /* the first round warms up */
        for (k = 0; k < 3; k++) {
            double dt = 0;
            for (i = 0; i < n; i += chunk) {
                double t0 = bench_now();
                long j;
                for (j = 0; j < chunk; j++) {
                    int e = bench_copy(k);
                    if (e != BENCH_OK) {
                        fprintf(stderr, "bench_preload: copy failed (%d)\n", e);
                        return 1;
                    }
                }
                dt += bench_now() - t0;
                /* untimed: the runtime double keeps every queued copy until
                   the stream is waited for, and retires them one by one (a
                   200000-deep queue took 80 s to drain) */
                if (bench_sync(k) != BENCH_OK) return 1;
            }
            if (r > 0) t[k][r - 1] = dt / (double)n;
        }
    }
    if (bench_done() != BENCH_OK) return 1;
    for (k = 0; k < 3; k++) /* sorted: the best first, the median in the middle */
        for (a = 1; a < 5; a++)
            for (b = a; b > 0 && t[k][b] < t[k][b - 1]; b--) {
                double x = t[k][b];
                t[k][b] = t[k][b - 1];
                t[k][b - 1] = x;
            }
    printf("%s %.1f %.1f %.1f %.1f %.1f %.1f\n", argc > 1 ? argv[1] : "run", t[0][0], t[1][0], t[2][0], t[0][2],
           t[1][2], t[2][2]);
    return 0;
}
