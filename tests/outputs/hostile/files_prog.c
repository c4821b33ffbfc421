/* The hostile-files suite's program (tests/outputs/test_hostile_files.sh): paths
   that are not memobs' own. One mode per run; the script sets the output
   variables and checks the files.

     exit           records known figures (4096 H2D bytes), returns 0
     abort          records, then abort(): the crash writer writes
     segv           records, then a real SIGSEGV
     wait-abort D   records, writes its pid to D/pid, waits (60 s at most)
                    until D/go exists, then abort()s
     killmid        records, then the timeline (MEMOBS_TIMELINE) is written
                    by the exit writer with a generator that writes 64 KB,
                    flushes and SIGKILLs the process: a killed write
     hostid         prints the host id temporaries carry (8 hex digits) */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#include "../../../memobs.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FILES_OLD /* the timeline's output id had the timeline's old name */
#define FILES_OUT_TIMELINE MEMOBS__OUT_TRACE
#else
#define FILES_OUT_TIMELINE MEMOBS__OUT_TIMELINE
#endif

static void record(void) {
    MEMOBS_RECORD_H2D(4096, 1);
    MEMOBS_TRACK_ALLOC_N((void *)(uintptr_t)0x7f0000000000ull, 4096, MEMOBS_MEM_DEVICE, "kv");
}

static int die_midway(FILE *f, int arg) {
    static char chunk[65536];
    (void)arg;
    memset(chunk, 'x', sizeof chunk);
    fwrite(chunk, 1, sizeof chunk, f);
    fflush(f);
    kill(getpid(), SIGKILL);
    return MEMOBS_OK;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "exit";
    memobs_init();
    record();
    if (strcmp(mode, "exit") == 0) return 0;
    if (strcmp(mode, "abort") == 0) abort();
    if (strcmp(mode, "segv") == 0) {
        volatile uintptr_t at = 16; /* unmapped, not null (UBSan would stop at a null store) */
        *(volatile int *)at = 1;
        return 3;
    }
    if (strcmp(mode, "wait-abort") == 0 && argc > 2) {
        char path[4096];
        FILE *f;
        int i;
        snprintf(path, sizeof path, "%s/pid", argv[2]);
        if ((f = fopen(path, "w")) == NULL) return 2;
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
        snprintf(path, sizeof path, "%s/go", argv[2]);
        for (i = 0; i < 600 && access(path, F_OK) != 0; i++) poll(NULL, 0, 100);
        abort();
    }
    if (strcmp(mode, "killmid") == 0) {
        (void)memobs__dest_write(FILES_OUT_TIMELINE, die_midway, 0, 0);
        return 4; /* not reached */
    }
#ifndef FILES_OLD /* built against an older memobs.h (the suite's "before" runs) */
    if (strcmp(mode, "hostid") == 0) {
        printf("%08x\n", (unsigned)memobs__host_id());
        return 0;
    }
#endif
    fprintf(stderr, "files_prog: unknown mode '%s'\n", mode);
    return 2;
}
