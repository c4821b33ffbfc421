/* Transfers in flight (memobs_xfer_begin/_end/_cancel, memobs_get_inflight,
   MEMOBS_STUCK_S): threads beginning and ending at once with exact totals,
   ends on another thread, a full table (MEMOBS_MAX_INFLIGHT 64 here),
   stale, double, zero and forged tokens, request attribution, the stuck
   warning once per transfer with its timeline and Stormlog events, reset,
   fork, and the figures in text, JSON and Prometheus. The clock of
   transfers in flight is the test's (MEMOBS__XIN_NOW: the monotonic clock
   plus an offset the test moves), so nothing waits on wall time. Built as
   C99, C++17, ASan+UBSan and TSan (tests/core/test_inflight.sh, which
   also runs the modes below in fresh processes). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
static uint64_t test_skew; /* ns added to the clock of transfers in flight */
static uint64_t test_now(void);
#define MEMOBS__XIN_NOW() test_now()
#define MEMOBS_MAX_INFLIGHT 64
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "inflight"
#endif

static uint64_t test_now(void) { return memobs_now_ns() + __atomic_load_n(&test_skew, __ATOMIC_RELAXED); }
static void skew(uint64_t ns) { __atomic_add_fetch(&test_skew, ns, __ATOMIC_RELAXED); }

/* The log, kept (the worker may log too: under a lock). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logs[64][512];
static int nlog;
static void keep_log(int level, const char *msg, void *user) {
    (void)level;
    (void)user;
    pthread_mutex_lock(&log_lock);
    if (nlog < 64) snprintf(logs[nlog], sizeof logs[0], "%s", msg);
    nlog++;
    pthread_mutex_unlock(&log_lock);
}
static int logged(const char *s) {
    int i, n = 0;
    pthread_mutex_lock(&log_lock);
    for (i = 0; i < nlog && i < 64; i++) n += strstr(logs[i], s) != NULL;
    pthread_mutex_unlock(&log_lock);
    return n;
}
static void log_clear(void) {
    pthread_mutex_lock(&log_lock);
    nlog = 0;
    pthread_mutex_unlock(&log_lock);
}

static memobs_summary_t S;
static memobs_inflight_t X;
static void snap(void) { memobs_get_summary(&S); }
static void inflight(void) { CHECK_U64(MEMOBS_OK, memobs_get_inflight(&X)); }

/* Everything a writer wrote to a temporary FILE. */
static char *written(int (*w)(FILE *)) {
    FILE *f = tmpfile();
    long n;
    char *b;
    if (!f) return NULL;
    CHECK_U64(MEMOBS_OK, w(f));
    n = ftell(f);
    rewind(f);
    b = (char *)malloc((size_t)(n > 0 ? n : 0) + 1);
    if (b) b[fread(b, 1, (size_t)(n > 0 ? n : 0), f)] = 0;
    fclose(f);
    return b;
}

static void test_begin_end(void) {
    uint64_t t, t2;
    memobs_reset();
    log_clear();
    t = memobs_xfer_begin(MEMOBS_DIR_S2H, 4096, MEMOBS_PHASE_DECODE);
    CHECK(t != 0);
    skew(2000000); /* 2 ms later */
    inflight();
    CHECK_U64(1, X.count);
    CHECK_U64(4096, X.bytes);
    CHECK_U64(1, X.dir[MEMOBS_DIR_S2H].count);
    CHECK_U64(4096, X.dir[MEMOBS_DIR_S2H].bytes);
    CHECK(X.dir[MEMOBS_DIR_S2H].oldest_ns >= 2000000);
    CHECK_U64(X.dir[MEMOBS_DIR_S2H].oldest_ns, X.oldest_ns);
    CHECK_U64(0, X.dir[MEMOBS_DIR_H2D].count);
    CHECK_U64(64, X.capacity);
    snap();
    CHECK_U64(0, S.total.s2h.bytes); /* recorded at the end, not the begin */
    CHECK_U64(1, S.in_flight.count);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(t));
    snap();
    CHECK_U64(4096, S.decode.s2h.bytes);
    CHECK_U64(1, S.decode.s2h.count);
    CHECK_U64(4096, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2H].bytes);
    CHECK(S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2H].ns >= 2000000); /* the time between begin and end */
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(0, S.in_flight.oldest_ns);
    CHECK_U64(1, S.in_flight.ended);
    /* cancel: out of flight, no record */
    t2 = memobs_xfer_begin(MEMOBS_DIR_H2S, 100, MEMOBS_PHASE_NONE);
    CHECK_U64(MEMOBS_OK, memobs_xfer_cancel(t2));
    snap();
    CHECK_U64(0, S.total.h2s.bytes);
    CHECK_U64(1, S.in_flight.cancelled);
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(0, S.in_flight.misuse);
    CHECK_U64(0, (uint64_t)nlog);
}

static void test_bad_tokens(void) {
    uint64_t a, b;
    memobs_reset();
    log_clear();
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(0));
    a = memobs_xfer_begin(MEMOBS_DIR_H2D, 10, MEMOBS_PHASE_PREFILL);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(a));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(a)); /* twice */
    b = memobs_xfer_begin(MEMOBS_DIR_H2D, 20, MEMOBS_PHASE_PREFILL); /* the same slot, a new generation */
    CHECK_U64((uint32_t)a, (uint32_t)b);
    CHECK(a != b);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(a)); /* stale */
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_cancel(a));
    inflight();
    CHECK_U64(1, X.count); /* the stale token did not end b */
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(UINT64_C(0xdead00000005)));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(UINT64_C(0x100000000)));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_xfer_end(UINT64_MAX));
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(b));
    snap();
    CHECK_U64(7, S.in_flight.misuse);
    CHECK_U64(30, S.prefill.h2d.bytes);
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(1, (uint64_t)logged("not a transfer in flight")); /* one warning for all */
    /* bad input at the begin: no token, a bad record; memobs off: no token, nothing counted */
    CHECK_U64(0, memobs_xfer_begin((memobs_dir_t)9, 1, MEMOBS_PHASE_NONE));
    CHECK_U64(0, memobs_xfer_begin(MEMOBS_DIR_H2D, MEMOBS_MAX_BYTES + 1, MEMOBS_PHASE_NONE));
    CHECK_U64(0, memobs_xfer_begin(MEMOBS_DIR_H2D, 1, (memobs_phase_t)5));
    memobs_set_enabled(0);
    CHECK_U64(0, memobs_xfer_begin(MEMOBS_DIR_H2D, 1, MEMOBS_PHASE_NONE));
    memobs_set_enabled(1);
    snap();
    CHECK_U64(3, S.bad_records);
    CHECK_U64(0, S.in_flight.refused);
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_get_inflight(NULL));
}

static void test_full(void) {
    uint64_t tok[64], extra;
    unsigned i;
    memobs_reset();
    log_clear();
    for (i = 0; i < 64; i++) CHECK((tok[i] = memobs_xfer_begin(MEMOBS_DIR_D2S, i + 1, MEMOBS_PHASE_NONE)) != 0);
    extra = memobs_xfer_begin(MEMOBS_DIR_D2S, 1000, MEMOBS_PHASE_NONE);
    CHECK_U64(0, extra);
    CHECK_U64(0, memobs_xfer_begin(MEMOBS_DIR_D2S, 1000, MEMOBS_PHASE_NONE));
    inflight();
    CHECK_U64(64, X.count);
    CHECK_U64(64 * 65 / 2, X.dir[MEMOBS_DIR_D2S].bytes);
    CHECK_U64(2, X.refused);
    CHECK_U64(1, (uint64_t)logged("all 64 slots (MEMOBS_MAX_INFLIGHT) are taken"));
    for (i = 0; i < 64; i++) CHECK_U64(MEMOBS_OK, memobs_xfer_end(tok[i]));
    snap();
    CHECK_U64(64 * 65 / 2, S.total.d2s.bytes);
    CHECK_U64(64, S.total.d2s.count);
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(0, S.in_flight.bytes);
    CHECK((tok[0] = memobs_xfer_begin(MEMOBS_DIR_D2S, 1, MEMOBS_PHASE_NONE)) != 0); /* room again */
    CHECK_U64(MEMOBS_OK, memobs_xfer_cancel(tok[0]));
    CHECK_U64(1, (uint64_t)logged("slots (MEMOBS_MAX_INFLIGHT)")); /* still one warning */
}

/* Threads beginning and ending at once; half their ends on another thread. */
#define NT 6
#define PER 3000
static uint64_t handoff[NT][PER];
/* Ends the neighbour's handed-off transfers that are ready, from *k on. */
static void drain(unsigned id, unsigned *k) {
    unsigned nb = (id + 1) % NT;
    while (*k < PER) {
        uint64_t v;
        if (*k % 2 == 0) {
            ++*k;
            continue;
        }
        v = __atomic_load_n(&handoff[nb][*k], __ATOMIC_ACQUIRE);
        if (!v) break;
        CHECK_U64(MEMOBS_OK, memobs_xfer_end(v));
        ++*k;
    }
}

static void *worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg, i, k = 0;
    for (i = 0; i < PER; i++) {
        memobs_dir_t d = (memobs_dir_t)((id + i) % MEMOBS_DIRS);
        uint64_t t;
        while ((t = memobs_xfer_begin(d, (uint64_t)(id + 1) * 1000 + i % 7, MEMOBS_PHASE_PREFILL)) == 0) {
            drain(id, &k); /* the table is full for a moment: counted, retried */
            sched_yield();
        }
        if (i % 2) __atomic_store_n(&handoff[id][i], t, __ATOMIC_RELEASE);
        else CHECK_U64(MEMOBS_OK, memobs_xfer_end(t));
        drain(id, &k);
    }
    while (k < PER) {
        drain(id, &k);
        sched_yield();
    }
    return NULL;
}

static void test_threads(void) {
    pthread_t th[NT];
    uint64_t want[MEMOBS_DIRS], ops[MEMOBS_DIRS], refused;
    unsigned i, k, d;
    memobs_reset();
    memset(handoff, 0, sizeof handoff);
    memset(want, 0, sizeof want);
    memset(ops, 0, sizeof ops);
    for (i = 0; i < NT; i++)
        for (k = 0; k < PER; k++) {
            want[(i + k) % MEMOBS_DIRS] += (uint64_t)(i + 1) * 1000 + k % 7;
            ops[(i + k) % MEMOBS_DIRS]++;
        }
    for (i = 0; i < NT; i++) pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
    for (i = 0; i < NT; i++) pthread_join(th[i], NULL);
    snap();
    refused = S.in_flight.refused;
    for (d = 0; d < MEMOBS_DIRS; d++) {
        CHECK_U64(want[d], memobs_dirs_get(&S.prefill, d)->bytes);
        CHECK_U64(ops[d], memobs_dirs_get(&S.prefill, d)->count);
        CHECK_U64(ops[d], S.timed[MEMOBS_PHASE_PREFILL][d].count);
        CHECK_U64(0, S.in_flight.dir[d].count);
        CHECK_U64(0, S.in_flight.dir[d].bytes);
    }
    CHECK_U64(NT * PER, S.in_flight.ended);
    CHECK_U64(0, S.in_flight.count);
    CHECK_U64(0, S.in_flight.misuse);
    printf("    # %llu begins refused for a full table (64 slots, %d threads), retried\n",
           (unsigned long long)refused, NT);
}

/* Begun on a thread bound to a request, ended on another. */
static uint64_t att_tok;
static void *att_begin(void *arg) {
    (void)arg;
    memobs_request_enter(42);
    att_tok = memobs_xfer_begin(MEMOBS_DIR_S2D, 1 << 20, MEMOBS_PHASE_PREFILL);
    memobs_request_leave();
    return NULL;
}

static void test_attribution(void) {
    pthread_t th;
    memobs_request_info_t I;
    memobs_reset();
    memobs_request_begin(42);
    memobs_request_begin(43);
    pthread_create(&th, NULL, att_begin, NULL);
    pthread_join(th, NULL);
    skew(5000000);
    memobs_request_enter(43); /* the ending thread's own binding does not take it */
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(att_tok));
    memobs_request_leave();
    CHECK_U64(MEMOBS_OK, memobs_request_info(42, &I));
    CHECK_U64(1 << 20, I.xfer[MEMOBS_PHASE_PREFILL].s2d.bytes);
    CHECK_U64(1, I.xfer[MEMOBS_PHASE_PREFILL].s2d.count);
    CHECK(I.engine_ns[MEMOBS_DIR_S2D] >= 5000000);
    CHECK_U64(MEMOBS_OK, memobs_request_info(43, &I));
    CHECK_U64(0, I.xfer[MEMOBS_PHASE_PREFILL].s2d.bytes);
    snap();
    CHECK_U64(1 << 20, S.attributed.prefill.s2d.bytes);
    CHECK_U64(1 << 20, S.prefill.s2d.bytes);
    /* unbound at the begin: the ending thread's binding takes it */
    att_tok = memobs_xfer_begin(MEMOBS_DIR_S2H, 300, MEMOBS_PHASE_DECODE);
    memobs_request_enter(43);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(att_tok));
    memobs_request_leave();
    CHECK_U64(MEMOBS_OK, memobs_request_info(43, &I));
    CHECK_U64(300, I.xfer[MEMOBS_PHASE_DECODE].s2h.bytes);
    memobs_request_end(42);
    memobs_request_end(43);
}

static void test_stuck(void) {
    uint64_t a, b, c;
    char *tl, *sl, *txt;
    memobs_reset();
    log_clear();
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(4096));
    memobs_request_begin(7);
    memobs_request_enter(7);
    a = memobs_xfer_begin(MEMOBS_DIR_S2H, 3 << 20, MEMOBS_PHASE_DECODE);
    memobs_request_leave();
    skew(30ull * 1000000000u);
    b = memobs_xfer_begin(MEMOBS_DIR_H2S, 5000, MEMOBS_PHASE_NONE);
    inflight();
    CHECK_U64(0, X.stuck);
    CHECK_U64(0, X.stuck_total);
    CHECK_U64(60ull * 1000000000u, X.stuck_after_ns);
    skew(31ull * 1000000000u); /* a: 61 s in flight; b: 31 s */
    c = memobs_xfer_begin(MEMOBS_DIR_D2H, 1, MEMOBS_PHASE_NONE); /* a begin checks too */
    CHECK_U64(MEMOBS_OK, memobs_xfer_cancel(c));
    inflight();
    CHECK_U64(1, X.stuck);
    CHECK_U64(1, X.stuck_total);
    CHECK(X.dir[MEMOBS_DIR_S2H].oldest_ns >= 61ull * 1000000000u);
    CHECK_U64(1, (uint64_t)logged("a S2H transfer of 3.15 MB (memobs_xfer_begin, request 7) has been in flight for"));
    CHECK_U64(1, (uint64_t)logged("past MEMOBS_STUCK_S=60 s"));
    snap(); /* again: no second warning for it */
    CHECK_U64(1, S.in_flight.stuck_total);
    CHECK_U64(1, (uint64_t)logged("has been in flight"));
    skew(30ull * 1000000000u); /* b: 61 s */
    inflight();
    CHECK_U64(2, X.stuck);
    CHECK_U64(2, X.stuck_total);
    CHECK_U64(2, (uint64_t)logged("has been in flight"));
    CHECK_U64(1, (uint64_t)logged("a H2S transfer of 5.00 KB (memobs_xfer_begin) has been in flight"));
    txt = (char *)malloc(8192);
    if (txt) {
        memobs__out_t o;
        memobs__out_string(&o, txt, 8192);
        memobs__xin_text(&o, &X);
        memobs__out_end(&o);
        CHECK_HAS(txt, "transfers in flight: 2, ");
        CHECK_HAS(txt, "S2H 1, 3.15 MB, oldest ");
        CHECK_HAS(txt, "now, 2 in the window");
        free(txt);
    }
    tl = written(memobs_write_timeline);
    sl = written(memobs_write_stormlog);
    if (tl && sl) {
        CHECK_HAS(tl, "\"name\":\"transfer stuck\"");
        CHECK_HAS(tl, "\"direction\":\"S2H\",\"bytes\":3145728,\"in_flight_ns\":");
        CHECK_HAS(tl, "\"origin\":\"memobs_xfer_begin\",\"request\":7}");
        CHECK_HAS(sl, "\"event_type\":\"transfer_stuck\"");
        CHECK_HAS(sl, "\"direction\":\"s2h\",\"bytes\":3145728,");
        CHECK_HAS(sl, "\"request_id\":7}");
        CHECK_HAS(sl, "\"direction\":\"h2s\",\"bytes\":5000,");
    }
    free(tl);
    free(sl);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(a));
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(b));
    inflight();
    CHECK_U64(0, X.stuck);
    CHECK_U64(2, X.stuck_total);
    memobs_reset(); /* the window's counts start again */
    inflight();
    CHECK_U64(0, X.stuck_total);
    CHECK_U64(0, X.ended);
    memobs_request_end(7);
    (void)memobs_timeline_stop();
}

/* More than MEMOBS__XIN_WARN_MAX stuck: warnings stop, counts go on. */
static void test_stuck_cap(void) {
    uint64_t tok[40];
    unsigned i;
    memobs_reset();
    log_clear();
    for (i = 0; i < 40; i++) tok[i] = memobs_xfer_begin(MEMOBS_DIR_D2D, 64, MEMOBS_PHASE_NONE);
    skew(61ull * 1000000000u);
    inflight();
    CHECK_U64(40, X.stuck_total);
    CHECK_U64(40, X.stuck);
    CHECK_U64(8, (uint64_t)logged("has been in flight")); /* 8 at a time named, the rest by count */
    CHECK_U64(1, (uint64_t)logged("more stuck past MEMOBS_STUCK_S"));
    for (i = 0; i < 40; i++) CHECK_U64(MEMOBS_OK, memobs_xfer_end(tok[i]));
    for (i = 0; i < 40; i++) tok[i] = memobs_xfer_begin(MEMOBS_DIR_D2D, 64, MEMOBS_PHASE_NONE);
    skew(61ull * 1000000000u);
    inflight();
    CHECK_U64(80, X.stuck_total);
    CHECK_U64(1, (uint64_t)logged("after 16 warnings they are counted only"));
    /* 16 warnings in all: 2 in test_stuck, 8 named and one "more" line, then 5 */
    CHECK_U64(13, (uint64_t)logged("has been in flight"));
    for (i = 0; i < 40; i++) CHECK_U64(MEMOBS_OK, memobs_xfer_end(tok[i]));
}

static void test_outputs(void) {
    uint64_t a;
    char *prom, *json;
    FILE *f;
    memobs_reset();
    a = memobs_xfer_begin(MEMOBS_DIR_D2H, 777, MEMOBS_PHASE_NONE);
    skew(1500000000u);
    prom = written(memobs_write_prometheus);
    f = tmpfile();
    json = NULL;
    if (f) {
        long n;
        memobs_write_summary(f, MEMOBS_FORMAT_JSON);
        n = ftell(f);
        rewind(f);
        json = (char *)malloc((size_t)n + 1);
        if (json) json[fread(json, 1, (size_t)n, f)] = 0;
        fclose(f);
    }
    if (prom && json) {
        CHECK_HAS(prom, "# TYPE memobs_transfers_in_flight gauge\n");
        CHECK_HAS(prom, ",direction=\"d2h\"} 1\n");
        CHECK_HAS(prom, "memobs_transfer_in_flight_bytes{");
        CHECK_HAS(prom, ",direction=\"d2h\"} 777\n");
        CHECK_HAS(prom, ",direction=\"h2d\"} 0\n");
        CHECK_HAS(prom, "# TYPE memobs_transfer_oldest_in_flight_seconds gauge\n");
        CHECK_HAS(prom, "# TYPE memobs_transfers_stuck_total counter\n");
        CHECK_HAS(prom, "memobs_transfer_misuse_total{");
        CHECK_HAS(prom, ",kind=\"token_not_in_flight\"} 0\n");
        CHECK_HAS(json, "\"in_flight\":{\"directions\":{\"h2d\":{\"count\":0,\"bytes\":0,\"oldest_ns\":0},"
                        "\"d2h\":{\"count\":1,\"bytes\":777,\"oldest_ns\":");
        CHECK_HAS(json, "\"capacity\":64}");
    }
    free(prom);
    free(json);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(a));
}

static void test_fork(void) {
    uint64_t a = memobs_xfer_begin(MEMOBS_DIR_H2D, 55, MEMOBS_PHASE_NONE);
    pid_t pid;
    int st = 0;
    if (MEMOBS__LOAD(&memobs__xin_stuck_ns.v)) CHECK_U64(1, MEMOBS__LOAD(&memobs__xin.bg.v)); /* its task scheduled */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        memobs_inflight_t x;
        int bad = 0;
        memobs_set_log(NULL, NULL);
        memobs_set_log(keep_log, NULL);
        /* the child has no worker and starts none for the check (its begins
           and reads run it): its task is never to be scheduled there */
        bad |= MEMOBS__LOAD(&memobs__xin.bg.v) != 2;
        memobs_get_inflight(&x);
        bad |= x.count != 0; /* the parent's are the parent's */
        bad |= memobs_xfer_end(a) != MEMOBS_ERR_INVALID;
        bad |= memobs_xfer_end(memobs_xfer_begin(MEMOBS_DIR_H2D, 1, MEMOBS_PHASE_NONE)) != MEMOBS_OK;
        memobs_get_inflight(&x);
        bad |= x.count != 0 || x.misuse < 1;
        _exit(bad);
    }
    CHECK(pid > 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    inflight();
    CHECK_U64(1, X.count);
    CHECK_U64(MEMOBS_OK, memobs_xfer_end(a));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    memobs_set_log(keep_log, NULL);
    if (!strcmp(mode, "stuck_env")) { /* MEMOBS_STUCK_S from the environment: its setting, in seconds */
        memobs_set_log(NULL, NULL);
        inflight();
        printf("%llu\n", (unsigned long long)X.stuck_after_ns);
        return 0;
    }
    if (!strcmp(mode, "worker")) { /* the background worker finds it: wait with a deadline, never a race */
        uint64_t t = memobs_xfer_begin(MEMOBS_DIR_S2H, 9, MEMOBS_PHASE_NONE), until = memobs_now_ns() + 60000000000ull;
        memobs_set_log(NULL, NULL); /* on stderr */
        while (MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_STUCK].v) == 0 && memobs_now_ns() < until) usleep(1000);
        printf("%llu\n", (unsigned long long)MEMOBS__LOAD(&memobs__xin.c[MEMOBS__XIN_C_STUCK].v));
        memobs_xfer_end(t);
        return 0;
    }
    RUN(test_begin_end);
    RUN(test_bad_tokens);
    RUN(test_full);
    RUN(test_threads);
    RUN(test_attribution);
    RUN(test_stuck);
    RUN(test_stuck_cap);
    RUN(test_outputs);
    RUN(test_fork);
    memobs_set_log(NULL, NULL);
    return CHECK_DONE();
}
