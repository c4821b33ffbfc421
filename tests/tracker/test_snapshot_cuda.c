/* PyTorch memory snapshot through memobs_cuda.h's wrappers, without a GPU:
   built against the real CUDA headers and linked with the runtime double
   (tests/cuda/cudart_double.c) by tests/tracker/test_snapshot.sh. The wrappers'
   frees mark a block pending before the runtime frees it, settle it after,
   and take the mark back when the runtime fails; stream-ordered frees stay
   pending until memobs_cuda_poll() sees their stream get there, and a
   cudaMallocAsync on that stream may get the address back first. The
   snapshot's history must show each of these as PyTorch's would
   (free_requested, free_completed; nothing left of a failed free), which
   tests/python/snapshot_check.py checks from the side file this writes.

   Usage: test_snapshot_cuda SNAPSHOT.pkl SIDE.json */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "../cuda/cudart_double.h"

#include <stdio.h>
#include <stdlib.h>

static int failed;
#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) failed = 1, printf("    # %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    } while (0)

#define MAX_EXPECT 64
static struct {
    int device;
    uint64_t addr;
    const char *action;
} ev[MAX_EXPECT];
static int nev;
static void expect(int device, const void *p, const char *action) {
    if (nev < MAX_EXPECT) {
        ev[nev].device = device;
        ev[nev].addr = (uint64_t)(uintptr_t)p;
        ev[nev].action = action;
        nev++;
    }
}

int main(int argc, char **argv) {
    void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    cudaStream_t s = NULL;
    memobs_alloc_info_t al[64];
    size_t n, i;
    FILE *f;
    int k;
    if (argc < 3) return fprintf(stderr, "usage: %s SNAPSHOT.pkl SIDE.json\n", argv[0]), 2;
    cudadbl_set_reuse(1); /* freed addresses come back, as from a real pool */
    EXPECT(memobs_torch_history_start(0) == MEMOBS_OK); /* the history on request, from here */
    EXPECT(cudaStreamCreate(&s) == cudaSuccess);
    /* cudaMalloc + cudaFree: marked, freed, settled */
    EXPECT(memobs_cudaMalloc(&a, 4096) == cudaSuccess);
    expect(0, a, "alloc");
    EXPECT(memobs_cudaFree(a) == cudaSuccess);
    expect(0, a, "free_requested");
    expect(0, a, "free_completed");
    /* a cudaFree the runtime fails: the mark is taken back, no event left */
    EXPECT(memobs_cudaMalloc(&b, 8192) == cudaSuccess);
    expect(0, b, "alloc");
    EXPECT(cudadbl_fail_next("cudaFree", 1, cudaErrorIllegalAddress) == 0);
    EXPECT(memobs_cudaFree(b) == cudaErrorIllegalAddress);
    (void)cudaGetLastError();
    /* cudaFreeAsync, settled when the stream gets there */
    EXPECT(memobs_cudaMallocAsync(&c, 1000, s) == cudaSuccess);
    expect(0, c, "alloc");
    EXPECT(cudaStreamSynchronize(s) == cudaSuccess);
    EXPECT(memobs_cudaFreeAsync(c, s) == cudaSuccess);
    expect(0, c, "free_requested");
    EXPECT(cudaStreamSynchronize(s) == cudaSuccess);
    EXPECT(memobs_cuda_poll() == 1);
    expect(0, c, "free_completed");
    /* a failed cudaFreeAsync: nothing left */
    EXPECT(memobs_cudaMallocAsync(&d, 2000, s) == cudaSuccess);
    expect(0, d, "alloc");
    EXPECT(cudadbl_fail_next("cudaFreeAsync", 1, cudaErrorIllegalAddress) == 0);
    EXPECT(memobs_cudaFreeAsync(d, s) == cudaErrorIllegalAddress);
    (void)cudaGetLastError();
    /* pending at the snapshot */
    EXPECT(memobs_cudaMallocAsync(&e, 3000, s) == cudaSuccess);
    expect(0, e, "alloc");
    EXPECT(memobs_cudaFreeAsync(e, s) == cudaSuccess);
    expect(0, e, "free_requested");

    if (memobs_write_torch_snapshot_file(argv[1]) != MEMOBS_OK) failed = 1, printf("    # snapshot not written\n");
    n = memobs_get_allocations(al, 64);
    f = fopen(argv[2], "w");
    if (!f) return printf("    # cannot write %s\n", argv[2]), 1;
    fprintf(f, "{\"allocations\": [");
    for (i = 0; i < n && i < 64; i++)
        fprintf(f, "%s{\"ptr\": %llu, \"bytes\": %llu, \"kind\": %d, \"device\": %d, \"stream\": %llu, \"pending\": %d}",
                i ? ", " : "", (unsigned long long)(uintptr_t)al[i].ptr, (unsigned long long)al[i].bytes,
                (int)al[i].kind, (int)al[i].device, (unsigned long long)(uintptr_t)al[i].stream, al[i].pending_free);
    fprintf(f, "],\n\"history\": [");
    for (k = 0; k < MEMOBS_MAX_DEVICES; k++) {
        memobs_torch_history_t h;
        memobs_get_torch_history(k, &h);
        fprintf(f, "%s{\"recorded\": %llu, \"kept\": %llu, \"dropped\": %llu, \"capacity\": %llu}", k ? ", " : "",
                (unsigned long long)h.recorded, (unsigned long long)h.kept, (unsigned long long)h.dropped,
                (unsigned long long)h.capacity);
    }
    fprintf(f, "],\n\"expected\": [");
    for (k = 0; k < nev; k++)
        fprintf(f, "%s[%d, %llu, \"%s\"]", k ? ", " : "", ev[k].device, (unsigned long long)ev[k].addr, ev[k].action);
    fprintf(f, "]}\n");
    if (fclose(f) != 0) failed = 1;
    /* the live blocks: b and d (their frees failed), e (pending) */
    EXPECT(n == 3);
    return failed;
}
