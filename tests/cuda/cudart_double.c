/* cudart_double.c - link-time test double of the CUDA runtime (libcudart)
   for the memobs CUDA wrapper tests: no GPU, no libcudart. Built as C
   (-std=c11) and as C++ (-x c++ -std=c++17) against the real CUDA 13.0
   headers. Every cudaXxx function below is defined with the prototype that
   <cuda_runtime_api.h> declares: in C a mismatch is a "conflicting types"
   error, in C++ the extern "C" block makes it a "conflicting declaration of
   C function" error. What it models, and the scripting API:
   cudart_double.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign under -std=c11 */
#endif
/* The plain names are defined below, the per-thread default stream ones at
   the end, whatever the build asks of the header. */
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include "cudart_double.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#define DBL_TLS thread_local
extern "C" {
#else
#define DBL_TLS _Thread_local
#endif

/* ---- functions the double defines, for counts and scripted failures ---- */

#define DBL_FUNCS(X)                                                                                        \
    X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaHostAlloc) X(cudaFreeHost) X(cudaMallocManaged)       \
    X(cudaMallocAsync) X(cudaFreeAsync) X(cudaHostRegister) X(cudaHostUnregister) X(cudaMemcpy)             \
    X(cudaMemcpyAsync) X(cudaMemcpy2D) X(cudaMemcpy2DAsync) X(cudaMemcpyPeer) X(cudaMemcpyPeerAsync)        \
    X(cudaMemset) X(cudaMemsetAsync) X(cudaPointerGetAttributes) X(cudaMemGetInfo) X(cudaGetDevice)         \
    X(cudaSetDevice) X(cudaGetDeviceCount) X(cudaGetErrorString) X(cudaGetErrorName) X(cudaGetLastError)    \
    X(cudaPeekAtLastError) X(cudaDeviceSynchronize) X(cudaStreamSynchronize) X(cudaStreamQuery)            \
    X(cudaStreamCreate) X(cudaStreamDestroy) X(cudaEventCreate) X(cudaEventCreateWithFlags)                 \
    X(cudaEventRecord) X(cudaEventQuery) X(cudaEventSynchronize) X(cudaEventElapsedTime) X(cudaEventDestroy)    \
    X(cudaStreamGetDevice)

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
} alloc_t;

/* Freed device blocks kept for reuse (cudadbl_set_reuse). */
typedef struct {
    char *base;
    size_t size;
    int device;
} cached_t;
#define DBL_CACHE_MAX 4096

enum { OP_WORK = 0, OP_FREE = 1, OP_EVENT = 2 };
typedef struct {
    int kind;
    float ts;                /* fake clock when queued */
    void *ptr;               /* OP_FREE: the block */
    struct CUevent_st *ev;   /* OP_EVENT: the event (NULL once destroyed or re-recorded) */
} op_t;

struct CUstream_st {
    int device;
    int user;      /* created by cudaStreamCreate (else a default stream) */
    int destroyed; /* cudaStreamDestroy called; freed once its ops complete */
    op_t *ops;     /* pending ops, oldest first */
    size_t nops, cap;
    struct CUstream_st *next;
};

struct CUevent_st {
    int device;
    unsigned flags;
    int recorded, done;
    float ts;
    struct CUevent_st *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static fn_state_t g_fn[F_COUNT];
static alloc_t *g_alloc; /* sorted by base; ranges are disjoint */
static size_t g_nalloc, g_capalloc;
static struct CUstream_st g_default[CUDADBL_MAX_DEVICES];
static struct CUstream_st *g_streams; /* user streams, destroyed-but-pending ones included */
static struct CUevent_st *g_events;
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

static DBL_TLS unsigned t_gen;
static DBL_TLS int t_dev;
static DBL_TLS cudaError_t t_last;

static void lock(void) { pthread_mutex_lock(&g_mu); }
static void unlock(void) { pthread_mutex_unlock(&g_mu); }

static void init_totals(void) {
    int i;
    if (g_totals_set) return;
    for (i = 0; i < CUDADBL_MAX_DEVICES; i++) {
        g_total[i] = CUDADBL_DEFAULT_TOTAL;
        g_default[i].device = i;
    }
    g_totals_set = 1;
}

/* Under the lock: this thread's state belongs to the current generation. */
static void thread_sync(void) {
    init_totals();
    if (t_gen != g_gen) {
        t_gen = g_gen;
        t_dev = 0;
        t_last = cudaSuccess;
    }
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

/* Locks, counts the call, syncs the thread state. Returns the scripted
   error if this call is to fail, cudaErrorNoDevice when there are no
   devices (for calls that need one), else cudaSuccess. */
static cudaError_t enter(int f, int needs_device) {
    fn_state_t *s = &g_fn[f];
    lock();
    thread_sync();
    s->calls++;
    if (s->fail_n) {
        if (s->fail_skip) s->fail_skip--;
        else {
            s->fail_n--;
            return s->fail_err;
        }
    }
    if (needs_device && g_ndev == 0) return cudaErrorNoDevice;
    return cudaSuccess;
}

/* Keeps the last call, sets the last error, unlocks; returns e. */
static cudaError_t leave(int f, cudadbl_call_t *c, cudaError_t e) {
    c->result = e;
    c->device = t_dev;
    g_fn[f].last = *c;
    g_fn[f].has_last = 1;
    if (e != cudaSuccess && e != cudaErrorNotReady && f != F_cudaGetLastError && f != F_cudaPeekAtLastError)
        t_last = e;
    unlock();
    return e;
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
    g_nalloc++;
    if (kind == CUDADBL_DEVICE) g_used[device] += size;
    return 0;
}

/* Removes a (a pointer into the table) and releases its memory. */
static void remove_alloc(alloc_t *a) {
    size_t i = (size_t)(a - g_alloc);
    if (a->kind == CUDADBL_DEVICE) g_used[a->device] -= a->size;
    if (a->kind == CUDADBL_DEVICE && g_reuse) {
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
    } else if (a->kind != CUDADBL_REGISTERED) {
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

/* ---- streams and events ---------------------------------------------------- */

/* The stream behind a handle (default streams for NULL, legacy and
   per-thread), or NULL for an unknown or destroyed one. */
static struct CUstream_st *resolve(cudaStream_t s, int allow_destroyed) {
    struct CUstream_st *it;
    if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) return &g_default[t_dev];
    for (it = g_streams; it; it = it->next)
        if (it == s) return it->destroyed && !allow_destroyed ? NULL : it;
    return NULL;
}

static struct CUevent_st *find_event(cudaEvent_t e) {
    struct CUevent_st *it;
    for (it = g_events; it; it = it->next)
        if (it == e) return it;
    return NULL;
}

/* Completes the first n ops of s, oldest first. */
static void complete_ops(struct CUstream_st *s, size_t n) {
    size_t i;
    if (n > s->nops) n = s->nops;
    if (n == 0) return;
    for (i = 0; i < n; i++) {
        op_t *o = &s->ops[i];
        if (o->kind == OP_FREE) {
            alloc_t *a = find_base(o->ptr);
            if (a && a->pending_free) remove_alloc(a);
        } else if (o->kind == OP_EVENT && o->ev) {
            o->ev->done = 1;
        }
    }
    memmove(s->ops, s->ops + n, (s->nops - n) * sizeof *s->ops);
    s->nops -= n;
}

/* Frees destroyed streams that have nothing pending. */
static void reap_streams(void) {
    struct CUstream_st **pp = &g_streams;
    while (*pp) {
        struct CUstream_st *s = *pp;
        if (s->destroyed && s->nops == 0) {
            *pp = s->next;
            free(s->ops);
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

/* Completes the ops of s stamped at or before the marker (and all before them). */
static void apply_marker_to(struct CUstream_st *s) {
    size_t i, n = 0;
    if (!g_marker_set) return;
    for (i = 0; i < s->nops; i++)
        if (s->ops[i].ts <= g_marker) n = i + 1;
    if (n) complete_ops(s, n);
}

static void apply_marker(void) {
    struct CUstream_st *s;
    int d;
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) apply_marker_to(&g_default[d]);
    for (s = g_streams; s; s = s->next) apply_marker_to(s);
    reap_streams();
}

static cudaError_t push_op(struct CUstream_st *s, int kind, void *ptr, struct CUevent_st *ev) {
    if (s->nops == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        op_t *n = (op_t *)realloc(s->ops, cap * sizeof *n);
        if (!n) return cudaErrorMemoryAllocation;
        s->ops = n;
        s->cap = cap;
    }
    s->ops[s->nops].kind = kind;
    s->ops[s->nops].ts = g_clock;
    s->ops[s->nops].ptr = ptr;
    s->ops[s->nops].ev = ev;
    s->nops++;
    apply_marker_to(s);
    return cudaSuccess;
}

/* Makes sure a push_op cannot fail after the work was done. */
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

/* Forgets the op (if any) that would complete ev. */
static void detach_event(struct CUevent_st *ev) {
    struct CUstream_st *s;
    size_t i;
    int d;
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++)
        for (i = 0; i < g_default[d].nops; i++)
            if (g_default[d].ops[i].ev == ev) g_default[d].ops[i].ev = NULL;
    for (s = g_streams; s; s = s->next)
        for (i = 0; i < s->nops; i++)
            if (s->ops[i].ev == ev) s->ops[i].ev = NULL;
}

/* Completes the ops up to and including ev's record; 0 if not found. */
static int complete_through_event(struct CUevent_st *ev) {
    struct CUstream_st *s;
    size_t i;
    int d;
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++)
        for (i = 0; i < g_default[d].nops; i++)
            if (g_default[d].ops[i].ev == ev) {
                complete_ops(&g_default[d], i + 1);
                return 1;
            }
    for (s = g_streams; s; s = s->next)
        for (i = 0; i < s->nops; i++)
            if (s->ops[i].ev == ev) {
                complete_ops(s, i + 1);
                reap_streams();
                return 1;
            }
    return 0;
}

static void complete_device(int dev) {
    struct CUstream_st *s;
    complete_ops(&g_default[dev], g_default[dev].nops);
    for (s = g_streams; s; s = s->next)
        if (s->device == dev) complete_ops(s, s->nops);
    reap_streams();
}

/* ---- copies ------------------------------------------------------------------ */

/* One side of a copy or set: [p, p + span) with span > 0. If must_be_table,
   p must lie in a table allocation; any p that does must fit in it. */
static cudaError_t check_side(const void *p, size_t span, int must_be_table) {
    alloc_t *a;
    if (!p) return cudaErrorInvalidValue;
    a = find(p);
    if (!a) return must_be_table ? cudaErrorInvalidValue : cudaSuccess;
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
    if (a->kind == CUDADBL_DEVICE && a->device != dev) return cudaErrorInvalidValue;
    return cudaSuccess;
}

static int valid_device(int d) { return d >= 0 && d < g_ndev; }

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
        a->pending_free = 0;
        a->free_stream = NULL;
        *out = a->base;
        return 1;
    }
    return 0;
}

/* ============================================================================ */
/* The runtime functions                                                        */
/* ============================================================================ */

cudaError_t cudaMalloc(void **devPtr, size_t size) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMalloc, 1);
    c.bytes = size;
    if (e == cudaSuccess) e = do_alloc(devPtr, size, CUDADBL_DEVICE, t_dev, 0);
    if (e == cudaSuccess) c.dst = *devPtr;
    return leave(F_cudaMalloc, &c, e);
}

cudaError_t cudaFree(void *devPtr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFree, 1);
    c.dst = devPtr;
    if (e == cudaSuccess && devPtr) {
        alloc_t *a = find_base(devPtr);
        if (!a || a->pending_free || (a->kind != CUDADBL_DEVICE && a->kind != CUDADBL_MANAGED))
            e = cudaErrorInvalidValue;
        else {
            c.bytes = a->size;
            remove_alloc(a);
        }
    }
    return leave(F_cudaFree, &c, e);
}

cudaError_t cudaMallocHost(void **ptr, size_t size) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocHost, 1);
    c.bytes = size;
    if (e == cudaSuccess) e = do_alloc(ptr, size, CUDADBL_PINNED, t_dev, 0);
    if (e == cudaSuccess) c.dst = *ptr;
    return leave(F_cudaMallocHost, &c, e);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostAlloc, 1);
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess && (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
                                                 cudaHostAllocWriteCombined)))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = do_alloc(pHost, size, CUDADBL_PINNED, t_dev, flags);
    if (e == cudaSuccess) c.dst = *pHost;
    return leave(F_cudaHostAlloc, &c, e);
}

cudaError_t cudaFreeHost(void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFreeHost, 1);
    c.dst = ptr;
    if (e == cudaSuccess && ptr) {
        alloc_t *a = find_base(ptr);
        if (!a || a->kind != CUDADBL_PINNED) e = cudaErrorInvalidValue;
        else {
            c.bytes = a->size;
            remove_alloc(a);
        }
    }
    return leave(F_cudaFreeHost, &c, e);
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocManaged, 1);
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess && (size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = do_alloc(devPtr, size, CUDADBL_MANAGED, t_dev, flags);
    if (e == cudaSuccess) c.dst = *devPtr;
    return leave(F_cudaMallocManaged, &c, e);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMallocAsync, 1);
    struct CUstream_st *s = NULL;
    c.bytes = size;
    c.stream = hStream;
    if (e == cudaSuccess && !(s = resolve(hStream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && !devPtr) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess && !(g_reuse && size && reuse_pending(devPtr, size, s)))
        e = do_alloc(devPtr, size, CUDADBL_DEVICE, s->device, 0);
    if (e == cudaSuccess) {
        c.dst = *devPtr;
        push_op(s, OP_WORK, NULL, NULL);
        reap_streams();
    }
    return leave(F_cudaMallocAsync, &c, e);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaFreeAsync, 1);
    struct CUstream_st *s = NULL;
    c.dst = devPtr;
    c.stream = hStream;
    if (e == cudaSuccess && !(s = resolve(hStream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && devPtr) {
        alloc_t *a = find_base(devPtr);
        if (!a || a->pending_free || a->kind != CUDADBL_DEVICE) e = cudaErrorInvalidValue;
        else if ((e = reserve_op(s)) == cudaSuccess) {
            c.bytes = a->size;
            a->pending_free = 1;
            a->free_stream = s;
            push_op(s, OP_FREE, devPtr, NULL);
            reap_streams();
        }
    }
    return leave(F_cudaFreeAsync, &c, e);
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostRegister, 1);
    c.dst = ptr;
    c.bytes = size;
    c.flags = flags;
    if (e == cudaSuccess && (!ptr || size == 0 ||
                             (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped |
                                                  cudaHostRegisterIoMemory | cudaHostRegisterReadOnly))))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        alloc_t *o = find_overlap(ptr, size);
        if (o) e = o->kind == CUDADBL_PINNED || o->kind == CUDADBL_REGISTERED ? cudaErrorHostMemoryAlreadyRegistered
                                                                              : cudaErrorInvalidValue;
        else if (add_alloc(ptr, size, CUDADBL_REGISTERED, t_dev, flags))
            e = cudaErrorMemoryAllocation;
    }
    return leave(F_cudaHostRegister, &c, e);
}

cudaError_t cudaHostUnregister(void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaHostUnregister, 1);
    c.dst = ptr;
    if (e == cudaSuccess) {
        alloc_t *a = ptr ? find_base(ptr) : NULL;
        if (!a || a->kind != CUDADBL_REGISTERED) e = cudaErrorHostMemoryNotRegistered;
        else {
            c.bytes = a->size;
            remove_alloc(a);
        }
    }
    return leave(F_cudaHostUnregister, &c, e);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy, 1);
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.kind = (int)kind;
    if (e == cudaSuccess) e = check_copy(dst, count, src, count, count, 1, kind);
    if (e == cudaSuccess) {
        complete_ops(&g_default[t_dev], g_default[t_dev].nops); /* runs after the legacy stream's work */
        do_copy(dst, count, src, count, count, 1);
        copy_time(count);
    }
    return leave(F_cudaMemcpy, &c, e);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyAsync, 1);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.kind = (int)kind;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = check_copy(dst, count, src, count, count, 1, kind);
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        do_copy(dst, count, src, count, count, 1);
        copy_time(count);
        push_op(s, OP_WORK, NULL, NULL);
    }
    return leave(F_cudaMemcpyAsync, &c, e);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy2D, 1);
    c.dst = dst;
    c.src = src;
    c.bytes = width * height;
    c.kind = (int)kind;
    if (e == cudaSuccess) e = check_pitch(dpitch, spitch, width, height);
    if (e == cudaSuccess) e = check_copy(dst, dpitch, src, spitch, width, height, kind);
    if (e == cudaSuccess) {
        complete_ops(&g_default[t_dev], g_default[t_dev].nops);
        do_copy(dst, dpitch, src, spitch, width, height);
        copy_time(width * height);
    }
    return leave(F_cudaMemcpy2D, &c, e);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpy2DAsync, 1);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = width * height;
    c.kind = (int)kind;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = check_pitch(dpitch, spitch, width, height);
    if (e == cudaSuccess) e = check_copy(dst, dpitch, src, spitch, width, height, kind);
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        do_copy(dst, dpitch, src, spitch, width, height);
        copy_time(width * height);
        push_op(s, OP_WORK, NULL, NULL);
    }
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
    cudaError_t e = enter(F_cudaMemcpyPeer, 1);
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.flags = (unsigned)dstDevice << 16 | (unsigned)(srcDevice & 0xffff);
    if (e == cudaSuccess) e = check_peer(dst, dstDevice, src, srcDevice, count);
    if (e == cudaSuccess) {
        do_copy(dst, count, src, count, count, 1);
        copy_time(count);
    }
    return leave(F_cudaMemcpyPeer, &c, e);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemcpyPeerAsync, 1);
    struct CUstream_st *s = NULL;
    c.dst = dst;
    c.src = src;
    c.bytes = count;
    c.stream = stream;
    c.flags = (unsigned)dstDevice << 16 | (unsigned)(srcDevice & 0xffff);
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = check_peer(dst, dstDevice, src, srcDevice, count);
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        do_copy(dst, count, src, count, count, 1);
        copy_time(count);
        push_op(s, OP_WORK, NULL, NULL);
    }
    return leave(F_cudaMemcpyPeerAsync, &c, e);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemset, 1);
    c.dst = devPtr;
    c.bytes = count;
    c.flags = (unsigned)value;
    if (e == cudaSuccess && count) e = check_side(devPtr, count, 1);
    if (e == cudaSuccess && count) memset(devPtr, value, count);
    return leave(F_cudaMemset, &c, e);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaMemsetAsync, 1);
    struct CUstream_st *s = NULL;
    c.dst = devPtr;
    c.bytes = count;
    c.flags = (unsigned)value;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && count) e = check_side(devPtr, count, 1);
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        if (count) memset(devPtr, value, count);
        push_op(s, OP_WORK, NULL, NULL);
    }
    return leave(F_cudaMemsetAsync, &c, e);
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaPointerGetAttributes, 1);
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
    cudaError_t e = enter(F_cudaMemGetInfo, 1);
    if (e == cudaSuccess && (!free || !total)) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && !valid_device(t_dev)) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess) {
        *free = free_bytes(t_dev);
        *total = g_total[t_dev];
        c.bytes = *free;
    }
    return leave(F_cudaMemGetInfo, &c, e);
}

cudaError_t cudaGetDevice(int *device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetDevice, 1);
    if (e == cudaSuccess && !device) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) *device = t_dev;
    return leave(F_cudaGetDevice, &c, e);
}

cudaError_t cudaSetDevice(int device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaSetDevice, 1);
    c.flags = (unsigned)device;
    if (e == cudaSuccess && !valid_device(device)) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess) t_dev = device;
    return leave(F_cudaSetDevice, &c, e);
}

cudaError_t cudaGetDeviceCount(int *count) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetDeviceCount, 0);
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
    (void)enter(F_cudaGetErrorString, 0); /* cannot fail: cudadbl_fail refuses it */
    c.flags = (unsigned)error;
    i = err_index(error);
    leave(F_cudaGetErrorString, &c, cudaSuccess);
    return i < 0 ? "unrecognized error code" : err_table[i].text;
}

const char *cudaGetErrorName(cudaError_t error) {
    cudadbl_call_t c = blank_call();
    int i;
    (void)enter(F_cudaGetErrorName, 0);
    c.flags = (unsigned)error;
    i = err_index(error);
    leave(F_cudaGetErrorName, &c, cudaSuccess);
    return i < 0 ? "unrecognized error code" : err_table[i].name;
}

cudaError_t cudaGetLastError(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaGetLastError, 0);
    if (e == cudaSuccess) {
        e = t_last;
        t_last = cudaSuccess;
    }
    return leave(F_cudaGetLastError, &c, e);
}

cudaError_t cudaPeekAtLastError(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaPeekAtLastError, 0);
    if (e == cudaSuccess) e = t_last;
    return leave(F_cudaPeekAtLastError, &c, e);
}

cudaError_t cudaDeviceSynchronize(void) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaDeviceSynchronize, 1);
    if (e == cudaSuccess) complete_device(t_dev);
    return leave(F_cudaDeviceSynchronize, &c, e);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamSynchronize, 1);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) complete_ops(s, s->nops);
    return leave(F_cudaStreamSynchronize, &c, e);
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamQuery, 1);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && !(s = resolve(stream, 0))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && s->nops) e = cudaErrorNotReady;
    return leave(F_cudaStreamQuery, &c, e);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamCreate, 1);
    if (e == cudaSuccess && !pStream) e = cudaErrorInvalidValue;
    if (e == cudaSuccess) {
        struct CUstream_st *s = (struct CUstream_st *)calloc(1, sizeof *s);
        if (!s) e = cudaErrorMemoryAllocation;
        else {
            s->device = t_dev;
            s->user = 1;
            s->next = g_streams;
            g_streams = s;
            *pStream = s;
            c.stream = s;
        }
    }
    return leave(F_cudaStreamCreate, &c, e);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamDestroy, 1);
    struct CUstream_st *s = NULL;
    c.stream = stream;
    if (e == cudaSuccess && (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread ||
                             !(s = resolve(stream, 0))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) {
        s->destroyed = 1;
        reap_streams();
    }
    return leave(F_cudaStreamDestroy, &c, e);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaStreamGetDevice, 1);
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
    ev->device = t_dev;
    ev->flags = flags;
    ev->next = g_events;
    g_events = ev;
    *event = ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventCreate, 1);
    if (e == cudaSuccess) e = create_event(event, cudaEventDefault);
    if (e == cudaSuccess) c.dst = *event;
    return leave(F_cudaEventCreate, &c, e);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventCreateWithFlags, 1);
    c.flags = flags;
    if (e == cudaSuccess) e = create_event(event, flags);
    if (e == cudaSuccess) c.dst = *event;
    return leave(F_cudaEventCreateWithFlags, &c, e);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventRecord, 1);
    struct CUevent_st *ev = NULL;
    struct CUstream_st *s = NULL;
    c.dst = event;
    c.stream = stream;
    if (e == cudaSuccess && (!(ev = find_event(event)) || !(s = resolve(stream, 0)) || s->device != ev->device))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess) e = reserve_op(s);
    if (e == cudaSuccess) {
        detach_event(ev);
        ev->recorded = 1;
        ev->done = 0;
        ev->ts = g_clock;
        push_op(s, OP_EVENT, NULL, ev);
        reap_streams();
    }
    return leave(F_cudaEventRecord, &c, e);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventQuery, 1);
    struct CUevent_st *ev = NULL;
    c.dst = event;
    if (e == cudaSuccess && !(ev = find_event(event))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && ev->recorded && !ev->done) e = cudaErrorNotReady;
    return leave(F_cudaEventQuery, &c, e);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventSynchronize, 1);
    struct CUevent_st *ev = NULL;
    c.dst = event;
    if (e == cudaSuccess && !(ev = find_event(event))) e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && ev->recorded && !ev->done) {
        complete_through_event(ev);
        ev->done = 1;
    }
    return leave(F_cudaEventSynchronize, &c, e);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventElapsedTime, 1);
    struct CUevent_st *a = NULL, *b = NULL;
    c.dst = start;
    c.src = end;
    if (e == cudaSuccess && (!(a = find_event(start)) || !(b = find_event(end))))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && !ms) e = cudaErrorInvalidValue;
    if (e == cudaSuccess && (!a->recorded || !b->recorded || (a->flags & cudaEventDisableTiming) ||
                             (b->flags & cudaEventDisableTiming)))
        e = cudaErrorInvalidResourceHandle;
    if (e == cudaSuccess && (!a->done || !b->done)) e = cudaErrorNotReady;
    if (e == cudaSuccess) *ms = b->ts - a->ts;
    return leave(F_cudaEventElapsedTime, &c, e);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    cudadbl_call_t c = blank_call();
    cudaError_t e = enter(F_cudaEventDestroy, 1);
    struct CUevent_st **pp = &g_events;
    c.dst = event;
    if (e == cudaSuccess) {
        while (*pp && *pp != event) pp = &(*pp)->next;
        if (!*pp) e = cudaErrorInvalidResourceHandle;
        else {
            struct CUevent_st *ev = *pp;
            *pp = ev->next;
            detach_event(ev);
            free(ev);
        }
    }
    return leave(F_cudaEventDestroy, &c, e);
}

/* ============================================================================ */
/* Scripting API                                                                */
/* ============================================================================ */

static void slock(void) {
    lock();
    thread_sync();
}

void cudadbl_reset(void) {
    size_t i;
    int d;
    slock();
    for (i = 0; i < g_nalloc; i++)
        if (g_alloc[i].kind != CUDADBL_REGISTERED) free(g_alloc[i].base);
    free(g_alloc);
    g_alloc = NULL;
    g_nalloc = g_capalloc = 0;
    g_reuse = 0;
    drop_cache();
    while (g_streams) {
        struct CUstream_st *s = g_streams;
        g_streams = s->next;
        free(s->ops);
        free(s);
    }
    while (g_events) {
        struct CUevent_st *ev = g_events;
        g_events = ev->next;
        free(ev);
    }
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) {
        free(g_default[d].ops);
        memset(&g_default[d], 0, sizeof g_default[d]);
        g_default[d].device = d;
        g_total[d] = CUDADBL_DEFAULT_TOTAL;
        g_outside[d] = g_used[d] = 0;
    }
    memset(g_fn, 0, sizeof g_fn);
    g_ndev = CUDADBL_DEFAULT_DEVICES;
    g_clock = 0;
    g_copy_fixed_ms = 0;
    g_copy_bytes_per_ms = 0;
    g_marker_set = 0;
    g_marker = 0;
    g_gen++;
    thread_sync();
    unlock();
}

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
        complete_ops(st, st->nops);
        reap_streams();
    }
    unlock();
    return st ? 0 : -1;
}

void cudadbl_complete_all(void) {
    int d;
    slock();
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) complete_device(d);
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
    int d;
    slock();
    for (d = 0; d < CUDADBL_MAX_DEVICES; d++) n += (long)g_default[d].nops;
    for (s = g_streams; s; s = s->next) n += (long)s->nops;
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
    for (s = g_streams; s; s = s->next) n += !s->destroyed;
    unlock();
    return n;
}

size_t cudadbl_live_events(void) {
    struct CUevent_st *ev;
    size_t n = 0;
    slock();
    for (ev = g_events; ev; ev = ev->next) n++;
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
   real prototype, and does what that function does (the double's default
   stream serves as the per-thread one; counts and scripts go by the plain
   name). */
#define DBL_PT(name, suffix, params, args)                                       \
    __typeof__(name) name##suffix;                                                \
    cudaError_t name##suffix params { return name args; }
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

#ifdef __cplusplus
} /* extern "C" */
#endif
