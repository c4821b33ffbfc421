/* The per-thread default stream half of tests/gpu/test_gpu.cu's
   test_default_stream_capture: this unit is built with nvcc
   --default-stream per-thread (mk/gpu.mk), so here stream 0 is the calling
   thread's per-thread default stream (cudaStreamPerThread), which can be
   captured, and memobs' inline wrappers must mean the same stream by it.
   It does not build memobs' implementation (test_gpu.cu does); it is
   linked into test_gpu, which calls gpu_ptds_capture().

   Its checks print "    # " lines as tests/check.h's do; the number of
   failed checks is returned for the caller to add to its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "memobs_cuda.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#ifndef __CUDART_API_PER_THREAD_DEFAULT_STREAM
#error "tests/gpu/test_gpu_ptds.cu must be compiled with nvcc --default-stream per-thread"
#endif

static int ptds_failed;

#define PCHECK(cond)                                                                        \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            ptds_failed++;                                                                  \
            printf("    # %s:%d: expected %s, which is false\n", __FILE__, __LINE__, #cond); \
        }                                                                                   \
    } while (0)
#define PCHECK_U64(expected, actual)                                                                         \
    do {                                                                                                     \
        unsigned long long pc__e = (unsigned long long)(expected), pc__a = (unsigned long long)(actual);     \
        if (pc__e != pc__a) {                                                                                \
            ptds_failed++;                                                                                   \
            printf("    # %s:%d: %s: expected %llu, got %llu\n", __FILE__, __LINE__, #actual, pc__e, pc__a); \
        }                                                                                                    \
    } while (0)
/* A CUDA call with its expected result; names the error when it differs. */
#define PCHECK_ERR(expected, call)                                                                          \
    do {                                                                                                    \
        cudaError_t pc__want = (expected), pc__got = (call);                                                \
        if (pc__want != pc__got) {                                                                          \
            ptds_failed++;                                                                                  \
            printf("    # %s:%d: %s: expected %s, got %s\n", __FILE__, __LINE__, #call,                     \
                   cudaGetErrorName(pc__want), cudaGetErrorName(pc__got));                                  \
        }                                                                                                   \
    } while (0)

static memobs_summary_t PS; /* large: off the stack */

extern "C" int gpu_ptds_capture(int dev);

/* A capture of stream 0 (the per-thread stream) in global mode with
   wrapped copies on stream 0: the capture ends with cudaSuccess (memobs
   asked about the per-thread stream, never the legacy one, which would
   break it), nothing counts at capture, each launch on stream 0 counts the
   captured copies and moves the bytes. Then a timed copy on stream 0:
   its events went on the per-thread stream, so syncing that stream
   resolves it. */
extern "C" int gpu_ptds_capture(int dev) {
    unsigned char *h = NULL, *h2 = NULL, *d = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    memobs_cuda_graph_stats_t g0, g1;
    size_t i;
    int k;
    ptds_failed = 0;
    PCHECK_ERR(cudaSuccess, cudaSetDevice(dev));
    PCHECK_ERR(cudaSuccess, cudaDeviceSynchronize());
    PCHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    PCHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h2, 4096));
    PCHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    if (!h || !h2 || !d) {
        PCHECK(!"allocations");
        return ptds_failed;
    }
    for (i = 0; i < 4096; i++) h[i] = (unsigned char)(i * 13 + 5);
    memset(h2, 0, 4096);
    memset(&g0, 0, sizeof g0);
    memset(&g1, 0, sizeof g1);
    PCHECK_U64(MEMOBS_OK, memobs_cuda_get_graph_stats(&g0));
    memobs_cuda_set_timing(1);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_reset();

    PCHECK_ERR(cudaSuccess, memobs_cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal));
    /* the premise: stream 0 of this unit is the per-thread stream, now capturing */
    PCHECK_ERR(cudaSuccess, cudaStreamIsCapturing(cudaStreamPerThread, &cs));
    PCHECK_U64(cudaStreamCaptureStatusActive, cs);
    PCHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 4096, cudaMemcpyHostToDevice, 0));
    PCHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h2, d, 1000, cudaMemcpyDeviceToHost, 0));
    memobs_get_summary(&PS); /* its poll, during the capture */
    PCHECK_U64(0, PS.total.h2d.count + PS.total.d2h.count + PS.total.d2d.count);
    PCHECK_ERR(cudaSuccess, memobs_cudaStreamEndCapture(0, &g));
    PCHECK(g != NULL);
    PCHECK_U64(MEMOBS_OK, memobs_cuda_get_graph_stats(&g1));
    PCHECK_U64(2, g1.captured_copies - g0.captured_copies);
    PCHECK_U64(4096 + 1000, g1.captured_bytes - g0.captured_bytes);
    PCHECK_U64(g0.captures, g1.captures);
    PCHECK_U64(0, h2[0]); /* nothing moved at capture */
    if (g) {
        PCHECK_ERR(cudaSuccess, memobs_cudaGraphInstantiate(&x, g, 0));
        memobs_set_phase(MEMOBS_PHASE_DECODE);
        for (k = 0; k < 3; k++) PCHECK_ERR(cudaSuccess, memobs_cudaGraphLaunch(x, 0));
        PCHECK_ERR(cudaSuccess, cudaStreamSynchronize(0));
        memobs_get_summary(&PS);
        PCHECK_U64(3 * 4096, PS.decode.h2d.bytes);
        PCHECK_U64(3, PS.decode.h2d.count);
        PCHECK_U64(3 * 1000, PS.decode.d2h.bytes);
        PCHECK_U64(3, PS.decode.d2h.count);
        PCHECK_U64(0, PS.decode.d2d.count + PS.unphased.h2d.count + PS.unphased.d2h.count);
        PCHECK_U64(0, PS.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count); /* graph copies are not timed */
        PCHECK(memcmp(h, h2, 1000) == 0);
        PCHECK_U64(MEMOBS_OK, memobs_cuda_get_graph_stats(&g1));
        PCHECK_U64(3, g1.launches - g0.launches);
        PCHECK_U64(6, g1.launched_copies - g0.launched_copies);
        PCHECK_U64(g0.unknown_launches, g1.unknown_launches);
        PCHECK_ERR(cudaSuccess, memobs_cudaGraphExecDestroy(x));
        PCHECK_ERR(cudaSuccess, memobs_cudaGraphDestroy(g));
    }

    /* a timed copy on stream 0: resolved once the per-thread stream is done */
    memobs_reset();
    PCHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 2048, cudaMemcpyHostToDevice, 0));
    PCHECK_ERR(cudaSuccess, cudaStreamSynchronize(0));
    PCHECK(memobs_cuda_poll() >= 1);
    memobs_get_summary(&PS);
    PCHECK_U64(0, PS.timed_in_flight_copies);
    PCHECK_U64(1, PS.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].count);
    PCHECK_U64(2048, PS.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].bytes);
    PCHECK(PS.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2D].ns > 0);
    PCHECK_ERR(cudaSuccess, cudaGetLastError());

    memobs_cuda_set_timing(0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    PCHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    PCHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    PCHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h2));
    return ptds_failed;
}
