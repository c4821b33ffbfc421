/* Functional tests of the background worker, the host memory sampler, the
   leak detector and the Stormlog writer of memobs.h (tests/tracker/test_sampler.sh).
   Built as C99, C++17, ASan+UBSan and TSan. Without arguments: the
   in-process tests. With a mode argument: one environment or one leak
   program per fresh process (the leak programs run in the C99 build). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "sampler"
#endif

#define FP(x) ((const void *)(uintptr_t)(x))
#define MB_MIN(bytes_per_s) ((double)(bytes_per_s) * 60.0 / 1e6)

static void sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0) {
    }
}
static void log_start(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
}
#define NEAR(want, got, tol) CHECK(fabs((double)(got) - (double)(want)) <= (tol))

/* ---- the fit ---- */
static void fit_math(void) {
    double x[6] = {0, 1, 2, 3, 4, 5}, y[6], slope, r2;
    double x4[4] = {0, 1, 2, 3}, y4[4] = {0, 1, 1, 2};
    unsigned i;
    for (i = 0; i < 6; i++) y[i] = 3.0 * x[i] + 2.0;
    CHECK(memobs__leak_fit(x, y, 6, &slope, &r2) == 1);
    NEAR(3.0, slope, 1e-12);
    NEAR(1.0, r2, 1e-12);
    /* slope 0.6, R^2 = 3^2 / (5 * 2) = 0.9 exactly */
    CHECK(memobs__leak_fit(x4, y4, 4, &slope, &r2) == 1);
    NEAR(0.6, slope, 1e-12);
    NEAR(0.9, r2, 1e-12);
    for (i = 0; i < 6; i++) y[i] = 7.0;
    CHECK(memobs__leak_fit(x, y, 6, &slope, &r2) == 1);
    NEAR(0.0, slope, 1e-12);
    NEAR(0.0, r2, 1e-12); /* a flat series explains nothing: no trend */
    for (i = 0; i < 6; i++) y[i] = -2.0 * x[i] + (i % 2 ? 1.0 : -1.0);
    CHECK(memobs__leak_fit(x, y, 6, &slope, &r2) == 1);
    /* residual pattern +-1 around -2x: slope -2 + 6/17.5, r2 from the sums */
    NEAR(-2.0 + 3.0 / 17.5, slope, 1e-12);
    CHECK(r2 > 0.9 && r2 < 1.0);
    CHECK(memobs__leak_fit(x, y, 1, &slope, &r2) == 0);
    for (i = 0; i < 6; i++) x[i] = 1.0;
    CHECK(memobs__leak_fit(x, y, 6, &slope, &r2) == 0);
    CHECK(slope == 0.0 && r2 == 0.0);
}

/* ---- the verdict, on made-up samples ---- */
static memobs_sample_t SYN[400];
/* n samples 1 s apart; anon grows anon_mb_min, heap heap_mb_min (MB/min);
   noise: +-noise MB alternating on anon. */
static void synth(size_t n, double anon_mb_min, double heap_mb_min, double noise, int heap_known) {
    size_t i;
    for (i = 0; i < n; i++) {
        memobs_sample_t *s = &SYN[i];
        double m = (double)i / 60.0;
        memset(s, 0, sizeof *s);
        s->time_ns = (uint64_t)1000000000u * (i + 100);
        s->anon_bytes = (uint64_t)(500e6 + anon_mb_min * m * 1e6 + (i % 2 ? noise : -noise) * 1e6);
        s->rss_bytes = s->anon_bytes + 100000000u;
        s->heap_bytes = heap_known ? (uint64_t)(50e6 + heap_mb_min * m * 1e6) : MEMOBS_UNKNOWN;
        s->heap_reserved_bytes = s->heap_bytes;
        s->tracked_host_bytes = 4096;
    }
}
static void leak_verdicts(void) {
    memobs_leak_t l;
    synth(60, 10.0, 0.0, 0.0, 1);
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_OUTSIDE_MALLOC, l.kind);
    CHECK_U64(60, l.samples);
    NEAR(59.0, l.window_s, 1e-9);
    NEAR(10.0, l.growth_mb_min, 1e-6);
    NEAR(1.0, l.growth_r2, 1e-9);
    NEAR(0.0, l.heap_mb_min, 1e-9);
    CHECK(l.rss_known && l.anon_known && l.heap_known);
    synth(60, 10.0, 5.0, 0.0, 1); /* heap grows half as fast: inside malloc */
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_HEAP, l.kind);
    NEAR(5.0, l.growth_mb_min, 1e-6);
    synth(60, 10.0, 0.5, 0.0, 1); /* heap at 5% of it: still flat */
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_OUTSIDE_MALLOC, l.kind);
    synth(60, 0.5, 0.0, 0.0, 1); /* below 1 MB/min */
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_NONE, l.kind);
    synth(60, 10.0, 0.0, 20.0, 1); /* noise swamps it: R^2 < 0.9 */
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_NONE, l.kind);
    CHECK(l.anon_r2 < 0.9);
    synth(9, 10.0, 0.0, 0.0, 1); /* too few samples */
    memobs__leak_eval(SYN, 9, 120, &l);
    CHECK_U64(MEMOBS_LEAK_NONE, l.kind);
    NEAR(10.0, l.anon_mb_min, 1e-4); /* the fit is still reported (bytes are whole: ~1e-5 off) */
    synth(60, 10.0, 0.0, 0.0, 0);
    memobs__leak_eval(SYN, 60, 120, &l);
    CHECK_U64(MEMOBS_LEAK_UNEXPLAINED, l.kind);
    CHECK(!l.heap_known);
    synth(300, 10.0, 0.0, 0.0, 1); /* window 30 s: the newest 31 samples */
    memobs__leak_eval(SYN, 300, 30, &l);
    CHECK_U64(31, l.samples);
    NEAR(30.0, l.window_s, 1e-9);
}

/* ---- the worker ---- */
static int ticks_a, ticks_b, in_a, overlap;
static void task_a(uint64_t now) {
    (void)now;
    if (__atomic_fetch_add(&in_a, 1, __ATOMIC_SEQ_CST)) __atomic_fetch_add(&overlap, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&ticks_a, 1, __ATOMIC_SEQ_CST);
    sleep_ms(1);
    __atomic_fetch_sub(&in_a, 1, __ATOMIC_SEQ_CST);
}
static void task_b(uint64_t now) { (void)now; __atomic_fetch_add(&ticks_b, 1, __ATOMIC_SEQ_CST); }
static int load_i(int *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
/* Waits on a condition, not for a time: WAIT_S only bounds a real hang (a
   loaded 2-core CI machine, TSan, can delay the worker's ticks by seconds). */
#define WAIT_S 60
static uint64_t deadline(void) { return memobs_now_ns() + (uint64_t)WAIT_S * 1000000000u; }
static int wait_for(int *p, int n) { /* 1 when *p reached n within WAIT_S */
    uint64_t end = deadline();
    while (load_i(p) < n && memobs_now_ns() < end) sleep_ms(1);
    return load_i(p) >= n;
}
static int wait_samples(size_t n) { /* 1 when the ring holds at least n samples within WAIT_S */
    uint64_t end = deadline();
    while (memobs_get_samples(NULL, 0) < n && memobs_now_ns() < end) sleep_ms(1);
    return memobs_get_samples(NULL, 0) >= n;
}
/* Samples ever pushed: held plus overwritten (the ring may be full). */
static uint64_t samples_pushed(void) { return (uint64_t)memobs_get_samples(NULL, 0) + memobs_get_samples_dropped(); }
static int bg_running(void) {
    int r;
    pthread_mutex_lock(&memobs__bg.lock);
    r = memobs__bg.running;
    pthread_mutex_unlock(&memobs__bg.lock);
    return r;
}
static void worker_start_stop(void) {
    int a, round;
    CHECK(!bg_running()); /* nothing scheduled: no thread */
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs__bg_schedule(NULL, 1000000));
    for (round = 0; round < 3; round++) { /* start, stop, restart */
        CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_a, 2000000));
        CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_b, 1000000));
        CHECK(bg_running());
        CHECK(wait_for(&ticks_a, 5 * (round + 1)) && wait_for(&ticks_b, 10 * (round + 1)));
        CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_a, 0));
        a = load_i(&ticks_a);
        CHECK(load_i(&in_a) == 0); /* removal waited for a call in progress */
        CHECK(bg_running());       /* task_b is still there */
        sleep_ms(10);
        CHECK_U64((uint64_t)a, (uint64_t)load_i(&ticks_a)); /* never called after removal */
        CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_b, 0));
        CHECK(!bg_running()); /* joined with the last task */
        ticks_a = 5 * (round + 1), ticks_b = 10 * (round + 1);
    }
    CHECK_U64(0, (uint64_t)overlap);
    CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_b, 0)); /* removing an absent task */
}

/* ---- samples ---- */
static memobs_sample_t OUT[64];
static void sample_fields(void) {
    size_t n0 = memobs_get_samples(NULL, 0), n;
    memobs_sample_t *s;
    memobs_track_alloc_full(FP(0x10000), 12345, MEMOBS_MEM_HOST, -1, NULL, NULL, 0);
    memobs_track_alloc_full(FP(0x20000), 777, MEMOBS_MEM_PINNED, -1, NULL, NULL, 0);
    memobs_track_alloc_full(FP(0x30000), 4096, MEMOBS_MEM_DEVICE, 1, NULL, NULL, 0);
    CHECK_U64(MEMOBS_OK, memobs_sample_now());
    n = memobs_get_samples(OUT, 64);
    CHECK_U64(n0 + 1, n);
    s = &OUT[n - 1];
    CHECK(s->time_ns > 0 && s->time_ns <= memobs_now_ns());
    CHECK_U64(0, s->interval_ms);
    CHECK(s->rss_bytes != MEMOBS_UNKNOWN && s->rss_bytes > 1000000);
    CHECK(s->anon_bytes != MEMOBS_UNKNOWN && s->anon_bytes > 0);
#ifdef MEMOBS__HAVE_MALLINFO2
    CHECK(s->heap_bytes != MEMOBS_UNKNOWN && s->heap_reserved_bytes != MEMOBS_UNKNOWN);
#else
    CHECK(s->heap_bytes == MEMOBS_UNKNOWN);
#endif
    CHECK_U64(12345, s->tracked_host_bytes);
    CHECK_U64(777, s->tracked_pinned_bytes);
    CHECK_U64(4096, s->tracked_device_bytes);
    CHECK_U64(1, s->ndev); /* only the device memobs saw memory on */
    CHECK_U64(1, (uint64_t)s->dev[0].device);
    CHECK_U64(4096, s->dev[0].tracked);
    CHECK(s->dev[0].used == MEMOBS_UNKNOWN && s->dev[0].total == MEMOBS_UNKNOWN); /* no memobs_cuda.h */
    memobs_track_free(FP(0x10000));
    memobs_track_free(FP(0x20000));
    memobs_track_free(FP(0x30000));
    CHECK_U64(MEMOBS_OK, memobs_sample_now());
    n = memobs_get_samples(OUT, 64);
    CHECK_U64(0, OUT[n - 1].tracked_host_bytes);
    CHECK_U64(1, OUT[n - 1].ndev); /* seen once: still sampled */
    CHECK_U64(0, OUT[n - 1].dev[0].tracked);
    CHECK_U64(1, memobs_get_samples(OUT, 1)); /* the newest */
    CHECK(OUT[0].time_ns >= OUT[n > 1 ? 0 : 0].time_ns);
}

static int count_of(const char *s, const char *what) {
    int n = 0;
    while ((s = strstr(s, what)) != NULL) n++, s += strlen(what);
    return n;
}

/* With the timeline on, each sample's figures become counter events of
   the Chrome trace, with the sample's values and time. */
static void samples_on_timeline(void) {
    char want[160], *out;
    size_t n, i;
    FILE *f;
    int found = 0;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(1024));
    for (i = 0; i < 3; i++) CHECK_U64(MEMOBS_OK, memobs_sample_now());
    n = memobs_get_samples(OUT, 64);
    f = tmpfile();
    CHECK_U64(MEMOBS_OK, memobs_write_timeline(f));
    out = read_file(f);
    fclose(f);
    CHECK(count_of(out, "\"name\":\"rss bytes\"") == 3);
    CHECK(count_of(out, "\"name\":\"anonymous bytes\"") == 3);
    CHECK(count_of(out, "\"name\":\"tracked host+pinned bytes\"") == 3);
    for (i = n - 3; i < n; i++) { /* each sample: its rss at its time, in microseconds */
        snprintf(want, sizeof want, "\"args\":{\"value\":%llu}", (unsigned long long)OUT[i].rss_bytes);
        found += strstr(out, want) != NULL;
    }
    CHECK_U64(3, (uint64_t)found);
    free(out);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
    CHECK_U64(MEMOBS_OK, memobs_sample_now()); /* timeline off: nothing pushed, nothing broken */
}

static void sampler_thread(void) {
    size_t n0 = memobs_get_samples(NULL, 0), n, i;
    CHECK_U64(MEMOBS_OK, memobs_sampler_start(2));
    CHECK(bg_running());
    CHECK(wait_samples(n0 + 11));
    memobs_sampler_stop();
    CHECK(!bg_running());
    n = memobs_get_samples(NULL, 0);
    CHECK(n >= n0 + 11);
    sleep_ms(10);
    CHECK_U64(n, memobs_get_samples(NULL, 0)); /* stopped means stopped */
    n = memobs_get_samples(OUT, 10);
    CHECK_U64(10, n);
    for (i = 1; i < n; i++) CHECK(OUT[i].time_ns > OUT[i - 1].time_ns); /* oldest first */
    CHECK_U64(2, OUT[n - 1].interval_ms);
    CHECK_U64(0, memobs_get_samples_dropped());
    memobs_sampler_stop(); /* twice: harmless */
}

static void bad_input(void) {
    log_start();
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_sampler_start(0));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_leak_check(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_stormlog(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_stormlog_file(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_stormlog_file("/nonexistent/dir/s.json"));
    CHECK_U64(5, (uint64_t)log_count);
    CHECK_U64(1, (uint64_t)log_has("memobs_sampler_start(0): the interval must be at least 1 ms"));
    CHECK_U64(1, (uint64_t)log_has("cannot write the Stormlog telemetry to '/nonexistent/dir/s.json': cannot create a temporary file in its folder"));
    log_stop();
    CHECK(!bg_running());
}

static void summaries(void) {
    FILE *f = tmpfile();
    char *txt;
    CHECK(f != NULL);
    if (!f) return;
    memobs_sample_now();
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    txt = read_file(f);
    CHECK_HAS(txt, "  host memory: ");
    CHECK_HAS(txt, "no leak signature");
    CHECK(!strstr(txt, "is growing at"));
    free(txt);
    fclose(f);
}

/* A thread that tracks and samples while the main thread forks. */
static int stop_busy;
static void *busy_thread(void *arg) {
    uintptr_t i = 0;
    (void)arg;
    while (!__atomic_load_n(&stop_busy, __ATOMIC_SEQ_CST)) {
        memobs_track_alloc_full(FP(0x900000 + (i % 64) * 64), 64, MEMOBS_MEM_HOST, -1, NULL, "busy", 0);
        memobs_track_free(FP(0x900000 + (i % 64) * 64));
        if (i++ % 16 == 0) memobs_sample_now();
    }
    return NULL;
}
static void fork_while_sampling(void) {
    pthread_t th;
    int round, status = 0;
    CHECK_U64(MEMOBS_OK, memobs_sampler_start(2));
    pthread_create(&th, NULL, busy_thread, NULL);
    for (round = 0; round < 3; round++) {
        pid_t pid;
        uint64_t before, end;
        sleep_ms(5);
        pid = fork();
        if (pid == 0) {
            int ok = 1;
            alarm(2 * WAIT_S); /* a deadlock ends as SIGALRM, which the parent sees */
            pthread_mutex_lock(&memobs__smp.lock);
            ok &= memobs__smp.n == 0; /* the parent's samples are not the child's */
            pthread_mutex_unlock(&memobs__smp.lock);
            ok &= !bg_running();
#ifdef TEST_FORK_NO_THREADS
            /* TSan cannot start threads in the child of a multi-threaded
               fork; LSan would see the parent's threads at exit. */
            {
                memobs_sample_t one; /* not memobs_sample_now(): it would start the worker */
                memobs__sample_fill(&one, memobs_now_ns());
                ok &= memobs__sample_push(&one) == MEMOBS_OK && memobs__smp.n == 1;
            }
            _exit(ok ? 0 : 3);
#endif
            ok &= wait_samples(5) && bg_running(); /* memobs_get_samples restarts the worker */
            ok &= memobs_get_samples(OUT, 1) == 1 && OUT[0].interval_ms == 2;
            exit(ok ? 0 : 3); /* with the worker running: the exit handler stops it */
        }
        CHECK(pid > 0);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) printf("    # child status %d\n", status);
        /* the parent samples on: a new sample arrives (wait for it; a
           fixed 20 ms could pass on a loaded machine with none taken) */
        before = samples_pushed();
        end = deadline();
        while (samples_pushed() == before && memobs_now_ns() < end) sleep_ms(1);
        CHECK(samples_pushed() > before);
    }
    __atomic_store_n(&stop_busy, 1, __ATOMIC_SEQ_CST);
    pthread_join(th, NULL);
    memobs_sampler_stop();
    CHECK(!bg_running());
}

/* ---- modes (fresh processes) ---- */
static int mode_ring(void) { /* MEMOBS_SAMPLES=5 */
    uint64_t t[8];
    int i;
    for (i = 0; i < 8; i++) {
        memobs_sample_now();
        memobs_get_samples(OUT, 64);
        t[i] = OUT[memobs_get_samples(NULL, 0) - 1].time_ns;
    }
    CHECK_U64(5, memobs_get_samples(NULL, 0));
    CHECK_U64(3, memobs_get_samples_dropped());
    CHECK_U64(5, memobs_get_samples(OUT, 64));
    for (i = 0; i < 5; i++) CHECK_U64(t[3 + i], OUT[i].time_ns);
    return 0;
}
static void test_ring(void) { mode_ring(); }

static void test_env_sampling(void) { /* MEMOBS_SAMPLE_MS=N: sampling with no call */
    CHECK(wait_samples(5));
    CHECK(bg_running());
    memobs_get_samples(OUT, 1);
    CHECK_U64((uint64_t)atoi(getenv("MEMOBS_SAMPLE_MS")), OUT[0].interval_ms);
}
static void test_env_defaults(void) { /* malformed values: defaults kept */
    CHECK(!bg_running());
    CHECK_U64(0, memobs_get_samples(NULL, 0));
    CHECK_U64(120, memobs__smp.window_s);
    CHECK_U64(0, memobs__smp.cap_want);
}

static int exited;
static void after_bg_exit(void) { /* registered before the worker's handler: runs after it */
    __atomic_store_n(&exited, 1, __ATOMIC_SEQ_CST);
    sleep_ms(30);
}
static void task_after_exit(uint64_t now) {
    (void)now;
    if (__atomic_load_n(&exited, __ATOMIC_SEQ_CST)) fprintf(stderr, "task ran after the exit handler\n");
    sleep_ms(1);
}
static void test_exit_running(void) { /* exit() with the worker mid-task: no hang, no late task */
    atexit(after_bg_exit);
    CHECK_U64(MEMOBS_OK, memobs__bg_schedule(task_after_exit, 1000000));
    CHECK_U64(MEMOBS_OK, memobs_sampler_start(1));
    sleep_ms(20);
}

/* The leak programs: 75 steps 20 ms apart (1.48 s of growth), each step's
   allocation then a sample, taken by the sampler's own task
   (memobs__sampler_tick, interval 20 ms) called on this thread at the
   step's nominal time. Not the background thread at 10 ms: its samples,
   and the steps between them, come when the scheduler lets them, and on a
   loaded 2-core machine a stall (often at the end, before the sampler
   stops) bent the fit by 10% and more against a bound of 20% (R^2 down to
   0.98 against 0.9). The figures in each sample are still the process's
   own, read as the worker reads them; only the times are exact. The
   worker's timing has its own tests (worker_start_stop, sampler_thread,
   env_sampling). */
#define LEAK_STEPS 75
#define LEAK_STEP_MS 20u
static double leak_run(int how, double *real_mb_min) {
    /* nominal times end before this call: never ahead of the clock */
    uint64_t t0 = memobs_now_ns() - (uint64_t)LEAK_STEPS * LEAK_STEP_MS * 1000000u, bytes = 0;
    const size_t chunk = 2u << 20;
    int i;
    char *keep[100];
    memobs_init();
    MEMOBS__STORE(&memobs__smp.interval_ms.v, LEAK_STEP_MS);
    for (i = 0; i < LEAK_STEPS; i++) {
        char *p = NULL;
        if (how == 0) { /* anonymous mmaps outside malloc, as UCX's hooks kept them */
            void *m = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            p = m == MAP_FAILED ? NULL : (char *)m;
        } else if (how == 1) { /* through malloc, never freed */
            p = (char *)malloc(chunk);
            keep[i % 100] = p;
        } else { /* churn at a steady state */
            int j;
            for (j = 0; j < 64; j++) {
                char *q = (char *)malloc((size_t)(1 + (i * 64 + j) % 97) * 1024u);
                if (q) memset(q, 1, 1024);
                free(q);
            }
        }
        if (p) {
            memset(p, (char)i, chunk);
            bytes += chunk;
        }
        memobs__sampler_tick(t0 + (uint64_t)i * LEAK_STEP_MS * 1000000u);
    }
    (void)keep;
    MEMOBS__STORE(&memobs__smp.interval_ms.v, 0u);
    /* what was allocated from the first sample to the last, over their time */
    *real_mb_min = (double)(bytes > chunk ? bytes - chunk : 0) / 1e6 / ((double)(LEAK_STEPS - 1) * LEAK_STEP_MS / 60e3);
    return 0;
}
static char *summary_text(void) {
    FILE *f = tmpfile();
    char *t;
    if (!f) return NULL;
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    t = read_file(f);
    fclose(f);
    return t;
}
static const char *stormlog_out;
static void test_leak_mmap(void) {
    double real;
    memobs_leak_t l;
    char *t;
    leak_run(0, &real);
    CHECK_U64(MEMOBS_OK, memobs_leak_check(&l));
    CHECK_U64(MEMOBS_LEAK_OUTSIDE_MALLOC, l.kind);
    CHECK(l.growth_mb_min > 0.8 * real && l.growth_mb_min < 1.2 * real);
    CHECK(l.growth_r2 >= 0.9);
    printf("    # real %.1f MB/min, fitted %.1f MB/min, R^2 %.4f, heap %.2f MB/min, %llu samples\n", real,
           l.growth_mb_min, l.growth_r2, l.heap_mb_min, (unsigned long long)l.samples);
    t = summary_text();
    CHECK(t != NULL);
    if (t) {
        CHECK_HAS(t, "  memory mapped outside malloc is growing at ");
        CHECK(!strstr(t, "through malloc"));
        fputs(strstr(t, "  memory mapped") ? strstr(t, "  memory mapped") : "", stderr); /* for README */
        free(t);
    }
    if (stormlog_out) CHECK_U64(MEMOBS_OK, memobs_write_stormlog_file(stormlog_out));
}
static void test_leak_malloc(void) {
    double real;
    memobs_leak_t l;
    char *t;
    leak_run(1, &real);
    CHECK_U64(MEMOBS_OK, memobs_leak_check(&l));
    CHECK_U64(MEMOBS_LEAK_HEAP, l.kind);
    NEAR(real, l.growth_mb_min, 0.2 * real);
    t = summary_text();
    if (t) {
        CHECK_HAS(t, "  memory allocated through malloc is growing at ");
        CHECK(!strstr(t, "outside malloc"));
        free(t);
    }
}
static void test_churn(void) {
    double real;
    memobs_leak_t l;
    char *t;
    leak_run(2, &real);
    CHECK_U64(MEMOBS_OK, memobs_leak_check(&l));
    CHECK_U64(MEMOBS_LEAK_NONE, l.kind);
    CHECK(l.samples >= 50);
    t = summary_text();
    if (t) {
        CHECK(!strstr(t, "is growing at"));
        CHECK_HAS(t, "no leak signature");
        free(t);
    }
}

/* Stormlog with odd strings, no CUDA: host samples and a peak event. */
static void test_stormlog(void) {
    CHECK_U64(MEMOBS_OK, memobs_set_identity("job \"q\" \\ back\nnew line \xc3\xa9\xe2\x9c\x93 \x01", 1, 0, 2));
    memobs_sample_now();
    memobs_track_alloc_full(FP(0x50000), 3u << 20, MEMOBS_MEM_DEVICE, 0, NULL, "kv \"cache\" \\ \xce\xbb\ttab", 0);
    memobs_sample_now();
    CHECK_U64(MEMOBS_OK, memobs_write_stormlog_file(stormlog_out));
    memobs_track_free(FP(0x50000));
}

/* Stormlog files written while 4 threads allocate and free device memory
   (new peaks among them) and the sampler runs every millisecond: each file
   goes to the schema validator (the script), and the final figures are
   exact. stormlog_out is a pattern with one %d. */
#define SL_THREADS 4
static void *sl_churn(void *arg) {
    uintptr_t base = 0x1000000u * (1u + (uintptr_t)arg);
    int i;
    for (i = 0; i < 2000; i++) {
        memobs_track_alloc_full(FP(base + (uintptr_t)(i % 16) * 0x10000u), (uint64_t)(1 + i % 7) << 20,
                                MEMOBS_MEM_DEVICE, 0, NULL, "churn", 0);
        if (i % 16 == 15)
            for (int k = 0; k < 16; k++) memobs_track_free(FP(base + (uintptr_t)k * 0x10000u));
    }
    return NULL;
}
static void test_stormlog_threads(void) {
    pthread_t th[SL_THREADS];
    char path[600];
    uintptr_t t;
    int i;
    CHECK_U64(MEMOBS_OK, memobs_sampler_start(1));
    for (t = 0; t < SL_THREADS; t++) pthread_create(&th[t], NULL, sl_churn, (void *)t);
    for (i = 0; i < 20; i++) {
        snprintf(path, sizeof path, stormlog_out, i);
        CHECK_U64(MEMOBS_OK, memobs_write_stormlog_file(path));
    }
    for (t = 0; t < SL_THREADS; t++) pthread_join(th[t], NULL);
    memobs_sampler_stop();
    CHECK_U64(0, memobs_get_device_bytes(0, NULL)); /* 2000 = 125 x 16: every block freed */
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 2) stormlog_out = argv[2];
    if (argc > 1) {
        const char *m = argv[1];
        if (!strcmp(m, "ring")) RUN(test_ring);
        else if (!strcmp(m, "env_sampling")) RUN(test_env_sampling);
        else if (!strcmp(m, "env_defaults")) RUN(test_env_defaults);
        else if (!strcmp(m, "exit_running")) RUN(test_exit_running);
        else if (!strcmp(m, "leak_mmap")) RUN(test_leak_mmap);
        else if (!strcmp(m, "leak_malloc")) RUN(test_leak_malloc);
        else if (!strcmp(m, "churn")) RUN(test_churn);
        else if (!strcmp(m, "stormlog")) RUN(test_stormlog);
        else if (!strcmp(m, "stormlog_threads")) RUN(test_stormlog_threads);
        else return printf("not ok - %s: unknown mode %s\n", check__suite, m), 1;
    } else {
        RUN(fit_math);
        RUN(leak_verdicts);
        RUN(worker_start_stop);
        RUN(sample_fields);
        RUN(samples_on_timeline);
        RUN(sampler_thread);
        RUN(bad_input);
        RUN(summaries);
        RUN(fork_while_sampling);
    }
    printf("%d passed, %d failed\n", check__passed, check__failed);
    return check__failed ? 1 : 0;
}
