/* The timeline under thread churn: threads that record a few events and
   exit leave the rest of their chunk to the next thread, so the timeline
   fills with events however many threads come and go. Built as C99,
   C++17, ASan+UBSan and TSan by tests/core/test_churn.sh.

   Without arguments: the in-process tests. THREADS=N in the environment
   sets the number of short-lived threads of the big runs (default 100000).
   With "trace PATH": 20000 short-lived threads (each a copy record whose
   bytes number the thread, a region, a marker, a phase change) beside a
   long-lived recorder, then a trace written to PATH, which
   tests/python/churn_check.py reads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#ifndef TEST_SUITE
#define TEST_SUITE "churn"
#endif

static uint64_t nthreads = 100000;

static memobs_timeline_stats_t stats(void) {
    memobs_timeline_stats_t st;
    memobs_timeline_get_stats(&st);
    return st;
}

/* A short-lived thread: 3 events, the first a copy of (its number) bytes. */
static void *short_thread(void *arg) {
    uint64_t no = (uint64_t)(uintptr_t)arg;
    MEMOBS_RECORD_H2D(no, 1);
    MEMOBS_MARK("churn");
    MEMOBS_RECORD_D2H(no, 0);
    return NULL;
}

/* n threads, `batch` alive at a time, numbered from first. */
static void churn(uint64_t first, uint64_t n, unsigned batch) {
    pthread_t th[16];
    uint64_t i = 0;
    unsigned k, m;
    while (i < n) {
        for (m = 0; m < batch && i < n; m++, i++)
            if (pthread_create(&th[m], NULL, short_thread, (void *)(uintptr_t)(first + i)) != 0) {
                printf("    # pthread_create failed at thread %llu\n", (unsigned long long)i);
                return;
            }
        for (k = 0; k < m; k++) pthread_join(th[k], NULL);
    }
}

/* The per-thread rows add up to the totals. */
static void check_rows(const memobs_timeline_stats_t *st) {
    static memobs_timeline_thread_t rows[300];
    uint64_t rec = 0, kept = 0, drop = 0;
    size_t n = memobs_timeline_get_threads(rows, 300), i;
    CHECK(n <= 256);
    for (i = 0; i < n && i < 300; i++) {
        rec += rows[i].recorded;
        kept += rows[i].kept;
        drop += rows[i].dropped;
        CHECK_U64(rows[i].recorded, rows[i].kept + rows[i].dropped);
    }
    CHECK_U64(st->recorded, rec);
    CHECK_U64(st->kept, kept);
    CHECK_U64(st->dropped, drop);
}

/* A capacity (a power of two, at most max) that n threads of 3 events
   fill at least 1.5 times over. */
static uint64_t capacity_for(uint64_t n, uint64_t max) {
    uint64_t cap = max;
    while (cap > 64 && cap * 2 > 3 * n) cap /= 2;
    return cap;
}

/* 100k threads one after another, 3 events each, at the default capacity
   (65536 events, 64 chunks of 1024; smaller for fewer threads): the
   timeline is full but for the room left in the last thread's chunk. */
static void test_sequential(void) {
    memobs_timeline_stats_t st;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(capacity_for(nthreads, 65536)));
    churn(1, nthreads, 1);
    st = stats();
    CHECK_U64(3 * nthreads, st.recorded);
    CHECK_U64(st.recorded, st.kept + st.dropped);
    CHECK_U64(0, st.threads);
    CHECK(st.recorded >= st.capacity);
    if (st.recorded >= st.capacity) {
        CHECK(st.kept * 10 >= st.capacity * 9); /* the bar: 90% */
        CHECK(st.kept + st.chunk >= st.capacity); /* what this design gives: all but part of one chunk */
    }
    printf("    # %llu threads one at a time: %llu of %llu events kept (%.2f%%)\n", (unsigned long long)nthreads,
           (unsigned long long)st.kept, (unsigned long long)st.capacity, 100.0 * (double)st.kept / (double)st.capacity);
    check_rows(&st);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* 16 alive at a time: up to 16 chunks with room at once, continued by the
   next threads. */
static void test_batches(void) {
    memobs_timeline_stats_t st;
    uint64_t n = nthreads / 4;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(capacity_for(n, 16384))); /* 64 chunks of 256 */
    churn(1, n, 16);
    st = stats();
    CHECK_U64(3 * n, st.recorded);
    CHECK_U64(st.recorded, st.kept + st.dropped);
    CHECK(st.recorded >= st.capacity);
    if (st.recorded >= st.capacity) CHECK(st.kept * 10 >= st.capacity * 9);
    printf("    # %llu threads 16 at a time: %llu of %llu events kept (%.2f%%)\n", (unsigned long long)n,
           (unsigned long long)st.kept, (unsigned long long)st.capacity, 100.0 * (double)st.kept / (double)st.capacity);
    check_rows(&st);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* A long-lived thread records all along while short ones come and go:
   the long one's chunks and the short ones' shared chunks both fill; the
   per-thread counts stay exact. */
static int long_stop;
static uint64_t long_count;
static void *long_thread(void *arg) {
    uint64_t n = 0;
    (void)arg;
    while (!__atomic_load_n(&long_stop, __ATOMIC_ACQUIRE)) {
        MEMOBS_RECORD_D2D(7, 0);
        if (++n % 64 == 0) sched_yield();
    }
    __atomic_store_n(&long_count, n, __ATOMIC_RELEASE);
    return NULL;
}

static void test_beside_a_long_thread(void) {
    memobs_timeline_stats_t st;
    pthread_t th;
    uint64_t n = nthreads / 10, rec;
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(4096)); /* 64 chunks of 64 */
    __atomic_store_n(&long_stop, 0, __ATOMIC_RELEASE);
    CHECK_U64(0, (uint64_t)pthread_create(&th, NULL, long_thread, NULL));
    churn(1, n, 4);
    __atomic_store_n(&long_stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    st = stats();
    rec = 3 * n + __atomic_load_n(&long_count, __ATOMIC_ACQUIRE);
    CHECK_U64(rec, st.recorded);
    CHECK_U64(st.recorded, st.kept + st.dropped);
    if (st.recorded >= st.capacity) CHECK(st.kept * 10 >= st.capacity * 9);
    check_rows(&st);
    CHECK_U64(MEMOBS_OK, memobs_timeline_stop());
}

/* The scenario whose trace the checker reads. */
static int trace_scenario(const char *path) {
    pthread_t th;
    memobs_timeline_stats_t st;
    if (memobs_timeline_start(16384) != MEMOBS_OK) return 1;
    __atomic_store_n(&long_stop, 0, __ATOMIC_RELEASE);
    if (pthread_create(&th, NULL, long_thread, NULL) != 0) return 1;
    churn(1, 20000, 4);
    __atomic_store_n(&long_stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    churn(20001, 100, 1); /* the newest: 100 threads alone, one after another */
    st = stats();
    printf("recorded %llu kept %llu capacity %llu long %llu\n", (unsigned long long)st.recorded,
           (unsigned long long)st.kept, (unsigned long long)st.capacity,
           (unsigned long long)__atomic_load_n(&long_count, __ATOMIC_ACQUIRE));
    return memobs_write_timeline_file(path) != MEMOBS_OK;
}

int main(int argc, char **argv) {
    const char *s = getenv("THREADS");
    if (argc > 2 && strcmp(argv[1], "trace") == 0) return trace_scenario(argv[2]);
    if (s && atoll(s) > 0) nthreads = (uint64_t)atoll(s);
    check__suite = TEST_SUITE;
    RUN(test_sequential);
    RUN(test_batches);
    RUN(test_beside_a_long_thread);
    return CHECK_DONE();
}
