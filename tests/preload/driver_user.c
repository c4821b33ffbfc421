/* driver_user.c - a program that calls the CUDA driver API and knows
   nothing of memobs, for tests/preload/test_preload_driver.sh: linked with -lcuda
   (tests/preload/driver_double.c built as libcuda.so.1, or the toolkit's
   stub libcuda.so) and run with and without
   LD_PRELOAD=libmemobs_preload.so. It checks each return code against
   the double's documented one, prints them ("rcs: ...") so the script can
   compare runs, and prints what memobs should have recorded ("expect:
   {json}"). memobs_set_phase is found with dlsym(RTLD_DEFAULT, ...):
   present only under the preload.

   driver_user MODE
     main     copies of every direction and entry point (the per-thread
              ones in driver_ptds.c), allocations of every kind, 9
              injected errors
     threads  4 threads, each with device 0's context current: 50 H2D
              copies of 1000 bytes and 50 cuMemcpy of 100 bytes whose
              direction (D2H) is inferred, in decode
     stub     against the toolkit's stub libcuda.so: every call fails;
              prints the return codes only
     lookup   under the preload: memobs_cuda_driver_symbol (memobs' own
              driver lookups) gives libcuda.so.1's cuMemAlloc_v2 and
              cuMemcpy, not the interposers that RTLD_DEFAULT finds */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rc_check.h"
#define U(p) ((CUdeviceptr)(uintptr_t)(p))

int ptds_sequence(CUdeviceptr d1, CUdeviceptr d2, CUdeviceptr d3, char *host, CUcontext c0, CUcontext c1,
                  CUmemoryPool pool);


static void *no_context(void *arg) {
    CUdeviceptr d;
    *(CUresult *)arg = cuMemAlloc(&d, 64); /* a new thread has no current context */
    return NULL;
}

static int mode_main(void) {
    CUdeviceptr d1, d2, d3, dp, m, a, b, bad;
    CUcontext c0, c1;
    CUstream s;
    CUmemoryPool pool;
    CUresult thr_rc = CUDA_SUCCESS;
    pthread_t t;
    size_t pitch = 0;
    char host[4096], *h, *h2;
    unsigned long long dev_peak;
    char e[2048];
    memset(host, 1, sizeof host);

    check("cuMemAlloc before cuInit", cuMemAlloc(&bad, 64), CUDA_ERROR_NOT_INITIALIZED);
    check("cuInit", cuInit(0), 0);
    check("cuDevicePrimaryCtxRetain 0", cuDevicePrimaryCtxRetain(&c0, 0), 0);
    check("cuDevicePrimaryCtxRetain 1", cuDevicePrimaryCtxRetain(&c1, 1), 0);
    check("cuCtxSetCurrent 0", cuCtxSetCurrent(c0), 0);
    check("cuStreamCreate", cuStreamCreate(&s, CU_STREAM_DEFAULT), 0);
    check("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool(&pool, 0), 0);

    check("cuMemAlloc d1", cuMemAlloc(&d1, 1 << 20), 0);
    check("cuMemAlloc d2", cuMemAlloc(&d2, 1 << 20), 0);
    check("cuCtxSetCurrent 1", cuCtxSetCurrent(c1), 0);
    check("cuMemAlloc d3 (device 1)", cuMemAlloc(&d3, 65536), 0);
    check("cuCtxSetCurrent 0", cuCtxSetCurrent(c0), 0);
    check("cuMemAllocPitch 1000 x 10", cuMemAllocPitch(&dp, &pitch, 1000, 10, 4), 0);
    check("cuMemAllocHost", cuMemAllocHost((void **)&h, 1 << 20), 0);
    check("cuMemHostAlloc", cuMemHostAlloc((void **)&h2, 4096, CU_MEMHOSTALLOC_PORTABLE), 0);
    check("cuMemAllocManaged", cuMemAllocManaged(&m, 8192, CU_MEM_ATTACH_GLOBAL), 0);
    check("cuMemAllocAsync", cuMemAllocAsync(&a, 4096, s), 0);
    check("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync(&b, 2048, pool, s), 0);

    phase(PREFILL);
    check("cuMemcpyHtoD", cuMemcpyHtoD(d1, host, 1000), 0);
    check("cuMemcpyHtoDAsync (pinned source)", cuMemcpyHtoDAsync(d1, h, 2000, s), 0);
    check("cuMemcpy host to device (inferred H2D)", cuMemcpy(d1, U(host), 500), 0);
    check("cuMemcpy pinned to host (not a transfer)", cuMemcpy(U(host), U(h2), 100), 0);

    phase(DECODE);
    check("cuMemcpyDtoH", cuMemcpyDtoH(host, d1, 300), 0);
    check("cuMemcpyDtoHAsync (pinned destination)", cuMemcpyDtoHAsync(h, d1, 700, s), 0);
    check("cuMemcpyDtoD", cuMemcpyDtoD(d2, d1, 400), 0);
    check("cuMemcpyDtoDAsync stream 0", cuMemcpyDtoDAsync(d2, d1, 600, 0), 0);
    check("cuMemcpyPeer 0 -> 1", cuMemcpyPeer(d3, c1, d1, c0, 500), 0);
    check("cuMemcpyPeerAsync 0 -> 1", cuMemcpyPeerAsync(d3, c1, d1, c0, 256, s), 0);
    check("cuMemcpyAsync managed to host (inferred D2H)", cuMemcpyAsync(U(host), m, 64, s), 0);
    check("cuMemcpy device to device (inferred D2D)", cuMemcpy(d2, d1, 128), 0);
    check("cuMemcpy host to pitched (inferred H2D)", cuMemcpy(dp, U(host), 96), 0);
    check("the per-thread default stream entry points (driver_ptds.c)",
          ptds_sequence(d1, d2, d3, host, c0, c1, pool) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);

    /* errors: passed through, counted, not recorded */
    check("cuMemAlloc 1 TiB", cuMemAlloc(&bad, (size_t)1 << 40), CUDA_ERROR_OUT_OF_MEMORY);
    check("cuMemAlloc 0 bytes", cuMemAlloc(&bad, 0), CUDA_ERROR_INVALID_VALUE);
    check("cuMemAllocPitch element size 3", cuMemAllocPitch(&bad, &pitch, 100, 2, 3), CUDA_ERROR_INVALID_VALUE);
    check("cuMemHostAlloc flags 0x80", cuMemHostAlloc((void **)&h2, 64, 0x80), CUDA_ERROR_INVALID_VALUE);
    check("cuMemFree of host memory", cuMemFree(U(host)), CUDA_ERROR_INVALID_VALUE);
    check("cuMemFreeHost of device memory", cuMemFreeHost((void *)(uintptr_t)d1), CUDA_ERROR_INVALID_VALUE);
    check("cuMemcpyHtoD to host memory", cuMemcpyHtoD(U(host + 2048), host, 10), CUDA_ERROR_INVALID_VALUE);
    check("pthread_create", pthread_create(&t, NULL, no_context, &thr_rc) == 0 && pthread_join(t, NULL) == 0
                                ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, 0);
    check("cuMemAlloc on a thread without a context", thr_rc, CUDA_ERROR_INVALID_CONTEXT);

    check("cuMemFreeAsync a", cuMemFreeAsync(a, s), 0);
    check("cuMemFreeAsync b, stream 0", cuMemFreeAsync(b, 0), 0);
    check("cuStreamSynchronize", cuStreamSynchronize(s), 0);
    check("cuMemFree d2", cuMemFree(d2), 0);
    check("cuMemFree pitched", cuMemFree(dp), 0);
    check("cuMemFreeHost h2", cuMemFreeHost(h2), 0);
    check("cuStreamDestroy", cuStreamDestroy(s), 0);
    check("pitch", pitch == 1024 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, 0);

    /* device peak: every block but the per-thread sequence's two, which
       are live together before both are freed */
    dev_peak = (2ull << 20) + 65536 + pitch * 10 + 4096 + 2048 + 512 + 256;
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %d, \"h2d_count\": 7, \"d2h_bytes\": %d, \"d2h_count\": 6, "
             "\"d2d_bytes\": %d, \"d2d_count\": 9}, "
             "\"prefill\": {\"h2d_bytes\": 3500, \"h2d_count\": 3, \"d2h_count\": 0, \"d2d_count\": 0}, "
             "\"decode\": {\"h2d_bytes\": %d, \"h2d_count\": 4, \"d2h_bytes\": %d, \"d2h_count\": 6, "
             "\"d2d_bytes\": %d, \"d2d_count\": 9}, "
             "\"unphased\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}, "
             "\"memory\": {\"device\": {\"current_bytes\": %llu, \"peak_bytes\": %llu, \"live\": 2, "
             "\"allocs\": 8, \"frees\": 6, \"pending_frees\": 0}, "
             "\"pinned\": {\"current_bytes\": %d, \"peak_bytes\": %d, \"live\": 1, \"allocs\": 2, \"frees\": 1}, "
             "\"managed\": {\"current_bytes\": 8192, \"peak_bytes\": 8192, \"live\": 1, \"allocs\": 1, \"frees\": 0}}, "
             "\"pinned\": {\"blocks\": 1, \"held_bytes\": 1048576, \"peak_held_bytes\": 1052672, \"allocs\": 2, "
             "\"frees\": 1}, "
             "\"counters\": {\"preload_failed_calls\": 9}}",
             3500 + 96 + 42, 300 + 700 + 64 + 45, 400 + 600 + 500 + 256 + 128 + 68, 96 + 42, 300 + 700 + 64 + 45,
             400 + 600 + 500 + 256 + 128 + 68, (1ull << 20) + 65536, dev_peak, 1 << 20, (1 << 20) + 4096);
    return done(e);
}

static CUcontext thr_ctx;
static void *copier(void *arg) {
    CUdeviceptr d = *(CUdeviceptr *)arg;
    char host[1000];
    int i, bad = 0;
    memset(host, 2, sizeof host);
    phase(DECODE);
    bad |= cuCtxSetCurrent(thr_ctx) != CUDA_SUCCESS;
    for (i = 0; i < 50; i++) {
        bad |= cuMemcpyHtoD(d, host, sizeof host) != CUDA_SUCCESS;
        bad |= cuMemcpy(U(host), d, 100) != CUDA_SUCCESS;
    }
    if (bad) __atomic_add_fetch(&fails, 1, __ATOMIC_RELAXED);
    return NULL;
}

static int mode_threads(void) {
    pthread_t t[4];
    CUdeviceptr d[4];
    int i;
    check("cuInit", cuInit(0), 0);
    check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&thr_ctx, 0), 0);
    check("cuCtxSetCurrent", cuCtxSetCurrent(thr_ctx), 0);
    for (i = 0; i < 4; i++) check("cuMemAlloc", cuMemAlloc(&d[i], 1000), 0);
    for (i = 0; i < 4; i++) pthread_create(&t[i], NULL, copier, &d[i]);
    for (i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return done("{\"total\": {\"h2d_bytes\": 200000, \"h2d_count\": 200, \"d2h_bytes\": 20000, \"d2h_count\": 200}, "
                "\"decode\": {\"h2d_bytes\": 200000, \"h2d_count\": 200, \"d2h_bytes\": 20000, \"d2h_count\": 200}, "
                "\"memory\": {\"device\": {\"current_bytes\": 4000, \"allocs\": 4, \"live\": 4}}}");
}

/* 12 intercepted calls (cuInit is not one) */
static int mode_stub(void) {
    CUdeviceptr d = 0x1000, m = 0;
    void *h = NULL;
    char host[64];
    check("cuInit", cuInit(0), -1);
    check("cuMemAlloc", cuMemAlloc(&d, 4096), -1);
    check("cuMemAllocHost", cuMemAllocHost(&h, 4096), -1);
    check("cuMemHostAlloc", cuMemHostAlloc(&h, 4096, 0), -1);
    check("cuMemAllocManaged", cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL), -1);
    check("cuMemAllocAsync", cuMemAllocAsync(&m, 4096, 0), -1);
    check("cuMemcpyHtoD", cuMemcpyHtoD(d, host, 64), -1);
    check("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync(host, d, 64, 0), -1);
    check("cuMemcpy", cuMemcpy(d, U(host), 64), -1);
    check("cuMemcpyPeer", cuMemcpyPeer(d, NULL, d, NULL, 64), -1);
    check("cuMemFree", cuMemFree(d), -1);
    check("cuMemFreeHost", cuMemFreeHost(host), -1);
    check("cuMemFreeAsync", cuMemFreeAsync(d, 0), -1);
    return done(NULL);
}

static int mode_lookup(void) {
    void *(*sym)(const char *) = (void *(*)(const char *))dlsym(RTLD_DEFAULT, "memobs_cuda_driver_symbol");
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    const char *names[] = {"cuMemAlloc_v2", "cuMemcpy", "cuMemFreeAsync_ptsz", "cuCtxGetCurrent"};
    int i;
    check("memobs_cuda_driver_symbol and libcuda.so.1 found", sym && h ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND, 0);
    for (i = 0; sym && h && i < 4; i++) {
        void *mine = sym(names[i]), *drv = dlsym(h, names[i]), *dflt = dlsym(RTLD_DEFAULT, names[i]);
        check(names[i], mine && mine == drv ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND, 0);
        printf("%s: %s\n", names[i], dflt == drv ? "the driver's" : "interposed");
    }
    if (h) dlclose(h);
    return done(NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "main")) return mode_main();
    if (!strcmp(mode, "threads")) return mode_threads();
    if (!strcmp(mode, "stub")) return mode_stub();
    if (!strcmp(mode, "lookup")) return mode_lookup();
    fprintf(stderr, "usage: driver_user main|threads|stub|lookup\n");
    return 2;
}
