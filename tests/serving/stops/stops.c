/* tests/serving/stops/stops.c - a program that records, tracks, samples and keeps a
   timeline, then stops the way its arguments say, for tests/serving/test_stops.sh
   (tests/python/stops_check.py runs it and checks what memobs wrote).
   Built twice: with memobs, and with -DMEMOBS_DISABLE as the reference for
   the exit status and the signal (what the program does without memobs).

   STOPS_HANDLER=HANDLER stops END
     END, after recording (STOPS_THREADS threads, each STOPS_ITERS
     iterations of six records, and the tracked allocations below):
       return      return 0 from main
       exit        exit(5)
       wait        say "ready", then wait for a signal (the script sends it)
       segv        a store through a null pointer (a real SIGSEGV)
       abort       abort()
       _exit       _exit(6)
       flush-wait  memobs_flush(), then as wait (the script sends SIGKILL)
       busy        as wait, with STOPS_THREADS more threads recording
                   without end: the signal comes while they record
       big         also STOPS_BIG_RECORDS records of 1 byte (H2D, unphased)
                   on one thread, say "exiting", then return 0: the
                   script kills it while memobs writes its 4M-event trace
       stdout      print "hello" on stdout, say "ready", read the go pipe
                   to its end, return 0 (MEMOBS_SUMMARY=stdout into a
                   pipe the script closed first)
       fork-after  fork(); the child records STOPS_CHILD_RECORDS records of
                   1 byte (H2D prefill), says "child PID" and ends only
                   after the parent has gone (a pipe only the parent
                   holds); the parent says "ready" and returns 0 when the
                   go pipe ends
       fork-together  as fork-after, but the child too ends when the go
                   pipe ends: both at once
     HANDLER, the program's own for SIGTERM, SIGINT, SIGHUP and SIGQUIT
     (unset: none):
       flag-before  a handler that sets a flag (main then returns 0),
                    installed by a constructor that runs before memobs'
       exit-before  a handler that calls _exit(3), installed so too
       flag-after   as flag-before, installed in main (after memobs')
       exit-after   as exit-before, installed in main
   Built with -DSTOPS_SET_SIGNALS: main calls memobs_set_signals(0) first.

   Environment: STOPS_READY_FD, a pipe's write end: "ready PID\n" (and
   "child PID\n", "exiting\n") go there; STOPS_GO_FD: the read end of the
   go pipe. The figures (tests/python/stops_check.py computes the same):
   thread t of STOPS_THREADS, each of STOPS_ITERS iterations: H2D prefill
   4096+t, H2D decode 1024, D2H prefill 512, D2H decode 2048+t, D2D decode
   256, D2D unphased 64+t bytes; the counter stops_steps +1. Tracked, on
   the main thread: 48 device allocations of 1 MiB + 4096 i (the odd ones
   freed), 32 host ones of 4096 (i+1) (those with i % 4 == 0 freed), 8
   pinned ones of 65536 (all live). */
#define _GNU_SOURCE
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STOPS_THREADS 4
#define STOPS_ITERS 1000
#define STOPS_BIG_RECORDS (4200u * 1024u)
#define STOPS_CHILD_RECORDS 1000

static volatile sig_atomic_t stops_flag;
static int stops_ready_fd = -1, stops_go_fd = -1;

/* "The program's own handler": sets a flag, or ends the process. */
static void stops_on_flag(int sig) { stops_flag = sig; }
static void stops_on_exit(int sig) {
    (void)sig;
    _exit(3);
}

static void stops_install(void (*fn)(int)) {
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    struct sigaction sa;
    unsigned i;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

/* Before memobs' constructor (a priority runs before none). */
__attribute__((constructor(101))) static void stops_early(void) {
    const char *h = getenv("STOPS_HANDLER");
    if (h && !strcmp(h, "flag-before")) stops_install(stops_on_flag);
    if (h && !strcmp(h, "exit-before")) stops_install(stops_on_exit);
}

static void stops_say(const char *fmt, long v) {
    char line[64];
    int n = snprintf(line, sizeof line, fmt, v);
    if (stops_ready_fd >= 0 && n > 0 && write(stops_ready_fd, line, (size_t)n) != n) _exit(90);
}

/* Blocks until the go pipe ends (the script closed its end). */
static void stops_wait_go(void) {
    char c;
    if (stops_go_fd < 0) {
        fprintf(stderr, "stops: STOPS_GO_FD is not set\n");
        _exit(91);
    }
    while (read(stops_go_fd, &c, 1) > 0) {
    }
}

static void *stops_worker(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg, i;
    for (i = 0; i < STOPS_ITERS; i++) {
        MEMOBS_RECORD_H2D(4096 + t, 1);
        MEMOBS_RECORD_H2D(1024, 0);
        MEMOBS_RECORD_D2H(512, 1);
        MEMOBS_RECORD_D2H(2048 + t, 0);
        MEMOBS_RECORD_D2D(256, 0);
        MEMOBS_RECORD_D2D_CUR(64 + t); /* this thread never set a phase: unphased */
        MEMOBS_COUNTER_ADD("stops_steps", 1);
    }
    return NULL;
}

/* Records until the process ends. */
static void *stops_busy(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg;
    for (;;) {
        MEMOBS_RECORD_H2D(4096 + t, 1);
        MEMOBS_RECORD_D2H(2048 + t, 0);
        MEMOBS_RECORD_D2D_CUR(64 + t);
        MEMOBS_COUNTER_ADD("stops_steps", 1);
    }
    return NULL;
}

/* Idle threads that stay, as a server's do: a signal may land on them. */
static void *stops_idle(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static char stops_arena[128];
static int *volatile stops_null; /* a store through it faults: a real SIGSEGV */

static void stops_record(void) {
    pthread_t th[STOPS_THREADS], idle;
    unsigned i;
    for (i = 0; i < STOPS_THREADS; i++)
        if (pthread_create(&th[i], NULL, stops_worker, (void *)(uintptr_t)i) != 0) _exit(92);
    for (i = 0; i < STOPS_THREADS; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 48; i++) MEMOBS_TRACK_ALLOC_N(stops_arena + i, (1u << 20) + 4096u * i, MEMOBS_MEM_DEVICE, "kv_cache");
    for (i = 1; i < 48; i += 2) MEMOBS_TRACK_FREE(stops_arena + i);
    for (i = 0; i < 32; i++) MEMOBS_TRACK_ALLOC_N(stops_arena + 48 + i, 4096u * (i + 1), MEMOBS_MEM_HOST, "staging");
    for (i = 0; i < 32; i += 4) MEMOBS_TRACK_FREE(stops_arena + 48 + i);
    for (i = 0; i < 8; i++) MEMOBS_TRACK_ALLOC_N(stops_arena + 80 + i, 65536, MEMOBS_MEM_PINNED, "pinned");
    for (i = 0; i < 2; i++)
        if (pthread_create(&idle, NULL, stops_idle, NULL) != 0) _exit(92);
}

static void stops_wait_signal(void) {
    struct timespec t = {0, 5000000};
    while (!stops_flag) nanosleep(&t, NULL);
}

static int stops_fork(int together) {
    int only_parent[2];
    pid_t pid;
    unsigned i;
    char c;
    if (pipe(only_parent) != 0) return 93;
    pid = fork();
    if (pid < 0) return 94;
    if (pid == 0) {
        close(only_parent[1]);
        for (i = 0; i < STOPS_CHILD_RECORDS; i++) MEMOBS_RECORD_H2D(1, 1);
        stops_say("child %ld\n", (long)getpid());
        if (together) stops_wait_go();
        else
            while (read(only_parent[0], &c, 1) > 0) {
            }
        return 0;
    }
    close(only_parent[0]);
    stops_say("ready %ld\n", (long)getpid());
    stops_wait_go();
    return 0;
}

int main(int argc, char **argv) {
    const char *end = argc > 1 ? argv[1] : "return", *h = getenv("STOPS_HANDLER"), *s;
    if ((s = getenv("STOPS_READY_FD")) != NULL) stops_ready_fd = atoi(s);
    if ((s = getenv("STOPS_GO_FD")) != NULL) stops_go_fd = atoi(s);
#ifdef STOPS_SET_SIGNALS
    memobs_set_signals(0);
#endif
    if (h && !strcmp(h, "flag-after")) stops_install(stops_on_flag);
    if (h && !strcmp(h, "exit-after")) stops_install(stops_on_exit);
    stops_record();
    if (!strcmp(end, "return")) return 0;
    if (!strcmp(end, "exit")) exit(5);
    if (!strcmp(end, "_exit")) _exit(6);
    if (!strcmp(end, "abort")) abort();
    if (!strcmp(end, "segv")) {
        *stops_null = 1;
        return 70;
    }
    if (!strcmp(end, "wait") || !strcmp(end, "flush-wait") || !strcmp(end, "busy")) {
        pthread_t th;
        unsigned i;
        if (end[0] == 'f') memobs_flush();
        for (i = 0; end[0] == 'b' && i < STOPS_THREADS; i++)
            if (pthread_create(&th, NULL, stops_busy, (void *)(uintptr_t)i) != 0) _exit(92);
        stops_say("ready %ld\n", (long)getpid());
        stops_wait_signal();
        return 0;
    }
    if (!strcmp(end, "big")) {
        uint32_t i;
        for (i = 0; i < STOPS_BIG_RECORDS; i++) MEMOBS_RECORD_H2D_CUR(1);
        stops_say("exiting %ld\n", (long)getpid());
        return 0;
    }
    if (!strcmp(end, "stdout")) {
        printf("hello\n");
        fflush(stdout);
        stops_say("ready %ld\n", (long)getpid());
        stops_wait_go();
        return 0;
    }
    if (!strcmp(end, "fork-after")) return stops_fork(0);
    if (!strcmp(end, "fork-together")) return stops_fork(1);
    fprintf(stderr, "stops: unknown END '%s'\n", end);
    return 2;
}
