/* bench_cuda.c - what memobs_cuda.h's wrappers cost on the host, apart
   from the CUDA calls themselves (`make bench`; no GPU needed).

   The program links a stub runtime and a stub driver defined below: every
   cuda* and cu* function memobs calls returns at once and counts itself.
   So a wrapped call minus the raw stub call is memobs' own work, and the
   counts say how many driver calls memobs adds to each wrapped call (on a
   real driver each costs what the driver costs: a capture-status query is
   a lookup of the stream, tens of ns; see `make gpu-bench` for the whole
   wrapper on a GPU).

   Figures: ns per call, the fastest of BENCH_REPS runs of BENCH_ITERS
   calls, side by side with the raw call:
     cudaMemcpyAsync        raw / wrapped (timing off) / wrapped (timing
                            on: two events, a poll) / wrapped into a
                            capturing stream (remembered, not counted)
     cudaMemcpy             raw / wrapped, timing off / on (host clock)
     cudaGraphLaunch        raw / wrapped, an executable graph of 8
                            captured copies (counted at each launch)
   and the driver calls memobs makes per wrapped call. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the stub runtime: what memobs_cuda.h calls, returning at once ---- */

static long n_rt, n_drv;      /* runtime and driver calls */
static int capturing_status;  /* what the stub driver says of every stream */
static unsigned long long capture_seq = 1;
static char block[1 << 16];
static char events[8 * 8192]; /* stand-ins: memobs makes at most MEMOBS_CUDA_MAX_TIMED pairs */
static size_t ev_next;

cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) {
    (void)d, (void)s, (void)n, (void)k;
    n_rt++;
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) {
    (void)d, (void)s, (void)n, (void)k, (void)st;
    n_rt++;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t st) {
    (void)x, (void)st;
    n_rt++;
    return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t st, enum cudaStreamCaptureMode m) {
    (void)st, (void)m;
    capturing_status = 1;
    capture_seq++;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t *g) {
    (void)st;
    capturing_status = 0;
    *g = (cudaGraph_t)(void *)(block + 64 * capture_seq % 4096);
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long f) {
    (void)g, (void)f;
    *x = (cudaGraphExec_t)(void *)(block + 64);
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    (void)g;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
    (void)n;
    *p = block;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    (void)p;
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
    (void)n;
    *p = block;
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) {
    (void)n, (void)f;
    *p = block;
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    (void)p;
    return cudaSuccess;
}
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned f) {
    (void)n, (void)f;
    *p = block;
    return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t n, unsigned f) {
    (void)p, (void)n, (void)f;
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *p) {
    (void)p;
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e) {
    (void)e;
    return "stub";
}
const char *cudaGetErrorName(cudaError_t e) {
    (void)e;
    return "stub";
}

/* ---- the stub driver, handed to memobs by memobs_cuda_driver_symbol ---- */

static int d_ctx_current(void **c) { n_drv++; *c = block; return 0; }
static int d_ctx_push(void *c) { (void)c; n_drv++; return 0; }
static int d_ctx_pop(void **c) { n_drv++; *c = block; return 0; }
static int d_ctx_device(int *d) { n_drv++; *d = 0; return 0; }
static int d_stream_ctx(cudaStream_t s, void **c) { (void)s; n_drv++; *c = block; return 0; }
static int d_capture2(cudaStream_t s, int *st, unsigned long long *id, void **g, const void **dp, size_t *nd) {
    (void)s, (void)g, (void)dp, (void)nd;
    n_drv++;
    *st = capturing_status;
    *id = capturing_status ? capture_seq : 0;
    return 0;
}
static int d_event_create(cudaEvent_t *e, unsigned f) {
    (void)f;
    n_drv++;
    *e = (cudaEvent_t)(void *)(events + (ev_next++ % sizeof events));
    return 0;
}
static int d_event_record(cudaEvent_t e, cudaStream_t s) { (void)e, (void)s; n_drv++; return 0; }
static int d_event_query(cudaEvent_t e) { (void)e; n_drv++; return 0; }
static int d_event_sync(cudaEvent_t e) { (void)e; n_drv++; return 0; }
static int d_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b) { (void)a, (void)b; n_drv++; *ms = 0.01f; return 0; }
static int d_event_destroy(cudaEvent_t e) { (void)e; n_drv++; return 0; }
static int d_mem_info(size_t *f, size_t *t) { n_drv++; *f = 1; *t = 2; return 0; }
static int d_ptr_attrs(unsigned n, int *a, void **d, unsigned long long p) {
    (void)n, (void)a, (void)d, (void)p;
    n_drv++;
    return 0;
}
static int d_exchange(int *m) { n_drv++; *m = 0; return 0; }

void *memobs_cuda_driver_symbol(const char *name);
void *memobs_cuda_driver_symbol(const char *name) {
    static const struct {
        const char *name;
        void *fn;
    } t[] = {{"cuCtxGetCurrent", (void *)(uintptr_t)&d_ctx_current},
             {"cuCtxPushCurrent_v2", (void *)(uintptr_t)&d_ctx_push},
             {"cuCtxPopCurrent_v2", (void *)(uintptr_t)&d_ctx_pop},
             {"cuCtxGetDevice", (void *)(uintptr_t)&d_ctx_device},
             {"cuStreamGetCtx", (void *)(uintptr_t)&d_stream_ctx},
             {"cuStreamGetCaptureInfo_v2", (void *)(uintptr_t)&d_capture2},
             {"cuEventCreate", (void *)(uintptr_t)&d_event_create},
             {"cuEventRecord", (void *)(uintptr_t)&d_event_record},
             {"cuEventQuery", (void *)(uintptr_t)&d_event_query},
             {"cuEventSynchronize", (void *)(uintptr_t)&d_event_sync},
             {"cuEventElapsedTime", (void *)(uintptr_t)&d_elapsed},
             {"cuEventDestroy_v2", (void *)(uintptr_t)&d_event_destroy},
             {"cuMemGetInfo_v2", (void *)(uintptr_t)&d_mem_info},
             {"cuPointerGetAttributes", (void *)(uintptr_t)&d_ptr_attrs},
             {"cuThreadExchangeStreamCaptureMode", (void *)(uintptr_t)&d_exchange}};
    size_t i;
    for (i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, name) == 0) return t[i].fn;
    return NULL;
}

/* ---- timing ---------------------------------------------------------------- */

static uint64_t iters = 1000000;
static int reps = 5;
static cudaStream_t S = (cudaStream_t)(void *)(block + 128);
static cudaGraphExec_t X;

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#define BARRIER() __asm__ volatile("" ::: "memory")
typedef void (*loop_fn)(uint64_t n);
#define LOOP(name, body)                                             \
    __attribute__((noinline)) static void name(uint64_t n) {         \
        uint64_t i;                                                  \
        for (i = 0; i < n; i++) {                                    \
            size_t bytes = 4096 + (i & 0xff);                        \
            body;                                                    \
            BARRIER();                                               \
        }                                                            \
    }
LOOP(raw_async, (void)cudaMemcpyAsync(block, block + 8192, bytes, cudaMemcpyHostToDevice, S))
LOOP(wrap_async, (void)memobs_cudaMemcpyAsync(block, block + 8192, bytes, cudaMemcpyHostToDevice, S))
LOOP(raw_sync, (void)cudaMemcpy(block, block + 8192, bytes, cudaMemcpyHostToDevice))
LOOP(wrap_sync, (void)memobs_cudaMemcpy(block, block + 8192, bytes, cudaMemcpyHostToDevice))
LOOP(raw_launch, (void)bytes; (void)cudaGraphLaunch(X, S))
LOOP(wrap_launch, (void)bytes; (void)memobs_cudaGraphLaunch(X, S))

/* ns per call (fastest run) and driver calls per call. */
static double run(loop_fn f, double *drv_per) {
    double best = 1e30;
    int r;
    long d0;
    f(iters / 10); /* warm */
    d0 = n_drv;
    for (r = 0; r < reps; r++) {
        uint64_t t0 = now();
        double ns;
        f(iters);
        ns = (double)(now() - t0) / (double)iters;
        if (ns < best) best = ns;
    }
    if (drv_per) *drv_per = (double)(n_drv - d0) / ((double)iters * reps);
    return best;
}

static void row(const char *what, double raw, double wrapped, double drv) {
    printf("  %-44s %8.1f ns %8.1f ns %+8.1f ns   %5.2f\n", what, raw, wrapped, wrapped - raw, drv);
}

int main(void) {
    const char *e;
    double raw, w, drv;
    cudaGraph_t g;
    int i;
    if ((e = getenv("BENCH_ITERS")) != NULL && atoll(e) > 0) iters = (uint64_t)atoll(e);
    if ((e = getenv("BENCH_REPS")) != NULL && atoi(e) > 0) reps = atoi(e);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    printf("== memobs_cuda.h on the host (stub runtime and driver; %llu calls x %d runs, fastest) ==\n",
           (unsigned long long)iters, reps);
    printf("  %-44s %11s %11s %11s   %s\n", "call", "raw", "wrapped", "memobs", "driver calls/call");
    raw = run(raw_async, NULL);
    w = run(wrap_async, &drv);
    row("cudaMemcpyAsync, timing off", raw, w, drv);
    memobs_cuda_set_timing(1);
    w = run(wrap_async, &drv);
    row("cudaMemcpyAsync, timing on (2 events, poll)", raw, w, drv);
    memobs_cuda_set_timing(0);
    (void)memobs_cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal);
    w = run(wrap_async, &drv);
    row("cudaMemcpyAsync into a capture", raw, w, drv);
    (void)memobs_cudaStreamEndCapture(S, &g); /* a graph of every copy of that loop */
    (void)memobs_cudaGraphDestroy(g);
    (void)memobs_cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal);
    for (i = 0; i < 8; i++) (void)memobs_cudaMemcpyAsync(block, block + 8192, 4096, cudaMemcpyHostToDevice, S);
    (void)memobs_cudaStreamEndCapture(S, &g);
    (void)memobs_cudaGraphInstantiate(&X, g, 0);
    raw = run(raw_sync, NULL);
    w = run(wrap_sync, &drv);
    row("cudaMemcpy, timing off", raw, w, drv);
    memobs_cuda_set_timing(1);
    w = run(wrap_sync, &drv);
    row("cudaMemcpy, timing on (host clock)", raw, w, drv);
    memobs_cuda_set_timing(0);
    raw = run(raw_launch, NULL);
    w = run(wrap_launch, &drv);
    row("cudaGraphLaunch (8 captured copies counted)", raw, w, drv);
    {
        memobs_cuda_graph_stats_t gs;
        memobs_summary_t *s = (memobs_summary_t *)calloc(1, sizeof *s);
        (void)memobs_cuda_get_graph_stats(&gs);
        if (s) {
            memobs_get_summary(s);
            printf("  check: %llu launches counted %llu copies (8 each: %s)\n", (unsigned long long)gs.launches,
                   (unsigned long long)gs.launched_copies, gs.launched_copies == 8 * gs.launches ? "right" : "WRONG");
            free(s);
        }
    }
    printf("  memobs adds the third column to each call, plus its driver calls at a real driver's cost (%ld stub "
           "runtime calls made)\n", n_rt);
    return 0;
}
