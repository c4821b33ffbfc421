/* Tests of the timeline of memobs.h (the event ring and the Chrome trace
   writer). Built as C and as C++, and under ASan+UBSan and TSan
   (tests/outputs/test_timeline.sh).

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
     order PATH     2 threads take turns: the merged trace is in turn order
     fork PATH      fork() while a thread records; the child records and
                    writes PATH
     off PATH       the timeline never switched on
     env            MEMOBS_TIMELINE / MEMOBS_TIMELINE_EVENTS set by the script: a few
                    records, then exit (the trace is written at exit)
     env_bad        malformed MEMOBS_TIMELINE_EVENTS: the default capacity */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
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
    memobs_timeline_get_stats(&st);
    return st;
}

/* The trace as text; the caller frees it. */
static char *trace_text(void) {
    FILE *f = tmpfile();
    char *buf;
    if (!f) return NULL;
    CHECK_U64(MEMOBS_OK, memobs_write_timeline(f));
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
                     "timeline is off, so this trace holds no events: turn it on with memobs_timeline_start(N), "
                     "MEMOBS_TIMELINE=PATH or MEMOBS_TIMELINE_EVENTS=N before the work to be traced\"}");
        free(t);
    }
    free(trace_text());
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_write_timeline: the timeline is off, so this trace holds no events"));
    log_stop();
}

static void test_counts(void) {
    memobs_timeline_stats_t st;
    char *t;
    int i;
    log_start();
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(100));
    st = stats();
    CHECK_U64(100, st.capacity);
    CHECK_U64(0, st.recorded);
    for (i = 0; i < 7; i++) MEMOBS_RECORD_D2H(10, 0);
    memobs_record_xfer(MEMOBS_DIR_D2D, 3, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer(MEMOBS_DIR_D2D, 3, (memobs_phase_t)7); /* bad: counted as a bad record, not on the timeline */
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_DECODE, 1000);
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
        CHECK_HAS(t, "\"recorded\":11,\"kept\":11,\"dropped\":0,\"in_trace\":11,");
        free(t);
    }
    /* memobs_reset() leaves the ring alone */
    memobs_reset();
    CHECK_U64(11, stats().kept);
    /* enabling again starts an empty ring */
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(50));
    st = stats();
    CHECK_U64(50, st.capacity);
    CHECK_U64(0, st.recorded);
    /* off: nothing recorded, the ring freed */
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
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
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(5));
    for (i = 1; i <= 1000; i++) memobs_record_xfer(MEMOBS_DIR_H2D, i, MEMOBS_PHASE_PREFILL);
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
        CHECK_HAS(t, "\"recorded\":1000,\"kept\":5,\"dropped\":995,\"in_trace\":5,");
        free(t);
    }
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* Drops per thread, and a thread's events outliving it: capacity 256 is 64
   chunks of 4. Thread A records 1000 events and exits: it keeps the newest
   256 (its chunks recycled oldest first), 744 dropped. Thread B then
   records 10: it takes the 3 oldest of A's chunks, dropping 12 more of A's. */
static void *drops_thread(void *p) {
    unsigned n = (unsigned)(uintptr_t)p, i;
    for (i = 0; i < n; i++) MEMOBS_RECORD_H2D(1, 1);
    return NULL;
}

static void run_thread(void *(*fn)(void *), void *arg) {
    pthread_t th;
    CHECK_U64(0, (uint64_t)pthread_create(&th, NULL, fn, arg));
    pthread_join(th, NULL);
}

static void test_thread_drops(void) {
    memobs_timeline_stats_t st;
    memobs_timeline_thread_t rows[8];
    size_t n;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(256));
    st = stats();
    CHECK_U64(256, st.capacity);
    CHECK_U64(4, st.chunk);
    run_thread(drops_thread, (void *)(uintptr_t)1000);
    st = stats();
    CHECK_U64(1000, st.recorded);
    CHECK_U64(256, st.kept); /* A exited; its events stay */
    CHECK_U64(744, st.dropped);
    CHECK_U64(0, st.threads); /* no live thread owns a chunk */
    run_thread(drops_thread, (void *)(uintptr_t)10);
    st = stats();
    CHECK_U64(1010, st.recorded);
    CHECK_U64(254, st.kept);
    CHECK_U64(756, st.dropped);
    n = memobs_timeline_get_threads(rows, 8);
    CHECK_U64(2, n);
    if (n == 2) {
        CHECK_U64(1, rows[1].thread > rows[0].thread); /* A first: numbers go in order of first event */
        CHECK_U64(1000, rows[0].recorded);
        CHECK_U64(244, rows[0].kept);
        CHECK_U64(756, rows[0].dropped);
        CHECK_U64(10, rows[1].recorded);
        CHECK_U64(10, rows[1].kept);
        CHECK_U64(0, rows[1].dropped);
    }
    CHECK_U64(2, memobs_timeline_get_threads(NULL, 0)); /* counting only */
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* The default geometry: 64 chunks of 1024. A continued chunk's second
   owner starts past slot 255 (its segment records a first slot of 300),
   and each owner's events are counted, kept and then dropped, exactly. */
static pthread_barrier_t park_in, park_out;
static void *park_thread(void *p) {
    (void)p;
    MEMOBS_RECORD_H2D(1, 1);
    pthread_barrier_wait(&park_in);
    pthread_barrier_wait(&park_out);
    return NULL;
}

static void test_default_geometry(void) {
    memobs_timeline_stats_t st;
    memobs_timeline_thread_t rows[8];
    pthread_t th[65];
    size_t n;
    unsigned k;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(65536));
    st = stats();
    CHECK_U64(65536, st.capacity);
    CHECK_U64(1024, st.chunk);
    run_thread(drops_thread, (void *)(uintptr_t)300); /* A: 300 events, its chunk left with room */
    run_thread(drops_thread, (void *)(uintptr_t)10);  /* B continues it at slot 300 */
    st = stats();
    CHECK_U64(310, st.recorded);
    CHECK_U64(310, st.kept);
    n = memobs_timeline_get_threads(rows, 8);
    CHECK_U64(2, n);
    if (n == 2) {
        CHECK_U64(300, rows[0].kept);
        CHECK_U64(10, rows[1].kept);
    }
    run_thread(drops_thread, (void *)(uintptr_t)200000); /* C: A's and B's chunk goes too */
    n = memobs_timeline_get_threads(rows, 8);
    CHECK_U64(3, n);
    if (n == 3) {
        CHECK_U64(300, rows[0].dropped);
        CHECK_U64(0, rows[0].kept);
        CHECK_U64(10, rows[1].dropped);
        CHECK_U64(200000, rows[2].recorded);
        CHECK_U64(200000, rows[2].kept + rows[2].dropped);
    }
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
    /* 65 threads recording at once: 64 own a chunk, the last drops its event */
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(65536));
    pthread_barrier_init(&park_in, NULL, 2);
    pthread_barrier_init(&park_out, NULL, 66);
    for (k = 0; k < 65; k++) { /* one at a time: the 65th is surely the one without a chunk */
        CHECK_U64(0, (uint64_t)pthread_create(&th[k], NULL, park_thread, NULL));
        pthread_barrier_wait(&park_in);
    }
    st = stats();
    CHECK_U64(65, st.recorded);
    CHECK_U64(64, st.kept);
    CHECK_U64(1, st.dropped);
    CHECK_U64(64, st.threads);
    pthread_barrier_wait(&park_out);
    for (k = 0; k < 65; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&park_in);
    pthread_barrier_destroy(&park_out);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
    /* a larger capacity: more chunks of the same size */
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(262144));
    st = stats();
    CHECK_U64(262144, st.capacity);
    CHECK_U64(1024, st.chunk);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* Thousands of short-lived threads, 3 events each: each exited thread
   leaves the room in its chunk to the next one, so the 1024 events (64
   chunks of 16) fill up: 6000 events are 375 whole chunks, the newest 64
   kept; memory stays the capacity (tests/core/test_churn.sh: 100k threads). */
#define MANY_THREADS 2000
static void test_many_threads(void) {
    memobs_timeline_stats_t st;
    memobs_timeline_thread_t rows[300];
    size_t n, i;
    uint64_t rec = 0;
    unsigned k;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(1024));
    for (k = 0; k < MANY_THREADS; k++) run_thread(drops_thread, (void *)(uintptr_t)3);
    st = stats();
    CHECK_U64(1024, st.capacity);
    CHECK_U64(3 * MANY_THREADS, st.recorded);
    CHECK_U64(1024, st.kept);
    CHECK_U64(3 * MANY_THREADS - 1024, st.dropped);
    n = memobs_timeline_get_threads(rows, 300);
    CHECK_U64(1, n <= 256); /* threads from 256 on share the last row */
    for (i = 0; i < n && i < 300; i++) rec += rows[i].recorded;
    CHECK_U64(3 * MANY_THREADS, rec);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* memobs_timeline_start while 4 threads record: the old pool is freed
   only once no push is inside it (ASan would see a use after free). */
static int swap_stop;
static void *swap_thread(void *p) {
    unsigned k = (unsigned)(uintptr_t)p;
    while (!__atomic_load_n(&swap_stop, __ATOMIC_ACQUIRE)) {
        memobs_record_xfer((memobs_dir_t)(k % 3), k, MEMOBS_PHASE_DECODE);
        memobs_set_phase(k & 1 ? MEMOBS_PHASE_DECODE : MEMOBS_PHASE_PREFILL);
    }
    return NULL;
}

static void test_enable_while_recording(void) {
    static const size_t caps[] = {64, 0, 1000, 4096, 5, 0, 65536};
    pthread_t th[4];
    memobs_timeline_stats_t st;
    unsigned k;
    __atomic_store_n(&swap_stop, 0, __ATOMIC_RELEASE);
    for (k = 0; k < 4; k++) CHECK_U64(0, (uint64_t)pthread_create(&th[k], NULL, swap_thread, (void *)(uintptr_t)k));
    for (k = 0; k < 140; k++) {
        CHECK_U64(MEMOBS_OK, caps[k % 7] ? memobs_timeline_start(caps[k % 7]) : memobs_timeline_stop());
        if (k % 10 == 0) sched_yield();
    }
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(1000));
    while (stats().recorded < 100) sched_yield(); /* the threads moved to the last pool */
    __atomic_store_n(&swap_stop, 1, __ATOMIC_RELEASE);
    for (k = 0; k < 4; k++) pthread_join(th[k], NULL);
    st = stats();
    CHECK_U64(1, st.recorded >= 100 && st.kept + st.dropped == st.recorded && st.kept <= 1000);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

static void test_bad_input(void) {
    log_start();
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_timeline(NULL));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_write_timeline: NULL FILE"));
    memobs_timeline_get_stats(NULL); /* one warning, no crash */
    CHECK_U64(2, log_count);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_timeline_start((size_t)1 << 27));
    CHECK_U64(3, log_count);
    CHECK_U64(1, log_has("memobs_timeline_start(134217728): at most 67108864 events; unchanged"));
    CHECK_U64(0, stats().capacity);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_timeline_start(0));
    CHECK_U64(4, log_count);
    CHECK_U64(1, log_has("memobs_timeline_start(0): no events; unchanged (memobs_timeline_stop() turns it off)"));
    CHECK_U64(0, stats().capacity);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_timeline_file(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_timeline_file(""));
    CHECK_U64(6, log_count);
    log_stop();
}

static void test_unwritable(void) {
    FILE *full;
    log_start();
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(16));
    MEMOBS_RECORD_H2D(1, 1);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO,
              (uint64_t)(int64_t)memobs_write_timeline_file("/nonexistent/dir/trace.json"));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot write the Chrome trace to '/nonexistent/dir/trace.json': cannot create a temporary "
                         "file in its folder: No such file or directory"));
    /* a device that takes nothing: the write fails at the flush */
    full = fopen("/dev/full", "w");
    if (full) {
        log_count = 0;
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_timeline(full));
        fclose(full);
        log_count = 0;
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_timeline_file("/dev/full"));
        CHECK_U64(1, log_count);
        CHECK_U64(1, log_has("cannot write the Chrome trace to '/dev/full': No space left on device"));
    }
    /* the ring is intact */
    CHECK_U64(1, stats().kept);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
    log_stop();
}

/* ---- scenarios (one per process) ----------------------------------------- */

/* The sequence tests/python/chrome_trace_check.py expects for "known". */
static int scenario_known(const char *path) {
    memobs_timeline_stats_t st;
    static const char odd[] = "tag \"q\" \\ \n\x01 caf\xc3\xa9";
    if (memobs_timeline_start(1000) != MEMOBS_OK) return 1;
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_H2D_CUR(1000);
    MEMOBS_RECORD_H2D_CUR(2000);
    MEMOBS_RECORD_H2D_CUR(3000);
    MEMOBS_RECORD_D2D(7, 1);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_PREFILL, 2000000); /* 2 ms */
    /* overlaps it: two tracks. A timed copy ends when reported and starts
       its duration before, so the two overlap only if this call comes less
       than its duration after the first: 60 s, not 2 ms, which a preemption
       between the two calls on a loaded machine can exceed. It starts first,
       so it takes the first track and the 2 ms copy the second. */
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 8192, MEMOBS_PHASE_PREFILL, 60000000000ull);
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
    return memobs_write_timeline_file(path) != MEMOBS_OK;
}

static int scenario_overflow(const char *path) {
    uint64_t i;
    if (memobs_timeline_start(8) != MEMOBS_OK) return 1;
    for (i = 1; i <= 20; i++) MEMOBS_RECORD_D2H(i, 0);
    return memobs_write_timeline_file(path) != MEMOBS_OK;
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
    if (memobs_timeline_start(100) != MEMOBS_OK) return 1;
    for (i = 0; i < sizeof escape_tags / sizeof escape_tags[0]; i++)
        MEMOBS_TRACK_ALLOC_N(FP(0x1000 * (i + 1)), i + 1, MEMOBS_MEM_HOST, escape_tags[i]);
    return memobs_write_timeline_file(path) != MEMOBS_OK;
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
        memobs_record_xfer((memobs_dir_t)(k % 3), (uint64_t)k * 1000000u + i, MEMOBS_PHASE_DECODE);
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
    char *t, want[64];
    if (memobs_timeline_start(TH_CAP) != MEMOBS_OK) return 1;
    for (k = 0; k < TH_N; k++) pthread_create(&th[k], NULL, th_record, (void *)(uintptr_t)k);
    __atomic_store_n(&th_go, 1, __ATOMIC_RELEASE);
    /* write while they record (once they have started): the first to a
       file, the rest thrown away */
    while (stats().recorded < 1000) sched_yield();
    if (memobs_write_timeline_file(path) != MEMOBS_OK) bad = 1;
    for (writes = 0; writes < 10; writes++) {
        FILE *f = fopen("/dev/null", "w");
        if (!f || memobs_write_timeline(f) != MEMOBS_OK) bad = 1;
        if (f) fclose(f);
    }
    for (k = 0; k < TH_N; k++) pthread_join(th[k], NULL);
    st = stats();
    /* records + (alloc + free) every 16th + a phase every 1000th, per thread */
    /* each thread's last chunk joined the queue part-filled when it exited */
    if (st.recorded != TH_N * (TH_ITERS + 2 * (TH_ITERS / 16) + TH_ITERS / 1000) ||
        st.kept + st.dropped != st.recorded || st.kept > TH_CAP || st.kept + TH_N * (st.chunk - 1) < TH_CAP ||
        st.chunk != TH_CAP / 64) {
        printf("    # threads: recorded %llu kept %llu dropped %llu\n", (unsigned long long)st.recorded,
               (unsigned long long)st.kept, (unsigned long long)st.dropped);
        bad = 1;
    }
    t = trace_text();
    snprintf(want, sizeof want, "\"in_trace\":%llu,", (unsigned long long)st.kept);
    if (!t || !strstr(t, want)) {
        printf("    # threads: the final trace does not hold the %llu events kept\n", (unsigned long long)st.kept);
        bad = 1;
    }
    free(t);
    return bad;
}

/* Two threads take turns (a baton): record k goes to the thread whose turn
   it is, bytes k, so the trace's time order must give 1, 2, 3, ... though
   the records sit in two threads' chunks. */
#define ORDER_N 3000
static int order_turn;
static void *order_thread(void *p) {
    int me = (int)(uintptr_t)p, k;
    for (k = 1; k <= ORDER_N; k++) {
        if ((k & 1) != me) continue;
        while (__atomic_load_n(&order_turn, __ATOMIC_ACQUIRE) != k) sched_yield();
        memobs_record_xfer(MEMOBS_DIR_H2D, (uint64_t)k, MEMOBS_PHASE_PREFILL);
        __atomic_store_n(&order_turn, k + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int scenario_order(const char *path) {
    pthread_t th[2];
    int k;
    if (memobs_timeline_start(65536) != MEMOBS_OK) return 1;
    __atomic_store_n(&order_turn, 1, __ATOMIC_RELEASE);
    for (k = 0; k < 2; k++) pthread_create(&th[k], NULL, order_thread, (void *)(uintptr_t)k);
    for (k = 0; k < 2; k++) pthread_join(th[k], NULL);
    return memobs_write_timeline_file(path) != MEMOBS_OK;
}

/* fork() while a thread records: the child records and writes a trace of
   its own (the parent thread's chunk is readable there, the child's
   events are in it), the parent goes on. */
static int fork_stop;
static void *fork_thread(void *p) {
    (void)p;
    while (!__atomic_load_n(&fork_stop, __ATOMIC_ACQUIRE)) MEMOBS_RECORD_D2D(7, 0);
    return NULL;
}

static int scenario_fork(const char *path) {
    pthread_t th;
    pid_t pid;
    int st = 1, i;
    memobs_timeline_stats_t a;
    if (memobs_timeline_start(4096) != MEMOBS_OK) return 1;
    pthread_create(&th, NULL, fork_thread, NULL);
    while (stats().recorded < 1000) sched_yield();
    pid = fork();
    if (pid == 0) {
        for (i = 1; i <= 10; i++) memobs_record_xfer(MEMOBS_DIR_H2D, 1000u + (uint64_t)i, MEMOBS_PHASE_DECODE);
        a = stats();
        _exit(memobs_write_timeline_file(path) != MEMOBS_OK || a.kept < 10 || a.threads != 1 ? 3 : 0);
    }
    if (pid > 0) waitpid(pid, &st, 0);
    for (i = 0; i < 100; i++) MEMOBS_RECORD_H2D(1, 0); /* the parent goes on */
    __atomic_store_n(&fork_stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    return pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static int scenario_env(void) {
    /* MEMOBS_TIMELINE=...: on from start-up, written at exit */
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
    if (!strcmp(mode, "order")) return scenario_order(path);
    if (!strcmp(mode, "fork")) return scenario_fork(path);
    if (!strcmp(mode, "off")) {
        MEMOBS_RECORD_H2D(5, 1);
        memobs_set_phase(MEMOBS_PHASE_PREFILL);
        return memobs_write_timeline_file(path) != MEMOBS_OK;
    }
    if (!strcmp(mode, "env") || !strcmp(mode, "env_bad")) return scenario_env();
    RUN(test_off_by_default);
    RUN(test_counts);
    RUN(test_overflow_exact);
    RUN(test_thread_drops);
    RUN(test_default_geometry); /* before test_many_threads: threads from 256 on share one row */
    RUN(test_many_threads);
    RUN(test_enable_while_recording);
    RUN(test_bad_input);
    RUN(test_unwritable);
    return CHECK_DONE();
}
