/* tests/preload/majors/prog.c - a CUDA program of one runtime major
   (-DMAJOR=11, 12 or 13; majors.h), linked against the runtime double
   built as that major (libcudart.so.11.0, .12 or .13), for
   tests/preload/test_preload_majors.sh: run with and without the preload, it
   checks each return code against the double's documented one and prints
   them ("rcs: ...") and what memobs should have recorded ("expect: {json}").

   prog MODE
     main   copies of each direction, device and pinned allocations
            (cudaMallocAsync too), a capture of one copy instantiated with
            the major's cudaGraphInstantiate and launched 3 times, in 12 and
            13 a batch of two directions and a 3D batch (12: 12.8's
            signatures, failIdx before the stream), and errors: an invalid
            kind, an instantiation of no graph, a batch on the legacy
            stream (failIdx SIZE_MAX), in 12 a batch without failIdx
     dlsym  (12) the functions looked up as a program that does not link
            them does: cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync by
            dlsym(RTLD_DEFAULT, ...) and called with 12.8's arguments (the
            runtime's own: no interposer has an unversioned batch), by
            dlvsym(..., "libcudart.so.12") (the preload's 12 interposer:
            recorded), cudaMemcpy by dlsym (the default interposer:
            recorded); (11) cudaGraphInstantiate by dlsym, called with 11's
            five arguments (the runtime's own)
     two    (13) dlopen's WORKER (argv[2], a library linked to the double
            as libcudart.so.12) RTLD_LOCAL, runs its worker_run(), then
            copies of its own: both recorded in one memobs; prints the
            calls each runtime counted ("calls: ...") */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "majors.h"
#include "preload/rc_check.h"

static int mode_main(void) {
    char *d, *h, *a, host[4096], e[2048];
    cudaStream_t s;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    inst_log_t log;
    int i;
    unsigned long long h2d = 1000 + 300, nh2d = 4, d2h = 300, nd2h = 1, d2d = 200, nd2d = 1, failed = 2;
    memset(host, 1, sizeof host);
    memset(&log, 0, sizeof log);
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    check("cudaMalloc", cudaMalloc((void **)&d, 1 << 20), 0);
    check("cudaMallocHost", cudaMallocHost((void **)&h, 4096), 0);
    check("cudaMallocAsync", cudaMallocAsync((void **)&a, 4096, s), 0);

    phase(PREFILL);
    check("cudaMemcpy H2D", cudaMemcpy(d, host, 1000, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpyAsync D2H", cudaMemcpyAsync(h, d, 300, cudaMemcpyDeviceToHost, s), 0);
    check("cudaMemcpy D2D", cudaMemcpy(d + 4096, d, 200, cudaMemcpyDeviceToDevice), 0);
    check("cudaMemcpy kind 7", cudaMemcpy(d, host, 999, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);

    phase(DECODE);
    check("cudaStreamBeginCapture", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), 0);
    check("cudaMemcpyAsync H2D (captured)", cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s), 0);
    check("cudaStreamEndCapture", cudaStreamEndCapture(s, &g), 0);
    check("cudaGraphInstantiate", INSTANTIATE(&x, g, log), 0);
#if MAJOR == 11
    check("cudaGraphInstantiate (11): an empty log", log.text[0] != 0, 0);
#endif
    for (i = 0; i < 3; i++) check("cudaGraphLaunch", cudaGraphLaunch(x, s), 0);
    log.node = (cudaGraphNode_t)(uintptr_t)1;
    check("cudaGraphInstantiate of no graph", INSTANTIATE(&x, NULL, log), cudaErrorInvalidValue);
#if MAJOR == 11
    check("cudaGraphInstantiate (11): no error node", log.node != NULL, 0);
    check("cudaGraphInstantiate (11): the log says why", log.text[0] == 0, 0);
#endif
#if MAJOR >= 12
    {
        void *dsts[2] = {d + 8192, h + 1024};
        const void *srcs[2] = {h, d};
        size_t sizes[2] = {50, 70}, idx0 = 0, fi = 7;
        struct cudaMemcpyAttributes attr;
        struct cudaMemcpy3DBatchOp op;
        memset(&attr, 0, sizeof attr);
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        memset(&op, 0, sizeof op);
        op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
        op.src.op.ptr.ptr = d;
        op.dst.op.ptr.ptr = d + 16384;
        op.extent.width = 64, op.extent.height = 2, op.extent.depth = 1;
        op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        check("cudaMemcpyBatchAsync H2D 50 + D2H 70", BATCH(dsts, srcs, sizes, 2, &attr, &idx0, 1, &fi, s), 0);
        check("cudaMemcpy3DBatchAsync D2D 128", BATCH3D(1, &op, &fi, s), 0);
        check("cudaMemcpyBatchAsync on the legacy stream",
              BATCH(dsts, srcs, sizes, 2, &attr, &idx0, 1, &fi, cudaStreamLegacy), cudaErrorInvalidValue);
        h2d += 50, nh2d += 1, d2h += 70, nd2h += 1, d2d += 128, nd2d += 1, failed += 1;
#if MAJOR == 12
        check("failIdx after a failure pertaining to no copy: SIZE_MAX", fi != SIZE_MAX, 0);
        check("cudaMemcpyBatchAsync without failIdx",
              BATCH(dsts, srcs, sizes, 2, &attr, &idx0, 1, NULL, s), cudaErrorInvalidValue);
        failed += 1;
#endif
    }
#endif
    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
    check("cudaGraphExecDestroy", cudaGraphExecDestroy(x), 0);
    check("cudaGraphDestroy", cudaGraphDestroy(g), 0);
    check("cudaFreeAsync", cudaFreeAsync(a, s), 0);
    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
    check("cudaFree", cudaFree(d), 0);
    check("cudaFreeHost", cudaFreeHost(h), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %llu, \"h2d_count\": %llu, \"d2h_bytes\": %llu, \"d2h_count\": %llu, "
             "\"d2d_bytes\": %llu, \"d2d_count\": %llu}, "
             "\"prefill\": {\"h2d_bytes\": 1000, \"h2d_count\": 1, \"d2h_bytes\": 300, \"d2d_bytes\": 200}, "
             "\"decode\": {\"h2d_bytes\": %llu, \"h2d_count\": %llu}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": %llu, \"live\": 0, "
             "\"allocs\": 2, \"frees\": 2, \"pending_frees\": 0}, "
             "\"pinned\": {\"current_bytes\": 0, \"peak_bytes\": 4096, \"live\": 0, \"allocs\": 1, \"frees\": 1}}, "
             "\"counters\": {\"preload_failed_calls\": %llu}}",
             h2d, nh2d, d2h, nd2h, d2d, nd2d, h2d - 1000, nh2d - 1, (1ull << 20) + 4096, failed);
    return done(e);
}

/* Where the function a lookup gave lies: "preload" (the preload library)
   or "runtime" (the double). */
static const char *owner(void *fn) {
    Dl_info i;
    if (!fn || !dladdr(fn, &i) || !i.dli_fname) return "none";
    return strstr(i.dli_fname, "memobs_preload") ? "preload" : "runtime";
}

static int mode_dlsym(void) {
    char *d, *h, e[1024], where[256];
    cudaStream_t s;
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    check("cudaMalloc", cudaMalloc((void **)&d, 65536), 0);
    check("cudaMallocHost", cudaMallocHost((void **)&h, 4096), 0);
    memset(h, 3, 4096);
#if MAJOR == 12
    {
        batch12_t *b = (batch12_t *)dlsym(RTLD_DEFAULT, "cudaMemcpyBatchAsync");
        batch12_t *bv = (batch12_t *)dlvsym(RTLD_DEFAULT, "cudaMemcpyBatchAsync", "libcudart.so.12");
        batch3d12_t *b3 = (batch3d12_t *)dlsym(RTLD_DEFAULT, "cudaMemcpy3DBatchAsync");
        cudaError_t (*cp)(void *, const void *, size_t, enum cudaMemcpyKind) =
            (cudaError_t (*)(void *, const void *, size_t, enum cudaMemcpyKind))dlsym(RTLD_DEFAULT, "cudaMemcpy");
        void *dsts[1] = {d};
        const void *srcs[1] = {h};
        size_t sizes[1] = {40}, idx0 = 0, fi = 7;
        struct cudaMemcpyAttributes attr;
        struct cudaMemcpy3DBatchOp op;
        char back[40];
        memset(&attr, 0, sizeof attr);
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        memset(&op, 0, sizeof op);
        op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
        op.src.op.ptr.ptr = d;
        op.dst.op.ptr.ptr = d + 4096;
        op.extent.width = 64, op.extent.height = 2, op.extent.depth = 1;
        op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        snprintf(where, sizeof where, "batch %s, 3D batch %s, batch@libcudart.so.12 %s, cudaMemcpy %s",
                 owner((void *)b), owner((void *)b3), owner((void *)bv), owner((void *)cp));
        if (!b || !bv || !b3 || !cp) {
            fprintf(stderr, "a lookup found nothing: %s\n", where);
            return 1;
        }
        check("dlsym'd cudaMemcpyBatchAsync (12.8's nine arguments) H2D 40",
              b(dsts, srcs, sizes, 1, &attr, &idx0, 1, &fi, s), 0);
        check("failIdx untouched by a success", fi != 7, 0);
        check("dlsym'd cudaMemcpy3DBatchAsync (12.8's five) D2D 128", b3(1, &op, &fi, 0, s), 0);
        check("dlsym'd cudaMemcpyBatchAsync on the legacy stream",
              b(dsts, srcs, sizes, 1, &attr, &idx0, 1, &fi, cudaStreamLegacy), cudaErrorInvalidValue);
        check("failIdx of that failure: SIZE_MAX", fi != SIZE_MAX, 0);
        sizes[0] = 60;
        check("dlvsym'd cudaMemcpyBatchAsync@libcudart.so.12 H2D 60",
              bv(dsts, srcs, sizes, 1, &attr, &idx0, 1, &fi, s), 0);
        check("dlsym'd cudaMemcpy H2D 10", cp(d + 100, h, 10, cudaMemcpyHostToDevice), 0);
        check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
        check("cudaMemcpy D2H 40 (the batch's bytes back)", cudaMemcpy(back, d, 40, cudaMemcpyDeviceToHost), 0);
        check("the batch copied the bytes", memcmp(back, h, 40) != 0, 0);
        snprintf(e, sizeof e,
                 "{\"total\": {\"h2d_bytes\": 70, \"h2d_count\": 2, \"d2h_bytes\": 40, \"d2h_count\": 1, "
                 "\"d2d_bytes\": 0, \"d2d_count\": 0}}");
    }
#elif MAJOR == 11
    {
        instantiate11_t *in = (instantiate11_t *)dlsym(RTLD_DEFAULT, "cudaGraphInstantiate");
        cudaGraphExec_t x;
        inst_log_t log;
        snprintf(where, sizeof where, "cudaGraphInstantiate %s", owner((void *)in));
        memset(&log, 0, sizeof log);
        if (!in) return 1;
        check("dlsym'd cudaGraphInstantiate (11's five arguments) of no graph",
              in(&x, NULL, &log.node, log.text, sizeof log.text), cudaErrorInvalidValue);
        check("its log says why", log.text[0] == 0, 0);
        snprintf(e, sizeof e, "{\"total\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}}");
    }
#else
    snprintf(where, sizeof where, "cudaMemcpy %s", owner(dlsym(RTLD_DEFAULT, "cudaMemcpy")));
    snprintf(e, sizeof e, "{}");
#endif
    check("cudaFree", cudaFree(d), 0);
    check("cudaFreeHost", cudaFreeHost(h), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    printf("where: %s\n", where);
    return done(e);
}

static int mode_two(const char *worker) {
    void *w = dlopen(worker, RTLD_NOW | RTLD_LOCAL);
    int (*run)(long *) = w ? (int (*)(long *))dlsym(w, "worker_run") : NULL;
    long (*calls)(const char *) = (long (*)(const char *))dlsym(RTLD_DEFAULT, "cudadbl_calls"), c12[2];
    char *d, host[512];
    if (!run || !calls) {
        fprintf(stderr, "%s: %s\n", worker, dlerror());
        return 1;
    }
    check("worker_run (CUDA 12)", run(c12), 0);
    memset(host, 4, sizeof host);
    check("cudaMalloc (13)", cudaMalloc((void **)&d, 8192), 0);
    check("cudaMemcpy H2D 444 (13)", cudaMemcpy(d, host, 444, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpy D2H 55 (13)", cudaMemcpy(host, d, 55, cudaMemcpyDeviceToHost), 0);
    check("cudaFree (13)", cudaFree(d), 0);
    printf("calls: 12: batch %ld memcpy %ld; 13: batch %ld memcpy %ld\n", c12[0], c12[1],
           calls("cudaMemcpyBatchAsync"), calls("cudaMemcpy"));
    /* the worker's: cudaMalloc 4096, H2D 111, D2H 333 (its batch: see worker.c), free */
    return done("{\"total\": {\"h2d_bytes\": 555, \"h2d_count\": 2, \"d2h_bytes\": 388, \"d2h_count\": 2}, "
                "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": 8192, \"live\": 0, \"allocs\": 2, "
                "\"frees\": 2}}}");
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "main";
    if (!strcmp(m, "main")) return mode_main();
    if (!strcmp(m, "dlsym")) return mode_dlsym();
    if (!strcmp(m, "two") && argc > 2) return mode_two(argv[2]);
    fprintf(stderr, "usage: %s main|dlsym|two WORKER\n", argv[0]);
    return 2;
}
