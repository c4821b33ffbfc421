/* bench_sizes_off.c - the "before" of bench/bench_sizes.c: the same record
   loop built with MEMOBS__NO_XSIZE, memobs.h's private switch that makes
   the inline record what it was before sizes were kept: an add of the
   bytes and an add of 1 to a fixed count (here the size-0 bucket; the
   shard's layout is the same, so both files record into one memobs).
   Never define it in a program. */
#define MEMOBS__NO_XSIZE
#include "../memobs.h"
#include "bench.h"

BENCH_LOOP(bench_sizes_off_loop, MEMOBS_RECORD_H2D(bytes << (i & 15), 1))
BENCH_LOOP(bench_sizes_off_one, MEMOBS_RECORD_H2D(*(const uint64_t *)arg + (bytes & 0), 1))
