/* The Chrome trace's write limit (memobs_timeline_set_write_limit,
   MEMOBS_TIMELINE_WRITE_S): a write that would outlast it leaves out the
   oldest events so that the newest fit, or, once the limit has passed,
   stops adding events; the JSON stays valid and says what was left out.
   Built as C99, C++17, ASan+UBSan and TSan by tests/outputs/test_trace_write.sh.

   The write's clock is the test's (MEMOBS__TL_WRITE_NOW): each reading
   moves it by a step the scenario sets, so what is cut is exact whatever
   the machine's speed. The writer reads it once at its start (the
   deadline), once when it starts on the events, and then every 4096
   events (see memobs__tl_plan).

   Usage: test_trace_write SCENARIO PATH writes a trace of N copy records
   (bytes 1, 2, ... N, one thread, in time order) to PATH and prints
   "events N limit_ns L" for tests/python/trace_write_check.py:
     nolimit  no limit: every event
     plan     1 s a reading, limit 20 s: a rate of 2048 events/s leaves
              room for about 24k of 100k: the oldest 4096 (written while
              the rate was measured), a gap, the newest
     stop     limit 1 s, 2 s a reading: past the limit at the first look,
              no event written
     stall    1 ms a reading, then the clock jumps 1 h (a stalled disk)
              at the 10th look: the oldest 36864, then nothing
     real     the real clock, limit 1 ns: whatever happens, consistent
     exit     2 s a reading, the limit and the path from the environment
              (MEMOBS_TIMELINE_WRITE_S=1, MEMOBS_TIMELINE=PATH, MEMOBS_TIMELINE_EVENTS=128K): the trace
              written at exit, as "stop"
   and "env" prints the limit read from MEMOBS_TIMELINE_WRITE_S. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
static uint64_t test_wnow(void);
#define MEMOBS__TL_WRITE_NOW() test_wnow()
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull
#define SEC 1000000000ull
#define EVENTS 100000u

static int fake;         /* 0: CLOCK_MONOTONIC */
static uint64_t clk, step, reads, jump_at, jump;
static uint64_t test_wnow(void) {
    if (!fake) return memobs_now_ns();
    reads++;
    clk += step;
    if (jump_at && reads == jump_at) clk += jump;
    return clk;
}

int main(int argc, char **argv) {
    const char *sc = argc > 1 ? argv[1] : "";
    uint64_t i, limit = 20 * SEC;
    int rc;
    if (strcmp(sc, "env") == 0) {
        printf("limit %llu\n", (unsigned long long)memobs_timeline_get_write_limit());
        return 0;
    }
    if (strcmp(sc, "exit") == 0) {
        for (i = 1; i <= EVENTS; i++) MEMOBS_RECORD_H2D(i, 1);
        printf("events %u limit_ns %llu\n", EVENTS, (unsigned long long)memobs_timeline_get_write_limit());
        clk = 1000 * SEC;
        step = 2 * SEC;
        fake = 1;
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: test_trace_write nolimit|plan|stop|stall|real PATH, exit or env\n");
        return 2;
    }
    /* the setting: default, read, set, clamp */
    if (memobs_timeline_get_write_limit() != 20 * SEC || memobs_timeline_set_write_limit(5 * SEC) != 20 * SEC ||
        memobs_timeline_set_write_limit(UINT64_MAX - 1) != 5 * SEC ||
        memobs_timeline_get_write_limit() != 1000000000ull * SEC) {
        fprintf(stderr, "memobs_timeline_set_write_limit: wrong default, previous value or clamp\n");
        return 1;
    }
    if (memobs_timeline_start(EVENTS + 1024) != MEMOBS_OK) return 1;
    memobs_set_identity("trace-write", 0, 0, 1);
    for (i = 1; i <= EVENTS; i++) MEMOBS_RECORD_H2D(i, 1);
    clk = 1000 * SEC;
    fake = 1;
    if (strcmp(sc, "nolimit") == 0) {
        limit = 0;
        step = 1 * SEC;
    } else if (strcmp(sc, "plan") == 0) {
        step = 1 * SEC;
    } else if (strcmp(sc, "stop") == 0) {
        limit = 1 * SEC;
        step = 2 * SEC;
    } else if (strcmp(sc, "stall") == 0) {
        step = 1 * MS;
        jump_at = 12; /* the start, the events' start, then the 10th look */
        jump = 3600 * SEC;
    } else if (strcmp(sc, "real") == 0) {
        limit = 1;
        fake = 0;
    } else {
        fprintf(stderr, "unknown scenario '%s'\n", sc);
        return 2;
    }
    memobs_timeline_set_write_limit(limit);
    rc = memobs_write_timeline_file(argv[2]);
    printf("events %u limit_ns %llu\n", EVENTS, (unsigned long long)limit);
    return rc != MEMOBS_OK;
}
