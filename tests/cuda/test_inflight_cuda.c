/* memobs_cuda.h's timed copies among the transfers in flight
   (memobs_get_inflight), against the CUDA runtime double
   (tests/cuda/cudart_double.c), which says when a copy's event completes:
     async   an asynchronous timed copy is in flight, with its direction
             and bytes, from issue until its end event is seen complete,
             in issue order; recorded once, at issue;
     stuck   a copy on a stream that never completes (cudadbl_set_stuck)
             is found stuck past MEMOBS_STUCK_S once, with its request;
             it leaves when the stream moves on;
     sync    a synchronous timed copy is in flight for its call only;
     untimed timing off: no copy is in flight (nothing to resolve).
   The clock of transfers in flight is the test's (MEMOBS__XIN_NOW: the
   monotonic clock plus an offset the test moves). Each test in a fresh
   process (the mode argument); built by tests/cuda/test_inflight_cuda.sh
   as C11, C++17, ASan+UBSan and TSan. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
static uint64_t test_skew; /* ns added to the clock of transfers in flight */
static uint64_t test_now(void);
#define MEMOBS__XIN_NOW() test_now()
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "cuda_test.h"

#include <stdlib.h>
#include <string.h>

#ifndef TEST_SUITE
#define TEST_SUITE "inflight-cuda"
#endif

static uint64_t test_now(void) { return memobs_now_ns() + __atomic_load_n(&test_skew, __ATOMIC_RELAXED); }

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER; /* the worker may log too */
static char logs[16][512];
static int nlog;
static void keep_log(int level, const char *msg, void *user) {
    (void)level;
    (void)user;
    pthread_mutex_lock(&log_lock);
    if (nlog < 16) snprintf(logs[nlog], sizeof logs[0], "%s", msg);
    nlog++;
    pthread_mutex_unlock(&log_lock);
}
static int logged(const char *s) {
    int i, n = 0;
    pthread_mutex_lock(&log_lock);
    for (i = 0; i < nlog && i < 16; i++) n += strstr(logs[i], s) != NULL;
    pthread_mutex_unlock(&log_lock);
    return n;
}

static memobs_inflight_t X;
static void inflight(void) { CHECK_U64(MEMOBS_OK, memobs_get_inflight(&X)); }

static void async(void) {
    cudaStream_t s;
    char *d, h[8192];
    float t0;
    fresh();
    memset(h, 1, sizeof h);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    memobs_cuda_set_timing(1);
    cudadbl_set_copy_time(0.5f, 0); /* every copy takes 0.5 ms of device time */
    t0 = cudadbl_clock();
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 1000, cudaMemcpyHostToDevice, s)); /* t0 .. t0+0.5 */
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(h, d, 3000, cudaMemcpyDeviceToHost, s)); /* .. t0+1 */
    inflight();
    CHECK_U64(2, X.count);
    CHECK_U64(4000, X.bytes);
    CHECK_U64(1, X.dir[MEMOBS_DIR_H2D].count);
    CHECK_U64(1000, X.dir[MEMOBS_DIR_H2D].bytes);
    CHECK_U64(1, X.dir[MEMOBS_DIR_D2H].count);
    CHECK_U64(3000, X.dir[MEMOBS_DIR_D2H].bytes);
    CHECK_U64(0, X.dir[MEMOBS_DIR_D2D].count);
    snap();
    CHECK_U64(2, S.in_flight.count);
    CHECK_U64(2, S.timed_in_flight_copies); /* the same copies */
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 1000, 1); /* recorded at issue */

    cudadbl_complete_until(t0 + 0.5f); /* the first is done */
    inflight(); /* settles the completed copies first */
    CHECK_U64(1, X.count);
    CHECK_U64(0, X.dir[MEMOBS_DIR_H2D].count);
    CHECK_U64(0, X.dir[MEMOBS_DIR_H2D].bytes);
    CHECK_U64(0, X.dir[MEMOBS_DIR_H2D].oldest_ns);
    CHECK_U64(1, X.dir[MEMOBS_DIR_D2H].count);
    CHECK_U64(3000, X.dir[MEMOBS_DIR_D2H].bytes);

    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    snap();
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(0, S.in_flight.bytes);
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_XFER(S.prefill, MEMOBS_DIR_H2D, 1000, 1); /* not recorded again */
    CHECK_XFER(S.decode, MEMOBS_DIR_D2H, 3000, 1);
    CHECK_U64(1000, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].bytes);
    CHECK_U64(0, S.in_flight.ended);  /* memobs_xfer_end's count: not the copies' */
    CHECK_U64(0, S.in_flight.misuse);
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

static void stuck(void) {
    cudaStream_t s;
    char *d, h[4096];
    fresh();
    memset(h, 2, sizeof h);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    memobs_cuda_set_timing(1);
    CHECK_U64(1, (uint64_t)cudadbl_set_stuck(s, 1) == 0);
    memobs_request_begin(9);
    memobs_request_enter(9);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 2048, cudaMemcpyHostToDevice, s));
    memobs_request_leave();
    inflight();
    CHECK_U64(1, X.count);
    CHECK_U64(0, X.stuck);
    __atomic_add_fetch(&test_skew, 61ull * 1000000000u, __ATOMIC_RELAXED);
    inflight();
    CHECK_U64(1, X.count);
    CHECK_U64(1, X.stuck);
    CHECK_U64(1, X.stuck_total);
    CHECK(X.dir[MEMOBS_DIR_H2D].oldest_ns >= 61ull * 1000000000u);
    CHECK_U64(1, (uint64_t)logged("a H2D transfer of 2.05 KB (a timed CUDA copy, request 9) has been in flight for"));
    inflight();
    snap();
    CHECK_U64(1, S.in_flight.stuck_total);
    CHECK_U64(1, (uint64_t)logged("has been in flight")); /* once */
    CHECK_U64(1, (uint64_t)cudadbl_set_stuck(s, 0) == 0);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    inflight();
    CHECK_U64(0, X.count);
    CHECK_U64(0, X.stuck);
    CHECK_U64(1, X.stuck_total);
    memobs_request_end(9);
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

static void sync_copy(void) {
    char *d, h[1024];
    fresh();
    memset(h, 3, sizeof h);
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    CHECK_U64(0, (uint64_t)cudadbl_fail_next("cudaMemcpy", 1, cudaErrorInvalidValue));
    CHECK_ERR(cudaErrorInvalidValue, memobs_cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice)); /* the call fails */
    (void)cudaGetLastError();
    inflight();
    CHECK_U64(0, X.count); /* in flight for the call only, a failed one too */
    CHECK_U64(0, X.misuse);
    snap();
    CHECK_XFER(S.unphased, MEMOBS_DIR_H2D, 1024, 1);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_ERR(cudaSuccess, cudaFree(d));
}

static void untimed(void) {
    cudaStream_t s;
    char *d, h[512];
    fresh();
    memset(h, 4, sizeof h);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaMalloc((void **)&d, sizeof h));
    CHECK_U64(1, (uint64_t)cudadbl_set_stuck(s, 1) == 0);
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, s));
    inflight();
    CHECK_U64(0, X.count); /* timing off: no event, nothing known in flight */
    CHECK_U64(1, (uint64_t)cudadbl_set_stuck(s, 0) == 0);
    CHECK_ERR(cudaSuccess, cudaStreamSynchronize(s));
    CHECK_ERR(cudaSuccess, cudaFree(d));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    cudadbl_reset();
    memobs_set_log(keep_log, NULL);
    if (!strcmp(mode, "async")) RUN(async);
    else if (!strcmp(mode, "stuck")) RUN(stuck);
    else if (!strcmp(mode, "sync")) RUN(sync_copy);
    else if (!strcmp(mode, "untimed")) RUN(untimed);
    else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    memobs_set_log(NULL, NULL);
    return CHECK_DONE();
}
