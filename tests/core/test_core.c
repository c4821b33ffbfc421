/* Functional tests of memobs.h: counts, phases, threads, reset, timing,
   histograms, requests, counters, identity, formats and bad input.
   Built as C and as C++, and under ASan+UBSan and TSan (tests/core/test_core.sh). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "core"
#endif

static memobs_summary_t S; /* large: keep it off the stack */

static void sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void snap(void) { memobs_get_summary(&S); }

/* Log hook that counts and keeps the last message, so tests can assert on
   warnings without printing them. */
static int log_count;
static char log_last[512];
static void capture_log(int level, const char *msg, void *user) {
    (void)level;
    (void)user;
    log_count++;
    snprintf(log_last, sizeof log_last, "%s", msg);
}

/* ---- transfers and phases ------------------------------------------------ */

static void test_counts_by_direction_and_phase(void) {
    memobs_reset();
    MEMOBS_RECORD_H2D(4096, 1);
    MEMOBS_RECORD_H2D(1000, 0);
    MEMOBS_RECORD_D2H(512, 0);
    MEMOBS_RECORD_D2H(256, 7); /* any nonzero flag means prefill */
    MEMOBS_RECORD_D2D(64, 1);
    MEMOBS_RECORD_D2D(32, 0);
    snap();
    CHECK_U64(5096, S.total.h2d.bytes);
    CHECK_U64(2, S.total.h2d.count);
    CHECK_U64(4096, S.prefill.h2d.bytes);
    CHECK_U64(1000, S.decode.h2d.bytes);
    CHECK_U64(256, S.prefill.d2h.bytes);
    CHECK_U64(512, S.decode.d2h.bytes);
    CHECK_U64(64, S.prefill.d2d.bytes); /* D2D has its phase split too */
    CHECK_U64(32, S.decode.d2d.bytes);
    CHECK_U64(1, S.decode.d2d.count);
    CHECK_U64(0, S.unphased.h2d.count + S.unphased.d2h.count + S.unphased.d2d.count);
    CHECK_U64(1, S.enabled);
}

static void *record_cur_in_new_thread(void *arg) {
    (void)arg;
    MEMOBS_RECORD_H2D_CUR(100); /* a new thread has no phase yet */
    return NULL;
}

static void test_thread_phase(void) {
    pthread_t t;
    memobs_reset();
    CHECK_U64(MEMOBS_PHASE_NONE, memobs_get_phase());
    MEMOBS_RECORD_D2H_CUR(10);
    CHECK_U64(MEMOBS_OK, memobs_set_phase(MEMOBS_PHASE_PREFILL));
    MEMOBS_RECORD_D2H_CUR(20);
    MEMOBS_SET_PHASE(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H_CUR(40);
    MEMOBS_RECORD_D2D_CUR(8);
    pthread_create(&t, NULL, record_cur_in_new_thread, NULL);
    pthread_join(t, NULL);
    memobs_set_log(capture_log, NULL);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_set_phase((memobs_phase_t)9));
    memobs_set_log(NULL, NULL);
    CHECK_U64(MEMOBS_PHASE_DECODE, memobs_get_phase()); /* unchanged by the bad call */
    snap();
    CHECK_U64(10, S.unphased.d2h.bytes);
    CHECK_U64(20, S.prefill.d2h.bytes);
    CHECK_U64(40, S.decode.d2h.bytes);
    CHECK_U64(8, S.decode.d2d.bytes);
    CHECK_U64(100, S.unphased.h2d.bytes);
    CHECK_U64(70, S.total.d2h.bytes);
    memobs_set_phase(MEMOBS_PHASE_NONE);
}

static void test_runtime_disable(void) {
    memobs_reset();
    memobs_set_enabled(0);
    CHECK_U64(0, memobs_get_enabled());
    MEMOBS_RECORD_H2D(1, 1);
    MEMOBS_COUNTER_ADD("disabled_probe", 5);
    MEMOBS_TTFT_START();
    MEMOBS_TTFT_STOP();
    memobs_request_begin(42);
    memobs_set_enabled(1);
    CHECK_U64(1, memobs_get_enabled());
    MEMOBS_RECORD_H2D(2, 1);
    snap();
    CHECK_U64(2, S.total.h2d.bytes);
    CHECK_U64(0, S.ttft.count);
    CHECK_U64(0, S.requests_begun);
}

/* ---- threads ------------------------------------------------------------- */

#define NTHREADS 8
#define PER_THREAD 200000
static memobs_counter_t thread_counter;
static int stop_reader;

static void *recorder(void *arg) {
    uint64_t i, k = (uint64_t)(uintptr_t)arg;
    memobs_set_phase(k % 2 ? MEMOBS_PHASE_PREFILL : MEMOBS_PHASE_DECODE);
    for (i = 0; i < PER_THREAD; i++) {
        MEMOBS_RECORD_H2D(i % 1000 + k, i & 1);
        MEMOBS_RECORD_D2D_CUR(3);
        memobs_counter_add(thread_counter, 2);
        MEMOBS_COUNTER_ADD("site_counter", 1);
    }
    return NULL;
}

/* Summaries taken while threads record never go backwards. */
static void *reader(void *arg) {
    static memobs_summary_t r;
    uint64_t last = 0;
    int *bad = (int *)arg;
    while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
        memobs_get_summary(&r);
        if (r.total.h2d.count < last) *bad = 1;
        last = r.total.h2d.count;
    }
    return NULL;
}

static void test_threads_exact(void) {
    pthread_t t[NTHREADS], rd;
    uint64_t k, i, want_bytes = 0, want_prefill = 0;
    int bad = 0;
    thread_counter = memobs_counter_register("thread_counter", "added by test threads");
    memobs_reset();
    stop_reader = 0;
    pthread_create(&rd, NULL, reader, &bad);
    for (k = 0; k < NTHREADS; k++) pthread_create(&t[k], NULL, recorder, (void *)(uintptr_t)k);
    for (k = 0; k < NTHREADS; k++) pthread_join(t[k], NULL);
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    for (k = 0; k < NTHREADS; k++)
        for (i = 0; i < PER_THREAD; i++) {
            want_bytes += i % 1000 + k;
            if (i & 1) want_prefill += i % 1000 + k;
        }
    snap();
    CHECK_U64((uint64_t)NTHREADS * PER_THREAD, S.total.h2d.count);
    CHECK_U64(want_bytes, S.total.h2d.bytes);
    CHECK_U64(want_prefill, S.prefill.h2d.bytes);
    CHECK_U64(want_bytes - want_prefill, S.decode.h2d.bytes);
    CHECK_U64((uint64_t)NTHREADS / 2 * PER_THREAD * 3, S.prefill.d2d.bytes);
    CHECK_U64((uint64_t)NTHREADS / 2 * PER_THREAD * 3, S.decode.d2d.bytes);
    CHECK_U64(0, bad);
    for (i = 0; i < S.ncounters; i++) {
        if (strcmp(S.counters[i].name, "thread_counter") == 0)
            CHECK_U64((uint64_t)NTHREADS * PER_THREAD * 2, S.counters[i].value);
        if (strcmp(S.counters[i].name, "site_counter") == 0)
            CHECK_U64((uint64_t)NTHREADS * PER_THREAD, S.counters[i].value);
    }
}

static void *one_record(void *arg) {
    (void)arg;
    MEMOBS_RECORD_D2H(5, 1);
    return NULL;
}

/* Threads that exit hand their shard on: memory stays bounded by the number
   of live threads, and nothing they recorded is lost. */
static void test_thread_exit_recycles_shards(void) {
    pthread_t t;
    memobs__shard_t *s;
    unsigned i, before = 0, after = 0;
    for (s = memobs__g.shards; s; s = s->next) before++;
    memobs_reset();
    for (i = 0; i < 200; i++) {
        pthread_create(&t, NULL, one_record, NULL);
        pthread_join(t, NULL);
    }
    for (s = memobs__g.shards; s; s = s->next) after++;
    snap();
    CHECK_U64(1000, S.prefill.d2h.bytes);
    CHECK_U64(200, S.prefill.d2h.count);
    CHECK(after <= before + 1);
}

static int stop_resetter;
static void *resetter(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop_resetter, __ATOMIC_ACQUIRE)) memobs_reset();
    return NULL;
}

/* Resets racing with recorders: no torn or negative (wrapped) figures, and
   the window after the last reset is exact. */
static void test_reset_races_recorders(void) {
    pthread_t t[4], rs;
    uint64_t k;
    stop_resetter = 0;
    pthread_create(&rs, NULL, resetter, NULL);
    for (k = 0; k < 4; k++) pthread_create(&t[k], NULL, recorder, (void *)(uintptr_t)k);
    for (k = 0; k < 4; k++) pthread_join(t[k], NULL);
    snap();
    __atomic_store_n(&stop_resetter, 1, __ATOMIC_RELEASE);
    pthread_join(rs, NULL);
    CHECK(S.total.h2d.count <= 4u * PER_THREAD);
    CHECK(S.total.h2d.bytes <= 4u * PER_THREAD * 1004u);
    memobs_reset();
    MEMOBS_RECORD_H2D(77, 0);
    snap();
    CHECK_U64(77, S.total.h2d.bytes);
    CHECK_U64(1, S.total.h2d.count);
    CHECK_U64(0, S.total.d2d.count);
}

/* ---- histograms ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Exact percentile by the same rank rule: the smallest sample with at least
   q of all samples at or below it. */
static uint64_t exact_pct(const uint64_t *sorted, size_t n, double q) {
    size_t rank = (size_t)ceil(q * (double)n);
    return sorted[rank ? rank - 1 : 0];
}

static double rel_err(uint64_t got, uint64_t want) {
    return fabs((double)got - (double)want) / (double)want;
}

static void test_histogram_error_bound(void) {
    enum { N = 100000 };
    static memobs__hist_t h;
    static uint64_t v[N];
    memobs_latency_t l;
    unsigned i, dist;
    double worst = 0;
    for (dist = 0; dist < 3; dist++) {
        uint64_t x = 12345 + dist, max = 0;
        memset(&h, 0, sizeof h);
        for (i = 0; i < N; i++) {
            double u;
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            u = (double)(x >> 11) / 9007199254740992.0;
            if (dist == 0) v[i] = 1000 + (uint64_t)(u * 1e6);          /* uniform 1 us .. 1 ms */
            else if (dist == 1) v[i] = (uint64_t)(2e6 * exp(3.0 * u)); /* log-spread 2 ms .. 40 ms */
            else v[i] = 100 + (uint64_t)(u * 10000);                   /* near the exact range */
            if (v[i] > max) max = v[i];
            memobs__hist_add(&h, v[i]);
        }
        memobs__hist_read(&h, &l);
        qsort(v, N, sizeof v[0], cmp_u64);
        CHECK_U64(N, l.count);
        CHECK_U64(max, l.max_ns); /* max is exact */
        if (rel_err(l.p50_ns, exact_pct(v, N, 0.50)) > worst) worst = rel_err(l.p50_ns, exact_pct(v, N, 0.50));
        if (rel_err(l.p90_ns, exact_pct(v, N, 0.90)) > worst) worst = rel_err(l.p90_ns, exact_pct(v, N, 0.90));
        if (rel_err(l.p99_ns, exact_pct(v, N, 0.99)) > worst) worst = rel_err(l.p99_ns, exact_pct(v, N, 0.99));
    }
    if (worst > 0.008) printf("    # worst percentile error %.4f%%\n", worst * 100);
    CHECK(worst <= 0.008); /* the bound the header states */
    /* Few samples: a percentile whose rank is the last sample is the max. */
    memset(&h, 0, sizeof h);
    for (i = 1; i <= 8; i++) memobs__hist_add(&h, 599790000u + i * 187u);
    memobs__hist_read(&h, &l);
    CHECK_U64(599790000u + 8 * 187u, l.p90_ns);
    CHECK_U64(599790000u + 8 * 187u, l.p99_ns);
    CHECK_U64(599790000u + 8 * 187u, l.max_ns);
    CHECK(rel_err(l.p50_ns, 599790000u + 4 * 187u) <= 0.008);
    /* Small values are exact; huge ones clamp without overflow. */
    memset(&h, 0, sizeof h);
    for (i = 0; i < 64; i++) memobs__hist_add(&h, i);
    memobs__hist_read(&h, &l);
    CHECK_U64(31, l.p50_ns);
    CHECK_U64(63, l.p99_ns);
    CHECK_U64(31, l.mean_ns); /* (0+..+63)/64 = 31.5, integer ns */
    memset(&h, 0, sizeof h);
    memobs__hist_add(&h, UINT64_MAX / 2);
    memobs__hist_read(&h, &l);
    CHECK_U64(UINT64_MAX / 2, l.max_ns);
    CHECK(l.p50_ns <= l.max_ns && l.p50_ns > ((uint64_t)1 << 45));
}

/* ---- timing -------------------------------------------------------------- */

static void test_global_clock(void) {
    uint64_t t0, t1;
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    MEMOBS_TPOT_STOP();
    MEMOBS_TPOT_STEP(); /* not armed: counted, not timed */
    t0 = memobs_now_ns();
    MEMOBS_TTFT_START();
    sleep_ms(20);
    MEMOBS_TTFT_STOP();
    t1 = memobs_now_ns();
    MEMOBS_TTFT_STOP(); /* second stop has no start */
    sleep_ms(5);
    MEMOBS_TPOT_STEP();
    sleep_ms(5);
    MEMOBS_TPOT_STEP();
    MEMOBS_TPOT_STOP();
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(1, S.ttft.count);
    /* at least the sleep, at most the time around it (one sample: p50 is
       the exact max); not a fixed 2 s, which a loaded machine can exceed */
    CHECK(S.ttft.p50_ns >= 20000000u && S.ttft.p50_ns <= t1 - t0);
    CHECK_U64(S.ttft.max_ns, S.ttft.last_ns);
    CHECK_U64(2, S.tpot.count);
    CHECK(S.tpot.p50_ns >= 5000000u * 0.99);
    CHECK(S.tpot.mean_ns >= 5000000u);
    CHECK_U64(1, S.ttft_unmatched);
    CHECK_U64(1, S.tpot_unarmed);
}

/* Values an engine measured itself: one sample each, exact below 64 ns,
   0 ignored, nothing while memobs is off. */
static void test_recorded_latency(void) {
    memobs_reset();
    memobs_record_ttft(50);
    memobs_record_ttft(0);
    memobs_record_tpot(7);
    memobs_record_tpot(9);
    memobs_set_enabled(0);
    memobs_record_ttft(1000);
    memobs_set_enabled(1);
    snap();
    CHECK_U64(1, S.ttft.count);
    CHECK_U64(50, S.ttft.max_ns);
    CHECK_U64(50, S.ttft.last_ns);
    CHECK_U64(2, S.tpot.count);
    CHECK_U64(9, S.tpot.max_ns);
    CHECK_U64(8, S.tpot.mean_ns);
}

static void test_request_lifecycle(void) {
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    memobs_request_begin(1);
    memobs_request_begin(2);
    memobs_request_begin(1); /* duplicate: keeps the first begin */
    sleep_ms(10);
    MEMOBS_REQUEST_TOKEN(1);
    sleep_ms(2);
    MEMOBS_REQUEST_TOKEN(1);
    MEMOBS_REQUEST_TOKEN(1);
    MEMOBS_REQUEST_END(1);
    memobs_request_end(2);  /* no token: aborted */
    memobs_request_token(3); /* never begun */
    memobs_request_end(1);   /* already ended */
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(2, S.requests_begun);
    CHECK_U64(1, S.requests_completed);
    CHECK_U64(1, S.requests_aborted);
    CHECK_U64(0, S.requests_in_flight);
    CHECK_U64(1, S.requests_duplicate);
    CHECK_U64(2, S.requests_unknown);
    CHECK_U64(1, S.ttft.count);
    CHECK(S.ttft.max_ns >= 10000000u);
    CHECK_U64(2, S.tpot.count);
    CHECK(S.tpot.max_ns >= 2000000u);
    CHECK_U64(1, S.e2e.count);
    CHECK(S.e2e.max_ns >= S.ttft.max_ns + 2000000u);
}

/* A full table still times every new request: the one idle longest in
   the new one's stripe is dropped (counted, one warning). */
static void test_request_table_full(void) {
    uint64_t i, n = MEMOBS_MAX_REQUESTS + 100;
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    log_count = 0;
    for (i = 0; i < n; i++) memobs_request_begin(1000000 + i);
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(n, S.requests_begun);
    CHECK(S.requests_dropped >= 100);
    CHECK_U64(S.requests_begun, S.requests_in_flight + S.requests_dropped);
    CHECK_U64(1, log_count); /* one warning, the rest counted */
    CHECK_HAS(log_last, "request table full");
    for (i = 0; i < n; i++) memobs_request_end(1000000 + i); /* the dropped ones: unknown */
    snap();
    CHECK_U64(0, S.requests_in_flight);
    CHECK_U64(S.requests_begun - S.requests_dropped, S.requests_aborted);
    CHECK_U64(S.requests_dropped, S.requests_unknown);
}

/* Random begin/token/end against a reference set: the open-addressing table
   (with backward-shift deletion) must find every live id and no dead one. */
static void test_request_table_model(void) {
    enum { IDS = 300, OPS = 200000 };
    static unsigned char live[IDS];
    uint64_t x = 99, unknown = 0, begun = 0, nlive = 0, i;
    memset(live, 0, sizeof live);
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    for (i = 0; i < OPS; i++) {
        unsigned id, op;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        id = (unsigned)(x % IDS);
        op = (unsigned)((x >> 32) % 3);
        if (op == 0 && !live[id]) live[id] = 1, begun++, nlive++, memobs_request_begin(id * 7919u);
        else if (op == 1) unknown += !live[id], memobs_request_token(id * 7919u);
        else if (op == 2) unknown += !live[id], nlive -= live[id], live[id] = 0, memobs_request_end(id * 7919u);
    }
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(begun, S.requests_begun);
    CHECK_U64(0, S.requests_dropped);
    CHECK_U64(unknown, S.requests_unknown);
    CHECK_U64(nlive, S.requests_in_flight);
    for (i = 0; i < IDS; i++)
        if (live[i]) memobs_request_end(i * 7919u);
    snap();
    CHECK_U64(0, S.requests_in_flight);
}

static void *request_worker(void *arg) {
    uint64_t base = (uint64_t)(uintptr_t)arg * 1000000, r;
    int k;
    for (r = 0; r < 2000; r++) {
        memobs_request_begin(base + r);
        for (k = 0; k < 5; k++) memobs_request_token(base + r);
        memobs_request_end(base + r);
    }
    return NULL;
}

static void test_requests_from_threads(void) {
    pthread_t t[4];
    uintptr_t k;
    memobs_reset();
    for (k = 0; k < 4; k++) pthread_create(&t[k], NULL, request_worker, (void *)k);
    for (k = 0; k < 4; k++) pthread_join(t[k], NULL);
    snap();
    CHECK_U64(8000, S.requests_begun);
    CHECK_U64(8000, S.requests_completed);
    CHECK_U64(8000, S.ttft.count);
    CHECK_U64(32000, S.tpot.count);
    CHECK_U64(8000, S.e2e.count);
    CHECK_U64(0, S.requests_in_flight);
    CHECK(S.tpot.p50_ns <= S.tpot.p90_ns && S.tpot.p90_ns <= S.tpot.p99_ns && S.tpot.p99_ns <= S.tpot.max_ns);
}

/* ---- counters, identity -------------------------------------------------- */

static void test_counters(void) {
    memobs_counter_t a, b, bad;
    char name[32];
    int i, full = 0;
    uint32_t k;
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    MEMOBS_COUNTER_ADD("late_help", 1); /* registered by a site first, no help */
    CHECK(memobs_counter_register("late_help", "help given later") >= 0);
    a = memobs_counter_register("kv_blocks_evicted", "blocks evicted to host");
    b = memobs_counter_register("kv_blocks_evicted", NULL); /* same name, same counter */
    CHECK(a >= 0);
    CHECK_U64(a, b);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_counter_register("bad name", NULL));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_counter_register("9lives", NULL));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_counter_register(NULL, NULL));
    memobs_counter_add(a, 3);
    memobs_counter_add(b, 4);
    memobs_counter_add(MEMOBS_MAX_COUNTERS + 5, 1); /* bad handle: counted, ignored */
    memobs_counter_add(-1, 1);
    for (i = 0; i < MEMOBS_MAX_COUNTERS + 2; i++) {
        snprintf(name, sizeof name, "filler_%d", i);
        if (memobs_counter_register(name, NULL) == MEMOBS_ERR_FULL) full++;
    }
    bad = memobs_counter_register("one_too_many", NULL);
    memobs_set_log(NULL, NULL);
    CHECK_U64(MEMOBS_ERR_FULL, bad);
    CHECK(full >= 2);
    snap();
    CHECK_U64(MEMOBS_MAX_COUNTERS, S.ncounters);
    CHECK_U64(2, S.bad_records);
    for (k = 0; k < S.ncounters; k++)
        if (strcmp(S.counters[k].name, "kv_blocks_evicted") == 0) {
            CHECK_U64(7, S.counters[k].value);
            CHECK_STR("blocks evicted to host", S.counters[k].help);
        } else if (strcmp(S.counters[k].name, "late_help") == 0) {
            CHECK_STR("help given later", S.counters[k].help);
            CHECK_U64(1, S.counters[k].value);
        }
}

static void test_identity(void) {
    memobs_identity_t id;
    memobs_set_log(capture_log, NULL);
    CHECK_U64(MEMOBS_OK, memobs_set_identity("job-7", 3, 1, 8));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_set_identity("other", 8, 0, 8));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_set_identity("other", 0, 0, 0));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_set_identity("other", -1, 0, 2));
    memobs_set_log(NULL, NULL);
    memobs_get_identity(&id);
    CHECK_STR("job-7", id.job_id);
    CHECK_U64(3, id.rank);
    CHECK_U64(1, id.local_rank);
    CHECK_U64(8, id.world_size);
    CHECK_U64((uint64_t)getpid(), (uint64_t)id.pid);
    CHECK(id.host[0] != 0);
    snap();
    CHECK_STR("job-7", S.identity.job_id);
    memobs_set_identity("", 0, 0, 1);
}

/* ---- formats ------------------------------------------------------------- */

static void test_fmt_units(void) {
    char b[32];
    CHECK_STR("0 B", memobs_format_bytes(b, sizeof b, 0));
    CHECK_STR("999 B", memobs_format_bytes(b, sizeof b, 999));
    CHECK_STR("1.00 KB", memobs_format_bytes(b, sizeof b, 1000));
    CHECK_STR("1.00 MB", memobs_format_bytes(b, sizeof b, 999999));
    CHECK_STR("262.13 GB", memobs_format_bytes(b, sizeof b, 262130000000ull));
    CHECK_STR("18.45 EB", memobs_format_bytes(b, sizeof b, UINT64_MAX));
    CHECK_STR("850 ns", memobs_format_ns(b, sizeof b, 850));
    CHECK_STR("12.30 us", memobs_format_ns(b, sizeof b, 12300));
    CHECK_STR("4.56 ms", memobs_format_ns(b, sizeof b, 4560000));
    CHECK_STR("1.23 s", memobs_format_ns(b, sizeof b, 1230000000ull));
    CHECK_STR("", memobs_format_bytes(NULL, 10, 5));
    CHECK_STR("1.0", memobs_format_bytes(b, 4, 1000)); /* truncated, still terminated */
}

static char *summary_text(memobs_format_t fmt) {
    static char buf[16384];
    FILE *f = tmpfile();
    size_t n;
    CHECK_U64(MEMOBS_OK, memobs_write_summary(f, fmt));
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_text_summary(void) {
    const char *t;
    memobs_reset();
    memobs_set_identity("job-a", 1, 1, 2);
    MEMOBS_RECORD_H2D(4096, 1);
    MEMOBS_RECORD_H2D(1000, 0);
    MEMOBS_RECORD_D2H(123456789, 0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_D2D_CUR(77);
    t = summary_text(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(t, "== memobs summary == job job-a  rank 1/2 (local 1)");
    CHECK_HAS(t, "  xfer  |      total      ops |    prefill      ops |     decode      ops |   unphased      ops\n");
    CHECK_HAS(t, "  H2D   |    5.10 KB        2 |    4.10 KB        1 |    1.00 KB        1 |        0 B        0\n");
    CHECK_HAS(t, "  D2H   |  123.46 MB        1 |        0 B        0 |  123.46 MB        1 |        0 B        0\n");
    CHECK_HAS(t, "  D2D   |       77 B        1 |        0 B        0 |        0 B        0 |       77 B        1\n");
    CHECK_HAS(t, "  all   |  123.46 MB        4 |    4.10 KB        1 |  123.46 MB        2 |       77 B        1\n");
    CHECK_HAS(t, "  TTFT         0          -");
    CHECK_HAS(t, "  requests: 0 begun, 0 completed, 0 aborted, 0 abandoned, 0 in flight\n");
    CHECK(strstr(t, "problems:") == NULL);
    memobs_set_log(capture_log, NULL);
    memobs_request_end(12345);
    memobs_set_log(NULL, NULL);
    t = summary_text(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(t, "  problems: 1 token/end for ids not in flight\n");
    memobs_set_identity("", 0, 0, 1);
}

static void test_json_summary(void) {
    const char *t;
    memobs_reset();
    memobs_set_identity("we\"ird\\job\nid", 0, 0, 1);
    MEMOBS_RECORD_D2H(512, 1);
    MEMOBS_COUNTER_ADD("json_counter", 9);
    t = summary_text(MEMOBS_FORMAT_JSON);
    CHECK_HAS(t, "{\"memobs_version\":\"" MEMOBS_VERSION "\",\"identity\":{\"job_id\":\"we\\\"ird\\\\job\\nid\"");
    CHECK_HAS(t, "\"prefill\":{\"h2d_bytes\":0,\"h2d_count\":0,\"d2h_bytes\":512,\"d2h_count\":1,");
    CHECK_HAS(t, "\"json_counter\":9");
    CHECK_HAS(t, "\"ttft\":{\"count\":0,");
    CHECK(t[strlen(t) - 1] == '\n' && t[strlen(t) - 2] == '}');
    memobs_set_identity("", 0, 0, 1);
}

/* ---- manual records apart from observed ones ------------------------------ */

/* The rules of memobs_set_manual_apart, as a model: a record made while memobs
   is on goes to the manual figures when records are apart and the thread
   is not inside an observer, else to the transfer figures. */
static uint64_t man_model[2][3][3][2]; /* [manual?][phase][dir][bytes, count] */

static void man_check(int apart, int line) {
    const memobs_dirs_t *obs[3], *man[3];
    unsigned p, d;
    int before = check__failed_checks;
    snap();
    obs[0] = &S.unphased; obs[1] = &S.prefill; obs[2] = &S.decode;
    man[0] = &S.manual.unphased; man[1] = &S.manual.prefill; man[2] = &S.manual.decode;
    CHECK_U64(apart, S.manual.apart);
    for (p = 0; p < 3; p++)
        for (d = 0; d < 3; d++) {
            const memobs_xfer_t *o = d == 0 ? &obs[p]->h2d : d == 1 ? &obs[p]->d2h : &obs[p]->d2d;
            const memobs_xfer_t *m = d == 0 ? &man[p]->h2d : d == 1 ? &man[p]->d2h : &man[p]->d2d;
            CHECK_U64(man_model[0][p][d][0], o->bytes);
            CHECK_U64(man_model[0][p][d][1], o->count);
            CHECK_U64(man_model[1][p][d][0], m->bytes);
            CHECK_U64(man_model[1][p][d][1], m->count);
        }
    CHECK_U64(man_model[1][1][0][0] + man_model[1][2][0][0] + man_model[1][0][0][0], S.manual.total.h2d.bytes);
    CHECK_U64(man_model[1][1][2][1] + man_model[1][2][2][1] + man_model[1][0][2][1], S.manual.total.d2d.count);
    if (check__failed_checks != before) printf("    # (model check after step %d)\n", line);
}

/* 4000 random steps on one thread: records through every entry point
   (the macros, the _CUR forms, memobs_record_xfer, n at once as a graph launch
   records them), observer scopes, apart on and off, enable off and on,
   resets; the figures equal the model after every 40th step. */
static void test_manual_apart_model(void) {
    uint64_t r = 0x9e3779b97f4a7c15ull;
    int step, apart = 0, on = 1, observing = 0;
    unsigned phase = 0;
    memobs_reset();
    memset(man_model, 0, sizeof man_model);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    for (step = 0; step < 4000; step++) {
        unsigned op, d, p, n = 1;
        uint64_t bytes;
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        op = (unsigned)(r >> 33) % 100;
        d = (unsigned)(r >> 20) % 3;
        p = (unsigned)(r >> 24) % 3;
        bytes = (r >> 40) % 5000;
        if (op < 30) { /* a macro with an explicit phase (prefill or decode) */
            p = (r >> 24) & 1 ? 1 : 2;
            if (d == 0) MEMOBS_RECORD_H2D(bytes, p == 1);
            else if (d == 1) MEMOBS_RECORD_D2H(bytes, p == 1);
            else MEMOBS_RECORD_D2D(bytes, p == 1);
        } else if (op < 45) { /* the thread's phase */
            p = phase;
            if (d == 0) MEMOBS_RECORD_H2D_CUR(bytes);
            else if (d == 1) MEMOBS_RECORD_D2H_CUR(bytes);
            else MEMOBS_RECORD_D2D_CUR(bytes);
        } else if (op < 60) {
            memobs_record_xfer((memobs_dir_t)d, bytes, (memobs_phase_t)p);
        } else if (op < 68) {
            n = 1 + (unsigned)(r >> 50) % 5;
            memobs__xfer_n(d, p, bytes, n);
        } else if (op < 78) {
            if (observing && (r >> 45) & 1) {
                memobs_observer_leave();
                observing--;
            } else {
                memobs_observer_enter();
                observing++;
            }
            continue;
        } else if (op < 84) {
            phase = p;
            memobs_set_phase((memobs_phase_t)p);
            continue;
        } else if (op < 91) {
            CHECK_U64(apart, memobs_set_manual_apart(!apart));
            apart = !apart;
            continue;
        } else if (op < 97) {
            on = !on;
            memobs_set_enabled(on);
            continue;
        } else if (op < 98) {
            memobs_reset();
            memset(man_model, 0, sizeof man_model);
            continue;
        } else {
            memobs_set_log(capture_log, NULL);
            memobs_record_xfer((memobs_dir_t)3, 99, MEMOBS_PHASE_PREFILL); /* bad: counted as a problem only */
            memobs_set_log(NULL, NULL);
            continue;
        }
        if (on) {
            man_model[apart && !observing][p][d][0] += bytes;
            man_model[apart && !observing][p][d][1] += n;
        }
        if (step % 40 == 0) man_check(apart, step);
    }
    man_check(apart, step);
    while (observing--) memobs_observer_leave();
    memobs_observer_leave(); /* one too many: stays at 0 */
    memobs_set_manual_apart(1);
    MEMOBS_RECORD_D2H(5, 1);
    snap();
    CHECK_U64(man_model[1][1][1][0] + 5, S.manual.prefill.d2h.bytes);
    memobs_set_manual_apart(0);
    memobs_set_enabled(1);
    memobs_set_phase(MEMOBS_PHASE_NONE);
}

#define MAN_THREADS 4
#define MAN_PER 20000
static void *man_recorder(void *arg) {
    unsigned k = (unsigned)(uintptr_t)arg, i;
    for (i = 0; i < MAN_PER; i++) {
        if (i % 3 == 0) memobs_observer_enter();
        MEMOBS_RECORD_H2D(k + 1, i & 1); /* observed when i % 3 == 0 */
        if (i % 3 == 0) memobs_observer_leave();
        MEMOBS_RECORD_D2D(2, 0); /* always manual */
        MEMOBS_RECORD_S2H(k + 10, 0); /* storage: never apart, inside an observer or not */
        if (i % 2) MEMOBS_RECORD_XFER_NS(MEMOBS_DIR_D2S, 3, MEMOBS_PHASE_PREFILL, 5); /* timed: never apart */
    }
    return NULL;
}

/* 4 threads, records apart the whole time: every figure exact. */
static void test_manual_apart_threads(void) {
    pthread_t t[MAN_THREADS];
    uint64_t k, i, obs_b = 0, obs_n = 0, man_b = 0, man_n = 0, obs_pre = 0, man_pre = 0;
    memobs_reset();
    memobs_set_manual_apart(1);
    for (k = 0; k < MAN_THREADS; k++) pthread_create(&t[k], NULL, man_recorder, (void *)(uintptr_t)k);
    for (k = 0; k < MAN_THREADS; k++) pthread_join(t[k], NULL);
    memobs_set_manual_apart(0);
    for (k = 0; k < MAN_THREADS; k++)
        for (i = 0; i < MAN_PER; i++) {
            if (i % 3 == 0) {
                obs_b += k + 1, obs_n++;
                if (i & 1) obs_pre += k + 1;
            } else {
                man_b += k + 1, man_n++;
                if (i & 1) man_pre += k + 1;
            }
        }
    snap();
    CHECK_U64(0, S.manual.apart);
    CHECK_U64(obs_b, S.total.h2d.bytes);
    CHECK_U64(obs_n, S.total.h2d.count);
    CHECK_U64(obs_pre, S.prefill.h2d.bytes);
    CHECK_U64(man_b, S.manual.total.h2d.bytes);
    CHECK_U64(man_n, S.manual.total.h2d.count);
    CHECK_U64(man_pre, S.manual.prefill.h2d.bytes);
    CHECK_U64(0, S.total.d2d.count);
    CHECK_U64((uint64_t)MAN_THREADS * MAN_PER * 2, S.manual.decode.d2d.bytes);
    CHECK_U64((uint64_t)MAN_THREADS * MAN_PER, S.manual.total.d2d.count);
    /* the storage directions are the program's figures, never counted apart */
    CHECK_U64((uint64_t)MAN_PER * (10 + 11 + 12 + 13), S.decode.s2h.bytes);
    CHECK_U64((uint64_t)MAN_THREADS * MAN_PER, S.total.s2h.count);
    CHECK_U64((uint64_t)MAN_THREADS * (MAN_PER / 2) * 3, S.prefill.d2s.bytes);
    CHECK_U64((uint64_t)MAN_THREADS * (MAN_PER / 2), S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2S].count);
    CHECK_U64((uint64_t)MAN_THREADS * (MAN_PER / 2) * 5, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2S].ns);
    CHECK_U64(0, S.manual.total.s2h.count + S.manual.total.d2s.count);
    CHECK_U64((uint64_t)MAN_THREADS * MAN_PER, S.sizes[MEMOBS_DIR_S2H].buckets[4]); /* 10..13 B: (8, 16] */
    memobs_reset();
    snap();
    CHECK_U64(0, S.manual.total.h2d.count);
}

static char *summary_text(memobs_format_t fmt);

/* The text summary's check table and the JSON "manual" object; neither
   table nor figures when nothing was apart. */
static void test_manual_apart_summaries(void) {
    const char *t;
    memobs_reset();
    MEMOBS_RECORD_H2D(3000, 1);
    t = summary_text(MEMOBS_FORMAT_TEXT);
    CHECK(strstr(t, "  check |") == NULL);
    t = summary_text(MEMOBS_FORMAT_JSON);
    CHECK_HAS(t, "\"manual\":{\"apart\":false,\"total\":{\"h2d_bytes\":0,\"h2d_count\":0,");
    memobs_set_manual_apart(1);
    MEMOBS_RECORD_H2D(1000, 1); /* manual: 2000 B less than observed */
    MEMOBS_RECORD_H2D(0, 1);
    MEMOBS_RECORD_D2H(4096, 0); /* manual only */
    memobs_observer_enter();
    MEMOBS_RECORD_D2D(64, 0);
    memobs_observer_leave();
    t = summary_text(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(t, "  check |   observed      ops |     manual      ops |  manual-obs       ops");
    CHECK_HAS(t, "  H2D   |    3.00 KB        1 |    1.00 KB        2 |    -2.00 KB        +1\n");
    CHECK_HAS(t, "  D2H   |        0 B        0 |    4.10 KB        1 |    +4.10 KB        +1\n");
    CHECK_HAS(t, "  D2D   |       64 B        1 |        0 B        0 |       -64 B        -1\n");
    CHECK_HAS(t, "  H2D   by phase, observed: prefill 3.00 KB, decode 0 B, unphased 0 B; manual: prefill 1.00 KB, "
                 "decode 0 B, unphased 0 B\n");
    CHECK_HAS(t, "  D2H   by phase, observed: prefill 0 B, decode 0 B, unphased 0 B; manual: prefill 0 B, "
                 "decode 4.10 KB, unphased 0 B\n");
    t = summary_text(MEMOBS_FORMAT_JSON);
    CHECK_HAS(t, "\"manual\":{\"apart\":true,\"total\":{\"h2d_bytes\":1000,\"h2d_count\":2,\"d2h_bytes\":4096,"
                 "\"d2h_count\":1,\"d2d_bytes\":0,\"d2d_count\":0,\"h2s_bytes\":0,\"h2s_count\":0,\"s2h_bytes\":0,"
                 "\"s2h_count\":0,\"d2s_bytes\":0,\"d2s_count\":0,\"s2d_bytes\":0,\"s2d_count\":0},\"prefill\":{"
                 "\"h2d_bytes\":1000,\"h2d_count\":2,");
    memobs_set_manual_apart(0);
    memobs_reset();
}

/* ---- bad input ----------------------------------------------------------- */

static void test_bad_input(void) {
    memobs_reset();
    memobs_set_log(capture_log, NULL);
    log_count = 0;
    memobs_get_summary(NULL);
    memobs_get_identity(NULL);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_write_summary(NULL, MEMOBS_FORMAT_TEXT));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_write_summary(stderr, (memobs_format_t)5));
    CHECK_U64(MEMOBS_ERR_IO, memobs_write_summary_file("/nonexistent-dir/x/summary.txt", MEMOBS_FORMAT_TEXT));
    CHECK_HAS(log_last, "cannot write the summary to '/nonexistent-dir/x/summary.txt'");
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_write_summary_file(NULL, MEMOBS_FORMAT_TEXT));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_write_summary_file("", MEMOBS_FORMAT_TEXT));
    MEMOBS_RECORD_XFER(7, 100, MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_H2D, 100, 3);
    memobs_record_xfer(MEMOBS_DIR_D2H, 10, MEMOBS_PHASE_DECODE);
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(2, S.bad_records);
    CHECK_U64(10, S.total.d2h.bytes);
    CHECK_U64(0, S.total.h2d.bytes);
    CHECK(log_count >= 4);
    CHECK_STR("invalid argument", memobs_strerror(MEMOBS_ERR_INVALID));
    CHECK_STR("unknown error", memobs_strerror(-99));
}

static void test_warn_once(void) {
    int i;
    memobs_reset();
    memobs__g.warned.v = 0;
    memobs_set_log(capture_log, NULL);
    log_count = 0;
    for (i = 0; i < 100; i++) memobs_request_token(555);
    memobs_set_log(NULL, NULL);
    snap();
    CHECK_U64(1, log_count);
    CHECK_U64(100, S.requests_unknown);
    CHECK_HAS(log_last, "request 555");
}

static void test_summary_file_path_expansion(void) {
    char path[256], want[256];
    FILE *f;
    snprintf(path, sizeof path, "/tmp/memobs_test_%%p_r%%r_%%%%.json");
    snprintf(want, sizeof want, "/tmp/memobs_test_%d_r0_%%.json", (int)getpid());
    CHECK_U64(MEMOBS_OK, memobs_write_summary_file(path, MEMOBS_FORMAT_JSON));
    f = fopen(want, "r");
    CHECK(f != NULL);
    if (f) fclose(f);
    remove(want);
}

/* ---- fork ---------------------------------------------------------------- */

static void test_fork_child_keeps_working(void) {
    pid_t pid;
    int status = 0;
    memobs_reset();
    MEMOBS_RECORD_H2D(100, 1);
    pid = fork();
    if (pid == 0) {
        pthread_t t;
        static memobs_summary_t c;
        MEMOBS_RECORD_H2D(50, 1);
        pthread_create(&t, NULL, one_record, NULL); /* new threads work in the child */
        pthread_join(t, NULL);
        memobs_get_summary(&c);
        _exit(c.total.h2d.bytes == 150 && c.prefill.d2h.bytes == 5 && c.identity.pid == (int64_t)getpid() ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    snap();
    CHECK_U64(100, S.total.h2d.bytes); /* the child's records stay in the child */
}

int main(void) {
    check__suite = TEST_SUITE;
    RUN(test_counts_by_direction_and_phase);
    RUN(test_thread_phase);
    RUN(test_runtime_disable);
    RUN(test_threads_exact);
    RUN(test_thread_exit_recycles_shards);
    RUN(test_reset_races_recorders);
    RUN(test_histogram_error_bound);
    RUN(test_global_clock);
    RUN(test_recorded_latency);
    RUN(test_request_lifecycle);
    RUN(test_request_table_full);
    RUN(test_request_table_model);
    RUN(test_requests_from_threads);
    RUN(test_identity);
    RUN(test_fmt_units);
    RUN(test_text_summary);
    RUN(test_json_summary);
    RUN(test_manual_apart_model);
    RUN(test_manual_apart_threads);
    RUN(test_manual_apart_summaries);
    RUN(test_bad_input);
    RUN(test_warn_once);
    RUN(test_summary_file_path_expansion);
    RUN(test_counters); /* fills the counter table: keep it last but fork */
    RUN(test_fork_child_keeps_working);
    return CHECK_DONE();
}
