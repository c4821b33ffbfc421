/* A runtime layer that calls itself, for tests/preload/test_preload.sh: its
   cudaMallocHost is cudaHostAlloc, called by name (so through the
   interposer again, on the same thread). Preloaded after
   libmemobs_preload.so, before the runtime double. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>

cudaError_t cudaMallocHost(void **ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }
