/* The file outputs (tests/outputs/test_outputs.sh): one program, one mode per run;
   the script sets the output variables and checks the files.

     record [H2D]     records known figures (H2D bytes in prefill, default
                      4096; 100 bytes D2H in decode; 64 live device
                      allocations of 4096 bytes tagged "kv"; a region; a
                      counter; 3 samples) and returns from main
     fork_after       records 1000 H2D bytes, forks; the child records 7
                      more and exits once the parent is gone; the parent
                      records 2000 more (3000 in all) and returns. Prints
                      "child PID"
     fork_together    the same, both exiting at the same moment
     pipe             prints "first" on stdout, waits until the reader of
                      stdout is gone, records, returns 0
     fill N           fills the timeline with N H2D records, prints
                      "filled", returns (the script kills it while the
                      trace is written)
     identity JOB     memobs_set_identity(JOB, ...), records, returns
     rank R           memobs_set_identity(NULL, R, 0, R + 1), records
     flush            records, memobs_flush(), records again, returns
     sleep MS         records, sleeps MS milliseconds, returns */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static void record(uint64_t h2d) {
    int i;
    MEMOBS_RECORD_H2D(h2d, 1);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    MEMOBS_RECORD_D2H_CUR(100);
    MEMOBS_COUNTER_ADD("events", 3);
    MEMOBS_REGION_BEGIN("step");
    for (i = 0; i < 64; i++)
        MEMOBS_TRACK_ALLOC_N((void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)i * 4096u), 4096, MEMOBS_MEM_DEVICE,
                             "kv");
    MEMOBS_REGION_END();
    for (i = 0; i < 3; i++) memobs_sample_now();
}

/* Waits until fd's reader is gone (POLLERR on a pipe's write end). */
static int reader_gone(int fd) {
    struct pollfd p;
    int i;
    for (i = 0; i < 600; i++) {
        p.fd = fd;
        p.events = 0;
        p.revents = 0;
        if (poll(&p, 1, 100) > 0 && (p.revents & (POLLERR | POLLHUP))) return 1;
    }
    return 0;
}

static int fork_mode(int together) {
    int go[2];
    pid_t child;
    MEMOBS_RECORD_H2D(1000, 1);
    if (pipe(go) != 0) return 1;
    fflush(stdout);
    child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        char c;
        close(go[1]);
        MEMOBS_RECORD_H2D(7, 1);
        if (together) {
            if (read(go[0], &c, 1) != 1) _exit(3); /* the parent says go */
        } else {
            while (getppid() != 1 && read(go[0], &c, 1) > 0) {
            }
            /* the write end closed: the parent has exited (its files written) */
        }
        return 0; /* exit handlers run in the child too */
    }
    close(go[0]);
    printf("child %ld\n", (long)child);
    fflush(stdout);
    MEMOBS_RECORD_H2D(2000, 1);
    if (together && write(go[1], "g", 1) != 1) return 1;
    return 0; /* the write end closes at exit, after the exit outputs */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "record";
    if (strcmp(mode, "record") == 0) {
        record(argc > 2 ? strtoull(argv[2], NULL, 10) : 4096u);
        return 0;
    }
    if (strcmp(mode, "fork_after") == 0) return fork_mode(0);
    if (strcmp(mode, "fork_together") == 0) return fork_mode(1);
    if (strcmp(mode, "pipe") == 0) {
        printf("first\n");
        fflush(stdout);
        if (!reader_gone(1)) fprintf(stderr, "the reader of stdout is still there after 60 s\n");
        record(4096);
        return 0;
    }
    if (strcmp(mode, "fill") == 0) {
        uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000, i;
        for (i = 0; i < n; i++) MEMOBS_RECORD_H2D(1, 1);
        printf("filled\n");
        fflush(stdout);
        return 0;
    }
    if (strcmp(mode, "identity") == 0) {
        memobs_set_identity(argc > 2 ? argv[2] : "job", 1, 0, 2);
        record(4096);
        return 0;
    }
    if (strcmp(mode, "rank") == 0) {
        int r = argc > 2 ? atoi(argv[2]) : 1;
        memobs_set_identity(NULL, r, 0, r + 1);
        record(4096);
        return 0;
    }
    if (strcmp(mode, "flush") == 0) {
        record(4096);
        if (memobs_flush() != MEMOBS_OK) return 1;
        printf("flushed\n");
        fflush(stdout);
        record(4096);
        return 0;
    }
    if (strcmp(mode, "sleep") == 0) {
        struct timespec ts;
        long ms = argc > 2 ? atol(argv[2]) : 100;
        record(4096);
        ts.tv_sec = ms / 1000;
        ts.tv_nsec = (ms % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) != 0) {
        }
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
