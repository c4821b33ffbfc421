/* Tests of the timeline of memobs.h (the event ring and the Chrome trace
   writer). Built as C and as C++, and under ASan+UBSan and TSan
   (tests/test_timeline.sh).

   Without arguments it runs the in-process tests (counts, overflow, off,
   bad input, unwritable destinations). With a mode argument it runs one
   scenario in a fresh process and writes a trace to the path given, which
   tests/python/chrome_trace_check.py then parses and checks:
     known PATH     a known sequence of records, allocations, frees, phase
                    changes and samples (the checker knows the sequence)
     overflow PATH  capacity 8, 20 records: the newest 8 kept
     escape PATH    allocation tags with quotes, backslashes, newlines,
                    control characters, UTF-8 and a tag cut inside a character
     threads PATH   4 threads record and allocate while the main thread
                    writes traces; PATH is one written mid-run
     off PATH       the timeline never switched on
     env            MEMOBS_TRACE / MEMOBS_TRACE_EVENTS set by the script: a few
                    records, then exit (the trace is written at exit)
     env_bad        malformed MEMOBS_TRACE_EVENTS: the default capacity */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../memobs.h"
#include "check.h"
#include "memobs_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "timeline"
#endif

#define FP(x) ((const void *)(uintptr_t)(x)) /* a fake pointer: the tracker never dereferences one */

static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0;
    memobs_set_log(capture_log, NULL);
}

static memobs_timeline_stats_t stats(void) {
    memobs_timeline_stats_t st;
    memobs_timeline_stats(&st);
    return st;
}

/* The trace as text; the caller frees it. */
static char *trace_text(void) {
    FILE *f = tmpfile();
    char *buf;
    if (!f) return NULL;
    CHECK_U64(MEMOBS_OK, memobs_write_chrome_trace(f));
    buf = read_file(f);
    fclose(f);
    return buf;
}

static unsigned count_of(const char *hay, const char *needle) {
    unsigned n = 0;
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) n++, p++;
    return n;
}

/* ---- in-process tests ---------------------------------------------------- */

static void test_off_by_default(void) {
    memobs_timeline_stats_t st = stats();
    char *t;
    CHECK_U64(0, st.capacity);
    MEMOBS_RECORD_H2D(100, 1);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    st = stats();
    CHECK_U64(0, st.recorded);
    CHECK_U64(0, st.kept);
    CHECK_U64(0, memobs__tl_on.v);
    log_start();
    t = trace_text();
    CHECK(t != NULL);
    if (t) {
        CHECK_U64(0, count_of(t, "\"ph\":\"X\""));
        /* a trace of nothing says why, in the file and once in the log */
        CHECK_HAS(t, "\"rank\":0,\"timeline\":\"off\",\"capacity\":0,");
        CHECK_HAS(t, "\"recorded\":0,\"kept\":0,\"dropped\":0,\"in_trace\":0,\"note\":\"the "
                     "timeline is off, so this trace holds no events: turn it on with memobs_timeline_enable(N), "
                     "MEMOBS_TRACE=PATH or MEMOBS_TRACE_EVENTS=N before the work to be traced\"}");
        free(t);
    }
    free(trace_text());
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_write_chrome_trace: the timeline is off, so this trace holds no events"));
    log_stop();
}

static void test_counts(void) {
    memobs_timeline_stats_t st;
    char *t;
    int i;
    log_start();
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(100));
    st = stats();
    CHECK_U64(100, st.capacity);
    CHECK_U64(0, st.recorded);
    for (i = 0; i < 7; i++) MEMOBS_RECORD_D2H(10, 0);
    memobs_record(MEMOBS_DIR_D2D, MEMOBS_PHASE_PREFILL, 3);
    memobs_record(MEMOBS_DIR_D2D, (memobs_phase_t)7, 3); /* bad: counted as a bad record, not on the timeline */
    memobs_record_timed(MEMOBS_DIR_H2D, MEMOBS_PHASE_DECODE, 4096, 1000);
    memobs_track_alloc_full(FP(0x1000), 64, MEMOBS_MEM_HOST, -1, NULL, "t", 0);
    memobs_track_free(FP(0x1000));
    memobs_track_free(FP(0x2000)); /* unknown: not an event */
    st = stats();
    CHECK_U64(7 + 1 + 1 + 2, st.recorded);
    CHECK_U64(11, st.kept);
    CHECK_U64(0, st.dropped);
    CHECK_U64(2, log_count); /* the bad record, the unknown free */
    log_stop();
    t = trace_text();
    if (t) {
        CHECK_U64(7, count_of(t, "\"name\":\"D2H decode\""));
        CHECK_U64(1, count_of(t, "\"name\":\"D2D prefill\""));
        CHECK_U64(1, count_of(t, "\"name\":\"alloc host\""));
        CHECK_U64(1, count_of(t, "\"name\":\"free host\""));
        CHECK_HAS(t, "\"name\":\"D2H bytes\",\"pid\"");
        CHECK_HAS(t, "\"args\":{\"value\":70}");
        CHECK_HAS(t, "\"dur\":1.000,\"cat\":\"device copy\",\"args\":{\"bytes\":4096,\"phase\":\"decode\",\"GB/s\":4.096}");
        CHECK_HAS(t, "\"recorded\":11,\"kept\":11,\"dropped\":0,\"in_trace\":11}");
        free(t);
    }
    /* memobs_reset() leaves the ring alone */
    memobs_reset();
    CHECK_U64(11, stats().kept);
    /* enabling again starts an empty ring */
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(50));
    st = stats();
    CHECK_U64(50, st.capacity);
    CHECK_U64(0, st.recorded);
    /* off: nothing recorded, the ring freed */
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(0));
    MEMOBS_RECORD_H2D(1, 1);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    st = stats();
    CHECK_U64(0, st.capacity);
    CHECK_U64(0, st.recorded);
}

static void test_overflow_exact(void) {
    memobs_timeline_stats_t st;
    char *t, want[64];
    uint64_t i;
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(5));
    for (i = 1; i <= 1000; i++) memobs_record(MEMOBS_DIR_H2D, MEMOBS_PHASE_PREFILL, i);
    st = stats();
    CHECK_U64(1000, st.recorded);
    CHECK_U64(5, st.kept);
    CHECK_U64(995, st.dropped);
    t = trace_text();
    if (t) {
        CHECK_U64(5, count_of(t, "\"name\":\"H2D prefill\""));
        for (i = 996; i <= 1000; i++) {
            snprintf(want, sizeof want, "\"args\":{\"bytes\":%llu,", (unsigned long long)i);
            CHECK_U64(1, count_of(t, want));
        }
        CHECK_U64(0, count_of(t, "\"args\":{\"bytes\":995,"));
        /* cumulative bytes start at the oldest kept record */
        CHECK_HAS(t, "\"args\":{\"value\":996}");
        CHECK_HAS(t, "\"args\":{\"value\":4990}");
        CHECK_HAS(t, "\"recorded\":1000,\"kept\":5,\"dropped\":995,\"in_trace\":5}");
        free(t);
    }
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(0));
}

static void test_bad_input(void) {
    log_start();
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_chrome_trace(NULL));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_write_chrome_trace: NULL FILE"));
    memobs_timeline_stats(NULL); /* one warning, no crash */
    CHECK_U64(2, log_count);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_timeline_enable((size_t)1 << 27));
    CHECK_U64(3, log_count);
    CHECK_U64(1, log_has("memobs_timeline_enable(134217728): at most 67108864 events; unchanged"));
    CHECK_U64(0, stats().capacity);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_chrome_trace_file(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_chrome_trace_file(""));
    CHECK_U64(5, log_count);
    log_stop();
}

static void test_unwritable(void) {
    FILE *full;
    log_start();
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(16));
    MEMOBS_RECORD_H2D(1, 1);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO,
              (uint64_t)(int64_t)memobs_write_chrome_trace_file("/nonexistent/dir/trace.json"));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot open '/nonexistent/dir/trace.json' for the Chrome trace"));
    /* a device that takes nothing: the write fails at the flush */
    full = fopen("/dev/full", "w");
    if (full) {
        log_count = 0;
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_chrome_trace(full));
        fclose(full);
        log_count = 0;
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_chrome_trace_file("/dev/full"));
        CHECK_U64(1, log_count);
        CHECK_U64(1, log_has("writing the Chrome trace to '/dev/full' failed: i/o error"));
    }
    /* the ring is intact */
    CHECK_U64(1, stats().kept);
    CHECK_U64(MEMOBS_OK, memobs_timeline_enable(0));
    log_stop();
}

/* ---- scenarios (one per process) ----------------------------------------- */

/* The sequence tests/python/chrome_trace_check.py expects for "known". */
static int scenario_known(const char *path) {
    memobs_timeline_stats_t st;
    static const char odd[] = "tag \"q\" \\ \n\x01 caf\xc3\xa9";
    if (memobs_timeline_enable(1000) != MEMOBS_OK) return 1;
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_H2D_CUR(1000);
    MEMOBS_RECORD_H2D_CUR(2000);
    MEMOBS_RECORD_H2D_CUR(3000);
    MEMOBS_RECORD_D2D(7, 1);
    memobs_record_timed(MEMOBS_DIR_H2D, MEMOBS_PHASE_PREFILL, 4096, 2000000); /* 2 ms */
    /* overlaps it: two tracks. A timed copy ends when reported and starts
       its duration before, so the two overlap only if this call comes less
       than its duration after the first: 60 s, not 2 ms, which a preemption
       between the two calls on a loaded machine can exceed. It starts first,
       so it takes the first track and the 2 ms copy the second. */
    memobs_record_timed(MEMOBS_DIR_H2D, MEMOBS_PHASE_PREFILL, 8192, 60000000000ull);
    memobs_set_device(1);
    MEMOBS_TRACK_ALLOC_N(FP(0x10000), 1000, MEMOBS_MEM_DEVICE, "kv_cache");
    MEMOBS_TRACK_ALLOC_N(FP(0x20000), 300, MEMOBS_MEM_PINNED, odd);
    MEMOBS_TRACK_ALLOC(FP(0x30000), 500, MEMOBS_MEM_DEVICE);
    MEMOBS_TRACK_FREE(FP(0x10000));
    usleep(2000);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H_CUR(10);
    MEMOBS_RECORD_D2H_CUR(10);
    MEMOBS_RECORD_D2H_CUR(10);
    usleep(1000);
    memobs_set_phase(MEMOBS_PHASE_DECODE); /* the same phase: one slice */
    MEMOBS_RECORD_D2H_CUR(10);
    MEMOBS_RECORD_D2H_CUR(10);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_H2D_CUR(1);
    usleep(1000);
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    memobs__tl_sample(5000000123ull, "rss_bytes", 10);
    memobs__tl_sample(5000001123ull, "rss_bytes", 20);
    memobs__tl_sample(5000002123ull, "rss_bytes", 30);
    st = stats();
    if (st.recorded != 24 || st.kept != 24 || st.dropped != 0) {
        printf("    # known: recorded %llu kept %llu dropped %llu, want 24 24 0\n", (unsigned long long)st.recorded,
               (unsigned long long)st.kept, (unsigned long long)st.dropped);
        return 1;
    }
    return memobs_write_chrome_trace_file(path) != MEMOBS_OK;
}

static int scenario_overflow(const char *path) {
    uint64_t i;
    if (memobs_timeline_enable(8) != MEMOBS_OK) return 1;
    for (i = 1; i <= 20; i++) MEMOBS_RECORD_D2H(i, 0);
    return memobs_write_chrome_trace_file(path) != MEMOBS_OK;
}

/* Also in tests/python/chrome_trace_check.py. */
static const char *const escape_tags[] = {
    "quote \" and backslash \\ and slash /",
    "new\nline\rreturn\ttab",
    "ctl \x01\x02\x1f\x7f end",
    "utf8 caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x9a\x80",
    "{\"json\": [1, 2]} </script>",
    /* 62 bytes, then a 2-byte character the tag's 63-byte limit cuts */
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9",
    /* not UTF-8 at all: a lone continuation byte and an overlong slash */
    "bad \x80 \xc0\xaf end"};

static int scenario_escape(const char *path) {
    unsigned i;
    if (memobs_timeline_enable(100) != MEMOBS_OK) return 1;
    for (i = 0; i < sizeof escape_tags / sizeof escape_tags[0]; i++)
        MEMOBS_TRACK_ALLOC_N(FP(0x1000 * (i + 1)), i + 1, MEMOBS_MEM_HOST, escape_tags[i]);
    return memobs_write_chrome_trace_file(path) != MEMOBS_OK;
}

/* Threads: thread k records direction k % 3 with bytes k * 1000000 + i and
   allocates fake pointers whose size is derived from the address, so the
   checker can tell a torn event (fields of two events) from a real one. */
#define TH_N 4
#define TH_ITERS 20000
#define TH_CAP 4096
static int th_go;
static void *th_record(void *p) {
    unsigned k = (unsigned)(uintptr_t)p, i;
    while (!__atomic_load_n(&th_go, __ATOMIC_ACQUIRE)) {
    }
    for (i = 0; i < TH_ITERS; i++) {
        memobs_record((memobs_dir_t)(k % 3), MEMOBS_PHASE_DECODE, (uint64_t)k * 1000000u + i);
        if (i % 16 == 0) {
            uintptr_t a = ((uintptr_t)(k + 1) << 32) + (uintptr_t)i * 64u;
            memobs_track_alloc_full(FP(a), (uint64_t)(a % 1000003u) + 1u, MEMOBS_MEM_HOST, 0, NULL, NULL, 0);
            memobs_track_free(FP(a));
        }
        if (i % 1000 == 0) memobs_set_phase(i % 2000 ? MEMOBS_PHASE_PREFILL : MEMOBS_PHASE_DECODE);
    }
    return NULL;
}

static int scenario_threads(const char *path) {
    pthread_t th[TH_N];
    memobs_timeline_stats_t st;
    unsigned k, writes = 0;
    int bad = 0;
    char *t;
    if (memobs_timeline_enable(TH_CAP) != MEMOBS_OK) return 1;
    for (k = 0; k < TH_N; k++) pthread_create(&th[k], NULL, th_record, (void *)(uintptr_t)k);
    __atomic_store_n(&th_go, 1, __ATOMIC_RELEASE);
    /* write while they record (once they have started): the first to a
       file, the rest thrown away */
    while (stats().recorded < 1000) sched_yield();
    if (memobs_write_chrome_trace_file(path) != MEMOBS_OK) bad = 1;
    for (writes = 0; writes < 10; writes++) {
        FILE *f = fopen("/dev/null", "w");
        if (!f || memobs_write_chrome_trace(f) != MEMOBS_OK) bad = 1;
        if (f) fclose(f);
    }
    for (k = 0; k < TH_N; k++) pthread_join(th[k], NULL);
    st = stats();
    /* records + (alloc + free) every 16th + a phase every 1000th, per thread */
    if (st.recorded != TH_N * (TH_ITERS + 2 * (TH_ITERS / 16) + TH_ITERS / 1000) ||
        st.kept + st.dropped != st.recorded || st.kept != TH_CAP) {
        printf("    # threads: recorded %llu kept %llu dropped %llu\n", (unsigned long long)st.recorded,
               (unsigned long long)st.kept, (unsigned long long)st.dropped);
        bad = 1;
    }
    t = trace_text();
    if (!t || !strstr(t, "\"in_trace\":4096}")) {
        printf("    # threads: the final trace does not hold 4096 events\n");
        bad = 1;
    }
    free(t);
    return bad;
}

static int scenario_env(void) {
    /* MEMOBS_TRACE=...: on from start-up, written at exit */
    memobs_timeline_stats_t st = stats();
    printf("capacity %llu\npid %ld\n", (unsigned long long)st.capacity, (long)getpid());
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_H2D_CUR(11);
    MEMOBS_RECORD_H2D_CUR(22);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H_CUR(33);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const char *path = argc > 2 ? argv[2] : "";
    check__suite = TEST_SUITE;
    if (!strcmp(mode, "known")) return scenario_known(path);
    if (!strcmp(mode, "overflow")) return scenario_overflow(path);
    if (!strcmp(mode, "escape")) return scenario_escape(path);
    if (!strcmp(mode, "threads")) return scenario_threads(path);
    if (!strcmp(mode, "off")) {
        MEMOBS_RECORD_H2D(5, 1);
        memobs_set_phase(MEMOBS_PHASE_PREFILL);
        return memobs_write_chrome_trace_file(path) != MEMOBS_OK;
    }
    if (!strcmp(mode, "env") || !strcmp(mode, "env_bad")) return scenario_env();
    RUN(test_off_by_default);
    RUN(test_counts);
    RUN(test_overflow_exact);
    RUN(test_bad_input);
    RUN(test_unwritable);
    return CHECK_DONE();
}
