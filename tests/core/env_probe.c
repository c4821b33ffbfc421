/* Records fixed amounts and exits; the environment decides the rest
   (tests/core/test_env.sh). With "print", also calls memobs_print_summary(). */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
#include <string.h>

int main(int argc, char **argv) {
    MEMOBS_RECORD_H2D(4096, 1);
    MEMOBS_RECORD_D2H(100, 0);
    MEMOBS_COUNTER_ADD("probe_events", 3);
    if (argc > 1 && strcmp(argv[1], "print") == 0) memobs_print_summary();
    return 0;
}
