/* PyTorch memory snapshot of memobs.h (memobs_write_torch_snapshot): runs
   a known sequence of tracked device (and host) allocations and frees,
   checks the history counts and the return codes in process, then writes
   the snapshot and a side file (JSON) with memobs' own block table
   (memobs_get_allocations), the history counts and the events expected per
   device, which tests/python/snapshot_check.py compares with the pickle.
   Built as C99, C++17 and under ASan+UBSan and TSan (tests/tracker/test_snapshot.sh).

   Usage: test_snapshot MODE SNAPSHOT.pkl SIDE.json
     main     every kind of event: immediate, pending, settled, marked and
              unmarked frees, stream-ordered reuse, a missed free, odd tags,
              C stacks, a tag provider's frames, host memory (left out),
              two devices with an unused one between them
     bound    (MEMOBS_TORCH_EVENTS=64, or 65: a free's record half kept) 301 events on device 0: 237 (236) dropped
     threads  six threads on four devices, allocating and freeing at once
     live     three threads (devices 0, 0, 1) with 7 events each, all of
              them still in the threads' stages (fewer than a stage
              holds), parked while the snapshot is written: it shows them
              by gathering the stages
     racing   two threads on device 0, 2000 rounds each, while 20
              snapshots are written (to /dev/null); then the final one
     nohist   segments, no history (run with MEMOBS_TORCH_EVENTS=0, or
              with nothing set: the history is off by default)
     off      (nothing set) the history off by default: blocks allocated
              and freed, the snapshot written twice: segments, no events,
              "history": "off", one warning
     window   memobs_torch_history_start/_stop: blocks allocated before
              the start (one freed inside the window: its free events
              only), a window of events, resizes of the ring (4, then 64:
              the newest kept), bad input, a block after the stop
     toggle   two threads on device 0 while main starts (capacities 64 and
              the default) and stops the history 200 times
     The other modes are run with MEMOBS_TORCH_SNAPSHOT set (the history
     from start-up), as a program that wants the snapshot.
     exit     one live block, then exit (MEMOBS_TORCH_SNAPSHOT writes it);
              prints the pid */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define MEMOBS_IMPLEMENTATION
#include "../../memobs.h"
#include "../check.h"
#include "../memobs_test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TEST_SUITE
#define TEST_SUITE "snapshot"
#endif

#define FP(x) ((const void *)(uintptr_t)(x)) /* a fake pointer: the tracker never dereferences one */
#define DEVICE MEMOBS_MEM_DEVICE

/* The events a device's history should hold, in order. */
#define MAX_EXPECT 4096
static struct {
    int device;
    uint64_t addr;
    const char *action;
} expect_ev[MAX_EXPECT];
static int nexpect;
/* The side file's "late": the history began after some blocks were
   allocated (their free events come without an alloc); "gaps": it was
   stopped and started again while blocks came and went. */
static int side_late, side_gaps;
static void expect(int device, uint64_t addr, const char *action) {
    if (nexpect < MAX_EXPECT) {
        expect_ev[nexpect].device = device;
        expect_ev[nexpect].addr = addr;
        expect_ev[nexpect].action = action;
    }
    nexpect++;
}
/* A tracked device allocation, and its events. */
static void dalloc(int device, uint64_t addr, uint64_t bytes, uint64_t stream, const char *tag, int depth) {
    memobs_track_alloc_full(FP(addr), bytes, DEVICE, device, FP(stream), tag, depth);
    expect(device, addr, "alloc");
}
static void dfree(int device, uint64_t addr) {
    memobs_track_free(FP(addr));
    expect(device, addr, "free_requested");
    expect(device, addr, "free_completed");
}

/* Writes the side file: memobs' block table, the history counts, and the
   expected events (when the mode knows them). */
static int write_side(const char *path, int with_expect) {
    static memobs_alloc_info_t a[8192];
    size_t n = memobs_get_allocations(a, 8192), i;
    FILE *f = fopen(path, "w");
    int d;
    if (!f) return printf("    # cannot write %s\n", path), 1;
    fprintf(f, "{\"allocations\": [");
    for (i = 0; i < n && i < 8192; i++)
        fprintf(f, "%s\n {\"ptr\": %llu, \"bytes\": %llu, \"kind\": %d, \"device\": %d, \"stream\": %llu, "
                "\"pending\": %d, \"trace\": %lld}", i ? "," : "", (unsigned long long)(uintptr_t)a[i].ptr,
                (unsigned long long)a[i].bytes, (int)a[i].kind, (int)a[i].device,
                (unsigned long long)(uintptr_t)a[i].stream, a[i].pending_free,
                a[i].trace == MEMOBS_NO_TRACE ? -1LL : (long long)a[i].trace);
    fprintf(f, "],\n\"history\": [");
    for (d = 0; d < MEMOBS_MAX_DEVICES; d++) {
        memobs_torch_history_t h;
        memobs_get_torch_history(d, &h);
        fprintf(f, "%s\n {\"recorded\": %llu, \"kept\": %llu, \"dropped\": %llu, \"capacity\": %llu, "
                "\"recording\": %d}", d ? "," : "", (unsigned long long)h.recorded, (unsigned long long)h.kept,
                (unsigned long long)h.dropped, (unsigned long long)h.capacity, h.recording);
    }
    fprintf(f, "],\n\"late\": %d, \"gaps\": %d,\n\"expected\": ", side_late, side_gaps);
    if (!with_expect) {
        fprintf(f, "null");
    } else {
        fprintf(f, "[");
        for (d = 0; d < nexpect && d < MAX_EXPECT; d++)
            fprintf(f, "%s\n [%d, %llu, \"%s\"]", d ? "," : "", expect_ev[d].device,
                    (unsigned long long)expect_ev[d].addr, expect_ev[d].action);
        fprintf(f, "]");
    }
    fprintf(f, "}\n");
    return fclose(f) != 0;
}

/* A tag provider with fixed frames, outermost first as memobs_python.h
   gives them: outer.py:10, an elision of 2 frames, mid.py:20, inner.py:30
   (pc 1..4; aux 1 marks the elision). Its text has a second line per
   frame, as memobs_python.h's source line. */
static int fake_capture(memobs_frame_t *fr, int max, void *user) {
    static const uint32_t line[4] = {10, 2, 20, 30};
    int i;
    (void)user;
    for (i = 0; i < 4 && i < max; i++) {
        fr[i].pc = (uintptr_t)(i + 1);
        fr[i].line = line[i];
        fr[i].aux = i == 1;
    }
    return i;
}
static size_t fake_format(const memobs_frame_t *fr, int n, char *buf, size_t len, void *user) {
    static const char *const name[4] = {"outer", "", "mid", "inner"};
    size_t o = 0;
    int i, w;
    (void)user;
    for (i = 0; i < n && o + 1 < len; i++) {
        unsigned k = (unsigned)fr[i].pc - 1u;
        if (fr[i].aux) w = snprintf(buf + o, len - o, "%s... %u frames ...", i ? "\n" : "", (unsigned)fr[i].line);
        else w = snprintf(buf + o, len - o, "%s/src/app/%s.py:%u in %s\n\xe2\x94\x94\xe2\x94\x80 x = %s()", i ? "\n" : "",
                          name[k & 3u], (unsigned)fr[i].line, name[k & 3u], name[k & 3u]);
        if (w < 0) break;
        o += (size_t)w < len - o ? (size_t)w : len - o - 1;
    }
    return o;
}

/* Not static, not inlined, not mangled: the C stack's first frame names
   it (-rdynamic). */
#ifdef __cplusplus
extern "C" {
#endif
__attribute__((noinline)) void snapshot_alloc_with_stack(uint64_t addr, uint64_t bytes);
__attribute__((noinline)) void snapshot_alloc_with_stack(uint64_t addr, uint64_t bytes) {
    memobs_track_alloc_full(FP(addr), bytes, DEVICE, 0, FP(0x11), "kv_cache", 4);
    expect(0, addr, "alloc");
}
#ifdef __cplusplus
}
#endif

static void test_scenario(void) {
    memobs_tag_provider_t p;
    memobs_torch_history_t h;
    memobs_set_device(0);
    /* live, with a C stack */
    snapshot_alloc_with_stack(0x7f0000100000ull, 1u << 20);
    /* freed at once, no trace */
    dalloc(0, 0x7f0000200000ull, 2u << 20, 0x11, NULL, 0);
    dfree(0, 0x7f0000200000ull);
    /* pending at the snapshot */
    dalloc(0, 0x7f0000300000ull, 4096, 0x22, "pending", 0);
    memobs_track_free_pending(FP(0x7f0000300000ull));
    expect(0, 0x7f0000300000ull, "free_requested");
    /* pending, then settled */
    dalloc(0, 0x7f0000400000ull, 8192, 0x22, "settled", 0);
    memobs_track_free_pending(FP(0x7f0000400000ull));
    expect(0, 0x7f0000400000ull, "free_requested");
    memobs_track_free_settled(FP(0x7f0000400000ull));
    expect(0, 0x7f0000400000ull, "free_completed");
    /* device 2: pending, then its address allocated again (stream-ordered reuse) */
    dalloc(2, 0x7f0000500000ull, 65536, 0x33, "q\"uote's \\ back", 0);
    memobs_track_free_pending(FP(0x7f0000500000ull));
    expect(2, 0x7f0000500000ull, "free_requested");
    memobs_track_alloc_full(FP(0x7f0000500000ull), 32768, DEVICE, 2, FP(0x33), "\xce\xba" "v_cache \xe2\x9c\x93", 0);
    expect(2, 0x7f0000500000ull, "free_completed");
    expect(2, 0x7f0000500000ull, "alloc");
    /* odd tags, live */
    dalloc(0, 0x7f0000600000ull, 100, 0x11, "bad\xff\xfe", 0);
    dalloc(0, 0x7f0000700000ull, 200, 0x11, "cut\xe2\x82", 0);
    dalloc(0, 0x7f0000710000ull, 300, 0x11, "nl\nline", 0);
    /* memobs_cuda.h's frees: marked, the runtime fails, unmarked (no event
       left); marked, the runtime frees it, settled */
    dalloc(0, 0x7f0000800000ull, 4096, 0x11, "unmarked", 0);
    CHECK_U64(1, memobs__track_mark(FP(0x7f0000800000ull), MEMOBS__MARK));
    CHECK_U64(1, memobs__track_mark(FP(0x7f0000800000ull), MEMOBS__UNMARK));
    /* the same with a reader in between, which moves the thread's staged
       records into the ring: the free_requested taken back from there */
    dalloc(0, 0x7f0000810000ull, 4096, 0x11, "unmarked", 0);
    CHECK_U64(1, memobs__track_mark(FP(0x7f0000810000ull), MEMOBS__MARK));
    CHECK_U64(MEMOBS_OK, memobs_get_torch_history(0, &h));
    CHECK_U64(1, memobs__track_mark(FP(0x7f0000810000ull), MEMOBS__UNMARK));
    dalloc(0, 0x7f0000900000ull, 4096, 0x11, "cudaFree", 0);
    CHECK_U64(1, memobs__track_mark(FP(0x7f0000900000ull), MEMOBS__MARK));
    expect(0, 0x7f0000900000ull, "free_requested");
    memobs_track_free_settled(FP(0x7f0000900000ull));
    expect(0, 0x7f0000900000ull, "free_completed");
    /* host memory: in the block table, not in the snapshot */
    memobs_track_alloc_full(FP(0x1000), 64, MEMOBS_MEM_HOST, -1, NULL, "host", 0);
    memobs_track_alloc_full(FP(0x2000), 64, MEMOBS_MEM_PINNED, -1, NULL, "pinned", 0);
    memobs_track_alloc_full(FP(0x3000), 64, MEMOBS_MEM_HOST, -1, NULL, "host freed", 0);
    memobs_track_free(FP(0x3000));
    /* a tag provider's frames */
    memset(&p, 0, sizeof p);
    p.capture = fake_capture;
    p.format = fake_format;
    p.title = "Fake Stack";
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(&p));
    dalloc(0, 0x7f0000a00000ull, 12345, 0x11, "py", 0);
    CHECK_U64(MEMOBS_OK, memobs_track_set_tag_provider(NULL));
    /* a missed free: the old record goes as freed */
    dalloc(0, 0x7f0000b00000ull, 1000, 0x11, "dup1", 0);
    expect(0, 0x7f0000b00000ull, "free_requested");
    expect(0, 0x7f0000b00000ull, "free_completed");
    dalloc(0, 0x7f0000b00000ull, 2000, 0x11, "dup2", 0);
    /* sizes and streams beyond 32 bits; a stream that is all ones (-1) */
    dalloc(0, 0x7f1000000000ull, 3ull << 32, 0x7fffdeadbeef00ull, "12 GiB", 0);
    dalloc(0, 0x7f0000c00000ull, 512, ~0ull, "stream -1", 0);

    CHECK_U64(MEMOBS_OK, memobs_get_torch_history(0, &h));
    CHECK_U64(24, h.recorded);
    CHECK_U64(24, h.kept);
    CHECK_U64(0, h.dropped);
    CHECK_U64(16384, h.capacity);
    CHECK_U64(MEMOBS_OK, memobs_get_torch_history(1, &h));
    CHECK_U64(0, h.recorded);
    CHECK_U64(MEMOBS_OK, memobs_get_torch_history(2, &h));
    CHECK_U64(4, h.recorded);
}

static void test_errors(void) {
    memobs_torch_history_t h;
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_get_torch_history(-1, &h));
    CHECK_U64(0, h.recorded);
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_get_torch_history(MEMOBS_MAX_DEVICES, &h));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_get_torch_history(0, NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_torch_snapshot(NULL));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_torch_snapshot_file(""));
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_write_torch_snapshot_file(NULL));
    log_count = 0;
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_IO,
              (uint64_t)(int64_t)memobs_write_torch_snapshot_file("/nonexistent-memobs-dir/x.pkl"));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("cannot write the PyTorch memory snapshot to '/nonexistent-memobs-dir/x.pkl': cannot create a temporary file in its folder"));
    if (check__failed_checks) log_dump();
    memobs_set_log(NULL, NULL);
}

static void mode_bound(void) {
    int i;
    memobs_set_device(0);
    for (i = 0; i < 100; i++) {
        uint64_t a = 0x7f0000000000ull + (uint64_t)(i % 7) * 0x100000u;
        dalloc(0, a, 4096u * (uint64_t)(i + 1), 0x11, i % 2 ? "odd" : "even", 0);
        dfree(0, a);
    }
    dalloc(0, 0x7f00f0000000ull, 1u << 20, 0x11, "last", 0);
}

/* Six threads on devices 0 (three of them), 1, 2, 3: each allocates into
   a ring of 8 addresses of its own and frees (immediately, or pending and
   then settled, or pending and then reallocated) in a known pattern. */
#define T_THREADS 6
#define T_ROUNDS 1500
static void *thread_body(void *arg) {
    int t = (int)(intptr_t)arg, dev = t < 3 ? 0 : t - 2, i;
    uint64_t base = 0x7e0000000000ull + (uint64_t)t * 0x10000000ull;
    int live[8] = {0, 0, 0, 0, 0, 0, 0, 0}, pend[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    memobs_set_device(dev);
    for (i = 0; i < T_ROUNDS; i++) {
        int k = i % 8;
        const void *p = FP(base + (uint64_t)k * 0x100000u);
        if (live[k] && !pend[k]) {
            switch (i % 3) {
            case 0: memobs_track_free(p); live[k] = 0; break;
            case 1: memobs_track_free_pending(p); pend[k] = 1; break;
            default: memobs_track_free_pending(p); memobs_track_free_settled(p); live[k] = 0; break;
            }
        } else if (pend[k] && i % 2) {
            memobs_track_free_settled(p);
            live[k] = pend[k] = 0;
        } else {
            /* on a pending block: stream-ordered reuse */
            memobs_track_alloc_full(p, 4096u + (uint64_t)i, DEVICE, -1, FP(0x100 + t), t % 2 ? "odd" : "even", 0);
            live[k] = 1;
            pend[k] = 0;
        }
    }
    return NULL;
}

/* live: each thread allocates three blocks and frees two (7 events), then
   waits while main writes the snapshot and the side file. */
#define L_THREADS 3
static pthread_barrier_t live_parked, live_done;
static pthread_t live_th[L_THREADS];
static void *live_body(void *arg) {
    int t = (int)(intptr_t)arg, i;
    uint64_t base = 0x7d0000000000ull + (uint64_t)t * 0x10000000ull;
    memobs_set_device(t < 2 ? 0 : 1);
    for (i = 0; i < 3; i++) {
        const void *p = FP(base + (uint64_t)i * 0x100000u);
        memobs_track_alloc_full(p, 8192u, DEVICE, -1, FP(0x200 + t), "live", 0);
        if (i < 2) memobs_track_free(p); /* the last stays live */
    }
    pthread_barrier_wait(&live_parked);
    pthread_barrier_wait(&live_done);
    return NULL;
}
static void mode_live(void) {
    int i;
    pthread_barrier_init(&live_parked, NULL, L_THREADS + 1);
    pthread_barrier_init(&live_done, NULL, L_THREADS + 1);
    for (i = 0; i < L_THREADS; i++) pthread_create(&live_th[i], NULL, live_body, (void *)(intptr_t)i);
    pthread_barrier_wait(&live_parked);
}
static void live_finish(void) {
    int i;
    pthread_barrier_wait(&live_done);
    for (i = 0; i < L_THREADS; i++) pthread_join(live_th[i], NULL);
}

/* racing: snapshots written while two threads allocate and free. */
#define R_ROUNDS 2000
static void *race_body(void *arg) {
    int t = (int)(intptr_t)arg, i;
    uint64_t base = 0x7c0000000000ull + (uint64_t)t * 0x10000000ull;
    memobs_set_device(0);
    for (i = 0; i < R_ROUNDS; i++) {
        const void *p = FP(base + (uint64_t)(i % 16) * 0x100000u);
        memobs_track_alloc_full(p, 4096u + (uint64_t)i, DEVICE, -1, FP(0x300 + t), "racing", 0);
        memobs_track_free(p);
    }
    return NULL;
}
static void mode_racing(void) {
    pthread_t th[2];
    FILE *null = fopen("/dev/null", "w");
    int i;
    for (i = 0; i < 2; i++) pthread_create(&th[i], NULL, race_body, (void *)(intptr_t)i);
    for (i = 0; i < 20 && null; i++) CHECK_U64(MEMOBS_OK, (uint64_t)(int64_t)memobs_write_torch_snapshot(null));
    for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK_U64(1, null != NULL);
    if (null) fclose(null);
}

/* 1 when the device's history counts are these; else 0, printing them. */
static int hist_is(int device, uint64_t recorded, uint64_t kept, uint64_t dropped, uint64_t capacity, int recording) {
    memobs_torch_history_t h;
    int rc = memobs_get_torch_history(device, &h);
    if (rc == MEMOBS_OK && h.recorded == recorded && h.kept == kept && h.dropped == dropped &&
        h.capacity == capacity && h.recording == recording)
        return 1;
    printf("    # device %d (rc %d): recorded %llu, kept %llu, dropped %llu, capacity %llu, recording %d\n", device, rc,
           (unsigned long long)h.recorded, (unsigned long long)h.kept, (unsigned long long)h.dropped,
           (unsigned long long)h.capacity, h.recording);
    return 0;
}

/* off: the default, nothing set: no history, whatever is tracked. */
static void mode_off(void) {
    FILE *null = fopen("/dev/null", "w");
    dalloc(0, 0x7f0000100000ull, 4096, 0x11, "off, live", 0);
    dalloc(0, 0x7f0000200000ull, 8192, 0x11, "off, freed", 0);
    dfree(0, 0x7f0000200000ull);
    memobs_track_free_pending(FP(0x7f0000100000ull));
    nexpect = 0;
    CHECK(hist_is(0, 0, 0, 0, 16384, 0));
    /* a first snapshot (the warning), then the one the checker reads */
    CHECK_U64(1, null != NULL);
    if (null) {
        CHECK_U64(MEMOBS_OK, (uint64_t)(int64_t)memobs_write_torch_snapshot(null));
        fclose(null);
    }
}

/* window: the history between memobs_torch_history_start and _stop. */
#define W_BEFORE_FREED 0x7f0000100000ull
#define W_BEFORE_LIVE 0x7f0000200000ull
#define W_IN 0x7f0000300000ull
#define W_RESIZED 0x7f0000400000ull
#define W_AFTER 0x7f0000500000ull
static void mode_window(void) {
    log_count = 0;
    memobs_set_log(capture_log, NULL);
    memobs_set_device(0);
    side_late = 1;
    memobs_track_alloc_full(FP(W_BEFORE_FREED), 4096, DEVICE, 0, FP(0x11), "before, freed inside", 0);
    memobs_track_alloc_full(FP(W_BEFORE_LIVE), 4096, DEVICE, 0, FP(0x11), "before, live", 0);
    memobs_track_alloc_full(FP(0x7f0000600000ull), 4096, DEVICE, 1, FP(0x11), "before, freed before", 0);
    memobs_track_free(FP(0x7f0000600000ull));
    CHECK(hist_is(0, 0, 0, 0, 16384, 0));
    /* bad input: one warning, still off */
    CHECK_U64((uint64_t)(int64_t)MEMOBS_ERR_INVALID, (uint64_t)(int64_t)memobs_torch_history_start((1ull << 24) + 1));
    CHECK_U64(1, log_count);
    CHECK_U64(1, log_has("memobs_torch_history_start(16777217): at most 16777216 events per device; unchanged"));
    CHECK(hist_is(0, 0, 0, 0, 16384, 0));
    /* start, twice: harmless */
    CHECK_U64(MEMOBS_OK, memobs_torch_history_start(0));
    CHECK_U64(MEMOBS_OK, memobs_torch_history_start(0));
    CHECK(hist_is(0, 0, 0, 0, 16384, 1));
    dalloc(0, W_IN, 65536, 0x11, "inside", 0);
    dfree(0, W_IN);
    memobs_track_free(FP(W_BEFORE_FREED)); /* its alloc came before the start */
    expect(0, W_BEFORE_FREED, "free_requested");
    expect(0, W_BEFORE_FREED, "free_completed");
    CHECK(hist_is(0, 5, 5, 0, 16384, 1));
    /* another capacity: the newest that fit stay, the rest dropped */
    CHECK_U64(MEMOBS_OK, memobs_torch_history_start(4));
    CHECK(hist_is(0, 5, 4, 1, 4, 1));
    dalloc(0, W_RESIZED, 1u << 20, 0x11, "resized", 0);
    CHECK_U64(MEMOBS_OK, memobs_torch_history_start(64));
    CHECK(hist_is(0, 6, 4, 2, 64, 1));
    dfree(0, W_RESIZED);
    /* stop, twice: what was kept stays */
    CHECK_U64(MEMOBS_OK, memobs_torch_history_stop());
    CHECK_U64(MEMOBS_OK, memobs_torch_history_stop());
    memobs_track_alloc_full(FP(W_AFTER), 4096, DEVICE, 0, FP(0x11), "after", 0);
    memobs_track_free_pending(FP(W_BEFORE_LIVE));
    CHECK(hist_is(0, 8, 6, 2, 64, 0));
    CHECK(hist_is(1, 0, 0, 0, 64, 0)); /* a ring made now would hold the last start's */
    CHECK_U64(1, log_count);
    if (check__failed_checks) log_dump();
    memobs_set_log(NULL, NULL);
}

/* toggle: the history switched on and off while two threads track, each
   allocating and freeing until main is done switching. */
static int toggle_started, toggle_done;
static void *toggle_body(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t base = 0x7b0000000000ull + (uint64_t)t * 0x10000000ull, i;
    memobs_set_device(0);
    __atomic_add_fetch(&toggle_started, 1, __ATOMIC_SEQ_CST);
    for (i = 0; !__atomic_load_n(&toggle_done, __ATOMIC_ACQUIRE); i++) {
        const void *p = FP(base + (i % 16) * 0x100000u);
        memobs_track_alloc_full(p, 4096u + i % 4096u, DEVICE, -1, FP(0x400 + t), "toggle", 0);
        memobs_track_free(p);
    }
    return (void *)(uintptr_t)i;
}
static void mode_toggle(void) {
    pthread_t th[2];
    memobs_torch_history_t h;
    uint64_t rounds = 0;
    int i;
    side_gaps = 1;
    for (i = 0; i < 2; i++) pthread_create(&th[i], NULL, toggle_body, (void *)(intptr_t)i);
    while (__atomic_load_n(&toggle_started, __ATOMIC_SEQ_CST) < 2) sched_yield();
    for (i = 0; i < 200; i++) {
        CHECK_U64(MEMOBS_OK, memobs_torch_history_start(i % 3 ? 0 : 64));
        do { /* the first window holds an event at least */
            sched_yield();
            memobs_get_torch_history(0, &h);
        } while (i == 0 && h.recorded == 0);
        CHECK_U64(MEMOBS_OK, memobs_torch_history_stop());
        sched_yield();
    }
    __atomic_store_n(&toggle_done, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 2; i++) {
        void *r;
        pthread_join(th[i], &r);
        rounds += (uint64_t)(uintptr_t)r;
    }
    memobs_get_torch_history(0, &h);
    CHECK_U64(1, h.recorded > 0 && h.recorded <= 3 * rounds); /* an alloc and a free's two events a round */
    CHECK_U64(0, (uint64_t)h.recording);
}

static void mode_threads(void) {
    pthread_t th[T_THREADS];
    int i;
    for (i = 0; i < T_THREADS; i++) pthread_create(&th[i], NULL, thread_body, (void *)(intptr_t)i);
    for (i = 0; i < T_THREADS; i++) pthread_join(th[i], NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "main";
    int rc = 0, known = 1;
    check__suite = TEST_SUITE;
    if (strcmp(mode, "exit") == 0) {
        memobs_track_alloc_full(FP(0x7f0000100000ull), 4096, DEVICE, 0, FP(0x11), "at exit", 0);
        printf("%lld\n", (long long)getpid());
        return 0;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: %s main|bound|threads|live|racing|nohist|off|window|toggle|exit SNAPSHOT.pkl SIDE.json\n", argv[0]);
        return 2;
    }
    if (strcmp(mode, "main") == 0) {
        RUN(test_scenario);
        RUN(test_errors);
    } else if (strcmp(mode, "bound") == 0) {
        mode_bound();
    } else if (strcmp(mode, "threads") == 0) {
        mode_threads();
        known = 0;
    } else if (strcmp(mode, "live") == 0) {
        mode_live();
        known = 0;
    } else if (strcmp(mode, "racing") == 0) {
        mode_racing();
        known = 0;
    } else if (strcmp(mode, "nohist") == 0) {
        dalloc(0, 0x7f0000100000ull, 4096, 0x11, "no history", 0);
        nexpect = 0;
    } else if (strcmp(mode, "off") == 0) {
        RUN(mode_off);
    } else if (strcmp(mode, "window") == 0) {
        RUN(mode_window);
    } else if (strcmp(mode, "toggle") == 0) {
        RUN(mode_toggle);
        known = 0;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    if (memobs_write_torch_snapshot_file(argv[2]) != MEMOBS_OK) rc = 1, printf("    # snapshot not written\n");
    if (write_side(argv[3], known)) rc = 1;
    if (strcmp(mode, "live") == 0) live_finish();
    return rc || check__failed;
}
