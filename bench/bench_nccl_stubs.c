/* bench_nccl_stubs.c - what NCCL Inspector asks of CUDA at its init, for
   bench/bench_nccl.c on a machine with no GPU (make bench-nccl builds them
   under $(BUILD)/bench/nccl_stubs and passes the folder as
   BENCH_NCCL_CUDA_STUBS; the bench loads them before Inspector, so
   Inspector binds to these). Inspector records a communicator only when
   its init gets a device and its UUID; after that it calls no CUDA
   function per event. Never a double of CUDA: device 0 and a fixed UUID.
     -DBENCH_STUB_RUNTIME  libcudart.so.13: cudaGetDevice, cudaGetErrorString
     -DBENCH_STUB_DRIVER   libcuda.so.1: cuGetErrorString, cuDeviceGet,
                           cuDeviceGetUuid (Inspector dlsyms them) */
#include <string.h>

#ifdef BENCH_STUB_RUNTIME
int cudaGetDevice(int *device);
const char *cudaGetErrorString(int error);
int cudaGetDevice(int *device) {
    *device = 0;
    return 0;
}
const char *cudaGetErrorString(int error) {
    return error ? "bench stub: error" : "no error";
}
#endif

#ifdef BENCH_STUB_DRIVER
typedef struct {
    char bytes[16];
} bench_stub_uuid_t;
int cuGetErrorString(int error, const char **str);
int cuDeviceGet(int *device, int ordinal);
int cuDeviceGetUuid(bench_stub_uuid_t *uuid, int device);
int cuGetErrorString(int error, const char **str) {
    *str = error ? "bench stub: error" : "no error";
    return 0;
}
int cuDeviceGet(int *device, int ordinal) {
    *device = ordinal;
    return 0;
}
int cuDeviceGetUuid(bench_stub_uuid_t *uuid, int device) {
    memset(uuid->bytes, 0x5a, sizeof uuid->bytes);
    uuid->bytes[0] = (char)device;
    return 0;
}
#endif
