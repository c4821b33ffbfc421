/* One rank of a 4-rank job, for tests/nccl/test_distributed.sh: memobs_cuda.h
   against the CUDA runtime double (80 GiB device, 1 GiB used outside
   memobs), 2 GiB of weights allocated at start, a 4 GiB jump at sample
   SPIKE, and on every rank an NCCL all-reduce at sample 15 that holds 2 GiB
   of device memory outside memobs for the one sample it spans. Every step
   is a "decode_step" region. The rank's identity, MEMOBS_STORMLOG and
   MEMOBS_STORMLOG_HOST come from the environment; the files are written at
   exit.

   Time is this program's: clock_gettime is defined here (a link-time test
   double of libc's clock, as cudart_double.c is of the CUDA runtime), so
   memobs' samples are exactly 100 ms apart and the ranks start START_MS
   apart, on a shared wall clock, whatever the machine is doing.

       test_ranks SPIKE START_MS [DEVICES]

   With DEVICES 2 the rank drives two devices (weights on each, 1 GiB
   outside memobs on each, the jump on device 1, the all-reduce's buffers
   on device 0): Stormlog is to see their sum as the rank's one series. */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "../cuda/cudart_double.h"

#include <stdlib.h>
#include <time.h>

#define GIB ((size_t)1 << 30)
#define STEPS 20
#define STEP_NS 100000000ull       /* 100 ms between samples */
#define EPOCH_NS 1790000000000000000ull /* the job's wall clock at monotonic 0 */

static uint64_t fake_ns = 5000000000ull; /* CLOCK_MONOTONIC now */

int clock_gettime(clockid_t clk, struct timespec *ts) {
    uint64_t v = clk == CLOCK_REALTIME ? EPOCH_NS + fake_ns : fake_ns;
    ts->tv_sec = (time_t)(v / 1000000000u);
    ts->tv_nsec = (long)(v % 1000000000u);
    return 0;
}

static int fail(const char *what, int err) {
    fprintf(stderr, "test_ranks: %s failed: %d\n", what, err);
    return 1;
}

int main(int argc, char **argv) {
    void *weights[2] = {NULL, NULL}, *burst = NULL;
    int spike = argc > 1 ? atoi(argv[1]) : 7, ndev = argc > 3 ? atoi(argv[3]) : 1, i, e, d;
    fake_ns += (uint64_t)(argc > 2 ? atoi(argv[2]) : 0) * 1000000u;
    if (ndev < 1 || ndev > 2) return fail("DEVICES (1 or 2)", ndev);
    for (d = ndev - 1; d >= 0; d--) { /* ends on device 0 */
        cudadbl_set_total(d, 80 * GIB);
        cudadbl_set_outside(d, GIB);
        if ((e = cudaSetDevice(d)) != 0) return fail("cudaSetDevice", e);
        memobs_set_device(d);
        if ((e = memobs_cudaMalloc(&weights[d], 2 * GIB)) != 0) return fail("weights", e);
    }
    for (i = 0; i < STEPS; i++) {
        fake_ns += STEP_NS / 2;
        MEMOBS_REGION_BEGIN("decode_step");
        if (i == spike) {
            cudaSetDevice(ndev - 1);
            memobs_set_device(ndev - 1);
            if ((e = memobs_cudaMalloc(&burst, 4 * GIB)) != 0) return fail("the jump", e);
            cudaSetDevice(0);
            memobs_set_device(0);
        }
        if (i == 15) {
            MEMOBS_REGION_BEGIN("nccl all_reduce");
            cudadbl_set_outside(0, 7 * GIB); /* 6 GiB of buffers: outside memobs */
        }
        fake_ns += STEP_NS / 2;
        if ((e = memobs_sample_now()) != MEMOBS_OK) return fail("memobs_sample_now", e);
        if (i == 15) {
            fake_ns += 1000000u;
            cudadbl_set_outside(0, GIB);
            MEMOBS_REGION_END();
        }
        MEMOBS_REGION_END();
    }
    return 0;
}
