/* A runtime layer built on the driver, for tests/preload/test_preload_driver.sh:
   its cudaMallocHost, cudaFreeHost and cudaMemcpy2D call the driver
   (cuMemAllocHost_v2, cuMemFreeHost, one cuMemcpy per row) by name, so
   through the preload's driver interposers while the same thread is
   inside its runtime interposers. Preloaded after libmemobs_preload.so:
   each call must be recorded once, as the runtime call. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

cudaError_t cudaMallocHost(void **ptr, size_t size) { return (cudaError_t)cuMemAllocHost(ptr, size); }
cudaError_t cudaFreeHost(void *ptr) { return (cudaError_t)cuMemFreeHost(ptr); }
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    size_t r;
    CUresult rc = CUDA_SUCCESS;
    (void)kind; /* the driver infers it */
    for (r = 0; r < height && rc == CUDA_SUCCESS; r++)
        rc = cuMemcpy((CUdeviceptr)(uintptr_t)dst + r * dpitch, (CUdeviceptr)(uintptr_t)src + r * spitch, width);
    return (cudaError_t)rc;
}
