/* One process of tests/serving/test_prom_multiproc.sh's smaller checks,
   with PROMETHEUS_MULTIPROC_DIR (and the test's other variables) set:

     one record TEXT   records known figures, memobs_flush(), writes its
                       Prometheus text to TEXT, prints "written", waits for
                       a line on stdin, returns (the exit write)
     one wait          records, prints "recorded" and waits for a line on
                       stdin (the periodic write, MEMOBS_PROM_INTERVAL_MS,
                       comes meanwhile), returns
     one fork          records, fork()s a child that records and exit()s,
                       waits for it and prints "child PID", returns
     one idle          records nothing, memobs_flush(), returns (no files)
     one chdir DIR     records, chdir(DIR), memobs_flush(), returns
     one hostid        prints the HOST of this host's named temporaries
     one loop N        N rounds of a record (1 MiB H2D prefill) and
                       memobs_flush(), printing "flushed K" after each, so a
                       reader can read the files while they are rewritten

   The figures of "record": 3 H2D prefill of 4096, 2 D2H decode of 65536,
   1 D2D of 100 (unphased), 1 H2S decode of 1 MiB; one request begun,
   a token, ended; 3 x 1000 bytes of host memory tracked (live). */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_IMPLEMENTATION
#include "../../../memobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char host_mem[3][1000];

static void record(void) {
    int i;
    for (i = 0; i < 3; i++) MEMOBS_RECORD_H2D(4096u, 1);
    for (i = 0; i < 2; i++) MEMOBS_RECORD_D2H(65536u, 0);
    memobs_record_xfer(MEMOBS_DIR_D2D, 100u, MEMOBS_PHASE_NONE);
    memobs_record_xfer(MEMOBS_DIR_H2S, 1u << 20, MEMOBS_PHASE_DECODE);
    memobs_request_begin(7);
    memobs_request_token(7);
    memobs_request_end(7);
    for (i = 0; i < 3; i++) MEMOBS_TRACK_ALLOC_N(host_mem[i], sizeof host_mem[i], MEMOBS_MEM_HOST, "one");
}

/* A line, or the end of stdin: either lets the process go on. */
static int wait_line(void) {
    char line[64];
    (void)!fgets(line, sizeof line, stdin);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "record") == 0) {
        FILE *f;
        record();
        if (memobs_flush() != MEMOBS_OK) return 1;
        if (!(f = fopen(argv[2], "w")) || memobs_write_prometheus(f) != MEMOBS_OK || fclose(f) != 0) return 1;
        printf("written\n");
        fflush(stdout);
        return wait_line();
    }
    if (argc == 2 && strcmp(argv[1], "wait") == 0) {
        record();
        printf("recorded\n");
        fflush(stdout);
        return wait_line();
    }
    if (argc == 2 && strcmp(argv[1], "fork") == 0) {
        pid_t pid;
        int st;
        record();
        fflush(stdout);
        if ((pid = fork()) < 0) return 1;
        if (pid == 0) {
            MEMOBS_RECORD_H2D(1u, 1);
            exit(0); /* the exit handlers run: the child's exit write */
        }
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
        printf("child %ld\n", (long)pid);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "loop") == 0) {
        int i, n = atoi(argv[2]);
        for (i = 1; i <= n; i++) {
            MEMOBS_RECORD_H2D(1u << 20, 1);
            if (memobs_flush() != MEMOBS_OK) return 1;
            printf("flushed %d\n", i);
            fflush(stdout);
        }
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "idle") == 0) return memobs_flush() == MEMOBS_OK ? 0 : 1;
    if (argc == 2 && strcmp(argv[1], "hostid") == 0) {
        printf("%08x\n", (unsigned)memobs__host_id());
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "chdir") == 0) {
        record();
        if (chdir(argv[2]) != 0) return 1;
        return memobs_flush() == MEMOBS_OK ? 0 : 1;
    }
    fprintf(stderr, "usage: one record TEXT | wait | fork | idle | chdir DIR | hostid | loop N\n");
    return 2;
}
