/* MEMOBS_DISABLE, project-wide: macros evaluate nothing, the functions
   still link and the implementation stays off. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

/* Compared by size with empty() in tests/core/test_compile.sh: no code. */
void all_macros(int *p);
void empty(int *p);
void all_macros(int *p) {
    MEMOBS_RECORD_H2D((*p)++, (*p)++);
    MEMOBS_RECORD_D2H((*p)++, 1);
    MEMOBS_RECORD_D2D((*p)++, 0);
    MEMOBS_RECORD_H2D_CUR((*p)++);
    MEMOBS_RECORD_D2H_CUR((*p)++);
    MEMOBS_RECORD_D2D_CUR((*p)++);
    MEMOBS_RECORD_XFER((*p)++, (*p)++, (*p)++);
    MEMOBS_SET_PHASE(MEMOBS_PHASE_DECODE);
    MEMOBS_COUNTER_ADD("never", (*p)++);
    MEMOBS_TTFT_START();
    MEMOBS_TTFT_STOP();
    MEMOBS_TPOT_STEP();
    MEMOBS_TPOT_STOP();
    MEMOBS_REQUEST_BEGIN((*p)++);
    MEMOBS_REQUEST_TOKEN((*p)++);
    MEMOBS_REQUEST_END((*p)++);
    MEMOBS_TRACK_ALLOC(p + (*p)++, (*p)++, MEMOBS_MEM_DEVICE);
    MEMOBS_TRACK_ALLOC_N(p + (*p)++, (*p)++, MEMOBS_MEM_HOST, "never");
    MEMOBS_TRACK_ALLOC_S(p + (*p)++, (*p)++, MEMOBS_MEM_PINNED, (*p)++);
    MEMOBS_TRACK_ALLOC_NS(p + (*p)++, (*p)++, MEMOBS_MEM_MANAGED, "never", (*p)++);
    MEMOBS_TRACK_FREE(p + (*p)++);
    MEMOBS_REGION_BEGIN((*p)++ ? "never" : "never");
    MEMOBS_MARK((*p)++ ? "never" : "never");
    MEMOBS_REGION_END();
}
void empty(int *p) { (void)p; }

int main(void) {
    memobs_summary_t s;
    memobs_timeline_stats_t tl;
    int x = 0;
    all_macros(&x);
    memobs_set_enabled(1); /* cannot switch a compiled-out build on */
    memobs_record_xfer(MEMOBS_DIR_H2D, 5, MEMOBS_PHASE_DECODE);
    memobs_request_begin(1);
    memobs_track_alloc_full(&x, 8, MEMOBS_MEM_DEVICE, 0, NULL, "t", 0);
    memobs_get_summary(&s);
    if (memobs_timeline_start(16) != MEMOBS_OK) return printf("    # memobs_timeline_start failed\n"), 1;
    memobs_record_xfer(MEMOBS_DIR_H2D, 5, MEMOBS_PHASE_DECODE);
    memobs_timeline_get_stats(&tl);
    if (tl.capacity || tl.recorded) return printf("    # the timeline was switched on\n"), 1;
    if (x != 0) return printf("    # macro arguments were evaluated (%d increments)\n", x), 1;
    if (memobs_get_enabled()) return printf("    # enabled after memobs_set_enabled(1)\n"), 1;
    if (s.total.h2d.bytes || s.requests_begun || s.tracking || s.mem[0].allocs) return printf("    # something was recorded\n"), 1;
    memobs_region_begin("fn");
    memobs_mark("fn");
    if (memobs_region_depth() != 0) return printf("    # a region was kept\n"), 1;
    {
        memobs_torch_history_t h;
        FILE *f = tmpfile();
        long size;
        if (memobs_torch_history_start(0) != MEMOBS_OK || memobs_torch_history_start((uint64_t)1 << 40) != MEMOBS_OK)
            return printf("    # memobs_torch_history_start did not return MEMOBS_OK\n"), 1;
        memobs_track_alloc_full(&x, 8, MEMOBS_MEM_DEVICE, 0, NULL, "t", 0);
        if (memobs_get_torch_history(0, &h) != MEMOBS_OK || h.recording)
            return printf("    # the snapshot history was switched on\n"), 1;
        if (memobs_torch_history_stop() != MEMOBS_OK) return printf("    # memobs_torch_history_stop failed\n"), 1;
        if (!f || memobs_write_torch_snapshot(f) != MEMOBS_OK) return printf("    # torch snapshot not written\n"), 1;
        size = ftell(f);
        fclose(f);
        /* PROTO, {"segments": [], "device_traces": [[]], "memobs": {..., "history": "off", ...}}, STOP: a few
           hundred bytes */
        if (size < 20 || size > 500) return printf("    # torch snapshot of %ld bytes\n", size), 1;
        if (memobs_get_torch_history(0, &h) != MEMOBS_OK || h.recorded) return printf("    # snapshot history recorded\n"), 1;
    }
    return 0;
}
