/* tests/test_preload.c - a CUDA program that knows nothing of memobs, for
   tests/test_preload.sh: linked with -lcudart (the runtime double built as
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
     fork     parent: 100 bytes H2D; child after fork: 200 bytes D2H
     reentry  cudaMallocHost + cudaFreeHost of 4096 bytes (under
              tests/preload/reenter.c, whose cudaMallocHost calls
              cudaHostAlloc)
     edges    a cudaMalloc and a 10-byte H2D copy in a constructor (before
              main), 20 bytes in main, a 5-byte D2H copy and the free in a
              destructor (after the exit handlers)
     real     against the toolkit's runtime without a GPU: every call
              fails; prints the return codes only */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PREFILL 1 /* MEMOBS_PHASE_PREFILL */
#define DECODE 2  /* MEMOBS_PHASE_DECODE */

static int fails;
static char rcs[4096];

static void phase(int p) {
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "memobs_set_phase");
    if (set) set(p);
}

/* rc must be want (want < 0: any error); every rc is also printed */
static void check(const char *what, cudaError_t rc, int want) {
    size_t n = strlen(rcs);
    snprintf(rcs + n, sizeof rcs - n, " %d", (int)rc);
    if (want >= 0 ? (int)rc != want : rc == cudaSuccess) {
        fprintf(stderr, "%s: rc %d, expected %d\n", what, (int)rc, want);
        fails++;
    }
}

static int done(const char *expect) {
    printf("rcs:%s\n", rcs);
    if (expect) printf("expect: %s\n", expect);
    fflush(stdout);
    return fails ? 1 : 0;
}

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
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %llu, \"h2d_count\": %llu, \"d2h_bytes\": %llu, \"d2h_count\": %llu, "
             "\"d2d_bytes\": %llu, \"d2d_count\": %llu}, "
             "\"prefill\": {\"h2d_bytes\": %llu, \"h2d_count\": 3, \"d2h_bytes\": 0, \"d2d_bytes\": 0}, "
             "\"decode\": {\"h2d_bytes\": 128, \"h2d_count\": 1, \"d2h_bytes\": %llu, \"d2h_count\": 3, "
             "\"d2d_bytes\": %llu, \"d2d_count\": 3}, "
             "\"unphased\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}, "
             "\"memory\": {\"device\": {\"current_bytes\": %llu, \"peak_bytes\": %llu, \"live\": 2, "
             "\"allocs\": 4, \"frees\": 2, \"pending_frees\": 0}, "
             "\"pinned\": {\"current_bytes\": %llu, \"peak_bytes\": %llu, \"live\": 1, \"allocs\": 2, \"frees\": 1}, "
             "\"managed\": {\"current_bytes\": 8192, \"peak_bytes\": 8192, \"live\": 1, \"allocs\": 1, \"frees\": 0}}, "
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
    if (pid == 0) {
        check("cudaMemcpy D2H (child)", cudaMemcpy(host, d, 200, cudaMemcpyDeviceToHost), 0);
        printf("child: %d\n", (int)getpid());
        exit(fails ? 1 : 0); /* exit handlers run: the child's summary */
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) fails++;
    printf("parent: %d\n", (int)getpid());
    return done(NULL);
}

static int mode_reentry(void) {
    void *h = NULL;
    check("cudaMallocHost", cudaMallocHost(&h, 4096), 0);
    check("cudaFreeHost", cudaFreeHost(h), 0);
    return done("{\"memory\": {\"pinned\": {\"allocs\": 1, \"frees\": 1, \"current_bytes\": 0, \"peak_bytes\": 4096}}, "
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
__attribute__((destructor)) static void after_exit(void) {
    char host[16];
    if (edges != 1) return;
    if (cudaMemcpy(host, edge_dev, 5, cudaMemcpyDeviceToHost) != cudaSuccess || cudaFree(edge_dev) != cudaSuccess)
        _exit(5);
}

static int mode_edges(void) {
    char host[32] = {0};
    check("constructor's calls", edges == 1 ? cudaSuccess : cudaErrorUnknown, 0);
    check("cudaMemcpy H2D", cudaMemcpy(edge_dev, host, 20, cudaMemcpyHostToDevice), 0);
    /* The preload's exit handlers were registered before main (by its
       constructor), so its summary comes after this program's destructor. */
    return done("{\"total\": {\"h2d_bytes\": 30, \"h2d_count\": 2, \"d2h_bytes\": 5, \"d2h_count\": 1}, "
                "\"memory\": {\"device\": {\"allocs\": 1, \"frees\": 1, \"live\": 0, \"current_bytes\": 0}}}");
}

static int mode_real(void) {
    void *d = NULL, *h = NULL;
    char host[64];
    check("cudaMalloc", cudaMalloc(&d, 4096), -1);
    check("cudaMallocHost", cudaMallocHost(&h, 4096), -1);
    check("cudaMemcpy H2D", cudaMemcpy(d, host, 64, cudaMemcpyHostToDevice), -1);
    check("cudaMemcpyAsync D2H", cudaMemcpyAsync(host, d, 64, cudaMemcpyDeviceToHost, 0), -1);
    check("cudaFree", cudaFree(d), -1);
    return done(NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "main")) return mode_main();
    if (!strcmp(mode, "threads")) return mode_threads();
    if (!strcmp(mode, "fork")) return mode_fork();
    if (!strcmp(mode, "reentry")) return mode_reentry();
    if (!strcmp(mode, "edges")) return mode_edges();
    if (!strcmp(mode, "real")) return mode_real();
    fprintf(stderr, "usage: test_preload main|threads|fork|reentry|edges|real\n");
    return 2;
}
