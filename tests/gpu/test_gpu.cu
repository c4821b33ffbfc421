/* Tests of memobs_cuda.h on a real GPU (the real libcudart, a real device):
   what tests/test_cuda.c checks against the runtime double, checked here
   against the driver. Byte counts per wrapper, direction and phase;
   cudaMemcpyDefault resolved for device, pinned, pageable and managed
   memory; allocations in the tracker with their kind and device; a
   cudaFreeAsync pending until its stream gets there; CUDA-event timing
   beside a measurement of our own; memobs_cuda_mem_info against memory
   allocated around the wrappers; the out-of-memory flight recorder.

   Run by `make gpu-test` (mk/gpu.mk) on a machine with a GPU only: with no
   CUDA device it says "not ok" and exits 1. Uses device 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"
#include "tests/check.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* A CUDA call that must succeed: a failure is a failed check (the test
   goes on; what it checks next will fail too, and say more). */
#define CUOK(call)                                                                                            \
    do {                                                                                                      \
        cudaError_t cuok__rc = (call);                                                                        \
        if (cuok__rc != cudaSuccess) {                                                                        \
            check__failed_checks++;                                                                           \
            printf("    # %s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(cuok__rc),       \
                   cudaGetErrorString(cuok__rc));                                                             \
            (void)cudaGetLastError();                                                                         \
        }                                                                                                     \
    } while (0)
#define CHECK_ERR(expected, call) CHECK_U64((unsigned)(expected), (unsigned)(call))
/* |a - b| <= tol */
#define CHECK_NEAR(a, b, tol)                                                                                 \
    do {                                                                                                      \
        double near__a = (double)(a), near__b = (double)(b), near__t = (double)(tol);                         \
        if (!(near__a - near__b <= near__t && near__b - near__a <= near__t)) {                                \
            check__failed_checks++;                                                                           \
            printf("    # %s:%d: %s = %.0f, %s = %.0f: differ by more than %.0f\n", __FILE__, __LINE__, #a,    \
                   near__a, #b, near__b, near__t);                                                            \
        }                                                                                                     \
    } while (0)

static memobs_summary_t S; /* large: off the stack */
static void snap(void) { memobs_get_summary(&S); }
static int dev;           /* device under test */
static cudaStream_t st;   /* a non-blocking stream on it */

/* Spins one thread for ns nanoseconds of the GPU's global timer: holds a
   stream back so that what follows on it is observably not yet done. */
__global__ void spin_kernel(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

static void spin(cudaStream_t s, unsigned long long ns) {
    spin_kernel<<<1, 1, 0, s>>>(ns);
    CUOK(cudaGetLastError());
}

/* The tracker's record of p; NULL if it is not live. */
static memobs_alloc_info_t A[4096];
static const memobs_alloc_info_t *find(const void *p) {
    size_t n = memobs_get_allocations(A, sizeof A / sizeof A[0]), i;
    if (n > sizeof A / sizeof A[0]) n = sizeof A / sizeof A[0];
    for (i = 0; i < n; i++)
        if (A[i].ptr == p) return &A[i];
    return NULL;
}

static void fill(void *p, int seed, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)(seed + i * 7);
}

/* Resolves everything memobs has in flight: the stream and the device
   idle, then a poll. */
static void settle(void) {
    CUOK(cudaStreamSynchronize(st));
    CUOK(cudaDeviceSynchronize());
    (void)memobs_cuda_poll();
}

/* ------------------------------------------------------------------------ */

/* Explicit kinds, every copy wrapper, pinned and pageable host sides, by
   phase; the data really arrives. */
static void test_copy_bytes_by_wrapper_direction_phase(void) {
    const size_t n = 1 * MIB;
    unsigned char *pin = NULL, *pin2 = NULL, *page = (unsigned char *)malloc(n), *page2 = (unsigned char *)malloc(n);
    void *d = NULL, *d2 = NULL;
    memobs_cuda_set_timing(0);
    CUOK(memobs_cudaMallocHost((void **)&pin, n));
    CUOK(memobs_cudaMallocHost((void **)&pin2, n));
    CUOK(memobs_cudaMalloc(&d, n));
    CUOK(memobs_cudaMalloc(&d2, n));
    if (!pin || !pin2 || !page || !page2 || !d || !d2) {
        CHECK(!"allocations");
        return;
    }
    fill(pin, 1, n);
    fill(page, 2, n);
    memobs_reset();

    /* prefill: synchronous copies */
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CUOK(memobs_cudaMemcpy(d, pin, n, cudaMemcpyHostToDevice));             /* H2D 1 MiB, pinned */
    CUOK(memobs_cudaMemcpy(d2, page, 4096, cudaMemcpyHostToDevice));        /* H2D 4 KiB, pageable */
    CUOK(memobs_cudaMemcpy(pin2, d, n, cudaMemcpyDeviceToHost));            /* D2H 1 MiB, pinned */
    CUOK(memobs_cudaMemcpy(page2, d2, 4096, cudaMemcpyDeviceToHost));       /* D2H 4 KiB, pageable */
    CUOK(memobs_cudaMemcpy(d2, d, 3000, cudaMemcpyDeviceToDevice));         /* D2D 3000 */
    CUOK(memobs_cudaMemcpy(page2, pin, 777, cudaMemcpyHostToHost));         /* not recorded */
    /* 2D: width x height bytes, not pitch x height */
    CUOK(memobs_cudaMemcpy2D(d, 1024, pin, 2048, 1000, 64, cudaMemcpyHostToDevice)); /* H2D 64000 */
    CUOK(memobs_cudaMemcpy2D(page2, 512, d, 1024, 500, 10, cudaMemcpyDeviceToHost)); /* D2H 5000 */
    CUOK(memobs_cudaMemcpyPeer(d2, dev, d, dev, 12345));                              /* D2D 12345 */
    CHECK(memcmp(pin, pin2, n) == 0); /* pin -> d -> pin2 */

    /* decode: asynchronous copies on a stream */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CUOK(memobs_cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, st));        /* H2D 1 MiB */
    CUOK(memobs_cudaMemcpyAsync(d2, page, 8192, cudaMemcpyHostToDevice, st));   /* H2D 8 KiB pageable */
    CUOK(memobs_cudaMemcpyAsync(pin2, d, n, cudaMemcpyDeviceToHost, st));       /* D2H 1 MiB */
    CUOK(memobs_cudaMemcpyAsync(page2, d2, 8192, cudaMemcpyDeviceToHost, st));  /* D2H 8 KiB pageable */
    CUOK(memobs_cudaMemcpy2DAsync(d2, 256, d, 512, 200, 30, cudaMemcpyDeviceToDevice, st)); /* D2D 6000 */
    CUOK(memobs_cudaMemcpy2DAsync(d, 4096, page, 4096, 4000, 3, cudaMemcpyHostToDevice, st)); /* H2D 12000 */
    CUOK(memobs_cudaMemcpyPeerAsync(d2, dev, d, dev, 54321, st));                  /* D2D 54321 */
    CUOK(cudaStreamSynchronize(st));
    CHECK(memcmp(pin, pin2, n) == 0);
    CHECK(memcmp(page, page2, 8192) == 0);

    /* unphased */
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CUOK(memobs_cudaMemcpyAsync(d, page, 100, cudaMemcpyHostToDevice, st));
    CUOK(cudaStreamSynchronize(st));
    snap();

    CHECK_U64(n + 4096 + 64000, S.prefill.h2d.bytes);
    CHECK_U64(3, S.prefill.h2d.count);
    CHECK_U64(n + 4096 + 5000, S.prefill.d2h.bytes);
    CHECK_U64(3, S.prefill.d2h.count);
    CHECK_U64(3000 + 12345, S.prefill.d2d.bytes);
    CHECK_U64(2, S.prefill.d2d.count);

    CHECK_U64(n + 8192 + 12000, S.decode.h2d.bytes);
    CHECK_U64(3, S.decode.h2d.count);
    CHECK_U64(n + 8192, S.decode.d2h.bytes);
    CHECK_U64(2, S.decode.d2h.count);
    CHECK_U64(6000 + 54321, S.decode.d2d.bytes);
    CHECK_U64(2, S.decode.d2d.count);

    CHECK_U64(100, S.unphased.h2d.bytes);
    CHECK_U64(1, S.unphased.h2d.count);
    CHECK_U64(0, S.unphased.d2h.count + S.unphased.d2d.count);

    CHECK_U64(n + 4096 + 64000 + n + 8192 + 12000 + 100, S.total.h2d.bytes);
    CHECK_U64(7, S.total.h2d.count);
    CHECK_U64(n + 4096 + 5000 + n + 8192, S.total.d2h.bytes);
    CHECK_U64(5, S.total.d2h.count);
    CHECK_U64(3000 + 12345 + 6000 + 54321, S.total.d2d.bytes);
    CHECK_U64(4, S.total.d2d.count);
    /* timing off: nothing timed */
    CHECK_U64(0, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].count + S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count);

    /* a copy the runtime refuses (a bad kind; not sticky) records nothing
       and returns its error */
    memobs_reset();
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, memobs_cudaMemcpy(d, pin, 16, (enum cudaMemcpyKind)42));
    (void)cudaGetLastError();
    snap();
    CHECK_U64(0, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);

    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFree(d2));
    CUOK(memobs_cudaFreeHost(pin));
    CUOK(memobs_cudaFreeHost(pin2));
    free(page);
    free(page2);
}

/* cudaMemcpyDefault: the runtime says where each side lives. */
static void test_copy_default_kind(void) {
    const size_t n = 64 * KIB;
    unsigned char *pin = NULL, *page = (unsigned char *)malloc(n), *man = NULL, *page2 = (unsigned char *)malloc(n);
    void *d = NULL, *d2 = NULL;
    memobs_cuda_set_timing(0);
    CUOK(memobs_cudaMallocHost((void **)&pin, n));
    CUOK(memobs_cudaMallocManaged((void **)&man, n, cudaMemAttachGlobal));
    CUOK(memobs_cudaMalloc(&d, n));
    CUOK(memobs_cudaMalloc(&d2, n));
    if (!pin || !page || !page2 || !man || !d || !d2) {
        CHECK(!"allocations");
        return;
    }
    fill(pin, 3, n);
    fill(page, 4, n);
    fill(man, 5, n);
    memobs_set_phase(MEMOBS_PHASE_DECODE);

#define DEFAULT_COPY(dst, src, nbytes, field)                                     \
    do {                                                                          \
        memobs_reset();                                                           \
        CUOK(memobs_cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault));             \
        snap();                                                                   \
        CHECK_U64(nbytes, S.decode.field.bytes);                                  \
        CHECK_U64(1, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);  \
    } while (0)
    DEFAULT_COPY(d, pin, 1001, h2d);   /* pinned -> device */
    DEFAULT_COPY(d, page, 1002, h2d);  /* pageable -> device */
    DEFAULT_COPY(pin, d, 1003, d2h);   /* device -> pinned */
    DEFAULT_COPY(page2, d, 1004, d2h); /* device -> pageable */
    DEFAULT_COPY(d2, d, 1005, d2d);    /* device -> device */
    DEFAULT_COPY(man, page, 1006, h2d); /* pageable -> managed: managed counts as device */
    DEFAULT_COPY(page2, man, 1007, d2h); /* managed -> pageable */
    DEFAULT_COPY(man, pin, 1008, h2d);  /* pinned -> managed */
    DEFAULT_COPY(d, man, 1009, d2d);    /* managed -> device */
    DEFAULT_COPY(man, d, 1010, d2d);    /* device -> managed */
#undef DEFAULT_COPY
    /* host to host (pinned, pageable): crosses no bus, not recorded */
    memobs_reset();
    CUOK(memobs_cudaMemcpy(page2, pin, 1011, cudaMemcpyDefault));
    CUOK(memobs_cudaMemcpy(pin, page, 1012, cudaMemcpyDefault));
    snap();
    CHECK_U64(0, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);
    CHECK(memcmp(pin, page, 1012) == 0);
    /* async, on a stream */
    memobs_reset();
    CUOK(memobs_cudaMemcpyAsync(d, pin, 2000, cudaMemcpyDefault, st));
    CUOK(memobs_cudaMemcpyAsync(pin, d, 3000, cudaMemcpyDefault, st));
    CUOK(memobs_cudaMemcpy2DAsync(d2, 100, d, 100, 50, 4, cudaMemcpyDefault, st));
    CUOK(cudaStreamSynchronize(st));
    snap();
    CHECK_U64(2000, S.decode.h2d.bytes);
    CHECK_U64(3000, S.decode.d2h.bytes);
    CHECK_U64(200, S.decode.d2d.bytes);
    memobs_set_phase(MEMOBS_PHASE_NONE);

    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFree(d2));
    CUOK(memobs_cudaFree(man));
    CUOK(memobs_cudaFreeHost(pin));
    free(page);
    free(page2);
}

/* Each allocation wrapper: in the tracker with its kind, size, device
   (and stream); out again after its free. */
static void test_alloc_tracked_and_freed(void) {
    void *d = NULL, *h = NULL, *ha = NULL, *m = NULL, *da = NULL, *reg = NULL;
    const memobs_alloc_info_t *a;
    const size_t regn = 2 * MIB;
    memobs_summary_t before;
    memobs_get_summary(&before);
    CUOK(memobs_cudaMalloc(&d, 3 * MIB));
    CUOK(memobs_cudaMallocHost(&h, 5 * KIB));
    CUOK(memobs_cudaHostAlloc(&ha, 7 * KIB, cudaHostAllocPortable));
    CUOK(memobs_cudaMallocManaged(&m, 11 * KIB, cudaMemAttachGlobal));
    CUOK(memobs_cudaMallocAsync(&da, 13 * KIB, st));
    if (posix_memalign(&reg, 4096, regn) != 0) reg = NULL;
    CHECK(reg != NULL);
    if (reg) CUOK(memobs_cudaHostRegister(reg, regn, cudaHostRegisterDefault));
    CUOK(cudaStreamSynchronize(st));

    a = find(d);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(3 * MIB, a->bytes);
        CHECK_U64(MEMOBS_MEM_DEVICE, a->kind);
        CHECK_U64(dev, a->device);
        CHECK_U64(0, a->pending_free);
    }
    a = find(h);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(5 * KIB, a->bytes);
        CHECK_U64(MEMOBS_MEM_PINNED, a->kind);
        CHECK(a->device == -1);
    }
    a = find(ha);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(7 * KIB, a->bytes);
        CHECK_U64(MEMOBS_MEM_PINNED, a->kind);
    }
    a = find(m);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(11 * KIB, a->bytes);
        CHECK_U64(MEMOBS_MEM_MANAGED, a->kind);
        CHECK_U64(dev, a->device);
    }
    a = find(da);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(13 * KIB, a->bytes);
        CHECK_U64(MEMOBS_MEM_DEVICE, a->kind);
        CHECK_U64(dev, a->device);
        CHECK(a->stream == (const void *)st);
    }
    a = reg ? find(reg) : NULL;
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(regn, a->bytes);
        CHECK_U64(MEMOBS_MEM_PINNED, a->kind);
    }
    snap();
    CHECK_U64(before.mem[MEMOBS_MEM_DEVICE].live + 2, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(before.mem[MEMOBS_MEM_DEVICE].current_bytes + 3 * MIB + 13 * KIB, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(before.mem[MEMOBS_MEM_PINNED].live + 3, S.mem[MEMOBS_MEM_PINNED].live);
    CHECK_U64(before.mem[MEMOBS_MEM_PINNED].current_bytes + 12 * KIB + regn, S.mem[MEMOBS_MEM_PINNED].current_bytes);
    CHECK_U64(before.mem[MEMOBS_MEM_MANAGED].current_bytes + 11 * KIB, S.mem[MEMOBS_MEM_MANAGED].current_bytes);
    CHECK_U64(before.track.frees_unknown, S.track.frees_unknown);
    /* memobs_track_device_bytes: the device blocks */
    CHECK(memobs_track_device_bytes(dev, NULL) >= 3 * MIB + 13 * KIB);

    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFreeHost(h));
    CUOK(memobs_cudaFreeHost(ha));
    CUOK(memobs_cudaFree(m));
    CUOK(memobs_cudaFreeAsync(da, st));
    if (reg) CUOK(memobs_cudaHostUnregister(reg));
    settle();
    CHECK(find(d) == NULL);
    CHECK(find(h) == NULL);
    CHECK(find(ha) == NULL);
    CHECK(find(m) == NULL);
    CHECK(find(da) == NULL);
    CHECK(!reg || find(reg) == NULL);
    snap();
    CHECK_U64(before.mem[MEMOBS_MEM_DEVICE].live, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(before.mem[MEMOBS_MEM_DEVICE].current_bytes, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(before.mem[MEMOBS_MEM_PINNED].live, S.mem[MEMOBS_MEM_PINNED].live);
    CHECK_U64(before.mem[MEMOBS_MEM_PINNED].current_bytes, S.mem[MEMOBS_MEM_PINNED].current_bytes);
    CHECK_U64(before.mem[MEMOBS_MEM_MANAGED].current_bytes, S.mem[MEMOBS_MEM_MANAGED].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(before.track.frees_unknown, S.track.frees_unknown);
    free(reg);

    /* a failed free records nothing: freeing a pageable pointer with cudaFree */
    {
        int x = 0;
        CHECK(memobs_cudaFree(&x) != cudaSuccess);
        (void)cudaGetLastError();
        snap();
        CHECK_U64(before.track.frees_unknown, S.track.frees_unknown);
    }
}

/* cudaFreeAsync behind a kernel that holds the stream ~50 ms: pending
   until the stream gets there, then gone. */
static void test_free_async_pending_until_stream(void) {
    void *p = NULL;
    const memobs_alloc_info_t *a;
    uint64_t pend0;
    settle();
    snap();
    pend0 = S.mem[MEMOBS_MEM_DEVICE].pending_frees;
    CHECK_U64(0, pend0);
    CUOK(memobs_cudaMallocAsync(&p, 1 * MIB, st));
    CUOK(cudaStreamSynchronize(st));
    CHECK(find(p) != NULL);
    spin(st, 50ull * 1000 * 1000);
    CUOK(memobs_cudaFreeAsync(p, st));
    a = find(p);
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(1, a->pending_free);
        CHECK_U64(1 * MIB, a->bytes);
    }
    snap(); /* polls: the stream is still spinning */
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(1 * MIB, S.mem[MEMOBS_MEM_DEVICE].pending_bytes);
    (void)memobs_cuda_poll();
    CHECK(find(p) != NULL);
    CHECK_ERR(cudaErrorNotReady, cudaStreamQuery(st)); /* the premise: still spinning */
    (void)cudaGetLastError();

    CUOK(cudaStreamSynchronize(st));
    CHECK(memobs_cuda_poll() >= 1);
    CHECK(find(p) == NULL);
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_bytes);
}

/* Timing: a 256 MiB H2D copy from pinned memory timed by memobs beside
   our own cudaEvent pair around an identical copy; in flight until
   polled. */
static void test_timing_matches_own_events(void) {
    const size_t n = 256 * MIB;
    void *h = NULL, *d = NULL;
    cudaEvent_t e0, e1;
    float ms = 0.0f;
    double ours = 0.0, theirs = 0.0, gbs;
    int rep;
    const int reps = 3;
    settle();
    CUOK(memobs_cudaMallocHost(&h, n));
    CUOK(memobs_cudaMalloc(&d, n));
    CUOK(cudaEventCreate(&e0));
    CUOK(cudaEventCreate(&e1));
    if (!h || !d) {
        CHECK(!"allocations");
        return;
    }
    memset(h, 1, n);
    /* warm up the path, untimed */
    memobs_cuda_set_timing(0);
    CUOK(memobs_cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st));
    CUOK(cudaStreamSynchronize(st));
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);

    memobs_reset();
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    for (rep = 0; rep < reps; rep++) {
        memobs_cuda_set_timing(1);
        CUOK(memobs_cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st));
        memobs_cuda_set_timing(0);
        CUOK(cudaStreamSynchronize(st));
        CUOK(cudaEventRecord(e0, st));
        CUOK(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st));
        CUOK(cudaEventRecord(e1, st));
        CUOK(cudaEventSynchronize(e1));
        CUOK(cudaEventElapsedTime(&ms, e0, e1));
        theirs += ms * 1e6;
    }
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CHECK(memobs_cuda_poll() >= 0);
    snap();
    {
        const memobs_timed_t *t = &S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D];
        CHECK_U64((uint64_t)reps * n, t->bytes);
        CHECK_U64(reps, t->count);
        CHECK(t->ns > 0);
        ours = (double)t->ns;
    }
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, S.timed_in_flight_bytes);
    CHECK_U64((uint64_t)reps * n, S.prefill.h2d.bytes); /* the raw copies are not recorded */
    gbs = ours > 0 ? (double)reps * n / ours : 0.0;
    printf("    # timing: memobs %.3f ms, own events %.3f ms (per 256 MiB copy), %.2f GB/s, untimed %llu\n",
           ours / reps / 1e6, theirs / reps / 1e6, gbs, (unsigned long long)memobs_cuda_untimed());
    CHECK(theirs > 0);
    CHECK(ours >= theirs * 0.9 && ours <= theirs * 1.1);
    CHECK(gbs > 1.0);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count + S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);

    /* in flight while the stream is held back by a kernel, 0 after poll;
       the copy's time does not include the kernel's 50 ms */
    memobs_reset();
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    spin(st, 50ull * 1000 * 1000);
    CUOK(memobs_cudaMemcpyAsync(d, h, 1 * MIB, cudaMemcpyHostToDevice, st));
    CUOK(memobs_cudaMemcpyAsync(h, d, 2 * MIB, cudaMemcpyDeviceToHost, st));
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_cuda_set_timing(0);
    snap();
    CHECK_U64(2, S.timed_in_flight_copies);
    CHECK_U64(3 * MIB, S.timed_in_flight_bytes);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count);
    CHECK_U64(1 * MIB, S.decode.h2d.bytes); /* issued: counted at once */
    CUOK(cudaStreamSynchronize(st));
    CHECK_U64(2, memobs_cuda_poll());
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, S.timed_in_flight_bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count);
    CHECK_U64(1 * MIB, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].count);
    CHECK_U64(2 * MIB, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].bytes);
    CHECK(S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].ns > 0);
    CHECK(S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].ns < 20ull * 1000 * 1000);
    CHECK(S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].ns < 20ull * 1000 * 1000);

    /* synchronous timed copy (legacy default stream) */
    memobs_reset();
    memobs_cuda_set_timing(1);
    CUOK(memobs_cudaMemcpy(d, h, 4 * MIB, cudaMemcpyHostToDevice));
    memobs_cuda_set_timing(0);
    CUOK(cudaDeviceSynchronize());
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(4 * MIB, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(0, S.timed_in_flight_copies);

    CUOK(cudaEventDestroy(e0));
    CUOK(cudaEventDestroy(e1));
    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFreeHost(h));
}

/* memobs_cuda_mem_info: driver used covers what is tracked; 1 GiB
   allocated around the wrappers shows as outside; 256 MiB through them
   does not. */
static void test_mem_info_outside(void) {
    memobs_cuda_mem_t m0, m1, m2, m3;
    void *raw = NULL, *tracked = NULL;
    const double tol = 64.0 * MIB; /* driver granularity, other users of the GPU */
    settle();
    CHECK_U64(MEMOBS_OK, memobs_cuda_mem_info(dev, &m0));
    CHECK_U64(dev, m0.device);
    CHECK(m0.driver_total > 0);
    CHECK(m0.driver_used + m0.driver_free == m0.driver_total);
    CHECK(m0.driver_used >= m0.tracked);
    CHECK_U64(memobs_track_device_bytes(dev, NULL), m0.tracked);

    CUOK(memobs_cudaMalloc(&tracked, 256 * MIB));
    CHECK_U64(MEMOBS_OK, memobs_cuda_mem_info(dev, &m1));
    CHECK_U64(m0.tracked + 256 * MIB, m1.tracked);
    CHECK(m1.driver_used >= m1.tracked);
    CHECK_NEAR(m1.outside, m0.outside, tol);

    CUOK(cudaMalloc(&raw, GIB)); /* around memobs */
    CHECK_U64(MEMOBS_OK, memobs_cuda_mem_info(dev, &m2));
    CHECK_U64(m1.tracked, m2.tracked);
    CHECK_NEAR(m2.outside - m1.outside, (double)GIB, tol);
    CHECK_NEAR(m2.driver_used - m1.driver_used, (double)GIB, tol);
    CHECK(m2.driver_used >= m2.tracked);
    printf("    # mem_info: driver used %llu, tracked %llu, outside %lld (after 1 GiB raw: +%lld)\n",
           (unsigned long long)m2.driver_used, (unsigned long long)m2.tracked, (long long)m2.outside,
           (long long)(m2.outside - m1.outside));

    CUOK(cudaFree(raw));
    CUOK(memobs_cudaFree(tracked));
    CHECK_U64(MEMOBS_OK, memobs_cuda_mem_info(dev, &m3));
    CHECK_U64(m0.tracked, m3.tracked);
    CHECK_NEAR(m3.outside, m0.outside, tol);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_cuda_mem_info(dev, NULL));
    {
        char buf[4096];
        FILE *f = fmemopen(buf, sizeof buf, "w");
        CHECK(f != NULL);
        if (f) {
            CHECK_U64(MEMOBS_OK, memobs_cuda_print_mem(f));
            fclose(f);
            buf[sizeof buf - 1] = 0;
            CHECK_HAS(buf, "memobs tracks");
        }
    }
}

/* Out of memory: more than the device has. The error comes back
   unchanged, nothing is tracked, the flight recorder goes to our file. */
static void test_oom_flight_recorder(void) {
    char path[] = "/tmp/memobs_gpu_oom_XXXXXX", line[1024], want[256];
    memobs_cuda_mem_t m;
    void *p = NULL;
    size_t want_bytes;
    uint64_t oom0 = memobs_cuda_oom_count(), live0;
    FILE *f;
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CHECK_U64(MEMOBS_OK, memobs_cuda_mem_info(dev, &m));
    want_bytes = (size_t)m.driver_total + 4 * GIB;
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_oom_report(path));
    snap();
    live0 = S.mem[MEMOBS_MEM_DEVICE].live;
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, want_bytes));
    (void)cudaGetLastError();
    CHECK_U64(oom0 + 1, memobs_cuda_oom_count());
    snap();
    CHECK_U64(live0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_oom_report("off"));

    f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        line[0] = 0;
        CHECK(fgets(line, sizeof line, f) != NULL);
        snprintf(want, sizeof want, "cudaMalloc(%llu bytes, ", (unsigned long long)want_bytes);
        CHECK(strncmp(line, "memobs: [rank ", 14) == 0);
        CHECK_HAS(line, want);
        CHECK_HAS(line, ") failed: cudaErrorMemoryAllocation (out of memory ");
        if (oom0 == 0) CHECK_HAS(line, "(out of memory 1 of 3)");
        CHECK(fgets(line, sizeof line, f) != NULL);
        CHECK_HAS(line, "  device ");
        CHECK_HAS(line, "outside memobs");
        fclose(f);
    }
    unlink(path);
    /* the device still works */
    CUOK(memobs_cudaMalloc(&p, MIB));
    CUOK(memobs_cudaFree(p));
}

/* MEMOBS_CUDA_CHECK yields the call's result. */
static void test_check_macro(void) {
    void *p = NULL;
    CHECK_ERR(cudaSuccess, MEMOBS_CUDA_CHECK(memobs_cudaMalloc(&p, 4096)));
    CHECK_ERR(cudaSuccess, MEMOBS_CUDA_CHECK(memobs_cudaFree(p)));
    CHECK(MEMOBS_CUDA_CHECK(cudaMemcpy(p, p, 1, (enum cudaMemcpyKind)42)) != cudaSuccess); /* logged */
    (void)cudaGetLastError();
}

/* Quiet log while the tests provoke errors on purpose; the lines still
   show, as "    # " comments. */
static void log_hook(int level, const char *msg, void *user) {
    (void)user;
    printf("    # memobs log (%d): %s\n", level, msg);
}

int main(void) {
    int ndev = 0;
    cudaError_t rc;
    struct cudaDeviceProp prop;
    check__suite = "gpu";
    rc = cudaGetDeviceCount(&ndev);
    if (rc != cudaSuccess || ndev <= 0) {
        printf("not ok - gpu: no CUDA device (%s)\n", rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        return 1;
    }
    dev = 0;
    if (cudaSetDevice(dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess ||
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
        printf("not ok - gpu: device %d unusable: %s\n", dev, cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    printf("# gpu: device %d: %s, sm_%d%d, %.1f GiB; %d device(s)\n", dev, prop.name, prop.major, prop.minor,
           (double)prop.totalGlobalMem / GIB, ndev);
    memobs_set_log(log_hook, NULL);
    memobs_set_device(dev);
    memobs_cuda_set_oom_report("off");

    RUN(test_copy_bytes_by_wrapper_direction_phase);
    RUN(test_copy_default_kind);
    RUN(test_alloc_tracked_and_freed);
    RUN(test_free_async_pending_until_stream);
    RUN(test_timing_matches_own_events);
    RUN(test_mem_info_outside);
    RUN(test_check_macro);
    RUN(test_oom_flight_recorder); /* last: the first out-of-memory of the process */

    settle();
    CUOK(cudaStreamDestroy(st));
    return CHECK_DONE();
}
