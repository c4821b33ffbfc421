/* tests/nccl/hostile/nccl_guest.c - the NCCL profiler plugin as a guest of a
   host that calls it wrongly or in ways the plugin's happy path never saw,
   for tests/nccl/test_hostile_nccl.sh (issue 38, items 17-20).

       nccl_guest PLUGIN MODE

   The program links memobs (MEMOBS_EXPORT_HOST; memobs_host_api exported
   with -Wl,--export-dynamic-symbol=memobs_host_api), so the plugin records
   into it (instance "program") and the program can pause it. It plays
   NCCL's side as tests/nccl/nccl_driver.c does: it keeps the one
   activation mask NCCL keeps per process and starts only the events that
   mask asks for.

   MODEs (each prints "MODE done" and exits 0 when no call crashed):
     early   item 17: every entry point of v1-v6 before any init (a
             context and handles never given: 4 bad calls per version, and
             a NULL context, which is no bad call), then one v5 comm with an
             all-reduce, then after its finalize a start with its context,
             a second finalize, a stop of its stale handle, a stop and a
             state on a forged one, a start with a context inside the
             plugin's table but not one it gave: 30 bad calls. Under
             MEMOBS_NCCL=off the same calls with the init refused.
     paused  item 19: v5 comm "a" accepted; memobs paused; comm "b"
             refused; resumed; the mask held must still be a's: 2
             all-reduces on a (played only if the mask held asks for
             them); comm "c" accepted, 3 all-reduces on c. An init error
             drops the plugin as NCCL 2.23-2.27 do: nothing more is
             played.
     api     item 18: v6 (and v5 with VERSION=5 in the environment) at
             level coll on comm "tp" (4 ranks): a Broadcast played as NCCL
             2.29 plays it through AllGatherV (CollApi "Broadcast", no Coll
             event), a symmetric-kernel all-reduce (CollApi, no Coll), a
             plain all-reduce (CollApi, Coll, 1 KernelCh of 4 us), and a
             grouped one (CollApi started and stopped, its Coll and
             KernelCh of 6 us after the stop, as at ncclGroupEnd).
     soon    item 18: a Broadcast through AllGatherV on "tp" (v6 coll),
             then all-reduces until memobs shows it (10 s at most): it
             must show before any finalize, once its 100 ms wait is over.
     stagger item 20: v5 coll, an all-reduce on "tp" whose 2 KernelCh run
             1000..2000 and 1500..3500 ns (GPU timer): time 2500 ns.
     wire    item 20: v5 proxy, three all-reduces on "tp" (LL, LL128,
             SIMPLE), each a ProxyOp sending to rank 1 with one step of
             transSize 2048 (LL), 1280 (LL128), 1000 (SIMPLE). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEMOBS_IMPLEMENTATION
#define MEMOBS_EXPORT_HOST
#include "../../../memobs.h"

#include "../../../nccl/profiler_api.h"

static void *lib;
static int failures;
static int held_mask; /* NCCL's one mask per process (src/plugin/profiler.cc) */

static void fail(const char *what) {
    fprintf(stderr, "nccl_guest: %s\n", what);
    failures++;
}

static const void *table(int v) {
    char sym[32];
    const void *t;
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
    t = dlsym(lib, sym);
    if (!t) {
        fprintf(stderr, "nccl_guest: no %s\n", sym);
        exit(2);
    }
    return t;
}

/* ---- item 17 ------------------------------------------------------------ */

/* Every entry point of version v with a context and a handle it never
   gave: 4 bad calls; then a start with a NULL context: none. */
static void garbage_calls(int v) {
    void *bogus = (void *)(uintptr_t)0x1234, *h = (void *)(uintptr_t)0x5678;
    ncclProfilerEventStateArgs_v4_t a4;
    ncclProfilerEventStateArgs_v1_t a1;
    memset(&a4, 0, sizeof a4);
    memset(&a1, 0, sizeof a1);
    switch (v) {
    case 1: {
        const ncclProfiler_v1_t *p = (const ncclProfiler_v1_t *)table(1);
        ncclProfilerEventDescr_v1_t d;
        memset(&d, 0, sizeof d);
        d.type = ncclProfileColl;
        d.coll.name = "x";
        if (p->startEvent(bogus, &h, &d) != ncclSuccess || h) fail("v1 startEvent(bogus context)");
        h = (void *)(uintptr_t)0x5678;
        if (p->startEvent(NULL, &h, &d) != ncclSuccess || h) fail("v1 startEvent(NULL context)");
        if (p->stopEvent(bogus) != ncclSuccess) fail("v1 stopEvent(bogus)");
        if (p->recordEventState(bogus, ncclProfilerProxyOpSendDone, &a1) != ncclSuccess) fail("v1 state(bogus)");
        if (p->finalize(bogus) != ncclSuccess) fail("v1 finalize(bogus)");
        break;
    }
    case 2: case 3: case 4: {
        /* v2-v4: the same shape but for the descriptor; a zeroed v4
           descriptor is read only up to its type */
        const ncclProfiler_v4_t *p = (const ncclProfiler_v4_t *)table(v);
        ncclProfilerEventDescr_v4_t d;
        memset(&d, 0, sizeof d);
        d.type = ncclProfileColl;
        if (p->startEvent(bogus, &h, &d) != ncclSuccess || h) fail("v2-v4 startEvent(bogus context)");
        h = (void *)(uintptr_t)0x5678;
        if (p->startEvent(NULL, &h, &d) != ncclSuccess || h) fail("v2-v4 startEvent(NULL context)");
        if (p->stopEvent(bogus) != ncclSuccess) fail("v2-v4 stopEvent(bogus)");
        if (p->recordEventState(bogus, ncclProfilerKernelChStop, &a4) != ncclSuccess) fail("v2-v4 state(bogus)");
        if (p->finalize(bogus) != ncclSuccess) fail("v2-v4 finalize(bogus)");
        break;
    }
    default: {
        const ncclProfiler_v5_t *p = (const ncclProfiler_v5_t *)table(v);
        ncclProfilerEventDescr_v5_t d;
        memset(&d, 0, sizeof d);
        d.type = ncclProfileCollApi;
        d.collApi.func = "AllReduce";
        d.collApi.datatype = "ncclFloat32";
        d.collApi.count = 1;
        if (p->startEvent(bogus, &h, &d) != ncclSuccess || h) fail("v5/v6 startEvent(bogus context)");
        h = (void *)(uintptr_t)0x5678;
        if (p->startEvent(NULL, &h, &d) != ncclSuccess || h) fail("v5/v6 startEvent(NULL context)");
        if (p->stopEvent(bogus) != ncclSuccess) fail("v5/v6 stopEvent(bogus)");
        if (p->recordEventState(bogus, ncclProfilerKernelChStop, &a4) != ncclSuccess) fail("v5/v6 state(bogus)");
        if (p->finalize(bogus) != ncclSuccess) fail("v5/v6 finalize(bogus)");
        break;
    }
    }
}

static int run_early(void) {
    const ncclProfiler_v5_t *p = (const ncclProfiler_v5_t *)table(5);
    ncclProfilerEventDescr_v5_t d;
    ncclProfilerEventStateArgs_v5_t a;
    void *ctx = (void *)(uintptr_t)0x99, *api = NULL, *coll = NULL, *h = NULL;
    int v, mask = -1;
    ncclResult_t r;
    for (v = 1; v <= 6; v++) garbage_calls(v);
    r = p->init(&ctx, 0x7470, &mask, "tp", 1, 4, 0, NULL);
    printf("init rc %d mask %#x ctx %s\n", (int)r, (unsigned)mask, ctx ? "set" : "NULL");
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCollApi;
    d.collApi.func = "AllReduce";
    d.collApi.datatype = "ncclFloat32";
    d.collApi.count = 256;
    p->startEvent(ctx, &api, &d);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.parentObj = api;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 256;
    d.coll.nChannels = 0;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    p->startEvent(ctx, &coll, &d);
    if (coll) p->stopEvent(coll);
    if (api) p->stopEvent(api);
    if (ctx) p->finalize(ctx);
    /* after finalize: 5 bad calls */
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCollApi;
    d.collApi.func = "AllReduce";
    d.collApi.datatype = "ncclFloat32";
    d.collApi.count = 1;
    if (ctx) {
        if (p->startEvent(ctx, &h, &d) != ncclSuccess || h) fail("startEvent after finalize gave a handle");
        if (p->finalize(ctx) != ncclSuccess) fail("second finalize");
    }
    if (coll && p->stopEvent(coll) != ncclSuccess) fail("stop of a stale handle");
    if (p->stopEvent((void *)(uintptr_t)0x1234) != ncclSuccess) fail("stopEvent(0x1234) after finalize");
    memset(&a, 0, sizeof a);
    if (p->recordEventState((void *)(uintptr_t)0x1234, ncclProfilerKernelChStop, &a) != ncclSuccess)
        fail("state(0x1234) after finalize");
    /* a context inside the plugin's own table, not one it gave: 1 more */
    if (ctx && p->startEvent((char *)ctx + 8, &h, &d) != ncclSuccess) fail("startEvent(ctx + 8)");
    if (h) fail("startEvent(ctx + 8) gave a handle");
    printf("early done\n");
    return failures ? 1 : 0;
}

/* ---- item 19 ------------------------------------------------------------ */

/* One v5 all-reduce on ctx, the events NCCL starts under held_mask. */
static void allreduce_v5(const ncclProfiler_v5_t *p, void *ctx, size_t count) {
    ncclProfilerEventDescr_v5_t d;
    void *api = NULL, *coll = NULL;
    if (!(held_mask & (ncclProfileCollApi | ncclProfileColl | ncclProfileKernelCh))) return;
    memset(&d, 0, sizeof d);
    d.type = ncclProfileCollApi;
    d.collApi.func = "AllReduce";
    d.collApi.datatype = "ncclFloat32";
    d.collApi.count = count;
    p->startEvent(ctx, &api, &d);
    if (held_mask & (ncclProfileColl | ncclProfileKernelCh)) {
        memset(&d, 0, sizeof d);
        d.type = ncclProfileColl;
        d.parentObj = api;
        d.coll.func = "AllReduce";
        d.coll.datatype = "ncclFloat32";
        d.coll.count = count;
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
        p->startEvent(ctx, &coll, &d);
        if (coll) p->stopEvent(coll);
    }
    if (api) p->stopEvent(api);
}

static int run_paused(void) {
    const ncclProfiler_v5_t *p = (const ncclProfiler_v5_t *)table(5);
    void *a = NULL, *b = NULL, *c = NULL;
    int given, dropped = 0;
    ncclResult_t r;
    held_mask = 0;
    r = p->init(&a, 0xa, &held_mask, "a", 1, 2, 0, NULL);
    given = held_mask;
    printf("a: rc %d mask %#x\n", (int)r, (unsigned)held_mask);
    memobs_set_enabled(0);
    r = p->init(&b, 0xb, &held_mask, "b", 1, 2, 0, NULL);
    /* NCCL 2.23-2.27 drop the plugin for the process on an init error
       (2.28+ take a reference off it): no further call */
    dropped = r != ncclSuccess;
    printf("b (paused): rc %d ctx %s mask %s%s\n", (int)r, b ? "set" : "NULL",
           held_mask == given ? "kept" : held_mask ? "changed" : "zero", dropped ? ", plugin dropped" : "");
    memobs_set_enabled(1);
    if (!dropped) {
        /* a's collectives under the mask NCCL holds now */
        allreduce_v5(p, a, 100);
        allreduce_v5(p, a, 100);
        r = p->init(&c, 0xc, &held_mask, "c", 1, 2, 0, NULL);
        printf("c: rc %d mask %#x\n", (int)r, (unsigned)held_mask);
        allreduce_v5(p, c, 100);
        allreduce_v5(p, c, 100);
        allreduce_v5(p, c, 100);
        if (a) p->finalize(a);
        if (b) p->finalize(b);
        if (c) p->finalize(c);
    }
    printf("paused done\n");
    return failures ? 1 : 0;
}

/* ---- item 18 ------------------------------------------------------------ */

typedef struct {
    uint64_t type;
    void *parent;
    const char *func;
    size_t count;
    int nch;
    const char *proto;
    uint64_t ptimer;
} ev_t;

static int version = 5;

static void *start(void *ctx, const ev_t *e) {
    void *h = NULL;
    ncclProfilerEventDescr_v6_t d6;
    ncclProfilerEventDescr_v5_t d5;
#define FILL(d)                                                                                                        \
    do {                                                                                                               \
        memset(&(d), 0, sizeof(d));                                                                                    \
        (d).type = e->type;                                                                                            \
        (d).parentObj = e->parent;                                                                                     \
        if (e->type == ncclProfileCollApi) {                                                                           \
            (d).collApi.func = e->func;                                                                                \
            (d).collApi.count = e->count;                                                                              \
            (d).collApi.datatype = "ncclFloat32";                                                                      \
        } else if (e->type == ncclProfileColl) {                                                                       \
            (d).coll.func = e->func;                                                                                   \
            (d).coll.count = e->count;                                                                                 \
            (d).coll.datatype = "ncclFloat32";                                                                         \
            (d).coll.nChannels = (uint8_t)e->nch;                                                                      \
            (d).coll.algo = "RING";                                                                                    \
            (d).coll.proto = e->proto ? e->proto : "SIMPLE";                                                           \
        } else if (e->type == ncclProfileKernelCh) {                                                                   \
            (d).kernelCh.pTimer = e->ptimer;                                                                           \
        } else if (e->type == ncclProfileProxyOp) {                                                                    \
            (d).proxyOp.pid = getpid();                                                                                \
            (d).proxyOp.peer = 1;                                                                                      \
            (d).proxyOp.nSteps = 1;                                                                                    \
            (d).proxyOp.isSend = 1;                                                                                    \
        }                                                                                                              \
    } while (0)
    if (version == 6) {
        FILL(d6);
        ((const ncclProfiler_v6_t *)table(6))->startEvent(ctx, &h, &d6);
    } else {
        FILL(d5);
        ((const ncclProfiler_v5_t *)table(5))->startEvent(ctx, &h, &d5);
    }
#undef FILL
    return h;
}
static void stop(void *h) {
    if (h) ((const ncclProfiler_v5_t *)table(5))->stopEvent(h);
}
static void kch_stop(void *h, uint64_t ptimer) {
    ncclProfilerEventStateArgs_v5_t a;
    if (!h) return;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = ptimer;
    ((const ncclProfiler_v5_t *)table(5))->recordEventState(h, ncclProfilerKernelChStop, &a);
    stop(h);
}
static void *init_tp(void) {
    void *ctx = NULL;
    ncclResult_t r;
    if (version == 6)
        r = ((const ncclProfiler_v6_t *)table(6))->init(&ctx, 0x7470, &held_mask, "tp", 1, 4, 0, NULL);
    else
        r = ((const ncclProfiler_v5_t *)table(5))->init(&ctx, 0x7470, &held_mask, "tp", 1, 4, 0, NULL);
    if (r != ncclSuccess || !ctx) fail("init(tp) refused");
    return ctx;
}

static int run_api(void) {
    void *ctx, *api, *coll, *k;
    ev_t e;
    const char *v = getenv("VERSION");
    version = v && !strcmp(v, "5") ? 5 : 6;
    ctx = init_tp();
    /* a Broadcast through AllGatherV: the CollApi, no Coll below it */
    e = (ev_t){ncclProfileCollApi, NULL, "Broadcast", 1024, 0, NULL, 0};
    stop(start(ctx, &e));
    /* a symmetric-kernel all-reduce: the CollApi alone too */
    e = (ev_t){ncclProfileCollApi, NULL, "AllReduce", 2048, 0, NULL, 0};
    stop(start(ctx, &e));
    /* a plain all-reduce: CollApi, Coll, one KernelCh (4 us), in the call */
    e = (ev_t){ncclProfileCollApi, NULL, "AllReduce", 2048, 0, NULL, 0};
    api = start(ctx, &e);
    e = (ev_t){ncclProfileColl, api, "AllReduce", 2048, 1, NULL, 0};
    coll = start(ctx, &e);
    e = (ev_t){ncclProfileKernelCh, coll, NULL, 0, 0, NULL, 100000};
    k = start(ctx, &e);
    stop(coll);
    kch_stop(k, 104000);
    stop(api);
    /* a grouped all-reduce: the call returns (CollApi stopped) before
       ncclGroupEnd starts its Coll and the kernel runs (6 us) */
    e = (ev_t){ncclProfileCollApi, NULL, "AllReduce", 2048, 0, NULL, 0};
    api = start(ctx, &e);
    stop(api);
    e = (ev_t){ncclProfileColl, api, "AllReduce", 2048, 1, NULL, 0};
    coll = start(ctx, &e);
    stop(coll);
    e = (ev_t){ncclProfileKernelCh, coll, NULL, 0, 0, NULL, 200000};
    k = start(ctx, &e);
    kch_stop(k, 206000);
    ((const ncclProfiler_v5_t *)table(5))->finalize(ctx);
    printf("api done\n");
    return failures ? 1 : 0;
}

/* The broadcast's row in this program's memobs: its ops. */
static uint64_t broadcast_ops(void) {
    memobs_coll_stats_t rows[32];
    size_t n = memobs_coll_get_stats(rows, 32), i;
    for (i = 0; i < n && i < 32; i++)
        if (rows[i].kind_name && !strcmp(rows[i].kind_name, "broadcast")) return rows[i].ops;
    return 0;
}

/* A Broadcast through AllGatherV (no Coll) is recorded without a
   finalize: at a later collective call of the thread once its 100 ms
   wait is over. All-reduces (with their Coll) are played until it shows,
   for 10 s at most. */
static int run_soon(void) {
    void *ctx, *api, *coll;
    ev_t e;
    uint64_t t0, calls = 0;
    version = 6;
    ctx = init_tp();
    e = (ev_t){ncclProfileCollApi, NULL, "Broadcast", 1024, 0, NULL, 0};
    t0 = memobs_now_ns(); /* before the stop the plugin's 100 ms count from: no preemption can shorten it */
    stop(start(ctx, &e));
    while (!broadcast_ops() && memobs_now_ns() - t0 < 10000000000ull) {
        e = (ev_t){ncclProfileCollApi, NULL, "AllReduce", 16, 0, NULL, 0};
        api = start(ctx, &e);
        e = (ev_t){ncclProfileColl, api, "AllReduce", 16, 0, NULL, 0};
        coll = start(ctx, &e);
        stop(coll);
        stop(api);
        calls++;
    }
    printf("broadcast recorded before finalize: %s, after %s100 ms\n", broadcast_ops() == 1 ? "yes" : "no",
           memobs_now_ns() - t0 >= 100000000ull ? "" : "less than ");
    ((const ncclProfiler_v5_t *)table(5))->finalize(ctx);
    printf("soon done\n");
    return failures ? 1 : 0;
}

/* ---- item 20 ------------------------------------------------------------ */

static int run_stagger(void) {
    void *ctx, *api, *coll, *k0, *k1;
    ev_t e;
    version = 5;
    ctx = init_tp();
    e = (ev_t){ncclProfileCollApi, NULL, "AllReduce", 4096, 0, NULL, 0};
    api = start(ctx, &e);
    e = (ev_t){ncclProfileColl, api, "AllReduce", 4096, 2, NULL, 0};
    coll = start(ctx, &e);
    e = (ev_t){ncclProfileKernelCh, coll, NULL, 0, 0, NULL, 1000};
    k0 = start(ctx, &e);
    e = (ev_t){ncclProfileKernelCh, coll, NULL, 0, 0, NULL, 1500};
    k1 = start(ctx, &e);
    stop(coll);
    kch_stop(k0, 2000); /* 1000 ns */
    kch_stop(k1, 3500); /* 2000 ns, the longest; first start to last end: 2500 */
    stop(api);
    ((const ncclProfiler_v5_t *)table(5))->finalize(ctx);
    printf("stagger done\n");
    return failures ? 1 : 0;
}

static int run_wire(void) {
    static const struct {
        const char *proto;
        size_t trans;
    } w[] = {{"LL", 2048}, {"LL128", 1280}, {"SIMPLE", 1000}};
    void *ctx;
    size_t i;
    version = 5;
    ctx = init_tp();
    for (i = 0; i < 3; i++) {
        ncclProfilerEventStateArgs_v5_t a;
        void *api, *coll, *op, *step;
        ev_t e = {ncclProfileCollApi, NULL, "AllReduce", 256, 0, NULL, 0};
        api = start(ctx, &e);
        e = (ev_t){ncclProfileColl, api, "AllReduce", 256, 0, w[i].proto, 0};
        coll = start(ctx, &e);
        e = (ev_t){ncclProfileProxyOp, coll, NULL, 0, 0, NULL, 0};
        op = start(ctx, &e);
        e = (ev_t){ncclProfileProxyStep, op, NULL, 0, 0, NULL, 0};
        step = start(ctx, &e);
        memset(&a, 0, sizeof a);
        a.proxyStep.transSize = w[i].trans;
        if (step) ((const ncclProfiler_v5_t *)table(5))->recordEventState(step, ncclProfilerProxyStepSendWait, &a);
        stop(step);
        stop(op);
        stop(coll);
        stop(api);
    }
    ((const ncclProfiler_v5_t *)table(5))->finalize(ctx);
    printf("wire done\n");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGIN early|paused|api|soon|stagger|wire\n", argv[0]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "nccl_guest: %s\n", dlerror());
        return 2;
    }
    if (!strcmp(argv[2], "early")) return run_early();
    if (!strcmp(argv[2], "paused")) return run_paused();
    if (!strcmp(argv[2], "api")) return run_api();
    if (!strcmp(argv[2], "stagger")) return run_stagger();
    if (!strcmp(argv[2], "soon")) return run_soon();
    if (!strcmp(argv[2], "wire")) return run_wire();
    return 2;
}
