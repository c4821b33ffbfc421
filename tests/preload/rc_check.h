/* rc_check.h - what tests/preload/test_preload.c (the runtime),
   tests/preload/driver_user.c (the driver) and the other programs run with
   and without the preload (tests/preload/, tests/gpu/preload_gpu.cu) share: each return code is
   checked against the one the double documents and printed, so the
   scripts can compare runs with and without the preload, and the phase is
   set through memobs' API when the preload is there (dlsym finds it). One
   translation unit per program includes it. */
#ifndef MEMOBS_TEST_RC_CHECK_H
#define MEMOBS_TEST_RC_CHECK_H
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define PREFILL 1 /* MEMOBS_PHASE_PREFILL */
#define DECODE 2  /* MEMOBS_PHASE_DECODE */

static int fails;
static char rcs[4096];

/* memobs_set_phase(p) of the preloaded library; nothing without it */
static void phase(int p) {
    int (*set)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "memobs_set_phase");
    if (set) set(p);
}

/* rc must be want (want < 0: any error, 0 being success); every rc is also printed */
static void check(const char *what, int rc, int want) {
    size_t n = strlen(rcs);
    snprintf(rcs + n, sizeof rcs - n, " %d", rc);
    if (want >= 0 ? rc != want : rc == 0) {
        fprintf(stderr, "%s: rc %d, expected %d\n", what, rc, want);
        fails++;
    }
}

static int done(const char *expect) {
    printf("rcs:%s\n", rcs);
    if (expect) printf("expect: %s\n", expect);
    fflush(stdout);
    return fails ? 1 : 0;
}
#endif
