/* entry_runtime.c - a program that takes driver functions from the CUDA
   runtime's cudaGetDriverEntryPoint(ByVersion)(_ptsz), for
   tests/preload/test_preload_entry.sh: linked with the runtime double
   (tests/cuda/cudart_double.c built as libcudart.so.13, which defines the
   driver functions too) and run with and without the preload. Built with
   -DENTRY_LOCAL it links no CUDA library and dlopen()s
   libentry_layer.so (tests/preload/entry_layer.c, linked with the double)
   with RTLD_LOCAL, as Python loads libtorch_cuda.so: the runtime and its
   driver functions are then in no global scope, and the lookups are made
   by the layer. Output as tests/preload/entry_driver.c's: "rcs: ...",
   "expect: {json}", "fetched NAME: ours | the driver's".

   entry_runtime MODE
     linked          the linked driver functions (not with ENTRY_LOCAL)
     entry           cudaGetDriverEntryPoint, cudaEnableLegacyStream
     entry_ptsz      cudaGetDriverEntryPoint_ptsz, cudaEnableDefault: the
                     per-thread copies
     version         cudaGetDriverEntryPointByVersion at 12000, flags 0
     version_ptsz    cudaGetDriverEntryPointByVersion_ptsz at 12000, the
                     per-thread flag
     rules           errors, versions, names memobs does not intercept,
                     cuGetProcAddress through the runtime
     pitch           the runtime's own lookups (run with
                     CUDADBL_DRIVER_LOOKUP=global: the double's runtime
                     fetches its driver table through the global scope,
                     the preload's cuGetProcAddress_v2):
                     cudaMallocPitch allocates through that table and is
                     not recorded (memobs does not intercept it); a
                     cuMemAllocPitch the program fetched is, once */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rc_check.h"
#ifndef ENTRY_LOCAL
#include "../cuda/cudart_double.h" /* cudadbl_calls */
#endif

typedef cudaError_t (*get_t)(const char *, void **, unsigned long long, enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*getv_t)(const char *, void **, unsigned int, unsigned long long,
                              enum cudaDriverEntryPointQueryResult *);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);

/* The runtime's calls this program makes: the linked ones, or the
   layer's (ENTRY_LOCAL). */
static struct {
    get_t get, get_ptsz;
    getv_t getv, getv_ptsz;
    cudaError_t (*sync)(void);
    void *runtime; /* the runtime double's handle */
} rt;

static int runtime_init(void) {
#ifdef ENTRY_LOCAL
    void *l = dlopen("libentry_layer.so", RTLD_NOW | RTLD_LOCAL);
    if (!l) {
        fprintf(stderr, "dlopen libentry_layer.so: %s\n", dlerror());
        return 1;
    }
    rt.get = (get_t)(uintptr_t)dlsym(l, "entry_layer_get");
    rt.get_ptsz = (get_t)(uintptr_t)dlsym(l, "entry_layer_get_ptsz");
    rt.getv = (getv_t)(uintptr_t)dlsym(l, "entry_layer_getv");
    rt.getv_ptsz = (getv_t)(uintptr_t)dlsym(l, "entry_layer_getv_ptsz");
    rt.sync = (cudaError_t(*)(void))(uintptr_t)dlsym(l, "entry_layer_sync");
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cudaGetDriverEntryPoint, deprecated in CUDA 13.0 */
    rt.get = cudaGetDriverEntryPoint;
#pragma GCC diagnostic pop
    rt.get_ptsz = (get_t)(uintptr_t)dlsym(RTLD_DEFAULT, "cudaGetDriverEntryPoint_ptsz");
    rt.getv = cudaGetDriverEntryPointByVersion;
    rt.getv_ptsz = (getv_t)(uintptr_t)dlsym(RTLD_DEFAULT, "cudaGetDriverEntryPointByVersion_ptsz");
    rt.sync = cudaDeviceSynchronize;
#endif
    rt.runtime = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    return !rt.get || !rt.get_ptsz || !rt.getv || !rt.getv_ptsz || !rt.sync || !rt.runtime;
}

typedef struct {
    __typeof__(cuMemAlloc) *alloc;
    __typeof__(cuMemAllocPitch) *alloc_pitch;
    __typeof__(cuMemFree) *free;
    __typeof__(cuMemcpyHtoD) *htod;
    __typeof__(cuMemcpyDtoH) *dtoh;
} fns_t;

static const struct {
    const char *symbol, *legacy, *pt;
    size_t off;
} rows[] = {
    {"cuMemAlloc", "cuMemAlloc_v2", NULL, offsetof(fns_t, alloc)},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", NULL, offsetof(fns_t, alloc_pitch)},
    {"cuMemFree", "cuMemFree_v2", NULL, offsetof(fns_t, free)},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", offsetof(fns_t, htod)},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", offsetof(fns_t, dtoh)},
};
#define NROWS (sizeof rows / sizeof rows[0])

/* "fetched NAME: ..."; 0 when p is NAME's interposer or the runtime
   double's NAME itself */
static int whose(const char *name, void *p) {
    void *drv = dlsym(rt.runtime, name), *dflt = dlsym(RTLD_DEFAULT, name);
    printf("fetched %s: %s\n", name, p == drv ? "the driver's" : p && p == dflt ? "ours" : "other");
    return !p || (p != drv && p != dflt);
}

/* how: 0 get, 1 get_ptsz, 2 getv, 3 getv_ptsz */
static cudaError_t get(int how, const char *symbol, void **p, unsigned version, unsigned long long flags,
                       enum cudaDriverEntryPointQueryResult *st) {
    switch (how) {
    case 0: return rt.get(symbol, p, flags, st);
    case 1: return rt.get_ptsz(symbol, p, flags, st);
    case 2: return rt.getv(symbol, p, version, flags, st);
    default: return rt.getv_ptsz(symbol, p, version, flags, st);
    }
}

static void fetch(fns_t *f, int how, unsigned long long flags, int pt) {
    size_t i;
    for (i = 0; i < NROWS; i++) {
        void *p = NULL;
        enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)-1;
        const char *name = pt && rows[i].pt ? rows[i].pt : rows[i].legacy;
        check(rows[i].symbol, get(how, rows[i].symbol, &p, 12000, flags, &st), 0);
        check("driverStatus", (int)st, cudaDriverEntryPointSuccess);
        check(name, whose(name, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
        memcpy((char *)f + rows[i].off, &p, sizeof p);
    }
}

/* Device 1 MiB + 64 KiB + a pitched 1000 x 10 (pitch 1024); H2D 1000 in
   prefill, D2H 300 in decode; a 0-byte allocation fails. */
static int sequence(const fns_t *f) {
    CUdeviceptr d, d2, dp, bad;
    size_t pitch = 0;
    char host[2048];
    memset(host, 5, sizeof host);
    check("the runtime's first call", rt.sync(), 0);
    check("alloc d", f->alloc(&d, 1 << 20), 0);
    check("alloc d2", f->alloc(&d2, 65536), 0);
    check("alloc_pitch", f->alloc_pitch(&dp, &pitch, 1000, 10, 4), 0);
    check("pitch 1024", pitch == 1024 ? 0 : 1, 0);
    phase(PREFILL);
    check("htod", f->htod(d, host, 1000), 0);
    phase(DECODE);
    check("dtoh", f->dtoh(host, d, 300), 0);
    check("alloc 0 bytes", f->alloc(&bad, 0), CUDA_ERROR_INVALID_VALUE);
    check("free d2", f->free(d2), 0);
    check("free pitched", f->free(dp), 0);
    return done("{\"total\": {\"h2d_bytes\": 1000, \"h2d_count\": 1, \"d2h_bytes\": 300, \"d2h_count\": 1, "
                "\"d2d_count\": 0}, "
                "\"prefill\": {\"h2d_bytes\": 1000, \"h2d_count\": 1, \"d2h_count\": 0}, "
                "\"decode\": {\"h2d_count\": 0, \"d2h_bytes\": 300, \"d2h_count\": 1}, "
                "\"memory\": {\"device\": {\"current_bytes\": 1048576, \"peak_bytes\": 1124352, \"live\": 1, "
                "\"allocs\": 3, \"frees\": 2}}, "
                "\"counters\": {\"preload_failed_calls\": 1}}");
}

/* one lookup: its code, status and pointer (name NULL: none) */
static void rule(const char *what, int how, const char *symbol, unsigned version, unsigned long long flags,
                 cudaError_t want_rc, int want_st, const char *name) {
    void *p = (void *)1;
    enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)7;
    check(what, get(how, symbol, &p, version, flags, &st), want_rc);
    check(what, (int)st, want_st);
    if (want_rc != cudaSuccess) check("funcPtr untouched", p == (void *)1 ? 0 : 1, 0);
    else if (!name) check("funcPtr NULL", p ? 1 : 0, 0);
    else check(name, whose(name, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
}

static int mode_rules(void) {
    const unsigned long long PT = cudaEnablePerThreadDefaultStream;
    typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    void *g = NULL, *p = NULL;
    enum cudaDriverEntryPointQueryResult st;
    rule("NULL symbol", 0, NULL, 0, 0, cudaErrorInvalidValue, 7, NULL);
    rule("flags 4", 0, "cuMemAlloc", 0, 4, cudaErrorInvalidValue, 7, NULL);
    rule("ByVersion above the driver's", 2, "cuMemAlloc", 13010, 0, cudaErrorInvalidValue, 7, NULL);
    rule("unknown name", 0, "cuNoSuchFunction", 0, 0, cudaSuccess, cudaDriverEntryPointSymbolNotFound, NULL);
    rule("cuMemAlloc at 3000 (no 32-bit one here)", 2, "cuMemAlloc", 3000, 0, cudaSuccess,
         cudaDriverEntryPointVersionNotSufficent, NULL);
    rule("cuCtxGetCurrent (not intercepted)", 0, "cuCtxGetCurrent", 0, 0, cudaSuccess, 0, "cuCtxGetCurrent");
    rule("cuMemGetInfo (not intercepted)", 3, "cuMemGetInfo", 12000, PT, cudaSuccess, 0, "cuMemGetInfo_v2");
    rule("_ptsz, flags 0: per-thread", 1, "cuMemcpyHtoD", 0, 0, cudaSuccess, 0, "cuMemcpyHtoD_v2_ptds");
    rule("flags 0: legacy", 0, "cuMemcpyHtoD", 0, 0, cudaSuccess, 0, "cuMemcpyHtoD_v2");
    rule("ByVersion _ptsz legacy flag", 3, "cuMemcpyDtoH", 12000, cudaEnableLegacyStream, cudaSuccess, 0,
         "cuMemcpyDtoH_v2");
    rule("cuGetProcAddress at 11030", 2, "cuGetProcAddress", 11030, 0, cudaSuccess, 0, "cuGetProcAddress");
    check("cuGetProcAddress", get(0, "cuGetProcAddress", &g, 0, 0, &st), 0);
    check("cuGetProcAddress_v2", whose("cuGetProcAddress_v2", g) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    if (g) {
        check("cuMemAlloc through it", ((gpa2_t)(uintptr_t)g)("cuMemAlloc", &p, 12000, 0, NULL), 0);
        check("cuMemAlloc_v2", whose("cuMemAlloc_v2", p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    }
    return done(NULL);
}

#ifndef ENTRY_LOCAL
static int mode_pitch(void) {
    void *a = NULL, *q = NULL, *p = NULL;
    size_t pitch = 0, pitch2 = 0;
    CUdeviceptr dp;
    __typeof__(cuMemAllocPitch) *f;
    void *mine = dlsym(rt.runtime, "cuGetProcAddress_v2");
    printf("runtime's lookups: %s\n", dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2") == mine ? "the driver's" : "ours");
    check("cudaMalloc", cudaMalloc(&a, 4096), 0);
    check("cudaMallocPitch", cudaMallocPitch(&q, &pitch, 1000, 10), 0);
    check("the runtime fetched its table once", cudadbl_calls("cuGetProcAddress_v2") == 1 ? 0 : 1, 0);
    check("cuMemAllocPitch", rt.get("cuMemAllocPitch", &p, cudaEnableLegacyStream, NULL), 0);
    f = (__typeof__(cuMemAllocPitch) *)(uintptr_t)p;
    check("cuMemAllocPitch_v2", whose("cuMemAllocPitch_v2", p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    if (f) check("the fetched cuMemAllocPitch", f(&dp, &pitch2, 1000, 10, 4), 0);
    check("the driver's cuMemAllocPitch_v2 ran twice", cudadbl_calls("cuMemAllocPitch_v2") == 2 ? 0 : 1, 0);
    check("cudaFree", cudaFree(a), 0);
    return done("{\"memory\": {\"device\": {\"current_bytes\": 10240, \"peak_bytes\": 14336, \"live\": 1, "
                "\"allocs\": 2, \"frees\": 1}}}");
}
#endif

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    fns_t f;
    memset(&f, 0, sizeof f);
    if (runtime_init()) {
        fprintf(stderr, "the runtime's entry points not found\n");
        return 1;
    }
#ifndef ENTRY_LOCAL
    if (!strcmp(mode, "linked")) {
        fns_t l = {cuMemAlloc, cuMemAllocPitch, cuMemFree, cuMemcpyHtoD, cuMemcpyDtoH};
        return sequence(&l);
    }
    if (!strcmp(mode, "pitch")) return mode_pitch();
#endif
    if (!strcmp(mode, "entry")) fetch(&f, 0, cudaEnableLegacyStream, 0);
    else if (!strcmp(mode, "entry_ptsz")) fetch(&f, 1, cudaEnableDefault, 1);
    else if (!strcmp(mode, "version")) fetch(&f, 2, cudaEnableDefault, 0);
    else if (!strcmp(mode, "version_ptsz")) fetch(&f, 3, cudaEnablePerThreadDefaultStream, 1);
    else if (!strcmp(mode, "rules")) return mode_rules();
    else {
        fprintf(stderr, "usage: entry_runtime linked|entry|entry_ptsz|version|version_ptsz|rules|pitch\n");
        return 2;
    }
    return sequence(&f);
}
