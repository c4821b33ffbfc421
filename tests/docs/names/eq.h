/* tests/docs/names/eq.h - the one check of the alias programs: an "ok - names:"
   or "not ok - names:" line per figure, expected and actual on failure. */
#ifndef NAMES_EQ_H
#define NAMES_EQ_H
#include <stdio.h>

#ifndef NAMES_SUITE
#define NAMES_SUITE "names"
#endif

static int failed;

static void check(int ok, const char *what, unsigned long long want, unsigned long long got) {
    printf("%s - " NAMES_SUITE ": %s\n", ok ? "ok" : "not ok", what);
    if (!ok) {
        printf("    # expected %llu, got %llu\n", want, got);
        failed = 1;
    }
}
#define EQ(what, want, got)                                                   \
    do {                                                                      \
        unsigned long long w_ = (unsigned long long)(want), g_ = (unsigned long long)(got); \
        check(w_ == g_, what, w_, g_);                                        \
    } while (0)

#endif
