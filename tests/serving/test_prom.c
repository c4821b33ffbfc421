/* Functional tests of the Prometheus exporter of memobs.h: the exact value
   of every sample after a known sequence of records, histogram buckets at
   vLLM's bounds (and the 0.8% precision claimed at each bound), escaping of
   odd job ids and help texts, the buffer variant (exact length, a buffer too
   small holds ""), the file variant (atomic replacement, failures that leave
   the old file), the periodic step, reset, and exports taken while 4
   threads record. Built as C and as C++, and under ASan+UBSan and TSan
   (tests/serving/test_prom.sh), which also checks the format rules and runs
   promtool on what the modes below write.

   Without arguments it runs the in-process tests. With a mode argument:
     expo FILE        an exposition with odd strings and values of every kind
     expo_empty FILE  the exposition of a process that recorded nothing
     exit             known records, then exit (MEMOBS_PROM_FILE set by the
                      script: the file must be written at exit)
     fork_exit        a forked child exits: MEMOBS_PROM_FILE written by it
                      only if the path has %p
     interval NS      memobs read MEMOBS_PROM_INTERVAL_MS as NS nanoseconds */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "prom"
#endif

#define FP(x) ((const void *)(uintptr_t)(x)) /* a fake pointer: the tracker never dereferences one */
#define MS 1000000ull
#define SEC 1000000000ull

static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0; /* warn-once bits: every kind may warn again */
    memobs_set_log(capture_log, NULL);
}

/* The exposition as the FILE writer writes it; the caller frees it. */
static char *expo(void) {
    FILE *f = tmpfile();
    char *buf;
    CHECK(f != NULL);
    if (!f) return (char *)calloc(1, 1);
    CHECK_U64(MEMOBS_OK, memobs_write_prometheus(f));
    buf = read_file(f);
    fclose(f);
    return buf ? buf : (char *)calloc(1, 1);
}

/* The identity labels every sample starts with, escaped as expected. */
static char ID[1024];
static void set_id(const char *job, const char *job_escaped, int rank, int local, int world) {
    memobs_identity_t id;
    CHECK_U64(MEMOBS_OK, memobs_set_identity(job, rank, local, world));
    memobs_get_identity(&id);
    snprintf(ID, sizeof ID, "job_id=\"%s\",rank=\"%d\",local_rank=\"%d\",host=\"%s\"", job_escaped, rank, local,
             id.host);
}

/* The value text of the sample name{ID[,labels]} in text, or NULL. */
static const char *value_of(const char *text, const char *name, const char *labels) {
    static char val[64];
    char key[1400];
    const char *p = text;
    size_t k;
    snprintf(key, sizeof key, "%s{%s%s%s} ", name, ID, labels[0] ? "," : "", labels);
    k = strlen(key);
    while (p && *p) {
        if (strncmp(p, key, k) == 0) {
            const char *e = strchr(p + k, '\n');
            size_t n = e ? (size_t)(e - (p + k)) : strlen(p + k);
            if (n >= sizeof val) n = sizeof val - 1;
            memcpy(val, p + k, n);
            val[n] = 0;
            return val;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return NULL;
}

static int checked; /* samples checked by CHECK_SAMPLE since the last count_samples() */
#define CHECK_SAMPLE(text, name, labels, want)                                                                  \
    do {                                                                                                        \
        const char *cs__v = value_of((text), (name), (labels));                                                 \
        checked++;                                                                                              \
        if (!cs__v) {                                                                                           \
            check__failed_checks++;                                                                             \
            printf("    # %s:%d: no sample %s{%s%s%s}\n", __FILE__, __LINE__, (name), ID, (labels)[0] ? "," : "", \
                   (labels));                                                                                   \
        } else if (strcmp(cs__v, (want)) != 0) {                                                                \
            check__failed_checks++;                                                                             \
            printf("    # %s:%d: %s{..%s}: expected %s, got %s\n", __FILE__, __LINE__, (name), (labels), (want), \
                   cs__v);                                                                                      \
        }                                                                                                       \
    } while (0)
#define CHECK_SAMPLE_U(text, name, labels, want)                     \
    do {                                                             \
        char csu__b[32];                                             \
        snprintf(csu__b, sizeof csu__b, "%llu", (unsigned long long)(want)); \
        CHECK_SAMPLE(text, name, labels, csu__b);                    \
    } while (0)

static int count_samples(const char *text) {
    int n = 0;
    const char *p = text;
    while (*p) {
        if (*p != '#') n++;
        p = strchr(p, '\n');
        if (!p) break;
        p++;
    }
    return n;
}

static const char *const DIRS[7] = {"h2d", "d2h", "d2d", "h2s", "s2h", "d2s", "s2d"};
static const char *const PHASES[3] = {"unphased", "prefill", "decode"};
static const char *const KINDS[4] = {"device", "host", "pinned", "managed"};
static const char *const TTFT_LE[22] = {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1",
                                        "0.25",  "0.5",   "0.75", "1.0",  "2.5",  "5.0",  "7.5",  "10.0",
                                        "20.0",  "40.0",  "80.0", "160.0", "640.0", "2560.0"};
static const uint64_t TTFT_NS[22] = {1 * MS,   5 * MS,   10 * MS,  20 * MS,  40 * MS,   60 * MS,   80 * MS,   100 * MS,
                                     250 * MS, 500 * MS, 750 * MS, 1 * SEC,  2500 * MS, 5 * SEC,   7500 * MS, 10 * SEC,
                                     20 * SEC, 40 * SEC, 80 * SEC, 160 * SEC, 640 * SEC, 2560 * SEC};
static const char *const ITL_LE[19] = {"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2",  "0.3",  "0.4", "0.5",
                                       "0.75", "1.0",   "2.5",  "5.0",   "7.5", "10.0", "20.0", "40.0", "80.0"};
static const uint64_t ITL_NS[19] = {10 * MS,  25 * MS,  50 * MS,   75 * MS, 100 * MS,  150 * MS, 200 * MS,
                                    300 * MS, 400 * MS, 500 * MS,  750 * MS, 1 * SEC,  2500 * MS, 5 * SEC,
                                    7500 * MS, 10 * SEC, 20 * SEC, 40 * SEC, 80 * SEC};

/* Checks a histogram family: buckets at les, +Inf, sum text, count. */
static void check_hist(const char *text, const char *name, const char *const *les, unsigned n, const uint64_t *cum,
                       uint64_t count, const char *sum) {
    char full[64], lab[32];
    unsigned k;
    snprintf(full, sizeof full, "%s_bucket", name);
    for (k = 0; k < n; k++) {
        snprintf(lab, sizeof lab, "le=\"%s\"", les[k]);
        CHECK_SAMPLE_U(text, full, lab, cum[k]);
    }
    CHECK_SAMPLE_U(text, full, "le=\"+Inf\"", count);
    snprintf(full, sizeof full, "%s_sum", name);
    CHECK_SAMPLE(text, full, "", sum);
    snprintf(full, sizeof full, "%s_count", name);
    CHECK_SAMPLE_U(text, full, "", count);
}

static memobs_counter_t C_EVICT, C_PLAIN;

/* Every family, every sample, after a known sequence. */
static void test_every_family(void) {
    /* transfers [phase][dir]: bytes, ops */
    static const uint64_t xb[3][7] = {{0, 0, 7, 0, 0, 0, 1}, {3000, 0, 11, 8192, 0, 0, 0}, {70, 1000, 0, 0, 1048577, 0, 0}};
    static const uint64_t xo[3][7] = {{0, 0, 1, 0, 0, 0, 2}, {3, 0, 1, 2, 0, 0, 0}, {1, 2, 0, 0, 1, 0, 0}};
    /* every record's size, by direction (the timed copies are not records) */
    static const uint64_t sizes[7][4] = {{1000, 1000, 1000, 70}, {500, 500}, {7, 11}, {4096, 4096}, {1048577}, {0},
                                         {1, 0}};
    static const unsigned nsizes[7] = {4, 2, 2, 2, 1, 0, 2};
    uint64_t cum[22];
    char *t;
    unsigned d, p, k, i;
    char lab[64];
    set_id("job-1", "job-1", 2, 1, 4);
    memobs_reset();
    log_start();
    for (i = 0; i < 3; i++) memobs_record_xfer(MEMOBS_DIR_H2D, 1000, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer(MEMOBS_DIR_H2D, 70, MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H(500, 0);
    MEMOBS_RECORD_D2H(500, 0);
    memobs_record_xfer(MEMOBS_DIR_D2D, 7, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_D2D(11, 1);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_PREFILL, 1500 * 1000);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_PREFILL, 1500 * 1000);
    memobs_record_xfer_timed(MEMOBS_DIR_D2H, 100, MEMOBS_PHASE_DECODE, 1 * SEC + 5);
    memobs_timed_in_flight(3, 12288);
    /* the storage tier: two stores, a load the engine timed, two GPUDirect reads */
    MEMOBS_RECORD_H2S(4096, 1);
    memobs_record_xfer(MEMOBS_DIR_H2S, 4096, MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_XFER_NS(MEMOBS_DIR_S2H, 1048577, MEMOBS_PHASE_DECODE, 2 * MS + 1);
    memobs_record_xfer_ns(MEMOBS_DIR_S2D, 1, MEMOBS_PHASE_NONE, 0); /* 0 ns: recorded, not timed */
    memobs_record_xfer(MEMOBS_DIR_S2D, 0, MEMOBS_PHASE_NONE);
    /* samples well inside buckets: 3 ms, 30 ms, 300 ms, 3000 s (above the last bound) */
    memobs__hist_add(&memobs__g.ttft, 3 * MS);
    memobs__hist_add(&memobs__g.ttft, 30 * MS);
    memobs__hist_add(&memobs__g.ttft, 300 * MS);
    memobs__hist_add(&memobs__g.ttft, 3000 * SEC);
    memobs__hist_add(&memobs__g.tpot, 12 * MS);
    memobs__hist_add(&memobs__g.tpot, 12 * MS);
    memobs__hist_add(&memobs__g.tpot, 160 * MS);
    memobs__hist_add(&memobs__g.e2e, 1500 * MS);
    /* requests: one aborted (no token: no sample), one in flight, a duplicate begin, an unknown token */
    memobs_request_begin(10);
    memobs_request_end(10);
    memobs_request_begin(11);
    memobs_request_begin(11);
    memobs_request_token(99);
    /* misuse */
    memobs_record_xfer((memobs_dir_t)7, 1, MEMOBS_PHASE_NONE);
    memobs_ttft_stop();
    memobs_tpot_stop();
    memobs_tpot_step();
    /* tracker: device 4096 live (peak 5096), host 100, pinned 64 pending; managed: problems */
    MEMOBS_TRACK_ALLOC_N(FP(0x1000), 4096, MEMOBS_MEM_DEVICE, "kv");
    MEMOBS_TRACK_ALLOC(FP(0x2000), 1000, MEMOBS_MEM_DEVICE);
    MEMOBS_TRACK_FREE(FP(0x2000));
    MEMOBS_TRACK_ALLOC(FP(0x3000), 100, MEMOBS_MEM_HOST);
    MEMOBS_TRACK_ALLOC(FP(0x4000), 64, MEMOBS_MEM_PINNED);
    memobs_track_free_pending(FP(0x4000));
    MEMOBS_TRACK_ALLOC(FP(0x9000), 0, MEMOBS_MEM_MANAGED); /* zero bytes: tracked, counted */
    MEMOBS_TRACK_FREE(FP(0x9000));
    MEMOBS_TRACK_ALLOC(FP(0xA000), 10, MEMOBS_MEM_MANAGED);
    MEMOBS_TRACK_ALLOC(FP(0xA000), 20, MEMOBS_MEM_MANAGED); /* duplicate: the first is dropped as freed */
    MEMOBS_TRACK_FREE(FP(0xA000));
    MEMOBS_TRACK_FREE(FP(0xA000)); /* double */
    MEMOBS_TRACK_FREE(FP(0xB000)); /* unknown */
    MEMOBS_TRACK_ALLOC(NULL, 5, MEMOBS_MEM_HOST);
    MEMOBS_TRACK_ALLOC(FP(0xC000), 5, (memobs_mem_kind_t)9);
    /* user counters */
    memobs_counter_add(C_EVICT, 5);
    MEMOBS_COUNTER_ADD("kv_blocks_evicted", 2);
    log_stop();

    t = expo();
    checked = 0;
    CHECK_SAMPLE(t, "memobs_info", "version=\"" MEMOBS_VERSION "\",world_size=\"4\"", "1");
    for (d = 0; d < 7; d++) {
        for (p = 0; p < 3; p++) {
            snprintf(lab, sizeof lab, "direction=\"%s\",phase=\"%s\"", DIRS[d], PHASES[p]);
            CHECK_SAMPLE_U(t, "memobs_transfer_bytes_total", lab, xb[p][d]);
            CHECK_SAMPLE_U(t, "memobs_transfer_ops_total", lab, xo[p][d]);
            CHECK_SAMPLE_U(t, "memobs_timed_transfer_bytes_total", lab,
                           d == 0 && p == 1 ? 8192 : d == 1 && p == 2 ? 100 : d == 4 && p == 2 ? 1048577 : 0);
            CHECK_SAMPLE_U(t, "memobs_timed_transfer_ops_total", lab,
                           d == 0 && p == 1 ? 2 : d == 1 && p == 2 ? 1 : d == 4 && p == 2 ? 1 : 0);
            CHECK_SAMPLE(t, "memobs_timed_transfer_seconds_total", lab,
                         d == 0 && p == 1 ? "0.003" : d == 1 && p == 2 ? "1.000000005" : d == 4 && p == 2 ? "0.002000001"
                                                                                                          : "0");
        }
    }
    /* transfer sizes: each direction's 57 buckets (le 1, 2, 4, ... 2^56) cumulative, +Inf, sum, count, against
       a model that finds a size's bucket by doubling */
    for (d = 0; d < 7; d++) {
        uint64_t sum = 0, cnt[57];
        char le[48];
        memset(cnt, 0, sizeof cnt);
        for (i = 0; i < nsizes[d]; i++) {
            uint64_t bound = 1;
            unsigned b = 0;
            while (bound < sizes[d][i]) bound <<= 1, b++;
            cnt[b]++;
            sum += sizes[d][i];
        }
        for (k = 1; k < 57; k++) cnt[k] += cnt[k - 1];
        for (k = 0; k < 57; k++) {
            snprintf(lab, sizeof lab, "direction=\"%s\",le=\"%llu\"", DIRS[d], (unsigned long long)1 << k);
            CHECK_SAMPLE_U(t, "memobs_transfer_size_bytes_bucket", lab, cnt[k]);
        }
        snprintf(le, sizeof le, "direction=\"%s\",le=\"+Inf\"", DIRS[d]);
        CHECK_SAMPLE_U(t, "memobs_transfer_size_bytes_bucket", le, nsizes[d]);
        snprintf(lab, sizeof lab, "direction=\"%s\"", DIRS[d]);
        CHECK_SAMPLE_U(t, "memobs_transfer_size_bytes_sum", lab, sum);
        CHECK_SAMPLE_U(t, "memobs_transfer_size_bytes_count", lab, nsizes[d]);
    }
    CHECK_SAMPLE(t, "memobs_timed_in_flight_copies", "", "3");
    CHECK_SAMPLE(t, "memobs_timed_in_flight_bytes", "", "12288");
    /* transfers in flight: none, every direction's series at 0 */
    for (d = 0; d < 7; d++) {
        snprintf(lab, sizeof lab, "direction=\"%s\"", DIRS[d]);
        CHECK_SAMPLE(t, "memobs_transfers_in_flight", lab, "0");
        CHECK_SAMPLE(t, "memobs_transfer_in_flight_bytes", lab, "0");
        CHECK_SAMPLE(t, "memobs_transfer_oldest_in_flight_seconds", lab, "0");
    }
    CHECK_SAMPLE(t, "memobs_transfers_stuck_in_flight", "", "0");
    CHECK_SAMPLE(t, "memobs_transfers_stuck_total", "", "0");
    CHECK_SAMPLE(t, "memobs_transfer_misuse_total", "kind=\"table_full\"", "0");
    CHECK_SAMPLE(t, "memobs_transfer_misuse_total", "kind=\"token_not_in_flight\"", "0");
    for (k = 0; k < 22; k++) cum[k] = (TTFT_NS[k] > 3 * MS) + (TTFT_NS[k] > 30 * MS) + (TTFT_NS[k] > 300 * MS);
    check_hist(t, "memobs_ttft_seconds", TTFT_LE, 22, cum, 4, "3000.333");
    for (k = 0; k < 19; k++) cum[k] = 2u * (k >= 1) + (k >= 6); /* 0.025 holds 12 ms twice, 0.2 holds 160 ms */
    check_hist(t, "memobs_tpot_seconds", ITL_LE, 19, cum, 3, "0.184");
    for (k = 0; k < 22; k++) cum[k] = TTFT_NS[k] > 1500 * MS;
    check_hist(t, "memobs_e2e_seconds", TTFT_LE, 22, cum, 1, "1.5");
    CHECK_SAMPLE(t, "memobs_requests_begun_total", "", "2");
    CHECK_SAMPLE(t, "memobs_requests_completed_total", "", "0");
    CHECK_SAMPLE(t, "memobs_requests_aborted_total", "", "1");
    CHECK_SAMPLE(t, "memobs_requests_abandoned_total", "", "0");
    CHECK_SAMPLE(t, "memobs_requests_in_flight", "", "1");
    {
        static const char *const what[20] = {
            "requests_dropped", "requests_unknown", "requests_duplicate", "ttft_unmatched", "tpot_unarmed",
            "bad_records", "untracked_threads", "frees_unknown", "frees_double", "allocs_null", "allocs_zero",
            "allocs_duplicate", "allocs_bad_kind", "allocs_untracked", "frees_untracked", "traces_dropped",
            "region_unmatched_ends", "region_too_deep", "region_names_dropped", "signal_dropped"};
        static const char want[20] = {0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
        for (k = 0; k < 20; k++) {
            snprintf(lab, sizeof lab, "problem=\"%s\"", what[k]);
            CHECK_SAMPLE_U(t, "memobs_problems_total", lab, want[k]);
        }
    }
    {
        /* [kind]: current, peak, live, pending frees, pending bytes, allocs, frees, allocated */
        static const uint64_t m[4][8] = {{4096, 5096, 1, 0, 0, 2, 1, 5096},
                                         {100, 100, 1, 0, 0, 1, 0, 100},
                                         {64, 64, 1, 1, 64, 1, 0, 64},
                                         {0, 30, 0, 0, 0, 3, 3, 30}};
        static const char *const fam[8] = {
            "memobs_tracked_bytes",         "memobs_tracked_peak_bytes",   "memobs_tracked_live_allocations",
            "memobs_tracked_pending_frees", "memobs_tracked_pending_bytes", "memobs_tracked_allocs_total",
            "memobs_tracked_frees_total",   "memobs_tracked_allocated_bytes_total"};
        for (k = 0; k < 4; k++) {
            snprintf(lab, sizeof lab, "kind=\"%s\"", KINDS[k]);
            for (i = 0; i < 8; i++) CHECK_SAMPLE_U(t, fam[i], lab, m[k][i]);
        }
    }
    /* no region used: the families hold "(other)", at 0 */
    CHECK_SAMPLE(t, "memobs_region_ends_total", "region=\"(other)\"", "0");
    CHECK_SAMPLE(t, "memobs_region_timed_total", "region=\"(other)\"", "0");
    CHECK_SAMPLE(t, "memobs_region_seconds_total", "region=\"(other)\"", "0");
    CHECK_SAMPLE(t, "memobs_region_max_seconds", "region=\"(other)\"", "0");
    CHECK_SAMPLE(t, "memobs_markers_total", "region=\"(other)\"", "0");
    CHECK_SAMPLE(t, "memobs_user_kv_blocks_evicted_total", "", "7");
    CHECK_SAMPLE(t, "memobs_user_plain_total", "", "0");
    CHECK_HAS(t, "# HELP memobs_user_kv_blocks_evicted_total KV blocks moved to host memory.\n"
                 "# TYPE memobs_user_kv_blocks_evicted_total counter\n");
    CHECK_HAS(t, "# HELP memobs_user_plain_total User counter plain.\n# TYPE memobs_user_plain_total counter\n");
    /* nothing unchecked: every sample of the exposition was one of the above */
    CHECK_U64(checked, count_samples(t));
    free(t);
    /* leave nothing live for later tests */
    MEMOBS_TRACK_FREE(FP(0x1000));
    MEMOBS_TRACK_FREE(FP(0x3000));
    memobs_track_free_settled(FP(0x4000));
    memobs_request_end(11);
}

/* The sum as written (checked elsewhere), copied out of value_of's buffer. */
static const char *sum_text(const char *t, const char *name) {
    static char b[64];
    const char *v = value_of(t, name, "");
    snprintf(b, sizeof b, "%s", v ? v : "?");
    return b;
}

/* A sample 0.8% below a bound is counted at or below it, 0.8% above is not;
   through memobs__hist_cumulative and through the exposition. */
static void test_bound_precision(void) {
    memobs__prom_hist_t h;
    uint64_t cum[22];
    char *t;
    unsigned k;
    set_id("job-2", "job-2", 0, 0, 1);
    memobs_reset();
    for (k = 0; k < 22; k++) {
        memobs__hist_add(&memobs__g.ttft, TTFT_NS[k] - TTFT_NS[k] / 125);
        memobs__hist_add(&memobs__g.ttft, TTFT_NS[k] + TTFT_NS[k] / 125);
    }
    for (k = 0; k < 19; k++) {
        memobs__hist_add(&memobs__g.tpot, ITL_NS[k] - ITL_NS[k] / 125);
        memobs__hist_add(&memobs__g.tpot, ITL_NS[k] + ITL_NS[k] / 125);
    }
    pthread_mutex_lock(&memobs__g.lock);
    memobs__hist_cumulative(&memobs__g.ttft, memobs__prom_ttft_le, MEMOBS__PROM_TTFT_N, &h);
    pthread_mutex_unlock(&memobs__g.lock);
    CHECK_U64(44, h.count);
    for (k = 0; k < 22; k++) {
        CHECK_U64(2 * k + 1, h.cum[k]); /* below bound k: both samples of the bounds under it, and its lower one */
        cum[k] = 2 * k + 1;
    }
    t = expo();
    check_hist(t, "memobs_ttft_seconds", TTFT_LE, 22, cum, 44, sum_text(t, "memobs_ttft_seconds_sum"));
    for (k = 0; k < 19; k++) cum[k] = 2 * k + 1;
    check_hist(t, "memobs_tpot_seconds", ITL_LE, 19, cum, 38, sum_text(t, "memobs_tpot_seconds_sum"));
    /* the bucket tables match the header's */
    for (k = 0; k < 22; k++) {
        CHECK_U64(TTFT_NS[k], memobs__prom_ttft_le[k].ns);
        CHECK_STR(TTFT_LE[k], memobs__prom_ttft_le[k].le);
    }
    for (k = 0; k < 19; k++) {
        CHECK_U64(ITL_NS[k], memobs__prom_itl_le[k].ns);
        CHECK_STR(ITL_LE[k], memobs__prom_itl_le[k].le);
    }
    free(t);
}

/* Real requests through the public calls: counts, and sums in seconds. */
static void test_requests(void) {
    char *t;
    const char *v;
    set_id("job-3", "job-3", 0, 0, 1);
    memobs_reset();
    memobs_request_begin(5);
    memobs_request_token(5);
    memobs_request_token(5);
    memobs_request_token(5);
    memobs_request_end(5);
    t = expo();
    CHECK_SAMPLE(t, "memobs_requests_completed_total", "", "1");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_count", "", "1");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_bucket", "le=\"+Inf\"", "1");
    CHECK_SAMPLE(t, "memobs_tpot_seconds_count", "", "2");
    CHECK_SAMPLE(t, "memobs_e2e_seconds_count", "", "1");
    v = value_of(t, "memobs_e2e_seconds_sum", "");
    CHECK(v != NULL && strtod(v, NULL) > 0 && strtod(v, NULL) < 60);
    free(t);
}

/* memobs_reset(): counters start again at zero (Prometheus: a counter reset), gauges stay. */
static void test_reset(void) {
    char *t;
    set_id("job-4", "job-4", 0, 0, 1);
    memobs_reset();
    MEMOBS_TRACK_ALLOC(FP(0x5000), 777, MEMOBS_MEM_HOST);
    memobs_record_xfer(MEMOBS_DIR_H2D, 123, MEMOBS_PHASE_PREFILL);
    memobs__hist_add(&memobs__g.ttft, 3 * MS);
    t = expo();
    CHECK_SAMPLE(t, "memobs_transfer_bytes_total", "direction=\"h2d\",phase=\"prefill\"", "123");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_count", "", "1");
    CHECK_SAMPLE(t, "memobs_tracked_allocs_total", "kind=\"host\"", "1");
    free(t);
    memobs_reset();
    t = expo();
    CHECK_SAMPLE(t, "memobs_transfer_bytes_total", "direction=\"h2d\",phase=\"prefill\"", "0");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_count", "", "0");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_sum", "", "0");
    CHECK_SAMPLE(t, "memobs_ttft_seconds_bucket", "le=\"0.005\"", "0");
    CHECK_SAMPLE(t, "memobs_tracked_allocs_total", "kind=\"host\"", "0");
    CHECK_SAMPLE(t, "memobs_tracked_bytes", "kind=\"host\"", "777");
    CHECK_SAMPLE(t, "memobs_tracked_peak_bytes", "kind=\"host\"", "777");
    CHECK_SAMPLE(t, "memobs_tracked_live_allocations", "kind=\"host\"", "1");
    free(t);
    MEMOBS_TRACK_FREE(FP(0x5000));
}

/* memobs_set_manual_apart: the manual families hold the program's own
   records by direction and phase, beside the observed ones; absent while
   nothing was apart. */
static void test_manual(void) {
    char *t;
    set_id("job-m", "job-m", 0, 0, 1);
    memobs_reset();
    memobs_record_xfer(MEMOBS_DIR_H2D, 300, MEMOBS_PHASE_PREFILL);
    t = expo();
    CHECK(strstr(t, "memobs_manual_transfer") == NULL);
    free(t);
    memobs_set_manual_apart(1);
    memobs_record_xfer(MEMOBS_DIR_H2D, 250, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer(MEMOBS_DIR_H2D, 50, MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_D2H(70, 0);
    memobs_observer_enter();
    memobs_record_xfer(MEMOBS_DIR_H2D, 1, MEMOBS_PHASE_PREFILL);
    memobs_observer_leave();
    t = expo();
    CHECK_SAMPLE(t, "memobs_transfer_bytes_total", "direction=\"h2d\",phase=\"prefill\"", "301");
    CHECK_SAMPLE(t, "memobs_transfer_ops_total", "direction=\"h2d\",phase=\"prefill\"", "2");
    CHECK_SAMPLE(t, "memobs_manual_transfer_bytes_total", "direction=\"h2d\",phase=\"prefill\"", "300");
    CHECK_SAMPLE(t, "memobs_manual_transfer_ops_total", "direction=\"h2d\",phase=\"prefill\"", "2");
    CHECK_SAMPLE(t, "memobs_manual_transfer_bytes_total", "direction=\"d2h\",phase=\"decode\"", "70");
    CHECK_SAMPLE(t, "memobs_manual_transfer_ops_total", "direction=\"d2d\",phase=\"unphased\"", "0");
    CHECK_HAS(t, "# TYPE memobs_manual_transfer_bytes_total counter\n");
    free(t);
    memobs_set_manual_apart(0);
    memobs_reset();
}

/* Quotes, backslashes, newlines, non-ASCII UTF-8 and bytes that are not
   UTF-8, in the job id, the host and a counter's help text. */
static void test_escaping(void) {
    char *t, job[140], want[400];
    char host[72];
    memobs_counter_t c;
    set_id("we\"ird\\job\nn\xC3\xA4me \xE2\x82\xAC\xF0\x9F\x98\x80 \xFF\xC3(",
           "we\\\"ird\\\\job\\nn\xC3\xA4me \xE2\x82\xAC\xF0\x9F\x98\x80 \xEF\xBF\xBD\xEF\xBF\xBD(", 0, 0, 1);
    memcpy(host, memobs__g.identity.host, sizeof host);
    snprintf(memobs__g.identity.host, sizeof memobs__g.identity.host, "h\"o\\st");
    snprintf(ID, sizeof ID, "job_id=\"%s\",rank=\"0\",local_rank=\"0\",host=\"h\\\"o\\\\st\"",
             "we\\\"ird\\\\job\\nn\xC3\xA4me \xE2\x82\xAC\xF0\x9F\x98\x80 \xEF\xBF\xBD\xEF\xBF\xBD(");
    c = memobs_counter_register("odd_help", "say \"hi\" \\ C:\\path\nnext line \xE2\x80\x94 \xC3\xBC \xED\xA0\x80");
    CHECK(c >= 0);
    memobs_counter_add(c, 3);
    t = expo();
    CHECK_SAMPLE(t, "memobs_user_odd_help_total", "", "3");
    CHECK_SAMPLE(t, "memobs_info", "version=\"" MEMOBS_VERSION "\",world_size=\"1\"", "1");
    /* HELP escapes backslash and newline, not quotes; a surrogate (ED A0 80) is not UTF-8: 3 x U+FFFD */
    CHECK_HAS(t, "# HELP memobs_user_odd_help_total say \"hi\" \\\\ C:\\\\path\\nnext line \xE2\x80\x94 \xC3\xBC "
                 "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\n");
    free(t);
    memcpy(memobs__g.identity.host, host, sizeof host);
    /* a job id of 129 bytes: cut to 127 before the 3-byte character that does not fit */
    memset(job, 'a', 126);
    memcpy(job + 126, "\xE2\x82\xAC", 4);
    memset(want, 'a', 126);
    want[126] = 0;
    set_id(job, want, 1, 0, 2);
    t = expo();
    CHECK_SAMPLE(t, "memobs_requests_in_flight", "", "0");
    free(t);
}

/* The buffer variant: exact length, "" when too small, then the exposition. */
static void test_buffer(void) {
    char *file, *buf;
    size_t n, m, i;
    set_id("job-5", "job-5", 0, 0, 1);
    memobs_record_xfer(MEMOBS_DIR_D2H, 42, MEMOBS_PHASE_DECODE);
    file = expo();
    n = memobs_format_prometheus(NULL, 0);
    CHECK_U64(strlen(file), n);
    buf = (char *)malloc(n + 1 + 64);
    CHECK(buf != NULL);
    if (!buf) return;
    /* too small by one (no room for the NUL), tiny, and 1: "" and the length; nothing past len written */
    {
        const size_t lens[4] = {n, n / 2, 10, 1};
        for (i = 0; i < 4; i++) {
            memset(buf, 'X', n + 1 + 64);
            m = memobs_format_prometheus(buf, lens[i]);
            CHECK_U64(n, m);
            CHECK_U64(0, (unsigned char)buf[0]);
            for (m = lens[i]; m < n + 1 + 64; m++)
                if (buf[m] != 'X') break;
            CHECK_U64(n + 1 + 64, m);
        }
    }
    memset(buf, 'X', n + 1 + 64);
    m = memobs_format_prometheus(buf, n + 1);
    CHECK_U64(n, m);
    CHECK_U64(n, strlen(buf));
    CHECK_STR(file, buf);
    CHECK_U64('X', (unsigned char)buf[n + 1]);
    CHECK(n > 0 && buf[n - 1] == '\n');
    free(buf);
    free(file);
}

static char DIR_[256];
static void make_dir(void) {
    snprintf(DIR_, sizeof DIR_, "%s/memobs_prom_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK(mkdtemp(DIR_) != NULL);
}
/* Names in dir, sorted is not needed: "a,b," in directory order; count returned. */
static int list_dir(const char *dir, char *out, size_t len) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    out[0] = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        n++;
        snprintf(out + strlen(out), len - strlen(out), "%s,", e->d_name);
    }
    closedir(d);
    return n;
}
static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    char *b;
    if (!f) return NULL;
    b = read_file(f);
    fclose(f);
    return b;
}

static void test_file(void) {
    char path[700], names[1024], *got, *want;
    FILE *f;
    set_id("job-6", "job-6", 3, 0, 4);
    make_dir();
    /* written, equal to the other writers, no temporary left */
    snprintf(path, sizeof path, "%s/m.prom", DIR_);
    log_start();
    CHECK_U64(MEMOBS_OK, memobs_write_prometheus_file(path));
    CHECK_U64(MEMOBS_OK, memobs_write_prometheus_file(path)); /* over an existing one */
    got = slurp(path);
    want = expo();
    CHECK(got != NULL);
    if (got) CHECK_STR(want, got);
    free(got);
    free(want);
    CHECK_U64(1, list_dir(DIR_, names, sizeof names));
    CHECK_STR("m.prom,", names);
    /* %r and %p expanded */
    snprintf(path, sizeof path, "%s/r%%r_p%%p.prom", DIR_);
    CHECK_U64(MEMOBS_OK, memobs_write_prometheus_file(path));
    snprintf(path, sizeof path, "%s/r3_p%lld.prom", DIR_, (long long)getpid());
    CHECK(access(path, R_OK) == 0);
    unlink(path);
    CHECK_U64(0, log_count);
    /* the target is a non-empty directory: IO, one message, no temporary, the target intact */
    snprintf(path, sizeof path, "%s/d.prom", DIR_);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/d.prom/keep", DIR_);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/d.prom", DIR_);
    log_start();
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_prometheus_file(path));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot write the Prometheus file to '"));
    CHECK_U64(1, log_has("/d.prom': cannot open it: Is a directory"));
    CHECK_U64(2, list_dir(DIR_, names, sizeof names));
    CHECK(strstr(names, "tmp") == NULL);
    snprintf(path, sizeof path, "%s/d.prom/keep", DIR_);
    CHECK(access(path, F_OK) == 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/d.prom", DIR_);
    rmdir(path);
    /* a directory that does not exist; an empty path; a path too long once expanded */
    log_start();
    snprintf(path, sizeof path, "%s/no/such/dir/m.prom", DIR_);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO, (uint64_t)(int64_t)memobs_write_prometheus_file(path));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot create"));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_prometheus_file(""));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_prometheus_file(NULL));
    {
        char longp[1100];
        memset(longp, 'x', sizeof longp - 1);
        longp[sizeof longp - 1] = 0;
        CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_prometheus_file(longp));
    }
    CHECK_U64(4, log_count);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_prometheus(NULL));
    log_stop();
    snprintf(path, sizeof path, "%s/m.prom", DIR_);
    unlink(path);
}

/* An unwritable directory: IO, one message, the old file intact, no
   temporary. root writes anywhere, so as root a child drops to nobody. */
static void test_unwritable_dir(void) {
    char path[700], names[1024], *got;
    FILE *f;
    pid_t pid;
    int status = -1;
    set_id("job-7", "job-7", 0, 0, 1);
    make_dir();
    snprintf(path, sizeof path, "%s/m.prom", DIR_);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("old 1\n", f);
    fclose(f);
    CHECK(chmod(DIR_, 0555) == 0);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int bad = 0, rc;
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
            printf("    # cannot drop root privileges (%s): unwritable directory not tested\n", strerror(errno));
            fflush(stdout);
            _exit(0);
        }
        log_start();
        rc = memobs_write_prometheus_file(path);
        if (rc != MEMOBS_ERR_IO) printf("    # rc %d, want %d\n", rc, MEMOBS_ERR_IO), bad = 1;
        if (log_count != 1 || log_has("cannot create") != 1) {
            printf("    # %d messages, want one saying 'cannot create':\n", log_count);
            log_dump();
            bad = 1;
        }
        fflush(stdout);
        _exit(bad);
    }
    CHECK(pid > 0);
    if (pid > 0) waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    got = slurp(path);
    CHECK(got != NULL);
    if (got) CHECK_STR("old 1\n", got);
    free(got);
    CHECK_U64(1, list_dir(DIR_, names, sizeof names));
    CHECK_STR("m.prom,", names);
    chmod(DIR_, 0755);
    unlink(path);
    rmdir(DIR_);
}

/* The periodic step: writes MEMOBS_PROM_FILE; a run of failures warns once. */
static void test_tick(void) {
    char path[MEMOBS__PATH_LEN], *got;
    memobs__dest_t *prom = &memobs__g.out[MEMOBS__OUT_PROM];
    set_id("job-8", "job-8", 0, 0, 1);
    make_dir();
    /* as MEMOBS_PROM_FILE sets it up (memobs__dest_env) */
    snprintf(prom->path, sizeof prom->path, "%s/tick.prom", DIR_);
    prom->owner = prom->path_pid = (int64_t)getpid();
    prom->renamed_said = 1;
    prom->on.v = 1;
    log_start();
    memobs__prom_tick(memobs_now_ns());
    got = slurp(prom->path);
    CHECK(got != NULL && strstr(got, "memobs_info{job_id=\"job-8\"") != NULL);
    free(got);
    CHECK_U64(0, log_count);
    snprintf(path, sizeof path, "%s", prom->path);
    snprintf(prom->path, sizeof prom->path, "%s/gone/tick.prom", DIR_);
    memobs__prom_tick(memobs_now_ns());
    memobs__prom_tick(memobs_now_ns());
    memobs__prom_tick(memobs_now_ns());
    CHECK_U64(1, log_count);
    snprintf(prom->path, sizeof prom->path, "%s", path);
    memobs__prom_tick(memobs_now_ns()); /* recovered: the next failure warns again */
    CHECK_U64(0, memobs__g.prom_failing.v);
    snprintf(prom->path, sizeof prom->path, "%s/gone/tick.prom", DIR_);
    memobs__prom_tick(memobs_now_ns());
    CHECK_U64(2, log_count);
    log_stop();
    prom->on.v = 0;
    memobs__g.prom_failing.v = 0;
    memobs__prom_tick(memobs_now_ns()); /* off: nothing */
    unlink(path);
    rmdir(DIR_);
}

/* ---- exports while 4 threads record --------------------------------------- */

#define THREADS 4
#define ITERS 100000
static memobs_counter_t C_THREAD;
static int done_threads;

static void *recorder(void *arg) {
    uintptr_t base = 0x100000000ull * (1 + (uintptr_t)arg);
    unsigned i;
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    for (i = 0; i < ITERS; i++) {
        MEMOBS_RECORD_H2D(3, 1);
        MEMOBS_RECORD_D2H_CUR(5);
        memobs_counter_add(C_THREAD, 2);
        MEMOBS_TRACK_ALLOC(FP(base + i * 64u), 64, MEMOBS_MEM_PINNED);
        if (i % 2 == 1) {
            MEMOBS_TRACK_FREE(FP(base + (i - 1) * 64u));
            MEMOBS_TRACK_FREE(FP(base + i * 64u));
        }
        if (i % 1000 == 0) {
            uint64_t id = ((uint64_t)(uintptr_t)arg << 32) | i;
            memobs_request_begin(id);
            memobs_request_token(id);
            memobs_request_token(id);
            memobs_request_end(id);
        }
    }
    __atomic_fetch_add(&done_threads, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Histogram invariants of an exposition taken while samples arrive:
   cumulative, +Inf == _count. Returns the number of violations. */
static int hist_invariants(const char *t) {
    static const char *const names[3] = {"memobs_ttft_seconds", "memobs_tpot_seconds", "memobs_e2e_seconds"};
    int bad = 0;
    unsigned h;
    for (h = 0; h < 3; h++) {
        char key[64];
        const char *p = t;
        unsigned long long prev = 0, inf = ~0ull, cnt = ~0ull;
        snprintf(key, sizeof key, "%s_bucket{", names[h]);
        while ((p = strstr(p, key)) != NULL) {
            const char *sp = strchr(p, ' ');
            unsigned long long v = strtoull(sp + 1, NULL, 10);
            if (v < prev) bad++;
            prev = v;
            if (strstr(p, "le=\"+Inf\"") && strstr(p, "le=\"+Inf\"") < sp) inf = v;
            p = sp;
        }
        snprintf(key, sizeof key, "%s_count{", names[h]);
        if ((p = strstr(t, key)) != NULL) cnt = strtoull(strchr(p, ' ') + 1, NULL, 10);
        if (inf != cnt) bad++;
    }
    return bad;
}

static void test_threads(void) {
    pthread_t th[THREADS];
    uintptr_t i;
    int exports = 0, bad = 0;
    char *t, path[700];
    size_t cap = 4096;
    char *buf = (char *)malloc(cap);
    set_id("job-9", "job-9", 0, 0, 1);
    memobs_reset();
    make_dir();
    snprintf(path, sizeof path, "%s/threads.prom", DIR_);
    C_THREAD = memobs_counter_register("thread_adds", "Adds from the recorder threads.");
    for (i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, recorder, (void *)i) == 0);
    /* export the three ways while they record */
    while (__atomic_load_n(&done_threads, __ATOMIC_ACQUIRE) < THREADS || exports < 10) {
        size_t n = memobs_format_prometheus(buf, cap);
        while (n >= cap) { /* grow with room to spare and retry */
            cap = n + 1024;
            buf = (char *)realloc(buf, cap);
            if (!buf) return;
            n = memobs_format_prometheus(buf, cap);
        }
        CHECK_U64(n, strlen(buf));
        bad += hist_invariants(buf);
        if (exports % 20 == 0) {
            t = expo();
            bad += hist_invariants(t);
            free(t);
            CHECK_U64(MEMOBS_OK, memobs_write_prometheus_file(path));
        }
        exports++;
    }
    for (i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK_U64(0, bad);
    t = expo();
    CHECK_SAMPLE_U(t, "memobs_transfer_bytes_total", "direction=\"h2d\",phase=\"prefill\"", 3ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_transfer_ops_total", "direction=\"h2d\",phase=\"prefill\"", 1ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_transfer_bytes_total", "direction=\"d2h\",phase=\"decode\"", 5ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_user_thread_adds_total", "", 2ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_tracked_allocs_total", "kind=\"pinned\"", 1ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_tracked_frees_total", "kind=\"pinned\"", 1ull * THREADS * ITERS);
    CHECK_SAMPLE_U(t, "memobs_tracked_allocated_bytes_total", "kind=\"pinned\"", 64ull * THREADS * ITERS);
    CHECK_SAMPLE(t, "memobs_tracked_bytes", "kind=\"pinned\"", "0");
    CHECK_SAMPLE(t, "memobs_tracked_live_allocations", "kind=\"pinned\"", "0");
    CHECK_SAMPLE_U(t, "memobs_requests_completed_total", "", THREADS * ITERS / 1000);
    CHECK_SAMPLE_U(t, "memobs_ttft_seconds_count", "", THREADS * ITERS / 1000);
    CHECK_SAMPLE_U(t, "memobs_ttft_seconds_bucket", "le=\"+Inf\"", THREADS * ITERS / 1000);
    CHECK_SAMPLE_U(t, "memobs_tpot_seconds_count", "", THREADS * ITERS / 1000);
    CHECK_SAMPLE_U(t, "memobs_e2e_seconds_count", "", THREADS * ITERS / 1000);
    CHECK_U64(0, hist_invariants(t));
    free(t);
    free(buf);
    unlink(path);
    rmdir(DIR_);
    printf("    # %d exports while %d threads recorded\n", exports, THREADS);
}

/* ---- modes ------------------------------------------------------------------ */

/* Values of every kind, odd strings included. */
static int mode_expo(const char *path) {
    memobs_counter_t c;
    int rc;
    memobs_set_identity("odd \"job\"\\\nid \xC3\xA4\xE2\x82\xAC\xF0\x9F\x98\x80 \xFF", 1, 1, 2);
    c = memobs_counter_register("odd_help", "quote \" backslash \\ newline\n\xE2\x80\x94 \xC3\xBC \xFE end");
    memobs_counter_add(c, 9);
    memobs_counter_register("no_help", NULL);
    memobs_record_xfer(MEMOBS_DIR_H2D, 1 << 20, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer(MEMOBS_DIR_D2D, 5, MEMOBS_PHASE_NONE);
    memobs_set_manual_apart(1); /* the manual families too (promtool and the format rules see them) */
    memobs_record_xfer(MEMOBS_DIR_H2D, 1000, MEMOBS_PHASE_DECODE);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 1 << 20, MEMOBS_PHASE_PREFILL, 123456789);
    memobs__hist_add(&memobs__g.ttft, 3 * MS);
    memobs__hist_add(&memobs__g.ttft, 5000 * SEC);
    memobs__hist_add(&memobs__g.tpot, 20 * MS);
    memobs__hist_add(&memobs__g.e2e, 90 * SEC);
    MEMOBS_TRACK_ALLOC(FP(0x1000), 4096, MEMOBS_MEM_DEVICE);
    MEMOBS_TRACK_FREE(FP(0x2000));
    rc = memobs_write_prometheus_file(path);
    MEMOBS_TRACK_FREE(FP(0x1000));
    return rc != MEMOBS_OK;
}

/* Known records, then the exit handler writes MEMOBS_PROM_FILE. */
static int mode_exit(void) { /* identity from MEMOBS_JOB_ID, RANK... */
    memobs_record_xfer(MEMOBS_DIR_H2D, 12345, MEMOBS_PHASE_PREFILL);
    MEMOBS_COUNTER_ADD("at_exit", 4);
    return 0;
}

/* fork() with memobs' worker thread parked. Under AddressSanitizer a child
   forked while another thread is inside ASan's allocator deadlocks on its
   first malloc/free or in LeakSanitizer's check at exit (GCC 12's ASan
   allocator takes no lock of its own around fork(); see tests/tracker/test_track.c).
   MEMOBS_PROM_FILE starts the worker at start-up, so fork_exit forked while
   the new thread was still in ASan's thread start-up (which allocates), and
   periodic can fork while the worker writes the file: 6 hangs in 100 runs of
   fork_exit on a loaded 2-core machine. So in the ASan build the worker is
   first parked inside a task of ours (past its start-up, out of any other
   task, touching no allocator) and released after the fork. The other
   builds fork with the worker free. */
#if defined(__SANITIZE_ADDRESS__)
#define PROM_FORK_PARK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROM_FORK_PARK 1
#endif
#endif
#ifndef PROM_FORK_PARK
#define PROM_FORK_PARK 0
#endif
#define WAIT_NS (60 * SEC) /* bounds a real hang only; every wait here is on a condition */
#if PROM_FORK_PARK
static int park_req, parked;
static void park_task(uint64_t now) {
    (void)now;
    if (!__atomic_load_n(&park_req, __ATOMIC_ACQUIRE)) return;
    __atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&park_req, __ATOMIC_ACQUIRE)) sched_yield();
    __atomic_store_n(&parked, 0, __ATOMIC_RELEASE);
}
#endif
static pid_t fork_quiet(void) {
    pid_t pid;
#if PROM_FORK_PARK
    __atomic_store_n(&park_req, 1, __ATOMIC_RELEASE);
    if (memobs__bg_schedule(park_task, 1 * MS) != MEMOBS_OK) return -1;
    while (!__atomic_load_n(&parked, __ATOMIC_ACQUIRE)) sched_yield();
#endif
    fflush(stdout);
    pid = fork();
#if PROM_FORK_PARK
    __atomic_store_n(&park_req, 0, __ATOMIC_RELEASE); /* in both: the child's copy of the task returns at once */
    if (pid != 0) memobs__bg_schedule(park_task, 0); /* waits for the parked call to return */
#endif
    return pid;
}

/* A forked child that exits writes MEMOBS_PROM_FILE only if its path has
   %p (then to a file of its own); the parent's file, at its own exit. */
static int mode_fork_exit(void) {
    const char *path = getenv("MEMOBS_PROM_FILE"), *pp = path ? strstr(path, "%p") : NULL;
    char child_file[700];
    pid_t pid;
    int status = -1, exists;
    if (!path) return 1;
    memobs_record_xfer(MEMOBS_DIR_D2D, 999, MEMOBS_PHASE_NONE);
    pid = fork_quiet();
    if (pid == 0) {
        alarm(60); /* a hang in the exit handlers ends as SIGALRM, which the parent sees */
        exit(0);   /* runs the exit handlers */
    }
    if (pid < 0) return 1;
    waitpid(pid, &status, 0);
    if (pp) snprintf(child_file, sizeof child_file, "%.*s%lld%s", (int)(pp - path), path, (long long)pid, pp + 2);
    else snprintf(child_file, sizeof child_file, "%s", path);
    exists = access(child_file, F_OK) == 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && exists == (pp != NULL)) {
        printf("ok - %s: a forked child's exit %s\n", TEST_SUITE,
               pp ? "writes its own file (path with %p)" : "leaves the parent's file alone");
        return 0;
    }
    printf("not ok - %s: a forked child's exit: %s %s, child status %d\n", TEST_SUITE, child_file,
           exists ? "exists" : "is missing", status);
    return 1;
}

/* MEMOBS_PROM_FILE with MEMOBS_PROM_INTERVAL_MS=100: the background worker
   rewrites the file with no call from the program. A forked child whose
   worker starts again (memobs_sample_now) leaves the parent's file alone. */
static int prom_file_has(const char *path, const char *line) {
    char *got = slurp(path);
    int yes = got && strstr(got, line) != NULL;
    free(got);
    return yes;
}
static int wait_file_has(const char *path, const char *line) { /* polls; WAIT_NS bounds a hang */
    uint64_t end = memobs_now_ns() + WAIT_NS;
    do {
        if (prom_file_has(path, line)) return 1;
        usleep(10000);
    } while (memobs_now_ns() < end);
    return prom_file_has(path, line);
}
#if !defined(__SANITIZE_THREAD__)
static int child_ticks;
static void child_tick(uint64_t now) {
    (void)now;
    __atomic_fetch_add(&child_ticks, 1, __ATOMIC_SEQ_CST);
}
#endif
static int mode_periodic(void) {
    const char *path = getenv("MEMOBS_PROM_FILE");
    const char *l1 = "direction=\"h2d\",phase=\"decode\"} 111\n", *l2 = "direction=\"h2d\",phase=\"decode\"} 333\n";
    pid_t pid;
    int status = -1, ok1, ok2, ok3, go[2];
    char c = 0;
    if (!path) return 1;
    memobs_record_xfer(MEMOBS_DIR_H2D, 111, MEMOBS_PHASE_DECODE);
    ok1 = wait_file_has(path, l1);
    memobs_record_xfer(MEMOBS_DIR_H2D, 222, MEMOBS_PHASE_DECODE);
    ok2 = wait_file_has(path, l2);
    /* The child may only start once the parent has stopped its own periodic
       writes (which would rewrite 333 over anything the child wrote, so
       that a wrong write went unseen or not, by chance): from then on, only
       the child could change the file. */
    if (pipe(go) != 0) return 1;
    pid = fork_quiet();
    if (pid == 0) {
        alarm(60); /* a hang ends as SIGALRM, which the parent sees */
        close(go[1]);
        if (read(go[0], &c, 1) != 1) _exit(4);
        memobs_record_xfer(MEMOBS_DIR_H2D, 1000, MEMOBS_PHASE_DECODE);
#if !defined(__SANITIZE_THREAD__) /* TSan refuses threads started after a multi-threaded fork */
        {
            uint64_t end = memobs_now_ns() + WAIT_NS;
            (void)memobs_sample_now(); /* the child's worker starts again, with the parent's tasks */
            /* a task of the same period, counted: its 4th call comes after
               at least 3 periods, in which the worker ran the inherited
               Prometheus task too (each call takes the earliest task due) */
            if (memobs__bg_schedule(child_tick, 100 * MS) != MEMOBS_OK) _exit(5);
            while (__atomic_load_n(&child_ticks, __ATOMIC_SEQ_CST) < 4 && memobs_now_ns() < end) usleep(10000);
            if (__atomic_load_n(&child_ticks, __ATOMIC_SEQ_CST) < 4) _exit(6);
        }
#endif
        _exit(0);
    }
    close(go[0]);
    if (pid < 0) return 1;
    /* removal waits for a write in progress; nothing of the parent's is written after */
    memobs__bg_schedule(memobs__prom_tick, 0);
    if (write(go[1], "g", 1) != 1) return 1;
    close(go[1]);
    waitpid(pid, &status, 0);
    ok3 = WIFEXITED(status) && WEXITSTATUS(status) == 0 && prom_file_has(path, l2);
    if (!ok3) {
        char *got = slurp(path);
        printf("    # child status %d; the file:\n%s\n", status, got ? got : "(none)");
        free(got);
    }
    printf("%s - %s: MEMOBS_PROM_INTERVAL_MS=100: the file rewritten in the background (111, then 333 bytes)\n",
           ok1 && ok2 ? "ok" : "not ok", TEST_SUITE);
    printf("%s - %s: a forked child's background writes leave the parent's file alone\n", ok3 ? "ok" : "not ok",
           TEST_SUITE);
    return !(ok1 && ok2 && ok3);
}

static int mode_interval(const char *want) {
    unsigned long long w = strtoull(want, NULL, 10);
    if (memobs__g.prom_interval_ns == w) {
        printf("ok - %s: MEMOBS_PROM_INTERVAL_MS read as %llu ns\n", TEST_SUITE, w);
        return 0;
    }
    printf("not ok - %s: MEMOBS_PROM_INTERVAL_MS read as %llu ns, want %llu\n", TEST_SUITE,
           (unsigned long long)memobs__g.prom_interval_ns, w);
    return 1;
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    /* The container's families (read from the cgroup at each write: their
       figures move between writes) are left out of the exact expositions
       below (tests/tracker/test_cgroup.c checks them); the expo modes keep
       them, for the format rules and promtool. */
    if (!(argc > 1 && strncmp(argv[1], "expo", 4) == 0)) memobs__cg_set_enabled(0);
    if (argc > 2 && strcmp(argv[1], "expo") == 0) return mode_expo(argv[2]);
    if (argc > 2 && strcmp(argv[1], "expo_empty") == 0) return memobs_write_prometheus_file(argv[2]) != MEMOBS_OK;
    if (argc > 1 && strcmp(argv[1], "exit") == 0) return mode_exit();
    if (argc > 1 && strcmp(argv[1], "fork_exit") == 0) return mode_fork_exit();
    if (argc > 2 && strcmp(argv[1], "interval") == 0) return mode_interval(argv[2]);
    if (argc > 1 && strcmp(argv[1], "periodic") == 0) return mode_periodic();
    if (argc > 1) {
        printf("not ok - %s: unknown mode %s\n", TEST_SUITE, argv[1]);
        return 1;
    }
    C_EVICT = memobs_counter_register("kv_blocks_evicted", "KV blocks moved to host memory.");
    C_PLAIN = memobs_counter_register("plain", NULL);
    RUN(test_every_family);
    RUN(test_bound_precision);
    RUN(test_requests);
    RUN(test_reset);
    RUN(test_manual);
    RUN(test_escaping);
    RUN(test_buffer);
    RUN(test_file);
    RUN(test_unwritable_dir);
    RUN(test_tick);
    RUN(test_threads);
    return CHECK_DONE();
}
