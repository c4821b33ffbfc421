/* Helpers shared by the tests that include memobs' implementation
   (test_track.c, test_cuda.c): a log hook that keeps what memobs says, and
   reading back what a writer wrote. Each test file has its own
   log_start(). */
#ifndef MEMOBS_TEST_H
#define MEMOBS_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOG 32
static int log_count;
static int log_levels[MAX_LOG];
static char log_msgs[MAX_LOG][512];
__attribute__((unused)) static void capture_log(int level, const char *msg, void *user) {
    (void)user;
    if (log_count < MAX_LOG) {
        log_levels[log_count] = level;
        snprintf(log_msgs[log_count], sizeof log_msgs[0], "%s", msg);
    }
    log_count++;
}
__attribute__((unused)) static void log_stop(void) { memobs_set_log(NULL, NULL); }
/* Logged messages containing s. */
__attribute__((unused)) static int log_has(const char *s) {
    int i, n = 0;
    for (i = 0; i < log_count && i < MAX_LOG; i++)
        if (strstr(log_msgs[i], s)) n++;
    return n;
}
__attribute__((unused)) static void log_dump(void) {
    int i;
    for (i = 0; i < log_count && i < MAX_LOG; i++) printf("    #   log: %s\n", log_msgs[i]);
}

/* Everything in f, from its start; the caller frees it. */
__attribute__((unused)) static char *read_file(FILE *f) {
    long n;
    char *buf;
    fflush(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = (char *)malloc((size_t)(n > 0 ? n : 0) + 1);
    if (!buf) return NULL;
    n = (long)fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}
#endif
