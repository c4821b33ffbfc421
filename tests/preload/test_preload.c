/* tests/preload/test_preload.c - a CUDA program that knows nothing of memobs, for
   tests/preload/test_preload.sh: linked with -lcudart (the runtime double built as
   a shared libcudart.so.13, or the toolkit's), run with and without
   LD_PRELOAD=build/libmemobs_preload.so. It checks each return code
   against the double's documented one, prints them ("rcs: ...") so the
   script can compare runs, and prints what memobs should have recorded
   ("expect: {json}"). It finds memobs_set_phase with
   dlsym(RTLD_DEFAULT, ...): present only under the preload.

   test_preload MODE
     main     copies of every kind and direction, allocations of every
              kind, injected errors (an invalid kind, a too-large
              cudaMalloc, a free of memory the runtime never gave)
     threads  4 threads, each 50 H2D copies of 1000 bytes in decode
     fork     parent: 100 bytes H2D, fork, 200 bytes D2H; the child makes
              no CUDA call (undefined after fork: the double fails and
              reports any) and exits
     reentry  cudaMallocHost + cudaFreeHost of 4096 bytes (under
              tests/preload/reenter.c, whose cudaMallocHost calls
              cudaHostAlloc)
     edges    a cudaMalloc and a 10-byte H2D copy in a constructor (before
              main), 20 bytes in main, a 5-byte D2H copy and the free in a
              destructor (after the exit handlers, so after the runtime's
              teardown: both fail with cudaErrorCudartUnloading)
     copies   3D, 3D peer, symbol, batch and 3D batch copies,
              cudaHostRegister/Unregister, and errors of each (an invalid
              kind, a zero extent, an array, an unknown device, an unknown
              symbol, a batch on the legacy stream...: 15 failures); the
              symbol is declared to the double (cudadbl_register_symbol,
              found with dlsym)
     graphs   a capture of 3 copies (H2D, a 3D D2D, a batch D2H)
              instantiated twice and launched 5 + 2 times, a capture
              invalidated by a cudaMalloc in it, a launch of a destroyed
              executable graph
     real     against the toolkit's runtime without a GPU: every call
              fails; prints the return codes only
   Built twice by the script: plainly, and with
   CUDA_API_PER_THREAD_DEFAULT_STREAM (the runtime header then calls the
   _ptds/_ptsz entry points). */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_check.h"


static int mode_main(void) {
    char *d1, *d2, *d3, *h, *h2, *m, *a, host[4096], bogus[64];
    cudaStream_t s;
    unsigned long long h2d = 0, d2h = 0, d2d = 0, nh2d = 0, nd2h = 0, nd2d = 0, ph2d = 0, dd2h = 0, dd2d = 0;
    char e[2048];
    memset(host, 1, sizeof host);
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    check("cudaMalloc d1", cudaMalloc((void **)&d1, 1 << 20), 0);
    check("cudaMalloc d2", cudaMalloc((void **)&d2, 1 << 20), 0);
    check("cudaSetDevice 1", cudaSetDevice(1), 0);
    check("cudaMalloc d3 (device 1)", cudaMalloc((void **)&d3, 65536), 0);
    check("cudaSetDevice 0", cudaSetDevice(0), 0);
    check("cudaMallocHost", cudaMallocHost((void **)&h, 1 << 20), 0);
    check("cudaHostAlloc", cudaHostAlloc((void **)&h2, 4096, cudaHostAllocDefault), 0);
    check("cudaMallocManaged", cudaMallocManaged((void **)&m, 8192, cudaMemAttachGlobal), 0);
    check("cudaMallocAsync", cudaMallocAsync((void **)&a, 4096, s), 0);

    phase(PREFILL);
    check("cudaMemcpy H2D", cudaMemcpy(d1, host, 1000, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpyAsync H2D", cudaMemcpyAsync(d1, h, 2000, cudaMemcpyHostToDevice, s), 0);
    check("cudaMemcpy2D H2D", cudaMemcpy2D(d1, 128, host, 64, 64, 10, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpy H2H (not a transfer)", cudaMemcpy(h2, host, 100, cudaMemcpyHostToHost), 0);
    h2d += 1000 + 2000 + 640, nh2d += 3, ph2d = h2d;

    phase(DECODE);
    check("cudaMemcpy D2H", cudaMemcpy(host, d1, 300, cudaMemcpyDeviceToHost), 0);
    check("cudaMemcpyAsync D2D", cudaMemcpyAsync(d2, d1, 400, cudaMemcpyDeviceToDevice, s), 0);
    check("cudaMemcpyPeer", cudaMemcpyPeer(d3, 1, d1, 0, 500), 0);
    check("cudaMemcpyPeerAsync", cudaMemcpyPeerAsync(d3, 1, d1, 0, 256, s), 0);
    check("cudaMemcpy2DAsync D2H", cudaMemcpy2DAsync(h, 32, d1, 64, 32, 4, cudaMemcpyDeviceToHost, s), 0);
    check("cudaMemcpy Default (H2D)", cudaMemcpy(d1, host, 128, cudaMemcpyDefault), 0);
    check("cudaMemcpyAsync Default (managed to pinned: D2H)", cudaMemcpyAsync(h, m, 64, cudaMemcpyDefault, s), 0);
    d2h += 300 + 128 + 64, nd2h += 3, dd2h = d2h;
    d2d += 400 + 500 + 256, nd2d += 3, dd2d = d2d;
    h2d += 128, nh2d += 1;

    /* errors: passed through, counted, not recorded */
    check("cudaMemcpy kind 7", cudaMemcpy(d1, host, 999, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
    check("cudaMalloc 1 TiB", cudaMalloc((void **)&d2, (size_t)1 << 40), cudaErrorMemoryAllocation);
    check("cudaFree of host memory", cudaFree(bogus), cudaErrorInvalidValue);

    check("cudaFreeAsync", cudaFreeAsync(a, s), 0);
    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
    check("cudaFree d2", cudaFree(d2), 0);
    check("cudaFreeHost h2", cudaFreeHost(h2), 0);
    /* pools: a device-1 pool's block is device memory, a host pool's pinned
       (as the pointer's attributes say, whatever the stream's device) */
    {
        struct cudaMemPoolProps pp;
        cudaMemPool_t hpool, dpool;
        char *hq, *dq;
        memset(&pp, 0, sizeof pp);
        pp.allocType = cudaMemAllocationTypePinned;
        pp.location.type = cudaMemLocationTypeHost;
        check("cudaMemPoolCreate (host)", cudaMemPoolCreate(&hpool, &pp), 0);
        pp.location.type = cudaMemLocationTypeDevice;
        pp.location.id = 1;
        check("cudaMemPoolCreate (device 1)", cudaMemPoolCreate(&dpool, &pp), 0);
        check("cudaMallocFromPoolAsync (host pool)", cudaMallocFromPoolAsync((void **)&hq, 4096, hpool, s), 0);
        check("cudaMallocFromPoolAsync (device 1 pool)", cudaMallocFromPoolAsync((void **)&dq, 8192, dpool, s), 0);
        check("cudaFreeAsync (host pool)", cudaFreeAsync(hq, s), 0);
        check("cudaFreeAsync (device 1 pool)", cudaFreeAsync(dq, s), 0);
        check("cudaStreamSynchronize (pools)", cudaStreamSynchronize(s), 0);
        check("cudaMemPoolDestroy (host)", cudaMemPoolDestroy(hpool), 0);
        check("cudaMemPoolDestroy (device 1)", cudaMemPoolDestroy(dpool), 0);
    }
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %llu, \"h2d_count\": %llu, \"d2h_bytes\": %llu, \"d2h_count\": %llu, "
             "\"d2d_bytes\": %llu, \"d2d_count\": %llu}, "
             "\"prefill\": {\"h2d_bytes\": %llu, \"h2d_count\": 3, \"d2h_bytes\": 0, \"d2d_bytes\": 0}, "
             "\"decode\": {\"h2d_bytes\": 128, \"h2d_count\": 1, \"d2h_bytes\": %llu, \"d2h_count\": 3, "
             "\"d2d_bytes\": %llu, \"d2d_count\": 3}, "
             "\"unphased\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}, "
             "\"memory\": {\"device\": {\"current_bytes\": %llu, \"peak_bytes\": %llu, \"live\": 2, "
             "\"allocs\": 5, \"frees\": 3, \"pending_frees\": 0}, "
             "\"pinned\": {\"current_bytes\": %llu, \"peak_bytes\": %llu, \"live\": 1, \"allocs\": 3, \"frees\": 2}, "
             "\"managed\": {\"current_bytes\": 8192, \"peak_bytes\": 8192, \"live\": 1, \"allocs\": 1, \"frees\": 0}}, "
             "\"pinned\": {\"blocks\": 1, \"held_bytes\": 1048576, \"asked_bytes\": 1048576, \"registered_bytes\": 0, "
             "\"peak_held_bytes\": 1052672, \"allocs\": 2, \"frees\": 1}, "
             "\"counters\": {\"preload_failed_calls\": 3}}",
             h2d, nh2d, d2h, nd2h, d2d, nd2d, ph2d, dd2h, dd2d, (1ull << 20) + 65536, (2ull << 20) + 65536 + 4096,
             1ull << 20, (1ull << 20) + 4096);
    return done(e);
}

static void *copier(void *arg) {
    char *d = (char *)arg, host[1000];
    int i;
    memset(host, 2, sizeof host);
    phase(DECODE);
    for (i = 0; i < 50; i++)
        if (cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice) != cudaSuccess) __atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int mode_threads(void) {
    pthread_t t[4];
    char *d[4];
    int i;
    for (i = 0; i < 4; i++) check("cudaMalloc", cudaMalloc((void **)&d[i], 1000), 0);
    for (i = 0; i < 4; i++) pthread_create(&t[i], NULL, copier, d[i]);
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return done("{\"total\": {\"h2d_bytes\": 200000, \"h2d_count\": 200}, \"decode\": {\"h2d_bytes\": 200000, "
                "\"h2d_count\": 200}, \"memory\": {\"device\": {\"current_bytes\": 4000, \"allocs\": 4, \"live\": 4}}}");
}

static int mode_fork(void) {
    char *d, host[256];
    pid_t pid;
    int st = 0;
    memset(host, 3, sizeof host);
    check("cudaMalloc", cudaMalloc((void **)&d, 256), 0);
    check("cudaMemcpy H2D (parent)", cudaMemcpy(d, host, 100, cudaMemcpyHostToDevice), 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0) { /* no CUDA call: NVIDIA calls any use of CUDA between fork and exec undefined */
        printf("child: %d\n", (int)getpid());
        exit(fails ? 1 : 0); /* exit handlers run: the child's summary */
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) fails++;
    check("cudaMemcpy D2H (parent, after the fork)", cudaMemcpy(host, d, 200, cudaMemcpyDeviceToHost), 0);
    printf("parent: %d\n", (int)getpid());
    return done(NULL);
}

static int mode_reentry(void) {
    void *h = NULL;
    check("cudaMallocHost", cudaMallocHost(&h, 4096), 0);
    check("cudaFreeHost", cudaFreeHost(h), 0);
    return done("{\"memory\": {\"pinned\": {\"allocs\": 1, \"frees\": 1, \"current_bytes\": 0, \"peak_bytes\": 4096}}, "
                "\"pinned\": {\"blocks\": 0, \"held_bytes\": 0, \"peak_held_bytes\": 4096, \"allocs\": 1, \"frees\": 1}, "
                "\"problems\": {\"bad_records\": 0}}");
}

static int edges;
static char *edge_dev;
__attribute__((constructor)) static void before_main(void) {
    char host[16] = {0};
    const char *m = getenv("TEST_PRELOAD_EDGES");
    if (!m || !*m) return;
    edges = 1;
    if (cudaMalloc((void **)&edge_dev, 64) != cudaSuccess ||
        cudaMemcpy(edge_dev, host, 10, cudaMemcpyHostToDevice) != cudaSuccess)
        edges = 2;
}
/* After the exit handlers, so after the runtime's teardown: its calls fail
   (cudaErrorCudartUnloading, "driver shutting down", as with the real
   runtime), and the preload counts them as failed calls. */
__attribute__((destructor)) static void after_exit(void) {
    char host[16];
    if (edges != 1) return;
    if (cudaMemcpy(host, edge_dev, 5, cudaMemcpyDeviceToHost) != cudaErrorCudartUnloading ||
        cudaFree(edge_dev) != cudaErrorCudartUnloading)
        _exit(5);
}

static int mode_edges(void) {
    char host[32] = {0};
    check("constructor's calls", edges == 1 ? cudaSuccess : cudaErrorUnknown, 0);
    check("cudaMemcpy H2D", cudaMemcpy(edge_dev, host, 20, cudaMemcpyHostToDevice), 0);
    /* The preload's exit handlers were registered before main (by its
       constructor), so its summary comes after this program's destructor:
       it counts the destructor's two failed calls. */
    return done("{\"total\": {\"h2d_bytes\": 30, \"h2d_count\": 2, \"d2h_bytes\": 0, \"d2h_count\": 0}, "
                "\"memory\": {\"device\": {\"allocs\": 1, \"frees\": 0, \"live\": 1, \"current_bytes\": 64}}, "
                "\"counters\": {\"preload_failed_calls\": 2}}");
}

/* A pitched pointer (make_cudaPitchedPtr without the inline header). */
static struct cudaPitchedPtr pp(void *p, size_t pitch, size_t ysize) {
    struct cudaPitchedPtr r;
    r.ptr = p;
    r.pitch = pitch;
    r.xsize = pitch;
    r.ysize = ysize;
    return r;
}
static struct cudaExtent ext(size_t w, size_t h, size_t d) {
    struct cudaExtent e;
    e.width = w;
    e.height = h;
    e.depth = d;
    return e;
}
static struct cudaMemcpyAttributes order_attr(enum cudaMemcpySrcAccessOrder o) {
    struct cudaMemcpyAttributes a;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = o;
    return a;
}

static char symbol_var[256];

static int mode_copies(void) {
    int (*reg)(const void *, size_t) = (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "cudadbl_register_symbol");
    static char host[8192], pinned[4096] __attribute__((aligned(4096)));
    char *d1, *d2, *d3, bogus[64];
    cudaStream_t s;
    struct cudaMemcpy3DParms p3;
    struct cudaMemcpy3DPeerParms pp3;
    struct cudaMemcpyAttributes attr = order_attr(cudaMemcpySrcAccessOrderStream), bad = order_attr((enum cudaMemcpySrcAccessOrder)9);
    size_t idx0 = 0;
    struct cudaMemcpy3DBatchOp op;
    memset(host, 4, sizeof host);
    if (!reg || reg(symbol_var, sizeof symbol_var) != 0) {
        fprintf(stderr, "cudadbl_register_symbol: not found or failed (not the runtime double?)\n");
        fails++;
    }
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    check("cudaMalloc d1", cudaMalloc((void **)&d1, 1 << 20), 0);
    check("cudaMalloc d2", cudaMalloc((void **)&d2, 1 << 20), 0);
    check("cudaSetDevice 1", cudaSetDevice(1), 0);
    check("cudaMalloc d3 (device 1)", cudaMalloc((void **)&d3, 65536), 0);
    check("cudaSetDevice 0", cudaSetDevice(0), 0);
    check("cudaHostRegister", cudaHostRegister(pinned, sizeof pinned, cudaHostRegisterDefault), 0);

    phase(PREFILL);
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = pp(host, 64, 4);
    p3.dstPtr = pp(d1, 128, 4);
    p3.extent = ext(32, 4, 2);
    p3.kind = cudaMemcpyHostToDevice;
    check("cudaMemcpy3D H2D 32x4x2", cudaMemcpy3D(&p3), 0);
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = pp(d1, 64, 2);
    p3.dstPtr = pp(pinned, 16, 2);
    p3.extent = ext(16, 2, 3);
    p3.kind = cudaMemcpyDefault;
    check("cudaMemcpy3DAsync Default (device to registered: D2H) 16x2x3", cudaMemcpy3DAsync(&p3, s), 0);

    phase(DECODE);
    memset(&pp3, 0, sizeof pp3);
    pp3.srcPtr = pp(d1, 100, 1);
    pp3.srcDevice = 0;
    pp3.dstPtr = pp(d3, 100, 1);
    pp3.dstDevice = 1;
    pp3.extent = ext(100, 1, 1);
    check("cudaMemcpy3DPeer 100", cudaMemcpy3DPeer(&pp3), 0);
    pp3.extent = ext(50, 1, 1);
    check("cudaMemcpy3DPeerAsync 50", cudaMemcpy3DPeerAsync(&pp3, s), 0);
    check("cudaMemcpyToSymbol H2D 64", cudaMemcpyToSymbol(symbol_var, host, 64, 8, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpyToSymbolAsync D2D 32", cudaMemcpyToSymbolAsync(symbol_var, d1, 32, 0, cudaMemcpyDeviceToDevice, s), 0);
    check("cudaMemcpyFromSymbol D2H 16", cudaMemcpyFromSymbol(host, symbol_var, 16, 0, cudaMemcpyDeviceToHost), 0);
    check("cudaMemcpyFromSymbolAsync Default (to registered: D2H) 8",
          cudaMemcpyFromSymbolAsync(pinned, symbol_var, 8, 0, cudaMemcpyDefault, s), 0);
    {
        void *dsts[3] = {d2, host, d2 + 4096};
        const void *srcs[3] = {host, d1, d1};
        size_t sizes[3] = {1000, 200, 300};
        void *dsts2[2] = {d2, d2 + 2000};
        const void *srcs2[2] = {host, host};
        size_t sizes2[2] = {10, 20};
        check("cudaMemcpyBatchAsync H2D 1000, D2H 200, D2D 300",
              cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx0, 1, s), 0);
        check("cudaMemcpyBatchAsync H2D 10 + 20", cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &attr, &idx0, 1, s), 0);
        check("cudaMemcpyBatchAsync on the legacy stream",
              cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx0, 1, cudaStreamLegacy), cudaErrorInvalidValue);
        check("cudaMemcpyBatchAsync, source access order 9",
              cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &bad, &idx0, 1, s), cudaErrorInvalidValue);
    }
    memset(&op, 0, sizeof op);
    op.src.type = cudaMemcpyOperandTypePointer;
    op.src.op.ptr.ptr = host;
    op.dst.type = cudaMemcpyOperandTypePointer;
    op.dst.op.ptr.ptr = d2;
    op.extent = ext(8, 2, 2);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    check("cudaMemcpy3DBatchAsync H2D 8x2x2", cudaMemcpy3DBatchAsync(1, &op, 0, s), 0);
    check("cudaMemcpy3DBatchAsync flags 1", cudaMemcpy3DBatchAsync(1, &op, 1, s), cudaErrorInvalidValue);

    /* errors: passed through, counted, not recorded */
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = pp(host, 64, 4);
    p3.dstPtr = pp(d1, 128, 4);
    p3.extent = ext(32, 0, 2);
    p3.kind = cudaMemcpyHostToDevice;
    check("cudaMemcpy3D zero height", cudaMemcpy3D(&p3), cudaErrorInvalidValue);
    p3.extent = ext(32, 4, 2);
    p3.kind = (enum cudaMemcpyKind)7;
    check("cudaMemcpy3D kind 7", cudaMemcpy3D(&p3), cudaErrorInvalidMemcpyDirection);
    p3.kind = cudaMemcpyHostToDevice;
    p3.srcArray = (cudaArray_t)(void *)bogus;
    p3.srcPtr = pp(NULL, 0, 0);
    check("cudaMemcpy3D from an array the double never made", cudaMemcpy3D(&p3), cudaErrorInvalidValue);
    pp3.dstDevice = 5;
    check("cudaMemcpy3DPeer to device 5", cudaMemcpy3DPeer(&pp3), cudaErrorInvalidDevice);
    check("cudaMemcpyToSymbol unknown symbol", cudaMemcpyToSymbol(bogus, host, 8, 0, cudaMemcpyHostToDevice),
          cudaErrorInvalidSymbol);
    check("cudaMemcpyToSymbol kind D2H", cudaMemcpyToSymbol(symbol_var, host, 8, 0, cudaMemcpyDeviceToHost),
          cudaErrorInvalidMemcpyDirection);
    check("cudaMemcpyFromSymbol beyond the variable", cudaMemcpyFromSymbol(host, symbol_var, 16, 250, cudaMemcpyDeviceToHost),
          cudaErrorInvalidValue);
    check("cudaMemcpy2DToArray", cudaMemcpy2DToArray((cudaArray_t)(void *)bogus, 0, 0, host, 64, 64, 2,
                                                      cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    check("cudaMemcpy2DFromArrayAsync", cudaMemcpy2DFromArrayAsync(host, 64, (cudaArray_const_t)(void *)bogus, 0, 0, 64,
                                                                    2, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
    check("cudaMemcpy2DArrayToArray kind 9",
          cudaMemcpy2DArrayToArray((cudaArray_t)(void *)bogus, 0, 0, (cudaArray_const_t)(void *)bogus, 0, 0, 8, 1,
                                   (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    check("cudaHostRegister again", cudaHostRegister(pinned, sizeof pinned, cudaHostRegisterDefault),
          cudaErrorHostMemoryAlreadyRegistered);
    check("cudaHostUnregister of memory never registered", cudaHostUnregister(bogus), cudaErrorHostMemoryNotRegistered);

    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
    check("cudaHostUnregister", cudaHostUnregister(pinned), 0);
    check("cudaFree d1", cudaFree(d1), 0);
    check("cudaFree d2", cudaFree(d2), 0);
    check("cudaFree d3", cudaFree(d3), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    return done("{\"total\": {\"h2d_bytes\": 1382, \"h2d_count\": 6, \"d2h_bytes\": 320, \"d2h_count\": 4, "
                "\"d2d_bytes\": 482, \"d2d_count\": 4}, "
                "\"prefill\": {\"h2d_bytes\": 256, \"h2d_count\": 1, \"d2h_bytes\": 96, \"d2h_count\": 1, "
                "\"d2d_count\": 0}, "
                "\"decode\": {\"h2d_bytes\": 1126, \"h2d_count\": 5, \"d2h_bytes\": 224, \"d2h_count\": 3, "
                "\"d2d_bytes\": 482, \"d2d_count\": 4}, "
                "\"unphased\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}, "
                "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": 2162688, \"allocs\": 3, \"frees\": 3}, "
                "\"pinned\": {\"current_bytes\": 0, \"peak_bytes\": 4096, \"allocs\": 1, \"frees\": 1}}, "
                "\"pinned\": {\"blocks\": 0, \"held_bytes\": 0, \"peak_held_bytes\": 4096, \"allocs\": 1, "
                "\"frees\": 1}, "
                "\"counters\": {\"preload_failed_calls\": 15}}");
}

static int mode_graphs(void) {
    static char host[4096];
    char *d1, *d2, *p = NULL;
    cudaStream_t s;
    cudaGraph_t g = NULL, g2 = NULL;
    cudaGraphExec_t x = NULL, x2 = NULL;
    cudaGraphInstantiateParams ip;
    struct cudaMemcpy3DParms p3;
    struct cudaMemcpyAttributes attr = order_attr(cudaMemcpySrcAccessOrderStream);
    size_t idx0 = 0, size40 = 40;
    void *dst = host;
    const void *src;
    int i;
    memset(host, 5, sizeof host);
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    check("cudaMalloc d1", cudaMalloc((void **)&d1, 4096), 0);
    check("cudaMalloc d2", cudaMalloc((void **)&d2, 4096), 0);
    src = d1;
    phase(DECODE);
    check("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), 0);
    check("cudaMemcpyAsync H2D 100 (captured)", cudaMemcpyAsync(d1, host, 100, cudaMemcpyHostToDevice, s), 0);
    memset(&p3, 0, sizeof p3);
    p3.srcPtr = pp(d1, 2, 2);
    p3.dstPtr = pp(d2, 2, 2);
    p3.extent = ext(2, 2, 2);
    p3.kind = cudaMemcpyDeviceToDevice;
    check("cudaMemcpy3DAsync D2D 2x2x2 (captured)", cudaMemcpy3DAsync(&p3, s), 0);
    check("cudaMemcpyBatchAsync D2H 40 (captured)", cudaMemcpyBatchAsync(&dst, &src, &size40, 1, &attr, &idx0, 1, s), 0);
    check("cudaStreamEndCapture", cudaStreamEndCapture(s, &g), 0);
    check("cudaGraphInstantiate", cudaGraphInstantiate(&x, g, 0), 0);
    for (i = 0; i < 5; i++) check("cudaGraphLaunch", cudaGraphLaunch(x, s), 0);
    memset(&ip, 0, sizeof ip);
    check("cudaGraphInstantiateWithParams", cudaGraphInstantiateWithParams(&x2, g, &ip), 0);
    for (i = 0; i < 2; i++) check("cudaGraphLaunch (second executable)", cudaGraphLaunch(x2, s), 0);
    check("cudaMemcpyAsync H2D 10 (not captured)", cudaMemcpyAsync(d2, host, 10, cudaMemcpyHostToDevice, s), 0);
    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);

    /* a capture invalidated by a potentially unsafe call: nothing counted */
    check("cudaStreamBeginCapture (2)", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), 0);
    check("cudaMemcpyAsync H2D 999 (captured, then invalidated)",
          cudaMemcpyAsync(d1, host, 999, cudaMemcpyHostToDevice, s), 0);
    check("cudaMalloc during a global capture", cudaMalloc((void **)&p, 16), cudaErrorStreamCaptureUnsupported);
    check("cudaStreamEndCapture of the invalidated capture", cudaStreamEndCapture(s, &g2),
          cudaErrorStreamCaptureInvalidated);
    check("cudaGraphExecDestroy", cudaGraphExecDestroy(x), 0);
    check("cudaGraphLaunch of the destroyed executable", cudaGraphLaunch(x, s), cudaErrorInvalidResourceHandle);
    check("cudaGraphExecDestroy (second)", cudaGraphExecDestroy(x2), 0);
    check("cudaGraphDestroy", cudaGraphDestroy(g), 0);
    check("cudaFree d1", cudaFree(d1), 0);
    check("cudaFree d2", cudaFree(d2), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    return done("{\"total\": {\"h2d_bytes\": 710, \"h2d_count\": 8, \"d2h_bytes\": 280, \"d2h_count\": 7, "
                "\"d2d_bytes\": 56, \"d2d_count\": 7}, "
                "\"decode\": {\"h2d_bytes\": 710, \"h2d_count\": 8, \"d2h_bytes\": 280, \"d2h_count\": 7, "
                "\"d2d_bytes\": 56, \"d2d_count\": 7}, "
                "\"counters\": {\"preload_failed_calls\": 3}}");
}

static int mode_real(void) {
    void *d = NULL, *h = NULL;
    char host[64];
    check("cudaMalloc", cudaMalloc(&d, 4096), -1);
    check("cudaMallocHost", cudaMallocHost(&h, 4096), -1);
    check("cudaMemcpy H2D", cudaMemcpy(d, host, 64, cudaMemcpyHostToDevice), -1);
    check("cudaMemcpyAsync D2H", cudaMemcpyAsync(host, d, 64, cudaMemcpyDeviceToHost, 0), -1);
    check("cudaFree", cudaFree(d), -1);
    {
        struct cudaMemcpy3DParms p3;
        struct cudaMemcpyAttributes attr = order_attr(cudaMemcpySrcAccessOrderStream);
        void *dst = host;
        const void *src = host + 8;
        size_t size = 8, idx0 = 0;
        cudaGraphExec_t x = NULL;
        memset(&p3, 0, sizeof p3);
        p3.srcPtr = pp(host, 64, 1);
        p3.dstPtr = pp(host, 64, 1);
        p3.extent = ext(8, 1, 1);
        p3.kind = cudaMemcpyHostToDevice;
        check("cudaHostRegister", cudaHostRegister(host, sizeof host, cudaHostRegisterDefault), -1);
        check("cudaMemcpy3D", cudaMemcpy3D(&p3), -1);
        check("cudaMemcpyToSymbol", cudaMemcpyToSymbol(symbol_var, host, 8, 0, cudaMemcpyHostToDevice), -1);
        check("cudaMemcpyBatchAsync", cudaMemcpyBatchAsync(&dst, &src, &size, 1, &attr, &idx0, 1, 0), -1);
        check("cudaStreamBeginCapture", cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal), -1);
        check("cudaGraphLaunch", cudaGraphLaunch(x, 0), -1);
    }
    return done(NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "main")) return mode_main();
    if (!strcmp(mode, "threads")) return mode_threads();
    if (!strcmp(mode, "fork")) return mode_fork();
    if (!strcmp(mode, "reentry")) return mode_reentry();
    if (!strcmp(mode, "edges")) return mode_edges();
    if (!strcmp(mode, "copies")) return mode_copies();
    if (!strcmp(mode, "graphs")) return mode_graphs();
    if (!strcmp(mode, "real")) return mode_real();
    fprintf(stderr, "usage: test_preload main|threads|fork|reentry|edges|copies|graphs|real\n");
    return 2;
}
