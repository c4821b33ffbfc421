/* Every deprecated name of memobs.h, used exactly once (tests/docs/test_names.sh
   counts one deprecation warning per name), each checked against its 1.0
   replacement on real figures. Built as C99, C++17 and by nvcc. Prints TAP
   lines "ok - names: ..." / "not ok - names: ..."; exits 1 on a failure.
   An alias that must be called more than once is taken once as a function
   pointer (one use, one warning). */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <stdio.h>
#include <string.h>

#include "eq.h"

static memobs_summary_t S;
static memobs_summary_t *sum(void) {
    memobs_get_summary(&S);
    return &S;
}

int main(void) {
    char a[256], b[256];
    memobs_timeline_stats_t st, st2;
    memobs_timeline_thread_t th[4], th2[4];
    uint64_t max = 0, max2 = 0;
    memobs_alloc_info_t al;
    FILE *f;
    static char blk[4096];
    int (*region_timing)(int) = memobs_region_timing;
    uint64_t (*request_timeout)(uint64_t) = memobs_request_timeout;
    uint64_t (*trace_write_limit)(uint64_t) = memobs_trace_write_limit;
    int (*timeline_enable)(size_t) = memobs_timeline_enable;
    int (*manual_apart)(int) = memobs_manual_apart;

    memobs_init();
    memobs_reset();

    /* control */
    memobs_enable(0);
    EQ("memobs_enable(0): memobs_get_enabled() reads 0", 0, memobs_get_enabled());
    EQ("memobs_is_enabled() == memobs_get_enabled() (off)", memobs_get_enabled(), memobs_is_enabled());
    EQ("memobs_set_enabled(1) returns the previous setting (0)", 0, memobs_set_enabled(1));
    EQ("manual_apart(1) returns 0", 0, manual_apart(1));
    EQ("memobs_get_manual_apart() after manual_apart(1)", 1, memobs_get_manual_apart());
    EQ("manual_apart(0) returns 1", 1, manual_apart(0));

    /* transfers: the old argument order (dir, phase, bytes) files the same
       figures as the new one (dir, bytes, phase) */
    memobs_reset();
    memobs_record(MEMOBS_DIR_H2D, MEMOBS_PHASE_DECODE, 4096);
    EQ("memobs_record(H2D, DECODE, 4096): decode H2D bytes", 4096, sum()->decode.h2d.bytes);
    EQ("memobs_record: decode H2D count", 1, S.decode.h2d.count);
    EQ("memobs_record: nothing under prefill", 0, S.prefill.h2d.bytes);
    memobs_record_xfer(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_DECODE);
    EQ("memobs_record_xfer(H2D, 4096, DECODE) adds the same: 8192", 8192, sum()->decode.h2d.bytes);
    memobs_record_timed(MEMOBS_DIR_D2H, MEMOBS_PHASE_PREFILL, 1000, 2000);
    EQ("memobs_record_timed(D2H, PREFILL, 1000, 2000 ns): timed bytes", 1000,
       sum()->timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H].bytes);
    EQ("memobs_record_timed: timed ns", 2000, S.timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H].ns);
    memobs_record_xfer_timed(MEMOBS_DIR_D2H, 1000, MEMOBS_PHASE_PREFILL, 2000);
    EQ("memobs_record_xfer_timed: the same figures, twice", 2,
       sum()->timed[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H].count);

    /* timing */
    memobs_reset();
    memobs_ttft_record(5000000);
    memobs_record_ttft(5000000);
    EQ("memobs_ttft_record + memobs_record_ttft: 2 TTFT samples", 2, sum()->ttft.count);
    EQ("TTFT max 5 ms", 5000000, S.ttft.max_ns);
    memobs_tpot_record(700000);
    memobs_record_tpot(700000);
    EQ("memobs_tpot_record + memobs_record_tpot: 2 TPOT samples", 2, sum()->tpot.count);
    EQ("TPOT max 0.7 ms", 700000, S.tpot.max_ns);

    /* requests */
    EQ("request_timeout(UINT64_MAX) reads the default 600 s", 600000000000ull, request_timeout(UINT64_MAX));
    EQ("memobs_request_get_timeout() agrees", 600000000000ull, memobs_request_get_timeout());
    EQ("request_timeout(5 ms) returns the previous 600 s", 600000000000ull, request_timeout(5000000));
    EQ("memobs_request_get_timeout() now 5 ms", 5000000, memobs_request_get_timeout());
    EQ("memobs_request_set_timeout(600 s) returns 5 ms", 5000000, memobs_request_set_timeout(600000000000ull));

    /* regions */
    EQ("memobs_region_name(\"alias_r\") == memobs_region_intern(\"alias_r\")",
       (unsigned long long)memobs_region_intern("alias_r"), (unsigned long long)memobs_region_name("alias_r"));
    check(memobs_region_intern("alias_r") > 0, "the interned id is >= 1", 1, (unsigned long long)memobs_region_intern("alias_r"));
    EQ("region_timing(-1) reads: on", 1, region_timing(-1));
    EQ("region_timing(0) returns 1", 1, region_timing(0));
    EQ("memobs_region_get_timing() now 0", 0, memobs_region_get_timing());
    EQ("region_timing(-1) reads 0", 0, region_timing(-1));
    EQ("memobs_region_set_timing(1) returns 0", 0, memobs_region_set_timing(1));

    /* tracker */
    memobs_reset();
    EQ("memobs_set_tag_provider(NULL) == MEMOBS_OK", MEMOBS_OK, memobs_set_tag_provider(NULL));
    EQ("memobs_set_peak_report(\"off\", 0.1, 0) == MEMOBS_OK", MEMOBS_OK, memobs_set_peak_report("off", 0.1, 0));
    MEMOBS_TRACK_ALLOC_N(blk, sizeof blk, MEMOBS_MEM_DEVICE, "alias_tag");
    EQ("memobs_track_device_bytes(0, &max): 4096 now", 4096, memobs_track_device_bytes(0, &max));
    EQ("memobs_get_device_bytes(0, &max): the same", 4096, memobs_get_device_bytes(0, &max2));
    EQ("the two maxima agree", max2, max);
    EQ("one live allocation", 1, memobs_get_allocations(&al, 1));
    memset(a, 0, sizeof a);
    memset(b, 1, sizeof b);
    EQ("memobs_trace_text and memobs_format_trace return one length",
       (unsigned long long)memobs_format_trace(b, sizeof b, al.trace),
       (unsigned long long)memobs_trace_text(al.trace, a, sizeof a));
    check(strcmp(a, b) == 0 && strstr(a, "alias_tag") != NULL, "memobs_trace_text: the same text, with the tag", 1,
          strcmp(a, b) == 0);
    MEMOBS_TRACK_FREE(blk);

    /* formatting */
    check(strcmp(memobs_fmt_bytes(262130000000ull, a, sizeof a), "262.13 GB") == 0 &&
              strcmp(memobs_format_bytes(b, sizeof b, 262130000000ull), "262.13 GB") == 0,
          "memobs_fmt_bytes(262130000000, buf, len) == memobs_format_bytes(buf, len, ...) == \"262.13 GB\"", 1, 0);
    check(strcmp(memobs_fmt_ns(12300, a, sizeof a), "12.30 us") == 0 &&
              strcmp(memobs_format_ns(b, sizeof b, 12300), "12.30 us") == 0,
          "memobs_fmt_ns(12300, buf, len) == memobs_format_ns(buf, len, 12300) == \"12.30 us\"", 1, 0);

    /* timeline */
    EQ("timeline_enable(4096) == MEMOBS_OK", MEMOBS_OK, timeline_enable(4096));
    memobs_record_xfer(MEMOBS_DIR_H2D, 64, MEMOBS_PHASE_PREFILL);
    memobs_timeline_stats(&st);
    memobs_timeline_get_stats(&st2);
    EQ("memobs_timeline_stats: capacity 4096", 4096, st.capacity);
    EQ("memobs_timeline_get_stats: the same capacity", st.capacity, st2.capacity);
    check(st.recorded >= 1 && st.recorded == st2.recorded, "the two stats hold the same recorded count (>= 1)", st2.recorded,
          st.recorded);
    EQ("memobs_timeline_threads == memobs_timeline_get_threads (rows)", memobs_timeline_get_threads(th2, 4),
       memobs_timeline_threads(th, 4));
    EQ("the first row's kept count agrees", th2[0].kept, th[0].kept);
    f = tmpfile();
    EQ("memobs_write_chrome_trace(f) == MEMOBS_OK", MEMOBS_OK, f ? memobs_write_chrome_trace(f) : -1);
    if (f) {
        size_t n;
        rewind(f);
        n = fread(a, 1, 15, f);
        a[n] = 0;
        check(strcmp(a, "{\"traceEvents\":") == 0, "it wrote a Chrome trace", 1, 0);
        fclose(f);
    }
    EQ("memobs_write_chrome_trace_file(\"/dev/null\") == MEMOBS_OK", MEMOBS_OK,
       memobs_write_chrome_trace_file("/dev/null"));
    EQ("trace_write_limit(UINT64_MAX) reads the default 20 s", 20000000000ull, trace_write_limit(UINT64_MAX));
    EQ("trace_write_limit(5 s) returns 20 s", 20000000000ull, trace_write_limit(5000000000ull));
    EQ("memobs_timeline_get_write_limit() now 5 s", 5000000000ull, memobs_timeline_get_write_limit());
    EQ("memobs_timeline_set_write_limit(20 s) returns 5 s", 5000000000ull, memobs_timeline_set_write_limit(20000000000ull));
    EQ("timeline_enable(0) stops: MEMOBS_OK", MEMOBS_OK, timeline_enable(0));
    memobs_timeline_get_stats(&st);
    EQ("the timeline is off: capacity 0", 0, st.capacity);

    /* sampler */
    EQ("memobs_samples_dropped() == memobs_get_samples_dropped() == 0", memobs_get_samples_dropped(),
       memobs_samples_dropped());
    return failed;
}
