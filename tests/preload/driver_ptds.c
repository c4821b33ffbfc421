/* Built with -DCUDA_API_PER_THREAD_DEFAULT_STREAM, for
   tests/preload/driver_user.c: cuda.h then binds these calls to the
   driver's per-thread default stream entry points (cuMemcpyHtoD_v2_ptds,
   cuMemcpyAsync_ptsz, cuMemAllocAsync_ptsz, ...), as in a unit built with
   nvcc --default-stream per-thread. The number of failed calls is
   returned; what memobs should see is in driver_user.c. */
#include <cuda.h>

int ptds_sequence(CUdeviceptr d1, CUdeviceptr d2, CUdeviceptr d3, char *host, CUcontext c0, CUcontext c1,
                  CUmemoryPool pool) {
    CUdeviceptr x = 0, y = 0;
    int bad = 0;
    bad += cuMemcpyHtoD(d1, host, 11) != CUDA_SUCCESS;
    bad += cuMemcpyDtoH(host, d1, 12) != CUDA_SUCCESS;
    bad += cuMemcpyDtoD(d2, d1, 13) != CUDA_SUCCESS;
    bad += cuMemcpyHtoDAsync(d1, host, 14, 0) != CUDA_SUCCESS;
    bad += cuMemcpyDtoHAsync(host, d1, 15, 0) != CUDA_SUCCESS;
    bad += cuMemcpyDtoDAsync(d2, d1, 16, 0) != CUDA_SUCCESS;
    bad += cuMemcpy(d1, (CUdeviceptr)(unsigned long)host, 17) != CUDA_SUCCESS;       /* inferred H2D */
    bad += cuMemcpyAsync((CUdeviceptr)(unsigned long)host, d1, 18, 0) != CUDA_SUCCESS; /* inferred D2H */
    bad += cuMemcpyPeer(d3, c1, d1, c0, 19) != CUDA_SUCCESS;
    bad += cuMemcpyPeerAsync(d3, c1, d1, c0, 20, 0) != CUDA_SUCCESS;
    bad += cuMemAllocAsync(&x, 512, 0) != CUDA_SUCCESS;
    bad += cuMemAllocFromPoolAsync(&y, 256, pool, 0) != CUDA_SUCCESS;
    bad += cuMemFreeAsync(x, 0) != CUDA_SUCCESS;
    bad += cuMemFreeAsync(y, 0) != CUDA_SUCCESS;
    return bad;
}
