/* memobs_cuda.h - v0.1.0 - CUDA runtime wrappers that record themselves.
   Needs memobs.h and the CUDA Toolkit's cuda_runtime_api.h; C99/C11,
   C++11/17, nvcc. Link with -lcudart (or the static one) and -pthread;
   with NVTX (below) on glibc older than 2.34, also -ldl.

   Do this in the one file that builds memobs' implementation:

       #define MEMOBS_IMPLEMENTATION
       #include "memobs_cuda.h"      // includes memobs.h

   and plain `#include "memobs_cuda.h"` everywhere else. Then call the
   memobs_ spellings of the CUDA calls; each has the runtime's own
   signature and returns its result unchanged:

       memobs_set_phase(MEMOBS_PHASE_DECODE);
       MEMOBS_CUDA_CHECK(memobs_cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
       MEMOBS_CUDA_CHECK(memobs_cudaMalloc(&p, n));

   WHAT THE WRAPPERS RECORD
     Copies: cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D(Async) (width x
       height bytes), cudaMemcpyPeer(Async) (D2D): bytes and op counts by
       direction and by the calling thread's phase (memobs_set_phase), as
       MEMOBS_RECORD_*_CUR does. The direction comes from the copy kind;
       only cudaMemcpyDefault asks cudaPointerGetAttributes() where each
       side lives (device or managed memory: device; anything else: host).
       cudaMemcpyHostToHost moves nothing over the bus and is not recorded.
       An async copy is counted when it is issued.
     Allocations: cudaMalloc, cudaMallocAsync (MEMOBS_MEM_DEVICE, with the
       current device, and the stream), cudaMallocManaged (MANAGED),
       cudaMallocHost, cudaHostAlloc, cudaHostRegister (PINNED) go into the
       allocation tracker; cudaFree, cudaFreeAsync, cudaFreeHost,
       cudaHostUnregister take them out. A wrapper's allocate-and-record
       and free-and-unrecord run under one lock, so another thread handed
       a freed address cannot record it before its free is recorded.
     A failed call records nothing and returns the error unchanged.
     Out of memory: when an allocation wrapper gets cudaErrorMemoryAllocation,
       it writes the flight recorder before returning: what failed, the
       driver's free/total memory, the summary and the live block table
       (largest first, with tags and stacks). The first 3 per process;
       later ones are counted.
     Device memory outside memobs: memobs_cuda_mem_info() sets the driver's
       used memory (cudaMemGetInfo) beside what the tracker holds for that
       device; the difference is memory allocated around the wrappers
       (communication buffers, library workspaces, the CUDA context).

     Timing (off by default: memobs_cuda_set_timing(1) or
       MEMOBS_CUDA_TIMING=1): each copy gets a pair of CUDA events recorded
       around it on its stream (from a pool, never freed back to the
       driver), queued; they are resolved later, without waiting, in issue
       order: at each wrapped copy, at memobs_cuda_poll() and before every
       summary. The summary then shows, per direction and phase, the bytes
       of completed copies, their device time and GB/s, and how many timed
       copies are still in flight, so issued is not confused with done. At
       most MEMOBS_CUDA_MAX_TIMED copies wait to be resolved; beyond, copies
       are recorded but not timed (memobs_cuda_untimed() counts them).

     Stream-ordered frees: cudaFreeAsync marks the block pending (freed,
       not reusable: still in current bytes, "(free pending)" in reports)
       and records an event on its stream; the block leaves the tracker
       when that event has completed, seen at the same points as timing
       (a cudaMallocAsync that gets the same address back first retires it
       at once). Without an event to spare it leaves at once.

   NVTX RANGES (Nsight Systems)
     Where the implementation is built and the CUDA Toolkit's header-only
     NVTX v3 is found (<nvtx3/nvToolsExt.h>, by __has_include), memobs.h's
     regions are also NVTX ranges (pushed at the begin, popped at the end:
     nested like the regions of each thread) and its markers NVTX marks, in
     the NVTX domain "memobs", named by the region's name as a string
     registered once, at its first use. A region deeper than
     MEMOBS_REGION_DEPTH still pushes and pops; an unmatched
     memobs_region_end() pops nothing. `nsys profile --trace=cuda,nvtx`
     shows them. NVTX looks for a tool (NVTX_INJECTION64_PATH, set by
     Nsight) at the first NVTX call and loads it with dlopen (in libc
     since glibc 2.34; link -ldl before). With no tool attached, NVTX's
     calls return at a null test. MEMOBS_NVTX=0 installs nothing: a region
     then costs what it costs without memobs_cuda.h.
     memobs_cuda_set_nvtx(0|1) switches at run time: a region begun while
     on is popped at its end even if switched off since (the hook stays
     installed for that, making no NVTX call).

   COMPILE-TIME OPTIONS
     MEMOBS_CUDA_MAX_TIMED    implementation only. Timed copies in flight,
                              default 4096 (32 bytes and two events each).
     MEMOBS_NO_NVTX           implementation only, tested with #ifdef. No
                              NVTX even where <nvtx3/nvToolsExt.h> is found.

   ENVIRONMENT
     MEMOBS_CUDA_TIMING=0|1   time copies with CUDA events (default 0).
     MEMOBS_NVTX=0|1          regions and markers as NVTX ranges and marks
                              (default 1 where NVTX is compiled in; also
                              on/off, true/false, yes/no). Read at load
                              time, also with MEMOBS_NO_AUTOINIT.
     MEMOBS_OOM_REPORT=stderr|stdout|PATH|0
                              where the out-of-memory flight recorder goes
                              (default stderr; a PATH is appended to, with
                              %r/%p expanded; 0/off: nowhere).
   Everything in memobs.h's doc block applies (with MEMOBS_DISABLE the
   wrappers make their CUDA call and record nothing, and NVTX is not
   compiled in).

   LICENSE: MIT.
*/

#ifndef MEMOBS_CUDA_H
#define MEMOBS_CUDA_H

#include "memobs.h"
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Copies                                                                   */
/* ======================================================================== */

MEMOBS_API cudaError_t memobs_cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
MEMOBS_API cudaError_t memobs_cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                              cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                           size_t height, enum cudaMemcpyKind kind);
MEMOBS_API cudaError_t memobs_cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                size_t width, size_t height, enum cudaMemcpyKind kind,
                                                cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
MEMOBS_API cudaError_t memobs_cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                                  size_t count, cudaStream_t stream);

/* ======================================================================== */
/* Allocations                                                              */
/* ======================================================================== */

MEMOBS_API cudaError_t memobs_cudaMalloc(void **devPtr, size_t size);
MEMOBS_API cudaError_t memobs_cudaFree(void *devPtr);
MEMOBS_API cudaError_t memobs_cudaMallocHost(void **ptr, size_t size);
MEMOBS_API cudaError_t memobs_cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaFreeHost(void *ptr);
MEMOBS_API cudaError_t memobs_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
MEMOBS_API cudaError_t memobs_cudaFreeAsync(void *devPtr, cudaStream_t hStream);
MEMOBS_API cudaError_t memobs_cudaHostRegister(void *ptr, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaHostUnregister(void *ptr);

/* ======================================================================== */
/* Memory outside memobs, out-of-memory reports, checks                     */
/* ======================================================================== */

typedef struct {
    int device;
    uint64_t driver_total, driver_free, driver_used; /* cudaMemGetInfo on that device */
    uint64_t tracked;                                /* memobs_track_device_bytes(device) */
    int64_t outside;                                 /* driver_used - tracked */
} memobs_cuda_mem_t;

/* Fills *out for a device (the calling thread's current device is restored
   after). Returns MEMOBS_OK, MEMOBS_ERR_INVALID (NULL out) or MEMOBS_ERR_IO
   (the runtime's error is logged). */
MEMOBS_API int memobs_cuda_mem_info(int device, memobs_cuda_mem_t *out);
/* One line per device: driver used/total, tracked, outside memobs. */
MEMOBS_API int memobs_cuda_print_mem(FILE *f);
/* Where the out-of-memory flight recorder goes: "stderr" (default),
   "stdout", a path (appended), or NULL/"off". */
MEMOBS_API int memobs_cuda_set_oom_report(const char *dest);
/* Out-of-memory errors seen by the allocation wrappers. */
MEMOBS_API uint64_t memobs_cuda_oom_count(void);

/* ======================================================================== */
/* Timing copies on the device                                              */
/* ======================================================================== */

/* Switches CUDA-event timing of the wrapped copies on (1) or off (0);
   copies already timed are still resolved. */
MEMOBS_API int memobs_cuda_set_timing(int on);
/* Resolves the timed copies that have completed, in issue order, without
   waiting for the others; returns how many. */
MEMOBS_API int memobs_cuda_poll(void);
/* Copies that were recorded but not timed (queue full, event errors). */
MEMOBS_API uint64_t memobs_cuda_untimed(void);

/* Evaluates a CUDA call once and yields its cudaError_t; a failure is
   logged through memobs' log hook with the call's text, file and line.
   Never aborts: what to do next is the caller's. */
#define MEMOBS_CUDA_CHECK(call) memobs_cuda__check((call), #call, __FILE__, __LINE__)
MEMOBS_API cudaError_t memobs_cuda__check(cudaError_t rc, const char *what, const char *file, int line);

/* ======================================================================== */
/* NVTX ranges for regions and markers                                      */
/* ======================================================================== */

/* Regions and markers as NVTX ranges and marks (see NVTX RANGES above): 1
   on, 0 off. A region begun while on is popped at its end. Returns
   MEMOBS_OK, or MEMOBS_ERR_INVALID (logged) for on != 0 where NVTX is not
   compiled in (MEMOBS_NO_NVTX, or no <nvtx3/nvToolsExt.h>); with
   MEMOBS_DISABLE, MEMOBS_OK and nothing happens. */
MEMOBS_API int memobs_cuda_set_nvtx(int on);
/* 1 while regions and markers go to NVTX, else 0. */
MEMOBS_API int memobs_cuda_nvtx(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_CUDA_H */

/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */

#if defined(MEMOBS_IMPLEMENTATION) && !defined(MEMOBS_CUDA__IMPLEMENTED)
#define MEMOBS_CUDA__IMPLEMENTED

/* memobs' implementation first: after "include, define the macro, include
   again" the declarations above were skipped, and memobs.h with them. */
#include "memobs.h"

/* NVTX v3 is header-only; its own warnings (with -I rather than -isystem,
   -Wpedantic on its dlsym cast) are not ours. */
#if !defined(MEMOBS_NO_NVTX) && !defined(MEMOBS_DISABLE) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#define MEMOBS_CUDA__NVTX 1
#ifndef NVTX_AS_SYSTEM_HEADER
#define NVTX_AS_SYSTEM_HEADER
#define MEMOBS_CUDA__NVTX_SYSTEM
#endif
#include <nvtx3/nvToolsExt.h>
#ifdef MEMOBS_CUDA__NVTX_SYSTEM
#undef NVTX_AS_SYSTEM_HEADER
#undef MEMOBS_CUDA__NVTX_SYSTEM
#endif
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Private: state                                                           */
/* ======================================================================== */

#ifndef MEMOBS_CUDA_MAX_TIMED
#define MEMOBS_CUDA_MAX_TIMED 4096
#endif
#define MEMOBS_CUDA__OOM_REPORTS 3 /* flight recorder runs per process */

typedef struct {
    cudaEvent_t start, end;
    int device; /* events belong to the device they were made on */
} memobs_cuda__pair_t;

typedef struct {
    memobs_cuda__pair_t ev;
    uint64_t bytes;
    unsigned dir, phase;
} memobs_cuda__timed_t;

typedef struct {
    memobs_cuda__pair_t ev; /* ev.start: recorded on the stream after the free */
    const void *ptr;
} memobs_cuda__pfree_t;

static pthread_once_t memobs_cuda__once = PTHREAD_ONCE_INIT;
static struct {
    pthread_mutex_t lock; /* allocate-and-record, free-and-unrecord; and config */
    char oom_dest[512];   /* "" = off */
    memobs__u64_t ooms;
    /* timing */
    memobs__u32_t timing;
    pthread_mutex_t tlock;       /* the queue and the pool */
    memobs_cuda__timed_t *queue; /* MEMOBS_CUDA_MAX_TIMED, a ring */
    uint32_t head, n;
    memobs_cuda__pair_t *pool;   /* event pairs not in use */
    uint32_t npool, created;     /* pairs in the pool; pairs ever created */
    memobs_cuda__pfree_t *frees; /* pending stream-ordered frees, a ring */
    uint32_t fhead, fn;
    memobs__u64_t untimed;
#ifdef MEMOBS_CUDA__NVTX
    /* NVTX */
    memobs__u32_t nvtx;         /* ranges and marks on: MEMOBS_NVTX, memobs_cuda_set_nvtx */
    memobs__u32_t nvtx_lock;    /* making the domain, registering names */
    int nvtx_made;              /* the domain was made (under nvtx_lock) */
    nvtxDomainHandle_t domain;  /* "memobs" */
    nvtxStringHandle_t names[MEMOBS_MAX_REGIONS]; /* by region id: NULL, a handle, or MEMOBS_CUDA__NVTX_NONE */
#endif
} memobs_cuda__g;

static void memobs_cuda__poll_hook(void);

static void memobs_cuda__init_once(void) {
    pthread_mutex_init(&memobs_cuda__g.lock, NULL);
    pthread_mutex_init(&memobs_cuda__g.tlock, NULL);
    strcpy(memobs_cuda__g.oom_dest, "stderr");
    memobs_init();
#ifdef MEMOBS_DISABLE
    (void)memobs_cuda__poll_hook;
#else
    __atomic_store_n(&memobs__g.pre_summary, &memobs_cuda__poll_hook, __ATOMIC_RELEASE);
    {
        const char *t = getenv("MEMOBS_CUDA_TIMING");
        int b = t ? memobs__parse_bool(t) : 0;
        if (b < 0) memobs__log(MEMOBS_LOG_WARN, "MEMOBS_CUDA_TIMING='%s' is not 0/1/on/off; timing stays off", t);
        else MEMOBS__STORE(&memobs_cuda__g.timing.v, (uint32_t)b);
    }
    {
        const char *s = getenv("MEMOBS_OOM_REPORT");
        if (s && memobs__parse_bool(s) == 0) memobs_cuda__g.oom_dest[0] = 0;
        else if (s && !memobs__env_dest("MEMOBS_OOM_REPORT", memobs_cuda__g.oom_dest, sizeof memobs_cuda__g.oom_dest))
            strcpy(memobs_cuda__g.oom_dest, "stderr"); /* malformed: warned, default kept */
    }
#endif
}

static void memobs_cuda__lock(void) {
    pthread_once(&memobs_cuda__once, memobs_cuda__init_once);
    pthread_mutex_lock(&memobs_cuda__g.lock);
}
static void memobs_cuda__unlock(void) { pthread_mutex_unlock(&memobs_cuda__g.lock); }

/* The calling thread's current device (0 if the runtime cannot say). */
static int memobs_cuda__device(void) {
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess) {
        (void)cudaGetLastError();
        d = 0;
    }
    return d;
}

/* ======================================================================== */
/* Private: copies                                                          */
/* ======================================================================== */

/* 1 if p is device (or managed) memory. Asks the runtime; an error there
   (an unknown pointer on an old runtime) is cleared and means host. */
static int memobs_cuda__on_device(const void *p) {
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Direction of a copy, or -1 for one that crosses no bus (host to host). */
static int memobs_cuda__dir(const void *dst, const void *src, enum cudaMemcpyKind kind) {
    switch (kind) {
    case cudaMemcpyHostToDevice: return MEMOBS_DIR_H2D;
    case cudaMemcpyDeviceToHost: return MEMOBS_DIR_D2H;
    case cudaMemcpyDeviceToDevice: return MEMOBS_DIR_D2D;
    case cudaMemcpyDefault: {
        int d = memobs_cuda__on_device(dst), s = memobs_cuda__on_device(src);
        if (!d && !s) return -1;
        return d && s ? MEMOBS_DIR_D2D : d ? MEMOBS_DIR_H2D : MEMOBS_DIR_D2H;
    }
    default: return -1; /* cudaMemcpyHostToHost, or a kind the runtime refused */
    }
}

/* Caller holds tlock. Settles stream-ordered frees whose stream got there,
   then resolves completed timed copies, each queue from its head. */
static int memobs_cuda__poll_locked(void) {
    int done = 0;
    while (memobs_cuda__g.fn) {
        memobs_cuda__pfree_t *e = &memobs_cuda__g.frees[memobs_cuda__g.fhead];
        if (cudaEventQuery(e->ev.start) == cudaErrorNotReady) break;
        memobs_track_free_settled(e->ptr); /* done, or the stream failed: either way not pending */
        memobs_cuda__g.pool[memobs_cuda__g.npool++] = e->ev;
        memobs_cuda__g.fhead = (memobs_cuda__g.fhead + 1) % MEMOBS_CUDA_MAX_TIMED;
        memobs_cuda__g.fn--;
        done++;
    }
    while (memobs_cuda__g.n) {
        memobs_cuda__timed_t *e = &memobs_cuda__g.queue[memobs_cuda__g.head];
        float ms = 0.0f;
        cudaError_t q = cudaEventQuery(e->ev.end);
        if (q == cudaErrorNotReady) break;
        if (q == cudaSuccess && cudaEventElapsedTime(&ms, e->ev.start, e->ev.end) == cudaSuccess && ms >= 0.0f)
            memobs_record_timed((memobs_dir_t)e->dir, (memobs_phase_t)e->phase, e->bytes, (uint64_t)(ms * 1e6f));
        else
            MEMOBS__ADD(&memobs_cuda__g.untimed.v, 1u); /* an error of the stream: not ours to clear */
        memobs_timed_in_flight(-1, -(int64_t)e->bytes);
        memobs_cuda__g.pool[memobs_cuda__g.npool++] = e->ev;
        memobs_cuda__g.head = (memobs_cuda__g.head + 1) % MEMOBS_CUDA_MAX_TIMED;
        memobs_cuda__g.n--;
        done++;
    }
    return done;
}

static void memobs_cuda__poll_hook(void) { (void)memobs_cuda_poll(); }

/* The device a stream belongs to (the legacy default stream: the current
   device). */
static int memobs_cuda__stream_device(cudaStream_t stream) {
    int d = 0;
    if (stream && cudaStreamGetDevice(stream, &d) == cudaSuccess) return d;
    if (stream) (void)cudaGetLastError();
    return memobs_cuda__device();
}

/* Caller holds tlock. An event pair of device from the pool (or a new one
   made there, up to MEMOBS_CUDA_MAX_TIMED pairs), after resolving what has
   completed; 0 when there is none to spare. */
static int memobs_cuda__pair_get(memobs_cuda__pair_t *ev, int device) {
    uint32_t i;
    int cur = 0, ok;
    if (!memobs_cuda__g.queue) {
        memobs_cuda__g.queue = (memobs_cuda__timed_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_TIMED * sizeof(memobs_cuda__timed_t));
        memobs_cuda__g.pool = (memobs_cuda__pair_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_TIMED * sizeof(memobs_cuda__pair_t));
        memobs_cuda__g.frees = (memobs_cuda__pfree_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_TIMED * sizeof(memobs_cuda__pfree_t));
        if (!memobs_cuda__g.queue || !memobs_cuda__g.pool || !memobs_cuda__g.frees) {
            if (memobs_cuda__g.queue) MEMOBS_FREE(memobs_cuda__g.queue);
            if (memobs_cuda__g.pool) MEMOBS_FREE(memobs_cuda__g.pool);
            if (memobs_cuda__g.frees) MEMOBS_FREE(memobs_cuda__g.frees);
            memobs_cuda__g.queue = NULL;
            memobs_cuda__g.pool = NULL;
            memobs_cuda__g.frees = NULL;
            return 0;
        }
    }
    (void)memobs_cuda__poll_locked();
    for (i = memobs_cuda__g.npool; i-- > 0;) {
        if (memobs_cuda__g.pool[i].device != device) continue;
        *ev = memobs_cuda__g.pool[i];
        memobs_cuda__g.pool[i] = memobs_cuda__g.pool[--memobs_cuda__g.npool];
        return 1;
    }
    if (memobs_cuda__g.created >= MEMOBS_CUDA_MAX_TIMED || cudaGetDevice(&cur) != cudaSuccess) return 0;
    if (cur != device && cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    ok = cudaEventCreate(&ev->start) == cudaSuccess;
    if (ok && cudaEventCreate(&ev->end) != cudaSuccess) {
        (void)cudaEventDestroy(ev->start);
        ok = 0;
    }
    if (!ok) (void)cudaGetLastError();
    if (cur != device) (void)cudaSetDevice(cur);
    if (!ok) return 0;
    ev->device = device;
    memobs_cuda__g.created++;
    return 1;
}

/* Before a copy: with timing on, an event pair with its start recorded on
   stream. 0 when the copy goes untimed. */
static int memobs_cuda__time_begin(memobs_cuda__pair_t *ev, cudaStream_t stream) {
    int ok, device;
    pthread_once(&memobs_cuda__once, memobs_cuda__init_once); /* reads MEMOBS_CUDA_TIMING */
    if (!MEMOBS__LOAD(&memobs_cuda__g.timing.v) || !MEMOBS__LOAD(&memobs__on.v)) return 0;
    device = memobs_cuda__stream_device(stream);
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    ok = memobs_cuda__pair_get(ev, device);
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    if (ok && cudaEventRecord(ev->start, stream) != cudaSuccess) {
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        memobs_cuda__g.pool[memobs_cuda__g.npool++] = *ev;
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
        ok = 0;
    }
    if (!ok) MEMOBS__ADD(&memobs_cuda__g.untimed.v, 1u);
    return ok;
}

/* After a copy: records it if the runtime accepted it (rc) and, when it is
   timed (ev), its end event, queueing the pair. Returns rc. */
static cudaError_t memobs_cuda__copied(cudaError_t rc, void *dst, const void *src, uint64_t bytes,
                                       enum cudaMemcpyKind kind, memobs_cuda__pair_t *ev, cudaStream_t stream) {
    int dir = rc == cudaSuccess && MEMOBS__LOAD(&memobs__on.v) ? memobs_cuda__dir(dst, src, kind) : -1;
    unsigned phase = memobs__tls.phase;
    if (dir >= 0) memobs__xfer((unsigned)dir, phase, bytes);
    if (!ev) return rc;
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    if (dir >= 0 && memobs_cuda__g.n < MEMOBS_CUDA_MAX_TIMED && cudaEventRecord(ev->end, stream) == cudaSuccess) {
        memobs_cuda__timed_t *e = &memobs_cuda__g.queue[(memobs_cuda__g.head + memobs_cuda__g.n) % MEMOBS_CUDA_MAX_TIMED];
        e->ev = *ev;
        e->bytes = bytes;
        e->dir = (unsigned)dir;
        e->phase = phase;
        memobs_cuda__g.n++;
        memobs_timed_in_flight(1, (int64_t)bytes);
    } else {
        memobs_cuda__g.pool[memobs_cuda__g.npool++] = *ev; /* a start recorded alone is harmless */
        if (dir >= 0) MEMOBS__ADD(&memobs_cuda__g.untimed.v, 1u);
    }
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    return rc;
}

#define MEMOBS_CUDA__TIMED(call, dst, src, bytes, kind, stream)                        \
    do {                                                                              \
        memobs_cuda__pair_t ev;                                                       \
        int timed = memobs_cuda__time_begin(&ev, stream);                             \
        return memobs_cuda__copied(call, dst, src, bytes, kind, timed ? &ev : NULL, stream); \
    } while (0)

cudaError_t memobs_cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    MEMOBS_CUDA__TIMED(cudaMemcpy(dst, src, count, kind), dst, src, count, kind, (cudaStream_t)0);
}

cudaError_t memobs_cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                   cudaStream_t stream) {
    MEMOBS_CUDA__TIMED(cudaMemcpyAsync(dst, src, count, kind, stream), dst, src, count, kind, stream);
}

cudaError_t memobs_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                size_t height, enum cudaMemcpyKind kind) {
    MEMOBS_CUDA__TIMED(cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind), dst, src,
                       (uint64_t)width * height, kind, (cudaStream_t)0);
}

cudaError_t memobs_cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                     size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
    MEMOBS_CUDA__TIMED(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream), dst, src,
                       (uint64_t)width * height, kind, stream);
}

cudaError_t memobs_cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count) {
    MEMOBS_CUDA__TIMED(cudaMemcpyPeer(dst, dstDevice, src, srcDevice, count), dst, src, count,
                       cudaMemcpyDeviceToDevice, (cudaStream_t)0);
}

cudaError_t memobs_cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                       cudaStream_t stream) {
    MEMOBS_CUDA__TIMED(cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, count, stream), dst, src, count,
                       cudaMemcpyDeviceToDevice, stream);
}

int memobs_cuda_set_timing(int on) {
    pthread_once(&memobs_cuda__once, memobs_cuda__init_once);
#ifndef MEMOBS_DISABLE
    MEMOBS__STORE(&memobs_cuda__g.timing.v, on ? 1u : 0u);
#else
    (void)on;
#endif
    return MEMOBS_OK;
}

int memobs_cuda_poll(void) {
    int done;
    pthread_once(&memobs_cuda__once, memobs_cuda__init_once);
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    done = memobs_cuda__g.queue ? memobs_cuda__poll_locked() : 0;
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    return done;
}

uint64_t memobs_cuda_untimed(void) { return MEMOBS__LOAD(&memobs_cuda__g.untimed.v); }

/* ======================================================================== */
/* Private: allocations and the out-of-memory flight recorder               */
/* ======================================================================== */

/* Runs after an allocation wrapper got cudaErrorMemoryAllocation, with no
   lock held. */
static void memobs_cuda__oom(const char *call, size_t size) {
    char dest[sizeof memobs_cuda__g.oom_dest], b[32];
    memobs_cuda_mem_t m;
    uint64_t n = MEMOBS__ADD(&memobs_cuda__g.ooms.v, 1u) + 1;
    int own;
    FILE *f;
    if (!MEMOBS__LOAD(&memobs__on.v)) return; /* switched off (or compiled out): counted only */
    memobs__sl_oom(call, (uint64_t)size, memobs_cuda__device()); /* Stormlog "oom" event */
    if (n > MEMOBS_CUDA__OOM_REPORTS) {
        if (n == MEMOBS_CUDA__OOM_REPORTS + 1)
            memobs__log(MEMOBS_LOG_WARN, "%s: out of memory again; further out-of-memory reports are only counted",
                        call);
        return;
    }
    pthread_mutex_lock(&memobs_cuda__g.lock);
    memcpy(dest, memobs_cuda__g.oom_dest, sizeof dest);
    pthread_mutex_unlock(&memobs_cuda__g.lock);
    if (!dest[0] || (f = memobs__open_dest(dest, "a", "out-of-memory report", &own)) == NULL) return;
    fprintf(f, "memobs: [rank %d] %s(%llu bytes, %s) failed: cudaErrorMemoryAllocation (out of memory %llu of %d)\n",
            memobs__rank(), call, (unsigned long long)size, memobs_fmt_bytes(size, b, sizeof b),
            (unsigned long long)n, MEMOBS_CUDA__OOM_REPORTS);
    if (memobs_cuda_mem_info(memobs_cuda__device(), &m) == MEMOBS_OK)
        fprintf(f, "  device %d: driver %llu bytes free of %llu, %llu used; memobs tracks %llu; outside memobs %lld\n",
                m.device, (unsigned long long)m.driver_free, (unsigned long long)m.driver_total,
                (unsigned long long)m.driver_used, (unsigned long long)m.tracked, (long long)m.outside);
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    memobs_print_allocations(f);
    fflush(f);
    if (own) fclose(f);
}

/* The end of every allocation wrapper, which called the runtime under
   memobs_cuda__lock(): records p on success, unlocks, and runs the flight
   recorder on out-of-memory. Returns rc. */
static cudaError_t memobs_cuda__allocated(cudaError_t rc, const char *call, const void *p, size_t size,
                                          memobs_mem_kind_t kind, int device, const void *stream) {
    if (rc == cudaSuccess && p) { /* p: cudaMalloc(&p, 0) succeeds with NULL */
        uint32_t i;
        /* Handed back before its stream-ordered free settled: that settle
           must not take the new block out. */
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        for (i = 0; i < memobs_cuda__g.fn; i++) {
            memobs_cuda__pfree_t *e = &memobs_cuda__g.frees[(memobs_cuda__g.fhead + i) % MEMOBS_CUDA_MAX_TIMED];
            if (e->ptr == p) e->ptr = NULL;
        }
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
        memobs_track_alloc_full(p, size, kind, device, stream, NULL, -1);
    }
    memobs_cuda__unlock();
    if (rc == cudaErrorMemoryAllocation) memobs_cuda__oom(call, size);
    return rc;
}

/* The end of every free wrapper: unrecords p once the runtime freed it. */
static cudaError_t memobs_cuda__freed(cudaError_t rc, const void *p) {
    if (rc == cudaSuccess && p) memobs_track_free(p);
    memobs_cuda__unlock();
    return rc;
}

cudaError_t memobs_cudaMalloc(void **devPtr, size_t size) {
    cudaError_t rc;
    memobs_cuda__lock();
    rc = cudaMalloc(devPtr, size);
    return memobs_cuda__allocated(rc, "cudaMalloc", rc ? NULL : *devPtr, size, MEMOBS_MEM_DEVICE,
                                  memobs_cuda__device(), NULL);
}

cudaError_t memobs_cudaFree(void *devPtr) {
    memobs_cuda__lock();
    return memobs_cuda__freed(cudaFree(devPtr), devPtr);
}

cudaError_t memobs_cudaMallocHost(void **ptr, size_t size) {
    cudaError_t rc;
    memobs_cuda__lock();
    rc = cudaMallocHost(ptr, size);
    return memobs_cuda__allocated(rc, "cudaMallocHost", rc ? NULL : *ptr, size, MEMOBS_MEM_PINNED, -1, NULL);
}

cudaError_t memobs_cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    cudaError_t rc;
    memobs_cuda__lock();
    rc = cudaHostAlloc(pHost, size, flags);
    return memobs_cuda__allocated(rc, "cudaHostAlloc", rc ? NULL : *pHost, size, MEMOBS_MEM_PINNED, -1, NULL);
}

cudaError_t memobs_cudaFreeHost(void *ptr) {
    memobs_cuda__lock();
    return memobs_cuda__freed(cudaFreeHost(ptr), ptr);
}

cudaError_t memobs_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    cudaError_t rc;
    memobs_cuda__lock();
    rc = cudaMallocManaged(devPtr, size, flags);
    return memobs_cuda__allocated(rc, "cudaMallocManaged", rc ? NULL : *devPtr, size, MEMOBS_MEM_MANAGED,
                                  memobs_cuda__device(), NULL);
}

cudaError_t memobs_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    cudaError_t rc;
    memobs_cuda__lock();
    rc = cudaMallocAsync(devPtr, size, hStream);
    return memobs_cuda__allocated(rc, "cudaMallocAsync", rc ? NULL : *devPtr, size, MEMOBS_MEM_DEVICE,
                                  memobs_cuda__stream_device(hStream), (const void *)hStream);
}

/* The block stays tracked, pending, until an event recorded on its stream
   after the free has completed. */
cudaError_t memobs_cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    memobs_cuda__pair_t ev;
    cudaError_t rc;
    int queued = 0, device;
    memobs_cuda__lock();
    rc = cudaFreeAsync(devPtr, hStream);
    if (rc != cudaSuccess || !devPtr) {
        memobs_cuda__unlock();
        return rc;
    }
    memobs_track_free_pending(devPtr);
    device = memobs_cuda__stream_device(hStream);
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    if (MEMOBS__LOAD(&memobs__on.v) && memobs_cuda__pair_get(&ev, device)) {
        if (memobs_cuda__g.fn < MEMOBS_CUDA_MAX_TIMED && cudaEventRecord(ev.start, hStream) == cudaSuccess) {
            memobs_cuda__pfree_t *e =
                &memobs_cuda__g.frees[(memobs_cuda__g.fhead + memobs_cuda__g.fn) % MEMOBS_CUDA_MAX_TIMED];
            e->ev = ev;
            e->ptr = devPtr;
            memobs_cuda__g.fn++;
            queued = 1;
        } else {
            memobs_cuda__g.pool[memobs_cuda__g.npool++] = ev;
        }
    }
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    if (!queued) memobs_track_free_settled(devPtr); /* no event to wait on: out at once */
    memobs_cuda__unlock();
    return rc;
}

cudaError_t memobs_cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    memobs_cuda__lock();
    return memobs_cuda__allocated(cudaHostRegister(ptr, size, flags), "cudaHostRegister", ptr, size,
                                  MEMOBS_MEM_PINNED, -1, NULL);
}

cudaError_t memobs_cudaHostUnregister(void *ptr) {
    memobs_cuda__lock();
    return memobs_cuda__freed(cudaHostUnregister(ptr), ptr);
}

/* ======================================================================== */
/* Private: memory outside memobs, checks                                   */
/* ======================================================================== */

int memobs_cuda_mem_info(int device, memobs_cuda_mem_t *out) {
    size_t free_b = 0, total_b = 0;
    int cur = 0;
    cudaError_t rc;
    if (!out) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_mem_info: NULL output");
        return MEMOBS_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    out->device = device;
    if ((rc = cudaGetDevice(&cur)) == cudaSuccess && (cur == device || (rc = cudaSetDevice(device)) == cudaSuccess)) {
        rc = cudaMemGetInfo(&free_b, &total_b);
        if (cur != device) (void)cudaSetDevice(cur);
    }
    if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_mem_info(device %d): %s", device, cudaGetErrorString(rc));
        return MEMOBS_ERR_IO;
    }
    out->driver_total = total_b;
    out->driver_free = free_b;
    out->driver_used = total_b - free_b;
    out->tracked = memobs_track_device_bytes(device, NULL);
    out->outside = (int64_t)out->driver_used - (int64_t)out->tracked;
    return MEMOBS_OK;
}

int memobs_cuda_print_mem(FILE *f) {
    int n = 0, d;
    char b1[32], b2[32], b3[32], b4[32];
    if (!f) return MEMOBS_ERR_INVALID;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        n = 0;
    }
    for (d = 0; d < n; d++) {
        memobs_cuda_mem_t m;
        if (memobs_cuda_mem_info(d, &m) != MEMOBS_OK) continue;
        fprintf(f, "device %d: driver used %s of %s; memobs tracks %s; outside memobs %s%s\n", d,
                memobs_fmt_bytes(m.driver_used, b1, sizeof b1), memobs_fmt_bytes(m.driver_total, b2, sizeof b2),
                memobs_fmt_bytes(m.tracked, b3, sizeof b3), m.outside < 0 ? "-" : "",
                memobs_fmt_bytes((uint64_t)(m.outside < 0 ? -m.outside : m.outside), b4, sizeof b4));
    }
    return ferror(f) ? MEMOBS_ERR_IO : MEMOBS_OK;
}

int memobs_cuda_set_oom_report(const char *dest) {
    int off = !dest || strcmp(dest, "off") == 0;
    if (!off && (!*dest || strlen(dest) >= sizeof memobs_cuda__g.oom_dest)) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_set_oom_report: destination is empty or too long; unchanged");
        return MEMOBS_ERR_INVALID;
    }
    memobs_cuda__lock();
    if (off) memobs_cuda__g.oom_dest[0] = 0;
    else strcpy(memobs_cuda__g.oom_dest, dest);
    memobs_cuda__unlock();
    return MEMOBS_OK;
}

uint64_t memobs_cuda_oom_count(void) { return MEMOBS__LOAD(&memobs_cuda__g.ooms.v); }

/* The sampler's and Stormlog's view of a device (memobs.h's
   memobs__devmem_fn): like memobs_cuda_mem_info, without a warning on
   failure (a sampler would repeat it every tick). Installed at load time
   (a pointer store, no CUDA call). */
#ifndef MEMOBS_DISABLE
static int memobs_cuda__devmem(int device, uint64_t *used, uint64_t *free_bytes, uint64_t *total) {
    size_t free_b = 0, total_b = 0;
    int cur = 0;
    cudaError_t rc;
    if ((rc = cudaGetDevice(&cur)) == cudaSuccess && (cur == device || (rc = cudaSetDevice(device)) == cudaSuccess)) {
        rc = cudaMemGetInfo(&free_b, &total_b);
        if (cur != device) (void)cudaSetDevice(cur);
    }
    if (rc != cudaSuccess || free_b > total_b) {
        (void)cudaGetLastError();
        return -1;
    }
    *used = total_b - free_b;
    *free_bytes = free_b;
    *total = total_b;
    return 0;
}

__attribute__((constructor)) static void memobs_cuda__devmem_ctor(void) {
    __atomic_store_n(&memobs__devmem_fn, &memobs_cuda__devmem, __ATOMIC_RELEASE);
}
#endif

cudaError_t memobs_cuda__check(cudaError_t rc, const char *what, const char *file, int line) {
    if (rc != cudaSuccess)
        memobs__log(MEMOBS_LOG_ERROR, "%s:%d: %s: %s (%s)", file, line, what, cudaGetErrorString(rc),
                    cudaGetErrorName(rc));
    return rc;
}

/* ======================================================================== */
/* Private: NVTX ranges for regions and markers                             */
/* ======================================================================== */

#ifdef MEMOBS_CUDA__NVTX
/* A region id whose name the tool gave no handle for (no tool attached:
   NVTX's no-op returns NULL); its events carry the text. Never a handle. */
#define MEMOBS_CUDA__NVTX_NONE ((nvtxStringHandle_t)(void *)&memobs_cuda__g)
#define MEMOBS_CUDA__NVTX_BITS 64 /* open regions per thread whose push is remembered one by one */

/* Per thread: the regions begun since the hook was installed and still
   open (depth), and which of them pushed a range: bit d for depth d, a
   count for the deeper ones (exact unless NVTX is switched while a thread
   is more than 64 deep). Regions are strictly nested per thread, and an
   unmatched end never reaches the hook, so an end at depth 0 closes a
   region begun before the hook was installed: it pops nothing. */
static __thread struct {
    uint32_t depth, deep;
    uint64_t pushed;
} memobs_cuda__nvtx_tls;

/* An event's attributes naming region id. The domain is made and each
   name registered once, at first use, under nvtx_lock: the first NVTX call
   loads the tool, which may take a while; no NVTX call happens at load
   time. */
static void memobs_cuda__nvtx_attr(nvtxEventAttributes_t *a, int32_t id, const char *name) {
    nvtxStringHandle_t h = NULL;
    if (!name) name = "(other)";
    if ((uint32_t)id < MEMOBS_MAX_REGIONS) h = __atomic_load_n(&memobs_cuda__g.names[id], __ATOMIC_ACQUIRE);
    if (MEMOBS__UNLIKELY(!h)) {
        memobs__spin_lock(&memobs_cuda__g.nvtx_lock);
        if (!memobs_cuda__g.nvtx_made) {
            memobs_cuda__g.domain = nvtxDomainCreateA("memobs");
            memobs_cuda__g.nvtx_made = 1;
        }
        if ((uint32_t)id < MEMOBS_MAX_REGIONS && (h = memobs_cuda__g.names[id]) == NULL) {
            h = nvtxDomainRegisterStringA(memobs_cuda__g.domain, name); /* names live as long as the process */
            if (!h) h = MEMOBS_CUDA__NVTX_NONE;
            __atomic_store_n(&memobs_cuda__g.names[id], h, __ATOMIC_RELEASE);
        }
        memobs__spin_unlock(&memobs_cuda__g.nvtx_lock);
    }
    memset(a, 0, sizeof *a);
    a->version = NVTX_VERSION;
    a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (h && h != MEMOBS_CUDA__NVTX_NONE) {
        a->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a->message.registered = h;
    } else {
        a->messageType = NVTX_MESSAGE_TYPE_ASCII;
        a->message.ascii = name;
    }
}

/* memobs.h's region hook (memobs__reg_hook). */
static void memobs_cuda__nvtx_hook(int op, int32_t id, const char *name) {
    nvtxEventAttributes_t a;
    uint32_t d;
    int on;
    if (op == MEMOBS__REG_END) {
        int pushed;
        if ((d = memobs_cuda__nvtx_tls.depth) == 0) return; /* begun before the hook was installed */
        memobs_cuda__nvtx_tls.depth = --d;
        if (d < MEMOBS_CUDA__NVTX_BITS) {
            pushed = (int)(memobs_cuda__nvtx_tls.pushed >> d & 1u);
            memobs_cuda__nvtx_tls.pushed &= ~((uint64_t)1 << d);
        } else if ((pushed = memobs_cuda__nvtx_tls.deep > 0) != 0) {
            memobs_cuda__nvtx_tls.deep--;
        }
        /* the domain was made before this thread's push */
        if (pushed) (void)nvtxDomainRangePop(memobs_cuda__g.domain);
        return;
    }
    on = MEMOBS__LOAD(&memobs_cuda__g.nvtx.v) != 0;
    if (op == MEMOBS__REG_BEGIN) {
        d = memobs_cuda__nvtx_tls.depth++;
        if (d < MEMOBS_CUDA__NVTX_BITS) {
            if (on) memobs_cuda__nvtx_tls.pushed |= (uint64_t)1 << d;
            else memobs_cuda__nvtx_tls.pushed &= ~((uint64_t)1 << d);
        } else if (on) {
            memobs_cuda__nvtx_tls.deep++;
        }
    }
    if (!on) return;
    memobs_cuda__nvtx_attr(&a, id, name);
    if (op == MEMOBS__REG_BEGIN) (void)nvtxDomainRangePushEx(memobs_cuda__g.domain, &a);
    else (void)nvtxDomainMarkEx(memobs_cuda__g.domain, &a);
}
#endif

int memobs_cuda_set_nvtx(int on) {
#if defined(MEMOBS_CUDA__NVTX)
    MEMOBS__STORE(&memobs_cuda__g.nvtx.v, on ? 1u : 0u);
    /* switched off, the hook stays: the regions that pushed still pop */
    if (on) __atomic_store_n(&memobs__reg_hook, &memobs_cuda__nvtx_hook, __ATOMIC_RELEASE);
    return MEMOBS_OK;
#elif defined(MEMOBS_DISABLE)
    (void)on;
    return MEMOBS_OK;
#else
    if (!on) return MEMOBS_OK;
    memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_set_nvtx(%d): NVTX is not compiled in (MEMOBS_NO_NVTX, or no "
                "<nvtx3/nvToolsExt.h>); regions and markers stay out of NVTX", on);
    return MEMOBS_ERR_INVALID;
#endif
}

int memobs_cuda_nvtx(void) {
#ifdef MEMOBS_CUDA__NVTX
    return MEMOBS__LOAD(&memobs_cuda__g.nvtx.v) != 0;
#else
    return 0;
#endif
}

/* MEMOBS_NVTX, read once at load time (with MEMOBS_NO_AUTOINIT too: the
   hook must be in place before the first region), and the hook installed
   when on: a pointer store, no NVTX call. */
#ifndef MEMOBS_DISABLE
__attribute__((constructor)) static void memobs_cuda__nvtx_ctor(void) {
    const char *s = getenv("MEMOBS_NVTX");
    int b = s ? memobs__parse_bool(s) : 1;
#ifdef MEMOBS_CUDA__NVTX
    if (b < 0)
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NVTX='%s' is not 0/1/on/off/true/false/yes/no; NVTX ranges stay on", s);
    if (b != 0) (void)memobs_cuda_set_nvtx(1);
#else
    if (s && b != 0)
        memobs__log(MEMOBS_LOG_WARN, "MEMOBS_NVTX='%s': NVTX is not compiled in (MEMOBS_NO_NVTX, or no "
                    "<nvtx3/nvToolsExt.h>); ignored", s);
#endif
}
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_IMPLEMENTATION */

/* SPDX-License-Identifier: MIT */
