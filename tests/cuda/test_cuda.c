/* Functional tests of the CUDA wrappers of memobs_cuda.h, linked against
   the CUDA runtime double (tests/cuda/cudart_double.c) instead of
   libcudart: no GPU needed, the real CUDA headers. "Device" memory is host
   memory there, so copies really copy; the double counts calls, fails on
   script, and runs streams and events on a fake clock. Built as C and as
   C++, under ASan+UBSan and TSan, with per-thread default streams and with
   MEMOBS_DISABLE by tests/cuda/test_cuda.sh.

   Without arguments it runs the in-process tests; with a mode argument one
   test of the environment or of the per-process out-of-memory reports, in
   a fresh process. The double's objects live across the in-process tests
   (memobs keeps its CUDA event pool), so each test starts with
   cudadbl_reset_script() and frees what it allocates. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#ifndef MEMOBS_CUDA_MAX_TIMED
#define MEMOBS_CUDA_MAX_TIMED 8 /* small: the queue fills */
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "../memobs_test.h"
#include "cuda_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "cuda"
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

static uint64_t nlive(void) { return memobs_get_allocations(NULL, 0); }
static const char *arg_path; /* a mode's second argument */

/* All of S's transfers are zero. */
static int no_transfers(void) {
    const memobs_dirs_t *all[4] = {&S.total, &S.prefill, &S.decode, &S.unphased};
    int i;
    for (i = 0; i < 4; i++)
        if (all[i]->h2d.count || all[i]->d2h.count || all[i]->d2d.count || all[i]->h2d.bytes ||
            all[i]->d2h.bytes || all[i]->d2d.bytes)
            return 0;
    return 1;
}

static void fill(void *p, int seed, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)(seed + i * 7);
}


#ifndef MEMOBS_DISABLE

#define MAX_ALLOCS 1024
static memobs_alloc_info_t ALLOCS[MAX_ALLOCS];
/* The tracker's live record of p, or NULL. */
static const memobs_alloc_info_t *tracked(const void *p) {
    size_t n = memobs_get_allocations(ALLOCS, MAX_ALLOCS), i;
    for (i = 0; i < n && i < MAX_ALLOCS; i++)
        if (ALLOCS[i].ptr == p) return &ALLOCS[i];
    return NULL;
}

static void log_start(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
}

static char *read_path(const char *path) {
    FILE *f = fopen(path, "r");
    char *buf;
    if (!f) return (char *)calloc(1, 1);
    buf = read_file(f);
    fclose(f);
    return buf ? buf : (char *)calloc(1, 1);
}

/* Nothing left behind by a test: no memory in the double or the tracker. */
static void leftovers(void) {
    CHECK_U64(0, cudadbl_live(CUDADBL_ALL, NULL));
    CHECK_U64(0, nlive());
}


/* ======================================================================== */
/* Copies                                                                   */
/* ======================================================================== */

/* Explicit kinds: direction from the kind, phase from the thread, no
   pointer query; host to host is not recorded; the bytes really move. */
static void test_copy_explicit_kinds(void) {
    char h[300], back[300], *d = NULL, *d2 = NULL;
    fresh();
    fill(h, 1, sizeof h);
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 300));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d2, 300));
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, 100, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d + 100, h + 100, 200, cudaMemcpyHostToDevice));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d2, d, 300, cudaMemcpyDeviceToDevice));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, d2, 300, cudaMemcpyDeviceToHost));
    CHECK(memcmp(back, h, 300) == 0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, d, 7, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, h, 50, cudaMemcpyHostToHost)); /* crosses no bus */
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 300, 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 300, 1);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 300, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2H, 7, 1);
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 300, 2);
    CHECK_XFER(S.total, MEMOBS_DIR_D2H, 307, 2);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 300, 1);
    CHECK_U64(6, calls("cudaMemcpy"));
    CHECK_U64(0, calls("cuPointerGetAttributes")); /* explicit kinds: never asked */
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(d2));
    leftovers();
}

/* Async, 2D (width x height bytes) and peer (D2D) copies; arguments reach
   the runtime unchanged. */
static void test_copy_async_2d_peer(void) {
    char h[512], back[512], *d = NULL, *e = NULL;
    cudaStream_t s = NULL;
    cudadbl_call_t c;
    fresh();
    fill(h, 3, sizeof h);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 512));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 512));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, s));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpyAsync", &c));
    CHECK(c.dst == d && c.src == h && c.bytes == 64 && c.kind == cudaMemcpyHostToDevice && c.stream == s);
    CHECK_U64(1, (unsigned long)cudadbl_pending(s)); /* queued on that stream */
    /* 10 rows of 16 bytes at pitches 32 (device) and 20 (host) */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2D(d, 32, h, 20, 16, 10, cudaMemcpyHostToDevice));
    CHECK(memcmp(d + 9 * 32, h + 9 * 20, 16) == 0);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2DAsync(back, 8, d, 32, 8, 3, cudaMemcpyDeviceToHost, s));
    CHECK(memcmp(back + 16, d + 64, 8) == 0);
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy2DAsync", &c));
    CHECK(c.stream == s && c.kind == cudaMemcpyDeviceToHost);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyPeer(e, 1, d, 0, 128));
    CHECK(memcmp(e, d, 128) == 0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyPeerAsync(d + 256, 0, e, 1, 100, s));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpyPeerAsync", &c));
    CHECK(c.stream == s && c.bytes == 100);
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 64 + 160, 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 24, 1);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 128, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2D, 100, 1);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 228, 2);
    CHECK_U64(0, calls("cuPointerGetAttributes"));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

/* cudaMemcpyDefault: each side asked; device and managed memory are the
   device, pageable, pinned and registered memory the host. */
static void test_copy_default_kind(void) {
    char *h = (char *)malloc(256), *r = (char *)malloc(256), back[256];
    void *d = NULL, *d2 = NULL, *p = NULL, *m = NULL;
    cudaStream_t s = NULL;
    long q;
    fresh();
    fill(h, 5, 256);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 256));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d2, 256));
    CHECK_ERR(cudaSuccess, cudaMallocHost(&p, 256));
    CHECK_ERR(cudaSuccess, cudaMallocManaged(&m, 256, cudaMemAttachGlobal));
    CHECK_ERR(cudaSuccess, cudaHostRegister(r, 256, cudaHostRegisterDefault));
    cudadbl_reset_calls();

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, 10, cudaMemcpyDefault));   /* H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d2, p, 20, cudaMemcpyDefault));  /* pinned: H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(m, r, 30, cudaMemcpyDefault));   /* registered to managed: H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 40, cudaMemcpyDefault, s)); /* H2D */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, d, 1, cudaMemcpyDefault)); /* D2H */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(p, m, 2, cudaMemcpyDefault));    /* managed to pinned: D2H */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2D(back, 16, d, 16, 4, 2, cudaMemcpyDefault)); /* D2H, 8 */
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d2, d, 100, cudaMemcpyDefault)); /* D2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(m, d, 200, cudaMemcpyDefault));  /* D2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2DAsync(d2, 32, m, 32, 5, 5, cudaMemcpyDefault, s)); /* D2D, 25 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, h, 256, cudaMemcpyDefault)); /* host to host: nothing */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(r, p, 256, cudaMemcpyDefault));   /* pinned to registered: nothing */
    CHECK(memcmp(back, h, 256) == 0);
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 100, 4);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 11, 3);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2D, 325, 3);
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 100, 4);
    CHECK_XFER(S.total, MEMOBS_DIR_D2H, 11, 3);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 325, 3);
    /* 12 default copies: each side asked, at most once per copy */
    q = calls("cuPointerGetAttributes");
    CHECK(q >= 12 && q <= 24);
    CHECK_ERR(cudaSuccess, cudaGetLastError());

    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaHostUnregister(r));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(d2));
    CHECK_ERR(cudaSuccess, cudaFreeHost(p));
    CHECK_ERR(cudaSuccess, cudaFree(m));
    free(h);
    free(r);
    leftovers();
}

/* A failed copy returns the runtime's error unchanged, records nothing,
   and leaves the runtime's last error as the bare call would. */
static void test_copy_failures(void) {
    char h[64], back[64], *d = NULL, *e = NULL;
    cudaStream_t s = NULL, gone = NULL;
    fresh();
    fill(h, 9, sizeof h);
    memset(back, 0, sizeof back);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&gone));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(gone));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 64));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 64));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    memobs_set_phase(MEMOBS_PHASE_PREFILL);

    /* scripted: the error of a failing launch, whatever the kind */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy", 2, cudaErrorLaunchFailure));
    CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
    CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpy(d, h, 64, cudaMemcpyDefault));
    CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyAsync", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaMemcpyAsync(back, d, 64, cudaMemcpyDeviceToHost, s));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy2D", 1, cudaErrorUnknown));
    CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpy2D(d, 8, h, 8, 8, 8, cudaMemcpyHostToDevice));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy2DAsync", 1, cudaErrorUnknown));
    CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpy2DAsync(d, 8, h, 8, 8, 8, cudaMemcpyDefault, s));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyPeer", 1, cudaErrorPeerAccessUnsupported));
    CHECK_ERR(cudaErrorPeerAccessUnsupported, memobs_cudaMemcpyPeer(e, 1, d, 0, 64));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyPeerAsync", 1, cudaErrorPeerAccessUnsupported));
    CHECK_ERR(cudaErrorPeerAccessUnsupported, memobs_cudaMemcpyPeerAsync(e, 1, d, 0, 64, s));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s)); /* nothing reached the stream */
    CHECK(d[0] != h[0] && back[0] == 0);             /* nothing copied */

    /* the runtime's own refusals */
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, memobs_cudaMemcpy(d, h, 8, (enum cudaMemcpyKind)9));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaGetLastError());
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy(back, h, 8, cudaMemcpyHostToDevice)); /* no device memory */
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy(d + 60, h, 8, cudaMemcpyHostToDevice)); /* overruns */
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy(back, d + 60, 8, cudaMemcpyDefault));
    CHECK_ERR(cudaErrorInvalidPitchValue, memobs_cudaMemcpy2D(d, 4, h, 8, 8, 2, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaMemcpyAsync(d, h, 8, cudaMemcpyHostToDevice, gone));
    CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaMemcpy2DAsync(d, 8, h, 8, 8, 1, cudaMemcpyDefault, gone));
    CHECK_ERR(cudaErrorInvalidDevice, memobs_cudaMemcpyPeer(e, 7, d, 0, 8));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpyPeer(e, 0, d, 0, 8)); /* e is on device 1 */
    CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaMemcpyPeerAsync(e, 1, d, 0, 8, gone));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGetLastError());
    snap();
    CHECK(no_transfers());
    CHECK_U64(0, S.bad_records);

    /* and a good one still counts */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 64, 1);
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 64, 1);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

/* ======================================================================== */
/* Allocations                                                              */
/* ======================================================================== */

#define CHECK_TRACKED(p, kind_, device_, bytes_)                          \
    do {                                                                  \
        const memobs_alloc_info_t *ct__a = tracked(p);                    \
        CHECK(ct__a != NULL);                                             \
        if (ct__a) {                                                      \
            CHECK_U64(kind_, ct__a->kind);                                \
            CHECK_U64(device_, ct__a->device);                            \
            CHECK_U64(bytes_, ct__a->bytes);                              \
        }                                                                 \
    } while (0)

/* Every allocation wrapper puts its block in the tracker (kind, device,
   bytes, stream, phase) and every free wrapper takes it out. Host memory
   (pinned) has no device: -1. */
static void test_alloc_and_free(void) {
    void *d0 = NULL, *d1 = NULL, *m = NULL, *p = NULL, *w = NULL, *a = NULL;
    char *r = (char *)malloc(600);
    cudaStream_t s = NULL;
    const memobs_alloc_info_t *ai;
    uint64_t a0, a1;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    a0 = nlive();
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d0, 1000));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d1, 2000));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocManaged(&m, 3000, cudaMemAttachGlobal));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&p, 400));
    CHECK_ERR(cudaSuccess, memobs_cudaHostAlloc(&w, 500, cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK_ERR(cudaSuccess, memobs_cudaHostRegister(r, 600, cudaHostRegisterDefault));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 700, s));
    CHECK(d0 && d1 && m && p && w && a);
    CHECK_U64(a0 + 7, nlive());
    CHECK_TRACKED(d0, MEMOBS_MEM_DEVICE, 0, 1000);
    CHECK_TRACKED(d1, MEMOBS_MEM_DEVICE, 1, 2000);
    CHECK_TRACKED(m, MEMOBS_MEM_MANAGED, 1, 3000);
    CHECK_TRACKED(p, MEMOBS_MEM_PINNED, -1, 400);
    CHECK_TRACKED(w, MEMOBS_MEM_PINNED, -1, 500);
    CHECK_TRACKED(r, MEMOBS_MEM_PINNED, -1, 600);
    CHECK_TRACKED(a, MEMOBS_MEM_DEVICE, 0, 700);
    ai = tracked(a);
    CHECK(ai && ai->stream == (const void *)s && !ai->pending_free);
    ai = tracked(d0);
    CHECK(ai && ai->phase == MEMOBS_PHASE_PREFILL && ai->stream == NULL);
    ai = tracked(p);
    CHECK(ai && ai->phase == MEMOBS_PHASE_DECODE);
    snap();
    CHECK_U64(3, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(3700, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(3, S.mem[MEMOBS_MEM_PINNED].live);
    CHECK_U64(1500, S.mem[MEMOBS_MEM_PINNED].current_bytes);
    CHECK_U64(1, S.mem[MEMOBS_MEM_MANAGED].live);
    CHECK_U64(3000, S.mem[MEMOBS_MEM_MANAGED].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_HOST].allocs);
    CHECK_U64(1700, memobs_get_device_bytes(0, NULL));
    CHECK_U64(2000, memobs_get_device_bytes(1, NULL));
    /* the double agrees */
    CHECK_U64(1700, cudadbl_device_used(0));
    CHECK_U64(2000, cudadbl_device_used(1));

    CHECK_ERR(cudaSuccess, memobs_cudaFree(d0));
    CHECK(tracked(d0) == NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d1));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(m));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(w));
    CHECK_ERR(cudaSuccess, memobs_cudaHostUnregister(r));
    a1 = nlive();
    CHECK_U64(a0 + 1, a1);
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(a0, nlive());
    CHECK(tracked(a) == NULL);
    {
        int k;
        for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
            CHECK_U64(0, S.mem[k].live);
            CHECK_U64(0, S.mem[k].current_bytes);
            CHECK_U64(S.mem[k].allocs, S.mem[k].frees);
        }
    }
    CHECK_U64(3, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(3, S.mem[MEMOBS_MEM_PINNED].frees);
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.allocs_null);
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    free(r);
    leftovers();
}

/* cudaMallocAsync takes its memory from the pool of the stream's device,
   which need not be the current one. */
static void test_alloc_async_device_of_stream(void) {
    void *a = NULL, *base = NULL;
    cudaStream_t s1 = NULL;
    int dev = -1;
    fresh();
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 4096, s1));
    CHECK(cudadbl_lookup(a, &base, NULL, NULL, &dev) && dev == 1); /* the runtime put it on device 1 */
    CHECK_TRACKED(a, MEMOBS_MEM_DEVICE, 1, 4096);
    CHECK_U64(4096, memobs_get_device_bytes(1, NULL));
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s1));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s1));
    (void)memobs_cuda_poll();
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    leftovers();
}

/* A failed allocation returns the error unchanged, leaves the output
   alone and tracks nothing; a failed free leaves the block tracked and
   counts no tracker misuse. */
static void test_alloc_failures(void) {
    static const char *const fns[] = {"cudaMalloc", "cudaMallocHost", "cudaHostAlloc", "cudaMallocManaged",
                                      "cudaMallocAsync", "cudaHostRegister"};
    void *sentinel = (void *)&sentinel, *p, *d = NULL, *h = NULL, *a = NULL;
    char *r = (char *)malloc(128);
    cudaStream_t s = NULL, gone = NULL;
    unsigned i;
    uint64_t n0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&gone));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(gone));
    n0 = nlive();
    for (i = 0; i < sizeof fns / sizeof fns[0]; i++)
        CHECK_U64(0, (unsigned)cudadbl_fail_next(fns[i], 1, cudaErrorNotSupported));
    p = sentinel;
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaMalloc(&p, 64));
    CHECK_ERR(cudaErrorNotSupported, cudaGetLastError());
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaMallocHost(&p, 64));
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaHostAlloc(&p, 64, 0));
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaMallocManaged(&p, 64, cudaMemAttachGlobal));
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaMallocAsync(&p, 64, s));
    CHECK_ERR(cudaErrorNotSupported, memobs_cudaHostRegister(r, 128, 0));
    CHECK(p == sentinel);
    /* the runtime's own refusals */
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMallocManaged(&p, 0, cudaMemAttachGlobal));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMallocManaged(&p, 64, 0x40));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaHostAlloc(&p, 64, 0x80));
    CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaMallocAsync(&p, 64, gone));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaHostRegister(NULL, 64, 0));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMalloc(NULL, 64));
    CHECK(p == sentinel);
    CHECK_U64(n0, nlive());
    CHECK_U64(0, cudadbl_live(CUDADBL_ALL, NULL));
    snap();
    for (i = 0; i < MEMOBS_MEM_KINDS; i++) CHECK_U64(0, S.mem[i].allocs);
    CHECK_U64(0, S.track.allocs_null);
    CHECK_U64(0, memobs_cuda_get_oom_count()); /* none was out of memory */

    /* registering twice: the second is refused, the first stays, once */
    CHECK_ERR(cudaSuccess, memobs_cudaHostRegister(r, 128, 0));
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, memobs_cudaHostRegister(r, 128, 0));
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, memobs_cudaHostRegister(r + 64, 16, 0));
    CHECK_U64(n0 + 1, nlive());
    snap();
    CHECK_U64(0, S.track.allocs_duplicate);
    CHECK_U64(1, S.mem[MEMOBS_MEM_PINNED].allocs);

    /* failed frees */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d, 64));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&h, 64));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 64, s));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFree", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaFree(d));
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError());
    CHECK_TRACKED(d, MEMOBS_MEM_DEVICE, 0, 64);
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFreeHost", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaFreeHost(h));
    CHECK_TRACKED(h, MEMOBS_MEM_PINNED, -1, 64);
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFreeAsync", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaFreeAsync(a, s));
    CHECK_TRACKED(a, MEMOBS_MEM_DEVICE, 0, 64);
    CHECK(tracked(a) && !tracked(a)->pending_free);
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaHostUnregister", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaHostUnregister(r));
    CHECK_TRACKED(r, MEMOBS_MEM_PINNED, -1, 128);
    /* wrong free for the kind, unknown pointers, interior pointers */
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFree(h));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFreeHost(d));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFree((char *)d + 8));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFree(r));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFreeAsync(h, s));
    CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaFreeAsync(a, gone));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, memobs_cudaHostUnregister(h));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, memobs_cudaHostUnregister(r + 1));
    CHECK_U64(n0 + 4, nlive());
    snap();
    CHECK_U64(0, S.track.frees_unknown);
    CHECK_U64(0, S.track.frees_double);
    /* the real frees; then a double free is the runtime's error, not the tracker's */
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, memobs_cudaHostUnregister(r));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, memobs_cudaHostUnregister(r));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaFreeAsync(a, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(0, S.track.frees_unknown);
    CHECK_U64(0, S.track.frees_double);
    CHECK_U64(n0, nlive());
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    free(r);
    leftovers();
}

/* Legal calls that allocate nothing: cudaMalloc(&p, 0) gives NULL,
   cudaFree(NULL) frees nothing. Not tracker misuse. */
static void test_alloc_zero_and_null(void) {
    void *p = (void *)&p;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&p, 0));
    CHECK(p == NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(NULL));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(NULL));
    snap();
    CHECK_U64(0, S.track.allocs_null);
    CHECK_U64(0, S.track.frees_null);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].allocs);
    leftovers();
}

/* memobs switched off at run time: the runtime is still called, nothing is
   recorded; blocks tracked before are still taken out by their frees. */
static void test_runtime_disabled(void) {
    char h[32], *d = NULL, *e = NULL;
    fresh();
    fill(h, 2, sizeof h);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 32));
    memobs_set_enabled(0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, 32, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(h, d, 32, cudaMemcpyDefault));
    CHECK(memcmp(d, h, 32) == 0); /* the copies happened */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&e, 16));
    CHECK(e != NULL && tracked(e) == NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d)); /* tracked while on */
    CHECK(tracked(d) == NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(e));
    CHECK_U64(2, calls("cudaMemcpy"));
    memobs_set_enabled(1);
    snap();
    CHECK(no_transfers());
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(0, S.track.frees_unknown);
    leftovers();
}

/* ======================================================================== */
/* Memory outside memobs                                                    */
/* ======================================================================== */

static void test_mem_info_gap(void) {
    void *a = NULL, *b = NULL, *c = NULL;
    memobs_cuda_mem_t m;
    int dev = -1;
    FILE *f;
    char *out, line[256], b1[32], b2[32], b3[32], b4[32];
    fresh();
    CHECK_U64(0, (unsigned)cudadbl_set_outside(0, 5 * MIB)); /* the context, another process... */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&a, 3 * MIB));   /* tracked */
    CHECK_ERR(cudaSuccess, cudaMalloc(&b, 2 * MIB));          /* around the wrappers */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&c, MIB));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));

    memset(&m, 0xff, sizeof m);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(0, m.device);
    CHECK_U64(16 * GIB, m.driver_total);
    CHECK_U64(16 * GIB - 10 * MIB, m.driver_free);
    CHECK_U64(10 * MIB, m.driver_used);
    CHECK_U64(3 * MIB, m.tracked);
    CHECK_U64(7 * MIB, (uint64_t)m.outside);
    /* another device: asked there, the current device restored */
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 1));
    CHECK_U64(1, m.device);
    CHECK_U64(MIB, m.driver_used);
    CHECK_U64(MIB, m.tracked);
    CHECK_U64(0, (uint64_t)m.outside);
    CHECK_ERR(cudaSuccess, cudaGetDevice(&dev));
    CHECK_U64(0, dev);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(7 * MIB, (uint64_t)m.outside);
    CHECK_ERR(cudaSuccess, cudaGetDevice(&dev));
    CHECK_U64(1, dev);
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));

    /* errors: logged, the runtime's error not left behind, device kept */
    log_start();
    CHECK_U64((unsigned)MEMOBS_ERR_IO, (unsigned)memobs_cuda_get_mem_info(&m, 7));
    CHECK_U64(1, log_has("memobs_cuda_get_mem_info(device 7): cuDeviceGet: CUDA_ERROR_INVALID_DEVICE (101)"));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cuMemGetInfo_v2", 1, (cudaError_t)999 /* CUDA_ERROR_UNKNOWN */));
    CHECK_U64((unsigned)MEMOBS_ERR_IO, (unsigned)memobs_cuda_get_mem_info(&m, 1));
    CHECK_U64(1, log_has("memobs_cuda_get_mem_info(device 1): cuMemGetInfo: CUDA_ERROR_UNKNOWN (999)"));
    CHECK_ERR(cudaSuccess, cudaGetDevice(&dev));
    CHECK_U64(0, dev);
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_get_mem_info(NULL, 0));
    CHECK_U64(3, (unsigned)log_count);
    log_stop();

    /* one line per device; a negative gap when the driver says less than memobs tracks */
    CHECK_U64(0, (unsigned)cudadbl_set_total(1, 512 * KIB));
    f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_print_mem(f));
        out = read_file(f);
        fclose(f);
        if (out) {
            snprintf(line, sizeof line, "device 0: driver used %s of %s; memobs tracks %s; outside memobs %s\n",
                     memobs_format_bytes(b1, sizeof b1, 10 * MIB), memobs_format_bytes(b2, sizeof b2, 16 * GIB),
                     memobs_format_bytes(b3, sizeof b3, 3 * MIB), memobs_format_bytes(b4, sizeof b4, 7 * MIB));
            CHECK_HAS(out, line);
            snprintf(line, sizeof line, "device 1: driver used %s of %s; memobs tracks %s; outside memobs -%s\n",
                     memobs_format_bytes(b1, sizeof b1, 512 * KIB), memobs_format_bytes(b2, sizeof b2, 512 * KIB),
                     memobs_format_bytes(b3, sizeof b3, MIB), memobs_format_bytes(b4, sizeof b4, 512 * KIB));
            CHECK_HAS(out, line);
            CHECK(strstr(out, "device 2") == NULL);
            free(out);
        }
    }
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_print_mem(NULL));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(a));
    CHECK_ERR(cudaSuccess, cudaFree(b));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(c));
    leftovers();
}

/* ======================================================================== */
/* Stream-ordered frees                                                     */
/* ======================================================================== */

static char *report_text(int (*fn)(FILE *)) {
    FILE *f = tmpfile();
    char *out = NULL;
    if (f) {
        (void)fn(f);
        out = read_file(f);
        fclose(f);
    }
    return out ? out : (char *)calloc(1, 1);
}
static int summary_text(FILE *f) { return memobs_write_summary(f, MEMOBS_FORMAT_TEXT); }

/* cudaFreeAsync: the block stays, pending, until its stream gets there; the
   driver holds it until then too, so the gap figure does not move. */
static void test_free_async_pending(void) {
    void *a = NULL, *b = NULL;
    cudaStream_t s = NULL;
    const memobs_alloc_info_t *ai;
    memobs_cuda_mem_t m;
    char *out, want[160], fb[32];
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 1000, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&b, 500, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_U64(1, cudadbl_pending_frees(NULL)); /* the runtime has not freed it */
    ai = tracked(a);
    CHECK(ai != NULL && ai->pending_free);
    CHECK_U64(0, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(2, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(1500, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(1000, S.mem[MEMOBS_MEM_DEVICE].pending_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(1500, m.tracked);
    CHECK_U64(0, (uint64_t)m.outside);
    /* in the reports */
    out = report_text(summary_text);
    snprintf(want, sizeof want, "  device    1 freed stream-ordered, %s, not yet reached by their stream",
             memobs_format_bytes(fb, sizeof fb, 1000));
    CHECK_HAS(out, want);
    free(out);
    out = report_text(memobs_print_allocations);
    CHECK_HAS(out, "(free pending)");
    free(out);
    /* the stream gets there; memobs sees it at the next poll */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(0, cudadbl_pending_frees(NULL));
    CHECK_U64(1, (unsigned)memobs_cuda_poll());
    CHECK(tracked(a) == NULL);
    snap();
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(500, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_bytes);
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(0, (uint64_t)m.outside);
    /* a summary polls too */
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(b, s));
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    leftovers();
}

/* cudaMallocAsync on the stream of a pending free gets the block back at
   once; a later settle of the old free leaves the new block alone, even
   when that one is freed stream-ordered in turn (the workspace of a loop:
   malloc, free, malloc, free... on one stream). */
static void test_free_async_reuse(void) {
    void *a = NULL, *b = NULL, *c = NULL;
    cudaStream_t s = NULL;
    const memobs_alloc_info_t *ai;
    memobs_cuda_mem_t m;
    float t1;
    fresh();
    cudadbl_set_reuse(1);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    t1 = cudadbl_clock();
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 256, s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));                   /* pending, stamped t1 */
    cudadbl_set_clock(t1 + 1.0f);
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&b, 256, s));
    CHECK(b == a); /* stream-ordered reuse */
    ai = tracked(b);
    CHECK(ai != NULL && !ai->pending_free && ai->bytes == 256);
    snap();
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(256, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(0, S.track.allocs_duplicate);
    /* b freed in turn, stamped t1 + 1; the stream reaches only the first free */
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(b, s));
    cudadbl_complete_until(t1);
    (void)memobs_cuda_poll();
    ai = tracked(b);
    CHECK(ai != NULL && ai->pending_free); /* b's own free is not reached yet */
    CHECK_U64(1, cudadbl_pending_frees(NULL));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(0, (uint64_t)m.outside); /* driver and tracker agree: 256 held */
    /* a block re-allocated by cudaMalloc is not touched by the old settle either */
    cudadbl_complete_until(t1 + 1.0f);
    (void)memobs_cuda_poll();
    CHECK(tracked(b) == NULL);
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&c, 256, s)); /* from the runtime's cache now */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll();
    CHECK_TRACKED(c, MEMOBS_MEM_DEVICE, 0, 256);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(c));
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(S.mem[MEMOBS_MEM_DEVICE].allocs, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    cudadbl_set_reuse(0);
    leftovers();
}

/* More pending frees than events to wait on: the rest leave at once. */
static void test_free_async_many(void) {
    void *p[MEMOBS_CUDA_MAX_TIMED + 3];
    cudaStream_t s = NULL;
    int i;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    for (i = 0; i < MEMOBS_CUDA_MAX_TIMED + 3; i++) CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&p[i], 64, s));
    for (i = 0; i < MEMOBS_CUDA_MAX_TIMED + 3; i++) CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(p[i], s));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    snap(); /* the first ones wait on events (at most MEMOBS_CUDA_MAX_TIMED), the rest left */
    CHECK(S.mem[MEMOBS_MEM_DEVICE].pending_frees >= 1 && S.mem[MEMOBS_MEM_DEVICE].pending_frees <= MEMOBS_CUDA_MAX_TIMED);
    CHECK_U64(S.mem[MEMOBS_MEM_DEVICE].pending_frees, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(MEMOBS_CUDA_MAX_TIMED + 3, S.mem[MEMOBS_MEM_DEVICE].pending_frees + S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK(tracked(p[MEMOBS_CUDA_MAX_TIMED + 2]) == NULL);
    CHECK(tracked(p[0]) != NULL && tracked(p[0])->pending_free);
    CHECK(cudadbl_live_events() <= 2 * MEMOBS_CUDA_MAX_TIMED);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(MEMOBS_CUDA_MAX_TIMED + 3, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    leftovers();
}

/* A stream-ordered free on a stream of another device than the pooled
   events': pending like any other, no runtime error left behind. */
static void test_free_async_other_device(void) {
    void *a = NULL;
    cudaStream_t s1 = NULL;
    const memobs_alloc_info_t *ai;
    fresh();
    /* the pool holds events made on device 0 by the tests before */
    CHECK(cudadbl_live_events() > 0);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 128, s1));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s1));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    ai = tracked(a);
    CHECK(ai != NULL && ai->pending_free);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s1));
    (void)memobs_cuda_poll();
    CHECK(tracked(a) == NULL);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    (void)cudaGetLastError();
    leftovers();
}

/* ======================================================================== */
/* Timing with CUDA events                                                  */
/* ======================================================================== */

static uint64_t timed_count(void) {
    uint64_t n = 0;
    int p, d;
    for (p = 0; p < MEMOBS_PHASES; p++)
        for (d = 0; d < MEMOBS_DIRS; d++) n += S.timed[p][d].count;
    return n;
}

/* Each copy between two events on its stream: device time from the
   events, resolved in issue order without waiting, in flight until then. */
static void test_timing(void) {
    char h[4096], *d = NULL;
    cudaStream_t s = NULL, s2 = NULL;
    float t0;
    long created;
    uint64_t untimed0, inflight;
    FILE *f;
    char *out;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    fill(h, 4, sizeof h);
    CHECK_U64(0, (unsigned)memobs_cuda_set_timing(1)); /* returns the previous setting: off */
    CHECK_U64(1, (unsigned)memobs_cuda_get_timing());
    untimed0 = memobs_cuda_get_untimed();
    cudadbl_set_copy_time(0.5f, 0); /* every copy takes 0.5 ms of device time */
    t0 = cudadbl_clock();

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 1000, cudaMemcpyHostToDevice, s)); /* t0 .. t0+0.5 */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h, d, 3000, cudaMemcpyDeviceToHost, s)); /* .. t0+1 */
    CHECK_U64(2, calls("cuEventRecord") / 2);
    CHECK_U64(0, (unsigned)memobs_cuda_poll());
    /* without waiting: memobs never synchronizes */
    CHECK_U64(0, calls("cudaEventSynchronize") + calls("cudaStreamSynchronize") + calls("cudaDeviceSynchronize") +
                     calls("cuEventSynchronize"));
    snap(); /* polls too: nothing complete yet */
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 1000, 1); /* counted when issued */
    CHECK_U64(0, timed_count());
    CHECK_U64(2, S.timed_in_flight_copies);
    CHECK_U64(4000, S.timed_in_flight_bytes);

    cudadbl_complete_until(t0 + 0.5f); /* the first copy is done */
    CHECK_U64(1, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(1000, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].count);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].ns);
    CHECK_U64(1, S.timed_in_flight_copies);
    CHECK_U64(3000, S.timed_in_flight_bytes);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    snap(); /* a summary resolves what completed */
    CHECK_U64(3000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].ns);
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, S.timed_in_flight_bytes);

    /* issue order: a later copy done first waits for the earlier one */
    memobs_set_phase(MEMOBS_PHASE_NONE);
    created = calls("cuEventCreate");
    cudadbl_set_copy_time(0.25f, 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2DAsync(d, 64, h, 64, 10, 20, cudaMemcpyHostToDevice, s2));
    CHECK_U64(0, calls("cuEventCreate") - created); /* pooled */
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s2));
    CHECK_U64(0, (unsigned)memobs_cuda_poll());
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s));
    CHECK_U64(2, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(2, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_U64(300, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].ns);

    /* synchronous, peer, host to host, failed */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(h, d, 2000, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyPeer(d + 2048, 0, d, 0, 1000));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(h, h + 100, 10, cudaMemcpyHostToHost)); /* not recorded, not timed */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyAsync", 1, cudaErrorLaunchFailure));
    CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
    cudadbl_complete_all();
    snap();
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].count); /* synchronous: the host clock */
    CHECK_U64(2000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2D].count); /* peer: events on the legacy stream */
    CHECK_U64(250000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2D].ns);
    CHECK_U64(6, timed_count());
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(untimed0, memobs_cuda_get_untimed());
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 1300, 3);

    /* a full queue: copies still counted, not timed */
    created = calls("cuEventCreate");
    {
        int i;
        for (i = 0; i < MEMOBS_CUDA_MAX_TIMED + 3; i++)
            CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 10, cudaMemcpyHostToDevice, s));
    }
    snap(); /* at most MEMOBS_CUDA_MAX_TIMED wait; each of the others is counted untimed */
    inflight = S.timed_in_flight_copies;
    CHECK(inflight >= 1 && inflight <= MEMOBS_CUDA_MAX_TIMED);
    CHECK_U64(MEMOBS_CUDA_MAX_TIMED + 3, inflight + memobs_cuda_get_untimed() - untimed0);
    CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 300 + 10 * (MEMOBS_CUDA_MAX_TIMED + 3), 2 + MEMOBS_CUDA_MAX_TIMED + 3);
    /* at most MEMOBS_CUDA_MAX_TIMED pairs ever exist */
    CHECK(calls("cuEventCreate") - created <= 2 * MEMOBS_CUDA_MAX_TIMED);
    CHECK(cudadbl_live_events() <= 2 * MEMOBS_CUDA_MAX_TIMED);
    CHECK_U64(0, calls("cuEventDestroy_v2"));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(inflight, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(6 + inflight, timed_count());
    CHECK_U64(0, S.timed_in_flight_copies);

    /* the summary shows it */
    f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_summary(f, MEMOBS_FORMAT_TEXT));
        out = read_file(f);
        fclose(f);
        if (out) {
            CHECK_HAS(out, "device-timed");
            CHECK_HAS(out, "in flight: 0 timed copies");
            free(out);
        }
    }
    /* timing off: copies no longer touch events */
    CHECK_U64(1, (unsigned)memobs_cuda_set_timing(0)); /* it was on */
    cudadbl_reset_calls();
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 10, cudaMemcpyHostToDevice, s));
    CHECK_U64(0, calls("cuEventRecord"));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s2));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    leftovers();
}

/* Copies on two devices with timing on: each device's copies are timed,
   and a successful wrapped copy leaves no runtime error behind. */
/* A timed copy issued by a thread bound to a request: its device time is
   the request's when its event completes, after the thread left it. */
static void test_timing_request(void) {
    char h[4096], *d = NULL;
    cudaStream_t s = NULL;
    memobs_request_info_t info;
    float t0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    fill(h, 4, sizeof h);
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(0.5f, 0);
    t0 = cudadbl_clock();
    memobs_request_begin(31);
    memobs_request_enter(31);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 1000, cudaMemcpyHostToDevice, s)); /* t0 .. t0+0.5 */
    memobs_request_leave();
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h, d, 700, cudaMemcpyDeviceToHost, s)); /* not bound */
    memobs_set_phase(MEMOBS_PHASE_NONE);
    CHECK_U64(MEMOBS_OK, memobs_request_info(31, &info));
    CHECK_U64(1000, info.xfer[MEMOBS_PHASE_DECODE].h2d.bytes); /* counted when issued */
    CHECK_U64(0, info.device_ns[MEMOBS_DIR_H2D]);              /* not complete yet */
    cudadbl_complete_until(t0 + 1.0f);
    CHECK_U64(2, (unsigned)memobs_cuda_poll());
    CHECK_U64(MEMOBS_OK, memobs_request_info(31, &info));
    CHECK_U64(500000, info.device_ns[MEMOBS_DIR_H2D]);
    CHECK_U64(0, info.device_ns[MEMOBS_DIR_D2H]);
    CHECK_U64(500000, info.wait_ns);
    CHECK_U64(0, info.xfer[MEMOBS_PHASE_DECODE].d2h.bytes);
    snap();
    CHECK_U64(1000, S.attributed.total.h2d.bytes);
    CHECK_U64(0, S.attributed.total.d2h.bytes);
    CHECK_U64(0, S.signal_dropped);
    memobs_request_end(31);
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

static void test_timing_two_devices(void) {
    char h[256], *d0 = NULL, *d1 = NULL;
    cudaStream_t s0 = NULL, s1 = NULL;
    uint64_t untimed0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s0));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d0, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d1, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    fill(h, 8, sizeof h);
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(1.0f, 0);
    untimed0 = memobs_cuda_get_untimed();
    /* device 0 first: its events go back to the pool */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d0, h, 256, cudaMemcpyHostToDevice, s0));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s0));
    CHECK_U64(1, (unsigned)memobs_cuda_poll());
    /* then device 1 */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d1, h, 128, cudaMemcpyHostToDevice, s1));
    CHECK_ERR(cudaSuccess, cudaGetLastError()); /* nothing failed that the caller made */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(2, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_U64(384, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(untimed0, memobs_cuda_get_untimed());
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 384, 2);
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s0));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaFree(d0));
    CHECK_ERR(cudaSuccess, cudaFree(d1));
    (void)cudaGetLastError();
    leftovers();
}

/* ======================================================================== */
/* 3D, peer 3D, symbol, 2D array and batch copies                           */
/* ======================================================================== */

/* A pitched pointer: rows of pitch bytes, slices of ysize rows. */
static struct cudaPitchedPtr pitched(void *p, size_t pitch, size_t ysize) {
    struct cudaPitchedPtr r;
    r.ptr = p;
    r.pitch = pitch;
    r.xsize = pitch;
    r.ysize = ysize;
    return r;
}

static struct cudaExtent extent3(size_t w, size_t h, size_t d) {
    struct cudaExtent e;
    e.width = w;
    e.height = h;
    e.depth = d;
    return e;
}

/* width x height x depth bytes from src (rows spitch apart, slices of sy
   rows) to dst (dpitch, dy), both from their start. */
static struct cudaMemcpy3DParms parms3d(void *dst, size_t dpitch, size_t dy, const void *src, size_t spitch,
                                        size_t sy, struct cudaExtent e, enum cudaMemcpyKind kind) {
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.dstPtr = pitched(dst, dpitch, dy);
    p.srcPtr = pitched((void *)(uintptr_t)src, spitch, sy);
    p.extent = e;
    p.kind = kind;
    return p;
}

static struct cudaMemcpy3DPeerParms peer3d(void *dst, int dst_dev, const void *src, int src_dev, size_t pitch,
                                           struct cudaExtent e) {
    struct cudaMemcpy3DPeerParms p;
    memset(&p, 0, sizeof p);
    p.dstPtr = pitched(dst, pitch, e.height);
    p.srcPtr = pitched((void *)(uintptr_t)src, pitch, e.height);
    p.dstDevice = dst_dev;
    p.srcDevice = src_dev;
    p.extent = e;
    return p;
}

/* 3D copies: width x height x depth bytes (not the pitched span), in the
   kind's direction (cudaMemcpyDefault: asked), peer ones D2D; the bytes
   land where the runtime puts them; host to host is not recorded. */
static void test_copy_3d(void) {
    char h[512], back[512], *d = NULL, *e = NULL;
    cudaStream_t s = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    cudadbl_call_t c;
    size_t x, y, z;
    int bad = 0;
    fresh();
    fill(h, 11, sizeof h);
    memset(back, 0, sizeof back);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 1024));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 1024));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    /* 5 bytes x 3 rows x 2 slices: host rows 8 apart, slices of 4 rows; device rows 16 apart, slices of 3 */
    p = parms3d(d, 16, 3, h, 8, 4, extent3(5, 3, 2), cudaMemcpyHostToDevice);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3D(&p));
    for (z = 0; z < 2; z++)
        for (y = 0; y < 3; y++)
            for (x = 0; x < 5; x++) bad |= d[z * 48 + y * 16 + x] != h[z * 32 + y * 8 + x];
    CHECK(!bad);
    p = parms3d(back, 8, 2, d, 16, 3, extent3(4, 2, 3), cudaMemcpyDeviceToHost); /* 24 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p, s));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy3DAsync", &c));
    CHECK(c.stream == s && c.bytes == 24 && c.kind == cudaMemcpyDeviceToHost);
    CHECK_U64(1, (unsigned long)cudadbl_pending(s));
    CHECK(back[8] == d[16] && back[16] == d[48]);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    p = parms3d(d + 512, 64, 1, h, 64, 1, extent3(64, 1, 1), cudaMemcpyDefault); /* pageable to device: H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3D(&p));
    CHECK(calls("cuPointerGetAttributes") > 0);
    p = parms3d(d + 640, 10, 2, d, 16, 3, extent3(10, 2, 2), cudaMemcpyDeviceToDevice); /* 40 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p, s));
    p = parms3d(back, 32, 2, h, 32, 2, extent3(32, 2, 2), cudaMemcpyHostToHost); /* crosses no bus */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3D(&p));
    memobs_set_phase(MEMOBS_PHASE_NONE);
    q = peer3d(e, 1, d, 0, 32, extent3(16, 2, 3)); /* 96, device 0 to 1 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeer(&q));
    CHECK(memcmp(e, d, 16) == 0 && memcmp(e + 64 + 32, d + 64 + 32, 16) == 0);
    q = peer3d(d + 768, 0, e, 1, 8, extent3(7, 1, 1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeerAsync(&q, s));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy3DPeerAsync", &c));
    CHECK(c.stream == s && c.bytes == 7);
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 30, 1);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2H, 24, 1);
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, 64, 1);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 40, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2D, 96 + 7, 2);
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 94, 2);
    CHECK_XFER(S.total, MEMOBS_DIR_D2H, 24, 1);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 143, 3);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

static char sym_a[64], sym_b[256]; /* "__device__" variables (cudadbl_register_symbol) */

/* Symbols are device memory: count bytes to (H2D, or D2D from device
   memory) or from them (D2H, or D2D), the kind's direction corrected for
   the symbol side, cudaMemcpyDefault asked for the other side only. */
static void test_copy_symbol(void) {
    char h[128], back[128], *d = NULL;
    cudaStream_t s = NULL;
    cudadbl_call_t c;
    fresh();
    fill(h, 13, sizeof h);
    memset(back, 0, sizeof back);
    memset(sym_a, 0, sizeof sym_a);
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(sym_a, sizeof sym_a));
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(sym_b, sizeof sym_b));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 256));
    fill(d, 17, 256);

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbol(sym_a, h, 16, 8, cudaMemcpyHostToDevice));
    CHECK(memcmp(sym_a + 8, h, 16) == 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbolAsync(sym_b, d, 200, 0, cudaMemcpyDeviceToDevice, s));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpyToSymbolAsync", &c));
    CHECK(c.stream == s && c.bytes == 200);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbol(sym_a, h, 5, 0, cudaMemcpyDefault));       /* H2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbolAsync(sym_b, d, 3, 0, cudaMemcpyDefault, s)); /* D2D */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbol(back, sym_a, 24, 4, cudaMemcpyDeviceToHost));
    CHECK(memcmp(back, sym_a + 4, 24) == 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbolAsync(d, sym_b, 100, 50, cudaMemcpyDeviceToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbolAsync(back, sym_b, 9, 0, cudaMemcpyDefault, s)); /* D2H */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbol(d, sym_a, 2, 0, cudaMemcpyDefault));           /* D2D */
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 21, 2);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2D, 203, 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 33, 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 102, 2);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 305, 4);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    leftovers();
}

#if CUDART_VERSION >= 13000
/* One attribute for every copy of a batch. */
static struct cudaMemcpyAttributes batch_attr;
static size_t batch_idx;
static cudaError_t batch(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t n, cudaStream_t s) {
    memset(&batch_attr, 0, sizeof batch_attr);
    batch_attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    batch_idx = 0;
    return memobs_cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &batch_attr, &batch_idx, 1, s);
}

static struct cudaMemcpy3DBatchOp batch3d_op(void *dst, const void *src, struct cudaExtent e) {
    struct cudaMemcpy3DBatchOp o;
    memset(&o, 0, sizeof o);
    o.dst.type = o.src.type = cudaMemcpyOperandTypePointer;
    o.dst.op.ptr.ptr = dst;
    o.src.op.ptr.ptr = (void *)(uintptr_t)src;
    o.extent = e;
    o.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    return o;
}

/* Batches: each copy in its own direction, found as for cudaMemcpyDefault
   (device and managed memory: the device), one op per copy, the bytes
   summed per direction; host to host copies of the batch not recorded;
   a 3D batch copy counts width x height x depth. */
static void test_copy_batch(void) {
    char *h = (char *)malloc(1024), *back = (char *)calloc(1, 1024), *d = NULL, *d2 = NULL, *m = NULL;
    void *dsts[5];
    const void *srcs[5];
    size_t sizes[5];
    struct cudaMemcpy3DBatchOp ops[3];
    cudaStream_t s = NULL;
    cudadbl_call_t c;
    fresh();
    fill(h, 19, 1024);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 1024));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d2, 1024));
    CHECK_ERR(cudaSuccess, cudaMallocManaged((void **)&m, 1024, cudaMemAttachGlobal));

    /* one direction: three H2D copies */
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    dsts[0] = d, srcs[0] = h, sizes[0] = 10;
    dsts[1] = d + 100, srcs[1] = h + 100, sizes[1] = 20;
    dsts[2] = m, srcs[2] = h + 200, sizes[2] = 30;
    CHECK_ERR(cudaSuccess, batch(dsts, srcs, sizes, 3, s));
    CHECK(memcmp(d + 100, h + 100, 20) == 0 && memcmp(m, h + 200, 30) == 0);
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpyBatchAsync", &c));
    CHECK(c.stream == s && c.bytes == 60);
    CHECK_U64(3, (unsigned long)cudadbl_pending(s)); /* one op per copy */
    /* every direction, and host to host */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    dsts[0] = d2, srcs[0] = h, sizes[0] = 5;           /* H2D */
    dsts[1] = back, srcs[1] = d, sizes[1] = 7;         /* D2H */
    dsts[2] = d2 + 64, srcs[2] = m, sizes[2] = 11;     /* managed to device: D2D */
    dsts[3] = back + 64, srcs[3] = h, sizes[3] = 13;   /* host to host: nothing */
    dsts[4] = back + 128, srcs[4] = d2, sizes[4] = 3;  /* D2H */
    CHECK_ERR(cudaSuccess, batch(dsts, srcs, sizes, 5, s));
    CHECK(memcmp(back, d, 7) == 0 && memcmp(back + 64, h, 13) == 0);
    /* 3D batch: 4 x 2 x 2 packed bytes H2D, 8 x 1 x 1 D2H, 3 x 3 x 1 D2D */
    memobs_set_phase(MEMOBS_PHASE_NONE);
    ops[0] = batch3d_op(d + 512, h, extent3(4, 2, 2));
    ops[1] = batch3d_op(back + 256, d, extent3(8, 1, 1));
    ops[2] = batch3d_op(d2 + 512, d, extent3(3, 3, 1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DBatchAsync(3, ops, 0, s));
    CHECK(memcmp(d + 512, h, 16) == 0 && memcmp(back + 256, d, 8) == 0);
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 60, 3);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2H, 0, 0);
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, 5, 1);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 10, 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 11, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 16, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2H, 8, 1);
    CHECK_XFER(S.unphased, MEMOBS_DIR_D2D, 9, 1);
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 81, 5);
    CHECK_XFER(S.total, MEMOBS_DIR_D2H, 18, 3);
    CHECK_XFER(S.total, MEMOBS_DIR_D2D, 20, 2);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(d2));
    CHECK_ERR(cudaSuccess, cudaFree(m));
    free(h);
    free(back);
    leftovers();
}
#endif

/* The new copies failing: the runtime's error unchanged, the last error
   as the bare call leaves it, nothing recorded, nothing on the stream;
   with timing on, no copy in flight and none counted untimed. */
static void test_copy_3d_symbol_array_batch_failures(void) {
    char h[256], back[256], *d = NULL, *e = NULL;
    cudaStream_t s = NULL, gone = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    cudaArray_t arr = (cudaArray_t)(void *)h; /* a handle the runtime never made */
    uint64_t untimed0;
    int timing;
    fresh();
    fill(h, 23, sizeof h);
    memset(back, 0, sizeof back);
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(sym_a, sizeof sym_a));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&gone));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(gone));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    memset(d, 0, 256);
    memset(sym_a, 0, sizeof sym_a);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    untimed0 = memobs_cuda_get_untimed();
    for (timing = 0; timing < 2; timing++) {
        memobs_cuda_set_timing(timing);
        /* scripted: a failing launch */
        p = parms3d(d, 16, 2, h, 16, 2, extent3(16, 2, 2), cudaMemcpyHostToDevice);
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy3D", 1, cudaErrorLaunchFailure));
        CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpy3D(&p));
        CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy3DAsync", 1, cudaErrorIllegalAddress));
        CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaMemcpy3DAsync(&p, s));
        q = peer3d(e, 1, d, 0, 16, extent3(16, 2, 2));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy3DPeer", 1, cudaErrorPeerAccessUnsupported));
        CHECK_ERR(cudaErrorPeerAccessUnsupported, memobs_cudaMemcpy3DPeer(&q));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy3DPeerAsync", 1, cudaErrorPeerAccessUnsupported));
        CHECK_ERR(cudaErrorPeerAccessUnsupported, memobs_cudaMemcpy3DPeerAsync(&q, s));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyToSymbol", 1, cudaErrorUnknown));
        CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpyToSymbol(sym_a, h, 8, 0, cudaMemcpyHostToDevice));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyToSymbolAsync", 1, cudaErrorUnknown));
        CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpyToSymbolAsync(sym_a, h, 8, 0, cudaMemcpyDefault, s));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyFromSymbol", 1, cudaErrorUnknown));
        CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpyFromSymbol(back, sym_a, 8, 0, cudaMemcpyDeviceToHost));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyFromSymbolAsync", 1, cudaErrorUnknown));
        CHECK_ERR(cudaErrorUnknown, memobs_cudaMemcpyFromSymbolAsync(d, sym_a, 8, 0, cudaMemcpyDeviceToDevice, s));
        CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy2DToArrayAsync", 1, cudaErrorLaunchFailure));
        CHECK_ERR(cudaErrorLaunchFailure,
                  memobs_cudaMemcpy2DToArrayAsync(arr, 0, 0, h, 16, 16, 2, cudaMemcpyHostToDevice, s));
        CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());

        /* the runtime's own refusals */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3D(NULL));
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DAsync(NULL, s));
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DPeer(NULL));
        p = parms3d(d, 16, 2, h, 16, 2, extent3(16, 0, 2), cudaMemcpyHostToDevice); /* zero extent */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3D(&p));
        p = parms3d(d, 16, 2, h, 8, 2, extent3(16, 2, 2), cudaMemcpyHostToDevice); /* pitch below the width */
        CHECK_ERR(cudaErrorInvalidPitchValue, memobs_cudaMemcpy3DAsync(&p, s));
        p = parms3d(d, 16, 2, h, 16, 2, extent3(16, 2, 2), (enum cudaMemcpyKind)9);
        CHECK_ERR(cudaErrorInvalidMemcpyDirection, memobs_cudaMemcpy3D(&p));
        p = parms3d(back, 16, 2, h, 16, 2, extent3(16, 2, 2), cudaMemcpyHostToDevice); /* no device memory */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3D(&p));
        p = parms3d(d, 16, 16, h, 16, 16, extent3(16, 16, 2), cudaMemcpyHostToDevice); /* overruns d */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DAsync(&p, s));
        p = parms3d(d, 16, 2, h, 16, 2, extent3(16, 2, 2), cudaMemcpyHostToDevice);
        p.srcArray = arr; /* an array (and a pointer) */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3D(&p));
        p.srcArray = NULL;
        CHECK_ERR(cudaErrorInvalidResourceHandle, memobs_cudaMemcpy3DAsync(&p, gone));
        q = peer3d(e, 7, d, 0, 16, extent3(16, 2, 2));
        CHECK_ERR(cudaErrorInvalidDevice, memobs_cudaMemcpy3DPeer(&q));
        q = peer3d(e, 0, d, 0, 16, extent3(16, 2, 2)); /* e lies on device 1 */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DPeerAsync(&q, s));
        CHECK_ERR(cudaErrorInvalidSymbol, memobs_cudaMemcpyToSymbol(h, h, 8, 0, cudaMemcpyHostToDevice));
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpyToSymbol(sym_a, h, 8, 60, cudaMemcpyHostToDevice));
        CHECK_ERR(cudaErrorInvalidMemcpyDirection,
                  memobs_cudaMemcpyToSymbolAsync(sym_a, h, 8, 0, cudaMemcpyDeviceToHost, s));
        CHECK_ERR(cudaErrorInvalidMemcpyDirection,
                  memobs_cudaMemcpyFromSymbol(back, sym_a, 8, 0, cudaMemcpyHostToDevice));
        CHECK_ERR(cudaErrorInvalidValue, /* "device" destination that is host memory */
                  memobs_cudaMemcpyFromSymbolAsync(back, sym_a, 8, 0, cudaMemcpyDeviceToDevice, s));
        CHECK_ERR(cudaErrorInvalidResourceHandle,
                  memobs_cudaMemcpyFromSymbolAsync(back, sym_a, 8, 0, cudaMemcpyDeviceToHost, gone));
        /* 2D array copies: the double makes no arrays, every handle is invalid */
        CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy2DToArray(arr, 0, 0, h, 16, 16, 2, cudaMemcpyHostToDevice));
        CHECK_ERR(cudaErrorInvalidValue,
                  memobs_cudaMemcpy2DToArrayAsync(arr, 0, 0, h, 16, 16, 2, cudaMemcpyDefault, s));
        CHECK_ERR(cudaErrorInvalidValue,
                  memobs_cudaMemcpy2DFromArray(back, 16, arr, 0, 0, 16, 2, cudaMemcpyDeviceToHost));
        CHECK_ERR(cudaErrorInvalidValue,
                  memobs_cudaMemcpy2DFromArrayAsync(back, 16, arr, 0, 0, 16, 2, cudaMemcpyDeviceToHost, s));
        CHECK_ERR(cudaErrorInvalidValue,
                  memobs_cudaMemcpy2DArrayToArray(arr, 0, 0, arr, 0, 0, 16, 2, cudaMemcpyDeviceToDevice));
        CHECK_ERR(cudaErrorInvalidMemcpyDirection,
                  memobs_cudaMemcpy2DFromArray(back, 16, arr, 0, 0, 16, 2, (enum cudaMemcpyKind)7));
        CHECK_ERR(cudaErrorInvalidResourceHandle,
                  memobs_cudaMemcpy2DFromArrayAsync(back, 16, arr, 0, 0, 16, 2, cudaMemcpyDeviceToHost, gone));
        CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGetLastError());
#if CUDART_VERSION >= 13000
        {
            void *dsts[2] = {d, back};
            const void *srcs[2] = {h, d};
            size_t sizes[2] = {16, 16}, big[2] = {16, 300};
            struct cudaMemcpy3DBatchOp ops[2];
            ops[0] = batch3d_op(d, h, extent3(8, 2, 1));
            ops[1] = batch3d_op(back, d, extent3(8, 2, 1));
            CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyBatchAsync", 1, cudaErrorLaunchFailure));
            CHECK_ERR(cudaErrorLaunchFailure, batch(dsts, srcs, sizes, 2, s));
            CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyBatchAsync", 1, cudaErrorLaunchFailure));
            CHECK_ERR(cudaErrorLaunchFailure, batch(dsts, srcs, sizes, 1, s)); /* one direction */
            CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpy3DBatchAsync", 1, cudaErrorLaunchFailure));
            CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpy3DBatchAsync(2, ops, 0, s));
            CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
            CHECK_ERR(cudaErrorInvalidValue, batch(dsts, srcs, sizes, 2, cudaStreamLegacy)); /* legacy stream */
            CHECK_ERR(cudaErrorInvalidValue, batch(dsts, srcs, big, 2, s)); /* the second overruns d: none copied */
            CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DBatchAsync(2, ops, 1, s)); /* flags */
            CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DBatchAsync(0, ops, 0, s));
            ops[1].src.type = cudaMemcpyOperandTypeArray; /* no arrays */
            ops[1].src.op.array.array = arr;
            CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy3DBatchAsync(2, ops, 0, s));
            CHECK_ERR(cudaErrorInvalidResourceHandle, batch(dsts, srcs, sizes, 2, gone));
            CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGetLastError());
        }
#endif
        /* nothing reached the streams (timed: the start events alone; peer 3D's on the implicit stream) */
        CHECK_U64(timing ? calls("cuEventRecord") : 0,
                  (unsigned long)(cudadbl_pending(s) + cudadbl_pending(MEMOBS_CUDA__IMPLICIT)));
        CHECK(d[0] == 0 && back[0] == 0 && sym_a[0] == 0); /* nothing copied */
        (void)memobs_cuda_poll();
        snap();
        CHECK(no_transfers());
        CHECK_U64(0, timed_count());
        CHECK_U64(0, S.timed_in_flight_copies);
        CHECK_U64(untimed0, memobs_cuda_get_untimed());
        CHECK_U64(0, S.bad_records);
    }
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

/* Timing of the new copies: synchronous 3D and symbol copies on the host
   clock (no event), async ones and cudaMemcpy3DPeer between events (the
   latter on the implicit stream), a batch in one direction between one
   pair of events (its copies' device time together); a batch in several
   directions is not timed: recorded, no events, each of its copies counted
   untimed. */
static void test_timing_3d_symbol_batch(void) {
    char h[1024], back[1024], *d = NULL, *e = NULL;
    cudaStream_t s = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    long rec0;
    uint64_t untimed0;
    fresh();
    fill(h, 29, sizeof h);
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(sym_b, sizeof sym_b));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 1024));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 1024));
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(0.5f, 0); /* every copy takes 0.5 ms of device time */
    untimed0 = memobs_cuda_get_untimed();

    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    rec0 = calls("cuEventRecord");
    p = parms3d(d, 16, 4, h, 16, 4, extent3(16, 4, 2), cudaMemcpyHostToDevice); /* 128 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3D(&p));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbol(back, sym_b, 40, 0, cudaMemcpyDeviceToHost));
    CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0)); /* the host clock */
    snap();
    CHECK_U64(128, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].count);
    CHECK_U64(40, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H].bytes);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H].count);

    memobs_set_phase(MEMOBS_PHASE_DECODE);
    rec0 = calls("cuEventRecord");
    /* first: like cudaMemcpyPeer, it waits for the blocking streams' work */
    q = peer3d(e, 0, d, 0, 32, extent3(32, 2, 1)); /* 64, D2D */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeer(&q));
    p = parms3d(back, 8, 3, d, 16, 4, extent3(8, 3, 2), cudaMemcpyDeviceToHost); /* 48 */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbolAsync(sym_b, h, 100, 0, cudaMemcpyHostToDevice, s));
    CHECK_U64(6, (unsigned)(calls("cuEventRecord") - rec0)); /* a pair each */
    snap(); /* nothing completed yet */
    CHECK_U64(3, S.timed_in_flight_copies);
    CHECK_U64(48 + 100 + 64, S.timed_in_flight_bytes);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].count);
    cudadbl_complete_all();
    CHECK_U64(3, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(48, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].ns);
    CHECK_U64(100, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].ns);
    CHECK_U64(64, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2D].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2D].ns);
    CHECK_U64(0, S.timed_in_flight_copies);
#if CUDART_VERSION >= 13000
    {
        void *dsts[3] = {d, d + 256, e};
        const void *srcs[3] = {h, h + 256, h + 512};
        size_t sizes[3] = {10, 20, 30};
        memobs_set_phase(MEMOBS_PHASE_NONE);
        rec0 = calls("cuEventRecord");
        CHECK_ERR(cudaSuccess, batch(dsts, srcs, sizes, 3, s)); /* H2D only: timed, one pair of events */
        CHECK_U64(2, (unsigned)(calls("cuEventRecord") - rec0));
        snap();
        CHECK_U64(1, S.timed_in_flight_copies);
        CHECK_U64(60, S.timed_in_flight_bytes);
        cudadbl_complete_all();
        CHECK_U64(1, (unsigned)memobs_cuda_poll());
        snap();
        CHECK_U64(60, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
        CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
        CHECK_U64(1500000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].ns); /* three copies of 0.5 ms */
        CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 60, 3);
        CHECK_U64(untimed0, memobs_cuda_get_untimed());
        /* two H2D copies and one D2H: recorded, not timed */
        dsts[2] = back, srcs[2] = d;
        rec0 = calls("cuEventRecord");
        CHECK_ERR(cudaSuccess, batch(dsts, srcs, sizes, 3, s));
        CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0));
        cudadbl_complete_all();
        (void)memobs_cuda_poll();
        snap();
        CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 90, 5);
        CHECK_XFER(S.unphased, MEMOBS_DIR_D2H, 30, 1);
        CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
        CHECK_U64(0, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].count);
        CHECK_U64(0, S.timed_in_flight_copies);
        CHECK_U64(3, memobs_cuda_get_untimed() - untimed0); /* each copy of the batch */
    }
#endif
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

/* memobs switched off at run time: each new wrapper still makes its call
   (the bytes move), records nothing, asks the driver nothing, times
   nothing. */
static void test_runtime_disabled_new_copies(void) {
    char h[256], back[256], *d = NULL, *e = NULL;
    cudaStream_t s = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    fresh();
    fill(h, 31, sizeof h);
    memset(back, 0, sizeof back);
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(sym_a, sizeof sym_a));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 256));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e, 256));
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    cudadbl_reset_calls();
    memobs_set_enabled(0);
    p = parms3d(d, 16, 2, h, 16, 2, extent3(16, 2, 2), cudaMemcpyDefault);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3D(&p));
    CHECK(memcmp(d, h, 64) == 0);
    p = parms3d(back, 16, 2, d, 16, 2, extent3(16, 2, 2), cudaMemcpyDeviceToHost);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p, s));
    CHECK(memcmp(back, h, 64) == 0);
    q = peer3d(e, 0, d, 0, 16, extent3(16, 2, 1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeer(&q));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeerAsync(&q, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbol(sym_a, h, 32, 0, cudaMemcpyDefault));
    CHECK(memcmp(sym_a, h, 32) == 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbolAsync(sym_a, d, 32, 32, cudaMemcpyDeviceToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbol(back, sym_a, 64, 0, cudaMemcpyDefault));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbolAsync(e, sym_a, 64, 0, cudaMemcpyDeviceToDevice, s));
    CHECK_ERR(cudaErrorInvalidValue, /* no arrays in the double: the call is made all the same */
              memobs_cudaMemcpy2DToArray((cudaArray_t)(void *)h, 0, 0, h, 16, 16, 1, cudaMemcpyDefault));
    CHECK_U64(1, calls("cudaMemcpy2DToArray"));
    (void)cudaGetLastError();
#if CUDART_VERSION >= 13000
    {
        void *dsts[2] = {d + 128, back + 128};
        const void *srcs[2] = {h, d};
        size_t sizes[2] = {8, 8};
        struct cudaMemcpy3DBatchOp op = batch3d_op(e + 128, h, extent3(4, 2, 1));
        CHECK_ERR(cudaSuccess, batch(dsts, srcs, sizes, 2, s));
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DBatchAsync(1, &op, 0, s));
        CHECK(memcmp(e + 128, h, 8) == 0);
        CHECK_U64(1, calls("cudaMemcpyBatchAsync"));
        CHECK_U64(1, calls("cudaMemcpy3DBatchAsync"));
    }
#endif
    CHECK_U64(2, calls("cudaMemcpy3D") + calls("cudaMemcpy3DAsync"));
    CHECK_U64(2, calls("cudaMemcpy3DPeer") + calls("cudaMemcpy3DPeerAsync"));
    CHECK_U64(4, calls("cudaMemcpyToSymbol") + calls("cudaMemcpyToSymbolAsync") + calls("cudaMemcpyFromSymbol") +
                     calls("cudaMemcpyFromSymbolAsync"));
    CHECK_U64(0, calls("cuPointerGetAttributes") + calls("cuEventRecord") + calls("cuStreamGetCaptureInfo_v2") + calls("cuStreamGetCaptureInfo"));
    memobs_set_enabled(1);
    memobs_cuda_set_timing(0);
    snap();
    CHECK(no_transfers());
    CHECK_U64(0, timed_count());
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(e));
    leftovers();
}

/* ======================================================================== */
/* Threads                                                                  */
/* ======================================================================== */

#define NTHREADS 8
#define ITERS 300
#define CHUNK 256
static void *copy_worker(void *arg) {
    int id = (int)(intptr_t)arg, i, bad = 0;
    char h[CHUNK], back[CHUNK];
    cudaStream_t s;
    fill(h, id, sizeof h);
    memobs_set_phase(id % 2 ? MEMOBS_PHASE_DECODE : MEMOBS_PHASE_PREFILL);
    if (cudaStreamCreate(&s) != cudaSuccess) return (void *)1;
    for (i = 0; i < ITERS; i++) {
        void *d = NULL, *a = NULL;
        bad |= memobs_cudaMalloc(&d, CHUNK) != cudaSuccess;
        bad |= memobs_cudaMallocAsync(&a, CHUNK, s) != cudaSuccess;
        bad |= memobs_cudaMemcpyAsync(d, h, CHUNK, cudaMemcpyHostToDevice, s) != cudaSuccess;
        bad |= memobs_cudaMemcpy(a, d, CHUNK, cudaMemcpyDefault) != cudaSuccess;
        bad |= memobs_cudaMemcpy(back, a, CHUNK, cudaMemcpyDeviceToHost) != cudaSuccess;
        bad |= memcmp(back, h, CHUNK) != 0;
        bad |= memobs_cudaFree(d) != cudaSuccess;
        bad |= memobs_cudaFreeAsync(a, s) != cudaSuccess;
        if (i % 64 == 0) {
            bad |= cudaStreamSynchronize(s) != cudaSuccess;
            (void)memobs_cuda_poll();
        }
    }
    bad |= cudaStreamSynchronize(s) != cudaSuccess;
    bad |= cudaStreamDestroy(s) != cudaSuccess;
    bad |= cudaGetLastError() != cudaSuccess;
    return (void *)(intptr_t)bad;
}

/* Exact totals from many threads on one device, timing on, the runtime
   reusing freed addresses at once: every copy is either timed or counted
   untimed, nothing stays in flight, no free or alloc is misordered (the
   wrappers' lock: a duplicate alloc or unknown free would show it). */
static void test_threads(void) {
    pthread_t t[NTHREADS];
    void *bad;
    int i;
    uint64_t untimed0, per = (uint64_t)ITERS * (NTHREADS / 2);
    fresh();
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(0.125f, 0);
    cudadbl_set_reuse(1); /* freed addresses handed to other threads at once */
    untimed0 = memobs_cuda_get_untimed();
    for (i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, copy_worker, (void *)(intptr_t)i);
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], &bad);
        CHECK(bad == NULL);
    }
    cudadbl_complete_all();
    (void)memobs_cuda_poll();
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, per * CHUNK, per);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2D, per * CHUNK, per);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2H, per * CHUNK, per);
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, per * CHUNK, per);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, per * CHUNK, per);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, per * CHUNK, per);
    CHECK_U64(6 * per, timed_count() + (memobs_cuda_get_untimed() - untimed0));
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(2 * NTHREADS * ITERS, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(2 * NTHREADS * ITERS, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].live);
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate);
    /* asked for the Default copies only: each side at most once */
    CHECK(calls("cuPointerGetAttributes") >= NTHREADS * ITERS &&
          calls("cuPointerGetAttributes") <= 2 * NTHREADS * ITERS);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    memobs_cuda_set_timing(0);
    cudadbl_set_reuse(0);
    leftovers();
}

/* ======================================================================== */
/* MEMOBS_CUDA_CHECK                                                        */
/* ======================================================================== */

static int check_evals;
static cudaError_t counted(cudaError_t e) {
    check_evals++;
    return e;
}

static void test_check_macro(void) {
    void *p = NULL;
    int line;
    fresh();
    log_start();
    check_evals = 0;
    CHECK_ERR(cudaSuccess, MEMOBS_CUDA_CHECK(counted(memobs_cudaMalloc(&p, 16))));
    CHECK_U64(1, check_evals);
    CHECK_U64(0, (unsigned)log_count);
    line = __LINE__ + 1;
    CHECK_ERR(cudaErrorInvalidDevice, MEMOBS_CUDA_CHECK(cudaSetDevice(9)));
    CHECK_U64(1, (unsigned)log_count);
    if (log_count == 1) {
        char want[256];
        snprintf(want, sizeof want, "%s:%d: cudaSetDevice(9): invalid device ordinal (cudaErrorInvalidDevice)",
                 __FILE__, line);
        CHECK_STR(want, log_msgs[0]);
        CHECK_U64(MEMOBS_LOG_ERROR, log_levels[0]);
    } else {
        log_dump();
    }
    CHECK_ERR(cudaErrorInvalidDevice, cudaGetLastError()); /* the check clears nothing */
    CHECK_ERR(cudaSuccess, MEMOBS_CUDA_CHECK(memobs_cudaFree(p)));
    CHECK_U64(1, (unsigned)log_count);
    log_stop();
    leftovers();
}

/* ======================================================================== */
/* Per process: out-of-memory flight recorder, environment                  */
/* ======================================================================== */

/* Out-of-memory reports to a file: the first 3 written, then counted with
   one warning. */
static void mode_oom_file(void) {
    void *a = NULL, *b = NULL, *c = (void *)&c, *h = NULL, *x = NULL;
    cudaStream_t s = NULL;
    char *out, want[512], fb[32];
    const char *sec;
    log_start();
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report(arg_path));
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, 64 * MIB));
    CHECK_U64(0, (unsigned)cudadbl_set_outside(0, 4 * MIB));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&a, 16 * MIB));
    CHECK_ERR(cudaSuccess, cudaMalloc(&b, 8 * MIB));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&h, 4096));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(a, h, 4096, cudaMemcpyHostToDevice));

    /* 1: a real one: 64 MiB asked, 36 MiB free */
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&c, 64 * MIB));
    CHECK(c == (void *)&c);
    CHECK_ERR(cudaErrorMemoryAllocation, cudaGetLastError()); /* as the bare call leaves it */
    CHECK_U64(1, memobs_cuda_get_oom_count());
    out = read_path(arg_path);
    snprintf(want, sizeof want,
             "memobs: [rank 0] cudaMalloc(%llu bytes, %s) failed: cudaErrorMemoryAllocation (out of memory 1 of 3)\n",
             (unsigned long long)(64 * MIB), memobs_format_bytes(fb, sizeof fb, 64 * MIB));
    CHECK(strncmp(out, want, strlen(want)) == 0);
    if (strncmp(out, want, strlen(want)) != 0) printf("    # want: %s    # got: %.300s\n", want, out);
    snprintf(want, sizeof want,
             "\n  device 0: driver %llu bytes free of %llu, %llu used; memobs tracks %llu; outside memobs %llu\n",
             (unsigned long long)(36 * MIB), (unsigned long long)(64 * MIB), (unsigned long long)(28 * MIB),
             (unsigned long long)(16 * MIB), (unsigned long long)(12 * MIB));
    CHECK_HAS(out, want);
    sec = strstr(out, "== memobs summary ==");
    CHECK(sec != NULL);
    if (sec) {
        CHECK_HAS(sec, "\n  H2D  "); /* the transfer table */
        CHECK_HAS(sec, "\n  device  |");
        CHECK_HAS(sec, "\n  pinned  |");
        sec = strstr(sec, "== memobs allocations == rank 0 pid ");
        CHECK(sec != NULL);
        if (sec) {
            const char *big, *small;
            snprintf(want, sizeof want, ": 2 allocations live, %llu bytes", (unsigned long long)(16 * MIB + 4096));
            CHECK_HAS(sec, want);
            big = strstr(sec, "|     16777216 (     16.00) | device  |   0 |");
            small = strstr(sec, "|         4096 (      0.00) | pinned  |   - |");
            CHECK(big != NULL && small != NULL && big < small); /* largest first */
        }
    }
    free(out);

    /* 2, 3: scripted, by other wrappers; the report names the call */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMallocHost", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMallocHost(&x, 12345));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMallocAsync(&x, 40 * MIB, s)); /* a real one */
    CHECK_U64(3, memobs_cuda_get_oom_count());
    out = read_path(arg_path);
    snprintf(want, sizeof want,
             "memobs: [rank 0] cudaMallocHost(12345 bytes, %s) failed: cudaErrorMemoryAllocation (out of memory 2 of "
             "3)\n",
             memobs_format_bytes(fb, sizeof fb, 12345));
    CHECK_HAS(out, want);
    snprintf(want, sizeof want,
             "memobs: [rank 0] cudaMallocAsync(%llu bytes, %s) failed: cudaErrorMemoryAllocation (out of memory 3 of "
             "3)\n",
             (unsigned long long)(40 * MIB), memobs_format_bytes(fb, sizeof fb, 40 * MIB));
    CHECK_HAS(out, want);
    CHECK_U64(0, (unsigned)log_count);

    /* 4, 5, 6: counted; one warning */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMallocManaged", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMallocManaged(&x, 10, cudaMemAttachGlobal));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaHostAlloc", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaHostAlloc(&x, 10, 0));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaHostRegister", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaHostRegister(h, 10, 0));
    CHECK_U64(6, memobs_cuda_get_oom_count());
    CHECK_U64(1, (unsigned)log_count);
    CHECK_U64(1, (unsigned)log_has("cudaMallocManaged: out of memory again; further out-of-memory reports are only "
                                   "counted"));
    {
        char *again = read_path(arg_path);
        CHECK_STR(out, again); /* nothing more written */
        free(again);
    }
    free(out);
    /* and nothing was tracked by the failures */
    CHECK_U64(2, nlive());
    log_stop();
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(a));
    CHECK_ERR(cudaSuccess, cudaFree(b));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    cudadbl_reset();
}

/* One out-of-memory error with the report going wherever the environment
   or the default says (the script reads it); the count is the same. */
static void mode_oom_one(void) {
    void *p = NULL;
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, MIB));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 2 * MIB));
    CHECK_U64(1, memobs_cuda_get_oom_count());
    cudadbl_reset();
}

/* memobs switched off, memobs_cuda_set_oom_report("off") and NULL:
   counted, written nowhere; bad destinations refused. */
static void mode_oom_off(void) {
    void *p = NULL;
    char big[600];
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, MIB));
    memobs_set_enabled(0); /* the report would go to stderr: the script sees it stays empty */
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 2 * MIB));
    CHECK_U64(1, memobs_cuda_get_oom_count());
    memobs_set_enabled(1);
    log_start();
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_set_oom_report(""));
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_set_oom_report(big));
    CHECK_U64(2, (unsigned)log_count);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report("off"));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 2 * MIB));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report(NULL));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 2 * MIB));
    CHECK_U64(3, memobs_cuda_get_oom_count());
    CHECK_U64(2, (unsigned)log_count);
    log_stop();
    cudadbl_reset();
}

/* MEMOBS_CUDA_TIMING=1: copies timed with no call; the JSON summary has
   the timed section. */
static void mode_timing_env(void) {
    char h[64], *d = NULL;
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 64));
    cudadbl_set_copy_time(2.0f, 0);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 32, cudaMemcpyHostToDevice, 0));
    CHECK_U64(4, calls("cuEventRecord"));
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 16, cudaMemcpyHostToDevice, 0)); /* stays in flight */
    if (arg_path) CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_summary_file(arg_path, MEMOBS_FORMAT_JSON));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

/* MEMOBS_CUDA_TIMING malformed: warned (stderr, read by the script), off. */
static void mode_timing_off(void) {
    char h[64], *d = NULL;
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 64));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, 0));
    CHECK_U64(0, calls("cuEventRecord"));
    CHECK_U64(0, calls("cuEventCreate"));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

#else /* MEMOBS_DISABLE */

/* ======================================================================== */
/* Built with MEMOBS_DISABLE                                                */
/* ======================================================================== */

/* The wrappers make their CUDA call and record nothing. */
static void test_compiled_out(void) {
    char h[64], back[64], *d = NULL;
    void *p = NULL, *m = NULL, *a = NULL;
    cudaStream_t s = NULL;
    fill(h, 6, sizeof h);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 64));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost(&p, 64));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocManaged(&m, 64, cudaMemAttachGlobal));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 64, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(a, d, 64, cudaMemcpyDefault, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, a, 64, cudaMemcpyDeviceToHost));
    CHECK(memcmp(back, h, 64) == 0);
    {   /* the new copies too */
        static char var[16];
        struct cudaMemcpy3DParms p3;
        memset(&p3, 0, sizeof p3);
        p3.dstPtr.ptr = d, p3.dstPtr.pitch = 8, p3.dstPtr.ysize = 2;
        p3.srcPtr.ptr = h, p3.srcPtr.pitch = 8, p3.srcPtr.ysize = 2;
        p3.extent.width = 8, p3.extent.height = 2, p3.extent.depth = 2;
        p3.kind = cudaMemcpyHostToDevice;
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p3, s));
        CHECK_U64(0, (unsigned)cudadbl_register_symbol(var, sizeof var));
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbol(var, h, 16, 0, cudaMemcpyDefault));
        CHECK(memcmp(var, h, 16) == 0);
#if CUDART_VERSION >= 13000
        {
            void *dst = back;
            const void *src = d;
            size_t n = 32, idx = 0;
            struct cudaMemcpyAttributes at;
            memset(&at, 0, sizeof at);
            at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
            memset(back, 0, sizeof back);
            CHECK_ERR(cudaSuccess, memobs_cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s));
            CHECK(memcmp(back, h, 32) == 0);
        }
#endif
    }
    CHECK_U64(4, cudadbl_live(CUDADBL_ALL, NULL));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMalloc", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(p));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(m));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll();
    snap();
    CHECK(no_transfers());
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(0, nlive());
    CHECK_U64(0, calls("cuEventRecord"));
    CHECK_U64(0, cudadbl_live(CUDADBL_ALL, NULL));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    cudadbl_reset();
}
#endif /* MEMOBS_DISABLE */

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    arg_path = argc > 2 ? argv[2] : NULL;
    cudadbl_reset();
#ifdef MEMOBS_DISABLE
    if (!*mode) RUN(test_compiled_out);
    else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
#else
    if (!*mode) {
        RUN(test_copy_explicit_kinds);
        RUN(test_copy_async_2d_peer);
        RUN(test_copy_default_kind);
        RUN(test_copy_failures);
        RUN(test_alloc_and_free);
        RUN(test_alloc_async_device_of_stream);
        RUN(test_alloc_failures);
        RUN(test_alloc_zero_and_null);
        RUN(test_runtime_disabled);
        RUN(test_mem_info_gap);
        RUN(test_free_async_pending);
        RUN(test_free_async_reuse);
        RUN(test_free_async_many);
        RUN(test_timing);
        RUN(test_timing_request);
        RUN(test_copy_3d);
        RUN(test_copy_symbol);
#if CUDART_VERSION >= 13000
        RUN(test_copy_batch);
#endif
        RUN(test_copy_3d_symbol_array_batch_failures);
        RUN(test_timing_3d_symbol_batch);
        RUN(test_runtime_disabled_new_copies);
        RUN(test_threads);
        RUN(test_check_macro);
        /* last: they may leave events of device 1 in memobs' pool */
        RUN(test_timing_two_devices);
        RUN(test_free_async_other_device);
        cudadbl_reset();
    } else if (!strcmp(mode, "oom_file") && arg_path) {
        RUN(mode_oom_file);
    } else if (!strcmp(mode, "oom_one")) {
        RUN(mode_oom_one);
    } else if (!strcmp(mode, "oom_off")) {
        RUN(mode_oom_off);
    } else if (!strcmp(mode, "timing_env")) {
        RUN(mode_timing_env);
    } else if (!strcmp(mode, "timing_off")) {
        RUN(mode_timing_off);
    } else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
#endif
    return CHECK_DONE();
}
