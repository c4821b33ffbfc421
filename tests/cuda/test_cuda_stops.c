/* memobs_cuda.h at exit and fork, against the CUDA runtime double
   (tests/cuda/cudart_double.c), which tears the runtime down at exit in a
   handler registered at its first call (as libcudart does), fails and
   reports on stderr any call made after it or in a forked child, and can
   make a stream stuck (its work never completes). Run by
   tests/cuda/test_cuda_stops.sh, one fresh process per mode:

     teardown [manual]  CUDA work through the wrappers (manual: plain
                        runtime calls, the device block tracked by hand),
                        then main returns with the environment's outputs
                        (MEMOBS_SAMPLE_MS, MEMOBS_STORMLOG, MEMOBS_SUMMARY,
                        MEMOBS_CUDA_TIMING). A handler of this program,
                        registered before the runtime's first call, runs
                        after the runtime's teardown: memobs then answers
                        from the last figures it read and calls nothing.
     stuck              timing on; a copy on a stream that never completes,
                        then one on a stream that does, and a
                        stream-ordered free on the stuck one; main returns:
                        the exit must end within the wait's bound.
     fork               a fork with 3 timed copies in flight: the child
                        calls nothing, keeps them in flight; then 100 forks
                        while 2 threads record timed copies and
                        stream-ordered frees: each child exits at once
                        through every exit handler, calling nothing, never
                        deadlocking. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs_cuda.h"
#include "cudart_double.h"
#include "../check.h"
#include "../memobs_test.h"
#include "cuda_test.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "cuda-stops"
#endif

#define MIB ((size_t)1 << 20)
#define BOUND_MS 60000 /* bounds a real hang only; every wait here is on a condition */

static void nap(void) { (void)poll(NULL, 0, 1); }
static void log_start(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
}

/* ======================================================================== */
/* teardown                                                                 */
/* ======================================================================== */

static int manual;                /* plain runtime calls, tracked by hand */
static void *dev_block;           /* 1 MiB of device memory, live at exit */
static int sampler_on;

/* A sample of device 0's figures (driver's used known) exists. */
static int device_sampled(void) {
    static memobs_sample_t s[64];
    size_t n = memobs_get_samples(s, 64), i;
    for (i = 0; i < n; i++)
        if (s[i].ndev && s[i].dev[0].used != MEMOBS_UNKNOWN) return 1;
    return 0;
}

/* Registered before the runtime's first call: runs after its teardown (and
   after memobs' exit handler), before memobs writes its outputs. */
static void after_teardown(void) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    memobs_sample_t s;
    memobs_cuda_mem_t m;
    check__failed_checks = 0;
    CHECK_U64(1, (unsigned)cudadbl_torn_down());
    if (f) {
        CHECK_U64(MEMOBS_OK, (unsigned)memobs_cuda_print_mem(f));
        fclose(f);
        CHECK_HAS(text ? text : "", "device 0: driver used 1.05 MB of 17.18 GB; memobs tracks 1.05 MB; outside memobs "
                                    "0 B (device figures as of ");
        CHECK_HAS(text ? text : "", " s ago: CUDA has shut down)\n");
        free(text);
    }
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_sample_now());
    CHECK_U64(1, (unsigned)memobs_get_samples(NULL, 0) > 0);
    {
        static memobs_sample_t all[4096];
        size_t n = memobs_get_samples(all, 4096);
        s = all[n - 1];
    }
    CHECK_U64(1, s.ndev);
    CHECK_U64(MIB, s.dev[0].used); /* the last figures read: 1 MiB live */
    CHECK_U64((size_t)16 << 30, s.dev[0].total);
    CHECK(s.dev[0].as_of_ns > 0 && s.dev[0].as_of_ns < s.time_ns);
    log_start();
    CHECK_U64((unsigned)MEMOBS_ERR_IO, (unsigned)memobs_cuda_get_mem_info(&m, 0));
    CHECK_U64(1, (unsigned)log_has("memobs_cuda_get_mem_info(device 0): CUDA has shut down (the program is exiting)"));
    log_stop();
    CHECK_U64(0, (unsigned)memobs_cuda_poll());
    snap(); /* the summary's hook polls too */
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(0, (unsigned long)cudadbl_calls_after_teardown());
    printf("%s - %s: after the runtime's teardown (%s, sampler %s, timing %s): no CUDA call; the last figures, "
           "\"as of\"\n",
           check__failed_checks ? "not ok" : "ok", check__suite, manual ? "tracked by hand" : "wrappers",
           sampler_on ? "on" : "off", MEMOBS__LOAD(&memobs_cuda__g.timing.v) ? "on" : "off");
    fflush(stdout);
}

static int mode_teardown(void) {
    char *h = NULL;
    cudaStream_t st = NULL;
    int i, waited;
    const char *ms = getenv("MEMOBS_SAMPLE_MS");
    sampler_on = ms && atoi(ms) > 0;
    atexit(after_teardown); /* before the runtime's first call */
    check__failed_checks = 0;
    if (manual) {
        CHECK_ERR(cudaSuccess, cudaMalloc(&dev_block, MIB));
        memobs_track_alloc_full(dev_block, MIB, MEMOBS_MEM_DEVICE, 0, NULL, NULL, 0);
        CHECK_ERR(cudaSuccess, cudaMallocHost((void **)&h, 4096));
        CHECK_ERR(cudaSuccess, cudaMemcpy(dev_block, h, 4096, cudaMemcpyHostToDevice));
    } else {
        CHECK_ERR(cudaSuccess, cudaStreamCreate(&st));
        CHECK_ERR(cudaSuccess, memobs_cudaMalloc(&dev_block, MIB));
        CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
        for (i = 0; i < 3; i++)
            CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(dev_block, h, 4096, cudaMemcpyHostToDevice, st));
        CHECK_ERR(cudaSuccess, cudaStreamSynchronize(st));
        if (!sampler_on) CHECK_U64(MEMOBS_OK, (unsigned)memobs_sample_now()); /* device figures read once */
    }
    for (waited = 0; sampler_on && !device_sampled() && waited < BOUND_MS; waited++) nap();
    CHECK(device_sampled());
    CHECK(calls("cuMemGetInfo_v2") > 0); /* memobs did read the device */
    printf("%s - %s: before exit (%s): the driver's figures read\n", check__failed_checks ? "not ok" : "ok",
           check__suite, manual ? "tracked by hand" : "wrappers");
    fflush(stdout);
    return check__failed_checks ? 1 : 0; /* the blocks and the stream are left to the exit */
}

/* ======================================================================== */
/* stuck                                                                    */
/* ======================================================================== */

static int mode_stuck(void) {
    cudaStream_t s = NULL, t = NULL;
    char *h = NULL, *d = NULL;
    void *a = NULL;
    check__failed_checks = 0;
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&t));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_U64(0, (unsigned)cudadbl_set_stuck(s, 1));
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 1000, cudaMemcpyHostToDevice, s)); /* never completes */
    CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 2000, cudaMemcpyHostToDevice, t)); /* behind it in the queue */
    CHECK_ERR(cudaSuccess, memobs_cudaMallocAsync(&a, 512, s));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeAsync(a, s)); /* pending for good */
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(t));
    snap();
    CHECK_U64(2, S.timed_in_flight_copies); /* in issue order: the second waits behind the first */
    CHECK_U64(1, S.mem[MEMOBS_MEM_DEVICE].pending_frees);
    printf("%s - %s: a copy and a free on a stuck stream, a copy behind it completed\n",
           check__failed_checks ? "not ok" : "ok", check__suite);
    fflush(stdout);
    return check__failed_checks ? 1 : 0;
}

/* ======================================================================== */
/* fork                                                                     */
/* ======================================================================== */

static void quiet(int level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user;
}

/* In a child: memobs' calls that would reach the driver in the parent
   reach nothing; the parent's copies stay in flight. 0 when all holds. */
static int child_checks(uint64_t in_flight) {
    static memobs_summary_t cs;
    memobs_cuda_mem_t m;
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int bad = 0;
    memobs_set_log(quiet, NULL);
    memobs_get_summary(&cs); /* the summary's hook polls */
    bad |= in_flight != UINT64_MAX && cs.timed_in_flight_copies != in_flight;
    bad |= memobs_cuda_poll() != 0;
    bad |= memobs_sample_now() != MEMOBS_OK;
    bad |= memobs_cuda_get_mem_info(&m, 0) != MEMOBS_ERR_IO;
    if ((f = open_memstream(&text, &len)) != NULL) {
        bad |= memobs_cuda_print_mem(f) != MEMOBS_OK;
        fclose(f);
        bad |= !text || !strstr(text, "a forked child makes no CUDA call");
        free(text);
    }
    bad |= memobs_write_summary_file("/dev/null", MEMOBS_FORMAT_JSON) != MEMOBS_OK;
    bad |= cudadbl_calls_in_child() != 0;
    return bad;
}

/* Forks; the child runs child_checks and exits through every exit handler
   (alarm: a deadlock kills it). 1 when the child exited 0. */
static int fork_one(uint64_t in_flight) {
    pid_t pid;
    int st = 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        alarm(BOUND_MS / 1000);
        exit(child_checks(in_flight) ? 3 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        printf("    # child %ld: %s %d\n", (long)pid, WIFEXITED(st) ? "exit status" : "killed by signal",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Recording threads: timed copies and stream-ordered frees, synchronized
   and polled now and then. Under ASan a thread parks between copies for
   each fork (GCC's ASan allocator takes no lock around fork(): a child
   forked while another thread allocates deadlocks in it; see
   tests/serving/test_prom.c); elsewhere they run free. */
#if defined(__SANITIZE_ADDRESS__)
#define PARK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PARK 1
#endif
#endif
#ifndef PARK
#define PARK 0
#endif
static int stop_rec, park_req, parked;
static void *recorder(void *arg) {
    cudaStream_t s = NULL;
    char *h = NULL, *d = NULL;
    unsigned long i;
    (void)arg;
    if (cudaStreamCreate(&s) != cudaSuccess || memobs_cudaMalloc((void **)&d, 4096) != cudaSuccess ||
        memobs_cudaMallocHost((void **)&h, 4096) != cudaSuccess)
        return (void *)1;
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (i = 0; !__atomic_load_n(&stop_rec, __ATOMIC_ACQUIRE); i++) {
        void *a = NULL;
        if (PARK && __atomic_load_n(&park_req, __ATOMIC_ACQUIRE)) {
            __atomic_fetch_add(&parked, 1, __ATOMIC_ACQ_REL);
            while (__atomic_load_n(&park_req, __ATOMIC_ACQUIRE)) sched_yield();
            __atomic_fetch_sub(&parked, 1, __ATOMIC_ACQ_REL);
        }
        if (memobs_cudaMemcpyAsync(d, h, 256, cudaMemcpyHostToDevice, s) != cudaSuccess) return (void *)2;
        if (i % 8 == 0 && (memobs_cudaMallocAsync(&a, 256, s) != cudaSuccess || memobs_cudaFreeAsync(a, s) != cudaSuccess))
            return (void *)3;
        if (i % 16 == 15) {
            if (cudaStreamSynchronize(s) != cudaSuccess) return (void *)4;
            (void)memobs_cuda_poll();
        }
    }
    if (cudaStreamSynchronize(s) != cudaSuccess) return (void *)5;
    (void)memobs_cuda_poll();
    memobs_cudaFree(d);
    memobs_cudaFreeHost(h);
    cudaStreamDestroy(s);
    return NULL;
}

static void fork_in_flight(void) {
    cudaStream_t s = NULL;
    char *h = NULL, *d = NULL;
    int i;
    memobs_cuda_set_timing(1);
    CHECK_ERR(cudaSuccess, cudaStreamCreate(&s));
    CHECK_ERR(cudaSuccess, memobs_cudaMalloc((void **)&d, 4096));
    CHECK_ERR(cudaSuccess, memobs_cudaMallocHost((void **)&h, 4096));
    CHECK_U64(MEMOBS_OK, (unsigned)memobs_sample_now()); /* device figures read: CUDA in use */
    for (i = 0; i < 3; i++) CHECK_ERR(cudaSuccess, memobs_cudaMemcpyAsync(d, h, 100, cudaMemcpyHostToDevice, s));
    snap();
    CHECK_U64(3, S.timed_in_flight_copies);
    CHECK(fork_one(3)); /* the child keeps them in flight, unasked */
    /* the parent is untouched: they complete and resolve here */
    CHECK_U64(0, (unsigned)cudadbl_complete_stream(s));
    CHECK_U64(3, (unsigned)memobs_cuda_poll());
    snap();
    CHECK_U64(0, S.timed_in_flight_copies);
    CHECK_U64(3, S.timed[MEMOBS_PHASE_NONE][MEMOBS_DIR_H2D].count);
    CHECK_ERR(cudaSuccess, memobs_cudaFree(d));
    CHECK_ERR(cudaSuccess, memobs_cudaFreeHost(h));
    CHECK_ERR(cudaSuccess, cudaStreamDestroy(s));
}

static void fork_under_threads(void) {
    pthread_t th[2];
    void *ret[2] = {NULL, NULL};
    int i, ok = 0, made = 0;
    for (i = 0; i < 2; i++) made += pthread_create(&th[i], NULL, recorder, NULL) == 0;
    CHECK_U64(2, (unsigned)made);
    for (i = 0; i < 100 && made == 2; i++) {
        int w;
        if (PARK) {
            __atomic_store_n(&park_req, 1, __ATOMIC_RELEASE);
            for (w = 0; __atomic_load_n(&parked, __ATOMIC_ACQUIRE) < 2 && w < BOUND_MS * 100; w++) sched_yield();
        }
        ok += fork_one(UINT64_MAX);
        if (PARK) __atomic_store_n(&park_req, 0, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&stop_rec, 1, __ATOMIC_RELEASE);
    for (i = 0; i < made; i++) pthread_join(th[i], &ret[i]);
    CHECK_U64(100, (unsigned)ok);
    CHECK(ret[0] == NULL && ret[1] == NULL);
    CHECK_U64(0, (unsigned long)cudadbl_calls_in_child()); /* the parent's own */
    snap();
    CHECK(S.decode.h2d.count > 0);
    CHECK_U64(0, S.timed_in_flight_copies); /* every copy resolved in the parent */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    cudadbl_reset();
    if (!strcmp(mode, "teardown")) {
        manual = argc > 2 && !strcmp(argv[2], "manual");
        return mode_teardown();
    }
    if (!strcmp(mode, "stuck")) return mode_stuck();
    if (!strcmp(mode, "fork")) {
        RUN(fork_in_flight);
        RUN(fork_under_threads);
        return CHECK_DONE();
    }
    printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
    return 1;
}
