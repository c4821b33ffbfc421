/* bench.c - `make bench`: what a memobs record costs, enabled and disabled,
   in an executable and in a dlopen()ed .so, side by side with the baselines
   it competes with, in one run. Prints a table, then the targets (reported,
   never asserted), then whether the summary totals equal the records made,
   then the time one Prometheus exposition takes, then a host sample with
   and without the container's reads.

   Method: every figure is a BENCH_LOOP (bench.h) of BENCH_ITERS iterations
   (default 20M), timed with memobs_now_ns() (CLOCK_MONOTONIC) and run by
   two worker threads pinned to the first two allowed cpus: 1-thread figures
   on the first, 2-thread figures on both at once (each its own loop,
   released by one barrier, timed from the first start to the last end).
   The figures are run in rounds, one run of each per round, so that a busy
   moment on a shared machine spoils one run of every figure rather than
   every run of one; round 0 warms up, and the best of BENCH_REPS rounds
   (default 7) is kept. A 2-thread run in which a thread was off its cpu
   (other processes) is not counted: the other thread, running alone,
   would make a contended figure look better than it is.

   The allocation tracker (bench_track.c) is timed the same way, in the same
   rounds: a figure is an alloc+free pair on a ring of BENCH_TRK_LIVE live
   blocks per thread, BENCH_ITERS / BENCH_TRK_DIV pairs per run
   (BENCH_ITERS / BENCH_TRK_STACK_DIV with a C stack from backtrace(),
   BENCH_ITERS / BENCH_TRK_FP_DIV from frame pointers). The main thread fills
   the rings before each run and drains them after it, outside the timing,
   and checks the tracker's live count and current bytes both times. */
#define _GNU_SOURCE
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
#include "bench.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BENCH_CFLAGS_STR
#define BENCH_CFLAGS_STR "?"
#endif

/* Two threads on one line cost tens of ns per op: fewer iterations keep the
   run short without hurting the measurement. */
#define BENCH_CONTENDED_DIV 8
/* If the scaling control (plain adds, a line per thread) did not reach this
   2T/1T ratio, other processes were running: the 2-thread figures and the
   1-thread ones they are compared with get extra rounds, up to this many. */
#define BENCH_QUIET_SCALING 1.9
#define BENCH_EXTRA_ROUNDS 10
/* A tracker pair costs tens of ns (malloc's, the tracker's), one with a C
   stack about 2 us: fewer iterations for both, each run 50-200 ms. Tracked
   pairs on 2 threads contend (shared lines): BENCH_CONTENDED_DIV fewer. */
#define BENCH_TRK_DIV 10
#define BENCH_TRK_STACK_DIV 500
#define BENCH_TRK_FP_DIV 50 /* a stack from frame pointers: about 10x cheaper */
/* A record with the timeline on reads the clock (10-30 ns) and writes its
   thread's chunk: fewer iterations; the events the timeline holds. Each
   run starts a timeline and fills it from the main thread, outside the
   timing, so that the timed records find it full and wrapping (the steady
   state: every chunk a worker takes is the oldest finished one). */
#define BENCH_TL_DIV 10
#define BENCH_TL_EVENTS 65536
/* Counted runs kept per figure, for its median (the first ones). */
#define BENCH_MAX_RUNS 64
/* Mismatches printed before the rest are only counted. */
#define BENCH_TRK_MAX_PRINTED 5

/* ======================================================================== */
/* Timed loops                                                              */
/* ======================================================================== */

/* Baseline targets, one cache line each: the plain add's is per thread, so
   its 2-thread run is the machine's scaling control (nothing shared). */
typedef struct { uint64_t v; char pad[64 - sizeof(uint64_t)]; } bench_line_t;
static __thread bench_line_t bench_plain __attribute__((aligned(64)));
static bench_line_t bench_atomic __attribute__((aligned(64)));

/* A function of a dlopen()ed .so, called once per iteration. */
typedef struct { void (*fn)(uint64_t bytes); } bench_call_t;

BENCH_LOOP(bench_loop_plain_add, bench_plain.v += bytes)
BENCH_LOOP(bench_loop_atomic_add, __atomic_fetch_add(&bench_atomic.v, bytes, __ATOMIC_RELAXED))
BENCH_LOOP(bench_loop_record, MEMOBS_RECORD_H2D(bytes, 1))
BENCH_LOOP(bench_loop_record_cur, MEMOBS_RECORD_H2D_CUR(bytes))
BENCH_LOOP(bench_loop_counter_add, memobs_counter_add(*(const memobs_counter_t *)arg, bytes))
BENCH_LOOP(bench_loop_call, ((const bench_call_t *)arg)->fn(bytes))
BENCH_LOOP(bench_loop_region, (void)bytes; MEMOBS_REGION_BEGIN("bench_region"); MEMOBS_REGION_END())
/* The clocks: the timeline's (memobs_ticks: the TSC where the kernel
   vouches for it) and CLOCK_MONOTONIC (memobs_now_ns); a sink keeps the
   reads. */
static volatile uint64_t bench_sink;
BENCH_LOOP(bench_loop_ticks, bench_sink = memobs_ticks() + bytes)
BENCH_LOOP(bench_loop_now, bench_sink = memobs_now_ns() + bytes)

/* A record over a clock read, timed in pairs of blocks on each thread:
   BENCH_PAIR_BLOCK clock reads, then as many records, each block timed
   with memobs_ticks(). Both halves of a pair see the same moment of the
   machine, so a busy neighbour spoils both alike: the median difference
   holds where the figures' best and median runs do not. n records in all
   (a multiple of the block), each block's difference per op in ticks. */
#define BENCH_PAIR_BLOCK 2048 /* a multiple of 256: the same bytes as one loop of n */
#define BENCH_PAIR_MAX 8192
typedef struct { double d[BENCH_PAIR_MAX]; int n; } bench_pairs_t;
static bench_pairs_t bench_pairs[3]; /* 1 thread; 2 threads: each its own */
static __attribute__((noinline)) void bench_loop_pairs(uint64_t n, const void *arg) {
    bench_pairs_t *p = (bench_pairs_t *)(uintptr_t)arg;
    uint64_t done;
    for (done = 0; done + BENCH_PAIR_BLOCK <= n; done += BENCH_PAIR_BLOCK) {
        uint64_t t0 = memobs_ticks(), t1, t2;
        bench_loop_ticks(BENCH_PAIR_BLOCK, NULL);
        t1 = memobs_ticks();
        bench_loop_record(BENCH_PAIR_BLOCK, NULL);
        t2 = memobs_ticks();
        if (p->n < BENCH_PAIR_MAX) p->d[p->n++] = ((double)(t2 - t1) - (double)(t1 - t0)) / BENCH_PAIR_BLOCK;
    }
}

/* ======================================================================== */
/* State                                                                    */
/* ======================================================================== */

/* Records one memobs instance (the executable's, or one .so's) should hold. */
typedef struct { uint64_t count, bytes; } bench_expect_t;

/* Allocation-tracker figures: what fills a ring, what the loop does. */
typedef enum {
    TRK_NONE,        /* not a tracker figure */
    TRK_MALLOC,      /* malloc + free, no memobs */
    TRK_TRACK,       /* TRACK_ALLOC + TRACK_FREE on blocks of an array */
    TRK_MALLOC_TRACK, /* malloc + TRACK_ALLOC, TRACK_FREE + free */
    TRK_TAG,         /* TRACK_ALLOC_N */
    TRK_STACK,       /* TRACK_ALLOC_S(..., BENCH_TRK_STACK) */
    TRK_OFF,         /* TRK_TRACK with memobs_set_enabled(0) */
    TRK_STACK_FP,    /* TRK_STACK with memobs_track_set_unwinder(MEMOBS_UNWIND_FP) */
    TRK_DEV,         /* TRK_TRACK on MEMOBS_MEM_DEVICE blocks of device 0: the snapshot history on (started) */
    TRK_DEV_NOHIST   /* the same on device 1, the history off: the default */
} bench_trk_t;

/* The device of a device figure's blocks; -1 for host blocks. */
#define BENCH_TRK_DEV(trk) ((trk) == TRK_DEV ? 0 : (trk) == TRK_DEV_NOHIST ? 1 : -1)

typedef struct {
    bench_loop_fn fn; /* NULL: not run (a .so that did not load) */
    const void *arg;
    const void *arg1; /* worker 1's arg; NULL: arg */
    bench_trk_t trk;  /* main fills the rings before a run, drains them after */
    uint64_t n;
    int nthreads;
    void (*before)(void), (*after)(void); /* on the first worker, outside the timing */
    bench_expect_t *expect;               /* where its records land; NULL: none */
    double ns;                            /* best run: wall ns / n, i.e. per op per thread */
    double ns_off;                        /* 2 threads: best of the runs not counted (see bench_rep) */
    int uncounted;                        /* ns is ns_off: no run was counted */
    int timeline;                         /* the timeline on during its runs */
    double run[BENCH_MAX_RUNS];           /* counted runs' ns, in order; nrun of them */
    int nrun;
} bench_fig_t;

enum {
    F_PLAIN, F_PLAIN2, F_ATOMIC, F_ATOMIC2,
    F_REC, F_REC2, F_CUR, F_COUNTER, F_RT_OFF, F_CT_OFF,
    F_SO, /* then plain, record for each .so */
    /* The tracker's last, so that the figures before them run in the order
       they always did. */
    F_T_MALLOC = F_SO + 2 * 3, F_T_MALLOC2, F_T_TRACK, F_T_TRACK2, F_T_MTRACK, F_T_MTRACK2,
    F_T_TAG, F_T_TAG2, F_T_STACK, F_T_STACK2, F_T_OFF, F_T_OFF2,
    F_TL, F_TL2, /* MEMOBS_RECORD_H2D with the timeline on */
    F_REG_NT, F_REG, F_REG2, F_REG_TL, /* region begin+end: timing off, on, on 2 threads, timeline on */
    F_TICKS, F_NOW, /* clock reads: memobs_ticks(), memobs_now_ns() */
    F_T_FP, F_T_FP2, /* the stack figure with frame pointers (last: the others run in their old order) */
    F_T_DEV, F_T_DEV2, F_T_DEVNH, F_T_DEVNH2, /* device blocks: snapshot history on, off (the default) */
    F_TICKS2,        /* memobs_ticks() on 2 threads: the timeline's 2-thread baseline */
    F_PAIR, F_PAIR2, /* bench_loop_pairs, timeline on: only its pairs are reported */
    F_BOUND,         /* MEMOBS_RECORD_H2D on a thread bound to a request (memobs_request_enter) */
    F_COUNT
};

typedef struct {
    const char *file;  /* found through the executable's RUNPATH ($ORIGIN) */
    const char *label; /* its bench_so_label: how it was built */
    void *h;
    bench_call_t record, plain;
    void (*get_summary)(memobs_summary_t *out);
    bench_expect_t prefill;
} bench_so_t;

/* memobs__on is aligned to 64 but not padded, so the next object in .data
   (this one, here) can share its line; the workers write this struct, so it
   is aligned too, to start on a line of its own. */
static struct {
    uint64_t iters;
    int reps, extra_rounds;
    int cpu[2], ncpu; /* pinning targets; ncpu < 2: workers unpinned */
    memobs_counter_t counter;
    bench_expect_t prefill, decode, counter_sum; /* the executable's memobs */
    bench_so_t so[3];
    bench_fig_t fig[F_COUNT];
    /* Tracker: pairs per run; allocations tracked (each freed); checks. */
    uint64_t trk_iters, trk_iters2, trk_stack_iters, trk_fp_iters, trk_allocs, trk_dev_allocs;
    int trk_checks, trk_bad;
    /* The stack figures' stacks, read once: frames captured (-1 unknown);
       the frame-pointer one marked so, not cut, and the same frames as
       backtrace()'s (1 yes, 0 no, -1 unknown). */
    int trk_depth, trk_fp_depth, trk_fp_same;
    char trk_bt_text[16384];
    /* Workers: main posts a figure, both pass `start`, run, pass `done`. */
    pthread_t th[2];
    pthread_barrier_t start, done;
    const bench_fig_t *job; /* NULL: quit */
    uint64_t t0[2], t1[2];
    uint64_t c0[2], c1[2]; /* each worker's cpu time (CLOCK_THREAD_CPUTIME_ID) around its loop */
    int off_cpu;           /* 2-thread runs not counted: a thread was off its cpu */
    int uncounted_only;    /* figures that had no counted run */
} B __attribute__((aligned(64))) = {
    .so = {{.file = "libmemobs_bench_default.so"}, {.file = "libmemobs_bench_gnu2.so"},
           {.file = "libmemobs_bench_ie.so"}}};

/* ======================================================================== */
/* Timing                                                                   */
/* ======================================================================== */

static uint64_t bench_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *bench_worker(void *p) {
    int id = (int)(intptr_t)p;
    if (B.ncpu >= 2) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(B.cpu[id], &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    for (;;) {
        const bench_fig_t *f;
        pthread_barrier_wait(&B.start);
        if (!(f = B.job)) return NULL;
        if (id < f->nthreads) {
            if (id == 0 && f->before) f->before();
            B.c0[id] = bench_cpu_ns();
            B.t0[id] = memobs_now_ns();
            f->fn(f->n, id && f->arg1 ? f->arg1 : f->arg);
            B.t1[id] = memobs_now_ns();
            B.c1[id] = bench_cpu_ns();
            if (id == 0 && f->after) f->after();
        }
        pthread_barrier_wait(&B.done);
    }
}

/* sum of (i & 0xff) for i < n: the bytes one loop call records. */
static uint64_t bench_loop_bytes(uint64_t n) {
    uint64_t r = n % 256;
    return n / 256 * (255 * 256 / 2) + (r ? r * (r - 1) / 2 : 0);
}

/* Whether both workers of a 2-thread run started together and stayed on
   their cpus (cpu time >= 90% of wall time): a thread that another process
   pushed off its cpu lets the other run alone, which makes a figure of
   threads that contend look better than it is, so such a run is not
   counted. (One thread finishing first is normal: contended lines are not
   shared fairly.) */
static int bench_both_on_cpu(uint64_t start, uint64_t end) {
    uint64_t skew = B.t0[0] > B.t0[1] ? B.t0[0] - B.t0[1] : B.t0[1] - B.t0[0];
    int id;
    if (skew > (end - start) / 10) return 0;
    for (id = 0; id < 2; id++) {
        uint64_t wall = B.t1[id] - B.t0[id];
        if (B.c1[id] - B.c0[id] < wall - wall / 10) return 0;
    }
    return 1;
}

static void bench_trk_prep(const bench_fig_t *f);
static void bench_trk_post(const bench_fig_t *f);

/* The one timing helper: one run of figure f on its worker(s); keeps the
   best wall time unless this is a warm-up, and books the records made. */
static void bench_rep(bench_fig_t *f, int warmup) {
    uint64_t start, end;
    double ns;
    if (!f->fn) return;
    if (f->trk) bench_trk_prep(f);
    if (f->timeline) { /* here, so that no worker records before it; filled: the steady state */
        memobs_timeline_start(BENCH_TL_EVENTS);
        bench_loop_record(BENCH_TL_EVENTS, NULL);
        B.prefill.count += BENCH_TL_EVENTS;
        B.prefill.bytes += bench_loop_bytes(BENCH_TL_EVENTS);
    }
    B.job = f;
    pthread_barrier_wait(&B.start);
    pthread_barrier_wait(&B.done);
    if (f->trk) bench_trk_post(f);
    if (f->timeline) memobs_timeline_stop();
    start = B.t0[0];
    end = B.t1[0];
    if (f->nthreads == 2) {
        if (B.t0[1] < start) start = B.t0[1];
        if (B.t1[1] > end) end = B.t1[1];
    }
    ns = (double)(end - start) / (double)f->n;
    if (!warmup && f->nthreads == 2 && !bench_both_on_cpu(start, end)) {
        B.off_cpu++;
        if (f->ns_off == 0 || ns < f->ns_off) f->ns_off = ns;
    } else if (!warmup) {
        if (f->ns == 0 || ns < f->ns) f->ns = ns;
        if (f->nrun < BENCH_MAX_RUNS) f->run[f->nrun++] = ns;
    }
    if (f->expect) {
        f->expect->count += (uint64_t)f->nthreads * f->n;
        f->expect->bytes += (uint64_t)f->nthreads * bench_loop_bytes(f->n);
    }
}

static void bench_workers_start(void) {
    intptr_t i;
    pthread_barrier_init(&B.start, NULL, 3);
    pthread_barrier_init(&B.done, NULL, 3);
    for (i = 0; i < 2; i++) pthread_create(&B.th[i], NULL, bench_worker, (void *)i);
}

static void bench_workers_stop(void) {
    B.job = NULL;
    pthread_barrier_wait(&B.start);
    pthread_join(B.th[0], NULL);
    pthread_join(B.th[1], NULL);
}

/* Throughput of 2 threads over 1: (2 ops per ns2) / (1 op per ns1). */
static double bench_scaling(int one, int two) { return 2.0 * B.fig[one].ns / B.fig[two].ns; }

static int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of a figure's counted runs (the upper one of an even count);
   its best when it has none. */
static double bench_median_of(const bench_fig_t *f) {
    double v[BENCH_MAX_RUNS];
    if (f->nrun == 0) return f->ns;
    memcpy(v, f->run, (size_t)f->nrun * sizeof v[0]);
    qsort(v, (size_t)f->nrun, sizeof v[0], bench_cmp_double);
    return v[f->nrun / 2];
}
static double bench_median(int fig) { return bench_median_of(&B.fig[fig]); }

/* bench_scaling of the medians. */
static double bench_scaling_med(int one, int two) { return 2.0 * bench_median(one) / bench_median(two); }

/* ======================================================================== */
/* Allocation tracker: rings filled and checked around each run             */
/* ======================================================================== */

static const char *const bench_trk_name[] = {"", "malloc + free", "TRACK_ALLOC + TRACK_FREE",
                                             "malloc + free + track", "TRACK_ALLOC_N", "TRACK_ALLOC_S",
                                             "runtime-disabled", "TRACK_ALLOC_S, frame pointers",
                                             "device, history on", "device, history off"};

/* What the tracker holds now against what it should: live blocks (summary
   and table) and current bytes, of the figure's kind of memory. */
static void bench_trk_check(const bench_fig_t *f, const char *when, uint64_t live) {
    static memobs_summary_t s;
    const memobs_mem_stats_t *m = &s.mem[BENCH_TRK_DEV(f->trk) < 0 ? MEMOBS_MEM_HOST : MEMOBS_MEM_DEVICE];
    size_t table;
    memobs_get_summary(&s);
    table = memobs_get_allocations(NULL, 0);
    B.trk_checks++;
    if (m->live == live && m->current_bytes == live * BENCH_TRK_BYTES && table == live) return;
    if (B.trk_bad++ < BENCH_TRK_MAX_PRINTED)
        printf("  MISMATCH tracker, %s, %d thread%s, %s: live %llu, table %llu, current bytes %llu; expected %llu, "
               "%llu, %llu\n", bench_trk_name[f->trk], f->nthreads, f->nthreads == 1 ? "" : "s", when,
               (unsigned long long)m->live, (unsigned long long)table, (unsigned long long)m->current_bytes,
               (unsigned long long)live, (unsigned long long)live, (unsigned long long)(live * BENCH_TRK_BYTES));
}

/* Frames of a trace's text: its "#N ..." lines. */
static int bench_frames(const char *text) {
    int n = 0;
    for (; text && (text = strstr(text, "\n#")) != NULL; text++) n++;
    return n;
}

/* The frame-pointer figure's stack against the backtrace() one's: the
   same frames (the text from the first "#0" on), under a heading, not cut. */
static void bench_fp_stack(const char *fp) {
    const char *a = strstr(B.trk_bt_text, "\n#0 "), *b = fp ? strstr(fp, "\n#0 ") : NULL;
    B.trk_fp_depth = bench_frames(fp);
    B.trk_fp_same = a && b && strcmp(a, b) == 0 && strncmp(fp, "\nC stack (frame pointers)\n#0 ", 29) == 0 &&
                    !strstr(fp, "cut short");
}

static void bench_trk_prep(const bench_fig_t *f) {
    int k, use_malloc = f->trk == TRK_MALLOC || f->trk == TRK_MALLOC_TRACK;
    if (f->trk == TRK_OFF) memobs_set_enabled(0); /* here, so that no worker runs a pair before it */
    if (f->trk == TRK_STACK_FP) (void)memobs_track_set_unwinder(MEMOBS_UNWIND_FP);
    if (f->trk == TRK_DEV) (void)memobs_torch_history_start(0); /* as a program that wants the snapshot */
    for (k = 0; k < f->nthreads; k++) {
        bench_ring_set_device(bench_ring(k), BENCH_TRK_DEV(f->trk));
        bench_ring_fill(bench_ring(k), use_malloc, f->trk != TRK_MALLOC);
    }
}

static void bench_trk_post(const bench_fig_t *f) {
    int k, tracked = f->trk != TRK_MALLOC && f->trk != TRK_OFF;
    bench_trk_check(f, "after the loop", tracked ? (uint64_t)f->nthreads * BENCH_TRK_LIVE : 0);
    if (f->trk == TRK_STACK && B.trk_depth < 0) {
        const char *t = bench_ring_stack_text(bench_ring(0));
        B.trk_depth = t ? bench_frames(t) : -1;
        snprintf(B.trk_bt_text, sizeof B.trk_bt_text, "%s", t ? t : "");
    }
    if (f->trk == TRK_STACK_FP && B.trk_fp_depth < 0) bench_fp_stack(bench_ring_stack_text(bench_ring(0)));
    for (k = 0; k < f->nthreads; k++) bench_ring_drain(bench_ring(k));
    bench_trk_check(f, "after the drain", 0);
    if (f->trk == TRK_OFF) memobs_set_enabled(1);
    if (f->trk == TRK_STACK_FP) (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    if (f->trk == TRK_DEV) (void)memobs_torch_history_stop();
    if (tracked && BENCH_TRK_DEV(f->trk) >= 0) B.trk_dev_allocs += (uint64_t)f->nthreads * (BENCH_TRK_LIVE + f->n);
    else if (tracked) B.trk_allocs += (uint64_t)f->nthreads * (BENCH_TRK_LIVE + f->n);
}

/* ======================================================================== */
/* Set-up                                                                   */
/* ======================================================================== */

static void bench_phase_decode(void) { memobs_set_phase(MEMOBS_PHASE_DECODE); }
static void bench_phase_none(void) { memobs_set_phase(MEMOBS_PHASE_NONE); }
static void bench_memobs_off(void) { memobs_set_enabled(0); }
/* The bound record's request: begun and entered on the worker, left and
   ended after (its ledger gets the run's bytes at the leave). */
#define BENCH_REQ 4242u
static void bench_bind(void) {
    memobs_request_begin(BENCH_REQ);
    memobs_request_enter(BENCH_REQ);
}
static void bench_unbind(void) {
    memobs_request_leave();
    memobs_request_end(BENCH_REQ);
}
static void bench_memobs_on(void) { memobs_set_enabled(1); }
static void bench_region_timing_off(void) { (void)memobs_region_set_timing(0); }
static void bench_region_timing_on(void) { (void)memobs_region_set_timing(1); }

static void bench_fig(int i, bench_loop_fn fn, const void *arg, int nthreads, bench_expect_t *expect) {
    bench_fig_t *f = &B.fig[i];
    f->fn = fn;
    f->arg = arg;
    f->n = B.iters;
    f->nthreads = nthreads;
    f->expect = expect;
}

/* A tracker figure on 1 and 2 threads: figures i and i + 1; n2: pairs per
   run on 2 threads. */
static void bench_trk_figs(int i, bench_loop_fn fn, bench_trk_t trk, uint64_t n, uint64_t n2) {
    int t;
    for (t = 0; t < 2; t++) {
        bench_fig(i + t, fn, bench_ring(0), t + 1, NULL);
        B.fig[i + t].arg1 = bench_ring(1);
        B.fig[i + t].trk = trk;
        B.fig[i + t].n = t ? n2 : n;
    }
}

static void bench_figs_init(void) {
    int k;
    bench_fig(F_PLAIN, bench_loop_plain_add, NULL, 1, NULL);
    bench_fig(F_PLAIN2, bench_loop_plain_add, NULL, 2, NULL);
    bench_fig(F_ATOMIC, bench_loop_atomic_add, NULL, 1, NULL);
    bench_fig(F_ATOMIC2, bench_loop_atomic_add, NULL, 2, NULL);
    B.fig[F_ATOMIC2].n = B.iters / BENCH_CONTENDED_DIV;
    bench_fig(F_REC, bench_loop_record, NULL, 1, &B.prefill);
    bench_fig(F_REC2, bench_loop_record, NULL, 2, &B.prefill);
    bench_fig(F_CUR, bench_loop_record_cur, NULL, 1, &B.decode);
    B.fig[F_CUR].before = bench_phase_decode;
    B.fig[F_CUR].after = bench_phase_none;
    bench_fig(F_COUNTER, bench_loop_counter_add, &B.counter, 1, &B.counter_sum);
    bench_fig(F_RT_OFF, bench_loop_record, NULL, 1, NULL);
    B.fig[F_RT_OFF].before = bench_memobs_off;
    B.fig[F_RT_OFF].after = bench_memobs_on;
    bench_fig(F_CT_OFF, bench_loop_ct_disabled, NULL, 1, NULL);
    bench_trk_figs(F_T_MALLOC, bench_loop_malloc, TRK_MALLOC, B.trk_iters, B.trk_iters);
    bench_trk_figs(F_T_TRACK, bench_loop_track, TRK_TRACK, B.trk_iters, B.trk_iters2);
    bench_trk_figs(F_T_MTRACK, bench_loop_malloc_track, TRK_MALLOC_TRACK, B.trk_iters, B.trk_iters2);
    bench_trk_figs(F_T_TAG, bench_loop_track_tag, TRK_TAG, B.trk_iters, B.trk_iters2);
    bench_trk_figs(F_T_STACK, bench_loop_track_stack, TRK_STACK, B.trk_stack_iters, B.trk_stack_iters);
    bench_trk_figs(F_T_OFF, bench_loop_track, TRK_OFF, B.trk_iters, B.trk_iters);
    bench_trk_figs(F_T_FP, bench_loop_track_stack, TRK_STACK_FP, B.trk_fp_iters, B.trk_fp_iters);
    bench_trk_figs(F_T_DEV, bench_loop_track_dev, TRK_DEV, B.trk_iters, B.trk_iters2);
    bench_trk_figs(F_T_DEVNH, bench_loop_track_dev, TRK_DEV_NOHIST, B.trk_iters, B.trk_iters2);
    for (k = 0; k < 2; k++) {
        bench_fig(F_TL + k, bench_loop_record, NULL, k + 1, &B.prefill);
        B.fig[F_TL + k].n = B.iters / BENCH_TL_DIV;
        B.fig[F_TL + k].timeline = 1;
    }
    bench_fig(F_REG_NT, bench_loop_region, NULL, 1, NULL);
    B.fig[F_REG_NT].before = bench_region_timing_off;
    B.fig[F_REG_NT].after = bench_region_timing_on;
    bench_fig(F_REG, bench_loop_region, NULL, 1, NULL);
    bench_fig(F_REG2, bench_loop_region, NULL, 2, NULL);
    bench_fig(F_REG_TL, bench_loop_region, NULL, 1, NULL);
    B.fig[F_REG_TL].n = B.iters / BENCH_TL_DIV;
    B.fig[F_REG_TL].timeline = 1;
    bench_fig(F_TICKS, bench_loop_ticks, NULL, 1, NULL);
    B.fig[F_TICKS].n = B.iters / BENCH_TL_DIV;
    bench_fig(F_TICKS2, bench_loop_ticks, NULL, 2, NULL);
    bench_fig(F_BOUND, bench_loop_record, NULL, 1, &B.prefill);
    B.fig[F_BOUND].before = bench_bind;
    B.fig[F_BOUND].after = bench_unbind;
    B.fig[F_TICKS2].n = B.iters / BENCH_TL_DIV;
    for (k = 0; k < 2; k++) {
        bench_fig(F_PAIR + k, bench_loop_pairs, &bench_pairs[k], k + 1, &B.prefill);
        B.fig[F_PAIR + k].arg1 = &bench_pairs[2];
        B.fig[F_PAIR + k].n = B.iters / BENCH_TL_DIV / BENCH_PAIR_BLOCK * BENCH_PAIR_BLOCK;
        B.fig[F_PAIR + k].timeline = 1;
    }
    bench_fig(F_NOW, bench_loop_now, NULL, 1, NULL);
    B.fig[F_NOW].n = B.iters / BENCH_TL_DIV;
    for (k = 0; k < 3; k++) {
        bench_so_t *so = &B.so[k];
        if (!so->h) continue;
        bench_fig(F_SO + 2 * k, bench_loop_call, &so->plain, 1, NULL);
        bench_fig(F_SO + 2 * k + 1, bench_loop_call, &so->record, 1, &so->prefill);
    }
}

static uint64_t bench_env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi) {
    const char *s = getenv(name);
    char *end;
    unsigned long long v;
    if (!s || !*s) return def;
    v = strtoull(s, &end, 10);
    if (*end || v < lo || v > hi) {
        fprintf(stderr, "bench: %s='%s' is not in %llu..%llu; using %llu\n", name, s, (unsigned long long)lo,
                (unsigned long long)hi, (unsigned long long)def);
        return def;
    }
    return v;
}

static void bench_pick_cpus(void) {
    cpu_set_t set;
    int c;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    for (c = 0; c < CPU_SETSIZE && B.ncpu < 2; c++)
        if (CPU_ISSET(c, &set)) B.cpu[B.ncpu++] = c;
}

static void bench_cpu_model(char *buf, size_t len) {
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, len, "unknown cpu");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, len, "%s", colon);
        break;
    }
    fclose(f);
}

/* "0.52 0.31 0.20, 3 runnable of 120 tasks": busy neighbours spoil figures. */
static void bench_loadavg(char *buf, size_t len) {
    double a, b, c;
    int run, all;
    FILE *f = fopen("/proc/loadavg", "r");
    snprintf(buf, len, "unknown");
    if (!f) return;
    if (fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &run, &all) == 5)
        snprintf(buf, len, "%.2f %.2f %.2f, %d runnable of %d tasks", a, b, c, run, all);
    fclose(f);
}

/* dlopen()s one variant; on failure, says why and leaves so->h NULL. */
static void bench_so_open(bench_so_t *so) {
    int (*enable)(int);
    so->h = dlopen(so->file, RTLD_NOW | RTLD_LOCAL);
    if (!so->h) {
        printf("(%s not loaded: %s)\n", so->file, dlerror());
        return;
    }
    so->record.fn = (void (*)(uint64_t))dlsym(so->h, "bench_so_record");
    so->plain.fn = (void (*)(uint64_t))dlsym(so->h, "bench_so_plain");
    so->get_summary = (void (*)(memobs_summary_t *))dlsym(so->h, "memobs_get_summary");
    enable = (int (*)(int))dlsym(so->h, "memobs_set_enabled");
    so->label = (const char *)dlsym(so->h, "bench_so_label");
    if (!so->record.fn || !so->plain.fn || !so->get_summary || !enable || !so->label) {
        printf("(%s not used: a symbol is missing)\n", so->file);
        so->h = NULL;
        return;
    }
    enable(1); /* whatever MEMOBS says in the environment */
}

/* ======================================================================== */
/* Report                                                                   */
/* ======================================================================== */

#define BENCH_NAME_W 46

/* "3.1x cheaper" when ns is below base, "1.4x dearer" above, "same" within 5%. */
static const char *bench_ratio(char *buf, size_t len, double ns, double base) {
    if (ns <= 0 || base <= 0) snprintf(buf, len, "-");
    else if (ns < base * 1.05 && base < ns * 1.05) snprintf(buf, len, "same");
    else if (ns <= base) snprintf(buf, len, "%.1fx cheaper", base / ns);
    else snprintf(buf, len, "%.1fx dearer", ns / base);
    return buf;
}

/* One line of the table; ratios: compare with the three baselines. */
static void bench_row(const char *name, int fig, int ratios, const char *note) {
    char a[24] = "", b[24] = "", c[24] = "";
    double ns = B.fig[fig].ns;
    if (ratios) {
        bench_ratio(a, sizeof a, ns, B.fig[F_PLAIN].ns);
        bench_ratio(b, sizeof b, ns, B.fig[F_ATOMIC].ns);
        bench_ratio(c, sizeof c, ns, B.fig[F_ATOMIC2].ns);
    }
    printf("  %-*s %7.2f%s %-13s %-13s %-13s %s\n", BENCH_NAME_W, name, ns, B.fig[fig].uncounted ? "*" : " ", a, b,
           c, note);
}

static void bench_target(const char *what, double value, const char *unit, int pass) {
    char v[24];
    snprintf(v, sizeof v, "%.2f%s", value, unit);
    printf("  %-52s %-10s %s\n", what, v, pass ? "PASS" : "MISS");
}

static void bench_check(const char *what, uint64_t expected, uint64_t got, int *all) {
    if (expected == got) return;
    printf("  MISMATCH %s: expected %llu, got %llu\n", what, (unsigned long long)expected, (unsigned long long)got);
    *all = 0;
}

/* Every record made in the timed loops must be in the summaries, exactly. */
static void bench_check_totals(void) {
    memobs_summary_t s;
    int ok = 1, k, nso = 0;
    memobs_get_summary(&s);
    bench_check("executable H2D prefill count", B.prefill.count, s.prefill.h2d.count, &ok);
    bench_check("executable H2D prefill bytes", B.prefill.bytes, s.prefill.h2d.bytes, &ok);
    bench_check("executable H2D decode count (_CUR)", B.decode.count, s.decode.h2d.count, &ok);
    bench_check("executable H2D decode bytes (_CUR)", B.decode.bytes, s.decode.h2d.bytes, &ok);
    bench_check("executable H2D total count", B.prefill.count + B.decode.count, s.total.h2d.count, &ok);
    bench_check("executable counter bench_counter", B.counter_sum.bytes, s.ncounters ? s.counters[0].value : 0, &ok);
    bench_check("executable bad records", 0, s.bad_records, &ok);
    bench_check("executable records via the shared shard", 0, s.untracked_threads, &ok);
    for (k = 0; k < 3; k++) {
        bench_so_t *so = &B.so[k];
        char what[96];
        if (!so->h) continue;
        nso++;
        so->get_summary(&s);
        snprintf(what, sizeof what, "%s H2D prefill count", so->file);
        bench_check(what, so->prefill.count, s.prefill.h2d.count, &ok);
        snprintf(what, sizeof what, "%s H2D prefill bytes", so->file);
        bench_check(what, so->prefill.bytes, s.prefill.h2d.bytes, &ok);
    }
    printf("totals exact: %s (executable: %llu H2D records, 2-thread runs included, and %llu counter adds; "
           "each of %d .so's: its own records)\n",
           ok ? "yes" : "no", (unsigned long long)(B.prefill.count + B.decode.count),
           (unsigned long long)B.counter_sum.count, nso);
}

/* Every allocation the tracker figures tracked was freed, exactly, and
   nothing was misused or dropped. */
static void bench_trk_check_totals(void) {
    static memobs_summary_t s;
    const memobs_mem_stats_t *m = &s.mem[MEMOBS_MEM_HOST];
    const memobs_track_problems_t *t = &s.track;
    int ok = B.trk_bad == 0, k;
    memobs_get_summary(&s);
    bench_check("tracker host allocs", B.trk_allocs, m->allocs, &ok);
    bench_check("tracker host frees", B.trk_allocs, m->frees, &ok);
    bench_check("tracker host alloc bytes", B.trk_allocs * BENCH_TRK_BYTES, m->alloc_bytes, &ok);
    bench_check("tracker host live", 0, m->live, &ok);
    bench_check("tracker host current bytes", 0, m->current_bytes, &ok);
    bench_check("tracker host peak bytes (2 rings full)", 2 * BENCH_TRK_LIVE * BENCH_TRK_BYTES, m->peak_bytes, &ok);
    m = &s.mem[MEMOBS_MEM_DEVICE];
    bench_check("tracker device allocs", B.trk_dev_allocs, m->allocs, &ok);
    bench_check("tracker device frees", B.trk_dev_allocs, m->frees, &ok);
    bench_check("tracker device alloc bytes", B.trk_dev_allocs * BENCH_TRK_BYTES, m->alloc_bytes, &ok);
    bench_check("tracker device live", 0, m->live, &ok);
    bench_check("tracker device current bytes", 0, m->current_bytes, &ok);
    bench_check("tracker device 0 bytes", 0, memobs_get_device_bytes(0, NULL), &ok);
    bench_check("tracker device 1 bytes", 0, memobs_get_device_bytes(1, NULL), &ok);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++)
        if (k != MEMOBS_MEM_HOST && k != MEMOBS_MEM_DEVICE)
            bench_check("tracker allocs of another kind", 0, s.mem[k].allocs, &ok);
    bench_check("tracker frees_unknown", 0, t->frees_unknown, &ok);
    bench_check("tracker frees_double", 0, t->frees_double, &ok);
    bench_check("tracker frees_null", 0, t->frees_null, &ok);
    bench_check("tracker allocs_null", 0, t->allocs_null, &ok);
    bench_check("tracker allocs_zero", 0, t->allocs_zero, &ok);
    bench_check("tracker allocs_duplicate", 0, t->allocs_duplicate, &ok);
    bench_check("tracker allocs_bad_kind", 0, t->allocs_bad_kind, &ok);
    bench_check("tracker untracked", 0, t->untracked, &ok);
    bench_check("tracker untracked_frees", 0, t->untracked_frees, &ok);
    bench_check("tracker traces_dropped", 0, t->traces_dropped, &ok);
    bench_check("tracker traces (the tag, the stack from backtrace(), from frame pointers)", 3, t->traces, &ok);
    if (B.trk_depth != BENCH_TRK_STACK) {
        printf("  MISMATCH tracker C frames captured: expected %d, got %d\n", BENCH_TRK_STACK, B.trk_depth);
        ok = 0;
    }
    if (B.trk_fp_depth != BENCH_TRK_STACK || B.trk_fp_same != 1) {
        printf("  MISMATCH tracker C frames from frame pointers: expected %d, the same as backtrace()'s, marked, not "
               "cut; got %d (%s)\n", BENCH_TRK_STACK, B.trk_fp_depth, B.trk_fp_same == 1 ? "same" : "not the same");
        ok = 0;
    }
    printf("tracker exact: %s (%d checks of live blocks, table entries and current bytes, after every loop and "
           "every drain; %llu allocations tracked and all freed, 2-thread runs included; nothing unknown, double, "
           "duplicate or untracked; 3 traces: the tag, the stack from backtrace() and the same %d frames from frame "
           "pointers)\n",
           ok ? "yes" : "no", B.trk_checks, (unsigned long long)B.trk_allocs, B.trk_fp_depth);
}

#define BENCH_TRK_W 44

/* One tracker figure: 1 thread, 2 threads (per thread), their scaling. */
static void bench_trk_row(const char *name, int fig, const char *note) {
    printf("  %-*s %8.1f ns %8.1f ns%s %5.2fx   %s\n", BENCH_TRK_W, name, B.fig[fig].ns, B.fig[fig + 1].ns,
           B.fig[fig + 1].uncounted ? "*" : " ", bench_scaling(fig, fig + 1), note);
}

static void bench_trk_report(void) {
    char note[160];
    const bench_fig_t *f = B.fig;
    printf("\nallocation tracker (bench_track.c): one alloc+free pair per iteration; each thread frees the oldest of "
           "its %d live %d-byte blocks and allocates one\n", BENCH_TRK_LIVE, BENCH_TRK_BYTES);
    printf("  %-*s %11s %11s  %6s   %s\n", BENCH_TRK_W, "figure", "1 thread", "2 threads", "2T/1T", "note");
    printf("  %-*s %11s %11s  %6s\n", BENCH_TRK_W, "", "per pair", "per thread", "thrput");
    bench_trk_row("malloc(64) + free, no memobs", F_T_MALLOC, "baseline (glibc malloc)");
    snprintf(note, sizeof note, "blocks from an array: the tracker alone, %.1fx a malloc+free pair",
             f[F_T_TRACK].ns / f[F_T_MALLOC].ns);
    bench_trk_row("MEMOBS_TRACK_ALLOC + MEMOBS_TRACK_FREE", F_T_TRACK, note);
    snprintf(note, sizeof note, "what a user pays: malloc+free %+.1f ns, %.1fx", f[F_T_MTRACK].ns - f[F_T_MALLOC].ns,
             f[F_T_MTRACK].ns / f[F_T_MALLOC].ns);
    bench_trk_row("malloc + free + TRACK_ALLOC + TRACK_FREE", F_T_MTRACK, note);
    snprintf(note, sizeof note, "tag \"%s\": %+.1f ns over no tag", BENCH_TRK_TAG, f[F_T_TAG].ns - f[F_T_TRACK].ns);
    bench_trk_row("MEMOBS_TRACK_ALLOC_N (a tag) + TRACK_FREE", F_T_TAG, note);
    snprintf(note, sizeof note, "%d C frames captured (counted in memobs_format_trace); the loop is %d calls "
             "below the worker", B.trk_depth, BENCH_TRK_CHAIN + 1);
    bench_trk_row("MEMOBS_TRACK_ALLOC_S(..., 16) + TRACK_FREE", F_T_STACK, note);
    snprintf(note, sizeof note, "MEMOBS_UNWIND=fp: %d frames, %s backtrace()'s; %.1fx cheaper", B.trk_fp_depth,
             B.trk_fp_same == 1 ? "the same as" : "NOT the same as", f[F_T_STACK].ns / f[F_T_FP].ns);
    bench_trk_row("the same, frame pointers", F_T_FP, note);
    bench_trk_row("TRACK_ALLOC + TRACK_FREE runtime-disabled", F_T_OFF, "memobs_set_enabled(0), nothing tracked live");
    printf("  (pairs per run: %llu; %llu for the tracked ones on 2 threads, which contend; %llu with a stack, %llu "
           "with one from frame pointers. 2 threads: each its own ring)\n", (unsigned long long)f[F_T_TRACK].n,
           (unsigned long long)f[F_T_TRACK2].n, (unsigned long long)f[F_T_STACK].n, (unsigned long long)f[F_T_FP].n);
}

/* One row of the device table: best and median, each against the host
   pair's and malloc+free's (1 thread: fig's own; 2 threads: their 2-thread
   peers'). */
static void bench_dev_row(const char *name, int fig, int host, int base) {
    const bench_fig_t *f = B.fig;
    double m = f[fig].nrun ? bench_median(fig) : 0, mh = f[host].nrun ? bench_median(host) : 0;
    double mb = f[base].nrun ? bench_median(base) : 0;
    char med[16] = "      -", rh[16] = "     -", rb[16] = "     -";
    if (m > 0) snprintf(med, sizeof med, "%7.1f", m);
    if (m > 0 && mh > 0) snprintf(rh, sizeof rh, "%5.2fx", m / mh);
    if (m > 0 && mb > 0) snprintf(rb, sizeof rb, "%5.2fx", m / mb);
    printf("  %-*s %7.1f%s %s  %5.2fx %s  %5.2fx %s\n", BENCH_TRK_W, name, f[fig].ns, f[fig].uncounted ? "*" : " ",
           med, f[fig].ns / f[host].ns, rh, f[fig].ns / f[base].ns, rb);
}

/* The tracker on device blocks beside host blocks and malloc+free. */
static void bench_dev_report(void) {
    printf("\ntracker on device blocks (MEMOBS_MEM_DEVICE, the device given), beside host blocks and malloc+free: "
           "the same ring, best and median of the runs\n");
    printf("  %-*s %8s %7s  %13s  %13s\n", BENCH_TRK_W, "pair (1 thread; 2 threads per thread)", "best ns", "median",
           "x host pair", "x malloc+free");
    printf("  %-*s %8s %7s  %6s %6s  %6s %6s\n", BENCH_TRK_W, "", "", "", "best", "median", "best", "median");
    bench_dev_row("malloc(64) + free, no memobs", F_T_MALLOC, F_T_TRACK, F_T_MALLOC);
    bench_dev_row("MEMOBS_MEM_HOST", F_T_TRACK, F_T_TRACK, F_T_MALLOC);
    bench_dev_row("MEMOBS_MEM_DEVICE, history off (the default)", F_T_DEVNH, F_T_TRACK, F_T_MALLOC);
    bench_dev_row("MEMOBS_MEM_DEVICE, history on", F_T_DEV, F_T_TRACK, F_T_MALLOC);
    bench_dev_row("MEMOBS_MEM_HOST, 2 threads", F_T_TRACK2, F_T_TRACK2, F_T_MALLOC2);
    bench_dev_row("MEMOBS_MEM_DEVICE, history off, 2 threads", F_T_DEVNH2, F_T_TRACK2, F_T_MALLOC2);
    bench_dev_row("MEMOBS_MEM_DEVICE, history on, 2 threads", F_T_DEV2, F_T_TRACK2, F_T_MALLOC2);
    printf("  (history off: device 1, the default, no snapshot wanted; history on: device 0, "
           "memobs_torch_history_start(0) before the figure's runs, _stop() after, %llu events a device; 2 threads: "
           "one device, each thread its own ring of blocks; %d counted runs of the 1-thread host pair; median -: no "
           "counted run)\n",
           (unsigned long long)memobs__tsn_cap(), B.fig[F_T_TRACK].nrun);
}

/* The p-th quantile (0..1) of a pair array, in ns; 0 when empty. */
static double bench_pair_q(bench_pairs_t *p, double q) {
    if (p->n == 0) return 0;
    qsort(p->d, (size_t)p->n, sizeof p->d[0], bench_cmp_double);
    return p->d[(int)(q * (p->n - 1))] * memobs_clock_ns_per_tick();
}

/* The timeline's 2-thread throughput ratio over the clock's own: best
   runs (med 0) or medians (1). */
static double bench_tl_scaling_share(int med) {
    return med ? bench_scaling_med(F_TL, F_TL2) / bench_scaling_med(F_TICKS, F_TICKS2)
               : bench_scaling(F_TL, F_TL2) / bench_scaling(F_TICKS, F_TICKS2);
}

/* The timeline in its steady state beside its clock, medians beside the
   best runs: how steady the figures are. */
static void bench_tl_report(void) {
    static const struct { const char *name; int fig; } rows[] = {
        {"memobs_ticks(), 1 thread", F_TICKS},
        {"memobs_ticks(), 2 threads (per thread)", F_TICKS2},
        {"MEMOBS_RECORD_H2D, timeline on, 1 thread", F_TL},
        {"the same, 2 threads (per thread)", F_TL2}};
    size_t k;
    printf("\ntimeline, steady state (%d events, full and wrapping), beside its clock: ns per op, median and best "
           "of %d counted runs (2 threads: %d)\n", BENCH_TL_EVENTS, B.fig[F_TL].nrun, B.fig[F_TL2].nrun);
    printf("  %-*s %8s %8s\n", BENCH_TRK_W, "figure", "median", "best");
    for (k = 0; k < sizeof rows / sizeof rows[0]; k++)
        printf("  %-*s %8.2f %8.2f\n", BENCH_TRK_W, rows[k].name, bench_median(rows[k].fig), B.fig[rows[k].fig].ns);
    printf("  %-*s %+8.2f %+8.2f\n", BENCH_TRK_W, "1 thread: a record over a clock read",
           bench_median(F_TL) - bench_median(F_TICKS), B.fig[F_TL].ns - B.fig[F_TICKS].ns);
    printf("  %-*s %+8.2f %+8.2f\n", BENCH_TRK_W, "2 threads: a record over a clock read",
           bench_median(F_TL2) - bench_median(F_TICKS2), B.fig[F_TL2].ns - B.fig[F_TICKS2].ns);
    printf("  %-*s %7.2fx %7.2fx\n", BENCH_TRK_W, "throughput 2T/1T: the clock",
           bench_scaling_med(F_TICKS, F_TICKS2), bench_scaling(F_TICKS, F_TICKS2));
    printf("  %-*s %7.2fx %7.2fx\n", BENCH_TRK_W, "throughput 2T/1T: the timeline", bench_scaling_med(F_TL, F_TL2),
           bench_scaling(F_TL, F_TL2));
    printf("  %-*s %7.0f%% %7.0f%%\n", BENCH_TRK_W, "the timeline's 2T/1T over the clock's",
           bench_tl_scaling_share(1) * 100, bench_tl_scaling_share(0) * 100);
    printf("  a record over a clock read, in pairs of %d-op blocks on each thread (ns; 10th percentile, median, "
           "90th of the blocks):\n", BENCH_PAIR_BLOCK);
    for (k = 0; k < 3; k++)
        printf("    %-*s %+6.2f %+6.2f %+6.2f  (%d blocks)\n", BENCH_TRK_W - 2,
               k == 0 ? "1 thread" : k == 1 ? "2 threads, the first" : "2 threads, the second",
               bench_pair_q(&bench_pairs[k], 0.1), bench_pair_q(&bench_pairs[k], 0.5),
               bench_pair_q(&bench_pairs[k], 0.9), bench_pairs[k].n);
    for (k = 0; k < sizeof rows / sizeof rows[0]; k++)
        if (B.fig[rows[k].fig].nrun == 0) {
            printf("  (a figure had no counted run: its median is its best run not counted, see below)\n");
            break;
        }
}

static void bench_report(void) {
    char note[128];
    double rec_scaling = bench_scaling(F_REC, F_REC2), atomic_cheaper = B.fig[F_ATOMIC].ns / B.fig[F_REC].ns;
    int k;
    printf("\n  %-*s %7s  %-13s %-13s %-13s %s\n", BENCH_NAME_W, "figure", "ns/op", "vs plain add", "vs atomic add",
           "vs atomic 2T", "note");
    printf("  %-*s %7s  %-13s %-13s %-13s\n", BENCH_NAME_W, "", "", "(1 thread)", "(1 thread)", "(per thread)");
    printf("baselines, no memobs\n");
    bench_row("plain add to memory (load-add-store)", F_PLAIN, 0, "non-atomic, a thread-local line");
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx: the machine's own scaling",
             bench_scaling(F_PLAIN, F_PLAIN2));
    bench_row("plain add, 2 threads, a line each", F_PLAIN2, 0, note);
    bench_row("relaxed atomic add, 1 thread", F_ATOMIC, 0, "lock add");
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx (%llu iterations)",
             bench_scaling(F_ATOMIC, F_ATOMIC2), (unsigned long long)B.fig[F_ATOMIC2].n);
    bench_row("relaxed atomic add, 2 threads, one shared line", F_ATOMIC2, 0, note);

    printf("memobs, implementation in the executable\n");
    bench_row("MEMOBS_RECORD_H2D enabled, 1 thread", F_REC, 1, "timeline off (the default)");
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx", rec_scaling);
    bench_row("MEMOBS_RECORD_H2D enabled, 2 threads", F_REC2, 1, note);
    snprintf(note, sizeof note, "%d events, full and wrapping; %+.1f ns over timeline off, %+.1f over a clock read "
             "(%s)", BENCH_TL_EVENTS, B.fig[F_TL].ns - B.fig[F_REC].ns, B.fig[F_TL].ns - B.fig[F_TICKS].ns,
             memobs_clock_source());
    bench_row("MEMOBS_RECORD_H2D, timeline on, 1 thread", F_TL, 1, note);
    snprintf(note, sizeof note, "per thread; %+.1f ns over the clock on 2 threads; throughput 2T/1T %.2fx",
             B.fig[F_TL2].ns - B.fig[F_TICKS2].ns, bench_scaling(F_TL, F_TL2));
    bench_row("MEMOBS_RECORD_H2D, timeline on, 2 threads", F_TL2, 1, note);
    snprintf(note, sizeof note, "the timeline's clock: %s", memobs_clock_source());
    bench_row("memobs_ticks()", F_TICKS, 0, note);
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx", bench_scaling(F_TICKS, F_TICKS2));
    bench_row("memobs_ticks(), 2 threads", F_TICKS2, 0, note);
    bench_row("memobs_now_ns() (clock_gettime CLOCK_MONOTONIC)", F_NOW, 0, "summaries' and regions' clock");
    bench_row("MEMOBS_RECORD_H2D_CUR (phase from TLS)", F_CUR, 1, "");
    snprintf(note, sizeof note, "memobs_request_enter: %+.2f ns, %.2fx the record bound to none (row 1)",
             B.fig[F_BOUND].ns - B.fig[F_REC].ns, B.fig[F_BOUND].ns / B.fig[F_REC].ns);
    bench_row("MEMOBS_RECORD_H2D bound to a request, 1 thread", F_BOUND, 1, note);
    bench_row("MEMOBS_REGION_BEGIN + _END, timing off", F_REG_NT, 1,
              "memobs_region_set_timing(0): an id and a depth on the thread");
    snprintf(note, sizeof note, "the default: two clock reads, %+.1f ns over timing off",
             B.fig[F_REG].ns - B.fig[F_REG_NT].ns);
    bench_row("MEMOBS_REGION_BEGIN + _END, timing on", F_REG, 1, note);
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx", bench_scaling(F_REG, F_REG2));
    bench_row("MEMOBS_REGION_BEGIN + _END, timing on, 2 thr", F_REG2, 1, note);
    snprintf(note, sizeof note, "a slice on the timeline: %+.1f ns over timeline off", B.fig[F_REG_TL].ns - B.fig[F_REG].ns);
    bench_row("MEMOBS_REGION_BEGIN + _END, timeline on", F_REG_TL, 1, note);
    bench_row("memobs_counter_add(handle, n)", F_COUNTER, 1, "");
    bench_row("MEMOBS_RECORD_H2D runtime-disabled", F_RT_OFF, 1, "memobs_set_enabled(0): a load and a branch");
    bench_row("MEMOBS_RECORD_H2D compile-time-disabled", F_CT_OFF, 1,
              "-DMEMOBS_DISABLE: empty body + barrier = loop overhead only");

    printf("memobs in a dlopen()ed .so (-fPIC -shared), each call through a function pointer\n");
    for (k = 0; k < 3; k++) {
        bench_so_t *so = &B.so[k];
        const bench_fig_t *plain = &B.fig[F_SO + 2 * k], *rec = plain + 1;
        char name[96];
        if (!so->h) {
            printf("  %s: not loaded (see above)\n", so->file);
            continue;
        }
        snprintf(name, sizeof name, "%s: bench_so_plain", so->label);
        bench_row(name, F_SO + 2 * k, 0, "baseline: a plain add behind the same call");
        snprintf(name, sizeof name, "%s: bench_so_record", so->label);
        snprintf(note, sizeof note, "%.2fx the plain call: the record adds %+.2f ns", rec->ns / plain->ns,
                 rec->ns - plain->ns);
        bench_row(name, F_SO + 2 * k + 1, 0, note);
    }
    printf("  (initial-exec in a dlopen()ed .so takes glibc's spare static TLS, glibc.rtld.optional_static_tls)\n");
    bench_trk_report();
    bench_dev_report();
    bench_tl_report();
    if (B.extra_rounds)
        printf("  (the machine was busy: %d extra round%s for the 2-thread figures and their 1-thread peers)\n",
               B.extra_rounds, B.extra_rounds == 1 ? "" : "s");
    if (B.off_cpu)
        printf("  (the machine was busy: %d 2-thread run%s not counted, a thread having been off its cpu or late; "
               "%d figure%s, marked *, had only such runs and may be low)\n", B.off_cpu, B.off_cpu == 1 ? "" : "s",
               B.uncounted_only, B.uncounted_only == 1 ? "" : "s");

    printf("\ntargets (reported, not asserted)\n");
    bench_target("enabled, 1 thread: <= 2 ns/record", B.fig[F_REC].ns, " ns", B.fig[F_REC].ns <= 2.0);
    bench_target("enabled: >= 2.5x cheaper than a relaxed atomic add", atomic_cheaper, "x", atomic_cheaper >= 2.5);
    bench_target("enabled, 2 threads: >= 1.8x the throughput of 1", rec_scaling, "x", rec_scaling >= 1.8);
    if (bench_scaling(F_PLAIN, F_PLAIN2) < 1.8)
        printf("    (but plain adds on private lines scaled only %.2fx: the machine was busy)\n",
               bench_scaling(F_PLAIN, F_PLAIN2));
    bench_target("runtime-disabled: <= 1 ns/record", B.fig[F_RT_OFF].ns, " ns", B.fig[F_RT_OFF].ns <= 1.0);
    bench_target("timeline on, 1 thread: <= 12 ns/record", B.fig[F_TL].ns, " ns", B.fig[F_TL].ns <= 12.0);
    bench_target("timeline on, 2 threads: >= 1.8x the throughput of 1", bench_scaling(F_TL, F_TL2), "x",
                 bench_scaling(F_TL, F_TL2) >= 1.8);
    bench_target("timeline, 2 threads: <= the clock's + 3 ns (median)", bench_median(F_TL2) - bench_median(F_TICKS2),
                 " ns", bench_median(F_TL2) - bench_median(F_TICKS2) <= 3.0);
    bench_target("timeline 2T/1T: >= 90% of the clock's (median)", bench_tl_scaling_share(1) * 100, "%",
                 bench_tl_scaling_share(1) >= 0.9);
    bench_target("tracker, 1 thread: <= 100 ns/pair without a stack", B.fig[F_T_TRACK].ns, " ns",
                 B.fig[F_T_TRACK].ns <= 100.0);
    bench_target("tracker, 2 threads: <= 100 ns/pair/thread, no stack", B.fig[F_T_TRACK2].ns, " ns",
                 B.fig[F_T_TRACK2].ns <= 100.0);
    bench_target("tracker pair, 1 thread: <= 6x a malloc+free pair", B.fig[F_T_TRACK].ns / B.fig[F_T_MALLOC].ns, "x",
                 B.fig[F_T_TRACK].ns <= 6.0 * B.fig[F_T_MALLOC].ns);
    bench_target("tracker + tag, 1 thread: <= 100 ns/pair", B.fig[F_T_TAG].ns, " ns", B.fig[F_T_TAG].ns <= 100.0);
    bench_target("tracker + tag, 2 threads: <= 100 ns/pair/thread", B.fig[F_T_TAG2].ns, " ns",
                 B.fig[F_T_TAG2].ns <= 100.0);
    bench_target("depth-16 stack, 1 thread: <= 2 us/pair", B.fig[F_T_STACK].ns / 1000, " us",
                 B.fig[F_T_STACK].ns <= 2000.0);
    bench_target("depth-16 stack, 2 threads: <= 2 us/pair/thread", B.fig[F_T_STACK2].ns / 1000, " us",
                 B.fig[F_T_STACK2].ns <= 2000.0);
    if (B.trk_depth != BENCH_TRK_STACK)
        printf("    (but the stack figure captured %d frames, not %d: it is not a depth-%d figure)\n", B.trk_depth,
               BENCH_TRK_STACK, BENCH_TRK_STACK);
    bench_target("device pair, history off (default): <= 1.3x host", B.fig[F_T_DEVNH].ns / B.fig[F_T_TRACK].ns, "x",
                 B.fig[F_T_DEVNH].ns <= 1.3 * B.fig[F_T_TRACK].ns);
    bench_target("device pair, history on: <= 1.6x a host pair", B.fig[F_T_DEV].ns / B.fig[F_T_TRACK].ns, "x",
                 B.fig[F_T_DEV].ns <= 1.6 * B.fig[F_T_TRACK].ns);
    bench_target("depth-16 C stack pair, frame pointers <= 250 ns", B.fig[F_T_FP].ns, " ns", B.fig[F_T_FP].ns <= 250.0);
    bench_target("the same, 2 threads: <= 250 ns/pair/thread", B.fig[F_T_FP2].ns, " ns", B.fig[F_T_FP2].ns <= 250.0);
    if (B.trk_fp_depth != BENCH_TRK_STACK)
        printf("    (but the frame-pointer figure captured %d frames, not %d: it is not a depth-%d figure)\n",
               B.trk_fp_depth, BENCH_TRK_STACK, BENCH_TRK_STACK);
    printf("\n");
    bench_check_totals();
    bench_trk_check_totals();
}

/* The periodic writes' cost (one interval's work, the exposition made
   each time): MEMOBS_PROM_FILE's file, and the prometheus_client
   multiprocess files in either layout (memobs__dest_store: the exposition
   through a memory stream, its four images, four whole-file writes), in a
   fresh folder under $TMPDIR or /tmp; best of 20 after a warm-up, with
   the files' sizes. Reported, not asserted: a whole file is fdatasync()ed,
   so the figure is the file system's as much as memobs'. */
static void bench_prom_writes(void) {
    char dir[256], path[300];
    const char *tmp = getenv("TMPDIR");
    uint64_t best[3] = {~(uint64_t)0, ~(uint64_t)0, ~(uint64_t)0}, bytes[3] = {0, 0, 0}, conv = ~(uint64_t)0;
    int i, k;
    snprintf(dir, sizeof dir, "%s/memobs_bench_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return;
    for (k = 0; k < 3; k++) {
        for (i = 0; i <= 20; i++) {
            uint64_t t0 = memobs_now_ns();
            if (k == 0) {
                snprintf(path, sizeof path, "%s/memobs.prom", dir);
                (void)memobs_write_prometheus_file(path);
            } else {
                memobs__pmp.cfg = (uint32_t)k;
                snprintf(path, sizeof path, "%s/memobs-%ld", dir, (long)getpid());
                (void)memobs__dest_store(MEMOBS__OUT_PROM_MP, path, memobs__write_prom_f, 0, 0);
            }
            t0 = memobs_now_ns() - t0;
            if (i > 0 && t0 < best[k]) best[k] = t0;
        }
        {
            struct stat st;
            int f;
            if (k == 0 && stat(path, &st) == 0) bytes[k] = (uint64_t)st.st_size;
            for (f = 0; k > 0 && f < MEMOBS__PMP_FILES; f++) {
                snprintf(path, sizeof path, "%s/%s_memobs-%ld.db", dir, memobs__pmp_kind[f], (long)getpid());
                if (stat(path, &st) == 0) bytes[k] += (uint64_t)st.st_size;
                (void)unlink(path);
            }
        }
    }
    snprintf(path, sizeof path, "%s/memobs.prom", dir);
    (void)unlink(path);
    (void)rmdir(dir);
    memobs__pmp.cfg = 0;
    { /* the conversion alone: an exposition made once, turned into the images */
        size_t n = memobs_format_prometheus(NULL, 0) + 4096;
        char *text = (char *)malloc(n);
        if (text && (n = memobs_format_prometheus(text, n)) > 0) {
            for (i = 0; i <= 20; i++) {
                uint64_t t0 = memobs_now_ns();
                pthread_mutex_lock(&memobs__pmp.lock);
                memobs__pmp_build(text, n, 2, 0.0);
                pthread_mutex_unlock(&memobs__pmp.lock);
                t0 = memobs_now_ns() - t0;
                if (i > 0 && t0 < conv) conv = t0;
            }
        }
        free(text);
    }
    printf("A periodic write, per MEMOBS_PROM_INTERVAL_MS (the exposition made, then written whole and fdatasync()ed, "
           "in %s), best of 20:\n", tmp && *tmp ? tmp : "/tmp");
    printf("  MEMOBS_PROM_FILE (one file, %llu bytes):                        %8.1f us\n",
           (unsigned long long)bytes[0], (double)best[0] / 1e3);
    printf("  PROMETHEUS_MULTIPROC_DIR, layout 1 (four files, %llu bytes):   %8.1f us (%.2fx the file)\n",
           (unsigned long long)bytes[1], (double)best[1] / 1e3, (double)best[1] / (double)best[0]);
    printf("  PROMETHEUS_MULTIPROC_DIR, layout 2 (four files, %llu bytes):   %8.1f us (%.2fx the file)\n",
           (unsigned long long)bytes[2], (double)best[2] / 1e3, (double)best[2] / (double)best[0]);
    printf("  of which the exposition turned into the four images (no file):  %8.1f us\n", (double)conv / 1e3);
}

/* One Prometheus exposition of this process' figures (memobs_format_prometheus
   into a buffer that fits): best of 50, after a warm-up. Reported, not asserted. */
static void bench_prom_figure(void) {
    size_t n = memobs_format_prometheus(NULL, 0), cap = n + 4096, got = 0;
    char *buf = (char *)malloc(cap);
    uint64_t best = ~(uint64_t)0;
    int i;
    if (!buf) return;
    for (i = 0; i <= 50; i++) {
        uint64_t t0 = memobs_now_ns();
        got = memobs_format_prometheus(buf, cap);
        t0 = memobs_now_ns() - t0;
        if (i > 0 && t0 < best) best = t0;
    }
    printf("\nPrometheus exposition (memobs_format_prometheus, %llu bytes, %u user counters): %.1f us, best of 50\n",
           (unsigned long long)got, (unsigned)memobs__g.ncounters.v, (double)best / 1e3);
    free(buf);
    bench_prom_writes();
}

/* One host sample (memobs_sample_now, on this thread) with the container's
   reads (the cgroup's usage, limit and memory.stat, /proc/self/status's
   RssShmem) and without them (memobs__cg_set_enabled(0)), side by side:
   BENCH_SMP_CALLS calls a run, the runs of the two alternated, the best of
   each. The ring's oldest samples are dropped (counted); the timeline off. */
#define BENCH_SMP_CALLS 500
#define BENCH_SMP_RUNS 9
static void bench_sample_figure(void) {
    double best[2] = {0, 0};
    memobs_sample_t last;
    int r, w, i;
    for (r = 0; r <= BENCH_SMP_RUNS; r++) {
        for (w = 0; w < 2; w++) {
            uint64_t t0;
            memobs__cg_set_enabled(w);
            t0 = memobs_now_ns();
            for (i = 0; i < BENCH_SMP_CALLS; i++) (void)memobs_sample_now();
            t0 = memobs_now_ns() - t0;
            if (r > 0 && (best[w] == 0 || (double)t0 / BENCH_SMP_CALLS < best[w])) best[w] = (double)t0 / BENCH_SMP_CALLS;
        }
    }
    memobs__cg_set_enabled(1);
    if (memobs_get_samples(&last, 1) != 1) memset(&last, 0, sizeof last);
    printf("\nhost sample (memobs_sample_now, %d calls a run, best of %d runs alternated): without the container's "
           "reads %.2f us, with them %.2f us (%.2fx; cgroup v%u%s%s, RssShmem %s)\n", BENCH_SMP_CALLS, BENCH_SMP_RUNS,
           best[0] / 1e3, best[1] / 1e3, best[0] > 0 ? best[1] / best[0] : 0.0, (unsigned)last.cgroup_version,
           last.cgroup_version ? " at " : "", last.cgroup_version ? memobs__cg.dir : ": none found",
           last.rss_shmem_bytes != MEMOBS_UNKNOWN ? "read" : "unknown");
}

/* ======================================================================== */
/* Sliding working set (issue 40)                                           */
/* ======================================================================== */

/* bench_track.c's slide, after the report (its blocks are not the rings',
   whose totals the report checks): BENCH_TRK_LIVE blocks
   BENCH_SLIDE_BYTES apart through BENCH_SLIDE_POOL addresses, one thread,
   BENCH_ITERS / BENCH_TRK_DIV pairs a run, its own interleaved rounds.
   Before each run (untimed) the slide is filled and taken once through
   its pool, so that every granule's stripe has met the set; the table
   resizes made in the timed loop are counted (memobs__trk_t.resizes). */
enum { SL_MALLOC, SL_HOST, SL_DEV, SL_COUNT };
#define BENCH_SLIDE_DEV 2 /* a device no other figure uses: the snapshot history as by default */
static struct {
    bench_fig_t fig[SL_COUNT];
    int cur;                   /* the figure being run */
    uint64_t r0;               /* resizes before its timed loop */
    uint64_t resizes[SL_COUNT]; /* the most in one timed loop */
    int bad;                   /* table entries not as expected after a loop or a drain */
} BS;

static bench_slide_t *bench_slide_of(int k) { return bench_slide(k == SL_DEV ? BENCH_SLIDE_DEV : -1, k == SL_MALLOC); }

static uint64_t bench_resizes(void) { return __atomic_load_n(&memobs__g.trk.resizes.v, __ATOMIC_RELAXED); }

static void bench_slide_before(void) {
    bench_slide_t *s = bench_slide_of(BS.cur);
    static const bench_loop_fn lap[SL_COUNT] = {bench_loop_slide_malloc, bench_loop_slide_host, bench_loop_slide_dev};
    bench_slide_fill(s);
    lap[BS.cur](BENCH_SLIDE_POOL, s);
    BS.r0 = bench_resizes();
}

static void bench_slide_after(void) {
    uint64_t r = bench_resizes() - BS.r0, live = BS.cur == SL_MALLOC ? 0 : BENCH_TRK_LIVE;
    if (r > BS.resizes[BS.cur]) BS.resizes[BS.cur] = r;
    if (memobs_get_allocations(NULL, 0) != live) BS.bad++;
    bench_slide_drain(bench_slide_of(BS.cur));
    if (memobs_get_allocations(NULL, 0) != 0) BS.bad++;
}

static void bench_slide_run(void) {
    static const char *const name[SL_COUNT] = {"malloc(256) + free, no memobs", "MEMOBS_MEM_HOST pair",
                                               "MEMOBS_MEM_DEVICE pair (default history)"};
    static const bench_loop_fn fn[SL_COUNT] = {bench_loop_slide_malloc, bench_loop_slide_host, bench_loop_slide_dev};
    const bench_fig_t *h = &BS.fig[SL_HOST], *m = &BS.fig[SL_MALLOC];
    int k, r;
    for (k = 0; k < SL_COUNT; k++) {
        bench_fig_t *f = &BS.fig[k];
        f->fn = fn[k];
        f->arg = bench_slide_of(k);
        f->n = B.trk_iters;
        f->nthreads = 1;
        f->before = bench_slide_before;
        f->after = bench_slide_after;
    }
    pthread_barrier_destroy(&B.start);
    pthread_barrier_destroy(&B.done);
    bench_workers_start();
    for (r = 0; r <= B.reps; r++)
        for (k = 0; k < SL_COUNT; k++) {
            BS.cur = k;
            BS.fig[k].arg = bench_slide_of(k);
            bench_rep(&BS.fig[k], r == 0);
        }
    bench_workers_stop();
    printf("\nsliding working set (issue 40): %d live blocks %d bytes apart slide through %d addresses (%d granules "
           "of 64 KiB), one thread, %llu pairs a run; best and median of %d runs\n", BENCH_TRK_LIVE,
           BENCH_SLIDE_BYTES, BENCH_SLIDE_POOL, BENCH_SLIDE_POOL * BENCH_SLIDE_BYTES / 65536,
           (unsigned long long)B.trk_iters, B.reps);
    printf("  %-*s %8s %7s  %13s  %13s  %s\n", BENCH_TRK_W, "pair", "best ns", "median", "x host pair",
           "x malloc+free", "resizes in loop");
    printf("  %-*s %8s %7s  %6s %6s  %6s %6s  %s\n", BENCH_TRK_W, "", "", "", "best", "median", "best", "median",
           "(most in a run)");
    for (k = 0; k < SL_COUNT; k++) {
        const bench_fig_t *f = &BS.fig[k];
        double md = bench_median_of(f);
        char rz[24] = "-";
        if (k != SL_MALLOC) snprintf(rz, sizeof rz, "%llu", (unsigned long long)BS.resizes[k]);
        printf("  %-*s %7.1f  %7.1f  %5.2fx %5.2fx  %5.2fx %5.2fx  %s\n", BENCH_TRK_W, name[k], f->ns, md,
               f->ns / h->ns, md / bench_median_of(h), f->ns / m->ns, md / bench_median_of(m), rz);
    }
    printf("  (device pair: device %d, whose snapshot history is as the defaults make it; each run starts with the set "
           "filled and taken once through the pool, untimed; table exact after every loop and drain: %s)\n",
           BENCH_SLIDE_DEV, BS.bad ? "NO" : "yes");
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

int main(void) {
    static const int scaling_figs[] = {F_PLAIN, F_PLAIN2, F_REC, F_REC2, F_T_TRACK, F_T_TRACK2,
                                       F_TICKS, F_TICKS2, F_TL, F_TL2};
    char cpu[128], load[64];
    int r, i, k;

    B.iters = bench_env_u64("BENCH_ITERS", 20000000u, 1000u, (uint64_t)1 << 40);
    B.reps = (int)bench_env_u64("BENCH_REPS", 7, 1, 1000);
    B.trk_iters = B.iters / BENCH_TRK_DIV ? B.iters / BENCH_TRK_DIV : 1;
    B.trk_iters2 = B.trk_iters / BENCH_CONTENDED_DIV ? B.trk_iters / BENCH_CONTENDED_DIV : 1;
    B.trk_stack_iters = B.iters / BENCH_TRK_STACK_DIV ? B.iters / BENCH_TRK_STACK_DIV : 1;
    B.trk_fp_iters = B.iters / BENCH_TRK_FP_DIV ? B.iters / BENCH_TRK_FP_DIV : 1;
    B.trk_depth = -1;
    B.trk_fp_depth = -1;
    B.trk_fp_same = -1;
    bench_pick_cpus();
    memobs_set_enabled(1); /* whatever MEMOBS says in the environment */
    memobs_track_set_callstack(0); /* whatever MEMOBS_CALLSTACK says: no stack unless a figure asks */
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE); /* and whatever MEMOBS_UNWIND says */
    memobs_reset();
    (void)memobs_torch_history_stop(); /* whatever MEMOBS_TORCH_SNAPSHOT says: off but for the history-on figures */
    B.counter = memobs_counter_register("bench_counter", "bench: memobs_counter_add figure");
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);

    printf("memobs %s bench: %s; compiler %s, %s\n", MEMOBS_VERSION, cpu, __VERSION__, BENCH_CFLAGS_STR);
    printf("each figure: best of %d runs of %llu iterations (tracker: see its table), in interleaved rounds after a "
           "warm-up round\n", B.reps, (unsigned long long)B.iters);
    if (B.ncpu >= 2) printf("1-thread figures pinned to cpu %d, 2-thread figures to cpus %d and %d\n", B.cpu[0],
                            B.cpu[0], B.cpu[1]);
    else printf("only one cpu allowed: the two threads of 2-thread figures share it\n");
    printf("every iteration: bytes = i & 0xff, the body, an empty asm memory barrier (nothing hoisted or merged)\n");
    printf("load average before the run: %s\n", load);

    for (k = 0; k < 3; k++) bench_so_open(&B.so[k]);
    bench_figs_init();
    bench_workers_start();
    for (r = 0; r <= B.reps; r++)
        for (i = 0; i < F_COUNT; i++) bench_rep(&B.fig[i], r == 0);
    while ((B.fig[F_PLAIN2].ns == 0 || bench_scaling(F_PLAIN, F_PLAIN2) < BENCH_QUIET_SCALING) &&
           B.extra_rounds < BENCH_EXTRA_ROUNDS) {
        usleep(200000);
        B.extra_rounds++;
        for (i = 0; i < (int)(sizeof scaling_figs / sizeof scaling_figs[0]); i++)
            bench_rep(&B.fig[scaling_figs[i]], 0);
    }
    bench_workers_stop();
    /* A figure with no counted run: the best of the others, said below. */
    for (i = 0; i < F_COUNT; i++)
        if (B.fig[i].ns == 0 && B.fig[i].ns_off > 0) {
            B.fig[i].ns = B.fig[i].ns_off;
            B.fig[i].uncounted = 1;
            B.uncounted_only++;
        }
    bench_report();
    bench_slide_run();
    bench_prom_figure();
    bench_sample_figure();
    return 0;
}
