/* tests/serving/signals/stop.c - a program that records known figures, says
   "ready" on stdout, and waits to be stopped, for tests/serving/signals/drive.py
   (run by tests/serving/test_signals.sh). Built with MEMOBS_NO_AUTOINIT, so that
   a handler of its own can come before memobs (mode own-before), and
   once more with MEMOBS_DISABLE: the same program without memobs, whose
   exit status and signal are the reference.

   usage: stop MODE [SIGNAL]
     wait          records, then waits (SIGNAL is sent by the driver)
     own-before    its own SA_SIGINFO handler for SIGNAL, then memobs_init()
     own-after     memobs_init(), then its own handler (replaces memobs')
     own-after-off own-after, then memobs_set_signals(0): leaves its handler
     own-reraise   own-before, the handler restoring SIG_DFL and raising
     own-oneshot   own-before with SA_RESETHAND; after the first signal it
                   prints "handled ..." and waits on (the second one's
                   default action ends it)
     call-off      memobs_set_signals(0) (prints what it returned)
     threads       wait, with two threads recording 64-byte copies nonstop
     fork          records, forks; the child records more and waits (the
                   driver stops it); the parent reports the child's status
                   and waits for SIGUSR1
     segv bus fpe ill abort overflow
                   a crash of that kind (overflow: unbounded recursion on
                   the main thread); with SIGNAL "own": a SA_ONSTACK
                   handler of its own for it, installed before memobs,
                   that writes memobs' crash state to $STOP_MARKER and
                   lets the crash go on
   Its own stop handler counts the signal and keeps its siginfo; the main
   loop then prints "handled sig=S code=C pid=P count=N" and exits 3.
   SIGUSR1 (always its own) ends the wait: exit 4. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, SA_ONSTACK */
#define _POSIX_C_SOURCE 200809L
#define MEMOBS_NO_AUTOINIT
#define MEMOBS_IMPLEMENTATION
#include "memobs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t own_count, own_sig, own_code, own_pid, finish;
static int reraise, marker_fd = -1;

static void on_own(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    own_count++;
    own_sig = si ? si->si_signo : -1;
    own_code = si ? si->si_code : -1;
    own_pid = si ? (sig_atomic_t)si->si_pid : -1;
    if (reraise) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

static void on_usr1(int sig) {
    (void)sig;
    finish = 1;
}

static void put_num(char *buf, size_t *n, unsigned long v) {
    char t[24];
    size_t k = 0;
    do t[k++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (k) buf[(*n)++] = t[--k];
}

/* The crash handler of its own: async-signal-safe. memobs' crash state
   (memobs__sig.crashing, private, in this file's implementation) is 2 once
   memobs' handler called the crash writer; it came first and put this one
   back. Then the crash goes on: a fault runs again under SIG_DFL, a sent
   signal is sent again. */
static void on_crash(int sig, siginfo_t *si, void *uc) {
    char buf[96] = "crash sig=";
    size_t n = strlen(buf);
    unsigned long state = 9; /* no memobs */
    (void)uc;
#ifdef MEMOBS__HAVE_SIGNALS
    state = __atomic_load_n(&memobs__sig.crashing.v, __ATOMIC_ACQUIRE);
#endif
    put_num(buf, &n, (unsigned long)sig);
    memcpy(buf + n, " crashing=", 10), n += 10;
    put_num(buf, &n, state);
    buf[n++] = '\n';
    if (marker_fd >= 0 && write(marker_fd, buf, n) < 0) _exit(99);
    signal(sig, SIG_DFL);
    if (si->si_code <= 0) raise(sig);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) {
        perror("sigaction");
        exit(2);
    }
}

static void nap_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static void *recorder(void *arg) {
    (void)arg;
    for (;;) MEMOBS_RECORD_H2D(64, 0);
    return NULL;
}

/* The figures every mode records before "ready": checked exactly in the
   outputs (summary JSON, Prometheus file, leak report, trace). */
static void record_known(void) {
    static char block[4096];
    int i;
    for (i = 0; i < 3; i++) MEMOBS_RECORD_H2D(1000, 1);
    MEMOBS_RECORD_D2H(205, 0);
    MEMOBS_RECORD_D2D(30, 1);
    MEMOBS_COUNTER_ADD("stops_test", 7);
    MEMOBS_TRACK_ALLOC_N(block, sizeof block, MEMOBS_MEM_HOST, "stop_block"); /* never freed: a leak */
}

static void wait_stop(void) {
    while (!own_count && !finish) nap_ms(5);
    if (own_count) {
        printf("handled sig=%d code=%d pid=%ld count=%d\n", (int)own_sig, (int)own_code, (long)own_pid,
               (int)own_count);
        fflush(stdout);
        exit(3);
    }
    exit(4);
}

static void ready(void) {
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
}

static volatile unsigned long depth_limit = ~0ul; /* never reached: the stack overflows first */
static __attribute__((noinline)) unsigned long recurse(unsigned long depth) {
    volatile char pad[512];
    pad[0] = (char)depth;
    if (depth >= depth_limit) return depth;
    return recurse(depth + 1) + pad[0];
}

static void crash(const char *what) {
    if (!strcmp(what, "segv")) {
        volatile int *p = (volatile int *)mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        *p = 1;
    } else if (!strcmp(what, "bus")) {
        char path[] = "/tmp/memobs_stop_busXXXXXX";
        int fd = mkstemp(path);
        volatile char *p;
        if (fd < 0) return;
        unlink(path);
        p = (volatile char *)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); /* an empty file */
        if (p == MAP_FAILED) return;
        p[0] = 1;
    } else if (!strcmp(what, "fpe")) {
#if defined(__x86_64__)
        __asm__ volatile("xorl %%ecx, %%ecx\n\tmovl $1, %%eax\n\tcltd\n\tidivl %%ecx" ::: "eax", "ecx", "edx");
#else
        raise(SIGFPE);
#endif
    } else if (!strcmp(what, "ill")) {
#if defined(__x86_64__)
        __asm__ volatile("ud2");
#else
        raise(SIGILL);
#endif
    } else if (!strcmp(what, "abort")) {
        abort();
    } else if (!strcmp(what, "overflow")) {
        printf("%lu\n", recurse(0));
    }
}

static int crash_sig(const char *what) {
    return !strcmp(what, "segv") || !strcmp(what, "overflow") ? SIGSEGV
         : !strcmp(what, "bus") ? SIGBUS
         : !strcmp(what, "fpe") ? SIGFPE
         : !strcmp(what, "ill") ? SIGILL
         : !strcmp(what, "abort") ? SIGABRT : 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "wait";
    int sig = argc > 2 ? atoi(argv[2]) : SIGTERM;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);

    if (crash_sig(mode)) {
        if (argc > 2 && !strcmp(argv[2], "own")) {
            const char *m = getenv("STOP_MARKER");
            marker_fd = m ? open(m, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644) : -1;
            install(crash_sig(mode), on_crash, SA_ONSTACK);
        }
        memobs_init();
        record_known();
        ready();
        crash(mode);
        return 5; /* the crash did not happen */
    }

    reraise = !strcmp(mode, "own-reraise");
    if (!strcmp(mode, "own-before") || reraise) install(sig, on_own, 0);
    if (!strcmp(mode, "own-oneshot")) install(sig, on_own, SA_RESETHAND);
    memobs_init();
    if (!strcmp(mode, "own-after") || !strcmp(mode, "own-after-off")) install(sig, on_own, 0);
    if (!strcmp(mode, "own-after-off")) {
        int was = memobs_set_signals(0);
        printf("set_signals %d\n", was);
    }
    if (!strcmp(mode, "call-off")) {
        int was = memobs_set_signals(0), again = memobs_set_signals(0);
        printf("set_signals %d %d\n", was, again);
    }
    record_known();

    if (!strcmp(mode, "threads")) {
        pthread_t th;
        int i;
        for (i = 0; i < 2; i++)
            if (pthread_create(&th, NULL, recorder, NULL) != 0) return 2;
    }
    if (!strcmp(mode, "fork")) {
        pid_t pid;
        int st;
        fflush(stdout);
        pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) {
            MEMOBS_RECORD_D2H(7, 0);
            printf("child-ready %ld\n", (long)getpid());
            fflush(stdout);
            for (;;) nap_ms(5); /* until the driver's signal */
        }
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        printf("child-status %d\n", st);
        ready();
        while (!finish) nap_ms(5);
        return 4;
    }
    ready();
    if (!strcmp(mode, "own-oneshot")) {
        while (!own_count) nap_ms(5);
        printf("handled sig=%d code=%d pid=%ld count=%d\n", (int)own_sig, (int)own_code, (long)own_pid,
               (int)own_count);
        fflush(stdout);
        for (;;) nap_ms(5);
    }
    wait_stop();
    return 0;
}
