/* tests/core/hostile/numbers_ab.c: the cost of a record, a counter add and a
   tracked pair with the branch's starting memobs.h (A) and the current one
   (B), side by side in one run (issue 38, item 16). numbers_ab A.so B.so
   [rounds] [iters]: each round runs every figure of A and of B once (the
   order alternating round by round), pinned to one cpu; the table gives
   the best and the median of the rounds per figure, and B - A. The .so's
   are tests/core/hostile/numbers_ab_so.c built with each header (-O2 -fPIC
   -shared, as mk/bench.mk builds its .so's). Reported, never asserted. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*loop_fn)(uint64_t n, const void *arg);
enum { F_RECORD, F_RECORD_CUR, F_COUNTER, F_TRACK, F_TRACK_DEV, NF };
static const char *const fname[NF] = {"MEMOBS_RECORD_H2D", "MEMOBS_RECORD_H2D_CUR", "memobs_counter_add",
                                      "TRACK_FREE + TRACK_ALLOC (host)", "TRACK_FREE + TRACK_ALLOC (device 1)"};
static const char *const sym[NF] = {"ab_record", "ab_record_cur", "ab_counter", "ab_track", "ab_track_dev"};
static const uint64_t div_[NF] = {1, 1, 1, 20, 20};

typedef struct {
    loop_fn fn[NF];
    void (*fill)(int);
    void (*drain)(void);
} side_t;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int load(const char *path, side_t *s) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void (*init)(void);
    int i;
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return -1;
    }
    for (i = 0; i < NF; i++)
        if (!(s->fn[i] = (loop_fn)dlsym(h, sym[i]))) return -1;
    s->fill = (void (*)(int))dlsym(h, "ab_fill");
    s->drain = (void (*)(void))dlsym(h, "ab_drain");
    init = (void (*)(void))dlsym(h, "ab_init");
    if (!s->fill || !s->drain || !init) return -1;
    init();
    return 0;
}

static double run(side_t *s, int f, uint64_t iters) {
    uint64_t n = iters / div_[f], t0;
    if (f >= F_TRACK) s->fill(f == F_TRACK_DEV);
    s->fn[f](n / 8, NULL); /* warm */
    t0 = now_ns();
    s->fn[f](n, NULL);
    t0 = now_ns() - t0;
    if (f >= F_TRACK) s->drain();
    return (double)t0 / (double)n;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAXR 64
int main(int argc, char **argv) {
    side_t s[2];
    static double t[2][NF][MAXR];
    int rounds = argc > 3 ? atoi(argv[3]) : 15, r, f, k;
    uint64_t iters = argc > 4 ? strtoull(argv[4], NULL, 10) : 10000000ull;
    cpu_set_t cpus;
    if (argc < 3 || load(argv[1], &s[0]) || load(argv[2], &s[1])) {
        fprintf(stderr, "usage: numbers_ab A.so B.so [rounds] [iters]\n");
        return 2;
    }
    if (rounds > MAXR) rounds = MAXR;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    (void)sched_setaffinity(0, sizeof cpus, &cpus);
    for (f = 0; f < NF; f++) (void)run(&s[0], f, iters / 4), (void)run(&s[1], f, iters / 4);
    for (r = 0; r < rounds; r++)
        for (f = 0; f < NF; f++)
            for (k = 0; k < 2; k++) {
                int side = (r + k) & 1;
                t[side][f][r] = run(&s[side], f, iters);
            }
    printf("A: %s\nB: %s\n%d rounds of %llu iterations (tracked pairs: /20), A and B alternating, cpu 0\n", argv[1],
           argv[2], rounds, (unsigned long long)iters);
    printf("  %-40s %9s %9s %9s %9s %8s %8s\n", "ns per op", "A best", "B best", "A median", "B median", "B-A best",
           "B-A med");
    for (f = 0; f < NF; f++) {
        double a, b, am, bm;
        qsort(t[0][f], (size_t)rounds, sizeof(double), cmp);
        qsort(t[1][f], (size_t)rounds, sizeof(double), cmp);
        a = t[0][f][0], b = t[1][f][0], am = t[0][f][rounds / 2], bm = t[1][f][rounds / 2];
        printf("  %-40s %9.2f %9.2f %9.2f %9.2f %+8.2f %+8.2f\n", fname[f], a, b, am, bm, b - a, bm - am);
    }
    return 0;
}
