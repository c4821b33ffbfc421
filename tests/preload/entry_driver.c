/* entry_driver.c - a driver API program that takes its functions from
   cuGetProcAddress, for tests/preload/test_preload_entry.sh: linked with -lcuda
   (tests/preload/driver_double.c built as libcuda.so.1) and run with and
   without LD_PRELOAD=libmemobs_preload.so. One sequence of copies and
   allocations (1 of them failing) runs through a table of function
   pointers filled in one of five ways; memobs must count each the same
   ("expect: {json}", one for all). Every return code is checked against
   the double's and printed ("rcs: ..."); each fetched pointer is printed as
   "fetched NAME: ours" (dlsym(RTLD_DEFAULT, NAME), not libcuda.so.1's: an
   interposer) or "fetched NAME: the driver's".

   entry_driver MODE
     linked   the linked functions (cuda.h's names)
     v2       cuGetProcAddress_v2, CUDA 12.0, CU_GET_PROC_ADDRESS_LEGACY_STREAM
     v1       the 4-argument cuGetProcAddress export, CUDA 11.3, flags 0
     ptds     cuGetProcAddress_v2, CUDA 13.0, the per-thread flag: the
              _ptds / _ptsz functions where the driver has them
     nested2  cuGetProcAddress_v2 fetched through cuGetProcAddress_v2 (at
              12.0), then v2's table through it
     nested1  the 4-argument cuGetProcAddress fetched through
              cuGetProcAddress_v2 (at 11.3), then v1's table through it
     rules    versions and errors: cuMemAlloc below 3.2 (the 32-bit
              cuMemAlloc, the driver's), at 3.2 (cuMemAlloc_v2); per-thread
              below 7.0 (the legacy function); a function asked before its
              version; an unknown name; NULL symbol, NULL pfn, bad flags, a
              version above the driver's; functions memobs does not
              intercept (cuCtxGetCurrent, cuMemGetInfo_v2) */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rc_check.h"

#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
typedef CUresult (*gpa1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

typedef struct {
    __typeof__(cuMemAlloc) *alloc;
    __typeof__(cuMemAllocHost) *alloc_host;
    __typeof__(cuMemAllocAsync) *alloc_async;
    __typeof__(cuMemFree) *free;
    __typeof__(cuMemFreeHost) *free_host;
    __typeof__(cuMemFreeAsync) *free_async;
    __typeof__(cuMemcpyHtoD) *htod;
    __typeof__(cuMemcpyHtoDAsync) *htod_async;
    __typeof__(cuMemcpyDtoH) *dtoh;
    __typeof__(cuMemcpyDtoD) *dtod;
    __typeof__(cuMemcpy) *copy;
} fns_t;

/* base name, exported legacy name, exported per-thread name (NULL: none) */
static const struct {
    const char *symbol, *legacy, *pt;
    size_t off;
} rows[] = {
    {"cuMemAlloc", "cuMemAlloc_v2", NULL, offsetof(fns_t, alloc)},
    {"cuMemAllocHost", "cuMemAllocHost_v2", NULL, offsetof(fns_t, alloc_host)},
    {"cuMemAllocAsync", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", offsetof(fns_t, alloc_async)},
    {"cuMemFree", "cuMemFree_v2", NULL, offsetof(fns_t, free)},
    {"cuMemFreeHost", "cuMemFreeHost", NULL, offsetof(fns_t, free_host)},
    {"cuMemFreeAsync", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", offsetof(fns_t, free_async)},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", offsetof(fns_t, htod)},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz", offsetof(fns_t, htod_async)},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", offsetof(fns_t, dtoh)},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds", offsetof(fns_t, dtod)},
    {"cuMemcpy", "cuMemcpy", "cuMemcpy_ptds", offsetof(fns_t, copy)},
};
#define NROWS (sizeof rows / sizeof rows[0])

/* "fetched NAME: ..." for p, the function exported as `name`; 0 when p is
   either that export's interposer or the driver's function itself */
static int whose(const char *name, void *p) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *drv = h ? dlsym(h, name) : NULL, *dflt = dlsym(RTLD_DEFAULT, name);
    int bad = !p || (p != drv && p != dflt);
    printf("fetched %s: %s\n", name, p == drv ? "the driver's" : p == dflt ? "ours" : "other");
    if (h) dlclose(h);
    return bad;
}

/* Fills f through gpa (v1: the 4-argument one) at version, flags. */
static void fetch(fns_t *f, void *gpa, int v1, int version, cuuint64_t flags) {
    size_t i;
    for (i = 0; i < NROWS; i++) {
        void *p = NULL;
        CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
        const char *name = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && rows[i].pt ? rows[i].pt
                                                                                                 : rows[i].legacy;
        CUresult rc = v1 ? ((gpa1_t)gpa)(rows[i].symbol, &p, version, flags)
                         : ((gpa2_t)gpa)(rows[i].symbol, &p, version, flags, &st);
        check(rows[i].symbol, rc, 0);
        if (!v1) check("symbolStatus", (int)st, CU_GET_PROC_ADDRESS_SUCCESS);
        check(name, whose(name, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
        memcpy((char *)f + rows[i].off, &p, sizeof p);
    }
}

#define U(p) ((CUdeviceptr)(uintptr_t)(p))
static const char *expect =
    "{\"total\": {\"h2d_bytes\": 3000, \"h2d_count\": 2, \"d2h_bytes\": 400, \"d2h_count\": 2, "
    "\"d2d_bytes\": 400, \"d2d_count\": 1}, "
    "\"prefill\": {\"h2d_bytes\": 3000, \"h2d_count\": 2, \"d2h_count\": 0, \"d2d_count\": 0}, "
    "\"decode\": {\"h2d_count\": 0, \"d2h_bytes\": 400, \"d2h_count\": 2, \"d2d_bytes\": 400, \"d2d_count\": 1}, "
    "\"unphased\": {\"h2d_count\": 0, \"d2h_count\": 0, \"d2d_count\": 0}, "
    "\"memory\": {\"device\": {\"current_bytes\": 1048576, \"peak_bytes\": 1118208, \"live\": 1, \"allocs\": 3, "
    "\"frees\": 2, \"pending_frees\": 0}, "
    "\"pinned\": {\"current_bytes\": 0, \"peak_bytes\": 8192, \"live\": 0, \"allocs\": 1, \"frees\": 1}}, "
    "\"pinned\": {\"blocks\": 0, \"held_bytes\": 0, \"peak_held_bytes\": 8192, \"allocs\": 1, \"frees\": 1}, "
    "\"counters\": {\"preload_failed_calls\": 1}}";

/* The sequence: device 1 MiB + 64 KiB + 4096 (stream-ordered), pinned
   8192; H2D 1000 + 2000 in prefill, D2H 300 + 100 (inferred) and D2D
   400 in decode; a 0-byte allocation fails. */
static int sequence(const fns_t *f) {
    CUdeviceptr d, d2, a, bad;
    CUcontext c0;
    char host[4096], *h;
    memset(host, 3, sizeof host);
    check("cuInit", cuInit(0), 0);
    check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c0, 0), 0);
    check("cuCtxSetCurrent", cuCtxSetCurrent(c0), 0);
    check("alloc d", f->alloc(&d, 1 << 20), 0);
    check("alloc d2", f->alloc(&d2, 65536), 0);
    check("alloc_async", f->alloc_async(&a, 4096, NULL), 0);
    check("alloc_host", f->alloc_host((void **)&h, 8192), 0);
    phase(PREFILL);
    check("htod", f->htod(d, host, 1000), 0);
    check("htod_async (pinned source)", f->htod_async(d, h, 2000, NULL), 0);
    phase(DECODE);
    check("dtoh", f->dtoh(host, d, 300), 0);
    check("dtod", f->dtod(d2, d, 400), 0);
    check("copy (inferred D2H)", f->copy(U(host), d, 100), 0);
    check("alloc 0 bytes", f->alloc(&bad, 0), CUDA_ERROR_INVALID_VALUE);
    check("free_async", f->free_async(a, NULL), 0);
    check("cuStreamSynchronize", cuStreamSynchronize(NULL), 0);
    check("free d2", f->free(d2), 0);
    check("free_host", f->free_host(h), 0);
    return done(expect);
}

static int mode_nested(fns_t *f, int v1) {
    void *g2 = NULL, *g1 = NULL;
    CUdriverProcAddressQueryResult st;
    check("cuGetProcAddress_v2 at 12000", cuGetProcAddress_v2("cuGetProcAddress", &g2, 12000, 0, &st), 0);
    check("cuGetProcAddress_v2 at 11030", cuGetProcAddress_v2("cuGetProcAddress", &g1, 11030, 0, &st), 0);
    check("cuGetProcAddress_v2", whose("cuGetProcAddress_v2", g2) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    check("cuGetProcAddress", whose("cuGetProcAddress", g1) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    if (!g1 || !g2) return done(NULL);
    if (v1) fetch(f, g1, 1, 11030, CU_GET_PROC_ADDRESS_DEFAULT);
    else fetch(f, g2, 0, 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    return sequence(f);
}

/* rc and status of one lookup, and the pointer's owner (NULL: none) */
static void rule(const char *what, const char *symbol, int version, cuuint64_t flags, CUresult want_rc,
                 int want_st, const char *name) {
    void *p = (void *)1, *p1 = (void *)1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)7;
    CUresult rc = cuGetProcAddress_v2(symbol, &p, version, flags, &st);
    CUresult rc1 = cuGetProcAddress(symbol, &p1, version, flags);
    check(what, rc, want_rc);
    check(what, (int)st, want_st);
    /* 11.3's contract: not found is an error */
    check(what, rc1, want_rc == CUDA_SUCCESS && !name ? CUDA_ERROR_NOT_FOUND : want_rc);
    if (want_rc != CUDA_SUCCESS) {
        check("pfn untouched", p == (void *)1 && p1 == (void *)1 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, 0);
    } else if (!name) {
        check("pfn NULL", !p && !p1 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, 0);
    } else {
        check(name, whose(name, p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
        check("the same from both exports", p == p1 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN, 0);
    }
}

static int mode_rules(void) {
    const int PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, L = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    void *p = NULL;
    rule("cuMemAlloc at 3000", "cuMemAlloc", 3000, 0, CUDA_SUCCESS, 0, "cuMemAlloc");
    rule("cuMemAlloc at 3020", "cuMemAlloc", 3020, 0, CUDA_SUCCESS, 0, "cuMemAlloc_v2");
    rule("cuMemcpyHtoD per-thread at 6050", "cuMemcpyHtoD", 6050, PT, CUDA_SUCCESS, 0, "cuMemcpyHtoD_v2");
    rule("cuMemcpyHtoD per-thread at 7000", "cuMemcpyHtoD", 7000, PT, CUDA_SUCCESS, 0, "cuMemcpyHtoD_v2_ptds");
    rule("cuMemcpyHtoD legacy at 13000", "cuMemcpyHtoD", 13000, L, CUDA_SUCCESS, 0, "cuMemcpyHtoD_v2");
    rule("cuMemAlloc per-thread (none: the legacy one)", "cuMemAlloc", 12000, PT, CUDA_SUCCESS, 0, "cuMemAlloc_v2");
    rule("cuMemFreeAsync per-thread", "cuMemFreeAsync", 11020, PT, CUDA_SUCCESS, 0, "cuMemFreeAsync_ptsz");
    rule("cuMemAllocAsync at 11010", "cuMemAllocAsync", 11010, 0, CUDA_SUCCESS,
         CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, NULL);
    rule("unknown name", "cuNoSuchFunction", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, NULL);
    rule("NULL symbol", NULL, 12000, 0, CUDA_ERROR_INVALID_VALUE, 7, NULL);
    rule("flags 4", "cuMemAlloc", 12000, 4, CUDA_ERROR_INVALID_VALUE, 7, NULL);
    rule("flags 3", "cuMemAlloc", 12000, 3, CUDA_ERROR_INVALID_VALUE, 7, NULL);
    rule("version above the driver's", "cuMemAlloc", 13010, 0, CUDA_ERROR_INVALID_VALUE, 7, NULL);
    rule("cuCtxGetCurrent (not intercepted)", "cuCtxGetCurrent", 12000, 0, CUDA_SUCCESS, 0, "cuCtxGetCurrent");
    rule("cuMemGetInfo (not intercepted)", "cuMemGetInfo", 12000, 0, CUDA_SUCCESS, 0, "cuMemGetInfo_v2");
    check("NULL pfn", cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    check("no symbolStatus", cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 0, NULL), 0);
    check("cuMemAlloc_v2", whose("cuMemAlloc_v2", p) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, 0);
    return done(NULL);
}

int main(int argc, char **argv) {
    const cuuint64_t L = CU_GET_PROC_ADDRESS_LEGACY_STREAM, PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    const char *mode = argc > 1 ? argv[1] : "";
    fns_t f = {cuMemAlloc, cuMemAllocHost, cuMemAllocAsync, cuMemFree, cuMemFreeHost, cuMemFreeAsync,
               cuMemcpyHtoD, cuMemcpyHtoDAsync, cuMemcpyDtoH, cuMemcpyDtoD, cuMemcpy};
    if (!strcmp(mode, "linked")) return sequence(&f);
    memset(&f, 0, sizeof f);
    if (!strcmp(mode, "v2")) fetch(&f, (void *)(uintptr_t)&cuGetProcAddress_v2, 0, 12000, L);
    else if (!strcmp(mode, "v1")) fetch(&f, (void *)(uintptr_t)&cuGetProcAddress, 1, 11030, 0);
    else if (!strcmp(mode, "ptds")) fetch(&f, (void *)(uintptr_t)&cuGetProcAddress_v2, 0, 13000, PT);
    else if (!strcmp(mode, "nested2")) return mode_nested(&f, 0);
    else if (!strcmp(mode, "nested1")) return mode_nested(&f, 1);
    else if (!strcmp(mode, "rules")) return mode_rules();
    else {
        fprintf(stderr, "usage: entry_driver linked|v2|v1|ptds|nested1|nested2|rules\n");
        return 2;
    }
    return sequence(&f);
}
