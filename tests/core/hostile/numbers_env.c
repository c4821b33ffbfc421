/* tests/core/hostile/numbers_env.c (tests/core/test_hostile_numbers.sh): start-up
   reads the environment (the constructor); "clock" also reads the timeline
   clock (MEMOBS_CLOCK) and prints its source. Item 22 of issue 38. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    memobs_init();
    if (argc > 1 && strcmp(argv[1], "clock") == 0) printf("%s\n", memobs_clock_source());
    return 0;
}
