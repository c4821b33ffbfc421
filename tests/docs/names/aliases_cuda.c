/* Every deprecated name of memobs_cuda.h, used exactly once, checked
   against its 1.0 replacement, linked with the CUDA runtime double
   (tests/cuda/cudart_double.c) as tests/cuda/test_cuda.sh does. Built as C99,
   C++17 and by nvcc (tests/docs/test_names.sh). */
#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"
#include "cuda/cudart_double.h"

#include <stdio.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#include "eq.h"

int main(void) {
    memobs_cuda_mem_t m, m2;
    memobs_cuda_graph_stats_t g, g2;
    void *a = NULL, *big = NULL;

    memobs_init();
    (void)memobs_cuda_set_oom_report("off");
    EQ("cudadbl_set_outside(0, 5 MiB)", 0, cudadbl_set_outside(0, 5 * MIB));
    EQ("memobs_cudaMalloc(3 MiB)", cudaSuccess, memobs_cudaMalloc(&a, 3 * MIB));

    memset(&m, 0xff, sizeof m);
    memset(&m2, 0xee, sizeof m2);
    EQ("memobs_cuda_mem_info(0, &m) == MEMOBS_OK", MEMOBS_OK, memobs_cuda_mem_info(0, &m));
    EQ("memobs_cuda_get_mem_info(&m, 0) == MEMOBS_OK", MEMOBS_OK, memobs_cuda_get_mem_info(&m2, 0));
    EQ("mem_info: tracked 3 MiB", 3 * MIB, m.tracked);
    EQ("mem_info: driver used 8 MiB (3 tracked + 5 outside)", 8 * MIB, m.driver_used);
    EQ("mem_info: outside 5 MiB", 5 * MIB, (uint64_t)m.outside);
    EQ("get_mem_info: the same tracked", m.tracked, m2.tracked);
    EQ("get_mem_info: the same driver used", m.driver_used, m2.driver_used);
    EQ("get_mem_info: the same device", m.device, m2.device);

    /* an allocation the double refuses (more than its 16 GiB) */
    EQ("memobs_cudaMalloc(64 GiB) fails", cudaErrorMemoryAllocation, memobs_cudaMalloc(&big, (size_t)64 << 30));
    EQ("memobs_cuda_oom_count() == 1", 1, memobs_cuda_oom_count());
    EQ("memobs_cuda_get_oom_count() == 1", 1, memobs_cuda_get_oom_count());
    (void)cudaGetLastError();

    EQ("memobs_cuda_untimed() == memobs_cuda_get_untimed() == 0", memobs_cuda_get_untimed(), memobs_cuda_untimed());
    EQ("memobs_cuda_nvtx() == memobs_cuda_get_nvtx()", memobs_cuda_get_nvtx(), memobs_cuda_nvtx());

    memset(&g, 0xff, sizeof g);
    memset(&g2, 0xee, sizeof g2);
    EQ("memobs_cuda_graph_stats(&g) == MEMOBS_OK", MEMOBS_OK, memobs_cuda_graph_stats(&g));
    EQ("memobs_cuda_get_graph_stats(&g) == MEMOBS_OK", MEMOBS_OK, memobs_cuda_get_graph_stats(&g2));
    EQ("graph stats: no launch", 0, g.launches);
    EQ("graph stats: the same launches, captures, copies", g.launches + g.captures + g.captured_copies,
       g2.launches + g2.captures + g2.captured_copies);

    EQ("memobs_cuda_set_timing(1) returns the previous setting (0)", 0, memobs_cuda_set_timing(1));
    EQ("memobs_cuda_get_timing() == 1", 1, memobs_cuda_get_timing());
    EQ("memobs_cuda_set_timing(0) returns 1", 1, memobs_cuda_set_timing(0));
    EQ("memobs_cudaFree", cudaSuccess, memobs_cudaFree(a));
    return failed;
}
