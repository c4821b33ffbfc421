/* Regions and markers (memobs.h, "Regions and markers"): nesting, the
   per-name figures, unmatched ends, depth overflow, threads, odd names,
   the name table full (built with -DMEMOBS_MAX_REGIONS=8), timing on and
   off, reset, fork, MEMOBS_DISABLE, the summary and JSON, and the files
   tests/core/test_regions.sh checks: a Chrome trace (slices and instants), a
   Prometheus exposition (promtool) and Stormlog telemetry (context).

       test_regions                 the in-process tests
       test_regions trace PATH      a trace with nested regions and markers
       test_regions prom PATH       the exposition, odd names included
       test_regions stormlog PATH   samples with regions open on 2 threads
       test_regions full            (MEMOBS_MAX_REGIONS=8) the table full */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "regions"
#endif

__attribute__((unused)) static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0;
    memobs_set_log(capture_log, NULL);
}

/* The figures of one name in the window ({0} when it is not interned). */
static memobs_region_stats_t stats_of(const char *name) {
    static memobs_region_stats_t all[512];
    memobs_region_stats_t none;
    size_t n = memobs_get_regions(all, 512), i;
    memset(&none, 0, sizeof none);
    for (i = 0; i < n && i < 512; i++)
        if (strcmp(all[i].name, name) == 0) return all[i];
    none.id = -1;
    return none;
}

static memobs_summary_t S;
static void snap(void) { memobs_get_summary(&S); }

#ifndef MEMOBS_DISABLE
#define THREADS 4
#define PAIRS 20000
static void *worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < PAIRS; i++) {
        MEMOBS_REGION_BEGIN("thr_outer");
        MEMOBS_REGION_BEGIN("thr_inner");
        if (i % 100 == 0) MEMOBS_MARK("thr_mark");
        MEMOBS_REGION_END();
        MEMOBS_REGION_END();
    }
    return (void *)(uintptr_t)(unsigned)memobs_region_depth();
}

#if MEMOBS_MAX_REGIONS != 8 /* the table-full build runs test_table_full alone */

static void test_nesting(void) {
    memobs_region_stats_t a, b, c;
    memobs_reset();
    CHECK_U64(0, memobs_region_depth());
    MEMOBS_REGION_BEGIN("nest_a");
    MEMOBS_REGION_BEGIN("nest_b");
    memobs_region_begin("nest_c");
    CHECK_U64(3, memobs_region_depth());
    memobs_region_end();
    MEMOBS_REGION_BEGIN("nest_c"); /* the macro's site and the function find the same name */
    memobs_region_end();
    MEMOBS_REGION_END();
    CHECK_U64(1, memobs_region_depth());
    MEMOBS_REGION_END();
    CHECK_U64(0, memobs_region_depth());
    a = stats_of("nest_a");
    b = stats_of("nest_b");
    c = stats_of("nest_c");
    CHECK_U64(1, a.count);
    CHECK_U64(1, a.timed);
    CHECK_U64(1, b.count);
    CHECK_U64(2, c.count);
    CHECK_U64(2, c.timed);
    /* the clock is monotonic: an outer region lasts at least its inner ones */
    CHECK(a.total_ns >= b.total_ns);
    CHECK(b.total_ns >= c.total_ns);
    CHECK(c.max_ns <= c.total_ns);
    CHECK(a.max_ns == a.total_ns);
    CHECK_U64(0, a.marks);
    CHECK_U64(0, a.collective);
    CHECK(a.id > 0 && b.id > 0 && c.id > 0 && a.id != b.id && b.id != c.id);
    CHECK_U64((uint64_t)a.id, (uint64_t)memobs_region_intern("nest_a"));
    CHECK_STR("nest_a", memobs_region_label(a.id));
    CHECK(memobs_region_label(-1) == NULL);
    CHECK(memobs_region_label(100000) == NULL);
    CHECK_STR("(other)", memobs_region_label(0));
    snap();
    CHECK_U64(0, S.region_unmatched_ends);
    CHECK_U64(0, S.region_too_deep);
    CHECK_U64(0, S.region_names_dropped);
}

static void test_marks_and_collective(void) {
    memobs_region_stats_t m, nc;
    int i;
    memobs_reset();
    for (i = 0; i < 5; i++) MEMOBS_MARK("kv_evict");
    memobs_mark("kv_evict");
    MEMOBS_REGION_BEGIN("NCCL AllReduce step"); /* a collective name: case does not matter */
    MEMOBS_REGION_END();
    m = stats_of("kv_evict");
    nc = stats_of("NCCL AllReduce step");
    CHECK_U64(6, m.marks);
    CHECK_U64(0, m.count);
    CHECK_U64(0, m.collective);
    CHECK_U64(1, nc.collective);
    CHECK_U64(1, nc.count);
    CHECK_U64(1, stats_of("barrier").id < 0); /* never interned */
    CHECK_U64(1, (uint64_t)memobs_region_intern("x_barrier_y") > 0 && stats_of("x_barrier_y").collective);
    CHECK_U64(1, stats_of("ReduceScatter").id < 0 && memobs_region_intern("ReduceScatter") > 0 &&
                     stats_of("ReduceScatter").collective);
    CHECK_U64(0, memobs_region_intern("scatter") > 0 && stats_of("scatter").collective);
}

static void test_unmatched_and_bad(void) {
    log_start();
    memobs_reset();
    memobs_region_end();
    memobs_region_end();
    snap();
    CHECK_U64(2, S.region_unmatched_ends);
    CHECK_U64(1, log_has("memobs_region_end() with no region open on this thread; counted and ignored"));
    CHECK_U64(0, memobs_region_depth());
    /* NULL, "", an id never given out: filed under "(other)", counted, and
       their ends still match */
    memobs_region_begin(NULL);
    memobs_region_begin("");
    memobs_region_begin_id(-5);
    memobs_region_begin_id(60000);
    memobs_mark(NULL);
    CHECK_U64(4, memobs_region_depth());
    memobs_region_end();
    memobs_region_end();
    memobs_region_end();
    memobs_region_end();
    CHECK_U64(0, memobs_region_depth());
    snap();
    CHECK_U64(2, S.region_unmatched_ends);
    CHECK_U64(5, S.region_names_dropped);
    CHECK_U64(4, stats_of("(other)").count);
    CHECK_U64(1, stats_of("(other)").marks);
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_region_intern(NULL));
    CHECK_U64((uint64_t)MEMOBS_ERR_INVALID, (uint64_t)memobs_region_intern(""));
    CHECK_U64(1, log_has("is filed under \"(other)\""));
    log_stop();
}

static void test_too_deep(void) {
    int i;
    log_start();
    memobs_reset();
    for (i = 0; i < MEMOBS_REGION_DEPTH + 8; i++) MEMOBS_REGION_BEGIN("deep");
    CHECK_U64(MEMOBS_REGION_DEPTH + 8, memobs_region_depth());
    snap();
    CHECK_U64(8, S.region_too_deep);
    for (i = 0; i < MEMOBS_REGION_DEPTH + 8; i++) MEMOBS_REGION_END();
    CHECK_U64(0, memobs_region_depth());
    CHECK_U64(MEMOBS_REGION_DEPTH, stats_of("deep").count); /* the ones kept */
    snap();
    CHECK_U64(0, S.region_unmatched_ends);
    CHECK_U64(1, log_has("nested deeper than MEMOBS_REGION_DEPTH=32"));
    log_stop();
}

static void test_odd_names(void) {
    char longname[201], *label;
    const char *cut;
    memobs_region_t id;
    size_t i;
    /* bytes that are not UTF-8 become U+FFFD; quotes and markup are kept */
    id = memobs_region_intern("a\xff<script>\"q\"\\");
    CHECK(id > 0);
    CHECK_STR("a\xef\xbf\xbd<script>\"q\"\\", memobs_region_label(id));
    /* 200 bytes: cut to 63 */
    for (i = 0; i < 200; i++) longname[i] = (char)('a' + i % 26);
    longname[200] = 0;
    id = memobs_region_intern(longname);
    label = (char *)memobs_region_label(id);
    CHECK_U64(63, strlen(label));
    CHECK(strncmp(label, longname, 63) == 0);
    /* names equal in their first 63 bytes are one name */
    longname[150] = '!';
    CHECK_U64((uint64_t)id, (uint64_t)memobs_region_intern(longname));
    /* a 3-byte character across byte 63 is dropped whole */
    for (i = 0; i < 62; i++) longname[i] = 'x';
    memcpy(longname + 62, "\xe2\x9c\x93yz", 6);
    cut = memobs_region_label(memobs_region_intern(longname));
    CHECK_U64(62, strlen(cut));
    CHECK(cut[61] == 'x');
}

static void test_threads(void) {
    pthread_t t[THREADS];
    void *depth;
    int i, bad = 0;
    memobs_reset();
    for (i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], &depth);
        bad += depth != NULL;
    }
    CHECK_U64(0, bad);
    CHECK_U64((uint64_t)THREADS * PAIRS, stats_of("thr_outer").count);
    CHECK_U64((uint64_t)THREADS * PAIRS, stats_of("thr_inner").count);
    CHECK_U64((uint64_t)THREADS * PAIRS / 100, stats_of("thr_mark").marks);
    snap();
    CHECK_U64(0, S.region_unmatched_ends);
    /* a thread's open regions do not follow its shard to the next thread */
    pthread_create(&t[0], NULL, worker, NULL);
    pthread_join(t[0], &depth);
    CHECK(depth == NULL);
}

static void *leave_open(void *arg) {
    (void)arg;
    MEMOBS_REGION_BEGIN("left_open");
    MEMOBS_REGION_BEGIN("left_open_inner");
    return NULL;
}

static void *depth_of_new_thread(void *arg) {
    (void)arg;
    MEMOBS_RECORD_H2D(1, 1); /* takes a shard: perhaps the one leave_open's thread left */
    return (void *)(uintptr_t)(unsigned)memobs_region_depth();
}

static void test_thread_exit_open(void) {
    pthread_t t;
    void *depth = (void *)1;
    pthread_create(&t, NULL, leave_open, NULL);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, depth_of_new_thread, NULL);
    pthread_join(t, &depth);
    CHECK(depth == NULL);
}

static void test_timing_switch(void) {
    memobs_reset();
    CHECK_U64(1, memobs_region_get_timing()); /* a read */
    CHECK_U64(1, memobs_region_set_timing(0)); /* it was on */
    CHECK_U64(0, memobs_region_get_timing());
    MEMOBS_REGION_BEGIN("untimed");
    MEMOBS_REGION_END();
    MEMOBS_REGION_BEGIN("a collective barrier"); /* timed anyway: Stormlog's event needs its time */
    MEMOBS_REGION_END();
    CHECK_U64(0, memobs_region_set_timing(1));
    CHECK_U64(1, stats_of("untimed").count);
    CHECK_U64(0, stats_of("untimed").timed);
    CHECK_U64(0, stats_of("untimed").total_ns);
    CHECK_U64(1, stats_of("a collective barrier").timed);
    MEMOBS_REGION_BEGIN("untimed");
    MEMOBS_REGION_END();
    CHECK_U64(2, stats_of("untimed").count);
    CHECK_U64(1, stats_of("untimed").timed);
    /* memobs off: regions stay matched, nothing counted */
    memobs_set_enabled(0);
    MEMOBS_REGION_BEGIN("untimed");
    CHECK_U64(1, memobs_region_depth());
    memobs_set_enabled(1);
    MEMOBS_REGION_END();
    CHECK_U64(0, memobs_region_depth());
    CHECK_U64(3, stats_of("untimed").count); /* counted at its end, made while on */
    CHECK_U64(1, stats_of("untimed").timed); /* its begin was not timed */
}

/* The hook memobs_cuda.h's NVTX ranges hang on (tests/cuda/test_nvtx.sh tests
   those through NVTX itself): its calls, in order. */
static char hook_log[2048];
static void hook_fn(int op, int32_t id, const char *name) {
    size_t n = strlen(hook_log);
    snprintf(hook_log + n, sizeof hook_log - n, "%s%c%d:%s", n ? " " : "", "bem"[op], (int)id, name ? name : "-");
}
static void test_hook(void) {
    memobs_region_t a = memobs_region_intern("hook_a");
    int i;
    char want[512];
    log_start(); /* the unmatched end's warning */
    hook_log[0] = 0;
    memobs__reg_hook = hook_fn;
    MEMOBS_REGION_BEGIN("hook_a");
    MEMOBS_MARK("hook_m");
    MEMOBS_REGION_END();
    memobs_region_end(); /* unmatched: no call */
    memobs_set_enabled(0);    /* off: regions stay in step, markers still pass */
    memobs_region_begin_id(a);
    memobs_mark_id(99999);
    memobs_region_end();
    memobs_set_enabled(1);
    for (i = 0; i < MEMOBS_REGION_DEPTH + 1; i++) memobs_region_begin_id(a);
    for (i = 0; i < MEMOBS_REGION_DEPTH + 1; i++) memobs_region_end();
    memobs__reg_hook = NULL;
    log_stop();
    snprintf(want, sizeof want, "b%d:hook_a m%d:hook_m e%d:hook_a b%d:hook_a m0:(other) e%d:hook_a", (int)a,
             (int)memobs_region_intern("hook_m"), (int)a, (int)a, (int)a);
    CHECK(strncmp(hook_log, want, strlen(want)) == 0);
    CHECK_HAS(hook_log, " e-1:- e"); /* the deepest end: beyond the stack, still an end */
    if (strncmp(hook_log, want, strlen(want)) != 0) printf("    # hook calls: %s\n    # want: %s...\n", hook_log, want);
}

static void test_reset(void) {
    MEMOBS_REGION_BEGIN("reset_me");
    MEMOBS_REGION_END();
    MEMOBS_MARK("reset_me");
    CHECK(stats_of("reset_me").count >= 1);
    memobs_reset();
    CHECK_U64(0, stats_of("reset_me").count);
    CHECK_U64(0, stats_of("reset_me").timed);
    CHECK_U64(0, stats_of("reset_me").total_ns);
    CHECK_U64(0, stats_of("reset_me").max_ns);
    CHECK_U64(0, stats_of("reset_me").marks);
    CHECK(stats_of("reset_me").id > 0); /* the name stays */
    MEMOBS_REGION_BEGIN("reset_me");
    MEMOBS_REGION_END();
    CHECK_U64(1, stats_of("reset_me").count);
}

static void test_fork(void) {
    pid_t pid;
    int status = -1;
    memobs_reset();
    MEMOBS_REGION_BEGIN("fork_outer");
    pid = fork();
    if (pid == 0) {
        int ok = memobs_region_depth() == 1;
        MEMOBS_REGION_END(); /* the child goes on inside the region it was forked in */
        ok = ok && memobs_region_depth() == 0 && stats_of("fork_outer").count == 1;
        MEMOBS_REGION_BEGIN("fork_child");
        MEMOBS_REGION_END();
        ok = ok && stats_of("fork_child").count == 1;
        _exit(ok ? 0 : 1);
    }
    CHECK(pid > 0);
    if (pid > 0) waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_U64(1, memobs_region_depth());
    MEMOBS_REGION_END();
    CHECK_U64(1, stats_of("fork_outer").count);
    CHECK_U64(0, stats_of("fork_child").count); /* the child's stays in the child */
}

#ifdef __cplusplus
static int scoped(int fail) {
    MEMOBS_REGION("scoped_outer");
    MEMOBS_REGION("scoped_inner");
    if (fail) throw 7;
    return memobs_region_depth();
}
static void test_scoped(void) {
    int caught = 0;
    memobs_reset();
    CHECK_U64(2, scoped(0));
    CHECK_U64(0, memobs_region_depth());
    try {
        scoped(1);
    } catch (int) {
        caught = 1;
    }
    CHECK_U64(1, caught);
    CHECK_U64(0, memobs_region_depth()); /* unwinding ended both */
    CHECK_U64(2, stats_of("scoped_outer").count);
    CHECK_U64(2, stats_of("scoped_inner").count);
}
#endif

static void test_summary(void) {
    char *t;
    FILE *f;
    log_start();
    memobs_reset();
    MEMOBS_REGION_BEGIN("sum_region");
    MEMOBS_REGION_END();
    MEMOBS_MARK("sum_mark");
    memobs_region_end(); /* a problem */
    f = tmpfile();
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    t = read_file(f);
    fclose(f);
    CHECK_HAS(t, "  region                              count      total       mean        max  markers\n");
    CHECK_HAS(t, "  sum_region                              1 ");
    CHECK_HAS(t, "  sum_mark                                0          -          -          -        1\n");
    CHECK_HAS(t, "1 region ends with no region open");
    CHECK(strstr(t, "reset_me") == NULL); /* names unused in the window are not listed */
    free(t);
    f = tmpfile();
    memobs_write_summary(f, MEMOBS_FORMAT_JSON);
    t = read_file(f);
    fclose(f);
    CHECK_HAS(t, "\"region_unmatched_ends\":1,\"region_too_deep\":0,\"region_names_dropped\":0}");
    CHECK_HAS(t, ",\"regions\":[{\"name\":\"sum_region\",\"count\":1,\"timed\":1,");
    CHECK_HAS(t, "{\"name\":\"sum_mark\",\"count\":0,\"timed\":0,\"total_ns\":0,\"mean_ns\":0,\"max_ns\":0,\"marks\":1,"
                 "\"collective\":false}]");
    free(t);
    log_stop();
}

#endif /* MEMOBS_MAX_REGIONS != 8 */

/* Scenario files for tests/core/test_regions.sh. */
static int scenario_trace(const char *path) {
    memobs_timeline_start(4096);
    {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL); /* another thread, its own track; its oldest events dropped */
        pthread_join(t, NULL);
    }
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_REGION_BEGIN("step");
    MEMOBS_REGION_BEGIN("nccl all_reduce");
    MEMOBS_MARK("evict");
    MEMOBS_REGION_END();
    MEMOBS_REGION_BEGIN("odd \"<name>\" \xff");
    MEMOBS_REGION_END();
    MEMOBS_REGION_END();
    MEMOBS_REGION_BEGIN("still open"); /* not in the trace: it has not ended */
    return memobs_write_timeline_file(path) != MEMOBS_OK;
}

static int scenario_prom(const char *path) {
    memobs_region_intern("never used");
    MEMOBS_REGION_BEGIN("decode step");
    MEMOBS_REGION_END();
    MEMOBS_REGION_BEGIN("odd \"label\" \\ \n \xff value");
    MEMOBS_REGION_END();
    MEMOBS_MARK("a marker");
    memobs_region_end();
    {
        FILE *f = fopen(path, "w");
        int rc = f ? memobs_write_prometheus(f) : MEMOBS_ERR_IO;
        if (f) fclose(f);
        return rc != MEMOBS_OK;
    }
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;
static void *hold_open(void *arg) {
    (void)arg;
    MEMOBS_REGION_BEGIN("kv offload");
    pthread_mutex_lock(&mu);
    stage = 1;
    pthread_cond_broadcast(&cv);
    while (stage != 2) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    MEMOBS_REGION_END();
    return NULL;
}

static int scenario_stormlog(const char *path) {
    pthread_t t;
    int rc;
    memobs_sample_now(); /* nothing open */
    pthread_create(&t, NULL, hold_open, NULL);
    pthread_mutex_lock(&mu);
    while (stage != 1) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    MEMOBS_REGION_BEGIN("decode_step");
    MEMOBS_REGION_BEGIN("nccl all_gather");
    memobs_sample_now(); /* two threads' regions */
    MEMOBS_MARK("barrier sync");
    MEMOBS_REGION_END();
    MEMOBS_REGION_END();
    pthread_mutex_lock(&mu);
    stage = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    memobs_sample_now();
    rc = memobs_write_stormlog_file(path);
    return rc != MEMOBS_OK;
}

#if MEMOBS_MAX_REGIONS == 8
static void test_table_full(void) {
    char name[16];
    int i;
    memobs_region_t id[12];
    log_start();
    memobs_reset();
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "full_%d", i);
        id[i] = memobs_region_intern(name);
    }
    for (i = 0; i < 7; i++) CHECK_U64((uint64_t)(i + 1), (uint64_t)id[i]); /* "(other)" is id 0 */
    for (i = 7; i < 12; i++) CHECK_U64(0, (uint64_t)id[i]);
    CHECK_U64(1, log_has("region name 'full_7' not kept: all MEMOBS_MAX_REGIONS=8 names are taken"));
    CHECK_U64(1, log_count); /* once */
    memobs_region_begin("full_9");
    memobs_region_end();
    MEMOBS_REGION_BEGIN("full_10");
    MEMOBS_REGION_END();
    memobs_mark("full_11");
    memobs_region_begin("full_3");
    memobs_region_end();
    snap();
    CHECK_U64(3, S.region_names_dropped);
    CHECK_U64(2, stats_of("(other)").count);
    CHECK_U64(1, stats_of("(other)").marks);
    CHECK_U64(1, stats_of("full_3").count);
    CHECK_U64(8, memobs_get_regions(NULL, 0));
    log_stop();
}
#endif

#endif /* !MEMOBS_DISABLE */

#ifdef MEMOBS_DISABLE
/* Compiled out: the macros are nothing, the functions keep nothing. */
static void test_compiled_out(void) {
    int before = memobs_region_depth();
    MEMOBS_REGION_BEGIN("off");
    MEMOBS_MARK("off");
    memobs_region_begin("off_fn");
    memobs_mark("off_fn");
    CHECK_U64(0, before);
    CHECK_U64(0, memobs_region_depth());
    memobs_region_end();
    MEMOBS_REGION_END();
    snap();
    CHECK_U64(0, S.region_unmatched_ends);
    CHECK_U64(0, stats_of("off_fn").count + stats_of("off_fn").marks);
#ifdef __cplusplus
    {
        MEMOBS_REGION("off_scoped");
        CHECK_U64(0, memobs_region_depth());
    }
#endif
}
#endif

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
#ifdef MEMOBS_DISABLE
    (void)argc;
    (void)argv;
    RUN(test_compiled_out);
#else
    if (argc > 2 && !strcmp(argv[1], "trace")) return scenario_trace(argv[2]);
    if (argc > 2 && !strcmp(argv[1], "prom")) return scenario_prom(argv[2]);
    if (argc > 2 && !strcmp(argv[1], "stormlog")) return scenario_stormlog(argv[2]);
#if MEMOBS_MAX_REGIONS == 8
    RUN(test_table_full);
#else
    RUN(test_nesting);
    RUN(test_marks_and_collective);
    RUN(test_unmatched_and_bad);
    RUN(test_too_deep);
    RUN(test_odd_names);
    RUN(test_threads);
    RUN(test_thread_exit_open);
    RUN(test_timing_switch);
    RUN(test_hook);
    RUN(test_reset);
    RUN(test_fork);
#ifdef __cplusplus
    RUN(test_scoped);
#endif
    RUN(test_summary);
#endif
#endif
    return CHECK_DONE();
}
