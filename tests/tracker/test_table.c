/* The allocation tracker's table under a sliding working set (issue 40):
   blocks freed in one 64 KiB granule while the next fills cost no table
   resizes once the tables have met every granule, and memory still
   follows what is live: after a fall the tables come back within the
   bound memobs.h gives (16 slots per entry reserved from the capacity
   and 16 per stripe; see memobs__trk_over). Built as C and as C++, and
   under ASan+UBSan and TSan (tests/tracker/test_table.sh).

   Blocks are fake pointers (the tracker never dereferences one) at fixed
   addresses, so the stripes each granule falls on are the same in every
   run and the counts below are exact. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <pthread.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#define TEST_SUITE "table"
#endif

#define FP(x) ((const void *)(uintptr_t)(x))
#define HOST MEMOBS_MEM_HOST

static memobs_summary_t S; /* large: keep it off the stack */
static void snap(void) { memobs_get_summary(&S); }

static uint64_t resizes(void) { return __atomic_load_n(&memobs__g.trk.resizes.v, __ATOMIC_ACQUIRE); }
static uint64_t slots(void) { return __atomic_load_n(&memobs__g.trk.slots.v, __ATOMIC_ACQUIRE); }
static uint64_t reserved(void) { return __atomic_load_n(&memobs__g.trk.reserved.v, __ATOMIC_ACQUIRE); }
static uint64_t nlive(void) { return memobs_get_allocations(NULL, 0); }
/* The documented bound: 16 slots per reserved entry and 16 per stripe. */
static uint64_t bound(void) { return 16 * (reserved() + MEMOBS__TRK_STRIPES); }
/* Slots the stripes' tables really hold, counted stripe by stripe. */
static uint64_t slots_counted(void) {
    uint64_t n = 0;
    unsigned i;
    for (i = 0; i < MEMOBS__TRK_STRIPES; i++) {
        memobs__spin_lock(&memobs__g.trk.stripe[i].lock);
        if (memobs__g.trk.stripe[i].slot) n += memobs__g.trk.stripe[i].mask + 1u;
        memobs__spin_unlock(&memobs__g.trk.stripe[i].lock);
    }
    return n;
}

/* A working set of `live` blocks `step` bytes apart, sliding through a
   pool of `pool` addresses from `base`: each pair frees the oldest block
   and allocates the next address of the pool (bench/bench_track.c's ring). */
typedef struct {
    uintptr_t base, step;
    uint64_t live, pool, next; /* next: addresses handed out so far */
} slide_t;

static uintptr_t slide_addr(const slide_t *s, uint64_t k) { return s->base + (uintptr_t)(k % s->pool) * s->step; }
static void slide_fill(slide_t *s) {
    for (s->next = 0; s->next < s->live; s->next++) MEMOBS_TRACK_ALLOC(FP(slide_addr(s, s->next)), s->step, HOST);
}
static void slide_pairs(slide_t *s, uint64_t n) {
    for (; n > 0; n--, s->next++) {
        MEMOBS_TRACK_FREE(FP(slide_addr(s, s->next - s->live)));
        MEMOBS_TRACK_ALLOC(FP(slide_addr(s, s->next)), s->step, HOST);
    }
}
static void slide_drain(slide_t *s) {
    uint64_t k;
    for (k = s->next - s->live; k < s->next; k++) MEMOBS_TRACK_FREE(FP(slide_addr(s, k)));
}

/* One working set through its pool: warm-up (one lap: every granule met),
   then `laps` laps timed by the resize count. */
static void slide_case(uintptr_t base, uintptr_t step, uint64_t live, uint64_t pool, int laps) {
    slide_t s = {base, step, live, pool, 0};
    uint64_t r0, r1;
    snap();
    r0 = S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.untracked;
    slide_fill(&s);
    slide_pairs(&s, pool);
    r1 = resizes();
    slide_pairs(&s, (uint64_t)laps * pool);
    r1 = resizes() - r1;
    printf("    # %llu blocks %llu bytes apart through %llu addresses: %llu resizes in %d laps after one of "
           "warm-up; %llu slots for %llu reserved entries\n", (unsigned long long)live, (unsigned long long)step,
           (unsigned long long)pool, (unsigned long long)r1, laps, (unsigned long long)slots(),
           (unsigned long long)reserved());
    CHECK_U64(0, r1);
    CHECK_U64(live, nlive());
    CHECK(slots() <= bound());
    CHECK_U64(slots_counted(), slots());
    slide_drain(&s);
    CHECK_U64(0, nlive());
    snap();
    CHECK_U64(r0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.untracked);
}

/* make bench's tracker ring: 1024 live 64-byte blocks from a pool 4x that
   (4 granules); and the measure: 256-byte blocks on 4096 addresses
   (16 granules), 1024 live. */
static void test_sliding_no_resizes(void) {
    slide_case(0x10000000, 64, 1024, 4096, 20);
    slide_case(0x20000000, 256, 1024, 4096, 20);
    slide_case(0x30008000, 256, 100, 4096, 20); /* a small set, granules not aligned to the pool */
}

/* Memory follows what is live: 30000 blocks over many granules (the
   tables large), then all but 100 freed: the tables come back within the
   bound, the 100 left are all found (the cut tables rehashed), and with
   everything freed every stripe keeps at most 2 batches reserved. */
static void test_follows_live(void) {
    const uintptr_t base = 0x40000000;
    const uint64_t n = 30000, keep = 100;
    uint64_t i, big, found = 0;
    size_t k, got;
    static memobs_alloc_info_t a[200];
    for (i = 0; i < n; i++) MEMOBS_TRACK_ALLOC(FP(base + i * 128), 128, HOST);
    big = slots();
    CHECK_U64(n, nlive());
    CHECK(big >= 2 * n); /* at most 1/2 load */
    CHECK(big <= bound());
    for (i = keep; i < n; i++) MEMOBS_TRACK_FREE(FP(base + i * 128));
    printf("    # %llu live: %llu slots; %llu left: %llu slots (bound %llu, %llu reserved)\n", (unsigned long long)n,
           (unsigned long long)big, (unsigned long long)keep, (unsigned long long)slots(), (unsigned long long)bound(),
           (unsigned long long)reserved());
    CHECK(slots() <= bound());
    CHECK_U64(slots_counted(), slots());
    got = memobs_get_allocations(a, 200);
    CHECK_U64(keep, got);
    for (k = 0; k < got && k < 200; k++)
        if ((uintptr_t)a[k].ptr >= base && (uintptr_t)a[k].ptr < base + keep * 128 && a[k].bytes == 128) found++;
    CHECK_U64(keep, found);
    for (i = 0; i < keep; i++) MEMOBS_TRACK_FREE(FP(base + i * 128));
    printf("    # nothing live: %llu slots (bound %llu, %llu reserved)\n", (unsigned long long)slots(),
           (unsigned long long)bound(), (unsigned long long)reserved());
    CHECK_U64(0, nlive());
    CHECK(slots() <= bound());
    CHECK(reserved() <= 2ull * memobs__g.trk.batch * MEMOBS__TRK_STRIPES);
    snap();
    CHECK_U64(0, S.track.frees_unknown);
    CHECK_U64(0, S.mem[HOST].current_bytes);
}

/* A working set that slides through far more granules than the bound
   allows tables for (1024 blocks through 256 MiB): the bound holds after
   every pair, and the tables are cut in passes, not block by block: at
   most 8 resizes per granule the set passes through (7 grows from 16 to
   2048 slots and one cut), where shrinking at 1/8 load took 14. */
static void test_sliding_far(void) {
    slide_t s = {0x50000000, 64, 1024, 4096 * 1024, 0};
    uint64_t r0, over = 0, i, granules;
    slide_fill(&s);
    r0 = resizes();
    for (i = 0; i < 64 * 4096; i++) {
        slide_pairs(&s, 1);
        if (slots() > bound()) over++;
    }
    granules = 64 * 4096 * 64 / 65536;
    printf("    # %llu pairs through %llu granules: %llu resizes; %llu slots, bound %llu\n",
           (unsigned long long)(64 * 4096), (unsigned long long)granules, (unsigned long long)(resizes() - r0),
           (unsigned long long)slots(), (unsigned long long)bound());
    CHECK_U64(0, over);
    CHECK(resizes() - r0 <= 8 * granules);
    CHECK_U64(1024, nlive());
    slide_drain(&s);
    CHECK_U64(0, nlive());
    CHECK(slots() <= bound());
    CHECK_U64(slots_counted(), slots());
}

/* Two threads, each its own working set sliding through its own pool (the
   bench's 2-thread figure): no resizes after the warm-up, the table exact. */
typedef struct {
    slide_t s;
    pthread_barrier_t *bar;
    uint64_t resizes;
} slider_t;

static void *slider(void *p) {
    slider_t *t = (slider_t *)p;
    uint64_t r;
    slide_fill(&t->s);
    slide_pairs(&t->s, t->s.pool);
    pthread_barrier_wait(t->bar);
    r = resizes();
    slide_pairs(&t->s, 10 * t->s.pool);
    t->resizes = resizes() - r;
    pthread_barrier_wait(t->bar);
    return NULL;
}

static void test_sliding_threads(void) {
    pthread_barrier_t bar;
    pthread_t th[2];
    static slider_t t[2];
    int k;
    pthread_barrier_init(&bar, NULL, 2);
    for (k = 0; k < 2; k++) {
        slide_t s = {(uintptr_t)0x60000000 + (uintptr_t)k * 0x100000, 64, 1024, 4096, 0};
        t[k].s = s;
        t[k].bar = &bar;
        pthread_create(&th[k], NULL, slider, &t[k]);
    }
    for (k = 0; k < 2; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&bar);
    printf("    # resizes seen by each thread after the warm-up: %llu, %llu\n", (unsigned long long)t[0].resizes,
           (unsigned long long)t[1].resizes);
    CHECK_U64(0, t[0].resizes + t[1].resizes);
    CHECK_U64(2048, nlive());
    for (k = 0; k < 2; k++) slide_drain(&t[k].s);
    CHECK_U64(0, nlive());
    CHECK(slots() <= bound());
    snap();
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.untracked);
}

int main(void) {
    check__suite = TEST_SUITE;
    memobs_set_enabled(1);
    RUN(test_sliding_no_resizes);
    RUN(test_follows_live);
    RUN(test_sliding_far);
    RUN(test_sliding_threads);
    return CHECK_DONE();
}
