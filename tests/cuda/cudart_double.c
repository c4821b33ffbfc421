/* cudart_double.c - link-time test double of the CUDA runtime (libcudart)
   and of the few driver (libcuda) entry points memobs uses, for the memobs
   CUDA wrapper tests: no GPU, no libcudart, no libcuda. Built as C
   (-std=c11) and as C++ (-x c++ -std=c++17) against the real CUDA 13.0
   headers. Every cudaXxx and cuXxx function below is defined with the
   prototype that <cuda_runtime_api.h> or <cuda.h> declares: in C a mismatch
   is a "conflicting types" error, in C++ the extern "C" block makes it a
   "conflicting declaration of C function" error. What it models, and the
   scripting API: cudart_double.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign under -std=c11 */
#endif
/* ---- RUNTIME MAJORS (prologue): -DCUDADBL_MAJOR=11|12|13, default 13 ----
   The functions whose signature that major has not (or which it lacks)
   are defined under private names (cudadbl_v13_*); the major's own, where
   it has one, is at the end (RUNTIME MAJORS). */
#ifndef CUDADBL_MAJOR
#define CUDADBL_MAJOR 13
#endif
#if CUDADBL_MAJOR != 11 && CUDADBL_MAJOR != 12 && CUDADBL_MAJOR != 13
#error "CUDADBL_MAJOR: 11, 12 or 13"
#endif
#if CUDADBL_MAJOR < 13
#define cudaMemcpyBatchAsync cudadbl_v13_cudaMemcpyBatchAsync
#define cudaMemcpyBatchAsync_ptsz cudadbl_v13_cudaMemcpyBatchAsync_ptsz
#define cudaMemcpy3DBatchAsync cudadbl_v13_cudaMemcpy3DBatchAsync
#define cudaMemcpy3DBatchAsync_ptsz cudadbl_v13_cudaMemcpy3DBatchAsync_ptsz
#endif
#if CUDADBL_MAJOR == 11
#define cudaGraphInstantiate cudadbl_v13_cudaGraphInstantiate
#define cudaGraphInstantiateWithParams cudadbl_v13_cudaGraphInstantiateWithParams
#define cudaGraphInstantiateWithParams_ptsz cudadbl_v13_cudaGraphInstantiateWithParams_ptsz
#define cudaGetDriverEntryPoint cudadbl_v13_cudaGetDriverEntryPoint
#define cudaGetDriverEntryPoint_ptsz cudadbl_v13_cudaGetDriverEntryPoint_ptsz
#define cudaGetDriverEntryPointByVersion cudadbl_v13_cudaGetDriverEntryPointByVersion
#define cudaGetDriverEntryPointByVersion_ptsz cudadbl_v13_cudaGetDriverEntryPointByVersion_ptsz
#endif

/* The plain names are defined below, the per-thread default stream ones at
   the end, whatever the build asks of the header. */
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include "cudart_double.h"
#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h> /* virtual memory management: reservations, memfd mappings */

/* cuda.h maps these names to their newest versions; libcuda still exports
   the older symbols, which the double defines with their documented
   prototypes (cuStreamGetCaptureInfo_v2 is declared by cudart_double.h). */
#undef cuStreamGetCaptureInfo
#undef cuEventElapsedTime

#ifdef __cplusplus
#define DBL_TLS thread_local
extern "C" {
#else
#define DBL_TLS _Thread_local
#endif

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);

/* ---- functions the double defines, for counts and scripted failures ---- */

#define DBL_FUNCS(X)                                                                                        \
    X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaHostAlloc) X(cudaFreeHost) X(cudaMallocManaged)       \
    X(cudaMallocAsync) X(cudaFreeAsync) X(cudaHostRegister) X(cudaHostUnregister) X(cudaMemcpy)             \
    X(cudaMemcpyAsync) X(cudaMemcpy2D) X(cudaMemcpy2DAsync) X(cudaMemcpyPeer) X(cudaMemcpyPeerAsync)        \
    X(cudaMemset) X(cudaMemsetAsync) X(cudaPointerGetAttributes) X(cudaMemGetInfo) X(cudaGetDevice)         \
    X(cudaSetDevice) X(cudaGetDeviceCount) X(cudaGetErrorString) X(cudaGetErrorName) X(cudaGetLastError)    \
    X(cudaPeekAtLastError) X(cudaDeviceSynchronize) X(cudaStreamSynchronize) X(cudaStreamQuery)            \
    X(cudaStreamCreate) X(cudaStreamDestroy) X(cudaEventCreate) X(cudaEventCreateWithFlags)                 \
    X(cudaEventRecord) X(cudaEventQuery) X(cudaEventSynchronize) X(cudaEventElapsedTime) X(cudaEventDestroy) \
    X(cudaStreamGetDevice) X(cudaDeviceReset) X(cudaStreamCreateWithFlags) X(cudaStreamWaitEvent)           \
    X(cudaStreamBeginCapture) X(cudaStreamEndCapture) X(cudaStreamIsCapturing) X(cudaStreamGetCaptureInfo)  \
    X(cudaThreadExchangeStreamCaptureMode) X(cudaGraphInstantiate) X(cudaGraphInstantiateWithFlags)         \
    X(cudaGraphLaunch) X(cudaGraphExecDestroy) X(cudaGraphDestroy) X(cudaGraphInstantiateWithParams)        \
    X(cudaMemcpy3D) X(cudaMemcpy3DAsync) X(cudaMemcpy3DPeer) X(cudaMemcpy3DPeerAsync) X(cudaMemcpyToSymbol)  \
    X(cudaMemcpyToSymbolAsync) X(cudaMemcpyFromSymbol) X(cudaMemcpyFromSymbolAsync) X(cudaMemcpy2DToArray)  \
    X(cudaMemcpy2DToArrayAsync) X(cudaMemcpy2DFromArray) X(cudaMemcpy2DFromArrayAsync)                      \
    X(cudaMemcpy2DArrayToArray) X(cudaMemcpyBatchAsync) X(cudaMemcpy3DBatchAsync)                           \
    X(cuCtxGetCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxGetDevice) X(cuStreamGetCtx)     \
    X(cuStreamGetCaptureInfo_v2) X(cuStreamGetCaptureInfo) X(cuEventCreate) X(cuEventRecord) X(cuEventQuery) \
    X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventElapsedTime_v2) X(cuEventDestroy_v2)               \
    X(cuMemGetInfo_v2) X(cuPointerGetAttributes) X(cuDevicePrimaryCtxGetState) X(cuDevicePrimaryCtxRetain)  \
    X(cuDevicePrimaryCtxRelease_v2) X(cuDeviceGetCount) X(cuDeviceGet) X(cuThreadExchangeStreamCaptureMode) \
    X(cuGetErrorName)                                                                                       \
    X(cuMemGetAllocationGranularity) X(cuMemCreate) X(cuMemRelease) X(cuMemAddressReserve) X(cuMemAddressFree) \
    X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) /* virtual memory management: its section, at the end */       \
    DBL_FUNCS_ENTRY(X) DBL_FUNCS_CTX_POOL(X)
/* Driver memory and entry points (their section, near the end). */
#define DBL_FUNCS_ENTRY(X)                                                                                  \
    X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemFree_v2) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2)            \
    X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cudaGetDriverEntryPoint) X(cudaMallocPitch)
/* Created contexts, their ids, primary context reset, pools with a
   location (the section "Contexts created and destroyed, pools" below). */
#define DBL_FUNCS_CTX_POOL(X)                                                                               \
    X(cuCtxCreate_v4) X(cuCtxDestroy_v2) X(cuCtxGetId) X(cuDevicePrimaryCtxReset_v2) X(cuMemPoolCreate)     \
    X(cuMemPoolDestroy) X(cuMemAllocFromPoolAsync) X(cudaMemPoolCreate) X(cudaMemPoolDestroy)               \
    X(cudaMallocFromPoolAsync)

#define DBL_ENUM(n) F_##n,
#define DBL_NAME(n) #n,
enum { DBL_FUNCS(DBL_ENUM) F_COUNT };
static const char *const fn_names[F_COUNT] = {DBL_FUNCS(DBL_NAME)};

typedef struct {
    long calls;
    unsigned fail_skip, fail_n;
    cudaError_t fail_err;
    int has_last;
    cudadbl_call_t last;
} fn_state_t;

/* ---- state (all under g_mu) ---------------------------------------------- */

typedef struct {
    char *base;
    size_t size;
    cudadbl_kind_t kind;
    int device;
    unsigned flags;
    int pending_free; /* cudaFreeAsync queued, not yet completed */
    void *free_stream; /* the stream of that cudaFreeAsync */
    unsigned long long free_seq; /* the seq of its op */
} alloc_t;

/* Freed device blocks kept for reuse (cudadbl_set_reuse). */
typedef struct {
    char *base;
    size_t size;
    int device;
} cached_t;
#define DBL_CACHE_MAX 4096

struct CUstream_st;

/* "Stream s up to the op numbered seq": what an op waits for. */
typedef struct {
    struct CUstream_st *s;
    unsigned long long seq;
} dep_t;

enum { OP_WORK = 0, OP_FREE = 1, OP_EVENT = 2 };
typedef struct {
    int kind;
    float ts;                /* fake clock when queued */
    unsigned long long seq;  /* global issue order */
    void *ptr;               /* OP_FREE: the block */
    struct CUevent_st *ev;   /* OP_EVENT: the event (NULL once destroyed or re-recorded) */
    char *touch[2];          /* device-kind table blocks the op reads or writes (base), NULL: none */
    dep_t *deps;             /* ops of other streams it cannot complete before */
    size_t ndeps;
} op_t;

enum { SK_USER = CUDADBL_STREAM_USER, SK_LEGACY = CUDADBL_STREAM_LEGACY, SK_PT = CUDADBL_STREAM_PER_THREAD };

/* A stream capture sequence. Lives until cudadbl_reset (streams and
   events may point to it after it ended). */
typedef struct capture {
    unsigned long long id;
    int mode; /* enum cudaStreamCaptureMode */
    int invalidated, ended;
    unsigned long owner; /* thread that began it */
    struct CUstream_st *origin;
    struct CUgraph_st *graph;
    struct capture *next;
} capture_t;

struct CUstream_st {
    int device;
    int kind;      /* SK_* */
    unsigned flags; /* cudaStreamNonBlocking */
    int destroyed; /* cudaStreamDestroy called; freed once its ops complete */
    int dead;      /* destroyed with its context (cudaDeviceReset): kept until cudadbl_reset */
    op_t *ops;     /* pending ops, oldest first */
    size_t nops, cap;
    capture_t *capture; /* the capture it belongs to (origin or joined), NULL: none */
    int unjoined;       /* joined stream with work the origin has not waited for */
    int stuck;          /* cudadbl_set_stuck: its ops never complete */
    int skip;           /* complete_device: blocked by a stuck stream this time */
    unsigned cap_ver;   /* bumped at each join and node while capturing */
    struct CUstream_st *next;
};

struct CUevent_st {
    int device;
    unsigned flags;
    int recorded, done;
    int dead;        /* destroyed with its context (cudaDeviceReset) */
    float ts;
    struct CUstream_st *rec_stream; /* where its record op was queued */
    unsigned long long rec_seq;
    int captured;    /* last recorded in a capturing stream */
    capture_t *capture;
    unsigned rec_ver; /* rec_stream's cap_ver at the captured record */
    struct CUctx_st *ctx; /* the context current at its creation (NULL: none) ... */
    unsigned ctx_inc;     /* ... and that context's incarnation */
    struct CUevent_st *next;
};

enum { N_COPY = 0, N_MEMSET = 1 };
typedef struct {
    int type;
    char *dst;
    const char *src;
    size_t dpitch, spitch, width, height;
    int value;
    int dst_tab, src_tab; /* the side lay in a table allocation at capture */
} node_t;

struct CUgraph_st {
    node_t *nodes;
    size_t n, cap;
    int device;
    int capturing; /* still being built by a capture */
    int dead;
    struct CUgraph_st *next;
};

struct CUgraphExec_st {
    node_t *nodes;
    size_t n;
    int device;
    int dead;
    struct CUgraphExec_st *next;
};

struct CUctx_st {
    int device;
    int active;
    unsigned inc; /* incarnation: changes at every activation; also the context's id (cuCtxGetId) */
    long retains; /* cuDevicePrimaryCtxRetain minus releases */
    int created;  /* activations since cudadbl_reset */
    int rt_held;  /* the runtime holds it (it activated it, or used it since); see cuDevicePrimaryCtxRelease_v2 */
    int user;     /* made by cuCtxCreate (not a primary context) */
};

typedef struct {
    struct CUctx_st *ctx;
    unsigned inc;
} ctxref_t;
#define DBL_POOLED 0x80000000u /* alloc_t.flags of a block from a memory pool */
static void ctx_pool_reset(void); /* below */
#define DBL_STACK_MAX 16

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static fn_state_t g_fn[F_COUNT];
static alloc_t *g_alloc; /* sorted by base; ranges are disjoint */
static size_t g_nalloc, g_capalloc;
static struct CUstream_st *g_streams; /* every stream: legacy, per-thread, user (destroyed-pending and dead too) */
static struct CUstream_st *g_legacy[CUDADBL_MAX_DEVICES];
static struct CUevent_st *g_events;
static struct CUgraph_st *g_graphs;
static struct CUgraphExec_st *g_execs;
static capture_t *g_captures;
static struct CUctx_st g_ctx[CUDADBL_MAX_DEVICES];
static int g_ndev = CUDADBL_DEFAULT_DEVICES;
static size_t g_total[CUDADBL_MAX_DEVICES], g_outside[CUDADBL_MAX_DEVICES], g_used[CUDADBL_MAX_DEVICES];
static int g_totals_set; /* g_total initialized */
static int g_reuse;         /* freed device blocks are handed out again */
static cached_t *g_cache;   /* LIFO */
static size_t g_ncache, g_capcache;
static float g_clock;
static float g_copy_fixed_ms;       /* every copy advances the clock by this ... */
static double g_copy_bytes_per_ms;  /* ... plus bytes / this (0: nothing) */
static int g_marker_set;
static float g_marker;
static unsigned g_gen = 1; /* bumped by cudadbl_reset: threads re-initialize their state */
static int g_drv_init;     /* the runtime initialized the driver */
static cudaError_t g_sticky;
static unsigned g_inc;     /* context incarnations handed out (never reset) */
static unsigned long g_ntid; /* thread ids handed out (never reset) */
static unsigned long long g_seq; /* op numbers handed out */
static unsigned long long g_capture_id; /* capture ids handed out (never reset: never reused) */
static int g_invalidated;
static unsigned long long g_bad_id; /* ids handed out for invalidated captures (no capture's) */
static long g_dead_uses;              /* driver calls given an event of a destroyed context */
static int g_release_at_retain[CUDADBL_MAX_DEVICES]; /* cudadbl_release_at_retain */
static long g_hazards, g_launches, g_graph_bytes;
/* Process facts, never reset (CUDA cannot be un-initialized nor its
   teardown undone). */
static int g_ever_init;       /* the runtime initialized the driver at least once */
static int g_teardown_hooked; /* its teardown handler is registered */
static int g_torn_down;       /* the teardown ran: every later call fails */
static int g_forked;          /* a forked child of a process that had initialized */
static long g_after_teardown, g_in_child, g_hung;
static pthread_cond_t g_never = PTHREAD_COND_INITIALIZER; /* what a wait on a stuck stream waits for */

static DBL_TLS unsigned t_gen;
static DBL_TLS int t_dev;
static DBL_TLS cudaError_t t_last;
static DBL_TLS unsigned long t_tid;
static DBL_TLS int t_cur;   /* the device the call at hand works on */
static DBL_TLS int t_ptds;  /* inside a _ptds/_ptsz entry point: NULL is the per-thread stream */
static DBL_TLS int t_capmode; /* enum cudaStreamCaptureMode */
static DBL_TLS ctxref_t t_stack[DBL_STACK_MAX];
static DBL_TLS int t_nstack;
static DBL_TLS ctxref_t t_bound; /* the primary context the runtime made current */
static DBL_TLS struct CUstream_st *t_pts[CUDADBL_MAX_DEVICES];
static DBL_TLS int t_kind; /* stream kind the call resolved to */
static DBL_TLS int t_fn;   /* the call at hand (F_*) */

static void lock(void) { pthread_mutex_lock(&g_mu); }
static void unlock(void) { pthread_mutex_unlock(&g_mu); }

static void init_totals(void) {
    int i;
    if (g_totals_set) return;
    for (i = 0; i < CUDADBL_MAX_DEVICES; i++) {
        g_total[i] = CUDADBL_DEFAULT_TOTAL;
        g_ctx[i].device = i;
    }
    g_totals_set = 1;
}

/* Under the lock: this thread's state belongs to the current generation. */
static void thread_sync(void) {
    init_totals();
    if (!t_tid) t_tid = ++g_ntid;
    if (t_gen != g_gen) {
        t_gen = g_gen;
        t_dev = 0;
        t_last = cudaSuccess;
        t_capmode = cudaStreamCaptureModeGlobal;
        t_nstack = 0;
        t_bound.ctx = NULL;
        t_bound.inc = 0;
        memset(t_pts, 0, sizeof t_pts);
    }
    t_kind = SK_USER;
}

static int fn_index(const char *name) {
    int i;
    if (!name) return -1;
    for (i = 0; i < F_COUNT; i++)
        if (strcmp(fn_names[i], name) == 0) return i;
    return -1;
}

static cudadbl_call_t blank_call(void) {
    cudadbl_call_t c;
    memset(&c, 0, sizeof c);
    c.kind = -1;
    return c;
}

static int valid_device(int d) { return d >= 0 && d < g_ndev; }

/* ---- contexts ---------------------------------------------------------------- */

static void activate(int d) {
    if (g_ctx[d].active) return;
    g_ctx[d].active = 1;
    g_ctx[d].inc = ++g_inc;
    g_ctx[d].created++;
}

/* The thread's current context (top of the push stack, else the primary
   context the runtime made current), or NULL. */
static const ctxref_t *cur_ref(void) {
    if (t_nstack) return &t_stack[t_nstack - 1];
    return t_bound.ctx ? &t_bound : NULL;
}

static int ref_live(const ctxref_t *r) { return r->ctx->active && r->ctx->inc == r->inc; }

/* The device runtime calls work on: the pushed context's, else the thread's. */
static int rt_device(void) { return t_nstack ? t_stack[t_nstack - 1].ctx->device : t_dev; }

/* Runtime: makes the context for the calling thread's device current,
   creating it if needed; sets t_cur. */
static cudaError_t need_context(void) {
    if (t_nstack) {
        if (!ref_live(&t_stack[t_nstack - 1])) return cudaErrorContextIsDestroyed;
        t_cur = t_stack[t_nstack - 1].ctx->device;
        return valid_device(t_cur) ? cudaSuccess : cudaErrorInvalidDevice;
    }
    t_cur = t_dev;
    if (!valid_device(t_dev)) return cudaErrorInvalidDevice;
    activate(t_dev);
    g_ctx[t_dev].rt_held = 1; /* the runtime retains the primary context it uses */
    t_bound.ctx = &g_ctx[t_dev];
    t_bound.inc = g_ctx[t_dev].inc;
    return cudaSuccess;
}

/* ---- teardown, fork, stuck streams ------------------------------------------ */

/* A line on stderr (the first 20 per process), written at once: a test
   sees it even if the process then hangs or dies. */
static void say(const char *what, int f) {
    static int said;
    char line[256];
    int n;
    if (said >= 20) return;
    said++;
    n = snprintf(line, sizeof line, "cudart double: %s %s (pid %ld)\n", fn_names[f], what, (long)getpid());
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Under the lock, at every call (but the pure lookups
   cudaGetErrorName/String and cuGetErrorName): 1 when the call must not
   be made, counted and said.
   - After the runtime's teardown. libcudart tears down at exit in a
     handler it registers when it initializes (at its first call): exit
     handlers run in reverse order, so one registered before that runs
     after the teardown (observed, not documented: host-side traces show
     the runtime's unbinding from its primary contexts registered with
     atexit, Stack Overflow question 61521423; LLVM's offload wrapper
     relies on CUDA using atexit). NVIDIA documents the result, not the
     mechanism:
     runtime calls fail with cudaErrorCudartUnloading ("called during
     process shut down, at a point in time after CUDA driver has been
     unloaded"), driver calls with CUDA_ERROR_DEINITIALIZED ("the CUDA
     driver is in the process of shutting down"). The double fails every
     call so (strict reading: whatever the call).
   - In a child forked (without exec) from a process that had initialized
     CUDA: NVIDIA's CUDA C++ guidelines (rule 1.6): "CUDA does not
     duplicate any of its internal data structures or threads to other
     processes upon a call to fork. Any use of CUDA after a call to fork
     and before a subsequent call to exec has undefined behavior." The
     double fails every call with the error a real child gets
     (cudaErrorInitializationError, CUDA_ERROR_NOT_INITIALIZED). A child of
     a process that never initialized CUDA may use it (PyTorch and vLLM
     fork workers so); kinder than the guideline's letter, knowingly. */
static int violation(int f) {
    if (f == F_cudaGetErrorString || f == F_cudaGetErrorName || f == F_cuGetErrorName) return 0;
    if (g_torn_down) {
        g_after_teardown++;
        say("called after the runtime's teardown", f);
        return 1;
    }
    if (g_forked) {
        g_in_child++;
        say("called in a forked child of a process that used CUDA", f);
        return 1;
    }
    return 0;
}

static void teardown(void) {
    lock();
    g_torn_down = 1;
    unlock();
}

/* A synchronization that needs work of a stuck stream: it waits forever
   (as on a GPU whose kernel never ends: a collective waiting on a dead
   peer), the lock released for the other threads. */
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
static void hang(void) {
    g_hung++;
    say("waits forever: work of a stuck stream never completes", t_fn);
    for (;;) pthread_cond_wait(&g_never, &g_mu);
}

/* fork(): the lock held across it; the child notes whether its parent had
   initialized. */
static void fork_prepare(void) { pthread_mutex_lock(&g_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&g_mu); }
static void fork_child(void) {
    g_forked = g_ever_init;
    pthread_mutex_unlock(&g_mu);
}
__attribute__((constructor)) static void dbl_load(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

/* CUDADBL_REPORT=1: one line at the end of the process (after every exit
   handler): whether the teardown ran, and the calls made after it and in
   a forked child. */
__attribute__((destructor)) static void dbl_unload(void) {
    const char *r = getenv("CUDADBL_REPORT");
    char line[200];
    int n;
    if (!r || !*r || !strcmp(r, "0")) return;
    lock();
    n = snprintf(line, sizeof line,
                 "cudart double: pid %ld: teardown %s; %ld calls after it; %ld calls in a forked child; %ld waits "
                 "forever\n",
                 (long)getpid(), g_torn_down ? "ran" : "did not run", g_after_teardown, g_in_child, g_hung);
    unlock();
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Runtime call levels: what a call needs before it can work. */
enum {
    NEED_NOTHING = 0, /* error strings, last error */
    NEED_INIT = 1,    /* initializes the driver, no device needed (cudaGetDeviceCount) */
    NEED_DEVICE = 2,  /* ... and a device (cudaErrorNoDevice without one), no context */
    NEED_CONTEXT = 3  /* ... and the current device's primary context (sticky errors apply) */
};

/* Locks, counts the call, syncs the thread state. Returns the scripted
   error if this call is to fail, else what the level asks for (cudaSuccess
   when all is there). */
static cudaError_t enter(int f, int need) {
    fn_state_t *s = &g_fn[f];
    lock();
    thread_sync();
    t_cur = rt_device();
    t_fn = f;
    s->calls++;
    if (violation(f)) return g_torn_down ? cudaErrorCudartUnloading : cudaErrorInitializationError;
    if (s->fail_n) {
        if (s->fail_skip) s->fail_skip--;
        else {
            s->fail_n--;
            return s->fail_err;
        }
    }
    if (need >= NEED_INIT) {
        g_drv_init = g_ever_init = 1;
        if (!g_teardown_hooked) { /* as libcudart: at its initialization */
            g_teardown_hooked = 1;
            atexit(teardown);
        }
    }
    if (need >= NEED_DEVICE && g_ndev == 0) return cudaErrorNoDevice;
    if (need >= NEED_CONTEXT) {
        if (g_sticky != cudaSuccess) return g_sticky;
        return need_context();
    }
    return cudaSuccess;
}

/* Keeps the last call, sets the last error, unlocks; returns e. */
static cudaError_t leave(int f, cudadbl_call_t *c, cudaError_t e) {
    c->result = e;
    c->device = rt_device();
    c->stream_kind = t_kind;
    g_fn[f].last = *c;
    g_fn[f].has_last = 1;
    if (e != cudaSuccess && e != cudaErrorNotReady && f != F_cudaGetLastError && f != F_cudaPeekAtLastError)
        t_last = e;
    unlock();
    return e;
}

/* Driver call levels. */
enum {
    DRV_ANY = 0,     /* works before initialization (cuGetErrorName) */
    DRV_INIT = 1,    /* the driver must be initialized */
    DRV_HEALTHY = 2, /* ... and no sticky error */
    DRV_CONTEXT = 3  /* ... and a live current context (sets t_cur) */
};

static CUresult drv_context(void) {
    const ctxref_t *r = cur_ref();
    if (!r) return CUDA_ERROR_INVALID_CONTEXT;
    if (!ref_live(r)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    t_cur = r->ctx->device;
    return CUDA_SUCCESS;
}

static CUresult drv_enter(int f, int need) {
    fn_state_t *s = &g_fn[f];
    lock();
    thread_sync();
    t_cur = rt_device();
    t_fn = f;
    s->calls++;
    if (violation(f)) return g_torn_down ? CUDA_ERROR_DEINITIALIZED : CUDA_ERROR_NOT_INITIALIZED;
    if (s->fail_n) {
        if (s->fail_skip) s->fail_skip--;
        else {
            s->fail_n--;
            return (CUresult)s->fail_err;
        }
    }
    if (need >= DRV_INIT && !g_drv_init) return CUDA_ERROR_NOT_INITIALIZED;
    if (need >= DRV_HEALTHY && g_sticky != cudaSuccess) return (CUresult)g_sticky;
    if (need >= DRV_CONTEXT) return drv_context();
    return CUDA_SUCCESS;
}

/* Keeps the last call and unlocks: the runtime's last error stays. */
static CUresult drv_leave(int f, cudadbl_call_t *c, CUresult r) {
    c->result = (cudaError_t)r;
    c->device = rt_device();
    c->stream_kind = t_kind;
    g_fn[f].last = *c;
    g_fn[f].has_last = 1;
    unlock();
    return r;
}

/* ---- allocation table ------------------------------------------------------ */

/* Index of the first allocation whose base is > p. */
static size_t upper(const void *p) {
    size_t lo = 0, hi = g_nalloc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)g_alloc[mid].base <= (uintptr_t)p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The allocation holding p, or NULL. */
static alloc_t *find(const void *p) {
    size_t i = upper(p);
    alloc_t *a;
    if (!p || i == 0) return NULL;
    a = &g_alloc[i - 1];
    return (uintptr_t)p - (uintptr_t)a->base < a->size ? a : NULL;
}

/* An allocation overlapping [p, p+n), or NULL. */
static alloc_t *find_overlap(const void *p, size_t n) {
    size_t i = upper(p);
    if (i > 0 && (uintptr_t)p - (uintptr_t)g_alloc[i - 1].base < g_alloc[i - 1].size) return &g_alloc[i - 1];
    if (i < g_nalloc && (uintptr_t)g_alloc[i].base - (uintptr_t)p < n) return &g_alloc[i];
    return NULL;
}

static int add_alloc(void *base, size_t size, cudadbl_kind_t kind, int device, unsigned flags) {
    size_t i;
    if (g_nalloc == g_capalloc) {
        size_t cap = g_capalloc ? g_capalloc * 2 : 64;
        alloc_t *n = (alloc_t *)realloc(g_alloc, cap * sizeof *n);
        if (!n) return -1;
        g_alloc = n;
        g_capalloc = cap;
    }
    i = upper(base);
    memmove(&g_alloc[i + 1], &g_alloc[i], (g_nalloc - i) * sizeof *g_alloc);
    g_alloc[i].base = (char *)base;
    g_alloc[i].size = size;
    g_alloc[i].kind = kind;
    g_alloc[i].device = device;
    g_alloc[i].flags = flags;
    g_alloc[i].pending_free = 0;
    g_alloc[i].free_stream = NULL;
    g_alloc[i].free_seq = 0;
    g_nalloc++;
    if (kind == CUDADBL_DEVICE) g_used[device] += size;
    return 0;
}

/* Removes a (a pointer into the table) and releases its memory (into the
   reuse cache if cache_ok and reuse is on). */
static void release_alloc(alloc_t *a, int cache_ok) {
    size_t i = (size_t)(a - g_alloc);
    if (a->kind == CUDADBL_DEVICE) g_used[a->device] -= a->size;
    if (a->kind == CUDADBL_DEVICE && g_reuse && cache_ok) {
        if (g_ncache == DBL_CACHE_MAX) { /* drop the oldest */
            free(g_cache[0].base);
            memmove(g_cache, g_cache + 1, (g_ncache - 1) * sizeof *g_cache);
            g_ncache--;
        }
        if (g_ncache == g_capcache) {
            size_t cap = g_capcache ? g_capcache * 2 : 64;
            cached_t *n = (cached_t *)realloc(g_cache, cap * sizeof *n);
            if (n) {
                g_cache = n;
                g_capcache = cap;
            }
        }
        if (g_ncache < g_capcache) {
            g_cache[g_ncache].base = a->base;
            g_cache[g_ncache].size = a->size;
            g_cache[g_ncache].device = a->device;
            g_ncache++;
        } else {
            free(a->base);
        }
    } else if (a->kind != CUDADBL_REGISTERED && a->kind != CUDADBL_MAPPED) { /* MAPPED: the VMM section's */
        free(a->base);
    }
    memmove(&g_alloc[i], &g_alloc[i + 1], (g_nalloc - i - 1) * sizeof *g_alloc);
    g_nalloc--;
}

static void drop_cache(void) {
    size_t i;
    for (i = 0; i < g_ncache; i++) free(g_cache[i].base);
    free(g_cache);
    g_cache = NULL;
    g_ncache = g_capcache = 0;
}

/* A cached block of this size on this device (the latest freed), or NULL. */
static void *from_cache(size_t size, int device) {
    size_t i = g_ncache;
    while (i-- > 0)
        if (g_cache[i].size == size && g_cache[i].device == device) {
            void *p = g_cache[i].base;
            memmove(&g_cache[i], &g_cache[i + 1], (g_ncache - i - 1) * sizeof *g_cache);
            g_ncache--;
            return p;
        }
    return NULL;
}

/* The allocation whose base is exactly p, or NULL. */
static alloc_t *find_base(const void *p) {
    alloc_t *a = find(p);
    return a && a->base == (const char *)p ? a : NULL;
}

static size_t free_bytes(int dev) {
    size_t used = g_used[dev] + g_outside[dev];
    return used >= g_total[dev] ? 0 : g_total[dev] - used;
}

/* Host memory for a new block; NULL on failure. */
static void *host_block(size_t size) {
    void *p = NULL;
    if (posix_memalign(&p, 256, size)) return NULL;
    return p;
}

/* Allocates and records; *out is written only on success. */
static cudaError_t do_alloc(void **out, size_t size, cudadbl_kind_t kind, int device, unsigned flags) {
    void *p;
    if (!out) return cudaErrorInvalidValue;
    if (size == 0) {
        *out = NULL;
        return cudaSuccess;
    }
    if (kind == CUDADBL_DEVICE && size > free_bytes(device)) return cudaErrorMemoryAllocation;
    p = kind == CUDADBL_DEVICE && g_reuse ? from_cache(size, device) : NULL;
    if (!p) p = host_block(size);
    if (!p) return cudaErrorMemoryAllocation;
    if (add_alloc(p, size, kind, device, flags)) {
        free(p);
        return cudaErrorMemoryAllocation;
    }
    *out = p;
    return cudaSuccess;
}

/* ---- streams and ops --------------------------------------------------------- */

static struct CUstream_st *new_stream(int device, int kind, unsigned flags) {
    struct CUstream_st *s = (struct CUstream_st *)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->device = device;
    s->kind = kind;
    s->flags = flags;
    s->next = g_streams;
    g_streams = s;
    return s;
}

static struct CUstream_st *legacy_stream(int d) {
    if (d < 0 || d >= CUDADBL_MAX_DEVICES) return NULL;
    if (!g_legacy[d]) g_legacy[d] = new_stream(d, SK_LEGACY, 0);
    return g_legacy[d];
}

static struct CUstream_st *per_thread_stream(int d) {
    if (d < 0 || d >= CUDADBL_MAX_DEVICES) return NULL;
    if (!t_pts[d]) t_pts[d] = new_stream(d, SK_PT, 0);
    return t_pts[d];
}

/* Blocking streams synchronize with the legacy stream. */
static int blocking(const struct CUstream_st *s) {
    return s->kind == SK_PT || (s->kind == SK_USER && !(s->flags & cudaStreamNonBlocking));
}

static int stream_exists(const struct CUstream_st *p) {
    struct CUstream_st *it;
    for (it = g_streams; it; it = it->next)
        if (it == p) return 1;
    return 0;
}

/* The stream behind a handle (NULL: the legacy stream, or in a _ptsz entry
   point the per-thread one; cudaStreamLegacy, cudaStreamPerThread: those of
   the device t_cur), or NULL for an unknown, dead or destroyed one. */
static struct CUstream_st *resolve(cudaStream_t h, int allow_destroyed) {
    struct CUstream_st *it;
    if (h == NULL) it = t_ptds ? per_thread_stream(t_cur) : legacy_stream(t_cur);
    else if (h == cudaStreamLegacy) it = legacy_stream(t_cur);
    else if (h == cudaStreamPerThread) it = per_thread_stream(t_cur);
    else {
        for (it = g_streams; it; it = it->next)
            if (it == h && it->kind == SK_USER && !it->dead) break;
        if (it && it->destroyed && !allow_destroyed) it = NULL;
    }
    if (it) t_kind = it->kind;
    return it;
}

/* 1 if h is a user stream destroyed with its context. */
static int stream_dead(cudaStream_t h) {
    struct CUstream_st *it;
    for (it = g_streams; it; it = it->next)
        if (it == h && it->kind == SK_USER) return it->dead;
    return 0;
}

static struct CUevent_st *find_event_any(cudaEvent_t e) {
    struct CUevent_st *it;
    for (it = g_events; it; it = it->next)
        if (it == e) return it;
    return NULL;
}

/* A live event, or NULL. */
static struct CUevent_st *find_event(cudaEvent_t e) {
    struct CUevent_st *ev = find_event_any(e);
    return ev && !ev->dead ? ev : NULL;
}

static void count_hazards(const char *base, struct CUstream_st *s_ex, unsigned long long seq_ex);

/* Completes the ops of s numbered up to seq (oldest first), each after the
   ops of other streams it waits for. 1, or 0 when an op among them is
   stuck (on a stuck stream, or waiting for one): the ops before it are
   complete, it and the rest not. */
static int complete_upto(struct CUstream_st *s, unsigned long long seq) {
    while (s->nops && s->ops[0].seq <= seq) {
        op_t o = s->ops[0];
        size_t i;
        if (s->stuck) return 0;
        for (i = 0; i < o.ndeps; i++)
            if (o.deps[i].s != s && stream_exists(o.deps[i].s) && !complete_upto(o.deps[i].s, o.deps[i].seq))
                return 0;
        /* the recursion never touches s's head: deps are older than o */
        memmove(s->ops, s->ops + 1, (s->nops - 1) * sizeof *s->ops);
        s->nops--;
        free(o.deps);
        if (o.kind == OP_FREE) {
            alloc_t *a = find_base(o.ptr);
            if (a && a->pending_free) {
                count_hazards(a->base, NULL, 0);
                release_alloc(a, 1);
            }
        } else if (o.kind == OP_EVENT && o.ev) {
            o.ev->done = 1;
        }
    }
    return 1;
}

static int complete_all_of(struct CUstream_st *s) { return s->nops ? complete_upto(s, s->ops[s->nops - 1].seq) : 1; }

/* Frees destroyed streams that have nothing pending. */
static void reap_streams(void) {
    struct CUstream_st **pp = &g_streams;
    while (*pp) {
        struct CUstream_st *s = *pp;
        if (s->destroyed && !s->dead && s->nops == 0) {
            *pp = s->next;
            free(s->ops);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

/* Counts a hazard for every pending op touching the block at base (but the
   ops of s_ex numbered up to seq_ex, ordered before the release), and
   forgets those touches. */
static void count_hazards(const char *base, struct CUstream_st *s_ex, unsigned long long seq_ex) {
    struct CUstream_st *s;
    size_t i;
    int k;
    for (s = g_streams; s; s = s->next)
        for (i = 0; i < s->nops; i++) {
            op_t *o = &s->ops[i];
            int hit = 0;
            if (s == s_ex && o->seq <= seq_ex) continue;
            for (k = 0; k < 2; k++)
                if (o->touch[k] == base) {
                    o->touch[k] = NULL;
                    hit = 1;
                }
            if (hit) g_hazards++;
        }
}

/* Pending ops forget the block at base (released without a hazard). */
static void forget_touches(const char *base) {
    struct CUstream_st *s;
    size_t i;
    for (s = g_streams; s; s = s->next)
        for (i = 0; i < s->nops; i++) {
            if (s->ops[i].touch[0] == base) s->ops[i].touch[0] = NULL;
            if (s->ops[i].touch[1] == base) s->ops[i].touch[1] = NULL;
        }
}

/* Completes, in issue order, every op of every stream of device dev (all
   devices for -1). 1, or 0 when some are stuck (the others complete). */
static int complete_device(int dev) {
    struct CUstream_st *s;
    int all = 1;
    for (s = g_streams; s; s = s->next) s->skip = 0;
    for (;;) {
        struct CUstream_st *best = NULL;
        for (s = g_streams; s; s = s->next)
            if (!s->skip && (dev < 0 || s->device == dev) && s->nops && (!best || s->ops[0].seq < best->ops[0].seq))
                best = s;
        if (!best) break;
        if (!complete_upto(best, best->ops[0].seq)) {
            best->skip = 1;
            all = 0;
        }
    }
    reap_streams();
    return all;
}

/* Completes the ops of s stamped at or before the marker (and all before them). */
static void apply_marker_to(struct CUstream_st *s) {
    size_t i;
    unsigned long long seq = 0;
    int any = 0;
    if (!g_marker_set) return;
    for (i = 0; i < s->nops; i++)
        if (s->ops[i].ts <= g_marker) {
            seq = s->ops[i].seq;
            any = 1;
        }
    if (any) (void)complete_upto(s, seq);
}

static void apply_marker(void) {
    struct CUstream_st *s;
    for (s = g_streams; s; s = s->next) apply_marker_to(s);
    reap_streams();
}

static op_t new_op(int kind) {
    op_t o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    return o;
}

/* Notes that o reads or writes p, if p lies in a device-kind table block. */
static void touch(op_t *o, const void *p) {
    alloc_t *a = p ? find(p) : NULL;
    if (!a || a->kind != CUDADBL_DEVICE) return;
    if (!o->touch[0]) o->touch[0] = a->base;
    else if (o->touch[0] != a->base) o->touch[1] = a->base;
}

static void add_dep(op_t *o, struct CUstream_st *s, unsigned long long seq, size_t *cap) {
    if (o->ndeps == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        dep_t *n = (dep_t *)realloc(o->deps, nc * sizeof *n);
        if (!n) return; /* out of memory: the dependency is dropped */
        o->deps = n;
        *cap = nc;
    }
    o->deps[o->ndeps].s = s;
    o->deps[o->ndeps].seq = seq;
    o->ndeps++;
}

static cudaError_t reserve_op(struct CUstream_st *s) {
    if (s->nops == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        op_t *n = (op_t *)realloc(s->ops, cap * sizeof *n);
        if (!n) return cudaErrorMemoryAllocation;
        s->ops = n;
        s->cap = cap;
    }
    return cudaSuccess;
}

/* Queues o on s, stamped now, with the legacy stream's implicit
   dependencies (and wait_s up to wait_seq if wait_s). Returns its seq. */
static unsigned long long push_op(struct CUstream_st *s, op_t o, struct CUstream_st *wait_s,
                                  unsigned long long wait_seq) {
    size_t cap = 0;
    struct CUstream_st *b;
    if (reserve_op(s) != cudaSuccess) {
        free(o.deps);
        return 0; /* out of memory: the op is complete at once */
    }
    o.ts = g_clock;
    o.seq = ++g_seq;
    if (s->kind == SK_LEGACY) {
        for (b = g_streams; b; b = b->next)
            if (b != s && b->device == s->device && blocking(b) && b->nops)
                add_dep(&o, b, b->ops[b->nops - 1].seq, &cap);
    } else if (blocking(s)) {
        b = g_legacy[s->device];
        if (b && b->nops) add_dep(&o, b, b->ops[b->nops - 1].seq, &cap);
    }
    if (wait_s && wait_s != s) add_dep(&o, wait_s, wait_seq, &cap);
    s->ops[s->nops++] = o;
    apply_marker_to(s);
    return o.seq;
}

/* Forgets the op (if any) that would complete ev. */
static void detach_event(struct CUevent_st *ev) {
    struct CUstream_st *s;
    size_t i;
    for (s = g_streams; s; s = s->next)
        for (i = 0; i < s->nops; i++)
            if (s->ops[i].ev == ev) s->ops[i].ev = NULL;
}

/* Completes the ops up to and including ev's record; 0 if stuck. */
static int complete_through_event(struct CUevent_st *ev) {
    int done = !ev->rec_stream || !stream_exists(ev->rec_stream) || complete_upto(ev->rec_stream, ev->rec_seq);
    reap_streams();
    return done;
}

/* Synchronous work on the legacy stream of dev: completes it and every
   blocking stream of dev first; in a _ptds entry point, the calling
   thread's per-thread stream instead. */
static void sync_before(int dev) {
    struct CUstream_st *s;
    int done = 1;
    if (t_ptds) {
        s = per_thread_stream(dev);
        if (s) done = complete_all_of(s);
    } else {
        if (g_legacy[dev]) done = complete_all_of(g_legacy[dev]);
        for (s = g_streams; s; s = s->next)
            if (s->device == dev && blocking(s) && !complete_all_of(s)) done = 0;
    }
    reap_streams();
    if (!done) hang();
}

/* ---- captures ---------------------------------------------------------------- */

static capture_t *active_capture(const struct CUstream_st *s) {
    return s->capture && !s->capture->ended ? s->capture : NULL;
}

static void invalidate(capture_t *c) {
    if (c && !c->ended && !c->invalidated) {
        c->invalidated = 1;
        g_invalidated++;
    }
}

/* Use of the legacy stream s while a blocking stream of its device
   captures: cudaErrorStreamCaptureImplicit (those captures invalidated if
   inv). cudaSuccess for any other stream. */
static cudaError_t legacy_check(const struct CUstream_st *s, int inv) {
    struct CUstream_st *b;
    cudaError_t e = cudaSuccess;
    if (!s || s->kind != SK_LEGACY) return cudaSuccess;
    for (b = g_streams; b; b = b->next)
        if (b->device == s->device && blocking(b) && active_capture(b)) {
            e = cudaErrorStreamCaptureImplicit;
            if (inv) invalidate(b->capture);
        }
    return e;
}

/* A potentially unsafe call (cudaMalloc, synchronization...) under the
   calling thread's interaction mode: cudaErrorStreamCaptureUnsupported with
   the prohibiting captures invalidated, or cudaSuccess. */
static cudaError_t unsafe_check(void) {
    capture_t *c;
    cudaError_t e = cudaSuccess;
    if (t_capmode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
    for (c = g_captures; c; c = c->next) {
        int own = c->owner == t_tid;
        if (c->ended) continue;
        if ((own && c->mode != cudaStreamCaptureModeRelaxed) ||
            (t_capmode == cudaStreamCaptureModeGlobal && c->mode == cudaStreamCaptureModeGlobal)) {
            invalidate(c);
            e = cudaErrorStreamCaptureUnsupported;
        }
    }
    return e;
}

/* Implicit legacy-stream use by a synchronous call on device dev: the
   legacy rule (plain) or the per-thread stream capturing (_ptds). */
static cudaError_t sync_call_check(int dev) {
    if (t_ptds) {
        struct CUstream_st *p = per_thread_stream(dev);
        capture_t *c = p ? active_capture(p) : NULL;
        if (c) {
            invalidate(c);
            return cudaErrorStreamCaptureUnsupported;
        }
        t_kind = SK_PT;
        return cudaSuccess;
    }
    t_kind = SK_LEGACY;
    return legacy_check(legacy_stream(dev), 1);
}

/* Stream-ordered work on s: *cap gets the capture to add a node to (NULL:
   run it). Errors: the legacy rule, an invalidated capture. */
static cudaError_t stream_work(struct CUstream_st *s, capture_t **cap) {
    cudaError_t e = legacy_check(s, 1);
    *cap = NULL;
    if (e != cudaSuccess) return e;
    *cap = active_capture(s);
    if (*cap && (*cap)->invalidated) return cudaErrorStreamCaptureInvalidated;
    return cudaSuccess;
}

/* A node from s joins its capture's graph. */
static cudaError_t add_node(capture_t *c, struct CUstream_st *s, const node_t *nd) {
    struct CUgraph_st *g = c->graph;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        node_t *n = (node_t *)realloc(g->nodes, cap * sizeof *n);
        if (!n) return cudaErrorMemoryAllocation;
        g->nodes = n;
        g->cap = cap;
    }
    g->nodes[g->n++] = *nd;
    if (s != c->origin) {
        s->unjoined = 1;
        s->cap_ver++;
    }
    return cudaSuccess;
}

static node_t copy_node(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height) {
    node_t n;
    memset(&n, 0, sizeof n);
    n.type = N_COPY;
    n.dst = (char *)dst;
    n.src = (const char *)src;
    n.dpitch = dpitch;
    n.spitch = spitch;
    n.width = width;
    n.height = height;
    n.dst_tab = dst && find(dst) != NULL;
    n.src_tab = src && find(src) != NULL;
    return n;
}

static node_t memset_node(void *dst, int value, size_t count) {
    node_t n = copy_node(dst, count, NULL, 0, count, 1);
    n.type = N_MEMSET;
    n.value = value;
    n.src_tab = 0;
    return n;
}

static void free_graph_nodes(struct CUgraph_st *g) {
    free(g->nodes);
    g->nodes = NULL;
    g->n = g->cap = 0;
}

/* Unlinks and frees graph g. */
static void drop_graph(struct CUgraph_st *g) {
    struct CUgraph_st **pp = &g_graphs;
    while (*pp && *pp != g) pp = &(*pp)->next;
    if (*pp) *pp = g->next;
    free_graph_nodes(g);
    free(g);
}

/* Ends capture c: streams leave it; its graph is freed unless kept. */
static void end_capture(capture_t *c, int keep_graph) {
    struct CUstream_st *s;
    c->ended = 1;
    for (s = g_streams; s; s = s->next)
        if (s->capture == c) {
            s->capture = NULL;
            s->unjoined = 0;
        }
    if (c->graph) {
        if (keep_graph) c->graph->capturing = 0;
        else drop_graph(c->graph);
    }
    c->graph = NULL;
}

/* ---- copies ------------------------------------------------------------------ */

/* Virtual memory management (its section, at the end): a CUDADBL_MAPPED
   entry's flags (access granted: read and write; a host-located handle). */
#define DBL_VMM_RW 3u
#define DBL_VMM_HOST 4u
static cudaError_t vmm_side(const void *p, size_t span);
static void vmm_reset(void);

/* One side of a copy or set: [p, p + span) with span > 0. If must_be_table,
   p must lie in a table allocation; any p that does must fit in it. */
static cudaError_t check_side(const void *p, size_t span, int must_be_table) {
    alloc_t *a;
    if (!p) return cudaErrorInvalidValue;
    a = find(p);
    if (!a) return must_be_table ? cudaErrorInvalidValue : cudaSuccess;
    if (a->kind == CUDADBL_MAPPED) return vmm_side(p, span); /* access granted; may span mappings back to back */
    if (span > a->size - (size_t)((const char *)p - a->base)) return cudaErrorInvalidValue;
    return cudaSuccess;
}

static cudaError_t check_kind(enum cudaMemcpyKind kind) {
    return (int)kind < (int)cudaMemcpyHostToHost || (int)kind > (int)cudaMemcpyDefault
               ? cudaErrorInvalidMemcpyDirection
               : cudaSuccess;
}

/* Validates a (2D) copy: rows of width bytes, height rows. */
static cudaError_t check_copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind) {
    cudaError_t e = check_kind(kind);
    int dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (e != cudaSuccess) return e;
    if (width == 0 || height == 0) return cudaSuccess;
    if ((e = check_side(dst, (height - 1) * dpitch + width, dst_dev)) != cudaSuccess) return e;
    return check_side(src, (height - 1) * spitch + width, src_dev);
}

static void do_copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height) {
    size_t r;
    if (width == 0) return;
    for (r = 0; r < height; r++) memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
}

/* A copy of bytes took device time: the fake clock moves on. */
static void copy_time(size_t bytes) {
    g_clock += g_copy_fixed_ms;
    if (g_copy_bytes_per_ms > 0) g_clock += (float)((double)bytes / g_copy_bytes_per_ms);
}

static cudaError_t check_pitch(size_t dpitch, size_t spitch, size_t width, size_t height) {
    return height && (dpitch < width || spitch < width) ? cudaErrorInvalidPitchValue : cudaSuccess;
}

/* A peer side: device memory must lie on dev. */
static cudaError_t check_peer_side(const void *p, int dev, size_t count) {
    alloc_t *a;
    cudaError_t e = check_side(p, count, 1);
    if (e != cudaSuccess) return e;
    a = find(p);
    if ((a->kind == CUDADBL_DEVICE || (a->kind == CUDADBL_MAPPED && !(a->flags & DBL_VMM_HOST))) /* VMM: its handle's */
        && a->device != dev)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* Stream-ordered reuse: a block of this size freed by cudaFreeAsync on s
   and not yet reached comes back at once (work after the free on s may use
   it). Its free op no longer frees it. 1 with *out set, or 0. */
static int reuse_pending(void **out, size_t size, struct CUstream_st *s) {
    size_t i, k;
    for (i = 0; i < g_nalloc; i++) {
        alloc_t *a = &g_alloc[i];
        if (!a->pending_free || a->free_stream != s || a->size != size || a->kind != CUDADBL_DEVICE) continue;
        for (k = 0; k < s->nops; k++)
            if (s->ops[k].kind == OP_FREE && s->ops[k].ptr == a->base) s->ops[k].kind = OP_WORK;
        /* handed out again: pending work of other streams (and of s after
           the free) on it is a use after free */
        count_hazards(a->base, s, a->free_seq);
        a->pending_free = 0;
        a->free_stream = NULL;
        *out = a->base;
        return 1;
    }
    return 0;
}

/* Queues a copy/memset op touching dst and src on s. */
static void queue_work(struct CUstream_st *s, const void *dst, const void *src) {
    op_t o = new_op(OP_WORK);
    touch(&o, dst);
    touch(&o, src);
    push_op(s, o, NULL, 0);
}

/* ============================================================================ */
/* The runtime functions                                                        */
/* ============================================================================ */

cudaError_t cudaMalloc(void **devPtr, size_t size) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMalloc, NEED_CONTEXT);
    c.bytes = size;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess) e = do_alloc(devPtr, size, CUDADBL_DEVICE, t_cur, 0);
    if (e == cudaSuccess) c.dst = *devPtr;
    return leave(F_cudaMalloc, &c, e);
}

cudaError_t cudaFree(void *devPtr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFree, NEED_CONTEXT);
    c.dst = devPtr;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && devPtr) {
        alloc_t *a = find_base(devPtr);
        if (!a || a->pending_free || (a->kind != CUDADBL_DEVICE && a->kind != CUDADBL_MANAGED))
            e = cudaErrorInvalidValue;
        else {
            int dev = a->device;
            char *base = a->base;
            c.bytes = a->size;
            if (!complete_device(t_cur)) hang(); /* cudaFree synchronizes the device */
            if (dev != t_cur && !complete_device(dev)) hang();
            a = find_base(base);
            count_hazards(base, NULL, 0); /* work of other devices still on it */
            release_alloc(a, 1);
        }
    }
    return leave(F_cudaFree, &c, e);
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocHost, NEED_CONTEXT);
    c.bytes = size;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess) e = do_alloc(ptr, size, CUDADBL_PINNED, t_cur, 0);
    if (e == cudaSuccess) c.dst = *ptr;
    return leave(F_cudaMallocHost, &c, e);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostAlloc, NEED_CONTEXT);
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
                                                 cudaHostAllocWriteCombined)))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = do_alloc(pHost, size, CUDADBL_PINNED, t_cur, flags);
    if (e == cudaSuccess) c.dst = *pHost;
    return leave(F_cudaHostAlloc, &c, e);
}

cudaError_t cudaFreeHost(void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFreeHost, NEED_CONTEXT);
    c.dst = ptr;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && ptr) {
        alloc_t *a = find_base(ptr);
        if (!a || a->kind != CUDADBL_PINNED || (a->flags & DBL_POOLED)) e = cudaErrorInvalidValue;
        else {
            c.bytes = a->size;
            release_alloc(a, 1);
        }
    }
    return leave(F_cudaFreeHost, &c, e);
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocManaged, NEED_CONTEXT);
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && (size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = do_alloc(devPtr, size, CUDADBL_MANAGED, t_cur, flags);
    if (e == cudaSuccess) c.dst = *devPtr;
    return leave(F_cudaMallocManaged, &c, e);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.bytes = size;
    c.stream = hStream;
    if (e == cudaSuccess && !(s = resolve(hStream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && s->capture && !s->capture->ended) e = cudaErrorNotSupported; /* no memory nodes */
    if (e == cudaSuccess) e = legacy_check(s, 1);
    if (e == cudaSuccess && !devPtr) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess && !(g_reuse && size && reuse_pending(devPtr, size, s)))
        e = do_alloc(devPtr, size, CUDADBL_DEVICE, s->device, 0);
    if (e == cudaSuccess) {
        c.dst = *devPtr;
        push_op(s, new_op(OP_WORK), NULL, 0);
        reap_streams();
    }
    return leave(F_cudaMallocAsync, &c, e);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFreeAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.dst = devPtr;
    c.stream = hStream;
    if (e == cudaSuccess && !(s = resolve(hStream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && s->capture && !s->capture->ended) e = cudaErrorNotSupported;
    if (e == cudaSuccess) e = legacy_check(s, 1);
    if (e == cudaSuccess && devPtr) {
        alloc_t *a = find_base(devPtr);
        /* a block of a host-located pool is pinned memory freed stream-ordered */
        if (!a || a->pending_free || (a->kind != CUDADBL_DEVICE && !(a->flags & DBL_POOLED))) e = cudaErrorInvalidValue;
        else if ((e = reserve_op(s)) == cudaSuccess) {
            op_t o = new_op(OP_FREE);
            c.bytes = a->size;
            a->pending_free = 1;
            a->free_stream = s;
            o.ptr = devPtr;
            a->free_seq = g_seq + 1;
            push_op(s, o, NULL, 0); /* may complete at once (marker) */
            reap_streams();
        }
    }
    return leave(F_cudaFreeAsync, &c, e);
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostRegister, NEED_CONTEXT);
    c.dst = ptr;
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && (!ptr || size == 0 ||
                             (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
                                                  cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        alloc_t *o = find_overlap(ptr, size);
        if (o) e = o->kind == CUDADBL_PINNED || o->kind == CUDADBL_REGISTERED ? cudaErrorHostMemoryAlreadyRegistered
                                                                              : cudaErrorInvalidValue;
        else if (add_alloc(ptr, size, CUDADBL_REGISTERED, t_cur, flags))
            e = cudaErrorMemoryAllocation;
    }
    return leave(F_cudaHostRegister, &c, e);
}

cudaError_t cudaHostUnregister(void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostUnregister, NEED_CONTEXT);
    c.dst = ptr;
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess) {
        alloc_t *a = ptr ? find_base(ptr) : NULL;
        if (!a || a->kind != CUDADBL_REGISTERED) e = cudaErrorHostMemoryNotRegistered;
        else {
            c.bytes = a->size;
            release_alloc(a, 1);
        }
    }
    return leave(F_cudaHostUnregister, &c, e);
}

/* A synchronous copy on the legacy (or per-thread) stream of t_cur. */
static cudaError_t sync_copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t height, enum cudaMemcpyKind kind) {
    cudaError_t e = sync_call_check(t_cur);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess) e = check_pitch(dpitch, spitch, width, height);
    if (e == cudaSuccess) e = check_copy(dst, dpitch, src, spitch, width, height, kind);
    if (e == cudaSuccess) {
        sync_before(t_cur); /* runs after the legacy stream's work */
        do_copy(dst, dpitch, src, spitch, width, height);
        copy_time(width * height);
    }
    return e;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy, NEED_CONTEXT);
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.kind = (int)kind;
    if (e == cudaSuccess) e = sync_copy(dst, count, src, count, count, 1, kind);
    return leave(F_cudaMemcpy, &c, e);
}

/* Stream-ordered copy on s: captured as a node, or done and queued. */
static cudaError_t async_copy(struct CUstream_st *s, void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind) {
    capture_t *cap = NULL;
    cudaError_t e = stream_work(s, &cap);
    if (e == cudaSuccess) e = check_pitch(dpitch, spitch, width, height);
    if (e == cudaSuccess) e = check_copy(dst, dpitch, src, spitch, width, height, kind);
    if (cap) {
        node_t n = copy_node(dst, dpitch, src, spitch, width, height);
        if (e == cudaSuccess) e = add_node(cap, s, &n);
        else if (e != cudaErrorStreamCaptureInvalidated) invalidate(cap);
        return e;
    }
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        do_copy(dst, dpitch, src, spitch, width, height);
        copy_time(width * height);
        queue_work(s, dst, src);
    }
    return e;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.kind = (int)kind;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = async_copy(s, dst, count, src, count, count, 1, kind);
    return leave(F_cudaMemcpyAsync, &c, e);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy2D, NEED_CONTEXT);
    c.dst = dst;
    c.src = src;
    c.bytes = width * height;
    c.kind = (int)kind;
    if (e == cudaSuccess) e = sync_copy(dst, dpitch, src, spitch, width, height, kind);
    return leave(F_cudaMemcpy2D, &c, e);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy2DAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = width * height;
    c.kind = (int)kind;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = async_copy(s, dst, dpitch, src, spitch, width, height, kind);
    return leave(F_cudaMemcpy2DAsync, &c, e);
}

static cudaError_t check_peer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count) {
    cudaError_t e;
    if (!valid_device(dstDevice) || !valid_device(srcDevice)) return cudaErrorInvalidDevice;
    if (count == 0) return cudaSuccess;
    if ((e = check_peer_side(dst, dstDevice, count)) != cudaSuccess) return e;
    return check_peer_side(src, srcDevice, count);
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyPeer, NEED_CONTEXT);
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.flags = (unsigned)dstDevice << 16 | (unsigned)(srcDevice & 0xffff);
    if (e == cudaSuccess) e = sync_call_check(t_cur);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess) e = check_peer(dst, dstDevice, src, srcDevice, count);
    if (e == cudaSuccess) {
        sync_before(t_cur);
        do_copy(dst, count, src, count, count, 1);
        copy_time(count);
    }
    return leave(F_cudaMemcpyPeer, &c, e);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyPeerAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.stream = stream;
    c.flags = (unsigned)dstDevice << 16 | (unsigned)(srcDevice & 0xffff);
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) {
        capture_t *cap = NULL;
        e = stream_work(s, &cap);
        if (e == cudaSuccess) e = check_peer(dst, dstDevice, src, srcDevice, count);
        if (cap) {
            node_t n = copy_node(dst, count, src, count, count, 1);
            if (e == cudaSuccess) e = add_node(cap, s, &n);
            else if (e != cudaErrorStreamCaptureInvalidated) invalidate(cap);
        } else {
            if (e == cudaSuccess) e = reserve_op(s);
            if (e == cudaSuccess) {
                do_copy(dst, count, src, count, count, 1);
                copy_time(count);
                queue_work(s, dst, src);
            }
        }
    }
    return leave(F_cudaMemcpyPeerAsync, &c, e);
}

/* ---- 3D, symbol, array and batch copies ------------------------------------ */

/* A 3D copy between pointers: depth slices of height rows of width bytes;
   a side's rows are pitch apart, its slices pitch * ysize. */
typedef struct {
    char *dst;
    const char *src;
    size_t dpitch, dslice, spitch, sslice, width, height, depth;
} c3d_t;

/* One side: [p, p + span) checked as a copy side (check_side). */
static cudaError_t check_3d_side(const void *p, size_t pitch, size_t slice, const c3d_t *c, int must_be_table) {
    return check_side(p, (c->depth - 1) * slice + (c->height - 1) * pitch + c->width, must_be_table);
}

/* cudaMemcpy3DParms / cudaMemcpy3DPeerParms between pointers. The double
   has no CUDA arrays, so any array handle is one it never made:
   cudaErrorInvalidValue; as is a side given neither way, a zero extent
   (strict reading: the batch calls document it, cudaMemcpy3D is silent),
   or a pitch holding fewer slices' rows than the extent (ysize < height
   with depth > 1). A pitch narrower than the width:
   cudaErrorInvalidPitchValue. */
static cudaError_t c3d_from(c3d_t *c, cudaArray_const_t srcArray, const struct cudaPos *sp,
                            const struct cudaPitchedPtr *s, cudaArray_const_t dstArray, const struct cudaPos *dp,
                            const struct cudaPitchedPtr *d, const struct cudaExtent *e) {
    if (srcArray || dstArray || !s->ptr || !d->ptr) return cudaErrorInvalidValue;
    if (!e->width || !e->height || !e->depth) return cudaErrorInvalidValue;
    if (s->pitch < e->width || d->pitch < e->width) return cudaErrorInvalidPitchValue;
    if (e->depth > 1 && (s->ysize < e->height || d->ysize < e->height)) return cudaErrorInvalidValue;
    c->spitch = s->pitch;
    c->sslice = s->pitch * s->ysize;
    c->dpitch = d->pitch;
    c->dslice = d->pitch * d->ysize;
    c->src = (const char *)s->ptr + sp->z * c->sslice + sp->y * c->spitch + sp->x;
    c->dst = (char *)d->ptr + dp->z * c->dslice + dp->y * c->dpitch + dp->x;
    c->width = e->width;
    c->height = e->height;
    c->depth = e->depth;
    return cudaSuccess;
}

static cudaError_t check_3d(const c3d_t *c, enum cudaMemcpyKind kind) {
    cudaError_t e = check_kind(kind);
    int dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    int src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (e == cudaSuccess) e = check_3d_side(c->dst, c->dpitch, c->dslice, c, dst_dev);
    if (e == cudaSuccess) e = check_3d_side(c->src, c->spitch, c->sslice, c, src_dev);
    return e;
}

static void do_3d(const c3d_t *c) {
    size_t z;
    for (z = 0; z < c->depth; z++)
        do_copy(c->dst + z * c->dslice, c->dpitch, c->src + z * c->sslice, c->spitch, c->width, c->height);
    copy_time(c->width * c->height * c->depth);
}

/* A 3D copy whose checks gave e, synchronous (s NULL: on t_cur's
   implicit stream) or on stream s: captured as one 2D node per slice (a
   copy that fails its checks invalidates the capture, as async_copy), or
   done and queued. */
static cudaError_t run_3d(struct CUstream_st *s, const c3d_t *c, cudaError_t e) {
    capture_t *cap = NULL;
    cudaError_t w;
    size_t z;
    if (!s) {
        if (e == cudaSuccess) e = sync_call_check(t_cur);
        if (e == cudaSuccess) e = unsafe_check();
        if (e == cudaSuccess) {
            sync_before(t_cur);
            do_3d(c);
        }
        return e;
    }
    if ((w = stream_work(s, &cap)) != cudaSuccess) e = w;
    if (cap) {
        for (z = 0; e == cudaSuccess && z < c->depth; z++) {
            node_t n = copy_node(c->dst + z * c->dslice, c->dpitch, c->src + z * c->sslice, c->spitch, c->width,
                                 c->height);
            e = add_node(cap, s, &n);
        }
        if (e != cudaSuccess && e != cudaErrorStreamCaptureInvalidated) invalidate(cap);
        return e;
    }
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        do_3d(c);
        queue_work(s, c->dst, c->src);
    }
    return e;
}

static cudaError_t memcpy3d(const struct cudaMemcpy3DParms *p, struct CUstream_st *s, cudadbl_call_t *c) {
    c3d_t k;
    cudaError_t e;
    memset(&k, 0, sizeof k);
    if (!p) return cudaErrorInvalidValue;
    c->kind = (int)p->kind;
    e = c3d_from(&k, p->srcArray, &p->srcPos, &p->srcPtr, p->dstArray, &p->dstPos, &p->dstPtr, &p->extent);
    if (e == cudaSuccess) e = check_3d(&k, p->kind);
    c->dst = k.dst;
    c->src = k.src;
    c->bytes = k.width * k.height * k.depth;
    if (e != cudaSuccess && !s) return e;
    return run_3d(s, &k, e);
}

cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy3D, NEED_CONTEXT);
    if (e == cudaSuccess) e = memcpy3d(p, NULL, &c);
    return leave(F_cudaMemcpy3D, &c, e);
}

cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy3DAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = memcpy3d(p, s, &c);
    return leave(F_cudaMemcpy3DAsync, &c, e);
}

/* Peer 3D: valid devices (cudaErrorInvalidDevice); both sides device
   memory of those devices (as cudaMemcpyPeer). */
static cudaError_t memcpy3d_peer(const struct cudaMemcpy3DPeerParms *p, struct CUstream_st *s, cudadbl_call_t *c) {
    c3d_t k;
    cudaError_t e;
    alloc_t *a;
    memset(&k, 0, sizeof k);
    if (!p) return cudaErrorInvalidValue;
    c->flags = (unsigned)p->dstDevice << 16 | (unsigned)(p->srcDevice & 0xffff);
    if (!valid_device(p->dstDevice) || !valid_device(p->srcDevice)) e = cudaErrorInvalidDevice;
    else e = c3d_from(&k, p->srcArray, &p->srcPos, &p->srcPtr, p->dstArray, &p->dstPos, &p->dstPtr, &p->extent);
    if (e == cudaSuccess) e = check_3d(&k, cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess && (a = find(k.dst)) != NULL && a->kind == CUDADBL_DEVICE && a->device != p->dstDevice)
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess && (a = find(k.src)) != NULL && a->kind == CUDADBL_DEVICE && a->device != p->srcDevice)
        e = cudaErrorInvalidValue;
    c->dst = k.dst;
    c->src = k.src;
    c->bytes = k.width * k.height * k.depth;
    if (e != cudaSuccess && !s) return e;
    return run_3d(s, &k, e);
}

cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms *p) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy3DPeer, NEED_CONTEXT);
    if (e == cudaSuccess) e = memcpy3d_peer(p, NULL, &c);
    return leave(F_cudaMemcpy3DPeer, &c, e);
}

cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy3DPeerAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = memcpy3d_peer(p, s, &c);
    return leave(F_cudaMemcpy3DPeerAsync, &c, e);
}

/* Symbols: a test has no __device__ variables, so it declares some
   (cudadbl_register_symbol): host memory the double treats as a device
   variable of that size. A symbol never declared: cudaErrorInvalidSymbol.
   To a symbol the kind must be cudaMemcpyHostToDevice,
   cudaMemcpyDeviceToDevice or cudaMemcpyDefault, from one
   cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice or cudaMemcpyDefault,
   else cudaErrorInvalidMemcpyDirection; offset + count beyond the
   variable: cudaErrorInvalidValue. */
#define DBL_SYMBOLS 64
static struct {
    const void *sym;
    size_t size;
} g_sym[DBL_SYMBOLS];
static size_t g_nsym;

int cudadbl_register_symbol(const void *symbol, size_t size) {
    size_t i;
    int r = -1;
    lock();
    for (i = 0; i < g_nsym; i++)
        if (g_sym[i].sym == symbol) break;
    if (symbol && size && i < DBL_SYMBOLS) {
        g_sym[i].sym = symbol;
        g_sym[i].size = size;
        if (i == g_nsym) g_nsym++;
        r = 0;
    }
    unlock();
    return r;
}

/* The variable's bytes [offset, offset + count), or an error. */
static cudaError_t symbol_span(const void *symbol, size_t count, size_t offset, char **out) {
    size_t i;
    for (i = 0; i < g_nsym; i++)
        if (symbol && g_sym[i].sym == symbol) {
            if (offset > g_sym[i].size || count > g_sym[i].size - offset) return cudaErrorInvalidValue;
            *out = (char *)(uintptr_t)symbol + offset;
            return cudaSuccess;
        }
    return cudaErrorInvalidSymbol;
}

/* to: 1 to the symbol, 0 from it. other: the other side. */
static cudaError_t symbol_copy(int to, const void *symbol, void *other, size_t count, size_t offset,
                               enum cudaMemcpyKind kind, struct CUstream_st *s, cudadbl_call_t *c) {
    char *var = NULL;
    c3d_t k;
    cudaError_t e = check_kind(kind);
    int other_dev = kind == cudaMemcpyDeviceToDevice;
    c->kind = (int)kind;
    c->bytes = count;
    if (e == cudaSuccess && (kind == cudaMemcpyHostToHost || kind == (to ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice)))
        e = cudaErrorInvalidMemcpyDirection;
    if (e == cudaSuccess) e = symbol_span(symbol, count, offset, &var);
    if (e == cudaSuccess && count) e = check_side(other, count, other_dev);
    memset(&k, 0, sizeof k);
    k.dst = to ? var : (char *)other;
    k.src = to ? (const char *)other : var;
    k.dpitch = k.spitch = k.width = count;
    k.height = k.depth = 1;
    c->dst = k.dst;
    c->src = k.src;
    if (e != cudaSuccess && !s) return e;
    return run_3d(s, &k, e);
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyToSymbol, NEED_CONTEXT);
    if (e == cudaSuccess) e = symbol_copy(1, symbol, (void *)(uintptr_t)src, count, offset, kind, NULL, &c);
    return leave(F_cudaMemcpyToSymbol, &c, e);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyToSymbolAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = symbol_copy(1, symbol, (void *)(uintptr_t)src, count, offset, kind, s, &c);
    return leave(F_cudaMemcpyToSymbolAsync, &c, e);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                 enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyFromSymbol, NEED_CONTEXT);
    if (e == cudaSuccess) e = symbol_copy(0, symbol, dst, count, offset, kind, NULL, &c);
    return leave(F_cudaMemcpyFromSymbol, &c, e);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                      enum cudaMemcpyKind kind, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyFromSymbolAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = symbol_copy(0, symbol, dst, count, offset, kind, s, &c);
    return leave(F_cudaMemcpyFromSymbolAsync, &c, e);
}

/* CUDA arrays: the double makes none (no cudaMallocArray), so every array
   handle is invalid: after the kind's check, cudaErrorInvalidValue (the
   error these calls document for bad arguments). */
static cudaError_t no_array(int f, enum cudaMemcpyKind kind, cudaStream_t stream, int async) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(f, NEED_CONTEXT);
    c.kind = (int)kind;
    c.stream = stream;
    if (e == cudaSuccess && async && !resolve(stream, 0)) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = check_kind(kind);
    if (e == cudaSuccess) e = cudaErrorInvalidValue;
    return leave(f, &c, e);
}

cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind) {
    (void)dst, (void)wOffset, (void)hOffset, (void)src, (void)spitch, (void)width, (void)height;
    return no_array(F_cudaMemcpy2DToArray, kind, NULL, 0);
}
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                     size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                     cudaStream_t stream) {
    (void)dst, (void)wOffset, (void)hOffset, (void)src, (void)spitch, (void)width, (void)height;
    return no_array(F_cudaMemcpy2DToArrayAsync, kind, stream, 1);
}
cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, enum cudaMemcpyKind kind) {
    (void)dst, (void)dpitch, (void)src, (void)wOffset, (void)hOffset, (void)width, (void)height;
    return no_array(F_cudaMemcpy2DFromArray, kind, NULL, 0);
}
cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                       size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    (void)dst, (void)dpitch, (void)src, (void)wOffset, (void)hOffset, (void)width, (void)height;
    return no_array(F_cudaMemcpy2DFromArrayAsync, kind, stream, 1);
}
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height,
                                     enum cudaMemcpyKind kind) {
    (void)dst, (void)wOffsetDst, (void)hOffsetDst, (void)src, (void)wOffsetSrc, (void)hOffsetSrc, (void)width,
        (void)height;
    return no_array(F_cudaMemcpy2DArrayToArray, kind, NULL, 0);
}

/* Batches (CUDA 13): the stream must not be the legacy stream (NULL
   outside a _ptsz entry point, or cudaStreamLegacy); at least one copy;
   cudaErrorInvalidValue for a NULL array, a bad attribute index list
   (first 0, increasing, below count, numAttrs from 1 to count), a source
   access order other than Stream/DuringApiCall/Any, a flag other than
   cudaMemcpyFlagPreferOverlapWithCompute, (3D) nonzero flags, a zero
   extent, an array operand (the double has none), a row length or layer
   height below the extent (0: packed). Each copy is checked like a
   cudaMemcpyDefault one; nothing is copied unless all pass. Captured:
   one node per copy (per slice). */
static int valid_order(enum cudaMemcpySrcAccessOrder o) {
    return o == cudaMemcpySrcAccessOrderStream || o == cudaMemcpySrcAccessOrderDuringApiCall ||
           o == cudaMemcpySrcAccessOrderAny;
}

static cudaError_t batch_stream(cudaStream_t stream, struct CUstream_st **s) {
    if (!(*s = resolve(stream, 0))) return cudaErrorInvalidResourceHandle;
    return (*s)->kind == SK_LEGACY ? cudaErrorInvalidValue : cudaSuccess;
}

/* Runs the checked copies on s, all or none (e: the checks' verdict; in
   a capture a failed check invalidates it, as run_3d). */
static cudaError_t run_batch(struct CUstream_st *s, const c3d_t *k, size_t n, cudaError_t e) {
    capture_t *cap = NULL;
    cudaError_t w = s ? stream_work(s, &cap) : cudaSuccess;
    size_t i, z;
    if (w != cudaSuccess) e = w;
    if (cap) {
        for (i = 0; i < n && e == cudaSuccess; i++)
            for (z = 0; z < k[i].depth && e == cudaSuccess; z++) {
                node_t nd = copy_node(k[i].dst + z * k[i].dslice, k[i].dpitch, k[i].src + z * k[i].sslice,
                                      k[i].spitch, k[i].width, k[i].height);
                e = add_node(cap, s, &nd);
            }
        if (e != cudaSuccess && e != cudaErrorStreamCaptureInvalidated) invalidate(cap);
        return e;
    }
    for (i = 0; i < n && e == cudaSuccess; i++) e = reserve_op(s);
    for (i = 0; i < n && e == cudaSuccess; i++) {
        do_3d(&k[i]);
        queue_work(s, k[i].dst, k[i].src);
    }
    return e;
}

cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                 cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyBatchAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c3d_t *k = NULL;
    size_t i;
    c.stream = stream;
    c.kind = (int)cudaMemcpyDefault;
    if (e == cudaSuccess) e = batch_stream(stream, &s);
    if (e == cudaSuccess && (!dsts || !srcs || !sizes || !attrs || !attrsIdxs || !count || !numAttrs ||
                             numAttrs > count || attrsIdxs[0] != 0))
        e = cudaErrorInvalidValue;
    for (i = 0; e == cudaSuccess && i < numAttrs; i++)
        if ((i && attrsIdxs[i] <= attrsIdxs[i - 1]) || attrsIdxs[i] >= count || !valid_order(attrs[i].srcAccessOrder) ||
            (attrs[i].flags & ~(unsigned)cudaMemcpyFlagPreferOverlapWithCompute))
            e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(k = (c3d_t *)calloc(count, sizeof *k))) e = cudaErrorMemoryAllocation;
    for (i = 0; e == cudaSuccess && i < count; i++) {
        k[i].dst = (char *)dsts[i];
        k[i].src = (const char *)srcs[i];
        k[i].dpitch = k[i].spitch = k[i].width = sizes[i];
        k[i].height = k[i].depth = 1;
        c.bytes += sizes[i];
        if (!dsts[i] || !srcs[i]) e = cudaErrorInvalidValue;
        else if (sizes[i]) e = check_3d(&k[i], cudaMemcpyDefault);
    }
    if (s) e = run_batch(s, k, k ? count : 0, e);
    free(k);
    return leave(F_cudaMemcpyBatchAsync, &c, e);
}

/* A batch operand: a pointer, rows of rowLength bytes (0: width), layers
   of layerHeight rows (0: height). */
static cudaError_t batch_operand(const struct cudaMemcpy3DOperand *o, const struct cudaExtent *ex, char **p,
                                 size_t *pitch, size_t *slice) {
    size_t row, layer;
    if (o->type != cudaMemcpyOperandTypePointer || !o->op.ptr.ptr) return cudaErrorInvalidValue;
    row = o->op.ptr.rowLength ? o->op.ptr.rowLength : ex->width;
    layer = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : ex->height;
    if (row < ex->width || layer < ex->height) return cudaErrorInvalidValue;
    *p = (char *)o->op.ptr.ptr;
    *pitch = row;
    *slice = row * layer;
    return cudaSuccess;
}

cudaError_t cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags,
                                   cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy3DBatchAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c3d_t *k = NULL;
    size_t i;
    c.stream = stream;
    c.kind = (int)cudaMemcpyDefault;
    c.flags = (unsigned)flags;
    if (e == cudaSuccess) e = batch_stream(stream, &s);
    if (e == cudaSuccess && (!numOps || !opList || flags)) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(k = (c3d_t *)calloc(numOps, sizeof *k))) e = cudaErrorMemoryAllocation;
    for (i = 0; e == cudaSuccess && i < numOps; i++) {
        const struct cudaMemcpy3DBatchOp *o = &opList[i];
        char *src = NULL;
        if (!o->extent.width || !o->extent.height || !o->extent.depth || !valid_order(o->srcAccessOrder) ||
            (o->flags & ~(unsigned)cudaMemcpyFlagPreferOverlapWithCompute)) {
            e = cudaErrorInvalidValue;
            break;
        }
        e = batch_operand(&o->dst, &o->extent, &k[i].dst, &k[i].dpitch, &k[i].dslice);
        if (e == cudaSuccess) e = batch_operand(&o->src, &o->extent, &src, &k[i].spitch, &k[i].sslice);
        k[i].src = src;
        k[i].width = o->extent.width;
        k[i].height = o->extent.height;
        k[i].depth = o->extent.depth;
        c.bytes += k[i].width * k[i].height * k[i].depth;
        if (e == cudaSuccess) e = check_3d(&k[i], cudaMemcpyDefault);
    }
    if (s) e = run_batch(s, k, k ? numOps : 0, e);
    free(k);
    return leave(F_cudaMemcpy3DBatchAsync, &c, e);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemset, NEED_CONTEXT);
    c.dst = devPtr;
    c.bytes = count;
    c.flags = (unsigned)value;
    if (e == cudaSuccess) e = sync_call_check(t_cur);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && count) e = check_side(devPtr, count, 1);
    if (e == cudaSuccess) {
        sync_before(t_cur);
        if (count) memset(devPtr, value, count);
    }
    return leave(F_cudaMemset, &c, e);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemsetAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    capture_t *cap = NULL;
    c.dst = devPtr;
    c.bytes = count;
    c.flags = (unsigned)value;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = stream_work(s, &cap);
    if (e == cudaSuccess && count) e = check_side(devPtr, count, 1);
    if (cap) {
        node_t n = memset_node(devPtr, value, count);
        if (e == cudaSuccess) e = add_node(cap, s, &n);
        else if (e != cudaErrorStreamCaptureInvalidated) invalidate(cap);
    } else {
        if (e == cudaSuccess) e = reserve_op(s);
        if (e == cudaSuccess) {
            if (count) memset(devPtr, value, count);
            queue_work(s, devPtr, NULL);
        }
    }
    return leave(F_cudaMemsetAsync, &c, e);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaPointerGetAttributes, NEED_CONTEXT);
    c.src = ptr;
    if (e == cudaSuccess && !attributes) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        alloc_t *a = find(ptr);
        memset(attributes, 0, sizeof *attributes);
        if (!a) {
            attributes->type = cudaMemoryTypeUnregistered;
            attributes->device = cudaInvalidDeviceId;
            attributes->devicePointer = NULL;
            attributes->hostPointer = (void *)(uintptr_t)ptr;
        } else {
            attributes->device = a->device;
            attributes->devicePointer = (void *)(uintptr_t)ptr;
            attributes->hostPointer = (void *)(uintptr_t)ptr;
            switch (a->kind) {
            case CUDADBL_DEVICE:
                attributes->type = cudaMemoryTypeDevice;
                attributes->hostPointer = NULL;
                break;
            case CUDADBL_MANAGED: attributes->type = cudaMemoryTypeManaged; break;
            case CUDADBL_MAPPED: /* a cuMemMap range: its handle's memory */
                attributes->type = a->flags & DBL_VMM_HOST ? cudaMemoryTypeHost : cudaMemoryTypeDevice;
                if (!(a->flags & DBL_VMM_HOST)) attributes->hostPointer = NULL;
                break;
            default: attributes->type = cudaMemoryTypeHost; break;
            }
            c.bytes = a->size;
        }
        c.flags = (unsigned)attributes->type;
    }
    return leave(F_cudaPointerGetAttributes, &c, e);
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemGetInfo, NEED_CONTEXT);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && (!free || !total)) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        *free = free_bytes(t_cur);
        *total = g_total[t_cur];
        c.bytes = *free;
    }
    return leave(F_cudaMemGetInfo, &c, e);
}

cudaError_t cudaGetDevice(int *device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetDevice, NEED_DEVICE);
    if (e == cudaSuccess && !device) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) *device = rt_device();
    return leave(F_cudaGetDevice, &c, e);
}

cudaError_t cudaSetDevice(int device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaSetDevice, NEED_DEVICE);
    c.flags = (unsigned)device;
    if (e == cudaSuccess && !valid_device(device)) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess && g_sticky != cudaSuccess) e = g_sticky;
    if (e == cudaSuccess) {
        t_dev = device;
        activate(device); /* since CUDA 12 it initializes the primary context */
        g_ctx[device].rt_held = 1;
        t_bound.ctx = &g_ctx[device];
        t_bound.inc = g_ctx[device].inc;
    }
    return leave(F_cudaSetDevice, &c, e);
}

cudaError_t cudaGetDeviceCount(int *count) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetDeviceCount, NEED_INIT);
    if (e == cudaSuccess && !count) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        *count = g_ndev;
        if (g_ndev == 0) e = cudaErrorNoDevice;
    }
    return leave(F_cudaGetDeviceCount, &c, e);
}

/* Texts of the real libcudart 13.0 (cudaGetErrorName/cudaGetErrorString
   over every enumerator of enum cudaError in driver_types.h). */
#define E(code, text) {code, #code, text},
static const struct {
    cudaError_t code;
    const char *name, *text;
} err_table[] = {
    E(cudaSuccess, "no error")
    E(cudaErrorInvalidValue, "invalid argument")
    E(cudaErrorMemoryAllocation, "out of memory")
    E(cudaErrorInitializationError, "initialization error")
    E(cudaErrorCudartUnloading, "driver shutting down")
    E(cudaErrorProfilerDisabled, "profiler disabled while using external profiling tool")
    E(cudaErrorProfilerNotInitialized, "profiler not initialized: call cudaProfilerInitialize()")
    E(cudaErrorProfilerAlreadyStarted, "profiler already started")
    E(cudaErrorProfilerAlreadyStopped, "profiler already stopped")
    E(cudaErrorInvalidConfiguration, "invalid configuration argument")
    E(cudaErrorInvalidPitchValue, "invalid pitch argument")
    E(cudaErrorInvalidSymbol, "invalid device symbol")
    E(cudaErrorInvalidHostPointer, "invalid host pointer")
    E(cudaErrorInvalidDevicePointer, "invalid device pointer")
    E(cudaErrorInvalidTexture, "invalid texture reference")
    E(cudaErrorInvalidTextureBinding, "texture is not bound to a pointer")
    E(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor")
    E(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")
    E(cudaErrorAddressOfConstant, "invalid address of constant")
    E(cudaErrorTextureFetchFailed, "fetch from texture failed")
    E(cudaErrorTextureNotBound, "cannot fetch from a texture that is not bound")
    E(cudaErrorSynchronizationError, "incorrect use of __syncthreads()")
    E(cudaErrorInvalidFilterSetting, "linear filtering not supported for non-float type")
    E(cudaErrorInvalidNormSetting, "read as normalized float not supported for data type")
    E(cudaErrorMixedDeviceExecution, "device emulation mode and device execution mode cannot be mixed")
    E(cudaErrorNotYetImplemented, "feature not yet implemented")
    E(cudaErrorMemoryValueTooLarge, "memory size or pointer value too large to fit in 32 bit")
    E(cudaErrorStubLibrary, "CUDA driver is a stub library")
    E(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version")
    E(cudaErrorCallRequiresNewerDriver, "API call is not supported in the installed CUDA driver")
    E(cudaErrorInvalidSurface, "invalid surface reference")
    E(cudaErrorDuplicateVariableName, "duplicate global variable looked up by string name")
    E(cudaErrorDuplicateTextureName, "duplicate texture looked up by string name")
    E(cudaErrorDuplicateSurfaceName, "duplicate surface looked up by string name")
    E(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable")
    E(cudaErrorIncompatibleDriverContext, "incompatible driver context")
    E(cudaErrorMissingConfiguration, "__global__ function call is not configured")
    E(cudaErrorPriorLaunchFailure, "unspecified launch failure in prior launch")
    E(cudaErrorLaunchMaxDepthExceeded, "launch would exceed maximum depth of nested launches")
    E(cudaErrorLaunchFileScopedTex, "launch failed because kernel uses unsupported, file-scoped textures (texture objects are supported)")
    E(cudaErrorLaunchFileScopedSurf, "launch failed because kernel uses unsupported, file-scoped surfaces (surface objects are supported)")
    E(cudaErrorSyncDepthExceeded, "cudaDeviceSynchronize failed because caller's grid depth exceeds cudaLimitDevRuntimeSyncDepth")
    E(cudaErrorLaunchPendingCountExceeded, "launch failed because launch would exceed cudaLimitDevRuntimePendingLaunchCount")
    E(cudaErrorInvalidDeviceFunction, "invalid device function")
    E(cudaErrorNoDevice, "no CUDA-capable device is detected")
    E(cudaErrorInvalidDevice, "invalid device ordinal")
    E(cudaErrorDeviceNotLicensed, "device doesn't have valid Grid license")
    E(cudaErrorSoftwareValidityNotEstablished, "integrity checks failed")
    E(cudaErrorStartupFailure, "startup failure in cuda runtime")
    E(cudaErrorInvalidKernelImage, "device kernel image is invalid")
    E(cudaErrorDeviceUninitialized, "invalid device context")
    E(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed")
    E(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed")
    E(cudaErrorArrayIsMapped, "array is mapped")
    E(cudaErrorAlreadyMapped, "resource already mapped")
    E(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device")
    E(cudaErrorAlreadyAcquired, "resource already acquired")
    E(cudaErrorNotMapped, "resource not mapped")
    E(cudaErrorNotMappedAsArray, "resource not mapped as array")
    E(cudaErrorNotMappedAsPointer, "resource not mapped as pointer")
    E(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered")
    E(cudaErrorUnsupportedLimit, "limit is not supported on this architecture")
    E(cudaErrorDeviceAlreadyInUse, "exclusive-thread device already in use by a different thread")
    E(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices")
    E(cudaErrorInvalidPtx, "a PTX JIT compilation failed")
    E(cudaErrorInvalidGraphicsContext, "invalid OpenGL or DirectX context")
    E(cudaErrorNvlinkUncorrectable, "uncorrectable NVLink error detected during the execution")
    E(cudaErrorJitCompilerNotFound, "PTX JIT compiler library not found")
    E(cudaErrorUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported toolchain.")
    E(cudaErrorJitCompilationDisabled, "PTX JIT compilation was disabled")
    E(cudaErrorUnsupportedExecAffinity, "the provided execution affinity is not supported")
    E(cudaErrorUnsupportedDevSideSync, "the provided PTX contains unsupported call to cudaDeviceSynchronize")
    E(cudaErrorContained, "Invalid access of peer GPU memory over nvlink or a hardware error")
    E(cudaErrorInvalidSource, "device kernel image is invalid")
    E(cudaErrorFileNotFound, "file not found")
    E(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found")
    E(cudaErrorSharedObjectInitFailed, "shared object initialization failed")
    E(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS")
    E(cudaErrorInvalidResourceHandle, "invalid resource handle")
    E(cudaErrorIllegalState, "the operation cannot be performed in the present state")
    E(cudaErrorLossyQuery, "attempted introspection would be semantically lossy")
    E(cudaErrorSymbolNotFound, "named symbol not found")
    E(cudaErrorNotReady, "device not ready")
    E(cudaErrorIllegalAddress, "an illegal memory access was encountered")
    E(cudaErrorLaunchOutOfResources, "too many resources requested for launch")
    E(cudaErrorLaunchTimeout, "the launch timed out and was terminated")
    E(cudaErrorLaunchIncompatibleTexturing, "launch uses incompatible texturing mode")
    E(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled")
    E(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled")
    E(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process")
    E(cudaErrorContextIsDestroyed, "context is destroyed")
    E(cudaErrorAssert, "device-side assert triggered")
    E(cudaErrorTooManyPeers, "peer mapping resources exhausted")
    E(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped")
    E(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region")
    E(cudaErrorHardwareStackError, "hardware stack error")
    E(cudaErrorIllegalInstruction, "an illegal instruction was encountered")
    E(cudaErrorMisalignedAddress, "misaligned address")
    E(cudaErrorInvalidAddressSpace, "operation not supported on global/shared address space")
    E(cudaErrorInvalidPc, "invalid program counter")
    E(cudaErrorLaunchFailure, "unspecified launch failure")
    E(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch")
    E(cudaErrorTensorMemoryLeak, "tensor memory not completely freed")
    E(cudaErrorNotPermitted, "operation not permitted")
    E(cudaErrorNotSupported, "operation not supported")
    E(cudaErrorSystemNotReady, "system not yet initialized")
    E(cudaErrorSystemDriverMismatch, "system has unsupported display driver / cuda driver combination")
    E(cudaErrorCompatNotSupportedOnDevice, "forward compatibility was attempted on non supported HW")
    E(cudaErrorMpsConnectionFailed, "MPS client failed to connect to the MPS control daemon or the MPS server")
    E(cudaErrorMpsRpcFailure, "the remote procedural call between the MPS server and the MPS client failed")
    E(cudaErrorMpsServerNotReady, "MPS server is not ready to accept new MPS client requests")
    E(cudaErrorMpsMaxClientsReached, "the hardware resources required to create MPS client have been exhausted")
    E(cudaErrorMpsMaxConnectionsReached, "the hardware resources required to support device connections have been exhausted")
    E(cudaErrorMpsClientTerminated, "the MPS client has been terminated by the server")
    E(cudaErrorCdpNotSupported, "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it")
    E(cudaErrorCdpVersionMismatch, "unsupported interaction between different versions of CUDA Dynamic Parallelism")
    E(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")
    E(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture")
    E(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences")
    E(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began")
    E(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work")
    E(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream")
    E(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream")
    E(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream")
    E(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread")
    E(cudaErrorTimeout, "wait operation timed out")
    E(cudaErrorGraphExecUpdateFailure, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update")
    E(cudaErrorExternalDevice, "an async error has occured in external entity outside of CUDA")
    E(cudaErrorInvalidClusterSize, "a kernel launch error has occurred due to cluster misconfiguration")
    E(cudaErrorFunctionNotLoaded, "the function handle is not loaded when calling an API that requires a loaded function")
    E(cudaErrorInvalidResourceType, "one or more resources passed in are not valid resource types for the operation")
    E(cudaErrorInvalidResourceConfiguration, "one or more resources are insufficient or non-applicable for the operation")
    E(cudaErrorUnknown, "unknown error")
};
#undef E

static int err_index(cudaError_t error) {
    size_t i;
    for (i = 0; i < sizeof err_table / sizeof err_table[0]; i++)
        if (err_table[i].code == error) return (int)i;
    return -1;
}

const char *cudaGetErrorString(cudaError_t error) {
    cudadbl_call_t c = blank_call();
    int i;
    (void)enter(F_cudaGetErrorString, NEED_NOTHING); /* cannot fail: cudadbl_fail refuses it */
    c.flags = (unsigned)error;
    i = err_index(error);
    leave(F_cudaGetErrorString, &c, cudaSuccess);
    return i < 0 ? "unrecognized error code" : err_table[i].text;
}

const char *cudaGetErrorName(cudaError_t error) {
    cudadbl_call_t c = blank_call();
    int i;
    (void)enter(F_cudaGetErrorName, NEED_NOTHING);
    c.flags = (unsigned)error;
    i = err_index(error);
    leave(F_cudaGetErrorName, &c, cudaSuccess);
    return i < 0 ? "unrecognized error code" : err_table[i].name;
}

cudaError_t cudaGetLastError(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetLastError, NEED_NOTHING);
    if (e == cudaSuccess && g_sticky != cudaSuccess) e = g_sticky; /* sticky: not cleared */
    else if (e == cudaSuccess) {
        e = t_last;
        t_last = cudaSuccess;
    }
    return leave(F_cudaGetLastError, &c, e);
}

cudaError_t cudaPeekAtLastError(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaPeekAtLastError, NEED_NOTHING);
    if (e == cudaSuccess) e = g_sticky != cudaSuccess ? g_sticky : t_last;
    return leave(F_cudaPeekAtLastError, &c, e);
}

cudaError_t cudaDeviceSynchronize(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaDeviceSynchronize, NEED_CONTEXT);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && !complete_device(t_cur)) hang();
    return leave(F_cudaDeviceSynchronize, &c, e);
}

/* Synchronize/query on a capturing stream: prohibited, the capture is
   invalidated. Then the legacy and interaction-mode rules. */
static cudaError_t stream_sync_checks(struct CUstream_st *s) {
    capture_t *cap = active_capture(s);
    if (cap) {
        invalidate(cap);
        return cudaErrorStreamCaptureUnsupported;
    }
    {
        cudaError_t e = legacy_check(s, 1);
        if (e != cudaSuccess) return e;
    }
    return unsafe_check();
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamSynchronize, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = stream_sync_checks(s);
    if (e == cudaSuccess) {
        if (!complete_all_of(s)) hang();
        reap_streams();
    }
    return leave(F_cudaStreamSynchronize, &c, e);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamQuery, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = stream_sync_checks(s);
    if (e == cudaSuccess && s->nops) e = cudaErrorNotReady;
    return leave(F_cudaStreamQuery, &c, e);
}

static cudaError_t create_stream(cudaStream_t *pStream, unsigned flags, cudadbl_call_t *c) {
    struct CUstream_st *s;
    if (!pStream) return cudaErrorInvalidValue;
    if (flags & ~(unsigned)cudaStreamNonBlocking) return cudaErrorInvalidValue;
    s = new_stream(t_cur, SK_USER, flags);
    if (!s) return cudaErrorMemoryAllocation;
    *pStream = s;
    c->stream = s;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamCreate, NEED_CONTEXT);
    if (e == cudaSuccess) e = create_stream(pStream, cudaStreamDefault, &c);
    return leave(F_cudaStreamCreate, &c, e);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamCreateWithFlags, NEED_CONTEXT);
    c.flags = flags;
    if (e == cudaSuccess) e = create_stream(pStream, flags, &c);
    return leave(F_cudaStreamCreateWithFlags, &c, e);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamDestroy, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread ||
                             !(s = resolve(stream, 0))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) {
        /* strict reading: destroying a capturing stream invalidates its
           capture; the origin's capture can never be ended, so it ends */
        capture_t *cap = active_capture(s);
        if (cap) {
            invalidate(cap);
            if (cap->origin == s) end_capture(cap, 0);
            s->capture = NULL;
            s->unjoined = 0;
        }
        s->destroyed = 1;
        reap_streams();
    }
    return leave(F_cudaStreamDestroy, &c, e);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamGetDevice, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = hStream;
    if (e == cudaSuccess && !(s = resolve(hStream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && !device) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) *device = s->device;
    return leave(F_cudaStreamGetDevice, &c, e);
}

static cudaError_t create_event(cudaEvent_t *event, unsigned flags) {
    struct CUevent_st *ev;
    if (!event) return cudaErrorInvalidValue;
    if (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
        return cudaErrorInvalidValue;
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return cudaErrorInvalidValue;
    ev = (struct CUevent_st *)calloc(1, sizeof *ev);
    if (!ev) return cudaErrorMemoryAllocation;
    ev->device = t_cur;
    ev->flags = flags;
    if (cur_ref()) { /* events belong to the context they were made in */
        ev->ctx = cur_ref()->ctx;
        ev->ctx_inc = cur_ref()->inc;
    }
    ev->next = g_events;
    g_events = ev;
    *event = ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventCreate, NEED_CONTEXT);
    if (e == cudaSuccess) e = create_event(event, cudaEventDefault);
    if (e == cudaSuccess) c.dst = *event;
    return leave(F_cudaEventCreate, &c, e);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventCreateWithFlags, NEED_CONTEXT);
    c.flags = flags;
    if (e == cudaSuccess) e = create_event(event, flags);
    if (e == cudaSuccess) c.dst = *event;
    return leave(F_cudaEventCreateWithFlags, &c, e);
}

/* cudaEventRecord / cuEventRecord on live objects. */
static cudaError_t record_core(struct CUevent_st *ev, struct CUstream_st *s) {
    capture_t *cap = NULL;
    cudaError_t e;
    if (s->device != ev->device) return cudaErrorInvalidResourceHandle;
    e = stream_work(s, &cap);
    if (e != cudaSuccess) return e;
    if (cap) { /* a captured event: a dependency point inside the capture, no node */
        detach_event(ev);
        ev->captured = 1;
        ev->capture = cap;
        ev->rec_stream = s;
        ev->rec_ver = s->cap_ver;
        return cudaSuccess;
    }
    if ((e = reserve_op(s)) != cudaSuccess) return e;
    detach_event(ev);
    ev->captured = 0;
    ev->capture = NULL;
    ev->recorded = 1;
    ev->done = 0;
    ev->ts = g_clock;
    ev->rec_stream = s;
    {
        op_t o = new_op(OP_EVENT);
        o.ev = ev;
        ev->rec_seq = push_op(s, o, NULL, 0);
    }
    reap_streams();
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventRecord, NEED_CONTEXT);
    struct CUevent_st *ev = NULL;
    struct CUstream_st *s = NULL;
    c.dst = event;
    c.stream = stream;
    if (e == cudaSuccess && (!(ev = find_event(event)) || !(s = resolve(stream, 0))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = record_core(ev, s);
    return leave(F_cudaEventRecord, &c, e);
}

/* An event last recorded in a capturing stream may not be queried,
   synchronized or timed: cudaErrorCapturedEvent, its capture invalidated. */
static cudaError_t captured_check(struct CUevent_st *ev) {
    if (!ev->captured) return cudaSuccess;
    invalidate(ev->capture);
    return cudaErrorCapturedEvent;
}

static cudaError_t query_core(struct CUevent_st *ev) {
    cudaError_t e = captured_check(ev);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && ev->recorded && !ev->done) e = cudaErrorNotReady;
    return e;
}

static cudaError_t sync_event_core(struct CUevent_st *ev) {
    cudaError_t e = captured_check(ev);
    if (e == cudaSuccess) e = unsafe_check();
    if (e == cudaSuccess && ev->recorded && !ev->done) {
        if (!complete_through_event(ev)) hang();
        ev->done = 1;
    }
    return e;
}

/* a, b: live events; ms not NULL. */
static cudaError_t elapsed_core(float *ms, struct CUevent_st *a, struct CUevent_st *b) {
    cudaError_t e = captured_check(a);
    if (e == cudaSuccess) e = captured_check(b);
    if (e != cudaSuccess) return e;
    if (!a->recorded || !b->recorded || (a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming))
        return cudaErrorInvalidResourceHandle;
    if (!a->done || !b->done) return cudaErrorNotReady;
    *ms = b->ts - a->ts;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventQuery, NEED_CONTEXT);
    struct CUevent_st *ev = NULL;
    c.dst = event;
    if (e == cudaSuccess && !(ev = find_event(event))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = query_core(ev);
    return leave(F_cudaEventQuery, &c, e);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventSynchronize, NEED_CONTEXT);
    struct CUevent_st *ev = NULL;
    c.dst = event;
    if (e == cudaSuccess && !(ev = find_event(event))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = sync_event_core(ev);
    return leave(F_cudaEventSynchronize, &c, e);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventElapsedTime, NEED_CONTEXT);
    struct CUevent_st *a = NULL, *b = NULL;
    c.dst = start;
    c.src = end;
    if (e == cudaSuccess && (!(a = find_event(start)) || !(b = find_event(end))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && !ms) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = elapsed_core(ms, a, b);
    return leave(F_cudaEventElapsedTime, &c, e);
}

/* Unlinks and frees a live event. */
static void destroy_event(struct CUevent_st *ev) {
    struct CUevent_st **pp = &g_events;
    while (*pp && *pp != ev) pp = &(*pp)->next;
    if (*pp) *pp = ev->next;
    detach_event(ev);
    free(ev);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventDestroy, NEED_CONTEXT);
    struct CUevent_st *ev = NULL;
    c.dst = event;
    if (e == cudaSuccess && !(ev = find_event(event))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) destroy_event(ev);
    return leave(F_cudaEventDestroy, &c, e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamWaitEvent, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    struct CUevent_st *ev = NULL;
    capture_t *cap = NULL;
    c.stream = stream;
    c.dst = event;
    c.flags = flags;
    if (e == cudaSuccess && (!(s = resolve(stream, 0)) || !(ev = find_event(event))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && flags != cudaEventWaitDefault) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = stream_work(s, &cap);
    if (e != cudaSuccess) {
        /* nothing more */
    } else if (cap) {
        if (!ev->captured) {
            if (ev->recorded) { /* a dependency on work outside the capture */
                invalidate(cap);
                e = cudaErrorStreamCaptureIsolation;
            }
        } else if (ev->capture != cap) {
            invalidate(cap);
            invalidate(ev->capture);
            e = ev->capture->ended ? cudaErrorCapturedEvent : cudaErrorStreamCaptureMerge;
        } else if (ev->rec_stream != s) {
            struct CUstream_st *r = ev->rec_stream;
            if (stream_exists(r) && r->capture == cap && r->unjoined && ev->rec_ver == r->cap_ver) r->unjoined = 0;
            if (s != cap->origin) { /* s now carries r's work */
                s->unjoined = 1;
                s->cap_ver++;
            }
        }
    } else if (ev->captured) {
        capture_t *ec = ev->capture;
        if (ec->ended) e = cudaErrorCapturedEvent;
        else if (ec->invalidated) e = cudaErrorStreamCaptureInvalidated;
        else if (s->kind == SK_LEGACY) {
            invalidate(ec);
            e = cudaErrorStreamCaptureUnsupported;
        } else { /* s joins the capture (fork) */
            s->capture = ec;
            s->unjoined = 1;
            s->cap_ver++;
        }
    } else if (ev->recorded && !ev->done && ev->rec_stream && stream_exists(ev->rec_stream)) {
        e = reserve_op(s);
        if (e == cudaSuccess) push_op(s, new_op(OP_WORK), ev->rec_stream, ev->rec_seq);
    }
    return leave(F_cudaStreamWaitEvent, &c, e);
}

/* ---- device reset -------------------------------------------------------------- */

static void drop_ops(struct CUstream_st *s) {
    size_t i;
    for (i = 0; i < s->nops; i++) {
        op_t *o = &s->ops[i];
        free(o->deps);
        if (o->kind == OP_FREE) { /* a block of another device freed here: freed now */
            alloc_t *a = find_base(o->ptr);
            if (a && a->pending_free) {
                forget_touches(a->base);
                release_alloc(a, 0);
            }
        }
    }
    s->nops = 0;
}

/* Destroys device d's primary context and everything made in it. */
static void reset_device(int d) {
    struct CUstream_st *s;
    struct CUevent_st *ev;
    struct CUgraph_st *g, *gn;
    struct CUgraphExec_st *x;
    capture_t *c;
    size_t i;
    for (c = g_captures; c; c = c->next)
        if (!c->ended && c->origin && c->origin->device == d) {
            invalidate(c);
            end_capture(c, 0);
        }
    for (s = g_streams; s; s = s->next)
        if (s->device == d) {
            drop_ops(s);
            if (s->kind == SK_USER) s->dead = 1;
        }
    reap_streams();
    for (ev = g_events; ev; ev = ev->next)
        if (ev->device == d && (!ev->ctx || !ev->ctx->user)) { /* a created context's events live on */
            detach_event(ev);
            ev->dead = 1;
        }
    for (g = g_graphs; g; g = gn) {
        gn = g->next;
        if (g->device == d) {
            g->dead = 1;
            free_graph_nodes(g);
        }
    }
    for (x = g_execs; x; x = x->next)
        if (x->device == d && !x->dead) {
            x->dead = 1;
            free(x->nodes);
            x->nodes = NULL;
            x->n = 0;
        }
    i = g_nalloc;
    while (i-- > 0)
        if (g_alloc[i].device == d && g_alloc[i].kind != CUDADBL_MAPPED) { /* VMM mappings stay (not modelled) */
            forget_touches(g_alloc[i].base); /* ops of other devices: dropped with it */
            release_alloc(&g_alloc[i], 0);
        }
    g_ctx[d].active = 0;
    g_ctx[d].retains = 0;
    g_ctx[d].rt_held = 0;
}

cudaError_t cudaDeviceReset(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaDeviceReset, NEED_DEVICE);
    int d = rt_device();
    if (e == cudaSuccess && g_sticky != cudaSuccess) e = g_sticky;
    if (e == cudaSuccess && !valid_device(d)) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess) e = unsafe_check();
    c.flags = (unsigned)d;
    if (e == cudaSuccess && g_ctx[d].active) reset_device(d);
    return leave(F_cudaDeviceReset, &c, e);
}

/* ---- stream capture ------------------------------------------------------------ */

static int valid_mode(int m) {
    return m == cudaStreamCaptureModeGlobal || m == cudaStreamCaptureModeThreadLocal ||
           m == cudaStreamCaptureModeRelaxed;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamBeginCapture, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    c.flags = (unsigned)mode;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && s->kind == SK_LEGACY) e = cudaErrorStreamCaptureUnsupported;
    if (e == cudaSuccess && !valid_mode((int)mode)) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && active_capture(s)) e = cudaErrorIllegalState;
    if (e == cudaSuccess) {
        capture_t *cap = (capture_t *)calloc(1, sizeof *cap);
        struct CUgraph_st *g = (struct CUgraph_st *)calloc(1, sizeof *g);
        if (!cap || !g) {
            free(cap);
            free(g);
            e = cudaErrorMemoryAllocation;
        } else {
            cap->id = ++g_capture_id;
            cap->mode = (int)mode;
            cap->owner = t_tid;
            cap->origin = s;
            cap->graph = g;
            cap->next = g_captures;
            g_captures = cap;
            g->device = s->device;
            g->capturing = 1;
            g->next = g_graphs;
            g_graphs = g;
            s->capture = cap;
            s->unjoined = 0;
        }
    }
    return leave(F_cudaStreamBeginCapture, &c, e);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamEndCapture, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    capture_t *cap = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = legacy_check(s, 1);
    if (e == cudaSuccess && !pGraph) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(cap = active_capture(s))) e = cudaErrorIllegalState;
    if (e == cudaSuccess && cap->origin != s) {
        invalidate(cap);
        e = cudaErrorStreamCaptureUnmatched;
    }
    if (e == cudaSuccess && cap->mode != cudaStreamCaptureModeRelaxed && cap->owner != t_tid) {
        invalidate(cap);
        e = cudaErrorStreamCaptureWrongThread;
    }
    if (e == cudaSuccess && !cap->invalidated) {
        struct CUstream_st *b;
        for (b = g_streams; b; b = b->next)
            if (b->capture == cap && b->unjoined) {
                invalidate(cap);
                e = cudaErrorStreamCaptureUnjoined;
            }
    }
    if (e == cudaSuccess && cap->invalidated) e = cudaErrorStreamCaptureInvalidated;
    if (cap && (e == cudaSuccess || e == cudaErrorStreamCaptureInvalidated || e == cudaErrorStreamCaptureUnjoined)) {
        struct CUgraph_st *g = cap->graph;
        end_capture(cap, e == cudaSuccess);
        *pGraph = e == cudaSuccess ? g : NULL;
        c.dst = *pGraph;
    }
    return leave(F_cudaStreamEndCapture, &c, e);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamIsCapturing, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = legacy_check(s, 0);
    if (e == cudaSuccess && !pCaptureStatus) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        capture_t *cap = active_capture(s);
        *pCaptureStatus = !cap ? cudaStreamCaptureStatusNone
                               : cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
        c.flags = (unsigned)*pCaptureStatus;
    }
    return leave(F_cudaStreamIsCapturing, &c, e);
}

/* Status, id and graph of s's capture. */
static void capture_info(struct CUstream_st *s, int *status, unsigned long long *id, struct CUgraph_st **graph) {
    capture_t *cap = active_capture(s);
    *status = !cap ? cudaStreamCaptureStatusNone
                   : cap->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    *id = cap ? cap->id : 0;
    *graph = cap ? cap->graph : NULL;
    /* cuda.h (cuStreamGetCaptureInfo): "Valid data (other than
       capture status) is returned only if both of the following are true:
       the call returns CUDA_SUCCESS; the returned capture status is
       CU_STREAM_CAPTURE_STATUS_ACTIVE". Strict reading: an invalidated
       capture gives an id that is no capture's, and no graph. */
    if (cap && cap->invalidated) {
        *id = 0xbad0000000000000ull | ++g_bad_id;
        *graph = NULL;
    }
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out, cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
                                     size_t *numDependencies_out) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamGetCaptureInfo, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = legacy_check(s, 0);
    if (e == cudaSuccess && !captureStatus_out) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && (dependencies_out || edgeData_out || numDependencies_out))
        e = cudaErrorNotSupported; /* graph nodes are not exposed */
    if (e == cudaSuccess) {
        int st;
        unsigned long long id;
        struct CUgraph_st *g;
        capture_info(s, &st, &id, &g);
        *captureStatus_out = (enum cudaStreamCaptureStatus)st;
        if (id_out) *id_out = id;
        if (graph_out && st == cudaStreamCaptureStatusActive) *graph_out = g; /* valid only while active */
        c.flags = (unsigned)st;
        c.bytes = (size_t)id;
    }
    return leave(F_cudaStreamGetCaptureInfo, &c, e);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaThreadExchangeStreamCaptureMode, NEED_INIT);
    if (e == cudaSuccess && (!mode || !valid_mode((int)*mode))) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        int old = t_capmode;
        c.flags = (unsigned)*mode;
        t_capmode = (int)*mode;
        *mode = (enum cudaStreamCaptureMode)old;
    }
    return leave(F_cudaThreadExchangeStreamCaptureMode, &c, e);
}

/* ---- graphs ----------------------------------------------------------------------- */

static struct CUgraph_st *find_graph(cudaGraph_t g) {
    struct CUgraph_st *it;
    for (it = g_graphs; it; it = it->next)
        if (it == g && !it->dead) return it;
    return NULL;
}

static struct CUgraphExec_st *find_exec(cudaGraphExec_t x) {
    struct CUgraphExec_st *it;
    for (it = g_execs; it; it = it->next)
        if (it == x && !it->dead) return it;
    return NULL;
}

static cudaError_t instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    struct CUgraph_st *g;
    struct CUgraphExec_st *x;
    if (!pGraphExec || !graph) return cudaErrorInvalidValue;
    if (!(g = find_graph(graph))) return cudaErrorInvalidResourceHandle;
    if (g->capturing) return cudaErrorIllegalState;
    if (flags & ~(unsigned long long)(cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority))
        return cudaErrorInvalidValue;
    x = (struct CUgraphExec_st *)calloc(1, sizeof *x);
    if (!x) return cudaErrorMemoryAllocation;
    if (g->n) {
        x->nodes = (node_t *)malloc(g->n * sizeof *x->nodes);
        if (!x->nodes) {
            free(x);
            return cudaErrorMemoryAllocation;
        }
        memcpy(x->nodes, g->nodes, g->n * sizeof *x->nodes);
    }
    x->n = g->n;
    x->device = g->device;
    x->next = g_execs;
    g_execs = x;
    *pGraphExec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphInstantiate, NEED_CONTEXT);
    c.src = graph;
    c.flags = (unsigned)flags;
    if (e == cudaSuccess) e = instantiate(pGraphExec, graph, flags);
    if (e == cudaSuccess) c.dst = *pGraphExec;
    return leave(F_cudaGraphInstantiate, &c, e);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphInstantiateWithFlags, NEED_CONTEXT);
    c.src = graph;
    c.flags = (unsigned)flags;
    if (e == cudaSuccess) e = instantiate(pGraphExec, graph, flags);
    if (e == cudaSuccess) c.dst = *pGraphExec;
    return leave(F_cudaGraphInstantiateWithFlags, &c, e);
}

/* params NULL: cudaErrorInvalidValue; its flags as cudaGraphInstantiate's
   (cudaGraphInstantiateFlagUpload, which needs a stream, is not taken:
   strict). result_out: cudaGraphInstantiateSuccess, or
   cudaGraphInstantiateError when it fails. */
cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams *params) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphInstantiateWithParams, NEED_CONTEXT);
    c.src = graph;
    if (e == cudaSuccess && !params) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        c.flags = (unsigned)params->flags;
        e = instantiate(pGraphExec, graph, params->flags);
        params->result_out = e == cudaSuccess ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
        params->errNode_out = NULL;
    }
    if (e == cudaSuccess) c.dst = *pGraphExec;
    return leave(F_cudaGraphInstantiateWithParams, &c, e);
}

static size_t node_span(const node_t *n, size_t pitch) { return (n->height - 1) * pitch + n->width; }

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphLaunch, NEED_CONTEXT);
    struct CUgraphExec_st *x = NULL;
    struct CUstream_st *s = NULL;
    capture_t *cap = NULL;
    size_t i;
    c.src = graphExec;
    c.stream = stream;
    if (e == cudaSuccess && !graphExec) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(x = find_exec(graphExec))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = stream_work(s, &cap);
    if (e == cudaSuccess && cap) { /* a child graph of the capture, its nodes in order */
        for (i = 0; i < x->n && e == cudaSuccess; i++) e = add_node(cap, s, &x->nodes[i]);
    } else if (e == cudaSuccess) {
        /* a node on memory freed since capture faults on the device */
        for (i = 0; i < x->n && e == cudaSuccess; i++) {
            const node_t *n = &x->nodes[i];
            if (!n->width || !n->height) continue;
            if ((n->dst_tab && check_side(n->dst, node_span(n, n->dpitch), 1) != cudaSuccess) ||
                (n->src_tab && check_side(n->src, node_span(n, n->spitch), 1) != cudaSuccess)) {
                g_sticky = cudaErrorIllegalAddress;
                e = cudaErrorIllegalAddress;
            }
        }
        for (i = 0; i < x->n && e == cudaSuccess; i++) {
            const node_t *n = &x->nodes[i];
            size_t r;
            if (n->type == N_COPY) {
                do_copy(n->dst, n->dpitch, n->src, n->spitch, n->width, n->height);
                g_graph_bytes += (long)(n->width * n->height);
            } else {
                for (r = 0; r < n->height && n->width; r++) memset(n->dst + r * n->dpitch, n->value, n->width);
            }
            copy_time(n->width * n->height);
            queue_work(s, n->dst, n->type == N_COPY ? n->src : NULL);
        }
        if (e == cudaSuccess) g_launches++;
        reap_streams();
    }
    return leave(F_cudaGraphLaunch, &c, e);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphExecDestroy, NEED_CONTEXT);
    struct CUgraphExec_st *x = NULL;
    c.src = graphExec;
    if (e == cudaSuccess && !graphExec) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(x = find_exec(graphExec))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) {
        struct CUgraphExec_st **pp = &g_execs;
        while (*pp != x) pp = &(*pp)->next;
        *pp = x->next;
        free(x->nodes);
        free(x);
    }
    return leave(F_cudaGraphExecDestroy, &c, e);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphDestroy, NEED_CONTEXT);
    struct CUgraph_st *g = NULL;
    c.src = graph;
    if (e == cudaSuccess && !graph) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !(g = find_graph(graph))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && g->capturing) e = cudaErrorIllegalState;
    if (e == cudaSuccess) drop_graph(g);
    return leave(F_cudaGraphDestroy, &c, e);
}

#define D(code) {code, #code},
static const struct {
    CUresult code;
    const char *name;
} drv_err_table[] = {
    D(CUDA_SUCCESS)
    D(CUDA_ERROR_INVALID_VALUE)
    D(CUDA_ERROR_OUT_OF_MEMORY)
    D(CUDA_ERROR_NOT_INITIALIZED)
    D(CUDA_ERROR_DEINITIALIZED)
    D(CUDA_ERROR_PROFILER_DISABLED)
    D(CUDA_ERROR_PROFILER_NOT_INITIALIZED)
    D(CUDA_ERROR_PROFILER_ALREADY_STARTED)
    D(CUDA_ERROR_PROFILER_ALREADY_STOPPED)
    D(CUDA_ERROR_STUB_LIBRARY)
    D(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER)
    D(CUDA_ERROR_DEVICE_UNAVAILABLE)
    D(CUDA_ERROR_NO_DEVICE)
    D(CUDA_ERROR_INVALID_DEVICE)
    D(CUDA_ERROR_DEVICE_NOT_LICENSED)
    D(CUDA_ERROR_INVALID_IMAGE)
    D(CUDA_ERROR_INVALID_CONTEXT)
    D(CUDA_ERROR_CONTEXT_ALREADY_CURRENT)
    D(CUDA_ERROR_MAP_FAILED)
    D(CUDA_ERROR_UNMAP_FAILED)
    D(CUDA_ERROR_ARRAY_IS_MAPPED)
    D(CUDA_ERROR_ALREADY_MAPPED)
    D(CUDA_ERROR_NO_BINARY_FOR_GPU)
    D(CUDA_ERROR_ALREADY_ACQUIRED)
    D(CUDA_ERROR_NOT_MAPPED)
    D(CUDA_ERROR_NOT_MAPPED_AS_ARRAY)
    D(CUDA_ERROR_NOT_MAPPED_AS_POINTER)
    D(CUDA_ERROR_ECC_UNCORRECTABLE)
    D(CUDA_ERROR_UNSUPPORTED_LIMIT)
    D(CUDA_ERROR_CONTEXT_ALREADY_IN_USE)
    D(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
    D(CUDA_ERROR_INVALID_PTX)
    D(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT)
    D(CUDA_ERROR_NVLINK_UNCORRECTABLE)
    D(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
    D(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    D(CUDA_ERROR_JIT_COMPILATION_DISABLED)
    D(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY)
    D(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC)
    D(CUDA_ERROR_CONTAINED)
    D(CUDA_ERROR_INVALID_SOURCE)
    D(CUDA_ERROR_FILE_NOT_FOUND)
    D(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)
    D(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED)
    D(CUDA_ERROR_OPERATING_SYSTEM)
    D(CUDA_ERROR_INVALID_HANDLE)
    D(CUDA_ERROR_ILLEGAL_STATE)
    D(CUDA_ERROR_LOSSY_QUERY)
    D(CUDA_ERROR_NOT_FOUND)
    D(CUDA_ERROR_NOT_READY)
    D(CUDA_ERROR_ILLEGAL_ADDRESS)
    D(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    D(CUDA_ERROR_LAUNCH_TIMEOUT)
    D(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING)
    D(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    D(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
    D(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE)
    D(CUDA_ERROR_CONTEXT_IS_DESTROYED)
    D(CUDA_ERROR_ASSERT)
    D(CUDA_ERROR_TOO_MANY_PEERS)
    D(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    D(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
    D(CUDA_ERROR_HARDWARE_STACK_ERROR)
    D(CUDA_ERROR_ILLEGAL_INSTRUCTION)
    D(CUDA_ERROR_MISALIGNED_ADDRESS)
    D(CUDA_ERROR_INVALID_ADDRESS_SPACE)
    D(CUDA_ERROR_INVALID_PC)
    D(CUDA_ERROR_LAUNCH_FAILED)
    D(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    D(CUDA_ERROR_TENSOR_MEMORY_LEAK)
    D(CUDA_ERROR_NOT_PERMITTED)
    D(CUDA_ERROR_NOT_SUPPORTED)
    D(CUDA_ERROR_SYSTEM_NOT_READY)
    D(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    D(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    D(CUDA_ERROR_MPS_CONNECTION_FAILED)
    D(CUDA_ERROR_MPS_RPC_FAILURE)
    D(CUDA_ERROR_MPS_SERVER_NOT_READY)
    D(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED)
    D(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED)
    D(CUDA_ERROR_MPS_CLIENT_TERMINATED)
    D(CUDA_ERROR_CDP_NOT_SUPPORTED)
    D(CUDA_ERROR_CDP_VERSION_MISMATCH)
    D(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    D(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
    D(CUDA_ERROR_STREAM_CAPTURE_MERGE)
    D(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
    D(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
    D(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
    D(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    D(CUDA_ERROR_CAPTURED_EVENT)
    D(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
    D(CUDA_ERROR_TIMEOUT)
    D(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
    D(CUDA_ERROR_EXTERNAL_DEVICE)
    D(CUDA_ERROR_INVALID_CLUSTER_SIZE)
    D(CUDA_ERROR_FUNCTION_NOT_LOADED)
    D(CUDA_ERROR_INVALID_RESOURCE_TYPE)
    D(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)
    D(CUDA_ERROR_KEY_ROTATION)
    D(CUDA_ERROR_UNKNOWN)
};
#undef D

/* ============================================================================ */
/* The driver functions (never touch the runtime's last error)                  */
/* ============================================================================ */

/* The runtime and driver share these numbers (CUDA_ERROR_INVALID_HANDLE is
   cudaErrorInvalidResourceHandle, CUDA_ERROR_STREAM_CAPTURE_* the
   cudaErrorStreamCapture* ones, ...). */
static CUresult drv(cudaError_t e) { return (CUresult)e; }

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxGetCurrent, DRV_HEALTHY);
    if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        const ctxref_t *ref = cur_ref();
        *pctx = ref ? ref->ctx : NULL;
        c.dst = *pctx;
    }
    return drv_leave(F_cuCtxGetCurrent, &c, r);
}

static int ctx_index(CUcontext ctx) {
    int d;
    for (d = 0; d < g_ndev; d++)
        if (ctx == &g_ctx[d]) return d;
    return -1;
}
static struct CUctx_st *any_ctx(CUcontext ctx); /* below */

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxPushCurrent_v2, DRV_HEALTHY);
    struct CUctx_st *x = any_ctx(ctx); /* a primary or a created context */
    c.dst = ctx;
    if (r == CUDA_SUCCESS && (!x || !x->active)) r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS && t_nstack == DBL_STACK_MAX) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        t_stack[t_nstack].ctx = x;
        t_stack[t_nstack].inc = x->inc;
        t_nstack++;
    }
    return drv_leave(F_cuCtxPushCurrent_v2, &c, r);
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxPopCurrent_v2, DRV_HEALTHY);
    if (r == CUDA_SUCCESS && t_nstack == 0) r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS) {
        t_nstack--;
        c.dst = t_stack[t_nstack].ctx;
        if (pctx) *pctx = t_stack[t_nstack].ctx;
    }
    return drv_leave(F_cuCtxPopCurrent_v2, &c, r);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxGetDevice, DRV_CONTEXT);
    if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *device = t_cur;
    return drv_leave(F_cuCtxGetDevice, &c, r);
}

static int default_handle(CUstream h) { return h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD; }

/* Driver stream lookup: default handles need a live current context. */
static CUresult drv_stream(CUstream h, struct CUstream_st **out) {
    if (default_handle(h)) {
        CUresult r = drv_context();
        if (r != CUDA_SUCCESS) return r;
    } else if (stream_dead(h)) {
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = resolve(h, 0);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* Driver event lookup. */
static CUresult drv_event(CUevent h, struct CUevent_st **out) {
    struct CUevent_st *ev = find_event_any(h);
    if (!ev) return CUDA_ERROR_INVALID_HANDLE;
    if (ev->dead) {
        g_dead_uses++; /* cudadbl_dead_event_uses */
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = ev;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuStreamGetCtx, DRV_HEALTHY);
    struct CUstream_st *s = NULL;
    c.stream = hStream;
    if (r == CUDA_SUCCESS) r = drv_stream(hStream, &s);
    if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    /* a default handle is the current context's (checked live above) */
    if (r == CUDA_SUCCESS && !default_handle(hStream) && !g_ctx[s->device].active) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (r == CUDA_SUCCESS) {
        *pctx = default_handle(hStream) ? cur_ref()->ctx : &g_ctx[s->device];
        c.dst = *pctx;
    }
    return drv_leave(F_cuStreamGetCtx, &c, r);
}

static CUresult drv_capture_info(int f, CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                 CUgraph *graph, int unsupported_asked, cudadbl_call_t *c) {
    struct CUstream_st *s = NULL;
    CUresult r = CUDA_SUCCESS;
    (void)f;
    c->stream = hStream;
    r = drv_stream(hStream, &s);
    if (r == CUDA_SUCCESS) r = drv(legacy_check(s, 0));
    if (r == CUDA_SUCCESS && !status) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && unsupported_asked) r = CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS) {
        int st;
        unsigned long long cid;
        struct CUgraph_st *g;
        capture_info(s, &st, &cid, &g);
        *status = (CUstreamCaptureStatus)st;
        if (id) *id = (cuuint64_t)cid;
        if (graph && st == cudaStreamCaptureStatusActive) *graph = g; /* valid only while active */
        c->flags = (unsigned)st;
        c->bytes = (size_t)cid;
    }
    return r;
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out, size_t *numDependencies_out) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuStreamGetCaptureInfo_v2, DRV_HEALTHY);
    if (r == CUDA_SUCCESS)
        r = drv_capture_info(F_cuStreamGetCaptureInfo_v2, hStream, captureStatus_out, id_out, graph_out,
                             dependencies_out || numDependencies_out, &c);
    return drv_leave(F_cuStreamGetCaptureInfo_v2, &c, r);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuStreamGetCaptureInfo, DRV_HEALTHY);
    if (r == CUDA_SUCCESS)
        r = drv_capture_info(F_cuStreamGetCaptureInfo, hStream, captureStatus_out, id_out, NULL, 0, &c);
    return drv_leave(F_cuStreamGetCaptureInfo, &c, r);
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuEventCreate, DRV_CONTEXT);
    c.flags = Flags;
    if (r == CUDA_SUCCESS) r = drv(create_event(phEvent, Flags));
    if (r == CUDA_SUCCESS) c.dst = *phEvent;
    return drv_leave(F_cuEventCreate, &c, r);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuEventRecord, DRV_HEALTHY);
    struct CUevent_st *ev = NULL;
    struct CUstream_st *s = NULL;
    c.dst = hEvent;
    c.stream = hStream;
    if (r == CUDA_SUCCESS) r = drv_event(hEvent, &ev);
    if (r == CUDA_SUCCESS) r = drv_stream(hStream, &s);
    if (r == CUDA_SUCCESS) r = drv(record_core(ev, s));
    return drv_leave(F_cuEventRecord, &c, r);
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuEventQuery, DRV_HEALTHY);
    struct CUevent_st *ev = NULL;
    c.dst = hEvent;
    if (r == CUDA_SUCCESS) r = drv_event(hEvent, &ev);
    if (r == CUDA_SUCCESS) r = drv(query_core(ev));
    return drv_leave(F_cuEventQuery, &c, r);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuEventSynchronize, DRV_HEALTHY);
    struct CUevent_st *ev = NULL;
    c.dst = hEvent;
    if (r == CUDA_SUCCESS) r = drv_event(hEvent, &ev);
    if (r == CUDA_SUCCESS) r = drv(sync_event_core(ev));
    return drv_leave(F_cuEventSynchronize, &c, r);
}

static CUresult drv_elapsed(int f, float *ms, CUevent hStart, CUevent hEnd) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(f, DRV_HEALTHY);
    struct CUevent_st *a = NULL, *b = NULL;
    c.dst = hStart;
    c.src = hEnd;
    if (r == CUDA_SUCCESS) r = drv_event(hStart, &a);
    if (r == CUDA_SUCCESS) r = drv_event(hEnd, &b);
    if (r == CUDA_SUCCESS && !ms) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = drv(elapsed_core(ms, a, b));
    return drv_leave(f, &c, r);
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return drv_elapsed(F_cuEventElapsedTime, pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return drv_elapsed(F_cuEventElapsedTime_v2, pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuEventDestroy_v2, DRV_HEALTHY);
    struct CUevent_st *ev = NULL;
    c.dst = hEvent;
    if (r == CUDA_SUCCESS) r = drv_event(hEvent, &ev);
    if (r == CUDA_SUCCESS) destroy_event(ev);
    return drv_leave(F_cuEventDestroy_v2, &c, r);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemGetInfo_v2, DRV_CONTEXT);
    if (r == CUDA_SUCCESS) r = drv(unsafe_check());
    if (r == CUDA_SUCCESS && (!free || !total)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *free = free_bytes(t_cur);
        *total = g_total[t_cur];
        c.bytes = *free;
    }
    return drv_leave(F_cuMemGetInfo_v2, &c, r);
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuPointerGetAttributes, DRV_HEALTHY);
    const void *p = (const void *)(uintptr_t)ptr;
    unsigned i;
    c.src = p;
    c.bytes = numAttributes;
    if (r == CUDA_SUCCESS && (!numAttributes || !attributes || !data)) r = CUDA_ERROR_INVALID_VALUE;
    for (i = 0; r == CUDA_SUCCESS && i < numAttributes; i++) {
        if (!data[i]) r = CUDA_ERROR_INVALID_VALUE;
        else if (attributes[i] != CU_POINTER_ATTRIBUTE_MEMORY_TYPE && attributes[i] != CU_POINTER_ATTRIBUTE_IS_MANAGED &&
                 attributes[i] != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
            r = CUDA_ERROR_INVALID_VALUE; /* not modelled */
    }
    if (r == CUDA_SUCCESS) {
        alloc_t *a = find(p);
        for (i = 0; i < numAttributes; i++) {
            switch (attributes[i]) {
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
                unsigned t = 0;
                if (a) t = a->kind == CUDADBL_DEVICE || a->kind == CUDADBL_MANAGED ||
                                   (a->kind == CUDADBL_MAPPED && !(a->flags & DBL_VMM_HOST)) /* a device handle's */
                               ? (unsigned)CU_MEMORYTYPE_DEVICE
                               : (unsigned)CU_MEMORYTYPE_HOST;
                *(unsigned *)data[i] = t;
                break;
            }
            case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = a && a->kind == CUDADBL_MANAGED; break;
            default: *(int *)data[i] = a ? a->device : -2; break;
            }
        }
        if (a) c.flags = (unsigned)a->kind + 1;
    }
    return drv_leave(F_cuPointerGetAttributes, &c, r);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDevicePrimaryCtxGetState, DRV_INIT);
    c.flags = (unsigned)dev;
    if (r == CUDA_SUCCESS && !valid_device(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS && (!flags || !active)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *flags = 0;
        *active = g_ctx[dev].active;
    }
    return drv_leave(F_cuDevicePrimaryCtxGetState, &c, r);
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDevicePrimaryCtxRetain, DRV_HEALTHY);
    c.flags = (unsigned)dev;
    if (r == CUDA_SUCCESS && !valid_device(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && g_release_at_retain[dev]) { /* cudadbl_release_at_retain */
        g_release_at_retain[dev] = 0;
        if (g_ctx[dev].active) reset_device(dev); /* the last holder let it go: destroyed */
    }
    if (r == CUDA_SUCCESS) {
        activate(dev);
        g_ctx[dev].retains++;
        *pctx = &g_ctx[dev];
        c.dst = *pctx;
    }
    return drv_leave(F_cuDevicePrimaryCtxRetain, &c, r);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDevicePrimaryCtxRelease_v2, DRV_INIT);
    c.flags = (unsigned)dev;
    if (r == CUDA_SUCCESS && !valid_device(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS && g_ctx[dev].retains <= 0) r = CUDA_ERROR_INVALID_CONTEXT; /* not retained */
    if (r == CUDA_SUCCESS && --g_ctx[dev].retains == 0 && !g_ctx[dev].rt_held)
        reset_device(dev); /* the last release of a context the runtime does not hold destroys it */
    return drv_leave(F_cuDevicePrimaryCtxRelease_v2, &c, r);
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDeviceGetCount, DRV_INIT);
    if (r == CUDA_SUCCESS && !count) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) *count = g_ndev;
    return drv_leave(F_cuDeviceGetCount, &c, r);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDeviceGet, DRV_INIT);
    c.flags = (unsigned)ordinal;
    if (r == CUDA_SUCCESS && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !valid_device(ordinal)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS) *device = ordinal;
    return drv_leave(F_cuDeviceGet, &c, r);
}

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuThreadExchangeStreamCaptureMode, DRV_INIT);
    if (r == CUDA_SUCCESS && (!mode || !valid_mode((int)*mode))) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        int old = t_capmode;
        c.flags = (unsigned)*mode;
        t_capmode = (int)*mode;
        *mode = (CUstreamCaptureMode)old;
    }
    return drv_leave(F_cuThreadExchangeStreamCaptureMode, &c, r);
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuGetErrorName, DRV_ANY);
    size_t i;
    c.flags = (unsigned)error;
    if (r == CUDA_SUCCESS && !pStr) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *pStr = NULL; /* unknown code: CUDA_ERROR_INVALID_VALUE and NULL */
        r = CUDA_ERROR_INVALID_VALUE;
        for (i = 0; i < sizeof drv_err_table / sizeof drv_err_table[0]; i++)
            if (drv_err_table[i].code == error) {
                *pStr = drv_err_table[i].name;
                r = CUDA_SUCCESS;
                break;
            }
    }
    return drv_leave(F_cuGetErrorName, &c, r);
}

/* ============================================================================ */
/* Contexts created and destroyed, primary context reset, pools                 */
/* ============================================================================ */

/* Contexts made by cuCtxCreate live in DBL_UCTX_MAX slots; a new one takes
   the lowest free slot, so a context destroyed and another created (on any
   device) get the same address, as a real allocator may hand it out: only
   the id (cuCtxGetId: the incarnation, never reused) tells them apart. */
#define DBL_UCTX_MAX 4
static struct CUctx_st g_uctx[DBL_UCTX_MAX];

/* Pools: a location (device d, or the host) and nothing else (no
   attributes, no reuse, no access control). */
struct CUmemPoolHandle_st {
    int host; /* CU_MEM_LOCATION_TYPE_HOST / HOST_NUMA / HOST_NUMA_CURRENT */
    int device; /* a device pool's device */
    int dead;
    struct CUmemPoolHandle_st *next;
};
static struct CUmemPoolHandle_st *g_pools;

static struct CUctx_st *any_ctx(CUcontext ctx) {
    int d = ctx_index(ctx), i;
    if (d >= 0) return &g_ctx[d];
    for (i = 0; i < DBL_UCTX_MAX; i++)
        if (ctx == &g_uctx[i] && g_uctx[i].user) return &g_uctx[i];
    return NULL;
}

static void ctx_pool_reset(void) {
    memset(g_uctx, 0, sizeof g_uctx);
    while (g_pools) {
        struct CUmemPoolHandle_st *p = g_pools;
        g_pools = p->next;
        free(p);
    }
    g_dead_uses = 0;
    memset(g_release_at_retain, 0, sizeof g_release_at_retain);
}

/* cuCtxCreate (cuda.h maps it to _v4): a new context on dev, pushed on the
   calling thread's stack ("if a context is already current to the thread,
   it is supplanted by the newly created context"). ctxCreateParams (exec
   affinity, CIG) is not modelled: non-NULL gives CUDA_ERROR_NOT_SUPPORTED;
   flags beyond the scheduling and map-host ones CUDA_ERROR_INVALID_VALUE;
   no free slot CUDA_ERROR_OUT_OF_MEMORY. The runtime follows it while it is
   current (its device's memory, its legacy stream). */
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
                                CUdevice dev) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxCreate_v4, DRV_HEALTHY);
    int i;
    c.flags = (unsigned)dev;
    if (r == CUDA_SUCCESS && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !valid_device(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS && ctxCreateParams) r = CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && t_nstack == DBL_STACK_MAX) r = CUDA_ERROR_OUT_OF_MEMORY;
    for (i = 0; r == CUDA_SUCCESS && i < DBL_UCTX_MAX && g_uctx[i].user; i++) {
    }
    if (r == CUDA_SUCCESS && i == DBL_UCTX_MAX) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        struct CUctx_st *x = &g_uctx[i];
        memset(x, 0, sizeof *x);
        x->device = dev;
        x->active = 1;
        x->user = 1;
        x->inc = ++g_inc;
        x->created = 1;
        t_stack[t_nstack].ctx = x;
        t_stack[t_nstack].inc = x->inc;
        t_nstack++;
        *pctx = x;
        c.dst = x;
    }
    return drv_leave(F_cuCtxCreate_v4, &c, r);
}

/* cuCtxDestroy (_v2): a context made by cuCtxCreate. Popped from the
   calling thread's stack if on top there ("as though cuCtxPopCurrent()
   were called"); current elsewhere it is a destroyed context
   (CUDA_ERROR_CONTEXT_IS_DESTROYED). Its events die with it: driver calls
   given one return CUDA_ERROR_CONTEXT_IS_DESTROYED (counted:
   cudadbl_dead_event_uses). A primary context, an unknown or destroyed
   one: CUDA_ERROR_INVALID_CONTEXT (strict reading). Not modelled: the
   allocations and streams made in it (a test frees them first). */
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxDestroy_v2, DRV_INIT);
    struct CUctx_st *x = any_ctx(ctx);
    c.dst = ctx;
    if (r == CUDA_SUCCESS && (!x || !x->user || !x->active)) r = CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS) {
        struct CUevent_st *ev;
        for (ev = g_events; ev; ev = ev->next)
            if (ev->ctx == x && ev->ctx_inc == x->inc) {
                detach_event(ev);
                ev->dead = 1;
            }
        if (t_nstack && t_stack[t_nstack - 1].ctx == x && t_stack[t_nstack - 1].inc == x->inc) t_nstack--;
        x->active = 0;
        x->user = 0; /* the slot is free: its address may come back */
    }
    return drv_leave(F_cuCtxDestroy_v2, &c, r);
}

/* cuCtxGetId: the context's id, unique for the life of the process; NULL:
   the current context's (none: CUDA_ERROR_INVALID_CONTEXT). An inactive
   primary context or a destroyed one: CUDA_ERROR_CONTEXT_IS_DESTROYED
   (a freed slot: CUDA_ERROR_INVALID_CONTEXT). */
CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuCtxGetId, DRV_INIT);
    struct CUctx_st *x = NULL;
    unsigned inc = 0;
    c.dst = ctx;
    if (r == CUDA_SUCCESS && !ctxId) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !ctx) {
        const ctxref_t *ref = cur_ref();
        if (!ref) r = CUDA_ERROR_INVALID_CONTEXT;
        else if (!ref_live(ref)) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
        else {
            x = ref->ctx;
            inc = ref->inc;
        }
    } else if (r == CUDA_SUCCESS) {
        if (!(x = any_ctx(ctx))) r = CUDA_ERROR_INVALID_CONTEXT;
        else if (!x->active) r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
        else inc = x->inc;
    }
    if (r == CUDA_SUCCESS) {
        *ctxId = inc;
        c.bytes = inc;
    }
    return drv_leave(F_cuCtxGetId, &c, r);
}

/* cuDevicePrimaryCtxReset (_v2): as cudaDeviceReset of dev (see Reset in
   cudart_double.h): the primary context and everything made in it
   destroyed; the next activation is a new context (new id) at the same
   address. */
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuDevicePrimaryCtxReset_v2, DRV_HEALTHY);
    c.flags = (unsigned)dev;
    if (r == CUDA_SUCCESS && !valid_device(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (r == CUDA_SUCCESS && g_ctx[dev].active) reset_device(dev);
    return drv_leave(F_cuDevicePrimaryCtxReset_v2, &c, r);
}

/* A pool's location: 0, or the error (CUresult numbers are the runtime's:
   CUDA_ERROR_INVALID_VALUE is cudaErrorInvalidValue). */
static cudaError_t pool_create(struct CUmemPoolHandle_st **out, int alloc_type, int loc_type, int loc_id) {
    struct CUmemPoolHandle_st *p;
    if (!out || alloc_type != (int)CU_MEM_ALLOCATION_TYPE_PINNED) return cudaErrorInvalidValue;
    if (loc_type == (int)CU_MEM_LOCATION_TYPE_DEVICE ? !valid_device(loc_id)
        : loc_type == (int)CU_MEM_LOCATION_TYPE_HOST_NUMA ? loc_id != 0 /* one NUMA node: 0 */
        : loc_type != (int)CU_MEM_LOCATION_TYPE_HOST && loc_type != (int)CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
        return cudaErrorInvalidValue;
    if (!(p = (struct CUmemPoolHandle_st *)calloc(1, sizeof *p))) return cudaErrorMemoryAllocation;
    p->host = loc_type != (int)CU_MEM_LOCATION_TYPE_DEVICE;
    p->device = p->host ? -1 : loc_id;
    p->next = g_pools;
    g_pools = p;
    *out = p;
    return cudaSuccess;
}

static struct CUmemPoolHandle_st *find_pool(const void *h) {
    struct CUmemPoolHandle_st *p;
    for (p = g_pools; p; p = p->next)
        if (p == h && !p->dead) return p;
    return NULL;
}

/* The allocation of cudaMallocFromPoolAsync / cuMemAllocFromPoolAsync on
   stream s (resolved): from the pool's location, whatever the stream's
   device: a device pool's device memory (counted against that device), a
   host pool's pinned memory (cudaMemoryTypeHost, CU_MEMORYTYPE_HOST).
   Into a capture: cudaErrorNotSupported, as cudaMallocAsync. */
static cudaError_t pool_alloc(void **out, size_t size, const void *pool, struct CUstream_st *s) {
    struct CUmemPoolHandle_st *p = find_pool(pool);
    cudaError_t e = cudaSuccess;
    if (!out || !p) return cudaErrorInvalidValue;
    if (s->capture && !s->capture->ended) return cudaErrorNotSupported;
    if ((e = legacy_check(s, 1)) != cudaSuccess) return e;
    if ((e = reserve_op(s)) != cudaSuccess) return e;
    e = p->host ? do_alloc(out, size, CUDADBL_PINNED, s->device, DBL_POOLED)
                : do_alloc(out, size, CUDADBL_DEVICE, p->device, DBL_POOLED);
    if (e == cudaSuccess) {
        push_op(s, new_op(OP_WORK), NULL, 0);
        reap_streams();
    }
    return e;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemPoolCreate, DRV_HEALTHY);
    if (r == CUDA_SUCCESS && !poolProps) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = drv(pool_create((struct CUmemPoolHandle_st **)pool, (int)poolProps->allocType,
                            (int)poolProps->location.type, poolProps->location.id));
    if (r == CUDA_SUCCESS) c.dst = *pool;
    return drv_leave(F_cuMemPoolCreate, &c, r);
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemPoolDestroy, DRV_HEALTHY);
    struct CUmemPoolHandle_st *p = find_pool(pool);
    c.dst = pool;
    if (r == CUDA_SUCCESS && !p) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) p->dead = 1; /* its blocks stay until freed, as documented */
    return drv_leave(F_cuMemPoolDestroy, &c, r);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemAllocFromPoolAsync, DRV_HEALTHY);
    struct CUstream_st *s = NULL;
    void *p = NULL;
    c.bytes = bytesize;
    c.stream = hStream;
    if (r == CUDA_SUCCESS) r = drv_stream(hStream, &s);
    if (r == CUDA_SUCCESS && !dptr) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = drv(pool_alloc(&p, bytesize, pool, s));
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)(uintptr_t)p;
        c.dst = p;
    }
    return drv_leave(F_cuMemAllocFromPoolAsync, &c, r);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemPoolCreate, NEED_CONTEXT);
    if (e == cudaSuccess && !poolProps) e = cudaErrorInvalidValue;
    if (e == cudaSuccess)
        e = pool_create((struct CUmemPoolHandle_st **)memPool, (int)poolProps->allocType,
                        (int)poolProps->location.type, poolProps->location.id);
    if (e == cudaSuccess) c.dst = *memPool;
    return leave(F_cudaMemPoolCreate, &c, e);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemPoolDestroy, NEED_CONTEXT);
    struct CUmemPoolHandle_st *p = find_pool(memPool);
    c.dst = memPool;
    if (e == cudaSuccess && !p) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) p->dead = 1;
    return leave(F_cudaMemPoolDestroy, &c, e);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocFromPoolAsync, NEED_CONTEXT);
    struct CUstream_st *s = NULL;
    c.bytes = size;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = pool_alloc(ptr, size, memPool, s);
    if (e == cudaSuccess) c.dst = *ptr;
    return leave(F_cudaMallocFromPoolAsync, &c, e);
}

/* Scripting (cudart_double.h). */
void cudadbl_release_at_retain(int device) {
    if (device < 0 || device >= CUDADBL_MAX_DEVICES) return;
    lock();
    g_release_at_retain[device] = 1;
    unlock();
}

long cudadbl_dead_event_uses(void) {
    long n;
    lock();
    n = g_dead_uses;
    unlock();
    return n;
}

/* ============================================================================ */
/* Scripting API                                                                */
/* ============================================================================ */

static void slock(void) {
    lock();
    thread_sync();
    t_cur = rt_device();
}

void cudadbl_reset(void) {
    size_t i;
    int d;
    slock();
    vmm_reset(); /* reservations unmapped, handles closed: the MAPPED entries' memory */
    for (i = 0; i < g_nalloc; i++)
        if (g_alloc[i].kind != CUDADBL_REGISTERED && g_alloc[i].kind != CUDADBL_MAPPED) free(g_alloc[i].base);
    free(g_alloc);
    g_alloc = NULL;
    g_nalloc = g_capalloc = 0;
    g_reuse = 0;
    drop_cache();
    while (g_streams) {
        struct CUstream_st *s = g_streams;
        g_streams = s->next;
        for (i = 0; i < s->nops; i++) free(s->ops[i].deps);
        free(s->ops);
        free(s);
    }
    memset(g_legacy, 0, sizeof g_legacy);
    while (g_events) {
        struct CUevent_st *ev = g_events;
        g_events = ev->next;
        free(ev);
    }
    while (g_graphs) {
        struct CUgraph_st *g = g_graphs;
        g_graphs = g->next;
        free(g->nodes);
        free(g);
    }
    while (g_execs) {
        struct CUgraphExec_st *x = g_execs;
        g_execs = x->next;
        free(x->nodes);
        free(x);
    }
    while (g_captures) {
        capture_t *c = g_captures;
        g_captures = c->next;
        free(c);
    }
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) {
        g_total[d] = CUDADBL_DEFAULT_TOTAL;
        g_outside[d] = g_used[d] = 0;
        g_ctx[d].active = 0;
        g_ctx[d].retains = 0;
        g_ctx[d].created = 0;
        g_ctx[d].rt_held = 0;
    }
    ctx_pool_reset(); /* created contexts, pools, the retain hook, dead uses */
    memset(g_fn, 0, sizeof g_fn);
    g_ndev = CUDADBL_DEFAULT_DEVICES;
    g_clock = 0;
    g_copy_fixed_ms = 0;
    g_copy_bytes_per_ms = 0;
    g_marker_set = 0;
    g_marker = 0;
    g_drv_init = 0;
    g_sticky = cudaSuccess;
    g_invalidated = 0;
    g_hazards = g_launches = g_graph_bytes = 0;
    g_nsym = 0;
    g_gen++;
    thread_sync();
    unlock();
}

int cudadbl_contexts_created(int device) {
    int n;
    if (device < 0 || device >= CUDADBL_MAX_DEVICES) return -1;
    slock();
    n = g_ctx[device].created;
    unlock();
    return n;
}

int cudadbl_context_active(int device) {
    int n;
    if (device < 0 || device >= CUDADBL_MAX_DEVICES) return -1;
    slock();
    n = g_ctx[device].active;
    unlock();
    return n;
}

void cudadbl_set_sticky(cudaError_t e) {
    slock();
    g_sticky = e;
    unlock();
}

/* The body of a getter of one counter: read under the lock. */
#define DBL_READ(type, var) \
    type n_;                \
    slock();                \
    n_ = (var);             \
    unlock();               \
    return n_

int cudadbl_captures_invalidated(void) { DBL_READ(int, g_invalidated); }

long cudadbl_capturing(void) {
    capture_t *c;
    long n = 0;
    slock();
    for (c = g_captures; c; c = c->next) n += !c->ended;
    unlock();
    return n;
}

long cudadbl_graph_launches(void) { DBL_READ(long, g_launches); }

size_t cudadbl_live_graphs(void) {
    struct CUgraph_st *g;
    size_t n = 0;
    slock();
    for (g = g_graphs; g; g = g->next) n += !g->dead && !g->capturing;
    unlock();
    return n;
}

size_t cudadbl_live_graph_execs(void) {
    struct CUgraphExec_st *x;
    size_t n = 0;
    slock();
    for (x = g_execs; x; x = x->next) n += !x->dead;
    unlock();
    return n;
}

long cudadbl_graph_copy_bytes(void) { DBL_READ(long, g_graph_bytes); }

long cudadbl_hazards(void) { DBL_READ(long, g_hazards); }

void cudadbl_set_reuse(int on) {
    slock();
    g_reuse = on != 0;
    if (!g_reuse) drop_cache();
    unlock();
}

void cudadbl_reset_script(void) {
    int d;
    slock();
    g_reuse = 0;
    drop_cache();
    memset(g_fn, 0, sizeof g_fn);
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) {
        g_total[d] = CUDADBL_DEFAULT_TOTAL;
        g_outside[d] = 0;
    }
    g_ndev = CUDADBL_DEFAULT_DEVICES;
    g_copy_fixed_ms = 0;
    g_copy_bytes_per_ms = 0;
    unlock();
}

int cudadbl_fail(const char *fn, unsigned skip, unsigned n, cudaError_t err) {
    int f = fn_index(fn);
    if (f < 0 || f == F_cudaGetErrorString || f == F_cudaGetErrorName) return -1; /* they cannot fail */
    slock();
    g_fn[f].fail_skip = n ? skip : 0;
    g_fn[f].fail_n = n;
    g_fn[f].fail_err = err;
    unlock();
    return 0;
}

int cudadbl_fail_next(const char *fn, unsigned n, cudaError_t err) { return cudadbl_fail(fn, 0, n, err); }

long cudadbl_calls(const char *fn) {
    int f = fn_index(fn);
    long n;
    if (f < 0) return -1;
    slock();
    n = g_fn[f].calls;
    unlock();
    return n;
}

void cudadbl_reset_calls(void) {
    int f;
    slock();
    for (f = 0; f < F_COUNT; f++) g_fn[f].calls = 0;
    unlock();
}

int cudadbl_last_call(const char *fn, cudadbl_call_t *out) {
    int f = fn_index(fn), rc = -1;
    if (f < 0 || !out) return -1;
    slock();
    if (g_fn[f].has_last) {
        *out = g_fn[f].last;
        rc = 0;
    }
    unlock();
    return rc;
}

int cudadbl_set_device_count(int n) {
    if (n < 0 || n > CUDADBL_MAX_DEVICES) return -1;
    slock();
    g_ndev = n;
    unlock();
    return 0;
}

static int set_per_device(size_t *arr, int device, size_t bytes) {
    int d;
    if (device < -1 || device >= CUDADBL_MAX_DEVICES) return -1;
    slock();
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++)
        if (device == -1 || d == device) arr[d] = bytes;
    unlock();
    return 0;
}

int cudadbl_set_total(int device, size_t bytes) { return set_per_device(g_total, device, bytes); }
int cudadbl_set_outside(int device, size_t bytes) { return set_per_device(g_outside, device, bytes); }

size_t cudadbl_device_used(int device) {
    size_t n = 0;
    if (device < 0 || device >= CUDADBL_MAX_DEVICES) return 0;
    slock();
    n = g_used[device];
    unlock();
    return n;
}

void cudadbl_set_clock(float ms) {
    slock();
    g_clock = ms;
    unlock();
}

void cudadbl_advance_clock(float ms) {
    slock();
    g_clock += ms;
    unlock();
}

void cudadbl_set_copy_time(float fixed_ms, double bytes_per_ms) {
    slock();
    g_copy_fixed_ms = fixed_ms;
    g_copy_bytes_per_ms = bytes_per_ms;
    unlock();
}

float cudadbl_clock(void) {
    float t;
    slock();
    t = g_clock;
    unlock();
    return t;
}

void cudadbl_complete_until(float ms) {
    slock();
    if (!g_marker_set || ms > g_marker) g_marker = ms;
    g_marker_set = 1;
    apply_marker();
    unlock();
}

int cudadbl_complete_stream(cudaStream_t s) {
    struct CUstream_st *st;
    slock();
    st = resolve(s, 1);
    if (st) {
        (void)complete_all_of(st); /* a stuck stream's ops stay */
        reap_streams();
    }
    unlock();
    return st ? 0 : -1;
}

int cudadbl_set_stuck(cudaStream_t s, int on) {
    struct CUstream_st *st;
    slock();
    if ((st = resolve(s, 0)) != NULL) st->stuck = on != 0;
    if (st && !on) apply_marker(); /* its ops, and those waiting for them */
    unlock();
    return st ? 0 : -1;
}

long cudadbl_calls_after_teardown(void) { DBL_READ(long, g_after_teardown); }
long cudadbl_calls_in_child(void) { DBL_READ(long, g_in_child); }
long cudadbl_hangs(void) { DBL_READ(long, g_hung); }
int cudadbl_torn_down(void) { DBL_READ(int, g_torn_down); }

void cudadbl_complete_all(void) {
    slock();
    (void)complete_device(-1); /* a stuck stream's ops stay */
    unlock();
}

long cudadbl_pending(cudaStream_t s) {
    struct CUstream_st *st;
    long n = -1;
    slock();
    st = resolve(s, 1);
    if (st) n = (long)st->nops;
    unlock();
    return n;
}

long cudadbl_pending_all(void) {
    struct CUstream_st *s;
    long n = 0;
    slock();
    for (s = g_streams; s; s = s->next) n += (long)s->nops;
    unlock();
    return n;
}

long cudadbl_pending_per_thread(void) {
    struct CUstream_st *st;
    long n;
    slock();
    st = per_thread_stream(t_cur);
    n = st ? (long)st->nops : -1;
    unlock();
    return n;
}

size_t cudadbl_live(cudadbl_kind_t kind, size_t *bytes) {
    size_t i, n = 0, b = 0;
    slock();
    for (i = 0; i < g_nalloc; i++)
        if (kind == CUDADBL_ALL || g_alloc[i].kind == kind) {
            n++;
            b += g_alloc[i].size;
        }
    unlock();
    if (bytes) *bytes = b;
    return n;
}

size_t cudadbl_pending_frees(size_t *bytes) {
    size_t i, n = 0, b = 0;
    slock();
    for (i = 0; i < g_nalloc; i++)
        if (g_alloc[i].pending_free) {
            n++;
            b += g_alloc[i].size;
        }
    unlock();
    if (bytes) *bytes = b;
    return n;
}

int cudadbl_lookup(const void *p, void **base, size_t *size, cudadbl_kind_t *kind, int *device) {
    alloc_t *a;
    int found = 0;
    slock();
    a = find(p);
    if (a) {
        found = 1;
        if (base) *base = a->base;
        if (size) *size = a->size;
        if (kind) *kind = a->kind;
        if (device) *device = a->device;
    }
    unlock();
    return found;
}

size_t cudadbl_live_streams(void) {
    struct CUstream_st *s;
    size_t n = 0;
    slock();
    for (s = g_streams; s; s = s->next) n += s->kind == SK_USER && !s->destroyed && !s->dead;
    unlock();
    return n;
}

size_t cudadbl_live_events(void) {
    struct CUevent_st *ev;
    size_t n = 0;
    slock();
    for (ev = g_events; ev; ev = ev->next) n += !ev->dead;
    unlock();
    return n;
}


/* ============================================================================ */
/* Per-thread default stream entry points                                       */
/* ============================================================================ */

/* Code built with CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc
   --default-stream per-thread) calls these names (cuda_runtime_api.h maps
   them with __CUDART_API_PTDS/_PTSZ). Each is declared with the type of
   the function it stands for, so its definition is checked against the
   real prototype, and does what that function does with NULL meaning the
   calling thread's per-thread default stream, and the synchronous ones
   ordered after that stream instead of the legacy one (counts and scripts
   go by the plain name). */
#define DBL_PT(name, suffix, params, args)                                       \
    __typeof__(name) name##suffix;                                                \
    cudaError_t name##suffix params {                                             \
        cudaError_t e_;                                                           \
        t_ptds = 1;                                                               \
        e_ = name args;                                                           \
        t_ptds = 0;                                                               \
        return e_;                                                                \
    }
DBL_PT(cudaMemcpy, _ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
       (dst, src, count, kind))
DBL_PT(cudaMemcpy2D, _ptds,
       (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
        enum cudaMemcpyKind kind),
       (dst, dpitch, src, spitch, width, height, kind))
DBL_PT(cudaMemset, _ptds, (void *devPtr, int value, size_t count), (devPtr, value, count))
DBL_PT(cudaMemcpyAsync, _ptsz,
       (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream),
       (dst, src, count, kind, stream))
DBL_PT(cudaMemcpy2DAsync, _ptsz,
       (void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
        enum cudaMemcpyKind kind, cudaStream_t stream),
       (dst, dpitch, src, spitch, width, height, kind, stream))
DBL_PT(cudaMemsetAsync, _ptsz, (void *devPtr, int value, size_t count, cudaStream_t stream),
       (devPtr, value, count, stream))
DBL_PT(cudaStreamQuery, _ptsz, (cudaStream_t stream), (stream))
DBL_PT(cudaStreamSynchronize, _ptsz, (cudaStream_t stream), (stream))
DBL_PT(cudaStreamGetDevice, _ptsz, (cudaStream_t hStream, int *device), (hStream, device))
DBL_PT(cudaEventRecord, _ptsz, (cudaEvent_t event, cudaStream_t stream), (event, stream))
DBL_PT(cudaMallocAsync, _ptsz, (void **devPtr, size_t size, cudaStream_t hStream), (devPtr, size, hStream))
DBL_PT(cudaFreeAsync, _ptsz, (void *devPtr, cudaStream_t hStream), (devPtr, hStream))
DBL_PT(cudaMallocFromPoolAsync, _ptsz, (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),
       (ptr, size, memPool, stream))
DBL_PT(cudaStreamWaitEvent, _ptsz, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),
       (stream, event, flags))
DBL_PT(cudaStreamBeginCapture, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))
DBL_PT(cudaStreamEndCapture, _ptsz, (cudaStream_t stream, cudaGraph_t *pGraph), (stream, pGraph))
DBL_PT(cudaStreamIsCapturing, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
       (stream, pCaptureStatus))
DBL_PT(cudaStreamGetCaptureInfo, _ptsz,
       (cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out,
        cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
        size_t *numDependencies_out),
       (stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out))
DBL_PT(cudaGraphLaunch, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream))
DBL_PT(cudaGraphInstantiateWithParams, _ptsz,
       (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, cudaGraphInstantiateParams *params),
       (pGraphExec, graph, params))
DBL_PT(cudaMemcpy3D, _ptds, (const struct cudaMemcpy3DParms *p), (p))
DBL_PT(cudaMemcpy3DAsync, _ptsz, (const struct cudaMemcpy3DParms *p, cudaStream_t stream), (p, stream))
DBL_PT(cudaMemcpy3DPeer, _ptds, (const struct cudaMemcpy3DPeerParms *p), (p))
DBL_PT(cudaMemcpy3DPeerAsync, _ptsz, (const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream), (p, stream))
DBL_PT(cudaMemcpyToSymbol, _ptds,
       (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind),
       (symbol, src, count, offset, kind))
DBL_PT(cudaMemcpyToSymbolAsync, _ptsz,
       (const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind,
        cudaStream_t stream),
       (symbol, src, count, offset, kind, stream))
DBL_PT(cudaMemcpyFromSymbol, _ptds,
       (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind),
       (dst, symbol, count, offset, kind))
DBL_PT(cudaMemcpyFromSymbolAsync, _ptsz,
       (void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream),
       (dst, symbol, count, offset, kind, stream))
DBL_PT(cudaMemcpy2DToArray, _ptds,
       (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width,
        size_t height, enum cudaMemcpyKind kind),
       (dst, wOffset, hOffset, src, spitch, width, height, kind))
DBL_PT(cudaMemcpy2DToArrayAsync, _ptsz,
       (cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width,
        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
       (dst, wOffset, hOffset, src, spitch, width, height, kind, stream))
DBL_PT(cudaMemcpy2DFromArray, _ptds,
       (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width,
        size_t height, enum cudaMemcpyKind kind),
       (dst, dpitch, src, wOffset, hOffset, width, height, kind))
DBL_PT(cudaMemcpy2DFromArrayAsync, _ptsz,
       (void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width,
        size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
       (dst, dpitch, src, wOffset, hOffset, width, height, kind, stream))
DBL_PT(cudaMemcpy2DArrayToArray, _ptds,
       (cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src, size_t wOffsetSrc,
        size_t hOffsetSrc, size_t width, size_t height, enum cudaMemcpyKind kind),
       (dst, wOffsetDst, hOffsetDst, src, wOffsetSrc, hOffsetSrc, width, height, kind))
DBL_PT(cudaMemcpyBatchAsync, _ptsz,
       (void *const *dsts, const void *const *srcs, const size_t *sizes, size_t count,
        struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream),
       (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream))
DBL_PT(cudaMemcpy3DBatchAsync, _ptsz,
       (size_t numOps, struct cudaMemcpy3DBatchOp *opList, unsigned long long flags, cudaStream_t stream),
       (numOps, opList, flags, stream))

/* The driver's per-thread default stream names (libcuda exports them;
   cuda.h declares them only for its own build): NULL is the calling
   thread's per-thread default stream. */
CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx);
CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out);
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out, size_t *numDependencies_out);
#define DBL_DRV_PT(name, params, args)                                           \
    CUresult CUDAAPI name##_ptsz params {                                         \
        CUresult r_;                                                              \
        t_ptds = 1;                                                               \
        r_ = name args;                                                           \
        t_ptds = 0;                                                               \
        return r_;                                                                \
    }
DBL_DRV_PT(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
DBL_DRV_PT(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), (hStream, pctx))
DBL_DRV_PT(cuStreamGetCaptureInfo, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
           (hStream, captureStatus_out, id_out))
DBL_DRV_PT(cuStreamGetCaptureInfo_v2,
           (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out,
            const CUgraphNode **dependencies_out, size_t *numDependencies_out),
           (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
DBL_DRV_PT(cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
           (dptr, bytesize, pool, hStream))

/* ============================================================================ */
/* Driver memory and entry points                                               */
/* ============================================================================ */

/* The driver's allocations and copies a program reaches through an entry
   point (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2, cuMemcpyHtoD_v2,
   cuMemcpyDtoH_v2 and the copies' _ptds names) on the runtime's allocation
   table; cuGetProcAddress (11.3, 4 arguments) and cuGetProcAddress_v2
   (12.0) over the driver functions this double defines, with the rules of
   tests/preload/procaddr.h, as a CUDA 13.0 driver; the runtime's
   cudaGetDriverEntryPoint(ByVersion)(_ptsz), which go through those rules
   as libcudart goes through the driver's cuGetProcAddress; and
   cudaMallocPitch, which allocates through the runtime's own driver table
   (fetched once through cuGetProcAddress_v2, as libcudart fetches its
   driver table). */
#include <dlfcn.h>
#include "../preload/procaddr.h"
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus);

/* The runtime's version (CUDART_VERSION of the major built) and the driver's. */
#ifdef CUDADBL_MAJOR
#define DBL_RT_VERSION (CUDADBL_MAJOR * 1000)
#else
#define DBL_RT_VERSION 13000
#endif
#define DBL_DRV_VERSION 13000

#define DBL_P(x) ((void *)(uintptr_t)(x))

/* cuMemAlloc: 0 bytes is CUDA_ERROR_INVALID_VALUE (cuda.h); beyond the
   device's free memory CUDA_ERROR_OUT_OF_MEMORY. Device memory of the
   current context's device. */
CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemAlloc_v2, DRV_CONTEXT);
    void *p = NULL;
    c.bytes = bytesize;
    if (r == CUDA_SUCCESS && (!dptr || !bytesize)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = drv(do_alloc(&p, bytesize, CUDADBL_DEVICE, t_cur, 0));
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)(c.dst = p);
    return drv_leave(F_cuMemAlloc_v2, &c, r);
}

/* The pitch: the width rounded up to 512 bytes. ElementSizeBytes other
   than 4, 8 or 16, a zero width or height: CUDA_ERROR_INVALID_VALUE
   (cuda.h). */
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemAllocPitch_v2, DRV_CONTEXT);
    size_t pitch = (WidthInBytes + 511) / 512 * 512;
    void *p = NULL;
    if (r == CUDA_SUCCESS && (!dptr || !pPitch || !WidthInBytes || !Height ||
                              (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && Height > (size_t)-1 / pitch) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) r = drv(do_alloc(&p, c.bytes = pitch * Height, CUDADBL_DEVICE, t_cur, 0));
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)(uintptr_t)(c.dst = p);
        *pPitch = pitch;
    }
    return drv_leave(F_cuMemAllocPitch_v2, &c, r);
}

/* As cudaFree (it synchronizes the device), for the start of a device or
   managed block; anything else, 0 included: CUDA_ERROR_INVALID_VALUE
   (strict reading). */
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemFree_v2, DRV_CONTEXT);
    alloc_t *a = r == CUDA_SUCCESS ? find_base(DBL_P(dptr)) : NULL;
    c.dst = DBL_P(dptr);
    if (r == CUDA_SUCCESS && (!a || a->pending_free || (a->kind != CUDADBL_DEVICE && a->kind != CUDADBL_MANAGED)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        int dev = a->device;
        c.bytes = a->size;
        if (!complete_device(t_cur)) hang();
        if (dev != t_cur && !complete_device(dev)) hang();
        a = find_base(DBL_P(dptr));
        count_hazards((const char *)DBL_P(dptr), NULL, 0); /* work of other devices still on it */
        release_alloc(a, 1);
    }
    return drv_leave(F_cuMemFree_v2, &c, r);
}

/* Synchronous copies with the rules of cudaMemcpy of that kind (the
   _ptds names: ordered after the calling thread's per-thread stream). */
static CUresult drv_copy(int f, void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int ptds) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(f, DRV_CONTEXT);
    c.dst = dst;
    c.src = src;
    c.bytes = n;
    c.kind = (int)kind;
    t_ptds = ptds;
    if (r == CUDA_SUCCESS) r = drv(sync_copy(dst, n, src, n, n, 1, kind));
    t_ptds = 0;
    return drv_leave(f, &c, r);
}
CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    return drv_copy(F_cuMemcpyHtoD_v2, DBL_P(dst), src, n, cudaMemcpyHostToDevice, 0);
}
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) {
    return drv_copy(F_cuMemcpyHtoD_v2, DBL_P(dst), src, n, cudaMemcpyHostToDevice, 1);
}
CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    return drv_copy(F_cuMemcpyDtoH_v2, dst, DBL_P(src), n, cudaMemcpyDeviceToHost, 0);
}
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) {
    return drv_copy(F_cuMemcpyDtoH_v2, dst, DBL_P(src), n, cudaMemcpyDeviceToHost, 1);
}

/* The functions cuGetProcAddress hands out (introduced in: cuda.h). */
#define DBL_PROCS(X)                                                                                         \
    X("cuGetProcAddress", 11030, 0, cuGetProcAddress) X("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2)   \
    X("cuMemAlloc", 3020, 0, cuMemAlloc_v2) X("cuMemAllocPitch", 3020, 0, cuMemAllocPitch_v2)                \
    X("cuMemFree", 3020, 0, cuMemFree_v2) X("cuMemcpyHtoD", 3020, 0, cuMemcpyHtoD_v2)                        \
    X("cuMemcpyHtoD", 7000, 1, cuMemcpyHtoD_v2_ptds) X("cuMemcpyDtoH", 3020, 0, cuMemcpyDtoH_v2)             \
    X("cuMemcpyDtoH", 7000, 1, cuMemcpyDtoH_v2_ptds) X("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2)             \
    X("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent) X("cuDeviceGet", 2000, 0, cuDeviceGet)                    \
    X("cuDeviceGetCount", 2000, 0, cuDeviceGetCount) X("cuGetErrorName", 6000, 0, cuGetErrorName)          \
    X("cuMemGetAllocationGranularity", 10020, 0, cuMemGetAllocationGranularity)                               \
    X("cuMemCreate", 10020, 0, cuMemCreate) X("cuMemRelease", 10020, 0, cuMemRelease)                        \
    X("cuMemMap", 10020, 0, cuMemMap) X("cuMemUnmap", 10020, 0, cuMemUnmap)                                  \
    X("cuMemSetAccess", 10020, 0, cuMemSetAccess) X("cuMemAddressReserve", 10020, 0, cuMemAddressReserve)     \
    X("cuMemAddressFree", 10020, 0, cuMemAddressFree) /* virtual memory management: 10.2 */
#define DBL_OWN(s, v, pt, fn) PROCADDR_OWN(fn)
DBL_PROCS(DBL_OWN)
#undef DBL_OWN

/* Under the lock; works before the driver's initialization (the runtime
   fetches cuInit through it). */
static CUresult dbl_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status, int v1) {
    static const procaddr_t rows[] = {DBL_PROCS(PROCADDR_ROW)};
    return procaddr_find(rows, sizeof rows / sizeof rows[0], DBL_DRV_VERSION, symbol, pfn, cudaVersion, flags, status,
                         v1);
}
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuGetProcAddress, DRV_ANY);
    if (r == CUDA_SUCCESS) r = dbl_proc(symbol, pfn, cudaVersion, flags, NULL, 1);
    return drv_leave(F_cuGetProcAddress, &c, r);
}
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuGetProcAddress_v2, DRV_ANY);
    if (r == CUDA_SUCCESS) r = dbl_proc(symbol, pfn, cudaVersion, flags, symbolStatus, 0);
    return drv_leave(F_cuGetProcAddress_v2, &c, r);
}

/* The runtime's entry points: they initialize the runtime; flags as the
   driver's (cudaEnableDefault is the legacy stream in the plain names, the
   per-thread one in the _ptsz names, which code built with
   CUDA_API_PER_THREAD_DEFAULT_STREAM calls); cudaGetDriverEntryPoint asks
   at the runtime's version; a cudaVersion above the driver's, a NULL
   symbol or funcPtr, other flags: cudaErrorInvalidValue; not found:
   cudaSuccess, *funcPtr NULL and the status (CUDA 12.0's contract). */
static cudaError_t dbl_entry(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *driverStatus, int ptsz) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetDriverEntryPoint, NEED_INIT);
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    if (ptsz && flags == cudaEnableDefault) flags = cudaEnablePerThreadDefaultStream;
    if (e == cudaSuccess && cudaVersion > (unsigned)DBL_DRV_VERSION) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = (cudaError_t)dbl_proc(symbol, funcPtr, (int)cudaVersion, flags, &st, 0);
    if (e == cudaSuccess && driverStatus) *driverStatus = (enum cudaDriverEntryPointQueryResult)st;
    if (e == cudaSuccess) c.dst = *funcPtr;
    c.flags = (unsigned)flags;
    return leave(F_cudaGetDriverEntryPoint, &c, e);
}
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus) {
    return dbl_entry(symbol, funcPtr, DBL_RT_VERSION, flags, driverStatus, 0);
}
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus) {
    return dbl_entry(symbol, funcPtr, DBL_RT_VERSION, flags, driverStatus, 1);
}
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
    return dbl_entry(symbol, funcPtr, cudaVersion, flags, driverStatus, 0);
}
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *driverStatus) {
    return dbl_entry(symbol, funcPtr, cudaVersion, flags, driverStatus, 1);
}

/* The runtime's driver table (here: one function). libcudart takes
   cuGetProcAddress_v2 from its own handle on libcuda, so its lookups never
   meet an LD_PRELOAD library; CUDADBL_DRIVER_LOOKUP=global takes it from
   the global scope instead (dlsym(RTLD_DEFAULT)), as a runtime that found
   its driver there would, for a test of what an interposer does then.
   Called without the lock. */
typedef CUresult (*dbl_pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
static dbl_pitch_fn dbl_driver_pitch(void) {
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    static dbl_pitch_fn cached;
    dbl_pitch_fn f = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    gpa_fn gpa = &procaddr_own_cuGetProcAddress_v2;
    const char *how = getenv("CUDADBL_DRIVER_LOOKUP");
    void *p = NULL;
    if (f) return f;
    if (how && strcmp(how, "global") == 0 && (p = dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2")) != NULL)
        gpa = (gpa_fn)(uintptr_t)p;
    if (gpa("cuMemAllocPitch", &p, DBL_RT_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL) != CUDA_SUCCESS || !p)
        return NULL;
    f = (dbl_pitch_fn)(uintptr_t)p;
    __atomic_store_n(&cached, f, __ATOMIC_RELEASE);
    return f;
}

/* cudaMallocPitch: the driver's pitched allocation (elements of 16 bytes,
   its pitch rule), made through the runtime's driver table. */
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocPitch, NEED_CONTEXT);
    CUdeviceptr d = 0;
    dbl_pitch_fn f;
    if (e == cudaSuccess && (!devPtr || !pitch)) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = unsafe_check();
    if (e != cudaSuccess) return leave(F_cudaMallocPitch, &c, e);
    unlock();
    f = dbl_driver_pitch();
    e = f ? (cudaError_t)f(&d, pitch, width, height, 16) : cudaErrorInitializationError;
    lock();
    if (e == cudaSuccess) *devPtr = c.dst = DBL_P(d);
    c.bytes = e == cudaSuccess ? *pitch * height : width * height;
    return leave(F_cudaMallocPitch, &c, e);
}

/* ============================================================================ */
/* The driver for memobs                                                        */
/* ============================================================================ */

/* memobs_cuda.h takes the driver's functions from a program that defines
   this (else it opens libcuda.so.1): the double hands it its own, by their
   exported names; none when CUDADBL_NO_DRIVER=1 is in the environment (a
   process without a driver library, for a test of that case), and no
   cuCtxGetId with CUDADBL_NO_CTXID=1 (a driver before CUDA 12.0). */
void *memobs_cuda_driver_symbol(const char *name);
void *memobs_cuda_driver_symbol(const char *name) {
#define DBL_SYM(fn) {#fn, (void *)(uintptr_t)&fn},
    static const struct {
        const char *name;
        void *fn;
    } syms[] = {DBL_SYM(cuCtxGetCurrent) DBL_SYM(cuCtxPushCurrent_v2) DBL_SYM(cuCtxPopCurrent_v2)
                DBL_SYM(cuCtxGetDevice) DBL_SYM(cuStreamGetCtx) DBL_SYM(cuStreamGetCaptureInfo_v2)
                DBL_SYM(cuStreamGetCaptureInfo) DBL_SYM(cuEventCreate) DBL_SYM(cuEventRecord)
                DBL_SYM(cuEventQuery) DBL_SYM(cuEventSynchronize) DBL_SYM(cuEventElapsedTime)
                DBL_SYM(cuEventElapsedTime_v2) DBL_SYM(cuEventDestroy_v2) DBL_SYM(cuMemGetInfo_v2)
                DBL_SYM(cuPointerGetAttributes) DBL_SYM(cuDevicePrimaryCtxGetState)
                DBL_SYM(cuDevicePrimaryCtxRetain) DBL_SYM(cuDevicePrimaryCtxRelease_v2) DBL_SYM(cuDeviceGetCount)
                DBL_SYM(cuDeviceGet) DBL_SYM(cuThreadExchangeStreamCaptureMode) DBL_SYM(cuGetErrorName)
                DBL_SYM(cuCtxGetId)};
#undef DBL_SYM
    size_t i;
    const char *off = getenv("CUDADBL_NO_DRIVER");
    if (off && strcmp(off, "1") == 0) return NULL;
    off = getenv("CUDADBL_NO_CTXID"); /* a driver older than CUDA 12.0 (no cuCtxGetId) */
    if (off && strcmp(off, "1") == 0 && name && strcmp(name, "cuCtxGetId") == 0) return NULL;
    for (i = 0; name && i < sizeof syms / sizeof syms[0]; i++)
        if (strcmp(syms[i].name, name) == 0) return syms[i].fn;
    return NULL;
}

/* ======================================================================== */
/* RUNTIME MAJORS: the calls whose signature is not 13's                    */
/* ======================================================================== */

/* Built with -DCUDADBL_MAJOR=11 or 12 (soname libcudart.so.11.0 or
   libcudart.so.12, mk/cudart_double.<soname>.map), the double exports that
   major's signature under the plain name (an asm label: the CUDA 13 header
   here declares 13's) and counts it as the plain name. */
#if CUDADBL_MAJOR == 12
/* 12.8: failIdx, "the index of the copy where a failure was encountered";
   SIZE_MAX when the error pertains to no copy (always here: the double's
   checks do not say which copy failed). Strict reading: a NULL failIdx is
   cudaErrorInvalidValue (the call is counted: it goes to the 13 body with
   no copies, which refuses it so). */
cudaError_t cudadbl_v12_cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                             size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                             size_t numAttrs, size_t *failIdx,
                                             cudaStream_t stream) __asm__("cudaMemcpyBatchAsync");
cudaError_t cudadbl_v12_cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                             size_t count, struct cudaMemcpyAttributes *attrs, size_t *attrsIdxs,
                                             size_t numAttrs, size_t *failIdx, cudaStream_t stream) {
    cudaError_t e = cudaMemcpyBatchAsync(dsts, srcs, sizes, failIdx ? count : 0, attrs, attrsIdxs, numAttrs, stream);
    if (e != cudaSuccess && failIdx) *failIdx = SIZE_MAX;
    return e;
}
cudaError_t cudadbl_v12_cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                                  size_t count, struct cudaMemcpyAttributes *attrs,
                                                  size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                                  cudaStream_t stream) __asm__("cudaMemcpyBatchAsync_ptsz");
cudaError_t cudadbl_v12_cudaMemcpyBatchAsync_ptsz(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                                  size_t count, struct cudaMemcpyAttributes *attrs,
                                                  size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                                  cudaStream_t stream) {
    cudaError_t e;
    t_ptds = 1;
    e = cudadbl_v12_cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, stream);
    t_ptds = 0;
    return e;
}
cudaError_t cudadbl_v12_cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp *opList, size_t *failIdx,
                                               unsigned long long flags,
                                               cudaStream_t stream) __asm__("cudaMemcpy3DBatchAsync");
cudaError_t cudadbl_v12_cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp *opList, size_t *failIdx,
                                               unsigned long long flags, cudaStream_t stream) {
    cudaError_t e = cudaMemcpy3DBatchAsync(failIdx ? numOps : 0, opList, flags, stream);
    if (e != cudaSuccess && failIdx) *failIdx = SIZE_MAX;
    return e;
}
cudaError_t cudadbl_v12_cudaMemcpy3DBatchAsync_ptsz(size_t numOps, struct cudaMemcpy3DBatchOp *opList,
                                                    size_t *failIdx, unsigned long long flags,
                                                    cudaStream_t stream) __asm__("cudaMemcpy3DBatchAsync_ptsz");
cudaError_t cudadbl_v12_cudaMemcpy3DBatchAsync_ptsz(size_t numOps, struct cudaMemcpy3DBatchOp *opList,
                                                    size_t *failIdx, unsigned long long flags, cudaStream_t stream) {
    cudaError_t e;
    t_ptds = 1;
    e = cudadbl_v12_cudaMemcpy3DBatchAsync(numOps, opList, failIdx, flags, stream);
    t_ptds = 0;
    return e;
}
#endif

#if CUDADBL_MAJOR == 11
/* 11: no flags (instantiated as with 0); on failure *pErrorNode is NULL
   (the double's graphs fail as a whole, never at a node) and the log
   (bufferSize > 0) holds a line, cut to fit; on success an empty log. */
cudaError_t cudadbl_v11_cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                             cudaGraphNode_t *pErrorNode, char *pLogBuffer,
                                             size_t bufferSize) __asm__("cudaGraphInstantiate");
cudaError_t cudadbl_v11_cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                             cudaGraphNode_t *pErrorNode, char *pLogBuffer, size_t bufferSize) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGraphInstantiate, NEED_CONTEXT);
    c.src = graph;
    if (e == cudaSuccess) e = instantiate(pGraphExec, graph, 0);
    if (e == cudaSuccess) c.dst = *pGraphExec;
    else if (pErrorNode) *pErrorNode = NULL;
    if (pLogBuffer && bufferSize)
        snprintf(pLogBuffer, bufferSize, "%s", e == cudaSuccess ? "" : "cudart_double: instantiation failed");
    return leave(F_cudaGraphInstantiate, &c, e);
}
/* 11.3: cudaGetDriverEntryPoint(symbol, funcPtr, flags), no driverStatus;
   not found: cudaErrorSymbolNotFound (12.0 made it cudaSuccess and a
   status); no ByVersion (12.5) and no _ptsz name (strict reading). */
cudaError_t cudadbl_v11_cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                                unsigned long long flags) __asm__("cudaGetDriverEntryPoint");
cudaError_t cudadbl_v11_cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags) {
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
    cudaError_t e = dbl_entry(symbol, funcPtr, DBL_RT_VERSION, flags, &st, 0);
    if (e == cudaSuccess && st != cudaDriverEntryPointSuccess) e = cudaErrorSymbolNotFound;
    return e;
}
#endif
/* ============================================================================ */
/* Virtual memory management (cuMemCreate, cuMemMap, ...)                       */
/* ============================================================================ */

/* A physical allocation (cuMemCreate): a memfd of its size, mapped with
   MAP_SHARED|MAP_FIXED wherever cuMemMap puts it, so copies through any
   mapping move real bytes. */
typedef struct {
    unsigned long long handle; /* 0: a free entry */
    size_t size;
    int device; /* -1: host-located */
    int fd;
    int released;
    long maps;
} vmm_handle_t;

/* A reservation (cuMemAddressReserve): host address space mapped
   PROT_NONE; a mapping replaces part of it, an unmap puts it back. */
typedef struct {
    char *base;
    size_t size;
} vmm_resv_t;

/* A mapping: also a CUDADBL_MAPPED table allocation (which answers
   pointer attributes and copies); here, its handle. */
typedef struct {
    char *va;
    size_t size;
    size_t h; /* index in g_vh */
} vmm_map_t;

static vmm_handle_t *g_vh;
static size_t g_nvh, g_capvh;
static unsigned long long g_vh_next; /* handle values handed out; a released one's value comes back first */
static unsigned long long *g_vh_freed;
static size_t g_nvh_freed, g_capvh_freed;
static vmm_resv_t *g_resv;
static size_t g_nresv, g_capresv;
static vmm_map_t *g_vmap;
static size_t g_nvmap, g_capvmap;

/* Grows an array of n elements of sz bytes to hold one more; 0 or -1. */
static int vmm_grow(void **arr, size_t *cap, size_t n, size_t sz) {
    void *p;
    size_t c;
    if (n < *cap) return 0;
    c = *cap ? *cap * 2 : 16;
    if ((p = realloc(*arr, c * sz)) == NULL) return -1;
    *arr = p;
    *cap = c;
    return 0;
}

static vmm_handle_t *vmm_find_handle(unsigned long long h) {
    size_t i;
    for (i = 0; h && i < g_nvh; i++)
        if (g_vh[i].handle == h) return &g_vh[i];
    return NULL;
}

/* The reservation holding [p, p + n), or NULL. */
static vmm_resv_t *vmm_find_resv(const char *p, size_t n) {
    size_t i;
    for (i = 0; i < g_nresv; i++)
        if (p >= g_resv[i].base && n <= g_resv[i].size && (size_t)(p - g_resv[i].base) <= g_resv[i].size - n)
            return &g_resv[i];
    return NULL;
}

/* The memory goes back: the driver frees a handle when it is released and
   unmapped. Its value may be handed out again. */
static void vmm_free_handle(vmm_handle_t *e) {
    if (e->device >= 0) g_used[e->device] -= e->size;
    close(e->fd);
    if (!vmm_grow((void **)&g_vh_freed, &g_capvh_freed, g_nvh_freed, sizeof *g_vh_freed))
        g_vh_freed[g_nvh_freed++] = e->handle;
    e->handle = 0;
}

/* A location cuMemCreate / cuMemGetAllocationGranularity accept: 0, or
   the error. */
static CUresult vmm_check_prop(const CUmemAllocationProp *prop) {
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: return valid_device(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST: /* not IPC capable: no handle types */
        return prop->requestedHandleTypes ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA: /* no NUMA here: node 0 only */
        return prop->location.id == 0 && !prop->requestedHandleTypes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default: return CUDA_ERROR_INVALID_VALUE; /* HOST_NUMA_CURRENT included, as cuda.h says */
    }
}

static int vmm_aligned(unsigned long long v) { return v % CUDADBL_VMM_GRANULARITY == 0; }

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemGetAllocationGranularity, DRV_HEALTHY);
    c.flags = (unsigned)option;
    if (r == CUDA_SUCCESS && (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                               option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = vmm_check_prop(prop);
    if (r == CUDA_SUCCESS) *granularity = c.bytes = CUDADBL_VMM_GRANULARITY;
    return drv_leave(F_cuMemGetAllocationGranularity, &c, r);
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemCreate, DRV_HEALTHY);
    int dev = -1, fd = -1;
    size_t i;
    c.bytes = size;
    c.flags = (unsigned)flags;
    if (r == CUDA_SUCCESS && (!handle || flags || !size || !vmm_aligned(size))) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) r = vmm_check_prop(prop);
    if (r == CUDA_SUCCESS && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        dev = prop->location.id;
        if (size > free_bytes(dev)) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS && ((fd = memfd_create("cudadbl-vmm", MFD_CLOEXEC)) < 0 || ftruncate(fd, (off_t)size))) {
        if (fd >= 0) close(fd);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; i < g_nvh && g_vh[i].handle; i++) { /* a free entry (entries never move: mappings point at them) */
    }
    if (r == CUDA_SUCCESS && i == g_nvh && vmm_grow((void **)&g_vh, &g_capvh, g_nvh, sizeof *g_vh)) {
        close(fd);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        vmm_handle_t *e = &g_vh[i];
        if (i == g_nvh) g_nvh++;
        e->handle = g_nvh_freed ? g_vh_freed[--g_nvh_freed] : ++g_vh_next;
        e->size = size;
        e->device = dev;
        e->fd = fd;
        e->released = 0;
        e->maps = 0;
        if (dev >= 0) g_used[dev] += size;
        *handle = e->handle;
        c.dst = (void *)(uintptr_t)e->handle;
        c.device = dev;
    }
    return drv_leave(F_cuMemCreate, &c, r);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemRelease, DRV_HEALTHY);
    vmm_handle_t *e = NULL;
    c.dst = (void *)(uintptr_t)handle;
    /* cuda.h: undefined for an invalid handle; strict reading: an error */
    if (r == CUDA_SUCCESS && ((e = vmm_find_handle(handle)) == NULL || e->released)) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        c.bytes = e->size;
        e->released = 1;
        if (!e->maps) vmm_free_handle(e); /* freed when released and unmapped */
    }
    return drv_leave(F_cuMemRelease, &c, r);
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemAddressReserve, DRV_HEALTHY);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), al = alignment ? alignment : CUDADBL_VMM_GRANULARITY;
    char *p = NULL, *b;
    c.bytes = size;
    c.flags = (unsigned)flags;
    if (r == CUDA_SUCCESS && (!ptr || !size || size % page || addr % page || flags || (alignment & (alignment - 1))))
        r = CUDA_ERROR_INVALID_VALUE;
    if (al < page) al = page;
    /* addr is a hint: not followed */
    if (r == CUDA_SUCCESS &&
        (p = (char *)mmap(NULL, size + al, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        b = (char *)(((uintptr_t)p + al - 1) / al * al);
        if (b > p) munmap(p, (size_t)(b - p));
        if (b + size < p + size + al) munmap(b + size, (size_t)(p + size + al - (b + size)));
        if (vmm_grow((void **)&g_resv, &g_capresv, g_nresv, sizeof *g_resv)) {
            munmap(b, size);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            g_resv[g_nresv].base = b;
            g_resv[g_nresv++].size = size;
            *ptr = (CUdeviceptr)(uintptr_t)b;
            c.dst = b;
        }
    }
    return drv_leave(F_cuMemAddressReserve, &c, r);
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemAddressFree, DRV_HEALTHY);
    char *p = (char *)(uintptr_t)ptr;
    vmm_resv_t *v = NULL;
    size_t i;
    c.dst = p;
    c.bytes = size;
    /* the ptr and size reserved; strict reading: nothing mapped in it */
    if (r == CUDA_SUCCESS && ((v = vmm_find_resv(p, size)) == NULL || v->base != p || v->size != size))
        r = CUDA_ERROR_INVALID_VALUE;
    for (i = 0; r == CUDA_SUCCESS && i < g_nvmap; i++)
        if (g_vmap[i].va >= p && g_vmap[i].va < p + size) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        munmap(p, size);
        *v = g_resv[--g_nresv];
    }
    return drv_leave(F_cuMemAddressFree, &c, r);
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemMap, DRV_HEALTHY);
    char *p = (char *)(uintptr_t)ptr;
    vmm_handle_t *e = NULL;
    c.dst = p;
    c.bytes = size;
    c.flags = (unsigned)flags;
    c.src = (const void *)(uintptr_t)handle;
    /* cuda.h: ptr, size, offset multiples of the granularity, offset "currently
       must be zero", offset + size within the allocation, inside a
       reservation, on a range not mapped now; a released handle is gone */
    if (r == CUDA_SUCCESS && (flags || !size || offset || !vmm_aligned(ptr) || !vmm_aligned(size) ||
                              (e = vmm_find_handle(handle)) == NULL || e->released || size > e->size ||
                              !vmm_find_resv(p, size) || find_overlap(p, size)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && (vmm_grow((void **)&g_vmap, &g_capvmap, g_nvmap, sizeof *g_vmap) ||
                              mmap(p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, e->fd, 0) == MAP_FAILED))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && add_alloc(p, size, CUDADBL_MAPPED, e->device < 0 ? t_cur : e->device,
                                       e->device < 0 ? DBL_VMM_HOST : 0)) {
        mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        g_vmap[g_nvmap].va = p;
        g_vmap[g_nvmap].size = size;
        g_vmap[g_nvmap++].h = (size_t)(e - g_vh);
        e->maps++;
        c.device = e->device;
    }
    return drv_leave(F_cuMemMap, &c, r);
}

/* The table allocation of the mapping at exactly p, or NULL. */
static alloc_t *vmm_mapping_at(const char *p) {
    alloc_t *a = find_base(p);
    return a && a->kind == CUDADBL_MAPPED ? a : NULL;
}

/* The mappings from p cover [p, p + size) exactly, back to back: how many, or 0. */
static size_t vmm_run(char *p, size_t size, int whole) {
    size_t n = 0, done = 0;
    alloc_t *a;
    while (done < size && (a = vmm_mapping_at(p + done)) != NULL) {
        done += a->size;
        n++;
    }
    if (whole ? done != size : done < size) return 0;
    return n;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemSetAccess, DRV_HEALTHY);
    char *p = (char *)(uintptr_t)ptr;
    unsigned bits = 0;
    size_t i, done;
    c.dst = p;
    c.bytes = size;
    if (r == CUDA_SUCCESS && (!desc || !count || !size)) r = CUDA_ERROR_INVALID_VALUE;
    for (i = 0; r == CUDA_SUCCESS && i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) r = CUDA_ERROR_INVALID_VALUE; /* not modelled */
        else if (!valid_device(desc[i].location.id)) r = CUDA_ERROR_INVALID_DEVICE;
        else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
                 desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            r = CUDA_ERROR_INVALID_VALUE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) bits |= DBL_VMM_RW;
    }
    /* "a fully mapped address range": whole mappings, back to back (strict reading) */
    if (r == CUDA_SUCCESS && !vmm_run(p, size, 1)) r = CUDA_ERROR_INVALID_VALUE;
    for (done = 0; r == CUDA_SUCCESS && done < size;) {
        alloc_t *a = vmm_mapping_at(p + done);
        a->flags = (a->flags & ~(unsigned)DBL_VMM_RW) | bits;
        mprotect(a->base, a->size, bits ? PROT_READ | PROT_WRITE : PROT_NONE);
        done += a->size;
    }
    c.flags = bits;
    return drv_leave(F_cuMemSetAccess, &c, r);
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
    cudadbl_call_t c = blank_call();
    CUresult r = drv_enter(F_cuMemUnmap, DRV_HEALTHY);
    char *p = (char *)(uintptr_t)ptr;
    size_t done, i;
    c.dst = p;
    c.bytes = size;
    /* cuda.h: "the entire contiguous address range that was mapped", never a
       sub-range of a mapping: whole mappings, back to back */
    if (r == CUDA_SUCCESS && (!size || !vmm_run(p, size, 1))) r = CUDA_ERROR_INVALID_VALUE;
    for (done = 0; r == CUDA_SUCCESS && done < size;) {
        alloc_t *a = vmm_mapping_at(p + done);
        char *va = a->base;
        size_t n = a->size;
        release_alloc(a, 0); /* a CUDADBL_MAPPED entry: nothing freed */
        mmap(va, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0); /* reserved again */
        for (i = 0; i < g_nvmap; i++)
            if (g_vmap[i].va == va) {
                vmm_handle_t *e = &g_vh[g_vmap[i].h];
                g_vmap[i] = g_vmap[--g_nvmap];
                if (--e->maps == 0 && e->released) vmm_free_handle(e);
                break;
            }
        done += n;
    }
    return drv_leave(F_cuMemUnmap, &c, r);
}

/* A copy side in a mapped range (check_side): mappings back to back from
   p, each with read-write access, hold the span; 0, or the error. */
static cudaError_t vmm_side(const void *p, size_t span) {
    char *q = (char *)(uintptr_t)p;
    alloc_t *a = find(q);
    size_t have = 0;
    while (a && a->kind == CUDADBL_MAPPED && (a->flags & DBL_VMM_RW) == DBL_VMM_RW) {
        have += a->size - (size_t)(q + have - a->base);
        if (have >= span) return cudaSuccess;
        a = vmm_mapping_at(q + have);
    }
    return cudaErrorInvalidValue; /* no access granted: strict reading, the copy fails */
}

/* cudadbl_reset: every mapping, handle and reservation goes. */
static void vmm_reset(void) {
    size_t i;
    for (i = 0; i < g_nvh; i++)
        if (g_vh[i].handle) close(g_vh[i].fd);
    for (i = 0; i < g_nresv; i++) munmap(g_resv[i].base, g_resv[i].size);
    g_nvh = g_nresv = g_nvmap = g_nvh_freed = 0;
    g_vh_next = 0;
}

size_t cudadbl_vmm_live(size_t *bytes) {
    size_t i, n = 0, b = 0;
    lock();
    for (i = 0; i < g_nvh; i++)
        if (g_vh[i].handle) {
            n++;
            b += g_vh[i].size;
        }
    unlock();
    if (bytes) *bytes = b;
    return n;
}

size_t cudadbl_vmm_mappings(void) {
    size_t n;
    lock();
    n = g_nvmap;
    unlock();
    return n;
}

#ifdef __cplusplus
} /* extern "C" */
#endif
