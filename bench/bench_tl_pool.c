/* bench_tl_pool.c - a model of the timeline's pool without memobs (make
   bench-tl-pool): what a record costs on 2 threads over 1 comes from the
   pool's shape, not from memobs' code. Each op is what a record does to
   the pool: a clock read (rdtsc) and one 48-byte slot written with its
   sequence number, release stores as memobs' push. A thread writes 256
   slots (a chunk) and then takes another, four ways:

     shared queue, any thread's   memobs' pool: the oldest finished chunk of
                                  any thread, under one spin lock
     shared lock, own chunks      the same lock, each thread its own queue
     own chunks, no lock          each thread its own queue, no lock
     adjacent chunks, no lock     each thread's next chunk right after its
                                  last (what one thread alone gets from
                                  the shared queue)

   256 chunks of 256 slots (the default 65,536 events). Prints, for each,
   ns per op on 1 thread and per thread on 2 (best of BENCH_POOL_REPS
   interleaved rounds of 20M ops per thread), the difference and the
   2-thread throughput. x86-64 only (rdtsc), Linux (sched_setaffinity). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#define POOL_CHUNKS 256
#define POOL_SLOTS 256
#define POOL_OPS 20000000L

typedef struct {
    uint64_t seq, ts, a, b, c, meta;
} pool_slot_t;

enum { POOL_SHARED, POOL_LOCK_OWN, POOL_OWN, POOL_ADJACENT, POOL_WAYS };
static const char *const pool_names[POOL_WAYS] = {"shared queue, any thread's chunk", "shared lock, own chunks",
                                                  "own chunks, no lock", "adjacent chunks, no lock"};

static struct {
    pool_slot_t *slot;
    int way, nthreads, cpu[2];
    uint32_t lock;
    uint32_t q[3][POOL_CHUNKS]; /* [0]: the shared queue; [1 + t]: thread t's own */
    uint64_t head[3], tail[3];
    double ns[2];
} P;

static double pool_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Thread t's chunk after chunk old. */
static uint32_t pool_take(int t, uint32_t old) {
    int q = P.way == POOL_SHARED ? 0 : 1 + t, locked = P.way == POOL_SHARED || P.way == POOL_LOCK_OWN;
    uint32_t k, half = POOL_CHUNKS / (uint32_t)P.nthreads;
    if (P.way == POOL_ADJACENT) return (uint32_t)t * half + (old - (uint32_t)t * half + 1) % half;
    if (locked)
        while (__atomic_exchange_n(&P.lock, 1u, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
    P.q[q][P.tail[q]++ % POOL_CHUNKS] = old;
    k = P.q[q][P.head[q]++ % POOL_CHUNKS];
    if (locked) __atomic_store_n(&P.lock, 0u, __ATOMIC_RELEASE);
    return k;
}

static void *pool_worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint32_t k = P.way == POOL_ADJACENT ? (uint32_t)t * (POOL_CHUNKS / (uint32_t)P.nthreads) : (uint32_t)t, i = 0;
    cpu_set_t set;
    double t0;
    long n;
    CPU_ZERO(&set);
    CPU_SET(P.cpu[t], &set);
    (void)sched_setaffinity(0, sizeof set, &set);
    t0 = pool_now();
    for (n = 0; n < POOL_OPS; n++) {
        pool_slot_t *s = &P.slot[(size_t)k * POOL_SLOTS + i];
        uint64_t ts = __rdtsc();
        __atomic_store_n(&s->seq, 2u * i + 1u, __ATOMIC_RELAXED);
        __atomic_store_n(&s->ts, ts, __ATOMIC_RELEASE);
        __atomic_store_n(&s->a, (uint64_t)n, __ATOMIC_RELEASE);
        __atomic_store_n(&s->b, 0u, __ATOMIC_RELEASE);
        __atomic_store_n(&s->c, 0u, __ATOMIC_RELEASE);
        __atomic_store_n(&s->meta, 7u, __ATOMIC_RELEASE);
        __atomic_store_n(&s->seq, 2u * i + 2u, __ATOMIC_RELEASE);
        if (++i == POOL_SLOTS) {
            k = pool_take(t, k);
            i = 0;
        }
        __asm__ __volatile__("" ::: "memory");
    }
    P.ns[t] = (pool_now() - t0) / (double)POOL_OPS;
    return NULL;
}

/* One run: the chunks the threads do not start with are queued. */
static double pool_run(int way, int nthreads) {
    pthread_t th[2];
    uint32_t c;
    int t;
    P.way = way;
    P.nthreads = nthreads;
    memset(P.head, 0, sizeof P.head);
    memset(P.tail, 0, sizeof P.tail);
    for (c = (uint32_t)nthreads; c < POOL_CHUNKS; c++) {
        int q = way == POOL_SHARED ? 0 : 1 + (int)(c % (uint32_t)nthreads);
        P.q[q][P.tail[q]++ % POOL_CHUNKS] = c;
    }
    for (t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, pool_worker, (void *)(intptr_t)t);
    for (t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    return nthreads == 2 && P.ns[1] > P.ns[0] ? P.ns[1] : P.ns[0];
}

int main(void) {
    double best[POOL_WAYS][2];
    const char *r = getenv("BENCH_POOL_REPS");
    int reps = r && atoi(r) > 0 ? atoi(r) : 5, rep, w, n, c, ncpu = 0;
    cpu_set_t set;
    P.slot = (pool_slot_t *)aligned_alloc(64, (size_t)POOL_CHUNKS * POOL_SLOTS * sizeof(pool_slot_t));
    if (!P.slot) return 1;
    memset(P.slot, 0, (size_t)POOL_CHUNKS * POOL_SLOTS * sizeof(pool_slot_t));
    P.cpu[0] = 0;
    P.cpu[1] = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (c = 0; c < CPU_SETSIZE && ncpu < 2; c++)
            if (CPU_ISSET(c, &set)) P.cpu[ncpu++] = c;
    for (w = 0; w < POOL_WAYS; w++) best[w][0] = best[w][1] = 1e30;
    for (rep = 0; rep < reps; rep++)
        for (w = 0; w < POOL_WAYS; w++)
            for (n = 1; n <= 2; n++) {
                double ns = pool_run(w, n);
                if (ns < best[w][n - 1]) best[w][n - 1] = ns;
            }
    printf("the timeline's pool, modelled without memobs (a clock read and a 48-byte slot per op, a take every 256): "
           "ns per op, best of %d rounds, cpus %d and %d\n", reps, P.cpu[0], P.cpu[1]);
    printf("  %-36s %9s %13s %9s %12s\n", "next chunk", "1 thread", "2 threads", "2T - 1T", "2T/1T thrput");
    for (w = 0; w < POOL_WAYS; w++)
        printf("  %-36s %9.2f %13.2f %+9.2f %11.2fx\n", pool_names[w], best[w][0], best[w][1], best[w][1] - best[w][0],
               2.0 * best[w][0] / best[w][1]);
    free(P.slot);
    return 0;
}
