/* Tests of the CUDA runtime double itself (tests/cuda/cudart_double.c):
   what the memobs CUDA tests rely on. Built as C and C++ and under
   ASan+UBSan by tests/cuda/selftest.sh. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cudart_double.h"
#include "../check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* libcuda's older symbols, which cuda.h maps to their newest versions */
#undef cuStreamGetCaptureInfo
#undef cuEventElapsedTime
#ifdef __cplusplus
extern "C" {
#endif
CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out, size_t *numDependencies_out);
#ifdef __cplusplus
}
#endif

#ifndef TEST_SUITE
#define TEST_SUITE "cudart-double"
#endif

#define CHECK_ERR(expected, call) CHECK_U64((unsigned)(expected), (unsigned)(call))
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

static size_t live(cudadbl_kind_t k) { return cudadbl_live(k, NULL); }
static size_t live_bytes(cudadbl_kind_t k) {
    size_t b = 0;
    cudadbl_live(k, &b);
    return b;
}

static void malloc_free(void) {
    void *p = NULL, *q = (void *)&q;
    struct cudaPointerAttributes a;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 1000));
    CHECK(p != NULL);
    CHECK_U64(0, (uintptr_t)p % 256);
    CHECK_U64(1, live(CUDADBL_DEVICE));
    CHECK_U64(1000, live_bytes(CUDADBL_DEVICE));
    CHECK_U64(1000, cudadbl_device_used(0));
    memset(p, 0xab, 1000); /* host memory underneath */
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, (char *)p + 999));
    CHECK_U64(cudaMemoryTypeDevice, a.type);
    CHECK_U64(0, a.device);
    CHECK((char *)a.devicePointer == (char *)p + 999);
    CHECK(a.hostPointer == NULL);
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, (char *)p + 1000)); /* one past: not in it */
    CHECK_U64(cudaMemoryTypeUnregistered, a.type);
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(p)); /* double free */
    CHECK_ERR(cudaErrorInvalidValue, cudaPeekAtLastError());
    CHECK_ERR(cudaErrorInvalidValue, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaFree(NULL));
    CHECK_ERR(cudaSuccess, cudaMalloc(&q, 0));
    CHECK(q == NULL);
    CHECK_ERR(cudaErrorInvalidValue, cudaMalloc(NULL, 8));
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64(3, (unsigned long)cudadbl_calls("cudaMalloc"));
    CHECK_U64(3, (unsigned long)cudadbl_calls("cudaFree"));
    cudadbl_reset();
}

static void host_kinds(void) {
    void *h = NULL, *w = NULL, *m = NULL, *d = NULL;
    char *buf = (char *)malloc(4096);
    int stack_var = 0;
    struct cudaPointerAttributes a;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMallocHost(&h, 100));
    CHECK_ERR(cudaSuccess, cudaHostAlloc(&w, 200, cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK_ERR(cudaErrorInvalidValue, cudaHostAlloc(&w, 200, 0x100));
    CHECK_ERR(cudaSuccess, cudaMallocManaged(&m, 300, cudaMemAttachGlobal));
    CHECK_ERR(cudaErrorInvalidValue, cudaMallocManaged(&m, 0, cudaMemAttachGlobal));
    CHECK_ERR(cudaErrorInvalidValue, cudaMallocManaged(&m, 8, cudaMemAttachSingle));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 50));
    CHECK_U64(2, live(CUDADBL_PINNED));
    CHECK_U64(300, live_bytes(CUDADBL_PINNED));
    CHECK_U64(1, live(CUDADBL_MANAGED));
    CHECK_U64(300, live_bytes(CUDADBL_MANAGED));
    CHECK_U64(50, cudadbl_device_used(0)); /* pinned and managed do not count */

    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, w));
    CHECK_U64(cudaMemoryTypeHost, a.type);
    CHECK(a.hostPointer == w && a.devicePointer == w);
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, m));
    CHECK_U64(cudaMemoryTypeManaged, a.type);
    CHECK(a.hostPointer == m && a.devicePointer == m);

    /* the wrong free for the kind */
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(h));
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeHost(d));
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeHost(m));
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeHost((char *)h + 1)); /* not the base */
    CHECK_U64(4, live(CUDADBL_ALL));

    /* registered host memory */
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, buf));
    CHECK_U64(cudaMemoryTypeUnregistered, a.type);
    CHECK_ERR(cudaSuccess, cudaHostRegister(buf, 4096, cudaHostRegisterDefault));
    CHECK_U64(1, live(CUDADBL_REGISTERED));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, buf + 10));
    CHECK_U64(cudaMemoryTypeHost, a.type);
    CHECK(a.hostPointer == buf + 10);
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, cudaHostRegister(buf, 4096, 0));
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, cudaHostRegister(buf + 4000, 10, 0));
    CHECK_ERR(cudaErrorHostMemoryAlreadyRegistered, cudaHostRegister(h, 10, 0));
    CHECK_ERR(cudaErrorInvalidValue, cudaHostRegister(d, 10, 0));
    CHECK_ERR(cudaErrorInvalidValue, cudaHostRegister(NULL, 10, 0));
    CHECK_ERR(cudaErrorInvalidValue, cudaHostRegister(&stack_var, 0, 0));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(buf + 1));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(h));
    CHECK_ERR(cudaSuccess, cudaHostUnregister(buf));
    CHECK_ERR(cudaErrorHostMemoryNotRegistered, cudaHostUnregister(buf));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, buf));
    CHECK_U64(cudaMemoryTypeUnregistered, a.type);

    /* unregistered: the CUDA 11+ answer */
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, &stack_var));
    CHECK_U64(cudaMemoryTypeUnregistered, a.type);
    CHECK_U64((unsigned)cudaInvalidDeviceId, (unsigned)a.device);
    CHECK(a.devicePointer == NULL && a.hostPointer == &stack_var);
    CHECK_ERR(cudaErrorInvalidValue, cudaPointerGetAttributes(NULL, h));

    CHECK_ERR(cudaSuccess, cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, cudaFreeHost(w));
    CHECK_ERR(cudaSuccess, cudaFree(m));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFreeHost(NULL));
    CHECK_U64(0, live(CUDADBL_ALL));
    free(buf);
    cudadbl_reset();
}

static int thread_dev = -1;
static void *get_dev_thread(void *arg) {
    (void)arg;
    if (cudaGetDevice(&thread_dev) != cudaSuccess) thread_dev = -2;
    return NULL;
}

static void devices(void) {
    int n = -1, d = -1;
    void *p = NULL;
    struct cudaPointerAttributes a;
    pthread_t t;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaGetDeviceCount(&n));
    CHECK_U64(2, n);
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_U64(0, d);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_U64(1, d);
    CHECK_ERR(cudaErrorInvalidDevice, cudaSetDevice(2));
    CHECK_ERR(cudaErrorInvalidDevice, cudaSetDevice(-1));
    CHECK_ERR(cudaErrorInvalidValue, cudaGetDevice(NULL));
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 64));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, p));
    CHECK_U64(1, a.device);
    CHECK_U64(64, cudadbl_device_used(1));
    CHECK_U64(0, cudadbl_device_used(0));
    /* the current device is per thread */
    pthread_create(&t, NULL, get_dev_thread, NULL);
    pthread_join(t, NULL);
    CHECK_U64(0, thread_dev);
    CHECK_ERR(cudaSuccess, cudaFree(p));
    /* reset: back to device 0, for this thread too */
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_U64(0, d);
    /* no devices */
    CHECK_U64(0, (unsigned)cudadbl_set_device_count(0));
    CHECK_ERR(cudaErrorNoDevice, cudaGetDeviceCount(&n));
    CHECK_U64(0, n);
    CHECK_ERR(cudaErrorNoDevice, cudaMalloc(&p, 8));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_set_device_count(CUDADBL_MAX_DEVICES + 1));
    CHECK_U64(0, (unsigned)cudadbl_set_device_count(4));
    CHECK_ERR(cudaSuccess, cudaSetDevice(3));
    cudadbl_reset();
}

static void meminfo(void) {
    size_t fr = 0, tot = 0;
    void *p = NULL, *q = NULL, *h = NULL, *sentinel = (void *)&sentinel;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB, tot);
    CHECK_U64(16 * GIB, fr);
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, MIB));
    CHECK_ERR(cudaSuccess, cudaMallocHost(&h, MIB));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB - MIB, fr);
    CHECK_U64(0, (unsigned)cudadbl_set_outside(0, 3 * MIB));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB - 4 * MIB, fr);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB, fr);
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    /* out of memory beyond free; nothing allocated, *p untouched */
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, 8 * MIB));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(8 * MIB, tot);
    CHECK_U64(4 * MIB, fr);
    q = sentinel;
    CHECK_ERR(cudaErrorMemoryAllocation, cudaMalloc(&q, 4 * MIB + 1));
    CHECK(q == sentinel);
    CHECK_ERR(cudaErrorMemoryAllocation, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaMalloc(&q, 4 * MIB));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(0, fr);
    CHECK_U64(0, (unsigned)cudadbl_set_outside(0, 64 * MIB)); /* more than total: free floors at 0 */
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(0, fr);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemGetInfo(NULL, &tot));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_set_total(CUDADBL_MAX_DEVICES, 1));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaFree(q));
    CHECK_ERR(cudaSuccess, cudaFreeHost(h));
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB, fr); /* reset restores totals and outside */
    cudadbl_reset();
}

static void copies(void) {
    char host[64], back[64], pitched[4 * 16];
    char *d = NULL, *d2 = NULL, *e1 = NULL;
    int i;
    cudadbl_call_t c;
    cudadbl_reset();
    for (i = 0; i < 64; i++) host[i] = (char)i;
    memset(back, 0, sizeof back);
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 64));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d2, 64));
    CHECK_ERR(cudaSuccess, cudaMemcpy(d, host, 64, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, cudaMemcpy(d2, d, 64, cudaMemcpyDeviceToDevice));
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, d2, 64, cudaMemcpyDeviceToHost));
    CHECK(memcmp(host, back, 64) == 0);
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, host, 64, cudaMemcpyHostToHost));
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, d, 64, cudaMemcpyDefault));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy", &c));
    CHECK_U64(cudaMemcpyDefault, (unsigned)c.kind);
    CHECK_U64(64, c.bytes);
    CHECK(c.dst == back && c.src == d);
    /* a side the kind calls device must be in the table; nothing copied */
    memset(back, 0x55, sizeof back);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(back, host, 8, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(back, host, 8, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(d, host, 8, cudaMemcpyDeviceToDevice));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(d + 60, host, 8, cudaMemcpyHostToDevice)); /* overruns d */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(back, d + 60, 8, cudaMemcpyDefault));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(NULL, host, 8, cudaMemcpyDefault));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpy(d, host, 8, (enum cudaMemcpyKind)7));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpy(d, host, 0, (enum cudaMemcpyKind)-1));
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, host, 0, cudaMemcpyHostToDevice)); /* nothing to do */
    CHECK_U64(0x55, (unsigned char)back[0]);
    /* memset */
    CHECK_ERR(cudaSuccess, cudaMemset(d, 7, 64));
    CHECK_U64(7, d[63]);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemset(back, 7, 64));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemset(d, 7, 65));
    CHECK_U64(0x55, (unsigned char)back[0]);
    /* 2D: 4 rows of 3 bytes out of pitch 16 */
    memset(pitched, 0, sizeof pitched);
    CHECK_ERR(cudaSuccess, cudaMemcpy2D(pitched, 16, host, 3, 3, 4, cudaMemcpyHostToHost));
    CHECK_U64(3, pitched[16]);
    CHECK_U64(11, pitched[48 + 2]);
    CHECK_U64(0, pitched[3]);
    CHECK_ERR(cudaSuccess, cudaMemcpy2D(d, 16, pitched, 16, 3, 4, cudaMemcpyHostToDevice));
    CHECK_U64(11, d[48 + 2]);
    CHECK_ERR(cudaErrorInvalidPitchValue, cudaMemcpy2D(d, 2, pitched, 16, 3, 4, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy2D(d, 32, pitched, 16, 3, 4, cudaMemcpyHostToDevice)); /* 99 > 64 */
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy2D", &c));
    CHECK_U64(12, c.bytes);
    /* peer */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&e1, 64));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyPeer(e1, 1, host, 0, 64)); /* host is no device memory */
    CHECK_ERR(cudaSuccess, cudaMemcpyPeer(e1, 1, d, 0, 64));
    CHECK_U64(7, e1[63]);
    CHECK_U64(11, e1[48 + 2]);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyPeer(e1, 0, d, 0, 64)); /* e1 is on device 1 */
    CHECK_ERR(cudaErrorInvalidDevice, cudaMemcpyPeer(e1, 2, d, 0, 64));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(d2));
    CHECK_ERR(cudaSuccess, cudaFree(e1));
    cudadbl_reset();
}

static void scripted_failures(void) {
    void *p = NULL, *sentinel = (void *)&sentinel, *d = NULL;
    char host[16] = "0123456789abcde";
    cudadbl_call_t c;
    cudadbl_reset();
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMalloc", 2, cudaErrorMemoryAllocation));
    p = sentinel;
    CHECK_ERR(cudaErrorMemoryAllocation, cudaMalloc(&p, 10));
    CHECK_ERR(cudaErrorMemoryAllocation, cudaMalloc(&p, 10));
    CHECK(p == sentinel);
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 16));
    CHECK_U64(3, (unsigned long)cudadbl_calls("cudaMalloc"));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMalloc", &c));
    CHECK(c.dst == d);
    CHECK_U64(16, c.bytes);
    CHECK_ERR(cudaSuccess, c.result);
    /* skip one, fail one: the failing copy copies nothing */
    CHECK_U64(0, (unsigned)cudadbl_fail("cudaMemcpy", 1, 1, cudaErrorLaunchFailure));
    CHECK_ERR(cudaSuccess, cudaMemcpy(d, host, 16, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 16));
    CHECK_ERR(cudaErrorLaunchFailure, cudaMemcpy(d, host, 16, cudaMemcpyHostToDevice));
    CHECK_U64(0, ((char *)d)[0]);
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy", &c));
    CHECK_ERR(cudaErrorLaunchFailure, c.result);
    CHECK_ERR(cudaErrorLaunchFailure, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaMemcpy(d, host, 16, cudaMemcpyHostToDevice));
    CHECK_U64('0', ((char *)d)[0]);
    /* a scripted failure of a free keeps the block */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFree", 1, cudaErrorIllegalAddress));
    CHECK_ERR(cudaErrorIllegalAddress, cudaFree(d));
    CHECK_U64(1, live(CUDADBL_DEVICE));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaFree", 0, cudaErrorIllegalAddress)); /* n = 0 cancels */
    CHECK_ERR(cudaSuccess, cudaFree(d));
    /* counts, names */
    CHECK_U64((unsigned long)-1, (unsigned long)cudadbl_calls("cudaNoSuchThing"));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_fail_next("cudaNoSuchThing", 1, cudaErrorUnknown));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_fail_next("cudaGetErrorString", 1, cudaErrorUnknown));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_last_call("cudaStreamCreate", &c)); /* never called */
    CHECK_U64(0, (unsigned long)cudadbl_calls("cudaPointerGetAttributes"));
    CHECK_U64(3, (unsigned long)cudadbl_calls("cudaMemcpy"));
    cudadbl_reset_calls();
    CHECK_U64(0, (unsigned long)cudadbl_calls("cudaMemcpy"));
    /* error texts: the real runtime's */
    CHECK_STR("out of memory", cudaGetErrorString(cudaErrorMemoryAllocation));
    CHECK_STR("cudaErrorMemoryAllocation", cudaGetErrorName(cudaErrorMemoryAllocation));
    CHECK_STR("no error", cudaGetErrorString(cudaSuccess));
    CHECK_STR("invalid argument", cudaGetErrorString(cudaErrorInvalidValue));
    CHECK_STR("device not ready", cudaGetErrorString(cudaErrorNotReady));
    CHECK_STR("cudaErrorUnknown", cudaGetErrorName(cudaErrorUnknown));
    CHECK_STR("unrecognized error code", cudaGetErrorName((cudaError_t)12345));
    CHECK_STR("unrecognized error code", cudaGetErrorString((cudaError_t)12345));
    CHECK_U64(3, (unsigned long)cudadbl_calls("cudaGetErrorName"));
    /* scripted failure of cudaGetLastError: returns it, keeps the real one */
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(host));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaGetLastError", 1, cudaErrorUnknown));
    CHECK_ERR(cudaErrorUnknown, cudaGetLastError());
    CHECK_ERR(cudaErrorInvalidValue, cudaGetLastError());
    cudadbl_reset();
}

static void async_and_streams(void) {
    cudaStream_t s = NULL, s1 = NULL;
    void *p = NULL, *q = NULL;
    char host[32] = {1, 2, 3};
    size_t bytes = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_U64(1, cudadbl_live_streams());
    CHECK_ERR(cudaSuccess, cudaStreamQuery(s));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 32, s));
    CHECK(p != NULL);
    CHECK_U64(1, (unsigned long)cudadbl_pending(s));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(p, host, 32, cudaMemcpyHostToDevice, s));
    CHECK_U64(2, ((char *)p)[1]); /* copied at once */
    CHECK_ERR(cudaSuccess, cudaFreeAsync(p, s));
    CHECK_U64(3, (unsigned long)cudadbl_pending(s));
    CHECK_U64(1, cudadbl_pending_frees(&bytes));
    CHECK_U64(32, bytes);
    CHECK_U64(32, cudadbl_device_used(0)); /* still held until the stream gets there */
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeAsync(p, s)); /* already being freed */
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(p));
    CHECK_ERR(cudaErrorNotReady, cudaStreamQuery(s));
    CHECK_ERR(cudaErrorInvalidValue, cudaPeekAtLastError()); /* from the cudaFree */
    (void)cudaGetLastError();
    CHECK_ERR(cudaErrorNotReady, cudaStreamQuery(s));
    CHECK_ERR(cudaSuccess, cudaGetLastError()); /* NotReady is not an error */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s));
    CHECK_U64(0, cudadbl_pending_frees(NULL));
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_ERR(cudaSuccess, cudaStreamQuery(s));

    /* default streams: NULL is the legacy stream, the per-thread one is another */
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&q, 8, NULL));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(q, 1, 8, cudaStreamLegacy));
    CHECK_U64(2, (unsigned long)cudadbl_pending(cudaStreamLegacy));
    CHECK_U64(0, (unsigned long)cudadbl_pending_per_thread());
    CHECK_ERR(cudaSuccess, cudaFreeAsync(q, 0));
    CHECK_U64(3, (unsigned long)cudadbl_pending(NULL));
    /* device sync completes the current device's streams only */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 8, s1));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(p, s1));
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    CHECK_U64(0, (unsigned long)cudadbl_pending(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_U64(3, (unsigned long)cudadbl_pending(NULL));
    CHECK_U64(1, cudadbl_pending_frees(NULL));
    CHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    CHECK_U64(0, (unsigned long)cudadbl_pending_all());
    CHECK_U64(0, live(CUDADBL_ALL));

    /* a destroyed stream with pending work lives on until it completes */
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 8, s));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(p, s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_U64(1, cudadbl_live_streams()); /* s1 */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaStreamQuery(s));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaMemcpyAsync(host, host, 1, cudaMemcpyHostToHost, s));
    CHECK_U64(2, (unsigned long)cudadbl_pending_all());
    CHECK_U64(1, cudadbl_pending_frees(NULL));
    cudadbl_complete_all();
    CHECK_U64(0, (unsigned long)cudadbl_pending_all());
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64((unsigned long)-1, (unsigned long)cudadbl_pending(s)); /* gone */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaStreamDestroy(NULL));
    CHECK_ERR(cudaErrorInvalidValue, cudaStreamCreate(NULL));

    /* a scripted failure queues nothing */
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMallocAsync", 1, cudaErrorMemoryAllocation));
    CHECK_ERR(cudaErrorMemoryAllocation, cudaMallocAsync(&p, 8, s1));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_U64(0, cudadbl_live_streams());
    cudadbl_reset();
}

static void events(void) {
    cudaStream_t s = NULL, s1 = NULL;
    cudaEvent_t a = NULL, b = NULL, nt = NULL, never = NULL, e1 = NULL;
    float ms = -1;
    char host[8], *d = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&a));
    CHECK_ERR(cudaSuccess, cudaEventCreateWithFlags(&b, cudaEventBlockingSync));
    CHECK_ERR(cudaSuccess, cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&never));
    CHECK_ERR(cudaErrorInvalidValue, cudaEventCreateWithFlags(&e1, cudaEventInterprocess)); /* needs DisableTiming */
    CHECK_ERR(cudaErrorInvalidValue, cudaEventCreateWithFlags(&e1, 0x80));
    CHECK(e1 == NULL);
    CHECK_ERR(cudaErrorInvalidValue, cudaGetLastError());
    CHECK_U64(4, cudadbl_live_events());
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 8));

    cudadbl_set_clock(1.5f);
    CHECK_ERR(cudaSuccess, cudaEventRecord(a, s));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(d, host, 8, cudaMemcpyHostToDevice, s));
    cudadbl_advance_clock(2.5f);
    CHECK(cudadbl_clock() == 4.0f);
    CHECK_ERR(cudaSuccess, cudaEventRecord(b, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(nt, s));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(a));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(b));
    CHECK_ERR(cudaErrorNotReady, cudaEventElapsedTime(&ms, a, b));
    CHECK(ms == -1);
    CHECK_ERR(cudaSuccess, cudaGetLastError()); /* NotReady is not kept */
    CHECK_ERR(cudaSuccess, cudaEventQuery(never)); /* never recorded: nothing to wait for */
    cudadbl_complete_until(2.0f);
    CHECK_ERR(cudaSuccess, cudaEventQuery(a));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(b));
    CHECK_U64(2, (unsigned long)cudadbl_pending(s)); /* a and the copy (1.5) done; b and nt (4.0) not */
    cudadbl_complete_until(4.0f);
    CHECK_ERR(cudaSuccess, cudaEventQuery(b));
    CHECK_ERR(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
    CHECK(ms == 2.5f);
    CHECK_ERR(cudaSuccess, cudaEventElapsedTime(&ms, b, a));
    CHECK(ms == -2.5f);
    /* the real runtime's errors */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, nt)); /* DisableTiming */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, a, never));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, NULL, b));
    CHECK_ERR(cudaErrorInvalidValue, cudaEventElapsedTime(NULL, a, b));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventQuery(NULL));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventRecord(NULL, s));

    /* the marker stays: work stamped before it completes at once */
    cudadbl_set_clock(3.0f);
    CHECK_ERR(cudaSuccess, cudaEventRecord(a, s));
    CHECK_ERR(cudaSuccess, cudaEventQuery(a));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s));
    /* re-recording: the event follows its latest record */
    cudadbl_set_clock(10.0f);
    CHECK_ERR(cudaSuccess, cudaEventRecord(a, s));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(a));
    cudadbl_set_clock(12.0f);
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 0, 8, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(b, s));
    /* cudaEventSynchronize completes the stream up to the event only */
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(a));
    CHECK_ERR(cudaSuccess, cudaEventQuery(a));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(b));
    CHECK_U64(2, (unsigned long)cudadbl_pending(s));
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(never));
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s));
    CHECK_ERR(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
    CHECK(ms == 2.0f);
    /* stream and event of different devices */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e1));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventRecord(a, s1));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventRecord(a, NULL)); /* device 1's default stream */
    CHECK_ERR(cudaSuccess, cudaEventRecord(e1, NULL));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e1, s1));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(e1)); /* pending record: fine */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventDestroy(e1));
    cudadbl_complete_all();
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(a));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(b));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(nt));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(never));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_U64(0, cudadbl_live_events());
    cudadbl_reset();
}

#ifdef __cplusplus
extern "C" {
#endif
__typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz; /* what per-thread-default-stream builds call */
__typeof__(cudaMemcpy) cudaMemcpy_ptds;
__typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
__typeof__(cudaMemset) cudaMemset_ptds;
#ifdef __cplusplus
}
#endif

static void copy_time_and_more(void) {
    cudaStream_t s = NULL, s1 = NULL;
    cudaEvent_t a = NULL, b = NULL;
    char host[4000], *d = NULL;
    float ms = 0;
    int dev = -1;
    cudadbl_reset();
    memset(host, 3, sizeof host);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&a));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&b));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof host));
    /* copies take fixed + bytes / rate */
    cudadbl_set_copy_time(0.25f, 1000.0);
    CHECK_ERR(cudaSuccess, cudaEventRecord(a, s));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(d, host, 4000, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(b, s));
    CHECK(cudadbl_clock() == 4.25f);
    cudadbl_complete_until(4.0f); /* a done; the copy ends at 4.25 */
    CHECK_ERR(cudaSuccess, cudaEventQuery(a));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(b));
    cudadbl_complete_until(4.25f);
    CHECK_ERR(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
    CHECK(ms == 4.25f);
    cudadbl_set_copy_time(0.5f, 0);
    CHECK_ERR(cudaSuccess, cudaMemcpy2DAsync(d, 100, host, 100, 10, 10, cudaMemcpyHostToDevice, s));
    CHECK(cudadbl_clock() == 4.75f);
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 10)); /* not a copy */
    CHECK(cudadbl_clock() == 4.75f);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy(host, host, 10, cudaMemcpyDeviceToHost)); /* failed: no time */
    CHECK(cudadbl_clock() == 4.75f);
    /* a synchronous copy first completes the legacy stream's work */
    CHECK_ERR(cudaSuccess, cudaEventRecord(a, NULL));
    CHECK_ERR(cudaSuccess, cudaEventRecord(b, s));
    CHECK_ERR(cudaSuccess, cudaMemcpy(d, host, 10, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaSuccess, cudaEventQuery(a));
    CHECK_ERR(cudaSuccess, cudaEventQuery(b)); /* s is blocking: synchronized with the legacy stream */
    CHECK(cudadbl_clock() == 5.25f);
    /* cudaStreamGetDevice */
    CHECK_ERR(cudaSuccess, cudaStreamGetDevice(s, &dev));
    CHECK_U64(0, dev);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_ERR(cudaSuccess, cudaStreamGetDevice(s1, &dev));
    CHECK_U64(1, dev);
    CHECK_ERR(cudaSuccess, cudaStreamGetDevice(NULL, &dev)); /* the current device's default stream */
    CHECK_U64(1, dev);
    CHECK_ERR(cudaSuccess, cudaStreamGetDevice(s, &dev));
    CHECK_U64(0, dev);
    CHECK_ERR(cudaErrorInvalidValue, cudaStreamGetDevice(s, NULL));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    /* per-thread default stream names: same behaviour, counted as the plain name */
    cudadbl_reset_calls();
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync_ptsz(d, host, 8, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaMemcpy_ptds(host, d, 8, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy_ptds(host, host, 8, cudaMemcpyDeviceToHost));
    CHECK_U64(1, (unsigned long)cudadbl_calls("cudaMemcpyAsync"));
    CHECK_U64(2, (unsigned long)cudadbl_calls("cudaMemcpy"));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    cudadbl_reset();
    CHECK(cudadbl_clock() == 0);
}

static void reuse(void) {
    void *p = NULL, *q = NULL, *r = NULL, *first;
    cudaStream_t s = NULL, s2 = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    /* off: a fresh block each time (p stays live so it cannot come back) */
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 128));
    CHECK_ERR(cudaSuccess, cudaMalloc(&q, 128));
    CHECK(p != q);
    CHECK_ERR(cudaSuccess, cudaFree(q));
    cudadbl_set_reuse(1);
    /* cudaFree'd blocks come back for the same size and device, latest first */
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaMalloc(&q, 64));
    CHECK(q != p);
    CHECK_ERR(cudaSuccess, cudaMalloc(&r, 128));
    CHECK(r == p);
    CHECK_ERR(cudaSuccess, cudaFree(r));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc(&r, 128)); /* another device: not that block */
    CHECK(r != p);
    CHECK_ERR(cudaSuccess, cudaFree(r));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&r, 128, s)); /* from the cache too */
    CHECK(r == p);
    /* stream-ordered: freed on s, not reached, back at once on s only */
    CHECK_ERR(cudaSuccess, cudaFreeAsync(r, s));
    CHECK_U64(1, cudadbl_pending_frees(NULL));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 128, s2)); /* another stream: not it */
    CHECK(p != r);
    first = r;
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&r, 128, s));
    CHECK(r == first);
    CHECK_U64(0, cudadbl_pending_frees(NULL));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s)); /* the old free frees nothing now */
    CHECK(cudadbl_lookup(r, NULL, NULL, NULL, NULL));
    CHECK_U64(320, cudadbl_device_used(0)); /* q 64, p 128, r 128 */
    CHECK_ERR(cudaSuccess, cudaFree(r));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaFree(q));
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s2));
    cudadbl_set_reuse(0); /* drops the cache */
    cudadbl_reset();
}

static void reset_script(void) {
    void *p = NULL;
    cudaStream_t s = NULL;
    size_t fr = 0, tot = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 10));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cudaMalloc", 5, cudaErrorUnknown));
    CHECK_U64(0, (unsigned)cudadbl_set_total(0, MIB));
    CHECK_U64(0, (unsigned)cudadbl_set_device_count(1));
    cudadbl_set_clock(7);
    cudadbl_reset_script();
    CHECK_U64(0, (unsigned long)cudadbl_calls("cudaMalloc"));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&fr, &tot));
    CHECK_U64(16 * GIB, tot);
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK(cudadbl_clock() == 7);
    CHECK_U64(1, cudadbl_live(CUDADBL_ALL, NULL)); /* objects stay */
    CHECK_ERR(cudaSuccess, cudaStreamQuery(s));
    CHECK_ERR(cudaSuccess, cudaFree(p)); /* the scripted failures are gone */
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    cudadbl_reset();
}

#define NTHREADS 8
#define ITERS 500
static void *worker(void *arg) {
    int id = (int)(intptr_t)arg, i, bad = 0;
    char host[64];
    cudaStream_t s;
    memset(host, id, sizeof host);
    if (cudaSetDevice(id % 2) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) return (void *)1;
    for (i = 0; i < ITERS; i++) {
        void *p = NULL, *q = NULL;
        char back[64];
        bad |= cudaMalloc(&p, 64) != cudaSuccess;
        bad |= cudaMallocAsync(&q, 64, s) != cudaSuccess;
        bad |= cudaMemcpy(p, host, 64, cudaMemcpyHostToDevice) != cudaSuccess;
        bad |= cudaMemcpyAsync(q, p, 64, cudaMemcpyDefault, s) != cudaSuccess;
        bad |= cudaMemcpy(back, q, 64, cudaMemcpyDeviceToHost) != cudaSuccess;
        bad |= memcmp(back, host, 64) != 0;
        bad |= cudaFree(p) != cudaSuccess;
        bad |= cudaFreeAsync(q, s) != cudaSuccess;
        if (i % 50 == 0) bad |= cudaStreamSynchronize(s) != cudaSuccess;
    }
    bad |= cudaStreamSynchronize(s) != cudaSuccess;
    bad |= cudaStreamDestroy(s) != cudaSuccess;
    return (void *)(intptr_t)bad;
}

static void threads(void) {
    pthread_t t[NTHREADS];
    int i;
    void *bad;
    cudadbl_reset();
    for (i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], &bad);
        CHECK(bad == NULL);
    }
    CHECK_U64(NTHREADS * ITERS, (unsigned long)cudadbl_calls("cudaMalloc"));
    CHECK_U64(NTHREADS * ITERS * 2, (unsigned long)cudadbl_calls("cudaMemcpy"));
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64(0, (unsigned long)cudadbl_pending_all());
    CHECK_U64(0, cudadbl_live_streams());
    cudadbl_reset();
}

/* cudadbl_reset frees everything still live (ASan's leak check sees to it) */
static void reset_frees(void) {
    void *p = NULL, *h = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 10));
    CHECK_ERR(cudaSuccess, cudaMallocHost(&h, 10));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 10, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(h));
    cudadbl_set_clock(5);
    cudadbl_reset();
    CHECK_U64(0, live(CUDADBL_ALL));
    CHECK_U64(0, cudadbl_live_streams());
    CHECK_U64(0, cudadbl_live_events());
    CHECK(cudadbl_clock() == 0);
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaStreamQuery(s));
}


/* ---- driver API, contexts, last error ------------------------------------------ */

static void driver_api(void) {
    int n = -1, active = -1;
    unsigned flags = 9;
    CUdevice dev = -1;
    CUcontext ctx = NULL, ctx1 = NULL;
    CUevent ev = NULL, ev2 = NULL;
    cudaEvent_t rev = NULL;
    cudaStream_t s1 = NULL;
    size_t fr = 0, tot = 0, rfr = 0, rtot = 0;
    const char *name = NULL;
    float ms = -1;
    void *p = NULL;
    cudadbl_call_t call;
    cudadbl_reset();
    /* before the runtime initialized the driver */
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&ctx));
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuMemGetInfo(&fr, &tot));
    CHECK_U64(CUDA_SUCCESS, cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &name));
    CHECK_STR("CUDA_ERROR_NOT_INITIALIZED", name);
    CHECK_ERR(cudaSuccess, cudaGetLastError()); /* does not initialize */
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    CHECK_ERR(cudaSuccess, cudaGetDeviceCount(&n)); /* initializes, no context */
    CHECK_U64(CUDA_SUCCESS, cuDeviceGetCount(&n));
    CHECK_U64(2, n);
    CHECK_U64(CUDA_SUCCESS, cuDeviceGet(&dev, 1));
    CHECK_U64(1, dev);
    CHECK_U64(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&dev, 2));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&ctx));
    CHECK(ctx == NULL);
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo(&fr, &tot));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&dev));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError()); /* driver errors never reach the runtime's last error */
    /* the runtime's first call needing the device makes device 0's primary context current */
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 1000));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&ctx));
    CHECK(ctx != NULL);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetDevice(&dev));
    CHECK_U64(0, dev);
    CHECK_U64(CUDA_SUCCESS, cuMemGetInfo(&fr, &tot));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&rfr, &rtot));
    CHECK_U64(rfr, fr);
    CHECK_U64(16 * GIB - 1000, fr);
    CHECK_U64(16 * GIB, tot);
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuMemGetInfo(NULL, &tot));
    /* the last error: a runtime error stays through driver errors and successes */
    CHECK_ERR(cudaErrorInvalidValue, cudaFree((char *)p + 1));
    CHECK_U64(CUDA_ERROR_INVALID_HANDLE, cuEventQuery((CUevent)&n));
    CHECK_U64(CUDA_SUCCESS, cuMemGetInfo(&fr, &tot));
    CHECK_ERR(cudaErrorInvalidValue, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    /* counted and scripted by exported name; a scripted failure is a CUresult */
    CHECK_U64(5, (unsigned long)cudadbl_calls("cuMemGetInfo_v2"));
    CHECK_U64((unsigned long)-1, (unsigned long)cudadbl_calls("cuMemGetInfo"));
    CHECK_U64(0, (unsigned)cudadbl_fail_next("cuMemGetInfo_v2", 1, (cudaError_t)CUDA_ERROR_OUT_OF_MEMORY));
    CHECK_U64(CUDA_ERROR_OUT_OF_MEMORY, cuMemGetInfo(&fr, &tot));
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    CHECK_U64(0, (unsigned)cudadbl_last_call("cuMemGetInfo_v2", &call));
    CHECK_U64(CUDA_ERROR_OUT_OF_MEMORY, call.result);
    /* events: the driver and the runtime share them */
    CHECK_U64(CUDA_SUCCESS, cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CHECK_U64(CUDA_SUCCESS, cuEventCreate(&ev2, CU_EVENT_DEFAULT));
    CHECK_U64(2, cudadbl_live_events());
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(p, 0, 1000, NULL));
    CHECK_U64(CUDA_SUCCESS, cuEventRecord(ev, CU_STREAM_LEGACY));
    cudadbl_advance_clock(3);
    CHECK_U64(CUDA_SUCCESS, cuEventRecord(ev2, NULL));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cuEventRecord", &call));
    CHECK_U64(CUDADBL_STREAM_LEGACY, (unsigned)call.stream_kind);
    CHECK_U64(CUDA_ERROR_NOT_READY, cuEventQuery(ev));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(ev));
    CHECK_U64(CUDA_ERROR_NOT_READY, cuEventElapsedTime_v2(&ms, ev, ev2));
    CHECK_U64(CUDA_SUCCESS, cuEventSynchronize(ev2));
    CHECK_U64(CUDA_SUCCESS, cuEventQuery(ev));
    CHECK_U64(CUDA_SUCCESS, cuEventElapsedTime_v2(&ms, ev, ev2));
    CHECK(ms == 3.0f);
    ms = -1;
    CHECK_U64(CUDA_SUCCESS, cuEventElapsedTime(&ms, ev, ev2)); /* v1: same */
    CHECK(ms == 3.0f);
    CHECK_ERR(cudaSuccess, cudaEventCreateWithFlags(&rev, cudaEventDisableTiming));
    CHECK_U64(CUDA_SUCCESS, cuEventRecord(rev, NULL));
    CHECK_U64(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, ev, rev));
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuEventElapsedTime(NULL, ev, ev2));
    /* a stream of another device */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s1));
    CHECK_U64(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(ev, s1));
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCtx(s1, &ctx1));
    CHECK(ctx1 != NULL && ctx1 != ctx);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&ctx1)); /* cudaSetDevice made device 1's current */
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCtx(NULL, &ctx));
    CHECK(ctx == ctx1);
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCtx(CU_STREAM_PER_THREAD, &ctx));
    CHECK(ctx == ctx1);
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s1));
    CHECK_U64(CUDA_ERROR_INVALID_HANDLE, cuStreamGetCtx(s1, &ctx));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_U64(CUDA_SUCCESS, cuEventDestroy(ev));
    CHECK_U64(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy(ev));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventDestroy(ev));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaEventDestroy(ev2));
    CHECK_U64(CUDA_SUCCESS, cuEventDestroy(rev));
    CHECK_U64(0, cudadbl_live_events());
    /* primary context state */
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(1, &flags, &active));
    CHECK_U64(0, flags);
    CHECK_U64(1, active);
    CHECK_U64(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxGetState(2, &flags, &active));
    /* error names */
    CHECK_U64(CUDA_SUCCESS, cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, &name));
    CHECK_STR("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", name);
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuGetErrorName((CUresult)12345, &name));
    CHECK(name == NULL);
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_SUCCESS, NULL));
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    CHECK_ERR(cudaSuccess, cudaFree(p));
    /* cudadbl_reset un-initializes the driver */
    cudadbl_reset();
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    CHECK_U64(CUDA_SUCCESS, cuGetErrorName(CUDA_SUCCESS, &name));
    CHECK_STR("CUDA_SUCCESS", name);
}

static void driver_pointers(void) {
    void *d = NULL, *m = NULL, *h = NULL;
    char buf[64];
    CUpointer_attribute at[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    CUpointer_attribute bad = CU_POINTER_ATTRIBUTE_CONTEXT;
    unsigned type = 99, managed = 99;
    int ord = 99;
    void *data[3] = {&type, &managed, &ord};
    cudadbl_reset();
    CHECK_U64(CUDA_ERROR_NOT_INITIALIZED, cuPointerGetAttributes(3, at, data, (CUdeviceptr)(uintptr_t)buf));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 64));
    CHECK_ERR(cudaSuccess, cudaMallocManaged(&m, 64, cudaMemAttachGlobal));
    CHECK_ERR(cudaSuccess, cudaMallocHost(&h, 64));
    CHECK_U64(CUDA_SUCCESS, cuPointerGetAttributes(3, at, data, (CUdeviceptr)(uintptr_t)d + 10));
    CHECK_U64(CU_MEMORYTYPE_DEVICE, type);
    CHECK_U64(0, managed);
    CHECK_U64(1, ord);
    CHECK_U64(CUDA_SUCCESS, cuPointerGetAttributes(3, at, data, (CUdeviceptr)(uintptr_t)m));
    CHECK_U64(CU_MEMORYTYPE_DEVICE, type);
    CHECK_U64(1, managed);
    CHECK_U64(1, ord);
    CHECK_U64(CUDA_SUCCESS, cuPointerGetAttributes(3, at, data, (CUdeviceptr)(uintptr_t)h));
    CHECK_U64(CU_MEMORYTYPE_HOST, type);
    CHECK_U64(0, managed);
    CHECK_U64(1, ord);
    CHECK_ERR(cudaSuccess, cudaHostRegister(buf, sizeof buf, 0));
    CHECK_U64(CUDA_SUCCESS, cuPointerGetAttributes(1, at, data, (CUdeviceptr)(uintptr_t)(buf + 3)));
    CHECK_U64(CU_MEMORYTYPE_HOST, type);
    CHECK_ERR(cudaSuccess, cudaHostUnregister(buf));
    /* not a CUDA pointer: success, zeroed values */
    CHECK_U64(CUDA_SUCCESS, cuPointerGetAttributes(3, at, data, (CUdeviceptr)(uintptr_t)buf));
    CHECK_U64(0, type);
    CHECK_U64(0, managed);
    CHECK_U64((unsigned)-2, (unsigned)ord);
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(1, &bad, data, (CUdeviceptr)(uintptr_t)d));
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(0, at, data, (CUdeviceptr)(uintptr_t)d));
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    CHECK_U64(1, (unsigned long)cudadbl_calls("cudaHostRegister"));
    CHECK_U64(8, (unsigned long)cudadbl_calls("cuPointerGetAttributes"));
    cudadbl_reset();
}

static int ctx_thread_created = -1;
static void *ctx_thread(void *arg) {
    void *p = NULL;
    (void)arg;
    if (cudaMalloc(&p, 8) != cudaSuccess || cudaFree(p) != cudaSuccess) return (void *)1;
    ctx_thread_created = cudadbl_contexts_created(0);
    return NULL;
}

static void contexts(void) {
    int d = -1, n = -1, active = -1;
    unsigned flags = 0;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
    CUcontext c0 = NULL, c1 = NULL, got = NULL;
    CUdevice dev = -1;
    void *p = NULL;
    struct cudaPointerAttributes a;
    pthread_t t;
    void *bad = NULL;
    cudadbl_reset();
    /* calls that create no context */
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_ERR(cudaSuccess, cudaGetDeviceCount(&n));
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    CHECK_STR("no error", cudaGetErrorString(cudaSuccess));
    CHECK_ERR(cudaSuccess, cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_ERR(cudaSuccess, cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_ERR(cudaSuccess, cudaDeviceReset()); /* of an inactive device */
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(0, &flags, &active));
    CHECK_U64(0, active);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&got));
    CHECK(got == NULL);
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(0, (unsigned)cudadbl_context_active(0));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_contexts_created(CUDADBL_MAX_DEVICES));
    /* cudaSetDevice creates; later calls reuse it */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(1));
    CHECK_U64(1, (unsigned)cudadbl_context_active(1));
    CHECK_U64(0, (unsigned)cudadbl_context_active(0));
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(1));
    /* another thread's first runtime call creates its device's (0) */
    pthread_create(&t, NULL, ctx_thread, NULL);
    pthread_join(t, &bad);
    CHECK(bad == NULL);
    CHECK_U64(1, (unsigned)ctx_thread_created);
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, &d)); /* this thread is on device 1 */
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    /* retain: counts a creation only when inactive */
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(0));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0)); /* not retained */
    CHECK_U64(1, (unsigned)cudadbl_context_active(0));
    /* the push stack: the runtime follows the driver's current context */
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&c1));
    CHECK(c1 != NULL && c1 != c0);
    CHECK_U64(CUDA_SUCCESS, cuCtxPushCurrent(c0));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&got));
    CHECK(got == c0);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetDevice(&dev));
    CHECK_U64(0, dev);
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_U64(0, d);
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, p));
    CHECK_U64(0, a.device);
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_U64(CUDA_SUCCESS, cuCtxPopCurrent(&got));
    CHECK(got == c0);
    CHECK_ERR(cudaSuccess, cudaGetDevice(&d));
    CHECK_U64(1, d);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&got));
    CHECK(got == c1);
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&got));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent((CUcontext)&d));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent(NULL));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(1));
    cudadbl_reset();
    CHECK_U64(0, (unsigned)cudadbl_contexts_created(1));
    CHECK_U64(0, (unsigned)cudadbl_context_active(1));
}

static void device_reset(void) {
    void *d = NULL, *m = NULL, *h = NULL, *d1 = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    CUcontext c0 = NULL;
    CUdevice dev = -1;
    size_t fr = 0, tot = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d1, 16)); /* device 1: untouched */
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 100));
    CHECK_ERR(cudaSuccess, cudaMallocManaged(&m, 100, cudaMemAttachGlobal));
    CHECK_ERR(cudaSuccess, cudaMallocHost(&h, 100));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 1, 100, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_U64(CUDA_SUCCESS, cuCtxPushCurrent(c0));
    CHECK_U64(4, cudadbl_live(CUDADBL_ALL, NULL));
    CHECK_ERR(cudaSuccess, cudaDeviceReset());
    CHECK_U64(1, cudadbl_live(CUDADBL_ALL, NULL)); /* d1 */
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_U64(16, cudadbl_device_used(1));
    CHECK_U64(0, cudadbl_live_streams());
    CHECK_U64(0, cudadbl_live_events());
    CHECK_U64(0, (unsigned long)cudadbl_pending_all());
    CHECK_U64(0, (unsigned)cudadbl_context_active(0));
    CHECK_U64(1, (unsigned)cudadbl_context_active(1));
    /* the pushed context is destroyed */
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetDevice(&dev));
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemGetInfo(&fr, &tot));
    CHECK_ERR(cudaErrorContextIsDestroyed, cudaMalloc(&d, 8));
    CHECK_U64(CUDA_SUCCESS, cuCtxPopCurrent(NULL));
    CHECK_U64(1, (unsigned)cudadbl_contexts_created(0));
    /* old handles: errors, never a crash (and the calls create the context again) */
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaStreamQuery(s));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaMemsetAsync(d1, 0, 1, s));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventQuery(e));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaEventDestroy(e));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaStreamDestroy(s));
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuEventQuery(e));
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuStreamGetCtx(s, &c0));
    CHECK_ERR(cudaErrorInvalidValue, cudaFree(d));
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeHost(h));
    CHECK_U64(2, (unsigned)cudadbl_contexts_created(0));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 8));
    CHECK_U64(2, (unsigned)cudadbl_contexts_created(0));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetDevice(&dev));
    CHECK_U64(0, dev);
    CHECK_U64(1, (unsigned long)cudadbl_calls("cudaDeviceReset"));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaFree(d1));
    cudadbl_reset();
}

static void sticky(void) {
    void *p = NULL;
    int n = 0;
    size_t fr = 0, tot = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    cudadbl_set_sticky(cudaErrorIllegalAddress);
    CHECK_ERR(cudaErrorIllegalAddress, cudaMalloc(&p, 8));
    CHECK_ERR(cudaErrorIllegalAddress, cudaDeviceSynchronize());
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError());
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError()); /* not cleared */
    CHECK_ERR(cudaErrorIllegalAddress, cudaPeekAtLastError());
    CHECK_ERR(cudaSuccess, cudaGetDeviceCount(&n)); /* needs no context */
    CHECK_STR("an illegal memory access was encountered", cudaGetErrorString(cudaErrorIllegalAddress));
    CHECK_U64(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemGetInfo(&fr, &tot));
    CHECK_U64(CUDA_SUCCESS, cuDeviceGetCount(&n));
    cudadbl_reset_script(); /* keeps it */
    CHECK_ERR(cudaErrorIllegalAddress, cudaFree(p));
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaGetLastError());
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    cudadbl_reset();
}

/* ---- stream capture and graphs -------------------------------------------------- */

static void capture_basics(void) {
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    cudaGraph_t g = (cudaGraph_t)&g;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    unsigned long long id = 0, id2 = 0;
    CUstreamCaptureStatus cst = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t cid = 0;
    char host[16] = {7};
    void *d = NULL, *q = NULL;
    size_t ndeps = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 16));
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 16));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorInvalidValue, cudaStreamBeginCapture(s, (enum cudaStreamCaptureMode)7));
    CHECK_ERR(cudaErrorIllegalState, cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusNone, st);
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    CHECK_U64(0, id);
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorIllegalState, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_U64(1, (unsigned long)cudadbl_capturing());
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusActive, st);
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    CHECK(id != 0);
    CHECK_ERR(cudaErrorNotSupported, cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, &ndeps));
    (void)cudaGetLastError();
    /* the driver sees the same capture, without touching the last error */
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCaptureInfo_v2(s, &cst, &cid, NULL, NULL, NULL));
    CHECK_U64(CU_STREAM_CAPTURE_STATUS_ACTIVE, cst);
    CHECK_U64(id, cid);
    cid = 0;
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCaptureInfo(s, &cst, &cid));
    CHECK_U64(id, cid);
    CHECK_U64(CUDA_ERROR_INVALID_VALUE, cuStreamGetCaptureInfo(s, NULL, &cid));
    CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
    /* work is captured, not run */
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(d, host, 16, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 0, 4, s));
    CHECK_U64(0, ((char *)d)[0] == 7);
    CHECK_U64(0, (unsigned long)cudadbl_pending(s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s)); /* a captured event */
    /* stream-ordered allocation: not modelled in capture, the capture goes on */
    CHECK_ERR(cudaErrorNotSupported, cudaMallocAsync(&q, 8, s));
    CHECK_ERR(cudaErrorNotSupported, cudaFreeAsync(d, s));
    CHECK_U64(0, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g));
    CHECK(g != NULL);
    CHECK_U64(0, (unsigned long)cudadbl_capturing());
    CHECK_U64(1, cudadbl_live_graphs());
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusNone, st);
    /* the event stays captured until recorded outside a capture */
    CHECK_ERR(cudaErrorCapturedEvent, cudaEventQuery(e));
    CHECK_U64(CUDA_ERROR_CAPTURED_EVENT, cuEventSynchronize(e));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s));
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(e));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    CHECK_U64(0, cudadbl_live_graphs());
    /* ids are never reused */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(cudaStreamPerThread, &st, &id2, NULL, NULL, NULL, NULL));
    CHECK(id2 != 0 && id2 != id);
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(cudaStreamPerThread, &g));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    CHECK_U64(0, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, cudaEventDestroy(e));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

/* What invalidates a capture, and what a capture prohibits. */
static void capture_invalidation(void) {
    cudaStream_t s = NULL, nb = NULL, bad = NULL;
    cudaEvent_t e = NULL;
    cudaGraph_t g = (cudaGraph_t)&g;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    enum cudaStreamCaptureMode mode;
    char host[8] = {0};
    void *d = NULL, *p = NULL;
    size_t fr = 0, tot = 0;
    float ms = 0;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 8));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CHECK_ERR(cudaErrorInvalidValue, cudaStreamCreateWithFlags(&bad, 4));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));

    /* synchronizing the capturing stream */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusInvalidated, st);
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaMemsetAsync(d, 0, 8, s));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK(g == NULL);
    CHECK_U64(1, (unsigned)cudadbl_captures_invalidated());
    CHECK_U64(0, (unsigned long)cudadbl_capturing());
    CHECK_ERR(cudaSuccess, cudaStreamQuery(s)); /* over */

    /* a potentially unsafe call in Global mode */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaMalloc(&p, 8));
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaMemGetInfo(&fr, &tot)); /* still in progress */
    CHECK_U64(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemGetInfo(&fr, &tot));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK_U64(2, (unsigned)cudadbl_captures_invalidated());
    /* ... allowed to a Relaxed thread */
    mode = cudaStreamCaptureModeRelaxed;
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_U64(cudaStreamCaptureModeGlobal, mode);
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_U64(cudaStreamCaptureModeRelaxed, mode);
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    /* a Relaxed capture prohibits nothing */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 8));
    CHECK_ERR(cudaSuccess, cudaFree(p));
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    CHECK_U64(2, (unsigned)cudadbl_captures_invalidated());

    /* the legacy stream while a blocking stream captures */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaErrorStreamCaptureImplicit, cudaStreamIsCapturing(NULL, &st)); /* does not invalidate */
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusActive, st);
    CHECK_ERR(cudaErrorStreamCaptureImplicit, cudaMemcpy(host, d, 8, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(s, &st));
    CHECK_U64(cudaStreamCaptureStatusInvalidated, st);
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    /* ... a non-blocking stream's capture does not care */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(nb, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, cudaMemcpy(host, d, 8, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 0, 8, NULL));
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(nb, &g));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    CHECK_U64(3, (unsigned)cudadbl_captures_invalidated());

    /* a captured event queried during the capture */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s));
    CHECK_ERR(cudaErrorCapturedEvent, cudaEventElapsedTime(&ms, e, e));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK_U64(4, (unsigned)cudadbl_captures_invalidated());
    /* waiting on work outside the capture */
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, nb));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaErrorStreamCaptureIsolation, cudaStreamWaitEvent(s, e, 0));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK_U64(5, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaErrorInvalidValue, cudaStreamWaitEvent(s, e, 1));
    /* destroying the capturing stream: invalidated and over */
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&bad));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(bad, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(bad));
    CHECK_U64(6, (unsigned)cudadbl_captures_invalidated());
    CHECK_U64(0, (unsigned long)cudadbl_capturing());
    cudadbl_complete_all();
    CHECK_ERR(cudaSuccess, cudaEventDestroy(e));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(nb));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

/* Capture threads: a Global capture of one thread prohibits unsafe calls
   of Global-mode threads, not of ThreadLocal ones. */
static cudaStream_t cap_stream;
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cap_cv = PTHREAD_COND_INITIALIZER;
static int cap_step;
static cudaError_t cap_local_result, cap_global_result, cap_end_result;

static void cap_wait(int step) {
    pthread_mutex_lock(&cap_mu);
    while (cap_step < step) pthread_cond_wait(&cap_cv, &cap_mu);
    pthread_mutex_unlock(&cap_mu);
}

static void cap_set(int step) {
    pthread_mutex_lock(&cap_mu);
    cap_step = step;
    pthread_cond_broadcast(&cap_cv);
    pthread_mutex_unlock(&cap_mu);
}

static void *cap_other(void *arg) {
    void *p = NULL;
    cudaGraph_t g = NULL;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
    (void)arg;
    cap_wait(1);
    cudaThreadExchangeStreamCaptureMode(&mode);
    cap_local_result = cudaMalloc(&p, 8); /* ThreadLocal: only its own captures matter */
    if (cap_local_result == cudaSuccess) cudaFree(p);
    mode = cudaStreamCaptureModeGlobal;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cap_global_result = cudaMalloc(&p, 8); /* Global: the other thread's Global capture */
    cap_end_result = cudaStreamEndCapture(cap_stream, &g); /* not the thread that began it */
    cap_set(2);
    return NULL;
}

static void capture_threads(void) {
    pthread_t t;
    cudaGraph_t g = (cudaGraph_t)&g;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudadbl_reset();
    cap_step = 0;
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&cap_stream));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(cap_stream, cudaStreamCaptureModeGlobal));
    pthread_create(&t, NULL, cap_other, NULL);
    cap_set(1);
    cap_wait(2);
    pthread_join(t, NULL);
    CHECK_ERR(cudaSuccess, cap_local_result);
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cap_global_result);
    CHECK_ERR(cudaErrorStreamCaptureWrongThread, cap_end_result);
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(cap_stream, &st));
    CHECK_U64(cudaStreamCaptureStatusInvalidated, st);
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(cap_stream, &g));
    CHECK(g == NULL);
    CHECK_U64(1, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(cap_stream));
    cudadbl_reset();
}

static void capture_fork_join(void) {
    cudaStream_t a = NULL, b = NULL;
    cudaEvent_t fork = NULL, join = NULL;
    cudaGraph_t g = (cudaGraph_t)&g;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long ida = 0, idb = 0;
    void *d = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 64));
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 64));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&a));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&b));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&fork));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&join));
    /* fork b into a's capture, work on b, no join: unjoined */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaEventRecord(fork, a));
    CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(b, fork, 0));
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(a, &st, &ida, NULL, NULL, NULL, NULL));
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(b, &st, &idb, NULL, NULL, NULL, NULL));
    CHECK_U64(cudaStreamCaptureStatusActive, st);
    CHECK_U64(ida, idb);
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 1, 64, b));
    CHECK_ERR(cudaErrorStreamCaptureUnmatched, cudaStreamEndCapture(b, &g));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(a, &g));
    CHECK_U64(1, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(b, &st));
    CHECK_U64(cudaStreamCaptureStatusNone, st);
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaEventRecord(fork, a));
    CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(b, fork, 0));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 1, 64, b));
    CHECK_ERR(cudaErrorStreamCaptureUnjoined, cudaStreamEndCapture(a, &g));
    CHECK(g == NULL);
    CHECK_U64(2, (unsigned)cudadbl_captures_invalidated());
    /* joined back: one graph with b's node */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaEventRecord(fork, a));
    CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(b, fork, 0));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 2, 64, b));
    CHECK_ERR(cudaSuccess, cudaEventRecord(join, b));
    CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(a, join, 0));
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(a, &g));
    CHECK(g != NULL);
    CHECK_U64(0, ((unsigned char *)d)[0]); /* not run */
    CHECK_ERR(cudaSuccess, cudaStreamIsCapturing(b, &st));
    CHECK_U64(cudaStreamCaptureStatusNone, st);
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
    CHECK_U64(2, (unsigned)cudadbl_captures_invalidated());
    CHECK_ERR(cudaSuccess, cudaEventDestroy(fork));
    CHECK_ERR(cudaSuccess, cudaEventDestroy(join));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(a));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(b));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

static void graphs(void) {
    cudaStream_t s = NULL, s2 = NULL;
    cudaEvent_t e = NULL;
    cudaGraph_t g = NULL, g2 = NULL;
    cudaGraphExec_t x = NULL, x2 = NULL;
    char host[32], back[32];
    void *d = NULL, *d2 = NULL;
    int i;
    cudadbl_reset();
    for (i = 0; i < 32; i++) host[i] = (char)i;
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 32));
    CHECK_ERR(cudaSuccess, cudaMalloc(&d2, 32));
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 32));
    CHECK_ERR(cudaSuccess, cudaMemset(d2, 0, 32));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s2));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(d, host, 32, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 9, 2, s));
    CHECK_ERR(cudaSuccess, cudaMemcpy2DAsync(d2, 16, d, 16, 8, 2, cudaMemcpyDeviceToDevice, s));
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g));
    CHECK_U64(0, ((char *)d)[5]);
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphInstantiate(NULL, g, 0));
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphInstantiate(&x, NULL, 0));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGraphInstantiate(&x, (cudaGraph_t)&i, 0));
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagDeviceLaunch));
    CHECK_ERR(cudaSuccess, cudaGraphInstantiate(&x, g, 0));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g)); /* the exec keeps its snapshot */
    CHECK_U64(0, cudadbl_live_graphs());
    CHECK_U64(1, cudadbl_live_graph_execs());
    host[5] = 55; /* the launch copies the then-current bytes */
    cudadbl_set_copy_time(1.0f, 0);
    CHECK_ERR(cudaSuccess, cudaGraphLaunch(x, s2));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s2));
    CHECK_U64(55, ((char *)d)[5]);
    CHECK_U64(9, ((char *)d)[1]);
    CHECK_U64(9, ((char *)d2)[0]);
    CHECK_U64(55, ((char *)d2)[5]);
    CHECK_U64(17, ((char *)d2)[17]);
    CHECK_U64(0, ((char *)d2)[8]); /* outside the 2D rows */
    CHECK(cudadbl_clock() == 3.0f); /* three nodes */
    CHECK_U64(4, (unsigned long)cudadbl_pending(s2)); /* three nodes and the event */
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(e));
    cudadbl_complete_until(2.0f);
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(e));
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(e));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s2));
    CHECK_U64(1, (unsigned long)cudadbl_graph_launches());
    CHECK_U64(32 + 16, (unsigned long)cudadbl_graph_copy_bytes());
    /* launched into a capture: a child, run when the outer graph runs */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaGraphLaunch(x, s));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(back, d, 32, cudaMemcpyDeviceToHost, s));
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g2));
    CHECK_U64(1, (unsigned long)cudadbl_graph_launches());
    CHECK_ERR(cudaSuccess, cudaGraphInstantiateWithFlags(&x2, g2, 0));
    host[6] = 66;
    CHECK_ERR(cudaSuccess, cudaGraphLaunch(x2, s));
    CHECK_U64(66, back[6]);
    CHECK_U64(2, (unsigned long)cudadbl_graph_launches());
    CHECK_U64(2 * (32 + 16) + 32, (unsigned long)cudadbl_graph_copy_bytes());
    /* bad handles */
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphLaunch(NULL, s));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGraphLaunch((cudaGraphExec_t)&i, s));
    CHECK_ERR(cudaSuccess, cudaGraphExecDestroy(x));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGraphExecDestroy(x));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGraphLaunch(x, s));
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphExecDestroy(NULL));
    CHECK_ERR(cudaErrorInvalidValue, cudaGraphDestroy(NULL));
    CHECK_ERR(cudaErrorInvalidResourceHandle, cudaGraphDestroy((cudaGraph_t)&i));
    CHECK_ERR(cudaSuccess, cudaGraphDestroy(g2));
    /* a node on freed device memory: the launch faults (sticky) */
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaFree(d2));
    CHECK_ERR(cudaErrorIllegalAddress, cudaGraphLaunch(x2, s));
    CHECK_ERR(cudaErrorIllegalAddress, cudaGetLastError());
    CHECK_ERR(cudaErrorIllegalAddress, cudaStreamSynchronize(s));
    cudadbl_reset();
    CHECK_U64(0, cudadbl_live_graph_execs());
    CHECK_U64(0, (unsigned long)cudadbl_graph_launches());
}

/* ---- default streams, implicit synchronization, hazards --------------------------- */

static cudaError_t pt_thread_result;
static long pt_thread_pending = -1;
static void *pt_thread(void *arg) {
    void *d = arg;
    pt_thread_result = cudaMemsetAsync(d, 3, 8, cudaStreamPerThread);
    pt_thread_pending = cudadbl_pending_per_thread();
    return NULL;
}

static void default_streams(void) {
    cudaStream_t s = NULL, nb = NULL;
    cudaEvent_t ev = NULL;
    void *d = NULL;
    char host[8] = {0};
    pthread_t t;
    cudadbl_call_t call;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&d, 64));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&ev));
    /* three distinct default streams */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 1, 8, cudaStreamPerThread));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemsetAsync", &call));
    CHECK_U64(CUDADBL_STREAM_PER_THREAD, (unsigned)call.stream_kind);
    CHECK_U64(1, (unsigned long)cudadbl_pending_per_thread());
    CHECK_U64(0, (unsigned long)cudadbl_pending(NULL));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 1, 8, NULL));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemsetAsync", &call));
    CHECK_U64(CUDADBL_STREAM_LEGACY, (unsigned)call.stream_kind);
    CHECK_ERR(cudaSuccess, cudaMemsetAsync_ptsz(d, 1, 8, NULL)); /* NULL: per-thread */
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemsetAsync", &call));
    CHECK_U64(CUDADBL_STREAM_PER_THREAD, (unsigned)call.stream_kind);
    CHECK_U64(1, (unsigned long)cudadbl_pending(cudaStreamLegacy));
    CHECK_U64(2, (unsigned long)cudadbl_pending(cudaStreamPerThread));
    /* another thread's per-thread stream is its own */
    pthread_create(&t, NULL, pt_thread, d);
    pthread_join(t, NULL);
    CHECK_ERR(cudaSuccess, pt_thread_result);
    CHECK_U64(1, (unsigned long)pt_thread_pending);
    CHECK_U64(2, (unsigned long)cudadbl_pending_per_thread());
    cudadbl_complete_all();
    /* the driver's _ptsz names: NULL is the per-thread stream, counted as the plain name */
    {
        CUevent ce = NULL;
        CUstreamCaptureStatus cst = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        cuuint64_t cid = 0, cid2 = 1;
        CHECK_U64(CUDA_SUCCESS, cuEventCreate(&ce, CU_EVENT_DEFAULT));
        CHECK_U64(CUDA_SUCCESS, cuEventRecord_ptsz(ce, NULL));
        CHECK_U64(1, (unsigned long)cudadbl_pending_per_thread());
        CHECK_U64(0, (unsigned long)cudadbl_pending(NULL));
        CHECK_U64(0, (unsigned)cudadbl_last_call("cuEventRecord", &call));
        CHECK_U64(CUDADBL_STREAM_PER_THREAD, (unsigned)call.stream_kind);
        CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeRelaxed));
        CHECK_U64(CUDA_SUCCESS, cuStreamGetCaptureInfo_v2_ptsz(NULL, &cst, &cid, NULL, NULL, NULL));
        CHECK_U64(CU_STREAM_CAPTURE_STATUS_ACTIVE, cst);
        CHECK(cid != 0);
        /* NULL in the plain name: the legacy stream, while a blocking stream captures */
        CHECK_U64(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamGetCaptureInfo_v2(NULL, &cst, &cid2, NULL, NULL, NULL));
        CHECK_U64(1, cid2); /* untouched */
        CHECK_ERR(cudaSuccess, cudaPeekAtLastError());
        CHECK_U64(2, (unsigned long)cudadbl_calls("cuStreamGetCaptureInfo_v2"));
        {
            cudaGraph_t g = NULL;
            CHECK_ERR(cudaSuccess, cudaStreamEndCapture(cudaStreamPerThread, &g));
            CHECK_ERR(cudaSuccess, cudaGraphDestroy(g));
        }
        CHECK_U64(CUDA_SUCCESS, cuEventDestroy(ce));
        cudadbl_complete_all();
    }

    /* a legacy op waits for earlier work of blocking streams, not of non-blocking ones */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 2, 8, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 2, 8, nb));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 2, 8, cudaStreamPerThread));
    CHECK_ERR(cudaSuccess, cudaEventRecord(ev, NULL));
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(ev));
    CHECK_U64(0, (unsigned long)cudadbl_pending(s));
    CHECK_U64(0, (unsigned long)cudadbl_pending_per_thread());
    CHECK_U64(1, (unsigned long)cudadbl_pending(nb));
    /* a blocking stream's op waits for earlier legacy ops */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 3, 8, NULL));
    CHECK_ERR(cudaSuccess, cudaEventRecord(ev, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 3, 8, NULL)); /* after: not waited for */
    CHECK_ERR(cudaSuccess, cudaEventSynchronize(ev));
    CHECK_U64(1, (unsigned long)cudadbl_pending(NULL));
    CHECK_U64(1, (unsigned long)cudadbl_pending(nb));
    cudadbl_complete_all();

    /* synchronous copies: after the legacy stream and the blocking streams (plain) ... */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 4, 8, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 4, 8, nb));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 4, 8, cudaStreamPerThread));
    CHECK_ERR(cudaSuccess, cudaMemcpy(host, d, 8, cudaMemcpyDeviceToHost));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemcpy", &call));
    CHECK_U64(CUDADBL_STREAM_LEGACY, (unsigned)call.stream_kind);
    CHECK_U64(0, (unsigned long)cudadbl_pending(s));
    CHECK_U64(0, (unsigned long)cudadbl_pending_per_thread());
    CHECK_U64(1, (unsigned long)cudadbl_pending(nb));
    /* ... after the calling thread's per-thread stream (_ptds) */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 5, 8, s));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 5, 8, cudaStreamPerThread));
    CHECK_ERR(cudaSuccess, cudaMemset_ptds(d, 6, 8));
    CHECK_U64(0, (unsigned)cudadbl_last_call("cudaMemset", &call));
    CHECK_U64(CUDADBL_STREAM_PER_THREAD, (unsigned)call.stream_kind);
    CHECK_U64(0, (unsigned long)cudadbl_pending_per_thread());
    CHECK_U64(1, (unsigned long)cudadbl_pending(s));
    /* cudaFree synchronizes the device */
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(d, 7, 8, nb));
    {
        void *x = NULL;
        CHECK_ERR(cudaSuccess, cudaMalloc(&x, 8));
        CHECK_ERR(cudaSuccess, cudaFree(x));
    }
    CHECK_U64(0, (unsigned long)cudadbl_pending_all());
    CHECK_ERR(cudaSuccess, cudaEventDestroy(ev));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(nb));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

static void hazards(void) {
    cudaStream_t a = NULL, b = NULL;
    void *p = NULL, *q = NULL, *r = NULL;
    char host[64];
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK_ERR(cudaSuccess, cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    /* freed on a while b still reads it */
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 64, a));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(host, p, 64, cudaMemcpyDeviceToHost, b));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(p, a));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a));
    CHECK_U64(1, (unsigned long)cudadbl_hazards());
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(b));
    CHECK_U64(1, (unsigned long)cudadbl_hazards());
    /* the same with b synchronized first */
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&p, 64, a));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(host, p, 64, cudaMemcpyDeviceToHost, b));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(b));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(p, a));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a));
    CHECK_U64(1, (unsigned long)cudadbl_hazards());
    /* stream-ordered reuse of a block b still uses */
    cudadbl_set_reuse(1);
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&q, 128, a));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a));
    CHECK_ERR(cudaSuccess, cudaMemsetAsync(q, 0, 128, b));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(q, a));
    CHECK_ERR(cudaSuccess, cudaMallocAsync(&r, 128, a));
    CHECK(r == q);
    CHECK_U64(2, (unsigned long)cudadbl_hazards());
    cudadbl_complete_all();
    CHECK_U64(2, (unsigned long)cudadbl_hazards());
    /* ordered by an event: no hazard */
    {
        cudaEvent_t e = NULL;
        CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
        CHECK_ERR(cudaSuccess, cudaMemsetAsync(r, 1, 128, b));
        CHECK_ERR(cudaSuccess, cudaEventRecord(e, b));
        CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(a, e, 0));
        CHECK_ERR(cudaSuccess, cudaFreeAsync(r, a));
        CHECK_ERR(cudaSuccess, cudaStreamSynchronize(a)); /* completes b's memset first */
        CHECK_U64(0, (unsigned long)cudadbl_pending(b));
        CHECK_U64(2, (unsigned long)cudadbl_hazards());
        CHECK_ERR(cudaSuccess, cudaEventDestroy(e));
    }
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(a));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(b));
    cudadbl_set_reuse(0);
    cudadbl_reset();
    CHECK_U64(0, (unsigned long)cudadbl_hazards());
}

/* 3D, symbol, array and batch copies: the bytes land where the
   parameters say, and each documented rule (or strict reading) alone. */
static struct cudaPitchedPtr pitched(void *p, size_t pitch, size_t ysize) {
    struct cudaPitchedPtr r;
    r.ptr = p;
    r.pitch = pitch;
    r.xsize = pitch;
    r.ysize = ysize;
    return r;
}

static void copies_3d_symbol_batch(void) {
    static char var[64];
    char host[256], back[256], bogus[8];
    char *d = NULL, *d1 = NULL;
    cudaStream_t s = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpy3DPeerParms q;
    struct cudaMemcpyAttributes at;
    struct cudaMemcpy3DBatchOp op;
    size_t i, idx = 0, n = 16;
    void *dst;
    const void *src;
    cudadbl_reset();
    for (i = 0; i < sizeof host; i++) host[i] = (char)i;
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    /* 3D: 4 bytes x 2 rows x 2 slices from pitch 8 / 3 rows to pitch 16 / 2 rows, at offset (1, 1, 0) */
    memset(&p, 0, sizeof p);
    p.srcPtr = pitched(host, 8, 3);
    p.srcPos.x = 1;
    p.srcPos.y = 1;
    p.dstPtr = pitched(d, 16, 2);
    p.extent.width = 4;
    p.extent.height = 2;
    p.extent.depth = 2;
    p.kind = cudaMemcpyHostToDevice;
    CHECK_ERR(cudaSuccess, cudaMemcpy3D(&p));
    CHECK_U64((unsigned char)host[9], (unsigned char)d[0]);        /* slice 0 row 0: 1*8 + 1 */
    CHECK_U64((unsigned char)host[17], (unsigned char)d[16]);      /* slice 0 row 1 */
    CHECK_U64((unsigned char)host[24 + 9], (unsigned char)d[32]);  /* slice 1 (8*3 apart) row 0 */
    CHECK_U64((unsigned char)host[24 + 20], (unsigned char)d[51]); /* slice 1 row 1, byte 3 */
    /* rules, one each */
    p.extent.height = 0;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3D(&p)); /* zero extent (strict reading) */
    p.extent.height = 2;
    p.dstPtr.pitch = 3;
    CHECK_ERR(cudaErrorInvalidPitchValue, cudaMemcpy3D(&p));
    p.dstPtr.pitch = 16;
    p.dstPtr.ysize = 1;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3D(&p)); /* slices of fewer rows than the extent */
    p.dstPtr.ysize = 2;
    p.kind = (enum cudaMemcpyKind)7;
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpy3D(&p));
    p.kind = cudaMemcpyHostToDevice;
    p.dstArray = (cudaArray_t)(void *)bogus;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3D(&p)); /* both a pointer and an array */
    p.dstArray = NULL;
    p.dstPtr = pitched(host, 16, 2);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3D(&p)); /* H2D to memory not in the table */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3D(NULL));
    /* 3D peer: device memory of the devices named */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d1, 256));
    CHECK_ERR(cudaSuccess, cudaSetDevice(0));
    memset(&q, 0, sizeof q);
    q.srcPtr = pitched(d, 16, 1);
    q.dstPtr = pitched(d1, 16, 1);
    q.dstDevice = 1;
    q.extent.width = 16;
    q.extent.height = q.extent.depth = 1;
    CHECK_ERR(cudaSuccess, cudaMemcpy3DPeerAsync(&q, s));
    CHECK(memcmp(d1, d, 16) == 0);
    q.dstDevice = 0;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DPeer(&q)); /* d1 lies on device 1 */
    q.dstDevice = 9;
    CHECK_ERR(cudaErrorInvalidDevice, cudaMemcpy3DPeer(&q));
    /* symbols */
    CHECK_ERR(cudaErrorInvalidSymbol, cudaMemcpyToSymbol(var, host, 4, 0, cudaMemcpyHostToDevice));
    CHECK_U64(0, (unsigned)cudadbl_register_symbol(var, sizeof var));
    CHECK_ERR(cudaSuccess, cudaMemcpyToSymbol(var, host + 100, 8, 4, cudaMemcpyHostToDevice));
    CHECK(memcmp(var + 4, host + 100, 8) == 0);
    CHECK_ERR(cudaSuccess, cudaMemcpyFromSymbolAsync(back, var, 8, 4, cudaMemcpyDefault, s));
    CHECK(memcmp(back, host + 100, 8) == 0);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyToSymbol(var, host, 8, 60, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpyToSymbol(var, host, 8, 0, cudaMemcpyDeviceToHost));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpyFromSymbol(back, var, 8, 0, cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpyToSymbol(var, host, 8, 0, cudaMemcpyHostToHost));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyToSymbol(var, host, 8, 0, cudaMemcpyDeviceToDevice)); /* host src */
    /* arrays: none exist */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy2DToArray((cudaArray_t)(void *)bogus, 0, 0, host, 8, 8, 1,
                                                         cudaMemcpyHostToDevice));
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpy2DFromArray(host, 8, (cudaArray_const_t)(void *)bogus, 0, 0,
                                                                     8, 1, (enum cudaMemcpyKind)8));
    /* batches */
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    dst = d + 1000;
    src = host + 50;
    CHECK_ERR(cudaSuccess, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s));
    CHECK(memcmp(d + 1000, host + 50, 16) == 0);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, NULL)); /* legacy */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 0, &at, &idx, 1, s));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 2, s)); /* numAttrs > count */
    idx = 1;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s)); /* first index not 0 */
    idx = 0;
    at.srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s));
    at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    at.flags = 2;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s));
    memset(&op, 0, sizeof op);
    op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
    op.src.op.ptr.ptr = d;
    op.dst.op.ptr.ptr = back;
    op.src.op.ptr.rowLength = 16;
    op.extent.width = 4;
    op.extent.height = 2;
    op.extent.depth = 1;
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    memset(back, 0, sizeof back);
    CHECK_ERR(cudaSuccess, cudaMemcpy3DBatchAsync(1, &op, 0, s));
    CHECK(memcmp(back, d, 4) == 0 && memcmp(back + 4, d + 16, 4) == 0); /* packed destination rows */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DBatchAsync(1, &op, 1, s));    /* flags */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DBatchAsync(0, &op, 0, s));
    op.src.op.ptr.rowLength = 3;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DBatchAsync(1, &op, 0, s));    /* row shorter than the width */
    op.src.op.ptr.rowLength = 0;
    op.src.type = cudaMemcpyOperandTypeArray;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DBatchAsync(1, &op, 0, s));
    op.src.type = cudaMemcpyOperandTypePointer;
    op.extent.depth = 0;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy3DBatchAsync(1, &op, 0, s));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaFree(d1));
    cudadbl_reset();
    CHECK_ERR(cudaErrorInvalidSymbol, cudaMemcpyToSymbol(var, host, 4, 0, cudaMemcpyHostToDevice)); /* forgotten */
    cudadbl_reset();
}

/* Captured 3D and batch copies become nodes; a bad one invalidates. */
static void capture_3d_batch(void) {
    char host[64], *d = NULL;
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    struct cudaMemcpy3DParms p;
    struct cudaMemcpyAttributes at;
    size_t idx = 0, n = 8;
    void *dst;
    const void *src = host;
    memset(host, 7, sizeof host);
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 256));
    CHECK_ERR(cudaSuccess, cudaMemset(d, 0, 256));
    dst = d + 128;
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    memset(&p, 0, sizeof p);
    p.srcPtr = pitched(host, 4, 2);
    p.dstPtr = pitched(d, 4, 2);
    p.extent.width = 4;
    p.extent.height = 2;
    p.extent.depth = 3; /* 24 bytes in 3 slices */
    p.kind = cudaMemcpyHostToDevice;
    memset(&at, 0, sizeof at);
    at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaSuccess, cudaMemcpy3DAsync(&p, s));
    CHECK_ERR(cudaSuccess, cudaMemcpyBatchAsync(&dst, &src, &n, 1, &at, &idx, 1, s));
    CHECK_U64(0, (unsigned char)d[0]); /* nothing moves at capture */
    CHECK_ERR(cudaSuccess, cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, cudaGraphInstantiate(&x, g, 0));
    CHECK_ERR(cudaSuccess, cudaGraphLaunch(x, s));
    CHECK_ERR(cudaSuccess, cudaGraphLaunch(x, s));
    CHECK_U64(64, (unsigned long)cudadbl_graph_copy_bytes()); /* (24 + 8) x 2 */
    CHECK_U64(7, (unsigned char)d[23]);
    /* a bad 3D copy in a capture invalidates it */
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    p.kind = (enum cudaMemcpyKind)7;
    CHECK_ERR(cudaErrorInvalidMemcpyDirection, cudaMemcpy3DAsync(&p, s));
    CHECK_ERR(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture(s, &g));
    CHECK_ERR(cudaSuccess, cudaGraphExecDestroy(x));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();
}

/* ---- teardown, fork, stuck streams ---------------------------------------- */

/* Runs this program again with mode as its argument, its stderr into a
   pipe (*fd). Returns the pid, or -1. */
static pid_t spawn(const char *mode, int *fd) {
    int p[2];
    pid_t pid;
    if (pipe(p) != 0) return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) { /* no CUDA call here: exec at once */
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execl("/proc/self/exe", "/proc/self/exe", mode, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    *fd = p[0];
    return pid;
}

/* What fd gives until EOF, or until want appears (then 1), for up to 60 s. */
static int read_until(int fd, char *buf, size_t cap, const char *want) {
    size_t n = 0;
    buf[0] = 0;
    for (;;) {
        struct pollfd q;
        ssize_t r;
        q.fd = fd;
        q.events = POLLIN;
        if (want && strstr(buf, want)) return 1;
        if (poll(&q, 1, 60000) <= 0) return 0;
        r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0) return 0;
        n += (size_t)r;
        buf[n] = 0;
        if (n + 1 >= cap) return 0;
    }
}

static int mode_bad;
static void mode_check(int ok, const char *what) {
    if (!ok) {
        mode_bad = 1;
        fprintf(stderr, "selftest mode: %s failed\n", what);
    }
}
/* Registered before the runtime initialized: runs after its teardown. */
static void after_teardown(void) {
    size_t f = 0, t = 0;
    CUcontext c = NULL;
    mode_check(cudadbl_torn_down() == 1, "torn down");
    mode_check(cudaMemGetInfo(&f, &t) == cudaErrorCudartUnloading, "cudaMemGetInfo after: cudaErrorCudartUnloading");
    mode_check(cuCtxGetCurrent(&c) == CUDA_ERROR_DEINITIALIZED, "cuCtxGetCurrent after: CUDA_ERROR_DEINITIALIZED");
    mode_check(strcmp(cudaGetErrorName(cudaErrorCudartUnloading), "cudaErrorCudartUnloading") == 0,
               "cudaGetErrorName still answers");
    mode_check(cudadbl_calls_after_teardown() == 2, "2 calls counted after the teardown");
    _exit(mode_bad ? 1 : 0);
}
/* Registered after: runs before it. */
static void before_teardown(void) {
    size_t f = 0, t = 0;
    mode_check(cudadbl_torn_down() == 0, "not yet torn down");
    mode_check(cudaMemGetInfo(&f, &t) == cudaSuccess, "cudaMemGetInfo before the teardown");
}
static int mode_teardown(void) {
    void *p = NULL;
    atexit(after_teardown);
    mode_check(cudaMalloc(&p, 64) == cudaSuccess, "cudaMalloc");
    atexit(before_teardown);
    return 0;
}
/* A synchronization on a stuck stream blocks (the parent kills it). */
static int mode_hang(void) {
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    if (cudaStreamCreate(&s) != cudaSuccess || cudadbl_set_stuck(s, 1) != 0 || cudaEventCreate(&e) != cudaSuccess ||
        cudaEventRecord(e, s) != cudaSuccess)
        return 1;
    (void)cudaEventSynchronize(e);
    return 2; /* never here */
}
/* A child forked before the runtime initialized may use it. */
static int mode_fork_fresh(void) {
    void *p = NULL;
    int st = 0;
    pid_t pid = fork();
    if (pid == 0) _exit(cudaMalloc(&p, 64) == cudaSuccess && cudadbl_calls_in_child() == 0 ? 0 : 1);
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    return cudaMalloc(&p, 64) == cudaSuccess ? 0 : 1;
}

/* Exit handlers registered before the runtime's first call run after its
   teardown: every call fails then, counted and said; those registered
   after it run before. */
static void teardown_at_exit(void) {
    char out[4096];
    int fd = -1, st = 0;
    pid_t pid = spawn("teardown", &fd);
    CHECK(pid > 0);
    if (pid <= 0) return;
    (void)read_until(fd, out, sizeof out, NULL);
    close(fd);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK_U64(0, WEXITSTATUS(st));
    CHECK_HAS(out, "cudart double: cudaMemGetInfo called after the runtime's teardown (pid ");
    CHECK_HAS(out, "cudart double: cuCtxGetCurrent called after the runtime's teardown (pid ");
    CHECK(strstr(out, "cudaGetErrorName") == NULL);
}

/* A stuck stream's work never completes: queries say not ready, the
   completion calls leave it, work waiting on it waits; a synchronization
   on it blocks forever, and says so first. */
/* Virtual memory management, as cuda.h documents it: each rule alone. */
static CUmemAllocationProp vmm_prop(CUmemLocationType type, int id) {
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = type;
    p.location.id = id;
    return p;
}
static CUresult vmm_access(CUdeviceptr va, size_t n, unsigned long long flags) {
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = 0;
    a.flags = (CUmemAccess_flags)flags;
    return cuMemSetAccess(va, n, &a, 1);
}
static void vmm(void) {
    const size_t G = CUDADBL_VMM_GRANULARITY;
    CUmemAllocationProp p = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0), bad = p,
                        host = vmm_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
    CUmemGenericAllocationHandle h = 0, h2 = 0, hh = 0;
    CUdeviceptr r = 0, r2 = 0;
    size_t g = 0, f0 = 0, f = 0, t = 0;
    char buf[8192], back[8192];
    struct cudaPointerAttributes a;
    unsigned type = 0;
    int ord = -1;
    CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[2];
    data[0] = &type;
    data[1] = &ord;
    cudadbl_reset();
    memset(buf, 7, sizeof buf);
    /* before the runtime initialized the driver */
    CHECK_ERR(CUDA_ERROR_NOT_INITIALIZED, cuMemCreate(&h, G, &p, 0));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&f0, &t));
    /* granularity */
    CHECK_ERR(CUDA_SUCCESS, cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_U64(G, g);
    CHECK_ERR(CUDA_SUCCESS, cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, &p, (CUmemAllocationGranularity_flags)2));
    bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationGranularity(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    /* create: a multiple of the granularity, a valid location, counted at once */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G / 2, &p, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G, &p, 1));
    bad = vmm_prop(CU_MEM_LOCATION_TYPE_DEVICE, 5);
    CHECK_ERR(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, G, &bad, 0));
    bad = vmm_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, G, &bad, 0));
    CHECK_ERR(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, 17 * GIB, &p, 0));
    CHECK_ERR(CUDA_SUCCESS, cuMemCreate(&h, 2 * G, &p, 0));
    CHECK_ERR(cudaSuccess, cudaMemGetInfo(&f, &t));
    CHECK_U64(f0 - 2 * G, f);
    CHECK_U64(2 * G, cudadbl_device_used(0));
    CHECK_ERR(CUDA_SUCCESS, cuMemCreate(&hh, G, &host, 0));
    CHECK_U64(2 * G, cudadbl_device_used(0)); /* host-located: not device memory */
    CHECK_U64(2, cudadbl_vmm_live(NULL));
    /* reservations */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&r, 4 * G + 1, 0, 0, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&r, 4 * G, 3 * 4096, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, cuMemAddressReserve(&r, 4 * G, 0, 0, 0));
    CHECK_U64(0, r % G);
    CHECK_ERR(CUDA_SUCCESS, cuMemAddressReserve(&r2, 4 * G, 0, 0, 0));
    /* map: inside a reservation, aligned, offset 0, within the handle, not mapped */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap((CUdeviceptr)(uintptr_t)buf, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r + 4096, G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, 3 * G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, G, G, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r + 3 * G, 2 * G, 0, h, 0)); /* past the reservation */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, G, 0, 12345, 0));
    CHECK_ERR(CUDA_SUCCESS, cuMemMap(r, 2 * G, 0, h, 0));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r + G, G, 0, hh, 0)); /* mapped now */
    CHECK_ERR(CUDA_SUCCESS, cuMemMap(r + 2 * G, G, 0, hh, 0));
    CHECK_U64(2, cudadbl_vmm_mappings());
    CHECK_U64(2 * G, cudadbl_device_used(0)); /* counted at create, not at map */
    /* access: none until granted; copies then work across mappings back to back */
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy((void *)(uintptr_t)r, buf, 100, cudaMemcpyDefault));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, vmm_access(r, 4 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)); /* a hole */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, vmm_access(r, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)); /* part of a mapping */
    CHECK_ERR(CUDA_SUCCESS, vmm_access(r, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READ));
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy((void *)(uintptr_t)r, buf, 100, cudaMemcpyDefault)); /* read only */
    CHECK_ERR(CUDA_SUCCESS, vmm_access(r, 3 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CHECK_ERR(cudaSuccess, cudaMemcpy((char *)(uintptr_t)r + 2 * G - 4096, buf, sizeof buf, cudaMemcpyDefault));
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, (char *)(uintptr_t)r + 2 * G - 4096, sizeof back, cudaMemcpyDeviceToHost));
    CHECK(memcmp(buf, back, sizeof buf) == 0);
    CHECK_ERR(cudaErrorInvalidValue, cudaMemcpy((char *)(uintptr_t)r + 3 * G - 10, buf, 100, cudaMemcpyDefault));
    /* pointer attributes: the handle's memory */
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, (char *)(uintptr_t)r + 5));
    CHECK_U64(cudaMemoryTypeDevice, a.type);
    CHECK_U64(0, (unsigned)a.device);
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, (char *)(uintptr_t)r + 2 * G));
    CHECK_U64(cudaMemoryTypeHost, a.type);
    CHECK_ERR(CUDA_SUCCESS, cuPointerGetAttributes(2, at, data, r + G));
    CHECK_U64(CU_MEMORYTYPE_DEVICE, type);
    CHECK_U64(0, (unsigned)ord);
    /* a peer copy: the mapped side must be on the device named */
    {
        void *d0 = NULL;
        CHECK_ERR(cudaSuccess, cudaMalloc(&d0, 100));
        CHECK_ERR(cudaErrorInvalidValue, cudaMemcpyPeer((void *)(uintptr_t)r, 1, d0, 0, 100));
        CHECK_ERR(cudaSuccess, cudaMemcpyPeer((void *)(uintptr_t)r, 0, d0, 0, 100));
        (void)cudaGetLastError();
        CHECK_ERR(cudaSuccess, cudaFree(d0));
    }
    /* one handle mapped twice: the same bytes */
    CHECK_ERR(CUDA_SUCCESS, cuMemMap(r2, 2 * G, 0, h, 0));
    CHECK_ERR(CUDA_SUCCESS, vmm_access(r2, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CHECK_ERR(cudaSuccess, cudaMemcpy(back, (char *)(uintptr_t)r2 + 2 * G - 4096, 100, cudaMemcpyDefault));
    CHECK(memcmp(buf, back, 100) == 0);
    /* unmap: whole mappings only; release frees when unmapped */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r, G));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, 4 * G)); /* mapped in it */
    CHECK_ERR(CUDA_SUCCESS, cuMemRelease(h));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemMap(r2 + 2 * G, 2 * G, 0, h, 0)); /* released */
    CHECK_U64(2 * G, cudadbl_device_used(0));
    CHECK_ERR(CUDA_SUCCESS, cuMemUnmap(r, 3 * G)); /* two mappings back to back */
    CHECK_U64(2 * G, cudadbl_device_used(0)); /* still mapped at r2 */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r, 2 * G));
    CHECK_ERR(CUDA_SUCCESS, cuMemUnmap(r2, 2 * G));
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_U64(1, cudadbl_vmm_live(NULL)); /* hh: unmapped, not released */
    CHECK_ERR(CUDA_SUCCESS, cuMemRelease(hh));
    CHECK_U64(0, cudadbl_vmm_live(NULL));
    /* a freed handle's value comes back */
    CHECK_ERR(CUDA_SUCCESS, cuMemCreate(&h2, G, &p, 0));
    CHECK_U64(hh, h2);
    CHECK_ERR(CUDA_SUCCESS, cuMemRelease(h2));
    /* address free: exactly a reservation */
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, 2 * G));
    CHECK_ERR(CUDA_SUCCESS, cuMemAddressFree(r, 4 * G));
    CHECK_ERR(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, 4 * G));
    CHECK_ERR(CUDA_SUCCESS, cuMemAddressFree(r2, 4 * G));
    CHECK_U64(0, cudadbl_vmm_mappings());
    CHECK_U64(0, live(CUDADBL_MAPPED));
    /* cudadbl_reset frees what is left */
    CHECK_ERR(CUDA_SUCCESS, cuMemCreate(&h, G, &p, 0));
    CHECK_ERR(CUDA_SUCCESS, cuMemAddressReserve(&r, 2 * G, 0, 0, 0));
    CHECK_ERR(CUDA_SUCCESS, cuMemMap(r, G, 0, h, 0));
    cudadbl_reset();
    CHECK_U64(0, cudadbl_vmm_live(NULL));
    CHECK_U64(0, cudadbl_vmm_mappings());
}

static void stuck_streams(void) {
    cudaStream_t s = NULL, t = NULL;
    cudaEvent_t e = NULL, f = NULL;
    char h[64], *d = NULL, out[4096];
    int fd = -1, st = 0;
    pid_t pid;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&t));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&e));
    CHECK_ERR(cudaSuccess, cudaEventCreate(&f));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, 64));
    CHECK_U64(0, (unsigned)cudadbl_set_stuck(s, 1));
    CHECK_U64((unsigned)-1, (unsigned)cudadbl_set_stuck((cudaStream_t)&h, 1));
    CHECK_ERR(cudaSuccess, cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, s));
    CHECK_ERR(cudaSuccess, cudaEventRecord(e, s));
    CHECK_ERR(cudaSuccess, cudaStreamWaitEvent(t, e, 0));
    CHECK_ERR(cudaSuccess, cudaEventRecord(f, t));
    cudadbl_complete_all();
    cudadbl_complete_until(1e9f);
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(e));
    CHECK_ERR(CUDA_ERROR_NOT_READY, cuEventQuery((CUevent)e));
    CHECK_ERR(cudaErrorNotReady, cudaStreamQuery(s));
    CHECK_ERR(cudaErrorNotReady, cudaEventQuery(f)); /* waits on it */
    CHECK_U64(2, (unsigned long)cudadbl_pending(s));
    CHECK_U64(0, (unsigned)cudadbl_set_stuck(s, 0)); /* the marker applies again */
    CHECK_ERR(cudaSuccess, cudaEventQuery(e));
    CHECK_ERR(cudaSuccess, cudaEventQuery(f));
    CHECK_U64(0, (unsigned long)cudadbl_hangs());
    CHECK_ERR(cudaSuccess, cudaFree(d));
    cudadbl_reset();

    pid = spawn("hang", &fd);
    CHECK(pid > 0);
    if (pid <= 0) return;
    CHECK(read_until(fd, out, sizeof out, "waits forever"));
    CHECK_HAS(out, "cudart double: cudaEventSynchronize waits forever: work of a stuck stream never completes (pid ");
    kill(pid, SIGKILL);
    close(fd);
    CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL); /* it was still blocked */
}

/* A forked child of a process that initialized the runtime: every call
   fails (but the error strings), counted; a child forked before the
   runtime initialized may use it. */
static void fork_child_calls(void) {
    void *p = NULL;
    char out[4096];
    int st = 0, fd = -1;
    pid_t pid;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 64));
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        CUcontext c = NULL;
        void *q = NULL;
        int nul = open("/dev/null", O_WRONLY), bad = 0;
        if (nul >= 0) dup2(nul, 2);
        bad |= cudaMalloc(&q, 64) != cudaErrorInitializationError;
        bad |= cuCtxGetCurrent(&c) != CUDA_ERROR_NOT_INITIALIZED;
        bad |= cudaGetErrorString(cudaErrorInitializationError) == NULL;
        bad |= cudadbl_calls_in_child() != 2;
        _exit(bad);
    }
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK_U64(0, WEXITSTATUS(st));
    CHECK_U64(0, (unsigned long)cudadbl_calls_in_child()); /* the parent's own calls are fine */
    CHECK_ERR(cudaSuccess, cudaFree(p));
    cudadbl_reset();

    pid = spawn("fork_fresh", &fd);
    CHECK(pid > 0);
    if (pid <= 0) return;
    (void)read_until(fd, out, sizeof out, NULL);
    close(fd);
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    CHECK_U64(0, WEXITSTATUS(st));
    CHECK_STR("", out);
}

/* ---- contexts created and destroyed, the retain race, pools, capture ids ---- */

/* An invalidated capture's id is no capture's (cuda.h: only the status is
   valid then), and no graph is handed out. */
static void capture_invalidated_id(void) {
    cudaStream_t s;
    enum cudaStreamCaptureStatus st;
    CUstreamCaptureStatus cst;
    unsigned long long id = 0, id2 = 0;
    cuuint64_t cid = 0;
    CUgraph g = (CUgraph)(uintptr_t)1;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    CHECK_U64(cudaStreamCaptureStatusActive, st);
    CHECK_ERR(cudaErrorStreamCaptureUnsupported, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaStreamGetCaptureInfo(s, &st, &id2, NULL, NULL, NULL, NULL));
    CHECK_U64(cudaStreamCaptureStatusInvalidated, st);
    CHECK(id2 != id && id2 != 0);
    CHECK_U64(CUDA_SUCCESS, cuStreamGetCaptureInfo_v2(s, &cst, &cid, &g, NULL, NULL));
    CHECK_U64(CU_STREAM_CAPTURE_STATUS_INVALIDATED, cst);
    CHECK(cid != id && cid != id2);
    CHECK(g == (CUgraph)(uintptr_t)1); /* not written */
    (void)cudaGetLastError();
}

/* The last release of a context the runtime does not hold destroys it;
   cudadbl_release_at_retain: the context goes right before that retain,
   which makes a new one. */
static void primary_release_and_race(void) {
    CUcontext c = NULL;
    unsigned flags = 0;
    int active = -1;
    void *p = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaGetDeviceCount(&active)); /* initializes, creates nothing */
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, 1));
    CHECK_U64(1, cudadbl_contexts_created(1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxGetState(1, &flags, &active));
    CHECK_U64(0, active); /* only the retain held it */
    /* held by the runtime: a release leaves it */
    CHECK_ERR(cudaSuccess, cudaSetDevice(1));
    CHECK_ERR(cudaSuccess, cudaMalloc(&p, 64));
    CHECK_U64(2, cudadbl_contexts_created(1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, 1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(1));
    CHECK_U64(1, cudadbl_context_active(1));
    /* the last holder lets go right before the retain */
    cudadbl_release_at_retain(1);
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, 1));
    CHECK_U64(3, cudadbl_contexts_created(1));
    CHECK_U64(0, cudadbl_live(CUDADBL_DEVICE, NULL)); /* the old context's memory went with it */
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(1));
    CHECK_U64(0, cudadbl_context_active(1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRetain(&c, 1)); /* once only */
    CHECK_U64(4, cudadbl_contexts_created(1));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxRelease(1));
}

/* cuCtxCreate / cuCtxDestroy: a new context takes the address of a
   destroyed one, on any device, with a new id; the dead one's events are
   invalid; a primary context reset keeps the address, not the id. */
static void created_contexts(void) {
    CUcontext c1 = NULL, c2 = NULL, cur = NULL, p0 = NULL;
    CUevent e1 = NULL;
    CUdevice d = -1;
    unsigned long long id1 = 0, id2 = 0, idp = 0, idp2 = 0;
    void *m = NULL;
    cudadbl_reset();
    CHECK_ERR(cudaSuccess, cudaFree(NULL)); /* device 0's primary context */
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&p0));
    CHECK_U64(CUDA_ERROR_NOT_SUPPORTED, cuCtxCreate(&c1, (CUctxCreateParams *)(uintptr_t)8, 0, 0));
    CHECK_U64(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate(&c1, NULL, 0, 5));
    CHECK_U64(CUDA_SUCCESS, cuCtxCreate(&c1, NULL, 0, 0));
    CHECK(c1 != NULL && c1 != p0);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&cur));
    CHECK(cur == c1);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetId(c1, &id1));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetId(NULL, &id2));
    CHECK_U64(id1, id2);
    CHECK_U64(CUDA_SUCCESS, cuEventCreate(&e1, 0));
    CHECK_ERR(cudaSuccess, cudaMalloc(&m, 100)); /* the runtime follows it */
    CHECK_ERR(cudaSuccess, cudaFree(m));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(p0)); /* a primary context */
    CHECK_U64(CUDA_SUCCESS, cuCtxDestroy(c1));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&cur));
    CHECK(cur == p0); /* popped */
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(c1));
    CHECK_U64(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetId(c1, &id2));
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuEventRecord(e1, CU_STREAM_LEGACY));
    CHECK_U64(1, cudadbl_dead_event_uses());
    CHECK_U64(CUDA_SUCCESS, cuCtxCreate(&c2, NULL, 0, 1));
    CHECK(c2 == c1); /* the address again */
    CHECK_U64(CUDA_SUCCESS, cuCtxGetId(c2, &id2));
    CHECK(id2 != id1);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetDevice(&d));
    CHECK_U64(1, d);
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuEventQuery(e1)); /* still the dead one's */
    CHECK_U64(2, cudadbl_dead_event_uses());
    CHECK_ERR(cudaSuccess, cudaMalloc(&m, 100));
    CHECK_U64(100, cudadbl_device_used(1));
    CHECK_ERR(cudaSuccess, cudaFree(m));
    CHECK_U64(CUDA_SUCCESS, cuCtxDestroy(c2));
    /* a primary context reset: same address, new id */
    CHECK_U64(CUDA_SUCCESS, cuCtxGetId(p0, &idp));
    CHECK_U64(CUDA_SUCCESS, cuDevicePrimaryCtxReset(0));
    CHECK_U64(0, cudadbl_context_active(0));
    CHECK_U64(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetId(p0, &idp2));
    CHECK_ERR(cudaSuccess, cudaFree(NULL));
    CHECK_U64(CUDA_SUCCESS, cuCtxGetCurrent(&cur));
    CHECK(cur == p0);
    CHECK_U64(CUDA_SUCCESS, cuCtxGetId(p0, &idp2));
    CHECK(idp2 != idp && idp2 != id1 && idp2 != id2);
}

/* Pools with a location: the pool's, not the stream's device. */
static void pools_located(void) {
    struct cudaMemPoolProps pp;
    CUmemPoolProps cp;
    cudaMemPool_t hp = NULL, dp = NULL;
    CUmemoryPool cpool = NULL;
    cudaStream_t s;
    void *h = NULL, *d = NULL;
    CUdeviceptr dc = 0;
    struct cudaPointerAttributes a;
    cudadbl_reset();
    memset(&pp, 0, sizeof pp);
    pp.allocType = cudaMemAllocationTypePinned;
    pp.location.type = cudaMemLocationTypeHost;
    CHECK_ERR(cudaSuccess, cudaMemPoolCreate(&hp, &pp));
    pp.location.type = cudaMemLocationTypeDevice;
    pp.location.id = 7;
    CHECK_ERR(cudaErrorInvalidValue, cudaMemPoolCreate(&dp, &pp));
    pp.location.id = 1;
    CHECK_ERR(cudaSuccess, cudaMemPoolCreate(&dp, &pp));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMallocFromPoolAsync(&h, 1000, hp, s));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, h));
    CHECK_U64(cudaMemoryTypeHost, a.type);
    CHECK_ERR(cudaSuccess, cudaMallocFromPoolAsync(&d, 2000, dp, s));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, d));
    CHECK_U64(cudaMemoryTypeDevice, a.type);
    CHECK_U64(1, a.device);
    CHECK_U64(2000, cudadbl_device_used(1));
    CHECK_U64(0, cudadbl_device_used(0));
    CHECK_ERR(cudaErrorInvalidValue, cudaFreeHost(h)); /* pool memory: stream-ordered frees only */
    memset(&cp, 0, sizeof cp);
    cp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    cp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    cp.location.id = 0;
    CHECK_U64(CUDA_SUCCESS, cuMemPoolCreate(&cpool, &cp));
    CHECK_U64(CUDA_SUCCESS, cuMemAllocFromPoolAsync(&dc, 300, cpool, s));
    CHECK_ERR(cudaSuccess, cudaPointerGetAttributes(&a, (void *)(uintptr_t)dc));
    CHECK_U64(cudaMemoryTypeHost, a.type);
    CHECK_ERR(cudaSuccess, cudaFreeAsync(h, s));
    CHECK_ERR(cudaSuccess, cudaFreeAsync(d, s));
    CHECK_ERR(cudaSuccess, cudaFreeAsync((void *)(uintptr_t)dc, s));
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_U64(0, cudadbl_live(CUDADBL_ALL, NULL));
    CHECK_ERR(cudaSuccess, cudaMemPoolDestroy(hp));
    CHECK_ERR(cudaErrorInvalidValue, cudaMallocFromPoolAsync(&h, 10, hp, s)); /* destroyed */
    CHECK_ERR(cudaSuccess, cudaMemPoolDestroy(dp));
    CHECK_U64(CUDA_SUCCESS, cuMemPoolDestroy(cpool));
    (void)cudaGetLastError();
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 1) {
        if (!strcmp(argv[1], "teardown")) return mode_teardown();
        if (!strcmp(argv[1], "hang")) return mode_hang();
        if (!strcmp(argv[1], "fork_fresh")) return mode_fork_fresh();
        return 64;
    }
    RUN(malloc_free);
    RUN(host_kinds);
    RUN(devices);
    RUN(meminfo);
    RUN(copies);
    RUN(scripted_failures);
    RUN(async_and_streams);
    RUN(events);
    RUN(copy_time_and_more);
    RUN(reuse);
    RUN(reset_script);
    RUN(threads);
    RUN(reset_frees);
    RUN(driver_api);
    RUN(driver_pointers);
    RUN(contexts);
    RUN(device_reset);
    RUN(sticky);
    RUN(capture_basics);
    RUN(capture_invalidation);
    RUN(capture_threads);
    RUN(capture_fork_join);
    RUN(graphs);
    RUN(default_streams);
    RUN(hazards);
    RUN(copies_3d_symbol_batch);
    RUN(capture_3d_batch);
    RUN(teardown_at_exit);
    RUN(stuck_streams);
    RUN(fork_child_calls);
    RUN(vmm);
    RUN(capture_invalidated_id);
    RUN(primary_release_and_race);
    RUN(created_contexts);
    RUN(pools_located);
    return CHECK_DONE();
}
