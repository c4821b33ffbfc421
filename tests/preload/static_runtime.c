/* A program linked with the static CUDA runtime (libcudart_static.a), for
   tests/preload/test_preload.sh: its runtime calls never reach the dynamic
   linker, so libmemobs_preload.so has nothing to intercept. Without a
   GPU cudaMalloc fails; exit status 4 then. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 64);
    printf("cudaMalloc rc %d\n", (int)e);
    return e == cudaSuccess ? 0 : 4;
}
