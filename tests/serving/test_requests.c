/* Tests of the per-request table of memobs.h under requests that never
   end: the request timeout (abandoned requests), the full table (the one
   idle longest dropped), and how both show in every output. Built as C99,
   C++17, ASan+UBSan and TSan by tests/serving/test_requests.sh.

   The table's clock is the test's (MEMOBS__REQ_NOW): a time the test sets
   and moves by hand, so a million requests run without a sleep and every
   expiry is exact; 0 hands it back to CLOCK_MONOTONIC (test_real_clock).

   Without arguments: the in-process tests; REQUESTS=N in the environment
   sets the size of the big runs (default 1000000). With "env": prints the
   timeout memobs read from MEMOBS_REQUEST_TIMEOUT_S, for the script. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
static uint64_t test_now(void);
#define MEMOBS__REQ_NOW() test_now()
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#ifndef TEST_SUITE
#define TEST_SUITE "requests"
#endif

#define MS 1000000ull
#define SEC 1000000000ull

static uint64_t fake_ns; /* the table's time; 0: CLOCK_MONOTONIC */
static uint64_t test_now(void) {
    uint64_t f = __atomic_load_n(&fake_ns, __ATOMIC_RELAXED);
    return f ? f : memobs_now_ns();
}
static void set_now(uint64_t t) { __atomic_store_n(&fake_ns, t, __ATOMIC_RELAXED); }
static void advance(uint64_t ns) { __atomic_fetch_add(&fake_ns, ns, __ATOMIC_RELAXED); }

static memobs_summary_t S; /* large: keep it off the stack */
static void snap(void) { memobs_get_summary(&S); }
static uint64_t nreq = 1000000;

static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0;
    memobs_set_log(capture_log, NULL);
}

/* Every request begun is in exactly one state. */
static void check_balance(void) {
    CHECK_U64(S.requests_begun, S.requests_completed + S.requests_aborted + S.requests_abandoned +
                                    S.requests_dropped + S.requests_in_flight);
}

/* A fresh window far from CLOCK_MONOTONIC's values, the table empty. */
static void start(uint64_t timeout) {
    set_now(1000000 * SEC);
    memobs_request_set_timeout(timeout);
    memobs_reset();
}

/* ---- the setting --------------------------------------------------------- */

static void test_timeout_setting(void) {
    CHECK_U64(600 * SEC, memobs_request_get_timeout()); /* the default; reading changes nothing */
    CHECK_U64(600 * SEC, memobs_request_get_timeout());
    CHECK_U64(600 * SEC, memobs_request_set_timeout(5 * MS));
    CHECK_U64(5 * MS, memobs_request_set_timeout(0));
    CHECK_U64(0, memobs_request_set_timeout(UINT64_MAX - 1)); /* clamped to 1e9 s */
    CHECK_U64(1000000000ull * SEC, memobs_request_set_timeout(600 * SEC));
}

/* ---- a million requests, 1% never ended ---------------------------------- */

/* Requests begin 1 us apart, each in flight for 64 begins (so about 64 at
   once), one in a hundred never ended (a client gone). Every completed one
   is timed exactly; with the timeout the abandoned ones leave the table
   as they expire and are counted exactly, nothing is dropped. */
#define WINDOW 64
static int abandoned_id(uint64_t i) { return i % 100 == 37; }

static void run_million(void) {
    uint64_t i;
    for (i = 0; i < nreq + WINDOW; i++) {
        if (i < nreq) {
            memobs_request_begin(i);
            if (!abandoned_id(i)) memobs_request_token(i);
        }
        if (i >= WINDOW && !abandoned_id(i - WINDOW)) {
            memobs_request_token(i - WINDOW);
            memobs_request_end(i - WINDOW);
        }
        advance(1000);
    }
}

static void test_million_timeout(void) {
    uint64_t abandoned = 0, i;
    for (i = 0; i < nreq; i++) abandoned += abandoned_id(i);
    start(10 * MS); /* 10,000 begins */
    log_start();
    run_million();
    advance(10 * MS); /* the last ones expire too */
    log_stop();
    snap();
    CHECK_U64(nreq, S.requests_begun);
    CHECK_U64(nreq - abandoned, S.requests_completed);
    CHECK_U64(nreq - abandoned, S.ttft.count); /* every completed request timed */
    CHECK_U64(nreq - abandoned, S.tpot.count);
    CHECK_U64(nreq - abandoned, S.e2e.count);
    CHECK_U64(WINDOW * 1000, S.e2e.max_ns); /* exact: the test's clock */
    CHECK_U64(abandoned, S.requests_abandoned);
    CHECK_U64(0, S.requests_dropped);
    CHECK_U64(0, S.requests_unknown);
    CHECK_U64(0, S.requests_in_flight);
    CHECK_U64(0, log_count); /* abandoning is not a warning */
    check_balance();
}

/* No timeout: the table fills with the abandoned ones, and each begin that
   finds its stripe full drops the one idle longest, an abandoned one (the
   live ones had a token within 64 us): still every completed request is
   timed; dropped + left in the table = abandoned. One warning. */
static void test_million_no_timeout(void) {
    uint64_t abandoned = 0, i;
    for (i = 0; i < nreq; i++) abandoned += abandoned_id(i);
    start(0);
    log_start();
    run_million();
    advance(1000 * SEC);
    log_stop();
    snap();
    CHECK_U64(nreq, S.requests_begun);
    CHECK_U64(nreq - abandoned, S.requests_completed);
    CHECK_U64(nreq - abandoned, S.ttft.count);
    CHECK_U64(nreq - abandoned, S.e2e.count);
    CHECK_U64(0, S.requests_abandoned);
    CHECK_U64(0, S.requests_unknown);
    CHECK_U64(abandoned, S.requests_dropped + S.requests_in_flight);
    if (abandoned > MEMOBS_MAX_REQUESTS) CHECK(S.requests_dropped > 0);
    CHECK_U64(S.requests_dropped ? 1 : 0, log_count);
    if (log_count) CHECK_U64(1, log_has("request table full (MEMOBS_MAX_REQUESTS=4096) of requests in flight"));
    check_balance();
    /* a timeout now ends the rest at the next summary */
    memobs_request_set_timeout(1 * SEC);
    snap();
    CHECK_U64(0, S.requests_in_flight);
    CHECK_U64(abandoned, S.requests_dropped + S.requests_abandoned);
    check_balance();
}

/* ---- which request goes ------------------------------------------------- */

/* Ids of stripe 0 of the table, in order. */
static void stripe_ids(uint64_t *out, unsigned n) {
    uint64_t id = 1;
    unsigned k = 0;
    for (; k < n; id++)
        if (memobs__mix(id) % MEMOBS__REQ_STRIPES == 0) out[k++] = id;
}

/* A full stripe drops the request idle longest, not the oldest: x begun
   first but with a recent token stays, y (begun second, silent) goes. */
static void test_evicts_longest_idle(void) {
    static uint64_t id[MEMOBS__REQ_PER_STRIPE + 1];
    unsigned k;
    stripe_ids(id, MEMOBS__REQ_PER_STRIPE + 1);
    start(0);
    log_start();
    for (k = 0; k < MEMOBS__REQ_PER_STRIPE; k++) {
        memobs_request_begin(id[k]);
        advance(1000);
        if (k >= 2) memobs_request_token(id[k]);
    }
    memobs_request_token(id[0]); /* x: begun first, active last */
    advance(1000);
    memobs_request_begin(id[MEMOBS__REQ_PER_STRIPE]); /* the stripe is full */
    snap();
    CHECK_U64(1, S.requests_dropped);
    CHECK_U64(MEMOBS__REQ_PER_STRIPE, S.requests_in_flight);
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("request table full"));
    memobs_request_token(id[1]); /* y is gone */
    memobs_request_token(id[0]); /* x is there */
    memobs_request_end(id[0]);
    snap();
    CHECK_U64(1, S.requests_unknown);
    CHECK_U64(1, S.requests_completed);
    log_stop();
    for (k = 2; k <= MEMOBS__REQ_PER_STRIPE; k++) memobs_request_end(id[k]);
    snap();
    CHECK_U64(0, S.requests_in_flight);
    CHECK_U64(MEMOBS__REQ_PER_STRIPE - 1, S.requests_completed);
    CHECK_U64(1, S.requests_aborted); /* the last one: no token */
    check_balance();
}

/* ---- what "idle" means ----------------------------------------------------- */

/* Idle time, not age: tokens every half timeout keep a request alive for
   ten timeouts. A token after the timeout finds it abandoned: the token
   is unknown and gives no sample. */
static void test_idle_not_age(void) {
    int k;
    start(100 * MS);
    memobs_request_begin(7);
    for (k = 0; k < 20; k++) {
        advance(50 * MS);
        memobs_request_token(7);
    }
    memobs_request_end(7);
    memobs_request_begin(8);
    advance(100 * MS - 1);
    memobs_request_token(8); /* 1 ns before its time: alive */
    advance(100 * MS);
    log_start();
    memobs_request_token(8); /* idle exactly the timeout: abandoned */
    memobs_request_end(8);
    log_stop();
    snap();
    CHECK_U64(1, S.requests_completed);
    CHECK_U64(1000 * MS, S.e2e.max_ns);
    CHECK_U64(2, S.ttft.count); /* 7's and 8's first tokens */
    CHECK_U64(19, S.tpot.count);
    CHECK_U64(1, S.requests_abandoned);
    CHECK_U64(2, S.requests_unknown);
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("token for request 8, which is not in flight (never begun, ended, or abandoned after "
                         "MEMOBS_REQUEST_TIMEOUT_S); ignored (counted)"));
    CHECK_U64(0, S.requests_in_flight);
    check_balance();
}

/* A summary counts the ones that expired with nothing else happening. */
static void test_summary_sweeps(void) {
    uint64_t i;
    start(1 * SEC);
    for (i = 0; i < 1000; i++) memobs_request_begin(500000 + i);
    advance(SEC - 1);
    snap();
    CHECK_U64(0, S.requests_abandoned);
    CHECK_U64(1000, S.requests_in_flight);
    advance(1);
    snap();
    CHECK_U64(1000, S.requests_abandoned);
    CHECK_U64(0, S.requests_in_flight);
    check_balance();
    /* a shorter timeout applies to the requests already in flight */
    for (i = 0; i < 10; i++) memobs_request_begin(600000 + i);
    advance(2 * MS);
    snap();
    CHECK_U64(10, S.requests_in_flight);
    CHECK_U64(1 * SEC, memobs_request_set_timeout(1 * MS));
    snap();
    CHECK_U64(1010, S.requests_abandoned);
    CHECK_U64(0, S.requests_in_flight);
}

/* ---- every output ---------------------------------------------------------- */

static char *text_of(int json) {
    FILE *f = tmpfile();
    char *t;
    if (!f) return NULL;
    CHECK_U64(MEMOBS_OK, memobs_write_summary(f, json ? MEMOBS_FORMAT_JSON : MEMOBS_FORMAT_TEXT));
    t = read_file(f);
    fclose(f);
    return t;
}

static void test_outputs(void) {
    char *t;
    size_t n;
    start(1 * SEC);
    memobs_request_begin(1);
    memobs_request_begin(2);
    memobs_request_begin(3);
    memobs_request_token(3);
    advance(2 * SEC);
    memobs_request_begin(4); /* in flight */
    if ((t = text_of(0)) != NULL) {
        CHECK_HAS(t, "  requests: 4 begun, 0 completed, 0 aborted, 3 abandoned, 1 in flight\n");
        free(t);
    }
    if ((t = text_of(1)) != NULL) {
        CHECK_HAS(t, "\"requests\":{\"begun\":4,\"completed\":0,\"aborted\":0,\"abandoned\":3,\"in_flight\":1,"
                     "\"dropped\":0,");
        free(t);
    }
    n = memobs_format_prometheus(NULL, 0);
    if ((t = (char *)malloc(n + 1)) != NULL) {
        memobs_format_prometheus(t, n + 1);
        CHECK_HAS(t, "# TYPE memobs_requests_abandoned_total counter\n");
        CHECK_HAS(t, "\nmemobs_requests_abandoned_total{");
        CHECK_HAS(t, "} 3\n# HELP memobs_requests_in_flight");
        free(t);
    }
    {
        FILE *f = tmpfile();
        if (f) {
            CHECK_U64(MEMOBS_OK, memobs_write_html(f));
            if ((t = read_file(f)) != NULL) {
                CHECK_HAS(t, "<span data-memobs=\"requests.abandoned\" data-v=\"3\">3</span> abandoned");
                free(t);
            }
            fclose(f);
        }
    }
    memobs_request_end(4);
}

/* ---- threads --------------------------------------------------------------- */

/* 4 threads each begin, token and end their own requests (1% abandoned)
   on the shared clock while the main thread takes summaries: nothing
   expires or is dropped while they run, and once everything has expired
   the counts are exact. */
#define THREADS 4
static void *worker(void *arg) {
    uint64_t base = (uint64_t)(uintptr_t)arg * 100000000ull, i, n = nreq / 10 / THREADS;
    for (i = 0; i < n; i++) {
        memobs_request_begin(base + i);
        advance(100);
        if (abandoned_id(i)) continue;
        memobs_request_token(base + i);
        memobs_request_token(base + i);
        memobs_request_end(base + i);
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t th[THREADS];
    uintptr_t k;
    uint64_t n = nreq / 10 / THREADS, abandoned = 0, i;
    int done = 0;
    for (i = 0; i < n; i++) abandoned += abandoned_id(i);
    start(3600 * SEC); /* nothing expires while they run, however slow */
    for (k = 0; k < THREADS; k++) CHECK_U64(0, (uint64_t)pthread_create(&th[k], NULL, worker, (void *)k));
    while (!done) { /* summaries while they run (not a consistent cut: the counts are read one by one) */
        snap();
        CHECK_U64(0, S.requests_abandoned + S.requests_dropped);
        done = S.requests_begun == n * THREADS;
        sched_yield();
    }
    for (k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    advance(3600 * SEC);
    snap();
    CHECK_U64(THREADS * n, S.requests_begun);
    CHECK_U64(THREADS * (n - abandoned), S.requests_completed);
    CHECK_U64(THREADS * (n - abandoned), S.ttft.count);
    CHECK_U64(THREADS * (n - abandoned), S.e2e.count);
    CHECK_U64(THREADS * abandoned, S.requests_abandoned);
    CHECK_U64(0, S.requests_dropped);
    CHECK_U64(0, S.requests_in_flight);
    check_balance();
}

/* ---- CLOCK_MONOTONIC --------------------------------------------------------- */

/* The real clock with a 20 ms timeout: one wait on a condition (the clock
   past the timeout), no sleep per request. */
static void test_real_clock(void) {
    uint64_t i, t0, limit;
    set_now(0);
    memobs_request_set_timeout(20 * MS);
    memobs_reset();
    for (i = 0; i < 100; i++) {
        memobs_request_begin(900000 + i);
        if (i % 2) memobs_request_token(900000 + i);
    }
    t0 = memobs_now_ns();
    limit = t0 + 60 * SEC; /* a failure bound, not a timing */
    while (memobs_now_ns() < t0 + 20 * MS && memobs_now_ns() < limit) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    snap();
    CHECK_U64(100, S.requests_abandoned);
    CHECK_U64(50, S.ttft.count);
    CHECK_U64(0, S.requests_in_flight);
    memobs_request_begin(1);
    memobs_request_token(1);
    memobs_request_end(1);
    snap();
    CHECK_U64(1, S.requests_completed);
    CHECK_U64(1, S.e2e.count);
    check_balance();
    memobs_request_set_timeout(600 * SEC);
}

int main(int argc, char **argv) {
    const char *s = getenv("REQUESTS");
    if (argc > 1 && strcmp(argv[1], "env") == 0) {
        printf("timeout %llu\n", (unsigned long long)memobs_request_get_timeout());
        return 0;
    }
    if (s && atoll(s) > 0) nreq = (uint64_t)atoll(s);
    check__suite = TEST_SUITE;
    RUN(test_timeout_setting);
    RUN(test_million_timeout);
    RUN(test_million_no_timeout);
    RUN(test_evicts_longest_idle);
    RUN(test_idle_not_age);
    RUN(test_summary_sweeps);
    RUN(test_outputs);
    RUN(test_threads);
    RUN(test_real_clock);
    return CHECK_DONE();
}
