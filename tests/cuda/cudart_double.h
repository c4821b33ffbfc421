/* cudart_double.h - scripting API of the link-time test double of the CUDA
   runtime (tests/cuda/cudart_double.c), and of the few driver (libcuda)
   entry points memobs calls.

   The double defines the cudaXxx functions listed in cudart_double.c with
   the exact prototypes of the real <cuda_runtime_api.h>, and the cuXxx
   ones under their exported libcuda names (cuMemGetInfo_v2,
   cuEventDestroy_v2, ...; the older cuStreamGetCaptureInfo,
   cuStreamGetCaptureInfo_v2 and cuEventElapsedTime with their documented
   prototypes), so code compiled against the real CUDA headers links
   against it instead of libcudart and libcuda and runs without a GPU. Link
   cudart_double.c (or its object) into the test program, never together
   with libcudart or libcuda.

   The double is meant to be as strict as NVIDIA's documented semantics,
   never kinder. Where the documentation is silent it takes the stricter
   plausible reading; those places say "strict reading" below.

   WHAT IT MODELS
     Memory    "device", pinned and managed memory is host memory (malloc),
               so copies really copy and tests can check the bytes. Every
               allocation is in a table with its kind and device, which
               cudaPointerGetAttributes answers from (interior pointers too;
               unregistered host memory: cudaMemoryTypeUnregistered,
               device -2, hostPointer = ptr, cudaSuccess, as the real
               runtime since CUDA 11). cudaMalloc(&p, 0) gives NULL and
               cudaSuccess. Device memory is 256-byte aligned.
     Devices   CUDADBL_DEFAULT_DEVICES (2) fake devices; the current device
               is per thread (default 0). cudaMemGetInfo: total = a settable
               size (default 16 GiB), free = total - bytes of device memory
               (cudaMalloc, cudaMallocAsync) live on the current device - a
               settable "outside" amount, floored at 0. cudaMalloc and
               cudaMallocAsync fail with cudaErrorMemoryAllocation beyond
               free. Managed and pinned memory do not count against it.
               cudaMallocAsync allocates on its stream's device (the real
               runtime takes it from that device's pool), whatever the
               current device. Freed addresses are not handed out again
               unless cudadbl_set_reuse(1).
     Copies    explicit kinds: a side the kind calls "device" must lie in a
               table allocation (of any kind: device, pinned, registered,
               managed, as UVA allows), else cudaErrorInvalidValue; any side
               inside a table allocation must fit in it (else
               cudaErrorInvalidValue, nothing copied). cudaMemcpyDefault
               takes any pointers. Kinds beyond cudaMemcpyDefault:
               cudaErrorInvalidMemcpyDirection. 2D copies check pitches
               (cudaErrorInvalidPitchValue). Peer copies check the devices
               (cudaErrorInvalidDevice) and that device memory lies on them.
               3D copies (cudaMemcpy3D(Peer)(Async)) between pointers, with
               positions and pitches; a zero extent, a slice height below
               the extent or any CUDA array handle (the double makes no
               arrays): cudaErrorInvalidValue; cudaMemcpy2DToArray and the
               other array copies always fail so (after the kind's check).
               Symbols are host memory a test declares with
               cudadbl_register_symbol: an unknown one is
               cudaErrorInvalidSymbol, a kind that points the wrong way
               cudaErrorInvalidMemcpyDirection, a span beyond it
               cudaErrorInvalidValue. Batches (cudaMemcpyBatchAsync,
               cudaMemcpy3DBatchAsync, CUDA 13) refuse the legacy stream,
               empty batches, bad attribute indices, access orders and
               flags (cudaErrorInvalidValue) and copy all or nothing. A
               captured 3D or batch copy becomes one node per slice.
     Contexts  one primary context per device (a CUcontext). It becomes
               active (a "creation", cudadbl_contexts_created) at
               cudaSetDevice (since CUDA 12 it initializes the primary
               context) and at the first runtime call of a thread that needs
               the device (allocations, copies, memsets, streams, events,
               graphs, cudaMemGetInfo, cudaPointerGetAttributes,
               synchronization...), for the thread's device; that call also
               makes it the thread's current context. Never created by
               cudaGetDevice, cudaGetDeviceCount, cudaGetErrorName/String,
               cudaGetLastError, cudaPeekAtLastError,
               cudaThreadExchangeStreamCaptureMode, cudaDeviceReset of an
               inactive device, nor by any driver call but
               cuDevicePrimaryCtxRetain. The runtime holds the context it
               activated or used (until a reset). Release drops a retain of
               cuDevicePrimaryCtxRetain (CUDA_ERROR_INVALID_CONTEXT without
               one, strict reading); the last release of a context the
               runtime does not hold destroys it (as a reset; cuda.h: the
               context is destroyed when its usage count reaches zero).
               cudadbl_release_at_retain(d) makes the last holder release
               d's context right before the next retain acts (the race
               between cuDevicePrimaryCtxGetState and
               cuDevicePrimaryCtxRetain that the double's lock otherwise
               hides): that retain then makes a new context.
               Created contexts (cuCtxCreate, _v4: ctxCreateParams must be
               NULL, CUDA_ERROR_NOT_SUPPORTED otherwise) are pushed on the
               calling thread's stack; cuCtxDestroy (_v2) pops one that is on
               top there and destroys it (a primary, unknown or destroyed
               one: CUDA_ERROR_INVALID_CONTEXT): its events die (driver calls
               given one: CUDA_ERROR_CONTEXT_IS_DESTROYED, counted by
               cudadbl_dead_event_uses), and its address is handed to the
               next cuCtxCreate, of any device (at most 4 created contexts
               live). Every context has an id (cuCtxGetId; NULL: the current
               one), new at each creation or activation, never reused; a
               destroyed one: CUDA_ERROR_CONTEXT_IS_DESTROYED. Not modelled:
               allocations and streams made in a created context (they
               belong to its device, not to it). cuDevicePrimaryCtxReset
               (_v2) is cudaDeviceReset of that device (below): the next
               activation is a new context, new id, same address. Events
               belong to the context current at their creation. Per thread, a push stack
               (cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2; popping an empty
               one, or pushing an inactive or unknown context:
               CUDA_ERROR_INVALID_CONTEXT) sits above the runtime's primary
               context; cuCtxGetCurrent gives the top (NULL, CUDA_SUCCESS,
               when there is none). The runtime follows the driver: with a
               pushed context, runtime calls work on its device and
               cudaGetDevice returns it.
     Reset     cudaDeviceReset destroys the primary context of the calling
               thread's device (the pushed context's, if any): the
               allocations of that device (device, managed, pinned made
               while it was current, registered ranges) are released, its
               streams, events, graphs and executable graphs destroyed
               (their handles then give cudaErrorInvalidResourceHandle in
               runtime calls, CUDA_ERROR_CONTEXT_IS_DESTROYED in driver
               calls), its pending ops dropped, its captures invalidated and
               ended; the next runtime call needing it creates it again
               (counted). Contexts of that device pushed on any thread, and
               the runtime's current context of every thread, are
               destroyed: driver calls with them current give
               CUDA_ERROR_CONTEXT_IS_DESTROYED, runtime calls with such a
               pushed context cudaErrorContextIsDestroyed (strict reading),
               until popped / until the runtime makes the new one current.
     Streams   fake objects. Three default streams: the legacy stream (one
               per device; NULL and cudaStreamLegacy in the plain
               functions) and a per-thread default stream per (thread,
               device) (cudaStreamPerThread, and NULL in the _ptsz / _ptds
               entry points that code built with
               CUDA_API_PER_THREAD_DEFAULT_STREAM calls; made on first use,
               freed at cudadbl_reset). User streams: cudaStreamCreate,
               cudaStreamCreateWithFlags (cudaStreamDefault,
               cudaStreamNonBlocking, else cudaErrorInvalidValue). Every
               stream-ordered call (cudaMemcpy*Async, cudaMemsetAsync,
               cudaMallocAsync, cudaFreeAsync, cudaEventRecord,
               cudaStreamWaitEvent on an incomplete event, cudaGraphLaunch)
               does its work at once (copies copy, allocations allocate) but
               also queues an op stamped with the fake clock; the op
               completes when the "completed up to" marker reaches its stamp
               (cudadbl_complete_until: it stays set, so later work stamped
               at or before it completes at once), or its stream is
               synchronized (cudaStreamSynchronize, cudaEventSynchronize up
               to the event, cudaDeviceSynchronize: every stream of the
               current device; cudadbl_complete_*). Completing an op
               completes every earlier op of its stream and, first, the ops
               it waits for:
                 - legacy stream: an op on it waits for every earlier op of
                   every blocking stream of its device (user streams without
                   cudaStreamNonBlocking, per-thread default streams), and
                   an op on a blocking stream for the earlier ops of its
                   device's legacy stream;
                 - cudaStreamWaitEvent(s, e): later ops of s wait for e's
                   record (flags other than cudaEventWaitDefault:
                   cudaErrorInvalidValue; external waits are not modelled).
               cudaFreeAsync releases the memory when its op completes:
               until then the block stays in the table and counts as used.
               Synchronous cudaMemcpy, cudaMemcpy2D, cudaMemset and
               cudaMemcpyPeer work on the legacy stream: they first complete
               the current device's legacy stream and every blocking
               stream's ops (the _ptds versions: the calling thread's
               per-thread stream instead). cudaFree first synchronizes the
               current device (and the freed block's device): every stream's
               ops complete. Nothing else synchronizes implicitly. A
               destroyed stream with pending ops lives on until they
               complete (destroying a capturing stream invalidates its
               capture, strict reading).
     Events    cudaEventRecord stamps the event with the fake clock (ms).
               cudaEventQuery: cudaSuccess if never recorded or its op is
               complete, else cudaErrorNotReady. cudaEventElapsedTime: end -
               start stamps; cudaErrorInvalidResourceHandle for a NULL,
               destroyed, never-recorded or cudaEventDisableTiming event,
               cudaErrorInvalidValue for ms == NULL, cudaErrorNotReady while
               either is incomplete. Event and stream must be on the same
               device (else cudaErrorInvalidResourceHandle).
     Driver    the cu* functions work on the runtime's objects: CUevent is
               cudaEvent_t, CUstream is cudaStream_t (CU_STREAM_LEGACY,
               CU_STREAM_PER_THREAD are the runtime's handles; NULL is the
               legacy stream of the current context's device). They never
               change the runtime's last error. Before the runtime
               initialized the driver (its first call other than
               cudaGetErrorName/String, cudaGetLastError,
               cudaPeekAtLastError; cudadbl_reset un-initializes) every cu*
               call but cuGetErrorName returns CUDA_ERROR_NOT_INITIALIZED.
               Calls needing a current context (cuCtxGetDevice,
               cuEventCreate, cuMemGetInfo_v2, and default-stream handles
               elsewhere): CUDA_ERROR_INVALID_CONTEXT without one,
               CUDA_ERROR_CONTEXT_IS_DESTROYED with a destroyed one.
               cuEventCreate: an event of the current context's device.
               cuEventRecord on a stream of another device:
               CUDA_ERROR_INVALID_HANDLE. cuEventQuery / Synchronize /
               ElapsedTime (v1 and _v2) answer as the runtime ones, in
               CUresult numbers (CUDA_ERROR_NOT_READY,
               CUDA_ERROR_INVALID_HANDLE...). cuStreamGetCtx: a user
               stream's device's primary context; default handles: the
               current context. cuPointerGetAttributes: for memory not in the
               table CUDA_SUCCESS with zeroed values (documented), device
               ordinal -2; attributes: CU_POINTER_ATTRIBUTE_MEMORY_TYPE
               (CU_MEMORYTYPE_DEVICE for device and managed, _HOST for
               pinned and registered, 0 otherwise; unsigned int),
               _IS_MANAGED (unsigned int), _DEVICE_ORDINAL (int); any other
               attribute: CUDA_ERROR_INVALID_VALUE (not modelled).
               cuGetErrorName of an unknown code: CUDA_ERROR_INVALID_VALUE
               and NULL. memobs_cuda_driver_symbol (below) hands no
               cuCtxGetId with CUDADBL_NO_CTXID=1 in the environment (a
               driver before CUDA 12.0).
     Pools     cudaMemPoolCreate / cuMemPoolCreate with a location:
               pinned allocation type only; a device (valid ordinal), the
               host, host NUMA node 0 or the current thread's host NUMA node
               (else cudaErrorInvalidValue). cudaMallocFromPoolAsync
               (+ _ptsz) / cuMemAllocFromPoolAsync (+ _ptsz) allocate from
               the pool's location whatever the stream's device: a device
               pool's device memory (counted against that device), a host
               pool's pinned memory (cudaMemoryTypeHost, CU_MEMORYTYPE_HOST;
               freed with cudaFreeAsync, not cudaFreeHost); as
               cudaMallocAsync otherwise (a stream op; into a capture:
               cudaErrorNotSupported). An unknown or destroyed pool:
               cudaErrorInvalidValue. cudaMemPoolDestroy /
               cuMemPoolDestroy: the blocks stay until freed. No pool
               attributes, access control or reuse.
     Entry     (section "Driver memory and entry points") the driver's
               cuMemAlloc_v2 (0 bytes: CUDA_ERROR_INVALID_VALUE),
               cuMemAllocPitch_v2 (element size 4, 8 or 16, nonzero width
               and height, else CUDA_ERROR_INVALID_VALUE; the pitch: the
               width rounded up to 512), cuMemFree_v2 (the start of a
               device or managed block, else CUDA_ERROR_INVALID_VALUE; it
               synchronizes as cudaFree), cuMemcpyHtoD_v2 / cuMemcpyDtoH_v2
               (and _ptds) with cudaMemcpy's rules, on the runtime's table.
               cuGetProcAddress (11.3's 4 arguments) and
               cuGetProcAddress_v2 over these and cuGetProcAddress,
               cuMemGetInfo, cuCtxGetCurrent, cuDeviceGet(Count),
               cuGetErrorName, as a 13.0 driver, with the rules of
               tests/preload/procaddr.h (versions, per-thread flag, NULL
               symbol or pfn, flags, not found: CUDA_ERROR_NOT_FOUND from
               the 11.3 export, CUDA_SUCCESS + NULL + status from _v2); they
               work before the driver's initialization and hand out the
               double's own addresses even where a preloaded library
               defines the same names. cudaGetDriverEntryPoint(_ptsz)
               (at the runtime's version, 13000) and
               cudaGetDriverEntryPointByVersion(_ptsz) initialize the
               runtime and follow the same rules (cudaErrorInvalidValue for
               the errors, cudaSuccess + NULL + driverStatus when not
               found; the _ptsz names take cudaEnableDefault as the
               per-thread flag); counted together as
               "cudaGetDriverEntryPoint". cudaMallocPitch allocates with
               the driver's cuMemAllocPitch_v2 (elements of 16 bytes) from
               the runtime's driver table, fetched once through
               cuGetProcAddress_v2: the double's own, as libcudart takes it
               from its handle on libcuda; with CUDADBL_DRIVER_LOOKUP=global
               in the environment the one dlsym(RTLD_DEFAULT) finds (a
               preloaded library's).
     Errors    every runtime error returned except cudaErrorNotReady
               becomes the calling thread's last error (cudaGetLastError
               clears it, cudaPeekAtLastError does not). cudaGetErrorName/
               String give the real runtime's texts for every code in CUDA
               13.0's enum, "unrecognized error code" otherwise. Sticky
               errors (cudadbl_set_sticky, a faulting graph launch): every
               runtime call that needs a context (and cudaSetDevice,
               cudaDeviceReset) returns it and sets it as the last error,
               cudaGetLastError/cudaPeekAtLastError return it without
               clearing, driver calls return the same number as a CUresult
               (CUDA_ERROR_ILLEGAL_ADDRESS = 700...) except cuGetErrorName,
               cuDeviceGet, cuDeviceGetCount, cuDevicePrimaryCtxGetState,
               cuDevicePrimaryCtxRelease_v2 and
               cuThreadExchangeStreamCaptureMode; one process-wide fault,
               not per context (strict reading); cleared only by
               cudadbl_reset.
     Capture   cudaStreamBeginCapture on the legacy stream:
               cudaErrorStreamCaptureUnsupported; on a capturing stream:
               cudaErrorIllegalState; bad mode: cudaErrorInvalidValue. Every
               capture gets a new id (never reused, not even across
               cudadbl_reset). While capturing, stream-ordered work on the
               stream is not run nor queued: copies and memsets become nodes
               of the capture's graph (keeping pointers, pitches, sizes,
               value: bytes move only at launch), cudaGraphLaunch adds the
               exec's nodes (a child graph, flattened), cudaEventRecord
               makes the event "captured" (until recorded outside a
               capture; no node), cudaStreamWaitEvent on an event captured
               in the same capture is a dependency. Invalid arguments during
               capture return their error and invalidate the capture (strict
               reading). cudaMallocAsync / cudaFreeAsync into a capture:
               cudaErrorNotSupported, nothing invalidated (the real runtime
               makes graph memory nodes; the double does not model them).
               Fork/join: a stream waiting on an event captured in a capture
               in progress joins it (same id); cudaStreamEndCapture on it:
               cudaErrorStreamCaptureUnmatched (invalidates); ending the
               origin while a joined stream has work (or a join) the origin
               has not waited for: cudaErrorStreamCaptureUnjoined, capture
               ended, *graph NULL. Waiting, from a capturing stream, on an
               event recorded outside the capture:
               cudaErrorStreamCaptureIsolation; on one of another capture:
               cudaErrorStreamCaptureMerge (both invalidated); from a
               non-capturing stream on an event captured by an ended
               capture: cudaErrorCapturedEvent (strict reading).
               Illegal during capture (the call returns the error, does
               nothing else, and invalidates the capture(s) concerned; later
               work on an invalidated capture's streams fails with
               cudaErrorStreamCaptureInvalidated; cudaStreamEndCapture then
               returns it, sets *graph = NULL and ends the capture):
                 - cudaStreamSynchronize / cudaStreamQuery of a capturing
                   stream: cudaErrorStreamCaptureUnsupported;
                 - query, synchronize or elapsed time (runtime or driver) of
                   a captured event: cudaErrorCapturedEvent /
                   CUDA_ERROR_CAPTURED_EVENT (after the capture ended too:
                   nothing to invalidate then);
                 - use of the legacy stream (work, waits, records,
                   synchronization, EndCapture on it, and the synchronous
                   copies and memset of plain builds) while a blocking
                   stream of the device captures:
                   cudaErrorStreamCaptureImplicit; cudaStreamIsCapturing and
                   capture info on it return that error too but invalidate
                   nothing (strict reading); a synchronous _ptds call while
                   the thread's per-thread stream captures:
                   cudaErrorStreamCaptureUnsupported;
                 - potentially unsafe calls, by the calling thread's mode
                   (cudaThreadExchangeStreamCaptureMode or
                   cuThreadExchangeStreamCaptureMode, one per-thread
                   setting, default Global) and the captures' modes: Global
                   thread: prohibited by its own non-Relaxed captures and
                   by any thread's Global capture; ThreadLocal: by its own
                   non-Relaxed captures; Relaxed: never. An invalidated
                   capture still in progress still prohibits. Prohibited:
                   cudaErrorStreamCaptureUnsupported (driver:
                   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), the prohibiting
                   captures invalidated. NVIDIA publishes no list; the
                   double's strict one: cudaMalloc, cudaMallocHost,
                   cudaHostAlloc, cudaMallocManaged, cudaFree, cudaFreeHost,
                   cudaHostRegister, cudaHostUnregister, cudaMemcpy,
                   cudaMemcpy2D, cudaMemcpyPeer, cudaMemset, cudaMemGetInfo,
                   cudaEventQuery, cudaEventSynchronize, cudaStreamQuery,
                   cudaStreamSynchronize, cudaDeviceSynchronize,
                   cudaDeviceReset, cuEventQuery, cuEventSynchronize,
                   cuMemGetInfo_v2. Not unsafe: capture queries, cudaGetDevice,
                   pointer attributes, cuCtx*, cuStreamGetCtx, event create,
                   record on a non-capturing stream, event destroy,
                   cuDevicePrimaryCtxGetState...;
                 - cudaStreamEndCapture from another thread than the one
                   that began a non-Relaxed capture:
                   cudaErrorStreamCaptureWrongThread.
               cudaStreamIsCapturing / cudaStreamGetCaptureInfo /
               cuStreamGetCaptureInfo(_v2): status and id (0 when none);
               graph_out: the graph being built; for an invalidated
               capture the id is a value that is no capture's and the graph
               is not written (cuda.h: data other than the status is valid
               only when the status is ACTIVE; strict reading); the dependency outputs are
               not modelled: asking for them gives cudaErrorNotSupported /
               CUDA_ERROR_NOT_SUPPORTED.
     Graphs    cudaStreamEndCapture hands out the graph;
               cudaGraphInstantiate(WithFlags) snapshots its nodes (flags:
               0, AutoFreeOnLaunch, UseNodePriority; others
               cudaErrorInvalidValue); cudaGraphLaunch on a non-capturing
               stream runs the nodes in order (copies move the then-current
               bytes; each node advances the clock like a copy of its
               bytes) and queues one op per node on the stream. A node on a
               table block freed since capture faults the launch:
               cudaErrorIllegalAddress, sticky (nothing run). A graph still
               being captured cannot be instantiated or destroyed
               (cudaErrorIllegalState, strict reading). NULL handles:
               cudaErrorInvalidValue; unknown or destroyed ones:
               cudaErrorInvalidResourceHandle.
     Hazards   each queued copy/memset/graph-node op remembers the device
               blocks (CUDADBL_DEVICE) it touches. When a block is released
               (a cudaFreeAsync op completing, cudaFree) or handed out again
               by stream-ordered reuse while an op touching it is pending
               and not ordered before the release (any op of another
               stream, or a later op of the freeing stream), one hazard is
               counted per such op (cudadbl_hazards).
     Threads   one mutex around all state; current device, context stack,
               capture mode and last error are per thread and reset by
               cudadbl_reset for every thread.
     Teardown  the runtime's first call that initializes the driver (the
               calls above that create a context, and cudaGetDeviceCount,
               cudaSetDevice...) registers the runtime's teardown with
               atexit, once per process, as libcudart does: exit handlers
               run in reverse order, so one registered before that first
               call runs after the teardown, one registered after it runs
               before. After the teardown every call (runtime or driver,
               but cudaGetErrorName/String and cuGetErrorName) fails,
               changes nothing, is counted (cudadbl_calls_after_teardown)
               and said on stderr ("cudart double: NAME called after the
               runtime's teardown (pid N)", the first 20): runtime calls
               with cudaErrorCudartUnloading, driver calls with
               CUDA_ERROR_DEINITIALIZED (NVIDIA documents those results at
               shut down, not the mechanism; strict reading: every call).
     Fork      in a child forked from a process in which the runtime had
               initialized, every call (the same exceptions) fails with
               cudaErrorInitializationError / CUDA_ERROR_NOT_INITIALIZED,
               is counted (cudadbl_calls_in_child) and said on stderr
               (NVIDIA's CUDA C++ guidelines, rule 1.6: any use of CUDA
               after fork and before exec is undefined). A child of a
               process that never initialized may use it, as PyTorch and
               vLLM workers do (kinder than the rule's letter, knowingly).
               The double's lock is held across fork().
     Stuck     cudadbl_set_stuck(s, 1): the ops of s never complete (a
               kernel waiting forever, say on a dead peer): its events stay
               cudaErrorNotReady / CUDA_ERROR_NOT_READY, neither the
               completion marker nor cudadbl_complete_* complete them, nor
               the ops waiting for them; a synchronization that needs them
               (cudaEventSynchronize, cuEventSynchronize,
               cudaStreamSynchronize, cudaDeviceSynchronize, cudaFree, the
               synchronous copies) says so on stderr ("... waits forever")
               and blocks forever (cudadbl_hangs counts them).
     VMM       the driver's virtual memory management, as cuda.h documents
               it (the new section at the end of cudart_double.c).
               cuMemGetAllocationGranularity: CUDADBL_VMM_GRANULARITY (2 MiB)
               for both options (others: CUDA_ERROR_INVALID_VALUE), for a
               valid prop only. cuMemCreate: flags 0, prop->type
               CU_MEM_ALLOCATION_TYPE_PINNED, size a nonzero multiple of the
               granularity (else CUDA_ERROR_INVALID_VALUE); location DEVICE
               with a valid ordinal (else CUDA_ERROR_INVALID_DEVICE), HOST
               (no handle types), HOST_NUMA (node 0: no NUMA here);
               HOST_NUMA_CURRENT and others CUDA_ERROR_INVALID_VALUE. A
               device handle's bytes count against its device from the
               create (cudaMemGetInfo / cuMemGetInfo_v2 free drop;
               cudadbl_device_used includes them); beyond free:
               CUDA_ERROR_OUT_OF_MEMORY. Handles are small numbers; a freed
               one's value is handed out again first (latest freed first).
               cuMemAddressReserve: size and addr multiples of the page
               size, alignment 0 (the granularity) or a power of two, flags
               0; addr is a hint, not followed. cuMemMap: ptr and size
               multiples of the granularity, offset 0 ("currently must be
               zero"), size within the handle, flags 0, the range inside one
               reservation and not mapped now, a handle not released (else
               CUDA_ERROR_INVALID_VALUE); the range then is a CUDADBL_MAPPED
               table allocation of the handle's device (its bytes shared by
               every mapping of the handle: real memory). It is not
               accessible until cuMemSetAccess grants
               CU_MEM_ACCESS_FLAGS_PROT_READWRITE to a device (PROT_READ
               alone is not enough for any copy: stricter than the driver);
               cuMemSetAccess needs whole mappings back to back covering its
               range (strict reading) and DEVICE locations (others not
               modelled: CUDA_ERROR_INVALID_VALUE). A copy side in a mapped
               range without access: cudaErrorInvalidValue (strict reading);
               one spanning mappings back to back, all accessible, works.
               cudaPointerGetAttributes / cuPointerGetAttributes answer a
               mapped address as device memory of the handle's device (host
               memory for a host-located handle). cuMemUnmap: whole mappings
               back to back, exactly (never a sub-range:
               CUDA_ERROR_INVALID_VALUE). cuMemRelease: an unknown or
               released handle is CUDA_ERROR_INVALID_VALUE (cuda.h:
               undefined; strict reading); the memory is freed when the
               handle is released and no mapping of it remains.
               cuMemAddressFree: exactly a reservation's ptr and size, with
               nothing mapped in it (strict reading). None needs a current
               context; sticky errors apply. cudaDeviceReset leaves VMM
               handles and mappings alone (not modelled); cudadbl_reset
               frees them all.
     Report    with CUDADBL_REPORT=1 in the environment, one line on stderr
               at the very end of the process (a destructor, after every
               exit handler): "cudart double: pid N: teardown ran|did not
               run; A calls after it; B calls in a forked child; C waits
               forever".
     Majors    built with -DCUDADBL_MAJOR=11, 12 or 13 (default 13) as
               that major's runtime: soname and version node
               libcudart.so.11.0, .12 or .13 (mk/cudart_double.map for 13,
               mk/cudart_double.<soname suffix>.map for the others).
               11: cudaGraphInstantiate has 11's signature (pErrorNode:
               NULL on failure, the double failing a graph as a whole;
               pLogBuffer: one line on failure, empty on success, cut to
               bufferSize); no cudaGraphInstantiateWithParams(_ptsz) nor
               batches. 12: the batches have 12.8's signatures, failIdx
               before the stream (SIZE_MAX after a failure, the double
               not telling which copy failed; strict reading: NULL is
               cudaErrorInvalidValue). The other functions keep 13's
               signature in every build (cudaStreamGetCaptureInfo among
               them, which differs in 11 and 12: not for a program of
               those majors to call).

   Also defined: cudaStreamGetDevice, the per-thread default stream names
   (cudaMemcpy_ptds, cudaMemcpyAsync_ptsz, ... for every function above
   that cuda_runtime_api.h maps), and the driver's cuEventRecord_ptsz,
   cuStreamGetCtx_ptsz, cuStreamGetCaptureInfo_ptsz and
   cuStreamGetCaptureInfo_v2_ptsz (NULL: the per-thread stream); they all
   count as the plain names.

   Not modelled: kernels, graph memory nodes, graph node handles and
   dependencies (a graph is its nodes in capture order), peer access
   enabling, stream priorities, external event waits, other implicit
   synchronization (allocations), per-context sticky errors. */
#ifndef CUDART_DOUBLE_H
#define CUDART_DOUBLE_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libcuda exports this older version; <cuda.h> declares it only for its own
   build (the double defines it with this, its documented prototype). */
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out, size_t *numDependencies_out);

#define CUDADBL_MAX_DEVICES 8
#define CUDADBL_DEFAULT_DEVICES 2
#define CUDADBL_DEFAULT_TOTAL ((size_t)16 << 30) /* per device */

/* Where a table allocation came from. */
typedef enum {
    CUDADBL_DEVICE = 0,     /* cudaMalloc, cudaMallocAsync: cudaMemoryTypeDevice */
    CUDADBL_PINNED = 1,     /* cudaMallocHost, cudaHostAlloc: cudaMemoryTypeHost */
    CUDADBL_MANAGED = 2,    /* cudaMallocManaged: cudaMemoryTypeManaged */
    CUDADBL_REGISTERED = 3, /* cudaHostRegister (memory the double does not own): cudaMemoryTypeHost */
    CUDADBL_MAPPED = 4,     /* a cuMemMap range: its handle's device memory (host for a host-located one) */
    CUDADBL_KINDS = 5,
    CUDADBL_ALL = 5 /* for cudadbl_live: every kind */
} cudadbl_kind_t;

/* Back to the start state: frees every allocation the double made (a
   registered range is just forgotten), destroys every stream and event,
   clears call counts, scripted failures, the clock (0), the completion
   marker (nothing completed), totals (16 GiB), outside bytes (0), the device
   count (2), and every thread's current device (0), last error, context
   stack, per-thread default streams and capture mode (Global); also every
   graph, executable graph and capture, the sticky error, the primary
   contexts (inactive, creation counts 0), the driver's initialization, and
   the hazard, launch, copy-byte and invalidation counts. Handles from
   before are invalid afterwards. */
void cudadbl_reset(void);

/* Back to the start settings, keeping the objects: clears scripted
   failures, call counts and last calls, and restores the device count,
   totals, outside bytes and copy time. Allocations, streams, events, the
   clock, the completion marker and the threads' current devices and last
   errors stay. Address reuse goes off. For a test program whose code under test keeps CUDA
   objects across tests (an event pool). */
void cudadbl_reset_script(void);

/* Scripted failures: after `skip` more calls of fn succeed (or behave as
   they would), the next n calls return err and change nothing (no
   allocation, no copy, no stream op; output arguments untouched). fn is a
   runtime function name ("cudaMalloc") or an exported driver symbol name
   ("cuMemGetInfo_v2", "cuEventRecord": err is then taken as the CUresult
   of that number); n = 0 cancels. Returns 0, or -1 for
   a name the double does not define. A later call for the same fn replaces
   the earlier script. */
int cudadbl_fail(const char *fn, unsigned skip, unsigned n, cudaError_t err);
int cudadbl_fail_next(const char *fn, unsigned n, cudaError_t err); /* skip = 0 */

/* Calls of fn since the last reset (failed ones included); -1 for an
   unknown name. cudadbl_reset_calls zeroes every count. */
long cudadbl_calls(const char *fn);
void cudadbl_reset_calls(void);

/* The arguments and result of the latest call of fn (fields that fn does
   not take are 0/NULL). Returns 0, or -1 for an unknown name or no call
   since the last reset. */
/* Which stream a call resolved to (cudadbl_call_t.stream_kind). */
enum { CUDADBL_STREAM_USER = 0, CUDADBL_STREAM_LEGACY = 1, CUDADBL_STREAM_PER_THREAD = 2 };

typedef struct {
    void *dst;          /* memcpy/memset destination, alloc result, freed pointer, registered ptr */
    const void *src;    /* memcpy source, pointer queried */
    size_t bytes;       /* count, size, or width * height for 2D */
    int kind;           /* enum cudaMemcpyKind as passed, -1 for none */
    cudaStream_t stream;/* as passed (not resolved) */
    int device;         /* the calling thread's current device at the call */
    unsigned flags;
    cudaError_t result; /* driver calls: the CUresult, same number */
    int stream_kind;    /* CUDADBL_STREAM_*: the stream the call resolved to (USER when none) */
} cudadbl_call_t;
int cudadbl_last_call(const char *fn, cudadbl_call_t *out);

/* Address reuse, as a real allocator does: with on, a device block freed
   by cudaFree (or by a completed cudaFreeAsync) is handed out again by the
   next cudaMalloc/cudaMallocAsync of the same size on the same device
   (latest freed first), to any thread; and cudaMallocAsync on a stream
   gets back at once a block of the same size freed by cudaFreeAsync on
   that stream and not yet reached (stream-ordered reuse: the block is
   live again, its free op frees nothing). Off by default (and after
   cudadbl_reset/_reset_script): every allocation is a fresh malloc. */
void cudadbl_set_reuse(int on);
/* Declares host memory [symbol, symbol + size) a device variable for
   cudaMemcpyToSymbol/FromSymbol(Async) (a test has no __device__
   variables); at most 64, until cudadbl_reset. 0, or -1 for NULL, size 0
   or a full table. */
int cudadbl_register_symbol(const void *symbol, size_t size);

/* Devices: how many (0..CUDADBL_MAX_DEVICES; 0 makes cudaGetDeviceCount
   return cudaErrorNoDevice and every device call too), the total memory of
   one (device -1: all), and bytes in use outside the double's allocations
   (another process, the CUDA context...). Return 0, or -1 for a bad
   argument. */
int cudadbl_set_device_count(int n);
int cudadbl_set_total(int device, size_t bytes);
int cudadbl_set_outside(int device, size_t bytes);
/* Bytes of device memory live (pending async frees included) on device. */
size_t cudadbl_device_used(int device);

/* Fake GPU clock, in ms, stamped on every stream op and event record.
   Starts at 0. Only these calls and copies move it. */
void cudadbl_set_clock(float ms);
void cudadbl_advance_clock(float ms);
float cudadbl_clock(void);
/* Device time of a copy: every successful copy (cudaMemcpy*, sync or
   async, 2D: width * height bytes, peer) advances the clock by fixed_ms +
   bytes / bytes_per_ms (bytes_per_ms <= 0: fixed_ms only) after it is
   issued, and its stream op is stamped with the end. So events recorded
   before and after a copy are that far apart. Default 0, 0: copies take
   no time. */
void cudadbl_set_copy_time(float fixed_ms, double bytes_per_ms);

/* Completion. _until: the GPU has reached time ms (the marker only moves
   forward); _stream: every op queued on s (NULL/cudaStreamLegacy/
   cudaStreamPerThread: the calling thread's current device's default
   stream), returns -1 for an unknown stream; _all: every op on every
   stream of every device. Deferred frees happen here. */
void cudadbl_complete_until(float ms);
int cudadbl_complete_stream(cudaStream_t s);
void cudadbl_complete_all(void);
/* Ops not yet complete on s (-1: unknown stream), or on every stream
   (cudadbl_pending_all). */
long cudadbl_pending(cudaStream_t s);
long cudadbl_pending_all(void);

/* Live table allocations of kind (CUDADBL_ALL: all), pending async frees
   included; *bytes (may be NULL) gets their bytes. */
size_t cudadbl_live(cudadbl_kind_t kind, size_t *bytes);
/* cudaFreeAsync calls not completed yet; *bytes (may be NULL) their bytes. */
size_t cudadbl_pending_frees(size_t *bytes);
/* The table allocation holding p: returns 1 and fills what is not NULL
   (base, size, kind, device), or 0. */
int cudadbl_lookup(const void *p, void **base, size_t *size, cudadbl_kind_t *kind, int *device);
/* Live streams / events created through the API (not yet destroyed). */
size_t cudadbl_live_streams(void);
size_t cudadbl_live_events(void);

/* Ops not complete on the calling thread's per-thread default stream of
   its current device. */
long cudadbl_pending_per_thread(void);

/* Primary contexts: activations of device's primary context since the last
   reset (-1: bad device), and whether it is active now. */
int cudadbl_contexts_created(int device);
int cudadbl_context_active(int device);

/* A device fault (cudaErrorIllegalAddress, ...): from now on every runtime
   call that needs a context returns e and makes it the last error,
   cudaGetLastError returns it without clearing, driver calls return the
   CUresult of the same number. Cleared only by cudadbl_reset. */
void cudadbl_set_sticky(cudaError_t e);

/* Stream capture: captures invalidated since the last reset; captures in
   progress (begun, not ended; invalidated ones included). */
int cudadbl_captures_invalidated(void);
long cudadbl_capturing(void);

/* Graphs: launches that ran (not those captured into another graph);
   graphs handed out by cudaStreamEndCapture and not destroyed; live
   executable graphs; bytes moved by copy nodes at launches. */
long cudadbl_graph_launches(void);
size_t cudadbl_live_graphs(void);
size_t cudadbl_live_graph_execs(void);
long cudadbl_graph_copy_bytes(void);

/* Device-memory hazards since the last reset: a device block released or
   handed out again while an op of another stream that touches it was
   still pending (use after free on the device). */
long cudadbl_hazards(void);

/* Virtual memory management (see VMM above): the granularity; live
   physical allocations (released but still mapped ones included) and
   their bytes (*bytes may be NULL); live mappings. */
#define CUDADBL_VMM_GRANULARITY ((size_t)2 << 20)
size_t cudadbl_vmm_live(size_t *bytes);
size_t cudadbl_vmm_mappings(void);

/* Stuck streams (see WHAT IT MODELS): on != 0 makes the ops of s (NULL,
   cudaStreamLegacy, cudaStreamPerThread: the calling thread's device's)
   never complete, 0 lets them complete again (the marker applies). 0, or
   -1 for an unknown stream. Streams are destroyed by cudadbl_reset. */
int cudadbl_set_stuck(cudaStream_t s, int on);
/* Process facts, never reset: the teardown ran; calls made after it;
   calls made in a forked child of a process that had initialized; syncs
   that block forever on a stuck stream. */
int cudadbl_torn_down(void);
long cudadbl_calls_after_teardown(void);
long cudadbl_calls_in_child(void);
long cudadbl_hangs(void);

/* Contexts and pools (see "Contexts" and "Pools" above).
   The last holder of device's primary context releases it right before
   the next cuDevicePrimaryCtxRetain of device acts (as another thread's
   cudaDeviceReset between a cuDevicePrimaryCtxGetState and that retain
   would): the context is destroyed there and the retain makes a new one
   (counted by cudadbl_contexts_created). Once; cleared by cudadbl_reset. */
void cudadbl_release_at_retain(int device);
/* Driver calls given an event of a destroyed context (each returned
   CUDA_ERROR_CONTEXT_IS_DESTROYED) since the last reset. */
long cudadbl_dead_event_uses(void);

#ifdef __cplusplus
}
#endif
#endif
