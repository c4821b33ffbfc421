/* memobs_preload.c - memobs with no code change: an LD_PRELOAD library
   that records the CUDA runtime copies and allocations of any program that
   uses the dynamic CUDA runtime (libcudart.so).

       make preload
       LD_PRELOAD=build/libmemobs_preload.so MEMOBS_SUMMARY=stderr program

   Each intercepted call is forwarded to the real runtime its caller bound
   (RUNTIME MAJORS below) and returns its result unchanged; what it records
   is what memobs_cuda.h's wrappers record (this file calls their helpers),
   only when the real call succeeded. A failed call is counted in the user counter
   "preload_failed_calls".

   Intercepted (MEMOBS_PL__FNS below, less the last two, which are only
   called): the copies cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D(Async),
   cudaMemcpyPeer(Async), cudaMemcpy3D(Async), cudaMemcpy3DPeer(Async),
   cudaMemcpyToSymbol(Async), cudaMemcpyFromSymbol(Async),
   cudaMemcpy2DToArray(Async), cudaMemcpy2DFromArray(Async),
   cudaMemcpy2DArrayToArray, cudaMemcpyBatchAsync, cudaMemcpy3DBatchAsync;
   the allocations cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost,
   cudaHostAlloc, cudaMallocManaged, cudaMallocAsync,
   cudaMallocFromPoolAsync, cudaFreeAsync, cudaHostRegister,
   cudaHostUnregister; capture and graphs
   (cudaStreamBeginCapture, cudaStreamEndCapture, cudaGraphInstantiate,
   cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithParams,
   cudaGraphLaunch, cudaGraphExecDestroy, cudaGraphDestroy: a copy
   captured into a stream counts at each launch of its graph, as with
   memobs_cuda.h's wrappers) and cudaDeviceReset; and the per-thread
   default stream entry points (_ptds, _ptsz) the runtime exports for
   them. The driver API's copies and allocations too: its section, at the
   end, then the driver entry points' (cuGetProcAddress,
   cudaGetDriverEntryPoint). memobs' whole C API is
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
   around the program leaves the program's summary alone. Nor does it claim
   their names (MEMOBS__CLAIM_LATE): the names are claimed at the first
   intercepted call (or the first write), so a program with its own memobs
   that configured them first keeps them. Built -Bsymbolic, with
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

   RUNTIME MAJORS: each runtime interposer is defined once per major a
   program may bind (the bodies in preload/memobs_preload_runtime.inc,
   compiled once per major with that major's signatures) and exported, by
   .symver, as name@libcudart.so.11.0, name@libcudart.so.12 or
   name@libcudart.so.13 (hidden versions: only a lookup of that version
   binds them). A major's interposer forwards to that major's runtime:
   dlvsym(RTLD_NEXT, name, "libcudart.so.N"), else the library of that
   soname loaded with RTLD_LOCAL; never an unversioned lookup, which may
   find another major's. The calls of one signature in every major are
   also the default version (name@@memobs_cudart_default), which an
   unversioned dlsym gets: forwarded to what dlsym(RTLD_NEXT, name) finds.
   Those whose signature differs (cudaGraphInstantiate, the batches) have
   no default: such a lookup passes over this library. docs/preload.md
   lists the calls and signatures by major.

   LICENSE: MIT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

/* The runtime's interposers, by major. Each list names the interposers
   exported under the version nodes it says (preload/memobs_preload.map);
   preload/memobs_preload_runtime.inc holds their bodies, compiled once per
   major. Adding a function: its name in one list, its body in the .inc. */
/* One signature in every major; in all three and the default node. */
#define MEMOBS_PL__RT_ALL(X)                                                                                 \
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
    X(cudaMemcpy2DArrayToArray_ptds) X(cudaStreamBeginCapture) X(cudaStreamBeginCapture_ptsz)               \
    X(cudaStreamEndCapture) X(cudaStreamEndCapture_ptsz) X(cudaGraphInstantiateWithFlags) X(cudaGraphLaunch) \
    X(cudaGraphLaunch_ptsz) X(cudaGraphExecDestroy) X(cudaGraphDestroy) X(cudaDeviceReset)                  \
    X(cudaMallocFromPoolAsync) X(cudaMallocFromPoolAsync_ptsz)
/* New in 12.0, one signature since: 12, 13 and the default node. */
#define MEMOBS_PL__RT_12(X) X(cudaGraphInstantiateWithParams) X(cudaGraphInstantiateWithParams_ptsz)
/* 11's signature differs from 12's (pErrorNode, pLogBuffer, bufferSize
   for 12's flags): 11, 12, 13; none is the default. */
#define MEMOBS_PL__RT_GRAPH(X) X(cudaGraphInstantiate)
/* New in 12.8; 12's signature has a failIdx that 13's has not: 12, 13;
   none is the default. */
#define MEMOBS_PL__RT_BATCH(X)                                                                               \
    X(cudaMemcpyBatchAsync) X(cudaMemcpyBatchAsync_ptsz) X(cudaMemcpy3DBatchAsync) X(cudaMemcpy3DBatchAsync_ptsz)
/* The runtime's driver entry points (DRIVER ENTRY POINTS below):
   cudaGetDriverEntryPoint (11.3) took (symbol, funcPtr, flags) and 12.0
   added driverStatus: 11, 12, 13; its _ptsz name with 12's signature: 12
   and 13; cudaGetDriverEntryPointByVersion(_ptsz), new in 12.5, one
   signature: 12, 13. All four are in the default node too, with 12's
   signature: the interposer never reads nor writes driverStatus, so an 11
   caller's three arguments reach its own runtime (the one an unversioned
   lookup finds) as they were. */
#define MEMOBS_PL__RT_EP(X) X(cudaGetDriverEntryPoint)
#define MEMOBS_PL__RT_EP12(X) X(cudaGetDriverEntryPoint_ptsz)
#define MEMOBS_PL__RT_EPV(X) X(cudaGetDriverEntryPointByVersion) X(cudaGetDriverEntryPointByVersion_ptsz)

/* Each version node's interposers. The default node answers an
   unversioned lookup (dlsym(RTLD_DEFAULT, name)): calls of one signature
   only, forwarded to what that lookup finds past this library. */
#define MEMOBS_PL__NODE_0(X) MEMOBS_PL__RT_ALL(X) MEMOBS_PL__RT_12(X) MEMOBS_PL__RT_EP(X) MEMOBS_PL__RT_EP12(X) MEMOBS_PL__RT_EPV(X)
#define MEMOBS_PL__NODE_11(X) MEMOBS_PL__RT_ALL(X) MEMOBS_PL__RT_GRAPH(X) MEMOBS_PL__RT_EP(X)
#define MEMOBS_PL__NODE_12(X)                                                                                \
    MEMOBS_PL__RT_ALL(X) MEMOBS_PL__RT_12(X) MEMOBS_PL__RT_GRAPH(X) MEMOBS_PL__RT_BATCH(X) MEMOBS_PL__RT_EP(X) \
    MEMOBS_PL__RT_EP12(X) MEMOBS_PL__RT_EPV(X)
#define MEMOBS_PL__NODE_13(X) MEMOBS_PL__NODE_12(X)

/* Every runtime function a major's table holds: the interposers' and the
   two memobs_cuda.h only calls. */
#define MEMOBS_PL__FNS(X)                                                                                    \
    MEMOBS_PL__RT_ALL(X) MEMOBS_PL__RT_12(X) MEMOBS_PL__RT_GRAPH(X) MEMOBS_PL__RT_BATCH(X)                   \
    MEMOBS_PL__RT_EP(X) MEMOBS_PL__RT_EP12(X) MEMOBS_PL__RT_EPV(X) X(cudaGetErrorString) X(cudaGetErrorName)

/* The runtimes, one table each: slot 0 the default node's (the runtime an
   unversioned lookup finds), 1 to 3 the majors' (the runtime of that
   version: never another's). */
#define MEMOBS_PL__SLOTS 4
static const char *const memobs_pl__version[MEMOBS_PL__SLOTS] = {NULL, "libcudart.so.11.0", "libcudart.so.12",
                                                                 "libcudart.so.13"};
static struct {
#define MEMOBS_PL__FIELD(name) void *name;
    MEMOBS_PL__FNS(MEMOBS_PL__FIELD)
#undef MEMOBS_PL__FIELD
} memobs_pl__real[MEMOBS_PL__SLOTS];
/* The slot of the interposer running on this thread: memobs_cuda.h's own
   runtime calls (cudaMalloc in memobs_cudaMalloc...) go to its runtime. */
static __thread int memobs_pl__slot;

/* The real function of a slot, or NULL while none is loaded (looked up
   again at the next call: a runtime may be dlopen'ed later). A major's:
   its version past this library, else in the library of that soname (the
   version's name) loaded with RTLD_LOCAL; never an unversioned lookup,
   which may find another major's. The default node's: the unversioned
   lookup past this library. */
static void *memobs_pl__find(int slot, const char *name) {
    const char *v = memobs_pl__version[slot];
    void *p, *h;
    if (!v) return dlsym(RTLD_NEXT, name);
    if ((p = dlvsym(RTLD_NEXT, name, v)) == NULL && (h = dlopen(v, RTLD_NOW | RTLD_NOLOAD)) != NULL) {
        p = dlvsym(h, name, v);
        dlclose(h); /* RTLD_NOLOAD took a reference */
    }
    return p;
}

/* 1 when a runtime of any major is in the process. */
static int memobs_pl__any_runtime(void) {
    int i;
    for (i = 0; i < MEMOBS_PL__SLOTS; i++)
        if (memobs_pl__find(i, "cudaMalloc")) return 1;
    return 0;
}

static void *memobs_pl__get(int slot, void **field, const char *name) {
    void *p = __atomic_load_n(field, __ATOMIC_ACQUIRE);
    if (!p && (p = memobs_pl__find(slot, name)) != NULL) __atomic_store_n(field, p, __ATOMIC_RELEASE);
    return p;
}
#define MEMOBS_PL__REAL(slot, name) memobs_pl__get(slot, &memobs_pl__real[slot].name, #name)

/* memobs_cuda.h's implementation calls the runtime by name; here those
   names are the real functions of the calling interposer's runtime (never
   this library's own). */
static cudaError_t memobs_pl__missing(const char *name);
#define MEMOBS_PL__CALL(name, ...)                                                                           \
    (MEMOBS_PL__REAL(memobs_pl__slot, name)                                                                  \
         ? ((__typeof__(name) *)memobs_pl__real[memobs_pl__slot].name)(__VA_ARGS__)                          \
         : memobs_pl__missing(#name))
#define cudaMalloc(...) MEMOBS_PL__CALL(cudaMalloc, __VA_ARGS__)
#define cudaFree(...) MEMOBS_PL__CALL(cudaFree, __VA_ARGS__)
#define cudaMallocHost(...) MEMOBS_PL__CALL(cudaMallocHost, __VA_ARGS__)
#define cudaFreeHost(...) MEMOBS_PL__CALL(cudaFreeHost, __VA_ARGS__)
#define cudaHostAlloc(...) MEMOBS_PL__CALL(cudaHostAlloc, __VA_ARGS__)
#define cudaMallocManaged(...) MEMOBS_PL__CALL(cudaMallocManaged, __VA_ARGS__)
#define cudaHostRegister(...) MEMOBS_PL__CALL(cudaHostRegister, __VA_ARGS__)
#define cudaHostUnregister(...) MEMOBS_PL__CALL(cudaHostUnregister, __VA_ARGS__)
#define cudaGetErrorString(e)                                                                                \
    (MEMOBS_PL__REAL(memobs_pl__slot, cudaGetErrorString)                                                    \
         ? ((__typeof__(cudaGetErrorString) *)memobs_pl__real[memobs_pl__slot].cudaGetErrorString)(e)        \
         : "?")
#define cudaGetErrorName(e)                                                                                  \
    (MEMOBS_PL__REAL(memobs_pl__slot, cudaGetErrorName)                                                      \
         ? ((__typeof__(cudaGetErrorName) *)memobs_pl__real[memobs_pl__slot].cudaGetErrorName)(e)            \
         : "?")

#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST /* memobs_host_api: the NCCL profiler plugin records into this instance */
#define MEMOBS_HOST_INSTANCE "preload"
#define MEMOBS__CLAIM_LATE /* output names are claimed at the first intercepted call or write, not at start-up */
#define MEMOBS__COMP_OWN_MODULE /* every frame here is memobs': a component's top frame is the caller's */
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
    int intercepted;                /* 1 once an outermost call reached a real function (a flag, not a
                                       count: a count's line would bounce between threads at each call) */
    memobs_counter_t failed;        /* "preload_failed_calls" */
    int done;                       /* after the destructor: forward only */
    int missing_said;
} memobs_pl__g = {0, -1, 0, 0};
static __thread int memobs_pl__busy; /* inside an intercepted call on this thread */

static cudaError_t memobs_pl__missing(const char *name) {
    const char *v = memobs_pl__version[memobs_pl__slot];
    if (!__atomic_exchange_n(&memobs_pl__g.missing_said, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "memobs preload: %s called but no CUDA runtime (%s) defines it; returning "
                        "cudaErrorInitializationError\n", name, v ? v : "any version");
    return cudaErrorInitializationError;
}

/* 1: record this call (the caller must call memobs_pl__end); 0: only forward. */
static int memobs_pl__begin(void) {
    if (memobs_pl__busy || __atomic_load_n(&memobs_pl__g.done, __ATOMIC_RELAXED)) return 0;
    memobs_pl__busy = 1;
    memobs_observer_enter(); /* observed records, apart from the program's own (memobs_set_manual_apart) */
    if (!__atomic_load_n(&memobs_pl__g.intercepted, __ATOMIC_RELAXED) &&
        !__atomic_exchange_n(&memobs_pl__g.intercepted, 1, __ATOMIC_RELAXED)) {
        memobs__claims_now(); /* something to write now: its names (a program's own memobs keeps those it has) */
        memobs__sig_late();   /* in python3: the stop handlers, now that CPython has set its own */
    }
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


/* The interposers of one slot: `real` is the real function (the type of
   the interposer itself, so a major's own signature); without one, an
   error and one line. */
#define MEMOBS_PL__CAT_(a, b) a##b
#define MEMOBS_PL__CAT(a, b) MEMOBS_PL__CAT_(a, b)
#define MEMOBS_PL__STR_(a) #a
#define MEMOBS_PL__STR(a) MEMOBS_PL__STR_(a)
#define MEMOBS_PL__E(name) MEMOBS_PL__CAT(MEMOBS_PL__PFX, name)
#define MEMOBS_PL__GET(name)                                                                                 \
    __typeof__(MEMOBS_PL__E(name)) *real;                                                                    \
    memobs_pl__slot = MEMOBS_PL__SLOT;                                                                       \
    real = (__typeof__(MEMOBS_PL__E(name)) *)MEMOBS_PL__REAL(MEMOBS_PL__SLOT, name);                         \
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

/* Copies with device memory named by a symbol or a CUDA array on one side
   (dd, sd: the destination, the source is device memory). */
#define MEMOBS_PL__SIDE(name, dd, dst, sd, src, bytes, kind, stream, how, call)                             \
    MEMOBS_PL__OP(name,                                                                                      \
                  memobs_cuda__copy_pre(&op, dst, src, bytes, memobs_cuda__side_kind(dd, dst, sd, src, kind), \
                                        stream, how),                                                        \
                  call)

/* Batches: as memobs_cudaMemcpyBatchAsync, memobs_cudaMemcpy3DBatchAsync. */
#define MEMOBS_PL__BATCH(name, dsts, srcs, sizes, ops, count, stream, call)                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    {                                                                                                        \
        memobs_cuda__op_t op[3];                                                                             \
        memobs_cuda__batch_pre(op, dsts, srcs, sizes, ops, count, stream);                                   \
        return memobs_pl__end(memobs_cuda__batch_post(op, call));                                            \
    }

/* Capture and graphs: what memobs_cuda.h's capture and graph wrappers do.
   A copy issued into a capturing stream is remembered with its capture;
   the ended capture hands it to its graph, instantiation to the
   executable graph, and each launch counts it. */
#define MEMOBS_PL__WRAP(name, wrapped, call)                                                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    return memobs_pl__end(wrapped)

/* Allocations: memobs_cuda.h's wrappers, whose runtime calls are the real
   functions (the macros above). */
#define MEMOBS_PL__VIA(name, wrapped, call)                                                                 \
    MEMOBS_PL__GET(name);                                                                                    \
    if (!memobs_pl__begin()) return call;                                                                    \
    return memobs_pl__end(wrapped)

/* Each slot's interposers, MEMOBS_PL__PFX##name, exported as name under
   its node (a major's hidden, name@version: only a lookup of that version
   binds it; the default node's name@@memobs_cudart_default). */
#define MEMOBS_PL__SYMVER(name)                                                                              \
    __asm__(".symver " MEMOBS_PL__STR(MEMOBS_PL__E(name)) ", " #name MEMOBS_PL__NODE_NAME);

/* DRIVER ENTRY POINTS, below: what a caller of cudaGetDriverEntryPoint
   gets for the runtime's answer p to (symbol, version, per-thread). */
static void *memobs_pl__ep_wrap(void *p, const char *symbol, int version, int pt);

#define MEMOBS_PL__MAJOR 0
#define MEMOBS_PL__SLOT 0
#define MEMOBS_PL__PFX memobs_pl__0_
#define MEMOBS_PL__NODE_NAME "@@memobs_cudart_default"
#include "memobs_preload_runtime.inc"
MEMOBS_PL__NODE_0(MEMOBS_PL__SYMVER)
#undef MEMOBS_PL__MAJOR
#undef MEMOBS_PL__SLOT
#undef MEMOBS_PL__PFX
#undef MEMOBS_PL__NODE_NAME

#define MEMOBS_PL__MAJOR 11
#define MEMOBS_PL__SLOT 1
#define MEMOBS_PL__PFX memobs_pl__11_
#define MEMOBS_PL__NODE_NAME "@libcudart.so.11.0"
#include "memobs_preload_runtime.inc"
MEMOBS_PL__NODE_11(MEMOBS_PL__SYMVER)
#undef MEMOBS_PL__MAJOR
#undef MEMOBS_PL__SLOT
#undef MEMOBS_PL__PFX
#undef MEMOBS_PL__NODE_NAME

#define MEMOBS_PL__MAJOR 12
#define MEMOBS_PL__SLOT 2
#define MEMOBS_PL__PFX memobs_pl__12_
#define MEMOBS_PL__NODE_NAME "@libcudart.so.12"
#include "memobs_preload_runtime.inc"
MEMOBS_PL__NODE_12(MEMOBS_PL__SYMVER)
#undef MEMOBS_PL__MAJOR
#undef MEMOBS_PL__SLOT
#undef MEMOBS_PL__PFX
#undef MEMOBS_PL__NODE_NAME

#define MEMOBS_PL__MAJOR 13
#define MEMOBS_PL__SLOT 3
#define MEMOBS_PL__PFX memobs_pl__13_
#define MEMOBS_PL__NODE_NAME "@libcudart.so.13"
#include "memobs_preload_runtime.inc"
MEMOBS_PL__NODE_13(MEMOBS_PL__SYMVER)
#undef MEMOBS_PL__MAJOR
#undef MEMOBS_PL__SLOT
#undef MEMOBS_PL__PFX
#undef MEMOBS_PL__NODE_NAME

/* memobs' driver calls: the driver functions already in the global scope,
   else libcuda.so.1, else those of a runtime library loaded with
   RTLD_LOCAL (the test double of the runtime defines them; the real
   runtime does not). Called once per name, from memobs_cuda.h's
   pthread_once. */
static int memobs_pl__ours(const void *p); /* the driver section, below */
void *memobs_cuda_driver_symbol(const char *name) {
    static void *h;
    void *p = dlsym(RTLD_DEFAULT, name), *rt;
    int i;
    if (p && !memobs_pl__ours(p)) return p; /* never a driver interposer of ours */
    p = NULL;
    if (!h) h = dlopen(MEMOBS_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL); /* never closed */
    if (h && (p = dlsym(h, name)) != NULL) return p;
    for (i = MEMOBS_PL__SLOTS - 1; i > 0 && !p; i--)
        if ((rt = dlopen(memobs_pl__version[i], RTLD_NOW | RTLD_NOLOAD)) != NULL) {
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
   shard exists): the Python package or the program's own API calls; or
   a backend set its collectives' source (the NCCL profiler plugin, which
   records through memobs_host_api, not through a shard). */
static int memobs_pl__recorded(void) {
    memobs__shard_t *s;
    int any = memobs__coll_shown();
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
                memobs_pl__any_runtime() || memobs_pl__cu_find("cuMemAlloc_v2")
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
   stream's context's). Pointers from cuGetProcAddress /
   cudaGetDriverEntryPoint are the interposers (the entry points' section,
   below); calls through dlsym on a handle of libcuda.so.1 are not seen. */
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
    X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                                                                \
    X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemAddressReserve) X(cuMemAddressFree) /* VMM, below */

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
    if (kind == MEMOBS_MEM_PINNED) /* cuMemHostAlloc, cuMemAllocHost: the pinned table too */
        return memobs_cuda__pinned_allocated((cudaError_t)rc, call, rc == CUDA_SUCCESS ? p : NULL, size, 0);
    if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY)
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
/* A pinned block: out of the pinned table too. */
CUresult cuMemFreeHost(void *p) {
    MEMOBS_PL__CU_GET(cuMemFreeHost);
    if (!memobs_pl__cu_begin()) return real(p);
    {
        int marked = memobs_cuda__pinned_free_pre(p);
        return memobs_pl__cu_end(memobs_cuda__pinned_freed((cudaError_t)real(p), p, marked));
    }
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    MEMOBS_PL__CU_FREE_ASYNC(cuMemFreeAsync, dptr, hStream ? hStream : cudaStreamLegacy, real(dptr, hStream))
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    MEMOBS_PL__CU_FREE_ASYNC(cuMemFreeAsync_ptsz, dptr, hStream ? hStream : cudaStreamPerThread, real(dptr, hStream))
}

/* ======================================================================== */
/* Driver entry points (cuGetProcAddress, cudaGetDriverEntryPoint)          */
/* ======================================================================== */

/* PyTorch (its DriverAPI, expandable segments), Triton and others take
   driver functions as pointers: cuGetProcAddress (libcuda exports the
   CUDA 11.3 one, 4 arguments, as cuGetProcAddress and CUDA 12.0's, with
   symbolStatus, as cuGetProcAddress_v2; cuda.h names the latter
   cuGetProcAddress) and the runtime's cudaGetDriverEntryPoint,
   cudaGetDriverEntryPointByVersion (12.5) and their _ptsz names. Each is
   intercepted: when the real call succeeded and handed out a driver
   function this library intercepts (MEMOBS_PL__CU_FNS, and the two
   cuGetProcAddress themselves), the caller gets this library's
   interposer, which counts calls made through the pointer as linked
   calls; any other function stays the driver's own pointer; return
   codes, *symbolStatus / *driverStatus and NULL results are the driver's,
   unchanged (these lookups record nothing and count in no counter).

   Which interposer: first by address, the pointer the driver handed out
   against each intercepted function's real address (memobs_pl__cu_get's
   slots): exact whatever name, version and flags were asked. Else by
   name: the exported function the request resolves to (cuda.h: the base
   name, "_v2" from the version that introduced it, 3.2 for the memory
   calls, 12.0 for cuGetProcAddress_v2; "_ptds"/"_ptsz" with
   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, or a runtime _ptsz
   lookup with cudaEnableDefault, from CUDA 7.0), when it is intercepted:
   its slot, if still empty (the driver functions in a library loaded
   with RTLD_LOCAL, where neither dlsym(RTLD_NEXT) nor libcuda.so.1 finds
   them), is seeded with the pointer the driver handed out; if filled with
   another address (a driver whose lookups hand out other entry points
   than its exports) the interposer still stands for that function and
   forwards to its export. A name added to MEMOBS_PL__CU_FNS whose "_v2"
   (or a later version) came after CUDA 3.2 needs its version in
   memobs_pl__ep_wrap.

   The CUDA runtime's own lookups are left alone: a cuGetProcAddress called
   from a library named libcudart* gets the driver's pointer unchanged. The
   runtime calls the functions of its driver table inside runtime calls
   memobs does not intercept (cudaMallocPitch, cudaMemset, ...) and on its
   own threads, where the re-entry guard cannot tell them apart: counted
   there they would be driver calls nobody made. (libcudart takes
   cuGetProcAddress from its own handle on libcuda, which no LD_PRELOAD
   library meets; a runtime that took it from the global scope gets the
   same answer here.) */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
#define MEMOBS_PL__EP_CU_FNS(X) X(cuGetProcAddress) X(cuGetProcAddress_v2)

static struct {
#define MEMOBS_PL__FIELD(name) void *name;
    MEMOBS_PL__EP_CU_FNS(MEMOBS_PL__FIELD)
#undef MEMOBS_PL__FIELD
} memobs_pl__ep_real;

/* An intercepted driver function: its name, its real slot, its interposer. */
typedef struct {
    const char *name;
    void **real;
    void *ours;
} memobs_pl__ep_t;
#define MEMOBS_PL__EP_ROW(name) {#name, &memobs_pl__cu_real.name, (void *)(uintptr_t)&name},
#define MEMOBS_PL__EP_OWN_ROW(name) {#name, &memobs_pl__ep_real.name, (void *)(uintptr_t)&name},
static const memobs_pl__ep_t memobs_pl__ep_map[] = {MEMOBS_PL__CU_FNS(MEMOBS_PL__EP_ROW)
                                                        MEMOBS_PL__EP_CU_FNS(MEMOBS_PL__EP_OWN_ROW)};
#undef MEMOBS_PL__EP_ROW
#undef MEMOBS_PL__EP_OWN_ROW

/* How `name` is a form of `symbol` (symbol [+ "_v2"] [+ "_ptds" /
   "_ptsz"]): -1 not at all, else 1 if it has the "_v2", + 2 if it is the
   per-thread function. */
static int memobs_pl__ep_form(const char *name, const char *symbol) {
    size_t n = strlen(symbol);
    const char *rest = name + n;
    int k = 0;
    if (strncmp(name, symbol, n) != 0) return -1;
    if (strncmp(rest, "_v2", 3) == 0) {
        k = 1;
        rest += 3;
    }
    if (strcmp(rest, "_ptds") == 0 || strcmp(rest, "_ptsz") == 0) return k | 2;
    return *rest ? -1 : k;
}

/* What the caller gets for the driver's answer `p` to (symbol, version,
   per-thread flag pt). By name: of the intercepted forms of symbol, the
   "_v2" ones from the version that introduced them (3.2; 12.0 for
   cuGetProcAddress) when symbol has any (cuMemCreate, cuMemcpy have
   none: their base name at every version; below 3.2 cuMemAlloc is the
   32-bit function, not intercepted), the per-thread one when asked from
   CUDA 7.0 and there is one (else the legacy one, as the driver answers). */
static void *memobs_pl__ep_wrap(void *p, const char *symbol, int version, int pt) {
    const memobs_pl__ep_t *form[4] = {NULL, NULL, NULL, NULL}, *e;
    size_t i;
    int k, v2;
    if (!p || memobs_pl__ours(p)) return p; /* already an interposer: never a real slot's */
    for (i = 0; i < sizeof memobs_pl__ep_map / sizeof memobs_pl__ep_map[0]; i++) {
        e = &memobs_pl__ep_map[i];
        if (memobs_pl__cu_get(e->real, e->name) == p) return e->ours;
        if (symbol && (k = memobs_pl__ep_form(e->name, symbol)) >= 0) form[k] = e;
    }
    v2 = (form[1] || form[3]) && version >= (strcmp(symbol ? symbol : "", "cuGetProcAddress") == 0 ? 12000 : 3020);
    e = pt && version >= 7000 && form[v2 | 2] ? form[v2 | 2] : form[v2];
    if (!e) return p;
    if (!__atomic_load_n(e->real, __ATOMIC_ACQUIRE)) {
        void *none = NULL;
        __atomic_compare_exchange_n(e->real, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    return e->ours;
}

/* 1 when the code at `ra` lies in a CUDA runtime (libcudart*). */
static int memobs_pl__from_runtime(const void *ra) {
    Dl_info i;
    const char *base;
    if (!dladdr(ra, &i) || !i.dli_fname) return 0;
    base = strrchr(i.dli_fname, '/');
    return strncmp(base ? base + 1 : i.dli_fname, "libcudart", 9) == 0;
}

#define MEMOBS_PL__PT_FLAG(flags) (((flags) & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0)

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    __typeof__(cuGetProcAddress) *real =
        (__typeof__(cuGetProcAddress) *)memobs_pl__cu_get(&memobs_pl__ep_real.cuGetProcAddress, "cuGetProcAddress");
    CUresult rc;
    if (!real) return memobs_pl__cu_missing("cuGetProcAddress");
    rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn && !memobs_pl__from_runtime(__builtin_return_address(0)))
        *pfn = memobs_pl__ep_wrap(*pfn, symbol, cudaVersion, MEMOBS_PL__PT_FLAG(flags));
    return rc;
}
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
    __typeof__(cuGetProcAddress_v2) *real = (__typeof__(cuGetProcAddress_v2) *)memobs_pl__cu_get(
        &memobs_pl__ep_real.cuGetProcAddress_v2, "cuGetProcAddress_v2");
    CUresult rc;
    if (!real) return memobs_pl__cu_missing("cuGetProcAddress_v2");
    rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && pfn && !memobs_pl__from_runtime(__builtin_return_address(0)))
        *pfn = memobs_pl__ep_wrap(*pfn, symbol, cudaVersion, MEMOBS_PL__PT_FLAG(flags));
    return rc;
}

/* The runtime's four (cudaGetDriverEntryPoint(ByVersion)(_ptsz)) are
   interposed once per major (preload/memobs_preload_runtime.inc, lists
   MEMOBS_PL__RT_EP*), each forwarding to its own major's runtime and
   handing its answer to memobs_pl__ep_wrap. */
/* Virtual memory management (cuMemCreate, cuMemMap, ...)                   */
/* ======================================================================== */

/* PyTorch's expandable segments and vLLM's sleep-mode allocator allocate
   device memory with the driver's virtual memory management: reserve an
   address range (cuMemAddressReserve), create physical allocations
   (cuMemCreate), map them into the range (cuMemMap, then cuMemSetAccess),
   unmap (cuMemUnmap), release (cuMemRelease), free the range
   (cuMemAddressFree). Intercepted: those six (cuMemSetAccess changes no
   memory and is left to the driver). These names carry no _v2 in cuda.h
   and no version in libcuda; exported unversioned, in MEMOBS_PL__CU_FNS,
   so a pointer fetched with cuGetProcAddress is one of these too. What
   each records is memobs_cuda.h's (VIRTUAL MEMORY): a handle is a
   tracked block (device memory on its location's device, pinned for a
   host-located one) from its creation until the driver frees it (its
   release with no mapping left, or the unmap of its last mapping after
   the release); mappings are remembered by range, for the direction of
   cudaMemcpyDefault copies. A call that fails records nothing (counted in
   preload_failed_calls like every other). The release, unmap and free
   calls take a token before the driver's call, so a handle or mapping
   made by another thread while the call runs (the driver may hand out
   the same value or range at once) is not taken for the old one. */

/* The shape of every interposer here: `pre` before the call (may set
   token), `post` with its CUresult `rc`. */
#define MEMOBS_PL__VMM(name, call, pre, post)                                                               \
    MEMOBS_PL__CU_GET(name);                                                                                 \
    if (!memobs_pl__cu_begin()) return call;                                                                 \
    {                                                                                                        \
        unsigned long long token = 0;                                                                        \
        CUresult rc;                                                                                         \
        pre;                                                                                                 \
        rc = call;                                                                                           \
        return memobs_pl__cu_end((cudaError_t)(post));                                                       \
    }

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    MEMOBS_PL__VMM(cuMemCreate, real(handle, size, prop, flags), (void)token,
                   memobs_cuda__vmm_created((int)rc, rc == CUDA_SUCCESS ? (unsigned long long)*handle : 0ULL, size,
                                            prop ? (int)prop->location.type : 0, prop ? prop->location.id : 0))
}
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    MEMOBS_PL__VMM(cuMemRelease, real(handle), token = memobs_cuda__vmm_pre(),
                   memobs_cuda__vmm_released((int)rc, (unsigned long long)handle, token))
}
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
    MEMOBS_PL__VMM(cuMemMap, real(ptr, size, offset, handle, flags), (void)token,
                   memobs_cuda__vmm_mapped((int)rc, (unsigned long long)ptr, size, offset, (unsigned long long)handle))
}
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    MEMOBS_PL__VMM(cuMemUnmap, real(ptr, size), token = memobs_cuda__vmm_pre(),
                   memobs_cuda__vmm_unmapped((int)rc, (unsigned long long)ptr, size, token))
}
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
    MEMOBS_PL__VMM(cuMemAddressReserve, real(ptr, size, alignment, addr, flags), (void)token,
                   memobs_cuda__vmm_reserved((int)rc, rc == CUDA_SUCCESS ? (unsigned long long)*ptr : 0ULL, size))
}
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    MEMOBS_PL__VMM(cuMemAddressFree, real(ptr, size), token = memobs_cuda__vmm_pre(),
                   memobs_cuda__vmm_freed((int)rc, (unsigned long long)ptr, size, token))
}
