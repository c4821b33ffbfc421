/* bench_preload.c - what the LD_PRELOAD library (make preload) adds to a
   CUDA copy: this program times a synchronous and an asynchronous 64-byte
   host-to-device copy, and bench/bench_preload.sh runs it without and
   with the preload, in turns, and prints the two side by side. Against
   the doubles (make bench-preload), which copy on the host, the figure is
   the interposer's own cost (the lookup of the real function is made
   once), not a GPU's; make gpu-bench-preload builds it against the real
   runtime and driver.
     default:             the runtime, cudaMemcpy and cudaMemcpyAsync,
                          against tests/cuda/cudart_double.c built as a
                          shared libcudart.so.13 (symbols versioned as the
                          toolkit's), or the real libcudart.so;
     -DBENCH_PL_DRIVER:   the driver, cuMemcpyHtoD and cuMemcpyHtoDAsync,
                          against tests/preload/driver_double.c built as
                          libcuda.so.1, or the real one.

   The async copy is timed twice: into stream 0 (the legacy stream, which
   is never captured) and into a created stream (which memobs must ask
   whether it is capturing). The fourth figure is that question alone: the
   driver entry point memobs calls (cuStreamGetCaptureInfo_v2, else
   cuStreamGetCaptureInfo), found as the preload finds it (the global
   scope, else libcuda.so.1), asked of the created stream; the same
   whether or not the preload is loaded, which does not intercept it.

   Prints one line: "<label>" then, for the sync copy, the async copy into
   stream 0, the async copy into a created stream and the query, the ns per
   call of the best of 5 runs, then of their median; a run is
   BENCH_PL_CALLS calls (default 200000), timed in chunks of 1000 with the
   stream synchronized, untimed, between them. BENCH_PL_PINNED=1 copies
   from pinned memory (cudaMallocHost, cuMemAllocHost) instead of a static
   array: on a GPU an async copy from pageable memory is staged by the
   host (make gpu-bench-preload); the doubles copy alike from either. */
#define _GNU_SOURCE
#include <dlfcn.h>
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

#define BENCH_BYTES 64
static char host_static[BENCH_BYTES], *host = host_static;
static int pinned;

/* The capture-status query, as memobs_cuda.h declares it (status and id
   out; the _v2's graph and dependency outputs not asked). */
typedef int (*bench_query2_t)(void *, int *, unsigned long long *, void *, void *, void *);
typedef int (*bench_query1_t)(void *, int *, unsigned long long *);
static bench_query2_t query2;
static bench_query1_t query1;
static int bench_query_find(void) {
    void *p = dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v2"), *h = NULL;
    if (!p && (h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) != NULL) p = dlsym(h, "cuStreamGetCaptureInfo_v2");
    if (p) { /* POSIX's cast for dlsym */
        *(void **)(void *)&query2 = p;
        return 0;
    }
    p = h ? dlsym(h, "cuStreamGetCaptureInfo") : dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo");
    *(void **)(void *)&query1 = p;
    return p == NULL;
}

#ifdef BENCH_PL_DRIVER
static CUdeviceptr dev;
static CUstream stream;
/* 0, or the code of the first call that failed */
static int bench_setup(void) {
    CUcontext c;
    int e;
    if ((e = (int)cuInit(0)) != 0 || (e = (int)cuDevicePrimaryCtxRetain(&c, 0)) != 0 ||
        (e = (int)cuCtxSetCurrent(c)) != 0 || (e = (int)cuMemAlloc(&dev, BENCH_BYTES)) != 0 ||
        (pinned && (e = (int)cuMemAllocHost((void **)&host, BENCH_BYTES)) != 0))
        return e;
    return (int)cuStreamCreate(&stream, 0);
}
static int bench_copy(int k) {
    return k ? (int)cuMemcpyHtoDAsync(dev, host, BENCH_BYTES, k == 2 ? stream : 0)
             : (int)cuMemcpyHtoD(dev, host, BENCH_BYTES);
}
static int bench_sync(int k) { return (int)cuStreamSynchronize(k == 2 ? stream : 0); }
static int bench_done(void) {
    return cuStreamDestroy(stream) != CUDA_SUCCESS || cuMemFree(dev) != CUDA_SUCCESS ||
           (pinned && cuMemFreeHost(host) != CUDA_SUCCESS);
}
#else
static void *dev;
static cudaStream_t stream;
/* 0, or the code of the first call that failed */
static int bench_setup(void) {
    int e;
    if ((e = (int)cudaMalloc(&dev, BENCH_BYTES)) != 0 ||
        (pinned && (e = (int)cudaMallocHost((void **)&host, BENCH_BYTES)) != 0))
        return e;
    return (int)cudaStreamCreate(&stream);
}
static int bench_copy(int k) {
    return k ? (int)cudaMemcpyAsync(dev, host, BENCH_BYTES, cudaMemcpyHostToDevice, k == 2 ? stream : 0)
             : (int)cudaMemcpy(dev, host, BENCH_BYTES, cudaMemcpyHostToDevice);
}
static int bench_sync(int k) { return (int)cudaStreamSynchronize(k == 2 ? stream : 0); }
static int bench_done(void) {
    return cudaStreamDestroy(stream) != cudaSuccess || cudaFree(dev) != cudaSuccess ||
           (pinned && cudaFreeHost(host) != cudaSuccess);
}
#endif

/* k 0 to 2: a copy (bench_copy's k); 3: the capture-status query of the
   created stream, checked to answer "not capturing". */
static int bench_call(int k) {
    int st = -1;
    unsigned long long id = 0;
    if (k < 3) return bench_copy(k);
    if ((query2 ? query2((void *)stream, &st, &id, NULL, NULL, NULL) : query1((void *)stream, &st, &id)) != 0)
        return -1;
    return st == 0 ? BENCH_OK : -1;
}

int main(int argc, char **argv) {
    const char *calls = getenv("BENCH_PL_CALLS"), *pin = getenv("BENCH_PL_PINNED");
    const long chunk = 1000;
    long n = calls ? strtol(calls, NULL, 10) / chunk * chunk : 200000, i;
    double t[4][5];
    int r, k, a, b, e;
    pinned = pin && *pin == '1';
    if (n < chunk) n = chunk;
    if ((e = bench_setup()) != 0) {
        fprintf(stderr, "bench_preload: set-up (allocation, stream) failed: error %d\n", e);
        return 1;
    }
    if (bench_query_find()) {
        fprintf(stderr, "bench_preload: no cuStreamGetCaptureInfo(_v2) in the process nor in libcuda.so.1\n");
        return 1;
    }
    for (r = 0; r < 6; r++) { /* the first round warms up */
        for (k = 0; k < 4; k++) {
            double dt = 0;
            for (i = 0; i < n; i += chunk) {
                double t0 = bench_now();
                long j;
                for (j = 0; j < chunk; j++) {
                    int e = bench_call(k);
                    if (e != BENCH_OK) {
                        fprintf(stderr, "bench_preload: %s failed (%d)\n", k < 3 ? "copy" : "query", e);
                        return 1;
                    }
                }
                dt += bench_now() - t0;
                /* untimed: the runtime double keeps every queued copy until
                   the stream is waited for, and retires them one by one (a
                   200000-deep queue took 80 s to drain) */
                if (k < 3 && bench_sync(k) != BENCH_OK) return 1;
            }
            if (r > 0) t[k][r - 1] = dt / (double)n;
        }
    }
    if (bench_done() != BENCH_OK) return 1;
    for (k = 0; k < 4; k++) /* sorted: the best first, the median in the middle */
        for (a = 1; a < 5; a++)
            for (b = a; b > 0 && t[k][b] < t[k][b - 1]; b--) {
                double x = t[k][b];
                t[k][b] = t[k][b - 1];
                t[k][b - 1] = x;
            }
    printf("%s %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f\n", argc > 1 ? argv[1] : "run", t[0][0], t[1][0], t[2][0],
           t[3][0], t[0][2], t[1][2], t[2][2], t[3][2]);
    return 0;
}
