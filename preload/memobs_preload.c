/* memobs_preload.c - memobs with no code change: an LD_PRELOAD library
   that records the CUDA runtime copies and allocations of any program that
   uses the dynamic CUDA runtime (libcudart.so).

       make preload
       LD_PRELOAD=build/libmemobs_preload.so MEMOBS_SUMMARY=stderr program

   Each intercepted call is forwarded to the real runtime (found with
   dlvsym(RTLD_NEXT, name, "libcudart.so.13"), then dlsym(RTLD_NEXT, name),
   then in a libcudart.so.13 already loaded with RTLD_LOCAL) and returns its
   result unchanged; what it records is what memobs_cuda.h's wrappers
   record (this file calls their helpers), only when the real call
   succeeded. A failed call is counted in the user counter
   "preload_failed_calls".

   Intercepted (MEMOBS_PL__FNS below, less the last two, which are only
   called): the copies cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D(Async),
   cudaMemcpyPeer(Async), cudaMemcpy3D(Async), cudaMemcpy3DPeer(Async),
   cudaMemcpyToSymbol(Async), cudaMemcpyFromSymbol(Async),
   cudaMemcpy2DToArray(Async), cudaMemcpy2DFromArray(Async),
   cudaMemcpy2DArrayToArray, cudaMemcpyBatchAsync, cudaMemcpy3DBatchAsync;
   the allocations cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost,
   cudaHostAlloc, cudaMallocManaged, cudaMallocAsync, cudaFreeAsync,
   cudaHostRegister, cudaHostUnregister; capture and graphs
   (cudaStreamBeginCapture, cudaStreamEndCapture, cudaGraphInstantiate,
   cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithParams,
   cudaGraphLaunch, cudaGraphExecDestroy, cudaGraphDestroy: a copy
   captured into a stream counts at each launch of its graph, as with
   memobs_cuda.h's wrappers) and cudaDeviceReset; and the per-thread
   default stream entry points (_ptds, _ptsz) the runtime exports for
   them. The driver API's copies and allocations too: its section, at the
   end. The runtime's interposers carry its symbol version
   (libcudart.so.13, preload/memobs_preload.map); memobs' whole C API is
   exported as well (unversioned, default visibility): a program finds
   memobs_set_phase with dlsym(RTLD_DEFAULT, ...) and sets the phase on
   this instance. Records made through that API are the program's own,
   kept apart from what the interposers observe (memobs_set_manual_apart).

   Safety: a call made while the same thread is inside an intercepted call
   (the runtime calling itself) is forwarded and not recorded; after this
   library's destructor calls are forwarded only. When no call was
   intercepted (no dynamic runtime: nothing to see), one line says so on
   stderr at exit, in the process the user started only: the constructor
   puts its pid in MEMOBS_PRELOAD_ROOT, which the processes it starts
   inherit (a shell's or Python's helpers stay quiet). A process that
   made no CUDA call and recorded nothing writes no files at exit
   (memobs_set_exit_outputs(0)) nor on a stop signal: a launcher or a shell
   around the program leaves the program's summary alone. Built -Bsymbolic, with
   initial-exec TLS (mk/preload.mk): loaded at start-up, never dlopen'ed.

   At exit: this library's exit outputs are written after every library's
   destructors (its constructor registered them before the program
   started), so long after the CUDA runtime's teardown and the driver's
   unloading. memobs_cuda.h's exit handler, registered at the first
   intercepted call that succeeded (and once more at the first runtime
   call, when a driver call came first), stops memobs' own CUDA calls
   before the runtime tears down: the outputs then use the last device
   figures read, and nothing calls the driver. A forked child of a process
   that used CUDA makes no CUDA call of memobs' own (memobs_cuda.h, EXIT
   AND FORK).

   LICENSE: MIT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

/* The per-thread default stream entry points: declared by the runtime's
   header only in units built for that stream; each has the type of the
   function it stands for. */
#define MEMOBS_PL__PTDS(X)                                                                                   \
    X(cudaMemcpy_ptds, cudaMemcpy) X(cudaMemcpyAsync_ptsz, cudaMemcpyAsync) X(cudaMemcpy2D_ptds, cudaMemcpy2D)  \
    X(cudaMemcpy2DAsync_ptsz, cudaMemcpy2DAsync) X(cudaMallocAsync_ptsz, cudaMallocAsync)                   \
    X(cudaFreeAsync_ptsz, cudaFreeAsync) X(cudaMemcpy3D_ptds, cudaMemcpy3D)                                 \
    X(cudaMemcpy3DAsync_ptsz, cudaMemcpy3DAsync) X(cudaMemcpy3DPeer_ptds, cudaMemcpy3DPeer)                 \
    X(cudaMemcpy3DPeerAsync_ptsz, cudaMemcpy3DPeerAsync) X(cudaMemcpyToSymbol_ptds, cudaMemcpyToSymbol)     \
    X(cudaMemcpyToSymbolAsync_ptsz, cudaMemcpyToSymbolAsync) X(cudaMemcpyFromSymbol_ptds, cudaMemcpyFromSymbol) \
    X(cudaMemcpyFromSymbolAsync_ptsz, cudaMemcpyFromSymbolAsync)                                            \
    X(cudaMemcpy2DToArray_ptds, cudaMemcpy2DToArray) X(cudaMemcpy2DToArrayAsync_ptsz, cudaMemcpy2DToArrayAsync) \
    X(cudaMemcpy2DFromArray_ptds, cudaMemcpy2DFromArray)                                                    \
    X(cudaMemcpy2DFromArrayAsync_ptsz, cudaMemcpy2DFromArrayAsync)                                          \
    X(cudaMemcpy2DArrayToArray_ptds, cudaMemcpy2DArrayToArray)                                              \
    X(cudaMemcpyBatchAsync_ptsz, cudaMemcpyBatchAsync) X(cudaMemcpy3DBatchAsync_ptsz, cudaMemcpy3DBatchAsync) \
    X(cudaStreamBeginCapture_ptsz, cudaStreamBeginCapture) X(cudaStreamEndCapture_ptsz, cudaStreamEndCapture) \
    X(cudaGraphInstantiateWithParams_ptsz, cudaGraphInstantiateWithParams)                                 \
    X(cudaGraphLaunch_ptsz, cudaGraphLaunch)
#define MEMOBS_PL__DECL(pt, name) __typeof__(name) pt;
MEMOBS_PL__PTDS(MEMOBS_PL__DECL)
#undef MEMOBS_PL__DECL

#define MEMOBS_PL__FNS(X)                                                                                    \
    X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaMemcpy2D) X(cudaMemcpy2DAsync) X(cudaMemcpyPeer)                  \
    X(cudaMemcpyPeerAsync) X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaFreeHost) X(cudaHostAlloc)      \
    X(cudaMallocManaged) X(cudaMallocAsync) X(cudaFreeAsync) X(cudaMemcpy_ptds) X(cudaMemcpyAsync_ptsz)     \
    X(cudaMemcpy2D_ptds) X(cudaMemcpy2DAsync_ptsz) X(cudaMallocAsync_ptsz) X(cudaFreeAsync_ptsz)            \
    X(cudaHostRegister) X(cudaHostUnregister) X(cudaMemcpy3D) X(cudaMemcpy3D_ptds) X(cudaMemcpy3DAsync)     \
    X(cudaMemcpy3DAsync_ptsz) X(cudaMemcpy3DPeer) X(cudaMemcpy3DPeer_ptds) X(cudaMemcpy3DPeerAsync)         \
    X(cudaMemcpy3DPeerAsync_ptsz) X(cudaMemcpyToSymbol) X(cudaMemcpyToSymbol_ptds)                          \
    X(cudaMemcpyToSymbolAsync) X(cudaMemcpyToSymbolAsync_ptsz) X(cudaMemcpyFromSymbol)                      \
    X(cudaMemcpyFromSymbol_ptds) X(cudaMemcpyFromSymbolAsync) X(cudaMemcpyFromSymbolAsync_ptsz)             \
    X(cudaMemcpy2DToArray) X(cudaMemcpy2DToArray_ptds) X(cudaMemcpy2DToArrayAsync)                          \
    X(cudaMemcpy2DToArrayAsync_ptsz) X(cudaMemcpy2DFromArray) X(cudaMemcpy2DFromArray_ptds)                 \
    X(cudaMemcpy2DFromArrayAsync) X(cudaMemcpy2DFromArrayAsync_ptsz) X(cudaMemcpy2DArrayToArray)            \
    X(cudaMemcpy2DArrayToArray_ptds) X(cudaMemcpyBatchAsync) X(cudaMemcpyBatchAsync_ptsz)                   \
    X(cudaMemcpy3DBatchAsync) X(cudaMemcpy3DBatchAsync_ptsz) X(cudaStreamBeginCapture)                      \
    X(cudaStreamBeginCapture_ptsz) X(cudaStreamEndCapture) X(cudaStreamEndCapture_ptsz)                     \
    X(cudaGraphInstantiate) X(cudaGraphInstantiateWithFlags) X(cudaGraphInstantiateWithParams)              \
    X(cudaGraphInstantiateWithParams_ptsz) X(cudaGraphLaunch) X(cudaGraphLaunch_ptsz)                       \
    X(cudaGraphExecDestroy) X(cudaGraphDestroy) X(cudaDeviceReset) X(cudaGetErrorString) X(cudaGetErrorName)

#define MEMOBS_PL__SYM_VERSION "libcudart.so.13"

static struct {
#define MEMOBS_PL__FIELD(name) void *name;
    MEMOBS_PL__FNS(MEMOBS_PL__FIELD)
#undef MEMOBS_PL__FIELD
} memobs_pl__real;

/* The real function, or NULL while none is loaded (looked up again at the
   next call: a runtime may be dlopen'ed later). */
static void *memobs_pl__find(const char *name) {
    void *p = dlvsym(RTLD_NEXT, name, MEMOBS_PL__SYM_VERSION), *h;
    if (!p) p = dlsym(RTLD_NEXT, name);
    if (!p && (h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        p = dlvsym(h, name, MEMOBS_PL__SYM_VERSION);
        if (!p) p = dlsym(h, name);
        dlclose(h); /* RTLD_NOLOAD took a reference */
    }
    return p;
}

static void *memobs_pl__get(void **slot, const char *name) {
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!p && (p = memobs_pl__find(name)) != NULL) __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    return p;
}
#define MEMOBS_PL__REAL(name) ((__typeof__(name) *)memobs_pl__get(&memobs_pl__real.name, #name))

/* memobs_cuda.h's implementation calls the runtime by name; here those
   names are the real functions (never this library's own). */
static cudaError_t memobs_pl__missing(const char *name);
#define MEMOBS_PL__CALL(name, ...)                                                                           \
    (MEMOBS_PL__REAL(name) ? ((__typeof__(name) *)memobs_pl__real.name)(__VA_ARGS__) : memobs_pl__missing(#name))
#define cudaMalloc(...) MEMOBS_PL__CALL(cudaMalloc, __VA_ARGS__)
#define cudaFree(...) MEMOBS_PL__CALL(cudaFree, __VA_ARGS__)
#define cudaMallocHost(...) MEMOBS_PL__CALL(cudaMallocHost, __VA_ARGS__)
#define cudaFreeHost(...) MEMOBS_PL__CALL(cudaFreeHost, __VA_ARGS__)
#define cudaHostAlloc(...) MEMOBS_PL__CALL(cudaHostAlloc, __VA_ARGS__)
#define cudaMallocManaged(...) MEMOBS_PL__CALL(cudaMallocManaged, __VA_ARGS__)
#define cudaHostRegister(...) MEMOBS_PL__CALL(cudaHostRegister, __VA_ARGS__)
#define cudaHostUnregister(...) MEMOBS_PL__CALL(cudaHostUnregister, __VA_ARGS__)
#define cudaGetErrorString(e)                                                                                \
    (MEMOBS_PL__REAL(cudaGetErrorString) ? ((__typeof__(cudaGetErrorString) *)memobs_pl__real.cudaGetErrorString)(e) : "?")
#define cudaGetErrorName(e)                                                                                  \
    (MEMOBS_PL__REAL(cudaGetErrorName) ? ((__typeof__(cudaGetErrorName) *)memobs_pl__real.cudaGetErrorName)(e) : "?")

#define MEMOBS_IMPLEMENTATION
#include "memobs_cuda.h"

#undef cudaMalloc
#undef cudaFree
#undef cudaMallocHost
#undef cudaFreeHost
#undef cudaHostAlloc
#undef cudaMallocManaged
#undef cudaHostRegister
#undef cudaHostUnregister
#undef cudaGetErrorString
#undef cudaGetErrorName

static struct {
    unsigned long long intercepted; /* outermost calls that reached a real function */
    memobs_counter_t failed;        /* "preload_failed_calls" */
    int done;                       /* after the destructor: forward only */
    int missing_said;
} memobs_pl__g = {0, -1, 0, 0};
static __thread int memobs_pl__busy; /* inside an intercepted call on this thread */

static cudaError_t memobs_pl__missing(const char *name) {
    if (!__atomic_exchange_n(&memobs_pl__g.missing_said, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "memobs preload: %s called but no CUDA runtime defines it; returning "
                        "cudaErrorInitializationError\n", name);
    return cudaErrorInitializationError;
}

/* 1: record this call (the caller must call memobs_pl__end); 0: only forward. */
static int memobs_pl__begin(void) {
    if (memobs_pl__busy || __atomic_load_n(&memobs_pl__g.done, __ATOMIC_RELAXED)) return 0;
    memobs_pl__busy = 1;
    memobs_observer_enter(); /* observed records, apart from the program's own (memobs_set_manual_apart) */
    __atomic_fetch_add(&memobs_pl__g.intercepted, 1, __ATOMIC_RELAXED);
    return 1;
}

static cudaError_t memobs_pl__end(cudaError_t rc) {
    memobs_observer_leave();
    memobs_pl__busy = 0;
    if (rc != cudaSuccess) {
        memobs_counter_t c = __atomic_load_n(&memobs_pl__g.failed, __ATOMIC_RELAXED);
        if (c < 0) {
            c = memobs_counter_register("preload_failed_calls",
                                        "intercepted CUDA runtime and driver calls that returned an error (not recorded)");
            __atomic_store_n(&memobs_pl__g.failed, c, __ATOMIC_RELAXED);
        }
        if (c >= 0) memobs_counter_add(c, 1);
    }
    return rc;
}

/* The interposers: `real` is the real function; without one, an error and one line. */
#define MEMOBS_PL__GET(name)                                                                                 \
    __typeof__(name) *real = MEMOBS_PL__REAL(name);                                                          \
    if (!real) return memobs_pl__missing(#name)

/* Copies: one shape for all; `call` is the real call. */
#define MEMOBS_PL__COPY(name, dst, src, bytes, kind, stream, how, call)                                     \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    {                                                                                                        \
        memobs_cuda__op_t op;                                                                                \
        memobs_cuda__copy_pre(&op, dst, src, bytes, kind, stream, how);                                      \
        return memobs_pl__end(memobs_cuda__copy_post(&op, call));                                            \
    }

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    MEMOBS_PL__COPY(cudaMemcpy, dst, src, count, kind, NULL, 0, real(dst, src, count, kind))
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    MEMOBS_PL__COPY(cudaMemcpy_ptds, dst, src, count, kind, NULL, 0, real(dst, src, count, kind))
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    MEMOBS_PL__COPY(cudaMemcpyAsync, dst, src, count, kind, stream ? stream : cudaStreamLegacy, 1,
                    real(dst, src, count, kind, stream))
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream) {
    MEMOBS_PL__COPY(cudaMemcpyAsync_ptsz, dst, src, count, kind, stream ? stream : cudaStreamPerThread, 1,
                    real(dst, src, count, kind, stream))
}
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    MEMOBS_PL__COPY(cudaMemcpy2D, dst, src, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, dpitch, src, spitch, width, height, kind))
}
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__COPY(cudaMemcpy2D_ptds, dst, src, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, dpitch, src, spitch, width, height, kind))
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__COPY(cudaMemcpy2DAsync, dst, src, (uint64_t)width * height, kind,
                    stream ? stream : cudaStreamLegacy, 1, real(dst, dpitch, src, spitch, width, height, kind, stream))
}
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__COPY(cudaMemcpy2DAsync_ptsz, dst, src, (uint64_t)width * height, kind,
                    stream ? stream : cudaStreamPerThread, 1,
                    real(dst, dpitch, src, spitch, width, height, kind, stream))
}
/* As memobs_cudaMemcpyPeer: its events go on the legacy stream. */
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count) {
    MEMOBS_PL__COPY(cudaMemcpyPeer, dst, src, count, cudaMemcpyDeviceToDevice, cudaStreamLegacy, 1,
                    real(dst, dstDevice, src, srcDevice, count))
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream) {
    MEMOBS_PL__COPY(cudaMemcpyPeerAsync, dst, src, count, cudaMemcpyDeviceToDevice,
                    stream ? stream : cudaStreamLegacy, 1, real(dst, dstDevice, src, srcDevice, count, stream))
}

/* The stream memobs names for a call's stream 0 (or its implicit one):
   the legacy stream for the plain names, the calling thread's per-thread
   stream for the _ptds/_ptsz ones. */
#define MEMOBS_PL__LEG(s) ((s) ? (s) : cudaStreamLegacy)
#define MEMOBS_PL__PT(s) ((s) ? (s) : cudaStreamPerThread)

/* One shape for the copies whose op memobs_cuda.h's helpers prepare:
   `pre` fills op, `call` is the real call. */
#define MEMOBS_PL__OP(name, pre, call)                                                                       \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    {                                                                                                        \
        memobs_cuda__op_t op;                                                                                \
        pre;                                                                                                 \
        return memobs_pl__end(memobs_cuda__copy_post(&op, call));                                            \
    }

/* 3D copies: as memobs_cudaMemcpy3D(Async), memobs_cudaMemcpy3DPeer(Async). */
cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
    MEMOBS_PL__OP(cudaMemcpy3D, memobs_cuda__copy3d_pre(&op, p, NULL, 0), real(p))
}
cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) {
    MEMOBS_PL__OP(cudaMemcpy3D_ptds, memobs_cuda__copy3d_pre(&op, p, NULL, 0), real(p))
}
cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
    MEMOBS_PL__OP(cudaMemcpy3DAsync, memobs_cuda__copy3d_pre(&op, p, MEMOBS_PL__LEG(stream), 1), real(p, stream))
}
cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
    MEMOBS_PL__OP(cudaMemcpy3DAsync_ptsz, memobs_cuda__copy3d_pre(&op, p, MEMOBS_PL__PT(stream), 1), real(p, stream))
}
cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms *p) {
    MEMOBS_PL__OP(cudaMemcpy3DPeer, memobs_cuda__peer3d_pre(&op, p, cudaStreamLegacy, 1), real(p))
}
cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms *p) {
    MEMOBS_PL__OP(cudaMemcpy3DPeer_ptds, memobs_cuda__peer3d_pre(&op, p, cudaStreamPerThread, 1), real(p))
}
cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream) {
    MEMOBS_PL__OP(cudaMemcpy3DPeerAsync, memobs_cuda__peer3d_pre(&op, p, MEMOBS_PL__LEG(stream), 1), real(p, stream))
}
cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream) {
    MEMOBS_PL__OP(cudaMemcpy3DPeerAsync_ptsz, memobs_cuda__peer3d_pre(&op, p, MEMOBS_PL__PT(stream), 1),
                  real(p, stream))
}

/* Copies with device memory named by a symbol or a CUDA array on one side
   (dd, sd: the destination, the source is device memory). */
#define MEMOBS_PL__SIDE(name, dd, dst, sd, src, bytes, kind, stream, how, call)                             \
    MEMOBS_PL__OP(name,                                                                                      \
                  memobs_cuda__copy_pre(&op, dst, src, bytes, memobs_cuda__side_kind(dd, dst, sd, src, kind), \
                                        stream, how),                                                        \
                  call)

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpyToSymbol, 1, NULL, 0, src, count, kind, NULL, 0, real(symbol, src, count, offset, kind))
}
cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpyToSymbol_ptds, 1, NULL, 0, src, count, kind, NULL, 0,
                    real(symbol, src, count, offset, kind))
}
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpyToSymbolAsync, 1, NULL, 0, src, count, kind, MEMOBS_PL__LEG(stream), 1,
                    real(symbol, src, count, offset, kind, stream))
}
cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                         enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpyToSymbolAsync_ptsz, 1, NULL, 0, src, count, kind, MEMOBS_PL__PT(stream), 1,
                    real(symbol, src, count, offset, kind, stream))
}
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpyFromSymbol, 0, dst, 1, NULL, count, kind, NULL, 0, real(dst, symbol, count, offset, kind))
}
cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpyFromSymbol_ptds, 0, dst, 1, NULL, count, kind, NULL, 0,
                    real(dst, symbol, count, offset, kind))
}
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpyFromSymbolAsync, 0, dst, 1, NULL, count, kind, MEMOBS_PL__LEG(stream), 1,
                    real(dst, symbol, count, offset, kind, stream))
}
cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpyFromSymbolAsync_ptsz, 0, dst, 1, NULL, count, kind, MEMOBS_PL__PT(stream), 1,
                    real(dst, symbol, count, offset, kind, stream))
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DToArray, 1, NULL, 0, src, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, wOffset, hOffset, src, spitch, width, height, kind))
}
cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DToArray_ptds, 1, NULL, 0, src, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, wOffset, hOffset, src, spitch, width, height, kind))
}
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                     cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpy2DToArrayAsync, 1, NULL, 0, src, (uint64_t)width * height, kind,
                    MEMOBS_PL__LEG(stream), 1, real(dst, wOffset, hOffset, src, spitch, width, height, kind, stream))
}
cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                          size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                          cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpy2DToArrayAsync_ptsz, 1, NULL, 0, src, (uint64_t)width * height, kind,
                    MEMOBS_PL__PT(stream), 1, real(dst, wOffset, hOffset, src, spitch, width, height, kind, stream))
}
cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DFromArray, 0, dst, 1, NULL, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, dpitch, src, wOffset, hOffset, width, height, kind))
}
cudaError_t cudaMemcpy2DFromArray_ptds(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DFromArray_ptds, 0, dst, 1, NULL, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, dpitch, src, wOffset, hOffset, width, height, kind))
}
cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpy2DFromArrayAsync, 0, dst, 1, NULL, (uint64_t)width * height, kind,
                    MEMOBS_PL__LEG(stream), 1, real(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream))
}
cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                            size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                            cudaStream_t stream) {
    MEMOBS_PL__SIDE(cudaMemcpy2DFromArrayAsync_ptsz, 0, dst, 1, NULL, (uint64_t)width * height, kind,
                    MEMOBS_PL__PT(stream), 1, real(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream))
}
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DArrayToArray, 1, NULL, 1, NULL, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height, kind))
}
cudaError_t cudaMemcpy2DArrayToArray_ptds(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                          cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t width,
                                          size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_PL__SIDE(cudaMemcpy2DArrayToArray_ptds, 1, NULL, 1, NULL, (uint64_t)width * height, kind, NULL, 0,
                    real(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height, kind))
}

/* Batches: as memobs_cudaMemcpyBatchAsync, memobs_cudaMemcpy3DBatchAsync. */
#define MEMOBS_PL__BATCH(name, dsts, srcs, sizes, ops, count, stream, call)                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    {                                                                                                        \
        memobs_cuda__op_t op[3];                                                                             \
        memobs_cuda__batch_pre(op, dsts, srcs, sizes, ops, count, stream);                                   \
        return memobs_pl__end(memobs_cuda__batch_post(op, call));                                            \
    }
cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                 cudaStream_t stream) {
    MEMOBS_PL__BATCH(cudaMemcpyBatchAsync, dsts, srcs, sizes, NULL, count, MEMOBS_PL__LEG(stream),
                     real(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream))
}
cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                      struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                      cudaStream_t stream) {
    MEMOBS_PL__BATCH(cudaMemcpyBatchAsync_ptsz, dsts, srcs, sizes, NULL, count, MEMOBS_PL__PT(stream),
                     real(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream))
}
cudaError_t cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags,
                                   cudaStream_t stream) {
    MEMOBS_PL__BATCH(cudaMemcpy3DBatchAsync, NULL, NULL, NULL, opList, numOps, MEMOBS_PL__LEG(stream),
                     real(numOps, opList, flags, stream))
}
cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags,
                                        cudaStream_t stream) {
    MEMOBS_PL__BATCH(cudaMemcpy3DBatchAsync_ptsz, NULL, NULL, NULL, opList, numOps, MEMOBS_PL__PT(stream),
                     real(numOps, opList, flags, stream))
}

/* Capture and graphs: what memobs_cuda.h's capture and graph wrappers do.
   A copy issued into a capturing stream is remembered with its capture;
   the ended capture hands it to its graph, instantiation to the
   executable graph, and each launch counts it. */
#define MEMOBS_PL__WRAP(name, wrapped, call)                                                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    return memobs_pl__end(wrapped)

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    MEMOBS_PL__WRAP(cudaStreamBeginCapture, memobs_cuda__capture_begun(real(stream, mode), MEMOBS_PL__LEG(stream)),
                    real(stream, mode));
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    MEMOBS_PL__WRAP(cudaStreamBeginCapture_ptsz,
                    memobs_cuda__capture_begun(real(stream, mode), MEMOBS_PL__PT(stream)), real(stream, mode));
}
/* The capture's id is asked before it ends (after, the stream has none). */
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
    MEMOBS_PL__GET(cudaStreamEndCapture);
    if (!memobs_pl__begin()) return real(stream, pGraph);
    {
        unsigned long long id = memobs_cuda__capture_id(MEMOBS_PL__LEG(stream));
        return memobs_pl__end(memobs_cuda__capture_ended(real(stream, pGraph), id, pGraph));
    }
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph) {
    MEMOBS_PL__GET(cudaStreamEndCapture_ptsz);
    if (!memobs_pl__begin()) return real(stream, pGraph);
    {
        unsigned long long id = memobs_cuda__capture_id(MEMOBS_PL__PT(stream));
        return memobs_pl__end(memobs_cuda__capture_ended(real(stream, pGraph), id, pGraph));
    }
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    MEMOBS_PL__WRAP(cudaGraphInstantiate,
                    memobs_cuda__instantiated(real(pGraphExec, graph, flags), pGraphExec, graph),
                    real(pGraphExec, graph, flags));
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    MEMOBS_PL__WRAP(cudaGraphInstantiateWithFlags,
                    memobs_cuda__instantiated(real(pGraphExec, graph, flags), pGraphExec, graph),
                    real(pGraphExec, graph, flags));
}
cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *params) {
    MEMOBS_PL__WRAP(cudaGraphInstantiateWithParams,
                    memobs_cuda__instantiated(real(pGraphExec, graph, params), pGraphExec, graph),
                    real(pGraphExec, graph, params));
}
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                cudaGraphInstantiateParams *params) {
    MEMOBS_PL__WRAP(cudaGraphInstantiateWithParams_ptsz,
                    memobs_cuda__instantiated(real(pGraphExec, graph, params), pGraphExec, graph),
                    real(pGraphExec, graph, params));
}
/* A launch into a capturing stream adds the graph's copies to that capture. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
    MEMOBS_PL__GET(cudaGraphLaunch);
    if (!memobs_pl__begin()) return real(graphExec, stream);
    {
        unsigned long long id = memobs_cuda__capture_id(MEMOBS_PL__LEG(stream));
        return memobs_pl__end(memobs_cuda__launched(real(graphExec, stream), graphExec, id));
    }
}
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
    MEMOBS_PL__GET(cudaGraphLaunch_ptsz);
    if (!memobs_pl__begin()) return real(graphExec, stream);
    {
        unsigned long long id = memobs_cuda__capture_id(MEMOBS_PL__PT(stream));
        return memobs_pl__end(memobs_cuda__launched(real(graphExec, stream), graphExec, id));
    }
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    MEMOBS_PL__WRAP(cudaGraphExecDestroy, memobs_cuda__forget(real(graphExec), graphExec, 1), real(graphExec));
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    MEMOBS_PL__WRAP(cudaGraphDestroy, memobs_cuda__forget(real(graph), graph, 0), real(graph));
}
/* As memobs_cudaDeviceReset: the device's blocks leave the tracker. */
cudaError_t cudaDeviceReset(void) {
    MEMOBS_PL__GET(cudaDeviceReset);
    if (!memobs_pl__begin()) return real();
    {
        void *ctx = memobs_cuda__reset_pre();
        return memobs_pl__end(memobs_cuda__reset_post(real(), ctx));
    }
}

/* Allocations: memobs_cuda.h's wrappers, whose runtime calls are the real
   functions (the macros above). */
#define MEMOBS_PL__VIA(name, wrapped, call)                                                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    return memobs_pl__end(wrapped)

cudaError_t cudaMalloc(void **devPtr, size_t size) {
    MEMOBS_PL__VIA(cudaMalloc, memobs_cudaMalloc(devPtr, size), real(devPtr, size));
}
cudaError_t cudaFree(void *devPtr) { MEMOBS_PL__VIA(cudaFree, memobs_cudaFree(devPtr), real(devPtr)); }
cudaError_t cudaMallocHost(void **ptr, size_t size) {
    MEMOBS_PL__VIA(cudaMallocHost, memobs_cudaMallocHost(ptr, size), real(ptr, size));
}
cudaError_t cudaFreeHost(void *ptr) { MEMOBS_PL__VIA(cudaFreeHost, memobs_cudaFreeHost(ptr), real(ptr)); }
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    MEMOBS_PL__VIA(cudaHostAlloc, memobs_cudaHostAlloc(pHost, size, flags), real(pHost, size, flags));
}
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    MEMOBS_PL__VIA(cudaMallocManaged, memobs_cudaMallocManaged(devPtr, size, flags), real(devPtr, size, flags));
}
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    MEMOBS_PL__VIA(cudaHostRegister, memobs_cudaHostRegister(ptr, size, flags), real(ptr, size, flags));
}
cudaError_t cudaHostUnregister(void *ptr) {
    MEMOBS_PL__VIA(cudaHostUnregister, memobs_cudaHostUnregister(ptr), real(ptr));
}
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    MEMOBS_PL__VIA(cudaMallocAsync,
                   memobs_cuda__malloc_async_post(real(devPtr, size, hStream), devPtr, size,
                                                  hStream ? hStream : cudaStreamLegacy),
                   real(devPtr, size, hStream));
}
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
    MEMOBS_PL__VIA(cudaMallocAsync_ptsz,
                   memobs_cuda__malloc_async_post(real(devPtr, size, hStream), devPtr, size,
                                                  hStream ? hStream : cudaStreamPerThread),
                   real(devPtr, size, hStream));
}
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    MEMOBS_PL__GET(cudaFreeAsync);
    if (!memobs_pl__begin()) return real(devPtr, hStream);
    {
        int marked = memobs_cuda__free_pre(devPtr);
        return memobs_pl__end(memobs_cuda__free_async_post(real(devPtr, hStream), devPtr, marked,
                                                           hStream ? hStream : cudaStreamLegacy));
    }
}
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
    MEMOBS_PL__GET(cudaFreeAsync_ptsz);
    if (!memobs_pl__begin()) return real(devPtr, hStream);
    {
        int marked = memobs_cuda__free_pre(devPtr);
        return memobs_pl__end(memobs_cuda__free_async_post(real(devPtr, hStream), devPtr, marked,
                                                           hStream ? hStream : cudaStreamPerThread));
    }
}

/* memobs' driver calls: the driver functions already in the global scope,
   else libcuda.so.1, else those of a runtime library loaded with
   RTLD_LOCAL (the test double of the runtime defines them; the real
   runtime does not). Called once per name, from memobs_cuda.h's
   pthread_once. */
static int memobs_pl__ours(const void *p); /* the driver section, below */
void *memobs_cuda_driver_symbol(const char *name) {
    static void *h;
    void *p = dlsym(RTLD_DEFAULT, name), *rt;
    if (p && !memobs_pl__ours(p)) return p; /* never a driver interposer of ours */
    p = NULL;
    if (!h) h = dlopen(MEMOBS_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL); /* never closed */
    if (h && (p = dlsym(h, name)) != NULL) return p;
    if ((rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        p = dlsym(rt, name);
        dlclose(rt); /* RTLD_NOLOAD took a reference; the library stays */
    }
    return p;
}

/* The process the user started (its pid, inherited by every process it
   starts, exec keeping it) is the one that says when nothing was
   intercepted: the helpers a launcher, a shell or Python start stay quiet. */
#define MEMOBS_PL__ROOT "MEMOBS_PRELOAD_ROOT"
static int memobs_pl__root(void) {
    const char *s = getenv(MEMOBS_PL__ROOT);
    return !s || strtol(s, NULL, 10) == (long)getpid();
}

/* What the Python package (or any module built from memobs.h) checks
   before it records into this library's memobs: the same layout. */
uint64_t memobs_preload_abi(void) { return MEMOBS__ABI_KEY; }

static int memobs_pl__quiet(void);

__attribute__((constructor)) static void memobs_pl__init(void) {
    char pid[24];
    /* The program's own records (MEMOBS_RECORD_* through this library's
       API, the Python package attached to it) are checked against, not
       added to, what the interposers observe. */
    memobs_set_manual_apart(1);
    memobs__sig_set_skip(memobs_pl__quiet); /* a stop signal's write: the rule of the exit's below */
    if (!getenv(MEMOBS_PL__ROOT)) {
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        setenv(MEMOBS_PL__ROOT, pid, 0);
    }
}

static void *memobs_pl__cu_find(const char *name);

/* 1 when a thread of this process recorded anything through memobs (its
   shard exists): the Python package or the program's own API calls. */
static int memobs_pl__recorded(void) {
    memobs__shard_t *s;
    int any = 0;
    pthread_mutex_lock(&memobs__g.lock);
    for (s = memobs__g.shards; s && !any; s = s->next) any = s != &memobs__g.fallback;
    pthread_mutex_unlock(&memobs__g.lock);
    return any;
}

/* 1 in a process that made no CUDA call and recorded nothing. */
static int memobs_pl__quiet(void) {
    return __atomic_load_n(&memobs_pl__g.intercepted, __ATOMIC_RELAXED) == 0 && !memobs_pl__recorded();
}

/* Runs before memobs' exit handlers (registered by this library's
   constructor, before the program's start-up registered the destructors'
   run). A process that made no CUDA call and recorded nothing (a launcher
   such as timeout or torchrun, a shell and its helpers) writes no files
   at exit, so that it leaves alone the ones of the process that did. */
__attribute__((destructor)) static void memobs_pl__fini(void) {
    int none = __atomic_load_n(&memobs_pl__g.intercepted, __ATOMIC_RELAXED) == 0;
    __atomic_store_n(&memobs_pl__g.done, 1, __ATOMIC_RELAXED);
    if (memobs_pl__quiet()) memobs_set_exit_outputs(0);
    if (none && memobs_pl__root())
        fprintf(stderr, "memobs preload: no CUDA call was intercepted in pid %ld (%s): %s\n", (long)getpid(),
                program_invocation_short_name,
                memobs_pl__find("cudaMalloc") || memobs_pl__cu_find("cuMemAlloc_v2")
                    ? "the program made none through the dynamic runtime or driver"
                    : "no dynamic CUDA runtime (libcudart.so) or driver (libcuda.so) in the process: a program "
                      "linked with the static runtime, or none, has nothing to intercept");
}

/* ======================================================================== */
/* The driver API (libcuda.so.1)                                            */
/* ======================================================================== */

/* Engines also call the driver directly. Intercepted: the names a program
   built against cuda.h binds to (the header maps cuMemAlloc to
   cuMemAlloc_v2, cuMemcpyHtoD to cuMemcpyHtoD_v2, ..., and, in units built
   with CUDA_API_PER_THREAD_DEFAULT_STREAM, the copies and stream-ordered
   calls to their _ptds / _ptsz entry points): cuMemcpyHtoD_v2,
   cuMemcpyDtoH_v2, cuMemcpyDtoD_v2, their Async_v2 forms, cuMemcpy,
   cuMemcpyAsync, cuMemcpyPeer, cuMemcpyPeerAsync, cuMemAlloc_v2,
   cuMemAllocPitch_v2, cuMemAllocHost_v2, cuMemHostAlloc, cuMemAllocManaged,
   cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFree_v2, cuMemFreeHost,
   cuMemFreeAsync, and the per-thread entry points of those that have one.
   The unsuffixed v1 names (cuMemAlloc, cuMemcpyHtoD, cuMemFree, ...) take
   32-bit device pointers and sizes; no cuda.h since CUDA 3.2 binds a
   program to them, so they are left to the driver (not recorded). Driver
   symbols carry no version: these are exported unversioned.
   Each forwards to the driver's function (dlsym(RTLD_NEXT, name), else a
   libcuda.so.1 already loaded with RTLD_LOCAL) and records through the
   same memobs_cuda.h helpers as the runtime's interposers above, under the
   same re-entry guard: a driver call made inside an intercepted runtime
   call on the same thread is forwarded only. Copies whose direction the
   driver infers (cuMemcpy, cuMemcpyAsync) are classified as memobs_cuda.h
   classifies cudaMemcpyDefault: by the driver's pointer attributes. An
   allocation's device is the current context's (a stream-ordered one: its
   stream's context's). Calls that reach the driver through
   cuGetProcAddress / cudaGetDriverEntryPoint (the CUDA runtime itself
   does), or through dlsym on a handle of libcuda.so.1, are not seen. */
#include <cuda.h>

/* memobs_cuda.h's helpers take and return runtime codes; they test only
   these two, which the driver numbers alike. */
_Static_assert((int)CUDA_SUCCESS == (int)cudaSuccess && (int)CUDA_ERROR_OUT_OF_MEMORY == (int)cudaErrorMemoryAllocation,
               "CUresult and cudaError_t differ where memobs_cuda.h looks");

/* The per-thread default stream entry points: declared by cuda.h only in
   units built for that stream. */
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

#define MEMOBS_PL__CU_FNS(X)                                                                                 \
    X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2)  \
    X(cuMemcpyDtoDAsync_v2) X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyPeer) X(cuMemcpyPeerAsync)                 \
    X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2_ptds) X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyHtoDAsync_v2_ptsz)      \
    X(cuMemcpyDtoHAsync_v2_ptsz) X(cuMemcpyDtoDAsync_v2_ptsz) X(cuMemcpy_ptds) X(cuMemcpyAsync_ptsz)          \
    X(cuMemcpyPeer_ptds) X(cuMemcpyPeerAsync_ptsz) X(cuMemAlloc_v2) X(cuMemAllocPitch_v2)                     \
    X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)    \
    X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFree_v2) X(cuMemFreeHost)              \
    X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)

static struct {
#define MEMOBS_PL__FIELD(name) void *name;
    MEMOBS_PL__CU_FNS(MEMOBS_PL__FIELD)
#undef MEMOBS_PL__FIELD
} memobs_pl__cu_real;

/* The driver's function, or NULL while none is loaded (looked up again at
   the next call). */
static void *memobs_pl__cu_find(const char *name) {
    void *p = dlsym(RTLD_NEXT, name), *h;
    if (!p && (h = dlopen(MEMOBS_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        p = dlsym(h, name);
        dlclose(h); /* RTLD_NOLOAD took a reference */
    }
    return p;
}

static void *memobs_pl__cu_get(void **slot, const char *name) {
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!p && (p = memobs_pl__cu_find(name)) != NULL) __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    return p;
}

/* 1 when p lies in this library (an interposer): memobs' own driver
   lookups (memobs_cuda_driver_symbol) pass over it. */
static int memobs_pl__ours(const void *p) {
    Dl_info a, b;
    return dladdr(p, &a) && dladdr((const void *)&memobs_pl__g, &b) && a.dli_fbase == b.dli_fbase;
}

static CUresult memobs_pl__cu_missing(const char *name) {
    if (!__atomic_exchange_n(&memobs_pl__g.missing_said, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "memobs preload: %s called but no CUDA driver (%s) defines it; returning "
                        "CUDA_ERROR_NOT_INITIALIZED\n", name, MEMOBS_CUDA_DRIVER);
    return CUDA_ERROR_NOT_INITIALIZED;
}

/* memobs_pl__begin for the driver's interposers: what memobs_cuda.h's
   helpers see is a driver call (its exit handler is registered again at
   the first runtime call: see memobs_cuda__saw). */
static int memobs_pl__cu_begin(void) {
    if (!memobs_pl__begin()) return 0;
    memobs_cuda__via_driver = 1;
    return 1;
}
static CUresult memobs_pl__cu_end(cudaError_t rc) {
    memobs_cuda__via_driver = 0;
    return (CUresult)memobs_pl__end(rc);
}

/* A driver address (CUdeviceptr) or host pointer as memobs' pointer. */
#define MEMOBS_PL__CU_PTR(p) ((const void *)(uintptr_t)(p))

#define MEMOBS_PL__CU_GET(name)                                                                              \
    __typeof__(name) *real = (__typeof__(name) *)memobs_pl__cu_get(&memobs_pl__cu_real.name, #name);         \
    if (!real) return memobs_pl__cu_missing(#name)

/* Copies: the shape of MEMOBS_PL__COPY. */
#define MEMOBS_PL__CU_COPY(name, dst, src, bytes, kind, stream, how, call)                                  \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        memobs_cuda__op_t op;                                                                                \
        memobs_cuda__copy_pre(&op, MEMOBS_PL__CU_PTR(dst), MEMOBS_PL__CU_PTR(src), bytes, kind, stream, how); \
        return memobs_pl__cu_end(memobs_cuda__copy_post(&op, (cudaError_t)(call)));                          \
    }

/* Each copy shape defines its entry point and the per-thread one (`dflt`:
   what stream 0 means there). A synchronous copy times on the host clock,
   as cudaMemcpy; the peer copies go on a stream, as memobs_cudaMemcpyPeer. */
#define MEMOBS_PL__CU_SYNC(name, D, S, kind)                                                                 \
    CUresult name(D dst, S src, size_t n) { MEMOBS_PL__CU_COPY(name, dst, src, n, kind, NULL, 0, real(dst, src, n)) }
#define MEMOBS_PL__CU_ASYNC(name, D, S, kind, dflt)                                                          \
    CUresult name(D dst, S src, size_t n, CUstream s) {                                                      \
        MEMOBS_PL__CU_COPY(name, dst, src, n, kind, s ? s : dflt, 1, real(dst, src, n, s))                   \
    }
#define MEMOBS_PL__CU_PEER(name, dflt)                                                                       \
    CUresult name(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {              \
        MEMOBS_PL__CU_COPY(name, dst, src, n, cudaMemcpyDeviceToDevice, dflt, 1, real(dst, dctx, src, sctx, n)) \
    }
#define MEMOBS_PL__CU_PEER_ASYNC(name, dflt)                                                                 \
    CUresult name(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {  \
        MEMOBS_PL__CU_COPY(name, dst, src, n, cudaMemcpyDeviceToDevice, s ? s : dflt, 1,                     \
                           real(dst, dctx, src, sctx, n, s))                                                 \
    }

MEMOBS_PL__CU_SYNC(cuMemcpyHtoD_v2, CUdeviceptr, const void *, cudaMemcpyHostToDevice)
MEMOBS_PL__CU_SYNC(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *, cudaMemcpyHostToDevice)
MEMOBS_PL__CU_SYNC(cuMemcpyDtoH_v2, void *, CUdeviceptr, cudaMemcpyDeviceToHost)
MEMOBS_PL__CU_SYNC(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr, cudaMemcpyDeviceToHost)
MEMOBS_PL__CU_SYNC(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, cudaMemcpyDeviceToDevice)
MEMOBS_PL__CU_SYNC(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr, cudaMemcpyDeviceToDevice)
MEMOBS_PL__CU_SYNC(cuMemcpy, CUdeviceptr, CUdeviceptr, cudaMemcpyDefault)
MEMOBS_PL__CU_SYNC(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr, cudaMemcpyDefault)
MEMOBS_PL__CU_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, cudaMemcpyHostToDevice, cudaStreamLegacy)
MEMOBS_PL__CU_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *, cudaMemcpyHostToDevice, cudaStreamPerThread)
MEMOBS_PL__CU_ASYNC(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, cudaMemcpyDeviceToHost, cudaStreamLegacy)
MEMOBS_PL__CU_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr, cudaMemcpyDeviceToHost, cudaStreamPerThread)
MEMOBS_PL__CU_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, cudaMemcpyDeviceToDevice, cudaStreamLegacy)
MEMOBS_PL__CU_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr, cudaMemcpyDeviceToDevice, cudaStreamPerThread)
MEMOBS_PL__CU_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, cudaMemcpyDefault, cudaStreamLegacy)
MEMOBS_PL__CU_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr, cudaMemcpyDefault, cudaStreamPerThread)
MEMOBS_PL__CU_PEER(cuMemcpyPeer, cudaStreamLegacy)
MEMOBS_PL__CU_PEER(cuMemcpyPeer_ptds, cudaStreamPerThread)
MEMOBS_PL__CU_PEER_ASYNC(cuMemcpyPeerAsync, cudaStreamLegacy)
MEMOBS_PL__CU_PEER_ASYNC(cuMemcpyPeerAsync_ptsz, cudaStreamPerThread)

/* After an allocation: what memobs_cudaMalloc (device, managed: the
   current context's device) and memobs_cudaMallocHost (pinned) do with
   the runtime's result. */
static cudaError_t memobs_pl__cu_allocated(CUresult rc, const char *call, const void *p, size_t size,
                                           memobs_mem_kind_t kind) {
    int device = -1;
    if (kind != MEMOBS_MEM_PINNED && (rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY))
        device = memobs_cuda__on() ? memobs_cuda__cur_device() : 0;
    return memobs_cuda__allocated((cudaError_t)rc, call, rc == CUDA_SUCCESS ? p : NULL, size, kind, device, NULL);
}

/* Allocations: `p` (the block) and `size` are read after the call, and
   may use its result `rc`. */
#define MEMOBS_PL__CU_ALLOC(name, call, p, size, kind)                                                       \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        CUresult rc = call;                                                                                  \
        return memobs_pl__cu_end(                                                                            \
            memobs_pl__cu_allocated(rc, #name, rc == CUDA_SUCCESS ? MEMOBS_PL__CU_PTR(p) : NULL, size, kind)); \
    }
/* Stream-ordered: memobs_cudaMallocAsync's ending (its stream's device;
   none recorded when captured into a graph). */
#define MEMOBS_PL__CU_ALLOC_ASYNC(name, call, dptr, size, stream)                                           \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        CUresult rc = call;                                                                                  \
        void *p = rc == CUDA_SUCCESS ? (void *)(uintptr_t)*(dptr) : NULL;                                    \
        return memobs_pl__cu_end(memobs_cuda__malloc_async_post((cudaError_t)rc, &p, size, stream));         \
    }
#define MEMOBS_PL__CU_FREE(name, p, call)                                                                    \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        int marked = memobs_cuda__free_pre(MEMOBS_PL__CU_PTR(p));                                            \
        return memobs_pl__cu_end(memobs_cuda__free_post((cudaError_t)(call), MEMOBS_PL__CU_PTR(p), marked)); \
    }
#define MEMOBS_PL__CU_FREE_ASYNC(name, p, stream, call)                                                      \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        int marked = memobs_cuda__free_pre(MEMOBS_PL__CU_PTR(p));                                            \
        return memobs_pl__cu_end(                                                                            \
            memobs_cuda__free_async_post((cudaError_t)(call), MEMOBS_PL__CU_PTR(p), marked, stream));        \
    }

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    MEMOBS_PL__CU_ALLOC(cuMemAlloc_v2, real(dptr, bytesize), *dptr, bytesize, MEMOBS_MEM_DEVICE)
}
/* The block is pitch x height bytes, the pitch the driver chose. */
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
    MEMOBS_PL__CU_ALLOC(cuMemAllocPitch_v2, real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), *dptr,
                        rc == CUDA_SUCCESS ? *pPitch * Height : WidthInBytes * Height, MEMOBS_MEM_DEVICE)
}
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    MEMOBS_PL__CU_ALLOC(cuMemAllocHost_v2, real(pp, bytesize), *pp, bytesize, MEMOBS_MEM_PINNED)
}
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    MEMOBS_PL__CU_ALLOC(cuMemHostAlloc, real(pp, bytesize, Flags), *pp, bytesize, MEMOBS_MEM_PINNED)
}
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    MEMOBS_PL__CU_ALLOC(cuMemAllocManaged, real(dptr, bytesize, flags), *dptr, bytesize, MEMOBS_MEM_MANAGED)
}
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    MEMOBS_PL__CU_ALLOC_ASYNC(cuMemAllocAsync, real(dptr, bytesize, hStream), dptr, bytesize,
                              hStream ? hStream : cudaStreamLegacy)
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    MEMOBS_PL__CU_ALLOC_ASYNC(cuMemAllocAsync_ptsz, real(dptr, bytesize, hStream), dptr, bytesize,
                              hStream ? hStream : cudaStreamPerThread)
}
/* From a pool: the memory type and device from the pointer's attributes
   (a host-located pool's pinned memory, a peer's pool's device), not from
   the stream. */
#define MEMOBS_PL__CU_POOL_ALLOC(name, call, dptr, size, stream)                                            \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        CUresult rc = call;                                                                                  \
        void *p = rc == CUDA_SUCCESS ? (void *)(uintptr_t)*(dptr) : NULL;                                    \
        return memobs_pl__cu_end(memobs_cuda__pool_alloc_post((cudaError_t)rc, #name, &p, size, stream));    \
    }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    MEMOBS_PL__CU_POOL_ALLOC(cuMemAllocFromPoolAsync, real(dptr, bytesize, pool, hStream), dptr, bytesize,
                             hStream ? hStream : cudaStreamLegacy)
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    MEMOBS_PL__CU_POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz, real(dptr, bytesize, pool, hStream), dptr, bytesize,
                             hStream ? hStream : cudaStreamPerThread)
}
CUresult cuMemFree_v2(CUdeviceptr dptr) { MEMOBS_PL__CU_FREE(cuMemFree_v2, dptr, real(dptr)) }
CUresult cuMemFreeHost(void *p) { MEMOBS_PL__CU_FREE(cuMemFreeHost, p, real(p)) }
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    MEMOBS_PL__CU_FREE_ASYNC(cuMemFreeAsync, dptr, hStream ? hStream : cudaStreamLegacy, real(dptr, hStream))
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    MEMOBS_PL__CU_FREE_ASYNC(cuMemFreeAsync_ptsz, dptr, hStream ? hStream : cudaStreamPerThread, real(dptr, hStream))
}
