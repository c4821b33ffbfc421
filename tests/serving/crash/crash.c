/* The crash writer (memobs__crash_write, memobs.h's "Private: crash
   writer"): a program that records known figures on several threads, then
   crashes with its own handler, which calls the crash writer, restores the
   default action and re-raises (what the signal handlers of memobs do).
   tests/serving/test_crash.sh runs it and checks what was written.

   crash MODE DIR
     MODE  segv   a write to a PROT_NONE page (a real SIGSEGV)
           abrt   abort()
           bus, fpe, ill   raise() of that signal
           segv2  two threads fault at the same moment
           busy   four threads record and track without pause; the crash
                  comes in the middle of that
           fork   a child forked without exec crashes (SIGSEGV); the parent
                  waits and leaves without writing anything
           alive  no crash: the writer runs from a SIGUSR1 handler on an
                  alternate stack, then the in-process checks (with
                  MEMOBS_PROM_INTERVAL_MS=0: they run the periodic step)
     DIR   where the references go: ref.json, ref.txt and ref.prom (the
           normal writers' output just before the crash), expect.json (the
           figures recorded, from the constants below), pid, and
           periodic.prom (a copy of the first periodic Prometheus write)
           when CRASH_PERIODIC names the file to wait for.
   Other variables: CRASH_APART=1 counts the plain records apart as manual
   (memobs_set_manual_apart), CRASH_EXIT_OFF=1 calls memobs_set_exit_outputs(0),
   CRASH_MARK=1 writes "crash-begin"/"crash-end" to fd -1 around the
   writer (for strace). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../../memobs.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../check.h"

#define NT 4           /* recording threads that exit */
#define NKEEP 2        /* recording threads that stay alive until the crash */
#define REC 1000       /* records per thread, direction and phase */
#define TRK_HOST 10    /* host allocations per thread, of which 4 freed */
#define TRK_DEV 3      /* device allocations per thread, of which 1 freed */
#define TRK_PIN 2      /* pinned allocations per thread, none freed */

static const char *dir_arg;
static int apart;
static int extra; /* the records made after the periodic write (CRASH_PERIODIC; not with CRASH_APART) */

/* bytes of one record by thread, direction and phase: all different */
static uint64_t rec_bytes(unsigned t, unsigned d, unsigned p) { return 64u * (1u + t) + 8u * d + p; }

static void quiet(int level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

/* ---- malloc, watched: a call while in_writer is counted (plain builds) ---- */
static volatile int in_writer;
static volatile int allocs_in_writer;
#ifdef CRASH_INTERPOSE
#ifdef __cplusplus
extern "C" {
#endif
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n) {
    if (in_writer) allocs_in_writer++;
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
    if (in_writer) allocs_in_writer++;
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    if (in_writer) allocs_in_writer++;
    return __libc_realloc(p, n);
}
void free(void *p) {
    if (in_writer && p) allocs_in_writer++;
    __libc_free(p);
}
#ifdef __cplusplus
}
#endif
#endif

static void writer(int sig) {
    if (getenv("CRASH_MARK")) (void)!write(-1, "crash-begin", 11);
    in_writer = 1;
    memobs__crash_write(sig);
    in_writer = 0;
    if (getenv("CRASH_MARK")) (void)!write(-1, "crash-end", 9);
}

/* What the signal handlers of memobs do: write, then let the crash proceed. */
static void on_crash(int sig) {
    writer(sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK;
    sigaction(sig, &sa, NULL);
}

/* ---- the figures ---- */

static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t keep_cond = PTHREAD_COND_INITIALIZER;
static int keep_ready;
static volatile int stop_busy;
static unsigned busy_ops; /* iterations of the busy threads, all together */

static pthread_mutex_t trk_lock = PTHREAD_MUTEX_INITIALIZER;

static void record_thread(unsigned t) {
    unsigned d, p, i;
    uintptr_t base = (uintptr_t)0x10000000u + (uintptr_t)t * 0x100000u;
    for (p = 0; p < 3; p++) {
        for (d = 0; d < 3; d++) {
            for (i = 0; i < REC; i++) {
                if (apart && i % 2 == 0) memobs_observer_enter();
                memobs_record_xfer((memobs_dir_t)d, rec_bytes(t, d, p), (memobs_phase_t)p);
                if (apart && i % 2 == 0) memobs_observer_leave();
            }
        }
    }
    for (i = 0; i < 100; i++) MEMOBS_COUNTER_ADD("evictions", 3);
    memobs_counter_add(memobs_counter_register("requests_served", "Requests served by the test."), 7);
    pthread_mutex_lock(&trk_lock); /* one thread's 4 freed at a time: the peak expect.json says */
    for (i = 0; i < TRK_HOST; i++) MEMOBS_TRACK_ALLOC_N((void *)(base + i * 64u), 1000, MEMOBS_MEM_HOST, "host_buf");
    for (i = 0; i < 4; i++) MEMOBS_TRACK_FREE((void *)(base + i * 64u));
    pthread_mutex_unlock(&trk_lock);
    for (i = 0; i < TRK_DEV; i++)
        MEMOBS_TRACK_ALLOC_N((void *)(base + 0x10000u + i * 64u), 1u << 20, MEMOBS_MEM_DEVICE, "kv_cache");
    MEMOBS_TRACK_FREE((void *)(base + 0x10000u));
    for (i = 0; i < TRK_PIN; i++) MEMOBS_TRACK_ALLOC((void *)(base + 0x20000u + i * 64u), 4096, MEMOBS_MEM_PINNED);
    for (i = 0; i < 5; i++) {
        MEMOBS_REGION_BEGIN("decode_step");
        MEMOBS_REGION_END();
    }
    MEMOBS_MARK("evict");
    MEMOBS_MARK("evict");
    MEMOBS_REGION_BEGIN("nccl all_reduce");
    MEMOBS_REGION_END();
}

static void *exit_main(void *arg) {
    record_thread((unsigned)(uintptr_t)arg);
    return NULL;
}

static void *keep_main(void *arg) {
    record_thread((unsigned)(uintptr_t)arg);
    pthread_mutex_lock(&keep_lock);
    keep_ready++;
    pthread_cond_broadcast(&keep_cond);
    pthread_mutex_unlock(&keep_lock);
    for (;;) pause(); /* alive, its escrow record unfolded, until the crash */
    return NULL;
}

static void record_all(void) {
    pthread_t th[NT + NKEEP];
    unsigned t;
    memobs_request_begin(1);
    memobs_request_token(1);
    memobs_request_token(1);
    memobs_request_end(1);
    memobs_request_begin(2); /* in flight */
    memobs_request_begin(3);
    memobs_request_end(3); /* aborted */
    memobs_record_ttft(1000000);
    memobs_record_ttft(2000000);
    memobs_record_ttft(3000000);
    memobs_record_ttft(50000000);
    memobs_record_tpot(10000000);
    memobs_record_tpot(10000000);
    memobs_record_tpot(12000000);
    memobs_record_xfer_timed(MEMOBS_DIR_H2D, 1u << 20, MEMOBS_PHASE_PREFILL, 100000);
    memobs_record_xfer_timed(MEMOBS_DIR_D2H, 4096, MEMOBS_PHASE_DECODE, 2500);
    memobs_timed_in_flight(2, 8192);
    memobs_record_xfer((memobs_dir_t)7, 5, MEMOBS_PHASE_DECODE); /* a bad record */
    for (t = 0; t < NT; t++) pthread_create(&th[t], NULL, exit_main, (void *)(uintptr_t)t);
    for (t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (t = NT; t < NT + NKEEP; t++) pthread_create(&th[t], NULL, keep_main, (void *)(uintptr_t)t);
    pthread_mutex_lock(&keep_lock);
    while (keep_ready < NKEEP) pthread_cond_wait(&keep_cond, &keep_lock);
    pthread_mutex_unlock(&keep_lock);
}

/* expect.json: the figures from the constants above. */
static void write_expect(void) {
    char path[1024];
    FILE *f;
    uint64_t tot[3][3] = {{0}}, all_bytes[3] = {0}; /* [phase][dir] bytes; by dir */
    unsigned t, d, p, nthr = NT + NKEEP;
    const char *pn[3] = {"unphased", "prefill", "decode"}, *dn[3] = {"h2d", "d2h", "d2d"};
    for (t = 0; t < nthr; t++)
        for (p = 0; p < 3; p++)
            for (d = 0; d < 3; d++) tot[p][d] += (uint64_t)REC * rec_bytes(t, d, p);
    tot[MEMOBS_PHASE_PREFILL][MEMOBS_DIR_D2H] += extra ? 100000u : 0u;
    for (p = 0; p < 3; p++)
        for (d = 0; d < 3; d++) all_bytes[d] += tot[p][d];
    snprintf(path, sizeof path, "%s/expect.json", dir_arg);
    f = fopen(path, "w");
    if (!f) return;
    fputs("{", f);
    for (p = 0; p < 3; p++) {
        fprintf(f, "\"%s\":{", pn[p]);
        for (d = 0; d < 3; d++)
            fprintf(f, "%s\"%s_bytes\":%llu,\"%s_count\":%llu", d ? "," : "", dn[d],
                    (unsigned long long)(apart ? tot[p][d] / 2 : tot[p][d]), dn[d],
                    (unsigned long long)(apart ? nthr * REC / 2
                                         : nthr * REC + (extra && p == MEMOBS_PHASE_PREFILL && d == MEMOBS_DIR_D2H)));
        fputs("},", f);
    }
    fprintf(f, "\"total\":{\"h2d_bytes\":%llu,\"d2h_bytes\":%llu,\"d2d_bytes\":%llu},",
            (unsigned long long)(apart ? all_bytes[0] / 2 : all_bytes[0]),
            (unsigned long long)(apart ? all_bytes[1] / 2 : all_bytes[1]),
            (unsigned long long)(apart ? all_bytes[2] / 2 : all_bytes[2]));
    if (apart)
        fprintf(f, "\"manual\":{\"apart\":true,\"total\":{\"h2d_bytes\":%llu,\"h2d_count\":%u}},",
                (unsigned long long)(all_bytes[0] / 2), nthr * 3 * REC / 2);
    /* request 1's first token is a TTFT sample and its second a TPOT one (their times vary) */
    fprintf(f, "\"ttft\":{\"count\":%d,\"max_ns\":50000000},\"tpot\":{\"count\":4},\"e2e\":{\"count\":1},",
            extra ? 6 : 5);
    fprintf(f, "\"requests\":{\"begun\":3,\"completed\":1,\"aborted\":1,\"in_flight\":1},");
    fprintf(f, "\"problems\":{\"bad_records\":1},");
    fprintf(f, "\"counters\":{\"evictions\":%u,\"requests_served\":%u},", nthr * 300u + (unsigned)extra, nthr * 7u);
    fprintf(f, "\"memory\":{\"host\":{\"current_bytes\":%u,\"peak_bytes\":%u,\"live\":%u,\"allocs\":%u,\"frees\":%u},",
            nthr * (TRK_HOST - 4) * 1000u, nthr * (TRK_HOST - 4) * 1000u + 4000u, nthr * (TRK_HOST - 4),
            nthr * TRK_HOST, nthr * 4u);
    fprintf(f, "\"device\":{\"current_bytes\":%u,\"live\":%u,\"allocs\":%u,\"frees\":%u},",
            nthr * (TRK_DEV - 1) * (1u << 20), nthr * (TRK_DEV - 1), nthr * TRK_DEV, nthr);
    fprintf(f, "\"pinned\":{\"current_bytes\":%u,\"peak_bytes\":%u,\"live\":%u}},", nthr * TRK_PIN * 4096u,
            nthr * TRK_PIN * 4096u, nthr * TRK_PIN);
    fprintf(f, "\"timed\":{\"prefill\":{\"h2d\":{\"bytes\":1048576,\"count\":1,\"ns\":100000}},"
            "\"in_flight_copies\":2,\"in_flight_bytes\":8192}}\n");
    fclose(f);
}

static void write_refs(void) {
    char path[1024], *buf;
    size_t n;
    FILE *f;
    snprintf(path, sizeof path, "%s/ref.json", dir_arg);
    memobs_write_summary_file(path, MEMOBS_FORMAT_JSON);
    snprintf(path, sizeof path, "%s/ref.txt", dir_arg);
    memobs_write_summary_file(path, MEMOBS_FORMAT_TEXT);
    n = memobs_format_prometheus(NULL, 0) + 65536;
    buf = (char *)malloc(n);
    memobs_format_prometheus(buf, n);
    snprintf(path, sizeof path, "%s/ref.prom", dir_arg);
    if ((f = fopen(path, "w")) != NULL) {
        fputs(buf, f);
        fclose(f);
    }
    free(buf);
    snprintf(path, sizeof path, "%s/pid", dir_arg);
    if ((f = fopen(path, "w")) != NULL) {
        fprintf(f, "%lld\n", (long long)getpid());
        fclose(f);
    }
    write_expect();
}

/* CRASH_PERIODIC: waits for the periodic write (20 s at most), keeps a
   copy. cp refuses a file renamed over between its stat and its open (the
   next periodic write): tried again, 20 times at most. */
static void keep_periodic(void) {
    const char *p = getenv("CRASH_PERIODIC");
    char cmd[2200];
    int i;
    if (!p) return;
    for (i = 0; i < 2000 && access(p, R_OK) != 0; i++) usleep(10000);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/periodic.prom' 2>/dev/null", p, dir_arg);
    for (i = 0; i < 20 && system(cmd) != 0; i++) {
    }
    if (i == 20) fprintf(stderr, "no periodic write in 20 s (or cp failed 20 times)\n");
}

/* ---- the crashes ---- */

static char *guard_page;
static pthread_barrier_t fault_barrier;

static void fault(void) { *(volatile char *)guard_page = 1; }

static void *fault_main(void *arg) {
    (void)arg;
    pthread_barrier_wait(&fault_barrier);
    fault();
    return NULL;
}

static void *busy_main(void *arg) {
    unsigned t = (unsigned)(uintptr_t)arg, i = 0;
    uintptr_t base = (uintptr_t)0x40000000u + (uintptr_t)t * 0x1000000u;
    while (!stop_busy) {
        void *p = (void *)(base + (i % 512u) * 64u);
        memobs_record_xfer(MEMOBS_DIR_H2D, 4096, MEMOBS_PHASE_DECODE);
        MEMOBS_COUNTER_ADD("busy_ops", 1);
        MEMOBS_TRACK_ALLOC(p, 256, MEMOBS_MEM_HOST);
        MEMOBS_TRACK_FREE(p);
        memobs_record_ttft(1000 + i % 5000u);
        __atomic_fetch_add(&busy_ops, 1u, __ATOMIC_RELAXED);
        i++;
    }
    return NULL;
}

/* ---- alive: the writer from a SIGUSR1 handler, then in-process checks ---- */

#define ALT_SIZE (256 * 1024)
static char *alt_stack;

static void on_usr1(int sig) {
    (void)sig;
    writer(SIGSEGV);
}
static void on_usr2(int sig) { (void)sig; }

static size_t stack_used(void) {
    size_t i;
    for (i = 0; i < ALT_SIZE && (unsigned char)alt_stack[i] == 0xa5; i++) {
    }
    return ALT_SIZE - i;
}

/* Everything in path ("" when absent). */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    b = (char *)malloc((size_t)n + 1);
    n = (long)fread(b, 1, (size_t)n, f);
    b[n] = 0;
    fclose(f);
    return b;
}

/* memobs__out_printf's %f, %e and %g, exactly as glibc's printf: ties,
   boundaries, every scale (subnormals to 2^1024), signs, precisions. */
static void test_floats(void) {
    static const double v[] = {0.0, -0.0, 0.001, 0.004999, 0.005, 0.015, 0.125, 0.375, 0.625, 1.005, 2.675,
                               999.995, 999.994999, 1.0 / 3.0, 12345.675, 1e15 + 0.125, 4503599627370495.5,
                               9007199254740993.0, 1.8e19, 18446744073709551616.0, 5e-324, 2.2250738585072014e-308,
                               1.7976931348623157e308, 0.5, 1.5, 2.5, 9.9999995, 99999.95, 123456.5, 1e-5, 0.0001,
                               -1.25, -0.004, -1234.5678, 1e21, 6.02214076e23};
    static const char *const fmt[] = {"%.0f", "%.1f", "%.2f", "%.3f", "%.4f", "%f", "%.9f", "%10.2f", "%-10.2f|",
                                      "%+.2f", "%010.3f", "%e", "%.0e", "%.2e", "%12.3e", "%g", "%.6g", "%.1g",
                                      "%.0g", "%.3g", "%.10g", "%.17g", "%10g|", "%-12g|", "%+g"};
    char a[512], b[512];
    unsigned i, j, bad = 0;
    uint64_t x = 88172645463325252ull;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        for (j = 0; j < sizeof fmt / sizeof fmt[0]; j++) {
            snprintf(a, sizeof a, fmt[j], v[i]);
            memobs__out_sprintf(b, sizeof b, fmt[j], v[i]);
            if (strcmp(a, b) != 0 && bad++ < 10) printf("    # %.17g %s: printf %s, memobs %s\n", v[i], fmt[j], a, b);
        }
    }
    for (i = 0; i < 3; i++) { /* not numbers */
        double w = i == 0 ? (double)INFINITY : i == 1 ? -(double)INFINITY : (double)NAN;
        for (j = 0; j < sizeof fmt / sizeof fmt[0]; j++) {
            snprintf(a, sizeof a, fmt[j], w);
            memobs__out_sprintf(b, sizeof b, fmt[j], w);
            if (strcmp(a, b) != 0 && bad++ < 10) printf("    # %s: printf %s, memobs %s\n", fmt[j], a, b);
        }
    }
    for (i = 0; i < 200000; i++) {
        double d;
        uint64_t bits;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i % 4 == 3) { /* any double */
            bits = x;
            if (((bits >> 52) & 0x7ffu) == 0x7ffu) bits &= ~((uint64_t)1 << 62); /* finite */
            memcpy(&d, &bits, sizeof d);
        } else {
            d = (double)(x >> 11) / (double)(1ull << (x % 53)); /* 0 to 2^53, every scale */
            if (i % 5 == 0) d = -d;
        }
        j = (unsigned)(x % (sizeof fmt / sizeof fmt[0]));
        if (i % 2 == 0) j = 2; /* %.2f, the writers' own */
        snprintf(a, sizeof a, fmt[j], d);
        memobs__out_sprintf(b, sizeof b, fmt[j], d);
        if (strcmp(a, b) != 0 && bad++ < 10) printf("    # %.17g %s: printf %s, memobs %s\n", d, fmt[j], a, b);
    }
    CHECK_U64(0, bad);
}

/* memobs_format_bytes and memobs_format_ns against the same rules by snprintf. */
static void test_units(void) {
    static const char *const unit[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    char a[48], b[48];
    unsigned i, bad = 0, k;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (i = 0; i < 300000; i++) {
        uint64_t v;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i < 64) v = (uint64_t)1 << i;
        else if (i < 128) v = ((uint64_t)1 << (i - 64)) - 1u;
        else v = x >> (x % 64);
        if (i < 40) {
            static const uint64_t edge[] = {999, 1000, 999994, 999995, 999994999, 999995000, 999995000000ull,
                                            999994999999ull, 5000, 5005, 1005, 2675, 125, 999999, 1000000,
                                            UINT64_MAX, 0};
            v = edge[i % (sizeof edge / sizeof edge[0])];
        }
        for (k = 0; k < 2; k++) {
            if (k == 0) {
                double d = (double)v / 1000.0;
                unsigned u = 0;
                while (d >= 999.995 && u < 5) d /= 1000.0, u++;
                if (v < 1000) snprintf(a, sizeof a, "%llu B", (unsigned long long)v);
                else snprintf(a, sizeof a, "%.2f %s", d, unit[u]);
                memobs_format_bytes(b, sizeof b, v);
            } else {
                if (v < 1000) snprintf(a, sizeof a, "%llu ns", (unsigned long long)v);
                else if (v < 999995ull) snprintf(a, sizeof a, "%.2f us", (double)v / 1e3);
                else if (v < 999995000ull) snprintf(a, sizeof a, "%.2f ms", (double)v / 1e6);
                else snprintf(a, sizeof a, "%.2f s", (double)v / 1e9);
                memobs_format_ns(b, sizeof b, v);
            }
            if (strcmp(a, b) != 0 && bad++ < 10) printf("    # %s(%llu): snprintf %s, memobs %s\n",
                                                        k ? "ns" : "bytes", (unsigned long long)v, a, b);
        }
    }
    CHECK_U64(0, bad);
    CHECK_STR("1.2", memobs_format_bytes(b, 4, 1234)); /* cut as snprintf cuts */
}

/* memobs__out_printf against snprintf, for the forms the writers use. */
static void test_printf(void) {
    char a[256], b[256];
    memobs__out_t o;
    long long ll[] = {0, 1, -1, 42, -42, 255, 123456789012345ll, -9223372036854775807ll - 1, 9223372036854775807ll};
    unsigned i, bad = 0;
#define CMP(...)                                                                                       \
    do {                                                                                               \
        snprintf(a, sizeof a, __VA_ARGS__);                                                            \
        memobs__out_sprintf(b, sizeof b, __VA_ARGS__);                                                 \
        if (strcmp(a, b) != 0 && bad++ < 10) printf("    # snprintf '%s', memobs '%s'\n", a, b); \
    } while (0)
    for (i = 0; i < sizeof ll / sizeof ll[0]; i++) {
        CMP("[%+9lld] [%lld] [%d] [%i] [%20llu] [%8llu] [%-6d|] [%05d] [%+d]", ll[i], ll[i], (int)ll[i], (int)ll[i],
            (unsigned long long)ll[i], (unsigned long long)ll[i], (int)ll[i], (int)ll[i], (int)ll[i]);
        CMP("[%u] [%-5s] [%10s] [%-32s|] [%c] [%%] [%s%s] [%.3s] [%3c]", (unsigned)ll[i], "H2D", "1.00 KB",
            "decode_step", 'x', "", "ab", "abcdef", 'y');
        CMP("[%x] [%04x] [%llx] [%lu] [%ld] [%zu] [%09u]", (unsigned)ll[i], (unsigned)(ll[i] & 0xff),
            (unsigned long long)ll[i], (unsigned long)ll[i], (long)ll[i], (size_t)ll[i], (unsigned)(ll[i] & 0xffff));
        CMP("[%10.2f] [%.2f] [%.0f]", ll[i] < 0 ? 0.0 : (double)ll[i] / 7.0, 2.675, 0.5);
    }
    CHECK_U64(0, bad);
    /* a string sink cuts, never overruns, and counts what it cut */
    {
        char small[8];
        memobs__out_string(&o, small, sizeof small);
        memobs__out_printf(&o, "%s and more", "abcdef");
        memobs__out_end(&o);
        CHECK_STR("abcdef ", small);
        CHECK(o.err);
        CHECK_U64(15, o.total);
    }
}

/* The tracker's current bytes with the escrow's locks held: the lock-free
   sum, never a wait (the crashed thread may hold them). */
static void test_locks_held(void) {
    uint64_t cur[MEMOBS_MEM_KINDS], want[MEMOBS_MEM_KINDS];
    memobs_summary_t s;
    unsigned k;
    memobs_get_summary(&s);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) want[k] = s.mem[k].current_bytes;
    memobs__spin_lock(&MEMOBS__ESC.lock);
    memobs__crash_current(cur);
    memobs__spin_unlock(&MEMOBS__ESC.lock);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) CHECK_U64(want[k], cur[k]);
    /* a stripe's lock held (a thread in its change): the locks taken
       before it are let go again */
    {
        unsigned i;
        memobs__spin_lock(&MEMOBS__TRK.stripe[5].lock);
        memobs__crash_current(cur);
        for (k = 0; k < MEMOBS_MEM_KINDS; k++) CHECK_U64(want[k], cur[k]);
        CHECK_U64(0, MEMOBS__LOAD(&MEMOBS__ESC.lock.v));
        for (i = 0; i < MEMOBS__TRK_STRIPES; i++)
            if (i != 5) CHECK_U64(0, MEMOBS__LOAD(&MEMOBS__TRK.stripe[i].lock.v));
        memobs__spin_unlock(&MEMOBS__TRK.stripe[5].lock);
    }
    /* free: the exact path, and every lock let go */
    memobs__crash_current(cur);
    for (k = 0; k < MEMOBS_MEM_KINDS; k++) CHECK_U64(want[k], cur[k]);
    CHECK_U64(0, MEMOBS__LOAD(&MEMOBS__ESC.lock.v));
}

/* The writer ran from SIGUSR1 (before this): its stack, its allocations;
   then the periodic Prometheus write is held off for a while, and writes
   again after. */
static size_t writer_stack, empty_stack; /* the alternate stack used: by the writer's handler, by an empty one */
static void test_after_write(void) {
    char *before, *after;
    const char *prom = getenv("CRASH_PROM");
    size_t used = writer_stack;
    printf("    # alternate stack used: %zu bytes by the crash writer's handler, %zu by an empty handler (the "
           "kernel's signal frame)\n", used, empty_stack);
    CHECK(used > empty_stack && used - empty_stack < 8192);
#ifdef CRASH_INTERPOSE
    CHECK_U64(0, allocs_in_writer);
#endif
    if (!prom) return;
    before = slurp(prom);
    CHECK(strstr(before, "\nmemobs_crash_signal{") != NULL);
    memobs_record_xfer(MEMOBS_DIR_D2D, 777, MEMOBS_PHASE_DECODE);
    memobs__prom_tick(0); /* held off: the crash's file stays */
    after = slurp(prom);
    CHECK(strcmp(before, after) == 0);
    free(after);
    MEMOBS__STORE(&memobs__g.crash_until.v, 0u); /* the hold is over */
    memobs__prom_tick(0);
    after = slurp(prom);
    CHECK(strstr(after, "memobs_crash_signal") == NULL);
    CHECK(strstr(after, "direction=\"d2d\",phase=\"decode\"} ") != NULL);
    free(after);
    free(before);
}

/* A second writer while one is under way on another thread waits for it
   and writes nothing itself; on the writer's own thread it returns at once. */
static void *release_later(void *arg) {
    (void)arg;
    usleep(50000);
    __atomic_store_n(&memobs__crash.busy.v, 0u, __ATOMIC_RELEASE);
    return NULL;
}
static void test_reentry(void) {
    pthread_t th, me = pthread_self();
    uint64_t t0;
    errno = 1234;
    __atomic_store_n(&memobs__crash.busy.v, 1u, __ATOMIC_RELEASE);
    __atomic_store(&memobs__crash.writer, &me, __ATOMIC_RELAXED);
    t0 = memobs_now_ns();
    memobs__crash_write(SIGSEGV); /* nested in itself: at once, not after the 6 s another thread's would get */
    CHECK(memobs_now_ns() - t0 < 3000000000u);
    CHECK_U64(1, MEMOBS__LOAD(&memobs__crash.busy.v));
    CHECK_U64(1234, errno);
    pthread_create(&th, NULL, release_later, NULL);
    __atomic_store(&memobs__crash.writer, &th, __ATOMIC_RELAXED);
    memobs__crash_write(SIGSEGV); /* another thread's: waits for it */
    CHECK_U64(0, MEMOBS__LOAD(&memobs__crash.busy.v));
    pthread_join(th, NULL);
}

/* A periodic Prometheus write under way when the crash comes: the crash
   writer waits for it, so that its own file is the last one renamed. */
static void *periodic_later(void *arg) {
    FILE *f;
    (void)arg;
    usleep(100000);
    if ((f = fopen(getenv("CRASH_PROM"), "w")) != NULL) {
        fputs("an older snapshot\n", f);
        fclose(f);
    }
    __atomic_store_n(&memobs__g.prom_busy.v, 0u, __ATOMIC_SEQ_CST);
    return NULL;
}
static void test_waits_for_periodic(void) {
    pthread_t th;
    char *after;
    if (!getenv("CRASH_PROM")) return;
    __atomic_store_n(&memobs__g.prom_busy.v, 1u, __ATOMIC_SEQ_CST);
    pthread_create(&th, NULL, periodic_later, NULL);
    __atomic_store(&memobs__g.prom_thread, &th, __ATOMIC_RELAXED);
    memobs__crash_write(SIGBUS);
    pthread_join(th, NULL);
    after = slurp(getenv("CRASH_PROM"));
    CHECK_HAS(after, ",signal=\"SIGBUS\"} 7\n");
    free(after);
}

static int alive(void) {
    stack_t ss;
    struct sigaction sa;
    alt_stack = (char *)malloc(ALT_SIZE);
    memset(alt_stack, 0xa5, ALT_SIZE);
    ss.ss_sp = alt_stack;
    ss.ss_size = ALT_SIZE;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    writer_stack = stack_used();
    memset(alt_stack, 0xa5, ALT_SIZE);
    sa.sa_handler = on_usr2;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR2);
    empty_stack = stack_used();
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    check__suite = getenv("CRASH_SUITE") ? getenv("CRASH_SUITE") : "crash";
    RUN(test_after_write);
    RUN(test_floats);
    RUN(test_units);
    RUN(test_printf);
    RUN(test_locks_held);
    RUN(test_reentry);
    RUN(test_waits_for_periodic);
    memobs_set_exit_outputs(0);
    return check__failed ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *mode;
    stack_t ss;
    if (argc < 3) {
        fprintf(stderr, "usage: crash MODE DIR\n");
        return 2;
    }
    mode = argv[1];
    dir_arg = argv[2];
    apart = getenv("CRASH_APART") != NULL;
    memobs_set_log(quiet, NULL);
    if (apart) memobs_set_manual_apart(1);
    if (getenv("CRASH_EXIT_OFF")) memobs_set_exit_outputs(0);
    record_all();
    if (getenv("CRASH_PERIODIC")) {
        keep_periodic(); /* then more: the crash's counters are above the periodic write's */
        extra = 1;
        memobs_record_xfer(MEMOBS_DIR_D2H, 100000, MEMOBS_PHASE_PREFILL);
        memobs_record_ttft(7000000);
        MEMOBS_COUNTER_ADD("evictions", 1);
    }
    write_refs();
    if (strcmp(mode, "alive") == 0) return alive();

    /* a small alternate stack, as a program that survives stack overflows has */
    ss.ss_size = 64 * 1024;
    ss.ss_sp = malloc(ss.ss_size);
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    install(SIGSEGV);
    install(SIGBUS);
    install(SIGFPE);
    install(SIGILL);
    install(SIGABRT);
    guard_page = (char *)mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fflush(stdout);
    fflush(stderr);
    if (strcmp(mode, "segv") == 0) fault();
    else if (strcmp(mode, "abrt") == 0) abort();
    else if (strcmp(mode, "bus") == 0) raise(SIGBUS);
    else if (strcmp(mode, "fpe") == 0) raise(SIGFPE);
    else if (strcmp(mode, "ill") == 0) raise(SIGILL);
    else if (strcmp(mode, "segv2") == 0) {
        pthread_t th[2];
        pthread_barrier_init(&fault_barrier, NULL, 2);
        pthread_create(&th[0], NULL, fault_main, NULL);
        pthread_create(&th[1], NULL, fault_main, NULL);
        pthread_join(th[0], NULL);
    } else if (strcmp(mode, "busy") == 0) {
        pthread_t th[4];
        unsigned t;
        for (t = 0; t < 4; t++) pthread_create(&th[t], NULL, busy_main, (void *)(uintptr_t)t);
        for (t = 0; t < 60000 && __atomic_load_n(&busy_ops, __ATOMIC_RELAXED) < 20000; t++) usleep(1000);
        fault(); /* they are still at it */
    } else if (strcmp(mode, "fork") == 0) {
        pid_t child = fork();
        int st;
        if (child == 0) fault();
        waitpid(child, &st, 0);
        printf("child %lld %s %d\n", (long long)child, WIFSIGNALED(st) ? "signal" : "exit",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        fflush(stdout);
        memobs_set_exit_outputs(0);
        _exit(0);
    }
    fprintf(stderr, "no crash (mode %s)\n", mode);
    return 3;
}
