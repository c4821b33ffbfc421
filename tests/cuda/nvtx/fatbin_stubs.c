/* For a program compiled by nvcc and linked with the CUDA runtime double
   instead of libcudart (tests/cuda/test_nvtx.sh's nvcc build): nvcc's host code
   registers the translation unit's fat binary with the runtime at load
   time and unregisters it at exit (crt/host_runtime.h), even when it holds
   no kernel. The double has no module loader; these accept the calls and
   do nothing, which is what a translation unit without device code needs.
   The declarations are host_runtime.h's (CUDARTAPI is empty on Linux). */
#include <stddef.h>

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
char __cudaInitModule(void **fatCubinHandle);

static void *fatbin_handle; /* a handle that is never dereferenced */

void **__cudaRegisterFatBinary(void *fatCubin) {
    (void)fatCubin;
    return &fatbin_handle;
}
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }
void __cudaUnregisterFatBinary(void **fatCubinHandle) { (void)fatCubinHandle; }
char __cudaInitModule(void **fatCubinHandle) {
    (void)fatCubinHandle;
    return 1;
}
