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

   Intercepted: cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D,
   cudaMemcpy2DAsync, cudaMemcpyPeer, cudaMemcpyPeerAsync, cudaMalloc,
   cudaFree, cudaMallocHost, cudaFreeHost, cudaHostAlloc,
   cudaMallocManaged, cudaMallocAsync, cudaFreeAsync, and the per-thread
   default stream entry points the runtime exports for them
   (cudaMemcpy_ptds, cudaMemcpyAsync_ptsz, cudaMemcpy2D_ptds,
   cudaMemcpy2DAsync_ptsz, cudaMallocAsync_ptsz, cudaFreeAsync_ptsz).
   They are exported with the runtime's symbol version (libcudart.so.13,
   mk/preload.map), as is memobs' whole C API (unversioned, default
   visibility): a program finds memobs_set_phase with
   dlsym(RTLD_DEFAULT, ...) and sets the phase on this instance.

   Safety: a call made while the same thread is inside an intercepted call
   (the runtime calling itself) is forwarded and not recorded; after this
   library's destructor calls are forwarded only. When no call was
   intercepted (no dynamic runtime: nothing to see), one line says so on
   stderr at exit, in the process the user started only: the constructor
   puts its pid in MEMOBS_PRELOAD_ROOT, which the processes it starts
   inherit (a shell's or Python's helpers stay quiet).

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
   header only in units built for that stream. */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

#define MEMOBS_PL__FNS(X)                                                                                    \
    X(cudaMemcpy) X(cudaMemcpyAsync) X(cudaMemcpy2D) X(cudaMemcpy2DAsync) X(cudaMemcpyPeer)                  \
    X(cudaMemcpyPeerAsync) X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaFreeHost) X(cudaHostAlloc)      \
    X(cudaMallocManaged) X(cudaMallocAsync) X(cudaFreeAsync) X(cudaMemcpy_ptds) X(cudaMemcpyAsync_ptsz)     \
    X(cudaMemcpy2D_ptds) X(cudaMemcpy2DAsync_ptsz) X(cudaMallocAsync_ptsz) X(cudaFreeAsync_ptsz)            \
    X(cudaHostRegister) X(cudaHostUnregister) X(cudaGetErrorString) X(cudaGetErrorName)

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
    memobs_observer_enter(); /* observed records, apart from the program's own (memobs_manual_apart) */
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
                                        "intercepted CUDA runtime calls that returned an error (not recorded)");
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
void *memobs_cuda_driver_symbol(const char *name) {
    static void *h;
    void *p = dlsym(RTLD_DEFAULT, name), *rt;
    if (p) return p;
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

__attribute__((constructor)) static void memobs_pl__init(void) {
    char pid[24];
    /* The program's own records (MEMOBS_RECORD_* through this library's
       API, the Python package attached to it) are checked against, not
       added to, what the interposers observe. */
    memobs_manual_apart(1);
    if (!getenv(MEMOBS_PL__ROOT)) {
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        setenv(MEMOBS_PL__ROOT, pid, 0);
    }
}

__attribute__((destructor)) static void memobs_pl__fini(void) {
    __atomic_store_n(&memobs_pl__g.done, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&memobs_pl__g.intercepted, __ATOMIC_RELAXED) == 0 && memobs_pl__root())
        fprintf(stderr, "memobs preload: no CUDA runtime call was intercepted in pid %ld (%s): %s\n",
                (long)getpid(), program_invocation_short_name,
                memobs_pl__find("cudaMalloc") ? "the program made none through the dynamic runtime"
                                              : "no dynamic CUDA runtime libcudart.so in the process: a program "
                                                "linked with the static runtime, or none, has nothing to intercept");
}
