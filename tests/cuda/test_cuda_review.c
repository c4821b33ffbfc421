/* Five rules of the CUDA documentation that memobs_cuda.h must follow,
   each against the runtime double (tests/cuda/cudart_double.c), which
   enforces the rule:
     captures      cuStreamGetCaptureInfo's id is valid only while the
                   status is ACTIVE: captures are remembered by stream from
                   their beginning, invalidated ones never fill the table,
                   an open one is never evicted;
     peer_legacy   (a per-thread default stream build) cudaMemcpyPeerAsync
                   is not remapped to a _ptsz entry point: its stream 0 is
                   the legacy stream, and memobs' events go there;
     retain_race   the last holder may release a primary context between
                   cuDevicePrimaryCtxGetState and cuDevicePrimaryCtxRetain:
                   memobs' retain made it, its release undoes it, and no
                   figures of it are claimed;
     contexts      a context destroyed and another at the same address
                   (another device; a primary context reset): allocations
                   on the right device, no event of the dead context used;
     pools         a pool allocation's memory type and device come from the
                   pointer, not the stream (host-located and peer pools).
   Each test runs in a fresh process (the mode argument); without one, all
   of them in turn in this process would share memobs' state. Built by
   tests/cuda/test_cuda_review.sh as C11, C++17, ASan+UBSan and with
   CUDA_API_PER_THREAD_DEFAULT_STREAM. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "cuda_test.h"

#include <pthread.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#define TEST_SUITE "cuda-review"
#endif

static memobs_alloc_info_t ALLOCS[64];
/* The tracker's live record of p, or NULL. */
static const memobs_alloc_info_t *tracked(const void *p) {
    size_t n = memobs_get_allocations(ALLOCS, 64), i;
    for (i = 0; i < n && i < 64; i++)
        if (ALLOCS[i].ptr == p) return &ALLOCS[i];
    return NULL;
}

static unsigned char host[4096];

/* An open capture keeps its copies while many captures on another stream
   are invalidated (each ended through the wrapper, which gets
   cudaErrorStreamCaptureInvalidated): more of them than the table holds. */
static void captures(void) {
    cudaStream_t s1, s2;
    cudaGraph_t g = NULL, bad;
    cudaGraphExec_t x = NULL;
    memobs_cuda_graph_stats_t gs;
    void *d = NULL;
    int i;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d, 1024));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, host, 100, cudaMemcpyHostToDevice, s1));
    for (i = 0; i < 3 * MEMOBS_CUDA_MAX_CAPTURES; i++) {
        CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed));
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, host, 8, cudaMemcpyHostToDevice, s2));
        CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s2)); /* invalidates */
        CHECK_ERR(cudaErrorStreamCaptureInvalidated, memobs_cudaStreamEndCapture(s2, &bad));
    }
    (void)cudaGetLastError();
    CHECK_U64(3 * MEMOBS_CUDA_MAX_CAPTURES, cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(host, d, 50, cudaMemcpyDeviceToHost, s1));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s1, &g));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    for (i = 1; i <= 2; i++) {
        CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s1));
        snap();
        CHECK_XFER(S.total, MEMOBS_DIR_H2D, 100u * i, (unsigned)i);
        CHECK_XFER(S.total, MEMOBS_DIR_D2H, 50u * i, (unsigned)i);
    }
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_graph_stats(&gs));
    CHECK_U64(0, gs.captures); /* every capture over: none remembered */
    CHECK_U64(0, gs.dropped);
    CHECK_U64(2, gs.launches);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s1));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
}

/* Two threads capture their own per-thread default streams (one handle,
   two streams): one thread's capture invalidated and ended, and a new one
   begun there, leave the other thread's capture and its copies alone. */
static pthread_barrier_t pt_bar;
static void *pt_worker(void *arg) {
    void *d = arg;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    int bad = 0;
    bad |= memobs_cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed) != cudaSuccess;
    bad |= memobs_cudaMemcpyAsync(d, host, 100, cudaMemcpyHostToDevice, cudaStreamPerThread) != cudaSuccess;
    pthread_barrier_wait(&pt_bar); /* the main thread's captures now */
    pthread_barrier_wait(&pt_bar);
    bad |= memobs_cudaMemcpyAsync(d, host, 20, cudaMemcpyHostToDevice, cudaStreamPerThread) != cudaSuccess;
    bad |= memobs_cudaStreamEndCapture(cudaStreamPerThread, &g) != cudaSuccess;
    bad |= memobs_cudaGraphInstantiate(&x, g, 0) != cudaSuccess;
    bad |= memobs_cudaGraphLaunch(x, cudaStreamPerThread) != cudaSuccess;
    bad |= cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess;
    bad |= memobs_cudaGraphExecDestroy(x) != cudaSuccess;
    bad |= memobs_cudaGraphDestroy(g) != cudaSuccess;
    return bad ? arg : NULL;
}
static void captures_per_thread(void) {
    pthread_t t;
    void *d = NULL, *bad = &bad;
    cudaGraph_t g;
    int i;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d, 1024));
    pthread_barrier_init(&pt_bar, NULL, 2);
    CHECK(pthread_create(&t, NULL, pt_worker, d) == 0);
    pthread_barrier_wait(&pt_bar);
    for (i = 0; i < 2; i++) {
        CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed));
        CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(cudaStreamPerThread));
        CHECK_ERR(cudaErrorStreamCaptureInvalidated, memobs_cudaStreamEndCapture(cudaStreamPerThread, &g));
    }
    (void)cudaGetLastError();
    pthread_barrier_wait(&pt_bar);
    CHECK(pthread_join(t, &bad) == 0);
    CHECK(bad == NULL);
    pthread_barrier_destroy(&pt_bar);
    snap();
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 120, 2);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
}

/* With every slot taken by an open capture, a new one is not remembered
   (counted as dropped) rather than one still open evicted; a capture
   ended outside the wrappers makes room. */
static void captures_full(void) {
    cudaStream_t s[MEMOBS_CUDA_MAX_CAPTURES + 1];
    cudaGraph_t g[MEMOBS_CUDA_MAX_CAPTURES + 1];
    memobs_cuda_graph_stats_t gs;
    void *d = NULL;
    int i;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&d, 1024));
    for (i = 0; i <= MEMOBS_CUDA_MAX_CAPTURES; i++) {
        CHECK_ERR(cudaSuccess, cudaStreamCreate(&s[i]));
        CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s[i], cudaStreamCaptureModeRelaxed));
    }
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_graph_stats(&gs));
    CHECK_U64(MEMOBS_CUDA_MAX_CAPTURES, gs.captures);
    CHECK_U64(1, gs.dropped); /* the newest: every other one is open */
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s[0], &g[0])); /* outside the wrappers */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, host, 10, cudaMemcpyHostToDevice, s[MEMOBS_CUDA_MAX_CAPTURES]));
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_graph_stats(&gs));
    CHECK_U64(MEMOBS_CUDA_MAX_CAPTURES, gs.captures); /* s[0]'s made room */
    CHECK_U64(1, gs.dropped);
    for (i = 1; i <= MEMOBS_CUDA_MAX_CAPTURES; i++) CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s[i], &g[i]));
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_graph_stats(&gs));
    CHECK_U64(0, gs.captures);
    CHECK_U64(MEMOBS_CUDA_MAX_CAPTURES, gs.graphs);
    CHECK_U64(10, gs.captured_bytes);
    for (i = 0; i <= MEMOBS_CUDA_MAX_CAPTURES; i++) CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g[i]));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
}

/* cudaMemcpyPeerAsync(..., 0) is the legacy stream in every build: memobs
   asks about, and records its events on, that stream. The per-thread
   default stream is stuck: events there would never complete. */
static void peer_legacy(void) {
    void *a = NULL, *b = NULL;
    cudadbl_call_t c;
    fresh();
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&a, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&b, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_U64(0, cudadbl_set_stuck(cudaStreamPerThread, 1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyPeerAsync(b, 1, a, 0, 64, 0));
    CHECK_U64(0, cudadbl_last_call("cudaMemcpyPeerAsync", &c));
    CHECK_U64(CUDADBL_STREAM_LEGACY, c.stream_kind); /* the runtime's own reading of 0 */
    CHECK_U64(0, cudadbl_last_call("cuEventRecord", &c));
    CHECK(c.stream == cudaStreamLegacy);
    CHECK_U64(CUDADBL_STREAM_LEGACY, c.stream_kind);
    CHECK_U64(0, cudadbl_last_call("cuStreamGetCaptureInfo_v2", &c));
    CHECK(c.stream == cudaStreamLegacy);
    cudadbl_complete_all();
    CHECK_U64(1, memobs_cuda_poll());
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2D].count);
    CHECK_U64(0, memobs_cuda_get_untimed());
    CHECK_U64(0, cudadbl_set_stuck(cudaStreamPerThread, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(a));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(b));
}

/* Device 1's primary context is active when memobs asks its state, and
   released by its last holder right before memobs' retain, which makes a
   new one: memobs' release destroys it again, and it reports the device
   unused rather than figures of a context it made. */
static void retain_race(void) {
    memobs_cuda_mem_t m;
    void *a = NULL;
    fresh();
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&a, 4096));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaFree(NULL)); /* device 0's context, current here */
    CHECK_U64(1, cudadbl_contexts_created(1));
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_mem_info(&m, 1)); /* active: read */
    CHECK_U64(1, cudadbl_context_active(1));
    cudadbl_release_at_retain(1);
    CHECK_ERR(MEMOBS_ERR_INVALID, memobs_cuda_get_mem_info(&m, 1));
    CHECK_U64(2, cudadbl_contexts_created(1)); /* memobs' retain made one ... */
    CHECK_U64(0, cudadbl_context_active(1));   /* ... and its release undid it */
    CHECK_ERR(MEMOBS_ERR_INVALID, memobs_cuda_get_mem_info(&m, 1)); /* unused: not asked */
    CHECK_U64(2, cudadbl_contexts_created(1));
    CHECK_ERR(MEMOBS_OK, memobs_cuda_get_mem_info(&m, 0));
}

/* A context made on device 0 and destroyed; the next one, on device 1,
   gets its address. Then device 1's primary context is reset under
   memobs (cuDevicePrimaryCtxReset, not through a wrapper) and made
   again at its old address. */
static void contexts(void) {
    CUcontext c1 = NULL, c2 = NULL, top = NULL;
    void *a = NULL, *b = NULL, *p = NULL;
    const memobs_alloc_info_t *t;
    fresh();
    memobs_cuda_set_timing(1);
    CHECK_U64(CUDA_SUCCESS, cuCtxCreate(&c1, NULL, 0, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&a, 4096));
    CHECK((t = tracked(a)) != NULL && t->device == 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(a, host, 64, cudaMemcpyHostToDevice, 0));
    cudadbl_complete_all();
    CHECK_U64(1, memobs_cuda_poll()); /* its events back in memobs' pool */
    CHECK_ERR(cudaSuccess, memobs_cudaFree(a));
    CHECK_U64(CUDA_SUCCESS, cuCtxDestroy(c1));
    CHECK_U64(CUDA_SUCCESS, cuCtxCreate(&c2, NULL, 0, 1));
    CHECK(c2 == c1); /* the same address, another context */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&b, 8192));
    CHECK((t = tracked(b)) != NULL && t->device == 1);
    CHECK_U64(8192, memobs_get_device_bytes(1, NULL));
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(b, host, 64, cudaMemcpyHostToDevice, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(host, b, 32, cudaMemcpyDeviceToHost, 0));
    cudadbl_complete_all();
    CHECK_U64(2, memobs_cuda_poll());
    CHECK_U64(0, memobs_cuda_get_untimed());
    CHECK_U64(0, cudadbl_dead_event_uses());
    snap();
    CHECK_U64(2, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].count);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(b));
    CHECK_U64(CUDA_SUCCESS, cuCtxDestroy(c2));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&top)); /* destroyed: popped */
    /* a primary context reset under memobs: same address, a new id */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&p, 128));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(p, host, 16, cudaMemcpyHostToDevice, 0));
    cudadbl_complete_all();
    CHECK_U64(1, memobs_cuda_poll());
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxReset(1));
    memobs_track_free(p); /* the reset freed it; memobs sees only memobs_cudaDeviceReset */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&p, 128)); /* a new context at the old address */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(p, host, 16, cudaMemcpyHostToDevice, 0));
    cudadbl_complete_all();
    CHECK_U64(1, memobs_cuda_poll());
    CHECK_U64(0, memobs_cuda_get_untimed());
    CHECK_U64(0, cudadbl_dead_event_uses());
    CHECK_ERR(cudaSuccess, memobs_cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
}

/* Pools with a location: a host pool gives pinned memory, device 1's pool
   device 1's memory, whatever the stream's device (0); through the runtime
   wrapper and through the helper the LD_PRELOAD library's
   cuMemAllocFromPoolAsync interposer calls. */
static void pools(void) {
    struct cudaMemPoolProps hp, dp;
    cudaMemPool_t hpool = NULL, dpool = NULL;
    cudaStream_t s;
    CUdeviceptr dq = 0;
    void *h = NULL, *d = NULL, *q = NULL;
    const memobs_alloc_info_t *t;
    fresh();
    memset(&hp, 0, sizeof hp);
    hp.allocType = cudaMemAllocationTypePinned;
    hp.location.type = cudaMemLocationTypeHost;
    dp = hp;
    dp.location.type = cudaMemLocationTypeDevice;
    dp.location.id = 1;
    CHECK_ERR(cudaSuccess, cudaMemPoolCreate(&hpool, &hp));
    CHECK_ERR(cudaSuccess, cudaMemPoolCreate(&dpool, &dp));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s)); /* on device 0 */
    CHECK_ERR(cudaSuccess, memobs_cudaMallocFromPoolAsync(&h, 1000, hpool, s));
    CHECK((t = tracked(h)) != NULL && t->kind == MEMOBS_MEM_PINNED);
    CHECK_ERR(cudaSuccess, memobs_cudaMallocFromPoolAsync(&d, 2000, dpool, s));
    CHECK((t = tracked(d)) != NULL && t->kind == MEMOBS_MEM_DEVICE && t->device == 1);
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_U64(2000, memobs_get_device_bytes(1, NULL));
    /* the driver's call, as the LD_PRELOAD library sees it */
    {
        CUresult r = cuMemAllocFromPoolAsync(&dq, 3000, hpool, s);
        q = (void *)(uintptr_t)dq;
        CHECK_U64(CUDA_SUCCESS, memobs_cuda__pool_alloc_post((cudaError_t)r, "cuMemAllocFromPoolAsync", &q, 3000, s));
    }
    CHECK((t = tracked(q)) != NULL && t->kind == MEMOBS_MEM_PINNED);
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(h, s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(d, s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(q, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll();
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
    CHECK_ERR(cudaSuccess, cudaMemPoolDestroy(hpool));
    CHECK_ERR(cudaSuccess, cudaMemPoolDestroy(dpool));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    cudadbl_reset();
    if (!strcmp(mode, "captures")) RUN(captures);
    else if (!strcmp(mode, "captures_per_thread")) RUN(captures_per_thread);
    else if (!strcmp(mode, "captures_full")) RUN(captures_full);
    else if (!strcmp(mode, "peer_legacy")) RUN(peer_legacy);
    else if (!strcmp(mode, "retain_race")) RUN(retain_race);
    else if (!strcmp(mode, "contexts")) RUN(contexts);
    else if (!strcmp(mode, "pools")) RUN(pools);
    else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    return CHECK_DONE();
}
