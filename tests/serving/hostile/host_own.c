/* Item 15: a program with its own memobs and no CUDA call, run under the
   LD_PRELOAD library (memobs-run --json s.json): records 4096 bytes H2D
   and exits. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

int main(void) {
    MEMOBS_RECORD_H2D(4096, 1);
    return 0;
}
