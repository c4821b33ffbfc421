/* driver_double.c - a test double of the CUDA driver (libcuda.so.1) for
   tests/preload/test_preload_driver.sh: built as a shared libcuda.so.1, no GPU.
   It defines, with cuda.h's prototypes (a mismatch is a "conflicting
   types" error), the copies and allocations the preload intercepts and
   the driver functions memobs_cuda.h calls on its own (contexts, streams,
   events, capture status, memory info, pointer attributes).

   Model: 2 devices of 1 GiB each, one primary context per device; device,
   managed and pinned blocks are host memory (copies move the bytes); work
   on any stream completes at once (an event recorded is complete); no
   stream capture. Rules, each from the driver's documentation (cuda.h),
   stricter where it says nothing:
   - every call before cuInit(0): CUDA_ERROR_NOT_INITIALIZED; cuInit with
     flags other than 0: CUDA_ERROR_INVALID_VALUE.
   - calls that need a context with none current on the thread (a new
     thread has none): CUDA_ERROR_INVALID_CONTEXT; a context not retained
     (cuDevicePrimaryCtxRetain): CUDA_ERROR_INVALID_CONTEXT.
   - allocations of 0 bytes: CUDA_ERROR_INVALID_VALUE (cuMemAlloc,
     cuMemAllocManaged document it; the double applies it to all); more
     than the device has left: CUDA_ERROR_OUT_OF_MEMORY; cuMemAllocPitch
     with ElementSizeBytes not 4, 8 or 16 or a zero width or height:
     CUDA_ERROR_INVALID_VALUE (its pitch: the width rounded up to 512);
     cuMemHostAlloc flags beyond PORTABLE|DEVICEMAP|WRITECOMBINED and
     cuMemAllocManaged flags other than exactly one of ATTACH_GLOBAL /
     ATTACH_HOST: CUDA_ERROR_INVALID_VALUE.
   - frees of an address that is not the start of a block of the right
     kind (cuMemFree: device or managed or stream-ordered; cuMemFreeHost:
     pinned; cuMemFreeAsync: stream-ordered): CUDA_ERROR_INVALID_VALUE.
   - copies: the device side must lie inside a device or managed block,
     the host side must not be NULL nor inside one (stricter than UVA
     allows); cuMemcpy/cuMemcpyAsync take any side; a side inside a block
     (pinned ones too) must fit in it; a peer copy's sides must be on its contexts' devices;
     otherwise CUDA_ERROR_INVALID_VALUE. A copy of 0 bytes succeeds and
     does nothing (undocumented; assumed). An unknown stream:
     CUDA_ERROR_INVALID_HANDLE.
   - cuPointerGetAttribute on an address the driver never gave:
     CUDA_ERROR_INVALID_VALUE; cuPointerGetAttributes answers zeros and
     CUDA_SUCCESS there, as documented. Memory type: DEVICE for device and
     managed blocks (IS_MANAGED tells them apart), HOST for pinned.
   - after this library's destructor (the driver unloading at the end of
     the process: the LD_PRELOAD library's exit outputs are written after
     every library's destructor): every call fails with
     CUDA_ERROR_DEINITIALIZED ("the CUDA driver is in the process of
     shutting down"), and says so on stderr ("driver double: NAME called
     after the driver's teardown"); strict reading, the driver documents
     no moment.
   - in a child forked from a process that called cuInit: every call fails
     with CUDA_ERROR_NOT_INITIALIZED and says so on stderr (NVIDIA's CUDA
     C++ guidelines, rule 1.6: any use of CUDA after fork and before exec
     is undefined). */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#undef cuStreamGetCaptureInfo
#undef cuEventElapsedTime
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
/* per-thread default stream entry points (declared by cuda.h only in units built for that stream) */
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

#define NDEV 2
#define DEV_BYTES ((size_t)1 << 30)
#define MAX_BLOCKS 4096
#define MAX_STREAMS 64
#define MAX_EVENTS 256

struct CUctx_st { int device, retains; };
struct CUstream_st { struct CUctx_st *ctx; int alive; };
struct CUevent_st { int alive, recorded; };
struct CUmemPoolHandle_st { int device; };

enum { K_DEVICE, K_MANAGED, K_ASYNC, K_PINNED };
typedef struct { char *base; size_t size; int kind, device; } block_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inited;
static struct CUctx_st ctxs[NDEV] = {{0, 0}, {1, 0}};
static struct CUmemPoolHandle_st pools[NDEV] = {{0}, {1}};
static struct CUstream_st streams[MAX_STREAMS];
static struct CUevent_st events[MAX_EVENTS];
static block_t blocks[MAX_BLOCKS];
static int blocks_hi; /* slots from here on have never been used: find() stops there */
static size_t used[NDEV];
static _Thread_local struct CUctx_st *stack[8];
static _Thread_local int depth;
static _Thread_local int capmode; /* CU_STREAM_CAPTURE_MODE_GLOBAL */

#define LOCKED(expr) (pthread_mutex_lock(&mu), rc = (expr), pthread_mutex_unlock(&mu), rc)

static int torn_down, forked; /* after the destructor; in a child of an initialized process */

/* A call that must not be made: said on stderr (the first 20). */
static CUresult refused(const char *fn) {
    static int said;
    char line[200];
    int n;
    if (__atomic_fetch_add(&said, 1, __ATOMIC_RELAXED) < 20) {
        n = snprintf(line, sizeof line, "driver double: %s called %s (pid %ld)\n", fn,
                     forked ? "in a forked child of a process that used CUDA" : "after the driver's teardown",
                     (long)getpid());
        if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    return forked ? CUDA_ERROR_NOT_INITIALIZED : CUDA_ERROR_DEINITIALIZED;
}
static void fork_child(void) { forked = __atomic_load_n(&inited, __ATOMIC_RELAXED); }
__attribute__((constructor)) static void loaded(void) { pthread_atfork(NULL, NULL, fork_child); }
__attribute__((destructor)) static void unloaded(void) { __atomic_store_n(&torn_down, 1, __ATOMIC_RELEASE); }

static struct CUctx_st *cur(void) { return depth ? stack[depth - 1] : NULL; }
static int ctx_ok(CUcontext c) { return c >= ctxs && c < ctxs + NDEV && c->retains > 0; }
/* CUDA_SUCCESS when initialized and (need_ctx) a context is current */
#define enter(need_ctx) enter_at((need_ctx), __func__)
static CUresult enter_at(int need_ctx, const char *fn) {
    if (__atomic_load_n(&torn_down, __ATOMIC_ACQUIRE) || forked) return refused(fn);
    if (!__atomic_load_n(&inited, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED;
    if (need_ctx && !cur()) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}
#define ENTER(need)                                                                                          \
    do {                                                                                                     \
        CUresult e_ = enter(need);                                                                           \
        if (e_ != CUDA_SUCCESS) return e_;                                                                   \
    } while (0)

/* The block holding [p, p+n), or NULL; caller holds mu. */
static block_t *find(const void *p, size_t n) {
    int i;
    const char *c = (const char *)p;
    for (i = 0; i < blocks_hi; i++)
        if (blocks[i].base && c >= blocks[i].base && c < blocks[i].base + blocks[i].size)
            return n <= (size_t)(blocks[i].base + blocks[i].size - c) ? &blocks[i] : NULL;
    return NULL;
}
static block_t *find_any(const void *p) { return find(p, 1); }
static int on_device(const block_t *b) { return b && b->kind != K_PINNED; }

static CUresult stream_ok(CUstream s) {
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return CUDA_SUCCESS;
    return s >= streams && s < streams + MAX_STREAMS && s->alive ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- init, devices, contexts ---- */

CUresult CUDAAPI cuInit(unsigned int Flags) {
    if (__atomic_load_n(&torn_down, __ATOMIC_ACQUIRE) || forked) return refused(__func__);
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    __atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int *count) {
    ENTER(0);
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = NDEV;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    ENTER(0);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    ENTER(0);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    ctxs[dev].retains++;
    pthread_mutex_unlock(&mu);
    *pctx = &ctxs[dev];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    CUresult rc = CUDA_SUCCESS;
    ENTER(0);
    if (dev < 0 || dev >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    if (ctxs[dev].retains <= 0) rc = CUDA_ERROR_INVALID_CONTEXT;
    else ctxs[dev].retains--;
    pthread_mutex_unlock(&mu);
    return rc;
}
CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    ENTER(0);
    if (dev < 0 || dev >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    *active = __atomic_load_n(&ctxs[dev].retains, __ATOMIC_RELAXED) > 0;
    return CUDA_SUCCESS;
}
/* NULL pops the current context; otherwise it replaces the top (pushes on an empty stack). */
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    ENTER(0);
    if (!ctx) {
        if (depth) depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    stack[depth ? depth - 1 : depth++] = ctx;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
    ENTER(0);
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = cur();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
    ENTER(0);
    if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == (int)(sizeof stack / sizeof stack[0])) return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx) {
    ENTER(1);
    depth--;
    if (pctx) *pctx = stack[depth];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
    ENTER(1);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = cur()->device;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
    ENTER(0);
    if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = &pools[dev];
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total) {
    ENTER(1);
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    *free = DEV_BYTES - used[cur()->device];
    pthread_mutex_unlock(&mu);
    *total = DEV_BYTES;
    return CUDA_SUCCESS;
}

/* ---- streams, events, capture (work completes at once) ---- */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    int i;
    ENTER(1);
    if (!phStream || Flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (i = 0; i < MAX_STREAMS; i++)
        if (!streams[i].alive) {
            streams[i].alive = 1;
            streams[i].ctx = cur();
            *phStream = &streams[i];
            rc = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}
CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
    ENTER(0);
    if (!hStream || stream_ok(hStream) != CUDA_SUCCESS || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    hStream->alive = 0;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
    ENTER(1);
    return stream_ok(hStream);
}
CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
    CUresult rc = enter(0);
    if (rc == CUDA_SUCCESS) rc = stream_ok(hStream);
    if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc != CUDA_SUCCESS) return rc;
    if (hStream && hStream != CU_STREAM_LEGACY && hStream != CU_STREAM_PER_THREAD) {
        *pctx = hStream->ctx;
        return CUDA_SUCCESS;
    }
    if (!cur()) return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = cur();
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out, size_t *numDependencies_out) {
    CUresult rc = enter(0);
    (void)id_out, (void)graph_out, (void)dependencies_out, (void)numDependencies_out;
    if (rc == CUDA_SUCCESS) rc = stream_ok(hStream);
    if (rc == CUDA_SUCCESS && !captureStatus_out) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *captureStatus_out = CU_STREAM_CAPTURE_STATUS_NONE;
    return rc;
}
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out) {
    return cuStreamGetCaptureInfo_v2(hStream, captureStatus_out, id_out, NULL, NULL, NULL);
}
CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    int old = capmode;
    ENTER(0);
    if (!mode || (int)*mode < 0 || (int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    capmode = (int)*mode;
    *mode = (CUstreamCaptureMode)old;
    return CUDA_SUCCESS;
}
static struct CUevent_st *event_of(CUevent e) {
    return e >= events && e < events + MAX_EVENTS && e->alive ? e : NULL;
}
CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    int i;
    ENTER(1);
    (void)Flags;
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (i = 0; i < MAX_EVENTS; i++)
        if (!events[i].alive) {
            events[i].alive = 1;
            events[i].recorded = 0;
            *phEvent = &events[i];
            rc = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}
CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    CUresult rc = enter(0);
    if (rc == CUDA_SUCCESS) rc = stream_ok(hStream);
    if (rc == CUDA_SUCCESS && !event_of(hEvent)) rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS) hEvent->recorded = 1;
    return rc;
}
CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    ENTER(0);
    return event_of(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) { return cuEventQuery(hEvent); }
CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    ENTER(0);
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    if (!event_of(hStart) || !event_of(hEnd) || !hStart->recorded || !hEnd->recorded) return CUDA_ERROR_INVALID_HANDLE;
    *pMilliseconds = 0.001f;
    return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
    ENTER(0);
    if (!event_of(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    hEvent->alive = 0;
    return CUDA_SUCCESS;
}

/* ---- pointer attributes ---- */

static CUresult attr_of(const block_t *b, CUpointer_attribute a, void *data) {
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = !b ? 0u : on_device(b) ? (unsigned)CU_MEMORYTYPE_DEVICE : (unsigned)CU_MEMORYTYPE_HOST;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = b && b->kind == K_MANAGED; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = b ? b->device : 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE; /* not modelled */
    }
}
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    block_t *b;
    ENTER(0);
    if (!data) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    if ((b = find_any((const void *)(uintptr_t)ptr)) != NULL) rc = attr_of(b, attribute, data);
    pthread_mutex_unlock(&mu);
    return rc;
}
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                        CUdeviceptr ptr) {
    CUresult rc = CUDA_SUCCESS;
    unsigned i;
    block_t *b;
    ENTER(0);
    if (!numAttributes || !attributes || !data) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    b = find_any((const void *)(uintptr_t)ptr);
    for (i = 0; rc == CUDA_SUCCESS && i < numAttributes; i++)
        rc = data[i] ? attr_of(b, attributes[i], data[i]) : CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&mu);
    return rc;
}

/* ---- allocations ---- */

/* A new block of n bytes on device dev (-1: pinned host memory); caller holds mu. */
static CUresult add_block(size_t n, int kind, int dev, void **out) {
    int i;
    char *p;
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    if (dev >= 0 && n > DEV_BYTES - used[dev]) return CUDA_ERROR_OUT_OF_MEMORY;
    for (i = 0; i < MAX_BLOCKS && blocks[i].base; i++) {}
    if (i == MAX_BLOCKS || !(p = (char *)calloc(1, n))) return CUDA_ERROR_OUT_OF_MEMORY;
    blocks[i].base = p;
    if (i >= blocks_hi) blocks_hi = i + 1;
    blocks[i].size = n;
    blocks[i].kind = kind;
    blocks[i].device = dev;
    if (dev >= 0) used[dev] += n;
    *out = p;
    return CUDA_SUCCESS;
}
static CUresult drop_block(const void *p, int k1, int k2, int k3) {
    block_t *b = find_any(p);
    if (!b || b->base != (const char *)p || (b->kind != k1 && b->kind != k2 && b->kind != k3))
        return CUDA_ERROR_INVALID_VALUE;
    if (b->device >= 0 && b->kind != K_PINNED) used[b->device] -= b->size;
    free(b->base);
    memset(b, 0, sizeof *b);
    return CUDA_SUCCESS;
}
static CUresult dev_alloc(CUdeviceptr *dptr, size_t n, int kind, int dev) {
    void *p = NULL;
    CUresult rc;
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    if (LOCKED(add_block(n, kind, dev, &p)) == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    ENTER(1);
    return dev_alloc(dptr, bytesize, K_DEVICE, cur()->device);
}
CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes) {
    size_t pitch = (WidthInBytes + 511) / 512 * 512;
    CUresult rc;
    ENTER(1);
    if (!pPitch || !WidthInBytes || !Height || (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    if (Height > DEV_BYTES / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    if ((rc = dev_alloc(dptr, pitch * Height, K_DEVICE, cur()->device)) == CUDA_SUCCESS) *pPitch = pitch;
    return rc;
}
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    ENTER(1);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    return dev_alloc(dptr, bytesize, K_MANAGED, cur()->device);
}
CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    CUresult rc;
    ENTER(1);
    if (!pp || (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    return LOCKED(add_block(bytesize, K_PINNED, -1, pp));
}
CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }
static CUresult alloc_async(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream s) {
    CUresult rc = enter(1);
    int dev;
    if (rc == CUDA_SUCCESS) rc = stream_ok(s);
    if (rc != CUDA_SUCCESS) return rc;
    if (pool && (pool < pools || pool >= pools + NDEV)) return CUDA_ERROR_INVALID_VALUE;
    dev = pool ? pool->device : s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD ? s->ctx->device : cur()->device;
    return dev_alloc(dptr, n, K_ASYNC, dev);
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return alloc_async(dptr, bytesize, NULL, hStream);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return alloc_async(dptr, bytesize, NULL, hStream);
}
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, hStream);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
    CUresult rc;
    ENTER(1);
    return LOCKED(drop_block((const void *)(uintptr_t)dptr, K_DEVICE, K_MANAGED, K_ASYNC));
}
CUresult CUDAAPI cuMemFreeHost(void *p) {
    CUresult rc;
    ENTER(1);
    return LOCKED(drop_block(p, K_PINNED, K_PINNED, K_PINNED));
}
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    CUresult rc = enter(1);
    if (rc == CUDA_SUCCESS) rc = stream_ok(hStream);
    if (rc != CUDA_SUCCESS) return rc;
    return LOCKED(drop_block((const void *)(uintptr_t)dptr, K_ASYNC, K_ASYNC, K_ASYNC));
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return cuMemFreeAsync(dptr, hStream); }

/* ---- copies ---- */

enum { SIDE_HOST, SIDE_DEVICE, SIDE_ANY };
/* A side of n bytes: SIDE_DEVICE inside a device or managed block (of
   device dev when dev >= 0), SIDE_HOST not NULL and inside a pinned block
   or none, SIDE_ANY inside a block or none; caller holds mu. */
static int side_ok(const void *p, size_t n, int side, int dev) {
    block_t *b = find(p, n);
    if (side == SIDE_DEVICE) return on_device(b) && (dev < 0 || b->device == dev);
    if (side == SIDE_HOST) return p && !on_device(find_any(p)) && (b || !find_any(p));
    return b || (p && !find_any(p));
}
static CUresult copy(void *dst, int dside, int ddev, const void *src, int sside, int sdev, size_t n, CUstream s) {
    CUresult rc = enter(1);
    if (rc == CUDA_SUCCESS) rc = stream_ok(s);
    if (rc != CUDA_SUCCESS || !n) return rc;
    pthread_mutex_lock(&mu);
    if (!side_ok(dst, n, dside, ddev) || !side_ok(src, n, sside, sdev)) rc = CUDA_ERROR_INVALID_VALUE;
    else memmove(dst, src, n);
    pthread_mutex_unlock(&mu);
    return rc;
}
#define P(x) ((void *)(uintptr_t)(x))

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    return copy(P(dst), SIDE_DEVICE, -1, src, SIDE_HOST, -1, n, NULL);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) { return cuMemcpyHtoD_v2(dst, src, n); }
CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    return copy(dst, SIDE_HOST, -1, P(src), SIDE_DEVICE, -1, n, NULL);
}
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) { return cuMemcpyDtoH_v2(dst, src, n); }
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return copy(P(dst), SIDE_DEVICE, -1, P(src), SIDE_DEVICE, -1, n, NULL);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) { return cuMemcpyDtoD_v2(dst, src, n); }
CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    return copy(P(dst), SIDE_DEVICE, -1, src, SIDE_HOST, -1, n, s);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    return cuMemcpyHtoDAsync_v2(dst, src, n, s);
}
CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    return copy(dst, SIDE_HOST, -1, P(src), SIDE_DEVICE, -1, n, s);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    return cuMemcpyDtoHAsync_v2(dst, src, n, s);
}
CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return copy(P(dst), SIDE_DEVICE, -1, P(src), SIDE_DEVICE, -1, n, s);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    return copy(P(dst), SIDE_ANY, -1, P(src), SIDE_ANY, -1, n, NULL);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) { return cuMemcpy(dst, src, n); }
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    return copy(P(dst), SIDE_ANY, -1, P(src), SIDE_ANY, -1, n, s);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return cuMemcpyAsync(dst, src, n, s); }
CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                                   CUstream s) {
    ENTER(1);
    if (!ctx_ok(dctx) || !ctx_ok(sctx)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy(P(dst), SIDE_DEVICE, dctx->device, P(src), SIDE_DEVICE, sctx->device, n, s);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {
    return cuMemcpyPeerAsync(dst, dctx, src, sctx, n, s);
}
CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
    return cuMemcpyPeerAsync(dst, dctx, src, sctx, n, NULL);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
    return cuMemcpyPeer(dst, dctx, src, sctx, n);
}

/* ---- entry points: cuGetProcAddress ---- */

/* cuGetProcAddress (the 11.3 export, 4 arguments) and cuGetProcAddress_v2
   (12.0, with symbolStatus): the rules of procaddr.h, over the functions
   this double defines, as a CUDA 13.0 driver (a cudaVersion above 13000:
   CUDA_ERROR_INVALID_VALUE). They work before cuInit (the runtime fetches
   cuInit through them); after the teardown and in a forked child they
   fail as every call. cuMemAlloc, the 32-bit allocation that a cudaVersion
   below 3020 gets, is here only to be handed out: no 32-bit device
   address space is modelled, it fails with CUDA_ERROR_NOT_SUPPORTED. */
#include "procaddr.h"
#undef cuGetProcAddress
#undef cuMemAlloc
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuMemAlloc(unsigned int *dptr, unsigned int bytesize);
CUresult CUDAAPI cuMemAlloc(unsigned int *dptr, unsigned int bytesize) {
    ENTER(1);
    (void)dptr;
    (void)bytesize;
    return CUDA_ERROR_NOT_SUPPORTED;
}

#define DD_PROCS(X)                                                                                          \
    X("cuGetProcAddress", 11030, 0, cuGetProcAddress) X("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2)   \
    X("cuInit", 2000, 0, cuInit) X("cuCtxGetCurrent", 4000, 0, cuCtxGetCurrent)                              \
    X("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2) X("cuMemAlloc", 2000, 0, cuMemAlloc)                         \
    X("cuMemAlloc", 3020, 0, cuMemAlloc_v2) X("cuMemAllocPitch", 3020, 0, cuMemAllocPitch_v2)                \
    X("cuMemAllocHost", 3020, 0, cuMemAllocHost_v2) X("cuMemHostAlloc", 2020, 0, cuMemHostAlloc)             \
    X("cuMemAllocManaged", 6000, 0, cuMemAllocManaged) X("cuMemFree", 3020, 0, cuMemFree_v2)                 \
    X("cuMemFreeHost", 2000, 0, cuMemFreeHost) X("cuMemAllocAsync", 11020, 0, cuMemAllocAsync)               \
    X("cuMemAllocAsync", 11020, 1, cuMemAllocAsync_ptsz)                                                     \
    X("cuMemAllocFromPoolAsync", 11020, 0, cuMemAllocFromPoolAsync)                                          \
    X("cuMemAllocFromPoolAsync", 11020, 1, cuMemAllocFromPoolAsync_ptsz)                                     \
    X("cuMemFreeAsync", 11020, 0, cuMemFreeAsync) X("cuMemFreeAsync", 11020, 1, cuMemFreeAsync_ptsz)         \
    X("cuMemcpyHtoD", 3020, 0, cuMemcpyHtoD_v2) X("cuMemcpyHtoD", 7000, 1, cuMemcpyHtoD_v2_ptds)             \
    X("cuMemcpyDtoH", 3020, 0, cuMemcpyDtoH_v2) X("cuMemcpyDtoH", 7000, 1, cuMemcpyDtoH_v2_ptds)             \
    X("cuMemcpyDtoD", 3020, 0, cuMemcpyDtoD_v2) X("cuMemcpyDtoD", 7000, 1, cuMemcpyDtoD_v2_ptds)             \
    X("cuMemcpyHtoDAsync", 3020, 0, cuMemcpyHtoDAsync_v2)                                                    \
    X("cuMemcpyHtoDAsync", 7000, 1, cuMemcpyHtoDAsync_v2_ptsz)                                               \
    X("cuMemcpyDtoHAsync", 3020, 0, cuMemcpyDtoHAsync_v2)                                                    \
    X("cuMemcpyDtoHAsync", 7000, 1, cuMemcpyDtoHAsync_v2_ptsz)                                               \
    X("cuMemcpyDtoDAsync", 3020, 0, cuMemcpyDtoDAsync_v2)                                                    \
    X("cuMemcpyDtoDAsync", 7000, 1, cuMemcpyDtoDAsync_v2_ptsz) X("cuMemcpy", 4000, 0, cuMemcpy)              \
    X("cuMemcpy", 7000, 1, cuMemcpy_ptds) X("cuMemcpyAsync", 4000, 0, cuMemcpyAsync)                         \
    X("cuMemcpyAsync", 7000, 1, cuMemcpyAsync_ptsz) X("cuMemcpyPeer", 4000, 0, cuMemcpyPeer)                 \
    X("cuMemcpyPeer", 7000, 1, cuMemcpyPeer_ptds) X("cuMemcpyPeerAsync", 4000, 0, cuMemcpyPeerAsync)         \
    X("cuMemcpyPeerAsync", 7000, 1, cuMemcpyPeerAsync_ptsz)
#define DD_OWN(s, v, pt, fn) PROCADDR_OWN(fn)
DD_PROCS(DD_OWN)

static CUresult dd_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status, int v1) {
    static const procaddr_t rows[] = {DD_PROCS(PROCADDR_ROW)};
    if (__atomic_load_n(&torn_down, __ATOMIC_ACQUIRE) || forked)
        return refused(v1 ? "cuGetProcAddress" : "cuGetProcAddress_v2");
    return procaddr_find(rows, sizeof rows / sizeof rows[0], 13000, symbol, pfn, cudaVersion, flags, status, v1);
}
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    return dd_proc(symbol, pfn, cudaVersion, flags, NULL, 1);
}
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus) {
    return dd_proc(symbol, pfn, cudaVersion, flags, symbolStatus, 0);
}
