/* consumer.c - a program that uses an *installed* memobs, built by
   tests/docs/test_install.sh once through pkg-config and once through
   find_package(memobs). Prints "consumer ok" and exits 0 when the recorded
   transfers read back as expected. */
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <inttypes.h>
#include <stdio.h>

static int failures;

static void check(const char *what, uint64_t expected, uint64_t actual) {
    if (expected != actual) {
        printf("consumer: %s: expected %" PRIu64 ", actual %" PRIu64 "\n", what, expected,
               actual);
        failures++;
    }
}

int main(void) {
    memobs_summary_t s;

    MEMOBS_RECORD_H2D(4096, 1); /* prefill */
    MEMOBS_RECORD_H2D(1000, 0); /* decode */
    MEMOBS_RECORD_D2H(512, 0);  /* decode */
    memobs_get_summary(&s);

    check("total.h2d.bytes", 5096, s.total.h2d.bytes);
    check("total.h2d.count", 2, s.total.h2d.count);
    check("prefill.h2d.bytes", 4096, s.prefill.h2d.bytes);
    check("decode.h2d.bytes", 1000, s.decode.h2d.bytes);
    check("decode.d2h.bytes", 512, s.decode.d2h.bytes);

    if (failures) return 1;
    puts("consumer ok");
    return 0;
}
