/* tests/serving/hostile/signals_host.c - a host that treats signals as its own, for
   tests/serving/hostile/signals_drive.py (run by tests/serving/test_hostile_signals.sh).
   Built with MEMOBS_NO_AUTOINIT, so that a mode can put its own handler in
   before memobs_init().

   usage: signals_host MODE
     sigwait   memobs_init(), then the server's start: TERM, INT, HUP, USR1
               blocked in main, a thread of its own takes them with
               sigwait(): SIGHUP prints "reload N", SIGTERM prints "term"
               and the server returns 0 (its thread's answer, not a kill)
     wait      records known figures (and TIMELINE_N timeline events),
               says "ready", waits for a stop
     recover   its own SIGSEGV handler (siglongjmp) before memobs_init(),
               then a fault it recovers from; then 100 request begin/end
               pairs, a tracked block, records: exits 0 (the driver reads
               the summary written at exit)
     mce       its own SIGBUS handler before memobs_init(), then SIGBUS with
               si_code BUS_MCEERR_AO sent to itself (rt_tgsigqueueinfo, as
               the kernel's early memory-failure notice): prints
               "mce handled=N code=C summary=E" (E: MEMOBS_SUMMARY exists
               then) and exits 0
     overflow-thread
               a thread that records once (its shard), then recurses until
               its stack overflows (SIGSEGV)
   Every line is written with write(), unbuffered. */
#define _DEFAULT_SOURCE
#define _GNU_SOURCE
#define MEMOBS_NO_AUTOINIT
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void say(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(1, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void figures(void) {
    static char block[4096];
    long i, n = getenv("TIMELINE_N") ? atol(getenv("TIMELINE_N")) : 0;
    MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_D2H(205, 0);
    MEMOBS_TRACK_ALLOC_N(block, sizeof block, MEMOBS_MEM_HOST, "signals_block");
    for (i = 0; i < n; i++) MEMOBS_RECORD_D2D(64, 0);
}

/* ---- sigwait ---- */
static void *waiter(void *arg) {
    sigset_t *set = (sigset_t *)arg;
    int sig, reloads = 0;
    char line[64];
    for (;;) {
        if (sigwait(set, &sig) != 0) continue;
        if (sig == SIGHUP) {
            snprintf(line, sizeof line, "reload %d\n", ++reloads);
            say(line);
        } else if (sig == SIGTERM) {
            say("term\n");
            return NULL;
        } else {
            snprintf(line, sizeof line, "other %d\n", sig);
            say(line);
        }
    }
}

static int mode_sigwait(void) {
    static sigset_t set;
    pthread_t th;
    memobs_init(); /* as a constructor would have */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    figures();
    if (pthread_create(&th, NULL, waiter, &set) != 0) return 90;
    say("ready\n");
    pthread_join(th, NULL);
    return 0;
}

/* ---- recover ---- */
static sigjmp_buf recover_jb;
static volatile int *volatile fault_at; /* a page with no access */
static volatile sig_atomic_t recovered;
static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    recovered++;
    siglongjmp(recover_jb, 1);
}

static int mode_recover(void) {
    struct sigaction sa;
    static char blocks[8][256];
    int i;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    memobs_init();
    figures();
    fault_at = (volatile int *)mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sigsetjmp(recover_jb, 1) == 0) {
        *fault_at = 1; /* memobs' crash writer, then ours, which recovers */
        say("not faulted\n");
        return 91;
    }
    for (i = 0; i < 100; i++) {
        memobs_request_begin((uint64_t)i + 1);
        memobs_request_token((uint64_t)i + 1);
        memobs_request_end((uint64_t)i + 1);
    }
    for (i = 0; i < 8; i++) MEMOBS_TRACK_ALLOC_N(blocks[i], 256, MEMOBS_MEM_HOST, "after_recovery");
    for (i = 0; i < 7; i++) MEMOBS_TRACK_FREE(blocks[i]);
    for (i = 0; i < 5; i++) MEMOBS_RECORD_H2S(77, 0);
    {
        char line[64];
        snprintf(line, sizeof line, "recovered %d\n", (int)recovered);
        say(line);
    }
    return 0;
}

/* ---- mce ---- */
static volatile sig_atomic_t mce_count, mce_code;
static void on_bus(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    mce_count++;
    mce_code = si ? si->si_code : -1;
}

static int mode_mce(void) {
    struct sigaction sa;
    siginfo_t si;
    char line[128];
    const char *sum = getenv("MEMOBS_SUMMARY");
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    memobs_init();
    figures();
    memset(&si, 0, sizeof si);
    si.si_signo = SIGBUS;
    si.si_code = 5; /* BUS_MCEERR_AO */
    si.si_addr = (void *)0x1000;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGBUS, &si) != 0) {
        perror("rt_tgsigqueueinfo");
        return 92;
    }
    snprintf(line, sizeof line, "mce handled=%d code=%d summary=%d\n", (int)mce_count, (int)mce_code,
             sum && access(sum, F_OK) == 0);
    say(line);
    return 0;
}

/* ---- overflow-thread ---- */
static volatile unsigned long depth_limit = ~0ul; /* never reached: the stack overflows first */
static __attribute__((noinline)) unsigned long deep(unsigned long n) {
    volatile char pad[512];
    pad[0] = (char)n;
    if (n >= depth_limit) return n;
    return deep(n + 1) + (unsigned long)pad[0];
}
static void *overflow(void *arg) {
    (void)arg;
    MEMOBS_RECORD_H2D(4096, 1); /* this thread's shard: its alternate stack */
    say("thread ready\n");
    return (void *)(intptr_t)deep(0);
}

static int mode_overflow_thread(void) {
    pthread_t th;
    pthread_attr_t at;
    memobs_init();
    figures();
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    if (pthread_create(&th, &at, overflow, NULL) != 0) return 93;
    pthread_join(th, NULL);
    say("survived\n");
    return 94;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "sigwait")) return mode_sigwait();
    if (!strcmp(m, "wait")) {
        memobs_init();
        figures();
        say("ready\n");
        for (;;) pause();
    }
    if (!strcmp(m, "recover")) return mode_recover();
    if (!strcmp(m, "mce")) return mode_mce();
    if (!strcmp(m, "overflow-thread")) return mode_overflow_thread();
    fprintf(stderr, "usage: signals_host sigwait|wait|recover|mce|overflow-thread\n");
    return 2;
}
