/* Attribution to requests (memobs_request_enter/_leave, memobs_request_xfer,
   _xfer_ns, _xfer_split, tenants): each request's ledger against a model,
   attributed + unattributed = total under threads, the split's rounding,
   bad input, the summary's figures in text, JSON and Prometheus. Built as
   C99, C++17, ASan+UBSan and TSan (tests/core/test_attribution.sh, which
   also runs --lines under MEMOBS_REQUESTS and checks the file). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "attribution"
#endif

static memobs_summary_t S; /* large: keep it off the stack */
static memobs_request_info_t I;

static void snap(void) { memobs_get_summary(&S); }

static uint64_t led_bytes(const memobs_request_info_t *i, unsigned ph, unsigned d) {
    return memobs_dirs_get(&i->xfer[ph], d)->bytes;
}
static uint64_t led_ops(const memobs_request_info_t *i, unsigned ph, unsigned d) {
    return memobs_dirs_get(&i->xfer[ph], d)->count;
}
static uint64_t att_bytes(unsigned ph, unsigned d) {
    const memobs_dirs_t *a = ph == 0 ? &S.attributed.unphased : ph == 1 ? &S.attributed.prefill : &S.attributed.decode;
    return memobs_dirs_get(a, d)->bytes;
}
static uint64_t tot_bytes(unsigned ph, unsigned d) {
    const memobs_dirs_t *a = ph == 0 ? &S.unphased : ph == 1 ? &S.prefill : &S.decode;
    return memobs_dirs_get(a, d)->bytes;
}

/* The split's rule, computed another way: 128-bit arithmetic. */
static uint64_t model_part(uint64_t bytes, const uint64_t *sh, size_t n, size_t i) {
    unsigned __int128 sum = 0, c0 = 0, c1 = 0;
    size_t k;
    for (k = 0; k < n; k++) sum += sh ? sh[k] : 1u;
    for (k = 0; k < i; k++) c0 += sh ? sh[k] : 1u;
    c1 = c0 + (sh ? sh[i] : 1u);
    if (sum == 0) { /* all shares 0: equal */
        sum = n;
        c0 = i;
        c1 = i + 1;
    }
    return (uint64_t)((unsigned __int128)bytes * c1 / sum - (unsigned __int128)bytes * c0 / sum);
}

static void test_enter_leave(void) {
    memobs_reset();
    memobs_request_begin(11);
    memobs_request_enter(11);
    MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_H2D(24, 1);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H_CUR(512);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 4096, MEMOBS_PHASE_DECODE, 7000);
    memobs_region_begin("attr_step");
    {
        uint64_t t0 = memobs_now_ns();
        while (memobs_now_ns() == t0) {
        }
    }
    memobs_region_end();
    {
        uint64_t id = 0;
        CHECK_U64(1, memobs_request_current(&id));
        CHECK_U64(11, id);
    }
    memobs_request_leave();
    CHECK_U64(0, memobs_request_current(NULL));
    MEMOBS_RECORD_H2D(5, 1); /* not bound: unattributed */
    CHECK_U64(MEMOBS_OK, memobs_request_info(11, &I));
    CHECK_U64(1024, led_bytes(&I, MEMOBS_PHASE_PREFILL, MEMOBS_DIR_H2D));
    CHECK_U64(2, led_ops(&I, MEMOBS_PHASE_PREFILL, MEMOBS_DIR_H2D));
    CHECK_U64(512, led_bytes(&I, MEMOBS_PHASE_DECODE, MEMOBS_DIR_D2H));
    CHECK_U64(4096, led_bytes(&I, MEMOBS_PHASE_DECODE, MEMOBS_DIR_S2H));
    CHECK_U64(7000, I.engine_ns[MEMOBS_DIR_S2H]);
    CHECK_U64(7000, I.wait_ns);
    CHECK(I.region_ns > 0);
    CHECK_U64(MEMOBS_REQUEST_IN_FLIGHT, I.state);
    snap();
    CHECK_U64(1029, S.total.h2d.bytes);
    CHECK_U64(1024, S.attributed.total.h2d.bytes);
    CHECK_U64(2, S.attributed.total.h2d.count);
    CHECK_U64(4096, S.attributed.decode.s2h.bytes);
    CHECK_U64(0, S.attributed.orphan_bytes);
    memobs_request_token(11);
    memobs_request_end(11);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_request_info(11, &I)); /* ended */
}

static void test_nested_and_misuse(void) {
    int k;
    memobs_reset();
    memobs_request_begin(21);
    memobs_request_begin(22);
    memobs_request_enter(21);
    MEMOBS_RECORD_H2D(100, 1);
    memobs_request_enter(22);
    MEMOBS_RECORD_H2D(10, 1);
    memobs_request_leave();
    MEMOBS_RECORD_H2D(1, 1);
    memobs_request_leave();
    memobs_request_leave(); /* none entered: counted */
    CHECK_U64(MEMOBS_OK, memobs_request_info(21, &I));
    CHECK_U64(101, led_bytes(&I, MEMOBS_PHASE_PREFILL, MEMOBS_DIR_H2D));
    CHECK_U64(MEMOBS_OK, memobs_request_info(22, &I));
    CHECK_U64(10, led_bytes(&I, MEMOBS_PHASE_PREFILL, MEMOBS_DIR_H2D));
    /* deeper than MEMOBS_REQUEST_DEPTH: the records stay with the 8th */
    for (k = 0; k < MEMOBS_REQUEST_DEPTH + 2; k++) memobs_request_enter(k < MEMOBS_REQUEST_DEPTH - 1 ? 21 : 22);
    MEMOBS_RECORD_D2D(7, 0); /* decode */
    for (k = 0; k < MEMOBS_REQUEST_DEPTH + 2; k++) memobs_request_leave();
    CHECK_U64(0, memobs_request_current(NULL));
    CHECK_U64(MEMOBS_OK, memobs_request_info(22, &I));
    CHECK_U64(7, led_bytes(&I, MEMOBS_PHASE_DECODE, MEMOBS_DIR_D2D));
    snap();
    CHECK_U64(3, S.attributed.bind_misuse); /* the extra leave, two enters too deep */
    CHECK_U64(118, S.attributed.total.h2d.bytes + S.attributed.total.d2d.bytes);
    memobs_request_end(21);
    memobs_request_end(22);
}

static void test_split(void) {
    static const uint64_t sh1[3] = {1, 1, 1}, sh2[4] = {0, 5, 0, 3}, sh3[3] = {UINT64_C(1) << 62, 3, UINT64_C(1) << 62},
                          sh4[2] = {0, 0};
    static const uint64_t ids[4] = {31, 32, 33, 34};
    const uint64_t *shs[5] = {sh1, sh2, sh3, sh4, NULL};
    static const size_t ns[5] = {3, 4, 3, 2, 4};
    static const uint64_t bytes[5] = {1000, 77777, MEMOBS_MAX_BYTES, 9, 3};
    uint64_t want[4] = {0, 0, 0, 0}, sum = 0;
    unsigned c, i;
    memobs_reset();
    for (i = 0; i < 4; i++) memobs_request_begin(ids[i]);
    for (c = 0; c < 5; c++) {
        uint64_t parts = 0;
        CHECK_U64(MEMOBS_OK, memobs_request_xfer_split(ids, shs[c], ns[c], MEMOBS_DIR_D2S, bytes[c],
                                                       MEMOBS_PHASE_PREFILL));
        for (i = 0; i < ns[c]; i++) {
            uint64_t p = model_part(bytes[c], shs[c], ns[c], i);
            want[i] += p;
            parts += p;
        }
        CHECK_U64(bytes[c], parts);
        sum += bytes[c];
    }
    CHECK_U64(333, model_part(1000, sh1, 3, 0));
    CHECK_U64(334, model_part(1000, sh1, 3, 2));
    for (i = 0; i < 4; i++) {
        CHECK_U64(MEMOBS_OK, memobs_request_info(ids[i], &I));
        CHECK_U64(want[i], led_bytes(&I, MEMOBS_PHASE_PREFILL, MEMOBS_DIR_D2S));
    }
    snap();
    CHECK_U64(sum, S.attributed.prefill.d2s.bytes);
    CHECK_U64(5, S.attributed.prefill.d2s.count); /* one operation a split */
    CHECK_U64(5, S.total.d2s.count);
    /* bad input: nothing kept */
    {
        static const uint64_t big[2] = {UINT64_MAX, 2};
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID,
                  (uint64_t)(int64_t)memobs_request_xfer_split(NULL, NULL, 2, MEMOBS_DIR_H2D, 5, MEMOBS_PHASE_NONE));
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID,
                  (uint64_t)(int64_t)memobs_request_xfer_split(ids, NULL, 0, MEMOBS_DIR_H2D, 5, MEMOBS_PHASE_NONE));
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID,
                  (uint64_t)(int64_t)memobs_request_xfer_split(ids, big, 2, MEMOBS_DIR_H2D, 5, MEMOBS_PHASE_NONE));
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID,
                  (uint64_t)(int64_t)memobs_request_xfer_split(ids, NULL, 2, (memobs_dir_t)9, 5, MEMOBS_PHASE_NONE));
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID,
                  (uint64_t)(int64_t)memobs_request_xfer_split(ids, NULL, 2, MEMOBS_DIR_H2D, MEMOBS_MAX_BYTES + 1,
                                                               MEMOBS_PHASE_NONE));
        memobs_request_xfer(31, (memobs_dir_t)7, 5, MEMOBS_PHASE_NONE);
        memobs_request_xfer(31, MEMOBS_DIR_H2D, 5, (memobs_phase_t)3);
        snap();
        CHECK_U64(0, S.total.h2d.count);
        CHECK_U64(7, S.bad_records);
    }
    for (i = 0; i < 4; i++) memobs_request_end(ids[i]);
}

/* Threads: each binds its own requests and records, records for another
   thread's request explicitly, and records unbound; a reader checks that
   the attributed part never reads above the figures. */
#define NT 8
#define ROUNDS 2000
static volatile int stop_reader;
static uint64_t model_att[3][MEMOBS_DIRS], model_un[3][MEMOBS_DIRS];
static uint64_t model_led[NT][3][MEMOBS_DIRS];
static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg, r;
    uint64_t att[3][MEMOBS_DIRS], un[3][MEMOBS_DIRS], led[NT][3][MEMOBS_DIRS];
    memset(att, 0, sizeof att);
    memset(un, 0, sizeof un);
    memset(led, 0, sizeof led);
    for (r = 0; r < ROUNDS; r++) {
        unsigned d = (t + r) % MEMOBS_DIRS, ph = r % 3, other = (t + 1) % NT;
        uint64_t b = 1 + (r * 7919u + t) % 100000u;
        memobs_request_enter(1000 + t);
        memobs_record_xfer((memobs_dir_t)d, b, (memobs_phase_t)ph);
        memobs_request_leave();
        att[ph][d] += b;
        led[t][ph][d] += b;
        memobs_request_xfer(1000 + other, (memobs_dir_t)d, b + 1, (memobs_phase_t)ph);
        att[ph][d] += b + 1;
        led[other][ph][d] += b + 1;
        memobs_record_xfer((memobs_dir_t)d, 3, (memobs_phase_t)ph);
        un[ph][d] += 3;
    }
    pthread_mutex_lock(&model_lock);
    for (r = 0; r < 3 * MEMOBS_DIRS; r++) {
        (&model_att[0][0])[r] += (&att[0][0])[r];
        (&model_un[0][0])[r] += (&un[0][0])[r];
    }
    for (r = 0; r < NT * 3 * MEMOBS_DIRS; r++) (&model_led[0][0][0])[r] += (&led[0][0][0])[r];
    pthread_mutex_unlock(&model_lock);
    return NULL;
}

static int reader_ok = 1;
static void *reader(void *arg) {
    static memobs_summary_t R;
    unsigned d;
    (void)arg;
    while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE)) {
        memobs_get_summary(&R);
        for (d = 0; d < MEMOBS_DIRS; d++)
            if (memobs_dirs_get(&R.attributed.total, d)->bytes > memobs_dirs_get(&R.total, d)->bytes ||
                memobs_dirs_get(&R.attributed.total, d)->count > memobs_dirs_get(&R.total, d)->count)
                reader_ok = 0;
    }
    return NULL;
}

static void test_threads_exact(void) {
    pthread_t th[NT], rd;
    unsigned t, ph, d;
    memobs_reset();
    memset(model_att, 0, sizeof model_att);
    memset(model_un, 0, sizeof model_un);
    memset(model_led, 0, sizeof model_led);
    for (t = 0; t < NT; t++) memobs_request_begin(1000 + t);
    stop_reader = 0;
    CHECK(pthread_create(&rd, NULL, reader, NULL) == 0);
    for (t = 0; t < NT; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) == 0);
    for (t = 0; t < NT; t++) pthread_join(th[t], NULL);
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    CHECK(reader_ok);
    snap();
    for (ph = 0; ph < 3; ph++)
        for (d = 0; d < MEMOBS_DIRS; d++) {
            CHECK_U64(model_att[ph][d], att_bytes(ph, d));
            CHECK_U64(model_att[ph][d] + model_un[ph][d], tot_bytes(ph, d));
        }
    CHECK_U64(0, S.attributed.orphan_bytes);
    for (t = 0; t < NT; t++) {
        CHECK_U64(MEMOBS_OK, memobs_request_info(1000 + t, &I));
        for (ph = 0; ph < 3; ph++)
            for (d = 0; d < MEMOBS_DIRS; d++) CHECK_U64(model_led[t][ph][d], led_bytes(&I, ph, d));
        memobs_request_end(1000 + t);
    }
}

static void test_tenants(void) {
    char name[80];
    unsigned k;
    memobs_reset();
    memobs_request_begin(41);
    memobs_request_xfer(41, MEMOBS_DIR_H2D, 300, MEMOBS_PHASE_PREFILL); /* before its tenant: counted for it */
    CHECK_U64(MEMOBS_OK, memobs_request_tenant(41, "acme"));
    memobs_request_xfer(41, MEMOBS_DIR_H2D, 20, MEMOBS_PHASE_PREFILL);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, "other-co"));
    CHECK_U64(MEMOBS_OK, memobs_request_tenant(41, "acme")); /* the same again: fine */
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, ""));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, "a\nb"));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, "\xff\xfe"));
    memset(name, 'x', 64);
    name[64] = 0;
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(41, name));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_request_tenant(999, "acme"));
    CHECK_U64(MEMOBS_OK, memobs_request_info(41, &I));
    CHECK_STR("acme", I.tenant);
    memobs_request_end(41);
    /* past MEMOBS_MAX_TENANTS names: "other" */
    for (k = 0; k < MEMOBS_MAX_TENANTS + 5; k++) {
        snprintf(name, sizeof name, "t\"%u\\", k);
        memobs_request_begin(500 + k);
        CHECK_U64(MEMOBS_OK, memobs_request_tenant(500 + k, name));
        memobs_request_xfer(500 + k, MEMOBS_DIR_S2D, 1u + k, MEMOBS_PHASE_DECODE);
        CHECK_U64(MEMOBS_OK, memobs_request_info(500 + k, &I));
        CHECK_STR(k + 1 < MEMOBS_MAX_TENANTS ? name : "other", I.tenant);
        memobs_request_end(500 + k);
    }
    snap();
    CHECK_U64(7, S.attributed.tenant_misuse);
    {
        /* the tenants in JSON and Prometheus */
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        CHECK(f != NULL);
        if (!f) return;
        memobs_write_summary(f, MEMOBS_FORMAT_JSON);
        memobs_write_prometheus(f);
        fclose(f);
        CHECK_HAS(buf, "{\"name\":\"acme\",\"requests\":1,\"h2d_bytes\":320,\"h2d_count\":2,");
        CHECK_HAS(buf, "memobs_tenant_transfer_bytes_total{job_id=\"\",rank=\"0\",local_rank=\"0\",host=");
        CHECK_HAS(buf, "tenant=\"acme\",direction=\"h2d\"} 320\n");
        CHECK_HAS(buf, "tenant=\"t\\\"2\\\\\",direction=\"s2d\"} 3\n");
        /* "acme" took the first name: k = 0..30 have their own, k = 31..36 (32..37 bytes) are "other" */
        CHECK_HAS(buf, "tenant=\"other\",direction=\"s2d\"} 207\n");
        CHECK_HAS(buf, "memobs_tenant_requests_total{");
        CHECK_HAS(buf, "tenant=\"other\"} 6\n");
        free(buf);
    }
}

static void test_orphans_and_end(void) {
    memobs_reset();
    /* entered, never begun */
    memobs_request_enter(77);
    MEMOBS_RECORD_H2D(640, 0);
    memobs_request_leave();
    memobs_request_xfer(78, MEMOBS_DIR_D2H, 60, MEMOBS_PHASE_DECODE);
    snap();
    CHECK_U64(700, S.attributed.orphan_bytes);
    CHECK_U64(640, S.attributed.total.h2d.bytes);
    CHECK_U64(60, S.attributed.total.d2h.bytes);
    /* ended on the thread bound to it: its records so far are its ledger's */
    memobs_request_begin(79);
    memobs_request_enter(79);
    MEMOBS_RECORD_D2H(33, 0);
    memobs_request_token(79);
    memobs_request_end(79);
    MEMOBS_RECORD_D2H(4, 0); /* after the end: an orphan at leave */
    memobs_request_leave();
    {
        memobs_request_info_t top[MEMOBS_REQUEST_TOP];
        size_t n = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, MEMOBS_REQUEST_TOP);
        CHECK_U64(1, n);
        CHECK_U64(79, top[0].id);
        CHECK_U64(33, top[0].xfer[MEMOBS_PHASE_DECODE].d2h.bytes); /* (bytes, 0): decode */
        CHECK_U64(MEMOBS_REQUEST_COMPLETED, top[0].state);
        CHECK(top[0].e2e_ns > 0);
    }
    snap();
    CHECK_U64(704, S.attributed.orphan_bytes);
}

/* A thread that exits bound: its records reach the ledger. */
static void *exits_bound(void *arg) {
    (void)arg;
    memobs_request_enter(88);
    MEMOBS_RECORD_H2S(1234, 0);
    return NULL;
}

static void test_thread_exit_bound(void) {
    pthread_t t;
    memobs_reset();
    memobs_request_begin(88);
    CHECK(pthread_create(&t, NULL, exits_bound, NULL) == 0);
    pthread_join(t, NULL);
    CHECK_U64(MEMOBS_OK, memobs_request_info(88, &I));
    CHECK_U64(1234, led_bytes(&I, MEMOBS_PHASE_DECODE, MEMOBS_DIR_H2S));
    memobs_request_end(88);
}

static void test_tracked_bytes(void) {
    static char blocks[4][64];
    memobs_reset();
    memobs_request_begin(91);
    memobs_request_enter(91);
    MEMOBS_TRACK_ALLOC_N(blocks[0], 1000, MEMOBS_MEM_DEVICE, "kv");
    MEMOBS_TRACK_ALLOC_N(blocks[1], 500, MEMOBS_MEM_PINNED, "stage");
    memobs_request_leave();
    MEMOBS_TRACK_ALLOC_N(blocks[2], 9999, MEMOBS_MEM_DEVICE, "weights"); /* not bound */
    MEMOBS_TRACK_FREE(blocks[1]);
    memobs_request_enter(91);
    MEMOBS_TRACK_ALLOC_N(blocks[3], 100, MEMOBS_MEM_DEVICE, "kv");
    memobs_request_leave();
    CHECK_U64(MEMOBS_OK, memobs_request_info(91, &I));
    CHECK_U64(1500, I.peak_bytes);
    CHECK_U64(1100, I.current_bytes);
    MEMOBS_TRACK_FREE(blocks[0]);
    MEMOBS_TRACK_FREE(blocks[3]);
    MEMOBS_TRACK_FREE(blocks[2]);
    CHECK_U64(MEMOBS_OK, memobs_request_info(91, &I));
    CHECK_U64(1500, I.peak_bytes);
    CHECK_U64(0, I.current_bytes);
    memobs_request_end(91);
}

static void test_abandoned_and_top(void) {
    memobs_request_info_t top[MEMOBS_REQUEST_TOP];
    uint64_t t0, was;
    size_t n, k;
    memobs_reset();
    for (k = 0; k < 14; k++) {
        memobs_request_begin(600 + k);
        memobs_request_xfer_ns(600 + k, MEMOBS_DIR_S2H, 100 * (k + 1), MEMOBS_PHASE_PREFILL, 1000 * (14 - k));
        memobs_request_token(600 + k);
        memobs_request_end(600 + k);
    }
    n = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, MEMOBS_REQUEST_TOP);
    CHECK_U64(MEMOBS_REQUEST_TOP, n);
    for (k = 0; k < n; k++) CHECK_U64(613 - k, top[k].id);
    n = memobs_request_top(MEMOBS_REQUEST_TOP_WAIT, top, 3);
    CHECK_U64(3, n);
    CHECK_U64(600, top[0].id);
    CHECK_U64(14000, top[0].wait_ns);
    CHECK_U64(13000, top[1].wait_ns);
    /* abandoned: idle past the timeout, finished when found */
    was = memobs_request_set_timeout(1000000); /* 1 ms */
    memobs_request_begin(700);
    memobs_request_xfer(700, MEMOBS_DIR_H2D, UINT64_C(1) << 40, MEMOBS_PHASE_DECODE);
    t0 = memobs_now_ns();
    while (memobs_now_ns() < t0 + 2000000) {
    }
    n = memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, 1);
    CHECK_U64(1, n);
    CHECK_U64(700, top[0].id);
    CHECK_U64(MEMOBS_REQUEST_ABANDONED, top[0].state);
    memobs_request_set_timeout(was);
    memobs_reset(); /* the lists start again */
    CHECK_U64(0, memobs_request_top(MEMOBS_REQUEST_TOP_BYTES, top, MEMOBS_REQUEST_TOP));
}

static void test_outputs(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    memobs_reset();
    memobs_request_begin(5);
    memobs_request_enter(5);
    MEMOBS_RECORD_D2H(2048, 0);
    memobs_request_leave();
    MEMOBS_RECORD_D2H(100, 0);
    memobs_request_token(5);
    memobs_request_end(5);
    f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    if (!f) return;
    memobs_write_summary(f, MEMOBS_FORMAT_TEXT);
    memobs_write_summary(f, MEMOBS_FORMAT_JSON);
    memobs_write_prometheus(f);
    fclose(f);
    CHECK_HAS(buf, "  attributed to requests: D2H 2.05 KB (95.3%)\n");
    CHECK_HAS(buf, "  top requests by bytes moved: 5 2.05 KB\n");
    CHECK_HAS(buf, "\"attributed\":{\"total\":{\"h2d_bytes\":0,\"h2d_count\":0,\"d2h_bytes\":2048,\"d2h_count\":1,");
    CHECK_HAS(buf, "\"unattributed\":{\"h2d_bytes\":0,\"h2d_count\":0,\"d2h_bytes\":100,\"d2h_count\":1,");
    CHECK_HAS(buf, "\"top_bytes\":[{\"id\":5,\"tenant\":null,\"state\":\"completed\",\"bytes\":2048,");
    CHECK_HAS(buf, "direction=\"d2h\",phase=\"decode\"} 2048\n");
    CHECK_HAS(buf, "memobs_unattributed_transfer_bytes_total{");
    CHECK_HAS(buf, "memobs_attribution_orphan_bytes_total{");
    free(buf);
}

/* --lines: requests for tests/core/test_attribution.sh, which runs this
   under MEMOBS_REQUESTS and compares the file with what is printed here:
   one JSON object per request, its id, tenant and bytes by direction. */
static int lines_mode(unsigned n) {
    unsigned k;
    for (k = 0; k < n; k++) {
        uint64_t id = 9000 + k;
        memobs_request_begin(id);
        if (k % 3 == 0) memobs_request_tenant(id, k % 2 ? "odd" : "even");
        memobs_request_enter(id);
        memobs_record_xfer(MEMOBS_DIR_H2D, 100 + k, MEMOBS_PHASE_PREFILL);
        memobs_request_leave();
        memobs_request_xfer_ns(id, MEMOBS_DIR_S2H, 4096 * (k + 1), MEMOBS_PHASE_DECODE, 1000 + k);
        if (k % 5 != 4) memobs_request_token(id);
        memobs_request_end(id);
        printf("{\"id\":%llu,\"tenant\":%s%s%s,\"state\":\"%s\",\"h2d\":%u,\"s2h\":%u,\"engine_ns\":%u}\n",
               (unsigned long long)id, k % 3 ? "null" : "\"", k % 3 ? "" : k % 2 ? "odd" : "even", k % 3 ? "" : "\"",
               k % 5 != 4 ? "completed" : "aborted", 100 + k, 4096 * (k + 1), 1000 + k);
    }
    return 0;
}

/* --busy N: N requests ended on 3 threads while a fourth resets the window
   and forks (the child exits at once), under MEMOBS_REQUESTS: a line is
   written while the others take memobs' locks; the run ends (the script
   gives it a time limit) with one line a request. */
static int busy_stop;
static unsigned busy_total;
static void *busy_ender(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg, k;
    for (k = t; k < busy_total; k += 3) {
        memobs_request_begin(20000 + k);
        memobs_request_enter(20000 + k);
        memobs_record_xfer(MEMOBS_DIR_D2H, 64, MEMOBS_PHASE_DECODE);
        memobs_request_token(20000 + k);
        memobs_request_end(20000 + k);
        memobs_request_leave();
    }
    return NULL;
}
static void *busy_other(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&busy_stop, __ATOMIC_ACQUIRE)) {
        pid_t c;
        memobs_reset();
        if ((c = fork()) == 0) _exit(0);
        if (c > 0) waitpid(c, NULL, 0);
    }
    return NULL;
}
static int busy_mode(unsigned n) {
    pthread_t th[3], other;
    unsigned t;
    busy_total = n;
    if (pthread_create(&other, NULL, busy_other, NULL) != 0) return 1;
    for (t = 0; t < 3; t++)
        if (pthread_create(&th[t], NULL, busy_ender, (void *)(uintptr_t)t) != 0) return 1;
    for (t = 0; t < 3; t++) pthread_join(th[t], NULL);
    __atomic_store_n(&busy_stop, 1, __ATOMIC_RELEASE);
    pthread_join(other, NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--lines") == 0) return lines_mode((unsigned)atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "--busy") == 0) return busy_mode((unsigned)atoi(argv[2]));
    check__suite = TEST_SUITE;
    RUN(test_enter_leave);
    RUN(test_nested_and_misuse);
    RUN(test_split);
    RUN(test_threads_exact);
    RUN(test_tenants);
    RUN(test_orphans_and_end);
    RUN(test_thread_exit_bound);
    RUN(test_tracked_bytes);
    RUN(test_abandoned_and_top);
    RUN(test_outputs);
    return CHECK_DONE();
}
