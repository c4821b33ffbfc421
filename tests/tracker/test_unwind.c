/* Tests of the tracker's frame-pointer unwinder (memobs_track_set_unwinder,
   MEMOBS_UNWIND): the same return addresses as backtrace() through a deep
   recursion, traces that tell the unwinders apart (ids, memobs_format_trace,
   report boxes), frame pointers that fail a check (garbage, misaligned,
   below the current frame, off the stack, a loop, a null return address)
   stopping the walk without a crash and marking the stack cut short, the
   natural end of a chain, other threads' stacks, a sigaltstack() handler
   (backtrace() instead) and the run-time switch. Built with
   -fno-omit-frame-pointer -rdynamic as C and C++, under ASan+UBSan and
   TSan (tests/tracker/test_unwind.sh).

   Without arguments it runs the in-process tests; with a mode argument the
   test of one environment or build that tests/tracker/test_unwind.sh set up
   (MEMOBS_UNWIND, -DMEMOBS_UNWIND=MEMOBS_UNWIND_FP, -DMEMOBS__NO_FP_UNWIND). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "unwind"
#endif

#define FP(x) ((const void *)(uintptr_t)(x)) /* a fake block: the tracker never dereferences one */
#define HOST MEMOBS_MEM_HOST
#define BARRIER() __asm__ volatile("" ::: "memory")
/* No inlining, cloning or sibling calls: each level keeps its own frame and
   its own name. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

#define RECURSION 40 /* levels of unw_rec below its first call */

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* The functions whose names the stacks must show: exported (-rdynamic),
   with C names in the C++ build too. */
#ifdef __cplusplus
extern "C" {
#endif
void unw_rec(int d, uintptr_t p, int depth);
void unw_leaf(uintptr_t p);
void *thr_main(void *v);
void on_sig(int sig);
#ifdef __cplusplus
}
#endif

/* Two rounds of a loop whose count the compiler cannot see: one call site
   for both unwinders (an unrolled loop would have two). */
static unsigned opaque(unsigned u) {
    __asm__ volatile("" : "+r"(u));
    return u;
}
#define TWICE(u) for (u = 0; u < 2; u = opaque(u + 1))

static memobs_alloc_info_t ALLOCS[256];

static uint32_t trace_of(const void *p) {
    size_t n = memobs_get_allocations(ALLOCS, 256), i;
    for (i = 0; i < n && i < 256; i++)
        if (ALLOCS[i].ptr == p) return ALLOCS[i].trace;
    return 0xfffffffeu;
}

/* The stored C frames of a trace (NULL if none), their count and flags. */
static const memobs_frame_t *c_frames(uint32_t id, unsigned *nc, unsigned *how) {
    const memobs__trace_t *e = memobs__trace_get(id);
    *nc = e ? e->nc : 0;
    *how = e ? e->how : 0xffu;
    return e ? &memobs__g.trk.frames[e->off + e->np] : NULL;
}

static char *trace_text(uint32_t id) {
    static char buf[8192];
    int n = memobs_format_trace(buf, sizeof buf, id);
    if (n < 0) snprintf(buf, sizeof buf, "(memobs_format_trace: %d)", n);
    return buf;
}

/* Lines of text that start with prefix. */
static int count_lines(const char *text, const char *prefix) {
    int n = 0;
    const char *p = text;
    size_t k = strlen(prefix);
    while (p && *p) {
        if (strncmp(p, prefix, k) == 0) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return n;
}

/* Occurrences of s in text. */
static int count_sub(const char *text, const char *s) {
    int n = 0;
    for (; (text = strstr(text, s)) != NULL; text++) n++;
    return n;
}

static void log_start(void) {
    log_count = 0;
    memobs__g.warned.v = 0;
    memobs_set_log(capture_log, NULL);
}

/* ---- a deep recursion ------------------------------------------------------ */

/* d levels of itself, then the allocation: every frame of its stack is a
   return address in unw_rec (the first after the tracker call, the others
   after the recursive call). */
NOINLINE void unw_rec(int d, uintptr_t p, int depth) {
    if (d > 0) unw_rec(d - 1, p, depth);
    else memobs_track_alloc_full(FP(p), 64, HOST, -1, NULL, NULL, depth);
    BARRIER(); /* not a tail call */
}

static void deep_at(int depth) {
    const uintptr_t P = 0x71000000u + (uintptr_t)depth * 0x1000u;
    uint32_t id[2], again;
    unsigned nc[2], how[2], i, u;
    const memobs_frame_t *fr[2];
    char prefix[32];
    const char *t;
    /* one call site for both unwinders, so both see the same stack */
    TWICE(u) {
        (void)memobs_track_set_unwinder(u ? MEMOBS_UNWIND_FP : MEMOBS_UNWIND_BACKTRACE);
        unw_rec(RECURSION, P + u * 16u, depth);
    }
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_FP);
    unw_rec(RECURSION, P + 32u, depth); /* the same stack again: the same trace */
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    for (u = 0; u < 2; u++) {
        id[u] = trace_of(FP(P + u * 16u));
        fr[u] = c_frames(id[u], &nc[u], &how[u]);
    }
    again = trace_of(FP(P + 32u));
    CHECK(id[0] != id[1]); /* they differ only in the unwinder */
    CHECK_U64(id[1], again);
    CHECK_U64((unsigned)depth, nc[0]);
    CHECK_U64((unsigned)depth, nc[1]);
    CHECK_U64(0, how[0]);
    CHECK_U64(MEMOBS__C_FP, how[1]); /* stopped by the depth: not cut */
    if (fr[0] && fr[1] && nc[0] == nc[1]) {
        for (i = 0; i < nc[0]; i++) {
            if (fr[0][i].pc != fr[1][i].pc) {
                check__failed_checks++;
                printf("    # depth %d, frame %u: backtrace 0x%llx, frame pointers 0x%llx\n", depth, i,
                       (unsigned long long)fr[0][i].pc, (unsigned long long)fr[1][i].pc);
            }
        }
        CHECK(fr[1][0].pc != fr[1][1].pc);                    /* the tracker call's return address */
        for (i = 2; i < nc[1]; i++) CHECK_U64(fr[1][1].pc, fr[1][i].pc); /* the recursive call's */
    }
    t = trace_text(id[1]);
    CHECK_STR("", t[0] == '\n' ? "" : t);
    CHECK(strncmp(t, "\nC stack (frame pointers)\n#0 unw_rec+0x", 39) == 0);
    for (i = 0; i < (unsigned)depth; i++) {
        snprintf(prefix, sizeof prefix, "#%u unw_rec+0x", i);
        if (count_lines(t, prefix) != 1) {
            check__failed_checks++;
            printf("    # no line '%s' in:\n%s\n", prefix, t);
            break;
        }
    }
    CHECK_U64((unsigned)depth, (unsigned)count_lines(t, "#"));
    CHECK(strstr(t, "cut short") == NULL);
    t = trace_text(id[0]);
    CHECK(strncmp(t, "\n#0 unw_rec+0x", 14) == 0); /* backtrace: no heading, as before */
    CHECK(strstr(t, "frame pointers") == NULL);
    CHECK_U64((unsigned)depth, (unsigned)count_lines(t, "#"));
    for (u = 0; u < 3; u++) memobs_track_free(FP(P + u * 16u));
}

static void test_deep_recursion(void) {
    deep_at(16);
    deep_at(32);
    deep_at(1);
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
}

/* ---- bad frame pointers ------------------------------------------------------ */

#if defined(__x86_64__)
/* unw_call_with_fp(fn, arg, fake): calls fn(arg) with the frame pointer
   set to fake, so fn's frame record links to it; restores it after. */
__asm__(".text\n"
        ".globl unw_call_with_fp\n"
        ".type unw_call_with_fp, @function\n"
        "unw_call_with_fp:\n"
        "    push %rbp\n"
        "    mov %rdx, %rbp\n"
        "    mov %rdi, %rax\n"
        "    mov %rsi, %rdi\n"
        "    call *%rax\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size unw_call_with_fp, .-unw_call_with_fp\n");
#ifdef __cplusplus
extern "C" {
#endif
void unw_call_with_fp(void (*fn)(uintptr_t), uintptr_t arg, uintptr_t fake);
#ifdef __cplusplus
}
#endif
#define HAVE_FAKE_FP 1
#endif

static int leaf_depth = 32;
NOINLINE void unw_leaf(uintptr_t p) {
    memobs_track_alloc_full(FP(p), 64, HOST, -1, NULL, NULL, leaf_depth);
    BARRIER();
}

#ifdef HAVE_FAKE_FP
/* One allocation at p made under the fake frame pointer fake: its C
   frames must be unw_leaf, unw_call_with_fp, then want_more extra return
   addresses (more[]), and cut as asked. */
static uint32_t fake_case(const char *what, uintptr_t p, uintptr_t fake, int cut, unsigned want_more,
                          const uintptr_t *more) {
    uint32_t id;
    unsigned nc, how, i;
    const memobs_frame_t *fr;
    const char *t;
    unw_call_with_fp(unw_leaf, p, fake);
    id = trace_of(FP(p));
    fr = c_frames(id, &nc, &how);
    t = trace_text(id);
    if (nc != 2 + want_more || how != (MEMOBS__C_FP | (cut ? MEMOBS__C_CUT : 0u))) {
        check__failed_checks++;
        printf("    # %s (fake frame pointer 0x%llx): %u frames, flags %u; expected %u, %u; text:\n%s\n", what,
               (unsigned long long)fake, nc, how, 2 + want_more, MEMOBS__C_FP | (cut ? MEMOBS__C_CUT : 0u), t);
        return id;
    }
    for (i = 0; i < want_more; i++) CHECK_U64(more[i], fr[2 + i].pc);
    CHECK(strncmp(t, "\nC stack (frame pointers)\n#0 unw_leaf+0x", 40) == 0);
    CHECK_U64(1, (unsigned)count_lines(t, "#1 unw_call_with_fp+0x"));
    CHECK_U64(cut ? 1u : 0u, (unsigned)count_lines(t, "... cut short: bad frame pointer"));
    if (cut) CHECK(strcmp(strrchr(t, '\n'), "\n... cut short: bad frame pointer") == 0);
    return id;
}
#endif

static void test_bad_frame_pointers(void) {
#ifdef HAVE_FAKE_FP
    const uintptr_t P = 0x72000000u;
    uintptr_t rec[8] __attribute__((aligned(16))); /* fake frame records, above the walk's frames */
    /* return addresses for the fake records: in code, like real ones */
    const uintptr_t RA1 = (uintptr_t)unw_rec + 4, RA2 = (uintptr_t)unw_leaf + 4;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0), hi, more[1];
    uint32_t id_end, id_cut, id_bt;
    unsigned nc, how;
    int k;
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_FP);
    unw_leaf(P); /* reads this thread's bounds */
    memobs_track_free(FP(P));
    CHECK_U64(1, memobs__tls.stk_state);
    hi = memobs__tls.stk_hi;
    CHECK(here > memobs__tls.stk_lo && here < hi);

    /* the end of a chain: a saved frame pointer of 0 */
    fake_case("0: the outermost frame", P + 0x10, 0, 0, 0, NULL);
    /* frame pointers that fail a check: the walk stops at unw_call_with_fp */
    fake_case("garbage", P + 0x20, (uintptr_t)0xdeadbeefu, 1, 0, NULL);
    fake_case("misaligned, on the stack, above", P + 0x30, (uintptr_t)&rec[2] + 4, 1, 0, NULL);
    fake_case("below the current frame", P + 0x40, here - 4096, 1, 0, NULL);
    fake_case("above the stack", P + 0x50, (hi + 4096) & ~(uintptr_t)15, 1, 0, NULL);
    fake_case("a record that ends past the stack's top", P + 0x60, hi - sizeof(uintptr_t), 1, 0, NULL);
    fake_case("in the data segment", P + 0x70, (uintptr_t)&leaf_depth & ~(uintptr_t)15, 1, 0, NULL);
    /* records on this frame: followed while they pass */
    more[0] = RA1;
    rec[0] = 0;
    rec[1] = RA1;
    id_end = fake_case("a record {0, RA1}: one more frame, then the end", P + 0x80, (uintptr_t)rec, 0, 1, more);
    rec[0] = 1;
    id_cut = fake_case("a record {1, RA1}: one more frame, then a bad one", P + 0x90, (uintptr_t)rec, 1, 1, more);
    CHECK(id_end != id_cut); /* the same frames: the cut mark tells them apart */
    rec[0] = (uintptr_t)rec;
    fake_case("a record that points to itself", P + 0xa0, (uintptr_t)rec, 1, 1, more);
    rec[0] = (uintptr_t)&rec[2];
    rec[2] = (uintptr_t)rec;
    rec[3] = RA2;
    {
        const uintptr_t two[2] = {RA1, RA2};
        fake_case("two records that point to each other", P + 0xb0, (uintptr_t)rec, 1, 2, two);
    }
    rec[0] = (uintptr_t)&rec[2];
    rec[1] = 0;
    fake_case("a null return address", P + 0xc0, (uintptr_t)rec, 1, 0, NULL);
    rec[0] = 0;
    fake_case("a null return address that ends the chain", P + 0xd0, (uintptr_t)rec, 0, 0, NULL);
    rec[1] = 0x1234u;
    fake_case("a return address in the first 64 KiB", P + 0x100, (uintptr_t)rec, 1, 0, NULL);
    rec[1] = (uintptr_t)&rec[4];
    fake_case("a return address on the stack", P + 0x110, (uintptr_t)rec, 1, 0, NULL);
    /* the depth reached before a bad frame pointer: not cut */
    leaf_depth = 2;
    fake_case("depth 2, then garbage", P + 0xe0, (uintptr_t)0xdeadbeefu, 0, 0, NULL);
    leaf_depth = 32;
    /* backtrace() under the same fake frame pointer: unaffected */
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    unw_call_with_fp(unw_leaf, P + 0xf0, (uintptr_t)0xdeadbeefu);
    id_bt = trace_of(FP(P + 0xf0));
    (void)c_frames(id_bt, &nc, &how);
    CHECK(nc >= 1);
    CHECK_U64(0, how);
    CHECK(strncmp(trace_text(id_bt), "\n#0 unw_leaf+0x", 15) == 0);
    /* a report shows the cut */
    {
        FILE *f = tmpfile();
        char *out;
        CHECK(f != NULL);
        if (f) {
            CHECK_U64(MEMOBS_OK, memobs_print_allocations(f));
            out = read_file(f);
            fclose(f);
            if (out) {
                CHECK_HAS(out, "|   ┌─ C Stack Trace (frame pointers) ─");
                CHECK_HAS(out, "|   │    ... cut short: bad frame pointer");
                CHECK_HAS(out, "|   ┌─ C Stack Trace ─");
                free(out);
            }
        }
    }
    for (k = 0x10; k <= 0x110; k += 0x10) memobs_track_free(FP(P + (uintptr_t)k));
    CHECK_U64(0, memobs_get_allocations(NULL, 0));
#else
    printf("ok - %s: test_bad_frame_pointers # SKIP the fake frame pointers are x86-64 code\n", check__suite);
#endif
}

/* ---- reports ----------------------------------------------------------------- */

static void test_report_titles(void) {
    const uintptr_t P = 0x73000000u;
    FILE *f;
    char *out = NULL;
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_FP);
    unw_rec(3, P, 4);
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    unw_rec(3, P + 16, 4);
    f = tmpfile();
    CHECK(f != NULL);
    if (f) {
        CHECK_U64(MEMOBS_OK, memobs_print_alloc_groups(f));
        out = read_file(f);
        fclose(f);
    }
    if (out) {
        char *fp_box = strstr(out, "|   ┌─ C Stack Trace (frame pointers) ─");
        char *bt_box = strstr(out, "|   ┌─ C Stack Trace ─");
        CHECK(fp_box != NULL);
        CHECK(bt_box != NULL);
        if (fp_box) CHECK(strncmp(strchr(fp_box, '\n') + 1, "|   │    #0 unw_rec+0x", 24) == 0);
        if (bt_box) CHECK(strncmp(strchr(bt_box, '\n') + 1, "|   │    #0 unw_rec+0x", 24) == 0);
        CHECK(strstr(out, "cut short") == NULL);
        free(out);
    }
    memobs_track_free(FP(P));
    memobs_track_free(FP(P + 16));
}

/* ---- the switch ------------------------------------------------------------- */

static void test_set_unwinder(void) {
    log_start();
    CHECK_U64(MEMOBS_UNWIND_BACKTRACE, memobs_track_set_unwinder(MEMOBS_UNWIND_FP));
    CHECK_U64(MEMOBS_UNWIND_FP, memobs_track_set_unwinder(MEMOBS_UNWIND_FP));
    CHECK_U64(MEMOBS_UNWIND_FP, memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE));
    CHECK_U64(0, log_count);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_track_set_unwinder((memobs_unwind_t)7));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_track_set_unwinder((memobs_unwind_t)-1));
    CHECK_U64(MEMOBS_UNWIND_BACKTRACE, memobs__g.trk.unwind.v);
    log_stop();
    CHECK_U64(2, log_count);
    CHECK_U64(1, log_has("memobs_track_set_unwinder(7): not a memobs_unwind_t; unchanged"));
    CHECK_U64(1, log_has("memobs_track_set_unwinder(-1): not a memobs_unwind_t; unchanged"));
}

/* ---- other threads ----------------------------------------------------------- */

typedef struct {
    uintptr_t p;
    int ok_bounds;
    uintptr_t lo, hi, local;
} thr_arg_t;

/* On the thread: the same stack through both unwinders, one call site. */
NOINLINE void *thr_main(void *v) {
    thr_arg_t *a = (thr_arg_t *)v;
    unsigned u;
    TWICE(u) {
        (void)memobs_track_set_unwinder(u ? MEMOBS_UNWIND_FP : MEMOBS_UNWIND_BACKTRACE);
        unw_rec(10, a->p + u * 16u, 32);
    }
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    a->ok_bounds = (int)memobs__tls.stk_state;
    a->lo = memobs__tls.stk_lo;
    a->hi = memobs__tls.stk_hi;
    a->local = (uintptr_t)&u;
    return NULL;
}

static void thread_case(const char *what, uintptr_t P, pthread_attr_t *attr, uintptr_t want_lo, uintptr_t want_hi) {
    pthread_t th;
    thr_arg_t a;
    uint32_t id_bt, id_fp;
    unsigned nc_bt, nc_fp, how_bt, how_fp, i;
    const memobs_frame_t *bt, *fp;
    memset(&a, 0, sizeof a);
    a.p = P;
    if (pthread_create(&th, attr, thr_main, &a) != 0) {
        check__failed_checks++;
        printf("    # %s: pthread_create failed\n", what);
        return;
    }
    pthread_join(th, NULL);
    CHECK_U64(1, a.ok_bounds);
    CHECK(a.local > a.lo && a.local < a.hi);
    CHECK(a.hi != memobs__tls.stk_hi); /* not the main thread's */
    if (want_hi) {
        CHECK_U64(want_lo, a.lo);
        CHECK_U64(want_hi, a.hi);
    }
    id_bt = trace_of(FP(P));
    id_fp = trace_of(FP(P + 16));
    bt = c_frames(id_bt, &nc_bt, &how_bt);
    fp = c_frames(id_fp, &nc_fp, &how_fp);
    CHECK_U64(0, how_bt);
#ifndef UNDER_TSAN
    /* The chain ends at start_thread, whose caller glibc's clone code
       marks the outermost frame (a frame pointer of 0): not cut, one frame
       short of backtrace(), which also names clone's. */
    CHECK_U64(MEMOBS__C_FP, how_fp);
    CHECK(nc_fp >= 13); /* 11 unw_rec, thr_main, start_thread */
    CHECK(nc_fp < nc_bt);
#else
    /* TSan starts the thread function from its own code, which keeps no
       frame pointer: the walk is exact up to thr_main's return address,
       and beyond it whatever that code left in the register. */
    CHECK_U64(MEMOBS__C_FP, how_fp & MEMOBS__C_FP);
    CHECK(nc_fp >= 12);
    if (nc_fp > 12) nc_fp = 12;
#endif
    for (i = 0; bt && fp && i < nc_fp && i < nc_bt; i++) {
        if (bt[i].pc != fp[i].pc) {
            check__failed_checks++;
            printf("    # %s, frame %u: backtrace 0x%llx, frame pointers 0x%llx\n", what, i,
                   (unsigned long long)bt[i].pc, (unsigned long long)fp[i].pc);
        }
    }
    CHECK_U64(11, (unsigned)count_sub(trace_text(id_fp), " unw_rec+0x"));
    CHECK_U64(1, (unsigned)count_sub(trace_text(id_fp), " thr_main+0x"));
    memobs_track_free(FP(P));
    memobs_track_free(FP(P + 16));
}

static void test_threads(void) {
    pthread_attr_t attr;
    static char user_stack[1024 * 1024] __attribute__((aligned(4096))); /* TSan needs 900 KiB */
    /* the default stack */
    thread_case("default stack", 0x74000000u, NULL, 0, 0);
    /* a small one */
    pthread_attr_init(&attr);
    CHECK_U64(0, pthread_attr_setstacksize(&attr, 128 * 1024));
    thread_case("128 KiB stack", 0x74100000u, &attr, 0, 0);
    pthread_attr_destroy(&attr);
    /* one the program gave: its bounds are the ones given */
    pthread_attr_init(&attr);
    CHECK_U64(0, pthread_attr_setstack(&attr, user_stack, sizeof user_stack));
    thread_case("a stack from pthread_attr_setstack", 0x74200000u, &attr, (uintptr_t)user_stack,
                (uintptr_t)user_stack + sizeof user_stack);
    pthread_attr_destroy(&attr);
}

/* ---- a signal handler on an alternate stack ------------------------------------ */

static char alt_stack[256 * 1024] __attribute__((aligned(4096)));
static volatile uintptr_t sig_local;
NOINLINE void on_sig(int sig) {
    volatile int here = sig;
    sig_local = (uintptr_t)&here;
    unw_leaf(0x75000000u);
}

/* The capture runs off the thread's stack: backtrace() instead, marked so. */
static void test_sigaltstack(void) {
    stack_t ss, old_ss;
    struct sigaction sa, old_sa;
    uint32_t id;
    unsigned nc, how;
    int on_alt;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = alt_stack;
    ss.ss_size = sizeof alt_stack;
    CHECK_U64(0, sigaltstack(&ss, &old_ss));
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    CHECK_U64(0, sigaction(SIGUSR1, &sa, &old_sa));
    /* the handler's allocation finds its stripe's table made (no malloc
       in a signal handler: TSan reports one) */
    memobs_track_alloc_full(FP(0x75000000u), 64, HOST, -1, NULL, "warm", 0);
    memobs_track_free(FP(0x75000000u));
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_FP);
    raise(SIGUSR1);
    (void)memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE);
    sigaction(SIGUSR1, &old_sa, NULL);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    on_alt = sig_local >= (uintptr_t)alt_stack && sig_local < (uintptr_t)alt_stack + sizeof alt_stack;
#ifndef UNDER_TSAN
    CHECK(on_alt); /* (TSan may run a handler from its own code, on the thread's stack) */
#endif
    id = trace_of(FP(0x75000000u));
    (void)c_frames(id, &nc, &how);
    CHECK(nc >= 2);
    CHECK_U64(on_alt ? 0u : MEMOBS__C_FP, how);
    CHECK(strncmp(trace_text(id), on_alt ? "\n#0 unw_leaf+0x" : "\nC stack (frame pointers)\n#0 unw_leaf+0x",
                  on_alt ? 15 : 40) == 0);
    CHECK_U64(1, (unsigned)count_lines(trace_text(id), "#1 on_sig+0x"));
    memobs_track_free(FP(0x75000000u));
}

/* ---- modes: one environment or build each ------------------------------------- */

/* The unwinder in force is want, and a stack says so. */
static void env_expect(unsigned want) {
    uint32_t id;
    unsigned nc, how;
    CHECK_U64(want, memobs__g.trk.unwind.v);
    unw_rec(2, 0x76000000u, 4);
    id = trace_of(FP(0x76000000u));
    (void)c_frames(id, &nc, &how);
    CHECK_U64(4, nc);
    CHECK_U64(want == MEMOBS_UNWIND_FP ? MEMOBS__C_FP : 0u, how);
    memobs_track_free(FP(0x76000000u));
}
static void env_fp(void) { env_expect(MEMOBS_UNWIND_FP); }
static void env_backtrace(void) { env_expect(MEMOBS_UNWIND_BACKTRACE); }

/* Built with -DMEMOBS__NO_FP_UNWIND (as on a platform without the walker),
   started with MEMOBS_UNWIND=fp: one warning at start-up (the script
   checks it), the setting kept, stacks from backtrace(). */
static void no_fp(void) {
    uint32_t id;
    unsigned nc, how;
    log_start();
    memobs__g.warned.v |= MEMOBS__W_NO_FP; /* warned at start-up already */
    CHECK_U64(MEMOBS_UNWIND_FP, memobs__g.trk.unwind.v);
    CHECK_U64(MEMOBS_UNWIND_FP, memobs_track_set_unwinder(MEMOBS_UNWIND_FP));
    CHECK_U64(0, log_count); /* once */
    unw_rec(2, 0x77000000u, 4);
    id = trace_of(FP(0x77000000u));
    (void)c_frames(id, &nc, &how);
    CHECK_U64(4, nc);
    CHECK_U64(0, how);
    CHECK(strncmp(trace_text(id), "\n#0 unw_rec+0x", 14) == 0);
    memobs__g.warned.v = 0;
    CHECK_U64(MEMOBS_UNWIND_FP, memobs_track_set_unwinder(MEMOBS_UNWIND_BACKTRACE));
    CHECK_U64(MEMOBS_UNWIND_BACKTRACE, memobs_track_set_unwinder(MEMOBS_UNWIND_FP));
    log_stop();
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("frame-pointer unwinding is built for x86-64 and aarch64 with glibc only; C stacks are "
                         "captured with backtrace() instead"));
    memobs_track_free(FP(0x77000000u));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    check__suite = TEST_SUITE;
    if (!*mode) {
        RUN(test_set_unwinder);
        RUN(test_deep_recursion);
        RUN(test_report_titles);
        RUN(test_bad_frame_pointers);
        RUN(test_threads);
        RUN(test_sigaltstack);
    } else if (!strcmp(mode, "fp")) {
        RUN(env_fp);
    } else if (!strcmp(mode, "backtrace")) {
        RUN(env_backtrace);
    } else if (!strcmp(mode, "no_fp")) {
        RUN(no_fp);
    } else {
        printf("not ok - %s: unknown mode '%s'\n", check__suite, mode);
        return 1;
    }
    return CHECK_DONE();
}
