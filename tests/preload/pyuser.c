/* A library linked with -lcudart, for tests/python/preload_attach_check.py
   (through ctypes): device memory that stays allocated until freed, so
   that the preload's tracker holds it while Python looks at its stack. */
#include <cuda_runtime_api.h>
#include <stddef.h>

/* cudaMalloc n bytes: the pointer, or NULL when the runtime refused */
void *pyuser_alloc(size_t n) {
    void *d = NULL;
    return cudaMalloc(&d, n) == cudaSuccess ? d : NULL;
}

/* cudaFree: 0 when it succeeded */
int pyuser_free(void *d) { return cudaFree(d) != cudaSuccess; }
