/* Requests in the outputs (tests/outputs/test_request_outputs.sh): the
   timeline's request tracks and flows, Stormlog's "request" events.

     test_request_outputs flows TRACE STORMLOG   bound records, nested
         bindings, memobs_request_xfer(_ns), a split transfer, an unbound
         record; requests 1 and 2 end, 3 stays in flight, 4 ends having
         moved nothing. Prints "ledger ID BYTES OPS TIMED" for each (its
         ledger at its end, or at the write: 3) and "dir ID KEY BYTES OPS"
         per direction it used.
     test_request_outputs lanes TRACE            100 requests in flight at
         once, one transfer each, then 10 one after another: more
         requests than tracks (MEMOBS__TL_REQ_LANES, 64).
     test_request_outputs off TRACE              the same calls as flows
         with the timeline off.
   The checker (tests/python/request_outputs_check.py) reads the files and
   these lines. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <stdio.h>
#include <string.h>

static void ledger(uint64_t id, const memobs_request_info_t *i) {
    unsigned p, d;
    uint64_t bytes = 0, ops = 0, timed = 0;
    for (d = 0; d < MEMOBS_DIRS; d++) {
        uint64_t b = 0, n = 0;
        for (p = 0; p < MEMOBS_PHASES; p++) {
            b += memobs_dirs_get(&i->xfer[p], d)->bytes;
            n += memobs_dirs_get(&i->xfer[p], d)->count;
        }
        if (n) printf("dir %llu %u %llu %llu\n", (unsigned long long)id, d, (unsigned long long)b,
                      (unsigned long long)n);
        bytes += b;
        ops += n;
        timed += i->engine_ns[d] != 0;
    }
    printf("ledger %llu %llu %llu %llu\n", (unsigned long long)id, (unsigned long long)bytes,
           (unsigned long long)ops, (unsigned long long)timed);
}

/* Ends request id, printing its ledger as it stands before the end. */
static void end(uint64_t id) {
    memobs_request_info_t i;
    if (memobs_request_info(id, &i) != MEMOBS_OK) {
        printf("no ledger for %llu\n", (unsigned long long)id);
        return;
    }
    ledger(id, &i);
    memobs_request_end(id);
}

static int flows(const char *trace, const char *stormlog, int timeline) {
    static const uint64_t ids[3] = {1, 2, 3}, shares[3] = {1, 2, 1};
    memobs_request_info_t i;
    if (timeline && memobs_timeline_start(65536) != MEMOBS_OK) return 1;
    memobs_request_begin(1);
    memobs_request_begin(2);
    memobs_request_begin(3);
    memobs_request_begin(4);
    memobs_request_tenant(1, "acme");
    memobs_request_enter(1); /* bound: 3 H2D, one engine-timed S2H */
    memobs_record_xfer(MEMOBS_DIR_H2D, 1000, MEMOBS_PHASE_PREFILL);
    memobs_record_xfer(MEMOBS_DIR_H2D, 2000, MEMOBS_PHASE_PREFILL);
    MEMOBS_RECORD_H2D(3000, 1);
    memobs_record_xfer_ns(MEMOBS_DIR_S2H, 65536, MEMOBS_PHASE_PREFILL, 40000);
    memobs_request_leave();
    memobs_request_xfer(2, MEMOBS_DIR_D2H, 500, MEMOBS_PHASE_DECODE); /* on 2's behalf, unbound */
    memobs_request_xfer(2, MEMOBS_DIR_D2H, 500, MEMOBS_PHASE_DECODE);
    memobs_request_xfer_ns(2, MEMOBS_DIR_H2S, 4096, MEMOBS_PHASE_DECODE, 2000);
    if (memobs_request_xfer_split(ids, shares, 3, MEMOBS_DIR_H2D, 1000, MEMOBS_PHASE_PREFILL) != MEMOBS_OK) return 1;
    memobs_request_enter(3); /* nested: the inner request gets the record */
    memobs_request_enter(1);
    memobs_record_xfer(MEMOBS_DIR_D2D, 77, MEMOBS_PHASE_DECODE);
    memobs_request_leave();
    memobs_record_xfer(MEMOBS_DIR_D2D, 88, MEMOBS_PHASE_DECODE);
    memobs_request_enter(2); /* on 2's behalf while bound to 3: 2's, not 3's */
    memobs_request_leave();
    memobs_request_xfer(2, MEMOBS_DIR_D2H, 11, MEMOBS_PHASE_DECODE);
    memobs_request_leave();
    memobs_record_xfer(MEMOBS_DIR_D2H, 999, MEMOBS_PHASE_DECODE); /* no request */
    memobs_request_token(1);
    end(1); /* completed */
    end(2); /* aborted: no token */
    end(4); /* moved nothing */
    if (memobs_request_info(3, &i) != MEMOBS_OK) return 1;
    ledger(3, &i); /* in flight at the write */
    if (memobs_sample_now() != MEMOBS_OK) return 1;
    if (memobs_write_timeline_file(trace) != MEMOBS_OK) return 1;
    if (stormlog && memobs_write_stormlog_file(stormlog) != MEMOBS_OK) return 1;
    return 0;
}

static int lanes(const char *trace) {
    uint64_t id;
    if (memobs_timeline_start(65536) != MEMOBS_OK) return 1;
    for (id = 100; id < 200; id++) memobs_request_begin(id);
    for (id = 100; id < 200; id++) memobs_request_xfer(id, MEMOBS_DIR_H2D, id, MEMOBS_PHASE_PREFILL);
    for (id = 100; id < 200; id++) memobs_request_end(id);
    for (id = 200; id < 210; id++) { /* one after another: each takes a track freed before */
        memobs_request_begin(id);
        memobs_request_xfer(id, MEMOBS_DIR_D2H, id, MEMOBS_PHASE_DECODE);
        memobs_request_end(id);
    }
    return memobs_write_timeline_file(trace) != MEMOBS_OK;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "flows") == 0) return flows(argv[2], argv[3], 1);
    if (argc == 3 && strcmp(argv[1], "lanes") == 0) return lanes(argv[2]);
    if (argc == 3 && strcmp(argv[1], "off") == 0) return flows(argv[2], NULL, 0);
    fprintf(stderr, "usage: %s flows TRACE STORMLOG | lanes TRACE | off TRACE\n", argv[0]);
    return 2;
}
