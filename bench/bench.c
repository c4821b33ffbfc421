/* bench.c - `make bench`: what a memobs record costs, enabled and disabled,
   in an executable and in a dlopen()ed .so, side by side with the baselines
   it competes with, in one run. Prints a table, then the targets (reported,
   never asserted), then whether the summary totals equal the records made.

   Method: every figure is a BENCH_LOOP (bench.h) of BENCH_ITERS iterations
   (default 20M), timed with memobs_now_ns() (CLOCK_MONOTONIC) and run by
   two worker threads pinned to the first two allowed cpus: 1-thread figures
   on the first, 2-thread figures on both at once (each its own loop,
   released by one barrier, timed from the first start to the last end).
   The figures are run in rounds, one run of each per round, so that a busy
   moment on a shared machine spoils one run of every figure rather than
   every run of one; round 0 warms up, and the best of BENCH_REPS rounds
   (default 7) is kept. */
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

/* ======================================================================== */
/* State                                                                    */
/* ======================================================================== */

/* Records one memobs instance (the executable's, or one .so's) should hold. */
typedef struct { uint64_t count, bytes; } bench_expect_t;

typedef struct {
    bench_loop_fn fn; /* NULL: not run (a .so that did not load) */
    const void *arg;
    uint64_t n;
    int nthreads;
    void (*before)(void), (*after)(void); /* on the first worker, outside the timing */
    bench_expect_t *expect;               /* where its records land; NULL: none */
    double ns;                            /* best run: wall ns / n, i.e. per op per thread */
} bench_fig_t;

enum {
    F_PLAIN, F_PLAIN2, F_ATOMIC, F_ATOMIC2,
    F_REC, F_REC2, F_CUR, F_COUNTER, F_RT_OFF, F_CT_OFF,
    F_SO, /* then plain, record for each .so */
    F_COUNT = F_SO + 2 * 3
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
    /* Workers: main posts a figure, both pass `start`, run, pass `done`. */
    pthread_t th[2];
    pthread_barrier_t start, done;
    const bench_fig_t *job; /* NULL: quit */
    uint64_t t0[2], t1[2];
} B __attribute__((aligned(64))) = {
    .so = {{.file = "libmemobs_bench_default.so"}, {.file = "libmemobs_bench_gnu2.so"},
           {.file = "libmemobs_bench_ie.so"}}};

/* ======================================================================== */
/* Timing                                                                   */
/* ======================================================================== */

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
            B.t0[id] = memobs_now_ns();
            f->fn(f->n, f->arg);
            B.t1[id] = memobs_now_ns();
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

/* The one timing helper: one run of figure f on its worker(s); keeps the
   best wall time unless this is a warm-up, and books the records made. */
static void bench_rep(bench_fig_t *f, int warmup) {
    uint64_t start, end;
    double ns;
    if (!f->fn) return;
    B.job = f;
    pthread_barrier_wait(&B.start);
    pthread_barrier_wait(&B.done);
    start = B.t0[0];
    end = B.t1[0];
    if (f->nthreads == 2) {
        if (B.t0[1] < start) start = B.t0[1];
        if (B.t1[1] > end) end = B.t1[1];
    }
    ns = (double)(end - start) / (double)f->n;
    if (!warmup && (f->ns == 0 || ns < f->ns)) f->ns = ns;
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

/* ======================================================================== */
/* Set-up                                                                   */
/* ======================================================================== */

static void bench_phase_decode(void) { memobs_set_phase(MEMOBS_PHASE_DECODE); }
static void bench_phase_none(void) { memobs_set_phase(MEMOBS_PHASE_NONE); }
static void bench_memobs_off(void) { memobs_enable(0); }
static void bench_memobs_on(void) { memobs_enable(1); }

static void bench_fig(int i, bench_loop_fn fn, const void *arg, int nthreads, bench_expect_t *expect) {
    bench_fig_t *f = &B.fig[i];
    f->fn = fn;
    f->arg = arg;
    f->n = B.iters;
    f->nthreads = nthreads;
    f->expect = expect;
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
    void (*enable)(int);
    so->h = dlopen(so->file, RTLD_NOW | RTLD_LOCAL);
    if (!so->h) {
        printf("(%s not loaded: %s)\n", so->file, dlerror());
        return;
    }
    so->record.fn = (void (*)(uint64_t))dlsym(so->h, "bench_so_record");
    so->plain.fn = (void (*)(uint64_t))dlsym(so->h, "bench_so_plain");
    so->get_summary = (void (*)(memobs_summary_t *))dlsym(so->h, "memobs_get_summary");
    enable = (void (*)(int))dlsym(so->h, "memobs_enable");
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
    printf("  %-*s %7.2f  %-13s %-13s %-13s %s\n", BENCH_NAME_W, name, ns, a, b, c, note);
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
    bench_row("MEMOBS_RECORD_H2D enabled, 1 thread", F_REC, 1, "");
    snprintf(note, sizeof note, "per thread; throughput 2T/1T %.2fx", rec_scaling);
    bench_row("MEMOBS_RECORD_H2D enabled, 2 threads", F_REC2, 1, note);
    bench_row("MEMOBS_RECORD_H2D_CUR (phase from TLS)", F_CUR, 1, "");
    bench_row("memobs_counter_add(handle, n)", F_COUNTER, 1, "");
    bench_row("MEMOBS_RECORD_H2D runtime-disabled", F_RT_OFF, 1, "memobs_enable(0): a load and a branch");
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
    if (B.extra_rounds)
        printf("  (the machine was busy: %d extra round%s for the 2-thread figures and their 1-thread peers)\n",
               B.extra_rounds, B.extra_rounds == 1 ? "" : "s");

    printf("\ntargets (reported, not asserted)\n");
    bench_target("enabled, 1 thread: <= 2 ns/record", B.fig[F_REC].ns, " ns", B.fig[F_REC].ns <= 2.0);
    bench_target("enabled: >= 2.5x cheaper than a relaxed atomic add", atomic_cheaper, "x", atomic_cheaper >= 2.5);
    bench_target("enabled, 2 threads: >= 1.8x the throughput of 1", rec_scaling, "x", rec_scaling >= 1.8);
    if (bench_scaling(F_PLAIN, F_PLAIN2) < 1.8)
        printf("    (but plain adds on private lines scaled only %.2fx: the machine was busy)\n",
               bench_scaling(F_PLAIN, F_PLAIN2));
    bench_target("runtime-disabled: <= 1 ns/record", B.fig[F_RT_OFF].ns, " ns", B.fig[F_RT_OFF].ns <= 1.0);
    printf("\n");
    bench_check_totals();
}

/* ======================================================================== */
/* Main                                                                     */
/* ======================================================================== */

int main(void) {
    static const int scaling_figs[] = {F_PLAIN, F_PLAIN2, F_REC, F_REC2};
    char cpu[128], load[64];
    int r, i, k;

    B.iters = bench_env_u64("BENCH_ITERS", 20000000u, 1000u, (uint64_t)1 << 40);
    B.reps = (int)bench_env_u64("BENCH_REPS", 7, 1, 1000);
    bench_pick_cpus();
    memobs_enable(1); /* whatever MEMOBS says in the environment */
    memobs_reset();
    B.counter = memobs_counter_register("bench_counter", "bench: memobs_counter_add figure");
    bench_cpu_model(cpu, sizeof cpu);
    bench_loadavg(load, sizeof load);

    printf("memobs %s bench: %s; compiler %s, %s\n", MEMOBS_VERSION, cpu, __VERSION__, BENCH_CFLAGS_STR);
    printf("each figure: best of %d runs of %llu iterations, in interleaved rounds after a warm-up round\n", B.reps,
           (unsigned long long)B.iters);
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
    while (bench_scaling(F_PLAIN, F_PLAIN2) < BENCH_QUIET_SCALING && B.extra_rounds < BENCH_EXTRA_ROUNDS) {
        usleep(200000);
        B.extra_rounds++;
        for (i = 0; i < (int)(sizeof scaling_figs / sizeof scaling_figs[0]); i++)
            bench_rep(&B.fig[scaling_figs[i]], 0);
    }
    bench_workers_stop();
    bench_report();
    return 0;
}
