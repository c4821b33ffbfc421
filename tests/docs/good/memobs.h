/* memobs.h (a fixture of tests/docs/test_docs.sh): the shapes of names the
   configuration check must find, and those it must leave out. */
#ifndef MEMOBS_H
#define MEMOBS_H
#define MEMOBS_MAX_BYTES (1ull << 56) /* a constant, quoted in a message below */
#define MEMOBS_VERSION_MAJOR 1          /* a constant that an #if tests */
#if MEMOBS_VERSION_MAJOR != 1
#error "version"
#endif
/* In a comment, neither counts:
       #ifdef MEMOBS_IN_COMMENT
       getenv("MEMOBS_IN_COMMENT") */
// #ifndef MEMOBS_IN_LINE_COMMENT, "MEMOBS_IN_LINE_COMMENT"
#ifndef MEMOBS_MAX_THINGS
#define MEMOBS_MAX_THINGS 16
#endif
#if defined(MEMOBS_IMPLEMENTATION) && !defined(MEMOBS__IMPLEMENTED) /* private: left out */
#define MEMOBS__IMPLEMENTED
#include <stdlib.h>
#if defined(MEMOBS_MALLOC) != defined(MEMOBS_FREE)
#error "both or neither"
#endif
#ifndef MEMOBS_MALLOC
#define MEMOBS_MALLOC(sz) malloc(sz)
#define MEMOBS_FREE(p) free(p)
#endif
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
