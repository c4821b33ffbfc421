/* procaddr.h - cuGetProcAddress's rules, shared by the test doubles of the
   driver (tests/preload/driver_double.c) and of the runtime
   (tests/cuda/cudart_double.c, whose cudaGetDriverEntryPoint(ByVersion)
   go through its cuGetProcAddress_v2 as the real runtime's go through the
   driver's). Include after <cuda.h>; each double lists the functions it
   defines as procaddr_t rows (the base name a caller asks for, the CUDA
   version that introduced that exported function, whether it is the
   per-thread default stream one, its address).

   The rules, from cuda.h's cuGetProcAddress:
   - symbol or pfn NULL, flags other than CU_GET_PROC_ADDRESS_DEFAULT,
     _LEGACY_STREAM or _PER_THREAD_DEFAULT_STREAM (both bits together:
     strict reading), a cudaVersion above the driver's:
     CUDA_ERROR_INVALID_VALUE, nothing written.
   - the function of the highest version <= cudaVersion (cuMemAlloc asked
     at 3020 or later is cuMemAlloc_v2, before it cuMemAlloc); with
     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM a per-thread one
     (_ptds/_ptsz) first, else the legacy one; DEFAULT is LEGACY_STREAM
     here (cuda.h's inline cuGetProcAddress_v2_ptsz sets the per-thread
     flag in units built for that stream; the driver cannot know).
   - a known name with no function at that version: *pfn NULL,
     *symbolStatus CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT; an unknown
     name: NULL, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; both CUDA_SUCCESS
     from cuGetProcAddress_v2 (12.0's contract) and CUDA_ERROR_NOT_FOUND
     from the 4-argument cuGetProcAddress (11.3's contract, which has no
     symbolStatus).
   The addresses are the double's own even where an LD_PRELOAD library
   defines the same names: rows take them through PROCADDR_OWN's hidden
   aliases, never through the PLT. */
#ifndef PROCADDR_H
#define PROCADDR_H
#include <stdint.h>
#include <string.h>

typedef struct {
    const char *symbol; /* the base name: "cuMemAlloc" for cuMemAlloc_v2 */
    int version;        /* the CUDA version that introduced this function */
    int per_thread;     /* a _ptds / _ptsz entry point */
    void *fn;
} procaddr_t;

/* procaddr_own_NAME: NAME's address in this library. */
#define PROCADDR_OWN(fn) extern __typeof__(fn) procaddr_own_##fn __attribute__((alias(#fn), visibility("hidden")));
#define PROCADDR_ROW(symbol, version, pt, fn) {symbol, version, pt, (void *)(uintptr_t)&procaddr_own_##fn},

/* v1: the 4-argument cuGetProcAddress (status may be NULL either way). */
static CUresult procaddr_find(const procaddr_t *rows, size_t n, int driver_version, const char *symbol, void **pfn,
                              int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *status, int v1) {
    const procaddr_t *best = NULL;
    int known = 0;
    size_t i;
    if (!symbol || !pfn || (flags & ~(cuuint64_t)3) || flags == 3 || cudaVersion > driver_version)
        return CUDA_ERROR_INVALID_VALUE;
    for (i = 0; i < n; i++) {
        const procaddr_t *r = &rows[i];
        if (strcmp(r->symbol, symbol) != 0) continue;
        known = 1;
        if (r->version > cudaVersion || (r->per_thread && !(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
            continue;
        if (!best || r->per_thread > best->per_thread ||
            (r->per_thread == best->per_thread && r->version > best->version))
            best = r;
    }
    *pfn = best ? best->fn : NULL;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                       : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best || !v1 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
#endif
