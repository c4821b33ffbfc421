/* Tests of the timeline's clock (memobs_ticks, memobs_ticks_to_ns): run by
   tests/outputs/test_timeline.sh as C99 and under TSan, with MEMOBS_CLOCK unset
   (the TSC where the kernel vouches for it), =monotonic (clock_gettime)
   and =tsc, and built with the kernel's files pointed at files the script
   writes (MEMOBS__CLOCKSOURCE_PATH, MEMOBS__CPUINFO_PATH).

   Without arguments: the in-process tests (monotonic conversion; within
   0.1% of CLOCK_MONOTONIC over a second; the fallback's identity). With
   "source": prints the source and the reason, for the script. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

#ifndef TEST_SUITE
#define TEST_SUITE "clock"
#endif

/* A tick reading and CLOCK_MONOTONIC read between two ticks close together
   (retried while the thread was preempted between them). */
static void pair(uint64_t *t, uint64_t *n) {
    int i;
    for (i = 0; i < 1000; i++) {
        uint64_t a = memobs_ticks(), m = memobs_now_ns(), b = memobs_ticks();
        *t = a + (b - a) / 2;
        *n = m;
        if (memobs_ticks_to_ns(b) - memobs_ticks_to_ns(a) < 20000) return; /* 20 us */
    }
}

/* Successive readings convert to non-decreasing times, across the
   refinements that conversions make (at most one a second). */
static void test_monotonic(void) {
    uint64_t prev = 0, now, t, bad = 0, start = memobs_now_ns();
    unsigned i;
    for (i = 0; i < 300000 || memobs_now_ns() - start < 1200000000u; i++) {
        t = memobs_ticks();
        now = memobs_ticks_to_ns(t);
        if (now < prev) bad++;
        prev = now;
        if (i % 1024 == 0) sched_yield();
    }
    CHECK_U64(0, bad);
}

/* Over a second: the converted span within 0.1% of CLOCK_MONOTONIC's, and
   the converted time within 0.1 ms of CLOCK_MONOTONIC's at both ends. */
static void test_against_monotonic(void) {
    uint64_t t1, n1, t2, n2, c1, c2, dc, dn, err;
    struct timespec ts = {0, 50000000};
    pair(&t1, &n1);
    while (memobs_now_ns() - n1 < 1000000000u) nanosleep(&ts, NULL);
    pair(&t2, &n2);
    c1 = memobs_ticks_to_ns(t1);
    c2 = memobs_ticks_to_ns(t2);
    dc = c2 - c1;
    dn = n2 - n1;
    err = dc > dn ? dc - dn : dn - dc;
    if (err * 1000 > dn) printf("    # span: converted %llu ns, CLOCK_MONOTONIC %llu ns\n", (unsigned long long)dc,
                                (unsigned long long)dn);
    CHECK(err * 1000 <= dn);
    CHECK(c1 > n1 ? c1 - n1 <= 100000 : n1 - c1 <= 100000);
    CHECK(c2 > n2 ? c2 - n2 <= 100000 : n2 - c2 <= 100000);
    CHECK(memobs_clock_ns_per_tick() > 0.0);
}

/* clock_gettime ticks: a tick is CLOCK_MONOTONIC's ns, converted as is. */
static void test_fallback_identity(void) {
    uint64_t a, t, b;
    if (strcmp(memobs_clock_source(), "clock_gettime") != 0) return;
    a = memobs_now_ns();
    t = memobs_ticks();
    b = memobs_now_ns();
    CHECK(a <= t && t <= b);
    CHECK_U64(t, memobs_ticks_to_ns(t));
    CHECK(memobs_clock_ns_per_tick() == 1.0);
}

int main(int argc, char **argv) {
    check__suite = TEST_SUITE;
    if (argc > 1 && !strcmp(argv[1], "source")) {
        printf("%s: %s\n", memobs_clock_source(), memobs_clock_reason());
        return 0;
    }
    RUN(test_monotonic);
    RUN(test_against_monotonic);
    RUN(test_fallback_identity);
    return CHECK_DONE();
}
