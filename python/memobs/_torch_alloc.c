/* _torch_alloc.c - memobs.torch's CUDA allocator for PyTorch
   (torch.cuda.memory.CUDAPluggableAllocator): every PyTorch CUDA
   allocation goes into memobs' allocation tracker, tagged with the Python
   stack that asked for it, and memobs' peak report is written when a
   device's tracked memory reaches a new maximum.

   Part of the extension memobs._memobs: _memobs.c includes this file at
   its end when the package is built with the CUDA Toolkit's headers
   (setup.py defines MEMOBS_PY_CUDA when it finds cuda_runtime_api.h;
   MEMOBS_CUDA_HOME=none builds without). One translation unit, one
   shared object, so ONE memobs instance serves the package's functions
   (record_h2d, set_phase, regions, summaries) and the allocator: the
   phase Python sets is the phase of the allocations, one summary shows
   both. PyTorch loads the allocator from the extension's own file
   (CUDAPluggableAllocator(memobs._memobs.__file__, ...)): dlopen of a file
   already loaded returns the loaded object, not a second copy.

   Use (memobs/torch.py does this; before the first CUDA allocation):

       import memobs.torch
       memobs.torch.use_allocator()

   THE CUDA RUNTIME, BOUND AT use_allocator()
     The extension is not linked with libcudart: `import memobs` works on
     a machine without CUDA. The runtime functions this file and
     memobs_cuda.h call (cudaMalloc, cudaFreeAsync, cudaGetDevice, ...)
     are defined below as hidden forwarders to function pointers, filled by
     memobs_torch__bind() from, in order:
       1. the library given (use_allocator(runtime=PATH), or MEMOBS_CUDART);
       2. a CUDA runtime already loaded in the process (PyTorch's own
          libcudart.so.N, found with dl_iterate_phdr and opened with
          RTLD_NOLOAD): the allocator then shares PyTorch's runtime;
       3. libcudart.so.<the headers' major version>, then the toolkit's
          copy in the lib64 directory setup.py found (MEMOBS_PY_CUDA_LIB).
     Unbound, every forwarder returns cudaErrorInitializationError.
     memobs' own driver calls (memobs_cuda.h) take the driver from
     memobs_cuda_driver_symbol() below: the bound runtime's when it defines
     one (the CUDA runtime double of the tests does), else libcuda.so.1.

   WHAT IT DOES
     memobs_torch_malloc(size, device, stream): makes `device` current if it
       is not (and restores the caller's device after), then allocates with
       memobs_cudaMalloc, or, with MEMOBS_TORCH_STREAM_ORDERED=1, with
       memobs_cudaMallocAsync on `stream`, the stream PyTorch passes (its
       current stream). The wrapper records the block in the tracker: kind
       device, its device and stream, the calling thread's phase, and the
       Python stack. size 0 gives NULL (what PyTorch's caching allocator
       gives). A failure gives NULL: out of memory first writes
       memobs_cuda.h's flight recorder (summary and live block table, with
       stacks); any other error is logged through memobs' log hook. The
       runtime's last error is cleared either way, so PyTorch's next
       kernel-launch check does not trip on it. PyTorch's
       CUDAPluggableAllocator does not check for NULL in every version: a
       failed allocation may surface later as an illegal memory access;
       the flight recorder's report comes first.
     memobs_torch_free(ptr, size, device, stream): memobs_cudaFree, or with
       MEMOBS_TORCH_STREAM_ORDERED=1 memobs_cudaFreeAsync on the stream of
       the allocation (the block stays in the tracker as "free pending"
       until the stream gets there). NULL is ignored (newer PyTorch calls
       the free function for NULL blocks too). An error is logged, never
       fatal; cudaErrorCudartUnloading (tensors freed after the CUDA
       runtime shut down at exit) is ignored.
     If cudaMallocAsync is not supported (cudaErrorNotSupported: a device
       without memory pools), the allocator says so once and allocates and
       frees with cudaMalloc/cudaFree from then on.

   WHICH FREE: SAFE BY DEFAULT
     PyTorch's own caching allocator remembers every stream a tensor was
     used on (Tensor.record_stream) and reuses its block only after those
     streams got there. record_stream never reaches a pluggable allocator:
     the free function only hears of the allocation's stream. So a tensor
     that another stream still reads (an NCCL all-reduce, a side-stream
     copy) would, with a stream-ordered free on the allocation stream, be
     handed out again while that stream reads it: silent corruption.
     The default, cudaFree, is safe: it waits for the whole device before
     the memory can be reused. Its cost: every free of a tensor stalls the
     freeing thread until all work queued on the device is done (a
     synchronization per free; PyTorch frees often), so an inference loop
     loses the overlap of its CPU and GPU work.
     MEMOBS_TORCH_STREAM_ORDERED=1 frees with cudaFreeAsync on the
     allocation stream instead: no synchronization, the memory pool reuses
     blocks in stream order, as fast as PyTorch's own allocator, and
     correct only for a program that uses every tensor on the stream that
     allocated it (or synchronizes that stream with the others itself
     before the tensor dies).

   PYTHON STACKS AND THE GIL
     A capture can read a thread's Python frames only while that thread
     holds the GIL. PyTorch's Python bindings release the GIL before they
     dispatch an operator, so its allocator is called WITHOUT the GIL
     (ctypes.CDLL calls behave the same way). memobs_python.h's default,
     not taking the GIL, would tag every PyTorch allocation "no Python
     stack (thread does not hold the GIL)". So the allocator takes the GIL
     (PyGILState_Ensure) for the capture, but only for a thread that is a
     Python thread which released it (it has a Python thread state, the
     interpreter runs and is not finalizing); PyTorch's C++ threads keep
     the marker. MEMOBS_TORCH_TAKE_GIL=0 turns that off.
     The capture is made here, BEFORE the CUDA wrapper runs, with no memobs
     lock held, and the GIL is given back before the wrapper is called; the
     tag provider installed at binding hands the tracker those frames
     (memobs_py_format writes them, as memobs_py_install's provider would;
     memobs.track_python_stacks() called later replaces it).
     Taking the GIL inside the tracker, which holds a stripe lock while it
     records, could deadlock: a thread that holds the GIL and frees a
     tensor (common in PyTorch) waits for that lock, while the allocating
     thread holding it waits for the GIL. The cost of taking the GIL: an
     allocation waits for it while another Python thread runs (up to the
     switch interval, 5 ms by default), and a program whose GIL holder
     waits for an allocating thread would deadlock (set
     MEMOBS_TORCH_TAKE_GIL=0 there).

   ENVIRONMENT (read at binding, the first use_allocator())
     MEMOBS_CUDART=PATH        the CUDA runtime library to bind (as above).
     MEMOBS_TORCH_STREAM_ORDERED=0|1
                               1: cudaMallocAsync/cudaFreeAsync on PyTorch's
                               stream (fast; see WHICH FREE for the hazard).
                               Default 0: cudaMalloc/cudaFree (safe).
     MEMOBS_TORCH_SYNC=0|1     the older spelling, inverted: where set, 1
                               means cudaMalloc/cudaFree and 0 the
                               stream-ordered calls.
     MEMOBS_TORCH_TAKE_GIL=0|1 take the GIL for the capture, as above
                               (default 1; when unset, MEMOBS_PY_TAKE_GIL
                               decides if it is set).
     MEMOBS_PEAK_REPORT        unset: binding turns the peak report on, on
                               stderr, as if it were "stderr" (with
                               MEMOBS_PEAK_GROWTH, default 0.10, and
                               MEMOBS_PEAK_MIN, default 64M). Set: memobs'
                               own meaning (0 = off, a path, ...).
     Everything in memobs.h, memobs_cuda.h and memobs_python.h applies
     (MEMOBS_PY_PRIORITY, MEMOBS_PY_SKIP, MEMOBS_REPORT_ROWS, MEMOBS_SUMMARY,
     MEMOBS_LEAKS, MEMOBS_OOM_REPORT, ...).

   EXPORTS
     memobs_torch_malloc and memobs_torch_free, the only symbols of the
     extension with default visibility besides PyInit__memobs (what
     PyTorch looks up with dlsym). Everything else stays hidden. */

#include <dlfcn.h>
#include <link.h> /* dl_iterate_phdr (Python.h defined _GNU_SOURCE) */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define MEMOBS_TORCH_EXPORT __attribute__((visibility("default")))

MEMOBS_TORCH_EXPORT void *memobs_torch_malloc(ssize_t size, int device, cudaStream_t stream);
MEMOBS_TORCH_EXPORT void memobs_torch_free(void *ptr, ssize_t size, int device, cudaStream_t stream);

/* ======================================================================== */
/* The CUDA runtime: forwarders, bound at use_allocator()                   */
/* ======================================================================== */

/* Every runtime function memobs_cuda.h's implementation and the wrappers
   used below call: the return type, the name, the parameters and the
   arguments. The declarations of cuda_runtime_api.h were made hidden
   (_memobs.c), so a function missing here is a link error, not a call
   into nothing. */
#define MEMOBS_TORCH__RT_ERR(X)                                                      \
    X(cudaMalloc, (void **p, size_t n), (p, n))                                     \
    X(cudaFree, (void *p), (p))                                                     \
    X(cudaMallocHost, (void **p, size_t n), (p, n))                                 \
    X(cudaHostAlloc, (void **p, size_t n, unsigned int f), (p, n, f))               \
    X(cudaFreeHost, (void *p), (p))                                                 \
    X(cudaMallocManaged, (void **p, size_t n, unsigned int f), (p, n, f))           \
    X(cudaHostRegister, (void *p, size_t n, unsigned int f), (p, n, f))             \
    X(cudaHostUnregister, (void *p), (p))                                           \
    X(cudaMallocAsync, (void **p, size_t n, cudaStream_t s), (p, n, s))             \
    X(cudaFreeAsync, (void *p, cudaStream_t s), (p, s))                             \
    X(cudaGetDevice, (int *d), (d))                                                 \
    X(cudaSetDevice, (int d), (d))                                                  \
    X(cudaGetLastError, (void), ())
#define MEMOBS_TORCH__RT_STR(X)                                                      \
    X(cudaGetErrorName, (cudaError_t e), (e))                                       \
    X(cudaGetErrorString, (cudaError_t e), (e))

static struct {
    int bound;         /* 1 once every pointer below is set (release store after them) */
    void *handle;      /* the runtime library, never closed */
    char path[1024];   /* where it came from */
    void *driver;      /* libcuda.so.1 when the runtime does not give memobs_cuda_driver_symbol */
    int sync;          /* 1: cudaMalloc/cudaFree (the default); 0: stream-ordered
                          (MEMOBS_TORCH_STREAM_ORDERED=1); set at binding, and to 1
                          once when async is not supported */
    int take_gil;      /* 1: take the GIL for a Python thread that released it */
    void *(*driver_symbol)(const char *name); /* the runtime's, when it has one */
#define MEMOBS_TORCH__PTR(name, params, args) cudaError_t(*name) params;
    MEMOBS_TORCH__RT_ERR(MEMOBS_TORCH__PTR)
#undef MEMOBS_TORCH__PTR
#define MEMOBS_TORCH__PTR(name, params, args) const char *(*name) params;
    MEMOBS_TORCH__RT_STR(MEMOBS_TORCH__PTR)
#undef MEMOBS_TORCH__PTR
} memobs_torch__g;

static int memobs_torch__bound(void) { return __atomic_load_n(&memobs_torch__g.bound, __ATOMIC_ACQUIRE); }

#define MEMOBS_TORCH__FWD(name, params, args)                                            \
    cudaError_t CUDARTAPI name params {                                                  \
        return memobs_torch__bound() ? memobs_torch__g.name args : cudaErrorInitializationError; \
    }
MEMOBS_TORCH__RT_ERR(MEMOBS_TORCH__FWD)
#undef MEMOBS_TORCH__FWD
#define MEMOBS_TORCH__FWD(name, params, args)                                            \
    const char *CUDARTAPI name params {                                                  \
        return memobs_torch__bound() ? memobs_torch__g.name args : "no CUDA runtime bound (memobs.torch)"; \
    }
MEMOBS_TORCH__RT_STR(MEMOBS_TORCH__FWD)
#undef MEMOBS_TORCH__FWD

/* memobs_cuda.h's source of driver functions (declared hidden in _memobs.c,
   so it is ours, not a weak NULL): the bound runtime's own
   memobs_cuda_driver_symbol when it has one (a test double), else
   libcuda.so.1 (MEMOBS_CUDA_DRIVER). Called once per name, at the first
   driver call of memobs_cuda.h, which comes after binding. */
void *memobs_cuda_driver_symbol(const char *name) {
    if (!memobs_torch__bound()) return NULL;
    if (memobs_torch__g.driver_symbol) return memobs_torch__g.driver_symbol(name);
    if (!memobs_torch__g.driver) memobs_torch__g.driver = dlopen(MEMOBS_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    return memobs_torch__g.driver ? dlsym(memobs_torch__g.driver, name) : NULL;
}

/* dl_iterate_phdr's callback: the first loaded object whose file name
   starts "libcudart" followed by '.' or '-' (PyTorch's wheels carry
   libcudart.so.12, older ones a renamed libcudart-<hash>.so.11.0). */
static int memobs_torch__find_cb(struct dl_phdr_info *info, size_t size, void *data) {
    const char *name = info->dlpi_name, *base;
    (void)size;
    if (!name || !*name) return 0;
    base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libcudart", 9) != 0 || (base[9] != '.' && base[9] != '-')) return 0;
    snprintf((char *)data, sizeof memobs_torch__g.path, "%s", name);
    return 1;
}

/* Binds the runtime (see THE CUDA RUNTIME): path NULL or "" looks for one
   as described there. 0 on success (also when already bound to the same
   or no path asked); -1 with err set. Called with the GIL held, so two
   binds do not race; the pointers are published by the release store of
   `bound`, before PyTorch can call the allocator. */
static int memobs_torch__bind(const char *path, char *err, size_t errlen) {
    char found[sizeof memobs_torch__g.path] = "";
    void *h = NULL;
    const char *what = path;
    if (memobs_torch__bound()) {
        if (path && *path && strcmp(path, memobs_torch__g.path) != 0) {
            snprintf(err, errlen, "the allocator is already bound to the CUDA runtime %s, not %s",
                     memobs_torch__g.path, path);
            return -1;
        }
        return 0;
    }
    if (path && *path) {
        if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
            snprintf(err, errlen, "cannot load the CUDA runtime %s: %s", path, dlerror());
            return -1;
        }
    } else {
        if (dl_iterate_phdr(memobs_torch__find_cb, found) && (h = dlopen(found, RTLD_NOW | RTLD_NOLOAD)))
            what = found;
        if (!h) {
            snprintf(found, sizeof found, "libcudart.so.%d", CUDART_VERSION / 1000);
            if ((h = dlopen(found, RTLD_NOW | RTLD_LOCAL))) what = found;
        }
#ifdef MEMOBS_PY_CUDA_LIB
        if (!h) {
            snprintf(found, sizeof found, "%s/libcudart.so.%d", MEMOBS_PY_CUDA_LIB, CUDART_VERSION / 1000);
            if ((h = dlopen(found, RTLD_NOW | RTLD_LOCAL))) what = found;
        }
#endif
        if (!h) {
            snprintf(err, errlen, "no CUDA runtime: none is loaded in the process and libcudart.so.%d could not be "
                     "loaded (%s); give its path (use_allocator(runtime=...) or MEMOBS_CUDART)",
                     CUDART_VERSION / 1000, dlerror());
            return -1;
        }
    }
#define MEMOBS_TORCH__SYM(name, params, args)                                                       \
    if (!(*(void **)(void *)&memobs_torch__g.name = dlsym(h, #name))) {                            \
        snprintf(err, errlen, "the CUDA runtime %s has no %s (CUDA 11.2 or later is needed)", what, #name); \
        dlclose(h); /* the pointers set so far stay unused: `bound` is 0 */                          \
        return -1;                                                                                  \
    }
    MEMOBS_TORCH__RT_ERR(MEMOBS_TORCH__SYM)
    MEMOBS_TORCH__RT_STR(MEMOBS_TORCH__SYM)
#undef MEMOBS_TORCH__SYM
    *(void **)(void *)&memobs_torch__g.driver_symbol = dlsym(h, "memobs_cuda_driver_symbol");
    memobs_torch__g.handle = h;
    snprintf(memobs_torch__g.path, sizeof memobs_torch__g.path, "%s", what);
    __atomic_store_n(&memobs_torch__g.bound, 1, __ATOMIC_RELEASE);
    return 0;
}

/* ======================================================================== */
/* State and settings                                                       */
/* ======================================================================== */

/* The Python stack captured by memobs_torch_malloc for the allocation it
   is about to make on this thread (n == 0: none). */
static __thread struct {
    int n;
    memobs_frame_t frames[MEMOBS_MAX_STACK];
} memobs_torch__tls;

/* An 0/1 setting from the environment: def when unset; when malformed, a
   warning and def. memobs' implementation is in this translation unit,
   so its parser is at hand. */
static int memobs_torch__env_bool(const char *name, int def) {
    const char *s = getenv(name);
    int b;
    if (!s) return def;
    if ((b = memobs__parse_bool(s)) >= 0) return b;
    fprintf(stderr, "memobs_torch: warning: %s='%s' is not 0/1/on/off/true/false/yes/no; using %d\n", name, s, def);
    return def;
}

/* The tag provider: the frames memobs_torch_malloc captured, else (an
   allocation made some other way) a capture now, which never takes the
   GIL (take_gil is off in memobs_py's rules). */
static int memobs_torch__capture(memobs_frame_t *frames, int max, void *user) {
    int n = memobs_torch__tls.n;
    (void)user;
    if (n <= 0) return memobs_py_capture(frames, max);
    if (n > max) n = max;
    memcpy(frames, memobs_torch__tls.frames, (size_t)n * sizeof *frames);
    memobs_torch__tls.n = 0;
    return n;
}

static size_t memobs_torch__format(const memobs_frame_t *frames, int n, char *buf, size_t len, void *user) {
    (void)user;
    return memobs_py_format(frames, n, buf, len);
}

/* After the first binding, with the GIL held (memobs_py_configure touches
   no Python API): the settings from the environment, the tag provider,
   and the peak report's default. */
static void memobs_torch__setup(void) {
    memobs_py_config_t c;
    memobs_tag_provider_t p;
    memobs_torch__g.sync =
        memobs_torch__env_bool("MEMOBS_TORCH_SYNC", !memobs_torch__env_bool("MEMOBS_TORCH_STREAM_ORDERED", 0));

    /* memobs_py_install(NULL), except that the capture is ours (see PYTHON
       STACKS AND THE GIL): the GIL is taken by memobs_torch_malloc. */
    memobs_py_default_config(&c);
    memobs_torch__g.take_gil =
        memobs_torch__env_bool("MEMOBS_TORCH_TAKE_GIL", getenv("MEMOBS_PY_TAKE_GIL") ? c.take_gil != 0 : 1);
    c.take_gil = 0;
    memset(&p, 0, sizeof p);
    p.capture = memobs_torch__capture;
    p.format = memobs_torch__format;
    p.title = "Python Stack Trace";
    if (memobs_py_configure(&c) == MEMOBS_OK) (void)memobs_track_set_tag_provider(&p); /* errors were warned about */

    /* Growth and minimum as memobs_init() read them from MEMOBS_PEAK_GROWTH
       and MEMOBS_PEAK_MIN (or its defaults, 0.10 and 64M). */
    if (!getenv("MEMOBS_PEAK_REPORT"))
        (void)memobs_track_set_peak_report("stderr", (double)MEMOBS__LOAD(&MEMOBS__TRK.peak_growth_ppm.v) / 1e6,
                                     MEMOBS__LOAD(&MEMOBS__TRK.peak_min.v));
}

/* ======================================================================== */
/* The GIL                                                                  */
/* ======================================================================== */

/* Captures the calling thread's Python stack for its next tracked
   allocation, taking the GIL when the thread is a Python thread that
   released it (what PyTorch's bindings do before dispatching). Runs with
   no memobs lock held, so a thread holding the GIL while it frees never
   waits on this one. */
static void memobs_torch__capture_now(void) {
    memobs_frame_t fr[MEMOBS_MAX_STACK];
    PyGILState_STATE st = PyGILState_UNLOCKED;
    int gil = 0, n;
    memobs_torch__tls.n = 0;
    if (!memobs_get_enabled()) return;
    if (memobs_torch__g.take_gil && memobs_py_status() == MEMOBS_PY_NO_GIL &&
        PyGILState_GetThisThreadState() != NULL) { /* NULL: a C/C++ thread, it runs no Python code */
        st = PyGILState_Ensure();
        gil = 1;
        MEMOBS_COUNTER_ADD("torch_gil_taken", 1);
    }
    n = memobs_py_capture(fr, MEMOBS_MAX_STACK);
    if (gil) PyGILState_Release(st);
    if (n > 0) memcpy(memobs_torch__tls.frames, fr, (size_t)n * sizeof *fr);
    memobs_torch__tls.n = n;
}

/* ======================================================================== */
/* Allocator                                                                */
/* ======================================================================== */

/* Logs a failed runtime call through memobs' log hook: "FILE:LINE: what:
   error string (error name)". */
static void memobs_torch__log(cudaError_t rc, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void memobs_torch__log(cudaError_t rc, int line, const char *fmt, ...) {
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    (void)memobs_cuda__check(rc, what, __FILE__, line);
}

/* Makes device current; returns the device to restore, or -1 (nothing to
   restore; device < 0, which PyTorch never passes, changes nothing). *rc
   gets the error of cudaSetDevice (logged). */
static int memobs_torch__set_device(int device, cudaError_t *rc, const char *who) {
    int cur = -1;
    *rc = cudaSuccess;
    if (device < 0) return -1;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        (void)cudaGetLastError();
        cur = -1;
    }
    if (cur == device) return -1;
    if ((*rc = cudaSetDevice(device)) != cudaSuccess) {
        memobs_torch__log(*rc, __LINE__, "%s: cudaSetDevice(%d)", who, device);
        (void)cudaGetLastError();
        return -1;
    }
    return cur;
}

static void memobs_torch__restore_device(int prev) {
    if (prev >= 0 && cudaSetDevice(prev) != cudaSuccess) (void)cudaGetLastError();
}

static int memobs_torch__sync(void) { return __atomic_load_n(&memobs_torch__g.sync, __ATOMIC_RELAXED); }

void *memobs_torch_malloc(ssize_t size, int device, cudaStream_t stream) {
    void *p = NULL;
    cudaError_t rc;
    int prev;
    if (size <= 0) return NULL; /* PyTorch asks for 0 bytes for empty tensors */
    prev = memobs_torch__set_device(device, &rc, "memobs_torch_malloc");
    if (rc != cudaSuccess) {
        MEMOBS_COUNTER_ADD("torch_alloc_failed", 1);
        return NULL;
    }
    memobs_torch__capture_now();
    if (!memobs_torch__sync()) {
        rc = memobs_cudaMallocAsync(&p, (size_t)size, stream);
        if (rc == cudaErrorNotSupported) {
            (void)cudaGetLastError();
            if (!__atomic_exchange_n(&memobs_torch__g.sync, 1, __ATOMIC_RELAXED))
                fprintf(stderr, "memobs_torch: cudaMallocAsync is not supported on device %d; using cudaMalloc "
                        "and cudaFree from now on\n", device);
        }
    }
    if (memobs_torch__sync() && p == NULL) rc = memobs_cudaMalloc(&p, (size_t)size);
    memobs_torch__tls.n = 0; /* left over when the allocation failed */
    if (rc != cudaSuccess || !p) {
        /* Out of memory: the wrapper has written the flight recorder. */
        if (rc != cudaErrorMemoryAllocation)
            memobs_torch__log(rc, __LINE__, "memobs_torch_malloc(%lld bytes, device %d): %s", (long long)size,
                              device, memobs_torch__sync() ? "cudaMalloc" : "cudaMallocAsync");
        (void)cudaGetLastError();
        MEMOBS_COUNTER_ADD("torch_alloc_failed", 1);
        p = NULL;
    }
    memobs_torch__restore_device(prev);
    return p;
}

void memobs_torch_free(void *ptr, ssize_t size, int device, cudaStream_t stream) {
    cudaError_t rc;
    int prev, sync = memobs_torch__sync();
    (void)size; /* the tracker knows it */
    if (!ptr) return;
    prev = memobs_torch__set_device(device, &rc, "memobs_torch_free");
    rc = sync ? memobs_cudaFree(ptr) : memobs_cudaFreeAsync(ptr, stream);
    if (rc != cudaSuccess) {
        if (rc != cudaErrorCudartUnloading) /* at exit, after the runtime shut down: nothing to free */
            memobs_torch__log(rc, __LINE__, "memobs_torch_free(%p, device %d): %s", ptr, device,
                              sync ? "cudaFree" : "cudaFreeAsync");
        (void)cudaGetLastError();
        MEMOBS_COUNTER_ADD("torch_free_failed", 1);
    }
    memobs_torch__restore_device(prev);
}

/* ======================================================================== */
/* Reports                                                                  */
/* ======================================================================== */

/* memobs.torch.report(path): the live block table, the live bytes per
   trace, device memory by component and the driver's view of each device
   against the tracker (through _memobs.c's pymod_report: path or
   stderr). */
static int memobs_torch__report(FILE *f) {
    int rc, r;
    (void)memobs_cuda_poll(); /* stream-ordered frees that have completed leave the table first */
    rc = memobs_print_allocations(f);
    if ((r = memobs_print_alloc_groups(f)) != MEMOBS_OK) rc = r;
    if ((r = memobs_print_components(f, -1)) != MEMOBS_OK) rc = r;
    fputs("== memobs devices == driver's view against the tracker\n", f);
    if ((r = memobs_cuda_print_mem(f)) != MEMOBS_OK) rc = r;
    return rc;
}
