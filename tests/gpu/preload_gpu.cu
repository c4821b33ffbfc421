/* preload_gpu.cu - the LD_PRELOAD library (build/libmemobs_preload.so) on a
   real GPU, for tests/gpu/test_gpu_preload.sh (`make gpu-preload-test`):
   a CUDA program that knows nothing of memobs, linked with the real
   libcudart.so (-cudart shared) and libcuda.so.1 (-lcuda), run with and
   without the preload. What tests/preload/test_preload.sh, test_preload_entry.sh and
   test_preload_vmm.sh check against the doubles, here against NVIDIA's
   runtime and driver. Each mode prints every return code ("rcs:"), the
   figures the JSON summary must hold ("expect: {json}") and exits 1 when a
   call did not return what the documentation says; under the preload
   (memobs' API found with dlsym) it also checks memobs' figures after each
   step ("steps: N exact").

   preload_gpu MODE
     probe      "devices: N"; exits 1 with none
     runtime    cudaMalloc, cudaMallocHost, cudaMemcpy, cudaMemcpyAsync (and
                a cudaMemcpyDefault from device to pageable memory), cudaFree,
                cudaFreeHost: the linked runtime calls
     entry      cuMemAlloc, cuMemcpyHtoD, cuMemcpyDtoH, cuMemFree through
                pointers from cudaGetDriverEntryPoint,
                cudaGetDriverEntryPointByVersion (legacy and per-thread),
                cuGetProcAddress (cuda.h's, cuGetProcAddress_v2; legacy and
                per-thread) and the driver's four-argument cuGetProcAddress
                where the driver exports it; the six VMM calls fetched each
                way: "fetched NAME by WAY: ours | the driver's | other" (under
                the preload every one must be "ours"); and "driver: ..."
                lines, facts about the driver asked past the preload
                (dlopen("libcuda.so.1") + dlsym): whether its
                cuGetProcAddress hands out the exported function's address
     vmm        PyTorch's expandable segments with the linked driver calls:
                cuMemGetAllocationGranularity, cuMemAddressReserve of a large
                range, cuMemCreate + cuMemMap + cuMemSetAccess per granule as
                the segment grows, cudaMemcpy(Async) with cudaMemcpyDefault
                into and out of the mapped range, cuMemUnmap + cuMemRelease as
                it shrinks, a handle released while mapped, one cuMemUnmap
                over two mappings ("driver: ..." says whether this driver
                takes it), cuMemAddressFree
     vmm_entry  the same with every driver call taken from
                cudaGetDriverEntryPointByVersion at 12000, as PyTorch's
                driver table does

   Uses device 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../preload/rc_check.h" /* check, done, phase, PREFILL, DECODE */

#define U(p) ((CUdeviceptr)(uintptr_t)(p))
#define P(d) ((char *)(uintptr_t)(d))

static void expect_true(const char *what, bool ok) {
    if (!ok) {
        fprintf(stderr, "%s: false\n", what);
        fails++;
    }
}

/* memobs' API, where the preload is there */
static uint64_t (*dev_bytes)(int, uint64_t *);
static int steps, step_bad;

static void find_memobs(void) {
    void *f = dlsym(RTLD_DEFAULT, "memobs_get_device_bytes");
    memcpy(&dev_bytes, &f, sizeof f);
}

/* after a step: memobs holds cur bytes of device 0, with peak */
static void step(const char *what, uint64_t cur, uint64_t peak) {
    uint64_t got, gpeak = 0;
    steps++;
    if (!dev_bytes) return;
    got = dev_bytes(0, &gpeak);
    if ((got != cur || gpeak != peak) && !step_bad++)
        fprintf(stderr, "step %d (%s): device 0 current %llu peak %llu, expected %llu and %llu\n", steps, what,
                (unsigned long long)got, (unsigned long long)gpeak, (unsigned long long)cur, (unsigned long long)peak);
}

static void *libcuda(void) {
    static void *h;
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    return h;
}

/* ------------------------------------------------------------------ probe */

static int run_probe(void) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        printf("devices: 0 (%s)\n", cudaGetErrorString(rc));
        return 1;
    }
    printf("devices: %d\n", n);
    return n > 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- runtime */

static int run_runtime(void) {
    const size_t MiB = (size_t)1 << 20;
    char *d1 = NULL, *d2 = NULL, *ph = NULL, *hb = (char *)malloc(MiB), *back = (char *)malloc(MiB);
    cudaStream_t s = NULL;
    char e[1024];
    size_t i;
    if (!hb || !back) return 2;
    for (i = 0; i < MiB; i++) hb[i] = (char)(i * 13 + 1);
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cudaStreamCreate", cudaStreamCreate(&s), 0);
    phase(PREFILL);
    check("cudaMalloc 8 MiB", cudaMalloc((void **)&d1, 8 * MiB), 0);
    step("cudaMalloc 8 MiB", 8 * MiB, 8 * MiB);
    check("cudaMalloc 4 MiB", cudaMalloc((void **)&d2, 4 * MiB), 0);
    step("cudaMalloc 4 MiB", 12 * MiB, 12 * MiB);
    check("cudaMallocHost 1 MiB", cudaMallocHost((void **)&ph, MiB), 0);
    check("cudaMemcpy H2D 1 MiB", cudaMemcpy(d1, hb, MiB, cudaMemcpyHostToDevice), 0);
    memcpy(ph, hb, MiB / 2);
    check("cudaMemcpyAsync H2D 512 KiB pinned", cudaMemcpyAsync(d2, ph, MiB / 2, cudaMemcpyHostToDevice, s), 0);
    check("cudaMemcpyAsync D2H 256 KiB pinned", cudaMemcpyAsync(ph + MiB / 2, d1, MiB / 4, cudaMemcpyDeviceToHost, s), 0);
    check("cudaStreamSynchronize", cudaStreamSynchronize(s), 0);
    expect_true("256 KiB back through pinned memory", !memcmp(ph + MiB / 2, hb, MiB / 4));
    check("cudaMemcpy D2D 100000", cudaMemcpy(d2 + MiB, d1, 100000, cudaMemcpyDeviceToDevice), 0);
    check("cudaMemcpy Default D2H 4096 pageable", cudaMemcpy(back, d2 + MiB, 4096, cudaMemcpyDefault), 0);
    expect_true("4096 bytes back", !memcmp(back, hb, 4096));
    check("cudaFree 8 MiB", cudaFree(d1), 0);
    step("cudaFree 8 MiB", 4 * MiB, 12 * MiB);
    check("cudaFree 4 MiB", cudaFree(d2), 0);
    step("cudaFree 4 MiB", 0, 12 * MiB);
    check("cudaFreeHost", cudaFreeHost(ph), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(s), 0);
    free(hb);
    free(back);
    printf("steps: %d %s\n", steps, step_bad ? "not exact" : "exact");
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %zu, \"h2d_count\": 2, \"d2h_bytes\": %zu, \"d2h_count\": 2, "
             "\"d2d_bytes\": 100000, \"d2d_count\": 1}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": %zu, \"live\": 0, \"allocs\": 2, "
             "\"frees\": 2}, \"pinned\": {\"current_bytes\": 0, \"peak_bytes\": %zu, \"allocs\": 1, \"frees\": 1}}}",
             MiB + MiB / 2, MiB / 4 + 4096, 12 * MiB, MiB);
    return done(e) || step_bad;
}

/* ------------------------------------------------------------------ entry */

/* the ways a program takes a driver function */
enum { GET, GETV, GETV_PT, PROC, PROC_PT, PROC_V1, NWAYS };
static const char *const way_name[NWAYS] = {
    "cudaGetDriverEntryPoint",       "cudaGetDriverEntryPointByVersion", "cudaGetDriverEntryPointByVersion per-thread",
    "cuGetProcAddress_v2",           "cuGetProcAddress_v2 per-thread",   "cuGetProcAddress (four arguments)"};

typedef CUresult (*proc_v1_t)(const char *, void **, int, cuuint64_t);

/* the driver's four-argument cuGetProcAddress (CUDA 11.3), where it still
   exports it; called as the program would find it (through the preload
   when it is there) */
static proc_v1_t proc_v1(void) {
    void *f = libcuda() && dlsym(libcuda(), "cuGetProcAddress") ? dlsym(RTLD_DEFAULT, "cuGetProcAddress") : NULL;
    proc_v1_t p;
    memcpy(&p, &f, sizeof f);
    return p;
}

/* asks way for symbol at CUDA 12.0; the status must say found */
static void *fetch(int way, const char *symbol) {
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    CUdriverProcAddressQueryResult cst = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    char what[160];
    snprintf(what, sizeof what, "%s(%s)", way_name[way], symbol);
    switch (way) {
    case GET:
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* deprecated in CUDA 13.0; programs still call it */
        check(what, cudaGetDriverEntryPoint(symbol, &p, cudaEnableDefault, &st), 0);
#pragma GCC diagnostic pop
        break;
    case GETV: check(what, cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &st), 0); break;
    case GETV_PT:
        check(what, cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnablePerThreadDefaultStream, &st), 0);
        break;
    case PROC: check(what, cuGetProcAddress(symbol, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &cst), 0); break;
    case PROC_PT:
        check(what, cuGetProcAddress(symbol, &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &cst), 0);
        break;
    default: check(what, proc_v1()(symbol, &p, 12000, 0), 0); break;
    }
    if (way <= GETV_PT) check("driverStatus", (int)st, cudaDriverEntryPointSuccess);
    else if (way != PROC_V1) check("symbolStatus", (int)cst, CU_GET_PROC_ADDRESS_SUCCESS);
    expect_true("a pointer", p != NULL);
    return p;
}

/* "fetched NAME by WAY: ..."; under the preload p must be memobs' interposer of name */
static void whose(int way, const char *name, void *p) {
    void *drv = libcuda() ? dlsym(libcuda(), name) : NULL, *dflt = dlsym(RTLD_DEFAULT, name);
    const char *w = p && p == dflt && dflt != drv ? "ours" : p && p == drv ? "the driver's" : "other";
    printf("fetched %s by %s: %s\n", name, way_name[way], w);
    if (dev_bytes && strcmp(w, "ours")) {
        fprintf(stderr, "fetched %s by %s under the preload: %s, not memobs' interposer\n", name, way_name[way], w);
        fails++;
    }
}

/* facts about the driver, asked past the preload: does its
   cuGetProcAddress_v2 hand out the exported function's address? */
static void driver_facts(void) {
    static const struct {
        const char *symbol, *exported;
        cuuint64_t flags;
    } rows[] = {
        {"cuMemAlloc", "cuMemAlloc_v2", CU_GET_PROC_ADDRESS_DEFAULT},
        {"cuMemFree", "cuMemFree_v2", CU_GET_PROC_ADDRESS_DEFAULT},
        {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", CU_GET_PROC_ADDRESS_DEFAULT},
        {"cuMemcpyHtoD", "cuMemcpyHtoD_v2_ptds", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM},
        {"cuMemCreate", "cuMemCreate", CU_GET_PROC_ADDRESS_DEFAULT},
        {"cuMemMap", "cuMemMap", CU_GET_PROC_ADDRESS_DEFAULT},
    };
    typedef CUresult (*proc_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    void *f = libcuda() ? dlsym(libcuda(), "cuGetProcAddress_v2") : NULL;
    proc_t proc;
    size_t i;
    int version = 0;
    void *g = libcuda() ? dlsym(libcuda(), "cuDriverGetVersion") : NULL;
    CUresult (*get_version)(int *);
    memcpy(&proc, &f, sizeof f);
    memcpy(&get_version, &g, sizeof g);
    if (get_version && get_version(&version) == CUDA_SUCCESS) printf("driver: version %d\n", version);
    if (!proc) {
        printf("driver: no cuGetProcAddress_v2 in libcuda.so.1\n");
        return;
    }
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        void *p = NULL, *e = dlsym(libcuda(), rows[i].exported);
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult rc = proc(rows[i].symbol, &p, 12000, rows[i].flags, &st);
        printf("driver: cuGetProcAddress_v2(\"%s\", 12000, %s) %s dlsym(libcuda, \"%s\") (rc %d, status %d, %p, %p)\n",
               rows[i].symbol, rows[i].flags ? "per-thread" : "0", p == e ? "==" : "!=", rows[i].exported, (int)rc,
               (int)st, p, e);
    }
    printf("driver: four-argument cuGetProcAddress exported: %s\n",
           dlsym(libcuda(), "cuGetProcAddress") ? "yes" : "no");
}

static int run_entry(void) {
    static const char *const vmm[] = {"cuMemCreate",  "cuMemRelease",        "cuMemMap",
                                      "cuMemUnmap",   "cuMemAddressReserve", "cuMemAddressFree"};
    char host[4096], back[4096], e[1024];
    int way, nways = 0, i;
    memset(host, 7, sizeof host);
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cudaDeviceSynchronize", cudaDeviceSynchronize(), 0);
    driver_facts();
    phase(PREFILL);
    for (way = 0; way < NWAYS; way++) {
        int pt = way == GETV_PT || way == PROC_PT;
        void *a, *f, *h, *d;
        CUresult (*alloc)(CUdeviceptr *, size_t);
        CUresult (*mfree)(CUdeviceptr);
        CUresult (*htod)(CUdeviceptr, const void *, size_t);
        CUresult (*dtoh)(void *, CUdeviceptr, size_t);
        CUdeviceptr dp = 0;
        if (way == PROC_V1 && !proc_v1()) {
            printf("fetched: no four-argument cuGetProcAddress in this driver\n");
            continue;
        }
        nways++;
        a = fetch(way, "cuMemAlloc");
        f = fetch(way, "cuMemFree");
        h = fetch(way, "cuMemcpyHtoD");
        d = fetch(way, "cuMemcpyDtoH");
        whose(way, "cuMemAlloc_v2", a);
        whose(way, "cuMemFree_v2", f);
        whose(way, pt ? "cuMemcpyHtoD_v2_ptds" : "cuMemcpyHtoD_v2", h);
        whose(way, pt ? "cuMemcpyDtoH_v2_ptds" : "cuMemcpyDtoH_v2", d);
        for (i = 0; i < 6; i++) whose(way, vmm[i], fetch(way, vmm[i]));
        if (!a || !f || !h || !d) continue;
        memcpy(&alloc, &a, sizeof a);
        memcpy(&mfree, &f, sizeof f);
        memcpy(&htod, &h, sizeof h);
        memcpy(&dtoh, &d, sizeof d);
        check("cuMemAlloc 1 MiB", alloc(&dp, 1 << 20), 0);
        step("cuMemAlloc", 1 << 20, 1 << 20);
        check("cuMemcpyHtoD 1000", htod(dp + 64, host, 1000), 0);
        memset(back, 0, sizeof back);
        check("cuMemcpyDtoH 300", dtoh(back, dp + 64, 300), 0);
        expect_true("300 bytes back", !memcmp(back, host, 300));
        check("cuMemFree", mfree(dp), 0);
        step("cuMemFree", 0, 1 << 20);
    }
    printf("steps: %d %s\n", steps, step_bad ? "not exact" : "exact");
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %d, \"h2d_count\": %d, \"d2h_bytes\": %d, \"d2h_count\": %d}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": %d, \"live\": 0, \"allocs\": %d, "
             "\"frees\": %d}}}",
             1000 * nways, nways, 300 * nways, nways, 1 << 20, nways, nways);
    return done(e) || step_bad;
}

/* -------------------------------------------------------------------- vmm */

/* the driver calls of an expandable segment: linked, or from the runtime's entry points */
struct drv_t {
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
};
static drv_t drv;

static void drv_linked(void) {
    drv.granularity = cuMemGetAllocationGranularity;
    drv.reserve = cuMemAddressReserve;
    drv.addr_free = cuMemAddressFree;
    drv.create = cuMemCreate;
    drv.release = cuMemRelease;
    drv.map = cuMemMap;
    drv.unmap = cuMemUnmap;
    drv.set_access = cuMemSetAccess;
}

static void drv_entry(void) {
    static const struct {
        const char *name;
        size_t off;
        bool ours; /* intercepted by memobs */
    } rows[] = {
        {"cuMemGetAllocationGranularity", offsetof(drv_t, granularity), false},
        {"cuMemAddressReserve", offsetof(drv_t, reserve), true},
        {"cuMemAddressFree", offsetof(drv_t, addr_free), true},
        {"cuMemCreate", offsetof(drv_t, create), true},
        {"cuMemRelease", offsetof(drv_t, release), true},
        {"cuMemMap", offsetof(drv_t, map), true},
        {"cuMemUnmap", offsetof(drv_t, unmap), true},
        {"cuMemSetAccess", offsetof(drv_t, set_access), false},
    };
    size_t i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        void *p = fetch(GETV, rows[i].name);
        if (rows[i].ours) whose(GETV, rows[i].name, p);
        memcpy((char *)&drv + rows[i].off, &p, sizeof p);
    }
}

typedef struct {
    CUdeviceptr base;
    size_t gran;
    CUmemGenericAllocationHandle h[64];
    int n;
} seg_t;

static CUmemAllocationProp prop0(void) {
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    return p;
}

/* grows s to n granules: create and map each, then one cuMemSetAccess over the new ones (as PyTorch does) */
static void grow(seg_t *s, int n) {
    CUmemAllocationProp p = prop0();
    CUmemAccessDesc a;
    int i, from = s->n;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = 0;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (i = from; i < n; i++) {
        check("cuMemCreate", drv.create(&s->h[i], s->gran, &p, 0), 0);
        check("cuMemMap", drv.map(s->base + i * s->gran, s->gran, 0, s->h[i], 0), 0);
    }
    if (n > from) check("cuMemSetAccess", drv.set_access(s->base + from * s->gran, (size_t)(n - from) * s->gran, &a, 1), 0);
    if (n > from) s->n = n;
}

/* shrinks s to n granules, from the top: unmap, release */
static void shrink(seg_t *s, int n) {
    while (s->n > n) {
        s->n--;
        check("cuMemUnmap", drv.unmap(s->base + s->n * s->gran, s->gran), 0);
        check("cuMemRelease", drv.release(s->h[s->n]), 0);
    }
}

static int run_vmm(bool entry) {
    static const int sizes[] = {3, 5, 2, 6, 1, 4, 0};
    const size_t RESERVE = (size_t)1 << 30; /* 1 GiB of addresses: room to grow */
    CUmemAllocationProp p = prop0();
    cudaStream_t st = NULL;
    seg_t s;
    size_t G = 0, i, len, off;
    uint64_t cur, peak = 0, h2d = 0, d2h = 0, d2d = 0;
    int nh2d = 0, nd2h = 0, nd2d = 0, allocs = 0, c;
    CUresult rc;
    char *host, *back, e[1024];
    memset(&s, 0, sizeof s);
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cudaStreamCreate", cudaStreamCreate(&st), 0);
    if (entry) drv_entry();
    else drv_linked();
    if (!drv.granularity || !drv.reserve || !drv.addr_free || !drv.create || !drv.release || !drv.map ||
        !drv.unmap || !drv.set_access)
        return done(NULL) | 1;
    check("cuMemGetAllocationGranularity", drv.granularity(&G, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM), 0);
    printf("granularity: %zu\n", G);
    if (G == 0 || G > ((size_t)64 << 20)) return done(NULL) | 1;
    host = (char *)malloc(3 * G);
    back = (char *)malloc(3 * G);
    if (!host || !back) return 2;
    for (i = 0; i < 3 * G; i++) host[i] = (char)(i * 7 + 3);
    check("cuMemAddressReserve 1 GiB", drv.reserve(&s.base, RESERVE, 0, 0, 0), 0);
    s.gran = G;
    phase(PREFILL);
    for (c = 0; c < (int)(sizeof sizes / sizeof sizes[0]); c++) {
        int n = sizes[c];
        if (n > s.n) {
            allocs += n - s.n;
            grow(&s, n);
        } else {
            shrink(&s, n);
        }
        cur = (uint64_t)s.n * G;
        if (cur > peak) peak = cur;
        step(n > 0 ? "grow/shrink" : "shrunk to nothing", cur, peak);
        if (n >= 2) { /* across the first two granules, in and out, and within */
            off = G - 4096;
            len = 8192 + (size_t)c;
            memset(back, 0, len);
            check("cudaMemcpy H2D (Default) across two granules", cudaMemcpy(P(s.base) + off, host, len, cudaMemcpyDefault), 0);
            check("cudaMemcpyAsync D2H (Default)", cudaMemcpyAsync(back, P(s.base) + off, len, cudaMemcpyDefault, st), 0);
            check("cudaStreamSynchronize", cudaStreamSynchronize(st), 0);
            expect_true("bytes back from the segment", !memcmp(back, host, len));
            check("cudaMemcpy D2D (Default) within the segment", cudaMemcpy(P(s.base) + G, P(s.base), 1000, cudaMemcpyDefault), 0);
            h2d += len;
            d2h += len;
            d2d += 1000;
            nh2d++;
            nd2h++;
            nd2d++;
        }
    }
    /* three granules filled and read back with one copy each */
    grow(&s, 3);
    allocs += 3;
    step("grow to 3", 3 * G, peak);
    memset(back, 0, 3 * G);
    check("cudaMemcpy H2D 3 granules", cudaMemcpy(P(s.base), host, 3 * G, cudaMemcpyDefault), 0);
    check("cudaMemcpy D2H 3 granules", cudaMemcpy(back, P(s.base), 3 * G, cudaMemcpyDefault), 0);
    expect_true("3 granules back", !memcmp(back, host, 3 * G));
    h2d += 3 * G;
    d2h += 3 * G;
    nh2d++;
    nd2h++;
    /* released while mapped: the memory stays until the unmap */
    check("cuMemRelease of a mapped handle", drv.release(s.h[2]), 0);
    step("released, still mapped", 3 * G, peak);
    memset(back, 0, 4096);
    check("cudaMemcpy D2H from the released, mapped granule", cudaMemcpy(back, P(s.base) + 2 * G, 4096, cudaMemcpyDefault), 0);
    expect_true("a released, mapped granule still holds its bytes", !memcmp(back, host + 2 * G, 4096));
    d2h += 4096;
    nd2h++;
    check("cuMemUnmap of the released handle", drv.unmap(s.base + 2 * G, G), 0);
    s.n = 2;
    step("unmapped: freed", 2 * G, peak);
    /* one unmap over two adjacent mappings (the runtime double allows it; cuda.h
       only forbids a sub-range of one mapping): recorded, and where this
       driver refuses it, one unmap each */
    rc = drv.unmap(s.base, 2 * G);
    printf("driver: one cuMemUnmap over two adjacent mappings: rc %d\n", (int)rc);
    check("cuMemUnmap of two mappings (the same rc with and without the preload)", rc, rc);
    if (rc != CUDA_SUCCESS) {
        check("cuMemUnmap h0", drv.unmap(s.base, G), 0);
        check("cuMemUnmap h1", drv.unmap(s.base + G, G), 0);
    }
    step("unmapped, not released: still there", 2 * G, peak);
    check("cuMemRelease h0", drv.release(s.h[0]), 0);
    check("cuMemRelease h1", drv.release(s.h[1]), 0);
    s.n = 0;
    step("released", 0, peak);
    check("cuMemAddressFree", drv.addr_free(s.base, RESERVE), 0);
    check("cudaStreamDestroy", cudaStreamDestroy(st), 0);
    free(host);
    free(back);
    printf("steps: %d %s\n", steps, step_bad ? "not exact" : "exact");
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %llu, \"h2d_count\": %d, \"d2h_bytes\": %llu, \"d2h_count\": %d, "
             "\"d2d_bytes\": %llu, \"d2d_count\": %d}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": %llu, \"live\": 0, \"allocs\": %d, "
             "\"frees\": %d}}}",
             (unsigned long long)h2d, nh2d, (unsigned long long)d2h, nd2h, (unsigned long long)d2d, nd2d,
             (unsigned long long)peak, allocs, allocs);
    return done(e) || step_bad;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    find_memobs();
    if (!strcmp(m, "probe")) return run_probe();
    if (!strcmp(m, "runtime")) return run_runtime();
    if (!strcmp(m, "entry")) return run_entry();
    if (!strcmp(m, "vmm")) return run_vmm(false);
    if (!strcmp(m, "vmm_entry")) return run_vmm(true);
    fprintf(stderr, "usage: %s probe|runtime|entry|vmm|vmm_entry\n", argv[0]);
    return 2;
}
