/* Tests of the CUDA runtime double itself (tests/cuda/cudart_double.c):
   what the memobs CUDA tests rely on. Built as C and C++ and under
   ASan+UBSan by tests/cuda/selftest.sh. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cudart_double.h"
#include "../check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

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

int main(void) {
    check__suite = TEST_SUITE;
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
    return CHECK_DONE();
}
