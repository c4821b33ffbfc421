/* memobs_cuda.h - v1.0.0 - CUDA runtime wrappers that record themselves.
   Needs memobs.h and the CUDA Toolkit's cuda_runtime_api.h (11.x to 13.x);
   C99/C11, C++11/17, nvcc. Link with -lcudart (or the static one) and
   -pthread; on glibc older than 2.34 also -ldl (memobs opens the driver,
   libcuda.so.1, with dlopen, as NVTX does).

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
       height bytes), cudaMemcpyPeer(Async) (D2D), cudaMemcpy3D(Async)
       (width x height x depth bytes between two pointers; with a CUDA
       array on either side not recorded: its extent is in elements of a
       size memobs does not ask), cudaMemcpy3DPeer(Async) (D2D, the same),
       cudaMemcpyToSymbol(Async) and cudaMemcpyFromSymbol(Async) (count
       bytes; the symbol is device memory), cudaMemcpy2DToArray(Async),
       cudaMemcpy2DFromArray(Async), cudaMemcpy2DArrayToArray (width x
       height bytes; the array is device memory) and, with CUDA 13's
       signatures, cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync (each
       copy of the batch in its direction, found as for cudaMemcpyDefault;
       one op per copy; a 3D batch copy with an array operand is not
       recorded): bytes and op counts by direction and by the calling
       thread's phase (memobs_set_phase), as MEMOBS_RECORD_*_CUR does. The
       direction comes from the copy kind (an array or a symbol side is
       device memory whatever the kind says, as the runtime corrects it);
       only cudaMemcpyDefault asks the driver where each side lives (device
       or managed memory: device; anything else: host).
       cudaMemcpyHostToHost moves nothing over the bus and is not recorded.
       An async copy is counted when it is issued. A batch whose copies go
       in more than one direction is not timed (one call, one duration;
       memobs_cuda_get_untimed() counts its copies); one in a single direction
       is timed as one copy of all its bytes.
     Allocations: cudaMalloc, cudaMallocAsync (MEMOBS_MEM_DEVICE, with the
       device of the current context or of the stream, and the stream),
       cudaMallocFromPoolAsync (with the stream; the memory type and
       device from the pointer's attributes after the call, not from the
       stream: a host-located pool, CUDA 12.2+, gives PINNED memory, a
       peer device's pool that device's DEVICE memory),
       cudaMallocManaged (MANAGED), cudaMallocHost, cudaHostAlloc,
       cudaHostRegister (PINNED) go into the allocation tracker; cudaFree,
       cudaFreeAsync, cudaFreeHost, cudaHostUnregister take them out. A
       free marks its block pending before the runtime frees it and takes
       it out after (the mark is taken back if the free fails), so another
       thread handed the address in between records its new block
       correctly, and no memobs lock is held across a runtime call.
     A failed call records nothing and returns the error unchanged.
     Out of memory: when an allocation wrapper gets cudaErrorMemoryAllocation,
       it writes the flight recorder before returning: what failed, the
       driver's free/total memory of the device asked (the stream's for
       cudaMallocAsync), for a device allocation its live memory by
       component (memobs_print_components: tag, else region, else top
       frame; the memory used outside memobs), the summary and the live
       block table (largest first, with tags and stacks). The first 3 per
       process; later ones are counted. At the first device allocation
       that fails while the PyTorch snapshot's history is recorded, the
       snapshot is written once (MEMOBS_OOM_SNAPSHOT below).
     Device memory outside memobs: memobs_cuda_get_mem_info() sets the driver's
       used memory beside what the tracker holds for that device; the
       difference is memory allocated around the wrappers (communication
       buffers, library workspaces, the CUDA context).

     Timing (off by default: memobs_cuda_set_timing(1) or
       MEMOBS_CUDA_TIMING=1): an async copy gets a pair of CUDA events
       recorded on its stream right before and right after the copy call
       (from a pool per context, never freed back to the driver), queued;
       they are resolved later, without waiting, in issue order: at each
       timed copy, at memobs_cuda_poll() and before every summary. A
       synchronous copy (cudaMemcpy, cudaMemcpy2D) is timed on the host
       clock around the call, which returns when the copy is done (from
       pageable memory to the device: when it is staged); cudaMemcpyPeer,
       which may return first, gets events on the legacy stream. The
       summary then shows, per direction and phase, the bytes of completed
       copies, their time and GB/s, and how many timed copies are still in
       flight, so issued is not confused with done. At most
       MEMOBS_CUDA_MAX_TIMED copies wait to be resolved; beyond, copies are
       recorded but not timed (memobs_cuda_get_untimed() counts them). At exit
       the copies in flight are resolved as they complete, for at most
       MEMOBS_CUDA_EXIT_WAIT_MS (see EXIT AND FORK); those that have not
       are reported in flight. Timed copies are among memobs.h's transfers
       in flight (memobs_get_inflight) until then, a synchronous one for
       its call: not recorded again when they leave, and one past
       MEMOBS_STUCK_S is warned about once, as stuck.

     Stream-ordered frees: cudaFreeAsync marks the block pending (freed,
       not reusable: still in current bytes, "(free pending)" in reports)
       and records an event on its stream; the block leaves the tracker
       when that event has completed, seen at the same points as timing
       (a cudaMallocAsync that gets the same address back first retires it
       at once). Without an event to spare it leaves at once.

   VIRTUAL MEMORY (cuMemCreate, cuMemMap, ...)
     The driver's virtual memory management, which PyTorch's expandable
     segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) and vLLM's
     sleep-mode allocator use, is recorded where the LD_PRELOAD library
     intercepts it (docs/preload.md), and where a program calls
     memobs_cuMemCreate, memobs_cuMemRelease, memobs_cuMemMap,
     memobs_cuMemUnmap, memobs_cuMemAddressReserve and
     memobs_cuMemAddressFree (inline, the driver's signatures; declared
     where <cuda.h> is included before memobs_cuda.h). A physical
     allocation (cuMemCreate) is a block in the allocation tracker with its
     stack and phase: MEMOBS_MEM_DEVICE on the device of its
     CUmemAllocationProp location, MEMOBS_MEM_PINNED for a host-located one
     (CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA, CUDA 12.2+), its size as
     created. The driver frees it when it is released (cuMemRelease) and no
     mapping of it remains; it leaves the tracker then: at the release, or
     at the cuMemUnmap (or cuMemAddressFree) of its last mapping
     (memobs_cudaDeviceReset leaves it). Mappings (cuMemMap) are remembered
     by address range, so a cudaMemcpyDefault copy into or out of a mapped
     range takes its direction from the handle behind it (device, or host
     for a host-located one) without asking the driver. A handle's tracker
     key (shown as its address in reports and snapshots) is not an address
     the program uses: it is the address of a byte of a static array of
     memobs' own, one per handle slot, which no allocator can ever hand
     out, so it never collides with a real block (in PyTorch's snapshot each
     handle is a segment of its own at its key; keys are a byte apart, so
     their ranges overlap there). The out-of-memory flight recorder
     also runs when cuMemCreate fails with CUDA_ERROR_OUT_OF_MEMORY, with a
     line on the live handles, mappings and reservations. At most
     MEMOBS_CUDA_MAX_VMM handles and as many mappings are remembered
     (tables allocated at the first call); beyond, a handle is not tracked
     and a mapping not remembered, counted
     (memobs_cuda_get_vmm_stats().dropped) and warned once.
     memobs_cuda_get_vmm_stats() says what is remembered now.

   CUDA GRAPHS AND STREAM CAPTURE
     Before each async copy, stream-ordered allocation, free and graph
     launch memobs asks the driver whether the stream is capturing (a query
     the runtime allows during capture; not for an untimed copy into the
     legacy stream, which is never captured). Into a capturing stream memobs
     records no event and queries nothing; what it would have counted is
     remembered with the capture sequence instead:
       - Copies captured through the wrappers are not transfers at capture
         (nothing moves then). memobs_cudaStreamEndCapture hands them to the
         graph, memobs_cudaGraphInstantiate(WithFlags/WithParams) to the
         executable graph, and every memobs_cudaGraphLaunch counts them
         again, by direction, in the phase of the launching thread at the
         launch (one op per copy; the timeline gets one record per
         direction and launch). A launch into a capturing stream adds them
         to that capture (graphs in graphs). Graph copies are not timed.
       - cudaMallocAsync/cudaFreeAsync captured into a graph (graph memory
         nodes) are not tracked: that memory exists while the graph runs;
         a tracked block freed in a capture leaves the tracker at once.
       - memobs_cudaGraphExecDestroy / memobs_cudaGraphDestroy forget them.
     memobs sees only what goes through its wrappers: copies added to a
     graph by hand (cudaGraphAddMemcpyNode...), a capture ended or a graph
     instantiated with the plain runtime calls, and launches of executable
     graphs it does not know (memobs_cuda_get_graph_stats().unknown_launches
     counts those) are not counted. At most MEMOBS_CUDA_MAX_GRAPHS graphs
     and as many executable graphs are remembered (more: warned once, not
     counted), and MEMOBS_CUDA_MAX_CAPTURES captures open at once.
     A capture is remembered by its stream from its beginning (the
     per-thread default stream: the calling thread's own;
     memobs_cudaStreamBeginCapture notes the stream and the capture's id;
     a new capture on that stream replaces what memobs had of it). The
     driver's capture id is used only while the capture is active (cuda.h:
     the other outputs of cuStreamGetCaptureInfo are valid only then); an
     invalidated capture is found by its stream, so ending it through the
     wrapper forgets it and it never fills the table. A capture begun
     outside the wrappers is known by the stream of its first copy. When
     the table is full, a capture that is over (its stream, asked, no
     longer captures it: ended outside the wrappers) makes room; one still
     open is never dropped: the new capture is then not remembered
     (memobs_cuda_get_graph_stats().dropped counts it).
     Every other CUDA call memobs makes on its own (event create, record,
     query, elapsed time, memory info, pointer attributes, contexts) goes
     through the driver API in the thread's relaxed capture interaction
     mode (cuThreadExchangeStreamCaptureMode, restored after), so it is
     never a "potentially unsafe" call for a capture in this thread or any
     other; the poll, the summary hooks and the Prometheus writer thread
     are safe during any capture, in any mode.

   ERROR STATE
     cudaGetLastError / cudaPeekAtLastError after a wrapper return what
     they would have returned without memobs: memobs' own calls go to the
     driver (MEMOBS_CUDA_DRIVER, libcuda.so.1, opened with dlopen: the
     library the runtime itself uses), whose errors do not touch the
     runtime's last error, and memobs never clears it. A program may
     instead hand memobs the driver's functions by defining
     `void *memobs_cuda_driver_symbol(const char *name)` (the exported
     name, e.g. "cuEventRecord", to its function; NULL when absent): the
     test double of the runtime does. Without the driver library memobs makes no
     CUDA call of its own: no timing, no capture detection (captured
     copies then count at capture), no direction for cudaMemcpyDefault
     (those copies are not counted), frees settle at once, and
     memobs_cuda_get_mem_info() says the driver was not found; a warning says
     so once.

   CONTEXTS
     memobs never keeps a CUDA context alive: it reads memory figures of a
     device only while that device's primary context is active (or the
     context current on the thread is that device's), holding it with
     cuDevicePrimaryCtxRetain while it reads; for a device this process
     has not used, memobs_cuda_get_mem_info() returns MEMOBS_ERR_INVALID
     quietly and memobs_cuda_print_mem() says "not used". The last holder
     may release the context between memobs' look at its state and its
     retain, which then makes a new one: memobs' release destroys it
     again, and the state asked after that release (inactive: memobs' hold
     was the only one) makes the device "not used" rather than figures of
     a context the program never made.
     Events are made in the stream's own context. Contexts are known by
     address and id (cuCtxGetId, CUDA 12.0+): after cuCtxDestroy,
     cuDevicePrimaryCtxReset or cudaDeviceReset a new context may come at
     the same address, of another device; memobs tells it by its id, so
     its allocations go to its own device, and memobs' events of the dead
     context are forgotten, never used (its timed copies in flight become
     untimed, its pending frees settle) once memobs sees the new one. With
     a driver older than 12.0 (no cuCtxGetId) the address alone is the
     key, as before.
     memobs_cudaDeviceReset() drops memobs' events of the device's context
     before the reset (timed copies in flight there become untimed,
     pending frees settle) and, when the reset succeeds, takes the
     device's and managed blocks of that device out of the tracker.

   EXIT AND FORK
     The CUDA runtime tears itself down at exit, in a handler it registers
     with atexit when it initializes (at its first call; NVIDIA documents
     only the result: calls after it fail with cudaErrorCudartUnloading,
     "driver shutting down", and the driver's with
     CUDA_ERROR_DEINITIALIZED). memobs registers an exit handler of its own
     at the first CUDA call it sees (a wrapper or an interposer of the
     LD_PRELOAD library returning cudaSuccess; or its first driver call
     that finds CUDA initialized: a device reading, say), so after the
     runtime's, and it runs before the teardown (handlers run in reverse
     order). It reads each device's memory figures one last time, resolves
     the timed copies and stream-ordered frees in flight as they complete,
     asking without waiting (cuEventQuery, never cuEventSynchronize: the
     driver does not finish work at exit, and a kernel waiting on a dead
     peer never ends), for at most MEMOBS_CUDA_EXIT_WAIT_MS (default
     2000), then stops: from then on memobs makes no CUDA call of its own
     (and waits up to 100 ms for those under way in other threads). The
     copies not seen complete stay in flight in every summary, the frees
     pending. What comes later (memobs' outputs at exit, the sampler's last
     samples, a program's own exit handler registered before its first
     CUDA call) uses the last figures read: samples carry when they were
     read (memobs_sample_dev_t.as_of_ns; Stormlog's metadata
     device_figures_as_of_ns), memobs_cuda_print_mem says "device figures
     as of N s ago: CUDA has shut down", memobs_cuda_get_mem_info fails. An
     exit handler of the program registered after memobs saw its first
     CUDA call runs before memobs' handler (its copies are timed as
     usual); one registered between the runtime's start and that call runs
     after it (its copies are counted, not timed). An exit through _exit,
     a signal or a crash runs no handler.
     fork(): memobs' locks are held across it (pthread_atfork), so a child
     never inherits one held by a thread the child does not have. CUDA is
     not fork-safe (NVIDIA's CUDA C++ guidelines: any use of CUDA between
     fork and exec is undefined), so in a child of a process that used
     CUDA memobs makes no CUDA call at all: its parent's events are dropped
     unasked (their copies stay in flight, their frees pending), device
     figures are unknown. A child of a process that never used CUDA (a
     worker forked before CUDA started, as PyTorch and vLLM do) uses CUDA
     as any process: memobs too.

   DEFAULT STREAMS
     The wrappers are inline functions: they make the runtime call in the
     caller's translation unit, so stream 0 (and cudaMemcpy's implicit
     stream) means what it means there: the per-thread default stream in
     a unit built with nvcc --default-stream per-thread (or
     CUDA_API_PER_THREAD_DEFAULT_STREAM), the legacy stream otherwise.
     memobs' own calls get that stream by its explicit handle
     (cudaStreamPerThread or cudaStreamLegacy). The calls the runtime
     header does not remap keep the legacy stream in a per-thread build,
     and so does memobs for them: cudaMemcpyPeer and cudaMemcpyPeerAsync
     (stream 0 there is the legacy stream; libcudart has no
     cudaMemcpyPeerAsync_ptsz), as the LD_PRELOAD library does.

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
     MEMOBS_CUDA_MAX_GRAPHS   implementation only. Graphs, and executable
                              graphs, remembered; default 1024 (64 bytes
                              each, allocated at the first use).
     MEMOBS_CUDA_MAX_CAPTURES implementation only. Capture sequences open
                              at once; default 64.
     MEMOBS_CUDA_MAX_VMM      implementation only. Physical allocations
                              (cuMemCreate) tracked, and mapped ranges
                              remembered, each; default 16384 (about 100
                              bytes per handle and mapping, allocated at
                              the first call).
     MEMOBS_CUDA_DRIVER       implementation only. The driver library
                              opened when the program does not link one,
                              default "libcuda.so.1".
     MEMOBS_CUDA_EXIT_WAIT_MS implementation only. How long the exit
                              handler resolves copies and frees in flight
                              as they complete, default 2000 (see EXIT
                              AND FORK).
     MEMOBS_NO_NVTX           implementation only, tested with #ifdef. No
                              NVTX even where <nvtx3/nvToolsExt.h> is found.

   ENVIRONMENT
     MEMOBS_CUDA_TIMING=0|1   time copies (default 0).
     MEMOBS_NVTX=0|1          regions and markers as NVTX ranges and marks
                              (default 1 where NVTX is compiled in; also
                              on/off, true/false, yes/no). Read at load
                              time, also with MEMOBS_NO_AUTOINIT.
     MEMOBS_OOM_REPORT=DEST   where the out-of-memory flight recorder goes
                              (unset: stderr; memobs.h's OUTPUTS rule: 0 or
                              off is nowhere; a PATH is appended to, one
                              write a report, %r/%p expanded).
     MEMOBS_OOM_SNAPSHOT=PATH where the PyTorch memory snapshot goes at the
                              first device out-of-memory error, written
                              once when its history is recorded
                              (MEMOBS_TORCH_SNAPSHOT set, or
                              memobs_torch_history_start). Unset: the
                              report's path + ".pickle" when the report
                              goes to a file, memobs_oom_%p.pickle in the
                              working directory when it goes to stderr or
                              stdout, none when it is off; 0 or off: none.
                              A path that cannot be written: one warning.
   Everything in memobs.h's doc block applies (with MEMOBS_DISABLE the
   wrappers make their CUDA call and nothing else, and NVTX is not
   compiled in).

   LICENSE: MIT; the full text is at the end of this file.
*/

#ifndef MEMOBS_CUDA_H
#define MEMOBS_CUDA_H

#include "memobs.h"
#include <cuda_runtime_api.h>

#if !defined(MEMOBS_VERSION_MAJOR) || MEMOBS_VERSION_MAJOR != 1 || MEMOBS_VERSION_MINOR != 0 || MEMOBS_VERSION_PATCH != 0
#error "memobs_cuda.h 1.0.0 needs memobs.h 1.0.0 (another memobs.h is on the include path)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================== */
/* Allocations                                                              */
/* ======================================================================== */

MEMOBS_API cudaError_t memobs_cudaMalloc(void **devPtr, size_t size);
MEMOBS_API cudaError_t memobs_cudaFree(void *devPtr);
MEMOBS_API cudaError_t memobs_cudaMallocHost(void **ptr, size_t size);
MEMOBS_API cudaError_t memobs_cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaFreeHost(void *ptr);
MEMOBS_API cudaError_t memobs_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaHostRegister(void *ptr, size_t size, unsigned int flags);
MEMOBS_API cudaError_t memobs_cudaHostUnregister(void *ptr);
/* memobs_cudaMallocAsync, memobs_cudaMallocFromPoolAsync, memobs_cudaFreeAsync:
   inline, below. */

/* ======================================================================== */
/* Memory outside memobs, out-of-memory reports, checks                     */
/* ======================================================================== */

typedef struct {
    int device;
    uint64_t driver_total, driver_free, driver_used; /* the driver's cuMemGetInfo on that device */
    uint64_t tracked;                                /* memobs_get_device_bytes(device) */
    int64_t outside;                                 /* driver_used - tracked */
} memobs_cuda_mem_t;

/* Fills *out for a device, creating no context. Returns MEMOBS_OK;
   MEMOBS_ERR_INVALID for NULL out (logged), or quietly for a device this
   process has no active context on (unused: not asked); MEMOBS_ERR_IO when
   the driver fails or was not found (logged). */
MEMOBS_API int memobs_cuda_get_mem_info(memobs_cuda_mem_t *out, int device);
/* One line per device: driver used/total, tracked, outside memobs (or
   "not used by this process"). */
MEMOBS_API int memobs_cuda_print_mem(FILE *f);
/* Where the out-of-memory flight recorder goes: "stderr" (default),
   "stdout", a path (appended), or NULL/"off" (the words of memobs.h's
   OUTPUTS rule: 1 is stderr, 0 off; "" is an error). */
MEMOBS_API int memobs_cuda_set_oom_report(const char *dest);
/* Out-of-memory errors seen by the allocation wrappers. */
MEMOBS_API uint64_t memobs_cuda_get_oom_count(void);

/* ======================================================================== */
/* Timing copies                                                            */
/* ======================================================================== */

/* Switches timing of the wrapped copies on (1) or off (0); copies already
   timed are still resolved. Returns the previous setting (before 1.0 it
   returned MEMOBS_OK, which is 0); memobs_cuda_get_timing() reads it. */
MEMOBS_API int memobs_cuda_set_timing(int on);
MEMOBS_API int memobs_cuda_get_timing(void);
/* Resolves the timed copies that have completed, in issue order, without
   waiting for the others; returns how many. */
MEMOBS_API int memobs_cuda_poll(void);
/* Copies that were recorded but not timed (queue full, event errors, a
   stream whose capture state the driver would not tell, a batch in several
   directions); a copy that fails is not counted. */
MEMOBS_API uint64_t memobs_cuda_get_untimed(void);

/* ======================================================================== */
/* Graphs                                                                   */
/* ======================================================================== */

typedef struct {
    uint64_t captured_copies, captured_bytes; /* copies seen going into a capture */
    uint64_t launches;                        /* launches of executable graphs memobs knows */
    uint64_t launched_copies, launched_bytes; /* counted by those launches */
    uint64_t unknown_launches;                /* launches of executable graphs it does not know */
    uint64_t dropped;                         /* captures, graphs, executables not remembered */
    uint32_t captures, graphs, execs;         /* remembered now */
} memobs_cuda_graph_stats_t;
/* MEMOBS_OK, or MEMOBS_ERR_INVALID for NULL. */
MEMOBS_API int memobs_cuda_get_graph_stats(memobs_cuda_graph_stats_t *out);

/* memobs_cudaStreamBeginCapture, memobs_cudaStreamEndCapture,
   memobs_cudaGraphInstantiate(WithFlags/WithParams), memobs_cudaGraphLaunch,
   memobs_cudaGraphExecDestroy, memobs_cudaGraphDestroy and
   memobs_cudaDeviceReset: inline, below. */

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
MEMOBS_API int memobs_cuda_get_nvtx(void);

/* ======================================================================== */
/* Virtual memory management (cuMemCreate, cuMemMap, ...)                   */
/* ======================================================================== */

/* What memobs remembers of the driver's virtual memory management (see
   VIRTUAL MEMORY above). */
typedef struct {
    uint32_t handles;         /* physical allocations live now (the driver has not freed them) */
    uint32_t released;        /* of those, released but still mapped */
    uint32_t mappings;        /* mapped ranges remembered now */
    uint32_t reservations;    /* address ranges reserved now */
    uint64_t handle_bytes;    /* bytes of those handles */
    uint64_t mapped_bytes;    /* bytes of those mappings */
    uint64_t reserved_bytes;  /* bytes of those reservations */
    uint64_t dropped;         /* handles and mappings not remembered: the table was full */
} memobs_cuda_vmm_stats_t;
/* MEMOBS_OK, or MEMOBS_ERR_INVALID for NULL. */
MEMOBS_API int memobs_cuda_get_vmm_stats(memobs_cuda_vmm_stats_t *out);

/* ======================================================================== */
/* Private: what the inline wrappers call around the runtime's own call     */
/* ======================================================================== */

typedef struct {
    void *ev[2];                /* start and end event (CUevent) when timed on the device */
    void *ctx;                  /* their context */
    unsigned long long ctx_id;  /* its id (cuCtxGetId; 0 where the driver lacks it) */
    cudaStream_t stream;        /* with stream 0 resolved */
    unsigned long long capture; /* the capture sequence the copy went into; 0: none */
    uint64_t bytes, t0;         /* t0: host clock before a synchronous copy */
    uint64_t xin;               /* a synchronous timed copy's token among the transfers in flight (mode 2) */
    uint64_t n;                 /* copies it stands for: 1, or those of one direction in a batch */
    int dir;                    /* MEMOBS_DIR_*, or -1: nothing to record */
    int mode;                   /* 0 not timed, 1 device events, 2 host clock, 3 untimed (counted if recorded) */
} memobs_cuda__op_t;

/* how: 0 synchronous (host clock), 1 on stream (events, capture-aware),
   2 on stream, capture-aware, never timed (a batch of several directions,
   whose copies share one call). */
MEMOBS_API void memobs_cuda__copy_pre(memobs_cuda__op_t *op, const void *dst, const void *src, uint64_t bytes,
                                      enum cudaMemcpyKind kind, cudaStream_t stream, int how);
MEMOBS_API cudaError_t memobs_cuda__copy_post(memobs_cuda__op_t *op, cudaError_t rc);
/* The kind of a copy with device memory named by something other than a
   pointer on one side (a CUDA array, a symbol: dst_dev, src_dev): that side
   is device memory whatever kind says (the runtime corrects it), the other
   as kind says, or as the driver says for cudaMemcpyDefault. A kind the
   runtime refuses comes back unchanged. */
MEMOBS_API enum cudaMemcpyKind memobs_cuda__side_kind(int dst_dev, const void *dst, int src_dev, const void *src,
                                                      enum cudaMemcpyKind kind);
/* cudaMemcpy3D(Async) and cudaMemcpy3DPeer(Async): width x height x depth
   bytes between pointers; with a CUDA array on either side nothing is
   recorded (its extent is in elements of a size memobs does not ask). */
MEMOBS_API void memobs_cuda__copy3d_pre(memobs_cuda__op_t *op, const struct cudaMemcpy3DParms *p, cudaStream_t stream,
                                        int how);
MEMOBS_API void memobs_cuda__peer3d_pre(memobs_cuda__op_t *op, const struct cudaMemcpy3DPeerParms *p,
                                        cudaStream_t stream, int how);
#if CUDART_VERSION >= 13000
/* A batch (cudaMemcpyBatchAsync: dsts/srcs/sizes; cudaMemcpy3DBatchAsync:
   ops) as up to three ops, one per direction, each standing for its
   copies; the direction of each copy from where its pointers live. */
MEMOBS_API void memobs_cuda__batch_pre(memobs_cuda__op_t op[3], void *const *dsts, const void *const *srcs,
                                       const size_t *sizes, const struct cudaMemcpy3DBatchOp *ops, size_t count,
                                       cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cuda__batch_post(memobs_cuda__op_t op[3], cudaError_t rc);
#endif
MEMOBS_API int memobs_cuda__free_pre(const void *p);
MEMOBS_API cudaError_t memobs_cuda__free_post(cudaError_t rc, const void *p, int marked);
/* Pinned blocks: into (registered: cudaHostRegister) and out of the
   pinned table as well as the tracker (memobs_get_pinned). */
MEMOBS_API cudaError_t memobs_cuda__pinned_allocated(cudaError_t rc, const char *call, const void *p, size_t size,
                                                     int registered);
MEMOBS_API int memobs_cuda__pinned_free_pre(const void *p);
MEMOBS_API cudaError_t memobs_cuda__pinned_freed(cudaError_t rc, const void *p, int marked);
MEMOBS_API cudaError_t memobs_cuda__free_async_post(cudaError_t rc, const void *p, int marked, cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cuda__malloc_async_post(cudaError_t rc, void **p, size_t size, cudaStream_t stream);
/* An allocation from a memory pool (cudaMallocFromPoolAsync,
   cuMemAllocFromPoolAsync: call names it): its memory type and device from
   the pointer's attributes (a host-located pool gives pinned memory, a
   peer's pool that peer's), not from the stream. */
MEMOBS_API cudaError_t memobs_cuda__pool_alloc_post(cudaError_t rc, const char *call, void **p, size_t size,
                                                    cudaStream_t stream);
MEMOBS_API unsigned long long memobs_cuda__capture_id(cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cuda__capture_begun(cudaError_t rc, cudaStream_t stream);
MEMOBS_API cudaError_t memobs_cuda__capture_ended(cudaError_t rc, unsigned long long id, const cudaGraph_t *graph);
MEMOBS_API cudaError_t memobs_cuda__instantiated(cudaError_t rc, const cudaGraphExec_t *exec, cudaGraph_t graph);
MEMOBS_API cudaError_t memobs_cuda__launched(cudaError_t rc, cudaGraphExec_t exec, unsigned long long capture);
MEMOBS_API cudaError_t memobs_cuda__forget(cudaError_t rc, const void *handle, int exec);
MEMOBS_API void *memobs_cuda__reset_pre(void);
MEMOBS_API cudaError_t memobs_cuda__reset_post(cudaError_t rc, void *ctx);
/* Virtual memory management: what the LD_PRELOAD library (and
   memobs_cuMemCreate...) calls around the driver's calls. rc is the
   CUresult; each returns it. loc_type, loc_id: the CUmemLocation of the
   CUmemAllocationProp. A *_pre returns a token for its *_post. */
MEMOBS_API int memobs_cuda__vmm_created(int rc, unsigned long long handle, size_t size, int loc_type, int loc_id);
MEMOBS_API unsigned long long memobs_cuda__vmm_pre(void);
MEMOBS_API int memobs_cuda__vmm_released(int rc, unsigned long long handle, unsigned long long token);
MEMOBS_API int memobs_cuda__vmm_mapped(int rc, unsigned long long va, size_t size, size_t offset,
                                       unsigned long long handle);
MEMOBS_API int memobs_cuda__vmm_unmapped(int rc, unsigned long long va, size_t size, unsigned long long token);
MEMOBS_API int memobs_cuda__vmm_reserved(int rc, unsigned long long va, size_t size);
MEMOBS_API int memobs_cuda__vmm_freed(int rc, unsigned long long va, size_t size, unsigned long long token);

#ifdef __cplusplus
#define MEMOBS_CUDA__U64(x) static_cast<uint64_t>(x)
#else
#define MEMOBS_CUDA__U64(x) ((uint64_t)(x))
#endif

/* Stream 0 as the caller's translation unit means it. */
#ifdef __CUDART_API_PER_THREAD_DEFAULT_STREAM
#define MEMOBS_CUDA__STREAM(s) ((s) ? (s) : cudaStreamPerThread)
#define MEMOBS_CUDA__IMPLICIT cudaStreamPerThread
#else
#define MEMOBS_CUDA__STREAM(s) ((s) ? (s) : cudaStreamLegacy)
#define MEMOBS_CUDA__IMPLICIT cudaStreamLegacy
#endif

/* ======================================================================== */
/* Copies, stream-ordered allocations, capture and graphs (inline)          */
/* ======================================================================== */

static inline cudaError_t memobs_cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, count, kind, NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpy(dst, src, count, kind));
}

static inline cudaError_t memobs_cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                                 enum cudaMemcpyKind kind, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, count, kind, MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpyAsync(dst, src, count, kind, stream));
}

static inline cudaError_t memobs_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                              size_t width, size_t height, enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, MEMOBS_CUDA__U64(width) * height, kind, NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind));
}

static inline cudaError_t memobs_cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                                   cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, MEMOBS_CUDA__U64(width) * height, kind, MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream));
}

/* cudaMemcpyPeer may return before the copy is done; it is serialized with
   the current device's work, so its events go on the legacy stream. */
static inline cudaError_t memobs_cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                                size_t count) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, count, cudaMemcpyDeviceToDevice, cudaStreamLegacy, 1);
    return memobs_cuda__copy_post(&op, cudaMemcpyPeer(dst, dstDevice, src, srcDevice, count));
}

/* cuda_runtime_api.h maps no peer copy but cudaMemcpy3DPeer(Async) to a
   per-thread entry point (libcudart exports no cudaMemcpyPeerAsync_ptsz):
   stream 0 here is the legacy stream in every build. */
static inline cudaError_t memobs_cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                                     size_t count, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, src, count, cudaMemcpyDeviceToDevice, stream ? stream : cudaStreamLegacy, 1);
    return memobs_cuda__copy_post(&op, cudaMemcpyPeerAsync(dst, dstDevice, src, srcDevice, count, stream));
}

/* 3D copies: the extent's bytes when both sides are pointers (see
   memobs_cuda__copy3d_pre). cudaMemcpy3DPeer, like cudaMemcpyPeer, gets
   its events on the legacy stream. */
static inline cudaError_t memobs_cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
    memobs_cuda__op_t op;
    memobs_cuda__copy3d_pre(&op, p, NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpy3D(p));
}

static inline cudaError_t memobs_cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy3d_pre(&op, p, MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpy3DAsync(p, stream));
}

static inline cudaError_t memobs_cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms *p) {
    memobs_cuda__op_t op;
    memobs_cuda__peer3d_pre(&op, p, MEMOBS_CUDA__IMPLICIT, 1);
    return memobs_cuda__copy_post(&op, cudaMemcpy3DPeer(p));
}

static inline cudaError_t memobs_cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__peer3d_pre(&op, p, MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpy3DPeerAsync(p, stream));
}

/* Symbols are device memory: count bytes, to or from the other side. */
static inline cudaError_t memobs_cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                                                    enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, NULL, src, count, memobs_cuda__side_kind(1, NULL, 0, src, kind), NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpyToSymbol(symbol, src, count, offset, kind));
}

static inline cudaError_t memobs_cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count,
                                                         size_t offset, enum cudaMemcpyKind kind, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, NULL, src, count, memobs_cuda__side_kind(1, NULL, 0, src, kind),
                          MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind, stream));
}

static inline cudaError_t memobs_cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset,
                                                      enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, NULL, count, memobs_cuda__side_kind(0, dst, 1, NULL, kind), NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpyFromSymbol(dst, symbol, count, offset, kind));
}

static inline cudaError_t memobs_cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count,
                                                           size_t offset, enum cudaMemcpyKind kind,
                                                           cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, NULL, count, memobs_cuda__side_kind(0, dst, 1, NULL, kind),
                          MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(&op, cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind, stream));
}

/* 2D copies with a CUDA array (device memory) on one or both sides:
   width x height bytes (width is in bytes for these calls). */
static inline cudaError_t memobs_cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                                     size_t spitch, size_t width, size_t height,
                                                     enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, NULL, src, MEMOBS_CUDA__U64(width) * height,
                          memobs_cuda__side_kind(1, NULL, 0, src, kind), NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind));
}

static inline cudaError_t memobs_cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                          const void *src, size_t spitch, size_t width, size_t height,
                                                          enum cudaMemcpyKind kind, cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, NULL, src, MEMOBS_CUDA__U64(width) * height,
                          memobs_cuda__side_kind(1, NULL, 0, src, kind), MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(
        &op, cudaMemcpy2DToArrayAsync(dst, wOffset, hOffset, src, spitch, width, height, kind, stream));
}

static inline cudaError_t memobs_cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src,
                                                       size_t wOffset, size_t hOffset, size_t width, size_t height,
                                                       enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, NULL, MEMOBS_CUDA__U64(width) * height,
                          memobs_cuda__side_kind(0, dst, 1, NULL, kind), NULL, 0);
    return memobs_cuda__copy_post(&op,
                                  cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height, kind));
}

static inline cudaError_t memobs_cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src,
                                                            size_t wOffset, size_t hOffset, size_t width,
                                                            size_t height, enum cudaMemcpyKind kind,
                                                            cudaStream_t stream) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, dst, NULL, MEMOBS_CUDA__U64(width) * height,
                          memobs_cuda__side_kind(0, dst, 1, NULL, kind), MEMOBS_CUDA__STREAM(stream), 1);
    return memobs_cuda__copy_post(
        &op, cudaMemcpy2DFromArrayAsync(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream));
}

static inline cudaError_t memobs_cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst,
                                                          cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc,
                                                          size_t width, size_t height, enum cudaMemcpyKind kind) {
    memobs_cuda__op_t op;
    memobs_cuda__copy_pre(&op, NULL, NULL, MEMOBS_CUDA__U64(width) * height,
                          memobs_cuda__side_kind(1, NULL, 1, NULL, kind), NULL, 0);
    return memobs_cuda__copy_post(&op, cudaMemcpy2DArrayToArray(dst, wOffsetDst, hOffsetDst, src, wOffsetSrc,
                                                                hOffsetSrc, width, height, kind));
}

#if CUDART_VERSION >= 13000
/* Batches (CUDA 13's signatures): each copy counted in its direction. */
static inline cudaError_t memobs_cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs, const size_t *sizes,
                                                      size_t count, struct cudaMemcpyAttributes *attrs,
                                                      size_t *attrsIdxs, size_t numAttrs, cudaStream_t stream) {
    memobs_cuda__op_t op[3];
    memobs_cuda__batch_pre(op, dsts, srcs, sizes, NULL, count, MEMOBS_CUDA__STREAM(stream));
    return memobs_cuda__batch_post(op,
                                   cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream));
}

static inline cudaError_t memobs_cudaMemcpy3DBatchAsync(size_t numOps, struct cudaMemcpy3DBatchOp *opList,
                                                        unsigned long long flags, cudaStream_t stream) {
    memobs_cuda__op_t op[3];
    memobs_cuda__batch_pre(op, NULL, NULL, NULL, opList, numOps, MEMOBS_CUDA__STREAM(stream));
    return memobs_cuda__batch_post(op, cudaMemcpy3DBatchAsync(numOps, opList, flags, stream));
}
#endif

#if CUDART_VERSION >= 11020
static inline cudaError_t memobs_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    return memobs_cuda__malloc_async_post(cudaMallocAsync(devPtr, size, hStream), devPtr, size,
                                          MEMOBS_CUDA__STREAM(hStream));
}

/* From a pool: device memory of the pool's device, or pinned host memory
   of a host-located pool (CUDA 12.2+), as the pointer's attributes say. */
static inline cudaError_t memobs_cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                                         cudaStream_t stream) {
    return memobs_cuda__pool_alloc_post(cudaMallocFromPoolAsync(ptr, size, memPool, stream),
                                        "cudaMallocFromPoolAsync", ptr, size, MEMOBS_CUDA__STREAM(stream));
}

/* The block stays tracked, pending, until an event recorded on its stream
   after the free has completed. */
static inline cudaError_t memobs_cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    int marked = memobs_cuda__free_pre(devPtr);
    return memobs_cuda__free_async_post(cudaFreeAsync(devPtr, hStream), devPtr, marked, MEMOBS_CUDA__STREAM(hStream));
}
#endif

static inline cudaError_t memobs_cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    return memobs_cuda__capture_begun(cudaStreamBeginCapture(stream, mode), MEMOBS_CUDA__STREAM(stream));
}

static inline cudaError_t memobs_cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
    unsigned long long id = memobs_cuda__capture_id(MEMOBS_CUDA__STREAM(stream));
    return memobs_cuda__capture_ended(cudaStreamEndCapture(stream, pGraph), id, pGraph);
}

#if CUDART_VERSION >= 12000
static inline cudaError_t memobs_cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                      unsigned long long flags) {
    return memobs_cuda__instantiated(cudaGraphInstantiate(pGraphExec, graph, flags), pGraphExec, graph);
}
static inline cudaError_t memobs_cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                                cudaGraphInstantiateParams *params) {
    return memobs_cuda__instantiated(cudaGraphInstantiateWithParams(pGraphExec, graph, params), pGraphExec, graph);
}
#else
static inline cudaError_t memobs_cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                      cudaGraphNode_t *pErrorNode, char *pLogBuffer,
                                                      size_t bufferSize) {
    return memobs_cuda__instantiated(cudaGraphInstantiate(pGraphExec, graph, pErrorNode, pLogBuffer, bufferSize),
                                     pGraphExec, graph);
}
#endif

#if CUDART_VERSION >= 11040
static inline cudaError_t memobs_cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                               unsigned long long flags) {
    return memobs_cuda__instantiated(cudaGraphInstantiateWithFlags(pGraphExec, graph, flags), pGraphExec, graph);
}
#endif

static inline cudaError_t memobs_cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
    unsigned long long id = memobs_cuda__capture_id(MEMOBS_CUDA__STREAM(stream));
    return memobs_cuda__launched(cudaGraphLaunch(graphExec, stream), graphExec, id);
}

static inline cudaError_t memobs_cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    return memobs_cuda__forget(cudaGraphExecDestroy(graphExec), graphExec, 1);
}

static inline cudaError_t memobs_cudaGraphDestroy(cudaGraph_t graph) {
    return memobs_cuda__forget(cudaGraphDestroy(graph), graph, 0);
}

static inline cudaError_t memobs_cudaDeviceReset(void) {
    void *ctx = memobs_cuda__reset_pre();
    return memobs_cuda__reset_post(cudaDeviceReset(), ctx);
}

/* ======================================================================== */
/* Virtual memory management wrappers (inline; with <cuda.h> included first)*/
/* ======================================================================== */

/* For C/C++ code that calls the driver's virtual memory management itself
   (vLLM's sleep-mode allocator does): the driver's signatures, its
   CUresult unchanged, recorded as VIRTUAL MEMORY says. Declared where
   <cuda.h> was included before memobs_cuda.h; the caller links the
   driver (-lcuda), as it does for the calls themselves. */
#ifdef __cuda_cuda_h__
#ifdef __cplusplus
#define MEMOBS_CUDA__AS(T, x) static_cast<T>(x)
#else
#define MEMOBS_CUDA__AS(T, x) ((T)(x))
#endif
static inline CUresult memobs_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                          const CUmemAllocationProp *prop, unsigned long long flags) {
    int rc = MEMOBS_CUDA__AS(int, cuMemCreate(handle, size, prop, flags));
    int loc_type = prop ? MEMOBS_CUDA__AS(int, prop->location.type) : 0, loc_id = prop ? prop->location.id : 0;
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_created(rc, rc == 0 ? *handle : 0, size, loc_type, loc_id));
}
static inline CUresult memobs_cuMemRelease(CUmemGenericAllocationHandle handle) {
    unsigned long long token = memobs_cuda__vmm_pre();
    int rc = MEMOBS_CUDA__AS(int, cuMemRelease(handle));
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_released(rc, handle, token));
}
static inline CUresult memobs_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                       CUmemGenericAllocationHandle handle, unsigned long long flags) {
    int rc = MEMOBS_CUDA__AS(int, cuMemMap(ptr, size, offset, handle, flags));
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_mapped(rc, ptr, size, offset, handle));
}
static inline CUresult memobs_cuMemUnmap(CUdeviceptr ptr, size_t size) {
    unsigned long long token = memobs_cuda__vmm_pre();
    int rc = MEMOBS_CUDA__AS(int, cuMemUnmap(ptr, size));
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_unmapped(rc, ptr, size, token));
}
static inline CUresult memobs_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                  unsigned long long flags) {
    int rc = MEMOBS_CUDA__AS(int, cuMemAddressReserve(ptr, size, alignment, addr, flags));
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_reserved(rc, rc == 0 ? *ptr : 0, size));
}
static inline CUresult memobs_cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    unsigned long long token = memobs_cuda__vmm_pre();
    int rc = MEMOBS_CUDA__AS(int, cuMemAddressFree(ptr, size));
    return MEMOBS_CUDA__AS(CUresult, memobs_cuda__vmm_freed(rc, ptr, size, token));
}
#endif

/* ======================================================================== */
/* Deprecated names (before 1.0)                                            */
/* ======================================================================== */

/* As memobs.h's: static inline wrappers with a deprecation warning, left
   out with MEMOBS_NO_DEPRECATED; docs/naming.md has the table. */
#ifndef MEMOBS_NO_DEPRECATED
MEMOBS__DEPRECATED("memobs_cuda_get_nvtx") static inline int memobs_cuda_nvtx(void) { return memobs_cuda_get_nvtx(); }
MEMOBS__DEPRECATED("memobs_cuda_get_graph_stats")
static inline int memobs_cuda_graph_stats(memobs_cuda_graph_stats_t *out) { return memobs_cuda_get_graph_stats(out); }
MEMOBS__DEPRECATED("memobs_cuda_get_mem_info(out, device)")
static inline int memobs_cuda_mem_info(int device, memobs_cuda_mem_t *out) { return memobs_cuda_get_mem_info(out, device); }
MEMOBS__DEPRECATED("memobs_cuda_get_oom_count")
static inline uint64_t memobs_cuda_oom_count(void) { return memobs_cuda_get_oom_count(); }
MEMOBS__DEPRECATED("memobs_cuda_get_untimed")
static inline uint64_t memobs_cuda_untimed(void) { return memobs_cuda_get_untimed(); }
#endif /* MEMOBS_NO_DEPRECATED */

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
#include <dlfcn.h>
#include <poll.h>

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

#ifndef MEMOBS_CUDA_MAX_TIMED
#define MEMOBS_CUDA_MAX_TIMED 4096
#endif
#ifndef MEMOBS_CUDA_MAX_GRAPHS
#define MEMOBS_CUDA_MAX_GRAPHS 1024
#endif
#ifndef MEMOBS_CUDA_MAX_CAPTURES
#define MEMOBS_CUDA_MAX_CAPTURES 64
#endif
#ifndef MEMOBS_CUDA_DRIVER
#define MEMOBS_CUDA_DRIVER "libcuda.so.1"
#endif
#ifndef MEMOBS_CUDA_EXIT_WAIT_MS
#define MEMOBS_CUDA_EXIT_WAIT_MS 2000
#endif
#ifndef MEMOBS_CUDA_MAX_VMM
#define MEMOBS_CUDA_MAX_VMM 16384
#endif
#define MEMOBS_CUDA__OOM_REPORTS 3 /* flight recorder runs per process */
#define MEMOBS_CUDA__CTXS 32       /* contexts whose device is remembered */
#define MEMOBS_CUDA__SLOTS 16      /* counts of memobs' driver calls under way, by thread */

/* ======================================================================== */
/* Private: the driver API                                                  */
/* ======================================================================== */

/* The driver functions memobs calls, by their exported names, with the
   driver's types written as their ABI is (CUresult, CUdevice and the
   capture enums are int; CUcontext, CUevent, CUstream are pointers;
   CUdeviceptr is 64-bit). They come from memobs_cuda_driver_symbol() where
   the program defines it (a test double of the driver does), else from
   MEMOBS_CUDA_DRIVER opened with dlopen (the library the runtime uses). */
#define MEMOBS_CUDA__DRV(X)                                                                                  \
    X(ctx_current, "cuCtxGetCurrent", (void **ctx))                                                          \
    X(ctx_push, "cuCtxPushCurrent_v2", (void *ctx))                                                          \
    X(ctx_pop, "cuCtxPopCurrent_v2", (void **ctx))                                                           \
    X(ctx_device, "cuCtxGetDevice", (int *device))                                                           \
    X(ctx_id, "cuCtxGetId", (void *ctx, unsigned long long *id))                                             \
    X(stream_ctx, "cuStreamGetCtx", (cudaStream_t s, void **ctx))                                            \
    X(capture2, "cuStreamGetCaptureInfo_v2",                                                                 \
      (cudaStream_t s, int *status, unsigned long long *id, void **graph, const void **deps, size_t *ndeps)) \
    X(capture1, "cuStreamGetCaptureInfo", (cudaStream_t s, int *status, unsigned long long *id))             \
    X(event_create, "cuEventCreate", (cudaEvent_t * e, unsigned flags))                                      \
    X(event_record, "cuEventRecord", (cudaEvent_t e, cudaStream_t s))                                        \
    X(event_query, "cuEventQuery", (cudaEvent_t e))                                                          \
    X(event_sync, "cuEventSynchronize", (cudaEvent_t e))                                                     \
    X(elapsed1, "cuEventElapsedTime", (float *ms, cudaEvent_t a, cudaEvent_t b))                             \
    X(elapsed2, "cuEventElapsedTime_v2", (float *ms, cudaEvent_t a, cudaEvent_t b))                          \
    X(event_destroy, "cuEventDestroy_v2", (cudaEvent_t e))                                                   \
    X(mem_info, "cuMemGetInfo_v2", (size_t * free_b, size_t *total_b))                                       \
    X(ptr_attrs, "cuPointerGetAttributes", (unsigned n, int *attrs, void **data, unsigned long long p))      \
    X(primary_state, "cuDevicePrimaryCtxGetState", (int dev, unsigned *flags, int *active))                  \
    X(primary_retain, "cuDevicePrimaryCtxRetain", (void **ctx, int dev))                                     \
    X(primary_release, "cuDevicePrimaryCtxRelease_v2", (int dev))                                            \
    X(device_count, "cuDeviceGetCount", (int *n))                                                            \
    X(device_get, "cuDeviceGet", (int *dev, int ordinal))                                                    \
    X(exchange_mode, "cuThreadExchangeStreamCaptureMode", (int *mode))                                       \
    X(error_name, "cuGetErrorName", (int err, const char **name))

/* Driver constants (cuda.h), by value. */
#define MEMOBS_CUDA__DEINITIALIZED 4   /* CUDA_ERROR_DEINITIALIZED: a call memobs no longer makes */
#define MEMOBS_CUDA__NOT_READY 600     /* CUDA_ERROR_NOT_READY */
#define MEMOBS_CUDA__RELAXED 2         /* CU_STREAM_CAPTURE_MODE_RELAXED */
#define MEMOBS_CUDA__CAPTURING 1       /* CU_STREAM_CAPTURE_STATUS_ACTIVE */
#define MEMOBS_CUDA__INVALIDATED 2     /* CU_STREAM_CAPTURE_STATUS_INVALIDATED */
#define MEMOBS_CUDA__ATTR_TYPE 2       /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
#define MEMOBS_CUDA__ATTR_MANAGED 8    /* CU_POINTER_ATTRIBUTE_IS_MANAGED */
#define MEMOBS_CUDA__MEM_DEVICE 2      /* CU_MEMORYTYPE_DEVICE */
#define MEMOBS_CUDA__MEM_HOST 1        /* CU_MEMORYTYPE_HOST */
#define MEMOBS_CUDA__ATTR_ORDINAL 9    /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */

#if !defined(MEMOBS_DISABLE)
extern void *memobs_cuda_driver_symbol(const char *name) __attribute__((weak));
#endif

static struct {
    int ok;     /* the functions memobs needs were found */
    int looked; /* set (release) once the lookup is done: memobs_cuda__drv's fast path */
#define MEMOBS_CUDA__FIELD(name, sym, params) int(*name) params;
    MEMOBS_CUDA__DRV(MEMOBS_CUDA__FIELD)
#undef MEMOBS_CUDA__FIELD
} memobs_cuda__d;
static pthread_once_t memobs_cuda__d_once = PTHREAD_ONCE_INIT;

static void memobs_cuda__drv_init(void) {
#ifndef MEMOBS_DISABLE
    void *h = NULL;
    int given = memobs_cuda_driver_symbol != NULL;
    if (!given) h = dlopen(MEMOBS_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL); /* never closed */
#define MEMOBS_CUDA__FIND(name, sym, params)                                          \
    *(void **)(void *)&memobs_cuda__d.name = given ? memobs_cuda_driver_symbol(sym)  \
                                             : h ? dlsym(h, sym) : NULL; /* POSIX's cast for dlsym */
    MEMOBS_CUDA__DRV(MEMOBS_CUDA__FIND)
#undef MEMOBS_CUDA__FIND
    if (!memobs_cuda__d.elapsed1) memobs_cuda__d.elapsed1 = memobs_cuda__d.elapsed2;
    memobs_cuda__d.ok = (memobs_cuda__d.capture2 || memobs_cuda__d.capture1) && memobs_cuda__d.ctx_current && memobs_cuda__d.ctx_push && memobs_cuda__d.ctx_pop &&
                        memobs_cuda__d.ctx_device && memobs_cuda__d.stream_ctx && memobs_cuda__d.event_create &&
                        memobs_cuda__d.event_record && memobs_cuda__d.event_query && memobs_cuda__d.event_sync &&
                        memobs_cuda__d.elapsed1 && memobs_cuda__d.event_destroy && memobs_cuda__d.mem_info &&
                        memobs_cuda__d.ptr_attrs && memobs_cuda__d.exchange_mode;
    if (!memobs_cuda__d.ok)
        memobs__log(MEMOBS_LOG_WARN, "the CUDA driver (%s) was not found or lacks a function memobs needs: no "
                    "copy timing, no capture detection, no device memory figures", MEMOBS_CUDA_DRIVER);
#endif
    __atomic_store_n(&memobs_cuda__d.looked, 1, __ATOMIC_RELEASE);
}

/* 1 when memobs may call the driver. Once the lookup is done, a load
   instead of a call of pthread_once (on every copy). */
static int memobs_cuda__drv(void) {
    if (!__atomic_load_n(&memobs_cuda__d.looked, __ATOMIC_ACQUIRE))
        pthread_once(&memobs_cuda__d_once, memobs_cuda__drv_init);
    return memobs_cuda__d.ok;
}

/* ======================================================================== */
/* Private: state                                                           */
/* ======================================================================== */

typedef struct {
    cudaEvent_t start, end;
    void *ctx;                 /* events belong to the context they were made in, */
    unsigned long long ctx_id; /* its id: a context at the same address later is another */
} memobs_cuda__pair_t;

typedef struct {
    memobs_cuda__pair_t ev;
    uint64_t bytes;
    unsigned dir, phase;
    int bound;    /* issued by a thread bound to request req (memobs_request_enter) */
    uint64_t req; /* its device time goes to that request's ledger too */
    uint64_t xin; /* its token among the transfers in flight (memobs__xin_hold), 0: none */
} memobs_cuda__timed_t;

typedef struct {
    memobs_cuda__pair_t ev; /* ev.start: recorded on the stream after the free */
    const void *ptr;
} memobs_cuda__pfree_t;

/* What a capture, a graph or an executable graph moves, by direction. */
typedef struct {
    uint64_t bytes[3], n[3];
} memobs_cuda__moves_t;
typedef struct {
    unsigned long long key; /* capture id, or the graph / executable handle */
    memobs_cuda__moves_t m;
    cudaStream_t stream;    /* a capture: the stream it began on (or its first copy's); graphs: NULL */
} memobs_cuda__gent_t;
typedef struct {
    memobs_cuda__gent_t *e;
    uint32_t n, cap;
} memobs_cuda__gtab_t;

static pthread_once_t memobs_cuda__once = PTHREAD_ONCE_INIT;
static struct {
    pthread_mutex_t lock; /* configuration */
    char oom_dest[512];   /* "" = off */
    memobs__u64_t ooms;
    /* timing */
    memobs__u32_t timing;
    memobs__u32_t ready;         /* set (release) at the end of memobs_cuda__init_once: its fast path */
    pthread_mutex_t tlock;       /* the queue, the pool, the pending frees, the contexts */
    memobs_cuda__timed_t *queue; /* MEMOBS_CUDA_MAX_TIMED, a ring */
    uint32_t head, n;
    memobs_cuda__pair_t *pool;   /* event pairs not in use */
    uint32_t npool, created;     /* pairs in the pool; pairs ever created */
    memobs_cuda__pfree_t *frees; /* pending stream-ordered frees, a ring */
    uint32_t fhead, fn;
    memobs__u64_t untimed;
    struct {
        void *ctx;
        unsigned long long id;   /* cuCtxGetId (0 where the driver lacks it: the address alone) */
        int device;
    } ctxs[MEMOBS_CUDA__CTXS];   /* context -> device, oldest first */
    uint32_t nctx;
    /* exit and fork (see memobs_cuda__exit_stop) */
    memobs__u32_t stop;          /* MEMOBS_CUDA__STOP_*: memobs makes no CUDA call any more; 0 while it may */
    memobs__u32_t seen;          /* CUDA is in use in this process: a call seen, or the driver answered */
    memobs__u32_t hooked;        /* MEMOBS_CUDA__HOOK_* bits: when the exit handler was registered */
    memobs__u32_t nslot;         /* slots handed to threads */
    struct {
        memobs__u32_t n;         /* sections of memobs' own driver calls under way */
        char pad[64 - sizeof(memobs__u32_t)];
    } busy[MEMOBS_CUDA__SLOTS];
    memobs__u32_t fig_lock;      /* the last figures read of each device */
    struct {
        uint64_t free_b, total, ns; /* ns: when read; 0: never */
    } fig[MEMOBS_MAX_DEVICES];
    /* graphs */
    pthread_mutex_t glock;
    memobs_cuda__gtab_t caps, graphs, execs;
    memobs_cuda_graph_stats_t gst; /* the counters; the sizes are read from the tables */
    int graphs_full_warned;
#ifdef MEMOBS_CUDA__NVTX
    /* NVTX */
    memobs__u32_t nvtx;         /* ranges and marks on: MEMOBS_NVTX, memobs_cuda_set_nvtx */
    memobs__u32_t nvtx_lock;    /* making the domain, registering names */
    int nvtx_made;              /* the domain was made (under nvtx_lock) */
    nvtxDomainHandle_t domain;  /* "memobs" */
    nvtxStringHandle_t names[MEMOBS_MAX_REGIONS]; /* by region id: NULL, a handle, or MEMOBS_CUDA__NVTX_NONE */
#endif
} memobs_cuda__g;

/* Why memobs makes no CUDA call any more (memobs_cuda__g.stop). */
#define MEMOBS_CUDA__STOP_EXIT 1u /* its exit handler ran: the runtime tears down next */
#define MEMOBS_CUDA__STOP_FORK 2u /* a child forked from a process using CUDA */
/* When the exit handler was registered (memobs_cuda__g.hooked). */
#define MEMOBS_CUDA__HOOK_ANY 1u     /* at least once */
#define MEMOBS_CUDA__HOOK_RUNTIME 2u /* after a runtime call returned: after the runtime's own */

/* The calling thread's slot in memobs_cuda__g.busy, plus 1 (0: none yet). */
static __thread unsigned memobs_cuda__slot;
/* Set by the LD_PRELOAD library around its driver API interposers: the
   call seen is the driver's, not the runtime's. */
static __thread int memobs_cuda__via_driver __attribute__((unused));

/* Every driver call of memobs' own runs inside a section: opened by
   memobs_cuda__in() (0: memobs makes no CUDA call any more, nothing
   opened), closed by memobs_cuda__out(). A section is never refused
   halfway, so a push is always popped, a retain released. The exit
   handler stops new sections, then waits for those under way (a Dekker
   pair: each side's sequentially consistent write comes before its read
   of the other's). */
static int memobs_cuda__in(void) {
    unsigned s = memobs_cuda__slot;
    if (!s) s = memobs_cuda__slot = MEMOBS__ADD(&memobs_cuda__g.nslot.v, 1u) % MEMOBS_CUDA__SLOTS + 1u;
    __atomic_fetch_add(&memobs_cuda__g.busy[s - 1].n.v, 1u, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&memobs_cuda__g.stop.v, __ATOMIC_SEQ_CST)) return 1;
    __atomic_fetch_sub(&memobs_cuda__g.busy[s - 1].n.v, 1u, __ATOMIC_RELEASE);
    return 0;
}
static void memobs_cuda__out(void) {
    __atomic_fetch_sub(&memobs_cuda__g.busy[memobs_cuda__slot - 1].n.v, 1u, __ATOMIC_RELEASE);
}
/* One driver call in a section of its own; what a call memobs does not
   make returns when it has stopped. */
static int memobs_cuda__out_rc(int r) {
    memobs_cuda__out();
    return r;
}
#define MEMOBS_CUDA__CALL(fn, args) \
    (memobs_cuda__in() ? memobs_cuda__out_rc(memobs_cuda__d.fn args) : MEMOBS_CUDA__DEINITIALIZED)

static void memobs_cuda__saw(int runtime);
/* The driver answered a call that needs it initialized: CUDA is in use. */
static void memobs_cuda__answered(void) {
    if (!MEMOBS__LOAD(&memobs_cuda__g.hooked.v)) memobs_cuda__saw(0);
}

/* Opens a section in which memobs' driver calls run in the relaxed
   capture interaction mode (then none is "potentially unsafe" for a
   capture anywhere): 1 and *m, the mode to restore (-1: none), or 0 when
   memobs makes no CUDA call any more. */
static int memobs_cuda__relax(int *m) {
    if (!memobs_cuda__in()) return 0;
    *m = MEMOBS_CUDA__RELAXED;
    if (memobs_cuda__d.exchange_mode(m) != 0) *m = -1;
    return 1;
}
static void memobs_cuda__unrelax(int m) {
    if (m >= 0) (void)memobs_cuda__d.exchange_mode(&m);
    memobs_cuda__out();
}

static void memobs_cuda__poll_hook(void);
/* Virtual memory management: its section, at the end of the file. */
static void memobs_cuda__vmm_fork(int after);
static int memobs_cuda__vmm_where(const void *p);
static void memobs_cuda__vmm_report(FILE *f);
static int memobs_cuda__vmm_key(const void *p);

/* fork(): every lock of this file held across it (taken before memobs.h's,
   whose handlers were registered first), so the child never inherits one
   held by a thread that does not exist there. */
static void memobs_cuda__fork_prepare(void) {
    memobs_cuda__vmm_fork(0); /* the VMM tables' lock, first */
    pthread_mutex_lock(&memobs_cuda__g.lock);
    pthread_mutex_lock(&memobs_cuda__g.glock);
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    memobs__spin_lock(&memobs_cuda__g.fig_lock);
#ifdef MEMOBS_CUDA__NVTX
    memobs__spin_lock(&memobs_cuda__g.nvtx_lock);
#endif
}
static void memobs_cuda__fork_parent(void) {
#ifdef MEMOBS_CUDA__NVTX
    memobs__spin_unlock(&memobs_cuda__g.nvtx_lock);
#endif
    memobs__spin_unlock(&memobs_cuda__g.fig_lock);
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    pthread_mutex_unlock(&memobs_cuda__g.lock);
    memobs_cuda__vmm_fork(1); /* the VMM tables' lock, last */
}
/* CUDA is not fork-safe: a child of a process that used it must not call
   the driver, least of all on its parent's contexts and events. There
   memobs stops for good: the parent's events are dropped unasked (their
   copies stay in flight, their frees pending), its contexts forgotten.
   A child of a process that never used CUDA may use it: memobs too. */
static void memobs_cuda__fork_child(void) {
    unsigned i;
    for (i = 0; i < MEMOBS_CUDA__SLOTS; i++) memobs_cuda__g.busy[i].n.v = 0; /* threads left behind */
    if (MEMOBS__LOAD(&memobs_cuda__g.seen.v) && !MEMOBS__LOAD(&memobs_cuda__g.stop.v)) {
        MEMOBS__STORE(&memobs_cuda__g.stop.v, MEMOBS_CUDA__STOP_FORK);
        memobs_cuda__g.n = memobs_cuda__g.head = 0;
        memobs_cuda__g.fn = memobs_cuda__g.fhead = 0;
        memobs_cuda__g.npool = memobs_cuda__g.created = 0;
        memobs_cuda__g.nctx = 0;
    }
    memobs_cuda__fork_parent();
}

static void memobs_cuda__init_once(void) {
    pthread_mutex_init(&memobs_cuda__g.lock, NULL);
    pthread_mutex_init(&memobs_cuda__g.tlock, NULL);
    pthread_mutex_init(&memobs_cuda__g.glock, NULL);
    strcpy(memobs_cuda__g.oom_dest, "stderr");
    memobs_init();
    pthread_atfork(memobs_cuda__fork_prepare, memobs_cuda__fork_parent, memobs_cuda__fork_child);
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
    /* unset: stderr (above); else the rule of every output variable */
    (void)memobs__report_env("MEMOBS_OOM_REPORT", memobs_cuda__g.oom_dest, sizeof memobs_cuda__g.oom_dest);
#endif
    __atomic_store_n(&memobs_cuda__g.ready.v, 1u, __ATOMIC_RELEASE);
}

/* Once done, a load instead of a call of pthread_once (on every
   wrapper). */
static void memobs_cuda__init(void) {
    if (!__atomic_load_n(&memobs_cuda__g.ready.v, __ATOMIC_ACQUIRE))
        pthread_once(&memobs_cuda__once, memobs_cuda__init_once);
}

/* 1 when a wrapper records: memobs on, not past the exit handler. */
static int memobs_cuda__on(void) {
#ifdef MEMOBS_DISABLE
    return 0;
#else
    if (!MEMOBS__LOAD(&memobs__on.v)) return 0;
    memobs_cuda__init();
    return 1;
#endif
}

/* ======================================================================== */
/* Private: contexts                                                        */
/* ======================================================================== */

/* Contexts are known by address and id: after cuCtxDestroy,
   cuDevicePrimaryCtxReset or cudaDeviceReset a new context (of any
   device) may get the old one's address, never its id (cuCtxGetId, CUDA
   12.0: unique for the life of the process). Where the driver lacks
   cuCtxGetId the id is 0 and the address alone is the key. */

/* In a section. 1 and *id (0 without cuCtxGetId); 0 when the driver would
   not say (a destroyed context). */
static int memobs_cuda__ctx_key(void *ctx, unsigned long long *id) {
    *id = 0;
    return !memobs_cuda__d.ctx_id || memobs_cuda__d.ctx_id(ctx, id) == 0;
}

/* Caller holds tlock. memobs' events of context ctx (with dead_only: of
   its earlier incarnations, ids other than live) are forgotten, never
   used again: pooled pairs leave the pool, timed copies in flight become
   untimed, pending frees settle. Forgotten, not destroyed: a dead
   context's events are invalid handles. */
static void memobs_cuda__drop_ctx_locked(void *ctx, int dead_only, unsigned long long live) {
    uint32_t i, k;
#define MEMOBS_CUDA__DOOMED(p) ((p).ctx == ctx && (!dead_only || (p).ctx_id != live))
    if (!memobs_cuda__g.queue) return;
    for (i = k = 0; i < memobs_cuda__g.npool; i++)
        if (!MEMOBS_CUDA__DOOMED(memobs_cuda__g.pool[i])) memobs_cuda__g.pool[k++] = memobs_cuda__g.pool[i];
    memobs_cuda__g.created -= memobs_cuda__g.npool - k;
    memobs_cuda__g.npool = k;
    /* the rings, compacted in order */
    for (i = k = 0; i < memobs_cuda__g.n; i++) {
        memobs_cuda__timed_t e = memobs_cuda__g.queue[(memobs_cuda__g.head + i) % MEMOBS_CUDA_MAX_TIMED];
        if (MEMOBS_CUDA__DOOMED(e.ev)) {
            MEMOBS__ADD(&memobs_cuda__g.untimed.v, 1u);
            memobs_timed_in_flight(-1, -(int64_t)e.bytes);
            memobs__xin_drop(e.xin);
            memobs_cuda__g.created--;
        } else {
            memobs_cuda__g.queue[(memobs_cuda__g.head + k++) % MEMOBS_CUDA_MAX_TIMED] = e;
        }
    }
    memobs_cuda__g.n = k;
    for (i = k = 0; i < memobs_cuda__g.fn; i++) {
        memobs_cuda__pfree_t e = memobs_cuda__g.frees[(memobs_cuda__g.fhead + i) % MEMOBS_CUDA_MAX_TIMED];
        if (MEMOBS_CUDA__DOOMED(e.ev)) {
            memobs_track_free_settled(e.ptr);
            memobs_cuda__g.created--;
        } else {
            memobs_cuda__g.frees[(memobs_cuda__g.fhead + k++) % MEMOBS_CUDA_MAX_TIMED] = e;
        }
    }
    memobs_cuda__g.fn = k;
#undef MEMOBS_CUDA__DOOMED
}

/* The device of a context (-1 if the driver cannot say); remembered by
   address and id. A remembered context at the same address with another
   id is dead: forgotten, and memobs' events of it with it. */
static int memobs_cuda__ctx_device(void *ctx) {
    int d = -1, keyed;
    uint32_t i;
    unsigned long long id = 0;
    void *top = NULL;
    if (!ctx || !memobs_cuda__in()) return -1;
    keyed = memobs_cuda__ctx_key(ctx, &id);
    memobs_cuda__out();
    if (!keyed) return -1;
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    for (i = 0; i < memobs_cuda__g.nctx; i++) {
        if (memobs_cuda__g.ctxs[i].ctx != ctx) continue;
        if (memobs_cuda__g.ctxs[i].id == id) {
            d = memobs_cuda__g.ctxs[i].device;
            break;
        }
        memobs_cuda__drop_ctx_locked(ctx, 1, id);
        memmove(&memobs_cuda__g.ctxs[i], &memobs_cuda__g.ctxs[i + 1],
                (memobs_cuda__g.nctx - i - 1) * sizeof memobs_cuda__g.ctxs[0]);
        memobs_cuda__g.nctx--;
        break;
    }
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    if (d >= 0) return d;
    if (!memobs_cuda__in()) return -1;
    if (memobs_cuda__d.ctx_push(ctx) != 0) d = -1;
    else {
        if (memobs_cuda__d.ctx_device(&d) != 0) d = -1;
        (void)memobs_cuda__d.ctx_pop(&top);
    }
    memobs_cuda__out();
    if (d < 0) return -1;
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    if (memobs_cuda__g.nctx == MEMOBS_CUDA__CTXS) { /* the oldest goes */
        memmove(&memobs_cuda__g.ctxs[0], &memobs_cuda__g.ctxs[1], (MEMOBS_CUDA__CTXS - 1) * sizeof memobs_cuda__g.ctxs[0]);
        memobs_cuda__g.nctx--;
    }
    memobs_cuda__g.ctxs[memobs_cuda__g.nctx].ctx = ctx;
    memobs_cuda__g.ctxs[memobs_cuda__g.nctx].id = id;
    memobs_cuda__g.ctxs[memobs_cuda__g.nctx++].device = d;
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    return d;
}

/* The context current on this thread, or NULL. */
static void *memobs_cuda__cur_ctx(void) {
    void *c = NULL;
    if (!memobs_cuda__drv() || MEMOBS_CUDA__CALL(ctx_current, (&c)) != 0) return NULL;
    memobs_cuda__answered();
    return c;
}

/* A stream's context (for 0/legacy/per-thread handles: the current one). */
static void *memobs_cuda__stream_ctx(cudaStream_t s) {
    void *c = NULL;
    if (!memobs_cuda__drv() || MEMOBS_CUDA__CALL(stream_ctx, (s, &c)) != 0) return NULL;
    memobs_cuda__answered();
    return c;
}

/* The device of the current context, or 0 when there is none to ask. */
static int memobs_cuda__cur_device(void) {
    int d = memobs_cuda__ctx_device(memobs_cuda__cur_ctx());
    return d < 0 ? 0 : d;
}

/* The capture status of a stream (CU_STREAM_CAPTURE_STATUS_*: 0 none, 1
   active, 2 invalidated) and, when active only, *id: cuda.h says the
   other outputs are valid only then (an invalidated capture's id is not
   its id). -1 when the driver will not say (the legacy stream while
   another stream captures: touching it would break that capture); 0 when
   memobs makes no CUDA call (stopped: counted at issue). */
static int memobs_cuda__capture_state(cudaStream_t s, unsigned long long *id) {
    int st = 0, r;
    unsigned long long i = 0;
    if (!memobs_cuda__drv() || !memobs_cuda__in()) return 0;
    r = memobs_cuda__d.capture2 ? memobs_cuda__d.capture2(s, &st, &i, NULL, NULL, NULL)
                                : memobs_cuda__d.capture1(s, &st, &i);
    memobs_cuda__out();
    if (r != 0) return -1;
    memobs_cuda__answered();
    if (st == MEMOBS_CUDA__CAPTURING) *id = i;
    return st;
}

/* 1 and *id when the stream is capturing, 0 when not, -1 when the driver
   will not say or the capture was invalidated. */
static int memobs_cuda__capturing(cudaStream_t s, unsigned long long *id) {
    int st = memobs_cuda__capture_state(s, id);
    return st == MEMOBS_CUDA__CAPTURING ? 1 : st == 0 ? 0 : -1;
}

static unsigned long long memobs_cuda__stream_capture(cudaStream_t stream, int forget);

/* The key a capture is remembered by: the stream handle, except the
   per-thread default stream's handle, which names another stream in each
   thread: that of the calling thread is told apart by the address of a
   thread-local variable (tagged with the low bit, which no stream has). */
static __thread char memobs_cuda__pts_tag;
static cudaStream_t memobs_cuda__stream_key(cudaStream_t s) {
    return s == cudaStreamPerThread ? (cudaStream_t)((uintptr_t)&memobs_cuda__pts_tag | 1u) : s;
}
static int memobs_cuda__pts_key(cudaStream_t k) { return ((uintptr_t)k & 1u) && k != cudaStreamLegacy; }

/* The capture sequence of a stream, for an end of capture or a launch: an
   active capture's id; an invalidated capture's from what memobs
   remembered of that stream at its beginning; 0: none (a capture memobs
   remembers of a stream that no longer captures is over: forgotten). */
unsigned long long memobs_cuda__capture_id(cudaStream_t stream) {
    unsigned long long id = 0;
    int st;
    if (!memobs_cuda__on()) return 0;
    st = memobs_cuda__capture_state(stream, &id);
    if (st == MEMOBS_CUDA__CAPTURING) return id;
    if (st == MEMOBS_CUDA__INVALIDATED) return memobs_cuda__stream_capture(memobs_cuda__stream_key(stream), 0);
    if (st == 0) (void)memobs_cuda__stream_capture(memobs_cuda__stream_key(stream), 1);
    return 0;
}

/* ======================================================================== */
/* Private: events, timing, pending frees                                   */
/* ======================================================================== */

/* Caller holds tlock, in a section. A pending free whose event is no
   longer NOT_READY (its stream got there, or failed: either way not
   pending) settles; its events go back to the pool. 0 if not ready. */
static int memobs_cuda__free_done(const memobs_cuda__pfree_t *e) {
    if (memobs_cuda__d.event_query(e->ev.start) == MEMOBS_CUDA__NOT_READY) return 0;
    memobs_track_free_settled(e->ptr);
    memobs_cuda__g.pool[memobs_cuda__g.npool++] = e->ev;
    return 1;
}

/* Caller holds tlock, in a section. A timed copy whose end event is no
   longer NOT_READY is resolved: its time recorded (or, on an error of the
   stream, counted untimed), out of flight. 0 if not ready. */
static int memobs_cuda__copy_done(const memobs_cuda__timed_t *e) {
    float ms = 0.0f;
    int q = memobs_cuda__d.event_query(e->ev.end);
    if (q == MEMOBS_CUDA__NOT_READY) return 0;
    if (q == 0 && memobs_cuda__d.elapsed1(&ms, e->ev.start, e->ev.end) == 0 && ms >= 0.0f) {
        memobs_record_xfer_timed((memobs_dir_t)e->dir, e->bytes, (memobs_phase_t)e->phase, (uint64_t)(ms * 1e6f));
        if (e->bound) memobs__att_device(e->req, e->dir, (uint64_t)(ms * 1e6f));
    } else
        MEMOBS__ADD(&memobs_cuda__g.untimed.v, 1u);
    memobs_timed_in_flight(-1, -(int64_t)e->bytes);
    memobs__xin_drop(e->xin);
    memobs_cuda__g.pool[memobs_cuda__g.npool++] = e->ev;
    return 1;
}

/* Caller holds tlock, in a section in relaxed mode. Settles
   stream-ordered frees whose stream got there, then resolves completed
   timed copies, each queue from its head, never waiting. With all (at
   exit), then every entry, out of order: a copy stuck behind another on a
   stream that never completes is still resolved. */
static int memobs_cuda__poll_locked(int all) {
    int done = 0;
    uint32_t i, k;
    while (memobs_cuda__g.fn && memobs_cuda__free_done(&memobs_cuda__g.frees[memobs_cuda__g.fhead])) {
        memobs_cuda__g.fhead = (memobs_cuda__g.fhead + 1) % MEMOBS_CUDA_MAX_TIMED;
        memobs_cuda__g.fn--;
        done++;
    }
    while (memobs_cuda__g.n && memobs_cuda__copy_done(&memobs_cuda__g.queue[memobs_cuda__g.head])) {
        memobs_cuda__g.head = (memobs_cuda__g.head + 1) % MEMOBS_CUDA_MAX_TIMED;
        memobs_cuda__g.n--;
        done++;
    }
    if (!all) return done;
    for (i = k = 0; i < memobs_cuda__g.fn; i++) { /* compacted in place, in order */
        memobs_cuda__pfree_t e = memobs_cuda__g.frees[(memobs_cuda__g.fhead + i) % MEMOBS_CUDA_MAX_TIMED];
        if (memobs_cuda__free_done(&e)) done++;
        else memobs_cuda__g.frees[(memobs_cuda__g.fhead + k++) % MEMOBS_CUDA_MAX_TIMED] = e;
    }
    memobs_cuda__g.fn = k;
    for (i = k = 0; i < memobs_cuda__g.n; i++) {
        memobs_cuda__timed_t e = memobs_cuda__g.queue[(memobs_cuda__g.head + i) % MEMOBS_CUDA_MAX_TIMED];
        if (memobs_cuda__copy_done(&e)) done++;
        else memobs_cuda__g.queue[(memobs_cuda__g.head + k++) % MEMOBS_CUDA_MAX_TIMED] = e;
    }
    memobs_cuda__g.n = k;
    return done;
}

static void memobs_cuda__poll_hook(void) { (void)memobs_cuda_poll(); }

/* Caller holds tlock, in a section in relaxed mode. An event pair of ctx
   from the pool (or a new one made there, up to MEMOBS_CUDA_MAX_TIMED
   pairs), after resolving what has completed; 0 when there is none to
   spare. */
static int memobs_cuda__pair_get(memobs_cuda__pair_t *ev, void *ctx) {
    uint32_t i;
    void *top = NULL;
    unsigned long long id = 0;
    int ok;
    if (!ctx || !memobs_cuda__ctx_key(ctx, &id)) return 0;
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
    memobs_cuda__drop_ctx_locked(ctx, 1, id); /* events of a dead context at this address: never used */
    (void)memobs_cuda__poll_locked(0);
    for (i = memobs_cuda__g.npool; i-- > 0;) {
        if (memobs_cuda__g.pool[i].ctx != ctx || memobs_cuda__g.pool[i].ctx_id != id) continue;
        *ev = memobs_cuda__g.pool[i];
        memobs_cuda__g.pool[i] = memobs_cuda__g.pool[--memobs_cuda__g.npool];
        return 1;
    }
    if (memobs_cuda__g.created >= MEMOBS_CUDA_MAX_TIMED || memobs_cuda__d.ctx_push(ctx) != 0) return 0;
    ok = memobs_cuda__d.event_create(&ev->start, 0) == 0;
    if (ok && memobs_cuda__d.event_create(&ev->end, 0) != 0) {
        (void)memobs_cuda__d.event_destroy(ev->start);
        ok = 0;
    }
    (void)memobs_cuda__d.ctx_pop(&top);
    if (!ok) return 0;
    ev->ctx = ctx;
    ev->ctx_id = id;
    memobs_cuda__g.created++;
    return 1;
}

/* Caller holds tlock. A pair whose record failed (its context destroyed,
   its events invalid) is not pooled again: destroyed (not once memobs has
   stopped: then forgotten), one fewer made. */
static void memobs_cuda__pair_drop(const memobs_cuda__pair_t *ev) {
    (void)MEMOBS_CUDA__CALL(event_destroy, (ev->start));
    (void)MEMOBS_CUDA__CALL(event_destroy, (ev->end));
    memobs_cuda__g.created--;
}

/* A sleep of ms milliseconds (a signal may cut it short). */
static void memobs_cuda__nap(int ms) { (void)poll(NULL, 0, ms); }

/* The last figures of each device read before (memobs_cuda__devinfo keeps
   them), read once more. */
static int memobs_cuda__devinfo(int device, uint64_t *free_out, uint64_t *total_out, uint64_t *as_of, const char **what,
                                int *err);
static void memobs_cuda__refresh(void) {
    int d;
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        uint64_t f, t, at;
        memobs__spin_lock(&memobs_cuda__g.fig_lock);
        at = memobs_cuda__g.fig[d].ns;
        memobs__spin_unlock(&memobs_cuda__g.fig_lock);
        if (at) (void)memobs_cuda__devinfo(d, &f, &t, &at, NULL, NULL);
    }
}

/* Until deadline: resolves the timed copies and frees in flight as their
   events complete, asking without waiting (cuEventQuery, not
   cuEventSynchronize: the driver does not finish outstanding work at
   exit, and a stream may never complete: a kernel waiting on a dead
   peer), tlock held only while asking. */
static void memobs_cuda__settle(uint64_t deadline) {
    int nap = 1;
    for (;;) {
        uint32_t left;
        uint64_t now;
        int m;
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        if (memobs_cuda__g.queue && memobs_cuda__relax(&m)) {
            (void)memobs_cuda__poll_locked(1);
            memobs_cuda__unrelax(m);
        }
        left = memobs_cuda__g.n + memobs_cuda__g.fn;
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
        if (!left || (now = memobs_now_ns()) >= deadline) return;
        memobs_cuda__nap((deadline - now) / 1000000u < (uint64_t)nap ? (int)((deadline - now) / 1000000u) + 1 : nap);
        if (nap < 16) nap *= 2;
    }
}

/* The exit handler, registered at the first CUDA call memobs sees (so
   after the runtime's own teardown handler, which the runtime registers
   when it initializes: handlers run in reverse order, this one first).
   Reads the devices' figures one last time, resolves the timed copies and
   frees in flight for up to MEMOBS_CUDA_EXIT_WAIT_MS (those left stay in
   flight, pending), then stops: memobs makes no CUDA call any more (the
   summaries, samples and Stormlog at exit come later and use the last
   figures read), and waits (up to 100 ms) for the calls under way in other
   threads. In a forked child it does nothing. */
static void memobs_cuda__exit_stop(void) {
    uint64_t deadline = memobs_now_ns() + (uint64_t)MEMOBS_CUDA_EXIT_WAIT_MS * 1000000u;
    unsigned i;
    if (MEMOBS__LOAD(&memobs_cuda__g.stop.v)) return;
    memobs_cuda__refresh();
    memobs_cuda__settle(deadline);
    __atomic_store_n(&memobs_cuda__g.stop.v, MEMOBS_CUDA__STOP_EXIT, __ATOMIC_SEQ_CST);
    deadline = memobs_now_ns() + 100000000u;
    for (i = 0; i < MEMOBS_CUDA__SLOTS; i++)
        while (__atomic_load_n(&memobs_cuda__g.busy[i].n.v, __ATOMIC_SEQ_CST) && memobs_now_ns() < deadline)
            memobs_cuda__nap(1);
}

/* A CUDA call was seen (runtime: a runtime call returned; else a driver
   call, or memobs' own driver call answered): CUDA is in use. The exit
   handler is registered at the first, and once more at the first runtime
   call if the first was the driver's (the runtime may have initialized
   since, its teardown handler registered after ours). */
static void memobs_cuda__saw(int runtime) {
#ifndef MEMOBS_DISABLE
    uint32_t h, want = runtime ? MEMOBS_CUDA__HOOK_ANY | MEMOBS_CUDA__HOOK_RUNTIME : MEMOBS_CUDA__HOOK_ANY;
    memobs_cuda__init();
    MEMOBS__STORE(&memobs_cuda__g.seen.v, 1u);
    pthread_mutex_lock(&memobs_cuda__g.lock);
    h = MEMOBS__LOAD(&memobs_cuda__g.hooked.v);
    if ((h & want) != want && !(h & MEMOBS_CUDA__HOOK_RUNTIME) && atexit(memobs_cuda__exit_stop) == 0)
        MEMOBS__STORE(&memobs_cuda__g.hooked.v, h | want);
    pthread_mutex_unlock(&memobs_cuda__g.lock);
#else
    (void)runtime;
    (void)memobs_cuda__exit_stop; /* compiled out: memobs makes no CUDA call */
#endif
}

/* The end of every wrapper: the runtime call (or, in the LD_PRELOAD
   library, the driver call) returned rc. One relaxed load once the exit
   handler is registered after a runtime call. */
static void memobs_cuda__seen(int rc) {
    uint32_t h = MEMOBS__LOAD(&memobs_cuda__g.hooked.v);
    if (rc == 0 && !(h & MEMOBS_CUDA__HOOK_RUNTIME) && !(h && memobs_cuda__via_driver))
        memobs_cuda__saw(!memobs_cuda__via_driver);
}

int memobs_cuda_set_timing(int on) {
    memobs_cuda__init();
#ifndef MEMOBS_DISABLE
    return MEMOBS__XCHG(&memobs_cuda__g.timing.v, on ? 1u : 0u) != 0;
#else
    (void)on;
    return 0;
#endif
}

int memobs_cuda_get_timing(void) {
    memobs_cuda__init();
    return MEMOBS__LOAD(&memobs_cuda__g.timing.v) != 0;
}

int memobs_cuda_poll(void) {
    int done = 0, m;
    memobs_cuda__init();
    if (!memobs_cuda__drv()) return 0;
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    if (memobs_cuda__g.queue && memobs_cuda__relax(&m)) {
        done = memobs_cuda__poll_locked(0);
        memobs_cuda__unrelax(m);
    }
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    return done;
}

uint64_t memobs_cuda_get_untimed(void) { return MEMOBS__LOAD(&memobs_cuda__g.untimed.v); }

/* ======================================================================== */
/* Private: graphs                                                          */
/* ======================================================================== */

/* Caller holds glock. The entry of key, or NULL. */
static memobs_cuda__gent_t *memobs_cuda__gfind(memobs_cuda__gtab_t *t, unsigned long long key) {
    uint32_t i;
    for (i = t->n; i-- > 0;)
        if (t->e[i].key == key) return &t->e[i];
    return NULL;
}

/* Caller holds glock, the captures' table full. Takes out the oldest
   capture that is over (its stream no longer captures it: ended or
   invalidated outside the wrappers); 0 when every one is still open (or
   cannot be asked from here: a thread's per-thread default stream). */
static int memobs_cuda__cap_evict(memobs_cuda__gtab_t *t) {
    uint32_t i;
    for (i = 0; i < t->n; i++) {
        unsigned long long id = 0;
        if (memobs_cuda__pts_key(t->e[i].stream)) continue; /* a thread's own: not asked from here */
        if (memobs_cuda__capture_state(t->e[i].stream, &id) == MEMOBS_CUDA__CAPTURING && id == t->e[i].key) continue;
        memmove(t->e + i, t->e + i + 1, (t->n - i - 1) * sizeof *t->e);
        t->n--;
        return 1;
    }
    return 0;
}

/* Caller holds glock. A new entry of key (zero moves), or NULL when the
   table is full: a capture takes the place of one that is over (never of
   one still open), graphs are not remembered. */
static memobs_cuda__gent_t *memobs_cuda__gadd(memobs_cuda__gtab_t *t, unsigned long long key, uint32_t max) {
    memobs_cuda__gent_t *e = memobs_cuda__gfind(t, key);
    if (e) return e;
    if (!t->e) {
        t->e = (memobs_cuda__gent_t *)MEMOBS_MALLOC(max * sizeof *t->e);
        if (!t->e) return NULL;
        t->cap = max;
    }
    if (t->n == t->cap && (t != &memobs_cuda__g.caps || !memobs_cuda__cap_evict(t))) {
        memobs_cuda__g.gst.dropped++;
        if (t != &memobs_cuda__g.caps && !memobs_cuda__g.graphs_full_warned) {
            memobs_cuda__g.graphs_full_warned = 1;
            memobs__log(MEMOBS_LOG_WARN, "more than MEMOBS_CUDA_MAX_GRAPHS=%u graphs; the copies of further "
                        "graphs are not counted", (unsigned)max);
        }
        return NULL;
    }
    e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    e->key = key;
    return e;
}

/* The id of the capture memobs remembers for stream (0: none); with
   forget, that capture is forgotten (it is over). */
static unsigned long long memobs_cuda__stream_capture(cudaStream_t stream, int forget) {
    unsigned long long id = 0;
    uint32_t i;
    memobs_cuda__gtab_t *t = &memobs_cuda__g.caps;
    pthread_mutex_lock(&memobs_cuda__g.glock);
    for (i = t->n; i-- > 0;)
        if (t->e[i].stream == stream) {
            id = t->e[i].key;
            if (forget) {
                memmove(t->e + i, t->e + i + 1, (t->n - i - 1) * sizeof *t->e);
                t->n--;
            }
            break;
        }
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return id;
}

static void memobs_cuda__gdel(memobs_cuda__gtab_t *t, memobs_cuda__gent_t *e) {
    *e = t->e[--t->n];
}

/* n copies of dir went into capture id, on stream. */
static void memobs_cuda__captured(unsigned long long id, cudaStream_t stream, int dir, uint64_t bytes, uint64_t n) {
    memobs_cuda__gent_t *e;
    pthread_mutex_lock(&memobs_cuda__g.glock);
    e = memobs_cuda__gadd(&memobs_cuda__g.caps, id, MEMOBS_CUDA_MAX_CAPTURES);
    if (e) {
        if (!e->stream) e->stream = memobs_cuda__stream_key(stream); /* begun outside the wrappers: its first copy's */
        e->m.bytes[dir] += bytes;
        e->m.n[dir] += n;
    }
    memobs_cuda__g.gst.captured_copies += n;
    memobs_cuda__g.gst.captured_bytes += bytes;
    pthread_mutex_unlock(&memobs_cuda__g.glock);
}

/* A capture is remembered by its stream from its beginning: a new one on
   a stream replaces what memobs remembered of that stream (that capture is
   over, ended outside the wrappers). */
cudaError_t memobs_cuda__capture_begun(cudaError_t rc, cudaStream_t stream) {
    unsigned long long id = 0;
    memobs_cuda__gent_t *e;
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess || !memobs_cuda__on() || memobs_cuda__capturing(stream, &id) <= 0) return rc;
    (void)memobs_cuda__stream_capture(memobs_cuda__stream_key(stream), 1);
    pthread_mutex_lock(&memobs_cuda__g.glock);
    if ((e = memobs_cuda__gadd(&memobs_cuda__g.caps, id, MEMOBS_CUDA_MAX_CAPTURES)) != NULL)
        e->stream = memobs_cuda__stream_key(stream);
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return rc;
}

cudaError_t memobs_cuda__capture_ended(cudaError_t rc, unsigned long long id, const cudaGraph_t *graph) {
    memobs_cuda__gent_t *c, *g;
    memobs_cuda__seen((int)rc);
    if (!id || !memobs_cuda__on()) return rc;
    pthread_mutex_lock(&memobs_cuda__g.glock);
    c = memobs_cuda__gfind(&memobs_cuda__g.caps, id);
    /* a graph with no wrapped copy is known too: its launches count 0 */
    if (rc == cudaSuccess && graph && *graph) {
        g = memobs_cuda__gadd(&memobs_cuda__g.graphs, (unsigned long long)(uintptr_t)*graph, MEMOBS_CUDA_MAX_GRAPHS);
        if (g && c) g->m = c->m;
    }
    if (c) memobs_cuda__gdel(&memobs_cuda__g.caps, c); /* ended, invalidated or not: over */
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return rc;
}

cudaError_t memobs_cuda__instantiated(cudaError_t rc, const cudaGraphExec_t *exec, cudaGraph_t graph) {
    memobs_cuda__gent_t *g, *x;
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess || !exec || !*exec || !memobs_cuda__on()) return rc;
    pthread_mutex_lock(&memobs_cuda__g.glock);
    g = memobs_cuda__gfind(&memobs_cuda__g.graphs, (unsigned long long)(uintptr_t)graph);
    if (g) {
        x = memobs_cuda__gadd(&memobs_cuda__g.execs, (unsigned long long)(uintptr_t)*exec, MEMOBS_CUDA_MAX_GRAPHS);
        if (x) x->m = g->m;
    }
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return rc;
}

cudaError_t memobs_cuda__launched(cudaError_t rc, cudaGraphExec_t exec, unsigned long long capture) {
    memobs_cuda__gent_t *x, *c;
    memobs_cuda__moves_t m;
    unsigned d, phase = memobs__tls.phase;
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess || !memobs_cuda__on()) return rc;
    pthread_mutex_lock(&memobs_cuda__g.glock);
    x = memobs_cuda__gfind(&memobs_cuda__g.execs, (unsigned long long)(uintptr_t)exec);
    if (!x) {
        memobs_cuda__g.gst.unknown_launches++;
        pthread_mutex_unlock(&memobs_cuda__g.glock);
        return rc;
    }
    m = x->m;
    if (capture) { /* a graph launched into a capture: its copies join that capture */
        if ((c = memobs_cuda__gadd(&memobs_cuda__g.caps, capture, MEMOBS_CUDA_MAX_CAPTURES)) != NULL)
            for (d = 0; d < 3; d++) {
                c->m.bytes[d] += m.bytes[d];
                c->m.n[d] += m.n[d];
            }
        pthread_mutex_unlock(&memobs_cuda__g.glock);
        return rc;
    }
    memobs_cuda__g.gst.launches++;
    for (d = 0; d < 3; d++) {
        memobs_cuda__g.gst.launched_copies += m.n[d];
        memobs_cuda__g.gst.launched_bytes += m.bytes[d];
    }
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    for (d = 0; d < 3; d++) memobs__xfer_n(d, phase, m.bytes[d], m.n[d]);
    return rc;
}

cudaError_t memobs_cuda__forget(cudaError_t rc, const void *handle, int exec) {
    memobs_cuda__gtab_t *t = exec ? &memobs_cuda__g.execs : &memobs_cuda__g.graphs;
    memobs_cuda__gent_t *e;
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess || !handle) return rc;
    memobs_cuda__init();
    pthread_mutex_lock(&memobs_cuda__g.glock);
    if ((e = memobs_cuda__gfind(t, (unsigned long long)(uintptr_t)handle)) != NULL) memobs_cuda__gdel(t, e);
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return rc;
}

int memobs_cuda_get_graph_stats(memobs_cuda_graph_stats_t *out) {
    if (!out) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_get_graph_stats: NULL output");
        return MEMOBS_ERR_INVALID;
    }
    memobs_cuda__init();
    pthread_mutex_lock(&memobs_cuda__g.glock);
    *out = memobs_cuda__g.gst;
    out->captures = memobs_cuda__g.caps.n;
    out->graphs = memobs_cuda__g.graphs.n;
    out->execs = memobs_cuda__g.execs.n;
    pthread_mutex_unlock(&memobs_cuda__g.glock);
    return MEMOBS_OK;
}

/* ======================================================================== */
/* Private: copies                                                          */
/* ======================================================================== */

/* 1 if p is device (or managed) memory, as the driver says (a pointer it
   does not know: host). */
static int memobs_cuda__on_device(const void *p) {
    int attrs[2] = {MEMOBS_CUDA__ATTR_TYPE, MEMOBS_CUDA__ATTR_MANAGED};
    unsigned type = 0;
    int managed = 0, r, m;
    void *data[2];
    data[0] = &type;
    data[1] = &managed;
    if ((r = memobs_cuda__vmm_where(p)) >= 0) return r; /* a mapping of a tracked cuMemCreate handle */
    /* in relaxed mode: NVIDIA does not say whether it is "potentially unsafe" */
    if (!memobs_cuda__drv() || !memobs_cuda__relax(&m)) return 0;
    r = memobs_cuda__d.ptr_attrs(2, attrs, data, (unsigned long long)(uintptr_t)p);
    memobs_cuda__unrelax(m);
    return r == 0 && (type == MEMOBS_CUDA__MEM_DEVICE || managed);
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

void memobs_cuda__copy_pre(memobs_cuda__op_t *op, const void *dst, const void *src, uint64_t bytes,
                           enum cudaMemcpyKind kind, cudaStream_t stream, int how) {
    memobs_cuda__pair_t ev;
    unsigned long long id = 0;
    int cap, ok, m = -1;
    void *ctx;
    op->dir = -1;
    op->mode = 0;
    op->capture = 0;
    op->bytes = bytes;
    op->n = 1;
    op->stream = stream;
    if (!memobs_cuda__on() || (op->dir = memobs_cuda__dir(dst, src, kind)) < 0) return;
    if (how == 0) { /* synchronous: the host clock */
        if (MEMOBS__LOAD(&memobs_cuda__g.timing.v)) {
            uint64_t req = 0;
            int bound = memobs_request_current(&req);
            op->mode = 2;
            /* in flight for the call: a copy that never returns is seen stuck */
            if ((op->xin = memobs__xin_hold((unsigned)op->dir, bytes, memobs__tls.phase, bound, req)) != 0)
                memobs__xin_arm();
            op->t0 = memobs_now_ns();
        }
        return;
    }
    /* The legacy stream is never captured (cudaStreamBeginCapture refuses
       it): untimed, a copy into it is counted at issue whatever the query
       would answer (not capturing, or a refusal while another stream
       captures), so it is not asked: the query was most of a copy's cost.
       Once CUDA is known in use (the query would have said so). */
    if (stream == cudaStreamLegacy && !MEMOBS__LOAD(&memobs_cuda__g.timing.v) &&
        MEMOBS__LOAD(&memobs_cuda__g.hooked.v)) {
        (void)memobs_cuda__drv();
        return;
    }
    if ((cap = memobs_cuda__capturing(stream, &id)) > 0) {
        op->capture = id; /* counted at each launch of its graph */
        return;
    }
    if (!MEMOBS__LOAD(&memobs_cuda__g.timing.v)) return;
    if (how == 2 || cap < 0 || !memobs_cuda__d.ok || !(ctx = memobs_cuda__stream_ctx(stream))) {
        op->mode = 3; /* untimed, counted so if the copy succeeds */
        return;
    }
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    if ((ok = memobs_cuda__relax(&m)) != 0 && !(ok = memobs_cuda__pair_get(&ev, ctx))) memobs_cuda__unrelax(m);
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    /* the last thing before the copy call */
    if (ok && memobs_cuda__d.event_record(ev.start, stream) != 0) {
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        memobs_cuda__pair_drop(&ev);
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
        ok = -1;
    }
    if (ok) memobs_cuda__unrelax(m);
    if (ok <= 0) {
        op->mode = 3;
        return;
    }
    op->mode = 1;
    op->ev[0] = (void *)ev.start;
    op->ev[1] = (void *)ev.end;
    op->ctx = ctx;
    op->ctx_id = ev.ctx_id;
}

cudaError_t memobs_cuda__copy_post(memobs_cuda__op_t *op, cudaError_t rc) {
    memobs_cuda__pair_t ev;
    unsigned phase;
    int recorded = 0, held = 0;
    if (op->mode == 2) memobs__xin_drop(op->xin); /* the call returned */
    memobs_cuda__seen((int)rc);
    memset(&ev, 0, sizeof ev);
    if (op->mode == 1) {
        ev.start = (cudaEvent_t)op->ev[0];
        ev.end = (cudaEvent_t)op->ev[1];
        ev.ctx = op->ctx;
        ev.ctx_id = op->ctx_id;
        /* the first thing after the copy call */
        recorded = rc == cudaSuccess && MEMOBS_CUDA__CALL(event_record, (ev.end, op->stream)) == 0;
    }
    if (rc != cudaSuccess || op->dir < 0) {
        if (op->mode == 1) { /* a start recorded alone is harmless */
            pthread_mutex_lock(&memobs_cuda__g.tlock);
            memobs_cuda__g.pool[memobs_cuda__g.npool++] = ev;
            pthread_mutex_unlock(&memobs_cuda__g.tlock);
        }
        return rc;
    }
    if (op->capture) {
        memobs_cuda__captured(op->capture, op->stream, op->dir, op->bytes, op->n);
        return rc;
    }
    phase = memobs__tls.phase;
    if (op->n == 1) memobs__xfer((unsigned)op->dir, phase, op->bytes);
    else memobs__xfer_n((unsigned)op->dir, phase, op->bytes, op->n);
    if (op->mode == 2) {
        uint64_t ns = memobs_now_ns() - op->t0, req;
        memobs_record_xfer_timed((memobs_dir_t)op->dir, op->bytes, (memobs_phase_t)phase, ns);
        if (memobs_request_current(&req)) memobs__att_device(req, (unsigned)op->dir, ns);
    } else if (op->mode == 1) {
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        if (recorded && memobs_cuda__g.n < MEMOBS_CUDA_MAX_TIMED && !MEMOBS__LOAD(&memobs_cuda__g.stop.v)) {
            memobs_cuda__timed_t *e =
                &memobs_cuda__g.queue[(memobs_cuda__g.head + memobs_cuda__g.n) % MEMOBS_CUDA_MAX_TIMED];
            e->ev = ev;
            e->bytes = op->bytes;
            e->dir = (unsigned)op->dir;
            e->phase = phase;
            e->bound = memobs_request_current(&e->req);
            e->xin = memobs__xin_hold((unsigned)op->dir, op->bytes, phase, e->bound, e->req);
            held = e->xin != 0;
            memobs_cuda__g.n++;
            memobs_timed_in_flight(1, (int64_t)op->bytes);
        } else {
            if (recorded) memobs_cuda__g.pool[memobs_cuda__g.npool++] = ev; /* the queue was full */
            else memobs_cuda__pair_drop(&ev);
            MEMOBS__ADD(&memobs_cuda__g.untimed.v, op->n);
        }
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
        if (held) memobs__xin_arm();
    } else if (op->mode == 3) {
        MEMOBS__ADD(&memobs_cuda__g.untimed.v, op->n);
    }
    return rc;
}

enum cudaMemcpyKind memobs_cuda__side_kind(int dst_dev, const void *dst, int src_dev, const void *src,
                                           enum cudaMemcpyKind kind) {
    int d = dst_dev, s = src_dev;
    if ((int)kind < (int)cudaMemcpyHostToHost || (int)kind > (int)cudaMemcpyDefault || !memobs_cuda__on())
        return kind;
    if (!d) d = kind == cudaMemcpyDefault ? memobs_cuda__on_device(dst)
                                          : kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    if (!s) s = kind == cudaMemcpyDefault ? memobs_cuda__on_device(src)
                                          : kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    return d && s ? cudaMemcpyDeviceToDevice : d ? cudaMemcpyHostToDevice : s ? cudaMemcpyDeviceToHost
                                                                               : cudaMemcpyHostToHost;
}

/* A 3D copy: the extent's bytes between two pointers. Without the
   parameters, or with a CUDA array on either side, an op that records
   nothing (the runtime refuses the first; the second's extent is in
   elements of a size memobs does not ask). */
/* The kind of an op that records nothing: host to host crosses no bus. */
#define MEMOBS_CUDA__NOTHING cudaMemcpyHostToHost
static void memobs_cuda__c3d(memobs_cuda__op_t *op, int arrays, const struct cudaPitchedPtr *dst,
                             const struct cudaPitchedPtr *src, const struct cudaExtent *e, enum cudaMemcpyKind kind,
                             cudaStream_t stream, int how) {
    memobs_cuda__copy_pre(op, dst->ptr, src->ptr, (uint64_t)e->width * e->height * e->depth,
                          arrays ? MEMOBS_CUDA__NOTHING : kind, stream, how);
}

void memobs_cuda__copy3d_pre(memobs_cuda__op_t *op, const struct cudaMemcpy3DParms *p, cudaStream_t stream, int how) {
    if (!p) memobs_cuda__copy_pre(op, NULL, NULL, 0, MEMOBS_CUDA__NOTHING, stream, how);
    else memobs_cuda__c3d(op, p->srcArray || p->dstArray, &p->dstPtr, &p->srcPtr, &p->extent, p->kind, stream, how);
}

void memobs_cuda__peer3d_pre(memobs_cuda__op_t *op, const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream,
                             int how) {
    if (!p) memobs_cuda__copy_pre(op, NULL, NULL, 0, MEMOBS_CUDA__NOTHING, stream, how);
    else memobs_cuda__c3d(op, p->srcArray || p->dstArray, &p->dstPtr, &p->srcPtr, &p->extent,
                          cudaMemcpyDeviceToDevice, stream, how);
}

#if CUDART_VERSION >= 13000
void memobs_cuda__batch_pre(memobs_cuda__op_t op[3], void *const *dsts, const void *const *srcs, const size_t *sizes,
                            const struct cudaMemcpy3DBatchOp *ops, size_t count, cudaStream_t stream) {
    static const enum cudaMemcpyKind kinds[3] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                                 cudaMemcpyDeviceToDevice};
    uint64_t bytes[3] = {0, 0, 0}, n[3] = {0, 0, 0};
    unsigned d, dirs = 0;
    size_t i;
    if (memobs_cuda__on() && (ops || (dsts && srcs && sizes)))
        for (i = 0; i < count; i++) {
            const void *dst, *src;
            uint64_t b;
            int dir;
            if (ops) { /* an array operand: elements of a size memobs does not ask */
                if (ops[i].src.type != cudaMemcpyOperandTypePointer || ops[i].dst.type != cudaMemcpyOperandTypePointer)
                    continue;
                dst = ops[i].dst.op.ptr.ptr;
                src = ops[i].src.op.ptr.ptr;
                b = (uint64_t)ops[i].extent.width * ops[i].extent.height * ops[i].extent.depth;
            } else {
                dst = dsts[i];
                src = srcs[i];
                b = sizes[i];
            }
            if ((dir = memobs_cuda__dir(dst, src, cudaMemcpyDefault)) < 0) continue;
            bytes[dir] += b;
            n[dir]++;
        }
    for (d = 0; d < 3; d++) dirs += n[d] != 0;
    for (d = 0; d < 3; d++) {
        /* a direction with no copy: an op that records nothing */
        memobs_cuda__copy_pre(&op[d], NULL, NULL, bytes[d], n[d] ? kinds[d] : MEMOBS_CUDA__NOTHING, stream,
                              dirs > 1 ? 2 : 1);
        if (n[d]) op[d].n = n[d];
    }
}

cudaError_t memobs_cuda__batch_post(memobs_cuda__op_t op[3], cudaError_t rc) {
    unsigned d;
    for (d = 0; d < 3; d++) (void)memobs_cuda__copy_post(&op[d], rc);
    return rc;
}
#endif

/* ======================================================================== */
/* Private: allocations and the out-of-memory flight recorder               */
/* ======================================================================== */

/* Reads a device's memory figures through the driver, creating no
   context. 0 and *as_of (memobs_now_ns() when read); -1 when the driver
   fails (*what: the call, *err: its CUresult) or was not found (*err 0);
   -2 when the device has no active context (unused: not asked). Once
   memobs has stopped at exit: the last figures read (0, *as_of when they
   were read), else -1; in a forked child -1. */
static int memobs_cuda__devinfo(int device, uint64_t *free_out, uint64_t *total_out, uint64_t *as_of, const char **what,
                                int *err) {
    size_t free_b = 0, total_b = 0;
    void *cur, *ctx = NULL, *top = NULL;
    int rc = -1, m, dev = 0, active = 0, retained = 0, e = 0, known = device >= 0 && device < MEMOBS_MAX_DEVICES;
    unsigned flags = 0;
    const char *w = "the CUDA driver was not found";
    memobs_cuda__init();
    if (err) *err = 0;
    if (!memobs_cuda__drv() || !memobs_cuda__relax(&m)) {
        uint32_t why = MEMOBS__LOAD(&memobs_cuda__g.stop.v);
        if (why == MEMOBS_CUDA__STOP_EXIT && known) {
            memobs__spin_lock(&memobs_cuda__g.fig_lock);
            *free_out = memobs_cuda__g.fig[device].free_b;
            *total_out = memobs_cuda__g.fig[device].total;
            *as_of = memobs_cuda__g.fig[device].ns;
            memobs__spin_unlock(&memobs_cuda__g.fig_lock);
            if (*as_of) return 0;
        }
        if (what) *what = why == MEMOBS_CUDA__STOP_EXIT   ? "CUDA has shut down (the program is exiting); no figures read before"
                          : why == MEMOBS_CUDA__STOP_FORK ? "a forked child makes no CUDA call (CUDA is not fork-safe)"
                                                          : w;
        return -1;
    }
    cur = memobs_cuda__cur_ctx();
    if (cur && memobs_cuda__ctx_device(cur) == device) {
        w = "cuMemGetInfo";
        rc = (e = memobs_cuda__d.mem_info(&free_b, &total_b)) == 0 ? 0 : -1;
    } else if (!memobs_cuda__d.device_get || !memobs_cuda__d.primary_state || !memobs_cuda__d.primary_retain ||
               !memobs_cuda__d.primary_release) {
        w = "the driver lacks the primary context calls";
    } else if ((e = memobs_cuda__d.device_get(&dev, device)) != 0) {
        w = "cuDeviceGet";
    } else if ((e = memobs_cuda__d.primary_state(dev, &flags, &active)) != 0) {
        w = "cuDevicePrimaryCtxGetState";
    } else if (!active) {
        rc = -2; /* asking would create its context */
    } else if ((e = memobs_cuda__d.primary_retain(&ctx, dev)) != 0) {
        w = "cuDevicePrimaryCtxRetain";
    } else {
        retained = 1;
        w = "cuCtxPushCurrent";
        if ((e = memobs_cuda__d.ctx_push(ctx)) == 0) {
            w = "cuMemGetInfo";
            rc = (e = memobs_cuda__d.mem_info(&free_b, &total_b)) == 0 ? 0 : -1;
            (void)memobs_cuda__d.ctx_pop(&top);
        }
    }
    if (retained) {
        /* Between the state (active) and the retain the last holder may have
           released the context, and the retain then made a new one: memobs'
           release undoes it (the last release destroys a primary context),
           and if the context is inactive now, memobs' retain was its only
           hold: the program has none on this device, so the figures (of a
           context memobs made) are not kept. */
        (void)memobs_cuda__d.primary_release(dev);
        if (memobs_cuda__d.primary_state(dev, &flags, &active) == 0 && !active) rc = -2;
    }
    memobs_cuda__unrelax(m);
    if (rc == 0 && free_b > total_b) {
        rc = -1;
        w = "cuMemGetInfo (free > total)";
    }
    if (rc == 0) {
        *free_out = free_b;
        *total_out = total_b;
        *as_of = memobs_now_ns();
        if (known) { /* kept for after the exit handler */
            memobs__spin_lock(&memobs_cuda__g.fig_lock);
            memobs_cuda__g.fig[device].free_b = free_b;
            memobs_cuda__g.fig[device].total = total_b;
            memobs_cuda__g.fig[device].ns = *as_of;
            memobs__spin_unlock(&memobs_cuda__g.fig_lock);
        }
        memobs_cuda__answered();
    }
    if (what) *what = w;
    if (err) *err = e;
    return rc;
}

/* Runs after an allocation wrapper got cudaErrorMemoryAllocation, on the
   allocating thread with no memobs lock held. The breakdown by component
   and the snapshot at the first device error are memobs.h's
   (memobs__comp_oom). */
static void memobs_cuda__oom(const char *call, size_t size, int device, memobs_mem_kind_t kind) {
    char dest[sizeof memobs_cuda__g.oom_dest], b[32];
    memobs_cuda_mem_t m;
    uint64_t n = MEMOBS__ADD(&memobs_cuda__g.ooms.v, 1u) + 1;
    memobs__append_t ap;
    FILE *f;
    if (!MEMOBS__LOAD(&memobs__on.v)) return; /* switched off (or compiled out): counted only */
    memobs__sl_oom(call, (uint64_t)size, device); /* Stormlog "oom" event */
    if (n > MEMOBS_CUDA__OOM_REPORTS) {
        if (n == MEMOBS_CUDA__OOM_REPORTS + 1)
            memobs__log(MEMOBS_LOG_WARN, "%s: out of memory again; further out-of-memory reports are only counted",
                        call);
        return;
    }
    pthread_mutex_lock(&memobs_cuda__g.lock);
    memcpy(dest, memobs_cuda__g.oom_dest, sizeof dest);
    pthread_mutex_unlock(&memobs_cuda__g.lock);
    if (!dest[0] || (f = memobs__append_begin(&ap, dest, "out-of-memory report")) == NULL) {
        if (kind == MEMOBS_MEM_DEVICE) memobs__comp_oom(NULL, -2, 1, dest); /* the snapshot still */
        return;
    }
    fprintf(f, "memobs: [rank %d] %s(%llu bytes, %s) failed: cudaErrorMemoryAllocation (out of memory %llu of %d)\n",
            memobs__rank(), call, (unsigned long long)size, memobs_format_bytes(b, sizeof b, size),
            (unsigned long long)n, MEMOBS_CUDA__OOM_REPORTS);
    if (device >= 0 && memobs_cuda_get_mem_info(&m, device) == MEMOBS_OK)
        fprintf(f, "  device %d: driver %llu bytes free of %llu, %llu used; memobs tracks %llu; outside memobs %lld\n",
                m.device, (unsigned long long)m.driver_free, (unsigned long long)m.driver_total,
                (unsigned long long)m.driver_used, (unsigned long long)m.tracked, (long long)m.outside);
    /* device memory by component; the PyTorch snapshot at the first device error */
    memobs__comp_oom(f, kind == MEMOBS_MEM_DEVICE ? device : -2, kind == MEMOBS_MEM_DEVICE, dest);
    memobs_cuda__vmm_report(f); /* cuMemCreate handles, mappings, reservations */
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    memobs_print_allocations(f);
    (void)memobs__append_end(&ap); /* one write: reports never interleave */
}

/* The end of every allocation wrapper: records p on success and runs the
   flight recorder on out-of-memory. Returns rc. */
static cudaError_t memobs_cuda__allocated(cudaError_t rc, const char *call, const void *p, size_t size,
                                          memobs_mem_kind_t kind, int device, const void *stream) {
    int on = memobs_cuda__on();
    memobs_cuda__seen((int)rc);
    if (on && rc == cudaSuccess && p) { /* p: cudaMalloc(&p, 0) succeeds with NULL */
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
    if (rc == cudaErrorMemoryAllocation) /* counted also while memobs is off */
        memobs_cuda__oom(call, size, device >= 0 || !on ? device : memobs_cuda__cur_device(), kind);
    return rc;
}

/* Marks a tracked block pending before the runtime frees it; also while
   memobs is switched off, so blocks tracked before still leave. */
int memobs_cuda__free_pre(const void *p) {
#ifdef MEMOBS_DISABLE
    (void)p;
    return 0;
#else
    if (!p) return 0;
    memobs_cuda__init();
    return memobs__track_mark(p, MEMOBS__MARK);
#endif
}

/* The end of every free wrapper: takes a marked block out once the runtime
   freed it, or takes the mark back when it did not. */
cudaError_t memobs_cuda__free_post(cudaError_t rc, const void *p, int marked) {
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess) {
        if (marked) (void)memobs__track_mark(p, MEMOBS__UNMARK);
    } else if (marked) {
        memobs_track_free_settled(p);
    } else if (p && memobs_cuda__on()) {
        (void)memobs__track_mark(p, MEMOBS__COUNT); /* unknown, double, or untracked: counted */
    }
    return rc;
}

cudaError_t memobs_cuda__free_async_post(cudaError_t rc, const void *p, int marked, cudaStream_t stream) {
    memobs_cuda__pair_t ev;
    unsigned long long id = 0;
    int queued = 0, m;
    void *ctx;
    if (rc != cudaSuccess || !marked) return memobs_cuda__free_post(rc, p, marked);
    memobs_cuda__seen((int)rc);
    /* pending until an event after the free completes; in a capture, or
       without an event, out at once */
    if (memobs_cuda__on() && memobs_cuda__capturing(stream, &id) == 0 && (ctx = memobs_cuda__stream_ctx(stream))) {
        pthread_mutex_lock(&memobs_cuda__g.tlock);
        if (memobs_cuda__relax(&m)) {
            if (memobs_cuda__pair_get(&ev, ctx)) {
                if (memobs_cuda__g.fn >= MEMOBS_CUDA_MAX_TIMED) {
                    memobs_cuda__g.pool[memobs_cuda__g.npool++] = ev;
                } else if (memobs_cuda__d.event_record(ev.start, stream) == 0) {
                    memobs_cuda__pfree_t *e =
                        &memobs_cuda__g.frees[(memobs_cuda__g.fhead + memobs_cuda__g.fn) % MEMOBS_CUDA_MAX_TIMED];
                    e->ev = ev;
                    e->ptr = p;
                    memobs_cuda__g.fn++;
                    queued = 1;
                } else {
                    memobs_cuda__pair_drop(&ev);
                }
            }
            memobs_cuda__unrelax(m);
        }
        pthread_mutex_unlock(&memobs_cuda__g.tlock);
    }
    if (!queued) memobs_track_free_settled(p);
    return rc;
}

cudaError_t memobs_cuda__malloc_async_post(cudaError_t rc, void **p, size_t size, cudaStream_t stream) {
    unsigned long long id = 0;
    int device;
    memobs_cuda__seen((int)rc);
    if (!memobs_cuda__on() || (rc != cudaSuccess && rc != cudaErrorMemoryAllocation)) return rc;
    if (rc == cudaSuccess && memobs_cuda__capturing(stream, &id) > 0) return rc; /* a graph memory node */
    device = memobs_cuda__ctx_device(memobs_cuda__stream_ctx(stream));
    return memobs_cuda__allocated(rc, "cudaMallocAsync", rc == cudaSuccess && p ? *p : NULL, size,
                                  MEMOBS_MEM_DEVICE, device < 0 ? 0 : device, (const void *)stream);
}

cudaError_t memobs_cuda__pool_alloc_post(cudaError_t rc, const char *call, void **p, size_t size,
                                         cudaStream_t stream) {
    unsigned long long id = 0;
    int attrs[2] = {MEMOBS_CUDA__ATTR_TYPE, MEMOBS_CUDA__ATTR_ORDINAL};
    unsigned type = 0;
    int ordinal = -1, device, m;
    void *data[2];
    memobs_cuda__seen((int)rc);
    if (!memobs_cuda__on() || (rc != cudaSuccess && rc != cudaErrorMemoryAllocation)) return rc;
    if (rc == cudaSuccess && memobs_cuda__capturing(stream, &id) > 0) return rc; /* a graph memory node */
    device = memobs_cuda__ctx_device(memobs_cuda__stream_ctx(stream)); /* what a failure is reported against */
    if (rc == cudaSuccess && p && *p && memobs_cuda__drv() && memobs_cuda__relax(&m)) {
        data[0] = &type;
        data[1] = &ordinal;
        if (memobs_cuda__d.ptr_attrs(2, attrs, data, (unsigned long long)(uintptr_t)*p) != 0) type = 0;
        memobs_cuda__unrelax(m);
        if (type == MEMOBS_CUDA__MEM_HOST)
            return memobs_cuda__allocated(rc, call, *p, size, MEMOBS_MEM_PINNED, -1, (const void *)stream);
        if (type == MEMOBS_CUDA__MEM_DEVICE && ordinal >= 0) device = ordinal;
    }
    return memobs_cuda__allocated(rc, call, rc == cudaSuccess && p ? *p : NULL, size, MEMOBS_MEM_DEVICE,
                                  device < 0 ? 0 : device, (const void *)stream);
}

cudaError_t memobs_cudaMalloc(void **devPtr, size_t size) {
    cudaError_t rc = cudaMalloc(devPtr, size);
    if (rc != cudaSuccess && rc != cudaErrorMemoryAllocation) return rc;
    return memobs_cuda__allocated(rc, "cudaMalloc", rc == cudaSuccess ? *devPtr : NULL, size, MEMOBS_MEM_DEVICE,
                                  memobs_cuda__on() ? memobs_cuda__cur_device() : 0, NULL);
}

cudaError_t memobs_cudaFree(void *devPtr) {
    int marked = memobs_cuda__free_pre(devPtr);
    return memobs_cuda__free_post(cudaFree(devPtr), devPtr, marked);
}

/* Pinned memory the runtime gave (registered 0) or pinned in place (1):
   into the tracker as MEMOBS_MEM_PINNED and into the pinned table
   (memobs_get_pinned), which keeps its own blocks: a full tracker table
   loses none of them. */
cudaError_t memobs_cuda__pinned_allocated(cudaError_t rc, const char *call, const void *p, size_t size,
                                          int registered) {
    if (rc == cudaSuccess && p && memobs_cuda__on()) memobs__pin_add(p, (uint64_t)size, registered);
    return memobs_cuda__allocated(rc, call, rc == cudaSuccess ? p : NULL, size, MEMOBS_MEM_PINNED, -1, NULL);
}

/* A pinned block's free (cudaFreeHost, cudaHostUnregister,
   cuMemFreeHost): marked in the tracker (bit 0) and the pinned table (bit
   1) before the runtime call; out of both once the runtime took it back,
   the marks taken back when it did not. */
int memobs_cuda__pinned_free_pre(const void *p) {
    int marked = memobs_cuda__free_pre(p);
    return marked | (p && memobs__pin_mark(p) ? 2 : 0);
}

cudaError_t memobs_cuda__pinned_freed(cudaError_t rc, const void *p, int marked) {
    if (marked & 2) memobs__pin_settle(p, rc == cudaSuccess);
    return memobs_cuda__free_post(rc, p, marked & 1);
}

cudaError_t memobs_cudaMallocHost(void **ptr, size_t size) {
    cudaError_t rc = cudaMallocHost(ptr, size);
    return memobs_cuda__pinned_allocated(rc, "cudaMallocHost", rc == cudaSuccess ? *ptr : NULL, size, 0);
}

cudaError_t memobs_cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    cudaError_t rc = cudaHostAlloc(pHost, size, flags);
    return memobs_cuda__pinned_allocated(rc, "cudaHostAlloc", rc == cudaSuccess ? *pHost : NULL, size, 0);
}

cudaError_t memobs_cudaFreeHost(void *ptr) {
    int marked = memobs_cuda__pinned_free_pre(ptr);
    return memobs_cuda__pinned_freed(cudaFreeHost(ptr), ptr, marked);
}

cudaError_t memobs_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    cudaError_t rc = cudaMallocManaged(devPtr, size, flags);
    if (rc != cudaSuccess && rc != cudaErrorMemoryAllocation) return rc;
    return memobs_cuda__allocated(rc, "cudaMallocManaged", rc == cudaSuccess ? *devPtr : NULL, size,
                                  MEMOBS_MEM_MANAGED, memobs_cuda__on() ? memobs_cuda__cur_device() : 0, NULL);
}

cudaError_t memobs_cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    return memobs_cuda__pinned_allocated(cudaHostRegister(ptr, size, flags), "cudaHostRegister", ptr, size, 1);
}

cudaError_t memobs_cudaHostUnregister(void *ptr) {
    int marked = memobs_cuda__pinned_free_pre(ptr);
    return memobs_cuda__pinned_freed(cudaHostUnregister(ptr), ptr, marked);
}

/* ======================================================================== */
/* Private: cudaDeviceReset                                                 */
/* ======================================================================== */

/* Before the reset: memobs' events of the current context are about to be
   destroyed. Its timed copies become untimed, its pending frees settle,
   its pairs leave the pool; the context is forgotten. Returns it. */
void *memobs_cuda__reset_pre(void) {
    void *ctx;
    if (!memobs_cuda__on() || !(ctx = memobs_cuda__cur_ctx())) return NULL;
    (void)memobs_cuda__ctx_device(ctx); /* remembered while it can be asked: reset_post needs it */
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    memobs_cuda__drop_ctx_locked(ctx, 0, 0);
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    return ctx;
}

/* After a successful reset: the device's memory is gone; so is the
   context (its address may come back for another device). */
cudaError_t memobs_cuda__reset_post(cudaError_t rc, void *ctx) {
    memobs_alloc_info_t *a;
    size_t n, i;
    uint32_t k, j;
    int device;
    memobs_cuda__seen((int)rc);
    if (rc != cudaSuccess || !ctx) return rc;
    device = -1; /* the context is gone: its device as remembered by reset_pre */
    pthread_mutex_lock(&memobs_cuda__g.tlock);
    for (j = k = 0; j < memobs_cuda__g.nctx; j++)
        if (memobs_cuda__g.ctxs[j].ctx == ctx) device = memobs_cuda__g.ctxs[j].device;
        else memobs_cuda__g.ctxs[k++] = memobs_cuda__g.ctxs[j];
    memobs_cuda__g.nctx = k;
    pthread_mutex_unlock(&memobs_cuda__g.tlock);
    if (device < 0) return rc;
    n = memobs_get_allocations(NULL, 0);
    if (!n || (a = (memobs_alloc_info_t *)MEMOBS_MALLOC(n * sizeof *a)) == NULL) return rc;
    n = memobs_get_allocations(a, n);
    for (i = 0; i < n; i++)
        if (a[i].device == device && (a[i].kind == MEMOBS_MEM_DEVICE || a[i].kind == MEMOBS_MEM_MANAGED) &&
            !memobs_cuda__vmm_key(a[i].ptr)) /* cuMemCreate handles: their release and unmaps say */
            memobs_track_free(a[i].ptr);
    MEMOBS_FREE(a);
    return rc;
}

/* ======================================================================== */
/* Private: memory outside memobs, checks                                   */
/* ======================================================================== */

int memobs_cuda_get_mem_info(memobs_cuda_mem_t *out, int device) {
    uint64_t free_b = 0, total_b = 0, as_of = 0;
    const char *what = NULL;
    int rc, err = 0;
    if (!out) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_get_mem_info: NULL output");
        return MEMOBS_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    out->device = device;
    memobs_cuda__init();
    if (MEMOBS__LOAD(&memobs_cuda__g.stop.v)) { /* figures of a moment before: memobs_cuda_print_mem says when */
        rc = -1;
        what = MEMOBS__LOAD(&memobs_cuda__g.stop.v) == MEMOBS_CUDA__STOP_FORK
                   ? "a forked child makes no CUDA call (CUDA is not fork-safe)"
                   : "CUDA has shut down (the program is exiting)";
    } else if ((rc = memobs_cuda__devinfo(device, &free_b, &total_b, &as_of, &what, &err)) == -2) {
        return MEMOBS_ERR_INVALID;
    }
    if (rc != 0) {
        const char *name = NULL;
        if (err && memobs_cuda__d.error_name) (void)MEMOBS_CUDA__CALL(error_name, (err, &name));
        if (err) memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_get_mem_info(device %d): %s: %s (%d)", device, what,
                             name ? name : "unknown CUresult", err);
        else memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_get_mem_info(device %d): %s", device, what);
        return MEMOBS_ERR_IO;
    }
    out->driver_total = total_b;
    out->driver_free = free_b;
    out->driver_used = total_b - free_b;
    out->tracked = memobs_get_device_bytes(device, NULL);
    out->outside = (int64_t)out->driver_used - (int64_t)out->tracked;
    return MEMOBS_OK;
}

int memobs_cuda_print_mem(FILE *f) {
    int n = 0, d, shown = 0;
    uint32_t stop;
    char b1[32], b2[32], b3[32], b4[32], when[96];
    if (!f) return MEMOBS_ERR_INVALID;
    memobs_cuda__init();
    if ((stop = MEMOBS__LOAD(&memobs_cuda__g.stop.v)) == MEMOBS_CUDA__STOP_FORK) {
        fputs("CUDA devices: not asked (a forked child makes no CUDA call: CUDA is not fork-safe)\n", f);
        return ferror(f) ? MEMOBS_ERR_IO : MEMOBS_OK;
    }
    if (stop) n = MEMOBS_MAX_DEVICES; /* the devices read before */
    else if (!memobs_cuda__drv() || !memobs_cuda__d.device_count || MEMOBS_CUDA__CALL(device_count, (&n)) != 0) n = 0;
    for (d = 0; d < n; d++) {
        uint64_t fb = 0, tb = 0, at = 0, tracked = memobs_get_device_bytes(d, NULL), now = memobs_now_ns();
        int64_t outside;
        int rc = memobs_cuda__devinfo(d, &fb, &tb, &at, NULL, NULL);
        when[0] = 0;
        if (stop && rc != 0) continue;
        if (stop) /* CUDA shut down: the figures read last */
            snprintf(when, sizeof when, " (device figures as of %.3f s ago: CUDA has shut down)",
                     (double)(now > at ? now - at : 0) / 1e9);
        shown++;
        if (rc == -2) {
            fprintf(f, "device %d: not used by this process (no CUDA context); not asked\n", d);
            continue;
        }
        if (rc != 0) {
            fprintf(f, "device %d: the driver could not say\n", d);
            continue;
        }
        outside = (int64_t)(tb - fb) - (int64_t)tracked;
        fprintf(f, "device %d: driver used %s of %s; memobs tracks %s; outside memobs %s%s%s\n", d,
                memobs_format_bytes(b1, sizeof b1, tb - fb), memobs_format_bytes(b2, sizeof b2, tb),
                memobs_format_bytes(b3, sizeof b3, tracked), outside < 0 ? "-" : "",
                memobs_format_bytes(b4, sizeof b4, (uint64_t)(outside < 0 ? -outside : outside)), when);
    }
    if (stop && !shown) fputs("CUDA devices: not asked (CUDA has shut down: the program is exiting)\n", f);
    return ferror(f) ? MEMOBS_ERR_IO : MEMOBS_OK;
}

int memobs_cuda_set_oom_report(const char *dest) {
    int k = 0; /* the rule of the output variables, but "" is an error */
    if (dest && *dest && strlen(dest) < sizeof memobs_cuda__g.oom_dest)
        k = memobs__dest_parse("", dest, sizeof memobs_cuda__g.oom_dest);
    else if (dest) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_set_oom_report: destination is empty or too long; unchanged");
        return MEMOBS_ERR_INVALID;
    }
    memobs_cuda__init();
    pthread_mutex_lock(&memobs_cuda__g.lock);
    if (!k) memobs_cuda__g.oom_dest[0] = 0;
    else strcpy(memobs_cuda__g.oom_dest, k == 2 ? "stderr" : k == 1 ? "stdout" : dest);
    pthread_mutex_unlock(&memobs_cuda__g.lock);
    return MEMOBS_OK;
}

uint64_t memobs_cuda_get_oom_count(void) { return MEMOBS__LOAD(&memobs_cuda__g.ooms.v); }

/* The sampler's and Stormlog's view of a device (memobs.h's
   memobs__devmem_fn): like memobs_cuda_get_mem_info, quietly (a sampler would
   repeat a warning every tick), never creating a context. Installed at
   load time (a pointer store, no CUDA call). */
#ifndef MEMOBS_DISABLE
static int memobs_cuda__devmem(int device, uint64_t *used, uint64_t *free_bytes, uint64_t *total, uint64_t *as_of) {
    uint64_t fb = 0, tb = 0;
    if (memobs_cuda__devinfo(device, &fb, &tb, as_of, NULL, NULL) != 0) return -1;
    *used = tb - fb;
    *free_bytes = fb;
    *total = tb;
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

int memobs_cuda_get_nvtx(void) {
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

/* ======================================================================== */
/* Private: virtual memory management (cuMemCreate, cuMemMap, ...)          */
/* ======================================================================== */

/* A physical allocation (cuMemCreate) memobs tracks. */
typedef struct {
    unsigned long long handle;
    uint64_t size;
    unsigned long long seq; /* when it was remembered (memobs_cuda__v.seq) */
    uint32_t maps;          /* mappings of it remembered now */
    int device;             /* -1: host-located (pinned) */
    int released;           /* cuMemRelease succeeded; the driver frees it at its last unmap */
} memobs_cuda__vh_t;

/* A mapped range (cuMemMap) and the handle slot behind it. */
typedef struct {
    unsigned long long va, size, seq;
    uint32_t slot;
    unsigned long long hseq; /* that handle's seq: a slot used again since is another handle */
} memobs_cuda__vm_t;

/* The tracker key of handle slot i: the address of byte i of this array.
   memobs' own static storage, which no allocator (malloc, cudaMalloc,
   mmap, the driver's reservations) can ever hand out while memobs is
   loaded: no real pointer equals it. The array is never written (its
   pages are never touched). */
static char memobs_cuda__vmm_keys[MEMOBS_CUDA_MAX_VMM];
#define MEMOBS_CUDA__VKEY(i) ((const void *)&memobs_cuda__vmm_keys[(i)])

/* 1 when p is a handle's tracker key. */
static int memobs_cuda__vmm_key(const void *p) {
    uintptr_t a = (uintptr_t)p, k = (uintptr_t)memobs_cuda__vmm_keys;
    return a >= k && a - k < MEMOBS_CUDA_MAX_VMM;
}

static pthread_once_t memobs_cuda__v_once = PTHREAD_ONCE_INIT;
static struct {
    pthread_mutex_t lock;     /* everything below */
    memobs_cuda__vh_t *h;     /* by slot, MEMOBS_CUDA_MAX_VMM */
    uint32_t *idx;            /* open addressing by handle value: slot + 1, 0 empty; icap entries */
    uint32_t icap;            /* a power of two >= 2 * MEMOBS_CUDA_MAX_VMM */
    uint32_t *free_slots;     /* a stack */
    uint32_t nfree;
    uint32_t *limbo;          /* slots forgotten, their tracker records not yet out (outside the lock) */
    uint32_t nlimbo;
    const char *warn_now;     /* a full table's warning, logged outside the lock */
    memobs_cuda__vm_t *m;     /* mappings sorted by va, disjoint; MEMOBS_CUDA_MAX_VMM */
    uint32_t nm;
    memobs__u32_t any;        /* nm != 0, read without the lock */
    unsigned long long seq;   /* handed out to handles and mappings, from 1 */
    memobs_cuda_vmm_stats_t st;
    int ok, warned;           /* tables allocated; the full table warned */
} memobs_cuda__v;

static void memobs_cuda__vmm_init(void) {
    pthread_mutex_init(&memobs_cuda__v.lock, NULL);
    for (memobs_cuda__v.icap = 2; memobs_cuda__v.icap < 2u * MEMOBS_CUDA_MAX_VMM; memobs_cuda__v.icap *= 2) {
    }
}

/* Under the lock: the tables, allocated at the first VMM call; 0 when
   memory for them was refused (nothing remembered, counted). */
static int memobs_cuda__vmm_tables(void) {
    uint32_t i;
    if (memobs_cuda__v.ok) return 1;
    memobs_cuda__v.h = (memobs_cuda__vh_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_VMM * sizeof *memobs_cuda__v.h);
    memobs_cuda__v.idx = (uint32_t *)MEMOBS_MALLOC(memobs_cuda__v.icap * sizeof *memobs_cuda__v.idx);
    memobs_cuda__v.free_slots = (uint32_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_VMM * sizeof(uint32_t));
    memobs_cuda__v.m = (memobs_cuda__vm_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_VMM * sizeof *memobs_cuda__v.m);
    memobs_cuda__v.limbo = (uint32_t *)MEMOBS_MALLOC(MEMOBS_CUDA_MAX_VMM * sizeof(uint32_t));
    if (!memobs_cuda__v.h || !memobs_cuda__v.idx || !memobs_cuda__v.free_slots || !memobs_cuda__v.m ||
        !memobs_cuda__v.limbo) {
        if (memobs_cuda__v.limbo) MEMOBS_FREE(memobs_cuda__v.limbo);
        if (memobs_cuda__v.h) MEMOBS_FREE(memobs_cuda__v.h);
        if (memobs_cuda__v.idx) MEMOBS_FREE(memobs_cuda__v.idx);
        if (memobs_cuda__v.free_slots) MEMOBS_FREE(memobs_cuda__v.free_slots);
        if (memobs_cuda__v.m) MEMOBS_FREE(memobs_cuda__v.m);
        memobs_cuda__v.h = NULL;
        memobs_cuda__v.idx = NULL;
        memobs_cuda__v.free_slots = NULL;
        memobs_cuda__v.m = NULL;
        memobs_cuda__v.limbo = NULL;
        return 0;
    }
    memset(memobs_cuda__v.idx, 0, memobs_cuda__v.icap * sizeof *memobs_cuda__v.idx);
    for (i = 0; i < MEMOBS_CUDA_MAX_VMM; i++) memobs_cuda__v.free_slots[i] = MEMOBS_CUDA_MAX_VMM - 1 - i;
    memobs_cuda__v.nfree = MEMOBS_CUDA_MAX_VMM;
    memobs_cuda__v.ok = 1;
    return 1;
}

static void memobs_cuda__vmm_lock(void) {
    pthread_once(&memobs_cuda__v_once, memobs_cuda__vmm_init);
    pthread_mutex_lock(&memobs_cuda__v.lock);
}
/* Unlocks, after taking the forgotten handles' records out of the
   tracker, with the lock released around each (memobs_track_free may log,
   and a log hook may ask memobs_cuda_get_vmm_stats); a slot is handed out
   again only after its record is out. Then logs a full table's warning. */
static void memobs_cuda__vmm_unlock(void) {
    const char *warn = memobs_cuda__v.warn_now;
    memobs_cuda__v.warn_now = NULL;
    while (memobs_cuda__v.nlimbo) {
        uint32_t slot = memobs_cuda__v.limbo[--memobs_cuda__v.nlimbo];
        pthread_mutex_unlock(&memobs_cuda__v.lock);
        memobs_track_free(MEMOBS_CUDA__VKEY(slot));
        pthread_mutex_lock(&memobs_cuda__v.lock);
        memobs_cuda__v.free_slots[memobs_cuda__v.nfree++] = slot;
    }
    pthread_mutex_unlock(&memobs_cuda__v.lock);
    if (warn)
        memobs__log(MEMOBS_LOG_WARN, "more than MEMOBS_CUDA_MAX_VMM=%u %s (or no memory for the table); further "
                    "ones are not tracked (counted: memobs_cuda_get_vmm_stats().dropped)",
                    (unsigned)MEMOBS_CUDA_MAX_VMM, warn);
}

/* fork(): the lock held across it (0: prepare, 1: after, in either
   process); a slot in limbo there is settled by the thread that put it. */
static void memobs_cuda__vmm_fork(int after) {
    if (!after) memobs_cuda__vmm_lock();
    else pthread_mutex_unlock(&memobs_cuda__v.lock);
}

/* Under the lock: something was not remembered (a full table, no memory
   for the tables): counted, warned once. */
static void memobs_cuda__vmm_drop(const char *what) {
    memobs_cuda__v.st.dropped++;
    if (memobs_cuda__v.warned) return;
    memobs_cuda__v.warned = 1;
    memobs_cuda__v.warn_now = what; /* logged at the unlock */
}

static uint32_t memobs_cuda__vhash(unsigned long long h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (uint32_t)h & (memobs_cuda__v.icap - 1);
}

/* Under the lock: the index position holding handle h, or icap. */
static uint32_t memobs_cuda__vpos(unsigned long long h) {
    uint32_t i = memobs_cuda__vhash(h), s;
    while ((s = memobs_cuda__v.idx[i]) != 0) {
        if (memobs_cuda__v.h[s - 1].handle == h) return i;
        i = (i + 1) & (memobs_cuda__v.icap - 1);
    }
    return memobs_cuda__v.icap;
}

/* Under the lock: the handle at index position i is forgotten and leaves
   the tracker (the driver freed its memory): backward-shift deletion. */
static void memobs_cuda__vforget(uint32_t i) {
    uint32_t mask = memobs_cuda__v.icap - 1, slot = memobs_cuda__v.idx[i] - 1, j = i, k;
    memobs_cuda__vh_t *e = &memobs_cuda__v.h[slot];
    memobs_cuda__v.limbo[memobs_cuda__v.nlimbo++] = slot; /* its record out at the unlock */
    memobs_cuda__v.st.handles--;
    memobs_cuda__v.st.handle_bytes -= e->size;
    if (e->released) memobs_cuda__v.st.released--;
    memobs_cuda__v.idx[i] = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!memobs_cuda__v.idx[j]) return;
        k = memobs_cuda__vhash(memobs_cuda__v.h[memobs_cuda__v.idx[j] - 1].handle);
        /* the entry at j may move to the hole at i when its home k is not in (i, j] */
        if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
            memobs_cuda__v.idx[i] = memobs_cuda__v.idx[j];
            memobs_cuda__v.idx[j] = 0;
            i = j;
        }
    }
}

/* Under the lock: the first mapping whose end is above va. */
static uint32_t memobs_cuda__vfirst(unsigned long long va) {
    uint32_t lo = 0, hi = memobs_cuda__v.nm;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (memobs_cuda__v.m[mid].va + memobs_cuda__v.m[mid].size <= va) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Under the lock: the mappings overlapping [va, va + size) with seq <=
   token go (the driver unmapped them); a released handle whose last
   mapping goes leaves the tracker. */
static void memobs_cuda__vunmap(unsigned long long va, unsigned long long size, unsigned long long token) {
    uint32_t i = memobs_cuda__vfirst(va), k = i;
    for (; i < memobs_cuda__v.nm && memobs_cuda__v.m[i].va < va + size; i++) {
        memobs_cuda__vm_t mp = memobs_cuda__v.m[i];
        memobs_cuda__vh_t *e = &memobs_cuda__v.h[mp.slot];
        if (mp.seq > token) { /* mapped after the call began: not this call's */
            memobs_cuda__v.m[k++] = mp;
            continue;
        }
        memobs_cuda__v.st.mappings--;
        memobs_cuda__v.st.mapped_bytes -= mp.size;
        if (e->seq != mp.hseq || !e->maps) continue; /* that handle was forgotten since */
        if (--e->maps == 0 && e->released) memobs_cuda__vforget(memobs_cuda__vpos(e->handle));
    }
    memmove(&memobs_cuda__v.m[k], &memobs_cuda__v.m[i], (memobs_cuda__v.nm - i) * sizeof *memobs_cuda__v.m);
    memobs_cuda__v.nm -= i - k;
    MEMOBS__STORE(&memobs_cuda__v.any.v, memobs_cuda__v.nm != 0);
}

int memobs_cuda__vmm_created(int rc, unsigned long long handle, size_t size, int loc_type, int loc_id) {
    /* CU_MEM_LOCATION_TYPE_DEVICE (1): id is the device; HOST, HOST_NUMA,
       HOST_NUMA_CURRENT (2, 3, 4): pinned host memory */
    int host = loc_type >= 2 && loc_type <= 4, device = host ? -1 : loc_id, on = memobs_cuda__on();
    uint32_t slot = 0, i;
    int have = 0;
    if (on && rc == 0) {
        memobs_cuda__vmm_lock();
        /* the driver handed this value out: a handle of that value memobs
           still has is gone (its release or last unmap raced this call) */
        if (memobs_cuda__vmm_tables()) {
            if ((i = memobs_cuda__vpos(handle)) != memobs_cuda__v.icap) memobs_cuda__vforget(i);
            if (!memobs_cuda__v.nfree) {
                memobs_cuda__vmm_drop("physical allocations (cuMemCreate)");
            } else {
                memobs_cuda__vh_t *e;
                slot = memobs_cuda__v.free_slots[--memobs_cuda__v.nfree];
                e = &memobs_cuda__v.h[slot];
                e->handle = handle;
                e->size = size;
                e->seq = ++memobs_cuda__v.seq;
                e->maps = 0;
                e->device = device;
                e->released = 0;
                for (i = memobs_cuda__vhash(handle); memobs_cuda__v.idx[i]; i = (i + 1) & (memobs_cuda__v.icap - 1)) {
                }
                memobs_cuda__v.idx[i] = slot + 1;
                memobs_cuda__v.st.handles++;
                memobs_cuda__v.st.handle_bytes += size;
                have = 1;
            }
        } else {
            memobs_cuda__vmm_drop("physical allocations (cuMemCreate)");
        }
        memobs_cuda__vmm_unlock();
    }
    /* the tracker record (stack, phase), and the flight recorder on out of
       memory (CUDA_ERROR_OUT_OF_MEMORY is cudaErrorMemoryAllocation's 2) */
    return (int)memobs_cuda__allocated((cudaError_t)rc, "cuMemCreate", have ? MEMOBS_CUDA__VKEY(slot) : NULL, size,
                                       host ? MEMOBS_MEM_PINNED : MEMOBS_MEM_DEVICE,
                                       host ? -1 : device < 0 ? 0 : device, NULL);
}

unsigned long long memobs_cuda__vmm_pre(void) {
    unsigned long long t;
    memobs_cuda__vmm_lock();
    t = memobs_cuda__v.seq;
    memobs_cuda__vmm_unlock();
    return t;
}

int memobs_cuda__vmm_released(int rc, unsigned long long handle, unsigned long long token) {
    uint32_t i;
    memobs_cuda__seen(rc);
    if (rc != 0) return rc;
    memobs_cuda__vmm_lock();
    if (memobs_cuda__v.ok && (i = memobs_cuda__vpos(handle)) != memobs_cuda__v.icap) {
        memobs_cuda__vh_t *e = &memobs_cuda__v.h[memobs_cuda__v.idx[i] - 1];
        if (e->seq <= token && !e->released) { /* not a handle created since the call began */
            if (!e->maps) memobs_cuda__vforget(i); /* unmapped: the driver freed it now */
            else {
                e->released = 1;
                memobs_cuda__v.st.released++;
            }
        }
    }
    memobs_cuda__vmm_unlock();
    return rc;
}

int memobs_cuda__vmm_mapped(int rc, unsigned long long va, size_t size, size_t offset, unsigned long long handle) {
    uint32_t i, at;
    (void)offset;
    memobs_cuda__seen(rc);
    if (rc != 0 || !size) return rc;
    memobs_cuda__vmm_lock();
    /* what memobs still has there was unmapped (a call racing this one) */
    if (memobs_cuda__v.ok) memobs_cuda__vunmap(va, size, memobs_cuda__v.seq);
    if (memobs_cuda__v.ok && (i = memobs_cuda__vpos(handle)) != memobs_cuda__v.icap) {
        uint32_t slot = memobs_cuda__v.idx[i] - 1;
        memobs_cuda__vh_t *e = &memobs_cuda__v.h[slot];
        if (memobs_cuda__v.nm == MEMOBS_CUDA_MAX_VMM) {
            memobs_cuda__vmm_drop("mapped ranges (cuMemMap)");
        } else {
            at = memobs_cuda__vfirst(va);
            memmove(&memobs_cuda__v.m[at + 1], &memobs_cuda__v.m[at],
                    (memobs_cuda__v.nm - at) * sizeof *memobs_cuda__v.m);
            memobs_cuda__v.m[at].va = va;
            memobs_cuda__v.m[at].size = size;
            memobs_cuda__v.m[at].seq = ++memobs_cuda__v.seq;
            memobs_cuda__v.m[at].slot = slot;
            memobs_cuda__v.m[at].hseq = e->seq;
            memobs_cuda__v.nm++;
            e->maps++;
            memobs_cuda__v.st.mappings++;
            memobs_cuda__v.st.mapped_bytes += size;
            MEMOBS__STORE(&memobs_cuda__v.any.v, 1u);
        }
    }
    memobs_cuda__vmm_unlock();
    return rc;
}

int memobs_cuda__vmm_unmapped(int rc, unsigned long long va, size_t size, unsigned long long token) {
    memobs_cuda__seen(rc);
    if (rc != 0) return rc;
    memobs_cuda__vmm_lock();
    if (memobs_cuda__v.ok) memobs_cuda__vunmap(va, size, token);
    memobs_cuda__vmm_unlock();
    return rc;
}

int memobs_cuda__vmm_reserved(int rc, unsigned long long va, size_t size) {
    (void)va;
    memobs_cuda__seen(rc);
    if (rc != 0) return rc;
    memobs_cuda__vmm_lock();
    memobs_cuda__v.st.reservations++;
    memobs_cuda__v.st.reserved_bytes += size;
    memobs_cuda__vmm_unlock();
    return rc;
}

/* A reservation freed: what memobs still has mapped in it is gone too. */
int memobs_cuda__vmm_freed(int rc, unsigned long long va, size_t size, unsigned long long token) {
    memobs_cuda__seen(rc);
    if (rc != 0) return rc;
    memobs_cuda__vmm_lock();
    if (memobs_cuda__v.ok) memobs_cuda__vunmap(va, size, token);
    if (memobs_cuda__v.st.reservations) { /* one reserved before memobs saw it: not counted */
        memobs_cuda__v.st.reservations--;
        memobs_cuda__v.st.reserved_bytes -= size < memobs_cuda__v.st.reserved_bytes ? size
                                                                                     : memobs_cuda__v.st.reserved_bytes;
    }
    memobs_cuda__vmm_unlock();
    return rc;
}

/* memobs_cuda__on_device's first question: 1 when p lies in a mapping of
   a device handle memobs tracks, 0 in one of a host-located handle, -1
   when memobs has no mapping there (one relaxed load when it has none). */
static int memobs_cuda__vmm_where(const void *p) {
    unsigned long long a = (unsigned long long)(uintptr_t)p;
    uint32_t i;
    int r = -1;
    if (!MEMOBS__LOAD(&memobs_cuda__v.any.v)) return -1;
    memobs_cuda__vmm_lock();
    i = memobs_cuda__vfirst(a);
    if (i < memobs_cuda__v.nm && memobs_cuda__v.m[i].va <= a) {
        const memobs_cuda__vh_t *e = &memobs_cuda__v.h[memobs_cuda__v.m[i].slot];
        if (e->seq == memobs_cuda__v.m[i].hseq) r = e->device >= 0;
    }
    memobs_cuda__vmm_unlock();
    return r;
}

/* The flight recorder's line (memobs_cuda__oom). */
static void memobs_cuda__vmm_report(FILE *f) {
    memobs_cuda_vmm_stats_t s;
    if (memobs_cuda_get_vmm_stats(&s) != MEMOBS_OK || (!s.handles && !s.reservations)) return;
    fprintf(f, "  virtual memory (cuMemCreate/cuMemMap): %u physical allocations, %llu bytes (%u released, still "
            "mapped); %u mapped ranges, %llu bytes; %u reservations, %llu bytes\n", s.handles,
            (unsigned long long)s.handle_bytes, s.released, s.mappings, (unsigned long long)s.mapped_bytes,
            s.reservations, (unsigned long long)s.reserved_bytes);
}

int memobs_cuda_get_vmm_stats(memobs_cuda_vmm_stats_t *out) {
    if (!out) {
        memobs__log(MEMOBS_LOG_WARN, "memobs_cuda_get_vmm_stats: NULL output");
        return MEMOBS_ERR_INVALID;
    }
    memobs_cuda__vmm_lock();
    *out = memobs_cuda__v.st;
    memobs_cuda__vmm_unlock();
    return MEMOBS_OK;
}


#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MEMOBS_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under the MIT License (SPDX-License-Identifier: MIT).
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the memobs authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
