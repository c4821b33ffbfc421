/* tests/serving/stops/inst_main.c - loads two shared objects that each carry their
   own memobs (tests/serving/stops/inst.c built with -DMEMOBS_HIDDEN as
   libinst_a.so and libinst_b.so, RTLD_GLOBAL), has each record its own
   figures, then ends: inst_main A.so B.so END, END return or wait (say
   "ready PID" on STOPS_READY_FD, wait for a signal). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int i;
    const char *s = getenv("STOPS_READY_FD");
    if (argc < 4) return 2;
    for (i = 1; i <= 2; i++) {
        void (*run)(unsigned);
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL);
        if (!h) return fprintf(stderr, "inst_main: dlopen: %s\n", dlerror()), 99;
        *(void **)&run = dlsym(h, "inst_run");
        if (!run) return fprintf(stderr, "inst_main: no inst_run in %s\n", argv[i]), 99;
        run((unsigned)i);
    }
    if (!strcmp(argv[3], "return")) return 0;
    if (!strcmp(argv[3], "wait")) {
        char line[64];
        int n = snprintf(line, sizeof line, "ready %ld\n", (long)getpid());
        if (!s || write(atoi(s), line, (size_t)n) != n) return 98;
        for (;;) pause();
    }
    return 2;
}
