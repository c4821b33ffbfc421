/* memobs_cuda.h against the CUDA runtime's rules, as the double
   (tests/cuda/cudart_double.c) enforces them: stream capture and graphs,
   the runtime's last error, primary contexts, the three default streams,
   synchronous vs async timing, cudaDeviceReset. Built by
   tests/cuda/test_capture.sh as C11, C++17, under ASan+UBSan and TSan, and with
   per-thread default streams (CUDA_API_PER_THREAD_DEFAULT_STREAM, as nvcc
   --default-stream per-thread): the wrappers are inline, so stream 0 must
   mean the per-thread stream there and the legacy stream elsewhere.

   The double rejects what NVIDIA documents as illegal during a capture
   (a query of a captured event, the legacy stream while a blocking stream
   captures, "potentially unsafe" calls from a thread whose interaction
   mode forbids them) by failing the call and invalidating the capture; so
   a capture that ends with cudaSuccess here is one memobs did not break.
   Its driver API functions (what memobs calls on its own) never touch the
   runtime's last error, as the real driver's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
/* a library that does not exist: the double hands memobs its driver
   (memobs_cuda_driver_symbol), except in mode no_driver */
#define MEMOBS_CUDA_DRIVER "libmemobs_no_such_driver.so.1"
/* a bound on a failure only: mode exit_resolve's copies complete at once */
#define MEMOBS_CUDA_EXIT_WAIT_MS 60000
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "../memobs_test.h"
#include "cuda_test.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "capture"
#endif

#ifdef __CUDART_API_PER_THREAD_DEFAULT_STREAM
#define PTDS 1
#define DEFAULT_KIND CUDADBL_STREAM_PER_THREAD
#else
#define PTDS 0
#define DEFAULT_KIND CUDADBL_STREAM_LEGACY
#endif

static uint64_t total_count(void) {
    return S.total.h2d.count + S.total.d2h.count + S.total.d2d.count;
}

static memobs_cuda_graph_stats_t gstats(void) {
    memobs_cuda_graph_stats_t g;
    memset(&g, 0, sizeof g);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_graph_stats(&g));
    return g;
}

/* ======================================================================== */
/* Contexts (first: the double's contexts are fresh)                        */
/* ======================================================================== */

/* print_mem, mem_info, the sampler and an out-of-memory report never give
   a device a context the program did not. */
static void test_no_context_created(void) {
    FILE *f;
    char *out;
    void *p = NULL, *q = NULL;
    memobs_cuda_mem_t m;
    memobs_sample_t smp[2];
    cudadbl_reset();
    memobs_reset();
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(1));
    /* before any runtime call: the driver is not even initialized */
    f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_print_mem(f));
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(0) + (unsigned)cudadbl_contexts_created(1));
    /* the program uses device 0 only */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&p, 4096));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    rewind(f);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_print_mem(f));
    out = read_file(f);
    fclose(f);
    if (out) {
        CHECK_HAS(out, "device 0: driver used 4.10 KB of 17.18 GB; memobs tracks 4.10 KB");
        CHECK_HAS(out, "device 1: not used by this process (no CUDA context); not asked");
        free(out);
    }
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    CHECK_U64((unsigned)MEMOBS_ERR_INVALID, (unsigned)memobs_cuda_get_mem_info(&m, 1)); /* quietly */
    CHECK_U64(0, (unsigned)log_count);
    memobs_set_log(NULL, NULL);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(4096, m.driver_used);
    CHECK_U64(4096, m.tracked);
    /* the sampler asks the devices memobs saw memory on: a block that says
       device 1 (recorded by hand) must not make memobs ask device 1 */
    memobs_track_alloc_full((const void *)(uintptr_t)0x9000, 1 << 20, MEMOBS_MEM_DEVICE, 1, NULL, "manual", 0);
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_sample_now());
    CHECK_U64(1, memobs_get_samples(smp, 2));
    CHECK_U64(2, smp[0].ndev);
    CHECK_U64(4096, smp[0].dev[0].used);
    CHECK_U64(MEMOBS_UNKNOWN, smp[0].dev[1].used);
    memobs_track_free((const void *)(uintptr_t)0x9000);
    /* out of memory on device 0 */
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report("off"));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMalloc(&q, (size_t)64 << 30));
    CHECK_ERR(cudaErrorMemoryAllocation, cudaGetLastError());
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(1));
    CHECK_U64(0, (unsigned)cudadbl_context_active(1));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(p));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report("stderr"));
}

/* The out-of-memory report of cudaMallocAsync names the stream's device,
   not the current one. */
static void test_oom_stream_device(void) {
    cudaStream_t s1 = NULL;
    void *p = NULL;
    char path[] = "/tmp/memobs_capture_oom_XXXXXX";
    int fd = mkstemp(path);
    char *out;
    FILE *f;
    fresh();
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_U64(0, (unsigned)cudadbl_set_total(1, (size_t)1 << 20));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report(path));
    CHECK_ERR(cudaErrorMemoryAllocation, memobs_cudaMallocAsync(&p, (size_t)2 << 20, s1));
    CHECK_ERR(cudaErrorMemoryAllocation, cudaGetLastError());
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_set_oom_report("stderr"));
    f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        out = read_file(f);
        fclose(f);
        if (out) {
            CHECK_HAS(out, "cudaMallocAsync(2097152 bytes, 2.10 MB) failed: cudaErrorMemoryAllocation");
            CHECK_HAS(out, "  device 1: driver 1048576 bytes free of 1048576, 0 used; memobs tracks 0");
            free(out);
        }
    }
    unlink(path);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
}

/* ======================================================================== */
/* Graphs                                                                   */
/* ======================================================================== */

/* A decode step captured once (with timing on: no event may go into the
   capture) and launched 100 times: the capture succeeds, nothing counts
   at capture, and each launch counts its copies in the launching thread's
   phase; the counts equal the bytes the double moved. */
static void test_graph_decode_step(void) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    char *h = NULL, *h2 = NULL, *d = NULL;
    memobs_cuda_graph_stats_t gs;
    int i;
    long rec0, launches0, moved0, inval0;
    fresh();
    launches0 = cudadbl_graph_launches();
    moved0 = cudadbl_graph_copy_bytes();
    inval0 = cudadbl_captures_invalidated();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 8192));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h2, 8192));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 16384));
    memset(h, 7, 8192);
    memset(h2, 0, 8192);
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    rec0 = calls("cuEventRecord");
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h2, d, 1024, cudaMemcpyDeviceToHost, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy2DAsync(d + 8192, 64, d, 64, 32, 16, cudaMemcpyDeviceToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d + 12288, h, 100, cudaMemcpyDefault, s));
    snap(); /* a summary during the capture: its poll must not break it */
    CHECK_U64(0, total_count());
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_U64(0, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0)); /* nothing recorded into the capture */
    gs = gstats();
    CHECK_U64(4, gs.captured_copies);
    CHECK_U64(4096 + 1024 + 512 + 100, gs.captured_bytes);
    CHECK_U64(1, gs.graphs);
    CHECK_U64(0, gs.captures);
    CHECK_U64(0, h2[0]); /* nothing moved at capture */
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (i = 0; i < 100; i++) CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(7, h2[1023]); /* the launches moved the bytes */
    snap();
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, 100 * (4096 + 100), 200);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 100 * 1024, 100);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 100 * 512, 100);
    CHECK_U64(0, S.prefill.h2d.count + S.prefill.d2h.count + S.prefill.d2d.count);
    CHECK_U64(100, (unsigned long)(cudadbl_graph_launches() - launches0));
    CHECK_U64((unsigned long)(cudadbl_graph_copy_bytes() - moved0),
              S.total.h2d.bytes + S.total.d2h.bytes + S.total.d2d.bytes);
    gs = gstats();
    CHECK_U64(100, gs.launches);
    CHECK_U64(400, gs.launched_copies);
    CHECK_U64(0, gs.unknown_launches);
    CHECK_U64(1, gs.execs);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    gs = gstats();
    CHECK_U64(0, gs.graphs + gs.execs);
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h2));
}

/* The 3D, peer 3D, symbol and batch wrappers captured (timing on: no
   event into the capture): nothing counts at capture; each launch counts
   every copy in its direction (a batch: one op per copy), in the
   launching thread's phase, as many bytes as the launch moved. */
static char cap_sym[128]; /* a "__device__" variable (cudadbl_register_symbol) */
static void test_graph_3d_symbol_batch(void) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    char *h = NULL, *d = NULL, *e = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    memobs_cuda_graph_stats_t gs, g0;
    long rec0, moved0, inval0;
    int i;
    fresh();
    g0 = gstats();
    moved0 = cudadbl_graph_copy_bytes();
    inval0 = cudadbl_captures_invalidated();
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(cap_sym, sizeof cap_sym));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&e, 4096));
    memset(h, 5, 2048);
    memset(h + 2048, 0, 2048);
    memset(d, 0, 4096);
    memset(cap_sym, 0, sizeof cap_sym);
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    rec0 = calls("cuEventRecord");
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    memset(&p, 0, sizeof p);
    p.dstPtr.ptr = d, p.dstPtr.pitch = 32, p.dstPtr.ysize = 4; /* 16 x 4 x 2 = 128 bytes, H2D */
    p.srcPtr.ptr = h, p.srcPtr.pitch = 16, p.srcPtr.ysize = 4;
    p.extent.width = 16, p.extent.height = 4, p.extent.depth = 2;
    p.kind = cudaMemcpyHostToDevice;
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DAsync(&p, s));
    memset(&q, 0, sizeof q);
    q.dstPtr.ptr = e + 1024, q.dstPtr.pitch = 64, q.dstPtr.ysize = 2; /* 64 x 2 x 1 = 128 bytes, D2D */
    q.srcPtr.ptr = d, q.srcPtr.pitch = 64, q.srcPtr.ysize = 2;
    q.extent.width = 64, q.extent.height = 2, q.extent.depth = 1;
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DPeerAsync(&q, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyToSymbolAsync(cap_sym, h, 40, 8, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyFromSymbolAsync(h + 2048, cap_sym, 30, 0, cudaMemcpyDefault, s)); /* D2H */
#if CUDART_VERSION >= 13000
    {
        /* H2D 10 and 20, D2H 30, D2D 40; then a 3D batch: 4 x 2 x 2 D2H */
        void *dsts[4] = {e, e + 64, h + 3072, e + 128};
        const void *srcs[4] = {h, h, d, d};
        size_t sizes[4] = {10, 20, 30, 40}, idx = 0;
        struct cudaMemcpyAttributes at;
        struct cudaMemcpy3DBatchOp op;
        memset(&at, 0, sizeof at);
        at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyBatchAsync(dsts, srcs, sizes, 4, &at, &idx, 1, s));
        memset(&op, 0, sizeof op);
        op.dst.type = op.src.type = cudaMemcpyOperandTypePointer;
        op.dst.op.ptr.ptr = h + 3584;
        op.src.op.ptr.ptr = e;
        op.extent.width = 4, op.extent.height = 2, op.extent.depth = 2;
        op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpy3DBatchAsync(1, &op, 0, s));
    }
#endif
    snap();
    CHECK_U64(0, total_count());
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_U64(0, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0));
    CHECK_U64(0, (unsigned char)h[2048 + 8] + (unsigned char)cap_sym[8]); /* nothing moved at capture */
    gs = gstats();
#if CUDART_VERSION >= 13000
    CHECK_U64(9, gs.captured_copies - g0.captured_copies);
    CHECK_U64(128 + 128 + 40 + 30 + 100 + 16, gs.captured_bytes - g0.captured_bytes);
#else
    CHECK_U64(4, gs.captured_copies - g0.captured_copies);
    CHECK_U64(128 + 128 + 40 + 30, gs.captured_bytes - g0.captured_bytes);
#endif
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (i = 0; i < 10; i++) CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(5, (unsigned char)h[2048 + 8]); /* the launches moved the bytes, through the symbol */
    snap();
#if CUDART_VERSION >= 13000
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, 10 * (128 + 40 + 30), 10 * 4);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 10 * (30 + 30 + 16), 10 * 3);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 10 * (128 + 40), 10 * 2);
#else
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, 10 * (128 + 40), 10 * 2);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 10 * 30, 10);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2D, 10 * 128, 10);
#endif
    CHECK_U64(0, S.prefill.h2d.count + S.prefill.d2h.count + S.prefill.d2d.count);
    CHECK_U64((unsigned long)(cudadbl_graph_copy_bytes() - moved0),
              S.total.h2d.bytes + S.total.d2h.bytes + S.total.d2d.bytes);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count); /* graph copies are not timed */
    gs = gstats();
    CHECK_U64(10, gs.launches - g0.launches);
    CHECK_U64(total_count(), gs.launched_copies - g0.launched_copies);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(e));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* Graphs in graphs, a graph memobs did not see instantiated, an
   invalidated capture. */
static void test_graph_nested_and_unknown(void) {
    cudaStream_t s = NULL, s2 = NULL;
    cudaGraph_t g = NULL, outer = NULL, bad = NULL;
    cudaGraphExec_t x = NULL, xo = NULL, xu = NULL;
    char *h = NULL, *d = NULL;
    memobs_cuda_graph_stats_t gs, g0;
    long moved0, inval0;
    fresh();
    g0 = gstats();
    moved0 = cudadbl_graph_copy_bytes();
    inval0 = cudadbl_captures_invalidated();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 300, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiateWithFlags(&x, g, 0));
    /* the inner graph launched into another capture, plus a copy */
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s2));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h, d, 50, cudaMemcpyDeviceToHost, s2));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s2, &outer));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&xo, outer, 0));
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(xo, s2));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 600, 2);
    CHECK_XFER(S.prefill, MEMOBS_DIR_D2H, 50, 1);
    CHECK_U64(650, (unsigned long)(cudadbl_graph_copy_bytes() - moved0));
    /* instantiated with the plain call: memobs does not know it */
    CHECK_ERR(cudaSuccess, cudaGraphInstantiate(&xu, g, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(xu, s));
    gs = gstats();
    CHECK_U64(1, gs.unknown_launches - g0.unknown_launches);
    CHECK_U64(2, gs.launches - g0.launches);
    snap();
    CHECK_U64(3, total_count());
    /* an invalidated capture: the user's own illegal call (a sync of the
       capturing stream) breaks it; memobs forgets its copies */
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 10, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, memobs_cudaStreamEndCapture(s, &bad));
    CHECK(bad == NULL);
    CHECK_U64(1, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    gs = gstats();
    CHECK_U64(0, gs.captures);
    CHECK_U64(2, gs.graphs);
    (void)cudaGetLastError();
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s2));
    CHECK_ERR(cudaSuccess, cudaGraphExecDestroy(xu));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(xo));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(outer));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s2));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* ======================================================================== */
/* A capture in each mode while another thread records, polls, summarizes   */
/* ======================================================================== */

typedef struct {
    cudaStream_t s;
    char *h, *d;
    int stop;          /* under mu */
    long rounds;       /* under mu */
    int bad;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} worker_t;

static void *worker(void *arg) {
    worker_t *w = (worker_t *)arg;
    memobs_summary_t *sum = (memobs_summary_t *)calloc(1, sizeof *sum);
    FILE *f = fopen("/dev/null", "w");
    for (;;) {
        pthread_mutex_lock(&w->mu);
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        pthread_mutex_unlock(&w->mu);
        memobs_set_phase(MEMOBS_PHASE_DECODE);
        w->bad |= memobs_cudaMemcpyAsync(w->d, w->h, 64, cudaMemcpyHostToDevice, w->s) != cudaSuccess;
        w->bad |= memobs_cudaMemcpyAsync(w->h, w->d, 32, cudaMemcpyDeviceToHost, w->s) != cudaSuccess;
        (void)cudadbl_complete_stream(w->s); /* the double's GPU gets there (not a CUDA call) */
        (void)memobs_cuda_poll();
        if (sum) memobs_get_summary(sum);
        if (f) (void)memobs_write_prometheus(f);
        pthread_mutex_lock(&w->mu);
        w->rounds++;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
    if (f) fclose(f);
    free(sum);
    return NULL;
}

static void capture_while_busy(enum cudaStreamCaptureMode mode) {
    worker_t w;
    pthread_t t;
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    char *h = NULL, *d = NULL;
    long r0, inval0 = cudadbl_captures_invalidated();
    int i;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&w.s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&w.h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&w.d, 4096));
    memobs_cuda_set_timing(1);
    if (pthread_create(&t, NULL, worker, &w) != 0) {
        CHECK(0);
        return;
    }
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, mode));
    pthread_mutex_lock(&w.mu);
    r0 = w.rounds;
    pthread_mutex_unlock(&w.mu);
    for (i = 0; i < 20; i++) {
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 128, cudaMemcpyHostToDevice, s));
        (void)memobs_cuda_poll(); /* the capturing thread polls too */
    }
    /* the worker makes three whole rounds while this capture is open */
    pthread_mutex_lock(&w.mu);
    while (w.rounds < r0 + 3) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(s, &g));
    pthread_mutex_lock(&w.mu);
    w.stop = 1;
    pthread_mutex_unlock(&w.mu);
    pthread_join(t, NULL);
    CHECK(!w.bad);
    CHECK_U64(0, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    memobs_reset();
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    snap();
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 20 * 128, 20);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(w.s));
    (void)memobs_cuda_poll();
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(w.s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(w.d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(w.h));
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
}

static void test_capture_global_busy(void) {
    fresh();
    capture_while_busy(cudaStreamCaptureModeGlobal);
}
static void test_capture_thread_local_busy(void) {
    fresh();
    capture_while_busy(cudaStreamCaptureModeThreadLocal);
}
static void test_capture_relaxed_busy(void) {
    fresh();
    capture_while_busy(cudaStreamCaptureModeRelaxed);
}

/* The control: the same poll made with the runtime (what memobs did
   before) breaks a global capture in the double. */
static void test_runtime_query_breaks_capture(void) {
    cudaStream_t s = NULL, s2 = NULL;
    cudaEvent_t e = NULL;
    cudaGraph_t g = NULL;
    long inval0;
    fresh();
    inval0 = cudadbl_captures_invalidated();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s2));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaEventQuery(e));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK_U64(1, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    (void)cudaGetLastError();
    CHECK_ERR(cudaSuccess, cudaEventDestroy(e));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s2));
}

/* ======================================================================== */
/* The runtime's last error                                                 */
/* ======================================================================== */

/* Every wrapper, with timing on, succeeding: returns what the runtime
   returned, and the last error is e before and after. */
static void every_wrapper(cudaError_t e, int drv_fails) {
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    char *h = NULL, *h2 = NULL, *d = NULL, *m = NULL, *a = NULL, reg[256];
    memobs_cuda_mem_t mi;
    FILE *f = fopen("/dev/null", "w");
#define LAST_IS(call)                                                  \
    do {                                                               \
        CHECK_ERR(cudaSuccess, call);                                  \
        CHECK_ERR(e, cudaPeekAtLastError());                           \
    } while (0)
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(e, cudaPeekAtLastError());
    LAST_IS(memobs_cudaMalloc((void **)&d, 8192));
    LAST_IS(memobs_cudaMallocHost((void **)&h, 8192));
    LAST_IS(memobs_cudaHostAlloc((void **)&h2, 8192, cudaHostAllocDefault));
    LAST_IS(memobs_cudaMallocManaged((void **)&m, 4096, cudaMemAttachGlobal));
    LAST_IS(memobs_cudaMallocAsync((void **)&a, 4096, s));
    LAST_IS(memobs_cudaHostRegister(reg, sizeof reg, cudaHostRegisterDefault));
    LAST_IS(memobs_cudaMemcpy(d, h, 100, cudaMemcpyHostToDevice));
    LAST_IS(memobs_cudaMemcpy(h2, d, 100, cudaMemcpyDefault));
    LAST_IS(memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    LAST_IS(memobs_cudaMemcpyAsync(h2, m, 100, cudaMemcpyDefault, s));
    LAST_IS(memobs_cudaMemcpyAsync(d, reg, 100, cudaMemcpyDefault, 0));
    LAST_IS(memobs_cudaMemcpy2D(d, 64, h, 64, 32, 8, cudaMemcpyHostToDevice));
    LAST_IS(memobs_cudaMemcpy2DAsync(h, 64, d, 64, 32, 8, cudaMemcpyDeviceToHost, s));
    LAST_IS(memobs_cudaMemcpyPeer(d + 4096, 0, d, 0, 100));
    LAST_IS(memobs_cudaMemcpyPeerAsync(d + 4096, 0, d, 0, 100, s));
    LAST_IS(memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    LAST_IS(memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    LAST_IS(memobs_cudaStreamEndCapture(s, &g));
    LAST_IS(memobs_cudaGraphInstantiate(&x, g, 0));
    LAST_IS(memobs_cudaGraphLaunch(x, s));
    (void)memobs_cuda_poll(); /* a poll with nothing complete */
    CHECK_ERR(e, cudaPeekAtLastError());
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s));
    CHECK(memobs_cuda_poll() >= 0);
    CHECK_ERR(e, cudaPeekAtLastError());
    if (f) {
        CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_print_mem(f));
        CHECK_U64(MEMOBS_OK, (unsigned)memobs_write_summary(f, MEMOBS_FORMAT_TEXT));
        fclose(f);
    }
    log_count = 0;
    memobs_set_log(capture_log, NULL); /* a failing driver is warned about */
    CHECK_U64((unsigned)(drv_fails ? MEMOBS_ERR_IO : MEMOBS_OK), (unsigned)memobs_cuda_get_mem_info(&mi, 0));
    memobs_set_log(NULL, NULL);
    CHECK_U64(drv_fails ? 1 : 0, (unsigned)log_count);
    CHECK_ERR(e, cudaPeekAtLastError());
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
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    (void)memobs_cuda_poll();
    CHECK_ERR(e, cudaPeekAtLastError());
}

static void test_last_error_untouched(void) {
    static const char *const drv[] = {"cuEventRecord",        "cuEventQuery",          "cuEventCreate",
                                      "cuEventElapsedTime",   "cuStreamGetCaptureInfo_v2", "cuPointerGetAttributes",
                                      "cuMemGetInfo_v2",      "cuCtxPushCurrent_v2",   "cuStreamGetCtx"};
    unsigned i;
    fresh();
    memobs_cuda_set_timing(1);
    /* nothing pending before: nothing after */
    every_wrapper(cudaSuccess, 0);
    /* an error of the program pending before: the same after */
    CHECK_ERR(cudaErrorInvalidDevice, cudaSetDevice(99));
    every_wrapper(cudaErrorInvalidDevice, 0);
    CHECK_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    /* memobs' own calls failing (its driver calls scripted to fail) leave
       nothing behind either */
    for (i = 0; i < sizeof drv / sizeof drv[0]; i++)
        CHECK_U64(0, (unsigned)cudadbl_fail(drv[i], 1, 1000, (cudaError_t)1 /* CUDA_ERROR_INVALID_VALUE */));
    every_wrapper(cudaSuccess, 1);
    CHECK(calls("cuEventRecord") > 1);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaErrorInvalidDevice, cudaSetDevice(99));
    every_wrapper(cudaErrorInvalidDevice, 1);
    CHECK_ERR(cudaErrorInvalidDevice, cudaGetLastError());
    cudadbl_reset_script();
    /* a failing wrapped call leaves exactly the runtime's error */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMemcpyAsync", 1, cudaErrorLaunchFailure));
    {
        char hb[16];
        void *dp = NULL;
        CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&dp, 16));
        CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaMemcpyAsync(dp, hb, 16, cudaMemcpyHostToDevice, 0));
        CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
        CHECK_ERR(cudaSuccess, cudaGetLastError());
        CHECK_ERR(cudaSuccess, memobs_cudaFree(dp));
    }
    memobs_cuda_set_timing(0);
}

/* A sticky error (a device fault): the wrappers return it as the runtime
   does; memobs neither clears nor adds. */
static void test_sticky_error(void) {
    char hb[64];
    void *dp = NULL;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&dp, 64));
    memobs_cuda_set_timing(1);
    cudadbl_set_sticky(cudaErrorIllegalAddress);
    CHECK_ERR(cudaErrorIllegalAddress, memobs_cudaMemcpyAsync(dp, hb, 64, cudaMemcpyHostToDevice, 0));
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError());
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError()); /* sticky */
    CHECK(memobs_cuda_poll() >= 0);
    snap();
    CHECK_U64(0, total_count()); /* a failed copy counts nothing */
    memobs_cuda_set_timing(0);
    /* the double's state is gone for good: start it over (memobs' pool of
       events is stale from here: its events fail and count untimed) */
    cudadbl_reset();
    memobs_reset();
}

/* ======================================================================== */
/* Default streams                                                          */
/* ======================================================================== */

/* Stream 0 means the per-thread default stream in a per-thread build and
   the legacy stream otherwise, for the copy and for memobs' events. */
static void test_default_streams(void) {
    char *h = NULL, *d = NULL;
    cudadbl_call_t c;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    fresh();
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 256, cudaMemcpyHostToDevice, 0));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpyAsync", &c));
    CHECK_U64(DEFAULT_KIND, (unsigned)c.stream_kind);
    CHECK_U64(0, (unsigned)cudadbl_last_call("cuEventRecord", &c));
    CHECK_U64(DEFAULT_KIND, (unsigned)c.stream_kind);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(h, d, 256, cudaMemcpyDeviceToHost));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy", &c));
    CHECK_U64(DEFAULT_KIND, (unsigned)c.stream_kind);
    /* the timed copy's end event completes with its own stream */
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(PTDS ? cudaStreamPerThread : cudaStreamLegacy));
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    memobs_cuda_set_timing(0);
    /* a capture of stream 0 works where stream 0 is the per-thread stream
       (the legacy stream cannot be captured: the wrapper fails as the
       runtime does) */
    if (PTDS) {
        CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
        CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, 0));
        CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(0, &g));
        CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
        memobs_reset();
        CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, 0));
        snap();
        CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 64, 1);
        CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
        CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    } else {
        CHECK_ERR(cudaErrorStreamCaptureUnsupported, memobs_cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
        CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaGetLastError());
    }
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* In a legacy build, an async copy on stream 0 while a blocking stream
   captures is illegal for the program itself; memobs records no event
   into the legacy stream before that copy and adds no failure of its own:
   the capture breaks exactly as it does without memobs. */
static void test_legacy_stream_during_capture(void) {
    cudaStream_t s = NULL, nb = NULL;
    cudaGraph_t g = NULL;
    char *h = NULL, *d = NULL;
    long rec0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    memobs_cuda_set_timing(1);
    /* a non-blocking stream's capture leaves the legacy stream usable */
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, cudaStreamLegacy));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(nb, &g));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    g = NULL;
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    rec0 = calls("cuEventRecord");
    CHECK_ERR(cudaErrorStreamCaptureImplicit,
              memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, cudaStreamLegacy));
    CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0));
    CHECK_ERR(cudaErrorStreamCaptureImplicit, cudaGetLastError());
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, memobs_cudaStreamEndCapture(s, &g));
    (void)cudaGetLastError();
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    (void)memobs_cuda_poll();
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(nb));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* Untimed, a copy into the legacy stream (never captured) is counted at
   issue without a capture-status query, also while a non-blocking stream
   captures in global mode (that capture unbroken); a copy into the
   capturing stream is still asked about and counted at each launch. */
static void test_legacy_stream_untimed(void) {
    cudaStream_t nb = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    char *h = NULL, *d = NULL;
    long q0, inval0;
    int i;
    fresh();
    inval0 = cudadbl_captures_invalidated();
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, cudaStreamLegacy));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(nb, cudaStreamCaptureModeGlobal));
    q0 = calls("cuStreamGetCaptureInfo_v2") + calls("cuStreamGetCaptureInfo");
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, cudaStreamLegacy));
    CHECK_U64(0, (unsigned)(calls("cuStreamGetCaptureInfo_v2") + calls("cuStreamGetCaptureInfo") - q0));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 32, cudaMemcpyHostToDevice, nb));
    CHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(nb, &g));
    CHECK_U64(0, (unsigned long)(cudadbl_captures_invalidated() - inval0));
    snap();
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 128, 2); /* the legacy stream's, at issue */
    CHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
    for (i = 0; i < 3; i++) CHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, nb));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(nb));
    snap();
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, 128 + 3 * 32, 2 + 3); /* the captured one, per launch */
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(nb));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* ======================================================================== */
/* Timing: synchronous on the host clock, async on events right around      */
/* ======================================================================== */

static void test_timing_sync_vs_async(void) {
    cudaStream_t s = NULL;
    char *h = NULL, *d = NULL;
    long rec0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 8192));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 8192));
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(2.0f, 0); /* 2 ms of device time per copy */
    /* earlier work on the stream: its time is not the copy's */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 0, 8192, s));
    cudadbl_advance_clock(5.0f);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyPeer(d + 4096, 0, d, 0, 1024));
    rec0 = calls("cuEventRecord");
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(h, d, 2048, cudaMemcpyDeviceToHost));
    CHECK_U64(0, (unsigned)(calls("cuEventRecord") - rec0)); /* the host clock times a synchronous copy */
    cudadbl_complete_all();
    (void)memobs_cuda_poll();
    snap();
    CHECK_U64(2000000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].ns); /* the copy alone */
    CHECK_U64(4096, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(2000000, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2D].ns);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].count);
    CHECK_U64(2048, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_D2H].bytes);
    CHECK_U64(0, S.timed_in_flight_copies);
    cudadbl_set_copy_time(0, 0);
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* A pair whose event record failed is destroyed, not pooled again (its
   events may be dead: a context destroyed under it); the next timed copy
   gets another pair and is timed. */
static void test_dead_pair_not_pooled(void) {
    cudaStream_t s = NULL;
    char *h = NULL, *d = NULL;
    uint64_t untimed0;
    long destroyed0;
    fresh();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s)); /* a pair in use */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    (void)memobs_cuda_poll(); /* back in the pool */
    untimed0 = memobs_cuda_get_untimed();
    destroyed0 = calls("cuEventDestroy_v2");
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cuEventRecord", 1, (cudaError_t)400 /* CUDA_ERROR_INVALID_HANDLE */));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 200, cudaMemcpyHostToDevice, s));
    CHECK_U64(1, memobs_cuda_get_untimed() - untimed0);
    CHECK_U64(2, (unsigned long)(calls("cuEventDestroy_v2") - destroyed0));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 300, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(1, (unsigned)memobs_cuda_poll());
    CHECK_U64(1, memobs_cuda_get_untimed() - untimed0);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
}

/* ======================================================================== */
/* cudaDeviceReset                                                          */
/* ======================================================================== */

static void test_device_reset(void) {
    cudaStream_t s = NULL, s1 = NULL;
    char *h = NULL, *d = NULL, *a = NULL, *d1 = NULL;
    uint64_t untimed0;
    long created;
    cudadbl_call_t c;
    fresh();
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d1, 1000));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync((void **)&a, 2048, s));
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 200, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s));
    snap();
    CHECK_U64(2, S.timed_in_flight_copies);
    untimed0 = memobs_cuda_get_untimed();
    CHECK_ERR(cudaSuccess, memobs_cudaDeviceReset());
    CHECK_U64(2, memobs_cuda_get_untimed() - untimed0);
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, S.timed_in_flight_bytes);
    CHECK_U64(0, memobs_get_device_bytes(0, NULL)); /* the device's blocks are gone */
    CHECK_U64(1000, memobs_get_device_bytes(1, NULL));
    /* pinned memory of the reset device's context went too (the double
       frees it); memobs keeps pinned blocks (device -1): taken out here by
       hand so the test leaves nothing */
    memobs_track_free(h);
    /* memobs' events of the old context are not touched again: a new
       timed copy makes new ones in the new context, and a poll queries
       only live events */
    created = calls("cuEventCreate");
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 300, cudaMemcpyHostToDevice, s));
    CHECK_U64(2, (unsigned)(calls("cuEventCreate") - created));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(1, (unsigned)memobs_cuda_poll());
    CHECK_U64(0, (unsigned)cudadbl_last_call("cuEventQuery", &c));
    CHECK_U64(0, (unsigned)c.result);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d1));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
}

/* ======================================================================== */
/* Frees hold no memobs lock across the runtime                             */
/* ======================================================================== */

/* Threads free and allocate same-size blocks with address reuse on: a
   block handed out again before its free's bookkeeping ends must stay
   tracked (the free marked it pending first; the new allocation retires
   that mark), and failed frees take their mark back. */
static void *reuse_worker(void *arg) {
    int i, *bad = (int *)arg;
    for (i = 0; i < 300; i++) {
        void *p = NULL;
        if (memobs_cudaMalloc(&p, 4096) != cudaSuccess) {
            *bad = 1;
            continue;
        }
        if (!memobs_get_allocations(NULL, 0)) *bad = 1;
        if (memobs_cudaFree(p) != cudaSuccess) *bad = 1;
    }
    return NULL;
}

static void test_free_reuse_threads(void) {
    pthread_t t[4];
    int bad[4] = {0, 0, 0, 0}, i;
    void *p = NULL;
    fresh();
    cudadbl_set_reuse(1);
    for (i = 0; i < 4; i++) CHECK_U64(0, (unsigned)pthread_create(&t[i], NULL, reuse_worker, &bad[i]));
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (i = 0; i < 4; i++) CHECK(!bad[i]);
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    /* a failed free keeps the block tracked, not pending */
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&p, 64));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFree", 1, cudaErrorLaunchFailure));
    CHECK_ERR(cudaErrorLaunchFailure, memobs_cudaFree(p));
    CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
    {
        memobs_alloc_info_t ai[2];
        CHECK_U64(1, memobs_get_allocations(ai, 2));
        CHECK(ai[0].ptr == p);
        CHECK_U64(0, (unsigned)ai[0].pending_free);
    }
    snap();
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(p));
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
    cudadbl_set_reuse(0);
}

/* A fresh process (mode exit_resolve): two timed copies still in flight
   when main returns. memobs' exit handler, registered at the first CUDA
   call it sees (after the runtime started), polls them, never waiting in
   the driver; the GPU (a thread here) completes them once it polls; it
   resolves them; the summary at exit (MEMOBS_SUMMARY, registered at
   start-up, so it runs last) shows them complete. A handler of the test
   registered after the runtime started and before memobs' first sighting
   runs after memobs' handler and before the runtime's teardown: from then
   on a summary, a poll, print_mem and a copy make no memobs driver call. */
#define DRV_CALLS()                                                                                       \
    (calls("cuEventQuery") + calls("cuEventRecord") + calls("cuStreamGetCaptureInfo_v2") +                \
     calls("cuMemGetInfo_v2") + calls("cuEventSynchronize") + calls("cuEventCreate") +                    \
     calls("cuDeviceGetCount") + calls("cuThreadExchangeStreamCaptureMode"))
static cudaStream_t exit_stream;
static char *exit_h, *exit_d;
static void exit_after_memobs(void) {
    long c0 = DRV_CALLS();
    memobs_summary_t *sum = (memobs_summary_t *)calloc(1, sizeof *sum);
    FILE *f = fopen("/dev/null", "w");
    if (sum) memobs_get_summary(sum);
    (void)memobs_cuda_poll();
    if (f) {
        (void)memobs_cuda_print_mem(f);
        fclose(f);
    }
    (void)memobs_cudaMemcpyAsync(exit_d, exit_h, 100, cudaMemcpyHostToDevice, exit_stream);
    fprintf(stderr, "driver calls after memobs' exit handler: %ld; in flight then: %llu\n", DRV_CALLS() - c0,
            sum ? (unsigned long long)sum->timed_in_flight_copies : 99);
    free(sum);
}

static long exit_queries; /* cuEventQuery calls when main returned */
static void *exit_gpu(void *arg) {
    (void)arg;
    while (calls("cuEventQuery") <= __atomic_load_n(&exit_queries, __ATOMIC_ACQUIRE)) (void)poll(NULL, 0, 1);
    (void)cudadbl_complete_stream(exit_stream);
    return NULL;
}

static int mode_exit_resolve(void) {
    pthread_t gpu;
    cudadbl_reset();
    if (cudaStreamCreate(&exit_stream) != cudaSuccess) return 1; /* the runtime starts */
    atexit(exit_after_memobs); /* before memobs registers its own: runs after it */
    if (memobs_cudaMallocHost((void **)&exit_h, 8192) != cudaSuccess ||
        memobs_cudaMalloc((void **)&exit_d, 8192) != cudaSuccess)
        return 1;
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(1.0f, 0);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    if (memobs_cudaMemcpyAsync(exit_d, exit_h, 1000, cudaMemcpyHostToDevice, exit_stream) != cudaSuccess ||
        memobs_cudaMemcpyAsync(exit_h, exit_d, 3000, cudaMemcpyDeviceToHost, exit_stream) != cudaSuccess)
        return 1;
    printf("in flight at exit: %ld\n", cudadbl_pending(exit_stream));
    __atomic_store_n(&exit_queries, calls("cuEventQuery"), __ATOMIC_RELEASE);
    if (pthread_create(&gpu, NULL, exit_gpu, NULL) != 0 || pthread_detach(gpu) != 0) return 1;
    return 0; /* the blocks, the stream and the events are left to the exit */
}

/* A fresh process with no driver library (CUDADBL_NO_DRIVER=1, and
   MEMOBS_CUDA_DRIVER names a library that does not exist): one warning,
   the wrappers still count copies and track blocks, timing says untimed,
   a stream-ordered free settles at once, mem_info says why it cannot. */
static void mode_no_driver(void) {
    cudaStream_t s = NULL;
    char *h = NULL, *d = NULL;
    memobs_cuda_mem_t m;
    uint64_t untimed0;
    cudadbl_reset();
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    memobs_cuda_set_timing(1);
    untimed0 = memobs_cuda_get_untimed();
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 1000, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h, d, 500, cudaMemcpyDefault, s)); /* not asked: host to host */
    CHECK_U64(1, memobs_cuda_get_untimed() - untimed0);
    CHECK_U64((unsigned)MEMOBS_ERR_IO, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_U64(0, memobs_get_device_bytes(0, NULL));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 1000, 1);
    CHECK_U64(0, S.unphased.d2h.count);
    CHECK_U64(2, (unsigned)log_count);
    CHECK_HAS(log_count > 0 ? log_msgs[0] : "", "the CUDA driver (libmemobs_no_such_driver.so.1) was not found or "
                                                  "lacks a function memobs needs");
    CHECK_HAS(log_count > 1 ? log_msgs[1] : "", "memobs_cuda_get_mem_info(device 0): the CUDA driver was not found");
    memobs_cuda_set_timing(0);
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 1 && !strcmp(argv[1], "exit_resolve")) return mode_exit_resolve();
    if (argc > 1 && !strcmp(argv[1], "no_driver")) {
        RUN(mode_no_driver);
        return CHECK_DONE();
    }
    cudadbl_reset();
    RUN(test_no_context_created); /* first: contexts fresh */
    RUN(test_oom_stream_device);
    RUN(test_graph_decode_step);
    RUN(test_graph_nested_and_unknown);
    RUN(test_graph_3d_symbol_batch);
    RUN(test_capture_global_busy);
    RUN(test_capture_thread_local_busy);
    RUN(test_capture_relaxed_busy);
    RUN(test_runtime_query_breaks_capture);
    RUN(test_last_error_untouched);
    RUN(test_default_streams);
    if (!PTDS) RUN(test_legacy_stream_during_capture);
    RUN(test_legacy_stream_untimed);
    RUN(test_timing_sync_vs_async);
    RUN(test_free_reuse_threads);
    RUN(test_dead_pair_not_pooled);
    RUN(test_device_reset);
    RUN(test_sticky_error); /* last but one: it resets the double */
    cudadbl_reset();
    return CHECK_DONE();
}
