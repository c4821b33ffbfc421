/* entry_layer.c - a library linked with the CUDA runtime, as
   libtorch_cuda.so is, for tests/preload/entry_runtime.c built with
   -DENTRY_LOCAL: the program dlopen()s it with RTLD_LOCAL and makes its
   runtime calls through it, so the runtime (and the driver functions the
   runtime double defines) are in no global scope. */
#include <cuda_runtime_api.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cudaGetDriverEntryPoint, deprecated in CUDA 13.0 */
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

cudaError_t entry_layer_get(const char *symbol, void **p, unsigned long long flags,
                            enum cudaDriverEntryPointQueryResult *st) {
    return cudaGetDriverEntryPoint(symbol, p, flags, st);
}
#pragma GCC diagnostic pop
cudaError_t entry_layer_get_ptsz(const char *symbol, void **p, unsigned long long flags,
                                 enum cudaDriverEntryPointQueryResult *st) {
    return cudaGetDriverEntryPoint_ptsz(symbol, p, flags, st);
}
cudaError_t entry_layer_getv(const char *symbol, void **p, unsigned int version, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *st) {
    return cudaGetDriverEntryPointByVersion(symbol, p, version, flags, st);
}
cudaError_t entry_layer_getv_ptsz(const char *symbol, void **p, unsigned int version, unsigned long long flags,
                                  enum cudaDriverEntryPointQueryResult *st) {
    return cudaGetDriverEntryPointByVersion_ptsz(symbol, p, version, flags, st);
}
cudaError_t entry_layer_sync(void) { return cudaDeviceSynchronize(); }
