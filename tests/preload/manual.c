/* A program that counts its own KV-cache copies by hand, as the nano-vllm
   seed did, for tests/preload/test_preload.sh: under the preload its
   memobs_record_xfer calls (memobs' API of the preloaded library, found with
   dlsym) are the manual figures and the copies the interposers see are
   the observed ones. Its hand count has the seed's two mistakes: the
   decode step's D2H offload is filed as prefill (one copy) and one H2D
   reload is never recorded. Prints "expect: JSON" for the caller. Without
   the preload it runs alone (no memobs: exit 0, nothing recorded). */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 4096
#define BLOCKS 8

typedef void (*record_fn)(int dir, unsigned long long bytes, int phase);
typedef int (*phase_fn)(int phase);

int main(void) {
    record_fn record = (record_fn)(void (*)(void))dlsym(RTLD_DEFAULT, "memobs_record_xfer");
    phase_fn set_phase = (phase_fn)(void (*)(void))dlsym(RTLD_DEFAULT, "memobs_set_phase");
    static char host[BLOCKS * BLOCK];
    void *dev = NULL;
    int i, bad = 0;
    if (cudaMalloc(&dev, BLOCKS * BLOCK) != cudaSuccess) return 2;
    /* prefill: 8 blocks in (H2D), each counted by hand */
    if (set_phase) set_phase(1);
    for (i = 0; i < BLOCKS; i++) {
        bad |= cudaMemcpyAsync((char *)dev + i * BLOCK, host + i * BLOCK, BLOCK, cudaMemcpyHostToDevice, 0);
        if (record) record(0, BLOCK, 1);
    }
    /* decode: 2 blocks out (D2H), the hand count files them under prefill;
       3 back in (H2D), one of them never counted */
    if (set_phase) set_phase(2);
    for (i = 0; i < 2; i++) {
        bad |= cudaMemcpy(host + i * BLOCK, (char *)dev + i * BLOCK, BLOCK, cudaMemcpyDeviceToHost);
        if (record) record(1, BLOCK, 1);
    }
    for (i = 0; i < 3; i++) {
        bad |= cudaMemcpyAsync((char *)dev + i * BLOCK, host + i * BLOCK, BLOCK, cudaMemcpyHostToDevice, 0);
        if (record && i != 2) record(0, BLOCK, 2);
    }
    bad |= cudaDeviceSynchronize();
    bad |= cudaFree(dev);
    printf("expect: {\"total\": {\"h2d_bytes\": %d, \"h2d_count\": 11, \"d2h_bytes\": %d, \"d2h_count\": 2}, "
           "\"prefill\": {\"h2d_count\": 8, \"d2h_count\": 0}, \"decode\": {\"h2d_count\": 3, \"d2h_count\": 2}, "
           "\"manual\": {\"apart\": true, \"total\": {\"h2d_bytes\": %d, \"h2d_count\": 10, \"d2h_bytes\": %d, "
           "\"d2h_count\": 2, \"d2d_count\": 0}, \"prefill\": {\"h2d_count\": 8, \"d2h_count\": 2}, "
           "\"decode\": {\"h2d_count\": 2, \"d2h_count\": 0}}}\n",
           11 * BLOCK, 2 * BLOCK, 10 * BLOCK, 2 * BLOCK);
    return bad ? 3 : 0;
}
