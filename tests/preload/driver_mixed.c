/* driver_mixed.c - a program that uses both the CUDA runtime (linked with
   -lcudart: the runtime double as libcudart.so.13) and the driver
   (-lcuda: tests/preload/driver_double.c as libcuda.so.1), for
   tests/preload/test_preload_driver.sh, run under tests/preload/driver_layer.c
   (whose cudaMallocHost, cudaFreeHost and cudaMemcpy2D are driver calls)
   with and without the preload. The two doubles know nothing of each
   other's memory: runtime copies use runtime memory, driver copies
   driver memory. A failed call of the layer fails once: counted once.
   Prints "rcs: ..." and "expect: {json}". */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int fails;
static char rcs[1024];

static void check(const char *what, int rc, int want) {
    size_t n = strlen(rcs);
    snprintf(rcs + n, sizeof rcs - n, " %d", rc);
    if (rc != want) {
        fprintf(stderr, "%s: rc %d, expected %d\n", what, rc, want);
        fails++;
    }
}

int main(void) {
    char host[4096], *ph = NULL;
    void *rd = NULL;
    CUdeviceptr dd = 0;
    CUcontext c0;
    memset(host, 5, sizeof host);
    check("cuInit", cuInit(0), 0);
    check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&c0, 0), 0);
    check("cuCtxSetCurrent", cuCtxSetCurrent(c0), 0);
    check("cudaMalloc", cudaMalloc(&rd, 4096), 0);
    check("cuMemAlloc", cuMemAlloc(&dd, 8192), 0);
    check("cudaMemcpy H2D", cudaMemcpy(rd, host, 1000, cudaMemcpyHostToDevice), 0);
    check("cudaMemcpy D2H", cudaMemcpy(host, rd, 200, cudaMemcpyDeviceToHost), 0);
    check("cuMemcpyHtoD", cuMemcpyHtoD(dd, host, 300), 0);
    check("cuMemcpyDtoH", cuMemcpyDtoH(host, dd, 400), 0);
    /* the layer's: one cuMemAllocHost, 4 cuMemcpy of 32 bytes, one cuMemFreeHost */
    check("cudaMallocHost (layer: cuMemAllocHost)", cudaMallocHost((void **)&ph, 4096), 0);
    check("cudaMemcpy2D (layer: 4 x cuMemcpy)", cudaMemcpy2D((void *)(uintptr_t)dd, 64, ph, 32, 32, 4, cudaMemcpyHostToDevice), 0);
    check("cudaFreeHost (layer: cuMemFreeHost)", cudaFreeHost(ph), 0);
    check("cudaFreeHost again (layer: cuMemFreeHost fails)", cudaFreeHost(ph), CUDA_ERROR_INVALID_VALUE);
    check("cudaFree", cudaFree(rd), 0);
    check("cuMemFree", cuMemFree(dd), 0);
    printf("rcs:%s\n", rcs);
    printf("expect: {\"total\": {\"h2d_bytes\": 1428, \"h2d_count\": 3, \"d2h_bytes\": 600, \"d2h_count\": 2, "
           "\"d2d_count\": 0}, \"memory\": {\"device\": {\"allocs\": 2, \"frees\": 2, \"current_bytes\": 0, "
           "\"peak_bytes\": 12288}, \"pinned\": {\"allocs\": 1, \"frees\": 1, \"current_bytes\": 0, \"peak_bytes\": 4096}}, "
           "\"tracker\": {\"frees_unknown\": 0, \"allocs_duplicate\": 0}, \"counters\": {\"preload_failed_calls\": 1}}\n");
    return fails ? 1 : 0;
}
