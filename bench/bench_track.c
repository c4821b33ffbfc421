/* bench_track.c - the allocation-tracker figures of `make bench` (see
   bench.h and bench.c). A separate translation unit, as in a program: the
   tracker calls are real calls into the implementation in bench.c.

   Each worker has its own ring of BENCH_TRK_LIVE live blocks; an iteration
   frees the oldest block and allocates a new one in its slot, so the live
   set stays at BENCH_TRK_LIVE per thread. The tracker-only loops take their
   blocks from the ring's own array (4x the live set, handed out in turn, so
   a new block is never one still live), which keeps malloc's cost out of
   the figure; bench_loop_malloc_track uses malloc(64) and free() as well,
   in the order the API asks for: track the block after malloc, its free
   before free(). Every loop ends its iteration with BENCH_BARRIER() and
   starts on a 64-byte line, like BENCH_LOOP. */
#include "memobs.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define BENCH_TRK_POOL (4 * BENCH_TRK_LIVE)

struct bench_ring {
    void *live[BENCH_TRK_LIVE];
    uint64_t pos;  /* pairs made since start-up: the oldest block is in slot pos % BENCH_TRK_LIVE */
    uint64_t next; /* array blocks handed out: the next is next % BENCH_TRK_POOL */
    int use_malloc, track; /* how the ring was filled, so that it is drained the same way */
    int dev;               /* < 0: host blocks; else MEMOBS_MEM_DEVICE blocks of this device */
    char pool[BENCH_TRK_POOL][BENCH_TRK_BYTES] __attribute__((aligned(64)));
} __attribute__((aligned(64)));

static bench_ring_t bench_rings[2];

bench_ring_t *bench_ring(int worker) { return &bench_rings[worker & 1]; }

static void *bench_ring_block(bench_ring_t *r) { return r->pool[r->next++ % BENCH_TRK_POOL]; }

void bench_ring_set_device(bench_ring_t *r, int dev) { r->dev = dev; }

/* A tracked allocation of the ring's kind: host, or device memory of its
   device (the device given, as memobs_cuda.h and the preload give it). */
static void bench_ring_track(const bench_ring_t *r, void *p) {
    if (r->dev < 0) MEMOBS_TRACK_ALLOC(p, BENCH_TRK_BYTES, MEMOBS_MEM_HOST);
    else memobs_track_alloc_full(p, BENCH_TRK_BYTES, MEMOBS_MEM_DEVICE, r->dev, NULL, NULL, -1);
}

void bench_ring_fill(bench_ring_t *r, int use_malloc, int track) {
    int k;
    r->use_malloc = use_malloc;
    r->track = track;
    for (k = 0; k < BENCH_TRK_LIVE; k++) {
        void *p = use_malloc ? malloc(BENCH_TRK_BYTES) : bench_ring_block(r);
        if (track) bench_ring_track(r, p);
        r->live[k] = p;
    }
}

void bench_ring_drain(bench_ring_t *r) {
    int k;
    for (k = 0; k < BENCH_TRK_LIVE; k++) {
        if (r->track) MEMOBS_TRACK_FREE(r->live[k]);
        if (r->use_malloc) free(r->live[k]);
        r->live[k] = NULL;
    }
}

const char *bench_ring_stack_text(const bench_ring_t *r) {
    static memobs_alloc_info_t info[4 * BENCH_TRK_LIVE];
    static char text[16384];
    size_t n = memobs_get_allocations(info, sizeof info / sizeof info[0]), i;
    const char *s = (const char *)r->pool;
    for (i = 0; i < n && i < sizeof info / sizeof info[0]; i++) {
        const char *p = (const char *)info[i].ptr;
        if (info[i].trace == MEMOBS_NO_TRACE || p < s || p >= s + sizeof r->pool) continue;
        return memobs_format_trace(text, sizeof text, info[i].trace) < 0 ? NULL : text;
    }
    return NULL;
}

/* ======================================================================== */
/* Timed loops                                                              */
/* ======================================================================== */

/* arg: a set of live blocks of type T (a worker's ring: bench_fig_t.arg,
   .arg1), as v; slot: its oldest block's, which the body replaces. */
#define BENCH_LIVE_LOOP(name, T, v, body)                                 \
    __attribute__((aligned(64))) void name(uint64_t n, const void *arg) { \
        T *v = (T *)(uintptr_t)arg;                                       \
        uint64_t i;                                                       \
        for (i = 0; i < n; i++) {                                         \
            void **slot = &v->live[v->pos++ % BENCH_TRK_LIVE];            \
            body;                                                         \
            BENCH_BARRIER();                                              \
        }                                                                 \
    }
#define BENCH_RING_LOOP(name, body) BENCH_LIVE_LOOP(name, bench_ring_t, r, body)

BENCH_RING_LOOP(bench_loop_malloc, {
    free(*slot);
    *slot = malloc(BENCH_TRK_BYTES);
})

BENCH_RING_LOOP(bench_loop_track, {
    void *p = bench_ring_block(r);
    MEMOBS_TRACK_FREE(*slot);
    MEMOBS_TRACK_ALLOC(p, BENCH_TRK_BYTES, MEMOBS_MEM_HOST);
    *slot = p;
})

/* Device blocks (the ring's device): the tracker's device path, with the
   snapshot history of that device or without it. */
BENCH_RING_LOOP(bench_loop_track_dev, {
    void *p = bench_ring_block(r);
    MEMOBS_TRACK_FREE(*slot);
    memobs_track_alloc_full(p, BENCH_TRK_BYTES, MEMOBS_MEM_DEVICE, r->dev, NULL, NULL, -1);
    *slot = p;
})

BENCH_RING_LOOP(bench_loop_malloc_track, {
    void *p;
    MEMOBS_TRACK_FREE(*slot);
    free(*slot);
    p = malloc(BENCH_TRK_BYTES);
    MEMOBS_TRACK_ALLOC(p, BENCH_TRK_BYTES, MEMOBS_MEM_HOST);
    *slot = p;
})

BENCH_RING_LOOP(bench_loop_track_tag, {
    void *p = bench_ring_block(r);
    MEMOBS_TRACK_FREE(*slot);
    MEMOBS_TRACK_ALLOC_N(p, BENCH_TRK_BYTES, MEMOBS_MEM_HOST, BENCH_TRK_TAG);
    *slot = p;
})

/* The stack figure's loop, at the bottom of a chain of BENCH_TRK_CHAIN
   calls so that the BENCH_TRK_STACK frames it asks for exist. */
__attribute__((noinline)) static BENCH_RING_LOOP(bench_stack_pairs, {
    void *p = bench_ring_block(r);
    MEMOBS_TRACK_FREE(*slot);
    MEMOBS_TRACK_ALLOC_S(p, BENCH_TRK_BYTES, MEMOBS_MEM_HOST, BENCH_TRK_STACK);
    *slot = p;
})

/* The barrier after the call keeps it out of tail position, so each level
   keeps its frame (no sibling call, no recursion turned into a loop). */
__attribute__((noinline)) static void bench_chain(int d, uint64_t n, const void *arg) {
    if (d > 1) bench_chain(d - 1, n, arg);
    else bench_stack_pairs(n, arg);
    BENCH_BARRIER();
}

void bench_loop_track_stack(uint64_t n, const void *arg) { bench_chain(BENCH_TRK_CHAIN, n, arg); }

/* ======================================================================== */
/* Sliding working set (issue 40)                                           */
/* ======================================================================== */

/* BENCH_TRK_LIVE live blocks BENCH_SLIDE_BYTES apart, sliding through a
   pool of BENCH_SLIDE_POOL addresses (16 granules of 64 KiB): each pair
   frees the oldest block and allocates the next address of the pool, so
   one granule empties while the next fills, all the time. */
struct bench_slide {
    void *live[BENCH_TRK_LIVE];
    uint64_t pos, next;
    int dev; /* < 0: host blocks; else MEMOBS_MEM_DEVICE blocks of this device */
    int use_malloc;
    char pool[BENCH_SLIDE_POOL][BENCH_SLIDE_BYTES] __attribute__((aligned(65536)));
};

static bench_slide_t bench_slides[1];

bench_slide_t *bench_slide(int dev, int use_malloc) {
    bench_slide_t *s = &bench_slides[0];
    s->dev = dev;
    s->use_malloc = use_malloc;
    return s;
}

static void bench_slide_track(const bench_slide_t *s, void *p) {
    if (s->dev < 0) MEMOBS_TRACK_ALLOC(p, BENCH_SLIDE_BYTES, MEMOBS_MEM_HOST);
    else memobs_track_alloc_full(p, BENCH_SLIDE_BYTES, MEMOBS_MEM_DEVICE, s->dev, NULL, NULL, -1);
}

static void *bench_slide_block(bench_slide_t *s) {
    void *p = s->use_malloc ? malloc(BENCH_SLIDE_BYTES) : s->pool[s->next++ % BENCH_SLIDE_POOL];
    if (!s->use_malloc) bench_slide_track(s, p);
    return p;
}

static void bench_slide_drop(bench_slide_t *s, void *p) {
    if (s->use_malloc) free(p);
    else MEMOBS_TRACK_FREE(p);
}

void bench_slide_fill(bench_slide_t *s) {
    int k;
    s->pos = 0;
    for (k = 0; k < BENCH_TRK_LIVE; k++) s->live[k] = bench_slide_block(s);
}

void bench_slide_drain(bench_slide_t *s) {
    int k;
    for (k = 0; k < BENCH_TRK_LIVE; k++) {
        bench_slide_drop(s, s->live[k]);
        s->live[k] = NULL;
    }
}

/* arg: the bench_slide_t. Each loop is one kind of pair, as the
   figures of the ring are. */
#define BENCH_SLIDE_LOOP(name, body) BENCH_LIVE_LOOP(name, bench_slide_t, s, body)

BENCH_SLIDE_LOOP(bench_loop_slide_malloc, {
    free(*slot);
    *slot = malloc(BENCH_SLIDE_BYTES);
})

BENCH_SLIDE_LOOP(bench_loop_slide_host, {
    void *p = s->pool[s->next++ % BENCH_SLIDE_POOL];
    MEMOBS_TRACK_FREE(*slot);
    MEMOBS_TRACK_ALLOC(p, BENCH_SLIDE_BYTES, MEMOBS_MEM_HOST);
    *slot = p;
})

BENCH_SLIDE_LOOP(bench_loop_slide_dev, {
    void *p = s->pool[s->next++ % BENCH_SLIDE_POOL];
    MEMOBS_TRACK_FREE(*slot);
    memobs_track_alloc_full(p, BENCH_SLIDE_BYTES, MEMOBS_MEM_DEVICE, s->dev, NULL, NULL, -1);
    *slot = p;
})
