/* vmm.c - the driver's virtual memory management as PyTorch's expandable
   segments use it, for tests/preload/test_preload_vmm.sh: a program that knows
   nothing of memobs, linked with the runtime double (tests/cuda/
   cudart_double.c as libcudart.so.13, which also defines the driver's
   cu* functions), run with and without the preload. It prints every
   return code ("rcs:"), what the summary must hold ("expect:") and, under
   the preload, checks memobs' device figures after every step through
   memobs' API (dlsym finds it): "steps: N exact" or the first mismatch.
     main     reserve a range, grow and shrink a segment by 2 MiB handles
              (create, map, set access; unmap, release), copies in and out
              with cudaMemcpyDefault, a handle released while mapped, a
              host-located handle, a handle on device 1, bad calls.
     threads  4 threads growing and shrinking their own segments in one
              shared reservation: exact totals.
     full     more handles and mappings than the library built with
              MEMOBS_CUDA_MAX_VMM=4 remembers: counted, warned once. */
#include <cuda.h>
#include "../cuda/vmm_util.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "rc_check.h"

#define G ((size_t)2 << 20) /* the double's granularity */
#define U(p) ((CUdeviceptr)(uintptr_t)(p))
#define P(d) ((char *)(uintptr_t)(d))

/* memobs' figures, where the preload is there */
typedef struct {
    uint32_t handles, released, mappings, reservations;
    uint64_t handle_bytes, mapped_bytes, reserved_bytes, dropped;
} vmm_stats_t; /* memobs_cuda_vmm_stats_t's layout */
static uint64_t (*dev_bytes)(int, uint64_t *);
static int (*vmm_stats)(vmm_stats_t *);
static int steps, step_bad, step_peak = 1; /* step_peak: check the peak too */

/* After a step: memobs holds cur bytes of device d with peak (and the
   double's free memory dropped by cur). */
static void step(const char *what, int d, uint64_t cur, uint64_t peak) {
    uint64_t got, gpeak = 0;
    size_t fr = 0, tot = 0;
    int dev = 0;
    steps++;
    if (cudaGetDevice(&dev) == cudaSuccess && dev == d && cudaMemGetInfo(&fr, &tot) == cudaSuccess &&
        tot - fr != cur && !step_bad++)
        fprintf(stderr, "step %d (%s): the double's used memory %zu, expected %llu\n", steps, what, tot - fr,
                (unsigned long long)cur);
    if (!dev_bytes) return;
    got = dev_bytes(d, &gpeak);
    if ((got != cur || (step_peak && gpeak != peak)) && !step_bad++)
        fprintf(stderr, "step %d (%s): device %d current %llu peak %llu, expected %llu and %llu\n", steps, what, d,
                (unsigned long long)got, (unsigned long long)gpeak, (unsigned long long)cur,
                (unsigned long long)peak);
}

/* check(), or in a worker thread (rc_check.h's buffer is not for threads)
   a count of the calls that did not return want */
static __thread int in_worker, worker_bad;
static void ck(const char *what, int rc, int want) {
    if (!in_worker) check(what, rc, want);
    else if (rc != want) worker_bad++;
}


/* A segment at base growing and shrinking by handles of G bytes on device 0. */
typedef struct {
    CUdeviceptr base;
    CUmemGenericAllocationHandle h[64];
    int n;
} seg_t;

/* grows s to n handles: create and map each, then one cuMemSetAccess over the new ones (as PyTorch does) */
static void grow(seg_t *s, int n) {
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    int i, from = s->n;
    for (i = from; i < n; i++) {
        ck("cuMemCreate", cuMemCreate(&s->h[i], G, &p, 0), 0);
        ck("cuMemMap", cuMemMap(s->base + i * G, G, 0, s->h[i], 0), 0);
    }
    if (n > from) ck("cuMemSetAccess", vmm_set_access(s->base + from * G, (size_t)(n - from) * G, 0), 0);
    s->n = n > from ? n : from;
}

/* shrinks s to n handles, from the top: unmap, release */
static void shrink(seg_t *s, int n) {
    while (s->n > n) {
        s->n--;
        ck("cuMemUnmap", cuMemUnmap(s->base + s->n * G, G), 0);
        ck("cuMemRelease", cuMemRelease(s->h[s->n]), 0);
    }
}

static void find_memobs(void) {
    *(void **)&dev_bytes = dlsym(RTLD_DEFAULT, "memobs_get_device_bytes");
    *(void **)&vmm_stats = dlsym(RTLD_DEFAULT, "memobs_cuda_get_vmm_stats");
}

static int run_main(void) {
    static char host[3 * (2 << 20)], back[3 * (2 << 20)];
    seg_t s;
    CUdeviceptr r = 0, other = 0;
    CUmemGenericAllocationHandle h1 = 0, hh = 0, hx = 0, hbig = 0;
    CUmemAllocationProp p0 = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0), p1 = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 1),
                        ph = vmm_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
    size_t gran = 0, i;
    uint64_t peak = 0, cur;
    vmm_stats_t st;
    char e[2048];
    int cycle, sizes[] = {3, 5, 2, 6, 1, 4, 0}, h2d = 0, d2h = 0, d2d = 0, nh2d = 0, nd2h = 0, nd2d = 0, allocs = 0;
    memset(&s, 0, sizeof s);
    for (i = 0; i < sizeof host; i++) host[i] = (char)(i * 7 + 3);
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity(&gran, &p0, CU_MEM_ALLOC_GRANULARITY_MINIMUM), 0);
    check("granularity", gran == G ? 0 : 1, 0);
    check("cuMemAddressReserve", cuMemAddressReserve(&r, 64 * G, 0, 0, 0), 0);
    s.base = r;

    /* grow and shrink cycles, a copy in and out at each size */
    for (cycle = 0; cycle < (int)(sizeof sizes / sizeof sizes[0]); cycle++) {
        int n = sizes[cycle];
        phase(cycle % 2 ? DECODE : PREFILL);
        if (n > s.n) {
            allocs += n - s.n;
            grow(&s, n);
        } else {
            shrink(&s, n);
        }
        cur = (uint64_t)s.n * G;
        if (cur > peak) peak = cur;
        step(n > 0 ? "grow/shrink" : "shrunk to nothing", 0, cur, peak);
        if (n >= 2) { /* into the top of the first handle and over into the second, and back */
            size_t off = G - 4096, len = 8192 + (size_t)cycle;
            check("cudaMemcpy H2D (Default) across two handles", cudaMemcpy(P(r) + off, host, len, cudaMemcpyDefault), 0);
            check("cudaMemcpy D2H (Default)", cudaMemcpy(back, P(r) + off, len, cudaMemcpyDefault), 0);
            check("bytes back", memcmp(back, host, len) ? 1 : 0, 0);
            check("cudaMemcpy D2D (Default) within the segment", cudaMemcpy(P(r) + G, P(r), 1000, cudaMemcpyDefault), 0);
            h2d += (int)len;
            d2h += (int)len;
            d2d += 1000;
            nh2d++;
            nd2h++;
            nd2d++;
        }
    }
    phase(PREFILL);
    /* a whole 3-handle segment filled and read back with one copy each */
    grow(&s, 3);
    allocs += 3;
    cur = 3 * G;
    step("grow to 3", 0, cur, peak);
    check("cudaMemcpy H2D 6 MiB", cudaMemcpy(P(r), host, 3 * G, cudaMemcpyDefault), 0);
    check("cudaMemcpy D2H 6 MiB", cudaMemcpy(back, P(r), 3 * G, cudaMemcpyDefault), 0);
    check("6 MiB back", memcmp(back, host, 3 * G) ? 1 : 0, 0);
    h2d += (int)(3 * G);
    d2h += (int)(3 * G);
    nh2d++;
    nd2h++;

    /* released while mapped: the memory stays until the unmap */
    check("cuMemRelease of a mapped handle", cuMemRelease(s.h[2]), 0);
    step("released, still mapped", 0, 3 * G, peak);
    check("cuMemUnmap of the released handle", cuMemUnmap(r + 2 * G, G), 0);
    s.n = 2;
    step("unmapped: freed", 0, 2 * G, peak);
    /* one unmap over two mappings back to back */
    check("cuMemUnmap of two mappings", cuMemUnmap(r, 2 * G), 0);
    step("unmapped, not released: still there", 0, 2 * G, peak);
    check("cuMemRelease h0", cuMemRelease(s.h[0]), 0);
    check("cuMemRelease h1", cuMemRelease(s.h[1]), 0);
    s.n = 0;
    step("released", 0, 0, peak);

    /* one handle mapped twice (two reservations) */
    check("cuMemAddressReserve 2", cuMemAddressReserve(&other, 4 * G, 0, 0, 0), 0);
    check("cuMemCreate h1", cuMemCreate(&h1, 2 * G, &p0, 0), 0);
    allocs++;
    if (2 * G > peak) peak = 2 * G;
    check("cuMemMap h1 at r", cuMemMap(r, 2 * G, 0, h1, 0), 0);
    check("cuMemMap h1 at other", cuMemMap(other + 2 * G, 2 * G, 0, h1, 0), 0);
    check("cuMemSetAccess r", vmm_set_access(r, 2 * G, 0), 0);
    check("cuMemSetAccess other", vmm_set_access(other + 2 * G, 2 * G, 0), 0);
    step("one handle, two mappings", 0, 2 * G, peak);
    phase(DECODE);
    check("cudaMemcpy H2D into the second mapping", cudaMemcpy(P(other) + 2 * G + 100, host, 5000, cudaMemcpyDefault), 0);
    check("cudaMemcpy D2H from the first", cudaMemcpy(back, P(r) + 100, 5000, cudaMemcpyDefault), 0);
    check("the same bytes through both", memcmp(back, host, 5000) ? 1 : 0, 0);
    h2d += 5000;
    d2h += 5000;
    nh2d++;
    nd2h++;
    check("cuMemRelease h1 (mapped twice)", cuMemRelease(h1), 0);
    check("cuMemUnmap r", cuMemUnmap(r, 2 * G), 0);
    step("one mapping left", 0, 2 * G, peak);
    check("cuMemUnmap other", cuMemUnmap(other + 2 * G, 2 * G), 0);
    step("no mapping left: freed", 0, 0, peak);

    /* a host-located handle: pinned memory; copies from host memory into it cross no bus */
    check("cuMemCreate on the host", cuMemCreate(&hh, G, &ph, 0), 0);
    check("cuMemMap host handle", cuMemMap(r, G, 0, hh, 0), 0);
    check("cuMemSetAccess host handle", vmm_set_access(r, G, 0), 0);
    check("cudaMemcpy into host-located memory", cudaMemcpy(P(r), host, 3000, cudaMemcpyDefault), 0);
    step("a host-located handle is not device memory", 0, 0, peak);
    check("cuMemUnmap host handle", cuMemUnmap(r, G), 0);
    check("cuMemRelease host handle", cuMemRelease(hh), 0);
    /* a handle on device 1 */
    check("cuMemCreate on device 1", cuMemCreate(&hx, 4 * G, &p1, 0), 0);
    check("cuMemMap device-1 handle", cuMemMap(other, 4 * G, 0, hx, 0), 0);
    check("cuMemSetAccess device-1 handle", vmm_set_access(other, 4 * G, 1), 0);
    check("cudaMemcpy H2D into device 1's handle", cudaMemcpy(P(other) + 10, host, 777, cudaMemcpyDefault), 0);
    h2d += 777;
    nh2d++;
    step("device 1 handle: device 0 unchanged", 0, 0, peak);
    step("device 1 handle", 1, 4 * G, 4 * G);

    /* bad calls: the double's error unchanged, no counter touched */
    check("cuMemMap outside a reservation", cuMemMap(U(host), G, 0, hx, 0), CUDA_ERROR_INVALID_VALUE);
    check("cuMemMap over a mapping", cuMemMap(other, G, 0, hx, 0), CUDA_ERROR_INVALID_VALUE);
    check("cuMemMap misaligned", cuMemMap(r + 4096, G, 0, hx, 0), CUDA_ERROR_INVALID_VALUE);
    check("cuMemRelease of an unknown handle", cuMemRelease((CUmemGenericAllocationHandle)0xdead0000), CUDA_ERROR_INVALID_VALUE);
    check("cuMemCreate of a size off the granularity", cuMemCreate(&hbig, G + 4096, &p0, 0), CUDA_ERROR_INVALID_VALUE);
    check("cuMemCreate beyond free memory", cuMemCreate(&hbig, (size_t)64 << 30, &p0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    check("cuMemAddressFree with a mapping in it", cuMemAddressFree(other, 4 * G), CUDA_ERROR_INVALID_VALUE);
    check("cuMemUnmap a sub-range", cuMemUnmap(other, G), CUDA_ERROR_INVALID_VALUE);
    check("cuMemCreate dv", cuMemCreate(&hbig, G, &p0, 0), 0);
    allocs++;
    check("cuMemMap dv (no access set)", cuMemMap(r, G, 0, hbig, 0), 0);
    check("cudaMemcpy into a range without access", cudaMemcpy(P(r), host, 10, cudaMemcpyDefault), cudaErrorInvalidValue);
    check("cuMemUnmap dv", cuMemUnmap(r, G), 0);
    check("cuMemUnmap dv twice", cuMemUnmap(r, G), CUDA_ERROR_INVALID_VALUE);
    step("after the bad calls", 0, G, peak);
    check("cuMemRelease dv", cuMemRelease(hbig), 0);
    check("cuMemRelease dv twice", cuMemRelease(hbig), CUDA_ERROR_INVALID_VALUE);
    step("dv released", 0, 0, peak);

    /* the end: device 1's handle unmapped and released, ranges freed */
    check("cuMemUnmap device-1 handle", cuMemUnmap(other, 4 * G), 0);
    check("cuMemRelease device-1 handle", cuMemRelease(hx), 0);
    step("device 1 freed", 1, 0, 4 * G);
    check("cuMemAddressFree r", cuMemAddressFree(r, 64 * G), 0);
    check("cuMemAddressFree other", cuMemAddressFree(other, 4 * G), 0);
    if (vmm_stats && (vmm_stats(&st) != 0 || st.handles || st.mappings || st.reservations || st.dropped) && !step_bad++)
        fprintf(stderr, "memobs_cuda_get_vmm_stats at the end: %u handles, %u mappings, %u reservations, %llu dropped\n",
                st.handles, st.mappings, st.reservations, (unsigned long long)st.dropped);
    printf("steps: %d %s\n", steps, step_bad ? "not exact" : "exact");
    snprintf(e, sizeof e,
             "{\"total\": {\"h2d_bytes\": %d, \"h2d_count\": %d, \"d2h_bytes\": %d, \"d2h_count\": %d, "
             "\"d2d_bytes\": %d, \"d2d_count\": %d}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"peak_bytes\": %llu, \"live\": 0, \"allocs\": %d, "
             "\"frees\": %d}, \"pinned\": {\"current_bytes\": 0, \"peak_bytes\": %llu, \"allocs\": 1, \"frees\": 1}}, "
             "\"counters\": {\"preload_failed_calls\": 11}}",
             h2d, nh2d, d2h, nd2h, d2d, nd2d, (unsigned long long)peak, allocs + 1, allocs + 1,
             (unsigned long long)G);
    return done(e);
}

/* threads: each grows its own segment to 1..4 handles and back, 40 times,
   with a copy in and out each time, in one shared reservation */
#define NT 4
#define CYCLES 40
static CUdeviceptr shared_base;
static void *worker(void *arg) {
    int t = (int)(intptr_t)arg, c;
    seg_t s;
    static char in[NT][4096], out[NT][4096];
    memset(&s, 0, sizeof s);
    in_worker = 1;
    s.base = shared_base + (size_t)t * 4 * G;
    if (cudaSetDevice(0) != cudaSuccess) return (void *)1;
    memset(in[t], t + 1, sizeof in[t]);
    phase(DECODE);
    for (c = 0; c < CYCLES; c++) {
        grow(&s, 1 + c % 4);
        if (cudaMemcpy(P(s.base) + 100, in[t], 4096, cudaMemcpyDefault) != cudaSuccess ||
            cudaMemcpy(out[t], P(s.base) + 100, 4096, cudaMemcpyDefault) != cudaSuccess || memcmp(in[t], out[t], 4096))
            return (void *)1;
        shrink(&s, 0);
    }
    return worker_bad ? (void *)1 : NULL;
}

static int run_threads(void) {
    pthread_t th[NT];
    int t, bad = 0, c, allocs = 0;
    char e[1024];
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cuMemAddressReserve", cuMemAddressReserve(&shared_base, NT * 4 * G, 0, 0, 0), 0);
    for (t = 0; t < NT; t++) bad |= pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (t = 0; t < NT; t++) {
        void *r = NULL;
        pthread_join(th[t], &r);
        bad |= r != NULL;
    }
    check("threads", bad, 0);
    check("cuMemAddressFree", cuMemAddressFree(shared_base, NT * 4 * G), 0);
    step_peak = 0; /* the peak depends on how the threads interleave */
    step("all threads done", 0, 0, 0);
    printf("steps: %d %s\n", steps, step_bad ? "not exact" : "exact");
    for (c = 0; c < CYCLES; c++) allocs += 1 + c % 4;
    snprintf(e, sizeof e,
             "{\"decode\": {\"h2d_bytes\": %d, \"h2d_count\": %d, \"d2h_bytes\": %d, \"d2h_count\": %d}, "
             "\"memory\": {\"device\": {\"current_bytes\": 0, \"live\": 0, \"allocs\": %d, \"frees\": %d}}}",
             NT * CYCLES * 4096, NT * CYCLES, NT * CYCLES * 4096, NT * CYCLES, NT * allocs, NT * allocs);
    return done(e);
}

/* full: 6 handles, each mapped twice, against tables of 4 */
static int run_full(void) {
    CUdeviceptr r = 0;
    CUmemGenericAllocationHandle h[6];
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    vmm_stats_t st;
    int i;
    memset(&st, 0, sizeof st);
    check("cudaSetDevice", cudaSetDevice(0), 0);
    check("cuMemAddressReserve", cuMemAddressReserve(&r, 12 * G, 0, 0, 0), 0);
    for (i = 0; i < 6; i++) {
        check("cuMemCreate", cuMemCreate(&h[i], G, &p, 0), 0);
        check("cuMemMap a", cuMemMap(r + (size_t)i * G, G, 0, h[i], 0), 0);
        check("cuMemMap b", cuMemMap(r + (size_t)(6 + i) * G, G, 0, h[i], 0), 0);
    }
    check("cuMemSetAccess", vmm_set_access(r, 12 * G, 0), 0);
    if (vmm_stats) vmm_stats(&st);
    printf("full: handles %u mappings %u dropped %llu\n", st.handles, st.mappings, (unsigned long long)st.dropped);
    if (dev_bytes) printf("full: device %llu\n", (unsigned long long)dev_bytes(0, NULL));
    for (i = 0; i < 6; i++) {
        check("cuMemUnmap a", cuMemUnmap(r + (size_t)i * G, G), 0);
        check("cuMemRelease", cuMemRelease(h[i]), 0);
        check("cuMemUnmap b", cuMemUnmap(r + (size_t)(6 + i) * G, G), 0);
    }
    check("cuMemAddressFree", cuMemAddressFree(r, 12 * G), 0);
    if (vmm_stats) vmm_stats(&st);
    printf("end: handles %u mappings %u dropped %llu\n", st.handles, st.mappings, (unsigned long long)st.dropped);
    if (dev_bytes) printf("end: device %llu\n", (unsigned long long)dev_bytes(0, NULL));
    return done("{\"memory\": {\"device\": {\"current_bytes\": 0, \"live\": 0, \"allocs\": 4, \"frees\": 4}}}");
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "main";
    find_memobs();
    if (!strcmp(m, "threads")) return run_threads();
    if (!strcmp(m, "full")) return run_full();
    return run_main();
}
