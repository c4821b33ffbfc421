/* GPU figures for memobs_cuda.h, side by side with the raw CUDA runtime,
   in one run (`make gpu-bench`, mk/gpu.mk; needs a CUDA device):

   1. Wrapper overhead per call: memobs_cudaMemcpyAsync beside
      cudaMemcpyAsync, 4 KiB host-to-device from pinned memory, on one
      stream, synchronized every BATCH calls; reps alternate raw/wrapped and
      the median rep counts. With timing OFF (target: <= 2% over raw:
      PASS/MISS), then with CUDA-event timing ON (the extra cost shown).
      "issue" is the host time inside the calls, "per call" adds the batch
      synchronizations (what a program sees).
   2. Bandwidth, loops of 8 x 64 MiB copies, H2D and D2H, pinned and
      pageable host memory: memobs' own event timing (the summary's
      timed[][]: bytes/ns) beside a cudaEvent pair around the same wrapped
      loop (memobs' accuracy), and a raw loop's pair (what wrapping costs),
      rounds alternating, medians; host wall clock.

   Environment: GPU_BENCH_ITERS (calls per rep, default 20000),
   GPU_BENCH_REPS (reps per variant, default 7), GPU_BENCH_DEVICE
   (default 0). Prints PASS/MISS and exits 0 either way (1 only when the
   GPU cannot be used). */
#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define BATCH 256
#define OVERHEAD_TARGET_PCT 2.0

#define DIE_ON(call)                                                                                  \
    do {                                                                                              \
        cudaError_t die__rc = (call);                                                                 \
        if (die__rc != cudaSuccess) {                                                                 \
            fprintf(stderr, "gpu_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cudaGetErrorString(die__rc));                                                     \
            exit(1);                                                                                  \
        }                                                                                             \
    } while (0)

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int env_int(const char *name, int dflt) {
    const char *s = getenv(name);
    int v = s ? atoi(s) : 0;
    return v > 0 ? v : dflt;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
    double issue_ns, total_ns; /* per call */
} rep_t;

/* One rep: iters copies of n bytes, synchronized every BATCH. */
static rep_t run_rep(int wrapped, void *d, const void *h, size_t n, int iters, cudaStream_t st) {
    rep_t r;
    double t0 = now_ns(), issue = 0.0;
    int i = 0;
    while (i < iters) {
        int b = iters - i < BATCH ? iters - i : BATCH, k;
        double s0 = now_ns();
        if (wrapped)
            for (k = 0; k < b; k++) (void)memobs_cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st);
        else
            for (k = 0; k < b; k++) (void)cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st);
        issue += now_ns() - s0;
        DIE_ON(cudaStreamSynchronize(st));
        i += b;
    }
    r.total_ns = (now_ns() - t0) / iters;
    r.issue_ns = issue / iters;
    return r;
}

/* Raw and wrapped reps alternated; medians into raw/wrapped. */
static void overhead(int timing, void *d, const void *h, int iters, int reps, cudaStream_t st, rep_t *raw,
                     rep_t *wrapped) {
    double *ri = (double *)malloc(sizeof(double) * reps * 4), *rt = ri + reps, *wi = rt + reps, *wt = wi + reps;
    int k;
    memobs_cuda_set_timing(timing);
    (void)run_rep(0, d, h, 4 * KIB, iters / 4 + 1, st); /* warm-up */
    (void)run_rep(1, d, h, 4 * KIB, iters / 4 + 1, st);
    for (k = 0; k < reps; k++) {
        rep_t a, b;
        if (k % 2) {
            b = run_rep(1, d, h, 4 * KIB, iters, st);
            a = run_rep(0, d, h, 4 * KIB, iters, st);
        } else {
            a = run_rep(0, d, h, 4 * KIB, iters, st);
            b = run_rep(1, d, h, 4 * KIB, iters, st);
        }
        ri[k] = a.issue_ns, rt[k] = a.total_ns, wi[k] = b.issue_ns, wt[k] = b.total_ns;
    }
    memobs_cuda_set_timing(0);
    DIE_ON(cudaStreamSynchronize(st));
    (void)memobs_cuda_poll();
    raw->issue_ns = median(ri, reps), raw->total_ns = median(rt, reps);
    wrapped->issue_ns = median(wi, reps), wrapped->total_ns = median(wt, reps);
    free(ri);
}

static double pct(double x, double base) { return base > 0 ? (x - base) / base * 100.0 : 0.0; }

/* One loop of k copies of n bytes, wrapped (memobs timing on) or raw,
   between a cudaEvent pair on the same stream: GB/s by the pair, by the
   wall clock, and (wrapped) by memobs' own per-copy events. */
typedef struct {
    double memobs_gbs, pair_gbs, wall_gbs;
} bw_t;
static bw_t bw_loop(int wrapped, memobs_dir_t dir, void *dst, const void *src, size_t n, int k, cudaStream_t st,
                    cudaEvent_t e0, cudaEvent_t e1) {
    static memobs_summary_t S;
    enum cudaMemcpyKind kind = dir == MEMOBS_DIR_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    bw_t r = {0, 0, 0};
    double t0;
    float ms = 0;
    int i;
    uint64_t untimed0 = memobs_cuda_get_untimed();
    memobs_reset();
    memobs_cuda_set_timing(wrapped);
    t0 = now_ns();
    DIE_ON(cudaEventRecord(e0, st));
    for (i = 0; i < k; i++) DIE_ON(wrapped ? memobs_cudaMemcpyAsync(dst, src, n, kind, st) : cudaMemcpyAsync(dst, src, n, kind, st));
    DIE_ON(cudaEventRecord(e1, st));
    DIE_ON(cudaEventSynchronize(e1));
    r.wall_gbs = (double)k * n / (now_ns() - t0);
    memobs_cuda_set_timing(0);
    DIE_ON(cudaEventElapsedTime(&ms, e0, e1));
    r.pair_gbs = ms > 0 ? (double)k * n / (ms * 1e6) : 0.0;
    if (wrapped) {
        const memobs_timed_t *t = &S.timed[MEMOBS_PHASE_NONE][dir];
        (void)memobs_cuda_poll();
        memobs_get_summary(&S);
        if (t->ns) r.memobs_gbs = (double)t->bytes / (double)t->ns;
        if (t->count != (uint64_t)k || t->bytes != (uint64_t)k * n || S.timed_in_flight_copies ||
            memobs_cuda_get_untimed() != untimed0)
            printf("  (warning: memobs timed %llu of %d copies, %llu in flight, %llu untimed)\n",
                   (unsigned long long)t->count, k, (unsigned long long)S.timed_in_flight_copies,
                   (unsigned long long)(memobs_cuda_get_untimed() - untimed0));
    }
    return r;
}

/* Bandwidth of k copies of n bytes in one direction, BW_REPS rounds of a
   wrapped loop and a raw loop, the order alternating, after a warm-up loop
   of each; medians. memobs' timing is judged against the event pair around
   the same wrapped copies (its accuracy); the raw loop beside it is what
   wrapping costs. The first pageable loop after other copies can run a
   third slower than the next (seen on an H200: 8.9-11.3 GB/s, then 14.6-15.6
   for the same loop again) whoever times it, so one loop of each, in one
   order, compares the order, not memobs. */
#define BW_REPS 5
static void bandwidth(const char *label, memobs_dir_t dir, void *d, void *h, size_t n, int k, cudaStream_t st,
                      cudaEvent_t e0, cudaEvent_t e1) {
    void *dst = dir == MEMOBS_DIR_H2D ? d : h;
    const void *src = dir == MEMOBS_DIR_H2D ? (const void *)h : (const void *)d;
    double mo[BW_REPS], same[BW_REPS], raw[BW_REPS], wall[BW_REPS];
    double m, p, r;
    int i;
    (void)bw_loop(0, dir, dst, src, n, k, st, e0, e1); /* warm-up */
    (void)bw_loop(1, dir, dst, src, n, k, st, e0, e1);
    for (i = 0; i < BW_REPS; i++) {
        bw_t w, x;
        if (i % 2) {
            x = bw_loop(0, dir, dst, src, n, k, st, e0, e1);
            w = bw_loop(1, dir, dst, src, n, k, st, e0, e1);
        } else {
            w = bw_loop(1, dir, dst, src, n, k, st, e0, e1);
            x = bw_loop(0, dir, dst, src, n, k, st, e0, e1);
        }
        mo[i] = w.memobs_gbs, same[i] = w.pair_gbs, raw[i] = x.pair_gbs, wall[i] = w.wall_gbs;
    }
    m = median(mo, BW_REPS), p = median(same, BW_REPS), r = median(raw, BW_REPS);
    printf("  %-14s %12.2f %12.2f %+8.2f%% %12.2f %+8.2f%% %10.2f\n", label, m, p, pct(m, p), r, pct(p, r),
           median(wall, BW_REPS));
}

int main(void) {
    int ndev = 0, device = env_int("GPU_BENCH_DEVICE", 0) , iters = env_int("GPU_BENCH_ITERS", 20000),
        reps = env_int("GPU_BENCH_REPS", 7);
    struct cudaDeviceProp prop;
    cudaStream_t st;
    cudaEvent_t e0, e1;
    void *pin4k = NULL, *d4k = NULL, *pin = NULL, *page = NULL, *d = NULL;
    const size_t big = 64 * MIB;
    rep_t raw_off, wr_off, raw_on, wr_on;
    double ov;
    cudaError_t rc = cudaGetDeviceCount(&ndev);
    if (rc != cudaSuccess || ndev <= 0) {
        fprintf(stderr, "gpu_bench: no CUDA device (%s)\n", rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return 1;
    }
    if (device >= ndev) device = 0;
    DIE_ON(cudaSetDevice(device));
    DIE_ON(cudaGetDeviceProperties(&prop, device));
    DIE_ON(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    DIE_ON(cudaEventCreate(&e0));
    DIE_ON(cudaEventCreate(&e1));
    memobs_set_device(device);
    memobs_cuda_set_oom_report("off");

    printf("memobs GPU bench: device %d: %s (sm_%d%d, %.1f GiB), CUDA runtime %d\n", device, prop.name, prop.major,
           prop.minor, (double)prop.totalGlobalMem / (1 << 30), CUDART_VERSION);
    printf("  %d calls per rep, %d reps per variant (median), synchronized every %d calls\n\n", iters, reps, BATCH);

    /* 1. overhead */
    DIE_ON(cudaMallocHost(&pin4k, 4 * KIB));
    DIE_ON(cudaMalloc(&d4k, 4 * KIB));
    memset(pin4k, 1, 4 * KIB);
    overhead(0, d4k, pin4k, iters, reps, st, &raw_off, &wr_off);
    overhead(1, d4k, pin4k, iters, reps, st, &raw_on, &wr_on);
    ov = pct(wr_off.total_ns, raw_off.total_ns);
    printf("Wrapper overhead, cudaMemcpyAsync 4 KiB H2D from pinned memory (ns per call)\n");
    printf("  %-34s %10s %10s %10s\n", "variant", "issue", "per call", "vs raw");
    printf("  %-34s %10.1f %10.1f %10s\n", "cudaMemcpyAsync (raw)", raw_off.issue_ns, raw_off.total_ns, "-");
    printf("  %-34s %10.1f %10.1f %+9.2f%%\n", "memobs_cudaMemcpyAsync, timing off", wr_off.issue_ns, wr_off.total_ns,
           ov);
    printf("  %-34s %10.1f %10.1f %10s\n", "cudaMemcpyAsync (raw, 2nd run)", raw_on.issue_ns, raw_on.total_ns, "-");
    printf("  %-34s %10.1f %10.1f %+9.2f%%\n", "memobs_cudaMemcpyAsync, timing on", wr_on.issue_ns, wr_on.total_ns,
           pct(wr_on.total_ns, raw_on.total_ns));
    printf("  timing off: %+.1f ns per call (%+.2f%%), target <= %.0f%%: %s\n", wr_off.total_ns - raw_off.total_ns, ov,
           OVERHEAD_TARGET_PCT, ov <= OVERHEAD_TARGET_PCT ? "PASS" : "MISS");
    printf("  timing on:  %+.1f ns per call over raw (two cudaEventRecord and a poll per copy), "
           "%llu copies untimed\n\n",
           wr_on.total_ns - raw_on.total_ns, (unsigned long long)memobs_cuda_get_untimed());
    DIE_ON(cudaFreeHost(pin4k));
    DIE_ON(cudaFree(d4k));

    /* 2. bandwidth */
    DIE_ON(cudaMallocHost(&pin, big));
    DIE_ON(cudaMalloc(&d, big));
    page = malloc(big);
    if (!page) {
        fprintf(stderr, "gpu_bench: out of host memory\n");
        return 1;
    }
    memset(pin, 2, big);
    memset(page, 3, big); /* fault the pages in */
    DIE_ON(cudaMemset(d, 4, big));
    printf("Bandwidth, loops of 8 x 64 MiB copies (GB/s = 1e9 bytes/s; medians of %d rounds, wrapped and raw loops "
           "alternating)\n", BW_REPS);
    printf("  %-14s %12s %12s %9s %12s %9s %10s\n", "copy", "memobs timed", "event pair", "accuracy", "raw copies",
           "wrapped", "wall");
    printf("  %-14s %12s %12s %9s %12s %9s %10s\n", "", "(its events)", "(same loop)", "", "(event pair)", "vs raw",
           "(wrapped)");
    bandwidth("H2D pinned", MEMOBS_DIR_H2D, d, pin, big, 8, st, e0, e1);
    bandwidth("D2H pinned", MEMOBS_DIR_D2H, d, pin, big, 8, st, e0, e1);
    bandwidth("H2D pageable", MEMOBS_DIR_H2D, d, page, big, 8, st, e0, e1);
    bandwidth("D2H pageable", MEMOBS_DIR_D2H, d, page, big, 8, st, e0, e1);

    DIE_ON(cudaFreeHost(pin));
    DIE_ON(cudaFree(d));
    free(page);
    DIE_ON(cudaEventDestroy(e0));
    DIE_ON(cudaEventDestroy(e1));
    DIE_ON(cudaStreamDestroy(st));
    return 0;
}
