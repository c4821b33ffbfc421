/* faketorch.c - a library shaped like PyTorch's libtorch_cuda.so, for
   tests/preload/test_preload_engine.sh: linked to the CUDA runtime by soname
   (-l:libcudart.so.N: a DT_NEEDED entry, its calls bound to that runtime's
   symbol version) and loaded from Python with ctypes, that is dlopen with
   RTLD_LOCAL, as an extension module is: the runtime is then in no global
   scope, only in this library's.

   What it does is what PyTorch's CUDA code does, in miniature:
   - init: cudaGetDeviceCount, cudaSetDevice, cudaFree(NULL) to make the
     context, a non-blocking copy stream;
   - a caching allocator: blocks of the size asked for, rounded up to
     512 bytes, each a cudaMalloc'd segment; a freed block goes to the
     cache and is handed out again for the same size with no CUDA call;
     on cudaErrorMemoryAllocation it clears the error (cudaGetLastError),
     frees the cache (cudaFree of each cached segment) and tries once more;
     empty_cache frees the cache;
   - copies: cudaMemcpyAsync of the kind given on the current (legacy) or
     the copy stream, then cudaStreamSynchronize (a blocking copy_);
   - pinned host memory: cudaHostAlloc / cudaFreeHost (the host caching
     allocator's calls);
   - with FT_VMM (ENGINE_DRIVER_ENTRY=1): expandable segments. The driver
     functions come from cudaGetDriverEntryPoint (and
     cudaGetDriverEntryPointByVersion with FT_BY_VERSION), never from a link
     to libcuda: reserve a range (cuMemAddressReserve), grow it by handles
     of the allocation granularity (cuMemCreate, cuMemMap, then one
     cuMemSetAccess over what was mapped), shrink it (cuMemUnmap,
     cuMemRelease; or the handle released first, while mapped), give the
     range back (cuMemAddressFree).

   Every CUDA call's name and return code is appended to a log
   (ft_log), which the test compares between runs with and without the
   preload. Functions return 0 or the first CUDA error. */
#ifdef FT_VMM
#define CUDA_ENABLE_DEPRECATED /* cudaGetDriverEntryPoint: deprecated in 13, still what engines call */
#include <cuda.h>
#endif
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FT_MAJOR
#define FT_MAJOR 13
#endif

static char ft__log[1 << 16];
static size_t ft__len;

/* Logs "NAME RC" and returns rc. */
static int ft__rc(const char *name, int rc) {
    int n = snprintf(ft__log + ft__len, sizeof ft__log - ft__len, "%s %d\n", name, rc);
    if (n > 0 && ft__len + (size_t)n < sizeof ft__log) ft__len += (size_t)n;
    return rc;
}
#define FT_CALL(name, ...) ft__rc(#name, (int)name(__VA_ARGS__))

/* The log so far (NUL-terminated). */
const char *ft_log(void) { return ft__log; }

static cudaStream_t ft__copy_stream;

int ft_init(int device) {
    int n = 0, rc;
    if ((rc = FT_CALL(cudaGetDeviceCount, &n)) != 0) return rc;
    if (device >= n) return ft__rc("ft_init_device", (int)cudaErrorInvalidDevice);
    if ((rc = FT_CALL(cudaSetDevice, device)) != 0) return rc;
    if ((rc = FT_CALL(cudaFree, NULL)) != 0) return rc;
    return FT_CALL(cudaStreamCreateWithFlags, &ft__copy_stream, cudaStreamNonBlocking);
}

/* The caching allocator */
#define FT_BLOCKS 256
static struct {
    void *p;
    size_t size;
    int in_use;
} ft__blocks[FT_BLOCKS];
static struct {
    unsigned long long reserved, peak, segments, segment_frees;
} ft__st;

/* cudaFree of every cached (unused) segment; 0 or the first error */
int ft_empty_cache(void) {
    int first = 0;
    for (int i = 0; i < FT_BLOCKS; i++) {
        if (!ft__blocks[i].p || ft__blocks[i].in_use) continue;
        int rc = FT_CALL(cudaFree, ft__blocks[i].p);
        if (rc == 0) {
            ft__st.reserved -= ft__blocks[i].size;
            ft__st.segment_frees++;
            ft__blocks[i].p = NULL;
        } else if (!first) {
            first = rc;
        }
    }
    return first;
}

/* A block of at least n bytes (n rounded up to 512), or NULL (out of memory) */
void *ft_malloc(size_t n) {
    size_t size = (n + 511) & ~(size_t)511;
    int freeslot = -1;
    for (int i = 0; i < FT_BLOCKS; i++) {
        if (ft__blocks[i].p && !ft__blocks[i].in_use && ft__blocks[i].size == size) {
            ft__blocks[i].in_use = 1; /* from the cache: no CUDA call */
            return ft__blocks[i].p;
        }
        if (!ft__blocks[i].p && freeslot < 0) freeslot = i;
    }
    if (freeslot < 0) return NULL;
    void *p = NULL;
    int rc = FT_CALL(cudaMalloc, &p, size);
    if (rc == (int)cudaErrorMemoryAllocation) {
        /* the out of memory is handled here: the error cleared, the cache freed, once more */
        ft__rc("cudaGetLastError", (int)cudaGetLastError());
        ft_empty_cache();
        rc = FT_CALL(cudaMalloc, &p, size);
        if (rc != 0) ft__rc("cudaGetLastError", (int)cudaGetLastError());
    }
    if (rc != 0) return NULL;
    ft__blocks[freeslot].p = p;
    ft__blocks[freeslot].size = size;
    ft__blocks[freeslot].in_use = 1;
    ft__st.segments++;
    ft__st.reserved += size;
    if (ft__st.reserved > ft__st.peak) ft__st.peak = ft__st.reserved;
    return p;
}

/* The block back to the cache: 0, or -1 for a pointer not handed out */
int ft_free(void *p) {
    for (int i = 0; i < FT_BLOCKS; i++)
        if (ft__blocks[i].p == p && ft__blocks[i].in_use) {
            ft__blocks[i].in_use = 0;
            return 0;
        }
    return -1;
}

/* The allocator's own figures (torch.cuda.memory_stats' "reserved"):
   out[0] reserved bytes, [1] their peak, [2] segments cudaMalloc'd,
   [3] segments cudaFree'd. */
void ft_stats(unsigned long long out[4]) {
    out[0] = ft__st.reserved;
    out[1] = ft__st.peak;
    out[2] = ft__st.segments;
    out[3] = ft__st.segment_frees;
}

/* cudaMemcpyAsync(dst, src, n, kind) on the current stream (copy_stream 0:
   the legacy default stream) or the copy stream (1), then a synchronize
   of that stream. */
int ft_copy(void *dst, const void *src, size_t n, int kind, int copy_stream) {
    cudaStream_t s = copy_stream ? ft__copy_stream : NULL;
    int rc = FT_CALL(cudaMemcpyAsync, dst, src, n, (enum cudaMemcpyKind)kind, s);
    if (rc != 0) {
        ft__rc("cudaGetLastError", (int)cudaGetLastError()); /* raised to Python; the error is cleared, as c10 does */
        return rc;
    }
    return FT_CALL(cudaStreamSynchronize, s);
}

/* Pinned host memory (the host caching allocator's calls) */
void *ft_host_alloc(size_t n) {
    void *p = NULL;
    return FT_CALL(cudaHostAlloc, &p, n, cudaHostAllocDefault) == 0 ? p : NULL;
}
int ft_host_free(void *p) { return FT_CALL(cudaFreeHost, p); }

int ft_shutdown(void) {
    int rc = FT_CALL(cudaStreamDestroy, ft__copy_stream);
    ft__copy_stream = NULL;
    return rc;
}

#ifdef FT_VMM
/* Expandable segments */
#define FT_CHUNKS 64
static struct {
    __typeof__(cuMemGetAllocationGranularity) *granularity;
    __typeof__(cuMemAddressReserve) *reserve;
    __typeof__(cuMemAddressFree) *address_free;
    __typeof__(cuMemCreate) *create;
    __typeof__(cuMemMap) *map;
    __typeof__(cuMemSetAccess) *set_access;
    __typeof__(cuMemUnmap) *unmap;
    __typeof__(cuMemRelease) *release;
} ft__drv;
static struct {
    CUdeviceptr base;
    size_t gran, max, mapped; /* bytes per handle, handles the range holds, handles mapped */
    CUmemGenericAllocationHandle h[FT_CHUNKS];
    int released[FT_CHUNKS]; /* released while still mapped */
    int device;
} ft__seg;

#if FT_MAJOR >= 12
#define FT_ENTRY(name, fn, st) cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, st)
#else
/* CUDA 11's cudaGetDriverEntryPoint has no status argument: called with
   that type (the header here declares 12's and 13's) */
typedef cudaError_t ft__entry11_t(const char *, void **, unsigned long long);
static cudaError_t ft__entry11(const char *name, void **fn) {
    ft__entry11_t *f;
    void *p = (void *)(uintptr_t)&cudaGetDriverEntryPoint;
    memcpy(&f, &p, sizeof f);
    return f(name, fn, cudaEnableDefault);
}
#define FT_ENTRY(name, fn, st) ((void)(st), ft__entry11(name, fn))
#endif

/* The driver function `name` into *slot: through cudaGetDriverEntryPoint,
   or with by_version (FT_BY_VERSION) cudaGetDriverEntryPointByVersion for
   CUDA 12.0's version of it, as c10's DriverAPI does on 12.5 and later. */
static int ft__entry(const char *name, void *slot, int by_version) {
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    void *fn = NULL;
    int rc;
#ifdef FT_BY_VERSION
    if (by_version)
        rc = ft__rc("cudaGetDriverEntryPointByVersion",
                    (int)cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &st));
    else
#endif
        rc = ft__rc("cudaGetDriverEntryPoint", (int)FT_ENTRY(name, &fn, &st));
    (void)by_version;
#if FT_MAJOR < 12
    st = fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
#endif
    if (rc == 0 && (st != cudaDriverEntryPointSuccess || !fn)) rc = ft__rc(name, 1000 + (int)st);
    if (rc == 0) memcpy(slot, &fn, sizeof fn);
    return rc;
}

static void ft__prop(CUmemAllocationProp *prop) {
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = ft__seg.device;
}

/* The entry points, the granularity, a range of max_chunks handles reserved */
int ft_vmm_init(int device, size_t max_chunks) {
    int rc = 0;
    if (max_chunks > FT_CHUNKS) return -1;
    ft__seg.device = device;
    if ((rc = ft__entry("cuMemGetAllocationGranularity", &ft__drv.granularity, 0)) ||
        (rc = ft__entry("cuMemAddressReserve", &ft__drv.reserve, 0)) ||
        (rc = ft__entry("cuMemCreate", &ft__drv.create, 0)) || (rc = ft__entry("cuMemMap", &ft__drv.map, 0)) ||
        (rc = ft__entry("cuMemSetAccess", &ft__drv.set_access, 1)) ||
        (rc = ft__entry("cuMemUnmap", &ft__drv.unmap, 1)) || (rc = ft__entry("cuMemRelease", &ft__drv.release, 1)) ||
        (rc = ft__entry("cuMemAddressFree", &ft__drv.address_free, 1)))
        return rc;
    CUmemAllocationProp prop;
    ft__prop(&prop);
    if ((rc = ft__rc("cuMemGetAllocationGranularity",
                     ft__drv.granularity(&ft__seg.gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM))) != 0)
        return rc;
    if (!ft__seg.gran) return ft__rc("granularity_zero", 1001);
    ft__seg.max = max_chunks;
    ft__seg.mapped = 0;
    return ft__rc("cuMemAddressReserve", ft__drv.reserve(&ft__seg.base, ft__seg.gran * max_chunks, 0, 0, 0));
}

size_t ft_vmm_granularity(void) { return ft__seg.gran; }
void *ft_vmm_base(void) { return (void *)(uintptr_t)ft__seg.base; }
size_t ft_vmm_mapped(void) { return ft__seg.mapped; }

/* The segment grows by n handles: each created and mapped at the end, then
   one cuMemSetAccess over the new part. */
int ft_vmm_grow(size_t n) {
    CUmemAllocationProp prop;
    CUmemAccessDesc desc;
    size_t first = ft__seg.mapped;
    int rc;
    if (first + n > ft__seg.max) return -1;
    ft__prop(&prop);
    for (size_t i = first; i < first + n; i++) {
        if ((rc = ft__rc("cuMemCreate", ft__drv.create(&ft__seg.h[i], ft__seg.gran, &prop, 0))) != 0) return rc;
        if ((rc = ft__rc("cuMemMap", ft__drv.map(ft__seg.base + i * ft__seg.gran, ft__seg.gran, 0, ft__seg.h[i], 0))) !=
            0) {
            ft__rc("cuMemRelease", ft__drv.release(ft__seg.h[i]));
            return rc;
        }
        ft__seg.released[i] = 0;
        ft__seg.mapped = i + 1;
    }
    memset(&desc, 0, sizeof desc);
    desc.location = prop.location;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return ft__rc("cuMemSetAccess",
                  ft__drv.set_access(ft__seg.base + first * ft__seg.gran, n * ft__seg.gran, &desc, 1));
}

/* cuMemRelease of handle i while it stays mapped: its memory lives until
   it is unmapped (cuda.h, cuMemRelease). */
int ft_vmm_release_mapped(size_t i) {
    if (i >= ft__seg.mapped || ft__seg.released[i]) return -1;
    int rc = ft__rc("cuMemRelease", ft__drv.release(ft__seg.h[i]));
    if (rc == 0) ft__seg.released[i] = 1;
    return rc;
}

/* The segment shrinks by n handles from the end: each unmapped, then
   released (unless released already). */
int ft_vmm_shrink(size_t n) {
    int rc;
    if (n > ft__seg.mapped) return -1;
    while (n--) {
        size_t i = ft__seg.mapped - 1;
        if ((rc = ft__rc("cuMemUnmap", ft__drv.unmap(ft__seg.base + i * ft__seg.gran, ft__seg.gran))) != 0) return rc;
        ft__seg.mapped = i;
        if (!ft__seg.released[i] && (rc = ft__rc("cuMemRelease", ft__drv.release(ft__seg.h[i]))) != 0) return rc;
    }
    return 0;
}

/* A handle of half the granularity: CUDA_ERROR_INVALID_VALUE (cuda.h,
   cuMemCreate: the size must be a multiple of the granularity); a handle
   made anyway is released. */
int ft_vmm_create_unaligned(void) {
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h = 0;
    ft__prop(&prop);
    int rc = ft__rc("cuMemCreate", ft__drv.create(&h, ft__seg.gran / 2, &prop, 0));
    if (rc == 0) ft__rc("cuMemRelease", ft__drv.release(h));
    return rc;
}

/* Everything unmapped and released, the range given back */
int ft_vmm_fini(void) {
    int rc = ft_vmm_shrink(ft__seg.mapped);
    if (rc != 0) return rc;
    rc = ft__rc("cuMemAddressFree", ft__drv.address_free(ft__seg.base, ft__seg.gran * ft__seg.max));
    if (rc == 0) ft__seg.base = 0;
    return rc;
}
#endif
