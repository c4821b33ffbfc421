/* tests/serving/stops/inst.c - a shared object with its own memobs (built with
   -DMEMOBS_HIDDEN, twice: libinst_a.so and libinst_b.so), for the "two
   instances in one process" part of tests/serving/test_stops.sh: both read the
   same output variables, so both would write the same paths. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

void inst_run(unsigned which);

static char inst_arena[4];

/* Instance `which` (1 or 2): 100 H2D prefill records of 1000 * which
   bytes, one tracked device allocation of which MiB, the counter
   stops_steps + 10 * which. */
void inst_run(unsigned which) {
    unsigned i;
    for (i = 0; i < 100; i++) MEMOBS_RECORD_H2D(1000u * which, 1);
    MEMOBS_TRACK_ALLOC_N(inst_arena + which, (uint64_t)which << 20, MEMOBS_MEM_DEVICE, "inst");
    MEMOBS_COUNTER_ADD("stops_steps", 10u * which);
}
