/* Tests of memobs_cuda.h on a real GPU (the real libcudart, a real device):
   what tests/cuda/test_cuda.c checks against the runtime double, checked here
   against the driver. Byte counts per wrapper, direction and phase;
   cudaMemcpyDefault resolved for device, pinned, pageable and managed
   memory; allocations in the tracker with their kind and device; a
   cudaFreeAsync pending until its stream gets there; CUDA-event timing
   beside a measurement of our own; memobs_cuda_get_mem_info against memory
   allocated around the wrappers; the out-of-memory flight recorder.
   And tests/cuda/test_capture.c's cases (there against the runtime double),
   here against the real runtime and driver:
     - test_graph_decode_step: a decode step captured in global mode with
       timing on (H2D, D2D, D2H, cudaMemcpyDefault), ended with cudaSuccess,
       nothing counted at capture, 100 launches counted 100 times per
       direction, the bytes arrived, memobs_cuda_get_graph_stats.
     - test_capture_{global,thread_local,relaxed}_busy: a capture in each
       mode while a second thread makes timed wrapped copies on its own
       stream, polls and summarizes (at least 3 rounds while the capture is
       open, coordinated by mutex and condition variable): the capture ends
       with cudaSuccess, one launch counts the captured copies, the
       worker's copies are each counted and timed.
     - test_last_error_untouched: every wrapper, the poll, print_mem,
       mem_info and the summary leave cudaPeekAtLastError as it was, with
       an error pending (cudaSetDevice(9999)) and with none.
     - test_no_context_other_device (needs >= 2 GPUs, says so with one) and
       test_no_context_child (any GPU count; this program run again with
       --child-no-context, a fresh process): print_mem, mem_info and a
       sample give no device a primary context (cuDevicePrimaryCtxGetState,
       the driver API: linked with -lcuda).
     - test_default_stream_capture: stream 0 here (legacy) cannot be
       captured, the wrapper fails as the bare call does; in
       tests/gpu/test_gpu_ptds.cu (built --default-stream per-thread) stream
       0 is captured, launched, counted.
     - test_timing_sync_vs_async: a synchronous copy on the host clock
       (beside our own), including a wait for the legacy stream; an async
       one on events (the copy alone).
     - test_device_reset: memobs_cudaDeviceReset with timed copies in
       flight: untimed, the device's tracked bytes 0, timing works after.
     - test_exit_child (this program run again with --child-exit, the
       sampler on): a timed copy behind a kernel that waits on a flag at
       exit: memobs' exit handler gives up after MEMOBS_CUDA_EXIT_WAIT_MS
       (2 s), the copy reported in flight; a handler registered before the
       runtime's first call runs after its teardown (cudaMemGetInfo:
       cudaErrorCudartUnloading, the model of tests/cuda/cudart_double.c),
       where memobs answers from the last figures read ("as of").

   Run by `make gpu-test` (mk/gpu.mk) on a machine with a GPU only: with no
   CUDA device it says "not ok" and exits 1. Uses device 0 (and looks at
   device 1 where there is one). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"
#include "tests/check.h"

#include <cuda.h> /* the driver API: primary context states (-lcuda) */
#include <cuda_runtime.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* tests/gpu/test_gpu_ptds.cu, built --default-stream per-thread: its
   number of failed checks */
extern "C" int gpu_ptds_capture(int dev);

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
static int log_lines;     /* lines through memobs' log hook (log_hook) */
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

/* Spins one thread until *flag is set (or max_ns pass): a kernel that
   never ends on its own (a collective waiting on a dead peer). */
__global__ void stuck_kernel(volatile int *flag, unsigned long long max_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (!*flag && t - t0 < max_ns);
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
    /* memobs_get_device_bytes: the device blocks */
    CHECK(memobs_get_device_bytes(dev, NULL) >= 3 * MIB + 13 * KIB);

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
           ours / reps / 1e6, theirs / reps / 1e6, gbs, (unsigned long long)memobs_cuda_get_untimed());
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

/* memobs_cuda_get_mem_info: driver used covers what is tracked; 1 GiB
   allocated around the wrappers shows as outside; 256 MiB through them
   does not. */
static void test_mem_info_outside(void) {
    memobs_cuda_mem_t m0, m1, m2, m3;
    void *raw = NULL, *tracked = NULL;
    const double tol = 64.0 * MIB; /* driver granularity, other users of the GPU */
    settle();
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m0, dev));
    CHECK_U64(dev, m0.device);
    CHECK(m0.driver_total > 0);
    CHECK(m0.driver_used + m0.driver_free == m0.driver_total);
    CHECK(m0.driver_used >= m0.tracked);
    CHECK_U64(memobs_get_device_bytes(dev, NULL), m0.tracked);

    CUOK(memobs_cudaMalloc(&tracked, 256 * MIB));
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m1, dev));
    CHECK_U64(m0.tracked + 256 * MIB, m1.tracked);
    CHECK(m1.driver_used >= m1.tracked);
    CHECK_NEAR(m1.outside, m0.outside, tol);

    CUOK(cudaMalloc(&raw, GIB)); /* around memobs */
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m2, dev));
    CHECK_U64(m1.tracked, m2.tracked);
    CHECK_NEAR(m2.outside - m1.outside, (double)GIB, tol);
    CHECK_NEAR(m2.driver_used - m1.driver_used, (double)GIB, tol);
    CHECK(m2.driver_used >= m2.tracked);
    printf("    # mem_info: driver used %llu, tracked %llu, outside %lld (after 1 GiB raw: +%lld)\n",
           (unsigned long long)m2.driver_used, (unsigned long long)m2.tracked, (long long)m2.outside,
           (long long)(m2.outside - m1.outside));

    CUOK(cudaFree(raw));
    CUOK(memobs_cudaFree(tracked));
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m3, dev));
    CHECK_U64(m0.tracked, m3.tracked);
    CHECK_NEAR(m3.outside, m0.outside, tol);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_cuda_get_mem_info(NULL, dev));
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
    uint64_t oom0 = memobs_cuda_get_oom_count(), live0;
    FILE *f;
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m, dev));
    want_bytes = (size_t)m.driver_total + 4 * GIB;
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_oom_report(path));
    snap();
    live0 = S.mem[MEMOBS_MEM_DEVICE].live;
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, want_bytes));
    (void)cudaGetLastError();
    CHECK_U64(oom0 + 1, memobs_cuda_get_oom_count());
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
    log_lines++;
    printf("    # memobs log (%d): %s\n", level, msg);
}

/* ------------------------------------------------------------------------ */
/* Capture and graphs, the runtime's last error, contexts, default streams, */
/* sync vs async timing, cudaDeviceReset (tests/cuda/test_capture.c's cases      */
/* against the real runtime and driver)                                     */
/* ------------------------------------------------------------------------ */

static memobs_cuda_graph_stats_t gstats(void) {
    memobs_cuda_graph_stats_t g;
    memset(&g, 0, sizeof g);
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_graph_stats(&g));
    return g;
}

/* A decode step captured once in global mode, with timing on (memobs must
   record no event into the capture and make no call that breaks it):
   H2D from pinned, D2D, D2H to pinned, a cudaMemcpyDefault (pinned ->
   device), and a D2H of what that one moved. The capture ends with
   cudaSuccess, nothing counts at capture, 100 launches in the decode phase
   count 100 x the captured bytes and copies per direction, untimed; the
   bytes really arrive. */
static void test_graph_decode_step(void) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    unsigned char *h = NULL, *h2 = NULL, *d = NULL;
    memobs_cuda_graph_stats_t g0, g1;
    uint64_t untimed0;
    size_t i;
    int k, zero = 1;
    settle();
    CUOK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUOK(memobs_cudaMallocHost((void **)&h, 8192));
    CUOK(memobs_cudaMallocHost((void **)&h2, 8192));
    CUOK(memobs_cudaMalloc((void **)&d, 16384));
    if (!s || !h || !h2 || !d) {
        CHECK(!"allocations");
        return;
    }
    fill(h, 11, 8192);
    memset(h2, 0, 8192);
    g0 = gstats();
    untimed0 = memobs_cuda_get_untimed();
    memobs_reset();
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));            /* H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d + 8192, d, 4096, cudaMemcpyDeviceToDevice, s));   /* D2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h2, d + 8192, 4096, cudaMemcpyDeviceToHost, s));    /* D2H */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d + 12288, h + 4096, 100, cudaMemcpyDefault, s));   /* H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h2 + 4096, d + 12288, 100, cudaMemcpyDeviceToHost, s)); /* D2H */
    snap(); /* a summary (its poll) during the capture must not break it */
    CHECK_U64(0, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    g1 = gstats();
    CHECK_U64(5, g1.captured_copies - g0.captured_copies);
    CHECK_U64(4096 + 4096 + 4096 + 100 + 100, g1.captured_bytes - g0.captured_bytes);
    CHECK_U64(g0.graphs + 1, g1.graphs);
    CHECK_U64(g0.captures, g1.captures);
    for (i = 0; i < 8192; i++) zero &= h2[i] == 0;
    CHECK(zero); /* nothing moved at capture */
    snap();
    CHECK_U64(0, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);
    if (!g) {
        memobs_cuda_set_timing(0);
        memobs_set_phase(MEMOBS_PHASE_NONE);
        return;
    }
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    CHECK_U64(g0.execs + 1, gstats().execs);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (k = 0; k < 100; k++) CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
    CUOK(cudaStreamSynchronize(s));
    CHECK(memcmp(h2, h, 4096) == 0);              /* H2D, D2D, D2H */
    CHECK(memcmp(h2 + 4096, h + 4096, 100) == 0); /* the cudaMemcpyDefault one */
    snap();
    CHECK_U64(100 * (4096 + 100), S.decode.h2d.bytes);
    CHECK_U64(200, S.decode.h2d.count);
    CHECK_U64(100 * (4096 + 100), S.decode.d2h.bytes);
    CHECK_U64(200, S.decode.d2h.count);
    CHECK_U64(100 * 4096, S.decode.d2d.bytes);
    CHECK_U64(100, S.decode.d2d.count);
    CHECK_U64(0, S.prefill.h2d.count + S.prefill.d2h.count + S.prefill.d2d.count);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count + S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].count +
                     S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2D].count); /* graph copies are not timed */
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(untimed0, memobs_cuda_get_untimed());
    g1 = gstats();
    CHECK_U64(100, g1.launches - g0.launches);
    CHECK_U64(500, g1.launched_copies - g0.launched_copies);
    CHECK_U64(100 * (4096 * 3 + 200), g1.launched_bytes - g0.launched_bytes);
    CHECK_U64(g0.unknown_launches, g1.unknown_launches);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    g1 = gstats();
    CHECK_U64(g0.graphs, g1.graphs);
    CHECK_U64(g0.execs, g1.execs);
    memobs_cuda_set_timing(0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CUOK(cudaStreamDestroy(s));
    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFreeHost(h));
    CUOK(memobs_cudaFreeHost(h2));
}

/* A capture in each mode while another thread makes timed wrapped copies
   on its own stream, polls and summarizes. The threads meet on a mutex and
   condition variable, no sleeps: the worker sets up its runtime state
   (cudaSetDevice) before the capture begins and, while it is open, makes
   only wrapped async copies (pinned memory), memobs_cuda_poll() and
   memobs_get_summary() - no call a global capture forbids (no sync, no
   query, no cudaMalloc); what memobs does around them on its own is in
   the relaxed mode. */
typedef struct {
    cudaStream_t s;
    unsigned char *h, *d;
    int ready, stop, bad; /* under mu */
    long rounds;          /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} busy_t;

static void *busy_worker(void *arg) {
    busy_t *w = (busy_t *)arg;
    memobs_summary_t *sum = (memobs_summary_t *)calloc(1, sizeof *sum);
    int bad = cudaSetDevice(dev) != cudaSuccess || !sum;
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    pthread_mutex_lock(&w->mu);
    w->bad |= bad;
    w->ready = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (;;) {
        int stop;
        pthread_mutex_lock(&w->mu);
        stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
        bad = memobs_cudaMemcpyAsync(w->d, w->h, 64, cudaMemcpyHostToDevice, w->s) != cudaSuccess;
        bad |= memobs_cudaMemcpyAsync(w->h + 2048, w->d, 32, cudaMemcpyDeviceToHost, w->s) != cudaSuccess;
        (void)memobs_cuda_poll();
        if (sum) memobs_get_summary(sum);
        pthread_mutex_lock(&w->mu);
        w->bad |= bad;
        w->rounds++;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    memobs_set_phase(MEMOBS_PHASE_NONE);
    free(sum);
    return NULL;
}

static void capture_while_busy(enum cudaStreamCaptureMode mode) {
    busy_t w;
    pthread_t t;
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    unsigned char *h = NULL, *h2 = NULL, *d = NULL;
    memobs_cuda_graph_stats_t g0, g1;
    uint64_t untimed0;
    long r0, rounds;
    int i;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    settle();
    CUOK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUOK(cudaStreamCreateWithFlags(&w.s, cudaStreamNonBlocking));
    CUOK(memobs_cudaMallocHost((void **)&h, 4096));
    CUOK(memobs_cudaMallocHost((void **)&h2, 4096));
    CUOK(memobs_cudaMalloc((void **)&d, 4096));
    CUOK(memobs_cudaMallocHost((void **)&w.h, 4096));
    CUOK(memobs_cudaMalloc((void **)&w.d, 4096));
    if (!s || !w.s || !h || !h2 || !d || !w.h || !w.d) {
        CHECK(!"allocations");
        return;
    }
    fill(h, 21, 4096);
    memset(h2, 0, 4096);
    fill(w.h, 22, 4096);
    g0 = gstats();
    untimed0 = memobs_cuda_get_untimed();
    memobs_reset();
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_cuda_set_timing(1);
    if (pthread_create(&t, NULL, busy_worker, &w) != 0) {
        CHECK(!"pthread_create");
        return;
    }
    pthread_mutex_lock(&w.mu);
    while (!w.ready) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);

    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, mode));
    pthread_mutex_lock(&w.mu);
    r0 = w.rounds;
    pthread_mutex_unlock(&w.mu);
    for (i = 0; i < 20; i++) {
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d + i * 128, h + i * 128, 128, cudaMemcpyHostToDevice, s));
        (void)memobs_cuda_poll(); /* the capturing thread polls too */
    }
    /* the worker makes three whole rounds while this capture is open */
    pthread_mutex_lock(&w.mu);
    while (w.rounds < r0 + 3) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g)); /* memobs did not invalidate it */
    CHECK(g != NULL);
    pthread_mutex_lock(&w.mu);
    w.stop = 1;
    pthread_mutex_unlock(&w.mu);
    pthread_join(t, NULL);
    CHECK(!w.bad);
    rounds = w.rounds;
    CHECK(rounds >= r0 + 3);

    /* the worker's copies: each counted once, in its phase, and timed */
    CUOK(cudaStreamSynchronize(w.s));
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64((uint64_t)rounds * 64, S.decode.h2d.bytes);
    CHECK_U64(rounds, S.decode.h2d.count);
    CHECK_U64((uint64_t)rounds * 32, S.decode.d2h.bytes);
    CHECK_U64(rounds, S.decode.d2h.count);
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(untimed0, memobs_cuda_get_untimed());
    CHECK_U64(rounds, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count);
    CHECK_U64(rounds, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].count);
    CHECK_U64(0, S.unphased.h2d.count); /* the captured copies counted nothing at capture */
    g1 = gstats();
    CHECK_U64(20, g1.captured_copies - g0.captured_copies);
    CHECK_U64(20 * 128, g1.captured_bytes - g0.captured_bytes);
    CHECK_U64(g0.captures, g1.captures);

    /* one launch counts the captured copies */
    if (g) {
        CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
        memobs_reset();
        memobs_set_phase(MEMOBS_PHASE_PREFILL);
        CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
        CUOK(cudaStreamSynchronize(s));
        memobs_set_phase(MEMOBS_PHASE_NONE);
        snap();
        CHECK_U64(20 * 128, S.prefill.h2d.bytes);
        CHECK_U64(20, S.prefill.h2d.count);
        CHECK_U64(0, S.prefill.d2h.count + S.prefill.d2d.count + S.decode.h2d.count);
        CHECK_U64(1, gstats().launches - g0.launches);
        CUOK(cudaMemcpy(h2, d, 20 * 128, cudaMemcpyDeviceToHost)); /* unwrapped: counts nothing */
        CHECK(memcmp(h2, h, 20 * 128) == 0);
        CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
        CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    }
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(0);
    CUOK(cudaStreamDestroy(s));
    CUOK(cudaStreamDestroy(w.s));
    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFree(w.d));
    CUOK(memobs_cudaFreeHost(h));
    CUOK(memobs_cudaFreeHost(h2));
    CUOK(memobs_cudaFreeHost(w.h));
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
}

static void test_capture_global_busy(void) { capture_while_busy(cudaStreamCaptureModeGlobal); }
static void test_capture_thread_local_busy(void) { capture_while_busy(cudaStreamCaptureModeThreadLocal); }
static void test_capture_relaxed_busy(void) { capture_while_busy(cudaStreamCaptureModeRelaxed); }

/* Every wrapper, with timing on, succeeding; after each the runtime's last
   error is still e (memobs' own calls go to the driver and never touch
   it; memobs never clears it). */
static void every_wrapper(cudaError_t e) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL, x2 = NULL;
    unsigned char *h = NULL, *h2 = NULL, *d = NULL, *m = NULL, *a = NULL, *reg = NULL;
    memobs_cuda_mem_t mi;
    FILE *f = fopen("/dev/null", "w");
    const size_t regn = 64 * KIB;
    CHECK(f != NULL);
    if (posix_memalign((void **)&reg, 4096, regn) != 0) reg = NULL;
    CHECK(reg != NULL);
#define LAST_IS(call)                                        \
    do {                                                     \
        CHECK_ERR(cudaSuccess, call);                        \
        CHECK_ERR(e, cudaPeekAtLastError());                 \
    } while (0)
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_ERR(e, cudaPeekAtLastError());
    LAST_IS(memobs_cudaMalloc((void **)&d, 8192));
    LAST_IS(memobs_cudaMallocHost((void **)&h, 8192));
    LAST_IS(memobs_cudaHostAlloc((void **)&h2, 8192, cudaHostAllocDefault));
    LAST_IS(memobs_cudaMallocManaged((void **)&m, 4096, cudaMemAttachGlobal));
    LAST_IS(memobs_cudaMallocAsync((void **)&a, 4096, s));
    if (reg) LAST_IS(memobs_cudaHostRegister(reg, regn, cudaHostRegisterDefault));
    if (!s || !d || !h || !h2 || !m || !a || !reg || !f) {
        CHECK(!"allocations");
        if (f) fclose(f);
        return;
    }
    LAST_IS(memobs_cudaMemcpy(d, h, 100, cudaMemcpyHostToDevice));
    LAST_IS(memobs_cudaMemcpy(h2, d, 100, cudaMemcpyDefault));
    LAST_IS(memobs_cudaMemcpy(d + 1024, d, 100, cudaMemcpyDeviceToDevice));
    LAST_IS(memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    LAST_IS(memobs_cudaMemcpyAsync(h, d, 100, cudaMemcpyDeviceToHost, s));
    LAST_IS(memobs_cudaMemcpyAsync(h2, m, 100, cudaMemcpyDefault, s));
    LAST_IS(memobs_cudaMemcpyAsync(d, reg, 100, cudaMemcpyDefault, 0));
    LAST_IS(memobs_cudaMemcpy2D(d, 64, h, 64, 32, 8, cudaMemcpyHostToDevice));
    LAST_IS(memobs_cudaMemcpy2DAsync(h, 64, d, 64, 32, 8, cudaMemcpyDeviceToHost, s));
    LAST_IS(memobs_cudaMemcpyPeer(d + 4096, dev, d, dev, 100));
    LAST_IS(memobs_cudaMemcpyPeerAsync(d + 4096, dev, d, dev, 100, s));
    LAST_IS(memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    LAST_IS(memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    LAST_IS(memobs_cudaMemcpyAsync(h2, d, 100, cudaMemcpyDefault, s));
    LAST_IS(memobs_cudaStreamEndCapture(s, &g));
    LAST_IS(memobs_cudaGraphInstantiate(&x, g, 0));
    LAST_IS(memobs_cudaGraphInstantiateWithFlags(&x2, g, 0));
    LAST_IS(memobs_cudaGraphLaunch(x, s));
    LAST_IS(memobs_cudaGraphLaunch(x2, s));
    (void)memobs_cuda_poll(); /* a poll with work in flight */
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK(memobs_cuda_poll() >= 0);
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_U64(MEMOBS_OK, memobs_cuda_print_mem(f));
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&mi, dev));
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_U64(MEMOBS_OK, memobs_write_summary(f, MEMOBS_FORMAT_TEXT));
    CHECK_ERR(e, cudaPeekAtLastError());
    fclose(f);
    LAST_IS(memobs_cudaGraphExecDestroy(x2));
    LAST_IS(memobs_cudaGraphExecDestroy(x));
    LAST_IS(memobs_cudaGraphDestroy(g));
    LAST_IS(memobs_cudaFreeAsync(a, s));
    LAST_IS(memobs_cudaHostUnregister(reg));
    LAST_IS(memobs_cudaFree(m));
    LAST_IS(memobs_cudaFreeHost(h2));
    LAST_IS(memobs_cudaFreeHost(h));
    LAST_IS(memobs_cudaFree(d));
#undef LAST_IS
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll(); /* settles the stream-ordered free */
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(e, cudaPeekAtLastError());
    free(reg);
}

/* The runtime's last error after the wrappers is what it would be without
   memobs: a pending error stays pending, none appears. */
static void test_last_error_untouched(void) {
    settle();
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(1);
    /* an error of the program pending before: the same after every call */
    CHECK_ERR(cudaErrorInvalidDevice, cudaSetDevice(9999));
    CHECK_ERR(cudaErrorInvalidDevice, cudaPeekAtLastError()); /* the premise */
    every_wrapper(cudaErrorInvalidDevice);
    CHECK_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    /* nothing pending before: nothing after */
    every_wrapper(cudaSuccess);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(0);
}

/* Contexts: the driver's word on whether a device's primary context is
   active (1), inactive (0), or -1 if it cannot say. */
static int primary_active(int ordinal) {
    CUdevice cd;
    unsigned flags = 0;
    int active = -1;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&cd, ordinal) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxGetState(cd, &flags, &active) != CUDA_SUCCESS)
        return -1;
    return active;
}

/* The entry of device d in a sample, or NULL. */
static const memobs_sample_dev_t *sample_dev(const memobs_sample_t *smp, int d) {
    uint32_t i;
    for (i = 0; i < smp->ndev && i < MEMOBS_SAMPLE_DEVICES; i++)
        if (smp->dev[i].device == d) return &smp->dev[i];
    return NULL;
}

/* memobs_cuda_print_mem, memobs_cuda_get_mem_info and memobs_sample_now (a
   block recorded by hand on the device) leave device `other`'s primary
   context inactive; `other` is a device this process never used. */
static void check_no_context_on(int other, int used) {
    char buf[8192], want[128];
    memobs_cuda_mem_t m;
    memobs_sample_t smp;
    const memobs_sample_dev_t *sd;
    const void *fake = (const void *)(uintptr_t)0x9000;
    FILE *f;
    int logs0;
    CHECK_U64(0, primary_active(other)); /* the premise */
    f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, memobs_cuda_print_mem(f));
        fclose(f);
        buf[sizeof buf - 1] = 0;
        snprintf(want, sizeof want, "device %d: not used by this process (no CUDA context); not asked\n", other);
        CHECK_HAS(buf, want);
        if (used >= 0) {
            snprintf(want, sizeof want, "device %d: driver used ", used);
            CHECK_HAS(buf, want);
        }
    }
    CHECK_U64(0, primary_active(other));
    logs0 = log_lines;
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_cuda_get_mem_info(&m, other));
    CHECK_U64(logs0, log_lines); /* quietly */
    CHECK_U64(0, primary_active(other));
    /* the sampler asks the devices memobs saw memory on: this one now */
    memobs_track_alloc_full(fake, 1 << 20, MEMOBS_MEM_DEVICE, other, NULL, "by hand", 0);
    CHECK_U64(MEMOBS_OK, memobs_sample_now());
    CHECK(memobs_get_samples(&smp, 1) == 1);
    sd = sample_dev(&smp, other);
    CHECK(sd != NULL);
    if (sd) {
        CHECK(sd->used == MEMOBS_UNKNOWN);
        CHECK_U64(1 << 20, sd->tracked);
    }
    if (used >= 0) {
        sd = sample_dev(&smp, used);
        CHECK(sd != NULL);
        if (sd) CHECK(sd->used != MEMOBS_UNKNOWN && sd->used > 0);
    }
    memobs_track_free(fake);
    CHECK_U64(0, memobs_get_device_bytes(other, NULL));
    CHECK_U64(0, primary_active(other));
}

/* Needs >= 2 GPUs (with one it checks only that the query sees device 0's
   context active, and says so): device 1, which this process never uses,
   keeps no primary context. Runs first, before any other test could touch
   another device. */
static void test_no_context_other_device(void) {
    int ndev = 0;
    void *p = NULL;
    CUOK(cudaGetDeviceCount(&ndev));
    CHECK_U64(1, primary_active(dev)); /* the control: an active one is seen */
    if (ndev < 2) {
        printf("    # one GPU: device 1 not checked here (test_no_context_child checks device 0 in a fresh process)\n");
        return;
    }
    /* memory on the device in use, so that the sample asks it too */
    CUOK(memobs_cudaMalloc(&p, 1 * MIB));
    check_no_context_on(1, dev);
    CUOK(memobs_cudaFree(p));
}

#define CHILD_ARG "--child-no-context"

/* The child (this program run again with CHILD_ARG, on any GPU count):
   memobs' calls before any CUDA use leave every device without a primary
   context; then the program's own first runtime call gives device 0 one,
   which the same query sees. Exit status 0 when every check passed. */
static int child_no_context(void) {
    char buf[8192];
    FILE *f;
    int n = 0, d, nlines = 0;
    const char *p;
    check__suite = "gpu-child";
    memobs_set_log(log_hook, NULL);
    /* before cuInit: memobs cannot even count the devices; asks none */
    f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, memobs_cuda_print_mem(f));
        fclose(f);
        buf[sizeof buf - 1] = 0;
        CHECK(strstr(buf, "driver used") == NULL);
    }
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS && n >= 1);
    for (d = 0; d < n; d++) CHECK_U64(0, primary_active(d)); /* the premise */
    /* every device: "not used", none asked */
    f = fmemopen(buf, sizeof buf, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, memobs_cuda_print_mem(f));
        fclose(f);
        buf[sizeof buf - 1] = 0;
        for (p = buf; (p = strstr(p, "not used by this process (no CUDA context); not asked\n")) != NULL; p++) nlines++;
        CHECK_U64(n, nlines);
    }
    check_no_context_on(0, -1);
    for (d = 0; d < n; d++) CHECK_U64(0, primary_active(d));
    {
        CUcontext c = NULL;
        CHECK(cuCtxGetCurrent(&c) == CUDA_SUCCESS && c == NULL);
    }
    /* the control: the program's own first use activates device 0, and
       memobs then reads it */
    {
        memobs_cuda_mem_t m;
        CUOK(cudaSetDevice(0));
        CUOK(cudaFree(0));
        CHECK_U64(1, primary_active(0));
        CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m, 0));
        CHECK(m.driver_total > 0);
    }
    printf("    # child: %d device(s), %d failed check(s)\n", n, check__failed_checks);
    fflush(stdout);
    return check__failed_checks ? 1 : 0;
}

/* Any GPU count: runs this program again (posix_spawn, a fresh process
   with no CUDA state) as the child above. */
static void test_no_context_child(void) {
    char self[4096];
    char *args[3];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    pid_t pid;
    int status = 0;
    CHECK(n > 0);
    if (n <= 0) return;
    self[n] = 0;
    args[0] = self;
    args[1] = (char *)CHILD_ARG;
    args[2] = NULL;
    fflush(stdout);
    CHECK_U64(0, posix_spawn(&pid, self, NULL, NULL, args, environ));
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_U64(0, WEXITSTATUS(status));
}

/* Default streams. In this unit (legacy) stream 0 is the legacy stream,
   which cannot be captured: the wrapper fails exactly as the bare call
   does (NVIDIA documents that capture may not begin on it, not the error
   code; the double says cudaErrorStreamCaptureUnsupported), leaving the
   same last error, and remembers no capture. Then tests/gpu/test_gpu_ptds.cu,
   built --default-stream per-thread, captures its stream 0. */
static void test_default_stream_capture(void) {
    cudaError_t bare, wrapped;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    memobs_cuda_graph_stats_t g0 = gstats();
    settle();
    bare = cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);
    CHECK(bare != cudaSuccess);
    if (bare == cudaSuccess) { /* against NVIDIA's documentation: end it, go no further */
        cudaGraph_t g = NULL;
        CUOK(cudaStreamEndCapture(0, &g));
        if (g) CUOK(cudaGraphDestroy(g));
        return;
    }
    CHECK_ERR(bare, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    wrapped = memobs_cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);
    CHECK_ERR(bare, wrapped);
    if (wrapped == cudaSuccess) {
        cudaGraph_t g = NULL;
        CUOK(memobs_cudaStreamEndCapture(0, &g));
        if (g) CUOK(memobs_cudaGraphDestroy(g));
        return;
    }
    CHECK_ERR(bare, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    printf("    # capture of the legacy stream: %s (bare), %s (wrapped)%s\n", cudaGetErrorName(bare),
           cudaGetErrorName(wrapped),
           bare == cudaErrorStreamCaptureUnsupported ? "" : "; not cudaErrorStreamCaptureUnsupported as in the double");
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(cudaStreamLegacy, &cs));
    CHECK_U64(cudaStreamCaptureStatusNone, cs);
    CHECK_U64(g0.captures, gstats().captures);
    /* the legacy stream still works */
    CUOK(cudaStreamSynchronize(0));
    /* the per-thread unit */
    check__failed_checks += gpu_ptds_capture(dev);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
}

static uint64_t host_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* With timing on: a synchronous 64 MiB cudaMemcpy from pinned memory is
   timed on the host clock, inside our own host measurement around the
   same call and close to it; behind a ~50 ms kernel on the legacy stream
   it includes the wait (it returns when the copy is done; events around
   the copy would not). An async copy behind the same kernel on a stream
   is timed on events: the copy alone, bytes right. */
static void test_timing_sync_vs_async(void) {
    const size_t n = 64 * MIB;
    const uint64_t spin_ns = 50ull * 1000 * 1000;
    void *h = NULL, *d = NULL;
    uint64_t t0, ours, sync_ns = 0;
    settle();
    CUOK(memobs_cudaMallocHost(&h, n));
    CUOK(memobs_cudaMalloc(&d, n));
    if (!h || !d) {
        CHECK(!"allocations");
        return;
    }
    memset(h, 3, n);
    memobs_cuda_set_timing(0);
    CUOK(memobs_cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)); /* warm-up, untimed */

    /* synchronous: the host clock, within ours */
    memobs_reset();
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    t0 = host_ns();
    CUOK(memobs_cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    ours = host_ns() - t0;
    snap();
    {
        const memobs_timed_t *t = &S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D];
        CHECK_U64(1, t->count);
        CHECK_U64(n, t->bytes);
        CHECK(t->ns > 0);
        CHECK(t->ns <= ours);
        CHECK(t->ns * 2 >= ours); /* generous: memobs' own work outside its interval is microseconds */
        sync_ns = t->ns;
        printf("    # sync 64 MiB: memobs %.3f ms, own host clock %.3f ms\n", t->ns / 1e6, ours / 1e6);
    }
    CHECK_U64(0, S.timed_in_flight_copies); /* done when it returned */

    /* synchronous behind a kernel on the legacy stream: includes the wait */
    memobs_reset();
    spin(0, spin_ns);
    t0 = host_ns();
    CUOK(memobs_cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    ours = host_ns() - t0;
    snap();
    {
        const memobs_timed_t *t = &S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D];
        CHECK(ours >= spin_ns * 9 / 10); /* the premise: the call waited for the kernel */
        CHECK_U64(1, t->count);
        CHECK(t->ns <= ours);
        CHECK(t->ns >= spin_ns * 9 / 10);
    }

    /* async behind the same kernel on a stream: events around the copy */
    memobs_reset();
    spin(st, spin_ns);
    CUOK(memobs_cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, st));
    snap();
    CHECK_U64(1, S.timed_in_flight_copies); /* the kernel holds it back */
    CHECK_U64(n, S.timed_in_flight_bytes);
    CUOK(cudaStreamSynchronize(st));
    CHECK(memobs_cuda_poll() >= 1);
    snap();
    {
        const memobs_timed_t *t = &S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D];
        CHECK_U64(1, t->count);
        CHECK_U64(n, t->bytes);
        CHECK(t->ns > 0);
        /* the copy alone: about the synchronous copy's time, not the kernel's */
        CHECK(t->ns <= 2 * sync_ns + 2ull * 1000 * 1000);
        printf("    # async 64 MiB behind a 50 ms kernel: memobs %.3f ms\n", t->ns / 1e6);
    }
    CHECK_U64(0, S.timed_in_flight_copies);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_cuda_set_timing(0);
    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFreeHost(h));
}

/* memobs_cudaDeviceReset with two timed copies in flight (behind a ~50 ms
   kernel): they become untimed, the device's tracked bytes go to 0, and a
   timed copy after the reset (in the new context) resolves. Last: the
   reset destroys everything of device `dev` (the shared stream `st` is
   made again). */
static void test_device_reset(void) {
    unsigned char *h = NULL, *h2 = NULL, *d = NULL, *a = NULL;
    uint64_t untimed0;
    memobs_cuda_mem_t m;
    settle();
    CUOK(memobs_cudaMallocHost((void **)&h, 2 * MIB));
    CUOK(memobs_cudaMalloc((void **)&d, 2 * MIB));
    CUOK(memobs_cudaMallocAsync((void **)&a, 1 * MIB, st));
    CUOK(cudaStreamSynchronize(st));
    if (!h || !d || !a) {
        CHECK(!"allocations");
        return;
    }
    CHECK(memobs_get_device_bytes(dev, NULL) >= 3 * MIB);
    memobs_reset();
    memobs_cuda_set_timing(1);
    spin(st, 50ull * 1000 * 1000);
    CUOK(memobs_cudaMemcpyAsync(d, h, 1 * MIB, cudaMemcpyHostToDevice, st));
    CUOK(memobs_cudaMemcpyAsync(h + MIB, d, 1 * MIB, cudaMemcpyDeviceToHost, st));
    snap();
    CHECK_U64(2, S.timed_in_flight_copies); /* the premise: still behind the kernel */
    untimed0 = memobs_cuda_get_untimed();
    CHECK_ERR(cudaSuccess, memobs_cudaDeviceReset());
    CHECK_U64(untimed0 + 2, memobs_cuda_get_untimed());
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, S.timed_in_flight_bytes);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count + S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].count);
    CHECK_U64(0, memobs_get_device_bytes(dev, NULL));
    CHECK(find(d) == NULL);
    CHECK(find(a) == NULL);
    /* the pinned block went with the context; memobs keeps pinned blocks
       (no device): out by hand so that nothing is left */
    if (find(h)) memobs_track_free(h);
    h = NULL;
    d = NULL;

    /* the device again, in a new context */
    CUOK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CUOK(memobs_cudaMallocHost((void **)&h, 2 * MIB));
    CUOK(memobs_cudaMallocHost((void **)&h2, 1 * MIB));
    CUOK(memobs_cudaMalloc((void **)&d, 1 * MIB));
    if (!h || !h2 || !d) {
        CHECK(!"allocations after the reset");
        return;
    }
    CHECK_U64(1 * MIB, memobs_get_device_bytes(dev, NULL));
    fill(h, 31, 1 * MIB);
    memobs_reset();
    CUOK(memobs_cudaMemcpyAsync(d, h, 1 * MIB, cudaMemcpyHostToDevice, st));
    CUOK(cudaStreamSynchronize(st));
    CHECK(memobs_cuda_poll() >= 1);
    snap();
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_U64(1 * MIB, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
    CHECK(S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].ns > 0);
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(untimed0 + 2, memobs_cuda_get_untimed());
    memobs_cuda_set_timing(0);
    CUOK(cudaMemcpy(h2, d, 1 * MIB, cudaMemcpyDeviceToHost));
    CHECK(memcmp(h2, h, 1 * MIB) == 0);
    CHECK_U64(MEMOBS_OK, memobs_cuda_get_mem_info(&m, dev));
    CHECK_U64(1 * MIB, m.tracked);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CUOK(memobs_cudaFree(d));
    CUOK(memobs_cudaFreeHost(h));
    CUOK(memobs_cudaFreeHost(h2));
    CHECK_U64(0, memobs_get_device_bytes(dev, NULL));
}


/* ---- exit ------------------------------------------------------------------ */

#define CHILD_EXIT_ARG "--child-exit"
static volatile int *exit_flag; /* host-mapped: releases the stuck kernel */
static uint64_t exit_main_ns, exit_waited_ns;

/* Registered after the runtime started and before memobs saw a call:
   runs after memobs' exit handler, before the runtime's teardown. */
static void exit_release(void) {
    exit_waited_ns = memobs_now_ns() - exit_main_ns;
    *exit_flag = 1;
    (void)cudaDeviceSynchronize();
}

/* Registered before the runtime's first call: runs after its teardown.
   Writes what it saw to $CHILD_EXIT_OUT. */
static void exit_late(void) {
    char buf[8192];
    size_t fb = 0, tb = 0;
    cudaError_t after = cudaMemGetInfo(&fb, &tb);
    FILE *f = fmemopen(buf, sizeof buf, "w"), *out;
    int as_of = 0;
    if (f) {
        (void)memobs_cuda_print_mem(f);
        fclose(f);
        buf[sizeof buf - 1] = 0;
        as_of = strstr(buf, "(device figures as of ") != NULL;
    }
    out = getenv("CHILD_EXIT_OUT") ? fopen(getenv("CHILD_EXIT_OUT"), "w") : NULL;
    if (out) {
        fprintf(out, "waited_ns %llu\nafter_teardown %s\nas_of %d\n", (unsigned long long)exit_waited_ns,
                cudaGetErrorName(after), as_of);
        fclose(out);
    }
}

static int child_exit(void) {
    int *flag = NULL, *dflag = NULL;
    void *d = NULL, *h = NULL;
    cudaStream_t s;
    atexit(exit_late);
    if (cudaFree(0) != cudaSuccess) return 2; /* the runtime starts */
    atexit(exit_release);
    memobs_cuda_set_timing(1);
    if (cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocMapped) != cudaSuccess ||
        cudaHostGetDevicePointer((void **)&dflag, flag, 0) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        memobs_cudaMalloc(&d, MIB) != cudaSuccess || memobs_cudaMallocHost(&h, MIB) != cudaSuccess)
        return 3;
    *flag = 0;
    exit_flag = flag;
    if (memobs_sample_now() != MEMOBS_OK) return 4; /* the device's figures read */
    stuck_kernel<<<1, 1, 0, s>>>(dflag, 60ull * 1000000000ull);
    if (cudaGetLastError() != cudaSuccess ||
        memobs_cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s) != cudaSuccess) /* behind it */
        return 5;
    exit_main_ns = memobs_now_ns();
    return 0;
}

/* Runs this program again as child_exit, with the sampler on and the JSON
   summary at exit: memobs waited its 2 s for the stuck copy, no longer;
   the summary has it in flight; after the runtime's teardown the last
   figures, "as of". */
static void test_exit_child(void) {
    char self[4096], dir[] = "/tmp/memobs_gpu_exit_XXXXXX", sum[128], out[128], name[64];
    char *args[3], **env;
    size_t ne = 0, i;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    unsigned long long waited = 0;
    int status = 0, as_of = -1;
    pid_t pid;
    FILE *f;
    CHECK(n > 0 && mkdtemp(dir) != NULL);
    if (n <= 0) return;
    self[n] = 0;
    snprintf(sum, sizeof sum, "MEMOBS_SUMMARY=%s/exit.json", dir);
    snprintf(out, sizeof out, "CHILD_EXIT_OUT=%s/exit.txt", dir);
    while (environ[ne]) ne++;
    env = (char **)calloc(ne + 5, sizeof *env);
    if (!env) return;
    for (i = 0; i < ne; i++) env[i] = environ[i];
    env[ne] = sum;
    env[ne + 1] = out;
    env[ne + 2] = (char *)"MEMOBS_FORMAT=json";
    env[ne + 3] = (char *)"MEMOBS_SAMPLE_MS=5";
    args[0] = self;
    args[1] = (char *)CHILD_EXIT_ARG;
    args[2] = NULL;
    fflush(stdout);
    CHECK_U64(0, posix_spawn(&pid, self, NULL, NULL, args, env));
    free(env);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK_U64(0, WEXITSTATUS(status));
    f = fopen(out + strlen("CHILD_EXIT_OUT="), "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fscanf(f, "waited_ns %llu after_teardown %63s as_of %d", &waited, name, &as_of) == 3);
        fclose(f);
        printf("    # child: memobs' exit handler returned after %.3f s; after the runtime's teardown "
               "cudaMemGetInfo gave %s\n", (double)waited / 1e9, name);
        CHECK(waited >= 2000000000ull && waited < 20000000000ull); /* its wait, and no longer */
        CHECK_STR("cudaErrorCudartUnloading", name);                /* the runtime double's model */
        CHECK_U64(1, as_of);
    }
    f = fopen(sum + strlen("MEMOBS_SUMMARY="), "r");
    CHECK(f != NULL);
    if (f) {
        char buf[65536];
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        buf[got] = 0;
        fclose(f);
        CHECK(strstr(buf, "\"in_flight_copies\":1,\"in_flight_bytes\":4096") != NULL);
    }
}

int main(int argc, char **argv) {
    int ndev = 0;
    cudaError_t rc;
    struct cudaDeviceProp prop;
    /* test_no_context_child's child: before any CUDA call */
    if (argc > 1 && strcmp(argv[1], CHILD_ARG) == 0) return child_no_context();
    if (argc > 1 && strcmp(argv[1], CHILD_EXIT_ARG) == 0) return child_exit();
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

    RUN(test_no_context_other_device); /* first: no other device touched yet */
    RUN(test_no_context_child);
    RUN(test_exit_child);
    RUN(test_copy_bytes_by_wrapper_direction_phase);
    RUN(test_copy_default_kind);
    RUN(test_alloc_tracked_and_freed);
    RUN(test_free_async_pending_until_stream);
    RUN(test_timing_matches_own_events);
    RUN(test_mem_info_outside);
    RUN(test_check_macro);
    RUN(test_graph_decode_step);
    RUN(test_capture_global_busy);
    RUN(test_capture_thread_local_busy);
    RUN(test_capture_relaxed_busy);
    RUN(test_last_error_untouched);
    RUN(test_default_stream_capture);
    RUN(test_timing_sync_vs_async);
    RUN(test_oom_flight_recorder); /* the first out-of-memory of the process */
    RUN(test_device_reset);        /* last: resets the device (st is made again) */

    settle();
    CUOK(cudaStreamDestroy(st));
    return CHECK_DONE();
}
