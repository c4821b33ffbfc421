/* bench_disabled.c - the compile-time-disabled figure. Built with
   -DMEMOBS_DISABLE, so MEMOBS_RECORD_H2D is ((void)sizeof ...) and the loop
   body is empty: what is timed is the loop and nothing else. The
   implementation lives in bench.c, compiled normally. */
#include "memobs.h"
#include "bench.h"

#ifndef MEMOBS_DISABLE
#error "bench_disabled.c must be compiled with -DMEMOBS_DISABLE"
#endif

BENCH_LOOP(bench_loop_ct_disabled, MEMOBS_RECORD_H2D(bytes, 1))
