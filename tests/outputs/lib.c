/* A module with its own memobs (built twice with MEMOBS_HIDDEN by
   tests/outputs/test_outputs.sh): two instances in one process, each writing the
   outputs the environment asks for. */
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"

void lib_h2d(uint64_t bytes);
void lib_d2h(uint64_t bytes);

void lib_h2d(uint64_t bytes) { MEMOBS_RECORD_H2D(bytes, 1); }
void lib_d2h(uint64_t bytes) { MEMOBS_RECORD_D2H(bytes, 0); }
