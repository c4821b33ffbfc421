/* bench_so.c - memobs inside a shared library, as in a Python extension.
   mk/bench.mk builds it three times (default TLS model, -mtls-dialect=gnu2,
   -DMEMOBS_TLS_INITIAL_EXEC); bench.c dlopen()s each one and calls these
   two functions through pointers, so their difference is what a record
   costs in a .so beyond a plain add behind the same call. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#ifndef BENCH_SO_LABEL
#define BENCH_SO_LABEL "?"
#endif

static uint64_t bench_so_sink;

extern const char bench_so_label[];
void bench_so_record(uint64_t bytes);
void bench_so_plain(uint64_t bytes);

/* How this variant was built, for the bench's table. */
const char bench_so_label[] = BENCH_SO_LABEL;

/* On a 64-byte line each, like the loops of bench.h: where a function
   starts must not change its figure. */
__attribute__((aligned(64))) void bench_so_record(uint64_t bytes) { MEMOBS_RECORD_H2D(bytes, 1); }

__attribute__((aligned(64))) void bench_so_plain(uint64_t bytes) { bench_so_sink += bytes; }
