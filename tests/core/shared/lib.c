/* A shared library that carries the implementation, as an engine's .so or
   a Python extension would (tests/core/test_shared.sh). */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

void lib_record(uint64_t bytes);
uint64_t lib_total_h2d(void);

void lib_record(uint64_t bytes) { MEMOBS_RECORD_H2D(bytes, 0); }

uint64_t lib_total_h2d(void) {
    memobs_summary_t s;
    memobs_get_summary(&s);
    return s.total.h2d.bytes;
}
