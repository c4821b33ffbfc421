/* The driver's virtual memory management through memobs_cuda.h's
   memobs_cuMemCreate, memobs_cuMemMap... (what the LD_PRELOAD library
   also calls), linked with the runtime double (tests/cuda/cudart_double.c,
   which models cuMemCreate and friends as cuda.h documents them): the
   expandable-segments pattern exact at every step, a handle released while
   mapped, a host-located handle, a handle value handed out again, bad
   calls, out of memory, threads, and (built with MEMOBS_CUDA_MAX_VMM=4,
   FULL) the full tables. Built by tests/cuda/test_vmm.sh as C, C++, under
   ASan+UBSan and TSan. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include "vmm_util.h"
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "../memobs_test.h"
#include "cuda_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#define TEST_SUITE "vmm"
#endif

#define G CUDADBL_VMM_GRANULARITY
#define P(d) ((char *)(uintptr_t)(d))
#define MIB ((size_t)1 << 20)

/* All of S's transfers are zero. */
__attribute__((unused)) static int no_transfers(void) {
    const memobs_dirs_t *all[4] = {&S.total, &S.prefill, &S.decode, &S.unphased};
    int i;
    for (i = 0; i < 4; i++)
        if (all[i]->h2d.count || all[i]->d2h.count || all[i]->d2d.count) return 0;
    return 1;
}


static uint64_t dev_now(int d) { return memobs_get_device_bytes(d, NULL); }
__attribute__((unused)) static uint64_t dev_peak(int d) {
    uint64_t p = 0;
    (void)memobs_get_device_bytes(d, &p);
    return p;
}
static memobs_cuda_vmm_stats_t vstats(void) {
    memobs_cuda_vmm_stats_t s;
    memset(&s, 0, sizeof s);
    (void)memobs_cuda_get_vmm_stats(&s);
    return s;
}

/* the double's free memory on device 0 */
__attribute__((unused)) static size_t dbl_free(void) {
    size_t f = 0, t = 0;
    (void)cudaMemGetInfo(&f, &t);
    return f;
}

typedef struct {
    CUdeviceptr base;
    CUmemGenericAllocationHandle h[16];
    int n;
} seg_t;

/* PyTorch's expandable segment: create and map each new handle, one set-access over them; unmap and release from the top */
__attribute__((unused)) static int seg_resize(seg_t *s, int n) {
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    int bad = 0, from = s->n;
    for (; s->n < n; s->n++) {
        bad |= memobs_cuMemCreate(&s->h[s->n], G, &p, 0) != CUDA_SUCCESS;
        bad |= memobs_cuMemMap(s->base + (size_t)s->n * G, G, 0, s->h[s->n], 0) != CUDA_SUCCESS;
    }
    if (n > from) bad |= vmm_set_access(s->base + (size_t)from * G, (size_t)(n - from) * G, 0) != CUDA_SUCCESS;
    while (s->n > n) {
        s->n--;
        bad |= memobs_cuMemUnmap(s->base + (size_t)s->n * G, G) != CUDA_SUCCESS;
        bad |= memobs_cuMemRelease(s->h[s->n]) != CUDA_SUCCESS;
    }
    return bad;
}

#ifndef FULL

static void test_expandable_segment(void) {
    static char host[2 * 4096], back[2 * 4096];
    static const int sizes[] = {3, 5, 2, 6, 1, 4, 0};
    seg_t s;
    size_t free0, i;
    uint64_t peak = 0, h2d = 0, d2h = 0;
    long asked;
    memobs_cuda_vmm_stats_t v;
    fresh();
    memset(&s, 0, sizeof s);
    for (i = 0; i < sizeof host; i++) host[i] = (char)(i * 5 + 1);
    free0 = dbl_free();
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&s.base, 16 * G, 0, 0, 0));
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t cur = (uint64_t)sizes[i] * G;
        memobs_set_phase(i % 2 ? MEMOBS_PHASE_DECODE : MEMOBS_PHASE_PREFILL);
        CHECK_U64(0, seg_resize(&s, sizes[i]));
        if (cur > peak) peak = cur;
        CHECK_U64(cur, dev_now(0));
        CHECK_U64(peak, dev_peak(0));
        CHECK_U64(free0 - cur, dbl_free()); /* the double counts the handles against the device */
        v = vstats();
        CHECK_U64((unsigned)sizes[i], v.handles);
        CHECK_U64((unsigned)sizes[i], v.mappings);
        CHECK_U64(cur, v.handle_bytes);
        if (sizes[i] >= 2) { /* across the first two handles, with cudaMemcpyDefault */
            asked = calls("cuPointerGetAttributes");
            CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(P(s.base) + G - 4096, host, sizeof host, cudaMemcpyDefault));
            /* the mapped side is known without asking the driver: one question, for the host side */
            CHECK_U64(1, calls("cuPointerGetAttributes") - asked);
            CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(back, P(s.base) + G - 4096, sizeof back, cudaMemcpyDefault));
            CHECK(memcmp(host, back, sizeof host) == 0);
            h2d += sizeof host;
            d2h += sizeof back;
        }
    }
    v = vstats();
    CHECK_U64(1, v.reservations);
    CHECK_U64(16 * G, v.reserved_bytes);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(s.base, 16 * G));
    v = vstats();
    CHECK_U64(0, v.reservations + v.handles + v.mappings + v.released);
    snap();
    CHECK_XFER(S.total, MEMOBS_DIR_H2D, h2d, 5);
    CHECK_XFER(S.total, MEMOBS_DIR_D2H, d2h, 5);
    CHECK_U64(12, S.mem[MEMOBS_MEM_DEVICE].allocs); /* handles created by the grows: 3 + 2 + 4 + 3 */
    CHECK_U64(12, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(12 * MIB, S.mem[MEMOBS_MEM_DEVICE].peak_bytes);
}

/* released while mapped (twice): freed at the last unmap */
static void test_release_while_mapped(void) {
    CUdeviceptr a = 0, b = 0;
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 1);
    memobs_alloc_info_t info[4];
    fresh();
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 4 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&b, 4 * G, 0, 0, 0));
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h, 2 * G, &p, 0));
    CHECK_U64(1, memobs_get_allocations(info, 4));
    CHECK_U64(MEMOBS_MEM_DEVICE, info[0].kind);
    CHECK_U64(1, info[0].device); /* the location's device, not the current one (0) */
    CHECK_U64(2 * G, info[0].bytes);
    CHECK(info[0].ptr != NULL);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, 2 * G, 0, h, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(b + 2 * G, 2 * G, 0, h, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h));
    CHECK_U64(2 * G, dev_now(1));
    CHECK_U64(1, vstats().released);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(b + 2 * G, 2 * G));
    CHECK_U64(2 * G, dev_now(1));
    CHECK_U64(1, cudadbl_vmm_live(NULL));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, 2 * G));
    CHECK_U64(0, dev_now(1));
    CHECK_U64(0, cudadbl_vmm_live(NULL));
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 4 * G));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(b, 4 * G));
    snap();
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].frees);
}

/* a host-located handle is pinned memory; a copy from host memory into it crosses no bus */
static void test_host_located(void) {
    static char host[4096];
    CUdeviceptr a = 0;
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
    size_t free0;
    fresh();
    free0 = dbl_free();
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 2 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h, G, &p, 0));
    CHECK_U64(free0, dbl_free());
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, G, 0, h, 0));
    CHECK_ERR(CUDA_SUCCESS, vmm_set_access(a, G, 0));
    snap();
    CHECK_U64(G, S.mem[MEMOBS_MEM_PINNED].current_bytes);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(P(a), host, sizeof host, cudaMemcpyDefault));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, G));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 2 * G));
    snap();
    CHECK(no_transfers());
    CHECK_U64(0, S.mem[MEMOBS_MEM_PINNED].current_bytes);
    CHECK_U64(1, S.mem[MEMOBS_MEM_PINNED].frees);
}

/* the double hands a freed handle's value out again: a new block, not the old one */
static void test_value_again(void) {
    CUdeviceptr a = 0;
    CUmemGenericAllocationHandle h = 0, h2 = 0;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    fresh();
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 2 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h, G, &p, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, G, 0, h, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, G));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h2, 2 * G, &p, 0));
    CHECK_U64(h, h2);
    CHECK_U64(2 * G, dev_now(0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, 2 * G, 0, h2, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, 2 * G));
    CHECK_U64(2 * G, dev_now(0)); /* unmapped, not released */
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h2));
    CHECK_U64(0, dev_now(0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 2 * G));
    snap();
    CHECK_U64(2, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(2, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.track.frees_unknown);
}

/* bad calls return the double's error and change nothing memobs counts */
static void test_bad_calls(void) {
    static char host[64];
    CUdeviceptr a = 0;
    CUmemGenericAllocationHandle h = 0, x = 0;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0), pn = vmm_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0),
                        pd = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 7);
    memobs_cuda_vmm_stats_t v;
    fresh();
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 4 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h, G, &p, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemCreate(&x, G + 4096, &p, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemCreate(&x, G, &pn, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_DEVICE, memobs_cuMemCreate(&x, G, &pd, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemMap((CUdeviceptr)(uintptr_t)host, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemMap(a + 4096, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemMap(a, 2 * G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemMap(a, G, G, h, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemMap(a, G, 0, h, 0));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy(P(a), host, sizeof host, cudaMemcpyDefault)); /* no access yet */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemRelease(0xdead0000ull));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemAddressFree(a, 4 * G)); /* mapped in it */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemAddressFree(a, 2 * G));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemUnmap(a, 2 * G));
    v = vstats();
    CHECK_U64(1, v.handles);
    CHECK_U64(1, v.mappings);
    CHECK_U64(1, v.reservations);
    CHECK_U64(G, dev_now(0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, G));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemUnmap(a, G));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemRelease(h));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 4 * G));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, memobs_cuMemAddressFree(a, 4 * G));
    v = vstats();
    CHECK_U64(0, v.handles + v.mappings + v.reservations);
    snap();
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(0, S.track.frees_unknown);
    CHECK(no_transfers());
}

/* cuMemCreate beyond free memory: the flight recorder, with the VMM line */
static void test_oom(void) {
    CUdeviceptr a = 0;
    CUmemGenericAllocationHandle h = 0, x = 0;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    uint64_t n0 = memobs_cuda_get_oom_count();
    FILE *f = tmpfile();
    char path[64], *txt;
    fresh();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fileno(f));
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_oom_report(path));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 2 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h, G, &p, 0));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_OUT_OF_MEMORY, memobs_cuMemCreate(&x, (size_t)64 << 30, &p, 0));
    CHECK_U64(n0 + 1, memobs_cuda_get_oom_count());
    CHECK_U64(MEMOBS_OK, memobs_cuda_set_oom_report("stderr"));
    txt = read_file(f);
    CHECK(txt != NULL);
    if (txt) {
        CHECK_HAS(txt, "cuMemCreate(68719476736 bytes");
        CHECK_HAS(txt, "virtual memory (cuMemCreate/cuMemMap): 1 physical allocations, 2097152 bytes (0 released, still "
                       "mapped); 1 mapped ranges, 2097152 bytes; 1 reservations, 4194304 bytes");
        CHECK_HAS(txt, "2097152"); /* the live handle in the block table */
        free(txt);
    }
    fclose(f);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a, G));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h));
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 2 * G));
    CHECK_U64(0, dev_now(0));
}

#define NT 4
#define CYCLES 50
static CUdeviceptr shared_base;
static void *worker(void *arg) {
    int t = (int)(intptr_t)arg, c, bad = 0;
    seg_t s;
    static char in[NT][1000], out[NT][1000];
    memset(&s, 0, sizeof s);
    s.base = shared_base + (size_t)t * 4 * G;
    memset(in[t], t + 1, sizeof in[t]);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (c = 0; c < CYCLES; c++) {
        bad |= seg_resize(&s, 1 + c % 4);
        bad |= memobs_cudaMemcpy(P(s.base) + 10, in[t], sizeof in[t], cudaMemcpyDefault) != cudaSuccess;
        bad |= memobs_cudaMemcpy(out[t], P(s.base) + 10, sizeof out[t], cudaMemcpyDefault) != cudaSuccess;
        bad |= memcmp(in[t], out[t], sizeof in[t]) != 0;
        bad |= seg_resize(&s, c % 2); /* sometimes one handle stays into the next cycle */
    }
    bad |= seg_resize(&s, 0);
    return bad ? (void *)1 : NULL;
}

static void test_threads(void) {
    pthread_t th[NT];
    int t, c, grown = 0, have = 0;
    memobs_cuda_vmm_stats_t v;
    fresh();
    for (c = 0; c < CYCLES; c++) { /* handles created per thread */
        grown += 1 + c % 4 - have;
        have = c % 2;
    }
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&shared_base, NT * 4 * G, 0, 0, 0));
    for (t = 0; t < NT; t++) CHECK_U64(0, pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t));
    for (t = 0; t < NT; t++) {
        void *r = (void *)1;
        pthread_join(th[t], &r);
        CHECK(r == NULL);
    }
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(shared_base, NT * 4 * G));
    v = vstats();
    CHECK_U64(0, v.handles + v.mappings + v.reservations + v.released);
    snap();
    CHECK_XFER(S.decode, MEMOBS_DIR_H2D, NT * CYCLES * 1000, NT * CYCLES);
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, NT * CYCLES * 1000, NT * CYCLES);
    CHECK_U64((uint64_t)NT * (uint64_t)grown, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64((uint64_t)NT * (uint64_t)grown, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.mem[MEMOBS_MEM_DEVICE].current_bytes);
    CHECK_U64(0, cudadbl_vmm_live(NULL));
}

#else /* FULL: MEMOBS_CUDA_MAX_VMM=4 */

/* 6 handles each mapped twice: 4 handles and 4 mappings remembered, the
   rest counted, one warning; nothing breaks and all leaves */
static void test_full_tables(void) {
    CUdeviceptr a = 0;
    CUmemGenericAllocationHandle h[6];
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    memobs_cuda_vmm_stats_t v;
    int i;
    fresh();
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressReserve(&a, 12 * G, 0, 0, 0));
    for (i = 0; i < 6; i++) {
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemCreate(&h[i], G, &p, 0));
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a + (size_t)i * G, G, 0, h[i], 0));
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemMap(a + (size_t)(6 + i) * G, G, 0, h[i], 0));
    }
    v = vstats();
    CHECK_U64(4, v.handles);
    CHECK_U64(4, v.mappings);
    CHECK_U64(6, v.dropped); /* 2 handles, 4 mappings of tracked handles (those of untracked ones are not looked at) */
    CHECK_U64(4 * G, dev_now(0));
    CHECK_U64(1, log_has("MEMOBS_CUDA_MAX_VMM=4"));
    for (i = 0; i < 6; i++) {
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a + (size_t)i * G, G));
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemRelease(h[i]));
        CHECK_ERR(CUDA_SUCCESS, memobs_cuMemUnmap(a + (size_t)(6 + i) * G, G));
    }
    CHECK_ERR(CUDA_SUCCESS, memobs_cuMemAddressFree(a, 12 * G));
    v = vstats();
    CHECK_U64(0, v.handles + v.mappings + v.reservations);
    CHECK_U64(6, v.dropped);
    CHECK_U64(0, dev_now(0));
    CHECK_U64(1, log_count);
    log_stop();
    snap();
    CHECK_U64(4, S.mem[MEMOBS_MEM_DEVICE].allocs);
    CHECK_U64(4, S.mem[MEMOBS_MEM_DEVICE].frees);
    CHECK_U64(0, S.track.frees_unknown);
}
#endif

int main(void) {
    check__suite = TEST_SUITE;
    (void)memobs_track_set_callstack(0);
#ifndef FULL
    RUN(test_expandable_segment);
    RUN(test_release_while_mapped);
    RUN(test_host_located);
    RUN(test_value_again);
    RUN(test_bad_calls);
    RUN(test_oom);
    RUN(test_threads);
#else
    RUN(test_full_tables);
#endif
    return check__failed ? 1 : 0;
}
