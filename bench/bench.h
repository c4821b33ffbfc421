/* bench.h - shared by the translation units of `make bench` (see mk/bench.mk).

   Every timed figure is a loop function made by BENCH_LOOP, so all variants
   have the same shape: n iterations, `bytes` = i & 0xff (a value the
   compiler cannot fold to a constant), the body, then an empty asm with a
   "memory" clobber. The barrier emits no instruction; it makes the compiler
   re-read and re-write memory every iteration, as a record site in real
   code does, so no variant is hoisted, merged or vectorised.

   Loop functions start on a 64-byte line, so a figure does not move with
   the code around it: unaligned, adding functions to bench.c moved
   bench_loop_record's loop within its line and its figure from 0.56 to
   0.85 ns/record (AMD EPYC, gcc 12), with identical instructions. */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>

/* One timed loop: n iterations; arg is the figure's own data, if any. */
typedef void (*bench_loop_fn)(uint64_t n, const void *arg);

#define BENCH_BARRIER() __asm__ volatile("" ::: "memory")

#define BENCH_LOOP(name, body)                                                      \
    __attribute__((noinline, aligned(64))) void name(uint64_t n, const void *arg) { \
        uint64_t i;                                                                 \
        (void)arg;                                                                  \
        for (i = 0; i < n; i++) {                                                   \
            uint64_t bytes = i & 0xff;                                              \
            body;                                                                   \
            BENCH_BARRIER();                                                        \
        }                                                                           \
    }

/* bench_disabled.c, built with -DMEMOBS_DISABLE. */
void bench_loop_ct_disabled(uint64_t n, const void *arg);

/* bench_track.c: the allocation-tracker figures. Each thread works on its
   own ring of BENCH_TRK_LIVE live blocks of BENCH_TRK_BYTES: an iteration
   is one pair, freeing the oldest block and allocating a new one in its
   slot. bench.c fills the rings before a run and drains them after it, on
   the main thread, outside the timing. */
#define BENCH_TRK_LIVE 1024 /* a power of two */
#define BENCH_TRK_BYTES 64
#define BENCH_TRK_STACK 16  /* C frames the stack figure captures */
#define BENCH_TRK_CHAIN 20  /* functions between the worker and the stack figure's loop */
#define BENCH_TRK_TAG "bench_tag"

typedef struct bench_ring bench_ring_t;
/* The ring of worker 0 or 1. */
bench_ring_t *bench_ring(int worker);
/* Fills with BENCH_TRK_LIVE blocks: from malloc() or from the ring's own
   pre-allocated array, and tracked (MEMOBS_TRACK_ALLOC) or not, as the
   loop that will run on it makes them: bench_loop_malloc malloc()s,
   bench_loop_malloc_track malloc()s and tracks, the others track blocks
   of the array. */
void bench_ring_fill(bench_ring_t *r, int use_malloc, int track);
/* dev < 0 (the start): the ring's blocks are host memory; else device
   memory of device dev, for the fill, the drain and bench_loop_track_dev. */
void bench_ring_set_device(bench_ring_t *r, int dev);
/* Frees (MEMOBS_TRACK_FREE if filled tracked, free() if from malloc) what
   the ring holds. */
void bench_ring_drain(bench_ring_t *r);
/* memobs_format_trace() of the first of the ring's live blocks that has a
   trace, in a static buffer; NULL if none has. */
const char *bench_ring_stack_text(const bench_ring_t *r);

void bench_loop_malloc(uint64_t n, const void *arg);       /* free + malloc(64) */
void bench_loop_track(uint64_t n, const void *arg);        /* MEMOBS_TRACK_FREE + MEMOBS_TRACK_ALLOC */
void bench_loop_malloc_track(uint64_t n, const void *arg); /* both of the above */
void bench_loop_track_dev(uint64_t n, const void *arg);    /* the same on MEMOBS_MEM_DEVICE blocks of the
                                                              ring's device */
void bench_loop_track_tag(uint64_t n, const void *arg);    /* ... + MEMOBS_TRACK_ALLOC_N */
void bench_loop_track_stack(uint64_t n, const void *arg);  /* ... + MEMOBS_TRACK_ALLOC_S(..., 16),
                                                              BENCH_TRK_CHAIN calls deep (with
                                                              frame pointers: mk/bench.mk builds
                                                              bench_track.c -fno-omit-frame-pointer,
                                                              so the fp unwinder can walk it) */

/* bench_track.c: the sliding working set (issue 40), one thread.
   BENCH_TRK_LIVE live blocks BENCH_SLIDE_BYTES apart slide through
   BENCH_SLIDE_POOL addresses (16 granules of 64 KiB of the tracker's
   table): a pair frees the oldest and allocates the next address, as
   bench_loop_track does on a pool 4x the live set. */
#define BENCH_SLIDE_BYTES 256
#define BENCH_SLIDE_POOL 4096
typedef struct bench_slide bench_slide_t;
/* The one slide, set up for host blocks (dev < 0) or device blocks of
   device dev, tracked blocks of its pool or malloc()ed ones, untracked. */
bench_slide_t *bench_slide(int dev, int use_malloc);
void bench_slide_fill(bench_slide_t *s);
void bench_slide_drain(bench_slide_t *s);
/* n pairs; arg: the slide */
void bench_loop_slide_malloc(uint64_t n, const void *arg); /* free + malloc(BENCH_SLIDE_BYTES) */
void bench_loop_slide_host(uint64_t n, const void *arg);   /* MEMOBS_TRACK_FREE + MEMOBS_TRACK_ALLOC */
void bench_loop_slide_dev(uint64_t n, const void *arg);    /* the same, MEMOBS_MEM_DEVICE of the slide's device */

#endif /* BENCH_H */
