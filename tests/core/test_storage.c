/* The storage tier (H2S, S2H, D2S, S2D) and the transfer-size
   distribution through every output: exact under threads, against a
   model. Built as C99, C++17, ASan+UBSan and TSan (tests/core/test_storage.sh).
   The HTML report's rows: tests/outputs/test_html.c; a real Prometheus server's
   histogram_quantile: tests/serving/test_dashboard.sh. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifndef TEST_SUITE
#define TEST_SUITE "storage"
#endif

static memobs_summary_t S; /* large: keep it off the stack */

static void snap(void) { memobs_get_summary(&S); }

/* The bucket of a size, found by doubling (the model; memobs counts
   leading zeros). */
static unsigned model_bucket(uint64_t bytes) {
    uint64_t bound = 1;
    unsigned b = 0;
    while (bound < bytes) {
        bound <<= 1;
        b++;
    }
    return b;
}

/* Writes an output through a FILE and returns it (static, reused). */
static char *out_text(int (*fn)(FILE *)) {
    static char *buf;
    FILE *f = tmpfile();
    long n;
    CHECK(f != NULL);
    if (!f) return (char *)"";
    CHECK_U64(MEMOBS_OK, (uint64_t)(int64_t)fn(f));
    n = ftell(f);
    rewind(f);
    free(buf);
    buf = (char *)malloc((size_t)n + 1);
    n = (long)fread(buf, 1, (size_t)n, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}
static int write_text(FILE *f) { return memobs_write_summary(f, MEMOBS_FORMAT_TEXT); }
static int write_json(FILE *f) { return memobs_write_summary(f, MEMOBS_FORMAT_JSON); }
static int write_prom(FILE *f) { return memobs_write_prometheus(f); }

static size_t count_of(const char *hay, const char *needle) {
    size_t n = 0;
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

/* ---- every way to record, every direction, every phase ------------------- */

static void test_macros_and_functions(void) {
    unsigned d, p;
    memobs_reset();
    MEMOBS_RECORD_H2S(100, 1);
    MEMOBS_RECORD_S2H(200, 0);
    MEMOBS_RECORD_D2S(300, 1);
    MEMOBS_RECORD_S2D(400, 0);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_H2S_CUR(1);
    MEMOBS_RECORD_S2H_CUR(2);
    MEMOBS_RECORD_D2S_CUR(3);
    MEMOBS_RECORD_S2D_CUR(4);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_record_xfer(MEMOBS_DIR_H2S, 10, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_XFER(MEMOBS_DIR_S2D, 20, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 1 << 20, MEMOBS_PHASE_PREFILL, 500000); /* 1 MiB in 0.5 ms */
    MEMOBS_RECORD_XFER_NS(MEMOBS_DIR_D2S, 4096, MEMOBS_PHASE_DECODE, 1000);
    memobs_record_xfer_ns(MEMOBS_DIR_H2S, 8, MEMOBS_PHASE_DECODE, 0); /* 0 ns: a record, untimed */
    snap();
    {
        /* [phase][dir - 3]: bytes, then counts */
        static const uint64_t b[3][4] = {{10, 0, 0, 0}, {100, 1 << 20, 300, 20}, {1 + 8, 200 + 2, 3 + 4096, 400 + 4}};
        static const uint64_t n[3][4] = {{1, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}};
        const memobs_dirs_t *ph[3];
        ph[0] = &S.unphased; ph[1] = &S.prefill; ph[2] = &S.decode;
        for (p = 0; p < 3; p++)
            for (d = 0; d < 4; d++) {
                CHECK_U64(b[p][d], memobs_dirs_get(ph[p], MEMOBS_DIR_H2S + d)->bytes);
                CHECK_U64(n[p][d], memobs_dirs_get(ph[p], MEMOBS_DIR_H2S + d)->count);
            }
    }
    CHECK_U64(0, S.total.h2d.count + S.total.d2h.count + S.total.d2d.count);
    CHECK_U64(1 << 20, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_S2H].bytes);
    CHECK_U64(500000, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_S2H].ns);
    CHECK_U64(1, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2S].count);
    CHECK_U64(1000, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_D2S].ns);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_H2S].count);
    /* the accessor and the named fields agree */
    CHECK(memobs_dirs_get(&S.total, MEMOBS_DIR_S2D) == &S.total.s2d);
    CHECK(memobs_dirs_at(&S.total, MEMOBS_DIR_H2S) == &S.total.h2s);
    CHECK_U64(0, S.bad_records);
}

/* Bad directions, phases and values: refused whole, counted, nothing kept. */
static void test_bad_input(void) {
    memobs_reset();
    memobs_record_xfer((memobs_dir_t)7, 10, MEMOBS_PHASE_NONE);
    memobs_record_xfer_ns((memobs_dir_t)7, 10, MEMOBS_PHASE_NONE, 5);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 10, (memobs_phase_t)3, 5);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, MEMOBS_MAX_BYTES + 1, MEMOBS_PHASE_DECODE, 5);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 10, MEMOBS_PHASE_DECODE, MEMOBS_MAX_NS + 1);
    MEMOBS_RECORD_XFER(99, 10, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_S2D(MEMOBS_MAX_BYTES + 1, 1);
    snap();
    CHECK_U64(7, S.bad_records);
    CHECK_U64(0, S.total.s2h.count + S.total.s2d.count + S.total.h2d.count);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2H].count);
    CHECK_U64(0, S.sizes[MEMOBS_DIR_S2H].count + S.sizes[MEMOBS_DIR_S2D].count);
    /* recording off: nothing, timed or not */
    memobs_set_enabled(0);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 10, MEMOBS_PHASE_DECODE, 5);
    MEMOBS_RECORD_H2S(10, 1);
    memobs_set_enabled(1);
    snap();
    CHECK_U64(0, S.total.s2h.count + S.total.h2s.count);
    CHECK_U64(0, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2H].count);
    memobs_reset();
}

/* ---- sizes against the model --------------------------------------------- */

static void test_size_buckets(void) {
    static const uint64_t sizes[] = {0, 1, 2, 3, 4, 5, 1023, 1024, 1025, 4096, 4097, 65536, 1u << 20,
                                     (1u << 20) + 1, UINT64_C(1) << 40, MEMOBS_MAX_BYTES};
    const size_t n = sizeof sizes / sizeof sizes[0];
    uint64_t want[MEMOBS_SIZE_BUCKETS], sum = 0;
    size_t i;
    unsigned d, b;
    memobs_reset();
    memset(want, 0, sizeof want);
    for (d = 0; d < MEMOBS_DIRS; d++)
        for (i = 0; i < n; i++) MEMOBS_RECORD_XFER(d, sizes[i], (i % 3));
    for (i = 0; i < n; i++) {
        want[model_bucket(sizes[i])]++;
        sum += sizes[i];
    }
    snap();
    for (d = 0; d < MEMOBS_DIRS; d++) {
        const memobs_xfer_sizes_t *z = &S.sizes[d];
        for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++) CHECK_U64(want[b], z->buckets[b]);
        CHECK_U64(n, z->count);
        CHECK_U64(sum, z->bytes);
        CHECK_U64(memobs_dirs_get(&S.total, d)->count, z->count);
        /* 16 records: p50 the 8th (1024), p90 the 15th (2^40), p99 and max the 16th (2^56) */
        CHECK_U64(1024, z->p50);
        CHECK_U64(UINT64_C(1) << 40, z->p90);
        CHECK_U64(MEMOBS_MAX_BYTES, z->p99);
        CHECK_U64(MEMOBS_MAX_BYTES, z->max);
    }
    /* n copies at once (a CUDA graph's launch): n records, at their mean size */
    memobs_reset();
    memobs__xfer_n(MEMOBS_DIR_S2D, MEMOBS_PHASE_DECODE, 3000, 3); /* mean 1000: (512, 1024] */
    memobs__xfer_n(MEMOBS_DIR_S2D, MEMOBS_PHASE_DECODE, 3073, 3); /* mean 1024.33, rounded up: (1024, 2048] */
    snap();
    CHECK_U64(3, S.sizes[MEMOBS_DIR_S2D].buckets[10]);
    CHECK_U64(3, S.sizes[MEMOBS_DIR_S2D].buckets[11]);
    CHECK_U64(6, S.sizes[MEMOBS_DIR_S2D].count);
    CHECK_U64(6, S.total.s2d.count);
    /* the percentiles' ranks: 100 records, 89 of 64 B and 11 of 1 MiB: p50 64 B, p90 the 90th (1 MiB) */
    memobs_reset();
    for (i = 0; i < 89; i++) MEMOBS_RECORD_H2S(64, 1);
    for (i = 0; i < 11; i++) MEMOBS_RECORD_H2S(1 << 20, 0);
    snap();
    CHECK_U64(64, S.sizes[MEMOBS_DIR_H2S].p50);
    CHECK_U64(1 << 20, S.sizes[MEMOBS_DIR_H2S].p90);
    CHECK_U64(1 << 20, S.sizes[MEMOBS_DIR_H2S].p99);
    CHECK_U64(89, S.sizes[MEMOBS_DIR_H2S].buckets[6]);
    CHECK_U64(11, S.sizes[MEMOBS_DIR_H2S].buckets[20]);
    /* a reset empties the distribution */
    memobs_reset();
    snap();
    CHECK_U64(0, S.sizes[MEMOBS_DIR_H2S].count);
    CHECK_U64(0, S.sizes[MEMOBS_DIR_H2S].buckets[6]);
    CHECK_U64(0, S.sizes[MEMOBS_DIR_H2S].p50);
}

/* ---- threads ---------------------------------------------------------------- */

#define THREADS 4
#define PER 20000

static void *storage_recorder(void *arg) {
    unsigned k = (unsigned)(uintptr_t)arg, i;
    memobs_set_phase(k & 1 ? MEMOBS_PHASE_DECODE : MEMOBS_PHASE_PREFILL);
    for (i = 0; i < PER; i++) {
        uint64_t sz = (uint64_t)(i % 7 + 1) << (k * 4); /* thread k: 1..7 << 4k */
        MEMOBS_RECORD_S2H_CUR(sz);
        MEMOBS_RECORD_H2S(sz, 1);
        if (i % 10 == 0) memobs_record_xfer_ns(MEMOBS_DIR_S2D, sz, MEMOBS_PHASE_DECODE, 100 + k);
        if (i % 100 == 0) memobs_sample_now(); /* the sampler's writer beside the records */
    }
    return NULL;
}

/* 4 threads recording storage transfers while another writes every
   output: the figures after the join are exact. */
static void test_threads_exact(void) {
    pthread_t t[THREADS];
    uint64_t bytes[2] = {0, 0}, s2d_b = 0, s2d_ns = 0, want[MEMOBS_SIZE_BUCKETS], want_s2d[MEMOBS_SIZE_BUCKETS];
    unsigned k, i, b;
    memobs_reset();
    memset(want, 0, sizeof want);
    memset(want_s2d, 0, sizeof want_s2d);
    for (k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, storage_recorder, (void *)(uintptr_t)k);
    for (i = 0; i < 20; i++) { /* outputs read while the threads record */
        char *x = out_text(write_prom);
        CHECK(strstr(x, "memobs_transfer_size_bytes_bucket{") != NULL);
        out_text(write_json);
    }
    for (k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
    for (k = 0; k < THREADS; k++)
        for (i = 0; i < PER; i++) {
            uint64_t sz = (uint64_t)(i % 7 + 1) << (k * 4);
            bytes[k & 1] += sz;
            want[model_bucket(sz)]++;
            if (i % 10 == 0) {
                s2d_b += sz;
                s2d_ns += 100 + k;
                want_s2d[model_bucket(sz)]++;
            }
        }
    snap();
    CHECK_U64(bytes[0], S.prefill.s2h.bytes);
    CHECK_U64(bytes[1], S.decode.s2h.bytes);
    CHECK_U64((uint64_t)THREADS * PER, S.total.s2h.count);
    CHECK_U64(bytes[0] + bytes[1], S.prefill.h2s.bytes);
    CHECK_U64((uint64_t)THREADS * PER, S.prefill.h2s.count);
    CHECK_U64(s2d_b, S.decode.s2d.bytes);
    CHECK_U64(s2d_b, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2D].bytes);
    CHECK_U64(s2d_ns, S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2D].ns);
    CHECK_U64((uint64_t)THREADS * (PER / 10), S.timed[MEMOBS_PHASE_DECODE][MEMOBS_DIR_S2D].count);
    for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++) {
        CHECK_U64(want[b], S.sizes[MEMOBS_DIR_S2H].buckets[b]);
        CHECK_U64(want[b], S.sizes[MEMOBS_DIR_H2S].buckets[b]);
        CHECK_U64(want_s2d[b], S.sizes[MEMOBS_DIR_S2D].buckets[b]);
    }
    CHECK_U64(0, S.untracked_threads);
}

/* ---- every output --------------------------------------------------------- */

/* A known set: two stores (4 KiB, prefill), a load the engine timed (1 MiB
   in 2 ms, decode), a GPUDirect write (64 KiB, unphased), an H2D copy. */
static void record_known(void) {
    memobs_reset();
    MEMOBS_RECORD_H2S(4096, 1);
    MEMOBS_RECORD_H2S(4096, 1);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 1 << 20, MEMOBS_PHASE_DECODE, 2000000);
    memobs_record_xfer(MEMOBS_DIR_D2S, 65536, MEMOBS_PHASE_NONE);
    MEMOBS_RECORD_H2D(100, 1);
}

static void test_text_summary(void) {
    char *t;
    record_known();
    t = out_text(write_text);
    CHECK_HAS(t, "  H2D   |      100 B        1 |      100 B        1 |        0 B        0 |        0 B        0\n");
    CHECK_HAS(t, "  H2S   |    8.19 KB        2 |    8.19 KB        2 |        0 B        0 |        0 B        0\n");
    CHECK_HAS(t, "  S2H   |    1.05 MB        1 |        0 B        0 |    1.05 MB        1 |        0 B        0\n");
    CHECK_HAS(t, "  D2S   |   65.54 KB        1 |        0 B        0 |        0 B        0 |   65.54 KB        1\n");
    CHECK_HAS(t, "  S2D   |        0 B        0 |        0 B        0 |        0 B        0 |        0 B        0\n");
    CHECK_HAS(t, "  all   |    1.12 MB        5 |    8.29 KB        3 |    1.05 MB        1 |   65.54 KB        1\n");
    CHECK_HAS(t, "  engine-timed   |  completed      ops       time       GB/s\n"
                 "  S2H decode     |    1.05 MB        1    2.00 ms       0.52\n");
    CHECK(strstr(t, "device-timed") == NULL);
    CHECK_HAS(t, "  sizes |      ops       mean        p50        p90        p99        max");
    CHECK_HAS(t, "  H2D   |        1      100 B      128 B      128 B      128 B      128 B\n");
    CHECK_HAS(t, "  H2S   |        2    4.10 KB      4 KiB      4 KiB      4 KiB      4 KiB\n");
    CHECK_HAS(t, "  S2H   |        1    1.05 MB      1 MiB      1 MiB      1 MiB      1 MiB\n");
    CHECK_HAS(t, "  D2S   |        1   65.54 KB     64 KiB     64 KiB     64 KiB     64 KiB\n");
    /* no storage record: the table as before, three directions */
    memobs_reset();
    MEMOBS_RECORD_H2D(100, 1);
    t = out_text(write_text);
    CHECK(strstr(t, "H2S") == NULL);
    CHECK_HAS(t, "  D2D   |        0 B        0 |");
}

static void test_json_summary(void) {
    char *t;
    record_known();
    t = out_text(write_json);
    CHECK_HAS(t, "\"total\":{\"h2d_bytes\":100,\"h2d_count\":1,\"d2h_bytes\":0,\"d2h_count\":0,\"d2d_bytes\":0,"
                 "\"d2d_count\":0,\"h2s_bytes\":8192,\"h2s_count\":2,\"s2h_bytes\":1048576,\"s2h_count\":1,"
                 "\"d2s_bytes\":65536,\"d2s_count\":1,\"s2d_bytes\":0,\"s2d_count\":0}");
    CHECK_HAS(t, "\"decode\":{\"h2d_bytes\":0,\"h2d_count\":0,\"d2h_bytes\":0,\"d2h_count\":0,\"d2d_bytes\":0,"
                 "\"d2d_count\":0,\"h2s_bytes\":0,\"h2s_count\":0,\"s2h_bytes\":1048576,\"s2h_count\":1,");
    CHECK_HAS(t, "\"s2h\":{\"bytes\":1048576,\"count\":1,\"ns\":2000000}");
    CHECK_HAS(t, "\"sizes\":{\"h2d\":{\"count\":1,\"bytes\":100,\"p50\":128,\"p90\":128,\"p99\":128,\"max\":128,"
                 "\"buckets\":[[128,1]]},\"d2h\":{\"count\":0,\"bytes\":0,\"p50\":0,\"p90\":0,\"p99\":0,\"max\":0,"
                 "\"buckets\":[]},");
    CHECK_HAS(t, "\"h2s\":{\"count\":2,\"bytes\":8192,\"p50\":4096,\"p90\":4096,\"p99\":4096,\"max\":4096,"
                 "\"buckets\":[[4096,2]]},\"s2h\":{\"count\":1,\"bytes\":1048576,\"p50\":1048576,\"p90\":1048576,"
                 "\"p99\":1048576,\"max\":1048576,\"buckets\":[[1048576,1]]},\"d2s\":{\"count\":1,\"bytes\":65536,");
}

static void test_prometheus(void) {
    char *t;
    record_known();
    t = out_text(write_prom);
    CHECK_HAS(t, ",direction=\"h2s\",phase=\"prefill\"} 8192\n");
    CHECK_HAS(t, "memobs_transfer_ops_total{job_id=");
    CHECK_HAS(t, ",direction=\"s2h\",phase=\"decode\"} 0.002\n"); /* timed seconds */
    CHECK_HAS(t, "# TYPE memobs_transfer_size_bytes histogram\n");
    CHECK_HAS(t, ",direction=\"h2s\",le=\"2048\"} 0\n");
    CHECK_HAS(t, ",direction=\"h2s\",le=\"4096\"} 2\n");
    CHECK_HAS(t, ",direction=\"h2s\",le=\"+Inf\"} 2\n");
    CHECK_HAS(t, ",direction=\"d2s\",le=\"32768\"} 0\n");
    CHECK_HAS(t, ",direction=\"d2s\",le=\"65536\"} 1\n");
    CHECK_HAS(t, "memobs_transfer_size_bytes_sum{job_id=");
    CHECK_HAS(t, ",direction=\"s2h\"} 1048576\n");
    /* 57 bounds and +Inf for each of 7 directions */
    CHECK_U64(7 * 58, count_of(t, "memobs_transfer_size_bytes_bucket{"));
    CHECK_U64(7, count_of(t, "memobs_transfer_size_bytes_count{"));
}

static void test_timeline(void) {
    char *t;
    CHECK_U64(MEMOBS_OK, (uint64_t)(int64_t)memobs_timeline_start(4096));
    record_known();
    t = out_text(memobs_write_timeline);
    CHECK_U64(MEMOBS_OK, (uint64_t)(int64_t)memobs_timeline_stop());
    CHECK_U64(2, count_of(t, "\"name\":\"H2S prefill\""));
    /* the timed load: its record and its 2 ms slice on the engine-timed track */
    CHECK_U64(2, count_of(t, "\"name\":\"S2H decode\""));
    CHECK_U64(1, count_of(t, "\"name\":\"D2S unphased\""));
    CHECK_HAS(t, "\"dur\":2000.000");
    CHECK_HAS(t, "\"name\":\"H2S transfers\"");
    CHECK_HAS(t, "\"name\":\"S2H transfers (engine-timed)\"");
    CHECK_HAS(t, "\"cat\":\"storage\"");
    CHECK(strstr(t, "S2D transfers") == NULL); /* no S2D record: no track */
    CHECK_HAS(t, "\"name\":\"H2S bytes\"");
}

static void test_stormlog(void) {
    char *t;
    record_known();
    memobs_sample_now();
    t = out_text(memobs_write_stormlog);
    CHECK_U64(1, count_of(t, "\"event_type\":\"transfers\""));
    CHECK_HAS(t, "\"h2d_bytes\":100,\"h2d_ops\":1,\"h2d_bytes_prefill\":100,\"h2d_size_p50\":128,");
    CHECK_HAS(t, "\"h2s_bytes\":8192,\"h2s_ops\":2,\"h2s_bytes_prefill\":8192,\"h2s_size_p50\":4096,"
                 "\"h2s_size_p90\":4096,\"h2s_size_p99\":4096,\"h2s_size_max\":4096");
    CHECK_HAS(t, "\"s2h_bytes\":1048576,\"s2h_ops\":1,\"s2h_bytes_decode\":1048576,\"s2h_timed_bytes\":1048576,"
                 "\"s2h_timed_ns\":2000000,\"s2h_size_p50\":1048576,");
    CHECK_HAS(t, "\"d2s_bytes\":65536,\"d2s_ops\":1,\"d2s_bytes_unphased\":65536,");
    CHECK(strstr(t, "s2d_bytes") == NULL);
    /* no transfer: no event */
    memobs_reset();
    t = out_text(memobs_write_stormlog);
    CHECK(strstr(t, "\"transfers\"") == NULL);
}

/* The sampler's gauges and the leak detector's slopes in Prometheus. */
static void test_prometheus_host(void) {
    char *t;
    unsigned i;
    for (i = 0; i < 3; i++) memobs_sample_now();
    t = out_text(write_prom);
    CHECK_HAS(t, "# TYPE memobs_host_rss_bytes gauge\nmemobs_host_rss_bytes{");
    CHECK_HAS(t, "# TYPE memobs_host_heap_bytes gauge\n");
    CHECK_HAS(t, "memobs_leak_slope_bytes_per_second{job_id=");
    CHECK_HAS(t, ",series=\"rss\"} ");
    CHECK_HAS(t, ",series=\"tracked\"} ");
    CHECK_HAS(t, "# TYPE memobs_leak_samples gauge\n");
    CHECK(strstr(t, "memobs_device_used_bytes") == NULL); /* no memobs_cuda.h: no device */
    {
        /* the newest sample's figures (no sampler thread: the write's newest is still the newest) */
        memobs_sample_t s;
        char want[400];
        snap();
        CHECK_U64(1, memobs_get_samples(&s, 1));
        snprintf(want, sizeof want, "memobs_host_rss_bytes{job_id=\"%s\",rank=\"%d\",local_rank=\"%d\",host=\"%s\"} %llu\n",
                 S.identity.job_id, (int)S.identity.rank, (int)S.identity.local_rank, S.identity.host,
                 (unsigned long long)s.rss_bytes);
        CHECK_HAS(t, want);
    }
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--stormlog") == 0) { /* a file for tests/core/test_storage.sh's validator */
        record_known();
        memobs_sample_now();
        return memobs_write_stormlog_file(argv[2]) != MEMOBS_OK;
    }
    check__suite = TEST_SUITE;
    RUN(test_macros_and_functions);
    RUN(test_bad_input);
    RUN(test_size_buckets);
    RUN(test_threads_exact);
    RUN(test_text_summary);
    RUN(test_json_summary);
    RUN(test_prometheus);
    RUN(test_timeline);
    RUN(test_stormlog);
    RUN(test_prometheus_host);
    return CHECK_DONE();
}
