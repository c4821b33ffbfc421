/* Functional tests of the allocation tracker of memobs.h: exact totals under
   threads, peaks and reset, trace interning, tag providers, a full table,
   bad input, the text reports (line by line), peak reports, the
   environment, summaries and fork(). Built as C and as C++, and under
   ASan+UBSan and TSan, linked with -rdynamic (tests/tracker/test_track.sh).

   Without arguments it runs the in-process tests. With a mode argument it
   runs the tests of one environment set up by tests/tracker/test_track.sh (a table
   capacity, a stack depth, peak reports or leaks from the environment...),
   each in a fresh process. Every test frees what it allocates, so later
   tests start with nothing live. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "track"
#endif

#define FP(x) ((const void *)(uintptr_t)(x)) /* a fake pointer: the tracker never dereferences one */
#define HOST MEMOBS_MEM_HOST
#define DEVICE MEMOBS_MEM_DEVICE
#define PINNED MEMOBS_MEM_PINNED
#define MANAGED MEMOBS_MEM_MANAGED

static memobs_summary_t S; /* large: keep it off the stack */
static void snap(void) { memobs_get_summary(&S); }

#define MAX_ALLOCS 40000
static memobs_alloc_info_t ALLOCS[MAX_ALLOCS];

/* Live allocation of p, or NULL. */
static const memobs_alloc_info_t *find_alloc(const void *p) {
    size_t n = memobs_get_allocations(ALLOCS, MAX_ALLOCS), i;
    for (i = 0; i < n && i < MAX_ALLOCS; i++)
        if (ALLOCS[i].ptr == p) return &ALLOCS[i];
    return NULL;
}

#define NOT_LIVE 0xfffffffeu
static uint32_t trace_of(const void *p) {
    const memobs_alloc_info_t *a = find_alloc(p);
    return a ? a->trace : NOT_LIVE;
}

static uint32_t ntraces(void) { return __atomic_load_n(&memobs__g.trk.ntraces.v, __ATOMIC_ACQUIRE); }
static uint64_t nlive(void) { return memobs_get_allocations(NULL, 0); }

static char *trace_text(uint32_t id) {
    static char buf[8192];
    int n = memobs_format_trace(buf, sizeof buf, id);
    if (n < 0) snprintf(buf, sizeof buf, "(memobs_format_trace: %d)", n);
    return buf;
}

static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0; /* warn-once bits: every kind may warn again */
    memobs_set_log(capture_log, NULL);
}

/* ---- report helpers ------------------------------------------------------ */


/* The text a report function writes; the caller frees it. */
static char *report(int (*fn)(FILE *)) {
    FILE *f = tmpfile();
    char *buf;
    CHECK(f != NULL);
    if (!f) return (char *)calloc(1, 1);
    CHECK_U64(MEMOBS_OK, fn(f));
    buf = read_file(f);
    fclose(f);
    return buf ? buf : (char *)calloc(1, 1);
}

#define MAX_LINES 256
static char *LINES[MAX_LINES];
/* Splits buf in place; returns the number of lines (without a trailing empty one). */
static int split_lines(char *buf) {
    int n = 0;
    char *p = buf;
    while (*p && n < MAX_LINES) {
        char *nl = strchr(p, '\n');
        LINES[n++] = p;
        if (!nl) break;
        *nl = 0;
        p = nl + 1;
    }
    return n;
}

/* Display columns of a UTF-8 line: code points. */
static int u8width(const char *s) {
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

#define CHECK_PREFIX(line, prefix)                                                                         \
    do {                                                                                                   \
        const char *cp__l = (line), *cp__p = (prefix);                                                     \
        if (!starts(cp__l, cp__p)) {                                                                       \
            check__failed_checks++;                                                                        \
            printf("    # %s:%d: expected a line starting with\n    #   \"%s\", got\n    #   \"%s\"\n", __FILE__, \
                   __LINE__, cp__p, cp__l);                                                                \
        }                                                                                                  \
    } while (0)

/* Every table line (starting with '|' or '-') of lines[0..n) is 120 display
   columns wide: rules, headers, rows, box lines and "... more" lines. */
static void check_widths(int n, const char *what) {
    int i, bad = 0;
    for (i = 0; i < n; i++) {
        int w;
        if (LINES[i][0] != '|' && LINES[i][0] != '-') continue;
        w = u8width(LINES[i]);
        if (w != 120) {
            if (bad < 3) printf("    # %s: line %d is %d columns wide, not 120: \"%s\"\n", what, i, w, LINES[i]);
            bad++;
        }
    }
    CHECK_U64(0, bad);
}

/* Index of the first line at or after from that starts with prefix, or -1. */
static int find_line(int n, int from, const char *prefix) {
    int i;
    for (i = from; i < n; i++)
        if (starts(LINES[i], prefix)) return i;
    return -1;
}

static char RULE[121];

/* ---- helpers with an exported name (-rdynamic): call sites of stacks ----- */

#ifdef __cplusplus
extern "C" {
#endif
void trk_site_a(const void *p, uint64_t n);
void trk_site_b(const void *p, uint64_t n);
void trk_site_c(const void *p, uint64_t n, memobs_mem_kind_t kind);
void trk_site_tagged(const void *p, uint64_t n);
void trk_site_plain(const void *p, uint64_t n);
#ifdef __cplusplus
}
#endif
static volatile int trk_sink; /* work after each call: no tail call, and no two helpers alike (ICF) */

__attribute__((noinline)) void trk_site_a(const void *p, uint64_t n) {
    MEMOBS_TRACK_ALLOC_S(p, n, HOST, 2); /* this frame and its caller's */
    trk_sink = trk_sink + 1;
}
__attribute__((noinline)) void trk_site_b(const void *p, uint64_t n) {
    MEMOBS_TRACK_ALLOC_S(p, n, HOST, 4);
    trk_sink = trk_sink + 2;
}
__attribute__((noinline)) void trk_site_c(const void *p, uint64_t n, memobs_mem_kind_t kind) {
    MEMOBS_TRACK_ALLOC_S(p, n, kind, 3);
    trk_sink = trk_sink + 3;
}
__attribute__((noinline)) void trk_site_tagged(const void *p, uint64_t n) {
    MEMOBS_TRACK_ALLOC_NS(p, n, HOST, "stk_tag", 4);
    trk_sink = trk_sink + 4;
}
/* Plain MEMOBS_TRACK_ALLOC: a stack only when the default depth asks for one. */
__attribute__((noinline)) void trk_site_plain(const void *p, uint64_t n) {
    MEMOBS_TRACK_ALLOC(p, n, HOST);
    trk_sink = trk_sink + 5;
}

/* n calls of trk_site_a from one call site: one stack. */
static volatile int loop_n = 5;
static __attribute__((noinline)) void call_a_loop(uintptr_t base) {
    int i, n = loop_n;
    for (i = 0; i < n; i++) trk_site_a(FP(base + (uintptr_t)i * 16), 100);
}

/* ---- interning ----------------------------------------------------------- */

static void test_intern_tags(void) {
    uint32_t base = ntraces(), a, b, a2, l1, l2;
    const uintptr_t P = 0x10000000;
    char buf[64];
    /* 70 characters; the two differ only after the 63 kept */
    const char *long1 = "intern_long_0123456789012345678901234567890123456789012345678901_AAAAAA";
    const char *long2 = "intern_long_0123456789012345678901234567890123456789012345678901_BBBBBB";
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x10), 10, HOST, "intern_a");
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x20), 10, HOST, "intern_b");
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x30), 20, DEVICE, "intern_a"); /* kind is not part of a trace */
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x40), 10, HOST, long1);
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x50), 10, HOST, long2);
    MEMOBS_TRACK_ALLOC(FP(P + 0x60), 10, HOST); /* no tag, no stack */
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x70), 10, HOST, ""); /* empty tag: no trace either */
    a = trace_of(FP(P + 0x10));
    b = trace_of(FP(P + 0x20));
    a2 = trace_of(FP(P + 0x30));
    l1 = trace_of(FP(P + 0x40));
    l2 = trace_of(FP(P + 0x50));
    CHECK_U64(base, a); /* dense, first-seen order */
    CHECK_U64(base + 1, b);
    CHECK_U64(base, a2);
    CHECK_U64(base + 2, l1);
    CHECK_U64(base + 2, l2); /* tags are cut to 63 bytes */
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(P + 0x60)));
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(P + 0x70)));
    CHECK_U64(base + 3, ntraces());
    snap();
    CHECK_U64(base + 3, S.track.traces);
    CHECK_U64(0, S.track.traces_dropped);
    CHECK_STR("intern_a", trace_text(a));
    CHECK_STR("intern_b", trace_text(b));
    CHECK_U64(63, strlen(trace_text(l1)));
    CHECK(strncmp(trace_text(l1), long1, 63) == 0);
    CHECK_U64(8, memobs_format_trace(buf, sizeof buf, a));
    CHECK_U64(3, memobs_format_trace(buf, 4, a)); /* cut to len - 1, terminated */
    CHECK_STR("int", buf);
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_format_trace(buf, sizeof buf, base + 3));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_format_trace(buf, sizeof buf, base + 1000));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_format_trace(buf, sizeof buf, MEMOBS_NO_TRACE));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_format_trace(NULL, 10, a));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_format_trace(buf, 0, a));
    MEMOBS_TRACK_FREE(FP(P + 0x10));
    MEMOBS_TRACK_FREE(FP(P + 0x20));
    MEMOBS_TRACK_FREE(FP(P + 0x30));
    MEMOBS_TRACK_FREE(FP(P + 0x40));
    MEMOBS_TRACK_FREE(FP(P + 0x50));
    MEMOBS_TRACK_FREE(FP(P + 0x60));
    MEMOBS_TRACK_FREE(FP(P + 0x70));
    /* a trace outlives its allocations: same tag, same id */
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x80), 10, PINNED, "intern_b");
    CHECK_U64(base + 1, trace_of(FP(P + 0x80)));
    MEMOBS_TRACK_FREE(FP(P + 0x80));
    CHECK_U64(base + 3, ntraces());
    CHECK_U64(0, nlive());
}

static void test_intern_stacks(void) {
    uint32_t base = ntraces(), loop_id, other_site, site_b, tagged;
    const uintptr_t P = 0x11000000;
    const char *t;
    int i;
    loop_n = 5;
    call_a_loop(P); /* 5 allocations, one call site */
    loop_id = trace_of(FP(P));
    CHECK_U64(base, loop_id);
    for (i = 1; i < 5; i++) CHECK_U64(loop_id, trace_of(FP(P + (uintptr_t)i * 16)));
    CHECK_U64(base + 1, ntraces());
    trk_site_a(FP(P + 0x1000), 100); /* same helper, another call site */
    other_site = trace_of(FP(P + 0x1000));
    CHECK_U64(base + 1, other_site);
    trk_site_b(FP(P + 0x2000), 100); /* another helper */
    site_b = trace_of(FP(P + 0x2000));
    CHECK_U64(base + 2, site_b);
    trk_site_tagged(FP(P + 0x3000), 100); /* tag and stack */
    tagged = trace_of(FP(P + 0x3000));
    CHECK_U64(base + 3, tagged);
    trk_site_tagged(FP(P + 0x3010), 100); /* another call site of it */
    CHECK_U64(base + 4, trace_of(FP(P + 0x3010)));
    call_a_loop(P + 0x4000); /* the loop again (depth 2: its caller is not in the stack): the first id */
    CHECK_U64(loop_id, trace_of(FP(P + 0x4000)));
    CHECK_U64(base + 5, ntraces());
    MEMOBS_TRACK_ALLOC_S(FP(P + 0x5000), 8, HOST, 0); /* depth 0: no stack, no tag */
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(P + 0x5000)));

    t = trace_text(loop_id);
    CHECK_PREFIX(t, "\n#0 trk_site_a"); /* empty tag line, then frames; named thanks to -rdynamic */
    CHECK_HAS(t, "\n#1 ");
    CHECK(strstr(t, "\n#2 ") == NULL); /* depth 2 */
    CHECK(strchr(t, '\n') && strchr(t, '\n')[1] == '#');
    t = trace_text(site_b);
    CHECK_PREFIX(t, "\n#0 trk_site_b");
    t = trace_text(tagged);
    CHECK_PREFIX(t, "stk_tag\n#0 trk_site_tagged");
    CHECK_HAS(t, "\n#3 ");
    for (i = 0; i < 5; i++) MEMOBS_TRACK_FREE(FP(P + (uintptr_t)i * 16));
    for (i = 0; i < 5; i++) MEMOBS_TRACK_FREE(FP(P + 0x4000 + (uintptr_t)i * 16));
    MEMOBS_TRACK_FREE(FP(P + 0x1000));
    MEMOBS_TRACK_FREE(FP(P + 0x2000));
    MEMOBS_TRACK_FREE(FP(P + 0x3000));
    MEMOBS_TRACK_FREE(FP(P + 0x3010));
    MEMOBS_TRACK_FREE(FP(P + 0x5000));
    CHECK_U64(0, nlive());
}

/* memobs_track_set_callstack: the depth of plain MEMOBS_TRACK_ALLOC. */
static void test_default_callstack(void) {
    const uintptr_t P = 0x12000000;
    uint32_t id;
    log_start();
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_callstack(-1));
    log_stop();
    CHECK_U64(1, log_count);
    CHECK_U64(0, memobs__g.trk.depth.v);
    trk_site_plain(FP(P), 10);
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(P)));
    CHECK_U64(MEMOBS_OK, memobs_track_set_callstack(2));
    trk_site_plain(FP(P + 16), 10);
    id = trace_of(FP(P + 16));
    CHECK(id != MEMOBS_NO_TRACE && id != NOT_LIVE);
    CHECK_PREFIX(trace_text(id), "\n#0 trk_site_plain");
    CHECK_HAS(trace_text(id), "\n#1 ");
    CHECK(strstr(trace_text(id), "\n#2 ") == NULL);
    CHECK_U64(MEMOBS_OK, memobs_track_set_callstack(1000));
    CHECK_U64(MEMOBS_MAX_STACK, memobs__g.trk.depth.v);
    CHECK_U64(MEMOBS_OK, memobs_track_set_callstack(0));
    trk_site_plain(FP(P + 32), 10);
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(P + 32)));
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_FREE(FP(P + 16));
    MEMOBS_TRACK_FREE(FP(P + 32));
}

/* ---- tag provider -------------------------------------------------------- */

static struct {
    uint32_t line;
    int nframes, captures, retains, retain_n;
    uint32_t retain_line0;
    void *user_seen;
} prov;
static int prov_user;

static int prov_capture(memobs_frame_t *fr, int max, void *user) {
    int i;
    prov.captures++;
    prov.user_seen = user;
    for (i = 0; i < prov.nframes && i < max; i++) {
        fr[i].pc = 0x5000u + (uintptr_t)i;
        fr[i].line = prov.line + (uint32_t)i;
        fr[i].aux = (uint32_t)i;
    }
    return prov.nframes;
}
static void prov_retain(const memobs_frame_t *fr, int n, void *user) {
    (void)user;
    prov.retains++;
    prov.retain_n = n;
    prov.retain_line0 = fr[0].line;
}
static size_t prov_format(const memobs_frame_t *fr, int n, char *buf, size_t len, void *user) {
    size_t o = 0;
    int i;
    (void)user;
    for (i = 0; i < n && o < len; i++) {
        int w = snprintf(buf + o, len - o, "%sfile.py:%u in fn%u", i ? "\n" : "", (unsigned)fr[i].line,
                         (unsigned)fr[i].aux);
        if (w < 0) break;
        o += (size_t)w;
    }
    return o < len ? o : len - 1;
}

static void test_tag_provider(void) {
    memobs_tag_provider_t p;
    const uintptr_t P = 0x13000000;
    uint32_t base, id12, id40, id_untagged, id_plain;
    char *r;
    int n;
    memset(&p, 0, sizeof p);
    p.format = prov_format;
    log_start();
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_tag_provider(&p)); /* no capture */
    p.capture = prov_capture;
    p.format = NULL;
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_tag_provider(&p)); /* no format */
    log_stop();
    CHECK_U64(2, log_count);
    CHECK_U64(0, memobs__g.trk.prov_on.v);
    p.format = prov_format;
    p.retain = prov_retain;
    p.title = "Py Stack";
    p.user = &prov_user;
    memset(&prov, 0, sizeof prov);
    prov.nframes = 3;
    prov.line = 12;
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(&p));
    base = ntraces();
    MEMOBS_TRACK_ALLOC_N(FP(P), 1000, HOST, "prov_tag");
    CHECK_U64(1, prov.captures);
    CHECK(prov.user_seen == (void *)&prov_user);
    CHECK_U64(1, prov.retains); /* a new trace */
    CHECK_U64(3, prov.retain_n);
    CHECK_U64(12, prov.retain_line0);
    MEMOBS_TRACK_ALLOC_N(FP(P + 16), 2000, HOST, "prov_tag"); /* same frames, same tag */
    CHECK_U64(2, prov.captures);
    CHECK_U64(1, prov.retains);
    id12 = trace_of(FP(P));
    CHECK_U64(base, id12);
    CHECK_U64(base, trace_of(FP(P + 16)));
    prov.line = 40;
    MEMOBS_TRACK_ALLOC_N(FP(P + 32), 3000, HOST, "prov_tag"); /* other frames */
    id40 = trace_of(FP(P + 32));
    CHECK_U64(base + 1, id40);
    CHECK_U64(2, prov.retains);
    MEMOBS_TRACK_ALLOC(FP(P + 48), 4000, HOST); /* no tag: the provider's frames still make a trace */
    id_untagged = trace_of(FP(P + 48));
    CHECK_U64(base + 2, id_untagged);
    CHECK_U64(3, prov.retains);
    prov.nframes = 0; /* nothing captured: a plain tag trace */
    MEMOBS_TRACK_ALLOC_N(FP(P + 64), 5000, HOST, "prov_tag");
    id_plain = trace_of(FP(P + 64));
    CHECK_U64(base + 3, id_plain);
    CHECK_U64(3, prov.retains);
    CHECK_STR("prov_tag", trace_text(id_plain));
    CHECK_STR("prov_tag\nfile.py:12 in fn0\nfile.py:13 in fn1\nfile.py:14 in fn2", trace_text(id12));
    CHECK_STR("\nfile.py:40 in fn0\nfile.py:41 in fn1\nfile.py:42 in fn2", trace_text(id_untagged));

    r = report(memobs_print_alloc_groups);
    n = split_lines(r);
    {
        /* largest first: plain tag 5000 (no box), untagged 4000, id12 3000 in 2, id40 3000 */
        char want[96];
        int rows[4], k;
        const uint32_t ids[4] = {id_plain, id_untagged, id12, id40};
        const char *const cells[4] = {"5000 (      0.00) |       1", "4000 (      0.00) |       1",
                                      "3000 (      0.00) |       2", "3000 (      0.00) |       1"};
        const unsigned first[4] = {0, 40, 12, 40};
        for (k = 0; k < 4; k++) {
            snprintf(want, sizeof want, "| %5u |         %s | host ", (unsigned)ids[k], cells[k]);
            rows[k] = find_line(n, 0, want);
            CHECK(rows[k] > 0);
            if (rows[k] <= 0 || rows[k] + 5 >= n) continue;
            if (k > 0) CHECK(rows[k] > rows[k - 1]);
            if (k == 0) {
                CHECK(!starts(LINES[rows[k] + 1], "|   ┌"));
                continue;
            }
            CHECK_PREFIX(LINES[rows[k] + 1], "|   ┌─ Py Stack ─");
            snprintf(want, sizeof want, "|   │    file.py:%u in fn0 ", first[k]);
            CHECK_PREFIX(LINES[rows[k] + 2], want);
            snprintf(want, sizeof want, "|   │    file.py:%u in fn1 ", first[k] + 1);
            CHECK_PREFIX(LINES[rows[k] + 3], want);
            snprintf(want, sizeof want, "|   │    file.py:%u in fn2 ", first[k] + 2);
            CHECK_PREFIX(LINES[rows[k] + 4], want);
            CHECK_PREFIX(LINES[rows[k] + 5], "|   └─");
        }
        if (rows[1] > 0) CHECK(strstr(LINES[rows[1]], " | [Multi-Line Stack] ") != NULL);
        if (rows[2] > 0) CHECK(strstr(LINES[rows[2]], " | prov_tag ") != NULL);
    }
    check_widths(n, "groups with provider boxes");
    free(r);

    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(NULL));
    CHECK_U64(0, memobs__g.trk.prov_on.v);
    n = prov.captures;
    MEMOBS_TRACK_ALLOC_N(FP(P + 80), 10, HOST, "prov_tag");
    CHECK_U64(n, prov.captures); /* removed: not called */
    CHECK_U64(id_plain, trace_of(FP(P + 80)));
    /* traces of a removed provider stay printable */
    CHECK_STR("prov_tag\nfile.py:12 in fn0\nfile.py:13 in fn1\nfile.py:14 in fn2", trace_text(id12));

    /* no title: "Stack Trace"; no retain: fine */
    p.title = NULL;
    p.retain = NULL;
    prov.nframes = 1;
    prov.line = 7;
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(&p));
    MEMOBS_TRACK_ALLOC(FP(P + 96), 6000, HOST);
    CHECK_STR("\nfile.py:7 in fn0", trace_text(trace_of(FP(P + 96))));
    CHECK_U64(3, prov.retains);
    r = report(memobs_print_allocations);
    n = split_lines(r);
    CHECK(find_line(n, 0, "|   ┌─ Stack Trace ─") > 0);
    CHECK(find_line(n, 0, "|   │    file.py:7 in fn0 ") > 0);
    free(r);
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(NULL));
    for (n = 0; n <= 96; n += 16) MEMOBS_TRACK_FREE(FP(P + (uintptr_t)n));
    CHECK_U64(0, nlive());
}

/* ---- current, peak, reset ------------------------------------------------ */

static void test_peak_and_reset(void) {
    const uintptr_t P = 0x14000000;
    uint64_t base_cur, base_live, dev_peak;
    memobs_reset();
    snap();
    base_cur = S.mem[PINNED].current_bytes;
    base_live = S.mem[PINNED].live;
    dev_peak = S.mem[DEVICE].peak_bytes;
    CHECK_U64(base_cur, S.mem[PINNED].peak_bytes); /* the window's peak starts at current */
    CHECK_U64(0, S.mem[PINNED].allocs);
    MEMOBS_TRACK_ALLOC(FP(P), 100, PINNED);
    MEMOBS_TRACK_ALLOC(FP(P + 16), 50, PINNED);
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_ALLOC(FP(P + 32), 20, PINNED);
    snap();
    CHECK_U64(base_cur + 70, S.mem[PINNED].current_bytes);
    CHECK_U64(base_cur + 150, S.mem[PINNED].peak_bytes);
    CHECK_U64(base_live + 2, S.mem[PINNED].live);
    CHECK_U64(3, S.mem[PINNED].allocs);
    CHECK_U64(1, S.mem[PINNED].frees);
    CHECK_U64(170, S.mem[PINNED].alloc_bytes);
    CHECK_U64(dev_peak, S.mem[DEVICE].peak_bytes); /* other kinds untouched */
    CHECK_U64(1, S.tracking);
    memobs_reset();
    snap();
    CHECK_U64(base_cur + 70, S.mem[PINNED].current_bytes);
    CHECK_U64(base_cur + 70, S.mem[PINNED].peak_bytes);
    CHECK_U64(base_live + 2, S.mem[PINNED].live);
    CHECK_U64(0, S.mem[PINNED].allocs);
    CHECK_U64(0, S.mem[PINNED].frees);
    CHECK_U64(0, S.mem[PINNED].alloc_bytes);
    MEMOBS_TRACK_ALLOC(FP(P + 48), 10, PINNED);
    MEMOBS_TRACK_FREE(FP(P + 16));
    MEMOBS_TRACK_FREE(FP(P + 32));
    MEMOBS_TRACK_FREE(FP(P + 48));
    snap();
    CHECK_U64(base_cur, S.mem[PINNED].current_bytes);
    CHECK_U64(base_cur + 80, S.mem[PINNED].peak_bytes);
    CHECK_U64(base_live, S.mem[PINNED].live);
    CHECK_U64(1, S.mem[PINNED].allocs);
    CHECK_U64(3, S.mem[PINNED].frees);
    CHECK_U64(10, S.mem[PINNED].alloc_bytes);
}

/* ---- threads ------------------------------------------------------------- */

#define NTHR 8
#define PER 20000
#define WINDOW 8
static char *arena; /* NTHR * PER bytes: its addresses are the fake pointers */
static int stop_reader;
static uint64_t size_of(unsigned k, unsigned i) { return 1 + ((i * 2654435761u) ^ (k * 40503u)) % 100000u; }
static unsigned kind_of(unsigned k, unsigned i) { return (i + k) % MEMOBS_MEM_KINDS; }
static int kept(unsigned i) { return i % 97 == 0; }
static const char *const thr_tags[4] = {"thr_tag_0", "thr_tag_1", "thr_tag_2", "thr_tag_3"};

static void *tracker_thread(void *arg) {
    unsigned k = (unsigned)(uintptr_t)arg, i, j;
    char *base = arena + (size_t)k * PER;
    for (i = 0; i < PER; i++) {
        memobs_track_alloc_full(base + i, size_of(k, i), (memobs_mem_kind_t)kind_of(k, i), -1, NULL,
                                i % 16 == 0 ? thr_tags[k % 4] : NULL, 0);
        if (i >= WINDOW && !kept(i - WINDOW)) MEMOBS_TRACK_FREE(base + i - WINDOW);
    }
    for (j = PER - WINDOW; j < PER; j++)
        if (!kept(j)) MEMOBS_TRACK_FREE(base + j);
    return NULL;
}

typedef struct {
    int bad_allocs, bad_cur, bad_live, rounds;
    uint64_t cur_limit[MEMOBS_MEM_KINDS];
} reader_t;

/* Summaries, snapshots and reports while the threads track: totals never
   go back, current bytes never wrap, nothing crashes (TSan: no race). */
static void *reader_thread(void *arg) {
    static memobs_summary_t r;
    reader_t *st = (reader_t *)arg;
    uint64_t last[MEMOBS_MEM_KINDS] = {0, 0, 0, 0};
    FILE *devnull = fopen("/dev/null", "w");
    char buf[512];
    unsigned k;
    do { /* at least one round, however late this thread starts */
        memobs_get_summary(&r);
        for (k = 0; k < MEMOBS_MEM_KINDS; k++) {
            if (r.mem[k].allocs < last[k]) st->bad_allocs++;
            last[k] = r.mem[k].allocs;
            if (r.mem[k].current_bytes > st->cur_limit[k]) st->bad_cur++;
        }
        if (memobs_get_allocations(NULL, 0) > MEMOBS_TRACK_CAPACITY) st->bad_live++;
        if (devnull && (st->rounds % 4) == 0) {
            memobs_print_allocations(devnull);
            memobs_print_alloc_groups(devnull);
        }
        memobs_format_trace(buf, sizeof buf, r.track.traces ? (uint32_t)r.track.traces - 1 : 0);
        st->rounds++;
    } while (!__atomic_load_n(&stop_reader, __ATOMIC_ACQUIRE));
    if (devnull) fclose(devnull);
    return NULL;
}

static void test_threads_exact(void) {
    static memobs_summary_t before;
    pthread_t t[NTHR], rd;
    reader_t rs;
    uint64_t allocs[MEMOBS_MEM_KINDS] = {0, 0, 0, 0}, frees[MEMOBS_MEM_KINDS] = {0, 0, 0, 0};
    uint64_t bytes[MEMOBS_MEM_KINDS] = {0, 0, 0, 0}, kept_bytes[MEMOBS_MEM_KINDS] = {0, 0, 0, 0};
    uint64_t nkept = 0, live_before, n, i, found = 0, wrong = 0, wrong_trace = 0;
    uint32_t tbase = ntraces();
    unsigned k, c;
    arena = (char *)malloc((size_t)NTHR * PER);
    CHECK(arena != NULL);
    if (!arena) return;
    memobs_reset();
    memobs_get_summary(&before);
    live_before = nlive();
    memset(&rs, 0, sizeof rs);
    for (k = 0; k < NTHR; k++)
        for (i = 0; i < PER; i++) {
            c = kind_of(k, (unsigned)i);
            allocs[c]++;
            bytes[c] += size_of(k, (unsigned)i);
            if (kept((unsigned)i)) {
                kept_bytes[c] += size_of(k, (unsigned)i);
                nkept++;
            } else {
                frees[c]++;
            }
        }
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) rs.cur_limit[c] = before.mem[c].current_bytes + bytes[c];
    stop_reader = 0;
    pthread_create(&rd, NULL, reader_thread, &rs);
    for (k = 0; k < NTHR; k++) pthread_create(&t[k], NULL, tracker_thread, (void *)(uintptr_t)k);
    for (k = 0; k < NTHR; k++) pthread_join(t[k], NULL);
    __atomic_store_n(&stop_reader, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    snap();
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
        CHECK_U64(allocs[c], S.mem[c].allocs);
        CHECK_U64(frees[c], S.mem[c].frees);
        CHECK_U64(bytes[c], S.mem[c].alloc_bytes);
        CHECK_U64(before.mem[c].live + (allocs[c] - frees[c]), S.mem[c].live);
        CHECK_U64(before.mem[c].current_bytes + kept_bytes[c], S.mem[c].current_bytes);
        CHECK(S.mem[c].peak_bytes >= S.mem[c].current_bytes);
        CHECK(S.mem[c].peak_bytes <= before.mem[c].current_bytes + bytes[c]);
    }
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.untracked);
    CHECK_U64(tbase + 4, ntraces()); /* 4 tags interned by 8 threads at once */
    CHECK_U64(0, rs.bad_allocs);
    CHECK_U64(0, rs.bad_cur);
    CHECK_U64(0, rs.bad_live);
    CHECK(rs.rounds > 0);
    n = memobs_get_allocations(ALLOCS, MAX_ALLOCS);
    CHECK_U64(live_before + nkept, n);
    for (i = 0; i < n && i < MAX_ALLOCS; i++) {
        const char *p = (const char *)ALLOCS[i].ptr;
        unsigned kk, ii;
        if (p < arena || p >= arena + (size_t)NTHR * PER) continue;
        found++;
        kk = (unsigned)((size_t)(p - arena) / PER);
        ii = (unsigned)((size_t)(p - arena) % PER);
        if (!kept(ii) || ALLOCS[i].bytes != size_of(kk, ii) || ALLOCS[i].kind != (memobs_mem_kind_t)kind_of(kk, ii))
            wrong++;
        if (ii % 16 == 0) {
            if (ALLOCS[i].trace < tbase || ALLOCS[i].trace >= tbase + 4 ||
                strcmp(trace_text(ALLOCS[i].trace), thr_tags[kk % 4]) != 0)
                wrong_trace++;
        } else if (ALLOCS[i].trace != MEMOBS_NO_TRACE) {
            wrong_trace++;
        }
    }
    CHECK_U64(nkept, found);
    CHECK_U64(0, wrong);
    CHECK_U64(0, wrong_trace);
    /* the main thread frees what the others allocated: live sums back */
    for (k = 0; k < NTHR; k++)
        for (i = 0; i < PER; i++)
            if (kept((unsigned)i)) MEMOBS_TRACK_FREE(arena + (size_t)k * PER + i);
    snap();
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) {
        CHECK_U64(before.mem[c].live, S.mem[c].live);
        CHECK_U64(before.mem[c].current_bytes, S.mem[c].current_bytes);
        CHECK_U64(allocs[c], S.mem[c].frees);
    }
    CHECK_U64(live_before, nlive());
    free(arena);
    arena = NULL;
}

/* One thread allocates, another frees: per-shard counts wrap back. */
#define XN 2000
static void *alloc_many(void *arg) {
    uintptr_t b = (uintptr_t)arg, i;
    for (i = 0; i < XN; i++) MEMOBS_TRACK_ALLOC_N(FP(b + i * 8), 3, MANAGED, "xthread");
    return NULL;
}
static void *free_many(void *arg) {
    uintptr_t b = (uintptr_t)arg, i;
    for (i = 0; i < XN; i++) MEMOBS_TRACK_FREE(FP(b + i * 8));
    return NULL;
}
static void test_cross_thread_free(void) {
    static memobs_summary_t before;
    const uintptr_t P = 0x15000000;
    pthread_t t;
    memobs_reset();
    memobs_get_summary(&before);
    pthread_create(&t, NULL, alloc_many, (void *)P);
    pthread_join(t, NULL);
    snap();
    CHECK_U64(before.mem[MANAGED].live + XN, S.mem[MANAGED].live);
    CHECK_U64(before.mem[MANAGED].current_bytes + 3 * XN, S.mem[MANAGED].current_bytes);
    pthread_create(&t, NULL, free_many, (void *)P);
    pthread_join(t, NULL);
    snap();
    CHECK_U64(before.mem[MANAGED].live, S.mem[MANAGED].live);
    CHECK_U64(before.mem[MANAGED].current_bytes, S.mem[MANAGED].current_bytes);
    CHECK_U64(XN, S.mem[MANAGED].allocs);
    CHECK_U64(XN, S.mem[MANAGED].frees);
    CHECK_U64(0, S.track.frees_unknown);
}

/* ---- current and peak in escrow: against a model -------------------------- */

/* Worker threads that make one tracker call each when told to, one at a
   time: the calls are in one known order, so the true current and peak
   of every kind and device are known after each, and memobs must show
   exactly those, whichever thread allocated or freed what, with leases
   out, after frees that went into a thread's own record, across resets
   and thread exits. */
#define EW 4 /* workers */
#define EN 6000 /* calls */
#define ELIVE 64 /* live blocks at most */
typedef struct {
    pthread_t th;
    int cmd; /* 0 idle, 1 alloc, 2 free, 3 exit */
    uintptr_t ptr;
    uint64_t bytes;
    int kind, device;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} eworker_t;
static eworker_t EWK[EW];

static void *eworker(void *arg) {
    eworker_t *w = (eworker_t *)arg;
    for (;;) {
        int cmd;
        pthread_mutex_lock(&w->mu);
        while (w->cmd == 0) pthread_cond_wait(&w->cv, &w->mu);
        cmd = w->cmd;
        pthread_mutex_unlock(&w->mu);
        if (cmd == 1) memobs_track_alloc_full(FP(w->ptr), w->bytes, (memobs_mem_kind_t)w->kind, w->device, NULL, NULL, 0);
        else if (cmd == 2) MEMOBS_TRACK_FREE(FP(w->ptr));
        pthread_mutex_lock(&w->mu);
        w->cmd = 0;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        if (cmd == 3) return NULL;
    }
}

static void eworker_do(eworker_t *w, int cmd) {
    pthread_mutex_lock(&w->mu);
    w->cmd = cmd;
    pthread_cond_broadcast(&w->cv);
    while (w->cmd != 0) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static uint64_t ernd_state = 12345;
static uint64_t ernd(void) {
    ernd_state = ernd_state * 6364136223846793005ull + 1442695040888963407ull;
    return ernd_state >> 33;
}

static uint64_t esc_folds(void) { return __atomic_load_n(&memobs__g.trk.esc.folds.v, __ATOMIC_ACQUIRE); }

static void test_escrow_model(void) {
    const uintptr_t P = 0x31000000;
    const int DEV = 11; /* a device no other test uses */
    struct { uintptr_t ptr; uint64_t bytes; int kind; } live[ELIVE];
    uint64_t cur[2], peak[2], base[2], dcur, dmax, dbase, dmax0, m;
    uint64_t next_ptr = 0, checks = 0, bad_cur = 0, bad_peak = 0, bad_dev = 0, resets = 0, exits = 0, f0;
    int nlv = 0, i, k;
    const int kinds[2] = {HOST, DEVICE};
    memobs_reset();
    snap();
    f0 = esc_folds();
    for (k = 0; k < 2; k++) base[k] = S.mem[kinds[k]].current_bytes;
    dbase = memobs_get_device_bytes(DEV, &dmax0);
    for (k = 0; k < 2; k++) cur[k] = peak[k] = 0;
    dcur = 0;
    dmax = dmax0;
    for (i = 0; i < EW; i++) {
        pthread_mutex_init(&EWK[i].mu, NULL);
        pthread_cond_init(&EWK[i].cv, NULL);
        EWK[i].cmd = 0;
        pthread_create(&EWK[i].th, NULL, eworker, &EWK[i]);
    }
    for (i = 0; i < EN; i++) {
        eworker_t *w = &EWK[ernd() % EW];
        int alloc = nlv == 0 || (nlv < ELIVE && ernd() % 100 < (uint64_t)(i % 2000 < 1000 ? 60 : 42));
        if (alloc) {
            k = (int)(ernd() % 2);
            live[nlv].ptr = P + (next_ptr++) * 4096 + (ernd() % 4) * 0x4000000; /* several stripes, never twice */
            live[nlv].bytes = 1 + ernd() % 5000;
            live[nlv].kind = k;
            w->ptr = live[nlv].ptr;
            w->bytes = live[nlv].bytes;
            w->kind = kinds[k];
            w->device = DEV;
            eworker_do(w, 1);
            cur[k] += live[nlv].bytes;
            if (cur[k] > peak[k]) peak[k] = cur[k];
            if (k == 1) {
                dcur += live[nlv].bytes;
                if (dbase + dcur > dmax) dmax = dbase + dcur;
            }
            nlv++;
        } else {
            int j = (int)(ernd() % (uint64_t)nlv);
            k = live[j].kind;
            w->ptr = live[j].ptr;
            eworker_do(w, 2);
            cur[k] -= live[j].bytes;
            if (k == 1) dcur -= live[j].bytes;
            live[j] = live[--nlv];
        }
        if (i % 37 == 0 || i == EN - 1) {
            uint64_t dc, bad0 = bad_cur + bad_peak + bad_dev;
            checks++;
            snap();
            for (k = 0; k < 2; k++) {
                if (S.mem[kinds[k]].current_bytes != base[k] + cur[k]) bad_cur++;
                if (S.mem[kinds[k]].peak_bytes != base[k] + peak[k]) bad_peak++;
            }
            dc = memobs_get_device_bytes(DEV, &m);
            if (dc != dbase + dcur || m != dmax) bad_dev++;
            if (bad0 == 0 && bad_cur + bad_peak + bad_dev)
                printf("    # call %d: host %llu/%llu, device %llu/%llu, device %d %llu/%llu (cur/peak); want %llu/%llu, "
                       "%llu/%llu, %llu/%llu\n", i, (unsigned long long)S.mem[HOST].current_bytes,
                       (unsigned long long)S.mem[HOST].peak_bytes, (unsigned long long)S.mem[DEVICE].current_bytes,
                       (unsigned long long)S.mem[DEVICE].peak_bytes, DEV, (unsigned long long)dc,
                       (unsigned long long)m, (unsigned long long)(base[0] + cur[0]),
                       (unsigned long long)(base[0] + peak[0]), (unsigned long long)(base[1] + cur[1]),
                       (unsigned long long)(base[1] + peak[1]), (unsigned long long)(dbase + dcur),
                       (unsigned long long)dmax);
        }
        if (i % 1500 == 1499) { /* a new window: each kind's peak starts at its current */
            memobs_reset();
            resets++;
            for (k = 0; k < 2; k++) peak[k] = cur[k];
        }
        if (i % 700 == 350) { /* a worker exits; its record goes into the totals, a new one takes its shard */
            eworker_do(w, 3);
            pthread_join(w->th, NULL);
            pthread_create(&w->th, NULL, eworker, w);
            exits++;
        }
    }
    for (i = 0; i < nlv; i++) MEMOBS_TRACK_FREE(FP(live[i].ptr));
    for (i = 0; i < EW; i++) {
        eworker_do(&EWK[i], 3);
        pthread_join(EWK[i].th, NULL);
        pthread_mutex_destroy(&EWK[i].mu);
        pthread_cond_destroy(&EWK[i].cv);
    }
    f0 = esc_folds() - f0;
    printf("    # %d calls, %llu checks, %llu folds\n", EN, (unsigned long long)checks, (unsigned long long)f0);
    CHECK(checks > 150);
    CHECK(f0 > 2 * checks + resets); /* allocations near the peak folded too (each check is two folds) */
    CHECK(f0 < EN / 4);               /* most calls stayed in their thread's record */
    CHECK_U64(4, resets);
    CHECK_U64(9, exits);
    CHECK_U64(0, bad_cur);
    CHECK_U64(0, bad_peak);
    CHECK_U64(0, bad_dev);
    snap();
    CHECK_U64(base[0], S.mem[HOST].current_bytes);
    CHECK_U64(base[1], S.mem[DEVICE].current_bytes);
}

/* The escrow's own behaviour: a thread that frees and then allocates the
   same bytes, and one that allocates below the peak, moves no shared line
   (no fold); an allocation after another thread's free that would look
   like a new peak without that free folds and finds none. */
static void test_escrow_folds(void) {
    const uintptr_t P = 0x32000000;
    uint64_t f0, peak0, i;
    eworker_t *w = &EWK[0];
    memobs_reset();
    for (i = 0; i < 64; i++) MEMOBS_TRACK_ALLOC(FP(P + i * 64), 1024, PINNED);
    snap(); /* a fold: no lease out, nothing in any record */
    peak0 = S.mem[PINNED].peak_bytes;
    CHECK_U64(S.mem[PINNED].current_bytes, peak0);
    f0 = esc_folds();
    for (i = 0; i < 1000; i++) { /* at the peak, with no headroom: free, then the same bytes again */
        MEMOBS_TRACK_FREE(FP(P + (i % 64) * 64));
        MEMOBS_TRACK_ALLOC(FP(P + (i % 64) * 64), 1024, PINNED);
    }
    CHECK_U64(0, esc_folds() - f0);
    for (i = 0; i < 32; i++) MEMOBS_TRACK_FREE(FP(P + i * 64)); /* 32 KiB below the peak */
    snap();
    f0 = esc_folds();
    for (i = 0; i < 1000; i++) { /* below the peak: leases */
        MEMOBS_TRACK_ALLOC(FP(P + 0x100000 + i * 64), 8, PINNED);
        MEMOBS_TRACK_FREE(FP(P + 0x100000 + i * 64));
    }
    for (i = 0; i < 1000; i++) MEMOBS_TRACK_ALLOC(FP(P + 0x200000 + i * 64), 16, PINNED); /* 16000 of 32768 */
    CHECK_U64(0, esc_folds() - f0);
    for (i = 0; i < 1000; i++) MEMOBS_TRACK_FREE(FP(P + 0x200000 + i * 64));
    /* another thread frees 1 KiB into its own record; the 2 KiB allocated
       here next would pass the peak by 1 KiB, were that free not folded in */
    for (i = 0; i < 32; i++) MEMOBS_TRACK_ALLOC(FP(P + i * 64), 1024, PINNED);
    snap();
    CHECK_U64(peak0, S.mem[PINNED].peak_bytes);
    CHECK_U64(peak0, S.mem[PINNED].current_bytes);
    /* (a worker, alive: a thread that exits folds its record in itself) */
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->cmd = 0;
    pthread_create(&w->th, NULL, eworker, w);
    w->ptr = P; /* registers the thread: the global lock */
    eworker_do(w, 2);
    w->ptr = P + 64; /* into its own record */
    eworker_do(w, 2);
    f0 = esc_folds();
    MEMOBS_TRACK_ALLOC(FP(P + 0x300000), 2048, PINNED);
    CHECK_U64(1, esc_folds() - f0);
    eworker_do(w, 3);
    pthread_join(w->th, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    snap();
    CHECK_U64(peak0, S.mem[PINNED].peak_bytes);
    MEMOBS_TRACK_ALLOC(FP(P), 1, PINNED); /* now a new peak, by 1 byte */
    snap();
    CHECK_U64(peak0 + 1, S.mem[PINNED].peak_bytes);
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_FREE(FP(P + 0x300000));
    for (i = 2; i < 64; i++) MEMOBS_TRACK_FREE(FP(P + i * 64));
    snap();
    CHECK_U64(64 * 1024 + 1, S.mem[PINNED].peak_bytes - S.mem[PINNED].current_bytes);
}

/* The timeline's live bytes with the escrow: each allocation and free on
   the timeline carries the kind's exact tracked bytes right after it,
   from the moment the timeline is switched on with bytes already live,
   while 4 threads allocate and free. */
#define ETL_THREADS 4
#define ETL_N 300
static void *etl_thread(void *arg) {
    uintptr_t k = (uintptr_t)arg, i, base = 0x33000000 + k * 0x100000;
    for (i = 0; i < ETL_N; i++) {
        MEMOBS_TRACK_ALLOC(FP(base + i * 64), 8 * (k + 1), HOST);
        if (i >= 10) MEMOBS_TRACK_FREE(FP(base + (i - 10) * 64));
    }
    for (i = ETL_N - 10; i < ETL_N; i++) MEMOBS_TRACK_FREE(FP(base + i * 64));
    return NULL;
}
static void test_escrow_timeline(void) {
    const uintptr_t P = 0x34000000;
    pthread_t t[ETL_THREADS];
    uint64_t base, v, lo = ~0ull, hi = 0, nv = 0, last[2] = {0, 0}, i;
    FILE *f = tmpfile();
    char *buf = NULL, *p;
    long len;
    snap();
    base = S.mem[HOST].current_bytes + 1000;
    for (i = 0; i < 10; i++) MEMOBS_TRACK_ALLOC(FP(P + i * 64), 100, HOST);
    CHECK_U64(MEMOBS_OK, memobs_timeline_start(65536));
    for (i = 0; i < ETL_THREADS; i++) pthread_create(&t[i], NULL, etl_thread, (void *)(uintptr_t)i);
    for (i = 0; i < ETL_THREADS; i++) pthread_join(t[i], NULL);
    MEMOBS_TRACK_ALLOC(FP(P + 0x1000), 5, HOST); /* the last two events: base + 5, base */
    MEMOBS_TRACK_FREE(FP(P + 0x1000));
    CHECK(f != NULL);
    if (!f) return;
    CHECK_U64(MEMOBS_OK, memobs_write_timeline(f));
    len = ftell(f);
    rewind(f);
    buf = (char *)malloc((size_t)len + 1);
    CHECK(buf != NULL && fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    if (!buf) return;
    buf[len] = 0;
    for (p = buf; (p = strstr(p, "\"name\":\"live host bytes\"")) != NULL; p++) {
        char *q = strstr(p, "\"value\":");
        if (!q) break;
        v = strtoull(q + 8, NULL, 10);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        last[0] = last[1];
        last[1] = v;
        nv++;
    }
    free(buf);
    CHECK_U64(memobs_timeline_stop(), MEMOBS_OK);
    /* every allocation and free of the threads and the last two */
    CHECK_U64((uint64_t)ETL_THREADS * ETL_N * 2 + 2, nv);
    CHECK(lo >= base);                                 /* never below what was live before */
    /* nor above what the threads could hold at once: 11 blocks each (the
       new one before the oldest is freed) */
    if (hi > base + 11 * 8 * (1 + 2 + 3 + 4)) printf("    # highest live %llu, base %llu\n", (unsigned long long)hi,
                                                     (unsigned long long)base);
    CHECK(hi <= base + 11 * 8 * (1 + 2 + 3 + 4));
    CHECK_U64(base + 5, last[0]);
    CHECK_U64(base, last[1]);
    for (i = 0; i < 10; i++) MEMOBS_TRACK_FREE(FP(P + i * 64));
    snap();
    CHECK_U64(base - 1000, S.mem[HOST].current_bytes);
}

/* ---- the table: one stripe against a model -------------------------------- */

static unsigned stripe_of(uintptr_t a) {
    uint32_t home;
    return (unsigned)(memobs__trk_stripe((uint64_t)a, &home) - memobs__g.trk.stripe); /* the tracker's own choice */
}

/* n addresses from start (step 64) whose table stripe is s. */
static void addrs_in_stripe(unsigned s, uintptr_t start, uintptr_t *out, unsigned n) {
    unsigned k = 0;
    uintptr_t a;
    for (a = start; k < n; a += 64)
        if (stripe_of(a) == s) out[k++] = a;
}

#define MODEL_N 900
/* One stripe (its table grows and shrinks with the load) filled with up
   to 860 entries and churned: linear probing with backward-shift deletes,
   wrapping around the end of the table, and rehashing on resize must keep
   every live pointer findable. */
static void test_stripe_model(void) {
    static uintptr_t addr[MODEL_N];
    static unsigned char live[MODEL_N];
    const unsigned s = 7;
    uint32_t n0 = memobs__g.trk.stripe[s].n;
    uint64_t rng = 88172645463325252ull, nl = 0, i, n, found = 0, wrong = 0;
    unsigned op;
    memobs_reset();
    addrs_in_stripe(s, 0x16000000, addr, MODEL_N);
    memset(live, 0, sizeof live);
    for (op = 0; op < 40000; op++) {
        unsigned j;
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        j = (unsigned)(rng % MODEL_N);
        if (!live[j] && nl >= 860) continue; /* hold the count near 860 */
        if (live[j]) {
            MEMOBS_TRACK_FREE(FP(addr[j]));
            live[j] = 0;
            nl--;
        } else {
            MEMOBS_TRACK_ALLOC(FP(addr[j]), j + 1, HOST);
            live[j] = 1;
            nl++;
        }
    }
    CHECK_U64(n0 + nl, memobs__g.trk.stripe[s].n);
    n = memobs_get_allocations(ALLOCS, MAX_ALLOCS);
    for (i = 0; i < n && i < MAX_ALLOCS; i++) {
        uintptr_t a = (uintptr_t)ALLOCS[i].ptr;
        unsigned j;
        for (j = 0; j < MODEL_N && addr[j] != a; j++) {
        }
        if (j == MODEL_N) continue;
        found++;
        if (!live[j] || ALLOCS[i].bytes != j + 1) wrong++;
    }
    CHECK_U64(nl, found);
    CHECK_U64(0, wrong);
    snap();
    CHECK_U64(0, S.track.frees_unknown + S.track.frees_double + S.track.allocs_duplicate + S.track.untracked);
    for (i = 0; i < MODEL_N; i++)
        if (live[i]) MEMOBS_TRACK_FREE(FP(addr[i]));
    snap();
    CHECK_U64(0, S.track.frees_unknown);
    CHECK_U64(n0, memobs__g.trk.stripe[s].n);
    CHECK_U64(S.mem[HOST].allocs, S.mem[HOST].frees);
}

/* Double frees are told apart for the last 16 frees of a stripe. */
static void test_double_free_ring(void) {
    uintptr_t a[18];
    unsigned i;
    addrs_in_stripe(9, 0x17000000, a, 18);
    memobs_reset();
    log_start();
    MEMOBS_TRACK_ALLOC(FP(a[0]), 8, HOST);
    MEMOBS_TRACK_FREE(FP(a[0]));
    MEMOBS_TRACK_FREE(FP(a[0])); /* double */
    MEMOBS_TRACK_ALLOC(FP(a[0]), 8, HOST); /* allocated again: no longer "freed" */
    MEMOBS_TRACK_FREE(FP(a[0]));
    for (i = 1; i <= 16; i++) MEMOBS_TRACK_ALLOC(FP(a[i]), 8, HOST);
    for (i = 1; i <= 15; i++) MEMOBS_TRACK_FREE(FP(a[i]));
    MEMOBS_TRACK_FREE(FP(a[0])); /* 15 frees later: still remembered */
    MEMOBS_TRACK_FREE(FP(a[16])); /* the 16th: a[0] leaves the ring */
    MEMOBS_TRACK_FREE(FP(a[0]));
    log_stop();
    snap();
    CHECK_U64(2, S.track.frees_double);
    CHECK_U64(1, S.track.frees_unknown);
    CHECK_U64(18, S.mem[HOST].allocs);
    CHECK_U64(18, S.mem[HOST].frees);
    CHECK_U64(2, log_count); /* one warning per kind */
}

/* ---- bad input ----------------------------------------------------------- */

static void test_bad_input(void) {
    static memobs_summary_t before;
    const uintptr_t P = 0x18000000;
    const memobs_alloc_info_t *a;
    unsigned c;
    uint64_t all_allocs = 0;
    memobs_reset();
    memobs_get_summary(&before);
    log_start();
    MEMOBS_TRACK_FREE(NULL);
    MEMOBS_TRACK_FREE(NULL);
    CHECK_U64(0, log_count); /* free(NULL) is legal */
    memobs_track_alloc_full(NULL, 10, HOST, -1, NULL, "null", 0);
    MEMOBS_TRACK_ALLOC(NULL, 10, HOST);
    MEMOBS_TRACK_ALLOC(FP(P + 0x10), 0, HOST); /* zero bytes: tracked */
    MEMOBS_TRACK_ALLOC(FP(P + 0x20), 0, HOST);
    MEMOBS_TRACK_FREE(FP(P + 0x30)); /* never allocated */
    MEMOBS_TRACK_FREE(FP(P + 0x30));
    MEMOBS_TRACK_ALLOC(FP(P + 0x40), 100, HOST);
    MEMOBS_TRACK_FREE(FP(P + 0x40));
    MEMOBS_TRACK_FREE(FP(P + 0x40)); /* double */
    MEMOBS_TRACK_ALLOC(FP(P + 0x50), 100, HOST);
    MEMOBS_TRACK_FREE(FP(P + 0x50));
    MEMOBS_TRACK_FREE(FP(P + 0x50)); /* double */
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x60), 1000, HOST, "dup_old");
    MEMOBS_TRACK_ALLOC_N(FP(P + 0x60), 300, HOST, "dup_new"); /* live already: old one counted freed */
    MEMOBS_TRACK_ALLOC(FP(P + 0x60), 200, HOST);
    MEMOBS_TRACK_ALLOC(FP(P + 0x70), 50, (memobs_mem_kind_t)9);
    memobs_track_alloc_full(FP(P + 0x70), 50, (memobs_mem_kind_t)9, 0, NULL, "bad", 4);
    log_stop();
    snap();
    CHECK_U64(2, S.track.frees_null);
    CHECK_U64(2, S.track.allocs_null);
    CHECK_U64(2, S.track.allocs_zero);
    CHECK_U64(2, S.track.frees_unknown);
    CHECK_U64(2, S.track.frees_double);
    CHECK_U64(2, S.track.allocs_duplicate);
    CHECK_U64(2, S.track.allocs_bad_kind);
    CHECK_U64(0, S.track.untracked);
    /* exactly one warning per kind of misuse, none for free(NULL) */
    CHECK_U64(6, log_count);
    CHECK_U64(1, log_has("NULL pointer"));
    CHECK_U64(1, log_has("of 0 bytes"));
    CHECK_U64(1, log_has("not a tracked live allocation"));
    CHECK_U64(1, log_has("double free"));
    CHECK_U64(1, log_has("already live"));
    CHECK_U64(1, log_has("kind 9"));
    if (log_count != 6) log_dump();
    /* the totals saw only the valid calls: 2 zero + 2 + 3 allocs, 2 + 2 dropped as freed */
    CHECK_U64(7, S.mem[HOST].allocs);
    CHECK_U64(4, S.mem[HOST].frees);
    CHECK_U64(1700, S.mem[HOST].alloc_bytes);
    CHECK_U64(before.mem[HOST].live + 3, S.mem[HOST].live);
    CHECK_U64(before.mem[HOST].current_bytes + 200, S.mem[HOST].current_bytes);
    for (c = 0; c < MEMOBS_MEM_KINDS; c++) all_allocs += S.mem[c].allocs;
    CHECK_U64(7, all_allocs);
    a = find_alloc(FP(P + 0x10));
    CHECK(a != NULL && a->bytes == 0);
    a = find_alloc(FP(P + 0x60));
    CHECK(a != NULL && a->bytes == 200 && a->trace == MEMOBS_NO_TRACE);
    CHECK(find_alloc(FP(P + 0x70)) == NULL);
    CHECK(find_alloc(NULL) == NULL);
    /* a report names every kind seen */
    {
        FILE *f = tmpfile();
        char *t;
        CHECK_U64(MEMOBS_OK, memobs_write_summary(f, MEMOBS_FORMAT_TEXT));
        t = read_file(f);
        fclose(f);
        CHECK_HAS(t, "  problems: 2 unmatched frees (pointer not tracked), 2 double frees, 2 NULL allocations, "
                     "2 zero-byte allocations, 2 allocations of a live pointer (missed free), 2 allocations of a "
                     "bad kind\n");
        free(t);
    }
    MEMOBS_TRACK_FREE(FP(P + 0x10));
    MEMOBS_TRACK_FREE(FP(P + 0x20));
    MEMOBS_TRACK_FREE(FP(P + 0x60));
    snap();
    CHECK_U64(before.mem[HOST].current_bytes, S.mem[HOST].current_bytes);
    CHECK_U64(before.mem[HOST].live, S.mem[HOST].live);
    CHECK_U64(2, S.track.frees_unknown); /* unchanged */
    /* NULL output with room asked for: 0 and a warning */
    log_start();
    CHECK_U64(0, memobs_get_allocations(NULL, 5));
    log_stop();
    CHECK_U64(1, log_count);
}

/* Switched off at run time: allocations are ignored, frees still retire
   what was tracked before. */
static void test_disabled(void) {
    const uintptr_t P = 0x19000000;
    memobs_reset();
    MEMOBS_TRACK_ALLOC(FP(P), 64, HOST);
    memobs_set_enabled(0);
    MEMOBS_TRACK_ALLOC(FP(P + 16), 64, HOST);
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_FREE(FP(P + 32)); /* unknown, but off: not counted */
    memobs_set_enabled(1);
    snap();
    CHECK_U64(1, S.mem[HOST].allocs);
    CHECK_U64(1, S.mem[HOST].frees);
    CHECK_U64(0, S.track.frees_unknown);
    CHECK(find_alloc(FP(P)) == NULL);
    CHECK(find_alloc(FP(P + 16)) == NULL);
    CHECK_U64(0, nlive());
    /* with something tracked still live, blocks that come and go while off
       are nobody's business: no count, no warning */
    MEMOBS_TRACK_ALLOC(FP(P + 48), 64, HOST);
    memobs_reset();
    log_start();
    memobs_set_enabled(0);
    MEMOBS_TRACK_ALLOC(FP(P + 64), 64, HOST);
    MEMOBS_TRACK_FREE(FP(P + 64));
    memobs_set_enabled(1);
    log_stop();
    snap();
    CHECK_U64(0, S.track.frees_unknown);
    CHECK_U64(0, log_count);
    CHECK_U64(0, S.mem[HOST].allocs + S.mem[HOST].frees);
    MEMOBS_TRACK_FREE(FP(P + 48));
    CHECK_U64(0, nlive());
}

/* memobs_get_allocations fills every field. */
static void test_get_allocations(void) {
    const uintptr_t P = 0x1a000000;
    const memobs_alloc_info_t *a;
    uint64_t t0 = memobs__coarse_ns(), t1; /* the clock the tracker stamps with, read before */
    static int stream_obj;
    memobs_set_device(3);
    memobs_set_phase(MEMOBS_PHASE_DECODE);
    memobs_track_alloc_full(FP(P), 12345, DEVICE, -1, &stream_obj, "info", 0);
    memobs_track_alloc_full(FP(P + 16), 777, MANAGED, 2, NULL, NULL, 0);
    memobs_track_alloc_full(FP(P + 32), 55, PINNED, -1, NULL, NULL, 0);
    memobs_set_phase(MEMOBS_PHASE_NONE);
    memobs_set_device(-5); /* negative: 0 */
    CHECK_U64(0, memobs_get_device());
    t1 = memobs_now_ns();
    a = find_alloc(FP(P));
    CHECK(a != NULL);
    if (a) {
        CHECK_U64(12345, a->bytes);
        CHECK_U64(DEVICE, a->kind);
        CHECK_U64(3, a->device);
        CHECK_U64(MEMOBS_PHASE_DECODE, a->phase);
        CHECK(a->stream == (const void *)&stream_obj);
        /* the coarse clock (the last kernel tick) never goes back and is
           never ahead of memobs_now_ns(): between the two readings. Not
           "at most 10 ms behind memobs_now_ns()": the tick can lag more
           when the machine is loaded or a virtual CPU stalls */
        CHECK(a->time_ns >= t0 && a->time_ns <= t1);
        CHECK_STR("info", trace_text(a->trace));
    }
    a = find_alloc(FP(P + 16));
    CHECK(a != NULL && a->device == 2 && a->kind == MANAGED && a->trace == MEMOBS_NO_TRACE);
    a = find_alloc(FP(P + 32));
    CHECK(a != NULL && a->device == -1 && a->kind == PINNED); /* host-side kinds have no device */
    CHECK_U64(3, nlive());
    CHECK_U64(3, memobs_get_allocations(ALLOCS, 1)); /* how many are live, one written */
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_FREE(FP(P + 16));
    MEMOBS_TRACK_FREE(FP(P + 32));
    CHECK_U64(0, nlive());
}

/* ---- reports ------------------------------------------------------------- */

static uint32_t rep_kv, rep_mix, rep_stack;
static const uintptr_t RA = 0x7f0000001000, RB = 0x7f0000002000, RC = 0x7f0000003000, RD = 0x7f0000004000,
                       RA2 = 0x7f0000005000, RP = 0x7f0000006000;

/* A: device 3 MiB "rep_kv" (prefill), A2: device 1 MiB "rep_kv", C: pinned
   1 MiB with a stack and no tag, B: host 4096 "rep_mix", P: pinned 100
   "rep_mix", D: managed 512, no tag or stack. 5247588 bytes in all. */
static void report_setup(void) {
    CHECK_U64(0, nlive());
    memobs_set_phase(MEMOBS_PHASE_PREFILL);
    MEMOBS_TRACK_ALLOC_N(FP(RA), 3145728, DEVICE, "rep_kv");
    memobs_set_phase(MEMOBS_PHASE_NONE);
    MEMOBS_TRACK_ALLOC_N(FP(RB), 4096, HOST, "rep_mix");
    trk_site_c(FP(RC), 1048576, PINNED);
    MEMOBS_TRACK_ALLOC(FP(RD), 512, MANAGED);
    MEMOBS_TRACK_ALLOC_N(FP(RA2), 1048576, DEVICE, "rep_kv");
    MEMOBS_TRACK_ALLOC_N(FP(RP), 100, PINNED, "rep_mix");
    rep_kv = trace_of(FP(RA));
    rep_mix = trace_of(FP(RB));
    rep_stack = trace_of(FP(RC));
    CHECK(rep_kv != MEMOBS_NO_TRACE && rep_mix != MEMOBS_NO_TRACE && rep_stack != MEMOBS_NO_TRACE);
    CHECK_U64(6, nlive());
}
static void report_teardown(void) {
    MEMOBS_TRACK_FREE(FP(RA));
    MEMOBS_TRACK_FREE(FP(RB));
    MEMOBS_TRACK_FREE(FP(RC));
    MEMOBS_TRACK_FREE(FP(RD));
    MEMOBS_TRACK_FREE(FP(RA2));
    MEMOBS_TRACK_FREE(FP(RP));
    CHECK_U64(0, nlive());
}

#define KINDS_LINE                                                                                          \
    "5247588 bytes (5.00 MiB): device 4194304 bytes (4.00 MiB) in 2, host 4096 bytes (0.00 MiB) in 1, pinned " \
    "1048676 bytes (1.00 MiB) in 2, managed 512 bytes (0.00 MiB) in 1"

/* The box of rep_stack at lines[at..]: title, 3 frames (trk_site_c first), bottom. */
static void check_stack_box(int n, int at) {
    CHECK(at > 0 && at + 4 < n);
    if (!(at > 0 && at + 4 < n)) return;
    CHECK_PREFIX(LINES[at], "|   ┌─ C Stack Trace ─");
    CHECK_PREFIX(LINES[at + 1], "|   │    #0 trk_site_c");
    CHECK_PREFIX(LINES[at + 2], "|   │    #1 ");
    CHECK_PREFIX(LINES[at + 3], "|   │    #2 ");
    CHECK_PREFIX(LINES[at + 4], "|   └─");
}

static void test_report_blocks(void) {
    char *r, want[512];
    int n, i, at;
    report_setup();
    r = report(memobs_print_allocations);
    n = split_lines(r);
    snprintf(want, sizeof want, "== memobs allocations == rank 0 pid %d: 6 allocations live, " KINDS_LINE,
             (int)getpid());
    CHECK(n >= 15);
    if (n < 15) goto out;
    CHECK_STR(want, LINES[0]);
    CHECK_STR(RULE, LINES[1]);
    CHECK_PREFIX(LINES[2], "|               ADDR |         size (       MiB) | KIND    | DEV | PHASE    | TRACE | TAG   ");
    CHECK_STR(RULE, LINES[3]);
    /* largest first; equal sizes by address */
    snprintf(want, sizeof want, "| 0x00007f0000001000 |      3145728 (      3.00) | device  |   0 | prefill  | %5u | rep_kv ",
             (unsigned)rep_kv);
    CHECK_PREFIX(LINES[4], want);
    snprintf(want, sizeof want,
             "| 0x00007f0000003000 |      1048576 (      1.00) | pinned  |   - | unphased | %5u | [Multi-Line Stack] ",
             (unsigned)rep_stack);
    CHECK_PREFIX(LINES[5], want);
    check_stack_box(n, 6);
    snprintf(want, sizeof want, "| 0x00007f0000005000 |      1048576 (      1.00) | device  |   0 | unphased | %5u | rep_kv ",
             (unsigned)rep_kv);
    CHECK_PREFIX(LINES[11], want);
    snprintf(want, sizeof want, "| 0x00007f0000002000 |         4096 (      0.00) | host    |   - | unphased | %5u | rep_mix ",
             (unsigned)rep_mix);
    CHECK_PREFIX(LINES[12], want);
    CHECK_PREFIX(LINES[13], "| 0x00007f0000004000 |          512 (      0.00) | managed |   0 | unphased |       |     ");
    snprintf(want, sizeof want, "| 0x00007f0000006000 |          100 (      0.00) | pinned  |   - | unphased | %5u | rep_mix ",
             (unsigned)rep_mix);
    CHECK_PREFIX(LINES[14], want);
    CHECK(n > 15 && strcmp(LINES[15], RULE) == 0);
    for (i = 4; i < 16 && i < n; i++) /* every table line ends with a bar */
        if (i != 15) CHECK(LINES[i][strlen(LINES[i]) - 1] == '|');
    at = find_line(n, 0, "|   ┌─");
    CHECK_U64(6, at); /* one box: under the first row of its trace */
    CHECK_U64((uint64_t)-1, find_line(n, 7, "|   ┌─"));
    check_widths(n, "block table");
out:
    free(r);
    report_teardown();
}

static void test_report_groups_and_leaks(void) {
    char *r, want[512];
    int n, which;
    for (which = 0; which < 2; which++) {
        report_setup();
        r = report(which ? memobs_print_leaks : memobs_print_alloc_groups);
        n = split_lines(r);
        snprintf(want, sizeof want, "== memobs %s == rank 0 pid %d: 6 allocations %s, " KINDS_LINE,
                 which ? "leak report" : "allocations by trace", (int)getpid(), which ? "still live" : "live");
        CHECK(n >= 12);
        if (n < 12) goto next;
        CHECK_STR(want, LINES[0]);
        CHECK_STR(RULE, LINES[1]);
        CHECK_PREFIX(LINES[2], "| TRACE |        bytes (       MiB) |   count | KINDS          |      OLDEST | TAG   ");
        CHECK_STR(RULE, LINES[3]);
        /* largest first: rep_kv 4 MiB, the stack 1 MiB, rep_mix 4196, untraced 512 */
        snprintf(want, sizeof want, "| %5u |      4194304 (      4.00) |       2 | device         | ", (unsigned)rep_kv);
        CHECK_PREFIX(LINES[4], want);
        CHECK(strlen(LINES[4]) > 76 && starts(LINES[4] + 76, " | rep_kv "));
        snprintf(want, sizeof want, "| %5u |      1048576 (      1.00) |       1 | pinned         | ", (unsigned)rep_stack);
        CHECK_PREFIX(LINES[5], want);
        CHECK(strlen(LINES[5]) > 76 && starts(LINES[5] + 76, " | [Multi-Line Stack] "));
        check_stack_box(n, 6);
        snprintf(want, sizeof want, "| %5u |         4196 (      0.00) |       2 | host,pinned    | ", (unsigned)rep_mix);
        CHECK_PREFIX(LINES[11], want);
        CHECK(strlen(LINES[11]) > 76 && starts(LINES[11] + 76, " | rep_mix "));
        CHECK_PREFIX(LINES[12], "|       |          512 (      0.00) |       1 | managed        | ");
        CHECK(strlen(LINES[12]) > 76 && starts(LINES[12] + 76, " | (no tag, no stack) "));
        CHECK(n > 13 && strcmp(LINES[13], RULE) == 0);
        check_widths(n, which ? "leak report" : "groups table");
    next:
        free(r);
        report_teardown();
    }
    /* nothing live */
    r = report(memobs_print_leaks);
    snprintf(want, sizeof want, "== memobs leak report == rank 0 pid %d: no tracked allocation is live\n", (int)getpid());
    CHECK_STR(want, r);
    free(r);
    r = report(memobs_print_allocations);
    snprintf(want, sizeof want, "== memobs allocations == rank 0 pid %d: no tracked allocation is live\n", (int)getpid());
    CHECK_STR(want, r);
    free(r);
    log_start();
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_print_allocations(NULL));
    log_stop();
    CHECK_U64(1, log_has("NULL FILE"));
}

/* MEMOBS_REPORT_ROWS: the rest is summed on a "... more" line. */
static void test_report_rows(void) {
    char *r;
    int n, at;
    int rows = memobs__g.trk.rows;
    CHECK_U64(50, rows);
    report_setup();
    memobs__g.trk.rows = 2;
    r = report(memobs_print_allocations);
    n = split_lines(r);
    /* rows A and C (with its box), then A2 + B + D + P summed */
    at = find_line(n, 0, "| ... ");
    CHECK_U64(11, at);
    if (at > 0) {
        CHECK_PREFIX(LINES[at], "| ... 4 more allocations, 1053284 bytes (1.00 MiB)   ");
        CHECK(LINES[at][strlen(LINES[at]) - 1] == '|');
        CHECK_PREFIX(LINES[at - 1], "|   └─");
        CHECK_PREFIX(LINES[at - 6], "| 0x00007f0000003000 |");
        CHECK(at + 1 < n && strcmp(LINES[at + 1], RULE) == 0);
    }
    check_widths(n, "block table, 2 rows");
    free(r);
    r = report(memobs_print_alloc_groups);
    n = split_lines(r);
    at = find_line(n, 0, "| ... ");
    CHECK_U64(11, at);
    if (at > 0) {
        CHECK_PREFIX(LINES[at], "| ... 2 more traces: 3 allocations, 4708 bytes (0.00 MiB)   ");
        CHECK(at + 1 < n && strcmp(LINES[at + 1], RULE) == 0);
    }
    check_widths(n, "groups table, 2 rows");
    free(r);
    memobs__g.trk.rows = 0; /* all */
    r = report(memobs_print_allocations);
    n = split_lines(r);
    CHECK_U64((uint64_t)-1, find_line(n, 0, "| ... "));
    CHECK(find_line(n, 0, "| 0x00007f0000006000 |") > 0);
    free(r);
    memobs__g.trk.rows = rows;
    report_teardown();
}

/* ---- peak report --------------------------------------------------------- */

/* Parses the "reached new maximum" lines of a peak report file. */
#define MAXPEAKS 64
static int parse_peaks(const char *path, uint64_t *max, uint64_t *prev, int *ntables) {
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    *ntables = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        const char *m = strstr(line, "reached new maximum ");
        const char *p = strstr(line, "previous is ");
        if (starts(line, "| TRACE |")) (*ntables)++;
        if (!m) continue;
        if (n < MAXPEAKS && p) {
            max[n] = strtoull(m + strlen("reached new maximum "), NULL, 10);
            prev[n] = strtoull(p + strlen("previous is "), NULL, 10);
        }
        n++;
    }
    fclose(f);
    return n;
}

#define MiB 1048576u
static void test_peak_report(void) {
    char dest[128], path[128], want[512];
    uint64_t max[MAXPEAKS], prev[MAXPEAKS], expect[MAXPEAKS], next = 1, dc;
    const uintptr_t P = 0x7e0000000000;
    const int dev = 5, steps = 20;
    int n, nexp = 0, i, tables;
    uint32_t tr;
    FILE *f;
    snprintf(dest, sizeof dest, "/tmp/memobs_trk_peak_%%p.txt");
    snprintf(path, sizeof path, "/tmp/memobs_trk_peak_%d.txt", (int)getpid());
    remove(path);
    log_start();
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_peak_report(dest, -1.0, 0));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_peak_report(dest, (double)NAN, 0));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_peak_report(dest, 1001.0, 0));
    CHECK_U64(MEMOBS_ERR_INVALID, memobs_track_set_peak_report("", 0.5, 0));
    log_stop();
    CHECK_U64(4, log_count);
    CHECK_U64(0, memobs__g.trk.peak_on.v); /* unchanged: still off */
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report(dest, 0.5, 0));
    CHECK_U64(1, memobs__g.trk.peak_on.v);
    /* device 5 is used by no other test: its maximum starts at 0 */
    for (i = 1; i <= steps; i++) {
        memobs_track_alloc_full(FP(P + (uintptr_t)i * MiB), MiB, DEVICE, dev, NULL, "peak_step", 0);
        dc = (uint64_t)i * MiB;
        if (dc >= next) { /* memobs__peak_next: max(dc * (1 + 0.5), dc + 1, min_bytes 0); first 1 */
            uint64_t w = dc + dc / 2;
            expect[nexp++] = dc;
            next = w > dc ? w : dc + 1;
        }
    }
    tr = trace_of(FP(P + MiB));
    CHECK_U64(7, nexp); /* 1, 2, 3, 5, 8, 12, 18 MiB */
    n = parse_peaks(path, max, prev, &tables);
    CHECK_U64(nexp, n);
    for (i = 0; i < n && i < nexp && i < MAXPEAKS; i++) {
        CHECK_U64(expect[i], max[i]);
        CHECK_U64(i ? max[i - 1] : 0, prev[i]); /* "previous is" the last reported maximum */
    }
    CHECK_U64(n, tables); /* each report has its per-trace table */
    f = fopen(path, "r");
    if (f) {
        char *t = read_file(f);
        fclose(f);
        snprintf(want, sizeof want,
                 "memobs: [rank 0] device 5 tracked memory reached new maximum 1048576 bytes (1.00 MiB), previous is "
                 "0 bytes (0.00 MiB), current trace id [%u]\n  memobs tracker: device 5: 1 live allocation, 1048576 "
                 "bytes (1.00 MiB)\n",
                 (unsigned)tr);
        CHECK_PREFIX(t, want);
        CHECK_HAS(t, "reached new maximum 2097152 bytes (2.00 MiB), previous is 1048576 bytes (1.00 MiB)");
        CHECK_HAS(t, "  memobs tracker: device 5: 18 live allocations, 18874368 bytes (18.00 MiB)\n");
        CHECK_HAS(t, "| 0x00007e0001200000 |      1048576 (      1.00) | device  |   5 | "); /* the 18th block */
        free(t);
    }
    /* off: no more lines */
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report(NULL, 0, 0));
    CHECK_U64(0, memobs__g.trk.peak_on.v);
    for (i = steps + 1; i <= 2 * steps; i++)
        memobs_track_alloc_full(FP(P + (uintptr_t)i * MiB), MiB, DEVICE, dev, NULL, "peak_step", 0);
    CHECK_U64(nexp, parse_peaks(path, max, prev, &tables));
    for (i = 1; i <= 2 * steps; i++) MEMOBS_TRACK_FREE(FP(P + (uintptr_t)i * MiB));
    /* on again with "off" as the word for off, and min_bytes: nothing below it */
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report(dest, 0.0, (uint64_t)100 * MiB));
    memobs_track_alloc_full(FP(P), 50 * (uint64_t)MiB, DEVICE, 6, NULL, NULL, 0);
    CHECK_U64(nexp, parse_peaks(path, max, prev, &tables));
    memobs_track_alloc_full(FP(P + 16), 50 * (uint64_t)MiB, DEVICE, 6, NULL, NULL, 0); /* 100 MiB: reported */
    CHECK_U64(nexp + 1, parse_peaks(path, max, prev, &tables));
    if (nexp < MAXPEAKS) {
        CHECK_U64(100 * (uint64_t)MiB, max[nexp]);
        CHECK_U64(50 * (uint64_t)MiB, prev[nexp]); /* the maximum just before this allocation */
    }
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report("off", 0, 0));
    CHECK_U64(0, memobs__g.trk.peak_on.v);
    MEMOBS_TRACK_FREE(FP(P));
    MEMOBS_TRACK_FREE(FP(P + 16));
    remove(path);
    CHECK_U64(0, nlive());
}

static void test_peak_report_unwritable(void) {
    const uintptr_t P = 0x1b000000;
    memobs_reset();
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report("/nonexistent/dir/x", 0, 0));
    log_start();
    memobs_track_alloc_full(FP(P), 4096, DEVICE, 9, NULL, "unwritable", 0);
    log_stop();
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot open '/nonexistent/dir/x' for the peak report"));
    CHECK(find_alloc(FP(P)) != NULL); /* tracked all the same */
    snap();
    CHECK_U64(1, S.mem[DEVICE].allocs);
    CHECK_U64(MEMOBS_OK, memobs_track_set_peak_report(NULL, 0, 0));
    MEMOBS_TRACK_FREE(FP(P));
    CHECK_U64(0, nlive());
}

/* ---- summaries ----------------------------------------------------------- */

static char *summary(memobs_format_t fmt) {
    FILE *f = tmpfile();
    char *t;
    CHECK_U64(MEMOBS_OK, memobs_write_summary(f, fmt));
    t = read_file(f);
    fclose(f);
    return t ? t : (char *)calloc(1, 1);
}

/* Device: 1000 + 2000 allocated, 1000 freed; one unknown free. */
static void summary_setup(void) {
    const uintptr_t P = 0x1c000000;
    memobs_reset();
    memobs_track_alloc_full(FP(P), 1000, DEVICE, 7, NULL, "sum", 0);
    memobs_track_alloc_full(FP(P + 16), 2000, DEVICE, 7, NULL, "sum", 0);
    MEMOBS_TRACK_FREE(FP(P));
    memobs__g.warned.v |= MEMOBS__W_TRK_UNKNOWN; /* quiet */
    MEMOBS_TRACK_FREE(FP(P + 32));
}
static void summary_teardown(void) { MEMOBS_TRACK_FREE(FP(0x1c000000 + 16)); }

static void test_summary_text(void) {
    char *t, want[128];
    CHECK_U64(0, nlive());
    summary_setup();
    t = summary(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(t, "\n  memory  |    current       peak |     live   allocs    frees  allocated\n"
                 "  device  |    2.00 KB    3.00 KB |        1        2        1    3.00 KB\n  tracker: ");
    snprintf(want, sizeof want, "  tracker: %u traces, table capacity 32768\n", (unsigned)ntraces());
    CHECK_HAS(t, want);
    CHECK(strstr(t, "  host    |") == NULL); /* kinds with nothing are left out */
    CHECK_HAS(t, "  problems: 1 unmatched frees (pointer not tracked)\n");
    CHECK(strstr(t, "untracked") == NULL);
    free(t);
    t = summary(MEMOBS_FORMAT_JSON);
    CHECK_HAS(t, ",\"memory\":{\"device\":{\"current_bytes\":2000,\"peak_bytes\":3000,\"live\":1,\"allocs\":2,"
                 "\"frees\":1,\"alloc_bytes\":3000,\"pending_frees\":0,\"pending_bytes\":0},\"host\":{\"current_bytes\":0,\"peak_bytes\":0,\"live\":0,");
    CHECK_HAS(t, "},\"tracker\":{\"tracking\":true,");
    CHECK_HAS(t, "\"capacity\":32768,\"frees_unknown\":1,\"frees_double\":0,");
    /* the timed object, then no region used in the window, then the end */
    CHECK(strlen(t) > 16 && strcmp(t + strlen(t) - 16, "},\"regions\":[]}\n") == 0);
    free(t);
    summary_teardown();
}

/* ---- fork ---------------------------------------------------------------- */

/* Under AddressSanitizer the churn thread is parked between iterations
   around each fork(): GCC 12's ASan allocator takes no lock of its own
   around fork(), so a child forked while another thread is inside ASan's
   malloc (the tracker's table grows through malloc) deadlocks on its first
   malloc or free: a hang of ASan's, not of memobs' locks, seen 2 times in
   1187 runs on a loaded 2-core machine. The other builds (C99, C++17,
   TSan) keep forking while the thread is inside memobs. */
#if defined(__SANITIZE_ADDRESS__)
#define FORK_PARK_CHURN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_PARK_CHURN 1
#endif
#endif
#ifndef FORK_PARK_CHURN
#define FORK_PARK_CHURN 0
#endif
static int stop_churn, park_churn, churn_parked;
static void *churn(void *arg) {
    uintptr_t b = (uintptr_t)arg, i = 0;
    while (!__atomic_load_n(&stop_churn, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&park_churn, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&churn_parked, 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(&park_churn, __ATOMIC_ACQUIRE)) sched_yield();
            __atomic_store_n(&churn_parked, 0, __ATOMIC_RELEASE);
        }
        MEMOBS_TRACK_ALLOC_N(FP(b + (i % 4096) * 8), 8, HOST, "churn");
        MEMOBS_TRACK_FREE(FP(b + (i % 4096) * 8));
        i++;
    }
    return NULL;
}

/* The child of a fork() taken while another thread tracks can still take
   every stripe lock, the trace lock and the shard lock. */
static void test_fork(void) {
    const uintptr_t P = 0x1d000000, C = 0x1e000000;
    pthread_t t;
    int k, bad = 0;
    memobs_reset();
    stop_churn = 0;
    pthread_create(&t, NULL, churn, (void *)P);
    for (k = 0; k < 8; k++) {
        int status = 0;
        pid_t pid;
        if (FORK_PARK_CHURN) {
            __atomic_store_n(&park_churn, 1, __ATOMIC_RELEASE);
            while (!__atomic_load_n(&churn_parked, __ATOMIC_ACQUIRE)) sched_yield();
        }
        pid = fork();
        if (FORK_PARK_CHURN && pid != 0) __atomic_store_n(&park_churn, 0, __ATOMIC_RELEASE);
        if (pid == 0) {
            static memobs_summary_t c;
            uintptr_t i;
            int ok = 1;
            alarm(30); /* a lock held across fork would hang: fail instead */
            for (i = 0; i < 1000; i++) MEMOBS_TRACK_ALLOC_N(FP(C + i * 8), 10, PINNED, "child");
            for (i = 0; i < 1000; i++) {
                const memobs_alloc_info_t *a = i % 100 == 0 ? find_alloc(FP(C + i * 8)) : NULL;
                if (i % 100 == 0 && (!a || a->bytes != 10)) ok = 0;
            }
            for (i = 0; i < 1000; i++) MEMOBS_TRACK_FREE(FP(C + i * 8));
            memobs_get_summary(&c);
            if (c.mem[PINNED].allocs != 1000 || c.mem[PINNED].frees != 1000 || c.track.frees_unknown != 0) ok = 0;
            {
                FILE *devnull = fopen("/dev/null", "w");
                if (!devnull || memobs_print_allocations(devnull) != MEMOBS_OK) ok = 0;
                if (devnull) fclose(devnull);
            }
            _exit(ok ? 0 : 1);
        }
        CHECK(pid > 0);
        if (pid < 0) break;
        waitpid(pid, &status, 0);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            bad++;
            printf("    # fork %d: child status %d\n", k, status);
        }
    }
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK_U64(0, bad);
    snap();
    CHECK_U64(0, S.mem[PINNED].allocs); /* the children's records stay in the children */
    CHECK_U64(S.mem[HOST].allocs, S.mem[HOST].frees);
    CHECK_U64(0, nlive());
}

/* Stream-ordered frees: pending until settled, still counted as held;
   reuse of a pending address retires it without a "duplicate". */
static void test_pending_frees(void) {
    const uintptr_t A = 0x5a000000, B = 0x5a100000;
    memobs_summary_t before;
    const memobs_alloc_info_t *a;
    char *r;
    memobs_reset();
    memobs_get_summary(&before);
    memobs_track_alloc_full(FP(A), 100, DEVICE, 0, NULL, "pend_a", 0);
    memobs_track_free_pending(FP(A));
    snap();
    CHECK_U64(before.mem[DEVICE].current_bytes + 100, S.mem[DEVICE].current_bytes);
    CHECK_U64(before.mem[DEVICE].live + 1, S.mem[DEVICE].live);
    CHECK_U64(1, S.mem[DEVICE].pending_frees);
    CHECK_U64(100, S.mem[DEVICE].pending_bytes);
    CHECK_U64(0, S.mem[DEVICE].frees);
    (void)memobs_get_allocations(ALLOCS, MAX_ALLOCS);
    a = find_alloc(FP(A));
    CHECK(a != NULL && a->pending_free == 1 && a->phase == MEMOBS_PHASE_NONE);
    r = report(memobs_print_allocations);
    CHECK_HAS(r, "| (free pending) pend_a ");
    free(r);
    r = summary(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(r, "  device    1 freed stream-ordered, 100 B, not yet reached by their stream (not reusable)\n");
    free(r);
    memobs_track_free_pending(FP(A)); /* twice: a double free */
    snap();
    CHECK_U64(1, S.track.frees_double);
    CHECK_U64(1, S.mem[DEVICE].pending_frees);
    memobs_track_free_settled(FP(A));
    snap();
    CHECK_U64(before.mem[DEVICE].current_bytes, S.mem[DEVICE].current_bytes);
    CHECK_U64(0, S.mem[DEVICE].pending_frees);
    CHECK_U64(0, S.mem[DEVICE].pending_bytes);
    CHECK_U64(1, S.mem[DEVICE].frees);
    memobs_track_free_settled(FP(A)); /* settled twice: nothing, silently */
    snap();
    CHECK_U64(1, S.mem[DEVICE].frees);
    CHECK_U64(0, S.track.frees_unknown);
    /* B: freed on a stream, then handed out again at the same address */
    memobs_track_alloc_full(FP(B), 64, DEVICE, 0, NULL, NULL, 0);
    memobs_track_free_pending(FP(B));
    memobs_track_alloc_full(FP(B), 32, DEVICE, 0, NULL, NULL, 0);
    snap();
    CHECK_U64(0, S.track.allocs_duplicate);
    CHECK_U64(0, S.mem[DEVICE].pending_frees);
    CHECK_U64(before.mem[DEVICE].current_bytes + 32, S.mem[DEVICE].current_bytes);
    memobs_track_free_settled(FP(B)); /* the stream got there: the new block stays */
    snap();
    CHECK_U64(before.mem[DEVICE].current_bytes + 32, S.mem[DEVICE].current_bytes);
    memobs_track_free(FP(B));
    /* a plain free of a pending block settles it */
    memobs_track_alloc_full(FP(B), 16, DEVICE, 0, NULL, NULL, 0);
    memobs_track_free_pending(FP(B));
    memobs_track_free(FP(B));
    snap();
    CHECK_U64(before.mem[DEVICE].current_bytes, S.mem[DEVICE].current_bytes);
    CHECK_U64(0, S.mem[DEVICE].pending_bytes);
    CHECK_U64(0, S.track.frees_unknown + S.track.allocs_duplicate);
}

/* ---- modes run by tests/tracker/test_track.sh with an environment ---------------- */

/* MEMOBS_TRACK_CAPACITY=4096: stripes take capacity in batches of 4, so
   with allocations spread over every stripe the table may fill up to
   64 x 2 x 4 entries early, never late; capacity idle in emptied stripes
   goes back, so afterwards one stripe alone can hold nearly all of it. */
static void env_table_batched(void) {
    const uintptr_t base = 0x40000000;
    uint64_t tracked, i;
    CHECK_U64(4096, memobs__g.trk.capacity);
    log_start();
    for (i = 0; i < 6000; i++) MEMOBS_TRACK_ALLOC(FP(base + i * 0x4000), 64, HOST); /* 16 KiB apart */
    log_stop();
    snap();
    tracked = nlive();
    CHECK_U64(4, memobs__g.trk.batch);
    CHECK(tracked <= 4096 && tracked >= 4096 - 64 * 2 * 4);
    CHECK(memobs__g.trk.reserved.v <= 4096);
    CHECK_U64(6000 - tracked, S.track.untracked);
    CHECK_U64(6000, S.mem[HOST].allocs);
    CHECK_U64(6000 * 64, S.mem[HOST].current_bytes);
    for (i = 0; i < 6000; i++) MEMOBS_TRACK_FREE(FP(base + i * 0x4000));
    CHECK_U64(0, nlive());
    CHECK(memobs__g.trk.reserved.v <= 64 * 2 * 4);
    /* one 64 KiB granule: one stripe, which grows its table to hold them */
    for (i = 0; i < 3500; i++) MEMOBS_TRACK_ALLOC(FP(0x7000000 + i * 16), 16, PINNED);
    snap();
    CHECK_U64(3500, nlive());
    CHECK_U64(6000 - tracked, S.track.untracked); /* no new untracked */
    for (i = 0; i < 3500; i++) MEMOBS_TRACK_FREE(FP(0x7000000 + i * 16));
    snap();
    CHECK_U64(0, nlive());
    CHECK_U64(0, S.mem[PINNED].current_bytes);
    CHECK_U64(0, S.track.frees_unknown);
}

/* MEMOBS_TRACK_CAPACITY=100: 300 allocations, 200 of them untracked. */
static void env_table_full(void) {
    static char arr[300];
    uint64_t all = 0, untracked = 0, tracked = 0;
    unsigned i;
    char *r;
    CHECK_U64(100, memobs__g.trk.capacity);
    log_start();
    for (i = 0; i < 300; i++) {
        MEMOBS_TRACK_ALLOC_N(&arr[i], 1000 + i, HOST, "full");
        all += 1000 + i;
        if (i >= 100) untracked += 1000 + i;
        else tracked += 1000 + i;
    }
    log_stop();
    CHECK_U64(1, log_count); /* one warning */
    CHECK_U64(1, log_has("allocation table full (MEMOBS_TRACK_CAPACITY=100)"));
    snap();
    CHECK_U64(100, S.track.capacity);
    CHECK_U64(200, S.track.untracked);
    CHECK_U64(untracked, S.track.untracked_bytes);
    CHECK_U64(200, S.track.untracked_live);
    CHECK_U64(300, S.mem[HOST].allocs); /* the totals include all */
    CHECK_U64(all, S.mem[HOST].alloc_bytes);
    CHECK_U64(all, S.mem[HOST].current_bytes);
    CHECK_U64(all, S.mem[HOST].peak_bytes);
    CHECK_U64(300, S.mem[HOST].live);
    CHECK_U64(100, nlive());
    CHECK_U64(100, memobs_get_allocations(ALLOCS, MAX_ALLOCS));
    CHECK(find_alloc(&arr[99]) != NULL);
    CHECK(find_alloc(&arr[100]) == NULL);
    r = report(memobs_print_allocations);
    CHECK_HAS(r, "  + 200 allocations not in the table (it was full: raise MEMOBS_TRACK_CAPACITY)\n");
    free(r);
    r = summary(MEMOBS_FORMAT_TEXT);
    CHECK_HAS(r, "  tracker: 1 traces, table capacity 100, some allocations untracked\n");
    CHECK_HAS(r, "200 allocations not tracked (table full: raise MEMOBS_TRACK_CAPACITY)");
    free(r);
    log_start();
    for (i = 0; i < 100; i++) MEMOBS_TRACK_FREE(&arr[i]); /* the tracked ones: sized */
    snap();
    CHECK_U64(all - tracked, S.mem[HOST].current_bytes);
    CHECK_U64(100, S.mem[HOST].frees);
    CHECK_U64(0, S.track.untracked_frees);
    for (i = 100; i < 300; i++) MEMOBS_TRACK_FREE(&arr[i]);
    log_stop();
    CHECK_U64(0, log_count);
    snap();
    CHECK_U64(100, S.mem[HOST].frees);
    CHECK_U64(200, S.track.untracked_frees);
    CHECK_U64(0, S.track.untracked_live);
    CHECK_U64(0, S.track.frees_unknown);
    /* the size of an untracked free is unknown: current bytes overstate by exactly those */
    CHECK_U64(untracked, S.mem[HOST].current_bytes);
    CHECK_U64(0, nlive());
    /* a free of a pointer never seen, now that nothing untracked is live */
    log_start();
    MEMOBS_TRACK_FREE(FP((uintptr_t)arr + 5000));
    log_stop();
    CHECK_U64(1, log_has("not a tracked live allocation"));
    snap();
    CHECK_U64(1, S.track.frees_unknown);
    CHECK_U64(200, S.track.untracked_frees);
    /* room again */
    MEMOBS_TRACK_ALLOC(&arr[5], 1, HOST);
    CHECK_U64(1, nlive());
    snap();
    CHECK_U64(200, S.track.untracked);
    MEMOBS_TRACK_FREE(&arr[5]);
}

/* MEMOBS_CALLSTACK=8: plain MEMOBS_TRACK_ALLOC captures stacks. */
static void env_callstack(void) {
    uint32_t id;
    CHECK_U64(8, memobs__g.trk.depth.v);
    trk_site_plain(FP(0x1000), 10);
    id = trace_of(FP(0x1000));
    CHECK(id != MEMOBS_NO_TRACE && id != NOT_LIVE);
    CHECK_PREFIX(trace_text(id), "\n#0 trk_site_plain");
    CHECK_HAS(trace_text(id), "\n#1 ");
    CHECK(strstr(trace_text(id), "\n#8 ") == NULL);
    MEMOBS_TRACK_FREE(FP(0x1000));
}

/* MEMOBS_CALLSTACK=99: one warning (checked by the script), clamped. */
static void env_callstack_clamped(void) { CHECK_U64(MEMOBS_MAX_STACK, memobs__g.trk.depth.v); }

/* MEMOBS_PEAK_REPORT=path MEMOBS_PEAK_MIN=1M MEMOBS_PEAK_GROWTH=0 */
static void env_peak(void) {
    const char *path = getenv("MEMOBS_PEAK_REPORT");
    uint64_t max[MAXPEAKS], prev[MAXPEAKS];
    const uint64_t K512 = 512u * 1024u;
    int n, tables;
    CHECK_U64(1, memobs__g.trk.peak_on.v);
    CHECK_U64(MiB, memobs__g.trk.peak_min.v);
    CHECK_U64(0, memobs__g.trk.peak_growth_ppm.v);
    memobs_set_device(2);
    MEMOBS_TRACK_ALLOC(FP(0x1000), K512, DEVICE); /* 512K: below the minimum */
    MEMOBS_TRACK_ALLOC(FP(0x2000), K512, DEVICE); /* 1M: reported */
    MEMOBS_TRACK_ALLOC(FP(0x3000), MiB, DEVICE);  /* 2M: reported */
    MEMOBS_TRACK_FREE(FP(0x3000));                 /* 1M */
    MEMOBS_TRACK_ALLOC(FP(0x4000), K512, DEVICE); /* 1.5M: not a new maximum */
    MEMOBS_TRACK_ALLOC(FP(0x5000), MiB, DEVICE);  /* 2.5M: reported */
    MEMOBS_TRACK_ALLOC(FP(0x6000), 1, HOST);      /* other kinds never report */
    CHECK(path != NULL);
    n = path ? parse_peaks(path, max, prev, &tables) : -1;
    CHECK_U64(3, n);
    if (n == 3) {
        CHECK_U64(MiB, max[0]);
        CHECK_U64(K512, prev[0]); /* nothing reported before: the maximum just before this allocation */
        CHECK_U64(2 * MiB, max[1]);
        CHECK_U64(MiB, prev[1]);
        CHECK_U64(2 * MiB + K512, max[2]);
        CHECK_U64(2 * MiB, prev[2]);
    }
    memobs_set_device(0);
}

/* MEMOBS_LEAKS=path: the report is written at exit by the script's check. */
static void env_leaks(void) {
    MEMOBS_TRACK_ALLOC_N(FP(0x7000), 12345, PINNED, "leaky_tag");
    MEMOBS_TRACK_ALLOC_N(FP(0x8000), 99, PINNED, "freed_tag");
    MEMOBS_TRACK_FREE(FP(0x8000));
    CHECK_U64(1, nlive());
}

/* Malformed MEMOBS_TRACK_CAPACITY, MEMOBS_PEAK_GROWTH, MEMOBS_PEAK_MIN: defaults. */
static void env_defaults(void) {
    char *r, want[128];
    CHECK_U64(32768, memobs__g.trk.capacity);
    CHECK_U64(100000, memobs__g.trk.peak_growth_ppm.v);
    CHECK_U64((uint64_t)64 << 20, memobs__g.trk.peak_min.v);
    CHECK_U64(0, memobs__g.trk.peak_on.v);
    CHECK_U64(50, memobs__g.trk.rows);
    CHECK_U64(0, memobs__g.trk.depth.v);
    r = report(memobs_print_leaks); /* before any tracked allocation */
    snprintf(want, sizeof want, "== memobs leak report == rank 0 pid %d: no allocation was tracked\n", (int)getpid());
    CHECK_STR(want, r);
    free(r);
    snap();
    CHECK_U64(0, S.tracking);
    r = summary(MEMOBS_FORMAT_TEXT);
    CHECK(strstr(r, "memory") == NULL); /* no memory section before the first tracked allocation */
    free(r);
}

/* MEMOBS_REPORT_ROWS=2 */
static void env_rows(void) {
    char *r;
    unsigned i;
    CHECK_U64(2, memobs__g.trk.rows);
    for (i = 1; i <= 5; i++) MEMOBS_TRACK_ALLOC(FP(0x1000 * i), i * 10, HOST);
    r = report(memobs_print_allocations);
    CHECK_HAS(r, "| ... 3 more allocations, 60 bytes (0.00 MiB) ");
    free(r);
    for (i = 1; i <= 5; i++) MEMOBS_TRACK_FREE(FP(0x1000 * i));
}

/* MEMOBS_MAX_TRACES traces at most: the rest are dropped, still tracked. */
static void env_traces_full(void) {
    char tag[32];
    unsigned i;
    log_start();
    for (i = 0; i < MEMOBS_MAX_TRACES + 100; i++) {
        snprintf(tag, sizeof tag, "t%u", i);
        MEMOBS_TRACK_ALLOC_N(FP(0x100000 + i * 16), 1, HOST, tag);
    }
    log_stop();
    snap();
    CHECK_U64(MEMOBS_MAX_TRACES, S.track.traces);
    CHECK_U64(100, S.track.traces_dropped);
    CHECK_U64(MEMOBS_MAX_TRACES + 100, nlive());
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("trace table full"));
    CHECK_U64(MEMOBS_MAX_TRACES - 1, trace_of(FP(0x100000 + (MEMOBS_MAX_TRACES - 1) * 16)));
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(0x100000 + MEMOBS_MAX_TRACES * 16)));
    MEMOBS_TRACK_ALLOC_N(FP(0x80), 1, HOST, "t7"); /* known ones still resolve */
    CHECK_U64(7, trace_of(FP(0x80)));
    CHECK_STR("t7", trace_text(7));
}

/* Frames pool: MEMOBS_MAX_STACK provider frames per trace fill the
   8 * MEMOBS_MAX_TRACES frames after exactly that many traces. */
static uint32_t frames_seq;
static int frames_capture(memobs_frame_t *fr, int max, void *user) {
    int i;
    (void)user;
    frames_seq++;
    for (i = 0; i < max; i++) {
        fr[i].pc = (uintptr_t)frames_seq;
        fr[i].line = (uint32_t)i;
        fr[i].aux = 0;
    }
    return max;
}
static void env_frames_full(void) {
    memobs_tag_provider_t p;
    unsigned i, want = 8 * MEMOBS_MAX_TRACES / MEMOBS_MAX_STACK;
    memset(&p, 0, sizeof p);
    p.capture = frames_capture;
    p.format = prov_format;
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(&p));
    log_start();
    for (i = 0; i < want + 10; i++) MEMOBS_TRACK_ALLOC(FP(0x100000 + i * 16), 1, HOST);
    log_stop();
    snap();
    CHECK_U64(want, S.track.traces);
    CHECK_U64(10, S.track.traces_dropped);
    CHECK_U64(1, log_count);
    CHECK_U64(want - 1, trace_of(FP(0x100000 + (want - 1) * 16)));
    CHECK_U64(MEMOBS_NO_TRACE, trace_of(FP(0x100000 + want * 16)));
    memobs_track_set_tag_provider(NULL);
}

/* Writes a JSON summary to argv[2] for the script's json parser. */
static const char *json_path;
static void env_json(void) {
    FILE *f;
    summary_setup();
    f = fopen(json_path, "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, memobs_write_summary(f, MEMOBS_FORMAT_JSON));
        fclose(f);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    memset(RULE, '-', 120);
    RULE[120] = 0;
    if (!*mode) {
        /* interning first: the ids below are dense from the first trace */
        RUN(test_intern_tags);
        RUN(test_intern_stacks);
        RUN(test_default_callstack);
        RUN(test_tag_provider);
        RUN(test_peak_and_reset);
        RUN(test_threads_exact);
        RUN(test_cross_thread_free);
        RUN(test_escrow_model);
        RUN(test_escrow_folds);
        RUN(test_escrow_timeline);
        RUN(test_stripe_model);
        RUN(test_double_free_ring);
        RUN(test_bad_input);
        RUN(test_disabled);
        RUN(test_pending_frees);
        RUN(test_get_allocations);
        RUN(test_report_blocks);
        RUN(test_report_groups_and_leaks);
        RUN(test_report_rows);
        RUN(test_peak_report);
        RUN(test_peak_report_unwritable);
        RUN(test_summary_text);
        RUN(test_fork);
    } else if (!strcmp(mode, "table_full")) {
        RUN(env_table_full);
    } else if (!strcmp(mode, "table_batched")) {
        RUN(env_table_batched);
    } else if (!strcmp(mode, "callstack")) {
        RUN(env_callstack);
    } else if (!strcmp(mode, "callstack_clamped")) {
        RUN(env_callstack_clamped);
    } else if (!strcmp(mode, "peak")) {
        RUN(env_peak);
    } else if (!strcmp(mode, "leaks")) {
        RUN(env_leaks);
    } else if (!strcmp(mode, "defaults")) {
        RUN(env_defaults);
    } else if (!strcmp(mode, "rows")) {
        RUN(env_rows);
    } else if (!strcmp(mode, "traces_full")) {
        RUN(env_traces_full);
    } else if (!strcmp(mode, "frames_full")) {
        RUN(env_frames_full);
    } else if (!strcmp(mode, "json") && argc > 2) {
        json_path = argv[2];
        RUN(env_json);
    } else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    return CHECK_DONE();
}
