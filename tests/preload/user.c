/* A library linked with -lcudart, as PyTorch's are, for
   tests/python/preload_check.py (through ctypes): its runtime calls go
   through the dynamic linker, so the preload sees them. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

/* cudaMalloc n bytes, copy n bytes host to device, free; 0 when all succeeded */
int user_h2d(size_t n) {
    void *d = NULL;
    char *h = (char *)calloc(1, n);
    int bad = !h || cudaMalloc(&d, n) != cudaSuccess || cudaMemcpy(d, h, n, cudaMemcpyHostToDevice) != cudaSuccess ||
              cudaFree(d) != cudaSuccess;
    free(h);
    return bad;
}
