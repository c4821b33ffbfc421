/* tests/serving/handlers/handlers.c: records, counters, timings, request calls and
   tracked allocs/frees made from signal handlers (tests/serving/test_handlers.sh),
   and the limits of what one call may carry. One mode per run:

     storm ROUNDS [CALLS]
                  2 threads record in a loop (every transfer form, counters,
                  TTFT/TPOT samples, tracked alloc+free pairs) while a third
                  sends them SIGUSR1 and an interval timer SIGALRM; the
                  handler records too. Counts exact: loop + handler, both
                  counted here; a tracked pair refused in a handler (it
                  interrupted memobs on its thread) is counted in
                  signal_dropped, as two. Each round runs until the
                  handlers ran CALLS times (default 100).
     race ROUNDS  a fresh thread per round whose first record races a
                  SIGUSR1 sent at its start: counts exact.
     first        a signal raised inside a thread's first record (the
                  shard being acquired, the lock held: MEMOBS__SHARD_HOOK):
                  its handler's records are counted, its tracked pair and
                  request call refused and counted, nothing waits; the
                  summaries (text, JSON, Prometheus, HTML) show it.
     malloc       a signal raised inside MEMOBS_MALLOC while the tracker
                  holds a lock (its set-up, a stripe's table growing): the
                  handler's tracked pair is refused, its records counted.
     bounds       values above MEMOBS_MAX_BYTES / MEMOBS_MAX_NS refused and
                  counted as bad records; sums saturate.

   Prints TAP lines "ok - SUITE: ..." / "not ok - SUITE: ..." (storm and
   race: only on failure, the script counts runs); exits nonzero on any
   failure. A run that hangs is the script's timeout's to catch. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* Armed by the "malloc" mode: memobs' own allocations raise SIGUSR1 first. */
static void *test_malloc(size_t n);
#define MEMOBS_MALLOC(sz) test_malloc(sz)
#define MEMOBS_FREE(p) free(p)
/* Armed by the "first" mode: SIGUSR1 inside a first record's shard acquisition. */
static void test_shard_hook(void);
#define MEMOBS__SHARD_HOOK() test_shard_hook()
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#ifndef TEST_SUITE
#define TEST_SUITE "handlers"
#endif

static int failed; /* checks failed (workers add too) */
#define FAIL(...) (printf("    # " __VA_ARGS__), printf("\n"), __atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED))
#define EXPECT(what, want, got)                                                                               \
    do {                                                                                                      \
        unsigned long long e_ = (unsigned long long)(want), g_ = (unsigned long long)(got);                   \
        if (e_ != g_) FAIL("%s: expected %llu, got %llu", what, e_, g_);                                       \
    } while (0)

static void tap(const char *name, int before) {
    printf("%s - %s: %s\n", failed > before ? "not ok" : "ok", TEST_SUITE, name);
    fflush(stdout);
}

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* ======================================================================== */
/* What a handler records, counted by the test                              */
/* ======================================================================== */

#define SIG_BYTES 7u
static uint64_t h_calls;  /* handler invocations that recorded */
static uint64_t h_addr;   /* fake addresses of the handler's tracked blocks */
static memobs_counter_t h_counter;
static volatile sig_atomic_t h_with_request; /* the handler also begins and ends a request */
static volatile sig_atomic_t h_track = 1;     /* the handler tracks an alloc+free pair */

/* Every record form, a counter by handle and by site, a timing sample and a
   tracked alloc+free pair of an address no one else uses. Async-signal-safe. */
static void handler_body(void) {
    uint64_t a = 0x70000000u + (ADD(&h_addr, 1u) % 4096u) * 0x10000u;
    MEMOBS_RECORD_H2D(SIG_BYTES, 1);
    memobs_record_xfer(MEMOBS_DIR_D2H, SIG_BYTES, MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_D2D, SIG_BYTES, MEMOBS_PHASE_NONE);
    memobs_counter_add(h_counter, 1);
    MEMOBS_COUNTER_ADD("hs_sig_site", 2);
    memobs_record_ttft(1000);
    if (h_track) {
        MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)a, 64, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE((const void *)(uintptr_t)a);
    }
    if (h_with_request) {
        memobs_request_begin(a);
        memobs_request_end(a);
    }
    ADD(&h_calls, 1u);
}

static void on_signal(int sig) {
    int e = errno;
    (void)sig;
    handler_body();
    errno = e;
}

static void install(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

/* The counter sites, looked up once outside any handler (a site's first
   add registers its name): one call of the body (track: with its tracked
   pair, the tracker's first). */
static void setup_handler(int track) {
    h_counter = memobs_counter_register("hs_sig", "records made in signal handlers");
    h_track = track;
    handler_body();
    h_track = 1;
}

static volatile int malloc_armed;
static void *test_malloc(size_t n) {
    if (malloc_armed) {
        malloc_armed = 0;
        raise(SIGUSR1); /* the tracker holds a lock here */
    }
    return malloc(n);
}

static __thread int shard_armed;
static void test_shard_hook(void) {
    if (shard_armed) {
        shard_armed = 0;
        raise(SIGUSR1); /* inside this thread's first record, the registry lock held */
    }
}

/* Each of the 64 tracker stripes gets its table now, so that the tracked
   pairs of the loops and handlers below never grow one (growing calls
   MEMOBS_MALLOC: not async-signal-safe with glibc's malloc). */
#define WARM_BLOCK(k) ((const void *)(uintptr_t)(0x10000000u + ((k) << 16)))
static void warm_tracker(void) {
    uint64_t k;
    for (k = 0; k < 4096; k++) MEMOBS_TRACK_ALLOC(WARM_BLOCK(k), 1, MEMOBS_MEM_HOST);
    for (k = 0; k < 4096; k++) MEMOBS_TRACK_FREE(WARM_BLOCK(k));
}

/* ======================================================================== */
/* Expected figures                                                         */
/* ======================================================================== */

typedef struct {
    uint64_t recs, bytes;       /* loop records per form, their bytes */
    uint64_t counter;           /* loop's counter adds (value) */
    uint64_t ttft, tpot;        /* loop's samples */
    uint64_t pairs;             /* loop's tracked alloc+free pairs */
    uint64_t requests;          /* loop's request begin+end pairs */
} loop_t;

static uint64_t counter_value(const memobs_summary_t *s, const char *name) {
    uint32_t c;
    for (c = 0; c < s->ncounters; c++)
        if (!strcmp(s->counters[c].name, name)) return s->counters[c].value;
    return 12345;
}

/* The summary against the loops' and the handlers' counts, from a reset on. */
static void check_totals(const loop_t *L, uint64_t calls, int requests_in_handler) {
    memobs_summary_t s;
    const memobs_mem_stats_t *m;
    uint64_t hs = 0, hsite = 0, hloop = 0, pairs;
    uint32_t c;
    memobs_get_summary(&s);
    m = &s.mem[MEMOBS_MEM_HOST];
    for (c = 0; c < s.ncounters; c++) {
        if (!strcmp(s.counters[c].name, "hs_sig")) hs = s.counters[c].value;
        if (!strcmp(s.counters[c].name, "hs_sig_site")) hsite = s.counters[c].value;
        if (!strcmp(s.counters[c].name, "hs_loop")) hloop = s.counters[c].value;
    }
    EXPECT("H2D prefill records (loop + handler)", L->recs + calls, s.prefill.h2d.count);
    EXPECT("H2D prefill bytes", L->bytes + SIG_BYTES * calls, s.prefill.h2d.bytes);
    EXPECT("D2H decode records (memobs_record_xfer)", L->recs + calls, s.decode.d2h.count);
    EXPECT("D2H decode bytes", L->bytes + SIG_BYTES * calls, s.decode.d2h.bytes);
    EXPECT("D2D unphased records (_CUR, _XFER)", L->recs + calls, s.unphased.d2d.count);
    EXPECT("D2D unphased bytes", L->bytes + SIG_BYTES * calls, s.unphased.d2d.bytes);
    EXPECT("counter hs_sig (memobs_counter_add in the handler)", calls, hs);
    EXPECT("counter hs_sig_site (MEMOBS_COUNTER_ADD in the handler)", 2 * calls, hsite);
    EXPECT("counter hs_loop", L->counter, hloop);
    EXPECT("TTFT samples (memobs_record_ttft; a request's first token)", L->ttft + L->requests + calls, s.ttft.count);
    EXPECT("TPOT samples", L->tpot, s.tpot.count);
    /* a handler's pair is refused whole or kept whole: the handler runs
       inside one state of its thread */
    if (s.signal_dropped % 2 && !requests_in_handler)
        FAIL("signal_dropped %llu is odd", (unsigned long long)s.signal_dropped);
    pairs = requests_in_handler ? 0 : s.signal_dropped / 2;
    if (!requests_in_handler) {
        EXPECT("tracked allocs (loop + handler - refused)", L->pairs + calls - pairs, m->allocs);
        EXPECT("tracked frees", L->pairs + calls - pairs, m->frees);
    }
    EXPECT("tracked live", 0, m->live);
    EXPECT("tracked current bytes", 0, m->current_bytes);
    EXPECT("frees of unknown pointers", 0, s.track.frees_unknown);
    EXPECT("double frees", 0, s.track.frees_double);
    EXPECT("duplicate allocs", 0, s.track.allocs_duplicate);
    EXPECT("bad records", 0, s.bad_records);
    EXPECT("records via the shared shard for want of memory", 0, s.untracked_threads);
    EXPECT("requests completed", L->requests, s.requests_completed);
    EXPECT("E2E samples", L->requests, s.e2e.count);
}

/* ======================================================================== */
/* storm                                                                    */
/* ======================================================================== */

#define STORM_ITERS 1000
static uint64_t storm_min_calls = 100; /* handler calls a round waits for (a condition, not a time) */
#define STORM_MAX_ITERS 4000000

static int storm_stop;

typedef struct {
    pthread_t t;
    int id;
    loop_t L;
} worker_t;

static void *storm_worker(void *arg) {
    worker_t *w = (worker_t *)arg;
    uint64_t i, base = 0x40000000u + (uint64_t)w->id * 0x1000000u;
    memset(&w->L, 0, sizeof w->L);
    for (i = 0; i < STORM_MAX_ITERS && (i < STORM_ITERS || LOAD(&h_calls) < storm_min_calls); i++) {
        uint64_t b = (i & 0xff) + 1, a = base + (i & 3) * 64;
        MEMOBS_RECORD_H2D(b, 1);
        memobs_record_xfer(MEMOBS_DIR_D2H, b, MEMOBS_PHASE_DECODE);
        MEMOBS_RECORD_D2D_CUR(b);
        MEMOBS_COUNTER_ADD("hs_loop", 3);
        w->L.recs++;
        w->L.bytes += b;
        w->L.counter += 3;
        if ((i & 15) == 0) {
            memobs_record_ttft(500 + i);
            memobs_record_tpot(100 + i);
            w->L.ttft++;
            w->L.tpot++;
        }
        MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)a, 64, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE((const void *)(uintptr_t)a);
        w->L.pairs++;
        if ((i & 63) == 0) {
            memobs_request_begin(base + i);
            memobs_request_token(base + i);
            memobs_request_end(base + i);
            w->L.requests++;
        }
    }
    if (i == STORM_MAX_ITERS) FAIL("worker %d: %llu iterations and only %llu handler calls", w->id,
                                   (unsigned long long)i, (unsigned long long)LOAD(&h_calls));
    return NULL;
}

/* Sends SIGUSR1 to the workers, in turn, until they are done. */
static void *storm_killer(void *arg) {
    worker_t *w = (worker_t *)arg;
    unsigned k = 0;
    while (!LOAD(&storm_stop)) {
        pthread_kill(w[k++ & 1].t, SIGUSR1);
    }
    return NULL;
}

static int mode_storm(int rounds) {
    worker_t w[2];
    pthread_t killer;
    struct itimerval it;
    memobs_summary_t s;
    uint64_t st_recs = 0, st_calls = 0, st_dropped = 0;
    int r, k;
    setup_handler(1);
    warm_tracker();
    install(SIGUSR1);
    install(SIGALRM);
    for (r = 0; r < rounds; r++) {
        loop_t L;
        sigset_t set, old;
        uint64_t calls;
        memset(&L, 0, sizeof L);
        memobs_reset();
        __atomic_store_n(&h_calls, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&storm_stop, 0, __ATOMIC_SEQ_CST);
        memset(&it, 0, sizeof it);
        it.it_interval.tv_usec = 200;
        it.it_value.tv_usec = 200;
        setitimer(ITIMER_REAL, &it, NULL);
        for (k = 0; k < 2; k++) {
            w[k].id = k;
            pthread_create(&w[k].t, NULL, storm_worker, &w[k]);
        }
        pthread_create(&killer, NULL, storm_killer, w);
        for (k = 0; k < 2; k++) pthread_join(w[k].t, NULL);
        __atomic_store_n(&storm_stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(killer, NULL);
        memset(&it, 0, sizeof it);
        setitimer(ITIMER_REAL, &it, NULL);
        /* The summary is read with both signals blocked on the one thread
           left, so no handler adds while it is read; one still pending is
           delivered at the unblock, before the next round's reset. */
        sigemptyset(&set);
        sigaddset(&set, SIGALRM);
        sigaddset(&set, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &set, &old);
        for (k = 0; k < 2; k++) {
            L.recs += w[k].L.recs;
            L.bytes += w[k].L.bytes;
            L.counter += w[k].L.counter;
            L.ttft += w[k].L.ttft;
            L.tpot += w[k].L.tpot;
            L.pairs += w[k].L.pairs;
            L.requests += w[k].L.requests;
        }
        calls = LOAD(&h_calls);
        check_totals(&L, calls, 0);
        memobs_get_summary(&s);
        st_calls += calls;
        st_dropped += s.signal_dropped;
        st_recs += L.recs;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (failed) {
            printf("not ok - %s: storm round %d of %d\n", TEST_SUITE, r + 1, rounds);
            return 1;
        }
    }
    /* for the script's totals: loop records (per form), handler calls, tracked calls refused */
    printf("stats %llu %llu %llu\n", (unsigned long long)st_recs, (unsigned long long)st_calls,
           (unsigned long long)st_dropped);
    return 0;
}

/* ======================================================================== */
/* race: fresh threads' first records                                        */
/* ======================================================================== */

static void *race_thread(void *arg) {
    (void)arg;
    MEMOBS_RECORD_H2D(3, 1); /* the first record, raced by a SIGUSR1 */
    memobs_record_xfer(MEMOBS_DIR_D2H, 3, MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2D_CUR(3);
    MEMOBS_COUNTER_ADD("hs_loop", 1);
    return NULL;
}

static int mode_race(int rounds) {
    loop_t L;
    int r;
    uint64_t calls;
    sigset_t set, old;
    setup_handler(1);
    warm_tracker();
    install(SIGUSR1);
    memobs_reset();
    __atomic_store_n(&h_calls, 0, __ATOMIC_SEQ_CST);
    memset(&L, 0, sizeof L);
    for (r = 0; r < rounds; r++) {
        pthread_t t;
        pthread_create(&t, NULL, race_thread, NULL);
        pthread_kill(t, SIGUSR1);
        if (r & 1) pthread_kill(t, SIGUSR1);
        pthread_join(t, NULL);
        L.recs++;
        L.bytes += 3;
        L.counter++;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    calls = LOAD(&h_calls);
    check_totals(&L, calls, 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) printf("not ok - %s: race: %d fresh threads, %llu handler calls\n", TEST_SUITE, rounds,
                       (unsigned long long)calls);
    else printf("stats %d %llu 0\n", rounds, (unsigned long long)calls);
    return failed != 0;
}

/* ======================================================================== */
/* first: a handler inside a thread's first record                          */
/* ======================================================================== */

#define FIRST_THREADS 50

static void *first_thread(void *arg) {
    (void)arg;
    shard_armed = 1;
    MEMOBS_RECORD_H2D(3, 1); /* raises SIGUSR1 inside its shard's acquisition */
    if (shard_armed) FAIL("the hook did not run: the first record took no shard");
    return NULL;
}

static char *read_all(FILE *f) {
    long n;
    char *b;
    fflush(f);
    n = ftell(f);
    b = (char *)calloc(1, (size_t)n + 1);
    rewind(f);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = 0;
    return b;
}

static void expect_has(const char *what, const char *text, const char *needle) {
    if (!strstr(text, needle)) FAIL("%s: no \"%s\" in the output", what, needle);
}

static int mode_first(void) {
    loop_t L;
    memobs_summary_t s;
    int k, before;
    uint64_t calls;
    FILE *f;
    char *t, want[128];
    setup_handler(1);
    warm_tracker();
    install(SIGUSR1);
    memobs_reset();
    __atomic_store_n(&h_calls, 0, __ATOMIC_SEQ_CST);
    h_with_request = 1;
    memset(&L, 0, sizeof L);
    before = failed;
    for (k = 0; k < FIRST_THREADS; k++) {
        pthread_t t1;
        pthread_create(&t1, NULL, first_thread, NULL);
        pthread_join(t1, NULL);
        L.recs++;
        L.bytes += 3;
    }
    /* only H2D from the threads themselves; the other forms from the handler alone */
    calls = LOAD(&h_calls);
    memobs_get_summary(&s);
    EXPECT("handler calls (one per fresh thread)", FIRST_THREADS, calls);
    EXPECT("H2D prefill records: the threads' and their handlers'", L.recs + calls, s.prefill.h2d.count);
    EXPECT("H2D prefill bytes", L.bytes + SIG_BYTES * calls, s.prefill.h2d.bytes);
    EXPECT("D2H decode records (handlers)", calls, s.decode.d2h.count);
    EXPECT("D2D unphased records (handlers)", calls, s.unphased.d2d.count);
    EXPECT("TTFT samples (handlers)", calls, s.ttft.count);
    EXPECT("signal_dropped: each handler's tracked alloc, free, request begin and end", 4 * calls, s.signal_dropped);
    EXPECT("tracked allocs (all refused)", 0, s.mem[MEMOBS_MEM_HOST].allocs);
    EXPECT("frees of unknown pointers", 0, s.track.frees_unknown);
    EXPECT("requests begun", 0, s.requests_begun);
    EXPECT("requests unknown", 0, s.requests_unknown);
    EXPECT("records via the shared shard for want of memory", 0, s.untracked_threads);
    EXPECT("bad records", 0, s.bad_records);
    tap("a signal inside a thread's first record (the registry lock held): its handler's records counted, its "
        "tracked alloc/free and request calls refused and counted, nothing waits", before);

    before = failed;
    snprintf(want, sizeof want, "%llu calls refused in a signal handler", (unsigned long long)(4 * calls));
    f = tmpfile();
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    t = read_all(f);
    expect_has("text summary", t, want);
    free(t);
    fclose(f);
    f = tmpfile();
    memobs_write_summary(f, MEMOBS_FORMAT_JSON);
    t = read_all(f);
    snprintf(want, sizeof want, "\"signal_dropped\":%llu,", (unsigned long long)(4 * calls));
    expect_has("JSON summary", t, want);
    free(t);
    fclose(f);
    f = tmpfile();
    memobs_write_prometheus(f);
    t = read_all(f);
    snprintf(want, sizeof want, "problem=\"signal_dropped\"} %llu\n", (unsigned long long)(4 * calls));
    expect_has("Prometheus", t, want);
    free(t);
    fclose(f);
    f = tmpfile();
    memobs_write_html(f);
    t = read_all(f);
    snprintf(want, sizeof want, "data-memobs=\"problems.signal_dropped\" data-v=\"%llu\"",
             (unsigned long long)(4 * calls));
    expect_has("HTML report", t, want);
    free(t);
    fclose(f);
    tap("signal_dropped in the text and JSON summaries, Prometheus and the HTML report", before);
    h_with_request = 0;
    return failed != 0;
}

/* ======================================================================== */
/* malloc: a handler inside the tracker, a lock held                         */
/* ======================================================================== */

/* An address whose tracker stripe is not that of any address in avoid. */
static uint64_t other_stripe(uint64_t from, const uint64_t *avoid, int n) {
    uint32_t home;
    for (;; from += 0x10000u) {
        const memobs__trk_stripe_t *st = memobs__trk_stripe(from, &home);
        int k;
        for (k = 0; k < n && memobs__trk_stripe(avoid[k], &home) != st; k++) {
        }
        if (k == n) return from;
    }
}

static int mode_malloc(void) {
    memobs_summary_t s;
    int before = failed;
    uint64_t calls, a[2];
    setup_handler(0); /* no tracked pair: the thread's first one comes below */
    install(SIGUSR1);
    memobs_reset();
    __atomic_store_n(&h_calls, 0, __ATOMIC_SEQ_CST);
    /* the tracker's first alloc sets its tables up (MEMOBS_MALLOC with its
       set-up lock held), then allocates its stripe's table (the stripe's
       lock held); the handler runs inside the first */
    a[0] = 0x5000000u;
    malloc_armed = 1;
    MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)a[0], 64, MEMOBS_MEM_HOST);
    if (malloc_armed) FAIL("MEMOBS_MALLOC was not called by the tracker's first alloc");
    /* a stripe with no table yet: the handler runs inside its growth */
    a[1] = other_stripe(0x6000000u, a, 1);
    malloc_armed = 1;
    MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)a[1], 64, MEMOBS_MEM_HOST);
    if (malloc_armed) FAIL("MEMOBS_MALLOC was not called by an alloc into a new stripe");
    malloc_armed = 0;
    MEMOBS_TRACK_FREE((const void *)(uintptr_t)a[0]);
    MEMOBS_TRACK_FREE((const void *)(uintptr_t)a[1]);
    calls = LOAD(&h_calls);
    memobs_get_summary(&s);
    EXPECT("handler calls inside MEMOBS_MALLOC", 2, calls);
    EXPECT("signal_dropped: the handlers' tracked allocs and frees", 2 * calls, s.signal_dropped);
    EXPECT("tracked allocs: the two of the thread", 2, s.mem[MEMOBS_MEM_HOST].allocs);
    EXPECT("tracked frees", 2, s.mem[MEMOBS_MEM_HOST].frees);
    EXPECT("tracked live", 0, s.mem[MEMOBS_MEM_HOST].live);
    EXPECT("current bytes", 0, s.mem[MEMOBS_MEM_HOST].current_bytes);
    EXPECT("peak bytes", 128, s.mem[MEMOBS_MEM_HOST].peak_bytes);
    EXPECT("H2D records of the handlers", calls, s.prefill.h2d.count);
    EXPECT("D2H records of the handlers", calls, s.decode.d2h.count);
    EXPECT("counter adds of the handlers", calls, counter_value(&s, "hs_sig"));
    EXPECT("TTFT samples of the handlers", calls, s.ttft.count);
    EXPECT("frees of unknown pointers", 0, s.track.frees_unknown);
    EXPECT("allocations not tracked", 0, s.track.untracked);
    tap("a signal inside the tracker (MEMOBS_MALLOC under its set-up lock and under a stripe's lock): the "
        "handler's tracked alloc/free refused and counted, never waits; its records counted", before);
    return failed != 0;
}

/* ======================================================================== */
/* bounds                                                                   */
/* ======================================================================== */

#define MAXB MEMOBS_MAX_BYTES

static pthread_barrier_t sat_barrier;

/* n records, counter adds and tracked alloc+free pairs of MEMOBS_MAX_BYTES;
   both threads wait for each other before they exit, so that each keeps
   its own shard (one thread's own total wraps past 256 such adds). */
static void *sat_thread(void *arg) {
    uint64_t n = *(const uint64_t *)arg, i, a = 0x6300000u + n * 0x10000u;
    memobs_counter_t c = memobs_counter_register("hs_sat", NULL);
    for (i = 0; i < n; i++) {
        memobs_record_xfer(MEMOBS_DIR_D2H, MAXB, MEMOBS_PHASE_DECODE);
        memobs_counter_add(c, MAXB);
        MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)a, MAXB, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE((const void *)(uintptr_t)a);
    }
    pthread_barrier_wait(&sat_barrier);
    return NULL;
}

static int mode_bounds(void) {
    memobs_summary_t s;
    memobs_counter_t c = memobs_counter_register("hs_big", NULL);
    int before = failed, k;
    uint64_t n200 = 200, n100 = 100;
    pthread_t t[2];

    memobs_reset();
    memobs_record_xfer(MEMOBS_DIR_H2D, UINT64_MAX, MEMOBS_PHASE_DECODE);
    memobs_record_xfer(MEMOBS_DIR_H2D, 2, MEMOBS_PHASE_DECODE);
    memobs_get_summary(&s);
    EXPECT("memobs_record_xfer(H2D, UINT64_MAX, DECODE) then 2 bytes: decode H2D bytes", 2, s.decode.h2d.bytes);
    EXPECT("decode H2D records", 1, s.decode.h2d.count);
    EXPECT("total H2D bytes", 2, s.total.h2d.bytes);
    EXPECT("bad records", 1, s.bad_records);
    tap("memobs_record_xfer above MEMOBS_MAX_BYTES refused, a bad record; total bytes 2, not 1", before);

    before = failed;
    memobs_reset();
    MEMOBS_RECORD_H2D(UINT64_MAX, 1);
    MEMOBS_RECORD_D2H(MAXB + 1, 0);
    MEMOBS_RECORD_D2D_CUR(UINT64_MAX - 1);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_H2D, MAXB + 1, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, MAXB + 1, MEMOBS_PHASE_PREFILL, 10);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 10, MEMOBS_PHASE_PREFILL, UINT64_MAX);
    MEMOBS_RECORD_H2D(MAXB, 1); /* the limit itself passes */
    memobs_get_summary(&s);
    EXPECT("bad records (4 macros, 2 timed copies)", 6, s.bad_records);
    EXPECT("prefill H2D records: the one at the limit", 1, s.prefill.h2d.count);
    EXPECT("prefill H2D bytes", MAXB, s.prefill.h2d.bytes);
    EXPECT("decode D2H records", 0, s.decode.d2h.count);
    EXPECT("unphased D2D records", 0, s.unphased.d2d.count);
    EXPECT("timed copies", 0, s.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_H2D].count);
    tap("the record macros and memobs_record_xfer_timed refuse values above MEMOBS_MAX_BYTES / MEMOBS_MAX_NS", before);

    before = failed;
    memobs_reset();
    memobs_counter_add(c, 5);
    memobs_counter_add(c, UINT64_MAX);
    MEMOBS_COUNTER_ADD("hs_big", MAXB + 1);
    MEMOBS_COUNTER_ADD("hs_big", 1);
    memobs_get_summary(&s);
    EXPECT("counter hs_big: 5 + 1, the two above the limit refused", 6, counter_value(&s, "hs_big"));
    EXPECT("bad records", 2, s.bad_records);
    tap("counter adds above MEMOBS_MAX_BYTES refused (memobs_counter_add, MEMOBS_COUNTER_ADD)", before);

    before = failed;
    memobs_reset();
    MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)0x6000000, UINT64_MAX, MEMOBS_MEM_DEVICE);
    memobs_track_alloc_full((const void *)(uintptr_t)0x6100000, MAXB + 1, MEMOBS_MEM_HOST, -1, NULL, "big", 0);
    MEMOBS_TRACK_ALLOC((const void *)(uintptr_t)0x6200000, 100, MEMOBS_MEM_HOST);
    memobs_get_summary(&s);
    EXPECT("bad records (2 tracked sizes)", 2, s.bad_records);
    EXPECT("device allocs", 0, s.mem[MEMOBS_MEM_DEVICE].allocs);
    EXPECT("device current bytes", 0, s.mem[MEMOBS_MEM_DEVICE].current_bytes);
    EXPECT("host allocs: the 100-byte one", 1, s.mem[MEMOBS_MEM_HOST].allocs);
    EXPECT("host current bytes", 100, s.mem[MEMOBS_MEM_HOST].current_bytes);
    EXPECT("host alloc bytes", 100, s.mem[MEMOBS_MEM_HOST].alloc_bytes);
    MEMOBS_TRACK_FREE((const void *)(uintptr_t)0x6000000);
    MEMOBS_TRACK_FREE((const void *)(uintptr_t)0x6200000);
    memobs_get_summary(&s);
    EXPECT("the refused block's free: unknown", 1, s.track.frees_unknown);
    EXPECT("host current bytes after the frees", 0, s.mem[MEMOBS_MEM_HOST].current_bytes);
    tap("tracked sizes above MEMOBS_MAX_BYTES refused, not tracked (their free: unknown)", before);

    before = failed;
    memobs_reset();
    memobs_record_ttft(UINT64_MAX);
    memobs_record_ttft(5);
    memobs_record_tpot(MEMOBS_MAX_NS + 1);
    memobs_record_tpot(7);
    memobs_get_summary(&s);
    EXPECT("TTFT: UINT64_MAX refused, then 5: count", 1, s.ttft.count);
    EXPECT("TTFT mean", 5, s.ttft.mean_ns);
    EXPECT("TTFT max", 5, s.ttft.max_ns);
    EXPECT("TPOT count", 1, s.tpot.count);
    EXPECT("TPOT mean", 7, s.tpot.mean_ns);
    EXPECT("bad records", 2, s.bad_records);
    tap("ttft/tpot samples above MEMOBS_MAX_NS refused: mean 5 ns, not 2", before);

    before = failed;
    memobs_reset();
    MEMOBS_RECORD_D2H_CUR(9); /* unphased */
    pthread_barrier_init(&sat_barrier, NULL, 2);
    for (k = 0; k < 2; k++) pthread_create(&t[k], NULL, sat_thread, k ? &n100 : &n200);
    for (k = 0; k < 2; k++) pthread_join(t[k], NULL);
    pthread_barrier_destroy(&sat_barrier);
    for (k = 0; k < 300; k++) memobs_record_ttft(MEMOBS_MAX_NS);
    for (k = 0; k < 300; k++) memobs_record_xfer_timed(MEMOBS_DIR_D2H, MAXB, MEMOBS_PHASE_DECODE, MEMOBS_MAX_NS);
    memobs_get_summary(&s);
    EXPECT("200 + 100 records of 2^56 bytes on two threads: decode D2H bytes saturate", UINT64_MAX,
           s.decode.d2h.bytes);
    EXPECT("decode D2H records", 300, s.decode.d2h.count);
    EXPECT("total D2H bytes (+9 unphased): saturated", UINT64_MAX, s.total.d2h.bytes);
    EXPECT("unphased D2H bytes", 9, s.unphased.d2h.bytes);
    EXPECT("counter hs_sat, the same on two threads: saturated", UINT64_MAX, counter_value(&s, "hs_sat"));
    EXPECT("tracked alloc bytes, the same: saturated", UINT64_MAX, s.mem[MEMOBS_MEM_HOST].alloc_bytes);
    EXPECT("tracked allocs", 300, s.mem[MEMOBS_MEM_HOST].allocs);
    EXPECT("tracked current bytes", 0, s.mem[MEMOBS_MEM_HOST].current_bytes);
    if (s.mem[MEMOBS_MEM_HOST].peak_bytes != MAXB && s.mem[MEMOBS_MEM_HOST].peak_bytes != 2 * MAXB)
        FAIL("tracked peak bytes: expected 2^56 or 2^57 (one block live on each thread), got %llu",
             (unsigned long long)s.mem[MEMOBS_MEM_HOST].peak_bytes);
    EXPECT("TTFT: 300 samples of 2^56 ns, count", 300, s.ttft.count);
    EXPECT("TTFT mean: the saturated sum over the count", UINT64_MAX / 300, s.ttft.mean_ns);
    EXPECT("device-timed D2H bytes: saturated", UINT64_MAX, s.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].bytes);
    EXPECT("device-timed D2H ns: saturated", UINT64_MAX, s.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2H].ns);
    EXPECT("bad records", 0, s.bad_records);
    memobs_reset();
    MEMOBS_RECORD_D2H(5, 0);
    memobs_get_summary(&s);
    EXPECT("after memobs_reset(), the window starts again: decode D2H bytes", 5, s.decode.d2h.bytes);
    tap("sums saturate at UINT64_MAX: over threads, totals, counters, tracked and device-timed bytes, the TTFT sum",
        before);
    return failed != 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 1;
    memobs_set_enabled(1);
    memobs_track_set_callstack(0);
    if (argc > 3 && atoi(argv[3]) > 0) storm_min_calls = (uint64_t)atoi(argv[3]);
    if (!strcmp(mode, "storm")) return mode_storm(n > 0 ? n : 1);
    if (!strcmp(mode, "race")) return mode_race(n > 0 ? n : 1);
    if (!strcmp(mode, "first")) return mode_first();
    if (!strcmp(mode, "malloc")) return mode_malloc();
    if (!strcmp(mode, "bounds")) return mode_bounds();
    fprintf(stderr, "usage: %s storm ROUNDS [CALLS] | race ROUNDS | first | malloc | bounds\n", argv[0]);
    return 2;
}
