/* memobs_cuda.h's device figures in samples and Stormlog events, against
   the CUDA runtime double (tests/tracker/test_sampler.sh): device samples with the
   driver's used/free/total, a peak event and an out-of-memory event.
   Argument: the Stormlog file to write. */
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "../check.h"
#include "../cuda/cudart_double.h"

static const char *out_path;

static void device_samples(void) {
    void *a = NULL, *b = NULL, *c = NULL;
    memobs_sample_t s[4];
    size_t n;
    cudadbl_set_total(0, (size_t)64 << 20);
    cudadbl_set_outside(0, (size_t)5 << 20);
    CHECK_U64(0, memobs_cudaMalloc(&a, (size_t)8 << 20));
    memobs_track_alloc_full((const void *)(uintptr_t)0x7000, 1u << 20, MEMOBS_MEM_DEVICE, 0, NULL,
                            "kv \"cache\" \\ \xce\xbb\n2nd line", 0);
    CHECK_U64(MEMOBS_OK, memobs_sample_now());
    n = memobs_get_samples(s, 4);
    CHECK_U64(1, n);
    CHECK_U64(1, s[0].ndev);
    CHECK_U64(0, (uint64_t)s[0].dev[0].device);
    CHECK_U64((9u << 20), s[0].dev[0].tracked);
    CHECK_U64((uint64_t)64 << 20, s[0].dev[0].total);
    CHECK_U64((uint64_t)13 << 20, s[0].dev[0].used); /* 8 MiB allocated + 5 outside */
    CHECK_U64((uint64_t)51 << 20, s[0].dev[0].free_bytes);
    CHECK(s[0].dev[0].as_of_ns >= s[0].time_ns); /* read for this sample (not the last figures of a stopped CUDA) */
    CHECK_U64(cudaErrorMemoryAllocation, memobs_cudaMalloc(&b, (size_t)60 << 20)); /* out of memory */
    CHECK_U64(1, memobs_cuda_get_oom_count());
    CHECK_U64(0, memobs_cudaMalloc(&c, (size_t)16 << 20));
    CHECK_U64(MEMOBS_OK, memobs_sample_now());
    CHECK_U64(MEMOBS_OK, memobs_write_stormlog_file(out_path));
    memobs_cudaFree(a);
    memobs_cudaFree(c);
    memobs_track_free((const void *)(uintptr_t)0x7000);
}

int main(int argc, char **argv) {
    check__suite = "sampler-cuda";
    out_path = argc > 1 ? argv[1] : "/dev/null";
    memobs_set_identity("job \"odd\" \\ \xe2\x9c\x93\nline", 0, 0, 4);
    RUN(device_samples);
    printf("%d passed, %d failed\n", check__passed, check__failed);
    return check__failed ? 1 : 0;
}
