/* memobs.h (a fixture of tests/test_docs.sh): the shapes of names the
   configuration check must find, and those it must leave out. */
#ifndef MEMOBS_H
#define MEMOBS_H
#define MEMOBS_MAX_BYTES (1ull << 56) /* a constant, quoted in a message below */
#ifndef MEMOBS_MAX_THINGS
#define MEMOBS_MAX_THINGS 16
#endif
#if defined(MEMOBS_IMPLEMENTATION) && !defined(MEMOBS__IMPLEMENTED) /* private: left out */
#define MEMOBS__IMPLEMENTED
#include <stdlib.h>
static const char *const memobs__outs[] = {"MEMOBS_SUMMARY", "MEMOBS_HTML"};
static void memobs__env(void) {
    const char *s = getenv("MEMOBS_SAMPLE_MS");
    const char *t = getenv("MEMOBS__PRIVATE_KNOB"); /* private: left out */
#if MEMOBS_MAX_THINGS > 8 && \
    defined(MEMOBS_DISABLE)
    (void)s;
#endif
    (void)t;
    (void)memobs__outs;
    fprintf(stderr, "%s", "MEMOBS_MAX_BYTES");
}
#endif
#endif /* MEMOBS_H */
