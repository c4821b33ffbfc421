/* bench_sizes.c - `make bench-sizes` (part of `make bench`): what the
   transfer-size distribution adds to a record. The same loop of
   MEMOBS_RECORD_H2D, sizes spread over 24 log2 buckets, built twice: here
   (the distribution on) and in bench_sizes_off.c (memobs.h's private
   MEMOBS__NO_XSIZE: the record as it was before it, two adds to fixed
   places). Rounds alternate
   between the two, on 1 and on 2 threads; the table gives ns per record,
   best and median of the rounds, and the difference. Afterwards every
   record is checked in the summary: all in the H2D totals, each bucket
   as the model. */
#define MEMOBS_IMPLEMENTATION
#include "../memobs.h"
#include "bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

BENCH_LOOP(bench_sizes_on_loop, MEMOBS_RECORD_H2D(bytes << (i & 15), 1))
BENCH_LOOP(bench_sizes_on_one, MEMOBS_RECORD_H2D(*(const uint64_t *)arg + (bytes & 0), 1))
void bench_sizes_off_loop(uint64_t n, const void *arg);
void bench_sizes_off_one(uint64_t n, const void *arg);

static const uint64_t one_size = 4096; /* read through a pointer: not a constant to the compiler */

#define ROUNDS 15
#define OPS 4000000ull

typedef struct {
    bench_loop_fn fn;
    const void *arg;
    uint64_t ns;
} job_t;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *worker(void *arg) {
    job_t *j = (job_t *)arg;
    uint64_t t0;
    j->fn(OPS / 8, j->arg); /* warm: the shard, the line */
    t0 = now_ns();
    j->fn(OPS, j->arg);
    j->ns = now_ns() - t0;
    return NULL;
}

/* ns per record of fn on nt threads (the slowest thread's time). */
static double run(bench_loop_fn fn, const void *arg, int nt) {
    pthread_t th[2];
    job_t j[2];
    uint64_t worst = 0;
    int k;
    for (k = 0; k < nt; k++) {
        j[k].fn = fn;
        j[k].arg = arg;
        pthread_create(&th[k], NULL, worker, &j[k]);
    }
    for (k = 0; k < nt; k++) {
        pthread_join(th[k], NULL);
        if (j[k].ns > worst) worst = j[k].ns;
    }
    return (double)worst / (double)OPS;
}

/* The bucket of a size, by doubling: the smallest b with 2^b >= bytes. */
static unsigned model_bucket(uint64_t bytes) {
    unsigned b = 0;
    while (((uint64_t)1 << b) < bytes) b++;
    return b;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    /* [pattern][threads - 1][round]: pattern 0 sizes over 24 buckets, 1 one size */
    static double on[2][2][ROUNDS], off[2][2][ROUNDS];
    static const bench_loop_fn fon[2] = {bench_sizes_on_loop, bench_sizes_on_one};
    static const bench_loop_fn foff[2] = {bench_sizes_off_loop, bench_sizes_off_one};
    static const char *const pname[2] = {"sizes over 24 log2 buckets", "one size (4 KiB blocks)"};
    uint64_t made_on = 0, made_off = 0, made_one = 0;
    memobs_summary_t *s = (memobs_summary_t *)malloc(sizeof *s);
    int r, t, q, bad = 0;
    if (!s) return 1;
    memobs_reset();
    for (r = 0; r < ROUNDS; r++)
        for (q = 0; q < 2; q++)
            for (t = 0; t < 2; t++) {
                const void *arg = q ? &one_size : NULL;
                if (r & 1) { /* alternate which goes first */
                    off[q][t][r] = run(foff[q], arg, t + 1);
                    on[q][t][r] = run(fon[q], arg, t + 1);
                } else {
                    on[q][t][r] = run(fon[q], arg, t + 1);
                    off[q][t][r] = run(foff[q], arg, t + 1);
                }
                if (q) made_one += (OPS + OPS / 8) * (uint64_t)(t + 1);
                else made_on += (OPS + OPS / 8) * (uint64_t)(t + 1);
                made_off += (OPS + OPS / 8) * (uint64_t)(t + 1);
            }
    printf("transfer sizes: a record (MEMOBS_RECORD_H2D) with the size distribution on vs before it, ns per record "
           "(%d rounds of %llu records each, alternating)\n", ROUNDS, OPS);
    printf("  %-46s %8s %8s\n", "", "best", "median");
    for (q = 0; q < 2; q++)
        for (t = 0; t < 2; t++) {
            double bo, mo, bf, mf;
            qsort(on[q][t], ROUNDS, sizeof(double), cmp);
            qsort(off[q][t], ROUNDS, sizeof(double), cmp);
            bo = on[q][t][0], mo = on[q][t][ROUNDS / 2], bf = off[q][t][0], mf = off[q][t][ROUNDS / 2];
            printf("  %s, %d thread%s:\n", pname[q], t + 1, t ? "s" : "");
            printf("    %-44s %8.2f %8.2f\n", "before (no distribution)", bf, mf);
            printf("    %-44s %8.2f %8.2f\n", "distribution on", bo, mo);
            printf("    %-44s %+8.2f %+8.2f   (x%.2f, x%.2f)\n", "added", bo - bf, mo - mf, bo / bf, mo / mf);
        }
    /* exactness: every record in the totals; the distribution-on ones in their buckets, the others (counted
       alone, the record before sizes) in bucket 0, as are every thread's first records (size 0) */
    memobs_get_summary(s);
    if (s->total.h2d.count != made_on + made_one + made_off) {
        printf("  MISMATCH: %llu H2D records in the summary, %llu made\n", (unsigned long long)s->total.h2d.count,
               (unsigned long long)(made_on + made_one + made_off));
        bad = 1;
    }
    {
        uint64_t want[MEMOBS_SIZE_BUCKETS], per[MEMOBS_SIZE_BUCKETS], passes[2] = {OPS / 8, OPS}, i;
        unsigned b;
        int p;
        memset(want, 0, sizeof want);
        for (p = 0; p < 2; p++) { /* a pass of n records holds sizes (i & 0xff) << (i & 15), i < n */
            memset(per, 0, sizeof per);
            for (i = 0; i < passes[p]; i++) per[model_bucket((i & 0xff) << (i & 15))]++;
            for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++) want[b] += per[b] * (uint64_t)ROUNDS * 3u;
        }
        /* the one-size "before" threads' first records took the out-of-line path: filed at 4096 */
        want[0] += made_off - ROUNDS * 3u;
        want[12] += made_one + ROUNDS * 3u; /* 4096: (2048, 4096] */
        for (b = 0; b < MEMOBS_SIZE_BUCKETS; b++)
            if (s->sizes[MEMOBS_DIR_H2D].buckets[b] != want[b]) {
                printf("  MISMATCH: bucket %u holds %llu, the model %llu\n", b,
                       (unsigned long long)s->sizes[MEMOBS_DIR_H2D].buckets[b], (unsigned long long)want[b]);
                bad = 1;
            }
    }
    printf("  exact: %llu records in the H2D totals, every bucket as the model%s\n",
           (unsigned long long)s->total.h2d.count,
           bad ? ": NO" : "");
    free(s);
    return bad;
}
