/* tests/core/hostile/numbers_ab_so.c: the loops of tests/core/hostile/numbers_ab.c,
   built twice as shared objects, once with the branch's starting memobs.h
   and once with the current one (-I picks which), so that one program
   times both side by side (issue 38, item 16: a record's and a tracked
   pair's cost unchanged). Each .so keeps its own memobs (RTLD_LOCAL,
   hidden). Loops as bench/bench.h's: n iterations, bytes = i & 0xff, a
   compiler barrier, 64-byte aligned. */
#define MEMOBS_IMPLEMENTATION
#define MEMOBS_HIDDEN
#include "memobs.h"
#include "bench/bench.h"

#define AB_LIVE 1024
#define AB_POOL (4 * AB_LIVE)
static char ab_pool[AB_POOL][64] __attribute__((aligned(64)));
static void *ab_live[AB_LIVE];
static uint64_t ab_next, ab_pos;

__attribute__((visibility("default"))) void ab_record(uint64_t n, const void *arg);
__attribute__((visibility("default"))) void ab_record_cur(uint64_t n, const void *arg);
__attribute__((visibility("default"))) void ab_counter(uint64_t n, const void *arg);
__attribute__((visibility("default"))) void ab_track(uint64_t n, const void *arg);
__attribute__((visibility("default"))) void ab_track_dev(uint64_t n, const void *arg);
__attribute__((visibility("default"))) void ab_init(void);
__attribute__((visibility("default"))) void ab_fill(int dev);
__attribute__((visibility("default"))) void ab_drain(void);
__attribute__((visibility("default"))) uint64_t ab_h2d_bytes(void);

BENCH_LOOP(ab_record, MEMOBS_RECORD_H2D(bytes, 1))
BENCH_LOOP(ab_record_cur, MEMOBS_RECORD_H2D_CUR(bytes))

static memobs_counter_t ab_c = -1;
BENCH_LOOP(ab_counter, memobs_counter_add(ab_c, bytes))

/* one pair: free the oldest live block, track a new one in its slot */
BENCH_LOOP(ab_track, {
    void **slot = &ab_live[ab_pos++ % AB_LIVE];
    MEMOBS_TRACK_FREE(*slot);
    *slot = ab_pool[ab_next++ % AB_POOL];
    MEMOBS_TRACK_ALLOC(*slot, 64 + bytes, MEMOBS_MEM_HOST);
})
BENCH_LOOP(ab_track_dev, {
    void **slot = &ab_live[ab_pos++ % AB_LIVE];
    MEMOBS_TRACK_FREE(*slot);
    *slot = ab_pool[ab_next++ % AB_POOL];
    memobs_track_alloc_full(*slot, 64 + bytes, MEMOBS_MEM_DEVICE, 1, NULL, NULL, 0);
})

void ab_init(void) {
    ab_c = memobs_counter_register("ab_counter", NULL);
    memobs_track_set_callstack(0);
}

void ab_fill(int dev) {
    int i;
    for (i = 0; i < AB_LIVE; i++) {
        ab_live[i] = ab_pool[ab_next++ % AB_POOL];
        if (dev) memobs_track_alloc_full(ab_live[i], 64, MEMOBS_MEM_DEVICE, 1, NULL, NULL, 0);
        else MEMOBS_TRACK_ALLOC(ab_live[i], 64, MEMOBS_MEM_HOST);
    }
}

void ab_drain(void) {
    int i;
    for (i = 0; i < AB_LIVE; i++) MEMOBS_TRACK_FREE(ab_live[i]);
}

uint64_t ab_h2d_bytes(void) {
    memobs_summary_t s;
    memobs_get_summary(&s);
    return s.total.h2d.bytes;
}
