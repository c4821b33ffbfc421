/* Minimal test harness: one "ok - " / "not ok - " line per test function,
   failed checks show expected and actual as "    # " lines. */
#ifndef MEMOBS_TEST_CHECK_H
#define MEMOBS_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check__failed_checks; /* failures inside the current test */
static int check__passed, check__failed;
static const char *check__suite = "test";

#define CHECK_U64(expected, actual)                                                                          \
    do {                                                                                                     \
        unsigned long long check__e = (unsigned long long)(expected), check__a = (unsigned long long)(actual); \
        if (check__e != check__a) {                                                                          \
            check__failed_checks++;                                                                          \
            printf("    # %s:%d: %s: expected %llu, got %llu\n", __FILE__, __LINE__, #actual, check__e,      \
                   check__a);                                                                                \
        }                                                                                                    \
    } while (0)

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            check__failed_checks++;                                                     \
            printf("    # %s:%d: expected %s, which is false\n", __FILE__, __LINE__, #cond); \
        }                                                                               \
    } while (0)

#define CHECK_STR(expected, actual)                                                                        \
    do {                                                                                                   \
        const char *check__e = (expected), *check__a = (actual);                                           \
        if (strcmp(check__e, check__a) != 0) {                                                             \
            check__failed_checks++;                                                                        \
            printf("    # %s:%d: %s: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, #actual, check__e, \
                   check__a);                                                                              \
        }                                                                                                  \
    } while (0)

/* Substring check, for formatted output. */
#define CHECK_HAS(haystack, needle)                                                                              \
    do {                                                                                                         \
        const char *check__h = (haystack), *check__n = (needle);                                                 \
        if (!strstr(check__h, check__n)) {                                                                       \
            check__failed_checks++;                                                                              \
            printf("    # %s:%d: expected output to contain \"%s\"; output was:\n%s\n", __FILE__, __LINE__,    \
                   check__n, check__h);                                                                          \
        }                                                                                                        \
    } while (0)

#define RUN(test)                                                                         \
    do {                                                                                  \
        check__failed_checks = 0;                                                         \
        fflush(stdout);                                                                   \
        test();                                                                           \
        if (check__failed_checks) check__failed++, printf("not ok - %s: %s\n", check__suite, #test); \
        else check__passed++, printf("ok - %s: %s\n", check__suite, #test);                \
        fflush(stdout);                                                                   \
    } while (0)

#define CHECK_DONE() (printf("%d passed, %d failed\n", check__passed, check__failed), check__failed != 0)

#endif
