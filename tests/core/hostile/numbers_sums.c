/* tests/core/hostile/numbers_sums.c (tests/core/test_hostile_numbers.sh): one
   thread's sums saturate as the sums over threads do (issue 38, item 16).
   numbers_sums MODE DIR: one, threads or track; prints "ok"/"not ok"
   lines, then writes DIR/MODE.json (the JSON summary) and DIR/MODE.prom
   (the Prometheus exposition) for the script's checks. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG MEMOBS_MAX_BYTES /* 2^56: the largest record */
#define SAT UINT64_MAX

static int failed;

static void check(const char *what, uint64_t want, uint64_t got) {
    if (want == got) {
        printf("ok - hostile-numbers: %s\n", what);
    } else {
        printf("not ok - hostile-numbers: %s\n    # expected %llu, got %llu\n", what, (unsigned long long)want,
               (unsigned long long)got);
        failed = 1;
    }
}

static void check_true(const char *what, int ok, uint64_t a, uint64_t b) {
    if (ok) {
        printf("ok - hostile-numbers: %s\n", what);
    } else {
        printf("not ok - hostile-numbers: %s\n    # values %llu, %llu\n", what, (unsigned long long)a,
               (unsigned long long)b);
        failed = 1;
    }
}

static void write_outputs(const char *dir, const char *mode) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", dir, mode);
    if (memobs_write_summary_file(path, MEMOBS_FORMAT_JSON) != MEMOBS_OK) failed = 1;
    snprintf(path, sizeof path, "%s/%s.prom", dir, mode);
    if (memobs_write_prometheus_file(path) != MEMOBS_OK) failed = 1;
}

static void one(void) {
    memobs_summary_t s;
    int i;
    for (i = 0; i < 255; i++) MEMOBS_RECORD_H2D(BIG, 1);
    memobs_get_summary(&s);
    check("one thread, 255 x 2^56 (below 2^64): exact", 255 * BIG, s.total.h2d.bytes);
    MEMOBS_RECORD_H2D(BIG, 1);
    memobs_get_summary(&s);
    check("one thread, 256 x 2^56 (2^64): saturated", SAT, s.total.h2d.bytes);
    for (i = 256; i < 300; i++) MEMOBS_RECORD_H2D(BIG, 1);
    memobs_get_summary(&s);
    check("one thread, 300 x 2^56: h2d bytes saturated", SAT, s.total.h2d.bytes);
    check("one thread, 300 x 2^56: prefill h2d bytes saturated", SAT, s.prefill.h2d.bytes);
    check("one thread, 300 x 2^56: h2d count exact", 300, s.total.h2d.count);
    check("one thread, 300 x 2^56: the size distribution's bytes saturated", SAT, s.sizes[MEMOBS_DIR_H2D].bytes);
    /* mixed sizes across the wrap: 2^56 - 1 and 2^55 + 1 (slots 56 and 56) */
    for (i = 0; i < 200; i++) MEMOBS_RECORD_D2H(BIG - 1, 0);
    for (i = 0; i < 100; i++) MEMOBS_RECORD_D2H((BIG >> 1) + 1, 0);
    memobs_get_summary(&s);
    check("one thread, 200 x (2^56-1) + 100 x (2^55+1) (below 2^64, slot 56 alone): exact", 250 * BIG - 100,
          s.decode.d2h.bytes);
    for (i = 0; i < 100; i++) MEMOBS_RECORD_D2H((BIG >> 1) + 1, 0);
    memobs_get_summary(&s);
    check("one thread, then 100 more x (2^55+1) (past 2^64): saturated", SAT, s.decode.d2h.bytes);
    for (i = 0; i < 250; i++) MEMOBS_RECORD_D2D(BIG, 0);
    for (i = 0; i < 1000; i++) MEMOBS_RECORD_D2D(4096, 0);
    memobs_get_summary(&s);
    check("one thread, 250 x 2^56 + 1000 x 4096 (below 2^64): exact", 250 * BIG + 4096000u, s.total.d2d.bytes);
    {
        memobs_counter_t c = memobs_counter_register("numbers_big", NULL);
        for (i = 0; i < 255; i++) memobs_counter_add(c, BIG);
        memobs_get_summary(&s);
        check("one thread's counter, 255 adds of 2^56: exact", 255 * BIG, s.counters[c].value);
        for (i = 255; i < 300; i++) memobs_counter_add(c, BIG);
        memobs_get_summary(&s);
        check("one thread's counter, 300 adds of 2^56: saturated", SAT, s.counters[c].value);
        memobs_counter_add(c, 5);
        memobs_get_summary(&s);
        check("a saturated counter stays saturated", SAT, s.counters[c].value);
    }
    /* a new window on a wrapped shard: only the window's records */
    memobs_reset();
    for (i = 0; i < 10; i++) MEMOBS_RECORD_H2D(BIG, 1);
    memobs_get_summary(&s);
    check("after memobs_reset, 10 x 2^56 on the wrapped shard: exact", 10 * BIG, s.total.h2d.bytes);
    for (i = 10; i < 300; i++) MEMOBS_RECORD_H2D(BIG, 1);
    memobs_get_summary(&s);
    check("after memobs_reset, 300 x 2^56: saturated again", SAT, s.total.h2d.bytes);
}

static void *worker(void *arg) {
    int i, n = *(const int *)arg;
    for (i = 0; i < n; i++) MEMOBS_RECORD_H2D(BIG, 1);
    for (i = 0; i < 50; i++) MEMOBS_RECORD_D2H(BIG, 1);
    return NULL;
}

static void threads(void) {
    memobs_summary_t s;
    pthread_t th[4];
    int i, n = 300;
    for (i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, &n);
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    memobs_get_summary(&s);
    check("4 threads, each 300 x 2^56: h2d bytes saturated", SAT, s.total.h2d.bytes);
    check("4 threads, each 300 x 2^56: h2d count exact", 1200, s.total.h2d.count);
    check("4 threads, each 50 x 2^56 (200 x 2^56 in all, below 2^64): d2h exact", 200 * BIG, s.total.d2h.bytes);
}

static void track(void) {
    memobs_summary_t s;
    uint64_t cur, max = 0, i;
    int ok_order = 1, ok_sum = 1;
    uint64_t bad_cur = 0, bad_max = 0;
    char *base = (char *)malloc(1);
    for (i = 0; i < 300; i++) {
        memobs_track_alloc_full(base + 64 * (i + 1), BIG, MEMOBS_MEM_DEVICE, 0, NULL, NULL, 0);
        cur = memobs_get_device_bytes(0, &max);
        memobs_get_summary(&s);
        if (cur > max || s.mem[MEMOBS_MEM_DEVICE].current_bytes > s.mem[MEMOBS_MEM_DEVICE].peak_bytes) {
            if (ok_order) bad_cur = cur, bad_max = max;
            ok_order = 0;
        }
        if (i < 16 && (cur != (i + 1) * BIG || s.mem[MEMOBS_MEM_DEVICE].current_bytes != (i + 1) * BIG)) ok_sum = 0;
    }
    check_true("300 tracked device allocations of 2^56: current <= peak after each", ok_order, bad_cur, bad_max);
    check_true("the first 16 (up to 2^60): current exact", ok_sum, 0, 0);
    memobs_get_summary(&s);
    check("300 x 2^56 tracked: device current saturated", SAT, s.mem[MEMOBS_MEM_DEVICE].current_bytes);
    check("300 x 2^56 tracked: device peak saturated", SAT, s.mem[MEMOBS_MEM_DEVICE].peak_bytes);
    check("300 x 2^56 tracked: alloc bytes saturated (one thread)", SAT, s.mem[MEMOBS_MEM_DEVICE].alloc_bytes);
    check("300 x 2^56 tracked: live exact", 300, s.mem[MEMOBS_MEM_DEVICE].live);
    cur = memobs_get_device_bytes(0, &max);
    check("memobs_get_device_bytes(0): current saturated", SAT, cur);
    check("memobs_get_device_bytes(0): maximum saturated", SAT, max);
    for (i = 0; i < 300; i += 2) MEMOBS_TRACK_FREE(base + 64 * (i + 1));
    memobs_get_summary(&s);
    cur = memobs_get_device_bytes(0, &max);
    check_true("after 150 frees: current <= peak (still saturated: what is live is unknown)",
               s.mem[MEMOBS_MEM_DEVICE].current_bytes <= s.mem[MEMOBS_MEM_DEVICE].peak_bytes && cur <= max,
               s.mem[MEMOBS_MEM_DEVICE].current_bytes, s.mem[MEMOBS_MEM_DEVICE].peak_bytes);
    check("after 150 frees: live exact", 150, s.mem[MEMOBS_MEM_DEVICE].live);
    /* another kind stays exact */
    for (i = 0; i < 15; i++) MEMOBS_TRACK_ALLOC(base + 64 * (i + 1000), BIG, MEMOBS_MEM_HOST);
    for (i = 0; i < 15; i++) MEMOBS_TRACK_FREE(base + 64 * (i + 1000));
    memobs_get_summary(&s);
    check("host: 15 x 2^56 then freed: current 0", 0, s.mem[MEMOBS_MEM_HOST].current_bytes);
    check("host: peak 15 x 2^56 exact", 15 * BIG, s.mem[MEMOBS_MEM_HOST].peak_bytes);
    for (i = 1; i < 300; i += 2) MEMOBS_TRACK_FREE(base + 64 * (i + 1));
    free(base);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "one", *dir = argc > 2 ? argv[2] : ".";
    if (strcmp(mode, "one") == 0) one();
    else if (strcmp(mode, "threads") == 0) threads();
    else if (strcmp(mode, "track") == 0) track();
    else return 2;
    write_outputs(dir, mode);
    return failed;
}
