/* bench.h - shared by the translation units of `make bench` (see mk/bench.mk).

   Every timed figure is a loop function made by BENCH_LOOP, so all variants
   have the same shape: n iterations, `bytes` = i & 0xff (a value the
   compiler cannot fold to a constant), the body, then an empty asm with a
   "memory" clobber. The barrier emits no instruction; it makes the compiler
   re-read and re-write memory every iteration, as a record site in real
   code does, so no variant is hoisted, merged or vectorised. */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>

/* One timed loop: n iterations; arg is the figure's own data, if any. */
typedef void (*bench_loop_fn)(uint64_t n, const void *arg);

#define BENCH_BARRIER() __asm__ volatile("" ::: "memory")

#define BENCH_LOOP(name, body)                                        \
    __attribute__((noinline)) void name(uint64_t n, const void *arg) { \
        uint64_t i;                                                   \
        (void)arg;                                                    \
        for (i = 0; i < n; i++) {                                     \
            uint64_t bytes = i & 0xff;                                \
            body;                                                     \
            BENCH_BARRIER();                                          \
        }                                                             \
    }

/* bench_disabled.c, built with -DMEMOBS_DISABLE. */
void bench_loop_ct_disabled(uint64_t n, const void *arg);

#endif /* BENCH_H */
